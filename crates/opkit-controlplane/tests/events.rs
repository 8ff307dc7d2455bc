//! core/v1 Events and events.k8s.io/v1 Events are one storage seen through two versions, as in
//! kube-apiserver: kube-rs over real HTTPS writes through one API and reads, watches, selects,
//! patches and deletes through the other.

mod common;

use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Event as CoreEvent, Namespace};
use k8s_openapi::api::events::v1::Event as NewEvent;
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use kube::api::{
    Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use serde_json::{Value, json};

fn status_of(err: kube::Error) -> kube::core::Status {
    match err {
        kube::Error::Api(s) => *s,
        other => panic!("expected an API error, got {other:?}"),
    }
}

/// An events.k8s.io/v1 Event as kube-rs' `Recorder` writes it (no deprecated fields).
fn new_event(name: &str, regarding: &str) -> NewEvent {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "default"},
        "eventTime": "2025-01-02T03:04:05.678901Z",
        "reportingController": "example.com/operator",
        "reportingInstance": "operator-0",
        "action": "Reconcile",
        "reason": "Synced",
        "type": "Normal",
        "note": "synced the config map",
        "regarding": {"apiVersion": "v1", "kind": "ConfigMap", "name": regarding,
                      "namespace": "default", "uid": "uid-of-cm"}
    }))
    .unwrap()
}

/// A core/v1 Event as client-go's legacy recorder writes it.
fn core_event(name: &str, involved: &str) -> CoreEvent {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "default"},
        "involvedObject": {"apiVersion": "v1", "kind": "Pod", "name": involved,
                           "namespace": "default", "uid": "uid-of-pod", "fieldPath": "spec.containers{app}"},
        "reason": "Pulled",
        "message": "Container image pulled",
        "source": {"component": "kubelet", "host": "node-1"},
        "firstTimestamp": "2025-01-02T03:00:00Z",
        "lastTimestamp": "2025-01-02T03:10:00Z",
        "count": 4,
        "type": "Normal"
    }))
    .unwrap()
}

/// A control plane, a client for it, and the `default` namespace's events through both APIs.
async fn start() -> (
    opkit_controlplane::ControlPlane,
    kube::Client,
    Api<NewEvent>,
    Api<CoreEvent>,
) {
    let plane = common::start().await;
    let client = common::client(&plane).await;
    let new = Api::namespaced(client.clone(), "default");
    let core = Api::namespaced(client.clone(), "default");
    (plane, client, new, core)
}

/// The sorted names of the objects a field selector lists.
async fn names<K>(api: &Api<K>, selector: &str) -> Vec<String>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let list = api
        .list(&ListParams::default().fields(selector))
        .await
        .unwrap_or_else(|e| panic!("{selector}: {e}"));
    let mut names: Vec<String> = list
        .items
        .iter()
        .filter_map(|o| o.meta().name.clone())
        .collect();
    names.sort();
    names
}

fn rv(meta: &kube::api::ObjectMeta) -> u64 {
    meta.resource_version.as_deref().unwrap().parse().unwrap()
}

/// The next event of a watch (within 5s): its type and object.
async fn next_event<K: std::fmt::Debug>(
    stream: &mut (impl futures::Stream<Item = kube::Result<WatchEvent<K>>> + Unpin),
) -> (&'static str, K) {
    let next = tokio::time::timeout(Duration::from_secs(5), stream.next())
        .await
        .expect("a watch event in time")
        .expect("the watch goes on")
        .expect("a decodable watch event");
    match next {
        WatchEvent::Added(o) => ("ADDED", o),
        WatchEvent::Modified(o) => ("MODIFIED", o),
        WatchEvent::Deleted(o) => ("DELETED", o),
        other => panic!("unexpected {other:?}"),
    }
}

/// GET `path` with `accept`, the body as JSON.
async fn get_json(client: &kube::Client, path: &str, accept: &str) -> Value {
    let req = http::Request::get(path)
        .header("Accept", accept)
        .body(Vec::new())
        .unwrap();
    let text = client.request_text(req).await.unwrap();
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}: {text}"))
}

#[tokio::test]
async fn an_events_k8s_io_event_is_read_as_a_core_event() {
    let (_plane, client, new, core) = start().await;

    let created = new
        .create(&PostParams::default(), &new_event("e1", "app"))
        .await
        .unwrap();
    assert_eq!(created.note.as_deref(), Some("synced the config map"));

    // kube-rs checks apiVersion and kind of every typed answer.
    let got = core.get("e1").await.unwrap();
    assert_eq!(got.involved_object.name.as_deref(), Some("app"));
    assert_eq!(got.involved_object.kind.as_deref(), Some("ConfigMap"));
    assert_eq!(got.involved_object.uid.as_deref(), Some("uid-of-cm"));
    assert_eq!(got.message.as_deref(), Some("synced the config map"));
    assert_eq!(
        got.reporting_component.as_deref(),
        Some("example.com/operator")
    );
    assert_eq!(got.reporting_instance.as_deref(), Some("operator-0"));
    assert_eq!(got.action.as_deref(), Some("Reconcile"));
    assert_eq!(got.reason.as_deref(), Some("Synced"));
    assert_eq!(got.type_.as_deref(), Some("Normal"));
    assert_eq!(got.event_time, created.event_time);
    // Upstream's conversion fills nothing in.
    assert!(got.source.is_none_or(|s| s.component.is_none()));
    assert!(got.count.is_none() && got.first_timestamp.is_none());
    // One object: same uid, same resourceVersion.
    assert_eq!(got.metadata.uid, created.metadata.uid);
    assert_eq!(rv(&got.metadata), rv(&created.metadata));

    let listed = core.list(&ListParams::default()).await.unwrap();
    let names: Vec<_> = listed
        .items
        .iter()
        .filter_map(|e| e.metadata.name.as_deref())
        .collect();
    assert_eq!(names, ["e1"]);

    // The raw JSON names the version asked for, in the object and in the list.
    let raw = get_json(
        &client,
        "/api/v1/namespaces/default/events/e1",
        "application/json",
    )
    .await;
    assert_eq!(
        (raw["apiVersion"].as_str(), raw["kind"].as_str()),
        (Some("v1"), Some("Event"))
    );
    assert!(
        raw.get("note").is_none() && raw.get("regarding").is_none(),
        "{raw}"
    );
    let raw_list = get_json(&client, "/api/v1/events", "application/json").await;
    assert_eq!(raw_list["kind"], "EventList");
    assert_eq!(raw_list["items"][0]["apiVersion"], "v1");
    let yaml = {
        let req = http::Request::get("/apis/events.k8s.io/v1/namespaces/default/events/e1")
            .header("Accept", "application/yaml")
            .body(Vec::new())
            .unwrap();
        client.request_text(req).await.unwrap()
    };
    assert!(yaml.contains("apiVersion: events.k8s.io/v1"), "{yaml}");
    assert!(yaml.contains("note: synced the config map"), "{yaml}");
}

#[tokio::test]
async fn a_core_event_is_read_as_an_events_k8s_io_event() {
    let (_plane, client, new, core) = start().await;

    let created = core
        .create(&PostParams::default(), &core_event("e2", "web-0"))
        .await
        .unwrap();
    let got = new.get("e2").await.unwrap();
    let regarding = got.regarding.clone().unwrap();
    assert_eq!(regarding.name.as_deref(), Some("web-0"));
    assert_eq!(
        regarding.field_path.as_deref(),
        Some("spec.containers{app}")
    );
    assert_eq!(got.note.as_deref(), Some("Container image pulled"));
    let source = got.deprecated_source.clone().unwrap();
    assert_eq!(source.component.as_deref(), Some("kubelet"));
    assert_eq!(source.host.as_deref(), Some("node-1"));
    assert_eq!(got.deprecated_count, Some(4));
    assert_eq!(got.deprecated_first_timestamp, created.first_timestamp);
    assert_eq!(got.deprecated_last_timestamp, created.last_timestamp);
    assert_eq!(got.reason.as_deref(), Some("Pulled"));
    assert_eq!(rv(&got.metadata), rv(&created.metadata));

    let listed = new.list(&ListParams::default()).await.unwrap();
    assert_eq!(listed.items.len(), 1);
    assert_eq!(
        listed.items[0].note.as_deref(),
        Some("Container image pulled")
    );
    let raw = get_json(
        &client,
        "/apis/events.k8s.io/v1/namespaces/default/events",
        "application/json",
    )
    .await;
    assert_eq!(raw["apiVersion"], "events.k8s.io/v1");
    assert_eq!(raw["items"][0]["apiVersion"], "events.k8s.io/v1");
    assert!(raw["items"][0].get("message").is_none(), "{raw}");
}

#[tokio::test]
async fn patches_through_one_version_are_seen_through_the_other() {
    let (_plane, client, new, core) = start().await;
    let created = new
        .create(&PostParams::default(), &new_event("e3", "app"))
        .await
        .unwrap();

    // The operator path: kube-rs' Recorder merge-patches a series onto its event.
    let merge = json!({
        "series": {"count": 2, "lastObservedTime": "2025-01-02T03:05:00.000000Z"},
        "note": "synced again"
    });
    let patched = new
        .patch("e3", &PatchParams::default(), &Patch::Merge(&merge))
        .await
        .unwrap();
    assert_eq!(patched.series.as_ref().unwrap().count, 2);
    assert!(rv(&patched.metadata) > rv(&created.metadata));
    let seen = core.get("e3").await.unwrap();
    assert_eq!(seen.series.as_ref().unwrap().count, Some(2));
    assert_eq!(seen.message.as_deref(), Some("synced again"));
    assert_eq!(rv(&seen.metadata), rv(&patched.metadata));

    // A strategic merge patch of the core shape, seen through events.k8s.io.
    let strategic = json!({"message": "from core", "count": 7});
    let by_core = core
        .patch("e3", &PatchParams::default(), &Patch::Strategic(&strategic))
        .await
        .unwrap();
    assert_eq!(by_core.message.as_deref(), Some("from core"));
    let seen = new.get("e3").await.unwrap();
    assert_eq!(seen.note.as_deref(), Some("from core"));
    assert_eq!(seen.deprecated_count, Some(7));
    assert_eq!(rv(&seen.metadata), rv(&by_core.metadata));

    // A JSON patch addresses the fields of the request's version.
    let req = http::Request::patch("/apis/events.k8s.io/v1/namespaces/default/events/e3")
        .header("Content-Type", "application/json-patch+json")
        .body(
            serde_json::to_vec(&json!([
                {"op": "test", "path": "/note", "value": "from core"},
                {"op": "replace", "path": "/note", "value": "json patched"}
            ]))
            .unwrap(),
        )
        .unwrap();
    let answer: Value = client.request(req).await.unwrap();
    assert_eq!(answer["apiVersion"], "events.k8s.io/v1");
    assert_eq!(answer["note"], "json patched");
    assert_eq!(
        core.get("e3").await.unwrap().message.as_deref(),
        Some("json patched")
    );

    // A merge patch of a field the version does not have changes nothing (it is dropped as
    // unknown, as upstream does).
    let unchanged = new
        .patch(
            "e3",
            &PatchParams::default(),
            &Patch::Merge(json!({"message": "not a field here"})),
        )
        .await
        .unwrap();
    assert_eq!(unchanged.note.as_deref(), Some("json patched"));

    // A replace through core keeps the object one: the events.k8s.io view follows.
    let mut current = core.get("e3").await.unwrap();
    current.reason = Some("Replaced".into());
    core.replace("e3", &PostParams::default(), &current)
        .await
        .unwrap();
    assert_eq!(
        new.get("e3").await.unwrap().reason.as_deref(),
        Some("Replaced")
    );
}

#[tokio::test]
async fn server_side_apply_through_events_k8s_io_records_its_version() {
    let (_plane, _, new, core) = start().await;
    let applied = json!({
        "apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": {"name": "e4", "namespace": "default"},
        "eventTime": "2025-01-02T03:04:05.000000Z",
        "reportingController": "ctl", "reportingInstance": "ctl-0",
        "action": "Apply", "reason": "Applied", "type": "Normal", "note": "first",
        "regarding": {"kind": "ConfigMap", "name": "app", "namespace": "default"}
    });
    let params = PatchParams::apply("ctl");
    let created = new
        .patch("e4", &params, &Patch::Apply(&applied))
        .await
        .unwrap();
    let managed = created.metadata.managed_fields.clone().unwrap();
    assert_eq!(managed.len(), 1);
    assert_eq!(managed[0].api_version.as_deref(), Some("events.k8s.io/v1"));
    let fields = serde_json::to_value(&managed[0].fields_v1).unwrap();
    assert!(fields.get("f:note").is_some(), "{fields}");

    let mut again = applied.clone();
    again["note"] = json!("second");
    new.patch("e4", &params, &Patch::Apply(&again))
        .await
        .unwrap();
    let seen = core.get("e4").await.unwrap();
    assert_eq!(seen.message.as_deref(), Some("second"));
    // managedFields are metadata: the same entries whichever version reads them.
    assert_eq!(
        seen.metadata.managed_fields.unwrap()[0]
            .api_version
            .as_deref(),
        Some("events.k8s.io/v1")
    );
    // An apply must name the endpoint's version.
    let mut wrong = applied.clone();
    wrong["apiVersion"] = json!("v1");
    let err = status_of(
        new.patch("e4", &params, &Patch::Apply(&wrong))
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 400, "{err:?}");
}

#[tokio::test]
async fn resource_versions_and_watch_history_are_shared() {
    let (_plane, client, new, core) = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");

    let start = new.list(&ListParams::default()).await.unwrap();
    let from = start.metadata.resource_version.clone().unwrap();
    let mut core_watch = core
        .watch(&WatchParams::default(), &from)
        .await
        .unwrap()
        .boxed();
    let mut new_watch = new
        .watch(&WatchParams::default(), &from)
        .await
        .unwrap()
        .boxed();

    let a = new
        .create(&PostParams::default(), &new_event("a", "app"))
        .await
        .unwrap();
    // Another kind's write in between: events share the store's one revision sequence.
    let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "x"}})).unwrap();
    let cm = cms.create(&PostParams::default(), &cm).await.unwrap();
    let b = core
        .create(&PostParams::default(), &core_event("b", "web-0"))
        .await
        .unwrap();
    assert!(rv(&a.metadata) < rv(&cm.metadata) && rv(&cm.metadata) < rv(&b.metadata));
    new.patch(
        "b",
        &PatchParams::default(),
        &Patch::Merge(json!({"note": "changed"})),
    )
    .await
    .unwrap();
    core.delete("a", &DeleteParams::default()).await.unwrap();

    let mut seen_core = Vec::new();
    let mut seen_new = Vec::new();
    for _ in 0..4 {
        let (t, e) = next_event(&mut core_watch).await;
        seen_core.push((t, e.metadata.name, e.message));
        let (t, e) = next_event(&mut new_watch).await;
        seen_new.push((t, e.metadata.name, e.note));
    }
    let expected = |pulled: &str| {
        vec![
            (
                "ADDED",
                Some("a".to_string()),
                Some("synced the config map".to_string()),
            ),
            ("ADDED", Some("b".to_string()), Some(pulled.to_string())),
            (
                "MODIFIED",
                Some("b".to_string()),
                Some("changed".to_string()),
            ),
            (
                "DELETED",
                Some("a".to_string()),
                Some("synced the config map".to_string()),
            ),
        ]
    };
    assert_eq!(seen_core, expected("Container image pulled"));
    assert_eq!(seen_new, expected("Container image pulled"));

    // Both lists are the same list at the same revision.
    let core_list = core.list(&ListParams::default()).await.unwrap();
    let new_list = new.list(&ListParams::default()).await.unwrap();
    assert_eq!(core_list.items.len(), 1);
    assert_eq!(new_list.items.len(), 1);
    assert_eq!(
        core_list.items[0].metadata.resource_version,
        new_list.items[0].metadata.resource_version
    );
}

#[tokio::test]
async fn field_selectors_work_in_both_versions() {
    let (_plane, _, new, core) = start().await;
    new.create(&PostParams::default(), &new_event("new-a", "app"))
        .await
        .unwrap();
    new.create(&PostParams::default(), &new_event("new-b", "other"))
        .await
        .unwrap();
    core.create(&PostParams::default(), &core_event("core-a", "app"))
        .await
        .unwrap();

    // What `kubectl describe` sends, finding an event written through events.k8s.io.
    assert_eq!(
        names(&core, "involvedObject.name=app,involvedObject.namespace=default,involvedObject.kind=ConfigMap,involvedObject.uid=uid-of-cm").await,
        ["new-a"]
    );
    assert_eq!(
        names(&core, "involvedObject.name=app").await,
        ["core-a", "new-a"]
    );
    assert_eq!(
        names(&core, "reportingComponent=example.com/operator").await,
        ["new-a", "new-b"]
    );
    // `source` falls back to the reporting component when the event has no source.
    assert_eq!(
        names(&core, "source=example.com/operator").await,
        ["new-a", "new-b"]
    );
    assert_eq!(names(&core, "source=kubelet").await, ["core-a"]);
    assert_eq!(names(&core, "type=Normal,reason=Pulled").await, ["core-a"]);

    assert_eq!(names(&new, "regarding.name=app").await, ["core-a", "new-a"]);
    assert_eq!(
        names(
            &new,
            "regarding.kind=Pod,regarding.fieldPath=spec.containers{app}"
        )
        .await,
        ["core-a"]
    );
    assert_eq!(
        names(&new, "reportingController=example.com/operator").await,
        ["new-a", "new-b"]
    );
    assert_eq!(
        names(&new, "metadata.name!=new-a,type=Normal").await,
        ["core-a", "new-b"]
    );
    assert_eq!(names(&new, "source=kubelet").await, ["core-a"]);

    // Each version accepts its own labels only, with upstream's message.
    let err = status_of(
        new.list(&ListParams::default().fields("involvedObject.name=app"))
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 400);
    assert_eq!(
        err.message,
        "field label not supported: involvedObject.name"
    );
    let err = status_of(
        core.list(&ListParams::default().fields("regarding.name=app"))
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 400);
    assert_eq!(err.message, "field label not supported: regarding.name");

    // A watch with a selector, through the other version.
    let mut watch = core
        .watch(
            &WatchParams::default().fields("involvedObject.name=later"),
            "0",
        )
        .await
        .unwrap()
        .boxed();
    new.create(&PostParams::default(), &new_event("new-c", "later"))
        .await
        .unwrap();
    let (t, e) = next_event(&mut watch).await;
    assert_eq!((t, e.metadata.name.as_deref()), ("ADDED", Some("new-c")));
}

#[tokio::test]
async fn deleting_through_one_version_removes_it_from_both() {
    let (_plane, _, new, core) = start().await;
    new.create(&PostParams::default(), &new_event("d1", "app"))
        .await
        .unwrap();
    core.create(&PostParams::default(), &core_event("d2", "web-0"))
        .await
        .unwrap();

    core.delete("d1", &DeleteParams::default()).await.unwrap();
    assert_eq!(status_of(new.get("d1").await.unwrap_err()).code, 404);
    assert_eq!(status_of(core.get("d1").await.unwrap_err()).code, 404);
    let err = status_of(
        new.delete("d1", &DeleteParams::default())
            .await
            .unwrap_err(),
    );
    assert_eq!(
        (err.code, err.details.unwrap().group.as_str()),
        (404, "events.k8s.io")
    );

    new.delete("d2", &DeleteParams::default()).await.unwrap();
    assert_eq!(status_of(core.get("d2").await.unwrap_err()).code, 404);

    // A name is taken in both: creating it again through the other version conflicts.
    new.create(&PostParams::default(), &new_event("d3", "app"))
        .await
        .unwrap();
    let err = status_of(
        core.create(&PostParams::default(), &core_event("d3", "web-0"))
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 409);

    // deletecollection answers in the version asked for.
    core.create(&PostParams::default(), &core_event("d4", "web-0"))
        .await
        .unwrap();
    let gone = new
        .delete_collection(&DeleteParams::default(), &ListParams::default())
        .await
        .unwrap();
    let list = gone.left().expect("a list of what was deleted");
    let mut notes: Vec<_> = list.items.iter().filter_map(|e| e.note.clone()).collect();
    notes.sort();
    assert_eq!(notes, ["Container image pulled", "synced the config map"]);
    assert!(
        core.list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
}

#[tokio::test]
async fn dry_runs_answer_in_the_requested_version_and_store_nothing() {
    let (_plane, _, new, core) = start().await;
    let dry = PostParams {
        dry_run: true,
        ..Default::default()
    };
    let answer = new.create(&dry, &new_event("dry", "app")).await.unwrap();
    assert_eq!(answer.note.as_deref(), Some("synced the config map"));
    assert_eq!(status_of(core.get("dry").await.unwrap_err()).code, 404);

    core.create(&PostParams::default(), &core_event("wet", "web-0"))
        .await
        .unwrap();
    let patched = new
        .patch(
            "wet",
            &PatchParams {
                dry_run: true,
                ..Default::default()
            },
            &Patch::Merge(json!({"note": "would change"})),
        )
        .await
        .unwrap();
    assert_eq!(patched.note.as_deref(), Some("would change"));
    assert_eq!(
        core.get("wet").await.unwrap().message.as_deref(),
        Some("Container image pulled")
    );
}

#[tokio::test]
async fn tables_show_events_k8s_io_events_with_their_event_time() {
    let plane = common::start().await;
    let client = common::client(&plane).await;
    let new: Api<NewEvent> = Api::namespaced(client.clone(), "default");
    let mut ev = new_event("t1", "app");
    ev.event_time = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime(
        jiff::Timestamp::now() - jiff::SignedDuration::from_secs(120),
    ));
    new.create(&PostParams::default(), &ev).await.unwrap();
    const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";
    for path in [
        "/api/v1/namespaces/default/events",
        "/apis/events.k8s.io/v1/namespaces/default/events",
    ] {
        let table = get_json(&client, path, TABLE).await;
        assert_eq!(table["kind"], "Table", "{table}");
        let columns: Vec<&str> = table["columnDefinitions"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|c| c["name"].as_str())
            .collect();
        let cells = table["rows"][0]["cells"].as_array().unwrap();
        let cell = |name: &str| {
            let i = columns.iter().position(|c| *c == name).unwrap();
            cells[i].clone()
        };
        // The columns `kubectl get events` shows (priority 0), and the source.
        assert_eq!(cell("Last Seen"), "2m", "{path}: {table}");
        assert_eq!(cell("Type"), "Normal");
        assert_eq!(cell("Reason"), "Synced");
        assert_eq!(cell("Object"), "configmap/app");
        assert_eq!(cell("Message"), "synced the config map");
        assert_eq!(cell("Source"), "example.com/operator, operator-0");
        assert_eq!(table["rows"][0]["object"]["metadata"]["name"], "t1");
    }
}

#[tokio::test]
async fn rbac_stays_per_api_group() {
    let plane = common::start().await;
    let admin = common::client(&plane).await;
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": "team"}})).unwrap();
    Api::<Namespace>::all(admin.clone())
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
    for (user, group) in [("new-only", "events.k8s.io"), ("core-only", "")] {
        let role: Role = serde_json::from_value(json!({
            "metadata": {"name": user},
            "rules": [{"apiGroups": [group], "resources": ["events"],
                       "verbs": ["get", "list", "create"]}]
        }))
        .unwrap();
        Api::<Role>::namespaced(admin.clone(), "team")
            .create(&PostParams::default(), &role)
            .await
            .unwrap();
        let binding: RoleBinding = serde_json::from_value(json!({
            "metadata": {"name": user},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": user},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]
        }))
        .unwrap();
        Api::<RoleBinding>::namespaced(admin.clone(), "team")
            .create(&PostParams::default(), &binding)
            .await
            .unwrap();
    }
    let client_for = |user: &'static str| {
        let kubeconfig = plane.user_kubeconfig(user, &[]).unwrap();
        async move { common::client_for_kubeconfig(&kubeconfig).await }
    };
    let new_only = client_for("new-only").await;
    let core_only = client_for("core-only").await;

    let mut ev = new_event("r1", "app");
    ev.metadata.namespace = Some("team".into());
    Api::<NewEvent>::namespaced(new_only.clone(), "team")
        .create(&PostParams::default(), &ev)
        .await
        .unwrap();
    let err = status_of(
        Api::<CoreEvent>::namespaced(new_only.clone(), "team")
            .get("r1")
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 403);
    // The other user reads the same object through the group it is granted.
    let seen = Api::<CoreEvent>::namespaced(core_only.clone(), "team")
        .get("r1")
        .await
        .unwrap();
    assert_eq!(seen.message.as_deref(), Some("synced the config map"));
    let err = status_of(
        Api::<NewEvent>::namespaced(core_only, "team")
            .list(&ListParams::default())
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 403);
}

#[tokio::test]
async fn bad_events_get_status_errors_in_the_shape_the_client_sent() {
    let plane = common::start().await;
    let client = common::client(&plane).await;
    let post = |path: &'static str, body: Value| {
        let client = client.clone();
        async move {
            let req = http::Request::post(path)
                .header("Content-Type", "application/json")
                .body(serde_json::to_vec(&body).unwrap())
                .unwrap();
            status_of(client.request::<Value>(req).await.unwrap_err())
        }
    };
    const NEW: &str = "/apis/events.k8s.io/v1/namespaces/default/events";
    const CORE: &str = "/api/v1/namespaces/default/events";
    // Decoding errors name the field of the version the client wrote.
    let err = post(
        NEW,
        json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
               "metadata": {"name": "bad"}, "deprecatedCount": "three"}),
    )
    .await;
    assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"), "{err:?}");
    assert!(err.message.contains("deprecatedCount"), "{err:?}");
    let err = post(
        CORE,
        json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "bad"},
               "count": "three"}),
    )
    .await;
    assert_eq!(err.code, 422, "{err:?}");
    assert!(err.message.contains("count"), "{err:?}");
    // A body of the other version is refused, as upstream does.
    let err = post(
        NEW,
        json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "bad"}}),
    )
    .await;
    assert_eq!(err.code, 400, "{err:?}");
    let err = post(
        CORE,
        json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "bad"}}),
    )
    .await;
    assert_eq!(err.code, 400, "{err:?}");
    // Unknown fields of one version are unknown, even if the other version has them.
    let req = http::Request::post(format!("{NEW}?fieldValidation=Strict"))
        .header("Content-Type", "application/json")
        .body(
            serde_json::to_vec(&json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
                "metadata": {"name": "strict"}, "message": "core's name"}))
            .unwrap(),
        )
        .unwrap();
    let err = status_of(client.request::<Value>(req).await.unwrap_err());
    assert_eq!(err.code, 400, "{err:?}");
    assert!(err.message.contains("unknown field \"message\""), "{err:?}");
    // A malformed patch is a 400 or 422 Status, never a crash.
    let new: Api<NewEvent> = Api::namespaced(client.clone(), "default");
    new.create(&PostParams::default(), &new_event("ok", "app"))
        .await
        .unwrap();
    let err = status_of(
        new.patch(
            "ok",
            &PatchParams::default(),
            &Patch::Merge(json!({"deprecatedCount": "many"})),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(err.code, 422, "{err:?}");
}

#[tokio::test]
async fn kube_runtime_recorder_events_are_core_events() {
    use kube::runtime::events::{Event, EventType, Recorder, Reporter};
    let plane = common::start().await;
    let client = common::client(&plane).await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "app"}})).unwrap();
    let cm = cms.create(&PostParams::default(), &cm).await.unwrap();
    let reference = kube::Resource::object_ref(&cm, &());
    let recorder = Recorder::new(
        client.clone(),
        Reporter {
            controller: "example.com/operator".into(),
            instance: None,
        },
    );
    let event = Event {
        type_: EventType::Warning,
        reason: "Broken".into(),
        note: Some("it broke".into()),
        action: "Check".into(),
        secondary: None,
    };
    recorder.publish(&event, &reference).await.unwrap();
    recorder.publish(&event, &reference).await.unwrap();

    let uid = cm.metadata.uid.unwrap();
    let selector = format!(
        "involvedObject.name=app,involvedObject.namespace=default,involvedObject.kind=ConfigMap,involvedObject.uid={uid}"
    );
    let core: Api<CoreEvent> = Api::namespaced(client, "default");
    let found = core
        .list(&ListParams::default().fields(&selector))
        .await
        .unwrap();
    assert_eq!(found.items.len(), 1, "{found:?}");
    let ev = &found.items[0];
    assert_eq!(ev.type_.as_deref(), Some("Warning"));
    assert_eq!(ev.message.as_deref(), Some("it broke"));
    assert_eq!(ev.series.as_ref().and_then(|s| s.count), Some(2));
}

#[tokio::test]
async fn events_stored_under_the_old_events_k8s_io_keys_move_on_start() {
    let dir = tempfile::tempdir().unwrap();
    let config = || opkit_controlplane::Config {
        data_dir: Some(dir.path().to_path_buf()),
        listen: "127.0.0.1:0".parse().unwrap(),
        kubeconfig: None,
        ..opkit_controlplane::Config::ephemeral()
    };
    {
        let plane = opkit_controlplane::ControlPlane::start(config())
            .await
            .unwrap();
        // As an earlier opkit stored them: events.k8s.io shape, under their own keys.
        let old = json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": "old", "namespace": "default", "uid": "u-old",
                         "resourceVersion": "1", "creationTimestamp": "2025-01-01T00:00:00Z"},
            "reason": "Before", "note": "written before the move",
            "regarding": {"kind": "ConfigMap", "name": "app", "namespace": "default"}});
        plane
            .server()
            .store()
            .transact(|txn| {
                txn.put(
                    "/events.k8s.io/events/default/old",
                    serde_json::to_vec(&old).unwrap().into(),
                );
                Ok::<_, opkit_store::StoreError>(())
            })
            .await
            .unwrap();
        plane.shutdown().await;
    }
    let plane = opkit_controlplane::ControlPlane::start(config())
        .await
        .unwrap();
    let client = common::client(&plane).await;
    let core = Api::<CoreEvent>::namespaced(client.clone(), "default")
        .get("old")
        .await
        .unwrap();
    assert_eq!(core.message.as_deref(), Some("written before the move"));
    assert_eq!(core.metadata.uid.as_deref(), Some("u-old"));
    let new = Api::<NewEvent>::namespaced(client, "default")
        .get("old")
        .await
        .unwrap();
    assert_eq!(new.reason.as_deref(), Some("Before"));
    assert_eq!(
        new.metadata.resource_version,
        core.metadata.resource_version
    );
    assert!(
        plane
            .server()
            .store()
            .get("/events.k8s.io/events/default/old")
            .is_none()
    );
}

#[tokio::test]
async fn protobuf_and_table_watches_answer_in_the_requested_version() {
    use prost::Message;
    let plane = common::start().await;
    let client = common::client(&plane).await;
    let core: Api<CoreEvent> = Api::namespaced(client.clone(), "default");
    core.create(&PostParams::default(), &core_event("p1", "web-0"))
        .await
        .unwrap();

    let req = http::Request::get("/apis/events.k8s.io/v1/namespaces/default/events/p1")
        .header("Accept", "application/vnd.kubernetes.protobuf")
        .body(Vec::new())
        .unwrap();
    let resp = client.send(req.map(Into::into)).await.unwrap();
    assert_eq!(resp.status(), 200);
    let body = http_body_util::BodyExt::collect(resp.into_body())
        .await
        .unwrap()
        .to_bytes();
    assert_eq!(&body[..4], b"k8s\0");
    let unknown = k8s_pb::apimachinery::pkg::runtime::Unknown::decode(&body[4..]).unwrap();
    let type_meta = unknown.type_meta.unwrap();
    assert_eq!(type_meta.api_version.as_deref(), Some("events.k8s.io/v1"));
    let event = k8s_pb::api::events::v1::Event::decode(unknown.raw.unwrap().as_slice()).unwrap();
    assert_eq!(event.note.as_deref(), Some("Container image pulled"));
    assert_eq!(event.deprecated_count, Some(4));

    // `kubectl get events.events.k8s.io -w`: Table frames of the events.k8s.io shape.
    let req = http::Request::get(
        "/apis/events.k8s.io/v1/namespaces/default/events?watch=1&timeoutSeconds=1",
    )
    .header(
        "Accept",
        "application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
    )
    .body(Vec::new())
    .unwrap();
    let text = client.request_text(req).await.unwrap();
    let first: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(first["type"], "ADDED", "{text}");
    let row = &first["object"]["rows"][0];
    assert_eq!(row["cells"][3], "pod/web-0", "{text}");
    assert_eq!(row["cells"][6], "Container image pulled", "{text}");
}
