//! `opkit demo` as a user runs it: the real binary with its output piped, checked through the
//! real kubectl and through the frames it prints.

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// The first line of every frame.
const FRAME_START: &str = "opkit demo · ";
const EXPORT: &str = "Try it: export KUBECONFIG=";

/// A running `opkit demo` with piped output and `TMPDIR` in a private directory.
struct Demo {
    child: Child,
    tmp: tempfile::TempDir,
    lines: Receiver<String>,
    stdout: Arc<Mutex<Vec<String>>>,
    stderr: Arc<Mutex<String>>,
}

impl Demo {
    fn start(args: &[&str]) -> Demo {
        let tmp = tempfile::Builder::new()
            .prefix("opkit-demo-test-")
            .tempdir()
            .expect("create a temporary directory");
        let mut child = Command::new(env!("CARGO_BIN_EXE_opkit"))
            .arg("demo")
            .args(args)
            .env("TMPDIR", tmp.path())
            .env_remove("KUBECONFIG")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("opkit demo starts");
        let (tx, lines) = mpsc::channel();
        let stdout = Arc::new(Mutex::new(Vec::new()));
        {
            let pipe = child.stdout.take().expect("piped stdout");
            let stdout = Arc::clone(&stdout);
            thread::spawn(move || {
                for line in BufReader::new(pipe).lines() {
                    let Ok(line) = line else { break };
                    stdout.lock().unwrap().push(line.clone());
                    let _ = tx.send(line);
                }
            });
        }
        let stderr = Arc::new(Mutex::new(String::new()));
        {
            let pipe = child.stderr.take().expect("piped stderr");
            let stderr = Arc::clone(&stderr);
            thread::spawn(move || {
                for line in BufReader::new(pipe).lines() {
                    let Ok(line) = line else { break };
                    let mut s = stderr.lock().unwrap();
                    s.push_str(&line);
                    s.push('\n');
                }
            });
        }
        Demo {
            child,
            tmp,
            lines,
            stdout,
            stderr,
        }
    }

    fn output(&self) -> String {
        format!(
            "--- stdout ---\n{}\n--- stderr ---\n{}",
            self.stdout.lock().unwrap().join("\n"),
            self.stderr.lock().unwrap()
        )
    }

    /// Waits for a stdout line matching `matches`, failing with the output so far.
    fn wait_for_line(
        &self,
        what: &str,
        timeout: Duration,
        matches: impl Fn(&str) -> bool,
    ) -> String {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if matches(&line) => return line,
                Ok(_) => {}
                Err(RecvTimeoutError::Timeout) => {
                    panic!("no line with {what} within {timeout:?}\n{}", self.output())
                }
                Err(RecvTimeoutError::Disconnected) => {
                    thread::sleep(Duration::from_millis(200));
                    panic!(
                        "opkit demo exited before printing {what}\n{}",
                        self.output()
                    )
                }
            }
        }
    }

    /// Waits until the process exits; fails after `timeout`.
    fn wait(&mut self, timeout: Duration) -> std::process::ExitStatus {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait for opkit demo") {
                // Let the readers drain the pipes.
                thread::sleep(Duration::from_millis(200));
                return status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!(
                    "opkit demo did not exit within {timeout:?}\n{}",
                    self.output()
                );
            }
            thread::sleep(Duration::from_millis(50));
        }
    }

    fn terminate(&self) {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(status.success(), "kill -TERM failed");
    }

    /// The printed frames, each as one string.
    fn frames(&self) -> Vec<String> {
        let mut frames: Vec<String> = Vec::new();
        for line in self.stdout.lock().unwrap().iter() {
            if line.starts_with(FRAME_START) || frames.is_empty() {
                frames.push(String::new());
            }
            if let Some(frame) = frames.last_mut() {
                frame.push_str(line);
                frame.push('\n');
            }
        }
        frames
    }

    /// Entries `opkit-demo-*` left in the private `TMPDIR`.
    fn leftovers(&self) -> Vec<PathBuf> {
        std::fs::read_dir(self.tmp.path())
            .expect("read TMPDIR")
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("opkit-demo-"))
            })
            .collect()
    }

    fn kubectl(&self, kubeconfig: &Path, args: &[&str]) -> common::Output {
        let mut cmd = Command::new(common::tool_path("kubectl"));
        cmd.arg("--kubeconfig")
            .arg(kubeconfig)
            .args(args)
            .current_dir(self.tmp.path())
            .env("HOME", self.tmp.path())
            .env_remove("KUBECONFIG");
        common::run(cmd, None, common::COMMAND_TIMEOUT)
    }

    fn kubectl_ok(&self, kubeconfig: &Path, args: &[&str]) -> String {
        let out = self.kubectl(kubeconfig, args);
        assert!(out.success(), "kubectl failed\n{out}\n{}", self.output());
        out.stdout
    }
}

impl Drop for Demo {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if thread::panicking() {
            eprintln!("{}", self.output());
        }
    }
}

/// The `name` row of a table frame section, its cells split on whitespace.
fn row<'a>(frame: &'a str, name: &str) -> Option<Vec<&'a str>> {
    frame
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|cells| cells.first() == Some(&name))
}

#[test]
fn piped_demo_plays_the_script_kubectl_sees_the_bookings_and_sigterm_exits_0_removing_the_kubeconfig()
 {
    let mut demo = Demo::start(&["--duration", "90s", "--step-interval", "300ms"]);
    let export = demo.wait_for_line("the kubeconfig export", Duration::from_secs(60), |l| {
        l.starts_with(EXPORT)
    });
    let kubeconfig = PathBuf::from(export.trim_start_matches(EXPORT));
    assert!(
        kubeconfig.starts_with(demo.tmp.path()) && kubeconfig.is_file(),
        "the kubeconfig {} should be a file under TMPDIR {}",
        kubeconfig.display(),
        demo.tmp.path().display()
    );

    // The script's end; everything after is steady until the signal.
    demo.wait_for_line("the end of the script", Duration::from_secs(60), |l| {
        l.starts_with("Script done · ")
    });

    // The real kubectl, through the printed kubeconfig: the operator booked the ticket that
    // stays (rebooked to 4 seats) and the cancelled one is gone with its booking.
    let tickets = common::table(&demo.kubectl_ok(&kubeconfig, &["get", "flighttickets"]));
    assert_eq!(
        tickets[0],
        ["NAME", "FROM", "TO", "NUMBER", "PHASE", "AGE"],
        "{tickets:?}"
    );
    let ticket = common::row(&tickets, "ams-sfo").expect("ams-sfo listed");
    assert_eq!(ticket[1..5], ["AMS", "SFO", "4", "Booked"], "{tickets:?}");
    assert!(common::row(&tickets, "lis-nrt").is_none(), "{tickets:?}");
    let itinerary = demo.kubectl_ok(
        &kubeconfig,
        &[
            "get",
            "configmap",
            "ams-sfo-booking",
            "-o",
            "jsonpath={.data.itinerary}",
        ],
    );
    assert_eq!(itinerary, "4 seats from AMS to SFO");
    let cancelled = demo.kubectl(&kubeconfig, &["get", "configmap", "lis-nrt-booking"]);
    assert!(
        !cancelled.success(),
        "the cancelled booking is gone\n{cancelled}"
    );
    let available = demo.kubectl_ok(
        &kubeconfig,
        &[
            "get",
            "memcached",
            "cache",
            "-o",
            r#"jsonpath={.spec.size} {.status.conditions[?(@.type=="Available")].status}"#,
        ],
    );
    assert_eq!(available, "3 True");

    demo.terminate();
    let status = demo.wait(Duration::from_secs(20));
    assert!(
        status.success(),
        "exit status {status:?}\n{}",
        demo.output()
    );
    assert!(
        !kubeconfig.exists() && demo.leftovers().is_empty(),
        "the temporary kubeconfig directory should be removed: {:?}",
        demo.leftovers()
    );

    let stdout = demo.stdout.lock().unwrap().join("\n");
    assert!(
        !stdout.contains('\x1b'),
        "piped output has escapes:\n{stdout}"
    );
    assert!(
        !stdout.contains("✗"),
        "a step failed or its outcome was not seen:\n{stdout}"
    );
    let frames = demo.frames();
    assert!(frames.len() >= 3, "{} frames\n{stdout}", frames.len());
    // 80 columns, except the export line: a path to copy is never cut.
    for frame in &frames {
        assert!(
            frame
                .lines()
                .all(|l| l.chars().count() <= 80 || l.starts_with(EXPORT)),
            "{frame}"
        );
    }
    let last = frames.last().expect("a frame");
    assert!(
        last.contains("Script done · all 7 outcomes seen"),
        "every step's outcome should have been seen\n{last}"
    );
    assert_eq!(
        row(last, "ams-sfo").unwrap_or_default()[..8],
        [
            "ams-sfo",
            "AMS",
            "→",
            "SFO",
            "4",
            "Booked",
            "True",
            "ams-sfo-booking,"
        ],
        "{last}"
    );
    assert!(row(last, "lis-nrt").is_none(), "{last}");
    assert_eq!(
        row(last, "cache").unwrap_or_default(),
        ["cache", "3", "3/3", "True", "False", "False"],
        "{last}"
    );
    for (object, reason) in [
        ("flightticket/ams-sfo", "Booked"),
        ("flightticket/ams-sfo", "Rebooked"),
        ("flightticket/lis-nrt", "Cancelled"),
        ("memcached/cache", "Available"),
        ("memcached/cache", "ProgressDeadlineExceeded"),
    ] {
        assert!(
            last.lines()
                .any(|l| l.split_whitespace().skip(1).take(2).eq([object, reason])),
            "no {reason} event about {object} in the last frame\n{last}"
        );
    }
    assert!(
        demo.stderr.lock().unwrap().contains("stop requested"),
        "{}",
        demo.output()
    );
}

#[test]
fn demo_stops_by_itself_after_duration_with_exit_0_and_no_temporary_files() {
    let mut demo = Demo::start(&["--duration", "2s"]);
    demo.wait_for_line("the first frame", Duration::from_secs(60), |l| {
        l.starts_with(FRAME_START)
    });
    let status = demo.wait(Duration::from_secs(30));
    assert!(
        status.success(),
        "exit status {status:?}\n{}",
        demo.output()
    );
    assert!(demo.leftovers().is_empty(), "{:?}", demo.leftovers());
    assert!(
        demo.stderr.lock().unwrap().contains("--duration reached"),
        "{}",
        demo.output()
    );
}

#[test]
fn demo_on_a_busy_port_fails_at_once_naming_the_listen_flag() {
    let busy = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a port");
    let addr = busy.local_addr().expect("local address").to_string();
    let mut demo = Demo::start(&["--listen", &addr]);
    let status = demo.wait(Duration::from_secs(30));
    assert_eq!(status.code(), Some(1), "{}", demo.output());
    let stderr = demo.stderr.lock().unwrap().clone();
    assert!(
        stderr.contains(&format!("cannot listen on {addr}"))
            && stderr.contains("--listen 127.0.0.1:0"),
        "{stderr}"
    );
    assert!(demo.leftovers().is_empty(), "{:?}", demo.leftovers());
    assert!(demo.stdout.lock().unwrap().is_empty(), "{}", demo.output());
}
