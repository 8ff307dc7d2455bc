//! AdmissionReview v1 in and out, and the typed hooks behind each path.
//!
//! `kube::core::admission` has these types, but only behind kube's `admission` feature (a
//! rebuild of kube for the whole workspace), its patch is json-patch 4's while the workspace
//! uses 5, and its `patch` bytes serialize as a number array where the API server expects
//! base64. What a webhook needs of the review is small, so it is decoded here.

use std::sync::Arc;

use base64::Engine;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::{Admission, Defaulter, Validator};

/// The part of an `admission.k8s.io/v1` AdmissionReview request the hooks use.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Request {
    pub(crate) uid: String,
    pub(crate) operation: String,
    #[serde(default)]
    pub(crate) object: Option<Value>,
    #[serde(default)]
    pub(crate) old_object: Option<Value>,
    #[serde(default)]
    pub(crate) dry_run: Option<bool>,
    #[serde(default)]
    pub(crate) namespace: Option<String>,
}

/// Decodes the `request` of a review body of `kind` in `api_version` into `R`, checking it
/// has a uid; the error is the message of a 400. Admission and conversion reviews share
/// this envelope.
pub(crate) fn decode_request<R: DeserializeOwned>(
    body: &[u8],
    api_version: &str,
    kind: &str,
) -> Result<R, String> {
    let review: Value =
        serde_json::from_slice(body).map_err(|e| format!("the body is not a JSON {kind}: {e}"))?;
    let got_version = review.get("apiVersion").and_then(Value::as_str);
    let got_kind = review.get("kind").and_then(Value::as_str);
    if got_version != Some(api_version) || got_kind != Some(kind) {
        return Err(format!(
            "expected apiVersion {api_version} and kind {kind}, got {} {}",
            got_version.unwrap_or("(none)"),
            got_kind.unwrap_or("(none)")
        ));
    }
    let request = review
        .get("request")
        .filter(|r| !r.is_null())
        .ok_or_else(|| format!("the {kind} has no request"))?;
    if request
        .get("uid")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        return Err(format!("the {kind}'s request has no uid"));
    }
    serde_json::from_value(request.clone())
        .map_err(|e| format!("the {kind}'s request is invalid: {e}"))
}

/// Decodes an AdmissionReview v1 body; the error is the message of a 400.
pub(crate) fn decode(body: &[u8]) -> Result<Request, String> {
    decode_request(body, API_VERSION, KIND)
}

const API_VERSION: &str = "admission.k8s.io/v1";
const KIND: &str = "AdmissionReview";

/// The answer to a body that is not a review to answer (a 400), with the reason.
pub(crate) fn refused(message: String) -> Value {
    json!({
        "apiVersion": API_VERSION, "kind": KIND,
        "response": {"uid": "", "allowed": false, "status": {"code": 400, "message": message}},
    })
}

/// The review sent back: allowed (with warnings and maybe a patch) or denied.
pub(crate) fn response(uid: &str, outcome: Outcome) -> Value {
    let mut response = json!({"uid": uid, "allowed": outcome.denial.is_none()});
    if let Some((code, message)) = outcome.denial {
        response["status"] = json!({"code": code, "message": message});
    }
    if !outcome.warnings.is_empty() {
        response["warnings"] = json!(outcome.warnings);
    }
    if let Some(patch) = outcome.patch {
        response["patchType"] = json!("JSONPatch");
        response["patch"] = json!(base64::engine::general_purpose::STANDARD.encode(patch));
    }
    json!({"apiVersion": API_VERSION, "kind": KIND, "response": response})
}

/// What a hook decided.
#[derive(Debug, Default)]
pub(crate) struct Outcome {
    pub(crate) denial: Option<(u16, String)>,
    pub(crate) warnings: Vec<String>,
    pub(crate) patch: Option<Vec<u8>>,
}

impl Outcome {
    fn denied(code: u16, message: impl Into<String>, warnings: Vec<String>) -> Outcome {
        Outcome {
            denial: Some((code, message.into())),
            warnings,
            patch: None,
        }
    }
}

/// A hook behind one path, with its object type erased.
pub(crate) trait Hook: Send + Sync {
    fn review(&self, request: &Request) -> Outcome;
}

fn typed<K: DeserializeOwned>(value: &Value, which: &str) -> Result<K, Outcome> {
    serde_json::from_value(value.clone()).map_err(|e| {
        Outcome::denied(
            400,
            format!("cannot decode the request's {which}: {e}"),
            Vec::new(),
        )
    })
}

fn required<'a>(value: &'a Option<Value>, which: &str) -> Result<&'a Value, Outcome> {
    value
        .as_ref()
        .filter(|v| !v.is_null())
        .ok_or_else(|| Outcome::denied(400, format!("the request has no {which}"), Vec::new()))
}

pub(crate) struct DefaultingHook<K, D> {
    pub(crate) defaulter: Arc<D>,
    pub(crate) _kind: std::marker::PhantomData<fn() -> K>,
}

impl<K, D> Hook for DefaultingHook<K, D>
where
    K: DeserializeOwned + serde::Serialize + Send + Sync + 'static,
    D: Defaulter<K>,
{
    fn review(&self, request: &Request) -> Outcome {
        // Deletes (and connects) carry no object to default.
        if request.operation != "CREATE" && request.operation != "UPDATE" {
            return Outcome::default();
        }
        let run = || -> Result<Outcome, Outcome> {
            let original = required(&request.object, "object")?;
            let mut object: K = typed(original, "object")?;
            // The patch is computed against the object as the type sees it, so fields the
            // type does not know are never removed.
            let before = serde_json::to_value(&object).map_err(|e| {
                Outcome::denied(500, format!("cannot encode the object: {e}"), Vec::new())
            })?;
            let admission = Admission {
                operation: request.operation.clone(),
                dry_run: request.dry_run.unwrap_or(false),
                namespace: request.namespace.clone().unwrap_or_default(),
            };
            if let Err(denied) = self.defaulter.default(&mut object, &admission) {
                return Err(Outcome::denied(
                    denied.code,
                    denied.message,
                    denied.warnings,
                ));
            }
            let after = serde_json::to_value(&object).map_err(|e| {
                Outcome::denied(
                    500,
                    format!("cannot encode the defaulted object: {e}"),
                    Vec::new(),
                )
            })?;
            let patch = applicable(original, json_patch::diff(&before, &after));
            if patch.0.is_empty() {
                return Ok(Outcome::default());
            }
            let bytes = serde_json::to_vec(&patch).map_err(|e| {
                Outcome::denied(500, format!("cannot encode the patch: {e}"), Vec::new())
            })?;
            Ok(Outcome {
                patch: Some(bytes),
                ..Outcome::default()
            })
        };
        run().unwrap_or_else(|o| o)
    }
}

/// Rewrites a patch computed on the typed round trip so that it applies to the object as
/// received: a `replace` of a member the received object lacks (the type serialized it as a
/// default) becomes an `add`; a `remove` of such a member is dropped.
fn applicable(original: &Value, patch: json_patch::Patch) -> json_patch::Patch {
    use json_patch::{AddOperation, PatchOperation};
    let ops = patch
        .0
        .into_iter()
        .filter_map(|op| match op {
            PatchOperation::Replace(r) if original.pointer(r.path.as_str()).is_none() => {
                Some(PatchOperation::Add(AddOperation {
                    path: r.path,
                    value: r.value,
                }))
            }
            PatchOperation::Remove(r) if original.pointer(r.path.as_str()).is_none() => None,
            other => Some(other),
        })
        .collect();
    json_patch::Patch(ops)
}

pub(crate) struct ValidatingHook<K, V> {
    pub(crate) validator: Arc<V>,
    pub(crate) _kind: std::marker::PhantomData<fn() -> K>,
}

impl<K, V> Hook for ValidatingHook<K, V>
where
    K: DeserializeOwned + Send + Sync + 'static,
    V: Validator<K>,
{
    fn review(&self, request: &Request) -> Outcome {
        let admission = Admission {
            operation: request.operation.clone(),
            dry_run: request.dry_run.unwrap_or(false),
            namespace: request.namespace.clone().unwrap_or_default(),
        };
        let run = || -> Result<Result<Vec<String>, super::Denied>, Outcome> {
            Ok(match request.operation.as_str() {
                "CREATE" => {
                    let new: K = typed(required(&request.object, "object")?, "object")?;
                    self.validator.validate_create(&new, &admission)
                }
                "UPDATE" => {
                    let new: K = typed(required(&request.object, "object")?, "object")?;
                    let old: K = typed(required(&request.old_object, "oldObject")?, "oldObject")?;
                    self.validator.validate_update(&old, &new, &admission)
                }
                "DELETE" => {
                    let old: K = typed(required(&request.old_object, "oldObject")?, "oldObject")?;
                    self.validator.validate_delete(&old, &admission)
                }
                other => {
                    return Err(Outcome::denied(
                        400,
                        format!("unsupported operation {other:?}"),
                        Vec::new(),
                    ));
                }
            })
        };
        match run() {
            Ok(Ok(warnings)) => Outcome {
                warnings,
                ..Outcome::default()
            },
            Ok(Err(denied)) => Outcome::denied(denied.code, denied.message, denied.warnings),
            Err(outcome) => outcome,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_reviews_are_refused_with_a_reason() {
        assert!(
            decode(b"nope")
                .unwrap_err()
                .contains("not a JSON AdmissionReview")
        );
        assert!(
            decode(br#"{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview"}"#)
                .unwrap_err()
                .contains("admission.k8s.io/v1beta1")
        );
        assert_eq!(
            decode(br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}"#)
                .unwrap_err(),
            "the AdmissionReview has no request"
        );
    }

    #[test]
    fn a_patch_applies_to_the_object_as_received() {
        let original = json!({"spec": {"a": 1}, "unknown": true});
        let before = json!({"spec": {"a": 1, "b": null}});
        let after = json!({"spec": {"a": 1, "b": 3}});
        let patch = applicable(&original, json_patch::diff(&before, &after));
        let mut patched = original.clone();
        json_patch::patch(&mut patched, &patch).unwrap();
        assert_eq!(patched, json!({"spec": {"a": 1, "b": 3}, "unknown": true}));
    }

    #[test]
    fn responses_carry_the_uid_denial_and_base64_patch() {
        let denied = response("u", Outcome::denied(403, "no", vec!["w".into()]));
        assert_eq!(denied["response"]["uid"], "u");
        assert_eq!(denied["response"]["allowed"], false);
        assert_eq!(denied["response"]["status"]["message"], "no");
        assert_eq!(denied["response"]["warnings"][0], "w");
        let patched = response(
            "u",
            Outcome {
                patch: Some(b"[]".to_vec()),
                ..Outcome::default()
            },
        );
        assert_eq!(patched["response"]["patch"], "W10=");
        assert_eq!(patched["response"]["patchType"], "JSONPatch");
    }
}
