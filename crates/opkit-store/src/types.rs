//! The values the store hands out: live entries and change events.
//!
//! Both are cheap to clone (`Arc<str>` keys, refcounted [`Bytes`] values), so a list or a watch
//! fan-out never copies object bytes.

use std::sync::Arc;

use bytes::Bytes;

/// A live object: its key, its serialized value, and the revision that last modified it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The key, e.g. `/registry/configmaps/default/foo`.
    pub key: Arc<str>,
    /// The serialized object, as written by the last put.
    pub value: Bytes,
    /// The revision of the last modification (Kubernetes: `metadata.resourceVersion`).
    pub revision: u64,
}

/// What a change did to its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    /// The key was created or replaced.
    Put,
    /// The key was removed.
    Delete,
}

/// One change to one key, as committed. Shared as `Arc<Event>` between the history and all
/// watchers, so that the API server can serialize it once.
#[derive(Debug, PartialEq, Eq)]
pub struct Event {
    /// The revision of the transaction that made the change (several events may share one).
    pub revision: u64,
    /// Put or delete.
    pub kind: EventKind,
    /// The key changed.
    pub key: Arc<str>,
    /// For a put: the new value. For a delete: the object's last state, as the deleting
    /// transaction gave it (embedding the delete's revision).
    pub value: Bytes,
    /// The value before the change; `None` when a put created the key.
    pub prev: Option<Bytes>,
    /// True for a put that created the key (Kubernetes: ADDED rather than MODIFIED).
    pub created: bool,
}
