//! File-based catalogs (opm's "declarative config"): documents of schema `olm.package`,
//! `olm.channel`, `olm.bundle` and `olm.deprecations`, and any other schema kept as it is.
//! The types here are the vocabulary; `load` reads a directory, `validate` checks it with
//! operator-registry's rules, `render` turns a bundle directory into an `olm.bundle`, and
//! `write` prints a catalog as opm does.

pub(crate) mod load;
pub(crate) mod render;
pub(crate) mod replaces_mode;
pub(crate) mod serve;
pub(crate) mod validate;
pub(crate) mod write;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::property::Property;

/// `olm.package`.
pub const SCHEMA_PACKAGE: &str = "olm.package";
/// `olm.channel`.
pub const SCHEMA_CHANNEL: &str = "olm.channel";
/// `olm.bundle`.
pub const SCHEMA_BUNDLE: &str = "olm.bundle";
/// `olm.deprecations`.
pub const SCHEMA_DEPRECATIONS: &str = "olm.deprecations";

/// A file-based catalog: its documents by schema.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Catalog {
    /// `olm.package` documents.
    pub packages: Vec<Package>,
    /// `olm.channel` documents.
    pub channels: Vec<Channel>,
    /// `olm.bundle` documents.
    pub bundles: Vec<Bundle>,
    /// `olm.deprecations` documents.
    pub deprecations: Vec<Deprecation>,
    /// Documents of any other schema, kept as they are.
    pub others: Vec<Meta>,
}

impl Catalog {
    /// Appends everything of `other`.
    pub fn merge(&mut self, other: Catalog) {
        self.packages.extend(other.packages);
        self.channels.extend(other.channels);
        self.bundles.extend(other.bundles);
        self.deprecations.extend(other.deprecations);
        self.others.extend(other.others);
    }
}

/// An `olm.package` document.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Package {
    /// Always `olm.package`.
    pub schema: String,
    /// The package's name.
    #[serde(default)]
    pub name: String,
    /// The channel installs follow when none is asked for.
    #[serde(default)]
    pub default_channel: String,
    /// The icon.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icon: Option<Icon>,
    /// A description.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// Properties.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub properties: Vec<Property>,
}

/// A package's icon.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Icon {
    /// The image, base64-encoded.
    #[serde(default)]
    pub base64data: String,
    /// Its media type.
    #[serde(default)]
    pub mediatype: String,
}

/// An `olm.channel` document.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Channel {
    /// Always `olm.channel`.
    pub schema: String,
    /// The channel's name.
    #[serde(default)]
    pub name: String,
    /// Its package.
    #[serde(default)]
    pub package: String,
    /// Its bundles and their upgrade edges.
    #[serde(default)]
    pub entries: Vec<ChannelEntry>,
    /// Properties.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub properties: Vec<Property>,
}

/// One bundle of a channel, with its upgrade edges.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChannelEntry {
    /// The bundle's name.
    #[serde(default)]
    pub name: String,
    /// The bundle it replaces.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub replaces: String,
    /// Bundles it may skip.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skips: Vec<String>,
    /// The versions it can upgrade from directly (blang/semver range).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub skip_range: String,
}

/// An `olm.bundle` document.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Bundle {
    /// Always `olm.bundle`.
    pub schema: String,
    /// The bundle's name (its CSV's name).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Its package.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub package: String,
    /// The bundle image (empty for a bundle rendered from a directory without one).
    #[serde(default)]
    pub image: String,
    /// Properties (`olm.package`, `olm.gvk`, `olm.csv.metadata`, ...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub properties: Vec<Property>,
    /// The images the bundle uses.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub related_images: Vec<RelatedImage>,
}

impl Bundle {
    /// The version of the bundle's one `olm.package` property.
    pub fn version(&self) -> Option<semver::Version> {
        let pkgs = crate::property::packages(&self.properties);
        match pkgs.as_slice() {
            [Ok(p)] => semver::Version::parse(&p.version).ok(),
            _ => None,
        }
    }
}

/// One image a bundle uses.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RelatedImage {
    /// A name (may be empty).
    #[serde(default)]
    pub name: String,
    /// The image reference.
    #[serde(default)]
    pub image: String,
}

/// An `olm.deprecations` document.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Deprecation {
    /// Always `olm.deprecations`.
    pub schema: String,
    /// The package.
    #[serde(default)]
    pub package: String,
    /// What is deprecated, and why.
    #[serde(default)]
    pub entries: Vec<DeprecationEntry>,
}

/// One deprecated thing.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DeprecationEntry {
    /// What: the package, a channel or a bundle.
    pub reference: Reference,
    /// The message users see.
    #[serde(default)]
    pub message: String,
}

/// A reference to a package, channel or bundle of a deprecation's package.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Reference {
    /// `olm.package`, `olm.channel` or `olm.bundle`.
    #[serde(default)]
    pub schema: String,
    /// The channel's or bundle's name (empty for the package).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
}

/// A document of a schema opkit does not model, kept whole.
#[derive(Clone, Debug, PartialEq)]
pub struct Meta {
    /// Its schema.
    pub schema: String,
    /// Its package, when it names one.
    pub package: String,
    /// The document.
    pub blob: Value,
}

pub use load::{LoadError, load_dir, parse_documents};
