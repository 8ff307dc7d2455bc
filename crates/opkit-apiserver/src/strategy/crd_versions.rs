//! The version rules of a CustomResourceDefinition that concern what is stored: its
//! `spec.conversion` and its `status.storedVersions`, with upstream's texts
//! (`k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation`).
//!
//! Upstream validates the internal form of a CRD, where v1's `spec.conversion.webhook`
//! (`clientConfig`, `conversionReviewVersions`) is flattened into
//! `spec.conversion.webhookClientConfig` and `spec.conversion.conversionReviewVersions`:
//! error paths follow that, as upstream's do.

use serde_json::{Value, json};

use super::webhooks::{invalid, required, strings, unsupported, validate_client};
use crate::error::Cause;
use crate::webhook_config::REVIEW_VERSIONS;

const CLIENT_CONFIG: &str = "spec.conversion.webhookClientConfig";
const REVIEW_VERSIONS_FIELD: &str = "spec.conversion.conversionReviewVersions";

/// The problems of `spec.conversion` (defaulted to `strategy: None`). `old` is the stored CRD
/// of an update: a CRD whose conversion already names no recognised review version may keep
/// it, as upstream allows.
pub(super) fn validate_conversion(crd: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut causes = Vec::new();
    let Some(conversion) = crd.pointer("/spec/conversion").filter(|c| !c.is_null()) else {
        return causes;
    };
    let webhook = conversion.get("webhook").filter(|w| !w.is_null());
    let client = webhook
        .and_then(|w| w.get("clientConfig"))
        .filter(|c| !c.is_null());
    let versions = strings(webhook.and_then(|w| w.get("conversionReviewVersions")));
    match conversion
        .get("strategy")
        .and_then(Value::as_str)
        .unwrap_or("")
    {
        "" => causes.push(required("spec.conversion.strategy", "")),
        "Webhook" => {
            match client {
                None => causes.push(required(
                    CLIENT_CONFIG,
                    "required when strategy is set to Webhook",
                )),
                Some(client) => validate_client(CLIENT_CONFIG, Some(client), &mut causes),
            }
            let recognised_before = old
                .and_then(|o| o.pointer("/spec/conversion/webhook/conversionReviewVersions"))
                .map(|v| strings(Some(v)))
                .is_none_or(|v| v.is_empty() || v.iter().any(|v| REVIEW_VERSIONS.contains(v)));
            validate_review_versions(&versions, recognised_before, &mut causes);
        }
        "None" => {
            let forbidden = |field: &str| {
                Cause::new(
                    "FieldValueForbidden",
                    field,
                    "Forbidden: should not be set when strategy is not set to Webhook",
                )
            };
            if client.is_some() {
                causes.push(forbidden(CLIENT_CONFIG));
            }
            if !versions.is_empty() {
                causes.push(forbidden(REVIEW_VERSIONS_FIELD));
            }
        }
        other => causes.push(unsupported(
            "spec.conversion.strategy",
            other,
            &["None", "Webhook"],
        )),
    }
    causes
}

fn validate_review_versions(versions: &[&str], require_recognised: bool, causes: &mut Vec<Cause>) {
    if versions.is_empty() {
        causes.push(required(REVIEW_VERSIONS_FIELD, ""));
        return;
    }
    let mut seen = Vec::new();
    for (i, v) in versions.iter().enumerate() {
        let field = format!("{REVIEW_VERSIONS_FIELD}[{i}]");
        if seen.contains(v) {
            causes.push(invalid(&field, &format!("{v:?}"), "duplicate version"));
            continue;
        }
        seen.push(v);
        for e in opkit_apimachinery::validation::is_dns1035_label(v) {
            causes.push(invalid(&field, &format!("{v:?}"), &e));
        }
    }
    if require_recognised && !versions.iter().any(|v| REVIEW_VERSIONS.contains(v)) {
        let shown = versions
            .iter()
            .map(|v| format!("{v:?}"))
            .collect::<Vec<_>>()
            .join(", ");
        let mut accepted = REVIEW_VERSIONS.to_vec();
        accepted.sort_unstable();
        causes.push(invalid(
            REVIEW_VERSIONS_FIELD,
            &format!("[]string{{{shown}}}"),
            &format!("must include at least one of {}", accepted.join(", ")),
        ));
    }
}

/// The name of the version marked `storage: true`, if exactly one is found first.
fn storage_version(crd: &Value) -> Option<&str> {
    crd.pointer("/spec/versions")
        .and_then(Value::as_array)?
        .iter()
        .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        .and_then(|v| v.get("name"))
        .and_then(Value::as_str)
}

/// The status a new CRD starts with: its storage version is its one stored version (upstream's
/// `PrepareForCreate`).
pub(super) fn initial_status(crd: &Value) -> Option<Value> {
    let stored: Vec<&str> = storage_version(crd).into_iter().collect();
    Some(json!({"storedVersions": stored}))
}

/// Adds the (new) storage version of an updated CRD to `status.storedVersions` (upstream's
/// `PrepareForUpdate`): objects may be stored in it from now on.
pub(super) fn record_storage_version(crd: &mut Value) {
    let Some(storage) = storage_version(crd).map(str::to_string) else {
        return;
    };
    let Some(map) = crd.as_object_mut() else {
        return;
    };
    let status = map.entry("status").or_insert_with(|| json!({}));
    if !status.is_object() {
        *status = json!({});
    }
    let stored = &mut status["storedVersions"];
    if !stored.is_array() {
        *stored = json!([]);
    }
    if let Some(list) = stored.as_array_mut()
        && !list.iter().any(|v| v.as_str() == Some(&storage))
    {
        list.push(Value::from(storage));
    }
}

/// The problems of `status.storedVersions` against `spec.versions` (upstream's
/// `ValidateCustomResourceDefinitionStoredVersions`): a version objects may still be stored in
/// cannot leave `spec.versions`.
pub(super) fn validate_stored_versions(crd: &Value) -> Vec<Cause> {
    let stored = strings(crd.pointer("/status/storedVersions"));
    let versions: Vec<&Value> = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .map(|a| a.iter().collect())
        .unwrap_or_default();
    let field = "status.storedVersions";
    if stored.is_empty() {
        return vec![invalid(
            field,
            "[]string{}",
            "must have at least one stored version",
        )];
    }
    let mut causes = Vec::new();
    for v in &versions {
        let name = v.get("name").and_then(Value::as_str).unwrap_or("");
        if v.get("storage").and_then(Value::as_bool) == Some(true) && !stored.contains(&name) {
            let shown = stored
                .iter()
                .map(|s| format!("{s:?}"))
                .collect::<Vec<_>>()
                .join(", ");
            causes.push(invalid(
                field,
                &format!("[]string{{{shown}}}"),
                &format!("must have the storage version {name}"),
            ));
        }
    }
    for (i, s) in stored.iter().enumerate() {
        let listed = versions
            .iter()
            .any(|v| v.get("name").and_then(Value::as_str) == Some(s));
        if !listed {
            causes.push(invalid(
                &format!("{field}[{i}]"),
                &format!("{s:?}"),
                &format!(
                    "missing from spec.versions; {s} was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in {s} and removes {s} from status.storedVersions"
                ),
            ));
        }
    }
    causes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crd(conversion: Value) -> Value {
        json!({"spec": {"conversion": conversion, "versions": [
            {"name": "v1", "served": true, "storage": false},
            {"name": "v2", "served": true, "storage": true}]}})
    }

    fn messages(causes: Vec<Cause>) -> Vec<String> {
        causes
            .into_iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    }

    #[test]
    fn a_webhook_strategy_requires_a_webhook_and_a_recognised_review_version() {
        assert_eq!(
            messages(validate_conversion(
                &crd(json!({"strategy": "Webhook"})),
                None
            )),
            vec![
                "spec.conversion.webhookClientConfig: Required value: required when strategy is set to Webhook",
                "spec.conversion.conversionReviewVersions: Required value",
            ]
        );
        let webhook = json!({"strategy": "Webhook", "webhook": {
            "clientConfig": {"url": "http://x/convert"}, "conversionReviewVersions": ["v2", "v2"]}});
        assert_eq!(
            messages(validate_conversion(&crd(webhook), None)),
            vec![
                "spec.conversion.webhookClientConfig.url: Invalid value: \"http://x/convert\": 'https' is the only allowed URL scheme",
                "spec.conversion.conversionReviewVersions[1]: Invalid value: \"v2\": duplicate version",
                "spec.conversion.conversionReviewVersions: Invalid value: []string{\"v2\", \"v2\"}: must include at least one of v1, v1beta1",
            ]
        );
        let good = json!({"strategy": "Webhook", "webhook": {
            "clientConfig": {"service": {"namespace": "ns", "name": "svc", "path": "/convert", "port": 9443}},
            "conversionReviewVersions": ["v1"]}});
        assert!(validate_conversion(&crd(good), None).is_empty());
    }

    #[test]
    fn a_webhook_is_forbidden_unless_the_strategy_is_webhook() {
        let none = json!({"strategy": "None", "webhook": {
            "clientConfig": {"url": "https://x/convert"}, "conversionReviewVersions": ["v1"]}});
        assert_eq!(
            messages(validate_conversion(&crd(none), None)),
            vec![
                "spec.conversion.webhookClientConfig: Forbidden: should not be set when strategy is not set to Webhook",
                "spec.conversion.conversionReviewVersions: Forbidden: should not be set when strategy is not set to Webhook",
            ]
        );
        assert_eq!(
            messages(validate_conversion(
                &crd(json!({"strategy": "Magic"})),
                None
            )),
            vec![
                "spec.conversion.strategy: Unsupported value: \"Magic\": supported values: \"None\", \"Webhook\""
            ]
        );
    }

    #[test]
    fn a_stored_version_cannot_leave_spec_versions() {
        let mut c = crd(json!({"strategy": "None"}));
        c["status"] = json!({"storedVersions": ["v0", "v2"]});
        assert_eq!(
            messages(validate_stored_versions(&c)),
            vec![
                "status.storedVersions[0]: Invalid value: \"v0\": missing from spec.versions; v0 was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in v0 and removes v0 from status.storedVersions"
            ]
        );
        record_storage_version(&mut c);
        assert_eq!(c["status"]["storedVersions"], json!(["v0", "v2"]));
        c["spec"]["versions"][0]["storage"] = json!(true);
        c["spec"]["versions"][1]["storage"] = json!(false);
        record_storage_version(&mut c);
        assert_eq!(c["status"]["storedVersions"], json!(["v0", "v2", "v1"]));
    }
}
