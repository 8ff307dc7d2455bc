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
//! The history lives in this process: after a restart it starts again from the objects alive
//! then (their creation times are kept, deletions while the controller was down are not seen).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind};
use kube::runtime::watcher;
use opkit_apimachinery::quantity::Quantity;
use opkit_metering::lifetime::{self, GroupKind, Owner, PodLife};

use crate::api::HistoryStatus;
use crate::clock::Clock;

/// The kinds watched as possible owners of pods and as objects a custom resource manages:
/// `(group, version, kind, plural)`.
const OWNER_KINDS: [(&str, &str, &str, &str); 10] = [
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
];

/// The history, shared by the watchers that write it and the reports that read it.
#[derive(Clone, Default)]
pub struct History(Arc<Mutex<Inner>>);

#[derive(Default)]
struct Inner {
    pods: BTreeMap<String, PodLife>,
    /// Watched objects by uid.
    objects: BTreeMap<String, Owner>,
    /// Objects known only from owner references, by uid.
    referenced: BTreeMap<String, Owner>,
    /// Uids listed by each watcher's current re-list (by watcher index).
    relisting: BTreeMap<usize, BTreeSet<String>>,
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
}

struct PodParts {
    node: Option<String>,
    cpu_millicores: u64,
    memory_bytes: u64,
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
        }
    }

    /// What it holds now.
    pub fn status(&self) -> HistoryStatus {
        let inner = self.lock();
        HistoryStatus {
            live_pods: inner.pods.values().filter(|p| p.deleted.is_none()).count() as u64,
            pods: inner.pods.len() as u64,
            objects: inner.objects.len() as u64,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records an object seen at `now`; `listed` when it came from a list.
    fn apply(&self, watcher: usize, seen: Seen, now: Timestamp, listed: bool) {
        let mut inner = self.lock();
        if listed && let Some(uids) = inner.relisting.get_mut(&watcher) {
            uids.insert(seen.uid.clone());
        }
        let first_seen = if listed {
            seen.created.unwrap_or(now)
        } else {
            now
        };
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
        if let Some(pod) = inner.pods.get_mut(uid) {
            pod.deleted.get_or_insert(now);
        }
        if let Some(object) = inner.objects.get_mut(uid) {
            object.deleted.get_or_insert(now);
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
        if pods {
            for pod in inner.pods.values_mut() {
                if pod.deleted.is_none() && !listed.contains(&pod.uid) {
                    pod.deleted = Some(now);
                }
            }
        } else {
            for object in inner.objects.values_mut() {
                if object.group_kind == *kind
                    && object.deleted.is_none()
                    && !listed.contains(&object.uid)
                {
                    object.deleted = Some(now);
                }
            }
        }
    }
}

/// Why the history could not start.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
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
        |pod: &Pod| seen(&pod.metadata, "", "Pod", Some(pod_parts(pod))),
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
            move |o: &DynamicObject| seen(&o.metadata, group, kind, None),
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

fn seen(meta: &ObjectMeta, group: &str, kind: &str, pod: Option<PodParts>) -> Option<Seen> {
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
    })
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
    PodParts {
        node: spec.and_then(|s| s.node_name.clone()),
        cpu_millicores: up(cpu_nanos, 1_000_000),
        memory_bytes: up(memory_nanos, 1_000_000_000),
    }
}
