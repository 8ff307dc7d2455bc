//! `opkit test [DIR...]`: kuttl suites (`kubectl kuttl test`'s flags and output) on an embedded
//! control plane started in-process — or on an existing cluster with `--kubeconfig`.
//!
//! The suite is `--config`, else `./kuttl-test.yaml` when present; a `DIR` holding a
//! `kuttl-test.yaml` is run as that suite from its own directory, other `DIR`s replace the
//! suite's `testDirs` (as kuttl's arguments do). `startControlPlane: true` starts a plane like
//! envtest's (garbage collector and namespaces, no simulated workloads: pods stay Pending);
//! `startKIND: true` or no start option starts one with every built-in controller (pods become
//! Ready, as on kind). Exit codes are kuttl's: 0 passed, 1 a test (or the harness) failed, 255
//! bad flags or configuration.
//!
//! In an operator project, without DIR or `--config` (and no `./kuttl-test.yaml`), the suite
//! is the project's `tests/e2e` and the operator under test is built and started first
//! (`test_project`); under `--chaos` the suite starts it instead, as a
//! campaign needs.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use anyhow::Context;
use clap::Args;
use opkit_e2e::{
    Granularity, Harness, Log, Options, Progress, ProgressFn, ReportFormat, TestSuite,
};

use crate::progress;
use crate::test_project::ProjectSuite;

/// The first line of every kubeconfig `opkit test` writes (so it knows it may overwrite it).
const WRITTEN_BY: &str = "# written by opkit test";

/// Flags of `opkit test` (those of `kubectl kuttl test`, plus `--kubeconfig`).
#[derive(Args, Debug, Default)]
pub struct TestArgs {
    /// Test dirs (replace the suite's testDirs), or one dir holding a kuttl-test.yaml. Without
    /// any, in an opkit project: the project's tests/e2e against its operator, built and run
    /// by opkit test as its service account.
    #[arg(value_name = "DIR")]
    dirs: Vec<PathBuf>,
    /// The suite file (default: ./kuttl-test.yaml when it exists).
    #[arg(long, value_name = "PATH")]
    config: Option<PathBuf>,
    /// Run against this cluster instead of an embedded control plane. In an opkit project the
    /// operator is not built or started then: it is assumed to be deployed there already
    /// (`opkit deploy`).
    #[arg(long, value_name = "PATH")]
    kubeconfig: Option<PathBuf>,
    /// Directory of CRDs to install before the tests (replaces crdDir).
    #[arg(long, value_name = "DIR")]
    crd_dir: Option<String>,
    /// Directories of manifests to apply before the tests (replace manifestDirs).
    #[arg(long, value_name = "DIR", value_delimiter = ',')]
    manifest_dir: Vec<String>,
    /// Only tests whose name matches this regular expression.
    #[arg(long, value_name = "NAME")]
    test: Option<String>,
    /// An envtest-like plane: GC and namespaces, no simulated workloads.
    #[arg(long)]
    start_control_plane: bool,
    /// kuttl pipes the control plane's output (not supported on the embedded plane).
    #[arg(long)]
    attach_control_plane_output: bool,
    /// A plane with every built-in controller (kuttl: a kind cluster).
    #[arg(long)]
    start_kind: bool,
    /// kind's cluster config (implies --start-kind; the file itself is not used).
    #[arg(long, value_name = "PATH")]
    kind_config: Option<String>,
    /// kind's context (not used by the embedded plane).
    #[arg(long, value_name = "NAME")]
    kind_context: Option<String>,
    /// Deprecated in kuttl; ignored.
    #[arg(long, value_name = "PATH")]
    control_plane_config: Option<String>,
    /// Keep what the tests create (`--skip-delete=false` re-enables deletion under
    /// startControlPlane).
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true")]
    skip_delete: Option<bool>,
    /// Keep the cluster (the embedded plane: keep it running until Ctrl-C).
    #[arg(long)]
    skip_cluster_delete: bool,
    /// Tests run at once (default 8).
    #[arg(long, value_name = "N")]
    parallel: Option<i64>,
    /// Per-step timeout in seconds (default 30).
    #[arg(long, value_name = "N")]
    timeout: Option<i64>,
    /// Write a report: junit|xml or json.
    #[arg(long, value_name = "FORMAT")]
    report: Option<String>,
    /// The report's file name without extension (default kuttl-report).
    #[arg(long, value_name = "NAME")]
    report_name: Option<String>,
    /// step or test.
    #[arg(long, value_name = "GRANULARITY")]
    report_granularity: Option<String>,
    /// Directory for reports.
    #[arg(long, value_name = "DIR")]
    artifacts_dir: Option<String>,
    /// A namespace every test shares.
    #[arg(short = 'n', long, value_name = "NS")]
    namespace: Option<String>,
    /// Logs to suppress (events).
    #[arg(long, value_name = "KIND", value_delimiter = ',')]
    suppress_log: Vec<String>,
    /// Labels of this run, for TestFile.testRunSelector (k=v,k2=v2).
    #[arg(long, value_name = "LABELS")]
    test_run_labels: Option<String>,
    /// Variables of templated step files (not supported yet: templated files are refused).
    #[arg(long, value_name = "K=V", value_delimiter = ',')]
    template_var: Vec<String>,
    /// A fault-injection campaign: crash, errors, stale, unobserved, watch, leader or all
    /// (comma-separated; all but leader). Each test runs
    /// without faults, then once per injection point with the server misbehaving toward the
    /// suite's background commands (the operator under test) alone.
    #[arg(long, value_name = "KINDS")]
    chaos: Option<String>,
    /// The campaign's seed (the order of its runs).
    #[arg(long, value_name = "N")]
    seed: Option<u64>,
    /// Stop starting the campaign's runs after this long (e.g. 90s, 5m).
    #[arg(long, value_name = "DURATION", value_parser = crate::parse_duration)]
    budget: Option<std::time::Duration>,
    /// The operator under test of a campaign, as a shell command (`sh -c`) run in the
    /// background with credentials of its own — for suites that do not start it themselves
    /// (chainsaw tests have no background commands).
    #[arg(long, value_name = "CMD")]
    operator: Option<String>,
    /// How many faults each run of the campaign arms together (default 1); a failing run of
    /// several is shrunk to the fewest that still fail.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=64))]
    faults_per_run: Option<u64>,
    /// Replay one run of a campaign, as its report prints it: TEST:crash@K, TEST:refuseCODE@K,
    /// TEST:loseCODE@K, TEST:staleD@K, TEST:unobserved@N, TEST:expire@N, TEST:delay@W or
    /// TEST:pause@K, several joined with `+` (TEST:crash@1+delay@2).
    #[arg(long, value_name = "PLAN")]
    chaos_replay: Option<String>,
    /// How long the operator keeps running after a chaos run's last step (the window in which
    /// it must become quiet).
    #[arg(long, value_name = "DURATION", default_value = "2s", value_parser = crate::parse_duration)]
    chaos_settle: std::time::Duration,
}

/// A configuration problem: exit 255, as kuttl's flag errors.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Invalid(String);

fn invalid(msg: impl Into<String>) -> anyhow::Error {
    Invalid(msg.into()).into()
}

/// `opkit test`; the exit code.
pub async fn run(args: TestArgs, cwd: &Path) -> anyhow::Result<ExitCode> {
    match run_inner(args, cwd).await {
        Ok(code) => Ok(code),
        Err(e) if e.downcast_ref::<Invalid>().is_some() => {
            eprintln!("error: {e:#}");
            Ok(ExitCode::from(255))
        }
        Err(e) => Err(e),
    }
}

fn parse_labels(s: &str) -> anyhow::Result<BTreeMap<String, String>> {
    s.split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|p| {
            p.split_once('=')
                .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
                .ok_or_else(|| invalid(format!("--test-run-labels: {p:?} is not key=value")))
        })
        .collect()
}

/// Which suite file to read and from which directory the run works.
fn locate(args: &TestArgs, cwd: &Path) -> anyhow::Result<(Option<PathBuf>, PathBuf, Vec<String>)> {
    let suite_dirs: Vec<&PathBuf> = args
        .dirs
        .iter()
        .filter(|d| cwd.join(d).join("kuttl-test.yaml").is_file())
        .collect();
    match suite_dirs.as_slice() {
        [] => {
            let config = match &args.config {
                Some(c) => Some(cwd.join(c)),
                None => Some(cwd.join("kuttl-test.yaml")).filter(|p| p.is_file()),
            };
            let dirs = args.dirs.iter().map(|d| d.display().to_string()).collect();
            Ok((config, cwd.to_path_buf(), dirs))
        }
        [one] if args.dirs.len() == 1 && args.config.is_none() => {
            let dir = cwd.join(one);
            Ok((Some(dir.join("kuttl-test.yaml")), dir, Vec::new()))
        }
        _ => Err(invalid(
            "give either one directory holding a kuttl-test.yaml, or test directories (with \
             --config for their suite)",
        )),
    }
}

async fn run_inner(args: TestArgs, cwd: &Path) -> anyhow::Result<ExitCode> {
    let project = if args.dirs.is_empty()
        && args.config.is_none()
        && !cwd.join("kuttl-test.yaml").is_file()
    {
        ProjectSuite::find(cwd)?
    } else {
        None
    };
    let chaos = args.chaos.is_some() || args.chaos_replay.is_some();
    if !chaos
        && (args.seed.is_some()
            || args.budget.is_some()
            || args.faults_per_run.is_some()
            || args.operator.is_some())
    {
        return Err(invalid(
            "--seed, --budget, --faults-per-run and --operator belong to a campaign: add --chaos",
        ));
    }
    if chaos && args.kubeconfig.is_some() {
        return Err(invalid(
            "--chaos injects faults in opkit's own API server: it needs the embedded control \
             plane, drop --kubeconfig",
        ));
    }
    let (config, workdir, arg_dirs) = match &project {
        Some(p) => locate_in_project(p),
        None => locate(&args, cwd)?,
    };
    let mut suite = match &config {
        Some(path) => {
            let loaded = opkit_e2e::load_suite(path).map_err(|e| invalid(e.to_string()))?;
            for w in &loaded.warnings {
                eprintln!("warning: {w}");
            }
            loaded.suite
        }
        None => {
            println!("running without a 'kuttl-test.yaml' configuration");
            TestSuite::default()
        }
    };
    merge_flags(&args, &mut suite, arg_dirs)?;
    if !args.template_var.is_empty() {
        return Err(invalid(
            "--template-var: templated step files (.gotmpl.yaml) are not supported yet",
        ));
    }
    let run_labels = match &args.test_run_labels {
        Some(s) => parse_labels(s)?,
        None => BTreeMap::new(),
    };
    let test_filter = match &args.test {
        Some(t) => Some(
            regex::Regex::new(&t.replace(' ', "_")).map_err(|e| invalid(format!("--test: {e}")))?,
        ),
        None => None,
    };
    let report_format =
        match &args.report {
            Some(r) => Some(ReportFormat::from_flag(r).ok_or_else(|| {
                invalid(format!("--report must be junit, xml or json, not {r:?}"))
            })?),
            None => ReportFormat::from_suite(&suite.report_format),
        };
    let report_granularity = match suite.report_granularity.as_str() {
        "test" => Granularity::Test,
        _ => Granularity::Step,
    };
    for w in embedded_warnings(&suite, args.kubeconfig.is_some()) {
        eprintln!("warning: {w}");
    }
    if chaos {
        if let Some(p) = &project {
            p.chaos_suite(&mut suite)?;
        }
        if let Some(script) = &args.operator {
            suite.commands.push(opkit_e2e::Command {
                script: script.clone(),
                background: true,
                ..opkit_e2e::Command::default()
            });
        }
        let kinds = match &args.chaos {
            Some(spec) => {
                opkit_e2e::chaos::parse_kinds(spec).map_err(|e| invalid(e.to_string()))?
            }
            None => Vec::new(),
        };
        let replay = match &args.chaos_replay {
            Some(plan) => Some(
                plan.parse()
                    .map_err(|e: opkit_e2e::chaos::PlanError| invalid(e.to_string()))?,
            ),
            None => None,
        };
        return crate::test_chaos::run(crate::test_chaos::ChaosRun {
            suite,
            cwd: workdir,
            kinds,
            replay,
            seed: args.seed.unwrap_or(1),
            budget: args.budget,
            faults_per_run: args.faults_per_run.unwrap_or(1) as usize,
            settle: args.chaos_settle,
            test_filter,
            run_labels,
        })
        .await;
    }

    // In a project on the embedded plane, the operator is built before anything starts: a
    // build error ends the run before a plane is started for nothing.
    let binary = match &project {
        Some(p) if args.kubeconfig.is_none() => Some(p.build()?),
        _ => None,
    };
    let kubeconfig_path = match &project {
        Some(p) => {
            let dir = p.work_dir();
            std::fs::create_dir_all(&dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
            dir.join("kubeconfig")
        }
        None => workdir.join("kubeconfig"),
    };
    let (client, plane) = match &args.kubeconfig {
        Some(path) => {
            let path = cwd.join(path);
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("cannot read the kubeconfig {}", path.display()))?;
            let cluster = crate::cluster::connect(Some(&path)).await?;
            write_kubeconfig(&kubeconfig_path, &text)?;
            if let Some(p) = &project {
                println!(
                    "running {}'s suite against {}: the operator is expected to run there                      already (opkit deploy)",
                    p.project.project_name, cluster.server
                );
            }
            (cluster.client, None)
        }
        None => {
            let controllers = if suite.start_control_plane {
                "garbage-collector,namespace"
            } else {
                "*"
            };
            let env = opkit_testenv::TestEnv::builder()
                .controllers(controllers)
                .start()
                .await
                .context("cannot start the embedded control plane")?;
            println!(
                "started an embedded control plane at {} ({}) in {:.0?}",
                env.url(),
                if suite.start_control_plane {
                    "envtest-like: no simulated workloads"
                } else {
                    "every built-in controller"
                },
                env.startup_time()
            );
            write_kubeconfig(&kubeconfig_path, env.kubeconfig())?;
            (env.client(), Some(env))
        }
    };
    let operator = match (&project, &binary, &plane) {
        (Some(p), Some(binary), Some(env)) => {
            Some(p.start_operator(binary, env, &kubeconfig_path).await?)
        }
        _ => None,
    };

    let (log, progress) = output();
    let mut harness = Harness::new(Options {
        suite,
        client,
        kubeconfig: kubeconfig_path.clone(),
        cwd: workdir,
        test_filter,
        run_labels,
        report_format,
        report_granularity,
        log,
    })
    .map_err(|e| invalid(e.to_string()))?;
    if let Some(progress) = progress {
        harness = harness.with_progress(progress);
    }
    if let (Some(op), Some(p)) = (&operator, &project) {
        harness = harness.with_process_log(op.log.clone(), p.work_dir().join("logs"));
    }
    let outcome = tokio::select! {
        outcome = harness.run() => outcome,
        _ = tokio::signal::ctrl_c() => {
            eprintln!("interrupted");
            if let Some(op) = operator {
                let _ = op.stop().await;
            }
            return Ok(ExitCode::from(255));
        }
    };
    if let Some(report) = &outcome.report {
        println!("report written to {}", report.display());
    }
    let mut passed = outcome.passed();
    if let Some(op) = operator {
        let exited_early = op.exited();
        let status = op.stop().await?;
        if exited_early {
            eprintln!("error: the operator exited during the tests ({status}); see its log");
            passed = false;
        }
        if let Some(p) = &project {
            println!(
                "the operator's log: {}",
                p.work_dir().join("operator.log").display()
            );
        }
    }
    if args.skip_cluster_delete && args.kubeconfig.is_none() {
        println!(
            "to connect to the cluster, run: export KUBECONFIG=\"{}\" (Ctrl-C stops it)",
            kubeconfig_path.display()
        );
        let _ = tokio::signal::ctrl_c().await;
    }
    drop(plane);
    Ok(if passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// A project's suite: `tests/e2e/kuttl-test.yaml` when present, else every subdirectory of
/// `tests/e2e` a test; the run works from `tests/e2e`.
fn locate_in_project(project: &ProjectSuite) -> (Option<PathBuf>, PathBuf, Vec<String>) {
    let dir = project.suite_dir();
    let config = dir.join("kuttl-test.yaml");
    if config.is_file() {
        (Some(config), dir, Vec::new())
    } else {
        (None, dir, vec![".".to_string()])
    }
}

/// Where the run's lines go: standard output, and on a terminal a status line below them
/// (tests done of planned, and the ones running), redrawn as tests start and end.
fn output() -> (Log, Option<ProgressFn>) {
    let status = progress::Status::new();
    if !status.on_terminal() {
        return (Log::stdout(), None);
    }
    let board = Arc::new(Mutex::new(Board {
        status,
        planned: 0,
        done: 0,
        failed: 0,
        running: Vec::new(),
    }));
    let for_log = board.clone();
    let log = Log::new(move |line| {
        let mut b = for_log.lock().unwrap_or_else(|e| e.into_inner());
        b.status.clear();
        println!("{line}");
        b.draw();
    });
    let progress: ProgressFn = Arc::new(move |event: Progress<'_>| {
        let mut b = board.lock().unwrap_or_else(|e| e.into_inner());
        match event {
            Progress::Planned(n) => b.planned = n,
            Progress::Started(name) => b.running.push(name.to_string()),
            Progress::Finished(record) => {
                b.running.retain(|r| r != &record.name);
                b.done += 1;
                if record.failed() {
                    b.failed += 1;
                }
            }
        }
        b.draw();
    });
    (log, Some(progress))
}

/// The status line's state.
struct Board {
    status: progress::Status,
    planned: usize,
    done: usize,
    failed: usize,
    running: Vec<String>,
}

impl Board {
    fn draw(&mut self) {
        if self.planned == 0 {
            return;
        }
        let failed = if self.failed > 0 {
            format!(", {} failed", self.failed)
        } else {
            String::new()
        };
        self.status.update(&format!(
            "{}/{} tests done{failed}; running: {}",
            self.done,
            self.planned,
            self.running.join(", ")
        ));
    }
}

/// kuttl's flag merging: a flag overrides the file only when given.
fn merge_flags(
    args: &TestArgs,
    suite: &mut TestSuite,
    arg_dirs: Vec<String>,
) -> anyhow::Result<()> {
    if !arg_dirs.is_empty() {
        println!(
            "kutt-test config testdirs is overridden with args: [ {} ]",
            arg_dirs.join(", ")
        );
        suite.test_dirs = arg_dirs;
    }
    if let Some(d) = &args.crd_dir {
        suite.crd_dir = d.clone();
    }
    if !args.manifest_dir.is_empty() {
        suite.manifest_dirs = args.manifest_dir.clone();
    }
    if args.start_control_plane {
        suite.start_control_plane = true;
    }
    if args.attach_control_plane_output {
        suite.attach_control_plane_output = true;
    }
    if args.start_kind || args.kind_config.is_some() {
        suite.start_kind = true;
    }
    if let Some(c) = &args.kind_config {
        suite.kind_config = c.clone();
    }
    if let Some(c) = &args.kind_context {
        suite.kind_context = c.clone();
    }
    if args.control_plane_config.is_some() {
        eprintln!("warning: --control-plane-config is deprecated and ignored");
    }
    if suite.start_control_plane && suite.start_kind {
        return Err(invalid(
            "only one of --start-control-plane and --start-kind can be set",
        ));
    }
    if suite.attach_control_plane_output && !suite.start_control_plane {
        return Err(invalid(
            "--attach-control-plane-output can only be used with --start-control-plane",
        ));
    }
    // kuttl: the control plane implies skipDelete unless --skip-delete is given explicitly.
    match args.skip_delete {
        Some(v) => suite.skip_delete = v,
        None if suite.start_control_plane => suite.skip_delete = true,
        None => {}
    }
    if args.skip_cluster_delete {
        suite.skip_cluster_delete = true;
    }
    if let Some(p) = args.parallel {
        suite.parallel = p;
    }
    if let Some(t) = args.timeout {
        suite.timeout = t;
    }
    if let Some(n) = &args.report_name {
        suite.report_name = n.clone();
    }
    if let Some(g) = &args.report_granularity {
        if g != "step" && g != "test" {
            return Err(invalid(format!(
                "--report-granularity must be step or test, not {g:?}"
            )));
        }
        suite.report_granularity = g.clone();
    }
    if let Some(d) = &args.artifacts_dir {
        suite.artifacts_dir = d.clone();
    }
    if let Some(n) = &args.namespace {
        if n.trim().is_empty() {
            return Err(invalid("--namespace must not be empty"));
        }
        suite.namespace = n.clone();
    }
    let mut suppress: Vec<String> = suite
        .suppress
        .iter()
        .chain(&args.suppress_log)
        .map(|s| s.to_ascii_lowercase())
        .collect();
    suppress.sort();
    suppress.dedup();
    suite.suppress = suppress;
    Ok(())
}

/// What the embedded plane does not do of a suite's options.
fn embedded_warnings(suite: &TestSuite, existing_cluster: bool) -> Vec<String> {
    let mut out = Vec::new();
    if existing_cluster {
        if suite.start_control_plane || suite.start_kind {
            out.push("--kubeconfig given: startControlPlane/startKIND are ignored".to_string());
        }
        return out;
    }
    if !suite.kind_config.is_empty() || suite.kind_node_cache || !suite.kind_containers.is_empty() {
        out.push(
            "kindConfig, kindNodeCache and kindContainers have no effect on the embedded control \
             plane (its pods are simulated)"
                .to_string(),
        );
    }
    if suite.attach_control_plane_output {
        out.push(
            "attachControlPlaneOutput: the embedded control plane's logs go to OPKIT_LOG"
                .to_string(),
        );
    }
    out
}

/// Writes `./kubeconfig` as kuttl does; one that opkit did not write is kept as
/// `kubeconfig.orig` first.
fn write_kubeconfig(path: &Path, contents: &str) -> anyhow::Result<()> {
    if let Ok(existing) = std::fs::read_to_string(path)
        && !existing.starts_with(WRITTEN_BY)
    {
        let backup = path.with_extension("orig");
        eprintln!(
            "warning: overwriting {} (kuttl does so too); the previous one is kept as {}",
            path.display(),
            backup.display()
        );
        std::fs::rename(path, &backup)
            .with_context(|| format!("cannot keep {} as {}", path.display(), backup.display()))?;
    }
    std::fs::write(path, format!("{WRITTEN_BY}\n{contents}"))
        .with_context(|| format!("cannot write {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_override_the_suite_only_when_given_and_the_control_plane_skips_delete() {
        let mut suite = TestSuite {
            timeout: 10,
            start_control_plane: true,
            ..TestSuite::default()
        };
        let args = TestArgs::default();
        merge_flags(&args, &mut suite, vec!["e2e".into()]).unwrap();
        assert_eq!(suite.timeout, 10);
        assert!(suite.skip_delete);
        assert_eq!(suite.test_dirs, ["e2e"]);
        let args = TestArgs {
            skip_delete: Some(false),
            timeout: Some(3),
            suppress_log: vec!["Events".into()],
            ..TestArgs::default()
        };
        merge_flags(&args, &mut suite, Vec::new()).unwrap();
        assert!(!suite.skip_delete);
        assert_eq!(suite.timeout, 3);
        assert!(suite.suppress_events());
    }

    #[test]
    fn conflicting_start_options_are_invalid() {
        let mut suite = TestSuite::default();
        let args = TestArgs {
            start_control_plane: true,
            start_kind: true,
            ..TestArgs::default()
        };
        let e = merge_flags(&args, &mut suite, Vec::new()).unwrap_err();
        assert!(e.downcast_ref::<Invalid>().is_some());
    }

    #[test]
    fn a_foreign_kubeconfig_is_kept_before_it_is_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kubeconfig");
        std::fs::write(&path, "mine").unwrap();
        write_kubeconfig(&path, "new").unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join("kubeconfig.orig")).unwrap(),
            "mine"
        );
        write_kubeconfig(&path, "newer").unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join("kubeconfig.orig")).unwrap(),
            "mine"
        );
        assert!(std::fs::read_to_string(&path).unwrap().ends_with("newer"));
    }
}
