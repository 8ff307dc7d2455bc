//! Runs every scenario with tiny counts against an in-process ephemeral control plane, to prove
//! the benchmark code works end to end. It asserts on completeness, never on timings. The
//! `kudo` scenario needs the KUDO package corpus (`../shared/corpus/kudo/operators`, only in
//! CI): without it, it is left out and the test says so. The `e2e` scenario (a cargo build of a
//! scaffolded operator) is left out: `opkit-bench --scenario e2e` runs it. The `olm` scenario
//! runs with a catalog of 12 bundles and needs Debian's `docker-registry` (installed by
//! `scripts/start-registry.sh --install-only`, as the README's test command does).

use std::path::PathBuf;

use opkit_bench::{Counts, Options, Scenario, ServerMode};

/// The KUDO package corpus, when this checkout has it.
fn kudo_corpus() -> Option<PathBuf> {
    let dir =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus/kudo/operators");
    if dir.is_dir() {
        return Some(dir);
    }
    eprintln!(
        "SKIPPED the kudo scenario: the KUDO corpus is not at {} (it is only in CI)",
        dir.display()
    );
    None
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_scenario_runs_with_tiny_counts() {
    let kudo_corpus = kudo_corpus();
    let scenarios: Vec<Scenario> = Scenario::ALL
        .into_iter()
        .filter(|s| *s != Scenario::Kudo || kudo_corpus.is_some())
        // It builds a scaffolded operator with cargo and runs the `opkit` binary; the scaffold
        // test (crates/opkit-cli/tests/scaffold.rs) runs `opkit test` in such a project.
        .filter(|s| *s != Scenario::E2e)
        .collect();
    let options = Options {
        counts: Counts::tiny(),
        scenarios: scenarios.clone(),
        server: ServerMode::InProcess { durable: false },
        opkit_bin: None,
        kudo_corpus,
    };
    let report = opkit_bench::run(&options).await;
    let rendered = report.render();
    eprintln!("{rendered}");
    assert!(report.errors.is_empty(), "scenarios failed:\n{rendered}");
    for scenario in scenarios {
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
