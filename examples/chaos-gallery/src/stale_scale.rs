//! A destructive scale-down acting on a stale spec (stale). The app asks for `data.replicas`
//! (at most [`MAX`]) pods `<app>-0`, `<app>-1`, …; the operator reads the apps as an informer's
//! cache does (`resourceVersion=0`, any revision will do) and the pods at the latest revision.
//!
//! The bug: it deletes a pod on the strength of that read alone. Restarted against an API
//! server whose cache lags, it sees an old, smaller `replicas` and deletes pods the current
//! spec wants (and creates them again once its view catches up). The fix: a destructive step
//! is confirmed with a read of the latest spec first.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams};

use crate::common::{config_map, create_if_missing, delete_if_present, number};

/// The most pods an app can have.
const MAX: u32 = 3;

pub(crate) async fn reconcile(
    api: Api<ConfigMap>,
    app: ConfigMap,
    fixed: bool,
) -> anyhow::Result<()> {
    let name = app.name_any();
    let want = number(&app, "replicas")?;
    for i in 0..MAX {
        let pod = format!("{name}-{i}");
        let there = api.get_opt(&pod).await?.is_some();
        if i < want && !there {
            create_if_missing(&api, &config_map(&pod, &[], &[])).await?;
        } else if i >= want && there {
            if fixed && i < number(&api.get(&name).await?, "replicas")? {
                continue;
            }
            delete_if_present(&api, &pod, &DeleteParams::default()).await?;
        }
    }
    Ok(())
}
