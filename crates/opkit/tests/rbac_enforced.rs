//! The derived rules are enough: the operator runs as a service account bound to exactly
//! `Manager::rbac_rules()`, and the same account without the binding is forbidden.

use opkit_testenv::eventually;
use std::sync::Arc;
use std::time::Duration;

use opkit::Running;
use opkit::k8s_openapi::api::core::v1::ConfigMap;
use opkit::k8s_openapi::api::rbac::v1::{ClusterRoleBinding, RoleRef, Subject};
use opkit::kube::api::{DeleteParams, ObjectMeta, PostParams};
use opkit::kube::config::{KubeConfigOptions, Kubeconfig};
use opkit::prelude::*;
use opkit_testenv::TestEnv;
use serde::{Deserialize, Serialize};

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
    #[error(transparent)]
    Finalizer(#[from] opkit::finalizer::FinalizerError<opkit::Error>),
}

const FINALIZER: &str = "test.opkit.dev/cleanup";
const SA_USER: &str = "system:serviceaccount:default:widget-operator";

/// A reconcile that uses every helper: finalizer, owned ConfigMap by SSA, status, events.
async fn reconcile(w: Arc<Widget>, ctx: Arc<Context<()>>) -> Result<Action, Error> {
    let inner = ctx.clone();
    Ok(ctx
        .finalize(w, |event| async move {
            match event {
                finalizer::Event::Apply(w) => {
                    let mut cm = ConfigMap::default();
                    cm.metadata.name = Some(format!("{}-child", w.name_any()));
                    inner.apply_owned(w.as_ref(), cm).await?;
                    let mut status = w.status.clone().unwrap_or_default();
                    conditions::set(
                        &mut status.conditions,
                        conditions::ready(true)
                            .reason("Applied")
                            .message("ok")
                            .observed(w.as_ref()),
                    );
                    inner.patch_status(w.as_ref(), &status).await?;
                    inner
                        .event(w.as_ref())
                        .reason("Applied")
                        .note("ok")
                        .publish()
                        .await?;
                }
                finalizer::Event::Cleanup(w) => {
                    inner
                        .event(w.as_ref())
                        .reason("Cleanup")
                        .note("bye")
                        .publish()
                        .await?;
                }
            }
            Ok::<_, opkit::Error>(Action::await_change())
        })
        .await?)
}

fn manager() -> Manager {
    let mut mgr = Manager::builder()
        .leader_election(LeaderElection::new("widget-operator", "default").timings(
            Duration::from_secs(10),
            Duration::from_secs(8),
            Duration::from_millis(100),
        ))
        .build();
    mgr.add(
        Controller::<Widget>::new("widgets")
            .owns::<ConfigMap>()
            .finalizer(FINALIZER)
            .build(reconcile, ()),
    );
    mgr
}

async fn impersonating(env: &TestEnv, user: &str) -> Client {
    opkit::install_crypto_provider();
    let kc = Kubeconfig::from_yaml(env.kubeconfig()).unwrap();
    let mut config = opkit::kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .unwrap();
    config.auth_info.impersonate = Some(user.to_string());
    config.auth_info.impersonate_groups = Some(vec![
        "system:serviceaccounts".into(),
        "system:serviceaccounts:default".into(),
        "system:authenticated".into(),
    ]);
    Client::try_from(config).unwrap()
}

#[tokio::test]
async fn the_operator_works_under_exactly_the_derived_cluster_role() {
    let env = TestEnv::builder()
        .crd::<Widget>()
        .controllers("*")
        .start()
        .await
        .unwrap();
    let admin = env.client();
    let sa = impersonating(&env, SA_USER).await;

    // Without a binding the account may not even list Widgets.
    let denied = Api::<Widget>::all(sa.clone())
        .list(&Default::default())
        .await;
    assert!(
        matches!(&denied, Err(opkit::kube::Error::Api(s)) if s.code == 403),
        "{denied:?}"
    );

    let mgr = manager();
    let yaml = mgr.cluster_role_yaml("widget-operator").unwrap();
    let role: opkit::k8s_openapi::api::rbac::v1::ClusterRole = serde_yaml::from_str(&yaml).unwrap();
    Api::all(admin.clone())
        .create(&PostParams::default(), &role)
        .await
        .unwrap();
    let binding = ClusterRoleBinding {
        metadata: ObjectMeta {
            name: Some("widget-operator".into()),
            ..ObjectMeta::default()
        },
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".into(),
            kind: "ClusterRole".into(),
            name: "widget-operator".into(),
        },
        subjects: Some(vec![Subject {
            kind: "ServiceAccount".into(),
            name: "widget-operator".into(),
            namespace: Some("default".into()),
            ..Subject::default()
        }]),
    };
    Api::<ClusterRoleBinding>::all(admin.clone())
        .create(&PostParams::default(), &binding)
        .await
        .unwrap();

    let running: Running = mgr.start(sa).await.unwrap();
    let widgets: Api<Widget> = Api::namespaced(admin.clone(), "default");
    widgets
        .create(
            &PostParams::default(),
            &Widget::new("w", WidgetSpec { size: 1 }),
        )
        .await
        .unwrap();
    eventually("status Ready written by the operator", || {
        let widgets = widgets.clone();
        async move {
            widgets
                .get("w")
                .await
                .ok()
                .and_then(|w| w.status)
                .is_some_and(|s| conditions::is_true(&s.conditions, "Ready"))
        }
    })
    .await;
    assert!(running.is_leader());
    let cms: Api<ConfigMap> = Api::namespaced(admin.clone(), "default");
    assert!(cms.get_opt("w-child").await.unwrap().is_some());
    widgets.delete("w", &DeleteParams::default()).await.unwrap();
    eventually("finalizer removed and widget gone", || {
        let widgets = widgets.clone();
        async move { matches!(widgets.get_opt("w").await, Ok(None)) }
    })
    .await;
    let metrics = running.metrics().render();
    assert!(
        metrics.contains(r#"controller_runtime_reconcile_errors_total{controller="widgets"} 0"#),
        "a forbidden call would have failed a reconcile:\n{metrics}"
    );
    running.shutdown().await.unwrap();
}
