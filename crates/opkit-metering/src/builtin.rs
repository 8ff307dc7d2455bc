//! The ReportQueries and data sources Operator Metering shipped (its `openshift-metering` chart,
//! `templates/openshift-reporting/report-queries/`), rewritten from Presto SQL into SQLite's:
//! same names, same columns (types and units), same rows.
//!
//! Built in: the pod and namespace CPU and memory request and usage queries over their raw
//! views, and the cluster CPU and memory usage totals. The dialect changes: `labels['pod']`
//! becomes `labels ->> '$.pod'`; `timestamp '…'` literals become `{{ReportingStart}}` (an
//! integer instant); the redundant `dt` partition filters are gone (the `"timestamp"` filter
//! decides); the namespace and cluster queries gain an `ORDER BY` (Presto's order was
//! unspecified). Metering's optional inputs that read earlier reports (`…ReportName`, for
//! roll-ups) are not built in yet.

use crate::query::{
    Catalog, Column, ColumnType, DataSource, DataSourceKind, Input, InputType, ReportQuery,
};

/// The built-in queries and data sources.
pub fn catalog() -> Catalog {
    let mut catalog = Catalog::default();
    for resource in [Resource::Cpu, Resource::Memory] {
        for measure in ["request", "usage"] {
            let source = resource.source(measure);
            catalog.add_data_source(DataSource {
                name: source.clone(),
                kind: DataSourceKind::Samples,
            });
            let raw = pod_raw(resource, measure, &source);
            catalog.add_data_source(DataSource {
                name: raw.name.clone(),
                kind: DataSourceKind::QueryView {
                    query: raw.name.clone(),
                },
            });
            catalog.add_query(pod_report(resource, measure, &raw.name));
            catalog.add_query(namespace_report(resource, measure, &raw.name));
            if measure == "usage" {
                let cluster_raw = cluster_usage_raw(resource, &raw.name);
                catalog.add_data_source(DataSource {
                    name: cluster_raw.name.clone(),
                    kind: DataSourceKind::QueryView {
                        query: cluster_raw.name.clone(),
                    },
                });
                catalog.add_query(cluster_usage(resource, &cluster_raw.name));
                catalog.add_query(cluster_raw);
            }
            catalog.add_query(raw);
        }
    }
    catalog
}

#[derive(Clone, Copy)]
enum Resource {
    Cpu,
    Memory,
}

impl Resource {
    /// `cpu` / `memory`, as in query names.
    fn name(self) -> &'static str {
        match self {
            Resource::Cpu => "cpu",
            Resource::Memory => "memory",
        }
    }
    /// The instantaneous quantity: `cpu_cores`, `memory_bytes`.
    fn amount(self) -> &'static str {
        match self {
            Resource::Cpu => "cpu_cores",
            Resource::Memory => "memory_bytes",
        }
    }
    /// The integral: `cpu_core_seconds`, `memory_byte_seconds`.
    fn integral(self) -> &'static str {
        match self {
            Resource::Cpu => "cpu_core_seconds",
            Resource::Memory => "memory_byte_seconds",
        }
    }
    /// The units Metering gave pod columns: `cpu_cores`/`bytes`, `cpu_core_seconds`/`byte_seconds`.
    fn pod_units(self) -> (&'static str, &'static str) {
        match self {
            Resource::Cpu => ("cpu_cores", "cpu_core_seconds"),
            Resource::Memory => ("bytes", "byte_seconds"),
        }
    }
    /// The samples' data source: `pod-request-cpu-cores`, `pod-usage-memory-bytes`, …
    fn source(self, measure: &str) -> String {
        format!("pod-{measure}-{}", self.amount().replace('_', "-"))
    }
}

fn column(name: &str, ty: ColumnType, unit: Option<&str>) -> Column {
    Column {
        name: name.to_owned(),
        ty,
        unit: unit.map(str::to_owned),
        table_hidden: false,
    }
}

fn time_input(name: &str) -> Input {
    Input {
        name: name.to_owned(),
        ty: InputType::Time,
        default: None,
    }
}

fn source_input(name: &str, default: &str) -> Input {
    Input {
        name: name.to_owned(),
        ty: InputType::ReportDataSource,
        default: Some(default.to_owned()),
    }
}

/// `CamelCase` of a dashed name: `pod-cpu-request-raw` → `PodCpuRequestRaw`.
fn camel(dashed: &str) -> String {
    dashed
        .split(['-', '_'])
        .map(|part| {
            let mut chars = part.chars();
            chars
                .next()
                .map(|c| c.to_ascii_uppercase().to_string() + chars.as_str())
                .unwrap_or_default()
        })
        .collect()
}

fn period_columns() -> Vec<Column> {
    vec![
        column("period_start", ColumnType::Timestamp, Some("date")),
        column("period_end", ColumnType::Timestamp, Some("date")),
    ]
}

/// `pod-cpu-request-raw`: one row per sample with a node, the amount times the step.
fn pod_raw(resource: Resource, measure: &str, source: &str) -> ReportQuery {
    let (amount_unit, integral_unit) = resource.pod_units();
    let amount = format!("pod_{measure}_{}", resource.amount());
    let integral = format!("pod_{measure}_{}", resource.integral());
    let input = format!("{}DataSourceName", camel(source));
    ReportQuery {
        name: format!("pod-{}-{measure}-raw", resource.name()),
        columns: vec![
            column("pod", ColumnType::Varchar, Some("kubernetes_pod")),
            column(
                "namespace",
                ColumnType::Varchar,
                Some("kubernetes_namespace"),
            ),
            column("node", ColumnType::Varchar, Some("kubernetes_node")),
            Column {
                table_hidden: true,
                ..column("labels", ColumnType::Map, None)
            },
            column(&amount, ColumnType::Double, Some(amount_unit)),
            column("timeprecision", ColumnType::Double, Some("seconds")),
            column(&integral, ColumnType::Double, Some(integral_unit)),
            column("timestamp", ColumnType::Timestamp, Some("date")),
            column("dt", ColumnType::Varchar, None),
        ],
        inputs: vec![source_input(&input, source)],
        sql: format!(
            "SELECT labels ->> '$.pod' AS pod,\n\
             \x20 labels ->> '$.namespace' AS namespace,\n\
             \x20 labels ->> '$.node' AS node,\n\
             \x20 labels,\n\
             \x20 amount AS {amount},\n\
             \x20 timeprecision,\n\
             \x20 amount * timeprecision AS {integral},\n\
             \x20 \"timestamp\",\n\
             \x20 dt\n\
             FROM {{{{{input}}}}}\n\
             WHERE labels ->> '$.node' IS NOT NULL\n"
        ),
    }
}

/// `pod-cpu-request`: the integral per pod over the period.
fn pod_report(resource: Resource, measure: &str, raw: &str) -> ReportQuery {
    let integral = format!("pod_{measure}_{}", resource.integral());
    let input = format!("{}DataSourceName", camel(raw));
    let mut columns = period_columns();
    columns.extend([
        column("pod", ColumnType::Varchar, Some("kubernetes_pod")),
        column(
            "namespace",
            ColumnType::Varchar,
            Some("kubernetes_namespace"),
        ),
        column("node", ColumnType::Varchar, Some("kubernetes_node")),
        column(&integral, ColumnType::Double, Some(resource.pod_units().1)),
    ]);
    ReportQuery {
        name: format!("pod-{}-{measure}", resource.name()),
        columns,
        inputs: vec![
            time_input("ReportingStart"),
            time_input("ReportingEnd"),
            source_input(&input, raw),
        ],
        sql: format!(
            "SELECT {{{{ReportingStart}}}} AS period_start,\n\
             \x20 {{{{ReportingEnd}}}} AS period_end,\n\
             \x20 pod,\n\
             \x20 namespace,\n\
             \x20 node,\n\
             \x20 sum({integral}) AS {integral}\n\
             FROM {{{{{input}}}}}\n\
             WHERE \"timestamp\" >= {{{{ReportingStart}}}}\n\
             \x20 AND \"timestamp\" < {{{{ReportingEnd}}}}\n\
             GROUP BY namespace, pod, node\n\
             ORDER BY namespace, pod, node ASC, {integral} DESC\n"
        ),
    }
}

/// `namespace-cpu-request`: the integral per namespace over the period.
fn namespace_report(resource: Resource, measure: &str, raw: &str) -> ReportQuery {
    let integral = format!("pod_{measure}_{}", resource.integral());
    let input = format!("{}DataSourceName", camel(raw));
    let mut columns = period_columns();
    columns.extend([
        column(
            "namespace",
            ColumnType::Varchar,
            Some("kubernetes_namespace"),
        ),
        column(&integral, ColumnType::Double, Some(resource.pod_units().1)),
    ]);
    ReportQuery {
        name: format!("namespace-{}-{measure}", resource.name()),
        columns,
        inputs: vec![
            time_input("ReportingStart"),
            time_input("ReportingEnd"),
            source_input(&input, raw),
        ],
        sql: format!(
            "SELECT {{{{ReportingStart}}}} AS period_start,\n\
             \x20 {{{{ReportingEnd}}}} AS period_end,\n\
             \x20 namespace,\n\
             \x20 sum({integral}) AS {integral}\n\
             FROM {{{{{input}}}}}\n\
             WHERE \"timestamp\" >= {{{{ReportingStart}}}}\n\
             \x20 AND \"timestamp\" < {{{{ReportingEnd}}}}\n\
             GROUP BY namespace\n\
             ORDER BY namespace\n"
        ),
    }
}

/// `cluster-cpu-usage-raw`: the cluster's sum per step.
fn cluster_usage_raw(resource: Resource, pod_raw: &str) -> ReportQuery {
    let input = format!("{}DataSourceName", camel(pod_raw));
    let (amount, integral) = (resource.amount(), resource.integral());
    ReportQuery {
        name: format!("cluster-{}-usage-raw", resource.name()),
        columns: vec![
            column("timestamp", ColumnType::Timestamp, Some("date")),
            column("dt", ColumnType::Varchar, None),
            column(amount, ColumnType::Double, None),
            column(integral, ColumnType::Double, None),
            column("pod_count", ColumnType::Double, None),
        ],
        inputs: vec![source_input(&input, pod_raw)],
        sql: format!(
            "SELECT \"timestamp\",\n\
             \x20 dt,\n\
             \x20 sum(pod_usage_{amount}) AS {amount},\n\
             \x20 sum(pod_usage_{integral}) AS {integral},\n\
             \x20 count(*) AS pod_count\n\
             FROM {{{{{input}}}}}\n\
             GROUP BY \"timestamp\", dt\n"
        ),
    }
}

/// `cluster-cpu-usage`: the cluster's total over the period, its average per step and the
/// average pod count.
fn cluster_usage(resource: Resource, cluster_raw: &str) -> ReportQuery {
    let input = format!("{}DataSourceName", camel(cluster_raw));
    let (amount, integral) = (resource.amount(), resource.integral());
    let total = format!("total_cluster_usage_{integral}");
    let avg = format!("avg_cluster_usage_{amount}");
    let mut columns = period_columns();
    columns.extend([
        column(&total, ColumnType::Double, Some(integral)),
        column(&avg, ColumnType::Double, Some(amount)),
        column("avg_pod_count", ColumnType::Double, None),
    ]);
    ReportQuery {
        name: format!("cluster-{}-usage", resource.name()),
        columns,
        inputs: vec![
            time_input("ReportingStart"),
            time_input("ReportingEnd"),
            source_input(&input, cluster_raw),
        ],
        sql: format!(
            "SELECT {{{{ReportingStart}}}} AS period_start,\n\
             \x20 {{{{ReportingEnd}}}} AS period_end,\n\
             \x20 sum({integral}) AS {total},\n\
             \x20 avg({amount}) AS {avg},\n\
             \x20 avg(pod_count) AS avg_pod_count\n\
             FROM {{{{{input}}}}}\n\
             WHERE \"timestamp\" >= {{{{ReportingStart}}}}\n\
             \x20 AND \"timestamp\" < {{{{ReportingEnd}}}}\n"
        ),
    }
}

/// The per-custom-resource queries of a metered kind, over the history's tables
/// ([`crate::tables`]): `<kind>-cpu-request` and `<kind>-memory-request` (requests of the pods
/// each custom resource owns, integrated over the period) and `<kind>-objects` (the objects each
/// manages, by kind: how many existed in the period and their object-seconds). `<kind>` is the
/// kind in lower case (`memcached-cpu-request`).
pub fn resource_queries(group_kind: &crate::lifetime::GroupKind) -> Vec<ReportQuery> {
    let kind = group_kind.kind.to_lowercase();
    let filter = format!(
        "labels ->> '$.group' = {} AND labels ->> '$.kind' = {}",
        sql_text(&group_kind.group),
        sql_text(&group_kind.kind)
    );
    let name_unit = format!("kubernetes_{kind}");
    let request = |resource: &str, source: &str, column_name: &str, unit: &str| {
        let input = format!("{}DataSourceName", camel(source));
        let mut columns = period_columns();
        columns.extend([
            column(
                "namespace",
                ColumnType::Varchar,
                Some("kubernetes_namespace"),
            ),
            column("name", ColumnType::Varchar, Some(&name_unit)),
            column("pods", ColumnType::Bigint, None),
            column(column_name, ColumnType::Double, Some(unit)),
        ]);
        ReportQuery {
            name: format!("{kind}-{resource}-request"),
            columns,
            inputs: vec![
                time_input("ReportingStart"),
                time_input("ReportingEnd"),
                source_input(&input, source),
            ],
            sql: format!(
                "SELECT {{{{ReportingStart}}}} AS period_start,\n\
                 \x20 {{{{ReportingEnd}}}} AS period_end,\n\
                 \x20 labels ->> '$.namespace' AS namespace,\n\
                 \x20 labels ->> '$.name' AS name,\n\
                 \x20 count(DISTINCT labels ->> '$.pod') AS pods,\n\
                 \x20 sum(amount * timeprecision) AS {column_name}\n\
                 FROM {{{{{input}}}}}\n\
                 WHERE {filter}\n\
                 \x20 AND \"timestamp\" >= {{{{ReportingStart}}}}\n\
                 \x20 AND \"timestamp\" < {{{{ReportingEnd}}}}\n\
                 GROUP BY namespace, name\n\
                 ORDER BY namespace, name\n"
            ),
        }
    };
    let objects_input = format!("{}DataSourceName", camel(crate::tables::RESOURCE_OBJECTS));
    let mut object_columns = period_columns();
    object_columns.extend([
        column(
            "namespace",
            ColumnType::Varchar,
            Some("kubernetes_namespace"),
        ),
        column("name", ColumnType::Varchar, Some(&name_unit)),
        column("object_kind", ColumnType::Varchar, Some("kubernetes_kind")),
        column("objects", ColumnType::Bigint, None),
        column("object_seconds", ColumnType::Double, Some("seconds")),
    ]);
    vec![
        request(
            "cpu",
            crate::tables::RESOURCE_CPU,
            "cpu_request_core_seconds",
            "cpu_core_seconds",
        ),
        request(
            "memory",
            crate::tables::RESOURCE_MEMORY,
            "memory_request_byte_seconds",
            "byte_seconds",
        ),
        ReportQuery {
            name: format!("{kind}-objects"),
            columns: object_columns,
            inputs: vec![
                time_input("ReportingStart"),
                time_input("ReportingEnd"),
                source_input(&objects_input, crate::tables::RESOURCE_OBJECTS),
            ],
            sql: format!(
                "SELECT {{{{ReportingStart}}}} AS period_start,\n\
                 \x20 {{{{ReportingEnd}}}} AS period_end,\n\
                 \x20 labels ->> '$.namespace' AS namespace,\n\
                 \x20 labels ->> '$.name' AS name,\n\
                 \x20 labels ->> '$.object_kind' AS object_kind,\n\
                 \x20 count(DISTINCT labels ->> '$.uid') AS objects,\n\
                 \x20 sum(amount * timeprecision) AS object_seconds\n\
                 FROM {{{{{objects_input}}}}}\n\
                 WHERE {filter}\n\
                 \x20 AND \"timestamp\" >= {{{{ReportingStart}}}}\n\
                 \x20 AND \"timestamp\" < {{{{ReportingEnd}}}}\n\
                 GROUP BY namespace, name, object_kind\n\
                 ORDER BY namespace, name, object_kind\n"
            ),
        },
    ]
}

/// Adds the history's data sources ([`crate::tables::NAMES`]) and the per-custom-resource
/// queries of each kind in `metered` to `catalog`.
pub fn add_history(
    catalog: &mut Catalog,
    metered: &std::collections::BTreeSet<crate::lifetime::GroupKind>,
) {
    for name in crate::tables::NAMES {
        catalog.add_data_source(DataSource {
            name: name.to_owned(),
            kind: DataSourceKind::Samples,
        });
    }
    for group_kind in metered {
        for query in resource_queries(group_kind) {
            catalog.add_query(query);
        }
    }
}

/// A SQL text literal.
fn sql_text(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ships_metering_names_inputs_and_columns() {
        let c = catalog();
        let names: Vec<&str> = c.queries.keys().map(String::as_str).collect();
        for expected in [
            "pod-cpu-request",
            "pod-cpu-usage",
            "pod-memory-request",
            "pod-memory-usage",
            "namespace-cpu-request",
            "namespace-cpu-usage",
            "namespace-memory-request",
            "namespace-memory-usage",
            "cluster-cpu-usage",
            "cluster-memory-usage",
            "pod-cpu-request-raw",
            "cluster-memory-usage-raw",
        ] {
            assert!(
                names.contains(&expected),
                "{expected} missing from {names:?}"
            );
        }
        let q = c.query("pod-memory-request").unwrap();
        let cols: Vec<&str> = q.columns.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            cols,
            [
                "period_start",
                "period_end",
                "pod",
                "namespace",
                "node",
                "pod_request_memory_byte_seconds"
            ]
        );
        assert_eq!(q.columns[5].unit.as_deref(), Some("byte_seconds"));
        assert_eq!(q.inputs[2].name, "PodMemoryRequestRawDataSourceName");
        assert_eq!(
            q.inputs[2].default.as_deref(),
            Some("pod-memory-request-raw")
        );
        let raw = c.query("pod-cpu-request-raw").unwrap();
        assert_eq!(raw.inputs[0].name, "PodRequestCpuCoresDataSourceName");
        assert_eq!(
            raw.inputs[0].default.as_deref(),
            Some("pod-request-cpu-cores")
        );
        assert!(c.data_sources.contains_key("pod-usage-memory-bytes"));
    }
}
