//! The custom resource's `status`, as operator-sdk's helm operator writes it.
//!
//! The shape is operator-sdk's `internal/helm/internal/types.HelmAppStatus`: `conditions`
//! (`type`, `status`, `reason`, `message`, `lastTransitionTime`) and `deployedRelease`
//! (`name`, `manifest`), with its condition types and reasons. A condition's
//! `lastTransitionTime` moves only when its status flips, so a reconcile that finds nothing
//! new computes a status equal to the stored one — and the reconciler writes nothing.

use serde::{Deserialize, Serialize};

/// `Initialized`: the operator has seen the custom resource.
pub const INITIALIZED: &str = "Initialized";
/// `Deployed`: the release is deployed (or, `False`, uninstalled).
pub const DEPLOYED: &str = "Deployed";
/// `ReleaseFailed`: the last install, upgrade or uninstall failed.
pub const RELEASE_FAILED: &str = "ReleaseFailed";
/// `Irreconcilable`: the values could not be computed or the release could not be reconciled.
pub const IRRECONCILABLE: &str = "Irreconcilable";
/// `Paused` (helm-operator-plugins'): reconciling is paused by annotation.
pub const PAUSED: &str = "Paused";

/// The reasons operator-sdk gives.
pub mod reason {
    /// The release was installed.
    pub const INSTALL_SUCCESSFUL: &str = "InstallSuccessful";
    /// The release was upgraded.
    pub const UPGRADE_SUCCESSFUL: &str = "UpgradeSuccessful";
    /// The release was uninstalled.
    pub const UNINSTALL_SUCCESSFUL: &str = "UninstallSuccessful";
    /// The install failed.
    pub const INSTALL_ERROR: &str = "InstallError";
    /// The upgrade failed.
    pub const UPGRADE_ERROR: &str = "UpgradeError";
    /// The values or the release state could not be reconciled.
    pub const RECONCILE_ERROR: &str = "ReconcileError";
    /// The uninstall failed.
    pub const UNINSTALL_ERROR: &str = "UninstallError";
    /// The pause annotation is `"true"` (helm-operator-plugins').
    pub const PAUSE_ANNOTATION_TRUE: &str = "PauseReconcileAnnotationTrue";
}

/// One condition (operator-sdk's `HelmAppCondition`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HelmAppCondition {
    /// The condition type.
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// Why, in one CamelCase word.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// Why, for people: the release notes, or the error.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// When `status` last changed (RFC 3339, seconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<String>,
}

/// The deployed release (operator-sdk's `HelmAppRelease`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct HelmAppRelease {
    /// The release name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The rendered manifest.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub manifest: String,
}

/// The status block (operator-sdk's `HelmAppStatus`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct HelmAppStatus {
    /// The conditions.
    #[serde(default)]
    pub conditions: Vec<HelmAppCondition>,
    /// The deployed release, once there is one.
    #[serde(default)]
    pub deployed_release: Option<HelmAppRelease>,
}

impl HelmAppStatus {
    /// The status stored in a custom resource's `status` (empty when missing or unreadable,
    /// as operator-sdk's `StatusFor`).
    pub fn from_status(status: Option<&serde_json::Value>) -> HelmAppStatus {
        status
            .and_then(|s| serde_json::from_value(s.clone()).ok())
            .unwrap_or_default()
    }

    /// The condition of `type_`, if set.
    pub fn condition(&self, type_: &str) -> Option<&HelmAppCondition> {
        self.conditions.iter().find(|c| c.type_ == type_)
    }

    /// Sets a condition (`status` `true` → `"True"`); its `lastTransitionTime` is now if it
    /// is new or its status flips, else kept.
    pub fn set(&mut self, type_: &str, status: bool, reason: &str, message: &str) {
        let status = if status { "True" } else { "False" };
        let now = || {
            jiff::Timestamp::now()
                .strftime("%Y-%m-%dT%H:%M:%SZ")
                .to_string()
        };
        let condition = |last_transition_time| HelmAppCondition {
            type_: type_.to_string(),
            status: status.to_string(),
            reason: reason.to_string(),
            message: message.to_string(),
            last_transition_time,
        };
        match self.conditions.iter_mut().find(|c| c.type_ == type_) {
            Some(c) => {
                let time = if c.status == status {
                    c.last_transition_time.clone()
                } else {
                    Some(now())
                };
                *c = condition(time);
            }
            None => self.conditions.push(condition(Some(now()))),
        }
    }

    /// Removes the condition of `type_`, if set.
    pub fn remove(&mut self, type_: &str) {
        self.conditions.retain(|c| c.type_ != type_);
    }

    /// The merge patch that makes a stored status equal to this one (`deployedRelease` is
    /// sent as `null` to remove it).
    pub(crate) fn merge_patch(&self) -> serde_json::Value {
        serde_json::json!({
            "status": {
                "conditions": self.conditions,
                "deployedRelease": self.deployed_release,
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_transition_time_moves_only_when_the_status_flips() {
        let mut status = HelmAppStatus::default();
        status.set(DEPLOYED, true, reason::INSTALL_SUCCESSFUL, "notes");
        let first = status.condition(DEPLOYED).cloned().expect("set");
        assert!(first.last_transition_time.is_some());
        let mut again = status.clone();
        again.set(DEPLOYED, true, reason::INSTALL_SUCCESSFUL, "notes");
        assert_eq!(again, status, "the same condition again changes nothing");
        let mut old = status.clone();
        old.conditions[0].last_transition_time = Some("2000-01-01T00:00:00Z".into());
        let mut flipped = old.clone();
        flipped.set(DEPLOYED, false, reason::UNINSTALL_SUCCESSFUL, "");
        assert_ne!(
            flipped.conditions[0].last_transition_time,
            old.conditions[0].last_transition_time
        );
        let mut reworded = old.clone();
        reworded.set(DEPLOYED, true, reason::UPGRADE_SUCCESSFUL, "new notes");
        assert_eq!(
            reworded.conditions[0].last_transition_time,
            old.conditions[0].last_transition_time
        );
        assert_eq!(reworded.conditions[0].reason, "UpgradeSuccessful");
        reworded.remove(DEPLOYED);
        assert!(reworded.condition(DEPLOYED).is_none());
    }

    #[test]
    fn the_status_reads_and_writes_operator_sdks_field_names() {
        let stored = serde_json::json!({
            "conditions": [{"type": "Initialized", "status": "True",
                            "lastTransitionTime": "2024-01-01T00:00:00Z"}],
            "deployedRelease": {"name": "web", "manifest": "---\nkind: X\n"},
        });
        let status = HelmAppStatus::from_status(Some(&stored));
        assert_eq!(
            status.deployed_release.as_ref().map(|r| r.name.as_str()),
            Some("web")
        );
        assert_eq!(status.merge_patch()["status"], stored);
        assert_eq!(
            HelmAppStatus::from_status(Some(&serde_json::json!("junk"))),
            HelmAppStatus::default()
        );
        let cleared = HelmAppStatus::default().merge_patch();
        assert_eq!(
            cleared["status"]["deployedRelease"],
            serde_json::Value::Null
        );
    }
}
