//! `KudoOperator`: a dependency — an instance of another operator, owned by this one.
//!
//! As KUDO's task: the child Instance is named `instanceName`, or `<parent>-<operator>`;
//! it carries the label `kudo.dev/operator` and an owner reference to the parent (so it is
//! deleted with it and its changes wake the parent's plan); its parameters are the
//! `parameterFile` template of the parent's operator version, rendered with the parent's
//! variables. The CLI installed the child's Operator and OperatorVersion and wrote the
//! child operator's name into `package`; an empty `operatorVersion` means the newest
//! version of that operator in the namespace. The task is done when the child has taken
//! its spec and its last plan is `COMPLETE`, fatal when that plan is `FATAL_ERROR`, and a
//! dependency cycle (the child's operator is one of its ancestors') is fatal.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use opkit_template::Value;
use opkit_template::kudo::{ParamKind, Renderer, wrap_param};

use crate::api::{
    ExecutionStatus, Instance, InstanceSpec, OperatorVersion, Task, operator_version_name,
};
use crate::plan;
use crate::task::{Context, Progress, TaskError};

/// The label naming an instance's operator.
pub(crate) const OPERATOR_LABEL: &str = "kudo.dev/operator";

/// Runs a `KudoOperator` task.
pub(crate) async fn run(ctx: &Context, task: &Task) -> Result<Progress, TaskError> {
    let spec = &task.spec;
    if spec.package.is_empty() {
        return Err(TaskError::Fatal(format!(
            "task validation error: kudo operator task '{}' has an empty package name",
            task.name
        )));
    }
    let parent = &ctx.instance;
    let namespace = parent.namespace().unwrap_or_default();
    let child_name = if spec.instance_name.is_empty() {
        format!("{}-{}", parent.name_any(), spec.package)
    } else {
        spec.instance_name.clone()
    };
    check_cycle(ctx, &spec.package).await?;
    let params = parameters(ctx, &spec.parameter_file)?;
    let ov_name = if spec.operator_version.is_empty() {
        newest_version(ctx, &namespace, &spec.package, &spec.app_version).await?
    } else {
        operator_version_name(&spec.package, &spec.app_version, &spec.operator_version)
    };
    let api: Api<Instance> = Api::namespaced(ctx.client.clone(), &namespace);
    let existing = api.get_opt(&child_name).await.map_err(transient)?;
    let child = match existing {
        None => {
            let child = child_instance(parent, &child_name, &spec.package, &ov_name, params)?;
            let created = api
                .create(&PostParams::default(), &child)
                .await
                .map_err(transient)?;
            let note = format!("Instance {child_name} of operator version {ov_name} created");
            if let Err(e) = ctx
                .recorder
                .event(parent)
                .reason("DependencyCreated")
                .action(task.name.clone())
                .note(note)
                .related(&created)
                .publish()
                .await
            {
                tracing::warn!(instance = %child_name, error = %e, "cannot record an event");
            }
            created
        }
        Some(child)
            if child.spec.operator_version.name.as_deref() != Some(ov_name.as_str())
                || child.spec.parameters != params =>
        {
            // KUDO's patch: the whole spec, merged (parameters no longer given stay).
            let patch = serde_json::json!({"spec": {
                "operatorVersion": {"name": ov_name},
                "parameters": params,
            }});
            api.patch(&child_name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .map_err(transient)?
        }
        Some(child) => child,
    };
    health(&child)
}

fn transient(e: kube::Error) -> TaskError {
    TaskError::Transient(e.to_string())
}

/// The child's parameters: the parameter file rendered and read as KUDO's `-P` files are
/// (strings as they are, lists and maps as YAML text, other scalars as text).
fn parameters(ctx: &Context, file: &str) -> Result<BTreeMap<String, String>, TaskError> {
    if file.is_empty() {
        return Ok(BTreeMap::new());
    }
    let template = ctx
        .operator_version
        .spec
        .templates
        .get(file)
        .ok_or_else(|| {
            TaskError::Fatal(format!("error finding parameter file {file} in templates"))
        })?;
    let rendered = Renderer::new()
        .render(file, template, &ctx.variables)
        .map_err(|e| TaskError::Fatal(format!("error expanding parameter file {file}: {e}")))?;
    parameters_from_yaml(file, &rendered).map_err(TaskError::Fatal)
}

fn parameters_from_yaml(file: &str, text: &str) -> Result<BTreeMap<String, String>, String> {
    let unmarshal = |e: &dyn std::fmt::Display| {
        format!("error unmarshalling content of parameter file {file}: {e}")
    };
    let value = opkit_template::yaml::from_yaml(text).map_err(|e| unmarshal(&e))?;
    let entries = match value {
        Value::Map(d) => d.entries(),
        v if v.is_nil() => Vec::new(),
        other => return Err(unmarshal(&format!("not a map: {other}"))),
    };
    let mut out = BTreeMap::new();
    let mut errors = Vec::new();
    for (key, value) in entries {
        let kind = match value {
            Value::Map(_) => ParamKind::Map,
            Value::List(_) => ParamKind::Array,
            _ => ParamKind::String,
        };
        match wrap_param(&value, kind) {
            Ok(Some(text)) => {
                out.insert(key, text);
            }
            Ok(None) => errors.push(format!(
                "{key} has a null value (https://yaml.org/spec/1.2/spec.html#id2803362) which is currently not supported"
            )),
            Err(e) => errors.push(format!("{key}: {e}")),
        }
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(format!(
            "errors while unmarshaling following keys of the parameter file {file}: {}",
            errors.join(", ")
        ))
    }
}

/// The name of the newest OperatorVersion of `operator` in the namespace (highest
/// `spec.version` as semver; `app_version` must match when given).
async fn newest_version(
    ctx: &Context,
    namespace: &str,
    operator: &str,
    app_version: &str,
) -> Result<String, TaskError> {
    let api: Api<OperatorVersion> = Api::namespaced(ctx.client.clone(), namespace);
    let list = api.list(&ListParams::default()).await.map_err(transient)?;
    list.items
        .iter()
        .filter(|ov| ov.spec.operator.name.as_deref() == Some(operator))
        .filter(|ov| app_version.is_empty() || ov.spec.app_version == app_version)
        .max_by(|a, b| version_key(a).cmp(&version_key(b)))
        .map(|ov| ov.name_any())
        .ok_or_else(|| {
            // The CLI installs dependencies first; the version may still be on its way.
            TaskError::Transient(format!(
                "no OperatorVersion of operator {operator} in namespace {namespace}"
            ))
        })
}

fn version_key(ov: &OperatorVersion) -> (Option<semver::Version>, String) {
    (
        semver::Version::parse(ov.spec.version.trim_start_matches('v')).ok(),
        ov.spec.version.clone(),
    )
}

/// Fails when `child` is the operator of this instance or of one of its ancestors.
async fn check_cycle(ctx: &Context, child: &str) -> Result<(), TaskError> {
    let mut chain = vec![ctx.operator.name_any()];
    let namespace = ctx.instance.namespace().unwrap_or_default();
    let api: Api<Instance> = Api::namespaced(ctx.client.clone(), &namespace);
    let mut current = ctx.instance.clone();
    // Bounded: a chain longer than this is a cycle through renamed instances.
    for _ in 0..32 {
        let Some(owner) = current
            .owner_references()
            .iter()
            .find(|o| o.kind == "Instance")
            .cloned()
        else {
            break;
        };
        let Some(next) = api.get_opt(&owner.name).await.map_err(transient)? else {
            break;
        };
        let op = match next.labels().get(OPERATOR_LABEL) {
            Some(op) => Some(op.clone()),
            // A top-level instance (the CLI does not label it): its operator version says.
            None => match next.spec.operator_version.name.as_deref() {
                Some(ov) => Api::<OperatorVersion>::namespaced(ctx.client.clone(), &namespace)
                    .get_opt(ov)
                    .await
                    .map_err(transient)?
                    .and_then(|ov| ov.spec.operator.name),
                None => None,
            },
        };
        chain.extend(op);
        current = next;
    }
    if chain.iter().any(|op| op == child) {
        chain.reverse();
        chain.push(child.to_string());
        return Err(TaskError::Fatal(format!(
            "cyclic package dependency: {}",
            chain.join(" -> ")
        )));
    }
    Ok(())
}

fn child_instance(
    parent: &Instance,
    name: &str,
    operator: &str,
    ov_name: &str,
    parameters: BTreeMap<String, String>,
) -> Result<Instance, TaskError> {
    let uid = parent
        .uid()
        .ok_or_else(|| TaskError::Transient("the parent instance has no uid yet".into()))?;
    let mut child = Instance::new(
        name,
        InstanceSpec {
            operator_version: ObjectReference {
                name: Some(ov_name.to_string()),
                ..Default::default()
            },
            parameters,
            ..Default::default()
        },
    );
    child.metadata.namespace = parent.namespace();
    child.metadata.labels = Some(BTreeMap::from([(
        OPERATOR_LABEL.to_string(),
        operator.to_string(),
    )]));
    child.metadata.owner_references = Some(vec![OwnerReference {
        api_version: crate::api::API_VERSION.into(),
        kind: "Instance".into(),
        name: parent.name_any(),
        uid,
        controller: Some(true),
        block_owner_deletion: Some(true),
    }]);
    Ok(child)
}

/// Whether the child is done: it has taken its spec (its manager accepted it), no plan of
/// it is scheduled, and its last plan is `COMPLETE`; fatal when its plan is `FATAL_ERROR`.
fn health(child: &Instance) -> Result<Progress, TaskError> {
    let who = format!(
        "instance {}/{}",
        child.namespace().unwrap_or_default(),
        child.name_any()
    );
    let statuses = child.status.as_ref().map(|s| &s.plan_status);
    let scheduled = &child.spec.plan_execution.plan_name;
    let status_of = |plan: &str| statuses.and_then(|s| s.get(plan));
    if !scheduled.is_empty() {
        if let Some(ps) = status_of(scheduled)
            && ps.status == ExecutionStatus::FatalError
            && ps.uid == child.spec.plan_execution.uid
        {
            return Err(TaskError::Fatal(format!(
                "{who} plan {scheduled} failed: {}",
                ps.message
            )));
        }
        let state = status_of(scheduled)
            .map(|p| p.status.to_string())
            .unwrap_or_else(|| ExecutionStatus::NeverRun.to_string());
        return Ok(Progress::Waiting(format!(
            "{who} active plan is in state {state}"
        )));
    }
    let settled = plan::accepted_spec(child).ok().flatten().is_some_and(|a| {
        a.operator_version.name == child.spec.operator_version.name
            && a.parameters == child.spec.parameters
    });
    if !settled {
        return Ok(Progress::Waiting(format!(
            "{who} has not taken its spec yet"
        )));
    }
    let last = statuses.and_then(|s| {
        s.values()
            .filter(|p| p.status != ExecutionStatus::NeverRun)
            .max_by(|a, b| a.last_updated_timestamp.cmp(&b.last_updated_timestamp))
    });
    match last {
        Some(p) if p.status == ExecutionStatus::FatalError => Err(TaskError::Fatal(format!(
            "{who} plan {} failed: {}",
            p.name, p.message
        ))),
        Some(p) if p.status == ExecutionStatus::Complete => Ok(Progress::Done),
        Some(p) => Ok(Progress::Waiting(format!(
            "{who} plan {} is in state {}",
            p.name, p.status
        ))),
        None => Ok(Progress::Waiting(format!("{who} has run no plan yet"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameter_file_values_are_wrapped_as_kudo_does() {
        let got =
            parameters_from_yaml("p.yaml", "A: text\nB: 3\nC: true\nL: [1, two]\nM: {x: 1}\n")
                .unwrap();
        assert_eq!(got["A"], "text");
        assert_eq!(got["B"], "3");
        assert_eq!(got["C"], "true");
        assert_eq!(got["L"], "- 1\n- two\n");
        assert_eq!(got["M"], "x: 1\n");
        let err = parameters_from_yaml("p.yaml", "A: null\n").unwrap_err();
        assert!(err.contains("A has a null value"), "{err}");
        assert!(parameters_from_yaml("p.yaml", "").unwrap().is_empty());
    }
}
