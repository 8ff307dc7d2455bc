//! KUDO's API, `kudo.dev/v1beta1`: [`Operator`], [`OperatorVersion`] and [`Instance`].
//!
//! Field names, JSON spellings and omissions follow KUDO 0.19's Go types, so objects written
//! by KUDO read here unchanged and the other way round. The derived CRDs are what
//! `kubectl kudo init` installs ([`crds`]).

use std::collections::BTreeMap;
use std::fmt;

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::{CustomResource, CustomResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The API group.
pub const GROUP: &str = "kudo.dev";
/// The API version.
pub const VERSION: &str = "v1beta1";
/// `apiVersion` of every KUDO object.
pub const API_VERSION: &str = "kudo.dev/v1beta1";

/// The plan run when an instance is created.
pub const DEPLOY_PLAN: &str = "deploy";
/// The plan run when an instance moves to another operator version.
pub const UPGRADE_PLAN: &str = "upgrade";
/// The plan run when parameters change and no parameter names a trigger.
pub const UPDATE_PLAN: &str = "update";
/// The plan run when an instance is deleted.
pub const CLEANUP_PLAN: &str = "cleanup";
/// Plans with a meaning of their own to the manager.
pub const SPECIAL_PLANS: [&str; 4] = [DEPLOY_PLAN, UPGRADE_PLAN, UPDATE_PLAN, CLEANUP_PLAN];

/// The finalizer that holds a deleted instance until its `cleanup` plan has run.
pub const CLEANUP_FINALIZER: &str = "kudo.dev.instance.cleanup";

/// An operator: the package's name and description, shared by its versions.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "kudo.dev",
    version = "v1beta1",
    kind = "Operator",
    namespaced,
    printcolumn = r#"{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct OperatorSpec {
    /// What the operator runs.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// The KUDO version the package needs (a semver constraint).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kudo_version: String,
    /// The Kubernetes version the package needs (a semver constraint).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kubernetes_version: String,
    /// Who maintains the package.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub maintainers: Vec<Maintainer>,
    /// The project's home page.
    #[serde(default, skip_serializing_if = "String::is_empty", rename = "url")]
    pub url: String,
    /// The template (in `templates/`) that renders the namespace `--create-namespace` creates.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace_manifest: String,
}

/// A package maintainer.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct Maintainer {
    /// The maintainer's name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The maintainer's e-mail address.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub email: String,
}

/// One version of an operator: its templates, tasks, parameters and plans.
///
/// KUDO names it `<operator>-<appVersion>-<operatorVersion>` (see [`operator_version_name`]).
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "kudo.dev",
    version = "v1beta1",
    kind = "OperatorVersion",
    namespaced,
    printcolumn = r#"{"name": "Operator", "type": "string", "jsonPath": ".spec.operator.name"}"#,
    printcolumn = r#"{"name": "Version", "type": "string", "jsonPath": ".spec.version"}"#,
    printcolumn = r#"{"name": "AppVersion", "type": "string", "jsonPath": ".spec.appVersion"}"#,
    printcolumn = r#"{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct OperatorVersionSpec {
    /// The [`Operator`] this is a version of.
    #[serde(default, skip_serializing_if = "is_empty_reference")]
    pub operator: ObjectReference,
    /// The package's version (`operatorVersion` in `operator.yaml`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub version: String,
    /// The version of the application the package runs.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub app_version: String,
    /// Template file name (relative to `templates/`) → text.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub templates: BTreeMap<String, String>,
    /// Every task the plans may name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tasks: Vec<Task>,
    /// The parameters an instance may set.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parameters: Vec<Parameter>,
    /// Plan name → plan.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub plans: BTreeMap<String, Plan>,
    /// A Go template telling clients how to connect to an instance.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub connection_string: String,
    /// Versions an instance may upgrade from.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub upgradable_from: Vec<ObjectReference>,
}

fn is_empty_reference(r: &ObjectReference) -> bool {
    r == &ObjectReference::default()
}

/// How the children of a plan or phase run.
#[derive(Deserialize, Serialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum Ordering {
    /// One after another; the next starts when the previous is complete.
    #[default]
    #[serde(rename = "serial")]
    Serial,
    /// All at once.
    #[serde(rename = "parallel")]
    Parallel,
}

impl Ordering {
    /// KUDO's spelling (`serial`, `parallel`).
    pub fn as_str(self) -> &'static str {
        match self {
            Ordering::Serial => "serial",
            Ordering::Parallel => "parallel",
        }
    }
}

/// A plan: phases run with a strategy.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct Plan {
    /// How the phases run.
    #[serde(default)]
    pub strategy: Ordering,
    /// The phases, in order.
    #[serde(default)]
    pub phases: Vec<Phase>,
}

/// A phase: steps run with a strategy.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct Phase {
    /// The phase's name, unique in its plan.
    pub name: String,
    /// How the steps run.
    #[serde(default)]
    pub strategy: Ordering,
    /// The steps, in order.
    #[serde(default)]
    pub steps: Vec<Step>,
}

/// A step: tasks that all run on every pass until each is done.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct Step {
    /// The step's name, unique in its phase.
    pub name: String,
    /// Names of tasks in [`OperatorVersionSpec::tasks`].
    #[serde(default)]
    pub tasks: Vec<String>,
}

/// A task: what a step does (`Apply`, `Delete`, `Toggle`, `Pipe`, `KudoOperator`, `Dummy`).
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct Task {
    /// The task's name, unique in the operator version.
    pub name: String,
    /// The task's kind.
    pub kind: String,
    /// The kind's settings; KUDO keeps every kind's fields side by side in one object.
    #[serde(default)]
    pub spec: TaskSpec,
}

/// The settings of every task kind, side by side (as KUDO's inlined Go structs).
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskSpec {
    /// `Apply`, `Delete`, `Toggle`: template names.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<String>,
    /// `Dummy`: fail.
    #[serde(default, skip_serializing_if = "is_false")]
    pub want_err: bool,
    /// `Dummy`: fail fatally.
    #[serde(default, skip_serializing_if = "is_false")]
    pub fatal: bool,
    /// `Dummy`: done at once.
    #[serde(default, skip_serializing_if = "is_false")]
    pub done: bool,
    /// `Pipe`: the template of the pod that writes the files.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub pod: String,
    /// `Pipe`: the files to store.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pipe: Option<Vec<PipeSpec>>,
    /// `Toggle`: the boolean parameter that says whether the resources exist.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub parameter: String,
    /// `KudoOperator`: the child operator's package (resolved to its name at install).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub package: String,
    /// `KudoOperator`: the child instance's name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub instance_name: String,
    /// `KudoOperator`: the child's app version.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub app_version: String,
    /// `KudoOperator`: the child's operator version.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub operator_version: String,
    /// `KudoOperator`: the template rendering the child's parameters (YAML).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub parameter_file: String,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// A file a `Pipe` task stores, and where.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PipeSpec {
    /// The file's path in the pod.
    #[serde(default)]
    pub file: String,
    /// An env file (`KEY=value` lines) whose entries become the artifact's keys.
    #[serde(default)]
    pub env_file: String,
    /// `ConfigMap` or `Secret`.
    #[serde(default)]
    pub kind: String,
    /// The key templates reach it by (`.Pipes.<key>`).
    #[serde(default)]
    pub key: String,
}

/// The type a parameter declares (`value-type`; `string` when absent).
#[derive(Deserialize, Serialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ParameterType {
    /// Text.
    #[default]
    String,
    /// A whole number.
    Integer,
    /// Any number.
    Number,
    /// `true` or `false`.
    Boolean,
    /// A YAML list.
    Array,
    /// A YAML map.
    Map,
}

impl ParameterType {
    /// The name `params.yaml` uses.
    pub fn as_str(self) -> &'static str {
        match self {
            ParameterType::String => "string",
            ParameterType::Integer => "integer",
            ParameterType::Number => "number",
            ParameterType::Boolean => "boolean",
            ParameterType::Array => "array",
            ParameterType::Map => "map",
        }
    }

    /// How templates see the value: arrays and maps are decoded from YAML, the rest is text.
    pub fn render_kind(self) -> opkit_template::kudo::ParamKind {
        match self {
            ParameterType::Array => opkit_template::kudo::ParamKind::Array,
            ParameterType::Map => opkit_template::kudo::ParamKind::Map,
            _ => opkit_template::kudo::ParamKind::String,
        }
    }
}

impl fmt::Display for ParameterType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A parameter of an operator version.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Parameter {
    /// A human-friendly name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub display_name: String,
    /// The name templates use (`.Params.<name>`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// What it does.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// Whether an instance must give a value (when there is no default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<bool>,
    /// The default, as stored text (arrays and maps as YAML).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    /// The plan a change of this parameter runs.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub trigger: String,
    /// The declared type.
    #[serde(
        default,
        rename = "value-type",
        skip_serializing_if = "Option::is_none"
    )]
    pub value_type: Option<ParameterType>,
    /// Whether the value may change after install.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub immutable: Option<bool>,
    /// The values allowed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub r#enum: Option<Vec<String>>,
}

impl Parameter {
    /// The declared type (`string` when absent).
    pub fn kind(&self) -> ParameterType {
        self.value_type.unwrap_or_default()
    }

    /// Whether an instance must give a value: `required: true` and no default. (The API's
    /// absent `required` is false; `params.yaml`'s is true, and the package loader writes it.)
    pub fn is_required(&self) -> bool {
        self.required == Some(true) && self.default.is_none()
    }

    /// Whether the value may not change after install.
    pub fn is_immutable(&self) -> bool {
        self.immutable.unwrap_or(false)
    }
}

/// A running copy of an operator version, with its parameters and plan state.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "kudo.dev",
    version = "v1beta1",
    kind = "Instance",
    namespaced,
    status = "InstanceStatus",
    printcolumn = r#"{"name": "OperatorVersion", "type": "string", "jsonPath": ".spec.operatorVersion.name"}"#,
    printcolumn = r#"{"name": "Ready", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct InstanceSpec {
    /// The [`OperatorVersion`] this instance runs.
    #[serde(default, skip_serializing_if = "is_empty_reference")]
    pub operator_version: ObjectReference,
    /// Parameter name → value as text (arrays and maps as YAML).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub parameters: BTreeMap<String, String>,
    /// The plan running now, or the plan a user asks for (manual trigger).
    #[serde(default, skip_serializing_if = "PlanExecution::is_empty")]
    pub plan_execution: PlanExecution,
}

/// The plan an instance runs now (set by the manager, or by a user to trigger a plan).
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlanExecution {
    /// The plan's name; empty when none runs.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub plan_name: String,
    /// A new UID per run, so re-triggering the same plan is seen as a new run.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// The run's status (KUDO keeps it in the spec too).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<ExecutionStatus>,
}

impl PlanExecution {
    /// Whether nothing is set.
    pub fn is_empty(&self) -> bool {
        self == &PlanExecution::default()
    }
}

/// What the manager reports about an instance.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InstanceStatus {
    /// Plan name → its last (or current) run, for every plan of the operator version.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub plan_status: BTreeMap<String, PlanStatus>,
    /// `Ready`: whether everything the instance owns is healthy.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

/// One plan's last (or current) run.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlanStatus {
    /// The plan's name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The run's status.
    #[serde(default)]
    pub status: ExecutionStatus,
    /// Why the status is what it is (e.g. the failing task's error).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// When the status or message last changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_updated_timestamp: Option<Time>,
    /// The phases' status.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub phases: Vec<PhaseStatus>,
    /// The run's UID (the [`PlanExecution::uid`] that started it).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
}

/// One phase's status in a plan run.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct PhaseStatus {
    /// The phase's name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The phase's status.
    #[serde(default)]
    pub status: ExecutionStatus,
    /// Why the status is what it is.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// The steps' status.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<StepStatus>,
}

/// One step's status in a plan run.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct StepStatus {
    /// The step's name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Why the status is what it is (e.g. the failing task's error).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// The step's status.
    #[serde(default)]
    pub status: ExecutionStatus,
}

/// The status of a plan, phase or step.
#[derive(Deserialize, Serialize, Clone, Copy, Debug, Default, PartialEq, Eq, Hash, JsonSchema)]
pub enum ExecutionStatus {
    /// Never started.
    #[default]
    #[serde(rename = "NEVER_RUN")]
    NeverRun,
    /// Waiting for its turn.
    #[serde(rename = "PENDING")]
    Pending,
    /// Running.
    #[serde(rename = "IN_PROGRESS")]
    InProgress,
    /// Failed transiently; retried.
    #[serde(rename = "ERROR")]
    Error,
    /// Done.
    #[serde(rename = "COMPLETE")]
    Complete,
    /// Failed for good; only a new plan (or opkit's retry) moves on.
    #[serde(rename = "FATAL_ERROR")]
    FatalError,
}

impl ExecutionStatus {
    /// KUDO's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            ExecutionStatus::NeverRun => "NEVER_RUN",
            ExecutionStatus::Pending => "PENDING",
            ExecutionStatus::InProgress => "IN_PROGRESS",
            ExecutionStatus::Error => "ERROR",
            ExecutionStatus::Complete => "COMPLETE",
            ExecutionStatus::FatalError => "FATAL_ERROR",
        }
    }

    /// `COMPLETE` or `FATAL_ERROR`: nothing more happens in this run.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            ExecutionStatus::Complete | ExecutionStatus::FatalError
        )
    }

    /// `COMPLETE`.
    pub fn is_finished(self) -> bool {
        self == ExecutionStatus::Complete
    }

    /// `PENDING`, `IN_PROGRESS` or `ERROR`: the run goes on.
    pub fn is_running(self) -> bool {
        matches!(
            self,
            ExecutionStatus::Pending | ExecutionStatus::InProgress | ExecutionStatus::Error
        )
    }
}

impl fmt::Display for ExecutionStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// KUDO's name for an operator version: `<operator>-<appVersion>-<version>`, or
/// `<operator>-<version>` when the package has no app version.
pub fn operator_version_name(operator: &str, app_version: &str, version: &str) -> String {
    if app_version.is_empty() {
        format!("{operator}-{version}")
    } else {
        format!("{operator}-{app_version}-{version}")
    }
}

/// The three CRDs, as `kubectl kudo init` installs them.
pub fn crds() -> Vec<CustomResourceDefinition> {
    vec![Operator::crd(), OperatorVersion::crd(), Instance::crd()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instance_reads_and_writes_kudo_json_names() {
        let yaml = r#"
apiVersion: kudo.dev/v1beta1
kind: Instance
metadata: {name: zk, namespace: default}
spec:
  operatorVersion: {name: zookeeper-3.4.14-0.3.1}
  parameters: {NODE_COUNT: "3"}
  planExecution: {planName: deploy, uid: abc, status: IN_PROGRESS}
status:
  planStatus:
    deploy:
      name: deploy
      status: IN_PROGRESS
      uid: abc
      phases:
      - name: zookeeper
        status: IN_PROGRESS
        steps: [{name: deploy, status: PENDING}]
"#;
        let i: Instance = serde_yaml::from_str(yaml).unwrap();
        assert_eq!(
            i.spec.operator_version.name.as_deref(),
            Some("zookeeper-3.4.14-0.3.1")
        );
        let st = i.status.as_ref().unwrap();
        let deploy = &st.plan_status["deploy"];
        assert_eq!(deploy.phases[0].steps[0].status, ExecutionStatus::Pending);
        let back = serde_json::to_value(&i).unwrap();
        assert_eq!(back["spec"]["planExecution"]["status"], "IN_PROGRESS");
        assert_eq!(
            back["status"]["planStatus"]["deploy"]["phases"][0]["name"],
            "zookeeper"
        );
    }

    #[test]
    fn parameter_uses_value_type_and_defaults_to_required_string() {
        let p: Parameter = serde_yaml::from_str(
            "name: COUNT\nrequired: true\nvalue-type: integer\nimmutable: true\nenum: ['1', '3']\n",
        )
        .unwrap();
        assert_eq!(p.kind(), ParameterType::Integer);
        assert!(p.is_required() && p.is_immutable());
        let q: Parameter = serde_yaml::from_str("name: X\ndefault: a\n").unwrap();
        assert_eq!(q.kind(), ParameterType::String);
        assert!(!q.is_required());
        assert_eq!(serde_json::to_value(&p).unwrap()["value-type"], "integer");
    }

    #[test]
    fn task_spec_keeps_every_kind_side_by_side() {
        let t: Task = serde_yaml::from_str(
            "name: p\nkind: Pipe\nspec:\n  pod: pod.yaml\n  pipe:\n  - {file: /tmp/a, kind: ConfigMap, key: a}\n",
        )
        .unwrap();
        assert_eq!(t.spec.pipe.as_ref().unwrap()[0].key, "a");
        let json = serde_json::to_value(&t).unwrap();
        assert_eq!(
            json["spec"],
            serde_json::json!({"pod": "pod.yaml", "pipe": [{"file": "/tmp/a", "envFile": "", "kind": "ConfigMap", "key": "a"}]})
        );
    }

    #[test]
    fn operator_version_names_follow_kudo() {
        assert_eq!(
            operator_version_name("zookeeper", "3.4.14", "0.3.1"),
            "zookeeper-3.4.14-0.3.1"
        );
        assert_eq!(operator_version_name("first", "", "0.2.0"), "first-0.2.0");
    }

    #[test]
    fn crds_are_namespaced_kudo_dev_v1beta1_with_instance_status_subresource() {
        let crds = crds();
        let names: Vec<_> = crds
            .iter()
            .map(|c| c.metadata.name.clone().unwrap())
            .collect();
        assert_eq!(
            names,
            [
                "operators.kudo.dev",
                "operatorversions.kudo.dev",
                "instances.kudo.dev"
            ]
        );
        let inst = &crds[2].spec.versions[0];
        assert!(inst.subresources.as_ref().unwrap().status.is_some());
        assert!(crds.iter().all(|c| c.spec.scope == "Namespaced"));
    }
}
