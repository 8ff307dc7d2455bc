//! TODO(helper): module doc.

use crate::Settings;

/// Runs the controller until aborted.
pub(crate) async fn run(client: kube::Client, settings: Settings) {
    let _ = (client, settings);
    std::future::pending::<()>().await;
}
