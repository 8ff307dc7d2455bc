//! Which bundle a `ClusterExtension` installs, by OLM v1's rules, over the catalogs a cluster
//! serves: the bundles of the package in the channels asked for (all when none), whose
//! version is in the requested range; with nothing installed the highest wins; with a bundle
//! installed and the `CatalogProvided` policy only the installed bundle and its successors in
//! the upgrade graph qualify (so one resolution moves one hop), with `SelfCertified` any
//! version in the range does. Between equal versions the catalog of higher priority wins.

use semver::Version;

use crate::catalog::Catalog;
use crate::graph::{GraphError, Node, PackageGraph};
use crate::version::VersionRange;

/// Which upgrades are allowed from an installed bundle.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum UpgradePolicy {
    /// Only the successors the catalog's upgrade graph names.
    #[default]
    CatalogProvided,
    /// Any version in the range (the user vouches for the upgrade).
    SelfCertified,
}

/// What is asked for.
#[derive(Clone, Debug)]
pub struct Request<'a> {
    /// The package.
    pub package: &'a str,
    /// The version range (any version when `None`).
    pub version: Option<&'a VersionRange>,
    /// The channels (all when empty).
    pub channels: &'a [String],
    /// The upgrade policy.
    pub policy: UpgradePolicy,
}

/// One served catalog.
#[derive(Clone, Copy, Debug)]
pub struct Source<'a> {
    /// The catalog's name.
    pub name: &'a str,
    /// Its priority (higher wins a tie).
    pub priority: i32,
    /// Its content.
    pub catalog: &'a Catalog,
}

/// The bundle chosen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolved {
    /// The catalog it comes from.
    pub catalog: String,
    /// The bundle's name.
    pub name: String,
    /// Its version.
    pub version: Version,
    /// Its image.
    pub image: String,
}

/// Why no bundle could be chosen.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    /// No served catalog has the package.
    #[error("no served catalog has package {0:?}")]
    NoPackage(String),
    /// The package has no bundle matching the request.
    #[error("package {package:?} has no bundle{}{}", in_range(.range), in_channels(.channels))]
    NoMatch {
        /// The package.
        package: String,
        /// The range asked for.
        range: Option<String>,
        /// The channels asked for.
        channels: Vec<String>,
    },
    /// Neither the installed bundle nor any of its successors matches.
    #[error("package {package:?}: no successor of the installed bundle {installed:?}{}{}", in_range(.range), in_channels(.channels))]
    NoSuccessor {
        /// The package.
        package: String,
        /// The installed bundle.
        installed: String,
        /// The range asked for.
        range: Option<String>,
        /// The channels asked for.
        channels: Vec<String>,
    },
    /// A catalog's graph for the package is broken.
    #[error("catalog {catalog:?}: {source}")]
    Graph {
        /// The catalog.
        catalog: String,
        /// Why.
        source: GraphError,
    },
}

fn in_range(range: &Option<String>) -> String {
    range
        .as_ref()
        .map(|r| format!(" in version range {r:?}"))
        .unwrap_or_default()
}

fn in_channels(channels: &[String]) -> String {
    if channels.is_empty() {
        String::new()
    } else {
        format!(" in channels {}", channels.join(", "))
    }
}

/// The bundle to install for `request` from `sources`, given the `installed` bundle.
pub fn resolve(
    sources: &[Source<'_>],
    request: &Request<'_>,
    installed: Option<&Node>,
) -> Result<Resolved, ResolveError> {
    let channels: Vec<&str> = request.channels.iter().map(String::as_str).collect();
    let mut found_package = false;
    let mut best: Option<(Resolved, i32)> = None;
    for source in sources {
        if !source
            .catalog
            .packages
            .iter()
            .any(|p| p.name == request.package)
        {
            continue;
        }
        found_package = true;
        let graph_error = |source_error| ResolveError::Graph {
            catalog: source.name.to_string(),
            source: source_error,
        };
        let graph =
            PackageGraph::from_catalog(source.catalog, request.package).map_err(graph_error)?;
        let candidates: Vec<&Node> = match (installed, request.policy) {
            (Some(node), UpgradePolicy::CatalogProvided) => {
                let mut c = graph.successors(node, &channels).map_err(graph_error)?;
                c.extend(graph.bundle(&node.name));
                c
            }
            _ => {
                let mut c = Vec::new();
                let names: Vec<&str> = if channels.is_empty() {
                    graph.channels().collect()
                } else {
                    channels.clone()
                };
                for channel in names {
                    c.extend(graph.bundles_in(channel).map_err(graph_error)?);
                }
                c
            }
        };
        let chosen = candidates
            .into_iter()
            .filter(|n| request.version.is_none_or(|r| r.contains(&n.version)))
            .max_by(|a, b| a.version.cmp_precedence(&b.version));
        let Some(node) = chosen else { continue };
        let better = best.as_ref().is_none_or(|(b, priority)| {
            node.version
                .cmp_precedence(&b.version)
                .then(source.priority.cmp(priority))
                .is_gt()
        });
        if better {
            let image = source
                .catalog
                .bundles
                .iter()
                .find(|b| b.package == request.package && b.name == node.name)
                .map(|b| b.image.clone())
                .unwrap_or_default();
            let resolved = Resolved {
                catalog: source.name.to_string(),
                name: node.name.clone(),
                version: node.version.clone(),
                image,
            };
            best = Some((resolved, source.priority));
        }
    }
    if !found_package {
        return Err(ResolveError::NoPackage(request.package.to_string()));
    }
    best.map(|(r, _)| r).ok_or_else(|| {
        let range = request.version.map(ToString::to_string);
        let channels = request.channels.to_vec();
        match installed.filter(|_| request.policy == UpgradePolicy::CatalogProvided) {
            Some(node) => ResolveError::NoSuccessor {
                package: request.package.to_string(),
                installed: node.name.clone(),
                range,
                channels,
            },
            None => ResolveError::NoMatch {
                package: request.package.to_string(),
                range,
                channels,
            },
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::{Bundle, Channel, ChannelEntry, Package};
    use crate::property::{PACKAGE, PackageValue, Property};

    fn bundle(v: &str) -> Bundle {
        Bundle {
            schema: "olm.bundle".into(),
            name: format!("p.v{v}"),
            package: "p".into(),
            image: format!("r.io/p-bundle:v{v}"),
            properties: vec![Property::new(
                PACKAGE,
                PackageValue {
                    package_name: "p".into(),
                    version: v.into(),
                    release: String::new(),
                },
            )],
            related_images: vec![],
        }
    }

    fn entry(v: &str, replaces: &str) -> ChannelEntry {
        ChannelEntry {
            name: format!("p.v{v}"),
            replaces: if replaces.is_empty() {
                String::new()
            } else {
                format!("p.v{replaces}")
            },
            ..Default::default()
        }
    }

    /// Package `p`: `stable` is 1.0.0 → 1.1.0 → 2.0.0 (each replacing the one before), `fast`
    /// adds 3.0.0 replacing 2.0.0.
    fn catalog() -> Catalog {
        let stable = vec![
            entry("1.0.0", ""),
            entry("1.1.0", "1.0.0"),
            entry("2.0.0", "1.1.0"),
        ];
        let mut fast = stable.clone();
        fast.push(entry("3.0.0", "2.0.0"));
        Catalog {
            packages: vec![Package {
                schema: "olm.package".into(),
                name: "p".into(),
                default_channel: "stable".into(),
                ..Default::default()
            }],
            channels: [("stable", stable), ("fast", fast)]
                .into_iter()
                .map(|(name, entries)| Channel {
                    schema: "olm.channel".into(),
                    name: name.into(),
                    package: "p".into(),
                    entries,
                    properties: vec![],
                })
                .collect(),
            bundles: ["1.0.0", "1.1.0", "2.0.0", "3.0.0"]
                .into_iter()
                .map(bundle)
                .collect(),
            ..Default::default()
        }
    }

    fn node(v: &str) -> Node {
        Node {
            name: format!("p.v{v}"),
            version: Version::parse(v).unwrap(),
        }
    }

    fn pick(
        range: Option<&str>,
        channels: &[&str],
        policy: UpgradePolicy,
        installed: Option<&str>,
    ) -> Result<Resolved, ResolveError> {
        let c = catalog();
        let range = range.map(|r| VersionRange::parse(r).unwrap());
        let channels: Vec<String> = channels.iter().map(|c| c.to_string()).collect();
        let request = Request {
            package: "p",
            version: range.as_ref(),
            channels: &channels,
            policy,
        };
        let sources = [Source {
            name: "ops",
            priority: 0,
            catalog: &c,
        }];
        resolve(&sources, &request, installed.map(node).as_ref())
    }

    #[test]
    fn a_first_install_takes_the_highest_version_in_range_and_channels() {
        let cp = UpgradePolicy::CatalogProvided;
        let r = pick(None, &[], cp, None).unwrap();
        assert_eq!(
            (r.name.as_str(), r.image.as_str()),
            ("p.v3.0.0", "r.io/p-bundle:v3.0.0")
        );
        assert_eq!(pick(None, &["stable"], cp, None).unwrap().name, "p.v2.0.0");
        assert_eq!(pick(Some("~1"), &[], cp, None).unwrap().name, "p.v1.1.0");
        assert_eq!(pick(Some("1.0.0"), &[], cp, None).unwrap().name, "p.v1.0.0");
    }

    #[test]
    fn catalog_provided_upgrades_move_one_successor_hop_within_the_range() {
        let cp = UpgradePolicy::CatalogProvided;
        assert_eq!(pick(None, &[], cp, Some("1.0.0")).unwrap().name, "p.v1.1.0");
        assert_eq!(pick(None, &[], cp, Some("1.1.0")).unwrap().name, "p.v2.0.0");
        // The installed bundle stays when it is the newest allowed.
        assert_eq!(
            pick(Some("<2"), &[], cp, Some("1.1.0")).unwrap().name,
            "p.v1.1.0"
        );
        // No jumping past the graph, even when the range asks for it.
        let err = pick(Some(">=3"), &[], cp, Some("1.0.0")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "package \"p\": no successor of the installed bundle \"p.v1.0.0\" in version range \">=3\""
        );
    }

    #[test]
    fn self_certified_upgrades_take_any_version_in_the_range() {
        let sc = UpgradePolicy::SelfCertified;
        assert_eq!(
            pick(Some(">=3"), &[], sc, Some("1.0.0")).unwrap().name,
            "p.v3.0.0"
        );
        assert_eq!(
            pick(Some("<1.1"), &[], sc, Some("2.0.0")).unwrap().name,
            "p.v1.0.0"
        );
    }

    #[test]
    fn a_missing_package_or_version_is_named_in_the_error() {
        let cp = UpgradePolicy::CatalogProvided;
        let c = catalog();
        let request = Request {
            package: "nope",
            version: None,
            channels: &[],
            policy: cp,
        };
        let sources = [Source {
            name: "ops",
            priority: 0,
            catalog: &c,
        }];
        let err = resolve(&sources, &request, None).unwrap_err();
        assert_eq!(err.to_string(), "no served catalog has package \"nope\"");
        let err = pick(Some(">=4"), &["stable"], cp, None).unwrap_err();
        assert_eq!(
            err.to_string(),
            "package \"p\" has no bundle in version range \">=4\" in channels stable"
        );
        assert!(matches!(
            pick(None, &["beta"], cp, None),
            Err(ResolveError::Graph { .. })
        ));
    }

    #[test]
    fn equal_versions_in_two_catalogs_go_to_the_higher_priority() {
        let low = catalog();
        let high = catalog();
        let request = Request {
            package: "p",
            version: None,
            channels: &[],
            policy: UpgradePolicy::CatalogProvided,
        };
        let sources = [
            Source {
                name: "low",
                priority: -1,
                catalog: &low,
            },
            Source {
                name: "high",
                priority: 5,
                catalog: &high,
            },
        ];
        assert_eq!(resolve(&sources, &request, None).unwrap().catalog, "high");
    }
}
