//! Runs every scenario with tiny counts against an in-process ephemeral control plane, to prove
//! the benchmark code works end to end. It asserts on completeness, never on timings.

use opkit_bench::{Counts, Options, Scenario, ServerMode};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_scenario_runs_with_tiny_counts() {
    let options = Options {
        counts: Counts::tiny(),
        scenarios: Scenario::ALL.to_vec(),
        server: ServerMode::InProcess { durable: false },
        opkit_bin: None,
    };
    let report = opkit_bench::run(&options).await;
    let rendered = report.render();
    eprintln!("{rendered}");
    assert!(report.errors.is_empty(), "scenarios failed:\n{rendered}");
    for scenario in Scenario::ALL {
        assert!(
            report.rows.iter().any(|r| r.scenario == scenario.name()),
            "no figures for {}:\n{rendered}",
            scenario.name()
        );
    }
    // Every figure with a target was evaluated (pass or fail, whatever the machine).
    assert!(
        report.rows.iter().filter(|r| r.pass.is_some()).count() >= 5,
        "{rendered}"
    );
}
