//! The ReportQueries and data sources Operator Metering shipped (its `openshift-metering` chart,
//! `templates/openshift-reporting/report-queries/`), rewritten from Presto SQL into SQLite's:
//! same names, same columns (types and units), same rows.
//!
//! Built in: the pod and namespace CPU and memory request and usage queries over their raw
//! views, and the cluster CPU and memory usage totals. The dialect changes: `labels['pod']`
//! becomes `labels ->> '$.pod'`; `timestamp '…'` literals become `{{ReportingStart}}` (an
//! integer instant); the redundant `dt` partition filters are gone (the `"timestamp"` filter
//! decides); the namespace and cluster queries gain an `ORDER BY` (Presto's order was
//! unspecified). Also built in: the PVC and node queries, the utilisation queries
//! (`node-*-utilization`, `cluster-*-utilization`) and `persistentvolumeclaim-usage`. Metering's
//! optional `…ReportName` inputs (a roll-up branch inside each query) are not: a roll-up is a
//! ReportQuery whose input has type `Report` and whose SQL reads that report's results.

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
    add_claims_and_nodes(&mut catalog);
    add_utilization(&mut catalog);
    add_claim_usage(&mut catalog);
    catalog
}

/// Metering's utilisation queries: `node-cpu-utilization` and `node-memory-utilization` (the
/// pods' requests against the nodes' allocatable, over the whole cluster, as Metering had them)
/// and `cluster-cpu-utilization` and `cluster-memory-utilization` (measured usage against
/// capacity: `cluster-*-usage` joined with `cluster-*-capacity`). Metering's `…QueryName` inputs
/// (`type: ReportQuery`, rendered inline) are query views here; its `…ReportName` roll-up
/// branches are left to ReportQueries with `Report` inputs. "Percent" columns are ratios
/// (0.25 for a quarter), as Metering computed them.
fn add_utilization(catalog: &mut Catalog) {
    for resource in [Resource::Cpu, Resource::Memory] {
        let r = resource.name();
        let integral = resource.integral();
        let (node_raw, pod_raw) = (
            format!("node-{r}-allocatable-raw"),
            format!("pod-{r}-request-raw"),
        );
        let node_input = format!("{}DataSourceName", camel(&node_raw));
        let pod_input = format!("{}DataSourceName", camel(&pod_raw));
        let node_integral = format!("node_allocatable_{integral}");
        let pod_integral = format!("pod_request_{integral}");
        let unit = resource.pod_units().1;
        let mut columns = period_columns();
        columns.extend([
            column(
                "node_allocatable_data_start",
                ColumnType::Timestamp,
                Some("date"),
            ),
            column(
                "node_allocatable_data_end",
                ColumnType::Timestamp,
                Some("date"),
            ),
            column(&node_integral, ColumnType::Double, Some(unit)),
            column("pod_usage_data_start", ColumnType::Timestamp, Some("date")),
            column("pod_usage_data_end", ColumnType::Timestamp, Some("date")),
            column(&pod_integral, ColumnType::Double, Some(unit)),
            column(&format!("{r}_used_percent"), ColumnType::Double, None),
            column(&format!("{r}_unused_percent"), ColumnType::Double, None),
        ]);
        catalog.add_query(ReportQuery {
            name: format!("node-{r}-utilization"),
            columns,
            inputs: vec![
                time_input("ReportingStart"),
                time_input("ReportingEnd"),
                source_input(&node_input, &node_raw),
                source_input(&pod_input, &pod_raw),
            ],
            sql: format!(
                "WITH node_allocatable AS (\n\
                 \x20 SELECT min(\"timestamp\") AS node_allocatable_data_start,\n\
                 \x20   max(\"timestamp\") AS node_allocatable_data_end,\n\
                 \x20   sum({node_integral}) AS {node_integral}\n\
                 \x20 FROM {{{{{node_input}}}}}\n\
                 \x20 WHERE {IN_PERIOD}\n\
                 ), pod_requests AS (\n\
                 \x20 SELECT min(\"timestamp\") AS pod_usage_data_start,\n\
                 \x20   max(\"timestamp\") AS pod_usage_data_end,\n\
                 \x20   sum({pod_integral}) AS {pod_integral}\n\
                 \x20 FROM {{{{{pod_input}}}}}\n\
                 \x20 WHERE {IN_PERIOD}\n\
                 )\n\
                 SELECT {{{{ReportingStart}}}} AS period_start,\n\
                 \x20 {{{{ReportingEnd}}}} AS period_end,\n\
                 \x20 n.*, p.*,\n\
                 \x20 p.{pod_integral} / n.{node_integral} AS {r}_used_percent,\n\
                 \x20 1 - p.{pod_integral} / n.{node_integral} AS {r}_unused_percent\n\
                 FROM node_allocatable AS n CROSS JOIN pod_requests AS p\n"
            ),
        });

        // cluster-cpu-utilization: the cluster's usage and capacity reports, joined.
        let (capacity, usage) = (
            format!("cluster-{r}-capacity"),
            format!("cluster-{r}-usage"),
        );
        for query in [&capacity, &usage] {
            catalog.add_data_source(DataSource {
                name: query.clone(),
                kind: DataSourceKind::QueryView {
                    query: query.clone(),
                },
            });
        }
        let amount = resource.amount();
        let (capacity_input, usage_input) = (
            format!("{}QueryName", camel(&capacity)),
            format!("{}QueryName", camel(&usage)),
        );
        let total_capacity = format!("total_cluster_capacity_{integral}");
        let total_usage = format!("total_cluster_usage_{integral}");
        let percent = format!("cluster_{r}_utilization_percent");
        let avg_capacity = format!("avg_cluster_capacity_{amount}");
        let avg_usage = format!("avg_cluster_usage_{amount}");
        let mut columns = period_columns();
        columns.extend([
            column(&total_capacity, ColumnType::Double, Some(integral)),
            column(&total_usage, ColumnType::Double, Some(integral)),
            column(&percent, ColumnType::Double, None),
            column(&avg_capacity, ColumnType::Double, Some(amount)),
            column(&avg_usage, ColumnType::Double, Some(amount)),
            column("avg_node_count", ColumnType::Double, None),
            column("avg_pod_count", ColumnType::Double, None),
            column("avg_pod_per_node_count", ColumnType::Double, None),
        ]);
        catalog.add_query(ReportQuery {
            name: format!("cluster-{r}-utilization"),
            columns,
            inputs: vec![
                time_input("ReportingStart"),
                time_input("ReportingEnd"),
                source_input(&capacity_input, &capacity),
                source_input(&usage_input, &usage),
            ],
            sql: format!(
                "SELECT {{{{ReportingStart}}}} AS period_start,\n\
                 \x20 {{{{ReportingEnd}}}} AS period_end,\n\
                 \x20 capacity.{total_capacity},\n\
                 \x20 usage.{total_usage},\n\
                 \x20 usage.{total_usage} / capacity.{total_capacity} AS {percent},\n\
                 \x20 capacity.{avg_capacity},\n\
                 \x20 usage.{avg_usage},\n\
                 \x20 capacity.avg_node_count,\n\
                 \x20 usage.avg_pod_count,\n\
                 \x20 usage.avg_pod_count / capacity.avg_node_count AS avg_pod_per_node_count\n\
                 FROM {{{{{usage_input}}}}} AS usage\n\
                 JOIN {{{{{capacity_input}}}}} AS capacity\n\
                 \x20 ON capacity.period_start = usage.period_start\n\
                 \x20 AND capacity.period_end = usage.period_end\n"
            ),
        });
    }
}

/// The measured bytes a claim's volume holds (kubelet's `kubelet_volume_stats_used_bytes`,
/// imported by a Prometheus source of this name; labels `namespace` or `exported_namespace`,
/// `persistentvolumeclaim`).
pub const PVC_USAGE: &str = "persistentvolumeclaim-usage-bytes";

/// Metering's `persistentvolumeclaim-usage` (per claim) and
/// `namespace-persistentvolumeclaim-usage` (per namespace): the average bytes used over the
/// period's samples, over `persistentvolumeclaim-usage-raw`. Metering joined the samples with
/// the claims' phase (`persistentvolumeclaim-phase`, from kube-state-metrics) first; kubelet
/// reports only mounted claims, which are bound, so the join is left out. As in Metering the
/// namespace figure averages its claims' samples (it is not a sum over claims).
fn add_claim_usage(catalog: &mut Catalog) {
    let input = format!("{}DataSourceName", camel(PVC_USAGE));
    let raw = add_raw(
        catalog,
        PVC_USAGE,
        ReportQuery {
            name: "persistentvolumeclaim-usage-raw".into(),
            columns: vec![
                column("namespace", ColumnType::Varchar, None),
                column("persistentvolumeclaim", ColumnType::Varchar, None),
                Column {
                    table_hidden: true,
                    ..column("labels", ColumnType::Map, None)
                },
                column(
                    "persistentvolumeclaim_usage_bytes",
                    ColumnType::Double,
                    Some("bytes"),
                ),
                column("timeprecision", ColumnType::Double, Some("seconds")),
                column(
                    "persistentvolumeclaim_usage_byte_seconds",
                    ColumnType::Double,
                    Some("byte_seconds"),
                ),
                column("timestamp", ColumnType::Timestamp, Some("date")),
                column("dt", ColumnType::Varchar, None),
            ],
            inputs: vec![source_input(&input, PVC_USAGE)],
            sql: format!(
                "SELECT coalesce(labels ->> '$.exported_namespace', labels ->> '$.namespace') AS namespace,\n\
                 \x20 labels ->> '$.persistentvolumeclaim' AS persistentvolumeclaim,\n\
                 \x20 labels,\n\
                 \x20 amount AS persistentvolumeclaim_usage_bytes,\n\
                 \x20 timeprecision,\n\
                 \x20 amount * timeprecision AS persistentvolumeclaim_usage_byte_seconds,\n\
                 \x20 \"timestamp\",\n\
                 \x20 dt\n\
                 FROM {{{{{input}}}}}\n"
            ),
        },
    );
    let input = format!("{}DataSourceName", camel(&raw));
    let claim = column(
        "persistentvolumeclaim",
        ColumnType::Varchar,
        Some("kubernetes_persistentvolumeclaim"),
    );
    for (name, keys) in [
        ("persistentvolumeclaim-usage", vec![claim]),
        ("namespace-persistentvolumeclaim-usage", vec![]),
    ] {
        let mut columns = period_columns();
        columns.push(column(
            "namespace",
            ColumnType::Varchar,
            Some("kubernetes_namespace"),
        ));
        columns.extend(keys.iter().cloned());
        columns.push(column(
            "persistentvolumeclaim_usage_bytes",
            ColumnType::Double,
            Some("bytes"),
        ));
        let group: String = std::iter::once("namespace")
            .chain(keys.iter().map(|c| c.name.as_str()))
            .collect::<Vec<_>>()
            .join(", ");
        catalog.add_query(ReportQuery {
            name: name.into(),
            columns,
            inputs: vec![
                time_input("ReportingStart"),
                time_input("ReportingEnd"),
                source_input(&input, &raw),
            ],
            sql: format!(
                "SELECT {{{{ReportingStart}}}} AS period_start,\n\
                 \x20 {{{{ReportingEnd}}}} AS period_end,\n\
                 \x20 {group},\n\
                 \x20 avg(persistentvolumeclaim_usage_bytes) AS persistentvolumeclaim_usage_bytes\n\
                 FROM {{{{{input}}}}}\n\
                 WHERE {IN_PERIOD}\n\
                 GROUP BY {group}\n\
                 ORDER BY {group}\n"
            ),
        });
    }
}

/// Adds a sample data source and a query view over it.
fn add_raw(catalog: &mut Catalog, source: &str, raw: ReportQuery) -> String {
    catalog.add_data_source(DataSource {
        name: source.to_owned(),
        kind: DataSourceKind::Samples,
    });
    let name = raw.name.clone();
    catalog.add_data_source(DataSource {
        name: name.clone(),
        kind: DataSourceKind::QueryView {
            query: name.clone(),
        },
    });
    catalog.add_query(raw);
    name
}

/// The `{{ReportingStart}} <= "timestamp" < {{ReportingEnd}}` filter.
const IN_PERIOD: &str = "\"timestamp\" >= {{ReportingStart}}\n\
                         \x20 AND \"timestamp\" < {{ReportingEnd}}";

/// Metering's PVC and node queries: `persistentvolumeclaim-request` (per claim, namespace and
/// cluster), `persistentvolumeclaim-capacity`, `node-cpu-capacity`, `node-memory-capacity`,
/// `node-cpu-allocatable`, `node-memory-allocatable`, `cluster-cpu-capacity` and
/// `cluster-memory-capacity`, each over its `-raw` view.
///
/// Two deliberate changes from Metering: `persistentvolumeclaim-capacity` reports byte-seconds
/// (Metering summed the sampled bytes, a number that depends on the step), and the cluster
/// capacity averages are time-weighted (`total / period seconds`), which equals Metering's
/// average over steps when every step has every node, and stays exact over lifetimes.
fn add_claims_and_nodes(catalog: &mut Catalog) {
    // persistentvolumeclaim-request: claims bound to a volume, byte-seconds requested.
    let source = crate::tables::PVC_REQUEST;
    let input = format!("{}DataSourceName", camel(source));
    let raw = ReportQuery {
        name: "persistentvolumeclaim-request-raw".into(),
        columns: vec![
            Column {
                table_hidden: true,
                ..column("labels", ColumnType::Map, None)
            },
            column(
                "persistentvolumeclaim",
                ColumnType::Varchar,
                Some("kubernetes_persistentvolumeclaim"),
            ),
            column(
                "persistentvolume",
                ColumnType::Varchar,
                Some("kubernetes_persistentvolume"),
            ),
            column(
                "namespace",
                ColumnType::Varchar,
                Some("kubernetes_namespace"),
            ),
            column(
                "storageclass",
                ColumnType::Varchar,
                Some("kubernetes_storageclass"),
            ),
            column(
                "volume_request_storage_bytes",
                ColumnType::Double,
                Some("bytes"),
            ),
            column("timeprecision", ColumnType::Double, Some("seconds")),
            column(
                "volume_request_storage_byte_seconds",
                ColumnType::Double,
                Some("byte_seconds"),
            ),
            column("timestamp", ColumnType::Timestamp, Some("date")),
            column("dt", ColumnType::Varchar, None),
        ],
        inputs: vec![source_input(&input, source)],
        sql: format!(
            "SELECT labels,\n\
             \x20 labels ->> '$.persistentvolumeclaim' AS persistentvolumeclaim,\n\
             \x20 labels ->> '$.volumename' AS persistentvolume,\n\
             \x20 labels ->> '$.namespace' AS namespace,\n\
             \x20 labels ->> '$.storageclass' AS storageclass,\n\
             \x20 amount AS volume_request_storage_bytes,\n\
             \x20 timeprecision,\n\
             \x20 amount * timeprecision AS volume_request_storage_byte_seconds,\n\
             \x20 \"timestamp\",\n\
             \x20 dt\n\
             FROM {{{{{input}}}}}\n\
             WHERE labels ->> '$.volumename' IS NOT NULL\n"
        ),
    };
    let raw = add_raw(catalog, source, raw);
    let claim = [
        column(
            "persistentvolumeclaim",
            ColumnType::Varchar,
            Some("kubernetes_persistentvolumeclaim"),
        ),
        column(
            "persistentvolume",
            ColumnType::Varchar,
            Some("kubernetes_persistentvolume"),
        ),
        column(
            "namespace",
            ColumnType::Varchar,
            Some("kubernetes_namespace"),
        ),
        column(
            "storageclass",
            ColumnType::Varchar,
            Some("kubernetes_storageclass"),
        ),
    ];
    let namespace = [column(
        "namespace",
        ColumnType::Varchar,
        Some("kubernetes_namespace"),
    )];
    for (name, keys, order) in [
        (
            "persistentvolumeclaim-request",
            &claim[..],
            "persistentvolumeclaim, namespace, persistentvolume, storageclass",
        ),
        (
            "namespace-persistentvolumeclaim-request",
            &namespace[..],
            "namespace",
        ),
        ("cluster-persistentvolumeclaim-request", &[][..], ""),
    ] {
        let input = format!("{}DataSourceName", camel(&raw));
        let mut columns = period_columns();
        columns.extend(keys.iter().cloned());
        columns.extend([
            column("data_start", ColumnType::Timestamp, Some("date")),
            column("data_end", ColumnType::Timestamp, Some("date")),
            column(
                "volume_request_storage_byte_seconds",
                ColumnType::Double,
                Some("byte_seconds"),
            ),
        ]);
        let select_keys: String = keys.iter().map(|c| format!("\x20 {},\n", c.name)).collect();
        let group = if order.is_empty() {
            String::new()
        } else {
            format!("GROUP BY {order}\nORDER BY {order}\n")
        };
        catalog.add_query(ReportQuery {
            name: name.into(),
            columns,
            inputs: vec![
                time_input("ReportingStart"),
                time_input("ReportingEnd"),
                source_input(&input, &raw),
            ],
            sql: format!(
                "SELECT {{{{ReportingStart}}}} AS period_start,\n\
                 \x20 {{{{ReportingEnd}}}} AS period_end,\n\
                 {select_keys}\
                 \x20 min(\"timestamp\") AS data_start,\n\
                 \x20 max(\"timestamp\") AS data_end,\n\
                 \x20 sum(volume_request_storage_byte_seconds) AS volume_request_storage_byte_seconds\n\
                 FROM {{{{{input}}}}}\n\
                 WHERE {IN_PERIOD}\n\
                 {group}"
            ),
        });
    }

    // persistentvolumeclaim-capacity: the bound volume's capacity, byte-seconds.
    let source = crate::tables::PVC_CAPACITY;
    let input = format!("{}DataSourceName", camel(source));
    let raw = add_raw(
        catalog,
        source,
        ReportQuery {
            name: "persistentvolumeclaim-capacity-raw".into(),
            columns: vec![
                column("namespace", ColumnType::Varchar, None),
                column("persistentvolumeclaim", ColumnType::Varchar, None),
                Column {
                    table_hidden: true,
                    ..column("labels", ColumnType::Map, None)
                },
                column(
                    "persistentvolumeclaim_capacity_bytes",
                    ColumnType::Double,
                    Some("bytes"),
                ),
                column("timeprecision", ColumnType::Double, Some("seconds")),
                column(
                    "persistentvolumeclaim_capacity_byte_seconds",
                    ColumnType::Double,
                    Some("byte_seconds"),
                ),
                column("timestamp", ColumnType::Timestamp, Some("date")),
                column("dt", ColumnType::Varchar, None),
            ],
            inputs: vec![source_input(&input, source)],
            sql: format!(
                "SELECT coalesce(labels ->> '$.exported_namespace', labels ->> '$.namespace') AS namespace,\n\
                 \x20 labels ->> '$.persistentvolumeclaim' AS persistentvolumeclaim,\n\
                 \x20 labels,\n\
                 \x20 amount AS persistentvolumeclaim_capacity_bytes,\n\
                 \x20 timeprecision,\n\
                 \x20 amount * timeprecision AS persistentvolumeclaim_capacity_byte_seconds,\n\
                 \x20 \"timestamp\",\n\
                 \x20 dt\n\
                 FROM {{{{{input}}}}}\n"
            ),
        },
    );
    let input = format!("{}DataSourceName", camel(&raw));
    let mut columns = period_columns();
    columns.extend([
        column(
            "namespace",
            ColumnType::Varchar,
            Some("kubernetes_namespace"),
        ),
        column(
            "persistentvolumeclaim",
            ColumnType::Varchar,
            Some("kubernetes_persistentvolumeclaim"),
        ),
        column(
            "persistentvolumeclaim_capacity_byte_seconds",
            ColumnType::Double,
            Some("byte_seconds"),
        ),
    ]);
    catalog.add_query(ReportQuery {
        name: "persistentvolumeclaim-capacity".into(),
        columns,
        inputs: vec![
            time_input("ReportingStart"),
            time_input("ReportingEnd"),
            source_input(&input, &raw),
        ],
        sql: format!(
            "SELECT {{{{ReportingStart}}}} AS period_start,\n\
             \x20 {{{{ReportingEnd}}}} AS period_end,\n\
             \x20 namespace,\n\
             \x20 persistentvolumeclaim,\n\
             \x20 sum(persistentvolumeclaim_capacity_byte_seconds) AS persistentvolumeclaim_capacity_byte_seconds\n\
             FROM {{{{{input}}}}}\n\
             WHERE {IN_PERIOD}\n\
             GROUP BY namespace, persistentvolumeclaim\n\
             ORDER BY namespace, persistentvolumeclaim\n"
        ),
    });

    // Nodes: capacity and allocatable, per node and (capacity) for the cluster.
    for resource in [Resource::Cpu, Resource::Memory] {
        for measure in ["capacity", "allocatable"] {
            let raw = node_raw(catalog, resource, measure);
            catalog.add_query(node_report(resource, measure, &raw));
            if measure == "capacity" {
                cluster_capacity(catalog, resource, &raw);
            }
        }
    }
}

/// `node-cpu-capacity-raw`: one row per node sample, `resource_id` the instance id of the
/// node's `provider_id` (`aws:///us-east-1a/i-0abc` → `i-0abc`).
fn node_raw(catalog: &mut Catalog, resource: Resource, measure: &str) -> String {
    let (amount_unit, integral_unit) = resource.pod_units();
    let amount = format!("node_{measure}_{}", resource.amount());
    let integral = format!("node_{measure}_{}", resource.integral());
    let source = format!("node-{measure}-{}", resource.amount().replace('_', "-"));
    let input = format!("{}DataSourceName", camel(&source));
    let raw = ReportQuery {
        name: format!("node-{}-{measure}-raw", resource.name()),
        columns: vec![
            column("node", ColumnType::Varchar, Some("kubernetes_node")),
            Column {
                table_hidden: true,
                ..column("labels", ColumnType::Map, None)
            },
            column(&amount, ColumnType::Double, Some(amount_unit)),
            column("resource_id", ColumnType::Varchar, None),
            column("timeprecision", ColumnType::Double, Some("seconds")),
            column(&integral, ColumnType::Double, Some(integral_unit)),
            column("timestamp", ColumnType::Timestamp, Some("date")),
            column("dt", ColumnType::Varchar, None),
        ],
        inputs: vec![source_input(&input, &source)],
        // The instance id: after ":///", the second `/`-separated part.
        sql: format!(
            "SELECT node, labels, {amount}, \n\
             \x20 CASE WHEN instr(after_zone, '/') > 0 THEN substr(after_zone, 1, instr(after_zone, '/') - 1)\n\
             \x20      ELSE after_zone END AS resource_id,\n\
             \x20 timeprecision, {integral}, \"timestamp\", dt\n\
             FROM (SELECT *, CASE WHEN instr(after_scheme, '/') > 0\n\
             \x20       THEN substr(after_scheme, instr(after_scheme, '/') + 1) END AS after_zone\n\
             \x20 FROM (SELECT labels ->> '$.node' AS node,\n\
             \x20   labels,\n\
             \x20   amount AS {amount},\n\
             \x20   CASE WHEN instr(labels ->> '$.provider_id', ':///') > 0\n\
             \x20     THEN substr(labels ->> '$.provider_id', instr(labels ->> '$.provider_id', ':///') + 4) END AS after_scheme,\n\
             \x20   timeprecision,\n\
             \x20   amount * timeprecision AS {integral},\n\
             \x20   \"timestamp\",\n\
             \x20   dt\n\
             \x20   FROM {{{{{input}}}}}))\n"
        ),
    };
    add_raw(catalog, &source, raw)
}

/// `node-cpu-capacity`: the integral per node over the period.
fn node_report(resource: Resource, measure: &str, raw: &str) -> ReportQuery {
    let integral = format!("node_{measure}_{}", resource.integral());
    let input = format!("{}DataSourceName", camel(raw));
    let mut columns = period_columns();
    columns.extend([
        column("node", ColumnType::Varchar, Some("kubernetes_node")),
        column("resource_id", ColumnType::Varchar, None),
        column(&integral, ColumnType::Double, Some(resource.pod_units().1)),
    ]);
    ReportQuery {
        name: format!("node-{}-{measure}", resource.name()),
        columns,
        inputs: vec![
            time_input("ReportingStart"),
            time_input("ReportingEnd"),
            source_input(&input, raw),
        ],
        sql: format!(
            "SELECT {{{{ReportingStart}}}} AS period_start,\n\
             \x20 {{{{ReportingEnd}}}} AS period_end,\n\
             \x20 node,\n\
             \x20 resource_id,\n\
             \x20 sum({integral}) AS {integral}\n\
             FROM {{{{{input}}}}}\n\
             WHERE {IN_PERIOD}\n\
             GROUP BY node, resource_id\n\
             ORDER BY node, resource_id\n"
        ),
    }
}

/// `cluster-cpu-capacity-raw` (the nodes' sum per instant) and `cluster-cpu-capacity` (the
/// total over the period, the time-weighted average capacity and node count).
fn cluster_capacity(catalog: &mut Catalog, resource: Resource, node_raw: &str) {
    let (amount, integral) = (resource.amount(), resource.integral());
    let node_amount = format!("node_capacity_{amount}");
    let node_integral = format!("node_capacity_{integral}");
    let input = format!("{}DataSourceName", camel(node_raw));
    let raw = ReportQuery {
        name: format!("cluster-{}-capacity-raw", resource.name()),
        columns: vec![
            column("timestamp", ColumnType::Timestamp, Some("date")),
            column("dt", ColumnType::Varchar, None),
            column(amount, ColumnType::Double, None),
            column(integral, ColumnType::Double, None),
            column("node_seconds", ColumnType::Double, Some("seconds")),
            column("node_count", ColumnType::Double, None),
        ],
        inputs: vec![source_input(&input, node_raw)],
        sql: format!(
            "SELECT \"timestamp\",\n\
             \x20 dt,\n\
             \x20 sum({node_amount}) AS {amount},\n\
             \x20 sum({node_integral}) AS {integral},\n\
             \x20 sum(timeprecision) AS node_seconds,\n\
             \x20 count(*) AS node_count\n\
             FROM {{{{{input}}}}}\n\
             GROUP BY \"timestamp\", dt\n"
        ),
    };
    let raw_name = raw.name.clone();
    catalog.add_data_source(DataSource {
        name: raw_name.clone(),
        kind: DataSourceKind::QueryView {
            query: raw_name.clone(),
        },
    });
    catalog.add_query(raw);
    let input = format!("{}DataSourceName", camel(&raw_name));
    let total = format!("total_cluster_capacity_{integral}");
    let avg = format!("avg_cluster_capacity_{amount}");
    let mut columns = period_columns();
    columns.extend([
        column(&total, ColumnType::Double, Some(integral)),
        column(&avg, ColumnType::Double, Some(amount)),
        column("avg_node_count", ColumnType::Double, None),
    ]);
    // Period seconds: the bounds are integer nanoseconds.
    let seconds = "(({{ReportingEnd}} - {{ReportingStart}}) / 1e9)";
    catalog.add_query(ReportQuery {
        name: format!("cluster-{}-capacity", resource.name()),
        columns,
        inputs: vec![
            time_input("ReportingStart"),
            time_input("ReportingEnd"),
            source_input(&input, &raw_name),
        ],
        sql: format!(
            "SELECT {{{{ReportingStart}}}} AS period_start,\n\
             \x20 {{{{ReportingEnd}}}} AS period_end,\n\
             \x20 coalesce(sum({integral}), 0) AS {total},\n\
             \x20 coalesce(sum({integral}), 0) / {seconds} AS {avg},\n\
             \x20 coalesce(sum(node_seconds), 0) / {seconds} AS avg_node_count\n\
             FROM {{{{{input}}}}}\n\
             WHERE {IN_PERIOD}\n"
        ),
    });
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
/// each custom resource owns, integrated over the period), `<kind>-objects` (the objects each
/// manages, by kind: how many existed in the period and their object-seconds), and
/// `<kind>-reconciles` (its operator's reconciles, errors and reconcile time, from Prometheus
/// sources [`RESOURCE_RECONCILES`] and [`RESOURCE_RECONCILE_SECONDS`]). `<kind>` is the kind in
/// lower case (`memcached-cpu-request`).
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
    let reconciles_input = format!("{}DataSourceName", camel(RESOURCE_RECONCILES));
    let seconds_input = format!("{}DataSourceName", camel(RESOURCE_RECONCILE_SECONDS));
    let mut reconcile_columns = period_columns();
    reconcile_columns.extend([
        column(
            "namespace",
            ColumnType::Varchar,
            Some("kubernetes_namespace"),
        ),
        column("name", ColumnType::Varchar, Some(&name_unit)),
        column("reconciles", ColumnType::Double, None),
        column("errors", ColumnType::Double, None),
        column("reconcile_seconds", ColumnType::Double, Some("seconds")),
    ]);
    let reconciles = ReportQuery {
        name: format!("{kind}-reconciles"),
        columns: reconcile_columns,
        inputs: vec![
            time_input("ReportingStart"),
            time_input("ReportingEnd"),
            source_input(&reconciles_input, RESOURCE_RECONCILES),
            source_input(&seconds_input, RESOURCE_RECONCILE_SECONDS),
        ],
        sql: format!(
            "SELECT {{{{ReportingStart}}}} AS period_start,\n\
             \x20 {{{{ReportingEnd}}}} AS period_end,\n\
             \x20 namespace,\n\
             \x20 name,\n\
             \x20 sum(reconciles) AS reconciles,\n\
             \x20 sum(errors) AS errors,\n\
             \x20 sum(seconds) AS reconcile_seconds\n\
             FROM (\n\
             \x20 SELECT labels ->> '$.namespace' AS namespace, labels ->> '$.name' AS name,\n\
             \x20   amount AS reconciles,\n\
             \x20   CASE WHEN labels ->> '$.result' = 'error' THEN amount ELSE 0 END AS errors,\n\
             \x20   0 AS seconds\n\
             \x20 FROM {{{{{reconciles_input}}}}}\n\
             \x20 WHERE {filter} AND {IN_PERIOD}\n\
             \x20 UNION ALL\n\
             \x20 SELECT labels ->> '$.namespace', labels ->> '$.name', 0, 0, amount\n\
             \x20 FROM {{{{{seconds_input}}}}}\n\
             \x20 WHERE {filter} AND {IN_PERIOD}\n\
             )\n\
             GROUP BY namespace, name\n\
             ORDER BY namespace, name\n"
        ),
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
        reconciles,
    ]
}

/// Reconciles per custom resource and step, from the runtime's per-object counter through a
/// Prometheus source: labels `group`, `kind`, `namespace`, `name`, `result` (`success` or
/// `error`), amount the reconciles in the step. The source's query:
/// `sum by (group, kind, namespace, name, result) (increase(opkit_object_reconcile_total[1m]))`
/// at a `1m` resolution.
pub const RESOURCE_RECONCILES: &str = "resource-reconciles";
/// Reconcile time per custom resource and step (seconds spent in the step), likewise:
/// `sum by (group, kind, namespace, name) (increase(opkit_object_reconcile_time_seconds_total[1m]))`.
pub const RESOURCE_RECONCILE_SECONDS: &str = "resource-reconcile-seconds";

/// Adds the history's data sources ([`crate::tables::NAMES`]) and the per-custom-resource
/// queries of each kind in `metered` to `catalog`.
pub fn add_history(
    catalog: &mut Catalog,
    metered: &std::collections::BTreeSet<crate::lifetime::GroupKind>,
) {
    for name in crate::tables::NAMES
        .into_iter()
        .chain([RESOURCE_RECONCILES, RESOURCE_RECONCILE_SECONDS])
    {
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
    use crate::report::{Period, Value, run};
    use crate::sample::Sample;
    use std::collections::BTreeMap;

    /// Samples of `amount` at 10:00 and 10:01 (a 60 s step) with `labels`.
    fn two_steps(amount: f64, labels: &[(&str, &str)]) -> Vec<Sample> {
        let labels: BTreeMap<String, String> = labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        ["2026-01-01T10:00:00Z", "2026-01-01T10:01:00Z"]
            .into_iter()
            .map(|t| Sample::at(amount, t.parse().unwrap(), 60_000_000_000, labels.clone()))
            .collect()
    }

    fn two_minutes() -> Period {
        Period {
            start: "2026-01-01T10:00:00Z".parse().unwrap(),
            end: "2026-01-01T10:02:00Z".parse().unwrap(),
        }
    }

    /// The one row of `query`'s report, by column name.
    fn one_row(query: &str, inputs: BTreeMap<String, Vec<Sample>>) -> BTreeMap<String, Value> {
        let table = run(&catalog(), query, &inputs, two_minutes()).unwrap();
        assert_eq!(table.rows.len(), 1, "{table:?}");
        table
            .columns
            .iter()
            .map(|c| c.name.clone())
            .zip(table.rows[0].clone())
            .collect()
    }

    #[test]
    fn node_cpu_utilization_sets_the_pods_requests_against_the_nodes_allocatable() {
        let row = one_row(
            "node-cpu-utilization",
            BTreeMap::from([
                (
                    "node-allocatable-cpu-cores".into(),
                    two_steps(4.0, &[("node", "n1")]),
                ),
                (
                    "pod-request-cpu-cores".into(),
                    two_steps(
                        1.0,
                        &[("node", "n1"), ("pod", "web"), ("namespace", "shop")],
                    ),
                ),
            ]),
        );
        assert_eq!(
            row["node_allocatable_cpu_core_seconds"],
            Value::Double(480.0)
        );
        assert_eq!(row["pod_request_cpu_core_seconds"], Value::Double(120.0));
        assert_eq!(row["cpu_used_percent"], Value::Double(0.25));
        assert_eq!(row["cpu_unused_percent"], Value::Double(0.75));
        assert_eq!(
            row["pod_usage_data_end"],
            Value::Timestamp("2026-01-01T10:01:00Z".parse().unwrap())
        );
    }

    #[test]
    fn cluster_memory_utilization_joins_measured_usage_with_capacity() {
        let gib = 1024.0 * 1024.0 * 1024.0;
        let row = one_row(
            "cluster-memory-utilization",
            BTreeMap::from([
                (
                    "node-capacity-memory-bytes".into(),
                    two_steps(8.0 * gib, &[("node", "n1")]),
                ),
                (
                    "pod-usage-memory-bytes".into(),
                    two_steps(
                        2.0 * gib,
                        &[("node", "n1"), ("pod", "web"), ("namespace", "shop")],
                    ),
                ),
            ]),
        );
        assert_eq!(
            row["total_cluster_capacity_memory_byte_seconds"],
            Value::Double(8.0 * gib * 120.0)
        );
        assert_eq!(
            row["total_cluster_usage_memory_byte_seconds"],
            Value::Double(2.0 * gib * 120.0)
        );
        assert_eq!(
            row["cluster_memory_utilization_percent"],
            Value::Double(0.25)
        );
        assert_eq!(
            row["avg_cluster_capacity_memory_bytes"],
            Value::Double(8.0 * gib)
        );
        assert_eq!(
            row["avg_cluster_usage_memory_bytes"],
            Value::Double(2.0 * gib)
        );
        assert_eq!(row["avg_node_count"], Value::Double(1.0));
        assert_eq!(row["avg_pod_per_node_count"], Value::Double(1.0));
    }

    #[test]
    fn persistentvolumeclaim_usage_averages_kubelets_samples_per_claim_and_namespace() {
        let mut usage = two_steps(
            100.0,
            &[("namespace", "shop"), ("persistentvolumeclaim", "a")],
        );
        usage.extend(two_steps(
            300.0,
            &[
                ("exported_namespace", "shop"),
                ("persistentvolumeclaim", "b"),
            ],
        ));
        usage[1].amount = 200.0;
        let inputs = BTreeMap::from([("persistentvolumeclaim-usage-bytes".into(), usage)]);
        let table = run(
            &catalog(),
            "persistentvolumeclaim-usage",
            &inputs,
            two_minutes(),
        )
        .unwrap();
        let rows: Vec<_> = table.rows.iter().map(|r| r[2..].to_vec()).collect();
        assert_eq!(
            rows,
            [
                vec![
                    Value::Text("shop".into()),
                    Value::Text("a".into()),
                    Value::Double(150.0)
                ],
                vec![
                    Value::Text("shop".into()),
                    Value::Text("b".into()),
                    Value::Double(300.0)
                ],
            ]
        );
        let row = one_row("namespace-persistentvolumeclaim-usage", inputs);
        assert_eq!(
            row["persistentvolumeclaim_usage_bytes"],
            Value::Double(225.0)
        );
    }

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
