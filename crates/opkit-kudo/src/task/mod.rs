//! Tasks: what a step does. Every task of an active step runs on every pass of the plan
//! until each reports [`Progress::Done`]; the plan engine turns [`TaskError`]s into the
//! step's `ERROR` (retried with backoff) or `FATAL_ERROR` (the plan stops).
//!
//! This module holds the vocabulary shared by the engine and the task kinds; each kind
//! lives in a module of its own.

pub(crate) mod apply;
pub(crate) mod delete;
pub(crate) mod dummy;
pub(crate) mod kudo_operator;
pub(crate) mod pipe;
pub(crate) mod toggle;

use opkit_template::kudo::Variables;

use crate::api::{Instance, Operator, OperatorVersion, Task};

/// Everything a task sees when it runs: the instance and its operator version, the
/// template variables of this plan/phase/step (parameters already merged with their
/// defaults and unwrapped by type), and a client for the cluster.
#[derive(Clone)]
pub(crate) struct Context {
    /// The cluster.
    pub client: kube::Client,
    /// The instance the plan runs for.
    pub instance: Instance,
    /// The instance's operator version (templates, tasks, parameters).
    pub operator_version: OperatorVersion,
    /// The operator the version belongs to.
    pub operator: Operator,
    /// The template variables: `.Name`, `.Namespace`, `.OperatorName`, `.Params`,
    /// `.Pipes`, `.PlanName`, `.PhaseName`, `.StepName`, `.AppVersion`, ...
    pub variables: Variables,
    /// The events recorder (reports conversions, plan events).
    pub recorder: opkit::events::Recorder,
}

/// How far a task got on this pass.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Progress {
    /// Finished: its objects exist and are healthy (or deleted, piped, ...).
    Done,
    /// Acted, but what it made is not healthy yet; the message says what it waits for.
    Waiting(String),
}

/// Why a task failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum TaskError {
    /// May pass on a later try (API errors, conflicts, a pod not running yet): the step
    /// goes to `ERROR` and the engine retries with backoff.
    #[error("{0}")]
    Transient(String),
    /// Cannot pass without a change to the package or parameters (a render error, an
    /// invalid object, a failed Job): the step and plan go to `FATAL_ERROR`.
    #[error("{0}")]
    Fatal(String),
}

/// Looks a task up by name in the operator version.
pub(crate) fn find<'a>(ov: &'a OperatorVersion, name: &str) -> Result<&'a Task, TaskError> {
    ov.spec
        .tasks
        .iter()
        .find(|t| t.name == name)
        .ok_or_else(|| {
            TaskError::Fatal(format!(
                "task {name} is not defined in the operator version"
            ))
        })
}

/// Runs one task of an active step, by its kind.
pub(crate) async fn run(ctx: &Context, task: &Task) -> Result<Progress, TaskError> {
    match task.kind.as_str() {
        "Dummy" => dummy::run(ctx, task).await,
        "KudoOperator" => kudo_operator::run(ctx, task).await,
        "Apply" => apply::run(ctx, task).await,
        "Delete" => delete::run(ctx, task).await,
        "Toggle" => toggle::run(ctx, task).await,
        "Pipe" => pipe::run(ctx, task).await,
        other => Err(TaskError::Fatal(format!("unknown task kind {other}"))),
    }
}
