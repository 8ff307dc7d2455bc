//! The OLM v1 lifecycle controllers on opkit's runtime, with the I/O the pure `opkit-olm`
//! leaves out: [`registry`] moves bundle and catalog images to and from OCI registries (the
//! CLI's `push|pull` use it too), [`catalogd`] is the `ClusterCatalog` controller (pull,
//! unpack, validate, serve catalogd's HTTP API from its own listener), [`http`] answers that
//! API on a listener, and [`api`] is the `ClusterCatalog` type and CRD.
//!
//! `opkit up --olm` runs the controller inside the embedded control plane's process; any
//! other process can run it against any cluster with [`catalogd::start`].

#![warn(missing_docs)]

pub mod api;
pub mod catalogd;
pub mod http;
pub mod registry;

pub use api::{ClusterCatalog, ClusterCatalogSpec, ClusterCatalogStatus};
pub use catalogd::{Catalogd, CatalogdError, CatalogdOptions};
