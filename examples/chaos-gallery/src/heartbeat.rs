//! A status heartbeat that triggers itself (quiet). The operator reports the config it has
//! seen (`data.config`) in the app's annotation `observed`, with the time of its report in
//! `heartbeat`.
//!
//! The bug: it reports on every event of the app, and its report is itself an event of the
//! app: it writes forever, a load on the API server and on every watcher of the app. The fix:
//! it reports only when what it observed changed.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::runtime::watcher::Event;
use kube::{Client, ResourceExt};
use serde_json::json;

use crate::common::{annotation, api_of, data, merge};

pub(crate) async fn handle(
    client: Client,
    event: Event<ConfigMap>,
    fixed: bool,
) -> anyhow::Result<()> {
    let (Event::Apply(app) | Event::InitApply(app)) = event else {
        return Ok(());
    };
    let config = data(&app, "config").unwrap_or_default();
    if fixed && annotation(&app, "observed") == Some(config) {
        return Ok(());
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_nanos();
    let report =
        json!({"metadata": {"annotations": {"observed": config, "heartbeat": now.to_string()}}});
    merge(&api_of(&client, &app), &app.name_any(), report).await?;
    Ok(())
}
