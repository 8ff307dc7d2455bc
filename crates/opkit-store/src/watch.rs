//! Watchers: each reads the shared history with its own cursor.
//!
//! There is no per-watcher queue and no broadcast channel: the history *is* the fan-out buffer.
//! A watcher remembers the sequence number of the next event to look at, filters by prefix, and
//! hands out the `Arc<Event>` stored there, so an event is stored and serialized once however
//! many watchers there are. Replay and live delivery are the same loop, so registration cannot
//! lose or duplicate an event. A `tokio::sync::watch` channel carrying the published revision
//! wakes idle watchers. A watcher that lags so far that the history was trimmed past its cursor
//! (a slow consumer) gets [`StoreError::Compacted`], as Kubernetes clients expect (410, then
//! re-list).

use std::collections::VecDeque;
use std::fmt;
use std::sync::Arc;

use tokio::sync::watch;

use crate::error::StoreError;
use crate::store::Shared;
use crate::sync::read;
use crate::types::Event;

/// Events looked at per acquisition of the state lock, so that a watcher catching up on a long
/// history does not hold up the writer.
const SCAN_CHUNK: u64 = 4096;

/// A stream of events for a key prefix; see [`crate::Store::watch`].
pub struct Watcher {
    shared: Arc<Shared>,
    prefix: Box<str>,
    /// Only events above this revision are delivered.
    after: u64,
    /// Sequence number of the next history event to look at.
    cursor: u64,
    /// Matching events taken from the history but not yet returned.
    buffer: VecDeque<Arc<Event>>,
    /// Every event at or below this revision has been looked at.
    scanned_through: u64,
    notify: watch::Receiver<u64>,
    done: bool,
}

impl fmt::Debug for Watcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Watcher")
            .field("prefix", &self.prefix)
            .field("progress_revision", &self.progress_revision())
            .field("done", &self.done)
            .finish()
    }
}

enum Scan {
    /// Stopped before the end of the history.
    More,
    /// Reached the end of the history.
    Idle,
    /// Reached the end of the history, and the store is shut down.
    Closed,
    Compacted(StoreError),
}

impl Watcher {
    pub(crate) fn new(
        shared: Arc<Shared>,
        prefix: &str,
        after: u64,
        cursor: u64,
        notify: watch::Receiver<u64>,
    ) -> Self {
        Watcher {
            shared,
            prefix: prefix.into(),
            after,
            cursor,
            buffer: VecDeque::new(),
            scanned_through: after,
            notify,
            done: false,
        }
    }

    /// The next event (an `Arc` shared with all watchers: serialize it once).
    ///
    /// Returns `Some(Err(StoreError::Compacted { .. }))` if this watcher fell so far behind that
    /// the history was trimmed past it; the watcher is then finished and returns `None`
    /// afterwards. Otherwise `None` only once the store has shut down and every event has been
    /// delivered. Cancel-safe: dropping the future loses no event.
    pub async fn next(&mut self) -> Option<Result<Arc<Event>, StoreError>> {
        loop {
            if let Some(event) = self.buffer.pop_front() {
                return Some(Ok(event));
            }
            if self.done {
                return None;
            }
            // Mark the current revision as seen before scanning, so that a publish after the
            // scan always wakes the wait below.
            let _ = self.notify.borrow_and_update();
            match self.scan() {
                Scan::More => tokio::task::consume_budget().await,
                Scan::Idle => {
                    if self.buffer.is_empty() && self.notify.changed().await.is_err() {
                        self.done = true;
                    }
                }
                Scan::Closed => self.done = true,
                Scan::Compacted(err) => {
                    self.done = true;
                    return Some(Err(err));
                }
            }
        }
    }

    /// The highest revision `r` such that every matching event with a revision up to `r` has
    /// been returned by [`next`](Self::next): the revision for a watch bookmark. It advances as
    /// `next` is polled, including past events for other prefixes.
    pub fn progress_revision(&self) -> u64 {
        match self.buffer.front() {
            Some(event) => event.revision.saturating_sub(1),
            None => self.scanned_through,
        }
    }

    /// Moves the matching events of the next chunk of history into the buffer.
    fn scan(&mut self) -> Scan {
        let state = read(&self.shared.state);
        let history = &state.history;
        if self.cursor < history.first_seq() {
            return Scan::Compacted(StoreError::Compacted {
                requested: self.progress_revision(),
                compacted: history.compacted(),
            });
        }
        let end = history.end_seq();
        let stop = end.min(self.cursor.saturating_add(SCAN_CHUNK));
        while self.cursor < stop {
            let Some(event) = history.get(self.cursor) else {
                break;
            };
            if event.revision > self.after && event.key.starts_with(&*self.prefix) {
                self.buffer.push_back(event.clone());
            }
            self.cursor += 1;
        }
        if let Some(next) = history.get(self.cursor) {
            self.scanned_through = self.scanned_through.max(next.revision.saturating_sub(1));
            return Scan::More;
        }
        self.scanned_through = self.scanned_through.max(state.revision);
        if state.closed {
            Scan::Closed
        } else {
            Scan::Idle
        }
    }
}
