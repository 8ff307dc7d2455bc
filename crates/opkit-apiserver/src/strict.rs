//! Decoding request bodies into JSON values while noting duplicate fields, as upstream's strict
//! decoder (`sigs.k8s.io/json`) does for `fieldValidation`: `{"a": 1, "a": 2}` decodes to
//! `{"a": 2}` (the last wins, as in Go) and reports `duplicate field "a"`.

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// Upstream stops collecting strict-decoding errors at 100.
const MAX_ERRORS: usize = 100;

/// Decodes a JSON document; also returns its duplicate fields as upstream words them.
pub fn decode_json(body: &[u8]) -> serde_json::Result<(Value, Vec<String>)> {
    let mut de = serde_json::Deserializer::from_slice(body);
    let mut duplicates = Vec::new();
    let value = ValueSeed {
        path: &Path::Root,
        duplicates: &mut duplicates,
    }
    .deserialize(&mut de)?;
    de.end()?;
    Ok((value, duplicates))
}

/// Decodes a YAML document; also returns its duplicate fields, worded as for JSON (upstream's
/// YAML decoder words them `line N: key "a" already set in map`).
pub fn decode_yaml(body: &[u8]) -> Result<(Value, Vec<String>), serde_yaml::Error> {
    let mut duplicates = Vec::new();
    let value = ValueSeed {
        path: &Path::Root,
        duplicates: &mut duplicates,
    }
    .deserialize(serde_yaml::Deserializer::from_slice(body))?;
    Ok((value, duplicates))
}

/// Where a value sits in the document, as a chain of borrowed segments on the stack (no
/// allocation unless a duplicate is found).
enum Path<'a> {
    Root,
    Key(&'a Path<'a>, &'a str),
    Index(&'a Path<'a>, usize),
}

impl Path<'_> {
    /// Upstream's rendering: `spec.containers[0].name`.
    fn render(&self, out: &mut String) {
        match self {
            Path::Root => {}
            Path::Key(parent, key) => {
                parent.render(out);
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(key);
            }
            Path::Index(parent, i) => {
                parent.render(out);
                out.push('[');
                out.push_str(&i.to_string());
                out.push(']');
            }
        }
    }
}

/// A float as serde_json keeps it (non-finite ones become `null`).
fn float(v: f64) -> Value {
    Number::from_f64(v).map_or(Value::Null, Value::Number)
}

struct ValueSeed<'p, 'e> {
    path: &'p Path<'p>,
    duplicates: &'e mut Vec<String>,
}

impl<'de> DeserializeSeed<'de> for ValueSeed<'_, '_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ValueSeed<'_, '_> {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any valid JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_i128<E>(self, v: i128) -> Result<Value, E> {
        Ok(match i64::try_from(v) {
            Ok(i) => Value::Number(i.into()),
            Err(_) => float(v as f64),
        })
    }

    fn visit_u128<E>(self, v: u128) -> Result<Value, E> {
        Ok(match u64::try_from(v) {
            Ok(u) => Value::Number(u.into()),
            Err(_) => float(v as f64),
        })
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(float(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        loop {
            let path = Path::Index(self.path, items.len());
            let seed = ValueSeed {
                path: &path,
                duplicates: &mut *self.duplicates,
            };
            match seq.next_element_seed(seed)? {
                Some(item) => items.push(item),
                None => return Ok(Value::Array(items)),
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let path = Path::Key(self.path, &key);
            if out.contains_key(&key) && self.duplicates.len() < MAX_ERRORS {
                let mut rendered = String::new();
                path.render(&mut rendered);
                let error = format!(
                    "duplicate field {}",
                    opkit_apimachinery::go_quote(&rendered)
                );
                if !self.duplicates.contains(&error) {
                    self.duplicates.push(error);
                }
            }
            let value = map.next_value_seed(ValueSeed {
                path: &path,
                duplicates: &mut *self.duplicates,
            })?;
            out.insert(key, value);
        }
        Ok(Value::Object(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn duplicate_fields_are_named_by_path_and_the_last_wins() {
        let body = br#"{"a": 1, "a": 2, "spec": {"c": [{"n": 1, "n": 2}], "b": 1, "b": {"x": 1}}}"#;
        let (value, dups) = decode_json(body).unwrap();
        assert_eq!(
            value,
            json!({"a": 2, "spec": {"c": [{"n": 2}], "b": {"x": 1}}})
        );
        assert_eq!(
            dups,
            [
                r#"duplicate field "a""#,
                r#"duplicate field "spec.c[0].n""#,
                r#"duplicate field "spec.b""#
            ]
        );
    }

    #[test]
    fn documents_without_duplicates_decode_as_serde_json_does() {
        let body = br#"{"n": [1, -2, 1.5, 18446744073709551615, null, true, "s"], "o": {}}"#;
        let (value, dups) = decode_json(body).unwrap();
        assert_eq!(value, serde_json::from_slice::<Value>(body).unwrap());
        assert!(dups.is_empty());
        assert!(decode_json(b"{} {}").is_err(), "trailing data is refused");
        assert!(decode_json(b"{\"a\": ").is_err());
    }

    #[test]
    fn yaml_duplicates_are_found_too() {
        let (value, dups) = decode_yaml(b"a: 1\nb:\n  c: x\n  c: y\n").unwrap();
        assert_eq!(value, json!({"a": 1, "b": {"c": "y"}}));
        assert_eq!(dups, [r#"duplicate field "b.c""#]);
    }
}
