//! `opkit`: the command line of the opkit operator framework.
//!
//! `opkit demo` shows two operators at work; `opkit up` runs the embedded Kubernetes-compatible
//! control plane until SIGINT or SIGTERM; `opkit kubeconfig` issues kubeconfigs for other users
//! and service accounts; `init`, `create api`, `generate manifests`, `run`, `install`, `deploy`
//! (and `create webhook`) and their undoing are the operator project workflow of kubebuilder and operator-sdk;
//! with `--plugins helm` its kinds are Helm charts run by `helm-operator run`, the generic chart
//! operator, and with `--plugins ansible` Ansible roles or playbooks run by `ansible-operator
//! run`; `chart template` is `helm template`; `kudo ...` (also built as the `kubectl-kudo`
//! plugin) installs and runs KUDO packages; `test` runs kuttl end-to-end suites on an embedded
//! control plane; `bundle validate` and `catalog render|validate|template` are
//! operator-sdk's and opm's OLM bundle and catalog tools, offline; `report run` evaluates
//! Operator Metering's built-in report queries over data-source files, offline.
//!
//! The library holds the commands; the `opkit` and `kubectl-kudo` executables call [`main`].

mod ansible_manifests;
mod ansible_operator;
mod ansible_scaffold;
mod build;
mod chart;
mod cluster;
mod create_webhook;
mod demo;
mod extensions;
mod helm_chart;
mod helm_manifests;
mod helm_operator;
mod helm_scaffold;
mod hub;
mod kubeconfig;
mod kudo;
mod kustomize;
mod manifests;
mod olm;
mod operator;
mod progress;
mod project;
mod report;
mod run;
mod scaffold;
mod test;
mod test_chaos;
mod test_project;
mod webhook_manifests;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "opkit",
    version,
    about = "Build, test and run Kubernetes operators in Rust"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Watch two operators at work on an embedded control plane (start here).
    Demo(demo::DemoArgs),
    /// Run the embedded control plane (a Kubernetes-compatible API server).
    Up(UpArgs),
    /// Print a kubeconfig for a user (client certificate) or a service account (token).
    Kubeconfig(kubeconfig::KubeconfigArgs),
    /// Create an operator project in the current directory (`--plugins helm`: kinds backed
    /// by Helm charts, run by opkit's chart operator; `--plugins ansible`: by Ansible roles or
    /// playbooks, run by opkit's Ansible operator).
    Init(scaffold::InitArgs),
    /// Add to the project: `create api` adds a kind with its controller, test and sample (in a
    /// helm project: with its chart; in an ansible project: its role or playbook).
    #[command(subcommand)]
    Create(CreateCommand),
    /// Regenerate from the code: `generate manifests` writes the CRDs and RBAC under config/.
    #[command(subcommand)]
    Generate(GenerateCommand),
    /// Generate manifests, build, install the CRDs and run the operator (`--up`: on an
    /// embedded control plane).
    Run(run::RunArgs),
    /// Install the project's CRDs on the cluster (server-side apply).
    Install(cluster::ClusterArgs),
    /// Delete the project's CRDs, and with them every object of their kinds.
    Uninstall(cluster::ClusterArgs),
    /// Apply config/default (CRDs, RBAC, manager) and wait until the manager is available.
    Deploy(cluster::DeployArgs),
    /// Delete everything in config/default from the cluster.
    Undeploy(cluster::ClusterArgs),
    /// Helm charts: `chart template` renders a chart as `helm template` does.
    #[command(subcommand)]
    Chart(chart::ChartCommand),
    /// The generic chart operator: `helm-operator run --watches-file watches.yaml` serves
    /// each custom resource with its chart (what a helm project's manager runs).
    #[command(subcommand)]
    HelmOperator(helm_operator::HelmOperatorCommand),
    /// The generic Ansible operator: `ansible-operator run --watches-file watches.yaml` runs
    /// each custom resource's role or playbook (what an ansible project's manager runs).
    #[command(subcommand)]
    AnsibleOperator(ansible_operator::AnsibleOperatorCommand),
    /// Declarative operators: KUDO's `kubectl kudo` commands (install KUDO packages, update
    /// and upgrade instances, plans, packages); also built as the `kubectl-kudo` plugin.
    Kudo(kudo::KudoArgs),
    /// Run kuttl end-to-end suites (`kubectl kuttl test`) on an embedded control plane, or on
    /// a cluster with `--kubeconfig`; in an operator project, its tests/e2e against the
    /// operator, built and started by opkit test.
    Test(Box<test::TestArgs>),
    /// OLM bundles: `bundle validate` checks a registry+v1 bundle directory as
    /// `operator-sdk bundle validate` does.
    #[command(subcommand)]
    Bundle(olm::BundleCommand),
    /// OLM file-based catalogs: `catalog render`, `validate` and `template basic|semver`, as
    /// `opm` has them (offline: bundle references are directories).
    #[command(subcommand)]
    Catalog(olm::CatalogCommand),
    /// Installed operators (OLM v1 ClusterExtensions), kubectl-operator's way: `operator
    /// list|install|upgrade|rollback|approve|uninstall`.
    #[command(subcommand)]
    Operator(operator::OperatorCommand),
    /// The OperatorHub page: the packages of the served catalogs and the installed operators,
    /// with install, upgrade, approve, rollback and uninstall buttons (what `opkit operator`
    /// does), served on --listen for the cluster of --kubeconfig.
    Hub(hub::HubArgs),
    /// Metering reports: `report run` evaluates a built-in ReportQuery (Operator Metering's)
    /// over data-source files, offline; `report get` and `report list` read the Reports of a
    /// cluster running metering (`opkit up --metering`).
    #[command(subcommand)]
    Report(report::ReportCommand),
}

/// The same `kudo` command tree as the `kubectl-kudo` plugin binary (this file is also
/// that binary's main: see Cargo.toml).
#[derive(Parser)]
#[command(
    name = "kubectl-kudo",
    version,
    about = "KUDO: declarative Kubernetes operators (opkit's kubectl plugin)"
)]
struct KubectlKudo {
    #[command(flatten)]
    kudo: kudo::KudoArgs,
}

#[derive(Subcommand)]
enum CreateCommand {
    /// A new kind: its Rust type, controller, test and sample, registered in src/lib.rs; or a
    /// new version of a kind (the first version stays the hub and storage version).
    Api(scaffold::CreateApiArgs),
    /// Admission webhooks for a version of a kind: defaulting, validation (kubebuilder's
    /// flags), with sample rules, a test and their configurations under config/webhook.
    Webhook(create_webhook::CreateWebhookArgs),
}

#[derive(Subcommand)]
enum GenerateCommand {
    /// The CRDs (config/crd/bases) and ClusterRole (config/rbac/role.yaml) from the code (in
    /// a helm project: from PROJECT and the charts); the rest of config/ where missing.
    Manifests,
}

#[derive(Args)]
struct UpArgs {
    /// Directory for the store, certificates, token and kubeconfig.
    #[arg(
        long,
        value_name = "DIR",
        default_value = ".opkit",
        conflicts_with = "ephemeral"
    )]
    data_dir: PathBuf,
    /// Keep everything in memory; nothing survives a restart.
    #[arg(long)]
    ephemeral: bool,
    /// Address to listen on (port 0 picks a free port).
    #[arg(long, value_name = "ADDR:PORT", default_value = "127.0.0.1:6443")]
    listen: SocketAddr,
    /// Where to write the kubeconfig (default: DIR/kubeconfig).
    #[arg(long, value_name = "PATH")]
    kubeconfig: Option<PathBuf>,
    /// How long watch history is kept, in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 300)]
    watch_history: u64,
    /// Built-in controllers to run: `*` for all, `-name` to disable one, `` for none (a bare
    /// API server). Names: garbage-collector, namespace, node, deployment, replicaset,
    /// statefulset, daemonset, job, cronjob, endpoints, clusterrole-aggregation; `workloads`
    /// names node through endpoints.
    #[arg(long, value_name = "LIST", default_value = "*")]
    controllers: opkit_controlplane::controllers::ControllerSet,
    /// How long a simulated pod takes to become Running and Ready (e.g. `200ms`, `2s`).
    #[arg(long, value_name = "DURATION", default_value = "200ms", value_parser = parse_duration)]
    pod_ready_delay: Duration,
    /// Append an audit log (audit.k8s.io/v1 events at the Metadata level, JSON lines) here.
    #[arg(long, value_name = "PATH")]
    audit_log: Option<PathBuf>,
    /// Read-only requests served at once; more get 429 with Retry-After.
    #[arg(long, value_name = "N", default_value_t = 400)]
    max_requests_inflight: usize,
    /// Mutating requests served at once; more get 429 with Retry-After.
    #[arg(long, value_name = "N", default_value_t = 200)]
    max_mutating_requests_inflight: usize,
    /// How long an ordinary request may take before it gets 504 (watches are exempt).
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = parse_duration)]
    request_timeout: Duration,
    /// Watches one user may hold open at once.
    #[arg(long, value_name = "N", default_value_t = 1000)]
    max_watches_per_user: usize,
    /// Run OLM v1's ClusterCatalog and ClusterExtension controllers in this process: installs
    /// both CRDs, pulls each catalog's image and serves its content (catalogd's HTTP API) on
    /// --olm-catalogs-listen, installs each ClusterExtension's bundle from those catalogs, and
    /// serves the OperatorHub page on --olm-hub-listen.
    #[arg(long)]
    olm: bool,
    /// Where --olm serves catalogs (`status.urls.base` of each ClusterCatalog is below it;
    /// port 0 picks a free port).
    #[arg(
        long,
        value_name = "ADDR:PORT",
        default_value = "127.0.0.1:0",
        requires = "olm"
    )]
    olm_catalogs_listen: SocketAddr,
    /// Where --olm serves the OperatorHub page (below `/hub/`; port 0 picks a free port).
    #[arg(
        long,
        value_name = "ADDR:PORT",
        default_value = "127.0.0.1:0",
        requires = "olm"
    )]
    olm_hub_listen: SocketAddr,
    /// Run metering in this process: installs the metering.opkit.dev/v1 CRDs (ReportDataSource,
    /// ReportQuery, Report), records the objects' history from now on (kept in
    /// DATA_DIR/metering across restarts), runs Reports and serves their results (Metering's
    /// `/api/v1/reports/get`) and the metering controllers' `/metrics` on --metering-listen.
    #[arg(long)]
    metering: bool,
    /// Where --metering serves the report API and `/metrics` (port 0 picks a free port).
    #[arg(
        long,
        value_name = "ADDR:PORT",
        default_value = "127.0.0.1:0",
        requires = "metering"
    )]
    metering_listen: SocketAddr,
    /// For tests: metering reads the time from this file (an RFC 3339 instant, rewritten to
    /// move time) instead of the system clock.
    #[arg(long, value_name = "PATH", requires = "metering")]
    metering_clock: Option<PathBuf>,
    /// Also serve the report API (`/api/v1/reports/get`) on the API server's own address,
    /// behind its authentication and authorisation (a non-resource URL for RBAC); the
    /// --metering-listen listener keeps serving it and `/metrics`.
    #[arg(long, requires = "metering")]
    metering_on_apiserver: bool,
}

/// The value parser of duration flags: a Go duration (`250ms`, `2s`, `1m30s`, `1h`) or a bare
/// number of seconds; not negative.
pub(crate) fn parse_duration(s: &str) -> Result<Duration, String> {
    opkit_apimachinery::duration::parse_flag(s)
}

/// Which executable runs: `opkit`, or `kubectl-kudo` (the `kudo` command tree alone, as a
/// kubectl plugin).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Program {
    /// `opkit ...`.
    Opkit,
    /// `kubectl-kudo ...` (`kubectl kudo ...`): the same commands as `opkit kudo ...`.
    KubectlKudo,
}

/// Parses the command line as `program` and runs it; the process's exit code.
pub fn main(program: Program) -> ExitCode {
    let command = match program {
        Program::KubectlKudo => Command::Kudo(KubectlKudo::parse().kudo),
        Program::Opkit if let Some(cmd) = chart::parse_alone() => Command::Chart(cmd),
        Program::Opkit => match Cli::try_parse() {
            Ok(cli) => cli.command,
            // kuttl exits 255 on flag errors; other commands keep clap's exit code.
            Err(e) if e.use_stderr() && std::env::args().nth(1).as_deref() == Some("test") => {
                let _ = e.print();
                return ExitCode::from(255);
            }
            Err(e) => e.exit(),
        },
    };
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("OPKIT_LOG")
                .unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let cwd = match std::env::current_dir() {
        Ok(cwd) => cwd,
        Err(e) => {
            eprintln!("error: cannot read the current directory: {e}");
            return ExitCode::FAILURE;
        }
    };
    // Chart rendering is synchronous: no async runtime (and its threads) to start.
    let command = match command {
        Command::Chart(cmd) => return chart::run(cmd, &cwd),
        Command::Bundle(cmd) => return olm::run_bundle(cmd, &cwd),
        Command::Catalog(cmd) => return olm::run_catalog(cmd, &cwd),
        Command::Report(report::ReportCommand::Run(args)) => {
            return report::run_offline(args, &cwd);
        }
        other => other,
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        let done = |r: anyhow::Result<()>| r.map(|()| ExitCode::SUCCESS);
        match command {
            Command::Demo(args) => done(demo::run(args)),
            Command::Up(args) => done(up(args).await),
            Command::Kubeconfig(args) => done(kubeconfig::run(args).await),
            Command::Init(args) => done(scaffold::init(args, &cwd)),
            Command::Create(CreateCommand::Api(args)) => done(scaffold::create_api(args, &cwd)),
            Command::Create(CreateCommand::Webhook(args)) => {
                done(create_webhook::create_webhook(args, &cwd))
            }
            Command::Generate(GenerateCommand::Manifests) => done(manifests::generate(&cwd)),
            Command::Run(args) => run::run(args, &cwd).await,
            Command::Install(args) => done(cluster::install(args, &cwd).await),
            Command::Uninstall(args) => done(cluster::uninstall(args, &cwd).await),
            Command::Deploy(args) => done(cluster::deploy(args, &cwd).await),
            Command::Undeploy(args) => done(cluster::undeploy(args, &cwd).await),
            Command::Chart(cmd) => Ok(chart::run(cmd, &cwd)),
            Command::HelmOperator(cmd) => done(helm_operator::run(cmd).await),
            Command::AnsibleOperator(cmd) => done(ansible_operator::run(cmd).await),
            Command::Kudo(args) => done(kudo::run(args).await),
            Command::Test(args) => test::run(*args, &cwd).await,
            Command::Bundle(cmd) => Ok(olm::run_bundle(cmd, &cwd)),
            Command::Catalog(cmd) => Ok(olm::run_catalog(cmd, &cwd)),
            Command::Operator(cmd) => done(operator::run(cmd).await),
            Command::Hub(args) => done(hub::run(args).await),
            Command::Report(cmd) => Ok(report::run_report(cmd, &cwd).await),
        }
    });
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// How long a button of `opkit up`'s OperatorHub page waits for the lifecycle controller
/// (`opkit operator`'s default --timeout).
const HUB_TIMEOUT: Duration = Duration::from_secs(120);

async fn up(args: UpArgs) -> anyhow::Result<()> {
    let mut kubeconfig = args.kubeconfig;
    if args.ephemeral && kubeconfig.is_none() {
        kubeconfig = Some(
            std::env::temp_dir()
                .join(format!("opkit-{}", std::process::id()))
                .join("kubeconfig"),
        );
    }
    // Metering keeps its history next to the store's data (in memory with --ephemeral).
    let metering_state_dir = (!args.ephemeral).then(|| args.data_dir.join("metering"));
    let config = opkit_controlplane::Config {
        data_dir: (!args.ephemeral).then_some(args.data_dir),
        listen: args.listen,
        kubeconfig,
        history_window: Duration::from_secs(args.watch_history),
        controllers: opkit_controlplane::controllers::Settings {
            enabled: args.controllers,
            pod_ready_delay: args.pod_ready_delay,
            ..opkit_controlplane::controllers::Settings::default()
        },
        limits: opkit_controlplane::Limits {
            max_requests_inflight: args.max_requests_inflight,
            max_mutating_requests_inflight: args.max_mutating_requests_inflight,
            request_timeout: args.request_timeout,
            max_watches_per_user: args.max_watches_per_user,
            ..opkit_controlplane::Limits::default()
        },
        audit_log: args.audit_log,
        admission: Vec::new(),
    };
    // Before the ready line (see `opkit::signals`).
    let mut signals = opkit::signals::Signals::install()?;
    let plane = opkit_controlplane::ControlPlane::start(config).await?;
    let catalogd = if args.olm {
        let client =
            opkit_controlplane::in_process_client(plane.server(), plane.token(), "opkit-catalogd");
        let options = opkit_lifecycle::CatalogdOptions {
            listen: args.olm_catalogs_listen,
            advertise: None,
        };
        let catalogd = opkit_lifecycle::catalogd::start(client.clone(), options).await?;
        println!("serving ClusterCatalogs at {}", catalogd.url());
        let extensions = opkit_lifecycle::clusterext::start(client, catalogd.catalogs()).await?;
        let client =
            opkit_controlplane::in_process_client(plane.server(), plane.token(), "opkit-hub");
        let hub = hub::start(client, args.olm_hub_listen, HUB_TIMEOUT).await?;
        println!("serving the OperatorHub page at {}", hub.url());
        Some((catalogd, extensions, hub))
    } else {
        None
    };
    let metering = if args.metering {
        let client =
            opkit_controlplane::in_process_client(plane.server(), plane.token(), "opkit-metering");
        let options = opkit_metering_controller::Options {
            listen: args.metering_listen,
            clock: args
                .metering_clock
                .map_or(opkit_metering_controller::Clock::System, |path| {
                    opkit_metering_controller::Clock::File(path)
                }),
            state_dir: metering_state_dir.clone(),
        };
        let metering = opkit_metering_controller::start(client.clone(), options).await?;
        println!(
            "serving metering reports at {}{}",
            metering.url(),
            opkit_metering_controller::http::GET_PATH
        );
        if args.metering_on_apiserver {
            let answer = move |request: axum::http::Request<axum::body::Bytes>| {
                // The API server authenticated the caller; metering checks it may get the Report.
                let caller = request
                    .extensions()
                    .get::<opkit_apiserver::mounts::Caller>()
                    .map(|user| opkit_metering_controller::http::Caller {
                        user: user.name.clone(),
                        uid: user.uid.clone(),
                        groups: user.groups.clone(),
                        extra: user.extra.clone(),
                    });
                let answer: opkit_apiserver::mounts::Answer = Box::pin(
                    opkit_metering_controller::http::answer(client.clone(), caller, request),
                );
                answer
            };
            plane.server().mount(
                opkit_metering_controller::http::GET_PATH,
                std::sync::Arc::new(answer),
            )?;
            println!(
                "serving metering reports at {}{}",
                plane.url(),
                opkit_metering_controller::http::GET_PATH
            );
        }
        Some(metering)
    } else {
        None
    };
    let path = plane
        .kubeconfig_path()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    println!(
        "opkit control plane ready at {} (kubeconfig: {path})",
        plane.url()
    );
    signals.recv().await;
    eprintln!("stopping");
    if let Some((catalogd, extensions, hub)) = catalogd {
        if let Err(e) = hub.shutdown().await {
            eprintln!("error: {e:#}");
        }
        if let Err(e) = extensions.shutdown().await {
            eprintln!("error: {e}");
        }
        if let Err(e) = catalogd.shutdown().await {
            eprintln!("error: {e}");
        }
    }
    if let Some(metering) = metering
        && let Err(e) = metering.shutdown().await
    {
        eprintln!("error: {e}");
    }
    plane.shutdown().await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duration_flags_take_go_durations_and_bare_seconds() {
        assert_eq!(parse_duration("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_duration("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("2"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("0.5"), Ok(Duration::from_millis(500)));
        assert_eq!(
            parse_duration("5x"),
            Err(r#"time: unknown unit "x" in duration "5x""#.to_string())
        );
        assert!(parse_duration("-1s").unwrap_err().contains("negative"));
        assert!(parse_duration("").is_err());
    }
}
