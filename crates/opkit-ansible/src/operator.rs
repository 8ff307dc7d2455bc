//! The generic Ansible operator's entry point: `watches.yaml` in, a running opkit manager out.
//!
//! Each entry of `watches.yaml` becomes one controller (`<kind>-controller`, as operator-sdk
//! names it) over the custom resource's kind, learned at start from the cluster's discovery
//! (its CRD must be installed). The Ansible venv is checked and the `operator_sdk.util`
//! collection written out once, before anything runs. Like upstream, only changes that
//! matter start a run: a new generation (spec changes, deletion), finalizer and label
//! changes, and with `watchAnnotationsChanges` annotation changes — status writes (the
//! operator's own and the role's) do not. The manager gives every controller what each
//! opkit operator has: shared caches, per-key serialization and backoff, leader election,
//! Prometheus metrics under controller-runtime's names, `/healthz` and `/readyz`, and
//! graceful shutdown on SIGTERM (a run still going is killed with its reconcile).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use kube::Client;
use kube::api::{DynamicObject, GroupVersionKind};
use kube::discovery::Scope;
use opkit::predicate::Change;
use opkit::{Controller, Manager, ManagerSettings, Predicate, Running};

use crate::metrics::UserMetrics;
use crate::proxy::Proxy;
use crate::reconcile::{PlaybookOperator, reconcile, selected};
use crate::runner::{Ansible, RunnerError, default_venv};
use crate::watches::{self, Watch, WatchesError};

/// How the operator runs (ansible-operator's flags).
#[derive(Debug, Clone)]
pub struct OperatorOptions {
    /// `watches.yaml` (default `./watches.yaml`).
    pub watches_file: PathBuf,
    /// Metrics, probes, leader election and the namespaces watched (`WATCH_NAMESPACE`).
    pub manager: ManagerSettings,
    /// Custom resources reconciled at once per kind (default: the number of CPUs).
    pub max_concurrent_reconciles: Option<usize>,
    /// How often every custom resource runs again when neither `watches.yaml` nor its
    /// annotation says (upstream's default: 10 hours; `None`: only on changes).
    pub reconcile_period: Option<Duration>,
    /// Ansible's verbosity (`-v` count; upstream's default 2).
    pub ansible_verbosity: u8,
    /// The Ansible virtual environment (default: [`default_venv`]).
    pub venv: PathBuf,
    /// Where runs keep their data and artifacts (default: a directory of this process under
    /// the system's temporary directory).
    pub work_dir: Option<PathBuf>,
}

impl Default for OperatorOptions {
    fn default() -> Self {
        OperatorOptions {
            watches_file: PathBuf::from("watches.yaml"),
            manager: ManagerSettings::default(),
            max_concurrent_reconciles: None,
            reconcile_period: Some(Duration::from_secs(10 * 3600)),
            ansible_verbosity: 2,
            venv: default_venv(),
            work_dir: None,
        }
    }
}

/// Why the operator cannot start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum OperatorError {
    /// `watches.yaml` is unusable.
    #[error(transparent)]
    Watches(#[from] WatchesError),
    /// Ansible is not installed where the operator looks.
    #[error(transparent)]
    Ansible(#[from] RunnerError),
    /// The work directory or the collection could not be written.
    #[error("preparing the work directory {path}: {source}")]
    WorkDir {
        /// The directory.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
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
    /// The owner-reference proxy could not listen.
    #[error("starting the owner-reference proxy: {0}")]
    Proxy(#[source] std::io::Error),
    /// The runtime failed (binding a port, leader election, …).
    #[error(transparent)]
    Runtime(#[from] opkit::Error),
}

/// Loads `watches.yaml`, checks Ansible, discovers the kinds, and builds the manager.
async fn manager(client: &Client, options: &OperatorOptions) -> Result<Manager, OperatorError> {
    let watches = watches::load(&options.watches_file)?;
    let work_dir = options.work_dir.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("opkit-ansible-operator-{}", std::process::id()))
    });
    let collections =
        crate::collection::install(&work_dir.join("collections")).map_err(|source| {
            OperatorError::WorkDir {
                path: work_dir.clone(),
                source,
            }
        })?;
    let ansible = Ansible::new(&options.venv, &[collections])?;
    let proxy = Arc::new(
        Proxy::start(client.clone())
            .await
            .map_err(OperatorError::Proxy)?,
    );
    let mut manager = options.manager.builder().build();
    let metrics = UserMetrics::new(manager.metrics().clone());
    let default_workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    for watch in watches {
        let gvk = GroupVersionKind::gvk(&watch.group, &watch.version, &watch.kind);
        let (resource, caps) =
            kube::discovery::pinned_kind(client, &gvk)
                .await
                .map_err(|source| OperatorError::UnknownKind {
                    watch: watch.name(),
                    source,
                })?;
        let namespaced = caps.scope == Scope::Namespaced;
        let name = format!("{}-controller", watch.kind.to_lowercase());
        let workers = options.max_concurrent_reconciles.unwrap_or(default_workers);
        let predicate = predicate(watch.clone());
        let finalizer = watch.finalizer.as_ref().map(|f| f.name.clone());
        tracing::info!(watch = %watch.name(), target = ?watch.target, "watching resource");
        let op = PlaybookOperator::new(
            watch,
            resource.clone(),
            ansible.clone(),
            work_dir.clone(),
            proxy.clone(),
            namespaced,
            options.reconcile_period,
            options.ansible_verbosity,
            metrics.clone(),
        );
        let mut controller = Controller::dynamic(name, resource, namespaced)
            .with_predicate(predicate)
            .max_concurrent_reconciles(workers);
        if let Some(finalizer) = finalizer {
            controller = controller.finalizer(finalizer);
        }
        manager.add(controller.build(reconcile, op));
    }
    Ok(manager)
}

/// The changes of a custom resource that start a run (see the [module docs](self)).
fn predicate(watch: Watch) -> Predicate<DynamicObject> {
    Predicate::new(move |change: &Change<'_, DynamicObject>| {
        if !selected(&watch, change.object()) {
            return false;
        }
        let Change::Update { old, new } = change else {
            return true;
        };
        let (o, n) = (&old.metadata, &new.metadata);
        o.generation != n.generation
            || n.generation.is_none()
            || o.finalizers != n.finalizers
            || o.deletion_timestamp != n.deletion_timestamp
            || o.labels != n.labels
            || (watch.watch_annotations_changes && o.annotations != n.annotations)
    })
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
