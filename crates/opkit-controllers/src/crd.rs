//! The CRD controllers of apiextensions-apiserver, in one: establishing and cleanup.
//!
//! Why here and not in the API server's write path: the server serves a CRD's resources as
//! soon as the CRD is stored, and keeps its write path free of writes of its own. Publishing
//! that fact in the CRD's status (`NamesAccepted`, `Established`, `acceptedNames`,
//! `storedVersions`, which clients such as `kubectl wait --for condition=established` and
//! kube-rs' `await_condition` watch) and, when a CRD is deleted, removing every custom
//! resource of it (their own finalizers respected) before releasing the
//! `customresourcecleanup.apiextensions.k8s.io` finalizer is a controller's job — upstream
//! runs both as controllers too. This one always runs, even in a bare control plane: a CRD
//! that never becomes established is not a Kubernetes API server's behaviour.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams};
use opkit::workqueue::Backoff;
use opkit::{Action, Context, Controller, ControllerDef};
use serde_json::{Value, json};

use crate::util;

/// The finalizer that holds a deleted CRD until its objects are gone.
const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

/// The CRD controller.
pub(crate) fn controller() -> ControllerDef {
    Controller::<CustomResourceDefinition>::new("customresourcedefinition")
        // Objects left behind usually wait for a finalizer another controller removes soon.
        .backoff(Backoff {
            base: Duration::from_millis(20),
            max: Duration::from_secs(2),
        })
        .build(reconcile, ())
}

async fn reconcile(
    crd: Arc<CustomResourceDefinition>,
    ctx: Arc<Context<()>>,
) -> Result<Action, kube::Error> {
    let name = crd.metadata.name.clone().unwrap_or_default();
    let crds: Api<CustomResourceDefinition> = Api::all(ctx.client().clone());
    let deleting = crd.metadata.deletion_timestamp.is_some();
    let current = serde_json::to_value(&crd.status).unwrap_or(Value::Null);
    let desired = desired_status(&crd, &current, deleting);
    if current != desired {
        let patch = json!({"status": desired});
        match crds
            .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => {}
            Err(e) if util::is_status(&e, 404) => return Ok(Action::await_change()),
            Err(e) => return Err(e),
        }
    }
    let finalizers = crd.metadata.finalizers.clone().unwrap_or_default();
    if !deleting || !finalizers.iter().any(|f| f == CLEANUP_FINALIZER) {
        return Ok(Action::await_change());
    }
    if remove_instances(ctx.client(), &crd).await? > 0 {
        return Ok(Action::requeue_with_backoff());
    }
    let kept: Vec<&String> = finalizers
        .iter()
        .filter(|f| *f != CLEANUP_FINALIZER)
        .collect();
    // The resourceVersion makes the patch fail (409) if the finalizers changed meanwhile.
    let release = json!({"metadata": {
        "finalizers": kept,
        "resourceVersion": crd.metadata.resource_version,
    }});
    match crds
        .patch(&name, &PatchParams::default(), &Patch::Merge(&release))
        .await
    {
        Ok(_) => Ok(Action::await_change()),
        Err(e) if util::is_status(&e, 404) => Ok(Action::await_change()),
        Err(e) if util::is_status(&e, 409) => Ok(Action::requeue_with_backoff()),
        Err(e) => Err(e),
    }
}

/// Deletes every custom resource of a CRD that is not being deleted already; returns how many
/// still exist.
async fn remove_instances(
    client: &kube::Client,
    crd: &CustomResourceDefinition,
) -> Result<usize, kube::Error> {
    let Some(version) = crd.spec.versions.iter().find(|v| v.served) else {
        return Ok(0);
    };
    let resource = ApiResource {
        group: crd.spec.group.clone(),
        version: version.name.clone(),
        api_version: format!("{}/{}", crd.spec.group, version.name),
        kind: crd.spec.names.kind.clone(),
        plural: crd.spec.names.plural.clone(),
    };
    let all: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
    let objects = match all.list(&ListParams::default()).await {
        Ok(list) => list.items,
        Err(e) if util::is_status(&e, 404) => return Ok(0),
        Err(e) => return Err(e),
    };
    let remaining = objects.len();
    for object in objects {
        if object.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let name = object.metadata.name.clone().unwrap_or_default();
        let api: Api<DynamicObject> = match &object.metadata.namespace {
            Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
            None => Api::all_with(client.clone(), &resource),
        };
        match api.delete(&name, &DeleteParams::default()).await {
            Ok(_) => {}
            Err(e) if util::is_status(&e, 404) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(remaining)
}

/// The status a CRD should have: its names accepted, established, terminating while it is
/// being deleted, and its storage version among the stored ones. A condition keeps its
/// `lastTransitionTime` while its status does not change.
fn desired_status(crd: &CustomResourceDefinition, current: &Value, deleting: bool) -> Value {
    let existing: Vec<Value> = current
        .get("conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let now = jiff::Timestamp::now()
        .round(jiff::Unit::Second)
        .unwrap_or_else(|_| jiff::Timestamp::now());
    let condition = |type_: &str, reason: &str, message: &str| -> Value {
        let previous = existing
            .iter()
            .find(|c| c.get("type").and_then(Value::as_str) == Some(type_));
        let time = previous
            .filter(|p| p.get("status").and_then(Value::as_str) == Some("True"))
            .and_then(|p| p.get("lastTransitionTime").cloned())
            .unwrap_or_else(|| json!(now.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()));
        json!({"type": type_, "status": "True", "lastTransitionTime": time, "reason": reason, "message": message})
    };
    let mut conditions = vec![
        condition("NamesAccepted", "NoConflicts", "no conflicts found"),
        condition(
            "Established",
            "InitialNamesAccepted",
            "the initial names have been accepted",
        ),
    ];
    if deleting {
        conditions.push(condition(
            "Terminating",
            "InstanceDeletionInProgress",
            "CustomResource deletion is in progress",
        ));
    }
    let mut stored: Vec<Value> = current
        .get("storedVersions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if let Some(storage) = crd.spec.versions.iter().find(|v| v.storage) {
        let storage = json!(storage.name);
        if !stored.contains(&storage) {
            stored.push(storage);
        }
    }
    let names = serde_json::to_value(&crd.spec.names).unwrap_or_else(|_| json!({}));
    json!({"acceptedNames": names, "conditions": conditions, "storedVersions": stored})
}
