//! `Toggle`: an `Apply` of the task's resources when its boolean parameter is true, a
//! `Delete` when false. The value is read as Go's `strconv.ParseBool` reads it (`1`, `t`,
//! `T`, `TRUE`, `true`, `True` and their false counterparts); anything else is fatal.

use opkit_template::Value;

use crate::api::Task;
use crate::render::fatal;
use crate::task::{Context, Progress, TaskError, apply, delete};

/// Go's `strconv.ParseBool`.
pub(crate) fn parse_bool(s: &str) -> Result<bool, String> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Ok(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Ok(false),
        _ => Err(format!("strconv.ParseBool: parsing {s:?}: invalid syntax")),
    }
}

/// Whether the toggle's parameter turns the resources on.
pub(crate) fn enabled(ctx: &Context, task: &Task) -> Result<bool, TaskError> {
    let p = &task.spec.parameter;
    let value = ctx
        .variables
        .params
        .get(p)
        .ok_or_else(|| fatal(ctx, task, format!("no value for parameter {p} found")))?;
    let Value::String(s) = value else {
        return Err(fatal(
            ctx,
            task,
            format!("value of parameter {p} isn't a string"),
        ));
    };
    parse_bool(s).map_err(|e| {
        fatal(
            ctx,
            task,
            format!("could not parse value of parameter {p}: {e}"),
        )
    })
}

/// Runs a `Toggle` task.
pub(crate) async fn run(ctx: &Context, task: &Task) -> Result<Progress, TaskError> {
    if task.spec.resources.is_empty() {
        return Err(TaskError::Fatal(
            "task validation error: toggle task has an empty resource list. if that's what you need, use a Dummy task instead".into(),
        ));
    }
    if task.spec.parameter.is_empty() {
        return Err(TaskError::Fatal(
            "task validation error: Missing parameter to evaluate the Toggle Task".into(),
        ));
    }
    if enabled(ctx, task)? {
        apply::run(ctx, task).await
    } else {
        delete::run(ctx, task).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn booleans_parse_as_go_parses_them() {
        for t in ["1", "t", "T", "TRUE", "true", "True"] {
            assert_eq!(parse_bool(t), Ok(true), "{t}");
        }
        for f in ["0", "f", "F", "FALSE", "false", "False"] {
            assert_eq!(parse_bool(f), Ok(false), "{f}");
        }
        assert_eq!(
            parse_bool("yes").unwrap_err(),
            "strconv.ParseBool: parsing \"yes\": invalid syntax"
        );
        assert!(parse_bool("").is_err() && parse_bool(" true").is_err());
    }
}
