//! The runtime's error type.
//!
//! One enum for everything the runtime itself can fail at (API calls, serving metrics, leader
//! election, a missing cache), so that operator authors can wrap it once in their own error
//! type (`#[error(transparent)] Opkit(#[from] opkit::Error)`) and use `?` on every helper.

use std::net::SocketAddr;

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
}

/// `Result` with the runtime's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
