//! Helm's in-memory chart model (`helm.sh/helm/v4/pkg/chart/v2`): vocabulary shared by loading,
//! values and rendering.

use std::collections::BTreeMap;

use opkit_template::Value;
use serde::{Deserialize, Serialize};

/// A loaded chart and, recursively, its subcharts.
#[derive(Clone, Debug)]
pub struct Chart {
    /// `Chart.yaml`.
    pub metadata: Metadata,
    /// The files under `templates/`, named by their path in the chart (`templates/x.yaml`),
    /// in path order.
    pub templates: Vec<File>,
    /// `values.yaml` as Helm reads it (numbers are `float64`); an empty map when absent.
    pub values: Value,
    /// `values.schema.json`, when the chart has one.
    pub schema: Option<Vec<u8>>,
    /// Every other file (what `.Files` serves, including `crds/`), in path order.
    pub files: Vec<File>,
    /// The charts under `charts/`, in the order Helm loads them.
    pub dependencies: Vec<Chart>,
    /// `Chart.lock` (or a v1 chart's `requirements.lock`), when the chart has one.
    pub lock: Option<Lock>,
}

/// `Chart.lock` (Helm's `chart.Lock`): the dependencies `helm dependency update` resolved.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Lock {
    /// When the lock was generated (RFC 3339), as written.
    #[serde(default)]
    pub generated: String,
    /// A hash of the dependencies in `Chart.yaml` and their resolved versions.
    #[serde(default)]
    pub digest: String,
    /// The resolved dependencies.
    #[serde(default)]
    pub dependencies: Vec<Dependency>,
}

/// One file of a chart: its path relative to the chart's root (with `/`) and its bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct File {
    /// The path relative to the chart's root, `/`-separated.
    pub name: String,
    /// The contents.
    pub data: Vec<u8>,
}

/// A file's bytes as text, the way Go converts `[]byte` to `string` and prints it: invalid
/// UTF-8 becomes U+FFFD. Valid text (nearly every chart file) is borrowed after a fast check
/// — `String::from_utf8_lossy` alone validates several times slower, and charts carry
/// megabytes of CRDs.
pub(crate) fn text(data: &[u8]) -> std::borrow::Cow<'_, str> {
    match std::str::from_utf8(data) {
        Ok(s) => std::borrow::Cow::Borrowed(s),
        Err(_) => String::from_utf8_lossy(data),
    }
}

/// `Chart.yaml` (Helm's `chart.Metadata`), with Helm's YAML field names.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Metadata {
    /// `v1` (Helm 2 charts) or `v2`.
    #[serde(default)]
    pub api_version: String,
    /// The chart's name.
    #[serde(default)]
    pub name: String,
    /// The chart's SemVer 2 version.
    #[serde(default)]
    pub version: String,
    /// A comma-separated list of value paths that enable the chart (Helm 2's field, unused).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub condition: String,
    /// Tags of the chart (Helm 2's field, unused).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tags: String,
    /// A SemVer range of Kubernetes versions the chart supports.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kube_version: String,
    /// One sentence about the chart.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// `application` (the default) or `library`.
    #[serde(default, rename = "type", skip_serializing_if = "String::is_empty")]
    pub chart_type: String,
    /// Search keywords.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub keywords: Vec<String>,
    /// The project's home page.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub home: String,
    /// Source code URLs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<String>,
    /// Charts this chart depends on (for `apiVersion: v1`, read from `requirements.yaml`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dependencies: Vec<Dependency>,
    /// The maintainers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub maintainers: Vec<Maintainer>,
    /// An icon URL.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub icon: String,
    /// The version of the application the chart deploys.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub app_version: String,
    /// Whether the chart is deprecated.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub deprecated: bool,
    /// Free-form annotations.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

/// A maintainer in `Chart.yaml`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Maintainer {
    /// The maintainer's name.
    #[serde(default)]
    pub name: String,
    /// The maintainer's email.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub email: String,
    /// The maintainer's URL.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub url: String,
}

/// A dependency in `Chart.yaml` (Helm's `chart.Dependency`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct Dependency {
    /// The dependency's chart name.
    #[serde(default)]
    pub name: String,
    /// A SemVer range.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub version: String,
    /// The repository URL or alias.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub repository: String,
    /// A comma-separated list of YAML paths to bools that enable the dependency.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub condition: String,
    /// Tags that enable the dependency as a group.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// Whether the dependency is enabled (computed by dependency processing).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub enabled: bool,
    /// Values to import from the subchart into the parent (strings or `child`/`parent` maps).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub import_values: Vec<serde_json::Value>,
    /// The name the dependency is used under instead of its chart name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub alias: String,
}

impl Chart {
    /// The chart's name (`Chart.yaml`'s `name`).
    pub fn name(&self) -> &str {
        &self.metadata.name
    }

    /// Whether this is a library chart (`type: library`), which renders nothing itself.
    pub fn is_library(&self) -> bool {
        self.metadata.chart_type == "library"
    }
}
