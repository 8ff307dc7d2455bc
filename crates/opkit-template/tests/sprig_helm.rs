//! Sprig as Helm runs it: `tests/sprig-chart` prints function results from literals, one
//! template per family, and `tests/sprig-chart.golden.yaml` is `helm template`'s output for
//! it. When the real `helm` is at hand (`HELM_BIN`, the project's `.tools/bin/helm`, or
//! `PATH`) the golden file is checked against helm's live output first and the test fails
//! loudly if they differ (`SPRIG_GOLDEN_UPDATE=1` rewrites it); without helm the recorded
//! file is used and the test says so. Then every template is rendered with opkit-template
//! plus `sprig::functions()` and compared with its `# Source:` section. Error cases work the
//! same way: each is a one-template chart whose helm error is recorded in
//! `tests/sprig-errors.golden.txt`.
//!
//! Rendering does what Helm does around the engine: templates are named
//! `CHART/templates/FILE`, `<no value>` is removed from the output, and the section text
//! is the output with surrounding white space trimmed. Random functions are checked by shape
//! inside the templates (`len`, `regexMatch`), so their printed results are deterministic.

mod helm_oracle;

use helm_oracle::{check_against_helm, compare_chart, helm, helm_template, here, opkit_render};
use opkit_template::Value;

const CHART: &str = "sprig-chart";

/// Helm reports a `fail` call as `execution error at (NAME:L:C): MESSAGE` instead of Go's
/// `template: NAME:L:C: executing … error calling fail: MESSAGE`; this applies that rewrite.
fn helm_fail_text(go: &str) -> String {
    let Some(rest) = go.strip_prefix("template: ") else {
        return go.to_string();
    };
    match (
        rest.split_once(": executing "),
        rest.split_once(": error calling fail: "),
    ) {
        (Some((loc, _)), Some((_, msg))) => format!("execution error at ({loc}): {msg}"),
        _ => go.to_string(),
    }
}

#[test]
fn sprig_functions_render_what_helm_renders() {
    let failures = compare_chart(
        CHART,
        "sprig-chart.golden.yaml",
        &opkit_template::sprig::functions(),
        &Value::Nil,
    );
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

/// Templates whose Sprig call fails in Helm: `(case name, template text)`.
const ERROR_CASES: &[(&str, &str)] = &[
    ("first-of-string", r#"{{ first "s" }}"#),
    ("first-of-nil", r#"{{ first nil }}"#),
    ("rest-of-map", r#"{{ rest (dict) }}"#),
    ("append-to-int", r#"{{ append 1 2 }}"#),
    ("concat-string", r#"{{ concat (list 1) "x" }}"#),
    ("slice-of-string", r#"{{ slice "abc" 1 }}"#),
    ("slice-out-of-range", r#"{{ slice (list 1 2) 1 5 }}"#),
    ("has-in-string", r#"{{ has 1 "abc" }}"#),
    ("without-nil", r#"{{ without nil 1 }}"#),
    ("div-by-zero", r#"{{ div 1 0 }}"#),
    ("mod-by-zero", r#"{{ mod 1 "0" }}"#),
    ("substr-past-end", r#"{{ substr -1 9 "hello" }}"#),
    ("substr-start-past-end", r#"{{ substr 7 9 "hello" }}"#),
    ("substr-start-after-end", r#"{{ substr 3 2 "hello" }}"#),
    ("repeat-negative", r#"{{ repeat -1 "x" }}"#),
    ("get-from-string", r#"{{ get "a" "b" }}"#),
    ("get-from-list", r#"{{ get (list) "b" }}"#),
    ("hasKey-int-key", r#"{{ hasKey (dict) 1 }}"#),
    ("dig-too-few", r#"{{ dig "a" (dict) }}"#),
    ("dig-not-a-dict", r#"{{ dig "a" "b" "c" }}"#),
    (
        "dig-through-string",
        r#"{{ dig "a" "b" "d" (dict "a" "x") }}"#,
    ),
    ("dig-int-key", r#"{{ dig 1 "d" (dict) }}"#),
    ("indent-string-count", r#"{{ indent "2" "x" }}"#),
    ("trunc-float", r#"{{ trunc 1.5 "x" }}"#),
    ("until-string", r#"{{ until "3" }}"#),
    ("ternary-non-bool", r#"{{ ternary 1 2 "true" }}"#),
    ("chunk-zero", r#"{{ chunk 0 (list 1) }}"#),
    ("toJson-of-nan", r#"{{ mustToJson (float64 "NaN") }}"#),
    ("keys-of-list", r#"{{ keys (list) }}"#),
    ("pick-int-key", r#"{{ pick (dict) 1 }}"#),
    ("quote-no-args-pipe", r#"{{ nil | quote }}"#),
    ("randInt-empty-range", r#"{{ randInt 5 5 }}"#),
    ("randBytes-negative", r#"{{ randBytes -1 }}"#),
    ("set-on-nil", r#"{{ set nil "a" 1 }}"#),
    ("fail-with-message", r#"{{ fail "value x is required" }}"#),
    ("fail-non-string", r#"{{ fail 1 }}"#),
    ("semver-bad-version", r#"{{ semverCompare ">1" "one" }}"#),
    (
        "semver-leading-zero-pre",
        r#"{{ semverCompare ">1" "1.0.0-01" }}"#,
    ),
    ("semver-bad-pre", r#"{{ semverCompare ">1" "1.0.0-a..b" }}"#),
    (
        "semver-huge-segment",
        r#"{{ semverCompare ">1" "99999999999999999999.0.0" }}"#,
    ),
    (
        "semver-bad-constraint",
        r#"{{ semverCompare "~>>1" "1.0.0" }}"#,
    ),
    ("semver-object-bad", r#"{{ semver "1.x" }}"#),
    ("semver-object-no-field", r#"{{ (semver "1.0.0").Nope }}"#),
    (
        "semver-empty-constraint",
        r#"{{ semverCompare "" "1.0.0" }}"#,
    ),
    (
        "semver-bad-or",
        r#"{{ semverCompare ">1 || x y" "1.0.0" }}"#,
    ),
    ("dateModify-of-string", r#"{{ dateModify "1h" "2024" }}"#),
    (
        "dateModify-of-piped-string",
        r#"{{ "2024" | dateModify "1h" }}"#,
    ),
    ("dateModify-of-nil", r#"{{ dateModify "1h" nil }}"#),
    ("unixEpoch-of-int", r#"{{ unixEpoch 5 }}"#),
    ("mustDateModify-no-unit", r#"{{ mustDateModify "5" now }}"#),
    (
        "mustDateModify-unknown-unit",
        r#"{{ mustDateModify "5d" now }}"#,
    ),
    ("mustDateModify-empty", r#"{{ mustDateModify "" now }}"#),
    (
        "mustToDate-bad-field",
        r#"{{ mustToDate "2006-01-02" "2024-1-02" }}"#,
    ),
    (
        "mustToDate-month-range",
        r#"{{ mustToDate "2006-01-02" "2024-13-02" }}"#,
    ),
    (
        "mustToDate-extra-text",
        r#"{{ mustToDate "2006" "2024 \"é\"" }}"#,
    ),
    (
        "mustToDate-day-range",
        r#"{{ mustToDate "Jan 2 2006" "Feb 30 2023" }}"#,
    ),
    ("divf-by-zero", r#"{{ divf 1 0 }}"#),
    ("addf-nan", r#"{{ addf 1 (float64 "NaN") }}"#),
    ("mulf-inf", r#"{{ mulf (float64 "-Inf") 1 }}"#),
];

#[test]
fn sprig_errors_read_as_in_helm() {
    let golden_path = here().join("sprig-errors.golden.txt");
    let recorded = std::fs::read_to_string(&golden_path).unwrap_or_default();
    let dir = tempfile::tempdir().expect("temporary charts");
    match helm() {
        Some(h) => {
            let mut live = String::new();
            for (case, text) in ERROR_CASES {
                let chart = dir.path().join(case);
                std::fs::create_dir_all(chart.join("templates")).expect("chart dir");
                std::fs::write(
                    chart.join("Chart.yaml"),
                    format!("apiVersion: v2\nname: {case}\nversion: 0.1.0\n"),
                )
                .expect("Chart.yaml");
                std::fs::write(chart.join("templates/case.yaml"), text).expect("template");
                let got = match helm_template(&h, "sprig", &chart) {
                    Ok(out) => format!("OK {}", out.replace('\n', "\\n")),
                    Err(e) => e,
                };
                live.push_str(&format!("{case}\t{got}\n"));
            }
            check_against_helm(&golden_path, &recorded, &live);
        }
        None => eprintln!(
            "\n!!!!! sprig_helm: helm not found; comparing with the recorded {}",
            golden_path.display()
        ),
    }
    let golden = std::fs::read_to_string(&golden_path).expect("error golden file present");
    let funcs = opkit_template::sprig::functions();
    let mut failures = Vec::new();
    for line in golden.lines() {
        let (case, want) = line.split_once('\t').expect("case<TAB>error");
        let text = ERROR_CASES
            .iter()
            .find(|(c, _)| *c == case)
            .map(|(_, t)| *t)
            .unwrap_or_else(|| panic!("golden case {case} is not in ERROR_CASES"));
        let name = format!("{case}/templates/case.yaml");
        let got = match opkit_render(&name, text, &funcs, &Value::Nil) {
            Ok(out) => format!("OK ---\\n# Source: {name}\\n{out}\\n"),
            Err(e) => helm_fail_text(&e),
        };
        if got != want {
            failures.push(format!("{case}:\n  helm:  {want}\n  opkit: {got}"));
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}
