//! The helm corpus (`../shared/corpus/helm`): six real charts and the exact stdout of the
//! `helm template` command beside each (`golden/NAME.cmd`, `golden/NAME.yaml`), rendered
//! in-process and compared byte for byte: every chart must be identical. Without the corpus
//! (a user's clone) the test says so loudly and passes.

use std::path::{Path, PathBuf};

use opkit_chart::{Chart, Engine, TemplateOptions, ValueOptions};

fn corpus() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus/helm");
    dir.join("golden").is_dir().then_some(dir)
}

/// Runs a corpus command (`helm template NAME CHART FLAGS…`) with opkit in `dir`.
fn render(dir: &Path, cmd: &str) -> Result<String, String> {
    let words: Vec<&str> = cmd.split_whitespace().collect();
    let ["helm", "template", name, chart, flags @ ..] = &words[..] else {
        return Err(format!("unexpected command {cmd:?}"));
    };
    let mut opts = TemplateOptions {
        release_name: name.to_string(),
        ..TemplateOptions::default()
    };
    let mut user = ValueOptions::default();
    let mut i = 0;
    while i < flags.len() {
        let value = flags.get(i + 1).map(|v| v.to_string());
        match (flags[i], value) {
            ("--namespace" | "-n", Some(ns)) => opts.namespace = ns,
            ("--set", Some(v)) => user.values.push(v),
            ("--set-string", Some(v)) => user.string_values.push(v),
            ("-f" | "--values", Some(v)) => user.value_files.push(v),
            (flag, _) => return Err(format!("{flag} is not supported by this harness")),
        }
        i += 2;
    }
    let user = user.merge_values().map_err(|e| e.to_string())?;
    let mut chart = Chart::load(&dir.join(chart)).map_err(|e| e.to_string())?;
    let values = opkit_chart::prepare(&mut chart, &user).map_err(|e| e.to_string())?;
    opkit_chart::template(&Engine::new(), &chart, &values, &opts).map_err(|e| e.to_string())
}

/// The first differing line of two outputs, for the report.
fn first_difference(want: &str, got: &str) -> String {
    let (w, g): (Vec<&str>, Vec<&str>) = (want.lines().collect(), got.lines().collect());
    let n = (0..w.len().max(g.len()))
        .find(|&i| w.get(i) != g.get(i))
        .unwrap_or(0);
    format!(
        "line {}: helm {:?}, opkit {:?}",
        n + 1,
        w.get(n).copied().unwrap_or("<end>"),
        g.get(n).copied().unwrap_or("<end>")
    )
}

#[test]
fn corpus_charts_render_byte_identical_to_helm_template() {
    let Some(dir) = corpus() else {
        eprintln!("!!!!! ../shared/corpus/helm is absent: the helm corpus comparison did not run");
        return;
    };
    let mut cmds: Vec<PathBuf> = std::fs::read_dir(dir.join("golden"))
        .expect("golden dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "cmd"))
        .collect();
    cmds.sort();
    assert!(!cmds.is_empty(), "no corpus commands found");
    let mut problems = Vec::new();
    for cmd_path in cmds {
        let name = cmd_path.file_stem().unwrap().to_string_lossy().to_string();
        let cmd = std::fs::read_to_string(&cmd_path).expect("command");
        let want = std::fs::read_to_string(cmd_path.with_extension("yaml")).expect("golden");
        let result = render(&dir, cmd.trim());
        let identical = result.as_deref() == Ok(want.as_str());
        let detail = match &result {
            Ok(_) if identical => "byte-identical".to_string(),
            Ok(got) => format!("differs at {}", first_difference(&want, got)),
            Err(e) => format!("fails: {}", e.lines().next().unwrap_or_default()),
        };
        eprintln!("corpus {name}: {detail}");
        if !identical {
            problems.push(format!("{name}: {detail}"));
        }
    }
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}
