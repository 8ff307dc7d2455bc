//! Server-side apply and managedFields through kube-rs over real HTTPS: two managers on a
//! Deployment and on a custom resource, conflicts (409 with `FieldManagerConflict` causes),
//! `force`, pruning of fields a manager stops applying, apply-creates, no-op applies, dry runs,
//! and the `Update` entries of PUT and merge patch.

mod common;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::{Value, json};

fn api_error(e: kube::Error) -> kube::core::Status {
    match e {
        kube::Error::Api(s) => *s,
        other => panic!("expected an API error, got {other:?}"),
    }
}

fn deployment(name: &str, replicas: i64, image: &str) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "app", "image": image}]}
            }
        }
    })
}

/// The managedFields entries of an object, as JSON.
fn entries<K: serde::Serialize>(obj: &K) -> Vec<Value> {
    let v = serde_json::to_value(obj).unwrap();
    v["metadata"]["managedFields"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// The `fieldsV1` of one manager's entry with this operation.
fn fields_of(entries: &[Value], manager: &str, operation: &str) -> Option<Value> {
    entries
        .iter()
        .find(|e| e["manager"] == manager && e["operation"] == operation)
        .map(|e| e["fieldsV1"].clone())
}

/// A raw request through the client's transport: (status code, body as JSON).
async fn raw(client: &kube::Client, req: http::Request<Vec<u8>>) -> (u16, Value) {
    let resp = client
        .send(req.map(kube::client::Body::from))
        .await
        .expect("request is sent");
    let code = resp.status().as_u16();
    let bytes = http_body_util::BodyExt::collect(resp.into_body())
        .await
        .expect("body is read")
        .to_bytes();
    (code, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

fn apply_request(path: &str, query: &str, body: &str) -> http::Request<Vec<u8>> {
    http::Request::patch(format!("{path}?{query}"))
        .header("content-type", "application/apply-patch+yaml")
        .body(body.as_bytes().to_vec())
        .unwrap()
}

#[tokio::test]
async fn a_second_manager_changing_a_field_gets_a_409_naming_field_and_manager_and_force_takes_it_over()
 {
    let plane = common::start().await;
    let client = common::client(&plane).await;
    let api: Api<Deployment> = Api::namespaced(client.clone(), "default");

    api.patch(
        "web",
        &PatchParams::apply("mgr-a"),
        &Patch::Apply(deployment("web", 1, "nginx:1")),
    )
    .await
    .expect("first apply creates the deployment");

    let other = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web"}, "spec": {"replicas": 3}});
    let err = api_error(
        api.patch("web", &PatchParams::apply("mgr-b"), &Patch::Apply(&other))
            .await
            .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (409, "Conflict"));
    assert_eq!(
        err.message,
        "Apply failed with 1 conflict: conflict with \"mgr-a\": .spec.replicas"
    );
    let causes = err.details.expect("details").causes;
    assert_eq!(causes.len(), 1);
    assert_eq!(causes[0].reason, "FieldManagerConflict");
    assert_eq!(causes[0].message, "conflict with \"mgr-a\"");
    assert_eq!(causes[0].field, ".spec.replicas");

    let forced = api
        .patch(
            "web",
            &PatchParams::apply("mgr-b").force(),
            &Patch::Apply(&other),
        )
        .await
        .expect("a forced apply succeeds");
    assert_eq!(forced.spec.as_ref().unwrap().replicas, Some(3));
    let managed = entries(&forced);
    let a = fields_of(&managed, "mgr-a", "Apply").expect("mgr-a keeps an entry");
    assert!(a["f:spec"].get("f:replicas").is_none(), "{a}");
    assert!(a["f:spec"].get("f:template").is_some());
    assert_eq!(
        fields_of(&managed, "mgr-b", "Apply"),
        Some(json!({"f:spec": {"f:replicas": {}}}))
    );
}

#[tokio::test]
async fn applying_the_same_value_as_another_manager_shares_ownership() {
    let plane = common::start().await;
    let client = common::client(&plane).await;
    let api: Api<Deployment> = Api::namespaced(client.clone(), "default");
    api.patch(
        "shared",
        &PatchParams::apply("one"),
        &Patch::Apply(deployment("shared", 2, "nginx:1")),
    )
    .await
    .unwrap();
    let same = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "shared"}, "spec": {"replicas": 2}});
    let out = api
        .patch("shared", &PatchParams::apply("two"), &Patch::Apply(&same))
        .await
        .expect("the same value is no conflict");
    let managed = entries(&out);
    for m in ["one", "two"] {
        let f = fields_of(&managed, m, "Apply").unwrap();
        assert!(f["f:spec"].get("f:replicas").is_some(), "{m}: {f}");
    }
}

#[tokio::test]
async fn removing_a_field_from_the_applied_configuration_deletes_it() {
    let plane = common::start().await;
    let client = common::client(&plane).await;
    let api: Api<Deployment> = Api::namespaced(client.clone(), "default");
    let mut config = deployment("prune", 1, "nginx:1");
    config["metadata"]["annotations"] = json!({"keep": "1", "drop": "2"});
    config["spec"]["template"]["spec"]["containers"][0]["env"] =
        json!([{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]);
    api.patch("prune", &PatchParams::apply("mgr"), &Patch::Apply(&config))
        .await
        .unwrap();

    let mut smaller = deployment("prune", 1, "nginx:1");
    smaller["metadata"]["annotations"] = json!({"keep": "1"});
    smaller["spec"]["template"]["spec"]["containers"][0]["env"] =
        json!([{"name": "A", "value": "1"}]);
    let out = api
        .patch("prune", &PatchParams::apply("mgr"), &Patch::Apply(&smaller))
        .await
        .unwrap();
    let annotations = out.metadata.annotations.clone().unwrap_or_default();
    assert_eq!(annotations.get("keep").map(String::as_str), Some("1"));
    assert!(!annotations.contains_key("drop"));
    let env = out.spec.unwrap().template.spec.unwrap().containers[0]
        .env
        .clone()
        .unwrap();
    assert_eq!(env.len(), 1);
    assert_eq!(env[0].name, "A");
}

#[tokio::test]
async fn apply_creates_a_missing_object_with_201_and_managed_fields_show_on_get() {
    let plane = common::start().await;
    let client = common::client(&plane).await;
    let body = serde_json::to_string(&json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "fresh"}, "data": {"a": "1"}}))
    .unwrap();
    let (code, created) = raw(
        &client,
        apply_request(
            "/api/v1/namespaces/default/configmaps/fresh",
            "fieldManager=creator",
            &body,
        ),
    )
    .await;
    assert_eq!(code, 201, "{created}");

    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let got = api.get("fresh").await.unwrap();
    let managed = entries(&got);
    assert_eq!(managed.len(), 1, "{managed:?}");
    let e = &managed[0];
    assert_eq!(e["manager"], "creator");
    assert_eq!(e["operation"], "Apply");
    assert_eq!(e["apiVersion"], "v1");
    assert_eq!(e["fieldsType"], "FieldsV1");
    assert_eq!(e["fieldsV1"], json!({"f:data": {"f:a": {}}}));
    let time = e["time"].as_str().unwrap();
    assert!(time.ends_with('Z') && time.len() == 20, "{time}");
}

#[tokio::test]
async fn apply_answers_upstream_errors_for_missing_manager_and_mismatched_types() {
    let plane = common::start().await;
    let client = common::client(&plane).await;
    let path = "/api/v1/namespaces/default/configmaps/c";
    let body = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n";
    let (code, status) = raw(&client, apply_request(path, "", body)).await;
    assert_eq!(code, 422);
    assert_eq!(
        status["message"],
        "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch"
    );
    let wrong = "apiVersion: apps/v1\nkind: ConfigMap\nmetadata:\n  name: c\n";
    let (code, _) = raw(&client, apply_request(path, "fieldManager=m", wrong)).await;
    assert_eq!(code, 400);
    let wrong_kind = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: c\n";
    let (code, _) = raw(&client, apply_request(path, "fieldManager=m", wrong_kind)).await;
    assert_eq!(code, 400);
    // YAML bodies work.
    let yaml = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  k: v\n";
    let (code, obj) = raw(&client, apply_request(path, "fieldManager=m", yaml)).await;
    assert_eq!(code, 201, "{obj}");
    assert_eq!(obj["data"]["k"], "v");
}

#[tokio::test]
async fn a_no_op_apply_keeps_the_resource_version_and_dry_run_stores_nothing() {
    let plane = common::start().await;
    let client = common::client(&plane).await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let config = |v: &str| {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "noop"},
            "data": {"k": v}})
    };
    let first = api
        .patch(
            "noop",
            &PatchParams::apply("mgr"),
            &Patch::Apply(config("1")),
        )
        .await
        .unwrap();
    // A later second (the server's clock moved on, not the test waiting for the wall clock):
    // a new `time` alone must not count as a change.
    opkit_apiserver::advance_clock(std::time::Duration::from_secs(1));
    let second = api
        .patch(
            "noop",
            &PatchParams::apply("mgr"),
            &Patch::Apply(config("1")),
        )
        .await
        .unwrap();
    assert_eq!(
        first.metadata.resource_version,
        second.metadata.resource_version
    );
    assert_eq!(entries(&first), entries(&second));

    let mut params = PatchParams::apply("mgr");
    params.dry_run = true;
    let dry = api
        .patch("noop", &params, &Patch::Apply(config("2")))
        .await
        .unwrap();
    assert_eq!(dry.data.unwrap()["k"], "2");
    let stored = api.get("noop").await.unwrap();
    assert_eq!(stored.data.unwrap()["k"], "1");
    assert_eq!(
        stored.metadata.resource_version,
        first.metadata.resource_version
    );

    api.patch(
        "ghost",
        &params,
        &Patch::Apply(&json!({"apiVersion": "v1",
        "kind": "ConfigMap", "metadata": {"name": "ghost"}})),
    )
    .await
    .expect("a dry-run apply of a missing object succeeds");
    assert!(api.get_opt("ghost").await.unwrap().is_none());
}

#[tokio::test]
async fn put_and_merge_patch_record_update_entries_and_take_over_changed_fields() {
    let plane = common::start().await;
    let client = common::client(&plane).await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let cm: ConfigMap = serde_json::from_value(
        json!({"metadata": {"name": "owned"}, "data": {"a": "1", "b": "2"}}),
    )
    .unwrap();
    let pp = PostParams {
        field_manager: Some("creator".into()),
        ..Default::default()
    };
    let created = api.create(&pp, &cm).await.unwrap();
    let managed = entries(&created);
    assert_eq!(
        fields_of(&managed, "creator", "Update"),
        Some(json!({"f:data": {".": {}, "f:a": {}, "f:b": {}}}))
    );

    let mut changed = created.clone();
    changed
        .data
        .as_mut()
        .unwrap()
        .insert("a".into(), "10".into());
    let put = PostParams {
        field_manager: Some("putter".into()),
        ..Default::default()
    };
    let replaced = api.replace("owned", &put, &changed).await.unwrap();
    let managed = entries(&replaced);
    assert_eq!(
        fields_of(&managed, "putter", "Update"),
        Some(json!({"f:data": {"f:a": {}}}))
    );
    assert_eq!(
        fields_of(&managed, "creator", "Update"),
        Some(json!({"f:data": {".": {}, "f:b": {}}}))
    );

    let patched = api
        .patch(
            "owned",
            &PatchParams {
                field_manager: Some("patcher".into()),
                ..Default::default()
            },
            &Patch::Merge(json!({"data": {"c": "3"}})),
        )
        .await
        .unwrap();
    let managed = entries(&patched);
    assert_eq!(
        fields_of(&managed, "patcher", "Update"),
        Some(json!({"f:data": {"f:c": {}}}))
    );
    assert!(managed.iter().all(|e| e["time"].is_string()));

    // An applier that wants `a` back conflicts with the updater, named with its apiVersion.
    let err = api_error(
        api.patch(
            "owned",
            &PatchParams::apply("applier"),
            &Patch::Apply(json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "owned"}, "data": {"a": "1"}})),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(
        err.message,
        "Apply failed with 1 conflict: conflict with \"putter\" using v1: .data.a"
    );

    // Setting managedFields to an empty list clears them.
    let cleared = api
        .patch(
            "owned",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"managedFields": []}})),
        )
        .await
        .unwrap();
    assert!(entries(&cleared).is_empty(), "{:?}", entries(&cleared));
}

fn widget_crd() -> CustomResourceDefinition {
    serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.ssa.example.com"},
        "spec": {
            "group": "ssa.example.com",
            "scope": "Namespaced",
            "names": {"kind": "Widget", "singular": "widget", "plural": "widgets"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "spec": {"type": "object", "properties": {
                            "size": {"type": "integer"},
                            "ports": {
                                "type": "array",
                                "x-kubernetes-list-type": "map",
                                "x-kubernetes-list-map-keys": ["name"],
                                "items": {"type": "object", "required": ["name"], "properties": {
                                    "name": {"type": "string"},
                                    "port": {"type": "integer"}
                                }}
                            },
                            "tags": {"type": "array", "items": {"type": "string"}}
                        }},
                        "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}}
                    }
                }}
            }]
        }
    }))
    .unwrap()
}

#[tokio::test]
async fn custom_resource_list_map_items_belong_to_the_managers_that_applied_them() {
    let plane = common::start().await;
    let client = common::client(&plane).await;
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.create(&PostParams::default(), &widget_crd())
        .await
        .unwrap();
    let established = kube::runtime::wait::await_condition(
        crds,
        "widgets.ssa.example.com",
        kube::runtime::wait::conditions::is_crd_established(),
    );
    tokio::time::timeout(std::time::Duration::from_secs(10), established)
        .await
        .unwrap()
        .unwrap();
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("ssa.example.com", "v1", "Widget"),
        "widgets",
    );
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &ar);
    let widget = |spec: Value| {
        json!({"apiVersion": "ssa.example.com/v1", "kind": "Widget",
            "metadata": {"name": "w"}, "spec": spec})
    };

    api.patch(
        "w",
        &PatchParams::apply("alpha"),
        &Patch::Apply(widget(
            json!({"size": 1, "ports": [{"name": "http", "port": 80}], "tags": ["x"]}),
        )),
    )
    .await
    .unwrap();
    let both = api
        .patch(
            "w",
            &PatchParams::apply("beta"),
            &Patch::Apply(widget(json!({"ports": [{"name": "grpc", "port": 9090}]}))),
        )
        .await
        .expect("another item of a map list is no conflict");
    assert_eq!(
        both.data["spec"]["ports"],
        json!([{"name": "http", "port": 80}, {"name": "grpc", "port": 9090}])
    );
    let managed = entries(&both);
    assert_eq!(
        fields_of(&managed, "beta", "Apply"),
        Some(
            json!({"f:spec": {"f:ports": {"k:{\"name\":\"grpc\"}": {".": {}, "f:name": {}, "f:port": {}}}}})
        )
    );

    // Changing alpha's item conflicts, on the item's field.
    let err = api_error(
        api.patch(
            "w",
            &PatchParams::apply("beta"),
            &Patch::Apply(widget(json!({"ports": [
                {"name": "grpc", "port": 9090}, {"name": "http", "port": 81}]}))),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(err.code, 409);
    assert_eq!(
        err.details.unwrap().causes[0].field,
        ".spec.ports[name=\"http\"].port"
    );

    // Atomic lists (no list type) are one field: another value conflicts as a whole.
    let err = api_error(
        api.patch(
            "w",
            &PatchParams::apply("beta"),
            &Patch::Apply(widget(
                json!({"ports": [{"name": "grpc", "port": 9090}], "tags": ["y"]}),
            )),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(err.details.unwrap().causes[0].field, ".spec.tags");

    // alpha stops applying its port: it goes, beta's stays.
    let out = api
        .patch(
            "w",
            &PatchParams::apply("alpha"),
            &Patch::Apply(widget(json!({"size": 1, "tags": ["x"]}))),
        )
        .await
        .unwrap();
    assert_eq!(
        out.data["spec"]["ports"],
        json!([{"name": "grpc", "port": 9090}])
    );

    // Status in a main-resource apply is ignored; the status subresource tracks it apart.
    let with_status = json!({"apiVersion": "ssa.example.com/v1", "kind": "Widget",
        "metadata": {"name": "w"}, "status": {"ready": true}});
    let main = api
        .patch(
            "w",
            &PatchParams::apply("gamma"),
            &Patch::Apply(&with_status),
        )
        .await
        .unwrap();
    assert!(
        main.data
            .get("status")
            .is_none_or(|s| s.get("ready").is_none())
    );
    assert!(fields_of(&entries(&main), "gamma", "Apply").is_none());
    let status = api
        .patch_status(
            "w",
            &PatchParams::apply("gamma"),
            &Patch::Apply(&with_status),
        )
        .await
        .unwrap();
    assert_eq!(status.data["status"]["ready"], true);
    let entry = entries(&status)
        .into_iter()
        .find(|e| e["manager"] == "gamma")
        .expect("a status entry");
    assert_eq!(entry["subresource"], "status");
    assert_eq!(entry["fieldsV1"], json!({"f:status": {"f:ready": {}}}));
}
