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
    let missing = missing_dependencies(chart);
    if !missing.is_empty() {
        return Err(PrepareError::MissingDependencies(missing));
    }
    let mut warn = Warnings::default();
    process_dependencies(chart, user_values, &mut warn).map_err(PrepareError::Dependencies)?;
    let values = coalesce_values(chart, user_values, &mut warn)?;
    validate_against_schema(chart, &values).map_err(PrepareError::Schema)?;
    Ok((Value::Map(values), warn.0))
}
