//! `helm template` as a library (Helm's `action.Install` in client-only dry-run mode plus
//! `pkg/cmd/template.go`): the release's capabilities and options, the render, NOTES.txt
//! set aside, manifests and hooks sorted, CRDs, and the text `helm template` prints (or the
//! files it writes with `--output-dir`), byte for byte.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use opkit_template::Value;
use regex::Regex;

use crate::chart::Chart;
use crate::engine::{Engine, RenderContext};
use crate::manifest::{Hook, Manifest, sort_manifests, split_manifests, trim_space};
use crate::objects::{Capabilities, KubeVersion, ReleaseOptions};
use crate::prepare::{PrepareError, prepare_unvalidated, validate_values};

/// The flags of `helm template` that shape the release and its output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TemplateOptions {
    /// The release name (`release-name` unless given).
    pub release_name: String,
    /// `-n/--namespace`.
    pub namespace: String,
    /// `--kube-version` (Helm's default otherwise).
    pub kube_version: Option<KubeVersion>,
    /// `-a/--api-versions`, added to Helm's default set.
    pub api_versions: Vec<String>,
    /// `--is-upgrade`.
    pub is_upgrade: bool,
    /// `--include-crds`.
    pub include_crds: bool,
    /// `--skip-tests`.
    pub skip_tests: bool,
    /// `--no-hooks`.
    pub no_hooks: bool,
    /// `-s/--show-only` patterns.
    pub show_only: Vec<String>,
    /// `--output-dir`.
    pub output_dir: Option<PathBuf>,
    /// `--release-name`: put the files under `OUTPUT_DIR/RELEASE`.
    pub use_release_name: bool,
    /// `--skip-schema-validation`: render without checking the values against the charts'
    /// `values.schema.json`.
    pub skip_schema_validation: bool,
}

impl Default for TemplateOptions {
    fn default() -> Self {
        TemplateOptions {
            release_name: "release-name".into(),
            namespace: "default".into(),
            kube_version: None,
            api_versions: Vec::new(),
            is_upgrade: false,
            include_crds: false,
            skip_tests: false,
            no_hooks: false,
            show_only: Vec::new(),
            output_dir: None,
            use_release_name: false,
            skip_schema_validation: false,
        }
    }
}

/// Why `helm template` failed; the text is Helm's.
#[derive(Debug, thiserror::Error)]
pub enum TemplateError {
    /// Rendering the release failed (Helm then has a partial release and suggests `--debug`).
    #[error("{0}\n\nUse --debug flag to render out invalid YAML")]
    Render(String),
    /// Anything else.
    #[error("{0}")]
    Other(String),
}

/// A rendered release: what `helm template` prints comes from it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Release {
    /// CRDs (with `--include-crds`) and manifests, each as `---\n# Source: NAME\nDOC\n`.
    pub manifest: String,
    /// The hooks in Helm's order.
    pub hooks: Vec<Hook>,
    /// The top chart's rendered NOTES.txt.
    pub notes: String,
    /// Lines `wrote PATH` for each file written to `--output-dir`, in order.
    pub written: Vec<String>,
}

/// `regex_lite`'s: a name is at most 53 bytes, and `regex` took longer to compile this than
/// `opkit chart template` takes to check the name.
static VALID_RELEASE_NAME: LazyLock<regex_lite::Regex> = LazyLock::new(|| {
    regex_lite::Regex::new(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
        .expect("the release name pattern compiles")
});

/// Helm's `ValidateReleaseName`, with the prefixes `install` adds.
pub fn validate_release_name(name: &str) -> Result<(), TemplateError> {
    let problem = if name.is_empty() {
        "no name provided".to_string()
    } else if name.len() > 53 || !VALID_RELEASE_NAME.is_match(name) {
        format!(
            "invalid release name, must match regex {} and the length must not be longer than 53",
            VALID_RELEASE_NAME.as_str()
        )
    } else {
        return Ok(());
    };
    Err(TemplateError::Other(format!(
        "release name check failed: release name {}: {problem}",
        opkit_template::sprintf("%q", &[Value::string(name)])
    )))
}

/// The capabilities `helm template` renders with: Helm's defaults, the given Kubernetes
/// version, and the extra API versions after the default ones.
pub fn capabilities(opts: &TemplateOptions) -> Capabilities {
    let mut caps = Capabilities::default();
    if let Some(k) = &opts.kube_version {
        caps.kube_version = k.clone();
    }
    caps.api_versions.extend(opts.api_versions.iter().cloned());
    caps
}

/// Renders the release for `chart` (dependencies already processed) with its coalesced
/// `values`, as `helm install --dry-run=client` does; with `--output-dir`, the CRDs and
/// manifests are written there.
pub fn render_release(
    engine: &Engine,
    chart: &Chart,
    values: &Value,
    opts: &TemplateOptions,
) -> Result<Release, TemplateError> {
    validate_release_name(&opts.release_name)?;
    let ctx = RenderContext {
        release: ReleaseOptions {
            name: opts.release_name.clone(),
            namespace: opts.namespace.clone(),
            revision: 1,
            is_install: !opts.is_upgrade,
            is_upgrade: opts.is_upgrade,
        },
        capabilities: capabilities(opts),
    };
    let (hooks, manifests, notes) = render_parts(engine, chart, values, &ctx)?;
    let mut out = Output::new(opts);
    let mut manifest = String::new();
    if opts.include_crds {
        for (name, data) in crd_objects(chart, chart.name()) {
            let data = crate::chart::text(data);
            match &opts.output_dir {
                None => push_document(&mut manifest, &name, &data),
                Some(dir) => out
                    .write(&dir.to_string_lossy(), &name, &data)
                    .map_err(TemplateError::Render)?,
            }
        }
    }
    for m in &manifests {
        match &out.dir {
            None => push_document(&mut manifest, &m.name, &m.content),
            Some(dir) => {
                let dir = dir.clone();
                out.write(&dir, &m.name, &m.content)
                    .map_err(TemplateError::Render)?;
            }
        }
    }
    Ok(Release {
        manifest,
        hooks,
        notes,
        written: out.written,
    })
}

/// What `helm template` prints for a rendered release (writing hooks to `--output-dir`
/// when given): the manifests, the hooks unless `--no-hooks` (tests left out with
/// `--skip-tests`), or only the documents whose template matches a `--show-only` pattern.
pub fn template_output(release: &Release, opts: &TemplateOptions) -> Result<String, TemplateError> {
    let mut stdout: String = release
        .written
        .iter()
        .map(|w| format!("wrote {w}\n"))
        .collect();
    let mut manifests = String::with_capacity(release.manifest.len() + 1);
    manifests.push_str(trim_space(&release.manifest));
    manifests.push('\n');
    if !opts.no_hooks {
        let mut out = Output::new(opts);
        for h in &release.hooks {
            if opts.skip_tests && h.is_test() {
                continue;
            }
            match &out.dir {
                None => push_document(&mut manifests, &h.path, &h.manifest),
                Some(dir) => {
                    let dir = dir.clone();
                    out.append_if_exists = true;
                    out.write(&dir, &h.path, &h.manifest)
                        .map_err(TemplateError::Other)?;
                }
            }
        }
        stdout.extend(out.written.iter().map(|w| format!("wrote {w}\n")));
    }
    if opts.show_only.is_empty() {
        if stdout.is_empty() {
            return Ok(manifests);
        }
        stdout.push_str(&manifests);
        return Ok(stdout);
    }
    static SOURCE: LazyLock<Regex> =
        LazyLock::new(|| Regex::new("# Source: [^/]+/(.+)").expect("the pattern compiles"));
    let docs = split_manifests(&manifests);
    let mut shown = Vec::new();
    for pattern in &opts.show_only {
        let pattern = pattern.replace(std::path::MAIN_SEPARATOR, "/");
        let mut missing = true;
        for doc in &docs {
            let Some(path) = SOURCE.captures(doc).and_then(|c| c.get(1)) else {
                continue;
            };
            if crate::glob::path_match(&pattern, path.as_str()) {
                shown.push(doc.as_str());
                missing = false;
            }
        }
        if missing {
            return Err(TemplateError::Other(format!(
                "could not find template {pattern} in chart"
            )));
        }
    }
    for doc in shown {
        stdout.push_str(&format!("---\n{doc}\n"));
    }
    Ok(stdout)
}

/// Renders `chart` with `values` and returns what `helm template` prints.
pub fn template(
    engine: &Engine,
    chart: &Chart,
    values: &Value,
    opts: &TemplateOptions,
) -> Result<String, TemplateError> {
    let release = render_release(engine, chart, values, opts)?;
    template_output(&release, opts)
}

/// Why [`prepare_and_template`] failed; the texts are Helm's.
#[derive(Debug, thiserror::Error)]
pub enum PrepareTemplateError {
    /// The values could not be prepared (see [`crate::prepare`]).
    #[error(transparent)]
    Prepare(#[from] PrepareError),
    /// The chart did not render (see [`template`]).
    #[error(transparent)]
    Template(#[from] TemplateError),
}

/// [`crate::prepare`] then [`template`], as `helm template` runs them, with the same result
/// and the same first error; the `values.schema.json` check (a large schema costs as much
/// as the render: `boon` compiles it first) runs on a second thread while the chart renders
/// in memory, and its error wins over the render's. With `--output-dir` nothing is written
/// before the values are known to be valid.
pub fn prepare_and_template(
    engine: &Engine,
    chart: &mut Chart,
    user_values: &Value,
    opts: &TemplateOptions,
) -> Result<String, PrepareTemplateError> {
    let (values, _) = prepare_unvalidated(chart, user_values)?;
    let chart = &*chart;
    if opts.skip_schema_validation || opts.output_dir.is_some() || !has_schema(chart) {
        if !opts.skip_schema_validation {
            validate_values(chart, &values)?;
        }
        let rendered = template(engine, chart, &values, opts);
        if engine.leaves_to_exit() {
            std::mem::forget(values);
        }
        return Ok(rendered?);
    }
    let (checked, rendered) = std::thread::scope(|scope| {
        let check = std::thread::Builder::new()
            .name("opkit-chart-schema".into())
            .spawn_scoped(scope, || validate_values(chart, &values));
        let rendered = template(engine, chart, &values, opts);
        let checked = match check {
            Ok(h) => h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)),
            // No second thread: check here, still before the render's result counts.
            Err(_) => validate_values(chart, &values),
        };
        (checked, rendered)
    });
    if engine.leaves_to_exit() {
        std::mem::forget(values);
    }
    checked?;
    Ok(rendered?)
}

/// Whether `chart` or a subchart has a `values.schema.json`.
fn has_schema(chart: &Chart) -> bool {
    chart.schema.is_some() || chart.dependencies.iter().any(has_schema)
}

/// The render at the heart of `helm install` and `helm upgrade` (with any revision and
/// capabilities): the chart's `kubeVersion` checked, the templates rendered, the top chart's
/// NOTES.txt set aside (subcharts' dropped), and the hooks and manifests in Helm's install
/// order.
pub fn render_parts(
    engine: &Engine,
    chart: &Chart,
    values: &Value,
    ctx: &RenderContext,
) -> Result<(Vec<Hook>, Vec<Manifest>, String), TemplateError> {
    let caps = &ctx.capabilities;
    let wanted = &chart.metadata.kube_version;
    if !wanted.is_empty()
        && !crate::load::is_compatible_range(wanted, &caps.kube_version.normalized)
    {
        return Err(TemplateError::Render(format!(
            "chart requires kubeVersion: {wanted} which is incompatible with Kubernetes {}",
            caps.kube_version.version
        )));
    }
    let mut files = engine
        .render(chart, values, ctx)
        .map_err(|e| TemplateError::Render(e.0))?;

    let top_notes = format!("{}/templates/NOTES.txt", chart.name());
    let mut notes = String::new();
    files.retain(|name, text| {
        if !name.ends_with("NOTES.txt") {
            return true;
        }
        if *name == top_notes {
            notes.push_str(text);
        }
        false
    });

    let (hooks, manifests) =
        sort_manifests(&files).map_err(|e| TemplateError::Render(e.to_string()))?;
    Ok((hooks, manifests, notes))
}

/// The chart's and its subcharts' `crds/*.{yaml,yml,json}` files with the names Helm
/// prints (`CHART/crds/FILE`, `CHART/charts/SUB/crds/FILE`).
pub fn crd_objects<'c>(chart: &'c Chart, full_path: &str) -> Vec<(String, &'c [u8])> {
    let mut out = Vec::new();
    for f in &chart.files {
        let ext = f.name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
        if f.name.starts_with("crds/") && matches!(ext.as_deref(), Some("yaml" | "yml" | "json")) {
            out.push((format!("{full_path}/{}", f.name), f.data.as_slice()));
        }
    }
    for dep in &chart.dependencies {
        out.extend(crd_objects(
            dep,
            &format!("{full_path}/charts/{}", dep.name()),
        ));
    }
    out
}

/// Appends one document of `helm template`'s stream: `---`, its `# Source:` line, the text.
fn push_document(out: &mut String, source: &str, text: &str) {
    out.reserve(text.len() + source.len() + 16);
    out.push_str("---\n# Source: ");
    out.push_str(source);
    out.push('\n');
    out.push_str(text);
    out.push('\n');
}

/// Files written under `--output-dir`, as Helm's `writeToFile` writes them.
struct Output {
    /// Where manifests and hooks go (`OUTPUT_DIR[/RELEASE]`).
    dir: Option<String>,
    /// Files already written in this phase (later documents are appended).
    written_names: BTreeMap<String, ()>,
    /// Hooks also append to a file that exists on disk.
    append_if_exists: bool,
    written: Vec<String>,
}

impl Output {
    fn new(opts: &TemplateOptions) -> Output {
        let dir = opts.output_dir.as_ref().map(|d| {
            let d = d.to_string_lossy().into_owned();
            if opts.use_release_name {
                crate::archive::clean_path(&format!("{d}/{}", opts.release_name))
            } else {
                d
            }
        });
        Output {
            dir,
            written_names: BTreeMap::new(),
            append_if_exists: false,
            written: Vec::new(),
        }
    }

    fn write(&mut self, dir: &str, name: &str, data: &str) -> Result<(), String> {
        let file = format!("{dir}/{name}");
        let path = Path::new(&file);
        let exists = self.append_if_exists && path.exists();
        let append = exists || self.written_names.contains_key(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
        }
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(!append)
            .truncate(!append)
            .append(append)
            .open(path)
            .map_err(|e| format!("open {file}: {e}"))?;
        use std::io::Write as _;
        write!(f, "---\n# Source: {name}\n{data}\n").map_err(|e| format!("write {file}: {e}"))?;
        self.written_names.insert(name.to_string(), ());
        self.written.push(file);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A chart whose schema wants `replicas` to be an integer and whose template fails when
    /// it is not.
    fn schema_chart() -> (tempfile::TempDir, Chart) {
        let dir = tempfile::tempdir().unwrap();
        let w = |p: &str, s: &str| {
            let p = dir.path().join(p);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, s).unwrap();
        };
        w("Chart.yaml", "apiVersion: v2\nname: app\nversion: 1.0.0\n");
        w("values.yaml", "replicas: 1\n");
        w(
            "values.schema.json",
            r#"{"properties": {"replicas": {"type": "integer"}}}"#,
        );
        w(
            "templates/cm.yaml",
            "kind: ConfigMap\ndata:\n  n: {{ .Values.replicas | quote }}\n{{ if kindIs \"string\" .Values.replicas }}{{ fail \"not a number\" }}{{ end }}\n",
        );
        let chart = Chart::load(dir.path()).unwrap();
        (dir, chart)
    }

    #[test]
    fn prepare_and_template_prints_what_prepare_then_template_print() {
        let (_dir, chart) = schema_chart();
        let opts = TemplateOptions::default();
        let user = Value::map(BTreeMap::from([("replicas".to_string(), Value::Int(2))]));
        let mut one = chart.clone();
        let values = crate::prepare(&mut one, &user).unwrap();
        let want = template(&Engine::new(), &one, &values, &opts);
        let mut two = chart.clone();
        let got = prepare_and_template(&Engine::new(), &mut two, &user, &opts);
        assert_eq!(
            got.map_err(|e| e.to_string()),
            want.map_err(|e| e.to_string())
        );
    }

    #[test]
    fn prepare_and_template_reports_the_schema_error_before_the_render_error() {
        let (_dir, mut chart) = schema_chart();
        let user = Value::map(BTreeMap::from([(
            "replicas".to_string(),
            Value::string("x"),
        )]));
        let err = prepare_and_template(
            &Engine::new(),
            &mut chart,
            &user,
            &TemplateOptions::default(),
        )
        .unwrap_err();
        assert!(matches!(err, PrepareTemplateError::Prepare(_)), "{err}");
        assert_eq!(
            err.to_string(),
            "values don't meet the specifications of the schema(s) in the following chart(s):\napp:\n- at '/replicas': got string, want integer\n"
        );
    }

    #[test]
    fn release_names_follow_helms_rule() {
        assert!(validate_release_name("rel-1.a").is_ok());
        let err = validate_release_name("Rel").unwrap_err().to_string();
        assert!(
            err.starts_with(
                "release name check failed: release name \"Rel\": invalid release name, must match regex ^[a-z0-9]"
            ),
            "{err}"
        );
        assert_eq!(
            validate_release_name("").unwrap_err().to_string(),
            "release name check failed: release name \"\": no name provided"
        );
    }

    #[test]
    fn kube_version_ranges_are_checked_like_helm() {
        assert!(crate::load::is_compatible_range(">=1.20.0-0", "v1.35.0"));
        assert!(!crate::load::is_compatible_range("<1.20.0", "v1.35.0"));
        assert!(!crate::load::is_compatible_range("not a range", "v1.35.0"));
    }
}
