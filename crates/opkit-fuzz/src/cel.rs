//! Target for CEL validation rules (`opkit-cel`): random rule strings compiled against a
//! small schema and evaluated against random objects.
//!
//! Rules are code written by CRD authors and run by the server on every write; a rule that
//! crashes the interpreter or runs unboundedly would take the control plane down for every
//! client. Compilation must refuse bad rules with errors, evaluation must stay within the cost
//! budget and turn runtime failures into field errors.

use opkit_cel::Validator;
use opkit_schema::Schema;
use serde_json::{Value, json};

use crate::input::Input;

/// Tokens rule strings are built from: identifiers of the schema, operators, literals, macros
/// and Kubernetes library functions, and characters that stress the lexer.
pub const RULE_TOKENS: &[&str] = &[
    "self",
    "oldSelf",
    ".",
    "spec",
    "replicas",
    "name",
    "tags",
    "labels",
    "items",
    "size()",
    "self.spec",
    "self.spec.replicas",
    "self.spec.tags",
    "self.spec.labels",
    "self.spec.name",
    " ",
    "==",
    "!=",
    "<",
    "<=",
    ">",
    "+",
    "-",
    "*",
    "/",
    "%",
    "&&",
    "||",
    "!",
    "?",
    ":",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    ",",
    "in",
    "0",
    "1",
    "-1",
    "9223372036854775807",
    "1.5",
    "'a'",
    "\"",
    "'",
    "\\",
    "b'x'",
    "r'\\d'",
    "true",
    "false",
    "null",
    "has(",
    ".all(x, ",
    ".exists(x, ",
    ".map(x, ",
    ".filter(x, ",
    "x",
    "int(",
    "string(",
    "double(",
    "matches(",
    ".startsWith(",
    "quantity(",
    "isQuantity(",
    "url(",
    "ip(",
    "cidr(",
    ".lowerAscii()",
    ".split(",
    "',' ",
    "dyn(",
    "type(",
    "duration('1s')",
    "timestamp(",
    ".join(",
    "format(",
    "isSorted()",
    "sum()",
    "indexOf(",
    "lists.range(",
    "[1,2,3]",
    "{'a': 1}",
    "\u{0}",
    "é",
];

/// The schema the rules are attached to (at `spec`).
fn schema_with_rule(rule: &str, message_expression: Option<&str>) -> Value {
    let mut validation = json!({"rule": rule});
    if let Some(m) = message_expression {
        validation["messageExpression"] = json!(m);
    }
    json!({
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "x-kubernetes-validations": [validation],
                "properties": {
                    "replicas": {"type": "integer"},
                    "name": {"type": "string", "maxLength": 64},
                    "tags": {"type": "array", "maxItems": 16, "items": {"type": "string", "maxLength": 16}},
                    "labels": {"type": "object", "maxProperties": 8,
                        "additionalProperties": {"type": "string", "maxLength": 16}},
                    "items": {"type": "array", "maxItems": 8, "items": {"type": "object",
                        "properties": {"name": {"type": "string", "maxLength": 8},
                            "x": {"type": "integer"}}}}
                }
            }
        }
    })
}

/// CEL target from raw bytes: a rule of up to 24 tokens (or raw text), maybe a message
/// expression, and an object and old object whose `spec` is random.
pub fn cel(data: &[u8]) {
    let mut input = Input::new(data);
    let rule = if input.below(4) == 0 {
        String::from_utf8_lossy(input.bytes(64)).into_owned()
    } else {
        input.tokens(RULE_TOKENS, 24)
    };
    let message = if input.below(4) == 0 {
        Some(input.tokens(RULE_TOKENS, 8))
    } else {
        None
    };
    let spec = cel_spec(&mut input);
    let old_spec = if input.flag() {
        Some(cel_spec(&mut input))
    } else {
        None
    };
    cel_values(&rule, message.as_deref(), &spec, old_spec.as_ref());
}

/// A `spec` for the CEL schema: right field names, sometimes wrong types.
fn cel_spec(input: &mut Input<'_>) -> Value {
    let mut spec = json!({
        "replicas": input.below(8) as i64 - 2,
        "name": input.pick(&["a", "web", "", "é"]),
        "tags": (0..input.below(4)).map(|i| format!("t{i}")).collect::<Vec<_>>(),
        "labels": {"a": "1"},
        "items": [{"name": "n", "x": 1}]
    });
    input.mutate(&mut spec, 2);
    spec
}

/// CEL properties: compiling the rule never panics; when it compiles, validating objects with
/// and without an old object never panics, reports errors only under `spec`, and gives the
/// same answer twice (evaluation is deterministic).
pub fn cel_values(
    rule: &str,
    message_expression: Option<&str>,
    spec: &Value,
    old_spec: Option<&Value>,
) {
    let schema_json = schema_with_rule(rule, message_expression);
    let Ok(schema) = Schema::compile(&schema_json, "spec.validation.openAPIV3Schema") else {
        return;
    };
    let lenient = Validator::compile_lenient(&schema);
    let Ok(validator) = Validator::compile(&schema, "spec.validation.openAPIV3Schema") else {
        return;
    };
    assert!(
        lenient.is_some(),
        "the lenient compiler failed where the strict one did not"
    );
    let object = json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w"}, "spec": spec});
    let old = old_spec.map(|s| {
        json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w"}, "spec": s})
    });
    let errs = validator.validate(&object, old.as_ref());
    for e in &errs {
        assert!(
            e.field.starts_with("spec"),
            "rule {rule:?} reported an error outside spec: {e}"
        );
    }
    let again = validator.validate(&object, old.as_ref());
    assert_eq!(
        errs.iter().map(ToString::to_string).collect::<Vec<_>>(),
        again.iter().map(ToString::to_string).collect::<Vec<_>>(),
        "rule {rule:?} is not deterministic"
    );
}
