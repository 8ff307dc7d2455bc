//! `opkit operator list|install|upgrade|rollback|approve|uninstall`: installed operators as
//! kubectl-operator has them, over OLM v1's `ClusterExtension`. The flags are here; what each
//! command does is [`crate::extensions`]'s, which the OperatorHub page (`opkit hub`) calls too.

use clap::{Args, Subcommand};
use kube::Client;

use crate::cluster::{self, ClusterArgs};
use crate::extensions::{self, InstallRequest, UpgradeRequest};

/// `opkit operator …`.
#[derive(Subcommand)]
pub(crate) enum OperatorCommand {
    /// List the installed operators (ClusterExtensions): package, installed version, revision
    /// and state.
    List(ListArgs),
    /// Install a package of the served catalogs: creates a ClusterExtension and waits until
    /// it is installed.
    Install(InstallArgs),
    /// Change the version range (or channel) of an installed operator and wait for the
    /// upgrade (or for it to wait for approval).
    Upgrade(UpgradeArgs),
    /// Install a kept revision's bundle again (default: the one before the installed one),
    /// after the CRD upgrade-safety and existing-objects checks.
    Rollback(RollbackArgs),
    /// Let the upgrade waiting for approval (`spec.install.approval: Manual`) proceed.
    Approve(NameArgs),
    /// Delete a ClusterExtension: its CRDs and their custom resources remain (listed) unless
    /// --purge.
    Uninstall(UninstallArgs),
}

/// `opkit operator list`.
#[derive(Args)]
pub(crate) struct ListArgs {
    #[command(flatten)]
    cluster: ClusterArgs,
}

/// `opkit operator install PACKAGE`.
#[derive(Args)]
pub(crate) struct InstallArgs {
    /// The package.
    package: String,
    /// The ClusterExtension's name (default: the package's).
    #[arg(long)]
    name: Option<String>,
    /// A version range (`1.2.3`, `>=1.0, <2`, `~1.2`); the newest when absent.
    #[arg(long, value_name = "RANGE")]
    version: Option<String>,
    /// A channel to take bundles from (repeatable); all when absent.
    #[arg(long = "channel", value_name = "CHANNEL")]
    channels: Vec<String>,
    /// The namespace of the operator's objects, created when missing (default: the
    /// package's name).
    #[arg(long, short = 'n')]
    namespace: Option<String>,
    /// The service account the installation is made for.
    #[arg(long, default_value = "default")]
    service_account: String,
    #[command(flatten)]
    cluster: ClusterArgs,
}

/// `opkit operator upgrade EXT`.
#[derive(Args)]
pub(crate) struct UpgradeArgs {
    /// The ClusterExtension.
    name: String,
    /// The new version range; without it, no range (the newest along the upgrade graph).
    #[arg(long, value_name = "RANGE")]
    version: Option<String>,
    /// The channels to take bundles from instead (repeatable).
    #[arg(long = "channel", value_name = "CHANNEL")]
    channels: Vec<String>,
    /// Which upgrades are allowed: `CatalogProvided` (the catalog's graph, one hop at a time;
    /// what to set after a rollback, which sets `SelfCertified`) or `SelfCertified` (any
    /// version in the range); unchanged when absent.
    #[arg(long, value_parser = ["CatalogProvided", "SelfCertified"])]
    upgrade_constraint_policy: Option<String>,
    #[command(flatten)]
    cluster: ClusterArgs,
}

/// `opkit operator rollback EXT`.
#[derive(Args)]
pub(crate) struct RollbackArgs {
    /// The ClusterExtension.
    name: String,
    /// The revision to go back to (default: the one before the installed one).
    #[arg(long, value_name = "N")]
    to_revision: Option<u32>,
    #[command(flatten)]
    cluster: ClusterArgs,
}

/// `opkit operator approve EXT`.
#[derive(Args)]
pub(crate) struct NameArgs {
    /// The ClusterExtension.
    name: String,
    #[command(flatten)]
    cluster: ClusterArgs,
}

/// `opkit operator uninstall EXT`.
#[derive(Args)]
pub(crate) struct UninstallArgs {
    /// The ClusterExtension.
    name: String,
    /// Delete its CRDs too, and with them every custom resource of their kinds.
    #[arg(long)]
    purge: bool,
    #[command(flatten)]
    cluster: ClusterArgs,
}

/// Runs `opkit operator …`: the action, then what came of it on standard output.
pub(crate) async fn run(command: OperatorCommand) -> anyhow::Result<()> {
    let said = match command {
        OperatorCommand::List(args) => list(args).await?,
        OperatorCommand::Install(args) => {
            let client = client(&args.cluster).await?;
            let req = InstallRequest {
                package: args.package,
                name: args.name,
                version: args.version,
                channels: args.channels,
                namespace: args.namespace,
                service_account: args.service_account,
            };
            let (created_namespace, said) =
                extensions::install(&client, req, args.cluster.timeout).await?;
            if let Some(note) = created_namespace {
                eprintln!("{note}");
            }
            said
        }
        OperatorCommand::Upgrade(args) => {
            let client = client(&args.cluster).await?;
            let req = UpgradeRequest {
                name: args.name,
                version: args.version,
                channels: args.channels,
                upgrade_constraint_policy: args.upgrade_constraint_policy,
            };
            extensions::upgrade(&client, req, args.cluster.timeout).await?
        }
        OperatorCommand::Rollback(args) => {
            let client = client(&args.cluster).await?;
            extensions::rollback(&client, &args.name, args.to_revision, args.cluster.timeout)
                .await?
        }
        OperatorCommand::Approve(args) => {
            let client = client(&args.cluster).await?;
            extensions::approve(&client, &args.name, args.cluster.timeout).await?
        }
        OperatorCommand::Uninstall(args) => {
            let client = client(&args.cluster).await?;
            extensions::uninstall(&client, &args.name, args.purge, args.cluster.timeout).await?
        }
    };
    println!("{said}");
    Ok(())
}

async fn client(args: &ClusterArgs) -> anyhow::Result<Client> {
    Ok(cluster::connect(args.kubeconfig.as_deref()).await?.client)
}

/// The installed operators as a table.
async fn list(args: ListArgs) -> anyhow::Result<String> {
    let installed = extensions::list(&client(&args.cluster).await?).await?;
    let mut rows = vec![["NAME", "PACKAGE", "VERSION", "REVISION", "STATE"].map(String::from)];
    for i in installed {
        rows.push([i.name, i.package, i.version, i.revision, i.state]);
    }
    let widths: Vec<usize> = (0..5)
        .map(|i| rows.iter().map(|r| r[i].len()).max().unwrap_or(0))
        .collect();
    let lines: Vec<String> = rows
        .iter()
        .map(|row| {
            let cells: Vec<String> = row
                .iter()
                .zip(&widths)
                .map(|(cell, w)| format!("{cell:w$}"))
                .collect();
            cells.join("   ").trim_end().to_string()
        })
        .collect();
    Ok(lines.join("\n"))
}
