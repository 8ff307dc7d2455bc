//! The `ClusterCatalog` controller, OLM v1's catalogd without catalog pods: for each catalog
//! it pulls the image with the shared [`crate::registry`] client, unpacks the file-based
//! catalog from it in memory, loads and validates it, and serves it from its own listener
//! under `/catalogs/<name>/api/v1/{all,metas}`; the status (conditions from
//! [`opkit_olm::cluster_catalog`]) says what happened.
//!
//! A failed pull or an invalid catalog leaves the last good content served and retries with
//! the runtime's per-key backoff; a tag reference with `pollIntervalMinutes` is pulled again
//! when the interval has passed (a digest reference never is); `availabilityMode:
//! Unavailable` and deletion (under a finalizer) stop serving. Every catalog gets catalogd's
//! `olm.operatorframework.io/metadata.name` label with its name, so extensions can select
//! catalogs by name. What is served lives in this
//! process only: after a restart every catalog is pulled again.

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, RwLock};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, Patch, PatchParams};
use kube::{Client, ResourceExt};
use opkit::finalizer::{Event, FinalizerError};
use opkit::{Action, Context, Controller, Manager, Predicate, Running};
use opkit_olm::cluster_catalog::{self, Outcome};
use opkit_olm::{Catalog, CatalogContent, CatalogServer};

use crate::api::{
    AvailabilityMode, ClusterCatalog, ClusterCatalogStatus, ClusterCatalogUrls, DELETE_FINALIZER,
    ImageSource, METADATA_NAME_LABEL, ResolvedCatalogSource, ResolvedImageSource, SourceType,
};
use crate::registry::Registry;

/// The path below which catalogs are served (catalogd's).
const ROOT: &str = "/catalogs";
/// The controller's name and field manager.
const NAME: &str = "clustercatalog-controller";

/// How the controller runs.
#[derive(Clone, Debug)]
pub struct CatalogdOptions {
    /// Where catalogs are served (port 0 picks a free port).
    pub listen: SocketAddr,
    /// The scheme and authority clients reach the listener at (`http://host:port`), written
    /// into `status.urls.base`; default: `http://` and the address bound.
    pub advertise: Option<String>,
}

/// Why the controller cannot start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum CatalogdError {
    /// Installing the `ClusterCatalog` CRD failed.
    #[error(transparent)]
    Crd(#[from] crate::api::CrdError),
    /// The catalog listener could not be bound.
    #[error("cannot serve catalogs on {addr}: {source}")]
    Listen {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// The runtime failed.
    #[error(transparent)]
    Runtime(#[from] opkit::Error),
    /// The catalog server failed.
    #[error("the catalog server stopped: {0}")]
    Serve(#[source] std::io::Error),
}

/// The typed content of every served catalog, by catalog name: what the `ClusterExtension`
/// controller resolves against, read in-process rather than over catalogd's HTTP API.
#[derive(Clone, Debug, Default)]
pub struct ServedCatalogs(Arc<RwLock<BTreeMap<String, ServedCatalog>>>);

/// One served catalog.
#[derive(Clone, Debug)]
pub struct ServedCatalog {
    /// The `ClusterCatalog`'s priority.
    pub priority: i32,
    /// Its content.
    pub catalog: Arc<Catalog>,
}

impl ServedCatalogs {
    /// A snapshot of what is served now.
    pub fn snapshot(&self) -> BTreeMap<String, ServedCatalog> {
        self.0.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, BTreeMap<String, ServedCatalog>> {
        self.0.write().unwrap_or_else(|p| p.into_inner())
    }
}

/// A running controller; catalogs are served until [`Catalogd::shutdown`].
pub struct Catalogd {
    url: String,
    catalogs: ServedCatalogs,
    running: Running,
    stop: tokio::sync::oneshot::Sender<()>,
    http: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Catalogd {
    /// The URL catalogs are served below (`<url>/<name>/api/v1/all`).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The served catalogs' content.
    pub fn catalogs(&self) -> ServedCatalogs {
        self.catalogs.clone()
    }

    /// Stops the controller and the catalog server.
    pub async fn shutdown(self) -> Result<(), CatalogdError> {
        let _ = self.stop.send(());
        let stopped = self.running.shutdown().await;
        match self.http.await {
            Ok(Err(e)) => return Err(CatalogdError::Serve(e)),
            Err(e) => return Err(CatalogdError::Serve(std::io::Error::other(e))),
            Ok(Ok(())) => {}
        }
        Ok(stopped?)
    }
}

/// Installs the `ClusterCatalog` CRD on the cluster of `client`, binds the catalog listener
/// and starts the controller; returns at once.
pub async fn start(client: Client, options: CatalogdOptions) -> Result<Catalogd, CatalogdError> {
    opkit::apply::install_crd(&client, &crate::api::crd(), NAME).await?;
    let listener = tokio::net::TcpListener::bind(options.listen)
        .await
        .map_err(|source| CatalogdError::Listen {
            addr: options.listen,
            source,
        })?;
    let addr = listener
        .local_addr()
        .map_err(|source| CatalogdError::Listen {
            addr: options.listen,
            source,
        })?;
    let advertise = options
        .advertise
        .unwrap_or_else(|| format!("http://{addr}"));
    let url = format!("{}{ROOT}", advertise.trim_end_matches('/'));
    let server = Arc::new(RwLock::new(CatalogServer::new(ROOT)));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let http = tokio::spawn(crate::http::serve(listener, server.clone(), async {
        let _ = stopped.await;
    }));
    let catalogs = ServedCatalogs::default();
    let state = State {
        server,
        served: Mutex::default(),
        catalogs: catalogs.clone(),
        url: url.clone(),
    };
    let mut manager = Manager::builder().build();
    manager.add(
        Controller::<ClusterCatalog>::new(NAME)
            .finalizer(DELETE_FINALIZER)
            .with_predicate(not_status_only())
            .build(reconcile, state),
    );
    let running = manager.start(client).await?;
    Ok(Catalogd {
        url,
        catalogs,
        running,
        stop,
        http,
    })
}

/// Passes every change but the controller's own status writes, so writing a failure into the
/// status does not pull the image again at once (the backoff decides when).
fn not_status_only() -> Predicate<ClusterCatalog> {
    Predicate::on_update(|old: &ClusterCatalog, new: &ClusterCatalog| {
        old.spec != new.spec
            || old.metadata.deletion_timestamp != new.metadata.deletion_timestamp
            || old.metadata.finalizers != new.metadata.finalizers
    })
}

/// What the controller serves, shared with the listener.
struct State {
    server: Arc<RwLock<CatalogServer>>,
    /// Where each served catalog's content came from, by catalog name.
    served: Mutex<HashMap<String, Served>>,
    /// The typed content served, for resolution.
    catalogs: ServedCatalogs,
    /// The URL catalogs are served below.
    url: String,
}

#[derive(Clone, Debug)]
struct Served {
    /// The spec's reference it was pulled for.
    spec_ref: String,
    /// That reference pinned to the digest pulled.
    resolved_ref: String,
    unpacked_at: Timestamp,
}

impl State {
    fn served(&self, name: &str) -> Option<Served> {
        let served = self.served.lock().unwrap_or_else(|p| p.into_inner());
        served.get(name).cloned()
    }

    fn stop_serving(&self, name: &str) {
        self.server
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .remove(name);
        self.served
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(name);
        self.catalogs.write().remove(name);
    }

    /// Pulls `image` again when the spec changed or the poll interval passed; the outcome
    /// and when to look again.
    async fn unpack_if_due(
        &self,
        name: &str,
        priority: i32,
        image: &ImageSource,
    ) -> (Outcome, Action) {
        let current = self.served(name);
        let now = Timestamp::now();
        let poll = |at: Timestamp| {
            cluster_catalog::next_poll(
                &image.ref_,
                image.poll_interval_minutes,
                at.into(),
                now.into(),
            )
        };
        if let Some(served) = current.as_ref().filter(|s| s.spec_ref == image.ref_) {
            if let Some(c) = self.catalogs.write().get_mut(name) {
                c.priority = priority;
            }
            let wait = poll(served.unpacked_at);
            if wait.is_none_or(|w| !w.is_zero()) {
                let outcome = Outcome::Serving {
                    resolved_ref: served.resolved_ref.clone(),
                };
                return (
                    outcome,
                    wait.map_or_else(Action::await_change, Action::requeue),
                );
            }
        }
        match self.unpack(name, priority, &image.ref_, now).await {
            Ok(served) => {
                let next = poll(now).map_or_else(Action::await_change, Action::requeue);
                (
                    Outcome::Serving {
                        resolved_ref: served.resolved_ref,
                    },
                    next,
                )
            }
            Err(cause) => {
                tracing::info!(catalog = name, "cannot unpack {}: {cause:#}", image.ref_);
                let outcome = Outcome::Failed {
                    reference: image.ref_.clone(),
                    cause: format!("{cause:#}"),
                    still_serving: current.is_some(),
                };
                (outcome, Action::requeue_with_backoff())
            }
        }
    }

    /// Pulls, unpacks, loads and validates `reference`, then serves it as catalog `name`.
    async fn unpack(
        &self,
        name: &str,
        priority: i32,
        reference: &str,
        now: Timestamp,
    ) -> anyhow::Result<Served> {
        let registry = Registry::new(reference, false)?;
        let pulled = registry.pull().await?;
        if pulled.digest.is_empty() {
            anyhow::bail!("the registry gave no manifest digest");
        }
        let files = opkit_olm::image::catalog_files(&pulled.config, &pulled.layers())?;
        let (content, catalog) = CatalogContent::from_files(&files, now.into())?;
        let errors = opkit_olm::validate_catalog(&catalog);
        if !errors.is_empty() {
            let errors: Vec<String> = errors.iter().map(ToString::to_string).collect();
            anyhow::bail!("the catalog is invalid: {}", errors.join("; "));
        }
        let served = Served {
            spec_ref: reference.to_string(),
            resolved_ref: registry.pinned(&pulled.digest),
            unpacked_at: now,
        };
        self.server
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(name, content);
        self.served
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(name.to_string(), served.clone());
        let catalog = Arc::new(catalog);
        self.catalogs
            .write()
            .insert(name.to_string(), ServedCatalog { priority, catalog });
        Ok(served)
    }
}

/// Why a reconcile failed.
#[derive(Debug, thiserror::Error)]
enum ReconcileError {
    #[error("cannot write the status of ClusterCatalog {name}: {source}")]
    Status {
        name: String,
        #[source]
        source: opkit::Error,
    },
    #[error("cannot label ClusterCatalog {name} with its name: {source}")]
    Label {
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error(transparent)]
    Finalizer(Box<FinalizerError<ReconcileError>>),
}

async fn reconcile(
    cc: Arc<ClusterCatalog>,
    ctx: Arc<Context<State>>,
) -> Result<Action, ReconcileError> {
    ctx.finalize(cc, |event| async {
        match event {
            Event::Apply(cc) => apply(&cc, &ctx).await,
            Event::Cleanup(cc) => {
                ctx.data().stop_serving(&cc.name_any());
                Ok(Action::await_change())
            }
        }
    })
    .await
    .map_err(|e| ReconcileError::Finalizer(Box::new(e)))
}

/// Brings one live catalog to its spec and writes what happened into its status.
async fn apply(cc: &ClusterCatalog, ctx: &Context<State>) -> Result<Action, ReconcileError> {
    let name = cc.name_any();
    if cc.labels().get(METADATA_NAME_LABEL) != Some(&name) {
        let patch = serde_json::json!({"metadata": {"labels": {METADATA_NAME_LABEL: name}}});
        Api::<ClusterCatalog>::all(ctx.client().clone())
            .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(|source| ReconcileError::Label {
                name: name.clone(),
                source,
            })?;
    }
    let state = ctx.data();
    let (outcome, next) = match (cc.spec.availability_mode, &cc.spec.source.image) {
        (AvailabilityMode::Unavailable, _) => {
            state.stop_serving(&name);
            (Outcome::UserUnavailable, Action::await_change())
        }
        (AvailabilityMode::Available, None) => {
            state.stop_serving(&name);
            let message = "spec.source.image is required when spec.source.type is Image".into();
            (Outcome::Blocked { message }, Action::await_change())
        }
        (AvailabilityMode::Available, Some(image)) => {
            state.unpack_if_due(&name, cc.spec.priority, image).await
        }
    };
    let status = status_of(cc, &outcome, state.served(&name).as_ref(), &state.url);
    if cc.status.as_ref() != Some(&status) {
        ctx.apply_status(cc, &status)
            .await
            .map_err(|source| ReconcileError::Status { name, source })?;
    }
    Ok(next)
}

/// The status for `outcome`: the conditions, and where the content `served` (if any) came
/// from and is served.
fn status_of(
    cc: &ClusterCatalog,
    outcome: &Outcome,
    served: Option<&Served>,
    url: &str,
) -> ClusterCatalogStatus {
    let mut conditions = cc
        .status
        .as_ref()
        .map(|s| s.conditions.clone())
        .unwrap_or_default();
    for c in cluster_catalog::conditions(outcome) {
        opkit::conditions::set(
            &mut conditions,
            opkit::conditions::of(c.type_, c.status)
                .reason(c.reason)
                .message(c.message)
                .observed_generation(cc.metadata.generation),
        );
    }
    let served =
        served.filter(|_| matches!(outcome, Outcome::Serving { .. } | Outcome::Failed { .. }));
    ClusterCatalogStatus {
        conditions,
        resolved_source: served.map(|s| ResolvedCatalogSource {
            type_: SourceType::Image,
            image: ResolvedImageSource {
                ref_: s.resolved_ref.clone(),
            },
        }),
        urls: served.map(|_| ClusterCatalogUrls {
            base: format!("{url}/{}", cc.name_any()),
        }),
        last_unpacked: served.map(|s| Time(s.unpacked_at)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn catalog(status: Option<ClusterCatalogStatus>) -> ClusterCatalog {
        let mut cc = ClusterCatalog::new("ops", Default::default());
        cc.metadata.generation = Some(2);
        cc.status = status;
        cc
    }

    #[test]
    fn a_served_catalog_reports_its_pinned_source_url_and_unpack_time() {
        let served = Served {
            spec_ref: "r.io/c:v1".into(),
            resolved_ref: "r.io/c@sha256:ab".into(),
            unpacked_at: Timestamp::UNIX_EPOCH,
        };
        let outcome = Outcome::Serving {
            resolved_ref: served.resolved_ref.clone(),
        };
        let status = status_of(
            &catalog(None),
            &outcome,
            Some(&served),
            "http://h:1/catalogs",
        );
        assert_eq!(
            status.resolved_source.unwrap().image.ref_,
            "r.io/c@sha256:ab"
        );
        assert_eq!(status.urls.unwrap().base, "http://h:1/catalogs/ops");
        assert_eq!(status.last_unpacked, Some(Time(Timestamp::UNIX_EPOCH)));
        let serving = opkit::conditions::find(&status.conditions, "Serving").unwrap();
        assert_eq!(
            (
                serving.status.as_str(),
                serving.reason.as_str(),
                serving.observed_generation
            ),
            ("True", "Available", Some(2))
        );
    }

    #[test]
    fn an_unavailable_catalog_drops_its_source_and_url_and_keeps_transition_times() {
        let served = Served {
            spec_ref: "r.io/c:v1".into(),
            resolved_ref: "r.io/c@sha256:ab".into(),
            unpacked_at: Timestamp::UNIX_EPOCH,
        };
        let outcome = Outcome::Serving {
            resolved_ref: served.resolved_ref.clone(),
        };
        let first = status_of(
            &catalog(None),
            &outcome,
            Some(&served),
            "http://h:1/catalogs",
        );
        let again = status_of(
            &catalog(Some(first.clone())),
            &outcome,
            Some(&served),
            "http://h:1/catalogs",
        );
        assert_eq!(again, first, "an unchanged outcome writes nothing new");
        let off = status_of(
            &catalog(Some(first)),
            &Outcome::UserUnavailable,
            None,
            "http://h:1/catalogs",
        );
        assert!(off.resolved_source.is_none() && off.urls.is_none() && off.last_unpacked.is_none());
        assert!(opkit::conditions::is_false(&off.conditions, "Serving"));
    }
}
