//! What a catalog's `olm.deprecations` entry says about an installed extension, as OLM v1's
//! four conditions: `PackageDeprecated` (the package), `ChannelDeprecated` (one of the
//! channels the extension asks for), `BundleDeprecated` (the installed bundle; `Unknown` with
//! reason `Absent` while none is installed) and `Deprecated`, true when any of them is. Each
//! true condition carries the catalog's messages, one a line; a false one is `NotDeprecated`
//! with no message, so users can rely on the conditions being there.

use crate::catalog::{Deprecation, DeprecationEntry};

/// Reason of a condition that is true.
pub const DEPRECATED: &str = "Deprecated";
/// Reason of a condition that is false.
pub const NOT_DEPRECATED: &str = "NotDeprecated";
/// Reason of `BundleDeprecated` while no bundle is installed.
pub const ABSENT: &str = "Absent";

/// A condition's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// `True`.
    True,
    /// `False`.
    False,
    /// `Unknown`.
    Unknown,
}

/// One deprecation condition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Condition {
    /// `Deprecated`, `PackageDeprecated`, `ChannelDeprecated` or `BundleDeprecated`.
    pub type_: &'static str,
    /// Its status.
    pub status: Status,
    /// [`DEPRECATED`], [`NOT_DEPRECATED`] or [`ABSENT`].
    pub reason: &'static str,
    /// The catalog's messages, one a line; empty unless true.
    pub message: String,
}

/// The four conditions for an extension of `deprecation`'s package (`None`: the catalog
/// deprecates nothing of it) asking for `channels`, with `installed` bundle (if any).
pub fn conditions(
    deprecation: Option<&Deprecation>,
    channels: &[String],
    installed: Option<&str>,
) -> [Condition; 4] {
    let entries = deprecation
        .map(|d| d.entries.as_slice())
        .unwrap_or_default();
    let messages = |keep: &dyn Fn(&DeprecationEntry) -> bool| -> Vec<&str> {
        entries
            .iter()
            .filter(|e| keep(e))
            .map(|e| e.message.as_str())
            .filter(|m| !m.is_empty())
            .collect()
    };
    let package = messages(&|e| e.reference.schema == crate::catalog::SCHEMA_PACKAGE);
    let channel = messages(&|e| {
        e.reference.schema == crate::catalog::SCHEMA_CHANNEL && channels.contains(&e.reference.name)
    });
    let bundle = messages(&|e| {
        e.reference.schema == crate::catalog::SCHEMA_BUNDLE
            && installed.is_some_and(|b| b == e.reference.name)
    });
    let all: Vec<&str> = package
        .iter()
        .chain(&channel)
        .chain(&bundle)
        .copied()
        .collect();
    let bundle = match installed {
        None => Condition {
            type_: "BundleDeprecated",
            status: Status::Unknown,
            reason: ABSENT,
            message: String::new(),
        },
        Some(_) => of("BundleDeprecated", &bundle),
    };
    [
        of("Deprecated", &all),
        of("PackageDeprecated", &package),
        of("ChannelDeprecated", &channel),
        bundle,
    ]
}

/// A condition true with `messages`, or false without any.
fn of(type_: &'static str, messages: &[&str]) -> Condition {
    if messages.is_empty() {
        Condition {
            type_,
            status: Status::False,
            reason: NOT_DEPRECATED,
            message: String::new(),
        }
    } else {
        Condition {
            type_,
            status: Status::True,
            reason: DEPRECATED,
            message: messages.join("\n"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Reference;

    fn entry(schema: &str, name: &str, message: &str) -> DeprecationEntry {
        DeprecationEntry {
            reference: Reference {
                schema: schema.into(),
                name: name.into(),
            },
            message: message.into(),
        }
    }

    fn deprecation(entries: Vec<DeprecationEntry>) -> Deprecation {
        Deprecation {
            schema: "olm.deprecations".into(),
            package: "demo".into(),
            entries,
        }
    }

    fn summary(c: &[Condition; 4]) -> Vec<(&str, Status, &str, &str)> {
        c.iter()
            .map(|c| (c.type_, c.status, c.reason, c.message.as_str()))
            .collect()
    }

    #[test]
    fn nothing_deprecated_is_false_and_the_bundle_unknown_until_installed() {
        let none = conditions(None, &[], None);
        assert_eq!(
            summary(&none),
            vec![
                ("Deprecated", Status::False, NOT_DEPRECATED, ""),
                ("PackageDeprecated", Status::False, NOT_DEPRECATED, ""),
                ("ChannelDeprecated", Status::False, NOT_DEPRECATED, ""),
                ("BundleDeprecated", Status::Unknown, ABSENT, ""),
            ]
        );
        let installed = conditions(None, &[], Some("demo.v1.0.0"));
        assert_eq!(installed[3].status, Status::False);
        assert_eq!(installed[3].reason, NOT_DEPRECATED);
    }

    #[test]
    fn package_requested_channel_and_installed_bundle_entries_set_their_conditions() {
        let d = deprecation(vec![
            entry("olm.package", "", "demo is retired"),
            entry("olm.channel", "alpha", "alpha is gone"),
            entry("olm.channel", "beta", "beta is gone"),
            entry("olm.bundle", "demo.v1.0.0", "1.0.0 has a CVE"),
            entry("olm.bundle", "demo.v2.0.0", "2.0.0 is broken"),
        ]);
        let c = conditions(Some(&d), &["alpha".into()], Some("demo.v1.0.0"));
        assert_eq!(
            summary(&c),
            vec![
                (
                    "Deprecated",
                    Status::True,
                    DEPRECATED,
                    "demo is retired\nalpha is gone\n1.0.0 has a CVE"
                ),
                (
                    "PackageDeprecated",
                    Status::True,
                    DEPRECATED,
                    "demo is retired"
                ),
                (
                    "ChannelDeprecated",
                    Status::True,
                    DEPRECATED,
                    "alpha is gone"
                ),
                (
                    "BundleDeprecated",
                    Status::True,
                    DEPRECATED,
                    "1.0.0 has a CVE"
                ),
            ]
        );
    }

    #[test]
    fn channels_not_asked_for_and_bundles_not_installed_do_not_count() {
        let d = deprecation(vec![
            entry("olm.channel", "beta", "beta is gone"),
            entry("olm.bundle", "demo.v2.0.0", "2.0.0 is broken"),
        ]);
        let c = conditions(Some(&d), &["alpha".into()], Some("demo.v1.0.0"));
        assert!(c.iter().all(|c| c.status == Status::False), "{c:?}");
        // No channel asked for: channel entries do not apply either.
        let c = conditions(Some(&d), &[], None);
        assert_eq!(c[2].status, Status::False);
        assert_eq!(c[3].status, Status::Unknown);
    }
}
