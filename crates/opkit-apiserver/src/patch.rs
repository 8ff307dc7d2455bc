//! The patch formats: JSON patch (RFC 6902), JSON merge patch (RFC 7386) and strategic merge
//! patch applied to an object; server-side apply's ownership tracking is [`managed`]. The
//! PATCH verb itself is `endpoints::patch`.

pub(crate) mod managed;

use serde_json::Value;

use crate::error::{ApiError, ApiResult, Cause};

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
pub(crate) fn json_patch_errors(patch: &Value, duplicates: Vec<String>) -> Vec<String> {
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
pub(crate) fn apply_strategic(
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

/// Checks an applied configuration against the URL (apiVersion, kind, name; no managed fields)
/// and fills in the name when it is left out.
pub(crate) fn check_applied_config(
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
