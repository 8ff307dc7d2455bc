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
pub mod package;
pub mod params;
pub mod repo;
// The engine and the task kinds that use this vocabulary are being built on branches.
#[allow(dead_code)]
pub(crate) mod task;

pub use api::{
    ExecutionStatus, Instance, InstanceSpec, InstanceStatus, Operator, OperatorSpec,
    OperatorVersion, OperatorVersionSpec, Ordering, Parameter, ParameterType, PhaseStatus,
    PlanExecution, PlanStatus, StepStatus,
};
