//! A small HTTPS admission webhook server for tests: a test CA, a serving certificate for
//! `127.0.0.1` and `hooks.default.svc`, and a handler that answers each AdmissionReview.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use base64::Engine;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SanType,
};
use serde_json::{Value, json};

/// What the webhook answers to one review.
pub enum Reply {
    /// Allowed, with these warnings.
    Allow(Vec<String>),
    /// Refused with this code and message.
    Deny(u16, String),
    /// Allowed with this JSON patch.
    Patch(Value),
    /// This body, as it is (for bad answers).
    Raw(Value),
    /// An allowed review with another uid.
    WrongUid,
    /// No answer, ever (for timeouts).
    Hang,
}

type Handler = dyn Fn(&Value) -> Reply + Send + Sync;

/// A running webhook server.
pub struct WebhookServer {
    /// Where it listens.
    pub addr: SocketAddr,
    /// The CA that signed its certificate (PEM), for `caBundle`.
    pub ca_pem: String,
    /// The `request` of every review it received.
    pub seen: Arc<Mutex<Vec<Value>>>,
    /// The connections it accepted (their serving tasks).
    connections: Arc<Mutex<Vec<tokio::task::JoinHandle<()>>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for WebhookServer {
    fn drop(&mut self) {
        self.task.abort();
        self.close_connections();
    }
}

impl WebhookServer {
    /// `https://127.0.0.1:PORT{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("https://{}{path}", self.addr)
    }

    /// The base64 `caBundle`.
    pub fn ca_bundle(&self) -> String {
        base64::engine::general_purpose::STANDARD.encode(&self.ca_pem)
    }

    /// How many connections it accepted so far.
    pub fn connections_accepted(&self) -> usize {
        self.connections.lock().unwrap().len()
    }

    /// Closes every open connection, as a webhook that restarts or times idle ones out.
    pub fn close_connections(&self) {
        for connection in self.connections.lock().unwrap().iter() {
            connection.abort();
        }
    }

    /// The requests received so far.
    pub fn requests(&self) -> Vec<Value> {
        self.seen.lock().unwrap().clone()
    }

    /// Starts a server on a free local port.
    pub async fn start(handler: impl Fn(&Value) -> Reply + Send + Sync + 'static) -> WebhookServer {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let (ca_pem, config) = certificates();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let handler: Arc<Handler> = Arc::new(handler);
        let recorded = seen.clone();
        let connections = Arc::new(Mutex::new(Vec::new()));
        let accepted = connections.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    return;
                };
                let acceptor = acceptor.clone();
                let handler = handler.clone();
                let recorded = recorded.clone();
                let connection = tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let service = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                        let handler = handler.clone();
                        let recorded = recorded.clone();
                        async move {
                            let body = req.into_body().collect().await?.to_bytes();
                            let review: Value =
                                serde_json::from_slice(&body).unwrap_or(Value::Null);
                            let request = review["request"].clone();
                            recorded.lock().unwrap().push(request.clone());
                            let answer = answer(&request, handler(&request)).await;
                            Ok::<_, hyper::Error>(
                                hyper::Response::builder()
                                    .header("content-type", "application/json")
                                    .body(Full::new(Bytes::from(answer.to_string())))
                                    .unwrap(),
                            )
                        }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(tls), service)
                        .await;
                });
                accepted.lock().unwrap().push(connection);
            }
        });
        WebhookServer {
            addr,
            ca_pem,
            seen,
            connections,
            task,
        }
    }
}

async fn answer(request: &Value, reply: Reply) -> Value {
    let uid = request["uid"].clone();
    let review = |response: Value| json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response});
    match reply {
        Reply::Allow(warnings) => {
            review(json!({"uid": uid, "allowed": true, "warnings": warnings}))
        }
        Reply::Deny(code, message) => review(json!({
            "uid": uid, "allowed": false,
            "status": {"code": code, "message": message},
        })),
        Reply::Patch(patch) => review(json!({
            "uid": uid, "allowed": true, "patchType": "JSONPatch",
            "patch": base64::engine::general_purpose::STANDARD.encode(patch.to_string()),
        })),
        Reply::Raw(body) => body,
        Reply::WrongUid => review(json!({"uid": "not-the-request", "allowed": true})),
        Reply::Hang => std::future::pending().await,
    }
}

/// A test CA and a rustls server config with a certificate it signed.
fn certificates() -> (String, rustls::ServerConfig) {
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.distinguished_name
        .push(DnType::CommonName, "webhook-test-ca");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca_key = KeyPair::generate().unwrap();
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let ca_pem = ca_cert.pem();
    let issuer = Issuer::new(ca, ca_key);
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.distinguished_name.push(DnType::CommonName, "hooks");
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params.subject_alt_names = vec![
        SanType::IpAddress(std::net::IpAddr::from([127, 0, 0, 1])),
        SanType::DnsName("hooks.default.svc".try_into().unwrap()),
    ];
    let cert = params.signed_by(&key, &issuer).unwrap();
    let key_der = rustls::pki_types::PrivateKeyDer::try_from(key.serialize_der()).unwrap();
    let config = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(vec![cert.der().clone()], key_der)
        .unwrap();
    (ca_pem, config)
}
