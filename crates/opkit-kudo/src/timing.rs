//! When each step of a plan run started and finished, for `plan status --wide`.
//!
//! KUDO's status has no room for it and its schema is shared with KUDO's tools, so the
//! manager keeps the times in an annotation of the instance, [`STEP_TIMES_ANNOTATION`]:
//! JSON `{"<plan>": {"uid": "<run uid>", "steps": {"<phase>/<step>": {"started":
//! "<RFC 3339>", "finished": "<RFC 3339>"}}}}`. A step's `started` is set on the first pass
//! that sees it past `PENDING`, `finished` when it is `COMPLETE` or `FATAL_ERROR`. A new run
//! of a plan (new uid) starts its entry afresh.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde::{Deserialize, Serialize};

use crate::api::{ExecutionStatus, PlanStatus};

/// The annotation holding the step times.
pub const STEP_TIMES_ANNOTATION: &str = "kudo.opkit.dev/step-times";

/// Every plan's last run's step times (the annotation's content).
pub type StepTimes = BTreeMap<String, PlanTimes>;

/// One plan run's step times.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PlanTimes {
    /// The run's uid.
    #[serde(default)]
    pub uid: String,
    /// `<phase>/<step>` → its times.
    #[serde(default)]
    pub steps: BTreeMap<String, StepTime>,
}

/// When a step started and finished.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StepTime {
    /// The first pass that ran it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started: Option<Time>,
    /// When it became `COMPLETE` or `FATAL_ERROR`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished: Option<Time>,
}

/// Reads the annotation's value (an unreadable value reads as no times: they are
/// informational only).
pub fn parse(annotation: Option<&str>) -> StepTimes {
    annotation
        .and_then(|text| serde_json::from_str(text).ok())
        .unwrap_or_default()
}

/// The key of a step in [`PlanTimes::steps`].
pub fn step_key(phase: &str, step: &str) -> String {
    format!("{phase}/{step}")
}

/// Records what `status` (a plan's status after a pass) says about its steps at `now`;
/// returns whether anything changed.
pub(crate) fn record(times: &mut StepTimes, status: &PlanStatus, now: &Time) -> bool {
    let entry = times.entry(status.name.clone()).or_default();
    let mut changed = false;
    if entry.uid != status.uid {
        *entry = PlanTimes {
            uid: status.uid.clone(),
            steps: BTreeMap::new(),
        };
        changed = true;
    }
    for phase in &status.phases {
        for step in &phase.steps {
            if matches!(
                step.status,
                ExecutionStatus::Pending | ExecutionStatus::NeverRun
            ) {
                continue;
            }
            let t = entry
                .steps
                .entry(step_key(&phase.name, &step.name))
                .or_default();
            if t.started.is_none() {
                t.started = Some(now.clone());
                changed = true;
            }
            if step.status.is_terminal() && t.finished.is_none() {
                t.finished = Some(now.clone());
                changed = true;
            }
        }
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{PhaseStatus, StepStatus};

    fn time(s: i64) -> Time {
        Time(jiff::Timestamp::from_second(s).unwrap())
    }

    fn status(uid: &str, steps: &[(&str, ExecutionStatus)]) -> PlanStatus {
        PlanStatus {
            name: "deploy".into(),
            uid: uid.into(),
            phases: vec![PhaseStatus {
                name: "main".into(),
                steps: steps
                    .iter()
                    .map(|(n, s)| StepStatus {
                        name: n.to_string(),
                        status: *s,
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    #[test]
    fn steps_get_start_and_finish_times_once() {
        use ExecutionStatus::*;
        let mut t = StepTimes::new();
        assert!(record(
            &mut t,
            &status("u1", &[("a", InProgress), ("b", Pending)]),
            &time(10)
        ));
        assert!(record(
            &mut t,
            &status("u1", &[("a", Complete), ("b", Error)]),
            &time(20)
        ));
        assert!(!record(
            &mut t,
            &status("u1", &[("a", Complete), ("b", Error)]),
            &time(30)
        ));
        let run = &t["deploy"];
        assert_eq!(run.steps["main/a"].started, Some(time(10)));
        assert_eq!(run.steps["main/a"].finished, Some(time(20)));
        assert_eq!(run.steps["main/b"].started, Some(time(20)));
        assert_eq!(run.steps["main/b"].finished, None);
        // A new run starts afresh; the annotation reads back.
        assert!(record(&mut t, &status("u2", &[("a", Pending)]), &time(40)));
        assert!(t["deploy"].steps.is_empty());
        let text = serde_json::to_string(&t).unwrap();
        assert_eq!(parse(Some(&text)), t);
        assert_eq!(parse(Some("not json")), StepTimes::new());
    }
}
