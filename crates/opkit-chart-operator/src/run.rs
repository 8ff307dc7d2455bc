//! The generic chart operator's entry point: `watches.yaml` in, a running opkit manager out.
//!
//! Each entry of `watches.yaml` becomes one controller (named `<kind>-controller`, as
//! operator-sdk names it) over the custom resource's kind, learned at start from the
//! cluster's discovery (its CRD must be installed), with the entry's chart loaded once. The
//! manager gives them what every opkit operator has: shared caches, per-key serialization and
//! backoff, leader election on a Lease, Prometheus metrics under controller-runtime's names,
//! `/healthz` and `/readyz`, and graceful shutdown on SIGTERM.

use std::path::PathBuf;
use std::time::Duration;

use kube::Client;
use kube::api::{DynamicObject, GroupVersionKind};
use kube::discovery::Scope;
use opkit::predicate::Change;
use opkit::{Controller, Manager, ManagerSettings, Predicate, Running};
use opkit_chart::Chart;

use crate::Releases;
use crate::operator::{ChartOperator, UNINSTALL_FINALIZER, reconcile, selected};
use crate::watches::{self, Watch, WatchesError};

/// How the operator runs (helm-operator's flags).
#[derive(Debug, Clone)]
pub struct OperatorOptions {
    /// `watches.yaml` (default `./watches.yaml`).
    pub watches_file: PathBuf,
    /// Metrics, probes, leader election (the Lease `opkit-helm-operator` when on) and the
    /// namespaces custom resources are watched in (`WATCH_NAMESPACE`).
    pub manager: ManagerSettings,
    /// Custom resources reconciled at once per kind, unless `watches.yaml` says (default:
    /// the number of CPUs, as operator-sdk).
    pub max_concurrent_reconciles: Option<usize>,
    /// How often every custom resource is reconciled, unless `watches.yaml` or the
    /// `reconcile-period` annotation says (operator-sdk's default: 1 minute; `None`: only
    /// on changes).
    pub reconcile_period: Option<Duration>,
    /// Revisions kept per release (default 10; 0: all).
    pub max_history: usize,
    /// The field manager of the operator's server-side applies.
    pub field_manager: String,
}

impl Default for OperatorOptions {
    fn default() -> Self {
        OperatorOptions {
            watches_file: PathBuf::from("watches.yaml"),
            manager: ManagerSettings::default(),
            max_concurrent_reconciles: None,
            reconcile_period: Some(Duration::from_secs(60)),
            max_history: 10,
            field_manager: "helm".into(),
        }
    }
}

/// Why the operator cannot start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum OperatorError {
    /// `watches.yaml` is unusable.
    #[error(transparent)]
    Watches(#[from] WatchesError),
    /// A chart of `watches.yaml` does not load.
    #[error("watch {watch}: chart {chart}: {message}")]
    Chart {
        /// The entry.
        watch: String,
        /// The chart path.
        chart: PathBuf,
        /// Why.
        message: String,
    },
    /// The cluster does not serve a kind of `watches.yaml` (its CRD is not installed).
    #[error("watch {watch}: the cluster does not serve it (is its CRD installed?): {source}")]
    UnknownKind {
        /// The entry.
        watch: String,
        /// The discovery error.
        #[source]
        source: kube::Error,
    },
    /// The runtime failed (binding a port, leader election, …).
    #[error(transparent)]
    Runtime(#[from] opkit::Error),
}

/// Loads `watches.yaml` and its charts, discovers the kinds, and builds the manager.
async fn manager(client: &Client, options: &OperatorOptions) -> Result<Manager, OperatorError> {
    let watches = watches::load(&options.watches_file)?;
    let mut manager = options.manager.builder().build();
    let default_workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    // One release engine for every kind: the cluster's discovery is cached once.
    let releases = Releases::new(client.clone(), "default")
        .max_history(options.max_history)
        .field_manager(&options.field_manager);
    for watch in watches {
        let def = controller(client, options, watch, &releases, default_workers).await?;
        manager.add(def);
    }
    Ok(manager)
}

/// The controller of one entry of `watches.yaml`.
async fn controller(
    client: &Client,
    options: &OperatorOptions,
    watch: Watch,
    releases: &Releases,
    default_workers: usize,
) -> Result<opkit::ControllerDef, OperatorError> {
    let chart = Chart::load(&watch.chart).map_err(|e| OperatorError::Chart {
        watch: watch.name(),
        chart: watch.chart.clone(),
        message: e.to_string(),
    })?;
    let gvk = GroupVersionKind::gvk(&watch.group, &watch.version, &watch.kind);
    let (resource, caps) = kube::discovery::pinned_kind(client, &gvk)
        .await
        .map_err(|source| OperatorError::UnknownKind {
            watch: watch.name(),
            source,
        })?;
    let namespaced = caps.scope == Scope::Namespaced;
    let name = format!("{}-controller", watch.kind.to_lowercase());
    let workers = watch
        .max_concurrent_reconciles
        .or(options.max_concurrent_reconciles)
        .unwrap_or(default_workers);
    let selector = watch.clone();
    tracing::info!(watch = %watch.name(), chart = %watch.chart.display(), "watching resource");
    let op = ChartOperator::new(
        watch,
        chart,
        resource.clone(),
        options.reconcile_period,
        releases.clone(),
    );
    Ok(Controller::dynamic(name, resource, namespaced)
        .finalizer(UNINSTALL_FINALIZER)
        .with_predicate(Predicate::new(move |change: &Change<'_, DynamicObject>| {
            selected(&selector, change.object())
        }))
        .max_concurrent_reconciles(workers)
        .build(reconcile, op))
}

/// Starts the operator described by `options` on `client` and returns at once (see
/// [`Running`]); [`run`] is this plus waiting for SIGTERM.
pub async fn start(client: Client, options: OperatorOptions) -> Result<Running, OperatorError> {
    let manager = manager(&client, &options).await?;
    Ok(manager.start(client).await?)
}

/// Runs the operator described by `options` until SIGINT or SIGTERM (graceful shutdown) or
/// until the leader Lease is lost (an error).
pub async fn run(client: Client, options: OperatorOptions) -> Result<(), OperatorError> {
    let manager = manager(&client, &options).await?;
    Ok(manager.run(client).await?)
}
