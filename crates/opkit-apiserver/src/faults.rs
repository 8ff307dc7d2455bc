//! Fault injection for one client: the server misbehaves, legally, toward the operator under
//! test and no one else, so the bugs Sieve and Acto find (crashes between two writes, lost
//! responses, stale and unobserved states, watches that end or lag) show up in seconds, for an
//! operator in any language.
//!
//! Every fault here is behaviour a real API server exhibits: it refuses writes under load or
//! conflict (409, 429 with `Retry-After`, 500, 503), a response is lost after the write
//! committed (the client sees 500 or 504, the object changed), a watch ends with `410 Expired`
//! and the client must relist, a watch lags (and, lagging, expires before the client saw a
//! short-lived state), a read that allows any revision (`resourceVersion=0`, `NotOlderThan`)
//! is served from an older one, as a lagging watch cache does. The runner (`opkit test
//! --chaos`) chooses the client by its user name, arms faults on points of a reference run's
//! [`Trace`] (the client's committed writes, opened watches and the notifications they
//! delivered, in order), and learns through [`Faults::crashes`] when to kill and restart the
//! client process after a write committed. Faults fire on events of the trace, never on time,
//! so a run is reproducible from its plan.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::watch;

/// A write (create, update, patch, delete, deletecollection) the target made and the server
/// committed (answered 2xx), or a watch it opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceEntry {
    /// What it was: `create`, `update`, `patch`, `delete`, `deletecollection` or `watch`.
    pub verb: String,
    /// The resource, with its group for non-core ones (`deployments.apps`).
    pub resource: String,
    /// The subresource (`status`, `scale`), if any.
    pub subresource: Option<String>,
    /// The namespace, if namespaced.
    pub namespace: Option<String>,
    /// The object's name: the request's, or for a create the name of the object created
    /// (`None` for a collection delete).
    pub name: Option<String>,
    /// The HTTP status the server answered (before a fault replaced it).
    pub code: u16,
    /// The store's revision when the request arrived and when it was answered: a write's own
    /// revision is above the first and at most the second (`(0, 0)` for a watch).
    pub revisions: (u64, u64),
}

/// A change of an object one of the target's watches delivered (JSON watches only: the server
/// reads the object's name from the event). `ADDED` events are not notifications of the trace:
/// whether one comes from the watch or from the list before it depends on when the client
/// started watching, and trace points must not depend on timing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notification {
    /// The watch it came on (1-based, as [`Trigger::Watch`]).
    pub watch: usize,
    /// `MODIFIED` or `DELETED`.
    pub event: String,
    /// The watch's resource, with its group for non-core ones.
    pub resource: String,
    /// The object's namespace, if namespaced.
    pub namespace: Option<String>,
    /// The object's name.
    pub name: String,
    /// The object's `resourceVersion` in the event (the revision of the change).
    pub revision: u64,
}

/// What the target did, in order: its committed writes, its watches, and their events.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Trace {
    /// The committed writes; the k-th is [`Trigger::Write`]`(k)` (1-based).
    pub writes: Vec<TraceEntry>,
    /// The watches opened; the k-th is [`Trigger::Watch`]`(k)` (1-based).
    pub watches: Vec<TraceEntry>,
    /// The events its watches delivered; the k-th is [`Trigger::Notification`]`(k)`
    /// (1-based).
    pub notifications: Vec<Notification>,
    /// The writes a paused old leader committed after its successor took over
    /// ([`Action::Pause`]): each is an act of a deposed leader (also in `writes`).
    pub deposed: Vec<TraceEntry>,
}

/// Where a paused-leader fault ([`Action::Pause`]) stands.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Leadership {
    /// No pause fired.
    #[default]
    Steady,
    /// The leader was paused right after its write: the runner stops its process (SIGSTOP)
    /// and starts a successor as [`Faults::successor`]'s user.
    Paused,
    /// The successor committed its first write (it took the lease over): the runner resumes
    /// the old leader (SIGCONT).
    Resumed,
}

/// When a fault fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    /// The target's k-th committed write (1-based). A refusal fires on the write that would
    /// have been the k-th: the first write arriving after k-1 committed ones.
    Write(usize),
    /// The k-th watch the target opens (1-based).
    Watch(usize),
    /// The k-th event the target's watches deliver (1-based, over all its watches).
    Notification(usize),
}

/// The status a refused write or a lost response is answered with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultStatus {
    /// 409 Conflict (the object was modified): the client must re-read.
    Conflict,
    /// 429 Too Many Requests with `Retry-After` (seconds): priority and fairness throttled it.
    TooManyRequests {
        /// The `Retry-After` header's seconds.
        retry_after: u32,
    },
    /// 500 Internal Server Error.
    InternalError,
    /// 503 Service Unavailable (the server is shutting down or overloaded).
    ServiceUnavailable,
    /// 504 Gateway Timeout: the request timed out (the write may or may not have happened).
    Timeout,
}

/// What a fault does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Refuse the write before committing anything (for [`Trigger::Write`]).
    Refuse(FaultStatus),
    /// Commit the write, then answer with an error: the response is lost (for
    /// [`Trigger::Write`]).
    LoseResponse(FaultStatus),
    /// Commit the write, answer it, then tell [`Faults::crashes`] watchers that the client
    /// process should die now (for [`Trigger::Write`]): the runner kills and restarts it.
    Crash,
    /// Deliver this many events of the watch, then an `ERROR` event `410 Expired`, and end it:
    /// the client must relist (for [`Trigger::Watch`]; JSON watches).
    ExpireWatch {
        /// Events delivered before the end (bookmarks not counted).
        after_events: usize,
    },
    /// Hold every event of the watch this long before delivering it (for [`Trigger::Watch`]).
    DelayWatch(Duration),
    /// Deliver the event, then an `ERROR` event `410 Expired`, and end its watch: the client
    /// relists and sees every object again (for [`Trigger::Notification`]).
    Expire,
    /// Do not deliver the event (an unobserved state): its watch lags from there on, and when a
    /// later event of the same object reaches it, ends with `410 Expired` instead, so the
    /// client relists and sees only the later state (for [`Trigger::Notification`]).
    Unobserved,
    /// Commit the write, answer it, signal a crash as [`Action::Crash`] does, and serve the
    /// restarted client a stale view: its first read of each resource that allows any
    /// revision (`resourceVersion=0`, or `NotOlderThan` an older one) is answered at the
    /// revision the store had when its write `view_before_write` arrived (for
    /// [`Trigger::Write`]).
    StaleRestart {
        /// The write (1-based) before which the stale view was current.
        view_before_write: usize,
    },
    /// Commit the write, answer it, then move [`Faults::leadership`] to
    /// [`Leadership::Paused`]: the runner pauses the client and starts a successor; the
    /// successor's first committed write moves it to [`Leadership::Resumed`] and the old
    /// client wakes up; what the old client commits from then on is [`Trace::deposed`] (for
    /// [`Trigger::Write`]).
    Pause,
}

/// A fault: an action on a point of the trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fault {
    /// When it fires.
    pub trigger: Trigger,
    /// What it does.
    pub action: Action,
}

/// A fault that fired, with the trace entry it fired on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fired {
    /// The fault.
    pub fault: Fault,
    /// The request it fired on (for a refusal, the code is the fault's).
    pub entry: TraceEntry,
}

/// Why a fault cannot be armed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FaultError {
    /// The action does not apply to the trigger (a watch action on a write, or the reverse).
    #[error(
        "{action:?} cannot fire on {trigger:?}: write actions fire on writes, watch actions on watches, event actions on notifications"
    )]
    Mismatch {
        /// The trigger.
        trigger: Trigger,
        /// The action.
        action: Action,
    },
    /// Trace points count from 1.
    #[error("trace points count from 1: {0:?} names none")]
    ZeroPoint(Trigger),
}

/// The faults of one server: whose requests they apply to, what is armed, what happened.
/// Cheap to clone (a handle); with no target, requests pass untouched.
#[derive(Debug, Clone, Default)]
pub struct Faults {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    /// Whether a target is set: the fast path for every other request.
    active: AtomicBool,
    state: Mutex<State>,
    crashes: Crashes,
    leadership: Leader,
    relists: Relists,
}

/// How many watches a fault ended that the target has not opened again.
#[derive(Debug)]
struct Relists(watch::Sender<usize>);

impl Default for Relists {
    fn default() -> Self {
        Relists(watch::channel(0).0)
    }
}

#[derive(Debug)]
struct Leader(watch::Sender<Leadership>);

impl Default for Leader {
    fn default() -> Self {
        Leader(watch::channel(Leadership::Steady).0)
    }
}

#[derive(Debug)]
struct Crashes(watch::Sender<u64>);

impl Default for Crashes {
    fn default() -> Self {
        Crashes(watch::channel(0).0)
    }
}

#[derive(Debug, Default)]
struct State {
    target: Option<String>,
    /// The user a paused leader's successor runs as (traced as the target is).
    successor: Option<String>,
    armed: Vec<Fault>,
    trace: Trace,
    stale: Option<StaleView>,
    fired: Vec<Fired>,
    /// The watches (resource, namespace) a fault ended with `410 Expired` that the target has
    /// not opened again yet: until it relists (after its backoff), it has not caught up.
    ended: Vec<(String, Option<String>)>,
    /// An injected crash fired and the target was not restarted yet ([`Faults::restarted`]):
    /// its requests are refused, as a dead process makes none.
    crashing: bool,
}

/// A stale view served to the target after [`Action::StaleRestart`].
#[derive(Debug)]
struct StaleView {
    revision: u64,
    /// The resources whose first stale-allowing read was served already.
    served: std::collections::BTreeSet<String>,
}

impl FaultStatus {
    /// The HTTP status code.
    pub fn code(self) -> u16 {
        match self {
            FaultStatus::Conflict => 409,
            FaultStatus::TooManyRequests { .. } => 429,
            FaultStatus::InternalError => 500,
            FaultStatus::ServiceUnavailable => 503,
            FaultStatus::Timeout => 504,
        }
    }

    /// The error answered, worded as kube-apiserver words it (plus where it came from).
    pub(crate) fn error(self) -> crate::ApiError {
        use crate::ApiError;
        const WHY: &str = "(a fault injected by opkit)";
        match self {
            FaultStatus::Conflict => ApiError::conflict_msg(format!(
                "Operation cannot be fulfilled: the object has been modified; please apply your changes to the latest version and try again {WHY}"
            )),
            FaultStatus::TooManyRequests { retry_after } => ApiError::too_many_requests(
                format!("Too many requests, please try again later. {WHY}"),
                retry_after,
            ),
            FaultStatus::InternalError => ApiError::internal(WHY),
            FaultStatus::ServiceUnavailable => ApiError::unavailable(format!(
                "the server is currently unable to handle the request {WHY}"
            )),
            FaultStatus::Timeout => ApiError::timeout(format!(
                "Timeout: request did not complete within the allotted timeout {WHY}"
            )),
        }
    }
}

impl Faults {
    /// No target, nothing armed.
    pub fn new() -> Faults {
        Faults::default()
    }

    /// Applies faults to (and traces) the requests of the user named `user` (a service
    /// account is `system:serviceaccount:NS:NAME`); the trace starts empty.
    pub fn target(&self, user: impl Into<String>) {
        let mut state = self.state();
        state.target = Some(user.into());
        state.trace = Trace::default();
        state.fired.clear();
        state.ended.clear();
        state.crashing = false;
        self.inner.relists.0.send_replace(0);
        self.inner.active.store(true, Ordering::Release);
    }

    /// Stops tracing and injecting: requests pass untouched; armed faults are dropped.
    pub fn clear(&self) {
        let mut state = self.state();
        *state = State::default();
        self.inner.relists.0.send_replace(0);
        self.inner.active.store(false, Ordering::Release);
    }

    /// Traces (and faults) `user` too, as the successor of a paused leader
    /// ([`Action::Pause`]): the trace is one, whichever of the two made a request.
    pub fn successor(&self, user: impl Into<String>) {
        self.state().successor = Some(user.into());
    }

    /// Where a paused-leader fault stands; changes when it pauses the leader and when the
    /// successor's first write wakes it up.
    pub fn leadership(&self) -> watch::Receiver<Leadership> {
        self.inner.leadership.0.subscribe()
    }

    /// Arms a fault; it fires once, when its trace point comes.
    pub fn arm(&self, fault: Fault) -> Result<(), FaultError> {
        let fits = match fault.action {
            Action::Refuse(_)
            | Action::LoseResponse(_)
            | Action::Crash
            | Action::Pause
            | Action::StaleRestart { .. } => matches!(fault.trigger, Trigger::Write(_)),
            Action::ExpireWatch { .. } | Action::DelayWatch(_) => {
                matches!(fault.trigger, Trigger::Watch(_))
            }
            Action::Expire | Action::Unobserved => {
                matches!(fault.trigger, Trigger::Notification(_))
            }
        };
        match fault.trigger {
            Trigger::Write(0) | Trigger::Watch(0) | Trigger::Notification(0) => {
                return Err(FaultError::ZeroPoint(fault.trigger));
            }
            Trigger::Write(_) | Trigger::Watch(_) | Trigger::Notification(_) if fits => {}
            trigger => {
                return Err(FaultError::Mismatch {
                    trigger,
                    action: fault.action,
                });
            }
        }
        self.state().armed.push(fault);
        Ok(())
    }

    /// The target's trace so far.
    pub fn trace(&self) -> Trace {
        self.state().trace.clone()
    }

    /// The faults that fired so far, in order.
    pub fn fired(&self) -> Vec<Fired> {
        self.state().fired.clone()
    }

    /// Counts the crashes signalled: it changes (to the number of crashes so far) right after
    /// the server answered a write armed with [`Action::Crash`].
    pub fn crashes(&self) -> watch::Receiver<u64> {
        self.inner.crashes.0.subscribe()
    }

    /// How many watches a fault ended with `410 Expired` the target has not opened again (of
    /// the same resource and namespace). A client relists after a backoff (client-go's and
    /// kube-rs's start at 800 ms): until this is 0 it has not seen the latest state, so a run
    /// waits for it before judging the end state.
    pub fn relists_pending(&self) -> watch::Receiver<usize> {
        self.inner.relists.0.subscribe()
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves plain data behind: keep using it.
        self.inner
            .state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Whether `user`'s requests are traced.
    pub(crate) fn targets(&self, user: &str) -> bool {
        if !self.inner.active.load(Ordering::Acquire) {
            return false;
        }
        let state = self.state();
        state.target.as_deref() == Some(user) || state.successor.as_deref() == Some(user)
    }

    /// The refusal armed for the target's next write, spent and recorded as fired with
    /// `entry` (whose code becomes the refusal's).
    pub(crate) fn take_refusal(&self, mut entry: TraceEntry) -> Option<FaultStatus> {
        let mut state = self.state();
        let point = Trigger::Write(state.trace.writes.len() + 1);
        let at = state
            .armed
            .iter()
            .position(|f| f.trigger == point && matches!(f.action, Action::Refuse(_)))?;
        let fault = state.armed.remove(at);
        let Action::Refuse(status) = fault.action else {
            return None;
        };
        entry.code = status.code();
        state.fired.push(Fired { fault, entry });
        Some(status)
    }

    /// Records a committed write of `user`; returns the fault that fires on it (spent), if
    /// any. A [`Action::StaleRestart`] starts its stale view here; a paused leader's
    /// successor's first write wakes the old leader, whose writes are deposed from then on.
    pub(crate) fn committed(&self, entry: TraceEntry, user: &str) -> Option<Fault> {
        let mut state = self.state();
        state.trace.writes.push(entry.clone());
        let successor = state.successor.as_deref() == Some(user);
        let leadership = *self.inner.leadership.0.borrow();
        match leadership {
            Leadership::Paused if successor => {
                self.inner.leadership.0.send_replace(Leadership::Resumed);
            }
            Leadership::Resumed if !successor => state.trace.deposed.push(entry.clone()),
            _ => {}
        }
        let point = Trigger::Write(state.trace.writes.len());
        let at = state.armed.iter().position(|f| f.trigger == point)?;
        let fault = state.armed.remove(at);
        if let Action::StaleRestart { view_before_write } = fault.action {
            // A view of the future is no stale view: such a fault names an earlier write.
            let revision = state
                .trace
                .writes
                .get(view_before_write.checked_sub(1)?)
                .map(|w| w.revisions.0)
                .filter(|_| view_before_write < state.trace.writes.len())?;
            state.stale = Some(StaleView {
                revision,
                served: Default::default(),
            });
        }
        if matches!(fault.action, Action::Crash | Action::StaleRestart { .. }) {
            // The process dies right after this answer; what it sends before the kill lands
            // must not count (a fast client's next write would slip in otherwise).
            state.crashing = true;
        }
        state.fired.push(Fired { fault, entry });
        Some(fault)
    }

    /// Whether an injected crash fired and the target was not restarted yet: the server
    /// refuses the target's requests meanwhile, as if its process were dead already.
    pub(crate) fn crashing(&self) -> bool {
        self.state().crashing
    }

    /// Tells the server that the crashed target's processes are gone (killed; a restarted
    /// instance may start): its requests are served again.
    pub fn restarted(&self) {
        self.state().crashing = false;
    }

    /// Records an event delivered to the target on its `watch`-th watch; returns the action
    /// armed on it (spent), if any.
    pub(crate) fn notified(&self, notification: Notification) -> Option<Action> {
        let mut state = self.state();
        state.trace.notifications.push(notification.clone());
        let point = Trigger::Notification(state.trace.notifications.len());
        let at = state.armed.iter().position(|f| f.trigger == point)?;
        let fault = state.armed.remove(at);
        let entry = TraceEntry {
            verb: notification.event,
            resource: notification.resource,
            subresource: None,
            namespace: notification.namespace,
            name: Some(notification.name),
            code: 200,
            revisions: (notification.revision, notification.revision),
        };
        state.fired.push(Fired { fault, entry });
        Some(fault.action)
    }

    /// The revision to answer the target's read of `resource` at, if a stale view is served
    /// and this is its first read of the resource that allows one not older than `min`
    /// (spent for that resource).
    pub(crate) fn stale_read(&self, resource: &str, min: u64) -> Option<u64> {
        let mut state = self.state();
        let view = state.stale.as_mut()?;
        if view.revision < min || !view.served.insert(resource.to_string()) {
            return None;
        }
        Some(view.revision)
    }

    /// Records an opened watch; returns its number (1-based) and the fault that fires on it
    /// (spent), if any.
    pub(crate) fn watch_opened(&self, entry: TraceEntry) -> (usize, Option<Fault>) {
        let mut state = self.state();
        let ended = state
            .ended
            .iter()
            .position(|(r, ns)| *r == entry.resource && *ns == entry.namespace);
        if let Some(at) = ended {
            state.ended.remove(at);
            self.inner.relists.0.send_replace(state.ended.len());
        }
        state.trace.watches.push(entry.clone());
        let number = state.trace.watches.len();
        let point = Trigger::Watch(number);
        let Some(at) = state.armed.iter().position(|f| f.trigger == point) else {
            return (number, None);
        };
        let fault = state.armed.remove(at);
        state.fired.push(Fired { fault, entry });
        (number, Some(fault))
    }

    /// Records that a fault ended the target's watch of `resource` in `namespace` with `410
    /// Expired`: the target is to relist and watch again ([`Faults::relists_pending`]).
    pub(crate) fn watch_ended(&self, resource: &str, namespace: Option<&str>) {
        let mut state = self.state();
        state
            .ended
            .push((resource.to_string(), namespace.map(str::to_string)));
        self.inner.relists.0.send_replace(state.ended.len());
    }

    /// Signals a crash (after the write's answer is on its way).
    pub(crate) fn signal_crash(&self) {
        self.inner.crashes.0.send_modify(|n| *n += 1);
    }

    /// Signals that the leader is to be paused (after the write's answer is on its way).
    pub(crate) fn signal_pause(&self) {
        self.inner.leadership.0.send_replace(Leadership::Paused);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(verb: &str) -> TraceEntry {
        TraceEntry {
            verb: verb.into(),
            resource: "configmaps".into(),
            subresource: None,
            namespace: Some("default".into()),
            name: Some("a".into()),
            code: 200,
            revisions: (0, 0),
        }
    }

    #[test]
    fn a_refusal_fires_on_the_write_that_would_have_been_its_point() {
        let faults = Faults::new();
        faults.target("op");
        faults
            .arm(Fault {
                trigger: Trigger::Write(2),
                action: Action::Refuse(FaultStatus::Conflict),
            })
            .unwrap();
        assert_eq!(faults.take_refusal(entry("create")), None);
        assert_eq!(faults.committed(entry("create"), "op"), None);
        assert_eq!(
            faults.take_refusal(entry("update")),
            Some(FaultStatus::Conflict)
        );
        assert_eq!(faults.fired()[0].entry.code, 409);
        // Spent: the retry passes and becomes the second write.
        assert_eq!(faults.take_refusal(entry("update")), None);
        assert_eq!(faults.committed(entry("update"), "op"), None);
        assert_eq!(faults.trace().writes.len(), 2);
    }

    #[test]
    fn a_crash_fires_once_when_its_write_commits() {
        let faults = Faults::new();
        faults.target("op");
        let crash = Fault {
            trigger: Trigger::Write(1),
            action: Action::Crash,
        };
        faults.arm(crash).unwrap();
        assert_eq!(faults.take_refusal(entry("create")), None, "not a refusal");
        assert!(!faults.crashing());
        assert_eq!(faults.committed(entry("create"), "op"), Some(crash));
        assert!(
            faults.crashing(),
            "the target is refused until it was restarted"
        );
        faults.restarted();
        assert!(!faults.crashing());
        assert_eq!(faults.fired().len(), 1);
        assert_eq!(faults.committed(entry("update"), "op"), None);
        assert!(!faults.crashing(), "a write without a fault fences nothing");
        faults
            .arm(Fault {
                trigger: Trigger::Write(3),
                action: Action::Crash,
            })
            .unwrap();
        faults.committed(entry("update"), "op");
        assert!(faults.crashing());
        faults.target("op");
        assert!(!faults.crashing(), "a new target starts afresh");
    }

    #[test]
    fn actions_are_refused_on_the_wrong_kind_of_point() {
        let faults = Faults::new();
        assert!(matches!(
            faults.arm(Fault {
                trigger: Trigger::Watch(1),
                action: Action::Crash
            }),
            Err(FaultError::Mismatch { .. })
        ));
        assert_eq!(
            faults.arm(Fault {
                trigger: Trigger::Write(0),
                action: Action::Crash
            }),
            Err(FaultError::ZeroPoint(Trigger::Write(0)))
        );
        assert!(matches!(
            faults.arm(Fault {
                trigger: Trigger::Write(1),
                action: Action::Unobserved
            }),
            Err(FaultError::Mismatch { .. })
        ));
    }

    fn note(event: &str, name: &str) -> Notification {
        Notification {
            watch: 1,
            event: event.into(),
            resource: "configmaps".into(),
            namespace: Some("default".into()),
            name: name.into(),
            revision: 7,
        }
    }

    #[test]
    fn a_notification_fault_fires_on_its_event_and_is_traced() {
        let faults = Faults::new();
        faults.target("op");
        let unobserved = Fault {
            trigger: Trigger::Notification(2),
            action: Action::Unobserved,
        };
        faults.arm(unobserved).unwrap();
        assert_eq!(faults.notified(note("ADDED", "a")), None);
        assert_eq!(
            faults.notified(note("MODIFIED", "a")),
            Some(Action::Unobserved)
        );
        assert_eq!(faults.notified(note("MODIFIED", "a")), None, "spent");
        assert_eq!(faults.trace().notifications.len(), 3);
        assert_eq!(faults.fired()[0].entry.verb, "MODIFIED");
    }

    #[test]
    fn a_stale_restart_serves_the_view_before_an_earlier_write_once_per_resource() {
        let faults = Faults::new();
        faults.target("op");
        let stale = Fault {
            trigger: Trigger::Write(3),
            action: Action::StaleRestart {
                view_before_write: 1,
            },
        };
        faults.arm(stale).unwrap();
        assert_eq!(faults.stale_read("configmaps", 0), None, "no view yet");
        let at = |verb: &str, revision: u64| TraceEntry {
            revisions: (revision, revision + 1),
            ..entry(verb)
        };
        for (revision, verb) in [(10, "create"), (20, "delete")] {
            assert_eq!(faults.committed(at(verb, revision), "op"), None);
        }
        assert_eq!(faults.committed(at("create", 30), "op"), Some(stale));
        assert_eq!(
            faults.stale_read("configmaps", 11),
            None,
            "NotOlderThan a newer revision is never stale"
        );
        assert_eq!(faults.stale_read("configmaps", 0), Some(10));
        assert_eq!(
            faults.stale_read("configmaps", 0),
            None,
            "once per resource"
        );
        assert_eq!(faults.stale_read("secrets", 10), Some(10));
        // A view of a write not made before the trigger is none.
        let faults = Faults::new();
        faults.target("op");
        faults
            .arm(Fault {
                trigger: Trigger::Write(1),
                action: Action::StaleRestart {
                    view_before_write: 1,
                },
            })
            .unwrap();
        assert_eq!(faults.committed(entry("create"), "op"), None);
        assert_eq!(faults.stale_read("configmaps", 0), None);
    }

    #[test]
    fn a_paused_leader_wakes_at_its_successors_first_write_and_its_later_writes_are_deposed() {
        let faults = Faults::new();
        faults.target("op");
        faults.successor("op-next");
        let pause = Fault {
            trigger: Trigger::Write(1),
            action: Action::Pause,
        };
        faults.arm(pause).unwrap();
        let leadership = faults.leadership();
        assert_eq!(faults.committed(entry("patch"), "op"), Some(pause));
        assert_eq!(
            *leadership.borrow(),
            Leadership::Steady,
            "signalled once answered"
        );
        faults.signal_pause();
        assert_eq!(*leadership.borrow(), Leadership::Paused);
        assert!(faults.targets("op-next"), "the successor is traced");
        assert_eq!(faults.committed(entry("update"), "op-next"), None);
        assert_eq!(*leadership.borrow(), Leadership::Resumed);
        assert_eq!(faults.committed(entry("create"), "op-next"), None);
        assert_eq!(faults.committed(entry("create"), "op"), None);
        let trace = faults.trace();
        assert_eq!(trace.writes.len(), 4);
        assert_eq!(
            trace.deposed,
            [entry("create")],
            "only the old leader's write after"
        );
    }

    #[test]
    fn a_watch_a_fault_ended_is_pending_until_the_target_watches_that_resource_again() {
        let faults = Faults::new();
        faults.target("op");
        let pending = faults.relists_pending();
        let watch = |resource: &str| TraceEntry {
            resource: resource.into(),
            namespace: None,
            ..entry("watch")
        };
        faults.watch_opened(watch("configmaps"));
        faults.watch_ended("configmaps", None);
        assert_eq!(*pending.borrow(), 1);
        faults.watch_opened(watch("secrets"));
        assert_eq!(*pending.borrow(), 1, "another resource is no relist");
        faults.watch_opened(TraceEntry {
            namespace: Some("default".into()),
            ..watch("configmaps")
        });
        assert_eq!(
            *pending.borrow(),
            1,
            "nor one namespace of a cluster-wide watch"
        );
        faults.watch_opened(watch("configmaps"));
        assert_eq!(*pending.borrow(), 0);
        faults.watch_ended("configmaps", None);
        faults.target("op");
        assert_eq!(*pending.borrow(), 0, "a new target starts afresh");
    }

    #[test]
    fn only_the_target_is_traced() {
        let faults = Faults::new();
        assert!(!faults.targets("op"));
        faults.target("op");
        assert!(faults.targets("op") && !faults.targets("admin"));
        faults.clear();
        assert!(!faults.targets("op"));
    }
}
