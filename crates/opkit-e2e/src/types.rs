//! kuttl's typed objects (`kuttl.dev/v1beta1`, `kudo.dev/v1alpha1` as an alias): commands,
//! `TestStep`, `TestAssert`, `TestFile` and their parts, with kuttl's JSON field names.

use std::collections::BTreeMap;

use serde::Deserialize;

/// The API group of kuttl's own kinds.
pub(crate) const GROUP: &str = "kuttl.dev";
/// KUDO's group, which kuttl read until v0.9; accepted as an alias, with a warning.
pub(crate) const LEGACY_GROUP: &str = "kudo.dev";

/// A command of a suite, a step or an assert (kuttl's `Command`).
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct Command {
    /// A command line, env-expanded and split shell-style (no pipes or globs).
    pub command: String,
    /// A shell script run with `sh -c`.
    pub script: String,
    /// Append `--namespace <ns>` unless `-n`/`--namespace` is there (`command` only).
    pub namespaced: bool,
    /// A non-zero exit (or a timeout) does not fail the step.
    pub ignore_failure: bool,
    /// Run in the background until the suite ends (suite commands only).
    pub background: bool,
    /// Seconds; 0 uses the caller's timeout, negative means none.
    pub timeout: i64,
    /// Do not log the command's output.
    pub skip_log_output: bool,
}

pub(crate) const COMMAND_FIELDS: &[&str] = &[
    "command",
    "script",
    "namespaced",
    "ignoreFailure",
    "background",
    "timeout",
    "skipLogOutput",
];

/// `metadata` of a kuttl object (only the name matters).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Meta {
    pub name: String,
}

/// An object to delete before a step (`TestStep.delete`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct DeleteRef {
    pub api_version: String,
    pub kind: String,
    pub name: String,
    pub namespace: String,
    pub labels: BTreeMap<String, String>,
}

/// `kind: TestStep`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct TestStep {
    pub metadata: Meta,
    pub index: i64,
    pub apply: Vec<String>,
    pub assert: Vec<String>,
    pub error: Vec<String>,
    pub delete: Vec<DeleteRef>,
    pub commands: Vec<Command>,
    pub kubeconfig: String,
    pub kubeconfig_loading: String,
    pub context: String,
    pub unit_test: bool,
}

pub(crate) const TEST_STEP_FIELDS: &[&str] = &[
    "index",
    "apply",
    "assert",
    "error",
    "delete",
    "commands",
    "kubeconfig",
    "kubeconfigLoading",
    "context",
    "unitTest",
];

/// A command of a `TestAssert` (it is an assertion: no background, no ignoreFailure).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct AssertCommand {
    pub command: String,
    pub script: String,
    pub namespaced: bool,
    pub skip_log_output: bool,
}

/// A collector: logs, events or a command's output gathered when an assert fails.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct Collector {
    #[serde(rename = "type")]
    pub kind: String,
    pub pod: String,
    pub namespace: String,
    pub container: String,
    pub selector: String,
    pub tail: i64,
    pub command: String,
}

/// A resource bound to a CEL variable (`TestAssert.resourceRefs`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct ResourceRef {
    pub api_version: String,
    pub kind: String,
    pub namespace: String,
    pub name: String,
    #[serde(rename = "ref")]
    pub reference: String,
}

/// One CEL assertion.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct Expression {
    pub cel_expr: String,
}

/// `kind: TestAssert`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct TestAssert {
    pub timeout: i64,
    pub commands: Vec<AssertCommand>,
    pub collectors: Vec<Collector>,
    pub resource_refs: Vec<ResourceRef>,
    pub assert_all: Vec<Expression>,
    pub assert_any: Vec<Expression>,
}

pub(crate) const TEST_ASSERT_FIELDS: &[&str] = &[
    "timeout",
    "commands",
    "collectors",
    "resourceRefs",
    "assertAll",
    "assertAny",
];

/// A label selector (`TestFile.testRunSelector`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct LabelSelector {
    pub match_labels: BTreeMap<String, String>,
    pub match_expressions: Vec<SelectorRequirement>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub(crate) struct SelectorRequirement {
    pub key: String,
    pub operator: String,
    pub values: Vec<String>,
}

impl LabelSelector {
    /// Whether `labels` satisfy the selector; an unknown operator is an error.
    pub(crate) fn matches(&self, labels: &BTreeMap<String, String>) -> Result<bool, String> {
        for (k, v) in &self.match_labels {
            if labels.get(k) != Some(v) {
                return Ok(false);
            }
        }
        for r in &self.match_expressions {
            let value = labels.get(&r.key);
            let ok = match r.operator.as_str() {
                "In" => value.is_some_and(|v| r.values.contains(v)),
                "NotIn" => !value.is_some_and(|v| r.values.contains(v)),
                "Exists" => value.is_some(),
                "DoesNotExist" => value.is_none(),
                other => return Err(format!("{other:?} is not a valid label selector operator")),
            };
            if !ok {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

/// `kind: TestFile`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct TestFile {
    pub test_run_selector: Option<LabelSelector>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_match_labels_and_expressions() {
        let sel: LabelSelector = serde_json::from_value(serde_json::json!({
            "matchLabels": {"a": "1"},
            "matchExpressions": [{"key": "b", "operator": "In", "values": ["x", "y"]}]
        }))
        .unwrap();
        let labels = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        assert!(sel.matches(&labels(&[("a", "1"), ("b", "y")])).unwrap());
        assert!(!sel.matches(&labels(&[("a", "1"), ("b", "z")])).unwrap());
        assert!(!sel.matches(&labels(&[("b", "x")])).unwrap());
    }
}
