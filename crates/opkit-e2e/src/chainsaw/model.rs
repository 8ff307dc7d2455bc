//! chainsaw's test format (`chainsaw.kyverno.io/v1alpha1` `Test`, as in chainsaw v0.2), read
//! with serde. Fields opkit does not run yet are refused by name (`deny_unknown_fields`), and an
//! operation is parsed by hand so that one opkit does not support fails the load naming it —
//! a test never passes by skipping what it asked for.

use std::time::Duration;

use serde::Deserialize;
use serde_json::{Map, Value};

/// The API version of the `Test` kind.
pub(crate) const API_VERSION: &str = "chainsaw.kyverno.io/v1alpha1";

/// `kind: Test`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Test {
    #[allow(dead_code)]
    pub api_version: String,
    #[allow(dead_code)]
    pub kind: String,
    #[serde(default)]
    pub metadata: Value,
    pub spec: TestSpec,
}

impl Test {
    /// `metadata.name` ("" when missing).
    pub(crate) fn name(&self) -> &str {
        self.metadata
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
    }
}

/// `Test.spec`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub(crate) struct TestSpec {
    #[allow(dead_code)]
    pub description: String,
    pub timeouts: Timeouts,
    pub skip: Option<bool>,
    pub concurrent: Option<bool>,
    pub skip_delete: Option<bool>,
    pub template: Option<bool>,
    pub namespace: String,
    pub bindings: Vec<Binding>,
    pub steps: Vec<Step>,
    pub catch: Vec<RawOperation>,
}

/// A step (`spec.steps[]`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub(crate) struct Step {
    pub name: String,
    #[allow(dead_code)]
    pub description: String,
    pub timeouts: Timeouts,
    pub skip_delete: Option<bool>,
    pub template: Option<bool>,
    pub bindings: Vec<Binding>,
    #[serde(rename = "try")]
    pub try_: Vec<RawOperation>,
    pub catch: Vec<RawOperation>,
    pub finally: Vec<RawOperation>,
    pub cleanup: Vec<RawOperation>,
}

/// An operation as written; [`Operation::parse`] gives it meaning.
pub(crate) type RawOperation = Map<String, Value>;

/// A `name`/`value` binding (also an `env` entry); `value` may be an expression.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Binding {
    pub name: String,
    #[serde(default)]
    pub value: Value,
}

/// Per-kind timeouts, as Go durations (`5s`, `1m30s`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct Timeouts {
    pub apply: Option<String>,
    pub assert: Option<String>,
    pub cleanup: Option<String>,
    pub delete: Option<String>,
    pub error: Option<String>,
    pub exec: Option<String>,
}

/// Timeouts resolved to durations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Resolved {
    pub apply: Duration,
    pub assert: Duration,
    pub cleanup: Duration,
    pub delete: Duration,
    pub error: Duration,
    pub exec: Duration,
}

impl Default for Resolved {
    /// chainsaw's defaults.
    fn default() -> Resolved {
        Resolved {
            apply: Duration::from_secs(5),
            assert: Duration::from_secs(30),
            cleanup: Duration::from_secs(30),
            delete: Duration::from_secs(15),
            error: Duration::from_secs(30),
            exec: Duration::from_secs(5),
        }
    }
}

impl Resolved {
    /// These timeouts with `t`'s set ones on top.
    pub(crate) fn with(self, t: &Timeouts) -> Result<Resolved, String> {
        let pick = |own: &Option<String>, base: Duration| match own {
            Some(s) => go_duration(s),
            None => Ok(base),
        };
        Ok(Resolved {
            apply: pick(&t.apply, self.apply)?,
            assert: pick(&t.assert, self.assert)?,
            cleanup: pick(&t.cleanup, self.cleanup)?,
            delete: pick(&t.delete, self.delete)?,
            error: pick(&t.error, self.error)?,
            exec: pick(&t.exec, self.exec)?,
        })
    }
}

/// A Go duration (`300ms`, `1.5s`, `2m`, `1h30m`), not negative.
pub(crate) fn go_duration(text: &str) -> Result<Duration, String> {
    opkit_apimachinery::duration::parse_std(text.trim())
}

/// A resource taken from a file (path or glob, relative to the test) or written inline.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub(crate) struct ResourceOp {
    pub bindings: Vec<Binding>,
    pub file: String,
    pub resource: Option<Value>,
    pub template: Option<bool>,
    pub timeout: Option<String>,
    pub expect: Vec<Expectation>,
}

/// An `expect` entry: when `match` matches the resource, `check` must hold (`$error` bound).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct Expectation {
    #[serde(rename = "match")]
    pub match_: Option<Value>,
    pub check: Value,
}

/// `delete`: by `ref`, or the resources of a file or inline.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub(crate) struct DeleteOp {
    pub bindings: Vec<Binding>,
    pub file: String,
    pub resource: Option<Value>,
    #[serde(rename = "ref")]
    pub reference: Option<Value>,
    pub template: Option<bool>,
    pub timeout: Option<String>,
    pub expect: Vec<Expectation>,
}

/// `command`: an entrypoint and arguments (env-expanded, no shell).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub(crate) struct CommandOp {
    pub bindings: Vec<Binding>,
    pub check: Option<Value>,
    pub env: Vec<Binding>,
    pub skip_log_output: bool,
    pub skip_command_output: bool,
    pub timeout: Option<String>,
    pub entrypoint: String,
    pub args: Vec<String>,
    pub work_dir: Option<String>,
}

/// `script`: content run by a shell (`sh -c` by default).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub(crate) struct ScriptOp {
    pub bindings: Vec<Binding>,
    pub check: Option<Value>,
    pub env: Vec<Binding>,
    pub skip_log_output: bool,
    pub skip_command_output: bool,
    pub timeout: Option<String>,
    pub content: String,
    pub shell: Option<String>,
    pub shell_args: Vec<String>,
    pub work_dir: Option<String>,
}

/// `sleep`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SleepOp {
    pub duration: String,
}

/// The collectors (`events`, `podLogs`, `describe`, `get`) and `wait`: kubectl commands on
/// objects of a kind, by name or selector, in the test namespace unless one is named.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub(crate) struct Collector {
    pub api_version: String,
    pub kind: String,
    pub name: String,
    pub namespace: String,
    pub selector: String,
    pub format: String,
    pub timeout: Option<String>,
    pub container: String,
    pub tail: Option<i64>,
    pub show_events: Option<bool>,
    #[serde(rename = "for")]
    pub wait_for: Option<WaitFor>,
}

/// `wait.for`: exactly one of these.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub(crate) struct WaitFor {
    pub creation: Option<Value>,
    pub deletion: Option<Value>,
    pub condition: Option<WaitValue>,
    pub json_path: Option<WaitPath>,
}

/// `wait.for.condition`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct WaitValue {
    pub name: String,
    pub value: Option<String>,
}

/// `wait.for.jsonPath`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct WaitPath {
    pub path: String,
    pub value: Option<String>,
}

/// What an operation does.
#[derive(Debug, Clone)]
pub(crate) enum Action {
    Apply(ResourceOp),
    Create(ResourceOp),
    Update(ResourceOp),
    Patch(ResourceOp),
    Assert(ResourceOp),
    Error(ResourceOp),
    Delete(DeleteOp),
    Command(CommandOp),
    Script(ScriptOp),
    Sleep(SleepOp),
    Wait(Box<Collector>),
    Events(Box<Collector>),
    PodLogs(Box<Collector>),
    Describe(Box<Collector>),
    Get(Box<Collector>),
}

impl Action {
    /// chainsaw's name of the operation (`apply`, `podLogs`…).
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Action::Apply(_) => "apply",
            Action::Create(_) => "create",
            Action::Update(_) => "update",
            Action::Patch(_) => "patch",
            Action::Assert(_) => "assert",
            Action::Error(_) => "error",
            Action::Delete(_) => "delete",
            Action::Command(_) => "command",
            Action::Script(_) => "script",
            Action::Sleep(_) => "sleep",
            Action::Wait(_) => "wait",
            Action::Events(_) => "events",
            Action::PodLogs(_) => "podLogs",
            Action::Describe(_) => "describe",
            Action::Get(_) => "get",
        }
    }
}

/// One operation of a `try`, `catch`, `finally` or `cleanup` block.
#[derive(Debug, Clone)]
pub(crate) struct Operation {
    pub continue_on_error: bool,
    pub action: Action,
}

/// Where an operation is written: a `try` block allows every operation, the others only
/// chainsaw's catch/finally/cleanup set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Block {
    Try,
    Handler,
}

const TRY_ONLY: &[&str] = &[
    "apply", "create", "update", "patch", "assert", "error", "proxy",
];
const KNOWN: &[&str] = &[
    "apply", "create", "update", "patch", "assert", "error", "delete", "command", "script",
    "sleep", "wait", "events", "podLogs", "describe", "get", "proxy",
];

fn typed<T: serde::de::DeserializeOwned>(name: &str, v: &Value) -> Result<T, String> {
    serde_json::from_value(v.clone()).map_err(|e| format!("operation {name}: {e}"))
}

impl Operation {
    /// Reads an operation written in `block`.
    pub(crate) fn parse(raw: &RawOperation, block: Block) -> Result<Operation, String> {
        let mut continue_on_error = false;
        let mut actions = Vec::new();
        for (key, value) in raw {
            match key.as_str() {
                "description" => {}
                "continueOnError" if block == Block::Try => {
                    continue_on_error = value.as_bool().unwrap_or(false)
                }
                k if KNOWN.contains(&k) => actions.push((k, value)),
                other => {
                    return Err(format!(
                        "unknown field {other:?} in an operation (operations: {})",
                        KNOWN.join(", ")
                    ));
                }
            }
        }
        let (name, value) = match actions.as_slice() {
            [one] => *one,
            [] => return Err("an operation names no action".into()),
            many => {
                let names: Vec<&str> = many.iter().map(|(k, _)| *k).collect();
                return Err(format!(
                    "an operation names several actions ({}); write one per operation",
                    names.join(", ")
                ));
            }
        };
        if block == Block::Handler && TRY_ONLY.contains(&name) {
            return Err(format!(
                "operation {name} is not allowed in catch, finally or cleanup blocks"
            ));
        }
        let action = match name {
            "apply" => Action::Apply(typed(name, value)?),
            "create" => Action::Create(typed(name, value)?),
            "update" => Action::Update(typed(name, value)?),
            "patch" => Action::Patch(typed(name, value)?),
            "assert" => Action::Assert(typed(name, value)?),
            "error" => Action::Error(typed(name, value)?),
            "delete" => Action::Delete(typed(name, value)?),
            "command" => Action::Command(typed(name, value)?),
            "script" => Action::Script(typed(name, value)?),
            "sleep" => Action::Sleep(typed(name, value)?),
            "wait" => Action::Wait(typed(name, value)?),
            "events" => Action::Events(typed(name, value)?),
            "podLogs" => Action::PodLogs(typed(name, value)?),
            "describe" => Action::Describe(typed(name, value)?),
            "get" => Action::Get(typed(name, value)?),
            other => return Err(format!("operation {other} is not supported by opkit yet")),
        };
        Ok(Operation {
            continue_on_error,
            action,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn raw(v: Value) -> RawOperation {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn go_durations_parse_like_gos() {
        assert_eq!(go_duration("5s").unwrap(), Duration::from_secs(5));
        assert_eq!(go_duration("1m30s").unwrap(), Duration::from_secs(90));
        assert_eq!(go_duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(go_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert!(go_duration("5").is_err());
        assert!(go_duration("-1s").is_err());
        assert!(go_duration("3d").is_err());
    }

    #[test]
    fn timeouts_default_to_chainsaws_and_override_per_kind() {
        let base = Resolved::default();
        assert_eq!(base.assert, Duration::from_secs(30));
        assert_eq!(base.exec, Duration::from_secs(5));
        let t = Timeouts {
            assert: Some("2s".into()),
            ..Timeouts::default()
        };
        let r = base.with(&t).unwrap();
        assert_eq!(r.assert, Duration::from_secs(2));
        assert_eq!(r.apply, Duration::from_secs(5));
    }

    #[test]
    fn an_unsupported_or_unknown_operation_is_refused_by_name() {
        let e = Operation::parse(&raw(json!({"proxy": {}})), Block::Try).unwrap_err();
        assert_eq!(e, "operation proxy is not supported by opkit yet");
        let e = Operation::parse(&raw(json!({"aply": {}})), Block::Try).unwrap_err();
        assert!(e.starts_with("unknown field \"aply\""), "{e}");
        let e = Operation::parse(&raw(json!({"apply": {"file": "a.yaml"}})), Block::Handler)
            .unwrap_err();
        assert!(e.contains("apply is not allowed in catch"), "{e}");
        let e = Operation::parse(
            &raw(json!({"apply": {"file": "a", "outputs": []}})),
            Block::Try,
        )
        .unwrap_err();
        assert!(
            e.starts_with("operation apply: unknown field `outputs`"),
            "{e}"
        );
        let ok = Operation::parse(
            &raw(json!({"continueOnError": true, "sleep": {"duration": "1s"}})),
            Block::Try,
        )
        .unwrap();
        assert!(ok.continue_on_error);
        assert_eq!(ok.action.name(), "sleep");
    }
}
