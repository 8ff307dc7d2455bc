//! A resize that checks "needed?" against the template it wrote itself (crash). The app asks
//! for volumes of `data.size`; the operator keeps a template (`<app>-template`) and a volume
//! (`<app>-volume`) of that size, and on a change writes the template, then the volume.
//!
//! The bug: whether a resize is needed is read from the template alone. A crash after the
//! template's write and before the volume's leaves the volume at its old size, and the
//! restarted operator, finding the template right, never resizes it. The fix: each object is
//! compared with the spec on its own.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt;
use kube::api::Api;
use serde_json::json;

use crate::common::{config_map, create_if_missing, data, merge};

pub(crate) async fn reconcile(
    api: Api<ConfigMap>,
    app: ConfigMap,
    fixed: bool,
) -> anyhow::Result<()> {
    let name = app.name_any();
    let Some(size) = data(&app, "size") else {
        return Ok(());
    };
    let template = format!("{name}-template");
    let volume = format!("{name}-volume");
    let template_needed = ensure(&api, &template, size).await?;
    if fixed || template_needed {
        ensure(&api, &volume, size).await?;
    }
    Ok(())
}

/// Makes `name` hold `size`; whether it had to write.
async fn ensure(api: &Api<ConfigMap>, name: &str, size: &str) -> anyhow::Result<bool> {
    match api.get_opt(name).await? {
        None => create_if_missing(api, &config_map(name, &[("size", size)], &[])).await,
        Some(cm) if data(&cm, "size") != Some(size) => {
            merge(api, name, json!({"data": {"size": size}})).await?;
            Ok(true)
        }
        Some(_) => Ok(false),
    }
}
