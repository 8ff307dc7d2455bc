//! A status-phase scale-down (crash). The app asks for `data.replicas` pods (ConfigMaps
//! `<app>-0`, `<app>-1`, …); the operator records how many it runs in the annotation
//! `replicas` and scales down one pod at a time: it deletes the last pod, then records the new
//! count, in two calls.
//!
//! The bug: the delete of a pod that is already gone is an error. A crash between the delete
//! and the record leaves the record one too high; the restarted operator deletes that pod
//! again, gets 404 and stops there, forever. The fix: a pod already gone is the desired state
//! (the delete is idempotent), so the restarted operator goes on to record the count.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams};
use serde_json::json;

use crate::common::{annotation, config_map, create_if_missing, delete_if_present, merge, number};

pub(crate) async fn reconcile(
    api: Api<ConfigMap>,
    app: ConfigMap,
    fixed: bool,
) -> anyhow::Result<()> {
    let name = app.name_any();
    let want = number(&app, "replicas")?;
    let recorded: u32 = annotation(&app, "replicas")
        .map(str::parse::<u32>)
        .transpose()?
        .unwrap_or(0);
    if recorded < want {
        for i in recorded..want {
            create_if_missing(&api, &config_map(&format!("{name}-{i}"), &[], &[])).await?;
        }
    } else if recorded > want {
        let last = format!("{name}-{}", recorded - 1);
        if fixed {
            delete_if_present(&api, &last, &DeleteParams::default()).await?;
        } else {
            api.delete(&last, &DeleteParams::default()).await?;
        }
    } else {
        return Ok(());
    }
    let now = if recorded < want { want } else { recorded - 1 };
    merge(
        &api,
        &name,
        json!({"metadata": {"annotations": {"replicas": now.to_string()}}}),
    )
    .await?;
    Ok(())
}
