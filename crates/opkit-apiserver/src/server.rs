//! The API server: its components ([`Api`]) and the filter chain in front of them, served by
//! the TLS listener and the in-process transport alike through [`ApiServer::serve`].

use std::sync::Arc;

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::BodyExt;

use crate::admission::AdmissionPlugin;
use crate::api::Api;
use crate::audit::AuditLog;
use crate::auth::tokens::TokenSigner;
use crate::error::ApiResult;
use crate::faults::Faults;
use crate::filters::{self, BodyError, Next};
use crate::limits::{Gates, Limits};
use crate::mounts::MountError;
use crate::response::ResponseBody;
use crate::storage::Storage;
use opkit_store::Store;

/// What an [`ApiServer`] runs with besides its store.
pub struct ServerOptions {
    /// The admin bearer token.
    pub token: String,
    /// `host:port` clients reach the server at (the `kubernetes` Service's endpoint).
    pub server_address: String,
    /// Signs and verifies service-account tokens.
    pub tokens: TokenSigner,
    /// Request limits.
    pub limits: Limits,
    /// The audit log, if any.
    pub audit: Option<AuditLog>,
    /// Admission plugins every write passes through, in order, after the kind's own checks.
    pub admission: Vec<Arc<dyn AdmissionPlugin>>,
}

/// The API server.
pub struct ApiServer {
    api: Arc<Api>,
    gates: Arc<Gates>,
    faults: Faults,
    chain: Next,
}

impl ApiServer {
    /// Creates the server over an opened store, with default limits, no audit log, no
    /// admission plugins and a service-account signing key made in memory.
    pub fn new(store: Store, token: String, server_address: String) -> Arc<ApiServer> {
        let tokens = match TokenSigner::load_or_create(None) {
            Ok(t) => t,
            // Generating a P-256 key in memory only fails if the system has no randomness.
            Err(e) => panic!("cannot generate a service-account signing key: {e}"),
        };
        ApiServer::with_options(
            store,
            ServerOptions {
                token,
                server_address,
                tokens,
                limits: Limits::default(),
                audit: None,
                admission: Vec::new(),
            },
        )
    }

    /// Creates the server over an opened store.
    pub fn with_options(store: Store, options: ServerOptions) -> Arc<ApiServer> {
        let ServerOptions {
            token,
            server_address,
            tokens,
            limits,
            audit,
            admission,
        } = options;
        let api = Arc::new(Api::new(
            Storage::new(store),
            token,
            tokens,
            server_address,
            admission,
        ));
        let gates = Arc::new(Gates::new(limits));
        let faults = Faults::new();
        let chain = filters::chain(
            api.clone(),
            gates.clone(),
            audit.map(Arc::new),
            faults.clone(),
        );
        Arc::new(ApiServer {
            api,
            gates,
            faults,
            chain,
        })
    }

    /// The store.
    pub fn store(&self) -> &Store {
        self.api.storage.store()
    }

    /// Ensures the objects every cluster starts with (namespaces, the `kubernetes` Service,
    /// the default RBAC policy) and serves the stored CRDs.
    pub async fn bootstrap(&self) -> ApiResult<()> {
        crate::bootstrap::run(&self.api).await
    }

    /// Issues a token for a service account (the TokenRequest API): `request` is a
    /// TokenRequest; returns it with its status filled in.
    pub fn token_request(
        &self,
        namespace: &str,
        name: &str,
        request: &serde_json::Value,
    ) -> Result<serde_json::Value, crate::ApiError> {
        self.api.authn.token_request(namespace, name, request)
    }

    /// The fault injection of this server (none until a target is set): see [`crate::faults`].
    pub fn faults(&self) -> &Faults {
        &self.faults
    }

    /// Serves the requests for `path` and the paths below it with `handler`, behind the filter
    /// chain (authenticated, authorised as a non-resource URL): see [`crate::mounts`].
    pub fn mount(&self, path: &str, handler: crate::mounts::Handler) -> Result<(), MountError> {
        self.api.mounts.mount(path, handler)
    }

    /// The request limits in force.
    pub fn limits(&self) -> &Limits {
        self.gates.limits()
    }

    /// Handles one HTTP request: the filter chain (`crate::filters`), then the router.
    pub async fn serve<B>(self: Arc<Self>, req: Request<B>) -> Response<ResponseBody>
    where
        B: hyper::body::Body<Data = Bytes> + Send + 'static,
        B::Error: Into<BodyError>,
    {
        let req = req.map(|body| body.map_err(Into::into).boxed_unsync());
        self.chain.clone().run(req).await
    }
}
