//! The Memcached operator end to end on `TestEnv` with the simulated workload controllers:
//! Deployments become available as their pods turn Ready, so the conditions the operator
//! reports come from a real Deployment status.

use opkit_testenv::eventually;
use std::collections::BTreeMap;
use std::time::Duration;

use memcached::{AVAILABLE, DEGRADED, Memcached, MemcachedSpec, PROGRESSING, Settings};
use opkit::Running;
use opkit::k8s_openapi::api::apps::v1::Deployment;
use opkit::k8s_openapi::api::core::v1::{Namespace, Pod, ServiceAccount};
use opkit::k8s_openapi::api::events::v1::Event as K8sEvent;
use opkit::k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, RoleRef, Subject};
use opkit::kube::api::{DeleteParams, ListParams, ObjectMeta, Patch, PatchParams, PostParams};
use opkit::kube::config::{KubeConfigOptions, Kubeconfig};
use opkit::prelude::*;
use opkit_testenv::TestEnv;
use serde_json::json;

const NS: &str = "default";

async fn env() -> TestEnv {
    let settings = opkit_testenv::controllers::Settings {
        pod_ready_delay: Duration::from_millis(20),
        ..Default::default()
    };
    TestEnv::builder()
        .crd::<Memcached>()
        .controller_settings(settings)
        .start()
        .await
        .expect("control plane starts")
}

/// The operator as `memcached run` starts it (leader election on), without the metrics and
/// probe servers (tests run in parallel; ports would clash).
async fn start_operator(client: Client, settings: Settings) -> Running {
    // Reconcile errors are logged; nextest shows them for failing tests.
    let _ = tracing_subscriber::fmt()
        .with_test_writer()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .try_init();
    let running = memcached::manager(
        Manager::builder().leader_election(LeaderElection::new(memcached::LEASE_NAME, NS)),
        settings,
    )
    .start(client)
    .await
    .expect("manager starts");
    eventually("caches synced", || async { running.caches_synced() }).await;
    running
}

fn memcached(name: &str, size: i32) -> Memcached {
    Memcached::new(name, MemcachedSpec { size })
}

async fn conditions_of(api: &Api<Memcached>, name: &str) -> Vec<Condition> {
    api.get_opt(name)
        .await
        .ok()
        .flatten()
        .and_then(|m| m.status)
        .map(|s| s.conditions)
        .unwrap_or_default()
}

/// Available for `generation` with `size` replicas, nothing in progress, not degraded.
async fn available(api: &Api<Memcached>, name: &str, generation: i64, size: i32) -> bool {
    let c = conditions_of(api, name).await;
    conditions::is_true_for(&c, AVAILABLE, Some(generation))
        && conditions::find(&c, AVAILABLE)
            .is_some_and(|a| a.message == format!("{size}/{size} replicas available"))
        && conditions::is_false(&c, PROGRESSING)
        && conditions::is_false(&c, DEGRADED)
}

async fn replicas(deployments: &Api<Deployment>, name: &str) -> Option<i32> {
    deployments
        .get_opt(name)
        .await
        .ok()
        .flatten()
        .and_then(|d| d.spec)
        .and_then(|s| s.replicas)
}

#[tokio::test]
async fn a_memcached_gets_an_owned_deployment_of_its_size_and_becomes_available() {
    let env = env().await;
    let running = start_operator(env.client(), Settings::default()).await;
    let caches: Api<Memcached> = Api::namespaced(env.client(), NS);
    let deployments: Api<Deployment> = Api::namespaced(env.client(), NS);
    let created = caches
        .create(&PostParams::default(), &memcached("cache", 2))
        .await
        .expect("memcached created");

    eventually("Available with 2/2", || available(&caches, "cache", 1, 2)).await;
    let d = deployments.get("cache").await.expect("deployment exists");
    let owner = &d.owner_references()[0];
    assert_eq!(owner.kind, "Memcached");
    assert_eq!(owner.uid, created.uid().unwrap_or_default());
    assert_eq!(owner.controller, Some(true));
    assert!(
        d.managed_fields()
            .iter()
            .any(|m| m.manager.as_deref() == Some("memcached")
                && m.operation.as_deref() == Some("Apply")),
        "applied by the controller's field manager"
    );
    let spec = d.spec.expect("spec");
    assert_eq!(spec.replicas, Some(2));
    let container = &spec.template.spec.expect("pod spec").containers[0];
    assert_eq!(container.image.as_deref(), Some("memcached:1.6"));
    assert_eq!(
        container.ports.as_ref().expect("ports")[0].container_port,
        11211
    );
    assert_eq!(
        d.status.and_then(|s| s.available_replicas),
        Some(2),
        "the Deployment itself reports what the condition says"
    );
    running.shutdown().await.expect("clean shutdown");
}

#[tokio::test]
async fn changing_size_scales_the_deployment() {
    let env = env().await;
    let running = start_operator(env.client(), Settings::default()).await;
    let caches: Api<Memcached> = Api::namespaced(env.client(), NS);
    let deployments: Api<Deployment> = Api::namespaced(env.client(), NS);
    caches
        .create(&PostParams::default(), &memcached("cache", 1))
        .await
        .expect("memcached created");
    eventually("Available with 1/1", || available(&caches, "cache", 1, 1)).await;

    caches
        .patch(
            "cache",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"size": 3}})),
        )
        .await
        .expect("size patched");
    eventually("Available with 3/3 at generation 2", || {
        available(&caches, "cache", 2, 3)
    })
    .await;
    assert_eq!(replicas(&deployments, "cache").await, Some(3));

    caches
        .patch(
            "cache",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"size": 0}})),
        )
        .await
        .expect("size patched");
    eventually("scaled to zero", || available(&caches, "cache", 3, 0)).await;
    assert_eq!(replicas(&deployments, "cache").await, Some(0));
    running.shutdown().await.expect("clean shutdown");
}

#[tokio::test]
async fn a_hand_scaled_or_deleted_deployment_is_repaired() {
    let env = env().await;
    let running = start_operator(env.client(), Settings::default()).await;
    let caches: Api<Memcached> = Api::namespaced(env.client(), NS);
    let deployments: Api<Deployment> = Api::namespaced(env.client(), NS);
    caches
        .create(&PostParams::default(), &memcached("cache", 2))
        .await
        .expect("memcached created");
    eventually("Available", || available(&caches, "cache", 1, 2)).await;

    // `kubectl scale deployment cache --replicas=5`, as a merge patch by another manager.
    deployments
        .patch(
            "cache",
            &PatchParams {
                field_manager: Some("kubectl-scale".into()),
                ..PatchParams::default()
            },
            &Patch::Merge(json!({"spec": {"replicas": 5}})),
        )
        .await
        .expect("scaled by hand");
    eventually("scaled back to 2", || async {
        replicas(&deployments, "cache").await == Some(2)
    })
    .await;

    let before = deployments.get("cache").await.expect("deployment").uid();
    deployments
        .delete("cache", &DeleteParams::default())
        .await
        .expect("deleted by hand");
    eventually("recreated", || async {
        deployments
            .get_opt("cache")
            .await
            .ok()
            .flatten()
            .is_some_and(|d| d.uid() != before)
    })
    .await;
    eventually("Available again", || available(&caches, "cache", 1, 2)).await;
    running.shutdown().await.expect("clean shutdown");
}

#[tokio::test]
async fn pods_that_never_become_ready_leave_it_degraded_and_not_available() {
    let env = env().await;
    let settings = Settings {
        pod_annotations: BTreeMap::from([(
            "sim.opkit.dev/behavior".to_string(),
            "never-ready".to_string(),
        )]),
        progress_deadline_seconds: Some(1),
        ..Settings::default()
    };
    let running = start_operator(env.client(), settings).await;
    let caches: Api<Memcached> = Api::namespaced(env.client(), NS);
    caches
        .create(&PostParams::default(), &memcached("cache", 2))
        .await
        .expect("memcached created");

    eventually("Degraded", || async {
        conditions::is_true(&conditions_of(&caches, "cache").await, DEGRADED)
    })
    .await;
    let c = conditions_of(&caches, "cache").await;
    let degraded = conditions::find(&c, DEGRADED).expect("Degraded");
    assert_eq!(degraded.reason, "ProgressDeadlineExceeded");
    assert!(
        degraded.message.contains("timed out progressing")
            && degraded.message.contains("0/2 replicas available"),
        "{}",
        degraded.message
    );
    let not_available = conditions::find(&c, AVAILABLE).expect("Available");
    assert_eq!(not_available.status, "False");
    assert_eq!(not_available.message, "0/2 replicas available");
    assert!(conditions::is_false(&c, PROGRESSING));

    let events: Api<K8sEvent> = Api::namespaced(env.client(), NS);
    eventually("a Warning event", || async {
        events
            .list(&ListParams::default())
            .await
            .map(|l| l.items)
            .unwrap_or_default()
            .iter()
            .any(|e| {
                e.type_.as_deref() == Some("Warning")
                    && e.reason.as_deref() == Some("ProgressDeadlineExceeded")
            })
    })
    .await;
    running.shutdown().await.expect("clean shutdown");
}

#[tokio::test]
async fn deleting_a_memcached_removes_its_deployment_and_pods() {
    let env = env().await;
    let running = start_operator(env.client(), Settings::default()).await;
    let caches: Api<Memcached> = Api::namespaced(env.client(), NS);
    let deployments: Api<Deployment> = Api::namespaced(env.client(), NS);
    let pods: Api<Pod> = Api::namespaced(env.client(), NS);
    caches
        .create(&PostParams::default(), &memcached("cache", 2))
        .await
        .expect("memcached created");
    eventually("Available", || available(&caches, "cache", 1, 2)).await;
    let selector = ListParams::default().labels("app.kubernetes.io/instance=cache");
    assert_eq!(pods.list(&selector).await.expect("pods").items.len(), 2);

    caches
        .delete("cache", &DeleteParams::default())
        .await
        .expect("delete accepted");
    eventually("memcached, deployment and pods gone", || async {
        matches!(caches.get_opt("cache").await, Ok(None))
            && matches!(deployments.get_opt("cache").await, Ok(None))
            && pods.list(&selector).await.is_ok_and(|l| l.items.is_empty())
    })
    .await;
    running.shutdown().await.expect("clean shutdown");
}

#[tokio::test]
async fn the_schema_rejects_sizes_outside_0_to_100_with_422() {
    let env = env().await;
    let caches: Api<Memcached> = Api::namespaced(env.client(), NS);
    for (name, size) in [("negative", -1), ("huge", 101)] {
        let err = caches
            .create(&PostParams::default(), &memcached(name, size))
            .await
            .expect_err("out-of-range size rejected");
        assert!(
            matches!(&err, opkit::kube::Error::Api(s) if s.code == 422 && s.message.contains("spec.size")),
            "{err:?}"
        );
    }
}

async fn client_from(kubeconfig: &str) -> Client {
    opkit::install_crypto_provider();
    let kc = Kubeconfig::from_yaml(kubeconfig).expect("kubeconfig parses");
    let config = opkit::kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .expect("kubeconfig loads");
    Client::try_from(config).expect("client")
}

fn is_forbidden<T: std::fmt::Debug>(r: &Result<T, opkit::kube::Error>) -> bool {
    matches!(r, Err(opkit::kube::Error::Api(s)) if s.code == 403)
}

#[tokio::test]
async fn the_operator_runs_as_its_service_account_with_only_the_printed_rbac() {
    const SA_NS: &str = "memcached-system";
    const SA: &str = "memcached-operator";
    let env = env().await;
    let admin = env.client();
    let mut ns = Namespace::default();
    ns.metadata.name = Some(SA_NS.into());
    Api::<Namespace>::all(admin.clone())
        .create(&PostParams::default(), &ns)
        .await
        .expect("namespace");
    let mut sa = ServiceAccount::default();
    sa.metadata.name = Some(SA.into());
    Api::<ServiceAccount>::namespaced(admin.clone(), SA_NS)
        .create(&PostParams::default(), &sa)
        .await
        .expect("service account");
    let kubeconfig = env
        .control_plane()
        .service_account_kubeconfig(SA_NS, SA, Duration::from_secs(3600))
        .expect("token issued");
    let operator = client_from(&kubeconfig).await;

    // Unbound, the account can do none of what the operator does.
    assert!(is_forbidden(
        &Api::<Memcached>::all(operator.clone())
            .list(&ListParams::default())
            .await
    ));
    assert!(is_forbidden(
        &Api::<Deployment>::namespaced(operator.clone(), NS)
            .list(&ListParams::default())
            .await
    ));

    // Bind exactly what `memcached print-rbac` prints.
    let role: ClusterRole =
        serde_yaml::from_str(&memcached::cluster_role_yaml().expect("rbac renders"))
            .expect("ClusterRole parses");
    Api::<ClusterRole>::all(admin.clone())
        .create(&PostParams::default(), &role)
        .await
        .expect("ClusterRole created");
    let binding = ClusterRoleBinding {
        metadata: ObjectMeta {
            name: Some(SA.into()),
            ..ObjectMeta::default()
        },
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".into(),
            kind: "ClusterRole".into(),
            name: memcached::CLUSTER_ROLE.into(),
        },
        subjects: Some(vec![Subject {
            kind: "ServiceAccount".into(),
            name: SA.into(),
            namespace: Some(SA_NS.into()),
            ..Subject::default()
        }]),
    };
    Api::<ClusterRoleBinding>::all(admin.clone())
        .create(&PostParams::default(), &binding)
        .await
        .expect("binding created");

    let running = start_operator(operator, Settings::default()).await;
    let caches: Api<Memcached> = Api::namespaced(admin.clone(), NS);
    let deployments: Api<Deployment> = Api::namespaced(admin.clone(), NS);
    caches
        .create(&PostParams::default(), &memcached("cache", 1))
        .await
        .expect("memcached created");
    eventually("Available, run by the service account", || {
        available(&caches, "cache", 1, 1)
    })
    .await;
    assert!(running.is_leader());
    caches
        .patch(
            "cache",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"size": 2}})),
        )
        .await
        .expect("size patched");
    eventually("scaled to 2", || available(&caches, "cache", 2, 2)).await;
    deployments
        .delete("cache", &DeleteParams::default())
        .await
        .expect("deleted by hand");
    eventually("recreated by the service account", || async {
        replicas(&deployments, "cache").await == Some(2)
    })
    .await;
    caches
        .delete("cache", &DeleteParams::default())
        .await
        .expect("delete accepted");
    eventually("memcached and deployment gone", || async {
        matches!(caches.get_opt("cache").await, Ok(None))
            && matches!(deployments.get_opt("cache").await, Ok(None))
    })
    .await;
    let metrics = running.metrics().render();
    assert!(
        metrics.contains(r#"controller_runtime_reconcile_errors_total{controller="memcached"} 0"#),
        "a forbidden call would have failed a reconcile:\n{metrics}"
    );
    running.shutdown().await.expect("clean shutdown");
}
