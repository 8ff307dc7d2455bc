//! Why a release operation failed, kept apart by kind so a reconciler can tell a chart that
//! cannot render (retrying will not help until the chart or values change) from an API
//! that failed (retry). The texts are Helm's where Helm has one.

use crate::storage::StorageError;

/// Why [`crate::Releases`] could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum ActionError {
    /// The release name is not valid (Helm's `release name check failed: …`).
    #[error("{0}")]
    InvalidName(String),
    /// The chart did not render: a template failed (the text names the template, line and
    /// column as Helm does), a rendered document is not YAML, or the chart's `kubeVersion`
    /// excludes the cluster's version.
    #[error("{0}")]
    Render(String),
    /// A template's `lookup` could not read the cluster (the render fails with Helm's text;
    /// retrying can help, unlike [`ActionError::Render`]).
    #[error("{0}")]
    Lookup(String),
    /// The values failed the chart's `values.schema.json` (Helm's report, chart by chart).
    #[error("{0}")]
    Schema(String),
    /// The values or the chart's dependencies could not be prepared.
    #[error("{0}")]
    Values(String),
    /// A rendered document is not a Kubernetes object (`YAML parse error on …`).
    #[error("{0}")]
    Manifest(String),
    /// The cluster does not serve a kind the chart renders.
    #[error(
        "resource mapping not found for name: {name:?} namespace: {namespace:?}: no matches for kind {kind:?} in version {api_version:?}"
    )]
    UnknownKind {
        /// `apiVersion`.
        api_version: String,
        /// `kind`.
        kind: String,
        /// The object's name.
        name: String,
        /// The object's namespace (empty when cluster-scoped).
        namespace: String,
    },
    /// An API request about one object failed.
    #[error("{action} {kind} {name:?}: {source}")]
    Api {
        /// What was being done (`apply`, `get`, `delete`, …).
        action: &'static str,
        /// The object's kind.
        kind: String,
        /// The object's name (`namespace/name` when namespaced).
        name: String,
        /// The cause.
        #[source]
        source: Box<kube::Error>,
    },
    /// Discovery (server version, API resources) failed.
    #[error("could not get the cluster's capabilities: {0}")]
    Discovery(#[source] Box<kube::Error>),
    /// Reading or writing release records failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// A hook failed or did not finish in time.
    #[error("{event} hook {name} failed: {message}")]
    Hook {
        /// The event (`pre-install`, …).
        event: String,
        /// The hook's `kind/name`.
        name: String,
        /// What happened.
        message: String,
    },
    /// There is no such release or revision (Helm's `release: not found`).
    #[error("release: not found")]
    NotFound,
    /// The operation panicked or was cancelled on its worker thread.
    #[error("render task failed: {0}")]
    Task(String),
}

impl ActionError {
    /// Whether retrying with the same chart and values cannot help (the chart, the values
    /// or the name is wrong), as opposed to a failure of the cluster or the network.
    pub fn is_permanent(&self) -> bool {
        matches!(
            self,
            ActionError::InvalidName(_)
                | ActionError::Render(_)
                | ActionError::Schema(_)
                | ActionError::Values(_)
                | ActionError::Manifest(_)
        )
    }
}
