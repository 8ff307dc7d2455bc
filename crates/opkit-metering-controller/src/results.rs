//! Report results, one ConfigMap per period in the report's namespace, owned by the Report (so
//! deleting a report deletes its results) and labelled with its name. Results live in the API,
//! not in the controller: they survive a controller restart, and the report API (over HTTP or
//! `opkit report get`) reads them from any process.
//!
//! A ConfigMap holds the period (annotations) and the typed table (`table.json`: the query's
//! columns and the rows, each cell as JSON read back by its column's type), so every format is
//! rendered from the same data. The report API serves the rows of all periods, oldest first, as
//! Metering's report table accumulated them.

use std::collections::BTreeMap;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams};
use kube::{Resource, ResourceExt};
use opkit_metering::{Column, ColumnType, Format, Period, Table, Value, render};
use serde_json::{Value as Json, json};

use crate::api::Report;

/// The label naming a result's report.
pub const REPORT_LABEL: &str = "metering.opkit.dev/report";
const START: &str = "metering.opkit.dev/period-start";
const END: &str = "metering.opkit.dev/period-end";
const TABLE: &str = "table.json";

/// Why results cannot be stored or read.
#[derive(Debug, thiserror::Error)]
pub enum ResultsError {
    /// The API refused.
    #[error("{what}: {source}")]
    Api {
        /// What was being done.
        what: String,
        /// Why.
        source: kube::Error,
    },
    /// A stored result does not read.
    #[error("the result ConfigMap {name} is damaged: {message}")]
    Damaged {
        /// The ConfigMap.
        name: String,
        /// What is wrong.
        message: String,
    },
    /// No report of that name.
    #[error("no Report {name:?} in namespace {namespace:?}")]
    NoReport {
        /// The namespace.
        namespace: String,
        /// The name.
        name: String,
    },
    /// The report has no result yet.
    #[error("Report {namespace}/{name} has no results yet ({state})")]
    NoResults {
        /// The namespace.
        namespace: String,
        /// The name.
        name: String,
        /// What its conditions say.
        state: String,
    },
}

/// The name of the result of `report` for the period starting at `start`.
fn result_name(report: &str, start: Timestamp) -> String {
    let stamp = start.strftime("%Y%m%dt%H%M%Sz").to_string();
    let keep = 253 - stamp.len() - 1;
    format!("{}-{stamp}", &report[..report.len().min(keep)])
}

/// Stores `table`, the result of `report` for `period` (replacing one stored before).
pub async fn store(
    client: &kube::Client,
    report: &Report,
    period: Period,
    table: &Table,
    field_manager: &str,
) -> Result<(), ResultsError> {
    let namespace = report.namespace().unwrap_or_default();
    let name = result_name(&report.name_any(), period.start);
    let mut owner = report
        .controller_owner_ref(&())
        .ok_or(ResultsError::Damaged {
            name: name.clone(),
            message: "the report has no uid to own its results".into(),
        })?;
    owner.controller = Some(false);
    let rows: Vec<Json> = table
        .rows
        .iter()
        .map(|row| row.iter().map(cell_json).collect())
        .collect();
    let cm = ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            namespace: Some(namespace.clone()),
            labels: Some([(REPORT_LABEL.to_owned(), report.name_any())].into()),
            annotations: Some(
                [
                    (START.to_owned(), period.start.to_string()),
                    (END.to_owned(), period.end.to_string()),
                ]
                .into(),
            ),
            owner_references: Some(vec![owner]),
            ..ObjectMeta::default()
        },
        data: Some(
            [(
                TABLE.to_owned(),
                json!({"columns": table.columns, "rows": rows}).to_string(),
            )]
            .into(),
        ),
        ..ConfigMap::default()
    };
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), &namespace);
    api.patch(
        &name,
        &PatchParams::apply(field_manager).force(),
        &Patch::Apply(&cm),
    )
    .await
    .map_err(|source| ResultsError::Api {
        what: format!("storing result {namespace}/{name}"),
        source,
    })?;
    Ok(())
}

/// The stored results of report `name`, oldest period first.
pub async fn read(
    client: &kube::Client,
    namespace: &str,
    name: &str,
) -> Result<Vec<(Period, Table)>, ResultsError> {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    let list = api
        .list(&ListParams::default().labels(&format!("{REPORT_LABEL}={name}")))
        .await
        .map_err(|source| ResultsError::Api {
            what: format!("listing the results of Report {namespace}/{name}"),
            source,
        })?;
    let mut out = list
        .items
        .iter()
        .map(parse)
        .collect::<Result<Vec<_>, _>>()?;
    out.sort_by_key(|(p, _)| p.start);
    Ok(out)
}

/// Deletes the results of `report` whose period ended before `cutoff`; how many.
pub async fn expire(
    client: &kube::Client,
    report: &Report,
    cutoff: Timestamp,
) -> Result<usize, ResultsError> {
    let namespace = report.namespace().unwrap_or_default();
    let name = report.name_any();
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), &namespace);
    let mut deleted = 0;
    for (period, cm_name) in read(client, &namespace, &name)
        .await?
        .into_iter()
        .map(|(p, _)| (p, result_name(&name, p.start)))
    {
        if period.end < cutoff {
            api.delete(&cm_name, &DeleteParams::default())
                .await
                .map_err(|source| ResultsError::Api {
                    what: format!("deleting expired result {namespace}/{cm_name}"),
                    source,
                })?;
            deleted += 1;
        }
    }
    Ok(deleted)
}

/// Report `name` in `format`, as Metering's `/api/v1/reports/get` served it: the rows of every
/// stored period in one table.
pub async fn report_text(
    client: &kube::Client,
    namespace: &str,
    name: &str,
    format: Format,
) -> Result<String, ResultsError> {
    let reports: Api<Report> = Api::namespaced(client.clone(), namespace);
    let report = reports
        .get_opt(name)
        .await
        .map_err(|source| ResultsError::Api {
            what: format!("reading Report {namespace}/{name}"),
            source,
        })?
        .ok_or_else(|| ResultsError::NoReport {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
        })?;
    let results = read(client, namespace, name).await?;
    let Some((_, first)) = results.first() else {
        let conditions = report.status.map(|s| s.conditions).unwrap_or_default();
        let state = conditions
            .iter()
            .map(|c| format!("{}={} {}: {}", c.type_, c.status, c.reason, c.message))
            .collect::<Vec<_>>()
            .join("; ");
        return Err(ResultsError::NoResults {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            state: if state.is_empty() {
                "not reconciled yet".into()
            } else {
                state
            },
        });
    };
    let mut all = Table {
        columns: first.columns.clone(),
        rows: Vec::new(),
    };
    for (_, table) in results {
        all.rows.extend(table.rows);
    }
    Ok(render(&all, format))
}

fn parse(cm: &ConfigMap) -> Result<(Period, Table), ResultsError> {
    let name = cm.name_any();
    let damaged = |message: String| ResultsError::Damaged {
        name: name.clone(),
        message,
    };
    let annotations = cm.annotations();
    let instant = |key: &str| {
        annotations
            .get(key)
            .and_then(|t| t.parse::<Timestamp>().ok())
            .ok_or_else(|| damaged(format!("annotation {key} is missing or not an instant")))
    };
    let period = Period {
        start: instant(START)?,
        end: instant(END)?,
    };
    let text = cm
        .data
        .as_ref()
        .and_then(|d| d.get(TABLE))
        .ok_or_else(|| damaged(format!("no {TABLE}")))?;
    #[derive(serde::Deserialize)]
    struct Stored {
        columns: Vec<Column>,
        rows: Vec<Vec<Json>>,
    }
    let stored: Stored = serde_json::from_str(text).map_err(|e| damaged(e.to_string()))?;
    let rows = stored
        .rows
        .iter()
        .map(|row| {
            if row.len() != stored.columns.len() {
                return Err(damaged(format!(
                    "a row of {} cells for {} columns",
                    row.len(),
                    stored.columns.len()
                )));
            }
            row.iter()
                .zip(&stored.columns)
                .map(|(cell, column)| {
                    cell_value(cell, column.ty).ok_or_else(|| {
                        damaged(format!("column {:?}: cannot read {cell}", column.name))
                    })
                })
                .collect()
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok((
        period,
        Table {
            columns: stored.columns,
            rows,
        },
    ))
}

fn cell_json(value: &Value) -> Json {
    match value {
        Value::Null => Json::Null,
        Value::Text(s) => s.as_str().into(),
        Value::Double(f) => (*f).into(),
        Value::Bigint(i) => (*i).into(),
        Value::Timestamp(t) => t.to_string().into(),
        Value::Map(m) => json!(m),
    }
}

fn cell_value(cell: &Json, ty: ColumnType) -> Option<Value> {
    Some(match (cell, ty) {
        (Json::Null, _) => Value::Null,
        (Json::String(s), ColumnType::Varchar) => Value::Text(s.clone()),
        (Json::Number(n), ColumnType::Double) => Value::Double(n.as_f64()?),
        (Json::Number(n), ColumnType::Bigint) => Value::Bigint(n.as_i64()?),
        (Json::String(s), ColumnType::Timestamp) => Value::Timestamp(s.parse().ok()?),
        (Json::Object(_), ColumnType::Map) => {
            Value::Map(serde_json::from_value::<BTreeMap<String, String>>(cell.clone()).ok()?)
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_read_back_by_their_column_type() {
        let at: Timestamp = "2030-01-01T00:00:00Z".parse().unwrap();
        for (value, ty) in [
            (Value::Double(70.5), ColumnType::Double),
            (Value::Bigint(3), ColumnType::Bigint),
            (Value::Timestamp(at), ColumnType::Timestamp),
            (Value::Text("a".into()), ColumnType::Varchar),
            (
                Value::Map([("k".into(), "v".into())].into()),
                ColumnType::Map,
            ),
            (Value::Null, ColumnType::Double),
        ] {
            assert_eq!(cell_value(&cell_json(&value), ty), Some(value));
        }
        assert_eq!(cell_value(&json!("x"), ColumnType::Double), None);
        assert_eq!(result_name("daily", at), "daily-20300101t000000z");
    }
}
