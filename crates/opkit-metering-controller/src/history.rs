//! The control plane's object history, the default data source: pods (their requests, node and
//! controller owner) and the objects that may own them, with when each appeared and went.
//!
//! Why a watch from the start rather than the store's history: the store keeps history for a
//! window (`--watch-history`, five minutes by default) to serve watches, not for months of
//! reports, and a watch is what any cluster offers, so the same code meters a remote cluster.
//! Instants are the metering clock's when an event is seen (sub-second, and exact under a
//! controlled clock); an object first seen in a list — at start, or after a broken watch
//! re-lists — counts from its `creationTimestamp`, and one that a re-list no longer shows went
//! when the list was read. Owners outside the watched kinds (custom resources) are known from
//! the owner references that name them, which give their group, kind, name and uid.
//!
//! A pod's readiness is its `Ready` condition: a change seen in a watch event is recorded at the
//! metering clock's instant (the condition's `lastTransitionTime` is the kubelet's clock); a pod
//! first seen ready in a list counts as ready from `lastTransitionTime`, clamped between its
//! recorded creation (or last change) and the list's instant.
//!
//! PVCs and nodes also give sizes over time ([`Segment`]s: a claim's requested storage and its
//! bound capacity, a node's CPU and memory capacity and allocatable): a size that changes
//! closes its segment and opens another at that instant, and a deletion closes them all.
//!
//! Kept across restarts in a checkpoint file (`history.json` in the state directory, `opkit up`'s
//! data directory): [`History::load`] reads it at start, and a task rewrites it (whole, through
//! a rename) at most every [`CHECKPOINT_EVERY`] while the history changes. After a restart the
//! first lists reconcile it with the cluster as after a broken watch: objects still there keep
//! their recorded lives, new ones count from their creation, and ones gone while the controller
//! was down went when the list was read. A file, not ConfigMaps: a month of history outgrows a
//! ConfigMap's 1 MiB, and the data directory is what `opkit up` keeps across restarts anyway.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind};
use kube::runtime::watcher;
use opkit_apimachinery::quantity::Quantity;
use opkit_metering::lifetime::{self, GroupKind, Owner, PodLife, Segment};
use opkit_metering::tables;

use serde::{Deserialize, Serialize};

use crate::api::HistoryStatus;
use crate::clock::Clock;

/// The kinds watched as possible owners of pods and as objects a custom resource manages:
/// `(group, version, kind, plural)`.
const OWNER_KINDS: [(&str, &str, &str, &str); 11] = [
    ("apps", "v1", "Deployment", "deployments"),
    ("apps", "v1", "ReplicaSet", "replicasets"),
    ("apps", "v1", "StatefulSet", "statefulsets"),
    ("apps", "v1", "DaemonSet", "daemonsets"),
    ("batch", "v1", "Job", "jobs"),
    ("batch", "v1", "CronJob", "cronjobs"),
    ("", "v1", "Service", "services"),
    ("", "v1", "ConfigMap", "configmaps"),
    ("", "v1", "Secret", "secrets"),
    ("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims"),
    ("", "v1", "Node", "nodes"),
];

/// The history, shared by the watchers that write it and the reports that read it.
#[derive(Clone, Default)]
pub struct History(Arc<Mutex<Inner>>);

#[derive(Default, Serialize, Deserialize)]
struct Inner {
    pods: BTreeMap<String, PodLife>,
    /// Watched objects by uid.
    objects: BTreeMap<String, Owner>,
    /// Objects known only from owner references, by uid.
    referenced: BTreeMap<String, Owner>,
    /// Uids listed by each watcher's current re-list (by watcher index).
    #[serde(skip)]
    relisting: BTreeMap<usize, BTreeSet<String>>,
    /// Changes recorded since start (each event and re-list end counts one).
    #[serde(skip)]
    revision: u64,
    /// The revision last written to the checkpoint, if one is kept.
    #[serde(skip)]
    checkpointed: Option<u64>,
    /// Sizes of PVCs and nodes over time.
    segments: Vec<Segment>,
    /// The segments still open, by object uid (indexes into `segments`).
    open: BTreeMap<String, Vec<usize>>,
}

/// One watched object, reduced to what the history keeps.
struct Seen {
    uid: String,
    group_kind: GroupKind,
    namespace: String,
    name: String,
    created: Option<Timestamp>,
    owner: Option<OwnerReference>,
    pod: Option<PodParts>,
    /// The sizes it has now (PVCs and nodes; empty for other kinds).
    sizes: Vec<Size>,
}

/// One size of an object now: a series of a history table.
#[derive(PartialEq)]
struct Size {
    table: &'static str,
    labels: BTreeMap<String, String>,
    amount: f64,
}

struct PodParts {
    node: Option<String>,
    cpu_millicores: u64,
    memory_bytes: u64,
    /// Whether its `Ready` condition is `True`, and since when the condition says it holds.
    ready: bool,
    ready_changed: Option<Timestamp>,
}

impl History {
    /// The history as opkit-metering integrates it: owners (watched and referenced) and pods.
    pub fn snapshot(&self) -> lifetime::History {
        let inner = self.lock();
        let mut owners = inner.referenced.clone();
        owners.extend(inner.objects.clone());
        lifetime::History {
            owners: owners.into_values().collect(),
            pods: inner.pods.values().cloned().collect(),
            segments: inner.segments.clone(),
        }
    }

    /// What it holds now.
    pub fn status(&self) -> HistoryStatus {
        let inner = self.lock();
        HistoryStatus {
            live_pods: inner.pods.values().filter(|p| p.deleted.is_none()).count() as u64,
            ready_pods: inner
                .pods
                .values()
                .filter(|p| p.deleted.is_none() && p.readiness.last().is_some_and(|r| r.1))
                .count() as u64,
            pods: inner.pods.len() as u64,
            objects: inner.objects.len() as u64,
            live_objects: inner
                .objects
                .values()
                .filter(|o| o.deleted.is_none())
                .count() as u64,
            revision: inner.revision,
            checkpointed_revision: inner.checkpointed,
        }
    }

    /// The history a checkpoint file holds, or an empty one when there is no file yet.
    pub fn load(path: &Path) -> Result<History, HistoryError> {
        let bad = |message: String| HistoryError::Checkpoint {
            path: path.to_owned(),
            message,
        };
        let inner = match std::fs::read(path) {
            Ok(bytes) => serde_json::from_slice::<Inner>(&bytes).map_err(|e| {
                bad(format!(
                    "{e} (move it away to start the history afresh from the objects alive now)"
                ))
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Inner::default(),
            Err(e) => return Err(bad(e.to_string())),
        };
        Ok(History(Arc::new(Mutex::new(inner))))
    }

    /// Writes the history to `path` (through a temporary file and a rename, so a crash leaves
    /// the old or the new file) if it changed since the last write.
    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        let (revision, bytes) = {
            let inner = self.lock();
            if inner.checkpointed == Some(inner.revision) {
                return Ok(());
            }
            (inner.revision, serde_json::to_vec(&*inner)?)
        };
        let tmp = path.with_extension("json.tmp");
        std::fs::write(&tmp, bytes)?;
        std::fs::rename(&tmp, path)?;
        self.lock().checkpointed = Some(revision);
        Ok(())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records an object seen at `now`; `listed` when it came from a list.
    fn apply(&self, watcher: usize, seen: Seen, now: Timestamp, listed: bool) {
        let mut inner = self.lock();
        inner.revision += 1;
        if listed && let Some(uids) = inner.relisting.get_mut(&watcher) {
            uids.insert(seen.uid.clone());
        }
        let first_seen = if listed {
            seen.created.unwrap_or(now)
        } else {
            now
        };
        let known = inner.open.contains_key(&seen.uid);
        if known || !seen.sizes.is_empty() {
            inner.resize(&seen.uid, seen.sizes, if known { now } else { first_seen });
        }
        let owner_uid = seen.owner.as_ref().map(|r| r.uid.clone());
        if let Some(r) = &seen.owner
            && !inner.objects.contains_key(&r.uid)
        {
            let (group, _) = r.api_version.rsplit_once('/').unwrap_or(("", ""));
            inner.referenced.insert(
                r.uid.clone(),
                Owner {
                    uid: r.uid.clone(),
                    group_kind: GroupKind {
                        group: group.to_owned(),
                        kind: r.kind.clone(),
                    },
                    namespace: seen.namespace.clone(),
                    name: r.name.clone(),
                    owner: None,
                    created: None,
                    deleted: None,
                },
            );
        }
        match seen.pod {
            Some(parts) => {
                let pod = inner.pods.entry(seen.uid.clone()).or_insert(PodLife {
                    uid: seen.uid,
                    namespace: seen.namespace,
                    name: seen.name,
                    owner: None,
                    node: None,
                    cpu_millicores: parts.cpu_millicores,
                    memory_bytes: parts.memory_bytes,
                    created: first_seen,
                    deleted: None,
                    readiness: Vec::new(),
                });
                pod.owner = owner_uid;
                pod.node = parts.node;
                let was_ready = pod.readiness.last().is_some_and(|&(_, ready)| ready);
                if parts.ready != was_ready {
                    // Seen in a watch event: the change happened now. Seen in a list (at start,
                    // after a broken watch): when the condition says, within what is recorded.
                    let floor = pod.readiness.last().map_or(pod.created, |&(at, _)| at);
                    let at = match parts.ready_changed {
                        Some(changed) if listed => changed.clamp(floor, now.max(floor)),
                        _ => now.max(floor),
                    };
                    pod.readiness.push((at, parts.ready));
                }
            }
            None => {
                inner.referenced.remove(&seen.uid);
                let object = inner.objects.entry(seen.uid.clone()).or_insert(Owner {
                    uid: seen.uid,
                    group_kind: seen.group_kind,
                    namespace: seen.namespace,
                    name: seen.name,
                    owner: None,
                    created: Some(first_seen),
                    deleted: None,
                });
                object.owner = owner_uid;
            }
        }
    }

    /// Records that the object `uid` went at `now`.
    fn delete(&self, uid: &str, now: Timestamp) {
        let mut inner = self.lock();
        inner.revision += 1;
        if let Some(pod) = inner.pods.get_mut(uid) {
            pod.deleted.get_or_insert(now);
        }
        if let Some(object) = inner.objects.get_mut(uid) {
            object.deleted.get_or_insert(now);
        }
        if inner.open.contains_key(uid) {
            inner.resize(uid, Vec::new(), now);
        }
    }

    fn relist_started(&self, watcher: usize) {
        self.lock().relisting.insert(watcher, BTreeSet::new());
    }

    /// Ends a re-list of `kind` objects: those alive that it did not show went at `now`.
    fn relist_done(&self, watcher: usize, pods: bool, kind: &GroupKind, now: Timestamp) {
        let mut inner = self.lock();
        let Some(listed) = inner.relisting.remove(&watcher) else {
            return;
        };
        inner.revision += 1;
        if pods {
            for pod in inner.pods.values_mut() {
                if pod.deleted.is_none() && !listed.contains(&pod.uid) {
                    pod.deleted = Some(now);
                }
            }
        } else {
            let mut gone = Vec::new();
            for object in inner.objects.values_mut() {
                if object.group_kind == *kind
                    && object.deleted.is_none()
                    && !listed.contains(&object.uid)
                {
                    object.deleted = Some(now);
                    gone.push(object.uid.clone());
                }
            }
            for uid in gone {
                if inner.open.contains_key(&uid) {
                    inner.resize(&uid, Vec::new(), now);
                }
            }
        }
    }
}

impl Inner {
    /// Object `uid` has `sizes` from `at`: open segments that no longer hold close at `at`, new
    /// sizes open segments from `at`.
    fn resize(&mut self, uid: &str, sizes: Vec<Size>, at: Timestamp) {
        let open = self.open.entry(uid.to_owned()).or_default();
        let segments = &mut self.segments;
        open.retain(|&i| {
            let s = &segments[i];
            let holds = sizes
                .iter()
                .any(|z| z.table == s.table && z.labels == s.labels && z.amount == s.amount);
            if !holds {
                segments[i].to = Some(at.max(segments[i].from));
            }
            holds
        });
        for size in sizes {
            let already = open.iter().any(|&i| {
                let s = &segments[i];
                size.table == s.table && size.labels == s.labels && size.amount == s.amount
            });
            if !already {
                open.push(segments.len());
                segments.push(Segment {
                    table: size.table.to_owned(),
                    labels: size.labels,
                    amount: size.amount,
                    from: at,
                    to: None,
                });
            }
        }
    }
}

/// Why the history could not start.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    /// The checkpoint file cannot be read or written.
    #[error("the metering history's checkpoint {}: {message}", path.display())]
    Checkpoint {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// A watcher did not finish its first list in time.
    #[error(
        "the history's watch of {kind} did not finish its first list within {0:?}",
        SYNC_TIMEOUT
    )]
    NotSynced {
        /// The kind.
        kind: String,
    },
}

/// How long the first lists may take.
const SYNC_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// Starts the watchers on `client`'s cluster and waits until each has listed once; the tasks
/// run until aborted.
pub async fn start(
    client: &kube::Client,
    history: &History,
    clock: &Clock,
) -> Result<Vec<tokio::task::JoinHandle<()>>, HistoryError> {
    let mut tasks = Vec::new();
    let mut synced = Vec::new();
    let pods: Api<Pod> = Api::all(client.clone());
    let (tx, rx) = tokio::sync::oneshot::channel();
    tasks.push(tokio::spawn(watch(
        0,
        pods,
        GroupKind {
            group: String::new(),
            kind: "Pod".into(),
        },
        history.clone(),
        clock.clone(),
        tx,
        |pod: &Pod| seen(&pod.metadata, "", "Pod", Some(pod_parts(pod)), Vec::new()),
    )));
    synced.push(("Pod".to_owned(), rx));
    for (i, (group, version, kind, plural)) in OWNER_KINDS.into_iter().enumerate() {
        let resource =
            ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural);
        let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
        let (tx, rx) = tokio::sync::oneshot::channel();
        let group_kind = GroupKind {
            group: group.to_owned(),
            kind: kind.to_owned(),
        };
        tasks.push(tokio::spawn(watch(
            i + 1,
            api,
            group_kind,
            history.clone(),
            clock.clone(),
            tx,
            move |o: &DynamicObject| seen(&o.metadata, group, kind, None, sizes(kind, o)),
        )));
        synced.push((kind.to_owned(), rx));
    }
    for (kind, rx) in synced {
        match tokio::time::timeout(SYNC_TIMEOUT, rx).await {
            Ok(Ok(())) => {}
            _ => {
                for task in &tasks {
                    task.abort();
                }
                return Err(HistoryError::NotSynced { kind });
            }
        }
    }
    Ok(tasks)
}

/// How often the checkpoint is rewritten while the history changes.
pub const CHECKPOINT_EVERY: Duration = Duration::from_millis(250);

/// Rewrites the checkpoint at `path` every [`CHECKPOINT_EVERY`] while the history changes;
/// runs until aborted.
pub fn checkpoint(history: &History, path: PathBuf) -> tokio::task::JoinHandle<()> {
    let history = history.clone();
    tokio::spawn(async move {
        let mut failing = false;
        loop {
            tokio::time::sleep(CHECKPOINT_EVERY).await;
            let saved = {
                let (history, path) = (history.clone(), path.clone());
                tokio::task::spawn_blocking(move || history.save(&path)).await
            };
            match saved {
                Ok(Ok(())) => failing = false,
                Ok(Err(e)) if !failing => {
                    failing = true;
                    tracing::error!("metering history: cannot write {}: {e}", path.display());
                }
                _ => {}
            }
        }
    })
}

/// Follows one kind into `history`; `synced` fires when its first list is complete.
async fn watch<K>(
    index: usize,
    api: Api<K>,
    kind: GroupKind,
    history: History,
    clock: Clock,
    synced: tokio::sync::oneshot::Sender<()>,
    reduce: impl Fn(&K) -> Option<Seen>,
) where
    K: kube::Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + 'static,
{
    let mut synced = Some(synced);
    let is_pod = kind.kind == "Pod" && kind.group.is_empty();
    let mut events = std::pin::pin!(watcher(api, watcher::Config::default()));
    while let Some(event) = events.next().await {
        let now = match clock.now() {
            Ok(now) => now,
            Err(e) => {
                tracing::error!("metering history: {e}");
                continue;
            }
        };
        match event {
            Ok(watcher::Event::Init) => history.relist_started(index),
            Ok(watcher::Event::InitApply(obj)) => {
                if let Some(s) = reduce(&obj) {
                    history.apply(index, s, now, true);
                }
            }
            Ok(watcher::Event::InitDone) => {
                history.relist_done(index, is_pod, &kind, now);
                if let Some(tx) = synced.take() {
                    let _ = tx.send(());
                }
            }
            Ok(watcher::Event::Apply(obj)) => {
                if let Some(s) = reduce(&obj) {
                    history.apply(index, s, now, false);
                }
            }
            Ok(watcher::Event::Delete(obj)) => {
                if let Some(uid) = obj.meta().uid.as_deref() {
                    history.delete(uid, now);
                }
            }
            Err(e) => tracing::warn!("metering history: watching {}: {e}", kind.kind),
        }
    }
}

fn seen(
    meta: &ObjectMeta,
    group: &str,
    kind: &str,
    pod: Option<PodParts>,
    sizes: Vec<Size>,
) -> Option<Seen> {
    Some(Seen {
        uid: meta.uid.clone()?,
        group_kind: GroupKind {
            group: group.to_owned(),
            kind: kind.to_owned(),
        },
        namespace: meta.namespace.clone().unwrap_or_default(),
        name: meta.name.clone().unwrap_or_default(),
        created: meta.creation_timestamp.as_ref().map(|t| t.0),
        owner: meta
            .owner_references
            .iter()
            .flatten()
            .find(|r| r.controller == Some(true))
            .cloned(),
        pod,
        sizes,
    })
}

/// The sizes of a PVC (requested storage; capacity once bound) or a node (capacity and
/// allocatable CPU and memory), as the rows of their history tables.
fn sizes(kind: &str, object: &DynamicObject) -> Vec<Size> {
    let data = &object.data;
    let text = |v: &serde_json::Value| v.as_str().map(str::to_owned);
    // A quantity in its unit (cores, bytes): Quantity keeps nano-units; whole units exactly.
    let quantity = |v: &serde_json::Value| {
        v.as_str().and_then(Quantity::parse).map(|q| {
            if q.0 % 1_000_000_000 == 0 {
                (q.0 / 1_000_000_000) as f64
            } else {
                q.0 as f64 / 1e9
            }
        })
    };
    let name = object.metadata.name.clone().unwrap_or_default();
    let mut out = Vec::new();
    let mut push =
        |table: &'static str, labels: &BTreeMap<String, String>, v: &serde_json::Value| {
            if let Some(amount) = quantity(v) {
                out.push(Size {
                    table,
                    labels: labels.clone(),
                    amount,
                });
            }
        };
    match kind {
        "PersistentVolumeClaim" => {
            let mut labels = BTreeMap::from([
                (
                    "namespace".to_owned(),
                    object.metadata.namespace.clone().unwrap_or_default(),
                ),
                ("persistentvolumeclaim".to_owned(), name),
            ]);
            let capacity_labels = labels.clone();
            let spec = &data["spec"];
            for (label, value) in [
                ("volumename", &spec["volumeName"]),
                ("storageclass", &spec["storageClassName"]),
            ] {
                if let Some(v) = text(value).filter(|v| !v.is_empty()) {
                    labels.insert(label.to_owned(), v);
                }
            }
            push(
                tables::PVC_REQUEST,
                &labels,
                &spec["resources"]["requests"]["storage"],
            );
            push(
                tables::PVC_CAPACITY,
                &capacity_labels,
                &data["status"]["capacity"]["storage"],
            );
        }
        "Node" => {
            let mut labels = BTreeMap::from([("node".to_owned(), name)]);
            if let Some(id) = text(&data["spec"]["providerID"]).filter(|v| !v.is_empty()) {
                labels.insert("provider_id".to_owned(), id);
            }
            let status = &data["status"];
            push(
                tables::NODE_CPU_CAPACITY,
                &labels,
                &status["capacity"]["cpu"],
            );
            push(
                tables::NODE_MEMORY_CAPACITY,
                &labels,
                &status["capacity"]["memory"],
            );
            push(
                tables::NODE_CPU_ALLOCATABLE,
                &labels,
                &status["allocatable"]["cpu"],
            );
            push(
                tables::NODE_MEMORY_ALLOCATABLE,
                &labels,
                &status["allocatable"]["memory"],
            );
        }
        _ => {}
    }
    out
}

/// A pod's node and its requests summed over its containers (init containers, which run before
/// them, are not counted: see "Not built yet" in docs/DESIGN-metering.md).
fn pod_parts(pod: &Pod) -> PodParts {
    let spec = pod.spec.as_ref();
    let mut cpu_nanos: i128 = 0;
    let mut memory_nanos: i128 = 0;
    for container in spec.map(|s| s.containers.as_slice()).unwrap_or_default() {
        let requests = container
            .resources
            .as_ref()
            .and_then(|r| r.requests.as_ref());
        let quantity = |name: &str| {
            requests
                .and_then(|r| r.get(name))
                .and_then(|q| Quantity::parse(&q.0))
                .map_or(0, |q| q.0.max(0))
        };
        cpu_nanos += quantity("cpu");
        memory_nanos += quantity("memory");
    }
    let up = |nanos: i128, per: i128| u64::try_from((nanos + per - 1) / per).unwrap_or(u64::MAX);
    let ready = pod
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| c.iter().find(|c| c.type_ == "Ready"));
    PodParts {
        ready: ready.is_some_and(|c| c.status == "True"),
        ready_changed: ready
            .and_then(|c| c.last_transition_time.as_ref())
            .map(|t| t.0),
        node: spec.and_then(|s| s.node_name.clone()),
        cpu_millicores: up(cpu_nanos, 1_000_000),
        memory_bytes: up(memory_nanos, 1_000_000_000),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: i64) -> Timestamp {
        Timestamp::from_second(1_900_000_000 + secs).unwrap()
    }

    /// Claim `data` requesting `storage`, bound to pv-1.
    fn claim(storage: &str) -> Seen {
        let object: DynamicObject = serde_json::from_value(serde_json::json!({
            "apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": "data", "namespace": "db", "uid": "u1"},
            "spec": {"volumeName": "pv-1", "resources": {"requests": {"storage": storage}}},
            "status": {"capacity": {"storage": storage}}
        }))
        .unwrap();
        let sizes = sizes("PersistentVolumeClaim", &object);
        seen(&object.metadata, "", "PersistentVolumeClaim", None, sizes).unwrap()
    }

    /// Pod `web` requesting 500m, its `Ready` condition `ready` since `since` seconds.
    fn web(ready: bool, since: i64) -> Seen {
        let pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "web", "namespace": "shop", "uid": "p1",
                         "creationTimestamp": at(0).to_string()},
            "spec": {"containers": [{"name": "main",
                                     "resources": {"requests": {"cpu": "500m"}}}]},
            "status": {"conditions": [{"type": "Ready",
                                       "status": if ready { "True" } else { "False" },
                                       "lastTransitionTime": at(since).to_string()}]}
        }))
        .unwrap();
        seen(&pod.metadata, "", "Pod", Some(pod_parts(&pod)), Vec::new()).unwrap()
    }

    #[test]
    fn readiness_is_recorded_from_the_ready_condition_and_charged_only_on_the_ready_basis() {
        let h = History::default();
        // Listed at 5 not ready; ready at 10 and not at 30 (watch events: the instant they are
        // seen, whatever the condition's time); seen again ready unchanged at 40.
        h.apply(0, web(false, 0), at(5), true);
        h.apply(0, web(true, 8), at(10), false);
        assert_eq!((h.status().live_pods, h.status().ready_pods), (1, 1));
        h.apply(0, web(false, 29), at(30), false);
        assert_eq!(h.status().ready_pods, 0);
        h.apply(0, web(true, 50), at(60), false);
        h.apply(0, web(true, 50), at(70), false);
        h.delete("p1", at(100));
        let pod = &h.snapshot().pods[0];
        assert_eq!(pod.created, at(0), "a listed pod counts from its creation");
        assert_eq!(
            pod.readiness,
            [(at(10), true), (at(30), false), (at(60), true)]
        );
        let period = opkit_metering::Period {
            start: at(0),
            end: at(200),
        };
        let cpu = |basis| {
            let t = tables::tables(&h.snapshot(), &BTreeSet::new(), basis, period).unwrap();
            let seconds = |s: &opkit_metering::Sample| s.amount * s.step_nanos as f64 / 1e9;
            t[tables::POD_CPU].iter().map(seconds).sum::<f64>()
        };
        // 0.5 core for 100 s of life, of which 20 + 40 s ready.
        assert_eq!(cpu(lifetime::Basis::Existence), 50.0);
        assert_eq!(cpu(lifetime::Basis::Ready), 30.0);

        // A pod first listed ready counts as ready since its condition's transition, but never
        // before it was created nor after it was listed.
        let h = History::default();
        h.apply(0, web(true, 7), at(9), true);
        assert_eq!(h.snapshot().pods[0].readiness, [(at(7), true)]);
        let h = History::default();
        h.apply(0, web(true, -50), at(9), true);
        assert_eq!(h.snapshot().pods[0].readiness, [(at(0), true)]);
        let h = History::default();
        h.apply(0, web(true, 60), at(9), true);
        assert_eq!(h.snapshot().pods[0].readiness, [(at(9), true)]);
    }

    #[test]
    fn a_resize_closes_a_segment_a_deletion_closes_all_and_a_checkpoint_round_trips() {
        let h = History::default();
        h.apply(1, claim("1Gi"), at(0), false);
        h.apply(1, claim("1Gi"), at(10), false);
        h.apply(1, claim("2Gi"), at(20), false);
        h.delete("u1", at(30));
        let segments = h.snapshot().segments;
        let request: Vec<(f64, Timestamp, Option<Timestamp>)> = segments
            .iter()
            .filter(|s| s.table == tables::PVC_REQUEST)
            .map(|s| (s.amount, s.from, s.to))
            .collect();
        let gib = 1_073_741_824.0;
        assert_eq!(
            request,
            [
                (gib, at(0), Some(at(20))),
                (2.0 * gib, at(20), Some(at(30)))
            ]
        );
        assert_eq!(segments[0].labels["volumename"], "pv-1");
        assert_eq!(
            segments.len(),
            4,
            "request and capacity, before and after: {segments:?}"
        );

        let dir = std::env::temp_dir().join(format!("opkit-history-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("history.json");
        h.save(&path).unwrap();
        assert_eq!(h.status().checkpointed_revision, Some(h.status().revision));
        let loaded = History::load(&path).unwrap();
        assert_eq!(loaded.snapshot(), h.snapshot());
        std::fs::write(&path, "{not json").unwrap();
        let err = History::load(&path).err().unwrap().to_string();
        assert!(err.contains("move it away"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
