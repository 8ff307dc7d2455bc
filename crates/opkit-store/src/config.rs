//! How a store is opened.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The clock [`StoreConfig::history_window`] is measured by: the system's monotonic clock, or
/// one a test moves by hand to age the history without waiting for it to age.
#[derive(Clone, Default)]
pub struct Clock(Option<Arc<dyn Fn() -> Instant + Send + Sync>>);

impl Clock {
    /// The system's monotonic clock.
    pub fn system() -> Clock {
        Clock(None)
    }

    /// A clock reading the time from `now` (which must never go backwards).
    pub fn from_fn(now: impl Fn() -> Instant + Send + Sync + 'static) -> Clock {
        Clock(Some(Arc::new(now)))
    }

    /// The current time.
    pub fn now(&self) -> Instant {
        match &self.0 {
            Some(now) => now(),
            None => Instant::now(),
        }
    }
}

impl fmt::Debug for Clock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_some() {
            "Clock(custom)"
        } else {
            "Clock(system)"
        })
    }
}

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
    /// The clock the history window is measured by (the system's, unless a test sets one).
    pub clock: Clock,
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            path: None,
            history_window: Duration::from_secs(5 * 60),
            history_max_events: 100_000,
            clock: Clock::system(),
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
