//! Errors found while resolving policy.
//!
//! RBAC is purely additive, so a binding that cannot be resolved never fails a request by
//! itself: its rules are simply missing. Upstream still reports such errors — in the reason of a
//! denial, in SelfSubjectRulesReview's `evaluationError`, after an escalation message — so they
//! are kept as values, with upstream's texts as their `Display`.

/// Why the rules of a binding could not be resolved.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RuleError {
    /// The binding references a Role that does not exist in its namespace.
    #[error("role.rbac.authorization.k8s.io {name:?} not found")]
    RoleNotFound {
        /// The namespace searched (empty for a ClusterRoleBinding pointing at a Role).
        namespace: String,
        /// The Role's name.
        name: String,
    },
    /// The binding references a ClusterRole that does not exist.
    #[error("clusterrole.rbac.authorization.k8s.io {name:?} not found")]
    ClusterRoleNotFound {
        /// The ClusterRole's name.
        name: String,
    },
    /// The binding's `roleRef.kind` is neither `Role` nor `ClusterRole`.
    #[error("unsupported role reference kind: {kind:?}")]
    UnsupportedRoleRefKind {
        /// The kind found.
        kind: String,
    },
}

/// Why an aggregated ClusterRole could not be resolved.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AggregationError {
    /// One of its `clusterRoleSelectors` is not a valid label selector; like the upstream
    /// controller, the role then keeps the rules it has.
    #[error("clusterrole {cluster_role:?}: invalid cluster role selector: {message}")]
    InvalidSelector {
        /// The aggregated ClusterRole.
        cluster_role: String,
        /// What is wrong with the selector.
        message: String,
    },
}

/// Formats errors like Go's `utilerrors.NewAggregate(errs).Error()`: one message as is,
/// several (deduplicated) as `[a, b]`.
pub(crate) fn aggregate_messages<'a>(errors: impl IntoIterator<Item = &'a RuleError>) -> String {
    let mut seen: Vec<String> = Vec::new();
    for error in errors {
        let message = error.to_string();
        if !seen.contains(&message) {
            seen.push(message);
        }
    }
    match seen.len() {
        1 => seen.swap_remove(0),
        _ => format!("[{}]", seen.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_display_upstream_not_found_texts() {
        let role = RuleError::RoleNotFound {
            namespace: "ns".into(),
            name: "reader".into(),
        };
        assert_eq!(
            role.to_string(),
            r#"role.rbac.authorization.k8s.io "reader" not found"#
        );
        let cluster_role = RuleError::ClusterRoleNotFound {
            name: "gone".into(),
        };
        assert_eq!(
            cluster_role.to_string(),
            r#"clusterrole.rbac.authorization.k8s.io "gone" not found"#
        );
    }

    #[test]
    fn aggregate_messages_dedupes_and_brackets_several() {
        let a = RuleError::ClusterRoleNotFound { name: "a".into() };
        let b = RuleError::ClusterRoleNotFound { name: "b".into() };
        assert_eq!(
            aggregate_messages([&a, &a]),
            r#"clusterrole.rbac.authorization.k8s.io "a" not found"#
        );
        assert_eq!(
            aggregate_messages([&a, &b, &a]),
            r#"[clusterrole.rbac.authorization.k8s.io "a" not found, clusterrole.rbac.authorization.k8s.io "b" not found]"#
        );
    }
}
