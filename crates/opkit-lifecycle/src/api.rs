//! OLM v1's `ClusterCatalog` (`olm.operatorframework.io/v1`), with catalogd's field names, so
//! manifests written for catalogd apply unchanged. The CRD is derived from these types
//! ([`crd`]) and installed by the controller itself when it starts, so the API a cluster
//! serves is always the one the running controller reads.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The finalizer under which a deleted catalog stops being served before it goes.
pub const DELETE_FINALIZER: &str = "olm.operatorframework.io/delete-server-cache";

/// catalogd's label carrying each catalog's own name, so label selectors can pick catalogs
/// by name (the catalog controller writes it).
pub const METADATA_NAME_LABEL: &str = "olm.operatorframework.io/metadata.name";

/// A file-based catalog, pulled from an image and served to the cluster over HTTP.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "olm.operatorframework.io",
    version = "v1",
    kind = "ClusterCatalog",
    status = "ClusterCatalogStatus",
    printcolumn = r#"{"name": "LastUnpacked", "type": "date", "jsonPath": ".status.lastUnpacked"}"#,
    printcolumn = r#"{"name": "Serving", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Serving\")].status"}"#,
    printcolumn = r#"{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct ClusterCatalogSpec {
    /// Where the catalog's content comes from.
    pub source: CatalogSource,
    /// A tie-breaker between catalogs that offer the same content: higher wins (default 0).
    #[serde(default)]
    pub priority: i32,
    /// `Available` (default): unpack and serve; `Unavailable`: serve nothing, as if the
    /// catalog did not exist.
    #[serde(default)]
    pub availability_mode: AvailabilityMode,
}

/// Whether the catalog is served.
#[derive(Deserialize, Serialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum AvailabilityMode {
    /// Unpacked and served.
    #[default]
    Available,
    /// Not served.
    Unavailable,
}

/// The kinds of source (catalogd knows only images).
#[derive(Deserialize, Serialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum SourceType {
    /// An OCI image holding a file-based catalog.
    #[default]
    Image,
}

/// The catalog's source.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct CatalogSource {
    /// `Image`.
    #[serde(rename = "type")]
    pub type_: SourceType,
    /// The image (required for `type: Image`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<ImageSource>,
}

/// A catalog image.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{
    "rule": "!self.ref.contains('@') || !has(self.pollIntervalMinutes)",
    "message": "pollIntervalMinutes is for tag references: an image named by digest never changes"
}]))]
pub struct ImageSource {
    /// The image reference (`host[:port]/repository:tag` or `…@sha256:…`).
    #[serde(rename = "ref")]
    #[schemars(length(min = 1, max = 1000))]
    pub ref_: String,
    /// Pull a tag reference again this often, to follow the tag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub poll_interval_minutes: Option<u32>,
}

/// What the controller observed.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterCatalogStatus {
    /// `Serving` and `Progressing`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// The source the served content came from, pinned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved_source: Option<ResolvedCatalogSource>,
    /// Where the content is served.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub urls: Option<ClusterCatalogUrls>,
    /// When the served content was unpacked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_unpacked: Option<Time>,
}

/// The source the served content came from.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct ResolvedCatalogSource {
    /// `Image`.
    #[serde(rename = "type")]
    pub type_: SourceType,
    /// The image, by digest.
    pub image: ResolvedImageSource,
}

/// An image, by digest.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct ResolvedImageSource {
    /// `registry/repository@sha256:…`.
    #[serde(rename = "ref")]
    pub ref_: String,
}

/// Where the content is served.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct ClusterCatalogUrls {
    /// Below it: `/api/v1/all` and `/api/v1/metas?schema=&package=&name=`.
    pub base: String,
}

/// An operator installed from the served catalogs (OLM v1's operator-controller), with
/// operator-controller's field names.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "olm.operatorframework.io",
    version = "v1",
    kind = "ClusterExtension",
    status = "ClusterExtensionStatus",
    printcolumn = r#"{"name": "Installed Bundle", "type": "string", "jsonPath": ".status.install.bundle.name"}"#,
    printcolumn = r#"{"name": "Version", "type": "string", "jsonPath": ".status.install.bundle.version"}"#,
    printcolumn = r#"{"name": "Revision", "type": "integer", "jsonPath": ".status.install.revision"}"#,
    printcolumn = r#"{"name": "Installed", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Installed\")].status"}"#,
    printcolumn = r#"{"name": "Progressing", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Progressing\")].status"}"#,
    printcolumn = r#"{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct ClusterExtensionSpec {
    /// The namespace the operator's namespaced objects go to (it must exist).
    #[schemars(length(min = 1, max = 63))]
    pub namespace: String,
    /// The service account the installation is made for.
    pub service_account: ServiceAccountReference,
    /// Where the bundle comes from.
    pub source: ExtensionSource,
    /// How to install.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub install: Option<ExtensionInstallConfig>,
    /// The bundle's configuration (for registry+v1: `watchNamespace`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<ClusterExtensionConfig>,
}

/// The bundle's configuration, inline (operator-controller's union).
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{
    "rule": "has(self.configType) && self.configType == 'Inline' ? has(self.inline) : !has(self.inline)",
    "message": "inline is required when configType is Inline, and forbidden otherwise"
}]))]
pub struct ClusterExtensionConfig {
    /// `Inline`.
    pub config_type: ConfigType,
    /// The values, checked against what the bundle accepts when it is rendered (registry+v1:
    /// `watchNamespace`, the namespace the operator watches; all of them when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "inline_schema")]
    pub inline: Option<serde_json::Map<String, serde_json::Value>>,
}

/// Where the configuration is.
#[derive(Deserialize, Serialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum ConfigType {
    /// In `inline`.
    #[default]
    Inline,
}

/// Any object with at least one property, kept whole.
fn inline_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "object",
        "minProperties": 1,
        "x-kubernetes-preserve-unknown-fields": true,
    })
}

/// A service account in the extension's namespace.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct ServiceAccountReference {
    /// Its name.
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
}

/// The kinds of extension source (only catalogs).
#[derive(Deserialize, Serialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum ExtensionSourceType {
    /// A package of the served catalogs.
    #[default]
    Catalog,
}

/// The extension's source.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{
    "rule": "self.sourceType != 'Catalog' || has(self.catalog)",
    "message": "catalog is required when sourceType is Catalog"
}]))]
pub struct ExtensionSource {
    /// `Catalog`.
    pub source_type: ExtensionSourceType,
    /// The package and which of its bundles (required for `sourceType: Catalog`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catalog: Option<CatalogFilter>,
}

/// Which bundle of which package.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CatalogFilter {
    /// The package.
    #[schemars(length(min = 1, max = 253))]
    pub package_name: String,
    /// A version range (Masterminds syntax: `1.2.3`, `>=1.0, <2`, `~1.2`, `1.x`); any when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 64))]
    pub version: Option<String>,
    /// The channels to take bundles from; all when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub channels: Vec<String>,
    /// Which catalogs to take bundles from, by label; all when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector>,
    /// Which upgrades are allowed.
    #[serde(default)]
    pub upgrade_constraint_policy: UpgradeConstraintPolicy,
}

/// Which upgrades are allowed from the installed bundle.
#[derive(Deserialize, Serialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum UpgradeConstraintPolicy {
    /// Only the successors the catalog's upgrade graph names.
    #[default]
    CatalogProvided,
    /// Any version in the range.
    SelfCertified,
}

/// How to install.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct ExtensionInstallConfig {
    /// Checks before installing or upgrading.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preflight: Option<PreflightConfig>,
    /// Whether an upgrade waits for `opkit operator approve` (an opkit field, for this
    /// extension only; OLM v1 has none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<Approval>,
}

/// Whether an upgrade of an installed extension waits for approval.
#[derive(Deserialize, Serialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum Approval {
    /// Upgrades proceed as soon as they resolve.
    #[default]
    Automatic,
    /// An upgrade waits until the extension's [`APPROVED_BUNDLE_ANNOTATION`] names the
    /// pending bundle; the first install does not wait.
    Manual,
}

/// The annotation approving one pending bundle, by name (`opkit operator approve` sets it).
pub const APPROVED_BUNDLE_ANNOTATION: &str = "opkit.dev/approved-bundle";

/// The annotation asking the uninstall to remove the extension's CRDs, and so every custom
/// resource of them, too (`opkit operator uninstall --purge` sets it).
pub const PURGE_ANNOTATION: &str = "opkit.dev/purge";

/// The finalizer under which a deleted extension's objects are removed (its CRDs released,
/// or deleted under [`PURGE_ANNOTATION`]).
pub const UNINSTALL_FINALIZER: &str = "opkit.dev/uninstall";

/// Checks before installing or upgrading.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PreflightConfig {
    /// The CRD upgrade-safety check.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crd_upgrade_safety: Option<CrdUpgradeSafety>,
}

/// The CRD upgrade-safety check.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct CrdUpgradeSafety {
    /// `Strict` (default) or `None`.
    pub enforcement: CrdUpgradeSafetyEnforcement,
}

/// Whether an unsafe CRD upgrade is refused.
#[derive(Deserialize, Serialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum CrdUpgradeSafetyEnforcement {
    /// Refused.
    #[default]
    Strict,
    /// Not checked.
    None,
}

/// What the controller observed.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterExtensionStatus {
    /// `Installed` and `Progressing`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// What is installed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub install: Option<ClusterExtensionInstallStatus>,
    /// The upgrade waiting for approval (`spec.install.approval: Manual`; an opkit field).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_upgrade: Option<PendingUpgrade>,
}

/// What is installed.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct ClusterExtensionInstallStatus {
    /// The bundle.
    pub bundle: BundleMetadata,
    /// The number of the kept revision it was installed as (an opkit field; see
    /// [`crate::revision`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<u32>,
}

/// An upgrade waiting for approval and what it would change, each object as `Kind name` or
/// `Kind namespace/name`.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct PendingUpgrade {
    /// The bundle it would install.
    pub bundle: BundleMetadata,
    /// Objects the new bundle adds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub added: Vec<String>,
    /// Objects the installed bundle has and the new one does not (they would be deleted).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub removed: Vec<String>,
    /// Objects both have, rendered differently.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changed: Vec<String>,
}

/// A bundle's name and version.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct BundleMetadata {
    /// The bundle's name.
    pub name: String,
    /// Its version.
    pub version: String,
}

/// The `ClusterExtension` CRD.
pub fn extension_crd()
-> k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition {
    <ClusterExtension as kube::CustomResourceExt>::crd()
}

pub use opkit::apply::CrdError;

/// The `ClusterCatalog` CRD.
pub fn crd()
-> k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition {
    <ClusterCatalog as kube::CustomResourceExt>::crd()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_crd_is_cluster_scoped_with_a_status_subresource_and_catalogds_fields() {
        let crd = serde_json::to_value(crd()).unwrap();
        assert_eq!(
            crd["metadata"]["name"],
            "clustercatalogs.olm.operatorframework.io"
        );
        assert_eq!(crd["spec"]["scope"], "Cluster");
        let version = &crd["spec"]["versions"][0];
        assert_eq!(version["name"], "v1");
        assert!(version["subresources"]["status"].is_object());
        let spec = &version["schema"]["openAPIV3Schema"]["properties"]["spec"];
        assert_eq!(
            spec["properties"]["availabilityMode"]["enum"],
            serde_json::json!(["Available", "Unavailable"])
        );
        let image = &spec["properties"]["source"]["properties"]["image"];
        assert!(image["properties"]["ref"].is_object(), "{image}");
        assert!(
            image["properties"]["pollIntervalMinutes"].is_object(),
            "{image}"
        );
        assert!(image["x-kubernetes-validations"].is_array(), "{image}");
    }

    #[test]
    fn an_operator_controller_manifest_reads_with_its_defaults() {
        let ce: ClusterExtension = serde_json::from_value(serde_json::json!({
            "apiVersion": "olm.operatorframework.io/v1",
            "kind": "ClusterExtension",
            "metadata": {"name": "argocd"},
            "spec": {"namespace": "argocd", "serviceAccount": {"name": "installer"},
                "source": {"sourceType": "Catalog", "catalog": {
                    "packageName": "argocd-operator", "version": "0.6.0"}}}
        }))
        .unwrap();
        let catalog = ce.spec.source.catalog.unwrap();
        assert_eq!(
            catalog.upgrade_constraint_policy,
            UpgradeConstraintPolicy::CatalogProvided
        );
        assert_eq!(catalog.version.as_deref(), Some("0.6.0"));
        let crd = serde_json::to_value(extension_crd()).unwrap();
        assert_eq!(crd["spec"]["scope"], "Cluster");
        let spec = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
        assert_eq!(
            spec["properties"]["source"]["properties"]["catalog"]["properties"]["upgradeConstraintPolicy"]
                ["enum"],
            serde_json::json!(["CatalogProvided", "SelfCertified"])
        );
    }

    #[test]
    fn an_inline_config_reads_whole_and_the_crd_keeps_it_open_with_operator_controllers_rule() {
        let ce: ClusterExtension = serde_json::from_value(serde_json::json!({
            "apiVersion": "olm.operatorframework.io/v1",
            "kind": "ClusterExtension",
            "metadata": {"name": "demo"},
            "spec": {"namespace": "ops", "serviceAccount": {"name": "installer"},
                "source": {"sourceType": "Catalog", "catalog": {"packageName": "demo"}},
                "config": {"configType": "Inline", "inline": {"watchNamespace": "team-a"}}}
        }))
        .unwrap();
        let config = ce.spec.config.unwrap();
        assert_eq!(config.config_type, ConfigType::Inline);
        assert_eq!(
            config.inline.unwrap()["watchNamespace"],
            serde_json::json!("team-a")
        );
        let crd = serde_json::to_value(extension_crd()).unwrap();
        let config = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
            ["properties"]["config"];
        assert_eq!(
            config["properties"]["configType"]["enum"],
            serde_json::json!(["Inline"])
        );
        let inline = &config["properties"]["inline"];
        assert_eq!(inline["type"], "object");
        assert_eq!(inline["minProperties"], 1);
        assert_eq!(inline["x-kubernetes-preserve-unknown-fields"], true);
        assert_eq!(
            config["x-kubernetes-validations"][0]["message"],
            "inline is required when configType is Inline, and forbidden otherwise"
        );
    }

    #[test]
    fn a_catalogd_manifest_reads_with_its_defaults() {
        let cc: ClusterCatalog = serde_json::from_value(serde_json::json!({
            "apiVersion": "olm.operatorframework.io/v1",
            "kind": "ClusterCatalog",
            "metadata": {"name": "operatorhubio"},
            "spec": {"source": {"type": "Image", "image": {
                "ref": "quay.io/operatorhubio/catalog:latest", "pollIntervalMinutes": 10}}}
        }))
        .unwrap();
        assert_eq!(cc.spec.availability_mode, AvailabilityMode::Available);
        assert_eq!(cc.spec.priority, 0);
        let image = cc.spec.source.image.unwrap();
        assert_eq!(image.poll_interval_minutes, Some(10));
    }
}
