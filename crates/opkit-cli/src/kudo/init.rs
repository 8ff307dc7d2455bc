//! `kubectl kudo init`: the KUDO CRDs (`opkit_kudo::api::crds()`) and, unless `--crd-only`,
//! the manager — namespace, service account, cluster-admin binding, a Deployment running
//! `opkit kudo manager` from the opkit image with its instance admission webhook on, and the
//! webhook's Service — server-side applied; `--dry-run -o yaml` prints them instead. The
//! manager writes the webhook configuration and its certificates itself once it runs.

use std::time::Duration;

use anyhow::Context;
use clap::Args;
use serde_yaml::Value;

use super::output::{self, Format};
use super::{Global, parse_wait_time};

/// The manager's manifests (besides the CRDs).
const MANAGER_YAML: &str = include_str!("../../templates/kudo/manager.yaml");

/// The Service the API server calls the manager's admission webhook through.
pub(crate) const WEBHOOK_SERVICE: &str = "kudo-manager-webhook";

/// The image of the manager: opkit's, at this CLI's version.
pub(crate) const DEFAULT_IMAGE: &str = concat!("opkit:", env!("CARGO_PKG_VERSION"));

/// The flags of `init`.
#[derive(Args)]
pub(crate) struct InitArgs {
    /// Install only the CRDs.
    #[arg(long)]
    crd_only: bool,
    /// Do not touch the cluster (with -o: print what would be installed).
    #[arg(long)]
    dry_run: bool,
    /// Print the manifests as yaml or json.
    #[arg(short = 'o', long, value_enum)]
    output: Option<Format>,
    /// The manager's image (an image with the opkit binary on its PATH).
    #[arg(short = 'i', long, default_value = DEFAULT_IMAGE)]
    kudo_image: String,
    /// The manager's service account.
    #[arg(long, default_value = "kudo-manager")]
    service_account: String,
    /// Wait until the manager is available.
    #[arg(short = 'w', long)]
    wait: bool,
    /// How long to wait for the CRDs and (with --wait) the manager.
    #[arg(long, default_value = "300", value_parser = parse_wait_time)]
    wait_timeout: Duration,
}

/// Everything `init` installs, in apply order. The manager goes to `namespace`.
fn manifests(args: &InitArgs, namespace: &str) -> anyhow::Result<Vec<Value>> {
    let mut objects = Vec::new();
    for crd in opkit_kudo::api::crds() {
        objects.push(serde_yaml::to_value(&crd)?);
    }
    if !args.crd_only {
        let text = crate::scaffold::render(
            MANAGER_YAML,
            &[
                ("namespace", namespace),
                ("image", args.kudo_image.as_str()),
                ("service_account", args.service_account.as_str()),
                ("webhook_service", WEBHOOK_SERVICE),
            ],
        );
        for doc in serde_yaml::Deserializer::from_str(&text) {
            let v: Value = serde::Deserialize::deserialize(doc)?;
            if !v.is_null() {
                objects.push(v);
            }
        }
    }
    Ok(objects)
}

pub(crate) async fn run(args: InitArgs, g: &Global) -> anyhow::Result<()> {
    let namespace = g
        .namespace
        .clone()
        .unwrap_or_else(|| "kudo-system".to_string());
    let objects = manifests(&args, &namespace)?;
    if let Some(format) = args.output {
        print!("{}", output::objects(&objects, format)?);
    }
    if args.dry_run {
        return Ok(());
    }
    let mut cluster = crate::cluster::connect(g.kubeconfig.as_deref()).await?;
    cluster.apply(&objects).await.context("installing KUDO")?;
    cluster.wait_for_crds(&objects, args.wait_timeout).await?;
    println!("✅ installed crds");
    if args.crd_only {
        return Ok(());
    }
    println!("✅ installed service accounts and other requirements for controller to run");
    println!("✅ installed kudo controller");
    if cluster.is_opkit() {
        eprintln!(
            "    note: pods on an opkit control plane are simulated: run the manager as a \
             process against it with `opkit kudo manager --webhook-service {WEBHOOK_SERVICE} \
             --webhook-namespace {namespace} --webhook-local`"
        );
    }
    if args.wait {
        cluster
            .wait_for_deployment(&namespace, "kudo-controller-manager", args.wait_timeout)
            .await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        init: InitArgs,
    }

    fn kinds(args: &[&str]) -> Vec<String> {
        let cli = Cli::try_parse_from(args).unwrap();
        manifests(&cli.init, "kudo-system")
            .unwrap()
            .iter()
            .map(|o| {
                format!(
                    "{} {}",
                    o["kind"].as_str().unwrap(),
                    o["metadata"]["name"].as_str().unwrap()
                )
            })
            .collect()
    }

    #[test]
    fn init_installs_the_crds_then_the_manager_unless_crd_only() {
        assert_eq!(
            kinds(&["x", "--crd-only"]),
            [
                "CustomResourceDefinition operators.kudo.dev",
                "CustomResourceDefinition operatorversions.kudo.dev",
                "CustomResourceDefinition instances.kudo.dev"
            ]
        );
        let all = kinds(&["x", "--kudo-image", "example/opkit:1"]);
        assert_eq!(
            all[3..],
            [
                "Namespace kudo-system",
                "ServiceAccount kudo-manager",
                "ClusterRoleBinding kudo-manager-rolebinding-kudo-system",
                "Deployment kudo-controller-manager",
                "Service kudo-manager-webhook"
            ]
        );
        let cli = Cli::try_parse_from(["x", "--kudo-image", "example/opkit:1"]).unwrap();
        let objects = manifests(&cli.init, "ops").unwrap();
        let container = &objects[6]["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(container["image"].as_str(), Some("example/opkit:1"));
        assert_eq!(objects[6]["metadata"]["namespace"].as_str(), Some("ops"));
        // The manager serves its webhook behind the Service, with its own certificates.
        let args: Vec<&str> = container["args"]
            .as_sequence()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        assert_eq!(
            args,
            [
                "--webhook-service=kudo-manager-webhook",
                "--webhook-namespace=ops",
                "--webhook-port=9443"
            ]
        );
        let service = &objects[7];
        assert_eq!(service["metadata"]["namespace"].as_str(), Some("ops"));
        assert_eq!(
            service["spec"]["ports"][0]["targetPort"].as_str(),
            Some("webhook-server")
        );
    }
}
