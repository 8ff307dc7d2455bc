//! catalogd's HTTP API over a listener: each request is handed to
//! [`opkit_olm::CatalogServer::respond`] (the pure answer) and its answer written back. Used by
//! the `ClusterCatalog` controller and by `opkit catalog serve`, so both answer alike.

use std::future::Future;
use std::sync::{Arc, RwLock};

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode};
use axum::response::Response;
use opkit_olm::{CatalogServer, ServeRequest};

/// The answer of `server` to `req`.
pub fn answer(server: &CatalogServer, req: &Request) -> Response {
    let header = |name: &str| req.headers().get(name).and_then(|v| v.to_str().ok());
    let r = server.respond(&ServeRequest {
        method: req.method().as_str(),
        path: req.uri().path(),
        query: req.uri().query(),
        if_modified_since: header("if-modified-since"),
    });
    let mut response = Response::new(Body::from(r.body));
    *response.status_mut() = StatusCode::from_u16(r.status).unwrap_or(StatusCode::OK);
    for (name, value) in r.headers {
        if let Ok(value) = HeaderValue::from_str(&value) {
            response.headers_mut().insert(name, value);
        }
    }
    response
}

/// Serves the catalogs `server` holds (as they change) on `listener` until `stop` completes.
pub async fn serve(
    listener: tokio::net::TcpListener,
    server: Arc<RwLock<CatalogServer>>,
    stop: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let app = axum::Router::new().fallback(move |req: Request| {
        let server = server.clone();
        async move {
            let server = server.read().unwrap_or_else(|p| p.into_inner());
            answer(&server, &req)
        }
    });
    axum::serve(listener, app)
        .with_graceful_shutdown(stop)
        .await
}
