//! Declarative operators: KUDO packages run by a generic manager on opkit's runtime.
//!
//! A KUDO package is YAML only: `operator.yaml` (tasks and plans made of phases and steps),
//! `params.yaml` and `templates/`. Installing it creates an [`Operator`], an
//! [`OperatorVersion`] holding everything the package says, and an [`Instance`] with the
//! user's parameters; the manager then runs the instance's plans.
//!
//! The API is KUDO's `kudo.dev/v1beta1`, field for field, so `kubectl kudo` users and
//! tools written for KUDO read the same objects.

pub mod admission;
pub mod api;
pub mod fetch;
pub mod install;
pub mod manager;
pub mod package;
pub mod params;
pub(crate) mod plan;
pub mod repo;
pub(crate) mod task;
pub mod timing;
pub(crate) mod workflow;

// The parts of the tasks that touch rendered objects; the manager calls `ready::ready` after
// each pass and `leftovers::remove` on uninstall.
pub(crate) mod convert;
pub(crate) mod enhance;
pub(crate) mod env_file;
pub(crate) mod health;
pub(crate) mod leftovers;
pub(crate) mod object;
pub(crate) mod ready;
pub(crate) mod render;
#[cfg(test)]
mod tasks_it;

pub use admission::WebhookOptions;
pub use api::{
    ExecutionStatus, Instance, InstanceSpec, InstanceStatus, Operator, OperatorSpec,
    OperatorVersion, OperatorVersionSpec, Ordering, Parameter, ParameterType, PhaseStatus,
    PlanExecution, PlanStatus, StepStatus,
};
pub use manager::{ABANDON_ANNOTATION, ManagerError, ManagerOptions};
pub use plan::SNAPSHOT_ANNOTATION;
pub use timing::STEP_TIMES_ANNOTATION;
