//! The API operations of a step, as kuttl does them: uncached discovery for a kind's scope
//! (namespace defaulting), GET/LIST, create-or-merge-patch with a resourceVersion
//! precondition, and DELETE.

use std::collections::BTreeMap;
use std::time::Duration;

use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::{Client, Error};
use serde_json::Value;

use crate::yaml;

/// Go's `schema.GroupVersionKind` string: `apps/v1, Kind=Deployment` (core: `/v1, Kind=Pod`).
pub(crate) fn gvk_string(api_version: &str, kind: &str) -> String {
    let (g, v) = api_version.split_once('/').unwrap_or(("", api_version));
    format!("{g}/{v}, Kind={kind}")
}

/// The text of an API error (the Status message), or the client error.
pub(crate) fn message(e: &Error) -> String {
    match e {
        Error::Api(s) => s.message.clone(),
        other => other.to_string(),
    }
}

/// Whether `e` is the API's NotFound.
pub(crate) fn is_not_found(e: &Error) -> bool {
    matches!(e, Error::Api(s) if s.is_not_found())
}

fn is_conflict(e: &Error) -> bool {
    matches!(e, Error::Api(s) if s.is_conflict() || s.is_already_exists())
}

/// Whether the server could not reach a webhook (admission or conversion) the request needed:
/// the operator serving it is still starting, or restarting after a crash a chaos run
/// injected. Unlike a webhook's denial, worth retrying until the step's timeout.
fn is_webhook_unreachable(e: &Error) -> bool {
    matches!(e, Error::Api(s) if s.code == 500
        && (s.message.contains(": failed to call webhook: ")
            || s.message.starts_with("conversion webhook for")))
}

/// A kind as the server serves it.
#[derive(Debug, Clone)]
pub(crate) struct Resource {
    pub api: ApiResource,
    pub namespaced: bool,
}

/// A client and the operations on it.
#[derive(Clone)]
pub(crate) struct Cluster {
    pub client: Client,
}

/// What an apply did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Applied {
    Created,
    Updated,
}

impl Cluster {
    /// Looks `kind` up in discovery (no cache: CRDs from earlier steps are found).
    pub(crate) async fn resolve(&self, api_version: &str, kind: &str) -> Result<Resource, String> {
        let gvk = gvk_string(api_version, kind);
        let list = if api_version.contains('/') {
            self.client.list_api_group_resources(api_version).await
        } else {
            self.client.list_core_api_resources(api_version).await
        }
        .map_err(|e| format!("retrieving API resource for {gvk} failed: {}", message(&e)))?;
        let found = list
            .resources
            .iter()
            .find(|r| !r.name.contains('/') && r.kind.eq_ignore_ascii_case(kind))
            .ok_or_else(|| {
                format!("retrieving API resource for {gvk} failed: resource type not found")
            })?;
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        let gvk = GroupVersionKind::gvk(group, version, &found.kind);
        Ok(Resource {
            api: ApiResource::from_gvk_with_plural(&gvk, &found.name),
            namespaced: found.namespaced,
        })
    }

    /// Resolves `object`'s kind and gives it the test namespace when it is namespaced and has
    /// none (kuttl's `Namespaced`); the namespace is written into the object.
    pub(crate) async fn namespaced(
        &self,
        object: &mut Value,
        namespace: &str,
    ) -> Result<Resource, String> {
        let api_version = object
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let kind = yaml::kind(object).to_string();
        let resource = self.resolve(&api_version, &kind).await?;
        if resource.namespaced
            && yaml::meta(object, "namespace").is_empty()
            && let Some(meta) = object.as_object_mut().and_then(|o| {
                o.entry("metadata")
                    .or_insert_with(|| Value::Object(Default::default()))
                    .as_object_mut()
            })
        {
            meta.insert("namespace".into(), Value::String(namespace.to_string()));
        }
        Ok(resource)
    }

    /// The API of `resource` in `namespace` (ignored for cluster-scoped kinds).
    pub(crate) fn api(&self, resource: &Resource, namespace: &str) -> Api<DynamicObject> {
        if resource.namespaced {
            Api::namespaced_with(self.client.clone(), namespace, &resource.api)
        } else {
            Api::all_with(self.client.clone(), &resource.api)
        }
    }

    /// GET as JSON.
    pub(crate) async fn get(
        &self,
        resource: &Resource,
        namespace: &str,
        name: &str,
    ) -> Result<Value, Error> {
        let object = self.api(resource, namespace).get(name).await?;
        serde_json::to_value(object).map_err(Error::SerdeError)
    }

    /// LIST with an exact-match label selector, as JSON objects.
    pub(crate) async fn list(
        &self,
        resource: &Resource,
        namespace: &str,
        labels: &BTreeMap<String, String>,
    ) -> Result<Vec<Value>, Error> {
        let selector: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let mut params = ListParams::default();
        if !selector.is_empty() {
            params = params.labels(&selector.join(","));
        }
        let list = self.api(resource, namespace).list(&params).await?;
        list.items
            .into_iter()
            .map(|o| {
                let mut v = serde_json::to_value(o).map_err(Error::SerdeError)?;
                // Items of a list carry no apiVersion/kind; the expected side always has them.
                if let Some(m) = v.as_object_mut() {
                    m.insert("apiVersion".into(), resource.api.api_version.clone().into());
                    m.insert("kind".into(), resource.api.kind.clone().into());
                }
                Ok(v)
            })
            .collect()
    }

    /// kuttl's `CreateOrUpdate`: GET; found → JSON merge patch of the whole object with its
    /// resourceVersion (a conflict is retried); not found → create. Bounded by `timeout`.
    pub(crate) async fn create_or_update(
        &self,
        resource: &Resource,
        object: &Value,
        timeout: Duration,
    ) -> Result<Applied, String> {
        let name = yaml::meta(object, "name");
        let gvk = gvk_string(&resource.api.api_version, &resource.api.kind);
        if name.is_empty() {
            return Err(format!(
                "applying {gvk} failed: the object has no metadata.name (generateName is not supported)"
            ));
        }
        let api = self.api(resource, yaml::meta(object, "namespace"));
        let deadline = tokio::time::Instant::now() + timeout;
        let mut last = String::new();
        while tokio::time::Instant::now() < deadline {
            match api.get(name).await {
                Ok(existing) => {
                    let mut patch = object.clone();
                    if let (Some(rv), Some(meta)) = (
                        existing.metadata.resource_version,
                        patch.get_mut("metadata").and_then(Value::as_object_mut),
                    ) {
                        meta.insert("resourceVersion".into(), Value::String(rv));
                    }
                    match api
                        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
                        .await
                    {
                        Ok(_) => return Ok(Applied::Updated),
                        Err(e) if is_conflict(&e) || is_webhook_unreachable(&e) => {
                            last = message(&e)
                        }
                        Err(e) => {
                            return Err(format!("applying {gvk} {name} failed: {}", message(&e)));
                        }
                    }
                }
                Err(e) if is_not_found(&e) => {
                    let body: DynamicObject = serde_json::from_value(object.clone())
                        .map_err(|e| format!("applying {gvk} {name} failed: {e}"))?;
                    match api.create(&PostParams::default(), &body).await {
                        Ok(_) => return Ok(Applied::Created),
                        Err(e) if is_conflict(&e) || is_webhook_unreachable(&e) => {
                            last = message(&e)
                        }
                        Err(e) => {
                            return Err(format!("applying {gvk} {name} failed: {}", message(&e)));
                        }
                    }
                }
                Err(e) if is_webhook_unreachable(&e) => last = message(&e),
                Err(e) => {
                    return Err(format!(
                        "applying {gvk} {name} failed: failed to check object's existence: {}",
                        message(&e)
                    ));
                }
            }
            // A conflict, or a webhook not served yet: retry at once (with a short pause,
            // unlike kuttl's busy loop).
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Err(format!(
            "applying {gvk} {name} failed: create/update timeout exceeded, last attempt was: {last}"
        ))
    }

    /// DELETE with the server's default propagation; `false` when it was already gone.
    pub(crate) async fn delete(
        &self,
        resource: &Resource,
        namespace: &str,
        name: &str,
    ) -> Result<bool, Error> {
        match self
            .api(resource, namespace)
            .delete(name, &DeleteParams::default())
            .await
        {
            Ok(_) => Ok(true),
            Err(e) if is_not_found(&e) => Ok(false),
            Err(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn gvk_strings_are_gos() {
        assert_eq!(
            super::gvk_string("apps/v1", "Deployment"),
            "apps/v1, Kind=Deployment"
        );
        assert_eq!(super::gvk_string("v1", "Pod"), "/v1, Kind=Pod");
    }
}
