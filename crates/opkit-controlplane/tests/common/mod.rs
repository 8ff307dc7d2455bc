//! Shared harness: an in-process control plane and a kube-rs client for it.
#![allow(dead_code)]

use kube::config::{KubeConfigOptions, Kubeconfig};
use opkit_controlplane::{Config, ControlPlane};

/// Starts an ephemeral control plane on a free port.
pub async fn start() -> ControlPlane {
    ControlPlane::start(Config::ephemeral())
        .await
        .expect("control plane starts")
}

/// Starts an ephemeral control plane; also returns a client for it.
pub async fn start_with_client() -> (ControlPlane, kube::Client) {
    let plane = start().await;
    let client = client(&plane).await;
    (plane, client)
}

/// The `Status` of an API error; panics on any other error.
pub fn api_status(err: kube::Error) -> Box<kube::core::Status> {
    match err {
        kube::Error::Api(status) => status,
        other => panic!("expected an API error, got {other}"),
    }
}

/// Starts an ephemeral control plane with these built-in controllers; also returns a client.
pub async fn start_with_controllers(
    settings: opkit_controlplane::controllers::Settings,
) -> (ControlPlane, kube::Client) {
    let config = Config {
        controllers: settings,
        ..Config::ephemeral()
    };
    let plane = ControlPlane::start(config)
        .await
        .expect("control plane starts");
    let client = client(&plane).await;
    (plane, client)
}

/// A kube-rs client for a control plane, as from its kubeconfig.
pub async fn client(plane: &ControlPlane) -> kube::Client {
    client_for_kubeconfig(plane.kubeconfig()).await
}

/// A kube-rs client from kubeconfig YAML.
pub async fn client_for_kubeconfig(yaml: &str) -> kube::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let kubeconfig = Kubeconfig::from_yaml(yaml).expect("kubeconfig parses");
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("kubeconfig is usable");
    kube::Client::try_from(config).expect("client builds")
}

/// The design brief's FlightTicket CRD.
pub fn flight_ticket_crd() -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "flighttickets.flights.com"},
        "spec": {
            "group": "flights.com",
            "scope": "Namespaced",
            "names": {"kind": "FlightTicket", "singular": "flightticket", "plural": "flighttickets", "shortNames": ["ft"]},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "spec": {"type": "object", "properties": {
                            "from": {"type": "string"},
                            "to": {"type": "string"},
                            "number": {"type": "integer", "minimum": 1, "maximum": 10}
                        }},
                        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
                    }
                }}
            }]
        }
    })
}

/// Creates the FlightTicket CRD and waits until it is Established.
pub async fn install_flight_ticket_crd(client: &kube::Client) {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    use kube::api::{Api, PostParams};
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd: CustomResourceDefinition = serde_json::from_value(flight_ticket_crd()).unwrap();
    crds.create(&PostParams::default(), &crd)
        .await
        .expect("CRD is created");
    let established = kube::runtime::wait::await_condition(
        crds,
        "flighttickets.flights.com",
        kube::runtime::wait::conditions::is_crd_established(),
    );
    tokio::time::timeout(std::time::Duration::from_secs(10), established)
        .await
        .expect("CRD established in time")
        .expect("wait works");
}

/// A client for user `loader`, bound to `cluster-admin` but not in `system:masters` (so the
/// limits apply to it, as to any ordinary client).
pub async fn loader(plane: &ControlPlane) -> kube::Client {
    let admin = client(plane).await;
    let crb: k8s_openapi::api::rbac::v1::ClusterRoleBinding = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "loader-admin"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "loader"}]
    }))
    .unwrap();
    let _ = kube::Api::<k8s_openapi::api::rbac::v1::ClusterRoleBinding>::all(admin)
        .create(&kube::api::PostParams::default(), &crb)
        .await;
    no_retry_client(&plane.user_kubeconfig("loader", &[]).unwrap()).await
}

/// A kube-rs client that does not retry 429s by itself (kube-rs does by default), so the
/// test sees what the server answers.
pub async fn no_retry_client(kubeconfig: &str) -> kube::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let kubeconfig = kube::config::Kubeconfig::from_yaml(kubeconfig).unwrap();
    let mut config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .unwrap();
    config.default_retry = false;
    kube::Client::try_from(config).unwrap()
}

/// The `admissionregistration.k8s.io/v1` objects of `kind` (webhook configurations, policies
/// and their bindings).
pub fn admission_api(client: &kube::Client, kind: &str) -> kube::Api<kube::api::DynamicObject> {
    let gvk = kube::core::GroupVersionKind::gvk("admissionregistration.k8s.io", "v1", kind);
    kube::Api::all_with(client.clone(), &kube::core::ApiResource::from_gvk(&gvk))
}

/// Creates the `admissionregistration.k8s.io/v1` object `name` of `kind` with these top-level
/// fields (`spec` for policies and bindings, `webhooks` for webhook configurations).
pub async fn create_admission_object(
    client: &kube::Client,
    kind: &str,
    name: &str,
    fields: serde_json::Value,
) -> kube::Result<()> {
    let mut obj = serde_json::json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": kind,
        "metadata": {"name": name},
    });
    for (k, v) in fields.as_object().into_iter().flatten() {
        obj[k] = v.clone();
    }
    let obj: kube::api::DynamicObject =
        serde_json::from_value(obj).expect("an admission object is a valid object");
    admission_api(client, kind)
        .create(&kube::api::PostParams::default(), &obj)
        .await
        .map(|_| ())
}
