//! The reconciler: one custom resource, one run of its role or playbook, as operator-sdk's
//! Ansible operator reconciles it (`internal/ansible/controller/reconcile.go`).
//!
//! Per custom resource: with a `finalizer` in `watches.yaml` the finalizer goes on first;
//! then `Running` is marked, the role or playbook runs with the spec as variables, and the
//! outcome is written (`Successful`, or `Failure` with each failed task's name and message)
//! — all three only with `manageStatus`. A failed run is an error, retried with the key's
//! backoff. On deletion the finalizer's role or playbook runs (or the entry's own with the
//! finalizer's vars), and the finalizer is removed once it succeeded; that run writes the
//! status only when it fails (the finalizer comes off with a patch that must not conflict).
//!
//! Beyond operator-sdk, a custom resource that has not changed since its last successful run
//! (same generation and, with `watchAnnotationsChanges`, the same annotations) is not run
//! again until its period is due — whatever woke the reconcile (a relist, a label change,
//! a status write) — unless one of its dependents changed ([`crate::dependents`]). Each run
//! goes through its own [`proxy`](crate::proxy) session, and the kinds it created are
//! watched once it ends. The period is the `ansible.sdk.operatorframework.io/reconcile-period`
//! annotation, else the entry's `reconcilePeriod`, else the operator's default; a run's
//! `operator_sdk.util.requeue_after` sets it for that run. The annotations
//! `ansible.sdk.operatorframework.io/max-runner-artifacts` and `.../verbosity` override the
//! entry's artifact count and the operator's verbosity, as upstream.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kube::ResourceExt;
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams};
use opkit::finalizer::{Event, FinalizerError};
use opkit::{Action, Context};

use crate::artifacts::Artifacts;
use crate::dependents::Dependents;
use crate::metrics::UserMetrics;
use crate::proxy::{Owner, Proxy};
use crate::runner::{self, Ansible, Outcome, Run, RunnerError};
use crate::status::Status;
use crate::watches::Watch;

/// A Go duration: run this custom resource this often (wins over `reconcilePeriod`).
pub const RECONCILE_PERIOD_ANNOTATION: &str = "ansible.sdk.operatorframework.io/reconcile-period";
/// A number: runs' artifacts kept for this custom resource.
pub const MAX_RUNNER_ARTIFACTS_ANNOTATION: &str =
    "ansible.sdk.operatorframework.io/max-runner-artifacts";
/// A number: Ansible's verbosity (`-v` count) for this custom resource.
pub const VERBOSITY_ANNOTATION: &str = "ansible.sdk.operatorframework.io/verbosity";

/// Why a reconcile failed (the status says it too, with `manageStatus`).
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    /// The run could not happen or reported nothing.
    #[error(transparent)]
    Runner(#[from] RunnerError),
    /// Tasks failed.
    #[error("the run failed: {0}")]
    Failed(String),
    /// An annotation has a value the operator cannot read.
    #[error("annotation {annotation}: {message}")]
    Annotation {
        /// The annotation.
        annotation: &'static str,
        /// What is wrong.
        message: String,
    },
    /// A write to the API failed.
    #[error("{0}: {1}")]
    Api(&'static str, #[source] kube::Error),
    /// The custom resource has no name or uid.
    #[error("the custom resource has no name or uid")]
    Unnamed,
}

/// The last successful run of a custom resource.
#[derive(Debug, Clone)]
struct LastRun {
    generation: Option<i64>,
    /// The annotations, when `watchAnnotationsChanges` makes them count.
    annotations: Option<BTreeMap<String, String>>,
    /// When the next run is due (`None`: only on changes).
    due: Option<Instant>,
}

/// What one controller (one entry of `watches.yaml`) reconciles with.
pub(crate) struct PlaybookOperator {
    pub(crate) watch: Watch,
    pub(crate) resource: ApiResource,
    pub(crate) ansible: Ansible,
    /// The runs' data directories.
    artifacts: Arc<Artifacts>,
    /// The owner-reference proxy every run goes through.
    pub(crate) proxy: Arc<Proxy>,
    /// The watches of what the runs create.
    pub(crate) dependents: Dependents,
    /// The period when neither the annotation nor `watches.yaml` sets one.
    pub(crate) default_period: Option<Duration>,
    /// Ansible's `-v` count unless the annotation says.
    pub(crate) verbosity: u8,
    pub(crate) metrics: UserMetrics,
    /// Last successful runs by uid.
    runs: Arc<Mutex<HashMap<String, LastRun>>>,
}

/// Lock the last runs (a poisoned lock still holds usable data).
fn lock(
    runs: &Mutex<HashMap<String, LastRun>>,
) -> std::sync::MutexGuard<'_, HashMap<String, LastRun>> {
    runs.lock().unwrap_or_else(|p| p.into_inner())
}

impl PlaybookOperator {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        watch: Watch,
        resource: ApiResource,
        ansible: Ansible,
        work_dir: PathBuf,
        proxy: Arc<Proxy>,
        namespaced: bool,
        default_period: Option<Duration>,
        verbosity: u8,
        metrics: UserMetrics,
    ) -> PlaybookOperator {
        PlaybookOperator {
            dependents: Dependents::new(watch.clone(), namespaced),
            artifacts: Arc::new(Artifacts::new(
                &work_dir,
                &watch.group,
                &watch.version,
                &watch.kind,
            )),
            watch,
            resource,
            ansible,
            proxy,
            default_period,
            verbosity,
            metrics,
            runs: Arc::default(),
        }
    }

    fn runs(&self) -> std::sync::MutexGuard<'_, HashMap<String, LastRun>> {
        lock(&self.runs)
    }

    /// What to do when a custom resource's deletion is seen: forget its last run and its
    /// dependents' marks, and remove its runs' data directory ([`Artifacts::forget`]), so that
    /// none grows with the custom resources that come and go.
    pub(crate) fn forgetter(&self) -> impl Fn(&DynamicObject) + Send + Sync + 'static {
        let (runs, artifacts) = (self.runs.clone(), self.artifacts.clone());
        let dependents = self.dependents.clone();
        move |obj: &DynamicObject| {
            if let Some(uid) = obj.uid() {
                lock(&runs).remove(&uid);
            }
            dependents.forget(&opkit::Request::from_object(obj));
            artifacts.forget(obj.namespace().as_deref(), &obj.name_any());
        }
    }

    fn api(&self, ctx: &Context<PlaybookOperator>, obj: &DynamicObject) -> Api<DynamicObject> {
        match obj.namespace() {
            Some(ns) => Api::namespaced_with(ctx.client().clone(), &ns, &self.resource),
            None => Api::all_with(ctx.client().clone(), &self.resource),
        }
    }
}

fn annotation<'a>(obj: &'a DynamicObject, name: &str) -> Option<&'a str> {
    obj.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(name))
        .map(String::as_str)
}

/// Whether the custom resource is the operator's: its labels match the selector, or it is
/// being deleted with the finalizer on (a finalizer is never left behind).
pub(crate) fn selected(watch: &Watch, obj: &DynamicObject) -> bool {
    watch.selector.matches_set(obj.labels())
        || (obj.metadata.deletion_timestamp.is_some()
            && watch
                .finalizer
                .as_ref()
                .is_some_and(|f| obj.finalizers().contains(&f.name)))
}

/// Reconciles one custom resource; see the [module docs](self).
pub(crate) async fn reconcile(
    obj: Arc<DynamicObject>,
    ctx: Arc<Context<PlaybookOperator>>,
) -> Result<Action, ReconcileError> {
    if !selected(&ctx.watch, &obj) {
        return Ok(Action::await_change());
    }
    let op: &Context<PlaybookOperator> = &ctx;
    let period = match annotation(&obj, RECONCILE_PERIOD_ANNOTATION) {
        Some(text) => match opkit_apimachinery::duration::parse_std(text) {
            Ok(d) => Some(d).filter(|d| !d.is_zero()),
            Err(message) => {
                let message = format!("Unable to parse reconcile period annotation: {message}");
                mark(op, &obj, |s| s.mark_error(&message)).await?;
                return Err(ReconcileError::Annotation {
                    annotation: RECONCILE_PERIOD_ANNOTATION,
                    message,
                });
            }
        },
        None => ctx.watch.reconcile_period.or(ctx.default_period),
    };
    if ctx.watch.finalizer.is_none() {
        if obj.metadata.deletion_timestamp.is_some() {
            return Ok(Action::await_change());
        }
        return apply(&obj, op, period, false).await;
    }
    let result = ctx
        .finalize(obj, |event| async move {
            match event {
                Event::Apply(obj) => apply(&obj, op, period, false).await,
                Event::Cleanup(obj) => {
                    let action = apply(&obj, op, None, true).await?;
                    if let Some(uid) = obj.uid() {
                        op.runs().remove(&uid);
                    }
                    Ok(action)
                }
            }
        })
        .await;
    match result {
        Ok(action) => Ok(action),
        Err(FinalizerError::Apply(e) | FinalizerError::Cleanup(e)) => Err(e),
        Err(FinalizerError::Add(e)) => Err(ReconcileError::Api("adding the finalizer", e)),
        Err(FinalizerError::Remove(e)) => Err(ReconcileError::Api("removing the finalizer", e)),
        Err(FinalizerError::Unnamed | FinalizerError::Undeclared(_)) => {
            Err(ReconcileError::Unnamed)
        }
    }
}

fn after(due: Option<Instant>) -> Action {
    match due {
        Some(due) => Action::requeue(due.saturating_duration_since(Instant::now())),
        None => Action::await_change(),
    }
}

/// Runs the role or playbook for a live custom resource (or, `finalizer_run`, one being
/// deleted), unless nothing changed since its last successful run and its period is not due.
async fn apply(
    obj: &DynamicObject,
    ctx: &Context<PlaybookOperator>,
    period: Option<Duration>,
    finalizer_run: bool,
) -> Result<Action, ReconcileError> {
    let uid = obj.uid().ok_or(ReconcileError::Unnamed)?;
    let annotations = ctx
        .watch
        .watch_annotations_changes
        .then(|| obj.annotations().clone());
    let dependent_changed = ctx
        .dependents
        .take_changed(&opkit::Request::from_object(obj));
    if dependent_changed {
        tracing::debug!(name = %obj.name_any(), "a dependent resource changed: run again");
    }
    if !finalizer_run && !dependent_changed {
        let last = ctx.runs().get(&uid).cloned();
        if let Some(last) = last
            && last.generation == obj.metadata.generation
            && last.annotations == annotations
            && last.due.is_none_or(|due| Instant::now() < due)
        {
            tracing::debug!(name = %obj.name_any(), "unchanged since its last run: not run again");
            return Ok(after(last.due));
        }
    }
    let outcome = run_once(obj, ctx, finalizer_run).await;
    let outcome = match outcome {
        Ok(outcome) => outcome,
        Err(e) => {
            ctx.runs().remove(&uid);
            return Err(e);
        }
    };
    for update in &outcome.metrics {
        if let Err(e) = ctx.metrics.apply(update) {
            tracing::warn!(error = %e, "osdk_metric update refused");
        }
    }
    if let Some(message) = outcome.failure_message() {
        ctx.runs().remove(&uid);
        return Err(ReconcileError::Failed(message));
    }
    let period = outcome.requeue_after.or(period);
    let due = period.map(|p| Instant::now() + p);
    if !finalizer_run {
        ctx.runs().insert(
            uid,
            LastRun {
                generation: obj.metadata.generation,
                annotations,
                due,
            },
        );
    }
    Ok(after(due))
}

/// One run with its status marks (see the [module docs](self)).
async fn run_once(
    obj: &DynamicObject,
    ctx: &Context<PlaybookOperator>,
    finalizer_run: bool,
) -> Result<Outcome, ReconcileError> {
    let watch = &ctx.watch;
    if !finalizer_run {
        mark(ctx, obj, Status::mark_running).await?;
    }
    let value = serde_json::to_value(obj).map_err(|_| ReconcileError::Unnamed)?;
    let mut value = value;
    if !value["spec"].is_object() {
        value["spec"] = serde_json::json!({});
    }
    let target = if finalizer_run {
        watch
            .finalizer
            .as_ref()
            .and_then(|f| f.target.as_ref())
            .unwrap_or(&watch.target)
    } else {
        &watch.target
    };
    let number = |name: &str| -> Option<usize> {
        let text = annotation(obj, name)?;
        text.parse()
            .map_err(|e| tracing::info!(annotation = name, value = text, error = %e, "invalid annotation"))
            .ok()
    };
    let dir = ctx
        .artifacts
        .dir(obj.namespace().as_deref(), &obj.name_any());
    let session = ctx.proxy.session(Owner {
        api_version: ctx.resource.api_version.clone(),
        group: watch.group.clone(),
        kind: watch.kind.clone(),
        name: obj.name_any(),
        namespace: obj.namespace(),
        uid: obj.uid().ok_or(ReconcileError::Unnamed)?,
    });
    let kubeconfig = session.kubeconfig();
    let in_use = ctx.artifacts.begin(dir.clone());
    let run = Run {
        dir,
        target,
        extravars: crate::vars::parameters(watch, &value, finalizer_run),
        kubeconfig: &kubeconfig,
        max_artifacts: number(MAX_RUNNER_ARTIFACTS_ANNOTATION)
            .unwrap_or(watch.max_runner_artifacts)
            .max(1),
        verbosity: number(VERBOSITY_ANNOTATION)
            .map_or(ctx.verbosity, |v| u8::try_from(v.min(7)).unwrap_or(7)),
    };
    let started = Instant::now();
    let outcome = runner::run(&ctx.ansible, run).await;
    drop(in_use);
    ctx.dependents.watch(ctx, session.finish());
    let outcome = match outcome {
        Ok(outcome) => outcome,
        Err(e) => {
            let message = format!("Unable to run reconciliation: {e}");
            mark(ctx, obj, |s| s.mark_error(&message)).await?;
            return Err(e.into());
        }
    };
    tracing::info!(
        name = %obj.name_any(),
        namespace = obj.namespace().unwrap_or_default(),
        ok = outcome.result.ok,
        changed = outcome.result.changed,
        failures = outcome.result.failures,
        seconds = started.elapsed().as_secs_f64(),
        finalizer = finalizer_run,
        "ansible run finished"
    );
    let failure = outcome.failure_message();
    // The finalizer comes off with a patch on the object as cached: a successful deletion
    // run writes no status, so that patch does not conflict.
    if !finalizer_run || failure.is_some() {
        let result = outcome.result.clone();
        mark(ctx, obj, |s| s.mark_done(result, failure.as_deref())).await?;
    }
    Ok(outcome)
}

/// Reads the custom resource fresh (the run may have written its status), applies `change`
/// to its status and writes the conditions when they changed. Nothing with `manageStatus:
/// false`; a custom resource that is gone is not an error.
async fn mark(
    ctx: &Context<PlaybookOperator>,
    obj: &DynamicObject,
    change: impl FnOnce(&mut Status),
) -> Result<(), ReconcileError> {
    if !ctx.watch.manage_status {
        return Ok(());
    }
    let api = ctx.api(ctx, obj);
    let name = obj.name_any();
    let Some(fresh) = api
        .get_opt(&name)
        .await
        .map_err(|e| ReconcileError::Api("reading the custom resource", e))?
    else {
        return Ok(());
    };
    let value = serde_json::to_value(&fresh).map_err(|_| ReconcileError::Unnamed)?;
    let old = Status::from_object(&value);
    let mut new = old.clone();
    change(&mut new);
    if new == old {
        return Ok(());
    }
    match api
        .patch_status(
            &name,
            &PatchParams::default(),
            &Patch::Merge(new.conditions_patch()),
        )
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
        Err(e) => Err(ReconcileError::Api("updating the status", e)),
    }
}
