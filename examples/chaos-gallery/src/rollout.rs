//! A config rollout whose "changed?" flag is lost on a crash (crash). The app's `data.config`
//! is written into `<app>-config`; when it changed, the workload `<app>-deploy` is rolled out:
//! its annotation `config` is set to the config it now runs.
//!
//! The bug: "changed?" is what the write of `<app>-config` found, held in memory only. A crash
//! between the two writes loses it: the restarted operator finds the config up to date and
//! never rolls the workload out. The fix: the workload is compared with the spec itself.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt;
use kube::api::Api;
use serde_json::json;

use crate::common::{annotation, config_map, create_if_missing, data, merge};

pub(crate) async fn reconcile(
    api: Api<ConfigMap>,
    app: ConfigMap,
    fixed: bool,
) -> anyhow::Result<()> {
    let name = app.name_any();
    let Some(want) = data(&app, "config") else {
        return Ok(());
    };
    let config = format!("{name}-config");
    let changed = match api.get_opt(&config).await? {
        None => create_if_missing(&api, &config_map(&config, &[("config", want)], &[])).await?,
        Some(cm) if data(&cm, "config") != Some(want) => {
            merge(&api, &config, json!({"data": {"config": want}})).await?;
            true
        }
        Some(_) => false,
    };
    let deploy = format!("{name}-deploy");
    let running = api.get_opt(&deploy).await?;
    let outdated = running.as_ref().map(|d| annotation(d, "config")) != Some(Some(want));
    if changed || (fixed && outdated) {
        match running {
            None => {
                create_if_missing(&api, &config_map(&deploy, &[], &[("config", want)])).await?;
            }
            Some(_) => {
                merge(
                    &api,
                    &deploy,
                    json!({"metadata": {"annotations": {"config": want}}}),
                )
                .await?;
            }
        }
    }
    Ok(())
}
