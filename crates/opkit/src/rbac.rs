//! RBAC derivation: the rules an operator needs, from what its controllers declare.
//!
//! Operators run under a ClusterRole; writing it by hand drifts from the code. Every builder
//! call that implies API access records a rule: the primary kind and `watches` kinds need
//! `get/list/watch`, `owns` adds `create/update/patch/delete`, a finalizer adds `update/patch`
//! on the primary and `update` on `<plural>/finalizers`, status writes `get/update/patch` on
//! `<plural>/status`; the manager adds `events.k8s.io` events (`create/patch`) and, with
//! leader election, `coordination.k8s.io` leases (`get/create/update`). Rules are merged per
//! API group and resource, verbs sorted, so the output is stable.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::rbac::v1::{ClusterRole, PolicyRule};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::error::Result;

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
