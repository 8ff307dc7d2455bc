//! Validation of custom resources: each keyword, with upstream's exact messages.

use opkit_schema::{FieldErrorKind, Schema};
use serde_json::{Value, json};

const PREFIX: &str = "spec.versions[0].schema.openAPIV3Schema";

fn compile(schema: Value) -> Schema {
    match Schema::compile(&schema, PREFIX) {
        Ok(s) => s,
        Err(e) => panic!(
            "schema rejected: {:?}",
            e.iter().map(ToString::to_string).collect::<Vec<_>>()
        ),
    }
}

/// Compiles `spec` as the schema of `.spec` and validates `{spec: value}`.
fn check_spec(spec: Value, value: Value) -> Vec<String> {
    let s = compile(json!({"type": "object", "properties": {"spec": spec}}));
    s.validate(&json!({"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": "a"}, "spec": value}))
        .iter()
        .map(ToString::to_string)
        .collect()
}

fn field_schema(x: Value) -> Value {
    json!({"type": "object", "properties": {"x": x}})
}

fn check_x(x: Value, value: Value) -> Vec<String> {
    check_spec(field_schema(x), json!({ "x": value }))
}

fn design_brief_schema() -> Schema {
    let yaml_equivalent = json!({
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "from": {"type": "string"},
                    "to": {"type": "string"},
                    "number": {"type": "integer", "minimum": 1, "maximum": 10}
                }
            }
        }
    });
    compile(yaml_equivalent)
}

fn cr(spec: Value) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": "a"}, "spec": spec})
}

#[test]
fn design_brief_number_above_maximum() {
    let errs = design_brief_schema().validate(&cr(json!({"from": "a", "to": "b", "number": 11})));
    assert_eq!(errs.len(), 1);
    assert_eq!(
        errs[0].to_string(),
        "spec.number: Invalid value: 11: spec.number in body should be less than or equal to 10"
    );
    assert_eq!(errs[0].kind, FieldErrorKind::Invalid);
    assert_eq!(errs[0].field, "spec.number");
    assert_eq!(errs[0].value, Some(json!(11)));
    assert_eq!(errs[0].reason(), "FieldValueInvalid");
}

#[test]
fn design_brief_number_below_minimum() {
    let errs = design_brief_schema().validate(&cr(json!({"number": 0})));
    assert_eq!(
        errs.iter().map(ToString::to_string).collect::<Vec<_>>(),
        ["spec.number: Invalid value: 0: spec.number in body should be greater than or equal to 1"]
    );
}

#[test]
fn design_brief_valid_object() {
    assert!(
        design_brief_schema()
            .validate(&cr(json!({"from": "a", "to": "b", "number": 5})))
            .is_empty()
    );
    assert!(design_brief_schema().validate(&cr(json!({}))).is_empty());
}

#[test]
fn wrong_type_is_type_invalid() {
    let errs = design_brief_schema().validate(&cr(json!({"number": "string"})));
    assert_eq!(errs.len(), 1);
    assert_eq!(
        errs[0].to_string(),
        r#"spec.number: Invalid value: "string": spec.number in body must be of type integer: "string""#
    );
    assert_eq!(errs[0].reason(), "FieldValueTypeInvalid");
}

#[test]
fn type_checks_for_each_type() {
    assert_eq!(
        check_x(json!({"type": "string"}), json!(1)),
        [r#"spec.x: Invalid value: "integer": spec.x in body must be of type string: "integer""#]
    );
    assert_eq!(
        check_x(json!({"type": "boolean"}), json!("true")),
        [r#"spec.x: Invalid value: "string": spec.x in body must be of type boolean: "string""#]
    );
    assert_eq!(
        check_x(json!({"type": "object"}), json!([])),
        [r#"spec.x: Invalid value: "array": spec.x in body must be of type object: "array""#]
    );
    assert_eq!(
        check_x(
            json!({"type": "array", "items": {"type": "string"}}),
            json!({})
        ),
        [r#"spec.x: Invalid value: "object": spec.x in body must be of type array: "object""#]
    );
    assert!(check_x(json!({"type": "number"}), json!(1)).is_empty());
    assert!(check_x(json!({"type": "number"}), json!(1.5)).is_empty());
    assert!(check_x(json!({"type": "boolean"}), json!(false)).is_empty());
}

#[test]
fn integer_accepts_only_integral_numbers() {
    assert!(check_x(json!({"type": "integer"}), json!(3)).is_empty());
    assert!(check_x(json!({"type": "integer"}), json!(3.0)).is_empty());
    let errs = check_x(json!({"type": "integer"}), json!(1.5));
    assert_eq!(
        errs[0],
        r#"spec.x: Invalid value: "number": spec.x in body must be of type integer: "number""#
    );
}

#[test]
fn null_for_non_nullable_field() {
    assert_eq!(
        check_x(json!({"type": "string"}), Value::Null),
        [r#"spec.x: Invalid value: "null": spec.x in body must be of type string: "null""#]
    );
}

#[test]
fn nullable_accepts_null() {
    assert!(check_x(json!({"type": "string", "nullable": true}), Value::Null).is_empty());
    assert!(
        check_x(
            json!({"type": "object", "nullable": true, "properties": {"a": {"type": "string"}}}),
            Value::Null
        )
        .is_empty()
    );
}

#[test]
fn required_missing_field() {
    let errs = check_spec(
        json!({"type": "object", "required": ["from", "to"], "properties": {"from": {"type": "string"}, "to": {"type": "string"}}}),
        json!({"to": "x"}),
    );
    assert_eq!(errs, ["spec.from: Required value"]);
}

#[test]
fn required_at_the_root() {
    let s = compile(
        json!({"type": "object", "required": ["spec"], "properties": {"spec": {"type": "object"}}}),
    );
    let errs = s.validate(&json!({"apiVersion": "a/v1", "kind": "K", "metadata": {"name": "n"}}));
    assert_eq!(errs.len(), 1);
    assert_eq!(errs[0].to_string(), "spec: Required value");
    assert_eq!(errs[0].reason(), "FieldValueRequired");
}

#[test]
fn enum_unsupported_value() {
    let errs = check_x(json!({"type": "string", "enum": ["a", "b"]}), json!("c"));
    assert_eq!(
        errs,
        [r#"spec.x: Unsupported value: "c": supported values: "a", "b""#]
    );
    assert!(check_x(json!({"type": "string", "enum": ["a", "b"]}), json!("a")).is_empty());
}

#[test]
fn enum_of_numbers_and_objects() {
    assert_eq!(
        check_x(json!({"type": "integer", "enum": [1, 2]}), json!(3)),
        [r#"spec.x: Unsupported value: 3: supported values: "1", "2""#]
    );
    assert!(check_x(json!({"type": "integer", "enum": [1, 2]}), json!(2)).is_empty());
    assert_eq!(
        check_x(
            json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true, "enum": [{"a": 1}]}),
            json!({"a": 2})
        ),
        [r#"spec.x: Unsupported value: {"a":2}: supported values: "{\"a\":1}""#]
    );
}

#[test]
fn enum_rejects_null_even_when_nullable() {
    // kube-openapi's enum check never matches null.
    assert_eq!(
        check_x(
            json!({"type": "string", "nullable": true, "enum": ["a"]}),
            Value::Null
        ),
        [r#"spec.x: Unsupported value: null: supported values: "a""#]
    );
}

#[test]
fn maximum_and_minimum_exclusive() {
    assert_eq!(
        check_x(
            json!({"type": "integer", "maximum": 10, "exclusiveMaximum": true}),
            json!(10)
        ),
        ["spec.x: Invalid value: 10: spec.x in body should be less than 10"]
    );
    assert_eq!(
        check_x(
            json!({"type": "integer", "minimum": 1, "exclusiveMinimum": true}),
            json!(1)
        ),
        ["spec.x: Invalid value: 1: spec.x in body should be greater than 1"]
    );
    assert!(
        check_x(
            json!({"type": "integer", "maximum": 10, "exclusiveMaximum": true}),
            json!(9)
        )
        .is_empty()
    );
}

#[test]
fn number_bounds_use_go_float_formatting() {
    assert_eq!(
        check_x(json!({"type": "number", "maximum": 1.5}), json!(2.25)),
        ["spec.x: Invalid value: 2.25: spec.x in body should be less than or equal to 1.5"]
    );
    assert_eq!(
        check_x(json!({"type": "number", "minimum": 1000000}), json!(0.5)),
        ["spec.x: Invalid value: 0.5: spec.x in body should be greater than or equal to 1e+06"]
    );
}

#[test]
fn multiple_of() {
    assert_eq!(
        check_x(json!({"type": "integer", "multipleOf": 3}), json!(10)),
        ["spec.x: Invalid value: 10: spec.x in body should be a multiple of 3"]
    );
    assert!(check_x(json!({"type": "integer", "multipleOf": 3}), json!(9)).is_empty());
    assert_eq!(
        check_x(json!({"type": "number", "multipleOf": 0.5}), json!(0.75)),
        ["spec.x: Invalid value: 0.75: spec.x in body should be a multiple of 0.5"]
    );
    assert!(check_x(json!({"type": "number", "multipleOf": 0.5}), json!(1.5)).is_empty());
}

#[test]
fn max_length_is_too_long() {
    let errs = check_x(json!({"type": "string", "maxLength": 3}), json!("abcd"));
    assert_eq!(errs, ["spec.x: Too long: may not be more than 3 bytes"]);
}

#[test]
fn string_lengths_count_characters() {
    assert!(check_x(json!({"type": "string", "maxLength": 3}), json!("äöü")).is_empty());
    assert_eq!(
        check_x(json!({"type": "string", "minLength": 4}), json!("äöü")),
        [r#"spec.x: Invalid value: "äöü": spec.x in body should be at least 4 chars long"#]
    );
}

#[test]
fn pattern_mismatch() {
    assert_eq!(
        check_x(
            json!({"type": "string", "pattern": "^[a-z]+$"}),
            json!("ABC")
        ),
        [r#"spec.x: Invalid value: "ABC": spec.x in body should match '^[a-z]+$'"#]
    );
    assert!(
        check_x(
            json!({"type": "string", "pattern": "^[a-z]+$"}),
            json!("abc")
        )
        .is_empty()
    );
    // Unanchored like Go's MatchString.
    assert!(check_x(json!({"type": "string", "pattern": "[0-9]"}), json!("ab1c")).is_empty());
}

#[test]
fn string_checks_stop_at_first_failure() {
    let errs = check_x(
        json!({"type": "string", "maxLength": 2, "pattern": "^[0-9]+$"}),
        json!("abc"),
    );
    assert_eq!(errs, ["spec.x: Too long: may not be more than 2 bytes"]);
}

#[test]
fn min_and_max_items() {
    let schema =
        json!({"type": "array", "items": {"type": "string"}, "minItems": 2, "maxItems": 3});
    assert_eq!(
        check_x(schema.clone(), json!(["a"])),
        ["spec.x: Invalid value: 1: spec.x in body should have at least 2 items"]
    );
    let errs = check_x(schema.clone(), json!(["a", "b", "c", "d"]));
    assert_eq!(errs, ["spec.x: Too many: 4: must have at most 3 items"]);
    assert!(check_x(schema, json!(["a", "b"])).is_empty());
}

#[test]
fn unique_items_with_lenient_schema() {
    // uniqueItems is rejected when a CRD is created, but the validator supports it.
    let s = Schema::compile_lenient(&json!({"type": "object", "properties": {
        "x": {"type": "array", "uniqueItems": true, "items": {"type": "integer"}}}}))
    .unwrap();
    let errs: Vec<String> = s
        .validate(&json!({"x": [1, 2, 1]}))
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        errs,
        [r#"x: Invalid value: "": x in body shouldn't contain duplicates"#]
    );
    assert!(s.validate(&json!({"x": [1, 2]})).is_empty());
}

#[test]
fn min_and_max_properties() {
    let schema = json!({"type": "object", "additionalProperties": {"type": "string"}, "minProperties": 1, "maxProperties": 2});
    assert_eq!(
        check_x(schema.clone(), json!({})),
        ["spec.x: Invalid value: 0: spec.x in body should have at least 1 properties"]
    );
    assert_eq!(
        check_x(schema.clone(), json!({"a": "1", "b": "2", "c": "3"})),
        ["spec.x: Too many: 3: must have at most 2 items"]
    );
    assert!(check_x(schema, json!({"a": "1"})).is_empty());
}

#[test]
fn additional_properties_schema_validates_values() {
    let errs = check_x(
        json!({"type": "object", "additionalProperties": {"type": "integer"}}),
        json!({"a": 1, "b": "two"}),
    );
    assert_eq!(
        errs,
        [
            r#"spec.x.b: Invalid value: "string": spec.x.b in body must be of type integer: "string""#
        ]
    );
}

#[test]
fn additional_properties_false_forbids_keys() {
    let errs = check_x(
        json!({"type": "object", "additionalProperties": false}),
        json!({"a": 1}),
    );
    assert_eq!(
        errs,
        [r#"spec.x: Invalid value: "a": spec.x.a in body is a forbidden property"#]
    );
}

#[test]
fn formats() {
    assert_eq!(
        check_x(
            json!({"type": "string", "format": "date-time"}),
            json!("yesterday")
        ),
        [
            r#"spec.x: Invalid value: "yesterday": spec.x in body must be of type date-time: "yesterday""#
        ]
    );
    assert!(
        check_x(
            json!({"type": "string", "format": "date-time"}),
            json!("2024-01-02T03:04:05Z")
        )
        .is_empty()
    );
    assert!(
        check_x(
            json!({"type": "string", "format": "date"}),
            json!("2024-01-02")
        )
        .is_empty()
    );
    assert_eq!(
        check_x(
            json!({"type": "string", "format": "date"}),
            json!("2024-13-02")
        )
        .len(),
        1
    );
    assert_eq!(
        check_x(json!({"type": "string", "format": "uuid"}), json!("nope")).len(),
        1
    );
    assert_eq!(
        check_x(json!({"type": "string", "format": "byte"}), json!("%%%")).len(),
        1
    );
    assert_eq!(
        check_x(json!({"type": "string", "format": "email"}), json!("nope")).len(),
        1
    );
    assert_eq!(
        check_x(
            json!({"type": "string", "format": "hostname"}),
            json!("-x-")
        )
        .len(),
        1
    );
    assert_eq!(
        check_x(json!({"type": "string", "format": "ipv4"}), json!("1.2.3")).len(),
        1
    );
    // Unknown formats are ignored, as upstream strips them.
    assert!(
        check_x(
            json!({"type": "string", "format": "my-own"}),
            json!("anything")
        )
        .is_empty()
    );
    // Password accepts anything.
    assert!(
        check_x(
            json!({"type": "string", "format": "password"}),
            json!("anything")
        )
        .is_empty()
    );
}

#[test]
fn int32_format_range() {
    let errs = check_x(
        json!({"type": "integer", "format": "int32"}),
        json!(3_000_000_000_i64),
    );
    assert_eq!(
        errs,
        [
            r#"<nil>: Invalid value: "": Checked value must be of type integer with format int32 in spec.x"#
        ]
    );
    assert!(
        check_x(
            json!({"type": "integer", "format": "int32"}),
            json!(2_000_000_000)
        )
        .is_empty()
    );
    assert!(
        check_x(
            json!({"type": "integer", "format": "int64"}),
            json!(3_000_000_000_i64)
        )
        .is_empty()
    );
}

#[test]
fn int_or_string() {
    let schema = json!({"x-kubernetes-int-or-string": true});
    assert!(check_x(schema.clone(), json!(5)).is_empty());
    assert!(check_x(schema.clone(), json!("5%")).is_empty());
    assert_eq!(
        check_x(schema.clone(), json!(true)),
        [
            r#"spec.x: Invalid value: "boolean": spec.x in body must be of type integer,string: "boolean""#
        ]
    );
    // The canonical anyOf pattern is accepted structurally and validates too.
    let schema = json!({"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}],
        "pattern": "^[0-9]+%?$"});
    assert!(check_x(schema.clone(), json!("50%")).is_empty());
    assert!(check_x(schema.clone(), json!(3)).is_empty());
    assert_eq!(
        check_x(schema, json!("x")),
        [r#"spec.x: Invalid value: "x": spec.x in body should match '^[0-9]+%?$'"#]
    );
}

#[test]
fn any_of_failure_reports_nil_field_like_upstream() {
    let schema = json!({"type": "string", "anyOf": [{"pattern": "^a"}, {"pattern": "^b"}]});
    let errs = check_x(schema.clone(), json!("c"));
    assert_eq!(
        errs,
        [
            r#"<nil>: Invalid value: "": "spec.x" must validate at least one schema (anyOf)"#,
            r#"spec.x: Invalid value: "c": spec.x in body should match '^a'"#,
        ]
    );
    assert!(check_x(schema, json!("b")).is_empty());
}

#[test]
fn one_of_all_of_and_not() {
    let one_of = json!({"type": "integer", "oneOf": [{"minimum": 5}, {"maximum": 10}]});
    assert!(check_x(one_of.clone(), json!(20)).is_empty());
    assert_eq!(
        check_x(one_of, json!(7)),
        [
            r#"<nil>: Invalid value: "": "spec.x" must validate one and only one schema (oneOf). Found 2 valid alternatives"#
        ]
    );
    let all_of = json!({"type": "integer", "allOf": [{"minimum": 5}, {"maximum": 10}]});
    assert!(check_x(all_of.clone(), json!(7)).is_empty());
    assert_eq!(
        check_x(all_of, json!(11)),
        [
            "spec.x: Invalid value: 11: spec.x in body should be less than or equal to 10",
            r#"<nil>: Invalid value: "": "spec.x" must validate all the schemas (allOf)"#,
        ]
    );
    let not = json!({"type": "string", "not": {"enum": ["forbidden"]}});
    assert!(check_x(not.clone(), json!("ok")).is_empty());
    assert_eq!(
        check_x(not, json!("forbidden")),
        [r#"<nil>: Invalid value: "": "spec.x" must not validate the schema (not)"#]
    );
}

#[test]
fn nested_arrays_and_objects_paths() {
    let schema = json!({"type": "array", "items": {"type": "object", "required": ["name"],
        "properties": {"name": {"type": "string"}, "port": {"type": "integer", "maximum": 65535}}}});
    let errs = check_x(schema, json!([{"name": "a", "port": 70000}, {"port": 1}]));
    assert_eq!(
        errs,
        [
            "spec.x[0].port: Invalid value: 70000: spec.x[0].port in body should be less than or equal to 65535",
            "spec.x[1].name: Required value",
        ]
    );
}

#[test]
fn preserve_unknown_fields_accepts_anything_but_validates_known() {
    let schema = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true,
        "properties": {"known": {"type": "integer"}}});
    assert!(check_x(schema.clone(), json!({"other": {"deep": [1, 2]}})).is_empty());
    assert_eq!(check_x(schema, json!({"known": "x"})).len(), 1);
}

#[test]
fn list_type_set_duplicates() {
    let schema =
        json!({"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}});
    let errs = check_x(schema.clone(), json!(["a", "b", "a", "a"]));
    assert_eq!(errs, [r#"spec.x[2]: Duplicate value: "a""#]);
    assert!(check_x(schema, json!(["a", "b"])).is_empty());
}

#[test]
fn list_type_map_duplicate_keys() {
    let schema = json!({"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
        "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}, "v": {"type": "integer"}}}});
    let errs = check_x(
        schema.clone(),
        json!([{"name": "a", "v": 1}, {"name": "b"}, {"name": "a", "v": 2}]),
    );
    assert_eq!(errs, [r#"spec.x[2]: Duplicate value: {"name":"a"}"#]);
    assert!(check_x(schema, json!([{"name": "a"}, {"name": "b"}])).is_empty());

    let two_keys = json!({"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name", "proto"],
        "items": {"type": "object", "required": ["name", "proto"],
            "properties": {"name": {"type": "string"}, "proto": {"type": "string"}}}});
    assert!(
        check_x(
            two_keys.clone(),
            json!([{"name": "a", "proto": "TCP"}, {"name": "a", "proto": "UDP"}])
        )
        .is_empty()
    );
    assert_eq!(
        check_x(
            two_keys,
            json!([{"name": "a", "proto": "TCP"}, {"name": "a", "proto": "TCP"}])
        ),
        [r#"spec.x[1]: Duplicate value: {"name":"a","proto":"TCP"}"#]
    );
}

#[test]
fn list_type_atomic_allows_duplicates() {
    let schema =
        json!({"type": "array", "x-kubernetes-list-type": "atomic", "items": {"type": "string"}});
    assert!(check_x(schema, json!(["a", "a"])).is_empty());
}

#[test]
fn list_type_map_items_must_be_objects() {
    let s = Schema::compile_lenient(
        &json!({"type": "object", "properties": {"x": {"type": "array",
        "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["k"],
        "x-kubernetes-preserve-unknown-fields": true}}}),
    )
    .unwrap();
    let errs: Vec<String> = s
        .validate(&json!({"x": [{"k": 1}, 5]}))
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        errs,
        ["x[1]: Invalid value: 5: must be an object for an array of list-type map"]
    );
}

#[test]
fn embedded_resource_requires_api_version_and_kind() {
    let schema = json!({"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true});
    let errs = check_x(schema.clone(), json!({"metadata": {"name": "x"}}));
    assert_eq!(
        errs,
        [
            "spec.x.apiVersion: Required value",
            "spec.x.kind: Required value"
        ]
    );
    assert!(
        check_x(
            schema.clone(),
            json!({"apiVersion": "v1", "kind": "Pod", "spec": {}})
        )
        .is_empty()
    );
    assert_eq!(
        check_x(
            schema.clone(),
            json!({"apiVersion": "a/b/c", "kind": "Pod"})
        ),
        [r#"spec.x.apiVersion: Invalid value: "a/b/c": unexpected GroupVersion string: a/b/c"#]
    );
    assert_eq!(
        check_x(
            schema.clone(),
            json!({"apiVersion": "v1", "kind": "Not A Kind"})
        ),
        [
            r#"spec.x.kind: Invalid value: "Not A Kind": may have mixed case, but should otherwise match: a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"#
        ]
    );
    assert_eq!(
        check_x(schema.clone(), json!({"apiVersion": 1, "kind": ""})),
        [
            r#"spec.x.apiVersion: Invalid value: 1: must be a string"#,
            r#"spec.x.kind: Invalid value: "": must not be empty"#
        ]
    );
    assert_eq!(
        check_x(
            schema,
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a/b"}})
        ),
        [r#"spec.x.metadata.name: Invalid value: "a/b": may not contain '/'"#]
    );
}

#[test]
fn metadata_name_restriction_at_root() {
    let s = compile(json!({"type": "object", "properties": {
        "metadata": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 5}}}}}));
    let errs = s.validate(&json!({"apiVersion": "a/v1", "kind": "K", "metadata": {"name": "toolongname", "labels": {"a": "b"}}}));
    assert_eq!(
        errs.iter().map(ToString::to_string).collect::<Vec<_>>(),
        ["metadata.name: Too long: may not be more than 5 bytes"]
    );
}

#[test]
fn status_validation_uses_relative_names() {
    let s = compile(json!({"type": "object", "properties": {
        "status": {"type": "object", "properties": {"num": {"type": "integer", "maximum": 10}}}}}));
    let errs =
        s.validate_status(&json!({"apiVersion": "a/v1", "kind": "K", "status": {"num": 15}}));
    assert_eq!(
        errs.iter().map(ToString::to_string).collect::<Vec<_>>(),
        ["status.num: Invalid value: 15: num in body should be less than or equal to 10"]
    );
}

#[test]
fn errors_are_deduplicated_and_deterministic() {
    let schema = json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}});
    let errs = check_x(schema, json!({"b": "x", "a": "y"}));
    assert_eq!(
        errs,
        [
            r#"spec.x.a: Invalid value: "string": spec.x.a in body must be of type integer: "string""#,
            r#"spec.x.b: Invalid value: "string": spec.x.b in body must be of type integer: "string""#,
        ]
    );
}

#[test]
fn at_finds_sub_schemas() {
    let s = compile(
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "replicas": {"type": "integer"},
        "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
            "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}}}}}}),
    );
    assert_eq!(
        s.at(&["spec", "replicas"]).and_then(|n| n.type_name()),
        Some("integer")
    );
    assert_eq!(
        s.at(&["spec", "ports"]).and_then(|n| n.list_type()),
        Some("map")
    );
    assert_eq!(
        s.at(&["spec", "ports"]).map(|n| n.list_map_keys().to_vec()),
        Some(vec!["name".to_string()])
    );
    assert_eq!(
        s.at(&["spec", "ports", "[]", "name"])
            .and_then(|n| n.type_name()),
        Some("string")
    );
    assert_eq!(
        s.at(&["spec", "labels", "anything"])
            .and_then(|n| n.type_name()),
        Some("string")
    );
    assert!(s.at(&["spec", "nope"]).is_none());
    assert_eq!(s.at(&[]).and_then(|n| n.type_name()), Some("object"));
}

fn deep(depth: usize) -> Value {
    let mut v = json!(1);
    for _ in 0..depth {
        v = Value::Array(vec![v]);
    }
    v
}

/// Drops without recursion (serde_json's `Drop` is recursive).
fn drop_deep(v: Value) {
    let mut stack = vec![v];
    while let Some(x) = stack.pop() {
        match x {
            Value::Array(a) => stack.extend(a),
            Value::Object(m) => stack.extend(m.into_iter().map(|(_, v)| v)),
            _ => {}
        }
    }
}

#[test]
fn deeply_nested_values_do_not_overflow() {
    let s = compile(json!({"type": "object", "properties": {
        "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
        "list": {"type": "array", "items": {"type": "array", "items": {"type": "string"}}}}}));
    let mut obj = json!({"apiVersion": "a/v1", "kind": "K"});
    obj["spec"] = json!({});
    obj["spec"]["deep"] = deep(20_000);
    obj["junk"] = deep(20_000);
    obj["list"] = Value::Array(vec![deep(20_000)]);
    let errs = s.validate(&obj);
    assert!(!errs.is_empty());
    let pruned = s.prune(&mut obj);
    assert_eq!(pruned, ["junk"]);
    s.apply_defaults(&mut obj);
    drop_deep(obj);
}

#[test]
fn long_lists_use_the_same_duplicate_rules() {
    let set =
        json!({"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "integer"}});
    let mut items: Vec<Value> = (0..100).map(|i| json!(i)).collect();
    items.push(json!(5));
    items.push(json!(5));
    items.push(json!(7));
    assert_eq!(
        check_x(set, Value::Array(items)),
        [
            "spec.x[100]: Duplicate value: 5",
            "spec.x[102]: Duplicate value: 7"
        ]
    );
    let map = json!({"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
        "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}});
    let mut items: Vec<Value> = (0..50).map(|i| json!({"name": format!("n{i}")})).collect();
    items.push(json!({"name": "n3"}));
    assert_eq!(
        check_x(map, Value::Array(items)),
        [r#"spec.x[50]: Duplicate value: {"name":"n3"}"#]
    );
}

#[test]
fn odd_inputs_never_panic() {
    let formats = [
        "date",
        "date-time",
        "uri",
        "email",
        "hostname",
        "ipv4",
        "ipv6",
        "cidr",
        "mac",
        "uuid",
        "byte",
        "duration",
        "isbn",
        "creditcard",
        "ssn",
        "hexcolor",
        "rgbcolor",
        "bsonobjectid",
        "k8s-long-name",
    ];
    let strings = [
        "",
        "é",
        "2é4-01-01",
        "2024-01-0éT00:00:00Z",
        "2024-01-01Té",
        "::",
        "[",
        "%",
        "%zz",
        "a@",
        "@b",
        "http://[::1",
        "http://h:x/",
        "0123.4567.89é",
        "01:23:45:67:89:éé",
        "9999999999999999999999",
        "\u{0}",
        "Ⅻ",
        "١٢٣",
        "1e999",
    ];
    for f in formats {
        let schema = json!({"type": "object", "properties": {
            "s": {"type": "string", "format": f, "pattern": "^[\\d\\w]*$", "maxLength": 3},
            "meta": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}}});
        let s = Schema::compile(&schema, "p").unwrap();
        for v in strings {
            let mut obj = json!({"s": v, "meta": {"apiVersion": v, "kind": v,
                "metadata": {"name": v, "creationTimestamp": v, "labels": {v: v}}}});
            let _ = s.validate(&obj);
            let _ = s.prune(&mut obj);
            s.apply_defaults(&mut obj);
        }
    }
    let weird_values = [
        json!(null),
        json!(-0.0),
        json!(1e308),
        json!(u64::MAX),
        json!(i64::MIN),
        json!([[]]),
        json!({"": {}}),
    ];
    let schema = json!({"type": "object", "properties": {"n": {"type": "integer", "format": "int32", "minimum": -5.5,
        "maximum": 1e300, "multipleOf": 0.25, "enum": [1, "a", null, {"x": 1}]}}});
    let s = Schema::compile_lenient(&schema).unwrap();
    for v in weird_values {
        let mut obj = json!({"n": v});
        let _ = s.validate(&obj);
        let _ = s.prune(&mut obj);
        s.apply_defaults(&mut obj);
        for e in s.validate(&obj) {
            let _ = e.to_string();
        }
    }
}
