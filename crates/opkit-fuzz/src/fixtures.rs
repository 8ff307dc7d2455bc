//! Realistic objects and schemas the structured targets start from.
//!
//! Random JSON rarely looks like a Deployment, so the patch and apply targets start from real
//! shapes (keyed lists of containers, ports, env, finalizers) and let the fuzzer vary them.

use serde_json::{Value, json};

/// A Deployment with the keyed lists strategic merge and apply treat specially.
pub fn deployment() -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"},
            "finalizers": ["a", "b"]},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [
                    {"name": "app", "image": "app:1",
                     "ports": [{"containerPort": 80, "protocol": "TCP"}],
                     "env": [{"name": "A", "value": "1"}],
                     "volumeMounts": [{"name": "v", "mountPath": "/v"}]},
                    {"name": "side", "image": "side:1"}
                ], "volumes": [{"name": "v", "emptyDir": {}}]}
            }
        }
    })
}

/// A Pod with keyed lists at the top of its spec.
pub fn pod() -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default", "labels": {"app": "web"}},
        "spec": {"containers": [
            {"name": "app", "image": "app:1", "ports": [{"containerPort": 80}],
             "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]}
        ], "tolerations": [{"key": "k", "operator": "Exists"}]}
    })
}

/// A CRD version's `openAPIV3Schema` with the list and map types of structured merge:
/// a map-list keyed by `name`, a set, an atomic list, a granular and an atomic map.
pub fn crd_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "spec": {"type": "object", "properties": {
                "replicas": {"type": "integer", "minimum": 0, "default": 1},
                "ports": {"type": "array", "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"],
                    "items": {"type": "object", "required": ["name"], "properties": {
                        "name": {"type": "string"}, "port": {"type": "integer"}}}},
                "tags": {"type": "array", "x-kubernetes-list-type": "set",
                    "items": {"type": "string"}},
                "args": {"type": "array", "items": {"type": "string"}},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "selector": {"type": "object", "x-kubernetes-map-type": "atomic",
                    "additionalProperties": {"type": "string"}},
                "mode": {"type": "string", "enum": ["a", "b"], "default": "a"}
            }},
            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
        }
    })
}

/// A custom resource valid under [`crd_schema`].
pub fn custom_resource() -> Value {
    json!({
        "apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w", "namespace": "default"},
        "spec": {"replicas": 1, "ports": [{"name": "http", "port": 80}], "tags": ["x"],
            "args": ["--v"], "labels": {"a": "1"}, "selector": {"app": "w"}, "mode": "a"}
    })
}
