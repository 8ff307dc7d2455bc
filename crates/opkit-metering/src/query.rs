//! The ReportQuery model: typed columns, inputs and a SQL text, and the data sources a query
//! reads — the vocabulary of Operator Metering's `ReportQuery` and `ReportDataSource`.
//!
//! Metering templated its Presto SQL with Go templates (`{| dataSourceTableName … |}`). opkit's
//! SQL names an input with a placeholder, `{{InputName}}`, which [`render_sql`] replaces: a time
//! input by its instant as an integer literal (nanoseconds since the Unix epoch, the engine's
//! timestamp representation), a data-source input by the quoted name of its table or view, a
//! Report input by the quoted name of the table holding that report's results.
//! Nothing else is templated, so a query's SQL stays plain SQL.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

/// A column's SQL type, named as Metering (Presto) named it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ColumnType {
    /// Text.
    #[serde(rename = "varchar")]
    Varchar,
    /// A 64-bit float.
    #[serde(rename = "double")]
    Double,
    /// A 64-bit integer.
    #[serde(rename = "bigint")]
    Bigint,
    /// An instant (stored as nanoseconds since the Unix epoch).
    #[serde(rename = "timestamp")]
    Timestamp,
    /// Labels: a map of text to text (stored as a JSON object).
    #[serde(rename = "map<varchar, varchar>")]
    Map,
}

/// One column of a query's result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Column {
    /// The column's name in the SQL result.
    pub name: String,
    /// Its type.
    #[serde(rename = "type")]
    pub ty: ColumnType,
    /// Its unit (`cpu_core_seconds`, `kubernetes_pod`, `date`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
    /// Left out of reports (csv, tab and json alike, as Metering's v1 API did).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub table_hidden: bool,
}

/// What kind of value an input takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum InputType {
    /// An instant (`ReportingStart`, `ReportingEnd`).
    #[serde(rename = "time")]
    Time,
    /// The name of a data source, whose table the SQL reads.
    ReportDataSource,
    /// The name of an earlier Report, whose results the SQL reads (a roll-up: a daily report
    /// over hourly ones). Metering's `type: Report`.
    Report,
}

/// A named input of a query.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Input {
    /// The name the SQL refers to as `{{name}}`.
    pub name: String,
    /// Its kind.
    #[serde(rename = "type")]
    pub ty: InputType,
    /// The value when a report gives none (a data source's or a Report's name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
}

/// A ReportQuery: SQL over data sources with a declared result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReportQuery {
    /// The query's name (`pod-cpu-request`).
    pub name: String,
    /// The result's columns, in report order.
    pub columns: Vec<Column>,
    /// The inputs the SQL refers to.
    pub inputs: Vec<Input>,
    /// The SQL (SQLite's dialect), with `{{Input}}` placeholders.
    #[serde(rename = "query")]
    pub sql: String,
}

/// Where a data source's rows come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DataSourceKind {
    /// Samples in Metering's row format (Metering's `prometheusMetricsImporter`): a table of
    /// `amount`, `timestamp`, `timeprecision` (seconds), `labels` (JSON) and `dt`.
    Samples,
    /// The result of a query, as a view (Metering's `reportQueryView`).
    QueryView {
        /// The query's name.
        query: String,
    },
}

/// A ReportDataSource: a named table the queries read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DataSource {
    /// Its name (`pod-request-cpu-cores`).
    pub name: String,
    /// Where its rows come from.
    pub kind: DataSourceKind,
}

/// The queries and data sources a report may use.
#[derive(Clone, Debug, Default)]
pub struct Catalog {
    /// Queries by name.
    pub queries: BTreeMap<String, ReportQuery>,
    /// Data sources by name.
    pub data_sources: BTreeMap<String, DataSource>,
}

impl Catalog {
    /// Adds a query (replacing one of the same name).
    pub fn add_query(&mut self, query: ReportQuery) {
        self.queries.insert(query.name.clone(), query);
    }

    /// Adds a data source (replacing one of the same name).
    pub fn add_data_source(&mut self, source: DataSource) {
        self.data_sources.insert(source.name.clone(), source);
    }

    /// The query named `name`, or an error listing the known ones.
    pub fn query(&self, name: &str) -> Result<&ReportQuery, QueryError> {
        self.queries
            .get(name)
            .ok_or_else(|| QueryError::UnknownQuery {
                name: name.to_owned(),
                known: self.queries.keys().cloned().collect(),
            })
    }
}

impl Catalog {
    /// The sample data sources the query `name` reads, directly or through query views: what a
    /// caller must supply (a Prometheus importer imports only these). Names no data source
    /// resolves to are left to [`crate::run`] to report.
    pub fn sample_sources(&self, name: &str) -> Result<BTreeSet<String>, QueryError> {
        let mut out = BTreeSet::new();
        let mut seen = BTreeSet::new();
        let mut todo = vec![name.to_owned()];
        while let Some(query) = todo.pop() {
            if !seen.insert(query.clone()) {
                continue;
            }
            for input in &self.query(&query)?.inputs {
                if input.ty != InputType::ReportDataSource {
                    continue;
                }
                let Some(source) = input
                    .default
                    .as_ref()
                    .and_then(|d| self.data_sources.get(d))
                else {
                    continue;
                };
                match &source.kind {
                    DataSourceKind::Samples => {
                        out.insert(source.name.clone());
                    }
                    DataSourceKind::QueryView { query } => todo.push(query.clone()),
                }
            }
        }
        Ok(out)
    }
}

impl Catalog {
    /// The earlier Reports the query `name` reads (its `Report` inputs' values, directly or
    /// through query views): the results a caller must supply for a roll-up.
    pub fn reports_read(&self, name: &str) -> Result<BTreeSet<String>, QueryError> {
        let mut out = BTreeSet::new();
        let mut seen = BTreeSet::new();
        let mut todo = vec![name.to_owned()];
        while let Some(query) = todo.pop() {
            if !seen.insert(query.clone()) {
                continue;
            }
            for input in &self.query(&query)?.inputs {
                let Some(value) = &input.default else {
                    continue;
                };
                match input.ty {
                    InputType::Report => {
                        out.insert(value.clone());
                    }
                    InputType::ReportDataSource => {
                        if let Some(DataSource {
                            kind: DataSourceKind::QueryView { query },
                            ..
                        }) = self.data_sources.get(value)
                        {
                            todo.push(query.clone());
                        }
                    }
                    InputType::Time => {}
                }
            }
        }
        Ok(out)
    }
}

/// A query that cannot be found or rendered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QueryError {
    /// No query of that name.
    #[error("unknown ReportQuery {name:?}; known queries: {}", known.join(", "))]
    UnknownQuery {
        /// The name asked for.
        name: String,
        /// The known names, sorted.
        known: Vec<String>,
    },
    /// The SQL names a placeholder that is not one of the query's inputs.
    #[error(
        "ReportQuery {query:?}: the SQL refers to {{{{{name}}}}}, which is not one of its inputs"
    )]
    UnknownPlaceholder {
        /// The query.
        query: String,
        /// The placeholder's name.
        name: String,
    },
    /// A `{{` without its `}}`.
    #[error("ReportQuery {query:?}: unclosed placeholder at byte {at} of the SQL")]
    UnclosedPlaceholder {
        /// The query.
        query: String,
        /// Where the `{{` is.
        at: usize,
    },
    /// A data-source or Report input with neither a value nor a default.
    #[error(
        "ReportQuery {query:?}: input {input:?} names no data source or Report and has no default"
    )]
    NoDataSource {
        /// The query.
        query: String,
        /// The input.
        input: String,
    },
    /// The data source an input names is not in the catalog.
    #[error(
        "ReportQuery {query:?}: input {input:?} names data source {source_name:?}, which does not exist"
    )]
    UnknownDataSource {
        /// The query.
        query: String,
        /// The input.
        input: String,
        /// The missing data source.
        source_name: String,
    },
    /// Query views that read each other.
    #[error("ReportQuery {query:?} reads itself through its data sources")]
    Cycle {
        /// The query.
        query: String,
    },
}

/// Replaces each `{{Name}}` in `query`'s SQL with `value(Name)`; a name for which `value` has
/// nothing is an error.
pub fn render_sql(
    query: &ReportQuery,
    mut value: impl FnMut(&str) -> Option<String>,
) -> Result<String, QueryError> {
    let sql = &query.sql;
    let mut out = String::with_capacity(sql.len());
    let mut rest = sql.as_str();
    while let Some(open) = rest.find("{{") {
        out.push_str(&rest[..open]);
        let after = &rest[open + 2..];
        let close = after
            .find("}}")
            .ok_or_else(|| QueryError::UnclosedPlaceholder {
                query: query.name.clone(),
                at: sql.len() - rest.len() + open,
            })?;
        let name = after[..close].trim();
        let replacement = value(name).ok_or_else(|| QueryError::UnknownPlaceholder {
            query: query.name.clone(),
            name: name.to_owned(),
        })?;
        out.push_str(&replacement);
        rest = &after[close + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Quotes an SQL identifier (`"name"`, inner quotes doubled).
pub(crate) fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(sql: &str) -> ReportQuery {
        ReportQuery {
            name: "q".into(),
            columns: vec![],
            inputs: vec![],
            sql: sql.into(),
        }
    }

    #[test]
    fn replaces_placeholders_and_refuses_unknown_or_unclosed_ones() {
        let q = query("SELECT {{ A }} FROM {{B}}");
        let out = render_sql(&q, |n| Some(format!("<{n}>"))).unwrap();
        assert_eq!(out, "SELECT <A> FROM <B>");
        let err = render_sql(&q, |n| (n == "A").then(|| "1".into())).unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"ReportQuery "q": the SQL refers to {{B}}, which is not one of its inputs"#
        );
        let err = render_sql(&query("SELECT {{A"), |_| Some(String::new())).unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"ReportQuery "q": unclosed placeholder at byte 7 of the SQL"#
        );
    }

    #[test]
    fn reads_a_metering_style_query_spec() {
        let spec = serde_json::json!({
            "name": "x",
            "columns": [{"name": "labels", "type": "map<varchar, varchar>", "tableHidden": true},
                        {"name": "n", "type": "double", "unit": "cpu_cores"}],
            "inputs": [{"name": "ReportingStart", "type": "time"},
                       {"name": "Src", "type": "ReportDataSource", "default": "s"}],
            "query": "SELECT 1"
        });
        let q: ReportQuery = serde_json::from_value(spec).unwrap();
        assert_eq!(q.columns[0].ty, ColumnType::Map);
        assert!(q.columns[0].table_hidden);
        assert_eq!(q.inputs[1].default.as_deref(), Some("s"));
    }

    #[test]
    fn sample_sources_follow_query_views_down_to_the_sample_tables() {
        let catalog = crate::builtin::catalog();
        let sources = |q: &str| {
            catalog
                .sample_sources(q)
                .unwrap()
                .into_iter()
                .collect::<Vec<_>>()
        };
        assert_eq!(sources("namespace-cpu-usage"), ["pod-usage-cpu-cores"]);
        assert_eq!(sources("cluster-memory-usage"), ["pod-usage-memory-bytes"]);
        assert_eq!(
            sources("pod-memory-request-raw"),
            ["pod-request-memory-bytes"]
        );
        assert!(matches!(
            catalog.sample_sources("nope"),
            Err(QueryError::UnknownQuery { .. })
        ));
    }
}
