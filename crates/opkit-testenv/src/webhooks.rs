//! An operator's webhooks served by a local process on the embedded control plane: the
//! configurations a project deploys (`config/webhook/manifests.yaml`), with the Services they
//! name pointed at `127.0.0.1:PORT`.
//!
//! No pod runs a process on this plane, so a webhook Service reaches an operator that runs in
//! the test (or under `opkit run --up`) through a selector-less Service and an `Endpoints`
//! object naming the local port — the mapping the control plane resolves (docs/WEBHOOKS.md,
//! "reachability"). The configurations themselves are the ones a real cluster gets, so a test
//! through them checks what ships.

use k8s_openapi::api::core::v1::{Endpoints, Namespace, Service};
use kube::Client;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;
use kube::discovery::ApiResource;
use serde_json::{Value, json};

use crate::TestEnvError;

/// The field manager of what [`LocalWebhooks`] writes.
const FIELD_MANAGER: &str = "opkit-local-webhooks";

/// The webhook configurations of a project and the Services they call; see the
/// [module docs](self).
#[derive(Debug, Clone)]
pub struct LocalWebhooks {
    configurations: Vec<Value>,
    services: Vec<(String, String)>,
}

impl LocalWebhooks {
    /// The Mutating/ValidatingWebhookConfigurations in `yaml` (documents of other kinds are
    /// refused), and every Service their webhooks name.
    pub fn from_yaml(yaml: &str) -> Result<LocalWebhooks, TestEnvError> {
        let mut configurations = Vec::new();
        let mut services = Vec::new();
        for doc in yaml.split("\n---") {
            let content = doc
                .lines()
                .any(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'));
            if !content {
                continue;
            }
            let value: Value = serde_yaml::from_str(doc)
                .map_err(|e| TestEnvError::Webhooks(format!("not YAML: {e}")))?;
            if value.is_null() {
                continue;
            }
            let kind = value["kind"].as_str().unwrap_or("");
            if !matches!(
                kind,
                "MutatingWebhookConfiguration" | "ValidatingWebhookConfiguration"
            ) {
                return Err(TestEnvError::Webhooks(format!(
                    "expected Mutating/ValidatingWebhookConfigurations, found a {kind:?}"
                )));
            }
            for hook in value["webhooks"].as_array().into_iter().flatten() {
                let service = &hook["clientConfig"]["service"];
                if let (Some(ns), Some(name)) =
                    (service["namespace"].as_str(), service["name"].as_str())
                {
                    let key = (ns.to_string(), name.to_string());
                    if !services.contains(&key) {
                        services.push(key);
                    }
                }
            }
            configurations.push(value);
        }
        Ok(LocalWebhooks {
            configurations,
            services,
        })
    }

    /// Also routes the Service `namespace/name` (e.g. one only a CRD's conversion webhook
    /// names).
    pub fn with_service(mut self, namespace: &str, name: &str) -> LocalWebhooks {
        let key = (namespace.to_string(), name.to_string());
        if !self.services.contains(&key) {
            self.services.push(key);
        }
        self
    }

    /// The namespaces and names of the Services the webhooks call.
    pub fn services(&self) -> &[(String, String)] {
        &self.services
    }

    /// Creates the Services' namespaces (where a manager with self-managed certificates keeps
    /// its Secret) and applies the configurations (server-side, forced). Until
    /// [`route_to`](Self::route_to) points the Services somewhere, writes they match fail under
    /// `failurePolicy: Fail`.
    pub async fn install(&self, client: &Client) -> Result<(), kube::Error> {
        let namespaces: Api<Namespace> = Api::all(client.clone());
        for (ns, _) in &self.services {
            if namespaces.get_opt(ns).await?.is_none() {
                let namespace = Namespace {
                    metadata: kube::core::ObjectMeta {
                        name: Some(ns.clone()),
                        ..Default::default()
                    },
                    ..Default::default()
                };
                match namespaces.create(&PostParams::default(), &namespace).await {
                    Ok(_) => {}
                    Err(kube::Error::Api(s)) if s.code == 409 => {}
                    Err(e) => return Err(e),
                }
            }
        }
        let params = PatchParams::apply(FIELD_MANAGER).force();
        for configuration in &self.configurations {
            let kind = configuration["kind"].as_str().unwrap_or("");
            let gvk = GroupVersionKind::gvk("admissionregistration.k8s.io", "v1", kind);
            let api: Api<DynamicObject> =
                Api::all_with(client.clone(), &ApiResource::from_gvk(&gvk));
            let name = configuration["metadata"]["name"].as_str().unwrap_or("");
            api.patch(name, &params, &Patch::Apply(configuration))
                .await?;
        }
        Ok(())
    }

    /// What [`install`](Self::install) and [`route_to`](Self::route_to) write, as objects to
    /// apply to a fresh plane (its Services and Endpoints do not exist yet): the Services'
    /// namespaces, the configurations, and each Service with its `Endpoints` naming
    /// `127.0.0.1:port`. A suite lists them among its manifests where no code of the test runs
    /// against the plane before the operator starts (every run of an `opkit test --chaos`
    /// campaign is a fresh plane).
    pub fn manifests(&self, port: u16) -> Vec<Value> {
        let mut objects: Vec<Value> = Vec::new();
        for (ns, _) in &self.services {
            let namespace =
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
            if !objects.contains(&namespace) {
                objects.push(namespace);
            }
        }
        objects.extend(self.configurations.iter().cloned());
        for (ns, name) in &self.services {
            objects.push(local_service(ns, name, port));
            objects.push(local_endpoints(ns, name, port));
        }
        objects
    }

    /// Points every Service at `127.0.0.1:port`, where the operator serves its webhooks: the
    /// Service loses its selector (no pod here serves it) and gets port 443 named `https`,
    /// and its `Endpoints` name the local port.
    pub async fn route_to(&self, client: &Client, port: u16) -> Result<(), kube::Error> {
        for (ns, name) in &self.services {
            route_service(client, ns, name, port).await?;
        }
        Ok(())
    }
}

/// Points the Service `ns/name` (created if missing) at `127.0.0.1:port`.
pub async fn route_service(
    client: &Client,
    ns: &str,
    name: &str,
    port: u16,
) -> Result<(), kube::Error> {
    let services: Api<Service> = Api::namespaced(client.clone(), ns);
    let local = local_service(ns, name, port);
    if services.get_opt(name).await?.is_some() {
        // The selector removed: no pod here serves the Service.
        let spec = json!({"selector": null, "ports": local["spec"]["ports"]});
        services
            .patch(
                name,
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": spec})),
            )
            .await?;
    } else {
        let service: Service = serde_json::from_value(local).map_err(kube::Error::SerdeError)?;
        services.create(&PostParams::default(), &service).await?;
    }
    // Replaced rather than merged: left-over addresses (a simulated pod's) must go.
    let endpoints: Api<Endpoints> = Api::namespaced(client.clone(), ns);
    match endpoints.delete(name, &DeleteParams::default()).await {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 404 => {}
        Err(e) => return Err(e),
    }
    let local: Endpoints =
        serde_json::from_value(local_endpoints(ns, name, port)).map_err(kube::Error::SerdeError)?;
    endpoints.create(&PostParams::default(), &local).await?;
    Ok(())
}

/// The Service `ns/name` served at `127.0.0.1:port`: port 443 named `https`, no selector.
fn local_service(ns: &str, name: &str, port: u16) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "ports": [{"name": "https", "port": 443, "targetPort": port, "protocol": "TCP"}],
        },
    })
}

/// The `Endpoints` of Service `ns/name` naming `127.0.0.1:port`.
fn local_endpoints(ns: &str, name: &str, port: u16) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": {"name": name, "namespace": ns},
        "subsets": [{
            "addresses": [{"ip": "127.0.0.1"}],
            "ports": [{"name": "https", "port": port, "protocol": "TCP"}],
        }],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifests_hold_each_namespace_once_the_configurations_and_a_local_route_per_service() {
        let yaml = "apiVersion: admissionregistration.k8s.io/v1\n\
                    kind: ValidatingWebhookConfiguration\n\
                    metadata: {name: v}\n\
                    webhooks:\n\
                    - name: a.example.com\n  clientConfig: {service: {namespace: op-system, name: op-webhook-service, path: /a}}\n\
                    - name: b.example.com\n  clientConfig: {service: {namespace: op-system, name: op-webhook-service, path: /b}}\n";
        let local = LocalWebhooks::from_yaml(yaml)
            .unwrap()
            .with_service("op-system", "op-conversion");
        let objects = local.manifests(9443);
        let kinds: Vec<(&str, &str)> = objects
            .iter()
            .map(|o| {
                (
                    o["kind"].as_str().unwrap(),
                    o["metadata"]["name"].as_str().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            kinds,
            [
                ("Namespace", "op-system"),
                ("ValidatingWebhookConfiguration", "v"),
                ("Service", "op-webhook-service"),
                ("Endpoints", "op-webhook-service"),
                ("Service", "op-conversion"),
                ("Endpoints", "op-conversion"),
            ]
        );
        let service = &objects[2];
        assert!(service["spec"].get("selector").is_none(), "{service}");
        assert_eq!(service["spec"]["ports"][0]["targetPort"], 9443);
        assert_eq!(service["spec"]["ports"][0]["port"], 443);
        let endpoints = &objects[3];
        assert_eq!(endpoints["subsets"][0]["addresses"][0]["ip"], "127.0.0.1");
        assert_eq!(endpoints["subsets"][0]["ports"][0]["port"], 9443);
    }
}
