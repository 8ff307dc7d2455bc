//! Simulated workloads: the node and kubelet, and the workload controllers.

use crate::{Controller, Settings};

/// Runs one workload controller until aborted.
pub(crate) async fn run(controller: Controller, client: kube::Client, settings: Settings) {
    let _ = (controller, client, settings);
    std::future::pending::<()>().await;
}
