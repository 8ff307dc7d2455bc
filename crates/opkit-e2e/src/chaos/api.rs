//! Campaigns in `cargo test`: the same reference runs, faults, oracles and shrinking as
//! `opkit test --chaos`, over a test written in Rust instead of a kuttl suite. The workload is an
//! async function that gets an admin client and a fresh namespace on a fresh [`TestEnv`] plane
//! (built from the caller's [`TestEnvBuilder`], CRDs included) and fails by returning an error
//! or panicking (`assert!`); the operator under test is a command (any language) or a task of
//! the test process (a kube-rs controller), killed and started again after an injected crash.
//!
//! ```no_run
//! use std::time::Duration;
//! use opkit_e2e::chaos::{Chaos, FaultKind, Operator};
//! use opkit_testenv::TestEnv;
//!
//! # async fn doc() -> Result<(), Box<dyn std::error::Error>> {
//! let report = Chaos::new(TestEnv::builder(), Operator::command("sh operator.sh"))
//!     .faults(&[FaultKind::Crash, FaultKind::Errors])
//!     .settle(Duration::from_millis(500))
//!     .run("flag", |t| async move {
//!         // Create the request with `t.client` in `t.namespace`, then wait for the
//!         // operator's output (opkit_testenv::eventually); an error or a panic fails the run.
//!         let _ = (t.client, t.namespace);
//!         Ok(())
//!     })
//!     .await?;
//! assert!(report.findings.is_empty(), "{:#?}", report.findings);
//! # Ok(())
//! # }
//! ```

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, PostParams};
use opkit_testenv::TestEnvBuilder;

use super::driver::{CampaignError, CampaignOutcome, Driver, RunResult, Runner};
use super::plan::{FaultKind, Injection, RunPlan};
use super::plane::{RunEnd, RunPlane};
use crate::command::{self, CommandEnv};
use crate::log::Log;
use crate::supervise::{self, Instances, Supervisor};
use crate::types::Command;

#[cfg(doc)]
use opkit_testenv::TestEnv;

/// The error a workload fails with.
pub type WorkloadError = Box<dyn std::error::Error + Send + Sync>;

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;
type OperatorFn = Arc<dyn Fn(kube::Client) -> BoxFuture<()> + Send + Sync>;
type WorkloadFn = Arc<dyn Fn(Workload) -> BoxFuture<Result<(), WorkloadError>> + Send + Sync>;

/// The operator under test: it runs as a user of its own, the one the server's faults target.
#[derive(Clone)]
pub struct Operator(OperatorKind);

#[derive(Clone)]
enum OperatorKind {
    /// `sh -c SCRIPT` in a working directory, with `$KUBECONFIG` its own.
    Command { script: String, dir: PathBuf },
    /// A task of the test process, given a client of its own.
    Task(OperatorFn),
}

impl std::fmt::Debug for Operator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            OperatorKind::Command { script, .. } => write!(f, "Operator::command({script:?})"),
            OperatorKind::Task(_) => f.write_str("Operator::task(..)"),
        }
    }
}

impl Operator {
    /// A shell command (`sh -c`) run in the current directory; it finds its credentials in
    /// `$KUBECONFIG`, as `kubectl` and client libraries do.
    pub fn command(script: impl Into<String>) -> Operator {
        Operator::command_in(script, ".")
    }

    /// A shell command run in `dir`.
    pub fn command_in(script: impl Into<String>, dir: impl Into<PathBuf>) -> Operator {
        Operator(OperatorKind::Command {
            script: script.into(),
            dir: dir.into(),
        })
    }

    /// An operator in this process: `run` is called with a client of its own and its future
    /// is spawned; an injected crash aborts it and calls `run` again, as a restart would.
    pub fn task<F, Fut>(run: F) -> Operator
    where
        F: Fn(kube::Client) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        Operator(OperatorKind::Task(Arc::new(
            move |client| -> BoxFuture<()> { Box::pin(run(client)) },
        )))
    }
}

/// What a workload gets: an admin client (not the operator's: faults never touch it) and the
/// run's namespace, fresh for each run.
#[derive(Clone)]
pub struct Workload {
    /// A client with admin rights.
    pub client: kube::Client,
    /// The run's namespace (created before the workload starts); the end-state oracle
    /// compares its objects with the reference run's.
    pub namespace: String,
}

/// A campaign over a Rust workload; see the [module docs](self).
#[derive(Clone)]
pub struct Chaos {
    env: TestEnvBuilder,
    operator: Operator,
    kinds: Vec<FaultKind>,
    seed: u64,
    budget: Option<Duration>,
    faults_per_run: usize,
    settle: Duration,
    timeout: Duration,
    log: Log,
}

impl std::fmt::Debug for Chaos {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Chaos")
            .field("operator", &self.operator)
            .field("kinds", &self.kinds)
            .field("seed", &self.seed)
            .finish_non_exhaustive()
    }
}

impl Chaos {
    /// A campaign whose runs each start a plane from `env`, with `operator` running against
    /// it. Defaults: crash faults, seed 1, no budget, one fault per run, 2 s settle time, a
    /// workload timeout of 60 s, no output.
    pub fn new(env: TestEnvBuilder, operator: Operator) -> Chaos {
        Chaos {
            env,
            operator,
            kinds: vec![FaultKind::Crash],
            seed: 1,
            budget: None,
            faults_per_run: 1,
            settle: Duration::from_secs(2),
            timeout: Duration::from_secs(60),
            log: Log::new(|_| {}),
        }
    }

    /// The fault kinds to inject.
    pub fn faults(mut self, kinds: &[FaultKind]) -> Chaos {
        self.kinds = kinds.to_vec();
        self
    }

    /// The seed that orders the runs.
    pub fn seed(mut self, seed: u64) -> Chaos {
        self.seed = seed;
        self
    }

    /// Stop starting runs (and shrinking) after this long.
    pub fn budget(mut self, budget: Duration) -> Chaos {
        self.budget = Some(budget);
        self
    }

    /// Arm up to `n` faults together in each run; a failing run is shrunk.
    pub fn faults_per_run(mut self, n: usize) -> Chaos {
        self.faults_per_run = n.max(1);
        self
    }

    /// How long the operator must go without a write after the workload to be quiet (it runs
    /// on until it did, at most five times as long).
    pub fn settle(mut self, settle: Duration) -> Chaos {
        self.settle = settle;
        self
    }

    /// How long a workload may take before its run fails.
    pub fn timeout(mut self, timeout: Duration) -> Chaos {
        self.timeout = timeout;
        self
    }

    /// Where the campaign's lines go (`Log::stdout()` to watch it).
    pub fn log(mut self, log: Log) -> Chaos {
        self.log = log;
        self
    }

    /// Runs the campaign over `workload`, named `name` in plans and reports.
    pub async fn run<F, Fut>(
        &self,
        name: &str,
        workload: F,
    ) -> Result<CampaignOutcome, CampaignError>
    where
        F: Fn(Workload) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), WorkloadError>> + Send + 'static,
    {
        self.check()?;
        let runner = self.runner(workload);
        let tests = [name.to_string()];
        self.driver(&runner).campaign(&tests).await
    }

    /// Replays one run of a finding (its `replay`), after the two reference runs.
    pub async fn replay<F, Fut>(
        &self,
        plan: &RunPlan,
        workload: F,
    ) -> Result<CampaignOutcome, CampaignError>
    where
        F: Fn(Workload) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), WorkloadError>> + Send + 'static,
    {
        self.check()?;
        let runner = self.runner(workload);
        self.driver(&runner).replay(plan).await
    }

    /// Refuses what cannot run: a paused leader needs a process to stop.
    fn check(&self) -> Result<(), CampaignError> {
        if self.kinds.contains(&FaultKind::Leader)
            && matches!(self.operator.0, OperatorKind::Task(_))
        {
            return Err(CampaignError::Suite(
                "a paused leader (FaultKind::Leader) needs an operator process to stop: use \
                 Operator::command"
                    .into(),
            ));
        }
        Ok(())
    }

    fn runner<F, Fut>(&self, workload: F) -> ApiRunner<'_>
    where
        F: Fn(Workload) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), WorkloadError>> + Send + 'static,
    {
        ApiRunner {
            chaos: self,
            workload: Arc::new(move |w| -> BoxFuture<Result<(), WorkloadError>> {
                Box::pin(workload(w))
            }),
        }
    }

    fn driver<'a>(&'a self, runner: &'a ApiRunner<'a>) -> Driver<'a, ApiRunner<'a>> {
        Driver {
            runner,
            kinds: &self.kinds,
            seed: self.seed,
            budget: self.budget,
            faults_per_run: self.faults_per_run,
            replay: REPLAY,
            logs_dir: None,
            log: self.log.clone(),
        }
    }
}

/// How a finding of a [`Chaos`] campaign is replayed.
const REPLAY: &(dyn Fn(&RunPlan) -> String + Sync) = &replay_call;

fn replay_call(plan: &RunPlan) -> String {
    format!("Chaos::replay(&{:?}.parse()?, workload)", plan.to_string())
}

/// A [`Chaos`] campaign's runs.
struct ApiRunner<'a> {
    chaos: &'a Chaos,
    workload: WorkloadFn,
}

impl Runner for ApiRunner<'_> {
    async fn run_once(
        &self,
        test: &str,
        injections: &[Injection],
    ) -> Result<RunResult, CampaignError> {
        let chaos = self.chaos;
        let plane = RunPlane::start(chaos.env.clone(), injections).await?;
        let namespace = crate::names::namespace().replacen("kuttl-", "chaos-", 1);
        let namespaces: Api<Namespace> = Api::all(plane.env.client());
        let mut object = Namespace::default();
        object.metadata.name = Some(namespace.clone());
        namespaces
            .create(&PostParams::default(), &object)
            .await
            .map_err(|e| {
                CampaignError::Plane(format!("cannot create namespace {namespace}: {e}"))
            })?;
        let instances = self.start_operator(&plane).await?;
        let supervisor =
            Supervisor::start(instances, plane.faults.clone(), Some(plane.succession()));
        let workload = (self.workload)(Workload {
            client: plane.env.client(),
            namespace: namespace.clone(),
        });
        let mut failures = Vec::new();
        let mut task = tokio::spawn(workload);
        match tokio::time::timeout(chaos.timeout, &mut task).await {
            Err(_) => {
                task.abort();
                failures.push(format!(
                    "the workload did not end within {:?}",
                    chaos.timeout
                ));
            }
            Ok(Err(join)) => {
                failures.push(format!("the workload panicked: {}", panic_message(join)))
            }
            Ok(Ok(Err(e))) => failures.push(format!("the workload failed: {e}")),
            Ok(Ok(Ok(()))) => {}
        }
        supervise::await_relists(&mut plane.faults.relists_pending(), &plane.log).await;
        let writes_at_end = plane.faults.trace().writes.len();
        // The quiet oracle's window: the operator runs on until it goes the settle time
        // without a write.
        let quiet = crate::supervise::become_quiet(&plane.faults, chaos.settle).await;
        let restarts = supervisor.stop().await;
        let end = RunEnd {
            failures,
            namespace,
            restarts,
            writes_at_end,
            quiet,
        };
        plane.finish(test, end).await
    }
}

impl ApiRunner<'_> {
    /// Starts the operator with the plane's operator credentials.
    async fn start_operator(&self, plane: &RunPlane) -> Result<Instances, CampaignError> {
        match &self.chaos.operator.0 {
            OperatorKind::Command { script, dir } => {
                let commands = vec![Command {
                    script: script.clone(),
                    background: true,
                    ..Command::default()
                }];
                let env = CommandEnv {
                    namespace: "default".into(),
                    kubeconfig: plane.operator.clone(),
                    workdir: dir.clone(),
                    cwd: dir.clone(),
                    log: plane.log.clone(),
                    prefix: "operator".into(),
                    own_group: true,
                };
                let children = command::run_all(&commands, &env, None, true)
                    .await
                    .map_err(|e| CampaignError::Plane(format!("cannot start the operator: {e}")))?;
                Ok(Instances::Commands {
                    commands,
                    env,
                    children,
                })
            }
            OperatorKind::Task(run) => {
                let config = opkit_testenv::client_config(&plane.operator_config)
                    .await
                    .map_err(|e| CampaignError::Plane(e.to_string()))?;
                // A client of its own at each start: a restarted operator opens new
                // connections, and the old one's watches end with it.
                kube::Client::try_from(config.clone())
                    .map_err(|e| CampaignError::Plane(e.to_string()))?;
                let run = run.clone();
                let log = plane.log.clone();
                let start: crate::supervise::StartTask = Arc::new(move || {
                    let run = run.clone();
                    let config = config.clone();
                    let log = log.clone();
                    tokio::spawn(async move {
                        match kube::Client::try_from(config) {
                            Ok(client) => run(client).await,
                            Err(e) => log.log("operator", &format!("cannot make a client: {e}")),
                        }
                    })
                });
                Ok(Instances::Task {
                    running: start(),
                    start,
                    log: plane.log.clone(),
                })
            }
        }
    }
}

/// A panicked task's message.
fn panic_message(join: tokio::task::JoinError) -> String {
    if !join.is_panic() {
        return join.to_string();
    }
    let payload = join.into_panic();
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".into())
}
