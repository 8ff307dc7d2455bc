//! What a campaign runs, decided without a server: the fault kinds asked for, the injection
//! points chosen from a reference run's trace (pruned of points that cannot matter), their
//! order for a seed, and the text form of one run that `--chaos-replay` reads back. A run is
//! reproducible from its plan because every fault fires on a point of the trace (the operator's
//! k-th committed write), never on time.

use std::fmt;
use std::str::FromStr;

use opkit_apiserver::faults::{Action, Fault, FaultStatus, TraceEntry, Trigger};
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
}

/// Why a `--chaos` list or a replay plan cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// A fault kind Sieve and Acto inject that opkit does not yet.
    #[error("--chaos: the fault kind {0:?} is not supported yet (supported: crash, errors, all)")]
    NotYet(String),
    /// Not a fault kind at all.
    #[error("--chaos: unknown fault kind {0:?} (supported: crash, errors, all)")]
    Unknown(String),
    /// Nothing asked for.
    #[error("--chaos: no fault kind given (supported: crash, errors, all)")]
    Empty,
    /// A replay plan that does not parse.
    #[error(
        "--chaos-replay: {0:?} is not a run plan (TEST:crash@K, TEST:refuse<CODE>@K or TEST:lose<CODE>@K)"
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
            "all" => kinds.extend([FaultKind::Crash, FaultKind::Errors]),
            "stale" | "unobserved" => return Err(PlanError::NotYet(word.to_string())),
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

/// One fault on one point of the trace: the operator's `write`-th committed write (1-based).
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
}

impl Injection {
    /// The write it fires on (1-based).
    pub fn write(&self) -> usize {
        match *self {
            Injection::Crash { write }
            | Injection::Refuse { write, .. }
            | Injection::LoseResponse { write, .. } => write,
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
        };
        Fault {
            trigger: Trigger::Write(self.write()),
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
        }
    }
}

impl fmt::Display for Injection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Injection::Crash { write } => write!(f, "crash@{write}"),
            Injection::Refuse { write, code } => write!(f, "refuse{code}@{write}"),
            Injection::LoseResponse { write, code } => write!(f, "lose{code}@{write}"),
        }
    }
}

impl FromStr for Injection {
    type Err = PlanError;

    fn from_str(s: &str) -> Result<Injection, PlanError> {
        let bad = || PlanError::BadRun(s.to_string());
        let (what, write) = s.split_once('@').ok_or_else(bad)?;
        let write: usize = write.parse().map_err(|_| bad())?;
        if write == 0 {
            return Err(bad());
        }
        let code = |rest: &str, allowed: &[u16]| {
            rest.parse::<u16>()
                .ok()
                .filter(|c| allowed.contains(c))
                .ok_or_else(bad)
        };
        if what == "crash" {
            Ok(Injection::Crash { write })
        } else if let Some(rest) = what.strip_prefix("refuse") {
            Ok(Injection::Refuse {
                write,
                code: code(rest, &REFUSALS)?,
            })
        } else if let Some(rest) = what.strip_prefix("lose") {
            Ok(Injection::LoseResponse {
                write,
                code: code(rest, &LOST)?,
            })
        } else {
            Err(bad())
        }
    }
}

/// One run of a campaign: a test and the fault injected into it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunPlan {
    /// The test (directory) name.
    pub test: String,
    /// The fault.
    pub injection: Injection,
}

impl fmt::Display for RunPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.test, self.injection)
    }
}

impl FromStr for RunPlan {
    type Err = PlanError;

    fn from_str(s: &str) -> Result<RunPlan, PlanError> {
        let (test, injection) = s
            .rsplit_once(':')
            .filter(|(t, _)| !t.is_empty())
            .ok_or_else(|| PlanError::BadRun(s.to_string()))?;
        Ok(RunPlan {
            test: test.to_string(),
            injection: injection.parse()?,
        })
    }
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

/// The injection points of a reference trace for `kinds`, in the seed's order. Pruned: a
/// write that repeats the write just before it on the same object is not a point of its own
/// (what follows a repeated write is what follows the first one).
pub fn injections(writes: &[TraceEntry], kinds: &[FaultKind], seed: u64) -> Vec<Injection> {
    let mut out = Vec::new();
    for (i, entry) in writes.iter().enumerate() {
        if i > 0 && repeats(&writes[i - 1], entry) {
            continue;
        }
        let write = i + 1;
        for kind in kinds {
            match kind {
                FaultKind::Crash => out.push(Injection::Crash { write }),
                FaultKind::Errors => {
                    out.extend(REFUSALS.map(|code| Injection::Refuse { write, code }));
                    out.extend(LOST.map(|code| Injection::LoseResponse { write, code }));
                }
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
        }
    }

    #[test]
    fn kinds_parse_and_the_ones_not_built_yet_are_named() {
        assert_eq!(
            parse_kinds("errors,crash").unwrap(),
            [FaultKind::Crash, FaultKind::Errors]
        );
        assert_eq!(parse_kinds("all").unwrap().len(), 2);
        assert_eq!(
            parse_kinds("crash,stale"),
            Err(PlanError::NotYet("stale".into()))
        );
        assert!(
            PlanError::NotYet("unobserved".into())
                .to_string()
                .contains("not supported yet")
        );
        assert_eq!(parse_kinds("boom"), Err(PlanError::Unknown("boom".into())));
        assert_eq!(parse_kinds(" , "), Err(PlanError::Empty));
    }

    #[test]
    fn a_run_plan_reads_back_what_it_prints() {
        for text in ["t:crash@3", "my:test:refuse429@1", "t:lose504@12"] {
            let plan: RunPlan = text.parse().unwrap();
            assert_eq!(plan.to_string(), text);
        }
        for bad in [
            "crash@3",
            "t:crash@0",
            "t:refuse418@2",
            "t:lose@2",
            "t:nap@1",
        ] {
            assert!(bad.parse::<RunPlan>().is_err(), "{bad}");
        }
        let plan: RunPlan = "t:lose504@2".parse().unwrap();
        assert_eq!(
            plan.injection.fault(),
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
        let mut crash: Vec<usize> = injections(&writes, &[FaultKind::Crash], 7)
            .iter()
            .map(Injection::write)
            .collect();
        crash.sort();
        assert_eq!(crash, [1, 2, 3, 5], "the repeated patch of a is no point");
        let errors = injections(&writes, &[FaultKind::Errors], 7);
        assert_eq!(errors.len(), 4 * (REFUSALS.len() + LOST.len()));
        assert_eq!(errors, injections(&writes, &[FaultKind::Errors], 7));
        assert_ne!(errors, injections(&writes, &[FaultKind::Errors], 8));
    }
}
