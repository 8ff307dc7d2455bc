//! The `admission.k8s.io/v1` AdmissionReview wire format, as the server sends and reads it.
//!
//! Small serde types of our own: k8s-openapi does not ship AdmissionReview, and kube-core's
//! types are shaped for the webhook side (they parse requests and build responses), while the
//! server builds requests and must check answers strictly.

use std::collections::BTreeMap;

use base64::Engine;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `group`, `version` and `kind` or `resource`, as AdmissionRequest carries them.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct GroupVersionKind {
    pub(crate) group: String,
    pub(crate) version: String,
    pub(crate) kind: String,
}

/// `group`, `version`, `resource`.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct GroupVersionResource {
    pub(crate) group: String,
    pub(crate) version: String,
    pub(crate) resource: String,
}

/// `authentication.k8s.io/v1` UserInfo.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct UserInfo {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub(crate) username: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub(crate) uid: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) groups: Vec<String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) extra: BTreeMap<String, Vec<String>>,
}

/// The request half of an AdmissionReview.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Request {
    pub(crate) uid: String,
    pub(crate) kind: GroupVersionKind,
    pub(crate) resource: GroupVersionResource,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub(crate) sub_resource: String,
    pub(crate) request_kind: GroupVersionKind,
    pub(crate) request_resource: GroupVersionResource,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub(crate) request_sub_resource: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub(crate) name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub(crate) namespace: String,
    /// `CREATE`, `UPDATE`, `DELETE`.
    pub(crate) operation: &'static str,
    pub(crate) user_info: UserInfo,
    pub(crate) object: Value,
    pub(crate) old_object: Value,
    pub(crate) dry_run: bool,
    /// `CreateOptions`, `UpdateOptions` or `DeleteOptions` (`meta.k8s.io/v1`).
    pub(crate) options: Value,
}

/// An AdmissionReview as sent.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ReviewOut<'a> {
    pub(crate) api_version: &'static str,
    pub(crate) kind: &'static str,
    pub(crate) request: &'a Request,
}

/// An AdmissionReview as a webhook answers it.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ReviewIn {
    #[serde(default)]
    api_version: String,
    #[serde(default)]
    kind: String,
    response: Option<ResponseIn>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ResponseIn {
    #[serde(default)]
    uid: String,
    allowed: bool,
    status: Option<StatusIn>,
    patch: Option<String>,
    patch_type: Option<String>,
    #[serde(default)]
    warnings: Vec<String>,
}

/// The `metav1.Status` of a refusal.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct StatusIn {
    #[serde(default)]
    pub(crate) message: String,
    #[serde(default)]
    pub(crate) reason: String,
    #[serde(default)]
    pub(crate) code: i64,
}

/// A checked answer.
#[derive(Debug)]
pub(crate) struct Verdict {
    pub(crate) allowed: bool,
    pub(crate) status: Option<StatusIn>,
    /// The decoded JSONPatch, if the webhook sent one.
    pub(crate) patch: Option<Vec<u8>>,
    pub(crate) warnings: Vec<String>,
}

/// Reads a webhook's answer to the review with `uid`, with upstream's checks
/// (`VerifyAdmissionResponse`); the error is what upstream puts after
/// `received invalid webhook response: `.
pub(crate) fn verify(body: &[u8], uid: &str, mutating: bool) -> Result<Verdict, String> {
    let review: ReviewIn = serde_json::from_slice(body).map_err(|e| e.to_string())?;
    if review.api_version != "admission.k8s.io/v1" || review.kind != "AdmissionReview" {
        let got = match (review.api_version.as_str(), review.kind.as_str()) {
            ("", "") => "/, Kind=".to_string(),
            (av, k) => format!("{av}, Kind={k}"),
        };
        return Err(format!(
            "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got {got}"
        ));
    }
    let response = review
        .response
        .ok_or_else(|| "webhook response was absent".to_string())?;
    if response.uid != uid {
        return Err(format!(
            "expected response.uid=\"{uid}\", got \"{}\"",
            response.uid
        ));
    }
    let patch = match (&response.patch_type, &response.patch) {
        (None, None) => None,
        (Some(_), None) => {
            return Err("webhook returned response.patchType but not response.patch".into());
        }
        (None, Some(_)) => {
            return Err("webhook returned response.patch but not response.patchType".into());
        }
        (Some(t), Some(p)) => {
            if !mutating {
                return Err("validating webhook may not return response.patch".to_string());
            }
            if t != "JSONPatch" {
                return Err(format!(
                    "webhook returned invalid response.patchType of \"{t}\""
                ));
            }
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(p)
                .map_err(|e| format!("response.patch is not base64: {e}"))?;
            Some(bytes)
        }
    };
    Ok(Verdict {
        allowed: response.allowed,
        status: response.status,
        patch,
        warnings: response.warnings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_checked_like_upstream() {
        let ok = br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"u","allowed":true,"warnings":["w"]}}"#;
        let v = verify(ok, "u", false).unwrap();
        assert!(v.allowed);
        assert_eq!(v.warnings, ["w"]);
        assert_eq!(
            verify(ok, "x", false).unwrap_err(),
            "expected response.uid=\"x\", got \"u\""
        );
        let wrong = br#"{"apiVersion":"v1","kind":"Status"}"#;
        assert!(
            verify(wrong, "u", false)
                .unwrap_err()
                .contains("got v1, Kind=Status")
        );
        assert!(verify(b"nonsense", "u", false).is_err());
        let patch = br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"u","allowed":true,"patchType":"JSONPatch","patch":"W10="}}"#;
        assert_eq!(verify(patch, "u", true).unwrap().patch.unwrap(), b"[]");
        assert!(verify(patch, "u", false).is_err());
    }
}
