//! Metering over a generated month: the per-custom-resource and namespace reports of issue 21's
//! benchmark, run as a `daily` Report runs them (the day's tables from the history, then
//! SQLite) and once for the whole month, with their time and this process's peak memory.
//!
//! The history is generated, not recorded: `resources` Memcacheds spread over 20 namespaces,
//! each owning a Deployment and a ReplicaSet whose pods come and go (1–3 started a day at random
//! instants, living 1–36 h, 100–500 m CPU and 64–512 MiB each) over `days` days, from a fixed
//! seed, so every run reports on the same history. The figures are checked before they are
//! printed: the SQL's month total per custom resource must equal the exact integral from the
//! lifetimes, and the days must sum to the month.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use anyhow::{Context, ensure};
use jiff::{SignedDuration, Timestamp};
use opkit_metering::lifetime::{self, Basis, GroupKind, History, Owner, PodLife};
use opkit_metering::{Catalog, Period, Table, Value, builtin, tables};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::scenarios::Outcome;
use crate::stats::{Samples, memory_kib, mib, ms};
use crate::{Options, Row, Scenario};

/// The metered kind.
const GROUP: &str = "cache.example.com";
const KIND: &str = "Memcached";
/// The per-custom-resource query and the namespace query every period runs.
const QUERIES: [&str; 3] = [
    "memcached-cpu-request",
    "memcached-memory-request",
    "namespace-cpu-request",
];
const NAMESPACES: usize = 20;
const NODES: usize = 10;
const SEED: u64 = 21;

/// The month's first instant.
fn month_start() -> Timestamp {
    "2030-01-01T00:00:00Z".parse().expect("a valid instant")
}

fn memcached() -> GroupKind {
    GroupKind {
        group: GROUP.into(),
        kind: KIND.into(),
    }
}

/// A history of `resources` Memcacheds over `days` days from [`month_start`] (see the module
/// docs), the same for the same arguments.
pub fn generate(resources: usize, days: usize) -> History {
    let mut rng = StdRng::seed_from_u64(SEED);
    let start = month_start();
    let end = start + SignedDuration::from_hours(24 * days as i64);
    let mut history = History::default();
    for i in 0..resources {
        let namespace = format!("tenant-{:02}", i % NAMESPACES);
        let name = format!("cache-{i:04}");
        let owner =
            |uid: String, kind: &str, group: &str, name: String, owner: Option<String>| Owner {
                uid,
                group_kind: GroupKind {
                    group: group.into(),
                    kind: kind.into(),
                },
                namespace: namespace.clone(),
                name,
                owner,
                created: Some(start),
                deleted: None,
            };
        let (cr, deployment, replicaset) =
            (format!("cr-{i}"), format!("deploy-{i}"), format!("rs-{i}"));
        history
            .owners
            .push(owner(cr.clone(), KIND, GROUP, name.clone(), None));
        history.owners.push(owner(
            deployment.clone(),
            "Deployment",
            "apps",
            name.clone(),
            Some(cr),
        ));
        history.owners.push(owner(
            replicaset.clone(),
            "ReplicaSet",
            "apps",
            format!("{name}-7d9f"),
            Some(deployment),
        ));
        let cpu_millicores = rng.random_range(1..=5) * 100;
        let memory_bytes = rng.random_range(1..=8) * 64 * 1024 * 1024;
        for day in 0..days {
            let day_start = start + SignedDuration::from_hours(24 * day as i64);
            for n in 0..rng.random_range(1..=3) {
                let created = day_start + SignedDuration::from_secs(rng.random_range(0..86_400));
                let deleted = created + SignedDuration::from_secs(rng.random_range(3_600..129_600));
                history.pods.push(PodLife {
                    uid: format!("pod-{i}-{day}-{n}"),
                    namespace: namespace.clone(),
                    name: format!("{name}-7d9f-{day:02}{n}"),
                    owner: Some(replicaset.clone()),
                    node: Some(format!("node-{}", rng.random_range(0..NODES))),
                    cpu_millicores,
                    memory_bytes,
                    created,
                    // Pods still running at the month's end have not gone yet.
                    deleted: (deleted < end).then_some(deleted),
                    readiness: Vec::new(),
                });
            }
        }
    }
    history
}

/// What running the queries over one period gave.
struct PeriodRun {
    /// Building the tables from the history.
    tables: Duration,
    /// Running the queries (SQLite, one in-memory database each).
    queries: Duration,
    /// Requested core-seconds per custom resource (`namespace/name`).
    cpu: BTreeMap<String, f64>,
    /// Rows of every query.
    rows: usize,
}

fn run_period(
    catalog: &Catalog,
    history: &History,
    metered: &BTreeSet<GroupKind>,
    period: Period,
) -> anyhow::Result<PeriodRun> {
    let t0 = Instant::now();
    let inputs = tables::tables(history, metered, Basis::Existence, period)?;
    let t_tables = t0.elapsed();
    let mut cpu = BTreeMap::new();
    let mut rows = 0;
    for query in QUERIES {
        let table = opkit_metering::run(catalog, query, &inputs, period)
            .with_context(|| format!("{query} for {} to {}", period.start, period.end))?;
        rows += table.rows.len();
        if query == "memcached-cpu-request" {
            cpu = per_resource(&table, "cpu_request_core_seconds")?;
        }
    }
    Ok(PeriodRun {
        tables: t_tables,
        queries: t0.elapsed() - t_tables,
        cpu,
        rows,
    })
}

/// `namespace/name` → the number in `column`.
fn per_resource(table: &Table, column: &str) -> anyhow::Result<BTreeMap<String, f64>> {
    let col = |name: &str| {
        table
            .column_index(name)
            .with_context(|| format!("no column {name}"))
    };
    let (ns, name, value) = (col("namespace")?, col("name")?, col(column)?);
    table
        .rows
        .iter()
        .map(|row| match (&row[ns], &row[name], &row[value]) {
            (Value::Text(ns), Value::Text(name), Value::Double(v)) => {
                Ok((format!("{ns}/{name}"), *v))
            }
            other => anyhow::bail!("unexpected row {other:?}"),
        })
        .collect()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

/// The `metering` scenario.
pub async fn metering(options: &Options) -> anyhow::Result<Outcome> {
    let (resources, days) = (
        options.counts.metering_resources,
        options.counts.metering_days,
    );
    // The work is synchronous (SQLite): off the async runtime's threads.
    tokio::task::spawn_blocking(move || measure(resources, days)).await?
}

fn measure(resources: usize, days: usize) -> anyhow::Result<Outcome> {
    let s = Scenario::Metering;
    let mut out = Outcome::default();
    let pid = std::process::id();
    let rss_before = memory_kib(pid).map(|(rss, _)| rss);
    let t0 = Instant::now();
    let history = generate(resources, days);
    let generated = t0.elapsed();
    let metered = BTreeSet::from([memcached()]);
    let mut catalog = builtin::catalog();
    builtin::add_history(&mut catalog, &metered);

    let start = month_start();
    let day = SignedDuration::from_hours(24);
    let mut daily = Samples::with_capacity(days);
    let (mut daily_total, mut daily_tables) = (Duration::ZERO, Duration::ZERO);
    let mut summed: BTreeMap<String, f64> = BTreeMap::new();
    let mut daily_rows = 0;
    for d in 0..days {
        let period = Period {
            start: start + day * d as i32,
            end: start + day * (d as i32 + 1),
        };
        let run = run_period(&catalog, &history, &metered, period)?;
        daily.push(run.tables + run.queries);
        daily_total += run.tables + run.queries;
        daily_tables += run.tables;
        daily_rows += run.rows;
        for (k, v) in run.cpu {
            *summed.entry(k).or_default() += v;
        }
    }
    let month = Period {
        start,
        end: start + day * days as i32,
    };
    let monthly = run_period(&catalog, &history, &metered, month)?;

    // The figures are right before they are printed.
    let exact = lifetime::integrate(&history, &metered, Basis::Existence, month.start, month.end)?;
    ensure!(
        exact.resources.len() == resources && monthly.cpu.len() == resources,
        "expected {resources} custom resources in the month's report, got {} (lifetimes: {})",
        monthly.cpu.len(),
        exact.resources.len()
    );
    for (key, usage) in &exact.resources {
        let name = format!("{}/{}", key.namespace, key.name);
        let sql = monthly.cpu.get(&name).copied().unwrap_or_default();
        ensure!(
            close(sql, usage.cpu_core_seconds()),
            "{name}: the month's report says {sql} core-seconds, the lifetimes {}",
            usage.cpu_core_seconds()
        );
        let days_sum = summed.get(&name).copied().unwrap_or_default();
        ensure!(
            close(days_sum, sql),
            "{name}: the days sum to {days_sum} core-seconds, the month is {sql}"
        );
    }
    let peak = memory_kib(pid).map(|(_, hwm)| hwm);

    out.rows.push(Row::info(
        s,
        format!(
            "history generated: {resources} Memcacheds, {} pods over {days} days",
            history.pods.len()
        ),
        ms(generated),
    ));
    out.rows.push(Row::info(
        s,
        format!(
            "daily report ({}), median of {days} days",
            QUERIES.join(" + ")
        ),
        ms(daily.median()),
    ));
    out.rows
        .push(Row::info(s, "  daily report, slowest day", ms(daily.max())));
    out.rows.push(Row::info(
        s,
        format!("  all {days} days ({daily_rows} rows), of which tables from the history"),
        format!("{} ({})", ms(daily_total), ms(daily_tables)),
    ));
    out.rows.push(Row::info(
        s,
        format!("one report over all {days} days ({} rows)", monthly.rows),
        ms(monthly.tables + monthly.queries),
    ));
    out.rows.push(Row::info(
        s,
        "  of which tables from the history",
        ms(monthly.tables),
    ));
    if let (Some(before), Some(peak)) = (rss_before, peak) {
        out.rows.push(Row::info(
            s,
            "peak RSS of this process (VmHWM; RSS before the history)",
            format!("{} ({})", mib(peak), mib(before)),
        ));
    }
    out.notes.push(format!(
        "metering: the month's per-Memcached core-seconds equal the lifetimes' exact integral and the {days} daily reports' sum"
    ));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_generated_history_is_deterministic_and_shaped_as_described() {
        let a = generate(30, 3);
        assert_eq!(a, generate(30, 3));
        assert_eq!(a.owners.len(), 90);
        // 1–3 pods per resource and day.
        assert!((90..=270).contains(&a.pods.len()), "{}", a.pods.len());
        let namespaces: BTreeSet<_> = a.pods.iter().map(|p| p.namespace.as_str()).collect();
        assert_eq!(namespaces.len(), NAMESPACES);
        let end = month_start() + SignedDuration::from_hours(72);
        for pod in &a.pods {
            assert!(pod.created >= month_start() && pod.created < end);
            if let Some(deleted) = pod.deleted {
                let lived = deleted.duration_since(pod.created);
                assert!(lived >= SignedDuration::from_hours(1), "{pod:?}");
                assert!(lived < SignedDuration::from_hours(36), "{pod:?}");
            }
        }
        assert!(a.pods.iter().any(|p| p.deleted.is_none()));
    }

    #[test]
    fn a_small_month_reports_every_resource_and_the_days_sum_to_the_month() {
        let outcome = measure(12, 3).unwrap();
        assert!(
            outcome
                .rows
                .iter()
                .any(|r| r.figure.contains("12 Memcacheds")),
            "{:?}",
            outcome.rows
        );
    }
}
