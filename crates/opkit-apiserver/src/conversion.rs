//! CRD conversion (`spec.conversion`): custom resources are stored in their CRD's storage
//! version and shown in the version each request names, as upstream's apiextensions-apiserver
//! does.
//!
//! Every write stores the object converted to the storage version; every read (GET, LIST,
//! WATCH events, write answers, the base of a patch) converts what is stored to the request's
//! version. `strategy: None` changes only `apiVersion`; `strategy: Webhook` sends a
//! `ConversionReview` to the CRD's webhook over the shared client (`crate::webhook_client`),
//! every object that needs converting in one review, and checks the answer as upstream does
//! (`k8s.io/apiextensions-apiserver/pkg/apiserver/conversion`): same count, uid, kind, name,
//! namespace and UID; metadata other than labels and annotations restored from the original.
//! A failed conversion is upstream's unclassified 500 with upstream's text
//! (`conversion webhook for GROUP/VERSION, Kind=KIND failed: ...`).
//!
//! Objects already in the wanted version are never decoded: stored objects have their keys
//! sorted, so their bytes begin with their `apiVersion`, and LIST and WATCH pass them on as
//! stored.

use std::sync::Arc;

use bytes::Bytes;
use serde_json::{Map, Value};

use crate::error::{ApiError, ApiResult};
use crate::registry::Resource;
use crate::response::Payload;
use crate::webhook_client::{self, WebhookClient};
use crate::webhook_config::{Conversion, ConversionWebhook};

/// `apiVersion` of a group's version.
pub(crate) fn api_version(group: &str, version: &str) -> String {
    match group {
        "" => version.to_string(),
        g => format!("{g}/{version}"),
    }
}

/// Whether stored JSON `bytes` begin with the top-level `"apiVersion":"API_VERSION"`: told
/// without decoding. (Stored objects have their keys sorted, so `apiVersion` comes first in
/// nearly all; for any other, `false` only means the object is decoded to be sure.)
fn begins_with_version(bytes: &[u8], api_version: &str) -> bool {
    const KEY: &[u8] = b"{\"apiVersion\":\"";
    bytes
        .strip_prefix(KEY)
        .and_then(|rest| rest.strip_prefix(api_version.as_bytes()))
        .is_some_and(|rest| rest.first() == Some(&b'"'))
}

/// Converts custom resources between the versions of their CRD. Cheap to clone: a webhook's
/// Service is resolved through storage, so it holds the storage and the registry.
#[derive(Clone)]
pub(crate) struct Converter {
    client: Arc<WebhookClient>,
}

impl Converter {
    pub(crate) fn new(client: Arc<WebhookClient>) -> Converter {
        Converter { client }
    }

    /// `objects` of `res`'s CRD (each in any of its versions) in `version`. `list`: they are
    /// the items of a list (error texts say which item failed). Built-in kinds are returned
    /// as they are.
    pub(crate) async fn convert(
        &self,
        res: &Resource,
        version: &str,
        mut objects: Vec<Value>,
        list: bool,
    ) -> ApiResult<Vec<Value>> {
        let Some(custom) = res.custom() else {
            return Ok(objects);
        };
        let desired = api_version(&res.group, version);
        let pending: Vec<usize> = (0..objects.len())
            .filter(|&i| objects[i].get("apiVersion").and_then(Value::as_str) != Some(&desired))
            .collect();
        if pending.is_empty() {
            return Ok(objects);
        }
        match &custom.conversion {
            Conversion::None => {
                for i in pending {
                    if let Some(map) = objects[i].as_object_mut() {
                        map.insert("apiVersion".into(), Value::from(desired.clone()));
                    }
                }
            }
            Conversion::Webhook(hook) => {
                let originals: Vec<Value> = pending
                    .iter()
                    .map(|&i| std::mem::take(&mut objects[i]))
                    .collect();
                let converted = self.call(hook, res, &desired, originals, list).await?;
                for (i, object) in pending.into_iter().zip(converted) {
                    objects[i] = object;
                }
            }
        }
        Ok(objects)
    }

    /// An object of `res` in its CRD's storage version (unchanged for built-in kinds).
    pub(crate) async fn to_storage(&self, res: &Resource, obj: Value) -> ApiResult<Value> {
        match res.custom() {
            Some(custom) => {
                let version = custom.storage_version.clone();
                self.one(res, &version, obj).await
            }
            None => Ok(obj),
        }
    }

    /// A stored object of `res` in the request's version, `res.version`.
    pub(crate) async fn to_request(&self, res: &Resource, obj: Value) -> ApiResult<Value> {
        self.one(res, &res.version, obj).await
    }

    async fn one(&self, res: &Resource, version: &str, obj: Value) -> ApiResult<Value> {
        let mut out = self.convert(res, version, vec![obj], false).await?;
        out.pop()
            .ok_or_else(|| ApiError::internal("a conversion lost its object"))
    }

    /// Stored objects (JSON) of `res` in `res`'s version. Those already in it are passed on
    /// undecoded; the others are converted together (one webhook call).
    pub(crate) async fn stored(
        &self,
        res: &Resource,
        mut items: Vec<Bytes>,
        list: bool,
    ) -> ApiResult<Vec<Bytes>> {
        if !res.is_custom() {
            return Ok(items);
        }
        let wanted = res.api_version();
        let pending: Vec<usize> = (0..items.len())
            .filter(|&i| !begins_with_version(&items[i], &wanted))
            .collect();
        if pending.is_empty() {
            return Ok(items);
        }
        let decoded = pending
            .iter()
            .map(|&i| serde_json::from_slice::<Value>(&items[i]))
            .collect::<Result<Vec<_>, _>>()
            .map_err(ApiError::internal)?;
        let converted = self.convert(res, &res.version, decoded, list).await?;
        for (i, object) in pending.into_iter().zip(converted) {
            items[i] = Bytes::from(serde_json::to_vec(&object).map_err(ApiError::internal)?);
        }
        Ok(items)
    }

    /// An answer of a verb on `res` in `res`'s version: stored bytes, an object of its kind or
    /// a list of them are converted; anything else (a `Status`) is left alone.
    pub(crate) async fn answer(&self, res: &Resource, payload: Payload) -> ApiResult<Payload> {
        if !res.is_custom() {
            return Ok(payload);
        }
        match payload {
            Payload::Raw(bytes) => {
                let mut out = self.stored(res, vec![bytes], false).await?;
                out.pop()
                    .map(Payload::Raw)
                    .ok_or_else(|| ApiError::internal("a conversion lost its object"))
            }
            Payload::Value(mut value) => {
                let kind = value.get("kind").and_then(Value::as_str).unwrap_or("");
                if kind == res.kind {
                    return self.to_request(res, value).await.map(Payload::Value);
                }
                let is_list = kind == res.list_kind;
                if is_list && let Some(items) = value.get_mut("items").and_then(Value::as_array_mut)
                {
                    let taken = std::mem::take(items);
                    *items = self.convert(res, &res.version, taken, true).await?;
                }
                Ok(Payload::Value(value))
            }
        }
    }

    /// One ConversionReview of `originals` to `desired`, its answer checked as upstream checks
    /// it.
    async fn call(
        &self,
        hook: &ConversionWebhook,
        res: &Resource,
        desired: &str,
        originals: Vec<Value>,
        list: bool,
    ) -> ApiResult<Vec<Value>> {
        let from = originals
            .first()
            .and_then(|o| o.get("apiVersion"))
            .and_then(Value::as_str)
            .unwrap_or("");
        let gvk = format!("{from}, Kind={}", res.kind);
        let uid = uuid::Uuid::new_v4().to_string();
        let count = originals.len();
        let body = webhook_client::encode(&ReviewOut {
            api_version: format!("apiextensions.k8s.io/{}", hook.review_version),
            kind: "ConversionReview",
            request: RequestOut {
                uid: &uid,
                desired_api_version: desired,
                objects: &originals,
            },
        });
        let failed = |reason: String| {
            ApiError::unclassified(format!("conversion webhook for {gvk} failed: {reason}"))
        };
        let answer = self.client.call(&hook.callee, body).await.map_err(failed)?;
        let converted = converted_objects(&answer, &uid, hook.review_version).map_err(failed)?;
        if converted.len() != count {
            return Err(ApiError::unclassified(format!(
                "conversion webhook for {gvk} returned {} objects, expected {count}",
                converted.len()
            )));
        }
        let mut out = Vec::with_capacity(count);
        for (i, (original, mut object)) in originals.iter().zip(converted).enumerate() {
            let (invalid, invalid_meta) = match list {
                // Upstream counts from 1 once the object decoded.
                true => (
                    format!("returned invalid converted object at index {}", i + 1),
                    format!("returned invalid metadata in object at index {}", i + 1),
                ),
                false => (
                    "returned invalid object".to_string(),
                    "returned invalid metadata".to_string(),
                ),
            };
            let refuse = |what: &str, why: String| {
                ApiError::unclassified(format!("conversion webhook for {gvk} {what}: {why}"))
            };
            check_converted(original, &object, desired).map_err(|why| refuse(&invalid, why))?;
            restore_meta(original, &mut object).map_err(|why| refuse(&invalid_meta, why))?;
            out.push(object);
        }
        Ok(out)
    }
}

/// A ConversionReview as sent.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct ReviewOut<'a> {
    api_version: String,
    kind: &'static str,
    request: RequestOut<'a>,
}

#[derive(serde::Serialize)]
struct RequestOut<'a> {
    uid: &'a str,
    #[serde(rename = "desiredAPIVersion")]
    desired_api_version: &'a str,
    objects: &'a [Value],
}

/// `convertedObjects` of a webhook's answer, after upstream's checks of the review itself.
fn converted_objects(answer: &[u8], uid: &str, review_version: &str) -> Result<Vec<Value>, String> {
    let review: Value = serde_json::from_slice(answer)
        .map_err(|e| format!("couldn't get version/kind; json parse error: {e}"))?;
    let kind = review.get("kind").and_then(Value::as_str).unwrap_or("");
    if kind.is_empty() {
        return Err(format!(
            "Object 'Kind' is missing in '{}'",
            String::from_utf8_lossy(answer)
        ));
    }
    let api_version = review
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let expected = format!("apiextensions.k8s.io/{review_version}");
    if (api_version, kind) != (expected.as_str(), "ConversionReview") {
        return Err(format!(
            "expected webhook response of {expected}, Kind=ConversionReview, got {api_version}, Kind={kind}"
        ));
    }
    let response = review
        .get("response")
        .filter(|r| !r.is_null())
        .ok_or("no response provided")?;
    let got = response.get("uid").and_then(Value::as_str).unwrap_or("");
    // Upstream checks the uid of v1 reviews only.
    if review_version == "v1" && got != uid {
        return Err(format!("expected response.uid={uid:?}, got {got:?}"));
    }
    let result = response.get("result");
    let status = result
        .and_then(|r| r.get("status"))
        .and_then(Value::as_str)
        .unwrap_or("");
    if status != "Success" {
        let message = result
            .and_then(|r| r.get("message"))
            .and_then(Value::as_str)
            .unwrap_or("");
        return Err(match message {
            "" => format!("response.result.status was '{status}', not 'Success'"),
            m => m.to_string(),
        });
    }
    Ok(response
        .get("convertedObjects")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default())
}

fn meta_text<'a>(obj: &'a Value, key: &str) -> &'a str {
    obj.pointer(&format!("/metadata/{key}"))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// Upstream's checks of one converted object against the one sent.
fn check_converted(original: &Value, converted: &Value, desired: &str) -> Result<(), String> {
    let text = |o: &Value, key: &str| o.get(key).and_then(Value::as_str).unwrap_or("").to_string();
    let got = text(converted, "apiVersion");
    if got != desired {
        return Err(format!(
            "invalid groupVersion (expected {desired}, received {got})"
        ));
    }
    let (want, got) = (text(original, "kind"), text(converted, "kind"));
    if want != got {
        return Err(format!("invalid kind (expected {want}, received {got})"));
    }
    for (key, what) in [("name", "name"), ("namespace", "namespace"), ("uid", "UID")] {
        let (want, got) = (meta_text(original, key), meta_text(converted, key));
        if want != got {
            return Err(format!("must have the same {what}: {want} != {got}"));
        }
    }
    Ok(())
}

/// The original's metadata on the converted object, keeping only the converted labels and
/// annotations (upstream's `restoreObjectMeta`): a webhook may change those, nothing else.
fn restore_meta(original: &Value, converted: &mut Value) -> Result<(), String> {
    let Some(map) = converted.as_object_mut() else {
        return Err("the converted object is not an object".into());
    };
    let answered = match map.get("metadata") {
        Some(Value::Object(m)) => m.clone(),
        None if original.get("metadata").is_none() => return Ok(()),
        None => return Err("missing metadata in converted object".into()),
        Some(other) => {
            return Err(format!(
                "invalid metadata of type {} in converted object",
                json_type(other)
            ));
        }
    };
    let mut meta = original
        .get("metadata")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    for field in ["labels", "annotations"] {
        let values = match answered.get(field) {
            None | Some(Value::Null) => {
                meta.remove(field);
                continue;
            }
            Some(Value::Object(values)) => values,
            Some(other) => {
                return Err(format!(
                    "invalid metadata.{field} of type {} in converted object",
                    json_type(other)
                ));
            }
        };
        if let Some((key, value)) = values.iter().find(|(_, v)| !v.is_string()) {
            return Err(format!(
                "metadata.{field}[{key}] must be a string, but is {} in converted object",
                json_type(value)
            ));
        }
        if meta.get(field).and_then(Value::as_object) != Some(values) {
            check_meta_map(field, values)?;
        }
        meta.insert(field.into(), Value::Object(values.clone()));
    }
    map.insert("metadata".into(), Value::Object(meta));
    Ok(())
}

/// Labels or annotations a webhook changed, validated as upstream validates them.
fn check_meta_map(field: &str, values: &Map<String, Value>) -> Result<(), String> {
    use opkit_apimachinery::validation::{validate_annotations, validate_labels};
    let errors = match field {
        "labels" => validate_labels(values, "metadata.labels"),
        // (Upstream's path says `annotation`.)
        _ => validate_annotations(values, "metadata.annotation"),
    };
    match errors.is_empty() {
        true => Ok(()),
        false => Err(errors.to_string()),
    }
}

/// The Go type upstream's messages name for a JSON value.
fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(_) => "int64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn stored_objects_begin_with_their_api_version() {
        let stored = serde_json::to_vec(&json!({
            "spec": {"x": 1}, "metadata": {"name": "a"}, "kind": "K", "apiVersion": "g.io/v1"
        }))
        .unwrap();
        assert!(begins_with_version(&stored, "g.io/v1"));
        assert!(!begins_with_version(&stored, "g.io/v"));
        assert!(!begins_with_version(&stored, "g.io/v2"));
    }

    #[test]
    fn a_webhook_may_change_labels_and_annotations_but_no_other_metadata() {
        let original = json!({"apiVersion": "g.io/v1", "kind": "K",
            "metadata": {"name": "a", "generation": 3, "labels": {"x": "1"}}});
        let mut converted = json!({"apiVersion": "g.io/v2", "kind": "K",
            "metadata": {"name": "a", "generation": 9, "labels": {"y": "2"}, "annotations": {"n": "o"}}});
        restore_meta(&original, &mut converted).unwrap();
        assert_eq!(
            converted["metadata"],
            json!({"name": "a", "generation": 3, "labels": {"y": "2"}, "annotations": {"n": "o"}})
        );
        let mut bad = json!({"metadata": {"name": "a", "labels": {"y": 2}}});
        assert_eq!(
            restore_meta(&original, &mut bad).unwrap_err(),
            "metadata.labels[y] must be a string, but is int64 in converted object"
        );
        let mut invalid = json!({"metadata": {"name": "a", "labels": {"y": "not valid!"}}});
        assert!(restore_meta(&original, &mut invalid).is_err());
    }

    #[test]
    fn a_review_answer_is_checked_as_upstream_checks_it() {
        let answer = |v: Value| serde_json::to_vec(&v).unwrap();
        let ok = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "response": {"uid": "u", "result": {"status": "Success"}, "convertedObjects": [{"a": 1}]}});
        assert_eq!(
            converted_objects(&answer(ok.clone()), "u", "v1").unwrap(),
            vec![json!({"a": 1})]
        );
        assert_eq!(
            converted_objects(&answer(ok), "other", "v1").unwrap_err(),
            "expected response.uid=\"other\", got \"u\""
        );
        let failure = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "response": {"uid": "u", "result": {"status": "Failure", "message": "no way"}}});
        assert_eq!(
            converted_objects(&answer(failure), "u", "v1").unwrap_err(),
            "no way"
        );
        let wrong = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"});
        assert_eq!(
            converted_objects(&answer(wrong), "u", "v1").unwrap_err(),
            "expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got admission.k8s.io/v1, Kind=AdmissionReview"
        );
        assert!(
            converted_objects(b"garbage", "u", "v1")
                .unwrap_err()
                .starts_with("couldn't get version/kind; json parse error: ")
        );
    }
}
