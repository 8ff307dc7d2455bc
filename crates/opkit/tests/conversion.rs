//! The runtime's conversion webhook end to end on `TestEnv`: the manager serves `/convert`
//! with self-managed certificates, publishes its CA into the CRD's conversion webhook, and
//! answers ConversionReviews POSTed over HTTPS by a client trusting only that CA.

use std::net::SocketAddr;
use std::sync::Arc;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use opkit::k8s_openapi::api::core::v1::Secret;
use opkit::k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use opkit::kube::core::crd::merge_crds;
use opkit::prelude::*;
use opkit::webhook::{CONVERT_PATH, InvalidConversion};
use opkit::{Conversion, Running, SelfManagedCerts, WebhookServer};
use opkit_testenv::{TestEnv, eventually};
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use serde_json::{Value, json};

/// Version 1 of Widget: a size.
mod v1 {
    use opkit::prelude::*;
    use serde::{Deserialize, Serialize};

    #[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
    #[kube(group = "test.opkit.dev", version = "v1", kind = "Widget", namespaced)]
    pub struct WidgetSpec {
        pub size: i32,
    }
}

/// Version 2 of Widget, the hub (and storage version): the size became replicas.
mod v2 {
    use opkit::prelude::*;
    use serde::{Deserialize, Serialize};

    #[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
    #[kube(group = "test.opkit.dev", version = "v2", kind = "Widget", namespaced)]
    pub struct WidgetSpec {
        pub replicas: i32,
    }
}

impl opkit::Hub for v2::Widget {}

impl opkit::Convertible<v2::Widget> for v1::Widget {
    fn to_hub(&self) -> Result<v2::Widget, opkit::ConversionError> {
        if self.spec.size < 0 {
            return Err(opkit::ConversionError::new(
                "spec.size must not be negative",
            ));
        }
        Ok(v2::Widget::new(
            "",
            v2::WidgetSpec {
                replicas: self.spec.size,
            },
        ))
    }

    fn from_hub(hub: &v2::Widget) -> Result<Self, opkit::ConversionError> {
        Ok(v1::Widget::new(
            "",
            v1::WidgetSpec {
                size: hub.spec.replicas,
            },
        ))
    }
}

const NS: &str = "default";
const SERVICE: &str = "widget-webhook";
const CRD: &str = "widgets.test.opkit.dev";

/// Both versions, v2 stored, converted by the manager's webhook (as kubebuilder's
/// `webhook_in_widgets.yaml` patch makes it: a Service reference, no caBundle).
fn crd() -> CustomResourceDefinition {
    let mut crd = merge_crds(vec![v1::Widget::crd(), v2::Widget::crd()], "v2").unwrap();
    crd.spec.conversion = Some(
        serde_json::from_value(json!({
            "strategy": "Webhook",
            "webhook": {
                "clientConfig": {"service": {"namespace": NS, "name": SERVICE, "path": CONVERT_PATH}},
                "conversionReviewVersions": ["v1"],
            },
        }))
        .unwrap(),
    );
    crd
}

fn server() -> WebhookServer {
    WebhookServer::new()
        .addr(SocketAddr::from(([127, 0, 0, 1], 0)))
        .self_managed_certs(SelfManagedCerts::new(SERVICE, NS).crd_conversion(CRD))
        .conversion(Conversion::<v2::Widget>::new().spoke::<v1::Widget>())
}

/// The CRD's conversion caBundle once the manager wrote it.
async fn published_bundle(client: &Client) -> Vec<u8> {
    eventually("the caBundle in the CRD's conversion webhook", || async {
        let crd = Api::<CustomResourceDefinition>::all(client.clone())
            .get(CRD)
            .await
            .ok()?;
        let bundle = crd.spec.conversion?.webhook?.client_config?.ca_bundle?.0;
        (!bundle.is_empty()).then_some(bundle)
    })
    .await
}

/// POSTs `body` to the manager's `/convert` over HTTPS, trusting only `ca_pem`, checking
/// the certificate for the Service's name as the API server does.
async fn post(addr: SocketAddr, ca_pem: &[u8], content_type: &str, body: Vec<u8>) -> (u16, Value) {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca_pem) {
        roots.add(cert.unwrap()).unwrap();
    }
    let config = rustls::ClientConfig::builder()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let server_name = format!("{SERVICE}.{NS}.svc").try_into().unwrap();
    let tls = connector.connect(server_name, tcp).await.unwrap();
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tls))
            .await
            .unwrap();
    tokio::spawn(connection);
    let request = hyper::Request::post(CONVERT_PATH)
        .header("host", format!("{SERVICE}.{NS}.svc"))
        .header("content-type", content_type)
        .body(Full::new(Bytes::from(body)))
        .unwrap();
    let response = sender.send_request(request).await.unwrap();
    let status = response.status().as_u16();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (status, serde_json::from_slice(&bytes).unwrap())
}

fn review(uid: &str, desired: &str, objects: Vec<Value>) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
        "request": {"uid": uid, "desiredAPIVersion": desired, "objects": objects},
    }))
    .unwrap()
}

fn widget_v1(name: &str, size: i32) -> Value {
    json!({
        "apiVersion": "test.opkit.dev/v1", "kind": "Widget",
        "metadata": {"name": name, "namespace": NS, "uid": format!("uid-{name}"),
                     "resourceVersion": "12", "labels": {"app": name}},
        "spec": {"size": size},
    })
}

async fn start_manager(client: &Client) -> Running {
    let manager = Manager::builder().webhook_server(server()).build();
    manager.start(client.clone()).await.expect("manager starts")
}

#[tokio::test]
async fn conversion_reviews_are_answered_over_https_with_the_ca_published_into_the_crd() {
    let env = TestEnv::builder().crd_object(crd()).start().await.unwrap();
    let client = env.client();
    let running = start_manager(&client).await;
    let addr = running.webhook_addr().expect("webhooks served");
    let bundle = published_bundle(&client).await;
    let secret = Api::<Secret>::namespaced(client.clone(), NS)
        .get("widget-webhook-cert")
        .await
        .expect("the certificates are kept in a Secret");
    assert_eq!(
        secret.data.unwrap()["ca.crt"].0,
        bundle,
        "the CRD trusts the stored CA"
    );

    // Two objects to the hub: converted in order, metadata as sent.
    let objects = vec![widget_v1("a", 3), widget_v1("b", 4)];
    let (status, answer) = post(
        addr,
        &bundle,
        "application/json",
        review("r1", "test.opkit.dev/v2", objects.clone()),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["apiVersion"], "apiextensions.k8s.io/v1");
    assert_eq!(answer["kind"], "ConversionReview");
    let response = &answer["response"];
    assert_eq!(response["uid"], "r1");
    assert_eq!(response["result"]["status"], "Success");
    let converted = response["convertedObjects"].as_array().unwrap();
    assert_eq!(converted.len(), 2);
    for (sent, got) in objects.iter().zip(converted) {
        assert_eq!(got["apiVersion"], "test.opkit.dev/v2");
        assert_eq!(got["kind"], "Widget");
        assert_eq!(got["metadata"], sent["metadata"]);
        assert_eq!(got["spec"]["replicas"], sent["spec"]["size"]);
    }

    // A conversion's own error and an unknown version are Failure results, with the uid.
    let (status, answer) = post(
        addr,
        &bundle,
        "application/json",
        review("r2", "test.opkit.dev/v2", vec![widget_v1("neg", -1)]),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(
        answer["response"],
        json!({"uid": "r2", "result": {"status": "Failure", "message": "spec.size must not be negative"}})
    );
    let (_, answer) = post(
        addr,
        &bundle,
        "application/json",
        review("r3", "test.opkit.dev/v7", vec![widget_v1("a", 1)]),
    )
    .await;
    assert_eq!(
        answer["response"]["result"]["message"],
        "no kind \"Widget\" is registered for version \"test.opkit.dev/v7\""
    );

    // Not a ConversionReview: a 400 with the reason.
    let (status, answer) = post(addr, &bundle, "application/json", b"[]".to_vec()).await;
    assert_eq!(status, 400);
    assert_eq!(
        answer["response"]["result"]["message"],
        "expected apiVersion apiextensions.k8s.io/v1 and kind ConversionReview, got (none) (none)"
    );
    let (status, _) = post(
        addr,
        &bundle,
        "text/plain",
        review("r4", "test.opkit.dev/v2", vec![]),
    )
    .await;
    assert_eq!(status, 400);

    let metrics = running.metrics().render();
    for line in [
        "controller_runtime_webhook_requests_total{webhook=\"/convert\",code=\"200\"} 3",
        "controller_runtime_webhook_requests_total{webhook=\"/convert\",code=\"400\"} 2",
        "controller_runtime_webhook_latency_seconds_count{webhook=\"/convert\"} 5",
        "controller_runtime_webhook_requests_in_flight{webhook=\"/convert\"} 0",
    ] {
        assert!(metrics.contains(line), "{line} in:\n{metrics}");
    }

    // The caBundle is re-published if it goes missing (a CRD re-applied without it).
    running.shutdown().await.unwrap();
    let crds = Api::<CustomResourceDefinition>::all(client.clone());
    let mut fresh = crds.get(CRD).await.unwrap();
    let conversion = fresh.spec.conversion.as_mut().unwrap();
    conversion
        .webhook
        .as_mut()
        .unwrap()
        .client_config
        .as_mut()
        .unwrap()
        .ca_bundle = None;
    crds.replace(CRD, &Default::default(), &fresh)
        .await
        .unwrap();
    let again = start_manager(&client).await;
    assert_eq!(
        published_bundle(&client).await,
        bundle,
        "the stored CA again"
    );
    again.shutdown().await.unwrap();
    env.shutdown().await;
}

#[tokio::test]
async fn a_kind_registered_twice_stops_the_manager_from_starting() {
    let env = TestEnv::builder().controllers("").start().await.unwrap();
    let server = WebhookServer::new()
        .addr(SocketAddr::from(([127, 0, 0, 1], 0)))
        .self_managed_certs(SelfManagedCerts::new(SERVICE, NS))
        .conversion(Conversion::<v2::Widget>::new().spoke::<v1::Widget>())
        .conversion(Conversion::<v2::Widget>::new());
    let manager = Manager::builder().webhook_server(server).build();
    let err = manager.start(env.client()).await.expect_err("refused");
    assert!(
        matches!(
            &err,
            opkit::Error::InvalidConversion(InvalidConversion::DuplicateKind { kind })
                if kind == "Widget.test.opkit.dev"
        ),
        "{err}"
    );
    assert!(
        Api::<Secret>::namespaced(env.client(), NS)
            .get_opt("widget-webhook-cert")
            .await
            .unwrap()
            .is_none(),
        "nothing was issued before the refusal"
    );
    env.shutdown().await;
}

#[test]
fn crd_conversion_adds_the_crd_rbac_rule() {
    let manager = Manager::builder().webhook_server(server()).build();
    let rule = manager
        .rbac_rules()
        .into_iter()
        .find(|r| r.resources.as_deref() == Some(&["customresourcedefinitions".to_string()]))
        .expect("a rule on CRDs");
    assert_eq!(
        rule.api_groups,
        Some(vec!["apiextensions.k8s.io".to_string()])
    );
    assert_eq!(rule.verbs, vec!["get".to_string(), "patch".to_string()]);
    assert_eq!(server().paths(), vec![CONVERT_PATH.to_string()]);
}
