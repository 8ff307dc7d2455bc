//! The OperatorHub page: `opkit hub` serves it against any cluster, `opkit up --olm` next to
//! its control plane. It lists the packages of the serving `ClusterCatalog`s ([`catalogs`])
//! and the installed operators, shows a package's description, examples and channels
//! ([`page`]), and its buttons are plain HTML forms posting back here, which then do exactly
//! what `opkit operator …` does ([`crate::extensions`]).
//!
//! Forms carry a token made when the hub starts; a POST without it, or one a browser marks
//! as cross-site, is refused, so another site cannot make a visitor's browser install
//! anything. Pages forbid scripts, frames and foreign form targets (Content-Security-Policy).

mod catalogs;
mod page;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use clap::Args;
use kube::Client;

use crate::cluster::{self, ClusterArgs};
use crate::extensions::{self, InstallRequest, UpgradeRequest};
use page::Flash;

/// Where the hub's pages are (on `opkit hub`'s listener and on `opkit up`'s).
pub(crate) const PREFIX: &str = "/hub";

/// What pages may do: no scripts, no frames, forms only to the hub, images inline.
const CSP: &str = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// `opkit hub`.
#[derive(Args)]
pub(crate) struct HubArgs {
    /// Where to serve the page (port 0 picks a free port).
    #[arg(long, value_name = "ADDR:PORT", default_value = "127.0.0.1:8088")]
    listen: SocketAddr,
    #[command(flatten)]
    cluster: ClusterArgs,
}

/// A running hub, served until [`Hub::shutdown`].
pub(crate) struct Hub {
    url: String,
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Hub {
    /// The page's URL (`http://ADDR/hub/`).
    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    /// Stops serving.
    pub(crate) async fn shutdown(self) -> anyhow::Result<()> {
        let _ = self.stop.send(());
        self.task
            .await
            .context("the OperatorHub server panicked")?
            .context("the OperatorHub server failed")
    }
}

/// Binds `listen` and serves the hub for the cluster of `client`; actions wait up to
/// `timeout` for the lifecycle controller.
pub(crate) async fn start(
    client: Client,
    listen: SocketAddr,
    timeout: Duration,
) -> anyhow::Result<Hub> {
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .with_context(|| format!("cannot serve the OperatorHub page on {listen}"))?;
    let addr = listener.local_addr()?;
    let state = Arc::new(Shared {
        client,
        timeout,
        token: uuid::Uuid::new_v4().simple().to_string(),
    });
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let app = router(state);
    let task = tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(async {
                let _ = stopped.await;
            })
            .await
    });
    Ok(Hub {
        url: format!("http://{addr}{PREFIX}/"),
        stop,
        task,
    })
}

/// Runs `opkit hub` until SIGINT or SIGTERM.
pub(crate) async fn run(args: HubArgs) -> anyhow::Result<()> {
    let mut signals = opkit::signals::Signals::install()?;
    let cluster = cluster::connect(args.cluster.kubeconfig.as_deref()).await?;
    let hub = start(cluster.client, args.listen, args.cluster.timeout).await?;
    println!(
        "serving the OperatorHub page for {} at {}",
        cluster.server,
        hub.url()
    );
    signals.recv().await;
    hub.shutdown().await
}

struct Shared {
    client: Client,
    timeout: Duration,
    token: String,
}

type Hubs = State<Arc<Shared>>;

fn router(state: Arc<Shared>) -> Router {
    Router::new()
        .route(PREFIX, get(|| async { Redirect::permanent("/hub/") }))
        .route(&format!("{PREFIX}/"), get(index))
        .route(
            &format!("{PREFIX}/packages/{{catalog}}/{{package}}"),
            get(package),
        )
        .route(&format!("{PREFIX}/{{action}}"), post(act))
        .with_state(state)
}

/// An HTML answer with the hub's security headers.
fn html(status: StatusCode, body: String) -> Response {
    let mut response = (status, Html(body)).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// The front page, with `flash` on top.
async fn front(state: &Shared, flash: Option<&Flash>) -> String {
    let (packages, problems) = match catalogs::packages(&state.client).await {
        Ok(found) => found,
        Err(e) => (Vec::new(), vec![format!("{e:#}")]),
    };
    let installed = extensions::list(&state.client)
        .await
        .map_err(|e| format!("{e:#}"));
    page::index(
        &packages,
        &problems,
        installed.as_deref().map_err(String::as_str),
        flash,
        &state.token,
    )
}

async fn index(State(state): Hubs) -> Response {
    html(StatusCode::OK, front(&state, None).await)
}

async fn package(State(state): Hubs, Path((catalog, name)): Path<(String, String)>) -> Response {
    let (packages, problems) = match catalogs::packages(&state.client).await {
        Ok(found) => found,
        Err(e) => (Vec::new(), vec![format!("{e:#}")]),
    };
    match packages
        .iter()
        .find(|p| p.catalog == catalog && p.name == name)
    {
        Some(p) => html(StatusCode::OK, page::package(p, None, &state.token)),
        None => {
            let mut why = format!("No served catalog {catalog:?} has a package {name:?}.");
            for p in problems {
                why.push('\n');
                why.push_str(&p);
            }
            html(
                StatusCode::NOT_FOUND,
                page::message("Not found", &Flash::Failed(why)),
            )
        }
    }
}

/// A form's fields; empty ones count as absent.
struct Form(HashMap<String, String>);

impl Form {
    fn get(&self, key: &str) -> Option<String> {
        self.0
            .get(key)
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    }

    fn required(&self, key: &str) -> anyhow::Result<String> {
        self.get(key)
            .with_context(|| format!("the form has no {key:?}: reload the page and try again"))
    }
}

/// A button: checks the form's token, does the action as `opkit operator …` does, and shows
/// the front page with what came of it.
async fn act(
    State(state): Hubs,
    Path(action): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let form = Form(form_urlencoded::parse(&body).into_owned().collect());
    let cross_site = headers
        .get("sec-fetch-site")
        .is_some_and(|v| v.as_bytes() == b"cross-site");
    if cross_site || form.0.get("token") != Some(&state.token) {
        let why = "This form did not come from this hub page (a stale page, or another site): reload the hub and try again.";
        return html(
            StatusCode::FORBIDDEN,
            page::message("Refused", &Flash::Failed(why.into())),
        );
    }
    let (status, flash) = match perform(&state, &action, &form).await {
        Ok(said) => (StatusCode::OK, Flash::Done(said)),
        Err(e) => (
            StatusCode::UNPROCESSABLE_ENTITY,
            Flash::Failed(format!("{e:#}")),
        ),
    };
    html(status, front(&state, Some(&flash)).await)
}

async fn perform(state: &Shared, action: &str, form: &Form) -> anyhow::Result<String> {
    let client = &state.client;
    let timeout = state.timeout;
    match action {
        "install" => {
            let req = InstallRequest {
                package: form.required("package")?,
                name: form.get("name"),
                version: form.get("version"),
                channels: form.get("channel").into_iter().collect(),
                namespace: form.get("namespace"),
                service_account: "default".into(),
            };
            let (created_namespace, said) = extensions::install(client, req, timeout).await?;
            Ok(match created_namespace {
                Some(note) => format!("{said} (It {note}.)"),
                None => said,
            })
        }
        "upgrade" => {
            let req = UpgradeRequest {
                name: form.required("name")?,
                version: form.get("version"),
                channels: form.get("channel").into_iter().collect(),
                upgrade_constraint_policy: None,
            };
            extensions::upgrade(client, req, timeout).await
        }
        "rollback" => {
            let revision = match form.get("revision") {
                Some(n) => Some(n.parse::<u32>().with_context(|| {
                    format!("revision {n:?} is not a number: give a revision number, or leave it empty for the previous one")
                })?),
                None => None,
            };
            extensions::rollback(client, &form.required("name")?, revision, timeout).await
        }
        "approve" => extensions::approve(client, &form.required("name")?, timeout).await,
        "uninstall" => {
            let purge = form.get("purge").is_some();
            extensions::uninstall(client, &form.required("name")?, purge, timeout).await
        }
        other => anyhow::bail!(
            "the hub has no action {other:?} (install, upgrade, rollback, approve, uninstall)"
        ),
    }
}
