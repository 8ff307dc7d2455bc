//! Pruning of unknown fields and defaulting.

use opkit_schema::Schema;
use serde_json::{Value, json};

fn compile(schema: Value) -> Schema {
    match Schema::compile(&schema, "spec.versions[0].schema.openAPIV3Schema") {
        Ok(s) => s,
        Err(e) => panic!(
            "schema rejected: {:?}",
            e.iter().map(ToString::to_string).collect::<Vec<_>>()
        ),
    }
}

#[test]
fn prunes_unknown_fields_and_reports_paths() {
    let s = compile(
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "a": {"type": "string"},
        "nested": {"type": "object", "properties": {"b": {"type": "integer"}}},
        "list": {"type": "array", "items": {"type": "object", "properties": {"c": {"type": "string"}}}}}}}}),
    );
    let mut obj = json!({
        "apiVersion": "example.com/v1", "kind": "Thing",
        "metadata": {"name": "x", "whatever": {"kept": true}},
        "spec": {"a": "1", "foo": 1, "nested": {"b": 2, "bar": {}}, "list": [{"c": "x", "d": 1}, {"e": 2}]},
        "extra": "y"
    });
    let paths = s.prune(&mut obj);
    assert_eq!(
        paths,
        [
            "extra",
            "spec.foo",
            "spec.list[0].d",
            "spec.list[1].e",
            "spec.nested.bar"
        ]
    );
    assert_eq!(
        obj,
        json!({
            "apiVersion": "example.com/v1", "kind": "Thing",
            "metadata": {"name": "x", "whatever": {"kept": true}},
            "spec": {"a": "1", "nested": {"b": 2}, "list": [{"c": "x"}, {}]}
        })
    );
}

#[test]
fn root_metadata_kind_and_api_version_are_kept_without_schema() {
    let s = compile(json!({"type": "object"}));
    let mut obj =
        json!({"apiVersion": "a/v1", "kind": "K", "metadata": {"name": "n", "x": 1}, "spec": {}});
    assert_eq!(s.prune(&mut obj), ["spec"]);
    assert_eq!(
        obj,
        json!({"apiVersion": "a/v1", "kind": "K", "metadata": {"name": "n", "x": 1}})
    );
}

#[test]
fn preserve_unknown_fields_keeps_everything_below() {
    let s = compile(json!({"type": "object", "properties": {
        "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
            "properties": {"typed": {"type": "object", "properties": {"a": {"type": "string"}}}}}}}));
    let mut obj = json!({"apiVersion": "a/v1", "kind": "K", "spec": {"free": {"x": [1, {"y": 2}]}, "typed": {"a": "1", "b": 2}}});
    let paths = s.prune(&mut obj);
    // Specified sub-schemas switch back to pruning.
    assert_eq!(paths, ["spec.typed.b"]);
    assert_eq!(obj["spec"]["free"], json!({"x": [1, {"y": 2}]}));
}

#[test]
fn preserve_unknown_fields_at_root() {
    let s = compile(json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}));
    let mut obj = json!({"apiVersion": "a/v1", "kind": "K", "anything": {"goes": true}});
    assert!(s.prune(&mut obj).is_empty());
    assert_eq!(obj["anything"], json!({"goes": true}));
}

#[test]
fn additional_properties_values_are_pruned_by_their_schema() {
    let s = compile(
        json!({"type": "object", "properties": {"spec": {"type": "object", "additionalProperties": {
        "type": "object", "properties": {"a": {"type": "string"}}}}}}),
    );
    let mut obj = json!({"spec": {"k1": {"a": "x", "b": 1}, "k2": {}}});
    assert_eq!(s.prune(&mut obj), ["spec.k1.b"]);
    assert_eq!(obj, json!({"spec": {"k1": {"a": "x"}, "k2": {}}}));
}

#[test]
fn embedded_resources_keep_type_meta_and_object_meta_fields() {
    let s = compile(
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "template": {"type": "object", "x-kubernetes-embedded-resource": true,
            "properties": {"spec": {"type": "object", "properties": {"a": {"type": "string"}}}}}}}}}),
    );
    let mut obj = json!({"spec": {"template": {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "labels": {"a": "b"}, "bogus": 1, "annotations": {}},
        "spec": {"a": "x", "b": "y"},
        "other": 1
    }}});
    let paths = s.prune(&mut obj);
    assert_eq!(
        paths,
        [
            "spec.template.other",
            "spec.template.spec.b",
            "spec.template.metadata.bogus"
        ]
    );
    assert_eq!(
        obj,
        json!({"spec": {"template": {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "labels": {"a": "b"}},
            "spec": {"a": "x"}
        }}})
    );
}

#[test]
fn embedded_resource_with_preserve_unknown_fields() {
    let s = compile(
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "raw": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}}}}}),
    );
    let mut obj = json!({"spec": {"raw": {"apiVersion": "v1", "kind": "ConfigMap", "data": {"k": "v"},
        "metadata": {"name": "c", "nope": true}}}});
    assert_eq!(s.prune(&mut obj), ["spec.raw.metadata.nope"]);
    assert_eq!(obj["spec"]["raw"]["data"], json!({"k": "v"}));
}

#[test]
fn non_nullable_nulls_without_default_are_dropped() {
    let s = compile(
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "a": {"type": "string"},
        "b": {"type": "string", "nullable": true},
        "c": {"type": "string", "default": "dc"}}}}}),
    );
    let mut obj = json!({"spec": {"a": null, "b": null, "c": null}});
    assert!(s.prune(&mut obj).is_empty());
    assert_eq!(obj, json!({"spec": {"b": null, "c": null}}));
    s.apply_defaults(&mut obj);
    assert_eq!(obj, json!({"spec": {"b": null, "c": "dc"}}));
    assert!(s.validate(&obj).is_empty());
}

#[test]
fn defaults_applied_recursively() {
    let s = compile(
        json!({"type": "object", "properties": {"spec": {"type": "object", "default": {},
        "properties": {
            "replicas": {"type": "integer", "default": 1},
            "strategy": {"type": "object", "default": {}, "properties": {
                "type": {"type": "string", "default": "Rolling"}}}}}}}),
    );
    let mut obj = json!({"apiVersion": "a/v1", "kind": "K"});
    s.apply_defaults(&mut obj);
    assert_eq!(
        obj["spec"],
        json!({"replicas": 1, "strategy": {"type": "Rolling"}})
    );

    let mut obj = json!({"spec": {"replicas": 3, "strategy": {"type": "Recreate"}}});
    s.apply_defaults(&mut obj);
    assert_eq!(
        obj["spec"],
        json!({"replicas": 3, "strategy": {"type": "Recreate"}})
    );
}

#[test]
fn defaults_in_array_items() {
    let s = compile(
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "ports": {"type": "array", "items": {"type": "object", "properties": {
            "protocol": {"type": "string", "default": "TCP"}, "port": {"type": "integer"}}}}}}}}),
    );
    let mut obj = json!({"spec": {"ports": [{"port": 80}, {"port": 53, "protocol": "UDP"}]}});
    s.apply_defaults(&mut obj);
    assert_eq!(
        obj["spec"]["ports"],
        json!([{"port": 80, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}])
    );
}

#[test]
fn defaults_in_maps() {
    let s = compile(
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "byName": {"type": "object", "additionalProperties": {"type": "object", "properties": {
            "enabled": {"type": "boolean", "default": true}}}}}}}}),
    );
    let mut obj = json!({"spec": {"byName": {"a": {}, "b": {"enabled": false}}}});
    s.apply_defaults(&mut obj);
    assert_eq!(
        obj["spec"]["byName"],
        json!({"a": {"enabled": true}, "b": {"enabled": false}})
    );
}

#[test]
fn null_items_and_map_values_take_their_default() {
    let s = compile(
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "list": {"type": "array", "items": {"type": "string", "default": "d"}},
        "map": {"type": "object", "additionalProperties": {"type": "string", "default": "m"}}}}}}),
    );
    let mut obj = json!({"spec": {"list": ["a", null], "map": {"k": null}}});
    s.prune(&mut obj);
    s.apply_defaults(&mut obj);
    assert_eq!(obj["spec"], json!({"list": ["a", "d"], "map": {"k": "m"}}));
}

#[test]
fn nullable_null_is_not_defaulted() {
    let s = compile(
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "a": {"type": "string", "nullable": true, "default": "x"}}}}}),
    );
    let mut obj = json!({"spec": {"a": null}});
    s.prune(&mut obj);
    s.apply_defaults(&mut obj);
    assert_eq!(obj["spec"], json!({"a": null}));
    let mut obj = json!({"spec": {}});
    s.apply_defaults(&mut obj);
    assert_eq!(obj["spec"], json!({"a": "x"}));
}

#[test]
fn defaults_are_deep_copies() {
    let s = compile(
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "o": {"type": "object", "default": {"k": "v"}, "properties": {"k": {"type": "string"}}}}}}}),
    );
    let mut a = json!({"spec": {}});
    let mut b = json!({"spec": {}});
    s.apply_defaults(&mut a);
    a["spec"]["o"]["k"] = json!("changed");
    s.apply_defaults(&mut b);
    assert_eq!(b["spec"]["o"]["k"], json!("v"));
}

#[test]
fn int_or_string_values_survive_pruning() {
    let s = compile(
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "port": {"x-kubernetes-int-or-string": true}}}}}),
    );
    let mut obj = json!({"spec": {"port": "http"}});
    assert!(s.prune(&mut obj).is_empty());
    assert_eq!(obj["spec"]["port"], json!("http"));
}
