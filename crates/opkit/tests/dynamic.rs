//! Kinds learned at run time: a controller over `DynamicObject`s of an `ApiResource`, and a
//! dependent kind first met in a reconcile (`Context::owns_dynamic`) whose changes come back
//! to the owner (`Context::owns_dynamic`) or to whomever the operator's mapper names
//! (`Context::watches_dynamic`) — what a generic operator reading its kinds from a file needs.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use opkit::k8s_openapi::api::core::v1::{ConfigMap, Secret};
use opkit::kube::api::{ApiResource, DeleteParams, DynamicObject, PostParams};
use opkit::prelude::*;
use opkit_testenv::{TestEnv, eventually};
use serde_json::json;

const FINALIZER: &str = "test.opkit.dev/cleanup";

#[derive(Debug, thiserror::Error)]
enum TestError {
    #[error(transparent)]
    Kube(#[from] opkit::kube::Error),
    #[error(transparent)]
    Finalizer(#[from] opkit::finalizer::FinalizerError<opkit::kube::Error>),
}

#[derive(Default)]
struct Seen {
    reconciles: AtomicUsize,
    cleanups: AtomicUsize,
}

/// Keeps a Secret `<name>-copy` owned by each ConfigMap (seen as a `DynamicObject`), and
/// learns the Secret kind while reconciling.
async fn reconcile(
    cm: Arc<DynamicObject>,
    ctx: Arc<Context<Arc<Seen>>>,
) -> Result<Action, TestError> {
    ctx.reconciles.fetch_add(1, Ordering::SeqCst);
    let secrets = ApiResource::erase::<Secret>(&());
    ctx.owns_dynamic(&secrets, true, None);
    let client = ctx.client().clone();
    let seen = ctx.data().clone();
    let action = ctx
        .finalize(cm, |event| async move {
            match event {
                opkit::finalizer::Event::Apply(cm) => {
                    let ns = cm.namespace().unwrap_or_default();
                    let api: Api<Secret> = Api::namespaced(client, &ns);
                    let name = format!("{}-copy", cm.name_any());
                    if api.get_opt(&name).await?.is_none() {
                        let owner = cm
                            .controller_owner_ref(&ApiResource::erase::<ConfigMap>(&()))
                            .unwrap_or_default();
                        let secret: Secret = serde_json::from_value(json!({
                            "metadata": {"name": name, "ownerReferences": [owner]},
                            "stringData": {"from": cm.name_any()},
                        }))
                        .unwrap_or_default();
                        api.create(&PostParams::default(), &secret).await?;
                    }
                    Ok(Action::await_change())
                }
                opkit::finalizer::Event::Cleanup(_) => {
                    seen.cleanups.fetch_add(1, Ordering::SeqCst);
                    Ok(Action::await_change())
                }
            }
        })
        .await?;
    Ok(action)
}

fn labelled_copy() -> Predicate<DynamicObject> {
    Predicate::new(|change: &Change<'_, DynamicObject>| {
        change.object().labels().get("copy").map(String::as_str) == Some("yes")
    })
}

#[tokio::test]
async fn a_dynamic_controller_reconciles_its_kind_and_a_dependent_kind_learned_in_a_reconcile() {
    let env = TestEnv::start().await.expect("test env");
    let client = env.client();
    let seen = Arc::new(Seen::default());
    let mut manager = Manager::builder().build();
    manager.add(
        Controller::dynamic("copier", ApiResource::erase::<ConfigMap>(&()), true)
            .finalizer(FINALIZER)
            .with_predicate(labelled_copy())
            .build(reconcile, seen.clone()),
    );
    let running = manager.start(client.clone()).await.expect("manager starts");

    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "default");
    let cm: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "a", "labels": {"copy": "yes"}},
        "data": {"k": "v"},
    }))
    .expect("configmap");
    cms.create(&PostParams::default(), &cm)
        .await
        .expect("create");

    eventually("the finalizer and the owned Secret", || async {
        let has_finalizer = cms
            .get("a")
            .await
            .is_ok_and(|c| c.finalizers().iter().any(|f| f == FINALIZER));
        has_finalizer && secrets.get_opt("a-copy").await.ok().flatten().is_some()
    })
    .await;
    assert_eq!(
        running.watched_kinds(),
        ["ConfigMap", "Secret"],
        "the dependent kind got its own watch when the reconcile named it"
    );

    // Deleting the dependent reconciles the owner through the watch opened at run time.
    secrets
        .delete("a-copy", &DeleteParams::default())
        .await
        .expect("delete the copy");
    eventually("the copy put back", || async {
        secrets
            .get_opt("a-copy")
            .await
            .ok()
            .flatten()
            .is_some_and(|s| s.metadata.deletion_timestamp.is_none())
    })
    .await;

    // The finalizer goes on delete, and the ConfigMap with it.
    cms.delete("a", &DeleteParams::default())
        .await
        .expect("delete");
    eventually("the ConfigMap gone", || async {
        cms.get_opt("a").await.ok().flatten().is_none()
    })
    .await;
    assert!(seen.cleanups.load(Ordering::SeqCst) >= 1, "cleanup ran");
    running.shutdown().await.expect("clean shutdown");
}

#[derive(Default)]
struct Mapped {
    /// Reconciles of the ConfigMap `target`.
    target: AtomicUsize,
    /// Calls of `watches_dynamic` that registered the kind.
    registered: AtomicUsize,
}

/// Watches Secrets from the first reconcile on, mapping each to the ConfigMap its
/// annotation `for` names.
async fn map_secrets(
    cm: Arc<DynamicObject>,
    ctx: Arc<Context<Arc<Mapped>>>,
) -> Result<Action, TestError> {
    if cm.name_any() == "target" {
        ctx.target.fetch_add(1, Ordering::SeqCst);
    }
    let secrets = ApiResource::erase::<Secret>(&());
    let mapper = |secret: &DynamicObject| {
        secret
            .annotations()
            .get("for")
            .map(|name| Request::namespaced(secret.namespace().unwrap_or_default(), name))
            .into_iter()
            .collect()
    };
    if ctx.watches_dynamic(&secrets, true, mapper, None) {
        ctx.registered.fetch_add(1, Ordering::SeqCst);
    }
    Ok(Action::await_change())
}

#[tokio::test]
async fn a_kind_watched_from_a_reconcile_reconciles_the_keys_the_operators_mapper_names() {
    let env = TestEnv::start().await.expect("test env");
    let client = env.client();
    let mapped = Arc::new(Mapped::default());
    let mut manager = Manager::builder().build();
    manager.add(
        Controller::dynamic("mapper", ApiResource::erase::<ConfigMap>(&()), true)
            .build(map_secrets, mapped.clone()),
    );
    let running = manager.start(client.clone()).await.expect("manager starts");
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    for name in ["target", "other"] {
        let cm: ConfigMap =
            serde_json::from_value(json!({"metadata": {"name": name}})).expect("configmap");
        cms.create(&PostParams::default(), &cm)
            .await
            .expect("create");
    }
    eventually("both ConfigMaps reconciled and Secrets watched", || async {
        mapped.target.load(Ordering::SeqCst) >= 1
            && running.watched_kinds().iter().any(|k| k == "Secret")
    })
    .await;
    let before = mapped.target.load(Ordering::SeqCst);
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "default");
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": "s", "annotations": {"for": "target"}},
    }))
    .expect("secret");
    secrets
        .create(&PostParams::default(), &secret)
        .await
        .expect("create the secret");
    eventually("the Secret reconciles the ConfigMap it names", || async {
        mapped.target.load(Ordering::SeqCst) > before
    })
    .await;
    assert_eq!(
        mapped.registered.load(Ordering::SeqCst),
        1,
        "a kind registers once however many reconciles name it"
    );
    running.shutdown().await.expect("clean shutdown");
}
