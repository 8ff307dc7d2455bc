//! Running a campaign: for each kuttl test of the suite, two fault-free reference runs (the
//! trace of injection points, the end state, the masks learned from their differences), then
//! one run per injection point of the plan, each judged by the oracles. Every run starts on a
//! fresh embedded control plane, with the suite's background commands (the operator under
//! test) running as a user of their own that the server's faults target, restarted after an
//! injected crash.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kube::api::{Api, DynamicObject, ListParams};
use kube::discovery::{Discovery, Scope, verbs};
use opkit_apiserver::faults::Trace;
use opkit_testenv::TestEnv;
use regex::Regex;

use super::oracle::{self, Counts, Mask, Snapshot};
use super::plan::{self, FaultKind, Injection, RunPlan};
use crate::config::TestSuite;
use crate::harness::{Harness, Options};
use crate::log::Log;
use crate::report::Granularity;
use crate::supervise::Supervision;

/// The user the operator under test runs as (a member of `system:masters`, as the suite's own
/// kubeconfig is: faults, not permissions, are what a campaign tests).
pub const OPERATOR_USER: &str = "opkit-chaos:operator-under-test";

/// How many writes more than the reference's the operator may make in the settle time.
const QUIET_SLACK: usize = 2;

/// A campaign over a suite.
#[derive(Debug, Clone)]
pub struct Campaign {
    /// The suite, flags merged in.
    pub suite: TestSuite,
    /// The suite's working directory.
    pub cwd: PathBuf,
    /// The embedded plane's built-in controllers (`"*"`, or `"garbage-collector,namespace"`).
    pub controllers: String,
    /// The fault kinds.
    pub kinds: Vec<FaultKind>,
    /// Orders the injection points (with a budget, which ones run first).
    pub seed: u64,
    /// Stop starting fault runs after this long.
    pub budget: Option<Duration>,
    /// Only tests whose name this matches.
    pub test_filter: Option<Regex>,
    /// `--test-run-labels`.
    pub run_labels: BTreeMap<String, String>,
    /// How long the operator keeps running after the last step (the quiet oracle's window).
    pub settle: Duration,
    /// The command line that replays a run, without `--chaos-replay PLAN`.
    pub replay_prefix: String,
    /// Where the campaign's lines go.
    pub log: Log,
}

/// Why a campaign could not be run (as opposed to a finding).
#[derive(Debug, thiserror::Error)]
pub enum CampaignError {
    /// The suite names no test dirs, or they cannot be read.
    #[error("{0}")]
    Suite(String),
    /// An embedded plane did not start.
    #[error("cannot start the embedded control plane: {0}")]
    Plane(String),
    /// A reference run failed: the test fails without faults, so faults prove nothing.
    #[error("the fault-free reference run of {test} failed, fix it first:\n{why}")]
    Reference {
        /// The test.
        test: String,
        /// Its failures.
        why: String,
    },
    /// A reference run kept writing after its last step: the operator never settles even
    /// without faults (its own writes trigger more, e.g. a status heartbeat), the quiet oracle
    /// fails before any fault.
    #[error(
        "the operator is not quiet without faults: in the fault-free reference runs of {test} it \
         made {writes} writes in the {settle:?} after the last step (at most {QUIET_SLACK} \
         allowed); an operator whose own writes trigger more writes never settles"
    )]
    NotQuiet {
        /// The test.
        test: String,
        /// The most writes either reference run made after its last step.
        writes: usize,
        /// The window (`--chaos-settle`).
        settle: Duration,
    },
    /// A replay names a test the suite does not have.
    #[error("--chaos-replay: the suite has no kuttl test {0:?}")]
    NoSuchTest(String),
    /// Reading the end state failed.
    #[error("cannot read the end state of {test}: {why}")]
    Snapshot {
        /// The test.
        test: String,
        /// What failed.
        why: String,
    },
    /// Files of a run.
    #[error("{0}")]
    Io(String),
}

/// An oracle a run failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OracleFailure {
    /// Which: `asserts`, `end state`, `create/delete counts` or `quiet`.
    pub oracle: &'static str,
    /// What differed, one line each.
    pub details: Vec<String>,
}

/// A run whose fault broke the operator.
#[derive(Debug, Clone)]
pub struct Finding {
    /// The run.
    pub plan: RunPlan,
    /// The trace point the fault fired on: `write 2`, `notification 3`, `watch 1`.
    pub label: String,
    /// What happened at that point in the reference run, in words (`patch configmaps
    /// status`, `MODIFIED configmaps db`).
    pub point: String,
    /// The oracles it failed.
    pub failures: Vec<OracleFailure>,
    /// The command that replays exactly this run.
    pub replay: String,
    /// The run's whole output.
    pub log_file: Option<PathBuf>,
}

/// How a campaign went.
#[derive(Debug, Default)]
pub struct CampaignOutcome {
    /// Fault runs done.
    pub runs: usize,
    /// Injection points planned but not run: the budget was spent.
    pub not_run: usize,
    /// Points whose fault never fired (the run took another path before reaching them).
    pub not_fired: usize,
    /// The runs that broke the operator.
    pub findings: Vec<Finding>,
    /// The whole campaign, reference runs included.
    pub duration: Duration,
}

/// What the reference runs of a test established.
struct Reference {
    trace: Trace,
    snapshot: Snapshot,
    mask: Mask,
    counts: Counts,
    unstable: BTreeSet<String>,
    quiet_bound: usize,
}

/// What one run left behind.
struct RunResult {
    failures: Vec<String>,
    snapshot: Snapshot,
    trace: Trace,
    after_tests: usize,
    fired: bool,
    namespace: String,
    lines: Vec<String>,
    restarts: usize,
}

impl Campaign {
    /// Runs the campaign over every kuttl test of the suite.
    pub async fn run(&self) -> Result<CampaignOutcome, CampaignError> {
        let started = Instant::now();
        let mut outcome = CampaignOutcome::default();
        let tests = self.tests()?;
        if tests.is_empty() {
            return Err(CampaignError::Suite(
                "no kuttl test to run a campaign on (chainsaw tests are not supported by --chaos \
                 yet)"
                    .into(),
            ));
        }
        for test in &tests {
            let reference = self.reference(test).await?;
            let points = plan::injections(&reference.trace, &self.kinds, self.seed);
            self.log.line(&format!(
                "chaos: {test}: the operator made {} writes, {} watches and got {} \
                 notifications without faults; {} runs planned (seed {})",
                reference.trace.writes.len(),
                reference.trace.watches.len(),
                reference.trace.notifications.len(),
                points.len(),
                self.seed
            ));
            for (i, injection) in points.iter().enumerate() {
                if self.budget.is_some_and(|b| started.elapsed() >= b) {
                    outcome.not_run += points.len() - i;
                    self.log.line(&format!(
                        "chaos: {test}: the budget is spent, {} runs not done",
                        points.len() - i
                    ));
                    break;
                }
                let plan = RunPlan {
                    test: test.clone(),
                    injection: *injection,
                };
                self.fault_run(&plan, &reference, &mut outcome).await?;
            }
        }
        outcome.duration = started.elapsed();
        Ok(outcome)
    }

    /// Replays one run of a campaign (after the reference runs its oracles need).
    pub async fn replay(&self, plan: &RunPlan) -> Result<CampaignOutcome, CampaignError> {
        let started = Instant::now();
        if !self.tests()?.contains(&plan.test) {
            return Err(CampaignError::NoSuchTest(plan.test.clone()));
        }
        let mut outcome = CampaignOutcome::default();
        let reference = self.reference(&plan.test).await?;
        self.fault_run(plan, &reference, &mut outcome).await?;
        outcome.duration = started.elapsed();
        Ok(outcome)
    }

    fn tests(&self) -> Result<Vec<String>, CampaignError> {
        let harness = Harness::new(self.options(
            self.test_filter.clone(),
            PathBuf::new(),
            kube_client_placeholder()?,
            Log::new(|_| {}),
        ))
        .map_err(|e| CampaignError::Suite(e.to_string()))?;
        harness.kuttl_tests().map_err(CampaignError::Suite)
    }

    fn options(
        &self,
        test_filter: Option<Regex>,
        kubeconfig: PathBuf,
        client: kube::Client,
        log: Log,
    ) -> Options {
        let mut suite = self.suite.clone();
        // One test at a time, and its namespace kept for the end-state oracle.
        suite.parallel = 1;
        suite.skip_delete = true;
        Options {
            suite,
            client,
            kubeconfig,
            cwd: self.cwd.clone(),
            test_filter,
            run_labels: self.run_labels.clone(),
            report_format: None,
            report_granularity: Granularity::Step,
            log,
        }
    }

    /// Two fault-free runs of `test`.
    async fn reference(&self, test: &str) -> Result<Reference, CampaignError> {
        let first = self.run_once(test, None).await?;
        let second = self.run_once(test, None).await?;
        for run in [&first, &second] {
            if !run.failures.is_empty() {
                return Err(CampaignError::Reference {
                    test: test.to_string(),
                    why: run.failures.join("\n"),
                });
            }
        }
        let after_tests = first.after_tests.max(second.after_tests);
        if after_tests > QUIET_SLACK {
            return Err(CampaignError::NotQuiet {
                test: test.to_string(),
                writes: after_tests,
                settle: self.settle,
            });
        }
        let counts = oracle::counts(&first.trace.writes, &first.namespace);
        let unstable = oracle::unstable_groups(
            &counts,
            &oracle::counts(&second.trace.writes, &second.namespace),
        );
        Ok(Reference {
            counts: oracle::collapse(&counts, &unstable),
            unstable,
            mask: oracle::learn_mask(&first.snapshot, &second.snapshot),
            quiet_bound: after_tests + QUIET_SLACK,
            trace: first.trace,
            snapshot: first.snapshot,
        })
    }

    /// One run with a fault, judged.
    async fn fault_run(
        &self,
        plan: &RunPlan,
        reference: &Reference,
        outcome: &mut CampaignOutcome,
    ) -> Result<(), CampaignError> {
        let started = Instant::now();
        let run = self.run_once(&plan.test, Some(plan.injection)).await?;
        outcome.runs += 1;
        let trigger = plan.injection.trigger();
        let point = plan::describe_point(&reference.trace, trigger)
            .or_else(|| plan::describe_point(&run.trace, trigger))
            .unwrap_or_else(|| "(not in the trace)".to_string());
        if !run.fired {
            outcome.not_fired += 1;
        }
        let failures = judge(reference, &run);
        let verdict = if failures.is_empty() { "ok" } else { "FAILED" };
        self.log.line(&format!(
            "chaos: {plan} ({point}): {verdict} (restarted {} times, {:.1}s)",
            run.restarts,
            started.elapsed().as_secs_f64()
        ));
        if failures.is_empty() {
            return Ok(());
        }
        let log_file = self.keep_log(plan, &run.lines)?;
        outcome.findings.push(Finding {
            plan: plan.clone(),
            label: plan::point_label(trigger),
            point,
            failures,
            replay: format!("{} --chaos-replay {plan}", self.replay_prefix),
            log_file: Some(log_file),
        });
        Ok(())
    }

    /// Writes a failed run's output to `<artifacts>/chaos-logs/<test>/<injection>.log`.
    fn keep_log(&self, plan: &RunPlan, lines: &[String]) -> Result<PathBuf, CampaignError> {
        let dir = self
            .cwd
            .join(&self.suite.artifacts_dir)
            .join("chaos-logs")
            .join(&plan.test);
        std::fs::create_dir_all(&dir)
            .map_err(|e| CampaignError::Io(format!("cannot create {}: {e}", dir.display())))?;
        let path = dir.join(format!("{}.log", plan.injection));
        let mut text = lines.join("\n");
        text.push('\n');
        std::fs::write(&path, text)
            .map_err(|e| CampaignError::Io(format!("cannot write {}: {e}", path.display())))?;
        Ok(path)
    }

    /// Runs `test` once on a fresh plane, with `injection` armed.
    async fn run_once(
        &self,
        test: &str,
        injection: Option<Injection>,
    ) -> Result<RunResult, CampaignError> {
        let env = TestEnv::builder()
            .controllers(self.controllers.clone())
            .start()
            .await
            .map_err(|e| CampaignError::Plane(e.to_string()))?;
        let files = RunFiles::new()?;
        let admin = files.write("kubeconfig", env.kubeconfig())?;
        let operator_config = env
            .control_plane()
            .user_kubeconfig(OPERATOR_USER, &["system:masters".to_string()])
            .map_err(|e| CampaignError::Plane(e.to_string()))?;
        let operator = files.write("operator.kubeconfig", &operator_config)?;
        let faults = env.control_plane().server().faults();
        faults.target(OPERATOR_USER);
        if let Some(injection) = injection {
            faults
                .arm(injection.fault())
                .map_err(|e| CampaignError::Plane(e.to_string()))?;
        }
        let lines = Arc::new(Mutex::new(Vec::new()));
        let sink = lines.clone();
        let log = Log::new(move |line| {
            sink.lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(line.to_string());
        });
        let filter = Regex::new(&format!("^{}$", regex::escape(test)))
            .map_err(|e| CampaignError::Suite(e.to_string()))?;
        let (done, tests_done) = tokio::sync::oneshot::channel();
        let harness = Harness::new(self.options(Some(filter), admin, env.client(), log))
            .map_err(|e| CampaignError::Suite(e.to_string()))?
            .with_supervision(Supervision {
                kubeconfig: operator,
                crashes: faults.crashes(),
                settle: self.settle,
                tests_done: Some(done),
            });
        let mark = async {
            let _ = tests_done.await;
            faults.trace().writes.len()
        };
        let (result, writes_at_end) = tokio::join!(harness.run(), mark);
        let trace = faults.trace();
        let fired = !faults.fired().is_empty();
        let mut failures: Vec<String> = result.fatal.iter().cloned().collect();
        let mut namespace = String::new();
        for case in &result.cases {
            if let Some(e) = &case.setup_failure {
                failures.push(e.clone());
            }
            for step in &case.steps {
                if let Some((message, errors)) = &step.failure {
                    failures.push(message.clone());
                    failures.extend(errors.iter().cloned());
                }
            }
            if let Some(ns) = &case.namespace {
                namespace = ns.clone();
            }
        }
        let snapshot = match namespace.as_str() {
            "" => Snapshot::new(),
            ns => snapshot(&env.client(), ns)
                .await
                .map_err(|why| CampaignError::Snapshot {
                    test: test.to_string(),
                    why,
                })?,
        };
        env.shutdown().await;
        let lines = std::mem::take(&mut *lines.lock().unwrap_or_else(|e| e.into_inner()));
        Ok(RunResult {
            failures,
            snapshot,
            after_tests: trace.writes.len().saturating_sub(writes_at_end),
            trace,
            fired,
            namespace,
            lines,
            restarts: result.restarts,
        })
    }
}

/// The oracles' verdicts on a fault run.
fn judge(reference: &Reference, run: &RunResult) -> Vec<OracleFailure> {
    let mut out = Vec::new();
    if !run.failures.is_empty() {
        out.push(OracleFailure {
            oracle: "asserts",
            details: run.failures.clone(),
        });
    }
    let state = oracle::compare_end_state(&reference.snapshot, &run.snapshot, &reference.mask);
    if !state.is_empty() {
        out.push(OracleFailure {
            oracle: "end state",
            details: state,
        });
    }
    let counts = oracle::compare_counts(
        &reference.counts,
        &oracle::collapse(
            &oracle::counts(&run.trace.writes, &run.namespace),
            &reference.unstable,
        ),
    );
    if !counts.is_empty() {
        out.push(OracleFailure {
            oracle: "create/delete counts",
            details: counts,
        });
    }
    if run.after_tests > reference.quiet_bound {
        out.push(OracleFailure {
            oracle: "quiet",
            details: vec![format!(
                "the operator made {} writes after the last step (the reference runs at most {})",
                run.after_tests,
                reference.quiet_bound - QUIET_SLACK
            )],
        });
    }
    out
}

/// The objects of `namespace`, normalized, events left out.
async fn snapshot(client: &kube::Client, namespace: &str) -> Result<Snapshot, String> {
    let discovery = Discovery::new(client.clone())
        .run()
        .await
        .map_err(|e| format!("discovery: {e}"))?;
    let mut out = Snapshot::new();
    for group in discovery.groups() {
        for (resource, caps) in group.recommended_resources() {
            if caps.scope != Scope::Namespaced
                || !caps.supports_operation(verbs::LIST)
                || resource.kind == "Event"
            {
                continue;
            }
            let api: Api<DynamicObject> =
                Api::namespaced_with(client.clone(), namespace, &resource);
            let list = api
                .list(&ListParams::default())
                .await
                .map_err(|e| format!("listing {}: {e}", resource.plural))?;
            for object in list {
                let kind = if resource.group.is_empty() {
                    resource.kind.clone()
                } else {
                    format!("{}.{}", resource.kind, resource.group)
                };
                let name = object.metadata.name.clone().unwrap_or_default();
                let value = serde_json::to_value(&object).map_err(|e| e.to_string())?;
                out.insert(
                    format!("{kind}/{name}"),
                    oracle::normalize(&value, namespace),
                );
            }
        }
    }
    Ok(out)
}

/// A client that is never used to connect: listing tests needs a harness, not a cluster.
fn kube_client_placeholder() -> Result<kube::Client, CampaignError> {
    let config = kube::Config::new(
        "http://127.0.0.1:9"
            .parse()
            .map_err(|e| CampaignError::Suite(format!("{e}")))?,
    );
    kube::Client::try_from(config).map_err(|e| CampaignError::Suite(e.to_string()))
}

/// A run's kubeconfigs, in a directory of their own removed with the run.
struct RunFiles(PathBuf);

impl RunFiles {
    fn new() -> Result<RunFiles, CampaignError> {
        let dir = std::env::temp_dir().join(format!(
            "opkit-chaos-{}-{}",
            std::process::id(),
            crate::names::namespace()
        ));
        std::fs::create_dir_all(&dir)
            .map_err(|e| CampaignError::Io(format!("cannot create {}: {e}", dir.display())))?;
        Ok(RunFiles(dir))
    }

    fn write(&self, name: &str, contents: &str) -> Result<PathBuf, CampaignError> {
        let path = self.0.join(name);
        write_private(&path, contents)
            .map_err(|e| CampaignError::Io(format!("cannot write {}: {e}", path.display())))?;
        Ok(path)
    }
}

impl Drop for RunFiles {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Writes a file only its owner can read (it holds credentials).
fn write_private(path: &Path, contents: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(contents.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference() -> Reference {
        Reference {
            trace: Trace::default(),
            snapshot: Snapshot::new(),
            mask: Mask::new(),
            counts: Counts::new(),
            unstable: BTreeSet::new(),
            quiet_bound: QUIET_SLACK,
        }
    }

    fn run(after_tests: usize) -> RunResult {
        RunResult {
            failures: Vec::new(),
            snapshot: Snapshot::new(),
            trace: Trace::default(),
            after_tests,
            fired: true,
            namespace: "ns".into(),
            lines: Vec::new(),
            restarts: 0,
        }
    }

    #[test]
    fn an_operator_that_keeps_writing_after_the_last_step_is_not_quiet() {
        assert!(judge(&reference(), &run(QUIET_SLACK)).is_empty());
        let failures = judge(&reference(), &run(QUIET_SLACK + 5));
        assert_eq!(failures.len(), 1);
        assert_eq!(failures[0].oracle, "quiet");
        assert_eq!(
            failures[0].details,
            ["the operator made 7 writes after the last step (the reference runs at most 0)"]
        );
    }

    #[test]
    fn a_run_whose_asserts_fail_is_judged_by_that_oracle_first() {
        let mut failed = run(0);
        failed.failures = vec!["failed in step 0-request".into()];
        let failures = judge(&reference(), &failed);
        assert_eq!(failures[0].oracle, "asserts");
        assert_eq!(failures[0].details, ["failed in step 0-request"]);
    }
}
