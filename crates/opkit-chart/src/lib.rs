//! Helm charts on opkit's Go-template engine, rendering what `helm template` (Helm v4) renders.
//!
//! A [`Chart`] is Helm's in-memory chart: `Chart.yaml`'s [`Metadata`], the files under
//! `templates/`, the default values, the optional `values.schema.json`, every other file (what
//! `.Files` serves) and the subcharts under `charts/`. Loading keeps Helm's file layout rules so
//! that template names (`CHART/templates/FILE`, `CHART/charts/SUB/templates/FILE`) match what
//! Helm prints in `# Source:` headers and error messages.

#![warn(missing_docs)]
mod action;
mod chart;
mod engine;
mod glob;
mod load;
mod manifest;
mod objects;

pub use action::{
    Release, TemplateError, TemplateOptions, capabilities, render_release, template,
    template_output, validate_release_name,
};
pub use chart::{Chart, Dependency, File, Maintainer, Metadata};
pub use engine::{Engine, INCLUDE_RECURSION_MAX, LookupFn, RenderContext, RenderError};
pub use load::LoadError;
pub use manifest::{
    HOOK_ANNOTATION, Head, Hook, INSTALL_ORDER, Manifest, ManifestError, sort_manifests,
    split_manifests,
};
pub use objects::{
    Capabilities, DEFAULT_API_VERSIONS, DEFAULT_KUBE_VERSION, KubeVersion, KubeVersionError,
    ReleaseOptions,
};

/// The README's example, compiled and run as a doctest.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
