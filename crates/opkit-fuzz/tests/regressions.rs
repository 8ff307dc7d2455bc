//! Minimal inputs of failures the fuzz targets found, one named test each, so that a fix stays
//! fixed. Failures in `opkit-apiserver` that are not fixed yet are `#[ignore]`d with the reason.

use opkit_fuzz::{ApplyKind, MetaChoice, fixtures};
use serde_json::json;

/// Field selector found by the `field_selector` fuzz target: `==` terms are sorted by their
/// raw text but written back as `=`, so `==,=<,=,,=,` re-parses from its canonical form
/// `=,=,=<,=` with the requirements in another order. Same requirements, same matches; the
/// property compares them order-insensitively.
#[test]
fn field_selector_double_equals_round_trips_to_same_requirements() {
    opkit_fuzz::field_selector(b"==,=<,=,,=,");
    let sel = opkit_apimachinery::FieldSelector::parse("==,=<,=,,=,").unwrap();
    let again = opkit_apimachinery::FieldSelector::parse(&sel.to_string()).unwrap();
    assert_eq!(sel.requirements().len(), again.requirements().len());
}

/// Strategic merge: a malformed `$setElementOrder` inside a map new to the object was dropped
/// silently, so the patch applied once and failed (400) on its own result.
#[test]
fn strategic_merge_refuses_bad_set_element_order_in_new_map() {
    opkit_fuzz::strategic_merge_values(
        MetaChoice::Deployment,
        &fixtures::deployment(),
        &json!({"b": -9_223_372_036_854_775_645i64,
            "volumeMounts": {"$setElementOrder/finalizers": false}}),
    );
}

/// Strategic merge: the same with a `null` `$retainKeys`, for a custom resource.
#[test]
fn strategic_merge_refuses_null_retain_keys_in_new_map() {
    let mut patch = fixtures::custom_resource();
    patch["apiVersion"] = json!({"a": {"$retainKeys": null}});
    opkit_fuzz::strategic_merge_values(MetaChoice::Schema, &fixtures::custom_resource(), &patch);
}

/// Strategic merge, found by the `strategic_merge` fuzz target (not fixed, reported): in a map
/// new to the object, `$deleteFromPrimitiveList/finalizers: null` is dropped and `finalizers`
/// kept; applied again to the result (the map now exists) it removes `finalizers`. The target
/// no longer asserts idempotence for such patches; this test pins the current behaviour.
#[test]
fn strategic_merge_delete_from_primitive_list_null_differs_on_new_and_existing_maps() {
    let meta = opkit_strategic::BuiltinPatchMeta::for_kind("", "v1", "Pod").unwrap();
    let patch = json!({"status": {"x": {"$deleteFromPrimitiveList/finalizers": null,
        "finalizers": "$patch"}}});
    let once = opkit_strategic::strategic_merge(&fixtures::pod(), &patch, &meta).unwrap();
    assert_eq!(once["status"]["x"], json!({"finalizers": "$patch"}));
    let twice = opkit_strategic::strategic_merge(&once, &patch, &meta).unwrap();
    assert_eq!(twice["status"]["x"], json!({}));
    opkit_fuzz::strategic_merge_values(MetaChoice::Pod, &fixtures::pod(), &patch);
}

/// Apply bookkeeping: an update that turns `spec` from an object into a list leaves the
/// appliers owning `spec.replicas`, `spec.ports[name=http]`… which no longer exist
/// (`opkit_apply::compare` reports the changed node as modified but nothing below the old
/// object as removed). A later apply of any of those fields then conflicts with a manager that
/// owns nothing there.
#[test]
#[ignore = "opkit-apply: compare() does not mark the old subtree removed when a field changes shape; not fixed yet"]
fn apply_update_changing_spec_type_drops_ownership_below_it() {
    let cr = fixtures::custom_resource();
    let schema = fixtures::crd_schema();
    let meta = opkit_strategic::SchemaPatchMeta::for_object(&schema);
    let present =
        opkit_apply::field_set(opkit_apply::Types::custom(&meta), &json!({"spec": []})).unwrap();
    let scope = opkit_apply::Scope::new(
        opkit_apply::Types::custom(&meta),
        "example.com/v1",
        "2026-01-01T00:00:00Z",
    );
    let mut managed = opkit_apply::ManagedFields::default();
    let applied = opkit_apply::apply(&scope, &json!({}), &cr, &mut managed, "a", false).unwrap();
    let mut edited = applied.clone();
    edited["spec"] = json!([]);
    opkit_apply::update(&scope, &applied, &mut edited, &mut managed, "c").unwrap();
    for e in managed.entries() {
        let dangling = e.fields.difference(&present);
        assert!(
            dangling.paths().iter().all(|p| p.len() <= 1),
            "{} still owns {:?}",
            e.manager,
            dangling.paths()
        );
    }
}

/// The same through the target's properties (bookkeeping decodes, re-apply is a no-op).
#[test]
fn apply_target_properties_hold_across_a_spec_type_change() {
    let cr = fixtures::custom_resource();
    let mut edit = cr.clone();
    edit["spec"] = json!([]);
    opkit_fuzz::apply_values(ApplyKind::Custom, &cr, &cr, &cr, false, &edit);
}

/// Apply, found by the `apply` property tests (not fixed, reported): applying a configuration
/// with `data.b: null` to a new object stores `"b": null`; re-applying the same configuration
/// removes it (and restamps the entry's time), so the first apply was not a fixed point. The
/// targets strip `null`s from configurations until this is settled.
#[test]
#[ignore = "opkit-apply: an applied null is kept on create and removed on re-apply; not fixed yet"]
fn apply_reapplying_a_config_with_null_is_a_no_op() {
    let meta = opkit_strategic::BuiltinPatchMeta::for_kind("", "v1", "ConfigMap").unwrap();
    let types = opkit_apply::Types::builtin(&meta);
    let config = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
        "data": {"a": "1", "b": null}});
    let mut managed = opkit_apply::ManagedFields::default();
    let scope = opkit_apply::Scope::new(types, "v1", "2026-01-01T00:00:00Z");
    let once = opkit_apply::apply(&scope, &json!({}), &config, &mut managed, "a", false).unwrap();
    let later = opkit_apply::Scope::new(types, "v1", "2026-01-01T00:01:00Z");
    let twice = opkit_apply::apply(&later, &once, &config, &mut managed, "a", false).unwrap();
    assert_eq!(twice, once);
}

/// Request target, found by the `request` fuzz target (a bug of the target, not the server): a
/// `#` fragment made the target think `/healthz#` was not the public health check, which
/// answers 200 without a token.
#[test]
fn request_health_check_with_fragment_is_public() {
    opkit_fuzz::request_values(&opkit_fuzz::FuzzRequest {
        method: "POST".into(),
        uri: "/healthz#".into(),
        content_type: None,
        accept: None,
        authenticated: false,
        body: Vec::new(),
    });
}

/// Strategic merge, found by the `strategic_merge` fuzz target (not fixed, reported): in a map
/// new to the object, `$setElementOrder/containers` next to a `containers` that is a map is
/// dropped silently; applied again to the result (the map now exists) the same patch fails
/// with `expected a []interface {}, but received a map[string]interface {}`.
#[test]
#[ignore = "opkit-strategic: $setElementOrder of a non-list is checked only in existing maps; not fixed yet"]
fn strategic_merge_set_element_order_of_a_map_in_new_value() {
    opkit_fuzz::strategic_merge_values(
        MetaChoice::Schema,
        &fixtures::custom_resource(),
        &json!({"apiVersion": {"$setElementOrder/containers": [],
            "containers": {"metadata": {}}}}),
    );
}

/// Server, found by the `request` fuzz target: a strategic merge patch with an unknown `$patch`
/// value (`{"$patch":true,"volumeMounts":{}}`) was answered 500 InternalError, as upstream
/// does; client input must get a 4xx, and now gets 400 BadRequest.
#[test]
fn request_strategic_patch_with_unknown_patch_directive_is_a_client_error() {
    opkit_fuzz::request_values(&opkit_fuzz::FuzzRequest {
        method: "PATCH".into(),
        uri: "/api/v1/namespaces/default".into(),
        content_type: Some("application/strategic-merge-patch+json".into()),
        accept: None,
        authenticated: true,
        body: br#"{"$patch":true,"volumeMounts":{}}"#.to_vec(),
    });
}

/// Template engine, found by probing the `template` target's step bound: a `range` whose body
/// is empty visited no node, so it did no counted work, and nested ranges over long lists ran
/// for hours under a 100,000-step bound. Every iteration now counts as a step.
#[test]
fn nested_ranges_with_empty_bodies_stop_at_the_step_bound() {
    let text = "{{range until 1000000}}{{range until 1000000}}{{end}}{{end}}";
    opkit_fuzz::template_values(text, &json!(null), false);
    let mut set = opkit_fuzz::bounded_templates();
    set.parse("t", text).expect("parses");
    let err = set
        .execute("t", &opkit_fuzz::helm_data(&json!(null), false))
        .expect_err("bounded");
    assert!(
        err.to_string().ends_with(&format!(
            "execution exceeds {} steps",
            opkit_fuzz::MAX_STEPS
        )),
        "{err}"
    );
}

/// KUDO mode had no work bound at all (KUDO has none); `Renderer::set_bounds` gives it the
/// engine's step and output bounds, which the `kudo` target uses.
#[test]
fn kudo_renderer_with_bounds_stops_a_template_that_runs_for_ever() {
    let vars = opkit_template::kudo::Variables::default();
    let mut r = opkit_template::kudo::Renderer::new();
    r.set_bounds(Some(1000), Some(64));
    let err = r
        .render(
            "t",
            "{{range until 1000000}}{{range until 1000000}}{{end}}{{end}}",
            &vars,
        )
        .expect_err("bounded work");
    assert!(
        err.to_string().ends_with("execution exceeds 1000 steps"),
        "{err}"
    );
    let err = r
        .render("t", "{{ repeat 65 \"x\" }}", &vars)
        .expect_err("bounded output");
    assert!(
        err.to_string().ends_with("output exceeds 64 bytes"),
        "{err}"
    );
}

/// `include` recursing into itself stops at Helm's depth, as does `tpl` re-entering itself
/// through a value.
#[test]
fn self_including_templates_stop_at_the_depth_bound() {
    let values = json!({"s": "{{ tpl .Values.s . }}"});
    for text in [
        r#"{{define "x"}}{{include "x" .}}{{end}}{{include "x" .}}"#,
        r#"{{define "x"}}{{template "x" .}}{{end}}{{template "x" .}}"#,
        r#"{{ tpl .Values.s . }}"#,
    ] {
        opkit_fuzz::template_values(text, &values, false);
        let mut set = opkit_fuzz::bounded_templates();
        set.parse("t", text).expect("parses");
        let err = set
            .execute("t", &opkit_fuzz::helm_data(&values, false))
            .expect_err("bounded depth");
        assert!(
            err.to_string().ends_with(&format!(
                "exceeded maximum template depth ({})",
                opkit_fuzz::MAX_DEPTH
            )),
            "{text}: {err}"
        );
    }
}
