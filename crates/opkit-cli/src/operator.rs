//! `opkit operator list|install|upgrade|rollback|approve|uninstall`: installed operators as
//! kubectl-operator has them, over OLM v1's `ClusterExtension`. Each command only reads and
//! changes ClusterExtensions (and reads their kept revisions), so what it does the YAML does
//! too; then it waits until the lifecycle controller has acted on the change (its
//! `Progressing` condition observed the new generation) and says what came of it.
//!
//! A rollback pins `spec.source.catalog.version` to the revision's exact version with
//! `upgradeConstraintPolicy: SelfCertified` (a downgrade is not an edge of the catalog's
//! graph) and approves that bundle; before changing anything it runs the controller's own
//! preflight ([`opkit_lifecycle::preflight`]) on the revision's objects, so a refused
//! rollback changes nothing.

use std::time::Duration;

use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams,
};
use kube::runtime::wait::{await_condition, conditions::is_deleted};
use kube::{Client, ResourceExt};
use opkit_lifecycle::api::{
    APPROVED_BUNDLE_ANNOTATION, CatalogFilter, ExtensionSource, ExtensionSourceType,
    PURGE_ANNOTATION, ServiceAccountReference,
};
use opkit_lifecycle::{ClusterExtension, ClusterExtensionSpec, revision};
use opkit_olm::install::OWNER_NAME_LABEL;
use serde_json::json;

use crate::cluster::{self, ClusterArgs};

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

/// Runs `opkit operator …`.
pub(crate) async fn run(command: OperatorCommand) -> anyhow::Result<()> {
    match command {
        OperatorCommand::List(args) => list(args).await,
        OperatorCommand::Install(args) => install(args).await,
        OperatorCommand::Upgrade(args) => upgrade(args).await,
        OperatorCommand::Rollback(args) => rollback(args).await,
        OperatorCommand::Approve(args) => approve(args).await,
        OperatorCommand::Uninstall(args) => uninstall(args).await,
    }
}

async fn client(args: &ClusterArgs) -> anyhow::Result<Client> {
    Ok(cluster::connect(args.kubeconfig.as_deref()).await?.client)
}

/// The ClusterExtension `name`, or an error saying how to find the right name.
async fn get(api: &Api<ClusterExtension>, name: &str) -> anyhow::Result<ClusterExtension> {
    match api.get_opt(name).await {
        Ok(Some(ext)) => Ok(ext),
        Ok(None) => bail!(
            "there is no ClusterExtension {name:?}: `opkit operator list` shows the installed ones"
        ),
        Err(kube::Error::Api(s)) if s.code == 404 => bail!(
            "the cluster serves no ClusterExtensions: start the lifecycle controllers (`opkit up --olm`)"
        ),
        Err(e) => Err(e).with_context(|| format!("cannot read ClusterExtension {name}")),
    }
}

fn condition<'a>(
    ext: &'a ClusterExtension,
    type_: &str,
) -> Option<&'a k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition> {
    opkit::conditions::find(ext.status.as_ref()?.conditions.as_slice(), type_)
}

/// `demo.v1.0.0 1.0.0 (revision 1)`, or `nothing`.
fn installed(ext: &ClusterExtension) -> String {
    match ext.status.as_ref().and_then(|s| s.install.as_ref()) {
        Some(i) => match i.revision {
            Some(n) => format!("{} {} (revision {n})", i.bundle.name, i.bundle.version),
            None => format!("{} {}", i.bundle.name, i.bundle.version),
        },
        None => "nothing".into(),
    }
}

fn installed_name(ext: &ClusterExtension) -> Option<&str> {
    Some(ext.status.as_ref()?.install.as_ref()?.bundle.name.as_str())
}

/// What the controller made of generation `generation` of `name`: waits until its
/// `Progressing` condition has observed it and is not retrying (or until `timeout`, failing
/// with the last message).
async fn settled(
    api: &Api<ClusterExtension>,
    name: &str,
    generation: Option<i64>,
    timeout: Duration,
) -> anyhow::Result<ClusterExtension> {
    let observed = move |ext: Option<&ClusterExtension>| {
        ext.and_then(|e| condition(e, "Progressing"))
            .is_some_and(|c| c.observed_generation >= generation && c.reason != "Retrying")
    };
    match tokio::time::timeout(timeout, await_condition(api.clone(), name, observed)).await {
        Ok(Ok(Some(ext))) => Ok(ext),
        Ok(Ok(None)) => bail!("ClusterExtension {name} was deleted while waiting for it"),
        Ok(Err(e)) => Err(e).with_context(|| format!("cannot watch ClusterExtension {name}")),
        Err(_) => {
            let ext = get(api, name).await?;
            let message =
                condition(&ext, "Progressing").map_or("no status yet", |c| c.message.as_str());
            bail!(
                "ClusterExtension {name} did not settle within {timeout:?}: {message}\n\
                 Installed: {}. Look at it with `kubectl get clusterextension {name} -o yaml`",
                installed(&ext)
            )
        }
    }
}

/// Reports a settled extension: fails when blocked, says when an upgrade waits.
fn report(ext: &ClusterExtension, done: &str) -> anyhow::Result<()> {
    let name = ext.name_any();
    if let Some(p) = ext.status.as_ref().and_then(|s| s.pending_upgrade.as_ref()) {
        println!(
            "{name}: the upgrade to {} {} waits for approval (installed: {}); it adds [{}], removes [{}], changes [{}]. Run `opkit operator approve {name}`.",
            p.bundle.name,
            p.bundle.version,
            installed(ext),
            p.added.join(", "),
            p.removed.join(", "),
            p.changed.join(", ")
        );
        return Ok(());
    }
    let progressing = condition(ext, "Progressing");
    if let Some(c) = progressing.filter(|c| c.reason == "Blocked") {
        bail!("ClusterExtension {name} is blocked: {}", c.message);
    }
    println!("{done} {name}: {} is installed.", installed(ext));
    Ok(())
}

async fn list(args: ListArgs) -> anyhow::Result<()> {
    let api: Api<ClusterExtension> = Api::all(client(&args.cluster).await?);
    let extensions = api
        .list(&ListParams::default())
        .await
        .context("cannot list ClusterExtensions (does the cluster run `opkit up --olm`?)")?;
    let mut rows = vec![["NAME", "PACKAGE", "VERSION", "REVISION", "STATE"].map(String::from)];
    for ext in &extensions {
        let install = ext.status.as_ref().and_then(|s| s.install.as_ref());
        let pending = ext.status.as_ref().and_then(|s| s.pending_upgrade.as_ref());
        let state = match (
            pending,
            condition(ext, "Installed"),
            condition(ext, "Progressing"),
        ) {
            (Some(p), _, _) => format!("UpgradePending {}", p.bundle.version),
            (None, Some(i), Some(p)) if i.status == "True" && p.reason == "Succeeded" => {
                "Installed".into()
            }
            (None, _, Some(p)) => p.reason.clone(),
            (None, _, None) => "Unknown".into(),
        };
        rows.push([
            ext.name_any(),
            ext.spec
                .source
                .catalog
                .as_ref()
                .map(|c| c.package_name.clone())
                .unwrap_or_default(),
            install.map_or("-".into(), |i| i.bundle.version.clone()),
            install
                .and_then(|i| i.revision)
                .map_or("-".into(), |n| n.to_string()),
            state,
        ]);
    }
    let widths: Vec<usize> = (0..5)
        .map(|i| rows.iter().map(|r| r[i].len()).max().unwrap_or(0))
        .collect();
    for row in rows {
        let line: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, w)| format!("{cell:w$}"))
            .collect();
        println!("{}", line.join("   ").trim_end());
    }
    Ok(())
}

async fn install(args: InstallArgs) -> anyhow::Result<()> {
    let client = client(&args.cluster).await?;
    let name = args.name.clone().unwrap_or_else(|| args.package.clone());
    let namespace = args
        .namespace
        .clone()
        .unwrap_or_else(|| args.package.clone());
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let mut ns = Namespace::default();
    ns.metadata.name = Some(namespace.clone());
    match namespaces.create(&PostParams::default(), &ns).await {
        Ok(_) => eprintln!("created namespace {namespace}"),
        Err(kube::Error::Api(s)) if s.code == 409 => {}
        Err(e) => return Err(e).with_context(|| format!("cannot create namespace {namespace}")),
    }
    let ext = ClusterExtension::new(
        &name,
        ClusterExtensionSpec {
            namespace,
            service_account: ServiceAccountReference {
                name: args.service_account,
            },
            source: ExtensionSource {
                source_type: ExtensionSourceType::Catalog,
                catalog: Some(CatalogFilter {
                    package_name: args.package,
                    version: args.version,
                    channels: args.channels,
                    ..CatalogFilter::default()
                }),
            },
            install: None,
        },
    );
    let api: Api<ClusterExtension> = Api::all(client);
    let created = match api.create(&PostParams::default(), &ext).await {
        Ok(created) => created,
        Err(kube::Error::Api(s)) if s.code == 409 => bail!(
            "ClusterExtension {name} already exists: change it with `opkit operator upgrade {name}`, or name this one with --name"
        ),
        Err(kube::Error::Api(s)) if s.code == 404 => bail!(
            "the cluster serves no ClusterExtensions: start the lifecycle controllers (`opkit up --olm`)"
        ),
        Err(e) => return Err(e).with_context(|| format!("cannot create ClusterExtension {name}")),
    };
    let ext = settled(
        &api,
        &name,
        created.metadata.generation,
        args.cluster.timeout,
    )
    .await?;
    report(&ext, "Installed")
}

async fn upgrade(args: UpgradeArgs) -> anyhow::Result<()> {
    let api: Api<ClusterExtension> = Api::all(client(&args.cluster).await?);
    get(&api, &args.name).await?;
    let mut catalog = json!({"version": args.version});
    if !args.channels.is_empty() {
        catalog["channels"] = json!(args.channels);
    }
    if let Some(policy) = &args.upgrade_constraint_policy {
        catalog["upgradeConstraintPolicy"] = json!(policy);
    }
    let patch = json!({"spec": {"source": {"catalog": catalog}}});
    let changed = api
        .patch(&args.name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .with_context(|| format!("cannot change ClusterExtension {}", args.name))?;
    let ext = settled(
        &api,
        &args.name,
        changed.metadata.generation,
        args.cluster.timeout,
    )
    .await?;
    report(&ext, "Upgraded")
}

async fn rollback(args: RollbackArgs) -> anyhow::Result<()> {
    let client = client(&args.cluster).await?;
    let api: Api<ClusterExtension> = Api::all(client.clone());
    let ext = get(&api, &args.name).await?;
    let name = &args.name;
    let revisions = revision::list(&client, &ext.spec.namespace, name).await?;
    let current = ext
        .status
        .as_ref()
        .and_then(|s| s.install.as_ref())
        .and_then(|i| i.revision)
        .context(format!(
            "ClusterExtension {name} has no installed revision to roll back from"
        ))?;
    let wanted = match args.to_revision {
        Some(n) => n,
        None if current > 1 => current - 1,
        None => {
            bail!("ClusterExtension {name} has only revision 1: there is nothing to roll back to")
        }
    };
    let Some(target) = revisions.iter().find(|r| r.number == wanted) else {
        let kept: Vec<String> = revisions.iter().map(|r| r.number.to_string()).collect();
        bail!(
            "ClusterExtension {name} has no revision {wanted} (kept: {})",
            kept.join(", ")
        );
    };
    if Some(target.bundle.name.as_str()) == installed_name(&ext) {
        bail!(
            "revision {wanted} is {} {}, which is what is installed",
            target.bundle.name,
            target.bundle.version
        );
    }
    opkit_lifecycle::preflight::check(&client, &ext, &target.objects)
        .await
        .map_err(|message| {
            anyhow::anyhow!(
                "cannot roll back {name} to revision {wanted} ({} {}): {message}",
                target.bundle.name,
                target.bundle.version
            )
        })?;
    let patch = json!({
        "metadata": {"annotations": {APPROVED_BUNDLE_ANNOTATION: target.bundle.name}},
        "spec": {"source": {"catalog": {
            "version": target.bundle.version,
            "upgradeConstraintPolicy": "SelfCertified",
        }}},
    });
    let changed = api
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .with_context(|| format!("cannot change ClusterExtension {name}"))?;
    let ext = settled(
        &api,
        name,
        changed.metadata.generation,
        args.cluster.timeout,
    )
    .await?;
    if installed_name(&ext) != Some(target.bundle.name.as_str()) {
        report(&ext, "Changed")?;
        bail!(
            "ClusterExtension {name} did not install {} (installed: {})",
            target.bundle.name,
            installed(&ext)
        );
    }
    report(&ext, &format!("Rolled back to revision {wanted}:"))
}

async fn approve(args: NameArgs) -> anyhow::Result<()> {
    let api: Api<ClusterExtension> = Api::all(client(&args.cluster).await?);
    let name = &args.name;
    let ext = get(&api, name).await?;
    let Some(pending) = ext.status.as_ref().and_then(|s| s.pending_upgrade.clone()) else {
        bail!(
            "ClusterExtension {name} has no upgrade waiting for approval (installed: {})",
            installed(&ext)
        );
    };
    let patch =
        json!({"metadata": {"annotations": {APPROVED_BUNDLE_ANNOTATION: pending.bundle.name}}});
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .with_context(|| format!("cannot annotate ClusterExtension {name}"))?;
    let bundle = pending.bundle.name.clone();
    // Done when installed, or blocked by something else than this approval.
    let done = move |e: Option<&ClusterExtension>| {
        e.is_some_and(|e| {
            let waiting = e
                .status
                .as_ref()
                .and_then(|s| s.pending_upgrade.as_ref())
                .is_some_and(|p| p.bundle.name == bundle);
            installed_name(e) == Some(bundle.as_str())
                || (!waiting && condition(e, "Progressing").is_some_and(|c| c.reason == "Blocked"))
        })
    };
    match tokio::time::timeout(
        args.cluster.timeout,
        await_condition(api.clone(), name, done),
    )
    .await
    {
        Ok(Ok(Some(ext))) => report(&ext, &format!("Approved {}:", pending.bundle.name)),
        Ok(Ok(None)) => bail!("ClusterExtension {name} was deleted while waiting for it"),
        Ok(Err(e)) => Err(e).with_context(|| format!("cannot watch ClusterExtension {name}")),
        Err(_) => {
            let ext = get(&api, name).await?;
            let message =
                condition(&ext, "Progressing").map_or("no status yet", |c| c.message.as_str());
            bail!(
                "approved {}, but it is not installed after {:?}: {message}",
                pending.bundle.name,
                args.cluster.timeout
            )
        }
    }
}

/// How many custom resources of `crd` the cluster has (read at its storage version).
async fn count_resources(client: &Client, crd: &CustomResourceDefinition) -> anyhow::Result<usize> {
    let Some(version) = crd.spec.versions.iter().find(|v| v.storage) else {
        return Ok(0);
    };
    let resource = ApiResource {
        group: crd.spec.group.clone(),
        version: version.name.clone(),
        api_version: format!("{}/{}", crd.spec.group, version.name),
        kind: crd.spec.names.kind.clone(),
        plural: crd.spec.names.plural.clone(),
    };
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
    Ok(api
        .list(&ListParams::default())
        .await
        .with_context(|| format!("cannot list the {}", crd.spec.names.plural))?
        .items
        .len())
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

async fn uninstall(args: UninstallArgs) -> anyhow::Result<()> {
    let client = client(&args.cluster).await?;
    let api: Api<ClusterExtension> = Api::all(client.clone());
    let name = &args.name;
    let ext = get(&api, name).await?;
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let owned = crds
        .list(&ListParams::default().labels(&format!("{OWNER_NAME_LABEL}={name}")))
        .await
        .context("cannot list the extension's CRDs")?;
    let mut counted = Vec::new();
    for crd in &owned {
        counted.push((crd.name_any(), count_resources(&client, crd).await?));
    }
    if args.purge {
        let patch = json!({"metadata": {"annotations": {PURGE_ANNOTATION: "true"}}});
        api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .with_context(|| format!("cannot annotate ClusterExtension {name}"))?;
    }
    api.delete(name, &DeleteParams::default())
        .await
        .with_context(|| format!("cannot delete ClusterExtension {name}"))?;
    let uid = ext.metadata.uid.clone().unwrap_or_default();
    tokio::time::timeout(args.cluster.timeout, await_condition(api.clone(), name, is_deleted(&uid)))
        .await
        .map_err(|_| {
            anyhow::anyhow!(
                "ClusterExtension {name} is still there after {:?}: the lifecycle controller removes its objects first (is it running?)",
                args.cluster.timeout
            )
        })?
        .with_context(|| format!("cannot watch ClusterExtension {name}"))?;
    println!("Uninstalled {name} ({}).", installed(&ext));
    if counted.is_empty() {
        return Ok(());
    }
    if args.purge {
        println!("Deleted with it:");
    } else {
        println!("These remain (uninstall with --purge, or delete them, to remove them):");
    }
    for (crd, n) in counted {
        println!(
            "  CustomResourceDefinition {crd} ({})",
            plural(n, "custom resource")
        );
    }
    Ok(())
}
