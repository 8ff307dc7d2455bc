//! YAML exactly as Helm v4 and KUDO write and read it.
//!
//! Helm's `toYaml` is `sigs.k8s.io/yaml.Marshal`: Go's `json.Marshal`, the JSON read back by
//! go-yaml v2 (so numbers become `int` or `float64` by their JSON text: `1000000.0` is the
//! int `1000000`, `1.5e-7` the float printed `1.5e-07`), then go-yaml v2's writer. Its
//! `fromYaml` is `sigs.k8s.io/yaml.Unmarshal`: go-yaml v2's reader (YAML 1.1 typing:
//! `yes`, `on`, `off` are booleans), keys turned into strings, then Go's JSON decoding
//! (every number a `float64`). KUDO's `toYaml` is go-yaml v2's `Marshal` of the Go values
//! directly (ints stay ints), Helm's `toYamlPretty` go-yaml v3's encoder with two-space
//! indentation. This module reproduces them byte for byte:
//!
//! * [`to_yaml`] and [`from_yaml`] (with [`from_yaml_map`], [`from_yaml_array`]) are the
//!   `sigs.k8s.io/yaml` pair, for the template functions and for the chart layer, which
//!   reads values files and manifests with them;
//! * the writer is a port of go-yaml v2's emitter (`emit`, with v3's few differences as a
//!   dialect) and its key order (`order`); the reader uses libyaml (`events`, the library
//!   go-yaml v2 was ported from, so the same documents fail with the same `yaml: line N: …`
//!   texts; its one YAML 1.2 addition, the `\/` escape, is refused as go-yaml does) and
//!   go-yaml's decoding rules (`decode`, `resolve`).
//!
//! Why not `serde_norway` (the workspace's YAML crate) for reading: it resolves plain
//! scalars by YAML 1.2 rules (`yes` stays a string, `0o17` is octal but `017` is not) and
//! hides whether a scalar was quoted, so go-yaml v2's typing cannot be rebuilt on top of it.

mod decode;
mod emit;
mod events;
mod order;
mod resolve;

use std::collections::BTreeMap;

use crate::Value;

/// Inputs longer than this are read on a large stack: nesting (up to
/// go-yaml's 10000 levels) needs at least one input byte per level.
const SMALL_INPUT: usize = 512;
/// How deep a value is followed when written directly (KUDO's `toYaml`); only a map
/// that holds itself gets this deep, and Helm's JSON step has the same bound.
const MAX_WRITE_DEPTH: usize = 100;

/// Why YAML could not be written or read, with Go's error text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum YamlError {
    /// The value cannot be encoded as JSON first (`toYaml` of a NaN or a function).
    #[error("error marshaling into JSON: {0}")]
    Marshal(String),
    /// The text is not YAML go-yaml reads, or does not convert to JSON
    /// (`error converting YAML to JSON: yaml: line 2: mapping values are not allowed in this context`).
    #[error("error converting YAML to JSON: {0}")]
    Convert(String),
    /// The document is not of the kind asked for
    /// (`… json: cannot unmarshal array into Go value of type map[string]interface {}`).
    #[error("error unmarshaling JSON: while decoding JSON: {0}")]
    Decode(String),
    /// go-yaml's own writer refused the value (KUDO's `toYaml`).
    #[error("{0}")]
    Write(String),
}

/// Go data as go-yaml holds it: what its reader produces for `interface{}` and what its
/// writer takes.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Yaml {
    Null,
    Bool(bool),
    Int(i64),
    Uint(u64),
    Float(f64),
    Str(String),
    Seq(Vec<Yaml>),
    /// `map[interface{}]interface{}` (unordered, as Go's maps): the writer sorts the keys.
    Map(Vec<(Yaml, Yaml)>),
}

/// The document kind a caller decodes into (`map[string]interface{}`, `[]interface{}`
/// or `interface{}`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Target {
    Any,
    Map,
    List,
}

/// `sigs.k8s.io/yaml.Marshal(v)`: the YAML Helm's `toYaml` prints (with the final line
/// break, which `toYaml` trims).
///
/// ```
/// use opkit_template::{Value, yaml::to_yaml};
/// let v = Value::from(serde_json::json!({"b": [1, "yes"], "a": {"x": 1000000, "y": 0.5}}));
/// assert_eq!(to_yaml(&v).unwrap(), "a:\n  x: 1000000\n  \"y\": 0.5\nb:\n- 1\n- \"yes\"\n");
/// ```
pub fn to_yaml(v: &Value) -> Result<String, YamlError> {
    via_json(v, emit::Dialect::V2)
}

/// `sigs.k8s.io/yaml.Marshal(v)` as KUDO 0.19 links it (over go-yaml v2.3.0, which does not
/// fold long strings): how KUDO stores array and map parameters as text.
pub(crate) fn to_yaml_unfolded(v: &Value) -> Result<String, YamlError> {
    via_json(v, emit::Dialect::V2NoWrap)
}

/// Go's JSON of `v`, read by go-yaml and written back in `dialect`.
fn via_json(v: &Value, dialect: emit::Dialect) -> Result<String, YamlError> {
    let json = crate::sprig::to_json(v, false, None).map_err(YamlError::Marshal)?;
    // The JSON text read back by go-yaml's own rules, as sigs.k8s.io/yaml does: numbers get
    // their type from their text, and a raw NEL in a string folds into a space.
    let doc = decode::decode(&json)
        .map_err(YamlError::Write)?
        .unwrap_or(Yaml::Null);
    Ok(emit::emit(&doc, dialect))
}

/// go-yaml v2.3.0's `Marshal(v)` of the template value itself (KUDO 0.19's `toYaml`): like
/// [`to_yaml`] but without the JSON step, so an `int` stays an `int` and a float prints
/// with go-yaml's `%g` (`1e+06`), and without folding long strings (v2.3.0 did not).
pub(crate) fn marshal_go(v: &Value) -> Result<String, YamlError> {
    Ok(emit::emit(&from_value(v, 0)?, emit::Dialect::V2NoWrap))
}

/// go-yaml v3's `Encoder` with `SetIndent(2)` over the template value itself (Helm's
/// `toYamlPretty`): like [`marshal_go`] but sequences inside mappings are indented, long
/// strings are not folded, multi-line strings with tabs stay literal blocks, and keys sort
/// by v3's slightly different order.
pub(crate) fn marshal_pretty(v: &Value) -> Result<String, YamlError> {
    Ok(emit::emit(&from_value(v, 0)?, emit::Dialect::V3Indent2))
}

/// `sigs.k8s.io/yaml.Unmarshal` into `interface{}`: the first document of `text` as
/// template data (numbers `float64`, keys strings; no document gives nil).
///
/// ```
/// use opkit_template::yaml::from_yaml;
/// let v = from_yaml("on: yes\nport: 0x1F\nname: '010'\n").unwrap();
/// assert_eq!(v.to_string(), "map[name:010 port:31 true:true]");
/// ```
pub fn from_yaml(text: &str) -> Result<Value, YamlError> {
    read(text, Target::Any)
}

/// `sigs.k8s.io/yaml.Unmarshal` into `map[string]interface{}` (how Helm reads a values file
/// and `fromYaml` reads its argument): an empty or `null` document is an empty map, any
/// other non-map fails with Go's `json: cannot unmarshal … into Go value of type …` text.
pub fn from_yaml_map(text: &str) -> Result<Value, YamlError> {
    read(text, Target::Map)
}

/// `sigs.k8s.io/yaml.Unmarshal` into `[]interface{}` (`fromYamlArray`): an empty or `null`
/// document is an empty list.
pub fn from_yaml_array(text: &str) -> Result<Value, YamlError> {
    read(text, Target::List)
}

/// `sigs.k8s.io/yaml.Unmarshal` into a map (`Map`), a list (`List`) or anything (`Any`).
pub(crate) fn read(text: &str, target: Target) -> Result<Value, YamlError> {
    let value = if text.len() <= SMALL_INPUT {
        read_any(text)
    } else {
        crate::stack::on_large_stack(crate::stack::LARGE_STACK_BYTES, || read_any(text))
            .unwrap_or_else(|| Err("cannot map a stack to read YAML".into()))
    }
    .map_err(YamlError::Convert)?;
    let kind = match &value {
        Value::Nil => return Ok(empty_of(target)),
        Value::Map(_) if target != Target::List => return Ok(value),
        Value::List(_) if target != Target::Map => return Ok(value),
        Value::Map(_) => "object",
        Value::List(_) => "array",
        Value::String(_) => "string",
        Value::Bool(_) => "bool",
        _ => "number",
    };
    match target {
        Target::Any => Ok(value),
        Target::Map => Err(YamlError::Decode(format!(
            "json: cannot unmarshal {kind} into Go value of type map[string]interface {{}}"
        ))),
        Target::List => Err(YamlError::Decode(format!(
            "json: cannot unmarshal {kind} into Go value of type []interface {{}}"
        ))),
    }
}

/// The first document as JSON-like data (nil when there is none). Deeply nested input is
/// read, converted and its intermediate tree dropped all on the caller's (large) stack.
fn read_any(text: &str) -> Result<Value, String> {
    let doc = decode::decode(text)?.unwrap_or(Yaml::Null);
    to_json_value(&doc)
}

/// What decoding JSON `null` leaves in a target: Go's nil map or slice, which templates
/// see as empty.
fn empty_of(target: Target) -> Value {
    match target {
        Target::Any => Value::Nil,
        Target::Map => Value::map(BTreeMap::new()),
        Target::List => Value::list(Vec::new()),
    }
}

/// A template value as the Go value go-yaml's writer is handed (KUDO's `toYaml`).
fn from_value(v: &Value, depth: usize) -> Result<Yaml, YamlError> {
    if depth > MAX_WRITE_DEPTH {
        return Err(YamlError::Write(format!(
            "yaml: the value nests deeper than {MAX_WRITE_DEPTH} levels (a map that holds itself?)"
        )));
    }
    Ok(match &*v.plain() {
        Value::Nil => Yaml::Null,
        Value::Bool(b) => Yaml::Bool(*b),
        Value::Int(i) | Value::Int64(i) => Yaml::Int(*i),
        Value::Float(f) => Yaml::Float(*f),
        Value::String(s) => Yaml::Str(s.to_string()),
        Value::List(l) => Yaml::Seq(
            l.iter()
                .map(|x| from_value(x, depth + 1))
                .collect::<Result<_, _>>()?,
        ),
        Value::Map(m) => Yaml::Map(
            m.entries()
                .iter()
                .map(|(k, x)| Ok((Yaml::Str(k.clone()), from_value(x, depth + 1)?)))
                .collect::<Result<_, YamlError>>()?,
        ),
        other => {
            return Err(YamlError::Write(format!(
                "cannot marshal type: {}",
                other.type_name()
            )));
        }
    })
}

/// `sigs.k8s.io/yaml`'s YAML→JSON step and Go's JSON decoding into `interface{}`: keys
/// become strings (`1` → `"1"`, a float key with `%g` at 32-bit precision), numbers
/// `float64`; a NaN or infinity cannot be JSON.
fn to_json_value(y: &Yaml) -> Result<Value, String> {
    Ok(match y {
        Yaml::Null => Value::Nil,
        Yaml::Bool(b) => Value::Bool(*b),
        Yaml::Int(i) => Value::Float(*i as f64),
        Yaml::Uint(u) => Value::Float(*u as f64),
        Yaml::Float(f) if !f.is_finite() => {
            return Err(format!(
                "json: unsupported value: {}",
                crate::gofmt::sprint_value(&Value::Float(*f))
            ));
        }
        Yaml::Float(f) => Value::Float(*f),
        Yaml::Str(s) => Value::string(s.as_str()),
        Yaml::Seq(items) => Value::list(items.iter().map(to_json_value).collect::<Result<_, _>>()?),
        Yaml::Map(entries) => {
            let mut m = BTreeMap::new();
            for (k, v) in entries {
                m.insert(json_key(k, v)?, v);
            }
            let mut out = BTreeMap::new();
            for (k, v) in m {
                out.insert(k, to_json_value(v)?);
            }
            Value::map(out)
        }
    })
}

/// `sigs.k8s.io/yaml`'s conversion of a YAML key to a JSON key.
fn json_key(k: &Yaml, v: &Yaml) -> Result<String, String> {
    Ok(match k {
        Yaml::Str(s) => s.clone(),
        Yaml::Int(i) => i.to_string(),
        Yaml::Bool(b) => b.to_string(),
        Yaml::Float(f) => float32_key(*f),
        other => {
            let type_name = match other {
                Yaml::Uint(_) => "uint64",
                // Go's `%s` of a nil `reflect.Type`.
                _ => "%!s(<nil>)",
            };
            return Err(format!(
                "unsupported map key of type: {type_name}, key: {}, value: {}",
                decode::go_syntax(other),
                decode::go_syntax(v)
            ));
        }
    })
}

/// `strconv.FormatFloat(f, 'g', -1, 32)` with go-yaml's names for infinities and NaN.
fn float32_key(f: f64) -> String {
    let narrow = f as f32;
    if !narrow.is_finite() {
        return emit::format_float(f64::from(narrow));
    }
    // The shortest float32 digits, read back as a float64 with those digits, print the
    // same under %g.
    let shortest: f64 = format!("{narrow:e}").parse().unwrap_or(f);
    crate::gofmt::sprint_value(&Value::Float(shortest))
}
