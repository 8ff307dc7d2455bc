//! Rendered objects as JSON, and the cluster access the tasks share: every kind a package
//! renders is known only at run time, so objects are `serde_json` values resolved through
//! discovery, written with server-side apply and read back as they are stored.
//!
//! KUDO patched objects with a three-way merge against a `kudo.dev/last-applied-configuration`
//! annotation. opkit applies them server-side with the field manager [`FIELD_MANAGER`]
//! (forcing conflicts): the server keeps what the manager last applied (managed fields), so a
//! field dropped from a template is removed and fields others set are kept — the same outcome
//! as KUDO's merge, without the annotation.

use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams,
    PropagationPolicy,
};
use serde_json::Value as Json;

use crate::task::TaskError;

/// The field manager of every object the tasks write.
pub(crate) const FIELD_MANAGER: &str = "kudo-manager";

/// A text field of an object (`""` when absent).
pub(crate) fn text<'a>(obj: &'a Json, pointer: &str) -> &'a str {
    obj.pointer(pointer).and_then(Json::as_str).unwrap_or("")
}

/// `apiVersion`, split into group and version.
pub(crate) fn group_version(obj: &Json) -> (&str, &str) {
    let av = text(obj, "/apiVersion");
    av.rsplit_once('/').unwrap_or(("", av))
}

/// `Kind namespace/name` (or `Kind name`), for messages.
pub(crate) fn describe(obj: &Json) -> String {
    let ns = text(obj, "/metadata/namespace");
    let name = text(obj, "/metadata/name");
    let kind = text(obj, "/kind");
    if ns.is_empty() {
        format!("{kind} {name}")
    } else {
        format!("{kind} {ns}/{name}")
    }
}

/// Sets `value` at `path`, creating the maps on the way.
pub(crate) fn set_path(obj: &mut Json, path: &[&str], value: Json) {
    let mut cur = obj;
    for (i, key) in path.iter().enumerate() {
        if !cur.is_object() {
            *cur = Json::Object(Default::default());
        }
        let Some(map) = cur.as_object_mut() else {
            return;
        };
        if i + 1 == path.len() {
            map.insert(key.to_string(), value);
            return;
        }
        cur = map
            .entry(key.to_string())
            .or_insert_with(|| Json::Object(Default::default()));
    }
}

/// Where an object lives on the cluster.
#[derive(Clone)]
pub(crate) struct Placed {
    /// Its kind's resource.
    pub ar: ApiResource,
    /// Whether the kind is namespaced.
    pub namespaced: bool,
}

/// The resource of the object's kind, by discovery; `None` when the server does not serve it.
pub(crate) async fn resolve(
    client: &kube::Client,
    obj: &Json,
) -> Result<Option<Placed>, TaskError> {
    let (group, version) = group_version(obj);
    let gvk = GroupVersionKind::gvk(group, version, text(obj, "/kind"));
    match kube::discovery::pinned_kind(client, &gvk).await {
        Ok((ar, caps)) => Ok(Some(Placed {
            ar,
            namespaced: caps.scope == kube::discovery::Scope::Namespaced,
        })),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(None),
        Err(kube::Error::Discovery(_)) => Ok(None),
        Err(e) => Err(TaskError::Transient(format!(
            "failed to discover {}/{}: {e}",
            text(obj, "/apiVersion"),
            text(obj, "/kind")
        ))),
    }
}

/// The resource of the object's kind, or a transient error saying the server lacks it (a CRD
/// an earlier step installs may not be established yet).
pub(crate) async fn require(client: &kube::Client, obj: &Json) -> Result<Placed, TaskError> {
    resolve(client, obj).await?.ok_or_else(|| {
        TaskError::Transient(format!(
            "no matches for kind \"{}\" in version \"{}\" ({})",
            text(obj, "/kind"),
            text(obj, "/apiVersion"),
            describe(obj)
        ))
    })
}

/// The API of an object's kind in its namespace.
pub(crate) fn api_for(client: &kube::Client, placed: &Placed, obj: &Json) -> Api<DynamicObject> {
    let ns = text(obj, "/metadata/namespace");
    if placed.namespaced && !ns.is_empty() {
        Api::namespaced_with(client.clone(), ns, &placed.ar)
    } else {
        Api::all_with(client.clone(), &placed.ar)
    }
}

fn api_error(action: &str, obj: &Json, e: kube::Error) -> TaskError {
    let msg = format!("failed to {action} {}: {e}", describe(obj));
    match &e {
        // The server refuses the object itself: only a change to the package helps.
        kube::Error::Api(s) if s.code == 422 || s.code == 400 => TaskError::Fatal(msg),
        _ => TaskError::Transient(msg),
    }
}

/// Server-side applies the object; returns it as stored.
pub(crate) async fn apply(
    client: &kube::Client,
    placed: &Placed,
    obj: &Json,
) -> Result<Json, TaskError> {
    let api = api_for(client, placed, obj);
    let params = PatchParams::apply(FIELD_MANAGER).force();
    let stored = api
        .patch(text(obj, "/metadata/name"), &params, &Patch::Apply(obj))
        .await
        .map_err(|e| api_error("apply", obj, e))?;
    serde_json::to_value(stored).map_err(|e| TaskError::Transient(e.to_string()))
}

/// The live object, if any.
pub(crate) async fn get(
    client: &kube::Client,
    placed: &Placed,
    obj: &Json,
) -> Result<Option<Json>, TaskError> {
    let api = api_for(client, placed, obj);
    match api.get_opt(text(obj, "/metadata/name")).await {
        Ok(o) => Ok(o.and_then(|o| serde_json::to_value(o).ok())),
        Err(e) => Err(api_error("get", obj, e)),
    }
}

/// Deletes the object with foreground propagation, as KUDO; an absent object is fine.
pub(crate) async fn delete(
    client: &kube::Client,
    placed: &Placed,
    obj: &Json,
) -> Result<(), TaskError> {
    let api = api_for(client, placed, obj);
    let params = DeleteParams {
        propagation_policy: Some(PropagationPolicy::Foreground),
        ..DeleteParams::default()
    };
    match api.delete(text(obj, "/metadata/name"), &params).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(e) => Err(api_error("delete", obj, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn set_path_creates_maps_and_describe_names_the_object() {
        let mut o = json!({"kind": "ConfigMap", "metadata": {"name": "a"}});
        set_path(&mut o, &["metadata", "labels", "x"], json!("y"));
        assert_eq!(o["metadata"]["labels"]["x"], "y");
        assert_eq!(describe(&o), "ConfigMap a");
        set_path(&mut o, &["metadata", "namespace"], json!("ns"));
        assert_eq!(describe(&o), "ConfigMap ns/a");
        assert_eq!(
            group_version(&json!({"apiVersion": "apps/v1"})),
            ("apps", "v1")
        );
        assert_eq!(group_version(&json!({"apiVersion": "v1"})), ("", "v1"));
    }
}
