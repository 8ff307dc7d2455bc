//! `opm validate`: operator-registry's rules for a file-based catalog. Every channel and bundle
//! belongs to a known package; each package has a default channel that exists; each bundle has
//! exactly one `olm.package` property naming its package and a semver version, appears in a
//! channel, and versions are unique per package; each channel has exactly one head, reaches
//! every bundle that is not skipped along `replaces` from the head, and has no `replaces`
//! cycle; deprecations reference things that exist. All problems are reported, not only the
//! first.

use std::collections::{BTreeMap, BTreeSet};

use super::{Catalog, ChannelEntry, SCHEMA_BUNDLE, SCHEMA_CHANNEL, SCHEMA_PACKAGE};
use crate::names;
use crate::property;

/// One rule a catalog breaks (the messages are opm's).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CatalogError {
    /// A package has no name.
    #[error("config contains package with no name")]
    PackageWithoutName,
    /// Two packages have the same name.
    #[error("duplicate package {0:?}")]
    DuplicatePackage(String),
    /// A package name is not a DNS-1123 label.
    #[error("invalid package name {0:?}: {1}")]
    InvalidPackageName(String, String),
    /// A channel names a package that does not exist.
    #[error("unknown package {package:?} for channel {channel:?}")]
    ChannelOfUnknownPackage {
        /// The package.
        package: String,
        /// The channel.
        channel: String,
    },
    /// A channel has no name.
    #[error("package {0:?} contains channel with no name")]
    ChannelWithoutName(String),
    /// Two channels of a package have the same name.
    #[error("package {package:?} has duplicate channel {channel:?}")]
    DuplicateChannel {
        /// The package.
        package: String,
        /// The channel.
        channel: String,
    },
    /// A channel lists a bundle twice.
    #[error("invalid package {package:?}, channel {channel:?}: duplicate entry {entry:?}")]
    DuplicateEntry {
        /// The package.
        package: String,
        /// The channel.
        channel: String,
        /// The bundle.
        entry: String,
    },
    /// A bundle has no package.
    #[error("package name must be set for bundle {0:?}")]
    BundleWithoutPackage(String),
    /// A bundle names a package that does not exist.
    #[error("unknown package {package:?} for bundle {bundle:?}")]
    BundleOfUnknownPackage {
        /// The package.
        package: String,
        /// The bundle.
        bundle: String,
    },
    /// Two bundles of a package have the same name.
    #[error("package {package:?} has duplicate bundle {bundle:?}")]
    DuplicateBundle {
        /// The package.
        package: String,
        /// The bundle.
        bundle: String,
    },
    /// A bundle does not have exactly one `olm.package` property.
    #[error(
        "package {package:?} bundle {bundle:?} must have exactly 1 \"olm.package\" property, found {found}"
    )]
    PackageProperties {
        /// The package.
        package: String,
        /// The bundle.
        bundle: String,
        /// How many it has.
        found: usize,
    },
    /// A property does not parse.
    #[error("parse properties for bundle {bundle:?}: {message}")]
    Property {
        /// The bundle.
        bundle: String,
        /// Why.
        message: String,
    },
    /// The `olm.package` property names another package.
    #[error("package {package:?} does not match \"olm.package\" property {property:?}")]
    PackageMismatch {
        /// The bundle's package.
        package: String,
        /// The property's.
        property: String,
    },
    /// An image reference is not valid.
    #[error(
        "package {package:?} bundle {bundle:?} {field}: invalid image pull spec {image:?}: {message}"
    )]
    InvalidImage {
        /// The package.
        package: String,
        /// The bundle.
        bundle: String,
        /// `image` or `relatedImages[i].image`.
        field: String,
        /// The reference.
        image: String,
        /// Why.
        message: String,
    },
    /// A bundle version is not semver.
    #[error("error parsing bundle {bundle:?} version {version:?}: {message}")]
    InvalidVersion {
        /// The bundle.
        bundle: String,
        /// The version.
        version: String,
        /// Why.
        message: String,
    },
    /// A bundle is in no channel.
    #[error("package {package:?}, bundle {bundle:?} not found in any channel entries")]
    StrayBundle {
        /// The package.
        package: String,
        /// The bundle.
        bundle: String,
    },
    /// Channel entries have no `olm.bundle`.
    #[error(
        "no olm.bundle blobs found in package {package:?} for olm.channel entries {}",
        fmt_list(entries)
    )]
    MissingBundles {
        /// The package.
        package: String,
        /// The entries.
        entries: Vec<String>,
    },
    /// A package has no default channel.
    #[error("invalid package {0:?}: default channel must be set")]
    NoDefaultChannel(String),
    /// A package's default channel does not exist.
    #[error(
        "invalid package {package:?}: invalid channel {channel:?}: channel must contain at least one bundle"
    )]
    EmptyDefaultChannel {
        /// The package.
        package: String,
        /// The channel.
        channel: String,
    },
    /// A channel has no head or several.
    #[error("invalid package {package:?}: invalid channel {channel:?}: {message}")]
    Channel {
        /// The package.
        package: String,
        /// The channel.
        channel: String,
        /// The rule broken (heads, cycle, stranded bundles).
        message: String,
    },
    /// Two bundles of a package have the same version.
    #[error("invalid package {package:?}: duplicate versions found in bundles: {version}: [{}]", bundles.join(", "))]
    DuplicateVersion {
        /// The package.
        package: String,
        /// The version.
        version: String,
        /// The bundles.
        bundles: Vec<String>,
    },
    /// A deprecation is wrong.
    #[error("{0}")]
    Deprecation(String),
}

fn fmt_list(items: &[String]) -> String {
    format!("[{}]", items.join(" "))
}

/// Checks `catalog` with operator-registry's rules; every broken rule, in a stable order.
pub fn validate_catalog(catalog: &Catalog) -> Vec<CatalogError> {
    let mut errs = Vec::new();
    // Packages.
    let mut packages: BTreeMap<&str, &str> = BTreeMap::new(); // name -> default channel
    for p in &catalog.packages {
        if p.name.is_empty() {
            errs.push(CatalogError::PackageWithoutName);
            continue;
        }
        if packages.insert(&p.name, &p.default_channel).is_some() {
            errs.push(CatalogError::DuplicatePackage(p.name.clone()));
        }
        if let Err(e) = names::dns1123_label(&p.name) {
            errs.push(CatalogError::InvalidPackageName(p.name.clone(), e));
        }
    }
    // Channels: package -> channel -> entries.
    let mut channels: BTreeMap<&str, BTreeMap<&str, Vec<&ChannelEntry>>> = BTreeMap::new();
    for c in &catalog.channels {
        if !packages.contains_key(c.package.as_str()) {
            errs.push(CatalogError::ChannelOfUnknownPackage {
                package: c.package.clone(),
                channel: c.name.clone(),
            });
            continue;
        }
        if c.name.is_empty() {
            errs.push(CatalogError::ChannelWithoutName(c.package.clone()));
            continue;
        }
        let of_pkg = channels.entry(&c.package).or_default();
        if of_pkg.contains_key(c.name.as_str()) {
            errs.push(CatalogError::DuplicateChannel {
                package: c.package.clone(),
                channel: c.name.clone(),
            });
            continue;
        }
        let mut seen = BTreeSet::new();
        let mut entries = Vec::new();
        for e in &c.entries {
            if !seen.insert(e.name.as_str()) {
                errs.push(CatalogError::DuplicateEntry {
                    package: c.package.clone(),
                    channel: c.name.clone(),
                    entry: e.name.clone(),
                });
                continue;
            }
            entries.push(e);
        }
        of_pkg.insert(&c.name, entries);
    }
    // Bundles.
    let mut bundles_of: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    let mut versions: BTreeMap<(&str, String), BTreeSet<&str>> = BTreeMap::new();
    for b in &catalog.bundles {
        if b.package.is_empty() {
            errs.push(CatalogError::BundleWithoutPackage(b.name.clone()));
            continue;
        }
        if !packages.contains_key(b.package.as_str()) {
            errs.push(CatalogError::BundleOfUnknownPackage {
                package: b.package.clone(),
                bundle: b.name.clone(),
            });
            continue;
        }
        if !bundles_of.entry(&b.package).or_default().insert(&b.name) {
            errs.push(CatalogError::DuplicateBundle {
                package: b.package.clone(),
                bundle: b.name.clone(),
            });
            continue;
        }
        let pkgs = property::packages(&b.properties);
        if pkgs.len() != 1 {
            errs.push(CatalogError::PackageProperties {
                package: b.package.clone(),
                bundle: b.name.clone(),
                found: pkgs.len(),
            });
        }
        for bad in pkgs.iter().filter_map(|p| p.as_ref().err()) {
            errs.push(CatalogError::Property {
                bundle: b.name.clone(),
                message: bad.clone(),
            });
        }
        if let [Ok(p)] = pkgs.as_slice() {
            if p.package_name != b.package {
                errs.push(CatalogError::PackageMismatch {
                    package: b.package.clone(),
                    property: p.package_name.clone(),
                });
            }
            match semver::Version::parse(&p.version) {
                Ok(v) => {
                    let key = (b.package.as_str(), v.to_string());
                    versions.entry(key).or_default().insert(&b.name);
                }
                Err(e) => errs.push(CatalogError::InvalidVersion {
                    bundle: b.name.clone(),
                    version: p.version.clone(),
                    message: e.to_string(),
                }),
            }
        }
        let images = std::iter::once(("image".to_string(), &b.image)).chain(
            b.related_images
                .iter()
                .enumerate()
                .map(|(i, r)| (format!("relatedImages[{i}].image"), &r.image)),
        );
        for (field, image) in images {
            if !image.is_empty()
                && let Err(message) = names::image_reference(image)
            {
                errs.push(CatalogError::InvalidImage {
                    package: b.package.clone(),
                    bundle: b.name.clone(),
                    field,
                    image: image.clone(),
                    message,
                });
            }
        }
        let in_channel = channels
            .get(b.package.as_str())
            .is_some_and(|chs| chs.values().any(|es| es.iter().any(|e| e.name == b.name)));
        if !in_channel {
            errs.push(CatalogError::StrayBundle {
                package: b.package.clone(),
                bundle: b.name.clone(),
            });
        }
    }
    for (pkg, chs) in &channels {
        let have = bundles_of.get(pkg).cloned().unwrap_or_default();
        let missing: BTreeSet<String> = chs
            .values()
            .flatten()
            .filter(|e| !have.contains(e.name.as_str()))
            .map(|e| e.name.clone())
            .collect();
        if !missing.is_empty() {
            errs.push(CatalogError::MissingBundles {
                package: pkg.to_string(),
                entries: missing.into_iter().collect(),
            });
        }
    }
    // Deprecations.
    let mut deprecated_pkgs = BTreeSet::new();
    for (i, d) in catalog.deprecations.iter().enumerate() {
        let dep = |m: String| CatalogError::Deprecation(m);
        if d.package.is_empty() {
            errs.push(dep(format!(
                "package name must be set for deprecation item {i}"
            )));
            continue;
        }
        if !packages.contains_key(d.package.as_str()) {
            errs.push(dep(format!(
                "cannot apply deprecations to an unknown package {:?}",
                d.package
            )));
            continue;
        }
        if !deprecated_pkgs.insert(d.package.as_str()) {
            errs.push(dep(format!(
                "expected a maximum of one deprecation per package: {:?}",
                d.package
            )));
            continue;
        }
        let mut refs = BTreeSet::new();
        for (j, e) in d.entries.iter().enumerate() {
            let r = &e.reference;
            if r.schema.is_empty() {
                errs.push(dep(format!(
                    "schema must be set for deprecation entry [{j}] for package {:?}",
                    d.package
                )));
                continue;
            }
            if !refs.insert(r.clone()) {
                errs.push(dep(format!(
                    "duplicate deprecation entry {{{} {}}} for package {:?}",
                    r.schema, r.name, d.package
                )));
                continue;
            }
            match r.schema.as_str() {
                SCHEMA_BUNDLE => {
                    if !bundles_of
                        .get(d.package.as_str())
                        .is_some_and(|b| b.contains(r.name.as_str()))
                    {
                        errs.push(dep(format!(
                            "cannot deprecate bundle {:?} for package {:?}: bundle not found",
                            r.name, d.package
                        )));
                    }
                }
                SCHEMA_CHANNEL => {
                    if !channels
                        .get(d.package.as_str())
                        .is_some_and(|c| c.contains_key(r.name.as_str()))
                    {
                        errs.push(dep(format!(
                            "cannot deprecate channel {:?} for package {:?}: channel not found",
                            r.name, d.package
                        )));
                    }
                }
                SCHEMA_PACKAGE => {
                    if !r.name.is_empty() {
                        errs.push(dep(format!(
                            "package name must be empty for deprecated package {:?} (specified {:?})",
                            d.package, r.name
                        )));
                    }
                }
                other => errs.push(dep(format!(
                    "cannot deprecate object {{{other} {}}} referenced by entry {j} for package {:?}: object schema unknown",
                    r.name, d.package
                ))),
            }
        }
    }
    // Packages: default channel, channel graphs, unique versions.
    for (pkg, default) in &packages {
        let chs = channels.get(pkg).cloned().unwrap_or_default();
        if default.is_empty() {
            errs.push(CatalogError::NoDefaultChannel(pkg.to_string()));
        } else if !chs.contains_key(default) {
            errs.push(CatalogError::EmptyDefaultChannel {
                package: pkg.to_string(),
                channel: default.to_string(),
            });
        }
        for (name, entries) in &chs {
            let channel_err = |message: String| CatalogError::Channel {
                package: pkg.to_string(),
                channel: name.to_string(),
                message,
            };
            if entries.is_empty() {
                errs.push(channel_err(
                    "channel must contain at least one bundle".into(),
                ));
                continue;
            }
            if let Err(m) = replaces_chain(entries) {
                errs.push(channel_err(m));
            }
        }
    }
    for ((pkg, version), names) in versions {
        if names.len() > 1 {
            errs.push(CatalogError::DuplicateVersion {
                package: pkg.to_string(),
                version,
                bundles: names.into_iter().map(String::from).collect(),
            });
        }
    }
    errs
}

/// The channel's one head: the entry no other entry replaces or skips.
pub(crate) fn channel_head<'a>(entries: &[&'a ChannelEntry]) -> Result<&'a ChannelEntry, String> {
    let incoming: BTreeSet<&str> = entries
        .iter()
        .flat_map(|e| {
            std::iter::once(e.replaces.as_str())
                .filter(|r| !r.is_empty())
                .chain(e.skips.iter().map(String::as_str))
        })
        .collect();
    let mut heads: Vec<&ChannelEntry> = entries
        .iter()
        .copied()
        .filter(|e| !incoming.contains(e.name.as_str()))
        .collect();
    match heads.len() {
        0 => Err("no channel head found in graph".into()),
        1 => Ok(heads.remove(0)),
        _ => {
            let mut names: Vec<&str> = heads.iter().map(|h| h.name.as_str()).collect();
            names.sort();
            Err(format!(
                "multiple channel heads found in graph: {}",
                names.join(", ")
            ))
        }
    }
}

/// opm's replaces-chain rule: one head; from it, `replaces` reaches every entry that is not
/// skipped; no cycle; the tail may replace an entry that does not exist.
fn replaces_chain(entries: &[&ChannelEntry]) -> Result<(), String> {
    let head = channel_head(entries)?;
    let by_name: BTreeMap<&str, &ChannelEntry> =
        entries.iter().map(|e| (e.name.as_str(), *e)).collect();
    let skipped: BTreeSet<&str> = entries
        .iter()
        .flat_map(|e| e.skips.iter().map(String::as_str))
        .collect();
    let mut chain = vec![head.name.as_str()];
    let mut on_chain: BTreeSet<&str> = BTreeSet::from([head.name.as_str()]);
    let mut cur = Some(head);
    while let Some(e) = cur {
        if skipped.contains(e.replaces.as_str()) {
            break;
        }
        chain.push(&e.replaces);
        if !on_chain.insert(&e.replaces) {
            let start = chain.iter().position(|n| *n == e.replaces).unwrap_or(0);
            return Err(format!(
                "detected cycle in replaces chain of upgrade graph: {}",
                chain[start..].join(" -> ")
            ));
        }
        cur = by_name.get(e.replaces.as_str()).copied();
    }
    let stranded: Vec<&str> = by_name
        .keys()
        .copied()
        .filter(|n| !on_chain.contains(n) && !skipped.contains(n))
        .collect();
    if stranded.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "channel contains one or more stranded bundles: {}",
            stranded.join(", ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::parse_documents;
    use std::path::Path;

    fn catalog(channel_entries: &str) -> Catalog {
        let mut text = String::from(
            "schema: olm.package\nname: foo\ndefaultChannel: stable\n---\nschema: olm.channel\npackage: foo\nname: stable\nentries:\n",
        );
        text.push_str(channel_entries);
        for (name, v) in [
            ("foo.v1", "1.0.0"),
            ("foo.v2", "2.0.0"),
            ("foo.v3", "3.0.0"),
        ] {
            text.push_str(&format!(
                "---\nschema: olm.bundle\npackage: foo\nname: {name}\nimage: quay.io/x/foo:{v}\nproperties:\n- type: olm.package\n  value: {{packageName: foo, version: {v}}}\n"
            ));
        }
        parse_documents(&text, Path::new("t.yaml")).unwrap()
    }

    #[test]
    fn accepts_a_linear_channel() {
        let c = catalog(
            "- name: foo.v1\n- name: foo.v2\n  replaces: foo.v1\n- name: foo.v3\n  replaces: foo.v2\n",
        );
        assert_eq!(validate_catalog(&c), vec![]);
    }

    #[test]
    fn refuses_a_catalog_with_two_channel_heads() {
        let c = catalog(
            "- name: foo.v1\n- name: foo.v2\n  replaces: foo.v1\n- name: foo.v3\n  replaces: foo.v1\n",
        );
        let errs = validate_catalog(&c);
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert!(
            errs[0]
                .to_string()
                .contains("multiple channel heads found in graph: foo.v2, foo.v3"),
            "{}",
            errs[0]
        );
    }

    #[test]
    fn refuses_stranded_bundles_but_not_skipped_ones() {
        let c = catalog("- name: foo.v1\n- name: foo.v2\n- name: foo.v3\n  replaces: foo.v2\n");
        let errs = validate_catalog(&c);
        assert!(
            errs.iter()
                .any(|e| e.to_string().contains("multiple channel heads")),
            "{errs:?}"
        );
        let c = catalog(
            "- name: foo.v1\n- name: foo.v2\n- name: foo.v3\n  replaces: foo.v2\n  skips: [foo.v1]\n",
        );
        assert_eq!(validate_catalog(&c), vec![]);
    }

    #[test]
    fn refuses_a_replaces_cycle() {
        let c = catalog(
            "- name: foo.v1\n  replaces: foo.v2\n- name: foo.v2\n  replaces: foo.v1\n- name: foo.v3\n  replaces: foo.v2\n",
        );
        let errs = validate_catalog(&c);
        assert!(
            errs.iter().any(|e| e.to_string().contains(
                "detected cycle in replaces chain of upgrade graph: foo.v2 -> foo.v1 -> foo.v2"
            )),
            "{errs:?}"
        );
    }

    #[test]
    fn refuses_a_missing_default_channel_and_stray_bundles() {
        let mut c = catalog("- name: foo.v1\n- name: foo.v2\n  replaces: foo.v1\n");
        c.packages[0].default_channel = "fast".into();
        let msgs: Vec<String> = validate_catalog(&c).iter().map(|e| e.to_string()).collect();
        assert!(msgs.iter().any(|m| m.contains("\"fast\"")), "{msgs:?}");
        assert!(
            msgs.iter()
                .any(|m| m.contains("bundle \"foo.v3\" not found in any channel entries")),
            "{msgs:?}"
        );
    }

    #[test]
    fn refuses_duplicate_versions_and_unknown_deprecation_targets() {
        let mut c = catalog(
            "- name: foo.v1\n- name: foo.v2\n  replaces: foo.v1\n- name: foo.v3\n  replaces: foo.v2\n",
        );
        c.bundles[2].properties[0].value["version"] = "2.0.0".into();
        c.deprecations.push(crate::catalog::Deprecation {
            schema: "olm.deprecations".into(),
            package: "foo".into(),
            entries: vec![crate::catalog::DeprecationEntry {
                reference: crate::catalog::Reference {
                    schema: "olm.channel".into(),
                    name: "nope".into(),
                },
                message: "gone".into(),
            }],
        });
        let msgs: Vec<String> = validate_catalog(&c).iter().map(|e| e.to_string()).collect();
        assert!(msgs.iter().any(|m| m.contains("duplicate versions found in bundles: 2.0.0: [foo.v2, foo.v3]")), "{msgs:?}");
        assert!(
            msgs.iter()
                .any(|m| m.contains("cannot deprecate channel \"nope\"")),
            "{msgs:?}"
        );
    }
}
