//! ValidatingAdmissionPolicies and their bindings: upstream's validation of
//! `admissionregistration.k8s.io/v1` (`ValidateValidatingAdmissionPolicy`,
//! `ValidateValidatingAdmissionPolicyBinding`: every expression must compile, so a broken
//! policy is a 422 instead of failing every write), and a fresh policy set for admission
//! after every committed change.
//!
//! Parameter resources (`paramKind`, `paramRef`) are not implemented: they are refused here,
//! loudly, rather than stored and ignored. The `authorizer` variable is not provided either.

use std::collections::HashSet;

use serde_json::Value;

use super::Strategy;
use super::webhooks::{invalid, quoted_list, required, strings, unsupported, validate_rule};
use crate::admission::policy::config::{POLICY_VARIABLES, Reason};
use crate::api::Api;
use crate::error::{ApiError, ApiResult, Cause};
use crate::object;
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
        if causes.is_empty() {
            return Ok(());
        }
        Err(ApiError::invalid(
            &res.group,
            &res.kind,
            object::name(obj),
            causes,
        ))
    }

    fn committed(&self, api: &Api, _obj: &Value, _deleted: bool) {
        api.admission.policies_changed();
    }
}

const NO_PARAMS: &str = "parameter resources are not supported by this control plane";

fn forbidden(field: &str, detail: &str) -> Cause {
    Cause::new("FieldValueForbidden", field, format!("Forbidden: {detail}"))
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
    if spec.get("paramKind").is_some_and(|p| !p.is_null()) {
        causes.push(forbidden("spec.paramKind", NO_PARAMS));
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
    if spec.get("paramRef").is_some_and(|p| !p.is_null()) {
        causes.push(forbidden("spec.paramRef", NO_PARAMS));
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
    fn broken_expressions_authorizer_and_params_are_refused() {
        let bad = policy(json!({
            "validations": [
                {"expression": "object.metadata.name ==", "reason": "Teapot"},
                {"expression": "authorizer.group('').check('x')"},
            ],
            "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
        }));
        let got = messages(validate_policy(&bad));
        assert_eq!(got[0], format!("spec.paramKind: Forbidden: {NO_PARAMS}"));
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
