//! A campaign over a suite (`opkit test --chaos`): each kuttl or chainsaw test of the suite is a
//! workload whose every run starts on a fresh embedded plane, with the suite's background
//! commands (the operator under test; `--operator` adds one) running as a user of their own that
//! the server's faults target, restarted after an injected crash. The loop, the oracles and shrinking are `driver`'s.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use opkit_testenv::TestEnv;
use regex::Regex;

use super::driver::{CampaignError, CampaignOutcome, Driver, RunResult, Runner};
use super::plan::{FaultKind, Injection, RunPlan};
use super::plane::{RunEnd, RunPlane};
use crate::config::TestSuite;
use crate::harness::{Harness, Options};
use crate::log::Log;
use crate::report::Granularity;
use crate::supervise::Supervision;

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
    /// Stop starting fault runs (and shrinking) after this long.
    pub budget: Option<Duration>,
    /// How many faults one run arms together (1: a run per injection point; more: fewer,
    /// harsher runs, and a failing one is shrunk to the faults that matter).
    pub faults_per_run: usize,
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

impl Campaign {
    /// Runs the campaign over every kuttl and chainsaw test of the suite.
    pub async fn run(&self) -> Result<CampaignOutcome, CampaignError> {
        let tests = self.tests()?;
        if tests.is_empty() {
            return Err(CampaignError::Suite(
                "no kuttl or chainsaw test to run a campaign on".into(),
            ));
        }
        self.driver(&|plan| self.replay_command(plan))
            .campaign(&tests)
            .await
    }

    /// Replays one run of a campaign (after the reference runs its oracles need).
    pub async fn replay(&self, plan: &RunPlan) -> Result<CampaignOutcome, CampaignError> {
        if !self.tests()?.contains(&plan.test) {
            return Err(CampaignError::NoSuchTest(plan.test.clone()));
        }
        self.driver(&|plan| self.replay_command(plan))
            .replay(plan)
            .await
    }

    fn replay_command(&self, plan: &RunPlan) -> String {
        format!("{} --chaos-replay {plan}", self.replay_prefix)
    }

    fn driver<'a>(&'a self, replay: &'a (dyn Fn(&RunPlan) -> String + Sync)) -> Driver<'a, Self> {
        Driver {
            runner: self,
            kinds: &self.kinds,
            seed: self.seed,
            budget: self.budget,
            faults_per_run: self.faults_per_run,
            replay,
            logs_dir: Some(self.cwd.join(&self.suite.artifacts_dir).join("chaos-logs")),
            log: self.log.clone(),
        }
    }

    fn tests(&self) -> Result<Vec<String>, CampaignError> {
        let harness = Harness::new(self.options(
            self.test_filter.clone(),
            PathBuf::new(),
            kube_client_placeholder()?,
            Log::new(|_| {}),
        ))
        .map_err(|e| CampaignError::Suite(e.to_string()))?;
        if !self.suite.commands.iter().any(|c| c.background) {
            return Err(CampaignError::Suite(
                "--chaos needs the operator under test: a background command of the suite \
                 (kuttl-test.yaml `commands: [{command: ..., background: true}]`) or --operator CMD"
                    .into(),
            ));
        }
        harness.test_names().map_err(CampaignError::Suite)
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
}

impl Runner for Campaign {
    /// Runs the test `test` once on a fresh plane, with `injections` armed.
    async fn run_once(
        &self,
        test: &str,
        injections: &[Injection],
    ) -> Result<RunResult, CampaignError> {
        let builder = TestEnv::builder().controllers(self.controllers.clone());
        let plane = RunPlane::start(builder, injections).await?;
        let filter = Regex::new(&format!("^{}$", regex::escape(test)))
            .map_err(|e| CampaignError::Suite(e.to_string()))?;
        let (done, tests_done) = tokio::sync::oneshot::channel();
        let options = self.options(
            Some(filter),
            plane.admin.clone(),
            plane.env.client(),
            plane.log.clone(),
        );
        let harness = Harness::new(options)
            .map_err(|e| CampaignError::Suite(e.to_string()))?
            .with_supervision(Supervision {
                kubeconfig: plane.operator.clone(),
                settle: self.settle,
                faults: plane.faults.clone(),
                tests_done: Some(done),
                succession: Some(plane.succession()),
            });
        let mark = async {
            let _ = tests_done.await;
            plane.faults.trace().writes.len()
        };
        let (result, writes_at_end) = tokio::join!(harness.run(), mark);
        let mut failures: Vec<String> = result.fatal.iter().cloned().collect();
        let mut namespace = String::new();
        for case in &result.cases {
            if let Some(e) = &case.setup_failure {
                failures.push(e.clone());
            }
            // A chainsaw test's cleanup that fails (a finalizer never removed) is a failure.
            failures.extend(case.cleanup_failures.iter().cloned());
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
        let end = RunEnd {
            failures,
            namespace,
            restarts: result.restarts,
            writes_at_end,
            quiet: result.quiet,
        };
        plane.finish(test, end).await
    }
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
