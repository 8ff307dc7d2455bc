//! CRD conversion: custom resources are stored in the CRD's storage version and read in any
//! served version, converted by a real HTTPS conversion webhook (test CA in `caBundle`) that
//! really transforms fields (v1 `spec.host` + `spec.port` <-> v2 `spec.endpoint:
//! "host:port"`), or, with `strategy: None`, by a change of `apiVersion` only. Failed
//! conversions answer upstream's texts and lose nothing.

mod common;
mod webhook;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use kube::core::{ApiResource, GroupVersionKind};
use opkit_testenv::eventually;
use serde_json::{Value, json};
use webhook::{Reply, WebhookServer};

const GROUP: &str = "conv.opkit.test";
const CRD: &str = "backends.conv.opkit.test";

/// How the test webhook answers.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Mode {
    Convert,
    Failure,
    RenameObjects,
    WrongUid,
    NoObjects,
    NotAReview,
}

/// `obj` (a Backend in v1 or v2) in `desired`.
fn converted(obj: &Value, desired: &str) -> Value {
    let mut out = obj.clone();
    out["apiVersion"] = json!(desired);
    let spec = &obj["spec"];
    out["spec"] = if desired.ends_with("/v2") {
        json!({"endpoint": format!("{}:{}", spec["host"].as_str().unwrap(), spec["port"])})
    } else {
        let (host, port) = spec["endpoint"].as_str().unwrap().split_once(':').unwrap();
        json!({"host": host, "port": port.parse::<i64>().unwrap()})
    };
    out
}

/// A conversion webhook answering as `mode` says.
async fn conversion_webhook(mode: Arc<Mutex<Mode>>) -> WebhookServer {
    WebhookServer::start(move |request| {
        let mode = *mode.lock().unwrap();
        let desired = request["desiredAPIVersion"].as_str().unwrap_or("");
        let objects = request["objects"].as_array().cloned().unwrap_or_default();
        let mut converted: Vec<Value> = objects.iter().map(|o| converted(o, desired)).collect();
        let mut uid = request["uid"].clone();
        let mut result = json!({"status": "Success"});
        match mode {
            Mode::Convert => {}
            Mode::Failure => {
                result = json!({"status": "Failure", "message": "no conversion today"});
            }
            Mode::RenameObjects => {
                for o in &mut converted {
                    o["metadata"]["name"] = json!("renamed");
                }
            }
            Mode::WrongUid => uid = json!("not-the-request"),
            Mode::NoObjects => converted.clear(),
            Mode::NotAReview => return Reply::Raw(json!({"hello": "world"})),
        }
        Reply::Raw(json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "response": {"uid": uid, "convertedObjects": converted, "result": result},
        }))
    })
    .await
}

fn schema(spec: Value) -> Value {
    json!({"openAPIV3Schema": {"type": "object", "properties": {
        "spec": {"type": "object", "properties": spec}}}})
}

/// The Backend CRD: v1 (`host`, `port`) and v2 (`endpoint`), `storage` marking the storage
/// version, converted as `conversion` says.
fn backend_crd(storage: &str, conversion: Value) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": CRD},
        "spec": {
            "group": GROUP, "scope": "Namespaced",
            "names": {"kind": "Backend", "plural": "backends", "singular": "backend"},
            "conversion": conversion,
            "versions": [
                {"name": "v1", "served": true, "storage": storage == "v1",
                    "schema": schema(json!({"host": {"type": "string"}, "port": {"type": "integer"}}))},
                {"name": "v2", "served": true, "storage": storage == "v2",
                    "schema": schema(json!({"endpoint": {"type": "string"}}))},
            ],
        },
    })
}

fn webhook_conversion(server: &WebhookServer) -> Value {
    json!({"strategy": "Webhook", "webhook": {
        "clientConfig": {"url": server.url("/convert"), "caBundle": server.ca_bundle()},
        "conversionReviewVersions": ["v1"],
    }})
}

fn crds(client: &kube::Client) -> Api<CustomResourceDefinition> {
    Api::all(client.clone())
}

async fn install(client: &kube::Client, crd: Value) {
    let crd: CustomResourceDefinition = serde_json::from_value(crd).unwrap();
    crds(client)
        .create(&PostParams::default(), &crd)
        .await
        .expect("the CRD is created");
    let established = kube::runtime::wait::await_condition(
        crds(client),
        CRD,
        kube::runtime::wait::conditions::is_crd_established(),
    );
    tokio::time::timeout(Duration::from_secs(10), established)
        .await
        .expect("the CRD is established in time")
        .expect("the wait works");
}

/// Backends in `version`, in `default`.
fn backends(client: &kube::Client, version: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk(GROUP, version, "Backend");
    let resource = ApiResource::from_gvk_with_plural(&gvk, "backends");
    Api::namespaced_with(client.clone(), "default", &resource)
}

fn backend(version: &str, name: &str, spec: Value) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": format!("{GROUP}/{version}"), "kind": "Backend",
        "metadata": {"name": name}, "spec": spec,
    }))
    .unwrap()
}

fn as_json(obj: &DynamicObject) -> Value {
    serde_json::to_value(obj).unwrap()
}

fn status(err: kube::Error) -> Box<kube::core::Status> {
    match err {
        kube::Error::Api(status) => status,
        other => panic!("expected an API error, got {other}"),
    }
}

/// A control plane with the Backend CRD (storage v1) converted by a fresh webhook.
async fn with_webhook() -> (
    opkit_controlplane::ControlPlane,
    kube::Client,
    WebhookServer,
    Arc<Mutex<Mode>>,
) {
    let mode = Arc::new(Mutex::new(Mode::Convert));
    let server = conversion_webhook(mode.clone()).await;
    let plane = common::start().await;
    let client = common::client(&plane).await;
    install(&client, backend_crd("v1", webhook_conversion(&server))).await;
    (plane, client, server, mode)
}

/// Moves the storage version of the Backend CRD to `version`.
async fn set_storage_version(client: &kube::Client, version: &str) {
    let patch = json!({"spec": {"versions": [
        {"name": "v1", "served": true, "storage": version == "v1",
            "schema": schema(json!({"host": {"type": "string"}, "port": {"type": "integer"}}))},
        {"name": "v2", "served": true, "storage": version == "v2",
            "schema": schema(json!({"endpoint": {"type": "string"}}))},
    ]}});
    crds(client)
        .patch(CRD, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("the storage version moves");
}

#[tokio::test]
async fn an_object_written_in_one_version_is_read_converted_in_the_other() {
    let (_plane, client, server, _mode) = with_webhook().await;
    let (v1, v2) = (backends(&client, "v1"), backends(&client, "v2"));

    v1.create(
        &PostParams::default(),
        &backend("v1", "one", json!({"host": "db", "port": 5432})),
    )
    .await
    .expect("a v1 object is stored as it is");
    let got = as_json(&v2.get("one").await.expect("it reads in v2"));
    assert_eq!(got["apiVersion"], "conv.opkit.test/v2");
    assert_eq!(got["spec"], json!({"endpoint": "db:5432"}));
    assert_eq!(got["metadata"]["name"], "one");

    let created = v2
        .create(
            &PostParams::default(),
            &backend("v2", "two", json!({"endpoint": "cache:6379"})),
        )
        .await
        .expect("a v2 object is stored converted to v1");
    assert_eq!(
        as_json(&created)["spec"],
        json!({"endpoint": "cache:6379"}),
        "the answer to a write is in the request's version"
    );
    let got = as_json(&v1.get("two").await.expect("it reads in v1"));
    assert_eq!(got["apiVersion"], "conv.opkit.test/v1");
    assert_eq!(got["spec"], json!({"host": "cache", "port": 6379}));

    let to_storage = server
        .requests()
        .into_iter()
        .find(|r| {
            r["desiredAPIVersion"] == "conv.opkit.test/v1"
                && r["objects"][0]["metadata"]["name"] == "two"
        })
        .expect("the v2 write was converted to the storage version by the webhook");
    assert_eq!(to_storage["objects"][0]["spec"]["endpoint"], "cache:6379");
    assert!(!to_storage["uid"].as_str().unwrap().is_empty());
}

#[tokio::test]
async fn a_list_of_mixed_storage_versions_converts_with_one_review_in_either_version() {
    let (_plane, client, server, _mode) = with_webhook().await;
    let (v1, v2) = (backends(&client, "v1"), backends(&client, "v2"));
    v1.create(
        &PostParams::default(),
        &backend("v1", "old", json!({"host": "a", "port": 1})),
    )
    .await
    .unwrap();
    set_storage_version(&client, "v2").await;
    v1.create(
        &PostParams::default(),
        &backend("v1", "new", json!({"host": "b", "port": 2})),
    )
    .await
    .unwrap();

    for (api, version, expected) in [
        (
            &v1,
            "v1",
            [
                json!({"host": "b", "port": 2}),
                json!({"host": "a", "port": 1}),
            ],
        ),
        (
            &v2,
            "v2",
            [json!({"endpoint": "b:2"}), json!({"endpoint": "a:1"})],
        ),
    ] {
        let before = server.requests().len();
        let list = api.list(&Default::default()).await.expect("the list works");
        let reviews = &server.requests()[before..];
        assert_eq!(reviews.len(), 1, "one review for the list in {version}");
        assert_eq!(
            reviews[0]["objects"].as_array().unwrap().len(),
            1,
            "only the object stored in the other version is sent"
        );
        let mut items: Vec<Value> = list.items.iter().map(as_json).collect();
        items.sort_by_key(|i| i["metadata"]["name"].as_str().unwrap().to_string());
        assert_eq!(items[0]["metadata"]["name"], "new");
        assert_eq!(items[0]["spec"], expected[0]);
        assert_eq!(items[1]["spec"], expected[1]);
        assert!(
            items
                .iter()
                .all(|i| i["apiVersion"] == format!("{GROUP}/{version}"))
        );
    }
}

#[tokio::test]
async fn a_new_storage_version_takes_new_writes_and_is_recorded_in_stored_versions() {
    let (_plane, client, server, _mode) = with_webhook().await;
    let v1 = backends(&client, "v1");
    v1.create(
        &PostParams::default(),
        &backend("v1", "before", json!({"host": "a", "port": 1})),
    )
    .await
    .unwrap();
    assert!(
        server.requests().is_empty(),
        "a write in the storage version needs no conversion"
    );
    set_storage_version(&client, "v2").await;
    let stored = eventually("both stored versions to be recorded", || async {
        let crd = crds(&client).get(CRD).await.ok()?;
        let stored = crd.status?.stored_versions?;
        (stored.len() == 2).then_some(stored)
    })
    .await;
    assert_eq!(stored, vec!["v1", "v2"]);

    v1.create(
        &PostParams::default(),
        &backend("v1", "after", json!({"host": "b", "port": 2})),
    )
    .await
    .unwrap();
    let requests = server.requests();
    assert!(
        requests
            .iter()
            .any(|r| r["desiredAPIVersion"] == "conv.opkit.test/v2"
                && r["objects"][0]["metadata"]["name"] == "after"),
        "a v1 write is now converted to v2 to be stored: {requests:?}"
    );
    for version in ["v1", "v2"] {
        for name in ["before", "after"] {
            backends(&client, version)
                .get(name)
                .await
                .unwrap_or_else(|e| panic!("{name} reads in {version}: {e}"));
        }
    }
}

/// The object of the next ADDED or MODIFIED event.
async fn next_object(
    events: &mut futures::stream::BoxStream<'_, kube::Result<WatchEvent<DynamicObject>>>,
) -> Value {
    let event = tokio::time::timeout(Duration::from_secs(10), events.next())
        .await
        .expect("an event in time")
        .expect("the watch goes on")
        .expect("the event decodes");
    match event {
        WatchEvent::Added(o) | WatchEvent::Modified(o) => as_json(&o),
        other => panic!("unexpected event {other:?}"),
    }
}

#[tokio::test]
async fn a_watch_in_a_non_storage_version_sends_converted_objects() {
    let (_plane, client, _server, _mode) = with_webhook().await;
    let (v1, v2) = (backends(&client, "v1"), backends(&client, "v2"));
    v1.create(
        &PostParams::default(),
        &backend("v1", "existing", json!({"host": "a", "port": 1})),
    )
    .await
    .unwrap();
    let mut events = v2
        .watch(&WatchParams::default().timeout(30), "0")
        .await
        .expect("the watch starts")
        .boxed();
    let initial = next_object(&mut events).await;
    assert_eq!(initial["apiVersion"], "conv.opkit.test/v2");
    assert_eq!(initial["spec"], json!({"endpoint": "a:1"}));
    v1.create(
        &PostParams::default(),
        &backend("v1", "later", json!({"host": "b", "port": 2})),
    )
    .await
    .unwrap();
    let added = next_object(&mut events).await;
    assert_eq!(added["metadata"]["name"], "later");
    assert_eq!(added["spec"], json!({"endpoint": "b:2"}));
}

#[tokio::test]
async fn a_patch_through_a_non_storage_version_applies_to_the_converted_object() {
    let (_plane, client, _server, _mode) = with_webhook().await;
    let (v1, v2) = (backends(&client, "v1"), backends(&client, "v2"));
    v1.create(
        &PostParams::default(),
        &backend("v1", "p", json!({"host": "a", "port": 1})),
    )
    .await
    .unwrap();
    let patched = v2
        .patch(
            "p",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"endpoint": "c:3"}})),
        )
        .await
        .expect("a merge patch in v2 works");
    assert_eq!(as_json(&patched)["spec"], json!({"endpoint": "c:3"}));
    let got = as_json(&v1.get("p").await.unwrap());
    assert_eq!(got["spec"], json!({"host": "c", "port": 3}));
    assert_eq!(got["metadata"]["generation"], 2, "the spec changed once");
}

#[tokio::test]
async fn the_none_strategy_changes_only_the_api_version_between_two_versions() {
    let plane = common::start().await;
    let client = common::client(&plane).await;
    let mut crd = backend_crd("v1", json!({"strategy": "None"}));
    // Both versions with the same schema, as a `None` conversion needs.
    crd["spec"]["versions"][1]["schema"] = crd["spec"]["versions"][0]["schema"].clone();
    install(&client, crd).await;
    let (v1, v2) = (backends(&client, "v1"), backends(&client, "v2"));
    let created = v2
        .create(
            &PostParams::default(),
            &backend("v2", "n", json!({"host": "a", "port": 1})),
        )
        .await
        .unwrap();
    assert_eq!(as_json(&created)["apiVersion"], "conv.opkit.test/v2");
    let got = as_json(&v1.get("n").await.unwrap());
    assert_eq!(got["apiVersion"], "conv.opkit.test/v1");
    assert_eq!(got["spec"], json!({"host": "a", "port": 1}));
    let listed = v2.list(&Default::default()).await.unwrap();
    assert_eq!(
        as_json(&listed.items[0])["apiVersion"],
        "conv.opkit.test/v2"
    );
}

/// Checks one failing conversion: a read in v2 of the v1-stored `kept` object, a write in v2
/// and a patch in v2 all fail with `message` (and a 500 without a reason, as upstream's), and
/// nothing changes.
async fn assert_fails_and_loses_nothing(client: &kube::Client, check: impl Fn(&str)) {
    let (v1, v2) = (backends(client, "v1"), backends(client, "v2"));
    let before = as_json(&v1.get("kept").await.unwrap());
    let read = status(v2.get("kept").await.expect_err("the read fails"));
    assert_eq!(read.code, 500, "{read:?}");
    assert_eq!(read.reason, "", "upstream gives no reason: {read:?}");
    check(&read.message);
    let write = status(
        v2.create(
            &PostParams::default(),
            &backend("v2", "refused", json!({"endpoint": "x:1"})),
        )
        .await
        .expect_err("the write fails"),
    );
    assert_eq!(write.code, 500, "{write:?}");
    assert!(
        v1.get_opt("refused").await.unwrap().is_none(),
        "nothing was stored"
    );
    let patch = v2
        .patch(
            "kept",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"endpoint": "y:2"}})),
        )
        .await
        .expect_err("the patch fails");
    assert_eq!(status(patch).code, 500);
    assert_eq!(
        as_json(&v1.get("kept").await.unwrap()),
        before,
        "the stored object is unchanged"
    );
}

#[tokio::test]
async fn failed_conversions_answer_upstreams_texts_and_lose_nothing() {
    let (_plane, client, server, mode) = with_webhook().await;
    backends(&client, "v1")
        .create(
            &PostParams::default(),
            &backend("v1", "kept", json!({"host": "a", "port": 1})),
        )
        .await
        .unwrap();
    let prefix = "conversion webhook for conv.opkit.test/v1, Kind=Backend";
    let cases: [(Mode, String); 5] = [
        (
            Mode::Failure,
            format!("{prefix} failed: no conversion today"),
        ),
        (
            Mode::RenameObjects,
            format!("{prefix} returned invalid object: must have the same name: kept != renamed"),
        ),
        (
            Mode::WrongUid,
            format!("{prefix} failed: expected response.uid="),
        ),
        (
            Mode::NoObjects,
            format!("{prefix} returned 0 objects, expected 1"),
        ),
        (
            Mode::NotAReview,
            format!("{prefix} failed: Object 'Kind' is missing in '{{\"hello\":\"world\"}}'"),
        ),
    ];
    *mode.lock().unwrap() = Mode::Failure;
    let mut events = backends(&client, "v2")
        .watch(&WatchParams::default().timeout(30), "0")
        .await
        .expect("the watch starts")
        .boxed();
    let event = tokio::time::timeout(Duration::from_secs(10), events.next())
        .await
        .expect("an event in time")
        .expect("the watch says why it ends")
        .expect("the event decodes");
    match event {
        WatchEvent::Error(e) => {
            assert_eq!(e.code, 500, "{e:?}");
            assert_eq!(e.message, format!("{prefix} failed: no conversion today"));
        }
        other => panic!("expected an ERROR event, got {other:?}"),
    }
    for (m, expected) in cases {
        *mode.lock().unwrap() = m;
        assert_fails_and_loses_nothing(&client, |message| {
            assert!(
                message.starts_with(&expected),
                "{m:?}: {message:?} should start with {expected:?}"
            );
            if m == Mode::WrongUid {
                assert!(message.ends_with(", got \"not-the-request\""), "{message}");
            }
        })
        .await;
    }
    let url = server.url("/convert");
    let addr = server.addr;
    drop(server);
    eventually("the webhook to stop listening", || async {
        tokio::net::TcpStream::connect(addr).await.is_err()
    })
    .await;
    assert_fails_and_loses_nothing(&client, |message| {
        let expected = format!("{prefix} failed: Post \"{url}?timeout=30s\": dial tcp");
        assert!(message.starts_with(&expected), "{message:?}");
    })
    .await;
}

/// The error of a create of `crd`, which must fail.
async fn refused_create(client: &kube::Client, crd: Value) -> Box<kube::core::Status> {
    let crd: CustomResourceDefinition = serde_json::from_value(crd).unwrap();
    status(
        crds(client)
            .create(&PostParams::default(), &crd)
            .await
            .expect_err("the CRD is refused"),
    )
}

#[tokio::test]
async fn conversion_and_stored_versions_are_validated_with_upstreams_texts() {
    let plane = common::start().await;
    let client = common::client(&plane).await;
    let refused = refused_create(&client, backend_crd("v1", json!({"strategy": "Webhook"}))).await;
    assert_eq!(refused.code, 422);
    assert!(
        refused.message.contains(
            "spec.conversion.webhookClientConfig: Required value: required when strategy is set to Webhook"
        ),
        "{}",
        refused.message
    );
    let refused = refused_create(
        &client,
        backend_crd(
        "v1",
        json!({"strategy": "Webhook", "webhook": {
            "clientConfig": {"service": {"namespace": "default", "name": "conv", "path": "convert"}},
            "conversionReviewVersions": ["v2"]}}),
        ),
    )
    .await;
    for text in [
        "spec.conversion.webhookClientConfig.service.path: Invalid value: \"convert\": must start with a '/'",
        "spec.conversion.conversionReviewVersions: Invalid value: []string{\"v2\"}: must include at least one of v1, v1beta1",
    ] {
        assert!(refused.message.contains(text), "{}", refused.message);
    }

    install(&client, backend_crd("v1", json!({"strategy": "None"}))).await;
    set_storage_version(&client, "v2").await;
    let mut only_v2 = serde_json::to_value(crds(&client).get(CRD).await.unwrap()).unwrap();
    assert_eq!(only_v2["status"]["storedVersions"], json!(["v1", "v2"]));
    only_v2["spec"]["versions"]
        .as_array_mut()
        .unwrap()
        .remove(0);
    let only_v2: CustomResourceDefinition = serde_json::from_value(only_v2).unwrap();
    let refused = status(
        crds(&client)
            .replace(CRD, &PostParams::default(), &only_v2)
            .await
            .expect_err("a stored version cannot be dropped"),
    );
    assert_eq!(refused.code, 422);
    assert!(
        refused.message.contains(
            "status.storedVersions[0]: Invalid value: \"v1\": missing from spec.versions; v1 was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in v1 and removes v1 from status.storedVersions"
        ),
        "{}",
        refused.message
    );
}

/// A Mutating- or ValidatingWebhookConfiguration with one webhook for Backends of v1 only,
/// CREATE and UPDATE, under the default `matchPolicy: Equivalent`.
async fn admission_webhook_for_v1(client: &kube::Client, kind: &str, server: &WebhookServer) {
    let webhooks = json!([{
        "name": "backends.conv.opkit.test",
        "admissionReviewVersions": ["v1"], "sideEffects": "None",
        "clientConfig": {"url": server.url("/admit"), "caBundle": server.ca_bundle()},
        "rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": [GROUP],
            "apiVersions": ["v1"], "resources": ["backends"]}],
    }]);
    common::create_admission_object(client, kind, "backends-v1", json!({"webhooks": webhooks}))
        .await
        .expect("the webhook configuration is stored");
}

#[tokio::test]
async fn an_admission_webhook_for_one_version_sees_writes_to_another_converted_by_the_conversion_webhook()
 {
    let (_plane, client, _conversion, _mode) = with_webhook().await;
    // A defaulting webhook written against v1's shape: it moves every port to 9090.
    let mutating = WebhookServer::start(|request| {
        assert_eq!(request["object"]["apiVersion"], "conv.opkit.test/v1");
        Reply::Patch(json!([{"op": "replace", "path": "/spec/port", "value": 9090}]))
    })
    .await;
    let validating = WebhookServer::start(|_| Reply::Allow(vec![])).await;
    admission_webhook_for_v1(&client, "MutatingWebhookConfiguration", &mutating).await;
    admission_webhook_for_v1(&client, "ValidatingWebhookConfiguration", &validating).await;
    let v2 = backends(&client, "v2");

    let created = v2
        .create(
            &PostParams::default(),
            &backend("v2", "db", json!({"endpoint": "db:5432"})),
        )
        .await
        .expect("the v2 write passes the v1 webhooks");
    assert_eq!(
        as_json(&created)["spec"],
        json!({"endpoint": "db:9090"}),
        "the v1 patch is converted back to the request's version"
    );
    let sent = &mutating.requests()[0];
    assert_eq!(sent["kind"]["version"], "v1");
    assert_eq!(sent["requestKind"]["version"], "v2");
    assert_eq!(sent["object"]["spec"], json!({"host": "db", "port": 5432}));
    let seen = &validating.requests()[0];
    assert_eq!(seen["object"]["apiVersion"], "conv.opkit.test/v1");
    assert_eq!(
        seen["object"]["spec"],
        json!({"host": "db", "port": 9090}),
        "validation sees the mutated object in v1's shape"
    );

    let mut update = created.clone();
    update.data["spec"] = json!({"endpoint": "db2:5432"});
    v2.replace("db", &PostParams::default(), &update)
        .await
        .expect("the v2 update passes the v1 webhooks");
    let update_seen = validating.requests().pop().unwrap();
    assert_eq!(update_seen["operation"], "UPDATE");
    assert_eq!(
        update_seen["oldObject"]["spec"],
        json!({"host": "db", "port": 9090}),
        "the old object is converted too"
    );
    assert_eq!(
        update_seen["object"]["spec"],
        json!({"host": "db2", "port": 9090})
    );
}

/// Stores an `admissionregistration.k8s.io/v1` object of `kind` with this `spec`.
async fn admission_object(client: &kube::Client, kind: &str, name: &str, spec: Value) {
    common::create_admission_object(client, kind, name, json!({"spec": spec}))
        .await
        .expect("the admission object is stored");
}

#[tokio::test]
async fn an_admission_policy_for_one_version_evaluates_writes_to_another_converted() {
    let (_plane, client, _conversion, _mode) = with_webhook().await;
    admission_object(
        &client,
        "ValidatingAdmissionPolicy",
        "low-ports",
        json!({
            "matchConstraints": {"resourceRules": [{"operations": ["CREATE"],
                "apiGroups": [GROUP], "apiVersions": ["v1"], "resources": ["backends"]}]},
            "validations": [{"expression": "object.spec.port < 10000",
                "messageExpression": "'port ' + string(object.spec.port) + ' is too high'"}],
        }),
    )
    .await;
    admission_object(
        &client,
        "ValidatingAdmissionPolicyBinding",
        "low-ports",
        json!({"policyName": "low-ports", "validationActions": ["Deny"]}),
    )
    .await;
    let v2 = backends(&client, "v2");
    v2.create(
        &PostParams::default(),
        &backend("v2", "low", json!({"endpoint": "db:5432"})),
    )
    .await
    .expect("a v2 write within the v1 policy is stored");
    let refused = v2
        .create(
            &PostParams::default(),
            &backend("v2", "high", json!({"endpoint": "db:20000"})),
        )
        .await
        .map(|_| ())
        .expect_err("the v1 policy sees the v2 write's port");
    assert_eq!(
        status(refused).message,
        "backends.conv.opkit.test \"high\" is forbidden: ValidatingAdmissionPolicy 'low-ports' \
         with binding 'low-ports' denied request: port 20000 is too high"
    );
}
