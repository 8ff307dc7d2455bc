//! `opkit generate manifests` for a helm project: the CRDs, the ClusterRole and the samples
//! come from `PROJECT` and the charts, not from code.
//!
//! Each kind's CRD has an open `spec` and `status` (`x-kubernetes-preserve-unknown-fields`):
//! the spec is the release's values, whatever the chart takes. The ClusterRole is derived from
//! what the charts render with their default values (every object and hook: its group and
//! resource), as operator-sdk's helm plugin derives it, plus what the chart operator itself
//! needs: its kinds with their status and finalizers, Secrets for Helm's release storage,
//! events, namespaces and its leader-election Lease. A sample custom resource's spec is the
//! chart's `values.yaml`, comments included.

use std::path::Path;

use anyhow::{Context, bail};
use k8s_openapi::api::rbac::v1::PolicyRule;
use opkit::rbac::{Rules, rule};
use opkit_chart::{Chart, Engine, TemplateOptions, ValueOptions};

use crate::manifests;
use crate::project::{Project, Resource};
use crate::scaffold::render;

const CRD: &str = include_str!("../templates/helm/crd.yaml.tmpl");

/// Every verb on a resource the operator manages.
const ALL_VERBS: &[&str] = &[
    "create", "delete", "get", "list", "patch", "update", "watch",
];

/// The rules operator-sdk grants when a chart cannot be rendered with its defaults.
const FALLBACK_RESOURCES: &[(&str, &[&str])] = &[
    (
        "",
        &[
            "configmaps",
            "endpoints",
            "events",
            "persistentvolumeclaims",
            "pods",
            "secrets",
            "services",
            "services/finalizers",
        ],
    ),
    (
        "apps",
        &["daemonsets", "deployments", "replicasets", "statefulsets"],
    ),
];

/// The chart directory of a helm kind, relative to the project root.
pub(crate) fn chart_path(resource: &Resource) -> anyhow::Result<&str> {
    resource.chart.as_deref().with_context(|| {
        format!(
            "PROJECT lists kind {} without a chart: a helm project's kinds each name theirs \
             (`chart: helm-charts/<name>`)",
            resource.kind
        )
    })
}

/// The CRD of a chart-backed kind: an open spec and status, with the status subresource.
pub(crate) fn crd(resource: &Resource) -> anyhow::Result<String> {
    let plural = resource.plural();
    let vars = [
        ("plural", plural.as_str()),
        ("full_group", &resource.full_group()),
        ("kind", &resource.kind),
        ("kind_lower", &resource.kind.to_ascii_lowercase()),
        ("version", &resource.version),
        ("chart", chart_path(resource)?),
    ];
    Ok(render(CRD, &vars))
}

/// The sample custom resource of `resource`: its spec is the chart's `values.yaml` (with its
/// comments when the file can be indented as it is).
pub(crate) fn sample(root: &Path, resource: &Resource) -> anyhow::Result<String> {
    let values_path = root.join(chart_path(resource)?).join("values.yaml");
    let text = match std::fs::read_to_string(&values_path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", values_path.display())),
    };
    let values: serde_yaml::Value = serde_yaml::from_str(&text)
        .with_context(|| format!("{} is not valid YAML", values_path.display()))?;
    let head = format!(
        "apiVersion: {}\nkind: {}\nmetadata:\n  name: {}-sample\nspec:\n",
        resource.api_version(),
        resource.kind,
        resource.kind.to_ascii_lowercase()
    );
    let values = match values {
        serde_yaml::Value::Null => serde_yaml::Value::Mapping(Default::default()),
        v @ serde_yaml::Value::Mapping(_) => v,
        _ => bail!(
            "{} must hold a mapping of values (the sample's spec)",
            values_path.display()
        ),
    };
    let origin = format!(
        "  # Default values copied from <project_dir>/{}/values.yaml\n",
        chart_path(resource)?
    );
    // As written, indented under `spec:`, if that reads back as the same values.
    let indented: String = text
        .lines()
        .map(|l| {
            if l.is_empty() {
                "\n".to_string()
            } else {
                format!("  {l}\n")
            }
        })
        .collect();
    let verbatim = format!("{head}{origin}{indented}");
    let reads_back = serde_yaml::from_str::<serde_yaml::Value>(&verbatim)
        .ok()
        .is_some_and(|doc| doc.get("spec") == Some(&values));
    if reads_back && !values.as_mapping().is_some_and(|m| m.is_empty()) {
        return Ok(verbatim);
    }
    let spec = serde_yaml::to_string(&values)?;
    let spec: String = spec.lines().map(|l| format!("  {l}\n")).collect();
    Ok(format!("{head}{origin}{spec}"))
}

/// `(group, resource)` of every object and hook `chart` renders with its default values, for
/// a release named `release` in namespace `default`.
fn rendered_resources(chart: &Chart, release: &str) -> anyhow::Result<Vec<(String, String)>> {
    let mut chart = chart.clone();
    let values = opkit_chart::prepare(&mut chart, &ValueOptions::default().merge_values()?)?;
    let opts = TemplateOptions {
        release_name: release.to_string(),
        namespace: "default".into(),
        ..TemplateOptions::default()
    };
    let rendered = opkit_chart::render_release(&Engine::new(), &chart, &values, &opts)?;
    let documents = opkit_chart::split_manifests(&rendered.manifest)
        .into_iter()
        .chain(rendered.hooks.into_iter().map(|h| h.manifest));
    let mut out = Vec::new();
    for doc in documents {
        let value: serde_yaml::Value = serde_yaml::from_str(&doc)
            .with_context(|| format!("the chart {} renders invalid YAML", chart.name()))?;
        let text = |key: &str| value.get(key).and_then(|v| v.as_str()).unwrap_or("");
        let (api_version, kind) = (text("apiVersion"), text("kind"));
        if api_version.is_empty() || kind.is_empty() {
            continue;
        }
        let gv: kube::core::GroupVersion = api_version
            .parse()
            .with_context(|| format!("{api_version:?} is not a valid apiVersion"))?;
        let group = gv.group.clone();
        let resource = kube::discovery::ApiResource::from_gvk(&gv.with_kind(kind)).plural;
        out.push((group, resource));
    }
    // The files under crds/ the chart's install would create (opkit-chart's rule).
    if !opkit_chart::crd_objects(&chart, chart.name()).is_empty() {
        out.push((
            "apiextensions.k8s.io".into(),
            "customresourcedefinitions".into(),
        ));
    }
    Ok(out)
}

/// The rules of one kind: the kind itself (with status and finalizers) and everything its
/// chart renders.
fn kind_rules(root: &Path, resource: &Resource) -> anyhow::Result<Vec<PolicyRule>> {
    let plural = resource.plural();
    let group = resource.full_group();
    let mut rules = vec![
        rule(&group, &plural, ALL_VERBS),
        rule(
            &group,
            &format!("{plural}/status"),
            &["get", "patch", "update"],
        ),
        rule(&group, &format!("{plural}/finalizers"), &["update"]),
    ];
    let dir = root.join(chart_path(resource)?);
    let chart =
        Chart::load(&dir).with_context(|| format!("cannot load the chart {}", dir.display()))?;
    let release = format!("{}-sample", resource.kind.to_ascii_lowercase());
    match rendered_resources(&chart, &release) {
        Ok(resources) => {
            for (group, resource) in resources {
                rules.push(rule(&group, &resource, ALL_VERBS));
            }
        }
        Err(e) => {
            eprintln!(
                "    note: the chart {} does not render with its default values ({e:#}); \
                 config/rbac/role.yaml grants operator-sdk's default rules for {} instead: \
                 check them",
                dir.display(),
                resource.kind
            );
            for (group, resources) in FALLBACK_RESOURCES {
                for r in *resources {
                    rules.push(rule(group, r, ALL_VERBS));
                }
            }
        }
    }
    Ok(rules)
}

/// The manager's ClusterRole of a helm project, as YAML.
pub(crate) fn role(root: &Path, project: &Project) -> anyhow::Result<String> {
    let mut rules = Rules::default();
    // The chart operator's own needs: release storage, events, namespaces it installs into,
    // and the leader-election Lease.
    rules.add(rule("", "secrets", ALL_VERBS));
    rules.add(rule("", "events", &["create", "patch"]));
    rules.add(rule("events.k8s.io", "events", &["create", "patch"]));
    rules.add(rule("", "namespaces", &["get"]));
    rules.add(rule(
        "coordination.k8s.io",
        "leases",
        &["create", "get", "update"],
    ));
    for resource in &project.resources {
        rules.extend(kind_rules(root, resource)?);
    }
    let yaml = opkit::rbac::cluster_role_yaml(&manifests::role_name(project), rules.to_vec())?;
    Ok(format!(
        "# Generated by `opkit generate manifests` from what each chart renders with its \
         default values:\n# objects that only other values enable need rules added by hand.\n\
         {yaml}"
    ))
}

/// Checks `watches.yaml` as the chart operator reads it, and notes the kinds of `PROJECT` it
/// does not watch (their CRDs are generated, but nothing would reconcile them).
fn check_watches(root: &Path, project: &Project) -> anyhow::Result<()> {
    if project.resources.is_empty() {
        return Ok(());
    }
    let path = root.join(crate::helm_scaffold::WATCHES_FILE);
    let watches = opkit_chart_operator::watches::load(&path)
        .with_context(|| format!("{} is not usable by the chart operator", path.display()))?;
    for r in &project.resources {
        let watched = watches
            .iter()
            .any(|w| w.group == r.full_group() && w.version == r.version && w.kind == r.kind);
        if !watched {
            eprintln!(
                "    note: {} has no entry for {} {}: nothing reconciles it",
                path.display(),
                r.api_version(),
                r.kind
            );
        }
    }
    Ok(())
}

/// Writes the CRDs, RBAC and samples of the helm project at `root`.
pub(crate) fn generate(root: &Path, project: &Project) -> anyhow::Result<()> {
    crate::progress::step("generating manifests under config/ from the charts");
    check_watches(root, project)?;
    manifests::write_plugin_config(
        root,
        project,
        manifests::PluginConfig {
            crd: &crd,
            role: role(root, project)?,
            sample: &|resource| sample(root, resource),
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resource(chart: &str) -> Resource {
        Resource {
            group: "cache".into(),
            domain: "example.com".into(),
            version: "v1alpha1".into(),
            kind: "Memcached".into(),
            namespaced: true,
            chart: Some(chart.into()),
            webhooks: Default::default(),
        }
    }

    fn write(root: &Path, rel: &str, text: &str) {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn the_sample_keeps_the_values_file_with_its_comments() {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            "helm-charts/memcached/values.yaml",
            "# How many.\nreplicaCount: 3\n\nimage:\n  # The tag.\n  tag: \"1.6\"\n",
        );
        let sample = sample(dir.path(), &resource("helm-charts/memcached")).unwrap();
        assert!(
            sample.contains("  # How many.\n  replicaCount: 3\n"),
            "{sample}"
        );
        let doc: serde_yaml::Value = serde_yaml::from_str(&sample).unwrap();
        assert_eq!(doc["apiVersion"], "cache.example.com/v1alpha1");
        assert_eq!(doc["metadata"]["name"], "memcached-sample");
        assert_eq!(doc["spec"]["image"]["tag"], "1.6");
    }

    #[test]
    fn a_values_file_that_cannot_be_indented_as_is_is_rewritten() {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            "helm-charts/memcached/values.yaml",
            "---\nreplicaCount: 2\n",
        );
        let text = sample(dir.path(), &resource("helm-charts/memcached")).unwrap();
        let doc: serde_yaml::Value = serde_yaml::from_str(&text).unwrap();
        assert_eq!(doc["spec"]["replicaCount"], 2);
        write(dir.path(), "helm-charts/memcached/values.yaml", "# none\n");
        let text = sample(dir.path(), &resource("helm-charts/memcached")).unwrap();
        let doc: serde_yaml::Value = serde_yaml::from_str(&text).unwrap();
        assert!(doc["spec"].as_mapping().unwrap().is_empty(), "{text}");
    }

    #[test]
    fn the_crd_is_open_and_has_a_status_subresource() {
        let crd: serde_yaml::Value =
            serde_yaml::from_str(&crd(&resource("helm-charts/memcached")).unwrap()).unwrap();
        assert_eq!(crd["metadata"]["name"], "memcacheds.cache.example.com");
        let version = &crd["spec"]["versions"][0];
        let props = &version["schema"]["openAPIV3Schema"]["properties"];
        for field in ["spec", "status"] {
            assert_eq!(props[field]["x-kubernetes-preserve-unknown-fields"], true);
        }
        assert!(version["subresources"]["status"].is_mapping());
    }
}
