//! Authentication and RBAC through kube-rs over real HTTPS: service-account tokens, client
//! certificates, the default roles, escalation prevention, impersonation and access reviews.

mod common;

use k8s_openapi::api::authentication::v1::{
    SelfSubjectReview, TokenRequest, TokenRequestSpec, TokenReview, TokenReviewSpec,
};
use k8s_openapi::api::authorization::v1::{
    LocalSubjectAccessReview, ResourceAttributes, SelfSubjectAccessReview,
    SelfSubjectAccessReviewSpec, SelfSubjectRulesReview, SelfSubjectRulesReviewSpec,
    SubjectAccessReview, SubjectAccessReviewSpec,
};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use opkit_controlplane::ControlPlane;
use opkit_testenv::eventually;
use serde_json::json;

fn status_of(err: kube::Error) -> kube::core::Status {
    match err {
        kube::Error::Api(s) => *s,
        other => panic!("expected an API error, got {other:?}"),
    }
}

async fn create_ns(admin: &kube::Client, name: &str) {
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
    Api::<Namespace>::all(admin.clone())
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
}

async fn apply<K>(api: &Api<K>, obj: serde_json::Value)
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    let obj: K = serde_json::from_value(obj).unwrap();
    api.create(&PostParams::default(), &obj).await.unwrap();
}

async fn user_client(plane: &ControlPlane, user: &str, groups: &[&str]) -> kube::Client {
    let groups: Vec<String> = groups.iter().map(|g| g.to_string()).collect();
    common::client_for_kubeconfig(&plane.user_kubeconfig(user, &groups).unwrap()).await
}

/// A client with the cluster and CA but no credentials at all.
async fn anonymous_client(plane: &ControlPlane) -> kube::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut kubeconfig = Kubeconfig::from_yaml(plane.kubeconfig()).unwrap();
    for user in &mut kubeconfig.auth_infos {
        user.auth_info = Some(Default::default());
    }
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .unwrap();
    kube::Client::try_from(config).unwrap()
}

async fn get_status(client: &kube::Client, path: &str) -> u16 {
    let req = http::Request::get(path).body(Vec::new()).unwrap();
    client
        .send(req.map(Into::into))
        .await
        .unwrap()
        .status()
        .as_u16()
}

#[tokio::test]
async fn anonymous_requests_get_401_except_health_and_version() {
    let plane = common::start().await;
    let anon = anonymous_client(&plane).await;
    for path in ["/healthz", "/readyz", "/livez", "/version"] {
        assert_eq!(get_status(&anon, path).await, 200, "{path}");
    }
    for path in ["/api", "/apis", "/api/v1/namespaces", "/openapi/v2"] {
        assert_eq!(get_status(&anon, path).await, 401, "{path}");
    }
    let err = status_of(
        Api::<ConfigMap>::namespaced(anon, "default")
            .list(&ListParams::default())
            .await
            .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (401, "Unauthorized"));
}

#[tokio::test]
async fn a_new_user_is_denied_with_upstreams_message_and_can_use_discovery() {
    let plane = common::start().await;
    let alice = user_client(&plane, "alice", &[]).await;
    // system:discovery and system:basic-user are bound to every authenticated user.
    assert_eq!(get_status(&alice, "/api").await, 200);
    assert_eq!(get_status(&alice, "/apis").await, 200);
    let err = status_of(
        Api::<ConfigMap>::namespaced(alice.clone(), "default")
            .list(&ListParams::default())
            .await
            .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (403, "Forbidden"));
    assert_eq!(
        err.message,
        r#"configmaps is forbidden: User "alice" cannot list resource "configmaps" in API group "" in the namespace "default""#
    );
    let err = status_of(
        Api::<ConfigMap>::namespaced(alice.clone(), "default")
            .get("settings")
            .await
            .unwrap_err(),
    );
    assert_eq!(
        err.message,
        r#"configmaps "settings" is forbidden: User "alice" cannot get resource "configmaps" in API group "" in the namespace "default""#
    );
    let err = status_of(
        Api::<Namespace>::all(alice.clone())
            .list(&ListParams::default())
            .await
            .unwrap_err(),
    );
    assert_eq!(
        err.message,
        r#"namespaces is forbidden: User "alice" cannot list resource "namespaces" in API group "" at the cluster scope"#
    );
    let err = status_of(
        Api::<ClusterRole>::all(alice)
            .list(&ListParams::default())
            .await
            .unwrap_err(),
    );
    assert_eq!(
        err.message,
        r#"clusterroles.rbac.authorization.k8s.io is forbidden: User "alice" cannot list resource "clusterroles" in API group "rbac.authorization.k8s.io" at the cluster scope"#
    );
}

#[tokio::test]
async fn the_default_view_role_bound_to_a_group_reads_but_cannot_write_or_see_secrets() {
    let plane = common::start().await;
    let admin = common::client(&plane).await;
    for name in ["cluster-admin", "admin", "edit", "view", "system:discovery"] {
        Api::<ClusterRole>::all(admin.clone())
            .get(name)
            .await
            .unwrap_or_else(|e| panic!("default role {name}: {e}"));
    }
    create_ns(&admin, "team").await;
    apply(
        &Api::<RoleBinding>::namespaced(admin.clone(), "team"),
        json!({
            "metadata": {"name": "devs-view"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "devs"}]
        }),
    )
    .await;
    // Right after the binding is created, it applies.
    let bob = user_client(&plane, "bob", &["devs"]).await;
    Api::<ConfigMap>::namespaced(bob.clone(), "team")
        .list(&ListParams::default())
        .await
        .expect("view lets devs list configmaps in team");
    let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "x"}})).unwrap();
    let err = status_of(
        Api::<ConfigMap>::namespaced(bob.clone(), "team")
            .create(&PostParams::default(), &cm)
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 403);
    let err = status_of(
        Api::<Secret>::namespaced(bob.clone(), "team")
            .list(&ListParams::default())
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 403, "view must not read secrets");
    let err = status_of(
        Api::<ConfigMap>::namespaced(bob, "default")
            .list(&ListParams::default())
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 403, "a RoleBinding grants only its namespace");
}

#[tokio::test]
async fn service_account_tokens_authenticate_until_the_service_account_is_deleted() {
    let plane = common::start().await;
    let admin = common::client(&plane).await;
    let sas = Api::<ServiceAccount>::namespaced(admin.clone(), "default");
    apply(&sas, json!({"metadata": {"name": "robot"}})).await;
    let issued = sas
        .create_token_request(
            "robot",
            &PostParams::default(),
            &TokenRequest {
                spec: TokenRequestSpec {
                    expiration_seconds: Some(3600),
                    ..Default::default()
                },
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let token = issued.status.unwrap().token;
    let kubeconfig = plane.kubeconfig().replace(plane.token(), &token);
    let robot = common::client_for_kubeconfig(&kubeconfig).await;
    let me = Api::<SelfSubjectReview>::all(robot.clone())
        .create(&PostParams::default(), &SelfSubjectReview::default())
        .await
        .unwrap();
    let info = me.status.unwrap().user_info.unwrap();
    assert_eq!(
        info.username.as_deref(),
        Some("system:serviceaccount:default:robot")
    );
    let groups = info.groups.unwrap();
    for g in [
        "system:serviceaccounts",
        "system:serviceaccounts:default",
        "system:authenticated",
    ] {
        assert!(groups.contains(&g.to_string()), "{groups:?}");
    }
    let err = status_of(
        Api::<ConfigMap>::namespaced(robot.clone(), "default")
            .list(&ListParams::default())
            .await
            .unwrap_err(),
    );
    assert_eq!(
        err.message,
        r#"configmaps is forbidden: User "system:serviceaccount:default:robot" cannot list resource "configmaps" in API group "" in the namespace "default""#
    );
    apply(
        &Api::<Role>::namespaced(admin.clone(), "default"),
        json!({"metadata": {"name": "cm-reader"},
               "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]}]}),
    )
    .await;
    apply(
        &Api::<RoleBinding>::namespaced(admin.clone(), "default"),
        json!({"metadata": {"name": "robot-reads"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "cm-reader"},
               "subjects": [{"kind": "ServiceAccount", "name": "robot", "namespace": "default"}]}),
    )
    .await;
    Api::<ConfigMap>::namespaced(robot.clone(), "default")
        .list(&ListParams::default())
        .await
        .expect("the binding grants the service account list");

    // TokenReview (as the admin) agrees.
    let review = Api::<TokenReview>::all(admin.clone())
        .create(
            &PostParams::default(),
            &TokenReview {
                spec: TokenReviewSpec {
                    token: Some(token.clone()),
                    ..Default::default()
                },
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let status = review.status.unwrap();
    assert_eq!(status.authenticated, Some(true));
    assert_eq!(
        status.user.unwrap().username.as_deref(),
        Some("system:serviceaccount:default:robot")
    );

    sas.delete("robot", &DeleteParams::default()).await.unwrap();
    // Tokens are re-checked against the service account within the cache's few seconds.
    eventually(
        "the token refused (401) once its service account is deleted",
        || async {
            matches!(
                Api::<ConfigMap>::namespaced(robot.clone(), "default")
                    .list(&ListParams::default())
                    .await,
                Err(kube::Error::Api(s)) if s.code == 401
            )
        },
    )
    .await;
}

#[tokio::test]
async fn token_requests_are_validated() {
    let plane = common::start().await;
    let admin = common::client(&plane).await;
    let sas = Api::<ServiceAccount>::namespaced(admin.clone(), "default");
    let short = TokenRequest {
        spec: TokenRequestSpec {
            expiration_seconds: Some(60),
            ..Default::default()
        },
        ..Default::default()
    };
    let err = status_of(
        sas.create_token_request("ghost", &PostParams::default(), &short)
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 404, "{}", err.message);
    apply(&sas, json!({"metadata": {"name": "robot"}})).await;
    let err = status_of(
        sas.create_token_request("robot", &PostParams::default(), &short)
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 422);
    assert!(
        err.message.contains("less than 10 minutes"),
        "{}",
        err.message
    );
    // A garbage bearer token is refused outright.
    let bad = plane
        .kubeconfig()
        .replace(plane.token(), "eyJhbGciOiJFUzI1NiJ9.e30.AAAA");
    let bad = common::client_for_kubeconfig(&bad).await;
    assert_eq!(get_status(&bad, "/api").await, 401);
}

#[tokio::test]
async fn writing_roles_and_bindings_cannot_grant_more_than_the_writer_holds() {
    let plane = common::start().await;
    let admin = common::client(&plane).await;
    create_ns(&admin, "team").await;
    apply(
        &Api::<Role>::namespaced(admin.clone(), "team"),
        json!({"metadata": {"name": "rbac-writer"},
               "rules": [
                 {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles", "rolebindings"], "verbs": ["create", "get", "update"]},
                 {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}
               ]}),
    )
    .await;
    apply(
        &Api::<RoleBinding>::namespaced(admin.clone(), "team"),
        json!({"metadata": {"name": "carol-writes-rbac"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "rbac-writer"},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "carol"}]}),
    )
    .await;
    let carol = user_client(&plane, "carol", &[]).await;
    let roles = Api::<Role>::namespaced(carol.clone(), "team");
    apply(
        &roles,
        json!({"metadata": {"name": "pod-getter"},
               "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]}),
    )
    .await;
    let grab: Role = serde_json::from_value(json!({"metadata": {"name": "pod-deleter"},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "delete"]}]}))
    .unwrap();
    let err = status_of(
        roles
            .create(&PostParams::default(), &grab)
            .await
            .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (403, "Forbidden"));
    assert!(
        err.message.starts_with(r#"roles.rbac.authorization.k8s.io "pod-deleter" is forbidden: user "carol" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:"#),
        "{}",
        err.message
    );
    assert!(err.message.contains("delete"), "{}", err.message);

    // Binding a role carol holds all of is fine; binding admin is not.
    apply(
        &Api::<RoleBinding>::namespaced(carol.clone(), "team"),
        json!({"metadata": {"name": "dave-gets-pods"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pod-getter"},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "dave"}]}),
    )
    .await;
    let promote: RoleBinding = serde_json::from_value(json!({"metadata": {"name": "dave-admin"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "admin"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "dave"}]}))
    .unwrap();
    let bindings = Api::<RoleBinding>::namespaced(carol.clone(), "team");
    let err = status_of(
        bindings
            .create(&PostParams::default(), &promote)
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 403, "{}", err.message);

    // With `bind` on the admin ClusterRole, carol may bind it without holding it.
    apply(
        &Api::<Role>::namespaced(admin.clone(), "team"),
        json!({"metadata": {"name": "admin-binder"},
               "rules": [{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"], "verbs": ["bind"], "resourceNames": ["admin"]}]}),
    )
    .await;
    apply(
        &Api::<RoleBinding>::namespaced(admin.clone(), "team"),
        json!({"metadata": {"name": "carol-binds-admin"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "admin-binder"},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "carol"}]}),
    )
    .await;
    bindings
        .create(&PostParams::default(), &promote)
        .await
        .expect("bind permission allows binding admin");

    // Cluster-wide: carol cannot create a ClusterRoleBinding at all.
    let crb: ClusterRoleBinding = serde_json::from_value(json!({"metadata": {"name": "x"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "carol"}]}))
    .unwrap();
    let err = status_of(
        Api::<ClusterRoleBinding>::all(carol)
            .create(&PostParams::default(), &crb)
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 403);
}

#[tokio::test]
async fn impersonation_needs_the_impersonate_verb_and_acts_as_the_target() {
    let plane = common::start().await;
    let admin = common::client(&plane).await;
    // The admin impersonating alice is alice: denied.
    let req = http::Request::get("/api/v1/namespaces/default/configmaps")
        .header("Impersonate-User", "alice")
        .body(Vec::new())
        .unwrap();
    let resp = admin.send(req.map(Into::into)).await.unwrap();
    assert_eq!(resp.status().as_u16(), 403);

    let alice = user_client(&plane, "alice", &[]).await;
    let req = http::Request::get("/api/v1/namespaces/default/configmaps")
        .header("Impersonate-User", "bob")
        .body(Vec::new())
        .unwrap();
    let err = alice.request::<serde_json::Value>(req).await.unwrap_err();
    let err = status_of(err);
    assert_eq!(
        err.message,
        r#"users "bob" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope"#
    );
    apply(
        &Api::<ClusterRole>::all(admin.clone()),
        json!({"metadata": {"name": "impersonate-bob"},
               "rules": [{"apiGroups": [""], "resources": ["users"], "verbs": ["impersonate"], "resourceNames": ["bob"]}]}),
    )
    .await;
    apply(
        &Api::<ClusterRoleBinding>::all(admin.clone()),
        json!({"metadata": {"name": "alice-impersonates-bob"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "impersonate-bob"},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"}]}),
    )
    .await;
    let req = http::Request::post("/apis/authentication.k8s.io/v1/selfsubjectreviews")
        .header("Impersonate-User", "bob")
        .header("Content-Type", "application/json")
        .body(br#"{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}"#.to_vec())
        .unwrap();
    let me: serde_json::Value = alice.request(req).await.unwrap();
    assert_eq!(me["status"]["userInfo"]["username"], "bob");
    assert_eq!(
        me["status"]["userInfo"]["groups"],
        json!(["system:authenticated"])
    );
    // Groups need their own permission.
    let req = http::Request::get("/api")
        .header("Impersonate-User", "bob")
        .header("Impersonate-Group", "system:masters")
        .body(Vec::new())
        .unwrap();
    let err = status_of(alice.request::<serde_json::Value>(req).await.unwrap_err());
    assert!(
        err.message
            .contains(r#"cannot impersonate resource "groups""#),
        "{}",
        err.message
    );
}

#[tokio::test]
async fn access_reviews_answer_for_self_and_others() {
    let plane = common::start().await;
    let admin = common::client(&plane).await;
    create_ns(&admin, "team").await;
    apply(
        &Api::<RoleBinding>::namespaced(admin.clone(), "team"),
        json!({"metadata": {"name": "erin-edit"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "erin"}]}),
    )
    .await;
    let erin = user_client(&plane, "erin", &[]).await;
    let can = |verb: &str, resource: &str, ns: &str| SelfSubjectAccessReview {
        spec: SelfSubjectAccessReviewSpec {
            resource_attributes: Some(ResourceAttributes {
                verb: Some(verb.into()),
                resource: Some(resource.into()),
                namespace: Some(ns.into()),
                group: Some(
                    if resource == "deployments" {
                        "apps"
                    } else {
                        ""
                    }
                    .into(),
                ),
                ..Default::default()
            }),
            ..Default::default()
        },
        ..Default::default()
    };
    let ssar = Api::<SelfSubjectAccessReview>::all(erin.clone());
    for (verb, resource, ns, expected) in [
        ("create", "deployments", "team", true),
        ("delete", "configmaps", "team", true),
        ("list", "secrets", "team", true),
        ("create", "roles", "team", false),
        ("list", "configmaps", "default", false),
    ] {
        let answer = ssar
            .create(&PostParams::default(), &can(verb, resource, ns))
            .await
            .unwrap();
        assert_eq!(
            answer.status.unwrap().allowed,
            expected,
            "{verb} {resource} in {ns}"
        );
    }
    let rules = Api::<SelfSubjectRulesReview>::all(erin)
        .create(
            &PostParams::default(),
            &SelfSubjectRulesReview {
                spec: SelfSubjectRulesReviewSpec {
                    namespace: Some("team".into()),
                },
                ..Default::default()
            },
        )
        .await
        .unwrap()
        .status
        .unwrap();
    assert!(
        rules.resource_rules.iter().any(|r| r
            .resources
            .as_ref()
            .is_some_and(|res| res.contains(&"deployments".to_string()))
            && r.verbs.contains(&"create".to_string())),
        "{:?}",
        rules.resource_rules
    );
    assert!(!rules.non_resource_rules.is_empty());

    // The admin asks about erin; a LocalSubjectAccessReview is pinned to its namespace.
    let sar = SubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            user: Some("erin".into()),
            resource_attributes: Some(ResourceAttributes {
                verb: Some("update".into()),
                resource: Some("configmaps".into()),
                namespace: Some("team".into()),
                ..Default::default()
            }),
            ..Default::default()
        },
        ..Default::default()
    };
    let answer = Api::<SubjectAccessReview>::all(admin.clone())
        .create(&PostParams::default(), &sar)
        .await
        .unwrap();
    assert!(answer.status.unwrap().allowed);
    let mut local = LocalSubjectAccessReview {
        spec: sar.spec.clone(),
        ..Default::default()
    };
    local.metadata.namespace = Some("default".into());
    let err = status_of(
        Api::<LocalSubjectAccessReview>::namespaced(admin, "default")
            .create(&PostParams::default(), &local)
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 422, "{}", err.message);
}

#[tokio::test]
async fn the_admin_is_in_system_masters_and_a_client_certificate_can_carry_two_groups() {
    let plane = common::start().await;
    let admin = common::client(&plane).await;
    let me = Api::<SelfSubjectReview>::all(admin)
        .create(&PostParams::default(), &SelfSubjectReview::default())
        .await
        .unwrap()
        .status
        .unwrap()
        .user_info
        .unwrap();
    assert_eq!(me.username.as_deref(), Some("opkit-admin"));
    assert!(me.groups.unwrap().contains(&"system:masters".to_string()));
    let frank = user_client(&plane, "frank", &["qa", "ops"]).await;
    let me = Api::<SelfSubjectReview>::all(frank)
        .create(&PostParams::default(), &SelfSubjectReview::default())
        .await
        .unwrap()
        .status
        .unwrap()
        .user_info
        .unwrap();
    assert_eq!(me.username.as_deref(), Some("frank"));
    assert_eq!(
        me.groups.unwrap(),
        ["qa", "ops", "system:authenticated"].map(String::from)
    );
}

#[tokio::test]
async fn the_audit_log_records_who_did_what() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("audit.jsonl");
    let plane = ControlPlane::start(opkit_controlplane::Config {
        audit_log: Some(log.clone()),
        ..opkit_controlplane::Config::ephemeral()
    })
    .await
    .unwrap();
    let admin = common::client(&plane).await;
    apply(
        &Api::<ConfigMap>::namespaced(admin, "default"),
        json!({"metadata": {"name": "audited"}}),
    )
    .await;
    let alice = user_client(&plane, "alice", &[]).await;
    let _ = Api::<Secret>::namespaced(alice, "default")
        .get("nope")
        .await
        .unwrap_err();
    let (create, denied) = eventually("both audit events written", || async {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        // Complete lines only: the writer thread may be in the middle of the next one.
        let events: Vec<serde_json::Value> = text
            .split_inclusive('\n')
            .filter(|l| l.ends_with('\n'))
            .map(|l| serde_json::from_str(l).expect("each line is JSON"))
            .collect();
        let create = events
            .iter()
            .find(|e| {
                e["verb"] == "create"
                    && e["objectRef"]["resource"] == "configmaps"
                    && e["userAgent"] != "opkit-controller-manager"
            })
            .cloned();
        let denied = events
            .iter()
            .find(|e| e["user"]["username"] == "alice" && e["objectRef"]["resource"] == "secrets")
            .cloned();
        create.zip(denied)
    })
    .await;
    assert_eq!(create["apiVersion"], "audit.k8s.io/v1");
    assert_eq!(create["user"]["username"], "opkit-admin");
    assert_eq!(create["responseStatus"]["code"], 201);
    assert_eq!(create["objectRef"]["namespace"], "default");
    assert_eq!(denied["verb"], "get");
    assert_eq!(denied["responseStatus"]["code"], 403);
    assert_eq!(
        denied["annotations"]["authorization.k8s.io/decision"],
        "forbid"
    );
}

#[tokio::test]
async fn aggregated_roles_grant_new_rules_at_once_and_the_controller_writes_them_back() {
    let plane = common::start().await;
    let admin = common::client(&plane).await;
    apply(
        &Api::<RoleBinding>::namespaced(admin.clone(), "default"),
        json!({"metadata": {"name": "gina-view"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "gina"}]}),
    )
    .await;
    let gina = user_client(&plane, "gina", &[]).await;
    let secrets = Api::<Secret>::namespaced(gina, "default");
    assert_eq!(
        status_of(secrets.list(&ListParams::default()).await.unwrap_err()).code,
        403
    );
    apply(
        &Api::<ClusterRole>::all(admin.clone()),
        json!({"metadata": {"name": "secret-reader",
                            "labels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}},
               "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["list"]}]}),
    )
    .await;
    secrets
        .list(&ListParams::default())
        .await
        .expect("the aggregated rule applies with the next request");
    let roles = Api::<ClusterRole>::all(admin);
    eventually(
        "the clusterrole-aggregation controller to write the rule into view",
        || async {
            let view = roles.get("view").await.unwrap();
            view.rules.unwrap_or_default().iter().any(|r| {
                r.resources
                    .as_ref()
                    .is_some_and(|res| res.contains(&"secrets".to_string()))
            })
        },
    )
    .await;
}
