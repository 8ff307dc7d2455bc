//! Range reads: the current state, or the state at a past revision for paged lists.
//!
//! Kubernetes pages a list with `limit` and `continue`, and every page must show the state at
//! the revision of the first page. Rather than keeping old versions of objects (an MVCC store),
//! the state at revision `r` is rebuilt from the current state by undoing the history events
//! newer than `r`: each event carries the value it replaced. That works for any `r` the history
//! still covers, and fails with [`StoreError::Compacted`] for older ones (Kubernetes: 410).

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

use crate::error::StoreError;
use crate::state::State;
use crate::types::Entry;

/// What to list besides the prefix.
#[derive(Clone, Debug, Default)]
pub struct ListOptions {
    /// Start strictly after this key (the last key of the previous page).
    pub start_after: Option<String>,
    /// At most this many entries; `None` or `Some(0)` means no limit (as in Kubernetes).
    pub limit: Option<usize>,
    /// List the state as of this revision instead of the current one.
    pub at_revision: Option<u64>,
}

/// One page of a list.
#[derive(Clone, Debug)]
pub struct ListResult {
    /// The entries, in key order.
    pub entries: Vec<Entry>,
    /// The revision the list reflects.
    pub revision: u64,
    /// Whether entries remain after this page.
    pub more: bool,
    /// How many entries remain after this page (Kubernetes: `remainingItemCount`).
    pub remaining: usize,
}

pub(crate) fn list(
    state: &State,
    prefix: &str,
    opts: &ListOptions,
) -> Result<ListResult, StoreError> {
    let revision = match opts.at_revision {
        None => state.revision,
        Some(requested) if requested > state.revision => {
            return Err(StoreError::FutureRevision {
                requested,
                current: state.revision,
            });
        }
        Some(requested) if requested < state.history.compacted() => {
            return Err(StoreError::Compacted {
                requested,
                compacted: state.history.compacted(),
            });
        }
        Some(requested) => requested,
    };
    let lower: Bound<&str> = match opts.start_after.as_deref() {
        Some(after) if after >= prefix => Bound::Excluded(after),
        _ => Bound::Included(prefix),
    };
    let current = state
        .objects
        .range::<str, _>((lower, Bound::Unbounded))
        .take_while(|(key, _)| key.starts_with(prefix))
        .map(|(_, entry)| entry.clone());
    let limit = match opts.limit {
        None | Some(0) => usize::MAX,
        Some(limit) => limit,
    };
    let (entries, remaining) = if revision == state.revision {
        page(current, limit)
    } else {
        // The state at `revision` of each key changed since: the value before its oldest change.
        let mut undo: BTreeMap<Arc<str>, Option<Entry>> = BTreeMap::new();
        for record in state.history.since(revision) {
            let event = &record.event;
            if !event.key.starts_with(prefix) || !above(lower, &event.key) {
                continue;
            }
            undo.entry(event.key.clone()).or_insert_with(|| {
                event.prev.as_ref().map(|value| Entry {
                    key: event.key.clone(),
                    value: value.clone(),
                    revision: record.prev_revision,
                })
            });
        }
        page(merge(current, undo), limit)
    };
    Ok(ListResult {
        entries,
        revision,
        more: remaining > 0,
        remaining,
    })
}

/// Number of live keys starting with `prefix`.
pub(crate) fn count(state: &State, prefix: &str) -> usize {
    state
        .objects
        .range::<str, _>((Bound::Included(prefix), Bound::Unbounded))
        .take_while(|(key, _)| key.starts_with(prefix))
        .count()
}

fn above(lower: Bound<&str>, key: &str) -> bool {
    match lower {
        Bound::Excluded(after) => key > after,
        Bound::Included(start) => key >= start,
        Bound::Unbounded => true,
    }
}

fn page(mut entries: impl Iterator<Item = Entry>, limit: usize) -> (Vec<Entry>, usize) {
    let page: Vec<Entry> = entries.by_ref().take(limit).collect();
    (page, entries.count())
}

/// Merges the current entries with the past state of the keys changed since (which wins).
fn merge(
    current: impl Iterator<Item = Entry>,
    undo: BTreeMap<Arc<str>, Option<Entry>>,
) -> impl Iterator<Item = Entry> {
    let mut current = current.peekable();
    let mut undo = undo.into_iter().peekable();
    std::iter::from_fn(move || {
        loop {
            let take_current = match (current.peek(), undo.peek()) {
                (None, None) => return None,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (Some(entry), Some((key, _))) => {
                    if *entry.key == **key {
                        // Changed since: the past state replaces the current one.
                        current.next();
                        false
                    } else {
                        *entry.key < **key
                    }
                }
            };
            if take_current {
                return current.next();
            }
            if let Some((_, Some(past))) = undo.next() {
                return Some(past);
            }
        }
    })
}
