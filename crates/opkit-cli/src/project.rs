//! An opkit operator project on disk: its `PROJECT` file and the names it is built from.
//!
//! `PROJECT` (kubebuilder's name and role) records the domain, repository and resources, so
//! `create api` knows the domain and refuses a kind twice, and the other commands find the
//! project root from any directory below it.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};

/// The file that marks a project's root.
pub const PROJECT_FILE: &str = "PROJECT";
/// The layout version written into `PROJECT`.
pub const LAYOUT: &str = "opkit.dev/v1alpha1";

/// The contents of `PROJECT`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Project {
    /// The scaffolding layout (for future migrations).
    pub layout: String,
    /// The operator's name: the Cargo package, binary and prefix of deployed objects.
    pub project_name: String,
    /// The API domain: a group `webapp` becomes `webapp.<domain>`.
    pub domain: String,
    /// The source repository (`github.com/org/name`); helm projects may have none.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub repo: String,
    /// What backs the project's kinds: Rust controllers (the default, not written), Helm
    /// charts (`plugin: helm`) or Ansible roles and playbooks (`plugin: ansible`).
    #[serde(default, skip_serializing_if = "Plugin::is_rust")]
    pub plugin: Plugin,
    /// The API types, in creation order.
    #[serde(default)]
    pub resources: Vec<Resource>,
}

/// What backs a project's kinds (`opkit init --plugins`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Plugin {
    /// A Rust controller per kind (kubebuilder's go plugin, in Rust).
    #[default]
    Rust,
    /// A Helm chart per kind, run by opkit's generic chart operator (operator-sdk's
    /// `helm.sdk.operatorframework.io/v1`).
    Helm,
    /// An Ansible role or playbook per kind, run by opkit's generic Ansible operator
    /// (operator-sdk's `ansible.sdk.operatorframework.io/v1`).
    Ansible,
}

impl Plugin {
    /// The names `--plugins` takes for each plugin (the first is the one opkit writes).
    const NAMES: &[(Plugin, &'static [&'static str])] = &[
        (Plugin::Rust, &["rust", "rust/v1"]),
        (
            Plugin::Helm,
            &["helm", "helm/v1", "helm.sdk.operatorframework.io/v1"],
        ),
        (
            Plugin::Ansible,
            &[
                "ansible",
                "ansible/v1",
                "ansible.sdk.operatorframework.io/v1",
            ],
        ),
    ];

    /// Whether this is the default plugin (left out of `PROJECT`).
    pub fn is_rust(&self) -> bool {
        *self == Plugin::Rust
    }

    /// The plugin's name, as `--plugins` takes it.
    pub fn name(&self) -> &'static str {
        Self::NAMES
            .iter()
            .find(|(p, _)| p == self)
            .map_or("rust", |(_, names)| names[0])
    }

    /// The value parser of `--plugins`: a known plugin name, or an error listing them.
    pub fn parse(value: &str) -> Result<Plugin, String> {
        let wanted = value.trim().to_ascii_lowercase();
        Self::NAMES
            .iter()
            .find(|(_, names)| names.contains(&wanted.as_str()))
            .map(|(p, _)| *p)
            .ok_or_else(|| {
                let known: Vec<String> = Self::NAMES
                    .iter()
                    .map(|(_, names)| names.join(" | "))
                    .collect();
                format!(
                    "unknown plugin {value:?}: opkit knows {} (rust is the default)",
                    known.join(", ")
                )
            })
    }
}

/// One API type of the project.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Resource {
    /// The short group (`webapp`); the full group is `<group>.<domain>`.
    pub group: String,
    /// The full API group.
    pub domain: String,
    /// The version (`v1`, `v1alpha1`).
    pub version: String,
    /// The kind (`Guestbook`).
    pub kind: String,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
    /// The Helm chart behind the kind in a helm project (`helm-charts/<chart>`, relative to the
    /// project root, as `watches.yaml` names it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chart: Option<String>,
    /// The admission and conversion webhooks `opkit create webhook` scaffolded for this version.
    #[serde(default, skip_serializing_if = "Webhooks::is_empty")]
    pub webhooks: Webhooks,
}

/// Which webhooks a version of a kind has (kubebuilder's `webhooks` entry of a resource), so
/// `opkit generate manifests` can write their configurations.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Webhooks {
    /// A defaulting (mutating) webhook: `/mutate-<group>-<version>-<kind>`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub defaulting: bool,
    /// A validating webhook: `/validate-<group>-<version>-<kind>`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub validation: bool,
    /// This version (a spoke) converts to and from the kind's hub through `/convert`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub conversion: bool,
}

impl Webhooks {
    /// No webhook at all.
    pub fn is_empty(&self) -> bool {
        !(self.defaulting || self.validation || self.conversion)
    }
}

impl Resource {
    /// `<group>.<domain>`.
    pub fn full_group(&self) -> String {
        format!("{}.{}", self.group, self.domain)
    }

    /// The Rust module of the kind's hub version (`CronTask` → `cron_task`); other versions
    /// live in [`Project::module_of`].
    pub fn module(&self) -> String {
        snake_case(&self.kind)
    }

    /// `<group>.<domain>/<version>`.
    pub fn api_version(&self) -> String {
        format!("{}/{}", self.full_group(), self.version)
    }

    /// The CRD's name: `<plural>.<group>.<domain>`.
    pub fn crd_name(&self) -> String {
        format!("{}.{}", self.plural(), self.full_group())
    }

    /// The resource (plural) name, as `#[derive(CustomResource)]` derives it.
    pub fn plural(&self) -> String {
        let gvk = kube::core::GroupVersionKind::gvk(&self.full_group(), &self.version, &self.kind);
        kube::discovery::ApiResource::from_gvk(&gvk).plural
    }
}

impl Project {
    /// Reads `PROJECT` in `root`.
    pub fn load(root: &Path) -> anyhow::Result<Project> {
        let path = root.join(PROJECT_FILE);
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let project: Project = serde_yaml::from_str(&text)
            .with_context(|| format!("{} is not a valid opkit PROJECT file", path.display()))?;
        if project.layout != LAYOUT {
            bail!(
                "{} has layout {:?}; this opkit understands {LAYOUT:?}",
                path.display(),
                project.layout
            );
        }
        Ok(project)
    }

    /// Writes `PROJECT` into `root`.
    pub fn save(&self, root: &Path) -> anyhow::Result<()> {
        let mut text = String::from(
            "# Written by opkit; `opkit create api` reads and updates it. Edit with care.\n",
        );
        text.push_str(&serde_yaml::to_string(self)?);
        let path = root.join(PROJECT_FILE);
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))
    }

    /// The Rust crate name (`my-operator` → `my_operator`).
    pub fn crate_name(&self) -> String {
        self.project_name.replace('-', "_")
    }

    /// The namespace the manager is deployed to.
    pub fn namespace(&self) -> String {
        format!("{}-system", self.project_name)
    }

    /// The versions of `kind`, in creation order: the first is the hub (the storage version,
    /// the one its controller reconciles), the others are spokes that convert to and from it.
    pub fn versions_of(&self, kind: &str) -> Vec<&Resource> {
        self.resources.iter().filter(|r| r.kind == kind).collect()
    }

    /// Whether `resource` is its kind's hub (its first version).
    pub fn is_hub(&self, resource: &Resource) -> bool {
        self.versions_of(&resource.kind)
            .first()
            .is_some_and(|hub| hub.version == resource.version)
    }

    /// The Rust module of a version of a kind: the hub's is the kind's (`cron_task`), a
    /// spoke's adds its version (`cron_task_v2`).
    pub fn module_of(&self, resource: &Resource) -> String {
        if self.is_hub(resource) {
            resource.module()
        } else {
            format!("{}_{}", resource.module(), resource.version)
        }
    }

    /// Whether any version of any kind has a webhook.
    pub fn has_webhooks(&self) -> bool {
        self.resources.iter().any(|r| !r.webhooks.is_empty())
    }

    /// The webhook Service the API server calls (`config/webhook/service.yaml`).
    pub fn webhook_service(&self) -> String {
        format!("{}-webhook-service", self.project_name)
    }

    /// The MutatingWebhookConfiguration of the defaulting webhooks.
    pub fn mutating_configuration(&self) -> String {
        format!("{}-mutating-webhook-configuration", self.project_name)
    }

    /// The ValidatingWebhookConfiguration of the validating webhooks.
    pub fn validating_configuration(&self) -> String {
        format!("{}-validating-webhook-configuration", self.project_name)
    }
}

/// The project root: the nearest directory from `start` upwards holding `PROJECT`.
pub fn find_root(start: &Path) -> anyhow::Result<PathBuf> {
    let mut dir = Some(start);
    while let Some(d) = dir {
        if d.join(PROJECT_FILE).is_file() {
            return Ok(d.to_path_buf());
        }
        dir = d.parent();
    }
    bail!(
        "no opkit project here: {} has no {PROJECT_FILE} file in it or above it.\n\
         Create one with `opkit init --domain example.com --repo github.com/you/name`, or cd \
         into a project",
        start.display()
    )
}

/// `CronTask` → `cron_task`, `HTTPRoute` → `http_route`.
pub fn snake_case(kind: &str) -> String {
    let chars: Vec<char> = kind.chars().collect();
    let mut out = String::new();
    for (i, &c) in chars.iter().enumerate() {
        if c.is_ascii_uppercase() {
            let prev_lower =
                i > 0 && (chars[i - 1].is_ascii_lowercase() || chars[i - 1].is_ascii_digit());
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_ascii_lowercase());
            let prev_upper = i > 0 && chars[i - 1].is_ascii_uppercase();
            if prev_lower || (prev_upper && next_lower) {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// Checks a DNS-1123 label (`[a-z0-9]([-a-z0-9]*[a-z0-9])?`, at most `max` characters).
fn dns_label(what: &str, value: &str, max: usize) -> anyhow::Result<()> {
    let ok = !value.is_empty()
        && value.len() <= max
        && value
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !value.starts_with('-')
        && !value.ends_with('-');
    if !ok {
        bail!(
            "{what} {value:?} is not valid: use lowercase letters, digits and '-', starting and \
             ending with a letter or digit, at most {max} characters"
        );
    }
    Ok(())
}

/// A project name: a DNS label starting with a letter (it prefixes object names, which
/// must stay under 63 characters) that is also a Cargo package name.
pub fn validate_project_name(name: &str) -> anyhow::Result<()> {
    dns_label("project name", name, 40)?;
    if !name.starts_with(|c: char| c.is_ascii_lowercase()) {
        bail!("project name {name:?} must start with a letter (it is also a Rust crate name)");
    }
    Ok(())
}

/// A domain: dot-separated DNS labels (`example.com`).
pub fn validate_domain(domain: &str) -> anyhow::Result<()> {
    if domain.is_empty() || domain.len() > 200 {
        bail!("domain {domain:?} is not valid: write a DNS name such as example.com");
    }
    for label in domain.split('.') {
        dns_label("each part of the domain", label, 63)
            .with_context(|| format!("domain {domain:?} is not valid"))?;
    }
    Ok(())
}

/// A short group: one DNS label (`webapp`).
pub fn validate_group(group: &str) -> anyhow::Result<()> {
    dns_label("group", group, 63)?;
    if !group.starts_with(|c: char| c.is_ascii_lowercase()) {
        bail!("group {group:?} must start with a letter");
    }
    Ok(())
}

/// A version as Kubernetes orders them: `v1`, `v2beta1`, `v1alpha3`.
pub fn validate_version(version: &str) -> anyhow::Result<()> {
    let rest = version.strip_prefix('v').unwrap_or("");
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let (major, tail) = rest.split_at(digits);
    let tail_ok = tail.is_empty()
        || ["alpha", "beta"].iter().any(|stage| {
            tail.strip_prefix(stage).is_some_and(|n| {
                !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) && !n.starts_with('0')
            })
        });
    if major.is_empty() || major.starts_with('0') || !tail_ok {
        bail!(
            "version {version:?} is not valid: write v1, v2, v1beta1, v1alpha2 (Kubernetes \
             orders versions by this form)"
        );
    }
    Ok(())
}

/// A kind of a Rust project: [`validate_kind_format`], and not a name the scaffolded code uses.
pub fn validate_kind(kind: &str) -> anyhow::Result<()> {
    validate_kind_format(kind)?;
    if RESERVED_KINDS.contains(&kind) {
        bail!("kind {kind:?} would clash with a type the scaffolded code uses; pick another name");
    }
    Ok(())
}

/// A kind: UpperCamelCase letters and digits (`Guestbook`, `CronTask`).
pub fn validate_kind_format(kind: &str) -> anyhow::Result<()> {
    let ok = kind.starts_with(|c: char| c.is_ascii_uppercase())
        && kind.chars().all(|c| c.is_ascii_alphanumeric())
        && kind.len() <= 63;
    if !ok {
        bail!(
            "kind {kind:?} is not valid: write it in UpperCamelCase, letters and digits only \
             (e.g. Guestbook, CronTask)"
        );
    }
    Ok(())
}

/// Names the scaffolded modules import or define, which a kind must not shadow.
const RESERVED_KINDS: &[&str] = &[
    "Action",
    "Api",
    "Client",
    "Condition",
    "Context",
    "Controller",
    "ControllerDef",
    "Error",
    "Manager",
    "Request",
    "Resource",
    "Result",
    "Store",
    "TestEnv",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snake_case_splits_words_and_acronyms() {
        assert_eq!(snake_case("Guestbook"), "guestbook");
        assert_eq!(snake_case("CronTask"), "cron_task");
        assert_eq!(snake_case("HTTPRoute"), "http_route");
        assert_eq!(snake_case("V2Thing"), "v2_thing");
    }

    #[test]
    fn versions_follow_kubernetes_forms() {
        for ok in ["v1", "v2", "v1beta1", "v1alpha2", "v10"] {
            validate_version(ok).unwrap();
        }
        for bad in ["1", "v", "v0", "v1beta", "v1gamma1", "V1", "v1beta01"] {
            assert!(validate_version(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn names_are_checked_with_a_reason() {
        validate_project_name("guestbook-operator").unwrap();
        let err = validate_project_name("Guestbook").unwrap_err().to_string();
        assert!(err.contains("lowercase"), "{err}");
        assert!(validate_project_name("1abc").is_err());
        validate_domain("example.com").unwrap();
        assert!(validate_domain("Example.com").is_err());
        assert!(validate_domain("a..b").is_err());
        validate_group("webapp").unwrap();
        assert!(validate_group("web.app").is_err());
        validate_kind("CronTask").unwrap();
        assert!(validate_kind("cronTask").is_err());
        assert!(validate_kind("Cron-Task").is_err());
        assert!(validate_kind("Context").is_err());
    }

    #[test]
    fn plugins_take_operator_sdks_names_and_unknown_ones_are_listed() {
        assert_eq!(Plugin::parse("helm"), Ok(Plugin::Helm));
        assert_eq!(
            Plugin::parse("helm.sdk.operatorframework.io/v1"),
            Ok(Plugin::Helm)
        );
        assert_eq!(Plugin::parse("Rust"), Ok(Plugin::Rust));
        assert_eq!(
            Plugin::parse("ansible.sdk.operatorframework.io/v1"),
            Ok(Plugin::Ansible)
        );
        let err = Plugin::parse("go").unwrap_err();
        assert!(
            err.contains("\"go\"") && err.contains("ansible") && err.contains("helm"),
            "{err}"
        );
        // A Rust project's PROJECT does not name its plugin; a helm project's does.
        let text = |plugin| {
            serde_yaml::to_string(&Project {
                layout: LAYOUT.into(),
                project_name: "p".into(),
                domain: "example.com".into(),
                repo: String::new(),
                plugin,
                resources: vec![],
            })
            .unwrap()
        };
        assert!(!text(Plugin::Rust).contains("plugin"));
        assert!(text(Plugin::Helm).contains("plugin: helm\n"));
    }

    #[test]
    fn project_file_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let project = Project {
            layout: LAYOUT.to_string(),
            project_name: "guestbook".into(),
            domain: "example.com".into(),
            repo: "github.com/example/guestbook".into(),
            plugin: Default::default(),
            resources: vec![Resource {
                group: "webapp".into(),
                domain: "example.com".into(),
                version: "v1".into(),
                kind: "Guestbook".into(),
                namespaced: true,
                chart: None,
                webhooks: Webhooks {
                    defaulting: true,
                    ..Webhooks::default()
                },
            }],
        };
        project.save(dir.path()).unwrap();
        assert_eq!(Project::load(dir.path()).unwrap(), project);
        let below = dir.path().join("src/api");
        std::fs::create_dir_all(&below).unwrap();
        assert_eq!(find_root(&below).unwrap(), dir.path());
    }
}
