//! Job → Pods that run to completion, as upstream's Job controller (NonIndexed mode): up to
//! `parallelism` active pods until `completions` succeeded; more than `backoffLimit` failures
//! fail the Job; `suspend` removes active pods; `ttlSecondsAfterFinished` deletes finished Jobs.
//! Conditions follow 1.31+: `SuccessCriteriaMet` then `Complete`, `FailureTarget` then `Failed`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::batch::v1::{Job, JobCondition, JobStatus};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use opkit::{Action, Context, Controller, ControllerDef};
use serde_json::json;

use super::pods::{self, Naming};
use super::{BACKOFF, PodOwners, Result, WORKERS, controller_ref, is_status, reconciler};
use crate::Settings;

type Ctx = Context<PodOwners>;

/// The Job controller.
pub(crate) fn controller(settings: Settings) -> ControllerDef {
    let data = PodOwners::new(settings);
    Controller::<Job>::new("job")
        .index_owners::<Pod>()
        .expectations::<Pod>(data.expectations.clone())
        .owns::<Pod>()
        .backoff(BACKOFF)
        .max_concurrent_reconciles(WORKERS)
        .build(reconciler("job", reconcile), data)
}

/// Whether a Job has a True `Complete` or `Failed` condition.
pub(crate) fn finished(job: &Job) -> Option<(&'static str, Option<Timestamp>)> {
    let conds = job.status.as_ref()?.conditions.as_ref()?;
    for kind in ["Complete", "Failed"] {
        if let Some(c) = conds.iter().find(|c| c.type_ == kind && c.status == "True") {
            return Some((kind, c.last_transition_time.as_ref().map(|t| t.0)));
        }
    }
    None
}

fn set_condition(
    conds: &mut Vec<JobCondition>,
    type_: &str,
    status: &str,
    reason: &str,
    message: &str,
) {
    let now = Time(Timestamp::now());
    if let Some(c) = conds.iter_mut().find(|c| c.type_ == type_) {
        if c.status != status {
            c.last_transition_time = Some(now.clone());
        }
        c.status = status.into();
        c.reason = Some(reason.into());
        c.message = Some(message.into());
        c.last_probe_time = Some(now);
        return;
    }
    conds.push(JobCondition {
        type_: type_.into(),
        status: status.into(),
        reason: Some(reason.into()),
        message: Some(message.into()),
        last_probe_time: Some(now.clone()),
        last_transition_time: Some(now),
    });
}

async fn reconcile(job: Arc<Job>, ctx: Arc<Ctx>) -> Result<Action> {
    let ns = job.metadata.namespace.clone().unwrap_or_default();
    let name = job.metadata.name.clone().unwrap_or_default();
    let uid = job.metadata.uid.clone().unwrap_or_default();
    let jobs: Api<Job> = Api::namespaced(ctx.client().clone(), &ns);
    if job.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let spec = job.spec.clone().unwrap_or_default();
    if let Some((_, at)) = finished(&job) {
        return ttl(&jobs, &job, at).await;
    }
    let api: Api<Pod> = Api::namespaced(ctx.client().clone(), &ns);
    let owned = ctx.owner_index::<Pod>()?.owned_by(&uid);
    let mut active: Vec<Arc<Pod>> = owned
        .iter()
        .filter(|p| pods::is_active(p))
        .cloned()
        .collect();
    let succeeded = owned
        .iter()
        .filter(|p| pods::phase(p) == "Succeeded")
        .count() as i32;
    let failed = owned.iter().filter(|p| pods::phase(p) == "Failed").count() as i32;
    let parallelism = spec.parallelism.unwrap_or(1).max(0);
    let backoff_limit = spec.backoff_limit.unwrap_or(6);
    let suspend = spec.suspend.unwrap_or(false);
    let old = job.status.clone().unwrap_or_default();
    let mut conds = old.conditions.clone().unwrap_or_default();
    let mut start_time = old.start_time.clone();
    let mut completion_time = old.completion_time.clone();
    let complete = match spec.completions {
        Some(c) => succeeded >= c,
        None => succeeded > 0 && active.is_empty(),
    };
    let satisfied = ctx.expectations.satisfied(&uid);
    if failed > backoff_limit {
        let msg = "Job has reached the specified backoff limit";
        set_condition(
            &mut conds,
            "FailureTarget",
            "True",
            "BackoffLimitExceeded",
            msg,
        );
        set_condition(&mut conds, "Failed", "True", "BackoffLimitExceeded", msg);
        delete(&ctx, &api, &uid, &active).await?;
        active.clear();
    } else if complete {
        let msg = "Reached expected number of succeeded pods";
        set_condition(
            &mut conds,
            "SuccessCriteriaMet",
            "True",
            "CompletionsReached",
            msg,
        );
        set_condition(&mut conds, "Complete", "True", "CompletionsReached", msg);
        completion_time = Some(Time(Timestamp::now()));
        delete(&ctx, &api, &uid, &active).await?;
        active.clear();
    } else if suspend {
        set_condition(
            &mut conds,
            "Suspended",
            "True",
            "JobSuspended",
            "Job suspended",
        );
        if satisfied {
            delete(&ctx, &api, &uid, &active).await?;
        }
        active.clear();
        start_time = None;
    } else {
        if conds
            .iter()
            .any(|c| c.type_ == "Suspended" && c.status == "True")
        {
            set_condition(
                &mut conds,
                "Suspended",
                "False",
                "JobResumed",
                "Job resumed",
            );
        }
        if start_time.is_none() {
            start_time = Some(Time(Timestamp::now()));
        }
        let wanted = match spec.completions {
            Some(c) => parallelism.min(c - succeeded).max(0),
            None if succeeded > 0 => 0,
            None => parallelism,
        } as usize;
        if satisfied && active.len() < wanted {
            let template = spec.template.clone();
            let labels: BTreeMap<String, String> = [
                ("batch.kubernetes.io/controller-uid", uid.as_str()),
                ("batch.kubernetes.io/job-name", name.as_str()),
                ("controller-uid", uid.as_str()),
                ("job-name", name.as_str()),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
            let base = format!("{name}-");
            let new: Vec<Pod> = (active.len()..wanted)
                .map(|_| {
                    pods::from_template(
                        &template,
                        &ns,
                        Naming::Generate(&base),
                        controller_ref(job.as_ref()),
                        &labels,
                    )
                })
                .collect();
            pods::create_all(&api, new, &ctx.expectations, &uid).await?;
        } else if satisfied && active.len() > wanted {
            active.sort_by(|a, b| pods::deletion_order(a, b));
            let extra: Vec<Arc<Pod>> = active.drain(..active.len() - wanted).collect();
            delete(&ctx, &api, &uid, &extra).await?;
        }
    }
    let ready = active.iter().filter(|p| pods::is_ready(p)).count() as i32;
    let status = JobStatus {
        active: Some(active.len() as i32),
        succeeded: Some(succeeded),
        failed: Some(failed),
        ready: Some(ready),
        terminating: Some(0),
        start_time,
        completion_time,
        conditions: (!conds.is_empty()).then_some(conds),
        uncounted_terminated_pods: old.uncounted_terminated_pods.clone(),
        completed_indexes: old.completed_indexes.clone(),
        failed_indexes: old.failed_indexes.clone(),
    };
    if status != old {
        let patch = json!({"status": status});
        match jobs
            .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => {}
            Err(e) if is_status(&e, 404) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(Action::await_change())
}

async fn delete(ctx: &Ctx, api: &Api<Pod>, uid: &str, victims: &[Arc<Pod>]) -> Result<()> {
    if victims.is_empty() {
        return Ok(());
    }
    let names = victims
        .iter()
        .filter_map(|p| p.metadata.name.clone())
        .collect();
    pods::delete_all(api, names, &ctx.expectations, uid).await
}

/// Deletes a finished Job once `ttlSecondsAfterFinished` passed.
async fn ttl(jobs: &Api<Job>, job: &Job, finished_at: Option<Timestamp>) -> Result<Action> {
    let Some(ttl) = job.spec.as_ref().and_then(|s| s.ttl_seconds_after_finished) else {
        return Ok(Action::await_change());
    };
    let at = job
        .status
        .as_ref()
        .and_then(|s| s.completion_time.as_ref())
        .map(|t| t.0)
        .or(finished_at)
        .unwrap_or_else(Timestamp::now);
    let left = at.as_second() + i64::from(ttl) - Timestamp::now().as_second();
    if left > 0 {
        return Ok(Action::requeue(Duration::from_secs(left as u64)));
    }
    let name = job.metadata.name.as_deref().unwrap_or_default();
    match jobs.delete(name, &DeleteParams::background()).await {
        Ok(_) => Ok(Action::await_change()),
        Err(e) if is_status(&e, 404) => Ok(Action::await_change()),
        Err(e) => Err(e.into()),
    }
}
