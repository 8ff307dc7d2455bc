//! `olm.semver`: channels generated from bundle versions. Bundles are listed under the
//! `candidate`, `fast` and `stable` archetypes; each gets a channel per minor version
//! (`stable-v1.2`, `GenerateMinorChannels`, the default) and/or per major version (`stable-v1`,
//! `GenerateMajorChannels`). Within a channel the entries are in version order; the last
//! bundle of each minor version replaces the last bundle of the previous minor (within the
//! same major) and skips every earlier bundle since; the default channel is the most stable
//! archetype's channel of the highest version, minor or major as preferred. This follows
//! opm's `alpha/template/semver` step for step.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use semver::Version;
use serde::Deserialize;
use serde_json::Value;

use super::{BundleSource, Rendered, TemplateError};
use crate::catalog::{self, Catalog, Channel, ChannelEntry, Icon, Package};
use crate::documents;

/// The semver template's schema.
pub const SCHEMA: &str = "olm.semver";

#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
struct SemverTemplate {
    schema: String,
    generate_major_channels: bool,
    generate_minor_channels: bool,
    default_channel_type_preference: String,
    candidate: ChannelBundles,
    fast: ChannelBundles,
    stable: ChannelBundles,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct ChannelBundles {
    bundles: Vec<BundleRef>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct BundleRef {
    image: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Archetype {
    Candidate,
    Fast,
    Stable,
}

impl Archetype {
    fn name(self) -> &'static str {
        match self {
            Archetype::Candidate => "candidate",
            Archetype::Fast => "fast",
            Archetype::Stable => "stable",
        }
    }
}

/// Stream kinds, by opm's priority (default < major < minor).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Stream {
    Default,
    Major,
    Minor,
}

/// Renders a semver template (YAML or JSON text), rendering each bundle reference with
/// `source`.
pub fn render_semver(
    text: &str,
    origin: &Path,
    source: &mut BundleSource<'_>,
) -> Result<Catalog, TemplateError> {
    let doc = documents::parse_documents(text)
        .map_err(|(_, m)| TemplateError::Parse(format!("{}: {m}", origin.display())))?
        .into_iter()
        .next()
        .unwrap_or(Value::Null);
    let mut t: SemverTemplate = documents::decode(&doc)
        .map_err(|m| TemplateError::Parse(format!("{}: {m}", origin.display())))?;
    if t.schema != SCHEMA {
        return Err(TemplateError::Schema {
            found: t.schema,
            expected: SCHEMA,
        });
    }
    if !t.generate_major_channels && !t.generate_minor_channels {
        t.generate_minor_channels = true;
    }
    let preference = match t.default_channel_type_preference.as_str() {
        "" if t.generate_minor_channels => Stream::Minor,
        "" => Stream::Major,
        "minor" if t.generate_minor_channels => Stream::Minor,
        "major" if t.generate_major_channels => Stream::Major,
        "minor" | "major" => {
            return Err(TemplateError::Semver(format!(
                "schema attribute mismatch: DefaultChannelTypePreference set to '{}' doesn't make sense if not generating {}-version channels",
                t.default_channel_type_preference, t.default_channel_type_preference
            )));
        }
        other => {
            return Err(TemplateError::Semver(format!(
                "unknown DefaultChannelTypePreference: {other:?}\nValid values are 'major' or 'minor'"
            )));
        }
    };

    // Render every distinct reference once.
    let archetypes = [
        (Archetype::Candidate, &t.candidate),
        (Archetype::Fast, &t.fast),
        (Archetype::Stable, &t.stable),
    ];
    let mut rendered: BTreeMap<String, Rendered> = BTreeMap::new();
    for (_, list) in archetypes {
        for b in &list.bundles {
            if !rendered.contains_key(&b.image) {
                rendered.insert(b.image.clone(), source(&b.image)?);
            }
        }
    }
    if rendered.is_empty() {
        return Err(TemplateError::Semver(
            "render: no bundles specified or no bundles could be rendered".into(),
        ));
    }

    // The versions per archetype, and the package.
    let mut package = String::new();
    let mut per_archetype: Vec<(Archetype, Vec<(String, Version)>)> = Vec::new();
    for (arch, list) in archetypes {
        let mut entries: Vec<(String, Version)> = Vec::new();
        for b in &list.bundles {
            let bundle = &rendered[&b.image].bundle;
            let pkgs = crate::property::packages(&bundle.properties);
            let p = match pkgs.as_slice() {
                [Ok(p)] => p,
                _ => {
                    return Err(TemplateError::Semver(format!(
                        "bundle {:?} has multiple \"olm.package\" properties, expected exactly 1",
                        bundle.name
                    )));
                }
            };
            let v = Version::parse(&p.version).map_err(|e| {
                TemplateError::Semver(format!(
                    "bundle {:?} has invalid version {:?}: {e}",
                    bundle.name, p.version
                ))
            })?;
            if package.is_empty() {
                package = p.package_name.clone();
            } else if p.package_name != package {
                return Err(TemplateError::Semver(format!(
                    "bundle {:?} does not belong to this package: {package:?}",
                    p.package_name
                )));
            }
            if entries.iter().any(|(n, _)| *n == bundle.name) {
                return Err(TemplateError::Semver(format!(
                    "duplicate bundle name {:?}",
                    bundle.name
                )));
            }
            entries.push((bundle.name.clone(), v));
        }
        // Versions that differ only by build metadata cannot be ordered.
        let mut seen = BTreeSet::new();
        for (_, v) in &entries {
            let mut stripped = v.clone();
            stripped.build = semver::BuildMetadata::EMPTY;
            if !seen.insert(stripped.to_string()) {
                return Err(TemplateError::Semver(format!(
                    "encountered bundle versions which differ only by build metadata, which cannot be ordered: bundle version {:?} cannot be compared to {:?}",
                    v.to_string(),
                    stripped.to_string()
                )));
            }
        }
        entries.sort_by(|a, b| a.1.cmp_precedence(&b.1));
        per_archetype.push((arch, entries));
    }

    let (channels, default_channel) = generate_channels(
        &package,
        &per_archetype,
        t.generate_major_channels,
        t.generate_minor_channels,
        preference,
    );

    let mut out = Catalog::default();
    let mut pkg = Package {
        schema: catalog::SCHEMA_PACKAGE.into(),
        name: package,
        default_channel: default_channel.clone(),
        ..Package::default()
    };
    // Description and icon from the default channel head's CSV.
    let head = channels
        .iter()
        .find(|c| c.name == default_channel)
        .and_then(|c| c.entries.last());
    if let Some(head) = head
        && let Some(csv) = rendered
            .values()
            .find(|r| r.bundle.name == head.name)
            .and_then(|r| r.csv.as_ref())
    {
        if let Some(d) = csv["spec"]["description"].as_str() {
            pkg.description = d.to_string();
        }
        if let Some(icon) = csv["spec"]["icon"].as_array().and_then(|i| i.first()) {
            pkg.icon = Some(Icon {
                base64data: icon["base64data"].as_str().unwrap_or_default().to_string(),
                mediatype: icon["mediatype"].as_str().unwrap_or_default().to_string(),
            });
        }
    }
    out.packages.push(pkg);
    out.channels = channels;
    out.bundles = rendered.into_values().map(|r| r.bundle).collect();
    Ok(out)
}

struct EntryTuple {
    arch: Archetype,
    kind: Stream,
    parent: String,
    name: String,
    version: Version,
    index: usize,
}

fn generate_channels(
    package: &str,
    per_archetype: &[(Archetype, Vec<(String, Version)>)],
    major: bool,
    minor: bool,
    preference: Stream,
) -> (Vec<Channel>, String) {
    let mut channels: BTreeMap<String, Channel> = BTreeMap::new();
    let mut tuples = Vec::new();
    // The "highwater" channel: most stable archetype, then highest version, then preferred kind.
    let mut high: (Archetype, Version, Stream, String) = (
        Archetype::Candidate,
        Version::new(0, 0, 0),
        Stream::Default,
        String::new(),
    );
    for (arch, bundles) in per_archetype {
        for (name, version) in bundles {
            let mut names = Vec::new();
            if major {
                names.push((Stream::Major, format!("{}-v{}", arch.name(), version.major)));
            }
            if minor {
                names.push((
                    Stream::Minor,
                    format!("{}-v{}.{}", arch.name(), version.major, version.minor),
                ));
            }
            for (kind, channel_name) in names {
                let ch = channels.entry(channel_name.clone()).or_insert_with(|| {
                    let candidate = (*arch, version.clone(), kind, channel_name.clone());
                    if higher(&candidate, &high, preference) {
                        high = candidate;
                    }
                    Channel {
                        schema: catalog::SCHEMA_CHANNEL.into(),
                        name: channel_name.clone(),
                        package: package.to_string(),
                        entries: Vec::new(),
                        properties: Vec::new(),
                    }
                });
                ch.entries.push(ChannelEntry {
                    name: name.clone(),
                    ..ChannelEntry::default()
                });
                tuples.push(EntryTuple {
                    arch: *arch,
                    kind,
                    parent: channel_name,
                    name: name.clone(),
                    version: version.clone(),
                    index: ch.entries.len() - 1,
                });
            }
        }
    }
    link_channels(&mut channels, &mut tuples);
    (channels.into_values().collect(), high.3)
}

fn higher(
    a: &(Archetype, Version, Stream, String),
    b: &(Archetype, Version, Stream, String),
    preference: Stream,
) -> bool {
    if a.0 != b.0 {
        return a.0 > b.0;
    }
    match a.1.cmp_precedence(&b.1) {
        Ordering::Greater => return true,
        Ordering::Less => return false,
        Ordering::Equal => {}
    }
    if a.2 != b.2 {
        if a.2 == preference {
            return true;
        }
        if b.2 == preference {
            return false;
        }
        return a.2 > b.2;
    }
    false
}

/// opm's linking: walking the entries by archetype, kind and version, the last entry of each
/// minor version replaces the previous minor's last entry and skips the entries since.
fn link_channels(channels: &mut BTreeMap<String, Channel>, tuples: &mut [EntryTuple]) {
    tuples.sort_by(|a, b| {
        a.arch
            .cmp(&b.arch)
            .then(a.kind.cmp(&b.kind))
            .then(a.version.cmp_precedence(&b.version))
    });
    let mut prev_z_max = String::new();
    let mut cur_skips: BTreeSet<String> = BTreeSet::new();
    let finish = |channels: &mut BTreeMap<String, Channel>,
                  t: &EntryTuple,
                  replaces: &str,
                  skips: &BTreeSet<String>| {
        if let Some(entry) = channels
            .get_mut(&t.parent)
            .and_then(|c| c.entries.get_mut(t.index))
        {
            entry.replaces = replaces.to_string();
            let skips: Vec<String> = skips.iter().filter(|s| *s != replaces).cloned().collect();
            if !skips.is_empty() {
                entry.skips = skips;
            }
        }
    };
    for i in 1..tuples.len() {
        let (prev, cur) = (&tuples[i - 1], &tuples[i]);
        let arch_change = cur.arch != prev.arch;
        let kind_change = cur.kind != prev.kind;
        let x_change = cur.version.major != prev.version.major;
        let y_change = cur.version.minor != prev.version.minor;
        if arch_change || kind_change || x_change || y_change {
            finish(channels, prev, &prev_z_max, &cur_skips);
        }
        if arch_change || kind_change || x_change {
            cur_skips.clear();
            prev_z_max.clear();
        } else {
            if y_change {
                prev_z_max = prev.name.clone();
            }
            cur_skips.insert(prev.name.clone());
        }
    }
    if tuples.len() > 1 {
        let last = &tuples[tuples.len() - 1];
        let penultimate = &tuples[tuples.len() - 2];
        if last.arch == penultimate.arch
            && last.kind == penultimate.kind
            && last.version.major == penultimate.version.major
        {
            finish(channels, last, &prev_z_max, &cur_skips);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(reference: &str) -> Result<Rendered, TemplateError> {
        let version = reference.trim_start_matches('v');
        let bundle = catalog::Bundle {
            schema: "olm.bundle".into(),
            name: format!("foo.v{version}"),
            package: "foo".into(),
            image: format!("quay.io/foo/bundle:v{version}"),
            properties: vec![crate::property::Property::new(
                crate::property::PACKAGE,
                crate::property::PackageValue {
                    package_name: "foo".into(),
                    version: version.into(),
                    release: String::new(),
                },
            )],
            related_images: vec![],
        };
        Ok(Rendered { bundle, csv: None })
    }

    fn entries(c: &Catalog, channel: &str) -> Vec<(String, String, Vec<String>)> {
        c.channels
            .iter()
            .find(|c| c.name == channel)
            .unwrap_or_else(|| panic!("no channel {channel}"))
            .entries
            .iter()
            .map(|e| (e.name.clone(), e.replaces.clone(), e.skips.clone()))
            .collect()
    }

    #[test]
    fn minor_channels_replace_across_minors_and_skip_within() {
        let t = "schema: olm.semver\nstable:\n  bundles:\n  - image: v1.0.0\n  - image: v1.0.1\n  - image: v1.1.0\n  - image: v1.1.1\n  - image: v2.0.0\n";
        let c = render_semver(t, Path::new("t"), &mut source).unwrap();
        let names: Vec<&str> = c.channels.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["stable-v1.0", "stable-v1.1", "stable-v2.0"]);
        assert_eq!(c.packages[0].default_channel, "stable-v2.0");
        let s = |x: &str| x.to_string();
        assert_eq!(
            entries(&c, "stable-v1.0"),
            vec![
                (s("foo.v1.0.0"), s(""), vec![]),
                (s("foo.v1.0.1"), s(""), vec![s("foo.v1.0.0")])
            ]
        );
        assert_eq!(
            entries(&c, "stable-v1.1"),
            vec![
                (s("foo.v1.1.0"), s(""), vec![]),
                (
                    s("foo.v1.1.1"),
                    s("foo.v1.0.1"),
                    vec![s("foo.v1.0.0"), s("foo.v1.1.0")]
                )
            ]
        );
        assert_eq!(
            entries(&c, "stable-v2.0"),
            vec![(s("foo.v2.0.0"), s(""), vec![])]
        );
    }

    #[test]
    fn major_channels_and_the_preferred_default() {
        let t = "schema: olm.semver\ngenerateMajorChannels: true\ngenerateMinorChannels: true\ndefaultChannelTypePreference: major\ncandidate:\n  bundles:\n  - image: v1.0.0\n  - image: v1.1.0\nstable:\n  bundles:\n  - image: v1.0.0\n";
        let c = render_semver(t, Path::new("t"), &mut source).unwrap();
        let names: Vec<&str> = c.channels.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "candidate-v1",
                "candidate-v1.0",
                "candidate-v1.1",
                "stable-v1",
                "stable-v1.0"
            ]
        );
        assert_eq!(c.packages[0].default_channel, "stable-v1");
        let s = |x: &str| x.to_string();
        assert_eq!(
            entries(&c, "candidate-v1"),
            vec![
                (s("foo.v1.0.0"), s(""), vec![]),
                (s("foo.v1.1.0"), s("foo.v1.0.0"), vec![])
            ]
        );
    }

    #[test]
    fn refuses_unknown_fields_and_mismatched_preferences() {
        let err = render_semver(
            "schema: olm.semver\nstabel: {}\n",
            Path::new("t"),
            &mut source,
        )
        .unwrap_err();
        assert!(err.to_string().contains("stabel"), "{err}");
        let err = render_semver(
            "schema: olm.semver\ndefaultChannelTypePreference: major\nstable: {bundles: [{image: v1.0.0}]}\n",
            Path::new("t"),
            &mut source,
        )
        .unwrap_err();
        assert!(err.to_string().contains("doesn't make sense"), "{err}");
    }
}
