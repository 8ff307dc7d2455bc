//! The built-in controllers of opkit's embedded control plane.
//!
//! A real cluster has kube-controller-manager (garbage collector, namespace lifecycle, the
//! workload controllers) and kubelets that run pods. Operators depend on all of that: they own
//! children through owner references and expect them collected, they wait for Deployments to
//! become available. This crate provides those controllers, in the spirit of kwok: pods are
//! never run, they are scheduled to one simulated node and become Running and Ready after a
//! configurable delay.
//!
//! The controllers are ordinary kube-rs clients. The control plane hands them a [`kube::Client`]
//! whose transport calls the API server in-process, so every write they make goes through the
//! same path as any client's (registry, admission, store) and is seen by watchers — and the
//! same controllers can run against any API server.
//!
//! Each controller can be switched off ([`ControllerSet`]), like envtest's bare API server.

#![warn(missing_docs)]

mod aggregation;
mod gc;
mod namespace;
mod set;
mod util;
mod workloads;

pub use set::{Controller, ControllerSet, ParseControllersError};
pub use workloads::Clock;

use std::time::Duration;

use tokio::task::JoinSet;

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
    /// No controller at all: a bare API server, as envtest's.
    pub fn bare() -> Settings {
        Settings {
            enabled: ControllerSet::none(),
            ..Settings::default()
        }
    }
}

/// The running controllers; dropping this stops them.
pub struct Running {
    tasks: JoinSet<()>,
}

impl Running {
    /// The number of controller tasks running.
    pub fn len(&self) -> usize {
        self.tasks.len()
    }

    /// Whether no controller runs.
    pub fn is_empty(&self) -> bool {
        self.tasks.is_empty()
    }

    /// Stops every controller and waits for them to end.
    pub async fn shutdown(mut self) {
        self.tasks.shutdown().await;
    }
}

/// Starts the enabled controllers on `client` in the current tokio runtime.
pub fn spawn(client: kube::Client, settings: &Settings) -> Running {
    let mut tasks = JoinSet::new();
    for controller in settings.enabled.iter() {
        let client = client.clone();
        let settings = settings.clone();
        tasks.spawn(async move {
            run(controller, client, settings).await;
        });
    }
    Running { tasks }
}

/// Runs one controller until its task is aborted.
async fn run(controller: Controller, client: kube::Client, settings: Settings) {
    tracing::debug!(controller = controller.name(), "starting");
    match controller {
        Controller::GarbageCollector => gc::run(client, settings).await,
        Controller::Namespace => namespace::run(client, settings).await,
        Controller::ClusterRoleAggregation => aggregation::run(client, settings).await,
        workload => workloads::run(workload, client, settings).await,
    }
}
