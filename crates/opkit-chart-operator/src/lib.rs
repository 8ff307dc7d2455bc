//! Chart operators: a Helm chart driven by a custom resource, as operator-sdk's Helm plugin
//! does it, on opkit's runtime.
//!
//! Releases live where Helm keeps them (Secrets of type `helm.sh/release.v1`), so Helm itself
//! reads what the operator deploys and the operator adopts what Helm installed.

#![warn(missing_docs)]

pub mod values;
pub mod watches;

pub use values::{ValuesError, values_for};
pub use watches::{Watch, WatchesError};
