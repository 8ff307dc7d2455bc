//! Shared informers: one watch and one cache per kind, however many controllers use it.
//!
//! controller-runtime's manager shares one informer per kind between all its controllers;
//! kube-runtime's `Controller` opens its own watches. Here every kind a manager's controllers
//! name (`for`, `owns`, `watches`) gets exactly one [`watcher`](mod@kube::runtime::watcher) stream feeding
//! one [`reflector`](mod@kube::runtime::reflector) store, and every controller registers a handler
//! on it. Handlers see [`Change`]s with the previous object, which is what predicates such as
//! [`generation_changed`](crate::predicate::generation_changed) need; a relist after a watch
//! error is diffed against the cache so deletes missed meanwhile are still reported.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt::Debug;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use kube::api::Api;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;

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

/// Whether `K` is namespaced. kube's `Resource::Scope` is a marker type without a `'static`
/// bound, so its name is compared: `k8s-openapi` kinds and derived custom resources use
/// `NamespaceResourceScope`.
pub(crate) fn is_namespaced<K: Resource>() -> bool {
    std::any::type_name::<K::Scope>().ends_with("NamespaceResourceScope")
}

type Handler<K> = Arc<dyn Fn(&Change<'_, K>) + Send + Sync>;

/// One kind's watch, cache and handlers.
pub(crate) struct Informer<K: Object> {
    writer: Mutex<Option<reflector::store::Writer<K>>>,
    store: Store<K>,
    handlers: Mutex<Vec<Handler<K>>>,
    synced: AtomicBool,
}

impl<K: Object> Informer<K> {
    fn new() -> Informer<K> {
        let (store, writer) = reflector::store::<K>();
        Informer {
            writer: Mutex::new(Some(writer)),
            store,
            handlers: Mutex::new(Vec::new()),
            synced: AtomicBool::new(false),
        }
    }

    pub(crate) fn store(&self) -> Store<K> {
        self.store.clone()
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

    async fn run(self: Arc<Self>, client: Client) {
        let Some(mut writer) = self.writer.lock().unwrap_or_else(|p| p.into_inner()).take() else {
            return;
        };
        let api: Api<K> = Api::all(client);
        let mut stream = watcher::watcher(api, watcher::Config::default())
            .default_backoff()
            .boxed();
        let mut relisted: Vec<K> = Vec::new();
        while let Some(event) = stream.next().await {
            let event = match event {
                Ok(e) => e,
                Err(e) => {
                    tracing::warn!(kind = %K::kind(&()), error = %e, "watch failed; retrying");
                    continue;
                }
            };
            match &event {
                watcher::Event::Apply(obj) => {
                    let old = self.store.get(&ObjectRef::from_obj(obj));
                    writer.apply_watcher_event(&event);
                    match old {
                        Some(old) => self.dispatch(&Change::Update {
                            old: &old,
                            new: obj,
                        }),
                        None => self.dispatch(&Change::Create(obj)),
                    }
                }
                watcher::Event::Delete(obj) => {
                    writer.apply_watcher_event(&event);
                    self.dispatch(&Change::Delete(obj));
                }
                watcher::Event::Init => {
                    relisted.clear();
                    writer.apply_watcher_event(&event);
                }
                watcher::Event::InitApply(obj) => {
                    relisted.push(obj.clone());
                    writer.apply_watcher_event(&event);
                }
                watcher::Event::InitDone => {
                    let mut before: HashMap<ObjectRef<K>, Arc<K>> = self
                        .store
                        .state()
                        .into_iter()
                        .map(|o| (ObjectRef::from_obj(o.as_ref()), o))
                        .collect();
                    writer.apply_watcher_event(&event);
                    self.synced.store(true, Ordering::SeqCst);
                    for obj in relisted.drain(..) {
                        match before.remove(&ObjectRef::from_obj(&obj)) {
                            Some(old) => self.dispatch(&Change::Update {
                                old: &old,
                                new: &obj,
                            }),
                            None => self.dispatch(&Change::Create(&obj)),
                        }
                    }
                    for gone in before.into_values() {
                        self.dispatch(&Change::Delete(&gone));
                    }
                }
            }
        }
    }
}

/// The type-erased face of an [`Informer`].
trait AnyInformer: Send + Sync {
    fn start(self: Arc<Self>, client: Client) -> futures::future::BoxFuture<'static, ()>;
    fn synced(&self) -> bool;
    fn kind(&self) -> String;
}

impl<K: Object> AnyInformer for Informer<K> {
    fn start(self: Arc<Self>, client: Client) -> futures::future::BoxFuture<'static, ()> {
        Box::pin(self.run(client))
    }
    fn synced(&self) -> bool {
        self.synced.load(Ordering::SeqCst)
    }
    fn kind(&self) -> String {
        let group = K::group(&());
        if group.is_empty() {
            K::kind(&()).into_owned()
        } else {
            format!("{}.{}", K::kind(&()), group)
        }
    }
}

struct Entry {
    erased: Arc<dyn AnyInformer>,
    typed: Arc<dyn Any + Send + Sync>,
}

/// Every informer of one manager, by kind.
#[derive(Default)]
pub(crate) struct Informers {
    entries: Mutex<HashMap<TypeId, Entry>>,
    order: Mutex<Vec<TypeId>>,
    watches_started: AtomicUsize,
}

impl Informers {
    /// The informer for `K`, created on first use.
    pub(crate) fn get_or_create<K: Object>(&self) -> Arc<Informer<K>> {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        let id = TypeId::of::<K>();
        if let Some(existing) = entries
            .get(&id)
            .and_then(|e| e.typed.clone().downcast::<Informer<K>>().ok())
        {
            return existing;
        }
        let informer = Arc::new(Informer::<K>::new());
        entries.insert(
            id,
            Entry {
                erased: informer.clone(),
                typed: informer.clone(),
            },
        );
        self.order
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(id);
        informer
    }

    /// The informer for `K`, if some controller declared it.
    pub(crate) fn get<K: Object>(&self) -> Option<Arc<Informer<K>>> {
        let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        entries
            .get(&TypeId::of::<K>())
            .and_then(|e| e.typed.clone().downcast::<Informer<K>>().ok())
    }

    /// Starts one watch per kind; returns the futures to spawn.
    pub(crate) fn start(&self, client: &Client) -> Vec<futures::future::BoxFuture<'static, ()>> {
        let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        let order = self.order.lock().unwrap_or_else(|p| p.into_inner());
        order
            .iter()
            .filter_map(|id| entries.get(id))
            .map(|e| {
                self.watches_started.fetch_add(1, Ordering::SeqCst);
                e.erased.clone().start(client.clone())
            })
            .collect()
    }

    /// Whether every cache has completed its initial list.
    pub(crate) fn synced(&self) -> bool {
        let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        entries.values().all(|e| e.erased.synced())
    }

    /// The kinds watched, in registration order (`Kind` or `Kind.group`).
    pub(crate) fn kinds(&self) -> Vec<String> {
        let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        let order = self.order.lock().unwrap_or_else(|p| p.into_inner());
        order
            .iter()
            .filter_map(|id| entries.get(id))
            .map(|e| e.erased.kind())
            .collect()
    }

    /// How many watch streams were started.
    pub(crate) fn watches_started(&self) -> usize {
        self.watches_started.load(Ordering::SeqCst)
    }
}
