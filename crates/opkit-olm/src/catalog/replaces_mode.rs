//! A package's catalog from its bundle directories alone, the way catalogs were built before
//! file-based catalogs (`opm index add`, `updateGraph: replaces-mode`): each bundle joins the
//! channels its annotations name, with the CSV's `replaces`, `skips` and `olm.skipRange` as the
//! entry's edges; the default channel is the newest bundle's `channel.default` annotation.

use super::render::{RenderError, RenderOptions, render_bundle};
use super::{Catalog, Channel, ChannelEntry, Icon, Package, SCHEMA_CHANNEL, SCHEMA_PACKAGE};
use crate::bundle::{Bundle, annotations};

/// Why bundles could not be assembled into a package.
#[derive(Debug, thiserror::Error)]
pub enum AssembleError {
    /// No bundle was given.
    #[error("no bundles given")]
    Empty,
    /// The bundles belong to different packages.
    #[error("bundles of several packages: {0:?} and {1:?}")]
    SeveralPackages(String, String),
    /// A bundle could not be rendered.
    #[error(transparent)]
    Render(#[from] RenderError),
}

/// The catalog of one package from its bundles; `image_of` gives each bundle's image reference
/// (empty for none).
pub fn catalog_from_bundles(
    bundles: &[Bundle],
    image_of: &dyn Fn(&Bundle) -> String,
    csv_metadata: bool,
) -> Result<Catalog, AssembleError> {
    let first = bundles.first().ok_or(AssembleError::Empty)?;
    let package = first.package().to_string();
    let mut rendered = Vec::new();
    for b in bundles {
        if b.package() != package {
            return Err(AssembleError::SeveralPackages(package, b.package().into()));
        }
        let r = render_bundle(
            b,
            &RenderOptions {
                image: image_of(b),
                csv_metadata,
            },
        )?;
        // render_bundle has checked the version.
        let version = b
            .version()
            .unwrap_or_else(|_| semver::Version::new(0, 0, 0));
        rendered.push((version, b, r));
    }
    rendered.sort_by(|a, b| a.0.cmp_precedence(&b.0));

    let mut channels: Vec<Channel> = Vec::new();
    for (_, b, _) in &rendered {
        for ch in b.channels() {
            let idx = match channels.iter().position(|c| c.name == ch) {
                Some(i) => i,
                None => {
                    channels.push(Channel {
                        schema: SCHEMA_CHANNEL.into(),
                        name: ch.to_string(),
                        package: package.clone(),
                        entries: Vec::new(),
                        properties: Vec::new(),
                    });
                    channels.len() - 1
                }
            };
            channels[idx].entries.push(ChannelEntry {
                name: b.name().to_string(),
                replaces: b.csv.spec.replaces.clone(),
                skips: b.csv.spec.skips.clone(),
                skip_range: b.csv.skip_range().unwrap_or_default().to_string(),
            });
        }
    }
    let (_, newest, _) = rendered.last().ok_or(AssembleError::Empty)?;
    let default_channel = newest
        .annotations
        .get(annotations::CHANNEL_DEFAULT)
        .cloned()
        .filter(|c| !c.is_empty())
        .or_else(|| newest.channels().first().map(|c| c.to_string()))
        .unwrap_or_default();
    let icon = newest.csv.spec.icon.first().map(|i| Icon {
        base64data: i.base64data.clone(),
        mediatype: i.mediatype.clone(),
    });
    Ok(Catalog {
        packages: vec![Package {
            schema: SCHEMA_PACKAGE.into(),
            name: package,
            default_channel,
            icon,
            description: newest.csv.spec.description.clone(),
            properties: Vec::new(),
        }],
        channels,
        bundles: rendered.into_iter().map(|(_, _, r)| r).collect(),
        ..Catalog::default()
    })
}
