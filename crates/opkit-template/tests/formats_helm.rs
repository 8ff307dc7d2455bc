//! Helm's data-format functions as Helm runs them: `tests/formats-chart` puts nasty values
//! (`values.yaml`: YAML 1.1 words, numbers of every form, keys that sort by go-yaml's
//! number-aware order, strings that need each quoting style, multi-line and long strings)
//! through `toYaml`, `fromYaml`, `toJson` and friends, and `tests/formats-chart.golden.yaml`
//! is `helm template`'s output for it (checked against live helm when it is at hand).
//! opkit renders each template with `sprig::functions()` plus `formats::functions()` and
//! `.Values` read from `values.yaml` with opkit's own YAML reader, as Helm reads values.

mod helm_oracle;

use std::collections::BTreeMap;

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
