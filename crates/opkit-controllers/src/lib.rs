//! The built-in controllers of opkit's embedded control plane.
//!
//! A real cluster has kube-controller-manager (garbage collector, namespace lifecycle, the
//! workload controllers) and kubelets that run pods. Operators depend on all of that: they own
//! children through owner references and expect them collected, they wait for Deployments to
//! become available. This crate provides those controllers, in the spirit of kwok: pods are
//! never run, they are scheduled to one simulated node and become Running and Ready after a
//! configurable delay.
//!
//! The controllers are written with opkit's own runtime ([`opkit::Controller`] and
//! [`opkit::Manager`]), as any operator would be, and are ordinary kube-rs clients. The control plane hands them a [`kube::Client`]
//! whose transport calls the API server in-process, so every write they make goes through the
//! same path as any client's (registry, admission, store) and is seen by watchers — and the
//! same controllers can run against any API server.
//!
//! Each controller can be switched off ([`ControllerSet`]), like envtest's bare API server.

#![warn(missing_docs)]

mod aggregation;
mod crd;
mod gc;
mod namespace;
mod set;
mod util;
mod workloads;

pub use set::{Controller, ControllerSet, ParseControllersError};
pub use workloads::{Clock, cron};

use std::time::Duration;

use tokio::sync::oneshot;
use tokio::task::{JoinHandle, JoinSet};

/// How the built-in controllers run.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Which controllers run.
    pub enabled: ControllerSet,
    /// How long a scheduled pod stays `Pending`/not ready before it becomes Running and Ready.
    pub pod_ready_delay: Duration,
    /// The simulated node's name.
    pub node_name: String,
    /// How long a run-to-completion pod (a Job's) runs before it terminates, unless its
    /// `sim.opkit.dev/complete-after` annotation says otherwise.
    pub pod_complete_delay: Duration,
    /// The clock CronJobs are scheduled by (tests can run it ahead).
    pub clock: Clock,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            enabled: ControllerSet::all(),
            pod_ready_delay: Duration::from_millis(200),
            node_name: "opkit-node".to_string(),
            pod_complete_delay: Duration::from_secs(1),
            clock: Clock::system(),
        }
    }
}

impl Settings {
    /// No controller but the CRD controller (which every API server runs): a bare API server,
    /// as envtest's.
    pub fn bare() -> Settings {
        Settings {
            enabled: ControllerSet::none(),
            ..Settings::default()
        }
    }
}

/// The running controllers; dropping this stops them.
pub struct Running {
    /// Controllers with their own loops (the garbage collector, the node's heartbeat, …).
    tasks: JoinSet<()>,
    /// The manager running the controllers written with opkit's runtime, and its stop signal.
    manager: Option<(oneshot::Sender<()>, JoinHandle<()>)>,
}

impl Running {
    /// The number of controller tasks running (the manager of the runtime-based controllers
    /// counts as one).
    pub fn len(&self) -> usize {
        self.tasks.len() + usize::from(self.manager.as_ref().is_some_and(|m| !m.1.is_finished()))
    }

    /// Whether no controller runs.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Stops every controller and waits for them to end: the manager's controllers finish the
    /// reconciles in flight (for at most [`SHUTDOWN_TIMEOUT`]), the others stop at once.
    pub async fn shutdown(mut self) {
        if let Some((stop, handle)) = self.manager.take() {
            let _ = stop.send(());
            let _ = handle.await;
        }
        self.tasks.shutdown().await;
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some((_, handle)) = self.manager.take() {
            // Dropping the manager's `Running` inside the task asks it to stop.
            handle.abort();
        }
    }
}

/// How long [`Running::shutdown`] lets reconciles in flight finish.
pub const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(5);

/// The identity the built-in controllers record events under.
const IDENTITY: &str = "opkit-controller-manager";

/// Starts the enabled controllers on `client` in the current tokio runtime.
///
/// Every controller but the garbage collector shares one [`opkit::Manager`] — one watch and cache per kind —
/// which serves no metrics or probes and elects no leader: the controllers run inside the
/// control plane, which is their only replica.
pub fn spawn(client: kube::Client, settings: &Settings) -> Running {
    let mut tasks = JoinSet::new();
    let mut manager = opkit::Manager::builder()
        .identity(IDENTITY)
        .shutdown_timeout(SHUTDOWN_TIMEOUT)
        .build();
    // CRDs are established and cleaned up even in a bare control plane (see `crd`).
    manager.add(crd::controller());
    let mut managed = 1;
    for controller in settings.enabled.iter() {
        tracing::debug!(controller = controller.name(), "starting");
        match controller {
            Controller::GarbageCollector => {
                tasks.spawn(gc::run(client.clone(), settings.clone()));
            }
            Controller::Namespace => {
                manager.add(namespace::controller());
                managed += 1;
            }
            Controller::ClusterRoleAggregation => {
                manager.add(aggregation::controller());
                managed += 1;
            }
            workload => {
                if workload == Controller::Node {
                    tasks.spawn(workloads::node_heartbeat(client.clone(), settings.clone()));
                }
                if let Some(def) = workloads::controller(workload, settings) {
                    manager.add(def);
                    managed += 1;
                }
            }
        }
    }
    let manager = (managed > 0).then(|| {
        let (stop, stopped) = oneshot::channel();
        (stop, tokio::spawn(run_manager(manager, client, stopped)))
    });
    Running { tasks, manager }
}

/// Runs the manager until `stop` fires (then shuts it down gracefully) or it fails.
async fn run_manager(manager: opkit::Manager, client: kube::Client, stop: oneshot::Receiver<()>) {
    let running = match manager.start(client).await {
        Ok(r) => r,
        Err(e) => {
            tracing::error!(error = %e, "the built-in controllers could not start");
            return;
        }
    };
    let handle = running.shutdown_handle();
    let waiting = running.wait();
    tokio::pin!(waiting);
    let result = tokio::select! {
        r = &mut waiting => r,
        _ = stop => {
            handle.shutdown();
            waiting.await
        }
    };
    if let Err(e) = result {
        tracing::error!(error = %e, "the built-in controllers stopped");
    }
}
