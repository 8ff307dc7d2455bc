//! PATCH: JSON patch (RFC 6902) and JSON merge patch (RFC 7386) applied to the current object,
//! then handled as an update (admission, compare-and-swap, retry on a lost race).

use serde_json::Value;

use crate::admission::Part;
use crate::error::{ApiError, ApiResult, Cause};
use crate::handlers::{Answer, ObjectRef, Query};
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
        _ => ApiError::internal(e),
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
        let patch: Value = match patch_type {
            PatchType::Apply => serde_yaml::from_slice(body)
                .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?,
            _ => serde_json::from_slice(body)
                .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?,
        };
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
            PatchType::Apply => {
                return Err(ApiError::unsupported_patch(
                    "application/apply-patch+yaml",
                    &[
                        "application/json-patch+json",
                        "application/merge-patch+json",
                        "application/strategic-merge-patch+json",
                    ],
                ));
            }
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
                .code,
            415
        );
    }
}
