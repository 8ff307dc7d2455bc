//! `package add`: a maintainer, parameter, task or plan added to a package directory, as
//! KUDO's `generate` package does it — the package read and checked first, the entry
//! appended to `operator.yaml` or `params.yaml` (a plan set by name), the file written back.
//! The file is edited as YAML, not through opkit's types, so every key opkit does not model
//! stays, in its order; comments are not kept (KUDO does not keep them either).

use std::path::{Path, PathBuf};

use serde_yaml::{Mapping, Value};

use super::{OPERATOR_FILE, PARAMS_FILE, PackageError, io_error, read_dir};
use crate::api::{Plan, Task};

/// KUDO's `OperatorPath`: `start` when it holds `operator.yaml`, else its only
/// sub-folder that does.
pub fn operator_dir(start: &Path) -> Result<PathBuf, PackageError> {
    if start.join(OPERATOR_FILE).is_file() {
        return Ok(start.to_path_buf());
    }
    let mut found = Vec::new();
    for entry in std::fs::read_dir(start).map_err(io_error(start))? {
        let path = entry.map_err(io_error(start))?.path();
        if path.join(OPERATOR_FILE).is_file() {
            found.push(path);
        }
    }
    match found.len() {
        1 => Ok(found.remove(0)),
        0 => Err(PackageError::Edit("no operator folder discovered".into())),
        _ => Err(PackageError::Edit(
            "multiple operator folders discovered".into(),
        )),
    }
}

/// The names in a package, for the prompts' choices and uniqueness checks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Names {
    /// The plans, sorted.
    pub plans: Vec<String>,
    /// The tasks, in file order.
    pub tasks: Vec<String>,
    /// The parameters, in file order.
    pub params: Vec<String>,
}

/// The names of the package's plans, tasks and parameters.
pub fn names(dir: &Path) -> Result<Names, PackageError> {
    let files = read_dir(dir)?;
    Ok(Names {
        plans: files.operator.plans.keys().cloned().collect(),
        tasks: files
            .operator
            .tasks
            .iter()
            .map(|t| t.name.clone())
            .collect(),
        params: files
            .params
            .parameters
            .iter()
            .map(|p| p.name.clone())
            .collect(),
    })
}

fn read_yaml(path: &Path) -> Result<Mapping, PackageError> {
    let text = std::fs::read_to_string(path).map_err(io_error(path))?;
    match serde_yaml::from_str::<Value>(&text) {
        Ok(Value::Mapping(m)) => Ok(m),
        Ok(Value::Null) => Ok(Mapping::new()),
        Ok(_) => Err(PackageError::Edit(format!(
            "{} is not a YAML mapping",
            path.display()
        ))),
        Err(e) => Err(PackageError::Edit(format!("{}: {e}", path.display()))),
    }
}

fn write_yaml(path: &Path, doc: &Mapping) -> Result<(), PackageError> {
    let text = serde_yaml::to_string(doc)
        .map_err(|e| PackageError::Edit(format!("{}: {e}", path.display())))?;
    std::fs::write(path, text).map_err(io_error(path))
}

/// Reads the package at `dir` (it must be valid), then edits one of its files.
fn edit(
    dir: &Path,
    file: &str,
    change: impl FnOnce(&mut Mapping) -> Result<(), PackageError>,
) -> Result<(), PackageError> {
    read_dir(dir)?;
    let path = dir.join(file);
    let mut doc = read_yaml(&path)?;
    change(&mut doc)?;
    write_yaml(&path, &doc)
}

/// Appends `value` to the list under `key` (created when missing).
fn push(doc: &mut Mapping, key: &str, value: Value) -> Result<(), PackageError> {
    let list = doc
        .entry(Value::from(key))
        .or_insert_with(|| Value::Sequence(Vec::new()));
    if list.is_null() {
        *list = Value::Sequence(Vec::new());
    }
    match list {
        Value::Sequence(items) => {
            items.push(value);
            Ok(())
        }
        _ => Err(PackageError::Edit(format!("{key} is not a list"))),
    }
}

fn to_value<T: serde::Serialize>(v: &T) -> Result<Value, PackageError> {
    serde_yaml::to_value(v).map_err(|e| PackageError::Edit(e.to_string()))
}

/// `package add maintainer NAME EMAIL`.
pub fn add_maintainer(dir: &Path, name: &str, email: &str) -> Result<(), PackageError> {
    let mut m = Mapping::new();
    m.insert("name".into(), name.into());
    m.insert("email".into(), email.into());
    edit(dir, OPERATOR_FILE, |doc| {
        push(doc, "maintainers", Value::Mapping(m))
    })
}

/// A parameter to add, with KUDO's prompt's fields.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NewParameter {
    /// Its name (unique).
    pub name: String,
    /// Its default value (none when `None`).
    pub default: Option<String>,
    /// Its display name.
    pub display_name: String,
    /// What it is for.
    pub description: String,
    /// `required: true` written when set (KUDO writes nothing otherwise).
    pub required: bool,
    /// The plan a change triggers (default: KUDO's own choice).
    pub trigger: String,
}

/// `package add parameter`: appended to `params.yaml`; the name must be new.
pub fn add_parameter(dir: &Path, p: &NewParameter) -> Result<(), PackageError> {
    let params = names(dir)?.params;
    if p.name.is_empty() {
        return Err(PackageError::Edit(
            "parameter name must be > than 1 character".into(),
        ));
    }
    if params.contains(&p.name) {
        return Err(PackageError::Edit("parameter name must be unique".into()));
    }
    let mut m = Mapping::new();
    m.insert("name".into(), p.name.as_str().into());
    if !p.display_name.is_empty() {
        m.insert("displayName".into(), p.display_name.as_str().into());
    }
    if let Some(d) = &p.default {
        m.insert("default".into(), d.as_str().into());
    }
    if !p.description.is_empty() {
        m.insert("description".into(), p.description.as_str().into());
    }
    if p.required {
        m.insert("required".into(), true.into());
    }
    if !p.trigger.is_empty() {
        m.insert("trigger".into(), p.trigger.as_str().into());
    }
    edit(dir, PARAMS_FILE, |doc| {
        if !doc.contains_key("apiVersion") {
            doc.insert("apiVersion".into(), "kudo.dev/v1beta1".into());
        }
        push(doc, "parameters", Value::Mapping(m))
    })
}

/// `package add task`: appended to `operator.yaml`; the name must be new. The templates it
/// names are created empty under `templates/` when missing (KUDO's `EnsureTaskResources`).
pub fn add_task(dir: &Path, task: &Task) -> Result<(), PackageError> {
    let tasks = names(dir)?.tasks;
    if task.name.is_empty() {
        return Err(PackageError::Edit(
            "task name must be > than 1 character".into(),
        ));
    }
    if tasks.contains(&task.name) {
        return Err(PackageError::Edit("task name must be unique".into()));
    }
    let templates = dir.join("templates");
    let pod = (!task.spec.pod.is_empty()).then_some(&task.spec.pod);
    for resource in task.spec.resources.iter().chain(pod) {
        let path = templates.join(resource);
        if !path.exists() {
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).map_err(io_error(parent))?;
            }
            std::fs::write(&path, "").map_err(io_error(&path))?;
        }
    }
    let value = to_value(task)?;
    edit(dir, OPERATOR_FILE, |doc| push(doc, "tasks", value))
}

/// `package add plan`: set under `plans` in `operator.yaml`; the name must be new and every
/// task it names must exist.
pub fn add_plan(dir: &Path, name: &str, plan: &Plan) -> Result<(), PackageError> {
    let Names { plans, tasks, .. } = names(dir)?;
    if name.is_empty() {
        return Err(PackageError::Edit(
            "plan name must be > than 1 character".into(),
        ));
    }
    if plans.iter().any(|p| p == name) {
        return Err(PackageError::Edit("plan name must be unique".into()));
    }
    let steps = plan.phases.iter().flat_map(|p| &p.steps);
    if let Some(missing) = steps.flat_map(|s| &s.tasks).find(|t| !tasks.contains(t)) {
        return Err(PackageError::Edit(format!(
            "plan {name} names task {missing:?}, which the operator does not define (add it first with `package add task`)"
        )));
    }
    let value = to_value(plan)?;
    edit(dir, OPERATOR_FILE, |doc| {
        let plans = doc
            .entry(Value::from("plans"))
            .or_insert_with(|| Value::Mapping(Mapping::new()));
        if plans.is_null() {
            *plans = Value::Mapping(Mapping::new());
        }
        match plans {
            Value::Mapping(m) => {
                m.insert(name.into(), value);
                Ok(())
            }
            _ => Err(PackageError::Edit("plans is not a mapping".into())),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_operator_folder_is_the_start_or_its_only_sub_folder_with_operator_yaml() {
        let dir = tempfile::tempdir().unwrap();
        let err = operator_dir(dir.path()).unwrap_err().to_string();
        assert_eq!(err, "no operator folder discovered");
        for sub in ["a", "b"] {
            std::fs::create_dir_all(dir.path().join(sub)).unwrap();
            std::fs::write(dir.path().join(sub).join(OPERATOR_FILE), "name: x\n").unwrap();
        }
        let err = operator_dir(dir.path()).unwrap_err().to_string();
        assert_eq!(err, "multiple operator folders discovered");
        std::fs::remove_file(dir.path().join("b").join(OPERATOR_FILE)).unwrap();
        assert_eq!(operator_dir(dir.path()).unwrap(), dir.path().join("a"));
        let a = dir.path().join("a");
        assert_eq!(operator_dir(&a).unwrap(), a);
    }
}
