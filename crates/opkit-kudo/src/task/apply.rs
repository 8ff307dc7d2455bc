//! `Apply`: render the task's templates, convert removed API versions, enhance with KUDO's
//! conventions, server-side apply every object (see [`crate::object`] for why not KUDO's
//! three-way merge), then report [`Progress::Waiting`] until every applied object is
//! healthy ([`crate::health`]). A Job that failed terminally fails the plan.

use std::collections::BTreeSet;

use serde_json::Value as Json;

use crate::api::Task;
use crate::convert;
use crate::enhance::{self, Metadata};
use crate::health::{Health, health};
use crate::leftovers;
use crate::object::{self, Placed, text};
use crate::render::{fatal, render};
use crate::task::{Context, Progress, TaskError};

/// The labels and annotations of this plan run.
pub(crate) fn metadata(ctx: &Context) -> Metadata {
    let v = &ctx.variables;
    let plan_uid = if ctx.instance.spec.plan_execution.plan_name == v.plan_name {
        ctx.instance.spec.plan_execution.uid.clone()
    } else {
        ctx.instance
            .status
            .as_ref()
            .and_then(|s| s.plan_status.get(&v.plan_name))
            .map(|p| p.uid.clone())
            .unwrap_or_default()
    };
    Metadata {
        operator_name: v.operator_name.clone(),
        operator_version: ctx.operator_version.spec.version.clone(),
        instance_name: ctx.instance.metadata.name.clone().unwrap_or_default(),
        plan_name: v.plan_name.clone(),
        phase_name: v.phase_name.clone(),
        step_name: v.step_name.clone(),
        plan_uid,
    }
}

/// Converts removed API versions (reporting each with an event on the instance), resolves
/// each kind, and enhances the objects. With `skip_unknown`, objects of kinds the server
/// does not serve are left out (as KUDO's Delete does); otherwise they are an error.
pub(crate) async fn enhance_all(
    ctx: &Context,
    objs: Vec<Json>,
    skip_unknown: bool,
) -> Result<Vec<(Json, Placed)>, TaskError> {
    let meta = metadata(ctx);
    let mut placed = Vec::with_capacity(objs.len());
    for mut obj in objs {
        if let Some(c) = convert::convert(&mut obj) {
            report_conversion(ctx, &c).await;
        }
        let p = if skip_unknown {
            match object::resolve(&ctx.client, &obj).await? {
                Some(p) => p,
                None => continue,
            }
        } else {
            object::require(&ctx.client, &obj).await?
        };
        enhance::add_labels_and_annotations(&mut obj, &meta);
        enhance::set_owner(&mut obj, &ctx.instance, p.namespaced)?;
        placed.push((obj, p));
    }
    add_dependency_hashes(ctx, &mut placed).await?;
    Ok(placed)
}

async fn report_conversion(ctx: &Context, c: &convert::Converted) {
    let mut action = format!("Convert {} {}", c.kind, c.name);
    action.truncate(128);
    let published = ctx
        .recorder
        .event(&ctx.instance)
        .reason(convert::REASON)
        .action(action)
        .note(c.message())
        .publish()
        .await;
    if let Err(e) = published {
        tracing::warn!(error = %e, "could not publish the {} event", convert::REASON);
    }
}

/// Sets KUDO's dependency hash on every pod template that references ConfigMaps or Secrets.
async fn add_dependency_hashes(
    ctx: &Context,
    placed: &mut [(Json, Placed)],
) -> Result<(), TaskError> {
    let own: Vec<Json> = placed.iter().map(|(o, _)| o.clone()).collect();
    for (obj, _) in placed.iter_mut() {
        let deps = enhance::dependencies(obj);
        if deps.is_empty() {
            continue;
        }
        let mut digests = Vec::with_capacity(deps.len());
        for dep in &deps {
            let digest = match enhance::find_in(&own, dep) {
                Some(o) => enhance::dependency_digest(Some(o)),
                None => {
                    let probe = serde_json::json!({"apiVersion": "v1", "kind": dep.kind,
                        "metadata": {"name": dep.name, "namespace": dep.namespace}});
                    let p = object::require(&ctx.client, &probe).await?;
                    let live = object::get(&ctx.client, &p, &probe).await?;
                    enhance::dependency_digest(live.as_ref())
                }
            };
            digests.push(digest);
        }
        enhance::set_dependencies_hash(obj, &enhance::dependencies_hash(&digests));
    }
    Ok(())
}

/// Applies enhanced objects, recording cluster-scoped kinds on the instance first (so an
/// uninstall finds them even if the manager stops right after). Returns them as stored.
pub(crate) async fn apply_all(
    ctx: &Context,
    placed: &[(Json, Placed)],
) -> Result<Vec<Json>, TaskError> {
    let cluster_kinds: BTreeSet<String> = placed
        .iter()
        .filter(|(_, p)| !p.namespaced)
        .map(|(o, _)| leftovers::kind_key(o))
        .collect();
    leftovers::record(&ctx.client, &ctx.instance, &cluster_kinds).await?;
    let mut stored = Vec::with_capacity(placed.len());
    for (obj, p) in placed {
        stored.push(object::apply(&ctx.client, p, obj).await?);
    }
    Ok(stored)
}

/// KUDO's health verdict over applied objects: the first unhealthy one says what is awaited;
/// a terminally failed one fails the task.
pub(crate) fn verdict(ctx: &Context, task: &Task, stored: &[Json]) -> Result<Progress, TaskError> {
    for obj in stored {
        let who = format!(
            "{}/{}",
            text(obj, "/metadata/namespace"),
            text(obj, "/metadata/name")
        );
        match health(obj) {
            Health::Healthy => {}
            Health::Waiting(m) => {
                return Ok(Progress::Waiting(format!(
                    "object {who} is NOT healthy: {m}"
                )));
            }
            Health::Failed(m) => {
                return Err(fatal(
                    ctx,
                    task,
                    format!("object {who} is NOT healthy: HealthUtil: {m}"),
                ));
            }
        }
    }
    Ok(Progress::Done)
}

/// Runs an `Apply` task.
pub(crate) async fn run(ctx: &Context, task: &Task) -> Result<Progress, TaskError> {
    if task.spec.resources.is_empty() {
        return Err(TaskError::Fatal(format!(
            "task validation error: apply task '{}' has an empty resource list. if that's what you need, use a Dummy task instead",
            task.name
        )));
    }
    let objs = render(ctx, task, &task.spec.resources)?;
    let placed = enhance_all(ctx, objs, false).await?;
    let stored = apply_all(ctx, &placed).await?;
    verdict(ctx, task, &stored)
}
