//! PATCH: JSON patch (RFC 6902), JSON merge patch (RFC 7386) and strategic merge patch applied
//! to the current object, then handled as an update (admission, compare-and-swap, retry on a
//! lost race); server-side apply (`application/apply-patch+yaml`) merges the applied
//! configuration with ownership tracking ([`managed`]) and creates the object when missing.

pub(crate) mod managed;

use std::sync::Arc;

use serde_json::Value;

use crate::error::{ApiError, ApiResult, Cause};
use crate::request::{BodyFields, ObjectRef, Part, Query, Wording};
use crate::response::Answer;
use crate::server::ApiServer;

/// The patch formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchType {
    /// `application/json-patch+json`.
    Json,
    /// `application/merge-patch+json`.
    Merge,
    /// `application/strategic-merge-patch+json`.
    Strategic,
    /// `application/apply-patch+yaml` (server-side apply).
    Apply,
}

impl PatchType {
    /// From the request's `Content-Type`.
    pub fn from_content_type(ct: Option<&str>) -> ApiResult<PatchType> {
        let essence = ct
            .unwrap_or("")
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        match essence.as_str() {
            "application/json-patch+json" => Ok(PatchType::Json),
            "application/merge-patch+json" => Ok(PatchType::Merge),
            "application/strategic-merge-patch+json" => Ok(PatchType::Strategic),
            "application/apply-patch+yaml"
            | "application/apply-patch+json"
            | "application/apply-patch+cbor" => Ok(PatchType::Apply),
            _ => Err(ApiError::unsupported_patch(
                ct.unwrap_or(""),
                &[
                    "application/json-patch+json",
                    "application/merge-patch+json",
                    "application/strategic-merge-patch+json",
                    "application/apply-patch+yaml",
                ],
            )),
        }
    }
}

/// The strict-decoding errors of a JSON patch document itself: duplicate fields anywhere and
/// operation fields other than `op`, `path`, `from` and `value`, worded as upstream does
/// (`json patch unknown field "[0].foo"`).
fn json_patch_errors(patch: &Value, duplicates: Vec<String>) -> Vec<String> {
    let mut errors: Vec<String> = duplicates
        .into_iter()
        .map(|d| format!("json patch {d}"))
        .collect();
    for (i, op) in patch.as_array().into_iter().flatten().enumerate() {
        for key in op.as_object().into_iter().flat_map(|m| m.keys()) {
            if !matches!(key.as_str(), "op" | "path" | "from" | "value") {
                let path = format!("[{i}].{key}");
                errors.push(format!(
                    "json patch unknown field {}",
                    opkit_apimachinery::go_quote(&path)
                ));
            }
        }
    }
    errors
}

/// Applies a JSON patch document to a copy of `current`.
pub fn apply_json_patch(current: &Value, patch: &Value) -> Result<Value, String> {
    let ops: json_patch::Patch = serde_json::from_value(patch.clone())
        .map_err(|e| format!("the JSON patch is malformed: {e}"))?;
    let mut doc = current.clone();
    for op in ops.0 {
        // As upstream (evanphx/json-patch), `test` of a missing path against `null` succeeds:
        // kube-rs's finalizer helper relies on it when an object has no finalizers yet.
        if let json_patch::PatchOperation::Test(t) = &op
            && t.value.is_null()
        {
            match doc.pointer(t.path.as_str()) {
                None | Some(Value::Null) => continue,
                Some(other) => {
                    return Err(format!(
                        "testing value {} failed: test failed, expected null, got {other}",
                        t.path
                    ));
                }
            }
        }
        json_patch::patch(&mut doc, std::slice::from_ref(&op)).map_err(|e| e.to_string())?;
    }
    Ok(doc)
}

/// Applies a JSON merge patch to a copy of `current`.
pub fn apply_merge_patch(current: &Value, patch: &Value) -> Result<Value, String> {
    if !patch.is_object() {
        return Err("a merge patch must be a JSON object".into());
    }
    let mut doc = current.clone();
    json_patch::merge(&mut doc, patch);
    Ok(doc)
}

/// Applies a strategic merge patch, mapping its errors to the codes upstream answers with.
fn apply_strategic(
    current: &Value,
    patch: &Value,
    meta: &opkit_strategic::BuiltinPatchMeta,
    group: &str,
    kind: &str,
    name: &str,
) -> ApiResult<Value> {
    opkit_strategic::strategic_merge(current, patch, meta).map_err(|e| match e.http_status() {
        400 => ApiError::bad_request(e.to_string()),
        422 => ApiError::invalid(
            group,
            kind,
            name,
            vec![Cause::new("FieldValueInvalid", "", e.to_string())],
        ),
        // Every other failure is the patch's fault too (an unknown `$patch`, a missing merge
        // key): upstream answers some of them with 500, but bad input is a client error.
        _ => ApiError::bad_request(e.to_string()),
    })
}

impl ApiServer {
    /// PATCH of the main resource or the status subresource.
    pub async fn patch(
        &self,
        target: ObjectRef<'_>,
        part: Part,
        patch_type: PatchType,
        body: &[u8],
        query: &Query,
    ) -> ApiResult<Answer> {
        if patch_type == PatchType::Apply {
            return self.server_side_apply(target, part, body, query).await;
        }
        managed::check_non_apply_options(query)?;
        let ObjectRef { res, name, .. } = target;
        let supported: &[&str] = if res.is_custom() {
            &[
                "application/json-patch+json",
                "application/merge-patch+json",
                "application/apply-patch+yaml",
            ]
        } else {
            &[
                "application/json-patch+json",
                "application/merge-patch+json",
                "application/strategic-merge-patch+json",
                "application/apply-patch+yaml",
            ]
        };
        let (patch, duplicates) = crate::strict::decode_json(body)
            .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
        let patch = Arc::new(patch);
        let (errors, wording) = match patch_type {
            PatchType::Json => (json_patch_errors(&patch, duplicates), Wording::Patched),
            PatchType::Strategic => (duplicates, Wording::Strategic(patch.clone())),
            // (An apply was handled above.)
            PatchType::Merge | PatchType::Apply => (duplicates, Wording::Patched),
        };
        let query = &query
            .clone()
            .with_body_fields(BodyFields { errors, wording });
        let strategic = match patch_type {
            PatchType::Json | PatchType::Merge => None,
            PatchType::Strategic => {
                match opkit_strategic::BuiltinPatchMeta::for_kind(
                    &res.group,
                    &res.version,
                    &res.kind,
                ) {
                    Some(meta) if !res.is_custom() => Some(meta),
                    _ => {
                        return Err(ApiError::unsupported_patch(
                            "application/strategic-merge-patch+json",
                            supported,
                        ));
                    }
                }
            }
            PatchType::Apply => None,
        };
        let kind = res.kind.clone();
        let group = res.group.clone();
        let name_owned = name.to_string();
        self.update_with(target, part, query, false, move |current| {
            let result = match (&strategic, patch_type) {
                (Some(meta), _) => {
                    return apply_strategic(current, &patch, meta, &group, &kind, &name_owned);
                }
                (None, PatchType::Json) => apply_json_patch(current, &patch),
                (None, _) => apply_merge_patch(current, &patch),
            };
            result.map_err(|message| {
                ApiError::invalid(
                    &group,
                    &kind,
                    &name_owned,
                    vec![Cause::new("FieldValueInvalid", "", message)],
                )
            })
        })
        .await
    }

    /// Server-side apply: `body` (YAML or JSON) is the manager's whole intent for the object.
    /// Conflicts with other managers are a `409` unless `force=true`; a missing object is
    /// created (`201`), through the same admission as a create.
    async fn server_side_apply(
        &self,
        target: ObjectRef<'_>,
        part: Part,
        body: &[u8],
        query: &Query,
    ) -> ApiResult<Answer> {
        let ObjectRef { res, ns, name } = target;
        let (manager, force) = managed::apply_options(query)?;
        let mut config: Value = serde_yaml::from_slice(body)
            .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?;
        check_applied_config(res, name, &mut config)?;
        for _ in 0..8 {
            let updated = self
                .update_tracked(target, part, query, false, false, |current| {
                    managed::apply(res, part, Some(current), &config, &manager, force)
                })
                .await;
            match updated {
                Err(e)
                    if e.is_not_found()
                        && part == Part::Main
                        && self.store.get(&res.key(ns, name)).is_none() => {}
                other => return other,
            }
            let new = managed::apply(res, part, None, &config, &manager, force)?;
            match self.create_with(res, ns, new, query, false).await {
                Err(e) if e.is_already_exists() => continue,
                other => return other,
            }
        }
        Err(ApiError::stale(&res.group, &res.plural, name))
    }
}

/// Checks an applied configuration against the URL (apiVersion, kind, name; no managed fields)
/// and fills in the name when it is left out.
fn check_applied_config(
    res: &crate::registry::Resource,
    name: &str,
    config: &mut Value,
) -> ApiResult<()> {
    let Some(map) = config.as_object_mut() else {
        return Err(ApiError::bad_request(
            "the applied configuration must be a YAML or JSON object",
        ));
    };
    let expected = res.api_version();
    let given = map.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    if given != expected {
        return Err(ApiError::bad_request(format!(
            "Incorrect version specified in apply patch. Specified patch version: {given}, expected: {expected}"
        )));
    }
    match map.get("kind").and_then(Value::as_str) {
        None | Some("") => {
            return Err(ApiError::bad_request(
                "Object 'Kind' is missing in the apply patch",
            ));
        }
        Some(k) if k != res.kind => {
            return Err(ApiError::bad_request(format!(
                "the kind in the data ({k}) does not match the expected kind ({})",
                res.kind
            )));
        }
        Some(_) => {}
    }
    let meta = map
        .entry("metadata")
        .or_insert_with(|| Value::Object(serde_json::Map::new()));
    let Some(meta) = meta.as_object_mut() else {
        return Err(ApiError::bad_request("metadata must be an object"));
    };
    if meta.get("managedFields").is_some_and(|m| !m.is_null()) {
        return Err(ApiError::bad_request("metadata.managedFields must be nil"));
    }
    match meta.get("name").and_then(Value::as_str) {
        None | Some("") => {
            meta.insert("name".into(), Value::from(name));
        }
        Some(given) if given != name => {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({given}) does not match the name on the URL ({name})"
            )));
        }
        Some(_) => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_patch_test_operation_guards_the_change() {
        let cur = json!({"metadata": {"finalizers": ["a"]}});
        let ok = json!([{"op": "test", "path": "/metadata/finalizers", "value": ["a"]}, {"op": "remove", "path": "/metadata/finalizers/0"}]);
        assert_eq!(
            apply_json_patch(&cur, &ok).unwrap(),
            json!({"metadata": {"finalizers": []}})
        );
        let bad = json!([{"op": "test", "path": "/metadata/finalizers", "value": ["b"]}]);
        assert!(apply_json_patch(&cur, &bad).is_err());
    }

    #[test]
    fn json_patch_test_of_a_missing_path_against_null_succeeds() {
        let cur = json!({"metadata": {}});
        let p = json!([{"op": "test", "path": "/metadata/finalizers", "value": null}, {"op": "add", "path": "/metadata/finalizers", "value": ["f"]}]);
        assert_eq!(
            apply_json_patch(&cur, &p).unwrap(),
            json!({"metadata": {"finalizers": ["f"]}})
        );
    }

    #[test]
    fn merge_patch_null_removes_a_field() {
        let cur = json!({"spec": {"a": 1, "b": 2}});
        let out = apply_merge_patch(&cur, &json!({"spec": {"a": null, "c": 3}})).unwrap();
        assert_eq!(out, json!({"spec": {"b": 2, "c": 3}}));
    }

    #[test]
    fn unknown_patch_content_type_is_415() {
        assert_eq!(
            PatchType::from_content_type(Some("text/plain"))
                .unwrap_err()
                .code(),
            415
        );
    }
}
