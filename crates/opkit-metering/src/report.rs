//! Evaluating a ReportQuery over data-source samples for one reporting period `[start, end)`:
//! the result as a typed table.
//!
//! Each evaluation builds a fresh in-memory database: the sample tables the query reads
//! (directly or through query views), the views, then the query itself with its inputs bound.
//! The result is checked against the query's declared columns: a declared column the SQL does
//! not return, or a cell of the wrong type, is an error naming the query, the column and the
//! row, never a silently empty or mistyped report.

use std::collections::{BTreeMap, BTreeSet};

use jiff::Timestamp;
use rusqlite::types::Value as SqlValue;

use crate::engine::{Engine, EngineError, report_table, timestamp_nanos};
use crate::query::{
    Catalog, Column, ColumnType, DataSourceKind, Input, InputType, QueryError, ReportQuery,
    quote_ident, render_sql,
};
use crate::sample::Sample;

/// A reporting period: from `start` (included) to `end` (excluded).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Period {
    /// The first instant counted (`ReportingStart`).
    pub start: Timestamp,
    /// The first instant not counted (`ReportingEnd`).
    pub end: Timestamp,
}

/// One cell of a report.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// No value (SQL `NULL`).
    Null,
    /// A `varchar`.
    Text(String),
    /// A `double`.
    Double(f64),
    /// A `bigint`.
    Bigint(i64),
    /// A `timestamp`.
    Timestamp(Timestamp),
    /// A `map<varchar, varchar>`.
    Map(BTreeMap<String, String>),
}

/// A report's result: the query's columns (hidden ones included) and its rows.
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    /// The columns, in the query's order.
    pub columns: Vec<Column>,
    /// The rows; each has one value per column.
    pub rows: Vec<Vec<Value>>,
}

impl Table {
    /// The index of the column named `name`.
    pub fn column_index(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c.name == name)
    }
}

/// A report that cannot be produced.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// The query or one of its inputs is wrong.
    #[error(transparent)]
    Query(#[from] QueryError),
    /// SQLite refused or failed a statement.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// The period ends before it starts.
    #[error("the reporting period is empty: end {end} is not after start {start}")]
    EmptyPeriod {
        /// Its start.
        start: Timestamp,
        /// Its end.
        end: Timestamp,
    },
    /// A data source of samples the query reads was not given.
    #[error(
        "ReportQuery {query:?} reads data source {data_source:?}, but no input is named so (inputs given: {})",
        if given.is_empty() { "none".to_owned() } else { given.join(", ") }
    )]
    MissingInput {
        /// The query that reads it.
        query: String,
        /// The data source.
        data_source: String,
        /// The data sources given.
        given: Vec<String>,
    },
    /// A Report input whose report's results were not given.
    #[error(
        "ReportQuery {query:?}: input {input:?} reads Report {report:?}, whose results were not given"
    )]
    MissingReport {
        /// The query.
        query: String,
        /// The input.
        input: String,
        /// The Report.
        report: String,
    },
    /// A time input other than `ReportingStart` / `ReportingEnd`.
    #[error(
        "ReportQuery {query:?}: no value for time input {input:?} (only ReportingStart and ReportingEnd are known)"
    )]
    UnboundTime {
        /// The query.
        query: String,
        /// The input.
        input: String,
    },
    /// The SQL does not return a declared column.
    #[error("ReportQuery {query:?} declares column {column:?}, which its SQL does not return (it returns: {})", returned.join(", "))]
    MissingColumn {
        /// The query.
        query: String,
        /// The declared column.
        column: String,
        /// The columns the SQL returns.
        returned: Vec<String>,
    },
    /// A cell does not hold its column's type.
    #[error(
        "ReportQuery {query:?}: row {row}, column {column:?}: expected {expected}, found {found}"
    )]
    CellType {
        /// The query.
        query: String,
        /// The row (from 0).
        row: usize,
        /// The column.
        column: String,
        /// The declared type.
        expected: &'static str,
        /// What the engine returned.
        found: String,
    },
}

/// Runs the query `name` of `catalog` over `samples` (keyed by data-source name) for `period`.
pub fn run(
    catalog: &Catalog,
    name: &str,
    samples: &BTreeMap<String, Vec<Sample>>,
    period: Period,
) -> Result<Table, ReportError> {
    run_with(catalog, name, samples, &BTreeMap::new(), period)
}

/// [`run`] for a query that may read earlier Reports (a roll-up): `reports` holds their
/// results by Report name (every period stored so far; the query's SQL picks the periods it
/// sums, as Metering's roll-ups did with `period_start >= {{ReportingStart}}`).
pub fn run_with(
    catalog: &Catalog,
    name: &str,
    samples: &BTreeMap<String, Vec<Sample>>,
    reports: &BTreeMap<String, Table>,
    period: Period,
) -> Result<Table, ReportError> {
    if period.end <= period.start {
        return Err(ReportError::EmptyPeriod {
            start: period.start,
            end: period.end,
        });
    }
    let query = catalog.query(name)?;
    let mut eval = Evaluation {
        catalog,
        samples,
        reports,
        period,
        engine: Engine::new()?,
        created: BTreeSet::new(),
        visiting: Vec::new(),
    };
    let sql = eval.render(query)?;
    let result = eval
        .engine
        .select(&format!("running ReportQuery {name:?}"), &sql)?;
    let indexes = query
        .columns
        .iter()
        .map(|c| {
            result
                .columns
                .iter()
                .position(|r| *r == c.name)
                .ok_or_else(|| ReportError::MissingColumn {
                    query: name.to_owned(),
                    column: c.name.clone(),
                    returned: result.columns.clone(),
                })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let rows = result
        .rows
        .into_iter()
        .enumerate()
        .map(|(row, cells)| {
            query
                .columns
                .iter()
                .zip(&indexes)
                .map(|(column, &i)| {
                    typed(&cells[i], column.ty).ok_or_else(|| ReportError::CellType {
                        query: name.to_owned(),
                        row,
                        column: column.name.clone(),
                        expected: type_name(column.ty),
                        found: describe(&cells[i]),
                    })
                })
                .collect::<Result<Vec<_>, _>>()
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Table {
        columns: query.columns.clone(),
        rows,
    })
}

struct Evaluation<'a> {
    catalog: &'a Catalog,
    samples: &'a BTreeMap<String, Vec<Sample>>,
    reports: &'a BTreeMap<String, Table>,
    period: Period,
    engine: Engine,
    /// Data sources already in the database.
    created: BTreeSet<String>,
    /// Query views being created (to refuse cycles).
    visiting: Vec<String>,
}

impl Evaluation<'_> {
    /// The query's SQL with its inputs bound, creating the tables and views it reads.
    fn render(&mut self, query: &ReportQuery) -> Result<String, ReportError> {
        let mut bound = BTreeMap::new();
        for input in &query.inputs {
            let value = match input.ty {
                InputType::Time => match input.name.as_str() {
                    "ReportingStart" => timestamp_nanos(self.period.start).to_string(),
                    "ReportingEnd" => timestamp_nanos(self.period.end).to_string(),
                    _ => {
                        return Err(ReportError::UnboundTime {
                            query: query.name.clone(),
                            input: input.name.clone(),
                        });
                    }
                },
                InputType::ReportDataSource => quote_ident(&self.prepare(query, input)?),
                InputType::Report => quote_ident(&self.prepare_report(query, input)?),
            };
            bound.insert(input.name.as_str(), value);
        }
        Ok(render_sql(query, |name| bound.get(name).cloned())?)
    }

    /// Makes the table of the earlier Report `input` names exist in the database; its name.
    fn prepare_report(
        &mut self,
        query: &ReportQuery,
        input: &Input,
    ) -> Result<String, ReportError> {
        let report = input
            .default
            .clone()
            .ok_or_else(|| QueryError::NoDataSource {
                query: query.name.clone(),
                input: input.name.clone(),
            })?;
        let table_name = report_table(&report);
        if self.created.contains(&table_name) {
            return Ok(table_name);
        }
        let table = self
            .reports
            .get(&report)
            .ok_or_else(|| ReportError::MissingReport {
                query: query.name.clone(),
                input: input.name.clone(),
                report: report.clone(),
            })?;
        self.engine.load_table(&report, table)?;
        self.created.insert(table_name.clone());
        Ok(table_name)
    }

    /// Makes the data source `input` names exist in the database; its name.
    fn prepare(&mut self, query: &ReportQuery, input: &Input) -> Result<String, ReportError> {
        let name = input
            .default
            .clone()
            .ok_or_else(|| QueryError::NoDataSource {
                query: query.name.clone(),
                input: input.name.clone(),
            })?;
        if self.created.contains(&name) {
            return Ok(name);
        }
        let source =
            self.catalog
                .data_sources
                .get(&name)
                .ok_or_else(|| QueryError::UnknownDataSource {
                    query: query.name.clone(),
                    input: input.name.clone(),
                    source_name: name.clone(),
                })?;
        match &source.kind {
            DataSourceKind::Samples => {
                let rows = self
                    .samples
                    .get(&name)
                    .ok_or_else(|| ReportError::MissingInput {
                        query: query.name.clone(),
                        data_source: name.clone(),
                        given: self.samples.keys().cloned().collect(),
                    })?;
                self.engine.load_samples(&name, rows)?;
            }
            DataSourceKind::QueryView { query: view } => {
                if self.visiting.contains(view) {
                    return Err(QueryError::Cycle {
                        query: view.clone(),
                    }
                    .into());
                }
                let view_query = self.catalog.query(view)?;
                self.visiting.push(view.clone());
                let sql = self.render(view_query)?;
                self.visiting.pop();
                self.engine.create_view(&name, &sql)?;
            }
        }
        self.created.insert(name.clone());
        Ok(name)
    }
}

/// The engine's value as a cell of type `ty`, if it is one.
fn typed(value: &SqlValue, ty: ColumnType) -> Option<Value> {
    Some(match (value, ty) {
        (SqlValue::Null, _) => Value::Null,
        (SqlValue::Text(s), ColumnType::Varchar) => Value::Text(s.clone()),
        (SqlValue::Real(f), ColumnType::Double) => Value::Double(*f),
        (SqlValue::Integer(i), ColumnType::Double) => Value::Double(*i as f64),
        (SqlValue::Integer(i), ColumnType::Bigint) => Value::Bigint(*i),
        (SqlValue::Integer(ns), ColumnType::Timestamp) => {
            Value::Timestamp(Timestamp::from_nanosecond(i128::from(*ns)).ok()?)
        }
        (SqlValue::Text(s), ColumnType::Timestamp) => {
            Value::Timestamp(opkit_apimachinery::time::parse_time(s).ok()?)
        }
        (SqlValue::Text(s), ColumnType::Map) => Value::Map(serde_json::from_str(s).ok()?),
        _ => return None,
    })
}

fn type_name(ty: ColumnType) -> &'static str {
    match ty {
        ColumnType::Varchar => "varchar (text)",
        ColumnType::Double => "double (a number)",
        ColumnType::Bigint => "bigint (an integer)",
        ColumnType::Timestamp => {
            "timestamp (integer nanoseconds since the epoch, or RFC 3339 text)"
        }
        ColumnType::Map => "map<varchar, varchar> (a JSON object of strings)",
    }
}

fn describe(value: &SqlValue) -> String {
    match value {
        SqlValue::Null => "NULL".into(),
        SqlValue::Integer(i) => format!("integer {i}"),
        SqlValue::Real(f) => format!("real {f}"),
        SqlValue::Text(s) => format!("text {s:?}"),
        SqlValue::Blob(b) => format!("a blob of {} bytes", b.len()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(t: &str) -> Timestamp {
        t.parse().unwrap()
    }

    /// An hourly report's results: namespace `shop`, 100 core-seconds an hour from 00:00.
    fn hourly(hours: i64) -> Table {
        let columns = vec![
            Column {
                name: "period_start".into(),
                ty: ColumnType::Timestamp,
                unit: None,
                table_hidden: false,
            },
            Column {
                name: "period_end".into(),
                ty: ColumnType::Timestamp,
                unit: None,
                table_hidden: false,
            },
            Column {
                name: "namespace".into(),
                ty: ColumnType::Varchar,
                unit: None,
                table_hidden: false,
            },
            Column {
                name: "cpu".into(),
                ty: ColumnType::Double,
                unit: None,
                table_hidden: false,
            },
        ];
        let rows = (0..hours)
            .map(|h| {
                let start = at("2030-01-01T00:00:00Z") + jiff::SignedDuration::from_hours(h);
                vec![
                    Value::Timestamp(start),
                    Value::Timestamp(start + jiff::SignedDuration::from_hours(1)),
                    Value::Text("shop".into()),
                    Value::Double(100.0),
                ]
            })
            .collect();
        Table { columns, rows }
    }

    fn daily() -> Catalog {
        let mut catalog = Catalog::default();
        let hourly_columns = hourly(0).columns;
        catalog.add_query(ReportQuery {
            name: "daily".into(),
            columns: vec![
                hourly_columns[0].clone(),
                hourly_columns[1].clone(),
                hourly_columns[2].clone(),
                hourly_columns[3].clone(),
                Column {
                    name: "hours".into(),
                    ty: ColumnType::Bigint,
                    unit: None,
                    table_hidden: false,
                },
            ],
            inputs: vec![
                Input {
                    name: "ReportingStart".into(),
                    ty: InputType::Time,
                    default: None,
                },
                Input {
                    name: "ReportingEnd".into(),
                    ty: InputType::Time,
                    default: None,
                },
                Input {
                    name: "HourlyReportName".into(),
                    ty: InputType::Report,
                    default: Some("hourly".into()),
                },
            ],
            sql: "SELECT {{ReportingStart}} AS period_start, {{ReportingEnd}} AS period_end, \
                  namespace, sum(cpu) AS cpu, count(*) AS hours FROM {{HourlyReportName}} \
                  WHERE period_start >= {{ReportingStart}} AND period_end <= {{ReportingEnd}} \
                  GROUP BY namespace"
                .into(),
        });
        catalog
    }

    #[test]
    fn a_roll_up_sums_the_periods_of_an_earlier_report_inside_its_own() {
        let catalog = daily();
        assert_eq!(
            catalog
                .reports_read("daily")
                .unwrap()
                .into_iter()
                .collect::<Vec<_>>(),
            ["hourly"]
        );
        // 30 hours stored; the first day holds 24 of them.
        let reports = BTreeMap::from([("hourly".to_owned(), hourly(30))]);
        let day = Period {
            start: at("2030-01-01T00:00:00Z"),
            end: at("2030-01-02T00:00:00Z"),
        };
        let table = run_with(&catalog, "daily", &BTreeMap::new(), &reports, day).unwrap();
        assert_eq!(
            table.rows,
            [vec![
                Value::Timestamp(day.start),
                Value::Timestamp(day.end),
                Value::Text("shop".into()),
                Value::Double(2400.0),
                Value::Bigint(24),
            ]]
        );
        let err = run(&catalog, "daily", &BTreeMap::new(), day).unwrap_err();
        assert_eq!(
            err.to_string(),
            "ReportQuery \"daily\": input \"HourlyReportName\" reads Report \"hourly\", whose results were not given"
        );
    }
}
