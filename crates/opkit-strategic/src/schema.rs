//! Patch metadata read from an OpenAPI v3 schema: a CRD version's `openAPIV3Schema`, or a
//! component of the `/openapi/v3` documents the server publishes for the built-in kinds.
//!
//! Two vocabularies say how lists merge:
//!
//! * `x-kubernetes-patch-strategy` / `x-kubernetes-patch-merge-key`: the strategic merge patch's
//!   own, published for the built-in kinds (the Go struct tags). When a field has them they win.
//! * `x-kubernetes-list-type` (`atomic` / `set` / `map`) with `x-kubernetes-list-map-keys`, and
//!   `x-kubernetes-map-type`: server-side apply's, the only ones a CRD can declare. Unless
//!   disabled ([`SchemaPatchMeta::patch_extensions_only`]), a field without the patch extensions
//!   gets its strategy from them: `map` lists merge by their keys (all of them: an item is the
//!   same item when it agrees on every key), `set` lists merge as sets, `atomic` (or no list
//!   type) lists are replaced, and `x-kubernetes-map-type: atomic` objects are replaced.
//!
//! Upstream applies strategic merge patches to built-in kinds only (custom resources get 415);
//! reading list types is this crate's extension, meant for custom resources and server-side
//! apply.

use std::borrow::Cow;

use serde_json::{Map, Value};

use crate::StrategicError;
use crate::builtin::BuiltinPatchMeta;
use crate::meta::{FieldMeta, ListType, PatchMeta, PatchStrategy};

/// How many `$ref` / `allOf` hops a lookup follows before giving up (cycles, absurd chains).
const MAX_REF_HOPS: usize = 32;

/// Patch metadata from an OpenAPI v3 (or CRD structural) schema. Cheap to copy; borrows the
/// schema.
///
/// ```
/// use opkit_strategic::{SchemaPatchMeta, strategic_merge};
/// use serde_json::json;
/// let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
///     "ports": {"type": "array", "x-kubernetes-list-type": "map",
///               "x-kubernetes-list-map-keys": ["name"],
///               "items": {"type": "object", "properties": {"name": {"type": "string"},
///                                                          "port": {"type": "integer"}}}}}}}});
/// let meta = SchemaPatchMeta::for_object(&schema);
/// let obj = json!({"spec": {"ports": [{"name": "http", "port": 80}]}});
/// let patch = json!({"spec": {"ports": [{"name": "https", "port": 443}]}});
/// let out = strategic_merge(&obj, &patch, &meta).unwrap();
/// assert_eq!(out["spec"]["ports"], json!([{"name": "https", "port": 443}, {"name": "http", "port": 80}]));
/// ```
#[derive(Debug, Clone, Copy)]
pub struct SchemaPatchMeta<'a> {
    schema: Option<&'a Value>,
    definitions: Option<&'a Map<String, Value>>,
    /// `metadata` is an `ObjectMeta` (the root of an object, or an embedded resource).
    object: bool,
    list_types: bool,
}

impl<'a> SchemaPatchMeta<'a> {
    /// Metadata from the schema of a value (its `metadata` field, if any, is nothing special).
    pub fn new(schema: &'a Value) -> SchemaPatchMeta<'a> {
        SchemaPatchMeta {
            schema: Some(schema),
            definitions: None,
            object: false,
            list_types: true,
        }
    }

    /// Metadata from the schema of a whole Kubernetes object, such as a CRD version's
    /// `openAPIV3Schema`: `metadata` gets `ObjectMeta`'s metadata (`finalizers` a set,
    /// `ownerReferences` merged by `uid`), which CRD schemas do not spell out. Embedded
    /// resources (`x-kubernetes-embedded-resource`) are treated the same way.
    pub fn for_object(schema: &'a Value) -> SchemaPatchMeta<'a> {
        SchemaPatchMeta {
            object: true,
            ..SchemaPatchMeta::new(schema)
        }
    }

    /// Resolves `$ref`s (`#/components/schemas/<name>` or `#/definitions/<name>`) in `definitions`.
    pub fn with_definitions(self, definitions: &'a Map<String, Value>) -> SchemaPatchMeta<'a> {
        SchemaPatchMeta {
            definitions: Some(definitions),
            ..self
        }
    }

    /// Follows only `x-kubernetes-patch-strategy` / `x-kubernetes-patch-merge-key`, ignoring the
    /// list and map types, as upstream's `PatchMetaFromOpenAPIV3` does for the built-in kinds.
    pub fn patch_extensions_only(self) -> SchemaPatchMeta<'a> {
        SchemaPatchMeta {
            list_types: false,
            ..self
        }
    }

    /// The schema named `name` (e.g. `io.k8s.api.apps.v1.Deployment`) of an OpenAPI v3 document
    /// (`/openapi/v3/apis/apps/v1`), with `$ref`s resolved in the document and only the patch
    /// extensions followed, so that the result matches the built-in kinds' struct tags.
    pub fn from_openapi_v3(document: &'a Value, name: &str) -> Option<SchemaPatchMeta<'a>> {
        let schemas = document.get("components")?.get("schemas")?.as_object()?;
        let schema = schemas.get(name)?;
        Some(
            SchemaPatchMeta::for_object(schema)
                .with_definitions(schemas)
                .patch_extensions_only(),
        )
    }

    fn child(&self, schema: &'a Value) -> Result<SchemaPatchMeta<'a>, StrategicError> {
        let resolved = self.resolve(schema)?;
        Ok(SchemaPatchMeta {
            schema: Some(schema),
            object: resolved
                .get("x-kubernetes-embedded-resource")
                .and_then(Value::as_bool)
                == Some(true),
            ..*self
        })
    }

    /// The schema behind `$ref`s and single-entry `allOf` wrappers (how OpenAPI v3 documents
    /// reference a type next to a field's own description and extensions).
    fn resolve(&self, mut schema: &'a Value) -> Result<&'a Value, StrategicError> {
        for _ in 0..MAX_REF_HOPS {
            if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
                let name = reference
                    .strip_prefix("#/components/schemas/")
                    .or_else(|| reference.strip_prefix("#/definitions/"));
                let target = name.and_then(|n| self.definitions?.get(n));
                match target {
                    Some(t) => schema = t,
                    None => {
                        return Err(StrategicError::Meta(format!(
                            "unable to resolve {reference} in OpenAPI V3"
                        )));
                    }
                }
                continue;
            }
            match schema
                .get("allOf")
                .and_then(Value::as_array)
                .and_then(|a| a.first())
            {
                Some(first) if schema.get("properties").is_none() => schema = first,
                _ => return Ok(schema),
            }
        }
        Err(StrategicError::Meta(
            "too many nested $ref in the OpenAPI schema".into(),
        ))
    }

    /// An extension, from the field's own schema or else from the schema it references.
    fn extension(field: &'a Value, resolved: &'a Value, name: &str) -> Option<&'a Value> {
        field.get(name).or_else(|| resolved.get(name))
    }
}

fn strings(v: Option<&Value>) -> Vec<Cow<'_, str>> {
    match v {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .map(Cow::Borrowed)
            .collect(),
        _ => Vec::new(),
    }
}

impl PatchMeta for SchemaPatchMeta<'_> {
    fn field(&self, name: &str) -> Result<FieldMeta<'_>, StrategicError> {
        if self.object && name == "metadata" {
            return Ok(FieldMeta {
                value: Box::new(BuiltinPatchMeta::object_meta()),
                ..FieldMeta::plain()
            });
        }
        let Some(schema) = self.schema else {
            return Ok(FieldMeta::plain());
        };
        let node = self.resolve(schema)?;
        let prop = match node.get("properties").and_then(|p| p.get(name)) {
            Some(p) => p,
            None => match node.get("additionalProperties") {
                Some(p @ Value::Object(_)) => p,
                _ => return Ok(FieldMeta::plain()),
            },
        };
        let resolved = self.resolve(prop)?;
        let ext = |n: &str| SchemaPatchMeta::extension(prop, resolved, n);

        let list_type = match ext("x-kubernetes-list-type").and_then(Value::as_str) {
            Some("atomic") => Some(ListType::Atomic),
            Some("set") => Some(ListType::Set),
            Some("map") => Some(ListType::Map),
            _ => None,
        };
        let list_map_keys = strings(ext("x-kubernetes-list-map-keys"));

        let mut strategy = PatchStrategy::Default;
        let mut retain_keys = false;
        let mut merge_keys = Vec::new();
        if let Some(declared) = ext("x-kubernetes-patch-strategy").and_then(Value::as_str) {
            for s in declared.split(',') {
                match s.trim() {
                    "merge" => strategy = PatchStrategy::Merge,
                    "replace" => strategy = PatchStrategy::Replace,
                    "retainKeys" => retain_keys = true,
                    _ => {}
                }
            }
            if let Some(key) = ext("x-kubernetes-patch-merge-key").and_then(Value::as_str) {
                merge_keys.push(Cow::Borrowed(key));
            }
        } else if self.list_types {
            match list_type {
                Some(ListType::Map) => {
                    strategy = PatchStrategy::Merge;
                    merge_keys = list_map_keys.clone();
                }
                Some(ListType::Set) => strategy = PatchStrategy::Merge,
                _ => {}
            }
            if ext("x-kubernetes-map-type").and_then(Value::as_str) == Some("atomic") {
                strategy = PatchStrategy::Replace;
            }
        }

        let value_schema = match resolved.get("items") {
            Some(items @ Value::Object(_)) => items,
            _ => prop,
        };
        Ok(FieldMeta {
            strategy,
            retain_keys,
            merge_keys,
            list_type,
            list_map_keys,
            value: Box::new(self.child(value_schema)?),
        })
    }

    fn type_name(&self) -> Cow<'_, str> {
        let reference = self
            .schema
            .and_then(|s| s.get("$ref"))
            .and_then(Value::as_str);
        match reference.and_then(|r| r.rsplit('/').next()) {
            Some(name) => Cow::Borrowed(name),
            None => Cow::Borrowed("object"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn crd_list_types_give_the_strategy() {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "byKey": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["a", "b"],
                      "items": {"type": "object"}},
            "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            "args": {"type": "array", "items": {"type": "string"}},
            "sel": {"type": "object", "x-kubernetes-map-type": "atomic"},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "pod": {"type": "object", "x-kubernetes-embedded-resource": true}}}}});
        let meta = SchemaPatchMeta::for_object(&schema);
        let spec = meta.field("spec").unwrap();
        let by_key = spec.value.field("byKey").unwrap();
        assert_eq!(
            (by_key.strategy, by_key.merge_keys.clone()),
            (PatchStrategy::Merge, vec!["a".into(), "b".into()])
        );
        assert_eq!(
            spec.value.field("tags").unwrap().strategy,
            PatchStrategy::Merge
        );
        assert_eq!(
            spec.value.field("args").unwrap().strategy,
            PatchStrategy::Default
        );
        assert_eq!(
            spec.value.field("sel").unwrap().strategy,
            PatchStrategy::Replace
        );
        assert_eq!(
            spec.value.field("unknown").unwrap().strategy,
            PatchStrategy::Default
        );
        let md = meta.field("metadata").unwrap();
        assert_eq!(
            md.value.field("finalizers").unwrap().strategy,
            PatchStrategy::Merge
        );
        let pod = spec.value.field("pod").unwrap();
        assert_eq!(
            pod.value
                .field("metadata")
                .unwrap()
                .value
                .field("finalizers")
                .unwrap()
                .strategy,
            PatchStrategy::Merge
        );
    }

    #[test]
    fn openapi_v3_refs_and_patch_extensions() {
        let doc = json!({"components": {"schemas": {
            "io.k8s.api.core.v1.PodSpec": {"type": "object", "properties": {
                "containers": {"type": "array", "items": {"allOf": [{"$ref": "#/components/schemas/io.k8s.api.core.v1.Container"}]},
                               "x-kubernetes-list-map-keys": ["name"], "x-kubernetes-list-type": "map",
                               "x-kubernetes-patch-merge-key": "name", "x-kubernetes-patch-strategy": "merge"},
                "volumes": {"type": "array", "items": {"$ref": "#/components/schemas/io.k8s.api.core.v1.Volume"},
                            "x-kubernetes-patch-merge-key": "name", "x-kubernetes-patch-strategy": "merge,retainKeys"},
                "readinessGates": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["conditionType"]}}},
            "io.k8s.api.core.v1.Container": {"type": "object", "properties": {
                "ports": {"type": "array", "x-kubernetes-list-map-keys": ["containerPort", "protocol"],
                          "x-kubernetes-list-type": "map", "x-kubernetes-patch-merge-key": "containerPort",
                          "x-kubernetes-patch-strategy": "merge"}}},
            "io.k8s.api.core.v1.Volume": {"type": "object"},
            "loop": {"$ref": "#/components/schemas/loop"},
            "holder": {"type": "object", "properties": {"x": {"$ref": "#/components/schemas/loop"},
                                                         "y": {"$ref": "#/components/schemas/missing"}}}}}});
        let spec = SchemaPatchMeta::from_openapi_v3(&doc, "io.k8s.api.core.v1.PodSpec").unwrap();
        let containers = spec.field("containers").unwrap();
        assert_eq!(
            (containers.strategy, containers.merge_keys.clone()),
            (PatchStrategy::Merge, vec!["name".into()])
        );
        let ports = containers.value.field("ports").unwrap();
        assert_eq!(ports.merge_keys, ["containerPort"]);
        assert_eq!(ports.list_map_keys, ["containerPort", "protocol"]);
        let volumes = spec.field("volumes").unwrap();
        assert!(volumes.retain_keys);
        // Patch extensions only: a list-type map without them is replaced, as upstream.
        assert_eq!(
            spec.field("readinessGates").unwrap().strategy,
            PatchStrategy::Default
        );
        let holder = SchemaPatchMeta::from_openapi_v3(&doc, "holder").unwrap();
        assert!(matches!(holder.field("x"), Err(StrategicError::Meta(_))));
        assert!(matches!(holder.field("y"), Err(StrategicError::Meta(_))));
    }
}
