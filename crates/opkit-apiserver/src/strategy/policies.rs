//! ValidatingAdmissionPolicies and their bindings: upstream's validation of
//! `admissionregistration.k8s.io/v1` (`ValidateValidatingAdmissionPolicy`,
//! `ValidateValidatingAdmissionPolicyBinding`: every expression must compile, so a broken
//! policy is a 422 instead of failing every write), and a fresh policy set for admission
//! after every committed change.
//!
//! The `authorizer` variable is not provided: an expression using it is refused here, loudly,
//! rather than stored and failing every write.

use std::collections::HashSet;

use serde_json::Value;

use super::Strategy;
use super::webhooks::{invalid, quoted_list, required, strings, unsupported, validate_rule};
use crate::admission::policy::config::{POLICY_VARIABLES, Reason};
use crate::api::Api;
use crate::error::{ApiResult, Cause};
use crate::registry::Resource;
use crate::request::Actor;

/// Both policy kinds.
pub(crate) struct Policies;

impl Strategy for Policies {
    fn validate_write(
        &self,
        _api: &Api,
        _actor: &Actor,
        res: &Resource,
        _ns: Option<&str>,
        obj: &Value,
    ) -> ApiResult<()> {
        let spec = obj.get("spec").unwrap_or(&Value::Null);
        let causes = match res.plural.as_str() {
            "validatingadmissionpolicies" => validate_policy(spec),
            _ => validate_binding(spec),
        };
        super::invalid_if_any(res, obj, causes)
    }

    fn committed(&self, api: &Api, _obj: &Value, _deleted: bool) {
        api.admission.policies_changed();
    }
}

fn forbidden(field: &str, detail: &str) -> Cause {
    Cause::new("FieldValueForbidden", field, format!("Forbidden: {detail}"))
}

/// `spec.paramKind`: an `apiVersion` (`group/version` or a core version) and a kind.
fn validate_param_kind(p: &Value, causes: &mut Vec<Cause>) {
    let api_version = p.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    if api_version.is_empty() {
        causes.push(required("spec.paramKind.apiVersion", ""));
    } else if version.is_empty() || version.contains('/') {
        causes.push(invalid(
            "spec.paramKind.apiVersion",
            &format!("{api_version:?}"),
            &format!("unexpected GroupVersion string: {api_version}"),
        ));
    } else if !group.is_empty() {
        for e in opkit_apimachinery::validation::is_dns1123_subdomain(group) {
            causes.push(invalid(
                "spec.paramKind.apiVersion",
                &format!("{group:?}"),
                &e,
            ));
        }
    }
    let kind = p.get("kind").and_then(Value::as_str).unwrap_or("");
    if kind.is_empty() {
        causes.push(required("spec.paramKind.kind", ""));
    } else {
        let errors = opkit_apimachinery::validation::is_dns1035_label(&kind.to_lowercase());
        if !errors.is_empty() {
            causes.push(invalid(
                "spec.paramKind.kind",
                &format!("{kind:?}"),
                &format!(
                    "may have mixed case, but should otherwise match: {}",
                    errors.join(",")
                ),
            ));
        }
    }
}

/// `spec.paramRef`: `name` or `selector` (not both), a valid namespace, and
/// `parameterNotFoundAction` (required in v1).
fn validate_param_ref(r: &Value, causes: &mut Vec<Cause>) {
    let name = r.get("name").and_then(Value::as_str).unwrap_or("");
    let selector = r.get("selector").filter(|s| !s.is_null());
    const EXCLUSIVE: &str = "name and selector are mutually exclusive";
    if !name.is_empty() {
        for e in opkit_apimachinery::validation::is_path_segment_name(name) {
            causes.push(invalid("spec.paramRef.name", &format!("{name:?}"), &e));
        }
        if selector.is_some() {
            causes.push(forbidden("spec.paramRef.name", EXCLUSIVE));
        }
    }
    let namespace = r.get("namespace").and_then(Value::as_str).unwrap_or("");
    if !namespace.is_empty() {
        for e in opkit_apimachinery::validation::is_dns1123_label(namespace) {
            causes.push(invalid(
                "spec.paramRef.namespace",
                &format!("{namespace:?}"),
                &e,
            ));
        }
    }
    match r.get("parameterNotFoundAction").and_then(Value::as_str) {
        None | Some("") => causes.push(required("spec.paramRef.parameterNotFoundAction", "")),
        Some("Allow" | "Deny") => {}
        Some(other) => causes.push(unsupported(
            "spec.paramRef.parameterNotFoundAction",
            other,
            &["Allow", "Deny"],
        )),
    }
    if let Some(s) = selector {
        if let Err(e) = opkit_apimachinery::LabelSelector::from_label_selector_json(s) {
            causes.push(invalid(
                "spec.paramRef.selector",
                &s.to_string(),
                &e.to_string(),
            ));
        }
        if !name.is_empty() {
            causes.push(forbidden("spec.paramRef.selector", EXCLUSIVE));
        }
    }
    if name.is_empty() && selector.is_none() {
        causes.push(required(
            "spec.paramRef",
            "one of name or selector must be specified",
        ));
    }
}

fn items(v: &Value, key: &str) -> Vec<Value> {
    v.get(key)
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// Compiles `expression` at `field`; upstream's `compilation failed: …` text, with a note
/// when the expression uses the `authorizer` variable this plane does not provide.
fn check_expression(field: &str, expression: &str, causes: &mut Vec<Cause>) {
    if expression.trim().is_empty() {
        causes.push(required(field, "expression is not specified"));
        return;
    }
    if let Err(e) = opkit_cel::Expression::compile(expression, &POLICY_VARIABLES) {
        let note = match e.contains("undeclared reference to 'authorizer'") {
            true => " (the authorizer variable is not supported by this control plane)",
            false => "",
        };
        causes.push(invalid(
            field,
            &format!("{expression:?}"),
            &format!("compilation failed: {e}{note}"),
        ));
    }
}

fn is_cel_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

pub(crate) fn validate_policy(spec: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    if let Some(p) = spec.get("failurePolicy").and_then(Value::as_str)
        && !matches!(p, "Fail" | "Ignore")
    {
        causes.push(unsupported("spec.failurePolicy", p, &["Fail", "Ignore"]));
    }
    if let Some(p) = spec.get("paramKind").filter(|p| !p.is_null()) {
        validate_param_kind(p, &mut causes);
    }
    match spec.get("matchConstraints").filter(|m| !m.is_null()) {
        None => causes.push(required("spec.matchConstraints", "")),
        Some(m) => {
            if items(m, "resourceRules").is_empty() {
                causes.push(required("spec.matchConstraints.resourceRules", ""));
            }
            validate_match("spec.matchConstraints", m, &mut causes);
        }
    }
    let validations = items(spec, "validations");
    let audits = items(spec, "auditAnnotations");
    if validations.is_empty() && audits.is_empty() {
        causes.push(required(
            "spec.validations",
            "validations or auditAnnotations must contain at least one item",
        ));
    }
    let mut names = HashSet::new();
    for (i, c) in items(spec, "matchConditions").iter().enumerate() {
        let at = format!("spec.matchConditions[{i}]");
        let name = c.get("name").and_then(Value::as_str).unwrap_or("");
        if name.is_empty() {
            causes.push(required(&format!("{at}.name"), ""));
        } else if !names.insert(name.to_string()) {
            causes.push(Cause::new(
                "FieldValueDuplicate",
                &format!("{at}.name"),
                format!("Duplicate value: \"{name}\""),
            ));
        }
        let expression = c.get("expression").and_then(Value::as_str).unwrap_or("");
        check_expression(&format!("{at}.expression"), expression, &mut causes);
    }
    for (i, v) in items(spec, "variables").iter().enumerate() {
        let at = format!("spec.variables[{i}]");
        let name = v.get("name").and_then(Value::as_str).unwrap_or("");
        if name.is_empty() {
            causes.push(required(&format!("{at}.name"), "name is not specified"));
        } else if !is_cel_identifier(name) {
            causes.push(invalid(
                &format!("{at}.name"),
                &format!("\"{name}\""),
                "name is not a valid CEL identifier",
            ));
        }
        let expression = v.get("expression").and_then(Value::as_str).unwrap_or("");
        check_expression(&format!("{at}.expression"), expression, &mut causes);
    }
    for (i, v) in validations.iter().enumerate() {
        let at = format!("spec.validations[{i}]");
        let expression = v.get("expression").and_then(Value::as_str).unwrap_or("");
        check_expression(&format!("{at}.expression"), expression, &mut causes);
        if let Some(m) = v.get("message").and_then(Value::as_str) {
            let quoted = format!("{m:?}");
            if m.trim().is_empty() {
                causes.push(invalid(
                    &format!("{at}.message"),
                    &quoted,
                    "message must be non-empty if specified",
                ));
            } else if m.contains('\n') {
                causes.push(invalid(
                    &format!("{at}.message"),
                    &quoted,
                    "message must not contain line breaks",
                ));
            }
        }
        if let Some(m) = v.get("messageExpression").and_then(Value::as_str) {
            check_expression(&format!("{at}.messageExpression"), m, &mut causes);
        }
        if let Some(r) = v.get("reason").and_then(Value::as_str)
            && Reason::parse(r).is_none()
        {
            causes.push(unsupported(
                &format!("{at}.reason"),
                r,
                &[
                    "Unauthorized",
                    "Forbidden",
                    "Invalid",
                    "RequestEntityTooLarge",
                ],
            ));
        }
    }
    let mut keys = HashSet::new();
    for (i, a) in audits.iter().enumerate() {
        let at = format!("spec.auditAnnotations[{i}]");
        let key = a.get("key").and_then(Value::as_str).unwrap_or("");
        if key.is_empty() {
            causes.push(required(&format!("{at}.key"), ""));
        } else if !keys.insert(key.to_string()) {
            causes.push(Cause::new(
                "FieldValueDuplicate",
                &format!("{at}.key"),
                format!("Duplicate value: \"{key}\""),
            ));
        }
        let expression = a.get("valueExpression").and_then(Value::as_str);
        check_expression(
            &format!("{at}.valueExpression"),
            expression.unwrap_or(""),
            &mut causes,
        );
    }
    causes
}

/// `matchConstraints` / `matchResources`: selectors, `matchPolicy` and rules.
fn validate_match(at: &str, m: &Value, causes: &mut Vec<Cause>) {
    if let Some(p) = m.get("matchPolicy").and_then(Value::as_str)
        && !matches!(p, "Equivalent" | "Exact")
    {
        causes.push(unsupported(
            &format!("{at}.matchPolicy"),
            p,
            &["Equivalent", "Exact"],
        ));
    }
    for selector in ["namespaceSelector", "objectSelector"] {
        if let Some(s) = m.get(selector).filter(|s| !s.is_null())
            && let Err(e) = opkit_apimachinery::LabelSelector::from_label_selector_json(s)
        {
            causes.push(invalid(
                &format!("{at}.{selector}"),
                &s.to_string(),
                &e.to_string(),
            ));
        }
    }
    for key in ["resourceRules", "excludeResourceRules"] {
        for (j, rule) in items(m, key).iter().enumerate() {
            validate_rule(&format!("{at}.{key}[{j}]"), rule, causes);
        }
    }
}

pub(crate) fn validate_binding(spec: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    if spec
        .get("policyName")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        causes.push(required("spec.policyName", ""));
    }
    if let Some(r) = spec.get("paramRef").filter(|r| !r.is_null()) {
        validate_param_ref(r, &mut causes);
    }
    let actions = strings(spec.get("validationActions"));
    if actions.is_empty() {
        causes.push(required(
            "spec.validationActions",
            "at least one validation action is required",
        ));
    }
    let mut seen = HashSet::new();
    for (i, a) in actions.iter().enumerate() {
        let field = format!("spec.validationActions[{i}]");
        if !matches!(*a, "Deny" | "Warn" | "Audit") {
            causes.push(unsupported(&field, a, &["Audit", "Deny", "Warn"]));
        }
        if !seen.insert(*a) {
            causes.push(Cause::new(
                "FieldValueDuplicate",
                &field,
                format!("Duplicate value: \"{a}\""),
            ));
        }
    }
    if actions.contains(&"Deny") && actions.contains(&"Warn") {
        causes.push(invalid(
            "spec.validationActions",
            &format!("[]string{{{}}}", quoted_list(&actions)),
            "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)",
        ));
    }
    if let Some(m) = spec.get("matchResources").filter(|m| !m.is_null()) {
        validate_match("spec.matchResources", m, &mut causes);
    }
    causes
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn policy(extra: Value) -> Value {
        let mut p = json!({
            "failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": [{
                "operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                "resources": ["configmaps"], "scope": "*",
            }]},
            "validations": [{"expression": "object.metadata.name != 'x'"}],
        });
        for (k, v) in extra.as_object().unwrap() {
            p[k] = v.clone();
        }
        p
    }

    fn messages(causes: Vec<Cause>) -> Vec<String> {
        causes
            .into_iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    }

    #[test]
    fn a_valid_policy_and_binding_have_no_causes() {
        assert!(validate_policy(&policy(json!({}))).is_empty());
        let binding = json!({"policyName": "p", "validationActions": ["Deny"]});
        assert!(validate_binding(&binding).is_empty());
    }

    #[test]
    fn broken_expressions_authorizer_and_param_kinds_are_refused() {
        let bad = policy(json!({
            "validations": [
                {"expression": "object.metadata.name ==", "reason": "Teapot"},
                {"expression": "authorizer.group('').check('x')"},
            ],
            "paramKind": {"apiVersion": "a/b/c", "kind": "Config_Map"},
        }));
        let got = messages(validate_policy(&bad));
        assert_eq!(
            &got[..2],
            [
                "spec.paramKind.apiVersion: Invalid value: \"a/b/c\": unexpected GroupVersion string: a/b/c",
                "spec.paramKind.kind: Invalid value: \"Config_Map\": may have mixed case, but should otherwise match: a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
            ]
        );
        let got = &got[1..];
        assert!(
            got[1].starts_with("spec.validations[0].expression: Invalid value: \"object.metadata.name ==\": compilation failed: ERROR: <input>:1:"),
            "{got:?}"
        );
        assert_eq!(
            got[2],
            "spec.validations[0].reason: Unsupported value: \"Teapot\": supported values: \"Unauthorized\", \"Forbidden\", \"Invalid\", \"RequestEntityTooLarge\""
        );
        assert!(
            got[3].ends_with("(the authorizer variable is not supported by this control plane)"),
            "{got:?}"
        );
        assert_eq!(got.len(), 4, "{got:?}");
    }

    #[test]
    fn param_refs_need_name_or_selector_and_a_not_found_action() {
        let got = messages(validate_binding(&json!({
            "policyName": "p", "validationActions": ["Deny"],
            "paramRef": {"name": "a", "selector": {}, "parameterNotFoundAction": "Maybe"},
        })));
        assert_eq!(
            got,
            [
                "spec.paramRef.name: Forbidden: name and selector are mutually exclusive",
                "spec.paramRef.parameterNotFoundAction: Unsupported value: \"Maybe\": supported values: \"Allow\", \"Deny\"",
                "spec.paramRef.selector: Forbidden: name and selector are mutually exclusive",
            ]
        );
        let got = messages(validate_binding(&json!({
            "policyName": "p", "validationActions": ["Deny"], "paramRef": {"namespace": "Bad"},
        })));
        assert_eq!(got.len(), 3, "{got:?}");
        assert!(
            got[0].starts_with(
                "spec.paramRef.namespace: Invalid value: \"Bad\": a lowercase RFC 1123 label"
            ),
            "{got:?}"
        );
        assert_eq!(
            got[1],
            "spec.paramRef.parameterNotFoundAction: Required value"
        );
        assert_eq!(
            got[2],
            "spec.paramRef: Required value: one of name or selector must be specified"
        );
    }

    #[test]
    fn bindings_need_a_policy_and_compatible_actions() {
        let got = messages(validate_binding(
            &json!({"validationActions": ["Deny", "Warn", "Nope"]}),
        ));
        assert_eq!(
            got,
            [
                "spec.policyName: Required value",
                "spec.validationActions[2]: Unsupported value: \"Nope\": supported values: \"Audit\", \"Deny\", \"Warn\"",
                "spec.validationActions: Invalid value: []string{\"Deny\", \"Warn\", \"Nope\"}: must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)",
            ]
        );
    }
}
