//! The embedded SQL engine that runs ReportQueries: SQLite, in memory, through `rusqlite`.
//!
//! Why SQLite: Metering's queries are plain aggregate SQL (filters, `GROUP BY`, `sum`/`avg`,
//! joins, `WITH`), which SQLite runs as it is; it is compiled into the binary (`bundled`), needs
//! no server and no system library, and builds in well under a minute on two cores, where the
//! columnar engines (DataFusion, Polars) take many minutes and hundreds of crates. The scale is
//! small too: a month of per-minute samples for a thousand pods is tens of millions of rows at
//! most per report, and a report reads one period.
//!
//! The tables: each data source of samples is a table
//! `(amount REAL, "timestamp" INTEGER, timeprecision REAL, labels TEXT, dt TEXT)` — timestamps
//! as nanoseconds since the Unix epoch (exact, and ordered as integers), labels as a JSON object
//! (`labels ->> '$.pod'`), `timeprecision` the step in seconds as Metering had it. A query view
//! is a SQL view. An earlier report a roll-up reads is a table of its columns (`report/NAME`).
//! Each evaluation builds a fresh in-memory database.

use rusqlite::Connection;
use rusqlite::types::Value as SqlValue;

use crate::query::{ColumnType, quote_ident};
use crate::report::{Table, Value};
use crate::sample::Sample;

/// The table holding Report `name`'s results in a roll-up's database (apart from the data
/// sources' names).
pub(crate) fn report_table(name: &str) -> String {
    format!("report/{name}")
}

/// A SQL statement SQLite refused or failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what}: {message}")]
pub struct EngineError {
    /// What was being done (`running ReportQuery "pod-cpu-request"`).
    pub what: String,
    /// SQLite's message (`no such column: podd`).
    pub message: String,
}

/// One in-memory database.
pub(crate) struct Engine {
    conn: Connection,
}

/// A result set: column names and rows of SQLite values.
pub(crate) struct ResultSet {
    pub(crate) columns: Vec<String>,
    pub(crate) rows: Vec<Vec<SqlValue>>,
}

impl Engine {
    pub(crate) fn new() -> Result<Self, EngineError> {
        let conn = Connection::open_in_memory().map_err(|e| EngineError {
            what: "opening the in-memory database".into(),
            message: sqlite_message(&e),
        })?;
        Ok(Engine { conn })
    }

    /// Creates the table `name` holding `samples`.
    pub(crate) fn load_samples(
        &mut self,
        name: &str,
        samples: &[Sample],
    ) -> Result<(), EngineError> {
        let fail = |e: rusqlite::Error| EngineError {
            what: format!("loading data source {name:?}"),
            message: sqlite_message(&e),
        };
        let table = quote_ident(name);
        let tx = self.conn.transaction().map_err(fail)?;
        tx.execute_batch(&format!(
            "CREATE TABLE {table} (amount REAL NOT NULL, \"timestamp\" INTEGER NOT NULL, \
             timeprecision REAL NOT NULL, labels TEXT NOT NULL, dt TEXT NOT NULL)"
        ))
        .map_err(fail)?;
        {
            let mut insert = tx
                .prepare(&format!("INSERT INTO {table} VALUES (?1, ?2, ?3, ?4, ?5)"))
                .map_err(fail)?;
            for s in samples {
                let labels = serde_json::to_string(&s.labels).unwrap_or_else(|_| "{}".into());
                insert
                    .execute(rusqlite::params![
                        s.amount,
                        timestamp_nanos(s.timestamp),
                        s.step_seconds(),
                        labels,
                        s.dt,
                    ])
                    .map_err(fail)?;
            }
        }
        tx.commit().map_err(fail)
    }

    /// Creates the table `name` holding an earlier report's rows (a roll-up's input): one
    /// column per report column, cells as the engine stores them (timestamps as integer
    /// nanoseconds, maps as JSON objects).
    pub(crate) fn load_table(&mut self, name: &str, table: &Table) -> Result<(), EngineError> {
        let fail = |e: rusqlite::Error| EngineError {
            what: format!("loading the results of Report {name:?}"),
            message: sqlite_message(&e),
        };
        let columns: Vec<String> = table
            .columns
            .iter()
            .map(|c| {
                let ty = match c.ty {
                    ColumnType::Varchar | ColumnType::Map => "TEXT",
                    ColumnType::Double => "REAL",
                    ColumnType::Bigint | ColumnType::Timestamp => "INTEGER",
                };
                format!("{} {ty}", quote_ident(&c.name))
            })
            .collect();
        let table_name = quote_ident(&report_table(name));
        let tx = self.conn.transaction().map_err(fail)?;
        tx.execute_batch(&format!(
            "CREATE TABLE {table_name} ({})",
            columns.join(", ")
        ))
        .map_err(fail)?;
        {
            let marks = vec!["?"; table.columns.len()].join(", ");
            let mut insert = tx
                .prepare(&format!("INSERT INTO {table_name} VALUES ({marks})"))
                .map_err(fail)?;
            for row in &table.rows {
                let cells = row.iter().map(|cell| match cell {
                    Value::Null => SqlValue::Null,
                    Value::Text(s) => SqlValue::Text(s.clone()),
                    Value::Double(f) => SqlValue::Real(*f),
                    Value::Bigint(i) => SqlValue::Integer(*i),
                    Value::Timestamp(t) => SqlValue::Integer(timestamp_nanos(*t)),
                    Value::Map(m) => {
                        SqlValue::Text(serde_json::to_string(m).unwrap_or_else(|_| "{}".into()))
                    }
                });
                insert
                    .execute(rusqlite::params_from_iter(cells))
                    .map_err(fail)?;
            }
        }
        tx.commit().map_err(fail)
    }

    /// Creates the view `name` as `sql`.
    pub(crate) fn create_view(&self, name: &str, sql: &str) -> Result<(), EngineError> {
        self.conn
            .execute_batch(&format!("CREATE VIEW {} AS {sql}", quote_ident(name)))
            .map_err(|e| EngineError {
                what: format!("creating the view {name:?}"),
                message: sqlite_message(&e),
            })
    }

    /// Runs one SELECT; `what` names it in errors.
    pub(crate) fn select(&self, what: &str, sql: &str) -> Result<ResultSet, EngineError> {
        let fail = |e: rusqlite::Error| EngineError {
            what: what.to_owned(),
            message: sqlite_message(&e),
        };
        let mut stmt = self.conn.prepare(sql).map_err(fail)?;
        let columns: Vec<String> = stmt.column_names().into_iter().map(String::from).collect();
        let width = columns.len();
        let rows = stmt
            .query_map([], |row| {
                (0..width)
                    .map(|i| row.get::<_, SqlValue>(i))
                    .collect::<Result<Vec<_>, _>>()
            })
            .map_err(fail)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(fail)?;
        Ok(ResultSet { columns, rows })
    }
}

/// SQLite's message alone (rusqlite's text of a refused statement repeats the whole SQL).
fn sqlite_message(e: &rusqlite::Error) -> String {
    match e {
        rusqlite::Error::SqlInputError { msg, .. } => msg.clone(),
        other => other.to_string(),
    }
}

/// An instant as the engine stores it: nanoseconds since the Unix epoch (saturating outside
/// 1677–2262, which no sample reaches).
pub(crate) fn timestamp_nanos(ts: jiff::Timestamp) -> i64 {
    i64::try_from(ts.as_nanosecond()).unwrap_or(if ts.as_nanosecond() < 0 {
        i64::MIN
    } else {
        i64::MAX
    })
}
