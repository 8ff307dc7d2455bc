//! The model and the checker of the crash-safety test (`tests/crash.rs`), free of I/O so that
//! its verdicts can be tested on fabricated histories.
//!
//! The test writes ConfigMaps whose whole `data` is derived from a write id ([`content`]), so
//! any object read back names the write that produced it and can be checked byte for byte: a
//! torn or mixed write, or content nobody wrote, cannot pass as a real one. Every key is owned
//! by one load task, which issues one write at a time, so per key the acknowledged writes form
//! a sequence and at most one write is in flight when the server is killed. After a restart the
//! key must therefore hold exactly the state after its last acknowledged write, or the state
//! after its in-flight write; [`Model::check`] checks that for every key, and
//! [`Model::check_watch`] checks a watch resumed from an older revision against the same
//! history.
//!
//! The file lives next to `common/mod.rs` but is included by `crash.rs` alone (`#[path]`), so the
//! other end-to-end test binaries do not compile it.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;

/// A write's identity; the content it writes is [`content`]`(id)`.
pub type WriteId = u64;

/// The verb of one write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// POST: the key was absent.
    Create,
    /// PUT with the key's last known resourceVersion.
    Update,
    /// DELETE with the key's last known resourceVersion as precondition.
    Delete,
}

/// One write issued by the load.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Write {
    /// Its id (unique in the whole run; the content of creates and updates).
    pub id: WriteId,
    /// The ConfigMap's name.
    pub key: String,
    /// What it does.
    pub op: Op,
}

/// What a key holds, as far as the model knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Holds {
    /// No object.
    Absent,
    /// The object written by `id`, at resourceVersion `rv`.
    Present {
        /// The write whose content it has.
        id: WriteId,
        /// Its resourceVersion.
        rv: u64,
    },
}

/// An object as read back from the server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Observed {
    /// Its `data`.
    pub data: BTreeMap<String, String>,
    /// Its `metadata.resourceVersion`.
    pub rv: u64,
}

/// The type of a watch event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventType {
    /// ADDED.
    Added,
    /// MODIFIED.
    Modified,
    /// DELETED.
    Deleted,
}

/// One event of a resumed watch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WatchedEvent {
    /// Its type.
    pub kind: EventType,
    /// The object's name.
    pub key: String,
    /// The event object's resourceVersion.
    pub rv: u64,
    /// The event object's `data`.
    pub data: BTreeMap<String, String>,
}

/// One broken promise.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Violation {
    /// An acknowledged write is not what the key holds after the restart.
    LostWrite {
        /// The key.
        key: String,
        /// What the acknowledged writes left (and the in-flight write, if any).
        expected: Holds,
        /// The in-flight write that could also explain the state.
        in_flight: Option<Write>,
        /// What the server has (`None`: no object).
        found: Option<(Option<WriteId>, u64)>,
    },
    /// An object whose data is not exactly the content of any write.
    CorruptContent {
        /// The key.
        key: String,
        /// What it holds.
        data: BTreeMap<String, String>,
    },
    /// An object under a name the load never wrote.
    UnexpectedObject {
        /// The name.
        key: String,
    },
    /// The acknowledged content is there, but under another resourceVersion.
    ResourceVersionChanged {
        /// The key.
        key: String,
        /// The acknowledged resourceVersion.
        acked: u64,
        /// The one read back.
        found: u64,
    },
    /// A LIST's resourceVersion is older than an acknowledged write or than an item.
    ListBehind {
        /// The list's resourceVersion.
        list_rv: u64,
        /// The newer revision it should cover.
        newer: u64,
    },
    /// Two acknowledged writes got the same resourceVersion, or a key's went backwards.
    RevisionNotIncreasing {
        /// The key of the later write.
        key: String,
        /// The revision it got.
        rv: u64,
        /// The revision it should exceed (or the duplicate).
        previous: u64,
    },
    /// A write after the restart got a revision not above everything before it.
    RevisionWentBack {
        /// The revision of the write after the restart.
        rv: u64,
        /// The highest revision acknowledged or listed before it.
        previous: u64,
    },
    /// A resumed watch delivered revisions out of order or at or below its start.
    WatchOutOfOrder {
        /// The event's revision.
        rv: u64,
        /// The revision it should exceed.
        previous: u64,
    },
    /// A resumed watch delivered an event no write explains.
    WatchUnexpectedEvent {
        /// The event.
        event: WatchedEvent,
    },
    /// A resumed watch skipped an acknowledged write.
    WatchGap {
        /// The write with no event.
        write: Write,
        /// Its acknowledged revision, if the answer carried one.
        rv: Option<u64>,
    },
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Violation::LostWrite {
                key,
                expected,
                in_flight,
                found,
            } => write!(
                f,
                "LOST WRITE: {key}: acknowledged state {expected:?} (in flight: {in_flight:?}), \
                 server has {found:?} (writer id, resourceVersion)"
            ),
            Violation::CorruptContent { key, data } => {
                write!(
                    f,
                    "CORRUPT CONTENT: {key} holds data no write produced: {data:?}"
                )
            }
            Violation::UnexpectedObject { key } => {
                write!(f, "UNEXPECTED OBJECT: {key} was never written by the load")
            }
            Violation::ResourceVersionChanged { key, acked, found } => write!(
                f,
                "RESOURCEVERSION CHANGED: {key} was acknowledged at {acked}, reads back at {found}"
            ),
            Violation::ListBehind { list_rv, newer } => write!(
                f,
                "LIST BEHIND: list resourceVersion {list_rv} < {newer} (acknowledged or listed)"
            ),
            Violation::RevisionNotIncreasing { key, rv, previous } => write!(
                f,
                "REVISION NOT INCREASING: write to {key} acknowledged at {rv}, not above {previous}"
            ),
            Violation::RevisionWentBack { rv, previous } => write!(
                f,
                "REVISION WENT BACK: a write after the restart got {rv}, not above {previous}"
            ),
            Violation::WatchOutOfOrder { rv, previous } => {
                write!(f, "WATCH OUT OF ORDER: event at {rv} after {previous}")
            }
            Violation::WatchUnexpectedEvent { event } => {
                write!(f, "WATCH UNEXPECTED EVENT: {event:?}")
            }
            Violation::WatchGap { write, rv } => write!(
                f,
                "WATCH GAP: no event for acknowledged write {write:?} (resourceVersion {rv:?})"
            ),
        }
    }
}

/// The data key holding the write id.
const WRITER: &str = "writer";
/// The data key holding the payload.
const PAYLOAD: &str = "payload";
/// The data key holding the payload's checksum.
const SUM: &str = "sum";

/// A step of SplitMix64: a good, tiny, deterministic mixer.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// FNV-1a, 64 bits.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The `data` written by write `id`: its id, a pseudo-random payload of 16 to 271 characters,
/// and the payload's checksum.
pub fn content(id: WriteId) -> BTreeMap<String, String> {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_";
    let mut state = mix(id);
    let len = 16 + (state % 256) as usize;
    let payload: String = (0..len)
        .map(|_| {
            state = mix(state);
            char::from(ALPHABET[(state % ALPHABET.len() as u64) as usize])
        })
        .collect();
    let sum = format!("{:016x}", fnv1a(payload.as_bytes()));
    BTreeMap::from([
        (WRITER.to_string(), id.to_string()),
        (PAYLOAD.to_string(), payload),
        (SUM.to_string(), sum),
    ])
}

/// The write that produced `data`, if `data` is exactly that write's [`content`].
pub fn writer_of(data: &BTreeMap<String, String>) -> Option<WriteId> {
    let id = data.get(WRITER)?.parse().ok()?;
    (content(id) == *data).then_some(id)
}

/// Per key: what the acknowledged writes left, and the write in flight at the kill.
#[derive(Clone, Debug)]
struct KeyModel {
    holds: Holds,
    in_flight: Option<Write>,
}

/// One write of the current round, for the watch check.
#[derive(Clone, Debug)]
struct RoundOp {
    write: Write,
    /// The acknowledged revision (creates and updates; a DELETE answer carries none).
    rv: Option<u64>,
    /// Sent after the round's first acknowledgement (so its revision is above `r0`).
    after_r0: bool,
    /// Acknowledged (else in flight at the kill).
    acked: bool,
}

/// Counters for the summary line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Writes acknowledged (all rounds).
    pub acked: u64,
    /// Writes in flight at a kill.
    pub in_flight: u64,
    /// In-flight writes found applied after the restart.
    pub in_flight_applied: u64,
    /// Per-key checks of acknowledged state made after restarts (keys × restarts).
    pub keys_checked: u64,
}

/// Everything the load was told, across rounds.
#[derive(Clone, Debug, Default)]
pub struct Model {
    keys: BTreeMap<String, KeyModel>,
    max_acked_rv: u64,
    acked_rvs: HashSet<u64>,
    round: Vec<RoundOp>,
    stats: Stats,
}

impl Model {
    /// An empty model (nothing written).
    pub fn new() -> Model {
        Model::default()
    }

    /// The highest resourceVersion acknowledged so far.
    pub fn max_acked_rv(&self) -> u64 {
        self.max_acked_rv
    }

    /// The counters.
    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// What `key` holds by the acknowledged writes.
    pub fn holds(&self, key: &str) -> Holds {
        self.keys.get(key).map_or(Holds::Absent, |k| k.holds)
    }

    /// The keys starting with `prefix` that hold an object, with its resourceVersion.
    pub fn live_keys(&self, prefix: &str) -> Vec<(String, u64)> {
        self.keys
            .range(prefix.to_string()..)
            .take_while(|(k, _)| k.starts_with(prefix))
            .filter_map(|(k, m)| match m.holds {
                Holds::Present { rv, .. } => Some((k.clone(), rv)),
                Holds::Absent => None,
            })
            .collect()
    }

    /// Records an acknowledged write. `rv` is the answer's resourceVersion (required for
    /// creates and updates); `after_r0` says whether it was sent after the round's first
    /// acknowledgement. Fails if its revision is not above the key's previous one or was
    /// already acknowledged for another write.
    pub fn ack(&mut self, write: Write, rv: Option<u64>, after_r0: bool) -> Result<(), Violation> {
        let entry = self.keys.entry(write.key.clone()).or_insert(KeyModel {
            holds: Holds::Absent,
            in_flight: None,
        });
        self.stats.acked += 1;
        let mut verdict = Ok(());
        if let Some(rv) = rv {
            if let Holds::Present { rv: previous, .. } = entry.holds
                && rv <= previous
            {
                verdict = Err(Violation::RevisionNotIncreasing {
                    key: write.key.clone(),
                    rv,
                    previous,
                });
            }
            if !self.acked_rvs.insert(rv) {
                verdict = Err(Violation::RevisionNotIncreasing {
                    key: write.key.clone(),
                    rv,
                    previous: rv,
                });
            }
            self.max_acked_rv = self.max_acked_rv.max(rv);
        }
        entry.holds = match (write.op, rv) {
            (Op::Delete, _) => Holds::Absent,
            (_, Some(rv)) => Holds::Present { id: write.id, rv },
            (_, None) => Holds::Present {
                id: write.id,
                rv: 0,
            },
        };
        self.round.push(RoundOp {
            write,
            rv,
            after_r0,
            acked: true,
        });
        verdict
    }

    /// Records a write whose answer never came (the server was killed): it may or may not
    /// have been applied.
    pub fn in_flight(&mut self, write: Write, after_r0: bool) {
        let entry = self.keys.entry(write.key.clone()).or_insert(KeyModel {
            holds: Holds::Absent,
            in_flight: None,
        });
        entry.in_flight = Some(write.clone());
        self.stats.in_flight += 1;
        self.round.push(RoundOp {
            write,
            rv: None,
            after_r0,
            acked: false,
        });
    }

    /// Checks the objects read back after a restart (`observed`, by name, from a LIST at
    /// `list_rv`) against every acknowledged and in-flight write.
    pub fn check(&self, observed: &BTreeMap<String, Observed>, list_rv: u64) -> Vec<Violation> {
        let mut violations = Vec::new();
        if list_rv < self.max_acked_rv {
            violations.push(Violation::ListBehind {
                list_rv,
                newer: self.max_acked_rv,
            });
        }
        for (key, object) in observed {
            if !self.keys.contains_key(key) {
                violations.push(Violation::UnexpectedObject { key: key.clone() });
            }
            if object.rv > list_rv {
                violations.push(Violation::ListBehind {
                    list_rv,
                    newer: object.rv,
                });
            }
        }
        for (key, model) in &self.keys {
            let found = observed.get(key);
            let lost = || Violation::LostWrite {
                key: key.clone(),
                expected: model.holds,
                in_flight: model.in_flight.clone(),
                found: found.map(|o| (writer_of(&o.data), o.rv)),
            };
            let Some(object) = found else {
                let may_be_absent = model.holds == Holds::Absent
                    || model.in_flight.as_ref().is_some_and(|w| w.op == Op::Delete);
                if !may_be_absent {
                    violations.push(lost());
                }
                continue;
            };
            let Some(id) = writer_of(&object.data) else {
                violations.push(Violation::CorruptContent {
                    key: key.clone(),
                    data: object.data.clone(),
                });
                continue;
            };
            match model.holds {
                Holds::Present { id: acked, rv } if acked == id => {
                    if rv != 0 && rv != object.rv {
                        violations.push(Violation::ResourceVersionChanged {
                            key: key.clone(),
                            acked: rv,
                            found: object.rv,
                        });
                    }
                }
                holds => {
                    let by_in_flight = model
                        .in_flight
                        .as_ref()
                        .is_some_and(|w| w.op != Op::Delete && w.id == id);
                    let above_acked = match holds {
                        Holds::Present { rv, .. } => object.rv > rv,
                        Holds::Absent => true,
                    };
                    if !by_in_flight || !above_acked {
                        violations.push(lost());
                    }
                }
            }
        }
        violations
    }

    /// After a successful [`check`](Self::check): takes what the server holds as the known
    /// state (so in-flight writes are settled), counts, and starts a new round.
    pub fn settle(&mut self, observed: &BTreeMap<String, Observed>) {
        for (key, model) in &mut self.keys {
            self.stats.keys_checked += 1;
            let now = match observed.get(key) {
                Some(object) => match writer_of(&object.data) {
                    Some(id) => Holds::Present { id, rv: object.rv },
                    None => Holds::Absent,
                },
                None => Holds::Absent,
            };
            if let Some(write) = model.in_flight.take() {
                let applied = match write.op {
                    Op::Delete => now == Holds::Absent && model.holds != Holds::Absent,
                    Op::Create | Op::Update => {
                        matches!(now, Holds::Present { id, .. } if id == write.id)
                    }
                };
                if applied {
                    self.stats.in_flight_applied += 1;
                }
            }
            model.holds = now;
        }
        self.round.clear();
    }

    /// Checks a write made after a restart: its revision must exceed every acknowledged one
    /// and the revision of the LIST made after the restart.
    pub fn check_new_revision(&self, rv: u64, list_rv: u64) -> Option<Violation> {
        let previous = self.max_acked_rv.max(list_rv);
        (rv <= previous).then_some(Violation::RevisionWentBack { rv, previous })
    }

    /// Checks the events of a watch resumed at `r0` (the round's first acknowledged
    /// revision) after the restart: strictly increasing revisions above `r0`, and per key
    /// exactly the round's writes after `r0`, in order: every acknowledged one whose revision
    /// is above `r0` (or that was sent after `r0` was acknowledged) must be there, with its
    /// revision and content; the key's in-flight write may follow. `complete` says the
    /// caller read up to the point where every required event should have arrived.
    pub fn check_watch(&self, r0: u64, events: &[WatchedEvent], complete: bool) -> Vec<Violation> {
        let mut violations = Vec::new();
        let mut previous = r0;
        for event in events {
            if event.rv <= previous {
                violations.push(Violation::WatchOutOfOrder {
                    rv: event.rv,
                    previous,
                });
            }
            previous = previous.max(event.rv);
        }
        let mut ops: HashMap<&str, Vec<&RoundOp>> = HashMap::new();
        for op in &self.round {
            ops.entry(op.write.key.as_str()).or_default().push(op);
        }
        let mut next: HashMap<&str, usize> = HashMap::new();
        for event in events {
            let Some(key_ops) = ops.get(event.key.as_str()) else {
                violations.push(Violation::WatchUnexpectedEvent {
                    event: event.clone(),
                });
                continue;
            };
            let cursor = next.entry(event.key.as_str()).or_insert(0);
            let mut matched = false;
            while let Some(op) = key_ops.get(*cursor) {
                *cursor += 1;
                if op_matches(op, event) {
                    matched = true;
                    break;
                }
                if required(op, r0) {
                    violations.push(Violation::WatchGap {
                        write: op.write.clone(),
                        rv: op.rv,
                    });
                }
            }
            if !matched {
                violations.push(Violation::WatchUnexpectedEvent {
                    event: event.clone(),
                });
            }
        }
        if complete {
            for (key, key_ops) in &ops {
                let from = next.get(key).copied().unwrap_or(0);
                for op in &key_ops[from..] {
                    if required(op, r0) {
                        violations.push(Violation::WatchGap {
                            write: op.write.clone(),
                            rv: op.rv,
                        });
                    }
                }
            }
        }
        violations
    }
}

/// Must a watch from `r0` deliver this write?
fn required(op: &RoundOp, r0: u64) -> bool {
    op.acked
        && match op.rv {
            Some(rv) => rv > r0,
            None => op.after_r0,
        }
}

/// Is `event` this write's event?
fn op_matches(op: &RoundOp, event: &WatchedEvent) -> bool {
    let kind = match op.write.op {
        Op::Create => EventType::Added,
        Op::Update => EventType::Modified,
        Op::Delete => EventType::Deleted,
    };
    if kind != event.kind || op.rv.is_some_and(|rv| rv != event.rv) {
        return false;
    }
    match op.write.op {
        Op::Delete => true,
        Op::Create | Op::Update => writer_of(&event.data) == Some(op.write.id),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(id: WriteId, key: &str, op: Op) -> Write {
        Write {
            id,
            key: key.to_string(),
            op,
        }
    }

    fn object(id: WriteId, rv: u64) -> Observed {
        Observed {
            data: content(id),
            rv,
        }
    }

    /// a: created (1) then updated (2); b: created (3) then deleted; c: created (4), update 5
    /// in flight.
    fn model() -> Model {
        let mut m = Model::new();
        m.ack(write(1, "a", Op::Create), Some(10), false).unwrap();
        m.ack(write(2, "a", Op::Update), Some(12), true).unwrap();
        m.ack(write(3, "b", Op::Create), Some(11), true).unwrap();
        m.ack(write(4, "c", Op::Create), Some(13), true).unwrap();
        m.ack(write(6, "b", Op::Delete), None, true).unwrap();
        m.in_flight(write(5, "c", Op::Update), true);
        m
    }

    fn good() -> BTreeMap<String, Observed> {
        BTreeMap::from([("a".into(), object(2, 12)), ("c".into(), object(4, 13))])
    }

    #[test]
    fn content_round_trips_and_rejects_any_change() {
        let data = content(42);
        assert_eq!(writer_of(&data), Some(42));
        let mut torn = data.clone();
        torn.get_mut("payload").unwrap().pop();
        assert_eq!(writer_of(&torn), None);
        let mut mixed = content(43);
        mixed.insert("writer".into(), "42".into());
        assert_eq!(writer_of(&mixed), None);
        assert_ne!(content(1), content(2));
    }

    #[test]
    fn the_state_after_the_acknowledged_writes_passes() {
        assert_eq!(model().check(&good(), 14), vec![]);
    }

    #[test]
    fn an_applied_in_flight_write_passes() {
        let mut observed = good();
        observed.insert("c".into(), object(5, 14));
        assert_eq!(model().check(&observed, 14), vec![]);
        let mut m = model();
        m.settle(&observed);
        assert_eq!(m.stats().in_flight_applied, 1);
        assert_eq!(m.holds("c"), Holds::Present { id: 5, rv: 14 });
    }

    #[test]
    fn a_lost_acknowledged_update_is_caught() {
        let mut observed = good();
        observed.insert("a".into(), object(1, 10));
        let violations = model().check(&observed, 14);
        assert!(
            matches!(&violations[..], [Violation::LostWrite { key, .. }] if key == "a"),
            "{violations:?}"
        );
    }

    #[test]
    fn a_lost_acknowledged_create_is_caught() {
        let mut observed = good();
        observed.remove("c");
        let violations = model().check(&observed, 14);
        assert!(
            matches!(&violations[..], [Violation::LostWrite { key, .. }] if key == "c"),
            "{violations:?}"
        );
    }

    #[test]
    fn a_lost_acknowledged_delete_is_caught() {
        let mut observed = good();
        observed.insert("b".into(), object(3, 11));
        let violations = model().check(&observed, 14);
        assert!(
            matches!(&violations[..], [Violation::LostWrite { key, .. }] if key == "b"),
            "{violations:?}"
        );
    }

    #[test]
    fn torn_content_unknown_objects_and_a_list_behind_are_caught() {
        let mut observed = good();
        observed
            .get_mut("a")
            .unwrap()
            .data
            .insert("sum".into(), "0".into());
        observed.insert("z".into(), object(99, 3));
        let violations = model().check(&observed, 12);
        assert!(violations.contains(&Violation::UnexpectedObject { key: "z".into() }));
        assert!(
            violations
                .iter()
                .any(|v| matches!(v, Violation::CorruptContent { key, .. } if key == "a"))
        );
        assert!(violations.contains(&Violation::ListBehind {
            list_rv: 12,
            newer: 13
        }));
    }

    #[test]
    fn a_changed_resource_version_is_caught() {
        let mut observed = good();
        observed.insert("a".into(), object(2, 13));
        let violations = model().check(&observed, 14);
        assert_eq!(
            violations,
            vec![Violation::ResourceVersionChanged {
                key: "a".into(),
                acked: 12,
                found: 13
            }]
        );
    }

    #[test]
    fn duplicate_or_decreasing_acknowledged_revisions_are_caught() {
        let mut m = model();
        assert!(m.ack(write(7, "d", Op::Create), Some(12), true).is_err());
        assert!(m.ack(write(8, "a", Op::Update), Some(11), true).is_err());
        // The highest acknowledged revision is 13.
        assert!(m.check_new_revision(13, 12).is_some());
        assert!(m.check_new_revision(14, 14).is_some());
        assert!(m.check_new_revision(14, 13).is_none());
    }

    fn event(kind: EventType, key: &str, rv: u64, id: WriteId) -> WatchedEvent {
        WatchedEvent {
            kind,
            key: key.into(),
            rv,
            data: content(id),
        }
    }

    #[test]
    fn a_complete_resumed_watch_passes_and_a_gap_is_caught() {
        let m = model();
        // r0 = 10: required are a's update (12), b's create (11) and delete, c's create (13).
        let events = vec![
            event(EventType::Added, "b", 11, 3),
            event(EventType::Modified, "a", 12, 2),
            event(EventType::Added, "c", 13, 4),
            event(EventType::Deleted, "b", 14, 3),
        ];
        assert_eq!(m.check_watch(10, &events, true), vec![]);
        let mut with_in_flight = events.clone();
        with_in_flight.push(event(EventType::Modified, "c", 15, 5));
        assert_eq!(m.check_watch(10, &with_in_flight, true), vec![]);

        let mut gap = events.clone();
        gap.remove(1);
        let violations = m.check_watch(10, &gap, true);
        assert!(
            matches!(&violations[..], [Violation::WatchGap { write, .. }] if write.id == 2),
            "{violations:?}"
        );
        let mut unordered = events;
        unordered.swap(0, 1);
        assert!(
            m.check_watch(10, &unordered, true)
                .iter()
                .any(|v| matches!(v, Violation::WatchOutOfOrder { .. }))
        );
    }
}
