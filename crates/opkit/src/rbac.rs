//! RBAC derivation: the rules an operator needs, from what its controllers declare.
//!
//! Operators run under a ClusterRole; writing it by hand drifts from the code. Every builder
//! call that implies API access records a rule: the primary kind and `watches` kinds need
//! `get/list/watch`, `owns` adds `create/update/patch/delete`, a finalizer adds `update/patch`
//! on the primary and `update` on `<plural>/finalizers`, status writes `get/update/patch` on
//! `<plural>/status`; the manager adds `events.k8s.io` events (`create/patch`) and, with
//! leader election, `coordination.k8s.io` leases (`get/create/update`). Rules are merged per
//! API group and resource, verbs sorted, so the output is stable.
//!
//! An operator whose caches are scoped to namespaces ([`crate::cache`]) needs no ClusterRole
//! for them: [`Manager::rbac_yaml`](crate::Manager::rbac_yaml) places each rule where it is
//! used. Rules on a watched kind (and its subresources) go into a Role in each namespace that
//! kind is watched in; events into a Role in every namespace watched (and `default`, where
//! events about cluster-scoped objects are written, if a cluster-scoped kind is watched); the
//! Lease into a Role in its own namespace (it need not be one of the watched ones); rules on
//! resources no cache knows into the manager's default namespaces, unless the resource is a
//! well-known cluster-scoped one. A rule stays cluster-wide — in a ClusterRole — when its
//! kind is cluster-scoped, watched in every namespace, or is a non-resource URL.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::rbac::v1::{ClusterRole, PolicyRule, Role};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::cache::CacheConfig;
use crate::error::Result;
use crate::informer::Watched;

/// A rule on one resource of one API group (`""` = core).
pub fn rule(group: &str, resource: &str, verbs: &[&str]) -> PolicyRule {
    PolicyRule {
        api_groups: Some(vec![group.to_string()]),
        resources: Some(vec![resource.to_string()]),
        verbs: verbs.iter().map(|v| v.to_string()).collect(),
        ..PolicyRule::default()
    }
}

/// A set of rules merged per (group, resource); non-resource URL rules and rules naming
/// resource names are kept as given.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Rules {
    merged: BTreeMap<(String, String), BTreeSet<String>>,
    other: Vec<PolicyRule>,
}

impl Rules {
    /// Adds a rule.
    pub fn add(&mut self, rule: PolicyRule) {
        let simple = rule.resource_names.as_ref().is_none_or(|n| n.is_empty())
            && rule.non_resource_urls.as_ref().is_none_or(|n| n.is_empty());
        if !simple {
            if !self.other.contains(&rule) {
                self.other.push(rule);
            }
            return;
        }
        let groups = rule.api_groups.clone().unwrap_or_default();
        let resources = rule.resources.clone().unwrap_or_default();
        for g in &groups {
            for r in &resources {
                self.merged
                    .entry((g.clone(), r.clone()))
                    .or_default()
                    .extend(rule.verbs.iter().cloned());
            }
        }
    }

    /// Adds every rule.
    pub fn extend(&mut self, rules: impl IntoIterator<Item = PolicyRule>) {
        for r in rules {
            self.add(r);
        }
    }

    /// The merged rules: one per (group, resource), then the others in insertion order.
    pub fn to_vec(&self) -> Vec<PolicyRule> {
        let mut out: Vec<PolicyRule> = self
            .merged
            .iter()
            .map(|((g, r), verbs)| PolicyRule {
                api_groups: Some(vec![g.clone()]),
                resources: Some(vec![r.clone()]),
                verbs: verbs.iter().cloned().collect(),
                ..PolicyRule::default()
            })
            .collect();
        out.extend(self.other.iter().cloned());
        out
    }
}

/// Merges `rules` per group and resource.
pub fn merge(rules: impl IntoIterator<Item = PolicyRule>) -> Vec<PolicyRule> {
    let mut r = Rules::default();
    r.extend(rules);
    r.to_vec()
}

/// A `rbac.authorization.k8s.io/v1` ClusterRole named `name` granting `rules`.
pub fn cluster_role(name: &str, rules: Vec<PolicyRule>) -> ClusterRole {
    ClusterRole {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            ..ObjectMeta::default()
        },
        rules: Some(rules),
        ..ClusterRole::default()
    }
}

/// The ClusterRole as YAML (with `apiVersion` and `kind`), ready for `kubectl apply -f -`.
pub fn cluster_role_yaml(name: &str, rules: Vec<PolicyRule>) -> Result<String> {
    // k8s-openapi writes `apiVersion` and `kind` itself.
    Ok(serde_yaml::to_string(&cluster_role(name, rules))?)
}

/// The leader-election rule: the manager reads, creates and renews its Lease.
pub(crate) fn lease_rule() -> PolicyRule {
    rule(
        "coordination.k8s.io",
        "leases",
        &["get", "create", "update"],
    )
}

/// A `rbac.authorization.k8s.io/v1` Role named `name` in `namespace` granting `rules`.
pub fn role(name: &str, namespace: &str, rules: Vec<PolicyRule>) -> Role {
    Role {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            namespace: Some(namespace.to_string()),
            ..ObjectMeta::default()
        },
        rules: Some(rules),
    }
}

/// Built-in resources that are cluster-scoped, by (group, resource): where a rule on a
/// resource no cache watches belongs.
const CLUSTER_SCOPED: &[(&str, &str)] = &[
    ("", "componentstatuses"),
    ("", "namespaces"),
    ("", "nodes"),
    ("", "persistentvolumes"),
    (
        "admissionregistration.k8s.io",
        "mutatingwebhookconfigurations",
    ),
    (
        "admissionregistration.k8s.io",
        "validatingadmissionpolicies",
    ),
    (
        "admissionregistration.k8s.io",
        "validatingadmissionpolicybindings",
    ),
    (
        "admissionregistration.k8s.io",
        "validatingwebhookconfigurations",
    ),
    ("apiextensions.k8s.io", "customresourcedefinitions"),
    ("apiregistration.k8s.io", "apiservices"),
    ("authentication.k8s.io", "selfsubjectreviews"),
    ("authentication.k8s.io", "tokenreviews"),
    ("authorization.k8s.io", "selfsubjectaccessreviews"),
    ("authorization.k8s.io", "selfsubjectrulesreviews"),
    ("authorization.k8s.io", "subjectaccessreviews"),
    ("certificates.k8s.io", "certificatesigningrequests"),
    ("flowcontrol.apiserver.k8s.io", "flowschemas"),
    (
        "flowcontrol.apiserver.k8s.io",
        "prioritylevelconfigurations",
    ),
    ("networking.k8s.io", "ingressclasses"),
    ("node.k8s.io", "runtimeclasses"),
    ("rbac.authorization.k8s.io", "clusterrolebindings"),
    ("rbac.authorization.k8s.io", "clusterroles"),
    ("scheduling.k8s.io", "priorityclasses"),
    ("storage.k8s.io", "csidrivers"),
    ("storage.k8s.io", "csinodes"),
    ("storage.k8s.io", "storageclasses"),
    ("storage.k8s.io", "volumeattachments"),
];

/// Where a rule is granted.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Placement {
    Cluster,
    Namespaces(BTreeSet<String>),
}

impl Placement {
    fn namespaces(namespaces: &[String]) -> Placement {
        if namespaces.is_empty() {
            Placement::Cluster
        } else {
            Placement::Namespaces(namespaces.iter().cloned().collect())
        }
    }

    fn union(self, other: Placement) -> Placement {
        match (self, other) {
            (Placement::Namespaces(mut a), Placement::Namespaces(b)) => {
                a.extend(b);
                Placement::Namespaces(a)
            }
            _ => Placement::Cluster,
        }
    }
}

/// Rules split between one ClusterRole and a Role per namespace.
#[derive(Debug, Default)]
pub(crate) struct ScopedRoles {
    cluster: Rules,
    namespaced: BTreeMap<String, Rules>,
}

impl ScopedRoles {
    fn add(&mut self, rule: PolicyRule, placement: &Placement) {
        match placement {
            Placement::Cluster => self.cluster.add(rule),
            Placement::Namespaces(namespaces) => {
                for ns in namespaces {
                    self.namespaced
                        .entry(ns.clone())
                        .or_default()
                        .add(rule.clone());
                }
            }
        }
    }

    /// The Roles (by namespace) and then the ClusterRole, if any rule is cluster-wide, as
    /// multi-document YAML.
    pub(crate) fn yaml(&self, name: &str) -> Result<String> {
        let mut docs = Vec::new();
        for (ns, rules) in &self.namespaced {
            docs.push(serde_yaml::to_string(&role(name, ns, rules.to_vec()))?);
        }
        let cluster = self.cluster.to_vec();
        if !cluster.is_empty() {
            docs.push(serde_yaml::to_string(&cluster_role(name, cluster))?);
        }
        Ok(docs.join("---\n"))
    }
}

/// Places `rules` (the controllers' and the events') and, with leader election, the Lease
/// rule in `lease_namespace`, for caches scoped as `caches` says; see the [module docs](self).
pub(crate) fn scoped_roles(
    rules: Rules,
    lease_namespace: Option<&str>,
    watched: &[Watched],
    caches: &CacheConfig,
) -> ScopedRoles {
    let watched_in = |w: &Watched| {
        if w.namespaced {
            Placement::namespaces(&caches.resolve(&w.group, &w.kind, true).namespaces)
        } else {
            Placement::Cluster
        }
    };
    let events = watched
        .iter()
        .map(|w| {
            if w.namespaced {
                watched_in(w)
            } else {
                Placement::Namespaces(BTreeSet::from(["default".to_string()]))
            }
        })
        .fold(
            Placement::namespaces(caches.default_namespaces()),
            Placement::union,
        );
    let place = |group: &str, resource: &str| -> Placement {
        let base = resource.split('/').next().unwrap_or(resource);
        if group == "events.k8s.io" && base == "events" {
            return events.clone();
        }
        let kinds = watched
            .iter()
            .filter(|w| (w.group == group || group == "*") && (w.plural == base || base == "*"));
        let placement = kinds.map(watched_in).reduce(Placement::union);
        match placement {
            _ if group == "*" || base == "*" => Placement::Cluster,
            Some(p) => p,
            None if CLUSTER_SCOPED.contains(&(group, base)) => Placement::Cluster,
            None => Placement::namespaces(caches.default_namespaces()),
        }
    };
    let mut out = ScopedRoles::default();
    for rule in rules.to_vec() {
        if rule
            .non_resource_urls
            .as_ref()
            .is_some_and(|u| !u.is_empty())
        {
            out.add(rule, &Placement::Cluster);
            continue;
        }
        for group in rule.api_groups.clone().unwrap_or_default() {
            for resource in rule.resources.clone().unwrap_or_default() {
                let one = PolicyRule {
                    api_groups: Some(vec![group.clone()]),
                    resources: Some(vec![resource.clone()]),
                    ..rule.clone()
                };
                out.add(one, &place(&group, &resource));
            }
        }
    }
    if let Some(ns) = lease_namespace {
        out.add(
            lease_rule(),
            &Placement::Namespaces(BTreeSet::from([ns.to_string()])),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_merge_verbs_per_group_and_resource() {
        let merged = merge([
            rule("apps", "deployments", &["get", "list", "watch"]),
            rule("apps", "deployments", &["create", "get"]),
            rule("", "configmaps", &["get"]),
        ]);
        assert_eq!(merged.len(), 2);
        assert_eq!(
            merged[0].resources.as_deref(),
            Some(&["configmaps".to_string()][..])
        );
        assert_eq!(merged[1].verbs, vec!["create", "get", "list", "watch"]);
    }
}
