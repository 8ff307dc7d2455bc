//! MutatingWebhookConfigurations and ValidatingWebhookConfigurations: upstream's validation of
//! `admissionregistration.k8s.io/v1` (`ValidateMutatingWebhookConfiguration`,
//! `ValidateValidatingWebhookConfiguration`), and a fresh webhook set for admission after
//! every committed change.

use std::collections::HashSet;

use serde_json::Value;

use super::Strategy;
use crate::admission::MATCH_CONDITION_VARIABLES;
use crate::api::Api;
use crate::error::{ApiResult, Cause};
use crate::registry::Resource;
use crate::request::Actor;

/// Both webhook configuration kinds.
pub(crate) struct WebhookConfigurations;

impl Strategy for WebhookConfigurations {
    fn validate_write(
        &self,
        _api: &Api,
        _actor: &Actor,
        res: &Resource,
        _ns: Option<&str>,
        obj: &Value,
    ) -> ApiResult<()> {
        let mutating = res.plural.starts_with("mutating");
        let causes = validate(obj, mutating);
        super::invalid_if_any(res, obj, causes)
    }

    fn committed(&self, api: &Api, _obj: &Value, _deleted: bool) {
        api.admission.webhooks_changed();
    }
}

pub(super) fn quoted_list(values: &[&str]) -> String {
    values
        .iter()
        .map(|v| format!("\"{v}\""))
        .collect::<Vec<_>>()
        .join(", ")
}

pub(super) fn unsupported(field: &str, value: &str, supported: &[&str]) -> Cause {
    Cause::new(
        "FieldValueNotSupported",
        field,
        format!(
            "Unsupported value: \"{value}\": supported values: {}",
            quoted_list(supported)
        ),
    )
}

pub(super) fn required(field: &str, detail: &str) -> Cause {
    let message = match detail {
        "" => "Required value".to_string(),
        d => format!("Required value: {d}"),
    };
    Cause::new("FieldValueRequired", field, message)
}

pub(super) fn invalid(field: &str, value: &str, detail: &str) -> Cause {
    Cause::new(
        "FieldValueInvalid",
        field,
        format!("Invalid value: {value}: {detail}"),
    )
}

pub(super) fn strings(v: Option<&Value>) -> Vec<&str> {
    v.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

/// Every problem of a webhook configuration (already decoded and defaulted), as causes.
pub(crate) fn validate(obj: &Value, mutating: bool) -> Vec<Cause> {
    let mut causes = Vec::new();
    let mut names = HashSet::new();
    let hooks = obj.get("webhooks").and_then(Value::as_array);
    for (i, hook) in hooks.into_iter().flatten().enumerate() {
        let at = format!("webhooks[{i}]");
        let name = hook.get("name").and_then(Value::as_str).unwrap_or("");
        validate_name(&format!("{at}.name"), name, &mut causes);
        if !name.is_empty() && !names.insert(name) {
            causes.push(Cause::new(
                "FieldValueDuplicate",
                &format!("{at}.name"),
                format!("Duplicate value: \"{name}\""),
            ));
        }
        validate_hook(&at, hook, mutating, &mut causes);
    }
    causes
}

/// Upstream's `IsFullyQualifiedName`: a DNS subdomain with at least three segments.
fn validate_name(field: &str, name: &str, causes: &mut Vec<Cause>) {
    if name.is_empty() {
        causes.push(required(field, ""));
        return;
    }
    for problem in opkit_apimachinery::validation::is_dns1123_subdomain(name) {
        causes.push(invalid(field, &format!("\"{name}\""), &problem));
    }
    if name.split('.').count() < 3 {
        causes.push(invalid(
            field,
            &format!("\"{name}\""),
            "should be a domain with at least three segments separated by dots",
        ));
    }
}

fn validate_hook(at: &str, hook: &Value, mutating: bool, causes: &mut Vec<Cause>) {
    let versions = strings(hook.get("admissionReviewVersions"));
    let field = format!("{at}.admissionReviewVersions");
    if versions.is_empty() {
        causes.push(required(&field, "must specify one of v1, v1beta1"));
    } else if !versions.iter().any(|v| *v == "v1" || *v == "v1beta1") {
        causes.push(invalid(
            &field,
            &format!("[]string{{{}}}", quoted_list(&versions)),
            "must include at least one of v1, v1beta1",
        ));
    } else if !versions.contains(&"v1") {
        // Upstream also speaks v1beta1; opkit's control plane sends only v1 reviews, so a
        // webhook that cannot read them is refused here rather than failing every call.
        causes.push(invalid(
            &field,
            &format!("[]string{{{}}}", quoted_list(&versions)),
            "this control plane sends admission.k8s.io/v1 AdmissionReviews only: must include v1",
        ));
    }
    let mut unique = HashSet::new();
    for (j, v) in versions.iter().enumerate() {
        if !unique.insert(*v) {
            causes.push(Cause::new(
                "FieldValueDuplicate",
                &format!("{field}[{j}]"),
                format!("Duplicate value: \"{v}\""),
            ));
        }
    }
    match hook.get("sideEffects").and_then(Value::as_str) {
        None | Some("") => causes.push(required(
            &format!("{at}.sideEffects"),
            "must specify one of None, NoneOnDryRun",
        )),
        Some("None" | "NoneOnDryRun") => {}
        Some(other) => causes.push(unsupported(
            &format!("{at}.sideEffects"),
            other,
            &["None", "NoneOnDryRun"],
        )),
    }
    if let Some(t) = hook.get("timeoutSeconds").and_then(Value::as_i64)
        && !(1..=30).contains(&t)
    {
        causes.push(invalid(
            &format!("{at}.timeoutSeconds"),
            &t.to_string(),
            "the timeout value must be between 1 and 30 seconds",
        ));
    }
    if let Some(p) = hook.get("failurePolicy").and_then(Value::as_str)
        && !matches!(p, "Fail" | "Ignore")
    {
        causes.push(unsupported(
            &format!("{at}.failurePolicy"),
            p,
            &["Fail", "Ignore"],
        ));
    }
    if let Some(p) = hook.get("matchPolicy").and_then(Value::as_str)
        && !matches!(p, "Equivalent" | "Exact")
    {
        causes.push(unsupported(
            &format!("{at}.matchPolicy"),
            p,
            &["Equivalent", "Exact"],
        ));
    }
    if mutating
        && let Some(p) = hook.get("reinvocationPolicy").and_then(Value::as_str)
        && !matches!(p, "Never" | "IfNeeded")
    {
        causes.push(unsupported(
            &format!("{at}.reinvocationPolicy"),
            p,
            &["Never", "IfNeeded"],
        ));
    }
    for selector in ["namespaceSelector", "objectSelector"] {
        if let Some(s) = hook.get(selector)
            && let Err(e) = opkit_apimachinery::LabelSelector::from_label_selector_json(s)
        {
            causes.push(invalid(
                &format!("{at}.{selector}"),
                &s.to_string(),
                &e.to_string(),
            ));
        }
    }
    validate_match_conditions(&format!("{at}.matchConditions"), hook, causes);
    validate_client(
        &format!("{at}.clientConfig"),
        hook.get("clientConfig"),
        causes,
    );
    for (j, rule) in hook
        .get("rules")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        validate_rule(&format!("{at}.rules[{j}]"), rule, causes);
    }
}

fn validate_match_conditions(at: &str, hook: &Value, causes: &mut Vec<Cause>) {
    let conditions = hook
        .get("matchConditions")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    if conditions.len() > 64 {
        causes.push(Cause::new(
            "FieldValueTooMany",
            at,
            format!("Too many: {}: must have at most 64 items", conditions.len()),
        ));
    }
    let mut names = HashSet::new();
    for (j, condition) in conditions.iter().enumerate() {
        let field = |f: &str| format!("{at}[{j}].{f}");
        let name = condition.get("name").and_then(Value::as_str).unwrap_or("");
        if name.is_empty() {
            causes.push(required(&field("name"), ""));
        } else if !names.insert(name) {
            causes.push(Cause::new(
                "FieldValueDuplicate",
                &field("name"),
                format!("Duplicate value: \"{name}\""),
            ));
        }
        let expression = condition
            .get("expression")
            .and_then(Value::as_str)
            .unwrap_or("");
        if expression.trim().is_empty() {
            causes.push(required(&field("expression"), ""));
        } else if let Err(e) =
            opkit_cel::Expression::compile(expression, &MATCH_CONDITION_VARIABLES)
        {
            causes.push(invalid(
                &field("expression"),
                &format!("{expression:?}"),
                &format!("compilation failed: {e}"),
            ));
        }
    }
}

pub(super) fn validate_client(at: &str, client: Option<&Value>, causes: &mut Vec<Cause>) {
    let url = client.and_then(|c| c.get("url")).and_then(Value::as_str);
    let service = client
        .and_then(|c| c.get("service"))
        .filter(|s| !s.is_null());
    match (url, service) {
        (Some(_), Some(_)) | (None, None) => {
            causes.push(required(at, "exactly one of url or service is required"));
        }
        (Some(url), None) => validate_url(&format!("{at}.url"), url, causes),
        (None, Some(service)) => {
            let field = |f: &str| format!("{at}.service.{f}");
            for key in ["name", "namespace"] {
                if service
                    .get(key)
                    .and_then(Value::as_str)
                    .is_none_or(str::is_empty)
                {
                    causes.push(required(&field(key), &format!("service {key} is required")));
                }
            }
            if let Some(path) = service.get("path").and_then(Value::as_str)
                && !path.is_empty()
                && !path.starts_with('/')
            {
                causes.push(invalid(
                    &field("path"),
                    &format!("\"{path}\""),
                    "must start with a '/'",
                ));
            }
            if let Some(port) = service.get("port").and_then(Value::as_i64)
                && !(1..=65535).contains(&port)
            {
                causes.push(invalid(
                    &field("port"),
                    &port.to_string(),
                    "port is not valid: must be between 1 and 65535, inclusive",
                ));
            }
        }
    }
}

fn validate_url(field: &str, url: &str, causes: &mut Vec<Cause>) {
    let quoted = format!("\"{url}\"");
    let Some(rest) = url.strip_prefix("https://") else {
        causes.push(invalid(
            field,
            &quoted,
            "'https' is the only allowed URL scheme",
        ));
        return;
    };
    let host = rest.split(['/', '?', '#']).next().unwrap_or("");
    if host.is_empty() {
        causes.push(invalid(field, &quoted, "host must be specified"));
    }
    if host.contains('@') {
        causes.push(invalid(
            field,
            &quoted,
            "user information is not permitted in the URL",
        ));
    }
    if url.contains('#') {
        causes.push(invalid(
            field,
            &quoted,
            "fragments are not permitted in the URL",
        ));
    }
    if url.contains('?') {
        causes.push(invalid(
            field,
            &quoted,
            "query parameters are not permitted in the URL",
        ));
    }
}

pub(super) fn validate_rule(at: &str, rule: &Value, causes: &mut Vec<Cause>) {
    let operations = strings(rule.get("operations"));
    if operations.is_empty() {
        causes.push(required(&format!("{at}.operations"), ""));
    }
    if operations.len() > 1 && operations.contains(&"*") {
        causes.push(invalid(
            &format!("{at}.operations"),
            &format!("[]string{{{}}}", quoted_list(&operations)),
            "if '*' is present, must not specify other operations",
        ));
    }
    for (k, op) in operations.iter().enumerate() {
        if !matches!(*op, "*" | "CREATE" | "UPDATE" | "DELETE" | "CONNECT") {
            causes.push(unsupported(
                &format!("{at}.operations[{k}]"),
                op,
                &["*", "CONNECT", "CREATE", "DELETE", "UPDATE"],
            ));
        }
    }
    for key in ["apiGroups", "apiVersions"] {
        let values = strings(rule.get(key));
        if values.is_empty() {
            causes.push(required(&format!("{at}.{key}"), ""));
        }
        if values.len() > 1 && values.contains(&"*") {
            causes.push(invalid(
                &format!("{at}.{key}"),
                &format!("[]string{{{}}}", quoted_list(&values)),
                "if '*' is present, must not specify other API groups".trim_end(),
            ));
        }
    }
    let resources = strings(rule.get("resources"));
    if resources.is_empty() {
        causes.push(required(&format!("{at}.resources"), ""));
    }
    let mut seen = HashSet::new();
    for (k, r) in resources.iter().enumerate() {
        let field = format!("{at}.resources[{k}]");
        if r.is_empty() {
            causes.push(required(&field, ""));
            continue;
        }
        let (main, sub) = match r.split_once('/') {
            Some((m, s)) => (m, Some(s)),
            None => (*r, None),
        };
        if main.is_empty() || sub.is_some_and(|s| s.is_empty() || s.contains('/')) {
            causes.push(invalid(
                &field,
                &format!("\"{r}\""),
                "must be resource or resource/subresource",
            ));
        }
        if !seen.insert(*r) {
            causes.push(Cause::new(
                "FieldValueDuplicate",
                &field,
                format!("Duplicate value: \"{r}\""),
            ));
        }
    }
    if resources.len() > 1 && resources.contains(&"*") {
        causes.push(invalid(
            &format!("{at}.resources"),
            &format!("[]string{{{}}}", quoted_list(&resources)),
            "if '*' is present, must not specify other resources without subresources",
        ));
    }
    if let Some(scope) = rule.get("scope").and_then(Value::as_str)
        && !matches!(scope, "*" | "Cluster" | "Namespaced")
    {
        causes.push(unsupported(
            &format!("{at}.scope"),
            scope,
            &["*", "Cluster", "Namespaced"],
        ));
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn hook(extra: Value) -> Value {
        let mut h = json!({
            "name": "deny.example.com",
            "admissionReviewVersions": ["v1"],
            "sideEffects": "None",
            "timeoutSeconds": 10,
            "clientConfig": {"url": "https://127.0.0.1:9443/validate"},
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"], "scope": "*"}],
        });
        for (k, v) in extra.as_object().unwrap() {
            h[k] = v.clone();
        }
        h
    }

    fn messages(obj: Value) -> Vec<String> {
        validate(&obj, false)
            .into_iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    }

    #[test]
    fn a_valid_configuration_has_no_causes() {
        assert!(messages(json!({"webhooks": [hook(json!({}))]})).is_empty());
    }

    #[test]
    fn side_effects_some_is_refused_with_upstreams_text() {
        assert_eq!(
            messages(json!({"webhooks": [hook(json!({"sideEffects": "Some"}))]})),
            [
                r#"webhooks[0].sideEffects: Unsupported value: "Some": supported values: "None", "NoneOnDryRun""#
            ]
        );
        assert_eq!(
            messages(json!({"webhooks": [hook(json!({"sideEffects": null}))]})),
            ["webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun"]
        );
    }

    #[test]
    fn timeouts_names_versions_and_clients_are_checked() {
        let bad = json!({"webhooks": [
            hook(json!({"timeoutSeconds": 31})),
            hook(json!({"admissionReviewVersions": ["v2"], "clientConfig": {"url": "http://x/y"}})),
        ]});
        assert_eq!(
            messages(bad),
            [
                "webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 and 30 seconds",
                "webhooks[1].name: Duplicate value: \"deny.example.com\"",
                "webhooks[1].admissionReviewVersions: Invalid value: []string{\"v2\"}: must include at least one of v1, v1beta1",
                "webhooks[1].clientConfig.url: Invalid value: \"http://x/y\": 'https' is the only allowed URL scheme",
            ]
        );
        assert_eq!(
            messages(json!({"webhooks": [hook(json!({"name": "short"}))]})),
            [
                "webhooks[0].name: Invalid value: \"short\": should be a domain with at least three segments separated by dots"
            ]
        );
    }
}
