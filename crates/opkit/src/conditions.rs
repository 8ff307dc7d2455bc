//! Status conditions (`metav1.Condition`) on a `Vec<Condition>`.
//!
//! Kubernetes API conventions: one condition per `type`, `status` one of `True`, `False`,
//! `Unknown`, `observedGeneration` the `.metadata.generation` the condition was computed
//! from, and `lastTransitionTime` the moment `status` last changed — not the last time the
//! condition was written. [`set`] keeps that rule, so re-setting an unchanged condition on
//! every reconcile does not churn the status (and does not trigger watches).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;

/// `"True"`.
pub const TRUE: &str = "True";
/// `"False"`.
pub const FALSE: &str = "False";
/// `"Unknown"`.
pub const UNKNOWN: &str = "Unknown";

/// Where [`new_at`] and [`set_at`] read the current time. [`new`] and [`set`] use the
/// [`SystemClock`]; a test passes a `Timestamp` (a stopped clock) to get a later
/// `lastTransitionTime` without waiting for the wall clock to reach one.
pub trait Clock {
    /// The current time.
    fn now(&self) -> Timestamp;
}

/// The system's wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp::now()
    }
}

/// A stopped clock: always this instant.
impl Clock for Timestamp {
    fn now(&self) -> Timestamp {
        *self
    }
}

/// A condition of `type_` with `status` (true → `"True"`, false → `"False"`), `reason`,
/// `message` and `observed_generation`; `lastTransitionTime` is now (kept by [`set`] when the
/// status does not change).
pub fn new(
    type_: &str,
    status: bool,
    reason: &str,
    message: impl Into<String>,
    observed_generation: Option<i64>,
) -> Condition {
    new_at(
        &SystemClock,
        type_,
        status,
        reason,
        message,
        observed_generation,
    )
}

/// [`new`] with the time read from `clock`.
pub fn new_at(
    clock: &impl Clock,
    type_: &str,
    status: bool,
    reason: &str,
    message: impl Into<String>,
    observed_generation: Option<i64>,
) -> Condition {
    Condition {
        type_: type_.to_string(),
        status: if status { TRUE } else { FALSE }.to_string(),
        reason: reason.to_string(),
        message: message.into(),
        observed_generation,
        last_transition_time: Time(seconds(clock.now())),
    }
}

/// `t` truncated to whole seconds: Kubernetes serialises Time with second precision, so values
/// stay comparable after a round trip.
fn seconds(t: Timestamp) -> Timestamp {
    Timestamp::from_second(t.as_second()).unwrap_or(t)
}

/// Inserts or updates `condition` by type. Returns whether anything changed.
///
/// If a condition of that type exists with the same status, its `lastTransitionTime` is
/// kept; otherwise it is the new condition's (set to now if it was left at the epoch).
pub fn set(conditions: &mut Vec<Condition>, condition: Condition) -> bool {
    set_at(&SystemClock, conditions, condition)
}

/// [`set`] with "now" read from `clock`.
pub fn set_at(
    clock: &impl Clock,
    conditions: &mut Vec<Condition>,
    mut condition: Condition,
) -> bool {
    if condition.last_transition_time.0 == Timestamp::UNIX_EPOCH {
        condition.last_transition_time = Time(seconds(clock.now()));
    }
    match conditions.iter_mut().find(|c| c.type_ == condition.type_) {
        Some(existing) => {
            if existing.status == condition.status {
                condition.last_transition_time = existing.last_transition_time.clone();
            }
            if *existing == condition {
                return false;
            }
            *existing = condition;
            true
        }
        None => {
            conditions.push(condition);
            true
        }
    }
}

/// The condition of `type_`, if present.
pub fn find<'a>(conditions: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    conditions.iter().find(|c| c.type_ == type_)
}

/// Removes the condition of `type_`; returns whether one was there.
pub fn remove(conditions: &mut Vec<Condition>, type_: &str) -> bool {
    let before = conditions.len();
    conditions.retain(|c| c.type_ != type_);
    conditions.len() != before
}

/// Whether the condition of `type_` has status `True`.
pub fn is_true(conditions: &[Condition], type_: &str) -> bool {
    find(conditions, type_).is_some_and(|c| c.status == TRUE)
}

/// Whether the condition of `type_` has status `False`.
pub fn is_false(conditions: &[Condition], type_: &str) -> bool {
    find(conditions, type_).is_some_and(|c| c.status == FALSE)
}

/// Whether the condition of `type_` is `True` and was computed from `generation`.
pub fn is_true_for(conditions: &[Condition], type_: &str, generation: Option<i64>) -> bool {
    find(conditions, type_).is_some_and(|c| c.status == TRUE && c.observed_generation == generation)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: i64) -> Time {
        Time(Timestamp::from_second(seconds).unwrap_or(Timestamp::UNIX_EPOCH))
    }

    #[test]
    fn last_transition_time_changes_only_when_status_changes() {
        let mut conds = Vec::new();
        let mut ready = new("Ready", false, "Starting", "starting", Some(1));
        ready.last_transition_time = at(100);
        assert!(set(&mut conds, ready));
        let mut again = new("Ready", false, "Waiting", "still waiting", Some(2));
        again.last_transition_time = at(200);
        assert!(set(&mut conds, again));
        assert_eq!(conds[0].last_transition_time, at(100));
        assert_eq!(conds[0].reason, "Waiting");
        assert_eq!(conds[0].observed_generation, Some(2));
        let mut flipped = new("Ready", true, "Up", "up", Some(2));
        flipped.last_transition_time = at(300);
        assert!(set(&mut conds, flipped.clone()));
        assert_eq!(conds[0].last_transition_time, at(300));
        flipped.last_transition_time = at(400);
        assert!(!set(&mut conds, flipped), "same condition is no change");
        assert!(is_true(&conds, "Ready"));
        assert!(is_true_for(&conds, "Ready", Some(2)));
        assert!(!is_false(&conds, "Ready"));
    }

    #[test]
    fn new_and_set_stamp_the_clock_s_time_in_whole_seconds() {
        let t = Timestamp::from_millisecond(1_700_000_000_750).unwrap();
        let c = new_at(&t, "Ready", true, "Up", "", Some(1));
        assert_eq!(c.last_transition_time, at(1_700_000_000));
        let mut unstamped = c.clone();
        unstamped.type_ = "Degraded".into();
        unstamped.last_transition_time = Time(Timestamp::UNIX_EPOCH);
        let later = Timestamp::from_second(1_700_000_060).unwrap();
        let mut conds = Vec::new();
        assert!(set_at(&later, &mut conds, unstamped));
        assert_eq!(conds[0].last_transition_time, at(1_700_000_060));
    }

    #[test]
    fn find_and_remove_by_type() {
        let mut conds = Vec::new();
        set(&mut conds, new("Ready", true, "Up", "", Some(1)));
        set(&mut conds, new("Degraded", false, "Fine", "", Some(1)));
        assert_eq!(conds.len(), 2);
        assert!(find(&conds, "Degraded").is_some());
        assert!(remove(&mut conds, "Degraded"));
        assert!(!remove(&mut conds, "Degraded"));
        assert!(find(&conds, "Degraded").is_none());
        assert!(!is_true(&conds, "Missing"));
    }
}
