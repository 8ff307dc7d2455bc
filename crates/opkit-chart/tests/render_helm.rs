//! The render engine and `helm template`'s output against the real helm (v4.1.4).
//!
//! `tests/render-chart` exercises include, tpl (nested, with its own `define`s), required,
//! lookup, `.Files` (Get, GetBytes, Lines, Glob), `.Capabilities`, `.Chart`, `.Release`,
//! `.Template`, `.Subcharts`, a subchart whose `define` the parent overrides, hooks, test
//! hooks, kinds in and out of Helm's install order, a comment-only document, CRDs and
//! NOTES.txt. Each case below is one `helm template` command; its output is recorded in
//! `tests/render-golden/CASE.yaml`. Error cases are one-template charts whose helm error
//! is recorded in `tests/render-errors.golden.txt`.
//!
//! With helm at hand (`HELM_BIN`, the project's `.tools/bin/helm`, or `PATH`) every
//! recording is first checked against helm's live output and the test fails if they differ
//! (`RENDER_GOLDEN_UPDATE=1` rewrites them); without helm the test says so loudly and uses
//! the recordings. Then opkit renders the same and must match byte for byte.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use opkit_chart::{Chart, Engine, KubeVersion, TemplateOptions};

fn tests_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests")
}

/// helm's stdout, or its error text (everything after `Error: `, without the last line
/// break), for `helm template ARGS` run in `dir` with private helm homes.
fn run_helm(helm: &Path, dir: &Path, args: &[&str]) -> Result<String, String> {
    common::run_helm(helm, dir, args).map_err(|e| e.trim_end_matches('\n').to_string())
}

/// Compares a recording with helm's live text, or rewrites it when asked.
fn check_recording(path: &Path, live: &str) {
    if std::env::var_os("RENDER_GOLDEN_UPDATE").is_some() {
        std::fs::write(path, live).expect("recording written");
        return;
    }
    let recorded = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        recorded == live,
        "{} differs from live helm; rerun with RENDER_GOLDEN_UPDATE=1 if helm is right\n--- live ---\n{live}",
        path.display()
    );
}

fn say_no_helm() {
    eprintln!(
        "!!!!! helm not found (HELM_BIN, .tools/bin/helm, PATH): comparing with the recorded helm output only"
    );
}

/// The case name, helm's arguments, and the same as library options.
fn cases() -> Vec<(&'static str, Vec<&'static str>, TemplateOptions)> {
    let base = || TemplateOptions {
        release_name: "rel".into(),
        namespace: "ns1".into(),
        ..TemplateOptions::default()
    };
    let named = |extra: &[&'static str]| {
        let mut a = vec!["rel", "render-chart", "--namespace", "ns1"];
        a.extend_from_slice(extra);
        a
    };
    vec![
        ("default", named(&[]), base()),
        (
            "include-crds",
            named(&["--include-crds"]),
            TemplateOptions {
                include_crds: true,
                ..base()
            },
        ),
        ("unnamed", vec!["render-chart"], TemplateOptions::default()),
        (
            "skip-tests",
            named(&["--skip-tests"]),
            TemplateOptions {
                skip_tests: true,
                ..base()
            },
        ),
        (
            "no-hooks",
            named(&["--no-hooks"]),
            TemplateOptions {
                no_hooks: true,
                ..base()
            },
        ),
        (
            "show-only",
            named(&[
                "-s",
                "templates/hooks.yaml",
                "-s",
                "templates/work*",
                "-s",
                "charts/sub/templates/configmap.yaml",
            ]),
            TemplateOptions {
                show_only: vec![
                    "templates/hooks.yaml".into(),
                    "templates/work*".into(),
                    "charts/sub/templates/configmap.yaml".into(),
                ],
                ..base()
            },
        ),
        (
            "cluster",
            named(&[
                "--kube-version",
                "1.30.2-gke.100",
                "-a",
                "monitoring.coreos.com/v1",
                "--is-upgrade",
            ]),
            TemplateOptions {
                kube_version: Some(KubeVersion::parse("1.30.2-gke.100").unwrap()),
                api_versions: vec!["monitoring.coreos.com/v1".into()],
                is_upgrade: true,
                ..base()
            },
        ),
    ]
}

/// Renders a chart directory with opkit as `helm template` does (no user values).
fn opkit_template(dir: &Path, opts: &TemplateOptions) -> Result<String, String> {
    let mut chart = Chart::load(dir).map_err(|e| e.to_string())?;
    let values = opkit_chart::prepare(&mut chart, &opkit_template::Value::map(Default::default()))
        .map_err(|e| e.to_string())?;
    opkit_chart::template(&Engine::new(), &chart, &values, opts).map_err(|e| e.to_string())
}

#[test]
fn render_chart_matches_helm_template_byte_for_byte() {
    let helm = common::helm();
    if helm.is_none() {
        say_no_helm();
    }
    let golden = tests_dir().join("render-golden");
    for (name, args, opts) in cases() {
        let recording = golden.join(format!("{name}.yaml"));
        if let Some(helm) = &helm {
            let live = run_helm(helm, &tests_dir(), &args)
                .unwrap_or_else(|e| panic!("helm failed on case {name}: {e}"));
            check_recording(&recording, &live);
        }
        let expected = std::fs::read_to_string(&recording).expect("recorded helm output");
        let got = opkit_template(&tests_dir().join("render-chart"), &opts)
            .unwrap_or_else(|e| panic!("opkit failed on case {name}: {e}"));
        if got != expected {
            let line = got
                .lines()
                .zip(expected.lines())
                .position(|(a, b)| a != b)
                .unwrap_or(0);
            panic!(
                "case {name} differs from helm at line {}:\n  helm:  {:?}\n  opkit: {:?}\n--- opkit ---\n{got}",
                line + 1,
                expected.lines().nth(line),
                got.lines().nth(line)
            );
        }
    }
}

/// One-template charts whose render fails, by case name: `(Chart.yaml extra, values.yaml,
/// template, extra helm arguments)`.
fn error_cases() -> Vec<(
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    Vec<&'static str>,
)> {
    vec![
        ("fail", "", "", r#"x: {{ fail "boom: bad value" }}"#, vec![]),
        (
            "required",
            "",
            "",
            "x: {{ required \"x is required\" .Values.x }}",
            vec![],
        ),
        ("nil-pointer", "", "", "x: {{ .Values.a.b }}", vec![]),
        (
            "include-chain",
            "",
            "",
            "{{ define \"inner\" }}{{ .a.b }}{{ end }}x: {{ include \"inner\" .Values }}",
            vec![],
        ),
        (
            "include-missing",
            "",
            "",
            "x: {{ include \"nope\" . }}",
            vec![],
        ),
        ("undefined-function", "", "", "x: {{ nope }}", vec![]),
        ("unclosed-if", "", "", "{{ if .Values.a }}x: 1", vec![]),
        ("invalid-yaml", "", "", "a: b: c", vec![]),
        ("invalid-yaml-block", "", "", "a:\n  b: 1\n c: 2", vec![]),
        ("kind-list", "", "", "kind: [1]", vec![]),
        ("metadata-number", "", "", "metadata: 5", vec![]),
        (
            "annotation-list",
            "",
            "",
            "metadata:\n  annotations:\n    a: [1]",
            vec![],
        ),
        ("document-list", "", "", "[1, 2]", vec![]),
        ("tpl-parse", "", "", "x: {{ tpl \"{{ .x\" . }}", vec![]),
        (
            "tpl-exec",
            "",
            "",
            "x: {{ tpl \"{{ .Values.a.b }}\" . }}",
            vec![],
        ),
        (
            "index-out-of-range",
            "",
            "list: [1]\n",
            "x: {{ index .Values.list 5 }}",
            vec![],
        ),
        (
            "kube-version",
            "kubeVersion: \"<1.20.0\"\n",
            "",
            "x: 1",
            vec![],
        ),
        (
            "show-only-missing",
            "",
            "",
            "x: 1",
            vec!["-s", "templates/none.yaml"],
        ),
        ("release-name", "", "", "x: 1", vec!["--", "Bad_Name"]),
    ]
}

/// Writes an error case's chart (`CHART` with one template `templates/t.yaml`).
fn write_error_chart(root: &Path, chart_extra: &str, values: &str, template: &str) -> PathBuf {
    let dir = root.join("e");
    std::fs::create_dir_all(dir.join("templates")).unwrap();
    std::fs::write(
        dir.join("Chart.yaml"),
        format!("apiVersion: v2\nname: e\nversion: 0.1.0\n{chart_extra}"),
    )
    .unwrap();
    std::fs::write(dir.join("values.yaml"), values).unwrap();
    std::fs::write(dir.join("templates/t.yaml"), template).unwrap();
    dir
}

fn error_options(extra: &[&str]) -> TemplateOptions {
    let mut opts = TemplateOptions::default();
    let mut i = 0;
    while i < extra.len() {
        match extra[i] {
            "-s" => {
                opts.show_only.push(extra[i + 1].into());
                i += 1;
            }
            "--" => {
                opts.release_name = extra[i + 1].into();
                i += 1;
            }
            other => panic!("the error cases do not use {other}"),
        }
        i += 1;
    }
    opts
}

#[test]
fn render_errors_match_helms_texts() {
    let helm = common::helm();
    if helm.is_none() {
        say_no_helm();
    }
    let recording = tests_dir().join("render-errors.golden.txt");
    let tmp = tempfile::tempdir().unwrap();
    let mut live = String::new();
    let mut ours = BTreeMap::new();
    for (name, chart_extra, values, template, extra) in error_cases() {
        let dir = write_error_chart(tmp.path(), chart_extra, values, template);
        if let Some(helm) = &helm {
            let mut args: Vec<&str> = Vec::new();
            let release_name = extra.iter().position(|a| *a == "--");
            if let Some(p) = release_name {
                args.push(extra[p + 1]);
            }
            args.push("e");
            args.extend(extra.iter().take(release_name.unwrap_or(extra.len())));
            let text = run_helm(helm, tmp.path(), &args)
                .err()
                .unwrap_or_else(|| panic!("helm rendered error case {name}"));
            live.push_str(&format!("{name}\t{}\n", text.replace('\n', "\\n")));
        }
        let got = opkit_template(&dir, &error_options(&extra))
            .err()
            .unwrap_or_else(|| panic!("opkit rendered error case {name}"));
        ours.insert(name, got.replace('\n', "\\n"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
    if helm.is_some() {
        check_recording(&recording, &live);
    }
    let recorded = std::fs::read_to_string(&recording).expect("recorded helm errors");
    let mut failures = Vec::new();
    for line in recorded.lines() {
        let (name, want) = line.split_once('\t').expect("NAME<TAB>TEXT");
        let got = ours.get(name).map(String::as_str).unwrap_or("<no case>");
        if got != want {
            failures.push(format!("{name}:\n  helm:  {want}\n  opkit: {got}"));
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

#[test]
fn endless_include_recursion_stops_at_helms_limit() {
    // helm 4.1.4 reports 1002 nested `error calling include` for this template, ending
    // with its recursion error.
    let tmp = tempfile::tempdir().unwrap();
    let dir = write_error_chart(
        tmp.path(),
        "",
        "",
        "{{ define \"r\" }}{{ include \"r\" . }}{{ end }}x: {{ include \"r\" . }}\n",
    );
    let err = opkit_template(&dir, &TemplateOptions::default()).unwrap_err();
    assert_eq!(err.matches("error calling include").count(), 1002);
    assert!(err.starts_with("template: e/templates/t.yaml:1:50: executing \"e/templates/t.yaml\" at <include \"r\" .>: error calling include: template: e/templates/t.yaml:1:19: executing \"r\" at <include \"r\" .>: "), "{}", &err[..300]);
    assert!(err.ends_with(": error calling include: rendering template has a nested reference name: r: unable to execute template\n\nUse --debug flag to render out invalid YAML"));
}

/// stdout with the output directory written `OUT`, then every file written under it
/// (`=== PATH` and its contents), in path order.
fn output_dir_report(stdout: &str, out: &Path) -> String {
    let mut report = stdout.replace(&out.display().to_string(), "OUT");
    let mut files = Vec::new();
    let mut dirs = vec![out.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).expect("output dir") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                dirs.push(p);
            } else {
                files.push(p);
            }
        }
    }
    files.sort();
    for f in files {
        let rel = f.strip_prefix(out).unwrap().display().to_string();
        report += &format!("=== {rel}\n{}", std::fs::read_to_string(&f).unwrap());
    }
    report
}

#[test]
fn output_dir_writes_the_files_helm_writes() {
    let helm = common::helm();
    if helm.is_none() {
        say_no_helm();
    }
    let recording = tests_dir().join("render-golden/output-dir.txt");
    let tmp = tempfile::tempdir().unwrap();
    if let Some(helm) = &helm {
        let out = tmp.path().join("helm");
        let out_arg = out.display().to_string();
        let stdout = run_helm(
            helm,
            &tests_dir(),
            &[
                "rel",
                "render-chart",
                "--include-crds",
                "--release-name",
                "--output-dir",
                &out_arg,
            ],
        )
        .expect("helm writes the files");
        check_recording(&recording, &output_dir_report(&stdout, &out));
    }
    let out = tmp.path().join("opkit");
    let opts = TemplateOptions {
        release_name: "rel".into(),
        include_crds: true,
        use_release_name: true,
        output_dir: Some(out.clone()),
        ..TemplateOptions::default()
    };
    let stdout = opkit_template(&tests_dir().join("render-chart"), &opts).expect("opkit writes");
    let expected = std::fs::read_to_string(&recording).expect("recorded helm output");
    assert_eq!(output_dir_report(&stdout, &out), expected);
}

/// Large templates render side by side, yet a template still sees what one rendered before
/// it (Helm renders names in descending order) set on `.Values` or on its chart's scope,
/// and a parent sees a subchart's last `.Template` through `.Subcharts`, as in Helm.
#[test]
fn templates_rendered_side_by_side_see_what_earlier_templates_set_as_in_helm() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("side");
    let sub = dir.join("charts/sub");
    std::fs::create_dir_all(dir.join("templates")).unwrap();
    std::fs::create_dir_all(sub.join("templates")).unwrap();
    std::fs::write(
        dir.join("Chart.yaml"),
        "apiVersion: v2\nname: side\nversion: 0.1.0\n",
    )
    .unwrap();
    std::fs::write(dir.join("values.yaml"), "greeting: hello\n").unwrap();
    std::fs::write(
        sub.join("Chart.yaml"),
        "apiVersion: v2\nname: sub\nversion: 0.1.0\n",
    )
    .unwrap();
    // Enough template text for several threads; a comment costs nothing to render.
    let padding = format!("{{{{/* {} */}}}}\n", "x".repeat(40 * 1024));
    let doc = |name: &str, body: &str| {
        format!(
            "{padding}apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n{body}"
        )
    };
    for (i, name) in ["s1", "s2"].iter().enumerate() {
        std::fs::write(
            sub.join(format!("templates/{name}.yaml")),
            doc(name, &format!("  n: \"{i}\"\n")),
        )
        .unwrap();
    }
    std::fs::write(
        dir.join("templates/z-writer.yaml"),
        doc(
            "writer",
            "{{- $_ := set .Values \"seen\" \"set-by-writer\" }}{{- $_ := set $ \"mark\" \"z\" }}\n  own: {{ .Template.Name | quote }}\n",
        ),
    )
    .unwrap();
    for name in ["m-plain", "b-plain"] {
        std::fs::write(
            dir.join(format!("templates/{name}.yaml")),
            doc(
                name,
                "  greeting: {{ .Values.greeting | quote }}\n  own: {{ .Template.Name | quote }}\n",
            ),
        )
        .unwrap();
    }
    std::fs::write(
        dir.join("templates/a-reader.yaml"),
        doc(
            "reader",
            "  seen: {{ .Values.seen | quote }}\n  mark: {{ .mark | quote }}\n  sub: {{ .Subcharts.sub.Template.Name | quote }}\n",
        ),
    )
    .unwrap();
    let opts = TemplateOptions {
        release_name: "rel".into(),
        namespace: "ns1".into(),
        ..TemplateOptions::default()
    };
    let got = opkit_template(&dir, &opts).expect("the chart renders");
    for line in [
        "  seen: \"set-by-writer\"",
        "  mark: \"z\"",
        "  sub: \"side/charts/sub/templates/s1.yaml\"",
        "  own: \"side/templates/m-plain.yaml\"",
        "  own: \"side/templates/z-writer.yaml\"",
    ] {
        assert!(got.lines().any(|l| l == line), "no line {line:?} in\n{got}");
    }
    match common::helm() {
        Some(helm) => {
            let live = run_helm(&helm, root.path(), &["rel", "side", "-n", "ns1"])
                .expect("helm renders the chart");
            assert!(
                got == live,
                "opkit differs from helm\n--- helm ---\n{live}\n--- opkit ---\n{got}"
            );
        }
        None => say_no_helm(),
    }
}
