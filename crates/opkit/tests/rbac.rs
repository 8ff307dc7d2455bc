//! RBAC derivation from controller declarations.

use std::sync::Arc;

use opkit::k8s_openapi::api::apps::v1::Deployment;
use opkit::k8s_openapi::api::core::v1::{ConfigMap, Secret};
use opkit::k8s_openapi::api::rbac::v1::PolicyRule;
use opkit::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(group = "test.opkit.dev", version = "v1", kind = "Widget", namespaced)]
struct WidgetSpec {
    size: i32,
}

#[derive(Debug, thiserror::Error)]
#[error("never")]
struct Never;

async fn noop(_: Arc<Widget>, _: Arc<Context<()>>) -> Result<Action, Never> {
    Ok(Action::await_change())
}

fn verbs(rules: &[PolicyRule], group: &str, resource: &str) -> Vec<String> {
    rules
        .iter()
        .find(|r| {
            r.api_groups.as_deref() == Some(&[group.to_string()][..])
                && r.resources.as_deref() == Some(&[resource.to_string()][..])
        })
        .map(|r| r.verbs.clone())
        .unwrap_or_default()
}

fn manager(leader_election: bool) -> Manager {
    let mut builder = Manager::builder();
    if leader_election {
        builder = builder.leader_election(LeaderElection::new("widgets", "default"));
    }
    let mut mgr = builder.build();
    mgr.add(
        Controller::<Widget>::new("widgets")
            .owns::<Deployment>()
            .watches::<ConfigMap>(|_| Vec::new())
            .finalizer("test.opkit.dev/cleanup")
            .rbac_rule(opkit::rbac::rule("", "secrets", &["get"]))
            .build(noop, ()),
    );
    mgr.add(
        Controller::<Widget>::new("second")
            .owns::<ConfigMap>()
            .without_status()
            .build(noop, ()),
    );
    mgr
}

#[test]
fn rules_cover_watches_owns_finalizers_status_events_and_leases_merged_per_resource() {
    let rules = manager(true).rbac_rules();
    let rw = [
        "create", "delete", "get", "list", "patch", "update", "watch",
    ];
    assert_eq!(
        verbs(&rules, "test.opkit.dev", "widgets"),
        ["get", "list", "patch", "update", "watch"]
    );
    assert_eq!(
        verbs(&rules, "test.opkit.dev", "widgets/status"),
        ["get", "patch", "update"]
    );
    assert_eq!(
        verbs(&rules, "test.opkit.dev", "widgets/finalizers"),
        ["update"]
    );
    assert_eq!(verbs(&rules, "apps", "deployments"), rw);
    // watched by one controller, owned by the other: merged into one rule.
    assert_eq!(verbs(&rules, "", "configmaps"), rw);
    assert_eq!(verbs(&rules, "", "secrets"), ["get"]);
    assert_eq!(
        verbs(&rules, "events.k8s.io", "events"),
        ["create", "patch"]
    );
    assert_eq!(
        verbs(&rules, "coordination.k8s.io", "leases"),
        ["create", "get", "update"]
    );
    assert_eq!(rules.len(), 8, "one rule per group/resource: {rules:#?}");
    let _ = Secret::default();
}

#[test]
fn no_lease_rule_without_leader_election() {
    let rules = manager(false).rbac_rules();
    assert!(verbs(&rules, "coordination.k8s.io", "leases").is_empty());
}

#[test]
fn cluster_role_yaml_is_a_cluster_role_with_the_rules() {
    let yaml = manager(true).cluster_role_yaml("widgets-operator").unwrap();
    let role: opkit::k8s_openapi::api::rbac::v1::ClusterRole = serde_yaml::from_str(&yaml).unwrap();
    assert!(
        yaml.starts_with("apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\n"),
        "{yaml}"
    );
    assert_eq!(role.metadata.name.as_deref(), Some("widgets-operator"));
    assert_eq!(role.rules.unwrap().len(), 8);
}

#[test]
fn owning_needs_owner_finalizers_update_and_without_status_drops_the_status_rule() {
    let rules = Controller::<Widget>::new("x")
        .owns::<ConfigMap>()
        .without_status()
        .rbac_rules();
    assert_eq!(
        verbs(&rules, "test.opkit.dev", "widgets/finalizers"),
        ["update"]
    );
    assert!(verbs(&rules, "test.opkit.dev", "widgets/status").is_empty());
    assert_eq!(
        verbs(&rules, "test.opkit.dev", "widgets"),
        ["get", "list", "watch"]
    );
}
