//! Helm's hooks (`action.execHook`): the hooks of one event run in weight order (stable, so
//! kinds keep Helm's install order within a weight); each is created after its
//! `before-hook-creation` predecessor is gone, a Job or Pod is waited for until it succeeds
//! or fails, and `hook-succeeded`/`hook-failed` delete it afterwards. Without a delete
//! policy, Helm's default `before-hook-creation` applies. A failed hook fails the operation.

use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, DynamicObject};
use serde_json::Value as Json;

use crate::error::ActionError;
use crate::objects::{Cluster, Object, parse_document, stamp};
use crate::release::{Hook, Time};

/// How often a running hook or a deletion is checked.
const POLL: Duration = Duration::from_millis(100);

/// Where hooks run and for whom.
pub(crate) struct HookContext<'a> {
    pub(crate) cluster: &'a Cluster,
    pub(crate) release: &'a str,
    pub(crate) namespace: &'a str,
    pub(crate) owner: Option<&'a OwnerReference>,
    pub(crate) timeout: Duration,
}

/// Runs every hook of `event` in `hooks`, recording each run in its `last_run`.
pub(crate) async fn run_hooks(
    ctx: &HookContext<'_>,
    hooks: &mut [Hook],
    event: &str,
) -> Result<(), ActionError> {
    let mut order: Vec<usize> = (0..hooks.len())
        .filter(|&i| hooks[i].events.iter().any(|e| e == event))
        .collect();
    order.sort_by_key(|&i| hooks[i].weight);
    for i in order {
        run_hook(ctx, &mut hooks[i], event).await?;
    }
    Ok(())
}

fn has_policy(hook: &Hook, policy: &str) -> bool {
    if hook.delete_policies.is_empty() {
        return policy == "before-hook-creation";
    }
    hook.delete_policies.iter().any(|p| p == policy)
}

async fn run_hook(ctx: &HookContext<'_>, hook: &mut Hook, event: &str) -> Result<(), ActionError> {
    let fail = |message: String| ActionError::Hook {
        event: event.to_string(),
        name: format!("{}/{}", hook.kind, hook.name),
        message,
    };
    let Some(mut obj) = parse_document(&hook.manifest)? else {
        return Ok(());
    };
    let api = ctx.cluster.place(&mut obj, ctx.namespace).await?;
    stamp(&mut obj, ctx.release, ctx.namespace, ctx.owner);
    if has_policy(hook, "before-hook-creation") {
        delete_and_wait(ctx, &api, &obj)
            .await
            .map_err(|e| fail(e.to_string()))?;
    }
    hook.last_run.started_at = Some(Time::now());
    hook.last_run.completed_at = None;
    hook.last_run.phase = "Running".into();
    ctx.cluster.apply(&api, &obj, false).await?;
    let outcome = wait_for(ctx, &api, &obj).await?;
    hook.last_run.completed_at = Some(Time::now());
    match outcome {
        Ok(()) => {
            hook.last_run.phase = "Succeeded".into();
            if has_policy(hook, "hook-succeeded") {
                ctx.cluster.delete(&api, &obj).await?;
            }
            Ok(())
        }
        Err(message) => {
            hook.last_run.phase = "Failed".into();
            if has_policy(hook, "hook-failed") {
                ctx.cluster.delete(&api, &obj).await?;
            }
            Err(fail(message))
        }
    }
}

async fn delete_and_wait(
    ctx: &HookContext<'_>,
    api: &Api<DynamicObject>,
    obj: &Object,
) -> Result<(), ActionError> {
    if !ctx.cluster.delete(api, obj).await? {
        return Ok(());
    }
    let deadline = tokio::time::Instant::now() + ctx.timeout;
    while ctx.cluster.get(api, obj).await?.is_some() {
        if tokio::time::Instant::now() > deadline {
            return Err(ActionError::Hook {
                event: "before-hook-creation".into(),
                name: format!("{}/{}", obj.kind, obj.name),
                message: "timed out waiting for the previous hook object to be deleted".into(),
            });
        }
        tokio::time::sleep(POLL).await;
    }
    Ok(())
}

/// Waits until a Job completes or a Pod succeeds; `Err(message)` when it failed. Other
/// kinds are done once created.
async fn wait_for(
    ctx: &HookContext<'_>,
    api: &Api<DynamicObject>,
    obj: &Object,
) -> Result<Result<(), String>, ActionError> {
    if obj.kind != "Job" && obj.kind != "Pod" {
        return Ok(Ok(()));
    }
    let deadline = tokio::time::Instant::now() + ctx.timeout;
    loop {
        let Some(live) = ctx.cluster.get(api, obj).await? else {
            return Ok(Err(format!("{} {} disappeared", obj.kind, obj.name)));
        };
        if let Some(done) = finished(&obj.kind, &live) {
            return Ok(done);
        }
        if tokio::time::Instant::now() > deadline {
            return Ok(Err(format!(
                "timed out after {:?} waiting for {} {} to finish",
                ctx.timeout, obj.kind, obj.name
            )));
        }
        tokio::time::sleep(POLL).await;
    }
}

fn finished(kind: &str, live: &Json) -> Option<Result<(), String>> {
    if kind == "Pod" {
        return match live.pointer("/status/phase").and_then(Json::as_str) {
            Some("Succeeded") => Some(Ok(())),
            Some("Failed") => Some(Err("pod failed".into())),
            _ => None,
        };
    }
    let conditions = live.pointer("/status/conditions")?.as_array()?;
    for c in conditions {
        let is = |t: &str| {
            c.get("type").and_then(Json::as_str) == Some(t)
                && c.get("status").and_then(Json::as_str) == Some("True")
        };
        if is("Complete") {
            return Some(Ok(()));
        }
        if is("Failed") {
            let reason = c
                .get("message")
                .and_then(Json::as_str)
                .unwrap_or("job failed");
            return Some(Err(format!("job failed: {reason}")));
        }
    }
    None
}
