//! The components the endpoints work with, built once per server: storage, the registry of
//! resources, the authenticator and authorizer (reviews, token requests and escalation checks
//! use them too), the admission stage and the OpenAPI documents.

use std::sync::Arc;

use crate::admission::{Admission, AdmissionPlugin};
use crate::auth::Authenticator;
use crate::auth::tokens::TokenSigner;
use crate::authz::Authorizer;
use crate::conversion::Converter;
use crate::mounts::Mounts;
use crate::openapi::OpenApi;
use crate::registry::Registry;
use crate::storage::Storage;
use crate::webhook_client::WebhookClient;

/// What the endpoints serve from.
pub(crate) struct Api {
    /// Where objects live.
    pub(crate) storage: Arc<Storage>,
    /// Which resources are served.
    pub(crate) registry: Arc<Registry>,
    /// Who a token or certificate names (TokenReview, TokenRequest).
    pub(crate) authn: Authenticator,
    /// What a user may do (access reviews, escalation checks).
    pub(crate) authz: Authorizer,
    /// Mutating and validating admission, between a kind's strategy and storage.
    pub(crate) admission: Admission,
    /// Serialises the writes that allocate from a shared pool (cluster IPs, node ports) from
    /// choosing until stored, so two writes never take the same.
    pub(crate) allocation: tokio::sync::Mutex<()>,
    /// Calls admission and conversion webhooks, reusing connections.
    pub(crate) webhook_client: Arc<WebhookClient>,
    /// Moves custom resources between the versions of their CRD.
    pub(crate) converter: Converter,
    /// The OpenAPI v2 and v3 documents, rendered when the registry changes.
    pub(crate) openapi: OpenApi,
    /// `host:port` clients reach the server at.
    pub(crate) server_address: String,
    /// Non-resource paths the embedding process serves.
    pub(crate) mounts: Mounts,
}

impl Api {
    /// The components over `storage`.
    pub(crate) fn new(
        storage: Storage,
        token: String,
        tokens: TokenSigner,
        server_address: String,
        admission: Vec<Arc<dyn AdmissionPlugin>>,
    ) -> Api {
        let storage = Arc::new(storage);
        let registry = Arc::new(Registry::new());
        let webhook_client = Arc::new(WebhookClient::new(storage.clone(), registry.clone()));
        Api {
            authn: Authenticator::new(token, tokens, storage.clone(), registry.clone()),
            authz: Authorizer::new(storage.clone(), registry.clone()),
            admission: Admission::new(admission),
            converter: Converter::new(webhook_client.clone()),
            webhook_client,
            allocation: tokio::sync::Mutex::new(()),
            openapi: OpenApi::new(),
            server_address,
            mounts: Mounts::default(),
            storage,
            registry,
        }
    }
}
