//! Fetching a remote repository's files (`index.yaml`, package `.tgz`s) over HTTP(S) the way
//! KUDO's client does: a GET with `User-Agent: KUDO/<version>`, redirects followed, any status
//! but 200 refused with KUDO's message (`failed to fetch URL : 404 Not Found`).
//!
//! The client is hyper-util's with rustls (the stack kube-rs already brings, so no second
//! HTTP or TLS library): HTTPS servers are checked against the system's trusted roots.
//! The repository code is synchronous, as KUDO's is, and runs inside async commands; so
//! [`get`] runs the request on a small runtime of its own, on a thread of its own.

use std::sync::Arc;

use http_body_util::{BodyExt, Empty, Limited};
use hyper::body::Bytes;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

/// Redirects followed before giving up (Go's `http.Client` follows ten).
const MAX_REDIRECTS: usize = 10;
/// The largest body accepted (an index or a package is far smaller).
const MAX_BODY: usize = 64 * 1024 * 1024;

/// Why a fetch failed.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// The URL does not parse or is not http(s).
    #[error("invalid URL {url}: {message}")]
    Url {
        /// The URL.
        url: String,
        /// What is wrong.
        message: String,
    },
    /// The connection or the TLS handshake failed, or the body could not be read.
    #[error("getting {url}: {message}")]
    Transport {
        /// The URL.
        url: String,
        /// The error, with its causes.
        message: String,
    },
    /// The server answered with a status other than 200 (KUDO's message).
    #[error("failed to fetch {url} : {status}")]
    Status {
        /// The URL.
        url: String,
        /// The status, code and reason (`404 Not Found`).
        status: String,
    },
}

/// The error and its causes on one line.
fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = s.source();
    }
    out
}

/// GETs `url` and returns the body; blocking (see the module doc).
pub fn get(url: &str) -> Result<Vec<u8>, FetchError> {
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| FetchError::Transport {
                        url: url.to_string(),
                        message: format!("cannot start a runtime: {e}"),
                    })?;
                runtime.block_on(fetch(url))
            })
            .join()
            .unwrap_or_else(|_| {
                Err(FetchError::Transport {
                    url: url.to_string(),
                    message: "the fetching thread panicked".to_string(),
                })
            })
    })
}

/// GETs `url` (following redirects) and returns the body of its 200 answer.
pub async fn fetch(url: &str) -> Result<Vec<u8>, FetchError> {
    let transport = |message: String| FetchError::Transport {
        url: url.to_string(),
        message,
    };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = hyper_rustls::HttpsConnectorBuilder::new();
    // No trusted roots on the system: plain HTTP still works, HTTPS fails to verify.
    let builder = match builder.with_provider_and_native_roots(provider.clone()) {
        Ok(b) => b,
        Err(_) => hyper_rustls::HttpsConnectorBuilder::new().with_tls_config(
            rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .map_err(|e| transport(e.to_string()))?
                .with_root_certificates(rustls::RootCertStore::empty())
                .with_no_client_auth(),
        ),
    };
    let connector = builder.https_or_http().enable_http1().build();
    let client: Client<_, Empty<Bytes>> = Client::builder(TokioExecutor::new()).build(connector);
    let mut current = parse(url)?;
    for _ in 0..=MAX_REDIRECTS {
        let request = http::Request::get(current.clone())
            .header(
                http::header::USER_AGENT,
                format!("KUDO/{}", env!("CARGO_PKG_VERSION")),
            )
            .body(Empty::new())
            .map_err(|e| transport(e.to_string()))?;
        let response = client
            .request(request)
            .await
            .map_err(|e| transport(chain(&e)))?;
        let status = response.status();
        if status.is_redirection()
            && let Some(location) = response.headers().get(http::header::LOCATION)
        {
            let location = location
                .to_str()
                .map_err(|e| transport(format!("redirect location: {e}")))?;
            current = resolve(&current, location).map_err(|message| FetchError::Url {
                url: location.to_string(),
                message,
            })?;
            continue;
        }
        if status != http::StatusCode::OK {
            return Err(FetchError::Status {
                url: current.to_string(),
                status: status.to_string(),
            });
        }
        let body = Limited::new(response.into_body(), MAX_BODY)
            .collect()
            .await
            .map_err(|e| transport(format!("reading the body: {e}")))?;
        return Ok(body.to_bytes().to_vec());
    }
    Err(transport(format!(
        "stopped after {MAX_REDIRECTS} redirects"
    )))
}

fn parse(url: &str) -> Result<http::Uri, FetchError> {
    let uri: http::Uri = url
        .parse()
        .map_err(|e: http::uri::InvalidUri| FetchError::Url {
            url: url.to_string(),
            message: e.to_string(),
        })?;
    match uri.scheme_str() {
        Some("http" | "https") if uri.host().is_some() => Ok(uri),
        _ => Err(FetchError::Url {
            url: url.to_string(),
            message: "only http:// and https:// URLs with a host can be fetched".to_string(),
        }),
    }
}

/// A redirect's `Location` against the URL that answered it.
fn resolve(base: &http::Uri, location: &str) -> Result<http::Uri, String> {
    if location.starts_with("http://") || location.starts_with("https://") {
        return location
            .parse()
            .map_err(|e: http::uri::InvalidUri| e.to_string());
    }
    let path = if location.starts_with('/') {
        location.to_string()
    } else {
        let dir = base.path().rsplit_once('/').map_or("", |(d, _)| d);
        format!("{dir}/{location}")
    };
    let authority = base.authority().map(|a| a.as_str()).unwrap_or_default();
    let scheme = base.scheme_str().unwrap_or("http");
    format!("{scheme}://{authority}{path}")
        .parse()
        .map_err(|e: http::uri::InvalidUri| e.to_string())
}

/// KUDO's URL of a repository's index: the repository URL with `/index.yaml` added to its
/// path (the query kept).
pub fn index_url(repo_url: &str) -> String {
    let (base, query) = match repo_url.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (repo_url, None),
    };
    let mut url = format!("{}/index.yaml", base.trim_end_matches('/'));
    if let Some(q) = query {
        url.push('?');
        url.push_str(q);
    }
    url
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_index_url_appends_index_yaml_to_the_path() {
        assert_eq!(
            index_url("https://kudo-repository.storage.googleapis.com/v1"),
            "https://kudo-repository.storage.googleapis.com/v1/index.yaml"
        );
        assert_eq!(
            index_url("http://h:8080/repo/?x=1"),
            "http://h:8080/repo/index.yaml?x=1"
        );
    }

    #[test]
    fn redirects_resolve_against_the_answering_url() {
        let base: http::Uri = "http://h:1/a/b/index.yaml".parse().unwrap();
        assert_eq!(resolve(&base, "/c").unwrap().to_string(), "http://h:1/c");
        assert_eq!(
            resolve(&base, "c.yaml").unwrap().to_string(),
            "http://h:1/a/b/c.yaml"
        );
        assert_eq!(
            resolve(&base, "https://o/x").unwrap().to_string(),
            "https://o/x"
        );
    }

    #[test]
    fn only_http_urls_are_fetched() {
        let err = get("ftp://h/x").unwrap_err().to_string();
        assert_eq!(
            err,
            "invalid URL ftp://h/x: only http:// and https:// URLs with a host can be fetched"
        );
    }
}
