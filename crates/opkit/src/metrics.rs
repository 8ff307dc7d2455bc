//! Prometheus metrics under controller-runtime's names.
//!
//! Dashboards and alerts written for controller-runtime operators key on its metric names
//! (`controller_runtime_reconcile_total`, `workqueue_depth`, …), so the runtime records the
//! same names and labels. The registry is `prometheus-client`'s; it is rendered in the
//! Prometheus text format at `/metrics`.
//!
//! `prometheus-client` appends `_total` to counters itself, so counters are registered
//! without it.
//!
//! Next to controller-runtime's per-controller metrics, opkit records reconciles per object
//! (`opkit_object_reconcile_total{controller, group, kind, namespace, name, result}` and
//! `opkit_object_reconcile_time_seconds_total`), which metering's `<kind>-reconciles` reads
//! through Prometheus. Their cardinality is bounded: an object's series go when the controller
//! finds it gone from its cache, and each controller tracks at most [`MAX_TRACKED_OBJECTS`]
//! objects at once (reconciles of others are counted in
//! `opkit_object_reconcile_untracked_total{controller}`).

use std::collections::HashSet;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

type Labels = Vec<(String, String)>;
type Seconds = Counter<f64, AtomicU64>;

/// The most objects one controller has per-object series for at once.
pub const MAX_TRACKED_OBJECTS: usize = 10_000;
type HistogramFamily = Family<Labels, Histogram, fn() -> Histogram>;

/// controller-runtime's reconcile-time buckets (seconds).
const RECONCILE_BUCKETS: [f64; 24] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.5,
    2.0, 3.0, 5.0, 10.0, 20.0, 30.0, 60.0,
];

fn reconcile_histogram() -> Histogram {
    Histogram::new(RECONCILE_BUCKETS)
}

/// Prometheus' default buckets, which controller-runtime's webhook latency uses.
const WEBHOOK_BUCKETS: [f64; 11] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

fn webhook_histogram() -> Histogram {
    Histogram::new(WEBHOOK_BUCKETS)
}

/// The manager's metrics registry and every metric family it records.
#[derive(Clone)]
pub struct Metrics {
    registry: Arc<Mutex<Registry>>,
    reconcile_total: Family<Labels, Counter>,
    reconcile_errors: Family<Labels, Counter>,
    terminal_errors: Family<Labels, Counter>,
    reconcile_time: HistogramFamily,
    active_workers: Family<Labels, Gauge>,
    max_concurrent: Family<Labels, Gauge>,
    queue_depth: Family<Labels, Gauge>,
    queue_adds: Family<Labels, Counter>,
    queue_retries: Family<Labels, Counter>,
    leader: Family<Labels, Gauge>,
    webhook_requests: Family<Labels, Counter>,
    webhook_latency: HistogramFamily,
    webhook_in_flight: Family<Labels, Gauge>,
    object_reconciles: Family<Labels, Counter>,
    object_time: Family<Labels, Seconds>,
    object_untracked: Family<Labels, Counter>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    /// A fresh registry with every runtime metric registered.
    pub fn new() -> Metrics {
        let mut registry = Registry::default();
        let m = Metrics {
            registry: Arc::new(Mutex::new(Registry::default())),
            reconcile_total: Family::default(),
            reconcile_errors: Family::default(),
            terminal_errors: Family::default(),
            reconcile_time: Family::new_with_constructor(reconcile_histogram),
            active_workers: Family::default(),
            max_concurrent: Family::default(),
            queue_depth: Family::default(),
            queue_adds: Family::default(),
            queue_retries: Family::default(),
            leader: Family::default(),
            webhook_requests: Family::default(),
            webhook_latency: Family::new_with_constructor(webhook_histogram),
            webhook_in_flight: Family::default(),
            object_reconciles: Family::default(),
            object_time: Family::default(),
            object_untracked: Family::default(),
        };
        registry.register(
            "controller_runtime_reconcile",
            "Total number of reconciliations per controller",
            m.reconcile_total.clone(),
        );
        registry.register(
            "controller_runtime_reconcile_errors",
            "Total number of reconciliation errors per controller",
            m.reconcile_errors.clone(),
        );
        registry.register(
            "controller_runtime_terminal_reconcile_errors",
            "Total number of terminal reconciliation errors per controller",
            m.terminal_errors.clone(),
        );
        registry.register(
            "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            m.reconcile_time.clone(),
        );
        registry.register(
            "controller_runtime_active_workers",
            "Number of currently used workers per controller",
            m.active_workers.clone(),
        );
        registry.register(
            "controller_runtime_max_concurrent_reconciles",
            "Maximum number of concurrent reconciles per controller",
            m.max_concurrent.clone(),
        );
        registry.register(
            "workqueue_depth",
            "Current depth of workqueue",
            m.queue_depth.clone(),
        );
        registry.register(
            "workqueue_adds",
            "Total number of adds handled by workqueue",
            m.queue_adds.clone(),
        );
        registry.register(
            "workqueue_retries",
            "Total number of retries handled by workqueue",
            m.queue_retries.clone(),
        );
        registry.register(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. 'name' is the string used to identify the lease.",
            m.leader.clone(),
        );
        registry.register(
            "controller_runtime_webhook_requests",
            "Total number of admission requests by HTTP status code.",
            m.webhook_requests.clone(),
        );
        registry.register(
            "controller_runtime_webhook_latency_seconds",
            "Histogram of the latency of processing admission requests",
            m.webhook_latency.clone(),
        );
        registry.register(
            "controller_runtime_webhook_requests_in_flight",
            "Current number of admission requests being served.",
            m.webhook_in_flight.clone(),
        );
        registry.register(
            "opkit_object_reconcile",
            "Total number of reconciliations per object (its controller, group, kind, namespace and name) and result",
            m.object_reconciles.clone(),
        );
        registry.register(
            "opkit_object_reconcile_time_seconds",
            "Total time spent reconciling each object",
            m.object_time.clone(),
        );
        registry.register(
            "opkit_object_reconcile_untracked",
            "Reconciliations of objects beyond the per-object series limit, per controller",
            m.object_untracked.clone(),
        );
        *m.registry.lock().unwrap_or_else(|p| p.into_inner()) = registry;
        m
    }

    /// Registers more metrics (an operator's own) in the same registry, served at `/metrics`.
    pub fn with_registry<R>(&self, f: impl FnOnce(&mut Registry) -> R) -> R {
        let mut registry = self.registry.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut registry)
    }

    /// Renders every metric in the Prometheus text format.
    pub fn render(&self) -> String {
        let registry = self.registry.lock().unwrap_or_else(|p| p.into_inner());
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = encode(&mut out, &registry);
        out
    }

    /// The per-object handles of controller `name` reconciling `group`/`kind` objects.
    fn objects(&self, name: &str, group: &str, kind: &str) -> ObjectMetrics {
        ObjectMetrics {
            labels: [("controller", name), ("group", group), ("kind", kind)]
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .to_vec(),
            reconciles: self.object_reconciles.clone(),
            time: self.object_time.clone(),
            untracked: self
                .object_untracked
                .get_or_create_owned(&vec![("controller".to_string(), name.to_string())]),
            tracked: Arc::default(),
        }
    }

    /// Controller `name`'s handles; it reconciles `group`/`kind` objects.
    pub(crate) fn controller(&self, name: &str, group: &str, kind: &str) -> ControllerMetrics {
        let c = vec![("controller".to_string(), name.to_string())];
        let q = vec![
            ("name".to_string(), name.to_string()),
            ("controller".to_string(), name.to_string()),
        ];
        let result = |r: &str| {
            let mut l = c.clone();
            l.push(("result".to_string(), r.to_string()));
            self.reconcile_total.get_or_create_owned(&l)
        };
        ControllerMetrics {
            success: result("success"),
            error: result("error"),
            requeue: result("requeue"),
            requeue_after: result("requeue_after"),
            errors: self.reconcile_errors.get_or_create_owned(&c),
            terminal_errors: self.terminal_errors.get_or_create_owned(&c),
            time: self.reconcile_time.get_or_create_owned(&c),
            active_workers: self.active_workers.get_or_create_owned(&c),
            max_concurrent: self.max_concurrent.get_or_create_owned(&c),
            objects: self.objects(name, group, kind),
            queue: QueueMetrics {
                depth: self.queue_depth.get_or_create_owned(&q),
                adds: self.queue_adds.get_or_create_owned(&q),
                retries: self.queue_retries.get_or_create_owned(&q),
            },
        }
    }

    /// One webhook path's handles: requests by code, latency, in flight.
    pub(crate) fn webhook(&self, path: &str) -> WebhookMetrics {
        let l = vec![("webhook".to_string(), path.to_string())];
        WebhookMetrics {
            path: path.to_string(),
            requests: self.webhook_requests.clone(),
            latency: self.webhook_latency.get_or_create_owned(&l),
            in_flight: self.webhook_in_flight.get_or_create_owned(&l),
        }
    }

    pub(crate) fn leader(&self, lease: &str) -> Gauge {
        self.leader
            .get_or_create_owned(&vec![("name".to_string(), lease.to_string())])
    }
}

/// One webhook path's metric handles.
#[derive(Clone, Debug)]
pub(crate) struct WebhookMetrics {
    path: String,
    requests: Family<Labels, Counter>,
    pub latency: Histogram,
    pub in_flight: Gauge,
}

impl WebhookMetrics {
    /// Counts a request answered with HTTP status `code`.
    pub fn answered(&self, code: u16) {
        self.requests
            .get_or_create(&vec![
                ("webhook".to_string(), self.path.clone()),
                ("code".to_string(), code.to_string()),
            ])
            .inc();
    }
}

/// One controller's metric handles.
#[derive(Clone, Debug)]
pub(crate) struct ControllerMetrics {
    pub success: Counter,
    pub error: Counter,
    pub requeue: Counter,
    pub requeue_after: Counter,
    pub errors: Counter,
    pub terminal_errors: Counter,
    pub time: Histogram,
    pub active_workers: Gauge,
    pub max_concurrent: Gauge,
    pub objects: ObjectMetrics,
    pub queue: QueueMetrics,
}

/// One controller's per-object metric handles: reconciles by result and time per object.
#[derive(Clone, Debug)]
pub(crate) struct ObjectMetrics {
    /// `controller`, `group`, `kind`.
    labels: Labels,
    reconciles: Family<Labels, Counter>,
    time: Family<Labels, Seconds>,
    untracked: Counter,
    /// The objects with series now: `(namespace, name)`.
    tracked: Arc<Mutex<HashSet<(String, String)>>>,
}

impl ObjectMetrics {
    fn object_labels(&self, namespace: &str, name: &str) -> Labels {
        let mut l = self.labels.clone();
        l.push(("namespace".to_string(), namespace.to_string()));
        l.push(("name".to_string(), name.to_string()));
        l
    }

    /// Records one reconcile of `namespace`/`name` (`""` for cluster-scoped objects) that took
    /// `seconds` and failed or not.
    pub(crate) fn record(&self, namespace: &str, name: &str, seconds: f64, failed: bool) {
        {
            let mut tracked = self.tracked.lock().unwrap_or_else(|p| p.into_inner());
            let key = (namespace.to_string(), name.to_string());
            if !tracked.contains(&key) {
                if tracked.len() >= MAX_TRACKED_OBJECTS {
                    self.untracked.inc();
                    return;
                }
                tracked.insert(key);
            }
        }
        let labels = self.object_labels(namespace, name);
        let mut with_result = labels.clone();
        let result = if failed { "error" } else { "success" };
        with_result.push(("result".to_string(), result.to_string()));
        self.reconciles.get_or_create(&with_result).inc();
        self.time.get_or_create(&labels).inc_by(seconds);
    }

    /// Drops the series of `namespace`/`name`: the object is gone.
    pub(crate) fn forget(&self, namespace: &str, name: &str) {
        let key = (namespace.to_string(), name.to_string());
        if !self
            .tracked
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&key)
        {
            return;
        }
        let labels = self.object_labels(namespace, name);
        for result in ["success", "error"] {
            let mut l = labels.clone();
            l.push(("result".to_string(), result.to_string()));
            self.reconciles.remove(&l);
        }
        self.time.remove(&labels);
    }
}

/// One work queue's metric handles.
#[derive(Clone, Debug, Default)]
pub struct QueueMetrics {
    pub(crate) depth: Gauge,
    pub(crate) adds: Counter,
    pub(crate) retries: Counter,
}
