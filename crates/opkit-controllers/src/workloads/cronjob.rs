//! CronJob → Jobs on schedule, as upstream's CronJob controller (v2): the most recent missed
//! schedule since `lastScheduleTime` (or creation) starts a Job named
//! `<cronjob>-<scheduled minutes since the epoch>`; `concurrencyPolicy`, `suspend`,
//! `startingDeadlineSeconds`, `timeZone` and the history limits are honoured. The clock is
//! [`crate::Settings::clock`], so tests can run it ahead instead of waiting for a minute.

use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use jiff::tz::TimeZone;
use k8s_openapi::api::batch::v1::{CronJob, CronJobStatus, Job};
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use opkit::{Action, Context, Controller, ControllerDef};
use serde_json::json;

use super::cron::Schedule;
use super::job::finished;
use super::{BACKOFF, Clock, Result, WORKERS, controller_ref, is_status, reconciler};
use crate::Settings;

/// The CronJob controller's data: the clock it schedules by.
struct Scheduler {
    clock: Clock,
}

type Ctx = Context<Scheduler>;

/// The CronJob controller.
pub(crate) fn controller(settings: Settings) -> ControllerDef {
    Controller::<CronJob>::new("cronjob")
        .index_owners::<Job>()
        .owns::<Job>()
        .backoff(BACKOFF)
        .max_concurrent_reconciles(WORKERS)
        .build(
            reconciler("cronjob", reconcile),
            Scheduler {
                clock: settings.clock,
            },
        )
}

fn created(job: &Job) -> Option<Timestamp> {
    job.metadata.creation_timestamp.as_ref().map(|t| t.0)
}

async fn reconcile(cj: Arc<CronJob>, ctx: Arc<Ctx>) -> Result<Action> {
    if cj.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let ns = cj.metadata.namespace.clone().unwrap_or_default();
    let name = cj.metadata.name.clone().unwrap_or_default();
    let uid = cj.metadata.uid.clone().unwrap_or_default();
    let spec = cj.spec.clone().unwrap_or_default();
    let jobs_api: Api<Job> = Api::namespaced(ctx.client().clone(), &ns);
    let now = ctx.clock.now();
    let old = cj.status.clone().unwrap_or_default();
    let mut status = old.clone();

    let mut jobs: Vec<Arc<Job>> = ctx.owner_index::<Job>()?.owned_by(&uid);
    jobs.sort_by_key(|j| created(j));
    let mut active: Vec<Arc<Job>> = jobs
        .iter()
        .filter(|j| finished(j).is_none())
        .cloned()
        .collect();
    let succeeded: Vec<&Arc<Job>> = jobs
        .iter()
        .filter(|j| matches!(finished(j), Some(("Complete", _))))
        .collect();
    let failed: Vec<&Arc<Job>> = jobs
        .iter()
        .filter(|j| matches!(finished(j), Some(("Failed", _))))
        .collect();
    if let Some(last) = succeeded
        .iter()
        .filter_map(|j| j.status.as_ref().and_then(|s| s.completion_time.clone()))
        .max_by_key(|t| t.0)
    {
        status.last_successful_time = Some(last);
    }
    for (list, limit) in [
        (&succeeded, spec.successful_jobs_history_limit.unwrap_or(3)),
        (&failed, spec.failed_jobs_history_limit.unwrap_or(1)),
    ] {
        let extra = list.len().saturating_sub(limit.max(0) as usize);
        for job in list.iter().take(extra) {
            delete_job(&jobs_api, job).await?;
        }
    }

    let tz = match spec.time_zone.as_deref() {
        Some(z) => match TimeZone::get(z) {
            Ok(tz) => tz,
            Err(e) => {
                tracing::warn!(cronjob = %name, zone = z, error = %e, "unknown time zone");
                return Ok(Action::await_change());
            }
        },
        None => TimeZone::system(),
    };
    let schedule = match Schedule::parse(&spec.schedule) {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!(cronjob = %name, error = %e, "unparseable schedule");
            return Ok(Action::await_change());
        }
    };
    let mut requeue = None;
    if !spec.suspend.unwrap_or(false) {
        let earliest = old
            .last_schedule_time
            .as_ref()
            .map(|t| t.0)
            .or_else(|| cj.metadata.creation_timestamp.as_ref().map(|t| t.0))
            .unwrap_or(now);
        // The most recent missed schedule (upstream starts only that one).
        let mut due = None;
        let mut t = earliest;
        for _ in 0..10_000 {
            match schedule.next(t, &tz) {
                Some(n) if n <= now => {
                    due = Some(n);
                    t = n;
                }
                _ => break,
            }
        }
        let too_late = |at: Timestamp| {
            spec.starting_deadline_seconds
                .is_some_and(|d| at.as_second() + d < now.as_second())
        };
        if let Some(at) = due.filter(|at| !too_late(*at)) {
            let policy = spec.concurrency_policy.as_deref().unwrap_or("Allow");
            if policy == "Forbid" && !active.is_empty() {
                // Skipped until the active Job finishes; its completion triggers us again.
            } else {
                if policy == "Replace" {
                    for job in active.drain(..) {
                        delete_job(&jobs_api, &job).await?;
                    }
                }
                let job = job_for(&cj, at);
                match jobs_api.create(&PostParams::default(), &job).await {
                    Ok(created) => active.push(Arc::new(created)),
                    Err(e) if is_status(&e, 409) => {}
                    Err(e) => return Err(e.into()),
                }
                status.last_schedule_time = Some(Time(at));
            }
        }
        if let Some(next) = schedule.next(now, &tz) {
            let secs = (next.as_millisecond() - now.as_millisecond()).max(0) as u64;
            requeue = Some(Duration::from_millis(secs) + Duration::from_millis(100));
        }
    }
    status.active = Some(
        active
            .iter()
            .map(|j| ObjectReference {
                api_version: Some("batch/v1".into()),
                kind: Some("Job".into()),
                name: j.metadata.name.clone(),
                namespace: j.metadata.namespace.clone(),
                uid: j.metadata.uid.clone(),
                resource_version: j.metadata.resource_version.clone(),
                ..Default::default()
            })
            .collect(),
    )
    .filter(|a: &Vec<_>| !a.is_empty());
    if status != old {
        let api: Api<CronJob> = Api::namespaced(ctx.client().clone(), &ns);
        let patch = json!({"status": CronJobStatus { active: status.active.clone().or(Some(Vec::new())), ..status }});
        match api
            .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => {}
            Err(e) if is_status(&e, 404) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(match requeue {
        Some(d) => Action::requeue(d),
        None => Action::await_change(),
    })
}

/// The Job a CronJob starts for the schedule at `at`.
fn job_for(cj: &CronJob, at: Timestamp) -> Job {
    let spec = cj.spec.clone().unwrap_or_default();
    let template = spec.job_template;
    let tmeta = template.metadata.unwrap_or_default();
    let mut annotations = tmeta.annotations.unwrap_or_default();
    annotations.insert(
        "batch.kubernetes.io/cronjob-scheduled-timestamp".into(),
        at.to_string(),
    );
    let name = format!(
        "{}-{}",
        cj.metadata.name.as_deref().unwrap_or_default(),
        at.as_second().div_euclid(60)
    );
    Job {
        metadata: ObjectMeta {
            name: Some(name),
            namespace: cj.metadata.namespace.clone(),
            labels: tmeta.labels,
            annotations: Some(annotations),
            owner_references: Some(vec![controller_ref(cj)]),
            ..Default::default()
        },
        spec: template.spec,
        status: None,
    }
}

async fn delete_job(api: &Api<Job>, job: &Job) -> Result<()> {
    let name = job.metadata.name.as_deref().unwrap_or_default();
    match api.delete(name, &DeleteParams::background()).await {
        Ok(_) => Ok(()),
        Err(e) if is_status(&e, 404) => Ok(()),
        Err(e) => Err(e.into()),
    }
}
