//! Fault-injection campaigns (`opkit test --chaos`): the bugs Sieve and Acto find — an
//! operator that crashes between two writes, meets a refused write or a lost response, acts on
//! a stale view after a restart, misses a short-lived state, or a watch that lags or expires —
//! found by running each test of a suite once without faults, then once per injection point
//! of that reference run with the server misbehaving, legally, toward the operator alone.
//!
//! `plan` decides what runs (pure), `oracle` judges a run against the reference (pure),
//! `shrink` narrows a failing run of several faults to the ones that matter (pure),
//! `driver` runs the loop (reference runs, fault runs, shrinking) over a workload: `campaign`'s
//! kuttl tests or `api`'s Rust workloads (`cargo test`), each run on a fresh embedded plane
//! (`plane`). `docs/RELIABILITY.md` explains each fault
//! and each oracle.

mod api;
mod campaign;
mod driver;
mod oracle;
mod plan;
mod plane;
mod shrink;

pub use api::{Chaos, Operator, Workload, WorkloadError};
pub use campaign::Campaign;
pub use driver::{CampaignError, CampaignOutcome, FaultPoint, Finding, OracleFailure, Shrunk};
pub use plan::{FaultKind, Injection, PlanError, RunPlan, WATCH_DELAY, parse_kinds};
pub use plane::{OPERATOR_USER, SUCCESSOR_USER};
