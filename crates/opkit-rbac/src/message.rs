//! The texts of RBAC denials, exactly as kube-apiserver writes them.
//!
//! Users and scripts grep for these (`cannot list resource "pods" in API group ""`, `is
//! attempting to grant RBAC permissions not currently held`), so they are reproduced to the
//! character: the 403 message is upstream's `forbiddenMessage` wrapped by `NewForbidden`
//! (`<resource>[.<group>] ["<name>"] is forbidden: ...`), and the escalation message is
//! `ConfirmNoEscalation`'s, with the missing rules compacted and printed as `CompactString` does.
//! Go's `%q` quoting is `opkit_apimachinery::go_quote`.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use k8s_openapi::api::rbac::v1::PolicyRule;

use crate::error::{RuleError, aggregate_messages};
use crate::rules::items;
use crate::{Request, UserInfo, non_empty};
use opkit_apimachinery::go_quote;

/// The message of the 403 `Status` for a denied request (upstream `ForbiddenStatusError`),
/// with `: <reason>` appended when the reason is not empty.
///
/// ```
/// # use opkit_rbac::{forbidden_message, Request, UserInfo};
/// let alice = UserInfo::new("alice", ["system:authenticated"]);
/// let req = Request::Resource {
///     verb: "list", group: "", version: "v1", resource: "pods",
///     subresource: None, namespace: Some("default"), name: None,
/// };
/// assert_eq!(
///     forbidden_message(&alice, &req, ""),
///     r#"pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "default""#,
/// );
/// ```
pub fn forbidden_message(user: &UserInfo, request: &Request<'_>, reason: &str) -> String {
    let mut out = String::new();
    match *request {
        Request::NonResource { verb, path } => {
            let _ = write!(
                out,
                "forbidden: User {} cannot {verb} path {}",
                go_quote(&user.name),
                go_quote(path)
            );
        }
        Request::Resource {
            verb,
            group,
            resource,
            subresource,
            namespace,
            name,
            ..
        } => {
            // The qualified resource of the Status: `resource.group`, no subresource.
            match (resource.is_empty(), group.is_empty()) {
                (true, true) => out.push_str("forbidden: "),
                (_, true) => {
                    let _ = write!(out, "{resource}");
                }
                _ => {
                    let _ = write!(out, "{resource}.{group}");
                }
            }
            if !(resource.is_empty() && group.is_empty()) {
                if let Some(name) = non_empty(name) {
                    let _ = write!(out, " {}", go_quote(name));
                }
                out.push_str(" is forbidden: ");
            }
            let shown = match non_empty(subresource) {
                Some(sub) => format!("{resource}/{sub}"),
                None => resource.to_owned(),
            };
            let _ = write!(
                out,
                "User {} cannot {verb} resource {} in API group {}",
                go_quote(&user.name),
                go_quote(&shown),
                go_quote(group)
            );
            match non_empty(namespace) {
                Some(ns) => {
                    let _ = write!(out, " in the namespace {}", go_quote(ns));
                }
                None => out.push_str(" at the cluster scope"),
            }
        }
    }
    if !reason.is_empty() {
        out.push_str(": ");
        out.push_str(reason);
    }
    out
}

/// The message of the 403 `Status` when writing `group_resource` (e.g.
/// `clusterroles.rbac.authorization.k8s.io`, `rolebindings.rbac.authorization.k8s.io`) named
/// `name` would grant `missing` rules the user does not hold (upstream `ConfirmNoEscalation`
/// wrapped by `NewForbidden`).
pub fn escalation_message(
    group_resource: &str,
    name: &str,
    user: &UserInfo,
    missing: &[PolicyRule],
) -> String {
    escalation_message_with_errors(group_resource, name, user, missing, &[])
}

/// [`escalation_message`] followed by upstream's `; resolution errors: [...]` when some of the
/// user's bindings could not be resolved.
pub(crate) fn escalation_message_with_errors(
    group_resource: &str,
    name: &str,
    user: &UserInfo,
    missing: &[PolicyRule],
    resolution_errors: &[RuleError],
) -> String {
    let descriptions: BTreeSet<String> =
        compact_rules(missing).iter().map(compact_string).collect();
    let mut out = String::new();
    if group_resource.is_empty() {
        out.push_str("forbidden: ");
    } else {
        out.push_str(group_resource);
        if !name.is_empty() {
            out.push(' ');
            out.push_str(&go_quote(name));
        }
        out.push_str(" is forbidden: ");
    }
    let _ = write!(
        out,
        "user {} (groups={}) is attempting to grant RBAC permissions not currently held:\n{}",
        go_quote(&user.name),
        go_quote_list(&user.groups),
        descriptions.into_iter().collect::<Vec<_>>().join("\n")
    );
    if !resolution_errors.is_empty() {
        let _ = write!(
            out,
            "; resolution errors: [{}]",
            aggregate_messages(resolution_errors)
        );
    }
    out
}

/// A rule as upstream prints it in escalation messages (`CompactString`):
/// `{APIGroups:[""], Resources:["pods"], Verbs:["get"]}`, leaving out empty fields.
pub fn compact_string(rule: &PolicyRule) -> String {
    let fields: [(&str, &[String]); 5] = [
        ("APIGroups", items(&rule.api_groups)),
        ("Resources", items(&rule.resources)),
        ("NonResourceURLs", items(&rule.non_resource_urls)),
        ("ResourceNames", items(&rule.resource_names)),
        ("Verbs", &rule.verbs),
    ];
    let parts: Vec<String> = fields
        .iter()
        .filter(|(_, values)| !values.is_empty())
        .map(|(label, values)| format!("{label}:{}", go_quote_list(values)))
        .collect();
    format!("{{{}}}", parts.join(", "))
}

/// Merges rules that name one API group and one resource and nothing else (no resourceNames, no
/// URLs) and differ only by verb, as upstream's `CompactRules` does before printing.
fn compact_rules(rules: &[PolicyRule]) -> Vec<PolicyRule> {
    let mut out: Vec<PolicyRule> = Vec::with_capacity(rules.len());
    let mut simple: Vec<((String, String), usize)> = Vec::new();
    for rule in rules {
        let groups = items(&rule.api_groups);
        let resources = items(&rule.resources);
        let is_simple = groups.len() == 1
            && resources.len() == 1
            && items(&rule.resource_names).is_empty()
            && items(&rule.non_resource_urls).is_empty();
        if !is_simple {
            out.push(rule.clone());
            continue;
        }
        let key = (groups[0].clone(), resources[0].clone());
        match simple.iter().find(|(k, _)| *k == key) {
            Some(&(_, at)) => out[at].verbs.extend(rule.verbs.iter().cloned()),
            None => {
                simple.push((key, out.len()));
                out.push(rule.clone());
            }
        }
    }
    out
}

/// Go's `%q` of a `[]string`: `["a" "b"]`.
fn go_quote_list(values: &[String]) -> String {
    let quoted: Vec<String> = values.iter().map(|v| go_quote(v)).collect();
    format!("[{}]", quoted.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::tests::{named, rule, url_rule};

    fn alice() -> UserInfo {
        UserInfo::new("alice", ["dev", "system:authenticated"])
    }

    fn resource<'a>(
        verb: &'a str,
        group: &'a str,
        resource: &'a str,
        subresource: Option<&'a str>,
        namespace: Option<&'a str>,
        name: Option<&'a str>,
    ) -> Request<'a> {
        Request::Resource {
            verb,
            group,
            version: "v1",
            resource,
            subresource,
            namespace,
            name,
        }
    }

    #[test]
    fn forbidden_namespaced_collection() {
        let req = resource("list", "", "pods", None, Some("default"), None);
        assert_eq!(
            forbidden_message(&alice(), &req, ""),
            r#"pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "default""#
        );
    }

    #[test]
    fn forbidden_named_object() {
        let req = resource("get", "", "pods", None, Some("default"), Some("web"));
        assert_eq!(
            forbidden_message(&alice(), &req, ""),
            r#"pods "web" is forbidden: User "alice" cannot get resource "pods" in API group "" in the namespace "default""#
        );
    }

    #[test]
    fn forbidden_cluster_scope() {
        let req = resource("list", "", "nodes", None, None, None);
        assert_eq!(
            forbidden_message(&alice(), &req, ""),
            r#"nodes is forbidden: User "alice" cannot list resource "nodes" in API group "" at the cluster scope"#
        );
    }

    #[test]
    fn forbidden_subresource_shows_it_only_after_cannot() {
        let req = resource("get", "", "pods", Some("log"), Some("default"), Some("web"));
        assert_eq!(
            forbidden_message(&alice(), &req, ""),
            r#"pods "web" is forbidden: User "alice" cannot get resource "pods/log" in API group "" in the namespace "default""#
        );
    }

    #[test]
    fn forbidden_group_qualifies_the_leading_resource() {
        let req = resource("create", "apps", "deployments", None, Some("prod"), None);
        assert_eq!(
            forbidden_message(&alice(), &req, ""),
            r#"deployments.apps is forbidden: User "alice" cannot create resource "deployments" in API group "apps" in the namespace "prod""#
        );
    }

    #[test]
    fn forbidden_non_resource_path() {
        let req = Request::NonResource {
            verb: "get",
            path: "/apis",
        };
        assert_eq!(
            forbidden_message(&alice(), &req, ""),
            r#"forbidden: User "alice" cannot get path "/apis""#
        );
    }

    #[test]
    fn forbidden_appends_non_empty_reason() {
        let req = resource("list", "", "pods", None, Some("default"), None);
        assert_eq!(
            forbidden_message(
                &alice(),
                &req,
                r#"RBAC: clusterrole.rbac.authorization.k8s.io "x" not found"#
            ),
            r#"pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "default": RBAC: clusterrole.rbac.authorization.k8s.io "x" not found"#
        );
    }

    #[test]
    fn escalation_message_matches_upstream() {
        let missing = [rule(&["get"], &[""], &["pods"])];
        assert_eq!(
            escalation_message(
                "clusterroles.rbac.authorization.k8s.io",
                "foo",
                &alice(),
                &missing
            ),
            "clusterroles.rbac.authorization.k8s.io \"foo\" is forbidden: user \"alice\" (groups=[\"dev\" \"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"pods\"], Verbs:[\"get\"]}"
        );
    }

    #[test]
    fn escalation_message_compacts_verbs_and_sorts_lines() {
        let missing = [
            rule(&["get"], &[""], &["secrets"]),
            url_rule(&["get"], &["/metrics"]),
            rule(&["list"], &[""], &["secrets"]),
            named(rule(&["get"], &[""], &["configmaps"]), &["cfg"]),
        ];
        let message =
            escalation_message("roles.rbac.authorization.k8s.io", "r", &alice(), &missing);
        let lines: Vec<&str> = message.lines().skip(1).collect();
        assert_eq!(
            lines,
            [
                r#"{APIGroups:[""], Resources:["configmaps"], ResourceNames:["cfg"], Verbs:["get"]}"#,
                r#"{APIGroups:[""], Resources:["secrets"], Verbs:["get" "list"]}"#,
                r#"{NonResourceURLs:["/metrics"], Verbs:["get"]}"#,
            ]
        );
    }

    #[test]
    fn escalation_message_appends_resolution_errors() {
        let missing = [rule(&["get"], &[""], &["pods"])];
        let errors = [RuleError::ClusterRoleNotFound {
            name: "gone".into(),
        }];
        let message = escalation_message_with_errors(
            "roles.rbac.authorization.k8s.io",
            "r",
            &UserInfo::new("bob", Vec::<String>::new()),
            &missing,
            &errors,
        );
        assert!(
            message.contains(r#"user "bob" (groups=[]) is attempting"#),
            "{message}"
        );
        assert!(message.ends_with(
            r#"{APIGroups:[""], Resources:["pods"], Verbs:["get"]}; resolution errors: [clusterrole.rbac.authorization.k8s.io "gone" not found]"#
        ), "{message}");
    }

    #[test]
    fn go_quote_escapes_like_go() {
        assert_eq!(go_quote(r#"a"b\c"#), r#""a\"b\\c""#);
        assert_eq!(go_quote("tab\there\n"), r#""tab\there\n""#);
        assert_eq!(go_quote("\u{1}"), r#""\x01""#);
        assert_eq!(go_quote("héllo"), "\"héllo\"");
    }
}
