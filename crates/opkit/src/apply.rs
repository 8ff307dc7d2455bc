//! Writing owned objects and status, and installing the CRDs a controller serves.
//!
//! Operators should converge children with server-side apply: the same desired object is
//! sent on every reconcile, the API server merges it and records the controller as the field
//! manager, and nothing changes (no new resourceVersion) when nothing differs — which keeps
//! watches quiet and reconciles idempotent. [`apply_owned`] sets the controller owner
//! reference (`controller: true`, `blockOwnerDeletion: true`) so the garbage collector removes
//! the child with its owner and `owns` maps child changes back to the owner.
//!
//! The helpers work for namespaced and cluster-scoped kinds alike: they go through
//! [`DynamicObject`] with the kind's [`ApiResource`], so no scope bound is needed.

use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams};
use kube::{Client, ResourceExt};
use serde::Serialize;
use serde_json::json;

use crate::error::{Error, Result};
use crate::informer::Object;

/// The `Api` for objects of kind `K` in `namespace` (cluster-wide when `None`).
pub fn dynamic_api<K: Object>(client: &Client, namespace: Option<&str>) -> Api<DynamicObject> {
    let ar = ApiResource::erase::<K>(&());
    match namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &ar),
        None => Api::all_with(client.clone(), &ar),
    }
}

fn convert<K: Object>(obj: DynamicObject) -> Result<K> {
    Ok(serde_json::from_value(serde_json::to_value(obj)?)?)
}

/// Server-side applies `child` (forcing conflicts, as controllers should) as `field_manager`,
/// with a controller owner reference to `owner`. A namespaced child without a namespace gets
/// the owner's. Returns the object as stored.
pub async fn apply_owned<O: Object, C: Object>(
    client: &Client,
    field_manager: &str,
    owner: &O,
    mut child: C,
) -> Result<C> {
    let mut reference = owner
        .controller_owner_ref(&())
        .ok_or(Error::MissingMetadata("name or uid on the owner"))?;
    reference.block_owner_deletion = Some(true);
    let refs = child
        .meta_mut()
        .owner_references
        .get_or_insert_with(Vec::new);
    refs.retain(|r| r.uid != reference.uid);
    refs.push(reference);
    if child.meta().namespace.is_none() && crate::informer::is_namespaced::<C>() {
        child.meta_mut().namespace = owner.namespace();
    }
    apply(client, field_manager, child).await
}

/// Server-side applies `obj` (forcing conflicts) as `field_manager`.
pub async fn apply<K: Object>(client: &Client, field_manager: &str, obj: K) -> Result<K> {
    let name = obj
        .meta()
        .name
        .clone()
        .ok_or(Error::MissingMetadata("name"))?;
    let api = dynamic_api::<K>(client, obj.meta().namespace.as_deref());
    let mut body = serde_json::to_value(&obj)?;
    if let Some(map) = body.as_object_mut() {
        map.insert("apiVersion".into(), json!(K::api_version(&())));
        map.insert("kind".into(), json!(K::kind(&())));
        if let Some(meta) = map.get_mut("metadata").and_then(|m| m.as_object_mut()) {
            // Server-managed fields must not be part of an apply configuration.
            for f in [
                "resourceVersion",
                "managedFields",
                "uid",
                "creationTimestamp",
                "generation",
            ] {
                meta.remove(f);
            }
        }
    }
    let params = PatchParams::apply(field_manager).force();
    let stored = api.patch(&name, &params, &Patch::Apply(&body)).await?;
    convert(stored)
}

/// Merge-patches `{"status": status}` on the `/status` subresource of `obj`.
pub async fn patch_status<K: Object, S: Serialize>(
    client: &Client,
    obj: &K,
    status: &S,
) -> Result<K> {
    let name = obj
        .meta()
        .name
        .clone()
        .ok_or(Error::MissingMetadata("name"))?;
    let api = dynamic_api::<K>(client, obj.meta().namespace.as_deref());
    let patch = json!({ "status": status });
    let stored = api
        .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    convert(stored)
}

/// Server-side applies `{"status": status}` on the `/status` subresource of `obj` as
/// `field_manager` (forcing conflicts).
pub async fn apply_status<K: Object, S: Serialize>(
    client: &Client,
    field_manager: &str,
    obj: &K,
    status: &S,
) -> Result<K> {
    let name = obj
        .meta()
        .name
        .clone()
        .ok_or(Error::MissingMetadata("name"))?;
    let api = dynamic_api::<K>(client, obj.meta().namespace.as_deref());
    let patch = json!({
        "apiVersion": K::api_version(&()),
        "kind": K::kind(&()),
        "metadata": {"name": name},
        "status": status,
    });
    let params = PatchParams::apply(field_manager).force();
    let stored = api
        .patch_status(&name, &params, &Patch::Apply(&patch))
        .await?;
    convert(stored)
}

/// Why a CRD could not be installed.
#[derive(Debug, thiserror::Error)]
pub enum CrdError {
    /// Applying it failed.
    #[error("cannot install the CRD {name}: {source}")]
    Apply {
        /// The CRD.
        name: String,
        /// Why.
        source: kube::Error,
    },
    /// Watching it for its `Established` condition failed.
    #[error("cannot watch the CRD {name}: {source}")]
    Wait {
        /// The CRD.
        name: String,
        /// Why.
        source: kube::runtime::wait::Error,
    },
    /// It was not established in time.
    #[error("the CRD {name} was not established within {CRD_TIMEOUT:?}")]
    NotEstablished {
        /// The CRD.
        name: String,
    },
}

/// How long a CRD may take to be established.
const CRD_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// Server-side applies `crd` as `field_manager` and waits until it is established (what a
/// controller that serves its own CRDs does when it starts).
pub async fn install_crd(
    client: &kube::Client,
    crd: &k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
    field_manager: &str,
) -> Result<(), CrdError> {
    use kube::api::{Api, Patch, PatchParams};
    use kube::runtime::wait::{await_condition, conditions::is_crd_established};
    let name = kube::ResourceExt::name_any(crd);
    let api: Api<_> = Api::all(client.clone());
    api.patch(
        &name,
        &PatchParams::apply(field_manager).force(),
        &Patch::Apply(crd),
    )
    .await
    .map_err(|source| CrdError::Apply {
        name: name.clone(),
        source,
    })?;
    tokio::time::timeout(
        CRD_TIMEOUT,
        await_condition(api, &name, is_crd_established()),
    )
    .await
    .map_err(|_| CrdError::NotEstablished { name: name.clone() })?
    .map_err(|source| CrdError::Wait { name, source })?;
    Ok(())
}
