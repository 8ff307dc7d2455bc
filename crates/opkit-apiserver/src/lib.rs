//! opkit's Kubernetes-API-compatible server over a durable store.
//!
//! [`ApiServer`] holds the server state over an opened `opkit-store`; [`serve_tls`] serves it
//! over HTTPS (HTTP/1.1 and HTTP/2) and [`InProcess`] serves it to a client in the same
//! process, both through the same [`ApiServer::serve`] stack. Composing a
//! whole control plane (store, credentials, this server, the built-in controllers) is the job
//! of the `opkit-controlplane` crate.
//!
//! A request flows through, in this order: `filters` (the chain: request info,
//! authentication, audit, impersonation, authorization, limits — composed in
//! `filters::chain`), `router` (discovery, OpenAPI, reviews, or a verb on a resource),
//! `endpoints` (one module per verb), the kind's `strategy` (the one table of per-kind
//! behaviour is `strategy::of`), `admission` (the plugin chain) and `storage` (keys and
//! compare-and-swap over the `opkit-store` crate). The vocabulary they share lives in leaf
//! modules: `request`, `response`, `error`, `object`, `registry`. `docs/ARCHITECTURE.md` maps
//! each behaviour to its module.

mod admission;
mod api;
mod audit;
mod auth;
mod authz;
mod bootstrap;
mod conversion;
mod defaults;
mod discovery;
mod endpoints;
mod error;
mod events;
pub mod faults;
mod filters;
mod in_process;
mod limits;
mod listener;
pub mod mounts;
mod negotiate;
mod object;
mod openapi;
mod patch;
mod qos;
mod registry;
mod request;
mod response;
mod router;
mod server;
mod storage;
mod strategy;
mod strict;
mod tables;
mod tls;
mod webhook_client;
mod webhook_config;

pub use admission::{AdmissionPlugin, AdmissionRequest, Operation};
pub use audit::AuditLog;
pub use auth::tokens::{TokenError, TokenSigner};
pub use error::ApiError;
pub use in_process::InProcess;
pub use limits::Limits;
pub use listener::serve_tls;
pub use mounts::MountError;
pub use object::advance_clock;
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
    pub use crate::request::decode_body;
    pub use crate::request::{Target, parse_path, parse_query};
}
