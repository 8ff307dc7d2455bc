//! The KUDO manager: the Instance controller on opkit's runtime, running each instance's
//! plans as KUDO's instance controller does.
//!
//! One reconcile is one pass:
//! 1. read the instance (fresh from the API) and its OperatorVersion;
//! 2. keep the finalizer `kudo.dev.instance.cleanup` on while the operator version has a
//!    `cleanup` plan that has not run;
//! 3. honour `plan abandon` ([`ABANDON_ANNOTATION`] equal to the running plan's uid);
//! 4. decide which plan runs ([`crate::plan`]) and start it — a new uid, every phase and
//!    step `PENDING`, a `PlanStarted` event — or report a refused change (`UpdateRefused`;
//!    with [`ManagerOptions::webhook`] the same refusal already happens at write time,
//!    [`crate::admission`]);
//! 5. run one pass of the running plan ([`crate::workflow`]), every task of each active step
//!    through [`crate::task::run`];
//! 6. write the status (status subresource), then the spec and metadata (the accepted-spec
//!    snapshot, `spec.planExecution`, step times, the finalizer); a `PlanFinished` event
//!    when the plan ended.
//!
//! Everything the manager knows is in the instance, so a manager stopped mid-plan and
//! started again continues the same run. The status is written before the spec: a pass
//! interrupted between the two writes leaves a state the next pass completes (a terminal
//! plan still named in `spec.planExecution` is ended again; a started plan not yet in the
//! snapshot is started again), and every write carries the `resourceVersion` it read, so a
//! pass on stale data fails with a conflict and is retried instead of undoing newer work.
//!
//! Requeues: a transient task error with the runtime's per-key backoff (5 ms doubling, capped
//! at KUDO's 60 s); a running plan
//! after KUDO's polling delay (1 s, plus 1 s per minute since the plan last changed, at most
//! 60 s) — changes of owned objects and child instances wake it sooner; a finished plan
//! waits for the next change.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, StatefulSet};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Pod, Service};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::PostParams;
use kube::core::PartialObjectMeta;
use kube::{Api, Client, Resource, ResourceExt};
use opkit::workqueue::Backoff;
use opkit::{Action, Controller, Manager, ManagerSettings, Request, Running, conditions};
use opkit_template::Value;
use opkit_template::kudo::{Variables, unwrap_param};

use crate::admission::{self, WebhookError, WebhookOptions};
use crate::api::{
    CLEANUP_FINALIZER, CLEANUP_PLAN, DEPLOY_PLAN, ExecutionStatus, Instance, InstanceSpec,
    InstanceStatus, Operator, OperatorVersion, Plan, PlanExecution, PlanStatus, UPDATE_PLAN,
    UPGRADE_PLAN,
};
use crate::plan::{self, Decision, Observed, SNAPSHOT_ANNOTATION};
use crate::task::{self, Context as TaskContext, Progress};
use crate::timing::{self, STEP_TIMES_ANNOTATION};
use crate::workflow::{self, ABANDONED_MESSAGE, Run, TaskRef};

/// `plan abandon`: set to the running plan's uid, the manager ends that plan with
/// `FATAL_ERROR` ("plan abandoned by user") and removes the annotation.
pub const ABANDON_ANNOTATION: &str = "kudo.opkit.dev/abandon";

/// The controller's name (the events' reporting controller, the field manager).
pub const CONTROLLER_NAME: &str = "instance-controller";

/// How the manager runs (the flags of `opkit kudo manager`).
#[derive(Debug, Clone, Default)]
pub struct ManagerOptions {
    /// Metrics, probes, leader election (the Lease `opkit-kudo-manager` when on) and the
    /// namespaces instances are watched in.
    pub manager: ManagerSettings,
    /// Instances reconciled at once (default: the number of CPUs).
    pub max_concurrent_reconciles: Option<usize>,
    /// Serve KUDO's instance admission webhook ([`crate::admission`]); off when `None`,
    /// and refused changes are then reported by `UpdateRefused` events only.
    pub webhook: Option<WebhookOptions>,
}

/// Why the manager cannot start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum ManagerError {
    /// The runtime failed (binding a port, leader election, …).
    #[error(transparent)]
    Runtime(#[from] opkit::Error),
    /// The admission webhook could not be set up.
    #[error(transparent)]
    Webhook(#[from] WebhookError),
}

/// Why a pass failed (retried with the runtime's backoff).
#[derive(Debug, thiserror::Error)]
pub(crate) enum ReconcileError {
    /// An API call failed.
    #[error("{0}: {1}")]
    Api(&'static str, #[source] kube::Error),
    /// The instance's operator version does not exist (yet).
    #[error(
        "InstanceController: Error getting operatorVersion {ov} for instance {namespace}/{name}: not found"
    )]
    MissingOperatorVersion {
        ov: String,
        namespace: String,
        name: String,
    },
    /// The snapshot annotation is not readable.
    #[error("annotation {SNAPSHOT_ANNOTATION}: {0}")]
    Snapshot(#[source] serde_json::Error),
    /// The health of the instance's workloads could not be read.
    #[error("reading the readiness of the instance's resources: {0}")]
    Readiness(String),
}

/// What the controller keeps between passes (nothing the instance does not also hold).
#[derive(Default)]
pub(crate) struct Engine {
    /// The last refusal reported per instance uid, so a refusal is reported once.
    refusals: Mutex<HashMap<String, String>>,
}

fn manager(options: &ManagerOptions) -> Manager {
    let mut manager = options.manager.builder().build();
    let workers = options
        .max_concurrent_reconciles
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    manager.add(
        Controller::<Instance>::new(CONTROLLER_NAME)
            // Child instances (KudoOperator) wake their parent.
            .owns::<Instance>()
            .watches(owner_instances::<Deployment>)
            .watches(owner_instances::<StatefulSet>)
            .watches(owner_instances::<DaemonSet>)
            .watches(owner_instances::<Service>)
            .watches(owner_instances::<Job>)
            .watches(owner_instances::<Pod>)
            .watches_with_caches(
                |ov: &OperatorVersion, caches: &opkit::Caches| instances_of(ov, caches),
                None,
            )
            .max_concurrent_reconciles(workers)
            // The runtime's backoff, capped at KUDO's longest retry delay (1 minute).
            .backoff(Backoff {
                max: Duration::from_secs(60),
                ..Backoff::default()
            })
            .build(reconcile, Engine::default()),
    );
    manager
}

/// The instances owning `obj` (any owner reference of kind Instance: KUDO's objects carry
/// one, controller or not).
fn owner_instances<K>(obj: &PartialObjectMeta<K>) -> Vec<Request>
where
    K: Resource,
{
    let namespace = obj.namespace().unwrap_or_default();
    obj.owner_references()
        .iter()
        .filter(|o| o.kind == "Instance" && o.api_version == crate::api::API_VERSION)
        .map(|o| Request::namespaced(namespace.clone(), o.name.clone()))
        .collect()
}

/// The instances running `ov` (an edited operator version is picked up).
fn instances_of(ov: &OperatorVersion, caches: &opkit::Caches) -> Vec<Request> {
    let Ok(store) = caches.store::<Instance>() else {
        return Vec::new();
    };
    let namespace = ov.namespace().unwrap_or_default();
    let name = ov.name_any();
    store
        .state()
        .iter()
        .filter(|i| i.namespace().as_deref() == Some(namespace.as_str()))
        .filter(|i| i.spec.operator_version.name.as_deref() == Some(name.as_str()))
        .map(|i| Request::from_object(i.as_ref()))
        .collect()
}

/// The manager with its webhook, if any: the configuration is written first, so the
/// self-managed certificates publish their CA into it before the server answers.
async fn prepare(client: &Client, options: &ManagerOptions) -> Result<Manager, ManagerError> {
    let mut manager = manager(options);
    if let Some(webhook) = &options.webhook {
        admission::apply_configuration(client, webhook).await?;
        let ovs = manager
            .caches()
            .store::<OperatorVersion>()
            .map_err(WebhookError::from)?;
        manager.set_webhook_server(admission::server(webhook, ovs));
    }
    Ok(manager)
}

/// Starts the manager on `client` and returns at once (see [`Running`]; with a webhook,
/// it is served once this returns); [`run`] is this plus waiting for SIGTERM.
pub async fn start(client: Client, options: ManagerOptions) -> Result<Running, ManagerError> {
    let manager = prepare(&client, &options).await?;
    Ok(manager.start(client).await?)
}

/// Runs the manager until SIGINT or SIGTERM (graceful shutdown) or until the leader Lease
/// is lost (an error).
pub async fn run(client: Client, options: ManagerOptions) -> Result<(), ManagerError> {
    let manager = prepare(&client, &options).await?;
    Ok(manager.run(client).await?)
}

fn now() -> Time {
    let secs = jiff::Timestamp::now().as_second();
    Time(jiff::Timestamp::from_second(secs).unwrap_or(jiff::Timestamp::UNIX_EPOCH))
}

fn annotation<'a>(i: &'a Instance, name: &str) -> Option<&'a str> {
    i.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(name))
        .map(String::as_str)
}

fn set_annotation(i: &mut Instance, name: &str, value: Option<String>) {
    let annotations = i.metadata.annotations.get_or_insert_with(BTreeMap::new);
    match value {
        Some(v) => {
            annotations.insert(name.to_string(), v);
        }
        None => {
            annotations.remove(name);
        }
    }
}

fn has_finalizer(i: &Instance) -> bool {
    i.finalizers().iter().any(|f| f == CLEANUP_FINALIZER)
}

fn remove_finalizer(i: &mut Instance) {
    if let Some(f) = i.metadata.finalizers.as_mut() {
        f.retain(|x| x != CLEANUP_FINALIZER);
    }
}

/// Events published after the writes succeeded.
struct Note {
    warning: bool,
    reason: &'static str,
    action: String,
    note: String,
}

impl Note {
    fn normal(reason: &'static str, action: String, note: String) -> Note {
        Note {
            warning: false,
            reason,
            action,
            note,
        }
    }

    fn warning(reason: &'static str, action: String, note: String) -> Note {
        Note {
            warning: true,
            reason,
            action,
            note,
        }
    }
}

/// One pass over one instance; see the [module docs](self).
pub(crate) async fn reconcile(
    cached: Arc<Instance>,
    ctx: Arc<opkit::Context<Engine>>,
) -> Result<Action, ReconcileError> {
    let namespace = cached.namespace().unwrap_or_default();
    let name = cached.name_any();
    let api: Api<Instance> = Api::namespaced(ctx.client().clone(), &namespace);
    let Some(read) = api
        .get_opt(&name)
        .await
        .map_err(|e| ReconcileError::Api("reading the instance", e))?
    else {
        return Ok(Action::await_change());
    };
    let ov_namespace = read
        .spec
        .operator_version
        .namespace
        .clone()
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| namespace.clone());
    let ov_name = read.spec.operator_version.name.clone().unwrap_or_default();
    let ovs: Api<OperatorVersion> = Api::namespaced(ctx.client().clone(), &ov_namespace);
    let deleting = read.metadata.deletion_timestamp.is_some();
    let Some(ov) = ovs
        .get_opt(&ov_name)
        .await
        .map_err(|e| ReconcileError::Api("reading the operator version", e))?
    else {
        let err = ReconcileError::MissingOperatorVersion {
            ov: ov_name,
            namespace,
            name,
        };
        if deleting && has_finalizer(&read) {
            // Nothing can run the cleanup plan: let the instance go.
            let mut gone = read.clone();
            remove_finalizer(&mut gone);
            api.replace(&gone.name_any(), &PostParams::default(), &gone)
                .await
                .map_err(|e| ReconcileError::Api("removing the finalizer", e))?;
            publish(
                &ctx,
                &read,
                Note::warning(
                    "InvalidOperatorVersion",
                    "Cleanup".into(),
                    format!("{err}; the cleanup plan cannot run"),
                ),
            )
            .await;
            return Ok(Action::await_change());
        }
        publish(
            &ctx,
            &read,
            Note::warning(
                "InvalidOperatorVersion",
                "Reconcile".into(),
                err.to_string(),
            ),
        )
        .await;
        return Err(err);
    };
    let operator_name = ov.spec.operator.name.clone().unwrap_or_default();
    let operator = Api::<Operator>::namespaced(ctx.client().clone(), &ov_namespace)
        .get_opt(&operator_name)
        .await
        .map_err(|e| ReconcileError::Api("reading the operator", e))?
        .unwrap_or_else(|| Operator::new(&operator_name, Default::default()));

    let mut inst = read.clone();
    let mut status = inst.status.clone().unwrap_or_default();
    let mut notes: Vec<Note> = Vec::new();
    let now = now();
    workflow::initialize(&mut status.plan_status, &ov);
    let has_cleanup = ov.spec.plans.contains_key(CLEANUP_PLAN);
    let cleanup_status = status.plan_status.get(CLEANUP_PLAN).map(|p| p.status);

    // 2. The finalizer.
    // It guards the cleanup plan and the removal of the cluster-scoped objects the instance's
    // tasks create (no owner reference can reach those), so every instance gets it.
    if !deleting
        && !has_finalizer(&inst)
        && cleanup_status.is_none_or(|s| s == ExecutionStatus::NeverRun)
    {
        inst.metadata
            .finalizers
            .get_or_insert_with(Vec::new)
            .push(CLEANUP_FINALIZER.to_string());
    }

    // The accepted spec: the snapshot, or — for an instance some other manager ran (no
    // snapshot, but plans ran) — the spec as it is.
    let mut accepted = plan::accepted_spec(&inst).map_err(ReconcileError::Snapshot)?;

    // A plan the snapshot names but whose run already ended (a pass stopped between its
    // two writes) is ended now.
    if let Some(acc) = accepted.as_mut()
        && plan::run_ended(acc, Some(&status))
    {
        let pe = acc.plan_execution.clone();
        end_plan(&mut inst, acc, &pe);
    }

    // 3. Abandon.
    if let Some(target) = annotation(&inst, ABANDON_ANNOTATION).map(str::to_string) {
        let running = accepted
            .as_ref()
            .map(|a| a.plan_execution.clone())
            .unwrap_or_default();
        set_annotation(&mut inst, ABANDON_ANNOTATION, None);
        match status.plan_status.get_mut(&running.plan_name) {
            Some(ps) if !running.plan_name.is_empty() && running.uid == target => {
                workflow::abandon(ps, ABANDONED_MESSAGE, &now);
                if let Some(acc) = accepted.as_mut() {
                    end_plan(&mut inst, acc, &running);
                }
                notes.push(Note::warning(
                    "PlanAbandoned",
                    running.plan_name.clone(),
                    format!("Execution of plan {} abandoned by user", running.plan_name),
                ));
            }
            _ => notes.push(Note::warning(
                "AbandonIgnored",
                "Abandon".into(),
                format!("no running plan has uid {target}: nothing abandoned"),
            )),
        }
    }

    // 4. Which plan runs.
    let previous_ov = match accepted
        .as_ref()
        .and_then(|a| a.operator_version.name.clone())
    {
        Some(prev) if prev != ov_name => ovs
            .get_opt(&prev)
            .await
            .map_err(|e| ReconcileError::Api("reading the previous operator version", e))?,
        _ => None,
    };
    let decision = plan::decide(&Observed {
        namespace: &namespace,
        name: &name,
        accepted: accepted.as_ref(),
        current: &inst.spec,
        operator_version: &ov,
        previous_operator_version: previous_ov.as_ref(),
        deleting,
        cleanup_status,
    });
    let uid_key = inst.uid().unwrap_or_default();
    match decision {
        Decision::Keep => {
            forget_refusal(&ctx, &uid_key);
            if accepted.is_none() {
                accepted = Some(inst.spec.clone());
            }
        }
        Decision::Refuse(message) => {
            if note_refusal(&ctx, &uid_key, &message) {
                notes.push(Note::warning("UpdateRefused", "Update".into(), message));
            }
        }
        Decision::Start { plan, uid } => {
            forget_refusal(&ctx, &uid_key);
            let uid = uid.unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
            inst.spec.plan_execution = PlanExecution {
                plan_name: plan.clone(),
                uid: uid.clone(),
                status: Some(ExecutionStatus::Pending),
            };
            let mut acc = inst.spec.clone();
            acc.plan_execution.status = None;
            accepted = Some(acc);
            if let Some(ps) = status.plan_status.get_mut(&plan) {
                workflow::reset(ps, &uid, &now);
            }
            if [DEPLOY_PLAN, UPGRADE_PLAN, UPDATE_PLAN].contains(&plan.as_str()) {
                set_readiness(&mut status, Readiness::PlanInProgress);
            }
        }
    }

    // 5. One pass of the running plan.
    let mut action = Action::await_change();
    let running = accepted
        .as_ref()
        .map(|a| a.plan_execution.clone())
        .unwrap_or_default();
    if !running.plan_name.is_empty() {
        let ps = status
            .plan_status
            .entry(running.plan_name.clone())
            .or_insert_with(|| PlanStatus {
                name: running.plan_name.clone(),
                ..PlanStatus::default()
            });
        if ps.uid != running.uid {
            workflow::reset(ps, &running.uid, &now);
        }
        if ps.status == ExecutionStatus::Pending {
            notes.push(Note::normal(
                "PlanStarted",
                running.plan_name.clone(),
                format!("Execution of plan {} started", running.plan_name),
            ));
        }
        let before = ps.clone();
        let task_ctx = TaskContext {
            client: ctx.client().clone(),
            instance: inst.clone(),
            operator_version: ov.clone(),
            operator: operator.clone(),
            variables: Variables::default(),
            recorder: ctx.recorder().clone(),
        };
        let (after, outcome) = match ov.spec.plans.get(&running.plan_name) {
            Some(plan_spec) => pass(&task_ctx, &running.plan_name, plan_spec, &before, &now).await,
            None => {
                let mut failed = before.clone();
                let msg = format!(
                    "fatal error: could not find required plan: '{}'",
                    running.plan_name
                );
                failed.status = ExecutionStatus::FatalError;
                failed.message = msg.clone();
                failed.last_updated_timestamp = Some(now.clone());
                (
                    failed,
                    workflow::Outcome {
                        transient: false,
                        fatal: Some(msg),
                    },
                )
            }
        };
        if let Some(msg) = &outcome.fatal {
            notes.push(Note::warning(
                "PlanFailed",
                running.plan_name.clone(),
                msg.clone(),
            ));
        }
        if inst.spec.plan_execution.uid == running.uid {
            inst.spec.plan_execution.status = Some(after.status);
        }
        let mut times = timing::parse(annotation(&inst, STEP_TIMES_ANNOTATION));
        if timing::record(&mut times, &after, &now) {
            let text = serde_json::to_string(&times).unwrap_or_default();
            set_annotation(&mut inst, STEP_TIMES_ANNOTATION, Some(text));
        }
        if after.status == ExecutionStatus::FatalError {
            set_readiness(&mut status, Readiness::PlanFatal);
        }
        let finished = after.status.is_terminal();
        action = if outcome.transient {
            Action::requeue_with_backoff()
        } else if finished {
            Action::await_change()
        } else {
            Action::requeue(poll_delay(&after, &now))
        };
        status
            .plan_status
            .insert(running.plan_name.clone(), after.clone());
        if finished {
            if let Some(acc) = accepted.as_mut() {
                end_plan(&mut inst, acc, &running);
            }
            notes.push(Note::normal(
                "PlanFinished",
                format!("{}:{}", running.plan_name, after.status),
                format!(
                    "Execution of plan {} finished with status {}",
                    running.plan_name, after.status
                ),
            ));
            // A change refused while the plan ran is decided again now.
            action = Action::requeue(Duration::ZERO);
        }
    }

    // Readiness from the health of what the instance owns, whenever no plan runs (a plan
    // that ended fatally keeps `PlanInFatalError` until another plan runs).
    if inst.spec.plan_execution.plan_name.is_empty() && !deleting && !fatal_readiness(&status) {
        let ready = crate::ready::ready(ctx.client(), &inst)
            .await
            .map_err(|e| ReconcileError::Readiness(e.to_string()))?;
        conditions::set(&mut status.conditions, ready);
    }

    // On deletion the finalizer goes once the cleanup plan is complete (or there is none)
    // and the cluster-scoped objects the instance created are gone.
    if deleting && has_finalizer(&inst) {
        let cleanup = status.plan_status.get(CLEANUP_PLAN).map(|p| p.status);
        if !has_cleanup || cleanup == Some(ExecutionStatus::Complete) {
            match crate::leftovers::remove(ctx.client(), &inst).await {
                Ok(Progress::Done) => remove_finalizer(&mut inst),
                Ok(Progress::Waiting(_)) => action = Action::requeue(Duration::from_secs(1)),
                Err(e) => {
                    tracing::warn!(instance = %name, "removing cluster-scoped objects: {e}");
                    action = Action::requeue_with_backoff();
                }
            }
        }
    }
    if let Some(acc) = &accepted {
        let text = serde_json::to_string(acc).map_err(ReconcileError::Snapshot)?;
        set_annotation(&mut inst, SNAPSHOT_ANNOTATION, Some(text));
    }

    // 6. Writes: status, then spec and metadata.
    let mut rv = read.resource_version();
    if read.status.as_ref() != Some(&status) {
        let mut with_status = read.clone();
        with_status.status = Some(status.clone());
        match api
            .replace_status(&name, &PostParams::default(), &with_status)
            .await
        {
            Ok(written) => rv = written.resource_version(),
            // The instance went while its last finalizer was removed: nothing to write.
            Err(kube::Error::Api(e)) if e.code == 404 => return Ok(Action::await_change()),
            Err(e) => return Err(ReconcileError::Api("writing the status", e)),
        }
    }
    if inst.metadata != read.metadata || inst.spec != read.spec {
        inst.metadata.resource_version = rv;
        inst.status = None;
        api.replace(&name, &PostParams::default(), &inst)
            .await
            .map_err(|e| ReconcileError::Api("writing the instance", e))?;
    }
    for note in notes {
        publish(&ctx, &read, note).await;
    }
    Ok(action)
}

/// Ends the run `running` ([`plan::end_run`]).
fn end_plan(inst: &mut Instance, accepted: &mut InstanceSpec, running: &PlanExecution) {
    plan::end_run(accepted, &mut inst.spec, running);
}

/// KUDO's polling delay for a running plan: 1 s plus 1 s per minute since it last
/// changed, at most 60 s.
fn poll_delay(ps: &PlanStatus, now: &Time) -> Duration {
    let since = ps
        .last_updated_timestamp
        .as_ref()
        .map(|t| now.0.as_second() - t.0.as_second())
        .unwrap_or(0)
        .max(0);
    Duration::from_secs((since / 60).min(59) as u64 + 1)
}

/// One pass of `plan` for the instance in `ctx`, its tasks run with their variables.
async fn pass(
    ctx: &TaskContext,
    plan_name: &str,
    plan_spec: &Plan,
    status: &PlanStatus,
    now: &Time,
) -> (PlanStatus, workflow::Outcome) {
    let namespace = ctx.instance.namespace().unwrap_or_default();
    let name = ctx.instance.name_any();
    let run = Run {
        namespace: &namespace,
        instance: &name,
        plan: plan_name,
    };
    let base = match variables(ctx, plan_name, plan_spec) {
        Ok(v) => v,
        Err(msg) => {
            let mut failed = status.clone();
            failed.status = ExecutionStatus::FatalError;
            failed.message = msg.clone();
            failed.last_updated_timestamp = Some(now.clone());
            return (
                failed,
                workflow::Outcome {
                    transient: false,
                    fatal: Some(msg),
                },
            );
        }
    };
    workflow::execute(run, plan_spec, status, now, |at: TaskRef<'_>| {
        let mut task_ctx = ctx.clone();
        task_ctx.variables = Variables {
            phase_name: at.phase.to_string(),
            step_name: at.step.to_string(),
            ..base.clone()
        };
        let task = task::find(&ctx.operator_version, at.task).cloned();
        async move {
            let task = task?;
            task::run(&task_ctx, &task).await
        }
    })
    .await
}

/// The template variables of a plan run: parameters (the instance's values over the
/// defaults, unwrapped by type) and pipe artifact names, as KUDO computes them.
fn variables(ctx: &TaskContext, plan_name: &str, plan_spec: &Plan) -> Result<Variables, String> {
    let ov = &ctx.operator_version;
    let mut params = BTreeMap::new();
    for p in &ov.spec.parameters {
        let raw = ctx
            .instance
            .spec
            .parameters
            .get(&p.name)
            .or(p.default.as_ref());
        let value: Value = unwrap_param(raw.map(String::as_str), p.kind().render_kind())
            .map_err(|e| format!("fatal error: could not parse parameters: {}: {e}", p.name))?;
        params.insert(p.name.clone(), value);
    }
    let name = ctx.instance.name_any();
    let pipes = pipes(&name, plan_name, plan_spec, ov)
        .map_err(|e| format!("fatal error: could not make task pipes: {e}"))?;
    Ok(Variables {
        operator_name: ov.spec.operator.name.clone().unwrap_or_default(),
        name,
        namespace: ctx.instance.namespace().unwrap_or_default(),
        app_version: ov.spec.app_version.clone(),
        operator_version: ov.spec.version.clone(),
        plan_name: plan_name.to_string(),
        phase_name: String::new(),
        step_name: String::new(),
        params,
        pipes,
    })
}

/// `.Pipes`: each pipe key of the plan's `Pipe` tasks → its artifact's name,
/// `<instance>.<plan>.<phase>.<step>.<task>.<key>` with everything but `a-z0-9` removed
/// from each part (KUDO's `PipeArtifactName`).
fn pipes(
    instance: &str,
    plan_name: &str,
    plan_spec: &Plan,
    ov: &OperatorVersion,
) -> Result<BTreeMap<String, String>, String> {
    let sanitize = |s: &str| -> String {
        s.to_lowercase()
            .chars()
            .filter(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
            .collect()
    };
    let mut out = BTreeMap::new();
    for phase in &plan_spec.phases {
        for step in &phase.steps {
            for task_name in &step.tasks {
                let Some(t) = ov.spec.tasks.iter().find(|t| &t.name == task_name) else {
                    continue;
                };
                if t.kind != "Pipe" {
                    continue;
                }
                for pipe in t.spec.pipe.iter().flatten() {
                    if out.contains_key(&pipe.key) {
                        return Err(format!("duplicated pipe key {}", pipe.key));
                    }
                    let parts = [
                        instance,
                        plan_name,
                        &phase.name,
                        &step.name,
                        task_name,
                        &pipe.key,
                    ];
                    let name: Vec<String> = parts.iter().map(|p| sanitize(p)).collect();
                    out.insert(pipe.key.clone(), name.join("."));
                }
            }
        }
    }
    Ok(out)
}

/// The `Ready` condition as plans set it (KUDO's readiness reasons).
enum Readiness {
    PlanInProgress,
    PlanFatal,
}

/// Whether `Ready` says the last plan ended in a fatal error.
fn fatal_readiness(status: &InstanceStatus) -> bool {
    status
        .conditions
        .iter()
        .any(|c| c.type_ == crate::ready::READY && c.reason == crate::ready::PLAN_IN_FATAL_ERROR)
}

fn set_readiness(status: &mut InstanceStatus, r: Readiness) {
    let c = match r {
        Readiness::PlanInProgress => conditions::ready(false)
            .unknown()
            .reason(crate::ready::PLAN_IN_PROGRESS),
        Readiness::PlanFatal => conditions::ready(false)
            .unknown()
            .reason(crate::ready::PLAN_IN_FATAL_ERROR),
    };
    conditions::set(&mut status.conditions, c);
}

fn note_refusal(ctx: &opkit::Context<Engine>, uid: &str, message: &str) -> bool {
    let mut seen = ctx.refusals.lock().unwrap_or_else(|p| p.into_inner());
    if seen.get(uid).map(String::as_str) == Some(message) {
        return false;
    }
    seen.insert(uid.to_string(), message.to_string());
    true
}

fn forget_refusal(ctx: &opkit::Context<Engine>, uid: &str) {
    ctx.refusals
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .remove(uid);
}

async fn publish(ctx: &opkit::Context<Engine>, inst: &Instance, note: Note) {
    let mut event = ctx
        .event(inst)
        .reason(note.reason)
        .action(note.action)
        .note(note.note);
    if note.warning {
        event = event.warning();
    }
    if let Err(e) = event.publish().await {
        tracing::warn!(instance = %inst.name_any(), error = %e, "cannot record an event");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{OperatorVersionSpec, Phase, PipeSpec, Step, Task, TaskSpec};

    #[test]
    fn pipe_names_follow_kudos_artifact_naming() {
        let plan = Plan {
            phases: vec![Phase {
                name: "Main-Phase".into(),
                steps: vec![Step {
                    name: "gen_certs".into(),
                    tasks: vec!["pipe-task".into()],
                }],
                ..Default::default()
            }],
            ..Default::default()
        };
        let mut ov = OperatorVersion::new(
            "ov",
            OperatorVersionSpec {
                tasks: vec![Task {
                    name: "pipe-task".into(),
                    kind: "Pipe".into(),
                    spec: TaskSpec {
                        pipe: Some(vec![PipeSpec {
                            file: "/tmp/c".into(),
                            kind: "Secret".into(),
                            key: "Cert_1".into(),
                            ..Default::default()
                        }]),
                        ..Default::default()
                    },
                }],
                ..Default::default()
            },
        );
        let got = pipes("My-Inst", "deploy", &plan, &ov).unwrap();
        assert_eq!(
            got["Cert_1"],
            "myinst.deploy.mainphase.gencerts.pipetask.cert1"
        );
        let dup = ov.spec.tasks[0].clone();
        ov.spec.tasks[0]
            .spec
            .pipe
            .as_mut()
            .unwrap()
            .push(dup.spec.pipe.unwrap()[0].clone());
        assert_eq!(
            pipes("i", "deploy", &plan, &ov).unwrap_err(),
            "duplicated pipe key Cert_1"
        );
    }

    #[test]
    fn poll_delay_grows_a_second_per_minute_up_to_a_minute() {
        let t = |s| Time(jiff::Timestamp::from_second(s).unwrap());
        let ps = |s| PlanStatus {
            last_updated_timestamp: Some(t(s)),
            ..Default::default()
        };
        assert_eq!(poll_delay(&ps(1000), &t(1000)), Duration::from_secs(1));
        assert_eq!(
            poll_delay(&ps(1000), &t(1000 + 150)),
            Duration::from_secs(3)
        );
        assert_eq!(poll_delay(&ps(0), &t(100_000)), Duration::from_secs(60));
    }
}
