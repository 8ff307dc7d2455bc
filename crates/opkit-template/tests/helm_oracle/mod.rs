//! The real `helm` as the oracle for chart tests: finding it, running `helm template` with
//! private helm homes, checking a recorded golden file against its live output, and
//! rendering a template the way Helm's engine does around opkit-template.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use opkit_template::{Function, Templates, Value};

/// The crate's `tests` folder.
pub fn here() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests")
}

/// The helm binary: `HELM_BIN`, the project's `.tools/bin/helm`, or `helm` on `PATH`.
pub fn helm() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("HELM_BIN") {
        return Some(PathBuf::from(p));
    }
    let tools = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.tools/bin/helm");
    if tools.exists() {
        return Some(tools);
    }
    let on_path = Command::new("helm").arg("version").output();
    on_path
        .ok()
        .filter(|o| o.status.success())
        .map(|_| PathBuf::from("helm"))
}

/// Runs `helm template RELEASE CHART_DIR` with private helm homes; stdout, or the error line.
pub fn helm_template(helm: &Path, release: &str, chart: &Path) -> Result<String, String> {
    let home = tempfile::tempdir().expect("temporary helm home");
    let out = Command::new(helm)
        .args(["template", release])
        .arg(chart)
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
    let block = err[start + "Error: ".len()..]
        .split("\n\n")
        .next()
        .unwrap_or_default();
    Err(go_error_text(block))
}

/// Go's one-line error text from helm's report. Helm reprints some execution errors as
/// `NAME:L:C\n  executing "NAME" at <X>:\n    MESSAGE`; this puts them back in Go's form,
/// `template: NAME:L:C: executing "NAME" at <X>: MESSAGE`.
fn go_error_text(block: &str) -> String {
    let lines: Vec<&str> = block.lines().collect();
    match lines[..] {
        [loc, exec, msg] if exec.starts_with("  executing ") => {
            format!("template: {loc}: {} {}", exec.trim(), msg.trim())
        }
        _ => block.replace('\n', "\\n"),
    }
}

/// Checks `recorded` against helm's live `output`; rewrites it when asked
/// (`SPRIG_GOLDEN_UPDATE=1`).
pub fn check_against_helm(path: &Path, recorded: &str, live: &str) {
    if std::env::var_os("SPRIG_GOLDEN_UPDATE").is_some() {
        std::fs::write(path, live).expect("golden file written");
        return;
    }
    assert!(
        recorded == live,
        "\n!!!!! {} differs from the live helm output; rerun with SPRIG_GOLDEN_UPDATE=1 \
         if helm's behaviour is the new truth\n--- live ---\n{live}",
        path.display()
    );
}

/// Renders one template the way Helm does (output with `<no value>` removed and
/// surrounding white space trimmed), or returns the engine's error text.
pub fn opkit_render(
    name: &str,
    text: &str,
    funcs: &BTreeMap<String, Function>,
    data: &Value,
) -> Result<String, String> {
    let mut t = Templates::new(name);
    t.add_funcs(funcs.clone());
    t.parse(name, text).map_err(|e| e.to_string())?;
    let out = t.execute(name, data).map_err(|e| e.to_string())?;
    Ok(out.replace("<no value>", "").trim().to_string())
}

/// The golden output of chart `chart` split into `(file, content)` sections.
pub fn sections(chart: &str, golden: &str) -> Vec<(String, String)> {
    let marker = format!("---\n# Source: {chart}/templates/");
    golden
        .split(&marker)
        .skip(1)
        .map(|s| {
            let (file, body) = s.split_once('\n').expect("a header line");
            (file.to_string(), body.trim_end_matches('\n').to_string())
        })
        .collect()
}

/// Renders every template of `chart` (under `tests/`) with `funcs` and `data` and compares
/// it with its section of `golden_file`, after checking that file against live helm
/// output when helm is at hand. Returns the differences found.
pub fn compare_chart(
    chart: &str,
    golden_file: &str,
    funcs: &BTreeMap<String, Function>,
    data: &Value,
) -> Vec<String> {
    let dir = here().join(chart);
    let golden_path = here().join(golden_file);
    let recorded = std::fs::read_to_string(&golden_path).unwrap_or_default();
    match helm() {
        Some(h) => {
            let live = helm_template(&h, "sprig", &dir).expect("helm renders the chart");
            check_against_helm(&golden_path, &recorded, &live);
        }
        None => eprintln!(
            "\n!!!!! {chart}: helm not found (HELM_BIN, .tools/bin/helm, PATH); \
             comparing with the recorded {}",
            golden_path.display()
        ),
    }
    let golden = std::fs::read_to_string(&golden_path).expect("golden file present");
    let secs = sections(chart, &golden);
    let files: Vec<_> = std::fs::read_dir(dir.join("templates"))
        .expect("templates dir")
        .map(|e| {
            e.expect("dir entry")
                .file_name()
                .into_string()
                .expect("UTF-8 name")
        })
        .collect();
    assert_eq!(
        secs.len(),
        files.len(),
        "one golden section per template file"
    );
    let mut failures = Vec::new();
    for (file, want) in &secs {
        let text =
            std::fs::read_to_string(dir.join("templates").join(file)).expect("template file");
        let name = format!("{chart}/templates/{file}");
        match opkit_render(&name, &text, funcs, data) {
            Ok(got) if got == *want => {}
            Ok(got) => {
                for (g, w) in got.lines().zip(want.lines()) {
                    if g != w {
                        failures.push(format!("{file}:\n  helm:  {w}\n  opkit: {g}"));
                    }
                }
                if got.lines().count() != want.lines().count() {
                    failures.push(format!("{file}: line counts differ\n{got}"));
                }
            }
            Err(e) => failures.push(format!("{file}: opkit failed: {e}")),
        }
    }
    failures
}
