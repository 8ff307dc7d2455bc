//! The typed ClusterServiceVersion (`operators.coreos.com/v1alpha1`): the parts of a CSV that
//! validation, rendering and installing read. Everything is optional on input (defaults when
//! absent), so a sparse CSV still loads and validation can say what is missing; fields the
//! model does not name stay in the raw object that the bundle keeps beside it.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

/// A ClusterServiceVersion.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Csv {
    /// `apiVersion`.
    pub api_version: String,
    /// `kind`.
    pub kind: String,
    /// `metadata`.
    pub metadata: CsvMetadata,
    /// `spec`.
    pub spec: CsvSpec,
}

/// The CSV's `metadata` (name, annotations, labels).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct CsvMetadata {
    /// The CSV's name, `<package>.v<version>` by convention.
    pub name: String,
    /// Annotations (`alm-examples`, `olm.skipRange`, `capabilities`, `categories`, ...).
    pub annotations: BTreeMap<String, String>,
    /// Labels.
    pub labels: BTreeMap<String, String>,
}

/// The CSV's `spec`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct CsvSpec {
    /// The human name of the operator.
    pub display_name: String,
    /// A long description (Markdown).
    pub description: String,
    /// The bundle's version (semver).
    pub version: String,
    /// The bundle this one replaces in its channel.
    pub replaces: String,
    /// Bundles this one may skip over.
    pub skips: Vec<String>,
    /// The oldest Kubernetes version the operator runs on.
    pub min_kube_version: String,
    /// `alpha`, `beta`, `stable`, ...
    pub maturity: String,
    /// Search keywords.
    pub keywords: Vec<String>,
    /// The maintainers.
    pub maintainers: Vec<Maintainer>,
    /// Links (documentation, source).
    pub links: Vec<AppLink>,
    /// Who provides the operator.
    pub provider: AppLink,
    /// The icon(s); OperatorHub wants exactly one.
    pub icon: Vec<Icon>,
    /// The install modes the operator supports.
    pub install_modes: Vec<InstallMode>,
    /// How to install the operator: deployments and permissions.
    pub install: InstallStrategy,
    /// Owned and required CRDs.
    #[serde(rename = "customresourcedefinitions")]
    pub custom_resource_definitions: CrdDefinitions,
    /// Owned and required aggregated APIs.
    #[serde(rename = "apiservicedefinitions")]
    pub api_service_definitions: ApiServiceDefinitions,
    /// The admission and conversion webhooks the operator serves.
    #[serde(rename = "webhookdefinitions")]
    pub webhook_definitions: Vec<WebhookDefinition>,
    /// The images the operator uses (for mirroring).
    pub related_images: Vec<RelatedImage>,
    /// Built-in APIs the operator needs.
    #[serde(rename = "nativeAPIs")]
    pub native_apis: Vec<Value>,
}

/// A maintainer.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct Maintainer {
    /// Name.
    pub name: String,
    /// E-mail address.
    pub email: String,
}

/// A named link (also the provider).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct AppLink {
    /// Name.
    pub name: String,
    /// URL.
    pub url: String,
}

/// An icon.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct Icon {
    /// The image, base64-encoded.
    pub base64data: String,
    /// Its media type (`image/svg+xml`, `image/png`, ...).
    pub mediatype: String,
}

/// One install mode and whether it is supported.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct InstallMode {
    /// `OwnNamespace`, `SingleNamespace`, `MultiNamespace` or `AllNamespaces`.
    #[serde(rename = "type")]
    pub type_: String,
    /// Whether the operator supports it.
    pub supported: bool,
}

/// The install modes OLM knows.
pub const INSTALL_MODES: [&str; 4] = [
    "OwnNamespace",
    "SingleNamespace",
    "MultiNamespace",
    "AllNamespaces",
];

/// `spec.install`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct InstallStrategy {
    /// The strategy's name; `deployment` is the only one.
    pub strategy: String,
    /// Its details.
    pub spec: StrategyDetails,
}

/// The deployment strategy's details.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct StrategyDetails {
    /// The operator's deployments.
    pub deployments: Vec<StrategyDeployment>,
    /// Namespaced RBAC rules per service account.
    pub permissions: Vec<Permission>,
    /// Cluster-wide RBAC rules per service account.
    pub cluster_permissions: Vec<Permission>,
}

/// One deployment of the install strategy.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct StrategyDeployment {
    /// The deployment's name.
    pub name: String,
    /// Its labels.
    pub label: BTreeMap<String, String>,
    /// The `apps/v1` DeploymentSpec, as written.
    pub spec: Value,
}

impl StrategyDeployment {
    /// The images of the pod template's containers and init containers.
    pub fn images(&self) -> Vec<String> {
        let pod = &self.spec["template"]["spec"];
        ["containers", "initContainers"]
            .iter()
            .filter_map(|k| pod[k].as_array())
            .flatten()
            .filter_map(|c| c["image"].as_str().map(String::from))
            .collect()
    }

    /// The pod template's service account (empty: `default`).
    pub fn service_account(&self) -> &str {
        self.spec["template"]["spec"]["serviceAccountName"]
            .as_str()
            .unwrap_or_default()
    }
}

/// RBAC rules for a service account.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Permission {
    /// The service account.
    pub service_account_name: String,
    /// `rbac.authorization.k8s.io/v1` PolicyRules, as written.
    pub rules: Vec<Value>,
}

/// `spec.customresourcedefinitions`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct CrdDefinitions {
    /// CRDs this operator owns (they ship in the bundle).
    pub owned: Vec<CrdDescription>,
    /// CRDs another operator must provide.
    pub required: Vec<CrdDescription>,
}

/// One owned or required CRD.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct CrdDescription {
    /// `<plural>.<group>`.
    pub name: String,
    /// The version.
    pub version: String,
    /// The kind.
    pub kind: String,
    /// Human name.
    pub display_name: String,
    /// Description.
    pub description: String,
}

impl CrdDescription {
    /// The group: `name` after its first dot (empty when `name` has none).
    pub fn group(&self) -> &str {
        self.name
            .split_once('.')
            .map(|(_, g)| g)
            .unwrap_or_default()
    }
}

/// `spec.apiservicedefinitions`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct ApiServiceDefinitions {
    /// Aggregated APIs this operator serves.
    pub owned: Vec<ApiServiceDescription>,
    /// Aggregated APIs it needs.
    pub required: Vec<ApiServiceDescription>,
}

/// One aggregated API.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct ApiServiceDescription {
    /// The plural name.
    pub name: String,
    /// The group.
    pub group: String,
    /// The version.
    pub version: String,
    /// The kind.
    pub kind: String,
}

/// One webhook of `spec.webhookdefinitions`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct WebhookDefinition {
    /// The webhook's name prefix.
    pub generate_name: String,
    /// `ValidatingAdmissionWebhook`, `MutatingAdmissionWebhook` or `ConversionWebhook`.
    #[serde(rename = "type")]
    pub type_: String,
    /// The install-strategy deployment that serves it.
    pub deployment_name: String,
    /// The container port it listens on.
    pub container_port: Option<i64>,
    /// `None` or `NoneOnDryRun` (required for admission webhooks).
    pub side_effects: Option<String>,
    /// AdmissionReview versions the webhook understands.
    pub admission_review_versions: Vec<String>,
    /// The path it serves.
    pub webhook_path: Option<String>,
    /// For conversion webhooks: the owned CRDs it converts.
    #[serde(rename = "conversionCRDs")]
    pub conversion_crds: Vec<String>,
    /// The Service's target port (the container port when absent).
    pub target_port: Option<Value>,
    /// Admission rules (operations, API groups, versions, resources, scope).
    pub rules: Vec<Value>,
    /// `Fail` or `Ignore`.
    pub failure_policy: Option<String>,
    /// `Exact` or `Equivalent`.
    pub match_policy: Option<String>,
    /// Which objects the webhook sees, by label.
    pub object_selector: Option<Value>,
    /// The call's timeout.
    pub timeout_seconds: Option<i64>,
    /// For mutating webhooks: `Never` or `IfNeeded`.
    pub reinvocation_policy: Option<String>,
}

/// The webhook types OLM knows.
pub const WEBHOOK_TYPES: [&str; 3] = [
    "ValidatingAdmissionWebhook",
    "MutatingAdmissionWebhook",
    "ConversionWebhook",
];

/// One related image.
#[derive(Clone, Debug, Default, Deserialize, serde::Serialize, PartialEq, Eq)]
#[serde(default)]
pub struct RelatedImage {
    /// A name for it (may be empty).
    pub name: String,
    /// The image reference.
    pub image: String,
}

impl Csv {
    /// The `olm.skipRange` annotation, when present.
    pub fn skip_range(&self) -> Option<&str> {
        self.metadata
            .annotations
            .get("olm.skipRange")
            .map(String::as_str)
    }
}
