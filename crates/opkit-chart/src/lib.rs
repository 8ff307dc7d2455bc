//! Helm charts on opkit's Go-template engine, rendering what `helm template` (Helm v4) renders.
//!
//! A [`Chart`] is Helm's in-memory chart: `Chart.yaml`'s [`Metadata`], the files under
//! `templates/`, the default values, the optional `values.schema.json`, every other file (what
//! `.Files` serves) and the subcharts under `charts/`. Loading keeps Helm's file layout rules so
//! that template names (`CHART/templates/FILE`, `CHART/charts/SUB/templates/FILE`) match what
//! Helm prints in `# Source:` headers and error messages.

#![warn(missing_docs)]
mod chart;
mod load;

pub use chart::{Chart, Dependency, File, Maintainer, Metadata};
pub use load::LoadError;

/// The README's example, compiled and run as a doctest.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
