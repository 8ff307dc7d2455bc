//! Metering's report API on a listener: `GET /api/v1/reports/get?name=&namespace=&format=`
//! answers a report's stored results in `csv`, `json` or `tab` (`tabular`), read through
//! [`crate::results::report_text`] as `opkit report get` reads them. Errors are JSON
//! `{"error": "…"}` with 400 (bad parameters), 404 (no such report, no results yet) or 500.
//! The same listener serves the metering controllers' runtime metrics at `/metrics` (the
//! Prometheus text format), so a Prometheus can scrape `opkit up --metering` itself.

use std::collections::HashMap;
use std::future::Future;

use axum::extract::{RawQuery, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use opkit_metering::Format;

use crate::results::{ResultsError, report_text};

/// The path of the report API.
pub const GET_PATH: &str = "/api/v1/reports/get";

/// Serves the report API for the cluster of `client`, and `metrics` at `/metrics`, on
/// `listener` until `stop` completes.
pub async fn serve(
    listener: tokio::net::TcpListener,
    client: kube::Client,
    metrics: opkit::metrics::Metrics,
    stop: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let app = axum::Router::new()
        .route(GET_PATH, axum::routing::get(get))
        .with_state(client)
        .route(
            "/metrics",
            axum::routing::get(move || async move {
                (
                    [(
                        header::CONTENT_TYPE,
                        "application/openmetrics-text; version=1.0.0; charset=utf-8",
                    )],
                    metrics.render(),
                )
            }),
        );
    axum::serve(listener, app)
        .with_graceful_shutdown(stop)
        .await
}

async fn get(State(client): State<kube::Client>, RawQuery(query): RawQuery) -> Response {
    let params: HashMap<String, String> =
        form_urlencoded::parse(query.unwrap_or_default().as_bytes())
            .into_owned()
            .collect();
    let param = |name: &str| params.get(name).filter(|v| !v.is_empty());
    let Some(name) = param("name") else {
        return error(
            StatusCode::BAD_REQUEST,
            "the name parameter is required".into(),
        );
    };
    let namespace = param("namespace").map_or("default", String::as_str);
    let format = match param("format")
        .map_or("csv", String::as_str)
        .parse::<Format>()
    {
        Ok(f) => f,
        Err(e) => return error(StatusCode::BAD_REQUEST, e.to_string()),
    };
    match report_text(&client, namespace, name, format).await {
        Ok(text) => {
            let kind = match format {
                Format::Csv => "text/csv",
                Format::Json => "application/json",
                Format::Tab => "text/plain",
            };
            ([(header::CONTENT_TYPE, kind)], text).into_response()
        }
        Err(e @ (ResultsError::NoReport { .. } | ResultsError::NoResults { .. })) => {
            error(StatusCode::NOT_FOUND, e.to_string())
        }
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

fn error(status: StatusCode, message: String) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        serde_json::json!({ "error": message }).to_string(),
    )
        .into_response()
}
