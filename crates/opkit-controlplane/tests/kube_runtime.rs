//! kube-runtime against the control plane: watcher (list-watch and streaming lists),
//! reflector, Controller, and the finalizer helper, end to end over real HTTPS.

mod common;

use std::sync::Arc;
use std::time::Duration;

use opkit_testenv::eventually;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::CustomResource;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, ResourceExt};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::finalizer::{Event as FinalizerEvent, finalizer};
use kube::runtime::watcher::{self, Event};
use kube::runtime::{WatchStreamExt, reflector};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(
    group = "flights.com",
    version = "v1",
    kind = "FlightTicket",
    namespaced,
    status = "FlightTicketStatus",
    shortname = "ft"
)]
struct FlightTicketSpec {
    from: String,
    to: String,
    number: i64,
}

#[derive(Deserialize, Serialize, Clone, Debug, Default, JsonSchema)]
struct FlightTicketStatus {
    phase: Option<String>,
}

fn ticket(name: &str, number: i64) -> FlightTicket {
    FlightTicket::new(
        name,
        FlightTicketSpec {
            from: "Mumbai".into(),
            to: "London".into(),
            number,
        },
    )
}

fn configmap(name: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}, "data": {"k": "v"}})).unwrap()
}

async fn next_event<S>(stream: &mut S) -> Event<ConfigMap>
where
    S: futures::Stream<Item = Result<Event<ConfigMap>, watcher::Error>> + Unpin,
{
    tokio::time::timeout(Duration::from_secs(10), stream.next())
        .await
        .expect("an event in time")
        .expect("stream open")
        .expect("no watch error")
}

async fn watcher_sees_changes(config: watcher::Config) {
    let plane = common::start().await;
    let client = common::client(&plane).await;
    let cms: Api<ConfigMap> = Api::namespaced(client, "default");
    cms.create(&PostParams::default(), &configmap("before"))
        .await
        .unwrap();
    let mut stream = watcher::watcher(cms.clone(), config).boxed();
    // Initial state: Init, InitApply(before), InitDone.
    let mut initial = Vec::new();
    loop {
        match next_event(&mut stream).await {
            Event::Init => {}
            Event::InitApply(cm) => initial.push(cm.name_any()),
            Event::InitDone => break,
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(initial, vec!["before"]);
    cms.create(&PostParams::default(), &configmap("after"))
        .await
        .unwrap();
    match next_event(&mut stream).await {
        Event::Apply(cm) => assert_eq!(cm.name_any(), "after"),
        other => panic!("unexpected {other:?}"),
    }
    cms.patch(
        "after",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"k": "w"}})),
    )
    .await
    .unwrap();
    match next_event(&mut stream).await {
        Event::Apply(cm) => assert_eq!(cm.data.unwrap()["k"], "w"),
        other => panic!("unexpected {other:?}"),
    }
    cms.delete("after", &DeleteParams::default()).await.unwrap();
    match next_event(&mut stream).await {
        Event::Delete(cm) => assert_eq!(cm.name_any(), "after"),
        other => panic!("unexpected {other:?}"),
    }
}

#[tokio::test]
async fn watcher_with_list_watch_sees_initial_state_then_changes() {
    watcher_sees_changes(watcher::Config::default()).await;
}

#[tokio::test]
async fn watcher_with_streaming_lists_sees_initial_state_then_changes() {
    watcher_sees_changes(watcher::Config::default().streaming_lists()).await;
}

#[tokio::test]
async fn watcher_with_label_selector_only_sees_matching_objects() {
    let plane = common::start().await;
    let client = common::client(&plane).await;
    let cms: Api<ConfigMap> = Api::namespaced(client, "default");
    let config = watcher::Config::default().labels("app=web");
    let mut stream = watcher::watcher(cms.clone(), config)
        .applied_objects()
        .boxed();
    let mut other = configmap("other");
    other.metadata.labels = Some([("app".to_string(), "db".to_string())].into());
    cms.create(&PostParams::default(), &other).await.unwrap();
    let mut web = configmap("web");
    web.metadata.labels = Some([("app".to_string(), "web".to_string())].into());
    cms.create(&PostParams::default(), &web).await.unwrap();
    let seen = tokio::time::timeout(Duration::from_secs(10), stream.try_next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(seen.name_any(), "web");
}

#[tokio::test]
async fn reflector_store_mirrors_the_server() {
    let plane = common::start().await;
    let client = common::client(&plane).await;
    let cms: Api<ConfigMap> = Api::namespaced(client, "default");
    for i in 0..5 {
        cms.create(&PostParams::default(), &configmap(&format!("r{i}")))
            .await
            .unwrap();
    }
    let (reader, writer) = reflector::store();
    let stream = reflector::reflector(
        writer,
        watcher::watcher(cms.clone(), watcher::Config::default()),
    );
    let handle = tokio::spawn(stream.applied_objects().for_each(|_| async {}));
    tokio::time::timeout(Duration::from_secs(10), reader.wait_until_ready())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(reader.len(), 5);
    cms.delete("r0", &DeleteParams::default()).await.unwrap();
    eventually("the reflector sees the delete", || {
        std::future::ready(reader.len() == 4)
    })
    .await;
    handle.abort();
}

#[derive(Debug, thiserror::Error)]
#[error("reconcile failed: {0}")]
struct ReconcileError(String);

#[tokio::test]
async fn controller_reconciles_custom_resources_through_the_status_subresource() {
    let plane = common::start().await;
    let client = common::client(&plane).await;
    install_crd(&client).await;
    let tickets: Api<FlightTicket> = Api::namespaced(client.clone(), "default");
    tickets
        .create(&PostParams::default(), &ticket("t1", 2))
        .await
        .unwrap();

    async fn reconcile(
        obj: Arc<FlightTicket>,
        api: Arc<Api<FlightTicket>>,
    ) -> Result<Action, ReconcileError> {
        let status = json!({"status": {"phase": format!("Booked {}", obj.spec.number)}});
        api.patch_status(
            &obj.name_any(),
            &PatchParams::default(),
            &Patch::Merge(status),
        )
        .await
        .map_err(|e| ReconcileError(e.to_string()))?;
        Ok(Action::await_change())
    }
    fn on_error(_: Arc<FlightTicket>, _: &ReconcileError, _: Arc<Api<FlightTicket>>) -> Action {
        Action::requeue(Duration::from_millis(50))
    }
    let ctx = Arc::new(tickets.clone());
    let controller = tokio::spawn(
        Controller::new(tickets.clone(), watcher::Config::default())
            .run(reconcile, on_error, ctx)
            .for_each(|_| async {}),
    );
    let phase = || async {
        let t = tickets.get("t1").await.unwrap();
        t.status.and_then(|s| s.phase)
    };
    eventually("the controller reconciles", || async {
        phase().await.as_deref() == Some("Booked 2")
    })
    .await;
    tickets
        .patch(
            "t1",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"number": 7}})),
        )
        .await
        .unwrap();
    eventually("the controller sees the spec change", || async {
        phase().await.as_deref() == Some("Booked 7")
    })
    .await;
    controller.abort();
}

async fn install_crd(client: &kube::Client) {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    use kube::CustomResourceExt;
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.create(&PostParams::default(), &FlightTicket::crd())
        .await
        .unwrap();
    let established = kube::runtime::wait::await_condition(
        crds,
        "flighttickets.flights.com",
        kube::runtime::wait::conditions::is_crd_established(),
    );
    tokio::time::timeout(Duration::from_secs(10), established)
        .await
        .unwrap()
        .unwrap();
}

#[tokio::test]
async fn finalizer_helper_runs_cleanup_before_the_object_disappears() {
    let plane = common::start().await;
    let client = common::client(&plane).await;
    install_crd(&client).await;
    let tickets: Api<FlightTicket> = Api::namespaced(client.clone(), "default");
    tickets
        .create(&PostParams::default(), &ticket("fin", 3))
        .await
        .unwrap();
    let cleaned = Arc::new(std::sync::atomic::AtomicBool::new(false));

    const NAME: &str = "flights.com/cancel";
    let run = |cleaned: Arc<std::sync::atomic::AtomicBool>| {
        let tickets = tickets.clone();
        async move {
            let obj = Arc::new(tickets.get("fin").await.unwrap());
            finalizer(&tickets, NAME, obj, |event| async move {
                match event {
                    FinalizerEvent::Apply(_) => Ok::<_, ReconcileError>(Action::await_change()),
                    FinalizerEvent::Cleanup(_) => {
                        cleaned.store(true, std::sync::atomic::Ordering::SeqCst);
                        Ok(Action::await_change())
                    }
                }
            })
            .await
            .map_err(|e| e.to_string())
        }
    };
    // First pass adds the finalizer (JSON patch with a `test` op).
    run(cleaned.clone()).await.unwrap();
    let with = tickets.get("fin").await.unwrap();
    assert_eq!(with.finalizers(), &[NAME.to_string()]);
    // Deleting only marks it.
    tickets
        .delete("fin", &DeleteParams::default())
        .await
        .unwrap();
    let marked = tickets.get("fin").await.unwrap();
    assert!(marked.metadata.deletion_timestamp.is_some());
    // Next pass runs cleanup and removes the finalizer; then the object is gone.
    run(cleaned.clone()).await.unwrap();
    assert!(cleaned.load(std::sync::atomic::Ordering::SeqCst));
    assert!(tickets.get_opt("fin").await.unwrap().is_none());
}
