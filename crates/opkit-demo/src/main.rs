//! `opkit-demo`: two example operators at work on an embedded control plane (see [`demo`]).
//!
//! A program of its own, not a module of the `opkit` command, so the product binary does not
//! link the example operators; `opkit demo` runs this program.

mod demo;

use std::process::ExitCode;

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

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("OPKIT_LOG")
                .unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    match demo::run(cli.args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
