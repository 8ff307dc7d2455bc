//! Not yet implemented.

use crate::Settings;

pub(crate) async fn run(_client: kube::Client, _settings: Settings) {
    std::future::pending::<()>().await
}
