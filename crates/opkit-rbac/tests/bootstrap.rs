//! The default policy behaves like a real cluster's.

mod common;

use common::*;
use opkit_rbac::{
    AUTOUPDATE_ANNOTATION, BOOTSTRAPPING_LABEL, Policy, Request, UserInfo, aggregate,
    bootstrap_policy,
};

/// The bootstrap policy plus RoleBindings of `admin`, `edit` and `view` in namespace `app`.
fn cluster() -> Policy {
    let defaults = bootstrap_policy();
    let bindings = ["admin", "edit", "view"]
        .iter()
        .map(|role| binding("app", role, "ClusterRole", role, vec![user(role)]))
        .collect();
    Policy::new(
        defaults.cluster_roles,
        vec![],
        defaults.cluster_role_bindings,
        bindings,
    )
}

fn as_user(name: &str) -> UserInfo {
    UserInfo::new(name, ["system:authenticated"])
}

fn can(policy: &Policy, who: &str, request: Request<'_>) -> bool {
    policy.authorize(&as_user(who), &request).is_allowed()
}

#[test]
fn every_default_object_is_labelled_and_auto_updated() {
    let defaults = bootstrap_policy();
    let metas = defaults
        .cluster_roles
        .iter()
        .map(|r| &r.metadata)
        .chain(defaults.cluster_role_bindings.iter().map(|b| &b.metadata));
    for meta in metas {
        let labels = meta.labels.as_ref().expect("labels");
        assert_eq!(
            labels.get(BOOTSTRAPPING_LABEL).map(String::as_str),
            Some("rbac-defaults")
        );
        let annotations = meta.annotations.as_ref().expect("annotations");
        assert_eq!(
            annotations.get(AUTOUPDATE_ANNOTATION).map(String::as_str),
            Some("true")
        );
    }
    let names: Vec<&str> = defaults
        .cluster_roles
        .iter()
        .filter_map(|r| r.metadata.name.as_deref())
        .collect();
    for expected in [
        "cluster-admin",
        "admin",
        "edit",
        "view",
        "system:aggregate-to-admin",
        "system:aggregate-to-edit",
        "system:aggregate-to-view",
        "system:discovery",
        "system:basic-user",
        "system:public-info-viewer",
    ] {
        assert!(names.contains(&expected), "missing {expected}");
    }
}

#[test]
fn user_facing_roles_are_aggregated_like_upstream() {
    let defaults = bootstrap_policy();
    let resolved = aggregate(&defaults.cluster_roles);
    let names: Vec<&str> = resolved.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["admin", "edit", "view"]);
    let size = |name: &str| {
        resolved
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, r)| r.len())
    };
    // view ⊂ edit ⊂ admin.
    assert!(size("view") < size("edit") && size("edit") < size("admin"));
}

#[test]
fn cluster_admin_may_do_everything() {
    let defaults = bootstrap_policy();
    let policy = Policy::new(
        defaults.cluster_roles,
        vec![],
        defaults.cluster_role_bindings,
        vec![binding("x", "root", "ClusterRole", "cluster-admin", vec![])],
    );
    let masters = UserInfo::new("root", ["system:masters"]);
    // Through the cluster-admin binding itself, not only the short cut.
    let review = policy.rules_for(&masters, None);
    assert!(review.resource_rules.len() >= 2);
    let admin_binding_holder = Policy::new(
        bootstrap_policy().cluster_roles,
        vec![],
        vec![cluster_binding("root", "cluster-admin", vec![user("root")])],
        vec![],
    );
    let root = as_user("root");
    for request in [
        resource("delete", "apps", "deployments", Some("x")),
        resource(
            "escalate",
            "rbac.authorization.k8s.io",
            "clusterroles",
            None,
        ),
        path("post", "/anything/at/all"),
    ] {
        assert!(admin_binding_holder.authorize(&root, &request).is_allowed());
    }
}

#[test]
fn view_reads_workloads_but_not_secrets() {
    let policy = cluster();
    assert!(can(
        &policy,
        "view",
        resource("list", "", "pods", Some("app"))
    ));
    assert!(can(
        &policy,
        "view",
        resource("watch", "apps", "deployments", Some("app"))
    ));
    assert!(can(
        &policy,
        "view",
        subresource("get", "", "pods", "log", Some("app"), "p")
    ));
    assert!(!can(
        &policy,
        "view",
        resource("get", "", "secrets", Some("app"))
    ));
    assert!(!can(
        &policy,
        "view",
        resource("create", "", "pods", Some("app"))
    ));
    assert!(!can(
        &policy,
        "view",
        resource("list", "", "pods", Some("other"))
    ));
}

#[test]
fn edit_writes_workloads_and_secrets_but_not_roles() {
    let policy = cluster();
    assert!(can(
        &policy,
        "edit",
        resource("create", "apps", "deployments", Some("app"))
    ));
    assert!(can(
        &policy,
        "edit",
        resource("get", "", "secrets", Some("app"))
    ));
    assert!(can(
        &policy,
        "edit",
        subresource("create", "", "pods", "exec", Some("app"), "p")
    ));
    assert!(can(
        &policy,
        "edit",
        resource("list", "", "pods", Some("app"))
    ));
    for verb in ["create", "update", "delete", "get"] {
        assert!(!can(
            &policy,
            "edit",
            resource(verb, "rbac.authorization.k8s.io", "roles", Some("app"))
        ));
        assert!(!can(
            &policy,
            "edit",
            resource(
                verb,
                "rbac.authorization.k8s.io",
                "rolebindings",
                Some("app")
            )
        ));
    }
}

#[test]
fn admin_manages_role_bindings_in_its_namespace() {
    let policy = cluster();
    assert!(can(
        &policy,
        "admin",
        resource(
            "create",
            "rbac.authorization.k8s.io",
            "rolebindings",
            Some("app")
        )
    ));
    assert!(can(
        &policy,
        "admin",
        resource("create", "rbac.authorization.k8s.io", "roles", Some("app"))
    ));
    assert!(can(
        &policy,
        "admin",
        resource("delete", "", "secrets", Some("app"))
    ));
    assert!(!can(
        &policy,
        "admin",
        resource(
            "create",
            "rbac.authorization.k8s.io",
            "rolebindings",
            Some("other")
        )
    ));
    assert!(!can(
        &policy,
        "admin",
        resource("create", "rbac.authorization.k8s.io", "clusterroles", None)
    ));
    // An admin can grant `edit` in the namespace (it holds all of edit's rules there) ...
    let edit_rules = policy.cluster_role_rules("edit").expect("edit").to_vec();
    assert_eq!(
        policy.check_escalation(&as_user("admin"), Some("app"), &edit_rules),
        Ok(())
    );
    // ... but an editor cannot grant `admin`.
    let admin_rules = policy.cluster_role_rules("admin").expect("admin").to_vec();
    assert!(
        policy
            .check_escalation(&as_user("edit"), Some("app"), &admin_rules)
            .is_err()
    );
}

#[test]
fn discovery_and_public_info_for_the_right_groups() {
    let policy = cluster();
    let anonymous = UserInfo::new("system:anonymous", ["system:unauthenticated"]);
    let somebody = as_user("somebody");
    for url in [
        "/apis",
        "/api/v1",
        "/apis/apps/v1",
        "/openapi/v3",
        "/version",
    ] {
        assert!(
            policy.authorize(&somebody, &path("get", url)).is_allowed(),
            "{url}"
        );
    }
    assert!(
        !policy
            .authorize(&anonymous, &path("get", "/apis"))
            .is_allowed()
    );
    for url in ["/healthz", "/livez", "/readyz", "/version"] {
        assert!(
            policy.authorize(&anonymous, &path("get", url)).is_allowed(),
            "{url}"
        );
    }
    assert!(
        !policy
            .authorize(&somebody, &path("get", "/metrics"))
            .is_allowed()
    );
    assert!(
        !policy
            .authorize(&somebody, &resource("list", "", "pods", Some("app")))
            .is_allowed()
    );
}

#[test]
fn basic_user_may_review_itself() {
    let policy = cluster();
    let somebody = as_user("somebody");
    for resource_name in ["selfsubjectaccessreviews", "selfsubjectrulesreviews"] {
        let request = resource("create", "authorization.k8s.io", resource_name, None);
        assert!(policy.authorize(&somebody, &request).is_allowed());
    }
    let whoami = resource(
        "create",
        "authentication.k8s.io",
        "selfsubjectreviews",
        None,
    );
    assert!(policy.authorize(&somebody, &whoami).is_allowed());
    let sar = resource(
        "create",
        "authorization.k8s.io",
        "subjectaccessreviews",
        None,
    );
    assert!(!policy.authorize(&somebody, &sar).is_allowed());
}
