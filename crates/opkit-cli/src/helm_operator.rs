//! `opkit helm-operator run`: the generic chart operator, as operator-sdk's `helm-operator
//! run` — what the manager Deployment of a helm project runs (`--watches-file`, and
//! helm-operator's flags with their defaults).

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Subcommand};
use opkit::app::{BindAddress, parse_bind_address};
use opkit::{LeaseSettings, ManagerSettings};
use opkit_chart_operator::OperatorOptions;

/// `opkit helm-operator ...`.
#[derive(Subcommand)]
pub(crate) enum HelmOperatorCommand {
    /// Serve the custom resources of watches.yaml with their charts until SIGTERM.
    Run(HelmOperatorRunArgs),
}

/// The flags of `opkit helm-operator run` (helm-operator's).
#[derive(Args)]
pub(crate) struct HelmOperatorRunArgs {
    /// The watches file: which kinds to serve with which chart.
    #[arg(long, value_name = "FILE", default_value = "./watches.yaml")]
    watches_file: PathBuf,
    /// Reconcile only while holding the leader Lease.
    #[arg(long)]
    leader_elect: bool,
    /// The leader Lease's name.
    #[arg(long, value_name = "NAME", default_value = "opkit-helm-operator")]
    leader_election_id: String,
    /// The leader Lease's namespace (default: the pod's own, else `default`).
    #[arg(long, value_name = "NS")]
    leader_election_namespace: Option<String>,
    /// Where `/metrics` is served (`:8080` means all interfaces; `0` turns it off).
    #[arg(long, value_name = "ADDR", default_value = ":8080", value_parser = parse_bind_address)]
    metrics_bind_address: BindAddress,
    /// Where `/healthz` and `/readyz` are served (`0` turns them off).
    #[arg(long, value_name = "ADDR", default_value = ":8081", value_parser = parse_bind_address)]
    health_probe_bind_address: BindAddress,
    /// Custom resources reconciled at once per kind (default: the number of CPUs), unless
    /// watches.yaml says.
    #[arg(long, value_name = "N")]
    max_concurrent_reconciles: Option<usize>,
    /// How often every custom resource is reconciled, unless watches.yaml or its
    /// annotation says (a Go duration or seconds; `0` only on changes).
    #[arg(long, value_name = "DURATION", default_value = "1m", value_parser = crate::parse_duration)]
    reconcile_period: Duration,
    /// Watch custom resources only in these namespaces (comma-separated; default: all).
    #[arg(
        long = "namespace",
        value_name = "NS",
        env = "WATCH_NAMESPACE",
        value_delimiter = ','
    )]
    namespaces: Vec<String>,
    /// The kubeconfig file (default: `$KUBECONFIG`, `~/.kube/config`, or the pod's service
    /// account).
    #[arg(long, value_name = "PATH")]
    kubeconfig: Option<PathBuf>,
}

impl HelmOperatorRunArgs {
    fn options(&self) -> OperatorOptions {
        OperatorOptions {
            watches_file: self.watches_file.clone(),
            manager: ManagerSettings {
                metrics_bind_address: self.metrics_bind_address.0,
                health_probe_bind_address: self.health_probe_bind_address.0,
                leader_election: self.leader_elect.then(|| LeaseSettings {
                    id: self.leader_election_id.clone(),
                    namespace: self.leader_election_namespace.clone(),
                }),
                namespaces: self.namespaces.clone(),
                label_selector: None,
            },
            max_concurrent_reconciles: self.max_concurrent_reconciles,
            reconcile_period: (!self.reconcile_period.is_zero()).then_some(self.reconcile_period),
            ..OperatorOptions::default()
        }
    }
}

/// Runs `opkit helm-operator ...`.
pub(crate) async fn run(cmd: HelmOperatorCommand) -> anyhow::Result<()> {
    let HelmOperatorCommand::Run(args) = cmd;
    let client = match &args.kubeconfig {
        Some(path) => opkit::client_from_kubeconfig(path).await?,
        None => opkit::client().await?,
    };
    opkit_chart_operator::run(client, args.options()).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;

    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Cli {
        #[command(subcommand)]
        cmd: HelmOperatorCommand,
    }

    fn options(args: &[&str]) -> OperatorOptions {
        let cli = Cli::try_parse_from(args).unwrap_or_else(|e| panic!("{e}"));
        let HelmOperatorCommand::Run(run) = cli.cmd;
        run.options()
    }

    #[test]
    fn the_flags_default_like_helm_operators() {
        let o = options(&["x", "run"]);
        assert_eq!(o.watches_file, PathBuf::from("./watches.yaml"));
        assert_eq!(
            o.manager.metrics_bind_address,
            Some(SocketAddr::from(([0, 0, 0, 0], 8080)))
        );
        assert_eq!(
            o.manager.health_probe_bind_address,
            Some(SocketAddr::from(([0, 0, 0, 0], 8081)))
        );
        assert_eq!(o.reconcile_period, Some(Duration::from_secs(60)));
        assert_eq!(o.manager.leader_election, None);
    }

    #[test]
    fn the_flags_set_the_options() {
        let o = options(&[
            "x",
            "run",
            "--watches-file",
            "/w.yaml",
            "--leader-elect",
            "--leader-election-id",
            "lock",
            "--leader-election-namespace",
            "ops",
            "--metrics-bind-address",
            "0",
            "--health-probe-bind-address",
            "127.0.0.1:9000",
            "--max-concurrent-reconciles",
            "4",
            "--reconcile-period",
            "0",
            "--namespace",
            "a,b",
        ]);
        assert_eq!(o.watches_file, PathBuf::from("/w.yaml"));
        assert_eq!(
            o.manager.leader_election,
            Some(LeaseSettings {
                id: "lock".into(),
                namespace: Some("ops".into())
            })
        );
        assert_eq!(o.manager.metrics_bind_address, None);
        assert_eq!(
            o.manager.health_probe_bind_address,
            Some(SocketAddr::from(([127, 0, 0, 1], 9000)))
        );
        assert_eq!(o.max_concurrent_reconciles, Some(4));
        assert_eq!(o.reconcile_period, None, "0 reconciles only on changes");
        assert_eq!(o.manager.namespaces, ["a", "b"]);
    }
}
