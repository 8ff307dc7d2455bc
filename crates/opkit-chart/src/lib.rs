//! Helm charts on opkit's Go-template engine, rendering what `helm template` (Helm v4) renders.
//!
//! A [`Chart`] is Helm's in-memory chart: `Chart.yaml`'s [`Metadata`], the files under
//! `templates/`, the default values, the optional `values.schema.json`, every other file (what
//! `.Files` serves) and the subcharts under `charts/`. Loading keeps Helm's file layout rules so
//! that template names (`CHART/templates/FILE`, `CHART/charts/SUB/templates/FILE`) match what
//! Helm prints in `# Source:` headers and error messages.
//!
//! The values a chart's templates see come from [`ValueOptions::merge_values`] (the user's
//! `-f`/`--set*` values) and [`prepare`] (dependency processing, coalescing and
//! `values.schema.json` validation), both following Helm v4's code and error texts.

#![warn(missing_docs)]
mod action;
mod archive;
mod chart;
mod chartfile;
mod dependencies;
mod engine;
mod glob;
mod ignore;
mod load;
mod manifest;
mod objects;
mod options;
mod prepare;
mod schema;
mod strvals;
mod values;

pub use action::{
    PrepareTemplateError, Release, TemplateError, TemplateOptions, capabilities, crd_objects,
    prepare_and_template, render_parts, render_release, template, template_output,
    validate_release_name,
};
pub use archive::{MAX_DECOMPRESSED_CHART_SIZE, MAX_DECOMPRESSED_FILE_SIZE};
pub use chart::{Chart, Dependency, File, Lock, Maintainer, Metadata};
pub use engine::{Engine, INCLUDE_RECURSION_MAX, LookupFn, RenderContext, RenderError};
pub use ignore::IgnoreError;
pub use load::LoadError;
pub use manifest::{
    HOOK_ANNOTATION, Head, Hook, INSTALL_ORDER, Manifest, ManifestError, sort_manifests,
    split_manifests,
};
pub use objects::{
    Capabilities, DEFAULT_API_VERSIONS, DEFAULT_KUBE_VERSION, KubeVersion, KubeVersionError,
    ReleaseOptions,
};
pub use options::{ValueOptions, ValueOptionsError};
pub use prepare::{PrepareError, prepare, prepare_with_warnings};
pub use values::{ValuesError, merge_maps};

/// The README's example, compiled and run as a doctest.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
