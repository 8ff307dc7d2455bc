//! chainsaw (kyverno/chainsaw v0.2) tests, run by the same harness as kuttl suites: a
//! directory under a test dir holding `chainsaw-test.yaml` is a chainsaw test (see
//! `docs/COMPATIBILITY.md`, "chainsaw", for what is supported).
//!
//! The pieces, one job each: `model` reads the format, `discover` finds and loads tests,
//! `expr` evaluates JMESPath expressions with bindings and templates resources, `tree` matches
//! assertion trees, `process` runs commands, `ops` runs one operation, `runner` one test. This
//! module runs them all: tests with `concurrent: false` one at a time first, then the others
//! `parallel` at once; each gives a kuttl [`CaseRecord`] for the summary and the reports.

mod discover;
mod expr;
mod model;
mod ops;
mod process;
mod runner;
mod tree;

use std::sync::Arc;

use regex::Regex;

use crate::case::CaseRecord;

pub(crate) use discover::{Found, find, holds, load};
pub(crate) use runner::Settings;

/// Runs the chainsaw tests of `found` whose name `filter` matches.
pub(crate) async fn run_all(
    found: &[Found],
    filter: Option<&Regex>,
    parallel: usize,
    settings: Settings,
) -> Vec<CaseRecord> {
    let log = settings.log.clone();
    let mut records = Vec::new();
    let mut serial = Vec::new();
    let mut concurrent = Vec::new();
    let mut id = 0;
    for f in found {
        let dir_name = f
            .dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let tests = match discover::load(f) {
            Ok(t) => t,
            Err(e) => {
                if filter.is_none_or(|re| re.is_match(&dir_name)) {
                    records.push(runner::load_failure(&dir_name, &f.suite, e, &log));
                }
                continue;
            }
        };
        for test in tests {
            if !filter.is_none_or(|re| re.is_match(&test.name)) {
                continue;
            }
            if test.test.spec.skip == Some(true) {
                log.log(&test.name, "skipped (spec.skip)");
                continue;
            }
            id += 1;
            let job = (test, id, f.suite.clone(), f.dir.clone());
            if job.0.test.spec.concurrent == Some(false) {
                serial.push(job);
            } else {
                concurrent.push(job);
            }
        }
    }
    for (test, id, suite, dir) in serial {
        log.line(&format!("=== RUN   kuttl/harness/{}", test.name));
        records.push(runner::run(&test, id, &suite, &dir, &settings).await);
    }
    let permits = Arc::new(tokio::sync::Semaphore::new(parallel.max(1)));
    let settings = Arc::new(settings);
    let handles: Vec<_> = concurrent
        .into_iter()
        .map(|(test, id, suite, dir)| {
            let permits = permits.clone();
            let settings = settings.clone();
            tokio::spawn(async move {
                let _permit = permits.acquire_owned().await;
                settings
                    .log
                    .line(&format!("=== RUN   kuttl/harness/{}", test.name));
                runner::run(&test, id, &suite, &dir, &settings).await
            })
        })
        .collect();
    for h in handles {
        match h.await {
            Ok(r) => records.push(r),
            Err(e) => log.line(&format!("    a chainsaw test task failed: {e}")),
        }
    }
    records
}
