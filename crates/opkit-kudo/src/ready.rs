//! The instance's `Ready` condition, as KUDO computes it (`kubernetes/status/readiness.go`,
//! `Instance.SetReadiness`): while a `deploy`, `update` or `upgrade` plan runs it is
//! `Unknown` with reason `PlanInProgress`; otherwise it is the health of every Deployment,
//! StatefulSet, ReplicaSet, DaemonSet and Pod labelled with the instance
//! (`kudo.dev/instance=<name>,heritage=kudo` in its namespace): `True`/`ResourcesReady`
//! when all are healthy, else `False`/`ResourceNotReady` with the unhealthy ones' messages
//! joined by `, `.

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::api::{Api, ListParams};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::api::{DEPLOY_PLAN, Instance, UPDATE_PLAN, UPGRADE_PLAN};
use crate::enhance::{HERITAGE_LABEL, INSTANCE_LABEL};
use crate::health::{Health, health};
use crate::task::TaskError;

/// The condition's type.
pub(crate) const READY: &str = "Ready";
/// A plan that changes the instance's resources runs.
pub(crate) const PLAN_IN_PROGRESS: &str = "PlanInProgress";
/// The last plan ended in `FATAL_ERROR` (set by the manager until another plan runs).
pub(crate) const PLAN_IN_FATAL_ERROR: &str = "PlanInFatalError";
/// Everything is healthy.
pub(crate) const RESOURCES_READY: &str = "ResourcesReady";
/// Something is not healthy.
pub(crate) const RESOURCE_NOT_READY: &str = "ResourceNotReady";

/// The `Ready` condition of `instance` now; the manager sets it after each pass
/// (`opkit::conditions::set` keeps the transition time when the status is unchanged).
pub(crate) async fn ready(
    client: &kube::Client,
    instance: &Instance,
) -> Result<Condition, TaskError> {
    let running = &instance.spec.plan_execution;
    let plan_running = running.status.is_none_or(|s| s.is_running());
    if plan_running
        && [DEPLOY_PLAN, UPDATE_PLAN, UPGRADE_PLAN].contains(&running.plan_name.as_str())
    {
        return Ok(opkit::conditions::ready(false)
            .unknown()
            .reason(PLAN_IN_PROGRESS)
            .observed(instance)
            .into());
    }
    let messages = unhealthy(client, instance).await?;
    let condition = if messages.is_empty() {
        opkit::conditions::ready(true).reason(RESOURCES_READY)
    } else {
        opkit::conditions::ready(false)
            .reason(RESOURCE_NOT_READY)
            .message(messages.join(", "))
    };
    Ok(condition.observed(instance).into())
}

/// The messages of the instance's unhealthy workloads.
async fn unhealthy(client: &kube::Client, instance: &Instance) -> Result<Vec<String>, TaskError> {
    let ns = instance.metadata.namespace.clone().unwrap_or_default();
    let name = instance.metadata.name.clone().unwrap_or_default();
    let params =
        ListParams::default().labels(&format!("{INSTANCE_LABEL}={name},{HERITAGE_LABEL}=kudo"));
    let mut out = Vec::new();
    out.extend(messages::<Deployment>(client, &ns, &params).await?);
    out.extend(messages::<StatefulSet>(client, &ns, &params).await?);
    out.extend(messages::<ReplicaSet>(client, &ns, &params).await?);
    out.extend(messages::<DaemonSet>(client, &ns, &params).await?);
    out.extend(messages::<Pod>(client, &ns, &params).await?);
    Ok(out)
}

async fn messages<K>(
    client: &kube::Client,
    ns: &str,
    params: &ListParams,
) -> Result<Vec<String>, TaskError>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + DeserializeOwned
        + Serialize
        + std::fmt::Debug,
{
    let list = Api::<K>::namespaced(client.clone(), ns)
        .list(params)
        .await
        .map_err(|e| {
            TaskError::Transient(format!(
                "unable to pull resources of type {}: {e}",
                K::kind(&())
            ))
        })?;
    Ok(list
        .items
        .iter()
        .filter_map(|o| {
            let mut json = serde_json::to_value(o).ok()?;
            json["apiVersion"] = K::api_version(&()).into();
            json["kind"] = K::kind(&()).into();
            match health(&json) {
                Health::Healthy => None,
                Health::Waiting(m) | Health::Failed(m) => Some(m),
            }
        })
        .collect())
}
