//! Checks applied to a CRD version's `openAPIV3Schema` when the CRD is created or updated.
//!
//! Upstream runs, in this order (`validateCustomResourceDefinitionValidation`):
//!
//! 1. `nullable` is forbidden at the root;
//! 2. `NewStructural` (unsupported keywords), then `ValidateStructural` (structural invariants
//!    and completeness, errors sorted by text) and, only if that passed, `ValidateDefaults`;
//! 3. `ValidateCustomResourceDefinitionOpenAPISchema` (keyword-level rules, list/map types,
//!    defaults placement, `x-kubernetes-validations` shape);
//! 4. `NewStructural`'s error, but only when nothing else was reported.
//!
//! The wording and paths below are upstream's, since `kubectl apply` of a bad CRD shows them.

use serde_json::Value;

use crate::error::FieldError;
use crate::node::{AdditionalProperties, SchemaNode, child, index, key};
use crate::{meta, prune, validate};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    Root,
    Item,
    Field,
}

/// Runs all CRD-time checks on a parsed schema; `prefix` is e.g.
/// `spec.versions[0].schema.openAPIV3Schema`.
pub(crate) fn check(root: &SchemaNode, prefix: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if root.nullable {
        errs.push(FieldError::forbidden(
            child(prefix, "nullable"),
            "nullable cannot be true at the root",
        ));
    }
    let init_err = unsupported_field(root);
    if init_err.is_none() {
        let mut structural = Vec::new();
        invariants(root, Level::Root, prefix, &mut structural);
        completeness(root, root, prefix, prefix, &mut structural);
        structural.sort_by_key(|e| e.to_string());
        if structural.is_empty() {
            defaults(root, prefix, false, true, &mut errs);
        } else {
            errs.extend(structural);
        }
    }
    openapi(root, prefix, &Ssv::default(), true, &mut errs);
    if errs.is_empty()
        && let Some(msg) = init_err
    {
        errs.push(FieldError::invalid(
            prefix,
            Value::String(String::new()),
            msg,
        ));
    }
    errs
}

/// `NewStructural`'s first error: keywords structural schemas cannot represent.
fn unsupported_field(n: &SchemaNode) -> Option<String> {
    let own = if n.id.is_some() {
        Some("OpenAPIV3Schema 'id' is not supported")
    } else if n.schema_uri.is_some() {
        Some("OpenAPIV3Schema 'schema' is not supported")
    } else if n.reference.as_deref().is_some_and(|r| !r.is_empty()) {
        Some("OpenAPIV3Schema '$ref' is not supported")
    } else if n.has_pattern_properties {
        Some("OpenAPIV3Schema 'patternProperties' is not supported")
    } else if n.has_dependencies {
        Some("OpenAPIV3Schema 'dependencies' is not supported")
    } else if n.has_additional_items {
        Some("OpenAPIV3Schema 'additionalItems' is not supported")
    } else if n.has_definitions {
        Some("OpenAPIV3Schema 'definitions' is not supported")
    } else {
        None
    };
    if let Some(m) = own {
        return Some(m.to_string());
    }
    let nested = n
        .not
        .iter()
        .map(|b| &**b)
        .chain(&n.all_of)
        .chain(&n.any_of)
        .chain(&n.one_of);
    for x in nested {
        if let Some(e) = unsupported_field(x) {
            return Some(e);
        }
    }
    if n.items_array {
        return Some("OpenAPIV3Schema 'items' must be a schema, but is an array".to_string());
    }
    let children = n
        .items
        .iter()
        .map(|b| &**b)
        .chain(n.properties.values())
        .chain(n.additional_properties_schema());
    for x in children {
        if let Some(e) = unsupported_field(x) {
            return Some(e);
        }
    }
    None
}

/// Whether `n` is exactly `{type: <t>}` (the int-or-string `anyOf` pattern).
fn only_type(n: &SchemaNode, t: &str) -> bool {
    let mut probe = n.clone();
    if probe.ty.as_deref() != Some(t) {
        return false;
    }
    probe.ty = None;
    probe.types.clear();
    is_empty_node(&probe)
}

fn is_empty_node(n: &SchemaNode) -> bool {
    n.ty.is_none()
        && n.format.is_none()
        && n.description.is_none()
        && n.title.is_none()
        && n.default.is_none()
        && !n.has_example
        && !n.has_external_docs
        && !n.nullable
        && n.maximum.is_none()
        && !n.exclusive_maximum
        && n.minimum.is_none()
        && !n.exclusive_minimum
        && n.max_length.is_none()
        && n.min_length.is_none()
        && n.pattern.is_none()
        && n.max_items.is_none()
        && n.min_items.is_none()
        && !n.unique_items
        && n.multiple_of.is_none()
        && n.enum_values.is_none()
        && n.max_properties.is_none()
        && n.min_properties.is_none()
        && n.required.is_empty()
        && n.items.is_none()
        && n.all_of.is_empty()
        && n.one_of.is_empty()
        && n.any_of.is_empty()
        && n.not.is_none()
        && n.properties.is_empty()
        && n.additional_properties.is_none()
        && n.x_preserve_unknown_fields != Some(true)
        && !n.x_embedded_resource
        && !n.x_int_or_string
        && n.x_list_map_keys.is_empty()
        && n.x_list_type.is_none()
        && n.x_map_type.is_none()
        && n.x_validations.is_empty()
}

fn int_or_string_any_of(any_of: &[SchemaNode]) -> bool {
    any_of.len() == 2 && only_type(&any_of[0], "integer") && only_type(&any_of[1], "string")
}

/// `validateStructuralInvariants`.
fn invariants(s: &SchemaNode, lvl: Level, path: &str, errs: &mut Vec<FieldError>) {
    if s.ty.as_deref() == Some("array") && s.items.is_none() {
        errs.push(FieldError::required(
            child(path, "items"),
            "must be specified",
        ));
    }
    if let Some(items) = &s.items {
        invariants(items, Level::Item, &child(path, "items"), errs);
    }
    for (k, p) in &s.properties {
        invariants(p, Level::Field, &key(&child(path, "properties"), k), errs);
    }
    if let Some(ap) = &s.additional_properties {
        if lvl == Level::Root {
            errs.push(FieldError::forbidden(
                child(path, "additionalProperties"),
                "must not be used at the root",
            ));
        }
        if let AdditionalProperties::Schema(a) = ap {
            invariants(a, Level::Field, &child(path, "additionalProperties"), errs);
        }
    }
    let preserve = s.x_preserve_unknown_fields == Some(true);
    if s.x_int_or_string && preserve {
        errs.push(FieldError::invalid(
            child(path, "x-kubernetes-preserve-unknown-fields"),
            Value::Bool(true),
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    if s.x_int_or_string && s.x_embedded_resource {
        errs.push(FieldError::invalid(
            child(path, "x-kubernetes-embedded-resource"),
            Value::Bool(true),
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    let skip_any_of = int_or_string_any_of(&s.any_of);
    let skip_first_all_of_any_of = s
        .all_of
        .first()
        .is_some_and(|a| int_or_string_any_of(&a.any_of));
    value_validation(s, skip_any_of, skip_first_all_of_any_of, path, errs);

    let check_metadata = lvl == Level::Root || s.x_embedded_resource;
    let ty = s.ty.as_deref().unwrap_or("");
    if s.x_embedded_resource && ty != "object" {
        let msg = "must be object if x-kubernetes-embedded-resource is true";
        if ty.is_empty() {
            errs.push(FieldError::required(child(path, "type"), msg));
        } else {
            errs.push(FieldError::invalid(
                child(path, "type"),
                Value::from(ty),
                msg,
            ));
        }
    } else if ty.is_empty() && !s.x_int_or_string && !preserve {
        let msg = match lvl {
            Level::Root => "must not be empty at the root",
            Level::Item => "must not be empty for specified array items",
            Level::Field => "must not be empty for specified object fields",
        };
        errs.push(FieldError::required(child(path, "type"), msg));
    }
    if s.x_embedded_resource && s.additional_properties.is_some() {
        errs.push(FieldError::forbidden(
            child(path, "additionalProperties"),
            "must not be used if x-kubernetes-embedded-resource is set",
        ));
    }
    if lvl == Level::Root && !ty.is_empty() && ty != "object" {
        errs.push(FieldError::invalid(
            child(path, "type"),
            Value::from(ty),
            "must be object at the root",
        ));
    }
    if check_metadata {
        for f in ["kind", "apiVersion"] {
            if let Some(p) = s.properties.get(f)
                && p.ty.as_deref() != Some("string")
            {
                errs.push(FieldError::invalid(
                    child(&key(&child(path, "properties"), f), "type"),
                    Value::from(p.ty.clone().unwrap_or_default()),
                    "must be string",
                ));
            }
        }
    }
    if let Some(m) = s.properties.get("metadata") {
        let mpath = key(&child(path, "properties"), "metadata");
        if check_metadata && m.ty.as_deref() != Some("object") {
            errs.push(FieldError::invalid(
                child(&mpath, "type"),
                Value::from(m.ty.clone().unwrap_or_default()),
                "must be object",
            ));
        }
        if lvl == Level::Root {
            let mut probe = m.clone();
            let has_name = probe.properties.contains_key("name");
            let has_generate_name = probe.properties.contains_key("generateName");
            let n = probe.properties.len();
            if (has_name && has_generate_name && n == 2)
                || ((has_name || has_generate_name) && n == 1)
            {
                probe.properties.clear();
            }
            probe.ty = None;
            probe.types.clear();
            probe.default = None;
            if !is_empty_node(&probe) {
                errs.push(FieldError::forbidden(
                    mpath,
                    "must not specify anything other than name and generateName, but metadata is implicitly specified",
                ));
            }
        }
    }
    if s.x_embedded_resource && !preserve && s.properties.is_empty() {
        errs.push(FieldError::required(
            child(path, "properties"),
            "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
        ));
    }
}

/// `validateValueValidation`: the logic junctors of a node and its `pattern`.
fn value_validation(
    v: &SchemaNode,
    skip_any_of: bool,
    skip_first_all_of_any_of: bool,
    path: &str,
    errs: &mut Vec<FieldError>,
) {
    if !skip_any_of {
        for (i, a) in v.any_of.iter().enumerate() {
            nested(a, false, &index(&child(path, "anyOf"), i), errs);
        }
    }
    for (i, a) in v.all_of.iter().enumerate() {
        nested(
            a,
            skip_first_all_of_any_of && i == 0,
            &index(&child(path, "allOf"), i),
            errs,
        );
    }
    for (i, a) in v.one_of.iter().enumerate() {
        nested(a, false, &index(&child(path, "oneOf"), i), errs);
    }
    if let Some(not) = &v.not {
        nested(not, false, &child(path, "not"), errs);
    }
    if let Some(p) = &v.pattern
        && let Err(e) = &p.compiled
    {
        errs.push(FieldError::invalid(
            child(path, "pattern"),
            Value::from(p.source.clone()),
            format!("must be a valid regular expression, but isn't: {e}"),
        ));
    }
}

/// `validateNestedValueValidation`: schemas under `allOf`/`anyOf`/`oneOf`/`not` may only
/// carry value validations.
fn nested(v: &SchemaNode, skip_any_of: bool, path: &str, errs: &mut Vec<FieldError>) {
    value_validation(v, skip_any_of, false, path, errs);
    if let Some(items) = &v.items {
        nested(items, false, &child(path, "items"), errs);
    }
    for (k, p) in &v.properties {
        nested(p, false, &key(&child(path, "properties"), k), errs);
    }
    if v.ty.is_some() {
        errs.push(FieldError::forbidden(
            child(path, "type"),
            "must be empty to be structural",
        ));
    }
    if matches!(
        v.additional_properties,
        Some(AdditionalProperties::Schema(_)) | Some(AdditionalProperties::Bool(true))
    ) {
        errs.push(FieldError::forbidden(
            child(path, "additionalProperties"),
            "must be undefined to be structural",
        ));
    }
    if v.default.is_some() {
        errs.push(FieldError::forbidden(
            child(path, "default"),
            "must be undefined to be structural",
        ));
    }
    if v.title.is_some() {
        errs.push(FieldError::forbidden(
            child(path, "title"),
            "must be empty to be structural",
        ));
    }
    if v.description.is_some() {
        errs.push(FieldError::forbidden(
            child(path, "description"),
            "must be empty to be structural",
        ));
    }
    if v.nullable {
        errs.push(FieldError::forbidden(
            child(path, "nullable"),
            "must be false to be structural",
        ));
    }
    if v.x_preserve_unknown_fields == Some(true) {
        errs.push(FieldError::forbidden(
            child(path, "x-kubernetes-preserve-unknown-fields"),
            "must be false to be structural",
        ));
    }
    if v.x_embedded_resource {
        errs.push(FieldError::forbidden(
            child(path, "x-kubernetes-embedded-resource"),
            "must be false to be structural",
        ));
    }
    if v.x_int_or_string {
        errs.push(FieldError::forbidden(
            child(path, "x-kubernetes-int-or-string"),
            "must be false to be structural",
        ));
    }
    if !v.x_list_map_keys.is_empty() {
        errs.push(FieldError::forbidden(
            child(path, "x-kubernetes-list-map-keys"),
            "must be empty to be structural",
        ));
    }
    if v.x_list_type.is_some() {
        errs.push(FieldError::forbidden(
            child(path, "x-kubernetes-list-type"),
            "must be undefined to be structural",
        ));
    }
    if v.x_map_type.is_some() {
        errs.push(FieldError::forbidden(
            child(path, "x-kubernetes-map-type"),
            "must be undefined to be structural",
        ));
    }
    if !v.x_validations.is_empty() {
        errs.push(FieldError::forbidden(
            child(path, "x-kubernetes-validations"),
            "must be empty to be structural",
        ));
    }
    if v.properties.contains_key("metadata") {
        errs.push(FieldError::forbidden(
            key(&child(path, "properties"), "metadata"),
            "must not be specified in a nested context",
        ));
    }
}

/// `validateStructuralCompleteness`: every property/items constrained under a junctor of the
/// root must exist in the structural part too.
fn completeness(
    v: &SchemaNode,
    s: &SchemaNode,
    s_path: &str,
    v_path: &str,
    errs: &mut Vec<FieldError>,
) {
    if let Some(not) = &v.not {
        nested_completeness(not, Some(s), s_path, &child(v_path, "not"), errs);
    }
    for (i, a) in v.all_of.iter().enumerate() {
        nested_completeness(a, Some(s), s_path, &index(&child(v_path, "allOf"), i), errs);
    }
    for (i, a) in v.any_of.iter().enumerate() {
        nested_completeness(a, Some(s), s_path, &index(&child(v_path, "anyOf"), i), errs);
    }
    for (i, a) in v.one_of.iter().enumerate() {
        nested_completeness(a, Some(s), s_path, &index(&child(v_path, "oneOf"), i), errs);
    }
}

fn nested_completeness(
    v: &SchemaNode,
    s: Option<&SchemaNode>,
    s_path: &str,
    v_path: &str,
    errs: &mut Vec<FieldError>,
) {
    let Some(s) = s else {
        errs.push(FieldError::required(
            s_path,
            format!("because it is defined in {v_path}"),
        ));
        return;
    };
    completeness(v, s, s_path, v_path, errs);
    if let Some(items) = &v.items {
        nested_completeness(
            items,
            s.items.as_deref(),
            &child(s_path, "items"),
            &child(v_path, "items"),
            errs,
        );
    }
    for (k, p) in &v.properties {
        let sp = key(&child(s_path, "properties"), k);
        let vp = key(&child(v_path, "properties"), k);
        match s.properties.get(k) {
            Some(sf) => nested_completeness(p, Some(sf), &sp, &vp, errs),
            None => errs.push(FieldError::required(
                sp,
                format!("because it is defined in {vp}"),
            )),
        }
    }
}

/// `structuraldefaulting.ValidateDefaults`.
fn defaults(
    s: &SchemaNode,
    path: &str,
    inside_meta: bool,
    is_root: bool,
    errs: &mut Vec<FieldError>,
) {
    let embedded = s.x_embedded_resource || is_root;
    let inside_meta = inside_meta && !embedded;
    if let Some(d) = &s.default {
        let dpath = child(path, "default");
        if inside_meta {
            validate::validate_value(s, d, Some(&dpath), errs);
        } else {
            let mut pruned = d.clone();
            prune::prune(&mut pruned, s, embedded);
            if &pruned != d {
                errs.push(FieldError::invalid(
                    dpath.clone(),
                    d.clone(),
                    "must not have unknown fields",
                ));
            }
            if let Some(e) = coerce_error(d, s, &dpath, embedded, 0) {
                errs.push(e);
            } else {
                let mut meta_errs = Vec::new();
                meta::validate_embedded(d, s, &dpath, &mut meta_errs, 0);
                if embedded && let Value::Object(m) = d {
                    // The default is itself a resource; check its top level too.
                    meta::validate_embedded_resource(m, &dpath, &mut meta_errs);
                }
                if !meta_errs.is_empty() {
                    errs.extend(meta_errs);
                } else {
                    validate::validate_value(s, d, Some(&dpath), errs);
                }
            }
        }
    }
    // additionalProperties are not followed, as upstream.
    if let Some(items) = &s.items {
        defaults(items, &child(path, "items"), inside_meta, false, errs);
    }
    for (k, p) in &s.properties {
        let sub_inside =
            inside_meta || (embedded && matches!(k.as_str(), "metadata" | "apiVersion" | "kind"));
        defaults(
            p,
            &key(&child(path, "properties"), k),
            sub_inside,
            false,
            errs,
        );
    }
}

/// `objectmeta.Coerce` without dropping: the first type error of embedded `apiVersion`, `kind`
/// or `metadata`.
fn coerce_error(
    x: &Value,
    s: &SchemaNode,
    path: &str,
    embedded: bool,
    depth: usize,
) -> Option<FieldError> {
    if depth > prune::MAX_VALUE_DEPTH {
        return None;
    }
    match x {
        Value::Object(m) => {
            for (k, v) in m {
                if embedded || (depth > 0 && s.x_embedded_resource) {
                    match k.as_str() {
                        "apiVersion" | "kind" if !v.is_string() => {
                            return Some(FieldError::invalid(
                                child(path, k),
                                v.clone(),
                                "must be a string",
                            ));
                        }
                        "metadata" => {
                            if let Some(e) = prune::object_meta_type_error(v) {
                                return Some(FieldError::invalid(
                                    child(path, "metadata"),
                                    v.clone(),
                                    e,
                                ));
                            }
                        }
                        _ => {}
                    }
                }
                if let Some(p) = s.properties.get(k) {
                    if let Some(e) = coerce_error(v, p, &child(path, k), false, depth + 1) {
                        return Some(e);
                    }
                } else if let Some(ap) = s.additional_properties_schema()
                    && let Some(e) = coerce_error(v, ap, &key(path, k), false, depth + 1)
                {
                    return Some(e);
                }
            }
            None
        }
        Value::Array(a) => {
            let items = s.items.as_deref()?;
            for (i, v) in a.iter().enumerate() {
                if let Some(e) = coerce_error(v, items, &index(path, i), false, depth + 1) {
                    return Some(e);
                }
            }
            None
        }
        _ => None,
    }
}

/// State threaded through `ValidateCustomResourceDefinitionOpenAPISchema` (`specStandardValidator`).
#[derive(Clone, Default)]
struct Ssv {
    /// `Some(reason)` when defaults are forbidden here.
    forbid_defaults: Option<String>,
    inside_meta: bool,
}

const OPENAPI_TYPES: [&str; 6] = ["array", "boolean", "integer", "number", "object", "string"];

/// `specStandardValidatorV3.validate`.
fn ssv_validate(s: &SchemaNode, path: &str, ssv: &Ssv, errs: &mut Vec<FieldError>) {
    if let Some(t) = &s.ty
        && !OPENAPI_TYPES.contains(&t.as_str())
    {
        errs.push(FieldError::not_supported(
            child(path, "type"),
            Value::from(t.clone()),
            &OPENAPI_TYPES,
        ));
    }
    if s.default.is_some()
        && let Some(reason) = &ssv.forbid_defaults
    {
        let mut detail = "must not be set".to_string();
        if !reason.is_empty() {
            detail.push(' ');
            detail.push_str(reason);
        }
        errs.push(FieldError::forbidden(child(path, "default"), detail));
    }
    if s.id.is_some() {
        errs.push(FieldError::forbidden(
            child(path, "id"),
            "id is not supported",
        ));
    }
    if s.has_additional_items {
        errs.push(FieldError::forbidden(
            child(path, "additionalItems"),
            "additionalItems is not supported",
        ));
    }
    if s.has_pattern_properties {
        errs.push(FieldError::forbidden(
            child(path, "patternProperties"),
            "patternProperties is not supported",
        ));
    }
    if s.has_definitions {
        errs.push(FieldError::forbidden(
            child(path, "definitions"),
            "definitions is not supported",
        ));
    }
    if s.has_dependencies {
        errs.push(FieldError::forbidden(
            child(path, "dependencies"),
            "dependencies is not supported",
        ));
    }
    if s.reference.is_some() {
        errs.push(FieldError::forbidden(
            child(path, "$ref"),
            "$ref is not supported",
        ));
    }
    if s.ty.as_deref() == Some("null") {
        errs.push(FieldError::forbidden(
            child(path, "type"),
            "type cannot be set to null, use nullable as an alternative",
        ));
    }
    if s.items_array {
        errs.push(FieldError::forbidden(
            child(path, "items"),
            "items must be a schema object and not an array",
        ));
    }
    if ssv.inside_meta && s.x_embedded_resource {
        errs.push(FieldError::forbidden(
            child(path, "x-kubernetes-embedded-resource"),
            "must not be used inside of resource meta",
        ));
    }
}

/// `ValidateCustomResourceDefinitionOpenAPISchema` (without CEL compilation).
fn openapi(s: &SchemaNode, path: &str, ssv: &Ssv, is_root: bool, errs: &mut Vec<FieldError>) {
    ssv_validate(s, path, ssv, errs);
    if s.unique_items {
        errs.push(FieldError::forbidden(
            child(path, "uniqueItems"),
            "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
        ));
    }
    if let Some(ap) = &s.additional_properties {
        if !s.properties.is_empty() && !matches!(ap, AdditionalProperties::Bool(true)) {
            errs.push(FieldError::forbidden(
                child(path, "additionalProperties"),
                "additionalProperties and properties are mutual exclusive",
            ));
        }
        if let AdditionalProperties::Schema(a) = ap {
            let mut sub = ssv.clone();
            if ssv.inside_meta {
                sub.forbid_defaults =
                    Some("inside additionalProperties applying to object metadata".to_string());
            }
            openapi(a, &child(path, "additionalProperties"), &sub, false, errs);
        }
    }
    for (k, p) in &s.properties {
        let mut sub = ssv.clone();
        if (is_root || s.x_embedded_resource)
            && matches!(k.as_str(), "metadata" | "kind" | "apiVersion")
        {
            sub.inside_meta = true;
            if is_root {
                sub.forbid_defaults = Some(format!("in top-level {k}"));
            }
        }
        openapi(p, &key(&child(path, "properties"), k), &sub, false, errs);
    }
    if let Some(not) = &s.not {
        openapi(not, &child(path, "not"), ssv, false, errs);
    }
    for (i, x) in s.all_of.iter().enumerate() {
        openapi(x, &index(&child(path, "allOf"), i), ssv, false, errs);
    }
    for (i, x) in s.one_of.iter().enumerate() {
        openapi(x, &index(&child(path, "oneOf"), i), ssv, false, errs);
    }
    for (i, x) in s.any_of.iter().enumerate() {
        openapi(x, &index(&child(path, "anyOf"), i), ssv, false, errs);
    }
    if let Some(items) = &s.items {
        openapi(items, &child(path, "items"), ssv, false, errs);
    }
    if s.x_preserve_unknown_fields == Some(false) {
        errs.push(FieldError::invalid(
            child(path, "x-kubernetes-preserve-unknown-fields"),
            Value::Bool(false),
            "must be true or undefined",
        ));
    }
    let ty = s.ty.as_deref().unwrap_or("");
    if let Some(mt) = &s.x_map_type {
        if ty != "object" {
            let msg = "must be object if x-kubernetes-map-type is specified";
            if ty.is_empty() {
                errs.push(FieldError::required(child(path, "type"), msg));
            } else {
                errs.push(FieldError::invalid(
                    child(path, "type"),
                    Value::from(ty),
                    msg,
                ));
            }
        }
        if mt != "atomic" && mt != "granular" {
            errs.push(FieldError::not_supported(
                child(path, "x-kubernetes-map-type"),
                Value::from(mt.clone()),
                &["atomic", "granular"],
            ));
        }
    }
    if let Some(lt) = &s.x_list_type {
        if ty != "array" {
            let msg = "must be array if x-kubernetes-list-type is specified";
            if ty.is_empty() {
                errs.push(FieldError::required(child(path, "type"), msg));
            } else {
                errs.push(FieldError::invalid(
                    child(path, "type"),
                    Value::from(ty),
                    msg,
                ));
            }
        } else if lt == "set"
            && let Some(is) = &s.items
        {
            let msg = "must be atomic as item of a list with x-kubernetes-list-type=set";
            match is.ty.as_deref() {
                Some("array") => {
                    if let Some(ilt) = &is.x_list_type
                        && ilt != "atomic"
                    {
                        errs.push(FieldError::invalid(
                            child(&child(path, "items"), "x-kubernetes-list-type"),
                            Value::from(ilt.clone()),
                            msg,
                        ));
                    }
                }
                Some("object") if is.x_map_type.as_deref() != Some("atomic") => {
                    let value = is.x_list_type.clone().map(Value::from);
                    errs.push(FieldError::invalid(
                        child(&child(path, "items"), "x-kubernetes-map-type"),
                        value.unwrap_or(Value::Null),
                        msg,
                    ));
                }
                _ => {}
            }
        }
        if !matches!(lt.as_str(), "atomic" | "set" | "map") {
            errs.push(FieldError::not_supported(
                child(path, "x-kubernetes-list-type"),
                Value::from(lt.clone()),
                &["atomic", "set", "map"],
            ));
        }
    }
    if !s.x_list_map_keys.is_empty() {
        let msg = "must be map if x-kubernetes-list-map-keys is non-empty";
        match s.x_list_type.as_deref() {
            None => errs.push(FieldError::required(
                child(path, "x-kubernetes-list-type"),
                msg,
            )),
            Some("map") => {}
            Some(other) => errs.push(FieldError::invalid(
                child(path, "x-kubernetes-list-type"),
                Value::from(other),
                msg,
            )),
        }
    }
    let keys_value = || Value::from(s.x_list_map_keys.clone());
    if s.x_list_type.as_deref() == Some("map") {
        if s.x_list_map_keys.is_empty() {
            errs.push(FieldError::required(
                child(path, "x-kubernetes-list-map-keys"),
                "must not be empty if x-kubernetes-list-type is map",
            ));
        }
        if s.items.is_none() && !s.items_array {
            errs.push(FieldError::required(
                child(path, "items"),
                "must have a schema if x-kubernetes-list-type is map",
            ));
        }
        if s.items_array {
            errs.push(FieldError::invalid(
                child(path, "items"),
                Value::Null,
                "must only have a single schema if x-kubernetes-list-type is map",
            ));
        }
        if let Some(is) = &s.items {
            let ity = is.ty.as_deref().unwrap_or("");
            if ity != "object" {
                errs.push(FieldError::invalid(
                    child(&child(path, "items"), "type"),
                    Value::from(ity),
                    "must be object if parent array's x-kubernetes-list-type is map",
                ));
            } else {
                let mut seen = std::collections::HashSet::new();
                for k in &s.x_list_map_keys {
                    match is.properties.get(k) {
                        Some(p) => {
                            if matches!(p.ty.as_deref(), Some("array" | "object")) {
                                errs.push(FieldError::invalid(
                                    child(&key(&child(&child(path, "items"), "properties"), k), "type"),
                                    Value::from(ity),
                                    "must be a scalar type if parent array's x-kubernetes-list-type is map",
                                ));
                            }
                        }
                        None => errs.push(FieldError::invalid(
                            child(path, "x-kubernetes-list-map-keys"),
                            keys_value(),
                            "entries must all be names of item properties",
                        )),
                    }
                    if !seen.insert(k) {
                        errs.push(FieldError::invalid(
                            child(path, "x-kubernetes-list-map-keys"),
                            keys_value(),
                            "must not contain duplicate entries",
                        ));
                    }
                }
            }
        }
    }
    map_list_keys_map_set(s, path, errs);
    validation_rules(s, path, errs);
}

/// `validateMapListKeysMapSet`.
fn map_list_keys_map_set(s: &SchemaNode, path: &str, errs: &mut Vec<FieldError>) {
    let (Some(is), Some(lt)) = (&s.items, s.x_list_type.as_deref()) else {
        return;
    };
    if lt != "set" && lt != "map" {
        return;
    }
    let ipath = child(path, "items");
    if is.nullable {
        errs.push(FieldError::forbidden(
            child(&ipath, "nullable"),
            format!("cannot be nullable when x-kubernetes-list-type is {lt}"),
        ));
    }
    if lt == "map" {
        for k in &s.x_list_map_keys {
            let Some(p) = is.properties.get(k) else {
                continue;
            };
            let ppath = key(&child(&ipath, "properties"), k);
            if !is.required.contains(k) && p.default.is_none() {
                errs.push(FieldError::required(
                    child(&ppath, "default"),
                    "this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
                ));
            }
            if p.nullable {
                errs.push(FieldError::forbidden(
                    child(&ppath, "nullable"),
                    "this property is in x-kubernetes-list-map-keys, so it cannot be nullable",
                ));
            }
        }
    }
}

/// The static (non-CEL) checks on `x-kubernetes-validations`.
fn validation_rules(s: &SchemaNode, path: &str, errs: &mut Vec<FieldError>) {
    const REASONS: [&str; 4] = [
        "FieldValueDuplicate",
        "FieldValueForbidden",
        "FieldValueInvalid",
        "FieldValueRequired",
    ];
    let has_newlines = |x: &str| x.contains(['\n', '\r']);
    for (i, rule) in s.x_validations.iter().enumerate() {
        let rpath = index(&child(path, "x-kubernetes-validations"), i);
        let Some(r) = rule.as_object() else {
            errs.push(FieldError::invalid(
                rpath,
                rule.clone(),
                "must be an object",
            ));
            continue;
        };
        let get = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("");
        let (rule_s, msg, msg_expr, field_path) = (
            get("rule"),
            get("message"),
            get("messageExpression"),
            get("fieldPath"),
        );
        let (t_rule, t_msg) = (rule_s.trim(), msg.trim());
        if t_rule.is_empty() {
            errs.push(FieldError::required(
                child(&rpath, "rule"),
                "rule is not specified",
            ));
        } else if !msg.is_empty() && t_msg.is_empty() {
            errs.push(FieldError::invalid(
                child(&rpath, "message"),
                Value::from(msg),
                "must be non-empty if specified",
            ));
        } else if has_newlines(t_msg) {
            errs.push(FieldError::invalid(
                child(&rpath, "message"),
                Value::from(msg),
                "must not contain line breaks",
            ));
        } else if has_newlines(t_rule) && t_msg.is_empty() {
            errs.push(FieldError::required(
                child(&rpath, "message"),
                "message must be specified if rule contains line breaks",
            ));
        }
        if !msg_expr.is_empty() && msg_expr.trim().is_empty() {
            errs.push(FieldError::required(
                child(&rpath, "messageExpression"),
                "messageExpression must be non-empty if specified",
            ));
        }
        if let Some(reason) = r.get("reason").and_then(Value::as_str)
            && !REASONS.contains(&reason)
        {
            errs.push(FieldError::not_supported(
                child(&rpath, "reason"),
                Value::from(reason),
                &REASONS,
            ));
        }
        if !field_path.is_empty() && field_path.trim().is_empty() {
            errs.push(FieldError::invalid(
                child(&rpath, "fieldPath"),
                Value::from(field_path),
                "must be non-empty if specified",
            ));
        }
        if has_newlines(field_path) {
            errs.push(FieldError::invalid(
                child(&rpath, "fieldPath"),
                Value::from(field_path),
                "must not contain line breaks",
            ));
        }
    }
}
