//! How a store is opened.

use std::path::PathBuf;
use std::time::Duration;

/// Configuration of a [`crate::Store`].
#[derive(Clone, Debug)]
pub struct StoreConfig {
    /// The database file; `None` keeps everything in memory only (tests, `opkit up --ephemeral`).
    pub path: Option<PathBuf>,
    /// How long events are kept for watch resumption and paged lists (Kubernetes' watch cache
    /// keeps a comparable window). Events older than this are dropped at the next commit.
    pub history_window: Duration,
    /// Cap on the number of events kept, whatever their age: bounds the memory of the history.
    /// The history is also the watchers' fan-out buffer, so this is as well how far a watcher may
    /// lag behind before it gets [`crate::StoreError::Compacted`].
    pub history_max_events: usize,
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            path: None,
            history_window: Duration::from_secs(5 * 60),
            history_max_events: 100_000,
        }
    }
}

impl StoreConfig {
    /// A store kept in memory only, with the default history limits.
    pub fn ephemeral() -> Self {
        StoreConfig::default()
    }

    /// A store persisted in the database file at `path`, with the default history limits.
    pub fn persistent(path: impl Into<PathBuf>) -> Self {
        StoreConfig {
            path: Some(path.into()),
            ..StoreConfig::default()
        }
    }
}
