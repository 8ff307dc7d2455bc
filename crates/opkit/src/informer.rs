//! Shared informers: one watch and one cache per kind, however many controllers use it.
//!
//! controller-runtime's manager shares one informer per kind between all its controllers;
//! kube-runtime's `Controller` opens its own watches. Here every kind a manager's controllers
//! name (`for`, `owns`, `watches`) gets exactly one [`watcher`](mod@kube::runtime::watcher) stream feeding
//! one [`reflector`](mod@kube::runtime::reflector) store, and every controller registers a handler
//! on it. Handlers see [`Change`]s with the previous object, which is what predicates such as
//! [`generation_changed`](crate::predicate::generation_changed) need; a relist after a watch
//! error is diffed against the cache so deletes missed meanwhile are still reported.
//!
//! What a cache holds is set by the manager's [`CacheOptions`](crate::CacheOptions)
//! ([`crate::cache`]): a namespaced kind scoped to several namespaces gets one watch per
//! namespace, all feeding the kind's one store, and each namespace's relist is diffed only
//! against that namespace's objects; selectors go to the server with every list and watch;
//! `managedFields` are dropped before an object is stored. A kind declared as
//! [`PartialObjectMeta<K>`](kube::core::PartialObjectMeta) (see
//! [`Controller::owns_metadata`](crate::Controller::owns_metadata)) is watched with
//! metadata-only requests and cached as metadata.
//!
//! Kinds learned at run time (a chart operator reads them from `watches.yaml` and from the
//! manifests it renders) are cached as [`DynamicObject`](kube::api::DynamicObject)s under
//! their [`ApiResource`](kube::api::ApiResource): informers are keyed by type *and* kind, so
//! each dynamic kind gets its own watch and cache like any static one ([`Kind`]). An informer
//! created after the manager started (a dependent kind first met in a reconcile) starts its
//! watch at once.
//!
//! A cache can also keep an [`OwnerIndex`] (objects by controller owner uid, and objects
//! without a controller by namespace): a reconcile that reads its children then costs their
//! number, not a scan of the cluster. It is updated before handlers run, so a reconcile
//! triggered by a child's change already finds the child indexed.

use std::any::{Any, TypeId};
use std::collections::{HashMap, HashSet};
use std::fmt::Debug;
use std::hash::Hash;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use futures::StreamExt;
use kube::api::Api;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::sync::{Notify, watch};

use crate::cache::{CacheConfig, KindCache};
use crate::error::{Error, Result};
use crate::predicate::Change;

/// What the runtime needs of a Kubernetes object type: every `k8s-openapi` kind and every
/// `#[derive(CustomResource)]` type qualifies.
pub trait Object:
    Resource<DynamicType = ()> + Clone + DeserializeOwned + Serialize + Debug + Send + Sync + 'static
{
}

impl<K> Object for K where
    K: Resource<DynamicType = ()>
        + Clone
        + DeserializeOwned
        + Serialize
        + Debug
        + Send
        + Sync
        + 'static
{
}

/// What the runtime's caches hold: a [`Object`] (its kind known at compile time), or a
/// [`DynamicObject`](kube::api::DynamicObject) whose kind is an
/// [`ApiResource`](kube::api::ApiResource) learned at run time. The kind's dynamic type
/// travels with its informer and controller.
pub trait Kind:
    Resource<DynamicType: Clone + Eq + Hash + Debug + Send + Sync + 'static>
    + Clone
    + DeserializeOwned
    + Serialize
    + Debug
    + Send
    + Sync
    + 'static
{
}

impl<K> Kind for K where
    K: Resource<DynamicType: Clone + Eq + Hash + Debug + Send + Sync + 'static>
        + Clone
        + DeserializeOwned
        + Serialize
        + Debug
        + Send
        + Sync
        + 'static
{
}

/// Whether `K` is namespaced. kube's `Resource::Scope` is a marker type without a `'static`
/// bound, so its name is compared: `k8s-openapi` kinds and derived custom resources use
/// `NamespaceResourceScope`.
pub(crate) fn is_namespaced<K: Resource>() -> bool {
    std::any::type_name::<K::Scope>().ends_with("NamespaceResourceScope")
}

type Handler<K> = Arc<dyn Fn(&Change<'_, K>) + Send + Sync>;

/// One kind's watch, cache and handlers.
pub(crate) struct Informer<K: Kind> {
    dt: K::DynamicType,
    namespaced: bool,
    writer: Mutex<Option<reflector::store::Writer<K>>>,
    store: Store<K>,
    handlers: Mutex<Vec<Handler<K>>>,
    synced: AtomicBool,
    /// Told when this cache first syncs.
    on_synced: Arc<Notify>,
    owners: Arc<RwLock<Option<Owners<K>>>>,
    /// The last watch error, until every scope lists again.
    error: Mutex<Option<String>>,
}

/// The index key of objects without a controller owner in a namespace (uids never contain
/// a NUL byte).
fn orphan_key(namespace: &str) -> String {
    format!("\0orphans/{namespace}")
}

/// The uid of an object's controller (its owner reference with `controller: true`), if any:
/// the key of the owner index, and what controllers compare with their own uid.
pub fn controller_uid(
    meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
) -> Option<&str> {
    meta.owner_references
        .as_ref()?
        .iter()
        .find(|r| r.controller == Some(true))
        .map(|r| r.uid.as_str())
}

fn index_key<K: Resource>(obj: &K) -> String {
    let meta = obj.meta();
    match controller_uid(meta) {
        Some(uid) => uid.to_string(),
        None => orphan_key(meta.namespace.as_deref().unwrap_or("")),
    }
}

/// Controller owner uid (or orphan key) → objects.
struct Owners<K: Kind> {
    dt: K::DynamicType,
    by_owner: HashMap<String, HashSet<ObjectRef<K>>>,
}

impl<K: Kind> Owners<K> {
    /// Moves an object from where `old` was indexed to where `new` belongs.
    fn update(&mut self, old: Option<&K>, new: Option<&K>) {
        if let Some(old) = old {
            let idx = index_key(old);
            if let Some(set) = self.by_owner.get_mut(&idx) {
                set.remove(&ObjectRef::from_obj_with(old, self.dt.clone()));
                if set.is_empty() {
                    self.by_owner.remove(&idx);
                }
            }
        }
        if let Some(new) = new {
            self.by_owner
                .entry(index_key(new))
                .or_default()
                .insert(ObjectRef::from_obj_with(new, self.dt.clone()));
        }
    }
}

/// Objects of kind `K` in a manager's cache, by controller owner; declared with
/// [`Controller::index_owners`](crate::Controller::index_owners), read through
/// [`Context::owner_index`](crate::Context::owner_index) or [`Caches::owner_index`].
///
/// Results come from the shared cache (so they are as fresh as its watch) and are checked
/// against it: an object is returned under an owner only if its cached copy names that owner.
pub struct OwnerIndex<K: Kind> {
    store: Store<K>,
    owners: Arc<RwLock<Option<Owners<K>>>>,
}

impl<K: Kind> Clone for OwnerIndex<K> {
    fn clone(&self) -> Self {
        OwnerIndex {
            store: self.store.clone(),
            owners: self.owners.clone(),
        }
    }
}

impl<K: Kind> Debug for OwnerIndex<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = self
            .owners
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .map(|o| K::kind(&o.dt).into_owned());
        f.debug_struct("OwnerIndex")
            .field("kind", &kind)
            .finish_non_exhaustive()
    }
}

impl<K: Kind> OwnerIndex<K> {
    fn collect(&self, key: &str, keep: impl Fn(&K) -> bool) -> Vec<Arc<K>> {
        let owners = self.owners.read().unwrap_or_else(|p| p.into_inner());
        let Some(owners) = owners.as_ref() else {
            return Vec::new();
        };
        owners
            .by_owner
            .get(key)
            .into_iter()
            .flatten()
            .filter_map(|r| self.store.get(r))
            .filter(|o| keep(o))
            .collect()
    }

    /// The cached objects whose controller owner reference has `uid`.
    pub fn owned_by(&self, uid: &str) -> Vec<Arc<K>> {
        self.collect(uid, |o| controller_uid(o.meta()) == Some(uid))
    }

    /// The cached objects in `namespace` (`""` for cluster-scoped ones) without a controller
    /// owner: the candidates for adoption.
    pub fn orphans(&self, namespace: &str) -> Vec<Arc<K>> {
        self.collect(&orphan_key(namespace), |o| {
            controller_uid(o.meta()).is_none()
                && o.meta().namespace.as_deref().unwrap_or("") == namespace
        })
    }
}

impl<K: Kind> Informer<K> {
    fn new(on_synced: Arc<Notify>, dt: K::DynamicType, namespaced: bool) -> Informer<K> {
        let writer = reflector::store::Writer::new(dt.clone());
        let store = writer.as_reader();
        Informer {
            dt,
            namespaced,
            writer: Mutex::new(Some(writer)),
            store,
            handlers: Mutex::new(Vec::new()),
            synced: AtomicBool::new(false),
            on_synced,
            owners: Arc::new(RwLock::new(None)),
            error: Mutex::new(None),
        }
    }

    pub(crate) fn store(&self) -> Store<K> {
        self.store.clone()
    }

    /// Starts keeping the owner index (from what the cache holds now, if anything).
    pub(crate) fn enable_owner_index(&self) {
        let mut owners = self.owners.write().unwrap_or_else(|p| p.into_inner());
        if owners.is_none() {
            let mut index = Owners {
                dt: self.dt.clone(),
                by_owner: HashMap::new(),
            };
            for obj in self.store.state() {
                index.update(None, Some(obj.as_ref()));
            }
            *owners = Some(index);
        }
    }

    /// The owner index, if some controller declared it.
    pub(crate) fn owner_index(&self) -> Option<OwnerIndex<K>> {
        let enabled = self
            .owners
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .is_some();
        enabled.then(|| OwnerIndex {
            store: self.store.clone(),
            owners: self.owners.clone(),
        })
    }

    fn index(&self, old: Option<&K>, new: Option<&K>) {
        let mut owners = self.owners.write().unwrap_or_else(|p| p.into_inner());
        if let Some(owners) = owners.as_mut() {
            owners.update(old, new);
        }
    }

    pub(crate) fn add_handler(&self, h: impl Fn(&Change<'_, K>) + Send + Sync + 'static) {
        self.handlers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(Arc::new(h));
    }

    fn dispatch(&self, change: &Change<'_, K>) {
        let handlers = self
            .handlers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        for h in handlers {
            h(change);
        }
    }

    fn set_error(&self, error: Option<String>) {
        *self.error.lock().unwrap_or_else(|p| p.into_inner()) = error;
    }

    /// Watches `K` as `cache` says (one watch per namespace, or one for the whole cluster)
    /// and keeps the store, the owner index and the handlers up to date.
    async fn run(self: Arc<Self>, client: Client, cache: KindCache) {
        let Some(writer) = self.writer.lock().unwrap_or_else(|p| p.into_inner()).take() else {
            return;
        };
        let scopes: Vec<Option<String>> = if cache.namespaces.is_empty() {
            vec![None]
        } else {
            cache.namespaces.iter().cloned().map(Some).collect()
        };
        let config = cache.watcher_config();
        let mut events = futures::stream::select_all(scopes.iter().enumerate().map(|(i, ns)| {
            let api: Api<InScope<K>> = match ns {
                Some(ns) => Api::namespaced_with(client.clone(), ns, &self.dt),
                None => Api::all_with(client.clone(), &self.dt),
            };
            watcher::watcher(api, config.clone())
                .default_backoff()
                .map(move |event| (i, event))
                .boxed()
        }));
        let mut reflect = Reflect {
            writer,
            relists: scopes.iter().map(|_| Vec::new()).collect(),
            synced: vec![false; scopes.len()],
            scopes,
            ready: false,
        };
        while let Some((scope, event)) = events.next().await {
            match event {
                Ok(event) => {
                    let event = event.modify(|o| cache.trim(o.0.meta_mut()));
                    self.apply(&mut reflect, scope, event);
                }
                Err(e) => {
                    tracing::warn!(kind = %K::kind(&self.dt), error = %e, "watch failed; retrying");
                    self.set_error(Some(e.to_string()));
                }
            }
        }
    }

    fn object_ref(&self, obj: &K) -> ObjectRef<K> {
        ObjectRef::from_obj_with(obj, self.dt.clone())
    }

    /// Writes `obj` into the store; returns the cached copy it replaced and the new one.
    fn put(&self, writer: &mut reflector::store::Writer<K>, obj: K) -> (Option<Arc<K>>, Arc<K>) {
        let key = self.object_ref(&obj);
        let old = self.store.get(&key);
        writer.apply_watcher_event(&watcher::Event::Apply(obj));
        let new = self
            .store
            .get(&key)
            .expect("an object just written to the store is in it");
        (old, new)
    }

    fn apply(&self, r: &mut Reflect<K>, scope: usize, event: watcher::Event<InScope<K>>) {
        match event {
            watcher::Event::Apply(InScope(obj)) => {
                let (old, new) = self.put(&mut r.writer, obj);
                self.index(old.as_deref(), Some(&new));
                match old {
                    Some(old) => self.dispatch(&Change::Update {
                        old: &old,
                        new: &new,
                    }),
                    None => self.dispatch(&Change::Create(&new)),
                }
            }
            watcher::Event::Delete(InScope(obj)) => {
                let old = self.store.get(&self.object_ref(&obj));
                self.index(Some(old.as_deref().unwrap_or(&obj)), None);
                let event = watcher::Event::Delete(obj);
                r.writer.apply_watcher_event(&event);
                if let watcher::Event::Delete(obj) = &event {
                    self.dispatch(&Change::Delete(obj));
                }
            }
            watcher::Event::Init => r.relists[scope].clear(),
            watcher::Event::InitApply(InScope(obj)) => r.relists[scope].push(obj),
            watcher::Event::InitDone => self.relisted(r, scope),
        }
    }

    /// A (re)list of one scope is complete: the store takes what was listed, objects of the
    /// scope that were not listed are gone (deleted while the watch was down), and handlers
    /// see the differences.
    fn relisted(&self, r: &mut Reflect<K>, scope: usize) {
        let listed = std::mem::take(&mut r.relists[scope]);
        r.synced[scope] = true;
        let all_synced = r.synced.iter().all(|s| *s);
        let namespace = r.scopes[scope].as_deref();
        let mut before: HashMap<ObjectRef<K>, Arc<K>> = HashMap::new();
        let mut others = Vec::new();
        for o in self.store.state() {
            if namespace.is_none_or(|ns| o.meta().namespace.as_deref() == Some(ns)) {
                before.insert(self.object_ref(o.as_ref()), o);
            } else {
                others.push(o);
            }
        }
        let keys: Vec<ObjectRef<K>> = listed.iter().map(|o| self.object_ref(o)).collect();
        let kept: HashSet<&ObjectRef<K>> = keys.iter().collect();
        if !r.ready && all_synced {
            // The first complete list of every scope: hand the writer the whole state at
            // once, which also releases `Store::wait_until_ready`. Objects of the other
            // scopes are copied this once; with a single scope there are none.
            r.writer.apply_watcher_event(&watcher::Event::Init);
            for o in others {
                let copy = o.as_ref().clone();
                r.writer
                    .apply_watcher_event(&watcher::Event::InitApply(copy));
            }
            for o in listed {
                r.writer.apply_watcher_event(&watcher::Event::InitApply(o));
            }
            r.writer.apply_watcher_event(&watcher::Event::InitDone);
            r.ready = true;
        } else {
            drop(others);
            for o in listed {
                r.writer.apply_watcher_event(&watcher::Event::Apply(o));
            }
            for (key, gone) in &before {
                if !kept.contains(key) {
                    let copy = gone.as_ref().clone();
                    r.writer.apply_watcher_event(&watcher::Event::Delete(copy));
                }
            }
        }
        let current: Vec<Arc<K>> = keys.iter().filter_map(|k| self.store.get(k)).collect();
        for new in &current {
            let old = before.get(&self.object_ref(new.as_ref()));
            self.index(old.map(|o| o.as_ref()), Some(new));
        }
        for (key, gone) in &before {
            if !kept.contains(key) {
                self.index(Some(gone.as_ref()), None);
            }
        }
        if all_synced {
            self.set_error(None);
            if !self.synced.swap(true, Ordering::SeqCst) {
                self.on_synced.notify_waiters();
            }
        }
        for new in current {
            match before.remove(&self.object_ref(new.as_ref())) {
                Some(old) => self.dispatch(&Change::Update {
                    old: &old,
                    new: &new,
                }),
                None => self.dispatch(&Change::Create(&new)),
            }
        }
        for gone in before.into_values() {
            self.dispatch(&Change::Delete(&gone));
        }
    }
}

/// The state of one informer's watches between events.
struct Reflect<K: Kind> {
    writer: reflector::store::Writer<K>,
    /// Per scope (namespace, or `None` for the whole cluster).
    scopes: Vec<Option<String>>,
    /// The objects of a list in progress, per scope.
    relists: Vec<Vec<K>>,
    /// Whether each scope completed a list.
    synced: Vec<bool>,
    /// Whether the writer was given the first complete state (the store is "ready").
    ready: bool,
}

/// `K`, watched through a kube [`Api`] that may be bound to a namespace.
///
/// kube builds a namespaced `Api` only for kinds whose `Resource::Scope` says namespaced (or
/// dynamic); the runtime's kinds are generic without that bound. This transparent wrapper
/// delegates everything to `K` and declares the dynamic scope, so one code path watches a
/// namespace or the cluster with no extra decoding.
#[derive(Clone, Debug, serde::Deserialize)]
#[serde(transparent)]
struct InScope<K>(K);

impl<K: Kind> Resource for InScope<K> {
    type DynamicType = K::DynamicType;
    type Scope = kube::core::DynamicResourceScope;

    fn kind(dt: &K::DynamicType) -> std::borrow::Cow<'_, str> {
        K::kind(dt)
    }
    fn group(dt: &K::DynamicType) -> std::borrow::Cow<'_, str> {
        K::group(dt)
    }
    fn version(dt: &K::DynamicType) -> std::borrow::Cow<'_, str> {
        K::version(dt)
    }
    fn api_version(dt: &K::DynamicType) -> std::borrow::Cow<'_, str> {
        K::api_version(dt)
    }
    fn plural(dt: &K::DynamicType) -> std::borrow::Cow<'_, str> {
        K::plural(dt)
    }
    fn metadata_api() -> bool {
        K::metadata_api()
    }
    fn meta(&self) -> &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
        self.0.meta()
    }
    fn meta_mut(&mut self) -> &mut k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
        self.0.meta_mut()
    }
}

/// The API resource an informer watches, for RBAC derivation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Watched {
    pub group: String,
    pub kind: String,
    pub plural: String,
    pub namespaced: bool,
}

/// The type-erased face of an [`Informer`].
trait AnyInformer: Send + Sync {
    fn start(
        self: Arc<Self>,
        client: Client,
        cache: KindCache,
    ) -> futures::future::BoxFuture<'static, ()>;
    fn synced(&self) -> bool;
    fn error(&self) -> Option<String>;
    fn kind(&self) -> String;
    fn watched(&self) -> Watched;
}

impl<K: Kind> AnyInformer for Informer<K> {
    fn start(
        self: Arc<Self>,
        client: Client,
        cache: KindCache,
    ) -> futures::future::BoxFuture<'static, ()> {
        Box::pin(self.run(client, cache))
    }
    fn synced(&self) -> bool {
        self.synced.load(Ordering::SeqCst)
    }
    fn error(&self) -> Option<String> {
        self.error.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
    fn kind(&self) -> String {
        let group = K::group(&self.dt);
        if group.is_empty() {
            K::kind(&self.dt).into_owned()
        } else {
            format!("{}.{}", K::kind(&self.dt), group)
        }
    }
    fn watched(&self) -> Watched {
        Watched {
            group: K::group(&self.dt).into_owned(),
            kind: K::kind(&self.dt).into_owned(),
            plural: K::plural(&self.dt).into_owned(),
            namespaced: self.namespaced,
        }
    }
}

struct Entry {
    erased: Arc<dyn AnyInformer>,
    typed: Arc<dyn Any + Send + Sync>,
}

/// An informer's key: its type, and for a dynamic kind its `apiVersion/kind`.
type InformerKey = (TypeId, String);

/// What an informer created after the manager started needs to start its watch at once.
struct Started {
    client: Client,
    caches: CacheConfig,
    tasks: tokio::task::JoinSet<()>,
}

/// Every informer of one manager, by kind.
#[derive(Default)]
pub(crate) struct Informers {
    entries: Mutex<HashMap<InformerKey, Entry>>,
    order: Mutex<Vec<InformerKey>>,
    watches_started: AtomicUsize,
    on_synced: Arc<Notify>,
    /// Set by [`Informers::start`], cleared by [`Informers::stop`].
    started: Mutex<Option<Started>>,
}

fn informer_key<K: Kind>(dt: &K::DynamicType) -> InformerKey {
    (
        TypeId::of::<K>(),
        format!("{}/{}", K::api_version(dt), K::kind(dt)),
    )
}

impl Informers {
    /// The informer for `K`, created on first use.
    pub(crate) fn get_or_create<K: Object>(&self) -> Arc<Informer<K>> {
        self.get_or_create_with::<K>((), is_namespaced::<K>())
    }

    /// The informer for `K` of dynamic type `dt` (`namespaced` says the kind's scope),
    /// created on first use; one created after [`Informers::start`] starts watching at once.
    pub(crate) fn get_or_create_with<K: Kind>(
        &self,
        dt: K::DynamicType,
        namespaced: bool,
    ) -> Arc<Informer<K>> {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        let key = informer_key::<K>(&dt);
        if let Some(existing) = entries
            .get(&key)
            .and_then(|e| e.typed.clone().downcast::<Informer<K>>().ok())
        {
            return existing;
        }
        let informer = Arc::new(Informer::<K>::new(self.on_synced.clone(), dt, namespaced));
        entries.insert(
            key.clone(),
            Entry {
                erased: informer.clone(),
                typed: informer.clone(),
            },
        );
        self.order
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(key);
        let mut started = self.started.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(started) = started.as_mut() {
            let watch = self.start_one(informer.clone(), &started.client, &started.caches);
            started.tasks.spawn(watch);
        }
        informer
    }

    /// The informer for `K`, if some controller declared it.
    pub(crate) fn get<K: Object>(&self) -> Option<Arc<Informer<K>>> {
        self.get_with::<K>(&())
    }

    /// The informer for `K` of dynamic type `dt`, if some controller declared it.
    pub(crate) fn get_with<K: Kind>(&self, dt: &K::DynamicType) -> Option<Arc<Informer<K>>> {
        let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        entries
            .get(&informer_key::<K>(dt))
            .and_then(|e| e.typed.clone().downcast::<Informer<K>>().ok())
    }

    fn start_one(
        &self,
        informer: Arc<dyn AnyInformer>,
        client: &Client,
        caches: &CacheConfig,
    ) -> futures::future::BoxFuture<'static, ()> {
        let w = informer.watched();
        let cache = caches.resolve(&w.group, &w.kind, w.namespaced);
        self.watches_started
            .fetch_add(cache.namespaces.len().max(1), Ordering::SeqCst);
        informer.start(client.clone(), cache)
    }

    /// Starts the watches of every kind (one per kind, or one per namespace of a
    /// namespace-scoped kind); returns the futures to spawn. Informers created later start
    /// their own watches, until [`Informers::stop`].
    pub(crate) fn start(
        &self,
        client: &Client,
        caches: &CacheConfig,
    ) -> Vec<futures::future::BoxFuture<'static, ()>> {
        let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        let order = self.order.lock().unwrap_or_else(|p| p.into_inner());
        let watches = order
            .iter()
            .filter_map(|key| entries.get(key))
            .map(|e| self.start_one(e.erased.clone(), client, caches))
            .collect();
        *self.started.lock().unwrap_or_else(|p| p.into_inner()) = Some(Started {
            client: client.clone(),
            caches: caches.clone(),
            tasks: tokio::task::JoinSet::new(),
        });
        watches
    }

    /// Stops the watches of the informers created after [`Informers::start`].
    pub(crate) async fn stop(&self) {
        let started = self
            .started
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(mut started) = started {
            started.tasks.shutdown().await;
        }
    }

    /// The API resources watched, in registration order.
    pub(crate) fn watched(&self) -> Vec<Watched> {
        let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        let order = self.order.lock().unwrap_or_else(|p| p.into_inner());
        order
            .iter()
            .filter_map(|key| entries.get(key))
            .map(|e| e.erased.watched())
            .collect()
    }

    /// The last watch error of every kind whose cache is not synced (`Kind.group: error`).
    pub(crate) fn errors(&self) -> Vec<String> {
        let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        let order = self.order.lock().unwrap_or_else(|p| p.into_inner());
        order
            .iter()
            .filter_map(|key| entries.get(key))
            .filter_map(|e| Some(format!("{}: {}", e.erased.kind(), e.erased.error()?)))
            .collect()
    }

    /// Whether every cache has completed its initial list.
    pub(crate) fn synced(&self) -> bool {
        let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        entries.values().all(|e| e.erased.synced())
    }

    /// Waits until every cache has completed its initial list (true), or until `stop` says
    /// stop (false): controllers start on synced caches, as controller-runtime's do, so a
    /// reconcile never takes an owned kind's unfilled cache for "no children".
    pub(crate) async fn wait_synced(&self, stop: &mut watch::Receiver<bool>) -> bool {
        loop {
            let synced = self.on_synced.notified();
            if *stop.borrow_and_update() {
                return false;
            }
            if self.synced() {
                return true;
            }
            tokio::select! {
                _ = synced => {}
                changed = stop.changed() => if changed.is_err() { return false },
            }
        }
    }

    /// The kinds watched, in registration order (`Kind` or `Kind.group`).
    pub(crate) fn kinds(&self) -> Vec<String> {
        let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        let order = self.order.lock().unwrap_or_else(|p| p.into_inner());
        order
            .iter()
            .filter_map(|key| entries.get(key))
            .map(|e| e.erased.kind())
            .collect()
    }

    /// How many watch streams were started (one per kind, one per namespace for a kind
    /// watched in several).
    pub(crate) fn watches_started(&self) -> usize {
        self.watches_started.load(Ordering::SeqCst)
    }
}

/// Read access to a manager's shared caches, for mappers that need more than the object that
/// changed (see [`Controller::watches_with_caches`](crate::Controller::watches_with_caches));
/// a reconcile reaches the same through its [`Context`](crate::Context).
#[derive(Clone)]
pub struct Caches {
    informers: Arc<Informers>,
}

impl Debug for Caches {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Caches")
            .field("kinds", &self.informers.kinds())
            .finish()
    }
}

impl Caches {
    pub(crate) fn new(informers: Arc<Informers>) -> Caches {
        Caches { informers }
    }

    pub(crate) fn informers(&self) -> &Arc<Informers> {
        &self.informers
    }

    /// The shared cache of the kind `resource` learned at run time (see
    /// [`Controller::dynamic`](crate::Controller::dynamic),
    /// [`Controller::owns_dynamic`](crate::Controller::owns_dynamic) and
    /// [`Context::owns_dynamic`](crate::Context::owns_dynamic)).
    pub fn dynamic_store(
        &self,
        resource: &kube::api::ApiResource,
    ) -> Result<Store<kube::api::DynamicObject>> {
        self.informers
            .get_with::<kube::api::DynamicObject>(resource)
            .map(|i| i.store())
            .ok_or_else(|| Error::NotWatched(resource.kind.clone()))
    }

    /// The shared cache of kind `W`; any kind a controller of this manager declared with
    /// `for`, `owns` or `watches` has one.
    pub fn store<W: Object>(&self) -> Result<Store<W>> {
        self.informers
            .get::<W>()
            .map(|i| i.store())
            .ok_or_else(|| Error::NotWatched(W::kind(&()).into_owned()))
    }

    /// The owner index of kind `W`, declared by a controller of this manager with
    /// [`Controller::index_owners`](crate::Controller::index_owners).
    pub fn owner_index<W: Object>(&self) -> Result<OwnerIndex<W>> {
        self.informers
            .get::<W>()
            .and_then(|i| i.owner_index())
            .ok_or_else(|| Error::NotIndexed(W::kind(&()).into_owned()))
    }
}

#[cfg(test)]
mod tests {
    use futures::FutureExt;
    use k8s_openapi::api::core::v1::ConfigMap;

    use kube::ResourceExt;

    use super::*;

    fn cm(namespace: &str, name: &str, value: &str) -> InScope<ConfigMap> {
        let mut cm = ConfigMap::default();
        cm.metadata.namespace = Some(namespace.into());
        cm.metadata.name = Some(name.into());
        cm.data = Some([("v".to_string(), value.to_string())].into());
        InScope(cm)
    }

    fn describe(change: &Change<'_, ConfigMap>) -> String {
        let (what, obj) = match change {
            Change::Create(o) => ("create", *o),
            Change::Update { new, .. } => ("update", *new),
            Change::Delete(o) => ("delete", *o),
        };
        let value = obj
            .data
            .as_ref()
            .map(|d| d["v"].clone())
            .unwrap_or_default();
        format!(
            "{what} {}/{} {value}",
            obj.namespace().unwrap_or_default(),
            obj.name_any()
        )
    }

    fn list(
        informer: &Informer<ConfigMap>,
        r: &mut Reflect<ConfigMap>,
        scope: usize,
        objects: Vec<InScope<ConfigMap>>,
    ) {
        informer.apply(r, scope, watcher::Event::Init);
        for o in objects {
            informer.apply(r, scope, watcher::Event::InitApply(o));
        }
        informer.apply(r, scope, watcher::Event::InitDone);
    }

    fn cached(informer: &Informer<ConfigMap>) -> Vec<String> {
        let mut out: Vec<String> = informer
            .store
            .state()
            .iter()
            .map(|o| format!("{}/{}", o.namespace().unwrap_or_default(), o.name_any()))
            .collect();
        out.sort();
        out
    }

    #[test]
    fn a_relist_of_one_namespace_reports_its_missed_deletes_and_leaves_other_namespaces_alone() {
        let informer = Informer::<ConfigMap>::new(Arc::default(), (), true);
        informer.enable_owner_index();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        informer.add_handler(move |c| log.lock().unwrap().push(describe(c)));
        let take = || std::mem::take(&mut *seen.lock().unwrap());
        let Some(writer) = informer.writer.lock().unwrap().take() else {
            panic!("a new informer has its writer");
        };
        let mut r = Reflect {
            writer,
            scopes: vec![Some("a".into()), Some("b".into())],
            relists: vec![Vec::new(), Vec::new()],
            synced: vec![false, false],
            ready: false,
        };

        list(
            &informer,
            &mut r,
            0,
            vec![cm("a", "x", "1"), cm("a", "y", "1")],
        );
        assert_eq!(take(), ["create a/x 1", "create a/y 1"]);
        assert!(!AnyInformer::synced(&informer), "b has not listed yet");
        assert!(informer.store.wait_until_ready().now_or_never().is_none());
        informer.apply(&mut r, 0, watcher::Event::Apply(cm("a", "x", "2")));
        list(&informer, &mut r, 1, vec![cm("b", "x", "1")]);
        assert_eq!(take(), ["update a/x 2", "create b/x 1"]);
        assert!(AnyInformer::synced(&informer));
        assert!(informer.store.wait_until_ready().now_or_never().is_some());
        assert_eq!(cached(&informer), ["a/x", "a/y", "b/x"]);

        // a's watch broke; meanwhile a/y was deleted and a/x changed. The relist of a says so,
        // and b's object is neither reported nor dropped.
        list(&informer, &mut r, 0, vec![cm("a", "x", "3")]);
        assert_eq!(take(), ["update a/x 3", "delete a/y 1"]);
        assert_eq!(cached(&informer), ["a/x", "b/x"]);
        let index = informer.owner_index().unwrap_or_else(|| panic!("enabled"));
        assert_eq!(index.orphans("a").len(), 1);
        assert_eq!(index.orphans("b").len(), 1);

        informer.apply(&mut r, 1, watcher::Event::Delete(cm("b", "x", "1")));
        assert_eq!(take(), ["delete b/x 1"]);
        assert_eq!(cached(&informer), ["a/x"]);
        assert!(index.orphans("b").is_empty());
    }
}
