//! The event history: a ring of recent events, ordered by revision.
//!
//! It serves three purposes at once, which is why it is one structure:
//! - watch resumption: a watch from revision `n` replays the events after `n` from here;
//! - paged lists at an old revision: the state at `n` is the current state with the events
//!   after `n` undone (each event carries the value it replaced);
//! - fan-out: live watchers read new events from here too, each with its own cursor, so every
//!   event is stored once and shared as `Arc<Event>`, and no event can fall between a watcher's
//!   replay and its live phase.
//!
//! Trimming only drops events from the front (and whole revisions at a time, so that the
//! history always holds every event of the revisions in `(compacted, current]`): it raises the
//! compacted revision and never touches live objects, which are kept elsewhere.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::types::Event;

/// A committed event with what the store needs to undo it.
#[derive(Debug, Clone)]
pub(crate) struct Record {
    pub(crate) event: Arc<Event>,
    /// The revision of the value in `event.prev` (0 when there is none).
    pub(crate) prev_revision: u64,
}

#[derive(Debug)]
struct Item {
    record: Record,
    at: Instant,
}

/// Events with revisions in `(compacted, latest]`, oldest first. Each event has a sequence
/// number (its position since the store opened), which watchers use as their cursor.
#[derive(Debug)]
pub(crate) struct History {
    items: VecDeque<Item>,
    /// Sequence number of `items[0]`.
    first_seq: u64,
    compacted: u64,
    max_events: usize,
    window: Duration,
}

impl History {
    pub(crate) fn new(compacted: u64, max_events: usize, window: Duration) -> Self {
        History {
            items: VecDeque::new(),
            first_seq: 0,
            compacted,
            max_events,
            window,
        }
    }

    pub(crate) fn push(&mut self, record: Record, at: Instant) {
        self.items.push_back(Item { record, at });
    }

    /// Revision at or below which events are gone.
    pub(crate) fn compacted(&self) -> u64 {
        self.compacted
    }

    pub(crate) fn len(&self) -> usize {
        self.items.len()
    }

    pub(crate) fn first_seq(&self) -> u64 {
        self.first_seq
    }

    /// Sequence number the next pushed event will get.
    pub(crate) fn end_seq(&self) -> u64 {
        self.first_seq + self.items.len() as u64
    }

    /// Sequence number of the first event with a revision above `revision`.
    pub(crate) fn seq_after(&self, revision: u64) -> u64 {
        self.first_seq
            + self
                .items
                .partition_point(|item| item.record.event.revision <= revision) as u64
    }

    /// The event with sequence number `seq`, if still held.
    pub(crate) fn get(&self, seq: u64) -> Option<&Arc<Event>> {
        let index = usize::try_from(seq.checked_sub(self.first_seq)?).ok()?;
        self.items.get(index).map(|item| &item.record.event)
    }

    /// The events with a revision above `revision`, oldest first.
    pub(crate) fn since(&self, revision: u64) -> impl Iterator<Item = &Record> {
        let start = self
            .items
            .partition_point(|item| item.record.event.revision <= revision);
        self.items.range(start..).map(|item| &item.record)
    }

    /// Drops events beyond the count cap or older than the window, whole revisions at a time,
    /// but never the events of `latest` (the revision just published: a watcher must always be
    /// able to read at least the newest change).
    pub(crate) fn trim(&mut self, now: Instant, latest: u64) {
        while let Some(front) = self.items.front() {
            let revision = front.record.event.revision;
            if revision >= latest {
                break;
            }
            let too_many = self.items.len() > self.max_events;
            let too_old = now.saturating_duration_since(front.at) > self.window;
            if !too_many && !too_old {
                break;
            }
            while self
                .items
                .front()
                .is_some_and(|item| item.record.event.revision == revision)
            {
                self.items.pop_front();
                self.first_seq += 1;
            }
            self.compacted = revision;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::EventKind;
    use bytes::Bytes;

    fn record(revision: u64, key: &str) -> Record {
        Record {
            event: Arc::new(Event {
                revision,
                kind: EventKind::Put,
                key: Arc::from(key),
                value: Bytes::new(),
                prev: None,
                created: true,
            }),
            prev_revision: 0,
        }
    }

    #[test]
    fn trim_by_count_drops_whole_revisions_and_raises_compacted() {
        let now = Instant::now();
        let mut history = History::new(0, 3, Duration::from_secs(60));
        for (revision, key) in [(1, "a"), (2, "a"), (2, "b"), (3, "c"), (4, "d")] {
            history.push(record(revision, key), now);
        }
        history.trim(now, 4);
        // 5 events > 3: revision 1 goes (4 left, still > 3), then both events of 2.
        assert_eq!(history.compacted(), 2);
        assert_eq!(history.len(), 2);
        assert_eq!(history.first_seq(), 3);
        assert_eq!(history.seq_after(2), 3);
        assert_eq!(history.get(3).map(|e| e.revision), Some(3));
        assert!(history.get(2).is_none());
    }

    #[test]
    fn trim_never_drops_the_latest_revision() {
        let start = Instant::now();
        let mut history = History::new(0, 0, Duration::ZERO);
        history.push(record(1, "a"), start);
        history.push(record(1, "b"), start);
        history.trim(start + Duration::from_secs(10), 1);
        assert_eq!(history.len(), 2);
        assert_eq!(history.compacted(), 0);
    }

    #[test]
    fn trim_by_time_drops_old_events_only() {
        let start = Instant::now();
        let mut history = History::new(0, 100, Duration::from_secs(5));
        history.push(record(1, "a"), start);
        history.push(record(2, "a"), start + Duration::from_secs(4));
        history.push(record(3, "a"), start + Duration::from_secs(6));
        history.trim(start + Duration::from_secs(7), 3);
        assert_eq!(history.compacted(), 1);
        assert_eq!(history.since(0).count(), 2);
        assert_eq!(history.since(2).count(), 1);
    }
}
