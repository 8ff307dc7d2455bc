//! Finalizers inside a reconcile function.
//!
//! A finalizer lets a controller clean up (external resources, other namespaces) before its
//! object disappears. Declare it once on the controller ([`Controller::finalizer`]) and call
//! [`Context::finalize`] in the reconcile; [`finalize`], which it calls, does the bookkeeping
//! around the operator's code, like
//! kube-runtime's `finalizer` but returning the reconcile's [`Action`] so it fits in any
//! reconcile body:
//!
//! 1. not being deleted and the finalizer is missing → add it, return `await_change` (the
//!    update triggers the next reconcile);
//! 2. not being deleted → run `Event::Apply`;
//! 3. being deleted and the finalizer present → run `Event::Cleanup`; on success remove the
//!    finalizer (the API server then deletes the object). The cached copy can be stale: when
//!    the object is already gone (404 on the removal), that counts as removed — cleanup code
//!    therefore runs at least once, not exactly once, and must be idempotent;
//! 4. being deleted without the finalizer → nothing to do.
//!
//! Finalizer lists are written with a merge patch that carries the object's
//! `resourceVersion`, so a concurrent change fails with a conflict (and is retried) instead
//! of dropping someone else's finalizer.

use std::future::Future;
use std::sync::Arc;

use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams};
use kube::{Client, Resource, ResourceExt};
use serde_json::json;

use crate::controller::Action;
use crate::informer::Object;
#[cfg(doc)]
use crate::{Context, Controller};

/// What the operator's code is asked to do.
#[derive(Debug)]
pub enum Event<K> {
    /// The object is live: reconcile it.
    Apply(Arc<K>),
    /// The object is being deleted: clean up, then the finalizer is removed.
    Cleanup(Arc<K>),
}

/// Why [`finalize`] failed.
#[derive(Debug, thiserror::Error)]
pub enum FinalizerError<E: std::error::Error + 'static> {
    /// The `Apply` branch failed.
    #[error("apply failed: {0}")]
    Apply(#[source] E),
    /// The `Cleanup` branch failed (the finalizer stays).
    #[error("cleanup failed: {0}")]
    Cleanup(#[source] E),
    /// Adding the finalizer failed.
    #[error("failed to add finalizer: {0}")]
    Add(#[source] kube::Error),
    /// Removing the finalizer failed.
    #[error("failed to remove finalizer: {0}")]
    Remove(#[source] kube::Error),
    /// The object has no name.
    #[error("object has no name")]
    Unnamed,
    /// [`Context::finalize`](crate::Context::finalize) was called by a controller that
    /// declared no finalizer.
    #[error("controller {0} declared no finalizer: add .finalizer(\"example.com/cleanup\") to it")]
    Undeclared(String),
}

async fn write_finalizers<K: Resource>(
    client: &Client,
    resource: &ApiResource,
    obj: &K,
    finalizers: Vec<String>,
) -> Result<(), kube::Error> {
    let api: Api<DynamicObject> = match obj.meta().namespace.as_deref() {
        Some(ns) => Api::namespaced_with(client.clone(), ns, resource),
        None => Api::all_with(client.clone(), resource),
    };
    let patch = json!({
        "metadata": {
            "finalizers": finalizers,
            "resourceVersion": obj.resource_version(),
        }
    });
    api.patch(
        &obj.name_any(),
        &PatchParams::default(),
        &Patch::Merge(&patch),
    )
    .await
    .map(|_| ())
}

/// Runs `f` under finalizer `name` for `obj` (see the module docs for the four cases).
pub async fn finalize<K, F, Fut, E>(
    client: &Client,
    name: &str,
    obj: Arc<K>,
    f: F,
) -> Result<Action, FinalizerError<E>>
where
    K: Object,
    F: FnOnce(Event<K>) -> Fut,
    Fut: Future<Output = Result<Action, E>>,
    E: std::error::Error + 'static,
{
    finalize_in(client, &ApiResource::erase::<K>(&()), name, obj, f).await
}

/// As [`finalize`], for an object whose kind is `resource` — a kind learned at run time
/// (a [`DynamicObject`]).
pub async fn finalize_in<K, F, Fut, E>(
    client: &Client,
    resource: &ApiResource,
    name: &str,
    obj: Arc<K>,
    f: F,
) -> Result<Action, FinalizerError<E>>
where
    K: Resource,
    F: FnOnce(Event<K>) -> Fut,
    Fut: Future<Output = Result<Action, E>>,
    E: std::error::Error + 'static,
{
    if obj.meta().name.is_none() {
        return Err(FinalizerError::Unnamed);
    }
    let has = obj.finalizers().iter().any(|f| f == name);
    match (obj.meta().deletion_timestamp.is_some(), has) {
        (false, false) => {
            let mut list = obj.finalizers().to_vec();
            list.push(name.to_string());
            write_finalizers(client, resource, obj.as_ref(), list)
                .await
                .map_err(FinalizerError::Add)?;
            Ok(Action::await_change())
        }
        (false, true) => f(Event::Apply(obj)).await.map_err(FinalizerError::Apply),
        (true, true) => {
            let action = f(Event::Cleanup(obj.clone()))
                .await
                .map_err(FinalizerError::Cleanup)?;
            let list: Vec<String> = obj
                .finalizers()
                .iter()
                .filter(|f| *f != name)
                .cloned()
                .collect();
            match write_finalizers(client, resource, obj.as_ref(), list).await {
                Ok(()) => Ok(action),
                // A reconcile of a stale cached copy (the object already went when an earlier
                // cleanup removed the finalizer): nothing is left to remove.
                Err(kube::Error::Api(status)) if status.code == 404 => Ok(action),
                Err(e) => Err(FinalizerError::Remove(e)),
            }
        }
        (true, false) => Ok(Action::await_change()),
    }
}
