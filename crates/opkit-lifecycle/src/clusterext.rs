//! The `ClusterExtension` controller, OLM v1's operator-controller for registry+v1 bundles:
//! it resolves the package against the catalogs [`crate::catalogd`] serves (read in-process
//! through [`ServedCatalogs`], not over HTTP; those `spec.source.catalog.selector` selects,
//! [`crate::selection`]) with [`opkit_olm::resolve`], pulls the chosen
//! bundle image with the shared [`crate::registry`] client, renders it with
//! [`opkit_olm::install`] for the install mode its inline configuration asks for
//! (`spec.config.inline.watchNamespace`: none for all namespaces, the install namespace or
//! another one; a configuration the CSV's install modes do not allow is
//! `Progressing=False/InvalidConfiguration`), and server-side applies the objects (CRDs
//! first), each labelled with and owned by the extension. It reports `Installed=True` with
//! `status.install.bundle` once every Deployment of the bundle is Available; an upgrade (a new
//! range, a newer bundle in the catalog) moves one hop and deletes what the new bundle no
//! longer has.
//!
//! A CSV's webhooks render to a Service and configurations calling it; their certificate is
//! self-managed here, not left to cert-manager: the Secret `<service>-cert` the deployment
//! mounts is issued with the runtime's [`SelfManagedCerts`] (and renewed when due: such an
//! extension is looked at hourly), and its CA written into every `caBundle` before applying.
//!
//! Before objects of a bundle other than the installed one are applied, each of its CRDs that
//! is on the cluster passes [`opkit_olm::crd_safety::check_upgrade`] against the live one
//! (`spec.install.preflight.crdUpgradeSafety.enforcement: None` skips it); an unsafe change
//! applies nothing and is reported as `Progressing=True/Retrying` with every failed check.
//! The deprecation conditions come from the served catalog's `olm.deprecations` for the
//! package ([`opkit_olm::deprecation`]). A bundle whose `olm.package.required` or
//! `olm.gvk.required` is not met on the cluster ([`crate::dependencies`]) is not installed:
//! `Progressing=True/Retrying` names what is missing.
//!
//! Every bundle installed is kept as a numbered revision ([`crate::revision`]); the status
//! gives the installed one's number. Under `spec.install.approval: Manual` an upgrade waits:
//! the status names the pending bundle and what it would add, remove and change, until the
//! extension's approval annotation names that bundle. Deleting the extension (under a
//! finalizer) deletes what it installed but its CRDs, which are released and stay with their
//! custom resources, unless the purge annotation asks for them to go too.
//!
//! A failure is written as `Progressing=True/Retrying`. One of resolution (no such package,
//! no matching version, no catalog served yet) waits for a change instead of a timer: the
//! controller watches `ClusterCatalog`s, and every status or label change of one (catalogd
//! writes the status after it serves new content, stops serving or fails) resolves again the
//! extensions that may use it — so a failed one installs as soon as a catalog offers its
//! package, and an installed one sees new successors and deprecations. Other failures (a
//! pull, an apply, a missing dependency) are retried with the runtime's per-key backoff; a
//! spec the controller cannot honour is `Progressing=False/Blocked`.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams,
};
use kube::discovery::{Scope, pinned_kind};
use kube::{Client, Resource, ResourceExt};
use opkit::finalizer::{Event, FinalizerError};
use opkit::webhook::SelfManagedCerts;
use opkit::{Action, Caches, Context, Controller, Manager, Predicate, Running};
use opkit_olm::catalog::Deprecation;
use opkit_olm::deprecation::Status;
use opkit_olm::graph::Node;
use opkit_olm::install::{self, InstallError, OWNER_KIND_LABEL, OWNER_NAME_LABEL};
use opkit_olm::resolve::{self, Request, Resolved, Source, UpgradePolicy};
use opkit_olm::version::VersionRange;
use serde_json::{Value, json};

use crate::api::{
    APPROVED_BUNDLE_ANNOTATION, Approval, BundleMetadata, ClusterCatalog, ClusterExtension,
    ClusterExtensionInstallStatus, ClusterExtensionStatus, CrdError, PURGE_ANNOTATION,
    PendingUpgrade, UNINSTALL_FINALIZER, UpgradeConstraintPolicy,
};
use crate::catalogd::{ServedCatalog, ServedCatalogs};
use crate::registry::Registry;
use crate::revision::{self, describe};
use crate::selection;

/// The controller's name and field manager.
const NAME: &str = "clusterextension-controller";

/// How often an installed extension whose operator serves webhooks is reconciled again, so
/// its self-managed certificates are renewed when due (a serving certificate lives a year
/// and is renewed in its last third).
const CERTIFICATE_CHECK: std::time::Duration = std::time::Duration::from_secs(3600);

/// Why the controller cannot start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum ClusterExtensionsError {
    /// Installing the `ClusterExtension` CRD failed.
    #[error(transparent)]
    Crd(#[from] CrdError),
    /// The runtime failed.
    #[error(transparent)]
    Runtime(#[from] opkit::Error),
}

/// A running controller, until [`ClusterExtensions::shutdown`].
pub struct ClusterExtensions {
    running: Running,
}

impl ClusterExtensions {
    /// Stops the controller.
    pub async fn shutdown(self) -> Result<(), ClusterExtensionsError> {
        Ok(self.running.shutdown().await?)
    }
}

/// Installs the `ClusterExtension` CRD on the cluster of `client` and starts the controller,
/// resolving against `catalogs`; returns at once.
pub async fn start(
    client: Client,
    catalogs: ServedCatalogs,
) -> Result<ClusterExtensions, ClusterExtensionsError> {
    opkit::apply::install_crd(&client, &crate::api::extension_crd(), NAME).await?;
    let state = State {
        catalogs,
        rendered: Mutex::default(),
    };
    let mut manager = Manager::builder().build();
    manager.add(
        Controller::<ClusterExtension>::new(NAME)
            .finalizer(UNINSTALL_FINALIZER)
            .with_predicate(Predicate::on_update(|old: &ClusterExtension, new| {
                let approved =
                    |e: &ClusterExtension| e.annotations().get(APPROVED_BUNDLE_ANNOTATION).cloned();
                old.spec != new.spec
                    || approved(old) != approved(new)
                    || old.metadata.deletion_timestamp != new.metadata.deletion_timestamp
                    || old.metadata.finalizers != new.metadata.finalizers
            }))
            .owns::<Deployment>()
            .watches_with_caches(extensions_using, catalog_changed())
            .build(reconcile, state),
    );
    Ok(ClusterExtensions {
        running: manager.start(client).await?,
    })
}

/// The extensions that may resolve against a changed catalog: those whose selector selects
/// it (on an update, the old catalog is mapped too: one a label change deselects counts).
fn extensions_using(catalog: &ClusterCatalog, caches: &Caches) -> Vec<opkit::Request> {
    let Ok(extensions) = caches.store::<ClusterExtension>() else {
        return Vec::new();
    };
    extensions
        .state()
        .iter()
        .filter(|ext| selection::may_use(ext, catalog))
        .map(|ext| opkit::Request::from_object(ext.as_ref()))
        .collect()
}

/// Passes a catalog's creation, deletion and changes of its status or labels: catalogd
/// writes the status after what it serves changed (new content, stopped, failed), so by then
/// [`ServedCatalogs`] has it; its spec changes show as status changes too (the conditions'
/// `observedGeneration`).
fn catalog_changed() -> Predicate<ClusterCatalog> {
    Predicate::on_update(|old: &ClusterCatalog, new| {
        old.status != new.status || old.labels() != new.labels()
    })
}

struct State {
    catalogs: ServedCatalogs,
    /// The objects of the last bundle pulled per extension, by bundle image and configuration,
    /// so waiting for Deployments does not pull again.
    rendered: Mutex<HashMap<String, Rendered>>,
}

/// A bundle image with the inline configuration it was rendered for, and the objects.
type Rendered = (String, Arc<Vec<Value>>);

/// What one reconcile came to.
#[derive(Debug, PartialEq)]
enum Outcome {
    /// The bundle is installed, as the revision numbered, and its Deployments are Available.
    Installed(BundleMetadata, u32),
    /// An upgrade waits for approval.
    Pending(PendingUpgrade),
    /// The bundle's objects are applied; the Deployments are not Available yet.
    Waiting(String),
    /// A failure that may pass, retried with backoff.
    Retrying(String),
    /// No served catalog offers a bundle for the spec: resolved again when a catalog or the
    /// spec changes.
    Unresolved(String),
    /// A spec the controller cannot honour.
    Blocked(String),
    /// An inline configuration the bundle does not accept (operator-controller's
    /// `InvalidConfiguration`).
    InvalidConfiguration(String),
}

#[derive(Debug, thiserror::Error)]
enum ReconcileError {
    #[error("cannot write the status of ClusterExtension {name}: {source}")]
    Status {
        name: String,
        #[source]
        source: opkit::Error,
    },
    #[error("cannot uninstall ClusterExtension {name}: {message}")]
    Uninstall { name: String, message: String },
    #[error(transparent)]
    Finalizer(Box<FinalizerError<ReconcileError>>),
}

async fn reconcile(
    ext: Arc<ClusterExtension>,
    ctx: Arc<Context<State>>,
) -> Result<Action, ReconcileError> {
    ctx.finalize(ext, |event| async {
        match event {
            Event::Apply(ext) => apply(&ext, &ctx).await,
            Event::Cleanup(ext) => {
                uninstall(ctx.client(), &ext).await.map_err(|message| {
                    ReconcileError::Uninstall {
                        name: ext.name_any(),
                        message,
                    }
                })?;
                ctx.data()
                    .rendered
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .remove(&ext.name_any());
                Ok(Action::await_change())
            }
        }
    })
    .await
    .map_err(|e| ReconcileError::Finalizer(Box::new(e)))
}

/// Brings one live extension to its spec and writes what happened into its status.
async fn apply(ext: &ClusterExtension, ctx: &Context<State>) -> Result<Action, ReconcileError> {
    let (outcome, deprecation) = install(ext, ctx).await;
    let next = match &outcome {
        // Webhook certificates are renewed when due, so an installed operator serving webhooks
        // is looked at again.
        Outcome::Installed(..) if ctx.data().serves_webhooks(&ext.name_any()) => {
            Action::requeue(CERTIFICATE_CHECK)
        }
        // A Deployment's status change brings a waiting install back (the extension owns it).
        Outcome::Installed(..)
        | Outcome::Pending(_)
        | Outcome::Waiting(_)
        | Outcome::Blocked(_)
        | Outcome::InvalidConfiguration(_) => Action::await_change(),
        Outcome::Unresolved(message) => {
            tracing::info!(extension = ext.name_any(), "{message}");
            Action::await_change()
        }
        Outcome::Retrying(message) => {
            tracing::info!(extension = ext.name_any(), "{message}");
            Action::requeue_with_backoff()
        }
    };
    let status = status_of(ext, &outcome, deprecation.as_ref());
    if ext.status.as_ref() != Some(&status) {
        ctx.apply_status(ext, &status)
            .await
            .map_err(|source| ReconcileError::Status {
                name: ext.name_any(),
                source,
            })?;
    }
    Ok(next)
}

/// Removes what `ext` installed: its CRDs first, deleted under the purge annotation (their
/// custom resources go with them) and otherwise released (no owner, no label) to stay;
/// then every other object it labelled, and its revisions.
async fn uninstall(client: &Client, ext: &ClusterExtension) -> Result<(), String> {
    let purge = ext.annotations().get(PURGE_ANNOTATION).map(String::as_str) == Some("true");
    if !purge {
        release_crds(client, ext).await?;
    }
    prune(client, ext, &[]).await?;
    revision::delete_all(client, ext)
        .await
        .map_err(|e| e.to_string())
}

/// Takes `ext`'s label and owner reference off its CRDs, so they outlive it.
async fn release_crds(client: &Client, ext: &ClusterExtension) -> Result<(), String> {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let selector = format!("{OWNER_NAME_LABEL}={}", ext.name_any());
    let crds = api
        .list(&ListParams::default().labels(&selector))
        .await
        .map_err(|e| format!("cannot list the extension's CRDs: {e}"))?;
    let uid = ext.metadata.uid.as_deref().unwrap_or_default();
    for crd in crds {
        let owners: Vec<_> = crd
            .owner_references()
            .iter()
            .filter(|o| o.uid != uid)
            .cloned()
            .collect();
        let owners = if owners.is_empty() {
            Value::Null
        } else {
            json!(owners)
        };
        let patch = json!({"metadata": {
            "labels": {OWNER_NAME_LABEL: null, OWNER_KIND_LABEL: null},
            "ownerReferences": owners,
        }});
        api.patch(
            &crd.name_any(),
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await
        .map_err(|e| {
            format!(
                "cannot release CustomResourceDefinition {}: {e}",
                crd.name_any()
            )
        })?;
    }
    Ok(())
}

/// Resolves, pulls, renders and applies; the outcome, and the served catalog's deprecation
/// of the package (of the catalog the bundle resolved from, else the first that has one).
async fn install(ext: &ClusterExtension, ctx: &Context<State>) -> (Outcome, Option<Deprecation>) {
    let served = match selected(ext, ctx) {
        Ok(served) => served,
        Err(outcome) => return (outcome, None),
    };
    let deprecation = |catalog: Option<&str>| {
        let package = ext.spec.source.catalog.as_ref()?.package_name.as_str();
        served
            .iter()
            .filter(|(name, _)| catalog.is_none_or(|c| c == name.as_str()))
            .find_map(|(_, c)| c.catalog.deprecations.iter().find(|d| d.package == package))
            .cloned()
    };
    let mut from = None;
    let outcome = resolve_and_apply(ext, ctx, &served, &mut from).await;
    (outcome, deprecation(from.as_deref()))
}

/// The served catalogs `ext`'s selector selects, by their labels in the cache; else the
/// outcome (an invalid selector is Blocked).
fn selected(
    ext: &ClusterExtension,
    ctx: &Context<State>,
) -> Result<BTreeMap<String, ServedCatalog>, Outcome> {
    let mut served = ctx.data().catalogs.snapshot();
    let Some(selector) = selection::selector_of(ext).map_err(Outcome::Blocked)? else {
        return Ok(served);
    };
    let store = ctx
        .store::<ClusterCatalog>()
        .map_err(|e| Outcome::Retrying(format!("cannot read the ClusterCatalogs: {e}")))?;
    served.retain(|name, _| {
        let live = store.get(&opkit::ObjectRef::new(name));
        selection::selects(Some(&selector), name, live.as_ref().map(|c| c.labels()))
    });
    Ok(served)
}

/// Resolves against `served`, pulls, renders, checks and applies; the outcome. `from` is set
/// to the catalog of the resolved bundle.
async fn resolve_and_apply(
    ext: &ClusterExtension,
    ctx: &Context<State>,
    served: &BTreeMap<String, ServedCatalog>,
    from: &mut Option<String>,
) -> Outcome {
    let spec = &ext.spec;
    let Some(filter) = &spec.source.catalog else {
        return Outcome::Blocked("spec.source.catalog is required for sourceType Catalog".into());
    };
    let range = match filter.version.as_deref().map(VersionRange::parse) {
        None => None,
        Some(Ok(r)) => Some(r),
        Some(Err(e)) => {
            return Outcome::Blocked(format!(
                "spec.source.catalog.version {:?} is not a version range: {e}",
                filter.version.as_deref().unwrap_or_default()
            ));
        }
    };
    let installed = ext
        .status
        .as_ref()
        .and_then(|s| s.install.as_ref())
        .and_then(|i| {
            Some(Node {
                name: i.bundle.name.clone(),
                version: semver::Version::parse(&i.bundle.version).ok()?,
            })
        });
    let sources: Vec<Source<'_>> = served
        .iter()
        .map(|(name, c)| Source {
            name,
            priority: c.priority,
            catalog: &c.catalog,
        })
        .collect();
    let request = Request {
        package: &filter.package_name,
        version: range.as_ref(),
        channels: &filter.channels,
        policy: match filter.upgrade_constraint_policy {
            UpgradeConstraintPolicy::CatalogProvided => UpgradePolicy::CatalogProvided,
            UpgradeConstraintPolicy::SelfCertified => UpgradePolicy::SelfCertified,
        },
    };
    let resolved = match resolve::resolve(&sources, &request, installed.as_ref()) {
        Ok(r) => r,
        Err(e) if filter.selector.is_some() => {
            let names: Vec<&str> = served.keys().map(String::as_str).collect();
            return Outcome::Unresolved(format!(
                "cannot resolve: {e} (of the catalogs spec.source.catalog.selector selects: {})",
                if names.is_empty() {
                    "none is served".to_string()
                } else {
                    names.join(", ")
                }
            ));
        }
        Err(e) => return Outcome::Unresolved(format!("cannot resolve: {e}")),
    };
    *from = Some(resolved.catalog.clone());
    let changing = installed.as_ref().is_none_or(|i| i.name != resolved.name);
    if changing {
        let requirements = served
            .get(&resolved.catalog)
            .and_then(|c| c.catalog.bundles.iter().find(|b| b.name == resolved.name))
            .map_or(Ok(Vec::new()), |b| {
                opkit_olm::property::requirements(&b.properties)
            });
        let checked = match requirements {
            Ok(r) => {
                crate::dependencies::check(ctx.client(), &ext.name_any(), &resolved.name, &r).await
            }
            Err(e) => Err(format!("bundle {}: {e}", resolved.name)),
        };
        if let Err(message) = checked {
            return Outcome::Retrying(message);
        }
    }
    let objects = match ctx.data().objects(ctx.client(), ext, &resolved).await {
        Ok(o) => o,
        Err(outcome) => return outcome,
    };
    let objects = match certify(ctx.client(), ext, objects).await {
        Ok(o) => o,
        Err(message) => return Outcome::Retrying(message),
    };
    let revisions = match revision::list(ctx.client(), &spec.namespace, &ext.name_any()).await {
        Ok(r) => r,
        Err(e) => return Outcome::Retrying(e.to_string()),
    };
    let manual = spec.install.as_ref().and_then(|i| i.approval) == Some(Approval::Manual);
    let approved = ext.annotations().get(APPROVED_BUNDLE_ANNOTATION) == Some(&resolved.name);
    if changing && installed.is_some() && manual && !approved {
        let current = revisions.last().map_or(&[][..], |r| r.objects.as_slice());
        let (added, removed, changed) = revision::diff(current, &objects);
        return Outcome::Pending(PendingUpgrade {
            bundle: BundleMetadata {
                name: resolved.name,
                version: resolved.version.to_string(),
            },
            added,
            removed,
            changed,
        });
    }
    if changing && let Err(message) = crate::preflight::check(ctx.client(), ext, &objects).await {
        return Outcome::Retrying(format!(
            "cannot upgrade to bundle {} {}: {message}",
            resolved.name, resolved.version
        ));
    }
    if let Err(message) = apply_all(ctx.client(), ext, &objects).await {
        return Outcome::Retrying(message);
    }
    if let Err(message) = prune(ctx.client(), ext, &objects).await {
        return Outcome::Retrying(message);
    }
    match unavailable(ctx.client(), &objects).await {
        Ok(None) => {
            let bundle = BundleMetadata {
                name: resolved.name.clone(),
                version: resolved.version.to_string(),
            };
            let latest = revisions.last();
            if let Some(r) = latest.filter(|r| r.bundle.name == resolved.name) {
                return Outcome::Installed(bundle, r.number);
            }
            let new = revision::next(
                latest,
                bundle.clone(),
                &resolved.image,
                &resolved.catalog,
                &objects,
            );
            match revision::record(ctx.client(), ext, &new).await {
                Ok(()) => Outcome::Installed(bundle, new.number),
                Err(e) => Outcome::Retrying(e.to_string()),
            }
        }
        Ok(Some(deployment)) => Outcome::Waiting(format!(
            "bundle {} is applied; waiting for Deployment {deployment} to be Available",
            resolved.name
        )),
        Err(message) => Outcome::Retrying(message),
    }
}

impl State {
    /// Whether the objects last rendered for the extension `name` call webhooks.
    fn serves_webhooks(&self, name: &str) -> bool {
        let rendered = self.rendered.lock().unwrap_or_else(|p| p.into_inner());
        rendered
            .get(name)
            .is_some_and(|(_, objects)| !install::webhook_services(objects).is_empty())
    }

    /// The objects installing `resolved` for `ext`: pulled, rendered for its configuration and
    /// placed once per image and configuration; a failure as the outcome to report.
    async fn objects(
        &self,
        client: &Client,
        ext: &ClusterExtension,
        resolved: &Resolved,
    ) -> Result<Arc<Vec<Value>>, Outcome> {
        let name = ext.name_any();
        let inline = ext.spec.config.as_ref().and_then(|c| c.inline.as_ref());
        let key = format!(
            "{} {}",
            resolved.image,
            inline.map(|i| Value::Object(i.clone())).unwrap_or_default()
        );
        let cached = {
            let rendered = self.rendered.lock().unwrap_or_else(|p| p.into_inner());
            rendered
                .get(&name)
                .filter(|(k, _)| *k == key)
                .map(|(_, objects)| objects.clone())
        };
        if let Some(objects) = cached {
            return Ok(objects);
        }
        let objects = pull_and_render(&resolved.image, &ext.spec.namespace, &name, inline)
            .await
            .map_err(|e| match e.downcast_ref::<InstallError>() {
                Some(e @ InstallError::InvalidConfiguration(_)) => {
                    Outcome::InvalidConfiguration(e.to_string())
                }
                _ => Outcome::Retrying(format!(
                    "cannot install bundle {} from {}: {e:#}",
                    resolved.name, resolved.image
                )),
            })?;
        let objects = Arc::new(
            place(client, ext, objects)
                .await
                .map_err(Outcome::Retrying)?,
        );
        self.rendered
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(name, (key, objects.clone()));
        Ok(objects)
    }
}

/// Pulls the bundle image and renders its plain objects for the install mode `inline` asks
/// for.
async fn pull_and_render(
    image: &str,
    namespace: &str,
    owner: &str,
    inline: Option<&serde_json::Map<String, Value>>,
) -> anyhow::Result<Vec<Value>> {
    if image.is_empty() {
        anyhow::bail!("the catalog gives no image for it");
    }
    let registry = Registry::new(image, false)?;
    let pulled = registry.pull().await?;
    let files = opkit_olm::image::bundle_files(&pulled.config, &pulled.layers())?;
    // The bundle reader works on a directory: unpack into a private one.
    let dir = tempfile::tempdir()?;
    for (path, data) in &files {
        let path = dir.path().join(path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(path, data)?;
    }
    let bundle = opkit_olm::Bundle::load(dir.path())?;
    let mode = install::install_mode(&bundle.csv, namespace, inline)?;
    Ok(install::plain_objects(&bundle, namespace, owner, &mode)?)
}

/// `objects` with `caBundle` set wherever they call a webhook Service: each such Service's
/// self-managed certificate (a CA and a serving certificate in the Secret `<service>-cert`,
/// which its deployment mounts) is read, or issued, or renewed when due, and the Secret owned
/// by `ext`, so it goes with it.
async fn certify(
    client: &Client,
    ext: &ClusterExtension,
    objects: Arc<Vec<Value>>,
) -> Result<Arc<Vec<Value>>, String> {
    let services = install::webhook_services(&objects);
    if services.is_empty() {
        return Ok(objects);
    }
    let owner = ext
        .controller_owner_ref(&())
        .ok_or_else(|| "the ClusterExtension has no uid yet".to_string())?;
    let mut out = (*objects).clone();
    for (namespace, service) in services {
        let secret = install::webhooks::cert_secret_name(&service);
        let ca = SelfManagedCerts::new(&service, &namespace)
            .secret(&secret)
            .ensure_secret(client)
            .await
            .map_err(|e| {
                format!(
                    "cannot issue the certificate of webhook Service {namespace}/{service}: {e}"
                )
            })?;
        let owned = json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": secret, "namespace": namespace, "ownerReferences": [owner]},
        });
        Api::<k8s_openapi::api::core::v1::Secret>::namespaced(client.clone(), &namespace)
            .patch(
                &secret,
                &PatchParams::apply(NAME).force(),
                &Patch::Apply(&owned),
            )
            .await
            .map_err(|e| format!("cannot own Secret {namespace}/{secret}: {e}"))?;
        install::inject_ca_bundle(&mut out, &namespace, &service, &ca);
    }
    Ok(Arc::new(out))
}

/// `objects` with the extension's namespace on each namespaced one that names none, as they
/// are applied (so revisions and change lists say where each object is).
async fn place(
    client: &Client,
    ext: &ClusterExtension,
    mut objects: Vec<Value>,
) -> Result<Vec<Value>, String> {
    for object in &mut objects {
        if object["metadata"]["namespace"].is_null() {
            let (_, _, namespaced) = api_for(client, object, &ext.spec.namespace).await?;
            if namespaced {
                object["metadata"]["namespace"] = json!(ext.spec.namespace);
            }
        }
    }
    Ok(objects)
}

/// The object's kind, group and version.
fn gvk(object: &Value) -> GroupVersionKind {
    let api_version = object["apiVersion"].as_str().unwrap_or_default();
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    GroupVersionKind::gvk(group, version, object["kind"].as_str().unwrap_or_default())
}

/// The API of `object`'s kind, in its namespace (the extension's when it names none).
async fn api_for(
    client: &Client,
    object: &Value,
    namespace: &str,
) -> Result<(Api<DynamicObject>, ApiResource, bool), String> {
    let gvk = gvk(object);
    let (ar, caps) = pinned_kind(client, &gvk)
        .await
        .map_err(|e| format!("cannot find the API of {}: {e}", describe(object)))?;
    let namespaced = caps.scope == Scope::Namespaced;
    let api = if namespaced {
        let ns = object["metadata"]["namespace"]
            .as_str()
            .unwrap_or(namespace);
        Api::namespaced_with(client.clone(), ns, &ar)
    } else {
        Api::all_with(client.clone(), &ar)
    };
    Ok((api, ar, namespaced))
}

/// Server-side applies every (placed) object, CRDs first, owned by `ext`.
async fn apply_all(
    client: &Client,
    ext: &ClusterExtension,
    objects: &[Value],
) -> Result<(), String> {
    let owner = ext
        .controller_owner_ref(&())
        .ok_or_else(|| "the ClusterExtension has no uid yet".to_string())?;
    let mut ordered: Vec<&Value> = objects.iter().collect();
    ordered.sort_by_key(|o| o["kind"] != "CustomResourceDefinition");
    let params = PatchParams::apply(NAME).force();
    for object in ordered {
        let (api, _, _) = api_for(client, object, &ext.spec.namespace).await?;
        let mut body = object.clone();
        body["metadata"]["ownerReferences"] = json!([owner]);
        let name = body["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        api.patch(&name, &params, &Patch::Apply(&body))
            .await
            .map_err(|e| format!("cannot apply {}: {e}", describe(&body)))?;
    }
    Ok(())
}

/// Deletes the objects labelled with `ext` that `objects` no longer has, for the kinds a
/// registry+v1 install makes, the plain kinds a bundle commonly ships, and the kinds
/// `objects` has.
async fn prune(client: &Client, ext: &ClusterExtension, objects: &[Value]) -> Result<(), String> {
    // Where each object went: a namespaced one without a namespace went to the extension's.
    let keep = |kind: &str, namespaced: bool, ns: &str, name: &str| {
        objects.iter().any(|o| {
            let placed = o["metadata"]["namespace"]
                .as_str()
                .unwrap_or(&ext.spec.namespace);
            o["kind"] == kind && o["metadata"]["name"] == name && (!namespaced || placed == ns)
        })
    };
    let mut kinds: BTreeSet<(String, String)> = [
        ("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
        ("apps/v1", "Deployment"),
        ("v1", "ServiceAccount"),
        ("v1", "ConfigMap"),
        ("v1", "Secret"),
        ("v1", "Service"),
        ("rbac.authorization.k8s.io/v1", "Role"),
        ("rbac.authorization.k8s.io/v1", "RoleBinding"),
        ("rbac.authorization.k8s.io/v1", "ClusterRole"),
        ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
        (
            "admissionregistration.k8s.io/v1",
            "ValidatingWebhookConfiguration",
        ),
        (
            "admissionregistration.k8s.io/v1",
            "MutatingWebhookConfiguration",
        ),
    ]
    .into_iter()
    .map(|(a, k)| (a.to_string(), k.to_string()))
    .collect();
    kinds.extend(objects.iter().map(|o| {
        let field = |k: &str| o[k].as_str().unwrap_or_default().to_string();
        (field("apiVersion"), field("kind"))
    }));
    let selector = format!("{OWNER_NAME_LABEL}={}", ext.name_any());
    for (api_version, kind) in kinds {
        let probe = json!({"apiVersion": api_version, "kind": kind, "metadata": {}});
        let (_, ar, namespaced) = api_for(client, &probe, &ext.spec.namespace).await?;
        let all: Api<DynamicObject> = Api::all_with(client.clone(), &ar);
        let live = all
            .list(&ListParams::default().labels(&selector))
            .await
            .map_err(|e| format!("cannot list {kind} of the extension: {e}"))?;
        for o in live {
            let ns = if namespaced {
                o.namespace().unwrap_or_default()
            } else {
                String::new()
            };
            if keep(&kind, namespaced, &ns, &o.name_any()) {
                continue;
            }
            let api: Api<DynamicObject> = if namespaced {
                Api::namespaced_with(client.clone(), &ns, &ar)
            } else {
                Api::all_with(client.clone(), &ar)
            };
            match api.delete(&o.name_any(), &DeleteParams::default()).await {
                Ok(_) => {}
                Err(kube::Error::Api(s)) if s.code == 404 => {}
                Err(e) => return Err(format!("cannot delete {kind} {}: {e}", o.name_any())),
            }
        }
    }
    Ok(())
}

/// The first Deployment of `objects` not Available, as `namespace/name`.
async fn unavailable(client: &Client, objects: &[Value]) -> Result<Option<String>, String> {
    for o in objects
        .iter()
        .filter(|o| o["kind"] == "Deployment" && o["apiVersion"] == "apps/v1")
    {
        let ns = o["metadata"]["namespace"].as_str().unwrap_or_default();
        let name = o["metadata"]["name"].as_str().unwrap_or_default();
        let api: Api<Deployment> = Api::namespaced(client.clone(), ns);
        let live = api
            .get_opt(name)
            .await
            .map_err(|e| format!("cannot read Deployment {ns}/{name}: {e}"))?;
        let available = live
            .and_then(|d| d.status)
            .and_then(|s| s.conditions)
            .is_some_and(|c| {
                c.iter()
                    .any(|c| c.type_ == "Available" && c.status == "True")
            });
        if !available {
            return Ok(Some(format!("{ns}/{name}")));
        }
    }
    Ok(None)
}

/// The status for `outcome`, keeping what was installed before when nothing new is.
fn status_of(
    ext: &ClusterExtension,
    outcome: &Outcome,
    deprecation: Option<&Deprecation>,
) -> ClusterExtensionStatus {
    let previous = ext.status.clone().unwrap_or_default();
    let mut conditions = previous.conditions;
    let install = match outcome {
        Outcome::Installed(bundle, revision) => Some(ClusterExtensionInstallStatus {
            bundle: bundle.clone(),
            revision: Some(*revision),
        }),
        _ => previous.install,
    };
    let pending_upgrade = match outcome {
        Outcome::Pending(p) => Some(p.clone()),
        _ => None,
    };
    let (progressing, reason, message) = match outcome {
        Outcome::Installed(b, _) => (true, "Succeeded", format!("installed bundle {}", b.name)),
        Outcome::Pending(p) => (
            false,
            "Blocked",
            format!(
                "the upgrade to bundle {} {} waits for approval: run `opkit operator approve {}`",
                p.bundle.name,
                p.bundle.version,
                ext.name_any()
            ),
        ),
        Outcome::Waiting(m) | Outcome::Retrying(m) | Outcome::Unresolved(m) => {
            (true, "Retrying", m.clone())
        }
        Outcome::Blocked(m) => (false, "Blocked", m.clone()),
        Outcome::InvalidConfiguration(m) => (false, "InvalidConfiguration", m.clone()),
    };
    let generation = ext.metadata.generation;
    let manual = ext.spec.install.as_ref().and_then(|i| i.approval) == Some(Approval::Manual);
    if manual {
        let pending = match &pending_upgrade {
            Some(_) => opkit::conditions::of("UpgradePending", true)
                .reason("AwaitingApproval")
                .message(message.clone()),
            None => opkit::conditions::of("UpgradePending", false).reason("NoPendingUpgrade"),
        };
        opkit::conditions::set(&mut conditions, pending.observed_generation(generation));
    } else {
        conditions.retain(|c| c.type_ != "UpgradePending");
    }
    opkit::conditions::set(
        &mut conditions,
        opkit::conditions::of("Progressing", progressing)
            .reason(reason)
            .message(message)
            .observed_generation(generation),
    );
    let installed = match &install {
        Some(i) => opkit::conditions::of("Installed", true)
            .reason("Succeeded")
            .message(format!(
                "bundle {} {} is installed",
                i.bundle.name, i.bundle.version
            )),
        None => opkit::conditions::of("Installed", false)
            .reason("Failed")
            .message("no bundle is installed yet"),
    };
    opkit::conditions::set(&mut conditions, installed.observed_generation(generation));
    let channels = ext
        .spec
        .source
        .catalog
        .as_ref()
        .map(|c| c.channels.as_slice())
        .unwrap_or_default();
    let bundle = install.as_ref().map(|i| i.bundle.name.as_str());
    for c in opkit_olm::deprecation::conditions(deprecation, channels, bundle) {
        let builder = match c.status {
            Status::True => opkit::conditions::of(c.type_, true),
            Status::False => opkit::conditions::of(c.type_, false),
            Status::Unknown => opkit::conditions::of(c.type_, false).unknown(),
        };
        opkit::conditions::set(
            &mut conditions,
            builder
                .reason(c.reason)
                .message(c.message)
                .observed_generation(generation),
        );
    }
    ClusterExtensionStatus {
        conditions,
        install,
        pending_upgrade,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::ClusterExtensionSpec;

    fn ext(status: Option<ClusterExtensionStatus>) -> ClusterExtension {
        let mut e = ClusterExtension::new("demo", ClusterExtensionSpec::default());
        e.metadata.generation = Some(3);
        e.status = status;
        e
    }

    fn condition(s: &ClusterExtensionStatus, t: &str) -> (String, String) {
        let c = opkit::conditions::find(&s.conditions, t).unwrap();
        (c.status.clone(), c.reason.clone())
    }

    #[test]
    fn an_install_reports_the_bundle_and_a_later_failure_keeps_it_installed() {
        let bundle = BundleMetadata {
            name: "demo.v1.0.0".into(),
            version: "1.0.0".into(),
        };
        let done = status_of(&ext(None), &Outcome::Installed(bundle.clone(), 1), None);
        assert_eq!(done.install.as_ref().unwrap().revision, Some(1));
        assert_eq!(done.install.as_ref().unwrap().bundle, bundle);
        assert_eq!(
            condition(&done, "Installed"),
            ("True".into(), "Succeeded".into())
        );
        assert_eq!(
            condition(&done, "Progressing"),
            ("True".into(), "Succeeded".into())
        );
        let failed = status_of(
            &ext(Some(done)),
            &Outcome::Retrying("cannot resolve".into()),
            None,
        );
        assert_eq!(failed.install.as_ref().unwrap().bundle, bundle);
        assert_eq!(
            condition(&failed, "Installed"),
            ("True".into(), "Succeeded".into())
        );
        assert_eq!(
            condition(&failed, "Progressing"),
            ("True".into(), "Retrying".into())
        );
    }

    #[test]
    fn a_pending_upgrade_is_blocked_with_upgrade_pending_only_under_manual_approval() {
        let pending = PendingUpgrade {
            bundle: BundleMetadata {
                name: "demo.v2.0.0".into(),
                version: "2.0.0".into(),
            },
            removed: vec!["ConfigMap ns/settings".into()],
            ..PendingUpgrade::default()
        };
        let mut manual = ext(None);
        manual.spec.install = Some(crate::api::ExtensionInstallConfig {
            approval: Some(Approval::Manual),
            ..Default::default()
        });
        let s = status_of(&manual, &Outcome::Pending(pending.clone()), None);
        assert_eq!(s.pending_upgrade.as_ref(), Some(&pending));
        assert_eq!(
            condition(&s, "Progressing"),
            ("False".into(), "Blocked".into())
        );
        assert_eq!(
            condition(&s, "UpgradePending"),
            ("True".into(), "AwaitingApproval".into())
        );
        manual.status = Some(s);
        let bundle = pending.bundle.clone();
        let done = status_of(&manual, &Outcome::Installed(bundle, 2), None);
        assert!(done.pending_upgrade.is_none());
        assert_eq!(
            condition(&done, "UpgradePending"),
            ("False".into(), "NoPendingUpgrade".into())
        );
        // Automatic again: the condition goes.
        manual.spec.install = None;
        manual.status = Some(done);
        let automatic = status_of(&manual, &Outcome::Waiting("applied".into()), None);
        assert!(opkit::conditions::find(&automatic.conditions, "UpgradePending").is_none());
    }

    #[test]
    fn nothing_installed_is_installed_false_and_a_bad_spec_is_blocked() {
        let s = status_of(&ext(None), &Outcome::Blocked("bad range".into()), None);
        assert!(s.install.is_none());
        assert_eq!(
            condition(&s, "Installed"),
            ("False".into(), "Failed".into())
        );
        assert_eq!(
            condition(&s, "Progressing"),
            ("False".into(), "Blocked".into())
        );
    }

    #[test]
    fn the_status_carries_the_catalogs_deprecation_of_the_installed_bundle() {
        let deprecation = Deprecation {
            schema: "olm.deprecations".into(),
            package: "demo".into(),
            entries: vec![opkit_olm::catalog::DeprecationEntry {
                reference: opkit_olm::catalog::Reference {
                    schema: "olm.bundle".into(),
                    name: "demo.v1.0.0".into(),
                },
                message: "1.0.0 has a CVE".into(),
            }],
        };
        let waiting = status_of(
            &ext(None),
            &Outcome::Waiting("applied".into()),
            Some(&deprecation),
        );
        assert_eq!(
            condition(&waiting, "BundleDeprecated"),
            ("Unknown".into(), "Absent".into())
        );
        assert_eq!(
            condition(&waiting, "Deprecated"),
            ("False".into(), "NotDeprecated".into())
        );
        let bundle = BundleMetadata {
            name: "demo.v1.0.0".into(),
            version: "1.0.0".into(),
        };
        let done = status_of(
            &ext(Some(waiting)),
            &Outcome::Installed(bundle, 1),
            Some(&deprecation),
        );
        assert_eq!(
            condition(&done, "BundleDeprecated"),
            ("True".into(), "Deprecated".into())
        );
        assert_eq!(
            condition(&done, "Deprecated"),
            ("True".into(), "Deprecated".into())
        );
        assert_eq!(
            condition(&done, "PackageDeprecated"),
            ("False".into(), "NotDeprecated".into())
        );
    }
}
