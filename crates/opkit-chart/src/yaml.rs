//! Reading rendered YAML the way Helm's `sigs.k8s.io/yaml` does (YAML to JSON), with
//! go-yaml's error texts (`yaml: line N: PROBLEM`), which `helm template` prints when a
//! rendered manifest is not valid YAML. go-yaml is a port of libyaml, the parser under
//! `serde_yaml`, so the problems are worded alike; only the line differs: go-yaml reports
//! a scanner problem's line 1-based and a parser problem's 0-based, and neither when the
//! problem is on the first line (its 0-based line is 0).

/// Parses one YAML document into JSON data, or returns Go's error text.
pub(crate) fn to_json(doc: &str) -> Result<serde_json::Value, String> {
    serde_yaml::from_str::<serde_json::Value>(doc).map_err(|e| {
        format!(
            "error converting YAML to JSON: yaml: {}",
            go_yaml_message(&e)
        )
    })
}

/// go-yaml's `line N: PROBLEM` for a libyaml error.
fn go_yaml_message(e: &serde_yaml::Error) -> String {
    let shown = e.to_string();
    // libyaml's text is `PROBLEM at line L column C[, CONTEXT ...]`.
    let problem = shown
        .split(" at line ")
        .next()
        .unwrap_or(&shown)
        .split(" at position ")
        .next()
        .unwrap_or(&shown)
        .to_string();
    let scanner = format!("{e:?}").contains("kind: SCANNER");
    let line = match e.location().map(|l| l.line().saturating_sub(1)) {
        Some(0) | None => 0,
        Some(l) if scanner => l + 1,
        Some(l) => l,
    };
    if line == 0 {
        problem
    } else {
        format!("line {line}: {problem}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parser_errors_report_go_yamls_zero_based_line() {
        // helm: `yaml: line 2: did not find expected key` for this document.
        let err = to_json("a: 1\nb: 2\n c: 3\nd: [").unwrap_err();
        assert!(
            err.starts_with("error converting YAML to JSON: yaml: line "),
            "{err}"
        );
    }

    #[test]
    fn scanner_errors_report_a_one_based_line() {
        let err = to_json("x: 1\na: b: c").unwrap_err();
        assert_eq!(
            err,
            "error converting YAML to JSON: yaml: line 2: mapping values are not allowed in this context"
        );
        // On the first line go-yaml names no line.
        let err = to_json("a: b: c").unwrap_err();
        assert_eq!(
            err,
            "error converting YAML to JSON: yaml: mapping values are not allowed in this context"
        );
    }
}
