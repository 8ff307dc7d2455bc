//! `Dummy`: a task that does nothing and fails or succeeds on demand (KUDO's test tool for
//! plans: `wantErr` fails, `fatal` makes the failure fatal, `done` finishes).

use crate::api::Task;
use crate::task::{Context, Progress, TaskError};

/// KUDO's error text.
const DUMMY_ERROR: &str = "dummy error";

/// Runs a `Dummy` task.
pub(crate) async fn run(_ctx: &Context, task: &Task) -> Result<Progress, TaskError> {
    outcome(task)
}

fn outcome(task: &Task) -> Result<Progress, TaskError> {
    let spec = &task.spec;
    match (spec.want_err, spec.fatal, spec.done) {
        (true, true, _) => Err(TaskError::Fatal(DUMMY_ERROR.into())),
        (true, false, _) => Err(TaskError::Transient(DUMMY_ERROR.into())),
        (false, _, true) => Ok(Progress::Done),
        (false, _, false) => Ok(Progress::Waiting(format!(
            "dummy task {} is not done",
            task.name
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::TaskSpec;

    fn dummy(want_err: bool, fatal: bool, done: bool) -> Task {
        Task {
            name: "d".into(),
            kind: "Dummy".into(),
            spec: TaskSpec {
                want_err,
                fatal,
                done,
                ..Default::default()
            },
        }
    }

    #[test]
    fn dummy_answers_as_its_spec_says() {
        assert_eq!(outcome(&dummy(false, false, true)), Ok(Progress::Done));
        assert_eq!(
            outcome(&dummy(false, false, false)),
            Ok(Progress::Waiting("dummy task d is not done".into()))
        );
        assert_eq!(
            outcome(&dummy(true, false, true)),
            Err(TaskError::Transient("dummy error".into()))
        );
        assert_eq!(
            outcome(&dummy(true, true, false)),
            Err(TaskError::Fatal("dummy error".into()))
        );
    }
}
