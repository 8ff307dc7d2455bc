//! Calling one webhook the control plane calls out to (admission webhooks, CRD conversion
//! webhooks): an HTTPS POST of a review with the webhook's `caBundle` as the only trust root,
//! bounded by a timeout.
//!
//! Both kinds of webhook share upstream's `WebhookClientConfig` (`url`, or a `service` with
//! `namespace`, `name`, `path` and `port`, and `caBundle`), so both share this client.
//!
//! HTTP/1.1 over tokio-rustls, with idle connections kept for reuse (as Go's transport keeps
//! them for kube-apiserver): a webhook on every write would otherwise pay a TCP and TLS
//! handshake per write. A connection is reused only for the same address, certificate name
//! and `caBundle`, so a changed `caBundle` or a re-pointed Service gets fresh connections; idle
//! ones are dropped after 90 s (Go's `IdleConnTimeout`). A call that fails on a reused
//! connection before the webhook answered is sent once more on a new one. Errors are worded as
//! client-go words them (`Post "URL": ...`), because upstream quotes them in
//! `failed calling webhook "NAME": failed to call webhook: ...` and
//! `conversion webhook for ... failed: ...`.

mod service;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::rt::TokioIo;
use serde_json::Value;

use crate::registry::Registry;
use crate::storage::Storage;
use crate::webhook_config::{Callee, Endpoint};

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

/// Idle connections kept per destination at most (Go's `MaxIdleConnsPerHost` as
/// kube-apiserver sets it: 25).
const MAX_IDLE_PER_DESTINATION: usize = 25;

/// How long an idle connection is kept.
const IDLE_TIMEOUT: Duration = Duration::from_secs(90);

/// Distinct `caBundle`s whose TLS settings are kept (a bound, not a tuning knob).
const MAX_TLS_CONFIGS: usize = 64;

/// A connection is reused only for the same address, certificate name and trust root.
type Destination = (String, String, Vec<u8>);

type Sender = hyper::client::conn::http1::SendRequest<Full<Bytes>>;

/// The client the control plane calls webhooks with: it resolves Service references against
/// this plane's storage and keeps connections and TLS settings for reuse.
pub(crate) struct WebhookClient {
    storage: Arc<Storage>,
    registry: Arc<Registry>,
    idle: Mutex<HashMap<Destination, Vec<(Sender, Instant)>>>,
    tls: Mutex<HashMap<Vec<u8>, Arc<rustls::ClientConfig>>>,
}

impl WebhookClient {
    pub(crate) fn new(storage: Arc<Storage>, registry: Arc<Registry>) -> WebhookClient {
        WebhookClient {
            storage,
            registry,
            idle: Mutex::new(HashMap::new()),
            tls: Mutex::new(HashMap::new()),
        }
    }

    /// Posts `body` to the webhook and returns the answer's bytes, or the reason the call
    /// failed.
    pub(crate) async fn call(&self, callee: &Callee, body: Vec<u8>) -> Result<Bytes, String> {
        let timeout_secs = callee.timeout.as_secs().max(1);
        let target = target(
            &self.storage,
            &self.registry,
            &callee.endpoint,
            timeout_secs,
        )?;
        let post = |reason: String| format!("Post \"{}\": {reason}", target.url);
        let body = Bytes::from(body);
        match tokio::time::timeout(callee.timeout, self.post(&target, &callee.ca_bundle, body))
            .await
        {
            Ok(Ok(bytes)) => Ok(bytes),
            Ok(Err(reason)) => Err(post(reason)),
            Err(_) => Err(post("context deadline exceeded".into())),
        }
    }

    async fn post(&self, target: &Target, ca_bundle: &[u8], body: Bytes) -> Result<Bytes, String> {
        let destination = (
            target.connect.clone(),
            target.server_name.clone(),
            ca_bundle.to_vec(),
        );
        // On `Unsent`, the webhook closed the idle connection first: a new one is tried.
        if let Some(sender) = self.reusable(&destination)
            && let Ok((bytes, sender)) = send(sender, target, body.clone()).await
        {
            self.keep(destination, sender);
            return bytes;
        }
        let config = self.tls_config(ca_bundle)?;
        let sender = connect(target, config).await?;
        match send(sender, target, body).await {
            Ok((bytes, sender)) => {
                self.keep(destination, sender);
                bytes
            }
            Err(Unsent) => Err("connection closed before the request was sent".into()),
        }
    }

    /// An idle connection to `destination` that can take a request now.
    fn reusable(&self, destination: &Destination) -> Option<Sender> {
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        let senders = idle.get_mut(destination)?;
        while let Some((sender, since)) = senders.pop() {
            if since.elapsed() < IDLE_TIMEOUT && sender.is_ready() {
                return Some(sender);
            }
        }
        None
    }

    /// Keeps a connection whose answer was read in full for the next call.
    fn keep(&self, destination: Destination, sender: Option<Sender>) {
        let Some(sender) = sender.filter(Sender::is_ready) else {
            return;
        };
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        idle.retain(|_, senders| {
            senders.retain(|(s, since)| since.elapsed() < IDLE_TIMEOUT && !s.is_closed());
            !senders.is_empty()
        });
        let senders = idle.entry(destination).or_default();
        if senders.len() < MAX_IDLE_PER_DESTINATION {
            senders.push((sender, Instant::now()));
        }
    }

    /// TLS settings trusting only `ca_bundle`, built once per bundle (which also lets new
    /// connections resume TLS sessions).
    fn tls_config(&self, ca_bundle: &[u8]) -> Result<Arc<rustls::ClientConfig>, String> {
        let mut configs = self.tls.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(config) = configs.get(ca_bundle) {
            return Ok(config.clone());
        }
        let config = Arc::new(tls_config(ca_bundle)?);
        if configs.len() >= MAX_TLS_CONFIGS {
            configs.clear();
        }
        configs.insert(ca_bundle.to_vec(), config.clone());
        Ok(config)
    }
}

impl std::fmt::Debug for WebhookClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookClient").finish_non_exhaustive()
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

/// A new connection to `target`, TLS-verified against `config`'s roots.
async fn connect(target: &Target, config: Arc<rustls::ClientConfig>) -> Result<Sender, String> {
    let server_name = rustls::pki_types::ServerName::try_from(target.server_name.clone())
        .map_err(|e| format!("invalid server name {:?}: {e}", target.server_name))?;
    let tcp = tokio::net::TcpStream::connect(&target.connect)
        .await
        .map_err(|e| format!("dial tcp {}: connect: {e}", target.connect))?;
    let _ = tcp.set_nodelay(true);
    let tls = tokio_rustls::TlsConnector::from(config)
        .connect(server_name, tcp)
        .await
        .map_err(|e| format!("tls: {e}"))?;
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .map_err(|e| e.to_string())?;
    // Ends when the sender is dropped (the connection is not kept) or the webhook closes it.
    tokio::spawn(connection);
    Ok(sender)
}

/// The request never reached the webhook: its connection was closed first.
struct Unsent;

/// Sends one review on `sender`: the webhook's answer (or why the call failed), and the
/// connection when it can carry another request.
async fn send(
    mut sender: Sender,
    target: &Target,
    body: Bytes,
) -> Result<(Result<Bytes, String>, Option<Sender>), Unsent> {
    let request = match http::Request::post(&target.path_and_query)
        .header(http::header::HOST, &target.authority)
        .header(http::header::CONTENT_TYPE, "application/json")
        .header(http::header::ACCEPT, "application/json, */*")
        .body(Full::new(body))
    {
        Ok(request) => request,
        Err(e) => return Ok((Err(e.to_string()), None)),
    };
    let response = match sender.send_request(request).await {
        Ok(response) => response,
        Err(e) if e.is_canceled() || e.is_closed() => return Err(Unsent),
        Err(e) => return Ok((Err(e.to_string()), None)),
    };
    let status = response.status();
    let bytes = match Limited::new(response.into_body(), MAX_RESPONSE)
        .collect()
        .await
    {
        Ok(collected) => collected.to_bytes(),
        Err(e) => return Ok((Err(e.to_string()), None)),
    };
    if !status.is_success() {
        let text = String::from_utf8_lossy(&bytes);
        let reason = format!(
            "an error on the server ({:?}) has prevented the request from succeeding (status {})",
            text.trim(),
            status.as_u16()
        );
        return Ok((Err(reason), Some(sender)));
    }
    Ok((Ok(bytes), Some(sender)))
}

/// A JSON encoding of a review that cannot fail on a `Value` tree.
pub(crate) fn encode<T: serde::Serialize>(review: &T) -> Vec<u8> {
    serde_json::to_vec(review).unwrap_or_else(|_| Value::Null.to_string().into_bytes())
}
