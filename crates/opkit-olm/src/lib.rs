//! Operator lifecycle, the OLM way, as pure functions over data: registry+v1 bundles, file-based
//! catalogs, the upgrade graph, the two version-range dialects OLM uses, and the CRD
//! upgrade-safety checks of OLM v1's preflight. Nothing here talks to a cluster or a registry:
//! the CLI (`opkit bundle`, `opkit catalog`) and the lifecycle controller feed it files and
//! objects, so every rule is testable without a server.
//!
//! The pieces, one job each: [`version`] parses and matches version ranges (blang's for
//! `olm.skipRange`, Masterminds' for a requested version — their prerelease rules differ);
//! [`crd_safety`] compares an installed CRD with its successor; [`bundle`] reads and validates
//! bundle directories (`operator-sdk bundle validate`); [`catalog`] loads, validates, renders
//! and writes file-based catalogs (`opm render`, `opm validate`); [`template`] renders the
//! basic and semver catalog templates; [`graph`] answers upgrade questions; [`property`] is the
//! properties vocabulary; [`image`] builds and reads bundle and catalog images (the layer and
//! config, not the registry); [`cluster_catalog`] is the status logic of the `ClusterCatalog`
//! controller; [`resolve`] picks the bundle a `ClusterExtension` installs and [`install`]
//! renders a bundle into the plain objects that install it. Only reading the files given to it is I/O.

#![warn(missing_docs)]

pub mod bundle;
pub mod catalog;
pub mod cluster_catalog;
pub mod crd_safety;
pub mod deprecation;
mod documents;
pub mod graph;
pub mod image;
pub mod install;
mod names;
pub mod property;
pub mod resolve;
pub mod template;
pub mod version;

pub use bundle::generate::{
    GenerateError, GenerateOptions, GeneratedBundle, base_csv, converts_by_webhook, generate_bundle,
};
pub use bundle::validate::{Finding, Report, Severity, Suite, validate_bundle};
pub use bundle::{Bundle, BundleError};
pub use catalog::render::{RenderError, RenderOptions, csv_metadata, render_bundle};
pub use catalog::replaces_mode::{AssembleError, catalog_from_bundles};
pub use catalog::serve::{CatalogContent, CatalogServer, ServeRequest, ServeResponse};
pub use catalog::validate::{CatalogError, validate_catalog};
pub use catalog::write::{Document, Format, WriteError, ordered_documents, write_catalog};
pub use catalog::{Catalog, LoadError, load_dir};
pub use crd_safety::{Check, Problem, UnsafeUpgrade, check_upgrade};
pub use documents::DocumentError;
pub use graph::{GraphError, Node, PackageGraph};
pub use template::basic::render_basic;
pub use template::semver::render_semver;
pub use template::{BundleSource, Rendered, TemplateError};
pub use version::{RangeError, SkipRange, VersionRange};
