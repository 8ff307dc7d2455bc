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

/// The documents of a multi-document YAML, as (kind, namespace, rules).
fn documents(yaml: &str) -> Vec<(String, Option<String>, Vec<PolicyRule>)> {
    use serde::Deserialize as _;
    serde_yaml::Deserializer::from_str(yaml)
        .map(|doc| {
            let value = serde_yaml::Value::deserialize(doc).unwrap();
            let kind = value["kind"].as_str().unwrap_or_default().to_string();
            let namespace = value["metadata"]["namespace"].as_str().map(String::from);
            assert_eq!(value["metadata"]["name"].as_str(), Some("widgets-operator"));
            let rules = serde_yaml::from_value(value["rules"].clone()).unwrap();
            (kind, namespace, rules)
        })
        .collect()
}

fn resources(rules: &[PolicyRule]) -> Vec<String> {
    rules
        .iter()
        .map(|r| {
            format!(
                "{}/{}",
                r.api_groups.clone().unwrap_or_default().join(","),
                r.resources.clone().unwrap_or_default().join(",")
            )
        })
        .collect()
}

fn with_controllers(builder: opkit::ManagerBuilder) -> Manager {
    let mut mgr = builder.build();
    mgr.add(
        Controller::<Widget>::new("widgets")
            .owns::<Deployment>()
            .watches::<ConfigMap>(|_| Vec::new())
            .finalizer("test.opkit.dev/cleanup")
            .rbac_rule(opkit::rbac::rule("", "secrets", &["get"]))
            .build(noop, ()),
    );
    mgr
}

#[test]
fn rbac_yaml_of_a_cluster_wide_manager_is_its_cluster_role() {
    let mgr = manager(true);
    assert_eq!(
        mgr.rbac_yaml("widgets-operator").unwrap(),
        mgr.cluster_role_yaml("widgets-operator").unwrap()
    );
}

#[test]
fn a_namespace_scoped_manager_needs_a_role_per_namespace_and_the_lease_role_in_its_namespace() {
    let mgr = with_controllers(
        Manager::builder()
            .namespaces(["team-b", "team-a"])
            .leader_election(LeaderElection::new("widgets", "operators")),
    );
    let docs = documents(&mgr.rbac_yaml("widgets-operator").unwrap());
    let places: Vec<(&str, Option<&str>)> = docs
        .iter()
        .map(|(k, ns, _)| (k.as_str(), ns.as_deref()))
        .collect();
    assert_eq!(
        places,
        [
            ("Role", Some("operators")),
            ("Role", Some("team-a")),
            ("Role", Some("team-b")),
        ],
        "no ClusterRole: every kind is namespaced"
    );
    assert_eq!(resources(&docs[0].2), ["coordination.k8s.io/leases"]);
    assert_eq!(
        verbs(&docs[0].2, "coordination.k8s.io", "leases"),
        ["create", "get", "update"]
    );
    let expected = [
        "/configmaps",
        "/secrets",
        "apps/deployments",
        "events.k8s.io/events",
        "test.opkit.dev/widgets",
        "test.opkit.dev/widgets/finalizers",
        "test.opkit.dev/widgets/status",
    ];
    for (_, _, rules) in &docs[1..] {
        assert_eq!(resources(rules), expected);
        assert_eq!(
            verbs(rules, "test.opkit.dev", "widgets"),
            ["get", "list", "patch", "update", "watch"]
        );
    }
}

#[test]
fn cluster_scoped_kinds_and_kinds_watched_everywhere_stay_in_a_cluster_role() {
    use opkit::k8s_openapi::api::core::v1::Namespace;
    let mut mgr = with_controllers(
        Manager::builder()
            .namespaces(["team-a"])
            .cache_for::<ConfigMap>(opkit::CacheOptions::new().all_namespaces()),
    );
    mgr.add(
        Controller::<Widget>::new("namespaces")
            .watches::<Namespace>(|_| Vec::new())
            .without_status()
            .rbac_rule(opkit::rbac::rule("", "nodes", &["get"]))
            .build(noop, ()),
    );
    let docs = documents(&mgr.rbac_yaml("widgets-operator").unwrap());
    assert_eq!(docs.len(), 2, "{docs:#?}");
    let (kind, ns, rules) = &docs[0];
    assert_eq!((kind.as_str(), ns.as_deref()), ("Role", Some("team-a")));
    assert_eq!(
        resources(rules),
        [
            "/secrets",
            "apps/deployments",
            "test.opkit.dev/widgets",
            "test.opkit.dev/widgets/finalizers",
            "test.opkit.dev/widgets/status",
        ]
    );
    let (kind, ns, rules) = &docs[1];
    assert_eq!((kind.as_str(), ns.as_deref()), ("ClusterRole", None));
    // ConfigMaps are watched in every namespace, so events about them may be anywhere.
    assert_eq!(
        resources(rules),
        [
            "/configmaps",
            "/namespaces",
            "/nodes",
            "events.k8s.io/events"
        ]
    );
}
