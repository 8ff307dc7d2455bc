//! DaemonSet → one Pod on each node; the simulation has one node. Pods are placed with
//! `spec.nodeName` (the simulated scheduler would do the same), labelled with
//! `controller-revision-hash` and `pod-template-generation`; a template change replaces pods
//! (RollingUpdate, one at a time as maxUnavailable 1). Status as `kubectl rollout status ds`
//! reads it.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::{DaemonSet, DaemonSetStatus};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, Patch, PatchParams};
use opkit::{Action, Context, Controller, ControllerDef};
use serde_json::json;

use super::pods::{self, Availability, Naming};
use super::{
    BACKOFF, PodOwners, Result, WORKERS, controller_ref, is_status, reconciler, stable_hash,
};
use crate::Settings;

type Ctx = Context<PodOwners>;

/// The DaemonSet controller.
pub(crate) fn controller(settings: Settings) -> ControllerDef {
    let data = PodOwners::new(settings);
    Controller::<DaemonSet>::new("daemonset")
        .index_owners::<Pod>()
        .expectations::<Pod>(data.expectations.clone())
        .owns::<Pod>()
        .backoff(BACKOFF)
        .max_concurrent_reconciles(WORKERS)
        .build(reconciler("daemonset", reconcile), data)
}

/// The labels of the simulated node, for `nodeSelector`.
fn node_labels(node: &str) -> BTreeMap<String, String> {
    [
        ("kubernetes.io/hostname", node),
        ("kubernetes.io/os", "linux"),
        ("kubernetes.io/arch", "amd64"),
        ("node.opkit.dev/simulated", "true"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

async fn reconcile(ds: Arc<DaemonSet>, ctx: Arc<Ctx>) -> Result<Action> {
    if ds.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let ns = ds.metadata.namespace.clone().unwrap_or_default();
    let name = ds.metadata.name.clone().unwrap_or_default();
    let uid = ds.metadata.uid.clone().unwrap_or_default();
    let spec = ds.spec.clone().unwrap_or_default();
    let node = ctx.settings.node_name.clone();
    let labels = node_labels(&node);
    let fits = spec
        .template
        .spec
        .as_ref()
        .and_then(|s| s.node_selector.as_ref())
        .is_none_or(|sel| opkit_apimachinery::LabelSelector::from_set(sel).matches_set(&labels));
    let desired = i32::from(fits);
    let hash = stable_hash(
        &spec.template,
        ds.status.as_ref().and_then(|s| s.collision_count),
    );
    let generation = ds.metadata.generation.unwrap_or(1);
    let api: Api<Pod> = Api::namespaced(ctx.client().clone(), &ns);
    let mut active: Vec<Arc<Pod>> = ctx
        .owner_index::<Pod>()?
        .owned_by(&uid)
        .into_iter()
        .filter(|p| pods::is_active(p))
        .collect();
    let is_current = |p: &Pod| {
        p.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("controller-revision-hash"))
            == Some(&hash)
    };
    if ctx.expectations.satisfied(&uid) {
        let on_delete = spec
            .update_strategy
            .as_ref()
            .and_then(|s| s.type_.as_deref())
            == Some("OnDelete");
        if desired == 1 && active.is_empty() {
            let extra: BTreeMap<String, String> = [
                ("controller-revision-hash".to_string(), hash.clone()),
                (
                    "pod-template-generation".to_string(),
                    generation.to_string(),
                ),
            ]
            .into();
            let mut pod = pods::from_template(
                &spec.template,
                &ns,
                Naming::Generate(&format!("{name}-")),
                controller_ref(ds.as_ref()),
                &extra,
            );
            if let Some(ps) = pod.spec.as_mut() {
                ps.node_name = Some(node.clone());
            }
            pods::create_all(&api, vec![pod], &ctx.expectations, &uid).await?;
        } else {
            // Extra pods, pods on a node that no longer fits, outdated pods (one at a time).
            active.sort_by(|a, b| pods::deletion_order(a, b));
            let keep = usize::try_from(desired).unwrap_or(0);
            let mut victims: Vec<String> = Vec::new();
            if active.len() > keep {
                victims.extend(
                    active[..active.len() - keep]
                        .iter()
                        .filter_map(|p| p.metadata.name.clone()),
                );
            } else if !on_delete && let Some(old) = active.iter().find(|p| !is_current(p)) {
                victims.extend(old.metadata.name.clone());
            }
            if !victims.is_empty() {
                pods::delete_all(&api, victims, &ctx.expectations, &uid).await?;
            }
        }
    }
    let min_ready = spec.min_ready_seconds.unwrap_or(0);
    let now = jiff::Timestamp::now();
    let scheduled = active.len() as i32;
    let ready = active.iter().filter(|p| pods::is_ready(p)).count() as i32;
    let mut available = 0;
    let mut recheck = None;
    for p in &active {
        match pods::availability(p, min_ready, now) {
            Availability::Yes => available += 1,
            Availability::After(d) => recheck = Some(d),
            Availability::No => {}
        }
    }
    let old = ds.status.clone().unwrap_or_default();
    let status = DaemonSetStatus {
        desired_number_scheduled: desired,
        current_number_scheduled: scheduled.min(desired),
        number_misscheduled: (scheduled - desired).max(0),
        number_ready: ready,
        number_available: Some(available),
        number_unavailable: Some((desired - available).max(0)),
        updated_number_scheduled: Some(active.iter().filter(|p| is_current(p)).count() as i32),
        observed_generation: ds.metadata.generation,
        collision_count: old.collision_count,
        conditions: old.conditions.clone(),
    };
    if status != old {
        let ds_api: Api<DaemonSet> = Api::namespaced(ctx.client().clone(), &ns);
        let patch = json!({"status": status});
        match ds_api
            .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => {}
            Err(e) if is_status(&e, 404) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(match recheck {
        Some(d) => Action::requeue(d + std::time::Duration::from_millis(50)),
        None => Action::await_change(),
    })
}
