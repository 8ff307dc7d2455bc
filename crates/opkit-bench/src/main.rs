//! `opkit-bench`: measures opkit's embedded control plane and prints a table of figures
//! against their targets. See docs/BENCHMARKS.md.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use opkit_bench::{Counts, Options, Scenario, ServerMode};

#[derive(Parser)]
#[command(
    name = "opkit-bench",
    about = "Benchmark opkit's embedded control plane over HTTPS with kube-rs clients"
)]
struct Cli {
    /// Small counts for a fast smoke run (< 30 s).
    #[arg(long)]
    quick: bool,
    /// Run only these scenarios (repeatable or comma-separated): startup, creates, get-list, watch, memory, writes, gc, rollout, admission, conversion, charts, chart-operator, ansible-operator, kudo, olm, e2e, metering.
    #[arg(long, value_name = "NAME", value_delimiter = ',')]
    scenario: Vec<String>,
    /// The `opkit` binary to run as the server (default: `opkit` next to this binary).
    #[arg(long, value_name = "PATH")]
    opkit: Option<PathBuf>,
    /// Run the server in this process (on its own runtime) instead of as `opkit up`.
    #[arg(long)]
    in_process: bool,
    /// The KUDO package corpus for the `kudo` scenario: the folder holding
    /// `zookeeper/operator` and `first-operator/operator` (default: `$OPKIT_BENCH_KUDO_CORPUS`).
    #[arg(long, value_name = "DIR")]
    kudo_corpus: Option<PathBuf>,
    /// Exit with status 1 when a target is missed (default: only when a scenario fails).
    #[arg(long)]
    strict: bool,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let mut scenarios = Vec::new();
    for name in &cli.scenario {
        match Scenario::from_name(name.trim()) {
            Some(s) if !scenarios.contains(&s) => scenarios.push(s),
            Some(_) => {}
            None => {
                let names: Vec<_> = Scenario::ALL.iter().map(|s| s.name()).collect();
                eprintln!(
                    "error: unknown scenario {name:?} (known: {})",
                    names.join(", ")
                );
                return ExitCode::from(2);
            }
        }
    }
    if scenarios.is_empty() {
        scenarios = Scenario::ALL.to_vec();
    }

    let mut notes = Vec::new();
    let opkit_bin = cli
        .opkit
        .clone()
        .or_else(sibling_opkit)
        .filter(|p| p.is_file());
    if let Some(explicit) = &cli.opkit
        && opkit_bin.is_none()
    {
        eprintln!("error: {} is not a file", explicit.display());
        return ExitCode::from(2);
    }
    let server = match (&opkit_bin, cli.in_process) {
        (Some(bin), false) => ServerMode::Process { bin: bin.clone() },
        (None, false) => {
            let note = "no `opkit` binary found next to opkit-bench (build it with `cargo build --release -p opkit-cli` or pass --opkit); \
                        falling back to an in-process server: client and server share this process's CPU and its RSS";
            eprintln!("warning: {note}");
            notes.push(note.to_string());
            ServerMode::InProcess { durable: true }
        }
        (_, true) => ServerMode::InProcess { durable: true },
    };
    let options = Options {
        counts: if cli.quick {
            Counts::quick()
        } else {
            Counts::full()
        },
        scenarios,
        server,
        opkit_bin,
        kudo_corpus: cli.kudo_corpus.clone(),
    };

    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut report = runtime.block_on(opkit_bench::run(&options));
    report.notes.extend(notes);
    println!("{}", report.render());
    if !report.errors.is_empty() || (cli.strict && !report.all_pass()) {
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

/// `opkit` in the directory of this executable (target/release/opkit for `cargo run --release`).
fn sibling_opkit() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    Some(exe.parent()?.join("opkit"))
}
