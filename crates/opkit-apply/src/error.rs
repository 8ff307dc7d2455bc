//! Why an apply failed. Conflicts carry what the server needs to answer upstream's `409`
//! `Status` (message and `FieldManagerConflict` causes); the rest are malformed input.

use std::fmt;

/// One field another manager owns with a different value than the applied configuration's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    /// The other manager, as upstream prints it: `"kubectl"` for an applier, `"kubectl" using
    /// apps/v1` for an updater, with `with subresource "status"` when it wrote a subresource.
    pub manager: String,
    /// The field, in structured-merge-diff's path syntax: `.spec.replicas`,
    /// `.spec.containers[name="app"].image`.
    pub field: String,
}

impl fmt::Display for Conflict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "conflict with {}: {}", self.manager, self.field)
    }
}

/// An error of [`crate::apply`] or of decoding managed fields.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ApplyError {
    /// The applied configuration sets fields other managers own to other values; the message is
    /// upstream's (`Apply failed with 1 conflict: conflict with "kubectl" using apps/v1:
    /// .spec.replicas`).
    #[error("{}", conflict_message(.0))]
    Conflicts(Vec<Conflict>),
    /// A value nests deeper than [`crate::MAX_DEPTH`].
    #[error("the object nests deeper than {max} levels")]
    TooDeep {
        /// The bound.
        max: usize,
    },
    /// The applied configuration is not an object.
    #[error("the applied configuration must be an object")]
    NotAnObject,
    /// `metadata.managedFields` (or one `fieldsV1`) could not be decoded.
    #[error("invalid managedFields: {0}")]
    InvalidManagedFields(String),
}

/// Upstream's message for a set of conflicts: one line for one conflict, else grouped by manager.
fn conflict_message(conflicts: &[Conflict]) -> String {
    if let [one] = conflicts {
        return format!("Apply failed with 1 conflict: {one}");
    }
    let mut managers: Vec<&str> = conflicts.iter().map(|c| c.manager.as_str()).collect();
    managers.sort_unstable();
    managers.dedup();
    let mut lines = Vec::new();
    for m in managers {
        lines.push(format!("conflicts with {m}:"));
        for c in conflicts.iter().filter(|c| c.manager == m) {
            lines.push(format!("- {}", c.field));
        }
    }
    format!(
        "Apply failed with {} conflicts: {}",
        conflicts.len(),
        lines.join("\n")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conflict_messages_are_worded_as_upstream() {
        let one = ApplyError::Conflicts(vec![Conflict {
            manager: "\"kubectl\" using apps/v1".into(),
            field: ".spec.replicas".into(),
        }]);
        assert_eq!(
            one.to_string(),
            "Apply failed with 1 conflict: conflict with \"kubectl\" using apps/v1: .spec.replicas"
        );
        let two = ApplyError::Conflicts(vec![
            Conflict {
                manager: "\"b\"".into(),
                field: ".x".into(),
            },
            Conflict {
                manager: "\"a\"".into(),
                field: ".y".into(),
            },
        ]);
        assert_eq!(
            two.to_string(),
            "Apply failed with 2 conflicts: conflicts with \"a\":\n- .y\nconflicts with \"b\":\n- .x"
        );
    }
}
