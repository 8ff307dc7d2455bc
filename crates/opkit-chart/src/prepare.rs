//! The values a chart's templates see, computed the way `helm install`/`helm template` do:
//! Helm's `CheckDependencies`, then `ProcessDependencies` (conditions, tags, aliases, import
//! values), `CoalesceValues` with the user's values, and `values.schema.json` validation.

use opkit_template::Value;

use crate::chart::Chart;
use crate::dependencies::{missing_dependencies, process_dependencies};
use crate::schema::validate_against_schema;
use crate::values::{ValuesError, Warnings, coalesce_values};

/// Why a chart's values could not be prepared; the texts are Helm's.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PrepareError {
    /// A dependency in `Chart.yaml` is not under `charts/`.
    #[error(
        "an error occurred while checking for chart dependencies. You may need to run `helm dependency build` to fetch missing dependencies: found in Chart.yaml, but missing in charts/ directory: {}",
        .0.join(", ")
    )]
    MissingDependencies(Vec<String>),
    /// Dependency processing failed (a subchart's section of the values is not a map).
    #[error("chart dependencies processing failed: {0}")]
    Dependencies(ValuesError),
    /// The values could not be combined.
    #[error(transparent)]
    Values(#[from] ValuesError),
    /// A `values.schema.json` refused the values (the report lists each chart).
    #[error(
        "values don't meet the specifications of the schema(s) in the following chart(s):\n{0}"
    )]
    Schema(String),
}

/// The `.Values` of `chart` for `user_values` (e.g. from [`crate::ValueOptions::merge_values`]):
/// processes the dependencies (disabled subcharts leave `chart.dependencies`, aliases rename,
/// import values land in the parent's defaults), coalesces the defaults of the chart and its
/// subcharts (each under its name) beneath the user's values, and validates every
/// `values.schema.json`.
pub fn prepare(chart: &mut Chart, user_values: &Value) -> Result<Value, PrepareError> {
    prepare_with_warnings(chart, user_values).map(|(v, _)| v)
}

/// [`prepare`], also returning the warnings Helm logs on the way (type mismatches between
/// defaults and user values, non-bool conditions, missing import tables).
pub fn prepare_with_warnings(
    chart: &mut Chart,
    user_values: &Value,
) -> Result<(Value, Vec<String>), PrepareError> {
    let (values, warnings) = prepare_unvalidated(chart, user_values)?;
    validate_values(chart, &values)?;
    Ok((values, warnings))
}

/// [`prepare_with_warnings`] up to the schema check, which [`validate_values`] does.
pub(crate) fn prepare_unvalidated(
    chart: &mut Chart,
    user_values: &Value,
) -> Result<(Value, Vec<String>), PrepareError> {
    let missing = missing_dependencies(chart);
    if !missing.is_empty() {
        return Err(PrepareError::MissingDependencies(missing));
    }
    let mut warn = Warnings::default();
    process_dependencies(chart, user_values, &mut warn).map_err(PrepareError::Dependencies)?;
    let values = coalesce_values(chart, user_values, &mut warn)?;
    Ok((Value::Map(values), warn.0))
}

/// The last step of [`prepare`]: every `values.schema.json` against its part of `values`.
pub(crate) fn validate_values(chart: &Chart, values: &Value) -> Result<(), PrepareError> {
    match values {
        Value::Map(d) => validate_against_schema(chart, d).map_err(PrepareError::Schema),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chart::{Dependency, Metadata};
    use proptest::prelude::*;

    fn chart(
        name: &str,
        values: serde_json::Value,
        deps: Vec<Chart>,
        reqs: Vec<Dependency>,
    ) -> Chart {
        Chart {
            metadata: Metadata {
                api_version: "v2".into(),
                name: name.into(),
                version: "1.0.0".into(),
                dependencies: reqs,
                ..Metadata::default()
            },
            templates: vec![],
            values: Value::from_json(&values),
            schema: None,
            files: vec![],
            dependencies: deps,
            lock: None,
        }
    }

    /// A parent with a conditional, a tagged, an aliased and an importing subchart.
    fn parent() -> Chart {
        let sub = chart(
            "sub",
            serde_json::json!({"enabled": true, "global": {"g": {"x": 1}}, "exports": {"e": {"k": 1}}, "l": [1]}),
            vec![],
            vec![],
        );
        let dep = |f: fn(&mut Dependency)| {
            let mut d = Dependency {
                name: "sub".into(),
                version: "1.x".into(),
                ..Dependency::default()
            };
            f(&mut d);
            d
        };
        chart(
            "top",
            serde_json::json!({"global": {"g": {"y": 2}, "s": "v"}, "sub": {"enabled": true}, "tags": {"t": true}}),
            vec![sub],
            vec![
                dep(|d| d.condition = "sub.enabled,global.on".into()),
                dep(|d| {
                    d.alias = "other".into();
                    d.tags = vec!["t".into()];
                    d.import_values = vec![
                        serde_json::json!("e"),
                        serde_json::json!({"child": "l", "parent": "x.y"}),
                    ];
                }),
            ],
        )
    }

    fn values() -> impl Strategy<Value = serde_json::Value> {
        let leaf = prop_oneof![
            Just(serde_json::Value::Null),
            any::<bool>().prop_map(serde_json::Value::Bool),
            (-3i64..3).prop_map(serde_json::Value::from),
            "[a-c]{0,2}".prop_map(serde_json::Value::String),
        ];
        leaf.prop_recursive(4, 32, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..3).prop_map(serde_json::Value::Array),
                proptest::collection::btree_map(
                    prop_oneof![
                        Just("global".to_string()),
                        Just("sub".to_string()),
                        Just("other".to_string()),
                        Just("tags".to_string()),
                        Just("enabled".to_string()),
                        Just("g".to_string()),
                        Just("t".to_string()),
                    ],
                    inner,
                    0..4,
                )
                .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn any_user_values_give_values_or_an_error_never_a_panic(user in values()) {
            let mut c = parent();
            match prepare(&mut c, &Value::from_json(&user)) {
                Ok(v) => prop_assert!(matches!(v, Value::Map(_))),
                Err(e) => prop_assert!(!e.to_string().is_empty()),
            }
        }
    }
}
