//! The upgrade graph of one package: per channel, the edges `replaces`, `skips` and
//! `olm.skipRange` draw from older bundles to newer ones. OLM v1's successor rule (a bundle B
//! is a successor of the installed bundle I when, in one of the channels asked for, B replaces
//! I, B skips I, or I's version is in B's skipRange) answers "what may I upgrade to"; OLM v0's
//! channel-head rule (jump straight to the head when it is a successor, else take the newest
//! successor) answers "what would a v0 Subscription pick next". The upgrade path is the
//! shortest chain of single hops from one bundle to another.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use semver::Version;

use crate::catalog::{Catalog, ChannelEntry};
use crate::version::SkipRange;

/// Why a graph could not be built or queried.
#[derive(Debug, thiserror::Error)]
pub enum GraphError {
    /// The catalog has no such package.
    #[error("package {0:?} not found in the catalog")]
    UnknownPackage(String),
    /// A channel entry names a bundle the catalog lacks.
    #[error(
        "package {package:?}: channel {channel:?} lists bundle {bundle:?}, which the catalog lacks"
    )]
    MissingBundle {
        /// The package.
        package: String,
        /// The channel.
        channel: String,
        /// The bundle.
        bundle: String,
    },
    /// A bundle has no (or no valid) version.
    #[error("package {package:?}: bundle {bundle:?} has no valid olm.package version")]
    NoVersion {
        /// The package.
        package: String,
        /// The bundle.
        bundle: String,
    },
    /// A skipRange does not parse.
    #[error("package {package:?}: bundle {bundle:?}: skipRange {range:?}: {message}")]
    SkipRange {
        /// The package.
        package: String,
        /// The bundle.
        bundle: String,
        /// The range.
        range: String,
        /// Why.
        message: String,
    },
    /// The channel does not exist.
    #[error("package {package:?} has no channel {channel:?}")]
    UnknownChannel {
        /// The package.
        package: String,
        /// The channel.
        channel: String,
    },
    /// The channel has no single head.
    #[error("package {package:?}: channel {channel:?}: {message}")]
    Head {
        /// The package.
        package: String,
        /// The channel.
        channel: String,
        /// No head, or several.
        message: String,
    },
}

/// A bundle of the graph.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    /// The bundle's name.
    pub name: String,
    /// Its version.
    pub version: Version,
}

struct Edge {
    entry: ChannelEntry,
    skip_range: Option<SkipRange>,
}

/// The upgrade graph of one package.
pub struct PackageGraph {
    package: String,
    default_channel: String,
    nodes: BTreeMap<String, Node>,
    channels: BTreeMap<String, Vec<Edge>>,
}

impl PackageGraph {
    /// The graph of `package` in `catalog`.
    pub fn from_catalog(catalog: &Catalog, package: &str) -> Result<PackageGraph, GraphError> {
        let pkg = catalog
            .packages
            .iter()
            .find(|p| p.name == package)
            .ok_or_else(|| GraphError::UnknownPackage(package.to_string()))?;
        let mut nodes = BTreeMap::new();
        for b in catalog.bundles.iter().filter(|b| b.package == package) {
            let version = b.version().ok_or_else(|| GraphError::NoVersion {
                package: package.to_string(),
                bundle: b.name.clone(),
            })?;
            nodes.insert(
                b.name.clone(),
                Node {
                    name: b.name.clone(),
                    version,
                },
            );
        }
        let mut channels = BTreeMap::new();
        for c in catalog.channels.iter().filter(|c| c.package == package) {
            let mut edges = Vec::new();
            for e in &c.entries {
                if !nodes.contains_key(&e.name) {
                    return Err(GraphError::MissingBundle {
                        package: package.to_string(),
                        channel: c.name.clone(),
                        bundle: e.name.clone(),
                    });
                }
                let skip_range = if e.skip_range.is_empty() {
                    None
                } else {
                    Some(
                        SkipRange::parse(&e.skip_range).map_err(|err| GraphError::SkipRange {
                            package: package.to_string(),
                            bundle: e.name.clone(),
                            range: e.skip_range.clone(),
                            message: err.to_string(),
                        })?,
                    )
                };
                edges.push(Edge {
                    entry: e.clone(),
                    skip_range,
                });
            }
            channels.insert(c.name.clone(), edges);
        }
        Ok(PackageGraph {
            package: package.to_string(),
            default_channel: pkg.default_channel.clone(),
            nodes,
            channels,
        })
    }

    /// The package's default channel.
    pub fn default_channel(&self) -> &str {
        &self.default_channel
    }

    /// The channel names.
    pub fn channels(&self) -> impl Iterator<Item = &str> {
        self.channels.keys().map(String::as_str)
    }

    /// The bundle named `name`.
    pub fn bundle(&self, name: &str) -> Option<&Node> {
        self.nodes.get(name)
    }

    /// The bundles of `channel`, in entry order.
    pub fn bundles_in(&self, channel: &str) -> Result<Vec<&Node>, GraphError> {
        Ok(self
            .edges(channel)?
            .iter()
            .filter_map(|e| self.nodes.get(&e.entry.name))
            .collect())
    }

    fn edges(&self, channel: &str) -> Result<&[Edge], GraphError> {
        self.channels
            .get(channel)
            .map(Vec::as_slice)
            .ok_or_else(|| GraphError::UnknownChannel {
                package: self.package.clone(),
                channel: channel.to_string(),
            })
    }

    /// The channels asked for (all of them when `channels` is empty).
    fn selected<'a>(&'a self, channels: &'a [&'a str]) -> Result<Vec<&'a [Edge]>, GraphError> {
        if channels.is_empty() {
            Ok(self.channels.values().map(Vec::as_slice).collect())
        } else {
            channels.iter().map(|c| self.edges(c)).collect()
        }
    }

    /// OLM v1's successors of the installed bundle `installed` (name and version): the bundles
    /// that, in one of `channels` (all when empty), replace it, skip it, or have a skipRange
    /// containing its version. Newest first; the installed bundle itself is not included.
    pub fn successors(
        &self,
        installed: &Node,
        channels: &[&str],
    ) -> Result<Vec<&Node>, GraphError> {
        let mut out: BTreeSet<&str> = BTreeSet::new();
        for edges in self.selected(channels)? {
            for e in edges {
                if e.entry.name == installed.name {
                    continue;
                }
                let replaces = e.entry.replaces == installed.name;
                let skips = e.entry.skips.contains(&installed.name);
                let in_range = e
                    .skip_range
                    .as_ref()
                    .is_some_and(|r| r.contains(&installed.version));
                if replaces || skips || in_range {
                    out.insert(&e.entry.name);
                }
            }
        }
        let mut nodes: Vec<&Node> = out.iter().filter_map(|n| self.nodes.get(*n)).collect();
        nodes.sort_by(|a, b| {
            b.version
                .cmp_precedence(&a.version)
                .then(a.name.cmp(&b.name))
        });
        Ok(nodes)
    }

    /// The head of `channel`: the one entry no other entry replaces or skips.
    pub fn channel_head(&self, channel: &str) -> Result<&Node, GraphError> {
        let edges = self.edges(channel)?;
        let entries: Vec<&ChannelEntry> = edges.iter().map(|e| &e.entry).collect();
        let head = crate::catalog::validate::channel_head(&entries).map_err(|message| {
            GraphError::Head {
                package: self.package.clone(),
                channel: channel.to_string(),
                message,
            }
        })?;
        self.nodes
            .get(&head.name)
            .ok_or_else(|| GraphError::MissingBundle {
                package: self.package.clone(),
                channel: channel.to_string(),
                bundle: head.name.clone(),
            })
    }

    /// OLM v0's next bundle for a Subscription on `channel` with `installed`: the channel head
    /// when it is a successor, else the newest successor in the channel; `None` when there is
    /// nothing newer.
    pub fn next_v0(&self, installed: &Node, channel: &str) -> Result<Option<&Node>, GraphError> {
        let successors = self.successors(installed, &[channel])?;
        let head = self.channel_head(channel)?;
        if successors.iter().any(|s| s.name == head.name) {
            return Ok(Some(head));
        }
        Ok(successors.into_iter().next())
    }

    /// The shortest upgrade path from bundle `from` to bundle `to`, one successor hop at a
    /// time within `channels` (all when empty); `to` is last, `from` is not included. `None`
    /// when `to` cannot be reached.
    pub fn upgrade_path(
        &self,
        from: &str,
        to: &str,
        channels: &[&str],
    ) -> Result<Option<Vec<&Node>>, GraphError> {
        let Some(start) = self.nodes.get(from) else {
            return Ok(None);
        };
        let mut previous: BTreeMap<&str, &str> = BTreeMap::new();
        let mut queue = VecDeque::from([start]);
        let mut seen = BTreeSet::from([start.name.as_str()]);
        while let Some(node) = queue.pop_front() {
            if node.name == to {
                let mut path = vec![node];
                let mut cur = node.name.as_str();
                while let Some(&p) = previous.get(cur) {
                    if p == from {
                        break;
                    }
                    path.push(&self.nodes[p]);
                    cur = p;
                }
                path.reverse();
                return Ok(Some(path));
            }
            for next in self.successors(node, channels)? {
                if seen.insert(&next.name) {
                    previous.insert(&next.name, &node.name);
                    queue.push_back(next);
                }
            }
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::{Bundle, Channel, Package};
    use crate::property::{PACKAGE, PackageValue, Property};
    use proptest::prelude::*;

    fn bundle(v: &Version) -> Bundle {
        Bundle {
            schema: "olm.bundle".into(),
            name: format!("p.v{v}"),
            package: "p".into(),
            image: String::new(),
            properties: vec![Property::new(
                PACKAGE,
                PackageValue {
                    package_name: "p".into(),
                    version: v.to_string(),
                    release: String::new(),
                },
            )],
            related_images: vec![],
        }
    }

    fn catalog(versions: &[Version], entries: Vec<ChannelEntry>) -> Catalog {
        Catalog {
            packages: vec![Package {
                schema: "olm.package".into(),
                name: "p".into(),
                default_channel: "stable".into(),
                ..Package::default()
            }],
            channels: vec![Channel {
                schema: "olm.channel".into(),
                name: "stable".into(),
                package: "p".into(),
                entries,
                properties: vec![],
            }],
            bundles: versions.iter().map(bundle).collect(),
            ..Catalog::default()
        }
    }

    fn entry(name: &str, replaces: &str, skips: &[&str], skip_range: &str) -> ChannelEntry {
        ChannelEntry {
            name: name.into(),
            replaces: replaces.into(),
            skips: skips.iter().map(|s| s.to_string()).collect(),
            skip_range: skip_range.into(),
        }
    }

    fn v(s: &str) -> Version {
        Version::parse(s).unwrap()
    }

    #[test]
    fn successors_follow_replaces_skips_and_skip_range() {
        let versions = [v("1.0.0"), v("1.1.0"), v("1.2.0"), v("2.0.0")];
        let c = catalog(
            &versions,
            vec![
                entry("p.v1.0.0", "", &[], ""),
                entry("p.v1.1.0", "p.v1.0.0", &[], ""),
                entry("p.v1.2.0", "p.v1.1.0", &["p.v1.0.0"], ""),
                entry("p.v2.0.0", "p.v1.2.0", &[], ">=1.0.0 <1.2.0"),
            ],
        );
        let g = PackageGraph::from_catalog(&c, "p").unwrap();
        let installed = g.bundle("p.v1.0.0").unwrap().clone();
        let names: Vec<&str> = g
            .successors(&installed, &[])
            .unwrap()
            .iter()
            .map(|n| n.name.as_str())
            .collect();
        assert_eq!(names, ["p.v2.0.0", "p.v1.2.0", "p.v1.1.0"]);
        assert_eq!(g.channel_head("stable").unwrap().name, "p.v2.0.0");
        assert_eq!(
            g.next_v0(&installed, "stable").unwrap().unwrap().name,
            "p.v2.0.0"
        );
        let path: Vec<&str> = g
            .upgrade_path("p.v1.0.0", "p.v2.0.0", &[])
            .unwrap()
            .unwrap()
            .iter()
            .map(|n| n.name.as_str())
            .collect();
        assert_eq!(path, ["p.v2.0.0"]);
        let head = g.bundle("p.v2.0.0").unwrap().clone();
        assert!(g.successors(&head, &[]).unwrap().is_empty());
        assert!(
            g.upgrade_path("p.v2.0.0", "p.v1.0.0", &[])
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn asking_for_an_unknown_channel_is_an_error() {
        let c = catalog(&[v("1.0.0")], vec![entry("p.v1.0.0", "", &[], "")]);
        let g = PackageGraph::from_catalog(&c, "p").unwrap();
        let n = g.bundle("p.v1.0.0").unwrap().clone();
        assert!(matches!(
            g.successors(&n, &["fast"]),
            Err(GraphError::UnknownChannel { .. })
        ));
    }

    /// A valid channel: versions increasing, each entry replacing the previous one; some
    /// entries skip every entry up to an older one (a skipped prefix keeps opm's replaces
    /// chain rule: nothing stranded), some carry a skipRange of all older versions.
    fn channel() -> impl Strategy<Value = (Vec<Version>, Vec<ChannelEntry>)> {
        (2usize..12, proptest::collection::vec(any::<u8>(), 12)).prop_map(|(n, dice)| {
            let versions: Vec<Version> = (0..n).map(|i| Version::new(1, i as u64, 0)).collect();
            let name = |i: usize| format!("p.v{}", versions[i]);
            let entries = (0..n)
                .map(|i| {
                    let replaces = if i == 0 { String::new() } else { name(i - 1) };
                    let skips: Vec<String> = if i >= 2 && dice[i] % 3 == 0 {
                        (0..=(dice[i] as usize) % (i - 1)).map(name).collect()
                    } else {
                        vec![]
                    };
                    let skip_range = if dice[i] % 5 == 1 {
                        format!("<{}", versions[i])
                    } else {
                        String::new()
                    };
                    ChannelEntry {
                        name: name(i),
                        replaces,
                        skips,
                        skip_range,
                    }
                })
                .collect();
            (versions, entries)
        })
    }

    proptest! {
        #[test]
        fn the_head_is_reachable_from_every_bundle_of_a_valid_channel((versions, entries) in channel()) {
            let c = catalog(&versions, entries);
            let errs = crate::catalog::validate::validate_catalog(&c);
            prop_assert!(errs.is_empty(), "{errs:?}");
            let g = PackageGraph::from_catalog(&c, "p").unwrap();
            let head = g.channel_head("stable").unwrap().clone();
            for b in g.bundles_in("stable").unwrap() {
                if b.name == head.name { continue; }
                let path = g.upgrade_path(&b.name, &head.name, &["stable"]).unwrap();
                prop_assert!(path.is_some(), "{} cannot reach {}", b.name, head.name);
            }
        }

        #[test]
        fn successors_are_never_older_when_versions_increase_along_replaces((versions, entries) in channel()) {
            let c = catalog(&versions, entries);
            let g = PackageGraph::from_catalog(&c, "p").unwrap();
            for b in g.bundles_in("stable").unwrap() {
                for s in g.successors(b, &[]).unwrap() {
                    prop_assert!(s.version > b.version, "{} -> {}", b.name, s.name);
                }
            }
        }
    }
}
