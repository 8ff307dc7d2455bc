//! Metering on a cluster, with the I/O the pure `opkit-metering` leaves out: [`api`] holds the
//! `metering.opkit.dev/v1` kinds (ReportDataSource, ReportQuery, Report) and their CRDs,
//! [`history`] watches the control plane's objects into the default data source, [`schedule`]
//! says which periods of a report are due, [`results`] stores and reads results (ConfigMaps),
//! [`http`] serves Metering's report API and the controllers' `/metrics`, `prometheus` imports
//! `prometheusMetricsImporter` data sources, and [`clock`] is the clock all of it reads.
//!
//! `opkit up --metering` runs it inside the embedded control plane's process; any other
//! process can run it against any cluster with [`start`]. The report API is served on the
//! controller's own listener, as catalogd's is, and [`http::answer`] is the same API for a
//! server that mounts it on its own address (`opkit up --metering-on-apiserver` mounts it on
//! the API server's, through `ApiServer::mount`).

#![warn(missing_docs)]

pub mod api;
pub mod clock;
mod datasource;
pub mod history;
pub mod http;
mod prometheus;
mod report;
pub mod results;
pub mod schedule;

use std::net::SocketAddr;
use std::path::PathBuf;

use opkit::{Controller, Manager, Running};

pub use api::{Report, ReportDataSource, ReportQuery};
pub use clock::Clock;

/// The controller's name and field manager.
const NAME: &str = "metering-controller";

/// How metering runs.
#[derive(Clone, Debug)]
pub struct Options {
    /// Where the report API and `/metrics` listen (port 0 picks a free port).
    pub listen: SocketAddr,
    /// The clock history events and schedules read.
    pub clock: Clock,
    /// Where the history is kept across restarts (`history.json` in it); in memory only when
    /// absent.
    pub state_dir: Option<PathBuf>,
}

/// Why metering cannot start or stopped badly.
#[derive(Debug, thiserror::Error)]
pub enum MeteringError {
    /// A CRD could not be installed.
    #[error(transparent)]
    Crd(#[from] opkit::apply::CrdError),
    /// The history could not start.
    #[error(transparent)]
    History(#[from] history::HistoryError),
    /// The listener could not be bound.
    #[error("cannot serve the report API on {addr}: {source}")]
    Listen {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// The runtime failed.
    #[error(transparent)]
    Runtime(#[from] opkit::Error),
    /// The Prometheus importer's HTTP client could not be built.
    #[error("the Prometheus importer: {0}")]
    Prometheus(String),
    /// The report API server failed.
    #[error("the report API stopped: {0}")]
    Serve(#[source] std::io::Error),
}

/// Running metering.
pub struct Metering {
    url: String,
    running: Running,
    watchers: Vec<tokio::task::JoinHandle<()>>,
    stop: tokio::sync::oneshot::Sender<()>,
    http: tokio::task::JoinHandle<std::io::Result<()>>,
    /// The history and its checkpoint file, written a last time at shutdown.
    checkpoint: Option<(history::History, PathBuf)>,
}

impl Metering {
    /// The report API's base URL (`<url>/api/v1/reports/get?…`).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Stops the controllers, the history and the report API.
    pub async fn shutdown(self) -> Result<(), MeteringError> {
        let _ = self.stop.send(());
        for w in &self.watchers {
            w.abort();
        }
        if let Some((history, path)) = &self.checkpoint
            && let Err(e) = history.save(path)
        {
            tracing::error!("metering history: cannot write {}: {e}", path.display());
        }
        let stopped = self.running.shutdown().await;
        match self.http.await {
            Ok(Err(e)) => return Err(MeteringError::Serve(e)),
            Err(e) => return Err(MeteringError::Serve(std::io::Error::other(e))),
            Ok(Ok(())) => {}
        }
        Ok(stopped?)
    }
}

/// Installs the CRDs on the cluster of `client`, starts the history (returning once it has
/// listed every watched kind), the controllers and the report API.
pub async fn start(client: kube::Client, options: Options) -> Result<Metering, MeteringError> {
    for crd in api::crds() {
        opkit::apply::install_crd(&client, &crd, NAME).await?;
    }
    let listener = tokio::net::TcpListener::bind(options.listen)
        .await
        .map_err(|source| MeteringError::Listen {
            addr: options.listen,
            source,
        })?;
    let addr = listener
        .local_addr()
        .map_err(|source| MeteringError::Listen {
            addr: options.listen,
            source,
        })?;
    let prometheus =
        prometheus::Prometheus::new().map_err(|e| MeteringError::Prometheus(e.to_string()))?;
    let checkpoint = match &options.state_dir {
        Some(dir) => {
            std::fs::create_dir_all(dir).map_err(|e| history::HistoryError::Checkpoint {
                path: dir.clone(),
                message: e.to_string(),
            })?;
            Some(dir.join("history.json"))
        }
        None => None,
    };
    let history = match &checkpoint {
        Some(path) => history::History::load(path)?,
        None => history::History::default(),
    };
    let mut watchers = history::start(&client, &history, &options.clock).await?;
    if let Some(path) = &checkpoint {
        watchers.push(history::checkpoint(&history, path.clone()));
    }
    let mut manager = Manager::builder().build();
    let state = || report::State {
        history: history.clone(),
        clock: options.clock.clone(),
        prometheus: prometheus.clone(),
    };
    manager.add(Controller::<Report>::new(NAME).build(report::reconcile, state()));
    manager.add(
        Controller::<ReportDataSource>::new("reportdatasource-controller")
            .build(datasource::reconcile, state()),
    );
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let http = tokio::spawn(http::serve(
        listener,
        client.clone(),
        manager.metrics().clone(),
        async {
            let _ = stopped.await;
        },
    ));
    let running = manager.start(client).await?;
    Ok(Metering {
        url: format!("http://{addr}"),
        running,
        watchers,
        stop,
        http,
        checkpoint: checkpoint.map(|path| (history, path)),
    })
}
