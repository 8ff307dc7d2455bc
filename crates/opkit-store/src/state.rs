//! The committed, in-memory state: every live object, the current revision, and the history.
//!
//! All three live behind one `RwLock`, so that a reader always sees an object map, a revision
//! and a history that agree with each other: a list at an old revision undoes exactly the events
//! newer than it, and a watch starts exactly where the state it was registered against ends.
//! Only durable changes are ever applied here (in durable mode, by the writer thread after the
//! fsync), so every reader — get, list, watch — only sees acknowledged data.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use crate::history::{History, Record};
use crate::types::{Entry, EventKind};

#[derive(Debug)]
pub(crate) struct State {
    pub(crate) objects: BTreeMap<Arc<str>, Entry>,
    /// Highest revision applied (committed and published).
    pub(crate) revision: u64,
    pub(crate) history: History,
    /// Set when the store shuts down: watchers end once they have drained the history.
    pub(crate) closed: bool,
}

impl State {
    /// Applies the changes of one transaction, committed at `revision`.
    pub(crate) fn apply(&mut self, revision: u64, records: &[Record], now: Instant) {
        for record in records {
            let event = &record.event;
            match event.kind {
                EventKind::Put => {
                    self.objects.insert(
                        event.key.clone(),
                        Entry {
                            key: event.key.clone(),
                            value: event.value.clone(),
                            revision,
                        },
                    );
                }
                EventKind::Delete => {
                    self.objects.remove(&*event.key);
                }
            }
            self.history.push(record.clone(), now);
        }
        self.revision = revision;
    }

    /// Trims the history after a group of transactions was applied.
    pub(crate) fn trim_history(&mut self, now: Instant) {
        self.history.trim(now, self.revision);
    }
}
