//! StatefulSet → ordinal Pods `<set>-0..N-1` and their PersistentVolumeClaims, as upstream's
//! StatefulSet controller: OrderedReady creates each ordinal once the previous is Running and
//! Ready (Parallel does not wait), scale-down removes the highest ordinal first, claims
//! `<template>-<set>-<ordinal>` are created (and reported Bound) before their pod, and a
//! RollingUpdate replaces pods from the highest ordinal down to `partition`. Revisions are
//! ControllerRevisions `<set>-<hash>`; pods carry `controller-revision-hash`.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use k8s_openapi::api::apps::v1::{ControllerRevision, StatefulSet, StatefulSetStatus};
use k8s_openapi::api::core::v1::{
    PersistentVolumeClaim, PersistentVolumeClaimVolumeSource, Pod, Volume,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::runtime::RawExtension;
use kube::api::{Api, Patch, PatchParams, PostParams};
use opkit::{Action, Context, Controller, ControllerDef};
use serde_json::json;

use super::pods::{self, Availability, Naming};
use super::{
    BACKOFF, PodOwners, Result, WORKERS, controller_ref, is_status, reconciler, stable_hash,
};
use crate::Settings;

const REVISION_LABEL: &str = "controller-revision-hash";

type Ctx = Context<PodOwners>;

/// The StatefulSet controller.
pub(crate) fn controller(settings: Settings) -> ControllerDef {
    let data = PodOwners::new(settings);
    Controller::<StatefulSet>::new("statefulset")
        .index_owners::<Pod>()
        .expectations::<Pod>(data.expectations.clone())
        .owns::<Pod>()
        .backoff(BACKOFF)
        .max_concurrent_reconciles(WORKERS)
        .build(reconciler("statefulset", reconcile), data)
}

fn ordinal(set: &str, pod: &Pod) -> Option<i32> {
    pod.metadata
        .name
        .as_deref()?
        .strip_prefix(set)?
        .strip_prefix('-')?
        .parse()
        .ok()
}

fn revision_of(pod: &Pod) -> Option<&str> {
    pod.metadata
        .labels
        .as_ref()?
        .get(REVISION_LABEL)
        .map(String::as_str)
}

async fn reconcile(sts: Arc<StatefulSet>, ctx: Arc<Ctx>) -> Result<Action> {
    if sts.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let ns = sts.metadata.namespace.clone().unwrap_or_default();
    let name = sts.metadata.name.clone().unwrap_or_default();
    let uid = sts.metadata.uid.clone().unwrap_or_default();
    let spec = sts.spec.clone().unwrap_or_default();
    let replicas = spec.replicas.unwrap_or(1).max(0);
    let parallel = spec.pod_management_policy.as_deref() == Some("Parallel");
    let rolling = spec
        .update_strategy
        .as_ref()
        .and_then(|s| s.type_.as_deref())
        .unwrap_or("RollingUpdate")
        == "RollingUpdate";
    let partition = spec
        .update_strategy
        .as_ref()
        .and_then(|s| s.rolling_update.as_ref())
        .and_then(|r| r.partition)
        .unwrap_or(0);
    let min_ready = spec.min_ready_seconds.unwrap_or(0);
    let pod_api: Api<Pod> = Api::namespaced(ctx.client().clone(), &ns);

    // Salted with the collision count, 0 until set, as upstream's controller does: a hash
    // salted with "unset" before the first status write and with 0 after it would name two
    // revisions for one template and roll every pod once for nothing.
    let collision_count = sts.status.as_ref().and_then(|s| s.collision_count);
    let update_revision = format!(
        "{name}-{}",
        stable_hash(&spec.template, Some(collision_count.unwrap_or(0)))
    );
    let old = sts.status.clone().unwrap_or_default();
    if old.update_revision.as_deref() != Some(update_revision.as_str()) {
        ensure_revision(&ctx, &sts, &update_revision).await?;
    }
    let current_revision = old
        .current_revision
        .clone()
        .filter(|r| !r.is_empty())
        .unwrap_or_else(|| update_revision.clone());

    let mut by_ordinal: HashMap<i32, Arc<Pod>> = HashMap::new();
    for pod in ctx.owner_index::<Pod>()?.owned_by(&uid) {
        if let Some(o) = ordinal(&name, &pod) {
            by_ordinal.insert(o, pod);
        }
    }
    let healthy = |p: &Pod| pods::is_active(p) && pods::phase(p) == "Running" && pods::is_ready(p);
    if ctx.expectations.satisfied(&uid) {
        // Failed or succeeded pods are replaced.
        for (_, pod) in by_ordinal
            .iter()
            .filter(|(_, p)| matches!(pods::phase(p), "Failed" | "Succeeded"))
        {
            if pod.metadata.deletion_timestamp.is_none() {
                let n = pod.metadata.name.clone().unwrap_or_default();
                pods::delete_all(&pod_api, vec![n], &ctx.expectations, &uid).await?;
                return Ok(Action::await_change());
            }
        }
        let mut to_create = Vec::new();
        let mut blocked = false;
        for o in 0..replicas {
            match by_ordinal.get(&o) {
                None => {
                    to_create.push(o);
                    if !parallel {
                        break;
                    }
                }
                Some(p) if !parallel && !healthy(p) => {
                    blocked = true;
                    break;
                }
                Some(_) => {}
            }
        }
        if !to_create.is_empty() {
            let mut new = Vec::new();
            for o in to_create {
                new.push(make_pod(&ctx, &sts, o, &update_revision).await?);
            }
            pods::create_all(&pod_api, new, &ctx.expectations, &uid).await?;
        } else if !blocked {
            // Scale down: highest ordinal first (all at once when Parallel).
            let mut extra: Vec<(i32, &Arc<Pod>)> = by_ordinal
                .iter()
                .filter(|(o, p)| **o >= replicas && p.metadata.deletion_timestamp.is_none())
                .map(|(o, p)| (*o, p))
                .collect();
            extra.sort_by_key(|(o, _)| std::cmp::Reverse(*o));
            if !parallel {
                extra.truncate(1);
            }
            if !extra.is_empty() {
                let names = extra
                    .iter()
                    .filter_map(|(_, p)| p.metadata.name.clone())
                    .collect();
                pods::delete_all(&pod_api, names, &ctx.expectations, &uid).await?;
            } else if rolling {
                // Rolling update: the highest ordinal not at the update revision, once all
                // are healthy.
                let all_healthy =
                    (0..replicas).all(|o| by_ordinal.get(&o).is_some_and(|p| healthy(p)));
                if all_healthy
                    && let Some(p) = (partition..replicas)
                        .rev()
                        .filter_map(|o| by_ordinal.get(&o))
                        .find(|p| revision_of(p) != Some(update_revision.as_str()))
                {
                    let n = p.metadata.name.clone().unwrap_or_default();
                    pods::delete_all(&pod_api, vec![n], &ctx.expectations, &uid).await?;
                }
            }
        }
    }

    let now = jiff::Timestamp::now();
    let mut status = StatefulSetStatus {
        observed_generation: sts.metadata.generation,
        collision_count: old.collision_count.or(Some(0)),
        update_revision: Some(update_revision.clone()),
        current_revision: Some(current_revision.clone()),
        ..Default::default()
    };
    let (mut count, mut ready, mut available, mut current, mut updated) = (0, 0, 0, 0, 0);
    let mut recheck = None;
    for pod in by_ordinal.values().filter(|p| pods::is_active(p)) {
        count += 1;
        if pods::is_ready(pod) {
            ready += 1;
        }
        match pods::availability(pod, min_ready, now) {
            Availability::Yes => available += 1,
            Availability::After(d) => recheck = Some(d),
            Availability::No => {}
        }
        if revision_of(pod) == Some(current_revision.as_str()) {
            current += 1;
        }
        if revision_of(pod) == Some(update_revision.as_str()) {
            updated += 1;
        }
    }
    status.replicas = count;
    status.ready_replicas = Some(ready);
    status.available_replicas = Some(available);
    status.current_replicas = Some(current);
    status.updated_replicas = Some(updated);
    if rolling && updated == count && ready == count && count == replicas {
        status.current_revision = Some(update_revision.clone());
        status.current_replicas = Some(updated);
    }
    status.conditions = old.conditions.clone();
    if status != old {
        let api: Api<StatefulSet> = Api::namespaced(ctx.client().clone(), &ns);
        let patch = json!({"status": status});
        match api
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

/// Creates the ControllerRevision of the current template if missing.
async fn ensure_revision(ctx: &Ctx, sts: &StatefulSet, name: &str) -> Result<()> {
    let ns = sts.metadata.namespace.clone().unwrap_or_default();
    let api: Api<ControllerRevision> = Api::namespaced(ctx.client().clone(), &ns);
    if api.get_opt(name).await?.is_some() {
        return Ok(());
    }
    let spec = sts.spec.clone().unwrap_or_default();
    let number = api
        .list(&Default::default())
        .await?
        .items
        .iter()
        .filter(|r| opkit::informer::controller_uid(&r.metadata) == sts.metadata.uid.as_deref())
        .map(|r| r.revision)
        .max()
        .unwrap_or(0)
        + 1;
    let mut template = serde_json::to_value(&spec.template)?;
    template["$patch"] = json!("replace");
    let labels = spec.selector.match_labels.clone();
    let rev = ControllerRevision {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            namespace: Some(ns),
            labels,
            owner_references: Some(vec![controller_ref(sts)]),
            ..Default::default()
        },
        data: Some(RawExtension(json!({"spec": {"template": template}}))),
        revision: number,
    };
    match api.create(&PostParams::default(), &rev).await {
        Ok(_) => Ok(()),
        Err(e) if is_status(&e, 409) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// The pod of `ordinal`, creating its claims (Bound) first.
async fn make_pod(ctx: &Ctx, sts: &StatefulSet, ordinal: i32, revision: &str) -> Result<Pod> {
    let ns = sts.metadata.namespace.clone().unwrap_or_default();
    let name = sts.metadata.name.clone().unwrap_or_default();
    let spec = sts.spec.clone().unwrap_or_default();
    let pod_name = format!("{name}-{ordinal}");
    let pvcs: Api<PersistentVolumeClaim> = Api::namespaced(ctx.client().clone(), &ns);
    let mut volumes = Vec::new();
    let retain_on_delete = spec
        .persistent_volume_claim_retention_policy
        .as_ref()
        .and_then(|p| p.when_deleted.as_deref())
        .unwrap_or("Retain")
        == "Retain";
    for claim in spec.volume_claim_templates.iter().flatten() {
        let template_name = claim.metadata.name.clone().unwrap_or_default();
        let claim_name = format!("{template_name}-{pod_name}");
        let mut labels = claim.metadata.labels.clone().unwrap_or_default();
        labels.extend(spec.selector.match_labels.clone().unwrap_or_default());
        let pvc = PersistentVolumeClaim {
            metadata: ObjectMeta {
                name: Some(claim_name.clone()),
                namespace: Some(ns.clone()),
                labels: Some(labels),
                annotations: claim.metadata.annotations.clone(),
                owner_references: (!retain_on_delete).then(|| vec![controller_ref(sts)]),
                ..Default::default()
            },
            spec: claim.spec.clone(),
            status: None,
        };
        match pvcs.create(&PostParams::default(), &pvc).await {
            Ok(_) => {}
            Err(e) if is_status(&e, 409) => {}
            Err(e) => return Err(e.into()),
        }
        let capacity = claim
            .spec
            .as_ref()
            .and_then(|s| s.resources.as_ref())
            .and_then(|r| r.requests.clone())
            .unwrap_or_default();
        let modes = claim.spec.as_ref().and_then(|s| s.access_modes.clone());
        let patch =
            json!({"status": {"phase": "Bound", "capacity": capacity, "accessModes": modes}});
        pvcs.patch_status(&claim_name, &PatchParams::default(), &Patch::Merge(&patch))
            .await?;
        volumes.push(Volume {
            name: template_name,
            persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                claim_name,
                read_only: None,
            }),
            ..Default::default()
        });
    }
    let labels: BTreeMap<String, String> = [
        (REVISION_LABEL, revision.to_string()),
        ("statefulset.kubernetes.io/pod-name", pod_name.clone()),
        ("apps.kubernetes.io/pod-index", ordinal.to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let mut pod = pods::from_template(
        &spec.template,
        &ns,
        Naming::Exact(&pod_name),
        controller_ref(sts),
        &labels,
    );
    if let Some(ps) = pod.spec.as_mut() {
        ps.hostname = Some(pod_name.clone());
        if !spec.service_name.as_deref().unwrap_or_default().is_empty() {
            ps.subdomain = spec.service_name.clone();
        }
        let existing = ps.volumes.get_or_insert_with(Vec::new);
        for v in volumes {
            if !existing.iter().any(|e| e.name == v.name) {
                existing.push(v);
            }
        }
    }
    Ok(pod)
}
