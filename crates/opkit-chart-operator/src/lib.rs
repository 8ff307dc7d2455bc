//! Chart operators: a Helm chart driven by a custom resource, as operator-sdk's Helm plugin
//! does it, on opkit's runtime.
//!
//! Releases live where Helm keeps them (Secrets of type `helm.sh/release.v1`), so Helm itself
//! reads what the operator deploys and the operator adopts what Helm installed.
//!
//! # The release engine
//!
//! [`Releases`] is what a reconciler calls, one namespace at a time (make one per operator
//! and derive the others with [`Releases::in_namespace`], which shares the discovery cache):
//!
//! ```no_run
//! # async fn example(client: kube::Client, chart: opkit_chart::Chart,
//! #                  values: opkit_template::Value) -> Result<(), opkit_chart_operator::ActionError> {
//! use opkit_chart_operator::{EnsureOptions, Outcome, Releases, UninstallOptions};
//!
//! let releases = Releases::new(client, "apps").max_history(10).field_manager("my-operator");
//! match releases.ensure("web", &chart, &values, &EnsureOptions::default()).await? {
//!     Outcome::Installed(r) | Outcome::Upgraded(r) => println!("deployed revision {}", r.version),
//!     Outcome::Unchanged { repaired, .. } => println!("{repaired} objects put back"),
//! }
//! releases.uninstall("web", &UninstallOptions::default()).await?;
//! # Ok(()) }
//! ```
//!
//! - [`Releases::ensure`] installs, upgrades, resumes an interrupted (`pending-*`)
//!   operation, retries a failed one, or — when the deployed revision already has this
//!   chart, these values and the same rendered manifest — repairs drift with **zero API
//!   writes** when there is none. Rendering uses the cluster's `.Capabilities` and a live
//!   `lookup`; objects are server-side applied in Helm's install order with Helm's
//!   ownership metadata and the [`EnsureOptions::owner`] reference; hooks run with their
//!   weights and delete policies.
//! - [`Releases::uninstall`] (continuing an interrupted one; [`UninstallOutcome::Waiting`]
//!   for operator-sdk's `uninstall-wait`) and [`Releases::rollback`].
//! - [`ActionError`] keeps render errors (Helm's text with template, line and column),
//!   `values.schema.json` errors and API errors apart.
//!
//! Every operation writes its revision as `pending-install`/`pending-upgrade` before it
//! touches the cluster and marks it `deployed` after, so an operator killed at any point
//! leaves a release the next `ensure` moves forward (see the `action` module docs).
//!
//! # Helm's release format
//!
//! [`Release`] is Helm v4's `release.v1.Release` with its JSON field names; the
//! [`storage`] functions encode it as Helm's Secrets driver does
//! (`sh.helm.release.v1.NAME.vREVISION`, base64(gzip(JSON)), labels `name`, `owner=helm`,
//! `status`, `version`, `createdAt`/`modifiedAt`).

//!
//! # The generic operator
//!
//! [`run`] (the `opkit helm-operator run --watches-file watches.yaml` command) reads
//! operator-sdk's [`watches`] file and serves each custom resource kind it lists with its
//! chart, on opkit's runtime: for each custom resource, values = its spec with the entry's
//! `overrideValues` on top ([`values`]), then [`Releases::ensure`]; the [`operator`] module
//! has the reconciler (finalizer, annotations, dependent watches) and [`status`] the status it
//! writes, in operator-sdk's words.

#![warn(missing_docs)]

mod action;
mod error;
mod hooks;
mod objects;
pub mod operator;
pub mod release;
mod render;
mod run;
pub mod status;
pub mod storage;
pub mod values;
pub mod watches;

pub use action::{EnsureOptions, Outcome, Releases, UninstallOptions, UninstallOutcome};
pub use error::ActionError;
pub use objects::RESOURCE_POLICY_ANNOTATION;
pub use operator::{ReconcileError, UNINSTALL_FINALIZER};
pub use release::{Hook, HookExecution, Info, Release, ReleaseChart, ResourceRef, Status};
pub use run::{OperatorError, OperatorOptions, run, start};
pub use status::HelmAppStatus;
pub use storage::{RELEASE_SECRET_TYPE, StorageError};
pub use values::{ValuesError, values_for};
pub use watches::{Watch, WatchesError};
