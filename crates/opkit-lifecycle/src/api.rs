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
