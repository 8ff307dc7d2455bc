//! `opkit demo` runs the `opkit-demo` program, found next to `opkit` or on the `PATH`.
//!
//! The demo links the two example operators; keeping it a program of its own keeps them out
//! of the product binary. The demo replaces this process (`exec`), so signals and the exit
//! status are the demo's own.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;

use clap::Args;

/// Flags of `opkit demo` (passed on to `opkit-demo`; `opkit demo --help` lists them).
#[derive(Args)]
#[command(disable_help_flag = true)]
pub struct DemoArgs {
    /// `--listen ADDR:PORT`, `--kubeconfig PATH`, `--duration DURATION`,
    /// `--step-interval DURATION`, `--help`.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    args: Vec<OsString>,
}

const PROGRAM: &str = "opkit-demo";

/// Where `opkit-demo` is: beside this executable (a cargo build puts both in one directory),
/// else the first match on the `PATH`.
fn locate() -> Option<PathBuf> {
    let beside = std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.join(PROGRAM)))
        .filter(|p| p.is_file());
    beside.or_else(|| {
        std::env::split_paths(&std::env::var_os("PATH")?)
            .map(|dir| dir.join(PROGRAM))
            .find(|p| p.is_file())
    })
}

/// Replaces this process with `opkit-demo ARGS`; returns only on failure.
pub fn run(args: DemoArgs) -> anyhow::Result<()> {
    let Some(program) = locate() else {
        anyhow::bail!(
            "the demo is a program of its own, `{PROGRAM}`, and it is neither next to `opkit` nor \
             on the PATH (it is not published with `opkit`); in an opkit checkout, build it with \
             `cargo build --release -p {PROGRAM}` (then run `opkit demo` again) or run it directly \
             with `cargo run --release -p {PROGRAM}`"
        );
    };
    let err = std::process::Command::new(&program).args(args.args).exec();
    Err(anyhow::anyhow!("cannot run {}: {err}", program.display()))
}
