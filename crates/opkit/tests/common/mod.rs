//! What the webhook tests share: reaching the manager's local webhook server through a
//! Service, as the control plane calls webhooks.

use opkit::k8s_openapi::api::core::v1::Service;
use opkit::k8s_openapi::api::discovery::v1::EndpointSlice;
use opkit::kube::api::{Patch, PatchParams};
use opkit::{Api, Client};
use serde_json::json;

/// Points the Service `name` in `namespace` (created without a selector if absent) at
/// `127.0.0.1:port` with an EndpointSlice: what a Service selecting the operator's pods does
/// on a real cluster.
pub async fn route_service_to(client: &Client, namespace: &str, name: &str, port: u16) {
    let apply = PatchParams::apply("webhook-test").force();
    let service: Service = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name},
        "spec": {"ports": [{"name": "https", "port": 443, "targetPort": 9443}]},
    }))
    .unwrap();
    Api::<Service>::namespaced(client.clone(), namespace)
        .patch(name, &apply, &Patch::Apply(&service))
        .await
        .unwrap();
    let slice: EndpointSlice = serde_json::from_value(json!({
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": name, "labels": {"kubernetes.io/service-name": name}},
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["127.0.0.1"]}],
        "ports": [{"name": "https", "port": port, "protocol": "TCP"}],
    }))
    .unwrap();
    Api::<EndpointSlice>::namespaced(client.clone(), namespace)
        .patch(name, &apply, &Patch::Apply(&slice))
        .await
        .unwrap();
}
