//! What a single PolicyRule allows, and when one set of rules covers another.
//!
//! Two different comparisons live here, because upstream has two:
//! - [`rule_allows`] matches a rule against a concrete request (the authorizer's
//!   `RuleAllows`): `*` wildcards, `resource/subresource`, `*/subresource`, resourceNames that
//!   only match named requests, nonResourceURL prefixes ending in `*`.
//! - [`covers`] compares rules with rules (escalation prevention): the requested rules are
//!   broken into atomic rules, each of which must be covered by one owner rule (`ruleCovers`).
//!
//! The matching functions take the request apart without building `resource/subresource`
//! strings, so authorizing allocates nothing.

use k8s_openapi::api::rbac::v1::PolicyRule;

use crate::{Request, non_empty};

/// The wildcard for verbs, API groups, resources and nonResourceURLs.
const ALL: &str = "*";

/// The items of an optional list (`None` is empty).
pub(crate) fn items(list: &Option<Vec<String>>) -> &[String] {
    list.as_deref().unwrap_or(&[])
}

/// Whether `rule` allows `request` (upstream `RuleAllows`).
pub fn rule_allows(rule: &PolicyRule, request: &Request<'_>) -> bool {
    match *request {
        Request::Resource {
            verb,
            group,
            resource,
            subresource,
            name,
            ..
        } => {
            verb_matches(rule, verb)
                && group_matches(rule, group)
                && resource_matches(rule, resource, non_empty(subresource).unwrap_or(""))
                && resource_name_matches(rule, non_empty(name).unwrap_or(""))
        }
        Request::NonResource { verb, path } => {
            verb_matches(rule, verb) && non_resource_url_matches(rule, path)
        }
    }
}

fn verb_matches(rule: &PolicyRule, verb: &str) -> bool {
    rule.verbs.iter().any(|v| v == ALL || v == verb)
}

fn group_matches(rule: &PolicyRule, group: &str) -> bool {
    items(&rule.api_groups)
        .iter()
        .any(|g| g == ALL || g == group)
}

/// `resource` plus `subresource` (empty for none) against the rule's resources: `*`, the exact
/// `resource` or `resource/subresource`, or `*/subresource`. A plain `pods` does not match
/// `pods/log`.
fn resource_matches(rule: &PolicyRule, resource: &str, subresource: &str) -> bool {
    items(&rule.resources).iter().any(|r| {
        if r == ALL {
            return true;
        }
        if subresource.is_empty() {
            return r == resource;
        }
        let combined = r
            .strip_prefix(resource)
            .and_then(|rest| rest.strip_prefix('/'))
            == Some(subresource);
        combined || r.strip_prefix("*/") == Some(subresource)
    })
}

/// An empty `resourceNames` matches every request; a non-empty one only requests for one of the
/// names (so never `list` or `create`, which carry no name).
fn resource_name_matches(rule: &PolicyRule, name: &str) -> bool {
    let names = items(&rule.resource_names);
    names.is_empty() || names.iter().any(|n| n == name)
}

fn non_resource_url_matches(rule: &PolicyRule, path: &str) -> bool {
    items(&rule.non_resource_urls)
        .iter()
        .any(|url| url == ALL || url == path || url_prefix_covers(url, path))
}

/// `foo/*` covers every path starting with `foo/` (upstream trims all trailing `*`).
fn url_prefix_covers(owner: &str, path: &str) -> bool {
    owner.ends_with('*') && path.starts_with(owner.trim_end_matches('*'))
}

/// Splits a rule into atomic rules: one API group × one resource × one verb (× one resource
/// name when it has any), and one nonResourceURL × one verb (upstream `BreakdownRule`).
pub fn breakdown_rule(rule: &PolicyRule) -> Vec<PolicyRule> {
    let one = |s: &String| Some(vec![s.clone()]);
    let mut atoms = Vec::new();
    for group in items(&rule.api_groups) {
        for resource in items(&rule.resources) {
            for verb in &rule.verbs {
                let names = items(&rule.resource_names);
                if names.is_empty() {
                    atoms.push(PolicyRule {
                        api_groups: one(group),
                        resources: one(resource),
                        verbs: vec![verb.clone()],
                        ..PolicyRule::default()
                    });
                }
                for name in names {
                    atoms.push(PolicyRule {
                        api_groups: one(group),
                        resources: one(resource),
                        verbs: vec![verb.clone()],
                        resource_names: one(name),
                        ..PolicyRule::default()
                    });
                }
            }
        }
    }
    for url in items(&rule.non_resource_urls) {
        for verb in &rule.verbs {
            atoms.push(PolicyRule {
                non_resource_urls: one(url),
                verbs: vec![verb.clone()],
                ..PolicyRule::default()
            });
        }
    }
    atoms
}

/// Whether the `owner` rules cover everything the `servant` rules grant; returns the atomic
/// servant rules no owner rule covers (upstream `Covers`).
pub fn covers(owner: &[PolicyRule], servant: &[PolicyRule]) -> (bool, Vec<PolicyRule>) {
    let uncovered: Vec<PolicyRule> = servant
        .iter()
        .flat_map(breakdown_rule)
        .filter(|atom| !owner.iter().any(|o| rule_covers(o, atom)))
        .collect();
    (uncovered.is_empty(), uncovered)
}

fn contains(set: &[String], item: &str) -> bool {
    set.iter().any(|s| s == item)
}

fn contains_all(set: &[String], wanted: &[String]) -> bool {
    wanted.iter().all(|w| contains(set, w))
}

/// Owner resources cover servant resources: `*`, exact, or `*/sub` for `x/sub`.
fn resources_cover(owner: &[String], servant: &[String]) -> bool {
    contains(owner, ALL)
        || servant.iter().all(|r| {
            contains(owner, r)
                || r.split_once('/')
                    .is_some_and(|(_, sub)| owner.iter().any(|o| o.strip_prefix("*/") == Some(sub)))
        })
}

fn urls_cover(owner: &[String], servant: &[String]) -> bool {
    servant.iter().all(|path| {
        owner
            .iter()
            .any(|o| o == path || url_prefix_covers(o, path))
    })
}

/// Whether one owner rule covers one atomic rule (upstream `ruleCovers`). Note that an owner `*`
/// nonResourceURL is a prefix of everything, and that a servant without resourceNames needs an
/// owner without resourceNames.
fn rule_covers(owner: &PolicyRule, atom: &PolicyRule) -> bool {
    let verbs = contains(&owner.verbs, ALL) || contains_all(&owner.verbs, &atom.verbs);
    let owner_groups = items(&owner.api_groups);
    let groups = contains(owner_groups, ALL) || contains_all(owner_groups, items(&atom.api_groups));
    let resources = resources_cover(items(&owner.resources), items(&atom.resources));
    let urls = urls_cover(
        items(&owner.non_resource_urls),
        items(&atom.non_resource_urls),
    );
    let owner_names = items(&owner.resource_names);
    let atom_names = items(&atom.resource_names);
    let names =
        owner_names.is_empty() || (!atom_names.is_empty() && contains_all(owner_names, atom_names));
    verbs && groups && resources && urls && names
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A resource rule, for tests.
    pub(crate) fn rule(verbs: &[&str], groups: &[&str], resources: &[&str]) -> PolicyRule {
        let strings = |xs: &[&str]| xs.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        PolicyRule {
            verbs: strings(verbs),
            api_groups: Some(strings(groups)),
            resources: Some(strings(resources)),
            ..PolicyRule::default()
        }
    }

    /// A resource rule limited to names, for tests.
    pub(crate) fn named(mut rule: PolicyRule, names: &[&str]) -> PolicyRule {
        rule.resource_names = Some(names.iter().map(|s| (*s).to_owned()).collect());
        rule
    }

    /// A non-resource rule, for tests.
    pub(crate) fn url_rule(verbs: &[&str], urls: &[&str]) -> PolicyRule {
        PolicyRule {
            verbs: verbs.iter().map(|s| (*s).to_owned()).collect(),
            non_resource_urls: Some(urls.iter().map(|s| (*s).to_owned()).collect()),
            ..PolicyRule::default()
        }
    }

    fn req<'a>(
        verb: &'a str,
        group: &'a str,
        resource: &'a str,
        sub: Option<&'a str>,
        name: Option<&'a str>,
    ) -> Request<'a> {
        Request::Resource {
            verb,
            group,
            version: "v1",
            resource,
            subresource: sub,
            namespace: Some("default"),
            name,
        }
    }

    #[test]
    fn verb_wildcard_matches_any_verb_and_exact_verb_only_itself() {
        let any = rule(&["*"], &[""], &["pods"]);
        let get = rule(&["get"], &[""], &["pods"]);
        assert!(rule_allows(&any, &req("escalate", "", "pods", None, None)));
        assert!(rule_allows(&get, &req("get", "", "pods", None, None)));
        assert!(!rule_allows(&get, &req("list", "", "pods", None, None)));
    }

    #[test]
    fn api_group_must_match_or_be_wildcard() {
        let core = rule(&["get"], &[""], &["deployments"]);
        let any = rule(&["get"], &["*"], &["deployments"]);
        assert!(!rule_allows(
            &core,
            &req("get", "apps", "deployments", None, None)
        ));
        assert!(rule_allows(
            &any,
            &req("get", "apps", "deployments", None, None)
        ));
        assert!(rule_allows(
            &core,
            &req("get", "", "deployments", None, None)
        ));
    }

    #[test]
    fn plain_resource_does_not_match_its_subresources() {
        let pods = rule(&["get"], &[""], &["pods"]);
        assert!(rule_allows(&pods, &req("get", "", "pods", None, None)));
        assert!(!rule_allows(
            &pods,
            &req("get", "", "pods", Some("log"), None)
        ));
        // An empty subresource is no subresource.
        assert!(rule_allows(&pods, &req("get", "", "pods", Some(""), None)));
    }

    #[test]
    fn subresource_rules_match_only_that_subresource() {
        let log = rule(&["get"], &[""], &["pods/log"]);
        assert!(rule_allows(
            &log,
            &req("get", "", "pods", Some("log"), None)
        ));
        assert!(!rule_allows(
            &log,
            &req("get", "", "pods", Some("exec"), None)
        ));
        assert!(!rule_allows(&log, &req("get", "", "pods", None, None)));
        // `pods/log` is not a prefix match on `pod`.
        assert!(!rule_allows(
            &log,
            &req("get", "", "pod", Some("s/log"), None)
        ));
    }

    #[test]
    fn star_slash_subresource_matches_that_subresource_of_any_resource() {
        let status = rule(&["update"], &["*"], &["*/status"]);
        assert!(rule_allows(
            &status,
            &req("update", "apps", "deployments", Some("status"), None)
        ));
        assert!(rule_allows(
            &status,
            &req("update", "", "pods", Some("status"), None)
        ));
        assert!(!rule_allows(
            &status,
            &req("update", "", "pods", None, None)
        ));
        assert!(!rule_allows(
            &status,
            &req("update", "", "pods", Some("scale"), None)
        ));
    }

    #[test]
    fn resource_wildcard_matches_resources_and_subresources() {
        let all = rule(&["get"], &["*"], &["*"]);
        assert!(rule_allows(
            &all,
            &req("get", "x.io", "foos", Some("status"), None)
        ));
    }

    #[test]
    fn resource_names_only_match_named_requests() {
        let one = named(
            rule(&["get", "list", "update"], &[""], &["configmaps"]),
            &["app"],
        );
        assert!(rule_allows(
            &one,
            &req("get", "", "configmaps", None, Some("app"))
        ));
        assert!(!rule_allows(
            &one,
            &req("get", "", "configmaps", None, Some("other"))
        ));
        assert!(!rule_allows(
            &one,
            &req("list", "", "configmaps", None, None)
        ));
        assert!(!rule_allows(
            &one,
            &req("create", "", "configmaps", None, None)
        ));
    }

    #[test]
    fn non_resource_urls_match_exact_prefix_and_wildcard() {
        let rules = url_rule(&["get"], &["/healthz", "/apis/*"]);
        let get = |path| Request::NonResource { verb: "get", path };
        assert!(rule_allows(&rules, &get("/healthz")));
        assert!(!rule_allows(&rules, &get("/healthz/etcd")));
        assert!(rule_allows(&rules, &get("/apis/apps/v1")));
        assert!(!rule_allows(&rules, &get("/apis")));
        assert!(rule_allows(&url_rule(&["*"], &["*"]), &get("/anything")));
        let post = Request::NonResource {
            verb: "post",
            path: "/healthz",
        };
        assert!(!rule_allows(&rules, &post));
        // A resource rule never matches a non-resource request and vice versa.
        assert!(!rule_allows(
            &rule(&["*"], &["*"], &["*"]),
            &get("/healthz")
        ));
        assert!(!rule_allows(&rules, &req("get", "", "pods", None, None)));
    }

    #[test]
    fn breakdown_produces_one_atom_per_combination() {
        let r = named(rule(&["get", "update"], &["", "apps"], &["a"]), &["x", "y"]);
        assert_eq!(breakdown_rule(&r).len(), 2 * 2 * 2);
        let urls = url_rule(&["get", "post"], &["/a", "/b"]);
        assert_eq!(breakdown_rule(&urls).len(), 4);
    }

    #[test]
    fn covers_accepts_owner_wildcards() {
        let owner = [rule(&["*"], &["*"], &["*"])];
        let servant = [named(
            rule(&["get", "delete"], &["apps"], &["deployments/scale"]),
            &["web"],
        )];
        assert_eq!(covers(&owner, &servant), (true, vec![]));
    }

    #[test]
    fn covers_reports_each_uncovered_atom() {
        let owner = [rule(&["get", "list"], &[""], &["pods"])];
        let servant = [rule(&["get", "delete"], &[""], &["pods", "secrets"])];
        let (ok, missing) = covers(&owner, &servant);
        assert!(!ok);
        assert_eq!(
            missing,
            vec![
                rule(&["delete"], &[""], &["pods"]),
                rule(&["get"], &[""], &["secrets"]),
                rule(&["delete"], &[""], &["secrets"]),
            ]
        );
    }

    #[test]
    fn covers_star_subresource_owner_covers_any_resources_subresource() {
        let owner = [rule(&["get"], &[""], &["*/status"])];
        assert!(covers(&owner, &[rule(&["get"], &[""], &["pods/status"])]).0);
        assert!(!covers(&owner, &[rule(&["get"], &[""], &["pods"])]).0);
        assert!(!covers(&owner, &[rule(&["get"], &[""], &["pods/log"])]).0);
        // A plain resource owner does not cover its subresources.
        let pods = [rule(&["get"], &[""], &["pods"])];
        assert!(!covers(&pods, &[rule(&["get"], &[""], &["pods/log"])]).0);
    }

    #[test]
    fn covers_resource_names_need_owner_names_or_none() {
        let owner_all = [rule(&["get"], &[""], &["secrets"])];
        let owner_named = [named(rule(&["get"], &[""], &["secrets"]), &["a", "b"])];
        let servant_a = [named(rule(&["get"], &[""], &["secrets"]), &["a"])];
        let servant_c = [named(rule(&["get"], &[""], &["secrets"]), &["c"])];
        let servant_all = [rule(&["get"], &[""], &["secrets"])];
        assert!(covers(&owner_all, &servant_a).0);
        assert!(covers(&owner_named, &servant_a).0);
        assert!(!covers(&owner_named, &servant_c).0);
        assert!(!covers(&owner_named, &servant_all).0);
    }

    #[test]
    fn covers_non_resource_url_prefixes() {
        let owner = [url_rule(&["get"], &["/logs/*"])];
        assert!(covers(&owner, &[url_rule(&["get"], &["/logs/kubelet"])]).0);
        assert!(!covers(&owner, &[url_rule(&["get"], &["/metrics"])]).0);
        assert!(!covers(&owner, &[url_rule(&["post"], &["/logs/x"])]).0);
        assert!(covers(&[url_rule(&["*"], &["*"])], &[url_rule(&["post"], &["/x"])]).0);
        // Resource owners do not cover non-resource atoms.
        assert!(
            !covers(
                &[rule(&["*"], &["*"], &["*"])],
                &[url_rule(&["get"], &["/x"])]
            )
            .0
        );
    }
}
