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
//!
//! Runs of different custom resources of a kind go on at once up to
//! `--max-concurrent-reconciles` (each in its own ansible-runner process; the operator keeps
//! per custom resource only its last run's generation and due time, forgotten with its data
//! directory when the custom resource is deleted). As upstream, the environment variables
//! `MAX_CONCURRENT_RECONCILES_<KIND>_<GROUP>` and `ANSIBLE_VERBOSITY_<KIND>_<GROUP>` (upper
//! case, dots as underscores) override the flags for one kind.

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
    /// Whether the proxy adds owner references (or owner annotations) to what runs create,
    /// and watches the kinds created (ansible-operator's `--inject-owner-ref`, default true).
    /// Off, creates are forwarded unchanged and no dependent is watched.
    pub inject_owner_ref: bool,
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
            inject_owner_ref: true,
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
    /// A per-kind environment override is not a number the operator can use.
    #[error("environment variable {name}={value:?}: {message}")]
    Environment {
        /// The variable.
        name: String,
        /// Its value.
        value: String,
        /// What is wrong.
        message: &'static str,
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
        Proxy::start(client.clone(), options.inject_owner_ref)
            .await
            .map_err(OperatorError::Proxy)?,
    );
    let mut manager = options.manager.builder().build();
    let metrics = UserMetrics::new(manager.metrics().clone());
    let default_workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    let env = |name: &str| std::env::var(name).ok();
    if !options.inject_owner_ref && watches.iter().any(|w| w.watch_dependent_resources) {
        tracing::warn!(
            "--inject-owner-ref=false: dependent resources are not watched (watchDependentResources is ignored)"
        );
    }
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
        let workers = kind_override(MAX_CONCURRENT_RECONCILES_ENV, &watch, &env, 1..=usize::MAX)?
            .or(options.max_concurrent_reconciles)
            .unwrap_or(default_workers)
            .max(1);
        let verbosity = kind_override(ANSIBLE_VERBOSITY_ENV, &watch, &env, 0..=7)?
            .map_or(options.ansible_verbosity, |v| v as u8);
        let finalizer = watch.finalizer.as_ref().map(|f| f.name.clone());
        let watch_for_predicate = watch.clone();
        tracing::info!(watch = %watch.name(), target = ?watch.target, "watching resource");
        let op = PlaybookOperator::new(
            watch,
            resource.clone(),
            ansible.clone(),
            work_dir.clone(),
            proxy.clone(),
            namespaced,
            options.reconcile_period,
            verbosity,
            metrics.clone(),
        );
        let predicate = predicate(watch_for_predicate, op.forgetter());
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

/// The prefix of the per-kind override of `--max-concurrent-reconciles`.
const MAX_CONCURRENT_RECONCILES_ENV: &str = "MAX_CONCURRENT_RECONCILES";
/// The prefix of the per-kind override of `--ansible-verbosity`.
const ANSIBLE_VERBOSITY_ENV: &str = "ANSIBLE_VERBOSITY";

/// The per-kind variable `<PREFIX>_<KIND>_<GROUP>` (upper case, dots as underscores), as
/// operator-sdk names it.
fn kind_env_name(prefix: &str, watch: &Watch) -> String {
    format!("{prefix}_{}_{}", watch.kind, watch.group.replace('.', "_")).to_uppercase()
}

/// The per-kind override of a number for `watch` (`None` when not set); a value that is not
/// a number in `range` stops the operator.
fn kind_override(
    prefix: &str,
    watch: &Watch,
    env: &dyn Fn(&str) -> Option<String>,
    range: std::ops::RangeInclusive<usize>,
) -> Result<Option<usize>, OperatorError> {
    let name = kind_env_name(prefix, watch);
    let Some(value) = env(&name) else {
        return Ok(None);
    };
    match value.trim().parse::<usize>() {
        Ok(n) if range.contains(&n) => Ok(Some(n)),
        _ => Err(OperatorError::Environment {
            name,
            message: if *range.end() == usize::MAX {
                "must be a whole number of 1 or more"
            } else {
                "must be a whole number from 0 to 7"
            },
            value,
        }),
    }
}

/// The changes of a custom resource that start a run (see the [module docs](self)); a
/// deletion is handed to `forget` (and starts nothing: the object is gone).
fn predicate(
    watch: Watch,
    forget: impl Fn(&DynamicObject) + Send + Sync + 'static,
) -> Predicate<DynamicObject> {
    Predicate::new(move |change: &Change<'_, DynamicObject>| {
        if let Change::Delete(obj) = change {
            forget(obj);
            return false;
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_kind_variables_are_named_as_operator_sdk_names_them_and_checked() {
        let w = crate::watches::memcached_for_test();
        let name = "MAX_CONCURRENT_RECONCILES_MEMCACHED_CACHE_EXAMPLE_COM";
        assert_eq!(kind_env_name(MAX_CONCURRENT_RECONCILES_ENV, &w), name);
        let env = |value: &'static str| move |n: &str| (n == name).then(|| value.to_string());
        let workers = |value| {
            kind_override(
                MAX_CONCURRENT_RECONCILES_ENV,
                &w,
                &env(value),
                1..=usize::MAX,
            )
        };
        assert_eq!(workers("6").expect("a number"), Some(6));
        for bad in ["0", "six", "-1"] {
            let err = workers(bad).expect_err(bad).to_string();
            assert!(err.contains(name) && err.contains("1 or more"), "{err}");
        }
        let unset = kind_override(ANSIBLE_VERBOSITY_ENV, &w, &|_| None, 0..=7).expect("unset");
        assert_eq!(unset, None);
        let verbosity = "ANSIBLE_VERBOSITY_MEMCACHED_CACHE_EXAMPLE_COM";
        let loud = |n: &str| (n == verbosity).then(|| "9".to_string());
        let err = kind_override(ANSIBLE_VERBOSITY_ENV, &w, &loud, 0..=7).expect_err("9");
        assert!(err.to_string().contains("from 0 to 7"), "{err}");
    }
}
