//! opkit's Kubernetes-API-compatible server over a durable store.
//!
//! [`ApiServer`] holds the server state over an opened `opkit-store`; [`listener::serve_tls`]
//! serves it over HTTPS (HTTP/1.1 and HTTP/2) and [`in_process::InProcess`] serves it to a
//! client in the same process, both through the same [`ApiServer::serve`] stack. Composing a
//! whole control plane (store, credentials, this server, the built-in controllers) is the job
//! of the `opkit-controlplane` crate.
//!
//! A request flows through the modules in this order: [`server`] (routing),
//! [`auth`] (who: admin token, service-account tokens, client certificates, impersonation),
//! [`authz`] (may they: RBAC), [`limits`] (in-flight caps, timeouts, watch caps),
//! [`negotiate`] (encodings), [`registry`] (which resource), [`admission`] (metadata,
//! validation, defaulting), [`handlers`] / [`patch`] / [`scale`] / [`watch`] (the verbs), and
//! the `opkit-store` crate (compare-and-swap, group commit, event history).

pub mod admission;
pub mod audit;
pub mod auth;
pub mod authz;
pub mod crd;
pub mod defaults;
pub mod discovery;
pub mod error;
pub mod events;
pub mod handlers;
pub mod in_process;
pub mod limits;
pub mod listener;
pub mod negotiate;
pub mod object;
pub mod openapi;
pub mod patch;
pub mod registry;
pub mod request;
pub mod scale;
pub mod server;
pub mod services;
pub mod tables;
pub mod tls;
pub mod watch;

pub use error::ApiError;
pub use limits::Limits;
pub use server::ApiServer;
