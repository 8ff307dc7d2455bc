//! The runtime's webhook server end to end on `TestEnv`: the control plane calls the
//! manager's defaulting and validating webhooks through a Service whose EndpointSlice points
//! at the local server, trusting only the CA the manager issued and published itself.

mod common;

use std::net::SocketAddr;

use opkit::k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use opkit::k8s_openapi::api::core::v1::Secret;
use opkit::kube::api::PostParams;
use opkit::prelude::*;
use opkit::webhook::{mutate_path, validate_path};
use opkit::{Admission, Defaulter, Denied, Running, SelfManagedCerts, Validator, WebhookServer};
use opkit_testenv::{TestEnv, eventually};
use serde::{Deserialize, Serialize};
use serde_json::json;

#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(group = "test.opkit.dev", version = "v1", kind = "Gadget", namespaced)]
struct GadgetSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    size: Option<i32>,
}

/// Gadgets without a size get size 3.
struct DefaultSize;

impl Defaulter<Gadget> for DefaultSize {
    fn default(&self, gadget: &mut Gadget, _: &Admission) -> Result<(), Denied> {
        gadget.spec.size.get_or_insert(3);
        Ok(())
    }
}

/// Sizes above 10 are refused; sizes above 5 pass with a warning.
struct MaxSize;

impl MaxSize {
    fn check(gadget: &Gadget) -> Result<Vec<String>, Denied> {
        match gadget.spec.size {
            Some(s) if s > 10 => Err(Denied::new(format!(
                "spec.size must be at most 10, not {s}"
            ))),
            Some(s) if s > 5 => Ok(vec![format!("spec.size {s} is large")]),
            _ => Ok(Vec::new()),
        }
    }
}

impl Validator<Gadget> for MaxSize {
    fn validate_create(&self, gadget: &Gadget, _: &Admission) -> Result<Vec<String>, Denied> {
        MaxSize::check(gadget)
    }
    fn validate_update(
        &self,
        _old: &Gadget,
        new: &Gadget,
        _: &Admission,
    ) -> Result<Vec<String>, Denied> {
        MaxSize::check(new)
    }
}

const NS: &str = "default";
const SERVICE: &str = "gadget-webhook";

fn certs() -> SelfManagedCerts {
    SelfManagedCerts::new(SERVICE, NS)
        .mutating_configuration("gadget-defaulting")
        .validating_configuration("gadget-validation")
}

fn server() -> WebhookServer {
    WebhookServer::new()
        .addr(SocketAddr::from(([127, 0, 0, 1], 0)))
        .self_managed_certs(certs())
        .defaulter::<Gadget, _>(DefaultSize)
        .validator::<Gadget, _>(MaxSize)
}

fn hook(name: &str, path: &str) -> serde_json::Value {
    json!({
        "name": name,
        "clientConfig": {"service": {"namespace": NS, "name": SERVICE, "path": path}},
        "rules": [{
            "operations": ["CREATE", "UPDATE"], "apiGroups": ["test.opkit.dev"],
            "apiVersions": ["v1"], "resources": ["gadgets"],
        }],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        "failurePolicy": "Fail",
    })
}

/// The configurations as a project would apply them: a Service reference, no caBundle.
async fn configure(client: &Client) {
    let mutating: MutatingWebhookConfiguration = serde_json::from_value(json!({
        "metadata": {"name": "gadget-defaulting"},
        "webhooks": [hook("mgadget.test.opkit.dev", &mutate_path::<Gadget>())],
    }))
    .unwrap();
    Api::<MutatingWebhookConfiguration>::all(client.clone())
        .create(&PostParams::default(), &mutating)
        .await
        .unwrap();
    let validating: ValidatingWebhookConfiguration = serde_json::from_value(json!({
        "metadata": {"name": "gadget-validation"},
        "webhooks": [hook("vgadget.test.opkit.dev", &validate_path::<Gadget>())],
    }))
    .unwrap();
    Api::<ValidatingWebhookConfiguration>::all(client.clone())
        .create(&PostParams::default(), &validating)
        .await
        .unwrap();
}

async fn start_manager(client: &Client) -> Running {
    let manager = Manager::builder().webhook_server(server()).build();
    let running = manager.start(client.clone()).await.expect("manager starts");
    let port = running.webhook_addr().expect("webhooks served").port();
    common::route_service_to(client, NS, SERVICE, port).await;
    running
}

fn gadget(name: &str, size: Option<i32>) -> Gadget {
    Gadget::new(name, GadgetSpec { size })
}

/// The `caBundle` of both configurations once the manager wrote the same one into each.
async fn published_bundle(client: &Client) -> Vec<u8> {
    eventually("the caBundle in both configurations", || async {
        let m = Api::<MutatingWebhookConfiguration>::all(client.clone())
            .get("gadget-defaulting")
            .await
            .ok()?;
        let v = Api::<ValidatingWebhookConfiguration>::all(client.clone())
            .get("gadget-validation")
            .await
            .ok()?;
        let m = m.webhooks?[0].client_config.ca_bundle.clone()?.0;
        let v = v.webhooks?[0].client_config.ca_bundle.clone()?.0;
        (m == v && !m.is_empty()).then_some(m)
    })
    .await
}

#[tokio::test]
async fn writes_are_defaulted_and_validated_by_the_managers_webhooks_with_its_own_certificates() {
    let env = TestEnv::builder().crd::<Gadget>().start().await.unwrap();
    let client = env.client();
    configure(&client).await;
    let running = start_manager(&client).await;
    let bundle = published_bundle(&client).await;

    let secret = Api::<Secret>::namespaced(client.clone(), NS)
        .get("gadget-webhook-cert")
        .await
        .expect("the certificates are kept in a Secret");
    let data = secret.data.unwrap();
    assert_eq!(
        data["ca.crt"].0, bundle,
        "the published CA is the stored one"
    );

    let gadgets: Api<Gadget> = Api::namespaced(client.clone(), NS);
    let created = gadgets
        .create(&PostParams::default(), &gadget("plain", None))
        .await
        .expect("a create through the webhooks");
    assert_eq!(
        created.spec.size,
        Some(3),
        "defaulted by the mutating webhook"
    );
    assert_eq!(gadgets.get("plain").await.unwrap().spec.size, Some(3));
    let kept = gadgets
        .create(&PostParams::default(), &gadget("sized", Some(7)))
        .await
        .unwrap();
    assert_eq!(kept.spec.size, Some(7), "a set field is not defaulted");

    let refused = gadgets
        .create(&PostParams::default(), &gadget("huge", Some(11)))
        .await
        .expect_err("the validator refuses sizes above 10");
    let opkit::kube::Error::Api(status) = refused else {
        panic!("expected an API error, got {refused:?}");
    };
    assert_eq!(
        status.message,
        "admission webhook \"vgadget.test.opkit.dev\" denied the request: spec.size must be at most 10, not 11"
    );
    assert_eq!(status.code, 403);
    assert!(gadgets.get_opt("huge").await.unwrap().is_none());

    let metrics = running.metrics().render();
    for line in [
        "controller_runtime_webhook_requests_total{webhook=\"/mutate-test-opkit-dev-v1-gadget\",code=\"200\"}",
        "controller_runtime_webhook_requests_total{webhook=\"/validate-test-opkit-dev-v1-gadget\",code=\"200\"}",
        "controller_runtime_webhook_latency_seconds_count{webhook=\"/validate-test-opkit-dev-v1-gadget\"}",
        "controller_runtime_webhook_requests_in_flight{webhook=\"/validate-test-opkit-dev-v1-gadget\"} 0",
    ] {
        assert!(metrics.contains(line), "{line} in:\n{metrics}");
    }

    // A restart reuses the stored certificates: same CA, same serving certificate.
    running.shutdown().await.unwrap();
    let again = start_manager(&client).await;
    let secret = Api::<Secret>::namespaced(client.clone(), NS)
        .get("gadget-webhook-cert")
        .await
        .unwrap();
    assert_eq!(secret.data.unwrap()["tls.crt"], data["tls.crt"]);
    assert_eq!(published_bundle(&client).await, bundle);
    let second = gadgets
        .create(&PostParams::default(), &gadget("after-restart", None))
        .await
        .expect("a create through the restarted server");
    assert_eq!(second.spec.size, Some(3));
    again.shutdown().await.unwrap();
    env.shutdown().await;
}

#[test]
fn self_managed_certificates_add_their_rbac_rules() {
    let manager = Manager::builder().webhook_server(server()).build();
    let rules = manager.rbac_rules();
    let verbs = |group: &str, resource: &str| {
        rules
            .iter()
            .find(|r| {
                r.api_groups.as_deref() == Some(&[group.to_string()])
                    && r.resources.as_deref() == Some(&[resource.to_string()])
            })
            .map(|r| r.verbs.clone())
    };
    assert_eq!(
        verbs("", "secrets"),
        Some(vec!["create".into(), "get".into(), "update".into()])
    );
    for resource in [
        "mutatingwebhookconfigurations",
        "validatingwebhookconfigurations",
    ] {
        assert_eq!(
            verbs("admissionregistration.k8s.io", resource),
            Some(vec!["get".into(), "patch".into()])
        );
    }
}
