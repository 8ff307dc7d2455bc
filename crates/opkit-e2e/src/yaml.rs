//! Reading kuttl's YAML files: multi-document YAML (or JSON) into JSON values, numbers as
//! kuttl sees them after its YAML → JSON round trip (integral values are integers).

use serde::Deserialize;
use serde_json::Value;

/// Every non-empty document of `text`, in order.
pub(crate) fn load_documents(text: &str) -> Result<Vec<Value>, String> {
    let mut out = Vec::new();
    for doc in serde_yaml::Deserializer::from_str(text) {
        let value = Value::deserialize(doc).map_err(|e| e.to_string())?;
        match value {
            Value::Null => continue,
            Value::Object(_) => out.push(normalize(value)),
            other => return Err(format!("a document is not an object: {other}")),
        }
    }
    Ok(out)
}

/// Integral floats become integers, as sigs.k8s.io/yaml's YAML → JSON → Go conversion makes them.
pub(crate) fn normalize(value: Value) -> Value {
    match value {
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() && f.fract() == 0.0 && f.abs() < 9.0e15 => Value::from(f as i64),
            _ => Value::Number(n),
        },
        Value::Array(items) => Value::Array(items.into_iter().map(normalize).collect()),
        Value::Object(map) => {
            Value::Object(map.into_iter().map(|(k, v)| (k, normalize(v))).collect())
        }
        other => other,
    }
}

/// The `(group, version)` of an object's `apiVersion` (`v1` → `("", "v1")`).
pub(crate) fn group_version(object: &Value) -> (&str, &str) {
    let api_version = object
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    match api_version.split_once('/') {
        Some((g, v)) => (g, v),
        None => ("", api_version),
    }
}

/// An object's `kind` ("" when missing).
pub(crate) fn kind(object: &Value) -> &str {
    object.get("kind").and_then(Value::as_str).unwrap_or("")
}

/// An object's `metadata.<field>` string ("" when missing).
pub(crate) fn meta<'a>(object: &'a Value, field: &str) -> &'a str {
    object
        .get("metadata")
        .and_then(|m| m.get(field))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// The keys of `object` not in `known` (for warnings about misspelt fields).
pub(crate) fn unknown_fields(object: &Value, known: &[&str]) -> Vec<String> {
    let Some(map) = object.as_object() else {
        return Vec::new();
    };
    map.keys()
        .filter(|k| {
            !["apiVersion", "kind", "metadata"].contains(&k.as_str())
                && !known.contains(&k.as_str())
        })
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_skip_empty_ones_and_integral_floats_become_integers() {
        let docs = load_documents("---\n---\na: 1.0\nb: 2.5\n---\nc: [1]\n").unwrap();
        assert_eq!(docs.len(), 2);
        assert!(docs[0]["a"].is_i64());
        assert!(docs[0]["b"].is_f64());
    }

    #[test]
    fn a_scalar_document_is_an_error() {
        assert!(load_documents("just text").is_err());
    }
}
