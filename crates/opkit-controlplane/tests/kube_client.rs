//! kube-rs against the control plane over real HTTPS: typed and dynamic APIs, errors,
//! optimistic concurrency, selectors, paging, status subresource, protobuf bodies.

mod common;

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::json;

fn configmap(name: &str, data: &[(&str, &str)]) -> ConfigMap {
    ConfigMap {
        metadata: kube::api::ObjectMeta {
            name: Some(name.to_string()),
            ..Default::default()
        },
        data: Some(
            data.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<BTreeMap<_, _>>(),
        ),
        ..Default::default()
    }
}

fn api_error(e: kube::Error) -> kube::core::Status {
    match e {
        kube::Error::Api(s) => *s,
        other => panic!("expected an API error, got {other:?}"),
    }
}

#[tokio::test]
async fn default_namespaces_exist_from_the_start() {
    let plane = common::start().await;
    let client = common::client(&plane).await;
    let names: Vec<String> = Api::<Namespace>::all(client)
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|n| n.metadata.name)
        .collect();
    for ns in ["default", "kube-system", "kube-public"] {
        assert!(names.iter().any(|n| n == ns), "{ns} missing from {names:?}");
    }
}

#[tokio::test]
async fn typed_configmap_lifecycle_sets_server_metadata() {
    let plane = common::start().await;
    let client = common::client(&plane).await;
    let cms: Api<ConfigMap> = Api::namespaced(client, "default");
    let created = cms
        .create(&PostParams::default(), &configmap("app", &[("a", "1")]))
        .await
        .unwrap();
    let meta = &created.metadata;
    assert!(meta.uid.as_deref().is_some_and(|u| u.len() == 36));
    assert!(meta.creation_timestamp.is_some());
    assert_eq!(meta.namespace.as_deref(), Some("default"));
    let rv1: u64 = meta.resource_version.as_deref().unwrap().parse().unwrap();

    let got = cms.get("app").await.unwrap();
    assert_eq!(got.data.as_ref().unwrap()["a"], "1");

    let mut changed = got.clone();
    changed
        .data
        .as_mut()
        .unwrap()
        .insert("b".into(), "2".into());
    let replaced = cms
        .replace("app", &PostParams::default(), &changed)
        .await
        .unwrap();
    let rv2: u64 = replaced
        .metadata
        .resource_version
        .as_deref()
        .unwrap()
        .parse()
        .unwrap();
    assert!(rv2 > rv1);

    let patched = cms
        .patch(
            "app",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"c": "3"}})),
        )
        .await
        .unwrap();
    assert_eq!(patched.data.as_ref().unwrap().len(), 3);

    cms.delete("app", &DeleteParams::default()).await.unwrap();
    let err = api_error(cms.get("app").await.unwrap_err());
    assert_eq!(err.code, 404);
    assert_eq!(err.reason, "NotFound");
    assert_eq!(err.message, "configmaps \"app\" not found");
}

#[tokio::test]
async fn stale_resource_version_is_a_409_conflict_and_duplicates_are_already_exists() {
    let plane = common::start().await;
    let client = common::client(&plane).await;
    let cms: Api<ConfigMap> = Api::namespaced(client, "default");
    let created = cms
        .create(&PostParams::default(), &configmap("c", &[("a", "1")]))
        .await
        .unwrap();
    let dup = api_error(
        cms.create(&PostParams::default(), &configmap("c", &[]))
            .await
            .unwrap_err(),
    );
    assert_eq!((dup.code, dup.reason.as_str()), (409, "AlreadyExists"));

    let mut first = created.clone();
    first.data.as_mut().unwrap().insert("a".into(), "2".into());
    cms.replace("c", &PostParams::default(), &first)
        .await
        .unwrap();
    let mut stale = created;
    stale.data.as_mut().unwrap().insert("a".into(), "3".into());
    let conflict = api_error(
        cms.replace("c", &PostParams::default(), &stale)
            .await
            .unwrap_err(),
    );
    assert_eq!((conflict.code, conflict.reason.as_str()), (409, "Conflict"));
    assert_eq!(
        conflict.message,
        "Operation cannot be fulfilled on configmaps \"c\": the object has been modified; please apply your changes to the latest version and try again"
    );
}

#[tokio::test]
async fn a_no_op_update_keeps_the_resource_version() {
    let plane = common::start().await;
    let client = common::client(&plane).await;
    let cms: Api<ConfigMap> = Api::namespaced(client, "default");
    let created = cms
        .create(&PostParams::default(), &configmap("same", &[("a", "1")]))
        .await
        .unwrap();
    let again = cms
        .replace("same", &PostParams::default(), &created)
        .await
        .unwrap();
    assert_eq!(
        again.metadata.resource_version,
        created.metadata.resource_version
    );
}

#[tokio::test]
async fn creating_in_a_missing_namespace_is_404() {
    let plane = common::start().await;
    let client = common::client(&plane).await;
    let cms: Api<ConfigMap> = Api::namespaced(client, "nowhere");
    let err = api_error(
        cms.create(&PostParams::default(), &configmap("x", &[]))
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 404);
    assert_eq!(err.message, "namespaces \"nowhere\" not found");
}

#[tokio::test]
async fn generate_name_appends_five_random_characters() {
    let plane = common::start().await;
    let client = common::client(&plane).await;
    let cms: Api<ConfigMap> = Api::namespaced(client, "default");
    let mut cm = configmap("", &[]);
    cm.metadata.name = None;
    cm.metadata.generate_name = Some("job-".into());
    let created = cms.create(&PostParams::default(), &cm).await.unwrap();
    let name = created.metadata.name.unwrap();
    assert!(name.starts_with("job-") && name.len() == 9, "{name}");
}

#[tokio::test]
async fn invalid_names_are_refused_with_422() {
    let plane = common::start().await;
    let client = common::client(&plane).await;
    let cms: Api<ConfigMap> = Api::namespaced(client, "default");
    let err = api_error(
        cms.create(&PostParams::default(), &configmap("Not_Valid", &[]))
            .await
            .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"));
    assert!(err.message.contains("metadata.name"), "{}", err.message);
}

#[tokio::test]
async fn a_builtin_object_that_does_not_decode_names_the_field() {
    let plane = common::start().await;
    let client = common::client(&plane).await;
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("apps", "v1", "Deployment"),
        "deployments",
    );
    let api: Api<DynamicObject> = Api::namespaced_with(client, "default", &ar);
    let obj: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"replicas": "three", "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}
    }))
    .unwrap();
    let err = api_error(api.create(&PostParams::default(), &obj).await.unwrap_err());
    assert!(err.code == 400 || err.code == 422, "{err:?}");
    assert!(err.message.contains("spec.replicas"), "{}", err.message);
}

#[tokio::test]
async fn label_selectors_filter_lists_of_custom_resources() {
    let plane = common::start().await;
    let client = common::client(&plane).await;
    common::install_flight_ticket_crd(&client).await;
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("flights.com", "v1", "FlightTicket"),
        "flighttickets",
    );
    let api: Api<DynamicObject> = Api::namespaced_with(client, "default", &ar);
    for (name, tier) in [("a", "gold"), ("b", "silver"), ("c", "gold")] {
        let obj: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "flights.com/v1", "kind": "FlightTicket",
            "metadata": {"name": name, "labels": {"tier": tier}},
            "spec": {"from": "Mumbai", "to": "London", "number": 2}
        }))
        .unwrap();
        api.create(&PostParams::default(), &obj).await.unwrap();
    }
    let gold = api
        .list(&ListParams::default().labels("tier=gold"))
        .await
        .unwrap();
    let names: Vec<_> = gold
        .items
        .iter()
        .filter_map(|o| o.metadata.name.clone())
        .collect();
    assert_eq!(names, vec!["a", "c"]);
    let not_gold = api
        .list(&ListParams::default().labels("tier notin (gold)"))
        .await
        .unwrap();
    assert_eq!(not_gold.items.len(), 1);
    let by_name = api
        .list(&ListParams::default().fields("metadata.name=b"))
        .await
        .unwrap();
    assert_eq!(by_name.items.len(), 1);
}

#[tokio::test]
async fn custom_resources_are_validated_against_the_schema() {
    let plane = common::start().await;
    let client = common::client(&plane).await;
    common::install_flight_ticket_crd(&client).await;
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("flights.com", "v1", "FlightTicket"),
        "flighttickets",
    );
    let api: Api<DynamicObject> = Api::namespaced_with(client, "default", &ar);
    let obj: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "flights.com/v1", "kind": "FlightTicket",
        "metadata": {"name": "too-many"},
        "spec": {"from": "Mumbai", "to": "London", "number": 11}
    }))
    .unwrap();
    let err = api_error(api.create(&PostParams::default(), &obj).await.unwrap_err());
    assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"));
    assert_eq!(
        err.message,
        "FlightTicket.flights.com \"too-many\" is invalid: spec.number: Invalid value: 11: spec.number in body should be less than or equal to 10"
    );
}

#[tokio::test]
async fn unknown_fields_of_custom_resources_are_pruned() {
    let plane = common::start().await;
    let client = common::client(&plane).await;
    common::install_flight_ticket_crd(&client).await;
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("flights.com", "v1", "FlightTicket"),
        "flighttickets",
    );
    let api: Api<DynamicObject> = Api::namespaced_with(client, "default", &ar);
    let obj: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "flights.com/v1", "kind": "FlightTicket",
        "metadata": {"name": "t"},
        "spec": {"from": "Mumbai", "to": "London", "number": 2, "seat": "12A"}
    }))
    .unwrap();
    let created = api.create(&PostParams::default(), &obj).await.unwrap();
    assert_eq!(
        created.data["spec"],
        json!({"from": "Mumbai", "to": "London", "number": 2})
    );
    let req = http::Request::post(
        "/apis/flights.com/v1/namespaces/default/flighttickets?fieldValidation=Strict",
    )
    .header("Content-Type", "application/json")
    .body(
        serde_json::to_vec(&json!({
            "apiVersion": "flights.com/v1", "kind": "FlightTicket", "metadata": {"name": "t2"},
            "spec": {"from": "Mumbai", "to": "London", "number": 2, "seat": "12A"}
        }))
        .unwrap(),
    )
    .unwrap();
    let err = api_error(client_request(&api, req).await.unwrap_err());
    assert_eq!((err.code, err.reason.as_str()), (400, "BadRequest"));
    assert_eq!(
        err.message,
        "FlightTicket in version \"v1\" cannot be handled as a FlightTicket: strict decoding error: unknown field \"spec.seat\""
    );
}

async fn client_request(
    api: &Api<DynamicObject>,
    req: http::Request<Vec<u8>>,
) -> Result<DynamicObject, kube::Error> {
    api.clone().into_client().request(req).await
}

#[tokio::test]
async fn status_subresource_separates_spec_and_status_writes() {
    let plane = common::start().await;
    let client = common::client(&plane).await;
    common::install_flight_ticket_crd(&client).await;
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("flights.com", "v1", "FlightTicket"),
        "flighttickets",
    );
    let api: Api<DynamicObject> = Api::namespaced_with(client, "default", &ar);
    let obj: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "flights.com/v1", "kind": "FlightTicket",
        "metadata": {"name": "s"},
        "spec": {"from": "Mumbai", "to": "London", "number": 2},
        "status": {"phase": "Ignored"}
    }))
    .unwrap();
    let created = api.create(&PostParams::default(), &obj).await.unwrap();
    assert!(
        created.data.get("status").is_none(),
        "status is dropped on create"
    );
    assert_eq!(created.metadata.generation, Some(1));

    let st = api
        .patch_status(
            "s",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"phase": "Booked"}, "spec": {"number": 5}})),
        )
        .await
        .unwrap();
    assert_eq!(st.data["status"]["phase"], "Booked");
    assert_eq!(st.data["spec"]["number"], 2, "a status write ignores spec");
    assert_eq!(
        st.metadata.generation,
        Some(1),
        "status writes do not bump generation"
    );

    let sp = api
        .patch(
            "s",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"phase": "Hacked"}, "spec": {"number": 5}})),
        )
        .await
        .unwrap();
    assert_eq!(
        sp.data["status"]["phase"], "Booked",
        "a main write ignores status"
    );
    assert_eq!(sp.data["spec"]["number"], 5);
    assert_eq!(
        sp.metadata.generation,
        Some(2),
        "spec change bumps generation"
    );
}

#[tokio::test]
async fn paging_with_limit_and_continue_keeps_the_lists_resource_version() {
    let plane = common::start().await;
    let client = common::client(&plane).await;
    let cms: Api<ConfigMap> = Api::namespaced(client, "default");
    for i in 0..7 {
        cms.create(&PostParams::default(), &configmap(&format!("p{i}"), &[]))
            .await
            .unwrap();
    }
    let first = cms.list(&ListParams::default().limit(3)).await.unwrap();
    assert_eq!(first.items.len(), 3);
    let token = first.metadata.continue_.clone().expect("a continue token");
    assert_eq!(first.metadata.remaining_item_count, Some(4));
    // A write between pages must not show up in later pages of the same list.
    cms.create(&PostParams::default(), &configmap("p9", &[]))
        .await
        .unwrap();
    let mut names: Vec<String> = first
        .items
        .iter()
        .filter_map(|c| c.metadata.name.clone())
        .collect();
    let mut next = Some(token);
    while let Some(t) = next {
        let page = cms
            .list(&ListParams::default().limit(3).continue_token(&t))
            .await
            .unwrap();
        assert_eq!(
            page.metadata.resource_version,
            first.metadata.resource_version
        );
        names.extend(page.items.iter().filter_map(|c| c.metadata.name.clone()));
        next = page.metadata.continue_.filter(|c| !c.is_empty());
    }
    assert_eq!(names, (0..7).map(|i| format!("p{i}")).collect::<Vec<_>>());
}

#[tokio::test]
async fn requests_without_a_valid_token_get_401_status() {
    let plane = common::start().await;
    let bad = plane.kubeconfig().replace(plane.token(), "not-the-token");
    let client = common::client_for_kubeconfig(&bad).await;
    let err = api_error(
        Api::<ConfigMap>::namespaced(client, "default")
            .list(&ListParams::default())
            .await
            .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (401, "Unauthorized"));
}

#[tokio::test]
async fn protobuf_request_bodies_keep_every_field() {
    use prost::Message;
    let plane = common::start().await;
    let client = common::client(&plane).await;
    let cm = k8s_pb::api::core::v1::ConfigMap {
        metadata: Some(k8s_pb::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            name: Some("pb".into()),
            labels: [("app".to_string(), "web".to_string())]
                .into_iter()
                .collect(),
            ..Default::default()
        }),
        data: [("key".to_string(), "value".to_string())]
            .into_iter()
            .collect(),
        binary_data: [("bin".to_string(), vec![0u8, 159, 146, 150])]
            .into_iter()
            .collect(),
        immutable: Some(true),
    };
    let unknown = k8s_pb::apimachinery::pkg::runtime::Unknown {
        type_meta: Some(k8s_pb::apimachinery::pkg::runtime::TypeMeta {
            api_version: Some("v1".into()),
            kind: Some("ConfigMap".into()),
        }),
        raw: Some(cm.encode_to_vec()),
        content_encoding: Some(String::new()),
        content_type: Some(String::new()),
    };
    let mut body = b"k8s\0".to_vec();
    body.extend(unknown.encode_to_vec());
    let req = http::Request::post("/api/v1/namespaces/default/configmaps")
        .header("Content-Type", "application/vnd.kubernetes.protobuf")
        .header("Accept", "application/json")
        .body(body)
        .unwrap();
    let created: ConfigMap = client.request(req).await.expect("protobuf create succeeds");
    assert_eq!(created.data.unwrap()["key"], "value");
    assert_eq!(
        created.binary_data.unwrap()["bin"].0,
        vec![0u8, 159, 146, 150]
    );
    assert_eq!(created.immutable, Some(true));
    assert_eq!(created.metadata.labels.unwrap()["app"], "web");
}

#[tokio::test]
async fn custom_resources_refuse_protobuf_bodies_with_415() {
    let plane = common::start().await;
    let client = common::client(&plane).await;
    common::install_flight_ticket_crd(&client).await;
    let req = http::Request::post("/apis/flights.com/v1/namespaces/default/flighttickets")
        .header("Content-Type", "application/vnd.kubernetes.protobuf")
        .body(b"k8s\0\x0a\x00".to_vec())
        .unwrap();
    let err = api_error(client.request::<DynamicObject>(req).await.unwrap_err());
    assert_eq!(
        (err.code, err.reason.as_str()),
        (415, "UnsupportedMediaType")
    );
}

#[tokio::test]
async fn deleting_a_crd_deletes_its_objects() {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    let plane = common::start().await;
    let client = common::client(&plane).await;
    common::install_flight_ticket_crd(&client).await;
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("flights.com", "v1", "FlightTicket"),
        "flighttickets",
    );
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &ar);
    let obj: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "flights.com/v1", "kind": "FlightTicket", "metadata": {"name": "gone"},
        "spec": {"from": "A", "to": "B", "number": 1}
    }))
    .unwrap();
    api.create(&PostParams::default(), &obj).await.unwrap();
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.delete("flighttickets.flights.com", &DeleteParams::default())
        .await
        .unwrap();
    opkit_testenv::eventually("the CRD to go", || async {
        crds.get_opt("flighttickets.flights.com")
            .await
            .unwrap()
            .is_none()
    })
    .await;
    // Recreating the CRD finds no leftover objects.
    common::install_flight_ticket_crd(&client).await;
    assert!(
        api.list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
}

#[tokio::test]
async fn strategic_merge_patch_changes_one_container_by_name() {
    use k8s_openapi::api::apps::v1::Deployment;
    let plane = common::start().await;
    let client = common::client(&plane).await;
    let deployments: Api<Deployment> = Api::namespaced(client, "default");
    let d: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {"selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [
                {"name": "app", "image": "nginx:1.25"}, {"name": "sidecar", "image": "busybox:1.36"}]}}}
    }))
    .unwrap();
    let created = deployments
        .create(&PostParams::default(), &d)
        .await
        .unwrap();
    assert_eq!(
        created.spec.as_ref().unwrap().replicas,
        Some(1),
        "built-in defaults are applied"
    );
    let patch = json!({"spec": {"template": {"spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]}}}});
    let patched = deployments
        .patch("web", &PatchParams::default(), &Patch::Strategic(patch))
        .await
        .unwrap();
    let containers = patched.spec.unwrap().template.spec.unwrap().containers;
    let images: Vec<_> = containers
        .iter()
        .map(|c| (c.name.as_str(), c.image.as_deref().unwrap_or("")))
        .collect();
    assert_eq!(
        images,
        vec![("app", "nginx:1.27"), ("sidecar", "busybox:1.36")]
    );
    assert_eq!(patched.metadata.generation, Some(2));
}

#[tokio::test]
async fn pods_get_their_qos_class_on_create_and_keep_it() {
    use k8s_openapi::api::core::v1::Pod;
    let plane = common::start().await;
    let client = common::client(&plane).await;
    let pods: Api<Pod> = Api::namespaced(client, "default");
    let pod = |name: &str, resources: serde_json::Value| -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": name},
            "spec": {
                "containers": [{"name": "app", "image": "nginx:1.27", "resources": resources}],
                "initContainers": [{"name": "init", "image": "busybox:1.36",
                    "resources": {"limits": {"cpu": "100m", "memory": "32Mi"}}}]
            }
        }))
        .unwrap()
    };
    let cases = [
        // Requests default to limits: equal on every container, init containers included.
        (
            "guaranteed",
            json!({"limits": {"cpu": "500m", "memory": "128Mi"}}),
            "Guaranteed",
        ),
        (
            "burstable",
            json!({"limits": {"cpu": "1", "memory": "128Mi"}, "requests": {"cpu": "250m"}}),
            "Burstable",
        ),
        ("best-effort", json!({}), "BestEffort"),
    ];
    for (name, resources, expected) in cases {
        let mut p = pod(name, resources);
        if expected == "BestEffort" {
            p.spec.as_mut().unwrap().init_containers = None;
        }
        // What a client claims is reset: the class is the server's to compute.
        p.status = Some(k8s_openapi::api::core::v1::PodStatus {
            qos_class: Some("Bogus".into()),
            ..Default::default()
        });
        let created = pods.create(&PostParams::default(), &p).await.unwrap();
        let qos = |p: &Pod| p.status.as_ref().and_then(|s| s.qos_class.clone());
        assert_eq!(qos(&created).as_deref(), Some(expected), "{name}");
        let read = pods.get(name).await.unwrap();
        assert_eq!(qos(&read).as_deref(), Some(expected), "{name}");
    }
    // Only cpu and memory count.
    let mut storage_only = pod(
        "storage-only",
        json!({"limits": {"ephemeral-storage": "1Gi"}}),
    );
    storage_only.spec.as_mut().unwrap().init_containers = None;
    let created = pods
        .create(&PostParams::default(), &storage_only)
        .await
        .unwrap();
    assert_eq!(
        created.status.and_then(|s| s.qos_class).as_deref(),
        Some("BestEffort")
    );
    // A status write that leaves the class out keeps it; one that changes it is refused.
    let patched = pods
        .patch_status(
            "burstable",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"qosClass": null, "phase": "Running"}})),
        )
        .await
        .unwrap();
    let status = patched.status.unwrap();
    assert_eq!(
        (status.phase.as_deref(), status.qos_class.as_deref()),
        (Some("Running"), Some("Burstable"))
    );
    let err = api_error(
        pods.patch_status(
            "burstable",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"qosClass": "Guaranteed"}})),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"), "{err:?}");
    assert!(
        err.message
            .contains("status.qosClass: Invalid value: \"Guaranteed\": field is immutable"),
        "{err:?}"
    );
}
