//! KUDO's `FilesToResources`: a package's files become the `Operator` and `OperatorVersion`
//! an install creates, with parameter defaults and enum values wrapped as the text the API
//! stores (arrays and maps as YAML).

use k8s_openapi::api::core::v1::ObjectReference;
use kube::api::ObjectMeta;

use super::{Package, PackageError, PackageFiles, PackageParameter};
use crate::api::{
    OperatorSpec, OperatorVersionSpec, Parameter, ParameterType, Task, operator_version_name,
};
use crate::{Operator, OperatorVersion};

pub(super) fn to_package(files: PackageFiles) -> Result<Package, PackageError> {
    let errors: Vec<String> = files
        .operator
        .tasks
        .iter()
        .flat_map(|t| task_errors(t, &files))
        .collect();
    if !errors.is_empty() {
        return Err(PackageError::Tasks(errors));
    }
    let op = &files.operator;
    let operator = Operator {
        metadata: ObjectMeta {
            name: Some(op.name.clone()),
            ..ObjectMeta::default()
        },
        spec: OperatorSpec {
            description: op.description.clone(),
            kudo_version: op.kudo_version.clone(),
            kubernetes_version: op.kubernetes_version.clone(),
            maintainers: op.maintainers.clone(),
            url: op.url.clone(),
            namespace_manifest: op.namespace_manifest.clone(),
        },
    };
    let parameters = files
        .params
        .parameters
        .iter()
        .map(to_api_parameter)
        .collect::<Result<Vec<_>, _>>()?;
    let operator_version = OperatorVersion {
        metadata: ObjectMeta {
            name: Some(operator_version_name(
                &op.name,
                &op.app_version,
                &op.operator_version,
            )),
            ..ObjectMeta::default()
        },
        spec: OperatorVersionSpec {
            operator: ObjectReference {
                name: Some(op.name.clone()),
                kind: Some("Operator".to_string()),
                ..ObjectReference::default()
            },
            version: op.operator_version.clone(),
            app_version: op.app_version.clone(),
            templates: files.templates.clone(),
            tasks: op.tasks.clone(),
            parameters,
            plans: op.plans.clone(),
            connection_string: String::new(),
            upgradable_from: Vec::new(),
        },
    };
    Ok(Package {
        files,
        operator,
        operator_version,
    })
}

/// The templates a task reads (KUDO's `validateTask` and the reference verifier agree).
pub(super) fn task_templates(task: &Task) -> Vec<&str> {
    match task.kind.as_str() {
        "Apply" | "Delete" | "Toggle" => task.spec.resources.iter().map(String::as_str).collect(),
        "Pipe" => vec![task.spec.pod.as_str()],
        "KudoOperator" if !task.spec.parameter_file.is_empty() => {
            vec![task.spec.parameter_file.as_str()]
        }
        _ => Vec::new(),
    }
}

fn task_errors(task: &Task, files: &PackageFiles) -> Vec<String> {
    let mut errors = Vec::new();
    match task.kind.as_str() {
        "Apply" | "Delete" | "KudoOperator" | "Dummy" => {}
        "Toggle" if task.spec.parameter.is_empty() => errors.push(format!(
            "toggle task {} does not have parameter specified",
            task.name
        )),
        "Toggle" => {}
        "Pipe" if task.spec.pipe.as_ref().is_none_or(Vec::is_empty) => errors.push(format!(
            "task {} does not have pipe files specified",
            task.name
        )),
        "Pipe" => {}
        other => errors.push(format!("unknown task kind {other}")),
    }
    for template in task_templates(task) {
        if !files.templates.contains_key(template) {
            errors.push(format!("task {} missing template: {template}", task.name));
        }
    }
    errors
}

/// KUDO's `WrapParamValue`: a YAML value as the text the API stores (`None` for null).
pub(crate) fn wrap(
    value: &serde_yaml::Value,
    kind: ParameterType,
) -> Result<Option<String>, String> {
    let json = serde_json::to_value(value).map_err(|e| e.to_string())?;
    let value = opkit_template::Value::from_json(&json);
    opkit_template::kudo::wrap_param(&value, kind.render_kind()).map_err(|e| e.to_string())
}

fn to_api_parameter(p: &PackageParameter) -> Result<Parameter, PackageError> {
    let error = |what: String, message: String| PackageError::Parameter {
        kind: p.kind(),
        what,
        name: p.name.clone(),
        message,
    };
    let default = match &p.default {
        Some(v) => wrap(v, p.kind()).map_err(|e| error("default".into(), e))?,
        None => None,
    };
    let r#enum = match &p.enum_values {
        Some(values) => Some(
            values
                .iter()
                .map(|v| {
                    wrap(v, p.kind())
                        .map(Option::unwrap_or_default)
                        .map_err(|e| error(format!("enum value '{}'", plain(v)), e))
                })
                .collect::<Result<Vec<_>, _>>()?,
        ),
        None => None,
    };
    Ok(Parameter {
        display_name: p.display_name.clone(),
        name: p.name.clone(),
        description: p.description.clone(),
        required: p.required,
        default,
        trigger: p.trigger.clone(),
        value_type: p.value_type,
        immutable: p.immutable,
        r#enum,
    })
}

/// A YAML scalar as plain text (for messages).
pub(crate) fn plain(v: &serde_yaml::Value) -> String {
    match v {
        serde_yaml::Value::String(s) => s.clone(),
        other => serde_yaml::to_string(other)
            .unwrap_or_default()
            .trim_end()
            .to_string(),
    }
}
