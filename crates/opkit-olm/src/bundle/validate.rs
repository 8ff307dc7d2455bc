//! `operator-sdk bundle validate`: the format checks (annotations present and consistent with
//! the directory), the content checks of operator-framework/api's default validators (CSV,
//! bundle, CRD and object rules) and, when selected, the `operatorframework` suite's
//! OperatorHub checks. Each finding names the file and the field.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde_json::Value;

use super::csv::{INSTALL_MODES, WEBHOOK_TYPES};
use super::{Bundle, REGISTRY_V1, annotations};
use crate::names;

/// How bad a finding is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// The bundle is invalid.
    Error,
    /// The bundle works but should change.
    Warning,
}

/// One thing validation found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// Error or warning.
    pub severity: Severity,
    /// The file, relative to the bundle directory.
    pub file: String,
    /// The field (a JSON path such as `spec.installModes`), or empty for the whole file.
    pub field: String,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let level = match self.severity {
            Severity::Error => "ERROR",
            Severity::Warning => "WARN",
        };
        if self.field.is_empty() {
            write!(f, "{level}: {}: {}", self.file, self.message)
        } else {
            write!(
                f,
                "{level}: {}: {}: {}",
                self.file, self.field, self.message
            )
        }
    }
}

/// An optional validator suite (`--select-optional suite=...`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Suite {
    /// `suite=operatorframework`: the OperatorHub checks.
    OperatorFramework,
}

/// A `--select-optional` selector that names no suite opkit has.
#[derive(Debug, thiserror::Error)]
#[error("unknown optional validator selector {0:?} (opkit has suite=operatorframework)")]
pub struct UnknownSuite(pub String);

impl std::str::FromStr for Suite {
    type Err = UnknownSuite;
    fn from_str(s: &str) -> Result<Suite, UnknownSuite> {
        match s.trim() {
            "suite=operatorframework" | "name=operatorhub" => Ok(Suite::OperatorFramework),
            other => Err(UnknownSuite(other.to_string())),
        }
    }
}

/// What validation found, errors first.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// The findings.
    pub findings: Vec<Finding>,
}

impl Report {
    /// The errors.
    pub fn errors(&self) -> impl Iterator<Item = &Finding> {
        self.findings
            .iter()
            .filter(|f| f.severity == Severity::Error)
    }

    /// The warnings.
    pub fn warnings(&self) -> impl Iterator<Item = &Finding> {
        self.findings
            .iter()
            .filter(|f| f.severity == Severity::Warning)
    }

    /// Whether there is no error.
    pub fn is_valid(&self) -> bool {
        self.errors().next().is_none()
    }
}

/// The kinds a registry+v1 bundle may hold besides the CSV and CRDs (operator-registry's
/// supported list).
pub const SUPPORTED_KINDS: [&str; 16] = [
    "ClusterServiceVersion",
    "CustomResourceDefinition",
    "Secret",
    "ClusterRole",
    "ClusterRoleBinding",
    "ConfigMap",
    "ServiceAccount",
    "Service",
    "Role",
    "RoleBinding",
    "PrometheusRule",
    "ServiceMonitor",
    "PodDisruptionBudget",
    "PriorityClass",
    "VerticalPodAutoscaler",
    "ConsoleYAMLSample",
];

/// Other console kinds OLM also installs.
const CONSOLE_KINDS: [&str; 5] = [
    "ConsoleQuickStart",
    "ConsoleCLIDownload",
    "ConsoleLink",
    "ConsolePlugin",
    "NetworkPolicy",
];

const CAPABILITIES: [&str; 5] = [
    "Basic Install",
    "Seamless Upgrades",
    "Full Lifecycle",
    "Deep Insights",
    "Auto Pilot",
];

const CATEGORIES: [&str; 16] = [
    "AI/Machine Learning",
    "Application Runtime",
    "Big Data",
    "Cloud Provider",
    "Developer Tools",
    "Database",
    "Integration & Delivery",
    "Logging & Tracing",
    "Modernization & Migration",
    "Monitoring",
    "Networking",
    "OpenShift Optional",
    "Security",
    "Storage",
    "Streaming & Messaging",
    "Drivers and plugins",
];

const ICON_TYPES: [&str; 4] = ["image/gif", "image/jpeg", "image/png", "image/svg+xml"];

struct Findings<'a> {
    bundle: &'a Bundle,
    out: Vec<Finding>,
}

impl Findings<'_> {
    fn add(&mut self, severity: Severity, file: &str, field: &str, message: impl Into<String>) {
        self.out.push(Finding {
            severity,
            file: file.to_string(),
            field: field.to_string(),
            message: message.into(),
        });
    }
    fn csv(&mut self, severity: Severity, field: &str, message: impl Into<String>) {
        let file = self.bundle.manifests[self.bundle.csv_index].file.clone();
        self.add(severity, &file, field, message);
    }
    fn annotations(&mut self, field: &str, message: impl Into<String>) {
        let file = self.bundle.annotations_file.clone();
        self.add(Severity::Error, &file, field, message);
    }
}

/// Validates `bundle` as `operator-sdk bundle validate` does, with the optional `suites`.
pub fn validate_bundle(bundle: &Bundle, suites: &[Suite]) -> Report {
    let mut f = Findings {
        bundle,
        out: Vec::new(),
    };
    format_checks(&mut f);
    csv_checks(&mut f);
    crd_checks(&mut f);
    bundle_checks(&mut f);
    object_checks(&mut f);
    webhook_checks(&mut f);
    if suites.contains(&Suite::OperatorFramework) {
        operatorhub_checks(&mut f);
    }
    let mut findings = f.out;
    findings.sort_by_key(|f| f.severity);
    Report { findings }
}

fn format_checks(f: &mut Findings<'_>) {
    let b = f.bundle;
    let ann = &b.annotations;
    for key in [
        annotations::MEDIATYPE,
        annotations::MANIFESTS,
        annotations::METADATA,
        annotations::PACKAGE,
        annotations::CHANNELS,
    ] {
        if !ann.contains_key(key) {
            f.annotations(&format!("annotations.{key}"), "missing annotation");
        }
    }
    let expect = [
        (annotations::MEDIATYPE, REGISTRY_V1),
        (annotations::MANIFESTS, "manifests/"),
        (annotations::METADATA, "metadata/"),
    ];
    for (key, want) in expect {
        if let Some(got) = ann.get(key)
            && got != want
        {
            f.annotations(
                &format!("annotations.{key}"),
                format!("expecting {want:?} instead of {got:?}"),
            );
        }
    }
    if ann.get(annotations::PACKAGE).is_some_and(|p| p.is_empty()) {
        f.annotations(
            &format!("annotations.{}", annotations::PACKAGE),
            "the package must not be empty",
        );
    }
    let channels = b.channels();
    if ann.contains_key(annotations::CHANNELS) && channels.is_empty() {
        f.annotations(
            &format!("annotations.{}", annotations::CHANNELS),
            "expecting a non-empty value",
        );
    }
    if let Some(default) = ann.get(annotations::CHANNEL_DEFAULT) {
        let field = format!("annotations.{}", annotations::CHANNEL_DEFAULT);
        if default.is_empty() {
            f.annotations(&field, "expecting a non-empty value");
        } else if !channels.contains(&default.as_str()) {
            // operator-registry does not check this (etcd 0.6.1 ships so): the default
            // channel is the package's, which another bundle may define.
            let file = b.annotations_file.clone();
            f.add(
                Severity::Warning,
                &file,
                &field,
                format!(
                    "default channel {default:?} is not one of the bundle's channels ({})",
                    channels.join(", ")
                ),
            );
        }
    }
    for m in &b.manifests {
        let kind = m.kind();
        if kind.is_empty() || m.api_version().is_empty() {
            f.add(
                Severity::Error,
                &m.file,
                "",
                "object has no apiVersion or kind",
            );
        } else if !SUPPORTED_KINDS.contains(&kind) && !CONSOLE_KINDS.contains(&kind) {
            f.add(
                Severity::Error,
                &m.file,
                "kind",
                format!("{kind} is not a kind a registry+v1 bundle may hold"),
            );
        }
    }
    for (i, dep) in b.dependencies.iter().enumerate() {
        let field = format!("dependencies[{i}]");
        let file = "metadata/dependencies.yaml";
        match dep.type_.as_str() {
            crate::property::PACKAGE => {
                let name = dep.value["packageName"].as_str().unwrap_or_default();
                let range = dep.value["version"].as_str().unwrap_or_default();
                if name.is_empty() {
                    f.add(Severity::Error, file, &field, "package name is empty");
                }
                if range.is_empty() {
                    f.add(Severity::Error, file, &field, "package version is empty");
                }
            }
            crate::property::GVK => {
                for k in ["group", "version", "kind"] {
                    if dep.value[k].as_str().unwrap_or_default().is_empty() {
                        f.add(Severity::Error, file, &field, format!("GVK {k} is empty"));
                    }
                }
            }
            crate::property::LABEL | crate::property::CONSTRAINT => {}
            other => f.add(
                Severity::Error,
                file,
                &field,
                format!("unsupported dependency type {other}"),
            ),
        }
    }
}

fn csv_checks(f: &mut Findings<'_>) {
    let csv = &f.bundle.csv;
    let name = csv.metadata.name.clone();
    if let Err(e) = names::csv_name(&name) {
        f.csv(
            Severity::Error,
            "metadata.name",
            format!("{name:?} is invalid: {e}"),
        );
    }
    if !csv.spec.replaces.is_empty()
        && let Err(e) = names::csv_name(&csv.spec.replaces)
    {
        f.csv(
            Severity::Error,
            "spec.replaces",
            format!("{:?} is invalid: {e}", csv.spec.replaces),
        );
    }
    if csv.api_version.is_empty() {
        f.csv(Severity::Error, "apiVersion", "'apiVersion' is missing");
    }
    // checkEmptyFields: the CSV fields Go's types mark required.
    if csv.spec.display_name.is_empty() {
        f.csv(
            Severity::Error,
            "spec.displayName",
            "required field missing",
        );
    }
    if csv.spec.install.strategy.is_empty() {
        f.csv(
            Severity::Error,
            "spec.install.strategy",
            "required field missing",
        );
    } else if csv.spec.install.strategy != "deployment" {
        f.csv(
            Severity::Error,
            "spec.install.strategy",
            format!(
                "unknown install strategy {:?} (OLM knows \"deployment\")",
                csv.spec.install.strategy
            ),
        );
    }
    if csv.spec.install.spec.deployments.is_empty() {
        f.csv(
            Severity::Error,
            "spec.install.spec.deployments",
            "required field missing",
        );
    }
    for (i, d) in csv.spec.install.spec.deployments.iter().enumerate() {
        if d.name.is_empty() {
            f.csv(
                Severity::Error,
                &format!("spec.install.spec.deployments[{i}].name"),
                "required field missing",
            );
        }
        if !d.spec.is_object() {
            f.csv(
                Severity::Error,
                &format!("spec.install.spec.deployments[{i}].spec"),
                "required field missing",
            );
        }
    }
    for (key, perms) in [
        ("permissions", &csv.spec.install.spec.permissions),
        (
            "clusterPermissions",
            &csv.spec.install.spec.cluster_permissions,
        ),
    ] {
        for (i, p) in perms.iter().enumerate() {
            if p.service_account_name.is_empty() {
                f.csv(
                    Severity::Error,
                    &format!("spec.install.spec.{key}[{i}].serviceAccountName"),
                    "required field missing",
                );
            }
        }
    }
    match semver::Version::parse(&csv.spec.version) {
        Ok(_) => {}
        Err(_) if csv.spec.version.is_empty() => {
            f.csv(Severity::Error, "spec.version", "required field missing");
        }
        Err(e) => f.csv(
            Severity::Error,
            "spec.version",
            format!("{:?} is not a semantic version: {e}", csv.spec.version),
        ),
    }
    if let Some(range) = csv.skip_range()
        && let Err(e) = crate::version::SkipRange::parse(range)
    {
        f.csv(
            Severity::Error,
            "metadata.annotations.olm.skipRange",
            format!("{range:?} is not a valid range: {e}"),
        );
    }
    min_kube_version(f);
    install_modes(f);
    examples(f);
}

fn min_kube_version(f: &mut Findings<'_>) {
    let v = f.bundle.csv.spec.min_kube_version.trim().to_string();
    if v.is_empty() {
        f.csv(
            Severity::Warning,
            "spec.minKubeVersion",
            "not informed; it is recommended you provide the oldest Kubernetes version the operator runs on",
        );
    } else if semver::Version::parse(&v).is_err() {
        f.csv(
            Severity::Error,
            "spec.minKubeVersion",
            format!("{v:?} is not a semantic version"),
        );
    }
}

fn install_modes(f: &mut Findings<'_>) {
    let csv = &f.bundle.csv;
    let modes = csv.spec.install_modes.clone();
    if modes.is_empty() {
        f.csv(
            Severity::Error,
            "spec.installModes",
            "install modes not found",
        );
        return;
    }
    let mut seen = BTreeSet::new();
    for (i, m) in modes.iter().enumerate() {
        if !INSTALL_MODES.contains(&m.type_.as_str()) {
            f.csv(
                Severity::Error,
                &format!("spec.installModes[{i}].type"),
                format!("unknown install mode {:?}", m.type_),
            );
        }
        if !seen.insert(m.type_.clone()) {
            f.csv(
                Severity::Error,
                &format!("spec.installModes[{i}]"),
                format!("duplicate install mode {}", m.type_),
            );
        }
    }
    if !modes.iter().any(|m| m.supported) {
        f.csv(
            Severity::Error,
            "spec.installModes",
            "none of the install modes is supported",
        );
    }
    let converts = csv
        .spec
        .webhook_definitions
        .iter()
        .any(|w| !w.conversion_crds.is_empty());
    let only_all = modes
        .iter()
        .all(|m| m.supported == (m.type_ == "AllNamespaces"));
    if converts && !only_all {
        f.csv(
            Severity::Error,
            "spec.installModes",
            "only AllNamespaces may be supported when a webhook has conversionCRDs",
        );
    }
}

fn examples(f: &mut Findings<'_>) {
    let csv = &f.bundle.csv;
    let ann = &csv.metadata.annotations;
    if ann.is_empty() {
        f.csv(
            Severity::Warning,
            "metadata.annotations",
            "annotations not found",
        );
        return;
    }
    let (key, text) = match (ann.get("alm-examples"), ann.get("olm.examples")) {
        (None, None) => {
            f.csv(
                Severity::Warning,
                "metadata.annotations",
                "example annotations not found",
            );
            return;
        }
        (Some(a), Some(_)) => {
            f.csv(
                Severity::Warning,
                "metadata.annotations",
                "both alm-examples and olm.examples are present; checking only alm-examples",
            );
            ("alm-examples", a.clone())
        }
        (Some(a), None) => ("alm-examples", a.clone()),
        (None, Some(o)) => ("olm.examples", o.clone()),
    };
    let field = format!("metadata.annotations.{key}");
    if text.trim().is_empty() {
        return;
    }
    let parsed: Vec<Value> = match serde_json::from_str(&text) {
        Ok(Value::Array(items)) => items,
        Ok(_) => {
            f.csv(
                Severity::Error,
                &field,
                "the examples must be a JSON array of objects",
            );
            return;
        }
        Err(e) => {
            f.csv(Severity::Error, &field, format!("invalid example: {e}"));
            return;
        }
    };
    let mut example_gvks = BTreeSet::new();
    for (i, ex) in parsed.iter().enumerate() {
        let api_version = ex["apiVersion"].as_str().unwrap_or_default();
        let kind = ex["kind"].as_str().unwrap_or_default();
        if api_version.is_empty() || kind.is_empty() {
            f.csv(
                Severity::Error,
                &format!("{field}[{i}]"),
                "example has no apiVersion or kind",
            );
            continue;
        }
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        example_gvks.insert((group.to_string(), version.to_string(), kind.to_string()));
    }
    let mut provided = BTreeSet::new();
    for (i, owned) in csv
        .spec
        .custom_resource_definitions
        .owned
        .iter()
        .enumerate()
    {
        if !owned.name.contains('.') {
            f.csv(
                Severity::Error,
                &format!("spec.customresourcedefinitions.owned[{i}].name"),
                format!("couldn't parse plural.group from CRD name {:?}", owned.name),
            );
            continue;
        }
        provided.insert((
            owned.group().to_string(),
            owned.version.clone(),
            owned.kind.clone(),
        ));
    }
    for api in &csv.spec.api_service_definitions.owned {
        provided.insert((api.group.clone(), api.version.clone(), api.kind.clone()));
    }
    for (g, v, k) in example_gvks.difference(&provided) {
        f.csv(
            Severity::Error,
            &field,
            format!("example {k} ({}) must have a provided API", gv(g, v)),
        );
    }
    for (g, v, k) in provided.difference(&example_gvks) {
        f.csv(
            Severity::Warning,
            &field,
            format!("provided API {k} ({}) should have an example", gv(g, v)),
        );
    }
}

fn gv(group: &str, version: &str) -> String {
    if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    }
}

fn crd_checks(f: &mut Findings<'_>) {
    let crds: Vec<_> = f.bundle.crds().cloned().collect();
    for crd in crds {
        let file = crd.file.as_str();
        let v1 = crd.api_version() == "apiextensions.k8s.io/v1";
        if !v1 {
            f.add(
                Severity::Warning,
                file,
                "apiVersion",
                format!(
                    "{} was removed in Kubernetes 1.22: OLM v1 and opkit install only apiextensions.k8s.io/v1 CRDs",
                    crd.api_version()
                ),
            );
        }
        let spec = &crd.object["spec"];
        let group = spec["group"].as_str().unwrap_or_default();
        let plural = spec["names"]["plural"].as_str().unwrap_or_default();
        for (field, value) in [
            ("spec.group", group),
            ("spec.names.plural", plural),
            (
                "spec.names.kind",
                spec["names"]["kind"].as_str().unwrap_or_default(),
            ),
            ("spec.scope", spec["scope"].as_str().unwrap_or_default()),
        ] {
            if value.is_empty() {
                f.add(Severity::Error, file, field, "required field missing");
            }
        }
        if crd.name() != format!("{plural}.{group}") {
            f.add(
                Severity::Error,
                file,
                "metadata.name",
                format!("must be spec.names.plural+\".\"+spec.group ({plural}.{group})"),
            );
        }
        if super::crd_versions(&crd.object).is_empty() {
            f.add(
                Severity::Error,
                file,
                "spec.versions",
                "must have at least one version",
            );
        }
        let versions = spec["versions"].as_array().cloned().unwrap_or_default();
        let storage = versions
            .iter()
            .filter(|v| v["storage"] == Value::Bool(true))
            .count();
        // v1beta1's single `version` is the storage version.
        if v1 && !versions.is_empty() && storage != 1 {
            f.add(
                Severity::Error,
                file,
                "spec.versions",
                format!("must have exactly one version marked storage, found {storage}"),
            );
        }
    }
}

fn bundle_checks(f: &mut Findings<'_>) {
    let b = f.bundle;
    // Owned CRDs present in the bundle, and bundle CRDs owned by the CSV.
    let mut in_bundle: BTreeMap<(String, String, String), String> = BTreeMap::new();
    let mut dups = Vec::new();
    for crd in b.crds() {
        let spec = &crd.object["spec"];
        let group = spec["group"].as_str().unwrap_or_default().to_string();
        let kind = spec["names"]["kind"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        for version in super::crd_versions(&crd.object) {
            let key = (group.clone(), version, kind.clone());
            if in_bundle.insert(key.clone(), crd.file.clone()).is_some() {
                dups.push((key, crd.file.clone()));
            }
        }
    }
    for ((g, v, k), file) in dups {
        f.add(
            Severity::Error,
            &file,
            "",
            format!("duplicate CRD {k} ({})", gv(&g, &v)),
        );
    }
    let mut owned_gk = BTreeSet::new();
    for (i, owned) in b
        .csv
        .spec
        .custom_resource_definitions
        .owned
        .iter()
        .enumerate()
    {
        let key = (
            owned.group().to_string(),
            owned.version.clone(),
            owned.kind.clone(),
        );
        if in_bundle.contains_key(&key) {
            owned_gk.insert((key.0.clone(), key.2.clone()));
        } else {
            f.csv(
                Severity::Error,
                &format!("spec.customresourcedefinitions.owned[{i}]"),
                format!(
                    "owned CRD {} ({}) not found in the bundle",
                    owned.kind,
                    gv(owned.group(), &owned.version)
                ),
            );
        }
    }
    for ((g, v, k), file) in &in_bundle {
        if !owned_gk.contains(&(g.clone(), k.clone())) {
            f.add(
                Severity::Error,
                file,
                "",
                format!(
                    "CRD {k} ({}) is present in the bundle but not owned by the CSV",
                    gv(g, v)
                ),
            );
        }
    }
    // A ServiceAccount manifest may not shadow one the CSV's deployments run as.
    let deployment_sas: BTreeSet<&str> = b
        .csv
        .spec
        .install
        .spec
        .deployments
        .iter()
        .map(|d| d.service_account())
        .collect();
    for m in b.manifests.iter().filter(|m| m.kind() == "ServiceAccount") {
        if deployment_sas.contains(m.name()) {
            f.add(
                Severity::Error,
                &m.file,
                "metadata.name",
                format!(
                    "service account {} is also the service account of a deployment in the CSV; remove the manifest or rename one of them",
                    m.name()
                ),
            );
        }
    }
    for (i, ri) in b.csv.spec.related_images.iter().enumerate() {
        let field = format!("spec.relatedImages[{i}].image");
        if ri.image.is_empty() {
            f.csv(Severity::Error, &field, "empty image");
        } else if let Err(e) = names::image_reference(&ri.image) {
            f.csv(
                Severity::Error,
                &field,
                format!("invalid image pull spec {:?}: {e}", ri.image),
            );
        }
    }
}

fn object_checks(f: &mut Findings<'_>) {
    let manifests = f.bundle.manifests.clone();
    for m in &manifests {
        match m.kind() {
            "PodDisruptionBudget" => {
                let spec = &m.object["spec"];
                if spec["maxUnavailable"] == 0 || spec["maxUnavailable"] == "0%" {
                    f.add(
                        Severity::Error,
                        &m.file,
                        "spec.maxUnavailable",
                        "maxUnavailable 0 blocks every voluntary eviction (node drains)",
                    );
                }
                if spec["minAvailable"] == "100%" {
                    f.add(
                        Severity::Error,
                        &m.file,
                        "spec.minAvailable",
                        "minAvailable 100% blocks every voluntary eviction (node drains)",
                    );
                }
            }
            "PriorityClass" if m.object["globalDefault"] == true => {
                f.add(
                    Severity::Error,
                    &m.file,
                    "globalDefault",
                    "a bundle's PriorityClass may not be the cluster's global default",
                );
            }
            _ => {}
        }
    }
}

fn webhook_checks(f: &mut Findings<'_>) {
    let csv = f.bundle.csv.clone();
    let deployments: BTreeSet<&str> = csv
        .spec
        .install
        .spec
        .deployments
        .iter()
        .map(|d| d.name.as_str())
        .collect();
    let owned: BTreeSet<&str> = csv
        .spec
        .custom_resource_definitions
        .owned
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    let mut names_seen = BTreeSet::new();
    for (i, w) in csv.spec.webhook_definitions.iter().enumerate() {
        let at = |k: &str| format!("spec.webhookdefinitions[{i}].{k}");
        if w.generate_name.is_empty() {
            f.csv(
                Severity::Error,
                &at("generateName"),
                "required field missing",
            );
        } else if let Err(e) = names::dns1123_subdomain(&w.generate_name) {
            f.csv(
                Severity::Error,
                &at("generateName"),
                format!("{:?} is invalid: {e}", w.generate_name),
            );
        } else if !names_seen.insert(w.generate_name.clone()) {
            f.csv(
                Severity::Error,
                &at("generateName"),
                format!("duplicate webhook {:?}", w.generate_name),
            );
        }
        if !WEBHOOK_TYPES.contains(&w.type_.as_str()) {
            f.csv(
                Severity::Error,
                &at("type"),
                format!("{:?} is not one of {}", w.type_, WEBHOOK_TYPES.join(", ")),
            );
        }
        if !deployments.contains(w.deployment_name.as_str()) {
            f.csv(
                Severity::Error,
                &at("deploymentName"),
                format!(
                    "{:?} is not a deployment of the install strategy",
                    w.deployment_name
                ),
            );
        }
        if let Some(port) = w.container_port
            && !(1..=65535).contains(&port)
        {
            f.csv(
                Severity::Error,
                &at("containerPort"),
                format!("{port} is not a port (1-65535)"),
            );
        }
        if w.type_ == "ConversionWebhook" {
            if w.conversion_crds.is_empty() {
                f.csv(
                    Severity::Error,
                    &at("conversionCRDs"),
                    "a conversion webhook names the CRDs it converts",
                );
            }
            for crd in &w.conversion_crds {
                if !owned.contains(crd.as_str()) {
                    f.csv(
                        Severity::Error,
                        &at("conversionCRDs"),
                        format!("{crd:?} is not an owned CRD of the CSV"),
                    );
                }
            }
        } else {
            match w.side_effects.as_deref() {
                Some("None" | "NoneOnDryRun") => {}
                Some(other) => f.csv(
                    Severity::Error,
                    &at("sideEffects"),
                    format!("{other:?} is not allowed (None or NoneOnDryRun)"),
                ),
                None => f.csv(
                    Severity::Error,
                    &at("sideEffects"),
                    "required field missing",
                ),
            }
            if w.admission_review_versions.is_empty() {
                f.csv(
                    Severity::Error,
                    &at("admissionReviewVersions"),
                    "required field missing",
                );
            }
        }
    }
}

fn operatorhub_checks(f: &mut Findings<'_>) {
    let csv = f.bundle.csv.clone();
    if csv.spec.provider.name.trim().is_empty() {
        f.csv(Severity::Error, "spec.provider.name", "not specified");
    }
    for (i, m) in csv.spec.maintainers.iter().enumerate() {
        let field = format!("spec.maintainers[{i}]");
        if m.name.is_empty() || m.email.is_empty() {
            f.csv(
                Severity::Error,
                &field,
                "should contain both name and email",
            );
        }
        if !m.email.is_empty() && !names::email(&m.email) {
            f.csv(
                Severity::Error,
                &field,
                format!("email {} is invalid", m.email),
            );
        }
    }
    for (i, l) in csv.spec.links.iter().enumerate() {
        let field = format!("spec.links[{i}]");
        if l.name.is_empty() || l.url.is_empty() {
            f.csv(Severity::Error, &field, "should contain both name and url");
        }
        if !l.url.is_empty() && !names::request_uri(&l.url) {
            f.csv(Severity::Error, &field, format!("url {} is invalid", l.url));
        }
    }
    let ann = &csv.metadata.annotations;
    if let Some(cap) = ann.get("capabilities")
        && !CAPABILITIES.contains(&cap.as_str())
    {
        f.csv(
            Severity::Error,
            "metadata.annotations.capabilities",
            format!(
                "{cap:?} is not a valid capabilities level ({})",
                CAPABILITIES.join(", ")
            ),
        );
    }
    if let Some(cats) = ann.get("categories") {
        for cat in cats.split(',').map(str::trim).filter(|c| !c.is_empty()) {
            if !CATEGORIES.contains(&cat) {
                f.csv(
                    Severity::Error,
                    "metadata.annotations.categories",
                    format!("{cat:?} is not a valid category"),
                );
            }
        }
    }
    match csv.spec.icon.as_slice() {
        [] => f.csv(Severity::Warning, "spec.icon", "not specified"),
        icons => {
            if icons.len() != 1 {
                f.csv(Severity::Error, "spec.icon", "should only have one element");
            }
            let icon = &icons[0];
            if icon.mediatype.is_empty() || icon.base64data.is_empty() {
                f.csv(
                    Severity::Error,
                    "spec.icon[0]",
                    "should contain both base64data and mediatype",
                );
            }
            if !icon.mediatype.is_empty() && !ICON_TYPES.contains(&icon.mediatype.as_str()) {
                f.csv(
                    Severity::Error,
                    "spec.icon[0].mediatype",
                    format!(
                        "{} is not a valid mediatype ({})",
                        icon.mediatype,
                        ICON_TYPES.join(", ")
                    ),
                );
            }
        }
    }
    for ch in f.bundle.channels() {
        let conventional = ["alpha", "beta", "stable", "candidate", "fast"]
            .iter()
            .any(|p| ch.starts_with(p));
        if !conventional {
            let file = f.bundle.annotations_file.clone();
            f.add(
                Severity::Warning,
                &file,
                &format!("annotations.{}", annotations::CHANNELS),
                format!("channel {ch:?} does not follow the channel naming convention (candidate, fast, stable; alpha, beta)"),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bundle::{Manifest, csv::Csv};
    use serde_json::json;

    /// A bundle of a valid CSV (patched by `csv_patch`, a JSON merge) and one owned CRD.
    fn bundle(csv_patch: Value, extra: Vec<Value>) -> Bundle {
        let mut csv = json!({
            "apiVersion": "operators.coreos.com/v1alpha1",
            "kind": "ClusterServiceVersion",
            "metadata": {"name": "demo.v1.0.0", "annotations": {
                "alm-examples": "[{\"apiVersion\":\"demo.example.com/v1\",\"kind\":\"Widget\"}]",
                "capabilities": "Basic Install", "categories": "Database, Storage"}},
            "spec": {
                "displayName": "Demo", "version": "1.0.0", "minKubeVersion": "1.25.0",
                "provider": {"name": "opkit"},
                "icon": [{"base64data": "PHN2Zy8+", "mediatype": "image/svg+xml"}],
                "installModes": [{"type": "AllNamespaces", "supported": true}],
                "customresourcedefinitions": {"owned": [
                    {"name": "widgets.demo.example.com", "version": "v1", "kind": "Widget"}]},
                "install": {"strategy": "deployment", "spec": {"deployments": [
                    {"name": "demo", "spec": {"template": {"spec": {"serviceAccountName": "demo",
                        "containers": [{"name": "m", "image": "example.com/demo:1"}]}}}}]}}
            }
        });
        json_patch::merge(&mut csv, &csv_patch);
        let crd = json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.demo.example.com"},
            "spec": {"group": "demo.example.com", "scope": "Namespaced",
                "names": {"kind": "Widget", "plural": "widgets"},
                "versions": [{"name": "v1", "served": true, "storage": true}]}
        });
        let mut manifests = vec![
            Manifest {
                file: "manifests/csv.yaml".into(),
                object: csv.clone(),
            },
            Manifest {
                file: "manifests/crd.yaml".into(),
                object: crd,
            },
        ];
        manifests.extend(extra.into_iter().map(|object| Manifest {
            file: "manifests/extra.yaml".into(),
            object,
        }));
        let annotations = [
            (annotations::MEDIATYPE, "registry+v1"),
            (annotations::MANIFESTS, "manifests/"),
            (annotations::METADATA, "metadata/"),
            (annotations::PACKAGE, "demo"),
            (annotations::CHANNELS, "stable"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        Bundle {
            dir: "demo".into(),
            annotations,
            annotations_file: "metadata/annotations.yaml".into(),
            csv: serde_json::from_value::<Csv>(csv).unwrap(),
            csv_index: 0,
            manifests,
            dependencies: vec![],
            properties: vec![],
        }
    }

    fn errors(b: &Bundle) -> Vec<String> {
        validate_bundle(b, &[Suite::OperatorFramework])
            .errors()
            .map(|f| f.to_string())
            .collect()
    }

    #[test]
    fn a_complete_bundle_has_no_error() {
        assert_eq!(errors(&bundle(json!({}), vec![])), Vec::<String>::new());
    }

    #[test]
    fn refuses_install_modes_that_support_nothing_or_repeat() {
        let b = bundle(
            json!({"spec": {"installModes": [
            {"type": "OwnNamespace", "supported": false},
            {"type": "OwnNamespace", "supported": false}]}}),
            vec![],
        );
        let errs = errors(&b);
        assert!(errs.contains(&"ERROR: manifests/csv.yaml: spec.installModes[1]: duplicate install mode OwnNamespace".to_string()), "{errs:#?}");
        assert!(errs.contains(&"ERROR: manifests/csv.yaml: spec.installModes: none of the install modes is supported".to_string()), "{errs:#?}");
    }

    #[test]
    fn refuses_examples_of_kinds_the_bundle_does_not_provide() {
        let b = bundle(
            json!({"metadata": {"annotations": {"alm-examples": "[{\"apiVersion\":\"other.io/v1\",\"kind\":\"Thing\"}]"}}}),
            vec![],
        );
        let report = validate_bundle(&b, &[]);
        let all: Vec<String> = report.findings.iter().map(|f| f.to_string()).collect();
        assert!(all.contains(&"ERROR: manifests/csv.yaml: metadata.annotations.alm-examples: example Thing (other.io/v1) must have a provided API".to_string()), "{all:#?}");
        assert!(all.contains(&"WARN: manifests/csv.yaml: metadata.annotations.alm-examples: provided API Widget (demo.example.com/v1) should have an example".to_string()), "{all:#?}");
        let b = bundle(
            json!({"metadata": {"annotations": {"alm-examples": "[{"}}}),
            vec![],
        );
        assert!(
            errors(&b)
                .iter()
                .any(|e| e.contains("alm-examples: invalid example"))
        );
    }

    #[test]
    fn checks_webhook_definitions() {
        let b = bundle(
            json!({"spec": {"webhookdefinitions": [
            {"generateName": "vwidget.demo.example.com", "type": "ValidatingAdmissionWebhook",
             "deploymentName": "nope", "containerPort": 70000, "admissionReviewVersions": ["v1"]},
            {"generateName": "cwidget.demo.example.com", "type": "ConversionWebhook",
             "deploymentName": "demo", "conversionCRDs": ["gadgets.demo.example.com"]}]}}),
            vec![],
        );
        let errs = errors(&b);
        for want in [
            "spec.webhookdefinitions[0].deploymentName: \"nope\" is not a deployment of the install strategy",
            "spec.webhookdefinitions[0].containerPort: 70000 is not a port (1-65535)",
            "spec.webhookdefinitions[0].sideEffects: required field missing",
            "spec.webhookdefinitions[1].conversionCRDs: \"gadgets.demo.example.com\" is not an owned CRD of the CSV",
        ] {
            assert!(errs.iter().any(|e| e.ends_with(want)), "{want}: {errs:#?}");
        }
    }

    #[test]
    fn the_operatorhub_suite_checks_categories_capabilities_and_icons() {
        let b = bundle(
            json!({
                "metadata": {"annotations": {"capabilities": "Magic", "categories": "Database, Toys"}},
                "spec": {"icon": [{"base64data": "x", "mediatype": "image/bmp"}], "provider": {"name": ""},
                         "maintainers": [{"name": "J", "email": "nope"}]}
            }),
            vec![],
        );
        let errs = errors(&b);
        for want in [
            "metadata.annotations.capabilities: \"Magic\" is not a valid capabilities level",
            "metadata.annotations.categories: \"Toys\" is not a valid category",
            "spec.icon[0].mediatype: image/bmp is not a valid mediatype",
            "spec.provider.name: not specified",
            "spec.maintainers[0]: email nope is invalid",
        ] {
            assert!(errs.iter().any(|e| e.contains(want)), "{want}: {errs:#?}");
        }
        // Without the suite, none of these is checked.
        assert!(validate_bundle(&b, &[]).is_valid());
    }

    #[test]
    fn refuses_unsupported_kinds_and_a_shadowing_service_account() {
        let b = bundle(
            json!({}),
            vec![
                json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x"}}),
                json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "demo"}}),
                json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "p"}, "globalDefault": true}),
            ],
        );
        let errs = errors(&b);
        assert!(errs.iter().any(|e| e.contains("kind: Deployment is not a kind a registry+v1 bundle may hold")), "{errs:#?}");
        assert!(
            errs.iter()
                .any(|e| e
                    .contains("service account demo is also the service account of a deployment")),
            "{errs:#?}"
        );
        assert!(
            errs.iter().any(|e| e.contains("globalDefault")),
            "{errs:#?}"
        );
    }

    #[test]
    fn format_checks_name_the_annotation() {
        let mut b = bundle(json!({}), vec![]);
        b.annotations.remove(annotations::CHANNELS);
        b.annotations
            .insert(annotations::MEDIATYPE.into(), "plain+v0".into());
        let errs = errors(&b);
        assert!(errs.contains(&"ERROR: metadata/annotations.yaml: annotations.operators.operatorframework.io.bundle.channels.v1: missing annotation".to_string()), "{errs:#?}");
        assert!(errs.contains(&"ERROR: metadata/annotations.yaml: annotations.operators.operatorframework.io.bundle.mediatype.v1: expecting \"registry+v1\" instead of \"plain+v0\"".to_string()), "{errs:#?}");
    }

    #[test]
    fn refuses_a_skip_range_that_does_not_parse_and_a_bad_version() {
        let b = bundle(
            json!({"metadata": {"annotations": {"olm.skipRange": "not a range"}}, "spec": {"version": "1.0"}}),
            vec![],
        );
        let errs = errors(&b);
        assert!(
            errs.iter().any(|e| e.contains(
                "metadata.annotations.olm.skipRange: \"not a range\" is not a valid range"
            )),
            "{errs:#?}"
        );
        assert!(
            errs.iter()
                .any(|e| e.contains("spec.version: \"1.0\" is not a semantic version")),
            "{errs:#?}"
        );
        let b = bundle(
            json!({"metadata": {"annotations": {"olm.skipRange": ">=0.9.0 <1.0.0"}}}),
            vec![],
        );
        assert_eq!(errors(&b), Vec::<String>::new());
    }

    #[test]
    fn parses_optional_suite_selectors() {
        assert_eq!(
            "suite=operatorframework".parse::<Suite>().unwrap(),
            Suite::OperatorFramework
        );
        assert!("suite=nope".parse::<Suite>().is_err());
    }
}
