//! The HTTPS server: TLS with a certificate that can be swapped while serving, one route per
//! webhook path (AdmissionReview or ConversionReview in and out), metrics per path.

use std::net::SocketAddr;
use std::sync::{Arc, RwLock};
use std::time::Instant;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::service::TowerToHyperService;
use kube::Client;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use tokio::net::TcpListener;
use tokio::task::JoinSet;

use super::conversion::{CONVERT_PATH, Conversions};
use super::review::{self, Hook};
use super::{CertSource, SelfManagedCerts, WebhookServer, certs};
use crate::error::{Error, Result};
use crate::metrics::{Metrics, WebhookMetrics};

/// The serving certificate, replaced on renewal; new handshakes get the new one.
#[derive(Debug)]
struct Reloadable(RwLock<Arc<CertifiedKey>>);

impl Reloadable {
    fn set(&self, key: Arc<CertifiedKey>) {
        *self.0.write().unwrap_or_else(|p| p.into_inner()) = key;
    }
}

impl ResolvesServerCert for Reloadable {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.0.read().unwrap_or_else(|p| p.into_inner()).clone())
    }
}

/// Gets the first certificate, binds, and spawns the server (and, for self-managed
/// certificates, the renewal loop) into `tasks`. Returns the bound address.
pub(crate) async fn start(
    config: WebhookServer,
    client: Client,
    metrics: &Metrics,
    tasks: &mut JoinSet<()>,
) -> Result<SocketAddr> {
    crate::install_crypto_provider();
    // A conversion set up wrongly is a programming error: refuse to start.
    let conversions = if config.conversions.is_empty() {
        None
    } else {
        Some(Arc::new(Conversions::new(&config.conversions)?))
    };
    let first = match &config.certs {
        CertSource::Dir(dir) => {
            let read = |name: &str| {
                let path = dir.join(name);
                std::fs::read_to_string(&path)
                    .map_err(|e| Error::WebhookCerts(format!("{}: {e}", path.display())))
            };
            certs::certified_key(&read("tls.crt")?, &read("tls.key")?)?
        }
        CertSource::SelfManaged(sm) => {
            let bundle = certs::ensure(&client, sm).await?;
            if let Err(e) = certs::publish(&client, sm, &bundle.ca_bundle()).await {
                tracing::warn!(error = %e, "webhook caBundle not published yet; retrying");
            }
            bundle.certified_key()?
        }
    };
    let resolver = Arc::new(Reloadable(RwLock::new(first)));
    let mut tls = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_cert_resolver(resolver.clone());
    tls.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(tls));

    let mut router = Router::new();
    for (path, hook) in &config.hooks {
        let state = Route {
            endpoint: Endpoint::Admission(hook.clone()),
            metrics: metrics.webhook(path),
        };
        router = router.route(path, post(handle).with_state(state));
    }
    if let Some(conversions) = conversions {
        let state = Route {
            endpoint: Endpoint::Conversion(conversions),
            metrics: metrics.webhook(CONVERT_PATH),
        };
        router = router.route(CONVERT_PATH, post(handle).with_state(state));
    }

    let listener = TcpListener::bind(config.addr)
        .await
        .map_err(|source| Error::Bind {
            addr: config.addr,
            source,
        })?;
    let addr = listener.local_addr().map_err(|source| Error::Bind {
        addr: config.addr,
        source,
    })?;
    tracing::info!(%addr, paths = ?config.paths(), "serving webhooks");
    tasks.spawn(accept(listener, acceptor, router));
    if let CertSource::SelfManaged(sm) = config.certs {
        tasks.spawn(renew(client, sm, resolver));
    }
    Ok(addr)
}

async fn accept(listener: TcpListener, acceptor: tokio_rustls::TlsAcceptor, router: Router) {
    let mut connections = JoinSet::new();
    loop {
        let (tcp, peer) = match listener.accept().await {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!(error = %e, "webhook server: accept failed");
                continue;
            }
        };
        let acceptor = acceptor.clone();
        let service = TowerToHyperService::new(router.clone());
        connections.spawn(async move {
            let tls = match acceptor.accept(tcp).await {
                Ok(tls) => tls,
                Err(e) => {
                    tracing::debug!(%peer, error = %e, "webhook server: TLS handshake failed");
                    return;
                }
            };
            let builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
            if let Err(e) = builder.serve_connection(TokioIo::new(tls), service).await {
                tracing::debug!(%peer, error = %e, "webhook server: connection ended");
            }
        });
        // Reap finished connections so the set does not grow.
        while connections.try_join_next().is_some() {}
    }
}

/// Re-reads the Secret every interval: renews what is due (or takes another replica's
/// renewal), serves the new certificate, and re-publishes the caBundle (a configuration
/// created late or re-applied without it gets it here).
async fn renew(client: Client, config: SelfManagedCerts, resolver: Arc<Reloadable>) {
    let mut serving: Option<String> = None;
    loop {
        tokio::time::sleep(config.check_interval).await;
        match certs::ensure(&client, &config).await {
            Ok(bundle) => {
                if serving.as_deref() != Some(bundle.cert_pem.as_str()) {
                    match bundle.certified_key() {
                        Ok(key) => {
                            resolver.set(key);
                            serving = Some(bundle.cert_pem.clone());
                        }
                        Err(e) => {
                            tracing::error!(error = %e, "cannot load the renewed webhook certificate")
                        }
                    }
                }
                if let Err(e) = certs::publish(&client, &config, &bundle.ca_bundle()).await {
                    tracing::warn!(error = %e, "webhook caBundle");
                }
            }
            Err(e) => tracing::error!(error = %e, "webhook certificates"),
        }
    }
}

/// What answers the reviews of one path.
#[derive(Clone)]
enum Endpoint {
    /// A defaulting or validating webhook: AdmissionReview v1.
    Admission(Arc<dyn Hook>),
    /// Every kind's conversions: ConversionReview v1.
    Conversion(Arc<Conversions>),
}

#[derive(Clone)]
struct Route {
    endpoint: Endpoint,
    metrics: WebhookMetrics,
}

async fn handle(State(route): State<Route>, headers: HeaderMap, body: Bytes) -> Response {
    route.metrics.in_flight.inc();
    let started = Instant::now();
    let (code, body) = answer(&route.endpoint, &headers, &body);
    route
        .metrics
        .latency
        .observe(started.elapsed().as_secs_f64());
    route.metrics.answered(code.as_u16());
    route.metrics.in_flight.dec();
    (
        code,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

fn answer(
    endpoint: &Endpoint,
    headers: &HeaderMap,
    body: &[u8],
) -> (StatusCode, serde_json::Value) {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let answered = if content_type.split(';').next().map(str::trim) != Some("application/json") {
        Err(format!(
            "contentType={content_type}, expected application/json"
        ))
    } else {
        match endpoint {
            Endpoint::Admission(hook) => review::decode(body)
                .map(|request| review::response(&request.uid, hook.review(&request))),
            Endpoint::Conversion(conversions) => conversions.review(body),
        }
    };
    match answered {
        Ok(review) => (StatusCode::OK, review),
        // Not a review to answer: a 400 with the reason, as a review the caller can read.
        Err(message) => (
            StatusCode::BAD_REQUEST,
            match endpoint {
                Endpoint::Admission(_) => review::refused(message),
                Endpoint::Conversion(_) => super::conversion::refused(message),
            },
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Allow;
    impl Hook for Allow {
        fn review(&self, _: &review::Request) -> review::Outcome {
            review::Outcome::default()
        }
    }

    fn json_headers() -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::CONTENT_TYPE, "application/json".parse().unwrap());
        h
    }

    #[test]
    fn a_bad_review_is_a_400_with_a_reason() {
        let allow = Endpoint::Admission(Arc::new(Allow));
        let (code, body) = answer(&allow, &json_headers(), b"{}");
        assert_eq!(code, StatusCode::BAD_REQUEST);
        assert!(
            body["response"]["status"]["message"]
                .as_str()
                .unwrap()
                .contains("expected apiVersion admission.k8s.io/v1")
        );
        let (code, body) = answer(&allow, &HeaderMap::new(), b"{}");
        assert_eq!(code, StatusCode::BAD_REQUEST);
        assert_eq!(
            body["response"]["status"]["message"],
            "contentType=, expected application/json"
        );
    }

    #[test]
    fn a_good_review_is_answered_with_its_uid() {
        let review = br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview",
            "request":{"uid":"abc","operation":"CREATE","object":{}}}"#;
        let (code, body) = answer(
            &Endpoint::Admission(Arc::new(Allow)),
            &json_headers(),
            review,
        );
        assert_eq!(code, StatusCode::OK);
        assert_eq!(body["response"]["uid"], "abc");
        assert_eq!(body["response"]["allowed"], true);
    }
}
