//! ReplicaSet → Pods, as upstream's ReplicaSet controller: keep `spec.replicas` active pods
//! matching the selector, adopt orphans and release pods that stopped matching, delete the
//! least valuable pods first, and report replicas / fullyLabeled / ready / available.

use std::collections::BTreeMap;
use std::sync::Arc;

use jiff::Timestamp;
use k8s_openapi::api::apps::v1::{ReplicaSet, ReplicaSetStatus};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, Patch, PatchParams};
use opkit::{Action, Caches, Context, Controller, ControllerDef, Request};
use serde_json::json;

use super::pods::{self, Availability, Naming};
use super::{
    BACKOFF, PodOwners, Result, WORKERS, controller_ref, is_status, owner_or_adopters, reconciler,
    selects, workload_selector,
};
use crate::Settings;

/// Upstream's `BurstReplicas`: at most this many pods created or deleted per sync.
const BURST_REPLICAS: usize = 500;

type Ctx = Context<PodOwners>;

/// The ReplicaSet controller.
pub(crate) fn controller(settings: Settings) -> ControllerDef {
    let data = PodOwners::new(settings);
    Controller::<ReplicaSet>::new("replicaset")
        .index_owners::<Pod>()
        .expectations::<Pod>(data.expectations.clone())
        .watches_with_caches(owners, None)
        .backoff(BACKOFF)
        .max_concurrent_reconciles(WORKERS)
        .build(reconciler("replicaset", reconcile), data)
}

/// The ReplicaSets a pod event concerns: its controller if that is a ReplicaSet, else (an
/// orphan) those whose selector matches it.
fn owners(pod: &Pod, caches: &Caches) -> Vec<Request> {
    if pod.metadata.deletion_timestamp.is_some()
        && opkit::informer::controller_uid(&pod.metadata).is_none()
    {
        // A deleting orphan is not adopted.
        return Vec::new();
    }
    let Ok(store) = caches.store::<ReplicaSet>() else {
        return Vec::new();
    };
    owner_or_adopters(&store, pod, |rs| rs.spec.as_ref().map(|s| &s.selector))
}

async fn reconcile(rs: Arc<ReplicaSet>, ctx: Arc<Ctx>) -> Result<Action> {
    let ns = rs.metadata.namespace.clone().unwrap_or_default();
    let name = rs.metadata.name.clone().unwrap_or_default();
    let uid = rs.metadata.uid.clone().unwrap_or_default();
    let Some(spec) = rs.spec.as_ref() else {
        return Ok(Action::await_change());
    };
    let Some(selector) = workload_selector(&spec.selector) else {
        tracing::warn!(replicaset = %name, "empty or invalid selector; ignored");
        return Ok(Action::await_change());
    };
    let api: Api<Pod> = Api::namespaced(ctx.client().clone(), &ns);
    let pods = claim(&ctx, &rs, &selector, &api, &uid).await?;
    let mut active: Vec<Arc<Pod>> = pods.into_iter().filter(|p| pods::is_active(p)).collect();
    let replicas = usize::try_from(spec.replicas.unwrap_or(1)).unwrap_or(0);
    if rs.metadata.deletion_timestamp.is_none() && ctx.expectations.satisfied(&uid) {
        if active.len() < replicas {
            let n = (replicas - active.len()).min(BURST_REPLICAS);
            let template = spec.template.clone().unwrap_or_default();
            let owner = controller_ref(rs.as_ref());
            let base = format!("{name}-");
            let new: Vec<Pod> = (0..n)
                .map(|_| {
                    pods::from_template(
                        &template,
                        &ns,
                        Naming::Generate(&base),
                        owner.clone(),
                        &BTreeMap::new(),
                    )
                })
                .collect();
            pods::create_all(&api, new, &ctx.expectations, &uid).await?;
        } else if active.len() > replicas {
            let n = (active.len() - replicas).min(BURST_REPLICAS);
            active.sort_by(|a, b| pods::deletion_order(a, b));
            let victims: Vec<String> = active
                .iter()
                .take(n)
                .filter_map(|p| p.metadata.name.clone())
                .collect();
            pods::delete_all(&api, victims, &ctx.expectations, &uid).await?;
        }
    }
    update_status(&ctx, &rs, &active).await
}

/// The pods the ReplicaSet owns after adopting matching orphans and releasing pods that no
/// longer match (as upstream's `ClaimPods`).
async fn claim(
    ctx: &Ctx,
    rs: &ReplicaSet,
    selector: &opkit_apimachinery::LabelSelector,
    api: &Api<Pod>,
    uid: &str,
) -> Result<Vec<Arc<Pod>>> {
    let ns = rs.metadata.namespace.as_deref().unwrap_or_default();
    let index = ctx.owner_index::<Pod>()?;
    let mut owned = Vec::new();
    for pod in index.owned_by(uid) {
        if selects(selector, pod.metadata.labels.as_ref()) {
            owned.push(pod);
        } else if pod.metadata.deletion_timestamp.is_none() {
            release(api, &pod, uid).await?;
        }
    }
    if rs.metadata.deletion_timestamp.is_some() {
        return Ok(owned);
    }
    for pod in index.orphans(ns) {
        if pod.metadata.deletion_timestamp.is_none()
            && selects(selector, pod.metadata.labels.as_ref())
        {
            let mut refs = pod.metadata.owner_references.clone().unwrap_or_default();
            refs.push(controller_ref(rs));
            let patch = json!({"metadata": {
                "ownerReferences": refs,
                "resourceVersion": pod.metadata.resource_version,
            }});
            let name = pod.metadata.name.as_deref().unwrap_or_default();
            match api
                .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
            {
                Ok(adopted) => owned.push(Arc::new(adopted)),
                Err(e) if is_status(&e, 404) || is_status(&e, 409) => {}
                Err(e) => return Err(e.into()),
            }
        }
    }
    Ok(owned)
}

/// Removes our owner reference from a pod that no longer matches the selector.
async fn release(api: &Api<Pod>, pod: &Pod, uid: &str) -> Result<()> {
    let refs: Vec<_> = pod
        .metadata
        .owner_references
        .iter()
        .flatten()
        .filter(|r| r.uid != uid)
        .cloned()
        .collect();
    let patch = json!({"metadata": {
        "ownerReferences": refs,
        "resourceVersion": pod.metadata.resource_version,
    }});
    let name = pod.metadata.name.as_deref().unwrap_or_default();
    match api
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        Ok(_) => Ok(()),
        Err(e) if is_status(&e, 404) || is_status(&e, 409) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

async fn update_status(ctx: &Ctx, rs: &ReplicaSet, active: &[Arc<Pod>]) -> Result<Action> {
    let spec = rs.spec.clone().unwrap_or_default();
    // Upstream counts pods whose labels include all of the template's as fully labeled.
    let template_labels = opkit_apimachinery::LabelSelector::from_set(
        spec.template
            .as_ref()
            .and_then(|t| t.metadata.as_ref())
            .and_then(|m| m.labels.as_ref())
            .into_iter()
            .flatten(),
    );
    let min_ready = spec.min_ready_seconds.unwrap_or(0);
    let now = Timestamp::now();
    let mut ready = 0;
    let mut available = 0;
    let mut fully_labeled = 0;
    let mut recheck: Option<std::time::Duration> = None;
    for pod in active {
        if selects(&template_labels, pod.metadata.labels.as_ref()) {
            fully_labeled += 1;
        }
        if pods::is_ready(pod) {
            ready += 1;
        }
        match pods::availability(pod, min_ready, now) {
            Availability::Yes => available += 1,
            Availability::No => {}
            Availability::After(d) => {
                recheck = Some(recheck.map_or(d, |r| r.min(d)));
            }
        }
    }
    let old = rs.status.clone().unwrap_or_default();
    let status = ReplicaSetStatus {
        replicas: active.len() as i32,
        fully_labeled_replicas: Some(fully_labeled),
        ready_replicas: Some(ready),
        available_replicas: Some(available),
        observed_generation: rs.metadata.generation,
        conditions: old.conditions.clone(),
        terminating_replicas: old.terminating_replicas,
    };
    if status != old {
        let api: Api<ReplicaSet> = Api::namespaced(
            ctx.client().clone(),
            rs.metadata.namespace.as_deref().unwrap_or_default(),
        );
        let patch = json!({"status": status});
        let name = rs.metadata.name.as_deref().unwrap_or_default();
        match api
            .patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
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
