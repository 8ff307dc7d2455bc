//! JSON values to CEL values, typed by the schema.
//!
//! Upstream binds `self` through the structural schema, not through the JSON alone: a `number`
//! field is a `double` even when the JSON holds `1`, `format: date-time` strings are timestamps,
//! object properties are accessed by their *escaped* names (`self.foo__dash__bar` for `foo-bar`),
//! and the root of a resource exposes only `apiVersion`, `kind`, `metadata.name` and
//! `metadata.generateName`. This module reproduces that mapping on plain `serde_json` values.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use cel::Value as Cel;
use cel::objects::{Key, Map};
use serde_json::Value;

/// The schema facts the CEL binding needs, cloned out of a [`opkit_schema::SchemaNode`].
#[derive(Debug, Clone, Default)]
pub(crate) struct Shape {
    pub ty: String,
    pub format: Option<String>,
    pub int_or_string: bool,
    pub preserve_unknown: bool,
    pub embedded: bool,
    /// Declared properties by their JSON name.
    pub properties: BTreeMap<String, Shape>,
    pub additional: Option<Box<Shape>>,
    pub items: Option<Box<Shape>>,
    pub list_type: Option<String>,
    pub map_keys: Vec<String>,
}

impl Shape {
    pub(crate) fn from_schema(n: &opkit_schema::SchemaNode) -> Shape {
        Shape {
            ty: n.type_name().unwrap_or("").to_string(),
            format: n.format().map(str::to_string),
            int_or_string: n.is_int_or_string(),
            preserve_unknown: n.preserves_unknown_fields(),
            embedded: n.is_embedded_resource(),
            properties: n
                .properties()
                .iter()
                .map(|(k, v)| (k.clone(), Shape::from_schema(v)))
                .collect(),
            additional: n
                .additional_properties_schema()
                .map(|s| Box::new(Shape::from_schema(s))),
            items: n.items().map(|s| Box::new(Shape::from_schema(s))),
            list_type: n.list_type().map(str::to_string),
            map_keys: n.list_map_keys().to_vec(),
        }
    }

    /// Whether values here are untyped (any JSON is accepted as it is).
    pub(crate) fn is_dynamic(&self) -> bool {
        self.ty.is_empty() && !self.int_or_string
    }
}

/// CEL reserved words that upstream escapes as `__word__` when they are property names.
const RESERVED: [&str; 21] = [
    "true",
    "false",
    "null",
    "in",
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
];

/// The CEL field name of a property (upstream's `cel.Escape`), or `None` when the name cannot be
/// expressed (such properties are not visible to rules).
pub(crate) fn escape(name: &str) -> Option<String> {
    if RESERVED.contains(&name) {
        return Some(format!("__{name}__"));
    }
    let mut chars = name.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || matches!(c, '_' | '.' | '-' | '/'));
    if !first_ok
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-' | '/'))
    {
        return None;
    }
    Some(
        name.replace("__", "__underscores__")
            .replace('.', "__dot__")
            .replace('-', "__dash__")
            .replace('/', "__slash__"),
    )
}

fn key(s: &str) -> Key {
    Key::String(Arc::new(s.to_string()))
}

fn map(entries: HashMap<Key, Cel>) -> Cel {
    Cel::Map(Map {
        map: Arc::new(entries),
    })
}

/// Converts `v` (the value at a node of shape `shape`) to CEL. `resource_root` marks the root of
/// a custom resource or of an embedded resource, where metadata is reduced to name and
/// generateName.
pub(crate) fn to_cel(v: &Value, shape: &Shape, resource_root: bool) -> Cel {
    match v {
        Value::Null => Cel::Null,
        Value::Bool(b) => Cel::Bool(*b),
        Value::Number(n) => {
            if shape.ty == "number" {
                Cel::Float(n.as_f64().unwrap_or(0.0))
            } else if let Some(i) = n.as_i64() {
                Cel::Int(i)
            } else if let Some(u) = n.as_u64() {
                Cel::UInt(u)
            } else {
                Cel::Float(n.as_f64().unwrap_or(0.0))
            }
        }
        Value::String(s) => string_to_cel(s, shape),
        Value::Array(a) => {
            let items = shape.items.as_deref();
            let dynamic = Shape::default();
            let item_shape = items.unwrap_or(&dynamic);
            let embedded = items.is_some_and(|i| i.embedded);
            Cel::List(Arc::new(
                a.iter().map(|x| to_cel(x, item_shape, embedded)).collect(),
            ))
        }
        Value::Object(o) => {
            let mut out = HashMap::with_capacity(o.len());
            let root = resource_root || shape.embedded;
            if !shape.properties.is_empty() {
                for (k, val) in o {
                    if let Some(p) = shape.properties.get(k) {
                        if let Some(name) = escape(k) {
                            out.insert(key(&name), to_cel(val, p, p.embedded));
                        }
                    } else if root && matches!(k.as_str(), "apiVersion" | "kind" | "metadata") {
                        out.insert(key(k), root_field(k, val));
                    }
                }
                if root {
                    for k in ["apiVersion", "kind", "metadata"] {
                        if let (Some(val), false) = (o.get(k), out.contains_key(&key(k))) {
                            out.insert(key(k), root_field(k, val));
                        }
                    }
                }
            } else if let Some(ap) = shape.additional.as_deref() {
                for (k, val) in o {
                    out.insert(key(k), to_cel(val, ap, ap.embedded));
                }
            } else {
                let dynamic = Shape::default();
                for (k, val) in o {
                    let v = if root && matches!(k.as_str(), "apiVersion" | "kind" | "metadata") {
                        root_field(k, val)
                    } else {
                        to_cel(val, &dynamic, false)
                    };
                    out.insert(key(k), v);
                }
            }
            map(out)
        }
    }
}

/// `apiVersion`, `kind` (strings) and `metadata` (only `name` and `generateName`) of a resource.
fn root_field(k: &str, v: &Value) -> Cel {
    if k == "metadata" {
        let mut out = HashMap::new();
        if let Some(m) = v.as_object() {
            for f in ["name", "generateName"] {
                if let Some(Value::String(s)) = m.get(f) {
                    out.insert(key(f), Cel::String(Arc::new(s.clone())));
                }
            }
        }
        map(out)
    } else {
        to_cel(v, &Shape::default(), false)
    }
}

fn string_to_cel(s: &str, shape: &Shape) -> Cel {
    if shape.ty == "string" {
        match shape.format.as_deref() {
            Some("byte") => {
                if let Some(bytes) = decode_base64(s) {
                    return Cel::Bytes(Arc::new(bytes));
                }
            }
            Some("duration") => {
                if let Ok(d) = opkit_apimachinery::Duration::parse(s) {
                    return Cel::Duration(chrono::Duration::nanoseconds(d.as_nanos()));
                }
            }
            Some("date-time") => {
                if let Ok(t) = chrono::DateTime::parse_from_rfc3339(s) {
                    return Cel::Timestamp(t);
                }
            }
            Some("date") => {
                if let Ok(d) = chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d")
                    && let Some(t) = d.and_hms_opt(0, 0, 0)
                {
                    return Cel::Timestamp(t.and_utc().fixed_offset());
                }
            }
            _ => {}
        }
    }
    Cel::String(Arc::new(s.to_string()))
}

/// Standard base64 (with or without padding), as `format: byte` values are written.
fn decode_base64(s: &str) -> Option<Vec<u8>> {
    fn val(c: u8) -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    }
    let trimmed = s.trim_end_matches('=');
    let mut out = Vec::with_capacity(trimmed.len() * 3 / 4);
    let mut acc = 0u32;
    let mut bits = 0;
    for c in trimmed.bytes() {
        acc = (acc << 6) | val(c)?;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

/// How many values `v` holds (itself included), plus the length of its strings when
/// `count_strings` (functions such as `split` make lists as long as a string). Feeds the work
/// estimate of [`crate::Validator::validate`].
pub(crate) fn weight(v: &Value, count_strings: bool) -> u64 {
    match v {
        Value::Array(a) => 1 + a.iter().map(|x| weight(x, count_strings)).sum::<u64>(),
        Value::Object(o) => {
            1 + o
                .iter()
                .map(|(k, x)| {
                    weight(x, count_strings) + if count_strings { k.len() as u64 } else { 0 }
                })
                .sum::<u64>()
        }
        Value::String(s) if count_strings => 1 + s.len() as u64,
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_matches_upstream() {
        assert_eq!(escape("foo").as_deref(), Some("foo"));
        assert_eq!(escape("namespace").as_deref(), Some("__namespace__"));
        assert_eq!(escape("foo-bar").as_deref(), Some("foo__dash__bar"));
        assert_eq!(escape("a.b/c").as_deref(), Some("a__dot__b__slash__c"));
        assert_eq!(escape("a__b").as_deref(), Some("a__underscores__b"));
        assert_eq!(escape("1a"), None);
        assert_eq!(escape("a b"), None);
    }

    #[test]
    fn duration_strings_become_cel_durations() {
        let shape = Shape {
            ty: "string".into(),
            format: Some("duration".into()),
            ..Shape::default()
        };
        let duration = |s: &str| match string_to_cel(s, &shape) {
            Cel::Duration(d) => Some(d),
            _ => None,
        };
        assert_eq!(duration("1h30m"), Some(chrono::Duration::minutes(90)));
        assert_eq!(
            duration("-1.5s"),
            Some(chrono::Duration::milliseconds(-1500))
        );
        assert_eq!(duration("0"), Some(chrono::Duration::zero()));
        // Not a Go duration: stays a string.
        assert_eq!(duration("5"), None);
    }

    #[test]
    fn base64_decodes() {
        assert_eq!(decode_base64("aGVsbG8=").as_deref(), Some(&b"hello"[..]));
        assert_eq!(decode_base64("aGk").as_deref(), Some(&b"hi"[..]));
        assert_eq!(decode_base64("!!"), None);
    }
}
