//! Namespaces: their life cycle (upstream's namespace registry and NamespaceLifecycle).
//!
//! The first delete of a namespace only marks it (`deletionTimestamp`, `status.phase:
//! Terminating`, the garbage collector's finalizers from the options); the namespace
//! controller empties it and removes the `kubernetes` finalizer through `finalize`, which
//! removes the namespace. Nothing new may be created in a namespace that is terminating, and
//! the namespaces every cluster starts with are never deleted.

use serde_json::{Value, json};

use super::{OnDelete, Strategy, Subresource};
use crate::api::Api;
use crate::endpoints::GcOptions;
use crate::error::{ApiError, ApiResult};
use crate::object;
use crate::registry::Resource;
use crate::request::{ObjectRef, Part};

/// Namespaces that can never be deleted (upstream's NamespaceLifecycle admission).
const IMMORTAL_NAMESPACES: [&str; 3] = ["default", "kube-system", "kube-public"];

/// core/v1 Namespaces.
pub(crate) struct Namespaces;

impl Strategy for Namespaces {
    fn initial_status(&self, _obj: &Value) -> Option<Value> {
        Some(json!({"phase": "Active"}))
    }

    fn prepare_create(&self, obj: &mut Value) -> ApiResult<()> {
        let name = Value::from(object::name(obj));
        let meta = object::meta_mut(obj);
        let labels = meta.entry("labels").or_insert_with(|| json!({}));
        if let Some(labels) = labels.as_object_mut() {
            labels.insert("kubernetes.io/metadata.name".into(), name);
        }
        if let Some(map) = obj.as_object_mut() {
            let spec = map.entry("spec").or_insert_with(|| json!({}));
            if let Some(spec) = spec.as_object_mut() {
                spec.insert("finalizers".into(), json!(["kubernetes"]));
            }
        }
        Ok(())
    }

    fn prepare_update(&self, part: Part, current: &Value, new: &mut Value) -> ApiResult<()> {
        if part == Part::Main {
            // Only the `finalize` subresource changes `spec.finalizers` (upstream's strategy).
            keep_finalizers(current, new);
        }
        Ok(())
    }

    fn subresource(&self, name: &str) -> Option<Subresource> {
        (name == "finalize").then_some(Subresource::Finalize)
    }

    fn check_delete(&self, res: &Resource, name: &str) -> ApiResult<()> {
        if IMMORTAL_NAMESPACES.contains(&name) {
            return Err(ApiError::forbidden(
                &res.group,
                &res.plural,
                name,
                "this namespace may not be deleted",
            ));
        }
        Ok(())
    }

    fn on_delete(&self, current: &Value, gc: &GcOptions) -> OnDelete {
        if object::is_deleting(current) {
            return if self.finalized(current) {
                OnDelete::Generic
            } else {
                OnDelete::Unchanged
            };
        }
        if self.finalized(current) && object::finalizers(current).is_empty() {
            // Nothing would ever finish it: remove it now rather than leave it terminating.
            return OnDelete::Generic;
        }
        let mut new = current.clone();
        let existing: Vec<String> = object::finalizers(current)
            .into_iter()
            .map(str::to_string)
            .collect();
        let finalizers = gc.namespace_finalizers(&existing);
        let meta = object::meta_mut(&mut new);
        meta.insert(
            "deletionTimestamp".into(),
            Value::from(object::now_rfc3339()),
        );
        if finalizers != existing {
            meta.insert("finalizers".into(), json!(finalizers));
        }
        if let Some(map) = new.as_object_mut()
            && let Some(status) = map
                .entry("status")
                .or_insert_with(|| json!({}))
                .as_object_mut()
        {
            status.insert("phase".into(), Value::from("Terminating"));
        }
        OnDelete::Mark(new)
    }

    fn finalized(&self, obj: &Value) -> bool {
        obj.pointer("/spec/finalizers")
            .and_then(Value::as_array)
            .is_none_or(Vec::is_empty)
    }

    fn delete_returns_object(&self) -> bool {
        true
    }
}

/// Keeps `spec.finalizers` of a namespace as stored.
fn keep_finalizers(current: &Value, desired: &mut Value) {
    let kept = current.pointer("/spec/finalizers").cloned();
    let Some(map) = desired.as_object_mut() else {
        return;
    };
    match kept {
        Some(f) => {
            if let Some(spec) = map
                .entry("spec")
                .or_insert_with(|| json!({}))
                .as_object_mut()
            {
                spec.insert("finalizers".into(), f);
            }
        }
        None => {
            if let Some(spec) = map.get_mut("spec").and_then(Value::as_object_mut) {
                spec.remove("finalizers");
            }
        }
    }
}

/// Checks the namespace of a new object of `res` exists and is not terminating (upstream's
/// NamespaceLifecycle).
pub(crate) fn check_namespace_open(
    api: &Api,
    res: &Resource,
    ns: Option<&str>,
    name: &str,
) -> ApiResult<()> {
    if !res.namespaced {
        return Ok(());
    }
    let Some(ns) = ns else {
        return Err(ApiError::bad_request(
            "the namespace of the object must be set",
        ));
    };
    let snapshot = api.registry.snapshot();
    let Some(namespaces) = snapshot.get("", "v1", "namespaces") else {
        return Err(ApiError::internal("namespaces are not registered"));
    };
    let target = ObjectRef {
        res: namespaces,
        ns: None,
        name: ns,
    };
    let Some(entry) = api.storage.get(target) else {
        return Err(ApiError::not_found("", "namespaces", ns));
    };
    if terminating(&entry.value) {
        return Err(ApiError::forbidden(
            &res.group,
            &res.plural,
            name,
            format!(
                "unable to create new content in namespace {ns} because it is being terminated"
            ),
        ));
    }
    Ok(())
}

/// Whether a stored namespace is being deleted. Read on every create of a namespaced object,
/// so only the two fields that say so are decoded.
fn terminating(stored: &[u8]) -> bool {
    #[derive(serde::Deserialize, Default)]
    #[serde(default)]
    struct Meta {
        #[serde(rename = "deletionTimestamp")]
        deletion_timestamp: Option<serde::de::IgnoredAny>,
    }
    #[derive(serde::Deserialize, Default)]
    #[serde(default)]
    struct Status {
        phase: Option<String>,
    }
    #[derive(serde::Deserialize, Default)]
    #[serde(default)]
    struct Namespace {
        metadata: Meta,
        status: Status,
    }
    match serde_json::from_slice::<Namespace>(stored) {
        Ok(ns) => {
            ns.metadata.deletion_timestamp.is_some()
                || ns.status.phase.as_deref() == Some("Terminating")
        }
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::terminating;

    #[test]
    fn a_namespace_is_terminating_when_deleted_or_in_the_terminating_phase() {
        assert!(!terminating(
            br#"{"metadata":{"name":"a"},"status":{"phase":"Active"}}"#
        ));
        assert!(terminating(
            br#"{"metadata":{"name":"a","deletionTimestamp":"2026-11-26T00:00:00Z"}}"#
        ));
        assert!(terminating(
            br#"{"metadata":{"name":"a"},"status":{"phase":"Terminating"}}"#
        ));
        assert!(!terminating(
            br#"{"metadata":{"name":"a","deletionTimestamp":null}}"#
        ));
    }
}
