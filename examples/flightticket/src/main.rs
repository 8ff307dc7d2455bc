//! `flightticket`: runs the FlightTicket operator, or prints its CRD or ClusterRole.
//!
//! The operator itself lives in the library (`flightticket::manager`), so tests and demos run
//! it in-process; this binary only parses arguments.

use std::net::SocketAddr;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use opkit::{LeaderElection, Manager};

/// The FlightTicket operator.
#[derive(Debug, Parser)]
#[command(version, about, args_conflicts_with_subcommands = true)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    run: RunArgs,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the operator against the cluster the kubeconfig (or in-cluster config) names
    /// (the default).
    Run(RunArgs),
    /// Print the CustomResourceDefinition as YAML.
    PrintCrd,
    /// Print the ClusterRole the operator needs, as YAML.
    PrintRbac,
}

#[derive(Debug, Args)]
struct RunArgs {
    /// Where `/metrics` is served.
    #[arg(long, default_value = "0.0.0.0:8080")]
    metrics_bind_address: SocketAddr,
    /// Where `/healthz` and `/readyz` are served.
    #[arg(long, default_value = "0.0.0.0:8081")]
    health_probe_bind_address: SocketAddr,
    /// Run the controller only while holding the leader Lease.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    leader_elect: bool,
    /// The Lease's namespace (default: `$POD_NAMESPACE`, the service account's namespace
    /// in-cluster, else `default`).
    #[arg(long)]
    leader_election_namespace: Option<String>,
}

async fn run(args: RunArgs) -> Result<(), Box<dyn std::error::Error>> {
    let mut builder = Manager::builder()
        .metrics_addr(args.metrics_bind_address)
        .probe_addr(args.health_probe_bind_address);
    if args.leader_elect {
        let namespace = args
            .leader_election_namespace
            .unwrap_or_else(opkit::app::own_namespace);
        builder = builder.leader_election(LeaderElection::new(flightticket::LEASE_NAME, namespace));
    }
    let client = opkit::client().await?;
    flightticket::manager(builder).run(client).await?;
    Ok(())
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let result: Result<(), Box<dyn std::error::Error>> = match cli.command {
        Some(Command::PrintCrd) => flightticket::crd_yaml()
            .map(|y| print!("{y}"))
            .map_err(Into::into),
        Some(Command::PrintRbac) => flightticket::cluster_role_yaml()
            .map(|y| print!("{y}"))
            .map_err(Into::into),
        Some(Command::Run(args)) => {
            init_logging();
            run(args).await
        }
        None => {
            init_logging();
            run(cli.run).await
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("flightticket: {e}");
            ExitCode::FAILURE
        }
    }
}

fn init_logging() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
}
