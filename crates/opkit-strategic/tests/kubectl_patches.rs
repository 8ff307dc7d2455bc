//! The patches kubectl sends for built-in kinds, applied as kube-apiserver applies them.

use opkit_strategic::{
    BuiltinPatchMeta, NoPatchMeta, SchemaPatchMeta, StrategicError, strategic_merge,
};
use serde_json::{Value, json};

fn meta(api_version: &str, kind: &str) -> BuiltinPatchMeta {
    BuiltinPatchMeta::for_api_version(api_version, kind).expect("a built-in kind")
}

fn deployment() -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web", "tier": "front"},
                     "finalizers": ["example.com/a", "example.com/b"]},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "containers": [
                        {"name": "web", "image": "nginx:1.25", "args": ["--a", "--b"],
                         "ports": [{"containerPort": 80, "protocol": "TCP"}, {"containerPort": 443, "protocol": "TCP"}],
                         "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                         "volumeMounts": [{"name": "data", "mountPath": "/data"}]},
                        {"name": "sidecar", "image": "busybox:1.36"}
                    ],
                    "volumes": [{"name": "data", "emptyDir": {}}],
                    "tolerations": [{"key": "a", "operator": "Exists"}]
                }
            }
        }
    })
}

fn apply(obj: &Value, patch: Value) -> Value {
    strategic_merge(obj, &patch, &meta("apps/v1", "Deployment")).expect("the patch applies")
}

fn pod_spec(obj: &Value) -> &Value {
    &obj["spec"]["template"]["spec"]
}

#[test]
fn set_image_changes_only_the_named_container() {
    // `kubectl set image deployment/web web=nginx:1.27`
    let out = apply(
        &deployment(),
        json!({"spec": {"template": {"spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}}}}),
    );
    let containers = &pod_spec(&out)["containers"];
    assert_eq!(containers[0]["image"], "nginx:1.27");
    assert_eq!(
        containers[0]["env"],
        deployment()["spec"]["template"]["spec"]["containers"][0]["env"]
    );
    assert_eq!(
        containers[1],
        json!({"name": "sidecar", "image": "busybox:1.36"})
    );
    assert_eq!(containers.as_array().unwrap().len(), 2);
}

#[test]
fn adding_an_env_var_keeps_the_others_and_puts_the_new_one_first() {
    // `kubectl patch` with a new env entry: upstream places new items before the server's.
    let out = apply(
        &deployment(),
        json!({"spec": {"template": {"spec": {"containers": [
        {"name": "web", "env": [{"name": "C", "value": "3"}]}]}}}}),
    );
    assert_eq!(
        pod_spec(&out)["containers"][0]["env"],
        json!([
        {"name": "C", "value": "3"}, {"name": "A", "value": "1"}, {"name": "B", "value": "2"}])
    );
}

#[test]
fn changing_an_env_var_merges_it_in_place() {
    let out = apply(
        &deployment(),
        json!({"spec": {"template": {"spec": {"containers": [
        {"name": "web", "env": [{"name": "B", "value": "20"}]}]}}}}),
    );
    assert_eq!(
        pod_spec(&out)["containers"][0]["env"],
        json!([{"name": "A", "value": "1"}, {"name": "B", "value": "20"}])
    );
}

#[test]
fn patch_delete_removes_a_container_by_name() {
    let out = apply(
        &deployment(),
        json!({"spec": {"template": {"spec": {"containers": [
        {"$patch": "delete", "name": "sidecar"}]}}}}),
    );
    let containers = pod_spec(&out)["containers"].as_array().unwrap();
    assert_eq!(containers.len(), 1);
    assert_eq!(containers[0]["name"], "web");
}

#[test]
fn patch_delete_without_the_merge_key_is_upstreams_error() {
    let err = strategic_merge(
        &deployment(),
        &json!({"spec": {"template": {"spec": {"containers": [
        {"$patch": "delete", "image": "busybox:1.36"}]}}}}),
        &meta("apps/v1", "Deployment"),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "map: map[$patch:delete image:busybox:1.36] does not contain declared merge key: name"
    );
    assert_eq!(err.http_status(), 500);
}

#[test]
fn patch_replace_replaces_a_merging_list() {
    let out = apply(
        &deployment(),
        json!({"spec": {"template": {"spec": {"containers": [
        {"$patch": "replace"}, {"name": "only", "image": "alpine"}]}}}}),
    );
    assert_eq!(
        pod_spec(&out)["containers"],
        json!([{"name": "only", "image": "alpine"}])
    );
}

#[test]
fn patch_replace_replaces_a_map() {
    let out = apply(
        &deployment(),
        json!({"metadata": {"labels": {"$patch": "replace", "app": "other"}}}),
    );
    assert_eq!(out["metadata"]["labels"], json!({"app": "other"}));
}

#[test]
fn patch_delete_on_a_map_empties_it() {
    // Upstream leaves `{}`: the typed object then has no labels.
    let out = apply(
        &deployment(),
        json!({"metadata": {"labels": {"$patch": "delete"}}}),
    );
    assert_eq!(out["metadata"]["labels"], json!({}));
}

#[test]
fn patch_merge_is_the_default_merge() {
    let out = apply(
        &deployment(),
        json!({"metadata": {"labels": {"$patch": "merge", "new": "x"}}}),
    );
    assert_eq!(
        out["metadata"]["labels"],
        json!({"app": "web", "tier": "front", "new": "x"})
    );
}

#[test]
fn set_element_order_reorders_a_merged_list() {
    let out = apply(
        &deployment(),
        json!({"spec": {"template": {"spec": {
        "$setElementOrder/containers": [{"name": "sidecar"}, {"name": "web"}]}}}}),
    );
    let names: Vec<&str> = pod_spec(&out)["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["sidecar", "web"]);
    assert_eq!(pod_spec(&out)["containers"][1]["image"], "nginx:1.25");
}

#[test]
fn set_element_order_places_new_items_and_keeps_server_only_ones() {
    // kubectl apply adding `metrics` between the two containers of its last-applied config,
    // while the server also has `injected`, added by someone else at the end.
    let mut obj = deployment();
    obj["spec"]["template"]["spec"]["containers"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "injected", "image": "x"}));
    let out = apply(
        &obj,
        json!({"spec": {"template": {"spec": {
        "$setElementOrder/containers": [{"name": "web"}, {"name": "metrics"}, {"name": "sidecar"}],
        "containers": [{"name": "metrics", "image": "prom:1"}]}}}}),
    );
    let names: Vec<&str> = pod_spec(&out)["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["web", "metrics", "sidecar", "injected"]);
}

#[test]
fn set_element_order_must_agree_with_the_patch_list() {
    let err = strategic_merge(
        &deployment(),
        &json!({"spec": {"template": {"spec": {
        "$setElementOrder/containers": [{"name": "web"}, {"name": "sidecar"}],
        "containers": [{"name": "sidecar", "image": "a"}, {"name": "web", "image": "b"}]}}}}),
        &meta("apps/v1", "Deployment"),
    )
    .unwrap_err();
    assert!(
        matches!(err, StrategicError::SetElementOrderMismatch { .. }),
        "{err}"
    );
    assert!(err.to_string().starts_with("The order in patch list:\n[map[image:a name:sidecar] map[image:b name:web]]\n doesn't match $setElementOrder list:"), "{err}");
}

#[test]
fn retain_keys_switches_deployment_strategy_to_recreate() {
    // What `kubectl apply` sends when the manifest changes RollingUpdate to Recreate.
    let out = apply(
        &deployment(),
        json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate", "rollingUpdate": null}}}),
    );
    assert_eq!(out["spec"]["strategy"], json!({"type": "Recreate"}));
    // Even without the explicit null, `$retainKeys` clears rollingUpdate.
    let out = apply(
        &deployment(),
        json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}),
    );
    assert_eq!(out["spec"]["strategy"], json!({"type": "Recreate"}));
}

#[test]
fn retain_keys_rejects_a_patch_setting_an_unlisted_key() {
    let err = strategic_merge(
        &deployment(),
        &json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate",
        "rollingUpdate": {"maxSurge": 1}}}}),
        &meta("apps/v1", "Deployment"),
    )
    .unwrap_err();
    assert_eq!(err, StrategicError::BadRetainKeys);
    assert_eq!(
        (err.to_string().as_str(), err.http_status()),
        ("invalid patch format of retainKeys", 400)
    );
}

#[test]
fn retain_keys_switches_a_volume_source() {
    // volumes are `merge,retainKeys`: each item may carry `$retainKeys`.
    let out = apply(
        &deployment(),
        json!({"spec": {"template": {"spec": {"volumes": [
        {"name": "data", "$retainKeys": ["name", "configMap"], "configMap": {"name": "cfg"}}]}}}}),
    );
    assert_eq!(
        pod_spec(&out)["volumes"],
        json!([{"name": "data", "configMap": {"name": "cfg"}}])
    );
}

#[test]
fn delete_from_primitive_list_removes_a_finalizer() {
    let out = apply(
        &deployment(),
        json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["example.com/a"]}}),
    );
    assert_eq!(out["metadata"]["finalizers"], json!(["example.com/b"]));
}

#[test]
fn finalizers_merge_as_a_set() {
    let out = apply(
        &deployment(),
        json!({"metadata": {"finalizers": ["example.com/b", "example.com/c"]}}),
    );
    assert_eq!(
        out["metadata"]["finalizers"],
        json!(["example.com/a", "example.com/b", "example.com/c"])
    );
}

#[test]
fn ports_merge_by_container_port() {
    let out = apply(
        &deployment(),
        json!({"spec": {"template": {"spec": {"containers": [{"name": "web", "ports": [
        {"containerPort": 443, "name": "https"}, {"containerPort": 8080, "protocol": "TCP"}]}]}}}}),
    );
    assert_eq!(
        pod_spec(&out)["containers"][0]["ports"],
        json!([
        {"containerPort": 80, "protocol": "TCP"},
        {"containerPort": 443, "protocol": "TCP", "name": "https"},
        {"containerPort": 8080, "protocol": "TCP"}])
    );
}

#[test]
fn service_ports_merge_by_port() {
    let svc = json!({"spec": {"ports": [{"port": 80, "targetPort": 8080}, {"port": 443, "targetPort": 8443}]}});
    let out = strategic_merge(
        &svc,
        &json!({"spec": {"ports": [{"port": 443, "targetPort": 9443}]}}),
        &meta("v1", "Service"),
    )
    .unwrap();
    assert_eq!(
        out["spec"]["ports"],
        json!([{"port": 80, "targetPort": 8080}, {"port": 443, "targetPort": 9443}])
    );
}

#[test]
fn null_deletes_map_keys() {
    let out = apply(
        &deployment(),
        json!({"metadata": {"labels": {"tier": null, "missing": null}}, "spec": {"replicas": null}}),
    );
    assert_eq!(out["metadata"]["labels"], json!({"app": "web"}));
    assert!(out["spec"].get("replicas").is_none());
}

#[test]
fn null_deletes_a_merging_list_item_field() {
    let out = apply(
        &deployment(),
        json!({"spec": {"template": {"spec": {"containers": [{"name": "web", "args": null}]}}}}),
    );
    assert!(pod_spec(&out)["containers"][0].get("args").is_none());
}

#[test]
fn lists_without_strategy_are_replaced() {
    let out = apply(
        &deployment(),
        json!({"spec": {"template": {"spec": {
        "containers": [{"name": "web", "args": ["--c"]}],
        "tolerations": [{"key": "b", "operator": "Exists"}]}}}}),
    );
    assert_eq!(pod_spec(&out)["containers"][0]["args"], json!(["--c"]));
    assert_eq!(
        pod_spec(&out)["tolerations"],
        json!([{"key": "b", "operator": "Exists"}])
    );
}

#[test]
fn unknown_directives_are_errors() {
    let m = meta("apps/v1", "Deployment");
    let err = strategic_merge(
        &deployment(),
        &json!({"metadata": {"labels": {"$patch": "frobnicate"}}}),
        &m,
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "unknown patch type: frobnicate in map: map[$patch:frobnicate]"
    );
    let err = strategic_merge(
        &deployment(),
        &json!({"spec": {"template": {"spec": {"containers": [
        {"$patch": "frobnicate", "name": "web"}]}}}}),
        &m,
    )
    .unwrap_err();
    assert!(
        matches!(err, StrategicError::UnknownPatchType { .. }),
        "{err}"
    );
    let err = strategic_merge(
        &deployment(),
        &json!({"metadata": {"$deleteFromPrimitiveListfinalizers": ["a"]}}),
        &m,
    )
    .unwrap_err();
    assert_eq!(err, StrategicError::BadPrimitiveList);
    let err = strategic_merge(
        &deployment(),
        &json!({"spec": {"$setElementOrder": []}}),
        &m,
    )
    .unwrap_err();
    assert_eq!(err, StrategicError::BadSetElementOrder);
    let err = strategic_merge(
        &deployment(),
        &json!({"spec": {"strategy": {"$retainKeys": "type"}}}),
        &m,
    )
    .unwrap_err();
    assert_eq!(err, StrategicError::BadRetainKeys);
}

#[test]
fn kubectl_apply_second_run_patch_is_a_no_op() {
    // The three-way patch `kubectl apply` sends after an image change in the manifest, with
    // the server having defaulted fields and added a container of its own.
    let mut live = deployment();
    live["spec"]["template"]["spec"]["containers"][0]["terminationMessagePath"] =
        json!("/dev/termination-log");
    live["spec"]["template"]["spec"]["containers"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "injected", "image": "x"}));
    let last_applied = "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\"}";
    let patch = json!({
        "metadata": {"annotations": {"kubectl.kubernetes.io/last-applied-configuration": last_applied}},
        "spec": {"template": {"spec": {
            "$setElementOrder/containers": [{"name": "web"}, {"name": "sidecar"}],
            "containers": [{"image": "nginx:1.27", "name": "web"}]}}}});
    let once = apply(&live, patch.clone());
    assert_eq!(pod_spec(&once)["containers"][0]["image"], "nginx:1.27");
    assert_eq!(
        pod_spec(&once)["containers"][0]["terminationMessagePath"],
        "/dev/termination-log"
    );
    let names: Vec<&str> = pod_spec(&once)["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["web", "sidecar", "injected"]);
    // Sending the same patch again changes nothing, list order included, so the server can
    // skip the write and keep the resourceVersion.
    assert_eq!(apply(&once, patch), once);
    // Nor does an empty patch or one restating what the object already has.
    assert_eq!(apply(&once, json!({})), once);
    let restate = json!({"metadata": {"labels": {"app": "web"}, "finalizers": ["example.com/b"]},
        "spec": {"template": {"spec": {"containers": [{"name": "sidecar", "image": "busybox:1.36"}],
                                      "volumes": [{"name": "data", "emptyDir": {}}]}}}});
    assert_eq!(apply(&once, restate), once);
}

#[test]
fn owner_references_merge_by_uid_and_conditions_by_type() {
    let pod = json!({"metadata": {"ownerReferences": [{"uid": "1", "name": "a"}]},
        "status": {"conditions": [{"type": "Ready", "status": "False"}, {"type": "PodScheduled", "status": "True"}]}});
    let patch = json!({"metadata": {"ownerReferences": [{"uid": "2", "name": "b"}]},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]}});
    let out = strategic_merge(&pod, &patch, &meta("v1", "Pod")).unwrap();
    assert_eq!(
        out["metadata"]["ownerReferences"],
        json!([{"uid": "2", "name": "b"}, {"uid": "1", "name": "a"}])
    );
    assert_eq!(
        out["status"]["conditions"],
        json!([{"type": "Ready", "status": "True"}, {"type": "PodScheduled", "status": "True"}])
    );
}

#[test]
fn config_maps_merge_data_key_by_key() {
    let cm = json!({"data": {"a": "1", "b": "2"}});
    let out = strategic_merge(
        &cm,
        &json!({"data": {"a": "10", "b": null, "c": "3"}}),
        &meta("v1", "ConfigMap"),
    )
    .unwrap();
    assert_eq!(out["data"], json!({"a": "10", "c": "3"}));
}

#[test]
fn cron_job_templates_reach_the_pod_spec() {
    let cj = json!({"spec": {"jobTemplate": {"spec": {"template": {"spec": {"containers": [{"name": "a", "image": "1"}, {"name": "b", "image": "1"}]}}}}}});
    let patch = json!({"spec": {"jobTemplate": {"spec": {"template": {"spec": {"containers": [{"name": "b", "image": "2"}]}}}}}});
    let out = strategic_merge(&cj, &patch, &meta("batch/v1", "CronJob")).unwrap();
    assert_eq!(
        out["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"],
        json!([{"name": "a", "image": "1"}, {"name": "b", "image": "2"}])
    );
}

#[test]
fn new_values_are_cleaned_of_nulls_and_directives() {
    let out = apply(
        &deployment(),
        json!({"spec": {"template": {"spec": {"containers": [
        {"name": "new", "image": "x", "resources": null, "env": [{"$patch": "replace"}, {"name": "A", "value": null}]}]}}}}),
    );
    assert_eq!(
        pod_spec(&out)["containers"][0],
        json!({"name": "new", "image": "x", "env": [{"name": "A"}]})
    );
}

#[test]
fn crd_schema_list_map_merges_by_all_keys() {
    let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "routes": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["host", "path"],
                   "items": {"type": "object"}},
        "tags": {"type": "array", "x-kubernetes-list-type": "set"}}}}});
    let obj = json!({"metadata": {"finalizers": ["a"]},
        "spec": {"routes": [{"host": "a", "path": "/", "to": "x"}, {"host": "a", "path": "/api", "to": "y"}], "tags": ["t1"]}});
    let patch = json!({"metadata": {"finalizers": ["b"]},
        "spec": {"routes": [{"host": "a", "path": "/api", "to": "z"}], "tags": ["t2"]}});
    let out = strategic_merge(&obj, &patch, &SchemaPatchMeta::for_object(&schema)).unwrap();
    assert_eq!(
        out["spec"]["routes"],
        json!([{"host": "a", "path": "/", "to": "x"}, {"host": "a", "path": "/api", "to": "z"}])
    );
    assert_eq!(out["spec"]["tags"], json!(["t2", "t1"]));
    assert_eq!(out["metadata"]["finalizers"], json!(["b", "a"]));
}

#[test]
fn without_metadata_it_is_a_json_merge_patch() {
    let out = strategic_merge(
        &json!({"a": {"b": 1, "c": [1, 2]}}),
        &json!({"a": {"b": null, "c": [3]}}),
        &NoPatchMeta,
    )
    .unwrap();
    assert_eq!(out, json!({"a": {"c": [3]}}));
}

#[test]
fn documents_must_be_objects() {
    for (o, p) in [
        (json!([]), json!({})),
        (json!({}), json!("x")),
        (json!(1), json!({})),
    ] {
        let err = strategic_merge(&o, &p, &NoPatchMeta).unwrap_err();
        assert_eq!(
            (err.to_string().as_str(), err.http_status()),
            ("invalid JSON document", 400)
        );
    }
    assert_eq!(
        strategic_merge(&Value::Null, &json!({"a": 1}), &NoPatchMeta).unwrap(),
        json!({"a": 1})
    );
}
