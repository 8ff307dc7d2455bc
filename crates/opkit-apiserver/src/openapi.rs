//! OpenAPI v3 documents: `/openapi/v3` (the index) and `/openapi/v3/{api|apis/G}/V`.
//!
//! kubectl reads them before `create -f` and `apply`: it looks for the PATCH operation of the
//! object's group-version-kind and checks it accepts `fieldValidation`, then lets the server
//! validate (`fieldValidation=Strict`). Each document lists every resource path with its
//! operations, tagged with `x-kubernetes-group-version-kind`, and carries the schemas of custom
//! resources (from their CRD version's `openAPIV3Schema`).

use serde_json::{Map, Value, json};

use crate::registry::{Resource, Snapshot};

fn gv_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

/// The `/openapi/v3` index.
pub fn index(snapshot: &Snapshot) -> Value {
    let mut paths = Map::new();
    for (group, versions) in snapshot.groups() {
        for v in versions {
            let path = gv_path(group, v);
            paths.insert(
                path.clone(),
                json!({"serverRelativeURL": format!("/openapi/v3/{path}?hash={:016X}", snapshot.generation)}),
            );
        }
    }
    json!({"paths": paths})
}

/// The schema name upstream gives a kind: `io.k8s.api.core.v1.ConfigMap` for built-ins,
/// the reversed group for custom resources (`com.flights.v1.FlightTicket`).
pub fn schema_name(res: &Resource) -> String {
    if res.is_custom() {
        let reversed: Vec<&str> = res.group.split('.').rev().collect();
        format!("{}.{}.{}", reversed.join("."), res.version, res.kind)
    } else {
        // Upstream's Go package names: the first label of the group (`rbac.authorization.k8s.io` → `rbac`).
        let group = match res.group.as_str() {
            "" => "core",
            g => g.split('.').next().unwrap_or(g),
        };
        let prefix = if res.group == "apiextensions.k8s.io" {
            "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions".to_string()
        } else {
            format!("io.k8s.api.{group}")
        };
        format!("{prefix}.{}.{}", res.version, res.kind)
    }
}

fn param(name: &str, in_: &str, required: bool) -> Value {
    json!({"name": name, "in": in_, "required": required, "schema": {"type": "string", "uniqueItems": true}})
}

fn operation(res: &Resource, action: &str, id: &str, with_name: bool, write: bool) -> Value {
    let mut params = Vec::new();
    if res.namespaced {
        params.push(param("namespace", "path", true));
    }
    if with_name {
        params.push(param("name", "path", true));
    }
    if write {
        params.push(param("dryRun", "query", false));
        params.push(param("fieldManager", "query", false));
        params.push(param("fieldValidation", "query", false));
    }
    let gvk = json!({"group": res.group, "version": res.version, "kind": res.kind});
    let reference = json!({"$ref": format!("#/components/schemas/{}", schema_name(res))});
    json!({
        "operationId": id,
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": gvk,
        "parameters": params,
        "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": reference}}}},
    })
}

fn resource_paths(res: &Resource, paths: &mut Map<String, Value>) {
    let base = format!("/{}", gv_path(&res.group, &res.version));
    let scope = if res.namespaced {
        "/namespaces/{namespace}"
    } else {
        ""
    };
    let collection = format!("{base}{scope}/{}", res.plural);
    let item = format!("{collection}/{{name}}");
    let id = |verb: &str| format!("{verb}{}", res.kind);
    paths.insert(
        collection,
        json!({
            "get": operation(res, "list", &id("list"), false, false),
            "post": operation(res, "post", &id("create"), false, true),
            "delete": operation(res, "deletecollection", &id("deletecollection"), false, false),
        }),
    );
    paths.insert(
        item.clone(),
        json!({
            "get": operation(res, "get", &id("read"), true, false),
            "put": operation(res, "put", &id("replace"), true, true),
            "patch": operation(res, "patch", &id("patch"), true, true),
            "delete": operation(res, "delete", &id("delete"), true, false),
        }),
    );
    if res.status {
        paths.insert(
            format!("{item}/status"),
            json!({
                "get": operation(res, "get", &id("readStatus"), true, false),
                "put": operation(res, "put", &id("replaceStatus"), true, true),
                "patch": operation(res, "patch", &id("patchStatus"), true, true),
            }),
        );
    }
}

fn object_schema(res: &Resource) -> Value {
    let gvk = json!([{"group": res.group, "version": res.version, "kind": res.kind}]);
    let mut schema = match res.custom().and_then(|c| c.raw_schema.clone()) {
        Some(s) => s,
        None => json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
    };
    if let Some(obj) = schema.as_object_mut() {
        let props = obj.entry("properties").or_insert_with(|| json!({}));
        if let Some(props) = props.as_object_mut() {
            props.entry("apiVersion").or_insert_with(|| json!({"type": "string", "description": "APIVersion defines the versioned schema of this representation of an object."}));
            props.entry("kind").or_insert_with(|| json!({"type": "string", "description": "Kind is a string value representing the REST resource this object represents."}));
            props.insert(
                "metadata".into(),
                json!({"allOf": [{"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}], "description": "Standard object's metadata."}),
            );
        }
        obj.insert("x-kubernetes-group-version-kind".into(), gvk);
    }
    schema
}

/// The document of one group version, if served.
pub fn group_version(snapshot: &Snapshot, group: &str, version: &str) -> Option<Value> {
    let resources = snapshot.group_version(group, version);
    if resources.is_empty() {
        return None;
    }
    let mut paths = Map::new();
    let mut schemas = Map::new();
    for res in resources {
        resource_paths(res, &mut paths);
        schemas.insert(schema_name(res), object_schema(res));
    }
    schemas.insert(
        "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta".into(),
        json!({"type": "object", "description": "ObjectMeta is metadata that all persisted resources must have.", "x-kubernetes-preserve-unknown-fields": true}),
    );
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": format!("v1.{}.0", crate::discovery::KUBE_MINOR)},
        "paths": paths,
        "components": {"schemas": schemas},
    }))
}

/// Resolves `/openapi/v3/{rest}` (`api/v1`, `apis/apps/v1`).
pub fn document(snapshot: &Snapshot, rest: &str) -> Option<Value> {
    let parts: Vec<&str> = rest.split('/').filter(|s| !s.is_empty()).collect();
    match parts.as_slice() {
        ["api", v] => group_version(snapshot, "", v),
        ["apis", g, v] => group_version(snapshot, g, v),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Registry;

    #[test]
    fn patch_operations_accept_field_validation_for_each_kind() {
        let snap = Registry::new().snapshot();
        let doc = group_version(&snap, "apps", "v1").unwrap();
        let patch =
            &doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"];
        assert_eq!(
            patch["x-kubernetes-group-version-kind"]["kind"],
            "Deployment"
        );
        assert!(
            patch["parameters"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p["name"] == "fieldValidation" && p["in"] == "query")
        );
    }

    #[test]
    fn index_links_every_group_version() {
        let snap = Registry::new().snapshot();
        let idx = index(&snap);
        assert!(
            idx["paths"]["api/v1"]["serverRelativeURL"]
                .as_str()
                .unwrap()
                .starts_with("/openapi/v3/api/v1?hash=")
        );
        assert!(idx["paths"].get("apis/apps/v1").is_some());
    }

    #[test]
    fn builtin_schema_names_follow_upstream() {
        let snap = Registry::new().snapshot();
        assert_eq!(
            schema_name(snap.get("", "v1", "configmaps").unwrap()),
            "io.k8s.api.core.v1.ConfigMap"
        );
        assert_eq!(
            schema_name(snap.get("apps", "v1", "deployments").unwrap()),
            "io.k8s.api.apps.v1.Deployment"
        );
        assert_eq!(
            schema_name(
                snap.get("rbac.authorization.k8s.io", "v1", "roles")
                    .unwrap()
            ),
            "io.k8s.api.rbac.v1.Role"
        );
    }
}
