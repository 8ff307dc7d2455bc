//! Target for structural schemas (`opkit-schema`): compiling random CRD schemas, then
//! validating, pruning and defaulting random objects with them.
//!
//! CRD authors are users too: a schema is input the server must refuse cleanly when it is not
//! structural, and once accepted it runs on every write of every object of the kind. Pruning
//! and defaulting also run on every read from storage, so both must be idempotent — otherwise a
//! stored object would change each time it is read.

use opkit_schema::Schema;
use serde_json::{Map, Value, json};

use crate::input::Input;

/// Property names the generated schemas and objects share, so they meet often.
const NAMES: &[&str] = &["a", "b", "name", "spec", "status", "items", "x"];

/// Regular expressions for `pattern`, including ones Go's RE2 and Rust's `regex` refuse.
const PATTERNS: &[&str] = &["^a+$", "[0-9]", "(", "^(a|b)*$", "\\p{L}", "a{1000}", ""];

/// `format` values, known and unknown.
const FORMATS: &[&str] = &[
    "int32",
    "int64",
    "date-time",
    "date",
    "byte",
    "uuid",
    "hostname",
    "ipv4",
    "cidr",
    "bogus",
];

/// Schema target from raw bytes: a generated schema, then an object that mostly follows it.
pub fn schema_target(data: &[u8]) {
    let mut input = Input::new(data);
    let mut root = Map::new();
    root.insert("type".into(), json!("object"));
    let mut props = Map::new();
    props.insert("spec".into(), gen_schema(&mut input, 4));
    if input.flag() {
        props.insert("status".into(), gen_schema(&mut input, 2));
    }
    root.insert("properties".into(), Value::Object(props));
    let schema = Value::Object(root);
    let mut object = json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w"}});
    if let Some(spec) = schema.pointer("/properties/spec") {
        object["spec"] = instance(&mut input, spec, 5);
    }
    input.mutate(&mut object, 3);
    schema_values(&schema, &object);
}

/// Schema properties: compiling never panics (and a schema the strict compiler accepts, the
/// lenient one accepts too); validating, pruning and defaulting never panic; pruning twice
/// removes nothing the second time; defaulting twice changes nothing the second time.
pub fn schema_values(schema: &Value, object: &Value) {
    let lenient = Schema::compile_lenient(schema);
    let Ok(compiled) = Schema::compile(schema, "spec.validation.openAPIV3Schema") else {
        if let Ok(s) = lenient {
            run_on_object(&s, object);
        }
        return;
    };
    assert!(
        lenient.is_ok(),
        "a schema the strict compiler accepts is refused by the lenient one: {schema}"
    );
    run_on_object(&compiled, object);
}

fn run_on_object(schema: &Schema, object: &Value) {
    let _ = schema.validate(object);
    let _ = schema.validate_status(object);

    let mut pruned = object.clone();
    let _ = schema.prune(&mut pruned);
    let mut again = pruned.clone();
    let removed = schema.prune(&mut again);
    assert!(
        removed.is_empty(),
        "pruning twice removed {removed:?} from {pruned}"
    );
    assert_eq!(again, pruned, "pruning is not idempotent");

    let mut defaulted = pruned.clone();
    schema.apply_defaults(&mut defaulted);
    let mut twice = defaulted.clone();
    schema.apply_defaults(&mut twice);
    assert_eq!(twice, defaulted, "defaulting is not idempotent");
    let _ = schema.validate(&defaulted);
}

/// A schema node at most `depth` levels deep, mostly structural, sometimes not.
fn gen_schema(input: &mut Input<'_>, depth: usize) -> Value {
    let mut s = Map::new();
    let ty = if depth == 0 {
        input.pick(&["string", "integer", "number", "boolean"])
    } else {
        input.pick(&[
            "object", "object", "array", "string", "integer", "number", "boolean", "",
        ])
    };
    if !ty.is_empty() {
        s.insert("type".into(), json!(ty));
    }
    match ty {
        "object" => {
            let mut props = Map::new();
            for _ in 0..input.below(4) {
                props.insert(input.pick(NAMES).into(), gen_schema(input, depth - 1));
            }
            if input.below(4) == 0 {
                let req: Vec<&str> = props
                    .keys()
                    .map(String::as_str)
                    .take(input.below(3))
                    .collect();
                s.insert("required".into(), json!(req));
            }
            if props.is_empty() && input.flag() {
                let ap = if input.flag() {
                    gen_schema(input, depth - 1)
                } else {
                    Value::Bool(input.flag())
                };
                s.insert("additionalProperties".into(), ap);
            } else {
                s.insert("properties".into(), Value::Object(props));
            }
            match input.below(6) {
                0 => {
                    s.insert("x-kubernetes-preserve-unknown-fields".into(), json!(true));
                }
                1 => {
                    s.insert("x-kubernetes-embedded-resource".into(), json!(true));
                    s.insert("x-kubernetes-preserve-unknown-fields".into(), json!(true));
                }
                2 => {
                    s.insert(
                        "x-kubernetes-map-type".into(),
                        json!(input.pick(&["atomic", "granular"])),
                    );
                }
                _ => {}
            }
        }
        "array" => {
            let items = gen_schema(input, depth - 1);
            let list_type = input.pick(&["", "", "atomic", "set", "map"]);
            if !list_type.is_empty() {
                s.insert("x-kubernetes-list-type".into(), json!(list_type));
            }
            if list_type == "map" {
                let keys: Vec<&String> = items
                    .get("properties")
                    .and_then(Value::as_object)
                    .map(|p| p.keys().take(1 + input.below(2)).collect())
                    .unwrap_or_default();
                s.insert("x-kubernetes-list-map-keys".into(), json!(keys));
            }
            s.insert("items".into(), items);
            if input.flag() {
                s.insert("maxItems".into(), json!(input.below(4)));
            }
        }
        "string" => match input.below(5) {
            0 => {
                s.insert("enum".into(), json!(["a", "b", input.pick(NAMES)]));
            }
            1 => {
                s.insert("pattern".into(), json!(input.pick(PATTERNS)));
            }
            2 => {
                s.insert("format".into(), json!(input.pick(FORMATS)));
            }
            3 => {
                s.insert("maxLength".into(), json!(input.below(5)));
            }
            _ => {}
        },
        "integer" | "number" => match input.below(4) {
            0 => {
                s.insert("minimum".into(), json!(input.below(5)));
                s.insert("exclusiveMinimum".into(), json!(input.flag()));
            }
            1 => {
                s.insert("maximum".into(), json!(input.below(100)));
            }
            2 => {
                s.insert("multipleOf".into(), Value::Number(input.number()));
            }
            _ => {}
        },
        "" => {
            if input.flag() {
                s.insert("x-kubernetes-int-or-string".into(), json!(true));
            } else {
                s.insert("x-kubernetes-preserve-unknown-fields".into(), json!(true));
            }
        }
        _ => {}
    }
    if input.below(4) == 0 {
        s.insert("nullable".into(), json!(true));
    }
    match input.below(6) {
        0 => {
            let node = Value::Object(s.clone());
            let d = if input.flag() {
                instance(input, &node, 2)
            } else {
                Value::Null
            };
            s.insert("default".into(), d);
        }
        1 => {
            s.insert("default".into(), input.json(2));
        }
        _ => {}
    }
    if input.below(10) == 0 {
        s.insert(
            input
                .pick(&["allOf", "oneOf", "not", "$ref", "x-bogus"])
                .into(),
            input.json(2),
        );
    }
    Value::Object(s)
}

/// A value that mostly follows `schema` (types, property names, list items), at most `depth`
/// levels deep.
fn instance(input: &mut Input<'_>, schema: &Value, depth: usize) -> Value {
    if depth == 0 || input.below(10) == 0 {
        return input.json(1);
    }
    match schema.get("type").and_then(Value::as_str).unwrap_or("") {
        "object" => {
            let mut out = Map::new();
            if let Some(props) = schema.get("properties").and_then(Value::as_object) {
                for (k, sub) in props {
                    if input.below(4) != 0 {
                        out.insert(k.clone(), instance(input, sub, depth - 1));
                    }
                }
            }
            if let Some(ap) = schema.get("additionalProperties").filter(|v| v.is_object()) {
                for _ in 0..input.below(3) {
                    out.insert(input.pick(NAMES).into(), instance(input, ap, depth - 1));
                }
            }
            Value::Object(out)
        }
        "array" => {
            let items = schema.get("items").cloned().unwrap_or(Value::Null);
            Value::Array(
                (0..input.below(4))
                    .map(|_| instance(input, &items, depth - 1))
                    .collect(),
            )
        }
        "string" => json!(input.pick(&["a", "b", "", "2024-01-01T00:00:00Z", "x", "10.0.0.0/8"])),
        "integer" => json!(input.below(20) as i64 - 5),
        "number" => json!(f64::from(input.byte()) / 8.0),
        "boolean" => json!(input.flag()),
        _ => input.json(2),
    }
}
