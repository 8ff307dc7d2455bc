//! What `opkit operator …` and the OperatorHub page (`opkit hub`) do to installed operators,
//! once: list, install, upgrade, roll back, approve and uninstall OLM v1 `ClusterExtension`s.
//! Each action only reads and changes ClusterExtensions (and reads their kept revisions), so
//! what it does the YAML does too; then it waits until the lifecycle controller has acted on
//! the change (its `Progressing` condition observed the new generation) and returns what came
//! of it as sentences, which the CLI prints and the hub shows.
//!
//! A rollback pins `spec.source.catalog.version` to the revision's exact version with
//! `upgradeConstraintPolicy: SelfCertified` (a downgrade is not an edge of the catalog's
//! graph) and approves that bundle; before changing anything it runs the controller's own
//! preflight ([`opkit_lifecycle::preflight`]) on the revision's objects, so a refused
//! rollback changes nothing.

use std::time::Duration;

use anyhow::{Context, bail};
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

/// A package to install.
#[derive(Clone, Debug, Default)]
pub(crate) struct InstallRequest {
    /// The package.
    pub package: String,
    /// The ClusterExtension's name (default: the package's).
    pub name: Option<String>,
    /// A version range; the newest when absent.
    pub version: Option<String>,
    /// Channels to take bundles from; all when empty.
    pub channels: Vec<String>,
    /// The namespace of the operator's objects, created when missing (default: the package's
    /// name).
    pub namespace: Option<String>,
    /// The service account the installation is made for.
    pub service_account: String,
}

/// A change of an installed operator's version range, channels or upgrade policy.
#[derive(Clone, Debug, Default)]
pub(crate) struct UpgradeRequest {
    /// The ClusterExtension.
    pub name: String,
    /// The new version range; none: the newest along the upgrade graph.
    pub version: Option<String>,
    /// The channels to take bundles from instead (unchanged when empty).
    pub channels: Vec<String>,
    /// `CatalogProvided` or `SelfCertified`; unchanged when absent.
    pub upgrade_constraint_policy: Option<String>,
}

/// One installed operator, as `opkit operator list` and the hub show it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Installed {
    /// The ClusterExtension's name.
    pub name: String,
    /// Its package.
    pub package: String,
    /// The installed version (`-` when none).
    pub version: String,
    /// The installed revision (`-` when none).
    pub revision: String,
    /// `Installed`, `UpgradePending VERSION`, or the `Progressing` reason (`Retrying`,
    /// `Blocked`…).
    pub state: String,
    /// Why, when not installed: the `Progressing` message.
    pub message: String,
    /// The bundle waiting for approval.
    pub pending: Option<String>,
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

/// What a settled extension came to: an error when blocked, the pending upgrade when one
/// waits, else `{done} NAME: … is installed.`.
fn report(ext: &ClusterExtension, done: &str) -> anyhow::Result<String> {
    let name = ext.name_any();
    if let Some(p) = ext.status.as_ref().and_then(|s| s.pending_upgrade.as_ref()) {
        return Ok(format!(
            "{name}: the upgrade to {} {} waits for approval (installed: {}); it adds [{}], removes [{}], changes [{}]. Run `opkit operator approve {name}`.",
            p.bundle.name,
            p.bundle.version,
            installed(ext),
            p.added.join(", "),
            p.removed.join(", "),
            p.changed.join(", ")
        ));
    }
    let progressing = condition(ext, "Progressing");
    if let Some(c) = progressing.filter(|c| c.reason == "Blocked") {
        bail!("ClusterExtension {name} is blocked: {}", c.message);
    }
    Ok(format!("{done} {name}: {} is installed.", installed(ext)))
}

/// The installed operators (every ClusterExtension).
pub(crate) async fn list(client: &Client) -> anyhow::Result<Vec<Installed>> {
    let api: Api<ClusterExtension> = Api::all(client.clone());
    let extensions = api
        .list(&ListParams::default())
        .await
        .context("cannot list ClusterExtensions (does the cluster run `opkit up --olm`?)")?;
    Ok(extensions.iter().map(summary).collect())
}

fn summary(ext: &ClusterExtension) -> Installed {
    let install = ext.status.as_ref().and_then(|s| s.install.as_ref());
    let pending = ext.status.as_ref().and_then(|s| s.pending_upgrade.as_ref());
    let progressing = condition(ext, "Progressing");
    let state = match (pending, condition(ext, "Installed"), progressing) {
        (Some(p), _, _) => format!("UpgradePending {}", p.bundle.version),
        (None, Some(i), Some(p)) if i.status == "True" && p.reason == "Succeeded" => {
            "Installed".into()
        }
        (None, _, Some(p)) => p.reason.clone(),
        (None, _, None) => "Unknown".into(),
    };
    let message = match progressing {
        Some(p) if state != "Installed" => p.message.clone(),
        _ => String::new(),
    };
    Installed {
        name: ext.name_any(),
        package: ext
            .spec
            .source
            .catalog
            .as_ref()
            .map(|c| c.package_name.clone())
            .unwrap_or_default(),
        version: install.map_or("-".into(), |i| i.bundle.version.clone()),
        revision: install
            .and_then(|i| i.revision)
            .map_or("-".into(), |n| n.to_string()),
        state,
        message,
        pending: pending.map(|p| format!("{} {}", p.bundle.name, p.bundle.version)),
    }
}

/// Creates a ClusterExtension for `req` (and its namespace when missing) and waits until the
/// controller has installed it (or says why not); what came of it, after the note that the
/// namespace was created, if it was.
pub(crate) async fn install(
    client: &Client,
    req: InstallRequest,
    timeout: Duration,
) -> anyhow::Result<(Option<String>, String)> {
    let name = req.name.clone().unwrap_or_else(|| req.package.clone());
    let namespace = req.namespace.clone().unwrap_or_else(|| req.package.clone());
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let mut ns = Namespace::default();
    ns.metadata.name = Some(namespace.clone());
    let created_namespace = match namespaces.create(&PostParams::default(), &ns).await {
        Ok(_) => Some(format!("created namespace {namespace}")),
        Err(kube::Error::Api(s)) if s.code == 409 => None,
        Err(e) => return Err(e).with_context(|| format!("cannot create namespace {namespace}")),
    };
    let ext = ClusterExtension::new(
        &name,
        ClusterExtensionSpec {
            namespace,
            service_account: ServiceAccountReference {
                name: req.service_account,
            },
            source: ExtensionSource {
                source_type: ExtensionSourceType::Catalog,
                catalog: Some(CatalogFilter {
                    package_name: req.package,
                    version: req.version,
                    channels: req.channels,
                    ..CatalogFilter::default()
                }),
            },
            install: None,
            config: None,
        },
    );
    let api: Api<ClusterExtension> = Api::all(client.clone());
    let created = match api.create(&PostParams::default(), &ext).await {
        Ok(created) => created,
        Err(kube::Error::Api(s)) if s.code == 409 => bail!(
            "ClusterExtension {name} already exists: change it with `opkit operator upgrade {name}`, or name this one with --name"
        ),
        Err(kube::Error::Api(s)) if s.code == 404 => bail!(
            "the cluster serves no ClusterExtensions: start the lifecycle controllers (`opkit up --olm`)"
        ),
        Err(kube::Error::Api(s)) if s.code == 422 => {
            bail!("the ClusterExtension {name} is not valid: {}", s.message)
        }
        Err(e) => return Err(e).with_context(|| format!("cannot create ClusterExtension {name}")),
    };
    let ext = settled(&api, &name, created.metadata.generation, timeout).await?;
    Ok((created_namespace, report(&ext, "Installed")?))
}

/// Changes the version range, channels or upgrade policy of `req.name` and waits for the
/// upgrade (or for it to wait for approval).
pub(crate) async fn upgrade(
    client: &Client,
    req: UpgradeRequest,
    timeout: Duration,
) -> anyhow::Result<String> {
    let api: Api<ClusterExtension> = Api::all(client.clone());
    get(&api, &req.name).await?;
    let mut catalog = json!({"version": req.version});
    if !req.channels.is_empty() {
        catalog["channels"] = json!(req.channels);
    }
    if let Some(policy) = &req.upgrade_constraint_policy {
        catalog["upgradeConstraintPolicy"] = json!(policy);
    }
    let patch = json!({"spec": {"source": {"catalog": catalog}}});
    let changed = api
        .patch(&req.name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .with_context(|| format!("cannot change ClusterExtension {}", req.name))?;
    let ext = settled(&api, &req.name, changed.metadata.generation, timeout).await?;
    report(&ext, "Upgraded")
}

/// Installs kept revision `to_revision` of `name` again (default: the one before the
/// installed one), after the CRD upgrade-safety and existing-objects checks.
pub(crate) async fn rollback(
    client: &Client,
    name: &str,
    to_revision: Option<u32>,
    timeout: Duration,
) -> anyhow::Result<String> {
    let api: Api<ClusterExtension> = Api::all(client.clone());
    let ext = get(&api, name).await?;
    let revisions = revision::list(client, &ext.spec.namespace, name).await?;
    let current = ext
        .status
        .as_ref()
        .and_then(|s| s.install.as_ref())
        .and_then(|i| i.revision)
        .context(format!(
            "ClusterExtension {name} has no installed revision to roll back from"
        ))?;
    let wanted = match to_revision {
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
    opkit_lifecycle::preflight::check(client, &ext, &target.objects)
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
    let ext = settled(&api, name, changed.metadata.generation, timeout).await?;
    if installed_name(&ext) != Some(target.bundle.name.as_str()) {
        let so_far = report(&ext, "Changed")?;
        bail!(
            "{so_far}\nClusterExtension {name} did not install {} (installed: {})",
            target.bundle.name,
            installed(&ext)
        );
    }
    report(&ext, &format!("Rolled back to revision {wanted}:"))
}

/// Lets the upgrade of `name` waiting for approval proceed, and waits until it is installed
/// (or blocked by something else).
pub(crate) async fn approve(
    client: &Client,
    name: &str,
    timeout: Duration,
) -> anyhow::Result<String> {
    let api: Api<ClusterExtension> = Api::all(client.clone());
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
    match tokio::time::timeout(timeout, await_condition(api.clone(), name, done)).await {
        Ok(Ok(Some(ext))) => report(&ext, &format!("Approved {}:", pending.bundle.name)),
        Ok(Ok(None)) => bail!("ClusterExtension {name} was deleted while waiting for it"),
        Ok(Err(e)) => Err(e).with_context(|| format!("cannot watch ClusterExtension {name}")),
        Err(_) => {
            let ext = get(&api, name).await?;
            let message =
                condition(&ext, "Progressing").map_or("no status yet", |c| c.message.as_str());
            bail!(
                "approved {}, but it is not installed after {timeout:?}: {message}",
                pending.bundle.name
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

/// Deletes ClusterExtension `name` (with `purge`, its CRDs and their custom resources too)
/// and waits until it is gone; says what remains.
pub(crate) async fn uninstall(
    client: &Client,
    name: &str,
    purge: bool,
    timeout: Duration,
) -> anyhow::Result<String> {
    let api: Api<ClusterExtension> = Api::all(client.clone());
    let ext = get(&api, name).await?;
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let owned = crds
        .list(&ListParams::default().labels(&format!("{OWNER_NAME_LABEL}={name}")))
        .await
        .context("cannot list the extension's CRDs")?;
    let mut counted = Vec::new();
    for crd in &owned {
        counted.push((crd.name_any(), count_resources(client, crd).await?));
    }
    if purge {
        let patch = json!({"metadata": {"annotations": {PURGE_ANNOTATION: "true"}}});
        api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .with_context(|| format!("cannot annotate ClusterExtension {name}"))?;
    }
    api.delete(name, &DeleteParams::default())
        .await
        .with_context(|| format!("cannot delete ClusterExtension {name}"))?;
    let uid = ext.metadata.uid.clone().unwrap_or_default();
    tokio::time::timeout(timeout, await_condition(api.clone(), name, is_deleted(&uid)))
        .await
        .map_err(|_| {
            anyhow::anyhow!(
                "ClusterExtension {name} is still there after {timeout:?}: the lifecycle controller removes its objects first (is it running?)"
            )
        })?
        .with_context(|| format!("cannot watch ClusterExtension {name}"))?;
    let mut out = format!("Uninstalled {name} ({}).", installed(&ext));
    if counted.is_empty() {
        return Ok(out);
    }
    if purge {
        out.push_str("\nDeleted with it:");
    } else {
        out.push_str("\nThese remain (uninstall with --purge, or delete them, to remove them):");
    }
    for (crd, n) in counted {
        out.push_str(&format!(
            "\n  CustomResourceDefinition {crd} ({})",
            plural(n, "custom resource")
        ));
    }
    Ok(out)
}
