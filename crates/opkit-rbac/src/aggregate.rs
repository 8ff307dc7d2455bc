//! Aggregated ClusterRoles.
//!
//! A ClusterRole with an `aggregationRule` owns no rules of its own: kube-controller-manager's
//! clusterrole-aggregation controller keeps writing into it the union of the rules of every
//! ClusterRole its `clusterRoleSelectors` match (itself excluded), selector by selector, matched
//! roles by name, duplicates dropped. Since `admin` selects `edit`, which selects `view`, the
//! controller needs several rounds to converge; here each aggregated role is resolved at once by
//! following matched aggregated roles recursively (each at most once, so cycles end), which gives
//! the converged result in the controller's order. [`crate::Policy::new`] uses the same
//! resolution, so authorization is right before any controller has written rules back.

use std::collections::{BTreeMap, HashSet};

use k8s_openapi::api::rbac::v1::{ClusterRole, PolicyRule};

use opkit_apimachinery::LabelSelector;

use crate::error::AggregationError;
use crate::rules::items;

/// For each ClusterRole with an `aggregationRule`, its resolved rules: what the aggregation
/// controller would write into `.rules`. Roles whose selectors are invalid are left out (the
/// controller leaves them unchanged).
pub fn aggregate(cluster_roles: &[ClusterRole]) -> Vec<(String, Vec<PolicyRule>)> {
    let resolution = resolve(cluster_roles);
    resolution
        .resolved
        .into_iter()
        .map(|(index, rules)| (role_name(&cluster_roles[index]).to_owned(), rules))
        .collect()
}

/// The outcome of resolving all aggregated roles of a set of ClusterRoles.
pub(crate) struct Resolution {
    /// `(index into the input, resolved rules)` for each aggregated role with valid selectors,
    /// in input order.
    pub(crate) resolved: Vec<(usize, Vec<PolicyRule>)>,
    /// Aggregated roles that could not be resolved.
    pub(crate) errors: Vec<AggregationError>,
}

fn role_name(role: &ClusterRole) -> &str {
    role.metadata.name.as_deref().unwrap_or("")
}

/// Resolves every aggregated role in `cluster_roles`.
pub(crate) fn resolve(cluster_roles: &[ClusterRole]) -> Resolution {
    let empty = BTreeMap::new();
    let mut by_name: Vec<usize> = (0..cluster_roles.len()).collect();
    by_name.sort_by_key(|&i| role_name(&cluster_roles[i]));

    // For each valid aggregated role, the roles its selectors match, in the controller's order.
    let mut matched: Vec<Option<Vec<usize>>> = vec![None; cluster_roles.len()];
    let mut errors = Vec::new();
    for (index, role) in cluster_roles.iter().enumerate() {
        let Some(rule) = &role.aggregation_rule else {
            continue;
        };
        let mut targets = Vec::new();
        let mut valid = true;
        for sel in rule.cluster_role_selectors.iter().flatten() {
            // Upstream's `LabelSelectorAsSelector`: `{}` matches every role.
            let sel = match LabelSelector::try_from(sel) {
                Ok(sel) => sel,
                Err(e) => {
                    errors.push(AggregationError::InvalidSelector {
                        cluster_role: role_name(role).to_owned(),
                        message: e.to_string(),
                    });
                    valid = false;
                    break;
                }
            };
            for &candidate in &by_name {
                let other = &cluster_roles[candidate];
                if role_name(other) == role_name(role) {
                    continue;
                }
                let labels = other.metadata.labels.as_ref().unwrap_or(&empty);
                if sel.matches_set(labels) {
                    targets.push(candidate);
                }
            }
        }
        if valid {
            matched[index] = Some(targets);
        }
    }

    let resolved = (0..cluster_roles.len())
        .filter(|&i| matched[i].is_some())
        .map(|i| {
            let mut collector = Collector::default();
            let mut visited = HashSet::from([i]);
            collect(cluster_roles, &matched, i, &mut visited, &mut collector);
            (i, collector.rules)
        })
        .collect();
    Resolution { resolved, errors }
}

/// Appends the rules of every role `index` aggregates, recursing into aggregated roles.
fn collect(
    roles: &[ClusterRole],
    matched: &[Option<Vec<usize>>],
    index: usize,
    visited: &mut HashSet<usize>,
    out: &mut Collector,
) {
    for &target in matched[index].iter().flatten() {
        if matched[target].is_some() {
            if visited.insert(target) {
                collect(roles, matched, target, visited, out);
            }
        } else {
            for rule in roles[target].rules.iter().flatten() {
                out.push(rule);
            }
        }
    }
}

/// Rules in order of first appearance, without duplicates (an absent list equals an empty one,
/// as in upstream's semantic equality).
#[derive(Default)]
struct Collector {
    rules: Vec<PolicyRule>,
    seen: HashSet<[Vec<String>; 5]>,
}

impl Collector {
    fn push(&mut self, rule: &PolicyRule) {
        let key = [
            rule.verbs.clone(),
            items(&rule.api_groups).to_vec(),
            items(&rule.resources).to_vec(),
            items(&rule.resource_names).to_vec(),
            items(&rule.non_resource_urls).to_vec(),
        ];
        if self.seen.insert(key) {
            self.rules.push(rule.clone());
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::rules::tests::rule;
    use k8s_openapi::api::rbac::v1::AggregationRule;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
        LabelSelector, LabelSelectorRequirement, ObjectMeta,
    };

    pub(crate) fn role(name: &str, labels: &[(&str, &str)], rules: Vec<PolicyRule>) -> ClusterRole {
        ClusterRole {
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                labels: Some(
                    labels
                        .iter()
                        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                        .collect(),
                ),
                ..ObjectMeta::default()
            },
            rules: Some(rules),
            aggregation_rule: None,
        }
    }

    fn select_label(key: &str) -> LabelSelector {
        LabelSelector {
            match_labels: Some(BTreeMap::from([(key.to_owned(), "true".to_owned())])),
            match_expressions: None,
        }
    }

    pub(crate) fn aggregated(
        name: &str,
        labels: &[(&str, &str)],
        selectors: Vec<LabelSelector>,
    ) -> ClusterRole {
        let mut r = role(name, labels, vec![]);
        r.rules = None;
        r.aggregation_rule = Some(AggregationRule {
            cluster_role_selectors: Some(selectors),
        });
        r
    }

    #[test]
    fn aggregation_unions_matching_roles_by_name_without_duplicates() {
        let get_pods = rule(&["get"], &[""], &["pods"]);
        let roles = vec![
            aggregated("monitoring", &[], vec![select_label("agg")]),
            role(
                "z-role",
                &[("agg", "true")],
                vec![get_pods.clone(), rule(&["list"], &[""], &["nodes"])],
            ),
            role("a-role", &[("agg", "true")], vec![get_pods.clone()]),
            role(
                "unrelated",
                &[("agg", "false")],
                vec![rule(&["*"], &["*"], &["*"])],
            ),
        ];
        assert_eq!(
            aggregate(&roles),
            vec![(
                "monitoring".to_owned(),
                vec![get_pods, rule(&["list"], &[""], &["nodes"])]
            )]
        );
    }

    #[test]
    fn aggregation_resolves_nested_aggregated_roles_in_controller_order() {
        let view_rule = rule(&["get"], &[""], &["pods"]);
        let edit_rule = rule(&["create"], &[""], &["pods"]);
        let admin_rule = rule(
            &["create"],
            &["rbac.authorization.k8s.io"],
            &["rolebindings"],
        );
        let roles = vec![
            aggregated("admin", &[], vec![select_label("to-admin")]),
            aggregated(
                "edit",
                &[("to-admin", "true")],
                vec![select_label("to-edit")],
            ),
            aggregated(
                "view",
                &[("to-edit", "true")],
                vec![select_label("to-view")],
            ),
            role(
                "agg-admin",
                &[("to-admin", "true")],
                vec![admin_rule.clone()],
            ),
            role("agg-edit", &[("to-edit", "true")], vec![edit_rule.clone()]),
            role("agg-view", &[("to-view", "true")], vec![view_rule.clone()]),
        ];
        let resolved = aggregate(&roles);
        assert_eq!(resolved[0].0, "admin");
        // "agg-admin" sorts before "edit"; "agg-edit" before "view".
        assert_eq!(
            resolved[0].1,
            vec![admin_rule, edit_rule.clone(), view_rule.clone()]
        );
        assert_eq!(
            resolved[1],
            ("edit".to_owned(), vec![edit_rule, view_rule.clone()])
        );
        assert_eq!(resolved[2], ("view".to_owned(), vec![view_rule]));
    }

    #[test]
    fn aggregation_with_match_expressions() {
        let roles = vec![
            aggregated(
                "ops",
                &[],
                vec![LabelSelector {
                    match_labels: None,
                    match_expressions: Some(vec![
                        LabelSelectorRequirement {
                            key: "team".into(),
                            operator: "In".into(),
                            values: Some(vec!["ops".into(), "sre".into()]),
                        },
                        LabelSelectorRequirement {
                            key: "deprecated".into(),
                            operator: "DoesNotExist".into(),
                            values: None,
                        },
                    ]),
                }],
            ),
            role(
                "a",
                &[("team", "sre")],
                vec![rule(&["get"], &[""], &["nodes"])],
            ),
            role(
                "b",
                &[("team", "ops"), ("deprecated", "yes")],
                vec![rule(&["*"], &["*"], &["*"])],
            ),
            role(
                "c",
                &[("team", "dev")],
                vec![rule(&["*"], &[""], &["secrets"])],
            ),
        ];
        assert_eq!(
            aggregate(&roles),
            vec![("ops".to_owned(), vec![rule(&["get"], &[""], &["nodes"])])]
        );
    }

    #[test]
    fn aggregation_cycles_terminate_with_the_union() {
        let a_rule = rule(&["get"], &[""], &["a"]);
        let b_rule = rule(&["get"], &[""], &["b"]);
        let roles = vec![
            aggregated("x", &[("to-y", "true")], vec![select_label("to-x")]),
            aggregated("y", &[("to-x", "true")], vec![select_label("to-y")]),
            role("leaf-a", &[("to-x", "true")], vec![a_rule.clone()]),
            role("leaf-b", &[("to-y", "true")], vec![b_rule.clone()]),
        ];
        let resolved = aggregate(&roles);
        assert_eq!(
            resolved[0],
            ("x".to_owned(), vec![a_rule.clone(), b_rule.clone()])
        );
        assert_eq!(resolved[1], ("y".to_owned(), vec![b_rule, a_rule]));
    }

    #[test]
    fn aggregation_never_selects_itself_and_invalid_selectors_are_reported() {
        let mut me = aggregated("self", &[("agg", "true")], vec![select_label("agg")]);
        me.rules = Some(vec![rule(&["*"], &["*"], &["*"])]);
        let broken = aggregated(
            "broken",
            &[],
            vec![LabelSelector {
                match_labels: None,
                match_expressions: Some(vec![LabelSelectorRequirement {
                    key: "k".into(),
                    operator: "In".into(),
                    values: None,
                }]),
            }],
        );
        let roles = vec![me, broken];
        let resolution = resolve(&roles);
        assert_eq!(resolution.resolved, vec![(0, vec![])]);
        assert_eq!(resolution.errors.len(), 1);
        assert!(resolution.errors[0].to_string().contains("\"broken\""));
    }
}
