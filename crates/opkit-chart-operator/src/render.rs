//! Rendering one revision of a release, as `helm install`/`helm upgrade` render it before
//! they touch the cluster: the name checked, the values prepared (dependencies, coalescing,
//! `values.schema.json`), `.Release` with this revision's number and install/upgrade flags,
//! `.Capabilities` from the cluster, a live `lookup`, NOTES.txt set aside, and manifests and
//! hooks in Helm's install order.
//!
//! Rendering is synchronous, so it runs on a blocking thread; `lookup` answers there with a
//! blocking GET or LIST through the runtime's handle.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use kube::api::{Api, ListParams};
use opkit_chart::{
    Capabilities, Chart, Engine, LookupFn, PrepareError, ReleaseOptions, RenderContext,
    TemplateError, render_parts, validate_release_name,
};
use opkit_template::Value;

use crate::error::ActionError;
use crate::objects::Cluster;

/// What a revision renders to.
#[derive(Clone, Debug)]
pub(crate) struct Rendered {
    /// `---\n# Source: NAME\nDOC\n` for each manifest, in install order.
    pub(crate) manifest: String,
    /// The hooks, in install order.
    pub(crate) hooks: Vec<opkit_chart::Hook>,
    /// The top chart's NOTES.txt.
    pub(crate) notes: String,
}

/// The release a render is for.
pub(crate) struct Target<'a> {
    pub(crate) name: &'a str,
    pub(crate) namespace: &'a str,
    pub(crate) revision: u32,
    pub(crate) is_upgrade: bool,
}

/// Renders `chart` with the user's `values` for `target`, on a blocking thread.
pub(crate) async fn render(
    cluster: &Cluster,
    chart: &Chart,
    values: &Value,
    target: Target<'_>,
    capabilities: Capabilities,
) -> Result<Rendered, ActionError> {
    validate_release_name(target.name).map_err(|e| ActionError::InvalidName(e.to_string()))?;
    let ctx = RenderContext {
        release: ReleaseOptions {
            name: target.name.to_string(),
            namespace: target.namespace.to_string(),
            revision: target.revision as i64,
            is_install: !target.is_upgrade,
            is_upgrade: target.is_upgrade,
        },
        capabilities,
    };
    // A lookup the cluster failed to answer fails the render, but unlike a template error
    // it is worth retrying: it is remembered to tell the two apart.
    let lookup_failed: Arc<Mutex<bool>> = Arc::default();
    let engine = Engine::new().with_lookup(lookup_fn(cluster.clone(), lookup_failed.clone()));
    let mut chart = chart.clone();
    let values = values.clone();
    tokio::task::spawn_blocking(move || {
        let values = opkit_chart::prepare(&mut chart, &values).map_err(|e| match e {
            PrepareError::Schema(_) => ActionError::Schema(e.to_string()),
            other => ActionError::Values(other.to_string()),
        })?;
        let (hooks, manifests, notes) =
            render_parts(&engine, &chart, &values, &ctx).map_err(|e| match e {
                TemplateError::Render(text) | TemplateError::Other(text) => {
                    if lookup_failed.lock().is_ok_and(|f| *f) {
                        ActionError::Lookup(text)
                    } else {
                        ActionError::Render(text)
                    }
                }
            })?;
        let manifest = manifests
            .iter()
            .map(|m| format!("---\n# Source: {}\n{}\n", m.name, m.content))
            .collect();
        Ok(Rendered {
            manifest,
            hooks,
            notes,
        })
    })
    .await
    .map_err(|e| ActionError::Task(e.to_string()))?
}

/// Helm's `lookup apiVersion kind namespace name`: the object, or with an empty name the
/// list; an empty map when nothing is found.
fn lookup_fn(cluster: Cluster, failed: Arc<Mutex<bool>>) -> Arc<LookupFn> {
    let handle = tokio::runtime::Handle::current();
    Arc::new(move |api_version, kind, namespace, name| {
        let answer = handle.block_on(lookup(&cluster, api_version, kind, namespace, name));
        if answer.is_err()
            && let Ok(mut f) = failed.lock()
        {
            *f = true;
        }
        answer
    })
}

async fn lookup(
    cluster: &Cluster,
    api_version: &str,
    kind: &str,
    namespace: &str,
    name: &str,
) -> Result<Value, String> {
    let (ar, namespaced) = cluster
        .resolve(api_version, kind)
        .await
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("no matches for kind {kind:?} in version {api_version:?}"))?;
    let api: Api<kube::api::DynamicObject> = if namespaced && !namespace.is_empty() {
        Api::namespaced_with(cluster.client.clone(), namespace, &ar)
    } else {
        Api::all_with(cluster.client.clone(), &ar)
    };
    let json = if name.is_empty() {
        let list = api
            .list(&ListParams::default())
            .await
            .map_err(|e| e.to_string())?;
        serde_json::json!({
            "apiVersion": "v1",
            "kind": format!("{kind}List"),
            "metadata": {"resourceVersion": list.metadata.resource_version},
            "items": list.items,
        })
    } else {
        match api.get_opt(name).await.map_err(|e| e.to_string())? {
            Some(o) => serde_json::to_value(o).map_err(|e| e.to_string())?,
            None => return Ok(Value::map(BTreeMap::new())),
        }
    };
    Ok(Value::from_json(&json))
}
