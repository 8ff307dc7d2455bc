//! What a campaign runs, decided without a server: the fault kinds asked for, the injection
//! points chosen from a reference run's trace (pruned of points that cannot matter), their
//! order for a seed, and the text form of one run that `--chaos-replay` reads back. A run is
//! reproducible from its plan because every fault fires on a point of the trace (the operator's
//! k-th committed write, k-th watch or k-th notification), never on time.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use opkit_apiserver::faults::{
    Action, Fault, FaultStatus, Notification, Trace, TraceEntry, Trigger,
};
use rand::SeedableRng;
use rand::seq::SliceRandom;

/// A kind of fault a campaign injects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum FaultKind {
    /// Kill and restart the operator right after one of its writes committed.
    Crash,
    /// Refuse one write (409, 429, 500, 503) or lose its response after it committed (500,
    /// 504).
    Errors,
    /// Restart the operator onto a stale view: after it re-creates an object it deleted, its
    /// first reads that allow any revision are answered from before that delete.
    Stale,
    /// Hold back one notification until a later one of the same object overwrites it.
    Unobserved,
    /// Delay one watch stream, or end one with `410 Expired` after an event (the operator
    /// relists and gets every object again).
    Watch,
    /// Pause the operator (SIGSTOP) right after one of its writes, start a successor, and
    /// wake the old one (SIGCONT) when the successor took over: for operators with leader
    /// election, which must not act once deposed. Not in `all` (an operator without leader
    /// election is two actors by design).
    Leader,
}

/// The kinds `--chaos` names, as its messages list them.
const KINDS: &str = "crash, errors, stale, unobserved, watch, leader, all";

/// Why a `--chaos` list or a replay plan cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// Not a fault kind at all.
    #[error("--chaos: unknown fault kind {0:?} (supported: {KINDS})")]
    Unknown(String),
    /// Nothing asked for.
    #[error("--chaos: no fault kind given (supported: {KINDS})")]
    Empty,
    /// A replay plan that does not parse.
    #[error(
        "--chaos-replay: {0:?} is not a run plan (TEST:crash@K, TEST:refuse<CODE>@K, \
         TEST:lose<CODE>@K, TEST:stale<D>@K, TEST:unobserved@N, TEST:expire@N, TEST:delay@W or \
         TEST:pause@K, several joined with +)"
    )]
    BadRun(String),
}

/// Parses `--chaos`: a comma-separated list of kinds, or `all`.
pub fn parse_kinds(spec: &str) -> Result<Vec<FaultKind>, PlanError> {
    let mut kinds = Vec::new();
    for word in spec.split(',').map(str::trim).filter(|w| !w.is_empty()) {
        match word {
            "crash" => kinds.push(FaultKind::Crash),
            "errors" => kinds.push(FaultKind::Errors),
            "stale" => kinds.push(FaultKind::Stale),
            "unobserved" => kinds.push(FaultKind::Unobserved),
            "watch" => kinds.push(FaultKind::Watch),
            "leader" => kinds.push(FaultKind::Leader),
            "all" => kinds.extend([
                FaultKind::Crash,
                FaultKind::Errors,
                FaultKind::Stale,
                FaultKind::Unobserved,
                FaultKind::Watch,
            ]),
            other => return Err(PlanError::Unknown(other.to_string())),
        }
    }
    kinds.sort();
    kinds.dedup();
    if kinds.is_empty() {
        return Err(PlanError::Empty);
    }
    Ok(kinds)
}

/// The statuses a refused write is answered with (before anything is committed).
pub const REFUSALS: [u16; 4] = [409, 429, 500, 503];
/// The statuses a committed write's lost response is answered with.
pub const LOST: [u16; 2] = [500, 504];
/// The resource leader election writes.
const LEASES: &str = "leases.coordination.k8s.io";

/// How long every event of a delayed watch is held.
pub const WATCH_DELAY: Duration = Duration::from_millis(500);

/// One fault on one point of the trace: the operator's `write`-th committed write, `watch`-th
/// watch or `notification`-th notification (all 1-based).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Injection {
    /// Crash and restart the operator after the write committed.
    Crash {
        /// The write.
        write: usize,
    },
    /// Refuse the write that would have been this one, with `code`.
    Refuse {
        /// The write.
        write: usize,
        /// 409, 429, 500 or 503.
        code: u16,
    },
    /// Commit the write, then answer `code`.
    LoseResponse {
        /// The write.
        write: usize,
        /// 500 or 504.
        code: u16,
    },
    /// After the write (a re-create), restart the operator onto the view from before its
    /// write `delete` (the delete of the same object).
    Stale {
        /// The earlier delete.
        delete: usize,
        /// The write.
        write: usize,
    },
    /// Hold back the notification; the watch expires when a later one of the object comes.
    Unobserved {
        /// The notification.
        notification: usize,
    },
    /// Deliver the notification, then end its watch with `410 Expired`.
    Expire {
        /// The notification.
        notification: usize,
    },
    /// Hold every event of the watch [`WATCH_DELAY`].
    Delay {
        /// The watch.
        watch: usize,
    },
    /// Pause the operator after the write, start a successor, wake the old one when the
    /// successor made its first write.
    Pause {
        /// The write.
        write: usize,
    },
}

impl Injection {
    /// The point of the trace it fires on.
    pub fn trigger(&self) -> Trigger {
        match *self {
            Injection::Crash { write }
            | Injection::Refuse { write, .. }
            | Injection::LoseResponse { write, .. }
            | Injection::Stale { write, .. }
            | Injection::Pause { write } => Trigger::Write(write),
            Injection::Unobserved { notification } | Injection::Expire { notification } => {
                Trigger::Notification(notification)
            }
            Injection::Delay { watch } => Trigger::Watch(watch),
        }
    }

    /// The server's fault.
    pub fn fault(&self) -> Fault {
        let status = |code| match code {
            409 => FaultStatus::Conflict,
            429 => FaultStatus::TooManyRequests { retry_after: 1 },
            503 => FaultStatus::ServiceUnavailable,
            504 => FaultStatus::Timeout,
            _ => FaultStatus::InternalError,
        };
        let action = match *self {
            Injection::Crash { .. } => Action::Crash,
            Injection::Refuse { code, .. } => Action::Refuse(status(code)),
            Injection::LoseResponse { code, .. } => Action::LoseResponse(status(code)),
            Injection::Stale { delete, .. } => Action::StaleRestart {
                view_before_write: delete,
            },
            Injection::Unobserved { .. } => Action::Unobserved,
            Injection::Expire { .. } => Action::Expire,
            Injection::Delay { .. } => Action::DelayWatch(WATCH_DELAY),
            Injection::Pause { .. } => Action::Pause,
        };
        Fault {
            trigger: self.trigger(),
            action,
        }
    }

    /// What it does, in words, for reports.
    pub fn describe(&self) -> String {
        match *self {
            Injection::Crash { write } => {
                format!("crash and restart the operator after its write {write} committed")
            }
            Injection::Refuse { write, code } => {
                format!("refuse the operator's write {write} with {code} (nothing committed)")
            }
            Injection::LoseResponse { write, code } => format!(
                "commit the operator's write {write}, then answer {code} (the response is lost)"
            ),
            Injection::Stale { delete, write } => format!(
                "restart the operator after its write {write} committed, and answer its first \
                 read of each resource that allows any revision from before its write {delete}"
            ),
            Injection::Unobserved { notification } => format!(
                "hold back the operator's notification {notification}; its watch expires (410) \
                 when a later event of the same object comes, so it never sees that state"
            ),
            Injection::Expire { notification } => format!(
                "end the operator's watch with 410 Expired after its notification \
                 {notification} (it relists)"
            ),
            Injection::Delay { watch } => format!(
                "delay every event of the operator's watch {watch} by {} ms",
                WATCH_DELAY.as_millis()
            ),
            Injection::Pause { write } => format!(
                "pause the operator (SIGSTOP) after its write {write} committed, start a \
                 successor, and wake the old one (SIGCONT) once the successor took over"
            ),
        }
    }
}

impl fmt::Display for Injection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Injection::Crash { write } => write!(f, "crash@{write}"),
            Injection::Refuse { write, code } => write!(f, "refuse{code}@{write}"),
            Injection::LoseResponse { write, code } => write!(f, "lose{code}@{write}"),
            Injection::Stale { delete, write } => write!(f, "stale{delete}@{write}"),
            Injection::Unobserved { notification } => write!(f, "unobserved@{notification}"),
            Injection::Expire { notification } => write!(f, "expire@{notification}"),
            Injection::Delay { watch } => write!(f, "delay@{watch}"),
            Injection::Pause { write } => write!(f, "pause@{write}"),
        }
    }
}

impl FromStr for Injection {
    type Err = PlanError;

    fn from_str(s: &str) -> Result<Injection, PlanError> {
        let bad = || PlanError::BadRun(s.to_string());
        let (what, at) = s.split_once('@').ok_or_else(bad)?;
        let at: usize = at.parse().map_err(|_| bad())?;
        if at == 0 {
            return Err(bad());
        }
        let code = |rest: &str, allowed: &[u16]| {
            rest.parse::<u16>()
                .ok()
                .filter(|c| allowed.contains(c))
                .ok_or_else(bad)
        };
        Ok(match what {
            "crash" => Injection::Crash { write: at },
            "unobserved" => Injection::Unobserved { notification: at },
            "expire" => Injection::Expire { notification: at },
            "delay" => Injection::Delay { watch: at },
            "pause" => Injection::Pause { write: at },
            _ => {
                if let Some(rest) = what.strip_prefix("refuse") {
                    Injection::Refuse {
                        write: at,
                        code: code(rest, &REFUSALS)?,
                    }
                } else if let Some(rest) = what.strip_prefix("lose") {
                    Injection::LoseResponse {
                        write: at,
                        code: code(rest, &LOST)?,
                    }
                } else if let Some(rest) = what.strip_prefix("stale") {
                    let delete = rest
                        .parse::<usize>()
                        .ok()
                        .filter(|d| (1..at).contains(d))
                        .ok_or_else(bad)?;
                    Injection::Stale { delete, write: at }
                } else {
                    return Err(bad());
                }
            }
        })
    }
}

/// One run of a campaign: a test and the faults injected into it (one, or several with
/// `--faults-per-run`; a failing run of several is shrunk to the fewest that still fail).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunPlan {
    /// The test (directory) name.
    pub test: String,
    /// The faults, at least one, armed together.
    pub injections: Vec<Injection>,
}

impl RunPlan {
    /// A run of `test` with one fault.
    pub fn single(test: impl Into<String>, injection: Injection) -> RunPlan {
        RunPlan {
            test: test.into(),
            injections: vec![injection],
        }
    }
}

impl fmt::Display for RunPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:", self.test)?;
        for (i, injection) in self.injections.iter().enumerate() {
            let sep = if i == 0 { "" } else { "+" };
            write!(f, "{sep}{injection}")?;
        }
        Ok(())
    }
}

impl FromStr for RunPlan {
    type Err = PlanError;

    fn from_str(s: &str) -> Result<RunPlan, PlanError> {
        let (test, injections) = s
            .rsplit_once(':')
            .filter(|(t, _)| !t.is_empty())
            .ok_or_else(|| PlanError::BadRun(s.to_string()))?;
        Ok(RunPlan {
            test: test.to_string(),
            injections: injections
                .split('+')
                .map(str::parse)
                .collect::<Result<_, _>>()?,
        })
    }
}

/// Whether two faults cannot both fire in one run: the server fires one fault per point and
/// phase (a refusal when a write arrives, another write fault when it commits, one per watch
/// or notification).
fn collide(a: &Injection, b: &Injection) -> bool {
    let refusal = |i: &Injection| matches!(i, Injection::Refuse { .. });
    a.trigger() == b.trigger() && refusal(a) == refusal(b)
}

/// Groups injection points (in the seed's order) into runs of up to `per_run` faults that can
/// all fire together, each point in one run: the first run that has room and no colliding
/// fault takes it. `per_run` 0 counts as 1.
pub fn group_runs(points: &[Injection], per_run: usize) -> Vec<Vec<Injection>> {
    let mut runs: Vec<Vec<Injection>> = Vec::new();
    for point in points {
        let open = runs
            .iter_mut()
            .find(|run| run.len() < per_run && !run.iter().any(|i| collide(i, point)));
        match open {
            Some(run) => run.push(*point),
            None => runs.push(vec![*point]),
        }
    }
    runs
}

/// A write in words: `patch configmaps/status NAME` (namespaced names without their namespace,
/// which differs from run to run).
pub fn describe_write(entry: &TraceEntry) -> String {
    let resource = match &entry.subresource {
        Some(sub) => format!("{}/{sub}", entry.resource),
        None => entry.resource.clone(),
    };
    match &entry.name {
        Some(name) => format!("{} {resource} {name}", entry.verb),
        None => format!("{} {resource}", entry.verb),
    }
}

/// A trace point's label: `write 2`, `notification 3`, `watch 1`.
pub fn point_label(trigger: Trigger) -> String {
    match trigger {
        Trigger::Write(k) => format!("write {k}"),
        Trigger::Watch(k) => format!("watch {k}"),
        Trigger::Notification(k) => format!("notification {k}"),
    }
}

/// What happened at a trace point, in words: `create configmaps output`, `MODIFIED configmaps
/// db`, `watch configmaps`; `None` when the trace has no such point.
pub fn describe_point(trace: &Trace, trigger: Trigger) -> Option<String> {
    match trigger {
        Trigger::Write(k) => trace.writes.get(k.checked_sub(1)?).map(describe_write),
        Trigger::Watch(k) => trace.watches.get(k.checked_sub(1)?).map(describe_write),
        Trigger::Notification(k) => trace
            .notifications
            .get(k.checked_sub(1)?)
            .map(|n| format!("{} {} {}", n.event, n.resource, n.name)),
    }
}

/// Whether `later` repeats `earlier` on the same named object (same verb, resource,
/// subresource, namespace and name): the shape of a heartbeat or a retry.
fn repeats(earlier: &TraceEntry, later: &TraceEntry) -> bool {
    later.name.is_some()
        && later.verb == earlier.verb
        && later.resource == earlier.resource
        && later.subresource == earlier.subresource
        && later.namespace == earlier.namespace
        && later.name == earlier.name
}

/// Whether a write addresses the object a notification is about.
fn writes_object(write: &TraceEntry, note: &Notification) -> bool {
    write.resource == note.resource
        && write.namespace == note.namespace
        && write.name.as_deref() == Some(note.name.as_str())
}

/// The stale points: each create of an object the operator deleted before (the delete's
/// premise was contradicted later: the object is wanted again), paired with that delete.
fn stale_points(writes: &[TraceEntry]) -> Vec<Injection> {
    let mut out = Vec::new();
    for (m, create) in writes.iter().enumerate() {
        if create.verb != "create" || create.name.is_none() {
            continue;
        }
        let same = |w: &TraceEntry| {
            w.subresource.is_none()
                && w.resource == create.resource
                && w.namespace == create.namespace
                && w.name == create.name
        };
        let last = writes[..m]
            .iter()
            .rposition(|w| same(w) && w.verb != "patch");
        if let Some(k) = last.filter(|&k| writes[k].verb == "delete") {
            out.push(Injection::Stale {
                delete: k + 1,
                write: m + 1,
            });
        }
    }
    out
}

/// The unobserved points: each notification that a later one of the same object on the same
/// watch overwrites, unless the operator itself wrote the object after the first and up to the
/// later one (by the revisions of the writes and events) — then the later state waits for the
/// operator, and holding the first would only stall it.
fn unobserved_points(trace: &Trace) -> Vec<Injection> {
    let notes = &trace.notifications;
    let mut out = Vec::new();
    for (i, note) in notes.iter().enumerate() {
        let later = notes[i + 1..].iter().find(|n| {
            n.watch == note.watch && n.namespace == note.namespace && n.name == note.name
        });
        let Some(later) = later else { continue };
        // A write's revision lies in (before, after]: it may fall in (note, later].
        let operator_wrote = trace.writes.iter().any(|w| {
            writes_object(w, note)
                && w.revisions.1 > note.revision
                && w.revisions.0 < later.revision
        });
        if !operator_wrote {
            out.push(Injection::Unobserved {
                notification: i + 1,
            });
        }
    }
    out
}

/// The injection points of a reference trace for `kinds`, in the seed's order. Pruned: a
/// write that repeats the write just before it on the same object is not a point of its own
/// (what follows a repeated write is what follows the first one); see [`stale_points`] and
/// [`unobserved_points`] for theirs.
pub fn injections(trace: &Trace, kinds: &[FaultKind], seed: u64) -> Vec<Injection> {
    let writes = &trace.writes;
    let mut out = Vec::new();
    for kind in kinds {
        match kind {
            FaultKind::Crash | FaultKind::Errors | FaultKind::Leader => {
                for (i, entry) in writes.iter().enumerate() {
                    if i > 0 && repeats(&writes[i - 1], entry) {
                        continue;
                    }
                    let write = i + 1;
                    match kind {
                        FaultKind::Crash => out.push(Injection::Crash { write }),
                        // Pausing right after taking or renewing the lease is pausing after
                        // the write before it, with a fresher lease.
                        FaultKind::Leader if entry.resource != LEASES => {
                            out.push(Injection::Pause { write })
                        }
                        FaultKind::Leader => {}
                        _ => {
                            out.extend(REFUSALS.map(|code| Injection::Refuse { write, code }));
                            out.extend(LOST.map(|code| Injection::LoseResponse { write, code }));
                        }
                    }
                }
            }
            FaultKind::Stale => out.extend(stale_points(writes)),
            FaultKind::Unobserved => out.extend(unobserved_points(trace)),
            FaultKind::Watch => {
                out.extend((1..=trace.watches.len()).map(|watch| Injection::Delay { watch }));
                out.extend(
                    (1..=trace.notifications.len())
                        .map(|notification| Injection::Expire { notification }),
                );
            }
        }
    }
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    out.shuffle(&mut rng);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(verb: &str, name: Option<&str>) -> TraceEntry {
        TraceEntry {
            verb: verb.into(),
            resource: "configmaps".into(),
            subresource: None,
            namespace: Some("ns".into()),
            name: name.map(Into::into),
            code: 200,
            revisions: (0, 0),
        }
    }

    #[test]
    fn kinds_parse_and_all_names_every_kind() {
        assert_eq!(
            parse_kinds("errors,crash").unwrap(),
            [FaultKind::Crash, FaultKind::Errors]
        );
        assert_eq!(
            parse_kinds("unobserved, stale").unwrap(),
            [FaultKind::Stale, FaultKind::Unobserved]
        );
        assert_eq!(parse_kinds("all,watch").unwrap().len(), 5);
        assert_eq!(
            parse_kinds("leader").unwrap(),
            [FaultKind::Leader],
            "not in all: it needs leader election"
        );
        assert_eq!(parse_kinds("boom"), Err(PlanError::Unknown("boom".into())));
        assert_eq!(parse_kinds(" , "), Err(PlanError::Empty));
    }

    #[test]
    fn a_run_plan_reads_back_what_it_prints() {
        for text in [
            "t:crash@3",
            "my:test:refuse429@1",
            "t:lose504@12",
            "t:stale4@6",
            "t:unobserved@3",
            "t:expire@1",
            "t:delay@2",
            "t:crash@1+lose500@2+delay@1",
            "t:pause@2",
        ] {
            let plan: RunPlan = text.parse().unwrap();
            assert_eq!(plan.to_string(), text);
        }
        for bad in [
            "crash@3",
            "t:crash@0",
            "t:refuse418@2",
            "t:lose@2",
            "t:nap@1",
            "t:stale6@6",
            "t:stale0@2",
            "t:unobserved@0",
            "t:crash@1+",
            "t:crash@1+nap@2",
        ] {
            assert!(bad.parse::<RunPlan>().is_err(), "{bad}");
        }
        let plan: RunPlan = "t:lose504@2".parse().unwrap();
        assert_eq!(
            plan.injections[0].fault(),
            Fault {
                trigger: Trigger::Write(2),
                action: Action::LoseResponse(FaultStatus::Timeout)
            }
        );
    }

    #[test]
    fn repeated_writes_of_one_object_are_pruned_and_the_seed_fixes_the_order() {
        let writes = [
            write("create", None),
            write("create", None),
            write("patch", Some("a")),
            write("patch", Some("a")),
            write("patch", Some("b")),
        ];
        let trace = Trace {
            writes: writes.to_vec(),
            ..Trace::default()
        };
        let mut crash: Vec<Trigger> = injections(&trace, &[FaultKind::Crash], 7)
            .iter()
            .map(Injection::trigger)
            .collect();
        crash.sort_by_key(|t| format!("{t:?}"));
        assert_eq!(
            crash,
            [1, 2, 3, 5].map(Trigger::Write),
            "the repeated patch of a is no point"
        );
        let errors = injections(&trace, &[FaultKind::Errors], 7);
        assert_eq!(errors.len(), 4 * (REFUSALS.len() + LOST.len()));
        assert_eq!(errors, injections(&trace, &[FaultKind::Errors], 7));
        assert_ne!(errors, injections(&trace, &[FaultKind::Errors], 8));
    }

    #[test]
    fn a_pause_point_is_every_write_but_the_leases() {
        let lease = TraceEntry {
            resource: LEASES.into(),
            ..write("update", Some("leader"))
        };
        let trace = Trace {
            writes: vec![
                lease.clone(),
                write("patch", Some("a")),
                lease,
                write("create", Some("b")),
            ],
            ..Trace::default()
        };
        let mut points = injections(&trace, &[FaultKind::Leader], 1);
        points.sort_by_key(|p| p.to_string());
        assert_eq!(points, [2, 4].map(|write| Injection::Pause { write }));
        assert_eq!(points[0].fault().action, Action::Pause);
    }

    #[test]
    fn a_stale_point_is_a_create_of_an_object_the_operator_deleted_before() {
        let trace = Trace {
            writes: vec![
                write("create", Some("a")),
                write("create", Some("b")),
                write("delete", Some("b")),
                write("patch", Some("b")),
                write("create", Some("b")),
                write("create", Some("c")),
                write("delete", Some("a")),
            ],
            ..Trace::default()
        };
        assert_eq!(
            injections(&trace, &[FaultKind::Stale], 1),
            [Injection::Stale {
                delete: 3,
                write: 5
            }]
        );
        assert_eq!(
            describe_point(&trace, Trigger::Write(5)).as_deref(),
            Some("create configmaps b")
        );
        assert_eq!(describe_point(&trace, Trigger::Write(9)), None);
    }

    #[test]
    fn points_are_grouped_into_runs_whose_faults_can_all_fire() {
        let points: Vec<Injection> = ["crash@1", "refuse409@1", "lose500@1", "crash@2", "delay@1"]
            .iter()
            .map(|p| p.parse().unwrap())
            .collect();
        let runs: Vec<String> = group_runs(&points, 3)
            .iter()
            .map(|run| RunPlan {
                test: "t".into(),
                injections: run.clone(),
            })
            .map(|plan| plan.to_string())
            .collect();
        // A refusal and a crash on one write both fire (the refused write's retry commits);
        // a crash and a lost response on one write do not.
        assert_eq!(
            runs,
            ["t:crash@1+refuse409@1+crash@2", "t:lose500@1+delay@1"]
        );
        assert_eq!(group_runs(&points, 1).len(), 5);
        assert_eq!(group_runs(&points, 0).len(), 5);
    }

    fn note(watch: usize, event: &str, name: &str, revision: u64) -> Notification {
        Notification {
            watch,
            event: event.into(),
            resource: "configmaps".into(),
            namespace: Some("ns".into()),
            name: name.into(),
            revision,
        }
    }

    #[test]
    fn an_unobserved_point_is_overwritten_later_without_the_operator_writing_the_object() {
        let at = |verb: &str, name: &str, revisions: (u64, u64)| TraceEntry {
            revisions,
            ..write(verb, Some(name))
        };
        let trace = Trace {
            writes: vec![
                at("create", "db-storage", (1, 2)),
                // Its revision is 3 (its event may pass before its answer: order does not
                // matter, revisions do).
                at("patch", "db", (2, 3)),
                at("delete", "db-storage", (5, 6)),
            ],
            notifications: vec![
                // The operator's own patch of db overwrites this one: holding it would stall.
                note(1, "ADDED", "db", 1),
                // Overwritten by the test's change (no write of db between).
                note(1, "MODIFIED", "db", 3),
                // Overwritten by the delete, while the operator wrote another object.
                note(1, "MODIFIED", "db", 5),
                note(1, "DELETED", "db", 7),
                // Nothing later of this object on its watch.
                note(2, "ADDED", "other", 8),
            ],
            ..Trace::default()
        };
        let mut points = injections(&trace, &[FaultKind::Unobserved], 3);
        points.sort_by_key(|p| p.to_string());
        assert_eq!(
            points,
            [2, 3].map(|notification| Injection::Unobserved { notification })
        );
        let watch = injections(&trace, &[FaultKind::Watch], 3);
        assert_eq!(watch.len(), 5, "one expiry per notification: {watch:?}");
        assert_eq!(
            describe_point(&trace, Trigger::Notification(4)).as_deref(),
            Some("DELETED configmaps db")
        );
    }
}
