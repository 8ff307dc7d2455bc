//! `Delete`: render the task's templates and delete every object (foreground propagation, as
//! KUDO); objects of kinds the server does not serve and objects already gone are fine.
//! Done when none of them exists any more.

use crate::api::Task;
use crate::object::{self, describe};
use crate::render::render;
use crate::task::apply::enhance_all;
use crate::task::{Context, Progress, TaskError};

/// Runs a `Delete` task.
pub(crate) async fn run(ctx: &Context, task: &Task) -> Result<Progress, TaskError> {
    if task.spec.resources.is_empty() {
        return Err(TaskError::Fatal(format!(
            "task validation error: delete task '{}' has an empty resource list. if that's what you need, use a Dummy task instead",
            task.name
        )));
    }
    let objs = render(ctx, task, &task.spec.resources)?;
    // Enhancing puts namespaced objects in the instance's namespace, as KUDO does.
    let placed = enhance_all(ctx, objs, true).await?;
    for (obj, p) in &placed {
        object::delete(&ctx.client, p, obj).await?;
    }
    let mut left = Vec::new();
    for (obj, p) in &placed {
        match object::get(&ctx.client, p, obj).await {
            Ok(None) => {}
            Ok(Some(_)) => left.push(describe(obj)),
            // KUDO: an error while checking is not a task error; look again next pass.
            Err(e) => left.push(format!("{} ({e})", describe(obj))),
        }
    }
    if left.is_empty() {
        Ok(Progress::Done)
    } else {
        Ok(Progress::Waiting(format!(
            "waiting for deletion of {}",
            left.join(", ")
        )))
    }
}
