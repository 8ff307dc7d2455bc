//! `opkit kudo ...` and `kubectl kudo ...`: KUDO's command line over opkit's KUDO API
//! (`kudo.dev/v1beta1`). The commands, flags, output and messages are `kubectl-kudo`'s
//! (KUDO 0.19), plus opkit's `plan abandon` and `plan retry`. The same tree runs as
//! `opkit kudo` and as the `kubectl-kudo` plugin binary.
//!
//! One file per command group: `init`, `install` (install, upgrade and their package and
//! dependency resolution), `instance` (update, uninstall), `get`, `plan`, `package`,
//! `repo` (repositories and `search`), `package_add` (`package add`), `diagnostics`
//! (`diagnostics collect`), `manager` (the manager process).

mod diagnostics;
mod get;
mod init;
mod install;
mod instance;
mod manager;
mod output;
mod package;
mod package_add;
mod plan;
mod repo;

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use kube::Api;
use opkit_kudo::api::{ExecutionStatus, PlanStatus};
use opkit_kudo::{Instance, Operator, OperatorVersion};

use crate::progress::Status;

/// `kubectl kudo` / `opkit kudo`.
#[derive(Args)]
pub(crate) struct KudoArgs {
    #[command(flatten)]
    global: Global,
    #[command(subcommand)]
    command: KudoCommand,
}

/// KUDO's persistent flags.
#[derive(Args, Clone)]
pub(crate) struct Global {
    /// Path to your Kubernetes configuration file (default: `$KUBECONFIG`, else
    /// `~/.kube/config`).
    #[arg(long, global = true, value_name = "PATH")]
    kubeconfig: Option<PathBuf>,
    /// Target namespace for the object (default: `default`; for `init`: `kudo-system`).
    #[arg(short = 'n', long, global = true, value_name = "NS")]
    namespace: Option<String>,
}

#[derive(Subcommand)]
enum KudoCommand {
    /// Initialize KUDO on both the client and server: install the CRDs and the manager.
    Init(init::InitArgs),
    /// Install an operator (a package directory, a .tgz or a repository name) and an instance.
    Install(install::InstallArgs),
    /// Upgrade an instance to a newer version of its operator.
    Upgrade(install::UpgradeArgs),
    /// Update the parameters of an instance.
    Update(instance::UpdateArgs),
    /// Uninstall an instance.
    Uninstall(instance::UninstallArgs),
    /// Get instances, operators or operatorversions (or all) of a namespace.
    Get(get::GetArgs),
    /// View, trigger, abandon and retry plans of an instance.
    #[command(subcommand)]
    Plan(plan::PlanCommand),
    /// Create, verify and inspect operator packages.
    #[command(subcommand)]
    Package(package::PackageCommand),
    /// Manage package repositories (http(s) URLs, or local folders holding index.yaml).
    #[command(subcommand)]
    Repo(repo::RepoCommand),
    /// Search the repository's index for operators.
    Search(repo::SearchArgs),
    /// Collect diagnostics of an instance into a directory tree.
    #[command(subcommand)]
    Diagnostics(DiagnosticsCommand),
    /// Run the KUDO manager (the instance controller) until SIGINT or SIGTERM.
    Manager(manager::ManagerArgs),
    /// Print the version.
    Version,
}

/// `diagnostics ...`.
#[derive(Subcommand)]
enum DiagnosticsCommand {
    /// Collect the instance, its operator and operator version, their events, the objects
    /// it owns and its pods' logs (and the manager's) into --output-directory.
    Collect(diagnostics::CollectArgs),
}

/// Runs a `kudo` command; the exit code is KUDO's (0, or 1 with `error: ...`).
pub(crate) async fn run(args: KudoArgs) -> anyhow::Result<()> {
    let g = args.global;
    match args.command {
        KudoCommand::Init(a) => init::run(a, &g).await,
        KudoCommand::Install(a) => install::install(a, &g).await,
        KudoCommand::Upgrade(a) => install::upgrade(a, &g).await,
        KudoCommand::Update(a) => instance::update(a, &g).await,
        KudoCommand::Uninstall(a) => instance::uninstall(a, &g).await,
        KudoCommand::Get(a) => get::run(a, &g).await,
        KudoCommand::Plan(c) => plan::run(c, &g).await,
        KudoCommand::Package(c) => package::run(c),
        KudoCommand::Repo(c) => repo::run(c),
        KudoCommand::Search(a) => repo::search(a),
        KudoCommand::Diagnostics(DiagnosticsCommand::Collect(a)) => {
            diagnostics::collect(a, &g).await
        }
        KudoCommand::Manager(a) => manager::run(a, &g).await,
        KudoCommand::Version => {
            println!(
                "KUDO Version: version.Info{{GitVersion:\"{}\", GitCommit:\"\", BuildDate:\"\", \
                 GoVersion:\"\", Compiler:\"rustc\", Platform:\"{}/{}\"}}",
                env!("CARGO_PKG_VERSION"),
                std::env::consts::OS,
                std::env::consts::ARCH
            );
            Ok(())
        }
    }
}

/// The KUDO objects of one namespace on the cluster of the global flags.
pub(crate) struct Kudo {
    client: kube::Client,
    namespace: String,
}

impl Kudo {
    async fn connect(g: &Global) -> anyhow::Result<Kudo> {
        let cluster = crate::cluster::connect(g.kubeconfig.as_deref()).await?;
        Ok(Kudo {
            client: cluster.client,
            namespace: g.namespace.clone().unwrap_or_else(|| "default".to_string()),
        })
    }

    fn instances(&self) -> Api<Instance> {
        Api::namespaced(self.client.clone(), &self.namespace)
    }

    fn operators(&self) -> Api<Operator> {
        Api::namespaced(self.client.clone(), &self.namespace)
    }

    fn operator_versions(&self) -> Api<OperatorVersion> {
        Api::namespaced(self.client.clone(), &self.namespace)
    }

    /// The instance `name`, or KUDO's "does not exist" error.
    async fn instance(&self, name: &str) -> anyhow::Result<Instance> {
        self.instances()
            .get_opt(name)
            .await
            .with_context(|| format!("failed to get instance {}/{name}", self.namespace))?
            .with_context(|| {
                format!(
                    "instance {name} in namespace {} does not exist in the cluster",
                    self.namespace
                )
            })
    }

    /// The operator version an instance runs.
    async fn operator_version_of(&self, instance: &Instance) -> anyhow::Result<OperatorVersion> {
        let name = instance
            .spec
            .operator_version
            .name
            .clone()
            .unwrap_or_default();
        self.operator_versions()
            .get_opt(&name)
            .await
            .with_context(|| format!("failed to get operatorversion {}/{name}", self.namespace))?
            .with_context(|| {
                format!(
                    "operatorversion {}/{name} does not exist in the cluster",
                    self.namespace
                )
            })
    }

    /// Waits until the instance's last plan run other than `previous_uid` ends: `Ok` when it
    /// is COMPLETE, an error naming the plan and its message on FATAL_ERROR or after
    /// `timeout`.
    async fn wait_for_plan(
        &self,
        name: &str,
        previous_uid: Option<&str>,
        timeout: Duration,
    ) -> anyhow::Result<()> {
        let mut status = Status::new();
        loop {
            let instance = self.instance(name).await?;
            let seen = match last_executed_plan(&instance) {
                Some(p) if Some(p.uid.as_str()) != previous_uid || previous_uid.is_none() => {
                    match p.status {
                        ExecutionStatus::Complete => {
                            status.finish(&format!("plan {} COMPLETE", p.name));
                            println!("instance {}/{name} ready", self.namespace);
                            return Ok(());
                        }
                        ExecutionStatus::FatalError => {
                            status.finish(&format!("plan {} FATAL_ERROR", p.name));
                            bail!(
                                "instance {}/{name}: plan {} failed with FATAL_ERROR: {}",
                                self.namespace,
                                p.name,
                                p.message
                            );
                        }
                        s => format!("plan {} is {s}", p.name),
                    }
                }
                _ => "waiting for a plan to start".to_string(),
            };
            if status.elapsed() > timeout {
                bail!(
                    "timeout waiting for instance {}/{name} ({seen}); see `kubectl kudo plan \
                     status --instance {name} -n {}`",
                    self.namespace,
                    self.namespace
                );
            }
            status.update(&format!("instance {name}: {seen}"));
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }
}

/// KUDO's `GetLastExecutedPlanStatus`: the running plan (named by `spec.planExecution`, or
/// any plan whose status is running), else the plan run most recently; `None` when no plan
/// ever ran.
pub(crate) fn last_executed_plan(instance: &Instance) -> Option<&PlanStatus> {
    let status = instance.status.as_ref()?;
    let plans = &status.plan_status;
    if plans
        .values()
        .all(|p| p.status == ExecutionStatus::NeverRun)
    {
        return None;
    }
    let active = &instance.spec.plan_execution.plan_name;
    if !active.is_empty()
        && let Some(p) = plans.get(active)
    {
        return Some(p);
    }
    if let Some(p) = plans.values().find(|p| p.status.is_running()) {
        return Some(p);
    }
    plans
        .values()
        .filter(|p| p.status != ExecutionStatus::NeverRun)
        .max_by_key(|p| p.last_updated_timestamp.as_ref().map(|t| t.0))
}

/// The `--wait-time` flag's parser: KUDO takes seconds; a Go duration works too.
pub(crate) fn parse_wait_time(s: &str) -> Result<Duration, String> {
    crate::parse_duration(s)
}
