//! The OLM v1 lifecycle controllers on opkit's runtime, with the I/O the pure `opkit-olm`
//! leaves out: [`registry`] moves bundle and catalog images to and from OCI registries (the
//! CLI's `push|pull` use it too), [`catalogd`] is the `ClusterCatalog` controller (pull,
//! unpack, validate, serve catalogd's HTTP API from its own listener), [`clusterext`] is the
//! `ClusterExtension` controller (resolve against the served catalogs, pull the bundle, apply
//! its objects; [`revision`] keeps each install, [`preflight`] checks a change is safe,
//! [`dependencies`] that what a bundle requires is there, [`selection`] which catalogs it
//! may use),
//! [`http`] answers catalogd's API on a listener, and [`api`] holds both types
//! and CRDs.
//!
//! `opkit up --olm` runs both controllers inside the embedded control plane's process; any
//! other process can run them against any cluster with [`catalogd::start`] and
//! [`clusterext::start`].

#![warn(missing_docs)]

pub mod api;
pub mod catalogd;
pub mod clusterext;
pub mod dependencies;
pub mod http;
pub mod preflight;
pub mod registry;
pub mod revision;
pub mod selection;

pub use api::{
    ClusterCatalog, ClusterCatalogSpec, ClusterCatalogStatus, ClusterExtension,
    ClusterExtensionSpec, ClusterExtensionStatus,
};
pub use catalogd::{Catalogd, CatalogdError, CatalogdOptions, ServedCatalogs};
pub use clusterext::{ClusterExtensions, ClusterExtensionsError};
