//! A watch-fed cache of child objects indexed by controller owner, and creation/deletion
//! expectations.
//!
//! kube-runtime's reflector store answers "all objects" and "objects matching a predicate" by
//! scanning; a ReplicaSet reconcile asking for its pods would then cost O(pods in the cluster),
//! and a rollout of N pods O(N²). [`Cache`] keeps an index by controller owner uid (and of
//! orphans by namespace, for adoption), so a reconcile reads only its own children.
//!
//! [`Expectations`] is upstream's `ControllerExpectations`: after creating or deleting children,
//! a controller must not act on a cache that has not seen those writes yet, or it would create
//! (or delete) the same replicas again. The cache tells the expectations what it observes.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use futures::{Stream, StreamExt, stream};
use k8s_openapi::api::core::v1::Pod;
use kube::Resource;
use kube::api::Api;
use kube::runtime::watcher::{self, Event};
use kube::runtime::{WatchStreamExt, watcher::watcher};
use serde::de::DeserializeOwned;

use super::{HasRetry, Key, Retry, controller_uid, key_pair};
use crate::Settings;

/// The index key of objects without a controller owner in a namespace.
fn orphan_key(ns: &str) -> String {
    format!("\0orphans/{ns}")
}

struct Inner<K> {
    objects: HashMap<Key, Arc<K>>,
    by_owner: HashMap<String, HashSet<Key>>,
    relisting: Option<HashSet<Key>>,
}

/// Objects of one kind, as last seen on a watch, indexed by controller owner.
pub(crate) struct Cache<K> {
    inner: RwLock<Inner<K>>,
    expectations: Option<Arc<Expectations>>,
}

fn index_key<K: Resource>(obj: &K) -> String {
    let meta = obj.meta();
    match controller_uid(meta) {
        Some(uid) => uid.to_string(),
        None => orphan_key(meta.namespace.as_deref().unwrap_or("")),
    }
}

impl<K: Resource + Clone> Cache<K> {
    /// An empty cache; `expectations` (if any) are told of observed adds and deletes.
    pub(crate) fn new(expectations: Option<Arc<Expectations>>) -> Arc<Cache<K>> {
        Arc::new(Cache {
            inner: RwLock::new(Inner {
                objects: HashMap::new(),
                by_owner: HashMap::new(),
                relisting: None,
            }),
            expectations,
        })
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Inner<K>> {
        self.inner.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Inner<K>> {
        self.inner.write().unwrap_or_else(|p| p.into_inner())
    }

    /// The object `ns/name`, if seen.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn get(&self, ns: &str, name: &str) -> Option<Arc<K>> {
        self.read()
            .objects
            .get(&(ns.to_string(), name.to_string()))
            .cloned()
    }

    /// The objects whose controller owner has `uid`.
    pub(crate) fn owned_by(&self, uid: &str) -> Vec<Arc<K>> {
        self.collect(uid)
    }

    /// The objects in `ns` without a controller owner.
    pub(crate) fn orphans(&self, ns: &str) -> Vec<Arc<K>> {
        self.collect(&orphan_key(ns))
    }

    fn collect(&self, index: &str) -> Vec<Arc<K>> {
        let inner = self.read();
        inner
            .by_owner
            .get(index)
            .into_iter()
            .flatten()
            .filter_map(|k| inner.objects.get(k).cloned())
            .collect()
    }

    /// Every object (for rare, cluster-wide passes).
    pub(crate) fn all(&self) -> Vec<Arc<K>> {
        self.read().objects.values().cloned().collect()
    }

    fn unindex(inner: &mut Inner<K>, key: &Key, old: &K) {
        let idx = index_key(old);
        if let Some(set) = inner.by_owner.get_mut(&idx) {
            set.remove(key);
            if set.is_empty() {
                inner.by_owner.remove(&idx);
            }
        }
    }

    /// Records an added or modified object.
    pub(crate) fn apply(&self, obj: K) -> Arc<K> {
        let key = key_pair(&obj);
        let obj = Arc::new(obj);
        let added = {
            let mut inner = self.write();
            if let Some(set) = inner.relisting.as_mut() {
                set.insert(key.clone());
            }
            let old = inner.objects.insert(key.clone(), obj.clone());
            if let Some(old) = &old {
                Self::unindex(&mut inner, &key, old);
            }
            inner
                .by_owner
                .entry(index_key(obj.as_ref()))
                .or_default()
                .insert(key.clone());
            old.is_none()
        };
        if added
            && let Some(exp) = &self.expectations
            && let Some(uid) = controller_uid(obj.meta())
        {
            exp.observe_add(uid);
        }
        obj
    }

    /// Records a deleted object.
    pub(crate) fn delete(&self, obj: &K) {
        let key = key_pair(obj);
        let removed = {
            let mut inner = self.write();
            let old = inner.objects.remove(&key);
            if let Some(old) = &old {
                Self::unindex(&mut inner, &key, old);
            }
            old
        };
        if let Some(exp) = &self.expectations {
            let meta = removed.as_ref().map(|o| o.meta()).unwrap_or(obj.meta());
            if let Some(uid) = controller_uid(meta) {
                exp.observe_delete(uid, &key.1);
            }
        }
    }

    /// Applies one watch event; returns the objects it touched (for triggering owners).
    fn handle(&self, event: Event<K>) -> Vec<K> {
        match event {
            Event::Apply(o) | Event::InitApply(o) => {
                self.apply(o.clone());
                vec![o]
            }
            Event::Delete(o) => {
                self.delete(&o);
                vec![o]
            }
            Event::Init => {
                self.write().relisting = Some(HashSet::new());
                Vec::new()
            }
            Event::InitDone => {
                let gone: Vec<Arc<K>> = {
                    let mut inner = self.write();
                    let Some(seen) = inner.relisting.take() else {
                        return Vec::new();
                    };
                    inner
                        .objects
                        .iter()
                        .filter(|(k, _)| !seen.contains(*k))
                        .map(|(_, v)| v.clone())
                        .collect()
                };
                for o in &gone {
                    self.delete(o.as_ref());
                }
                gone.into_iter().map(|o| o.as_ref().clone()).collect()
            }
        }
    }
}

/// Watches `api` into `cache`; yields every touched object (added, modified, deleted), so the
/// stream can trigger owners with `Controller::owns_stream` after the cache is up to date.
pub(crate) fn watch<K>(
    api: Api<K>,
    config: watcher::Config,
    cache: Arc<Cache<K>>,
) -> impl Stream<Item = Result<K, watcher::Error>> + Send + 'static
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
{
    watcher(api, config).default_backoff().flat_map(move |ev| {
        let items: Vec<Result<K, watcher::Error>> = match ev {
            Ok(ev) => cache.handle(ev).into_iter().map(Ok).collect(),
            Err(e) => vec![Err(e)],
        };
        stream::iter(items)
    })
}

/// The context of a controller that owns pods (ReplicaSet, StatefulSet, DaemonSet, Job): a
/// client, the watch-fed cache of every pod (indexed by controller owner), the create/delete
/// expectations that keep a reconcile from acting on a cache that has not caught up with its
/// own writes, and per-key retry backoff.
pub(crate) struct PodOwnerCtx {
    pub(crate) client: kube::Client,
    pub(crate) pods: Arc<Cache<Pod>>,
    pub(crate) expectations: Arc<Expectations>,
    pub(crate) settings: Settings,
    retry: Retry,
}

impl HasRetry for PodOwnerCtx {
    fn retry(&self) -> &Retry {
        &self.retry
    }
}

impl PodOwnerCtx {
    /// A context, and the stream of pod events that feeds its cache: hand the stream to the
    /// controller's `watches_stream` so the cache is filled as the controller runs.
    pub(crate) fn new(
        client: kube::Client,
        settings: Settings,
    ) -> (
        Arc<PodOwnerCtx>,
        impl Stream<Item = Result<Pod, watcher::Error>> + Send + 'static,
    ) {
        let expectations = Arc::new(Expectations::default());
        let pods = Cache::new(Some(expectations.clone()));
        let pod_events = watch(
            Api::<Pod>::all(client.clone()),
            watcher::Config::default(),
            pods.clone(),
        );
        let ctx = Arc::new(PodOwnerCtx {
            client,
            pods,
            expectations,
            settings,
            retry: Retry::default(),
        });
        (ctx, pod_events)
    }
}

struct Expect {
    adds: i64,
    deletes: HashSet<String>,
    since: Instant,
}

/// Pending creations and deletions per owner uid, as upstream's `ControllerExpectations`.
#[derive(Default)]
pub(crate) struct Expectations {
    pending: Mutex<HashMap<String, Expect>>,
}

impl Expectations {
    /// After this long, expectations are given up (a watch event was lost, say).
    const TIMEOUT: Duration = Duration::from_secs(30);

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Expect>> {
        self.pending.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn entry<'a>(map: &'a mut HashMap<String, Expect>, uid: &str) -> &'a mut Expect {
        map.entry(uid.to_string()).or_insert_with(|| Expect {
            adds: 0,
            deletes: HashSet::new(),
            since: Instant::now(),
        })
    }

    /// Whether `uid` may act: nothing pending, or pending for too long.
    pub(crate) fn satisfied(&self, uid: &str) -> bool {
        let mut map = self.lock();
        match map.get(uid) {
            None => true,
            Some(e) if e.adds <= 0 && e.deletes.is_empty() => {
                map.remove(uid);
                true
            }
            Some(e) if e.since.elapsed() > Self::TIMEOUT => {
                map.remove(uid);
                true
            }
            Some(_) => false,
        }
    }

    /// `uid` is about to create `n` children.
    pub(crate) fn expect_creates(&self, uid: &str, n: usize) {
        let mut map = self.lock();
        let e = Self::entry(&mut map, uid);
        e.adds += n as i64;
        e.since = Instant::now();
    }

    /// `uid` is about to delete the children named `names`.
    pub(crate) fn expect_deletes(&self, uid: &str, names: impl IntoIterator<Item = String>) {
        let mut map = self.lock();
        let e = Self::entry(&mut map, uid);
        e.deletes.extend(names);
        e.since = Instant::now();
    }

    /// A child of `uid` was seen (or its creation failed and will not be seen).
    pub(crate) fn observe_add(&self, uid: &str) {
        if let Some(e) = self.lock().get_mut(uid) {
            e.adds -= 1;
        }
    }

    /// A child `name` of `uid` was seen deleted (or its deletion failed).
    pub(crate) fn observe_delete(&self, uid: &str, name: &str) {
        if let Some(e) = self.lock().get_mut(uid) {
            e.deletes.remove(name);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::Pod;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

    fn pod(name: &str, owner: Option<&str>) -> Pod {
        let mut p = Pod::default();
        p.metadata.name = Some(name.into());
        p.metadata.namespace = Some("ns".into());
        p.metadata.owner_references = owner.map(|uid| {
            vec![OwnerReference {
                uid: uid.into(),
                controller: Some(true),
                ..Default::default()
            }]
        });
        p
    }

    #[test]
    fn index_follows_owner_changes_and_deletes() {
        let cache = Cache::<Pod>::new(None);
        cache.apply(pod("a", None));
        assert_eq!(cache.orphans("ns").len(), 1);
        cache.apply(pod("a", Some("u1")));
        assert!(cache.orphans("ns").is_empty());
        assert_eq!(cache.owned_by("u1").len(), 1);
        cache.delete(&pod("a", Some("u1")));
        assert!(cache.owned_by("u1").is_empty());
        assert!(cache.get("ns", "a").is_none());
    }

    #[test]
    fn relist_drops_objects_not_listed_again() {
        let cache = Cache::<Pod>::new(None);
        cache.apply(pod("a", Some("u")));
        cache.apply(pod("b", Some("u")));
        cache.handle(Event::Init);
        cache.handle(Event::InitApply(pod("a", Some("u"))));
        let gone = cache.handle(Event::InitDone);
        assert_eq!(gone.len(), 1);
        assert_eq!(cache.owned_by("u").len(), 1);
    }

    #[test]
    fn expectations_wait_for_observed_creates_and_deletes() {
        let exp = Arc::new(Expectations::default());
        let cache = Cache::<Pod>::new(Some(exp.clone()));
        exp.expect_creates("u", 2);
        assert!(!exp.satisfied("u"));
        cache.apply(pod("a", Some("u")));
        cache.apply(pod("a", Some("u")));
        assert!(!exp.satisfied("u"), "a modification is not a second add");
        cache.apply(pod("b", Some("u")));
        assert!(exp.satisfied("u"));
        exp.expect_deletes("u", ["a".to_string()]);
        assert!(!exp.satisfied("u"));
        cache.delete(&pod("a", Some("u")));
        assert!(exp.satisfied("u"));
    }
}
