//! Calling one webhook the control plane calls out to (admission webhooks, CRD conversion
//! webhooks): an HTTPS POST of a review with the webhook's `caBundle` as the only trust root,
//! bounded by a timeout.
//!
//! Both kinds of webhook share upstream's `WebhookClientConfig` (`url`, or a `service` with
//! `namespace`, `name`, `path` and `port`, and `caBundle`), so both share this client.
//! One connection per call (hyper's HTTP/1.1 client over tokio-rustls): webhook calls are
//! few, and a fresh connection never carries a stale certificate after a rotation. Errors are
//! worded as client-go words them (`Post "URL": ...`), because upstream quotes them in
//! `failed calling webhook "NAME": failed to call webhook: ...` and
//! `conversion webhook for ... failed: ...`.

mod service;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::rt::TokioIo;
use serde_json::Value;

use crate::registry::Registry;
use crate::storage::Storage;

/// Where a webhook is reached (`clientConfig.url` or `clientConfig.service`).
#[derive(Debug, Clone)]
pub(crate) enum Endpoint {
    /// `clientConfig.url`.
    Url(String),
    /// `clientConfig.service`.
    Service {
        namespace: String,
        name: String,
        port: u16,
        path: String,
    },
}

impl Endpoint {
    /// The endpoint of a `clientConfig`: its `url`, or its `service` as (`namespace`, `name`,
    /// `port` (443 when unset), `path`). Validation refuses a configuration with neither; an
    /// empty URL fails every call.
    pub(crate) fn of(
        url: Option<String>,
        service: Option<(String, String, Option<i32>, Option<String>)>,
    ) -> Endpoint {
        match (url, service) {
            (Some(url), _) => Endpoint::Url(url),
            (None, Some((namespace, name, port, path))) => Endpoint::Service {
                namespace,
                name,
                port: port.and_then(|p| u16::try_from(p).ok()).unwrap_or(443),
                path: path.unwrap_or_default(),
            },
            (None, None) => Endpoint::Url(String::new()),
        }
    }
}

/// One webhook as the client calls it: where, whom to trust, how long to wait.
#[derive(Debug, Clone)]
pub(crate) struct Callee {
    pub(crate) endpoint: Endpoint,
    /// `clientConfig.caBundle` (PEM), the only trust root of calls to it.
    pub(crate) ca_bundle: Vec<u8>,
    pub(crate) timeout: Duration,
}

/// The largest answer read from a webhook (upstream's client has no smaller bound than the
/// request size limit).
const MAX_RESPONSE: usize = 3 * 1024 * 1024;

/// Where one call goes.
struct Target {
    /// The URL as errors show it (`https://host:port/path`).
    url: String,
    /// `host:port` to connect to.
    connect: String,
    /// The name the certificate must carry.
    server_name: String,
    /// `Host` header.
    authority: String,
    /// Path and query of the POST.
    path_and_query: String,
}

/// Posts `body` to the webhook and returns the answer's bytes, or the reason the call failed.
pub(crate) async fn call(
    storage: &Storage,
    registry: &Registry,
    callee: &Callee,
    body: Vec<u8>,
) -> Result<Bytes, String> {
    let timeout_secs = callee.timeout.as_secs().max(1);
    let target = target(storage, registry, &callee.endpoint, timeout_secs)?;
    let post = |reason: String| format!("Post \"{}\": {reason}", target.url);
    match tokio::time::timeout(
        callee.timeout,
        post_review(&target, &callee.ca_bundle, body),
    )
    .await
    {
        Ok(Ok(bytes)) => Ok(bytes),
        Ok(Err(reason)) => Err(post(reason)),
        Err(_) => Err(post("context deadline exceeded".into())),
    }
}

fn target(
    storage: &Storage,
    registry: &Registry,
    endpoint: &Endpoint,
    timeout_secs: u64,
) -> Result<Target, String> {
    match endpoint {
        Endpoint::Url(url) => {
            let uri: http::Uri = url
                .parse()
                .map_err(|e| format!("invalid webhook URL {url:?}: {e}"))?;
            let host = uri
                .host()
                .ok_or_else(|| format!("invalid webhook URL {url:?}: no host"))?;
            let port = uri.port_u16().unwrap_or(443);
            let bare = host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_string();
            let path = match uri.path() {
                "" => "/",
                p => p,
            };
            let connect = match bare.contains(':') {
                true => format!("[{bare}]:{port}"),
                false => format!("{bare}:{port}"),
            };
            Ok(Target {
                url: format!("{}?timeout={timeout_secs}s", url.trim_end_matches('?')),
                authority: uri
                    .authority()
                    .map(|a| a.to_string())
                    .unwrap_or_else(|| connect.clone()),
                connect,
                server_name: bare,
                path_and_query: format!("{path}?timeout={timeout_secs}s"),
            })
        }
        Endpoint::Service {
            namespace,
            name,
            port,
            path,
        } => {
            let host = format!("{name}.{namespace}.svc");
            let path = match path.as_str() {
                "" => "/",
                p => p,
            };
            let url = format!("https://{host}:{port}{path}?timeout={timeout_secs}s");
            let connect = service::resolve(storage, registry, namespace, name, *port)
                .map_err(|reason| format!("Post \"{url}\": {reason}"))?;
            Ok(Target {
                url,
                connect,
                server_name: host.clone(),
                authority: format!("{host}:{port}"),
                path_and_query: format!("{path}?timeout={timeout_secs}s"),
            })
        }
    }
}

fn tls_config(ca_bundle: &[u8]) -> Result<rustls::ClientConfig, String> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    if ca_bundle.is_empty() {
        return Err(
            "tls: failed to verify certificate: the webhook's clientConfig.caBundle is empty (this control plane trusts no other roots)"
                .into(),
        );
    }
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca_bundle) {
        let cert = cert.map_err(|e| format!("invalid caBundle: {e}"))?;
        roots
            .add(cert)
            .map_err(|e| format!("invalid caBundle: {e}"))?;
    }
    if roots.is_empty() {
        return Err("invalid caBundle: no PEM certificate in it".into());
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth())
}

async fn post_review(target: &Target, ca_bundle: &[u8], body: Vec<u8>) -> Result<Bytes, String> {
    let config = tls_config(ca_bundle)?;
    let server_name = rustls::pki_types::ServerName::try_from(target.server_name.clone())
        .map_err(|e| format!("invalid server name {:?}: {e}", target.server_name))?;
    let tcp = tokio::net::TcpStream::connect(&target.connect)
        .await
        .map_err(|e| format!("dial tcp {}: connect: {e}", target.connect))?;
    let _ = tcp.set_nodelay(true);
    let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(server_name, tcp)
        .await
        .map_err(|e| format!("tls: {e}"))?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .map_err(|e| e.to_string())?;
    let driver = tokio::spawn(connection);
    let request = http::Request::post(&target.path_and_query)
        .header(http::header::HOST, &target.authority)
        .header(http::header::CONTENT_TYPE, "application/json")
        .header(http::header::ACCEPT, "application/json, */*")
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| e.to_string())?;
    let result = async {
        let response = sender.send_request(request).await.map_err(|e| e.to_string())?;
        let status = response.status();
        let bytes = Limited::new(response.into_body(), MAX_RESPONSE)
            .collect()
            .await
            .map_err(|e| e.to_string())?
            .to_bytes();
        if !status.is_success() {
            let text = String::from_utf8_lossy(&bytes);
            return Err(format!(
                "an error on the server ({:?}) has prevented the request from succeeding (status {})",
                text.trim(),
                status.as_u16()
            ));
        }
        Ok(bytes)
    }
    .await;
    driver.abort();
    result
}

/// A JSON encoding of a review that cannot fail on a `Value` tree.
pub(crate) fn encode<T: serde::Serialize>(review: &T) -> Vec<u8> {
    serde_json::to_vec(review).unwrap_or_else(|_| Value::Null.to_string().into_bytes())
}
