//! Catalog templates, as `opm alpha render-template` has them: `olm.template.basic` (a catalog
//! whose bundles are only references, rendered in place) and `olm.semver` (channels and
//! upgrade edges generated from bundle versions). Rendering a reference is the caller's job
//! (a [`BundleSource`]): the CLI renders bundle directories, offline.

pub(crate) mod basic;
pub(crate) mod semver;

use crate::catalog;

/// Renders a bundle reference (an image, or a directory for offline use) into its `olm.bundle`.
pub type BundleSource<'a> = dyn FnMut(&str) -> Result<Rendered, TemplateError> + 'a;

/// A rendered bundle reference: the `olm.bundle` and the bundle's CSV (the semver template
/// takes the package's description and icon from the default channel head's CSV).
#[derive(Clone, Debug)]
pub struct Rendered {
    /// The `olm.bundle`.
    pub bundle: catalog::Bundle,
    /// The ClusterServiceVersion, when the source has it.
    pub csv: Option<serde_json::Value>,
}

/// Why a template could not be rendered.
#[derive(Debug, thiserror::Error)]
pub enum TemplateError {
    /// The template is not valid YAML or JSON, or has the wrong shape.
    #[error("decoding template: {0}")]
    Parse(String),
    /// The template's schema is not the one asked for.
    #[error("template has unknown schema ({found:?}), should be {expected:?}")]
    Schema {
        /// What the template says.
        found: String,
        /// What the command renders.
        expected: &'static str,
    },
    /// The template's entries do not load as a catalog.
    #[error(transparent)]
    Load(#[from] catalog::LoadError),
    /// A bundle entry of a basic template has more than `schema` and `image`.
    #[error(
        "unexpected fields present in basic template bundle (a bundle entry has only schema and image): {0}"
    )]
    BundleEntry(String),
    /// A bundle reference could not be rendered.
    #[error("bundle reference {reference:?}: {message}")]
    Bundle {
        /// The reference.
        reference: String,
        /// Why.
        message: String,
    },
    /// The semver template's content is inconsistent.
    #[error("{0}")]
    Semver(String),
}
