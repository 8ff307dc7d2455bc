//! The clusterrole-aggregation controller: writes the rules of aggregated ClusterRoles.
//!
//! Why: a ClusterRole with an `aggregationRule` (`admin`, `edit`, `view`, and any an operator
//! defines) grants the union of the rules of the ClusterRoles its selectors match. The API
//! server's authorizer resolves that by itself, so permissions are right at once; but people
//! and tools read roles (`kubectl describe clusterrole view`, `kubectl auth reconcile`), and
//! upstream's kube-controller-manager writes the union into the aggregated role's `rules`.
//! This controller does the same: it watches ClusterRoles and, after each batch of changes,
//! recomputes every aggregated role (with `opkit_rbac::aggregate`, the authorizer's own
//! resolution) and updates the ones whose `rules` differ.

use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::rbac::v1::ClusterRole;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::reflector;
use kube::runtime::watcher::{self, watcher};

use crate::Settings;

/// Changes arriving within this window are handled in one pass.
const SETTLE: Duration = Duration::from_millis(20);

/// Runs until the task is aborted.
pub(crate) async fn run(client: kube::Client, _settings: Settings) {
    let api: Api<ClusterRole> = Api::all(client);
    let (store, writer) = reflector::store();
    let stream = reflector::reflector(writer, watcher(api.clone(), watcher::Config::default()));
    let mut stream = std::pin::pin!(stream);
    let mut ready = false;
    loop {
        let Some(event) = stream.next().await else {
            return;
        };
        match event {
            Ok(watcher::Event::InitDone) => ready = true,
            Ok(watcher::Event::Init | watcher::Event::InitApply(_)) => continue,
            Ok(_) => {}
            Err(e) => {
                tracing::debug!(error = %e, "clusterrole watch failed; retrying");
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
        }
        if !ready {
            continue;
        }
        // Let a burst of changes (an operator installing several roles) settle first.
        while let Ok(Some(more)) = tokio::time::timeout(SETTLE, stream.next()).await {
            if let Err(e) = more {
                tracing::debug!(error = %e, "clusterrole watch failed");
            }
        }
        let roles: Vec<ClusterRole> = store.state().iter().map(|r| (**r).clone()).collect();
        reconcile(&api, &roles).await;
    }
}

/// Writes the resolved rules into every aggregated role whose `rules` differ.
async fn reconcile(api: &Api<ClusterRole>, roles: &[ClusterRole]) {
    for (name, rules) in opkit_rbac::aggregate(roles) {
        let current = roles
            .iter()
            .find(|r| r.metadata.name.as_deref() == Some(name.as_str()))
            .and_then(|r| r.rules.clone())
            .unwrap_or_default();
        if current == rules {
            continue;
        }
        let patch = serde_json::json!({"rules": rules});
        let params = PatchParams::default();
        if let Err(e) = api.patch(&name, &params, &Patch::Merge(&patch)).await {
            tracing::debug!(role = %name, error = %e, "cannot write aggregated rules");
        }
    }
}
