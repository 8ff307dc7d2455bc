//! The Manager: shared caches, controllers, leader election, metrics and probes.
//!
//! As controller-runtime's manager, it owns what controllers share — one watch and cache per
//! kind ([`crate::informer`]), the client, the metrics registry — and runs the controllers
//! added to it. Caches start at once (so a standby replica is warm and `/readyz` reports
//! synced caches); controllers start only while this replica holds the leader Lease, and
//! once every cache has completed its first list (a cache that cannot list — typically for
//! want of RBAC — keeps them waiting; [`Running::cache_errors`] says why).
//!
//! Shutdown (SIGTERM, Ctrl-C, or [`Running::shutdown`]) stops handing out new keys, lets
//! running reconciles finish for up to `shutdown_timeout` (30 s), then releases the Lease so
//! a standby takes over without waiting for it to expire. Losing the Lease stops controllers
//! at once and makes [`Running::wait`] / [`Manager::run`] return
//! [`Error::LeaderElectionLost`]; the process should exit, as controller-runtime's does.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use k8s_openapi::api::rbac::v1::PolicyRule;
use kube::Client;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::cache::{CacheConfig, CacheOptions};
use crate::controller::{ControllerDef, Prepared, RunEnv};
use crate::error::{Error, Result};
use crate::informer::{Informers, Object};
use crate::leader::{Elector, LeaderElection, default_identity};
use crate::metrics::Metrics;
use crate::rbac::{self, Rules};
use crate::signals::Signals;
use crate::webhook::WebhookServer;

/// How a manager process is set up: what every operator's command line sets (controller-runtime's
/// `--metrics-bind-address`, `--health-probe-bind-address`, `--leader-elect`…). One type, so
/// [`crate::App`], the KUDO manager and the chart operator apply their flags the same way;
/// each keeps its own flag defaults (their peers' differ), and converts into this.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ManagerSettings {
    /// Where `/metrics` is served (off when `None`).
    pub metrics_bind_address: Option<SocketAddr>,
    /// Where `/healthz` and `/readyz` are served (off when `None`).
    pub health_probe_bind_address: Option<SocketAddr>,
    /// Reconcile only while holding this Lease (`None`: no leader election).
    pub leader_election: Option<LeaseSettings>,
    /// Watch only these namespaces (empty: all; blank entries are ignored, as a
    /// `WATCH_NAMESPACE=a,,b` gives them).
    pub namespaces: Vec<String>,
    /// Cache only objects whose labels match, for every kind.
    pub label_selector: Option<String>,
}

/// The leader Lease of [`ManagerSettings`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseSettings {
    /// The Lease's name.
    pub id: String,
    /// Its namespace (default: the pod's own, else `default`; see [`crate::app::own_namespace`]).
    pub namespace: Option<String>,
}

impl ManagerSettings {
    /// A builder with these settings applied.
    pub fn builder(&self) -> ManagerBuilder {
        let mut builder = Manager::builder();
        if let Some(addr) = self.metrics_bind_address {
            builder = builder.metrics_addr(addr);
        }
        if let Some(addr) = self.health_probe_bind_address {
            builder = builder.probe_addr(addr);
        }
        if let Some(lease) = &self.leader_election {
            let namespace = lease
                .namespace
                .clone()
                .unwrap_or_else(crate::app::own_namespace);
            builder = builder.leader_election(LeaderElection::new(lease.id.clone(), namespace));
        }
        let namespaces: Vec<&str> = self
            .namespaces
            .iter()
            .map(|ns| ns.trim())
            .filter(|ns| !ns.is_empty())
            .collect();
        if !namespaces.is_empty() {
            builder = builder.namespaces(namespaces);
        }
        if let Some(selector) = &self.label_selector {
            builder = builder.label_selector(selector);
        }
        builder
    }
}

/// Builds a [`Manager`].
#[derive(Debug, Clone)]
pub struct ManagerBuilder {
    metrics_addr: Option<SocketAddr>,
    probe_addr: Option<SocketAddr>,
    leader_election: Option<LeaderElection>,
    shutdown_timeout: Duration,
    identity: Option<String>,
    caches: CacheConfig,
    webhook: Option<WebhookServer>,
}

impl ManagerBuilder {
    /// Serve admission webhooks over HTTPS (see [`crate::webhook`]); off unless set.
    /// With self-managed certificates, [`Manager::start`] first reads or issues them and
    /// fails if it cannot, so a manager never serves webhooks the API server cannot trust.
    pub fn webhook_server(mut self, server: WebhookServer) -> Self {
        self.webhook = Some(server);
        self
    }

    /// Serve `/metrics` on `addr` (port 0 picks one; see [`Running::metrics_addr`]).
    /// Off unless set; controller-runtime serves on `:8080`.
    pub fn metrics_addr(mut self, addr: SocketAddr) -> Self {
        self.metrics_addr = Some(addr);
        self
    }

    /// Serve `/healthz` and `/readyz` on `addr`. Off unless set; controller-runtime's
    /// scaffolding uses `:8081`. May equal the metrics address: one server then serves all.
    pub fn probe_addr(mut self, addr: SocketAddr) -> Self {
        self.probe_addr = Some(addr);
        self
    }

    /// Run controllers only while holding this Lease.
    pub fn leader_election(mut self, election: LeaderElection) -> Self {
        self.leader_election = Some(election);
        self
    }

    /// How long shutdown waits for running reconciles (default 30 s).
    pub fn shutdown_timeout(mut self, timeout: Duration) -> Self {
        self.shutdown_timeout = timeout;
        self
    }

    /// This replica's identity in leader election and events (default: hostname plus a
    /// random suffix).
    pub fn identity(mut self, identity: impl Into<String>) -> Self {
        self.identity = Some(identity.into());
        self
    }

    /// What the caches hold by default, for every kind (see [`crate::cache`]); replaces the
    /// defaults set before, keeps the per-kind [`cache_for`](Self::cache_for) overrides.
    pub fn cache(mut self, options: CacheOptions) -> Self {
        self.caches.defaults = options;
        self
    }

    /// Watch namespaced kinds only in `namespaces` (one watch per namespace; empty: all).
    /// A namespace-scoped operator runs under Roles in those namespaces instead of a
    /// ClusterRole: see [`Manager::rbac_yaml`]. `--namespace` of [`App`](crate::App).
    pub fn namespaces(mut self, namespaces: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.caches.defaults = self.caches.defaults.namespaces(namespaces);
        self
    }

    /// Cache only objects matching `selector`, of every kind (the objects the operator
    /// creates must carry the labels too, or their kind be exempted with
    /// [`cache_for`](Self::cache_for)). `--label-selector` of [`App`](crate::App).
    pub fn label_selector(mut self, selector: &str) -> Self {
        self.caches.defaults = self.caches.defaults.label_selector(selector);
        self
    }

    /// Cache only objects matching the field `selector`, of every kind.
    pub fn field_selector(mut self, selector: &str) -> Self {
        self.caches.defaults = self.caches.defaults.field_selector(selector);
        self
    }

    /// Overrides the cache defaults for kind `K` (its full and metadata-only caches alike):
    /// what `options` sets wins, what it leaves unset comes from the defaults — as
    /// controller-runtime's `cache.Options.ByObject`.
    pub fn cache_for<K: Object>(mut self, options: CacheOptions) -> Self {
        self.caches.set_for::<K>(options);
        self
    }

    /// The manager.
    pub fn build(self) -> Manager {
        Manager {
            config: self,
            informers: Arc::new(Informers::default()),
            metrics: Metrics::new(),
            controllers: Vec::new(),
            rules: Rules::default(),
        }
    }
}

/// Runs controllers over shared caches; see the [module docs](self).
pub struct Manager {
    config: ManagerBuilder,
    informers: Arc<Informers>,
    metrics: Metrics,
    controllers: Vec<(String, Prepared)>,
    rules: Rules,
}

impl std::fmt::Debug for Manager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Manager")
            .field(
                "controllers",
                &self.controllers.iter().map(|c| &c.0).collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

impl Manager {
    /// A builder with controller-runtime's defaults (no metrics/probe server unless an address
    /// is given, no leader election, 30 s graceful shutdown).
    pub fn builder() -> ManagerBuilder {
        ManagerBuilder {
            metrics_addr: None,
            probe_addr: None,
            leader_election: None,
            shutdown_timeout: Duration::from_secs(30),
            identity: None,
            caches: CacheConfig::default(),
            webhook: None,
        }
    }

    /// Adds a controller; its watches join the shared caches.
    pub fn add(&mut self, controller: ControllerDef) -> &mut Self {
        self.rules.extend(controller.rbac_rules().iter().cloned());
        let name = controller.name().to_string();
        let prepared = controller.register(&self.informers, &self.metrics);
        self.controllers.push((name, prepared));
        self
    }

    /// The metrics registry (register the operator's own metrics here).
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// The caches the added controllers share, filled once the manager starts: for
    /// webhooks that read what the controllers watch (hooks must not call the API).
    pub fn caches(&self) -> crate::Caches {
        crate::Caches::new(self.informers.clone())
    }

    /// Serve admission webhooks (see [`ManagerBuilder::webhook_server`]); for a server whose
    /// hooks need [`Manager::caches`], known only once the controllers are added.
    pub fn set_webhook_server(&mut self, server: WebhookServer) -> &mut Self {
        self.config.webhook = Some(server);
        self
    }

    /// The rules of the controllers and the events they record.
    fn own_rules(&self) -> Rules {
        let mut rules = self.rules.clone();
        rules.add(rbac::rule("events.k8s.io", "events", &["create", "patch"]));
        if let Some(sm) = self.config.webhook.as_ref().and_then(|w| w.self_managed()) {
            rules.add(rbac::rule("", "secrets", &["get", "create", "update"]));
            if !sm.mutating.is_empty() {
                rules.add(rbac::rule(
                    "admissionregistration.k8s.io",
                    "mutatingwebhookconfigurations",
                    &["get", "patch"],
                ));
            }
            if !sm.validating.is_empty() {
                rules.add(rbac::rule(
                    "admissionregistration.k8s.io",
                    "validatingwebhookconfigurations",
                    &["get", "patch"],
                ));
            }
            if !sm.crds.is_empty() {
                rules.add(rbac::rule(
                    "apiextensions.k8s.io",
                    "customresourcedefinitions",
                    &["get", "patch"],
                ));
            }
        }
        rules
    }

    /// Every RBAC rule the manager and its controllers need, merged per group and resource:
    /// the controllers' rules, `events.k8s.io` events (`create`, `patch`), with leader
    /// election `coordination.k8s.io` leases (`get`, `create`, `update`), and with
    /// self-managed webhook certificates `secrets` (`get`, `create`, `update`) and the
    /// webhook configurations and CRDs it publishes the CA into (`get`, `patch`).
    pub fn rbac_rules(&self) -> Vec<PolicyRule> {
        let mut rules = self.own_rules();
        if self.config.leader_election.is_some() {
            rules.add(rbac::lease_rule());
        }
        rules.to_vec()
    }

    /// [`Manager::rbac_rules`] as a ClusterRole named `name`, in YAML.
    pub fn cluster_role_yaml(&self, name: &str) -> Result<String> {
        rbac::cluster_role_yaml(name, self.rbac_rules())
    }

    /// The RBAC objects the operator needs, as multi-document YAML for `kubectl apply -f -`,
    /// all named `name`: the ClusterRole of [`cluster_role_yaml`](Self::cluster_role_yaml)
    /// when the caches watch the whole cluster; when they are scoped to namespaces, a Role in
    /// each namespace with the rules on the kinds watched there, a Role in the Lease's
    /// namespace for leader election, and a ClusterRole only if rules on cluster-scoped
    /// kinds remain. Bind each with a RoleBinding (ClusterRoleBinding) of the same name.
    /// See [`crate::rbac`] for how rules are placed.
    pub fn rbac_yaml(&self, name: &str) -> Result<String> {
        if !self.config.caches.is_scoped() {
            return self.cluster_role_yaml(name);
        }
        let lease = self
            .config
            .leader_election
            .as_ref()
            .map(|le| le.namespace.as_str());
        rbac::scoped_roles(
            self.own_rules(),
            lease,
            &self.informers.watched(),
            &self.config.caches,
        )
        .yaml(name)
    }

    /// Starts caches, probes and metrics, and (once leading) the controllers; returns at once.
    pub async fn start(self, client: Client) -> Result<Running> {
        if let Some(le) = &self.config.leader_election {
            le.validate()?;
        }
        let identity = self
            .config
            .identity
            .clone()
            .unwrap_or_else(default_identity);
        let shared = Arc::new(Shared {
            informers: self.informers.clone(),
            metrics: self.metrics.clone(),
            leading: AtomicBool::new(false),
        });
        let mut servers = JoinSet::new();
        let (metrics_addr, probe_addr) = serve(
            &mut servers,
            shared.clone(),
            self.config.metrics_addr,
            self.config.probe_addr,
        )
        .await?;
        let webhook_addr = match self.config.webhook.clone() {
            Some(server) => Some(
                crate::webhook::server::start(server, client.clone(), &self.metrics, &mut servers)
                    .await?,
            ),
            None => None,
        };
        let mut informer_tasks = JoinSet::new();
        for watch in self.informers.start(&client, &self.config.caches) {
            informer_tasks.spawn(watch);
        }
        let (stop, stopped) = watch::channel(false);
        let supervisor = tokio::spawn(supervise(
            shared.clone(),
            self.controllers.into_iter().map(|c| c.1).collect(),
            client,
            identity.clone(),
            self.config.leader_election.clone(),
            self.config.shutdown_timeout,
            stopped,
            informer_tasks,
            servers,
        ));
        Ok(Running {
            shared,
            stop,
            supervisor: Some(supervisor),
            metrics_addr,
            probe_addr,
            webhook_addr,
            identity,
        })
    }

    /// Starts, then runs until SIGTERM or Ctrl-C (graceful shutdown) or until the Lease is
    /// lost (an error). A second signal during the graceful shutdown exits the process with
    /// status 1 at once, as controller-runtime's signal handler does.
    pub async fn run(self, client: Client) -> Result<()> {
        let mut signals = Signals::install().map_err(Error::Signals)?;
        let mut running = self.start(client).await?;
        tokio::select! {
            r = running.wait_ref() => return r,
            _ = signals.recv() => tracing::info!("shutdown signal received; draining"),
        }
        let _ = running.stop.send(true);
        tokio::select! {
            r = running.wait_ref() => r,
            _ = signals.recv() => {
                tracing::warn!("second shutdown signal; exiting at once");
                std::process::exit(1);
            }
        }
    }
}

struct Shared {
    informers: Arc<Informers>,
    metrics: Metrics,
    leading: AtomicBool,
}

/// A started manager.
pub struct Running {
    shared: Arc<Shared>,
    stop: watch::Sender<bool>,
    supervisor: Option<tokio::task::JoinHandle<Result<()>>>,
    metrics_addr: Option<SocketAddr>,
    probe_addr: Option<SocketAddr>,
    webhook_addr: Option<SocketAddr>,
    identity: String,
}

impl std::fmt::Debug for Running {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Running")
            .field("identity", &self.identity)
            .field("metrics_addr", &self.metrics_addr)
            .field("probe_addr", &self.probe_addr)
            .finish_non_exhaustive()
    }
}

impl Running {
    /// Where `/metrics` is served.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics_addr
    }

    /// Where `/healthz` and `/readyz` are served.
    pub fn probe_addr(&self) -> Option<SocketAddr> {
        self.probe_addr
    }

    /// Where webhooks are served (HTTPS), if a webhook server is configured.
    pub fn webhook_addr(&self) -> Option<SocketAddr> {
        self.webhook_addr
    }

    /// This replica's identity.
    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// Whether this replica runs its controllers (always true without leader election, once
    /// started).
    pub fn is_leader(&self) -> bool {
        self.shared.leading.load(Ordering::SeqCst)
    }

    /// Whether every cache completed its initial list.
    pub fn caches_synced(&self) -> bool {
        self.shared.informers.synced()
    }

    /// How many watch streams the manager opened: one per kind, however many controllers
    /// use it (one per namespace for a kind watched in several namespaces).
    pub fn watch_count(&self) -> usize {
        self.shared.informers.watches_started()
    }

    /// The kinds watched (`Kind` or `Kind.group`).
    pub fn watched_kinds(&self) -> Vec<String> {
        self.shared.informers.kinds()
    }

    /// Why caches are not synced: the last list or watch error of each kind that has one
    /// (`Kind.group: error`), until that kind lists successfully again. Failed watches are
    /// retried with backoff for ever, as client-go's reflector does, so a manager missing
    /// RBAC permissions stays unready instead of exiting; this says why (it is logged too).
    pub fn cache_errors(&self) -> Vec<String> {
        self.shared.informers.errors()
    }

    /// The metrics registry.
    pub fn metrics(&self) -> &Metrics {
        &self.shared.metrics
    }

    /// A handle that requests a graceful shutdown from anywhere.
    pub fn shutdown_handle(&self) -> ShutdownHandle {
        ShutdownHandle(self.stop.clone())
    }

    async fn wait_ref(&mut self) -> Result<()> {
        match self.supervisor.as_mut() {
            Some(handle) => {
                let r = handle.await.unwrap_or(Ok(()));
                self.supervisor = None;
                r
            }
            None => Ok(()),
        }
    }

    /// Waits until the manager stops: after a [`ShutdownHandle::shutdown`], or with
    /// [`Error::LeaderElectionLost`].
    pub async fn wait(mut self) -> Result<()> {
        self.wait_ref().await
    }

    /// Stops gracefully (see the [module docs](self)) and waits until done.
    pub async fn shutdown(mut self) -> Result<()> {
        let _ = self.stop.send(true);
        self.wait_ref().await
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
    }
}

/// Requests a graceful shutdown of a [`Running`] manager.
#[derive(Debug, Clone)]
pub struct ShutdownHandle(watch::Sender<bool>);

impl ShutdownHandle {
    /// Requests the shutdown (returns at once).
    pub fn shutdown(&self) {
        let _ = self.0.send(true);
    }
}

#[allow(clippy::too_many_arguments)]
async fn supervise(
    shared: Arc<Shared>,
    controllers: Vec<Prepared>,
    client: Client,
    identity: String,
    election: Option<LeaderElection>,
    shutdown_timeout: Duration,
    mut stopped: watch::Receiver<bool>,
    mut informers: JoinSet<()>,
    mut servers: JoinSet<()>,
) -> Result<()> {
    let mut elector = election.as_ref().map(|e| {
        let gauge = shared.metrics.leader(&e.lease_name);
        Elector::new(client.clone(), e.clone(), identity.clone(), gauge)
    });
    let mut result = Ok(());
    let acquired = match elector.as_mut() {
        Some(el) => el.acquire(&mut stopped).await,
        None => true,
    };
    if acquired {
        shared.leading.store(true, Ordering::SeqCst);
        let (ctrl_stop, ctrl_stopped) = watch::channel(false);
        let mut workers = JoinSet::new();
        for c in controllers {
            let informers = shared.informers.clone();
            let mut stop = ctrl_stopped.clone();
            let env = RunEnv {
                client: client.clone(),
                identity: identity.clone(),
                stop: ctrl_stopped.clone(),
            };
            workers.spawn(async move {
                if informers.wait_synced(&mut stop).await {
                    (c.start)(env).await;
                }
            });
        }
        // Keep renewing (also while draining) in a task that hands the elector back.
        let (hold_stop, mut hold_stopped) = watch::channel(false);
        let (lost_tx, mut lost_rx) = tokio::sync::oneshot::channel::<()>();
        let holder = elector.take().map(|mut el| {
            tokio::spawn(async move {
                if el.hold(&mut hold_stopped).await.is_err() {
                    let _ = lost_tx.send(());
                }
                el
            })
        });
        let lost = tokio::select! {
            _ = wait_stop(&mut stopped) => false,
            r = &mut lost_rx, if holder.is_some() => r.is_ok(),
        };
        let _ = ctrl_stop.send(true);
        if lost {
            tracing::error!("leader election lost; stopping controllers");
            workers.shutdown().await;
            let name = election
                .as_ref()
                .map(|e| e.lease_name.clone())
                .unwrap_or_default();
            result = Err(Error::LeaderElectionLost(name));
        } else {
            let drained = tokio::time::timeout(shutdown_timeout, async {
                while workers.join_next().await.is_some() {}
            })
            .await;
            if drained.is_err() {
                tracing::warn!(
                    ?shutdown_timeout,
                    "reconciles still running at the shutdown timeout; aborting them"
                );
                workers.shutdown().await;
            }
        }
        shared.leading.store(false, Ordering::SeqCst);
        let _ = hold_stop.send(true);
        if let Some(holder) = holder
            && let Ok(mut el) = holder.await
            && !lost
        {
            el.release().await;
        }
    }
    informers.shutdown().await;
    shared.informers.stop().await;
    servers.shutdown().await;
    result
}

async fn wait_stop(stopped: &mut watch::Receiver<bool>) {
    while !*stopped.borrow_and_update() {
        if stopped.changed().await.is_err() {
            return;
        }
    }
}

async fn bind(addr: SocketAddr) -> Result<TcpListener> {
    TcpListener::bind(addr)
        .await
        .map_err(|source| Error::Bind { addr, source })
}

async fn serve(
    servers: &mut JoinSet<()>,
    shared: Arc<Shared>,
    metrics: Option<SocketAddr>,
    probes: Option<SocketAddr>,
) -> Result<(Option<SocketAddr>, Option<SocketAddr>)> {
    let metrics_routes = || Router::new().route("/metrics", get(metrics_handler));
    let probe_routes = || {
        Router::new()
            .route("/healthz", get(healthz))
            .route("/readyz", get(readyz))
    };
    let mut spawn = |listener: TcpListener, router: Router<Arc<Shared>>| {
        let app = router.with_state(shared.clone());
        servers.spawn(async move {
            if let Err(e) = axum::serve(listener, app).await {
                tracing::warn!(error = %e, "metrics/probe server stopped");
            }
        });
    };
    match (metrics, probes) {
        (Some(m), Some(p)) if m == p && m.port() != 0 => {
            let l = bind(m).await?;
            let addr = l
                .local_addr()
                .map_err(|source| Error::Bind { addr: m, source })?;
            spawn(l, metrics_routes().merge(probe_routes()));
            Ok((Some(addr), Some(addr)))
        }
        (m, p) => {
            let mut out = (None, None);
            if let Some(m) = m {
                let l = bind(m).await?;
                out.0 = Some(
                    l.local_addr()
                        .map_err(|source| Error::Bind { addr: m, source })?,
                );
                spawn(l, metrics_routes());
            }
            if let Some(p) = p {
                let l = bind(p).await?;
                out.1 = Some(
                    l.local_addr()
                        .map_err(|source| Error::Bind { addr: p, source })?,
                );
                spawn(l, probe_routes());
            }
            Ok(out)
        }
    }
}

async fn metrics_handler(State(shared): State<Arc<Shared>>) -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        shared.metrics.render(),
    )
}

async fn healthz() -> impl IntoResponse {
    (StatusCode::OK, "ok")
}

async fn readyz(State(shared): State<Arc<Shared>>) -> impl IntoResponse {
    if shared.informers.synced() {
        (StatusCode::OK, "ok")
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "caches not synced")
    }
}
