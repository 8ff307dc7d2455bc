//! The reconciler: one custom resource, one Helm release, kept as operator-sdk's helm operator
//! keeps it.
//!
//! Per custom resource (release name = its name, namespace = its namespace): the finalizer
//! `helm.sdk.operatorframework.io/uninstall-release` goes on before anything is installed
//! (so a release never outlives its custom resource); then [`Releases::ensure`] installs,
//! upgrades, resumes or repairs, and the status says what happened in operator-sdk's words
//! (conditions `Initialized`, `Deployed`, `ReleaseFailed`, `Irreconcilable` with its reasons,
//! `status.deployedRelease`). On delete the release is uninstalled — with
//! `helm.sdk.operatorframework.io/uninstall-wait: "true"` the finalizer stays until every
//! object of the release is gone — and then the finalizer goes.
//!
//! The status is written only when it differs from the stored one and `ensure` writes nothing
//! when nothing changed, so reconciling an unchanged custom resource makes no API write.
//! With `watchDependentResources` every kind of the deployed manifest is watched (opened at
//! run time through [`Context::owns_dynamic`]): an owned object edited or deleted by someone
//! reconciles its custom resource at once and is put back. Like operator-sdk's
//! `DependentPredicate`, status-only updates and creations of owned objects are ignored.
//! Cluster-scoped objects carry no owner reference (Helm's rule for the owner's namespace)
//! and are repaired on the reconcile period instead.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams};
use kube::discovery::Scope;
use kube::{Resource, ResourceExt};
use opkit::finalizer::{Event, FinalizerError};
use opkit::{Action, Context};
use opkit_chart::Chart;

use crate::status::{self, HelmAppRelease, HelmAppStatus, reason};
use crate::values::{ValuesError, values_for};
use crate::watches::Watch;
use crate::{ActionError, EnsureOptions, Outcome, Releases, UninstallOptions, UninstallOutcome};

/// The finalizer that uninstalls the release before the custom resource goes.
pub const UNINSTALL_FINALIZER: &str = "helm.sdk.operatorframework.io/uninstall-release";
/// `"true"`: upgrade by replacing objects the server refuses to change in place.
pub const UPGRADE_FORCE_ANNOTATION: &str = "helm.sdk.operatorframework.io/upgrade-force";
/// `"false"`: roll a failed upgrade back without replacing objects (default `true`).
pub const ROLLBACK_FORCE_ANNOTATION: &str = "helm.sdk.operatorframework.io/rollback-force";
/// `"true"`: keep the custom resource until every object of the release is gone.
pub const UNINSTALL_WAIT_ANNOTATION: &str = "helm.sdk.operatorframework.io/uninstall-wait";
/// A Go duration: reconcile this custom resource this often (wins over `reconcilePeriod`).
pub const RECONCILE_PERIOD_ANNOTATION: &str = "helm.sdk.operatorframework.io/reconcile-period";
/// `"true"`: leave the release alone (deletion still uninstalls).
pub const PAUSED_ANNOTATION: &str = "helm.sdk.operatorframework.io/paused";

/// operator-sdk's message while `uninstall-wait` waits.
const WAITING_MESSAGE: &str = "Waiting until all resources are deleted.";

/// Why a reconcile failed (the status says it too, where operator-sdk says it).
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    /// The release engine failed.
    #[error(transparent)]
    Action(#[from] ActionError),
    /// The values could not be built from the spec.
    #[error(transparent)]
    Values(#[from] ValuesError),
    /// An annotation has a value the operator cannot read.
    #[error("annotation {annotation}: {message}")]
    Annotation {
        /// The annotation.
        annotation: &'static str,
        /// What is wrong.
        message: String,
    },
    /// Writing the status, or the finalizer, failed.
    #[error("{0}: {1}")]
    Api(&'static str, #[source] kube::Error),
    /// The custom resource has no name or uid.
    #[error("the custom resource has no name or uid")]
    Unnamed,
    /// The same error, retried only when the custom resource changes (the chart or the
    /// values are wrong: retrying cannot help).
    #[error(transparent)]
    Terminal(#[from] opkit::TerminalError),
}

/// The uninstall is waiting for objects to go: the finalizer stays (not an error).
#[derive(Debug, thiserror::Error)]
#[error("waiting for {0}")]
struct Waiting(String);

#[derive(Debug, thiserror::Error)]
enum CleanupError {
    #[error(transparent)]
    Waiting(#[from] Waiting),
    #[error(transparent)]
    Failed(#[from] ReconcileError),
}

/// What one controller (one entry of `watches.yaml`) reconciles with.
pub(crate) struct ChartOperator {
    pub(crate) watch: Watch,
    pub(crate) chart: Chart,
    /// The custom resource's kind.
    pub(crate) resource: ApiResource,
    /// The reconcile period when neither the annotation nor `watches.yaml` sets one.
    pub(crate) default_period: Option<Duration>,
    /// The release engine; each namespace's shares its discovery cache.
    releases: Releases,
    /// Dependent kinds by `apiVersion/kind`: their resource and whether namespaced
    /// (`None`: the cluster does not serve it).
    kinds: Mutex<HashMap<String, Option<(ApiResource, bool)>>>,
}

impl ChartOperator {
    pub(crate) fn new(
        watch: Watch,
        chart: Chart,
        resource: ApiResource,
        default_period: Option<Duration>,
        releases: Releases,
    ) -> ChartOperator {
        ChartOperator {
            watch,
            chart,
            resource,
            default_period,
            releases,
            kinds: Mutex::default(),
        }
    }

    fn releases(&self, namespace: &str) -> Releases {
        self.releases.in_namespace(namespace)
    }
}

fn annotation<'a>(obj: &'a DynamicObject, name: &str) -> Option<&'a str> {
    obj.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(name))
        .map(String::as_str)
}

/// A boolean annotation as Go's `strconv.ParseBool` reads it; `default` when missing or
/// unreadable (operator-sdk logs and falls back).
fn flag(obj: &DynamicObject, name: &str, default: bool) -> bool {
    match annotation(obj, name) {
        Some("1" | "t" | "T" | "true" | "TRUE" | "True") => true,
        Some("0" | "f" | "F" | "false" | "FALSE" | "False") => false,
        Some(other) => {
            tracing::info!(
                annotation = name,
                value = other,
                "could not parse annotation as a boolean"
            );
            default
        }
        None => default,
    }
}

/// The reconcile period: the annotation, else `watches.yaml`'s, else the operator's.
fn reconcile_period(
    obj: &DynamicObject,
    op: &ChartOperator,
) -> Result<Option<Duration>, ReconcileError> {
    match annotation(obj, RECONCILE_PERIOD_ANNOTATION) {
        Some(text) => opkit_apimachinery::duration::parse_std(text)
            .map(Some)
            .map_err(|message| ReconcileError::Annotation {
                annotation: RECONCILE_PERIOD_ANNOTATION,
                message,
            }),
        None => Ok(op.watch.reconcile_period.or(op.default_period)),
    }
}

/// Whether the custom resource is the operator's: its labels match the watch's selector,
/// or it is being deleted with the finalizer on (a release is never left behind because
/// the labels changed).
pub(crate) fn selected(watch: &Watch, obj: &DynamicObject) -> bool {
    watch.selector.matches_set(obj.labels())
        || (obj.metadata.deletion_timestamp.is_some()
            && obj.finalizers().iter().any(|f| f == UNINSTALL_FINALIZER))
}

fn after(period: Option<Duration>) -> Action {
    period.map_or_else(Action::await_change, Action::requeue)
}

/// Reconciles one custom resource; see the [module docs](self).
pub(crate) async fn reconcile(
    obj: Arc<DynamicObject>,
    ctx: Arc<Context<ChartOperator>>,
) -> Result<Action, ReconcileError> {
    if !selected(&ctx.watch, &obj) {
        return Ok(Action::await_change());
    }
    let period = reconcile_period(&obj, &ctx)?;
    let paused = flag(&obj, PAUSED_ANNOTATION, false);
    if paused && obj.metadata.deletion_timestamp.is_none() {
        let old = HelmAppStatus::from_status(obj.data.get("status"));
        let mut new = old.clone();
        new.set(status::PAUSED, true, reason::PAUSE_ANNOTATION_TRUE, "");
        write_status(&ctx, &obj, &old, &new).await?;
        return Ok(Action::await_change());
    }
    let op: &Context<ChartOperator> = &ctx;
    let result = ctx
        .finalize(obj, |event| async move {
            match event {
                Event::Apply(obj) => deploy(&obj, op, period).await.map_err(CleanupError::from),
                Event::Cleanup(obj) => uninstall(&obj, op).await,
            }
        })
        .await;
    match result {
        Ok(action) => Ok(action),
        Err(
            FinalizerError::Cleanup(CleanupError::Waiting(w))
            | FinalizerError::Apply(CleanupError::Waiting(w)),
        ) => {
            tracing::info!(what = %w, "uninstall waits for the release's objects to go");
            // The dependent watches reconcile as soon as an object goes; the period is the
            // fallback for objects no watch sees.
            Ok(Action::requeue(Duration::from_secs(5)))
        }
        Err(
            FinalizerError::Apply(CleanupError::Failed(e))
            | FinalizerError::Cleanup(CleanupError::Failed(e)),
        ) => Err(e),
        Err(FinalizerError::Add(e)) => Err(ReconcileError::Api("adding the finalizer", e)),
        Err(FinalizerError::Remove(e)) => Err(ReconcileError::Api("removing the finalizer", e)),
        Err(FinalizerError::Unnamed | FinalizerError::Undeclared(_)) => {
            Err(ReconcileError::Unnamed)
        }
    }
}

/// Installs, upgrades or repairs the release of a live custom resource.
async fn deploy(
    obj: &DynamicObject,
    ctx: &Context<ChartOperator>,
    period: Option<Duration>,
) -> Result<Action, ReconcileError> {
    let old = HelmAppStatus::from_status(obj.data.get("status"));
    let mut new = old.clone();
    new.remove(status::PAUSED);
    new.set(status::INITIALIZED, true, "", "");
    let name = obj.name_any();
    let namespace = obj.namespace().unwrap_or_else(|| "default".into());
    let values = match values_for(obj.data.get("spec"), &ctx.watch.override_values) {
        Ok(v) => v,
        Err(e) => {
            new.set(
                status::IRRECONCILABLE,
                true,
                reason::RECONCILE_ERROR,
                &e.to_string(),
            );
            write_status(ctx, obj, &old, &new).await?;
            return Err(opkit::TerminalError::new(e.to_string()).into());
        }
    };
    let releases = ctx.releases(&namespace);
    let history = match releases.history(&name).await {
        Ok(h) => h,
        Err(e) => {
            new.set(
                status::IRRECONCILABLE,
                true,
                reason::RECONCILE_ERROR,
                &e.to_string(),
            );
            write_status(ctx, obj, &old, &new).await?;
            return Err(e.into());
        }
    };
    new.remove(status::IRRECONCILABLE);
    let deployed_before = history.iter().any(|r| {
        matches!(
            r.status(),
            crate::Status::Deployed | crate::Status::Superseded
        )
    });
    let mut owner = obj
        .controller_owner_ref(&ctx.resource)
        .ok_or(ReconcileError::Unnamed)?;
    owner.block_owner_deletion = Some(true);
    let opts = EnsureOptions {
        owner: Some(owner),
        force: flag(obj, UPGRADE_FORCE_ANNOTATION, false),
        rollback_on_failure: true,
        rollback_force: flag(obj, ROLLBACK_FORCE_ANNOTATION, true),
        ..EnsureOptions::default()
    };
    match releases.ensure(&name, &ctx.chart, &values, &opts).await {
        Ok(outcome) => {
            let release = outcome.release();
            let why = match &outcome {
                Outcome::Installed(_) => reason::INSTALL_SUCCESSFUL,
                Outcome::Upgraded(_) => reason::UPGRADE_SUCCESSFUL,
                Outcome::Unchanged { release, .. } if release.version == 1 => {
                    reason::INSTALL_SUCCESSFUL
                }
                Outcome::Unchanged { .. } => reason::UPGRADE_SUCCESSFUL,
            };
            match &outcome {
                Outcome::Unchanged { repaired, .. } if *repaired > 0 => {
                    tracing::info!(release = %name, repaired, "put drifted objects back");
                }
                Outcome::Unchanged { .. } => {}
                Outcome::Installed(_) | Outcome::Upgraded(_) => overrides_in_use(ctx, obj).await,
            }
            let notes = release
                .info
                .as_ref()
                .map(|i| i.notes.as_str())
                .unwrap_or("");
            new.remove(status::RELEASE_FAILED);
            new.set(status::DEPLOYED, true, why, notes);
            new.deployed_release = Some(HelmAppRelease {
                name: release.name.clone(),
                manifest: release.manifest.clone(),
            });
            write_status(ctx, obj, &old, &new).await?;
            if ctx.watch.watch_dependent_resources {
                watch_dependents(ctx, &release.manifest).await;
            }
            Ok(after(period))
        }
        Err(e) => {
            let why = if deployed_before {
                reason::UPGRADE_ERROR
            } else {
                reason::INSTALL_ERROR
            };
            new.set(status::RELEASE_FAILED, true, why, &e.to_string());
            write_status(ctx, obj, &old, &new).await?;
            if e.is_permanent() {
                Err(opkit::TerminalError::new(e.to_string()).into())
            } else {
                Err(e.into())
            }
        }
    }
}

/// operator-sdk's `OverrideValuesInUse` Warning events, one per override, after a revision
/// that used them (best effort: a failed event is logged).
async fn overrides_in_use(ctx: &Context<ChartOperator>, obj: &DynamicObject) {
    for (key, value) in &ctx.watch.override_values {
        let sent = ctx
            .recorder()
            .event_with(obj, &ctx.resource)
            .warning()
            .reason("OverrideValuesInUse")
            .note(format!(
                "Chart value {key:?} overridden to {value:?} by operator's watches.yaml"
            ))
            .publish()
            .await;
        if let Err(e) = sent {
            tracing::warn!(error = %e, "cannot record the OverrideValuesInUse event");
        }
    }
}

/// Uninstalls the release of a custom resource being deleted; `Waiting` keeps the finalizer.
async fn uninstall(
    obj: &DynamicObject,
    ctx: &Context<ChartOperator>,
) -> Result<Action, CleanupError> {
    let old = HelmAppStatus::from_status(obj.data.get("status"));
    let mut new = old.clone();
    let name = obj.name_any();
    let namespace = obj.namespace().unwrap_or_else(|| "default".into());
    let wait = flag(obj, UNINSTALL_WAIT_ANNOTATION, false);
    let releases = ctx.releases(&namespace);
    match releases
        .uninstall(
            &name,
            &UninstallOptions {
                wait,
                ..UninstallOptions::default()
            },
        )
        .await
    {
        Ok(UninstallOutcome::Done) => Ok(Action::await_change()),
        Ok(UninstallOutcome::Waiting(what)) => {
            new.remove(status::RELEASE_FAILED);
            new.set(
                status::DEPLOYED,
                false,
                reason::UNINSTALL_SUCCESSFUL,
                WAITING_MESSAGE,
            );
            write_status(ctx, obj, &old, &new).await?;
            if let Some(release) = &old.deployed_release
                && ctx.watch.watch_dependent_resources
            {
                watch_dependents(ctx, &release.manifest).await;
            }
            Err(Waiting(what).into())
        }
        Err(e) => {
            new.set(
                status::RELEASE_FAILED,
                true,
                reason::UNINSTALL_ERROR,
                &e.to_string(),
            );
            write_status(ctx, obj, &old, &new).await?;
            Err(ReconcileError::from(e).into())
        }
    }
}

/// Writes `new` over the stored status, unless they are equal.
async fn write_status(
    ctx: &Context<ChartOperator>,
    obj: &DynamicObject,
    old: &HelmAppStatus,
    new: &HelmAppStatus,
) -> Result<(), ReconcileError> {
    if old == new {
        return Ok(());
    }
    let api: Api<DynamicObject> = match obj.namespace() {
        Some(ns) => Api::namespaced_with(ctx.client().clone(), &ns, &ctx.resource),
        None => Api::all_with(ctx.client().clone(), &ctx.resource),
    };
    api.patch_status(
        &obj.name_any(),
        &PatchParams::default(),
        &Patch::Merge(new.merge_patch()),
    )
    .await
    .map(|_| ())
    .map_err(|e| ReconcileError::Api("updating the status", e))
}

/// The `apiVersion/kind` of every object of a manifest.
fn manifest_kinds(manifest: &str) -> Vec<(String, String)> {
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Head {
        #[serde(default)]
        api_version: String,
        #[serde(default)]
        kind: String,
    }
    let mut kinds: Vec<(String, String)> = opkit_chart::split_manifests(manifest)
        .iter()
        .filter_map(|doc| serde_yaml::from_str::<Head>(doc).ok())
        .filter(|h| !h.api_version.is_empty() && !h.kind.is_empty() && h.kind != "List")
        .map(|h| (h.api_version, h.kind))
        .collect();
    kinds.sort();
    kinds.dedup();
    kinds
}

/// Watches every namespaced kind of the manifest for changes of owned objects.
async fn watch_dependents(ctx: &Context<ChartOperator>, manifest: &str) {
    for (api_version, kind) in manifest_kinds(manifest) {
        let key = format!("{api_version}/{kind}");
        let known = ctx
            .kinds
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&key)
            .cloned();
        let found = match known {
            Some(found) => found,
            None => {
                let (group, version) = api_version.split_once('/').unwrap_or(("", &api_version));
                let gvk = GroupVersionKind::gvk(group, version, &kind);
                let found = match kube::discovery::pinned_kind(ctx.client(), &gvk).await {
                    Ok((ar, caps)) => Some((ar, caps.scope == Scope::Namespaced)),
                    Err(e) => {
                        tracing::warn!(kind = %key, error = %e, "cannot watch a dependent kind");
                        None
                    }
                };
                ctx.kinds
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(key.clone(), found.clone());
                found
            }
        };
        if let Some((ar, true)) = found
            && ctx.owns_dynamic(&ar, true, opkit::predicate::dependent())
        {
            tracing::info!(kind = %key, owner = %ctx.resource.kind, "watching dependent resource");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opkit::predicate::Change;

    #[test]
    fn the_kinds_of_a_manifest_are_listed_once_each() {
        let manifest = "---\n# Source: a/templates/sa.yaml\napiVersion: v1\nkind: ServiceAccount\n\
            metadata:\n  name: a\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: a\n\
            ---\napiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: b\n";
        assert_eq!(
            manifest_kinds(manifest),
            [
                ("apps/v1".to_string(), "Deployment".to_string()),
                ("v1".to_string(), "ServiceAccount".to_string())
            ]
        );
    }

    fn object(replicas: i64, ready: i64, rv: &str) -> DynamicObject {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "a", "resourceVersion": rv},
            "spec": {"replicas": replicas},
            "status": {"readyReplicas": ready},
        }))
        .expect("object")
    }

    #[test]
    fn status_only_updates_and_creations_of_dependents_do_not_reconcile() {
        let p = opkit::predicate::dependent();
        let (a, b, c) = (object(1, 0, "1"), object(1, 1, "2"), object(3, 1, "3"));
        assert!(!p.matches(&Change::Create(&a)));
        assert!(!p.matches(&Change::Update { old: &a, new: &b }));
        assert!(p.matches(&Change::Update { old: &b, new: &c }));
        assert!(p.matches(&Change::Delete(&c)));
    }

    #[test]
    fn boolean_annotations_read_like_go_parse_bool() {
        let mut obj = object(1, 1, "1");
        let with = |obj: &mut DynamicObject, v: &str| {
            obj.metadata.annotations =
                Some([(UNINSTALL_WAIT_ANNOTATION.to_string(), v.to_string())].into());
        };
        assert!(!flag(&obj, UNINSTALL_WAIT_ANNOTATION, false));
        assert!(
            flag(&obj, ROLLBACK_FORCE_ANNOTATION, true),
            "default when missing"
        );
        with(&mut obj, "True");
        assert!(flag(&obj, UNINSTALL_WAIT_ANNOTATION, false));
        with(&mut obj, "0");
        assert!(!flag(&obj, UNINSTALL_WAIT_ANNOTATION, true));
        with(&mut obj, "yes");
        assert!(
            flag(&obj, UNINSTALL_WAIT_ANNOTATION, true),
            "unreadable: the default"
        );
    }
}
