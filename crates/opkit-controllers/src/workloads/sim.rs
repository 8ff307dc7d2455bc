//! Failure injection: annotations on a pod (or its template) that make the simulated kubelet
//! misbehave, so operators can be tested against pods that never schedule, crash-loop, fail or
//! are slow to become ready. `docs/SIMULATION.md` documents them with examples.

use std::collections::BTreeMap;
use std::time::Duration;

/// `sim.opkit.dev/behavior`: `pending`, `crash-loop`, `fail` or `never-ready`.
pub(crate) const BEHAVIOR: &str = "sim.opkit.dev/behavior";
/// `sim.opkit.dev/ready-after`: how long after scheduling the pod becomes Running and Ready.
pub(crate) const READY_AFTER: &str = "sim.opkit.dev/ready-after";
/// `sim.opkit.dev/complete-after`: how long a run-to-completion pod runs before it terminates.
pub(crate) const COMPLETE_AFTER: &str = "sim.opkit.dev/complete-after";
/// `sim.opkit.dev/exit-code`: the exit code of a run-to-completion pod's containers.
pub(crate) const EXIT_CODE: &str = "sim.opkit.dev/exit-code";

/// How a simulated pod behaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Behavior {
    /// Scheduled, Running, Ready; run-to-completion pods then terminate with their exit code.
    Normal,
    /// Never scheduled: `PodScheduled=False`, reason `Unschedulable`.
    Pending,
    /// Running but not ready; containers wait in `CrashLoopBackOff`, restarts count up.
    CrashLoop,
    /// Runs, then fails with exit code 1 (or `exit-code`); pods that restart always crash-loop.
    Fail,
    /// Running, containers running, never ready.
    NeverReady,
}

/// The simulation parameters of one pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Sim {
    pub behavior: Behavior,
    pub ready_after: Option<Duration>,
    pub complete_after: Option<Duration>,
    pub exit_code: Option<i32>,
}

impl Sim {
    /// Reads the annotations; unknown or malformed values fall back to normal behaviour (and
    /// are logged).
    pub(crate) fn from_annotations(annotations: Option<&BTreeMap<String, String>>) -> Sim {
        let get = |k: &str| annotations.and_then(|a| a.get(k)).map(|v| v.trim());
        let behavior = match get(BEHAVIOR) {
            None | Some("") | Some("normal") => Behavior::Normal,
            Some("pending") => Behavior::Pending,
            Some("crash-loop") | Some("crashloop") => Behavior::CrashLoop,
            Some("fail") => Behavior::Fail,
            Some("never-ready") => Behavior::NeverReady,
            Some(other) => {
                tracing::warn!(value = other, "unknown {BEHAVIOR} value; ignored");
                Behavior::Normal
            }
        };
        // A Go duration (`500ms`, `5s`, `1m30s`, `2h`) or a bare number of seconds; negative
        // durations are malformed.
        let duration = |k: &str| {
            get(k).and_then(|v| {
                let d = opkit_apimachinery::Duration::parse_or_seconds(v)
                    .ok()
                    .and_then(|d| d.to_std().ok());
                if d.is_none() {
                    tracing::warn!(value = v, "malformed {k} value; ignored");
                }
                d
            })
        };
        Sim {
            behavior,
            ready_after: duration(READY_AFTER),
            complete_after: duration(COMPLETE_AFTER),
            exit_code: get(EXIT_CODE).and_then(|v| v.parse().ok()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_like_go() {
        let ready_after = |v: &str| {
            let a: BTreeMap<String, String> = [(READY_AFTER.to_string(), v.to_string())].into();
            Sim::from_annotations(Some(&a)).ready_after
        };
        assert_eq!(ready_after("5s"), Some(Duration::from_secs(5)));
        assert_eq!(ready_after("500ms"), Some(Duration::from_millis(500)));
        assert_eq!(ready_after("1m30s"), Some(Duration::from_secs(90)));
        assert_eq!(ready_after("1h30m"), Some(Duration::from_secs(5400)));
        assert_eq!(ready_after(" 2 "), Some(Duration::from_secs(2)));
        assert_eq!(ready_after("soon"), None);
        assert_eq!(ready_after("5x"), None);
        assert_eq!(ready_after("-5s"), None);
    }

    #[test]
    fn annotations_select_behaviour() {
        let a: BTreeMap<String, String> = [
            (BEHAVIOR.to_string(), "crash-loop".to_string()),
            (READY_AFTER.to_string(), "3s".to_string()),
            (EXIT_CODE.to_string(), "3".to_string()),
        ]
        .into();
        let sim = Sim::from_annotations(Some(&a));
        assert_eq!(sim.behavior, Behavior::CrashLoop);
        assert_eq!(sim.ready_after, Some(Duration::from_secs(3)));
        assert_eq!(sim.exit_code, Some(3));
        assert_eq!(Sim::from_annotations(None).behavior, Behavior::Normal);
    }
}
