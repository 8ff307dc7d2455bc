//! Rough timing of the per-request operations on a typical custom resource
//! (`cargo test -p opkit-schema --release --test perf -- --ignored --nocapture`).

use std::time::Instant;

use opkit_schema::Schema;
use serde_json::json;

#[test]
#[ignore = "timing only; run in release mode"]
fn typical_cr_is_microseconds() {
    let schema = Schema::compile(
        &json!({"type": "object", "properties": {
            "apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {"type": "object"},
            "spec": {"type": "object", "required": ["image"], "properties": {
                "image": {"type": "string", "pattern": "^[a-z0-9./:-]+$", "maxLength": 200},
                "replicas": {"type": "integer", "minimum": 0, "maximum": 100, "default": 1, "format": "int32"},
                "mode": {"type": "string", "enum": ["Fast", "Safe"], "default": "Safe"},
                "port": {"x-kubernetes-int-or-string": true},
                "env": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                    "items": {"type": "object", "required": ["name"], "properties": {
                        "name": {"type": "string"}, "value": {"type": "string"}}}},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "resources": {"type": "object", "properties": {
                    "cpu": {"type": "string"}, "memory": {"type": "string"}}}}},
            "status": {"type": "object", "properties": {
                "ready": {"type": "boolean"}, "observedGeneration": {"type": "integer", "format": "int64"},
                "conditions": {"type": "array", "items": {"type": "object", "properties": {
                    "type": {"type": "string"}, "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
                    "lastTransitionTime": {"type": "string", "format": "date-time"}}}}}}}}),
        "spec.versions[0].schema.openAPIV3Schema",
    )
    .unwrap();
    let obj = json!({"apiVersion": "example.com/v1", "kind": "App",
        "metadata": {"name": "a", "namespace": "default", "labels": {"x": "y"}},
        "spec": {"image": "registry.example.com/app:1.2.3", "replicas": 3, "port": "http",
            "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}, {"name": "C", "value": "3"}],
            "labels": {"team": "a", "tier": "web"}, "resources": {"cpu": "100m", "memory": "64Mi"}},
        "status": {"ready": true, "observedGeneration": 4, "conditions": [
            {"type": "Ready", "status": "True", "lastTransitionTime": "2024-01-02T03:04:05Z"}]}});
    let n = 20_000;
    let t = Instant::now();
    for _ in 0..n {
        assert!(schema.validate(std::hint::black_box(&obj)).is_empty());
    }
    let validate = t.elapsed() / n;
    let t = Instant::now();
    for _ in 0..n {
        let mut o = obj.clone();
        let _ = schema.prune(&mut o);
        schema.apply_defaults(&mut o);
        std::hint::black_box(o);
    }
    let prune_default = t.elapsed() / n;
    println!("validate: {validate:?}/object, clone+prune+default: {prune_default:?}/object");
}
