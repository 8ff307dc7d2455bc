//! Shared harness for the end-to-end tests that drive `opkit up` with real
//! clients (kubectl, later helm) installed by `scripts/install-tools.sh`.
//!
//! Every test starts its own control plane ([`ControlPlane::start`]) on a
//! free port with its own temporary directory, so tests are independent and
//! may run in parallel. The server is killed when the [`ControlPlane`] is
//! dropped; if the test is panicking, the server's output is printed first.
#![allow(dead_code)]

use std::fmt;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// How long `opkit up` may take to print its ready line.
pub const READY_TIMEOUT: Duration = Duration::from_secs(90);
/// How long one client command (kubectl, helm) may run.
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(90);

const READY_PREFIX: &str = "opkit control plane ready at ";
const KUBECONFIG_MARKER: &str = " (kubeconfig: ";

/// The repository root (two levels above this crate's manifest).
pub fn repo_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.join("../..").canonicalize().unwrap_or_else(|e| {
        panic!(
            "cannot resolve the repo root from {}: {e}",
            manifest.display()
        )
    })
}

/// The path of a tool installed by `scripts/install-tools.sh` into
/// `.tools/bin/`. Panics (fails the test, never skips it) if it is missing.
pub fn tool_path(name: &str) -> PathBuf {
    let path = repo_root().join(".tools/bin").join(name);
    if !path.is_file() {
        panic!(
            "{name} is not installed at {}: run `scripts/install-tools.sh` at the repository \
             root to install the real kubectl and helm used by these tests",
            path.display()
        );
    }
    path
}

/// What a finished command printed and how it exited.
#[derive(Debug, Clone)]
pub struct Output {
    /// The command line, for messages.
    pub command: String,
    /// The exit code (`None` if killed by a signal).
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    pub fn success(&self) -> bool {
        self.code == Some(0)
    }
}

impl fmt::Display for Output {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "command: {}", self.command)?;
        match self.code {
            Some(code) => writeln!(f, "exit code: {code}")?,
            None => writeln!(f, "exit code: none (killed by a signal)")?,
        }
        writeln!(f, "--- stdout ---\n{}", self.stdout.trim_end())?;
        write!(f, "--- stderr ---\n{}", self.stderr.trim_end())
    }
}

fn describe(cmd: &Command) -> String {
    let program = Path::new(cmd.get_program())
        .file_name()
        .unwrap_or(cmd.get_program())
        .to_string_lossy()
        .into_owned();
    let mut parts = vec![program];
    parts.extend(cmd.get_args().map(|a| {
        let a = a.to_string_lossy();
        if a.is_empty() || a.contains(char::is_whitespace) {
            format!("'{a}'")
        } else {
            a.into_owned()
        }
    }));
    parts.join(" ")
}

fn read_all<R: Read + Send + 'static>(mut r: R) -> thread::JoinHandle<String> {
    thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = r.read_to_end(&mut buf);
        String::from_utf8_lossy(&buf).into_owned()
    })
}

/// Runs `cmd` to completion (feeding it `stdin` if given), killing it and
/// failing the test if it runs longer than `timeout`.
pub fn run(mut cmd: Command, stdin: Option<&str>, timeout: Duration) -> Output {
    let command = describe(&cmd);
    cmd.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start `{command}`: {e}"));
    if let Some(input) = stdin {
        let mut w = child.stdin.take().expect("piped stdin");
        let input = input.to_owned();
        thread::spawn(move || {
            let _ = w.write_all(input.as_bytes());
        });
    }
    let out = read_all(child.stdout.take().expect("piped stdout"));
    let err = read_all(child.stderr.take().expect("piped stderr"));
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                let partial = Output {
                    command: command.clone(),
                    code: None,
                    stdout: out.join().unwrap_or_default(),
                    stderr: err.join().unwrap_or_default(),
                };
                panic!("`{command}` did not finish within {timeout:?}; it was killed\n{partial}");
            }
            Ok(None) => thread::sleep(Duration::from_millis(20)),
            Err(e) => panic!("waiting for `{command}` failed: {e}"),
        }
    };
    Output {
        command,
        code: status.code(),
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    }
}

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
        let dir = tempfile::Builder::new()
            .prefix("opkit-e2e-")
            .tempdir()
            .expect("create a temporary directory");
        let kubeconfig_arg = dir.path().join("kubeconfig");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_opkit"));
        cmd.arg("up")
            .arg("--ephemeral")
            .args(["--listen", "127.0.0.1:0"])
            .arg("--kubeconfig")
            .arg(&kubeconfig_arg)
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
        {
            let stdout = child.stdout.take().expect("piped stdout");
            let log = Arc::clone(&log);
            thread::spawn(move || {
                for line in BufReader::new(stdout).lines() {
                    let Ok(line) = line else { break };
                    log.lock().unwrap().push_str(&format!("[stdout] {line}\n"));
                    let _ = tx.send(line);
                }
            });
        }
        {
            let stderr = child.stderr.take().expect("piped stderr");
            let log = Arc::clone(&log);
            thread::spawn(move || {
                for line in BufReader::new(stderr).lines() {
                    let Ok(line) = line else { break };
                    log.lock().unwrap().push_str(&format!("[stderr] {line}\n"));
                }
            });
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
                    panic!(
                        "`{command}` printed no ready line ({READY_PREFIX}...) within \
                         {READY_TIMEOUT:?}; server output:\n{}",
                        log.lock().unwrap()
                    );
                }
                Err(RecvTimeoutError::Disconnected) => {
                    let status = child.wait();
                    // Let the stderr reader catch up.
                    thread::sleep(Duration::from_millis(200));
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

/// Parses `opkit control plane ready at https://ADDR:PORT (kubeconfig: PATH)`.
pub fn parse_ready_line(line: &str) -> Option<(String, PathBuf)> {
    let rest = line.trim_end().strip_prefix(READY_PREFIX)?;
    let (url, path) = rest.split_once(KUBECONFIG_MARKER)?;
    let path = path.strip_suffix(')')?;
    Some((url.to_owned(), PathBuf::from(path)))
}

/// A running command whose stdout is read line by line; killed on drop.
pub struct Streaming {
    command: String,
    child: Child,
    lines: Receiver<String>,
    seen: Vec<String>,
    stdout: Arc<Mutex<Vec<String>>>,
    stderr: Arc<Mutex<String>>,
}

impl Streaming {
    pub fn spawn(mut cmd: Command) -> Self {
        let command = describe(&cmd);
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start `{command}`: {e}"));
        let (tx, lines) = mpsc::channel();
        let stdout = Arc::new(Mutex::new(Vec::new()));
        {
            let stdout = Arc::clone(&stdout);
            let pipe = child.stdout.take().expect("piped stdout");
            thread::spawn(move || {
                for line in BufReader::new(pipe).lines() {
                    let Ok(line) = line else { break };
                    stdout.lock().unwrap().push(line.clone());
                    // The receiver may be gone; every line is kept in `stdout` anyway.
                    let _ = tx.send(line);
                }
            });
        }
        let stderr = Arc::new(Mutex::new(String::new()));
        {
            let stderr = Arc::clone(&stderr);
            let pipe = child.stderr.take().expect("piped stderr");
            thread::spawn(move || {
                for line in BufReader::new(pipe).lines() {
                    let Ok(line) = line else { break };
                    let mut s = stderr.lock().unwrap();
                    s.push_str(&line);
                    s.push('\n');
                }
            });
        }
        Streaming {
            command,
            child,
            lines,
            seen: Vec::new(),
            stdout,
            stderr,
        }
    }

    /// Waits for the next stdout line matching `matches`, failing the test
    /// (with everything seen so far) on timeout or if the command exits.
    pub fn wait_for_line(
        &mut self,
        what: &str,
        timeout: Duration,
        matches: impl Fn(&str) -> bool,
    ) -> String {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if matches(&line) {
                        return line;
                    }
                }
                Err(e) => {
                    let why = match e {
                        RecvTimeoutError::Timeout => format!("nothing matched within {timeout:?}"),
                        RecvTimeoutError::Disconnected => {
                            format!("the command exited ({:?})", self.child.try_wait())
                        }
                    };
                    // Let the stderr reader catch up.
                    thread::sleep(Duration::from_millis(200));
                    panic!(
                        "`{}`: expected a line with {what}, but {why}\n--- stdout lines so far \
                         ---\n{}\n--- stderr ---\n{}",
                        self.command,
                        self.seen.join("\n"),
                        self.stderr.lock().unwrap()
                    );
                }
            }
        }
    }

    /// Every stdout line read so far.
    pub fn seen(&self) -> &[String] {
        &self.seen
    }

    /// Every stdout line the command wrote so far, read by `wait_for_line` or not.
    pub fn stdout_lines(&self) -> Vec<String> {
        self.stdout.lock().unwrap().clone()
    }

    /// Everything the command wrote to stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Sends SIGTERM (a graceful stop).
    pub fn terminate(&mut self) {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(status.success(), "kill -TERM {} failed", self.child.id());
    }

    /// Waits for the command to exit, failing the test after `timeout`.
    pub fn wait(&mut self, timeout: Duration) -> std::process::ExitStatus {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                // Let the readers drain the pipes.
                thread::sleep(Duration::from_millis(200));
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "`{}` did not exit within {timeout:?}\n--- stderr ---\n{}",
                self.command,
                self.stderr()
            );
            thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Streaming {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Splits table output (kubectl's default printer) into rows of cells.
/// Cells are separated by runs of whitespace, so cells holding spaces are
/// split too.
pub fn table(stdout: &str) -> Vec<Vec<String>> {
    stdout
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.split_whitespace().map(str::to_owned).collect())
        .collect()
}

/// The row whose first cell is `name`, if any.
pub fn row<'a>(rows: &'a [Vec<String>], name: &str) -> Option<&'a Vec<String>> {
    rows.iter()
        .find(|r| r.first().map(String::as_str) == Some(name))
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
