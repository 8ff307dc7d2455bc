//! The clusterrole-aggregation controller: writes the rules of aggregated ClusterRoles.
//!
//! Why: a ClusterRole with an `aggregationRule` (`admin`, `edit`, `view`, and any an operator
//! defines) grants the union of the rules of the ClusterRoles its selectors match. The API
//! server's authorizer resolves that by itself, so permissions are right at once; but people
//! and tools read roles (`kubectl describe clusterrole view`, `kubectl auth reconcile`), and
//! upstream's kube-controller-manager writes the union into the aggregated role's `rules`.
//! This controller does the same: every change of a ClusterRole queues every aggregated role,
//! and reconciling one recomputes its rules from the cached ClusterRoles (with
//! `opkit_rbac::aggregate`, the authorizer's own resolution) and writes them if they differ.
//! The work queue collapses a burst of changes (an operator installing several roles) into
//! few passes.

use std::sync::Arc;

use k8s_openapi::api::rbac::v1::ClusterRole;
use kube::api::{Api, Patch, PatchParams};
use opkit::{Action, Caches, Change, Context, Controller, ControllerDef, Predicate, Request};

use crate::workloads::{BACKOFF, Error, reconciler};

/// The clusterrole-aggregation controller.
pub(crate) fn controller() -> ControllerDef {
    Controller::<ClusterRole>::new("clusterrole-aggregation")
        .with_predicate(Predicate::new(|change: &Change<'_, ClusterRole>| {
            change.object().aggregation_rule.is_some()
        }))
        .watches_with_caches(aggregated_roles, None)
        .backoff(BACKOFF)
        .build(reconciler("clusterrole-aggregation", reconcile), ())
}

/// Every aggregated role: any ClusterRole may be selected by one (or stop being selected).
fn aggregated_roles(_changed: &ClusterRole, caches: &Caches) -> Vec<Request> {
    let Ok(store) = caches.store::<ClusterRole>() else {
        return Vec::new();
    };
    store
        .state()
        .iter()
        .filter(|r| r.aggregation_rule.is_some())
        .map(|r| Request::from_object(r.as_ref()))
        .collect()
}

/// Writes the resolved rules into an aggregated role whose `rules` differ.
async fn reconcile(role: Arc<ClusterRole>, ctx: Arc<Context<()>>) -> Result<Action, Error> {
    let Some(name) = role.metadata.name.as_deref() else {
        return Ok(Action::await_change());
    };
    let roles: Vec<ClusterRole> = ctx
        .store::<ClusterRole>()?
        .state()
        .iter()
        .map(|r| (**r).clone())
        .collect();
    let Some((_, rules)) = opkit_rbac::aggregate(&roles)
        .into_iter()
        .find(|(n, _)| n == name)
    else {
        return Ok(Action::await_change());
    };
    if role.rules.clone().unwrap_or_default() == rules {
        return Ok(Action::await_change());
    }
    let api: Api<ClusterRole> = Api::all(ctx.client().clone());
    let patch = serde_json::json!({"rules": rules});
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(Action::await_change())
}
