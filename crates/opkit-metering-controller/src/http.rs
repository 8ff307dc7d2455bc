//! Metering's report API on a listener: `GET /api/v1/reports/get?name=&namespace=&format=`
//! answers a report's stored results in `csv`, `json` or `tab` (`tabular`), read through
//! [`crate::results::report_text`] as `opkit report get` reads them. Errors are JSON
//! `{"error": "…"}` with 400 (bad parameters), 404 (no such report, no results yet) or 500.
//! The same listener serves the metering controllers' runtime metrics at `/metrics` (the
//! Prometheus text format), so a Prometheus can scrape `opkit up --metering` itself.
//! [`answer`] is the same report API for a server that mounts it on its own address (the API
//! server's, in `opkit up --metering-on-apiserver`).

use std::collections::{BTreeMap, HashMap};
use std::future::Future;

use axum::extract::{RawQuery, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
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
    let (status, content_type, body) = report(&client, query.as_deref()).await;
    (status, [(header::CONTENT_TYPE, content_type)], body).into_response()
}

/// The user a server in front of [`answer`] authenticated.
#[derive(Clone, Debug, Default)]
pub struct Caller {
    /// The user name.
    pub user: String,
    /// Its uid, if known.
    pub uid: String,
    /// Its groups.
    pub groups: Vec<String>,
    /// The authenticator's extra attributes.
    pub extra: BTreeMap<String, Vec<String>>,
}

/// The report API as one request in, one response out, for a server that mounts it on its own
/// address (`opkit up --metering-on-apiserver` mounts it on the API server's, behind its
/// authentication and authorisation): `GET` [`GET_PATH`] answers as on the listener; another
/// path is 404, another method 405. With a `caller`, a report is answered only if the caller may
/// `get` that Report (a SubjectAccessReview), else 403; the results are read with `client`'s
/// credentials.
pub async fn answer(
    client: kube::Client,
    caller: Option<Caller>,
    request: axum::http::Request<axum::body::Bytes>,
) -> axum::http::Response<axum::body::Bytes> {
    let (status, content_type, body) = if request.uri().path() != GET_PATH {
        error(
            StatusCode::NOT_FOUND,
            format!(
                "no such path: {} (the report API is {GET_PATH})",
                request.uri().path()
            ),
        )
    } else if request.method() != axum::http::Method::GET {
        error(
            StatusCode::METHOD_NOT_ALLOWED,
            format!("{GET_PATH} answers GET, not {}", request.method()),
        )
    } else {
        match &caller {
            Some(caller) => match may_get(&client, caller, request.uri().query()).await {
                Ok(()) => report(&client, request.uri().query()).await,
                Err(refused) => refused,
            },
            None => report(&client, request.uri().query()).await,
        }
    };
    let mut response = axum::http::Response::new(axum::body::Bytes::from(body));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        axum::http::HeaderValue::from_static(content_type),
    );
    response
}

/// Whether `caller` may get the Report the query names (a missing name is left to [`report`]).
async fn may_get(
    client: &kube::Client,
    caller: &Caller,
    query: Option<&str>,
) -> Result<(), (StatusCode, &'static str, String)> {
    let params = params(query);
    let Some(name) = params.get("name").filter(|v| !v.is_empty()) else {
        return Ok(());
    };
    let namespace = params
        .get("namespace")
        .filter(|v| !v.is_empty())
        .map_or("default", String::as_str);
    let review = SubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            user: Some(caller.user.clone()),
            uid: Some(caller.uid.clone()).filter(|u| !u.is_empty()),
            groups: Some(caller.groups.clone()),
            extra: Some(caller.extra.clone()),
            resource_attributes: Some(ResourceAttributes {
                group: Some("metering.opkit.dev".into()),
                resource: Some("reports".into()),
                verb: Some("get".into()),
                namespace: Some(namespace.to_owned()),
                name: Some(name.clone()),
                ..Default::default()
            }),
            ..Default::default()
        },
        ..Default::default()
    };
    let api: kube::Api<SubjectAccessReview> = kube::Api::all(client.clone());
    let allowed = api
        .create(&Default::default(), &review)
        .await
        .map_err(|e| {
            error(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("cannot review access: {e}"),
            )
        })?
        .status
        .is_some_and(|s| s.allowed);
    if allowed {
        Ok(())
    } else {
        Err(error(
            StatusCode::FORBIDDEN,
            format!(
                "{:?} may not get Report {namespace}/{name} (reports.metering.opkit.dev)",
                caller.user
            ),
        ))
    }
}

fn params(query: Option<&str>) -> HashMap<String, String> {
    form_urlencoded::parse(query.unwrap_or_default().as_bytes())
        .into_owned()
        .collect()
}

/// The answer to `GET /api/v1/reports/get?<query>`: status, content type and body.
async fn report(client: &kube::Client, query: Option<&str>) -> (StatusCode, &'static str, String) {
    let params = params(query);
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
    match report_text(client, namespace, name, format).await {
        Ok(text) => {
            let kind = match format {
                Format::Csv => "text/csv",
                Format::Json => "application/json",
                Format::Tab => "text/plain",
            };
            (StatusCode::OK, kind, text)
        }
        Err(e @ (ResultsError::NoReport { .. } | ResultsError::NoResults { .. })) => {
            error(StatusCode::NOT_FOUND, e.to_string())
        }
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

fn error(status: StatusCode, message: String) -> (StatusCode, &'static str, String) {
    (
        status,
        "application/json",
        serde_json::json!({ "error": message }).to_string(),
    )
}
