//! `watches.yaml`: which custom resource kinds the operator serves, and with which chart.
//!
//! The file is operator-sdk's (`internal/helm/watches`): a list of entries with `group`,
//! `version`, `kind`, `chart` (a chart directory or archive; relative paths are taken from the
//! file's directory), `watchDependentResources` (default `true`), `overrideValues` (Helm
//! `--set-string` paths to values that win over the custom resource's spec; `$VAR` and
//! `${VAR}` expand from the environment, then the value runs as a Go template with Sprig's
//! functions, as operator-sdk does), `selector` (a label selector on the custom resources),
//! `reconcilePeriod` (a Go duration) and `maxConcurrentReconciles` (helm-operator-plugins').
//! Everything is checked when the file loads, so the operator refuses to start on a bad file
//! instead of failing per custom resource; errors name the entry and the field.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use opkit_apimachinery::LabelSelector;
use serde::Deserialize;

/// One entry of `watches.yaml`, checked and resolved.
#[derive(Debug, Clone)]
pub struct Watch {
    /// The custom resource's API group (may be empty).
    pub group: String,
    /// The custom resource's version.
    pub version: String,
    /// The custom resource's kind.
    pub kind: String,
    /// The chart directory or archive, absolute.
    pub chart: PathBuf,
    /// Whether changes of the release's objects reconcile the custom resource (default true).
    pub watch_dependent_resources: bool,
    /// `--set-string` paths and their values (environment expanded), applied over the spec.
    pub override_values: BTreeMap<String, String>,
    /// Only custom resources whose labels match are reconciled.
    pub selector: LabelSelector,
    /// The `selector` as written (a `metav1.LabelSelector`), for logs and the cache.
    pub selector_json: serde_json::Value,
    /// Reconcile every custom resource this often even without changes.
    pub reconcile_period: Option<Duration>,
    /// How many custom resources of this kind reconcile at once.
    pub max_concurrent_reconciles: Option<usize>,
}

impl Watch {
    /// `Kind.group` (or `Kind` for the core group), as logs and errors name the entry.
    pub fn name(&self) -> String {
        if self.group.is_empty() {
            format!("{}/{}", self.version, self.kind)
        } else {
            format!("{}/{}, Kind={}", self.group, self.version, self.kind)
        }
    }
}

pub use opkit::watches::WatchesError;

/// An entry as written.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawWatch {
    #[serde(default)]
    group: String,
    #[serde(default)]
    version: String,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    chart: String,
    watch_dependent_resources: Option<bool>,
    #[serde(default)]
    override_values: BTreeMap<String, String>,
    #[serde(default)]
    selector: Option<serde_json::Value>,
    reconcile_period: Option<String>,
    max_concurrent_reconciles: Option<usize>,
}

/// Reads and checks `watches.yaml` at `path`; chart paths are resolved against the file's
/// directory. Every entry is checked (the chart must exist, GVKs must be unique, durations
/// and selectors must parse, override values must expand).
pub fn load(path: &Path) -> Result<Vec<Watch>, WatchesError> {
    let text = opkit::watches::read(path)?;
    let base = path.parent().unwrap_or(Path::new("."));
    parse(&text, path, base, &|name| std::env::var(name).ok())
}

/// Parses `text` (the contents of the file `path`), resolving relative chart paths against
/// `base` and `$VAR`s with `env`.
pub(crate) fn parse(
    text: &str,
    path: &Path,
    base: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<Watch>, WatchesError> {
    let raw: Vec<RawWatch> = opkit::watches::entries(text, path, "its chart")?;
    let mut seen = HashSet::new();
    raw.into_iter()
        .enumerate()
        .map(|(index, raw)| {
            let gvk = format!("{}/{}, Kind={}", raw.group, raw.version, raw.kind);
            let invalid = |field: &'static str, message: String| WatchesError::Invalid {
                path: path.to_path_buf(),
                index,
                gvk: gvk.clone(),
                field,
                message,
            };
            check(&raw, base, env, &mut seen).map_err(|(field, message)| invalid(field, message))
        })
        .collect()
}

/// Checks and resolves one entry; an error names the field.
fn check(
    raw: &RawWatch,
    base: &Path,
    env: &dyn Fn(&str) -> Option<String>,
    seen: &mut HashSet<(String, String, String)>,
) -> Result<Watch, (&'static str, String)> {
    if raw.version.is_empty() {
        return Err(("version", "must not be empty".into()));
    }
    if raw.kind.is_empty() {
        return Err(("kind", "must not be empty".into()));
    }
    if !seen.insert((raw.group.clone(), raw.version.clone(), raw.kind.clone())) {
        return Err(("kind", "duplicate group/version/kind".into()));
    }
    if raw.chart.is_empty() {
        return Err(("chart", "must name a chart directory or archive".into()));
    }
    let chart = base.join(&raw.chart);
    if !chart.exists() {
        return Err(("chart", format!("{} does not exist", chart.display())));
    }
    let selector_json = raw
        .selector
        .clone()
        .filter(|s| !s.is_null())
        .unwrap_or_else(|| serde_json::json!({}));
    let selector = LabelSelector::from_label_selector_json(&selector_json)
        .map_err(|e| ("selector", e.to_string()))?;
    let reconcile_period = raw
        .reconcile_period
        .as_deref()
        .map(opkit_apimachinery::duration::parse_std)
        .transpose()
        .map_err(|e| ("reconcilePeriod", e))?;
    if raw.max_concurrent_reconciles == Some(0) {
        return Err(("maxConcurrentReconciles", "must be at least 1".into()));
    }
    let override_values = raw
        .override_values
        .iter()
        .map(|(k, v)| Ok((k.clone(), expand_value(k, v, env)?)))
        .collect::<Result<_, String>>()
        .map_err(|e| ("overrideValues", e))?;
    Ok(Watch {
        group: raw.group.clone(),
        version: raw.version.clone(),
        kind: raw.kind.clone(),
        chart,
        watch_dependent_resources: raw.watch_dependent_resources.unwrap_or(true),
        override_values,
        selector,
        selector_json,
        reconcile_period,
        max_concurrent_reconciles: raw.max_concurrent_reconciles,
    })
}

/// An override value as operator-sdk computes it: `$VAR`/`${VAR}` from the environment (Go's
/// `os.ExpandEnv`), then the result executed as a Go template with Sprig's functions.
fn expand_value(
    key: &str,
    value: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<String, String> {
    let expanded = opkit_apimachinery::go_expand(value, &|name| env(name).unwrap_or_default());
    let mut templates = opkit_template::Templates::new(key);
    templates.add_funcs(opkit_template::sprig::functions());
    templates
        .parse(key, &expanded)
        .map_err(|e| format!("{key}: invalid template string {expanded:?}: {e}"))?;
    templates
        .execute(key, &opkit_template::Value::Nil)
        .map_err(|e| format!("{key}: failed to execute template {expanded:?}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "IMAGE" => Some("quay.io/app".into()),
            "TAG" => Some("v2".into()),
            "1" => Some("one".into()),
            _ => None,
        }
    }

    fn chart_dir() -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join("helm-charts/nginx")).expect("mkdir");
        dir
    }

    fn load_text(dir: &Path, text: &str) -> Result<Vec<Watch>, WatchesError> {
        parse(text, &dir.join("watches.yaml"), dir, &env)
    }

    #[test]
    fn a_full_entry_resolves_chart_defaults_selector_period_and_overrides() {
        let dir = chart_dir();
        let watches = load_text(
            dir.path(),
            r#"
- group: demo.example.com
  version: v1alpha1
  kind: Nginx
  chart: helm-charts/nginx
  overrideValues:
    image.repository: $IMAGE
    image.tag: '{{ "${TAG}" | upper }}'
  selector:
    matchLabels: {tier: web}
  reconcilePeriod: 1m30s
  maxConcurrentReconciles: 3
"#,
        )
        .expect("valid");
        let w = &watches[0];
        assert_eq!(w.chart, dir.path().join("helm-charts/nginx"));
        assert!(w.watch_dependent_resources, "defaults to true");
        assert_eq!(w.override_values["image.repository"], "quay.io/app");
        assert_eq!(w.override_values["image.tag"], "V2");
        assert!(
            w.selector
                .matches_set(&[("tier".into(), "web".into())].into())
        );
        assert!(!w.selector.matches_set(&BTreeMap::new()));
        assert_eq!(w.reconcile_period, Some(Duration::from_secs(90)));
        assert_eq!(w.max_concurrent_reconciles, Some(3));
    }

    #[test]
    fn an_entry_without_a_selector_selects_every_custom_resource() {
        let dir = chart_dir();
        let w = load_text(
            dir.path(),
            "- {version: v1, kind: App, chart: helm-charts/nginx, watchDependentResources: false}\n",
        )
        .expect("valid");
        assert!(w[0].selector.matches_set(&BTreeMap::new()));
        assert!(!w[0].watch_dependent_resources);
        assert_eq!(w[0].reconcile_period, None);
    }

    #[test]
    fn errors_name_the_entry_and_the_field() {
        let dir = chart_dir();
        let cases = [
            (
                "- {group: g, version: v1, kind: A, chart: helm-charts/missing}",
                "watch 0 (g/v1, Kind=A): chart: ",
            ),
            (
                "- {group: g, kind: A, chart: helm-charts/nginx}",
                "watch 0 (g/, Kind=A): version: must not be empty",
            ),
            (
                "- {group: g, version: v1, kind: A, chart: helm-charts/nginx}\n- {group: g, version: v1, kind: A, chart: helm-charts/nginx}",
                "watch 1 (g/v1, Kind=A): kind: duplicate group/version/kind",
            ),
            (
                "- {group: g, version: v1, kind: A, chart: helm-charts/nginx, reconcilePeriod: soon}",
                "watch 0 (g/v1, Kind=A): reconcilePeriod: ",
            ),
            (
                "- {group: g, version: v1, kind: A, chart: helm-charts/nginx, selector: {matchExpressions: [{key: a, operator: Near}]}}",
                "watch 0 (g/v1, Kind=A): selector: ",
            ),
            (
                "- {group: g, version: v1, kind: A, chart: helm-charts/nginx, overrideValues: {x: '{{ nope }}'}}",
                "watch 0 (g/v1, Kind=A): overrideValues: x: invalid template string",
            ),
        ];
        for (text, want) in cases {
            let err = load_text(dir.path(), text).expect_err(text).to_string();
            assert!(err.contains(want), "{text}\n  gave: {err}\n  want: {want}");
        }
        let err = load_text(dir.path(), "- {version: [1]}")
            .expect_err("not a string")
            .to_string();
        assert!(err.contains("[0].version"), "{err}");
        let err = load_text(dir.path(), "[]").expect_err("empty").to_string();
        assert!(err.contains("no watches"), "{err}");
    }

    #[test]
    fn load_reports_a_missing_file() {
        let err = load(Path::new("/nonexistent/watches.yaml"))
            .expect_err("missing")
            .to_string();
        assert!(err.starts_with("could not open watches file /nonexistent/watches.yaml"));
    }
}
