//! `opkit chart template [NAME] CHART`: `helm template` (Helm v4) on opkit's chart engine.
//! The flags, the order of the checks, what goes to stdout and the `Error: …` line on
//! stderr are helm's, so scripts and golden files written for `helm template` keep working.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use opkit_chart::{Chart, Engine, KubeVersion, TemplateOptions, ValueOptions};
use opkit_template::{Templates, Value};

/// `opkit chart …`.
#[derive(Subcommand)]
pub(crate) enum ChartCommand {
    /// Render a chart's templates locally and print the manifests, as `helm template` does.
    Template(TemplateArgs),
}

/// `opkit chart …` parsed on its own (see [`parse_alone`]).
#[derive(Parser)]
#[command(name = "opkit")]
struct ChartAlone {
    #[command(subcommand)]
    command: ChartOnly,
}

#[derive(Subcommand)]
enum ChartOnly {
    #[command(subcommand)]
    Chart(ChartCommand),
}

/// The command line, when it is a valid `opkit chart …` command: building the parser of
/// every command costs about a millisecond, as much as rendering a small chart. Anything
/// else, `--help` and errors included, is left to the full parser, so they read the same.
pub(crate) fn parse_alone() -> Option<ChartCommand> {
    if std::env::args_os().nth(1)? != "chart" {
        return None;
    }
    match ChartAlone::try_parse().ok()?.command {
        ChartOnly::Chart(cmd) => Some(cmd),
    }
}

/// The arguments and flags of `helm template`.
#[derive(Args)]
pub(crate) struct TemplateArgs {
    /// `[NAME] CHART`: the release name (default `release-name`) and the chart directory.
    #[arg(value_name = "[NAME] CHART", required = true, num_args = 1..)]
    args: Vec<String>,
    /// Values files (can be given several times or comma-separated).
    #[arg(short = 'f', long = "values", value_delimiter = ',')]
    values: Vec<PathBuf>,
    /// Set values on the command line (`a.b=c,d=e`).
    #[arg(long = "set")]
    set: Vec<String>,
    /// Set string values on the command line.
    #[arg(long = "set-string")]
    set_string: Vec<String>,
    /// Set JSON values on the command line.
    #[arg(long = "set-json")]
    set_json: Vec<String>,
    /// Set values from files (`key=path`).
    #[arg(long = "set-file")]
    set_file: Vec<String>,
    /// Set a literal string value.
    #[arg(long = "set-literal")]
    set_literal: Vec<String>,
    /// The namespace (default: `$HELM_NAMESPACE`, else `default`).
    #[arg(short = 'n', long)]
    namespace: Option<String>,
    /// Include the CRDs (`crds/`) in the output.
    #[arg(long)]
    include_crds: bool,
    /// Leave test hooks out.
    #[arg(long)]
    skip_tests: bool,
    /// Leave all hooks out.
    #[arg(long)]
    no_hooks: bool,
    /// Only show the manifests rendered from these templates (globs allowed).
    #[arg(short = 's', long = "show-only")]
    show_only: Vec<String>,
    /// Write the manifests to files under this directory instead of stdout.
    #[arg(long)]
    output_dir: Option<PathBuf>,
    /// The Kubernetes version for `.Capabilities.KubeVersion`.
    #[arg(long)]
    kube_version: Option<String>,
    /// Extra API versions for `.Capabilities.APIVersions` (repeatable, comma-separated).
    #[arg(short = 'a', long = "api-versions", value_delimiter = ',')]
    api_versions: Vec<String>,
    /// Set `.Release.IsUpgrade` instead of `.Release.IsInstall`.
    #[arg(long)]
    is_upgrade: bool,
    /// Use the release name in the `--output-dir` path.
    #[arg(long)]
    release_name: bool,
    /// A template for the release name (Sprig functions, no data).
    #[arg(long)]
    name_template: Option<String>,
    /// Generate the release name (ignored by `template`, which uses `release-name`).
    #[arg(short = 'g', long)]
    generate_name: bool,
    /// Do not check the values against the charts' `values.schema.json`.
    #[arg(long)]
    skip_schema_validation: bool,
    #[command(flatten)]
    no_effect: NoEffect,
}

/// Flags of `helm install` that `helm template` also takes and that change nothing it prints
/// (it renders without a cluster): accepted, for scripts that hand one set of flags to both.
#[derive(Args)]
#[command(
    next_help_heading = "Accepted as helm template accepts them, with no effect on the output"
)]
struct NoEffect {
    /// Create the release namespace (an install's concern).
    #[arg(long)]
    create_namespace: bool,
    /// Skip installing CRDs (an install's concern; `--include-crds` prints them).
    #[arg(long)]
    skip_crds: bool,
    /// The release's description.
    #[arg(long, value_name = "TEXT")]
    description: Option<String>,
    /// Skip checking manifests against the cluster's OpenAPI schema.
    #[arg(long)]
    disable_openapi_validation: bool,
    /// Leave NOTES.txt out of the release (never printed by template).
    #[arg(long)]
    hide_notes: bool,
    /// Render subcharts' NOTES.txt into the release notes (never printed by template).
    #[arg(long)]
    render_subchart_notes: bool,
    /// Allow development chart versions from a repository.
    #[arg(long)]
    devel: bool,
    /// How long an install waits.
    #[arg(long, value_name = "DURATION", value_parser = crate::parse_duration)]
    timeout: Option<std::time::Duration>,
    /// Wait for the resources to be ready (`--wait`, `--wait=watcher`…).
    #[arg(
        long,
        value_name = "STRATEGY",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "watcher",
        value_parser = ["watcher", "hookOnly", "legacy"]
    )]
    wait: Option<String>,
    /// Wait for Jobs to complete.
    #[arg(long)]
    wait_for_jobs: bool,
}

/// Runs `opkit chart …`: prints helm's output, or `Error: …` on stderr and fails.
pub(crate) fn run(cmd: ChartCommand, cwd: &Path) -> ExitCode {
    let ChartCommand::Template(args) = cmd;
    grow_the_heap_in_large_steps();
    match template(&args, cwd) {
        Ok(out) => {
            match std::io::stdout().lock().write_all(out.as_bytes()) {
                Ok(()) => ExitCode::SUCCESS,
                // A reader that stopped reading (`| head`) is not an error to report; Go's
                // helm dies of the SIGPIPE, so the shell sees a failure too.
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::FAILURE,
                Err(e) => {
                    eprintln!("Error: writing the output: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Err(e) => {
            eprintln!("Error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// A render in a process of its own only grows the heap (what it leaves is left to the exit):
/// glibc's allocator is asked to grow each arena by 8 MiB at a time rather than by what each
/// allocation needs, which saves the system calls and the repeated faults of growing it in
/// small steps on every thread (a few percent of a large chart's wall time). The main thread's
/// heap is grown once by 32 MiB (address space only) that is kept and marked for transparent
/// huge pages, where the system has them on request: the render then faults its memory in
/// 2 MiB at a time instead of 4 KiB, a few hundred faults fewer.
fn grow_the_heap_in_large_steps() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets allocator parameters, before any thread of this command
    // starts; the block is freed before its range is advised, and MADV_HUGEPAGE changes how
    // the range is backed, never its contents.
    unsafe {
        const HUGE_PAGE: usize = 2 << 20;
        const RESERVE: usize = 24 << 20;
        libc::mallopt(libc::M_TOP_PAD, 8 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 1 << 30);
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
        let block = libc::malloc(RESERVE);
        if !block.is_null() {
            libc::free(block);
            // The block and the top pad, up to the heap's end.
            let start = (block as usize).next_multiple_of(HUGE_PAGE);
            let end = libc::sbrk(0) as usize / HUGE_PAGE * HUGE_PAGE;
            if start < end {
                libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
            }
        }
    }
}

/// `helm template`'s steps, in helm's order; stdout's text or the error's.
fn template(args: &TemplateArgs, cwd: &Path) -> Result<String, String> {
    let mut opts = TemplateOptions::default();
    if let Some(v) = &args.kube_version {
        opts.kube_version =
            Some(KubeVersion::parse(v).map_err(|e| format!("invalid kube version '{v}': {e}"))?);
    }
    let (name, chart_ref) = name_and_chart(args)?;
    opts.release_name = name;
    let user_values = user_values(args)?;
    let chart_dir = cwd.join(&chart_ref);
    let mut chart = Chart::load(&chart_dir).map_err(|e| e.to_string())?;
    if !matches!(chart.metadata.chart_type.as_str(), "" | "application") {
        return Err(format!(
            "{} charts are not installable",
            chart.metadata.chart_type
        ));
    }
    // Helm checks the name before it processes the dependencies.
    opkit_chart::validate_release_name(&opts.release_name).map_err(|e| e.to_string())?;
    opts.namespace = args
        .namespace
        .clone()
        .or_else(|| {
            std::env::var("HELM_NAMESPACE")
                .ok()
                .filter(|n| !n.is_empty())
        })
        .unwrap_or_else(|| "default".into());
    opts.api_versions = args.api_versions.clone();
    opts.is_upgrade = args.is_upgrade;
    opts.include_crds = args.include_crds;
    opts.skip_tests = args.skip_tests;
    opts.no_hooks = args.no_hooks;
    opts.show_only = args.show_only.clone();
    opts.output_dir = args.output_dir.clone();
    opts.use_release_name = args.release_name;
    opts.skip_schema_validation = args.skip_schema_validation;
    // The command exits after printing: nothing gains from freeing the parsed templates.
    // So are the chart's files and the values (megabytes of CRDs in some charts).
    let engine = Engine::new().one_shot(true);
    let out = opkit_chart::prepare_and_template(&engine, &mut chart, &user_values, &opts);
    std::mem::forget(chart);
    std::mem::forget(user_values);
    out.map_err(|e| e.to_string())
}

/// Helm's `NameAndChart` for `template` (whose default name is `release-name`).
fn name_and_chart(args: &TemplateArgs) -> Result<(String, String), String> {
    match &args.args[..] {
        [chart] => match &args.name_template {
            Some(t) => Ok((name_from_template(t)?, chart.clone())),
            None => Ok(("release-name".into(), chart.clone())),
        },
        [name, chart] => {
            if args.generate_name {
                return Err("cannot set --generate-name and also specify a name".into());
            }
            if args.name_template.is_some() {
                return Err("cannot set --name-template and also specify a name".into());
            }
            Ok((name.clone(), chart.clone()))
        }
        [_, _, rest @ ..] => Err(format!(
            "expected at most two arguments, unexpected arguments: {}",
            rest.join(", ")
        )),
        [] => Err("requires at least 1 arg(s), only received 0".into()),
    }
}

/// Helm's `TemplateName`: the name template run with Sprig and no data.
fn name_from_template(text: &str) -> Result<String, String> {
    let mut t = Templates::new("name-template");
    t.add_funcs(opkit_template::sprig::functions());
    t.parse("name-template", text).map_err(|e| e.to_string())?;
    t.execute("name-template", &Value::Nil)
        .map_err(|e| e.to_string())
}

/// The user's values: `-f` files, then `--set*` flags, merged as Helm's `values.Options`.
fn user_values(args: &TemplateArgs) -> Result<Value, String> {
    let options = ValueOptions {
        value_files: args
            .values
            .iter()
            .map(|p| p.to_string_lossy().into_owned())
            .collect(),
        string_values: args.set_string.clone(),
        values: args.set.clone(),
        file_values: args.set_file.clone(),
        json_values: args.set_json.clone(),
        literal_values: args.set_literal.clone(),
    };
    options.merge_values().map_err(|e| e.to_string())
}
