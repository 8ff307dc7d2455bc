//! YAML exactly as Helm v4 and KUDO write and read it.
//!
//! Helm's `toYaml` is `sigs.k8s.io/yaml.Marshal`: Go's `json.Marshal`, the JSON read back by
//! go-yaml v2 (so numbers become `int` or `float64` by their JSON text: `1000000.0` is the
//! int `1000000`, `1.5e-7` the float printed `1.5e-07`), then go-yaml v2's writer. Its
//! `fromYaml` is `sigs.k8s.io/yaml.Unmarshal`: go-yaml v2's reader (YAML 1.1 typing:
//! `yes`, `on`, `off` are booleans), keys turned into strings, then Go's JSON decoding
//! (every number a `float64`). KUDO's `toYaml` is go-yaml v2's `Marshal` of the Go values
//! directly (ints stay ints). This module reproduces all three byte for byte:
//!
//! * [`to_yaml`] and [`from_yaml`] are the `sigs.k8s.io/yaml` pair (for the template
//!   functions and for the chart layer, which reads values files and manifests with them);
//! * the writer is a port of go-yaml v2's emitter (`emit`), the reader uses libyaml
//!   (`events`, the library go-yaml v2 was ported from, so the same documents fail with
//!   the same `yaml: line N: …` texts) and go-yaml's decoding rules (`decode`, `resolve`).
//!
//! Why not `serde_norway` (the workspace's YAML crate) for reading: it resolves plain
//! scalars by YAML 1.2 rules (`yes` stays a string, `0o17` is octal but `017` is not) and
//! hides whether a scalar was quoted, so go-yaml v2's typing cannot be rebuilt on top of it.

mod decode;
mod emit;
mod events;
mod resolve;

use std::cmp::Ordering;
use std::collections::BTreeMap;

use crate::Value;

/// Inputs longer than this are read on a thread with a large stack: nesting (up to
/// go-yaml's 10000 levels) needs at least one input byte per level.
const SMALL_INPUT: usize = 1000;
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
    /// `map[interface{}]interface{}`; the writer sorts the keys.
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
    let json = crate::sprig::to_json(v, false, None).map_err(YamlError::Marshal)?;
    let parsed: serde_json::Value =
        serde_json::from_str(&json).map_err(|e| YamlError::Marshal(e.to_string()))?;
    Ok(emit::emit(&from_json(&parsed)))
}

/// go-yaml v2's `Marshal(v)` of the template value itself (KUDO's `toYaml`): like
/// [`to_yaml`] but without the JSON step, so an `int` stays an `int` and a float prints
/// with go-yaml's `%g` (`1e+06`).
pub(crate) fn marshal_go(v: &Value) -> Result<String, YamlError> {
    Ok(emit::emit(&from_value(v, 0)?))
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
        crate::template::on_large_stack(|| read_any(text))
            .unwrap_or_else(|| Err("cannot start a thread to read YAML".into()))
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

/// go-yaml's reading of the JSON text `json.Marshal` produced: a number is an `int` when
/// its text parses as one (`int64`, then `uint64`), else a `float64`.
fn from_json(v: &serde_json::Value) -> Yaml {
    match v {
        serde_json::Value::Null => Yaml::Null,
        serde_json::Value::Bool(b) => Yaml::Bool(*b),
        serde_json::Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => Yaml::Int(i),
            (None, Some(u)) => Yaml::Uint(u),
            // Go writes the float -0 as `-0`, which parses as the int 0.
            _ => match n.as_f64().unwrap_or_default() {
                0.0 => Yaml::Int(0),
                f => Yaml::Float(f),
            },
        },
        serde_json::Value::String(s) => Yaml::Str(s.clone()),
        serde_json::Value::Array(a) => Yaml::Seq(a.iter().map(from_json).collect()),
        serde_json::Value::Object(o) => Yaml::Map(sorted(
            o.iter()
                .map(|(k, v)| (Yaml::Str(k.clone()), from_json(v)))
                .collect(),
        )),
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
        Value::Map(m) => Yaml::Map(sorted(
            m.entries()
                .iter()
                .map(|(k, x)| Ok((Yaml::Str(k.clone()), from_value(x, depth + 1)?)))
                .collect::<Result<_, YamlError>>()?,
        )),
        other => {
            return Err(YamlError::Write(format!(
                "cannot marshal type: {}",
                other.type_name()
            )));
        }
    })
}

/// Map entries in go-yaml's key order.
fn sorted(mut entries: Vec<(Yaml, Yaml)>) -> Vec<(Yaml, Yaml)> {
    entries.sort_by(|(a, _), (b, _)| key_order(a, b));
    entries
}

/// Go's `reflect.Kind` number of a key, which orders keys of different kinds.
fn kind_rank(k: &Yaml) -> u8 {
    match k {
        Yaml::Bool(_) => 1,
        Yaml::Int(_) => 2,
        Yaml::Uint(_) => 11,
        Yaml::Float(_) => 14,
        Yaml::Null => 20,
        Yaml::Map(_) => 21,
        Yaml::Seq(_) => 23,
        Yaml::Str(_) => 24,
    }
}

fn key_number(k: &Yaml) -> Option<f64> {
    match k {
        Yaml::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
        Yaml::Int(i) => Some(*i as f64),
        Yaml::Uint(u) => Some(*u as f64),
        Yaml::Float(f) => Some(*f),
        _ => None,
    }
}

/// go-yaml's `keyList.Less` as an ordering: numbers by value, strings letter by letter
/// with runs of digits compared as numbers (`a2` before `a10`), letters before other
/// characters.
fn key_order(a: &Yaml, b: &Yaml) -> Ordering {
    if less(a, b) {
        Ordering::Less
    } else if less(b, a) {
        Ordering::Greater
    } else {
        Ordering::Equal
    }
}

fn less(a: &Yaml, b: &Yaml) -> bool {
    let (ak, bk) = (kind_rank(a), kind_rank(b));
    if let (Some(af), Some(bf)) = (key_number(a), key_number(b)) {
        if af != bf {
            return af < bf;
        }
        if ak != bk {
            return ak < bk;
        }
        return match (a, b) {
            (Yaml::Int(x), Yaml::Int(y)) => x < y,
            (Yaml::Uint(x), Yaml::Uint(y)) => x < y,
            (Yaml::Float(x), Yaml::Float(y)) => x < y,
            (Yaml::Bool(x), Yaml::Bool(y)) => !x && *y,
            _ => false,
        };
    }
    let (Yaml::Str(a), Yaml::Str(b)) = (a, b) else {
        return ak < bk;
    };
    let ar: Vec<char> = a.chars().collect();
    let br: Vec<char> = b.chars().collect();
    for i in 0..ar.len().min(br.len()) {
        if ar[i] == br[i] {
            continue;
        }
        let al = ar[i].is_alphabetic();
        let bl = br[i].is_alphabetic();
        if al && bl {
            return ar[i] < br[i];
        }
        if al || bl {
            return bl;
        }
        let (mut an, mut bn) = (0i64, 0i64);
        if ar[i] == '0' || br[i] == '0' {
            let mut j = i;
            while j > 0 && go_is_digit(ar[j - 1]) {
                j -= 1;
                if ar[j] != '0' {
                    an = 1;
                    bn = 1;
                    break;
                }
            }
        }
        let mut ai = i;
        while ai < ar.len() && go_is_digit(ar[ai]) {
            an = an.wrapping_mul(10).wrapping_add(digit_value(ar[ai]));
            ai += 1;
        }
        let mut bi = i;
        while bi < br.len() && go_is_digit(br[bi]) {
            bn = bn.wrapping_mul(10).wrapping_add(digit_value(br[bi]));
            bi += 1;
        }
        if an != bn {
            return an < bn;
        }
        if ai != bi {
            return ai < bi;
        }
        return ar[i] < br[i];
    }
    ar.len() < br.len()
}

/// Go's `unicode.IsDigit` (any decimal digit, not only ASCII). Rust has no test for the
/// `Nd` category alone, so other numeric characters outside ASCII (`½`, `Ⅻ`) count too.
fn go_is_digit(c: char) -> bool {
    c.is_ascii_digit() || (!c.is_ascii() && c.is_numeric())
}

/// `int64(r - '0')` as go-yaml computes it, also for non-ASCII digits.
fn digit_value(c: char) -> i64 {
    c as i64 - '0' as i64
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
