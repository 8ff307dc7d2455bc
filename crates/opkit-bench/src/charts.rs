//! Chart rendering (issue 14): what `helm template` costs under opkit. For each chart — the
//! repository's own test chart, the chart `helm create` generates (when helm is installed) and
//! the six corpus charts (when `../shared/corpus` exists) — the median and rate of full renders
//! in this process (load from disk, merge values, prepare, render, sort and print, as `helm
//! template` does), then the wall time of `opkit chart template` and of `helm template` for the
//! same command, each run as a process, side by side.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, bail, ensure};
use opkit_chart::{Chart, Engine, TemplateOptions, ValueOptions};

use crate::scenarios::Outcome;
use crate::stats::{Samples, ms};
use crate::{Options, Row, Scenario};

/// How much faster than `helm template` `opkit chart template` must be.
const SPEEDUP_TARGET: f64 = 5.0;

/// One chart and the `template` command's arguments for it (`NAME CHART FLAGS…`), run in `dir`.
struct Case {
    label: String,
    dir: PathBuf,
    args: Vec<String>,
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The helm binary (`HELM_BIN`, the project's `.tools/bin/helm`, or `helm` on `PATH`).
fn helm() -> Option<PathBuf> {
    let candidates = [
        std::env::var_os("HELM_BIN").map(PathBuf::from),
        Some(repo_root().join(".tools/bin/helm")),
        Some(PathBuf::from("helm")),
    ];
    candidates.into_iter().flatten().find(|p| {
        Command::new(p)
            .arg("version")
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

/// `helm` with private, throw-away homes.
fn helm_command(helm: &Path, home: &Path) -> Command {
    let mut c = Command::new(helm);
    for var in ["HELM_CACHE_HOME", "HELM_CONFIG_HOME", "HELM_DATA_HOME"] {
        c.env(var, home);
    }
    c
}

/// The charts to measure, with notes on the ones left out.
fn cases(
    helm: Option<&Path>,
    scratch: &Path,
    notes: &mut Vec<String>,
) -> anyhow::Result<Vec<Case>> {
    let tests = repo_root().join("crates/opkit-chart/tests");
    let mut cases = vec![Case {
        label: "opkit render-chart".into(),
        dir: tests,
        args: vec!["rel".into(), "render-chart".into()],
    }];
    match helm {
        Some(helm) => {
            let out = helm_command(helm, scratch)
                .current_dir(scratch)
                .args(["create", "mychart"])
                .output()
                .context("running helm create")?;
            ensure!(out.status.success(), "helm create failed: {}", String::from_utf8_lossy(&out.stderr));
            cases.push(Case {
                label: "helm create".into(),
                dir: scratch.to_path_buf(),
                args: vec!["rel".into(), "mychart".into()],
            });
        }
        None => notes.push(
            "charts: helm not found (HELM_BIN, .tools/bin/helm, PATH; scripts/install-tools.sh installs it): \
             no `helm create` chart and no helm timings"
                .into(),
        ),
    }
    let corpus = repo_root().join("../shared/corpus/helm");
    let Ok(entries) = std::fs::read_dir(corpus.join("golden")) else {
        notes.push(format!(
            "charts: {} is absent: no corpus charts",
            corpus.display()
        ));
        return Ok(cases);
    };
    let mut cmds: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "cmd"))
        .collect();
    cmds.sort();
    for cmd in cmds {
        let text = std::fs::read_to_string(&cmd)?;
        let words: Vec<String> = text.split_whitespace().map(String::from).collect();
        ensure!(
            words.len() > 2 && words[..2] == ["helm", "template"],
            "{} is not a `helm template` command",
            cmd.display()
        );
        let name = cmd.file_stem().unwrap_or_default().to_string_lossy();
        cases.push(Case {
            label: format!("corpus {name}"),
            dir: corpus.clone(),
            args: words[2..].to_vec(),
        });
    }
    Ok(cases)
}

/// Renders `args` (`NAME CHART` and the flags the measured commands use) in this process.
fn render_in_process(case: &Case) -> anyhow::Result<String> {
    let mut positional = Vec::new();
    let mut opts = TemplateOptions::default();
    let mut values = ValueOptions::default();
    let mut args = case.args.iter();
    while let Some(arg) = args.next() {
        if !arg.starts_with('-') {
            positional.push(arg.clone());
            continue;
        }
        let value = args
            .next()
            .with_context(|| format!("{arg} needs a value"))?
            .clone();
        match arg.as_str() {
            "-n" | "--namespace" => opts.namespace = value,
            "--set" => values.values.push(value),
            "--set-string" => values.string_values.push(value),
            "-f" | "--values" => values.value_files.push(value),
            other => bail!("the chart benchmark does not pass {other} in process"),
        }
    }
    let [name, chart] = &positional[..] else {
        bail!("expected NAME CHART, got {positional:?}");
    };
    opts.release_name = name.clone();
    let user = values.merge_values()?;
    let mut chart = Chart::load(&case.dir.join(chart))?;
    Ok(opkit_chart::prepare_and_template(
        &Engine::new(),
        &mut chart,
        &user,
        &opts,
    )?)
}

/// The median wall time of `runs` runs of `command`, which must succeed and print `want`.
fn median_run(
    mut command: impl FnMut() -> Command,
    runs: usize,
    want: &str,
    what: &str,
) -> anyhow::Result<std::time::Duration> {
    let mut samples = Samples::with_capacity(runs);
    for _ in 0..runs {
        let started = Instant::now();
        let out = command()
            .output()
            .with_context(|| format!("running {what}"))?;
        samples.push(started.elapsed());
        ensure!(
            out.status.success(),
            "{what} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        ensure!(
            out.stdout == want.as_bytes(),
            "{what} printed something else than the in-process render"
        );
    }
    Ok(samples.median())
}

/// The scenario.
pub async fn charts(options: &Options) -> anyhow::Result<Outcome> {
    let options = options.clone();
    tokio::task::spawn_blocking(move || measure(&options)).await?
}

fn measure(options: &Options) -> anyhow::Result<Outcome> {
    let s = Scenario::Charts;
    let mut out = Outcome::default();
    let scratch = tempfile::tempdir()?;
    let helm = helm();
    let cases = cases(helm.as_deref(), scratch.path(), &mut out.notes)?;
    if options.opkit_bin.is_none() {
        out.notes
            .push("charts: no `opkit` binary: no `opkit chart template` timings".into());
    }
    let renders = options.counts.chart_renders;
    let runs = options.counts.chart_runs;
    for case in &cases {
        let label = &case.label;
        let rendered = render_in_process(case).with_context(|| format!("rendering {label}"))?;
        let mut samples = Samples::with_capacity(renders);
        let started = Instant::now();
        for _ in 0..renders {
            let t = Instant::now();
            let again = render_in_process(case)?;
            samples.push(t.elapsed());
            ensure!(again == rendered, "{label}: two renders differ");
        }
        let rate = renders as f64 / started.elapsed().as_secs_f64();
        out.rows.push(Row::info(
            s,
            format!("{label}: in-process render p50"),
            ms(samples.median()),
        ));
        out.rows.push(Row::info(
            s,
            format!("{label}: in-process renders/s"),
            format!("{rate:.0}"),
        ));
        let Some(opkit) = &options.opkit_bin else {
            continue;
        };
        let opkit_wall = median_run(
            || {
                let mut c = Command::new(opkit);
                c.current_dir(&case.dir)
                    .args(["chart", "template"])
                    .args(&case.args);
                c
            },
            runs,
            &rendered,
            "opkit chart template",
        )?;
        out.rows.push(Row::info(
            s,
            format!("{label}: opkit chart template wall"),
            ms(opkit_wall),
        ));
        let Some(helm) = &helm else { continue };
        let helm_wall = median_run(
            || {
                let mut c = helm_command(helm, scratch.path());
                c.current_dir(&case.dir).arg("template").args(&case.args);
                c
            },
            runs,
            &rendered,
            "helm template",
        )?;
        let speedup = helm_wall.as_secs_f64() / opkit_wall.as_secs_f64();
        out.rows.push(Row::info(
            s,
            format!("{label}: helm template wall"),
            ms(helm_wall),
        ));
        out.rows.push(Row::target(
            s,
            format!("{label}: speed-up over helm"),
            format!("{speedup:.1}x"),
            format!(">= {SPEEDUP_TARGET}x"),
            speedup >= SPEEDUP_TARGET,
        ));
    }
    Ok(out)
}
