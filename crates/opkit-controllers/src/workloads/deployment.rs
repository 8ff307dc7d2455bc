//! Deployment → ReplicaSets, following upstream's deployment controller
//! (`pkg/controller/deployment`): one ReplicaSet per pod template, named
//! `<deployment>-<pod-template-hash>`; RollingUpdate with maxSurge/maxUnavailable (upstream's
//! rounding and fenceposts), Recreate, proportional scaling during a rollout, revisions (a
//! rollback re-adopts the old ReplicaSet and bumps its revision), `revisionHistoryLimit`, pause,
//! and the status and conditions `kubectl rollout status` reads.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::apps::v1::{
    Deployment, DeploymentCondition, DeploymentStatus, ReplicaSet, ReplicaSetSpec,
};
use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use opkit::{Action, Caches, Context, Controller, ControllerDef, Request};
use serde_json::json;

use super::{
    BACKOFF, Result, WORKERS, controller_ref, is_status, owner_or_adopters, reconciler, selects,
    stable_hash, workload_selector,
};

/// The revision of a ReplicaSet (and of its Deployment: the newest ReplicaSet's).
pub(crate) const REVISION: &str = "deployment.kubernetes.io/revision";
const REVISION_HISTORY: &str = "deployment.kubernetes.io/revision-history";
const DESIRED_REPLICAS: &str = "deployment.kubernetes.io/desired-replicas";
const MAX_REPLICAS: &str = "deployment.kubernetes.io/max-replicas";
/// The label distinguishing the ReplicaSets (and pods) of one Deployment's templates.
pub(crate) const HASH_LABEL: &str = "pod-template-hash";
/// Deployment annotations not copied to its ReplicaSets.
const NOT_COPIED: [&str; 6] = [
    "kubectl.kubernetes.io/last-applied-configuration",
    REVISION,
    REVISION_HISTORY,
    DESIRED_REPLICAS,
    MAX_REPLICAS,
    "deprecated.deployment.rollback.to",
];

type Ctx = Context<()>;

/// The Deployment controller.
pub(crate) fn controller() -> ControllerDef {
    Controller::<Deployment>::new("deployment")
        .index_owners::<ReplicaSet>()
        .watches_with_caches(owners, None)
        .backoff(BACKOFF)
        .max_concurrent_reconciles(WORKERS)
        .build(reconciler("deployment", reconcile), ())
}

/// The Deployments a ReplicaSet event concerns: its controller if that is a Deployment, else
/// (an orphan) those whose selector matches it.
fn owners(rs: &ReplicaSet, caches: &Caches) -> Vec<Request> {
    let Ok(store) = caches.store::<Deployment>() else {
        return Vec::new();
    };
    owner_or_adopters(&store, rs, |d| d.spec.as_ref().map(|s| &s.selector))
}

/// Resolves an int-or-percent against `total`, rounding percentages up or down.
pub(crate) fn scaled_value(v: Option<&IntOrString>, total: i32, round_up: bool) -> i32 {
    match v {
        None => 0,
        Some(IntOrString::Int(i)) => *i,
        Some(IntOrString::String(s)) => {
            let pct: i64 = s.trim_end_matches('%').trim().parse().unwrap_or(0);
            let num = pct * i64::from(total);
            let v = if round_up {
                (num + 99).div_euclid(100)
            } else {
                num.div_euclid(100)
            };
            i32::try_from(v).unwrap_or(0)
        }
    }
}

fn replicas(d: &Deployment) -> i32 {
    d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1)
}

fn is_rolling(d: &Deployment) -> bool {
    d.spec
        .as_ref()
        .and_then(|s| s.strategy.as_ref())
        .and_then(|s| s.type_.as_deref())
        .unwrap_or("RollingUpdate")
        == "RollingUpdate"
}

/// (maxSurge, maxUnavailable) as upstream's `ResolveFenceposts`.
fn fenceposts(d: &Deployment) -> (i32, i32) {
    let ru = d
        .spec
        .as_ref()
        .and_then(|s| s.strategy.as_ref())
        .and_then(|s| s.rolling_update.as_ref());
    let default = IntOrString::String("25%".into());
    let surge = ru.map_or(Some(&default), |r| r.max_surge.as_ref());
    let unavailable = ru.map_or(Some(&default), |r| r.max_unavailable.as_ref());
    let desired = replicas(d);
    let surge = scaled_value(surge, desired, true);
    let unavailable = scaled_value(unavailable, desired, false);
    if surge == 0 && unavailable == 0 {
        (0, 1)
    } else {
        (surge, unavailable)
    }
}

fn max_surge(d: &Deployment) -> i32 {
    if !is_rolling(d) {
        return 0;
    }
    fenceposts(d).0
}

fn max_unavailable(d: &Deployment) -> i32 {
    let r = replicas(d);
    if !is_rolling(d) || r == 0 {
        return 0;
    }
    fenceposts(d).1.min(r)
}

fn rs_replicas(rs: &ReplicaSet) -> i32 {
    rs.spec.as_ref().and_then(|s| s.replicas).unwrap_or(0)
}

fn rs_status(rs: &ReplicaSet) -> (i32, i32, i32) {
    let s = rs.status.clone().unwrap_or_default();
    (
        s.replicas,
        s.ready_replicas.unwrap_or(0),
        s.available_replicas.unwrap_or(0),
    )
}

fn annotation<'a>(meta: &'a ObjectMeta, key: &str) -> Option<&'a str> {
    meta.annotations
        .as_ref()
        .and_then(|a| a.get(key))
        .map(String::as_str)
}

fn revision(rs: &ReplicaSet) -> i64 {
    annotation(&rs.metadata, REVISION)
        .and_then(|r| r.parse().ok())
        .unwrap_or(0)
}

fn created(rs: &ReplicaSet) -> Option<Timestamp> {
    rs.metadata.creation_timestamp.as_ref().map(|t| t.0)
}

fn by_creation(a: &ReplicaSet, b: &ReplicaSet) -> Ordering {
    created(a)
        .cmp(&created(b))
        .then_with(|| a.metadata.name.cmp(&b.metadata.name))
}

/// A template without the `pod-template-hash` label, for comparing ReplicaSets to the
/// Deployment's template (upstream's `EqualIgnoreHash`).
fn without_hash(t: &PodTemplateSpec) -> serde_json::Value {
    let mut t = t.clone();
    if let Some(meta) = t.metadata.as_mut()
        && let Some(labels) = meta.labels.as_mut()
    {
        labels.remove(HASH_LABEL);
        if labels.is_empty() {
            meta.labels = None;
        }
    }
    serde_json::to_value(&t).unwrap_or_default()
}

/// What one sync works with: the Deployment, its ReplicaSets, and the conditions it will write.
struct Sync<'a> {
    ctx: &'a Ctx,
    d: &'a Deployment,
    api: Api<ReplicaSet>,
    new: Option<ReplicaSet>,
    old: Vec<ReplicaSet>,
    conditions: Vec<DeploymentCondition>,
    collision_count: Option<i32>,
}

async fn reconcile(d: Arc<Deployment>, ctx: Arc<Ctx>) -> Result<Action> {
    let Some(spec) = d.spec.as_ref() else {
        return Ok(Action::await_change());
    };
    let Some(selector) = workload_selector(&spec.selector) else {
        tracing::warn!(deployment = ?d.metadata.name, "empty or invalid selector; ignored");
        return Ok(Action::await_change());
    };
    let ns = d.metadata.namespace.clone().unwrap_or_default();
    let api: Api<ReplicaSet> = Api::namespaced(ctx.client().clone(), &ns);
    let mut all = claim(&ctx, &d, &selector, &api).await?;
    all.sort_by(by_creation);
    let template = without_hash(&spec.template);
    let new_idx = all.iter().position(|rs| {
        rs.spec
            .as_ref()
            .and_then(|s| s.template.as_ref())
            .map(without_hash)
            == Some(template.clone())
    });
    let new = new_idx.map(|i| all.remove(i));
    let status = d.status.clone().unwrap_or_default();
    let mut sync = Sync {
        ctx: &ctx,
        d: &d,
        api,
        new,
        old: all,
        conditions: status.conditions.clone().unwrap_or_default(),
        collision_count: status.collision_count,
    };
    if d.metadata.deletion_timestamp.is_some() {
        return sync.status(false).await;
    }
    let paused = spec.paused.unwrap_or(false);
    sync.paused_conditions(paused);
    if paused {
        sync.sync_revision(false).await?;
        sync.scale().await?;
        return sync.status(false).await;
    }
    if sync.is_scaling_event() {
        sync.sync_revision(false).await?;
        sync.scale().await?;
        return sync.status(false).await;
    }
    if is_rolling(&d) {
        sync.sync_revision(true).await?;
        if sync.new.is_none() {
            return sync.status(true).await;
        }
        if sync.reconcile_new().await? {
            return sync.status(true).await;
        }
        if sync.reconcile_old().await? {
            return sync.status(true).await;
        }
    } else {
        sync.sync_revision(false).await?;
        let mut scaled = false;
        for i in 0..sync.old.len() {
            if rs_replicas(&sync.old[i]) > 0 {
                sync.scale_old(i, 0).await?;
                scaled = true;
            }
        }
        if scaled || sync.old.iter().any(|rs| rs_status(rs).0 > 0) {
            return sync.status(true).await;
        }
        if sync.new.is_none() {
            sync.sync_revision(true).await?;
        }
        if sync.reconcile_new().await? {
            return sync.status(true).await;
        }
    }
    let current = sync.calculate();
    if complete(&d, &current) {
        sync.cleanup().await?;
    }
    sync.status(true).await
}

/// The ReplicaSets this Deployment controls, adopting orphans its selector matches and
/// releasing those it no longer matches.
async fn claim(
    ctx: &Ctx,
    d: &Deployment,
    selector: &opkit_apimachinery::LabelSelector,
    api: &Api<ReplicaSet>,
) -> Result<Vec<ReplicaSet>> {
    let uid = d.metadata.uid.as_deref().unwrap_or_default();
    let ns = d.metadata.namespace.as_deref().unwrap_or_default();
    let index = ctx.owner_index::<ReplicaSet>()?;
    let mut owned = Vec::new();
    for rs in index.owned_by(uid) {
        if selects(selector, rs.metadata.labels.as_ref()) {
            owned.push(rs.as_ref().clone());
        } else if rs.metadata.deletion_timestamp.is_none() {
            let refs: Vec<_> = rs
                .metadata
                .owner_references
                .iter()
                .flatten()
                .filter(|r| r.uid != uid)
                .cloned()
                .collect();
            patch_meta(api, &rs, json!({"ownerReferences": refs})).await?;
        }
    }
    if d.metadata.deletion_timestamp.is_none() {
        for rs in index.orphans(ns) {
            if rs.metadata.deletion_timestamp.is_none()
                && selects(selector, rs.metadata.labels.as_ref())
            {
                let mut refs = rs.metadata.owner_references.clone().unwrap_or_default();
                refs.push(controller_ref(d));
                if let Some(adopted) =
                    patch_meta(api, &rs, json!({"ownerReferences": refs})).await?
                {
                    owned.push(adopted);
                }
            }
        }
    }
    Ok(owned)
}

async fn patch_meta(
    api: &Api<ReplicaSet>,
    rs: &ReplicaSet,
    mut meta: serde_json::Value,
) -> Result<Option<ReplicaSet>> {
    meta["resourceVersion"] = json!(rs.metadata.resource_version);
    let name = rs.metadata.name.as_deref().unwrap_or_default();
    match api
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(&json!({"metadata": meta})),
        )
        .await
    {
        Ok(rs) => Ok(Some(rs)),
        Err(e) if is_status(&e, 404) || is_status(&e, 409) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Sets a condition as upstream's `SetDeploymentCondition`: unchanged when status and reason
/// are; the transition time kept when only the reason changes.
fn set_condition(conds: &mut Vec<DeploymentCondition>, mut c: DeploymentCondition) {
    if let Some(cur) = conds.iter().find(|x| x.type_ == c.type_) {
        if cur.status == c.status && cur.reason == c.reason {
            return;
        }
        if cur.status == c.status {
            c.last_transition_time = cur.last_transition_time.clone();
        }
    }
    conds.retain(|x| x.type_ != c.type_);
    conds.push(c);
}

fn condition(type_: &str, status: &str, reason: &str, message: String) -> DeploymentCondition {
    let now = Time(Timestamp::now());
    DeploymentCondition {
        type_: type_.into(),
        status: status.into(),
        reason: Some(reason.into()),
        message: Some(message),
        last_update_time: Some(now.clone()),
        last_transition_time: Some(now),
    }
}

fn progress_deadline(d: &Deployment) -> Option<i32> {
    d.spec
        .as_ref()
        .and_then(|s| s.progress_deadline_seconds)
        .filter(|s| *s != i32::MAX)
}

/// Upstream's `DeploymentComplete`.
fn complete(d: &Deployment, s: &DeploymentStatus) -> bool {
    let r = replicas(d);
    s.updated_replicas == Some(r)
        && s.replicas == Some(r)
        && s.available_replicas == Some(r)
        && s.observed_generation >= d.metadata.generation
}

impl Sync<'_> {
    fn all(&self) -> impl Iterator<Item = &ReplicaSet> {
        self.new.iter().chain(self.old.iter())
    }

    fn name(&self) -> &str {
        self.d.metadata.name.as_deref().unwrap_or_default()
    }

    fn paused_conditions(&mut self, paused: bool) {
        if progress_deadline(self.d).is_none() {
            return;
        }
        let cur = self.conditions.iter().find(|c| c.type_ == "Progressing");
        let reason = cur.and_then(|c| c.reason.as_deref());
        if reason == Some("ProgressDeadlineExceeded") {
            return;
        }
        let is_paused = reason == Some("DeploymentPaused");
        if paused && !is_paused {
            set_condition(
                &mut self.conditions,
                condition(
                    "Progressing",
                    "Unknown",
                    "DeploymentPaused",
                    "Deployment is paused".into(),
                ),
            );
        } else if !paused && is_paused {
            set_condition(
                &mut self.conditions,
                condition(
                    "Progressing",
                    "Unknown",
                    "DeploymentResumed",
                    "Deployment is resumed".into(),
                ),
            );
        }
    }

    /// Upstream's `isScalingEvent`: an active ReplicaSet was sized for another replica count.
    fn is_scaling_event(&self) -> bool {
        let r = replicas(self.d).to_string();
        self.all()
            .filter(|rs| rs_replicas(rs) > 0)
            .filter_map(|rs| annotation(&rs.metadata, DESIRED_REPLICAS))
            .any(|desired| desired != r)
    }

    /// Finds or (with `create`) creates the new ReplicaSet and brings revisions up to date:
    /// the new ReplicaSet's revision is the highest, the Deployment carries it.
    async fn sync_revision(&mut self, create: bool) -> Result<()> {
        let max_old = self.old.iter().map(revision).max().unwrap_or(0);
        let new_revision = max_old + 1;
        if let Some(rs) = self.new.take() {
            let mut annotations = rs.metadata.annotations.clone().unwrap_or_default();
            let mut changed = copy_annotations(self.d, &mut annotations);
            let old_revision = revision(&rs);
            if old_revision < new_revision {
                annotations.insert(REVISION.into(), new_revision.to_string());
                changed = true;
                if old_revision > 0 {
                    let history = annotations
                        .get(REVISION_HISTORY)
                        .filter(|h| !h.is_empty())
                        .map(|h| format!("{h},{old_revision}"))
                        .unwrap_or_else(|| old_revision.to_string());
                    annotations.insert(REVISION_HISTORY.into(), history);
                }
            }
            let min_ready = self.d.spec.as_ref().and_then(|s| s.min_ready_seconds);
            let spec_changed = rs.spec.as_ref().and_then(|s| s.min_ready_seconds) != min_ready;
            let rs = if changed || spec_changed {
                let patch = json!({
                    "metadata": {"annotations": annotations, "resourceVersion": rs.metadata.resource_version},
                    "spec": {"minReadySeconds": min_ready},
                });
                let name = rs.metadata.name.clone().unwrap_or_default();
                self.api
                    .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await?
            } else {
                rs
            };
            if progress_deadline(self.d).is_some()
                && !self.conditions.iter().any(|c| c.type_ == "Progressing")
            {
                let msg = format!(
                    "Found new replica set {:?}",
                    rs.metadata.name.as_deref().unwrap_or_default()
                );
                set_condition(
                    &mut self.conditions,
                    condition("Progressing", "True", "FoundNewReplicaSet", msg),
                );
            }
            self.new = Some(rs);
        } else if create {
            self.new = Some(self.create_new(new_revision).await?);
        }
        let wanted = match &self.new {
            Some(rs) => revision(rs),
            None => max_old,
        };
        if wanted > 0 && annotation(&self.d.metadata, REVISION) != Some(wanted.to_string().as_str())
        {
            let patch = json!({"metadata": {"annotations": {REVISION: wanted.to_string()}}});
            let api: Api<Deployment> = Api::namespaced(
                self.ctx.client().clone(),
                self.d.metadata.namespace.as_deref().unwrap_or_default(),
            );
            match api
                .patch(self.name(), &PatchParams::default(), &Patch::Merge(&patch))
                .await
            {
                Ok(_) => {}
                Err(e) if is_status(&e, 404) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    async fn create_new(&mut self, new_revision: i64) -> Result<ReplicaSet> {
        let d = self.d;
        let spec = d.spec.clone().unwrap_or_default();
        let hash = stable_hash(&spec.template, self.collision_count);
        let mut template = spec.template.clone();
        let tmeta = template.metadata.get_or_insert_with(Default::default);
        tmeta
            .labels
            .get_or_insert_with(Default::default)
            .insert(HASH_LABEL.into(), hash.clone());
        let labels = tmeta.labels.clone();
        let mut selector = spec.selector.clone();
        selector
            .match_labels
            .get_or_insert_with(Default::default)
            .insert(HASH_LABEL.into(), hash.clone());
        let mut annotations = BTreeMap::new();
        copy_annotations(d, &mut annotations);
        annotations.insert(REVISION.into(), new_revision.to_string());
        let r = replicas(d);
        annotations.insert(DESIRED_REPLICAS.into(), r.to_string());
        annotations.insert(MAX_REPLICAS.into(), (r + max_surge(d)).to_string());
        let name = format!("{}-{hash}", self.name());
        let mut rs = ReplicaSet {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                namespace: d.metadata.namespace.clone(),
                labels,
                annotations: Some(annotations),
                owner_references: Some(vec![controller_ref(d)]),
                ..Default::default()
            },
            spec: Some(ReplicaSetSpec {
                replicas: Some(0),
                min_ready_seconds: spec.min_ready_seconds,
                selector,
                template: Some(template),
            }),
            status: None,
        };
        let replicas = self.new_rs_replicas(&rs);
        if let Some(s) = rs.spec.as_mut() {
            s.replicas = Some(replicas);
        }
        match self.api.create(&PostParams::default(), &rs).await {
            Ok(created) => {
                if progress_deadline(d).is_some() {
                    let msg = format!("Created new replica set {name:?}");
                    set_condition(
                        &mut self.conditions,
                        condition("Progressing", "True", "NewReplicaSetCreated", msg),
                    );
                }
                Ok(created)
            }
            Err(e) if is_status(&e, 409) => {
                let existing = self.api.get(&name).await?;
                let ours = opkit::informer::controller_uid(&existing.metadata)
                    == d.metadata.uid.as_deref();
                let same = existing
                    .spec
                    .as_ref()
                    .and_then(|s| s.template.as_ref())
                    .map(without_hash)
                    == Some(without_hash(&spec.template));
                if ours && same {
                    return Ok(existing);
                }
                // A hash collision: bump collisionCount so the next sync hashes differently.
                let count = self.collision_count.unwrap_or(0) + 1;
                let api: Api<Deployment> = Api::namespaced(
                    self.ctx.client().clone(),
                    d.metadata.namespace.as_deref().unwrap_or_default(),
                );
                let patch = json!({"status": {"collisionCount": count}});
                api.patch_status(self.name(), &PatchParams::default(), &Patch::Merge(&patch))
                    .await?;
                Err(e.into())
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Upstream's `NewRSNewReplicas`.
    fn new_rs_replicas(&self, new: &ReplicaSet) -> i32 {
        let r = replicas(self.d);
        if !is_rolling(self.d) {
            return r;
        }
        let current: i32 = self.all().map(rs_replicas).sum::<i32>() + rs_replicas(new)
            - self.new.as_ref().map_or(0, rs_replicas);
        let max_total = r + max_surge(self.d);
        if current >= max_total {
            return rs_replicas(new);
        }
        let up = (max_total - current).min(r - rs_replicas(new));
        rs_replicas(new) + up.max(0)
    }

    /// Scales a ReplicaSet and records the Deployment's size on it.
    async fn scale_rs(&self, rs: &ReplicaSet, n: i32) -> Result<Option<ReplicaSet>> {
        let desired = replicas(self.d).to_string();
        let max = (replicas(self.d) + max_surge(self.d)).to_string();
        if rs_replicas(rs) == n
            && annotation(&rs.metadata, DESIRED_REPLICAS) == Some(desired.as_str())
            && annotation(&rs.metadata, MAX_REPLICAS) == Some(max.as_str())
        {
            return Ok(None);
        }
        let patch = json!({
            "metadata": {"annotations": {DESIRED_REPLICAS: desired, MAX_REPLICAS: max},
                         "resourceVersion": rs.metadata.resource_version},
            "spec": {"replicas": n},
        });
        let name = rs.metadata.name.as_deref().unwrap_or_default();
        Ok(Some(
            self.api
                .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
                .await?,
        ))
    }

    async fn scale_old(&mut self, i: usize, n: i32) -> Result<bool> {
        match self.scale_rs(&self.old[i], n).await? {
            Some(rs) => {
                self.old[i] = rs;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    async fn scale_new(&mut self, n: i32) -> Result<bool> {
        let Some(rs) = self.new.as_ref() else {
            return Ok(false);
        };
        let size_changed = rs_replicas(rs) != n;
        match self.scale_rs(rs, n).await? {
            Some(rs) => {
                self.new = Some(rs);
                Ok(size_changed)
            }
            None => Ok(false),
        }
    }

    /// Upstream's `reconcileNewReplicaSet`.
    async fn reconcile_new(&mut self) -> Result<bool> {
        let Some(new) = self.new.clone() else {
            return Ok(false);
        };
        let r = replicas(self.d);
        let current = rs_replicas(&new);
        if current == r {
            return Ok(false);
        }
        if current > r {
            return self.scale_new(r).await;
        }
        let n = self.new_rs_replicas(&new);
        self.scale_new(n).await
    }

    /// Upstream's `reconcileOldReplicaSets`: scale down unhealthy old replicas, then as many
    /// healthy ones as `maxUnavailable` allows.
    async fn reconcile_old(&mut self) -> Result<bool> {
        let old_count: i32 = self.old.iter().map(rs_replicas).sum();
        if old_count == 0 {
            return Ok(false);
        }
        let all_count: i32 = self.all().map(rs_replicas).sum();
        let min_available = replicas(self.d) - max_unavailable(self.d);
        let new_unavailable = self
            .new
            .as_ref()
            .map_or(0, |rs| rs_replicas(rs) - rs_status(rs).2);
        let max_scaled_down = all_count - min_available - new_unavailable;
        if max_scaled_down <= 0 {
            return Ok(false);
        }
        self.old.sort_by(by_creation);
        let mut cleaned = 0;
        for i in 0..self.old.len() {
            if cleaned >= max_scaled_down {
                break;
            }
            let (spec, avail) = (rs_replicas(&self.old[i]), rs_status(&self.old[i]).2);
            if spec == 0 || spec == avail {
                continue;
            }
            let down = (max_scaled_down - cleaned).min(spec - avail);
            self.scale_old(i, spec - down).await?;
            cleaned += down;
        }
        let available: i32 = self.all().map(|rs| rs_status(rs).2).sum();
        let mut scaled = 0;
        if available > min_available {
            let total = available - min_available;
            for i in 0..self.old.len() {
                if scaled >= total {
                    break;
                }
                let spec = rs_replicas(&self.old[i]);
                if spec == 0 {
                    continue;
                }
                let down = spec.min(total - scaled);
                self.scale_old(i, spec - down).await?;
                scaled += down;
            }
        }
        Ok(cleaned + scaled > 0)
    }

    /// Upstream's `scale`: a replica count change outside a rollout step, distributed over
    /// the active ReplicaSets in proportion to their size.
    async fn scale(&mut self) -> Result<()> {
        let r = replicas(self.d);
        let active: Vec<bool> = self.all().map(|rs| rs_replicas(rs) > 0).collect();
        let n_active = active.iter().filter(|a| **a).count();
        if n_active <= 1 {
            // Upstream's FindActiveOrLatest.
            if n_active == 1 {
                if self.new.as_ref().is_some_and(|rs| rs_replicas(rs) > 0) {
                    self.scale_new(r).await?;
                } else if let Some(i) = self.old.iter().position(|rs| rs_replicas(rs) > 0) {
                    self.scale_old(i, r).await?;
                }
            } else if self.new.is_some() {
                self.scale_new(r).await?;
            } else if let Some(i) =
                (0..self.old.len()).max_by(|a, b| by_creation(&self.old[*a], &self.old[*b]))
            {
                self.scale_old(i, r).await?;
            }
            return Ok(());
        }
        let saturated = self.new.as_ref().is_some_and(|rs| {
            rs_replicas(rs) == r
                && annotation(&rs.metadata, DESIRED_REPLICAS) == Some(r.to_string().as_str())
                && rs_status(rs).2 == r
        });
        if saturated {
            for i in 0..self.old.len() {
                if rs_replicas(&self.old[i]) > 0 {
                    self.scale_old(i, 0).await?;
                }
            }
            return Ok(());
        }
        if !is_rolling(self.d) {
            return Ok(());
        }
        // Indices: None = the new ReplicaSet, Some(i) = old[i].
        let mut members: Vec<(Option<usize>, ReplicaSet)> = self
            .new
            .iter()
            .map(|rs| (None, rs.clone()))
            .chain(
                self.old
                    .iter()
                    .cloned()
                    .enumerate()
                    .map(|(i, rs)| (Some(i), rs)),
            )
            .filter(|(_, rs)| rs_replicas(rs) > 0)
            .collect();
        let total: i32 = members.iter().map(|(_, rs)| rs_replicas(rs)).sum();
        let allowed = if r > 0 { r + max_surge(self.d) } else { 0 };
        let to_add = allowed - total;
        members.sort_by(|(_, a), (_, b)| {
            let size = rs_replicas(b).cmp(&rs_replicas(a));
            if to_add > 0 {
                size.then_with(|| by_creation(b, a))
            } else {
                size.then_with(|| by_creation(a, b))
            }
        });
        let status_replicas = self.d.status.as_ref().and_then(|s| s.replicas).unwrap_or(0);
        let mut added = 0;
        let mut sizes = Vec::with_capacity(members.len());
        for (_, rs) in &members {
            let size = rs_replicas(rs);
            if to_add != 0 {
                let p = proportion(rs, r, max_surge(self.d), status_replicas, to_add, added);
                sizes.push(size + p);
                added += p;
            } else {
                sizes.push(size);
            }
        }
        if to_add != 0
            && let Some(first) = sizes.first_mut()
        {
            *first = (*first + to_add - added).max(0);
        }
        for ((idx, _), size) in members.into_iter().zip(sizes) {
            match idx {
                None => {
                    self.scale_new(size).await?;
                }
                Some(i) => {
                    self.scale_old(i, size).await?;
                }
            }
        }
        Ok(())
    }

    /// Upstream's `calculateStatus`.
    fn calculate(&self) -> DeploymentStatus {
        let (mut replicas_, mut ready, mut available, mut spec_total) = (0, 0, 0, 0);
        for rs in self.all() {
            let (r, rd, a) = rs_status(rs);
            replicas_ += r;
            ready += rd;
            available += a;
            spec_total += rs_replicas(rs);
        }
        let updated = self.new.as_ref().map_or(0, |rs| rs_status(rs).0);
        let old = self.d.status.clone().unwrap_or_default();
        DeploymentStatus {
            observed_generation: self.d.metadata.generation,
            replicas: Some(replicas_),
            updated_replicas: Some(updated),
            ready_replicas: Some(ready),
            available_replicas: Some(available),
            unavailable_replicas: Some((spec_total - available).max(0)),
            terminating_replicas: old.terminating_replicas,
            collision_count: self.collision_count,
            conditions: None,
        }
    }

    /// Computes and writes the status; with `rollout`, also the Progressing condition
    /// (upstream's `syncRolloutStatus`). Requeues for the progress deadline.
    async fn status(mut self, rollout: bool) -> Result<Action> {
        let d = self.d;
        let mut status = self.calculate();
        let r = replicas(d);
        let min_available = r - max_unavailable(d);
        if status.available_replicas.unwrap_or(0) >= min_available {
            set_condition(
                &mut self.conditions,
                condition(
                    "Available",
                    "True",
                    "MinimumReplicasAvailable",
                    "Deployment has minimum availability.".into(),
                ),
            );
        } else {
            set_condition(
                &mut self.conditions,
                condition(
                    "Available",
                    "False",
                    "MinimumReplicasUnavailable",
                    "Deployment does not have minimum availability.".into(),
                ),
            );
        }
        let mut requeue = None;
        let deadline = progress_deadline(d);
        if deadline.is_none() {
            self.conditions.retain(|c| c.type_ != "Progressing");
        }
        if rollout && let Some(deadline) = deadline {
            let current = self
                .conditions
                .iter()
                .find(|c| c.type_ == "Progressing")
                .cloned();
            let reason = current.as_ref().and_then(|c| c.reason.clone());
            let is_complete = status.replicas == status.updated_replicas
                && reason.as_deref() == Some("NewReplicaSetAvailable");
            let rs_name = self.new.as_ref().and_then(|rs| rs.metadata.name.clone());
            if !is_complete {
                let old = d.status.clone().unwrap_or_default();
                let old_old = old.replicas.unwrap_or(0) - old.updated_replicas.unwrap_or(0);
                let new_old = status.replicas.unwrap_or(0) - status.updated_replicas.unwrap_or(0);
                let progressing = status.updated_replicas > old.updated_replicas
                    || new_old < old_old
                    || status.ready_replicas > old.ready_replicas
                    || status.available_replicas > old.available_replicas;
                if complete(d, &status) {
                    let msg = match &rs_name {
                        Some(n) => format!("ReplicaSet {n:?} has successfully progressed."),
                        None => "Deployment has successfully progressed.".into(),
                    };
                    set_condition(
                        &mut self.conditions,
                        condition("Progressing", "True", "NewReplicaSetAvailable", msg),
                    );
                } else if progressing {
                    let msg = match &rs_name {
                        Some(n) => format!("ReplicaSet {n:?} is progressing."),
                        None => format!("Deployment {:?} is progressing.", self.name()),
                    };
                    let mut c = condition("Progressing", "True", "ReplicaSetUpdated", msg);
                    if let Some(cur) = &current
                        && cur.status == "True"
                    {
                        c.last_transition_time = cur.last_transition_time.clone();
                    }
                    self.conditions.retain(|x| x.type_ != "Progressing");
                    self.conditions.push(c);
                } else if let Some(cur) = &current {
                    let since = cur.last_update_time.as_ref().map(|t| t.0);
                    let timed_out = reason.as_deref() == Some("ProgressDeadlineExceeded")
                        || since.is_some_and(|s| {
                            s.as_second() + i64::from(deadline) < Timestamp::now().as_second()
                        });
                    if timed_out {
                        let msg = match &rs_name {
                            Some(n) => format!("ReplicaSet {n:?} has timed out progressing."),
                            None => {
                                format!("Deployment {:?} has timed out progressing.", self.name())
                            }
                        };
                        set_condition(
                            &mut self.conditions,
                            condition("Progressing", "False", "ProgressDeadlineExceeded", msg),
                        );
                    }
                }
            }
            if let Some(cur) = self.conditions.iter().find(|c| c.type_ == "Progressing")
                && cur.status == "True"
                && cur.reason.as_deref() != Some("NewReplicaSetAvailable")
                && !complete(d, &status)
                && let Some(since) = cur.last_update_time.as_ref()
            {
                let left = since.0.as_second() + i64::from(deadline) - Timestamp::now().as_second();
                requeue = Some(Duration::from_secs(left.max(0) as u64 + 1));
            }
        }
        status.conditions = Some(self.conditions.clone());
        if d.status.as_ref() != Some(&status) {
            let api: Api<Deployment> = Api::namespaced(
                self.ctx.client().clone(),
                d.metadata.namespace.as_deref().unwrap_or_default(),
            );
            let patch = json!({"status": status});
            match api
                .patch_status(self.name(), &PatchParams::default(), &Patch::Merge(&patch))
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

    /// Deletes old, empty ReplicaSets beyond `revisionHistoryLimit`, oldest revision first.
    async fn cleanup(&mut self) -> Result<()> {
        let limit = self
            .d
            .spec
            .as_ref()
            .and_then(|s| s.revision_history_limit)
            .unwrap_or(10)
            .max(0) as usize;
        let alive: Vec<&ReplicaSet> = self
            .old
            .iter()
            .filter(|rs| rs.metadata.deletion_timestamp.is_none())
            .collect();
        if alive.len() <= limit {
            return Ok(());
        }
        let diff = alive.len() - limit;
        let mut cleanable: Vec<&ReplicaSet> = alive
            .into_iter()
            .filter(|rs| {
                rs_replicas(rs) == 0
                    && rs_status(rs).0 == 0
                    && rs.metadata.generation
                        <= rs.status.as_ref().and_then(|s| s.observed_generation)
            })
            .collect();
        cleanable.sort_by(|a, b| {
            revision(a)
                .cmp(&revision(b))
                .then_with(|| by_creation(a, b))
        });
        for rs in cleanable.into_iter().take(diff) {
            let name = rs.metadata.name.as_deref().unwrap_or_default();
            match self.api.delete(name, &DeleteParams::background()).await {
                Ok(_) => {}
                Err(e) if is_status(&e, 404) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }
}

/// Upstream's `GetProportion`.
fn proportion(
    rs: &ReplicaSet,
    r: i32,
    surge: i32,
    status_replicas: i32,
    to_add: i32,
    added: i32,
) -> i32 {
    let size = rs_replicas(rs);
    if size == 0 || to_add == 0 || to_add == added {
        return 0;
    }
    let fraction = if r == 0 {
        -size
    } else {
        let max = r + surge;
        let before = annotation(&rs.metadata, MAX_REPLICAS)
            .and_then(|v| v.parse::<i32>().ok())
            .filter(|v| *v != 0)
            .unwrap_or(status_replicas);
        if before == 0 {
            0
        } else {
            ((f64::from(size) * f64::from(max)) / f64::from(before)).round() as i32 - size
        }
    };
    let allowed = to_add - added;
    if to_add > 0 {
        fraction.min(allowed)
    } else {
        fraction.max(allowed)
    }
}

/// Copies the Deployment's annotations to a ReplicaSet's (except the controller's own);
/// returns whether anything changed.
fn copy_annotations(d: &Deployment, into: &mut BTreeMap<String, String>) -> bool {
    let mut changed = false;
    for (k, v) in d.metadata.annotations.iter().flatten() {
        if NOT_COPIED.contains(&k.as_str()) {
            continue;
        }
        if into.get(k) != Some(v) {
            into.insert(k.clone(), v.clone());
            changed = true;
        }
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::{DeploymentSpec, DeploymentStrategy, RollingUpdateDeployment};

    fn deployment(replicas: i32, surge: IntOrString, unavailable: IntOrString) -> Deployment {
        Deployment {
            spec: Some(DeploymentSpec {
                replicas: Some(replicas),
                strategy: Some(DeploymentStrategy {
                    type_: Some("RollingUpdate".into()),
                    rolling_update: Some(RollingUpdateDeployment {
                        max_surge: Some(surge),
                        max_unavailable: Some(unavailable),
                    }),
                }),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn percentages_round_as_upstream() {
        let pct = |s: &str| IntOrString::String(s.into());
        let d = deployment(10, pct("25%"), pct("25%"));
        assert_eq!(fenceposts(&d), (3, 2));
        let d = deployment(1, pct("25%"), pct("25%"));
        assert_eq!(fenceposts(&d), (1, 0));
        let d = deployment(3, IntOrString::Int(0), IntOrString::Int(0));
        assert_eq!(
            fenceposts(&d),
            (0, 1),
            "both zero: maxUnavailable becomes 1"
        );
        let d = deployment(2, IntOrString::Int(0), IntOrString::Int(5));
        assert_eq!(max_unavailable(&d), 2, "capped at replicas");
    }

    #[test]
    fn proportions_follow_max_replicas_annotation() {
        let mut rs = ReplicaSet {
            spec: Some(ReplicaSetSpec {
                replicas: Some(5),
                ..Default::default()
            }),
            ..Default::default()
        };
        rs.metadata.annotations = Some([(MAX_REPLICAS.to_string(), "13".to_string())].into());
        // Scaling 10 (+3 surge) → 20 (+5 surge): 5 * 25 / 13 ≈ 10 → +5 (allowed 12).
        assert_eq!(proportion(&rs, 20, 5, 13, 12, 0), 5);
    }

    #[test]
    fn set_condition_keeps_transition_time_when_status_unchanged() {
        let mut conds = vec![condition(
            "Progressing",
            "True",
            "NewReplicaSetCreated",
            "a".into(),
        )];
        let first = conds[0].last_transition_time.clone();
        let mut next = condition("Progressing", "True", "ReplicaSetUpdated", "b".into());
        next.last_transition_time = Some(Time(Timestamp::UNIX_EPOCH));
        set_condition(&mut conds, next);
        assert_eq!(conds.len(), 1);
        assert_eq!(conds[0].reason.as_deref(), Some("ReplicaSetUpdated"));
        assert_eq!(conds[0].last_transition_time, first);
    }
}
