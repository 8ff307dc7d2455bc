//! `opkit-demo`: two example operators at work on an embedded control plane (see [`demo`]).
//!
//! A program of its own, not a module of the `opkit` command, so the product binary does not
//! link the example operators; `opkit demo` runs this program.

mod demo;

use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;

#[derive(Parser)]
#[command(
    name = "opkit demo",
    bin_name = "opkit demo",
    version,
    about = "Watch two operators at work on an embedded control plane"
)]
struct Cli {
    #[command(flatten)]
    args: demo::DemoArgs,
}

/// Parses `250ms`, `2s`, `1m` (a bare number is seconds).
pub(crate) fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (number, unit) = match s.find(|c: char| !c.is_ascii_digit() && c != '.') {
        Some(i) => s.split_at(i),
        None => (s, "s"),
    };
    let value: f64 = number
        .parse()
        .map_err(|_| format!("{s:?} is not a duration; write e.g. 250ms, 2s or 1m"))?;
    let seconds = match unit {
        "ms" => value / 1000.0,
        "s" => value,
        "m" => value * 60.0,
        _ => return Err(format!("{s:?}: unknown unit {unit:?}; use ms, s or m")),
    };
    Duration::try_from_secs_f64(seconds).map_err(|e| format!("{s:?}: {e}"))
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("OPKIT_LOG")
                .unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
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
    match runtime.block_on(demo::run(cli.args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
