//! Which webhooks (and admission policies, `admission::policy`) a write reaches: `rules`
//! (operations, groups, versions, resources with subresources, scope), `matchPolicy`,
//! `namespaceSelector` and `objectSelector`, as upstream's `generic.Webhook` matchers decide.

use opkit_apimachinery::LabelSelector;
use serde_json::{Map, Value};

use super::config::{Rule, Scope};
use crate::admission::Operation;

/// What of a write the matchers look at.
pub(crate) struct Attributes<'a> {
    pub(crate) operation: Operation,
    pub(crate) group: &'a str,
    pub(crate) version: &'a str,
    pub(crate) resource: &'a str,
    pub(crate) subresource: &'a str,
    /// The request's namespace; for a Namespace object itself, its name (as upstream's
    /// RequestInfo has it).
    pub(crate) namespace: &'a str,
    pub(crate) object: Option<&'a Value>,
    pub(crate) old: Option<&'a Value>,
}

fn operation_name(op: Operation) -> &'static str {
    match op {
        Operation::Create => "CREATE",
        Operation::Update => "UPDATE",
        Operation::Delete => "DELETE",
    }
}

fn any(values: &[String], wanted: &str) -> bool {
    values.iter().any(|v| v == "*" || v == wanted)
}

fn resource_matches(resources: &[String], resource: &str, subresource: &str) -> bool {
    resources.iter().any(|r| {
        let (res, sub) = r.split_once('/').unwrap_or((r.as_str(), ""));
        (res == "*" || res == resource) && (sub == "*" || sub == subresource)
    })
}

fn scope_matches(scope: Scope, a: &Attributes<'_>) -> bool {
    let namespace_object = a.group.is_empty() && a.resource == "namespaces";
    match scope {
        Scope::All => true,
        Scope::Namespaced => !namespace_object && !a.namespace.is_empty(),
        Scope::Cluster => namespace_object || a.namespace.is_empty(),
    }
}

/// Whether `rule` matches the write as if it were to `version` of the resource.
pub(crate) fn rule_matches(rule: &Rule, a: &Attributes<'_>, version: &str) -> bool {
    any(&rule.operations, operation_name(a.operation))
        && any(&rule.groups, a.group)
        && any(&rule.versions, version)
        && resource_matches(&rule.resources, a.resource, a.subresource)
        && scope_matches(rule.scope, a)
}

/// The version a webhook is called with for this write: the request's own if one of `rules`
/// (as `matches` decides) names it, else (`exact` false: `matchPolicy: Equivalent`) another
/// served version of the same resource that a rule names; `None` when no rule matches.
pub(crate) fn matched_version<R>(
    rules: &[R],
    exact: bool,
    matches: impl Fn(&R, &Attributes<'_>, &str) -> bool,
    a: &Attributes<'_>,
    other_versions: &[String],
) -> Option<String> {
    if rules.iter().any(|r| matches(r, a, a.version)) {
        return Some(a.version.to_string());
    }
    if exact {
        return None;
    }
    other_versions
        .iter()
        .find(|v| rules.iter().any(|r| matches(r, a, v)))
        .cloned()
}

pub(crate) fn labels(obj: &Value) -> Map<String, Value> {
    obj.pointer("/metadata/labels")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

/// `objectSelector`: the new or the old object matches (an empty selector matches all).
pub(crate) fn object_matches(selector: &LabelSelector, a: &Attributes<'_>) -> bool {
    if selector.is_empty() {
        return true;
    }
    [a.object, a.old]
        .into_iter()
        .flatten()
        .filter(|o| !o.is_null())
        .any(|o| selector.matches(&labels(o)))
}

/// `namespaceSelector`: cluster-scoped objects other than namespaces always match; a
/// Namespace is matched by its own labels; anything else by its namespace's labels
/// (`namespace_labels` looks them up).
pub(crate) fn namespace_matches(
    selector: &LabelSelector,
    a: &Attributes<'_>,
    namespace_labels: impl FnOnce(&str) -> Map<String, Value>,
) -> bool {
    if selector.is_empty() {
        return true;
    }
    let namespace_object = a.group.is_empty() && a.resource == "namespaces";
    if namespace_object {
        let own = a.object.filter(|o| !o.is_null()).or(a.old);
        return selector.matches(&own.map(labels).unwrap_or_default());
    }
    if a.namespace.is_empty() {
        return true;
    }
    selector.matches(&namespace_labels(a.namespace))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn rule(resources: &[&str], scope: Scope) -> Rule {
        Rule {
            operations: vec!["CREATE".into()],
            groups: vec!["".into()],
            versions: vec!["v1".into()],
            resources: resources.iter().map(|s| s.to_string()).collect(),
            scope,
        }
    }

    fn attrs<'a>(resource: &'a str, subresource: &'a str, namespace: &'a str) -> Attributes<'a> {
        Attributes {
            operation: Operation::Create,
            group: "",
            version: "v1",
            resource,
            subresource,
            namespace,
            object: None,
            old: None,
        }
    }

    #[test]
    fn resources_match_with_subresources_and_wildcards() {
        let a = attrs("pods", "status", "default");
        assert!(rule_matches(&rule(&["*/status"], Scope::All), &a, "v1"));
        assert!(rule_matches(&rule(&["pods/*"], Scope::All), &a, "v1"));
        assert!(!rule_matches(&rule(&["*"], Scope::All), &a, "v1"));
        assert!(!rule_matches(&rule(&["pods"], Scope::All), &a, "v1"));
        let main = attrs("pods", "", "default");
        assert!(rule_matches(&rule(&["*"], Scope::Namespaced), &main, "v1"));
        assert!(!rule_matches(&rule(&["*"], Scope::Cluster), &main, "v1"));
        let ns = attrs("namespaces", "", "team");
        assert!(rule_matches(&rule(&["*"], Scope::Cluster), &ns, "v1"));
        assert!(!rule_matches(&rule(&["*"], Scope::Namespaced), &ns, "v1"));
    }

    #[test]
    fn namespace_selector_reads_the_namespace_or_the_namespace_itself() {
        let sel = LabelSelector::from_label_selector_json(&json!({"matchLabels": {"hooks": "on"}}))
            .unwrap();
        let a = attrs("configmaps", "", "team");
        assert!(namespace_matches(&sel, &a, |_| json!({"hooks": "on"})
            .as_object()
            .unwrap()
            .clone()));
        assert!(!namespace_matches(&sel, &a, |_| Map::new()));
        let obj = json!({"metadata": {"name": "team", "labels": {"hooks": "on"}}});
        let mut ns = attrs("namespaces", "", "team");
        ns.object = Some(&obj);
        assert!(namespace_matches(&sel, &ns, |_| Map::new()));
        let cluster = attrs("nodes", "", "");
        assert!(namespace_matches(&sel, &cluster, |_| Map::new()));
    }
}
