//! One chainsaw test, as chainsaw v0.2 runs it: a namespace (the test's, or a fresh
//! `chainsaw-<adjective>-<animal>` one created and deleted by the runner), bindings
//! (`$namespace`, `$test`, `$values`, `$step`, user ones), then each step: its `try` operations
//! in order until one fails (unless `continueOnError`), the step's and the test's `catch` when
//! the test has failed, `finally` always. What a step created and its `cleanup` block run when
//! the test ends, last step first, objects in reverse creation order (unless `skipDelete`).
//!
//! The result is a kuttl [`CaseRecord`], so chainsaw tests share the summary and the reports.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::case::{self, CaseRecord, StepRecord};
use crate::chainsaw::discover::{LoadedStep, LoadedTest};
use crate::chainsaw::expr::Bindings;
use crate::chainsaw::model::{Action, Operation, Resolved};
use crate::chainsaw::ops::{self, Scope};
use crate::cluster::{Cluster, message};
use crate::log::Log;
use crate::operation::{Created, Target};

/// What every chainsaw test of a run shares.
#[derive(Clone)]
pub(crate) struct Settings {
    pub cluster: Cluster,
    pub cwd: PathBuf,
    pub kubeconfig: PathBuf,
    pub log: Log,
    /// Keep the namespaces tests create (the suite's skipDelete): a chaos campaign reads
    /// what a test left in its namespace after its cleanup.
    pub keep_namespaces: bool,
}

/// A step's deferred cleanup: its objects and its `cleanup` block, with its scope.
struct Deferred {
    created: Vec<Created>,
    operations: Vec<Operation>,
    bindings: Bindings,
    timeouts: Resolved,
    template: bool,
    skip_delete: bool,
    prefix: String,
}

fn fail_record(name: &str, suite: &str, started: jiff::Timestamp, e: String) -> CaseRecord {
    CaseRecord {
        name: name.to_string(),
        suite: suite.to_string(),
        started,
        duration: Duration::ZERO,
        setup_duration: Duration::ZERO,
        setup_failure: Some(e),
        steps: Vec::new(),
        cleanup_failures: Vec::new(),
        namespace: None,
    }
}

/// A failed load, reported as a failed test named after its directory.
pub(crate) fn load_failure(name: &str, suite: &str, e: String, log: &Log) -> CaseRecord {
    log.log(name, &e);
    fail_record(name, suite, jiff::Timestamp::now(), e)
}

/// Creates the test namespace; the name and whether this run owns it.
async fn namespace(test: &LoadedTest, cluster: &Cluster) -> Result<(String, bool), String> {
    let wanted = &test.test.spec.namespace;
    if !wanted.is_empty() {
        return case::create_namespace(cluster, wanted)
            .await
            .map(|created| (wanted.clone(), created));
    }
    // chainsaw's pet names are short: retry the rare collision with a concurrent test.
    for _ in 0..5 {
        let name = format!("chainsaw-{}", crate::names::pet_name());
        if case::create_namespace(cluster, &name).await? {
            return Ok((name, true));
        }
    }
    Err("cannot find a free namespace name".into())
}

/// Runs one test (index `id` from 1, for `$test.id`) of the test dir `suite`.
pub(crate) async fn run(
    test: &LoadedTest,
    id: usize,
    suite: &str,
    dir: &std::path::Path,
    s: &Settings,
) -> CaseRecord {
    let start = Instant::now();
    let started = jiff::Timestamp::now();
    let name = test.name.as_str();
    let log = &s.log;
    let spec = &test.test.spec;
    let mut record = fail_record(name, suite, started, String::new());
    record.setup_failure = None;
    let base = match Resolved::default().with(&spec.timeouts) {
        Ok(t) => t,
        Err(e) => return fail_record(name, suite, started, e),
    };
    let (ns, owned) = match namespace(test, &s.cluster).await {
        Ok(n) => n,
        Err(e) => {
            let e = format!("failed to create test namespace: {e}");
            log.log(name, &e);
            return fail_record(name, suite, started, e);
        }
    };
    record.namespace = Some(ns.clone());
    log.log(
        name,
        &format!(
            "namespace {ns:?} ({})",
            if owned { "created" } else { "existing" }
        ),
    );
    let bindings = Bindings::default()
        .with("namespace", Value::String(ns.clone()))
        .with("values", json!({}))
        .with("test", json!({"id": id, "metadata": test.test.metadata}))
        .with_all(&spec.bindings);
    let bindings = match bindings {
        Ok(b) => b,
        Err(e) => {
            record.setup_failure = Some(e);
            return finish(record, &ns, owned, false, base, s, start).await;
        }
    };
    record.setup_duration = start.elapsed();
    let target = Target {
        cluster: s.cluster.clone(),
        namespace: ns.clone(),
    };
    let test_skip_delete = spec.skip_delete.unwrap_or(false);
    let test_template = spec.template.unwrap_or(true);
    let mut deferred: Vec<Deferred> = Vec::new();
    let mut failed = false;
    for (i, step) in test.steps.iter().enumerate() {
        let step_started = jiff::Timestamp::now();
        let step_start = Instant::now();
        let prefix = format!("{name}/{}", step.name);
        let mut errors = Vec::new();
        let scope =
            step_scope(step, i, &bindings, base, test_template).map(|(b, t, template)| Scope {
                target: &target,
                test_dir: dir,
                kubeconfig: &s.kubeconfig,
                cwd: &s.cwd,
                log,
                prefix: prefix.clone(),
                timeouts: t,
                template,
                bindings: b,
            });
        match scope {
            Err(e) => errors.push(e),
            Ok(scope) => {
                let mut created = Vec::new();
                for (o, op) in step.try_.iter().enumerate() {
                    if let Err(e) = ops::run(op, &scope, &mut created).await {
                        log.log(&prefix, &e);
                        errors.push(format!("try[{o}]: {e}"));
                        if !op.continue_on_error {
                            break;
                        }
                    }
                }
                failed |= !errors.is_empty();
                if failed {
                    let handlers = step.catch.iter().chain(&test.catch);
                    errors.extend(handlers_run("catch", handlers, &scope).await);
                }
                errors.extend(handlers_run("finally", step.finally.iter(), &scope).await);
                deferred.push(Deferred {
                    created,
                    operations: step.cleanup.clone(),
                    bindings: scope.bindings.clone(),
                    timeouts: scope.timeouts,
                    template: scope.template,
                    skip_delete: step.step.skip_delete.unwrap_or(test_skip_delete),
                    prefix: prefix.clone(),
                });
            }
        }
        failed |= !errors.is_empty();
        let assertions = step
            .try_
            .iter()
            .filter(|o| matches!(o.action, Action::Assert(_) | Action::Error(_)))
            .count();
        record.steps.push(StepRecord {
            label: step.name.clone(),
            assertions,
            duration: step_start.elapsed(),
            started: step_started,
            failure: (!errors.is_empty()).then(|| {
                let message = format!("failed in step {}", step.name);
                let mut lines = vec![message.clone()];
                lines.extend(errors.iter().cloned());
                log.line(&indent(&lines));
                (message, errors)
            }),
        });
        if failed {
            break;
        }
    }
    // Cleanup: last step first, each step's objects newest first, then its cleanup block.
    for d in deferred.iter().rev() {
        let scope = Scope {
            target: &target,
            test_dir: dir,
            kubeconfig: &s.kubeconfig,
            cwd: &s.cwd,
            log,
            prefix: d.prefix.clone(),
            timeouts: d.timeouts,
            template: d.template,
            bindings: d.bindings.clone(),
        };
        if !d.skip_delete {
            for c in d.created.iter().rev() {
                if let Err(e) = delete_and_wait(&s.cluster, c, d.timeouts.cleanup).await {
                    record.cleanup_failures.push(e);
                }
            }
        }
        record
            .cleanup_failures
            .extend(handlers_run("cleanup", d.operations.iter(), &scope).await);
    }
    finish(record, &ns, owned, test_skip_delete, base, s, start).await
}

/// The bindings, timeouts and templating of step `i`.
fn step_scope(
    step: &LoadedStep,
    i: usize,
    test: &Bindings,
    base: Resolved,
    template: bool,
) -> Result<(Bindings, Resolved, bool), String> {
    let b = test
        .with("step", json!({"id": i + 1}))
        .with_all(&step.step.bindings)?;
    let t = base.with(&step.step.timeouts)?;
    Ok((b, t, step.step.template.unwrap_or(template)))
}

/// Runs a catch/finally/cleanup block to its end; the errors.
async fn handlers_run<'a>(
    block: &str,
    ops: impl Iterator<Item = &'a Operation>,
    scope: &Scope<'_>,
) -> Vec<String> {
    let mut errors = Vec::new();
    let mut unused = Vec::new();
    for (i, op) in ops.enumerate() {
        if let Err(e) = ops::run(op, scope, &mut unused).await {
            scope.log.log(&scope.prefix, &e);
            errors.push(format!("{block}[{i}]: {e}"));
        }
    }
    errors
}

async fn delete_and_wait(cluster: &Cluster, c: &Created, timeout: Duration) -> Result<(), String> {
    match cluster.delete(&c.resource, &c.namespace, &c.name).await {
        Ok(false) => return Ok(()),
        Ok(true) => {}
        Err(e) => return Err(format!("deleting {} failed: {}", c.id(), message(&e))),
    }
    crate::poll::until(Instant::now() + timeout, || async move {
        match cluster.get(&c.resource, &c.namespace, &c.name).await {
            Err(e) if crate::cluster::is_not_found(&e) => Ok(()),
            _ => Err(format!("{} still exists after {timeout:?}", c.id())),
        }
    })
    .await
}

/// Deletes the namespace this run created (unless skipDelete) and closes the record.
async fn finish(
    mut record: CaseRecord,
    ns: &str,
    owned: bool,
    skip_delete: bool,
    timeouts: Resolved,
    s: &Settings,
    start: Instant,
) -> CaseRecord {
    if owned
        && !skip_delete
        && !s.keep_namespaces
        && let Err(e) = case::delete_namespace(&s.cluster, ns, timeouts.cleanup).await
    {
        record.cleanup_failures.push(e);
    }
    if !record.cleanup_failures.is_empty() {
        let mut lines = vec!["cleanup failed".to_string()];
        lines.extend(record.cleanup_failures.iter().cloned());
        s.log.line(&indent(&lines));
    }
    if let Some(e) = &record.setup_failure {
        s.log.line(&indent(std::slice::from_ref(e)));
    }
    record.duration = start.elapsed();
    record
}

/// Go test error lines: four spaces, continuation lines eight.
fn indent(lines: &[String]) -> String {
    let mut out = Vec::new();
    for l in lines {
        for (i, part) in l.trim_end().split('\n').enumerate() {
            out.push(format!(
                "{}{part}",
                if i == 0 { "    " } else { "        " }
            ));
        }
    }
    out.join("\n")
}
