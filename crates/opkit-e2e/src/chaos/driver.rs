//! The campaign loop, whatever the workload: two fault-free reference runs of a test (its
//! trace, end state and learned masks), then its runs of faults in the seed's order within the
//! budget, each judged by the oracles, and a failing run of several faults shrunk to the ones
//! that matter. A kuttl suite (`campaign`) and a Rust test function (`api`) differ only in how
//! one run is done: their [`Runner`].

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use opkit_apiserver::faults::Trace;

use super::oracle::{self, Counts, Mask, Snapshot};
use super::plan::{self, FaultKind, Injection, RunPlan};
use super::shrink::Shrinker;
use crate::log::Log;

/// Why a campaign could not be run (as opposed to a finding).
#[derive(Debug, thiserror::Error)]
pub enum CampaignError {
    /// The suite names no test dirs, or they cannot be read.
    #[error("{0}")]
    Suite(String),
    /// An embedded plane did not start.
    #[error("cannot start the embedded control plane: {0}")]
    Plane(String),
    /// A reference run failed: the test fails without faults, so faults prove nothing.
    #[error("the fault-free reference run of {test} failed, fix it first:\n{why}")]
    Reference {
        /// The test.
        test: String,
        /// Its failures.
        why: String,
    },
    /// A reference run kept writing after its last step: the operator never settles even
    /// without faults (its own writes trigger more, e.g. a status heartbeat), so the quiet
    /// oracle fails before any fault.
    #[error(
        "the operator is not quiet without faults: in the fault-free reference runs of {test} it \
         made {writes} writes after the last step and never went the settle time without one; \
         an operator whose own writes trigger more writes never settles"
    )]
    NotQuiet {
        /// The test.
        test: String,
        /// The most writes either reference run made after its last step.
        writes: usize,
    },
    /// A replay names a test the suite does not have.
    #[error("--chaos-replay: the suite has no kuttl or chainsaw test {0:?}")]
    NoSuchTest(String),
    /// Reading the end state failed.
    #[error("cannot read the end state of {test}: {why}")]
    Snapshot {
        /// The test.
        test: String,
        /// What failed.
        why: String,
    },
    /// Files of a run.
    #[error("{0}")]
    Io(String),
}

/// An oracle a run failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OracleFailure {
    /// Which: `asserts`, `end state`, `create/delete counts`, `fencing` or `quiet`.
    pub oracle: &'static str,
    /// What differed, one line each.
    pub details: Vec<String>,
}

/// A fault of a run and the point of the trace it fires on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FaultPoint {
    /// The fault.
    pub injection: Injection,
    /// The trace point it fires on: `write 2`, `notification 3`, `watch 1`.
    pub label: String,
    /// What happened at that point in the reference run, in words (`patch configmaps
    /// status`, `MODIFIED configmaps db`).
    pub point: String,
}

/// A failing run of several faults shrunk to the fewest that still fail.
#[derive(Debug, Clone)]
pub struct Shrunk {
    /// The minimal run (its faults a subset of the finding's).
    pub plan: RunPlan,
    /// The command that replays it.
    pub replay: String,
    /// The runs shrinking took.
    pub runs: usize,
    /// Whether the budget ran out first (then `plan` fails but may not be minimal).
    pub cut_short: bool,
}

/// A run whose faults broke the operator.
#[derive(Debug, Clone)]
pub struct Finding {
    /// The run.
    pub plan: RunPlan,
    /// Its faults and their points, in the plan's order.
    pub points: Vec<FaultPoint>,
    /// The run shrunk to a minimal set of faults that still fails (runs of several faults).
    pub shrunk: Option<Shrunk>,
    /// The oracles it failed.
    pub failures: Vec<OracleFailure>,
    /// The command that replays exactly this run.
    pub replay: String,
    /// The run's whole output.
    pub log_file: Option<PathBuf>,
}

/// How a campaign went.
#[derive(Debug, Default)]
pub struct CampaignOutcome {
    /// Fault runs done.
    pub runs: usize,
    /// Runs planned but not done: the budget was spent.
    pub not_run: usize,
    /// Faults that never fired (the run took another path before reaching their points).
    pub not_fired: usize,
    /// The runs that broke the operator.
    pub findings: Vec<Finding>,
    /// The whole campaign, reference runs included.
    pub duration: Duration,
}

/// How one run of a test is done: on a fresh plane, with `injections` armed.
pub(crate) trait Runner {
    /// Runs `test` once.
    async fn run_once(
        &self,
        test: &str,
        injections: &[Injection],
    ) -> Result<RunResult, CampaignError>;
}

/// A campaign's settings, over any [`Runner`].
pub(crate) struct Driver<'a, R> {
    pub(crate) runner: &'a R,
    pub(crate) kinds: &'a [FaultKind],
    pub(crate) seed: u64,
    pub(crate) budget: Option<Duration>,
    pub(crate) faults_per_run: usize,
    /// How a run is replayed, in words (a command line, a call).
    pub(crate) replay: &'a (dyn Fn(&RunPlan) -> String + Sync),
    /// Where a failed run's output is kept (`<dir>/<test>/<faults>.log`), if anywhere.
    pub(crate) logs_dir: Option<PathBuf>,
    pub(crate) log: Log,
}

/// What the reference runs of a test established.
pub(crate) struct Reference {
    trace: Trace,
    snapshot: Snapshot,
    mask: Mask,
    counts: Counts,
    unstable: BTreeSet<String>,
}

/// What one run left behind.
pub(crate) struct RunResult {
    /// The workload's own failures (asserts, a fatal error).
    pub(crate) failures: Vec<String>,
    /// The test namespace's objects at the end.
    pub(crate) snapshot: Snapshot,
    /// The operator's trace.
    pub(crate) trace: Trace,
    /// The operator's writes after the workload ended.
    pub(crate) after_tests: usize,
    /// Whether the operator then went the settle time without a write.
    pub(crate) quiet: bool,
    /// How many of its faults fired.
    pub(crate) fired: usize,
    /// The test namespace.
    pub(crate) namespace: String,
    /// The run's output.
    pub(crate) lines: Vec<String>,
    /// How many times the operator was restarted.
    pub(crate) restarts: usize,
}

impl<R: Runner> Driver<'_, R> {
    /// Runs the campaign over `tests`.
    pub(crate) async fn campaign(
        &self,
        tests: &[String],
    ) -> Result<CampaignOutcome, CampaignError> {
        let started = Instant::now();
        let deadline = self.budget.map(|b| started + b);
        let mut outcome = CampaignOutcome::default();
        for test in tests {
            let reference = self.reference(test).await?;
            let points = plan::injections(&reference.trace, self.kinds, self.seed);
            let runs = plan::group_runs(&points, self.faults_per_run);
            let per_run = match self.faults_per_run {
                0 | 1 => String::new(),
                n => format!(", up to {n} faults each"),
            };
            self.log.line(&format!(
                "chaos: {test}: the operator made {} writes, {} watches and got {} \
                 notifications without faults; {} runs planned{per_run} (seed {})",
                reference.trace.writes.len(),
                reference.trace.watches.len(),
                reference.trace.notifications.len(),
                runs.len(),
                self.seed
            ));
            let total = runs.len();
            for (i, injections) in runs.into_iter().enumerate() {
                if spent(deadline) {
                    let left = total - i;
                    outcome.not_run += left;
                    self.log.line(&format!(
                        "chaos: {test}: the budget is spent, {left} runs not done"
                    ));
                    break;
                }
                let plan = RunPlan {
                    test: test.clone(),
                    injections,
                };
                self.fault_run(&plan, &reference, deadline, &mut outcome)
                    .await?;
            }
        }
        outcome.duration = started.elapsed();
        Ok(outcome)
    }

    /// Replays one run of a campaign (after the reference runs its oracles need).
    pub(crate) async fn replay(&self, plan: &RunPlan) -> Result<CampaignOutcome, CampaignError> {
        let started = Instant::now();
        let mut outcome = CampaignOutcome::default();
        let reference = self.reference(&plan.test).await?;
        let deadline = self.budget.map(|b| started + b);
        self.fault_run(plan, &reference, deadline, &mut outcome)
            .await?;
        outcome.duration = started.elapsed();
        Ok(outcome)
    }

    /// Two fault-free runs of `test`.
    async fn reference(&self, test: &str) -> Result<Reference, CampaignError> {
        let first = self.runner.run_once(test, &[]).await?;
        let second = self.runner.run_once(test, &[]).await?;
        for run in [&first, &second] {
            if !run.failures.is_empty() {
                return Err(CampaignError::Reference {
                    test: test.to_string(),
                    why: run.failures.join("\n"),
                });
            }
        }
        if !(first.quiet && second.quiet) {
            return Err(CampaignError::NotQuiet {
                test: test.to_string(),
                writes: first.after_tests.max(second.after_tests),
            });
        }
        let counts = oracle::counts(&first.trace.writes, &first.namespace);
        let unstable = oracle::unstable_groups(
            &counts,
            &oracle::counts(&second.trace.writes, &second.namespace),
        );
        Ok(Reference {
            counts: oracle::collapse(&counts, &unstable),
            unstable,
            mask: oracle::learn_mask(&first.snapshot, &second.snapshot),
            trace: first.trace,
            snapshot: first.snapshot,
        })
    }

    /// One run with its faults, judged; a failing run of several faults is shrunk.
    async fn fault_run(
        &self,
        plan: &RunPlan,
        reference: &Reference,
        deadline: Option<Instant>,
        outcome: &mut CampaignOutcome,
    ) -> Result<(), CampaignError> {
        let (run, failures) = self.judged_run(plan, reference).await?;
        outcome.runs += 1;
        outcome.not_fired += plan.injections.len().saturating_sub(run.fired);
        if failures.is_empty() {
            return Ok(());
        }
        let log_file = self.keep_log(plan, &run.lines)?;
        let shrunk = match plan.injections.len() {
            0 | 1 => None,
            _ => Some(self.shrink(plan, reference, deadline).await?),
        };
        outcome.findings.push(Finding {
            plan: plan.clone(),
            points: fault_points(plan, &reference.trace, &run.trace),
            shrunk,
            failures,
            replay: self.replay_command(plan),
            log_file,
        });
        Ok(())
    }

    /// Runs `plan` once, logs its verdict and returns the run and the oracles it failed.
    async fn judged_run(
        &self,
        plan: &RunPlan,
        reference: &Reference,
    ) -> Result<(RunResult, Vec<OracleFailure>), CampaignError> {
        let started = Instant::now();
        let run = self.runner.run_once(&plan.test, &plan.injections).await?;
        let points: Vec<String> = fault_points(plan, &reference.trace, &run.trace)
            .into_iter()
            .map(|p| p.point)
            .collect();
        let failures = judge(reference, &run);
        let verdict = if failures.is_empty() { "ok" } else { "FAILED" };
        self.log.line(&format!(
            "chaos: {plan} ({}): {verdict} (restarted {} times, {:.1}s)",
            points.join("; "),
            run.restarts,
            started.elapsed().as_secs_f64()
        ));
        Ok((run, failures))
    }

    /// Delta debugging over a failing plan's faults (`shrink`): each subset tried is a run of
    /// its own, judged as any; stops at a 1-minimal plan or when the budget is spent.
    async fn shrink(
        &self,
        plan: &RunPlan,
        reference: &Reference,
        deadline: Option<Instant>,
    ) -> Result<Shrunk, CampaignError> {
        let mut shrinker = Shrinker::new(plan.injections.clone());
        let mut runs = 0;
        let mut cut_short = false;
        while let Some(injections) = shrinker.next() {
            if spent(deadline) {
                cut_short = true;
                break;
            }
            let candidate = RunPlan {
                test: plan.test.clone(),
                injections,
            };
            let (_, failures) = self.judged_run(&candidate, reference).await?;
            runs += 1;
            shrinker.verdict(!failures.is_empty());
        }
        let minimal = RunPlan {
            test: plan.test.clone(),
            injections: shrinker.smallest().to_vec(),
        };
        self.log.line(&format!(
            "chaos: {plan} shrunk to {minimal} in {runs} runs{}",
            if cut_short {
                " (the budget ran out: it may not be minimal)"
            } else {
                ""
            }
        ));
        Ok(Shrunk {
            replay: self.replay_command(&minimal),
            plan: minimal,
            runs,
            cut_short,
        })
    }

    fn replay_command(&self, plan: &RunPlan) -> String {
        (self.replay)(plan)
    }

    /// Writes a failed run's output to `<logs_dir>/<test>/<faults>.log`.
    fn keep_log(&self, plan: &RunPlan, lines: &[String]) -> Result<Option<PathBuf>, CampaignError> {
        let Some(dir) = &self.logs_dir else {
            return Ok(None);
        };
        let dir = dir.join(&plan.test);
        std::fs::create_dir_all(&dir)
            .map_err(|e| CampaignError::Io(format!("cannot create {}: {e}", dir.display())))?;
        let name: Vec<String> = plan.injections.iter().map(Injection::to_string).collect();
        let path = dir.join(format!("{}.log", name.join("+")));
        let mut text = lines.join("\n");
        text.push('\n');
        std::fs::write(&path, text)
            .map_err(|e| CampaignError::Io(format!("cannot write {}: {e}", path.display())))?;
        Ok(Some(path))
    }
}

/// Whether the budget is spent.
fn spent(deadline: Option<Instant>) -> bool {
    deadline.is_some_and(|d| Instant::now() >= d)
}

/// Each fault of `plan` with the point it fires on, described from the reference trace (or
/// the run's, for a point the reference never reached).
fn fault_points(plan: &RunPlan, reference: &Trace, run: &Trace) -> Vec<FaultPoint> {
    plan.injections
        .iter()
        .map(|injection| {
            let trigger = injection.trigger();
            FaultPoint {
                injection: *injection,
                label: plan::point_label(trigger),
                point: plan::describe_point(reference, trigger)
                    .or_else(|| plan::describe_point(run, trigger))
                    .unwrap_or_else(|| "(not in the trace)".to_string()),
            }
        })
        .collect()
}

/// The oracles' verdicts on a fault run.
fn judge(reference: &Reference, run: &RunResult) -> Vec<OracleFailure> {
    let mut out = Vec::new();
    if !run.failures.is_empty() {
        out.push(OracleFailure {
            oracle: "asserts",
            details: run.failures.clone(),
        });
    }
    let state = oracle::compare_end_state(&reference.snapshot, &run.snapshot, &reference.mask);
    if !state.is_empty() {
        out.push(OracleFailure {
            oracle: "end state",
            details: state,
        });
    }
    let counts = oracle::compare_counts(
        &reference.counts,
        &oracle::collapse(
            &oracle::counts(&run.trace.writes, &run.namespace),
            &reference.unstable,
        ),
    );
    if !counts.is_empty() {
        out.push(OracleFailure {
            oracle: "create/delete counts",
            details: counts,
        });
    }
    if !run.trace.deposed.is_empty() {
        out.push(OracleFailure {
            oracle: "fencing",
            details: run
                .trace
                .deposed
                .iter()
                .map(|w| {
                    format!(
                        "the paused old leader woke up and did {} after its successor took over \
                         (two actors)",
                        plan::describe_write(w)
                    )
                })
                .collect(),
        });
    }
    if !run.quiet {
        out.push(OracleFailure {
            oracle: "quiet",
            details: vec![format!(
                "the operator made {} writes after the last step and never went the settle time \
                 without one (the reference runs did)",
                run.after_tests
            )],
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference() -> Reference {
        Reference {
            trace: Trace::default(),
            snapshot: Snapshot::new(),
            mask: Mask::new(),
            counts: Counts::new(),
            unstable: BTreeSet::new(),
        }
    }

    fn run(after_tests: usize, quiet: bool) -> RunResult {
        RunResult {
            failures: Vec::new(),
            snapshot: Snapshot::new(),
            trace: Trace::default(),
            after_tests,
            quiet,
            fired: 1,
            namespace: "ns".into(),
            lines: Vec::new(),
            restarts: 0,
        }
    }

    #[test]
    fn an_operator_that_keeps_writing_after_the_last_step_is_not_quiet() {
        // Catching up after a restart (writes after the last step, then none) is quiet.
        assert!(judge(&reference(), &run(5, true)).is_empty());
        let failures = judge(&reference(), &run(7, false));
        assert_eq!(failures.len(), 1);
        assert_eq!(failures[0].oracle, "quiet");
        assert_eq!(
            failures[0].details,
            [
                "the operator made 7 writes after the last step and never went the settle time \
                 without one (the reference runs did)"
            ]
        );
    }

    #[test]
    fn a_run_whose_asserts_fail_is_judged_by_that_oracle_first() {
        let mut failed = run(0, true);
        failed.failures = vec!["failed in step 0-request".into()];
        let failures = judge(&reference(), &failed);
        assert_eq!(failures[0].oracle, "asserts");
        assert_eq!(failures[0].details, ["failed in step 0-request"]);
    }
}
