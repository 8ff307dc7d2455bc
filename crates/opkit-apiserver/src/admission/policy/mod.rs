//! ValidatingAdmissionPolicies (`admissionregistration.k8s.io/v1`): CEL validations the
//! control plane evaluates itself after mutating admission, for every binding whose
//! resources match the write, with upstream's matching, actions (Deny, Warn, Audit), failure
//! policy and texts (`k8s.io/apiserver/pkg/admission/plugin/policy/validating`).
//!
//! `config` keeps the compiled policies and bindings (refreshed after every write of either);
//! matching reuses the webhooks' rule and selector matchers.

pub(crate) mod config;

use serde_json::{Map, Value};

use opkit_apimachinery::LabelSelector;

use config::{Binding, Match, NamedRule, Policy, Reason};

use super::webhook::matching::{self, Attributes};
use super::webhook::{self, Write};
use crate::error::{ApiError, ApiResult};
use crate::request::ObjectRef;

/// The outcome of one policy under one binding.
enum Decision {
    Allow,
    /// A failed validation or a failure under `failurePolicy: Fail`: the message and reason.
    Fail(String, Reason),
}

/// Whether `r` matches the write as if it were to `version` (its rule and `resourceNames`).
fn named_rule_matches(r: &NamedRule, a: &Attributes<'_>, version: &str, name: &str) -> bool {
    matching::rule_matches(&r.rule, a, version)
        && (r.names.is_empty() || r.names.iter().any(|n| n == name))
}

/// The version of the resource through which `m` selects the write (rules with
/// `matchPolicy`, exclusions, selectors), if it does. With `empty_rules_match_all` (a
/// binding's `matchResources`), no `resourceRules` means every resource the policy matches.
fn selects(
    write: &Write<'_>,
    m: &Match,
    a: &Attributes<'_>,
    empty_rules_match_all: bool,
) -> Option<String> {
    let name = write.request.name;
    let others = write.other_versions();
    let rule = |r: &NamedRule, a: &Attributes<'_>, v: &str| named_rule_matches(r, a, v, name);
    let version = match empty_rules_match_all && m.rules.is_empty() {
        true => Some(write.res.version.clone()),
        false => matching::matched_version(&m.rules, m.exact, rule, a, &others),
    }?;
    if matching::matched_version(&m.exclude, m.exact, rule, a, &others).is_some() {
        return None;
    }
    let selected = matching::object_matches(&m.object_selector, a)
        && matching::namespace_matches(&m.namespace_selector, a, |ns| write.namespace_labels(ns));
    selected.then_some(version)
}

/// Runs every bound policy over the write (`object` is `None` for a delete). A Deny binding's
/// failure refuses the write; Warn adds a warning; Audit logs it. A policy matched through
/// `matchPolicy: Equivalent` sees the objects converted to the version it matched.
pub(crate) async fn validate(
    write: &Write<'_>,
    object: Option<&Value>,
    warnings: &mut Vec<String>,
) -> ApiResult<()> {
    let set = write
        .api
        .admission
        .policies
        .current(&write.api.storage, &write.api.registry);
    if set.is_empty() || webhook::exempt(write.res) {
        return Ok(());
    }
    let a = write.attributes(object);
    // The inputs in each version a policy matched, built once per version.
    let mut inputs_by_version: Vec<Inputs> = Vec::new();
    for (policy, bindings) in &set.policies {
        if bindings.is_empty() {
            continue;
        }
        let Some(version) = selects(write, &policy.constraints, &a, false) else {
            continue;
        };
        for binding in bindings {
            if let Some(m) = &binding.resources
                && selects(write, m, &a, true).is_none()
            {
                continue;
            }
            let known = inputs_by_version.iter().position(|i| i.version == version);
            let at = match known {
                Some(at) => at,
                None => {
                    let versioned = write.versioned(&version, object).await?;
                    inputs_by_version.push(Inputs::new(write, versioned));
                    inputs_by_version.len() - 1
                }
            };
            let inputs = &inputs_by_version[at];
            let params = match params(write, policy, binding) {
                Ok(params) => params,
                Err(e) if policy.ignore_failures => {
                    tracing::warn!(policy = %policy.name, binding = %binding.name, error = %e, "policy binding misconfigured, failing open");
                    continue;
                }
                Err(e) => {
                    let message = format!("failed to configure binding: {e}");
                    act(write, policy, binding, message, Reason::Forbidden, warnings)?;
                    continue;
                }
            };
            for param in &params {
                if let Decision::Fail(message, reason) = evaluate(policy, binding, inputs, param) {
                    act(write, policy, binding, message, reason, warnings)?;
                }
            }
        }
    }
    Ok(())
}

fn act(
    write: &Write<'_>,
    policy: &Policy,
    binding: &Binding,
    message: String,
    reason: Reason,
    warnings: &mut Vec<String>,
) -> ApiResult<()> {
    let (p, b, actions) = (&policy.name, &binding.name, binding.actions);
    if actions.audit {
        tracing::info!(
            policy = %p,
            binding = %b,
            resource = %write.request.resource,
            name = %write.request.name,
            %message,
            "validation.policy.admission.k8s.io/validation_failure"
        );
    }
    if actions.warn {
        warnings.push(format!(
            "Validation failed for ValidatingAdmissionPolicy '{p}' with binding '{b}': {message}"
        ));
    }
    if actions.deny {
        let text =
            format!("ValidatingAdmissionPolicy '{p}' with binding '{b}' denied request: {message}");
        let r = write.request;
        return Err(match reason {
            Reason::Forbidden => ApiError::forbidden(r.group, r.resource, r.name, text),
            other => ApiError::with_code(other.code(), text),
        });
    }
    Ok(())
}

/// The parameter objects a binding evaluates its policy with, as upstream's `CollectParams`:
/// one `null` without `paramKind` or `paramRef`; else the object named by `paramRef.name` or
/// those its `selector` matches, in `paramRef.namespace` or the request's namespace. None
/// found is an error under `parameterNotFoundAction: Deny` and no evaluation under `Allow`.
fn params(write: &Write<'_>, policy: &Policy, binding: &Binding) -> Result<Vec<Value>, String> {
    let (Some(kind), Some(r)) = (&policy.param_kind, &binding.param_ref) else {
        return Ok(vec![Value::Null]);
    };
    let (group, version) = match kind.api_version.split_once('/') {
        Some((g, v)) => (g, v),
        None => ("", kind.api_version.as_str()),
    };
    let snapshot = write.api.registry.snapshot();
    let Some(res) = snapshot
        .group_version(group, version)
        .into_iter()
        .find(|res| res.kind == kind.kind && !res.plural.contains('/'))
        .cloned()
    else {
        return Err(format!(
            "paramKind kind `&ParamKind{{APIVersion:{},Kind:{},}}` not known",
            kind.api_version, kind.kind
        ));
    };
    let namespace = match (res.namespaced, r.namespace.as_str()) {
        (false, "") => None,
        (false, _) => {
            return Err(
                "paramRef.namespace must not be provided for a cluster-scoped `paramKind`".into(),
            );
        }
        (true, "") => match write.request.namespace.filter(|ns| !ns.is_empty()) {
            Some(ns) => Some(ns.to_string()),
            None => {
                return Err("cannot use namespaced paramRef in policy binding that matches cluster-scoped resources".into());
            }
        },
        (true, ns) => Some(ns.to_string()),
    };
    let found: Vec<Value> = if !r.name.is_empty() {
        let target = ObjectRef {
            res: &res,
            ns: namespace.as_deref(),
            name: &r.name,
        };
        match write.api.storage.current(target) {
            Ok(current) => vec![current.object],
            Err(e) if e.code() == 404 => Vec::new(),
            Err(e) => return Err(e.to_string()),
        }
    } else {
        let selector = r.selector.clone().unwrap_or_else(LabelSelector::everything);
        let list = write
            .api
            .storage
            .list(&res, namespace.as_deref(), &Default::default())
            .map_err(|e| e.to_string())?;
        list.entries
            .iter()
            .filter_map(|e| serde_json::from_slice::<Value>(&e.value).ok())
            .filter(|o| selector.matches(&matching::labels(o)))
            .collect()
    };
    if found.is_empty() && r.deny_if_missing {
        return Err(
            "no params found for policy binding with `Deny` parameterNotFoundAction".into(),
        );
    }
    Ok(found)
}

/// What the expressions see (built once per write, only if a binding matches).
struct Inputs {
    version: String,
    object: Value,
    old_object: Value,
    request: Value,
    namespace_object: Value,
}

impl Inputs {
    fn new(write: &Write<'_>, versioned: webhook::Versioned) -> Inputs {
        let review = write.review("", &versioned);
        let request = serde_json::to_value(&review).unwrap_or(Value::Null);
        let r = write.request;
        let namespace_object = match r.namespace {
            Some(ns) if !ns.is_empty() => write.namespace_object(ns).unwrap_or(Value::Null),
            _ => Value::Null,
        };
        Inputs {
            version: versioned.version,
            object: review.object,
            old_object: review.old_object,
            request,
            namespace_object,
        }
    }

    /// The variables an expression sees, with `variables` as evaluated so far.
    fn bind<'a>(
        &'a self,
        variables: &'a Value,
        params: &'a Value,
    ) -> [(&'static str, &'a Value); 6] {
        [
            ("object", &self.object),
            ("oldObject", &self.old_object),
            ("request", &self.request),
            ("params", params),
            ("namespaceObject", &self.namespace_object),
            ("variables", variables),
        ]
    }
}

/// Evaluates one policy for one binding: `matchConditions`, then `variables`, then every
/// validation (the first failing one decides). Errors follow the policy's failure policy.
fn evaluate(policy: &Policy, binding: &Binding, inputs: &Inputs, params: &Value) -> Decision {
    let failure = |message: String| match policy.ignore_failures {
        true => {
            tracing::warn!(policy = %policy.name, binding = %binding.name, %message, "policy evaluation failed, failing open");
            Decision::Allow
        }
        false => Decision::Fail(message, Reason::Forbidden),
    };
    let mut variables = Map::new();
    let mut failed_variables: Vec<(String, String)> = Vec::new();
    // matchConditions: any false skips; otherwise an error is a failure.
    let mut errors = Vec::new();
    for (name, compiled) in &policy.conditions {
        let bound = Value::Object(variables.clone());
        let vars = inputs.bind(&bound, params);
        match compiled
            .as_ref()
            .map_err(Clone::clone)
            .and_then(|e| e.evaluate_bool(&vars))
        {
            Ok(true) => {}
            Ok(false) => return Decision::Allow,
            Err(e) => errors.push(format!("expression '{name}' resulted in error: {e}")),
        }
    }
    if !errors.is_empty() {
        return failure(errors.join(", "));
    }
    // Variables in order; each sees the ones before it. One that fails is an error only for
    // the expressions that use it (upstream evaluates them lazily).
    for (name, compiled) in &policy.variables {
        let bound = Value::Object(variables.clone());
        let vars = inputs.bind(&bound, params);
        match compiled
            .as_ref()
            .map_err(Clone::clone)
            .and_then(|e| e.evaluate_json(&vars))
        {
            Ok(v) => {
                variables.insert(name.clone(), v);
            }
            Err(e) => failed_variables.push((name.clone(), e)),
        }
    }
    let bound = Value::Object(variables);
    let vars = inputs.bind(&bound, params);
    let variable_error = |source: &str, e: String| {
        failed_variables
            .iter()
            .find(|(n, _)| source.contains(&format!("variables.{n}")))
            .map(|(n, ve)| format!("composited variable \"{n}\" fails to evaluate: {ve}"))
            .unwrap_or(e)
    };
    for v in &policy.validations {
        let result = v
            .compiled
            .as_ref()
            .map_err(Clone::clone)
            .and_then(|e| e.evaluate_bool(&vars));
        match result {
            Ok(true) => {}
            Ok(false) => return Decision::Fail(message(v, &vars, policy), v.reason),
            Err(e) => {
                return failure(format!(
                    "expression '{}' resulted in error: {}",
                    v.expression,
                    variable_error(&v.expression, e)
                ));
            }
        }
    }
    for (key, compiled) in &policy.audit_annotations {
        match compiled
            .as_ref()
            .map_err(Clone::clone)
            .and_then(|e| e.evaluate_json(&vars))
        {
            Ok(Value::Null) => {}
            Ok(value) => tracing::info!(
                policy = %policy.name,
                binding = %binding.name,
                annotation = %format!("{}/{key}", policy.name),
                %value,
                "audit annotation"
            ),
            Err(e) => {
                return failure(format!(
                    "valueExpression of audit annotation '{key}' resulted in error: {e}"
                ));
            }
        }
    }
    Decision::Allow
}

/// A failed validation's message: its `messageExpression`'s result if that evaluates to a
/// non-empty single-line string, else `message`, else upstream's `failed expression: EXPR`.
fn message(v: &config::Validation, vars: &[(&str, &Value)], policy: &Policy) -> String {
    if let Some(compiled) = &v.message_expression {
        match compiled
            .as_ref()
            .map_err(Clone::clone)
            .and_then(|e| e.evaluate_string(vars))
        {
            Ok(m) if !m.trim().is_empty() && !m.contains('\n') => return m,
            Ok(_) => {
                tracing::warn!(policy = %policy.name, "messageExpression gave an empty or multi-line string; using message")
            }
            Err(e) => {
                tracing::warn!(policy = %policy.name, error = %e, "messageExpression failed; using message")
            }
        }
    }
    match v.message.is_empty() {
        false => v.message.clone(),
        true => format!("failed expression: {}", v.expression.trim()),
    }
}
