//! `opkit test --chaos KINDS [--seed N] [--budget DURATION]` and `--chaos-replay PLAN`: a
//! fault-injection campaign over a suite's kuttl and chainsaw tests on embedded planes
//! (`opkit_e2e::chaos`), and its report: per finding each fault and its injection point (the
//! write), each oracle that failed with its differences, the command line that replays exactly
//! that run, and for a run of several faults the minimal plan it was shrunk to.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use opkit_e2e::chaos::{Campaign, CampaignOutcome, FaultKind, RunPlan};
use opkit_e2e::{Log, TestSuite};
use regex::Regex;

/// What `opkit test` hands a campaign.
pub(crate) struct ChaosRun {
    pub(crate) suite: TestSuite,
    pub(crate) cwd: PathBuf,
    pub(crate) kinds: Vec<FaultKind>,
    pub(crate) replay: Option<RunPlan>,
    pub(crate) seed: u64,
    pub(crate) budget: Option<Duration>,
    pub(crate) faults_per_run: usize,
    pub(crate) settle: Duration,
    pub(crate) test_filter: Option<Regex>,
    pub(crate) run_labels: BTreeMap<String, String>,
}

/// Flags that choose a campaign, not the suite: a replay command drops them.
const CAMPAIGN_FLAGS: [&str; 5] = [
    "--chaos",
    "--seed",
    "--budget",
    "--faults-per-run",
    "--chaos-replay",
];

/// The command line that replays a run: this one without the campaign's flags (the plan is
/// appended by the campaign).
pub(crate) fn replay_prefix(args: impl IntoIterator<Item = String>) -> String {
    let mut out = vec!["opkit".to_string()];
    let mut args = args.into_iter().skip(1);
    while let Some(arg) = args.next() {
        if CAMPAIGN_FLAGS.contains(&arg.as_str()) {
            args.next();
            continue;
        }
        if CAMPAIGN_FLAGS
            .iter()
            .any(|f| arg.starts_with(&format!("{f}=")))
        {
            continue;
        }
        out.push(quote(&arg));
    }
    out.join(" ")
}

/// Quotes an argument for a POSIX shell when it needs it.
pub(crate) fn quote(arg: &str) -> String {
    let plain = !arg.is_empty()
        && arg
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,@+".contains(c));
    if plain {
        arg.to_string()
    } else {
        format!("'{}'", arg.replace('\'', r"'\''"))
    }
}

/// Runs the campaign (or the replay) and prints its report; exit 1 when a fault broke the
/// operator.
pub(crate) async fn run(chaos: ChaosRun) -> anyhow::Result<ExitCode> {
    let controllers = if chaos.suite.start_control_plane {
        "garbage-collector,namespace"
    } else {
        "*"
    };
    let campaign = Campaign {
        suite: chaos.suite,
        cwd: chaos.cwd,
        controllers: controllers.to_string(),
        kinds: chaos.kinds,
        seed: chaos.seed,
        budget: chaos.budget,
        faults_per_run: chaos.faults_per_run,
        test_filter: chaos.test_filter,
        run_labels: chaos.run_labels,
        settle: chaos.settle,
        replay_prefix: replay_prefix(std::env::args()),
        log: Log::stdout(),
    };
    let outcome = match &chaos.replay {
        Some(plan) => {
            println!("chaos: replaying {plan} (after two fault-free reference runs)");
            campaign.replay(plan).await?
        }
        None => campaign.run().await?,
    };
    print!("{}", render(&outcome, chaos.seed));
    Ok(if outcome.findings.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// The campaign's report.
fn render(outcome: &CampaignOutcome, seed: u64) -> String {
    let mut out = String::new();
    for (i, f) in outcome.findings.iter().enumerate() {
        let faults: Vec<String> = f.points.iter().map(|p| p.injection.to_string()).collect();
        out.push_str(&format!(
            "FINDING {}: test {} under {}\n",
            i + 1,
            f.plan.test,
            faults.join("+")
        ));
        for p in &f.points {
            out.push_str(&format!(
                "  fault: {}\n  injection point: {}: {}\n",
                p.injection.describe(),
                p.label,
                p.point
            ));
        }
        for failure in &f.failures {
            out.push_str(&format!("  oracle {:?} failed:\n", failure.oracle));
            for line in &failure.details {
                out.push_str(&format!("    {line}\n"));
            }
        }
        if let Some(log) = &f.log_file {
            out.push_str(&format!("  the run's output: {}\n", log.display()));
        }
        out.push_str(&format!("  replay: {}\n", f.replay));
        if let Some(shrunk) = &f.shrunk {
            let how = if shrunk.cut_short {
                "the budget ran out while shrinking: it still fails, but may not be minimal"
            } else {
                "the minimal set of these faults that still fails"
            };
            out.push_str(&format!(
                "  shrunk in {} runs to {} ({how})\n  replay the minimal plan: {}\n",
                shrunk.runs, shrunk.plan, shrunk.replay
            ));
        }
    }
    let mut summary = format!(
        "chaos: {} fault runs in {:.1}s (seed {seed}), {} findings",
        outcome.runs,
        outcome.duration.as_secs_f64(),
        outcome.findings.len()
    );
    if outcome.not_fired > 0 {
        summary.push_str(&format!(
            "; {} faults did not fire (the run took another path)",
            outcome.not_fired
        ));
    }
    if outcome.not_run > 0 {
        summary.push_str(&format!(
            "; {} planned runs not done: the budget was spent",
            outcome.not_run
        ));
    }
    out.push_str(&summary);
    out.push('\n');
    out.push_str(if outcome.findings.is_empty() {
        "PASS\n"
    } else {
        "FAIL\n"
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_replay_command_keeps_the_suite_flags_and_drops_the_campaigns() {
        let args = [
            "/bin/opkit",
            "test",
            "suite dir",
            "--chaos",
            "crash",
            "--seed=4",
            "--timeout",
            "5",
            "--budget",
            "1m",
        ]
        .map(String::from);
        assert_eq!(replay_prefix(args), "opkit test 'suite dir' --timeout 5");
    }
}
