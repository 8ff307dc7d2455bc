//! The runtime's error type.
//!
//! One enum for everything the runtime itself can fail at (API calls, serving metrics, leader
//! election, a missing cache), so that operator authors can wrap it once in their own error
//! type (`#[error(transparent)] Opkit(#[from] opkit::Error)`) and use `?` on every helper.
//!
//! Reconciles branch on what the API server answered far more often than on anything else, so
//! the answers have names: [`ApiErrorExt`] (`is_not_found`, `is_conflict`, …) on both this
//! error and kube's, and [`ResultExt::ignore_not_found`] for the commonest case — a delete or a
//! read where "already gone" is success. A [`TerminalError`] tells the controller that retrying
//! cannot help (the spec asks for something impossible): it is recorded as a `Warning` event and
//! the key waits for the object to change instead of backing off forever.

use std::net::SocketAddr;

use kube::core::Status;

/// What went wrong in the runtime or one of its helpers.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A call to the Kubernetes API failed.
    #[error("kubernetes API: {0}")]
    Kube(#[from] kube::Error),
    /// The metrics or probe address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The cause.
        source: std::io::Error,
    },
    /// A cache was asked for a kind no controller of this manager watches.
    #[error(
        "no cache for {0}: declare it with `for`/`owns`/`watches` on a controller of this manager"
    )]
    NotWatched(String),
    /// An owner index was asked for a kind no controller of this manager indexes.
    #[error(
        "no owner index for {0}: declare it with `index_owners` on a controller of this manager"
    )]
    NotIndexed(String),
    /// An object has no name (or no namespace where one is required).
    #[error("object has no {0}")]
    MissingMetadata(&'static str),
    /// This manager lost its leader-election lease; its controllers were stopped.
    #[error("leader election lost: lease {0} is no longer held by this manager")]
    LeaderElectionLost(String),
    /// Leader-election timings that cannot work (client-go's rule: lease duration >
    /// renew deadline > retry period > 0).
    #[error("invalid leader election settings: {0}")]
    InvalidLeaderElection(String),
    /// Serialising an object failed.
    #[error("serialize: {0}")]
    Serialize(#[from] serde_json::Error),
    /// Rendering YAML failed.
    #[error("yaml: {0}")]
    Yaml(#[from] serde_yaml::Error),
    /// The stop-signal handlers could not be installed.
    #[error("{0}")]
    Signals(std::io::Error),
    /// A kubeconfig or in-cluster configuration could not be loaded.
    #[error("client configuration: {0}")]
    Config(String),
    /// The webhook server's certificates could not be created, stored, loaded or published.
    #[error("webhook certificates: {0}")]
    WebhookCerts(String),
    /// The webhook server's conversions are set up wrongly (a kind twice, a spoke of
    /// another kind): the server does not start.
    #[error("webhook conversion: {0}")]
    InvalidConversion(#[from] crate::webhook::InvalidConversion),
    /// An event was published without a reason.
    #[error("an event needs a reason: call .reason(\"CamelCaseCause\") before publish()")]
    EventWithoutReason,
    /// The reconcile cannot succeed until the object changes (see [`TerminalError`]).
    #[error(transparent)]
    Terminal(#[from] TerminalError),
}

impl Error {
    /// A [`TerminalError`] with `message`: the reconcile is not retried until the object
    /// changes. `return Err(opkit::Error::terminal("size 0 is not allowed").into())`.
    pub fn terminal(message: impl Into<String>) -> Error {
        Error::Terminal(TerminalError::new(message))
    }
}

/// A reconcile failure that retrying will not fix — the spec asks for something the operator
/// cannot do, a referenced object is of the wrong kind — as controller-runtime's
/// `reconcile.TerminalError`.
///
/// The controller counts it as an error (and in `controller_runtime_terminal_reconcile_errors`),
/// records a `Warning` event `ReconcileFailed` with the message on the object, and does not
/// requeue the key: the next reconcile comes when the object (or something mapped to it)
/// changes, or from a resync.
///
/// It is found anywhere in the error's [`source`](std::error::Error::source) chain, so it can
/// be wrapped in the operator's own error type — `#[error(transparent)]` included, directly or
/// through [`Error::Terminal`].
#[derive(Debug)]
pub struct TerminalError {
    message: String,
    // The chain's last link. `#[error(transparent)]` forwards `source()` to the wrapped error's
    // source, skipping the wrapped error itself; this link survives that.
    marker: NotRetried,
}

impl TerminalError {
    /// A terminal error saying `message`.
    pub fn new(message: impl Into<String>) -> TerminalError {
        TerminalError {
            message: message.into(),
            marker: NotRetried,
        }
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl std::fmt::Display for TerminalError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for TerminalError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.marker)
    }
}

/// The last link of a [`TerminalError`]'s chain (what an error report prints after the
/// message).
#[derive(Debug)]
struct NotRetried;

impl std::fmt::Display for NotRetried {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("not retried until the object changes")
    }
}

impl std::error::Error for NotRetried {}

/// Whether `error` or anything in its source chain is a [`TerminalError`].
pub(crate) fn is_terminal(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut next = Some(error);
    while let Some(e) = next {
        if e.is::<NotRetried>() || e.is::<TerminalError>() {
            return true;
        }
        next = e.source();
    }
    false
}

/// What the API server answered, by name: implemented for [`Error`] and [`kube::Error`].
pub trait ApiErrorExt {
    /// The API server's `Status`, when the error is an API answer (not a transport failure).
    fn api_status(&self) -> Option<&Status>;

    /// 404: the object (or its namespace) does not exist.
    fn is_not_found(&self) -> bool {
        self.api_status().is_some_and(|s| s.code == 404)
    }

    /// 409 `AlreadyExists`: a create found the name taken.
    fn is_already_exists(&self) -> bool {
        self.api_status().is_some_and(Status::is_already_exists)
    }

    /// 409 `Conflict`: the write carried a stale `resourceVersion` (read again and retry).
    fn is_conflict(&self) -> bool {
        self.api_status().is_some_and(Status::is_conflict)
    }

    /// 403: RBAC (or admission) refused the request.
    fn is_forbidden(&self) -> bool {
        self.api_status().is_some_and(|s| s.code == 403)
    }

    /// 422 `Invalid`: the object failed validation.
    fn is_invalid(&self) -> bool {
        self.api_status().is_some_and(Status::is_invalid)
    }
}

impl ApiErrorExt for kube::Error {
    fn api_status(&self) -> Option<&Status> {
        match self {
            kube::Error::Api(status) => Some(status),
            _ => None,
        }
    }
}

impl ApiErrorExt for Error {
    fn api_status(&self) -> Option<&Status> {
        match self {
            Error::Kube(e) => e.api_status(),
            _ => None,
        }
    }
}

/// [`ignore_not_found`](ResultExt::ignore_not_found) on API results.
pub trait ResultExt<T, E> {
    /// `Ok(Some(value))` on success, `Ok(None)` when the API answered 404, the error
    /// otherwise — controller-runtime's `client.IgnoreNotFound`. A delete of something already
    /// gone, or a read of something that may not exist yet, reads as one line.
    fn ignore_not_found(self) -> std::result::Result<Option<T>, E>;
}

impl<T, E: ApiErrorExt> ResultExt<T, E> for std::result::Result<T, E> {
    fn ignore_not_found(self) -> std::result::Result<Option<T>, E> {
        match self {
            Ok(v) => Ok(Some(v)),
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// `Result` with the runtime's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
