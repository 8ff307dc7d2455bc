//! Masterminds/semver v3 — the version language of Helm charts (Sprig's `semverCompare` and
//! `semver`) and of OLM v1's requested version ranges (`ClusterExtension`'s `version`) — in one
//! place, so a range means the same thing in a chart and in a catalog.
//!
//! The rules are v3.4's and later (Helm v4 and operator-controller build with them): loose
//! versions (`v1.2`, `1`, leading zeros), constraints joined by `,` or spaces (and) and `||`
//! (or), `x`/`X`/`*` wildcards, `~`, `~>`, `^`, hyphen ranges (`1.2 - 1.4`), and a prerelease
//! version matched only by an and-group in which some constraint names a prerelease. Errors carry
//! Masterminds' own messages, because users see them. blang/semver's range language (OLM's
//! `olm.skipRange`) differs and lives with OLM (`opkit_olm::SkipRange`).

mod constraint;
mod version;

pub use constraint::Constraints;
pub use version::Version;

/// A version or constraint Masterminds refuses, with its message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Error(String);

impl Error {
    fn new(message: impl Into<String>) -> Error {
        Error(message.into())
    }
}
