//! `opkit kudo manager`: the KUDO manager (`opkit_kudo::manager`) as a process — what the
//! Deployment `kubectl kudo init` installs runs, and how to run it against `opkit up`.
//!
//! With `--webhook-service` it also serves KUDO's instance admission webhook
//! (`opkit_kudo::admission`) on `--webhook-port`, with self-managed certificates unless
//! `--webhook-cert-dir` is given. Run outside the cluster (against `opkit up`),
//! `--webhook-local` points the Service at this process (`127.0.0.1:PORT`), the way
//! `opkit run --up` routes an operator's webhooks (`opkit_testenv::webhooks`).

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::Args;
use opkit::app::{BindAddress, parse_bind_address};
use opkit::{LeaseSettings, ManagerSettings};
use opkit_kudo::{ManagerOptions, WebhookOptions};
use opkit_testenv::webhooks::LocalWebhooks;

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
    /// Serve KUDO's instance admission webhook behind this Service (the manager writes the
    /// ValidatingWebhookConfiguration `kudo-manager-instance-validation`).
    #[arg(long, value_name = "NAME")]
    webhook_service: Option<String>,
    /// The webhook Service's namespace, where the certificates' Secret is kept (default: the
    /// pod's own, else `default`).
    #[arg(long, value_name = "NS", requires = "webhook_service")]
    webhook_namespace: Option<String>,
    /// Where the webhook is served.
    #[arg(long, value_name = "PORT", default_value_t = opkit::webhook::DEFAULT_PORT)]
    webhook_port: u16,
    /// Read `tls.crt`, `tls.key` (and `ca.crt`, the caBundle) from DIR instead of managing
    /// the certificates.
    #[arg(long, value_name = "DIR", requires = "webhook_service")]
    webhook_cert_dir: Option<PathBuf>,
    /// Point the webhook Service at this process (127.0.0.1:PORT): for a manager run outside
    /// the cluster, against `opkit up`.
    #[arg(long, requires = "webhook_service")]
    webhook_local: bool,
}

impl ManagerArgs {
    fn options(&self) -> ManagerOptions {
        ManagerOptions {
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
            webhook: self.webhook_service.as_ref().map(|service| WebhookOptions {
                addr: SocketAddr::from((Ipv4Addr::UNSPECIFIED, self.webhook_port)),
                service: service.clone(),
                namespace: self
                    .webhook_namespace
                    .clone()
                    .unwrap_or_else(opkit::app::own_namespace),
                cert_dir: self.webhook_cert_dir.clone(),
            }),
        }
    }
}

/// `--webhook-local`: the configuration's namespace created and its Service routed to
/// `127.0.0.1:PORT`.
async fn route_locally(client: &kube::Client, webhook: &WebhookOptions) -> anyhow::Result<()> {
    let port = webhook.addr.port();
    if port == 0 {
        bail!("--webhook-local needs a fixed --webhook-port");
    }
    let yaml = serde_yaml::to_string(&opkit_kudo::admission::configuration(webhook))?;
    let local = LocalWebhooks::from_yaml(&yaml)?;
    local
        .install(client)
        .await
        .context("installing the webhook configuration")?;
    local
        .route_to(client, port)
        .await
        .with_context(|| format!("routing the webhook Service to 127.0.0.1:{port}"))?;
    Ok(())
}

/// Runs the manager until SIGINT or SIGTERM.
pub(crate) async fn run(args: ManagerArgs, g: &Global) -> anyhow::Result<()> {
    // In a pod: the service account; elsewhere: the kubeconfig.
    let client = match &g.kubeconfig {
        Some(path) => opkit::client_from_kubeconfig(path).await?,
        None => opkit::client().await?,
    };
    let options = args.options();
    if let Some(webhook) = options.webhook.as_ref().filter(|_| args.webhook_local) {
        route_locally(&client, webhook).await?;
    }
    opkit_kudo::manager::run(client, options).await?;
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
        let cli = Cli::try_parse_from(["x", "--watch-namespace", "a,b"]).unwrap();
        let o = cli.args.options();
        assert_eq!(o.manager.namespaces, ["a", "b"]);
        assert_eq!(o.manager.leader_election, None);
        assert_eq!(o.manager.metrics_bind_address.map(|a| a.port()), Some(8080));
        let off = Cli::try_parse_from(["x", "--metrics-bind-address", "0"]).unwrap();
        assert_eq!(off.args.options().manager.metrics_bind_address, None);
        let elect = Cli::try_parse_from(["x", "--leader-elect"]).unwrap();
        assert_eq!(
            elect.args.options().manager.leader_election,
            Some(LeaseSettings {
                id: "opkit-kudo-manager".into(),
                namespace: None
            })
        );
        assert_eq!(o.webhook, None);
    }

    #[test]
    fn webhook_flags_give_the_service_port_and_certificates() {
        let cli = Cli::try_parse_from([
            "x",
            "--webhook-service",
            "kudo-manager-webhook",
            "--webhook-namespace",
            "kudo-system",
            "--webhook-port",
            "10443",
        ])
        .unwrap();
        let w = cli.args.options().webhook.unwrap();
        assert_eq!(
            (w.service.as_str(), w.namespace.as_str(), w.addr.port()),
            ("kudo-manager-webhook", "kudo-system", 10443)
        );
        assert_eq!(w.cert_dir, None);
        assert_eq!(w.secret_name(), "kudo-manager-webhook-cert");
        // The other webhook flags mean nothing without a Service.
        assert!(Cli::try_parse_from(["x", "--webhook-local"]).is_err());
    }
}
