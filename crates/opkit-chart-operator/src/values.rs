//! The values a custom resource deploys its chart with: its `spec`, with the operator's
//! `overrideValues` on top.
//!
//! operator-sdk's rule (`release.NewManager`): the overrides are parsed as Helm's
//! `--set-string` (every value a string), then merged over the spec map by map, the override
//! winning wherever both set a key (`mergeMaps`). The spec is read the way Kubernetes'
//! unstructured decoding reads it, so integers stay integers (`int64`) and the chart's
//! templates see the same types as under operator-sdk. The chart's own `values.yaml` is
//! coalesced under these later, when the release renders.

use std::collections::BTreeMap;

use opkit_chart::{ValueOptions, merge_maps};
use opkit_template::Value;

/// Why a custom resource's values cannot be built.
#[derive(Debug, thiserror::Error)]
pub enum ValuesError {
    /// `spec` is present but not an object.
    #[error("failed to get spec: expected an object, found {0}")]
    SpecNotAnObject(&'static str),
    /// An override does not parse as a `--set-string` path.
    #[error("failed to parse override values: {0}")]
    Overrides(String),
}

/// The values for a custom resource whose `spec` is `spec` (`None`: no spec, no values of
/// its own), with `overrides` (`path` → value, `--set-string` style) on top.
pub fn values_for(
    spec: Option<&serde_json::Value>,
    overrides: &BTreeMap<String, String>,
) -> Result<Value, ValuesError> {
    let spec = match spec {
        None | Some(serde_json::Value::Null) => Value::map(BTreeMap::new()),
        Some(v @ serde_json::Value::Object(_)) => from_unstructured(v),
        Some(other) => return Err(ValuesError::SpecNotAnObject(json_type(other))),
    };
    let overrides = ValueOptions {
        string_values: overrides.iter().map(|(k, v)| format!("{k}={v}")).collect(),
        ..Default::default()
    }
    .merge_values()
    .map_err(|e| ValuesError::Overrides(e.to_string()))?;
    Ok(merge_maps(&spec, &overrides))
}

fn json_type(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "a list",
        serde_json::Value::Object(_) => "an object",
    }
}

/// JSON as Kubernetes' unstructured decoding gives it to Go: integers as `int64`, other
/// numbers as `float64`.
fn from_unstructured(v: &serde_json::Value) -> Value {
    match v {
        serde_json::Value::Number(n) => match n.as_i64() {
            Some(i) => Value::Int64(i),
            None => Value::Float(n.as_f64().unwrap_or(0.0)),
        },
        serde_json::Value::Array(items) => {
            Value::list(items.iter().map(from_unstructured).collect())
        }
        serde_json::Value::Object(fields) => Value::map(
            fields
                .iter()
                .map(|(k, v)| (k.clone(), from_unstructured(v)))
                .collect(),
        ),
        other => Value::from_json(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn overrides(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn overrides_win_over_the_spec_and_maps_merge() {
        let spec = serde_json::json!({
            "replicaCount": 2,
            "ratio": 0.5,
            "image": {"repository": "nginx", "tag": "1.0", "pullPolicy": "Always"},
            "ports": [80, 443],
        });
        let values = values_for(
            Some(&spec),
            &overrides(&[("image.repository", "quay.io/nginx"), ("ports[0]", "8080")]),
        )
        .expect("values");
        assert_eq!(
            values.to_string(),
            "map[image:map[pullPolicy:Always repository:quay.io/nginx tag:1.0] \
             ports:[8080] ratio:0.5 replicaCount:2]"
        );
        let Value::Map(top) = &values else {
            panic!("a map")
        };
        assert!(
            matches!(top.get("replicaCount"), Some(Value::Int64(2))),
            "integers stay int64"
        );
    }

    #[test]
    fn override_values_are_strings_and_a_missing_spec_is_empty() {
        let values =
            values_for(None, &overrides(&[("replicaCount", "3"), ("on", "true")])).expect("values");
        let Value::Map(top) = &values else {
            panic!("a map")
        };
        assert_eq!(
            top.get("replicaCount")
                .and_then(|v| v.as_str().map(str::to_owned)),
            Some("3".into())
        );
        assert_eq!(
            top.get("on").and_then(|v| v.as_str().map(str::to_owned)),
            Some("true".into())
        );
    }

    #[test]
    fn a_spec_that_is_not_an_object_is_refused() {
        let err = values_for(Some(&serde_json::json!([1])), &BTreeMap::new())
            .expect_err("a list")
            .to_string();
        assert_eq!(err, "failed to get spec: expected an object, found a list");
        let err = values_for(None, &overrides(&[("a[x]", "1")]))
            .expect_err("bad path")
            .to_string();
        assert!(
            err.starts_with("failed to parse override values: failed parsing --set-string data"),
            "{err}"
        );
    }
}
