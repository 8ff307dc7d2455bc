//! Cluster-scoped objects an instance created, removed on uninstall (KUDO leaked them: a
//! cluster-scoped object cannot be owned by a namespaced Instance, so the garbage collector
//! never removes it).
//!
//! Each such object carries `kudo.dev/instance=<name>`, `heritage=kudo` and
//! `kudo.opkit.dev/instance-namespace=<namespace>` ([`crate::enhance`]); the kinds are
//! recorded in the instance's annotation [`KINDS_ANNOTATION`] (`apiVersion/Kind` joined by
//! `,`) when a task first applies one. On uninstall the manager calls [`remove`] until it
//! reports [`Progress::Done`].

use std::collections::BTreeSet;

use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams};
use serde_json::{Value as Json, json};

use crate::api::Instance;
use crate::enhance::{HERITAGE_LABEL, INSTANCE_LABEL, INSTANCE_NAMESPACE_LABEL};
use crate::object::{self, text};
use crate::task::{Progress, TaskError};

/// The instance annotation listing the cluster-scoped kinds it created.
pub(crate) const KINDS_ANNOTATION: &str = "kudo.opkit.dev/cluster-scoped-kinds";

/// The kinds recorded on the instance.
pub(crate) fn recorded(instance: &Instance) -> BTreeSet<String> {
    instance
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(KINDS_ANNOTATION))
        .map(|v| {
            v.split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// `apiVersion/Kind` of an object.
pub(crate) fn kind_key(obj: &Json) -> String {
    format!("{}/{}", text(obj, "/apiVersion"), text(obj, "/kind"))
}

/// Records `kinds` on the instance when some are new. The live instance is read and
/// patched with its `resourceVersion`, so two tasks recording at once cannot lose each
/// other's kinds (the loser gets a conflict, a transient error, and records on its retry).
pub(crate) async fn record(
    client: &kube::Client,
    instance: &Instance,
    kinds: &BTreeSet<String>,
) -> Result<(), TaskError> {
    if kinds.is_subset(&recorded(instance)) {
        return Ok(());
    }
    let failed = |e: kube::Error| {
        TaskError::Transient(format!(
            "failed to record the cluster-scoped kinds on the instance: {e}"
        ))
    };
    let api: Api<Instance> = Api::namespaced(
        client.clone(),
        instance.metadata.namespace.as_deref().unwrap_or_default(),
    );
    let name = instance.metadata.name.as_deref().unwrap_or_default();
    let live = api.get(name).await.map_err(failed)?;
    let known = recorded(&live);
    if kinds.is_subset(&known) {
        return Ok(());
    }
    let all: Vec<String> = known.union(kinds).cloned().collect();
    let patch = json!({"metadata": {
        "resourceVersion": live.metadata.resource_version,
        "annotations": {KINDS_ANNOTATION: all.join(",")},
    }});
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(failed)?;
    Ok(())
}

/// The label selector of the instance's cluster-scoped objects.
pub(crate) fn selector(instance: &Instance) -> String {
    format!(
        "{INSTANCE_LABEL}={},{HERITAGE_LABEL}=kudo,{INSTANCE_NAMESPACE_LABEL}={}",
        instance.metadata.name.as_deref().unwrap_or_default(),
        instance.metadata.namespace.as_deref().unwrap_or_default()
    )
}

/// Deletes the instance's cluster-scoped objects; `Waiting` while some still exist.
pub(crate) async fn remove(
    client: &kube::Client,
    instance: &Instance,
) -> Result<Progress, TaskError> {
    let params = ListParams::default().labels(&selector(instance));
    let mut left = Vec::new();
    for key in recorded(instance) {
        let Some((api_version, kind)) = key.rsplit_once('/') else {
            continue;
        };
        let probe = json!({"apiVersion": api_version, "kind": kind});
        // A kind no longer served (its CRD is gone) has no objects left.
        let Some(placed) = object::resolve(client, &probe).await? else {
            continue;
        };
        let api = object::api_for(client, &placed, &probe);
        let list = api.list(&params).await.map_err(|e| {
            TaskError::Transient(format!("failed to list {kind} of the instance: {e}"))
        })?;
        for o in list.items {
            let name = o.metadata.name.clone().unwrap_or_default();
            if o.metadata.deletion_timestamp.is_none() {
                match api.delete(&name, &DeleteParams::background()).await {
                    Ok(_) => {}
                    Err(kube::Error::Api(s)) if s.code == 404 => continue,
                    Err(e) => {
                        return Err(TaskError::Transient(format!(
                            "failed to delete {kind} {name}: {e}"
                        )));
                    }
                }
            }
            left.push(format!("{kind} {name}"));
        }
    }
    if left.is_empty() {
        Ok(Progress::Done)
    } else {
        Ok(Progress::Waiting(format!(
            "waiting for cluster-scoped objects to be deleted: {}",
            left.join(", ")
        )))
    }
}
