//! `opkit init --plugins helm` and `opkit create api` in a helm project: operator-sdk's helm
//! plugin (`helm.sdk.operatorframework.io/v1`) on opkit's project layout.
//!
//! A helm project has no code: `watches.yaml` maps each kind to a chart under `helm-charts/`,
//! and opkit's generic chart operator (`opkit helm-operator run`) reconciles them. `config/`
//! is the Rust layout's (kustomize directories, manager Deployment, RBAC, samples); the CRDs,
//! RBAC and samples come from the charts ([`crate::helm_manifests`]).

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use clap::Args;

use crate::helm_chart::{ChartSource, kind_from_chart_name};
use crate::project::{self, Plugin, Project, Resource};
use crate::scaffold::{render, write_files};
use crate::{helm_manifests, manifests};

/// The file mapping kinds to charts.
pub(crate) const WATCHES_FILE: &str = "watches.yaml";

const WATCHES: &str = include_str!("../templates/helm/watches.yaml.tmpl");
const DOCKERFILE: &str = include_str!("../templates/helm/Dockerfile.tmpl");
const DOCKERIGNORE: &str = include_str!("../templates/helm/dockerignore.tmpl");
const GITIGNORE: &str = include_str!("../templates/helm/gitignore.tmpl");

/// operator-sdk's group and version for a kind created from a given chart without them.
const DEFAULT_GROUP: &str = "charts";
const DEFAULT_VERSION: &str = "v1alpha1";

/// The flags that name a kind and its chart, shared by `init` (which then creates the kind)
/// and `create api`.
#[derive(Args, Default)]
pub struct ApiFlags {
    /// The short API group: `webapp` becomes `webapp.DOMAIN` (helm: default `charts` with
    /// --helm-chart).
    #[arg(long, value_name = "GROUP")]
    pub(crate) group: Option<String>,
    /// The API version, e.g. `v1`, `v1alpha1` (helm: default `v1alpha1` with --helm-chart).
    #[arg(long, value_name = "VERSION")]
    pub(crate) version: Option<String>,
    /// The kind, in UpperCamelCase, e.g. `Guestbook` (helm: default from the chart's name).
    #[arg(long, value_name = "KIND")]
    pub(crate) kind: Option<String>,
    /// helm: the chart behind the kind, a chart directory or `.tgz` archive (default: a new
    /// chart like `helm create`'s, named after the kind).
    #[arg(long, value_name = "DIR|TGZ")]
    pub(crate) helm_chart: Option<PathBuf>,
    /// helm: the version the chart of --helm-chart must have.
    #[arg(long, value_name = "VERSION")]
    pub(crate) helm_chart_version: Option<String>,
    /// ansible: write a role for the kind under `roles/<kind>` (its watch runs it).
    #[arg(long)]
    pub(crate) generate_role: bool,
    /// ansible: write a playbook for the kind, `playbooks/<kind>.yml` (its watch runs it; with
    /// --generate-role it runs the role).
    #[arg(long)]
    pub(crate) generate_playbook: bool,
}

impl ApiFlags {
    /// Whether any flag is given (`init` then creates the kind too).
    pub(crate) fn any(&self) -> bool {
        self.group.is_some()
            || self.version.is_some()
            || self.kind.is_some()
            || self.helm_chart.is_some()
            || self.helm_chart_version.is_some()
            || self.generate_role
            || self.generate_playbook
    }

    /// The ansible-only flags given, by name.
    pub(crate) fn ansible_only(&self) -> Option<&'static str> {
        if self.generate_role {
            Some("--generate-role")
        } else if self.generate_playbook {
            Some("--generate-playbook")
        } else {
            None
        }
    }

    /// The helm-only flags given, by name.
    pub(crate) fn helm_only(&self) -> Option<&'static str> {
        if self.helm_chart.is_some() {
            Some("--helm-chart")
        } else if self.helm_chart_version.is_some() {
            Some("--helm-chart-version")
        } else {
            None
        }
    }
}

/// The project files of a new helm project (before any kind).
fn init_files(project: &Project, role: &str) -> Vec<(String, String)> {
    let vars = [
        ("name", project.project_name.as_str()),
        ("rust_version", crate::scaffold::IMAGE_RUST_VERSION),
        ("cli_version", env!("CARGO_PKG_VERSION")),
    ];
    let mut files = vec![
        (WATCHES_FILE.to_string(), WATCHES.to_string()),
        ("Dockerfile".to_string(), render(DOCKERFILE, &vars)),
        (".dockerignore".to_string(), DOCKERIGNORE.to_string()),
        (".gitignore".to_string(), GITIGNORE.to_string()),
    ];
    files.extend(manifests::initial_config(project, role));
    files
}

/// `opkit init --plugins helm` in `dir` (already checked: name, domain, an empty directory).
pub(crate) fn init(project: Project, api: ApiFlags, dir: &Path) -> anyhow::Result<()> {
    // The kind, when asked for, is checked before anything is written.
    let planned = if api.any() {
        Some(plan(&project, api)?)
    } else {
        None
    };
    let files = init_files(&project, &helm_manifests::role(dir, &project)?);
    std::fs::create_dir_all(dir.join(crate::helm_chart::CHARTS_DIR))
        .with_context(|| format!("cannot create {}", dir.display()))?;
    write_files(dir, &files)?;
    project.save(dir)?;
    println!(
        "Created the helm operator project {} (watches.yaml, helm-charts/, config/, Dockerfile).",
        project.project_name
    );
    match planned {
        Some(planned) => create(dir, project, planned),
        None => {
            println!("Next: define a resource with:");
            println!("  opkit create api --group webapp --version v1 --kind Guestbook");
            println!("  opkit create api --helm-chart path/to/chart");
            Ok(())
        }
    }
}

/// A kind about to be created, checked.
struct Planned {
    resource: Resource,
    chart: ChartSource,
}

/// Checks the flags of a new kind against `project` and resolves its chart.
fn plan(project: &Project, api: ApiFlags) -> anyhow::Result<Planned> {
    if let Some(flag) = api.ansible_only() {
        bail!(
            "{flag} is for ansible projects (`opkit init --plugins ansible`); this is a helm project"
        );
    }
    if api.helm_chart.is_none() && api.kind.is_none() {
        bail!("either --kind or --helm-chart need to be provided");
    }
    let kind_flag = api.kind.clone();
    let chart = ChartSource::resolve(
        api.helm_chart.as_deref(),
        api.helm_chart_version.as_deref(),
        || {
            Ok(kind_flag
                .as_deref()
                .context("--kind names the new chart")?
                .to_ascii_lowercase())
        },
    )?;
    let given = api.helm_chart.is_some();
    let default_or = |value: Option<String>, flag: &str, default: &str| match value {
        Some(v) => Ok(v),
        None if given => Ok(default.to_string()),
        None => Err(anyhow::anyhow!(
            "--{flag} is required (with --helm-chart it defaults to {default})"
        )),
    };
    let group = default_or(api.group, "group", DEFAULT_GROUP)?;
    let version = default_or(api.version, "version", DEFAULT_VERSION)?;
    let kind = match api.kind {
        Some(kind) => kind,
        None => kind_from_chart_name(chart.name()),
    };
    project::validate_group(&group)?;
    project::validate_version(&version)?;
    project::validate_kind_format(&kind)
        .with_context(|| format!("the kind for the chart {} (pass --kind)", chart.name()))?;
    if let Some(existing) = project
        .resources
        .iter()
        .find(|r| r.kind.eq_ignore_ascii_case(&kind))
    {
        bail!(
            "kind {} already exists in this project ({}, chart {}): the API resource already \
             exists",
            existing.kind,
            existing.api_version(),
            existing.chart.as_deref().unwrap_or("none")
        );
    }
    if let Some(existing) = project
        .resources
        .iter()
        .find(|r| r.chart.as_deref() == Some(&chart.project_path()))
    {
        bail!(
            "{} already holds the chart of kind {}: each kind has a chart of its own (rename \
             the chart, or edit {WATCHES_FILE} to point another kind at it)",
            chart.project_path(),
            existing.kind
        );
    }
    Ok(Planned {
        resource: Resource {
            group,
            domain: project.domain.clone(),
            version,
            kind,
            namespaced: true,
            chart: Some(chart.project_path()),
            webhooks: Default::default(),
        },
        chart,
    })
}

/// `opkit create api` in the helm project at `root`.
pub(crate) fn create_api(root: &Path, project: Project, api: ApiFlags) -> anyhow::Result<()> {
    let planned = plan(&project, api)?;
    create(root, project, planned)
}

/// The `watches.yaml` entry of a kind.
fn watch_entry(resource: &Resource, chart: &str) -> String {
    format!(
        "- group: {}\n  version: {}\n  kind: {}\n  chart: {chart}\n",
        resource.full_group(),
        resource.version,
        resource.kind
    )
}

/// Writes a planned kind: its chart, its watch, `PROJECT`, and the manifests.
fn create(root: &Path, mut project: Project, planned: Planned) -> anyhow::Result<()> {
    let Planned { resource, chart } = planned;
    let chart_dir = root.join(chart.project_path());
    if chart_dir.exists() {
        bail!(
            "{} already exists: move it away, or pick another chart (create api never \
             overwrites a chart)",
            chart.project_path()
        );
    }
    let watches_path = root.join(WATCHES_FILE);
    let mut watches = match std::fs::read_to_string(&watches_path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => WATCHES.to_string(),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", watches_path.display())),
    };
    if !watches.is_empty() && !watches.ends_with('\n') {
        watches.push('\n');
    }
    watches.push_str(&watch_entry(&resource, &chart.project_path()));
    match serde_yaml::from_str::<serde_yaml::Value>(&watches) {
        Ok(serde_yaml::Value::Sequence(_)) => {}
        _ => bail!(
            "{WATCHES_FILE} is not a list of watches that a new entry can be added to; add \
             this yourself:\n{}",
            watch_entry(&resource, &chart.project_path())
        ),
    }

    chart.write(root)?;
    write_files(root, &[(WATCHES_FILE.to_string(), watches)])?;
    project.resources.push(resource.clone());
    project.save(root)?;
    helm_manifests::generate(root, &project)?;

    println!(
        "Created {} {} backed by the chart {}, its watch in {WATCHES_FILE}, its CRD and a \
         sample in {}.",
        resource.api_version(),
        resource.kind,
        chart.project_path(),
        manifests::sample_path(&resource)
    );
    println!("Next:");
    for (command, what) in [
        (
            "opkit run --up",
            "run the chart operator on an embedded control plane",
        ),
        (
            "kubectl apply -k config/samples",
            "then create the sample: the chart is installed",
        ),
    ] {
        println!("  {command:<34} # {what}");
    }
    Ok(())
}

/// The project a helm `init` writes.
pub(crate) fn new_project(name: String, domain: String, repo: Option<String>) -> Project {
    Project {
        layout: project::LAYOUT.to_string(),
        project_name: name,
        domain,
        repo: repo.unwrap_or_default(),
        plugin: Plugin::Helm,
        resources: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_watch_entry_has_operator_sdks_fields() {
        let resource = Resource {
            group: "cache".into(),
            domain: "example.com".into(),
            version: "v1alpha1".into(),
            kind: "Memcached".into(),
            namespaced: true,
            chart: None,
            webhooks: Default::default(),
        };
        let entry: serde_yaml::Value =
            serde_yaml::from_str(&watch_entry(&resource, "helm-charts/memcached")).unwrap();
        assert_eq!(entry[0]["group"], "cache.example.com");
        assert_eq!(entry[0]["version"], "v1alpha1");
        assert_eq!(entry[0]["kind"], "Memcached");
        assert_eq!(entry[0]["chart"], "helm-charts/memcached");
    }
}
