//! The garbage collector: deletes objects whose owners are gone, and carries out Foreground
//! and Orphan deletion, with kube-controller-manager's semantics.
//!
//! Why a controller and not the API server: upstream puts cascading deletion in a controller so
//! that an owner's delete answers at once and dependents of any kind — custom resources
//! included — are collected by one generic mechanism over owner references. Operators rely on
//! exactly this (they set owner references and never delete children themselves), so opkit
//! reproduces it the same way: through the API, as any client.
//!
//! How it works:
//! - **Discovery** lists every resource that supports list, watch and delete (events excepted,
//!   as upstream); it runs again when CustomResourceDefinitions change (watched) and every
//!   30 seconds.
//! - **Watchers**: one metadata-only watch per resource feeds the [`graph`] (uid → object,
//!   owner uid → dependents), which turns changes into work items. These stay hand-written
//!   kube watchers rather than the runtime's informers: the resources are only known at run
//!   time (discovery, CRDs coming and going) and are watched untyped (`PartialObjectMeta` of
//!   a `DynamicObject`), which opkit's typed, start-time informers cannot express.
//! - **Workers** (a fixed number, so requests in flight are bounded) take items from the
//!   runtime's deduplicating [`WorkQueue`] with per-item exponential backoff (5 ms doubling
//!   to 30 s):
//!   - an item whose owners are all gone is deleted (`propagationPolicy: Background`, or the
//!     policy its own finalizers ask for) with `preconditions` on uid and resourceVersion;
//!     one with a live owner left only loses its dangling references. "Gone" is checked with a
//!     live GET of the owner (by name, then uid) unless the graph knows the owner, because the
//!     graph may lag behind; absent owners are remembered (uids are never reused).
//!   - an owner being deleted with `foregroundDeletion` has its dependents deleted (in the
//!     foreground themselves when they have dependents), and loses the finalizer once no
//!     dependent with `blockOwnerDeletion: true` is left.
//!   - an owner being deleted with `orphan` has its reference removed from every dependent,
//!     then loses the finalizer.
//! - **Namespaces**: a namespaced owner must be in its dependent's namespace, else the
//!   reference counts as absent (and an `OwnerRefInvalidNamespace` event is recorded); a
//!   cluster-scoped dependent cannot have a namespaced owner: such an item is left alone,
//!   with the same event.

mod graph;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Event as CoreEvent;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::api::{
    Api, DeleteParams, DynamicObject, PartialObjectMeta, Patch, PatchParams, PostParams,
    Preconditions, PropagationPolicy,
};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event, watcher};
use serde_json::json;
use tokio::sync::{Notify, oneshot};
use tokio::task::{AbortHandle, JoinSet};

use crate::Settings;
use opkit::metrics::QueueMetrics;
use opkit::workqueue::{Backoff, WorkQueue};

use crate::util::{self, Served};
use graph::{FOREGROUND, Graph, Node, ORPHAN, Owner, Uid, Work};

/// Per-item retry backoff: quick retries of transient conflicts, and a persistent failure
/// costs one request every 30 s.
const BACKOFF: Backoff = Backoff {
    base: Duration::from_millis(5),
    max: Duration::from_secs(30),
};
/// Workers processing the queue: the most requests the collector has in flight.
const WORKERS: usize = 16;
/// How long the collector waits for the first listing of every resource before it acts.
const SYNC_TIMEOUT: Duration = Duration::from_secs(10);
/// How often discovery runs without a CRD change.
const REDISCOVERY: Duration = Duration::from_secs(30);
/// Upstream's default ignored resources.
const IGNORED: [(&str, &str); 2] = [("", "events"), ("events.k8s.io", "events")];
/// The most absent owners remembered.
const ABSENT_CACHE: usize = 50_000;

type Meta = PartialObjectMeta<DynamicObject>;

/// Why a work item could not be finished.
#[derive(Debug, thiserror::Error)]
enum GcError {
    /// An API request failed.
    #[error(transparent)]
    Api(#[from] kube::Error),
    /// An owner reference names a kind discovery does not know (yet).
    #[error("owner reference to unknown kind {0}")]
    UnknownKind(String),
    /// The object kept changing under us.
    #[error("conflicting updates, will retry")]
    Conflict,
}

/// How an owner reference stands.
enum Class {
    /// The owner exists and is not waiting for its dependents.
    Solid,
    /// The owner is gone.
    Dangling,
    /// The owner is being deleted in the foreground.
    Waiting,
    /// A namespaced owner of a cluster-scoped object: unresolvable, the item is left alone.
    Invalid,
}

/// The collector's shared state.
struct Gc {
    client: kube::Client,
    graph: Mutex<Graph>,
    queue: Arc<WorkQueue<Work>>,
    /// (group, kind) → resource, for every served resource.
    kinds: RwLock<HashMap<(String, String), Arc<Served>>>,
    /// (namespace of the lookup, uid) of owners verified absent.
    absent: Mutex<HashSet<(Option<String>, Uid)>>,
    /// (dependent, owner) pairs an `OwnerRefInvalidNamespace` event was recorded for.
    reported: Mutex<HashSet<(Uid, Uid)>>,
    /// Wakes the discovery loop (a CRD changed or an unknown kind was met).
    rediscover: Notify,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Runs the controller until aborted.
pub(crate) async fn run(client: kube::Client, _settings: Settings) {
    let gc = Arc::new(Gc {
        client,
        graph: Mutex::new(Graph::default()),
        queue: WorkQueue::new(BACKOFF, QueueMetrics::default()),
        kinds: RwLock::new(HashMap::new()),
        absent: Mutex::new(HashSet::new()),
        reported: Mutex::new(HashSet::new()),
        rediscover: Notify::new(),
    });
    let mut tasks = JoinSet::new();
    tasks.spawn(watch_crds(gc.clone()));
    let mut watched: HashMap<String, AbortHandle> = HashMap::new();
    let mut first = true;
    loop {
        let mut synced = Vec::new();
        match util::discover(&gc.client).await {
            Ok(resources) => {
                gc.update(&resources, &mut watched, &mut tasks, &mut synced);
            }
            Err(e) => tracing::warn!(error = %e, "garbage collector: discovery failed"),
        }
        if first && !watched.is_empty() {
            first = false;
            let all = futures::future::join_all(synced);
            if tokio::time::timeout(SYNC_TIMEOUT, all).await.is_err() {
                tracing::warn!("garbage collector: not every resource listed in time; starting");
            }
            for _ in 0..WORKERS {
                tasks.spawn(worker(gc.clone()));
            }
        }
        let wait = if first {
            Duration::from_secs(1)
        } else {
            REDISCOVERY
        };
        tokio::select! {
            _ = gc.rediscover.notified() => {
                // Let a burst of CRD changes settle into one discovery.
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            _ = tokio::time::sleep(wait) => {}
        }
        // Reap finished tasks (watchers of removed resources) without blocking.
        while tasks.try_join_next().is_some() {}
    }
}

/// Watches CRDs so that discovery runs again when one comes, changes or goes.
async fn watch_crds(gc: Arc<Gc>) {
    let api: Api<PartialObjectMeta<CustomResourceDefinition>> = Api::all(gc.client.clone());
    let mut stream = watcher(api, watcher::Config::default())
        .default_backoff()
        .boxed();
    while let Some(event) = stream.next().await {
        match event {
            Ok(Event::Apply(_) | Event::Delete(_) | Event::InitDone) => {
                gc.rediscover.notify_one();
            }
            Ok(_) => {}
            Err(e) => tracing::debug!(error = %e, "garbage collector: CRD watch error"),
        }
    }
}

fn res_key(s: &Served) -> String {
    format!("{}/{}", s.ar.group, s.ar.plural)
}

impl Gc {
    /// Applies a discovery result: the kind map, and a watcher per collectable resource.
    fn update(
        self: &Arc<Self>,
        resources: &[Served],
        watched: &mut HashMap<String, AbortHandle>,
        tasks: &mut JoinSet<()>,
        synced: &mut Vec<oneshot::Receiver<()>>,
    ) {
        let mut kinds = HashMap::new();
        let mut wanted: HashMap<String, Arc<Served>> = HashMap::new();
        for s in resources {
            let s = Arc::new(s.clone());
            kinds.insert((s.ar.group.clone(), s.ar.kind.clone()), s.clone());
            let ignored = IGNORED
                .iter()
                .any(|(g, p)| *g == s.ar.group && *p == s.ar.plural);
            if util::collectable(&s) && !ignored {
                wanted.insert(res_key(&s), s);
            }
        }
        *self.kinds.write().unwrap_or_else(|p| p.into_inner()) = kinds;
        let gone: Vec<String> = watched
            .keys()
            .filter(|k| !wanted.contains_key(*k))
            .cloned()
            .collect();
        for key in gone {
            if let Some(handle) = watched.remove(&key) {
                handle.abort();
            }
            // Its objects cannot exist without the resource: forget them.
            self.prune(&key, &HashSet::new());
        }
        for (key, s) in wanted {
            if watched.contains_key(&key) {
                continue;
            }
            let (tx, rx) = oneshot::channel();
            synced.push(rx);
            let handle = tasks.spawn(watch_resource(self.clone(), s, Arc::from(key.as_str()), tx));
            watched.insert(key, handle);
        }
    }

    /// Records an object's state and queues the work it causes.
    fn observe(&self, node: Node) {
        let mut work = Vec::new();
        lock(&self.graph).apply(node, &mut work);
        for w in work {
            self.queue.add(w);
        }
    }

    /// Forgets a deleted object and queues the work it causes.
    fn forget(&self, uid: &str) {
        let mut work = Vec::new();
        lock(&self.graph).remove(uid, &mut work);
        for w in work {
            self.queue.add(w);
        }
    }

    /// After a (re)list of a resource: forgets its objects that were not listed.
    fn prune(&self, res_key: &str, seen: &HashSet<Uid>) {
        let mut work = Vec::new();
        {
            let mut graph = lock(&self.graph);
            for uid in graph.uids_of(res_key) {
                if !seen.contains(&uid) {
                    graph.remove(&uid, &mut work);
                }
            }
        }
        for w in work {
            self.queue.add(w);
        }
    }

    fn kind(&self, api_version: &str, kind: &str) -> Option<Arc<Served>> {
        let kinds = self.kinds.read().unwrap_or_else(|p| p.into_inner());
        kinds
            .get(&(util::group_of(api_version).to_string(), kind.to_string()))
            .cloned()
    }

    fn api(&self, res: &Served, namespace: Option<&str>) -> Api<Meta> {
        match namespace.filter(|_| res.namespaced) {
            Some(ns) => Api::namespaced_with(self.client.clone(), ns, &res.ar),
            None => Api::all_with(self.client.clone(), &res.ar),
        }
    }

    fn node_api(&self, node: &Node) -> Api<Meta> {
        self.api(&node.res, node.namespace.as_deref())
    }

    /// Upstream's `attemptToDeleteItem`.
    async fn attempt_to_delete(&self, uid: &str) -> Result<(), GcError> {
        let Some(item) = lock(&self.graph).node(uid).cloned() else {
            return Ok(());
        };
        if item.deleting_dependents() {
            return self.process_deleting_dependents(&item).await;
        }
        if item.deleting || item.owners.is_empty() {
            // Being deleted is a one-way trip: its dependents are handled when it is gone.
            return Ok(());
        }
        let (mut solid, mut dangling, mut waiting) = (0, Vec::new(), Vec::new());
        for owner in &item.owners {
            match self.classify(&item, owner).await? {
                Class::Solid => solid += 1,
                Class::Dangling => dangling.push(owner.uid.clone()),
                Class::Waiting => waiting.push(owner.uid.clone()),
                Class::Invalid => return Ok(()),
            }
        }
        if solid > 0 {
            if dangling.is_empty() && waiting.is_empty() {
                return Ok(());
            }
            // A live owner remains: only drop the references that keep nothing (waiting owners
            // included, or they would wait for this object forever).
            dangling.extend(waiting);
            return self
                .update_owner_refs(&item, |refs| {
                    let kept: Vec<OwnerReference> = refs
                        .iter()
                        .filter(|r| !dangling.iter().any(|d| **d == *r.uid))
                        .cloned()
                        .collect();
                    (kept.len() != refs.len()).then_some(kept)
                })
                .await;
        }
        let has_dependents = lock(&self.graph).has_dependents(uid);
        if !waiting.is_empty() && has_dependents {
            let cycle = lock(&self.graph)
                .dependents(uid)
                .iter()
                .any(Node::deleting_dependents);
            if cycle {
                // A dependent waits for us while we would wait for it: stop blocking our
                // owners so the cycle can unwind (upstream does the same).
                self.update_owner_refs(&item, |refs| {
                    let mut changed = false;
                    let out = refs
                        .iter()
                        .cloned()
                        .map(|mut r| {
                            if r.block_owner_deletion == Some(true) {
                                r.block_owner_deletion = Some(false);
                                changed = true;
                            }
                            r
                        })
                        .collect();
                    changed.then_some(out)
                })
                .await?;
            }
            return self.delete(&item, PropagationPolicy::Foreground).await;
        }
        let policy = if item.has_orphan {
            PropagationPolicy::Orphan
        } else if item.has_foreground {
            PropagationPolicy::Foreground
        } else {
            PropagationPolicy::Background
        };
        self.delete(&item, policy).await
    }

    /// Upstream's `isDangling` plus the foreground check of `classifyReferences`.
    async fn classify(&self, item: &Node, owner: &Owner) -> Result<Class, GcError> {
        let Some(res) = self.kind(&owner.api_version, &owner.kind) else {
            self.rediscover.notify_one();
            return Err(GcError::UnknownKind(format!(
                "{}/{}",
                owner.api_version, owner.kind
            )));
        };
        if item.namespace.is_none() && res.namespaced {
            self.report_invalid(item, owner);
            return Ok(Class::Invalid);
        }
        let lookup_ns = if res.namespaced {
            item.namespace.clone()
        } else {
            None
        };
        let known = lock(&self.graph)
            .node(&owner.uid)
            .map(|o| (o.namespace.clone(), o.deleting_dependents()));
        if let Some((owner_ns, waiting)) = known {
            if owner_ns == lookup_ns {
                return Ok(if waiting {
                    Class::Waiting
                } else {
                    Class::Solid
                });
            }
            // The uid lives in another namespace: a cross-namespace reference, never valid.
            self.report_invalid(item, owner);
            return Ok(Class::Dangling);
        }
        let key = (lookup_ns.clone(), owner.uid.clone());
        if lock(&self.absent).contains(&key) {
            return Ok(Class::Dangling);
        }
        let live = self
            .api(&res, lookup_ns.as_deref())
            .get_opt(&owner.name)
            .await?;
        match live {
            Some(o) if o.metadata.uid.as_deref() == Some(&*owner.uid) => {
                let finalizers = o.metadata.finalizers.as_deref().unwrap_or_default();
                let waiting = o.metadata.deletion_timestamp.is_some()
                    && finalizers.iter().any(|f| f == FOREGROUND);
                Ok(if waiting {
                    Class::Waiting
                } else {
                    Class::Solid
                })
            }
            _ => {
                let mut absent = lock(&self.absent);
                if absent.len() >= ABSENT_CACHE {
                    absent.clear();
                }
                absent.insert(key);
                Ok(Class::Dangling)
            }
        }
    }

    /// Upstream's `processDeletingDependentsItem`.
    async fn process_deleting_dependents(&self, item: &Node) -> Result<(), GcError> {
        let (blocked, pending) = {
            let graph = lock(&self.graph);
            let blocking = graph.blocking_dependents(&item.uid);
            let pending: Vec<Uid> = blocking
                .iter()
                .filter(|d| !d.deleting_dependents())
                .map(|d| d.uid.clone())
                .collect();
            (!blocking.is_empty(), pending)
        };
        if !blocked {
            return self.remove_finalizer(item, FOREGROUND).await;
        }
        for d in pending {
            self.queue.add(Work::Delete(d));
        }
        Ok(())
    }

    /// Upstream's `attemptToOrphan`: releases every dependent, then drops the finalizer.
    async fn attempt_to_orphan(&self, uid: &str) -> Result<(), GcError> {
        let Some(item) = lock(&self.graph).node(uid).cloned() else {
            return Ok(());
        };
        if !item.orphaning() {
            return Ok(());
        }
        let dependents = lock(&self.graph).dependents(uid);
        futures::stream::iter(dependents)
            .map(|d| async move {
                self.update_owner_refs(&d, |refs| {
                    let kept: Vec<OwnerReference> =
                        refs.iter().filter(|r| r.uid != uid).cloned().collect();
                    (kept.len() != refs.len()).then_some(kept)
                })
                .await
            })
            .buffer_unordered(WORKERS)
            .try_collect::<Vec<()>>()
            .await?;
        self.remove_finalizer(&item, ORPHAN).await
    }

    /// Deletes an item with `policy`, on the condition that it is still the object the graph
    /// saw (uid and resourceVersion); if only its version moved and its owner references are
    /// the same, on its uid alone (as upstream).
    async fn delete(&self, item: &Node, policy: PropagationPolicy) -> Result<(), GcError> {
        let api = self.node_api(item);
        let params = |rv: Option<String>| DeleteParams {
            propagation_policy: Some(policy.clone()),
            preconditions: Some(Preconditions {
                uid: Some(item.uid.to_string()),
                resource_version: rv,
            }),
            ..DeleteParams::default()
        };
        match api
            .delete(&item.name, &params(Some(item.resource_version.clone())))
            .await
        {
            Ok(_) => return Ok(()),
            Err(e) if util::is_status(&e, 404) => return Ok(()),
            Err(e) if util::is_status(&e, 409) => {}
            Err(e) => return Err(e.into()),
        }
        let Some(latest) = api.get_opt(&item.name).await? else {
            return Ok(());
        };
        let same_refs = {
            let refs = latest
                .metadata
                .owner_references
                .as_deref()
                .unwrap_or_default();
            refs.len() == item.owners.len()
                && refs.iter().zip(&item.owners).all(|(r, o)| r.uid == *o.uid)
        };
        if latest.metadata.uid.as_deref() != Some(&*item.uid) {
            return Ok(());
        }
        if !same_refs {
            // Its owners changed: decide again from the new state.
            return Err(GcError::Conflict);
        }
        match api.delete(&item.name, &params(None)).await {
            Ok(_) => Ok(()),
            Err(e) if util::is_status(&e, 404) => Ok(()),
            Err(e) if util::is_status(&e, 409) => Err(GcError::Conflict),
            Err(e) => Err(e.into()),
        }
    }

    /// Rewrites an object's owner references with `change` (which returns `None` for "no
    /// change"), as a merge patch guarded by the resourceVersion it read.
    async fn update_owner_refs<F>(&self, item: &Node, change: F) -> Result<(), GcError>
    where
        F: Fn(&[OwnerReference]) -> Option<Vec<OwnerReference>>,
    {
        self.patch_metadata(item, |meta| {
            let refs = meta.owner_references.as_deref().unwrap_or_default();
            let new = change(refs)?;
            Some(if new.is_empty() {
                json!({"ownerReferences": null})
            } else {
                json!({"ownerReferences": new})
            })
        })
        .await
    }

    /// Removes `finalizer` from an object, as a merge patch guarded by its resourceVersion.
    async fn remove_finalizer(&self, item: &Node, finalizer: &str) -> Result<(), GcError> {
        self.patch_metadata(item, |meta| {
            let finalizers = meta.finalizers.as_deref().unwrap_or_default();
            if !finalizers.iter().any(|f| f == finalizer) {
                return None;
            }
            let kept: Vec<&String> = finalizers.iter().filter(|f| *f != finalizer).collect();
            Some(json!({"finalizers": kept}))
        })
        .await
    }

    /// Reads the object `item` names and, while it is still the same object (uid), merges the
    /// metadata `change` computes from it (`None`: nothing to do), guarded by the
    /// resourceVersion it read; a lost race reads again.
    async fn patch_metadata<F>(&self, item: &Node, change: F) -> Result<(), GcError>
    where
        F: Fn(&ObjectMeta) -> Option<serde_json::Value>,
    {
        let api = self.node_api(item);
        for _ in 0..8 {
            let Some(latest) = api.get_opt(&item.name).await? else {
                return Ok(());
            };
            if latest.metadata.uid.as_deref() != Some(&*item.uid) {
                return Ok(());
            }
            let Some(mut meta) = change(&latest.metadata) else {
                return Ok(());
            };
            meta["resourceVersion"] = json!(latest.metadata.resource_version);
            let patch = json!({ "metadata": meta });
            match api
                .patch(&item.name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
            {
                Ok(_) => return Ok(()),
                Err(e) if util::is_status(&e, 404) => return Ok(()),
                Err(e) if util::is_status(&e, 409) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(GcError::Conflict)
    }

    /// Records an `OwnerRefInvalidNamespace` warning event about `item` (once per reference).
    fn report_invalid(&self, item: &Node, owner: &Owner) {
        if !lock(&self.reported).insert((item.uid.clone(), owner.uid.clone())) {
            return;
        }
        let ns = item.namespace.clone().unwrap_or_default();
        let message = format!(
            "ownerRef [{}/{}, namespace: {}, name: {}, uid: {}] does not exist in namespace {:?}",
            owner.api_version, owner.kind, ns, owner.name, owner.uid, ns
        );
        tracing::info!(object = %item.name, %message, "garbage collector: invalid owner reference");
        let now = jiff::Timestamp::now()
            .strftime("%Y-%m-%dT%H:%M:%SZ")
            .to_string();
        let event_ns = item.namespace.clone().unwrap_or_else(|| "default".into());
        let nanos = jiff::Timestamp::now().as_nanosecond();
        let event_name = format!("{}.{:x}", item.name, nanos.max(0));
        let event = json!({
            "apiVersion": "v1",
            "kind": "Event",
            // Named like client-go's recorder does: the object's name and a hex timestamp.
            "metadata": {"name": event_name, "namespace": event_ns},
            "involvedObject": {
                "apiVersion": item.res.ar.api_version,
                "kind": item.res.ar.kind,
                "name": item.name,
                "namespace": item.namespace,
                "uid": item.uid.to_string(),
            },
            "reason": "OwnerRefInvalidNamespace",
            "message": message,
            "type": "Warning",
            "source": {"component": "garbage-collector-controller"},
            "reportingComponent": "garbage-collector-controller",
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        });
        let Ok(event) = serde_json::from_value::<CoreEvent>(event) else {
            return;
        };
        let api: Api<CoreEvent> = Api::namespaced(self.client.clone(), &event_ns);
        tokio::spawn(async move {
            if let Err(e) = api.create(&PostParams::default(), &event).await {
                tracing::debug!(error = %e, "garbage collector: could not record an event");
            }
        });
    }
}

/// Watches one resource's metadata into the graph; sends on `synced` after the first listing.
async fn watch_resource(gc: Arc<Gc>, res: Arc<Served>, key: Arc<str>, synced: oneshot::Sender<()>) {
    let api: Api<Meta> = Api::all_with(gc.client.clone(), &res.ar);
    let mut stream = watcher(api, watcher::Config::default())
        .default_backoff()
        .boxed();
    let mut synced = Some(synced);
    let mut listing: Option<HashSet<Uid>> = None;
    while let Some(event) = stream.next().await {
        match event {
            Ok(Event::Apply(obj)) => {
                if let Some(node) = Node::from_meta(res.clone(), key.clone(), &obj.metadata) {
                    gc.observe(node);
                }
            }
            Ok(Event::InitApply(obj)) => {
                if let Some(node) = Node::from_meta(res.clone(), key.clone(), &obj.metadata) {
                    if let Some(seen) = listing.as_mut() {
                        seen.insert(node.uid.clone());
                    }
                    gc.observe(node);
                }
            }
            Ok(Event::Delete(obj)) => {
                if let Some(uid) = obj.metadata.uid.as_deref() {
                    gc.forget(uid);
                }
            }
            Ok(Event::Init) => listing = Some(HashSet::new()),
            Ok(Event::InitDone) => {
                if let Some(seen) = listing.take() {
                    gc.prune(&key, &seen);
                }
                if let Some(tx) = synced.take() {
                    let _ = tx.send(());
                }
            }
            Err(e) => {
                tracing::debug!(resource = %key, error = %e, "garbage collector: watch error")
            }
        }
    }
}

/// Takes work items until the queue shuts down or the task is aborted.
async fn worker(gc: Arc<Gc>) {
    while let Some(work) = gc.queue.get().await {
        let result = match &work {
            Work::Delete(uid) => gc.attempt_to_delete(uid).await,
            Work::Orphan(uid) => gc.attempt_to_orphan(uid).await,
        };
        match result {
            Ok(()) => gc.queue.forget(&work),
            Err(e) => {
                tracing::debug!(?work, error = %e, "garbage collector: will retry");
                gc.queue.add_rate_limited(work.clone());
            }
        }
        gc.queue.done(&work);
    }
}
