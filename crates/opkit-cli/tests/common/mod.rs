//! Shared harness for the end-to-end tests that drive `opkit up` with real
//! clients (kubectl, later helm) installed by `scripts/install-tools.sh`.
//!
//! Every test starts its own control plane ([`ControlPlane::start`]) on a
//! free port with its own temporary directory, so tests are independent and
//! may run in parallel. The server is killed when the [`ControlPlane`] is
//! dropped; if the test is panicking, the server's output is printed first.
#![allow(dead_code)]

mod process;
mod registry;

pub use process::*;
#[allow(unused_imports)] // only the OLM tests push images
pub use registry::*;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// How long `opkit up` may take to print its ready line.
pub const READY_TIMEOUT: Duration = Duration::from_secs(90);

const READY_PREFIX: &str = "opkit control plane ready at ";
const KUBECONFIG_MARKER: &str = " (kubeconfig: ";
/// A running `opkit up --ephemeral` control plane, killed on drop.
pub struct ControlPlane {
    child: Child,
    dir: tempfile::TempDir,
    /// `https://ADDR:PORT` from the ready line.
    pub url: String,
    /// The kubeconfig path from the ready line.
    pub kubeconfig: PathBuf,
    /// Everything the server printed (stdout and stderr), for diagnostics.
    log: Arc<Mutex<String>>,
}

impl ControlPlane {
    /// Starts `opkit up --ephemeral --listen 127.0.0.1:0 --kubeconfig
    /// <tempdir>/kubeconfig` and waits for its ready line.
    pub fn start() -> Self {
        Self::start_with(&[])
    }

    /// [`ControlPlane::start`] with more flags of `opkit up` (e.g. `--olm`); with
    /// `--data-dir DIR` among them, not `--ephemeral`: the plane keeps its data in DIR, so
    /// another one started on DIR after this one is dropped (killed) finds it.
    pub fn start_with(flags: &[&str]) -> Self {
        let dir = tempfile::Builder::new()
            .prefix("opkit-e2e-")
            .tempdir()
            .expect("create a temporary directory");
        let kubeconfig_arg = dir.path().join("kubeconfig");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_opkit"));
        cmd.arg("up");
        if !flags.contains(&"--data-dir") {
            cmd.arg("--ephemeral");
        }
        cmd.args(["--listen", "127.0.0.1:0"])
            .arg("--kubeconfig")
            .arg(&kubeconfig_arg)
            .args(flags)
            .current_dir(dir.path())
            .env("HOME", dir.path())
            .env_remove("KUBECONFIG")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let command = describe(&cmd);
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start `{command}`: {e}"));

        let log = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = mpsc::channel::<String>();
        let mut readers = Vec::new();
        {
            let stdout = child.stdout.take().expect("piped stdout");
            let log = Arc::clone(&log);
            readers.push(thread::spawn(move || {
                for line in BufReader::new(stdout).lines() {
                    let Ok(line) = line else { break };
                    log.lock().unwrap().push_str(&format!("[stdout] {line}\n"));
                    let _ = tx.send(line);
                }
            }));
        }
        {
            let stderr = child.stderr.take().expect("piped stderr");
            let log = Arc::clone(&log);
            readers.push(thread::spawn(move || {
                for line in BufReader::new(stderr).lines() {
                    let Ok(line) = line else { break };
                    log.lock().unwrap().push_str(&format!("[stderr] {line}\n"));
                }
            }));
        }

        let deadline = Instant::now() + READY_TIMEOUT;
        let (url, kubeconfig) = loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(line) => {
                    if let Some(parsed) = parse_ready_line(&line) {
                        break parsed;
                    }
                }
                Err(RecvTimeoutError::Timeout) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    drain(readers);
                    panic!(
                        "`{command}` printed no ready line ({READY_PREFIX}...) within \
                         {READY_TIMEOUT:?}; server output:\n{}",
                        log.lock().unwrap()
                    );
                }
                Err(RecvTimeoutError::Disconnected) => {
                    let status = child.wait();
                    drain(readers);
                    panic!(
                        "`{command}` exited ({status:?}) before printing its ready line; \
                         server output:\n{}",
                        log.lock().unwrap()
                    );
                }
            }
        };
        assert!(
            url.starts_with("https://127.0.0.1:") && !url.ends_with(":0"),
            "the ready line should give the real https address bound on 127.0.0.1, got {url:?}"
        );
        assert!(
            kubeconfig.is_file(),
            "the ready line names kubeconfig {} but there is no such file",
            kubeconfig.display()
        );
        ControlPlane {
            child,
            dir,
            url,
            kubeconfig,
            log,
        }
    }

    /// This control plane's private temporary directory (also the clients' HOME).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Everything the server printed so far.
    pub fn server_log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// Writes `contents` to `name` in the temporary directory; returns its path.
    pub fn write_file(&self, name: &str, contents: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::write(&path, contents)
            .unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
        path
    }

    /// A command for an installed tool with a hermetic environment: HOME is
    /// this control plane's temporary directory (so kubectl's discovery
    /// cache and helm's state are private) and KUBECONFIG is unset.
    pub fn tool_command(&self, tool: &str) -> Command {
        let mut cmd = Command::new(tool_path(tool));
        cmd.current_dir(self.dir.path())
            .env("HOME", self.dir.path())
            .env_remove("KUBECONFIG")
            .env_remove("KUBECACHEDIR")
            .env_remove("XDG_CACHE_HOME")
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("XDG_DATA_HOME");
        cmd
    }

    /// `kubectl --kubeconfig <kubeconfig> ARGS...` as a [`Command`].
    pub fn kubectl_command_with(&self, kubeconfig: &Path, args: &[&str]) -> Command {
        let mut cmd = self.tool_command("kubectl");
        cmd.arg("--kubeconfig").arg(kubeconfig).args(args);
        cmd
    }

    /// Runs kubectl with the given kubeconfig; never fails by itself.
    pub fn kubectl_with(&self, kubeconfig: &Path, args: &[&str]) -> Output {
        run(
            self.kubectl_command_with(kubeconfig, args),
            None,
            COMMAND_TIMEOUT,
        )
    }

    /// Runs kubectl against this control plane; never fails by itself.
    pub fn kubectl(&self, args: &[&str]) -> Output {
        self.kubectl_with(&self.kubeconfig, args)
    }

    /// Runs kubectl with `stdin` on its standard input (for `-f -`).
    pub fn kubectl_stdin(&self, args: &[&str], stdin: &str) -> Output {
        run(
            self.kubectl_command_with(&self.kubeconfig, args),
            Some(stdin),
            COMMAND_TIMEOUT,
        )
    }

    /// Runs kubectl, fails the test unless it exits 0, returns its stdout.
    pub fn kubectl_ok(&self, args: &[&str]) -> String {
        let out = self.kubectl(args);
        if !out.success() {
            panic!("kubectl should have succeeded\n{out}\n{}", self.log_tail());
        }
        out.stdout
    }

    /// Runs kubectl, fails the test if it exits 0, returns the output.
    pub fn kubectl_fails(&self, args: &[&str]) -> Output {
        let out = self.kubectl(args);
        if out.success() || out.code.is_none() {
            panic!(
                "kubectl should have exited non-zero\n{out}\n{}",
                self.log_tail()
            );
        }
        out
    }

    /// Starts a long-running kubectl (e.g. `get -w`) whose stdout is read
    /// line by line; it is killed when the returned value is dropped.
    pub fn kubectl_spawn(&self, args: &[&str]) -> Streaming {
        Streaming::spawn(self.kubectl_command_with(&self.kubeconfig, args))
    }

    fn log_tail(&self) -> String {
        let log = self.server_log();
        let lines: Vec<&str> = log.lines().collect();
        let start = lines.len().saturating_sub(40);
        format!(
            "--- server output (last {} lines) ---\n{}",
            lines.len() - start,
            lines[start..].join("\n")
        )
    }
}

impl Drop for ControlPlane {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if thread::panicking() {
            eprintln!(
                "--- opkit up output ({}) ---\n{}",
                self.url,
                self.log.lock().unwrap()
            );
        }
    }
}

/// A loopback port free now (for a server a test starts on it).
pub fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free loopback port");
    listener.local_addr().expect("a bound address").port()
}

/// The kubeconfig at `admin` with its token replaced by `token` (a service account's, from
/// `kubectl create token`): the identity of a deployed manager.
pub fn kubeconfig_with_token(admin: &Path, token: &str) -> String {
    let text = std::fs::read_to_string(admin)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", admin.display()));
    let lines: Vec<String> = text
        .lines()
        .map(|l| match l.find("token:") {
            Some(i) => format!("{}token: {token}", &l[..i]),
            None => l.to_string(),
        })
        .collect();
    assert!(
        lines.iter().any(|l| l.contains(token)),
        "no token in\n{text}"
    );
    lines.join("\n") + "\n"
}

/// Every file under `dir` with its contents, by path relative to `dir` (none if `dir` does not
/// exist): what a command wrote, or that a refused one wrote nothing.
pub fn files_under(dir: &Path) -> std::collections::BTreeMap<PathBuf, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else {
                let rel = path.strip_prefix(dir).unwrap().to_path_buf();
                out.insert(rel, std::fs::read(&path).unwrap());
            }
        }
    }
    out
}

/// Parses `opkit control plane ready at https://ADDR:PORT (kubeconfig: PATH)`.
pub fn parse_ready_line(line: &str) -> Option<(String, PathBuf)> {
    let rest = line.trim_end().strip_prefix(READY_PREFIX)?;
    let (url, path) = rest.split_once(KUBECONFIG_MARKER)?;
    let path = path.strip_suffix(')')?;
    Some((url.to_owned(), PathBuf::from(path)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_ready_line() {
        let (url, path) = parse_ready_line(
            "opkit control plane ready at https://127.0.0.1:43121 (kubeconfig: /tmp/x y/kubeconfig)",
        )
        .unwrap();
        assert_eq!(url, "https://127.0.0.1:43121");
        assert_eq!(path, PathBuf::from("/tmp/x y/kubeconfig"));
        assert!(parse_ready_line("opkit starting").is_none());
    }
}
