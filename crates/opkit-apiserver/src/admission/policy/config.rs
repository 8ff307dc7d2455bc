//! The stored ValidatingAdmissionPolicies and their bindings, parsed and compiled once per
//! change (as `webhook::config` does for webhooks: a committed write of either kind bumps an
//! epoch, and the next admission rebuilds the set from storage).

use opkit_apimachinery::LabelSelector;
use serde_json::Value;

use crate::admission::reloaded::{Loaded, Reloaded, stored};
use crate::admission::webhook::config::{Rule, Scope};
use crate::registry::Registry;
use crate::storage::Storage;

/// The variables a policy's expressions see. Upstream also declares `authorizer` (and
/// `authorizer.requestResource`), which this control plane does not provide: an expression
/// using it is refused when the policy is written.
pub(crate) const POLICY_VARIABLES: [&str; 6] = [
    "object",
    "oldObject",
    "request",
    "params",
    "namespaceObject",
    "variables",
];

/// A compiled expression, or why it does not compile.
pub(crate) type Compiled = Result<opkit_cel::Expression, String>;

pub(crate) fn compile(source: &str) -> Compiled {
    opkit_cel::Expression::compile(source, &POLICY_VARIABLES)
}

/// A rule of `resourceRules` / `excludeResourceRules`.
#[derive(Debug)]
pub(crate) struct NamedRule {
    pub(crate) rule: Rule,
    /// `resourceNames`; empty: every name.
    pub(crate) names: Vec<String>,
}

/// `matchConstraints` of a policy or `matchResources` of a binding.
#[derive(Debug)]
pub(crate) struct Match {
    pub(crate) rules: Vec<NamedRule>,
    pub(crate) exclude: Vec<NamedRule>,
    /// `matchPolicy: Exact`.
    pub(crate) exact: bool,
    pub(crate) namespace_selector: LabelSelector,
    pub(crate) object_selector: LabelSelector,
}

/// An upstream validation `reason` and the HTTP code a denial with it carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reason {
    Forbidden,
    Invalid,
    Unauthorized,
    RequestEntityTooLarge,
}

impl Reason {
    pub(crate) fn parse(s: &str) -> Option<Reason> {
        Some(match s {
            "Forbidden" => Reason::Forbidden,
            "Invalid" => Reason::Invalid,
            "Unauthorized" => Reason::Unauthorized,
            "RequestEntityTooLarge" => Reason::RequestEntityTooLarge,
            _ => return None,
        })
    }

    pub(crate) fn code(self) -> u16 {
        match self {
            Reason::Forbidden => 403,
            Reason::Invalid => 422,
            Reason::Unauthorized => 401,
            Reason::RequestEntityTooLarge => 413,
        }
    }
}

/// One entry of `validations`.
#[derive(Debug)]
pub(crate) struct Validation {
    pub(crate) expression: String,
    pub(crate) compiled: Compiled,
    pub(crate) message: String,
    pub(crate) message_expression: Option<Compiled>,
    pub(crate) reason: Reason,
}

/// A policy's `paramKind`.
#[derive(Debug, Clone)]
pub(crate) struct ParamKind {
    pub(crate) api_version: String,
    pub(crate) kind: String,
}

/// A binding's `paramRef`: one object by `name`, or every object its `selector` matches, in
/// `namespace` (for a namespaced kind; the request's namespace when empty).
#[derive(Debug)]
pub(crate) struct ParamRef {
    pub(crate) name: String,
    pub(crate) namespace: String,
    pub(crate) selector: Option<LabelSelector>,
    /// `parameterNotFoundAction: Deny`: no parameter is a configuration error.
    pub(crate) deny_if_missing: bool,
}

/// A ValidatingAdmissionPolicy.
#[derive(Debug)]
pub(crate) struct Policy {
    pub(crate) name: String,
    /// `failurePolicy: Ignore`.
    pub(crate) ignore_failures: bool,
    /// `paramKind`, if set: the kind of the objects its bindings pass as `params`.
    pub(crate) param_kind: Option<ParamKind>,
    pub(crate) constraints: Match,
    pub(crate) conditions: Vec<(String, Compiled)>,
    pub(crate) variables: Vec<(String, Compiled)>,
    pub(crate) validations: Vec<Validation>,
    pub(crate) audit_annotations: Vec<(String, Compiled)>,
}

/// A binding's `validationActions`.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Actions {
    pub(crate) deny: bool,
    pub(crate) warn: bool,
    pub(crate) audit: bool,
}

/// A ValidatingAdmissionPolicyBinding.
#[derive(Debug)]
pub(crate) struct Binding {
    pub(crate) name: String,
    pub(crate) policy: String,
    /// `paramRef`: which objects of the policy's `paramKind` to evaluate with.
    pub(crate) param_ref: Option<ParamRef>,
    pub(crate) actions: Actions,
    /// `matchResources`; `None`: everything the policy matches.
    pub(crate) resources: Option<Match>,
}

/// Every policy with its bindings, in name order.
#[derive(Debug, Default)]
pub(crate) struct PolicySet {
    pub(crate) policies: Vec<(Policy, Vec<Binding>)>,
}

impl PolicySet {
    pub(crate) fn is_empty(&self) -> bool {
        self.policies.iter().all(|(_, b)| b.is_empty())
    }
}

/// The policies, rebuilt from storage after a change.
pub(crate) type Policies = Reloaded<PolicySet>;

impl Loaded for PolicySet {
    fn load(storage: &Storage, registry: &Registry) -> PolicySet {
        load(storage, registry)
    }
}

fn load(storage: &Storage, registry: &Registry) -> PolicySet {
    let bindings: Vec<Binding> = stored(storage, registry, "validatingadmissionpolicybindings")
        .iter()
        .map(binding)
        .collect();
    let mut set = PolicySet::default();
    for obj in stored(storage, registry, "validatingadmissionpolicies") {
        set.policies.push((policy(&obj), Vec::new()));
    }
    // Bindings are moved to their policies (a binding of a missing policy does nothing, as
    // upstream).
    for b in bindings {
        if let Some((_, list)) = set.policies.iter_mut().find(|(p, _)| p.name == b.policy) {
            list.push(b);
        }
    }
    set
}

fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect()
}

fn selector(v: Option<&Value>) -> LabelSelector {
    // Absent: matches everything (upstream's default `{}`); a stored one was validated.
    match v.filter(|v| !v.is_null()) {
        None => LabelSelector::everything(),
        Some(s) => {
            LabelSelector::from_label_selector_json(s).unwrap_or_else(|_| LabelSelector::nothing())
        }
    }
}

fn named_rules(v: Option<&Value>) -> Vec<NamedRule> {
    v.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|r| NamedRule {
            rule: Rule {
                operations: strings(r.get("operations")),
                groups: strings(r.get("apiGroups")),
                versions: strings(r.get("apiVersions")),
                resources: strings(r.get("resources")),
                scope: match r.get("scope").and_then(Value::as_str) {
                    Some("Cluster") => Scope::Cluster,
                    Some("Namespaced") => Scope::Namespaced,
                    _ => Scope::All,
                },
            },
            names: strings(r.get("resourceNames")),
        })
        .collect()
}

fn matching(v: &Value) -> Match {
    Match {
        rules: named_rules(v.get("resourceRules")),
        exclude: named_rules(v.get("excludeResourceRules")),
        exact: v.get("matchPolicy").and_then(Value::as_str) == Some("Exact"),
        namespace_selector: selector(v.get("namespaceSelector")),
        object_selector: selector(v.get("objectSelector")),
    }
}

fn named_expressions(v: Option<&Value>, key: &str) -> Vec<(String, Compiled)> {
    v.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|c| {
            (
                c.get(key).and_then(Value::as_str).unwrap_or("").to_string(),
                compile(c.get("expression").and_then(Value::as_str).unwrap_or("")),
            )
        })
        .collect()
}

pub(crate) fn policy(obj: &Value) -> Policy {
    let spec = obj.get("spec").cloned().unwrap_or(Value::Null);
    let param_kind = spec
        .get("paramKind")
        .filter(|p| !p.is_null())
        .map(|p| ParamKind {
            api_version: str_at(p, "/apiVersion").to_string(),
            kind: str_at(p, "/kind").to_string(),
        });
    let validations = spec
        .get("validations")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|v| {
            let expression = str_at(v, "/expression").to_string();
            Validation {
                compiled: compile(&expression),
                expression,
                message: str_at(v, "/message").to_string(),
                message_expression: v
                    .get("messageExpression")
                    .and_then(Value::as_str)
                    .filter(|m| !m.is_empty())
                    .map(compile),
                reason: v
                    .get("reason")
                    .and_then(Value::as_str)
                    .and_then(Reason::parse)
                    .unwrap_or(Reason::Forbidden),
            }
        })
        .collect();
    Policy {
        name: crate::object::name(obj).to_string(),
        ignore_failures: str_at(&spec, "/failurePolicy") == "Ignore",
        param_kind,
        constraints: matching(spec.get("matchConstraints").unwrap_or(&Value::Null)),
        conditions: named_expressions(spec.get("matchConditions"), "name"),
        variables: named_expressions(spec.get("variables"), "name"),
        validations,
        audit_annotations: spec
            .get("auditAnnotations")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|a| {
                (
                    str_at(a, "/key").to_string(),
                    compile(str_at(a, "/valueExpression")),
                )
            })
            .collect(),
    }
}

pub(crate) fn binding(obj: &Value) -> Binding {
    let spec = obj.get("spec").cloned().unwrap_or(Value::Null);
    let mut actions = Actions::default();
    for a in strings(spec.get("validationActions")) {
        match a.as_str() {
            "Deny" => actions.deny = true,
            "Warn" => actions.warn = true,
            "Audit" => actions.audit = true,
            _ => {}
        }
    }
    Binding {
        name: crate::object::name(obj).to_string(),
        policy: str_at(&spec, "/policyName").to_string(),
        param_ref: spec
            .get("paramRef")
            .filter(|p| !p.is_null())
            .map(|p| ParamRef {
                name: str_at(p, "/name").to_string(),
                namespace: str_at(p, "/namespace").to_string(),
                selector: p
                    .get("selector")
                    .filter(|s| !s.is_null())
                    .map(|s| selector(Some(s))),
                deny_if_missing: str_at(p, "/parameterNotFoundAction") == "Deny",
            }),
        actions,
        resources: spec
            .get("matchResources")
            .filter(|m| !m.is_null())
            .map(matching),
    }
}
