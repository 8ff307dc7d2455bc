//! A suite run, as kuttl's harness does it: install the suite's CRDs (and wait until they are
//! established), apply its manifests, run its commands (background ones until the end), then run
//! every test of every test dir, `parallel` at once, print Go-style results and write the report.
//!
//! Unlike kuttl, a shared suite `namespace` is created once before the tests and deleted (if the
//! harness created it) only after the last one — kuttl deletes it when the first test finishes,
//! under the others' feet — and test dirs run in the order given (kuttl's order is random).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::Api;
use regex::Regex;
use serde_json::Value;

use crate::case::{self, CaseRecord, CaseSettings};
use crate::chainsaw;
use crate::cluster::Cluster;
use crate::command::{self, CommandEnv};
use crate::config::TestSuite;
use crate::discovery::{self, Glob, TestDir};
use crate::log::Log;
use crate::observe::{ProcessLog, ProcessLogs, Progress, ProgressFn};
use crate::operation::Target;
use crate::report::{Granularity, Report, ReportFormat};
use crate::supervise::{self, Instances, Supervision, Supervisor};

/// What a run needs besides the suite.
pub struct Options {
    /// The suite, with the command line's flags merged in.
    pub suite: TestSuite,
    /// A client for the cluster under test.
    pub client: kube::Client,
    /// The kubeconfig commands get as `$KUBECONFIG`.
    pub kubeconfig: PathBuf,
    /// The working directory (relative paths, `$PATH`'s `<cwd>/bin`).
    pub cwd: PathBuf,
    /// Only tests whose name this (unanchored) regex matches (`--test`).
    pub test_filter: Option<Regex>,
    /// `--test-run-labels`, for `TestFile.testRunSelector`.
    pub run_labels: BTreeMap<String, String>,
    /// The report's format (none: no report).
    pub report_format: Option<ReportFormat>,
    /// Testcases per step or per test.
    pub report_granularity: Granularity,
    /// Where the output goes.
    pub log: Log,
}

/// Why a run cannot start.
#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    /// Neither the suite nor the command line names a test dir.
    #[error(
        "no test directories provided, please provide either --config or test directories on the command line"
    )]
    NoTestDirs,
    /// An `ignoreFiles` glob is malformed.
    #[error("{0}")]
    BadIgnore(String),
}

/// How a run went.
#[derive(Debug)]
pub struct Outcome {
    /// Every test that ran, in start order.
    pub cases: Vec<CaseRecord>,
    /// A failure that stopped the run (setup, an unreadable test dir, the report).
    pub fatal: Option<String>,
    /// The report written, if any.
    pub report: Option<PathBuf>,
    /// The whole run.
    pub duration: Duration,
    /// How many times supervised background commands were restarted after injected crashes.
    pub restarts: usize,
    /// Whether the supervised background commands went the settle time without a write after
    /// the last test (`true` when not supervised).
    pub quiet: bool,
}

impl Outcome {
    /// Whether every test passed and nothing failed around them.
    pub fn passed(&self) -> bool {
        self.fatal.is_none() && self.cases.iter().all(|c| !c.failed())
    }
}

/// A suite ready to run.
pub struct Harness {
    options: Options,
    ignore: Vec<Glob>,
    progress: Option<ProgressFn>,
    process_logs: Option<ProcessLogs>,
    supervision: Option<Supervision>,
    /// How often a step's asserts are checked again.
    assert_interval: Duration,
}

fn go_secs(d: Duration) -> String {
    format!("{:.2}s", d.as_secs_f64())
}

impl Harness {
    /// Checks the options.
    pub fn new(options: Options) -> Result<Harness, HarnessError> {
        if options.suite.test_dirs.is_empty() {
            return Err(HarnessError::NoTestDirs);
        }
        let ignore = options
            .suite
            .ignore_globs()
            .iter()
            .map(|g| Glob::new(g))
            .collect::<Result<_, _>>()
            .map_err(HarnessError::BadIgnore)?;
        Ok(Harness {
            options,
            ignore,
            progress: None,
            process_logs: None,
            supervision: None,
            assert_interval: crate::step::KUTTL_INTERVAL,
        })
    }

    /// Reports each test's start and end to `progress` as well.
    pub fn with_progress(mut self, progress: ProgressFn) -> Harness {
        self.progress = Some(progress);
        self
    }

    /// Keeps, per test, the lines `log` (a process under test, such as the operator) wrote
    /// while the test ran, in `<dir>/<test>.log`; a failed test prints them too.
    pub fn with_process_log(mut self, log: ProcessLog, dir: PathBuf) -> Harness {
        self.process_logs = Some(ProcessLogs { log, dir });
        self
    }

    /// Runs the suite's background commands (the operator under test) as a chaos run needs
    /// them: with a kubeconfig of their own, restarted after each injected crash, and kept
    /// running after the last test until they go a settle time without a write.
    /// A chaos run also checks asserts every 100 ms (`poll::INTERVAL`) rather than kuttl's
    /// once a second: a campaign is many runs of the same test, and a step should end when its
    /// asserts pass, not up to a second later.
    pub fn with_supervision(mut self, supervision: Supervision) -> Harness {
        self.supervision = Some(supervision);
        self.assert_interval = crate::poll::INTERVAL;
        self
    }

    /// The names of the tests the run would run: kuttl tests, then chainsaw tests (those that
    /// load and are not skipped).
    pub fn test_names(&self) -> Result<Vec<String>, String> {
        let (kuttl, found) = self.tests()?;
        let mut names: Vec<String> = kuttl.into_iter().map(|t| t.name).collect();
        let filter = self.options.test_filter.as_ref();
        for f in &found {
            for test in chainsaw::load(f).unwrap_or_default() {
                if filter.is_none_or(|re| re.is_match(&test.name))
                    && test.test.spec.skip != Some(true)
                {
                    names.push(test.name);
                }
            }
        }
        Ok(names)
    }

    fn path(&self, p: &str) -> PathBuf {
        self.options.cwd.join(p)
    }

    /// Runs the suite.
    pub async fn run(mut self) -> Outcome {
        let start = Instant::now();
        let mut supervision = self.supervision.take();
        let log = self.options.log.clone();
        let cluster = Cluster {
            client: self.options.client.clone(),
        };
        let suite = &self.options.suite;
        let mut background = Vec::new();
        let mut cases = Vec::new();
        let mut shared_owned = None;
        log.line("=== RUN   kuttl");
        let mut supervisor = None;
        let fatal = match self
            .setup(
                &cluster,
                &mut background,
                &mut supervisor,
                supervision.as_ref(),
            )
            .await
        {
            Err(e) => Some(e),
            Ok(()) => match self.shared_namespace(&cluster).await {
                Err(e) => Some(e),
                Ok(owned) => {
                    shared_owned = owned;
                    match self.tests() {
                        Err(e) => Some(e),
                        Ok((tests, chainsaw)) => {
                            cases = self.run_tests(&cluster, tests).await;
                            cases.extend(self.run_chainsaw(&cluster, &chainsaw).await);
                            None
                        }
                    }
                }
            },
        };
        if let Some(ns) = shared_owned
            && !suite.skip_delete
        {
            log.log("", &format!("Deleting namespace {ns:?}"));
            if let Err(e) = case::delete_namespace(
                &cluster,
                &ns,
                Duration::from_secs(suite.step_timeout() as u64),
            )
            .await
            {
                log.log("", &e);
            }
        }
        let mut restarts = 0;
        let mut quiet = true;
        if let Some(s) = &mut supervision {
            if supervisor.is_some() {
                supervise::await_relists(&mut s.faults.relists_pending(), &log).await;
            }
            if let Some(done) = s.tests_done.take() {
                let _ = done.send(());
            }
            if supervisor.is_some() {
                quiet = supervise::become_quiet(&s.faults, s.settle).await;
            }
        }
        if let Some(supervisor) = supervisor {
            restarts = supervisor.stop().await;
            supervise::note_restarts(&log, restarts);
        }
        for mut child in background {
            let _ = child.kill().await;
        }
        if let Some(e) = &fatal {
            log.line(&format!("    {e}"));
        }
        let duration = start.elapsed();
        let mut outcome = Outcome {
            cases,
            fatal,
            report: None,
            duration,
            restarts,
            quiet,
        };
        self.summary(&outcome);
        if let Some(format) = self.options.report_format {
            let report = Report::build(
                suite.name(),
                &outcome.cases,
                self.options.report_granularity,
                duration,
                outcome.fatal.clone(),
            );
            let dir = self.path(&suite.artifacts_dir);
            let name = if suite.report_name.is_empty() {
                "kuttl-report"
            } else {
                &suite.report_name
            };
            match report.write(format, &dir, name) {
                Ok(p) => outcome.report = Some(p),
                Err(e) => {
                    let e = format!("cannot write the report in {}: {e}", dir.display());
                    log.line(&format!("    {e}"));
                    outcome.fatal.get_or_insert(e);
                }
            }
        }
        outcome
    }

    fn summary(&self, outcome: &Outcome) {
        let log = &self.options.log;
        let word = |failed: bool| if failed { "FAIL" } else { "PASS" };
        let all_failed = !outcome.passed();
        log.line(&format!(
            "--- {}: kuttl ({})",
            word(all_failed),
            go_secs(outcome.duration)
        ));
        let harness_failed = outcome.cases.iter().any(CaseRecord::failed);
        log.line(&format!(
            "    --- {}: kuttl/harness (0.00s)",
            word(harness_failed)
        ));
        for c in &outcome.cases {
            log.line(&format!(
                "        --- {}: kuttl/harness/{} ({})",
                word(c.failed()),
                c.name,
                go_secs(c.duration)
            ));
        }
        log.line(word(all_failed));
    }

    async fn setup(
        &self,
        cluster: &Cluster,
        background: &mut Vec<tokio::process::Child>,
        supervisor: &mut Option<Supervisor>,
        supervision: Option<&Supervision>,
    ) -> Result<(), String> {
        let suite = &self.options.suite;
        let log = &self.options.log;
        let timeout = Duration::from_secs(suite.step_timeout() as u64);
        let target = Target {
            cluster: cluster.clone(),
            namespace: "default".into(),
        };
        if !suite.crd_dir.is_empty() {
            let mut names = Vec::new();
            for object in manifests(&self.path(&suite.crd_dir))? {
                let crd = crate::yaml::kind(&object) == "CustomResourceDefinition"
                    && matches!(
                        crate::yaml::group_version(&object),
                        ("apiextensions.k8s.io", "v1" | "v1beta1")
                    );
                if !crd {
                    log.log(
                        "",
                        &format!(
                            "Skipping resource {} {} because it does not match expected kinds",
                            crate::yaml::kind(&object),
                            crate::yaml::meta(&object, "name")
                        ),
                    );
                    continue;
                }
                let (line, _) = target.apply(&object, timeout).await?;
                log.log("", &line);
                names.push(crate::yaml::meta(&object, "name").to_string());
            }
            wait_for_crds(cluster, &names, timeout).await?;
        }
        for dir in &suite.manifest_dirs {
            for object in manifests(&self.path(dir))? {
                let (line, _) = target.apply(&object, timeout).await?;
                log.log("", &line);
            }
        }
        if !suite.commands.is_empty() {
            let env = CommandEnv {
                namespace: "default".into(),
                kubeconfig: self.options.kubeconfig.clone(),
                workdir: self.options.cwd.clone(),
                cwd: self.options.cwd.clone(),
                log: log.clone(),
                prefix: String::new(),
                own_group: false,
            };
            let raw = (suite.timeout > 0).then(|| Duration::from_secs(suite.timeout as u64));
            match supervision {
                None => background.extend(
                    command::run_all(&suite.commands, &env, raw, true)
                        .await
                        .map_err(|e| e.to_string())?,
                ),
                Some(s) => {
                    // Foreground commands keep the suite's credentials; background ones (the
                    // operator under test) get their own and run supervised.
                    let (fore, back): (Vec<_>, Vec<_>) =
                        suite.commands.iter().cloned().partition(|c| !c.background);
                    command::run_all(&fore, &env, raw, false)
                        .await
                        .map_err(|e| e.to_string())?;
                    let env = CommandEnv {
                        kubeconfig: s.kubeconfig.clone(),
                        own_group: true,
                        ..env
                    };
                    let children = command::run_all(&back, &env, raw, true)
                        .await
                        .map_err(|e| e.to_string())?;
                    let instances = Instances::Commands {
                        commands: back,
                        env,
                        children,
                    };
                    *supervisor = Some(Supervisor::start(
                        instances,
                        s.faults.clone(),
                        s.succession.clone(),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Creates the suite's namespace when it names one; `Some(name)` when this run created it.
    async fn shared_namespace(&self, cluster: &Cluster) -> Result<Option<String>, String> {
        let ns = &self.options.suite.namespace;
        if ns.is_empty() {
            return Ok(None);
        }
        self.options
            .log
            .log("", &format!("Creating namespace {ns:?}"));
        match case::create_namespace(cluster, ns).await {
            Ok(true) => Ok(Some(ns.clone())),
            Ok(false) => {
                self.options
                    .log
                    .log("", &format!("Namespace {ns:?} already exists"));
                Ok(None)
            }
            Err(e) => Err(format!("failed to create test namespace {ns:?}: {e}")),
        }
    }

    /// The kuttl tests and the chainsaw test files of every test dir; a directory that is or
    /// holds a chainsaw test is not a kuttl test.
    fn tests(&self) -> Result<(Vec<TestDir>, Vec<chainsaw::Found>), String> {
        let suite = &self.options.suite;
        let log = &self.options.log;
        log.log(
            "",
            &format!(
                "going to run test suite with timeout of {} seconds for each step",
                suite.step_timeout()
            ),
        );
        let mut all = Vec::new();
        let mut all_chainsaw = Vec::new();
        for dir in &suite.test_dirs {
            let found = chainsaw::find(dir, &self.path(dir))?;
            let tests: Vec<TestDir> = discovery::list_tests(dir, &self.path(dir))?
                .into_iter()
                .filter(|t| !chainsaw::holds(&found, &t.path))
                .filter(|t| {
                    self.options
                        .test_filter
                        .as_ref()
                        .is_none_or(|re| re.is_match(&t.name))
                })
                .collect();
            log.log("", &format!("testsuite: {dir} has {} tests", tests.len()));
            if !found.is_empty() {
                log.log(
                    "",
                    &format!("testsuite: {dir} has {} chainsaw test files", found.len()),
                );
            }
            all.extend(tests);
            all_chainsaw.extend(found);
        }
        Ok((all, all_chainsaw))
    }

    /// Runs the chainsaw tests found in the test dirs.
    async fn run_chainsaw(&self, cluster: &Cluster, found: &[chainsaw::Found]) -> Vec<CaseRecord> {
        if found.is_empty() {
            return Vec::new();
        }
        let settings = chainsaw::Settings {
            cluster: cluster.clone(),
            cwd: self.options.cwd.clone(),
            kubeconfig: self.options.kubeconfig.clone(),
            log: self.options.log.clone(),
            keep_namespaces: self.options.suite.skip_delete,
        };
        chainsaw::run_all(
            found,
            self.options.test_filter.as_ref(),
            self.options.suite.parallelism(),
            settings,
        )
        .await
    }

    async fn run_tests(&self, cluster: &Cluster, tests: Vec<TestDir>) -> Vec<CaseRecord> {
        let suite = &self.options.suite;
        let settings = Arc::new(CaseSettings {
            cluster: cluster.clone(),
            cwd: self.options.cwd.clone(),
            kubeconfig: self.options.kubeconfig.clone(),
            suite_timeout: suite.step_timeout(),
            skip_delete: suite.skip_delete,
            suppress_events: suite.suppress_events(),
            shared_namespace: (!suite.namespace.is_empty()).then(|| suite.namespace.clone()),
            ignore: self.ignore.clone(),
            run_labels: self.options.run_labels.clone(),
            log: self.options.log.clone(),
            process_logs: self.process_logs.clone(),
            assert_interval: self.assert_interval,
        });
        let permits = Arc::new(tokio::sync::Semaphore::new(suite.parallelism()));
        self.options.log.line("=== RUN   kuttl/harness");
        if let Some(p) = &self.progress {
            p(Progress::Planned(tests.len()));
        }
        let mut handles = Vec::new();
        for test in tests {
            let settings = settings.clone();
            let permits = permits.clone();
            let progress = self.progress.clone();
            handles.push(tokio::spawn(async move {
                let _permit = permits.acquire_owned().await;
                settings
                    .log
                    .line(&format!("=== RUN   kuttl/harness/{}", test.name));
                if let Some(p) = &progress {
                    p(Progress::Started(&test.name));
                }
                let record = case::run(&test, &settings).await;
                if let Some(p) = &progress {
                    p(Progress::Finished(&record));
                }
                record
            }));
        }
        let mut cases = Vec::new();
        for h in handles {
            match h.await {
                Ok(record) => cases.push(record),
                Err(e) => self
                    .options
                    .log
                    .line(&format!("    a test task failed: {e}")),
            }
        }
        cases
    }
}

/// The objects of every `.yaml`, `.yml` and `.json` file under `dir` (recursively, sorted).
fn manifests(dir: &Path) -> Result<Vec<Value>, String> {
    let mut files = Vec::new();
    collect_files(dir, &mut files)?;
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let text =
            std::fs::read_to_string(&f).map_err(|e| format!("cannot read {}: {e}", f.display()))?;
        out.extend(
            crate::yaml::load_documents(&text)
                .map_err(|e| format!("cannot load {}: {e}", f.display()))?,
        );
    }
    Ok(out)
}

fn collect_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), String> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        if path.is_dir() {
            collect_files(&path, out)?;
        } else if path
            .extension()
            .is_some_and(|x| x == "yaml" || x == "yml" || x == "json")
        {
            out.push(path);
        }
    }
    Ok(())
}

async fn wait_for_crds(
    cluster: &Cluster,
    names: &[String],
    timeout: Duration,
) -> Result<(), String> {
    let api: Api<CustomResourceDefinition> = Api::all(cluster.client.clone());
    let deadline = Instant::now() + timeout;
    for name in names {
        crate::poll::until(deadline, || async {
            let established = api.get_opt(name).await.ok().flatten().is_some_and(|crd| {
                crd.status
                    .and_then(|s| s.conditions)
                    .unwrap_or_default()
                    .iter()
                    .any(|c| c.type_ == "Established" && c.status == "True")
            });
            if established {
                Ok(())
            } else {
                Err(format!(
                    "CRD {name} not established within {}s",
                    timeout.as_secs()
                ))
            }
        })
        .await?;
    }
    Ok(())
}
