//! Fault-injection campaigns (`opkit test --chaos`): the bugs Sieve and Acto find — an
//! operator that crashes between two writes, meets a refused write or a lost response, acts on
//! a stale view after a restart, misses a short-lived state, or a watch that lags or expires —
//! found by running each test of a suite once without faults, then once per injection point
//! of that reference run with the server misbehaving, legally, toward the operator alone.
//!
//! `plan` decides what runs (pure), `oracle` judges a run against the reference (pure),
//! `campaign` runs them on fresh embedded planes. `docs/RELIABILITY.md` explains each fault
//! and each oracle.

mod campaign;
mod oracle;
mod plan;

pub use campaign::{
    Campaign, CampaignError, CampaignOutcome, Finding, OPERATOR_USER, OracleFailure,
};
pub use plan::{FaultKind, Injection, PlanError, RunPlan, WATCH_DELAY, parse_kinds};
