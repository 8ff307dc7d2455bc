//! `opkit kudo manager`: the KUDO manager (`opkit_kudo::manager`) as a process — what the
//! Deployment `kubectl kudo init` installs runs, and how to run it against `opkit up`.

use clap::Args;
use opkit::app::{BindAddress, parse_bind_address};
use opkit_kudo::ManagerOptions;

use super::Global;

/// The flags of `opkit kudo manager`.
#[derive(Args)]
pub(crate) struct ManagerArgs {
    /// Reconcile only while holding the leader Lease.
    #[arg(long)]
    leader_elect: bool,
    /// The leader Lease's name.
    #[arg(long, value_name = "NAME", default_value = "opkit-kudo-manager")]
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
    /// Instances reconciled at once (default: the number of CPUs).
    #[arg(long, value_name = "N")]
    max_concurrent_reconciles: Option<usize>,
    /// Run instances only in these namespaces (comma-separated; default: all).
    #[arg(
        long = "watch-namespace",
        value_name = "NS",
        env = "WATCH_NAMESPACE",
        value_delimiter = ','
    )]
    namespaces: Vec<String>,
}

impl ManagerArgs {
    fn options(&self) -> ManagerOptions {
        ManagerOptions {
            leader_election: self.leader_elect,
            leader_election_id: self.leader_election_id.clone(),
            leader_election_namespace: self.leader_election_namespace.clone(),
            metrics_bind_address: self.metrics_bind_address.0,
            health_probe_bind_address: self.health_probe_bind_address.0,
            max_concurrent_reconciles: self.max_concurrent_reconciles,
            namespaces: self
                .namespaces
                .iter()
                .map(|ns| ns.trim().to_string())
                .filter(|ns| !ns.is_empty())
                .collect(),
        }
    }
}

/// Runs the manager until SIGINT or SIGTERM.
pub(crate) async fn run(args: ManagerArgs, g: &Global) -> anyhow::Result<()> {
    // In a pod: the service account; elsewhere: the kubeconfig.
    let client = match &g.kubeconfig {
        Some(path) => opkit::client_from_kubeconfig(path).await?,
        None => opkit::client().await?,
    };
    opkit_kudo::manager::run(client, args.options()).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: ManagerArgs,
    }

    #[test]
    fn manager_flags_default_like_the_other_managers_and_split_namespaces() {
        let cli = Cli::try_parse_from(["x", "--watch-namespace", "a, b,,c"]).unwrap();
        let o = cli.args.options();
        assert_eq!(o.namespaces, ["a", "b", "c"]);
        assert!(!o.leader_election);
        assert_eq!(o.leader_election_id, "opkit-kudo-manager");
        assert_eq!(o.metrics_bind_address.map(|a| a.port()), Some(8080));
        let off = Cli::try_parse_from(["x", "--metrics-bind-address", "0"]).unwrap();
        assert_eq!(off.args.options().metrics_bind_address, None);
    }
}
