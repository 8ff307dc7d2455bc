//! Declarative end-to-end tests for operators: kuttl (`kubectl kuttl test`) suites run against
//! any Kubernetes API through a `kube::Client` — in `opkit test`, usually opkit's embedded
//! control plane, so a suite starts in milliseconds instead of the minutes kind takes.
//!
//! The format and the behaviour are kuttl v0.26's (see `docs/COMPATIBILITY.md`, "kuttl"):
//! a suite file ([`TestSuite`]), test directories of `NN-<name>.yaml` steps (objects to apply,
//! `NN-assert.yaml`, `NN-errors.yaml`, `TestStep`, `TestAssert`, `TestFile`), kuttl's subset
//! matching and failure diffs, commands with `$NAMESPACE`/`$KUBECONFIG`/`$PATH`, a namespace per
//! test, parallel tests, and JUnit XML / JSON reports. Where opkit differs on purpose it fixes a
//! kuttl bug: a mismatch's path carries list indices and is the first in sorted key order, a
//! shared suite namespace outlives every test that uses it, step durations are real, and a test
//! whose files do not load is reported as failed instead of vanishing.
//!
//! The pieces, one job each: [`config`] reads the suite file, `discovery` the test directories,
//! `subset` matches objects, `diff` renders a failure, `cluster` talks to the API, `command` runs
//! commands, `step` runs one step (its operations are the unit chainsaw's try/catch/finally will
//! reuse), `case` one test, [`harness`] the suite, [`report`] writes the reports, and
//! `observe` hands progress and a process-under-test's log to the caller.
//!
//! chainsaw tests (kyverno/chainsaw v0.2's `Test`, in a `chainsaw-test.yaml`) found under the
//! same test dirs run in the same harness and report as kuttl tests do: `chainsaw` holds their
//! format, JMESPath assertion trees, operations and runner (`docs/COMPATIBILITY.md`,
//! "chainsaw").

#![warn(missing_docs)]

mod case;
mod chainsaw;
pub mod chaos;
mod cluster;
mod command;
pub mod config;
mod diff;
mod discovery;
pub mod harness;
mod log;
mod names;
mod observe;
mod operation;
mod poll;
pub mod report;
mod step;
mod subset;
mod supervise;
mod types;
mod yaml;

pub use case::{CaseRecord, StepRecord};
pub use config::{ConfigError, LoadedSuite, TestSuite, load_suite};
pub use harness::{Harness, HarnessError, Options, Outcome};
pub use log::Log;
pub use observe::{ProcessLog, Progress, ProgressFn};
pub use report::{Granularity, ReportFormat};
pub use supervise::{Succession, Supervision};
pub use types::Command;
