//! `opkit ansible-operator run`: the generic Ansible operator, as operator-sdk's
//! `ansible-operator run` — what the manager Deployment of an ansible project runs
//! (`--watches-file`, and ansible-operator's flags with their defaults).

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Subcommand};
use opkit::app::{BindAddress, parse_bind_address};
use opkit::{LeaseSettings, ManagerSettings};
use opkit_ansible::OperatorOptions;

/// `opkit ansible-operator ...`.
#[derive(Subcommand)]
pub(crate) enum AnsibleOperatorCommand {
    /// Serve the custom resources of watches.yaml with their roles or playbooks until SIGTERM.
    Run(AnsibleOperatorRunArgs),
}

/// The flags of `opkit ansible-operator run` (ansible-operator's).
#[derive(Args)]
pub(crate) struct AnsibleOperatorRunArgs {
    /// The watches file: which kinds to serve with which role or playbook.
    #[arg(long, value_name = "FILE", default_value = "./watches.yaml")]
    watches_file: PathBuf,
    /// Reconcile only while holding the leader Lease.
    #[arg(long)]
    leader_elect: bool,
    /// The leader Lease's name.
    #[arg(long, value_name = "NAME", default_value = "opkit-ansible-operator")]
    leader_election_id: String,
    /// The leader Lease's namespace (default: the pod's own, else `default`).
    #[arg(long, value_name = "NS")]
    leader_election_namespace: Option<String>,
    /// Where `/metrics` is served (`:8080` means all interfaces; `0` turns it off).
    #[arg(long, value_name = "ADDR", default_value = ":8080", value_parser = parse_bind_address)]
    metrics_bind_address: BindAddress,
    /// Where `/healthz` and `/readyz` are served (`0` turns them off).
    #[arg(long, value_name = "ADDR", default_value = ":6789", value_parser = parse_bind_address)]
    health_probe_bind_address: BindAddress,
    /// Custom resources reconciled at once per kind (default: the number of CPUs).
    #[arg(long, value_name = "N")]
    max_concurrent_reconciles: Option<usize>,
    /// Give what runs create an owner reference (or owner annotations) to their custom
    /// resource and watch it; `--inject-owner-ref=false` leaves creates as the role wrote
    /// them and watches no dependent.
    #[arg(long, value_name = "BOOL", default_value_t = true, num_args = 0..=1,
          default_missing_value = "true", action = clap::ArgAction::Set)]
    inject_owner_ref: bool,
    /// How often every custom resource runs again, unless watches.yaml or its annotation
    /// says (a Go duration or seconds; `0` only on changes).
    #[arg(long, value_name = "DURATION", default_value = "10h", value_parser = crate::parse_duration)]
    reconcile_period: Duration,
    /// Ansible's verbosity (the number of `-v`).
    #[arg(long, value_name = "N", default_value_t = 2, value_parser = clap::value_parser!(u8).range(0..=7))]
    ansible_verbosity: u8,
    /// The Ansible virtual environment made by scripts/install-tools.sh (default:
    /// `$OPKIT_ANSIBLE_VENV`, else the nearest `.tools/ansible`).
    #[arg(long, value_name = "DIR")]
    ansible_venv: Option<PathBuf>,
    /// Where runs keep their data and artifacts (default: a directory under the system's
    /// temporary directory).
    #[arg(long, value_name = "DIR")]
    work_dir: Option<PathBuf>,
    /// Watch custom resources only in these namespaces (comma-separated; default: all).
    #[arg(
        long = "namespace",
        value_name = "NS",
        env = "WATCH_NAMESPACE",
        value_delimiter = ','
    )]
    namespaces: Vec<String>,
    /// The kubeconfig file of the operator (default: `$KUBECONFIG`, `~/.kube/config`, or the
    /// pod's service account); runs reach the API server through the operator's proxy.
    #[arg(long, value_name = "PATH")]
    kubeconfig: Option<PathBuf>,
}

impl AnsibleOperatorRunArgs {
    fn options(&self) -> OperatorOptions {
        let defaults = OperatorOptions::default();
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
            inject_owner_ref: self.inject_owner_ref,
            reconcile_period: (!self.reconcile_period.is_zero()).then_some(self.reconcile_period),
            ansible_verbosity: self.ansible_verbosity,
            venv: self.ansible_venv.clone().unwrap_or(defaults.venv),
            work_dir: self.work_dir.clone(),
        }
    }
}

/// Runs `opkit ansible-operator ...`.
pub(crate) async fn run(cmd: AnsibleOperatorCommand) -> anyhow::Result<()> {
    let AnsibleOperatorCommand::Run(args) = cmd;
    let client = match &args.kubeconfig {
        Some(path) => opkit::client_from_kubeconfig(path).await?,
        None => opkit::client().await?,
    };
    opkit_ansible::run(client, args.options()).await?;
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
        cmd: AnsibleOperatorCommand,
    }

    fn options(args: &[&str]) -> OperatorOptions {
        let cli = Cli::try_parse_from(args).unwrap_or_else(|e| panic!("{e}"));
        let AnsibleOperatorCommand::Run(run) = cli.cmd;
        run.options()
    }

    #[test]
    fn the_flags_default_like_ansible_operators() {
        let o = options(&["x", "run"]);
        assert_eq!(o.watches_file, PathBuf::from("./watches.yaml"));
        assert_eq!(
            o.manager.health_probe_bind_address,
            Some(SocketAddr::from(([0, 0, 0, 0], 6789)))
        );
        assert_eq!(o.reconcile_period, Some(Duration::from_secs(10 * 3600)));
        assert_eq!(o.ansible_verbosity, 2);
        assert_eq!(o.manager.leader_election, None);
        assert!(o.inject_owner_ref);
    }

    #[test]
    fn the_flags_set_the_options() {
        let o = options(&[
            "x",
            "run",
            "--watches-file",
            "/w.yaml",
            "--leader-elect",
            "--metrics-bind-address",
            "0",
            "--max-concurrent-reconciles",
            "3",
            "--reconcile-period",
            "0",
            "--ansible-verbosity",
            "0",
            "--ansible-venv",
            "/opt/venv",
            "--work-dir",
            "/var/run/ops",
            "--kubeconfig",
            "/kc",
            "--namespace",
            "a,b",
            "--inject-owner-ref=false",
        ]);
        assert_eq!(o.watches_file, PathBuf::from("/w.yaml"));
        assert_eq!(
            o.manager.leader_election.map(|l| l.id),
            Some("opkit-ansible-operator".to_string())
        );
        assert_eq!(o.manager.metrics_bind_address, None);
        assert_eq!(o.max_concurrent_reconciles, Some(3));
        assert_eq!(o.reconcile_period, None, "0 runs only on changes");
        assert_eq!(o.ansible_verbosity, 0);
        assert_eq!(o.venv, PathBuf::from("/opt/venv"));
        assert_eq!(o.work_dir, Some(PathBuf::from("/var/run/ops")));
        assert_eq!(o.manager.namespaces, ["a", "b"]);
        assert!(!o.inject_owner_ref);
        let err = Cli::try_parse_from(["x", "run", "--ansible-verbosity", "9"]);
        assert!(err.is_err(), "verbosity is 0..=7");
    }
}
