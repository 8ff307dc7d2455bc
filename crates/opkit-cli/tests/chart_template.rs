//! `opkit chart template` against `helm template`'s recorded output: opkit-chart's own
//! helm-checked chart (`crates/opkit-chart/tests/render-chart`, recordings in
//! `render-golden/`, kept equal to live helm by opkit-chart's `render_helm` test) and the
//! helm corpus (`../shared/corpus/helm/golden/NAME.cmd` run with `opkit chart template`
//! instead of `helm template`). stdout must match byte for byte, and errors come as helm's
//! `Error: …` line. Without the corpus the corpus part says so loudly and passes.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn chart_tests() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../opkit-chart/tests")
}

fn opkit_template(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_opkit"))
        .args(["chart", "template"])
        .args(args)
        .current_dir(dir)
        .env_remove("HELM_NAMESPACE")
        .output()
        .expect("opkit runs")
}

fn stdout_of(out: &Output) -> String {
    assert!(
        out.status.success(),
        "opkit failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).expect("UTF-8 stdout")
}

#[test]
fn the_render_chart_prints_what_helm_template_prints() {
    let cases: &[(&str, &[&str])] = &[
        ("default", &["rel", "render-chart", "--namespace", "ns1"]),
        (
            "include-crds",
            &["rel", "render-chart", "-n", "ns1", "--include-crds"],
        ),
        ("unnamed", &["render-chart"]),
        (
            "skip-tests",
            &["rel", "render-chart", "-n", "ns1", "--skip-tests"],
        ),
        (
            "no-hooks",
            &["rel", "render-chart", "-n", "ns1", "--no-hooks"],
        ),
        (
            "show-only",
            &[
                "rel",
                "render-chart",
                "-n",
                "ns1",
                "-s",
                "templates/hooks.yaml",
                "--show-only=templates/work*",
                "-s",
                "charts/sub/templates/configmap.yaml",
            ],
        ),
        (
            "cluster",
            &[
                "rel",
                "render-chart",
                "-n",
                "ns1",
                "--kube-version",
                "1.30.2-gke.100",
                "-a",
                "monitoring.coreos.com/v1",
                "--is-upgrade",
            ],
        ),
    ];
    for (golden, args) in cases {
        let want =
            std::fs::read_to_string(chart_tests().join(format!("render-golden/{golden}.yaml")))
                .expect("recorded helm output");
        let got = stdout_of(&opkit_template(&chart_tests(), args));
        assert!(got == want, "case {golden} differs from helm:\n{got}");
    }
}

#[test]
fn errors_are_helms_error_line_and_a_failure_exit() {
    let out = opkit_template(
        &chart_tests(),
        &["rel", "render-chart", "-s", "templates/none.yaml"],
    );
    assert!(!out.status.success());
    assert!(out.stdout.is_empty());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "Error: could not find template templates/none.yaml in chart\n"
    );
    let out = opkit_template(&chart_tests(), &["a", "b", "c", "d"]);
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "Error: expected at most two arguments, unexpected arguments: c, d\n"
    );
    let out = opkit_template(
        &chart_tests(),
        &["--name-template", "{{ \"x\" | upper }}", "render-chart"],
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "Error: release name check failed: release name \"X\": invalid release name, must match regex ^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$ and the length must not be longer than 53\n"
    );
}

#[test]
fn a_name_template_names_the_release() {
    let out = opkit_template(
        &chart_tests(),
        &[
            "--name-template",
            "{{ \"named\" | lower }}-{{ add 1 2 }}",
            "render-chart",
            "-s",
            "charts/sub/templates/configmap.yaml",
        ],
    );
    let got = stdout_of(&out);
    assert!(got.contains("  name: named-3-sub\n"), "{got}");
}

#[test]
fn corpus_commands_print_what_helm_printed() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus/helm");
    if !corpus.join("golden").is_dir() {
        eprintln!("!!!!! ../shared/corpus/helm is absent: the CLI corpus comparison did not run");
        return;
    }
    for name in [
        "cert-manager",
        "grafana",
        "ingress-nginx",
        "kube-state-metrics",
        "nginx",
        "prometheus",
    ] {
        let cmd = std::fs::read_to_string(corpus.join(format!("golden/{name}.cmd"))).unwrap();
        let words: Vec<&str> = cmd.split_whitespace().collect();
        assert_eq!(&words[..2], ["helm", "template"], "{name}.cmd");
        let want = std::fs::read_to_string(corpus.join(format!("golden/{name}.yaml"))).unwrap();
        let got = stdout_of(&opkit_template(&corpus, &words[2..]));
        assert!(got == want, "corpus {name} differs from helm");
        eprintln!("corpus {name}: byte-identical through the CLI");
    }
}
