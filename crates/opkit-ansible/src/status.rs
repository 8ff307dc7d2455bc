//! The custom resource's `status`, as operator-sdk's Ansible operator writes it
//! (`internal/ansible/controller/status`).
//!
//! `status.conditions` holds `Running`, `Successful` and `Failure` (`type`, `status`,
//! `lastTransitionTime`, `reason`, `message`, and on the run's outcome `ansibleResult {ok,
//! changed, skipped, failures, completion}`); every other key of `status` is the role's own
//! (written with `operator_sdk.util.k8s_status`) and is kept as it is. The rules are
//! upstream's `SetCondition`: a condition other than `Failure` whose status and reason are
//! unchanged is left alone; otherwise it is replaced, keeping its `lastTransitionTime` when
//! its status did not flip.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// `Running`: a run is in progress, or (reason `Successful`) the last one succeeded.
pub const RUNNING: &str = "Running";
/// `Successful`: the last run succeeded.
pub const SUCCESSFUL: &str = "Successful";
/// `Failure`: the last run failed (its message says which task and why).
pub const FAILURE: &str = "Failure";

/// Reasons and messages, upstream's words.
pub mod reason {
    /// A run is in progress.
    pub const RUNNING: &str = "Running";
    /// The last run succeeded.
    pub const SUCCESSFUL: &str = "Successful";
    /// The last run failed.
    pub const FAILED: &str = "Failed";
    /// `Running` while a run is in progress.
    pub const RUNNING_MESSAGE: &str = "Running reconciliation";
    /// `Running` after a successful run.
    pub const AWAITING_MESSAGE: &str = "Awaiting next reconciliation";
    /// `Successful` after a successful run.
    pub const SUCCESSFUL_MESSAGE: &str = "Last reconciliation succeeded";
}

/// The counts of a run (upstream's `AnsibleResult`), from its `playbook_on_stats` event.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AnsibleResult {
    /// Tasks that were ok.
    #[serde(default)]
    pub ok: u64,
    /// Tasks that changed something.
    #[serde(default)]
    pub changed: u64,
    /// Tasks skipped.
    #[serde(default)]
    pub skipped: u64,
    /// Tasks that failed.
    #[serde(default)]
    pub failures: u64,
    /// When the run ended (ansible-runner's event time).
    #[serde(default)]
    pub completion: String,
}

/// One condition (upstream's `Condition`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    /// The condition type.
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// When `status` last changed (RFC 3339, seconds).
    #[serde(default)]
    pub last_transition_time: String,
    /// The run's counts, on the condition that reports its outcome.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ansible_result: Option<AnsibleResult>,
    /// Why, in one word.
    #[serde(default)]
    pub reason: String,
    /// Why, for people.
    #[serde(default)]
    pub message: String,
}

impl Condition {
    /// A condition set now.
    pub fn new(
        type_: &str,
        status: bool,
        result: Option<AnsibleResult>,
        reason: &str,
        message: &str,
    ) -> Condition {
        Condition {
            type_: type_.into(),
            status: if status { "True" } else { "False" }.into(),
            last_transition_time: now(),
            ansible_result: result,
            reason: reason.into(),
            message: message.into(),
        }
    }
}

fn now() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// The status block: the operator's conditions and everything else as the role wrote it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Status {
    /// The conditions (upstream's order: set order, a replaced condition moves last).
    pub conditions: Vec<Condition>,
    /// The other keys of `status`.
    pub custom: Map<String, Value>,
}

impl Status {
    /// The status stored in a custom resource (unreadable conditions are dropped, as
    /// upstream does).
    pub fn from_object(obj: &Value) -> Status {
        let Some(map) = obj.get("status").and_then(Value::as_object) else {
            return Status::default();
        };
        let mut custom = map.clone();
        let conditions = custom
            .remove("conditions")
            .and_then(|c| c.as_array().cloned())
            .unwrap_or_default()
            .into_iter()
            .filter_map(|c| serde_json::from_value(c).ok())
            .collect();
        Status { conditions, custom }
    }

    /// The condition of `type_`, if set.
    pub fn condition(&self, type_: &str) -> Option<&Condition> {
        self.conditions.iter().find(|c| c.type_ == type_)
    }

    /// Sets a condition by upstream's `SetCondition` rule (see the [module docs](self)).
    pub fn set(&mut self, mut condition: Condition) {
        if let Some(current) = self.condition(&condition.type_) {
            if condition.type_ != FAILURE
                && current.status == condition.status
                && current.reason == condition.reason
            {
                return;
            }
            if current.status == condition.status {
                condition.last_transition_time = current.last_transition_time.clone();
            }
        }
        self.conditions.retain(|c| c.type_ != condition.type_);
        self.conditions.push(condition);
    }

    /// Sets the status of the condition `type_`, if present, keeping the rest of it (its
    /// `lastTransitionTime` moves when the status flips).
    pub fn flip(&mut self, type_: &str, status: bool) {
        if let Some(mut c) = self.condition(type_).cloned() {
            let status = if status { "True" } else { "False" };
            if c.status != status {
                c.status = status.into();
                c.last_transition_time = now();
            }
            self.set(c);
        }
    }

    /// The status before a run: `Successful` false, `Running` true (upstream's
    /// `markRunning`).
    pub fn mark_running(&mut self) {
        self.flip(SUCCESSFUL, false);
        self.set(Condition::new(
            RUNNING,
            true,
            None,
            reason::RUNNING,
            reason::RUNNING_MESSAGE,
        ));
    }

    /// The status after a run (upstream's `markDone`): on success `Running` (with the
    /// counts) and `Successful` true, `Failure` false; on failure `Failure` true with the
    /// counts and `message`, `Running` and `Successful` false.
    pub fn mark_done(&mut self, result: AnsibleResult, failure: Option<&str>) {
        match failure {
            None => {
                self.set(Condition::new(
                    RUNNING,
                    true,
                    Some(result),
                    reason::SUCCESSFUL,
                    reason::AWAITING_MESSAGE,
                ));
                self.set(Condition::new(
                    SUCCESSFUL,
                    true,
                    None,
                    reason::SUCCESSFUL,
                    reason::SUCCESSFUL_MESSAGE,
                ));
                self.set(Condition::new(FAILURE, false, None, "", ""));
            }
            Some(message) => {
                self.flip(RUNNING, false);
                self.set(Condition::new(
                    FAILURE,
                    true,
                    Some(result),
                    reason::FAILED,
                    message,
                ));
                self.set(Condition::new(SUCCESSFUL, false, None, "", ""));
            }
        }
    }

    /// The status when the run could not happen at all (upstream's `markError`).
    pub fn mark_error(&mut self, message: &str) {
        self.flip(RUNNING, false);
        self.flip(SUCCESSFUL, false);
        self.set(Condition::new(FAILURE, true, None, reason::FAILED, message));
    }

    /// The merge patch that writes these conditions (the role's own keys are not touched).
    pub(crate) fn conditions_patch(&self) -> Value {
        serde_json::json!({ "status": { "conditions": self.conditions } })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(ok: u64) -> AnsibleResult {
        AnsibleResult {
            ok,
            completion: "2026-01-01T00:00:00.000000+00:00".into(),
            ..AnsibleResult::default()
        }
    }

    #[test]
    fn a_run_goes_running_then_successful() {
        let mut s = Status::default();
        s.mark_running();
        assert_eq!(
            s.condition(RUNNING).map(|c| c.reason.as_str()),
            Some("Running")
        );
        s.mark_done(result(3), None);
        let running = s.condition(RUNNING).expect("running");
        assert_eq!(
            (running.status.as_str(), running.reason.as_str()),
            ("True", "Successful")
        );
        assert_eq!(running.ansible_result.as_ref().map(|r| r.ok), Some(3));
        assert_eq!(
            s.condition(SUCCESSFUL).map(|c| c.status.as_str()),
            Some("True")
        );
        assert_eq!(
            s.condition(FAILURE).map(|c| c.status.as_str()),
            Some("False")
        );
    }

    #[test]
    fn a_failed_run_sets_failure_with_its_message_and_recovers() {
        let mut s = Status::default();
        s.mark_running();
        s.mark_done(result(1), Some("task \"boom\" failed: no"));
        let failure = s.condition(FAILURE).expect("failure");
        assert_eq!(
            (
                failure.status.as_str(),
                failure.reason.as_str(),
                failure.message.as_str()
            ),
            ("True", "Failed", "task \"boom\" failed: no")
        );
        assert_eq!(
            s.condition(RUNNING).map(|c| c.status.as_str()),
            Some("False")
        );
        assert_eq!(
            s.condition(SUCCESSFUL).map(|c| c.status.as_str()),
            Some("False")
        );
        s.mark_running();
        s.mark_done(result(2), None);
        assert_eq!(
            s.condition(FAILURE).map(|c| c.status.as_str()),
            Some("False")
        );
        assert_eq!(
            s.condition(SUCCESSFUL).map(|c| c.status.as_str()),
            Some("True")
        );
    }

    #[test]
    fn the_roles_own_status_keys_are_kept_and_time_moves_on_flips_only() {
        let stored = serde_json::json!({"status": {
            "nodes": ["a"],
            "conditions": [{"type": "Successful", "status": "True", "reason": "Successful",
                            "message": "m", "lastTransitionTime": "2000-01-01T00:00:00Z"},
                           "junk"],
        }});
        let mut s = Status::from_object(&stored);
        assert_eq!(s.custom["nodes"], serde_json::json!(["a"]));
        assert_eq!(s.conditions.len(), 1, "an unreadable condition is dropped");
        let same = Condition::new(SUCCESSFUL, true, None, "Successful", "other message");
        s.set(same);
        assert_eq!(
            s.conditions[0].message, "m",
            "same status and reason: left alone"
        );
        s.set(Condition::new(SUCCESSFUL, true, None, "Again", ""));
        assert_eq!(s.conditions[0].last_transition_time, "2000-01-01T00:00:00Z");
        s.flip(SUCCESSFUL, false);
        assert_ne!(s.conditions[0].last_transition_time, "2000-01-01T00:00:00Z");
        assert!(s.conditions_patch()["status"].get("nodes").is_none());
    }
}
