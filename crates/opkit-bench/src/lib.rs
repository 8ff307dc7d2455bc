//! Benchmarks of opkit's embedded control plane: start-up, create throughput, GET/LIST and watch
//! latency, server memory, server-side apply next to create and update, garbage collection of
//! many dependents, a large Deployment rolled out by the simulated workload controllers, and
//! the cost of CRD conversion in a LIST, chart rendering next to `helm template`, and the chart
//! operator deploying many releases, the KUDO manager running real packages' plans, the OLM
//! lifecycle controllers serving a catalog of 1,000 bundles and installing from it, and
//! metering reports over a generated month of history —
//! over real HTTPS with real kube-rs clients, on loopback.
//!
//! The binary (`opkit-bench`) runs [`run`] with [`Counts::full`] or [`Counts::quick`] and prints
//! the [`Report`]; the smoke test runs it with [`Counts::tiny`] against an in-process server.

pub mod admission;
pub mod ansible_operator;
pub mod chart_operator;
pub mod charts;
pub mod cluster;
pub mod conversion;
pub mod e2e;
pub mod kudo;
pub mod metering;
pub mod olm;
pub mod scenarios;
pub mod server;
pub mod stats;

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::{Duration, Instant};

pub use server::ServerMode;

/// A benchmark scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scenario {
    /// `ControlPlane::start` → `/readyz` (ephemeral and durable) and `opkit up --ephemeral` → ready line.
    Startup,
    /// ConfigMap creates per second with 1 and with N concurrent clients, durable store.
    Creates,
    /// GET latency of one object and LIST latency of many.
    GetList,
    /// Write acknowledged → watch event received.
    Watch,
    /// Server memory with many custom resources stored.
    Memory,
    /// Server-side apply next to create and update.
    Writes,
    /// The garbage collector deleting many dependents.
    GarbageCollection,
    /// A large Deployment to fully available, then a rolling update.
    Rollout,
    /// Creates with no admission, one validating webhook, one ValidatingAdmissionPolicy.
    Admission,
    /// A LIST of custom resources in their storage version, converted with `strategy: None`,
    /// and converted by a conversion webhook.
    Conversion,
    /// Chart renders in-process and `opkit chart template` next to `helm template`.
    Charts,
    /// Many custom resources of the `helm create` chart brought to `Deployed` by the chart
    /// operator; API writes per steady-state reconcile.
    ChartOperator,
    /// The Ansible operator with operator-sdk's Memcached role: one reconcile (wall and CPU
    /// time) and many custom resources to `Successful` (needs the Ansible venv).
    AnsibleOperator,
    /// The KUDO manager: zookeeper's deploy plan to COMPLETE, and many first-operator
    /// instances installed at once (needs the KUDO package corpus).
    Kudo,
    /// A generated catalog of many bundles pushed to a real registry, to `Serving=True`;
    /// resolution against it; a `ClusterExtension` of it to `Installed=True` (needs Debian's
    /// `docker-registry`).
    Olm,
    /// `opkit test` in a scaffolded operator project: a kuttl suite on the embedded plane next
    /// to the same suite with `--kubeconfig` against `opkit up` (needs the `opkit` binary).
    E2e,
    /// Metering over a generated month: the per-custom-resource and namespace reports for each
    /// day and for the month over many custom resources (time, peak memory).
    Metering,
}

impl Scenario {
    /// All scenarios, in the order they run.
    pub const ALL: [Scenario; 17] = [
        Scenario::Startup,
        Scenario::Creates,
        Scenario::GetList,
        Scenario::Watch,
        Scenario::Memory,
        Scenario::Writes,
        Scenario::GarbageCollection,
        Scenario::Rollout,
        Scenario::Admission,
        Scenario::Conversion,
        Scenario::Charts,
        Scenario::ChartOperator,
        Scenario::AnsibleOperator,
        Scenario::Kudo,
        Scenario::Olm,
        Scenario::E2e,
        Scenario::Metering,
    ];

    /// The name used by `--scenario`.
    pub fn name(self) -> &'static str {
        match self {
            Scenario::Startup => "startup",
            Scenario::Creates => "creates",
            Scenario::GetList => "get-list",
            Scenario::Watch => "watch",
            Scenario::Memory => "memory",
            Scenario::Writes => "writes",
            Scenario::GarbageCollection => "gc",
            Scenario::Rollout => "rollout",
            Scenario::Admission => "admission",
            Scenario::Conversion => "conversion",
            Scenario::Charts => "charts",
            Scenario::ChartOperator => "chart-operator",
            Scenario::AnsibleOperator => "ansible-operator",
            Scenario::Kudo => "kudo",
            Scenario::Olm => "olm",
            Scenario::E2e => "e2e",
            Scenario::Metering => "metering",
        }
    }

    /// The bound on the scenario's wall time: `counts.scenario_timeout`, plus for the Ansible
    /// operator an allowance per custom resource (a run takes 5–25 s of wall time on two
    /// busy cores: Python's start, fact gathering, a connection per `kubernetes.core` task).
    pub fn timeout(self, counts: &Counts) -> Duration {
        match self {
            Scenario::AnsibleOperator => {
                counts.scenario_timeout
                    + Duration::from_secs(30) * (counts.ansible_resources as u32 + 1)
            }
            _ => counts.scenario_timeout,
        }
    }

    /// Parses a `--scenario` name.
    pub fn from_name(name: &str) -> Option<Scenario> {
        Scenario::ALL.into_iter().find(|s| s.name() == name)
    }
}

/// How much work each scenario does.
#[derive(Debug, Clone)]
pub struct Counts {
    /// In-process `ControlPlane::start`s per store kind (after one discarded warm-up).
    pub starts: usize,
    /// `opkit up --ephemeral` spawns (needs the binary).
    pub up_starts: usize,
    /// Creates with one client.
    pub creates_single: usize,
    /// Creates with `concurrency` clients.
    pub creates_concurrent: usize,
    /// Concurrent clients (tasks, each with its own kube-rs client and connection).
    pub concurrency: usize,
    /// Objects in the listed namespace.
    pub list_objects: usize,
    /// GETs of one object.
    pub gets: usize,
    /// LISTs of the whole namespace.
    pub lists: usize,
    /// Watch events (writes, one at a time: creates and updates alternating).
    pub watch_events: usize,
    /// Custom resources stored for the memory reading.
    pub memory_objects: usize,
    /// Writes of each kind (create, update, apply) with one client.
    pub applies_single: usize,
    /// Writes of each kind with `concurrency` clients.
    pub applies_concurrent: usize,
    /// Dependents collected when their owner is deleted.
    pub gc_dependents: usize,
    /// Replicas of the Deployment rolled out.
    pub rollout_replicas: usize,
    /// Custom resources listed by the conversion scenario.
    pub conversion_objects: usize,
    /// LISTs of them in each way (same version, `None`, webhook).
    pub conversion_lists: usize,
    /// Full in-process renders of each chart.
    pub chart_renders: usize,
    /// Runs of `opkit chart template` and of `helm template` per chart.
    pub chart_runs: usize,
    /// Custom resources (releases) the chart operator deploys.
    pub chart_releases: usize,
    /// Custom resources the Ansible operator brings to `Successful` at once.
    pub ansible_resources: usize,
    /// Installs of the zookeeper package timed to deploy COMPLETE.
    pub kudo_runs: usize,
    /// first-operator instances installed at once.
    pub kudo_instances: usize,
    /// Packages of the OLM scenario's catalog.
    pub olm_packages: usize,
    /// Bundles (versions) of each.
    pub olm_versions: usize,
    /// kuttl tests in the e2e scenario's suite.
    pub e2e_tests: usize,
    /// Timed runs of that suite in each way.
    pub e2e_runs: usize,
    /// Custom resources in the metering scenario's generated history.
    pub metering_resources: usize,
    /// Days of that history (one daily report each, then one over them all).
    pub metering_days: usize,
    /// Upper bound on each scenario's wall time.
    pub scenario_timeout: Duration,
}

impl Counts {
    /// The full benchmark.
    pub fn full() -> Counts {
        Counts {
            starts: 30,
            up_starts: 10,
            creates_single: 3_000,
            creates_concurrent: 20_000,
            concurrency: 64,
            list_objects: 10_000,
            gets: 2_000,
            lists: 20,
            watch_events: 2_000,
            memory_objects: 10_000,
            applies_single: 1_000,
            applies_concurrent: 5_000,
            gc_dependents: 1_000,
            rollout_replicas: 100,
            conversion_objects: 1_000,
            conversion_lists: 50,
            chart_renders: 200,
            chart_runs: 10,
            chart_releases: 1_000,
            ansible_resources: 50,
            kudo_runs: 10,
            kudo_instances: 100,
            olm_packages: 100,
            olm_versions: 10,
            e2e_tests: 20,
            e2e_runs: 3,
            metering_resources: 1_000,
            metering_days: 30,
            scenario_timeout: Duration::from_secs(600),
        }
    }

    /// A fast smoke run (well under 30 s on two cores).
    pub fn quick() -> Counts {
        Counts {
            starts: 5,
            up_starts: 3,
            creates_single: 200,
            creates_concurrent: 1_000,
            concurrency: 64,
            list_objects: 500,
            gets: 200,
            lists: 5,
            watch_events: 200,
            memory_objects: 500,
            applies_single: 200,
            applies_concurrent: 1_000,
            gc_dependents: 1_000,
            rollout_replicas: 100,
            conversion_objects: 1_000,
            conversion_lists: 10,
            chart_renders: 20,
            chart_runs: 3,
            chart_releases: 100,
            ansible_resources: 10,
            kudo_runs: 3,
            kudo_instances: 100,
            olm_packages: 20,
            olm_versions: 10,
            e2e_tests: 20,
            e2e_runs: 1,
            metering_resources: 100,
            metering_days: 7,
            scenario_timeout: Duration::from_secs(60),
        }
    }

    /// Tiny counts for the test suite.
    pub fn tiny() -> Counts {
        Counts {
            starts: 2,
            up_starts: 1,
            creates_single: 10,
            creates_concurrent: 40,
            concurrency: 8,
            list_objects: 30,
            gets: 10,
            lists: 3,
            watch_events: 20,
            memory_objects: 20,
            applies_single: 10,
            applies_concurrent: 40,
            gc_dependents: 30,
            rollout_replicas: 5,
            conversion_objects: 20,
            conversion_lists: 3,
            chart_renders: 2,
            chart_runs: 1,
            chart_releases: 3,
            ansible_resources: 2,
            kudo_runs: 1,
            kudo_instances: 3,
            olm_packages: 3,
            olm_versions: 4,
            e2e_tests: 3,
            e2e_runs: 1,
            metering_resources: 10,
            metering_days: 2,
            scenario_timeout: Duration::from_secs(60),
        }
    }
}

/// What to run and against what.
#[derive(Debug, Clone)]
pub struct Options {
    /// How much work.
    pub counts: Counts,
    /// Which scenarios, in order.
    pub scenarios: Vec<Scenario>,
    /// The server for the creates, get-list, watch and memory scenarios.
    pub server: ServerMode,
    /// The `opkit` binary for the `opkit up` start-up measurement (skipped when `None`).
    pub opkit_bin: Option<PathBuf>,
    /// The KUDO package corpus for the `kudo` scenario (a folder holding
    /// `zookeeper/operator` and `first-operator/operator`); `None`: `$OPKIT_BENCH_KUDO_CORPUS`.
    pub kudo_corpus: Option<PathBuf>,
}

/// One line of the result table.
#[derive(Debug, Clone)]
pub struct Row {
    /// The scenario name.
    pub scenario: &'static str,
    /// What was measured.
    pub figure: String,
    /// The measured value, formatted.
    pub value: String,
    /// The target, formatted (empty when there is none).
    pub target: String,
    /// Whether the target is met (`None`: no target).
    pub pass: Option<bool>,
}

impl Row {
    /// A figure without a target.
    pub fn info(scenario: Scenario, figure: impl Into<String>, value: impl Into<String>) -> Row {
        Row {
            scenario: scenario.name(),
            figure: figure.into(),
            value: value.into(),
            target: String::new(),
            pass: None,
        }
    }

    /// A figure with a target.
    pub fn target(
        scenario: Scenario,
        figure: impl Into<String>,
        value: impl Into<String>,
        target: impl Into<String>,
        pass: bool,
    ) -> Row {
        Row {
            scenario: scenario.name(),
            figure: figure.into(),
            value: value.into(),
            target: target.into(),
            pass: Some(pass),
        }
    }
}

/// The result of a run.
#[derive(Debug, Default, Clone)]
pub struct Report {
    /// The table.
    pub rows: Vec<Row>,
    /// Scenarios that failed, with the error.
    pub errors: Vec<(&'static str, String)>,
    /// Remarks (server mode, fallbacks).
    pub notes: Vec<String>,
}

impl Report {
    /// The table as Markdown, then errors and notes.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let w_s = self
            .rows
            .iter()
            .map(|r| r.scenario.len())
            .max()
            .unwrap_or(0)
            .max("scenario".len());
        let w_f = self
            .rows
            .iter()
            .map(|r| r.figure.len())
            .max()
            .unwrap_or(0)
            .max("figure".len());
        let w_v = self
            .rows
            .iter()
            .map(|r| r.value.len())
            .max()
            .unwrap_or(0)
            .max("value".len());
        let w_t = self
            .rows
            .iter()
            .map(|r| r.target.len())
            .max()
            .unwrap_or(0)
            .max("target".len());
        let _ = writeln!(
            out,
            "| {:w_s$} | {:w_f$} | {:>w_v$} | {:w_t$} | result |",
            "scenario", "figure", "value", "target"
        );
        let _ = writeln!(
            out,
            "|-{}-|-{}-|-{}:|-{}-|--------|",
            "-".repeat(w_s),
            "-".repeat(w_f),
            "-".repeat(w_v),
            "-".repeat(w_t)
        );
        for r in &self.rows {
            let result = match r.pass {
                Some(true) => "pass",
                Some(false) => "FAIL",
                None => "",
            };
            let _ = writeln!(
                out,
                "| {:w_s$} | {:w_f$} | {:>w_v$} | {:w_t$} | {result:6} |",
                r.scenario, r.figure, r.value, r.target
            );
        }
        for (scenario, error) in &self.errors {
            let _ = writeln!(out, "\nerror in {scenario}: {error}");
        }
        if !self.notes.is_empty() {
            out.push('\n');
            for note in &self.notes {
                let _ = writeln!(out, "note: {note}");
            }
        }
        out
    }

    /// Whether every figure with a target met it and no scenario failed.
    pub fn all_pass(&self) -> bool {
        self.errors.is_empty() && self.rows.iter().all(|r| r.pass != Some(false))
    }
}

/// Runs the chosen scenarios, each bounded by [`Scenario::timeout`]. A scenario that fails
/// or times out is recorded in [`Report::errors`]; the others still run.
pub async fn run(options: &Options) -> Report {
    server::install_crypto_provider();
    let mut report = Report::default();
    report.notes.push(format!(
        "server for creates/get-list/watch/memory: {}",
        options.server.describe()
    ));
    let load_before = load_average();
    for &scenario in &options.scenarios {
        eprintln!("[{}] running", scenario.name());
        let started = Instant::now();
        let timeout = scenario.timeout(&options.counts);
        let result = tokio::time::timeout(timeout, scenarios::run(scenario, options)).await;
        match result {
            Ok(Ok(outcome)) => {
                report.rows.extend(outcome.rows);
                report.notes.extend(outcome.notes);
            }
            Ok(Err(e)) => report.errors.push((scenario.name(), format!("{e:#}"))),
            Err(_) => report
                .errors
                .push((scenario.name(), format!("timed out after {timeout:?}"))),
        }
        eprintln!(
            "[{}] done in {:.1} s",
            scenario.name(),
            started.elapsed().as_secs_f64()
        );
    }
    report.notes.push(format!(
        "load average (1/5/15 min) before: {load_before}, after: {} (other work on the machine skews the figures)",
        load_average()
    ));
    report
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}
