//! Building an operator project's binary with cargo, for `generate manifests` and `run`.
//!
//! cargo prints its own progress and diagnostics on stderr; its JSON messages on stdout name
//! the binary it produced, wherever the target directory is.
//!
//! A project that is a member of an enclosing workspace (the repo's own examples) is built
//! from the workspace's root with `--workspace`: cargo unifies dependency features over the
//! selected packages, so building the package alone would recompile its dependencies with a
//! different feature set instead of reusing what `cargo build --workspace` already compiled.

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, bail};

use crate::progress;
use crate::project::Project;

/// Builds the project's binary (debug profile) and returns its path.
pub fn binary(root: &Path, project: &Project) -> anyhow::Result<PathBuf> {
    let name = &project.project_name;
    progress::step(format!("building {name} (cargo build)"));
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(&cargo);
    command.args([
        "build",
        "--bin",
        name,
        "--message-format=json-render-diagnostics",
    ]);
    match enclosing_workspace(&cargo, root) {
        Some(workspace) => command.arg("--workspace").current_dir(workspace),
        None => command.current_dir(root),
    };
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| {
            anyhow::anyhow!(
                "cannot run {}: {e}. Install Rust (https://rustup.rs) so cargo is on PATH",
                cargo.to_string_lossy()
            )
        })?;
    let stdout = child.stdout.take().context("cargo's stdout")?;
    let mut executable = None;
    for line in std::io::BufReader::new(stdout).lines() {
        let line = line.context("reading cargo's output")?;
        let Ok(message) = serde_json::from_str::<serde_json::Value>(&line) else {
            continue;
        };
        if message["reason"] == "compiler-artifact"
            && message["target"]["name"] == name.as_str()
            && let Some(exe) = message["executable"].as_str()
        {
            executable = Some(PathBuf::from(exe));
        }
    }
    let status = child.wait().context("waiting for cargo")?;
    if status.code().is_none() {
        bail!("building {name} was interrupted");
    }
    if !status.success() {
        bail!("building {name} failed (cargo's messages are above); fix the errors and run again");
    }
    executable.with_context(|| format!("cargo built no binary named {name}"))
}

/// The root of the workspace `root`'s package belongs to, when that is not `root` itself.
/// `None` also when cargo cannot say: the build from `root` then reports the problem.
fn enclosing_workspace(cargo: &std::ffi::OsStr, root: &Path) -> Option<PathBuf> {
    let out = Command::new(cargo)
        .args(["locate-project", "--workspace", "--message-format", "plain"])
        .current_dir(root)
        .stderr(Stdio::null())
        .output()
        .ok()
        .filter(|out| out.status.success())?;
    let manifest = PathBuf::from(String::from_utf8(out.stdout).ok()?.trim());
    let workspace = manifest.parent()?;
    let own = root.canonicalize().ok()?;
    (workspace.canonicalize().ok()? != own).then(|| workspace.to_path_buf())
}

/// Runs the project's binary with `args` and returns its stdout.
pub fn output(binary: &Path, args: &[&str]) -> anyhow::Result<String> {
    let out = Command::new(binary)
        .args(args)
        .stderr(Stdio::inherit())
        .output()
        .with_context(|| format!("cannot run {}", binary.display()))?;
    if !out.status.success() {
        bail!(
            "`{} {}` failed ({}); its messages are above",
            binary.display(),
            args.join(" "),
            out.status
        );
    }
    String::from_utf8(out.stdout).with_context(|| {
        format!(
            "`{} {}` printed invalid UTF-8",
            binary.display(),
            args.join(" ")
        )
    })
}
