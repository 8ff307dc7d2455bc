//! Pruning of unknown fields, as the API server does while decoding a custom resource.
//!
//! Upstream (`unstructuredSchemaCoercer.apply`) runs three steps on every decoded object; we do
//! the same, in the same order:
//!
//! 1. `pruning.Prune`: drop fields the schema does not specify, unless a node has
//!    `x-kubernetes-preserve-unknown-fields: true`. `apiVersion`, `kind` and `metadata` of the
//!    root and of `x-kubernetes-embedded-resource` objects are left alone.
//! 2. `PruneNonNullableNullsWithoutDefaults`: drop `null`s of non-nullable fields that have no
//!    default (nulls with a default are replaced by the default later).
//! 3. `objectmeta.Coerce` (embedded resources only): reduce embedded `metadata` to the fields of
//!    `ObjectMeta`, like the round trip through the Go struct does.
//!
//! The returned paths are exactly what upstream reports for `fieldValidation=Strict|Warn`
//! (`unknown field "spec.foo"`): sorted pruning paths, then sorted metadata paths.

use serde_json::{Map, Value};

use crate::node::{AdditionalProperties, SchemaNode};

/// Values nested deeper than this are left untouched (serde_json's parser already stops at 128).
pub(crate) const MAX_VALUE_DEPTH: usize = 512;

const META_FIELDS: [&str; 3] = ["apiVersion", "kind", "metadata"];

/// Drops a value without recursion, so removing a pathologically deep field cannot overflow the
/// stack (serde_json's own `Drop` is recursive).
pub(crate) fn drop_iteratively(v: Value) {
    let mut stack = vec![v];
    while let Some(x) = stack.pop() {
        match x {
            Value::Array(a) => stack.extend(a),
            Value::Object(m) => stack.extend(m.into_iter().map(|(_, v)| v)),
            _ => {}
        }
    }
}

fn is_meta(k: &str) -> bool {
    META_FIELDS.contains(&k)
}

struct Pruner {
    path: String,
    unknown: Vec<String>,
}

impl Pruner {
    fn push_key(&mut self, k: &str) -> usize {
        let len = self.path.len();
        if !self.path.is_empty() {
            self.path.push('.');
        }
        self.path.push_str(k);
        len
    }
    fn push_index(&mut self, i: usize) -> usize {
        let len = self.path.len();
        self.path.push('[');
        self.path.push_str(&i.to_string());
        self.path.push(']');
        len
    }
    fn record(&mut self, k: &str) {
        let len = self.push_key(k);
        self.unknown.push(self.path.clone());
        self.path.truncate(len);
    }

    fn prune(&mut self, x: &mut Value, s: Option<&SchemaNode>, embedded: bool, depth: usize) {
        if depth > MAX_VALUE_DEPTH {
            return;
        }
        if let Some(s) = s
            && s.preserves_unknown_fields()
        {
            self.skip_prune(x, s, embedded, depth);
            return;
        }
        match x {
            Value::Object(m) => {
                let Some(s) = s else {
                    let keys: Vec<String> = m.keys().cloned().collect();
                    for k in keys {
                        self.record(&k);
                        if let Some(v) = m.remove(&k) {
                            drop_iteratively(v);
                        }
                    }
                    return;
                };
                let mut remove = Vec::new();
                for (k, v) in m.iter_mut() {
                    if embedded && is_meta(k) {
                        continue;
                    }
                    if let Some(prop) = s.properties.get(k) {
                        let len = self.push_key(k);
                        self.prune(v, Some(prop), prop.x_embedded_resource, depth + 1);
                        self.path.truncate(len);
                    } else if let Some(ap) = &s.additional_properties {
                        let len = self.push_key(k);
                        let sub = match ap {
                            AdditionalProperties::Schema(a) => Some(&**a),
                            AdditionalProperties::Bool(_) => None,
                        };
                        self.prune(
                            v,
                            sub,
                            sub.is_some_and(|a| a.x_embedded_resource),
                            depth + 1,
                        );
                        self.path.truncate(len);
                    } else {
                        if !is_meta(k) || !self.path.is_empty() {
                            self.record(k);
                        }
                        remove.push(k.clone());
                    }
                }
                for k in remove {
                    if let Some(v) = m.remove(&k) {
                        drop_iteratively(v);
                    }
                }
            }
            Value::Array(a) => {
                let items = s.and_then(|s| s.items.as_deref());
                for (i, v) in a.iter_mut().enumerate() {
                    let len = self.push_index(i);
                    self.prune(
                        v,
                        items,
                        items.is_some_and(|it| it.x_embedded_resource),
                        depth + 1,
                    );
                    self.path.truncate(len);
                }
            }
            _ => {}
        }
    }

    fn skip_prune(&mut self, x: &mut Value, s: &SchemaNode, embedded: bool, depth: usize) {
        if depth > MAX_VALUE_DEPTH {
            return;
        }
        match x {
            Value::Object(m) => {
                for (k, v) in m.iter_mut() {
                    if embedded && is_meta(k) {
                        continue;
                    }
                    if let Some(prop) = s.properties.get(k) {
                        let len = self.push_key(k);
                        self.prune(v, Some(prop), prop.x_embedded_resource, depth + 1);
                        self.path.truncate(len);
                    } else if let Some(ap) = &s.additional_properties {
                        let len = self.push_key(k);
                        let sub = match ap {
                            AdditionalProperties::Schema(a) => Some(&**a),
                            AdditionalProperties::Bool(_) => None,
                        };
                        self.prune(
                            v,
                            sub,
                            sub.is_some_and(|a| a.x_embedded_resource),
                            depth + 1,
                        );
                        self.path.truncate(len);
                    }
                }
            }
            Value::Array(a) => {
                if let Some(items) = s.items.as_deref() {
                    for (i, v) in a.iter_mut().enumerate() {
                        let len = self.push_index(i);
                        self.skip_prune(v, items, items.x_embedded_resource, depth + 1);
                        self.path.truncate(len);
                    }
                }
            }
            _ => {}
        }
    }
}

/// Prunes `x` against `s`; `as_resource_root` treats the top level like a resource (its
/// `apiVersion`, `kind` and `metadata` are kept untouched). Returns the sorted pruned paths.
pub(crate) fn prune(x: &mut Value, s: &SchemaNode, as_resource_root: bool) -> Vec<String> {
    let mut p = Pruner {
        path: String::new(),
        unknown: Vec::new(),
    };
    p.prune(x, Some(s), as_resource_root || s.x_embedded_resource, 0);
    p.unknown.sort();
    p.unknown
}

/// `PruneNonNullableNullsWithoutDefaults`.
pub(crate) fn prune_nulls(x: &mut Value, s: Option<&SchemaNode>, depth: usize) {
    if depth > MAX_VALUE_DEPTH {
        return;
    }
    match x {
        Value::Object(m) => {
            let mut remove = Vec::new();
            for (k, v) in m.iter_mut() {
                let sub = s.and_then(|s| s.field_schema(k));
                if v.is_null() && sub.is_some_and(|ss| !ss.nullable && ss.default.is_none()) {
                    remove.push(k.clone());
                } else {
                    prune_nulls(v, sub, depth + 1);
                }
            }
            for k in remove {
                m.remove(&k);
            }
        }
        Value::Array(a) => {
            let items = s.and_then(|s| s.items.as_deref());
            for v in a.iter_mut() {
                prune_nulls(v, items, depth + 1);
            }
        }
        _ => {}
    }
}

/// `objectmeta.Coerce` for embedded resources below the root: reduces embedded `metadata` to
/// `ObjectMeta` and returns the dropped fields' paths (sorted).
pub(crate) fn coerce_embedded_metadata(x: &mut Value, s: &SchemaNode) -> Vec<String> {
    let mut out = Vec::new();
    coerce(x, Some(s), "", &mut out, 0);
    out.sort();
    out
}

fn coerce(x: &mut Value, s: Option<&SchemaNode>, path: &str, out: &mut Vec<String>, depth: usize) {
    let Some(s) = s else {
        return;
    };
    if depth > MAX_VALUE_DEPTH {
        return;
    }
    match x {
        Value::Object(m) => {
            if s.x_embedded_resource && depth > 0 {
                let meta_path = crate::node::child(path, "metadata");
                if let Some(meta) = m.get_mut("metadata") {
                    coerce_object_meta(meta, &meta_path, out);
                }
            }
            for (k, v) in m.iter_mut() {
                if let Some(prop) = s.properties.get(k) {
                    coerce(v, Some(prop), &crate::node::child(path, k), out, depth + 1);
                } else if let Some(ap) = s.additional_properties_schema() {
                    coerce(v, Some(ap), &crate::node::key(path, k), out, depth + 1);
                }
            }
        }
        Value::Array(a) => {
            for (i, v) in a.iter_mut().enumerate() {
                coerce(
                    v,
                    s.items.as_deref(),
                    &crate::node::index(path, i),
                    out,
                    depth + 1,
                );
            }
        }
        _ => {}
    }
}

/// The JSON fields of `ObjectMeta` and how Go's `omitempty` treats them.
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum MetaKind {
    Str,
    Int,
    OptInt,
    Time,
    StrMap,
    StrList,
    OwnerRefs,
    ManagedFields,
}

pub(crate) fn object_meta_field(k: &str) -> Option<MetaKind> {
    Some(match k {
        "name" | "generateName" | "namespace" | "selfLink" | "uid" | "resourceVersion" => {
            MetaKind::Str
        }
        "generation" => MetaKind::Int,
        "deletionGracePeriodSeconds" => MetaKind::OptInt,
        "creationTimestamp" | "deletionTimestamp" => MetaKind::Time,
        "labels" | "annotations" => MetaKind::StrMap,
        "finalizers" => MetaKind::StrList,
        "ownerReferences" => MetaKind::OwnerRefs,
        "managedFields" => MetaKind::ManagedFields,
        _ => return None,
    })
}

/// Checks that `metadata` decodes into `ObjectMeta`; returns Go's unmarshal error text if not.
pub(crate) fn object_meta_type_error(meta: &Value) -> Option<String> {
    let Value::Object(m) = meta else {
        return Some(format!(
            "json: cannot unmarshal {} into Go value of type v1.ObjectMeta",
            go_json_type(meta)
        ));
    };
    for (k, v) in m {
        let Some(kind) = object_meta_field(k) else {
            continue;
        };
        if v.is_null() {
            continue;
        }
        let (ok, go_type) = match kind {
            MetaKind::Str => (v.is_string(), "string"),
            MetaKind::Int | MetaKind::OptInt => (v.is_i64(), "int64"),
            MetaKind::Time => (v.as_str().is_some_and(is_rfc3339), "Time"),
            MetaKind::StrMap => (
                v.as_object()
                    .is_some_and(|o| o.values().all(|x| x.is_string() || x.is_null())),
                "map[string]string",
            ),
            MetaKind::StrList => (
                v.as_array()
                    .is_some_and(|a| a.iter().all(|x| x.is_string() || x.is_null())),
                "[]string",
            ),
            MetaKind::OwnerRefs => (
                v.as_array()
                    .is_some_and(|a| a.iter().all(|x| x.is_object() || x.is_null())),
                "[]v1.OwnerReference",
            ),
            MetaKind::ManagedFields => (
                v.as_array()
                    .is_some_and(|a| a.iter().all(|x| x.is_object() || x.is_null())),
                "[]v1.ManagedFieldsEntry",
            ),
        };
        if !ok {
            if kind == MetaKind::Time && v.is_string() {
                return Some(format!(
                    "parsing time {} as \"2006-01-02T15:04:05Z07:00\": cannot parse {} as \"2006\"",
                    crate::error::go_quote(v.as_str().unwrap_or_default()),
                    crate::error::go_quote(v.as_str().unwrap_or_default())
                ));
            }
            return Some(format!(
                "json: cannot unmarshal {} into Go struct field ObjectMeta.{k} of type {go_type}",
                go_json_type(v)
            ));
        }
    }
    None
}

fn go_json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// A loose RFC 3339 check (what `metav1.Time` accepts).
pub(crate) fn is_rfc3339(s: &str) -> bool {
    s.len() >= 20
        && s.get(..10).is_some_and(crate::formats::is_date)
        && matches!(s.as_bytes()[10], b'T' | b't')
}

const OWNER_REF_FIELDS: [&str; 6] = [
    "apiVersion",
    "kind",
    "name",
    "uid",
    "controller",
    "blockOwnerDeletion",
];
const MANAGED_FIELDS_FIELDS: [&str; 7] = [
    "manager",
    "operation",
    "apiVersion",
    "time",
    "fieldsType",
    "fieldsV1",
    "subresource",
];

fn coerce_object_meta(meta: &mut Value, meta_path: &str, out: &mut Vec<String>) {
    if object_meta_type_error(meta).is_some() {
        // Upstream fails decoding here; validation reports the error.
        return;
    }
    let Value::Object(m) = meta else {
        return;
    };
    let mut remove = Vec::new();
    for (k, v) in m.iter_mut() {
        let Some(kind) = object_meta_field(k) else {
            out.push(format!("{meta_path}.{k}"));
            remove.push(k.clone());
            continue;
        };
        let empty = match (kind, &*v) {
            (_, Value::Null) => true,
            (MetaKind::Str, Value::String(s)) => s.is_empty(),
            (MetaKind::Int, Value::Number(n)) => n.as_i64() == Some(0),
            (MetaKind::StrMap, Value::Object(o)) => o.is_empty(),
            (
                MetaKind::StrList | MetaKind::OwnerRefs | MetaKind::ManagedFields,
                Value::Array(a),
            ) => a.is_empty(),
            _ => false,
        };
        if empty {
            remove.push(k.clone());
            continue;
        }
        let allowed: &[&str] = match kind {
            MetaKind::OwnerRefs => &OWNER_REF_FIELDS,
            MetaKind::ManagedFields => &MANAGED_FIELDS_FIELDS,
            _ => continue,
        };
        if let Value::Array(a) = v {
            for (i, entry) in a.iter_mut().enumerate() {
                if let Value::Object(e) = entry {
                    strip_unknown(e, allowed, &format!("{meta_path}.{k}[{i}]"), out);
                    if kind == MetaKind::OwnerRefs {
                        for f in &OWNER_REF_FIELDS[..4] {
                            e.entry(f.to_string())
                                .or_insert_with(|| Value::String(String::new()));
                        }
                    }
                }
            }
        }
    }
    for k in remove {
        m.remove(&k);
    }
}

fn strip_unknown(e: &mut Map<String, Value>, allowed: &[&str], path: &str, out: &mut Vec<String>) {
    let unknown: Vec<String> = e
        .keys()
        .filter(|k| !allowed.contains(&k.as_str()))
        .cloned()
        .collect();
    for k in unknown {
        out.push(format!("{path}.{k}"));
        e.remove(&k);
    }
}
