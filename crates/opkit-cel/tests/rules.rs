//! Compiling and evaluating `x-kubernetes-validations` rules, checked against upstream's messages.

use opkit_cel::Validator;
use serde_json::{Value, json};

const PREFIX: &str = "spec.validation.openAPIV3Schema";

fn compile(schema: Value) -> Result<Validator, Vec<String>> {
    let s = opkit_schema::Schema::compile(&schema, PREFIX)
        .map_err(|e| e.iter().map(ToString::to_string).collect::<Vec<_>>())?;
    Validator::compile(&s, PREFIX).map_err(|e| e.iter().map(ToString::to_string).collect())
}

/// A resource schema whose `spec` is `spec_schema`.
fn resource(spec_schema: Value) -> Value {
    json!({"type": "object", "properties": {"spec": spec_schema}})
}

fn validator(spec_schema: Value) -> Validator {
    compile(resource(spec_schema)).expect("rules compile")
}

fn errors(v: &Validator, spec: Value) -> Vec<String> {
    let obj = json!({"apiVersion": "a.b/v1", "kind": "K", "metadata": {"name": "x"}, "spec": spec});
    v.validate(&obj, None)
        .iter()
        .map(ToString::to_string)
        .collect()
}

fn update_errors(v: &Validator, old_spec: Value, spec: Value) -> Vec<String> {
    let old =
        json!({"apiVersion": "a.b/v1", "kind": "K", "metadata": {"name": "x"}, "spec": old_spec});
    let obj = json!({"apiVersion": "a.b/v1", "kind": "K", "metadata": {"name": "x"}, "spec": spec});
    v.validate(&obj, Some(&old))
        .iter()
        .map(ToString::to_string)
        .collect()
}

fn replicas_schema(rule: Value) -> Value {
    json!({"type": "object", "properties": {
        "replicas": {"type": "integer"}, "minReplicas": {"type": "integer"}},
        "x-kubernetes-validations": [rule]})
}

#[test]
fn rule_that_holds_gives_no_error() {
    let v = validator(replicas_schema(
        json!({"rule": "self.minReplicas <= self.replicas"}),
    ));
    assert!(errors(&v, json!({"replicas": 3, "minReplicas": 1})).is_empty());
}

#[test]
fn failing_rule_without_message_reports_failed_rule() {
    let v = validator(replicas_schema(
        json!({"rule": "self.minReplicas <= self.replicas"}),
    ));
    assert_eq!(
        errors(&v, json!({"replicas": 1, "minReplicas": 3})),
        [r#"spec: Invalid value: "object": failed rule: self.minReplicas <= self.replicas"#]
    );
}

#[test]
fn failing_rule_reports_its_message() {
    let v = validator(replicas_schema(json!({
        "rule": "self.minReplicas <= self.replicas",
        "message": "replicas must be at least minReplicas"})));
    assert_eq!(
        errors(&v, json!({"replicas": 1, "minReplicas": 3})),
        [r#"spec: Invalid value: "object": replicas must be at least minReplicas"#]
    );
}

#[test]
fn message_expression_is_evaluated_and_falls_back_to_message() {
    let v = validator(replicas_schema(json!({
        "rule": "self.minReplicas <= self.replicas",
        "messageExpression": "'replicas ' + string(self.replicas) + ' is below ' + string(self.minReplicas)"})));
    assert_eq!(
        errors(&v, json!({"replicas": 1, "minReplicas": 3})),
        [r#"spec: Invalid value: "object": replicas 1 is below 3"#]
    );
    // A messageExpression that fails at runtime falls back to the message.
    let v = validator(replicas_schema(json!({
        "rule": "self.minReplicas <= self.replicas",
        "message": "static message",
        "messageExpression": "string(10 / (self.replicas - 1))"})));
    assert_eq!(
        errors(&v, json!({"replicas": 1, "minReplicas": 3})),
        [r#"spec: Invalid value: "object": static message"#]
    );
}

#[test]
fn each_reason_maps_to_its_cause_type() {
    let with_reason = |reason: &str| {
        validator(replicas_schema(json!({
            "rule": "self.replicas > 0", "message": "must be positive", "reason": reason})))
    };
    let spec = json!({"replicas": 0});
    assert_eq!(
        errors(&with_reason("FieldValueForbidden"), spec.clone()),
        ["spec: Forbidden: must be positive"]
    );
    assert_eq!(
        errors(&with_reason("FieldValueRequired"), spec.clone()),
        ["spec: Required value: must be positive"]
    );
    assert_eq!(
        errors(&with_reason("FieldValueDuplicate"), spec.clone()),
        [r#"spec: Duplicate value: "object""#]
    );
    assert_eq!(
        errors(&with_reason("FieldValueInvalid"), spec.clone()),
        [r#"spec: Invalid value: "object": must be positive"#]
    );
    let v = validator(replicas_schema(json!({
        "rule": "self.replicas > 0", "message": "must be positive", "reason": "FieldValueForbidden"})));
    let obj = json!({"spec": {"replicas": 0}});
    assert_eq!(v.validate(&obj, None)[0].reason(), "FieldValueForbidden");
}

#[test]
fn field_path_is_appended_to_the_node_path() {
    let v = validator(replicas_schema(json!({
        "rule": "self.minReplicas <= self.replicas", "message": "too few",
        "fieldPath": ".replicas"})));
    assert_eq!(
        errors(&v, json!({"replicas": 1, "minReplicas": 3})),
        [r#"spec.replicas: Invalid value: "object": too few"#]
    );
}

#[test]
fn invalid_field_path_refuses_the_crd() {
    let errs = compile(resource(replicas_schema(json!({
        "rule": "true", "fieldPath": ".nope"}))))
    .unwrap_err();
    assert_eq!(
        errs,
        [format!(
            r#"{PREFIX}.properties[spec].x-kubernetes-validations[0].fieldPath: Invalid value: ".nope": fieldPath must be a valid path: does not refer to a valid field"#
        )]
    );
}

#[test]
fn uncompilable_rule_refuses_the_crd_with_upstream_shape() {
    let errs = compile(resource(replicas_schema(
        json!({"rule": "self.replicas >"}),
    )))
    .unwrap_err();
    assert_eq!(errs.len(), 1, "{errs:?}");
    let prefix = format!(
        r#"{PREFIX}.properties[spec].x-kubernetes-validations[0].rule: Invalid value: apiextensions.ValidationRule{{Rule:"self.replicas >", Message:"", MessageExpression:"", Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:"", OptionalOldSelf:(*bool)(nil)}}: compilation failed: ERROR: <input>:1:"#
    );
    assert!(errs[0].starts_with(&prefix), "{}", errs[0]);
    assert!(errs[0].contains("\n | self.replicas >\n | "), "{}", errs[0]);
}

#[test]
fn undeclared_references_and_unknown_fields_refuse_the_crd() {
    let errs = compile(resource(replicas_schema(
        json!({"rule": "self.replicas > limit"}),
    )))
    .unwrap_err();
    assert!(
        errs[0].contains("compilation failed: ERROR: <input>:1:17: undeclared reference to 'limit' (in container '')"),
        "{}",
        errs[0]
    );
    let errs = compile(resource(replicas_schema(json!({"rule": "nope(self)"})))).unwrap_err();
    assert!(
        errs[0].contains("undeclared reference to 'nope'"),
        "{}",
        errs[0]
    );
    let errs = compile(resource(replicas_schema(
        json!({"rule": "self.replcas > 0"}),
    )))
    .unwrap_err();
    assert!(errs[0].contains("undefined field 'replcas'"), "{}", errs[0]);
    let errs = compile(resource(replicas_schema(
        json!({"rule": "self.replicas + 1"}),
    )))
    .unwrap_err();
    assert!(
        errs[0].ends_with("cel expression must evaluate to a bool"),
        "{}",
        errs[0]
    );
}

#[test]
fn uncompilable_message_expression_refuses_the_crd() {
    let errs = compile(resource(replicas_schema(json!({
        "rule": "true", "messageExpression": "'a' +"}))))
    .unwrap_err();
    assert!(
        errs[0].starts_with(&format!(
            "{PREFIX}.properties[spec].x-kubernetes-validations[0].messageExpression: Invalid value: apiextensions.ValidationRule{{"
        )),
        "{}",
        errs[0]
    );
    assert!(
        errs[0].contains("messageExpression compilation failed: ERROR"),
        "{}",
        errs[0]
    );
    let errs = compile(resource(replicas_schema(json!({
        "rule": "true", "messageExpression": "42"}))))
    .unwrap_err();
    assert!(
        errs[0].ends_with("messageExpression must evaluate to a string"),
        "{}",
        errs[0]
    );
}

#[test]
fn transition_rule_on_scalar_runs_only_on_update() {
    let v = validator(json!({"type": "object", "properties": {
        "name": {"type": "string",
            "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "Value is immutable"}]}}}));
    assert!(errors(&v, json!({"name": "a"})).is_empty());
    assert!(update_errors(&v, json!({"name": "a"}), json!({"name": "a"})).is_empty());
    assert_eq!(
        update_errors(&v, json!({"name": "a"}), json!({"name": "b"})),
        [r#"spec.name: Invalid value: "string": Value is immutable"#]
    );
    // No old value at that path: the transition rule does not run.
    assert!(update_errors(&v, json!({}), json!({"name": "b"})).is_empty());
}

#[test]
fn optional_old_self_runs_on_create_with_none() {
    let v = validator(json!({"type": "object", "properties": {
        "name": {"type": "string", "x-kubernetes-validations": [{
            "rule": "!oldSelf.hasValue() || self == oldSelf.value()",
            "optionalOldSelf": true, "message": "immutable once set"}]}}}));
    assert!(errors(&v, json!({"name": "a"})).is_empty());
    assert_eq!(
        update_errors(&v, json!({"name": "a"}), json!({"name": "b"})),
        [r#"spec.name: Invalid value: "string": immutable once set"#]
    );
}

#[test]
fn transition_rule_on_map_values_correlates_by_key() {
    let v = validator(json!({"type": "object", "properties": {
        "limits": {"type": "object", "additionalProperties": {"type": "integer",
            "x-kubernetes-validations": [{"rule": "self >= oldSelf", "message": "may not decrease"}]}}}}));
    assert!(
        update_errors(
            &v,
            json!({"limits": {"a": 1, "b": 5}}),
            json!({"limits": {"a": 2, "c": 0}})
        )
        .is_empty()
    );
    assert_eq!(
        update_errors(&v, json!({"limits": {"a": 3}}), json!({"limits": {"a": 2}})),
        [r#"spec.limits[a]: Invalid value: "integer": may not decrease"#]
    );
}

#[test]
fn transition_rule_on_map_list_items_correlates_by_keys() {
    let v = validator(json!({"type": "object", "properties": {
        "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
            "items": {"type": "object", "required": ["name"], "properties": {
                "name": {"type": "string"}, "port": {"type": "integer"}},
                "x-kubernetes-validations": [{"rule": "self.port == oldSelf.port", "message": "port is immutable"}]}}}}));
    // Reordered and new items are fine.
    assert!(
        update_errors(
            &v,
            json!({"ports": [{"name": "a", "port": 1}, {"name": "b", "port": 2}]}),
            json!({"ports": [{"name": "b", "port": 2}, {"name": "c", "port": 9}, {"name": "a", "port": 1}]})
        )
        .is_empty()
    );
    assert_eq!(
        update_errors(
            &v,
            json!({"ports": [{"name": "a", "port": 1}]}),
            json!({"ports": [{"name": "x", "port": 5}, {"name": "a", "port": 2}]})
        ),
        [r#"spec.ports[1]: Invalid value: "object": port is immutable"#]
    );
}

#[test]
fn transition_rule_under_atomic_list_refuses_the_crd() {
    let errs = compile(resource(json!({"type": "object", "properties": {
        "items": {"type": "array", "items": {"type": "string",
            "x-kubernetes-validations": [{"rule": "self == oldSelf"}]}}}})))
    .unwrap_err();
    assert_eq!(
        errs,
        [format!(
            r#"{PREFIX}.properties[spec].properties[items].items.x-kubernetes-validations[0].rule: Invalid value: "self == oldSelf": oldSelf cannot be used on the uncorrelatable portion of the schema within {PREFIX}.properties[spec].properties[items]"#
        )]
    );
}

#[test]
fn item_rules_run_per_element() {
    let v = validator(json!({"type": "object", "properties": {
        "names": {"type": "array", "items": {"type": "string",
            "x-kubernetes-validations": [{"rule": "self.startsWith('app-')", "message": "must start with app-"}]}}}}));
    assert_eq!(
        errors(&v, json!({"names": ["app-a", "b", "app-c", "d"]})),
        [
            r#"spec.names[1]: Invalid value: "string": must start with app-"#,
            r#"spec.names[3]: Invalid value: "string": must start with app-"#
        ]
    );
}

#[test]
fn root_rules_see_metadata_name_and_report_nil_path() {
    let s = json!({"type": "object",
        "x-kubernetes-validations": [{"rule": "self.metadata.name.startsWith('ok')", "message": "bad name"}],
        "properties": {"spec": {"type": "object"}}});
    let v = compile(s).unwrap();
    let obj = json!({"apiVersion": "a.b/v1", "kind": "K", "metadata": {"name": "nope", "uid": "u"}, "spec": {}});
    let errs: Vec<String> = v
        .validate(&obj, None)
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(errs, [r#"<nil>: Invalid value: "object": bad name"#]);
}

#[test]
fn string_extension_functions_work() {
    let rules = [
        "self.s.lowerAscii() == 'hello world'",
        "self.s.upperAscii() == 'HELLO WORLD'",
        "'  x '.trim() == 'x'",
        "self.s.split(' ') == ['Hello', 'World']",
        "['a', 'b'].join('-') == 'a-b'",
        "self.s.replace('World', 'There') == 'Hello There'",
        "self.s.indexOf('o') == 4",
        "self.s.lastIndexOf('o') == 7",
        "self.s.substring(0, 5) == 'Hello'",
        "self.s.charAt(1) == 'e'",
        "self.s.matches('^H.*d$')",
        "self.s.startsWith('He') && self.s.endsWith('ld') && self.s.contains('lo W')",
        "size(self.s) == 11",
        "self.s.find('[A-Z][a-z]+') == 'Hello'",
        "self.s.findAll('o') == ['o', 'o']",
    ];
    for rule in rules {
        let v = validator(
            json!({"type": "object", "properties": {"s": {"type": "string"}},
            "x-kubernetes-validations": [{"rule": rule}]}),
        );
        assert!(
            errors(&v, json!({"s": "Hello World"})).is_empty(),
            "{rule}: {:?}",
            errors(&v, json!({"s": "Hello World"}))
        );
    }
}

#[test]
fn list_functions_and_macros_work() {
    let rules = [
        "self.l.isSorted()",
        "self.l.sum() == 10",
        "self.l.min() == 1 && self.l.max() == 4",
        "self.l.indexOf(3) == 2 && self.l.lastIndexOf(9) == -1",
        "self.l.all(x, x > 0)",
        "self.l.exists(x, x == 4)",
        "self.l.exists_one(x, x == 2)",
        "self.l.map(x, x * 2) == [2, 4, 6, 8]",
        "self.l.filter(x, x % 2 == 0) == [2, 4]",
        "has(self.l) && !has(self.missing)",
        "self.m.all(k, self.m[k] > 0)",
        "'a' in self.m",
    ];
    for rule in rules {
        let v = validator(json!({"type": "object", "properties": {
            "l": {"type": "array", "items": {"type": "integer"}},
            "m": {"type": "object", "additionalProperties": {"type": "integer"}},
            "missing": {"type": "string"}},
            "x-kubernetes-validations": [{"rule": rule}]}));
        let spec = json!({"l": [1, 2, 3, 4], "m": {"a": 1}});
        assert!(
            errors(&v, spec.clone()).is_empty(),
            "{rule}: {:?}",
            errors(&v, spec)
        );
    }
}

#[test]
fn url_and_quantity_functions_work() {
    let rules = [
        "isURL(self.s) && url(self.s).getHost() == 'example.com:8080' && url(self.s).getHostname() == 'example.com' && url(self.s).getPort() == '8080' && url(self.s).getScheme() == 'https'",
        "quantity(self.q).isGreaterThan(quantity('1Gi')) && quantity('1k').asInteger() == 1000",
        "quantity('500m').add(quantity('500m')) == quantity('1') && isQuantity('2Mi') && !isQuantity('x')",
    ];
    for rule in rules {
        let v = validator(json!({"type": "object", "properties": {
            "s": {"type": "string"}, "q": {"type": "string"}},
            "x-kubernetes-validations": [{"rule": rule}]}));
        let spec = json!({"s": "https://example.com:8080/a?b=c", "q": "2Gi"});
        assert!(
            errors(&v, spec.clone()).is_empty(),
            "{rule}: {:?}",
            errors(&v, spec)
        );
    }
}

#[test]
fn numbers_are_doubles_and_integers_are_ints() {
    let v = validator(json!({"type": "object", "properties": {
        "n": {"type": "number"}, "i": {"type": "integer"}},
        "x-kubernetes-validations": [{"rule": "self.n == 1.0 && self.i == 1 && type(self.i) == int && type(self.n) == double"}]}));
    assert!(errors(&v, json!({"n": 1, "i": 1})).is_empty());
}

#[test]
fn int_or_string_and_preserved_fields_are_dynamic() {
    let v = validator(json!({"type": "object", "properties": {
        "port": {"x-kubernetes-int-or-string": true},
        "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
        "x-kubernetes-validations": [{"rule": "type(self.port) == string ? self.port.endsWith('%') : self.port > 0"},
            {"rule": "!has(self.extra) || !('forbidden' in self.extra)"}]}));
    assert!(errors(&v, json!({"port": 80})).is_empty());
    assert!(errors(&v, json!({"port": "50%", "extra": {"x": 1}})).is_empty());
    assert_eq!(errors(&v, json!({"port": "50"})).len(), 1);
    assert_eq!(
        errors(&v, json!({"port": 1, "extra": {"forbidden": 1}})).len(),
        1
    );
}

#[test]
fn escaped_property_names_are_accessible() {
    let v = validator(json!({"type": "object", "properties": {
        "foo-bar": {"type": "integer"}, "namespace": {"type": "string"}},
        "x-kubernetes-validations": [{"rule": "self.foo__dash__bar == 1 && self.__namespace__ == 'x'"}]}));
    assert!(errors(&v, json!({"foo-bar": 1, "namespace": "x"})).is_empty());
}

#[test]
fn evaluation_errors_are_reported_not_panics() {
    let v = validator(json!({"type": "object", "properties": {
        "m": {"type": "object", "additionalProperties": {"type": "string"}},
        "i": {"type": "integer"}},
        "x-kubernetes-validations": [{"rule": "self.m['missing'] == 'x'"}, {"rule": "10 / self.i > 1"}]}));
    assert_eq!(
        errors(&v, json!({"m": {}, "i": 0})),
        [
            r#"spec: Invalid value: "object": no such key: missing evaluating rule: self.m['missing'] == 'x'"#,
            r#"spec: Invalid value: "object": division by zero evaluating rule: 10 / self.i > 1"#
        ]
    );
}

#[test]
fn runaway_rules_are_bounded() {
    let v = validator(json!({"type": "object", "properties": {
        "l": {"type": "array", "items": {"type": "integer"}}},
        "x-kubernetes-validations": [{"rule": "self.l.all(a, self.l.all(b, self.l.all(c, a + b + c >= 0)))"}]}));
    // Small lists evaluate.
    assert!(errors(&v, json!({"l": [1, 2, 3]})).is_empty());
    // Large ones are refused before running.
    let big: Vec<i64> = (0..2000).collect();
    let errs = errors(&v, json!({"l": big}));
    assert_eq!(errs.len(), 1);
    assert!(
        errs[0].contains(
            "no further validation rules will be run due to call cost exceeds limit for rule"
        ),
        "{}",
        errs[0]
    );
}

#[test]
fn null_values_are_not_validated() {
    let v = validator(json!({"type": "object", "properties": {
        "s": {"type": "string", "nullable": true,
            "x-kubernetes-validations": [{"rule": "self.size() > 100"}]}}}));
    assert!(errors(&v, json!({"s": null})).is_empty());
}

#[test]
fn blocking_schema_errors_skip_rules() {
    let errs = vec![opkit_cel::FieldError::type_invalid(
        "spec.x",
        json!("a"),
        "spec.x in body must be of type integer: \"string\"",
    )];
    let blocking = opkit_cel::blocking_error(&errs).unwrap();
    assert_eq!(
        blocking.to_string(),
        r#"<nil>: Invalid value: "null": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation"#
    );
    let not_blocking = vec![opkit_cel::FieldError::invalid(
        "spec.x",
        json!(11),
        "too big",
    )];
    assert!(opkit_cel::blocking_error(&not_blocking).is_none());
}

#[test]
fn validator_is_shareable_across_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Validator>();
}
