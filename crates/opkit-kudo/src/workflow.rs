//! The plan state machine: one pass over a plan's phases, steps and tasks, as KUDO's
//! `workflow.Execute` makes it, turning the tasks' outcomes into the new plan/phase/step
//! statuses.
//!
//! It does no I/O: the caller gives the function that runs a task, so every rule is tested
//! here without a cluster. The rules:
//! - a plan runs its phases, a phase its steps, `serial`ly (the next starts when the
//!   previous is `COMPLETE`, in the same pass) or in `parallel`;
//! - every task of an active step runs on every pass; the step is `COMPLETE` when all its
//!   tasks report done, and the phase/plan when all their steps/phases are;
//! - a transient task error sets the step to `ERROR` with KUDO's message ("A transient error
//!   when executing task …. Will retry. …"); opkit also sets its phase and plan to `ERROR`
//!   with the same message (KUDO leaves them `IN_PROGRESS`), so `plan status` says why at
//!   every level; the next pass retries;
//! - a fatal task error sets the step, phase and plan to `FATAL_ERROR` and ends the pass;
//!   the plan runs no more;
//! - a plan's `lastUpdatedTimestamp` moves only when its status or message changes.

use std::collections::BTreeMap;
use std::future::Future;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::api::{
    ExecutionStatus, OperatorVersion, Ordering, PhaseStatus, Plan, PlanStatus, StepStatus,
};
use crate::task::{Progress, TaskError};

/// The message of a plan ended by `plan abandon`.
pub(crate) const ABANDONED_MESSAGE: &str = "plan abandoned by user";

/// Where a task runs: its plan, phase, step and name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TaskRef<'a> {
    /// The phase.
    pub phase: &'a str,
    /// The step.
    pub step: &'a str,
    /// The task's name.
    pub task: &'a str,
}

/// The plan run a pass belongs to (for messages).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Run<'a> {
    /// The instance's namespace.
    pub namespace: &'a str,
    /// The instance's name.
    pub instance: &'a str,
    /// The plan's name.
    pub plan: &'a str,
}

/// What a pass found besides the new status.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Outcome {
    /// A task failed transiently (the pass is to be retried with backoff).
    pub transient: bool,
    /// A task failed fatally: the message (the plan is `FATAL_ERROR`).
    pub fatal: Option<String>,
}

fn set_plan(status: &mut PlanStatus, to: ExecutionStatus, message: &str, now: &Time) {
    if status.status != to || status.message != message {
        status.status = to;
        status.message = message.to_string();
        status.last_updated_timestamp = Some(now.clone());
    }
}

/// Gives every plan of the operator version a status (`NEVER_RUN` for plans that never
/// ran), with a phase and step status for each of its phases and steps in the plan's order
/// (kept where they exist) — KUDO's `ensurePlanStatusInitialized`.
pub(crate) fn initialize(statuses: &mut BTreeMap<String, PlanStatus>, ov: &OperatorVersion) {
    for (name, plan) in &ov.spec.plans {
        let mut status = statuses.remove(name).unwrap_or_else(|| PlanStatus {
            name: name.clone(),
            status: ExecutionStatus::NeverRun,
            ..PlanStatus::default()
        });
        let phases = plan
            .phases
            .iter()
            .map(|phase| {
                let mut ps = status
                    .phases
                    .iter()
                    .find(|p| p.name == phase.name)
                    .cloned()
                    .unwrap_or_else(|| PhaseStatus {
                        name: phase.name.clone(),
                        status: ExecutionStatus::NeverRun,
                        ..PhaseStatus::default()
                    });
                ps.steps = phase
                    .steps
                    .iter()
                    .map(|step| {
                        ps.steps
                            .iter()
                            .find(|s| s.name == step.name)
                            .cloned()
                            .unwrap_or_else(|| StepStatus {
                                name: step.name.clone(),
                                status: ExecutionStatus::NeverRun,
                                ..StepStatus::default()
                            })
                    })
                    .collect();
                ps
            })
            .collect();
        status.phases = phases;
        statuses.insert(name.clone(), status);
    }
}

/// Starts a new run `uid` of a plan: the plan and every phase and step `PENDING`, messages
/// cleared (KUDO's `ResetPlanStatus`).
pub(crate) fn reset(status: &mut PlanStatus, uid: &str, now: &Time) {
    status.uid = uid.to_string();
    status.status = ExecutionStatus::Pending;
    status.message.clear();
    status.last_updated_timestamp = Some(now.clone());
    for phase in &mut status.phases {
        phase.status = ExecutionStatus::Pending;
        phase.message.clear();
        for step in &mut phase.steps {
            step.status = ExecutionStatus::Pending;
            step.message.clear();
        }
    }
}

/// Ends a running plan for good with `message` (`plan abandon`): the plan and its running
/// phases and steps become `FATAL_ERROR`.
pub(crate) fn abandon(status: &mut PlanStatus, message: &str, now: &Time) {
    for phase in &mut status.phases {
        for step in &mut phase.steps {
            if matches!(
                step.status,
                ExecutionStatus::InProgress | ExecutionStatus::Error
            ) {
                step.status = ExecutionStatus::FatalError;
                step.message = message.to_string();
            }
        }
        if matches!(
            phase.status,
            ExecutionStatus::InProgress | ExecutionStatus::Error
        ) {
            phase.status = ExecutionStatus::FatalError;
            phase.message = message.to_string();
        }
    }
    set_plan(status, ExecutionStatus::FatalError, message, now);
}

/// Runs one pass of `plan` from `status` (see the [module docs](self)); `run_task` runs
/// one task and says how far it got. Returns the new status and what went wrong.
pub(crate) async fn execute<F, Fut>(
    run: Run<'_>,
    plan: &Plan,
    status: &PlanStatus,
    now: &Time,
    mut run_task: F,
) -> (PlanStatus, Outcome)
where
    F: FnMut(TaskRef<'_>) -> Fut,
    Fut: Future<Output = Result<Progress, TaskError>>,
{
    let mut out = status.clone();
    let mut outcome = Outcome::default();
    if out.status.is_terminal() {
        return (out, outcome);
    }
    let mut phases_left = plan.phases.len();
    let mut plan_error: Option<String> = None;
    for phase in &plan.phases {
        let Some(pi) = out.phases.iter().position(|p| p.name == phase.name) else {
            let msg = format!(
                "fatal error: {}/{} missing phase status: {}.{}",
                run.namespace, run.instance, run.plan, phase.name
            );
            set_plan(&mut out, ExecutionStatus::FatalError, &msg, now);
            outcome.fatal = Some(msg);
            return (out, outcome);
        };
        if out.phases[pi].status.is_finished() {
            phases_left -= 1;
            continue;
        }
        let mut steps_left = phase.steps.len();
        let mut phase_error: Option<String> = None;
        for step in &phase.steps {
            let Some(si) = out.phases[pi]
                .steps
                .iter()
                .position(|s| s.name == step.name)
            else {
                let msg = format!(
                    "fatal error: {}/{} missing step status: {}.{}.{}",
                    run.namespace, run.instance, run.plan, phase.name, step.name
                );
                let ps = &mut out.phases[pi];
                ps.status = ExecutionStatus::FatalError;
                ps.message = msg.clone();
                set_plan(&mut out, ExecutionStatus::FatalError, &msg, now);
                outcome.fatal = Some(msg);
                return (out, outcome);
            };
            if out.phases[pi].steps[si].status.is_finished() {
                steps_left -= 1;
                continue;
            }
            let mut tasks_left = step.tasks.len();
            let mut error: Option<String> = None;
            let mut waiting: Vec<String> = Vec::new();
            for task in &step.tasks {
                let at = TaskRef {
                    phase: &phase.name,
                    step: &step.name,
                    task,
                };
                match run_task(at).await {
                    Ok(Progress::Done) => tasks_left -= 1,
                    Ok(Progress::Waiting(why)) => {
                        if !why.is_empty() {
                            waiting.push(why);
                        }
                    }
                    Err(TaskError::Transient(e)) => {
                        let msg = format!(
                            "A transient error when executing task {}.{}.{}.{}. Will retry. {e}",
                            run.plan, phase.name, step.name, task
                        );
                        // The first failing task's message stands for the step.
                        error.get_or_insert(msg);
                    }
                    Err(TaskError::Fatal(e)) => {
                        let msg = format!(
                            "fatal error: {}/{} failed in {}.{}.{}.{}: {e}",
                            run.namespace, run.instance, run.plan, phase.name, step.name, task
                        );
                        let ps = &mut out.phases[pi];
                        ps.steps[si].status = ExecutionStatus::FatalError;
                        ps.steps[si].message = msg.clone();
                        ps.status = ExecutionStatus::FatalError;
                        ps.message = msg.clone();
                        set_plan(&mut out, ExecutionStatus::FatalError, &msg, now);
                        outcome.fatal = Some(msg);
                        return (out, outcome);
                    }
                }
            }
            let st = &mut out.phases[pi].steps[si];
            if let Some(msg) = error {
                st.status = ExecutionStatus::Error;
                st.message = msg.clone();
                outcome.transient = true;
                phase_error.get_or_insert(msg);
            } else if tasks_left == 0 {
                st.status = ExecutionStatus::Complete;
                st.message.clear();
                steps_left -= 1;
            } else {
                st.status = ExecutionStatus::InProgress;
                st.message = waiting.join("; ");
            }
            if tasks_left > 0 && phase.strategy == Ordering::Serial {
                break;
            }
        }
        let ps = &mut out.phases[pi];
        if steps_left == 0 {
            ps.status = ExecutionStatus::Complete;
            ps.message.clear();
            phases_left -= 1;
        } else if let Some(msg) = phase_error {
            ps.status = ExecutionStatus::Error;
            ps.message = msg.clone();
            plan_error.get_or_insert(msg);
        } else {
            ps.status = ExecutionStatus::InProgress;
            ps.message.clear();
        }
        if steps_left > 0 && plan.strategy == Ordering::Serial {
            break;
        }
    }
    if phases_left == 0 {
        set_plan(&mut out, ExecutionStatus::Complete, "", now);
    } else if let Some(msg) = plan_error {
        set_plan(&mut out, ExecutionStatus::Error, &msg, now);
    } else {
        set_plan(&mut out, ExecutionStatus::InProgress, "", now);
    }
    (out, outcome)
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::collections::HashMap;

    use super::*;
    use crate::api::{OperatorVersionSpec, Phase, Step};

    fn plan(strategy: Ordering, phases: Vec<Phase>) -> Plan {
        Plan { strategy, phases }
    }

    fn phase(name: &str, strategy: Ordering, steps: &[(&str, &[&str])]) -> Phase {
        Phase {
            name: name.into(),
            strategy,
            steps: steps
                .iter()
                .map(|(s, tasks)| Step {
                    name: s.to_string(),
                    tasks: tasks.iter().map(|t| t.to_string()).collect(),
                })
                .collect(),
        }
    }

    fn time(s: i64) -> Time {
        Time(jiff::Timestamp::from_second(s).unwrap())
    }

    /// A fresh run of `plan`: initialized and reset.
    fn started(plan: &Plan) -> PlanStatus {
        let ov = OperatorVersion::new(
            "ov",
            OperatorVersionSpec {
                plans: BTreeMap::from([("deploy".to_string(), plan.clone())]),
                ..Default::default()
            },
        );
        let mut statuses = BTreeMap::new();
        initialize(&mut statuses, &ov);
        let mut st = statuses.remove("deploy").unwrap();
        assert_eq!(st.status, ExecutionStatus::NeverRun);
        reset(&mut st, "uid-1", &time(1));
        st
    }

    const RUN: Run<'static> = Run {
        namespace: "ns",
        instance: "inst",
        plan: "deploy",
    };

    /// Runs a pass where each task answers from `answers` (default: done) and records
    /// the tasks run, in order.
    async fn pass(
        plan: &Plan,
        status: &PlanStatus,
        answers: &HashMap<&str, Result<Progress, TaskError>>,
    ) -> (PlanStatus, Outcome, Vec<String>) {
        let ran = RefCell::new(Vec::new());
        let (st, out) = execute(RUN, plan, status, &time(2), |t| {
            ran.borrow_mut().push(t.task.to_string());
            let answer = answers.get(t.task).cloned().unwrap_or(Ok(Progress::Done));
            async move { answer }
        })
        .await;
        (st, out, ran.into_inner())
    }

    fn statuses(st: &PlanStatus) -> Vec<String> {
        let mut v = vec![st.status.to_string()];
        for p in &st.phases {
            v.push(format!("{}={}", p.name, p.status));
            for s in &p.steps {
                v.push(format!("{}.{}={}", p.name, s.name, s.status));
            }
        }
        v
    }

    fn waiting() -> Result<Progress, TaskError> {
        Ok(Progress::Waiting("waiting for deployment app".into()))
    }

    #[test]
    fn initialize_gives_every_plan_phase_and_step_never_run_and_keeps_existing() {
        let p = plan(
            Ordering::Serial,
            vec![phase(
                "a",
                Ordering::Serial,
                &[("s1", &["t"]), ("s2", &["t"])],
            )],
        );
        let ov = OperatorVersion::new(
            "ov",
            OperatorVersionSpec {
                plans: BTreeMap::from([("deploy".into(), p.clone()), ("update".into(), p)]),
                ..Default::default()
            },
        );
        let mut st = BTreeMap::new();
        st.insert(
            "deploy".to_string(),
            PlanStatus {
                name: "deploy".into(),
                status: ExecutionStatus::Complete,
                uid: "u".into(),
                phases: vec![PhaseStatus {
                    name: "a".into(),
                    status: ExecutionStatus::Complete,
                    steps: vec![StepStatus {
                        name: "s1".into(),
                        status: ExecutionStatus::Complete,
                        ..Default::default()
                    }],
                    ..Default::default()
                }],
                ..Default::default()
            },
        );
        initialize(&mut st, &ov);
        assert_eq!(
            statuses(&st["deploy"]),
            ["COMPLETE", "a=COMPLETE", "a.s1=COMPLETE", "a.s2=NEVER_RUN"]
        );
        assert_eq!(
            statuses(&st["update"]),
            [
                "NEVER_RUN",
                "a=NEVER_RUN",
                "a.s1=NEVER_RUN",
                "a.s2=NEVER_RUN"
            ]
        );
    }

    #[test]
    fn reset_sets_everything_pending_with_the_new_uid() {
        let p = plan(
            Ordering::Serial,
            vec![phase("a", Ordering::Serial, &[("s1", &["t"])])],
        );
        let st = started(&p);
        assert_eq!(st.uid, "uid-1");
        assert_eq!(statuses(&st), ["PENDING", "a=PENDING", "a.s1=PENDING"]);
        assert_eq!(st.last_updated_timestamp, Some(time(1)));
    }

    #[tokio::test]
    async fn serial_plan_runs_all_steps_in_one_pass_when_tasks_are_done() {
        let p = plan(
            Ordering::Serial,
            vec![
                phase("a", Ordering::Serial, &[("s1", &["t1"]), ("s2", &["t2"])]),
                phase("b", Ordering::Serial, &[("s3", &["t3"])]),
            ],
        );
        let (st, out, ran) = pass(&p, &started(&p), &HashMap::new()).await;
        assert_eq!(ran, ["t1", "t2", "t3"]);
        assert_eq!(
            statuses(&st),
            [
                "COMPLETE",
                "a=COMPLETE",
                "a.s1=COMPLETE",
                "a.s2=COMPLETE",
                "b=COMPLETE",
                "b.s3=COMPLETE"
            ]
        );
        assert_eq!(out, Outcome::default());
        assert_eq!(st.last_updated_timestamp, Some(time(2)));
    }

    #[tokio::test]
    async fn serial_phase_waits_for_its_step_before_the_next() {
        let p = plan(
            Ordering::Serial,
            vec![
                phase("a", Ordering::Serial, &[("s1", &["t1"]), ("s2", &["t2"])]),
                phase("b", Ordering::Serial, &[("s3", &["t3"])]),
            ],
        );
        let answers = HashMap::from([("t1", waiting())]);
        let (st, _, ran) = pass(&p, &started(&p), &answers).await;
        assert_eq!(ran, ["t1"]);
        assert_eq!(
            statuses(&st),
            [
                "IN_PROGRESS",
                "a=IN_PROGRESS",
                "a.s1=IN_PROGRESS",
                "a.s2=PENDING",
                "b=PENDING",
                "b.s3=PENDING"
            ]
        );
        assert_eq!(st.phases[0].steps[0].message, "waiting for deployment app");
        // Next pass: t1 done, the rest follows.
        let (st, _, ran) = pass(&p, &st, &HashMap::new()).await;
        assert_eq!(ran, ["t1", "t2", "t3"]);
        assert_eq!(st.status, ExecutionStatus::Complete);
    }

    #[tokio::test]
    async fn parallel_phase_runs_every_step_each_pass() {
        let p = plan(
            Ordering::Serial,
            vec![
                phase("a", Ordering::Parallel, &[("s1", &["t1"]), ("s2", &["t2"])]),
                phase("b", Ordering::Serial, &[("s3", &["t3"])]),
            ],
        );
        let answers = HashMap::from([("t1", waiting())]);
        let (st, _, ran) = pass(&p, &started(&p), &answers).await;
        assert_eq!(ran, ["t1", "t2"]);
        assert_eq!(
            statuses(&st),
            [
                "IN_PROGRESS",
                "a=IN_PROGRESS",
                "a.s1=IN_PROGRESS",
                "a.s2=COMPLETE",
                "b=PENDING",
                "b.s3=PENDING"
            ]
        );
        // The complete step does not run again.
        let (_, _, ran) = pass(&p, &st, &answers).await;
        assert_eq!(ran, ["t1"]);
    }

    #[tokio::test]
    async fn parallel_plan_runs_every_phase_each_pass() {
        let p = plan(
            Ordering::Parallel,
            vec![
                phase("a", Ordering::Serial, &[("s1", &["t1"])]),
                phase("b", Ordering::Serial, &[("s2", &["t2"])]),
            ],
        );
        let answers = HashMap::from([("t1", waiting())]);
        let (st, _, ran) = pass(&p, &started(&p), &answers).await;
        assert_eq!(ran, ["t1", "t2"]);
        assert_eq!(
            statuses(&st),
            [
                "IN_PROGRESS",
                "a=IN_PROGRESS",
                "a.s1=IN_PROGRESS",
                "b=COMPLETE",
                "b.s2=COMPLETE"
            ]
        );
    }

    #[tokio::test]
    async fn every_task_of_a_step_runs_each_pass_and_the_step_completes_when_all_are_done() {
        let p = plan(
            Ordering::Serial,
            vec![phase("a", Ordering::Serial, &[("s1", &["t1", "t2", "t3"])])],
        );
        let answers = HashMap::from([("t2", waiting())]);
        let (st, _, ran) = pass(&p, &started(&p), &answers).await;
        assert_eq!(ran, ["t1", "t2", "t3"]);
        assert_eq!(st.phases[0].steps[0].status, ExecutionStatus::InProgress);
        let (st, _, ran) = pass(&p, &st, &HashMap::new()).await;
        assert_eq!(ran, ["t1", "t2", "t3"]);
        assert_eq!(st.status, ExecutionStatus::Complete);
    }

    #[tokio::test]
    async fn transient_error_sets_error_with_kudos_message_and_is_retried() {
        let p = plan(
            Ordering::Serial,
            vec![phase(
                "a",
                Ordering::Serial,
                &[("s1", &["t1"]), ("s2", &["t2"])],
            )],
        );
        let answers = HashMap::from([("t1", Err(TaskError::Transient("dummy error".into())))]);
        let (st, out, ran) = pass(&p, &started(&p), &answers).await;
        assert_eq!(ran, ["t1"]);
        let msg = "A transient error when executing task deploy.a.s1.t1. Will retry. dummy error";
        assert_eq!(
            statuses(&st),
            ["ERROR", "a=ERROR", "a.s1=ERROR", "a.s2=PENDING"]
        );
        assert_eq!(st.phases[0].steps[0].message, msg);
        assert_eq!(st.phases[0].message, msg);
        assert_eq!(st.message, msg);
        assert!(out.transient && out.fatal.is_none());
        // Retried: passes now.
        let (st, out, _) = pass(&p, &st, &HashMap::new()).await;
        assert_eq!(st.status, ExecutionStatus::Complete);
        assert!(st.message.is_empty() && st.phases[0].steps[0].message.is_empty());
        assert_eq!(out, Outcome::default());
    }

    #[tokio::test]
    async fn transient_error_in_a_parallel_phase_lets_the_other_steps_run() {
        let p = plan(
            Ordering::Serial,
            vec![phase(
                "a",
                Ordering::Parallel,
                &[("s1", &["t1"]), ("s2", &["t2"])],
            )],
        );
        let answers = HashMap::from([("t1", Err(TaskError::Transient("boom".into())))]);
        let (st, _, ran) = pass(&p, &started(&p), &answers).await;
        assert_eq!(ran, ["t1", "t2"]);
        assert_eq!(
            statuses(&st),
            ["ERROR", "a=ERROR", "a.s1=ERROR", "a.s2=COMPLETE"]
        );
    }

    #[tokio::test]
    async fn fatal_error_stops_the_plan_and_nothing_runs_after() {
        let p = plan(
            Ordering::Parallel,
            vec![
                phase("a", Ordering::Parallel, &[("s1", &["t1", "t2"])]),
                phase("b", Ordering::Serial, &[("s2", &["t3"])]),
            ],
        );
        let answers = HashMap::from([("t1", Err(TaskError::Fatal("dummy error".into())))]);
        let (st, out, ran) = pass(&p, &started(&p), &answers).await;
        assert_eq!(ran, ["t1"]);
        let msg = "fatal error: ns/inst failed in deploy.a.s1.t1: dummy error";
        assert_eq!(
            statuses(&st),
            [
                "FATAL_ERROR",
                "a=FATAL_ERROR",
                "a.s1=FATAL_ERROR",
                "b=PENDING",
                "b.s2=PENDING"
            ]
        );
        assert_eq!(st.phases[0].steps[0].message, msg);
        assert_eq!(st.message, msg);
        assert_eq!(out.fatal.as_deref(), Some(msg));
        // A terminal plan does not run again.
        let (again, out, ran) = pass(&p, &st, &HashMap::new()).await;
        assert!(ran.is_empty());
        assert_eq!(again, st);
        assert_eq!(out, Outcome::default());
    }

    #[tokio::test]
    async fn missing_step_status_is_fatal() {
        let p = plan(
            Ordering::Serial,
            vec![phase("a", Ordering::Serial, &[("s1", &["t1"])])],
        );
        let mut st = started(&p);
        st.phases[0].steps.clear();
        let (st, out, _) = pass(&p, &st, &HashMap::new()).await;
        assert_eq!(st.status, ExecutionStatus::FatalError);
        assert_eq!(
            out.fatal.as_deref(),
            Some("fatal error: ns/inst missing step status: deploy.a.s1")
        );
    }

    #[tokio::test]
    async fn timestamp_moves_only_when_status_or_message_changes() {
        let p = plan(
            Ordering::Serial,
            vec![phase("a", Ordering::Serial, &[("s1", &["t1"])])],
        );
        let answers = HashMap::from([("t1", waiting())]);
        let (st, _, _) = pass(&p, &started(&p), &answers).await;
        assert_eq!(st.last_updated_timestamp, Some(time(2)));
        let (st2, _) = execute(RUN, &p, &st, &time(9), |_| async { waiting() }).await;
        assert_eq!(st2.last_updated_timestamp, Some(time(2)));
        assert_eq!(st2, st);
    }

    #[test]
    fn abandon_ends_the_plan_and_its_running_parts() {
        let p = plan(
            Ordering::Serial,
            vec![phase(
                "a",
                Ordering::Serial,
                &[("s1", &["t1"]), ("s2", &["t2"])],
            )],
        );
        let mut st = started(&p);
        st.status = ExecutionStatus::InProgress;
        st.phases[0].status = ExecutionStatus::InProgress;
        st.phases[0].steps[0].status = ExecutionStatus::Error;
        abandon(&mut st, ABANDONED_MESSAGE, &time(5));
        assert_eq!(
            statuses(&st),
            [
                "FATAL_ERROR",
                "a=FATAL_ERROR",
                "a.s1=FATAL_ERROR",
                "a.s2=PENDING"
            ]
        );
        assert_eq!(st.message, "plan abandoned by user");
        assert_eq!(st.last_updated_timestamp, Some(time(5)));
    }
}
