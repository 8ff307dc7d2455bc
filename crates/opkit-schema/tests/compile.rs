//! The checks run on a CRD's schema when the CRD is created or updated.

use opkit_schema::Schema;
use serde_json::{Value, json};

const PREFIX: &str = "spec.versions[0].schema.openAPIV3Schema";

fn errors(schema: Value) -> Vec<String> {
    match Schema::compile(&schema, PREFIX) {
        Ok(_) => Vec::new(),
        Err(e) => e.iter().map(ToString::to_string).collect(),
    }
}

fn with_spec(spec: Value) -> Value {
    json!({"type": "object", "properties": {"spec": spec}})
}

fn assert_has(errs: &[String], want: &str) {
    assert!(
        errs.iter().any(|e| e == want),
        "missing {want:?} in {errs:#?}"
    );
}

#[test]
fn valid_schemas_compile() {
    for s in [
        json!({"type": "object"}),
        json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
        json!({"type": "object", "properties": {
            "apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {"type": "object"},
            "spec": {"type": "object", "required": ["a"], "properties": {
                "a": {"type": "string", "default": "x", "enum": ["x", "y"]},
                "n": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]},
                "m": {"type": "object", "additionalProperties": {"type": "string"}},
                "l": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
                "t": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}
            }},
            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
        }}),
        json!({"type": "object", "properties": {"metadata": {"type": "object", "properties": {
            "name": {"type": "string", "maxLength": 10}}}}}),
    ] {
        assert_eq!(errors(s.clone()), Vec::<String>::new(), "{s}");
    }
}

#[test]
fn missing_type_on_fields_items_and_root() {
    assert_eq!(
        errors(with_spec(json!({"properties": {"a": {"type": "string"}}}))),
        [format!(
            "{PREFIX}.properties[spec].type: Required value: must not be empty for specified object fields"
        )]
    );
    assert_eq!(
        errors(with_spec(json!({"type": "array", "items": {}}))),
        [format!(
            "{PREFIX}.properties[spec].items.type: Required value: must not be empty for specified array items"
        )]
    );
    assert_eq!(
        errors(json!({"properties": {}})),
        [format!(
            "{PREFIX}.type: Required value: must not be empty at the root"
        )]
    );
}

#[test]
fn root_must_be_object() {
    let errs = errors(json!({"type": "string"}));
    assert_eq!(
        errs,
        [format!(
            r#"{PREFIX}.type: Invalid value: "string": must be object at the root"#
        )]
    );
}

#[test]
fn array_needs_items() {
    assert_eq!(
        errors(with_spec(json!({"type": "array"}))),
        [format!(
            "{PREFIX}.properties[spec].items: Required value: must be specified"
        )]
    );
}

#[test]
fn unsupported_type_name() {
    let errs = errors(with_spec(json!({"type": "foo"})));
    assert_eq!(
        errs,
        [format!(
            r#"{PREFIX}.properties[spec].type: Unsupported value: "foo": supported values: "array", "boolean", "integer", "number", "object", "string""#
        )]
    );
}

#[test]
fn null_type_forbidden() {
    let errs = errors(with_spec(json!({"type": "null"})));
    assert_has(
        &errs,
        &format!(
            "{PREFIX}.properties[spec].type: Forbidden: type cannot be set to null, use nullable as an alternative"
        ),
    );
}

#[test]
fn nullable_root_forbidden() {
    assert_eq!(
        errors(json!({"type": "object", "nullable": true})),
        [format!(
            "{PREFIX}.nullable: Forbidden: nullable cannot be true at the root"
        )]
    );
}

#[test]
fn disallowed_keywords() {
    let errs = errors(with_spec(json!({"type": "object", "$ref": "#/x"})));
    assert_eq!(
        errs,
        [format!(
            "{PREFIX}.properties[spec].$ref: Forbidden: $ref is not supported"
        )]
    );
    let errs = errors(with_spec(
        json!({"type": "object", "patternProperties": {"a": {"type": "string"}}}),
    ));
    assert_eq!(
        errs,
        [format!(
            "{PREFIX}.properties[spec].patternProperties: Forbidden: patternProperties is not supported"
        )]
    );
    let errs = errors(with_spec(
        json!({"type": "array", "items": [{"type": "string"}]}),
    ));
    assert_has(
        &errs,
        &format!(
            "{PREFIX}.properties[spec].items: Forbidden: items must be a schema object and not an array"
        ),
    );
    let errs = errors(with_spec(
        json!({"type": "array", "items": {"type": "string"}, "uniqueItems": true}),
    ));
    assert_eq!(
        errs,
        [format!(
            "{PREFIX}.properties[spec].uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic"
        )]
    );
    let errs =
        errors(json!({"type": "object", "$schema": "http://json-schema.org/draft-04/schema#"}));
    assert_eq!(
        errs,
        [format!(
            r#"{PREFIX}: Invalid value: "": OpenAPIV3Schema 'schema' is not supported"#
        )]
    );
}

#[test]
fn value_validations_may_not_carry_structure() {
    let errs = errors(with_spec(
        json!({"type": "string", "anyOf": [{"type": "string", "description": "d"}, {"pattern": "a"}]}),
    ));
    assert_eq!(
        errs,
        [
            format!(
                "{PREFIX}.properties[spec].anyOf[0].description: Forbidden: must be empty to be structural"
            ),
            format!(
                "{PREFIX}.properties[spec].anyOf[0].type: Forbidden: must be empty to be structural"
            ),
        ]
    );
    let errs = errors(with_spec(
        json!({"type": "object", "allOf": [{"properties": {"metadata": {"maxProperties": 1}}}]}),
    ));
    assert_has(
        &errs,
        &format!(
            "{PREFIX}.properties[spec].allOf[0].properties[metadata]: Forbidden: must not be specified in a nested context"
        ),
    );
}

#[test]
fn junctor_properties_must_exist_structurally() {
    let errs = errors(
        json!({"type": "object", "properties": {"a": {"type": "string"}},
        "anyOf": [{"properties": {"b": {"pattern": "x"}}}]}),
    );
    assert_eq!(
        errs,
        [format!(
            "{PREFIX}.properties[b]: Required value: because it is defined in {PREFIX}.anyOf[0].properties[b]"
        )]
    );
}

#[test]
fn metadata_may_only_restrict_name_and_generate_name() {
    let errs = errors(
        json!({"type": "object", "properties": {"metadata": {"type": "object", "properties": {
        "labels": {"type": "object"}}}}}),
    );
    assert_eq!(
        errs,
        [format!(
            "{PREFIX}.properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified"
        )]
    );
    let errs = errors(json!({"type": "object", "properties": {"metadata": {"type": "string"}}}));
    assert_has(
        &errs,
        &format!(r#"{PREFIX}.properties[metadata].type: Invalid value: "string": must be object"#),
    );
    let errs = errors(json!({"type": "object", "properties": {"kind": {"type": "integer"}}}));
    assert_eq!(
        errs,
        [format!(
            r#"{PREFIX}.properties[kind].type: Invalid value: "integer": must be string"#
        )]
    );
}

#[test]
fn defaults_forbidden_in_top_level_meta() {
    let errs = errors(
        json!({"type": "object", "properties": {"kind": {"type": "string", "default": "K"}}}),
    );
    assert_eq!(
        errs,
        [format!(
            "{PREFIX}.properties[kind].default: Forbidden: must not be set in top-level kind"
        )]
    );
}

#[test]
fn additional_properties_rules() {
    let errs = errors(json!({"type": "object", "additionalProperties": {"type": "string"}}));
    assert_eq!(
        errs,
        [format!(
            "{PREFIX}.additionalProperties: Forbidden: must not be used at the root"
        )]
    );
    let errs = errors(with_spec(
        json!({"type": "object", "properties": {"a": {"type": "string"}},
        "additionalProperties": {"type": "string"}}),
    ));
    assert_eq!(
        errs,
        [format!(
            "{PREFIX}.properties[spec].additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive"
        )]
    );
}

#[test]
fn defaults_must_validate() {
    let errs = errors(with_spec(json!({"type": "object", "properties": {
        "n": {"type": "integer", "maximum": 10, "default": 11}}})));
    assert_eq!(
        errs,
        [format!(
            "{PREFIX}.properties[spec].properties[n].default: Invalid value: 11:  in body should be less than or equal to 10"
        )]
    );
    let errs = errors(with_spec(json!({"type": "object", "properties": {
        "o": {"type": "object", "properties": {"a": {"type": "string"}}, "default": {"a": 1}}}})));
    assert_eq!(
        errs,
        [format!(
            r#"{PREFIX}.properties[spec].properties[o].default.a: Invalid value: "integer": a in body must be of type string: "integer""#
        )]
    );
}

#[test]
fn defaults_must_be_pruned() {
    let errs = errors(with_spec(json!({"type": "object", "properties": {
        "o": {"type": "object", "properties": {"a": {"type": "string"}}, "default": {"a": "x", "b": "y"}}}})));
    assert_eq!(
        errs,
        [format!(
            r#"{PREFIX}.properties[spec].properties[o].default: Invalid value: {{"a":"x","b":"y"}}: must not have unknown fields"#
        )]
    );
}

#[test]
fn list_type_map_needs_keys_that_are_required_or_defaulted_scalars() {
    let errs = errors(with_spec(
        json!({"type": "array", "x-kubernetes-list-type": "map",
        "items": {"type": "object", "properties": {"name": {"type": "string"}}}}),
    ));
    assert_eq!(
        errs,
        [format!(
            "{PREFIX}.properties[spec].x-kubernetes-list-map-keys: Required value: must not be empty if x-kubernetes-list-type is map"
        )]
    );
    let errs = errors(with_spec(
        json!({"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
        "items": {"type": "object", "properties": {"name": {"type": "string"}}}}),
    ));
    assert_eq!(
        errs,
        [format!(
            "{PREFIX}.properties[spec].items.properties[name].default: Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property"
        )]
    );
    assert!(errors(with_spec(json!({"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
        "items": {"type": "object", "properties": {"name": {"type": "string", "default": "x"}}}})))
    .is_empty());
    let errs = errors(with_spec(
        json!({"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["o"],
        "items": {"type": "object", "required": ["o"], "properties": {"o": {"type": "object"}}}}),
    ));
    assert_eq!(
        errs,
        [format!(
            r#"{PREFIX}.properties[spec].items.properties[o].type: Invalid value: "object": must be a scalar type if parent array's x-kubernetes-list-type is map"#
        )]
    );
    let errs = errors(with_spec(
        json!({"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["zz"],
        "items": {"type": "object", "properties": {"name": {"type": "string"}}}}),
    ));
    assert_eq!(
        errs,
        [format!(
            r#"{PREFIX}.properties[spec].x-kubernetes-list-map-keys: Invalid value: ["zz"]: entries must all be names of item properties"#
        )]
    );
    let errs = errors(with_spec(
        json!({"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["k"],
        "items": {"type": "string"}}),
    ));
    assert_eq!(
        errs,
        [format!(
            r#"{PREFIX}.properties[spec].items.type: Invalid value: "string": must be object if parent array's x-kubernetes-list-type is map"#
        )]
    );
}

#[test]
fn list_and_map_type_values() {
    let errs = errors(with_spec(
        json!({"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "bag"}),
    ));
    assert_eq!(
        errs,
        [format!(
            r#"{PREFIX}.properties[spec].x-kubernetes-list-type: Unsupported value: "bag": supported values: "atomic", "set", "map""#
        )]
    );
    let errs = errors(with_spec(
        json!({"type": "string", "x-kubernetes-list-type": "set"}),
    ));
    assert_eq!(
        errs,
        [format!(
            r#"{PREFIX}.properties[spec].type: Invalid value: "string": must be array if x-kubernetes-list-type is specified"#
        )]
    );
    let errs = errors(with_spec(
        json!({"type": "object", "x-kubernetes-map-type": "weird"}),
    ));
    assert_eq!(
        errs,
        [format!(
            r#"{PREFIX}.properties[spec].x-kubernetes-map-type: Unsupported value: "weird": supported values: "atomic", "granular""#
        )]
    );
    let errs = errors(with_spec(
        json!({"type": "array", "x-kubernetes-list-type": "set",
        "items": {"type": "object", "properties": {"a": {"type": "string"}}}}),
    ));
    assert_eq!(
        errs,
        [format!(
            "{PREFIX}.properties[spec].items.x-kubernetes-map-type: Invalid value: null: must be atomic as item of a list with x-kubernetes-list-type=set"
        )]
    );
}

#[test]
fn extension_rules() {
    let errs = errors(with_spec(
        json!({"type": "object", "x-kubernetes-preserve-unknown-fields": false}),
    ));
    assert_eq!(
        errs,
        [format!(
            "{PREFIX}.properties[spec].x-kubernetes-preserve-unknown-fields: Invalid value: false: must be true or undefined"
        )]
    );
    let errs = errors(with_spec(
        json!({"x-kubernetes-int-or-string": true, "x-kubernetes-preserve-unknown-fields": true}),
    ));
    assert_eq!(
        errs,
        [format!(
            "{PREFIX}.properties[spec].x-kubernetes-preserve-unknown-fields: Invalid value: true: must be false if x-kubernetes-int-or-string is true"
        )]
    );
    let errs = errors(with_spec(
        json!({"type": "string", "x-kubernetes-embedded-resource": true}),
    ));
    assert_eq!(
        errs,
        [
            format!(
                "{PREFIX}.properties[spec].properties: Required value: must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields"
            ),
            format!(
                r#"{PREFIX}.properties[spec].type: Invalid value: "string": must be object if x-kubernetes-embedded-resource is true"#
            ),
        ]
    );
}

#[test]
fn invalid_pattern() {
    let errs = errors(with_spec(json!({"type": "string", "pattern": "(unclosed"})));
    assert_eq!(errs.len(), 1);
    assert!(
        errs[0].starts_with(&format!(
            r#"{PREFIX}.properties[spec].pattern: Invalid value: "(unclosed": must be a valid regular expression, but isn't: error parsing regexp: "#
        )),
        "{}",
        errs[0]
    );
}

#[test]
fn validation_rule_shape() {
    let errs = errors(with_spec(
        json!({"type": "object", "x-kubernetes-validations": [
        {"rule": " "}, {"rule": "self.a", "reason": "Nope"}]}),
    ));
    assert_eq!(
        errs,
        [
            format!(
                "{PREFIX}.properties[spec].x-kubernetes-validations[0].rule: Required value: rule is not specified"
            ),
            format!(
                r#"{PREFIX}.properties[spec].x-kubernetes-validations[1].reason: Unsupported value: "Nope": supported values: "FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired""#
            ),
        ]
    );
}

#[test]
fn malformed_keywords_are_errors_not_panics() {
    let errs = errors(with_spec(
        json!({"type": 5, "properties": [], "maxLength": "x", "required": "a"}),
    ));
    assert_eq!(errs.len(), 4, "{errs:#?}");
    assert!(errors(json!("not a schema")).len() == 1);
    assert!(errors(json!(null)).len() == 1);
}

#[test]
fn absurdly_deep_schema_is_rejected() {
    let mut s = json!({"type": "string"});
    for _ in 0..150 {
        s = json!({"type": "object", "properties": {"a": s}});
    }
    let errs = errors(s);
    assert_eq!(errs.len(), 1);
    assert!(
        errs[0].contains("must not be nested more than 100 levels deep"),
        "{}",
        errs[0]
    );
}
