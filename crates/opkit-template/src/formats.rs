//! Helm v4's data-format functions (`pkg/engine/funcs.go`): `toYaml`, `mustToYaml`,
//! `toYamlPretty`, `fromYaml`, `fromYamlArray`, `toJson`, `mustToJson`, `fromJson`,
//! `fromJsonArray`, `toToml`, `fromToml`.
//! Helm adds them over Sprig's map, so a chart's `toJson` is Helm's. Each keeps Helm's
//! error behaviour: `toYaml`/`toJson` print nothing on error, the `must` forms fail the
//! template, `fromYaml`/`fromJson`/`fromToml` return a map whose `Error` key holds the
//! error text, the `Array` forms a one-element list with it, and `toToml` prints its
//! error text.
//!
//! Helm v4.1's map has no `mustToToml` and no duration helpers (they came later).

use std::collections::BTreeMap;

use crate::ParamType::{Any, String as Str};
use crate::toml::TomlError;
use crate::yaml::{Target, YamlError};
use crate::{FuncError, Function, Value};

/// Helm's data-format functions by name, to add after [`crate::sprig::functions`].
pub fn functions() -> BTreeMap<String, Function> {
    let mut m = BTreeMap::new();
    let mut add = |name: &str, f: Function| {
        m.insert(name.to_string(), f);
    };
    add(
        "toYaml",
        Function::new(&[Any], |a| {
            Ok(Value::from(helm_yaml(&a[0]).unwrap_or_default()))
        }),
    );
    add(
        "mustToYaml",
        Function::new(&[Any], |a| {
            helm_yaml(&a[0])
                .map(Value::from)
                .map_err(|e| FuncError::new(e.to_string()))
        }),
    );
    add(
        "toYamlPretty",
        Function::new(&[Any], |a| {
            let mut s = crate::yaml::marshal_pretty(&a[0]).unwrap_or_default();
            if s.ends_with('\n') {
                s.pop();
            }
            Ok(Value::from(s))
        }),
    );
    add(
        "fromYaml",
        Function::new(&[Str], |a| {
            Ok(or_error_map(crate::yaml::from_yaml_map(text(a))))
        }),
    );
    add(
        "fromYamlArray",
        Function::new(&[Str], |a| {
            Ok(or_error_list(crate::yaml::from_yaml_array(text(a))))
        }),
    );
    add(
        "toJson",
        Function::new(&[Any], |a| {
            Ok(Value::from(
                crate::sprig::to_json(&a[0], true, None).unwrap_or_default(),
            ))
        }),
    );
    add(
        "mustToJson",
        Function::new(&[Any], |a| {
            crate::sprig::to_json(&a[0], true, None)
                .map(Value::from)
                .map_err(FuncError::new)
        }),
    );
    add(
        "toToml",
        Function::new(&[Any], |a| match crate::toml::to_toml(&a[0]) {
            Ok(text) | Err(TomlError::Encode(text)) => Ok(Value::from(text)),
            Err(TomlError::Panic(msg)) => Err(FuncError::new(msg)),
        }),
    );
    add(
        "fromToml",
        Function::new(&[Str], |a| {
            Ok(or_error_map(crate::toml::from_toml(text(a))))
        }),
    );
    add(
        "fromJson",
        Function::new(&[Str], |a| {
            Ok(or_error_map(read_json(text(a), Target::Map)))
        }),
    );
    add(
        "fromJsonArray",
        Function::new(&[Str], |a| {
            Ok(or_error_list(read_json(text(a), Target::List)))
        }),
    );
    m
}

fn text(a: &[Value]) -> &str {
    a[0].as_str().unwrap_or_default()
}

/// Helm's `toYaml`: `sigs.k8s.io/yaml.Marshal` without the final line break.
fn helm_yaml(v: &Value) -> Result<String, YamlError> {
    let mut s = crate::yaml::to_yaml(v)?;
    if s.ends_with('\n') {
        s.pop();
    }
    Ok(s)
}

/// A decoded map, or `{"Error": TEXT}`.
fn or_error_map<E: std::fmt::Display>(r: Result<Value, E>) -> Value {
    r.unwrap_or_else(|e| {
        Value::map(BTreeMap::from([(
            "Error".to_string(),
            Value::from(e.to_string()),
        )]))
    })
}

/// A decoded list, or `[TEXT]`.
fn or_error_list<E: std::fmt::Display>(r: Result<Value, E>) -> Value {
    r.unwrap_or_else(|e| Value::list(vec![Value::from(e.to_string())]))
}

/// Go's `json.Unmarshal` into a map or a slice (numbers `float64`), with Go's syntax error
/// texts.
fn read_json(text: &str, target: Target) -> Result<Value, String> {
    if let Some(e) = crate::json_syntax::syntax_error(text) {
        return Err(e);
    }
    let v: serde_json::Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let kind = match (&v, target) {
        (serde_json::Value::Null, Target::List) => return Ok(Value::list(Vec::new())),
        (serde_json::Value::Null, _) => return Ok(Value::map(BTreeMap::new())),
        (serde_json::Value::Object(_), Target::Map | Target::Any)
        | (serde_json::Value::Array(_), Target::List | Target::Any) => {
            return Ok(Value::from_json(&v));
        }
        (serde_json::Value::Object(_), _) => "object",
        (serde_json::Value::Array(_), _) => "array",
        (serde_json::Value::String(_), _) => "string",
        (serde_json::Value::Bool(_), _) => "bool",
        (serde_json::Value::Number(_), _) => "number",
    };
    let go_type = if target == Target::List {
        "[]interface {}"
    } else {
        "map[string]interface {}"
    };
    Err(format!(
        "json: cannot unmarshal {kind} into Go value of type {go_type}"
    ))
}
