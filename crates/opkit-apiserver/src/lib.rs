//! opkit's Kubernetes-API-compatible server over a durable store.
//!
//! [`ApiServer`] holds the server state over an opened `opkit-store`; [`serve_tls`] serves it
//! over HTTPS (HTTP/1.1 and HTTP/2) and [`InProcess`] serves it to a client in the same
//! process, both through the same [`ApiServer::serve`] stack. Composing a
//! whole control plane (store, credentials, this server, the built-in controllers) is the job
//! of the `opkit-controlplane` crate.
//!
//! A request flows through the modules in this order: `server` (routing), `auth` (who: admin
//! token, service-account tokens, client certificates, impersonation), `authz` (may they:
//! RBAC), `limits` (in-flight caps, timeouts, watch caps), `negotiate` (encodings), `registry`
//! (which resource), `admission` (metadata, validation, defaulting), `handlers` / `patch` /
//! `scale` / `watch` (the verbs), and the `opkit-store` crate (compare-and-swap, group commit,
//! event history). `docs/ARCHITECTURE.md` maps each behaviour to its module.

mod admission;
mod audit;
mod auth;
mod authz;
mod crd;
mod defaults;
mod discovery;
mod error;
mod events;
mod handlers;
mod in_process;
mod limits;
mod listener;
mod negotiate;
mod object;
mod openapi;
mod patch;
mod qos;
mod registry;
mod request;
mod response;
mod scale;
mod server;
mod services;
mod strict;
mod tables;
mod tls;
mod watch;

pub use audit::AuditLog;
pub use auth::tokens::{TokenError, TokenSigner};
pub use error::ApiError;
pub use in_process::InProcess;
pub use limits::Limits;
pub use listener::serve_tls;
pub use response::ResponseBody;
pub use server::{ApiServer, ServerOptions};
pub use tls::{
    ClientCertificate, Credentials, KubeconfigUser, TlsError, credentials,
    issue_client_certificate, kubeconfig, kubeconfig_for,
};

/// Internals the fuzz targets (`crates/opkit-fuzz`) drive directly: request parsing, body
/// decoding, the registry and the patch functions. Not a stable API.
#[doc(hidden)]
pub mod fuzzing {
    pub use crate::patch::{apply_json_patch, apply_merge_patch};
    pub use crate::registry::Registry;
    pub use crate::request::{Target, parse_path, parse_query};
    pub use crate::server::decode_body;
}
