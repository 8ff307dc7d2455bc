//! The namespace controller: empties terminating namespaces, then releases them.
//!
//! Why: deleting a namespace must delete everything in it — of every kind, custom resources
//! included — before the namespace itself goes, or names and quotas would leak into a
//! namespace created later with the same name. Upstream splits this the same way: the API
//! server only marks the namespace (`deletionTimestamp`, `status.phase: Terminating`, and the
//! `kubernetes` entry of `spec.finalizers` keeps it), and this controller, an ordinary client:
//!
//! 1. discovers every namespaced resource that can be deleted;
//! 2. deletes each collection in the namespace (`deletecollection`, `propagationPolicy:
//!    Background`; list and delete one by one where a resource has no `deletecollection`);
//! 3. lists what is left and writes the upstream conditions (`NamespaceDeletionDiscoveryFailure`,
//!    `NamespaceDeletionGroupVersionParsingFailure`, `NamespaceDeletionContentFailure`,
//!    `NamespaceContentRemaining`, `NamespaceFinalizersRemaining`) to the namespace's status;
//! 4. while anything is left (objects whose finalizers have not run yet), tries again later
//!    with a growing delay; once nothing is left, removes `kubernetes` from `spec.finalizers`
//!    through the `finalize` subresource, and the API server removes the namespace.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Namespace, NamespaceCondition};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{
    Api, DeleteParams, DynamicObject, ListParams, PartialObjectMeta, Patch, PatchParams, PostParams,
};
use kube::discovery::verbs;
use opkit::workqueue::Backoff;
use opkit::{Action, Change, Context, Controller, ControllerDef, Predicate};
use serde_json::json;

use crate::util::{self, Served};

/// The `spec.finalizers` entry this controller owns.
const FINALIZER: &str = "kubernetes";
/// Namespaces processed at once.
const WORKERS: usize = 4;
/// Resources emptied at once within one namespace.
const PARALLEL_RESOURCES: usize = 4;

type Meta = PartialObjectMeta<DynamicObject>;

/// Why a pass over a namespace did not finish it.
#[derive(Debug, thiserror::Error)]
enum NsError {
    /// An API request failed.
    #[error(transparent)]
    Api(#[from] kube::Error),
    /// Content could not be deleted (the messages of each failure).
    #[error("failed to delete all resource types: {0}")]
    Content(String),
}

/// What a pass achieved.
enum Pass {
    /// The namespace is gone, not deleting, or released by this controller.
    Done,
    /// Content remains (it has finalizers to run): look again later.
    Remaining,
}

/// The namespace controller: reconciles namespaces that have a `deletionTimestamp`.
pub(crate) fn controller() -> ControllerDef {
    Controller::<Namespace>::new("namespace")
        .with_predicate(Predicate::new(|change: &Change<'_, Namespace>| {
            change.object().metadata.deletion_timestamp.is_some()
        }))
        // Short delays: objects left behind are usually waiting for a finalizer another
        // controller removes within moments, and every pass is a handful of in-process
        // requests.
        .backoff(Backoff {
            base: Duration::from_millis(20),
            max: Duration::from_secs(2),
        })
        .max_concurrent_reconciles(WORKERS)
        .build(reconcile, ())
}

/// One pass; content left behind, a conflict or a namespace gone meanwhile are retried with
/// the key's backoff without counting as errors, other failures are the runtime's to log and
/// retry.
async fn reconcile(ns: Arc<Namespace>, ctx: Arc<Context<()>>) -> Result<Action, NsError> {
    let name = ns.metadata.name.as_deref().unwrap_or_default();
    match sync(ctx.client(), name).await {
        Ok(Pass::Done) => Ok(Action::await_change()),
        Ok(Pass::Remaining) => Ok(Action::requeue_with_backoff()),
        Err(NsError::Api(e)) if util::is_status(&e, 409) || util::is_status(&e, 404) => {
            tracing::debug!(namespace = %name, error = %e, "namespace controller: will retry");
            Ok(Action::requeue_with_backoff())
        }
        Err(e) => Err(e),
    }
}

/// One pass over a namespace (upstream's `namespacedResourcesDeleter.Delete`).
async fn sync(client: &kube::Client, name: &str) -> Result<Pass, NsError> {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let Some(ns) = namespaces.get_opt(name).await? else {
        return Ok(Pass::Done);
    };
    if ns.metadata.deletion_timestamp.is_none() {
        return Ok(Pass::Done);
    }
    let phase = ns.status.as_ref().and_then(|s| s.phase.as_deref());
    if phase != Some("Terminating") {
        let patch = json!({"status": {"phase": "Terminating"}});
        namespaces
            .patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await?;
    }
    let finalizers = ns
        .spec
        .as_ref()
        .and_then(|s| s.finalizers.clone())
        .unwrap_or_default();
    if !finalizers.iter().any(|f| f == FINALIZER) {
        return Ok(Pass::Done);
    }
    let mut report = Report::default();
    let resources = match util::discover(client).await {
        Ok(r) => r,
        Err(e) => {
            report.discovery = Some(format!("Discovery failed: {e}"));
            report.write(&namespaces, &ns).await;
            return Err(e.into());
        }
    };
    let deletable: Vec<Served> = resources
        .into_iter()
        .filter(|r| r.namespaced && r.supports(verbs::DELETE))
        .collect();
    let results: Vec<_> = futures::stream::iter(deletable)
        .map(|res| async move {
            let outcome = empty_resource(client, &res, name).await;
            (res, outcome)
        })
        .buffer_unordered(PARALLEL_RESOURCES)
        .collect()
        .await;
    for (res, outcome) in results {
        match outcome {
            Ok(left) => report.add(&res, left),
            Err(e) => report.failures.push(e.to_string()),
        }
    }
    report.write(&namespaces, &ns).await;
    if !report.failures.is_empty() {
        let mut failures = report.failures.clone();
        failures.sort();
        return Err(NsError::Content(failures.join(", ")));
    }
    if !report.remaining.is_empty() {
        return Ok(Pass::Remaining);
    }
    finalize(&namespaces, name).await
}

/// What is left of one resource in the namespace.
#[derive(Default)]
struct Left {
    count: usize,
    finalizers: BTreeMap<String, usize>,
}

/// Deletes every object of `res` in `ns`; returns what is still there afterwards.
async fn empty_resource(client: &kube::Client, res: &Served, ns: &str) -> Result<Left, NsError> {
    let api: Api<Meta> = Api::namespaced_with(client.clone(), ns, &res.ar);
    // The namespace controller deletes generically: no orphaning default of the kind applies.
    let background = DeleteParams::background();
    let mut collected = false;
    if res.supports(verbs::DELETE_COLLECTION) {
        match api
            .delete_collection(&background, &ListParams::default())
            .await
        {
            Ok(_) => collected = true,
            Err(e) if util::is_status(&e, 404) || util::is_status(&e, 405) => {}
            Err(e) => return Err(e.into()),
        }
    }
    if !res.supports(verbs::LIST) {
        return Ok(Left::default());
    }
    let list = match api.list_metadata(&ListParams::default()).await {
        Ok(l) => l,
        Err(e) if util::is_status(&e, 404) || util::is_status(&e, 405) => {
            return Ok(Left::default());
        }
        Err(e) => return Err(e.into()),
    };
    if !collected {
        for item in &list.items {
            if item.metadata.deletion_timestamp.is_some() {
                continue;
            }
            let Some(name) = item.metadata.name.as_deref() else {
                continue;
            };
            match api.delete(name, &background).await {
                Ok(_) => {}
                Err(e) if util::is_status(&e, 404) || util::is_status(&e, 405) => {}
                Err(e) => return Err(e.into()),
            }
        }
    }
    let list = if collected {
        list
    } else {
        api.list_metadata(&ListParams::default()).await?
    };
    let mut left = Left {
        count: list.items.len(),
        ..Left::default()
    };
    for item in &list.items {
        for f in item.metadata.finalizers.as_deref().unwrap_or_default() {
            *left.finalizers.entry(f.clone()).or_default() += 1;
        }
    }
    Ok(left)
}

/// Removes this controller's entry from `spec.finalizers` through `finalize`.
async fn finalize(namespaces: &Api<Namespace>, name: &str) -> Result<Pass, NsError> {
    for _ in 0..8 {
        let Some(mut ns) = namespaces.get_opt(name).await? else {
            return Ok(Pass::Done);
        };
        let spec = ns.spec.get_or_insert_with(Default::default);
        let finalizers = spec.finalizers.take().unwrap_or_default();
        let kept: Vec<String> = finalizers.into_iter().filter(|f| f != FINALIZER).collect();
        spec.finalizers = Some(kept);
        match namespaces
            .replace_subresource("finalize", name, &PostParams::default(), &ns)
            .await
        {
            Ok(_) => return Ok(Pass::Done),
            Err(e) if util::is_status(&e, 404) => return Ok(Pass::Done),
            Err(e) if util::is_status(&e, 409) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Ok(Pass::Remaining)
}

/// One deletion condition: type, the problem (reason, message) if any, and the reason and
/// message upstream writes when there is none.
type ConditionSpec = (
    &'static str,
    Option<(&'static str, String)>,
    &'static str,
    &'static str,
);

/// The findings of one pass, turned into the namespace's deletion conditions.
#[derive(Default)]
struct Report {
    discovery: Option<String>,
    failures: Vec<String>,
    /// `resource.group` → objects left.
    remaining: BTreeMap<String, usize>,
    /// finalizer → objects holding it.
    finalizers: BTreeMap<String, usize>,
}

impl Report {
    fn add(&mut self, res: &Served, left: Left) {
        if left.count == 0 {
            return;
        }
        let key = format!("{}.{}", res.ar.plural, res.ar.group);
        *self.remaining.entry(key).or_default() += left.count;
        for (f, n) in left.finalizers {
            *self.finalizers.entry(f).or_default() += n;
        }
    }

    /// The five conditions, each `True` with the problem or `False` with upstream's "ok" text.
    fn conditions(&self) -> Vec<ConditionSpec> {
        let remaining = (!self.remaining.is_empty()).then(|| {
            let parts: Vec<String> = self
                .remaining
                .iter()
                .map(|(r, n)| format!("{r} has {n} resource instances"))
                .collect();
            (
                "SomeResourcesRemain",
                format!("Some resources are remaining: {}", parts.join(", ")),
            )
        });
        let finalizers = (!self.finalizers.is_empty()).then(|| {
            let parts: Vec<String> = self
                .finalizers
                .iter()
                .map(|(f, n)| format!("{f} in {n} resource instances"))
                .collect();
            (
                "SomeFinalizersRemain",
                format!(
                    "Some content in the namespace has finalizers remaining: {}",
                    parts.join(", ")
                ),
            )
        });
        let content = (!self.failures.is_empty()).then(|| {
            let mut msgs = self.failures.clone();
            msgs.sort();
            (
                "ContentDeletionFailed",
                format!(
                    "Failed to delete all resource types, {} remaining: {}",
                    msgs.len(),
                    msgs.join(", ")
                ),
            )
        });
        vec![
            (
                "NamespaceDeletionDiscoveryFailure",
                self.discovery.clone().map(|m| ("DiscoveryFailed", m)),
                "ResourcesDiscovered",
                "All resources successfully discovered",
            ),
            (
                "NamespaceDeletionGroupVersionParsingFailure",
                None,
                "ParsedGroupVersions",
                "All legacy kube types successfully parsed",
            ),
            (
                "NamespaceDeletionContentFailure",
                content,
                "ContentDeleted",
                "All content successfully deleted, may be waiting on finalization",
            ),
            (
                "NamespaceContentRemaining",
                remaining,
                "ContentRemoved",
                "All content successfully removed",
            ),
            (
                "NamespaceFinalizersRemaining",
                finalizers,
                "ContentHasNoFinalizers",
                "All content-preserving finalizers finished",
            ),
        ]
    }

    /// Merges the conditions into the namespace's status (only when something changed).
    async fn write(&self, namespaces: &Api<Namespace>, ns: &Namespace) {
        let Some(name) = ns.metadata.name.as_deref() else {
            return;
        };
        let mut conditions: Vec<NamespaceCondition> = ns
            .status
            .as_ref()
            .and_then(|s| s.conditions.clone())
            .unwrap_or_default();
        let now = Time(jiff::Timestamp::now());
        let mut changed = false;
        for (type_, problem, ok_reason, ok_message) in self.conditions() {
            let (status, reason, message) = match problem {
                Some((reason, message)) => ("True", reason, message),
                None => ("False", ok_reason, ok_message.to_string()),
            };
            match conditions.iter_mut().find(|c| c.type_ == type_) {
                Some(c) => {
                    if c.status != status
                        || c.reason.as_deref() != Some(reason)
                        || c.message.as_deref() != Some(message.as_str())
                    {
                        if c.status != status {
                            c.last_transition_time = Some(now.clone());
                        }
                        c.status = status.to_string();
                        c.reason = Some(reason.to_string());
                        c.message = Some(message);
                        changed = true;
                    }
                }
                None => {
                    conditions.push(NamespaceCondition {
                        type_: type_.to_string(),
                        status: status.to_string(),
                        reason: Some(reason.to_string()),
                        message: Some(message),
                        last_transition_time: Some(now.clone()),
                    });
                    changed = true;
                }
            }
        }
        if !changed {
            return;
        }
        let patch = json!({"status": {"conditions": conditions}});
        if let Err(e) = namespaces
            .patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            tracing::debug!(namespace = %name, error = %e, "namespace controller: could not write conditions");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::discovery::ApiResource;

    fn res(plural: &str, group: &str) -> Served {
        Served {
            ar: ApiResource {
                group: group.into(),
                version: "v1".into(),
                api_version: "v1".into(),
                kind: "X".into(),
                plural: plural.into(),
            },
            namespaced: true,
            verbs: vec![],
        }
    }

    #[test]
    fn remaining_content_and_finalizers_read_like_upstream() {
        let mut report = Report::default();
        let mut left = Left {
            count: 2,
            ..Left::default()
        };
        left.finalizers.insert("example.com/hold".into(), 1);
        report.add(&res("flighttickets", "flights.com"), left);
        report.add(&res("configmaps", ""), Left::default());
        let conditions = report.conditions();
        let remaining = conditions
            .iter()
            .find(|c| c.0 == "NamespaceContentRemaining")
            .and_then(|c| c.1.clone())
            .unwrap();
        assert_eq!(remaining.0, "SomeResourcesRemain");
        assert_eq!(
            remaining.1,
            "Some resources are remaining: flighttickets.flights.com has 2 resource instances"
        );
        let finalizers = conditions
            .iter()
            .find(|c| c.0 == "NamespaceFinalizersRemaining")
            .and_then(|c| c.1.clone())
            .unwrap();
        assert_eq!(
            finalizers.1,
            "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances"
        );
    }

    #[test]
    fn nothing_left_means_every_condition_is_false() {
        let report = Report::default();
        assert!(report.conditions().iter().all(|c| c.1.is_none()));
    }
}
