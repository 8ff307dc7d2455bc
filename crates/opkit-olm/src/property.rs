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

/// Something a bundle needs on the cluster before it is installed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Requirement {
    /// `olm.package.required`: a package installed in a version range (blang/semver).
    Package(PackageRequiredValue),
    /// `olm.gvk.required`: an API the cluster serves.
    Gvk(GvkValue),
}

/// The `olm.package.required` and `olm.gvk.required` properties among `properties`, or why one
/// does not parse or cannot be checked (an `olm.constraint`, whose expressions OLM v0 evaluates
/// in its resolver, is refused by name).
pub fn requirements(properties: &[Property]) -> Result<Vec<Requirement>, String> {
    properties
        .iter()
        .filter_map(|p| {
            let decoded = match p.type_.as_str() {
                PACKAGE_REQUIRED => p.decode().map(Requirement::Package),
                GVK_REQUIRED => p.decode().map(Requirement::Gvk),
                CONSTRAINT => Err(format!(
                    "{} is not supported (its expression is not evaluated)",
                    p.value
                )),
                _ => return None,
            };
            Some(decoded.map_err(|e| format!("property {}: {e}", p.type_)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requirements_are_the_required_packages_and_gvks_and_a_constraint_is_refused() {
        let props: Vec<Property> = serde_json::from_str(
            r#"[{"type": "olm.package", "value": {"packageName": "demo", "version": "1.0.0"}},
                {"type": "olm.package.required", "value": {"packageName": "base", "versionRange": ">=1.0.0"}},
                {"type": "olm.gvk.required", "value": {"group": "g.example.com", "kind": "Gadget", "version": "v1"}}]"#,
        )
        .unwrap();
        assert_eq!(
            requirements(&props).unwrap(),
            [
                Requirement::Package(PackageRequiredValue {
                    package_name: "base".into(),
                    version_range: ">=1.0.0".into(),
                }),
                Requirement::Gvk(GvkValue {
                    group: "g.example.com".into(),
                    kind: "Gadget".into(),
                    version: "v1".into(),
                }),
            ]
        );
        let constraint = Property::new(CONSTRAINT, serde_json::json!({"cel": {"rule": "true"}}));
        let err = requirements(&[constraint]).unwrap_err();
        assert!(err.starts_with("property olm.constraint: "), "{err}");
        let bad = Property::new(PACKAGE_REQUIRED, serde_json::json!({"packageName": 1}));
        assert!(
            requirements(&[bad])
                .unwrap_err()
                .starts_with("property olm.package.required: ")
        );
    }
}
