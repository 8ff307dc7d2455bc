//! One test (a directory), as kuttl runs it: load its steps, create its namespace (a fresh
//! `kuttl-<adjective>-<animal>-<4>` one, or the suite's shared one, which the harness owns),
//! run the steps in order until the first failure, dump the namespace's events, then delete
//! the objects the steps created and the namespace (unless `skipDelete`).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Namespace, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, DeleteParams, ListParams, PostParams};

use crate::cluster::{Cluster, is_not_found, message};
use crate::discovery::{self, Glob, LoadSettings, TestDir};
use crate::log::Log;
use crate::observe::ProcessLogs;
use crate::operation::{Created, Target};
use crate::step::StepContext;

/// What every test of a run shares.
#[derive(Clone)]
pub(crate) struct CaseSettings {
    pub cluster: Cluster,
    pub cwd: PathBuf,
    pub kubeconfig: PathBuf,
    pub suite_timeout: i64,
    pub skip_delete: bool,
    pub suppress_events: bool,
    /// The suite's namespace, created (if needed) and deleted by the harness.
    pub shared_namespace: Option<String>,
    pub ignore: Vec<Glob>,
    pub run_labels: BTreeMap<String, String>,
    pub log: Log,
    /// A process under test whose lines each test keeps (and prints when it fails).
    pub process_logs: Option<ProcessLogs>,
    /// How often a step's asserts are checked again.
    pub assert_interval: std::time::Duration,
}

/// A step's result, for reports.
#[derive(Debug, Clone)]
pub struct StepRecord {
    /// `<index>-<name>`.
    pub label: String,
    /// Assert and errors objects of the step.
    pub assertions: usize,
    /// How long it ran.
    pub duration: Duration,
    /// When it started.
    pub started: jiff::Timestamp,
    /// The failure: kuttl's message (`failed in step …`) and every error.
    pub failure: Option<(String, Vec<String>)>,
}

/// A test's result, for reports and the summary.
#[derive(Debug, Clone)]
pub struct CaseRecord {
    /// The test (directory) name.
    pub name: String,
    /// The test dir it belongs to, as given.
    pub suite: String,
    /// When it started.
    pub started: jiff::Timestamp,
    /// How long it ran (setup, steps and cleanup).
    pub duration: Duration,
    /// How long loading and namespace setup took.
    pub setup_duration: Duration,
    /// Setup (load or namespace) failure.
    pub setup_failure: Option<String>,
    /// Steps that ran.
    pub steps: Vec<StepRecord>,
    /// Cleanup failures.
    pub cleanup_failures: Vec<String>,
    /// The namespace the test ran in (`None` when it failed before having one).
    pub namespace: Option<String>,
}

impl CaseRecord {
    /// Whether the test failed.
    pub fn failed(&self) -> bool {
        self.setup_failure.is_some()
            || !self.cleanup_failures.is_empty()
            || self.steps.iter().any(|s| s.failure.is_some())
    }
}

/// Runs one test.
pub(crate) async fn run(test: &TestDir, settings: &CaseSettings) -> CaseRecord {
    let start = Instant::now();
    let mut record = CaseRecord {
        name: test.name.clone(),
        suite: test.suite.clone(),
        started: jiff::Timestamp::now(),
        duration: Duration::ZERO,
        setup_duration: Duration::ZERO,
        setup_failure: None,
        steps: Vec::new(),
        cleanup_failures: Vec::new(),
        namespace: None,
    };
    let log = &settings.log;
    let name = test.name.as_str();
    let mut notes = Vec::new();
    let loaded = discovery::load_steps(
        &test.path,
        &LoadSettings {
            ignore: &settings.ignore,
            run_labels: &settings.run_labels,
        },
        &mut notes,
    );
    for n in &notes {
        log.log(name, n);
    }
    let steps = match loaded {
        Ok(s) => s,
        Err(e) => {
            error_lines(log, std::slice::from_ref(&e));
            record.setup_failure = Some(e);
            record.setup_duration = start.elapsed();
            record.duration = start.elapsed();
            return record;
        }
    };
    let (namespace, owned) = match &settings.shared_namespace {
        Some(ns) => (ns.clone(), false),
        None => {
            let ns = crate::names::namespace();
            log.log(name, &format!("Creating namespace {ns:?}"));
            match create_namespace(&settings.cluster, &ns).await {
                Ok(true) => (ns, true),
                Ok(false) => {
                    log.log(name, &format!("Namespace {ns:?} already exists"));
                    (ns, false)
                }
                Err(e) => {
                    let e = format!("failed to create test namespace {ns:?}: {e}");
                    error_lines(log, std::slice::from_ref(&e));
                    record.setup_failure = Some(e);
                    record.setup_duration = start.elapsed();
                    record.duration = start.elapsed();
                    return record;
                }
            }
        }
    };
    record.setup_duration = start.elapsed();
    record.namespace = Some(namespace.clone());
    let target = Target {
        cluster: settings.cluster.clone(),
        namespace: namespace.clone(),
    };
    let ctx = StepContext {
        target: &target,
        test_dir: &test.path,
        cwd: &settings.cwd,
        kubeconfig: &settings.kubeconfig,
        suite_timeout: settings.suite_timeout,
        assert_interval: settings.assert_interval,
        log,
        test: name,
    };
    let mut created: Vec<Created> = Vec::new();
    for step in &steps {
        let started = jiff::Timestamp::now();
        let outcome = ctx.run(step).await;
        created.extend(outcome.created);
        let failure = (!outcome.errors.is_empty()).then(|| {
            let message = format!("failed in step {}", step.label());
            let mut lines = vec![message.clone()];
            lines.extend(outcome.errors.iter().cloned());
            error_lines(log, &lines);
            (message, outcome.errors)
        });
        let failed = failure.is_some();
        record.steps.push(StepRecord {
            label: step.label(),
            assertions: step.asserts.len() + step.errors.len(),
            duration: outcome.duration,
            started,
            failure,
        });
        if failed {
            break;
        }
    }
    if settings.suppress_events {
        log.log(name, "skipping kubernetes event logging");
    } else {
        dump_events(&settings.cluster, name, &namespace, log).await;
    }
    if let Some(logs) = &settings.process_logs {
        keep_process_log(logs, name, start, record.failed(), log);
    }
    if !settings.skip_delete {
        for c in created.iter().rev() {
            match settings
                .cluster
                .delete(&c.resource, &c.namespace, &c.name)
                .await
            {
                Ok(_) => {}
                Err(e) => record.cleanup_failures.push(format!(
                    "deleting {} failed: {}",
                    c.id(),
                    message(&e)
                )),
            }
        }
        if owned {
            log.log(name, &format!("Deleting namespace {namespace:?}"));
            if let Err(e) =
                delete_namespace(&settings.cluster, &namespace, secs(settings.suite_timeout)).await
            {
                record.cleanup_failures.push(e);
            }
        }
        error_lines(log, &record.cleanup_failures);
    }
    record.duration = start.elapsed();
    log.log(
        name,
        &format!(
            "test {} ({:.2}s)",
            if record.failed() { "failed" } else { "passed" },
            record.duration.as_secs_f64()
        ),
    );
    record
}

/// Keeps the process's lines written since the test started in the test's file, and prints
/// them when the test failed.
fn keep_process_log(logs: &ProcessLogs, test: &str, start: Instant, failed: bool, log: &Log) {
    let lines = logs.log.since(start);
    let process = logs.log.name();
    match logs.keep(test, &lines) {
        Ok(path) => log.log(test, &format!("{process} log kept in {}", path.display())),
        Err(e) => log.log(test, &e),
    }
    if failed {
        let mut out = format!("{process} log during {test} ({} lines):", lines.len());
        for l in &lines {
            out.push('\n');
            out.push_str(l);
        }
        log.log(test, &out);
    }
}

fn secs(s: i64) -> Duration {
    Duration::from_secs(s.max(0) as u64)
}

/// Prints test errors as Go's `t.Error` does (indented, continuation lines further).
fn error_lines(log: &Log, errors: &[String]) {
    for e in errors {
        let mut out = String::new();
        for (i, line) in e.trim_end_matches('\n').split('\n').enumerate() {
            if i > 0 {
                out.push('\n');
            }
            out.push_str(if i == 0 { "    " } else { "        " });
            out.push_str(line);
        }
        log.line(&out);
    }
}

/// Creates a namespace; `false` when it existed already.
pub(crate) async fn create_namespace(cluster: &Cluster, name: &str) -> Result<bool, String> {
    let api: Api<Namespace> = Api::all(cluster.client.clone());
    let ns: Namespace = serde_json::from_value(serde_json::json!({"metadata": {"name": name}}))
        .map_err(|e| e.to_string())?;
    match api.create(&PostParams::default(), &ns).await {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(s)) if s.is_already_exists() => Ok(false),
        Err(kube::Error::Api(s)) if s.is_forbidden() => match api.get(name).await {
            Ok(_) => Ok(false),
            Err(e) => Err(message(&e)),
        },
        Err(e) => Err(message(&e)),
    }
}

/// Deletes a namespace and waits until it is gone.
pub(crate) async fn delete_namespace(
    cluster: &Cluster,
    name: &str,
    timeout: Duration,
) -> Result<(), String> {
    let api: Api<Namespace> = Api::all(cluster.client.clone());
    match api.delete(name, &DeleteParams::default()).await {
        Ok(_) => {}
        Err(e) if is_not_found(&e) => return Ok(()),
        Err(e) => {
            return Err(format!(
                "deleting namespace {name:?} failed: {}",
                message(&e)
            ));
        }
    }
    let api = &api;
    crate::poll::until(Instant::now() + timeout, || async move {
        match api.get(name).await {
            Err(e) if is_not_found(&e) => Ok(()),
            _ => Err(format!(
                "waiting for namespace {name:?} to be deleted timed out: context deadline exceeded"
            )),
        }
    })
    .await
}

/// Logs the namespace's events, oldest first (events.k8s.io/v1, else core/v1).
async fn dump_events(cluster: &Cluster, test: &str, namespace: &str, log: &Log) {
    let rows = match events_v1(cluster, namespace).await {
        Ok(rows) => rows,
        Err(_) => match core_events(cluster, namespace).await {
            Ok(rows) => rows,
            Err(e) => {
                log.log(test, &format!("cannot list events in {namespace}: {e}"));
                return;
            }
        },
    };
    let mut out = format!("{test} events from ns {namespace}:");
    for (_, row) in rows {
        out.push('\n');
        out.push_str(&row);
    }
    log.log(test, &out);
}

/// `Kind[.group] name[.fieldPath]`, as kuttl prints an event's object.
fn object_ref(o: &ObjectReference) -> String {
    let kind = o.kind.as_deref().unwrap_or("");
    let group = o
        .api_version
        .as_deref()
        .and_then(|v| v.split_once('/'))
        .map(|(g, _)| g)
        .unwrap_or("");
    let mut s = if group.is_empty() {
        kind.to_string()
    } else {
        format!("{kind}.{group}")
    };
    s.push(' ');
    s.push_str(o.name.as_deref().unwrap_or(""));
    if let Some(field_path) = o.field_path.as_deref().filter(|p| !p.is_empty()) {
        s.push('.');
        s.push_str(field_path);
    }
    s
}

type Rows = Vec<((String, String), String)>;

/// One dump line (the creation time, then `columns`, tab-separated), keyed by creation time
/// and name for sorting.
fn event_row(meta: &ObjectMeta, columns: [String; 7]) -> ((String, String), String) {
    let created = meta
        .creation_timestamp
        .as_ref()
        .map(|t| t.0.to_string())
        .unwrap_or_default();
    let line = std::iter::once(created.clone())
        .chain(columns)
        .collect::<Vec<_>>()
        .join("\t");
    ((created, meta.name.clone().unwrap_or_default()), line)
}

fn sorted(mut rows: Rows) -> Rows {
    rows.sort_by(|a, b| a.0.cmp(&b.0));
    rows
}

async fn events_v1(cluster: &Cluster, namespace: &str) -> Result<Rows, kube::Error> {
    use k8s_openapi::api::events::v1::Event;
    let api: Api<Event> = Api::namespaced(cluster.client.clone(), namespace);
    let reference = |o: &Option<ObjectReference>| o.as_ref().map(object_ref).unwrap_or_default();
    let items = api.list(&ListParams::default()).await?.items;
    Ok(sorted(
        items
            .iter()
            .map(|e| {
                event_row(
                    &e.metadata,
                    [
                        e.type_.clone().unwrap_or_default(),
                        reference(&e.regarding),
                        e.action.clone().unwrap_or_default(),
                        e.reason.clone().unwrap_or_default(),
                        e.note.clone().unwrap_or_default(),
                        e.reporting_controller.clone().unwrap_or_default(),
                        reference(&e.related),
                    ],
                )
            })
            .collect(),
    ))
}

async fn core_events(cluster: &Cluster, namespace: &str) -> Result<Rows, kube::Error> {
    use k8s_openapi::api::core::v1::Event;
    let api: Api<Event> = Api::namespaced(cluster.client.clone(), namespace);
    let items = api.list(&ListParams::default()).await?.items;
    Ok(sorted(
        items
            .iter()
            .map(|e| {
                event_row(
                    &e.metadata,
                    [
                        e.type_.clone().unwrap_or_default(),
                        object_ref(&e.involved_object),
                        e.action.clone().unwrap_or_default(),
                        e.reason.clone().unwrap_or_default(),
                        e.message.clone().unwrap_or_default(),
                        e.reporting_component.clone().unwrap_or_default(),
                        String::new(),
                    ],
                )
            })
            .collect(),
    ))
}
