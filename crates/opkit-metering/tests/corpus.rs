//! opkit-metering's built-in queries over Operator Metering's own end-to-end data and on
//! fixtures written here: the crate's one integration test file.
//!
//! The corpus (`../shared/corpus/metering`, only in CI; skipped loudly when absent): Metering's
//! `pod-request-cpu-cores` samples, and the reports `pod-cpu-request` and
//! `namespace-cpu-request` that Metering computed from them over 16:00:00Z–16:05:00Z. opkit's
//! reports must equal them row for row: the same rows, in order by their key columns (Metering's
//! test files store the pod report sorted by pod, not in its query's `ORDER BY` order, so both
//! sides are put in key order), each text field equal and each number within 1e-9 relative.
//!
//! The fixtures: every built-in query on samples whose sums are worked out by hand in the test,
//! the errors (an unknown column in SQL, a missing data source, a malformed sample), and the
//! exact lifetime integration of a Memcached scaled 1 → 3 → 0, and of a PVC resized and deleted
//! and nodes joining mid-period (Metering's PVC, node and cluster capacity queries).

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use jiff::Timestamp;
use opkit_metering::lifetime::{self, Basis, GroupKind, History, Owner, PodLife, Segment};
use opkit_metering::tables;
use opkit_metering::{
    Catalog, Format, Period, ReportError, Sample, Table, Value, builtin, parse_samples,
    read_samples, render, run,
};
use serde_json::Value as Json;

fn corpus() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus/metering");
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!(
            "SKIPPED: the metering corpus is not at {} (it is only in CI)",
            dir.display()
        );
        None
    }
}

fn ts(s: &str) -> Timestamp {
    s.parse().expect("a test timestamp")
}

fn period(start: &str, end: &str) -> Period {
    Period {
        start: ts(start),
        end: ts(end),
    }
}

/// The report as JSON rows (Metering's json format), parsed back.
fn json_rows(table: &Table) -> Vec<Json> {
    match serde_json::from_str(&render(table, Format::Json)).expect("valid JSON") {
        Json::Array(rows) => rows,
        other => panic!("not an array: {other}"),
    }
}

/// Sorts rows by the given text fields.
fn by_key(mut rows: Vec<Json>, key: &[&str]) -> Vec<Json> {
    let k = |r: &Json| -> Vec<String> {
        key.iter()
            .map(|f| r[*f].as_str().unwrap_or_default().to_owned())
            .collect()
    };
    rows.sort_by_key(k);
    rows
}

fn assert_rows_equal(report: &str, got: &[Json], want: &[Json]) {
    assert_eq!(got.len(), want.len(), "{report}: row count");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let (Json::Object(g), Json::Object(w)) = (g, w) else {
            panic!("{report}: row {i} is not an object");
        };
        let gk: Vec<&String> = g.keys().collect();
        let wk: Vec<&String> = w.keys().collect();
        assert_eq!(gk, wk, "{report}: row {i}: columns");
        for (field, wv) in w {
            let gv = &g[field];
            match (gv.as_f64(), wv.as_f64()) {
                (Some(a), Some(b)) => assert!(
                    (a - b).abs() <= 1e-9 * b.abs().max(f64::MIN_POSITIVE),
                    "{report}: row {i}: {field}: {a} != {b}"
                ),
                _ => assert_eq!(gv, wv, "{report}: row {i}: {field}"),
            }
        }
    }
}

#[test]
fn corpus_cpu_request_reports_equal_meterings_row_for_row() {
    let Some(dir) = corpus() else { return };
    let input = dir.join("datasources/pod-request-cpu-cores.json");
    let samples = BTreeMap::from([(
        "pod-request-cpu-cores".to_owned(),
        read_samples(&input).expect("the corpus samples parse"),
    )]);
    let catalog = builtin::catalog();
    let p = period("2019-03-18T16:00:00Z", "2019-03-18T16:05:00Z");
    for (query, key) in [
        ("pod-cpu-request", &["namespace", "pod", "node"][..]),
        ("namespace-cpu-request", &["namespace"][..]),
    ] {
        let table = run(&catalog, query, &samples, p).expect("the report runs");
        let text = std::fs::read_to_string(dir.join(format!("reports/{query}.json"))).unwrap();
        let want: Vec<Json> = serde_json::from_str(&text).unwrap();
        let got = by_key(json_rows(&table), key);
        let want = by_key(want, key);
        assert_rows_equal(query, &got, &want);
        eprintln!("{query}: {} rows equal Metering's", got.len());
    }
}

/// A sample of `amount` at `at` with a 60 s step.
fn sample(amount: f64, at: &str, labels: &[(&str, &str)]) -> Sample {
    Sample {
        amount,
        timestamp: ts(at),
        step_nanos: 60_000_000_000,
        labels: labels
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
        dt: at[..10].to_owned(),
    }
}

/// Two pods in namespace `a` (one on node n1, one on n2), one pod in `b`, one pod without a
/// node (left out, as Metering's raw queries leave it out), each sampled at 10:00, 10:01 and
/// 10:02 with the amounts below; the period is 10:00–10:02, so the 10:02 samples fall outside.
fn fixture(amounts: [f64; 4]) -> Vec<Sample> {
    let mut rows = Vec::new();
    for minute in ["10:00", "10:01", "10:02"] {
        let at = format!("2026-01-01T{minute}:00Z");
        rows.push(sample(
            amounts[0],
            &at,
            &[("namespace", "a"), ("pod", "p1"), ("node", "n1")],
        ));
        rows.push(sample(
            amounts[1],
            &at,
            &[("namespace", "a"), ("pod", "p2"), ("node", "n2")],
        ));
        rows.push(sample(
            amounts[2],
            &at,
            &[("namespace", "b"), ("pod", "q"), ("node", "n1")],
        ));
        rows.push(sample(
            amounts[3],
            &at,
            &[("namespace", "b"), ("pod", "pending")],
        ));
    }
    rows
}

fn fixture_inputs() -> BTreeMap<String, Vec<Sample>> {
    BTreeMap::from([
        (
            "pod-request-cpu-cores".into(),
            fixture([0.5, 0.25, 2.0, 8.0]),
        ),
        (
            "pod-usage-cpu-cores".into(),
            fixture([0.125, 0.25, 1.5, 8.0]),
        ),
        (
            "pod-request-memory-bytes".into(),
            fixture([1024.0, 2048.0, 4096.0, 1.0]),
        ),
        (
            "pod-usage-memory-bytes".into(),
            fixture([512.0, 1024.0, 1000.0, 1.0]),
        ),
    ])
}

fn fixture_period() -> Period {
    period("2026-01-01T10:00:00Z", "2026-01-01T10:02:00Z")
}

/// The cells of a report's rows, as display strings, for compact comparison.
fn cells(table: &Table) -> Vec<Vec<String>> {
    table
        .rows
        .iter()
        .map(|row| {
            row.iter()
                .zip(&table.columns)
                .filter(|(_, c)| !c.table_hidden)
                .map(|(v, _)| match v {
                    Value::Text(s) => s.clone(),
                    Value::Double(f) => format!("{f}"),
                    Value::Bigint(i) => i.to_string(),
                    Value::Timestamp(t) => t.to_string(),
                    Value::Null => "NULL".into(),
                    Value::Map(m) => format!("{m:?}"),
                })
                .collect()
        })
        .collect()
}

#[test]
fn pod_queries_integrate_each_pod_with_a_node_over_the_period() {
    let catalog = builtin::catalog();
    let inputs = fixture_inputs();
    let (s, e) = ("2026-01-01T10:00:00Z", "2026-01-01T10:02:00Z");
    // Two samples per pod inside the period, 60 s each: amount × 120 s.
    let cases: &[(&str, &str, [&str; 3])] = &[
        (
            "pod-cpu-request",
            "pod_request_cpu_core_seconds",
            ["60", "30", "240"],
        ),
        (
            "pod-cpu-usage",
            "pod_usage_cpu_core_seconds",
            ["15", "30", "180"],
        ),
        (
            "pod-memory-request",
            "pod_request_memory_byte_seconds",
            ["122880", "245760", "491520"],
        ),
        (
            "pod-memory-usage",
            "pod_usage_memory_byte_seconds",
            ["61440", "122880", "120000"],
        ),
    ];
    for (query, column, [p1, p2, q]) in cases {
        let table = run(&catalog, query, &inputs, fixture_period()).unwrap();
        let names: Vec<&str> = table.columns.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "period_start",
                "period_end",
                "pod",
                "namespace",
                "node",
                *column
            ]
        );
        assert_eq!(
            cells(&table),
            [
                [s, e, "p1", "a", "n1", p1],
                [s, e, "p2", "a", "n2", p2],
                [s, e, "q", "b", "n1", q],
            ],
            "{query}"
        );
    }
}

#[test]
fn namespace_queries_sum_their_pods() {
    let catalog = builtin::catalog();
    let inputs = fixture_inputs();
    let (s, e) = ("2026-01-01T10:00:00Z", "2026-01-01T10:02:00Z");
    let cases: &[(&str, [&str; 2])] = &[
        ("namespace-cpu-request", ["90", "240"]),
        ("namespace-cpu-usage", ["45", "180"]),
        ("namespace-memory-request", ["368640", "491520"]),
        ("namespace-memory-usage", ["184320", "120000"]),
    ];
    for (query, [a, b]) in cases {
        let table = run(&catalog, query, &inputs, fixture_period()).unwrap();
        assert_eq!(cells(&table), [[s, e, "a", a], [s, e, "b", b]], "{query}");
    }
}

#[test]
fn cluster_usage_queries_total_and_average_per_step() {
    let catalog = builtin::catalog();
    let inputs = fixture_inputs();
    let (s, e) = ("2026-01-01T10:00:00Z", "2026-01-01T10:02:00Z");
    // CPU per step: 0.125 + 0.25 + 1.5 = 1.875 cores (the node-less pod is out), 112.5
    // core-seconds; two steps in the period: total 225, average 1.875 cores, 3 pods.
    // (Amounts exact in binary, so the sums are exact.)
    let table = run(&catalog, "cluster-cpu-usage", &inputs, fixture_period()).unwrap();
    let names: Vec<&str> = table.columns.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "period_start",
            "period_end",
            "total_cluster_usage_cpu_core_seconds",
            "avg_cluster_usage_cpu_cores",
            "avg_pod_count"
        ]
    );
    let row = &table.rows[0];
    assert_eq!(table.rows.len(), 1);
    assert_eq!(cells(&table)[0][..2], [s, e]);
    let num = |v: &Value| match v {
        Value::Double(f) => *f,
        other => panic!("not a double: {other:?}"),
    };
    assert_eq!(num(&row[2]), 225.0);
    assert_eq!(num(&row[3]), 1.875);
    assert_eq!(num(&row[4]), 3.0);
    // Memory per step: 512 + 1024 + 1000 = 2536 bytes; ×60 s ×2 steps = 304320 byte-seconds.
    let table = run(&catalog, "cluster-memory-usage", &inputs, fixture_period()).unwrap();
    assert_eq!(cells(&table), [[s, e, "304320", "2536", "3"]]);
}

#[test]
fn a_report_prints_as_metering_csv() {
    let catalog = builtin::catalog();
    let table = run(
        &catalog,
        "namespace-cpu-request",
        &fixture_inputs(),
        fixture_period(),
    )
    .unwrap();
    assert_eq!(
        render(&table, Format::Csv),
        "period_start,period_end,namespace,pod_request_cpu_core_seconds\n\
         2026-01-01 10:00:00 +0000 UTC,2026-01-01 10:02:00 +0000 UTC,a,90.000000\n\
         2026-01-01 10:00:00 +0000 UTC,2026-01-01 10:02:00 +0000 UTC,b,240.000000\n"
    );
    // The raw view's hidden `labels` column is left out of every format.
    let raw = run(
        &catalog,
        "pod-cpu-request-raw",
        &fixture_inputs(),
        fixture_period(),
    )
    .unwrap();
    assert!(raw.column_index("labels").is_some());
    assert!(!render(&raw, Format::Json).contains("labels"));
    assert!(render(&raw, Format::Csv).starts_with("pod,namespace,node,pod_request_cpu_cores,"));
}

#[test]
fn a_query_naming_a_column_that_does_not_exist_fails_with_sqlites_message() {
    let mut catalog = builtin::catalog();
    let mut query = catalog.query("namespace-cpu-request").unwrap().clone();
    query.sql = query.sql.replace("GROUP BY namespace", "GROUP BY namespce");
    catalog.add_query(query);
    let err = run(
        &catalog,
        "namespace-cpu-request",
        &fixture_inputs(),
        fixture_period(),
    )
    .unwrap_err()
    .to_string();
    assert_eq!(
        err,
        r#"running ReportQuery "namespace-cpu-request": no such column: namespce"#
    );
}

#[test]
fn a_declared_column_the_sql_does_not_return_is_an_error() {
    let mut catalog = builtin::catalog();
    let mut query = catalog.query("namespace-cpu-request").unwrap().clone();
    query.sql = query
        .sql
        .replace("AS pod_request_cpu_core_seconds", "AS request_core_seconds");
    catalog.add_query(query);
    let err = run(
        &catalog,
        "namespace-cpu-request",
        &fixture_inputs(),
        fixture_period(),
    )
    .unwrap_err();
    assert!(matches!(err, ReportError::MissingColumn { .. }));
    assert_eq!(
        err.to_string(),
        "ReportQuery \"namespace-cpu-request\" declares column \"pod_request_cpu_core_seconds\", \
         which its SQL does not return (it returns: period_start, period_end, namespace, \
         request_core_seconds)"
    );
}

#[test]
fn a_missing_input_unknown_query_or_empty_period_is_named() {
    let catalog = builtin::catalog();
    let mut inputs = fixture_inputs();
    inputs.remove("pod-request-memory-bytes");
    let err = run(&catalog, "pod-memory-request", &inputs, fixture_period())
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "ReportQuery \"pod-memory-request-raw\" reads data source \"pod-request-memory-bytes\", \
         but no input is named so (inputs given: pod-request-cpu-cores, pod-usage-cpu-cores, \
         pod-usage-memory-bytes)"
    );
    let err = run(&catalog, "pod-gpu-request", &inputs, fixture_period())
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with(
            "unknown ReportQuery \"pod-gpu-request\"; known queries: cluster-cpu-capacity, "
        ),
        "{err}"
    );
    let p = fixture_period();
    let err = run(
        &catalog,
        "pod-cpu-request",
        &inputs,
        Period {
            start: p.end,
            end: p.start,
        },
    );
    assert!(matches!(err, Err(ReportError::EmptyPeriod { .. })));
}

#[test]
fn a_malformed_sample_is_named_by_file_row_and_field() {
    let text = r#"[
        {"amount": 1, "timestamp": "2026-01-01T10:00:00Z", "stepSize": 60000000000, "labels": {}},
        {"amount": 1, "timestamp": "2026-01-01T10:00:00Z", "stepSize": 60000000000, "labels": {"pod": 7}}
    ]"#;
    let err = parse_samples("pod-request-cpu-cores.json", text)
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        r#"pod-request-cpu-cores.json: row 1: field "labels": label "pod" is a number, not a string"#
    );
}

#[test]
fn a_catalog_of_ones_own_queries_runs_too() {
    let mut catalog = Catalog::default();
    catalog.add_data_source(opkit_metering::DataSource {
        name: "pod-request-cpu-cores".into(),
        kind: opkit_metering::DataSourceKind::Samples,
    });
    let query: opkit_metering::ReportQuery = serde_json::from_value(serde_json::json!({
        "name": "busiest-node",
        "columns": [{"name": "node", "type": "varchar"}, {"name": "samples", "type": "bigint"}],
        "inputs": [{"name": "Src", "type": "ReportDataSource", "default": "pod-request-cpu-cores"}],
        "query": "SELECT labels ->> '$.node' AS node, count(*) AS samples FROM {{Src}} \
                  WHERE node IS NOT NULL GROUP BY node ORDER BY samples DESC, node LIMIT 1"
    }))
    .unwrap();
    catalog.add_query(query);
    let table = run(
        &catalog,
        "busiest-node",
        &fixture_inputs(),
        fixture_period(),
    )
    .unwrap();
    assert_eq!(table.rows, [[Value::Text("n1".into()), Value::Bigint(6)]]);
}

/// A Memcached custom resource owning a Deployment owning a ReplicaSet, scaled 1 → 3 → 0:
/// pod m0 from 12:00:00 to 12:30:00; pods m1 and m2 from 12:10:00 to 12:30:00 (scaled to 3 at
/// 12:10, to 0 at 12:30); each requests 100m CPU and 64 MiB. A pod `other` in the same
/// namespace has no owner.
///
/// Over 12:00–13:00, by hand: m0 1800 s × 0.1 = 180 core-seconds; m1 and m2 1200 s × 0.1 = 120
/// each; the Memcached 180 + 120 + 120 = 420 core-seconds, and (1800 + 1200 + 1200) s × 64 MiB
/// = 4200 × 67108864 = 281857228800 byte-seconds. `other` (500m, 12:00 to 12:06) adds 360 s ×
/// 0.5 = 180 core-seconds to the namespace only: 600.
/// Over 12:05–12:15: m0 600 s, m1 and m2 300 s each → 1200 s × 0.1 = 120 core-seconds.
#[test]
fn a_memcached_scaled_one_three_zero_uses_exactly_its_core_seconds() {
    let at = |hms: &str| ts(&format!("2026-02-01T{hms}Z"));
    let owner = |uid: &str, group: &str, kind: &str, up: Option<&str>| Owner {
        uid: uid.into(),
        group_kind: GroupKind {
            group: group.into(),
            kind: kind.into(),
        },
        namespace: "cache".into(),
        name: format!("{}-{uid}", kind.to_lowercase()),
        owner: up.map(Into::into),
        created: None,
        deleted: None,
    };
    let pod = |name: &str, owner: Option<&str>, cpu: u64, from: &str, to: &str| PodLife {
        uid: format!("uid-{name}"),
        namespace: "cache".into(),
        name: name.into(),
        owner: owner.map(Into::into),
        node: Some("n1".into()),
        cpu_millicores: cpu,
        memory_bytes: 64 << 20,
        created: at(from),
        deleted: Some(at(to)),
        readiness: vec![(at(from), true)],
    };
    let history = History {
        owners: vec![
            owner("cr", "cache.example.com", "Memcached", None),
            owner("dep", "apps", "Deployment", Some("cr")),
            owner("rs", "apps", "ReplicaSet", Some("dep")),
        ],
        pods: vec![
            pod("m0", Some("rs"), 100, "12:00:00", "12:30:00"),
            pod("m1", Some("rs"), 100, "12:10:00", "12:30:00"),
            pod("m2", Some("rs"), 100, "12:10:00", "12:30:00"),
            pod("other", None, 500, "12:00:00", "12:06:00"),
        ],
        segments: Vec::new(),
    };
    let metered: BTreeSet<GroupKind> = [GroupKind {
        group: "cache.example.com".into(),
        kind: "Memcached".into(),
    }]
    .into();
    let totals = lifetime::integrate(
        &history,
        &metered,
        Basis::Existence,
        at("12:00:00"),
        at("13:00:00"),
    )
    .unwrap();
    assert_eq!(totals.resources.len(), 1);
    let (cr, usage) = totals.resources.iter().next().unwrap();
    assert_eq!(cr.name, "memcached-cr");
    assert_eq!(usage.cpu_core_seconds(), 420.0);
    assert_eq!(usage.memory_byte_seconds(), 281_857_228_800.0);
    assert_eq!(totals.namespaces["cache"].cpu_core_seconds(), 600.0);
    let m1 = totals.pods.iter().find(|(k, _)| k.name == "m1").unwrap().1;
    assert_eq!(m1.cpu_core_seconds(), 120.0);

    // The same history through the tables and the SQL queries gives the same integrals.
    let mut catalog = builtin::catalog();
    builtin::add_history(&mut catalog, &metered);
    let period = Period {
        start: at("12:00:00"),
        end: at("13:00:00"),
    };
    let inputs = tables::tables(&history, &metered, Basis::Existence, period).unwrap();
    let report = run(&catalog, "memcached-cpu-request", &inputs, period).unwrap();
    assert_eq!(
        render(&report, Format::Csv),
        "period_start,period_end,namespace,name,pods,cpu_request_core_seconds\n\
         2026-02-01 12:00:00 +0000 UTC,2026-02-01 13:00:00 +0000 UTC,cache,memcached-cr,3,420.000000\n"
    );
    let report = run(&catalog, "memcached-memory-request", &inputs, period).unwrap();
    assert_eq!(report.rows[0][5], Value::Double(281_857_228_800.0));
    let report = run(&catalog, "namespace-cpu-request", &inputs, period).unwrap();
    assert_eq!(report.rows[0][3], Value::Double(600.0));
    let report = run(&catalog, "memcached-objects", &inputs, period).unwrap();
    assert_eq!(
        render(&report, Format::Csv),
        "period_start,period_end,namespace,name,object_kind,objects,object_seconds\n\
         2026-02-01 12:00:00 +0000 UTC,2026-02-01 13:00:00 +0000 UTC,cache,memcached-cr,Pod,3,4200.000000\n"
    );

    let window = lifetime::integrate(
        &history,
        &metered,
        Basis::Existence,
        at("12:05:00"),
        at("12:15:00"),
    )
    .unwrap();
    assert_eq!(
        window.resources.values().next().unwrap().cpu_core_seconds(),
        120.0
    );
}

/// A claim of 1 GiB bound at 12:00, resized to 2 GiB at 12:30 and deleted at 12:45; node n1 of
/// 4 cores all hour (on AWS), n2 of 2 cores from 12:30. Over 12:00–13:00: the claim requested
/// 1 GiB × 1800 s + 2 GiB × 900 s = 3600 GiB-seconds; n1 14,400 core-seconds, n2 3,600, the
/// cluster 18,000 (5 cores and 1.5 nodes on average).
#[test]
fn pvc_and_node_queries_integrate_sizes_exactly_across_a_resize_a_deletion_and_a_join() {
    const GIB: f64 = 1_073_741_824.0;
    let at = |hms: &str| ts(&format!("2026-02-01T{hms}Z"));
    let segment =
        |table: &str, labels: &[(&str, &str)], amount: f64, from: &str, to: Option<&str>| Segment {
            table: table.into(),
            labels: labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            amount,
            from: at(from),
            to: to.map(at),
        };
    let claim = [
        ("namespace", "db"),
        ("persistentvolumeclaim", "data"),
        ("volumename", "pv-1"),
        ("storageclass", "fast"),
    ];
    let unbound = [("namespace", "db"), ("persistentvolumeclaim", "pending")];
    let n1 = [("node", "n1"), ("provider_id", "aws:///us-east-1a/i-0abc")];
    let n2 = [("node", "n2")];
    let history = History {
        segments: vec![
            segment(
                tables::PVC_REQUEST,
                &claim,
                GIB,
                "12:00:00",
                Some("12:30:00"),
            ),
            segment(
                tables::PVC_REQUEST,
                &claim,
                2.0 * GIB,
                "12:30:00",
                Some("12:45:00"),
            ),
            segment(tables::PVC_REQUEST, &unbound, GIB, "12:00:00", None),
            segment(
                tables::PVC_CAPACITY,
                &claim[..2],
                GIB,
                "12:00:00",
                Some("12:45:00"),
            ),
            segment(tables::NODE_CPU_CAPACITY, &n1, 4.0, "11:00:00", None),
            segment(tables::NODE_CPU_CAPACITY, &n2, 2.0, "12:30:00", None),
            segment(
                tables::NODE_MEMORY_CAPACITY,
                &n1,
                8.0 * GIB,
                "11:00:00",
                None,
            ),
        ],
        ..History::default()
    };
    let period = Period {
        start: at("12:00:00"),
        end: at("13:00:00"),
    };
    let inputs = tables::tables(&history, &BTreeSet::new(), Basis::Existence, period).unwrap();
    let catalog = builtin::catalog();
    let csv = |query: &str| render(&run(&catalog, query, &inputs, period).unwrap(), Format::Csv);
    let span = "2026-02-01 12:00:00 +0000 UTC,2026-02-01 13:00:00 +0000 UTC";
    // The unbound claim has no volume, and Metering's request query leaves it out.
    assert_eq!(
        csv("persistentvolumeclaim-request"),
        format!(
            "period_start,period_end,persistentvolumeclaim,persistentvolume,namespace,storageclass,\
             data_start,data_end,volume_request_storage_byte_seconds\n\
             {span},data,pv-1,db,fast,2026-02-01 12:00:00 +0000 UTC,2026-02-01 12:30:00 +0000 UTC,\
             3865470566400.000000\n"
        )
    );
    assert!(csv("namespace-persistentvolumeclaim-request").ends_with(",3865470566400.000000\n"));
    assert!(csv("cluster-persistentvolumeclaim-request").ends_with(",3865470566400.000000\n"));
    assert_eq!(
        csv("persistentvolumeclaim-capacity"),
        format!(
            "period_start,period_end,namespace,persistentvolumeclaim,\
             persistentvolumeclaim_capacity_byte_seconds\n{span},db,data,2899102924800.000000\n"
        )
    );
    assert_eq!(
        csv("node-cpu-capacity"),
        format!(
            "period_start,period_end,node,resource_id,node_capacity_cpu_core_seconds\n\
             {span},n1,i-0abc,14400.000000\n{span},n2,,3600.000000\n"
        )
    );
    assert_eq!(
        csv("cluster-cpu-capacity"),
        format!(
            "period_start,period_end,total_cluster_capacity_cpu_core_seconds,\
             avg_cluster_capacity_cpu_cores,avg_node_count\n{span},18000.000000,5.000000,1.500000\n"
        )
    );
    let memory = run(&catalog, "cluster-memory-capacity", &inputs, period).unwrap();
    assert_eq!(memory.rows[0][2], Value::Double(8.0 * GIB * 3600.0));
    // Allocatable was never reported: the report is empty, not an error.
    assert_eq!(csv("node-cpu-allocatable"), "");
}

/// Reconciles per custom resource from the runtime's per-object counters as a Prometheus source
/// gives them (reconciles per step, by result; seconds per step): cache1 reconciled 3 + 2 times
/// with 1 error at 10:00 and 10:01, cache2 once; a Widget's reconciles and the 10:02 step (after
/// the period) are left out.
#[test]
fn kind_reconciles_sums_each_resources_reconciles_errors_and_time_in_the_period() {
    let cr = |name: &'static str, result: &'static str| {
        vec![
            ("group", "cache.example.com"),
            ("kind", "Memcached"),
            ("namespace", "default"),
            ("name", name),
            ("result", result),
        ]
    };
    let widget = [
        ("group", "test.opkit.dev"),
        ("kind", "Widget"),
        ("namespace", "default"),
        ("name", "cache1"),
        ("result", "success"),
    ];
    let reconciles = vec![
        sample(2.0, "2026-02-01T10:00:00Z", &cr("cache1", "success")),
        sample(1.0, "2026-02-01T10:00:00Z", &cr("cache1", "error")),
        sample(2.0, "2026-02-01T10:01:00Z", &cr("cache1", "success")),
        sample(1.0, "2026-02-01T10:01:00Z", &cr("cache2", "success")),
        sample(7.0, "2026-02-01T10:02:00Z", &cr("cache2", "success")),
        sample(9.0, "2026-02-01T10:01:00Z", &widget),
    ];
    let seconds = vec![
        sample(0.25, "2026-02-01T10:00:00Z", &cr("cache1", "")[..4]),
        sample(0.5, "2026-02-01T10:01:00Z", &cr("cache1", "")[..4]),
        sample(0.125, "2026-02-01T10:01:00Z", &cr("cache2", "")[..4]),
    ];
    let inputs: BTreeMap<String, Vec<Sample>> = [
        (builtin::RESOURCE_RECONCILES.to_owned(), reconciles),
        (builtin::RESOURCE_RECONCILE_SECONDS.to_owned(), seconds),
    ]
    .into();
    let mut catalog = builtin::catalog();
    let memcached = GroupKind {
        group: "cache.example.com".into(),
        kind: "Memcached".into(),
    };
    builtin::add_history(&mut catalog, &[memcached].into());
    let period = Period {
        start: ts("2026-02-01T10:00:00Z"),
        end: ts("2026-02-01T10:02:00Z"),
    };
    let report = run(&catalog, "memcached-reconciles", &inputs, period).unwrap();
    assert_eq!(
        render(&report, Format::Csv),
        "period_start,period_end,namespace,name,reconciles,errors,reconcile_seconds\n\
         2026-02-01 10:00:00 +0000 UTC,2026-02-01 10:02:00 +0000 UTC,default,cache1,5.000000,1.000000,0.750000\n\
         2026-02-01 10:00:00 +0000 UTC,2026-02-01 10:02:00 +0000 UTC,default,cache2,1.000000,0.000000,0.125000\n"
    );
    // Without the Prometheus sources the report names what it misses.
    let err = run(&catalog, "memcached-reconciles", &BTreeMap::new(), period).unwrap_err();
    assert!(
        err.to_string()
            .contains("reads data source \"resource-reconciles\""),
        "{err}"
    );
}
