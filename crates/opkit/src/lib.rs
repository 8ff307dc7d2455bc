//! opkit's operator runtime: controllers over shared caches, with the production defaults of
//! controller-runtime, on kube-rs.
//!
//! An operator is a [`Manager`] running one or more [`Controller`]s. Each controller names
//! its primary kind, the kinds it [`owns`](Controller::owns) and the kinds it
//! [`watches`](Controller::watches); the manager opens **one watch and one cache per kind**
//! for all of them ([`informer`]), feeds each controller's deduplicating work queue
//! ([`workqueue`]), and calls the reconcile function with the cached object — never twice at
//! once for the same key, with per-key exponential backoff (5 ms → 1000 s) on errors.
//!
//! Controllers that create children read them through an [`OwnerIndex`] of the shared cache
//! and guard their writes with [`Expectations`], as client-go's workload controllers do.
//!
//! Kinds need not be known at compile time: [`Controller::dynamic`] reconciles
//! [`DynamicObject`](kube::api::DynamicObject)s of an [`ApiResource`](kube::api::ApiResource)
//! read from a file, and [`Context::owns_dynamic`] starts watching a dependent kind first met
//! while reconciling — what a generic operator (opkit's chart operator) is built on, with the
//! same caches, queue, backoff, metrics and leader election as any other.
//!
//! Around that: leader election on a Lease ([`leader`]), Prometheus metrics under
//! controller-runtime's names ([`metrics`]), `/healthz` and `/readyz`, graceful shutdown on
//! SIGTERM, and helpers for what every reconcile does — [`finalizer`]s, status
//! [`conditions`], [`events`], server-side [`apply`] of owned objects, and [`rbac`]
//! derivation of the ClusterRole the operator needs. [`webhook`]s (typed defaulting,
//! validation, and hub-and-spoke conversion between a CRD's versions) are served over HTTPS
//! with certificates the operator issues and publishes itself. The `opkit-testenv` crate's `TestEnv`
//! starts a real control plane in the test process in milliseconds.
//!
//! One dependency is enough: kube-rs and k8s-openapi are re-exported ([`kube`],
//! [`k8s_openapi`], [`CustomResource`], [`Api`], [`Client`], [`ResourceExt`], …).
//!
//! An operator's binary is an [`App`]: the CRDs, the controllers, and opkit's standard command
//! line (`run`, `print-crds`, `print-rbac`, controller-runtime's flags) plus the operator's
//! own flags.
//!
//! # Example
//!
//! ```no_run
//! use std::sync::Arc;
//! use std::time::Duration;
//!
//! use opkit::k8s_openapi::api::core::v1::ConfigMap;
//! use opkit::prelude::*;
//! use opkit::{App, ControllerDef};
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
//! #[kube(group = "example.com", version = "v1", kind = "Greeting", namespaced,
//!        status = "GreetingStatus")]
//! pub struct GreetingSpec {
//!     pub message: String,
//! }
//!
//! #[derive(Deserialize, Serialize, Clone, Debug, Default, JsonSchema)]
//! pub struct GreetingStatus {
//!     #[serde(default)]
//!     pub conditions: Vec<Condition>,
//! }
//!
//! #[derive(Debug, thiserror::Error)]
//! pub enum Error {
//!     #[error(transparent)]
//!     Opkit(#[from] opkit::Error),
//! }
//!
//! /// The operator's own flags, next to opkit's standard ones.
//! #[derive(Debug, Clone, clap::Args)]
//! struct Flags {
//!     /// Appended to every greeting.
//!     #[arg(long, default_value = "!")]
//!     suffix: String,
//! }
//!
//! async fn reconcile(greeting: Arc<Greeting>, ctx: Arc<Context<Flags>>) -> Result<Action, Error> {
//!     if greeting.spec.message.is_empty() {
//!         // Retrying cannot help: record a Warning event, wait for the next edit.
//!         return Err(opkit::Error::terminal("spec.message is empty").into());
//!     }
//!     // Desired child: a ConfigMap owned by the Greeting, applied server-side.
//!     let mut cm = ConfigMap::default();
//!     cm.metadata.name = Some(greeting.name_any());
//!     cm.data = Some([("message".to_string(),
//!                      format!("{}{}", greeting.spec.message, ctx.suffix))].into());
//!     ctx.apply_owned(greeting.as_ref(), cm).await?;
//!
//!     // Status with a condition; lastTransitionTime only moves when the status flips.
//!     let mut status = greeting.status.clone().unwrap_or_default();
//!     let changed = conditions::set(&mut status.conditions, conditions::ready(true)
//!         .reason("ConfigMapApplied")
//!         .message("the ConfigMap is up to date")
//!         .observed(greeting.as_ref()));
//!     if changed {
//!         ctx.patch_status(greeting.as_ref(), &status).await?;
//!         ctx.event(greeting.as_ref()).reason("Applied").note("ConfigMap applied").publish().await?;
//!     }
//!     Ok(Action::requeue(Duration::from_secs(300)))
//! }
//!
//! fn controller(flags: &Flags) -> ControllerDef {
//!     Controller::<Greeting>::new("greeting")
//!         .owns::<ConfigMap>()
//!         .with_predicate(predicate::generation_changed())
//!         .max_concurrent_reconciles(4)
//!         .build(reconcile, flags.clone())
//! }
//!
//! fn main() -> std::process::ExitCode {
//!     App::new("greeting-operator")
//!         .crd::<Greeting>()
//!         .flags::<Flags>()
//!         .controller(controller)
//!         .main()
//! }
//! ```

#![warn(missing_docs)]

pub mod app;
pub mod apply;
pub mod cache;
pub mod conditions;
pub mod controller;
pub mod error;
pub mod events;
pub mod expectations;
pub mod finalizer;
pub mod informer;
pub mod leader;
pub mod manager;
pub mod metrics;
pub mod predicate;
pub mod rbac;
pub mod signals;
pub mod watches;
pub mod webhook;
pub mod workqueue;

pub use app::App;
pub use cache::CacheOptions;
pub use controller::{Action, Context, Controller, ControllerDef, Request};
pub use error::{ApiErrorExt, Error, Result, ResultExt, TerminalError};
pub use expectations::Expectations;
pub use informer::{Caches, Kind, Object, OwnerIndex};
pub use leader::LeaderElection;
pub use manager::{
    LeaseSettings, Manager, ManagerBuilder, ManagerSettings, Running, ShutdownHandle,
};
pub use predicate::{Change, Predicate};
pub use webhook::{
    Admission, Conversion, ConversionError, Convertible, Defaulter, Denied, Hub, SelfManagedCerts,
    Validator, WebhookServer,
};

pub use k8s_openapi;
pub use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
pub use kube;
pub use kube::core::PartialObjectMeta;
pub use kube::runtime::events::EventType;
pub use kube::runtime::reflector::{ObjectRef, Store};
pub use kube::{Api, Client, CustomResource, CustomResourceExt, Resource, ResourceExt};
pub use schemars;
pub use schemars::JsonSchema;

/// What most operators import: `use opkit::prelude::*;`.
pub mod prelude {
    pub use crate::{
        Action, Api, ApiErrorExt, Change, Client, Condition, Context, Controller, CustomResource,
        CustomResourceExt, EventType, JsonSchema, LeaderElection, Manager, Predicate, Request,
        Resource, ResourceExt, ResultExt, Store, conditions, finalizer, predicate,
    };
}

/// Installs rustls' `ring` crypto provider for the process, if none is installed yet.
/// [`client`] and `TestEnv` call it; call it yourself before building a [`Client`] by hand.
pub fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// A client from the environment — in-cluster service account or `KUBECONFIG`/`~/.kube/config`,
/// as `kubectl` finds it.
pub async fn client() -> Result<Client> {
    install_crypto_provider();
    let config = kube::Config::infer()
        .await
        .map_err(|e| Error::Config(e.to_string()))?;
    Client::try_from(config).map_err(Error::Kube)
}

/// A client from the kubeconfig file at `path` (its current context), as `kubectl
/// --kubeconfig PATH` — what an operator's `--kubeconfig` flag means.
pub async fn client_from_kubeconfig(path: &std::path::Path) -> Result<Client> {
    install_crypto_provider();
    let kubeconfig = kube::config::Kubeconfig::read_from(path)
        .map_err(|e| Error::Config(format!("{}: {e}", path.display())))?;
    let config = kube::Config::from_custom_kubeconfig(
        kubeconfig,
        &kube::config::KubeConfigOptions::default(),
    )
    .await
    .map_err(|e| Error::Config(format!("{}: {e}", path.display())))?;
    Client::try_from(config).map_err(Error::Kube)
}
