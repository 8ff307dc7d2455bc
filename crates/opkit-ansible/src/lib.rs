//! Playbook operators: an Ansible role or playbook driven by a custom resource, as
//! operator-sdk's Ansible plugin (`ansible-operator-plugins`) runs it, on opkit's runtime.
//!
//! [`run`] (the `opkit ansible-operator run --watches-file watches.yaml` command) reads
//! operator-sdk's [`watches`] file and serves each custom resource kind it lists: for each
//! custom resource, its spec becomes the run's variables ([`vars`]: snake_case keys,
//! `ansible_operator_meta`, `_<group>_<kind>`), the role or playbook runs through
//! `ansible-runner` from the project's virtual environment (`runner`; made by
//! `scripts/install-tools.sh`), and the outcome lands in the custom resource's [`status`]
//! (`Running`, `Successful`, `Failure` with `ansibleResult`). The `reconcile` module has the
//! per-resource flow (finalizer, run, status, requeue; an unchanged custom resource is not
//! run again until its period is due). The project's own `operator_sdk.util` collection
//! (`k8s_status`, `requeue_after`, `k8s_event`, `osdk_metric`) is compiled in and installed
//! for every run (`collection`).
//!
//! Every run reaches the API server through the operator's owner-reference `proxy`: what a
//! role creates is owned by its custom resource (or, in another namespace or cluster-scoped,
//! annotated with it), and the kinds created are watched (`dependents`), so a changed or
//! deleted dependent runs the role again unless `watchDependentResources` is off or the kind
//! is in `blacklist`.
//!
//! A custom resource's runs keep their data and the last `maxRunnerArtifacts` runs'
//! artifacts in a directory of their own, removed when the custom resource is deleted
//! (`artifacts`).
//!
//! Not offered: `ansible-args` and the proxy's cache (GETs and LISTs go to the API server).

#![warn(missing_docs)]

mod artifacts;
mod collection;
mod dependents;
mod metrics;
mod operator;
mod proxy;
mod reconcile;
mod runner;
pub mod status;
pub mod vars;
pub mod watches;

pub use collection::install as install_collection;
pub use operator::{OperatorError, OperatorOptions, run, start};
pub use reconcile::{
    MAX_RUNNER_ARTIFACTS_ANNOTATION, RECONCILE_PERIOD_ANNOTATION, ReconcileError,
    VERBOSITY_ANNOTATION,
};
pub use runner::{Ansible, Outcome, RunnerError, TaskFailure, default_venv};
pub use status::{AnsibleResult, Condition, Status};
pub use watches::{Finalizer, Target, Watch, WatchesError};
