//! Errors of the store, as types.
//!
//! The API server maps these onto HTTP answers (`Compacted` → 410 Expired, `FutureRevision` →
//! 504 "Too large resource version", the rest → 500), so each failure that a caller can act on has
//! its own variant instead of a string.

use std::path::PathBuf;
use std::sync::Arc;

/// Everything that can go wrong in the store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The database file is held open by another process, or by another [`crate::Store`] of
    /// this process (redb takes an exclusive lock per open file description).
    #[error(
        "store database {path} is already open (by another process, or by another Store in this process)"
    )]
    Locked {
        /// The database file.
        path: PathBuf,
    },
    /// The events after `requested` are no longer in the history: watch or paged list from a
    /// revision that old is impossible (Kubernetes: 410 Expired).
    #[error(
        "revision {requested} has been compacted: history is only kept after revision {compacted}"
    )]
    Compacted {
        /// The revision asked for (for a slow watcher: the revision it had reached).
        requested: u64,
        /// The compacted revision at the time of the request.
        compacted: u64,
    },
    /// A list at a revision the store has not reached yet.
    #[error("revision {requested} is newer than the current revision {current}")]
    FutureRevision {
        /// The revision asked for.
        requested: u64,
        /// The current revision.
        current: u64,
    },
    /// An I/O error outside redb (creating the directory, starting the writer thread).
    #[error("I/O error on {path}: {source}")]
    Io {
        /// The path involved.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// An error reported by redb.
    #[error("database error: {0}")]
    Database(#[source] Box<redb::Error>),
    /// The database holds data this store cannot interpret.
    #[error("store data is corrupt: {0}")]
    Corrupt(String),
    /// A commit failed (typically an fsync or a full disk). Like redb itself after an I/O error,
    /// the store then refuses all further writes (reads still work) until it is reopened: the
    /// writes staged behind the failed one were built on it and cannot be kept either.
    #[error("a commit failed, the store accepts no more writes until reopened: {0}")]
    WriteFailed(#[source] Arc<StoreError>),
    /// The store has been shut down.
    #[error("store is closed")]
    Closed,
}

impl StoreError {
    /// Converts any redb error, keeping corruption as [`StoreError::Corrupt`].
    pub(crate) fn from_redb(err: impl Into<redb::Error>) -> StoreError {
        match err.into() {
            redb::Error::Corrupted(message) => StoreError::Corrupt(message),
            other => StoreError::Database(Box::new(other)),
        }
    }
}
