//! Properties: the typed facts a bundle (or package, or channel) carries in a catalog — its
//! package and version, the APIs it provides and requires, its manifests. A property is a type
//! name and a JSON value; the value's shape depends on the type. Unknown types are kept as they
//! are, as opm keeps them.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `olm.package`: the bundle's package and version.
pub const PACKAGE: &str = "olm.package";
/// `olm.package.required`: a package (and version range) the bundle needs.
pub const PACKAGE_REQUIRED: &str = "olm.package.required";
/// `olm.gvk`: an API (group, version, kind) the bundle provides.
pub const GVK: &str = "olm.gvk";
/// `olm.gvk.required`: an API the bundle needs.
pub const GVK_REQUIRED: &str = "olm.gvk.required";
/// `olm.bundle.object`: one manifest of the bundle, base64-encoded JSON.
pub const BUNDLE_OBJECT: &str = "olm.bundle.object";
/// `olm.csv.metadata`: the ClusterServiceVersion's descriptive parts.
pub const CSV_METADATA: &str = "olm.csv.metadata";
/// `olm.constraint`: a generic (CEL, all/any/not) dependency constraint.
pub const CONSTRAINT: &str = "olm.constraint";
/// `olm.label`: a label the bundle carries.
pub const LABEL: &str = "olm.label";

/// One property: a type and its value.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Property {
    /// The property's type (`olm.package`, `olm.gvk`, ...).
    #[serde(rename = "type")]
    pub type_: String,
    /// The value; its shape depends on the type.
    pub value: Value,
}

impl Property {
    /// A property of `type_` with `value` (a serializable typed value).
    pub fn new(type_: &str, value: impl Serialize) -> Property {
        Property {
            type_: type_.to_string(),
            // The typed values below are plain structs of strings: serializing cannot fail.
            value: serde_json::to_value(value).unwrap_or(Value::Null),
        }
    }

    /// The value decoded as `T`, or why not.
    pub fn decode<T: serde::de::DeserializeOwned>(&self) -> Result<T, String> {
        crate::documents::decode(&self.value)
    }
}

/// The value of `olm.package`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PackageValue {
    /// The package.
    pub package_name: String,
    /// The bundle's version (semver).
    pub version: String,
    /// The release suffix of release-versioned bundles.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub release: String,
}

/// The value of `olm.package.required`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PackageRequiredValue {
    /// The package needed.
    pub package_name: String,
    /// The versions accepted (a blang/semver range).
    pub version_range: String,
}

/// The value of `olm.gvk` and `olm.gvk.required`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct GvkValue {
    /// The API group (empty for the core group).
    pub group: String,
    /// The kind.
    pub kind: String,
    /// The version.
    pub version: String,
}

/// The value of `olm.bundle.object`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BundleObjectValue {
    /// The manifest as JSON, base64-encoded.
    pub data: String,
}

/// The `olm.package` properties among `properties`.
pub fn packages(properties: &[Property]) -> Vec<Result<PackageValue, String>> {
    properties
        .iter()
        .filter(|p| p.type_ == PACKAGE)
        .map(Property::decode)
        .collect()
}

/// Sorts properties as opm does when it renders a bundle: by type, then by the value's JSON.
pub(crate) fn sort(properties: &mut [Property]) {
    properties.sort_by_cached_key(|p| (p.type_.clone(), p.value.to_string()));
}
