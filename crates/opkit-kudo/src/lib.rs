//! Declarative operators: KUDO packages run by a generic manager on opkit's runtime.
//!
//! A KUDO package is YAML only: `operator.yaml` (tasks and plans made of phases and steps),
//! `params.yaml` and `templates/`. Installing it creates an [`Operator`], an
//! [`OperatorVersion`] holding everything the package says, and an [`Instance`] with the
//! user's parameters; the manager then runs the instance's plans.
//!
//! The API is KUDO's `kudo.dev/v1beta1`, field for field, so `kubectl kudo` users and
//! tools written for KUDO read the same objects.

pub mod api;
pub mod manager;
pub(crate) mod plan;
pub(crate) mod task;
pub mod timing;
pub(crate) mod workflow;

// The parts of the tasks that touch rendered objects; the manager calls `ready::ready` after
// each pass and `leftovers::remove` on uninstall.
#[allow(dead_code)]
pub(crate) mod convert;
#[allow(dead_code)]
pub(crate) mod enhance;
#[allow(dead_code)]
pub(crate) mod env_file;
#[allow(dead_code)]
pub(crate) mod health;
#[allow(dead_code)]
pub(crate) mod leftovers;
#[allow(dead_code)]
pub(crate) mod object;
#[allow(dead_code)]
pub(crate) mod ready;
#[allow(dead_code)]
pub(crate) mod render;
#[cfg(test)]
mod tasks_it;

pub use api::{
    ExecutionStatus, Instance, InstanceSpec, InstanceStatus, Operator, OperatorSpec,
    OperatorVersion, OperatorVersionSpec, Ordering, Parameter, ParameterType, PhaseStatus,
    PlanExecution, PlanStatus, StepStatus,
};
pub use manager::{ABANDON_ANNOTATION, ManagerError, ManagerOptions};
pub use plan::SNAPSHOT_ANNOTATION;
pub use timing::STEP_TIMES_ANNOTATION;
