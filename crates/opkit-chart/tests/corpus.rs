//! The six real charts of the shared corpus (`../shared/corpus/helm/charts`: cert-manager,
//! grafana, ingress-nginx, kube-state-metrics, nginx with Bitnami's `common` library chart,
//! prometheus with four vendored subcharts) load, and `prepare` accepts the values of each
//! golden command (`golden/NAME.cmd`). Every template Helm rendered in the golden output
//! (`# Source:` lines) is one of the prepared chart tree's templates, so disabled subcharts and
//! template paths agree. When the real helm is at hand, each chart is also rendered by helm
//! with a template that dumps `.Values`, and opkit's prepared values must print the same.
//! Without the corpus the test says so loudly and passes.

mod common;

use std::path::PathBuf;

use common::{copy_with_dump, dump_values, dumped, helm, helm_template, sources};
use opkit_chart::{Chart, ValueOptions, prepare};

fn corpus() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus/helm")
}

const CHARTS: &[&str] = &[
    "cert-manager",
    "grafana",
    "ingress-nginx",
    "kube-state-metrics",
    "nginx",
    "prometheus",
];

/// The `--set` values and other value flags of a golden command (`--namespace` is not a
/// values flag).
fn value_flags(cmd: &str) -> Vec<String> {
    let words: Vec<&str> = cmd.split_whitespace().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < words.len() {
        if words[i].starts_with("--set") || words[i] == "-f" || words[i] == "--values" {
            out.push(words[i].to_string());
            out.push(words[i + 1].to_string());
            i += 2;
        } else {
            i += 1;
        }
    }
    out
}

fn options(flags: &[String]) -> ValueOptions {
    let mut o = ValueOptions::default();
    for pair in flags.chunks(2) {
        let list = match pair[0].as_str() {
            "--set" => &mut o.values,
            "--set-string" => &mut o.string_values,
            "--set-json" => &mut o.json_values,
            "--set-file" => &mut o.file_values,
            "--set-literal" => &mut o.literal_values,
            _ => &mut o.value_files,
        };
        list.push(pair[1].clone());
    }
    o
}

#[test]
fn corpus_charts_load_and_prepare_as_helm_does() {
    let root = corpus();
    if !root.join("charts").exists() {
        eprintln!(
            "\n!!!!! corpus: {} not found; the corpus charts were NOT checked",
            root.display()
        );
        return;
    }
    let helm = helm();
    if helm.is_none() {
        eprintln!("\n!!!!! corpus: helm not found; values are not compared with helm's");
    }
    let mut failures = Vec::new();
    for name in CHARTS {
        let dir = root.join("charts").join(name);
        let cmd = std::fs::read_to_string(root.join("golden").join(format!("{name}.cmd")))
            .expect("golden command");
        let flags = value_flags(&cmd);
        let mut chart = Chart::load(&dir).unwrap_or_else(|e| panic!("{name}: {e}"));
        let user = options(&flags)
            .merge_values()
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let values = prepare(&mut chart, &user).unwrap_or_else(|e| panic!("{name}: {e}"));
        let mut mine = Vec::new();
        sources(&chart, name, &mut mine);
        let golden = std::fs::read_to_string(root.join("golden").join(format!("{name}.yaml")))
            .expect("golden output");
        for src in golden.lines().filter_map(|l| l.strip_prefix("# Source: ")) {
            if !mine.iter().any(|m| m == src) {
                failures.push(format!(
                    "{name}: helm rendered {src}, not in opkit's chart tree"
                ));
            }
        }
        if let Some(helm) = &helm {
            let tmp = tempfile::tempdir().unwrap();
            let copy = tmp.path().join(name);
            copy_with_dump(&dir, &copy);
            let live = helm_template(helm, &copy, &flags)
                .unwrap_or_else(|e| panic!("{name}: helm failed: {e}"));
            let want = dumped(&live);
            let with_dump = Chart::load(&copy).unwrap();
            let got = dump_values(&with_dump, values);
            if got != want {
                failures.push(format!(
                    "{name}: values differ\nhelm:  {want}\nopkit: {got}"
                ));
            }
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}
