//! Controllers: what to watch, how keys are derived, and the reconcile loop.
//!
//! A [`Controller`] names its primary kind `K` (controller-runtime's `For`), the kinds it
//! [`owns`](Controller::owns) (changes map to the controlling owner's key) and other kinds it
//! [`watches`](Controller::watches) with a mapper. Every source feeds keys ([`Request`]s) into
//! the controller's own [`WorkQueue`]; `max_concurrent_reconciles` workers take keys from it and
//! call the reconcile function with the cached object. The queue guarantees that one key is
//! never reconciled by two workers at once, that queued keys are deduplicated, and that a
//! failing key backs off exponentially (5 ms → 1000 s) until it succeeds.
//!
//! The primary kind may be learned at run time ([`Controller::dynamic`]: `DynamicObject`s of
//! an `ApiResource`), and so may owned kinds, at build time ([`Controller::owns_dynamic`]) or
//! from inside a reconcile ([`Context::owns_dynamic`], which opens the kind's watch at once).
//!
//! Why not wrap `kube_runtime::Controller`: it keeps no per-object failure count (its error
//! policy chooses a fixed delay), and it owns its watches, so two controllers on one kind
//! would open two watches. Here watches and caches belong to the [`Manager`](crate::Manager)
//! ([`informer`](crate::informer)), and the queue is client-go's (see [`crate::workqueue`]).

use std::collections::HashSet;
use std::fmt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use futures::stream::BoxStream;
use futures::{FutureExt, Stream, StreamExt};
use k8s_openapi::api::rbac::v1::PolicyRule;
use kube::api::{ApiResource, DynamicObject};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Client, Resource, ResourceExt};
use serde::Serialize;
use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::error::Result;
use crate::events::{EventBuilder, Recorder};
use crate::expectations::Expectations;
use crate::finalizer::{self, FinalizerError};
use crate::informer::{Caches, Informers, Kind, Object, OwnerIndex};
use crate::metrics::{ControllerMetrics, Metrics};
use crate::predicate::{Change, Predicate};
use crate::rbac::{self, Rules};
use crate::workqueue::{Backoff, WorkQueue};

/// The key of one object to reconcile (controller-runtime's `reconcile.Request`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Request {
    /// The namespace; `None` for cluster-scoped objects.
    pub namespace: Option<String>,
    /// The name.
    pub name: String,
}

impl Request {
    /// A key for a namespaced object.
    pub fn namespaced(namespace: impl Into<String>, name: impl Into<String>) -> Request {
        Request {
            namespace: Some(namespace.into()),
            name: name.into(),
        }
    }

    /// A key for a cluster-scoped object.
    pub fn cluster(name: impl Into<String>) -> Request {
        Request {
            namespace: None,
            name: name.into(),
        }
    }

    /// The key of `obj`.
    pub fn from_object<K: Resource>(obj: &K) -> Request {
        Request {
            namespace: obj.meta().namespace.clone(),
            name: obj.meta().name.clone().unwrap_or_default(),
        }
    }

    fn object_ref<K: Kind>(&self, dt: &K::DynamicType) -> ObjectRef<K> {
        let r = ObjectRef::new_with(&self.name, dt.clone());
        match &self.namespace {
            Some(ns) => r.within(ns),
            None => r,
        }
    }
}

impl fmt::Display for Request {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "{ns}/{}", self.name),
            None => f.write_str(&self.name),
        }
    }
}

/// What to do after a successful reconcile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Action {
    requeue_after: Option<Duration>,
    backoff: bool,
}

impl Action {
    /// Reconcile again after `after` (metric result `requeue_after`), even if nothing changes.
    pub fn requeue(after: Duration) -> Action {
        Action {
            requeue_after: Some(after),
            backoff: false,
        }
    }

    /// Nothing more to do until a watched object changes (metric result `success`).
    pub fn await_change() -> Action {
        Action {
            requeue_after: None,
            backoff: false,
        }
    }

    /// Reconcile again after the key's backoff delay, without counting an error (metric result
    /// `requeue`; controller-runtime's `Result{Requeue: true}`).
    pub fn requeue_with_backoff() -> Action {
        Action {
            requeue_after: None,
            backoff: true,
        }
    }

    /// The requested delay, if any.
    pub fn requeue_after(&self) -> Option<Duration> {
        self.requeue_after
    }
}

/// What a reconcile function receives besides the object: the client, the manager's caches,
/// an event recorder, and the operator's own data (`T`, reachable through `Deref`).
pub struct Context<T> {
    client: Client,
    controller: String,
    field_manager: String,
    caches: Caches,
    recorder: Recorder,
    finalizer: Option<String>,
    /// The primary kind, as the API and owner references name it.
    resource: ApiResource,
    owner: OwnerKind,
    queue: Arc<WorkQueue<Request>>,
    /// The kinds [`Context::owns_dynamic`] registered.
    dynamic_owned: Mutex<HashSet<ApiResource>>,
    /// The kinds [`Context::watches_dynamic`] registered.
    dynamic_watched: Mutex<HashSet<ApiResource>>,
    data: T,
}

/// A controller's primary kind as its children's owner references name it.
#[derive(Debug, Clone)]
struct OwnerKind {
    kind: String,
    group: String,
    namespaced: bool,
}

impl OwnerKind {
    fn of<K: Kind>(dt: &K::DynamicType, namespaced: bool) -> OwnerKind {
        OwnerKind {
            kind: K::kind(dt).into_owned(),
            group: K::group(dt).into_owned(),
            namespaced,
        }
    }

    /// Queues the controller owner (of this kind) of the changed object, before and after
    /// the change.
    fn enqueue<C: Resource>(&self, queue: &WorkQueue<Request>, change: &Change<'_, C>) {
        let mut objects = vec![change.object()];
        if let Change::Update { old, .. } = change {
            objects.push(old);
        }
        for obj in objects {
            for owner in obj.owner_references() {
                let api_group = owner.api_version.split_once('/').map(|(g, _)| g);
                if owner.controller == Some(true)
                    && owner.kind == self.kind
                    && api_group.unwrap_or("") == self.group
                {
                    queue.add(Request {
                        namespace: if self.namespaced {
                            obj.namespace()
                        } else {
                            None
                        },
                        name: owner.name.clone(),
                    });
                }
            }
        }
    }
}

impl<T> fmt::Debug for Context<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Context")
            .field("controller", &self.controller)
            .finish_non_exhaustive()
    }
}

impl<T> std::ops::Deref for Context<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.data
    }
}

impl<T> Context<T> {
    /// The Kubernetes client.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The operator's data given to [`Controller::build`].
    pub fn data(&self) -> &T {
        &self.data
    }

    /// The controller's name.
    pub fn controller(&self) -> &str {
        &self.controller
    }

    /// The field manager used for server-side apply (the controller's name).
    pub fn field_manager(&self) -> &str {
        &self.field_manager
    }

    /// The shared cache of kind `W`; any kind a controller of this manager declared with
    /// `for`, `owns` or `watches` has one.
    pub fn store<W: Object>(&self) -> Result<Store<W>> {
        self.caches.store()
    }

    /// The owner index of kind `W` (objects by controller owner uid, orphans by namespace),
    /// declared by a controller of this manager with [`Controller::index_owners`].
    pub fn owner_index<W: Object>(&self) -> Result<OwnerIndex<W>> {
        self.caches.owner_index()
    }

    /// The manager's shared caches.
    pub fn caches(&self) -> &Caches {
        &self.caches
    }

    /// The event recorder (reporting controller = this controller's name).
    pub fn recorder(&self) -> &Recorder {
        &self.recorder
    }

    /// Starts an event about `obj` (see [`crate::events`]):
    /// `ctx.event(obj).reason("Booked").note("booking created").publish().await?`.
    pub fn event<'a, K: Object>(&'a self, obj: &K) -> EventBuilder<'a> {
        self.recorder.event(obj)
    }

    /// Runs `f` under the finalizer the controller declared with [`Controller::finalizer`]:
    /// adds it to a live object, calls `f` with [`Event::Apply`](finalizer::Event::Apply)
    /// while the object lives and with [`Event::Cleanup`](finalizer::Event::Cleanup) once it
    /// is being deleted, then removes it (see [`crate::finalizer`] for the four cases). Fails
    /// with [`FinalizerError::Undeclared`] when the controller declared none.
    pub async fn finalize<K, F, Fut, E>(
        &self,
        obj: Arc<K>,
        f: F,
    ) -> std::result::Result<Action, FinalizerError<E>>
    where
        K: Kind,
        F: FnOnce(finalizer::Event<K>) -> Fut,
        Fut: Future<Output = std::result::Result<Action, E>>,
        E: std::error::Error + 'static,
    {
        let Some(name) = self.finalizer.as_deref() else {
            return Err(FinalizerError::Undeclared(self.controller.clone()));
        };
        finalizer::finalize_in(&self.client, &self.resource, name, obj, f).await
    }

    /// From now on, reconciles the controller owner (of this controller's kind) of any
    /// object of kind `resource` that changes or goes — [`Controller::owns`] for a kind
    /// learned while reconciling (a chart operator meets its dependent kinds in the
    /// manifests it renders, as operator-sdk's helm operator does). The manager opens the
    /// kind's watch now if it has none; `predicate` filters the changes (e.g. to ignore
    /// status-only updates). Returns whether the kind was new to this controller (the
    /// predicate of a kind already registered is kept). RBAC on such kinds cannot be
    /// derived: the operator's role must grant it.
    pub fn owns_dynamic(
        &self,
        resource: &ApiResource,
        namespaced: bool,
        predicate: impl Into<Option<Predicate<DynamicObject>>>,
    ) -> bool {
        let mut owned = self.dynamic_owned.lock().unwrap_or_else(|p| p.into_inner());
        if !owned.insert(resource.clone()) {
            return false;
        }
        let owner = self.owner.clone();
        let queue = self.queue.clone();
        let predicate = predicate.into();
        self.caches
            .informers()
            .get_or_create_with::<DynamicObject>(resource.clone(), namespaced)
            .add_handler(move |change: &Change<'_, DynamicObject>| {
                if predicate.as_ref().is_none_or(|p| p.matches(change)) {
                    owner.enqueue(&queue, change);
                }
            });
        true
    }

    /// From now on, reconciles the keys `mapper` returns whenever an object of kind
    /// `resource` changes or goes (both the old and the new object of an update are mapped)
    /// — [`Controller::watches`] for a kind learned while reconciling, when owner references
    /// alone cannot say whom a change concerns (operator-sdk's Ansible operator maps
    /// cluster-scoped and cross-namespace dependents to their owner through annotations).
    /// The manager opens the kind's watch now if it has none; `predicate` filters the
    /// changes. Returns whether the kind was new to this controller (the mapper and predicate
    /// of a kind already registered are kept). RBAC on such kinds cannot be derived.
    pub fn watches_dynamic(
        &self,
        resource: &ApiResource,
        namespaced: bool,
        mapper: impl Fn(&DynamicObject) -> Vec<Request> + Send + Sync + 'static,
        predicate: impl Into<Option<Predicate<DynamicObject>>>,
    ) -> bool {
        let mut watched = self
            .dynamic_watched
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if !watched.insert(resource.clone()) {
            return false;
        }
        let queue = self.queue.clone();
        let predicate = predicate.into();
        self.caches
            .informers()
            .get_or_create_with::<DynamicObject>(resource.clone(), namespaced)
            .add_handler(move |change: &Change<'_, DynamicObject>| {
                if predicate.as_ref().is_some_and(|p| !p.matches(change)) {
                    return;
                }
                let mut keys = mapper(change.object());
                if let Change::Update { old, .. } = change {
                    keys.extend(mapper(old));
                }
                for key in keys {
                    queue.add(key);
                }
            });
        true
    }

    /// Server-side applies `child` with a controller owner reference to `owner` and this
    /// controller's field manager (see [`crate::apply::apply_owned`]).
    pub async fn apply_owned<O: Object, C: Object>(&self, owner: &O, child: C) -> Result<C> {
        crate::apply::apply_owned(&self.client, &self.field_manager, owner, child).await
    }

    /// Server-side applies `.status` of `obj` on its `/status` subresource with this
    /// controller's field manager (see [`crate::apply::apply_status`]).
    pub async fn apply_status<K: Object, S: Serialize>(&self, obj: &K, status: &S) -> Result<K> {
        crate::apply::apply_status(&self.client, &self.field_manager, obj, status).await
    }

    /// Merge-patches `.status` of `obj` on its `/status` subresource.
    pub async fn patch_status<K: Object, S: Serialize>(&self, obj: &K, status: &S) -> Result<K> {
        crate::apply::patch_status(&self.client, obj, status).await
    }
}

/// Where a controller's keys come from: registers handlers on the manager's informers.
type Source = Box<dyn FnOnce(&Arc<Informers>, &Arc<WorkQueue<Request>>) + Send>;

/// A controller under construction; finish it with [`Controller::build`] and hand it to
/// [`Manager::add`](crate::Manager::add).
pub struct Controller<K: Kind> {
    name: String,
    dt: K::DynamicType,
    namespaced: bool,
    predicate: Option<Predicate<K>>,
    /// Registered before the controller's own handlers (expectations, owner indexes).
    observers: Vec<Source>,
    sources: Vec<Source>,
    streams: Vec<BoxStream<'static, Request>>,
    rules: Rules,
    max_concurrent: usize,
    resync: Option<Duration>,
    backoff: Backoff,
    finalizer: Option<String>,
    status: bool,
}

impl<K: Kind> fmt::Debug for Controller<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Controller")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

fn watch_rule<K: Object>() -> PolicyRule {
    watch_rule_with::<K>(&())
}

fn watch_rule_with<K: Kind>(dt: &K::DynamicType) -> PolicyRule {
    rbac::rule(&K::group(dt), &K::plural(dt), &["get", "list", "watch"])
}

impl<K: Object> Controller<K> {
    /// A controller of kind `K` (its primary resource, controller-runtime's `For`) named
    /// `name` — the name labels its metrics and events and is its field manager.
    pub fn new(name: impl Into<String>) -> Controller<K> {
        Controller::with_kind(name, (), crate::informer::is_namespaced::<K>())
    }
}

impl Controller<DynamicObject> {
    /// A controller of the kind `resource`, learned at run time (`namespaced` says its
    /// scope), whose objects reach the reconcile function as [`DynamicObject`]s: the
    /// primary kind of a generic operator that reads its kinds from a file, as
    /// operator-sdk's helm operator reads `watches.yaml`. Everything else — shared cache,
    /// queue, backoff, metrics, leader election — is as for a static kind.
    pub fn dynamic(
        name: impl Into<String>,
        resource: ApiResource,
        namespaced: bool,
    ) -> Controller<DynamicObject> {
        Controller::with_kind(name, resource, namespaced)
    }
}

impl<K: Kind> Controller<K> {
    fn with_kind(name: impl Into<String>, dt: K::DynamicType, namespaced: bool) -> Controller<K> {
        let mut rules = Rules::default();
        rules.add(watch_rule_with::<K>(&dt));
        Controller {
            name: name.into(),
            dt,
            namespaced,
            predicate: None,
            observers: Vec::new(),
            sources: Vec::new(),
            streams: Vec::new(),
            rules,
            max_concurrent: 1,
            resync: None,
            backoff: Backoff::default(),
            finalizer: None,
            status: true,
        }
    }

    /// Filters changes of the primary kind (e.g. [`generation_changed`](crate::predicate::generation_changed)).
    pub fn with_predicate(mut self, predicate: Predicate<K>) -> Self {
        self.predicate = Some(match self.predicate.take() {
            Some(p) => p.and(predicate),
            None => predicate,
        });
        self
    }

    /// Reconciles the controlling owner (of kind `K`) when an object of kind `C` changes.
    /// Adds `get/list/watch/create/update/patch/delete` on `C`, and `update` on
    /// `<plural of K>/finalizers` (for `blockOwnerDeletion`), to the derived RBAC rules.
    pub fn owns<C: Object>(self) -> Self {
        self.owns_with::<C>(None)
    }

    /// As [`Controller::owns`], filtering changes of `C` with `predicate`.
    pub fn owns_with<C: Object>(self, predicate: impl Into<Option<Predicate<C>>>) -> Self {
        self.owns_kind::<C>((), crate::informer::is_namespaced::<C>(), predicate.into())
    }

    /// As [`Controller::owns`], for the kind `resource` learned at run time (`namespaced`
    /// says its scope), cached as [`DynamicObject`]s. For kinds first met while
    /// reconciling, see [`Context::owns_dynamic`].
    pub fn owns_dynamic(
        self,
        resource: ApiResource,
        namespaced: bool,
        predicate: impl Into<Option<Predicate<DynamicObject>>>,
    ) -> Self {
        self.owns_kind::<DynamicObject>(resource, namespaced, predicate.into())
    }

    fn owns_kind<C: Kind>(
        mut self,
        dt: C::DynamicType,
        namespaced: bool,
        predicate: Option<Predicate<C>>,
    ) -> Self {
        self.rules.add(rbac::rule(
            &C::group(&dt),
            &C::plural(&dt),
            &[
                "get", "list", "watch", "create", "update", "patch", "delete",
            ],
        ));
        // Setting `blockOwnerDeletion` on a child needs `update` on the owner's finalizers
        // where OwnerReferencesPermissionEnforcement is on (OpenShift, hardened clusters).
        self.rules.add(rbac::rule(
            &K::group(&self.dt),
            &format!("{}/finalizers", K::plural(&self.dt)),
            &["update"],
        ));
        let owner = OwnerKind::of::<K>(&self.dt, self.namespaced);
        self.sources.push(Box::new(move |informers, queue| {
            let queue = queue.clone();
            informers
                .get_or_create_with::<C>(dt, namespaced)
                .add_handler(move |change: &Change<'_, C>| {
                    if predicate.as_ref().is_some_and(|p| !p.matches(change)) {
                        return;
                    }
                    owner.enqueue(&queue, change);
                });
        }));
        self
    }

    /// As [`Controller::owns`], caching only the metadata of `C`
    /// ([`PartialObjectMeta<C>`](kube::core::PartialObjectMeta), watched with metadata-only
    /// requests): mapping a child to its owner needs its owner references, not its spec or
    /// status, and a cached Deployment is several times the size of its metadata. Read the
    /// children with `ctx.store::<PartialObjectMeta<C>>()` (or an
    /// [`index_owners`](Controller::index_owners) of that type); a reconcile that needs a
    /// child's spec or status gets it from the API — e.g. the object
    /// [`apply_owned`](Context::apply_owned) returns — or uses [`owns`](Controller::owns).
    pub fn owns_metadata<C: Object>(self) -> Self {
        self.owns::<kube::core::PartialObjectMeta<C>>()
    }

    /// Reconciles the keys `mapper` returns whenever an object of kind `W` changes.
    /// Adds `get/list/watch` on `W` to the derived RBAC rules.
    pub fn watches<W: Object>(
        self,
        mapper: impl Fn(&W) -> Vec<Request> + Send + Sync + 'static,
    ) -> Self {
        self.watches_with(mapper, None)
    }

    /// As [`Controller::watches`], filtering changes of `W` with `predicate`.
    pub fn watches_with<W: Object>(
        self,
        mapper: impl Fn(&W) -> Vec<Request> + Send + Sync + 'static,
        predicate: impl Into<Option<Predicate<W>>>,
    ) -> Self {
        self.watches_with_caches(move |object: &W, _: &Caches| mapper(object), predicate)
    }

    /// Reconciles the keys `mapper` returns whenever an object of kind `W` changes; the
    /// mapper also reads the manager's [`Caches`] — e.g. to find every primary object whose
    /// selector matches a changed child that has no owner yet (upstream's "owner or
    /// adopters"), as controller-runtime's `EnqueueRequestsFromMapFunc` reading the cache.
    /// On an update both the old and the new object are mapped. Adds `get/list/watch` on `W`
    /// to the derived RBAC rules.
    pub fn watches_with_caches<W: Object>(
        mut self,
        mapper: impl Fn(&W, &Caches) -> Vec<Request> + Send + Sync + 'static,
        predicate: impl Into<Option<Predicate<W>>>,
    ) -> Self {
        let predicate = predicate.into();
        self.rules.add(watch_rule::<W>());
        self.sources.push(Box::new(move |informers, queue| {
            let queue = queue.clone();
            let caches = Caches::new(informers.clone());
            informers
                .get_or_create::<W>()
                .add_handler(move |change: &Change<'_, W>| {
                    if predicate.as_ref().is_some_and(|p| !p.matches(change)) {
                        return;
                    }
                    let mut keys = mapper(change.object(), &caches);
                    if let Change::Update { old, .. } = change {
                        keys.extend(mapper(old, &caches));
                    }
                    for key in keys {
                        queue.add(key);
                    }
                });
        }));
        self
    }

    /// Reconciles every key `stream` yields — changes outside the cluster (a webhook from
    /// another system, a timer of the operator's own, a channel fed by other code), as
    /// kube-runtime's `reconcile_on` and controller-runtime's channel source. Keys go through
    /// the same queue as the watches' (deduplicated, never two reconciles of one key at
    /// once). The stream is polled while the controller runs (after leader election); a key
    /// whose object is not in the cache is dropped, as any other.
    ///
    /// A Tokio channel becomes a stream with `futures::stream::unfold`:
    ///
    /// ```
    /// # use opkit::{Controller, Request};
    /// # use opkit::k8s_openapi::api::core::v1::ConfigMap;
    /// let (tx, rx) = tokio::sync::mpsc::channel::<Request>(16);
    /// let keys = futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|k| (k, rx)) });
    /// let controller = Controller::<ConfigMap>::new("cm").reconcile_on(keys);
    /// # drop((tx, controller));
    /// ```
    pub fn reconcile_on(mut self, stream: impl Stream<Item = Request> + Send + 'static) -> Self {
        self.streams.push(stream.boxed());
        self
    }

    /// Keeps an [`OwnerIndex`] of kind `W` in the shared cache (objects by controller owner
    /// uid, and without one by namespace), read with [`Context::owner_index`]; as a field
    /// index on the owner in controller-runtime. The index is updated before any handler sees
    /// a change. Adds `get/list/watch` on `W` to the derived RBAC rules.
    pub fn index_owners<W: Object>(mut self) -> Self {
        self.rules.add(watch_rule::<W>());
        self.observers.push(Box::new(|informers, _| {
            informers.get_or_create::<W>().enable_owner_index();
        }));
        self
    }

    /// Tells `expectations` of every creation and deletion of a `W` (by its controller
    /// owner's uid) before this controller's handlers queue the owner, so a reconcile
    /// triggered by the change sees it [observed](Expectations::observe). Adds
    /// `get/list/watch` on `W` to the derived RBAC rules.
    pub fn expectations<W: Object>(mut self, expectations: Expectations) -> Self {
        self.rules.add(watch_rule::<W>());
        self.observers.push(Box::new(move |informers, _| {
            informers
                .get_or_create::<W>()
                .add_handler(move |change: &Change<'_, W>| expectations.observe(change));
        }));
        self
    }

    /// How many keys are reconciled at once (default 1); one key is never reconciled twice
    /// at the same time.
    pub fn max_concurrent_reconciles(mut self, n: usize) -> Self {
        self.max_concurrent = n.max(1);
        self
    }

    /// Reconciles every cached primary object every `period` (off by default; controller-runtime's
    /// `SyncPeriod` is 10 h). Resyncs bypass predicates.
    pub fn resync_every(mut self, period: Duration) -> Self {
        self.resync = Some(period);
        self
    }

    /// The per-key error backoff (default 5 ms doubling to 1000 s).
    pub fn backoff(mut self, backoff: Backoff) -> Self {
        self.backoff = backoff;
        self
    }

    /// Declares that the controller manages finalizer `name` on its primary objects, which
    /// [`Context::finalize`] then adds, honours and removes; adds `update/patch` on the primary
    /// and `update` on `<plural>/finalizers` to the derived RBAC rules.
    pub fn finalizer(mut self, name: impl Into<String>) -> Self {
        self.finalizer = Some(name.into());
        self.rules.add(rbac::rule(
            &K::group(&self.dt),
            &K::plural(&self.dt),
            &["update", "patch"],
        ));
        self.rules.add(rbac::rule(
            &K::group(&self.dt),
            &format!("{}/finalizers", K::plural(&self.dt)),
            &["update"],
        ));
        self
    }

    /// Declares that the controller does not write `<plural>/status` (by default the derived
    /// RBAC rules allow `get/update/patch` on it).
    pub fn without_status(mut self) -> Self {
        self.status = false;
        self
    }

    /// Adds rules the derivation cannot see (e.g. reading Secrets with a direct `get`).
    pub fn rbac_rule(mut self, rule: PolicyRule) -> Self {
        self.rules.add(rule);
        self
    }

    /// The RBAC rules this controller needs (without the manager's own: events, leases).
    pub fn rbac_rules(&self) -> Vec<PolicyRule> {
        let mut rules = self.rules.clone();
        if self.status {
            rules.add(rbac::rule(
                &K::group(&self.dt),
                &format!("{}/status", K::plural(&self.dt)),
                &["get", "update", "patch"],
            ));
        }
        rules.to_vec()
    }

    /// Finishes the controller with its reconcile function and the data its [`Context`]
    /// carries.
    ///
    /// `reconcile(obj, ctx)` is called with the cached object; an `Err` (or a panic) is
    /// logged, counted and retried with the key's backoff; `Ok(action)` resets the backoff.
    /// An error with a [`TerminalError`](crate::error::TerminalError) in its chain is not
    /// retried: it is recorded as a `Warning` event `ReconcileFailed` on the object, and the
    /// key waits for the next change.
    /// A key whose object is no longer in the cache is dropped without a call: work that
    /// must happen on deletion belongs in a [finalizer](crate::finalizer), and owned
    /// objects are removed by the garbage collector through their owner references.
    pub fn build<T, F, Fut, E>(self, reconcile: F, data: T) -> ControllerDef
    where
        T: Send + Sync + 'static,
        F: Fn(Arc<K>, Arc<Context<T>>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = std::result::Result<Action, E>> + Send + 'static,
        E: std::error::Error + Send + Sync + 'static,
    {
        let rules = self.rbac_rules();
        let name = self.name.clone();
        let predicate = self.predicate.clone();
        let Controller {
            name: ctrl_name,
            dt,
            namespaced,
            observers,
            sources,
            max_concurrent,
            resync,
            backoff,
            finalizer,
            streams,
            ..
        } = self;
        let register: Register = Box::new(move |informers: &Arc<Informers>, metrics: &Metrics| {
            let metrics = metrics.controller(
                &ctrl_name,
                &<K as kube::Resource>::group(&dt),
                &<K as kube::Resource>::kind(&dt),
            );
            metrics.max_concurrent.set(max_concurrent as i64);
            let queue = WorkQueue::new(backoff, metrics.queue.clone());
            for observer in observers {
                observer(informers, &queue);
            }
            {
                let queue = queue.clone();
                informers
                    .get_or_create_with::<K>(dt.clone(), namespaced)
                    .add_handler(move |change: &Change<'_, K>| {
                        if predicate.as_ref().is_some_and(|p| !p.matches(change)) {
                            return;
                        }
                        queue.add(Request::from_object(change.object()));
                    });
            }
            for source in sources {
                source(informers, &queue);
            }
            let informers = informers.clone();
            let reconcile = Arc::new(reconcile);
            let start: Start = Box::new(move |env: RunEnv| {
                let ctx = Arc::new(Context {
                    recorder: Recorder::new(env.client.clone(), &ctrl_name, &env.identity),
                    client: env.client,
                    field_manager: ctrl_name.clone(),
                    controller: ctrl_name.clone(),
                    caches: Caches::new(informers.clone()),
                    finalizer,
                    resource: ApiResource::erase::<K>(&dt),
                    owner: OwnerKind::of::<K>(&dt, namespaced),
                    queue: queue.clone(),
                    dynamic_owned: Mutex::default(),
                    dynamic_watched: Mutex::default(),
                    data,
                });
                let store = informers
                    .get_or_create_with::<K>(dt.clone(), namespaced)
                    .store();
                Box::pin(run_workers(
                    ctrl_name,
                    queue,
                    (store, dt),
                    ctx,
                    reconcile,
                    metrics,
                    max_concurrent,
                    Background { resync, streams },
                    env.stop,
                ))
            });
            Prepared { start }
        });
        ControllerDef {
            name,
            rules,
            register,
        }
    }
}

/// What a controller's workers get when the manager starts them.
pub(crate) struct RunEnv {
    pub client: Client,
    pub identity: String,
    pub stop: watch::Receiver<bool>,
}

type Start = Box<dyn FnOnce(RunEnv) -> BoxFuture<'static, ()> + Send>;
type Register = Box<dyn FnOnce(&Arc<Informers>, &Metrics) -> Prepared + Send>;

/// A controller registered with a manager: its queue is fed, its workers wait for leadership.
pub(crate) struct Prepared {
    pub start: Start,
}

/// A finished controller, ready for [`Manager::add`](crate::Manager::add).
pub struct ControllerDef {
    name: String,
    rules: Vec<PolicyRule>,
    register: Register,
}

impl fmt::Debug for ControllerDef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ControllerDef")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl ControllerDef {
    /// The controller's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The RBAC rules the controller needs.
    pub fn rbac_rules(&self) -> &[PolicyRule] {
        &self.rules
    }

    pub(crate) fn register(self, informers: &Arc<Informers>, metrics: &Metrics) -> Prepared {
        (self.register)(informers, metrics)
    }
}

/// What a controller's workers run beside them: the resync timer and the key streams.
struct Background {
    resync: Option<Duration>,
    streams: Vec<BoxStream<'static, Request>>,
}

#[allow(clippy::too_many_arguments)]
async fn run_workers<K, T, F, Fut, E>(
    name: String,
    queue: Arc<WorkQueue<Request>>,
    (store, dt): (Store<K>, K::DynamicType),
    ctx: Arc<Context<T>>,
    reconcile: Arc<F>,
    metrics: ControllerMetrics,
    workers: usize,
    background: Background,
    mut stop: watch::Receiver<bool>,
) where
    K: Kind,
    T: Send + Sync + 'static,
    F: Fn(Arc<K>, Arc<Context<T>>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = std::result::Result<Action, E>> + Send + 'static,
    E: std::error::Error + Send + Sync + 'static,
{
    tracing::info!(controller = %name, workers, "starting workers");
    let mut tasks = JoinSet::new();
    for _ in 0..workers {
        tasks.spawn(worker(
            name.clone(),
            queue.clone(),
            (store.clone(), dt.clone()),
            ctx.clone(),
            reconcile.clone(),
            metrics.clone(),
        ));
    }
    // In a JoinSet so that aborting this future (lost leadership) aborts them too.
    let mut background_tasks = JoinSet::new();
    for mut stream in background.streams {
        let queue = queue.clone();
        background_tasks.spawn(async move {
            while let Some(key) = stream.next().await {
                queue.add(key);
            }
        });
    }
    if let Some(period) = background.resync {
        let queue = queue.clone();
        let store = store.clone();
        background_tasks.spawn(async move {
            let mut tick = tokio::time::interval_at(Instant::now() + period, period);
            loop {
                tick.tick().await;
                for obj in store.state() {
                    queue.add(Request::from_object(obj.as_ref()));
                }
            }
        });
    }
    // Until the manager says stop (a closed channel counts as stop).
    while !*stop.borrow_and_update() {
        if stop.changed().await.is_err() {
            break;
        }
    }
    background_tasks.shutdown().await;
    queue.shutdown();
    while tasks.join_next().await.is_some() {}
    tracing::info!(controller = %name, "workers stopped");
}

async fn worker<K, T, F, Fut, E>(
    name: String,
    queue: Arc<WorkQueue<Request>>,
    (store, dt): (Store<K>, K::DynamicType),
    ctx: Arc<Context<T>>,
    reconcile: Arc<F>,
    metrics: ControllerMetrics,
) where
    K: Kind,
    F: Fn(Arc<K>, Arc<Context<T>>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = std::result::Result<Action, E>> + Send + 'static,
    E: std::error::Error + Send + Sync + 'static,
{
    while let Some(key) = queue.get().await {
        let namespace = key.namespace.as_deref().unwrap_or_default();
        let Some(obj) = store.get(&key.object_ref::<K>(&dt)) else {
            // Gone from the cache: nothing to reconcile (finalizers keep objects around
            // while cleanup is due), and its per-object series go.
            queue.forget(&key);
            metrics.objects.forget(namespace, &key.name);
            queue.done(&key);
            continue;
        };
        metrics.active_workers.inc();
        let started = Instant::now();
        let obj_ref = obj.clone();
        let outcome = AssertUnwindSafe(reconcile(obj, ctx.clone()))
            .catch_unwind()
            .await;
        let seconds = started.elapsed().as_secs_f64();
        metrics.time.observe(seconds);
        metrics.active_workers.dec();
        let failed = !matches!(outcome, Ok(Ok(_)));
        metrics
            .objects
            .record(namespace, &key.name, seconds, failed);
        match outcome {
            Ok(Ok(action)) if action.backoff => {
                metrics.requeue.inc();
                queue.add_rate_limited(key.clone());
            }
            Ok(Ok(action)) => {
                queue.forget(&key);
                if let Some(after) = action.requeue_after {
                    metrics.requeue_after.inc();
                    queue.add_after(key.clone(), after);
                } else {
                    metrics.success.inc();
                }
            }
            Ok(Err(error)) if crate::error::is_terminal(&error) => {
                metrics.error.inc();
                metrics.errors.inc();
                metrics.terminal_errors.inc();
                tracing::error!(controller = %name, key = %key, error = %error, "reconcile failed; not retried until the object changes");
                queue.forget(&key);
                if let Err(e) = ctx
                    .recorder
                    .event_with(obj_ref.as_ref(), &dt)
                    .warning()
                    .reason("ReconcileFailed")
                    .note(error.to_string())
                    .publish()
                    .await
                {
                    tracing::warn!(controller = %name, key = %key, error = %e, "cannot record the terminal error as an event");
                }
            }
            Ok(Err(error)) => {
                metrics.error.inc();
                metrics.errors.inc();
                tracing::error!(controller = %name, key = %key, error = %error, "reconcile failed");
                queue.add_rate_limited(key.clone());
            }
            Err(_) => {
                metrics.error.inc();
                metrics.errors.inc();
                tracing::error!(controller = %name, key = %key, "reconcile panicked");
                queue.add_rate_limited(key.clone());
            }
        }
        queue.done(&key);
    }
}
