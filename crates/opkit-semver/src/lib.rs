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

/// Whether `version` satisfies `constraint` (Sprig's `semverCompare`, Helm's
/// `IsCompatibleRange`), or why one of them does not parse. Answers are remembered (at most
/// 512 per process): the question is pure, and a chart asks the same few in template after
/// template (`.Capabilities.KubeVersion.Version` against a range), each answer costing
/// several pattern matches.
pub fn satisfies(constraint: &str, version: &str) -> Result<bool, Error> {
    type Seen = std::collections::HashMap<(String, String), Result<bool, Error>>;
    static SEEN: std::sync::Mutex<Option<Seen>> = std::sync::Mutex::new(None);
    const SEEN_MAX: usize = 512;
    let seen = || SEEN.lock().unwrap_or_else(|e| e.into_inner());
    let key = (constraint.to_string(), version.to_string());
    if let Some(known) = seen().as_ref().and_then(|s| s.get(&key)) {
        return known.clone();
    }
    let answer =
        Constraints::parse(constraint).and_then(|c| Version::parse(version).map(|v| c.check(&v)));
    let mut guard = seen();
    let remembered = guard.get_or_insert_with(Default::default);
    if remembered.len() >= SEEN_MAX {
        remembered.clear();
    }
    remembered.insert(key, answer.clone());
    answer
}

#[cfg(test)]
mod tests {
    use super::satisfies;

    #[test]
    fn remembered_answers_and_errors_equal_fresh_ones() {
        for _ in 0..2 {
            assert_eq!(satisfies(">=1.21-0", "v1.35.0"), Ok(true));
            assert_eq!(satisfies("<1.21-0", "v1.35.0"), Ok(false));
            let err = |c, v| satisfies(c, v).unwrap_err().to_string();
            assert_eq!(err(">1", "one"), "invalid semantic version");
            assert_eq!(err("latest", "1.0.0"), "improper constraint: latest");
        }
    }
}
