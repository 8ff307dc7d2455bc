//! Running chainsaw's commands, scripts and kubectl collectors: an argv with environment
//! variables, in a working directory, bounded by a timeout, output captured (for `$stdout`
//! and `$stderr` in checks) and logged. The environment is the process's plus `NAMESPACE`,
//! `KUBECONFIG` and `PATH` with `<cwd>/bin` first (as for kuttl's commands), then the
//! operation's `env`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use crate::log::Log;

/// What a process runs with.
pub(crate) struct Spawn<'a> {
    pub argv: Vec<String>,
    pub env: HashMap<String, String>,
    pub workdir: PathBuf,
    pub timeout: Duration,
    pub log: &'a Log,
    pub prefix: &'a str,
    pub log_command: bool,
    pub log_output: bool,
}

/// How it ended: the output and, when it failed, Go's error text (`exit status 1`).
pub(crate) struct Finished {
    pub stdout: String,
    pub stderr: String,
    pub error: Option<String>,
}

/// The base environment of a test's processes.
pub(crate) fn base_env(namespace: &str, kubeconfig: &Path, cwd: &Path) -> HashMap<String, String> {
    let mut vars: HashMap<String, String> = std::env::vars().collect();
    let path = format!(
        "{}/bin/:{}",
        cwd.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    vars.insert("NAMESPACE".into(), namespace.to_string());
    vars.insert("KUBECONFIG".into(), kubeconfig.display().to_string());
    vars.insert("PATH".into(), path);
    vars
}

/// Runs the process to its end (or its timeout).
pub(crate) async fn run(spawn: Spawn<'_>) -> Finished {
    let failed = |e: String| Finished {
        stdout: String::new(),
        stderr: String::new(),
        error: Some(e),
    };
    let Some(program) = spawn.argv.first() else {
        return failed("no command to run".into());
    };
    if spawn.log_command {
        spawn.log.log(
            spawn.prefix,
            &format!("running command: [{}]", spawn.argv.join(" ")),
        );
    }
    let child = tokio::process::Command::new(program)
        .args(&spawn.argv[1..])
        .current_dir(&spawn.workdir)
        .env_clear()
        .envs(&spawn.env)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn();
    let child = match child {
        Ok(c) => c,
        Err(e) => return failed(format!("exec: {program:?}: {e}")),
    };
    let output = match tokio::time::timeout(spawn.timeout, child.wait_with_output()).await {
        Ok(Ok(o)) => o,
        Ok(Err(e)) => return failed(e.to_string()),
        Err(_) => {
            return failed(format!(
                "command {program:?} exceeded its {:?} timeout: context deadline exceeded",
                spawn.timeout
            ));
        }
    };
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    if spawn.log_output {
        for text in [&stdout, &stderr] {
            if !text.trim().is_empty() {
                spawn.log.log(spawn.prefix, text);
            }
        }
    }
    let error = (!output.status.success()).then(|| match output.status.code() {
        Some(code) => format!("exit status {code}"),
        None => "signal: killed".to_string(),
    });
    Finished {
        stdout,
        stderr,
        error,
    }
}
