//! Running programs from tests: the tools `scripts/install-tools.sh` installs, commands with a
//! timeout, long-running commands read line by line, kubectl's table output, and
//! [`eventually`], the one polling helper of these blocking tests (the async tests use
//! `opkit_testenv::eventually`). Shared by the `opkit` command's tests and the demo's (which
//! include this file by path).
#![allow(dead_code)]

use std::fmt;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// How long one client command (kubectl, helm) may run.
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(90);

/// How long [`eventually`] polls before failing the test. Generous: it only bounds a failing
/// test, a passing one returns as soon as its check does, however loaded the machine.
pub const EVENTUALLY_TIMEOUT: Duration = Duration::from_secs(60);

/// How often [`eventually`] polls.
const POLL: Duration = Duration::from_millis(20);

/// How long [`drain`] waits for a pipe's reader to reach the end of the pipe.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(10);

/// What a check returns to [`eventually`]: `true`, `Some(value)` or `Ok(value)` when done;
/// `false`, `None` or `Err(what it saw)` to keep polling (what it saw last is printed if the
/// wait fails).
pub trait Check {
    /// What [`eventually`] returns once the check is done.
    type Output;
    /// `Ok` when done, else what the check saw (if it says).
    fn into_result(self) -> Result<Self::Output, Option<String>>;
}

impl Check for bool {
    type Output = ();
    fn into_result(self) -> Result<(), Option<String>> {
        if self { Ok(()) } else { Err(None) }
    }
}

impl<T> Check for Option<T> {
    type Output = T;
    fn into_result(self) -> Result<T, Option<String>> {
        self.ok_or(None)
    }
}

impl<T> Check for Result<T, String> {
    type Output = T;
    fn into_result(self) -> Result<T, Option<String>> {
        self.map_err(Some)
    }
}

/// Polls `check` until it is done and returns its value; fails the test naming `what` (and
/// what the check saw last) after [`EVENTUALLY_TIMEOUT`].
pub fn eventually<C: Check>(what: &str, check: impl FnMut() -> C) -> C::Output {
    eventually_within(what, EVENTUALLY_TIMEOUT, check)
}

/// [`eventually`] with another deadline.
pub fn eventually_within<C: Check>(
    what: &str,
    timeout: Duration,
    check: impl FnMut() -> C,
) -> C::Output {
    match poll_until(timeout, check) {
        Ok(value) => value,
        Err(Some(last)) => {
            panic!("timed out after {timeout:?} waiting for {what}; last seen:\n{last}")
        }
        Err(None) => panic!("timed out after {timeout:?} waiting for {what}"),
    }
}

/// Polls `check` until it is done (`Ok(value)`) or `timeout` passed (`Err(what it saw
/// last)`), for callers that clean up before they fail.
pub fn poll_until<C: Check>(
    timeout: Duration,
    mut check: impl FnMut() -> C,
) -> Result<C::Output, Option<String>> {
    let deadline = Instant::now() + timeout;
    loop {
        let last = match check().into_result() {
            Ok(value) => return Ok(value),
            Err(last) => last,
        };
        if Instant::now() >= deadline {
            return Err(last);
        }
        thread::sleep(POLL);
    }
}

/// Waits until the threads reading a process's pipes have read them to the end, which they do
/// once the process is gone: then its log holds everything it wrote. Bounded (a grandchild
/// could hold a pipe open), and only diagnostics depend on it.
pub fn drain(readers: Vec<thread::JoinHandle<()>>) {
    let (done, joined) = mpsc::channel();
    thread::spawn(move || {
        for reader in readers {
            let _ = reader.join();
        }
        let _ = done.send(());
    });
    let _ = joined.recv_timeout(DRAIN_TIMEOUT);
}

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

pub(crate) fn describe(cmd: &Command) -> String {
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
    let finished = poll_until(timeout, || {
        child
            .try_wait()
            .unwrap_or_else(|e| panic!("waiting for `{command}` failed: {e}"))
    });
    let Ok(status) = finished else {
        let _ = child.kill();
        let _ = child.wait();
        let partial = Output {
            command: command.clone(),
            code: None,
            stdout: out.join().unwrap_or_default(),
            stderr: err.join().unwrap_or_default(),
        };
        panic!("`{command}` did not finish within {timeout:?}; it was killed\n{partial}");
    };
    Output {
        command,
        code: status.code(),
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    }
}

/// A running command whose stdout is read line by line; killed on drop.
pub struct Streaming {
    command: String,
    child: Child,
    lines: Receiver<String>,
    seen: Vec<String>,
    stdout: Arc<Mutex<Vec<String>>>,
    stderr: Arc<Mutex<String>>,
    readers: Vec<thread::JoinHandle<()>>,
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
        let mut readers = Vec::new();
        {
            let stdout = Arc::clone(&stdout);
            let pipe = child.stdout.take().expect("piped stdout");
            readers.push(thread::spawn(move || {
                for line in BufReader::new(pipe).lines() {
                    let Ok(line) = line else { break };
                    stdout.lock().unwrap().push(line.clone());
                    // The receiver may be gone; every line is kept in `stdout` anyway.
                    let _ = tx.send(line);
                }
            }));
        }
        let stderr = Arc::new(Mutex::new(String::new()));
        {
            let stderr = Arc::clone(&stderr);
            let pipe = child.stderr.take().expect("piped stderr");
            readers.push(thread::spawn(move || {
                for line in BufReader::new(pipe).lines() {
                    let Ok(line) = line else { break };
                    let mut s = stderr.lock().unwrap();
                    s.push_str(&line);
                    s.push('\n');
                }
            }));
        }
        Streaming {
            command,
            child,
            lines,
            seen: Vec::new(),
            stdout,
            stderr,
            readers,
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
                    // The test fails: stop the command and read its stderr to the end.
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    drain(std::mem::take(&mut self.readers));
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

    /// Waits for the command to exit (and its output to be read to the end), failing the
    /// test after `timeout`.
    pub fn wait(&mut self, timeout: Duration) -> std::process::ExitStatus {
        let exited = poll_until(timeout, || self.child.try_wait().expect("wait"));
        let Ok(status) = exited else {
            panic!(
                "`{}` did not exit within {timeout:?}\n--- stderr ---\n{}",
                self.command,
                self.stderr()
            );
        };
        drain(std::mem::take(&mut self.readers));
        status
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
