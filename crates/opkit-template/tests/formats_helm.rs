//! Helm's data-format functions as Helm runs them: `tests/formats-chart` puts nasty values
//! (`values.yaml`: YAML 1.1 words, numbers of every form, keys that sort by go-yaml's
//! number-aware order, strings that need each quoting style, multi-line and long strings)
//! through `toYaml`, `fromYaml`, `toJson` and friends, and `tests/formats-chart.golden.yaml`
//! is `helm template`'s output for it (checked against live helm when it is at hand).
//! opkit renders each template with `sprig::functions()` plus `formats::functions()` and
//! `.Values` read from `values.yaml` with opkit's own YAML reader, as Helm reads values.

mod helm_oracle;

use std::collections::BTreeMap;
use std::path::PathBuf;

use helm_oracle::{compare_chart, here};
use opkit_template::Value;

#[test]
fn format_functions_render_what_helm_renders() {
    let values_text = std::fs::read_to_string(here().join("formats-chart/values.yaml"))
        .expect("values.yaml present");
    let values = opkit_template::yaml::from_yaml(&values_text).expect("values.yaml reads");
    let data = Value::map(BTreeMap::from([("Values".to_string(), values)]));
    let mut funcs = opkit_template::sprig::functions();
    funcs.extend(opkit_template::formats::functions());
    let failures = compare_chart("formats-chart", "formats-chart.golden.yaml", &funcs, &data);
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

/// The corpus charts' own values files (`../shared/corpus/helm/charts/*/values.yaml`, real
/// values of cert-manager, grafana, ingress-nginx, …) read by opkit's YAML reader and
/// written back by `toYaml` must equal what live helm prints for `{{ toYaml .Values }}`
/// over the same file. Needs both the corpus and helm; says so loudly when either is
/// missing.
#[test]
fn corpus_values_files_round_trip_through_to_yaml_as_in_helm() {
    let corpus =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus/helm/charts");
    let (Some(helm), true) = (helm_oracle::helm(), corpus.is_dir()) else {
        eprintln!(
            "\n!!!!! formats_helm: helm or ../shared/corpus/helm missing; \
             the corpus values round trip is skipped"
        );
        return;
    };
    let mut values_files: Vec<PathBuf> = Vec::new();
    let mut stack = vec![corpus];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).expect("corpus dir").flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.file_name().is_some_and(|n| n == "values.yaml") {
                values_files.push(p);
            }
        }
    }
    values_files.sort();
    assert!(values_files.len() >= 6, "corpus values files found");
    let work = tempfile::tempdir().expect("temporary chart");
    let chart = work.path().join("probe");
    std::fs::create_dir_all(chart.join("templates")).expect("chart dir");
    std::fs::write(
        chart.join("Chart.yaml"),
        "apiVersion: v2\nname: probe\nversion: 0.1.0\n",
    )
    .expect("Chart.yaml");
    // A block scalar keeps whatever toYaml prints inside valid YAML for helm's own check.
    std::fs::write(
        chart.join("templates/values.yaml"),
        "values: |\n{{ toYaml .Values | indent 2 }}\n",
    )
    .expect("template");
    let mut funcs = opkit_template::sprig::functions();
    funcs.extend(opkit_template::formats::functions());
    let mut failures = Vec::new();
    for file in &values_files {
        let text = std::fs::read_to_string(file).expect("values file");
        std::fs::write(chart.join("values.yaml"), &text).expect("values copied");
        let live = helm_oracle::helm_template(&helm, "probe", &chart).expect("helm renders");
        let want = live
            .split_once("# Source: probe/templates/values.yaml\n")
            .map(|(_, body)| body.trim().to_string())
            .expect("a section");
        let values = opkit_template::yaml::from_yaml_map(&text).expect("values read");
        let data = Value::map(BTreeMap::from([("Values".to_string(), values)]));
        let got = helm_oracle::opkit_render(
            "probe/templates/values.yaml",
            "values: |\n{{ toYaml .Values | indent 2 }}\n",
            &funcs,
            &data,
        )
        .expect("opkit renders");
        if got != want {
            let line = got
                .lines()
                .zip(want.lines())
                .position(|(g, w)| g != w)
                .unwrap_or(0);
            failures.push(format!(
                "{}: line {}:\n  helm:  {:?}\n  opkit: {:?}",
                file.display(),
                line + 1,
                want.lines().nth(line),
                got.lines().nth(line)
            ));
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}
