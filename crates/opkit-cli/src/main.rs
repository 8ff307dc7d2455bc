//! `opkit`: the command line of the opkit operator framework.
//!
//! `opkit up` runs the embedded Kubernetes-compatible control plane until SIGINT or SIGTERM;
//! `opkit kubeconfig` issues kubeconfigs for other users and service accounts.

mod kubeconfig;

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
    /// Run the embedded control plane (a Kubernetes-compatible API server).
    Up(UpArgs),
    /// Print a kubeconfig for a user (client certificate) or a service account (token).
    Kubeconfig(kubeconfig::KubeconfigArgs),
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
    controllers: opkit_controllers::ControllerSet,
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
}

/// Parses `250ms`, `2s`, `1m` (a bare number is seconds).
fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (number, unit) = match s.find(|c: char| !c.is_ascii_digit() && c != '.') {
        Some(i) => s.split_at(i),
        None => (s, "s"),
    };
    let value: f64 = number
        .parse()
        .map_err(|_| format!("{s:?} is not a duration; write e.g. 250ms, 2s or 1m"))?;
    let seconds = match unit {
        "ms" => value / 1000.0,
        "s" => value,
        "m" => value * 60.0,
        _ => return Err(format!("{s:?}: unknown unit {unit:?}; use ms, s or m")),
    };
    Duration::try_from_secs_f64(seconds).map_err(|e| format!("{s:?}: {e}"))
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("OPKIT_LOG")
                .unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
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
        match cli.command {
            Command::Up(args) => up(args).await,
            Command::Kubeconfig(args) => kubeconfig::run(args).await,
        }
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn up(args: UpArgs) -> anyhow::Result<()> {
    let mut kubeconfig = args.kubeconfig;
    if args.ephemeral && kubeconfig.is_none() {
        kubeconfig = Some(
            std::env::temp_dir()
                .join(format!("opkit-{}", std::process::id()))
                .join("kubeconfig"),
        );
    }
    let config = opkit_apiserver::Config {
        data_dir: (!args.ephemeral).then_some(args.data_dir),
        listen: args.listen,
        kubeconfig,
        history_window: Duration::from_secs(args.watch_history),
        controllers: opkit_controllers::Settings {
            enabled: args.controllers,
            pod_ready_delay: args.pod_ready_delay,
            ..opkit_controllers::Settings::default()
        },
        limits: opkit_apiserver::Limits {
            max_requests_inflight: args.max_requests_inflight,
            max_mutating_requests_inflight: args.max_mutating_requests_inflight,
            request_timeout: args.request_timeout,
            max_watches_per_user: args.max_watches_per_user,
            ..opkit_apiserver::Limits::default()
        },
        audit_log: args.audit_log,
    };
    let plane = opkit_apiserver::ControlPlane::start(config).await?;
    let path = plane
        .kubeconfig_path()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    println!(
        "opkit control plane ready at {} (kubeconfig: {path})",
        plane.url()
    );
    wait_for_signal().await?;
    eprintln!("stopping");
    plane.shutdown().await;
    Ok(())
}

async fn wait_for_signal() -> anyhow::Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
    Ok(())
}
