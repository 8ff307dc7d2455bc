//! `Policy`: which bindings apply to whom, where, and what that grants.

mod common;

use common::*;
use k8s_openapi::api::rbac::v1::AggregationRule;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
use opkit_rbac::{Decision, Policy, RuleError, UserInfo, forbidden_message};
use std::collections::BTreeMap;

fn alice() -> UserInfo {
    UserInfo::new("alice", ["system:authenticated"])
}

fn allowed(policy: &Policy, user: &UserInfo, request: opkit_rbac::Request<'_>) -> bool {
    policy.authorize(user, &request).is_allowed()
}

#[test]
fn nothing_is_allowed_without_bindings() {
    let policy = Policy::new(vec![], vec![], vec![], vec![]);
    assert_eq!(
        policy.authorize(&alice(), &resource("get", "", "pods", Some("default"))),
        Decision::Deny {
            reason: String::new()
        }
    );
}

#[test]
fn system_masters_are_allowed_everything_without_any_binding() {
    let policy = Policy::new(vec![], vec![], vec![], vec![]);
    let root = UserInfo::new("root", ["system:masters"]);
    assert!(allowed(
        &policy,
        &root,
        resource("delete", "apps", "deployments", Some("x"))
    ));
    assert!(allowed(&policy, &root, path("post", "/anything")));
    assert_eq!(
        policy.check_escalation(&root, None, &[rule(&["*"], &["*"], &["*"])]),
        Ok(())
    );
}

#[test]
fn cluster_role_binding_grants_in_every_namespace_and_cluster_scope() {
    let policy = Policy::new(
        vec![cluster_role(
            "reader",
            vec![rule(&["get", "list"], &[""], &["pods", "nodes"])],
        )],
        vec![],
        vec![cluster_binding(
            "alice-reads",
            "reader",
            vec![user("alice")],
        )],
        vec![],
    );
    assert!(allowed(
        &policy,
        &alice(),
        resource("list", "", "pods", Some("a"))
    ));
    assert!(allowed(
        &policy,
        &alice(),
        resource("list", "", "pods", Some("b"))
    ));
    assert!(allowed(
        &policy,
        &alice(),
        resource("list", "", "pods", None)
    ));
    assert!(allowed(
        &policy,
        &alice(),
        resource("get", "", "nodes", None)
    ));
    assert!(!allowed(
        &policy,
        &alice(),
        resource("delete", "", "pods", Some("a"))
    ));
    let bob = UserInfo::new("bob", ["system:authenticated"]);
    assert!(!allowed(
        &policy,
        &bob,
        resource("list", "", "pods", Some("a"))
    ));
}

#[test]
fn group_subjects_match_by_membership() {
    let policy = Policy::new(
        vec![cluster_role(
            "reader",
            vec![rule(&["get"], &[""], &["pods"])],
        )],
        vec![],
        vec![cluster_binding("devs", "reader", vec![group("dev")])],
        vec![],
    );
    let dev = UserInfo::new("carol", ["dev", "system:authenticated"]);
    assert!(allowed(
        &policy,
        &dev,
        resource("get", "", "pods", Some("x"))
    ));
    assert!(!allowed(
        &policy,
        &alice(),
        resource("get", "", "pods", Some("x"))
    ));
    // A user *named* like the group is not in it.
    let named_dev = UserInfo::new("dev", Vec::<String>::new());
    assert!(!allowed(
        &policy,
        &named_dev,
        resource("get", "", "pods", Some("x"))
    ));
}

#[test]
fn role_binding_to_role_grants_only_in_its_namespace() {
    let policy = Policy::new(
        vec![],
        vec![
            role(
                "team-a",
                "pod-reader",
                vec![rule(&["get"], &[""], &["pods"])],
            ),
            role("team-b", "pod-reader", vec![rule(&["*"], &["*"], &["*"])]),
        ],
        vec![],
        vec![binding(
            "team-a",
            "alice",
            "Role",
            "pod-reader",
            vec![user("alice")],
        )],
    );
    assert!(allowed(
        &policy,
        &alice(),
        resource("get", "", "pods", Some("team-a"))
    ));
    assert!(!allowed(
        &policy,
        &alice(),
        resource("get", "", "pods", Some("team-b"))
    ));
    assert!(!allowed(
        &policy,
        &alice(),
        resource("get", "", "pods", None)
    ));
    assert!(!allowed(
        &policy,
        &alice(),
        resource("delete", "", "pods", Some("team-a"))
    ));
}

#[test]
fn role_binding_to_cluster_role_is_scoped_to_the_binding_namespace() {
    let policy = Policy::new(
        vec![cluster_role(
            "everything",
            vec![rule(&["*"], &["*"], &["*"]), url_rule(&["*"], &["*"])],
        )],
        vec![],
        vec![],
        vec![binding(
            "sandbox",
            "alice-admin",
            "ClusterRole",
            "everything",
            vec![user("alice")],
        )],
    );
    assert!(allowed(
        &policy,
        &alice(),
        resource("delete", "", "secrets", Some("sandbox"))
    ));
    assert!(!allowed(
        &policy,
        &alice(),
        resource("get", "", "secrets", Some("prod"))
    ));
    // Cluster-scoped resources and non-resource URLs need a ClusterRoleBinding.
    assert!(!allowed(
        &policy,
        &alice(),
        resource("get", "", "nodes", None)
    ));
    assert!(!allowed(&policy, &alice(), path("get", "/healthz")));
}

#[test]
fn service_account_subjects_match_the_service_account_user_name() {
    let policy = Policy::new(
        vec![cluster_role(
            "reader",
            vec![rule(&["get"], &[""], &["configmaps"])],
        )],
        vec![],
        vec![
            cluster_binding("sa", "reader", vec![service_account(Some("ci"), "builder")]),
            cluster_binding("sa-no-ns", "reader", vec![service_account(None, "anyone")]),
        ],
        vec![],
    );
    let builder = UserInfo::service_account("ci", "builder");
    assert!(allowed(
        &policy,
        &builder,
        resource("get", "", "configmaps", Some("x"))
    ));
    let other_ns = UserInfo::service_account("prod", "builder");
    assert!(!allowed(
        &policy,
        &other_ns,
        resource("get", "", "configmaps", Some("x"))
    ));
    // A ServiceAccount subject without a namespace never applies in a ClusterRoleBinding.
    for ns in ["default", "ci", ""] {
        let anyone = UserInfo::service_account(ns, "anyone");
        assert!(!allowed(
            &policy,
            &anyone,
            resource("get", "", "configmaps", Some("x"))
        ));
    }
    // A user that merely has the name's last segment is not the service account.
    let fake = UserInfo::new("builder", ["system:authenticated"]);
    assert!(!allowed(
        &policy,
        &fake,
        resource("get", "", "configmaps", Some("x"))
    ));
}

#[test]
fn service_account_subject_without_namespace_in_role_binding_means_the_binding_namespace() {
    // Upstream's appliesToUser defaults the namespace to the RoleBinding's.
    let policy = Policy::new(
        vec![],
        vec![role(
            "ci",
            "cm",
            vec![rule(&["get"], &[""], &["configmaps"])],
        )],
        vec![],
        vec![binding(
            "ci",
            "sa",
            "Role",
            "cm",
            vec![service_account(None, "builder")],
        )],
    );
    let builder = UserInfo::service_account("ci", "builder");
    assert!(allowed(
        &policy,
        &builder,
        resource("get", "", "configmaps", Some("ci"))
    ));
    let elsewhere = UserInfo::service_account("other", "builder");
    assert!(!allowed(
        &policy,
        &elsewhere,
        resource("get", "", "configmaps", Some("ci"))
    ));
}

#[test]
fn resource_names_allow_named_gets_but_not_list_or_create() {
    let policy = Policy::new(
        vec![],
        vec![role(
            "app",
            "one-secret",
            vec![named(
                rule(&["get", "list", "create", "update"], &[""], &["secrets"]),
                &["db"],
            )],
        )],
        vec![],
        vec![binding(
            "app",
            "b",
            "Role",
            "one-secret",
            vec![user("alice")],
        )],
    );
    assert!(allowed(
        &policy,
        &alice(),
        named_resource("get", "", "secrets", Some("app"), "db")
    ));
    assert!(allowed(
        &policy,
        &alice(),
        named_resource("update", "", "secrets", Some("app"), "db")
    ));
    assert!(!allowed(
        &policy,
        &alice(),
        named_resource("get", "", "secrets", Some("app"), "tls")
    ));
    assert!(!allowed(
        &policy,
        &alice(),
        resource("list", "", "secrets", Some("app"))
    ));
    assert!(!allowed(
        &policy,
        &alice(),
        resource("create", "", "secrets", Some("app"))
    ));
}

#[test]
fn subresources_need_their_own_rule() {
    let policy = Policy::new(
        vec![cluster_role(
            "logs",
            vec![
                rule(&["get"], &[""], &["pods"]),
                rule(&["get"], &[""], &["pods/log"]),
            ],
        )],
        vec![],
        vec![],
        vec![binding(
            "web",
            "b",
            "ClusterRole",
            "logs",
            vec![user("alice")],
        )],
    );
    assert!(allowed(
        &policy,
        &alice(),
        subresource("get", "", "pods", "log", Some("web"), "p")
    ));
    assert!(!allowed(
        &policy,
        &alice(),
        subresource("get", "", "pods", "exec", Some("web"), "p")
    ));
    assert!(!allowed(
        &policy,
        &alice(),
        subresource("get", "", "pods", "log", Some("db"), "p")
    ));
}

#[test]
fn non_resource_urls_are_granted_through_cluster_role_bindings() {
    let policy = Policy::new(
        vec![cluster_role(
            "probe",
            vec![url_rule(&["get"], &["/healthz", "/metrics/*"])],
        )],
        vec![],
        vec![cluster_binding(
            "probe",
            "probe",
            vec![group("system:authenticated")],
        )],
        vec![],
    );
    assert!(allowed(&policy, &alice(), path("get", "/healthz")));
    assert!(allowed(&policy, &alice(), path("get", "/metrics/slis")));
    assert!(!allowed(&policy, &alice(), path("get", "/metrics")));
    assert!(!allowed(&policy, &alice(), path("post", "/healthz")));
}

#[test]
fn missing_roles_are_reported_in_the_deny_reason_and_rules_review() {
    let policy = Policy::new(
        vec![cluster_role("ok", vec![rule(&["get"], &[""], &["pods"])])],
        vec![],
        vec![
            cluster_binding("gone", "no-such-role", vec![user("alice")]),
            cluster_binding("fine", "ok", vec![user("alice")]),
            cluster_binding("not-mine", "also-gone", vec![user("bob")]),
        ],
        vec![binding(
            "ns",
            "r",
            "Role",
            "missing-role",
            vec![group("system:authenticated")],
        )],
    );
    // Allowed by the intact binding despite the broken one.
    assert!(allowed(
        &policy,
        &alice(),
        resource("get", "", "pods", Some("ns"))
    ));
    let denied = policy.authorize(&alice(), &resource("delete", "", "pods", Some("ns")));
    let expected_reason = r#"RBAC: [clusterrole.rbac.authorization.k8s.io "no-such-role" not found, role.rbac.authorization.k8s.io "missing-role" not found]"#;
    assert_eq!(
        denied,
        Decision::Deny {
            reason: expected_reason.to_owned()
        }
    );
    let request = resource("delete", "", "pods", Some("ns"));
    assert_eq!(
        forbidden_message(&alice(), &request, expected_reason),
        format!(
            r#"pods is forbidden: User "alice" cannot delete resource "pods" in API group "" in the namespace "ns": {expected_reason}"#
        )
    );

    let review = policy.rules_for(&alice(), Some("ns"));
    assert_eq!(review.resource_rules.len(), 1);
    assert_eq!(
        review.evaluation_errors,
        vec![
            RuleError::ClusterRoleNotFound {
                name: "no-such-role".into()
            },
            RuleError::RoleNotFound {
                namespace: "ns".into(),
                name: "missing-role".into()
            },
        ]
    );
    assert!(!review.incomplete);
    let status = review.into_status();
    assert_eq!(
        status.evaluation_error.as_deref(),
        Some(
            r#"[clusterrole.rbac.authorization.k8s.io "no-such-role" not found, role.rbac.authorization.k8s.io "missing-role" not found]"#
        )
    );
}

#[test]
fn unsupported_role_ref_kinds_and_roles_from_cluster_bindings_are_errors() {
    let mut weird = cluster_binding("weird", "x", vec![user("alice")]);
    weird.role_ref.kind = "Policy".into();
    let mut to_role = cluster_binding("to-role", "x", vec![user("alice")]);
    to_role.role_ref.kind = "Role".into();
    let policy = Policy::new(
        vec![],
        vec![role("", "x", vec![rule(&["*"], &["*"], &["*"])])],
        vec![weird, to_role],
        vec![],
    );
    assert!(!allowed(
        &policy,
        &alice(),
        resource("get", "", "pods", None)
    ));
    let review = policy.rules_for(&alice(), None);
    assert_eq!(
        review.evaluation_error().as_deref(),
        Some(
            r#"[unsupported role reference kind: "Policy", role.rbac.authorization.k8s.io "x" not found]"#
        )
    );
}

#[test]
fn rules_for_lists_cluster_rules_then_namespace_rules_split_by_kind() {
    let policy = Policy::new(
        vec![
            cluster_role("probe", vec![url_rule(&["get"], &["/healthz"])]),
            cluster_role("reader", vec![rule(&["get"], &[""], &["pods"])]),
        ],
        vec![role(
            "ns",
            "writer",
            vec![rule(&["create"], &[""], &["pods"])],
        )],
        vec![
            cluster_binding("probe", "probe", vec![user("alice")]),
            cluster_binding(
                "reader",
                "reader",
                vec![user("alice"), group("system:authenticated")],
            ),
        ],
        vec![
            binding("ns", "writer", "Role", "writer", vec![user("alice")]),
            binding("other", "writer", "Role", "writer", vec![user("alice")]),
        ],
    );
    let review = policy.rules_for(&alice(), Some("ns"));
    assert_eq!(review.non_resource_rules.len(), 1);
    assert_eq!(
        review.non_resource_rules[0].non_resource_urls,
        Some(strings(&["/healthz"]))
    );
    // The reader binding matches alice twice (user and group) but is listed once.
    let verbs: Vec<&str> = review
        .resource_rules
        .iter()
        .map(|r| r.verbs[0].as_str())
        .collect();
    assert_eq!(verbs, ["get", "create"]);
    assert!(review.evaluation_errors.is_empty());
    // Without a namespace only cluster bindings count.
    assert_eq!(policy.rules_for(&alice(), None).resource_rules.len(), 1);
}

#[test]
fn rules_for_system_masters_starts_with_wildcards() {
    let policy = Policy::new(vec![], vec![], vec![], vec![]);
    let root = UserInfo::new("root", ["system:masters"]);
    let review = policy.rules_for(&root, Some("default"));
    assert_eq!(review.resource_rules[0].verbs, ["*"]);
    assert_eq!(review.resource_rules[0].resources, Some(strings(&["*"])));
    assert_eq!(
        review.non_resource_rules[0].non_resource_urls,
        Some(strings(&["*"]))
    );
}

#[test]
fn aggregated_cluster_roles_are_resolved_before_binding() {
    let mut monitoring = cluster_role("monitoring", vec![]);
    monitoring.rules = None;
    monitoring.aggregation_rule = Some(AggregationRule {
        cluster_role_selectors: Some(vec![LabelSelector {
            match_labels: None,
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: "example.com/aggregate-to-monitoring".into(),
                operator: "Exists".into(),
                values: None,
            }]),
        }]),
    });
    let mut metrics = cluster_role(
        "metrics",
        vec![rule(&["get", "list"], &["metrics.k8s.io"], &["pods"])],
    );
    metrics.metadata.labels = Some(BTreeMap::from([(
        "example.com/aggregate-to-monitoring".to_owned(),
        "".to_owned(),
    )]));
    let policy = Policy::new(
        vec![monitoring, metrics],
        vec![],
        vec![cluster_binding("m", "monitoring", vec![user("alice")])],
        vec![],
    );
    assert!(allowed(
        &policy,
        &alice(),
        resource("list", "metrics.k8s.io", "pods", Some("x"))
    ));
    assert!(!allowed(
        &policy,
        &alice(),
        resource("delete", "metrics.k8s.io", "pods", Some("x"))
    ));
    assert_eq!(
        policy.cluster_role_rules("monitoring").map(<[_]>::len),
        Some(1)
    );
    assert!(policy.aggregation_errors().is_empty());
}

#[test]
fn escalation_is_refused_for_rules_not_held() {
    let policy = Policy::new(
        vec![cluster_role(
            "reader",
            vec![rule(&["get", "list"], &[""], &["pods"])],
        )],
        vec![role(
            "ns",
            "secrets",
            vec![rule(&["get"], &[""], &["secrets"])],
        )],
        vec![cluster_binding("r", "reader", vec![user("alice")])],
        vec![binding("ns", "s", "Role", "secrets", vec![user("alice")])],
    );
    let user = UserInfo::new("alice", ["dev", "system:authenticated"]);
    // Held through the ClusterRoleBinding: fine anywhere.
    assert_eq!(
        policy.check_escalation(&user, None, &[rule(&["get"], &[""], &["pods"])]),
        Ok(())
    );
    // Held through the RoleBinding: fine in its namespace only.
    let secrets = [rule(&["get"], &[""], &["secrets"])];
    assert_eq!(policy.check_escalation(&user, Some("ns"), &secrets), Ok(()));
    let refused = policy
        .check_escalation(
            &user,
            None,
            &[rule(&["get", "delete"], &[""], &["pods", "secrets"])],
        )
        .expect_err("must be refused");
    assert_eq!(
        refused.missing,
        vec![
            rule(&["delete"], &[""], &["pods"]),
            rule(&["get"], &[""], &["secrets"]),
            rule(&["delete"], &[""], &["secrets"]),
        ]
    );
    assert_eq!(
        refused.message("clusterroles.rbac.authorization.k8s.io", "foo", &user),
        "clusterroles.rbac.authorization.k8s.io \"foo\" is forbidden: user \"alice\" (groups=[\"dev\" \"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"pods\"], Verbs:[\"delete\"]}\n{APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\" \"delete\"]}"
    );
}

#[test]
fn escalation_owner_wildcards_subresources_and_resource_names() {
    let policy = Policy::new(
        vec![
            cluster_role("all-apps", vec![rule(&["*"], &["apps"], &["*"])]),
            cluster_role("status", vec![rule(&["update"], &["*"], &["*/status"])]),
            cluster_role(
                "one-cm",
                vec![named(rule(&["get"], &[""], &["configmaps"]), &["cfg"])],
            ),
        ],
        vec![],
        vec![
            cluster_binding("a", "all-apps", vec![user("alice")]),
            cluster_binding("b", "status", vec![user("alice")]),
            cluster_binding("c", "one-cm", vec![user("alice")]),
        ],
        vec![],
    );
    let alice = alice();
    let ok = |rules: &[k8s_openapi::api::rbac::v1::PolicyRule]| {
        policy.check_escalation(&alice, Some("x"), rules).is_ok()
    };
    assert!(ok(&[rule(
        &["delete", "patch"],
        &["apps"],
        &["deployments", "deployments/scale"]
    )]));
    assert!(!ok(&[rule(&["get"], &["batch"], &["jobs"])]));
    assert!(ok(&[rule(&["update"], &[""], &["pods/status"])]));
    assert!(!ok(&[rule(&["update"], &[""], &["pods"])]));
    assert!(ok(&[named(
        rule(&["get"], &[""], &["configmaps"]),
        &["cfg"]
    )]));
    assert!(!ok(&[named(
        rule(&["get"], &[""], &["configmaps"]),
        &["other"]
    )]));
    assert!(!ok(&[rule(&["get"], &[""], &["configmaps"])]));
    assert!(!ok(&[url_rule(&["get"], &["/healthz"])]));
}

#[test]
fn escalation_lists_resolution_errors_of_the_user() {
    let policy = Policy::new(
        vec![],
        vec![],
        vec![cluster_binding("broken", "gone", vec![user("alice")])],
        vec![],
    );
    let refused = policy
        .check_escalation(&alice(), None, &[rule(&["get"], &[""], &["pods"])])
        .expect_err("nothing is held");
    assert!(
        refused
            .message("roles.rbac.authorization.k8s.io", "r", &alice())
            .ends_with(
                r#"; resolution errors: [clusterrole.rbac.authorization.k8s.io "gone" not found]"#
            )
    );
}

#[test]
fn ten_thousand_bindings_resolve_only_the_users_own() {
    const N: usize = 10_000;
    let cluster_roles = vec![
        cluster_role("reader", vec![rule(&["get", "list"], &[""], &["pods"])]),
        cluster_role("probe", vec![url_rule(&["get"], &["/healthz"])]),
    ];
    let roles: Vec<_> = (0..N)
        .map(|i| {
            role(
                &format!("ns-{}", i % 100),
                &format!("role-{i}"),
                vec![rule(&["create"], &[""], &[&format!("res-{i}")])],
            )
        })
        .collect();
    let role_bindings: Vec<_> = (0..N)
        .map(|i| {
            binding(
                &format!("ns-{}", i % 100),
                &format!("rb-{i}"),
                "Role",
                &format!("role-{i}"),
                vec![user(&format!("user-{i}"))],
            )
        })
        .collect();
    let cluster_bindings: Vec<_> = (0..N)
        .map(|i| {
            cluster_binding(
                &format!("crb-{i}"),
                if i % 2 == 0 { "reader" } else { "probe" },
                vec![
                    user(&format!("user-{i}")),
                    group(&format!("team-{}", i % 50)),
                ],
            )
        })
        .collect();
    let policy = Policy::new(cluster_roles, roles, cluster_bindings, role_bindings);
    assert_eq!(policy.binding_count(), 2 * N);

    let u = UserInfo::new("user-4242", ["system:authenticated"]);
    assert!(allowed(
        &policy,
        &u,
        resource("list", "", "pods", Some("ns-7"))
    ));
    assert!(allowed(
        &policy,
        &u,
        resource("create", "", "res-4242", Some("ns-42"))
    ));
    assert!(!allowed(
        &policy,
        &u,
        resource("create", "", "res-4242", Some("ns-43"))
    ));
    assert!(!allowed(
        &policy,
        &u,
        resource("create", "", "res-4243", Some("ns-43"))
    ));
    assert!(!allowed(&policy, &u, path("get", "/healthz")));
    let odd = UserInfo::new("user-4243", Vec::<String>::new());
    assert!(allowed(&policy, &odd, path("get", "/healthz")));

    // rules_for sees exactly the user's own bindings: one cluster rule, one namespace rule.
    let review = policy.rules_for(&u, Some("ns-42"));
    assert_eq!(review.resource_rules.len(), 2);
    // Through a group bound 200 times: the distinct bindings, each once.
    let member = UserInfo::new("someone", ["team-3"]);
    let review = policy.rules_for(&member, None);
    assert_eq!(review.non_resource_rules.len(), N / 50);
    assert!(review.resource_rules.is_empty());

    let strangers = UserInfo::new("nobody", ["system:authenticated"]);
    for i in 0..1_000 {
        let ns = format!("ns-{}", i % 100);
        assert!(!allowed(
            &policy,
            &strangers,
            resource("list", "", "pods", Some(&ns))
        ));
    }
}

#[test]
fn role_ref_rules_resolve_like_bindings_do() {
    use k8s_openapi::api::rbac::v1::RoleRef;
    let policy = Policy::new(
        vec![cluster_role("c", vec![rule(&["get"], &[""], &["pods"])])],
        vec![role("ns", "r", vec![rule(&["list"], &[""], &["pods"])])],
        vec![],
        vec![],
    );
    let role_ref = |kind: &str, name: &str| RoleRef {
        api_group: "rbac.authorization.k8s.io".into(),
        kind: kind.into(),
        name: name.into(),
    };
    assert_eq!(
        policy.role_ref_rules(Some("ns"), &role_ref("Role", "r")),
        Ok(&[rule(&["list"], &[""], &["pods"])][..])
    );
    assert_eq!(
        policy.role_ref_rules(None, &role_ref("ClusterRole", "c")),
        Ok(&[rule(&["get"], &[""], &["pods"])][..])
    );
    assert_eq!(
        policy.role_ref_rules(Some("other"), &role_ref("Role", "r")),
        Err(RuleError::RoleNotFound {
            namespace: "other".into(),
            name: "r".into()
        })
    );
    assert!(policy.role_ref_rules(None, &role_ref("Role", "r")).is_err());
}

#[test]
fn allow_reason_names_the_first_allowing_binding_like_upstream() {
    let policy = Policy::new(
        vec![cluster_role(
            "reader",
            vec![rule(&["get"], &[""], &["pods"])],
        )],
        vec![role(
            "ci",
            "cm",
            vec![rule(&["get"], &[""], &["configmaps"])],
        )],
        vec![
            cluster_binding("unrelated", "reader", vec![user("bob")]),
            cluster_binding("readers", "reader", vec![user("zed"), group("dev")]),
        ],
        vec![binding(
            "ci",
            "builder-cm",
            "Role",
            "cm",
            vec![service_account(None, "builder")],
        )],
    );
    let dev = UserInfo::new("carol", ["dev"]);
    assert_eq!(
        policy
            .allow_reason(&dev, &resource("get", "", "pods", Some("x")))
            .as_deref(),
        Some(
            r#"RBAC: allowed by ClusterRoleBinding "readers" of ClusterRole "reader" to Group "dev""#
        )
    );
    let builder = UserInfo::service_account("ci", "builder");
    assert_eq!(
        policy
            .allow_reason(&builder, &resource("get", "", "configmaps", Some("ci")))
            .as_deref(),
        Some(
            r#"RBAC: allowed by RoleBinding "builder-cm/ci" of Role "cm" to ServiceAccount "builder/ci""#
        )
    );
    assert_eq!(
        policy.allow_reason(&dev, &resource("delete", "", "pods", Some("x"))),
        None
    );
    let root = UserInfo::new("root", ["system:masters"]);
    assert_eq!(
        policy.allow_reason(&root, &path("get", "/x")).as_deref(),
        Some("")
    );
}
