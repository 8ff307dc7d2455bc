//! Validations the custom resource strategy runs besides the OpenAPI validator:
//! embedded resources (`objectmeta.Validate`) and `x-kubernetes-list-type` `set`/`map`
//! uniqueness (`listtype.ValidateListSetsAndMaps`). Paths use `field.Path` notation
//! (`a.b`, `a[key]`, `a[0]`) exactly like upstream, which differs slightly from the OpenAPI
//! validator's (map keys are bracketed here).

use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::error::{FieldError, go_json};
use crate::node::{SchemaNode, child, index, key};
use crate::prune::{MAX_VALUE_DEPTH, object_meta_type_error};

const DNS1035_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const DNS1035_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character";
const DNS1123_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";

/// apimachinery's `RegexError` (including its double space before "or").
fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    let mut out = format!("{msg} (e.g. ");
    for (i, e) in examples.iter().enumerate() {
        if i > 0 {
            out.push_str(" or ");
        }
        out.push_str(&format!("'{e}', "));
    }
    out.push_str(&format!("regex used for validation is '{fmt}')"));
    out
}

fn is_dns1035_label(v: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if v.len() > 63 {
        errs.push("must be no more than 63 characters".to_string());
    }
    let b = v.as_bytes();
    let ok = !b.is_empty()
        && b[0].is_ascii_lowercase()
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[b.len() - 1] != b'-';
    if !ok {
        errs.push(regex_error(
            DNS1035_MSG,
            DNS1035_FMT,
            &["my-name", "abc-123"],
        ));
    }
    errs
}

fn is_dns1123_label(v: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if v.len() > 63 {
        errs.push("must be no more than 63 characters".to_string());
    }
    let b = v.as_bytes();
    let ok = !b.is_empty()
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-';
    if !ok {
        errs.push(regex_error(
            DNS1123_MSG,
            DNS1123_FMT,
            &["my-name", "123-abc"],
        ));
    }
    errs
}

fn path_segment_errors(name: &str, prefix: bool) -> Vec<String> {
    if !prefix && (name == "." || name == "..") {
        return vec![format!("may not be '{name}'")];
    }
    let mut errs = Vec::new();
    for bad in ["/", "%"] {
        if name.contains(bad) {
            errs.push(format!("may not contain '{bad}'"));
        }
    }
    errs
}

/// `objectmeta.Validate` with `isResourceRoot=false`: checks every embedded resource below the root.
pub(crate) fn validate_embedded(
    x: &Value,
    s: &SchemaNode,
    path: &str,
    out: &mut Vec<FieldError>,
    depth: usize,
) {
    if depth > MAX_VALUE_DEPTH || !s.subtree_has_embedded {
        return;
    }
    match x {
        Value::Object(m) => {
            if s.x_embedded_resource && depth > 0 {
                validate_embedded_resource(m, path, out);
            }
            for (k, v) in m {
                if let Some(prop) = s.properties.get(k) {
                    validate_embedded(v, prop, &child(path, k), out, depth + 1);
                } else if let Some(ap) = s.additional_properties_schema() {
                    validate_embedded(v, ap, &key(path, k), out, depth + 1);
                }
            }
        }
        Value::Array(a) => {
            if let Some(items) = s.items.as_deref() {
                for (i, v) in a.iter().enumerate() {
                    validate_embedded(v, items, &index(path, i), out, depth + 1);
                }
            }
        }
        _ => {}
    }
}

/// The checks of one embedded resource object (`validateEmbeddedResource`).
pub(crate) fn validate_embedded_resource(
    m: &Map<String, Value>,
    path: &str,
    out: &mut Vec<FieldError>,
) {
    if !m.contains_key("apiVersion") {
        out.push(FieldError::required(child(path, "apiVersion"), ""));
    }
    if !m.contains_key("kind") {
        out.push(FieldError::required(child(path, "kind"), ""));
    }
    if let Some(v) = m.get("apiVersion") {
        let p = child(path, "apiVersion");
        match v {
            Value::String(s) if s.is_empty() => {
                out.push(FieldError::invalid(p, v.clone(), "must not be empty"))
            }
            Value::String(s) => {
                if s != "/" && s.matches('/').count() > 1 {
                    out.push(FieldError::invalid(
                        p,
                        v.clone(),
                        format!("unexpected GroupVersion string: {s}"),
                    ));
                }
            }
            _ => out.push(FieldError::invalid(p, v.clone(), "must be a string")),
        }
    }
    if let Some(v) = m.get("kind") {
        let p = child(path, "kind");
        match v {
            Value::String(s) if s.is_empty() => {
                out.push(FieldError::invalid(p, v.clone(), "must not be empty"))
            }
            Value::String(s) => {
                let errs = is_dns1035_label(&s.to_lowercase());
                if !errs.is_empty() {
                    out.push(FieldError::invalid(
                        p,
                        v.clone(),
                        format!(
                            "may have mixed case, but should otherwise match: {}",
                            errs.join(",")
                        ),
                    ));
                }
            }
            _ => out.push(FieldError::invalid(p, v.clone(), "must be a string")),
        }
    }
    if let Some(meta) = m.get("metadata") {
        let p = child(path, "metadata");
        if meta.is_null() {
            return;
        }
        if let Some(e) = object_meta_type_error(meta) {
            out.push(FieldError::invalid(p, meta.clone(), e));
            return;
        }
        let get = |k: &str| meta.get(k).and_then(Value::as_str).unwrap_or("");
        let generate_name = get("generateName");
        if !generate_name.is_empty() {
            for msg in path_segment_errors(generate_name, true) {
                out.push(FieldError::invalid(
                    child(&p, "generateName"),
                    Value::from(generate_name),
                    msg,
                ));
            }
        }
        let name = if get("name").is_empty() {
            "fakename"
        } else {
            get("name")
        };
        for msg in path_segment_errors(name, false) {
            out.push(FieldError::invalid(
                child(&p, "name"),
                Value::from(name),
                msg,
            ));
        }
        let namespace = get("namespace");
        if !namespace.is_empty() {
            for msg in is_dns1123_label(namespace) {
                out.push(FieldError::invalid(
                    child(&p, "namespace"),
                    Value::from(namespace),
                    msg,
                ));
            }
        }
        if let Some(g) = meta.get("generation").and_then(Value::as_i64)
            && g < 0
        {
            out.push(FieldError::invalid(
                child(&p, "generation"),
                Value::from(g),
                "must be greater than or equal to 0",
            ));
        }
    }
}

/// `listtype.ValidateListSetsAndMaps` for the root object.
pub(crate) fn validate_list_types(x: &Value, s: &SchemaNode, out: &mut Vec<FieldError>) {
    if !s.subtree_has_list_checks {
        return;
    }
    if let Value::Object(m) = x {
        validate_list_types_object(m, s, "", out, 0);
    }
}

fn validate_list_types_object(
    m: &Map<String, Value>,
    s: &SchemaNode,
    path: &str,
    out: &mut Vec<FieldError>,
    depth: usize,
) {
    if depth > MAX_VALUE_DEPTH {
        return;
    }
    if let Some(ap) = s.additional_properties_schema() {
        for (k, v) in m {
            validate_list_types_value(v, ap, &key(path, k), out, depth + 1);
        }
    }
    if !s.properties.is_empty() {
        for (k, v) in m {
            if let Some(sub) = s.properties.get(k) {
                validate_list_types_value(v, sub, &child(path, k), out, depth + 1);
            }
        }
    }
}

fn validate_list_types_value(
    x: &Value,
    s: &SchemaNode,
    path: &str,
    out: &mut Vec<FieldError>,
    depth: usize,
) {
    if !s.subtree_has_list_checks {
        return;
    }
    match x {
        Value::Array(a) => {
            match s.x_list_type.as_deref() {
                Some("set") => {
                    for i in non_unique(a) {
                        out.push(FieldError::duplicate(index(path, i), a[i].clone()));
                    }
                }
                Some("map") => validate_list_map(a, s, path, out),
                _ => {}
            }
            if let Some(items) = s.items.as_deref() {
                for (i, v) in a.iter().enumerate() {
                    validate_list_types_value(v, items, &index(path, i), out, depth + 1);
                }
            }
        }
        Value::Object(m) => validate_list_types_object(m, s, path, out, depth),
        _ => {}
    }
}

/// A hashable identity for list elements (Go compares scalars by type and value and compounds
/// by their JSON encoding).
fn identity(v: &Value) -> String {
    match v {
        Value::Number(n) => match n.as_i64() {
            Some(i) => format!("i{i}"),
            None => format!("f{}", n.as_f64().unwrap_or(0.0)),
        },
        Value::String(s) => format!("s{s}"),
        Value::Bool(b) => format!("b{b}"),
        Value::Null => "n".to_string(),
        other => format!("c{}", go_json(other)),
    }
}

/// Indices of the second occurrence of each repeated element (upstream reports each value
/// once). Short lists are compared pairwise without allocating; long ones are hashed.
fn non_unique_by<T>(
    a: &[T],
    same: impl Fn(&T, &T) -> bool,
    id: impl Fn(&T) -> String,
) -> Vec<usize> {
    if a.len() <= 1 {
        return Vec::new();
    }
    let mut out = Vec::new();
    if a.len() <= 32 {
        for i in 1..a.len() {
            if a[..i].iter().filter(|x| same(x, &a[i])).count() == 1 {
                out.push(i);
            }
        }
        return out;
    }
    let mut seen: HashMap<String, usize> = HashMap::with_capacity(a.len());
    for (i, x) in a.iter().enumerate() {
        let c = seen.entry(id(x)).or_insert(0);
        *c += 1;
        if *c == 2 {
            out.push(i);
        }
    }
    out
}

fn non_unique(a: &[Value]) -> Vec<usize> {
    non_unique_by(a, |x, y| x == y, identity)
}

fn map_field<'v>(x: &'v Value, k: &str) -> Option<&'v Value> {
    x.as_object().and_then(|o| o.get(k))
}

fn validate_list_map(a: &[Value], s: &SchemaNode, path: &str, out: &mut Vec<FieldError>) {
    for (i, x) in a.iter().enumerate() {
        if !x.is_null() && !x.is_object() {
            out.push(FieldError::invalid(
                index(path, i),
                x.clone(),
                "must be an object for an array of list-type map",
            ));
            return;
        }
    }
    if a.len() <= 1 {
        return;
    }
    // The key of an element: the map-key fields it has (an absent key differs from null).
    let keys = &s.x_list_map_keys;
    let same = |x: &&Value, y: &&Value| keys.iter().all(|k| map_field(x, k) == map_field(y, k));
    let id = |x: &&Value| {
        keys.iter()
            .map(|k| {
                map_field(x, k).map_or_else(|| "-".to_string(), |v| format!("+{}", identity(v)))
            })
            .collect::<Vec<_>>()
            .join("\u{0}")
    };
    let elems: Vec<&Value> = a.iter().collect();
    for i in non_unique_by(&elems, same, id) {
        let mut key = Map::new();
        for k in keys {
            if let Some(v) = map_field(&a[i], k) {
                key.insert(k.clone(), v.clone());
            }
        }
        out.push(FieldError::duplicate(index(path, i), Value::Object(key)));
    }
}
