//! The demo as a user runs it: the real `opkit-demo` binary (what `opkit demo` runs) with its
//! output piped, checked through the real kubectl and through the frames it prints.

#[path = "../../opkit-cli/tests/common/process.rs"]
mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::thread;
use std::time::Duration;

use common::Streaming;

/// The first line of every frame.
const FRAME_START: &str = "opkit demo · ";
const EXPORT: &str = "Try it: export KUBECONFIG=";

/// A running `opkit demo` with piped output and `TMPDIR` in a private directory (killed on
/// drop, its output printed if the test is failing).
struct Demo {
    process: Streaming,
    tmp: tempfile::TempDir,
}

impl Demo {
    fn start(args: &[&str]) -> Demo {
        let tmp = tempfile::Builder::new()
            .prefix("opkit-demo-test-")
            .tempdir()
            .expect("create a temporary directory");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_opkit-demo"));
        cmd.args(args)
            .env("TMPDIR", tmp.path())
            .env_remove("KUBECONFIG");
        Demo {
            process: Streaming::spawn(cmd),
            tmp,
        }
    }

    fn output(&self) -> String {
        format!(
            "--- stdout ---\n{}\n--- stderr ---\n{}",
            self.process.stdout_lines().join("\n"),
            self.process.stderr()
        )
    }

    /// The printed frames, each as one string.
    fn frames(&self) -> Vec<String> {
        let mut frames: Vec<String> = Vec::new();
        for line in &self.process.stdout_lines() {
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
    let export =
        demo.process
            .wait_for_line("the kubeconfig export", Duration::from_secs(60), |l| {
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
    demo.process
        .wait_for_line("the end of the script", Duration::from_secs(60), |l| {
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

    demo.process.terminate();
    let status = demo.process.wait(Duration::from_secs(20));
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

    let stdout = demo.process.stdout_lines().join("\n");
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
        demo.process.stderr().contains("stop requested"),
        "{}",
        demo.output()
    );
}

#[test]
fn demo_stops_by_itself_after_duration_with_exit_0_and_no_temporary_files() {
    let mut demo = Demo::start(&["--duration", "2s"]);
    demo.process
        .wait_for_line("the first frame", Duration::from_secs(60), |l| {
            l.starts_with(FRAME_START)
        });
    let status = demo.process.wait(Duration::from_secs(30));
    assert!(
        status.success(),
        "exit status {status:?}\n{}",
        demo.output()
    );
    assert!(demo.leftovers().is_empty(), "{:?}", demo.leftovers());
    assert!(
        demo.process.stderr().contains("--duration reached"),
        "{}",
        demo.output()
    );
}

#[test]
fn demo_on_a_busy_port_fails_at_once_naming_the_listen_flag() {
    let busy = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a port");
    let addr = busy.local_addr().expect("local address").to_string();
    let mut demo = Demo::start(&["--listen", &addr]);
    let status = demo.process.wait(Duration::from_secs(30));
    assert_eq!(status.code(), Some(1), "{}", demo.output());
    let stderr = demo.process.stderr();
    assert!(
        stderr.contains(&format!("cannot listen on {addr}"))
            && stderr.contains("--listen 127.0.0.1:0"),
        "{stderr}"
    );
    assert!(demo.leftovers().is_empty(), "{:?}", demo.leftovers());
    assert!(demo.process.stdout_lines().is_empty(), "{}", demo.output());
}
