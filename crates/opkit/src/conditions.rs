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

/// Where [`Builder::at`] and [`set_at`] read the current time ([`set`] and a builder without
/// `at` use the [`SystemClock`]); a test passes a `Timestamp` (a stopped clock) to get a later
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

/// A condition of `type_` with `status` (true → `"True"`, false → `"False"`), built with
/// named parts and set with [`set`]:
///
/// ```
/// # use opkit::conditions;
/// # let generation = Some(3);
/// let mut list = Vec::new();
/// conditions::set(
///     &mut list,
///     conditions::of("Available", true)
///         .reason("ReplicasAvailable")
///         .message("all replicas are available")
///         .observed_generation(generation),
/// );
/// assert!(conditions::is_true_for(&list, "Available", Some(3)));
/// ```
pub fn of(type_: impl Into<String>, status: bool) -> Builder {
    Builder {
        type_: type_.into(),
        status: if status { TRUE } else { FALSE },
        reason: String::new(),
        message: String::new(),
        observed_generation: None,
        at: None,
    }
}

/// [`of`]`("Ready", status)`: the condition most operators report.
pub fn ready(status: bool) -> Builder {
    of("Ready", status)
}

/// A condition under construction; see [`of`]. It becomes a [`Condition`] through `From`
/// (which [`set`] calls), stamped with the current time unless [`Builder::at`] says otherwise.
#[derive(Debug, Clone, PartialEq)]
#[must_use = "a condition builder does nothing until it is set"]
pub struct Builder {
    type_: String,
    status: &'static str,
    reason: String,
    message: String,
    observed_generation: Option<i64>,
    at: Option<Timestamp>,
}

impl Builder {
    /// Status `Unknown` instead (the controller cannot tell yet).
    pub fn unknown(mut self) -> Builder {
        self.status = UNKNOWN;
        self
    }

    /// The machine-readable cause in CamelCase (`ReplicasAvailable`), what tools group by.
    /// Always set one; left out, the reason reads as the status (`True`), which the API
    /// accepts but says nothing.
    pub fn reason(mut self, reason: impl Into<String>) -> Builder {
        self.reason = reason.into();
        self
    }

    /// The human-readable detail (figures belong here, not in repeated events' notes).
    pub fn message(mut self, message: impl Into<String>) -> Builder {
        self.message = message.into();
        self
    }

    /// The `.metadata.generation` the condition was computed from.
    pub fn observed_generation(mut self, generation: Option<i64>) -> Builder {
        self.observed_generation = generation;
        self
    }

    /// `observedGeneration` from `obj`'s `.metadata.generation`: the usual case, a condition
    /// about the object being reconciled.
    pub fn observed(self, obj: &impl kube::Resource) -> Builder {
        let generation = obj.meta().generation;
        self.observed_generation(generation)
    }

    /// `lastTransitionTime` from `clock` instead of the system clock ([`set`] keeps the
    /// existing one when the status does not change).
    pub fn at(mut self, clock: &impl Clock) -> Builder {
        self.at = Some(clock.now());
        self
    }
}

impl From<Builder> for Condition {
    fn from(b: Builder) -> Condition {
        let at = b.at.unwrap_or_else(|| SystemClock.now());
        Condition {
            reason: if b.reason.is_empty() {
                b.status.to_string()
            } else {
                b.reason
            },
            type_: b.type_,
            status: b.status.to_string(),
            message: b.message,
            observed_generation: b.observed_generation,
            last_transition_time: Time(seconds(at)),
        }
    }
}

/// `t` truncated to whole seconds: Kubernetes serialises Time with second precision, so values
/// stay comparable after a round trip.
fn seconds(t: Timestamp) -> Timestamp {
    Timestamp::from_second(t.as_second()).unwrap_or(t)
}

/// Inserts or updates `condition` (a [`Condition`] or a [`Builder`]) by type. Returns
/// whether anything changed.
///
/// If a condition of that type exists with the same status, its `lastTransitionTime` is
/// kept; otherwise it is the new condition's (set to now if it was left at the epoch).
pub fn set(conditions: &mut Vec<Condition>, condition: impl Into<Condition>) -> bool {
    set_at(&SystemClock, conditions, condition)
}

/// [`set`] with "now" read from `clock`.
pub fn set_at(
    clock: &impl Clock,
    conditions: &mut Vec<Condition>,
    condition: impl Into<Condition>,
) -> bool {
    let mut condition = condition.into();
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
        let t = |s| Timestamp::from_second(s).unwrap();
        let starting = of("Ready", false)
            .reason("Starting")
            .message("starting")
            .observed_generation(Some(1))
            .at(&t(100));
        assert!(set(&mut conds, starting));
        let again = of("Ready", false)
            .reason("Waiting")
            .message("still waiting")
            .observed_generation(Some(2))
            .at(&t(200));
        assert!(set(&mut conds, again));
        assert_eq!(conds[0].last_transition_time, at(100));
        assert_eq!(conds[0].reason, "Waiting");
        assert_eq!(conds[0].observed_generation, Some(2));
        let mut flipped: Condition = ready(true)
            .reason("Up")
            .message("up")
            .observed_generation(Some(2))
            .at(&t(300))
            .into();
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
        let c: Condition = ready(true).reason("Up").at(&t).into();
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
    fn a_builder_names_every_part_and_defaults_the_reason_to_the_status() {
        let mut obj = k8s_openapi::api::core::v1::ConfigMap::default();
        obj.metadata.generation = Some(7);
        let c: Condition = of("Synced", false)
            .reason("Pending")
            .message("waiting for the backend")
            .observed(&obj)
            .into();
        assert_eq!(
            (c.type_.as_str(), c.status.as_str(), c.reason.as_str()),
            ("Synced", FALSE, "Pending")
        );
        assert_eq!(c.message, "waiting for the backend");
        assert_eq!(c.observed_generation, Some(7));
        let unknown: Condition = ready(true).unknown().into();
        assert_eq!(
            (unknown.status.as_str(), unknown.reason.as_str()),
            (UNKNOWN, UNKNOWN)
        );
    }

    #[test]
    fn find_and_remove_by_type() {
        let mut conds = Vec::new();
        set(&mut conds, ready(true).reason("Up"));
        set(&mut conds, of("Degraded", false).reason("Fine"));
        assert_eq!(conds.len(), 2);
        assert!(find(&conds, "Degraded").is_some());
        assert!(remove(&mut conds, "Degraded"));
        assert!(!remove(&mut conds, "Degraded"));
        assert!(find(&conds, "Degraded").is_none());
        assert!(!is_true(&conds, "Missing"));
    }
}
