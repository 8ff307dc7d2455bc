//! Helpers shared by the tests that compare opkit with the real `helm`.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

use opkit_chart::Chart;
use opkit_template::{Templates, Value};

/// The real helm: `HELM_BIN`, the project's `.tools/bin/helm`, or `helm` on `PATH`.
pub fn helm() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("HELM_BIN") {
        return Some(PathBuf::from(p));
    }
    let tools = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.tools/bin/helm");
    if tools.exists() {
        return Some(tools);
    }
    Command::new("helm")
        .arg("version")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|_| PathBuf::from("helm"))
}

/// `helm template ARGS` run in `dir` with private helm homes: stdout, or the text after
/// `Error: `.
pub fn run_helm(helm: &Path, dir: &Path, args: &[&str]) -> Result<String, String> {
    let home = tempfile::tempdir().expect("a helm home");
    let out = Command::new(helm)
        .arg("template")
        .args(args)
        .current_dir(dir)
        .env("HELM_CACHE_HOME", home.path())
        .env("HELM_CONFIG_HOME", home.path())
        .env("HELM_DATA_HOME", home.path())
        .output()
        .expect("helm runs");
    if out.status.success() {
        return Ok(String::from_utf8(out.stdout).expect("helm prints UTF-8"));
    }
    let err = String::from_utf8_lossy(&out.stderr);
    let start = err
        .find("Error: ")
        .unwrap_or_else(|| panic!("helm failed without an error line: {err}"));
    Err(err[start + "Error: ".len()..].to_string())
}

/// `helm template r CHART FLAGS` with private helm homes: stdout, or the text after
/// `Error: `.
pub fn helm_template(helm: &Path, chart: &Path, flags: &[String]) -> Result<String, String> {
    let chart = chart.to_str().expect("a UTF-8 chart path");
    let mut args = vec!["r", chart];
    args.extend(flags.iter().map(String::as_str));
    run_helm(helm, Path::new("."), &args)
}

/// The template that prints `.Values` recursively with each leaf's Go type, using only the
/// engine and Sprig; its output is one line after `values: |`.
pub const DUMP_TEMPLATE: &str = r#"{{- define "opkit-oracle.dump" -}}
{{- if kindIs "map" . -}}
{ {{- range $k, $v := . }}{{ $k | quote }}: {{ template "opkit-oracle.dump" $v }}; {{ end -}} }
{{- else if kindIs "slice" . -}}
[ {{- range . }}{{ template "opkit-oracle.dump" . }}; {{ end -}} ]
{{- else -}}
{{ typeOf . }}({{ printf "%#v" . }})
{{- end -}}
{{- end -}}
apiVersion: v1
kind: ConfigMap
metadata:
  name: opkit-oracle-values
data:
  values: |
    {{ template "opkit-oracle.dump" .Values }}
"#;

/// The path the dump template gets inside a chart's `templates/`. Helm renders the templates
/// with the most `/` in their names first, so this deep one runs before any template that
/// changes `.Values` in place (Sprig's `merge`, `set`).
pub const DUMP_FILE: &str = "opkit-oracle/1/2/3/4/5/6/7/8/values.yaml";

/// The values line of the dump template's output; `(none)` when there is none.
pub fn dumped(manifest: &str) -> String {
    manifest
        .lines()
        .skip_while(|l| l.trim() != "values: |")
        .nth(1)
        .map_or_else(|| "(none)".to_string(), |l| l.trim().to_string())
}

/// Renders the dump template over `values` with opkit's engine: the values line.
pub fn dump_values(chart: &Chart, values: Value) -> String {
    let Some(tpl) = chart
        .templates
        .iter()
        .find(|t| t.name == format!("templates/{DUMP_FILE}"))
    else {
        return dumped("");
    };
    let name = format!("{}/{}", chart.name(), tpl.name);
    let mut t = Templates::new("gotpl");
    t.add_funcs(opkit_template::sprig::functions());
    let text = String::from_utf8(tpl.data.clone()).unwrap();
    t.parse(&name, &text).unwrap_or_else(|e| panic!("{e}"));
    let data = Value::map([("Values".to_string(), values)].into_iter().collect());
    t.execute(&name, &data)
        .map(|o| dumped(&o))
        .unwrap_or_else(|e| format!("render failed: {e}"))
}

/// Every non-partial template of the chart tree, named as Helm's `# Source:` lines name them.
pub fn sources(chart: &Chart, prefix: &str, out: &mut Vec<String>) {
    for t in &chart.templates {
        let file = t.name.rsplit('/').next().unwrap_or(&t.name);
        if !file.starts_with('_') {
            out.push(format!("{prefix}/{}", t.name));
        }
    }
    for sub in &chart.dependencies {
        sources(sub, &format!("{prefix}/charts/{}", sub.name()), out);
    }
}

/// Copies the chart directory `src` to `dst` (a new directory) and adds the dump template.
pub fn copy_with_dump(src: &Path, dst: &Path) {
    copy_dir_into(src, dst);
    let dump = dst.join("templates").join(DUMP_FILE);
    std::fs::create_dir_all(dump.parent().unwrap()).unwrap();
    std::fs::write(dump, DUMP_TEMPLATE).unwrap();
}

/// Copies the files under `src` into `dst`, keeping what `dst` has.
pub fn copy_dir_into(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    for e in std::fs::read_dir(src).unwrap() {
        let e = e.unwrap();
        let to = dst.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir_into(&e.path(), &to);
        } else {
            std::fs::copy(e.path(), to).unwrap();
        }
    }
}
