//! The composition root of opkit's embedded control plane: a store, credentials, the API
//! server and the built-in controllers, started together in the current tokio runtime.
//!
//! [`ControlPlane::start`] opens the store (a redb file in the data dir, or memory), prepares
//! TLS credentials and an admin token, serves the Kubernetes API over HTTPS (HTTP/1.1 and
//! HTTP/2) with `opkit-apiserver`, and starts the controllers of `opkit-controllers` on an
//! in-process client. Real clients — kubectl, helm, client-go, kube-rs — work against it
//! unchanged, using the kubeconfig it writes. `opkit up`, `TestEnv` and the benchmarks all
//! start a control plane this way.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use opkit_apiserver::{
    ApiError, ApiServer, AuditLog, KubeconfigUser, ServerOptions, TlsError, TokenError, TokenSigner,
};
use tokio::net::TcpListener;
use tokio::sync::watch as signal;

/// How long [`ControlPlane::shutdown`] waits for the store to close once serving has stopped.
const STORE_CLOSE_WAIT: Duration = Duration::from_secs(10);

pub use opkit_apiserver::Limits;
pub use opkit_controllers as controllers;

/// How to run a control plane.
#[derive(Debug, Clone)]
pub struct Config {
    /// Where the store, CA, token and kubeconfig live; `None` keeps everything in memory.
    pub data_dir: Option<PathBuf>,
    /// Address to listen on; port 0 picks a free port.
    pub listen: SocketAddr,
    /// Where to write the kubeconfig; defaults to `DATA_DIR/kubeconfig` (none when ephemeral).
    pub kubeconfig: Option<PathBuf>,
    /// How long watch history is kept for resumption.
    pub history_window: Duration,
    /// The built-in controllers (garbage collector, namespaces, simulated workloads).
    pub controllers: opkit_controllers::Settings,
    /// Request limits (in flight, timeouts, watches per user).
    pub limits: Limits,
    /// Where to write the audit log (JSON lines); `None` = no audit log.
    pub audit_log: Option<PathBuf>,
    /// Admission plugins every write passes through, in order (none by default).
    pub admission: Vec<Arc<dyn opkit_apiserver::AdmissionPlugin>>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            data_dir: Some(PathBuf::from(".opkit")),
            listen: SocketAddr::from(([127, 0, 0, 1], 6443)),
            kubeconfig: None,
            history_window: Duration::from_secs(300),
            controllers: opkit_controllers::Settings::default(),
            limits: Limits::default(),
            audit_log: None,
            admission: Vec::new(),
        }
    }
}

impl Config {
    /// An in-memory control plane on a free loopback port (for tests).
    pub fn ephemeral() -> Config {
        Config {
            data_dir: None,
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            kubeconfig: None,
            history_window: Duration::from_secs(300),
            controllers: opkit_controllers::Settings::default(),
            limits: Limits::default(),
            audit_log: None,
            admission: Vec::new(),
        }
    }
}

/// Why a control plane could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The data dir is used by another running control plane.
    #[error(
        "the data dir {0} is in use by another `opkit up` (its store is locked); stop that one or pass another --data-dir"
    )]
    DataDirInUse(String),
    /// The store could not be opened.
    #[error("cannot open the store: {0}")]
    Store(#[from] opkit_store::StoreError),
    /// A file could not be written.
    #[error("{path}: {source}")]
    Io {
        /// The path.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The listen address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        /// The address.
        addr: SocketAddr,
        /// The cause.
        source: std::io::Error,
    },
    /// Credentials could not be prepared.
    #[error(transparent)]
    Tls(#[from] TlsError),
    /// The service-account signing key could not be prepared.
    #[error(transparent)]
    Tokens(#[from] TokenError),
    /// Bootstrapping objects failed.
    #[error("bootstrap: {0}")]
    Bootstrap(ApiError),
}

/// A running control plane. Dropping it stops serving.
pub struct ControlPlane {
    addr: SocketAddr,
    url: String,
    token: String,
    ca_pem: String,
    ca_key_pem: String,
    kubeconfig: String,
    kubeconfig_path: Option<PathBuf>,
    server: Arc<ApiServer>,
    stop: signal::Sender<bool>,
    serving: Option<tokio::task::JoinHandle<()>>,
    controllers: Option<opkit_controllers::Running>,
}

impl ControlPlane {
    /// Opens the store, prepares credentials, and starts serving. Returns once it accepts
    /// connections.
    pub async fn start(config: Config) -> Result<ControlPlane, StartError> {
        let io = |path: &std::path::Path| {
            let path = path.display().to_string();
            move |source| StartError::Io { path, source }
        };
        if let Some(dir) = &config.data_dir {
            std::fs::create_dir_all(dir).map_err(io(dir))?;
        }
        let store_config = opkit_store::StoreConfig {
            path: config.data_dir.as_ref().map(|d| d.join("store.redb")),
            history_window: config.history_window,
            ..opkit_store::StoreConfig::default()
        };
        let store = match opkit_store::Store::open(store_config) {
            Ok(s) => s,
            Err(opkit_store::StoreError::Locked { .. }) => {
                let dir = config
                    .data_dir
                    .as_ref()
                    .map(|d| d.display().to_string())
                    .unwrap_or_default();
                return Err(StartError::DataDirInUse(dir));
            }
            Err(e) => return Err(e.into()),
        };
        let listener =
            TcpListener::bind(config.listen)
                .await
                .map_err(|source| StartError::Listen {
                    addr: config.listen,
                    source,
                })?;
        let addr = listener.local_addr().map_err(|source| StartError::Listen {
            addr: config.listen,
            source,
        })?;
        let host = if addr.ip().is_unspecified() {
            "127.0.0.1".to_string()
        } else {
            addr.ip().to_string()
        };
        let url = match addr.ip() {
            std::net::IpAddr::V6(_) if !addr.ip().is_unspecified() => {
                format!("https://[{host}]:{}", addr.port())
            }
            _ => format!("https://{host}:{}", addr.port()),
        };
        let creds =
            opkit_apiserver::credentials(config.data_dir.as_deref(), std::slice::from_ref(&host))?;
        let kubeconfig = opkit_apiserver::kubeconfig(&url, &creds.ca_pem, &creds.token);
        let kubeconfig_path = config
            .kubeconfig
            .clone()
            .or_else(|| config.data_dir.as_ref().map(|d| d.join("kubeconfig")));
        if let Some(path) = &kubeconfig_path {
            if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
                std::fs::create_dir_all(parent).map_err(io(parent))?;
            }
            std::fs::write(path, &kubeconfig).map_err(io(path))?;
        }
        let tokens = TokenSigner::load_or_create(config.data_dir.as_deref())?;
        let audit = match &config.audit_log {
            Some(path) => Some(AuditLog::open(path).map_err(io(path))?),
            None => None,
        };
        let server = ApiServer::with_options(
            store,
            ServerOptions {
                token: creds.token.clone(),
                server_address: format!("{host}:{}", addr.port()),
                tokens,
                limits: config.limits.clone(),
                audit,
                admission: config.admission.clone(),
            },
        );
        server.bootstrap().await.map_err(StartError::Bootstrap)?;
        let (stop, stopped) = signal::channel(false);
        let acceptor = tokio_rustls::TlsAcceptor::from(creds.server_config.clone());
        let serving = tokio::spawn(opkit_apiserver::serve_tls(
            listener,
            acceptor,
            server.clone(),
            config.limits.idle_timeout,
            stopped,
        ));
        // Always: the CRD controller runs even when every switchable controller is off.
        let client = in_process_client(&server, &creds.token, "opkit-controller-manager");
        let controllers = Some(opkit_controllers::spawn(client, &config.controllers));
        Ok(ControlPlane {
            addr,
            url,
            token: creds.token,
            ca_pem: creds.ca_pem,
            ca_key_pem: creds.ca_key_pem,
            kubeconfig,
            kubeconfig_path,
            server,
            stop,
            serving: Some(serving),
            controllers,
        })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `https://ADDR:PORT`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The admin bearer token.
    pub fn token(&self) -> &str {
        &self.token
    }

    /// The CA certificate (PEM).
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// The admin kubeconfig (YAML).
    pub fn kubeconfig(&self) -> &str {
        &self.kubeconfig
    }

    /// A kubeconfig for `user` in `groups`, authenticating with a client certificate signed
    /// by this control plane's CA (valid for a year). At most two groups; every user is also
    /// in `system:authenticated`.
    pub fn user_kubeconfig(&self, user: &str, groups: &[String]) -> Result<String, TlsError> {
        let cert = opkit_apiserver::issue_client_certificate(
            &self.ca_key_pem,
            user,
            groups,
            Duration::from_secs(365 * 24 * 3600),
        )?;
        Ok(opkit_apiserver::kubeconfig_for(
            &self.url,
            &self.ca_pem,
            user,
            KubeconfigUser::Certificate(&cert),
            "default",
        ))
    }

    /// A token for the service account `namespace/name` (which must exist), valid for
    /// `expiration` (at least 10 minutes), as the TokenRequest API issues it.
    pub fn service_account_token(
        &self,
        namespace: &str,
        name: &str,
        expiration: Duration,
    ) -> Result<String, ApiError> {
        let request = serde_json::json!({"spec": {"expirationSeconds": expiration.as_secs()}});
        let issued = self.server.token_request(namespace, name, &request)?;
        issued
            .pointer("/status/token")
            .and_then(serde_json::Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| ApiError::internal("the token request returned no token"))
    }

    /// A kubeconfig acting as the service account `namespace/name` (which must exist), with a
    /// token valid for `expiration`; its default namespace is the service account's.
    pub fn service_account_kubeconfig(
        &self,
        namespace: &str,
        name: &str,
        expiration: Duration,
    ) -> Result<String, ApiError> {
        let token = self.service_account_token(namespace, name, expiration)?;
        Ok(opkit_apiserver::kubeconfig_for(
            &self.url,
            &self.ca_pem,
            &opkit_rbac::service_account_username(namespace, name),
            KubeconfigUser::Token(&token),
            namespace,
        ))
    }

    /// Where the kubeconfig was written, if anywhere.
    pub fn kubeconfig_path(&self) -> Option<&std::path::Path> {
        self.kubeconfig_path.as_deref()
    }

    /// The server state (in-process access for built-in controllers and benchmarks).
    pub fn server(&self) -> &Arc<ApiServer> {
        &self.server
    }

    /// Stops accepting requests, closes open connections, waits for the accept loop, and then
    /// for the store to close its database, so the data directory can be opened again.
    pub async fn shutdown(mut self) {
        let closed = self.server.store().closed();
        if let Some(controllers) = self.controllers.take() {
            controllers.shutdown().await;
        }
        let _ = self.stop.send(true);
        if let Some(handle) = self.serving.take() {
            let _ = handle.await;
        }
        // Connections and watches still ending hold the server (and the store's file) for a
        // moment: a restart on the same data directory right after must find it closed.
        drop(self);
        if tokio::time::timeout(STORE_CLOSE_WAIT, closed)
            .await
            .is_err()
        {
            tracing::warn!(
                "the store is still open {STORE_CLOSE_WAIT:?} after shutdown: something still holds the API server"
            );
        }
    }
}

impl Drop for ControlPlane {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
        if let Some(handle) = self.serving.take() {
            handle.abort();
        }
    }
}

/// A kube-rs client served in-process by `server` (no TCP, no TLS, the same request stack),
/// authenticating with `token`; `user_agent` names the caller (it becomes the default field
/// manager of its writes).
pub fn in_process_client(server: &Arc<ApiServer>, token: &str, user_agent: &str) -> kube::Client {
    let service = opkit_apiserver::InProcess::new(server.clone(), token, user_agent);
    kube::Client::new(service, "default")
}
