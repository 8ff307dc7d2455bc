//! What every cluster starts with: the namespaces `default`, `kube-system`, `kube-public` and
//! `kube-node-lease`, the `kubernetes` Service with its Endpoints and EndpointSlice, and the
//! default RBAC policy — each created through the same create endpoint as any client's
//! object, by the system, unless it exists — and the stored CRDs, served again.

use serde_json::{Value, json};

use crate::api::Api;
use crate::endpoints;
use crate::error::{ApiError, ApiResult};
use crate::object;
use crate::request::{ObjectRef, Query};
use crate::strategy;

/// Bootstraps the cluster's objects; see the module documentation.
pub(crate) async fn run(api: &Api) -> ApiResult<()> {
    let mut objects: Vec<(&str, &str, Option<&str>, Value)> = Vec::new();
    for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        let namespace = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
        objects.push(("", "namespaces", None, namespace));
    }
    // core/v1 and discovery.k8s.io/v1.
    for (group, plural, obj) in strategy::kubernetes_objects(&api.server_address) {
        objects.push((group, plural, Some("default"), obj));
    }
    let policy = opkit_rbac::bootstrap_policy();
    for role in policy.cluster_roles {
        let role = serde_json::to_value(role).map_err(ApiError::internal)?;
        objects.push((opkit_rbac::RBAC_GROUP, "clusterroles", None, role));
    }
    for binding in policy.cluster_role_bindings {
        let binding = serde_json::to_value(binding).map_err(ApiError::internal)?;
        objects.push((opkit_rbac::RBAC_GROUP, "clusterrolebindings", None, binding));
    }
    let ignore_unknown = Query::new(vec![("fieldValidation".into(), "Ignore".into())]);
    let snapshot = api.registry.snapshot();
    for (group, plural, ns, obj) in objects {
        let Some(res) = snapshot.get(group, "v1", plural) else {
            return Err(ApiError::internal(format!("{plural} are not registered")));
        };
        let name = object::name(&obj).to_string();
        if api
            .storage
            .get(ObjectRef {
                res,
                ns,
                name: &name,
            })
            .is_some()
        {
            continue;
        }
        match endpoints::create(api, res, ns, obj, &ignore_unknown, false).await {
            Ok(_) => {}
            Err(e) if e.is_already_exists() => {}
            Err(e) => return Err(e),
        }
    }
    let moved = api.storage.migrate_legacy_event_keys().await;
    if moved > 0 {
        tracing::info!(
            moved,
            "events.k8s.io/v1 events moved to the storage shared with core/v1 events"
        );
    }
    if let Some(crds) = snapshot.get("apiextensions.k8s.io", "v1", "customresourcedefinitions") {
        for crd in api.storage.all(crds) {
            strategy::register_crd(&api.registry, &crd, false);
        }
    }
    Ok(())
}
