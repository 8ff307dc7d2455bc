//! Admission: turning what a client sent into what is stored.
//!
//! This is kube-apiserver's "strategy" step: server-managed metadata (uid, timestamps,
//! generation), the status-subresource rules, name and label validation, and the kind's own
//! checks — decoding into the k8s-openapi type for built-in kinds (which also drops unknown
//! fields, as Go structs do), pruning, defaulting and structural-schema validation for custom
//! resources. Unknown fields are reported according to `fieldValidation`.

use opkit_apimachinery::go_quote;
use serde_json::Value;

use crate::error::{ApiError, ApiResult, Cause};
use crate::object::{self, meta_mut};
use crate::registry::{Origin, Resource};
use crate::request::{FieldCheck, FieldValidation, Part, Wording};
use crate::response::Warnings;

impl FieldCheck {
    /// Whether a refusal would show the object as the write produced it (before admission).
    fn shows_patched(&self) -> bool {
        self.validation == FieldValidation::Strict && matches!(self.body.wording, Wording::Patched)
    }

    /// Reports the body's errors, then the object's `unknown` fields: dropped (`Ignore`), as
    /// warnings (`Warn`), or refused in upstream's words (`Strict`). `version` is the one the
    /// body named; `patched` is the object a patch produced.
    fn report(
        &self,
        res: &Resource,
        version: &str,
        unknown: Vec<String>,
        patched: Option<&Value>,
    ) -> ApiResult<Warnings> {
        if self.body.errors.is_empty() && unknown.is_empty() {
            return Ok(Vec::new());
        }
        let unknown = unknown
            .iter()
            .map(|f| format!("unknown field {}", go_quote(f)));
        let errors: Vec<String> = self.body.errors.iter().cloned().chain(unknown).collect();
        match self.validation {
            FieldValidation::Ignore => Ok(Vec::new()),
            FieldValidation::Warn => Ok(errors),
            FieldValidation::Strict => Err(self.refusal(res, version, &errors, patched)),
        }
    }

    fn refusal(
        &self,
        res: &Resource,
        version: &str,
        errors: &[String],
        patched: Option<&Value>,
    ) -> ApiError {
        let decoding = format!("strict decoding error: {}", errors.join(", "));
        let patch_invalid = |shown: String| {
            ApiError::invalid(
                "",
                "",
                "",
                vec![Cause::new(
                    "FieldValueInvalid",
                    "patch",
                    format!("Invalid value: {}: {decoding}", go_quote(&shown)),
                )],
            )
        };
        match &self.body.wording {
            Wording::Plain => ApiError::bad_request(decoding),
            Wording::Object => {
                let kind = &res.kind;
                ApiError::bad_request(format!(
                    "{kind} in version {} cannot be handled as a {kind}: {decoding}",
                    go_quote(version)
                ))
            }
            Wording::Patched => {
                patch_invalid(opkit_apimachinery::go_json(patched.unwrap_or(&Value::Null)))
            }
            Wording::Strategic(patch) => patch_invalid(opkit_apimachinery::go_sprint(patch)),
        }
    }
}

/// The version a body names in `apiVersion` (`v1` of `apps/v1`), else the endpoint's.
fn body_version(res: &Resource, obj: &Value) -> String {
    match obj.get("apiVersion").and_then(Value::as_str) {
        Some(v) if !v.is_empty() => v.rsplit_once('/').map_or(v, |(_, v)| v).to_string(),
        _ => res.version.clone(),
    }
}

fn invalid(res: &Resource, name: &str, causes: Vec<Cause>) -> ApiError {
    ApiError::invalid(&res.group, &res.kind, name, causes)
}

/// Checks and defaults apiVersion/kind of a body against the endpoint.
pub fn check_type(res: &Resource, obj: &mut Value) -> ApiResult<()> {
    let Some(map) = obj.as_object_mut() else {
        return Err(ApiError::bad_request(
            "the body of the request must be a JSON or YAML object",
        ));
    };
    let expected = res.api_version();
    match map.get("apiVersion").and_then(Value::as_str) {
        None | Some("") => {
            map.insert("apiVersion".into(), Value::from(expected));
        }
        Some(v) if v == expected => {}
        Some(v) => {
            // Another served version of the same group is fine for custom resources (conversion None).
            let same_group = match v.rsplit_once('/') {
                Some((g, _)) => g == res.group,
                None => res.group.is_empty(),
            };
            if !(res.is_custom() && same_group) {
                return Err(ApiError::bad_request(format!(
                    "the API version in the data ({v}) does not match the expected API version ({expected})"
                )));
            }
            map.insert("apiVersion".into(), Value::from(expected));
        }
    }
    match map.get("kind").and_then(Value::as_str) {
        None | Some("") => {
            map.insert("kind".into(), Value::from(res.kind.clone()));
        }
        Some(k) if k == res.kind => {}
        Some(k) => {
            return Err(ApiError::bad_request(format!(
                "the kind in the data ({k}) does not match the expected kind ({})",
                res.kind
            )));
        }
    }
    if map
        .get("metadata")
        .is_some_and(|m| !m.is_object() && !m.is_null())
    {
        return Err(ApiError::bad_request("metadata must be an object"));
    }
    Ok(())
}

/// Prepares a new object for storage. `namespace` comes from the URL. Without `validate`
/// (mutating admission follows, and [`recheck_mutated`] after it) the object is decoded,
/// pruned and defaulted but its values are not validated yet, as upstream validates only
/// after mutating admission.
pub fn prepare_create(
    res: &Resource,
    namespace: Option<&str>,
    mut obj: Value,
    fields: &FieldCheck,
    validate: bool,
) -> ApiResult<(Value, Warnings)> {
    let version = body_version(res, &obj);
    check_type(res, &mut obj)?;
    let meta = meta_mut(&mut obj);
    if res.namespaced {
        let ns = namespace.unwrap_or("");
        match meta.get("namespace").and_then(Value::as_str) {
            Some(given) if !given.is_empty() && given != ns => {
                return Err(ApiError::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
            _ => {}
        }
        meta.insert("namespace".into(), Value::from(ns));
    } else {
        meta.remove("namespace");
    }
    let name = meta
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if name.is_empty() {
        match meta.get("generateName").and_then(Value::as_str) {
            Some(base) if !base.is_empty() => {
                let generated = opkit_apimachinery::validation::generate_name(base);
                meta.insert("name".into(), Value::from(generated));
            }
            _ => {
                return Err(invalid(
                    res,
                    "",
                    vec![Cause::new(
                        "FieldValueRequired",
                        "metadata.name",
                        "Required value: name or generateName is required",
                    )],
                ));
            }
        }
    }
    meta.insert("uid".into(), Value::from(object::new_uid()));
    meta.insert(
        "creationTimestamp".into(),
        Value::from(object::now_rfc3339()),
    );
    for server_managed in [
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "resourceVersion",
        "selfLink",
        "generation",
    ] {
        meta.remove(server_managed);
    }
    if res.tracks_generation || res.is_custom() {
        meta.insert("generation".into(), Value::from(1));
    }
    if res.status {
        reset_status_on_create(res, &mut obj);
    }
    let warnings = admit(res, &mut obj, None, fields, &version, None, validate)?;
    Ok((obj, warnings))
}

/// Gives a new object of a kind with a status subresource the status it starts with (its
/// strategy's), whatever the client sent.
fn reset_status_on_create(res: &Resource, obj: &mut Value) {
    let status = super::of(res).initial_status(obj);
    let Some(map) = obj.as_object_mut() else {
        return;
    };
    match status {
        Some(status) => {
            map.insert("status".into(), status);
        }
        None => {
            map.remove("status");
        }
    }
}

/// Prepares an update of `old` to `new`, for the main resource or a subresource. The caller
/// checked the resourceVersion precondition.
pub fn prepare_update(
    res: &Resource,
    old: &Value,
    mut new: Value,
    part: Part,
    fields: &FieldCheck,
    validate: bool,
) -> ApiResult<(Value, Warnings)> {
    let version = body_version(res, &new);
    let patched = fields.shows_patched().then(|| new.clone());
    check_type(res, &mut new)?;
    let name = object::name(old).to_string();
    let new_name = object::meta_str(&new, "name").unwrap_or("");
    if !new_name.is_empty() && new_name != name {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({new_name}) does not match the name on the URL ({name})"
        )));
    }
    if let Some(ns) = object::meta_str(old, "namespace") {
        match object::meta_str(&new, "namespace") {
            Some(given) if !given.is_empty() && given != ns => {
                return Err(ApiError::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
            _ => {}
        }
    }
    if part == Part::Status {
        // Only status changes; everything else stays as it was.
        let status = new.get("status").cloned();
        let mut merged = old.clone();
        match status {
            Some(s) => merged["status"] = s,
            None => {
                if let Some(m) = merged.as_object_mut() {
                    m.remove("status");
                }
            }
        }
        new = merged;
    } else if res.status {
        let old_status = old.get("status").cloned();
        if let Some(m) = new.as_object_mut() {
            match old_status {
                Some(s) => {
                    m.insert("status".into(), s);
                }
                None => {
                    m.remove("status");
                }
            }
        }
    }
    let old_meta = object::meta(old).cloned().unwrap_or_default();
    let meta = meta_mut(&mut new);
    for immutable in [
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "generation",
        "name",
        "namespace",
    ] {
        match old_meta.get(immutable) {
            Some(v) => {
                meta.insert(immutable.into(), v.clone());
            }
            None => {
                meta.remove(immutable);
            }
        }
    }
    meta.remove("selfLink");
    if old_meta.contains_key("deletionTimestamp") {
        let old_f: Vec<&Value> = old_meta
            .get("finalizers")
            .and_then(Value::as_array)
            .map(|a| a.iter().collect())
            .unwrap_or_default();
        let added: Vec<String> = meta
            .get("finalizers")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter(|f| !old_f.contains(f))
                    .filter_map(|f| f.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        if !added.is_empty() {
            let list = added
                .iter()
                .map(|f| format!("{f:?}"))
                .collect::<Vec<_>>()
                .join(", ");
            return Err(invalid(
                res,
                &name,
                vec![Cause::new(
                    "FieldValueForbidden",
                    "metadata.finalizers",
                    format!(
                        "Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{{{list}}}"
                    ),
                )],
            ));
        }
    }
    let warnings = admit(
        res,
        &mut new,
        Some(old),
        fields,
        &version,
        patched.as_ref(),
        validate,
    )?;
    if (res.tracks_generation || res.is_custom()) && object::spec_changed(old, &new, res.status) {
        let generation = old_meta
            .get("generation")
            .and_then(Value::as_i64)
            .unwrap_or(0)
            + 1;
        meta_mut(&mut new).insert("generation".into(), Value::from(generation));
    }
    Ok((new, warnings))
}

/// Validates an object after mutating admission (prepared without validation), as upstream
/// validates what mutating admission produced: the server-managed metadata of `before` is kept (a webhook cannot
/// change uid, resourceVersion, timestamps or generation), a changed name or namespace is
/// refused, and the kind's checks run again (unknown fields dropped, as decoding does).
pub(crate) fn recheck_mutated(
    res: &Resource,
    before: &Value,
    obj: &mut Value,
    old: Option<&Value>,
) -> ApiResult<()> {
    for identity in ["name", "namespace"] {
        if object::meta_str(before, identity) != object::meta_str(obj, identity) {
            return Err(ApiError::bad_request(format!(
                "mutating admission changed metadata.{identity} from {:?} to {:?}",
                object::meta_str(before, identity).unwrap_or(""),
                object::meta_str(obj, identity).unwrap_or("")
            )));
        }
    }
    let kept = before.get("metadata").and_then(Value::as_object).cloned();
    let meta = meta_mut(obj);
    for key in [
        "uid",
        "resourceVersion",
        "creationTimestamp",
        "generation",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "managedFields",
    ] {
        match kept.as_ref().and_then(|m| m.get(key)) {
            Some(v) => {
                meta.insert(key.into(), v.clone());
            }
            None => {
                meta.remove(key);
            }
        }
    }
    let version = body_version(res, obj);
    check_type(res, obj)?;
    admit(
        res,
        obj,
        old,
        &FieldCheck::from(FieldValidation::Ignore),
        &version,
        None,
        true,
    )?;
    Ok(())
}

/// The kind-specific checks shared by create and update. Unknown and duplicate fields are
/// reported before invalid values, as upstream decodes (strictly) before it validates. Without
/// `validate`, only decoding (and pruning, defaulting) happens.
fn admit(
    res: &Resource,
    obj: &mut Value,
    old: Option<&Value>,
    fields: &FieldCheck,
    version: &str,
    patched: Option<&Value>,
    validate: bool,
) -> ApiResult<Warnings> {
    let name = object::name(obj).to_string();
    let mut causes = match validate {
        true => validate_metadata(res, obj),
        false => Vec::new(),
    };
    let mut unknown = Vec::new();
    match &res.origin {
        Origin::Builtin(check) => match check(obj) {
            Ok(mut normalised) => {
                collect_dropped(obj, &normalised, String::new(), &mut unknown);
                crate::defaults::apply(&res.group, &res.plural, &mut normalised);
                *obj = normalised;
            }
            Err(message) => {
                let (field, detail) = match message.split_once(": ") {
                    Some((path, rest)) if !path.contains(' ') => {
                        (path.to_string(), rest.to_string())
                    }
                    _ => (String::new(), message.clone()),
                };
                causes.push(Cause::new(
                    "FieldValueInvalid",
                    &field,
                    format!("Invalid value: {detail}"),
                ));
            }
        },
        Origin::Custom(custom) => {
            if let Some(schema) = &custom.schema {
                if !custom.preserve_unknown_fields {
                    unknown.extend(
                        schema
                            .prune(obj)
                            .into_iter()
                            .map(|p| p.trim_start_matches('.').to_string()),
                    );
                }
                schema.apply_defaults(obj);
                if !validate {
                    return fields.report(res, version, unknown, patched);
                }
                let mut errors = schema.validate(obj);
                // CEL rules run after structural validation, unless it found errors that make
                // the rules meaningless (wrong types, enums, required, limits): then upstream
                // reports one "rules were not checked" error instead.
                if let Some(rules) = custom.cel.as_deref().filter(|v| !v.is_empty()) {
                    match opkit_cel::blocking_error(&errors) {
                        Some(blocked) => errors.push(blocked),
                        None => errors.extend(rules.validate(obj, old)),
                    }
                }
                causes.extend(errors.iter().map(Cause::from_field_error));
            }
        }
    }
    let warnings = fields.report(res, version, unknown, patched)?;
    if !causes.is_empty() {
        return Err(invalid(res, &name, causes));
    }
    Ok(warnings)
}

/// Fields present (non-null) in `input` but gone after normalisation: unknown to the kind.
fn collect_dropped(input: &Value, normalised: &Value, path: String, out: &mut Vec<String>) {
    match (input, normalised) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in a {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                match b.get(k) {
                    Some(nv) => collect_dropped(v, nv, p, out),
                    None if !v.is_null() && !is_empty_container(v) => out.push(p),
                    None => {}
                }
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            for (i, (v, nv)) in a.iter().zip(b.iter()).enumerate() {
                collect_dropped(v, nv, format!("{path}[{i}]"), out);
            }
        }
        _ => {}
    }
}

fn is_empty_container(v: &Value) -> bool {
    match v {
        Value::Object(m) => m.is_empty(),
        Value::Array(a) => a.is_empty(),
        _ => false,
    }
}

/// Name, labels, annotations, finalizers and owner references, as upstream's ObjectMeta
/// validation.
fn validate_metadata(res: &Resource, obj: &Value) -> Vec<Cause> {
    use opkit_apimachinery::validation as v;
    let Some(meta) = obj.get("metadata") else {
        return Vec::new();
    };
    let rule = if res.is_custom() {
        v::NameRule::Dns1123Subdomain
    } else {
        v::name_rule_for(&res.group, &res.plural)
    };
    v::validate_object_meta(meta, res.namespaced, rule)
        .0
        .iter()
        .map(|e| Cause::new(e.reason(), &e.field, e.body()))
        .collect()
}
