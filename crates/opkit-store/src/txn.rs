//! The view a transaction closure gets, and the writes it stages.
//!
//! A transaction runs under the stage lock, so it is serialized with every other transaction:
//! what it reads cannot change under it, which is what makes compare-and-swap on
//! `resourceVersion` (read with [`Txn::get`], compare, [`Txn::put`]) safe. Its reads see, in
//! order: its own staged writes, then writes of earlier transactions that are staged but not yet
//! durable (the pending overlay), then the committed state. Reading the pending overlay is what
//! lets transactions be staged back to back while earlier ones wait for their fsync, without
//! losing updates; since a failed commit stops all later writes, nothing built on a failed write
//! is ever acknowledged.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::{Arc, RwLock};

use bytes::Bytes;

use crate::history::Record;
use crate::state::State;
use crate::sync::read;
use crate::types::{Entry, Event, EventKind};

/// A write staged but not yet durable: the key's state once it commits.
#[derive(Debug)]
pub(crate) struct Pending {
    pub(crate) revision: u64,
    pub(crate) entry: Option<Entry>,
}

enum Write {
    Put(Bytes),
    Delete { last_state: Bytes },
}

/// A transaction in progress: reads the latest state and stages writes, which all commit at
/// [`Txn::revision`].
pub struct Txn<'a> {
    revision: u64,
    overlay: &'a HashMap<Arc<str>, Pending>,
    state: &'a RwLock<State>,
    writes: BTreeMap<Arc<str>, Write>,
}

impl fmt::Debug for Txn<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Txn")
            .field("revision", &self.revision)
            .field("writes", &self.writes.len())
            .finish()
    }
}

impl<'a> Txn<'a> {
    pub(crate) fn new(
        revision: u64,
        overlay: &'a HashMap<Arc<str>, Pending>,
        state: &'a RwLock<State>,
    ) -> Self {
        Txn {
            revision,
            overlay,
            state,
            writes: BTreeMap::new(),
        }
    }

    /// The revision this transaction commits at, if it writes anything. Values embed it as
    /// `metadata.resourceVersion` before they are staged.
    pub fn revision(&self) -> u64 {
        self.revision
    }

    /// The key's latest state, including this transaction's own staged writes.
    pub fn get(&self, key: &str) -> Option<Entry> {
        match self.writes.get_key_value(key) {
            Some((key, Write::Put(value))) => Some(Entry {
                key: key.clone(),
                value: value.clone(),
                revision: self.revision,
            }),
            Some((_, Write::Delete { .. })) => None,
            None => self.base(key, &read(self.state)),
        }
    }

    /// Stages a put (create or replace) of `key`.
    pub fn put(&mut self, key: &str, value: Bytes) {
        self.writes.insert(Arc::from(key), Write::Put(value));
    }

    /// Stages the removal of `key`. `last_state` is the object as it looks when deleted
    /// (embedding the new revision): it is what watchers receive in the delete event. Deleting a
    /// key that does not exist is a no-op.
    pub fn delete(&mut self, key: &str, last_state: Bytes) {
        self.writes
            .insert(Arc::from(key), Write::Delete { last_state });
    }

    /// Whether anything is staged.
    pub fn is_empty(&self) -> bool {
        self.writes.is_empty()
    }

    /// The state before this transaction.
    fn base(&self, key: &str, state: &State) -> Option<Entry> {
        match self.overlay.get(key) {
            Some(pending) => pending.entry.clone(),
            None => state.objects.get(key).cloned(),
        }
    }

    /// Turns the staged writes into change records (one per key, in key order), dropping the
    /// deletes of keys that do not exist.
    pub(crate) fn into_records(self) -> Vec<Record> {
        if self.writes.is_empty() {
            return Vec::new();
        }
        let state = read(self.state);
        let mut records = Vec::with_capacity(self.writes.len());
        for (key, write) in &self.writes {
            let prev = self.base(key, &state);
            let prev_revision = prev.as_ref().map_or(0, |entry| entry.revision);
            let event = match write {
                Write::Put(value) => Event {
                    revision: self.revision,
                    kind: EventKind::Put,
                    key: key.clone(),
                    value: value.clone(),
                    created: prev.is_none(),
                    prev: prev.map(|entry| entry.value),
                },
                Write::Delete { last_state } => match prev {
                    None => continue,
                    Some(prev) => Event {
                        revision: self.revision,
                        kind: EventKind::Delete,
                        key: key.clone(),
                        value: last_state.clone(),
                        created: false,
                        prev: Some(prev.value),
                    },
                },
            };
            records.push(Record {
                event: Arc::new(event),
                prev_revision,
            });
        }
        records
    }
}
