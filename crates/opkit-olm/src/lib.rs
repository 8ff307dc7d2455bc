//! Operator lifecycle, the OLM way, as pure functions over data: registry+v1 bundles, file-based
//! catalogs, the upgrade graph, the two version-range dialects OLM uses, and the CRD
//! upgrade-safety checks of OLM v1's preflight. Nothing here talks to a cluster or a registry:
//! the CLI (`opkit bundle`, `opkit catalog`) and the lifecycle controller feed it files and
//! objects, so every rule is testable without a server.
//!
//! The pieces, one job each: [`version`] parses and matches version ranges (blang's for
//! `olm.skipRange`, Masterminds' for a requested version — their prerelease rules differ);
//! [`crd_safety`] compares an installed CRD with its successor.

#![warn(missing_docs)]

pub mod crd_safety;
pub mod version;

pub use crd_safety::{Check, Problem, UnsafeUpgrade, check_upgrade};
pub use version::{RangeError, SkipRange, VersionRange};
