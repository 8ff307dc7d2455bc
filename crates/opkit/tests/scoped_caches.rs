//! Scoped caches end to end on `TestEnv`: namespaces and selectors narrow the watches, the
//! Roles a namespace-scoped manager derives are all it needs, and caches keep only what
//! reconciles read (no managedFields; owned children as metadata only).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use opkit::k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use opkit::k8s_openapi::api::rbac::v1::{Role, RoleBinding, RoleRef, Subject};
use opkit::kube::api::{ObjectMeta, Patch, PatchParams, PostParams};
use opkit::kube::config::{KubeConfigOptions, Kubeconfig};
use opkit::prelude::*;
use opkit::{CacheOptions, ControllerDef, PartialObjectMeta, Running};
use opkit_testenv::{TestEnv, eventually};
use serde::{Deserialize, Serialize};
use serde_json::json;

#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(
    group = "test.opkit.dev",
    version = "v1",
    kind = "Widget",
    namespaced,
    status = "WidgetStatus"
)]
struct WidgetSpec {
    size: i32,
}

#[derive(Deserialize, Serialize, Clone, Debug, Default, JsonSchema)]
struct WidgetStatus {
    #[serde(default)]
    conditions: Vec<Condition>,
}

#[derive(Debug, thiserror::Error)]
enum Error {
    #[error(transparent)]
    Opkit(#[from] opkit::Error),
}

const OPERATOR: &str = "widget-operator";
const TEAM_A: &str = "team-a";
const TEAM_B: &str = "team-b";
const SA_USER: &str = "system:serviceaccount:team-a:widget-operator";
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// What one reconcile saw.
#[derive(Debug, Clone)]
struct Call {
    /// `namespace/name` of the object reconciled.
    key: String,
    /// `namespace/name` of every Widget in the cache at the time.
    widgets: BTreeSet<String>,
    /// `namespace/name` of every ConfigMap in the cache at the time (empty if not cached).
    config_maps: BTreeSet<String>,
    /// Whether the cached Widget carried managedFields.
    managed_fields: bool,
    /// Whether the cached Widget carried the last-applied-configuration annotation.
    last_applied: bool,
}

#[derive(Default)]
struct Seen {
    calls: Mutex<Vec<Call>>,
}

impl Seen {
    fn calls(&self) -> Vec<Call> {
        self.calls.lock().unwrap().clone()
    }

    fn call(&self, key: &str) -> Option<Call> {
        self.calls().into_iter().find(|c| c.key == key)
    }
}

fn key<K: Resource>(obj: &K) -> String {
    format!("{}/{}", obj.namespace().unwrap_or_default(), obj.name_any())
}

fn keys<K: opkit::Object>(store: opkit::Result<Store<K>>) -> BTreeSet<String> {
    store
        .map(|s| s.state().iter().map(|o| key(o.as_ref())).collect())
        .unwrap_or_default()
}

/// Records what the caches hold, then applies a child ConfigMap, marks the Widget Ready and
/// records an event: the writes a namespaced Role must allow.
async fn reconcile(w: Arc<Widget>, ctx: Arc<Context<Arc<Seen>>>) -> Result<Action, Error> {
    ctx.calls.lock().unwrap().push(Call {
        key: key(w.as_ref()),
        widgets: keys(ctx.store::<Widget>()),
        config_maps: keys(ctx.store::<ConfigMap>()),
        managed_fields: w.metadata.managed_fields.is_some(),
        last_applied: w.annotations().contains_key(LAST_APPLIED),
    });
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(format!("{}-child", w.name_any()));
    ctx.apply_owned(w.as_ref(), cm).await?;
    let mut status = w.status.clone().unwrap_or_default();
    conditions::set(
        &mut status.conditions,
        conditions::ready(true)
            .reason("Applied")
            .message("child applied")
            .observed(w.as_ref()),
    );
    ctx.patch_status(w.as_ref(), &status).await?;
    ctx.event(w.as_ref())
        .reason("Applied")
        .note("child applied")
        .publish()
        .await?;
    Ok(Action::await_change())
}

fn controller(seen: &Arc<Seen>) -> ControllerDef {
    Controller::<Widget>::new("widgets")
        .owns::<ConfigMap>()
        .build(reconcile, seen.clone())
}

async fn env(namespaces: &[&str]) -> TestEnv {
    let env = TestEnv::builder()
        .crd::<Widget>()
        .controllers("")
        .start()
        .await
        .expect("test env starts");
    let api: Api<Namespace> = Api::all(env.client());
    for ns in namespaces {
        let mut namespace = Namespace::default();
        namespace.metadata.name = Some(ns.to_string());
        api.create(&PostParams::default(), &namespace)
            .await
            .expect("namespace created");
    }
    env
}

async fn create_widget(env: &TestEnv, namespace: &str, name: &str, labels: &[(&str, &str)]) {
    let mut w = Widget::new(name, WidgetSpec { size: 1 });
    w.metadata.labels = Some(
        labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    );
    Api::<Widget>::namespaced(env.client(), namespace)
        .create(&PostParams::default(), &w)
        .await
        .expect("widget created");
}

async fn ready(env: &TestEnv, namespace: &str, name: &str) {
    let api: Api<Widget> = Api::namespaced(env.client(), namespace);
    eventually(&format!("{namespace}/{name} Ready"), || {
        let api = api.clone();
        async move {
            api.get(name)
                .await
                .ok()
                .and_then(|w| w.status)
                .is_some_and(|s| conditions::is_true(&s.conditions, "Ready"))
        }
    })
    .await;
}

fn reconcile_errors(running: &Running) -> String {
    running
        .metrics()
        .render()
        .lines()
        .find(|l| {
            l.starts_with(r#"controller_runtime_reconcile_errors_total{controller="widgets"}"#)
        })
        .unwrap_or_default()
        .to_string()
}

/// A client acting as `user` (a service account of `team-a`), through impersonation by the
/// admin.
async fn impersonating(env: &TestEnv, user: &str) -> Client {
    opkit::install_crypto_provider();
    let kc = Kubeconfig::from_yaml(env.kubeconfig()).unwrap();
    let mut config = opkit::kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .unwrap();
    config.auth_info.impersonate = Some(user.to_string());
    config.auth_info.impersonate_groups = Some(vec![
        "system:serviceaccounts".into(),
        "system:serviceaccounts:team-a".into(),
        "system:authenticated".into(),
    ]);
    Client::try_from(config).unwrap()
}

/// The manager the Roles are derived from: scoped to `team-a`, its Lease in `team-a`.
fn scoped_manager(seen: &Arc<Seen>) -> Manager {
    let mut mgr = Manager::builder()
        .namespaces([TEAM_A])
        .leader_election(LeaderElection::new(OPERATOR, TEAM_A).timings(
            Duration::from_secs(10),
            Duration::from_secs(8),
            Duration::from_millis(100),
        ))
        .build();
    mgr.add(controller(seen));
    mgr
}

/// Creates every document of `yaml` (Roles only: a ClusterRole fails the test) and binds
/// each to the operator's service account; returns the Roles' namespaces.
async fn grant_roles(env: &TestEnv, yaml: &str) -> Vec<String> {
    let mut namespaces = Vec::new();
    for doc in serde_yaml::Deserializer::from_str(yaml) {
        let role = Role::deserialize(doc).expect("every document is a Role");
        let ns = role
            .metadata
            .namespace
            .clone()
            .expect("a Role has a namespace");
        assert_eq!(role.metadata.name.as_deref(), Some(OPERATOR));
        Api::<Role>::namespaced(env.client(), &ns)
            .create(&PostParams::default(), &role)
            .await
            .expect("role created");
        let binding = RoleBinding {
            metadata: ObjectMeta {
                name: Some(OPERATOR.into()),
                namespace: Some(ns.clone()),
                ..ObjectMeta::default()
            },
            role_ref: RoleRef {
                api_group: "rbac.authorization.k8s.io".into(),
                kind: "Role".into(),
                name: OPERATOR.into(),
            },
            subjects: Some(vec![Subject {
                kind: "ServiceAccount".into(),
                name: OPERATOR.into(),
                namespace: Some(TEAM_A.into()),
                ..Subject::default()
            }]),
        };
        Api::<RoleBinding>::namespaced(env.client(), &ns)
            .create(&PostParams::default(), &binding)
            .await
            .expect("role binding created");
        namespaces.push(ns);
    }
    namespaces
}

fn forbidden<T: std::fmt::Debug>(result: &Result<T, opkit::kube::Error>) -> bool {
    matches!(result, Err(opkit::kube::Error::Api(s)) if s.code == 403)
}

#[tokio::test]
async fn an_operator_scoped_to_one_namespace_works_under_only_the_roles_it_derives() {
    let env = env(&[TEAM_A, TEAM_B]).await;
    let seen = Arc::new(Seen::default());
    let mgr = scoped_manager(&seen);
    let granted = grant_roles(&env, &mgr.rbac_yaml(OPERATOR).unwrap()).await;
    assert_eq!(
        granted,
        [TEAM_A],
        "one Role, in team-a, leader election included"
    );
    let sa = impersonating(&env, SA_USER).await;
    assert!(forbidden(
        &Api::<Widget>::all(sa.clone())
            .list(&Default::default())
            .await
    ));
    assert!(forbidden(
        &Api::<Widget>::namespaced(sa.clone(), TEAM_B)
            .list(&Default::default())
            .await
    ));

    create_widget(&env, TEAM_B, "elsewhere", &[]).await;
    create_widget(&env, TEAM_A, "w", &[]).await;
    let running = mgr.start(sa).await.expect("manager starts");
    ready(&env, TEAM_A, "w").await;
    assert!(running.is_leader());
    assert!(running.caches_synced());
    assert!(
        running.cache_errors().is_empty(),
        "{:?}",
        running.cache_errors()
    );
    let child = Api::<ConfigMap>::namespaced(env.client(), TEAM_A)
        .get("w-child")
        .await
        .expect("child applied");
    assert_eq!(child.owner_references()[0].name, "w");
    let call = seen.call("team-a/w").expect("w reconciled");
    assert_eq!(
        call.widgets,
        BTreeSet::from(["team-a/w".to_string()]),
        "team-b's widget is not in the cache"
    );
    assert!(seen.calls().iter().all(|c| c.key.starts_with("team-a/")));
    assert!(
        reconcile_errors(&running).ends_with(" 0"),
        "a forbidden call would have failed a reconcile: {}",
        reconcile_errors(&running)
    );
    running.shutdown().await.unwrap();
}

#[tokio::test]
async fn the_same_operator_watching_the_whole_cluster_under_those_roles_is_forbidden_and_never_syncs()
 {
    let env = env(&[TEAM_A]).await;
    let seen = Arc::new(Seen::default());
    grant_roles(&env, &scoped_manager(&seen).rbac_yaml(OPERATOR).unwrap()).await;
    create_widget(&env, TEAM_A, "w", &[]).await;
    let mut cluster_wide = Manager::builder().build();
    cluster_wide.add(controller(&seen));
    let running = cluster_wide
        .start(impersonating(&env, SA_USER).await)
        .await
        .expect("manager starts");
    let errors = eventually("a forbidden list of Widgets reported", || {
        let errors = running.cache_errors();
        let found = errors
            .iter()
            .any(|e| e.starts_with("Widget.test.opkit.dev: ") && e.contains("403"));
        std::future::ready(found.then_some(errors))
    })
    .await;
    assert!(!running.caches_synced(), "{errors:?}");
    assert!(
        seen.calls().is_empty(),
        "nothing can be reconciled without a list"
    );
    running.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_manager_scoped_to_two_namespaces_caches_both_in_one_cache_and_nothing_else() {
    let env = env(&["a", "b", "c"]).await;
    for ns in ["a", "b", "c"] {
        create_widget(&env, ns, "w", &[]).await;
    }
    let seen = Arc::new(Seen::default());
    let mut mgr = Manager::builder().namespaces(["a", "b"]).build();
    mgr.add(controller(&seen));
    let running = mgr.start(env.client()).await.expect("manager starts");
    ready(&env, "a", "w").await;
    ready(&env, "b", "w").await;
    assert_eq!(
        running.watch_count(),
        4,
        "Widgets and ConfigMaps, in a and b"
    );
    create_widget(&env, "c", "late", &[]).await;
    create_widget(&env, "b", "late", &[]).await;
    ready(&env, "b", "late").await;
    let call = seen.call("b/late").expect("b/late reconciled");
    assert_eq!(
        call.widgets,
        BTreeSet::from(["a/w", "b/late", "b/w"].map(String::from))
    );
    assert!(call.config_maps.iter().all(|k| !k.starts_with("c/")));
    assert!(
        seen.calls()
            .iter()
            .all(|c| c.key.starts_with("a/") || c.key.starts_with("b/"))
    );
    running.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_label_selector_narrows_every_cache_and_cache_for_exempts_a_kind() {
    let env = env(&[]).await;
    create_widget(&env, "default", "plain", &[]).await;
    create_widget(&env, "default", "gold", &[("tier", "gold")]).await;
    let mut unlabelled = ConfigMap::default();
    unlabelled.metadata.name = Some("unlabelled".into());
    Api::<ConfigMap>::namespaced(env.client(), "default")
        .create(&PostParams::default(), &unlabelled)
        .await
        .unwrap();
    let seen = Arc::new(Seen::default());
    let mut mgr = Manager::builder()
        .label_selector("tier=gold")
        .cache_for::<ConfigMap>(CacheOptions::new().label_selector(""))
        .build();
    mgr.add(controller(&seen));
    let running = mgr.start(env.client()).await.expect("manager starts");
    ready(&env, "default", "gold").await;
    let call = seen.call("default/gold").expect("gold reconciled");
    assert_eq!(call.widgets, BTreeSet::from(["default/gold".to_string()]));
    assert!(
        call.config_maps.contains("default/unlabelled"),
        "ConfigMaps are exempt from the selector: {:?}",
        call.config_maps
    );
    assert!(seen.call("default/plain").is_none());
    running.shutdown().await.unwrap();
}

async fn cached_widget_with_last_applied(keep: Option<bool>) -> Call {
    let env = env(&[]).await;
    let mut w = Widget::new("w", WidgetSpec { size: 1 });
    w.metadata.annotations = Some(BTreeMap::from([(
        LAST_APPLIED.to_string(),
        r#"{"spec":{"size":1}}"#.to_string(),
    )]));
    Api::<Widget>::namespaced(env.client(), "default")
        .create(&PostParams::default(), &w)
        .await
        .unwrap();
    let seen = Arc::new(Seen::default());
    let mut builder = Manager::builder();
    if let Some(keep) = keep {
        builder = builder.cache_for::<Widget>(CacheOptions::new().keep_managed_fields(keep));
    }
    let mut mgr = builder.build();
    mgr.add(controller(&seen));
    let running = mgr.start(env.client()).await.expect("manager starts");
    ready(&env, "default", "w").await;
    running.shutdown().await.unwrap();
    seen.call("default/w").expect("w reconciled")
}

#[tokio::test]
async fn cached_objects_carry_no_managed_fields_or_last_applied_configuration_by_default() {
    let call = cached_widget_with_last_applied(None).await;
    assert!(!call.managed_fields);
    assert!(!call.last_applied);
}

#[tokio::test]
async fn keep_managed_fields_keeps_them_in_the_cache() {
    let call = cached_widget_with_last_applied(Some(true)).await;
    assert!(call.managed_fields);
    assert!(call.last_applied);
}

/// What a reconcile of a controller owning ConfigMaps as metadata saw of the child.
#[derive(Default)]
struct Children {
    /// The child's labels in the metadata cache, per reconcile.
    labels: Mutex<Vec<BTreeMap<String, String>>>,
    full_cache: Mutex<Option<bool>>,
}

async fn reconcile_with_metadata(
    w: Arc<Widget>,
    ctx: Arc<Context<Arc<Children>>>,
) -> Result<Action, Error> {
    let name = format!("{}-child", w.name_any());
    let cached = ctx
        .store::<PartialObjectMeta<ConfigMap>>()?
        .state()
        .into_iter()
        .find(|c| c.name_any() == name);
    if let Some(child) = cached {
        ctx.labels.lock().unwrap().push(child.labels().clone());
    }
    *ctx.full_cache.lock().unwrap() = Some(ctx.store::<ConfigMap>().is_ok());
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name);
    ctx.apply_owned(w.as_ref(), cm).await?;
    Ok(Action::await_change())
}

#[tokio::test]
async fn children_owned_as_metadata_only_still_requeue_their_owner() {
    let env = env(&[]).await;
    let children = Arc::new(Children::default());
    let mut mgr = Manager::builder().build();
    mgr.add(
        Controller::<Widget>::new("widgets")
            .owns_metadata::<ConfigMap>()
            .build(reconcile_with_metadata, children.clone()),
    );
    let running = mgr.start(env.client()).await.expect("manager starts");
    create_widget(&env, "default", "w", &[]).await;
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    eventually("the child applied", || {
        let cms = cms.clone();
        async move { cms.get_opt("w-child").await.ok().flatten().is_some() }
    })
    .await;
    cms.patch(
        "w-child",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"poked": "yes"}}})),
    )
    .await
    .unwrap();
    eventually("a reconcile caused by the child's change saw it", || {
        let seen = children.labels.lock().unwrap().clone();
        std::future::ready(
            seen.iter()
                .any(|l| l.get("poked").map(String::as_str) == Some("yes")),
        )
    })
    .await;
    assert_eq!(
        *children.full_cache.lock().unwrap(),
        Some(false),
        "only the metadata of ConfigMaps is cached"
    );
    running.shutdown().await.unwrap();
}
