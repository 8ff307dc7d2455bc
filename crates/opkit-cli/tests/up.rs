//! The `opkit up` contract: one ready line, a kubeconfig, clean stop on SIGTERM, a data dir in
//! use refused at once, data kept across restarts; `opkit up --metering` running Reports over
//! the objects' history on a controlled clock. `opkit test` on embedded planes, and its
//! `--chaos` campaigns: over a shell-script operator (the report, the replay), over each
//! seeded-bug operator of `examples/chaos-gallery` and its fixed twin, and over the Memcached
//! example project.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{COMMAND_TIMEOUT, Output, eventually_within, run};

fn opkit() -> Command {
    Command::new(env!("CARGO_BIN_EXE_opkit"))
}

/// Starts `opkit up` and returns the child and its ready line.
fn up(args: &[&str]) -> (Child, String) {
    let mut child = opkit()
        .arg("up")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("opkit starts");
    let stdout = child.stdout.take().expect("stdout");
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .expect("ready line");
    (child, line.trim_end().to_string())
}

fn terminate(child: &mut Child) -> std::process::ExitStatus {
    let pid = child.id().to_string();
    Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill runs");
    eventually_within("opkit up to stop on SIGTERM", COMMAND_TIMEOUT, || {
        child.try_wait().expect("wait")
    })
}

#[test]
fn up_prints_exactly_one_ready_line_and_stops_cleanly_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let (mut child, line) = up(&[
        "--data-dir",
        data.to_str().unwrap(),
        "--listen",
        "127.0.0.1:0",
    ]);
    let kubeconfig = data.join("kubeconfig");
    let prefix = "opkit control plane ready at https://127.0.0.1:";
    assert!(line.starts_with(prefix), "{line}");
    assert!(
        line.ends_with(&format!("(kubeconfig: {})", kubeconfig.display())),
        "{line}"
    );
    let text = std::fs::read_to_string(&kubeconfig).expect("kubeconfig written");
    assert!(
        text.contains("certificate-authority-data:") && text.contains("token:"),
        "{text}"
    );
    let status = terminate(&mut child);
    assert!(status.success(), "exit status {status:?}");
}

/// Runs a second `opkit up` on the data dir of a running one (killed, failing the test, if
/// it has not finished after [`COMMAND_TIMEOUT`]: it must not wait for the first to stop);
/// returns its output and how long it ran.
fn second_up_on_a_data_dir_in_use() -> (Output, Duration) {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().to_str().unwrap().to_string();
    let (mut first, _) = up(&["--data-dir", &data, "--listen", "127.0.0.1:0"]);
    let mut second = opkit();
    second.args(["up", "--data-dir", &data, "--listen", "127.0.0.1:0"]);
    let started = Instant::now();
    let out = run(second, None, COMMAND_TIMEOUT);
    let took = started.elapsed();
    terminate(&mut first);
    (out, took)
}

#[test]
fn a_second_up_on_a_data_dir_in_use_fails_with_a_clear_message_instead_of_waiting() {
    let (second, _) = second_up_on_a_data_dir_in_use();
    assert!(!second.success(), "{second}");
    assert!(
        second.stderr.contains("is in use by another `opkit up`"),
        "{second}"
    );
}

/// Tests that assert an upper bound on wall-clock time: they can fail on a loaded machine, so
/// they are `#[ignore]`d and run by the `timing` nextest profile (not gating).
mod timing {
    use super::*;

    #[test]
    #[ignore = "timing: run with the timing profile"]
    fn a_second_up_on_a_data_dir_in_use_fails_within_ten_seconds() {
        let (second, took) = second_up_on_a_data_dir_in_use();
        assert!(!second.success(), "{second}");
        assert!(took < Duration::from_secs(10), "took {took:?}");
    }
}

#[test]
fn ephemeral_up_writes_the_kubeconfig_where_asked() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kc");
    let (mut child, line) = up(&[
        "--ephemeral",
        "--listen",
        "127.0.0.1:0",
        "--kubeconfig",
        path.to_str().unwrap(),
    ]);
    assert!(
        line.ends_with(&format!("(kubeconfig: {})", path.display())),
        "{line}"
    );
    assert!(path.exists());
    terminate(&mut child);
}

#[test]
fn a_bad_listen_address_is_a_clear_error() {
    let out = opkit()
        .args(["up", "--ephemeral", "--listen", "not-an-address"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--listen"), "{stderr}");
}

/// Writes `files` under a fresh directory with `bin/kubectl` linked (first on the PATH of a
/// suite's commands).
fn kuttl_suite(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    for (path, contents) in files {
        let p = dir.path().join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, contents).unwrap();
    }
    std::fs::create_dir_all(dir.path().join("bin")).unwrap();
    std::os::unix::fs::symlink(common::tool_path("kubectl"), dir.path().join("bin/kubectl"))
        .unwrap();
    dir
}

fn opkit_test(dir: &std::path::Path, args: &[&str]) -> Output {
    let mut cmd = opkit();
    cmd.arg("test")
        .args(args)
        .current_dir(dir)
        .env_remove("KUBECONFIG");
    run(cmd, None, Duration::from_secs(120))
}

#[test]
fn opkit_test_runs_a_kuttl_suite_on_an_embedded_plane_and_writes_junit() {
    let dir = kuttl_suite(&[
        (
            "kuttl-test.yaml",
            "apiVersion: kuttl.dev/v1beta1\nkind: TestSuite\ntestDirs: [e2e]\ntimeout: 20\n",
        ),
        (
            "e2e/deploy/00-web.yaml",
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: 2\n  \
             selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    \
             spec: {containers: [{name: web, image: nginx}]}\n",
        ),
        (
            "e2e/deploy/00-assert.yaml",
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nstatus: {readyReplicas: 2}\n",
        ),
        (
            "e2e/deploy/01-scale.yaml",
            "apiVersion: kuttl.dev/v1beta1\nkind: TestStep\ncommands:\n- command: kubectl scale \
             deployment web --replicas=1 -n $NAMESPACE\n",
        ),
        (
            "e2e/deploy/01-assert.yaml",
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nstatus: {readyReplicas: 1}\n",
        ),
    ]);
    let out = opkit_test(dir.path(), &["--report", "junit"]);
    assert!(out.success(), "{out}");
    assert!(
        out.stdout.contains("=== RUN   kuttl/harness/deploy"),
        "{out}"
    );
    assert!(
        out.stdout.contains("--- PASS: kuttl/harness/deploy ("),
        "{out}"
    );
    assert!(
        out.stdout
            .contains("| deploy/1-scale | running command: [kubectl scale"),
        "{out}"
    );
    let kubeconfig = std::fs::read_to_string(dir.path().join("kubeconfig")).expect("./kubeconfig");
    assert!(
        kubeconfig.contains("server: https://127.0.0.1:"),
        "{kubeconfig}"
    );
    let xml = std::fs::read_to_string(dir.path().join("kuttl-report.xml")).expect("the report");
    assert!(xml.contains("name=\"step 1-scale\""), "{xml}");
    assert!(xml.contains("failures=\"0\""), "{xml}");
}

#[test]
fn opkit_test_fails_with_exit_1_and_a_diff_against_an_existing_cluster() {
    let plane = common::ControlPlane::start();
    let dir = kuttl_suite(&[
        (
            "e2e/wrong/00-cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {a: \"1\"}\n",
        ),
        (
            "e2e/wrong/00-assert.yaml",
            "apiVersion: kuttl.dev/v1beta1\nkind: TestAssert\ntimeout: 1\n---\napiVersion: v1\n\
             kind: ConfigMap\nmetadata: {name: cm}\ndata: {a: \"2\"}\n",
        ),
    ]);
    let kubeconfig = plane.kubeconfig.display().to_string();
    let out = opkit_test(dir.path(), &["e2e", "--kubeconfig", &kubeconfig]);
    assert_eq!(out.code, Some(1), "{out}");
    assert!(
        out.stdout.contains("--- FAIL: kuttl/harness/wrong ("),
        "{out}"
    );
    assert!(
        out.stdout.contains("-  a: \"2\"\n        +  a: \"1\""),
        "{out}"
    );
    assert!(
        out.stdout
            .contains(".data.a: value mismatch, expected: 2 != actual: 1"),
        "{out}"
    );
    let bad = opkit_test(
        dir.path(),
        &["e2e", "--start-kind", "--start-control-plane"],
    );
    assert_eq!(bad.code, Some(255), "{bad}");
}

#[test]
fn opkit_test_runs_a_chainsaw_test_found_under_a_test_dir() {
    let dir = kuttl_suite(&[(
        "e2e/hello/chainsaw-test.yaml",
        "apiVersion: chainsaw.kyverno.io/v1alpha1\nkind: Test\nmetadata: {name: hello}\nspec:\n  \
         steps:\n  - name: greet\n    try:\n    - apply:\n        resource:\n          \
         apiVersion: v1\n          kind: ConfigMap\n          metadata: {name: hello}\n          \
         data: {ns: ($namespace)}\n    - assert:\n        resource:\n          apiVersion: v1\n          \
         kind: ConfigMap\n          metadata: {name: hello}\n          data:\n            \
         (starts_with(ns, 'chainsaw-')): true\n    - script:\n        content: kubectl get \
         configmap hello -n $NAMESPACE\n",
    )]);
    let out = opkit_test(dir.path(), &["e2e", "--report", "junit"]);
    assert!(out.success(), "{out}");
    assert!(
        out.stdout.contains("=== RUN   kuttl/harness/hello"),
        "{out}"
    );
    assert!(
        out.stdout.contains("--- PASS: kuttl/harness/hello ("),
        "{out}"
    );
    assert!(
        out.stdout
            .contains("| hello/greet | running command: [sh -c kubectl get configmap hello"),
        "{out}"
    );
    let xml = std::fs::read_to_string(dir.path().join("kuttl-report.xml")).expect("the report");
    assert!(xml.contains("name=\"step greet\""), "{xml}");
    assert!(xml.contains("failures=\"0\""), "{xml}");
}

/// The operator under test of the chaos suites: a shell loop over `kubectl` that, for each
/// ConfigMap labelled `chaos-demo=request`, writes a ConfigMap `output` holding the request's
/// value and marks the request `done`. `BUGGY` marks the request first and writes the output
/// second, and never recomputes a request marked done: a crash between the two writes loses the
/// output for good. `FIXED` writes the output first (idempotently) and marks the request last.
const BUGGY_OPERATOR: &str = r#"while true; do
  kubectl get configmaps -A -l chaos-demo=request -o jsonpath='{range .items[*]}{.metadata.namespace} {.data.value} {.metadata.annotations.done}{"\n"}{end}' |
  while read -r ns value done; do
    [ "$done" = "true" ] && continue
    kubectl annotate configmap request -n "$ns" done=true --overwrite
    kubectl create configmap output -n "$ns" --from-literal=value="$value"
  done
  sleep 0.2
done
"#;

const FIXED_OPERATOR: &str = r#"while true; do
  kubectl get configmaps -A -l chaos-demo=request -o jsonpath='{range .items[*]}{.metadata.namespace} {.data.value} {.metadata.annotations.done}{"\n"}{end}' |
  while read -r ns value done; do
    [ "$done" = "true" ] && continue
    kubectl create configmap output -n "$ns" --from-literal=value="$value" --dry-run=client -o yaml | kubectl apply -n "$ns" -f - || continue
    kubectl annotate configmap request -n "$ns" done=true --overwrite
  done
  sleep 0.2
done
"#;

/// A suite whose background command is `operator` and whose one test (`flag`) asks for an
/// output and asserts it.
fn chaos_suite(operator: &str) -> tempfile::TempDir {
    kuttl_suite(&[
        (
            "kuttl-test.yaml",
            "apiVersion: kuttl.dev/v1beta1\nkind: TestSuite\ntestDirs: [e2e]\ntimeout: 6\n\
             startControlPlane: true\ncommands:\n- command: sh operator.sh\n  background: true\n",
        ),
        ("operator.sh", operator),
        (
            "e2e/flag/00-request.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: request, labels: {chaos-demo: \
             request}}\ndata: {value: \"42\"}\n",
        ),
        (
            "e2e/flag/00-assert.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: output}\ndata: {value: \"42\"}\n\
             ---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: request, annotations: {done: \
             \"true\"}}\n",
        ),
    ])
}

fn opkit_chaos(dir: &std::path::Path, args: &[&str]) -> Output {
    let mut cmd = opkit();
    cmd.arg("test")
        .args(args)
        .current_dir(dir)
        .env_remove("KUBECONFIG");
    run(cmd, None, Duration::from_secs(300))
}

#[test]
fn a_crash_campaign_names_the_write_after_which_a_crash_loses_the_output_and_replays_it() {
    let dir = chaos_suite(BUGGY_OPERATOR);
    let out = opkit_chaos(dir.path(), &["--chaos", "crash", "--chaos-settle", "500ms"]);
    assert_eq!(out.code, Some(1), "{out}");
    assert!(
        out.stdout.contains(
            "FINDING 1: test flag under crash@1\n  fault: crash and restart the operator after \
             its write 1 committed\n  injection point: write 1: patch configmaps request\n"
        ),
        "{out}"
    );
    assert!(out.stdout.contains("  oracle \"asserts\" failed:"), "{out}");
    assert!(
        out.stdout
            .contains("ConfigMap/output: in the reference, missing in this run"),
        "the end-state oracle names the lost object: {out}"
    );
    assert!(
        out.stdout
            .contains("chaos: flag:crash@2 (create configmaps output): ok (restarted 1 times, "),
        "a crash after the last write is harmless: {out}"
    );
    assert!(out.stdout.contains(", 1 findings"), "{out}");

    // The replay command the report prints reproduces exactly that run.
    let replay = out
        .stdout
        .lines()
        .find_map(|l| l.trim().strip_prefix("replay: opkit "))
        .expect("a replay command");
    assert_eq!(
        replay,
        "test --chaos-settle 500ms --chaos-replay flag:crash@1"
    );
    // (`opkit_chaos` says `test` itself.)
    let args: Vec<&str> = replay.split(' ').skip(1).collect();
    let again = opkit_chaos(dir.path(), &args);
    assert_eq!(again.code, Some(1), "{again}");
    assert!(
        again
            .stdout
            .contains("FINDING 1: test flag under crash@1\n"),
        "{again}"
    );
    assert!(again.stdout.contains("chaos: 1 fault runs in"), "{again}");

    // A refused create is never retried either: the flag is already set.
    let refused = opkit_chaos(
        dir.path(),
        &[
            "--chaos-settle",
            "500ms",
            "--chaos-replay",
            "flag:refuse409@2",
        ],
    );
    assert_eq!(refused.code, Some(1), "{refused}");
    assert!(
        refused.stdout.contains(
            "  fault: refuse the operator's write 2 with 409 (nothing committed)\n  injection \
             point: write 2: create configmaps output\n"
        ),
        "{refused}"
    );
    assert!(
        refused
            .stdout
            .contains("create configmaps $NAMESPACE/output: 1 in the reference, 0 in this run"),
        "{refused}"
    );
}

#[test]
fn a_failing_run_of_three_faults_is_shrunk_to_the_one_that_loses_the_output() {
    // The buggy operator's two writes: the `done` mark, then the output. A lost response to
    // the mark is harmless (the output is written anyway), a crash after the output too; the
    // refused create is never retried: that one fault is the bug.
    let dir = chaos_suite(BUGGY_OPERATOR);
    let out = opkit_chaos(
        dir.path(),
        &[
            "--chaos-settle",
            "500ms",
            "--chaos-replay",
            "flag:lose500@1+crash@2+refuse409@2",
        ],
    );
    assert_eq!(out.code, Some(1), "{out}");
    assert!(
        out.stdout.contains(
            "FINDING 1: test flag under lose500@1+crash@2+refuse409@2\n  fault: commit the \
             operator's write 1, then answer 500 (the response is lost)\n  injection point: \
             write 1: patch configmaps request\n  fault: crash and restart the operator after \
             its write 2 committed\n"
        ),
        "{out}"
    );
    // ddmin: the first half alone passes, the second fails, then its halves.
    for (run, verdict) in [
        ("flag:lose500@1 (patch configmaps request)", "ok"),
        (
            "flag:crash@2+refuse409@2 (create configmaps output; create configmaps output)",
            "FAILED",
        ),
        ("flag:crash@2 (create configmaps output)", "ok"),
        ("flag:refuse409@2 (create configmaps output)", "FAILED"),
    ] {
        assert!(
            out.stdout.contains(&format!("chaos: {run}: {verdict} (")),
            "{run}: {out}"
        );
    }
    assert!(
        out.stdout.contains(
            "  shrunk in 4 runs to flag:refuse409@2 (the minimal set of these faults that still \
             fails)\n  replay the minimal plan: opkit test --chaos-settle 500ms --chaos-replay \
             flag:refuse409@2\n"
        ),
        "{out}"
    );
    assert!(out.stdout.contains("chaos: 1 fault runs in"), "{out}");
}

#[test]
fn a_campaign_of_every_fault_passes_the_fixed_operator_without_a_false_alarm() {
    let dir = chaos_suite(FIXED_OPERATOR);
    let out = opkit_chaos(dir.path(), &["--chaos", "all", "--chaos-settle", "500ms"]);
    assert!(out.success(), "{out}");
    assert!(
        out.stdout
            .contains("chaos: flag: the operator made 2 writes, 0 watches and got 0 notifications without faults"),
        "{out}"
    );
    assert!(out.stdout.contains(", 0 findings"), "{out}");
    for point in [
        "crash@1 (create configmaps output)",
        "crash@2 (patch configmaps request)",
    ] {
        assert!(
            out.stdout
                .contains(&format!("chaos: flag:{point}: ok (restarted 1 times, ")),
            "the operator was killed and restarted after each write, and recovered: {out}"
        );
    }
    // Two writes: per write a crash, four refusals and two lost responses.
    assert!(out.stdout.contains("chaos: 14 fault runs in"), "{out}");
    for point in ["refuse409@1", "refuse503@2", "lose500@1", "lose504@2"] {
        assert!(
            out.stdout.contains(&format!("chaos: flag:{point} (")),
            "{point}: {out}"
        );
    }
}

/// The flag test as a chainsaw test: a request, then its output.
const CHAINSAW_FLAG_TEST: &str = "apiVersion: chainsaw.kyverno.io/v1alpha1\nkind: Test\n\
metadata: {name: flag}\nspec:\n  timeouts: {assert: 6s}\n  steps:\n  - try:\n    - apply:\n        \
resource:\n          apiVersion: v1\n          kind: ConfigMap\n          metadata: {name: \
request, labels: {chaos-demo: request}}\n          data: {value: \"42\"}\n    - assert:\n        \
resource:\n          apiVersion: v1\n          kind: ConfigMap\n          metadata: {name: \
output}\n          data: {value: \"42\"}\n";

#[test]
fn a_crash_campaign_over_a_chainsaw_test_runs_the_operator_given_by_flag_and_finds_the_lost_output()
{
    let dir = kuttl_suite(&[
        ("operator.sh", BUGGY_OPERATOR),
        ("e2e/flag/chainsaw-test.yaml", CHAINSAW_FLAG_TEST),
    ]);
    // chainsaw tests have no background command: without --operator there is nothing to test.
    let out = opkit_chaos(dir.path(), &["e2e", "--chaos", "crash"]);
    assert_eq!(out.code, Some(1), "{out}");
    assert!(
        out.stderr.contains("--chaos needs the operator under test"),
        "{out}"
    );
    let out = opkit_chaos(
        dir.path(),
        &[
            "e2e",
            "--start-control-plane",
            "--chaos",
            "crash",
            "--operator",
            "sh operator.sh",
            "--chaos-settle",
            "500ms",
        ],
    );
    assert_eq!(out.code, Some(1), "{out}");
    assert!(
        out.stdout.contains(
            "FINDING 1: test flag under crash@1\n  fault: crash and restart the operator after \
             its write 1 committed\n  injection point: write 1: patch configmaps request\n"
        ),
        "{out}"
    );
    assert!(
        out.stdout
            .contains("ConfigMap/output: in the reference, missing in this run"),
        "chainsaw deleted its request, the namespace was kept for the end state: {out}"
    );
    assert!(
        out.stdout.contains(
            "replay: opkit test e2e --start-control-plane --operator 'sh operator.sh' \
             --chaos-settle 500ms --chaos-replay flag:crash@1"
        ),
        "{out}"
    );
}

/// Leader election for the leader suites' operators, in shell: an instance leads while it holds
/// the Lease `default/chaos-leader`, renewed (annotation `renewed`, epoch seconds) at most once a
/// second; another takes it over once it is 3 s old. Taking it over is a `replace` carrying the
/// resourceVersion read, so two contenders cannot both win.
const LEADS: &str = r#"me="op-$$"
leads() {
  now=$(date +%s)
  set -- $(kubectl get lease chaos-leader -n default -o jsonpath='{.metadata.resourceVersion} {.spec.holderIdentity} {.metadata.annotations.renewed}' 2>/dev/null)
  lease='apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata: {name: chaos-leader, namespace: default, %s annotations: {renewed: "%s"}}\nspec: {holderIdentity: %s}\n'
  if [ -z "$1" ]; then
    printf "$lease" "" "$now" "$me" | kubectl create -f - >/dev/null 2>&1
    return
  fi
  if [ "$2" = "$me" ]; then
    [ $((now - $3)) -lt 1 ] && return 0
  elif [ $((now - $3)) -lt 3 ]; then
    return 1
  fi
  printf "$lease" "resourceVersion: \"$1\"," "$now" "$me" | kubectl replace -f - >/dev/null 2>&1
}
"#;

/// Whether this instance holds the lease now, by a read alone: it is the holder and the lease
/// is younger than the 3 s after which another takes it over.
const HOLDS: &str = r#"holds() {
  now=$(date +%s)
  set -- $(kubectl get lease chaos-leader -n default -o jsonpath='{.spec.holderIdentity} {.metadata.annotations.renewed}' 2>/dev/null)
  [ "$1" = "$me" ] && [ $((now - $2)) -lt 3 ]
}
"#;

/// The flag operator with leader election. `BUGGY` checks that it leads once per pass, then
/// marks the request and writes the output: paused between the two past its lease, it wakes up
/// and writes the output although its successor leads. `FIXED` is the fixed flag operator
/// that re-reads the lease before each write ([`HOLDS`]) and stops its pass when it leads no
/// more: woken after its successor took over, it writes nothing.
const BUGGY_LEADER_LOOP: &str = r#"while true; do
  if leads; then
    kubectl get configmaps -A -l chaos-demo=request -o jsonpath='{range .items[*]}{.metadata.namespace} {.data.value} {.metadata.annotations.done}{"\n"}{end}' |
    while read -r ns value done; do
      [ "$done" = "true" ] && continue
      kubectl annotate configmap request -n "$ns" done=true --overwrite
      kubectl create configmap output -n "$ns" --from-literal=value="$value"
    done
  fi
  sleep 0.2
done
"#;

const FIXED_LEADER_LOOP: &str = r#"while true; do
  if leads; then
    kubectl get configmaps -A -l chaos-demo=request -o jsonpath='{range .items[*]}{.metadata.namespace} {.data.value} {.metadata.annotations.done}{"\n"}{end}' |
    while read -r ns value done; do
      [ "$done" = "true" ] && continue
      holds || break
      kubectl create configmap output -n "$ns" --from-literal=value="$value" --dry-run=client -o yaml | kubectl apply -n "$ns" -f - || continue
      holds || break
      kubectl annotate configmap request -n "$ns" done=true --overwrite
    done
  fi
  sleep 0.2
done
"#;

#[test]
fn a_leader_campaign_catches_a_paused_old_leader_that_writes_after_waking_without_rechecking() {
    let dir = chaos_suite(&format!("{LEADS}{BUGGY_LEADER_LOOP}"));
    let out = opkit_chaos(
        dir.path(),
        &["--chaos", "leader", "--chaos-settle", "500ms"],
    );
    assert_eq!(out.code, Some(1), "{out}");
    assert!(
        out.stdout.contains(
            "FINDING 1: test flag under pause@2\n  fault: pause the operator (SIGSTOP) after its \
             write 2 committed, start a successor, and wake the old one (SIGCONT) once the \
             successor took over\n  injection point: write 2: patch configmaps request\n"
        ),
        "{out}"
    );
    assert!(
        out.stdout.contains(
            "  oracle \"fencing\" failed:\n    the paused old leader woke up and did create \
             configmaps output after its successor took over (two actors)\n"
        ),
        "{out}"
    );
    assert!(
        out.stdout
            .contains("chaos: flag:pause@3 (create configmaps output): ok ("),
        "paused after its last write, it wakes up and finds it leads no more: {out}"
    );
    assert!(out.stdout.contains(", 1 findings"), "{out}");
}

#[test]
fn a_leader_campaign_passes_an_old_leader_that_rechecks_its_lease_before_each_write() {
    let dir = chaos_suite(&format!("{LEADS}{HOLDS}{FIXED_LEADER_LOOP}"));
    let out = opkit_chaos(
        dir.path(),
        &["--chaos", "leader", "--chaos-settle", "500ms"],
    );
    assert!(out.success(), "{out}");
    // Paused after the output's write and after the mark, and woken once its successor took
    // the lease over: the successor finishes the request, the old leader writes nothing.
    for (point, write) in [
        (2, "create configmaps output"),
        (3, "patch configmaps request"),
    ] {
        assert!(
            out.stdout
                .contains(&format!("chaos: flag:pause@{point} ({write}): ok (")),
            "{out}"
        );
    }
    assert!(out.stdout.contains("chaos: 2 fault runs in"), "{out}");
    assert!(out.stdout.contains(", 0 findings"), "{out}");
}

#[test]
fn chaos_refuses_unknown_fault_kinds_and_an_existing_cluster() {
    let dir = chaos_suite(FIXED_OPERATOR);
    let out = opkit_chaos(dir.path(), &["--chaos", "crash,nap"]);
    assert_eq!(out.code, Some(255), "{out}");
    assert!(
        out.stderr.contains(
            "unknown fault kind \"nap\" (supported: crash, errors, stale, unobserved, watch, \
             leader, all)"
        ),
        "{out}"
    );
    let out = opkit_chaos(
        dir.path(),
        &["--chaos", "crash", "--kubeconfig", "kubeconfig"],
    );
    assert_eq!(out.code, Some(255), "{out}");
    assert!(out.stderr.contains("drop --kubeconfig"), "{out}");
    let out = opkit_chaos(dir.path(), &["--chaos-replay", "flag:nap@1"]);
    assert_eq!(out.code, Some(255), "{out}");
    assert!(out.stderr.contains("is not a run plan"), "{out}");
}

/// The directory cargo built `chaos-gallery` into: next to `opkit` (it is a workspace member,
/// so building the workspace's tests builds it). Fails loudly when it is missing.
fn gallery_bin_dir() -> std::path::PathBuf {
    let dir = std::path::Path::new(env!("CARGO_BIN_EXE_opkit"))
        .parent()
        .expect("opkit's directory")
        .to_path_buf();
    assert!(
        dir.join("chaos-gallery").is_file(),
        "the seeded-bug operators are not built: no chaos-gallery in {} (build them with `cargo \
         build -p chaos-gallery`, or run the tests of the whole workspace)",
        dir.display()
    );
    dir
}

/// A campaign of `kinds` over the gallery's suite for `bug` (copied to a temporary directory:
/// a campaign writes its findings' logs next to the suite), with the buggy operator or its
/// fixed twin.
fn gallery_campaign(bug: &str, kinds: &str, fixed: bool) -> Output {
    let source = common::repo_root()
        .join("examples/chaos-gallery/suites")
        .join(bug);
    let dir = tempfile::tempdir().expect("temp dir");
    copy_tree(&source, dir.path());
    let path = format!(
        "{}:{}:{}",
        gallery_bin_dir().display(),
        common::tool_path("kubectl").parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = opkit();
    cmd.args(["test", "--chaos", kinds, "--chaos-settle", "500ms"])
        .current_dir(dir.path())
        .env("PATH", path)
        .env("CHAOS_GALLERY_FIXED", fixed.to_string())
        .env_remove("KUBECONFIG");
    run(cmd, None, Duration::from_secs(300))
}

fn copy_tree(from: &std::path::Path, to: &std::path::Path) {
    for entry in std::fs::read_dir(from).unwrap_or_else(|e| panic!("{}: {e}", from.display())) {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Each seeded bug of the gallery, the fault kinds that matter for it, and what its finding
/// must say: the run that catches it and the oracle's words.
const GALLERY: &[(&str, &str, &[&str])] = &[
    (
        "scale-down",
        "crash",
        &[
            "under crash@4\n  fault: crash and restart the operator after its write 4 committed\n  \
             injection point: write 4: delete configmaps app-1\n",
            "ConfigMap/app/metadata/annotations/replicas: reference \"1\", this run \"2\"",
        ],
    ),
    (
        "resize",
        "crash",
        &[
            "under crash@1\n",
            "injection point: write 1: create configmaps app-template\n",
            "create configmaps $NAMESPACE/app-volume: 1 in the reference, 0 in this run",
        ],
    ),
    (
        "rollout",
        "crash",
        &[
            "injection point: write 3: patch configmaps app-config\n",
            "oracle \"asserts\" failed",
        ],
    ),
    (
        "cleanup",
        "unobserved",
        &[
            "under unobserved@1\n",
            "injection point: notification 1: DELETED configmaps app\n",
            "delete configmaps $NAMESPACE/app-child: 1 in the reference, 0 in this run",
        ],
    ),
    (
        "stale-scale",
        "stale",
        &[
            "under stale4@6\n",
            "injection point: write 6: create configmaps app-1\n",
            "delete configmaps $NAMESPACE/app-1: 1 in the reference, 2 in this run",
        ],
    ),
    (
        "storage",
        "unobserved",
        &[
            "under unobserved@2\n",
            "injection point: notification 2: MODIFIED configmaps db\n",
            "ConfigMap/db-storage: not in the reference, left by this run",
        ],
    ),
    (
        "blind-retry",
        "errors",
        &[
            "under lose500@1\n",
            "oracle \"create/delete counts\" failed",
        ],
    ),
    (
        "heartbeat",
        "crash",
        &[
            "the operator is not quiet without faults: in the fault-free reference runs of heartbeat",
        ],
    ),
];

#[test]
fn chaos_campaigns_catch_every_seeded_bug_of_the_gallery() {
    let mut missed = Vec::new();
    for (bug, kinds, expected) in GALLERY {
        let out = gallery_campaign(bug, kinds, false);
        let text = format!("{}{}", out.stdout, out.stderr);
        let caught = !out.success() && expected.iter().all(|e| text.contains(e));
        if !caught {
            missed.push(format!(
                "{bug} (--chaos {kinds}), expected {expected:?}:\n{out}"
            ));
        }
    }
    assert!(
        missed.is_empty(),
        "bugs not caught as expected:\n{}",
        missed.join("\n\n")
    );
}

#[test]
fn chaos_campaigns_pass_every_fixed_twin_of_the_gallery_without_a_false_alarm() {
    let mut alarms = Vec::new();
    for (bug, kinds, _) in GALLERY {
        let out = gallery_campaign(bug, kinds, true);
        let runs = out
            .stdout
            .lines()
            .find_map(|l| l.strip_prefix("chaos: ")?.split_once(" fault runs in "))
            .and_then(|(n, _)| n.parse::<usize>().ok());
        if !out.success() || !out.stdout.contains(", 0 findings") || runs.unwrap_or(0) == 0 {
            alarms.push(format!("{bug} (--chaos {kinds}):\n{out}"));
        }
    }
    assert!(
        alarms.is_empty(),
        "fixed twins failed:\n{}",
        alarms.join("\n\n")
    );
}

/// The Memcached example project under `opkit test --chaos crash`: the project's own binary,
/// built by `opkit test` (which also writes the project's `config/`, ignored by git), is the
/// suite's background command; each crash run restarts it; no run is a finding — the
/// Deployment controller's pods are compared by their `generateName`, not their random
/// names, Events are not state, and an operator catching up after its restart is quiet once it
/// stops writing.
#[test]
fn a_crash_campaign_of_the_memcached_project_runs_its_operator_and_raises_no_false_alarm() {
    let (out, runs) = project_campaign("memcached", "crash", "90s");
    assert!(runs >= 3, "a crash run per write of the operator\n{out}");
    assert!(
        out.stdout.contains(": ok (restarted 1 times"),
        "a crashed operator was restarted and the test still passed\n{out}"
    );
}

/// The FlightTicket example project under crash, stale-state and unobserved-state faults: its
/// suite books a ticket, rebooks it and cancels it (the finalizer deletes the booking before
/// the ticket goes), and no run is a finding — a crash between the booking's apply and the
/// status patch, or before the cancellation's delete, is repaired by the restarted operator.
#[test]
fn a_fault_campaign_of_the_flightticket_project_books_rebooks_and_cancels_without_a_false_alarm() {
    let (out, runs) = project_campaign("flightticket", "crash,stale,unobserved", "120s");
    assert!(runs >= 5, "a crash run per write of the operator\n{out}");
    for point in [
        "crash@",
        "(delete configmaps trip-booking): ok (restarted 1 times",
        ":unobserved@",
    ] {
        assert!(out.stdout.contains(point), "no run at {point}\n{out}");
    }
}

/// `opkit test --chaos KINDS --budget BUDGET` in the example project `examples/NAME`, which
/// must pass with no finding, its own binary (`run`, probe and metrics servers off) the
/// suite's background command; its output and number of fault runs.
fn project_campaign(name: &str, kinds: &str, budget: &str) -> (Output, usize) {
    let project = common::repo_root().join("examples").join(name);
    let mut cmd = opkit();
    cmd.args(["test", "--chaos", kinds, "--budget", budget])
        .current_dir(&project)
        .env_remove("KUBECONFIG");
    // `opkit test` builds the project first: fresh after the workspace's build, but cargo may
    // wait for the target directory's lock while the scaffold test builds a generated project
    // in it (minutes on a loaded 2-core machine); the campaign itself stays within its budget.
    let out = run(cmd, None, Duration::from_secs(1500));
    assert!(
        out.stderr
            .contains(&format!("chaos: the suite starts {name}'s operator: "))
            && out.stderr.contains(&format!(
                "/{name} run --metrics-bind-address 0 --health-probe-bind-address 0"
            )),
        "the suite starts the project's own binary as its background command\n{out}"
    );
    let runs = out
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("chaos: ")?.split_once(" fault runs in "))
        .and_then(|(n, _)| n.parse::<usize>().ok())
        .unwrap_or_else(|| panic!("no campaign summary\n{out}"));
    assert!(out.stdout.contains(", 0 findings"), "{out}");
    assert!(out.success(), "the campaign should pass\n{out}");
    (out, runs)
}

/// `opkit up --metering` with its clock read from a file the test rewrites.
struct Metering {
    plane: common::ControlPlane,
    clock: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

/// The instant every metering test starts at.
const T0: &str = "2030-01-01T00:00:00Z";

impl Metering {
    /// An ephemeral plane (the history in memory).
    fn start() -> Metering {
        Metering::start_in(tempfile::tempdir().unwrap(), false)
    }

    /// A plane keeping its data, and metering its history, in a data directory of `dir`.
    fn start_in(dir: tempfile::TempDir, persistent: bool) -> Metering {
        Metering::start_with(dir, persistent, &[])
    }

    /// [`Metering::start_in`] with more flags of `opkit up`.
    fn start_with(dir: tempfile::TempDir, persistent: bool, extra: &[&str]) -> Metering {
        let clock = dir.path().join("clock");
        if !clock.exists() {
            std::fs::write(&clock, T0).unwrap();
        }
        let data = dir.path().join("data");
        let mut flags = vec!["--metering", "--metering-clock", clock.to_str().unwrap()];
        if persistent {
            flags.extend(["--data-dir", data.to_str().unwrap()]);
        }
        flags.extend(extra);
        let plane = common::ControlPlane::start_with(&flags);
        let m = Metering {
            plane,
            clock,
            _dir: dir,
        };
        m.apply(
            "apiVersion: metering.opkit.dev/v1\nkind: ReportDataSource\nmetadata: {name: history}\n\
             spec: {history: {}}\n",
        );
        m
    }

    /// Kills `opkit up` (no clean shutdown) and starts it again on the same data directory
    /// and clock.
    fn restart(self) -> Metering {
        let Metering { plane, _dir, .. } = self;
        drop(plane);
        Metering::start_in(_dir, true)
    }

    /// Waits until the history's status field `field` reads `value`.
    fn wait_history(&self, field: &str, value: &str) {
        common::eventually(&format!("the history's {field} to be {value}"), || {
            let out = self.plane.kubectl(&[
                "get",
                "reportdatasource",
                "history",
                "-o",
                &format!("jsonpath={{.status.history.{field}}}"),
            ]);
            if out.stdout.trim() == value {
                Ok(())
            } else {
                Err(out.to_string())
            }
        });
    }

    /// The history's status field `field` (a count), once the status has one.
    fn history_count(&self, field: &str) -> u64 {
        common::eventually(&format!("the history's {field}"), || {
            let out = self.plane.kubectl(&[
                "get",
                "reportdatasource",
                "history",
                "-o",
                &format!("jsonpath={{.status.history.{field}}}"),
            ]);
            out.stdout
                .trim()
                .parse::<u64>()
                .map_err(|_| out.to_string())
        })
    }

    /// Waits until the checkpoint holds everything the history recorded.
    fn wait_checkpointed(&self) {
        common::eventually("the history's checkpoint to catch up", || {
            let out = self.plane.kubectl(&[
                "get",
                "reportdatasource",
                "history",
                "-o",
                "jsonpath={.status.history.revision} {.status.history.checkpointedRevision}",
            ]);
            match out.stdout.split_once(' ') {
                Some((a, b)) if a == b && !a.is_empty() => Ok(()),
                _ => Err(out.to_string()),
            }
        });
    }

    /// Moves the clock to `seconds` after [`T0`] (written whole: never read half-written).
    fn set_clock(&self, seconds: i64) {
        let at: jiff::Timestamp =
            T0.parse::<jiff::Timestamp>().unwrap() + jiff::SignedDuration::from_secs(seconds);
        let tmp = self.clock.with_extension("tmp");
        std::fs::write(&tmp, at.to_string()).unwrap();
        std::fs::rename(&tmp, &self.clock).unwrap();
    }

    fn apply(&self, yaml: &str) {
        let out = self.plane.kubectl_stdin(&["apply", "-f", "-"], yaml);
        assert!(out.success(), "{out}\n{}", self.plane.server_log());
    }

    /// Waits until the history has seen `n` live pods (what the `history` data source counts).
    fn wait_live_pods(&self, n: u64) {
        self.wait_history("livePods", &n.to_string());
    }

    /// Waits until Report `name`'s condition `type_` has `reason`; its message.
    fn wait_condition(&self, name: &str, type_: &str, reason: &str) -> String {
        common::eventually(&format!("Report {name} to be {type_} ({reason})"), || {
            let path = format!(
                "jsonpath={{.status.conditions[?(@.type==\"{type_}\")].reason}}|{{.status.conditions[?(@.type==\"{type_}\")].message}}"
            );
            let out = self.plane.kubectl(&["get", "report", name, "-o", &path]);
            match out.stdout.split_once('|') {
                Some((r, message)) if r == reason => Ok(message.to_owned()),
                _ => Err(out.to_string()),
            }
        })
    }

    fn opkit_report(&self, args: &[&str]) -> Output {
        let mut cmd = opkit();
        cmd.arg("report")
            .args(args)
            .arg("--kubeconfig")
            .arg(&self.plane.kubeconfig);
        run(cmd, None, COMMAND_TIMEOUT)
    }

    /// The address of the report API (and of the metering controllers' `/metrics`).
    fn addr(&self) -> String {
        let log = self.plane.server_log();
        let url = log
            .lines()
            .find_map(|l| l.strip_prefix("[stdout] serving metering reports at "))
            .expect("opkit up --metering prints where it serves reports");
        let base = url.strip_suffix("/api/v1/reports/get").unwrap();
        base.strip_prefix("http://").unwrap().to_owned()
    }

    /// `GET <report API><path_and_query>` over plain HTTP: status line and body.
    fn http_get(&self, path_and_query: &str) -> (String, String) {
        http_get(&self.addr(), path_and_query).unwrap()
    }

    /// Waits until ReportDataSource `name` has a Ready condition; its status, reason and message.
    fn wait_source_ready(&self, name: &str, status: &str) -> (String, String) {
        common::eventually(
            &format!("ReportDataSource {name} to be Ready={status}"),
            || {
                let out = self.plane.kubectl(&[
                "get",
                "reportdatasource",
                name,
                "-o",
                "jsonpath={.status.conditions[0].status}|{.status.conditions[0].reason}|{.status.conditions[0].message}",
            ]);
                let mut parts = out.stdout.splitn(3, '|');
                match (parts.next(), parts.next(), parts.next()) {
                    (Some(s), Some(reason), Some(message)) if s == status => {
                        Ok((reason.to_owned(), message.to_owned()))
                    }
                    _ => Err(out.to_string()),
                }
            },
        )
    }
}

/// `GET http://<addr><path_and_query>`: status line and body.
fn http_get(addr: &str, path_and_query: &str) -> Result<(String, String), String> {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).map_err(|e| format!("{addr}: {e}"))?;
    write!(
        stream,
        "GET {path_and_query} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .map_err(|e| e.to_string())?;
    let mut response = String::new();
    stream
        .read_to_string(&mut response)
        .map_err(|e| e.to_string())?;
    let (head, body) = response
        .split_once("\r\n\r\n")
        .ok_or_else(|| format!("no end of headers in {response:?}"))?;
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        unchunk(body)
    } else {
        body.to_owned()
    };
    Ok((head.lines().next().unwrap_or_default().to_owned(), body))
}

/// The body of a chunked HTTP/1.1 response.
fn unchunk(mut rest: &str) -> String {
    let mut body = String::new();
    while let Some((size, after)) = rest.split_once("\r\n") {
        let size = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if size == 0 {
            break;
        }
        body.push_str(&after[..size]);
        rest = after[size..].trim_start_matches("\r\n");
    }
    body
}

/// `s` percent-encoded for a URL's query.
fn url_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Where Debian's prometheus package puts the server.
const PROMETHEUS_BIN: &str = "/usr/bin/prometheus";

/// A Prometheus process of the test's own: a free port on 127.0.0.1, storage in a temporary
/// directory, scraping `http://<target>/metrics` every second as job `opkit`; killed when
/// dropped.
struct Prometheus {
    addr: String,
    process: Child,
    dir: tempfile::TempDir,
    https: bool,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.process.kill();
        let _ = self.process.wait();
    }
}

impl Prometheus {
    fn start(target: &str) -> Prometheus {
        Prometheus::start_with(target, None)
    }

    /// [`Prometheus::start`] serving HTTPS with the PEM certificate and key `tls` (Prometheus'
    /// `--web.config.file` with `tls_server_config`).
    fn start_with(target: &str, tls: Option<(&str, &str)>) -> Prometheus {
        assert!(
            std::path::Path::new(PROMETHEUS_BIN).is_file(),
            "{PROMETHEUS_BIN} is missing: run `scripts/start-prometheus.sh --install-only` at the repository root (installs Debian's prometheus package)"
        );
        let dir = tempfile::tempdir().unwrap();
        let port = common::free_port();
        let addr = format!("127.0.0.1:{port}");
        let config = dir.path().join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global: {{scrape_interval: 1s, evaluation_interval: 1s}}\n\
                 scrape_configs:\n- job_name: opkit\n  static_configs:\n  - targets: ['{target}']\n"
            ),
        )
        .unwrap();
        let log = std::fs::File::create(dir.path().join("prometheus.log")).unwrap();
        let mut command = Command::new(PROMETHEUS_BIN);
        if let Some((cert, key)) = tls {
            let (cert_file, key_file) = (dir.path().join("tls.crt"), dir.path().join("tls.key"));
            std::fs::write(&cert_file, cert).unwrap();
            std::fs::write(&key_file, key).unwrap();
            let web = dir.path().join("web.yml");
            std::fs::write(
                &web,
                format!(
                    "tls_server_config:\n  cert_file: {}\n  key_file: {}\n",
                    cert_file.display(),
                    key_file.display()
                ),
            )
            .unwrap();
            command.arg(format!("--web.config.file={}", web.display()));
        }
        let process = command
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address={addr}"))
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("prometheus starts");
        let https = tls.is_some();
        let mut prometheus = Prometheus {
            addr,
            process,
            dir,
            https,
        };
        common::eventually("Prometheus to answer /-/ready", || {
            let log = std::fs::read_to_string(prometheus.dir.path().join("prometheus.log"))
                .unwrap_or_default();
            if let Ok(Some(status)) = prometheus.process.try_wait() {
                panic!("prometheus exited ({status}):\n{log}");
            }
            if https {
                // The tests have no HTTPS client of their own: Prometheus says when it serves.
                return log
                    .contains("Server is ready to receive web requests.")
                    .then_some(())
                    .ok_or(log);
            }
            match http_get(&prometheus.addr, "/-/ready") {
                Ok((status, _)) if status.contains(" 200 ") => Ok(()),
                Ok((status, body)) => Err(format!("{status} {body}")),
                Err(e) => Err(e),
            }
        });
        prometheus
    }

    fn url(&self) -> String {
        let scheme = if self.https { "https" } else { "http" };
        format!("{scheme}://{}", self.addr)
    }

    /// The raw samples of `up{job="opkit"}` of the last hour, as Unix milliseconds.
    fn up_samples(&self) -> Result<Vec<i64>, String> {
        let query = url_encode(r#"up{job="opkit"}[1h]"#);
        let (status, body) = http_get(&self.addr, &format!("/api/v1/query?query={query}"))?;
        let answer: serde_json::Value =
            serde_json::from_str(&body).map_err(|e| format!("{status}: {e}: {body}"))?;
        let values = answer["data"]["result"][0]["values"]
            .as_array()
            .ok_or_else(|| format!("no samples yet: {body}"))?;
        Ok(values
            .iter()
            .filter(|v| v[1] == "1")
            .map(|v| (v[0].as_f64().unwrap() * 1000.0).round() as i64)
            .collect())
    }
}

const MEMCACHED_CRD: &str = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: memcacheds.cache.example.com}
spec:
  group: cache.example.com
  names: {kind: Memcached, plural: memcacheds, singular: memcached, listKind: MemcachedList}
  scope: Namespaced
  versions:
  - name: v1alpha1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
";

/// A Deployment of `replicas` pods requesting 100m CPU and 64 MiB each, owned by the custom
/// resource `owner` (kind, name, uid) if given.
fn deployment(name: &str, replicas: u32, owner: Option<(&str, &str, &str)>) -> String {
    let owner = owner.map_or(String::new(), |(kind, cr, uid)| {
        format!(
            "  ownerReferences:\n  - {{apiVersion: cache.example.com/v1alpha1, kind: {kind}, \
             name: {cr}, uid: {uid}, controller: true}}\n"
        )
    });
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\n{owner}spec:\n  \
         replicas: {replicas}\n  selector: {{matchLabels: {{app: {name}}}}}\n  template:\n    \
         metadata: {{labels: {{app: {name}}}}}\n    spec:\n      containers:\n      - name: main\n        \
         image: memcached:1.6\n        resources: {{requests: {{cpu: 100m, memory: 64Mi}}}}\n"
    )
}

#[test]
fn a_memcached_scaled_one_three_zero_over_a_controlled_clock_reports_its_exact_core_seconds() {
    let m = Metering::start();
    m.apply(MEMCACHED_CRD);
    m.plane.kubectl_ok(&[
        "wait",
        "--for=condition=Established",
        "crd/memcacheds.cache.example.com",
    ]);
    m.apply("apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata: {name: cache1}\n");
    let uid = m.plane.kubectl_ok(&[
        "get",
        "memcached",
        "cache1",
        "-o",
        "jsonpath={.metadata.uid}",
    ]);
    let owner = Some(("Memcached", "cache1", uid.trim()));
    // At T0 one pod; at T0+100 s three; at T0+300 s none: 0.1 core × (300 + 200 + 200) s.
    m.apply(&deployment("cache1-memcached", 1, owner));
    m.wait_live_pods(1);
    m.set_clock(100);
    m.plane
        .kubectl_ok(&["scale", "deployment", "cache1-memcached", "--replicas=3"]);
    m.wait_live_pods(3);
    m.set_clock(300);
    m.plane
        .kubectl_ok(&["scale", "deployment", "cache1-memcached", "--replicas=0"]);
    m.wait_live_pods(0);
    m.set_clock(600);
    for (name, query) in [
        ("cpu", "memcached-cpu-request"),
        ("objects", "memcached-objects"),
    ] {
        m.apply(&format!(
            "apiVersion: metering.opkit.dev/v1\nkind: Report\nmetadata: {{name: {name}}}\n\
             spec: {{query: {query}, reportingStart: '{T0}', reportingEnd: '2030-01-01T00:10:00Z'}}\n"
        ));
        m.wait_condition(name, "Running", "ReportFinished");
    }
    let out = m.opkit_report(&["get", "cpu"]);
    assert!(out.success(), "{out}");
    assert_eq!(
        out.stdout,
        "period_start,period_end,namespace,name,pods,cpu_request_core_seconds\n\
         2030-01-01 00:00:00 +0000 UTC,2030-01-01 00:10:00 +0000 UTC,default,cache1,3,70.000000\n"
    );
    // The objects it managed: its Deployment and ReplicaSet for the whole 600 s, three pods.
    let out = m.opkit_report(&["get", "objects", "--format", "tab"]);
    let rows: Vec<Vec<&str>> = out
        .stdout
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    let tail: Vec<&[&str]> = rows.iter().skip(1).map(|r| &r[r.len() - 3..]).collect();
    assert_eq!(
        tail,
        [
            &["Deployment", "1", "600.000000"][..],
            &["Pod", "3", "700.000000"],
            &["ReplicaSet", "1", "600.000000"]
        ],
        "{out}"
    );
    let (status, body) = m.http_get("/api/v1/reports/get?name=cpu&namespace=default&format=json");
    assert_eq!(status, "HTTP/1.1 200 OK");
    let rows: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(rows[0]["cpu_request_core_seconds"], 70.0, "{body}");
    assert_eq!(rows[0]["period_start"], T0, "{body}");
    assert!(
        rows[0].get("cpu_request_core_seconds_cost").is_none(),
        "{body}"
    );

    // The same report with a rate card: 70 core-seconds at 36 per core-hour cost 0.7.
    let priced = |name: &str, end: &str, card: &str| {
        format!(
            "apiVersion: metering.opkit.dev/v1\nkind: Report\nmetadata: {{name: {name}}}\n\
             spec: {{query: memcached-cpu-request, reportingStart: '{T0}', \
             reportingEnd: '{end}', rateCard: {card}}}\n"
        )
    };
    let ended = "2030-01-01T00:10:00Z";
    m.apply(&priced(
        "cpu-cost",
        ended,
        "{cpuCoreHour: 36, memoryGiBHour: 0.5}",
    ));
    m.wait_condition("cpu-cost", "Running", "ReportFinished");
    let out = m.opkit_report(&["get", "cpu-cost"]);
    assert!(out.success(), "{out}");
    assert_eq!(
        out.stdout,
        "period_start,period_end,namespace,name,pods,cpu_request_core_seconds,cpu_request_core_seconds_cost\n\
         2030-01-01 00:00:00 +0000 UTC,2030-01-01 00:10:00 +0000 UTC,default,cache1,3,70.000000,0.700000\n"
    );
    let out = m.opkit_report(&["get", "cpu-cost", "--format", "tab"]);
    let header: Vec<&str> = out
        .stdout
        .lines()
        .next()
        .unwrap()
        .split_whitespace()
        .collect();
    assert_eq!(
        header.last(),
        Some(&"cpu_request_core_seconds_cost"),
        "{out}"
    );
    let (status, body) =
        m.http_get("/api/v1/reports/get?name=cpu-cost&namespace=default&format=json");
    assert_eq!(status, "HTTP/1.1 200 OK");
    let rows: serde_json::Value = serde_json::from_str(&body).unwrap();
    let cost = rows[0]["cpu_request_core_seconds_cost"].as_f64();
    assert!(cost.is_some_and(|c| (c - 0.7).abs() < 1e-9), "{body}");
    let (_, csv) = m.http_get("/api/v1/reports/get?name=cpu-cost&namespace=default&format=csv");
    assert!(csv.ends_with(",70.000000,0.700000\n"), "{csv}");

    // A card that prices none of the query's columns fails the report at once (its period
    // has not ended), saying which columns the query has.
    m.apply(&priced(
        "storage-only",
        "2030-01-02T00:00:00Z",
        "{storageGiBMonth: 0.1}",
    ));
    let message = m.wait_condition("storage-only", "Failed", "GenerateReportFailed");
    assert!(
        message.starts_with(
            "spec.rateCard prices no column of ReportQuery \"memcached-cpu-request\" \
             (cpuCoreHour prices cpu_core_seconds columns, memoryGiBHour memory byte_seconds, \
             storageGiBMonth storage byte_seconds; the query's columns: period_start"
        ) && message.ends_with(", cpu_request_core_seconds (cpu_core_seconds))"),
        "{message}"
    );
    let (status, _) = m.http_get("/api/v1/reports/get?name=storage-only&namespace=default");
    assert_eq!(status, "HTTP/1.1 404 Not Found");
    // A negative rate or an empty card never reaches the controller: the CRD refuses them.
    for (card, says) in [
        ("{cpuCoreHour: -1}", "cpuCoreHour"),
        ("{}", "a rate card needs at least one of cpuCoreHour"),
    ] {
        let out = m
            .plane
            .kubectl_stdin(&["apply", "-f", "-"], &priced("refused", ended, card));
        assert!(!out.success() && out.stderr.contains(says), "{card}: {out}");
    }

    // Charged from readiness: a pod of cache1 created at T0+600 s that the simulated kubelet
    // keeps unready (`never-ready`) until the annotation goes at T0+700 s, deleted at T0+900 s.
    m.apply(&format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: late\n  \
         annotations: {{sim.opkit.dev/behavior: never-ready}}\n  ownerReferences:\n  \
         - {{apiVersion: cache.example.com/v1alpha1, kind: Memcached, name: cache1, uid: {}, \
         controller: true}}\nspec:\n  containers:\n  - name: main\n    image: memcached:1.6\n    \
         resources: {{requests: {{cpu: 100m, memory: 64Mi}}}}\n",
        uid.trim()
    ));
    m.wait_live_pods(1);
    m.plane
        .kubectl_ok(&["wait", "--for=jsonpath={.status.phase}=Running", "pod/late"]);
    assert_eq!(m.history_count("readyPods"), 0);
    m.set_clock(700);
    m.plane
        .kubectl_ok(&["annotate", "pod", "late", "sim.opkit.dev/behavior-"]);
    m.wait_history("readyPods", "1");
    m.set_clock(900);
    m.plane.kubectl_ok(&["delete", "pod", "late"]);
    m.wait_live_pods(0);
    m.set_clock(1200);
    let charged = |name: &str, basis: &str| {
        format!(
            "apiVersion: metering.opkit.dev/v1\nkind: Report\nmetadata: {{name: {name}}}\n\
             spec: {{query: memcached-cpu-request, reportingStart: '{ended}', \
             reportingEnd: '2030-01-01T00:20:00Z'{basis}}}\n"
        )
    };
    // By default from creation (300 s), with `chargeBasis: Ready` from readiness (200 s).
    for (name, basis, core_seconds) in [
        ("late-existence", "", "30.000000"),
        ("late-ready", ", chargeBasis: Ready", "20.000000"),
    ] {
        m.apply(&charged(name, basis));
        m.wait_condition(name, "Running", "ReportFinished");
        let out = m.opkit_report(&["get", name]);
        assert!(out.success(), "{out}");
        assert_eq!(
            out.stdout,
            format!(
                "period_start,period_end,namespace,name,pods,cpu_request_core_seconds\n\
                 2030-01-01 00:10:00 +0000 UTC,2030-01-01 00:20:00 +0000 UTC,default,cache1,1,\
                 {core_seconds}\n"
            ),
            "{name}"
        );
    }
    let out = m.plane.kubectl_stdin(
        &["apply", "-f", "-"],
        &charged("refused", ", chargeBasis: Sometimes"),
    );
    assert!(
        !out.success() && out.stderr.contains("chargeBasis"),
        "{out}"
    );
}

#[test]
fn the_report_api_on_the_api_servers_address_needs_credentials_and_rbac_on_the_report() {
    let m = Metering::start_with(
        tempfile::tempdir().unwrap(),
        false,
        &["--metering-on-apiserver"],
    );
    assert!(
        m.plane.server_log().contains(&format!(
            "serving metering reports at {}/api/v1/reports/get",
            m.plane.url
        )),
        "{}",
        m.plane.server_log()
    );
    m.apply(&deployment("web", 1, None));
    m.wait_live_pods(1);
    m.set_clock(1200);
    let csv = report_now(&m, "ns-cpu", "namespace-cpu-request");
    // One pod of 100m for 1200 s.
    assert!(csv.ends_with(",default,120.000000\n"), "{csv}");
    let path = "/api/v1/reports/get?name=ns-cpu&namespace=default&format=json";
    // Over HTTPS with the kubeconfig's credentials (the admin's), as the listener answers.
    let body = m.plane.kubectl_ok(&["get", "--raw", path]);
    let (status, listener) = m.http_get(path);
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert_eq!(body.trim_end(), listener.trim_end());
    let rows: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(rows[0]["pod_request_cpu_core_seconds"], 120.0, "{body}");
    // The report API's own errors come through unchanged.
    let out = m
        .plane
        .kubectl(&["get", "--raw", "/api/v1/reports/get?name=nope"]);
    assert!(!out.success(), "{out}");
    assert!(
        out.stderr.contains("NotFound") || out.stderr.contains("not found"),
        "{out}"
    );
    // No credentials (a bare user name is no credential): 401, the report is not read.
    let admin = std::fs::read_to_string(&m.plane.kubeconfig).unwrap();
    let nobody = m.plane.write_file(
        "nobody.kubeconfig",
        &admin
            .lines()
            .map(|l| match l.find("token:") {
                Some(i) => format!("{}username: nobody", &l[..i]),
                None => l.to_owned(),
            })
            .collect::<Vec<_>>()
            .join("\n"),
    );
    let out = m.plane.kubectl_with(&nobody, &["get", "--raw", path]);
    assert!(
        !out.success() && out.stderr.contains("Unauthorized"),
        "{out}"
    );
    assert!(!out.stdout.contains("120"), "{out}");
    // A service account is authenticated (and, as upstream's system:discovery role allows
    // every authenticated user, may get /api/*), but reads a report only if it may get the
    // Report.
    m.plane.kubectl_ok(&["create", "serviceaccount", "reader"]);
    let token = m.plane.kubectl_ok(&["create", "token", "reader"]);
    let reader = m.plane.write_file(
        "reader.kubeconfig",
        &common::kubeconfig_with_token(&m.plane.kubeconfig, token.trim()),
    );
    let out = m.plane.kubectl_with(&reader, &["get", "--raw", path]);
    assert!(!out.success() && out.stderr.contains("Forbidden"), "{out}");
    assert!(!out.stdout.contains("120"), "{out}");
    m.plane.kubectl_ok(&[
        "create",
        "role",
        "report-reader",
        "--verb=get",
        "--resource=reports.metering.opkit.dev",
    ]);
    m.plane.kubectl_ok(&[
        "create",
        "rolebinding",
        "report-reader",
        "--role=report-reader",
        "--serviceaccount=default:reader",
    ]);
    let body = common::eventually("the reader to be allowed the report", || {
        let out = m.plane.kubectl_with(&reader, &["get", "--raw", path]);
        if out.success() {
            Ok(out.stdout)
        } else {
            Err(out.to_string())
        }
    });
    assert_eq!(body.trim_end(), listener.trim_end());
}

#[test]
fn a_roll_up_report_waits_for_the_hourly_report_it_reads_then_sums_its_periods() {
    let m = Metering::start();
    // One pod of 100m from T0: 360 core-seconds an hour.
    m.apply(&deployment("web", 1, None));
    m.wait_live_pods(1);
    m.set_clock(7200);
    m.apply(
        "apiVersion: metering.opkit.dev/v1\nkind: ReportQuery\nmetadata: {name: cpu-rollup}\nspec:\n  \
         columns: [{name: period_start, type: timestamp}, {name: period_end, type: timestamp}, \
         {name: namespace, type: varchar}, \
         {name: pod_request_cpu_core_seconds, type: double, unit: cpu_core_seconds}, \
         {name: periods, type: bigint}]\n  \
         inputs: [{name: ReportingStart, type: time}, {name: ReportingEnd, type: time}, \
         {name: HourlyReportName, type: Report}]\n  \
         query: 'SELECT {{ReportingStart}} AS period_start, {{ReportingEnd}} AS period_end, namespace, \
         sum(pod_request_cpu_core_seconds) AS pod_request_cpu_core_seconds, count(*) AS periods \
         FROM {{HourlyReportName}} WHERE period_start >= {{ReportingStart}} \
         AND period_end <= {{ReportingEnd}} GROUP BY namespace'\n",
    );
    m.apply(&format!(
        "apiVersion: metering.opkit.dev/v1\nkind: Report\nmetadata: {{name: two-hours}}\n\
         spec: {{query: cpu-rollup, reportingStart: '{T0}', reportingEnd: '2030-01-01T02:00:00Z', \
         inputs: [{{name: HourlyReportName, value: hourly}}]}}\n"
    ));
    let message = m.wait_condition("two-hours", "Running", "ReportingPeriodWaitingForData");
    assert!(
        message.contains("the Report \"hourly\" it reads does not exist"),
        "{message}"
    );
    m.apply(&format!(
        "apiVersion: metering.opkit.dev/v1\nkind: Report\nmetadata: {{name: hourly}}\n\
         spec: {{query: namespace-cpu-request, reportingStart: '{T0}', \
         reportingEnd: '2030-01-01T02:00:00Z', schedule: {{period: hourly}}}}\n"
    ));
    m.wait_condition("two-hours", "Running", "ReportFinished");
    let out = m.opkit_report(&["get", "hourly"]);
    assert_eq!(out.stdout.lines().count(), 3, "{out}");
    let out = m.opkit_report(&["get", "two-hours"]);
    assert_eq!(
        out.stdout,
        "period_start,period_end,namespace,pod_request_cpu_core_seconds,periods\n\
         2030-01-01 00:00:00 +0000 UTC,2030-01-01 02:00:00 +0000 UTC,default,720.000000,2\n",
        "{out}"
    );
}

#[test]
fn a_scheduled_report_stores_one_result_per_period_and_drops_expired_ones() {
    let m = Metering::start();
    m.apply(&deployment("web", 1, None));
    m.wait_live_pods(1);
    m.apply(&format!(
        "apiVersion: metering.opkit.dev/v1\nkind: Report\nmetadata: {{name: hourly}}\n\
         spec: {{query: namespace-cpu-request, reportingStart: '{T0}', schedule: {{period: hourly}}}}\n"
    ));
    let message = m.wait_condition("hourly", "Running", "Scheduled");
    assert_eq!(message, "the next period ends at 2030-01-01T01:00:00Z");
    m.set_clock(3 * 3600 + 1800);
    common::eventually("three periods to have run", || {
        let out = m.plane.kubectl(&[
            "get",
            "report",
            "hourly",
            "-o",
            "jsonpath={.status.lastReportTime}",
        ]);
        if out.stdout == "2030-01-01T03:00:00Z" {
            Ok(())
        } else {
            Err(out.to_string())
        }
    });
    let message = m.wait_condition("hourly", "Running", "Scheduled");
    assert_eq!(message, "the next period ends at 2030-01-01T04:00:00Z");
    let results = || {
        m.plane
            .kubectl_ok(&[
                "get",
                "configmaps",
                "-l",
                "metering.opkit.dev/report=hourly",
                "-o",
                "name",
            ])
            .lines()
            .count()
    };
    assert_eq!(results(), 3);
    let out = m.opkit_report(&["get", "hourly"]);
    assert_eq!(
        out.stdout,
        "period_start,period_end,namespace,pod_request_cpu_core_seconds\n\
         2030-01-01 00:00:00 +0000 UTC,2030-01-01 01:00:00 +0000 UTC,default,360.000000\n\
         2030-01-01 01:00:00 +0000 UTC,2030-01-01 02:00:00 +0000 UTC,default,360.000000\n\
         2030-01-01 02:00:00 +0000 UTC,2030-01-01 03:00:00 +0000 UTC,default,360.000000\n",
        "{out}"
    );
    let out = m.opkit_report(&["list"]);
    assert!(out.success(), "{out}");
    let line = out.stdout.lines().nth(1).unwrap_or_default().to_owned();
    let cells: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(
        cells,
        [
            "default",
            "hourly",
            "namespace-cpu-request",
            "hourly",
            "Scheduled",
            "False",
            "2030-01-01T03:00:00Z"
        ],
        "{out}"
    );
    // Kept 140 minutes after their period ends: at 03:30 the one that ended at 01:00 goes.
    m.plane.kubectl_ok(&[
        "patch",
        "report",
        "hourly",
        "--type=merge",
        "-p",
        r#"{"spec":{"expiration":"140m"}}"#,
    ]);
    common::eventually("the expired result to be deleted", || results() == 2);
}

#[test]
fn a_bad_query_fails_the_report_with_the_engines_error_and_the_api_says_so() {
    let m = Metering::start();
    m.apply(
        "apiVersion: metering.opkit.dev/v1\nkind: ReportQuery\nmetadata: {name: bad}\nspec:\n  \
         columns: [{name: pod, type: varchar}]\n  \
         inputs: [{name: Src, type: ReportDataSource, default: pod-request-cpu-cores}]\n  \
         query: 'SELECT podd AS pod FROM {{Src}}'\n",
    );
    let report = |name: &str, query: &str| {
        format!(
            "apiVersion: metering.opkit.dev/v1\nkind: Report\nmetadata: {{name: {name}}}\n\
             spec: {{query: {query}, reportingStart: '{T0}', reportingEnd: '2030-01-02T00:00:00Z', \
             runImmediately: true}}\n"
        )
    };
    m.apply(&report("broken", "bad"));
    let message = m.wait_condition("broken", "Failed", "GenerateReportFailed");
    assert_eq!(
        message,
        "period 2030-01-01T00:00:00Z to 2030-01-02T00:00:00Z: running ReportQuery \"bad\": \
         no such column: podd"
    );
    m.apply(&report("unknown", "nope"));
    let message = m.wait_condition("unknown", "Failed", "GenerateReportFailed");
    assert!(
        message.contains("unknown ReportQuery \"nope\""),
        "{message}"
    );
    // A Prometheus data source without a server: it says so, and so does a report that reads it.
    m.apply(
        "apiVersion: metering.opkit.dev/v1\nkind: ReportDataSource\nmetadata: {name: prom}\n\
         spec: {prometheusMetricsImporter: {query: up}}\n",
    );
    let (reason, _) = m.wait_source_ready("prom", "False");
    assert_eq!(reason, "InvalidSpec");
    m.apply(&format!(
        "apiVersion: metering.opkit.dev/v1\nkind: Report\nmetadata: {{name: prom}}\n\
         spec: {{query: pod-cpu-request-raw, reportingStart: '{T0}', reportingEnd: '2030-01-02T00:00:00Z', \
         runImmediately: true, inputs: [{{name: PodRequestCpuCoresDataSourceName, value: prom}}]}}\n"
    ));
    let message = m.wait_condition("prom", "Failed", "GenerateReportFailed");
    assert!(
        message.ends_with("ReportDataSource \"prom\": spec.prometheusMetricsImporter.prometheusConfig.url is required: the Prometheus server's base URL, e.g. http://prometheus.monitoring:9090"),
        "{message}"
    );
    let (status, body) = m.http_get("/api/v1/reports/get?name=broken&namespace=default&format=csv");
    assert_eq!(status, "HTTP/1.1 404 Not Found");
    assert!(
        body.contains("has no results yet") && body.contains("no such column: podd"),
        "{body}"
    );
    let (status, body) = m.http_get("/api/v1/reports/get?name=broken&format=xml");
    assert_eq!(status, "HTTP/1.1 400 Bad Request");
    assert_eq!(
        body,
        r#"{"error":"format must be one of: csv, json or tabular (got \"xml\")"}"#
    );
    let out = m.opkit_report(&["get", "missing"]);
    assert!(!out.success());
    assert!(
        out.stderr
            .contains(r#"no Report "missing" in namespace "default""#),
        "{out}"
    );
}

#[test]
fn a_prometheus_source_imports_range_queries_from_a_real_prometheus_scraping_opkit() {
    let m = Metering::start();
    // Prometheus scrapes `opkit up --metering`'s own /metrics (the metering controllers').
    let prometheus = Prometheus::start(&m.addr());
    let first = common::eventually("Prometheus to scrape opkit's /metrics", || {
        prometheus
            .up_samples()
            .and_then(|s| s.first().copied().ok_or_else(|| "no sample yet".to_owned()))
    });
    // Ten whole seconds after the first scrape: every 1 s step sees `up` = 1.
    let start = jiff::Timestamp::from_second(first.div_euclid(1000) + 2).unwrap();
    let end = start + jiff::SignedDuration::from_secs(10);
    common::eventually("Prometheus to hold a sample after the period", || {
        let samples = prometheus.up_samples()?;
        samples
            .iter()
            .any(|&ms| ms >= end.as_millisecond())
            .then_some(())
            .ok_or_else(|| format!("{samples:?}"))
    });
    // Metering's measured-usage source, as a pod on a node, from a real series.
    let url = prometheus.url();
    m.apply(&format!(
        "apiVersion: metering.opkit.dev/v1\nkind: ReportDataSource\nmetadata: {{name: pod-usage-cpu-cores}}\n\
         spec:\n  prometheusMetricsImporter:\n    resolution: 1s\n    prometheusConfig: {{url: '{url}'}}\n    \
         query: >-\n      label_replace(label_replace(label_replace(up{{job=\"opkit\"}}, \"pod\", \"opkit-0\", \"job\", \".*\"),\n      \
         \"namespace\", \"default\", \"job\", \".*\"), \"node\", \"node-1\", \"job\", \".*\")\n"
    ));
    let (reason, message) = m.wait_source_ready("pod-usage-cpu-cores", "True");
    assert_eq!(reason, "PrometheusQueryAnswered", "{message}");
    m.apply(&format!(
        "apiVersion: metering.opkit.dev/v1\nkind: Report\nmetadata: {{name: usage}}\n\
         spec: {{query: pod-cpu-usage, reportingStart: '{start}', reportingEnd: '{end}', runImmediately: true}}\n"
    ));
    m.wait_condition("usage", "Running", "ReportFinished");
    let out = m.opkit_report(&["get", "usage", "--format", "json"]);
    assert!(out.success(), "{out}");
    let rows: Vec<serde_json::Value> = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(rows.len(), 1, "{out}");
    let row = &rows[0];
    assert_eq!(row["period_start"], start.to_string(), "{out}");
    assert_eq!(row["period_end"], end.to_string(), "{out}");
    assert_eq!(
        (&row["pod"], &row["namespace"], &row["node"]),
        (&"opkit-0".into(), &"default".into(), &"node-1".into()),
        "{out}"
    );
    // Ten 1 s steps of 1 core.
    assert_eq!(row["pod_usage_cpu_core_seconds"], 10.0, "{out}");
    // The runtime's per-object reconcile counters reach Prometheus (what `<kind>-reconciles`
    // imports): the ReportDataSource controller's reconciles of `history`.
    let series = url_encode(
        r#"opkit_object_reconcile_total{controller="reportdatasource-controller",group="metering.opkit.dev",kind="ReportDataSource",namespace="default",name="history",result="success"}"#,
    );
    common::eventually("the per-object reconcile counter in Prometheus", || {
        let (_, body) = http_get(&prometheus.addr, &format!("/api/v1/query?query={series}"))?;
        let answer: serde_json::Value = serde_json::from_str(&body).map_err(|e| e.to_string())?;
        let value = answer["data"]["result"][0]["value"][1]
            .as_str()
            .and_then(|v| v.parse::<f64>().ok());
        value.filter(|v| *v >= 1.0).map(drop).ok_or(body)
    });
    // A query Prometheus refuses: the source says so with Prometheus' words.
    m.apply(&format!(
        "apiVersion: metering.opkit.dev/v1\nkind: ReportDataSource\nmetadata: {{name: broken}}\n\
         spec: {{prometheusMetricsImporter: {{query: 'sum(', prometheusConfig: {{url: '{url}'}}}}}}\n"
    ));
    let (reason, message) = m.wait_source_ready("broken", "False");
    assert_eq!(reason, "PrometheusQueryFailed");
    assert!(
        message.starts_with(&format!(
            "Prometheus at {url} refused query \"sum(\": bad_data: "
        )),
        "{message}"
    );
}

/// A CA and a serving certificate it signs for 127.0.0.1: the CA's PEM, the certificate's and
/// its key's.
fn ca_and_serving_certificate() -> (String, String, String) {
    use rcgen::{
        BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer,
        KeyPair, KeyUsagePurpose,
    };
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "prometheus test CA");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca_params, ca_key);
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(vec!["127.0.0.1".to_owned()]).unwrap();
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let cert = params.signed_by(&key, &issuer).unwrap();
    (ca.pem(), cert.pem(), key.serialize_pem())
}

/// A stand-in for Prometheus over plain HTTP that answers a query (an empty vector) only with
/// `Authorization: Bearer <token>` and 401 otherwise; every Authorization header it got, in
/// order ("" for none).
fn token_checking_server(token: &'static str) -> (String, Arc<Mutex<Vec<String>>>) {
    use std::io::Write;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut authorization = String::new();
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some((name, value)) = line.split_once(':')
                    && name.eq_ignore_ascii_case("authorization")
                {
                    authorization = value.trim().to_owned();
                }
            }
            let (status, body) = if authorization == format!("Bearer {token}") {
                (
                    "200 OK",
                    r#"{"status":"success","data":{"resultType":"vector","result":[]}}"#,
                )
            } else {
                ("401 Unauthorized", "Unauthorized")
            };
            log.lock().unwrap().push(authorization);
            let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
                 Connection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (url, seen)
}

#[test]
fn a_prometheus_source_over_https_trusts_its_configmap_ca_and_sends_its_secret_token() {
    let m = Metering::start();
    let (ca, cert, key) = ca_and_serving_certificate();
    let (other_ca, _, _) = ca_and_serving_certificate();
    let prometheus = Prometheus::start_with(&m.addr(), Some((&cert, &key)));
    let url = prometheus.url();
    assert!(url.starts_with("https://127.0.0.1:"), "{url}");
    for (name, pem) in [("prometheus-ca", &ca), ("other-ca", &other_ca)] {
        m.plane.kubectl_ok(&[
            "create",
            "configmap",
            name,
            &format!("--from-literal=ca.crt={pem}"),
        ]);
    }
    // A constant series as Metering's measured pod usage: 2 cores on pod p, node n.
    let source = |name: &str, url: &str, config: &str| {
        m.apply(&format!(
            "apiVersion: metering.opkit.dev/v1\nkind: ReportDataSource\nmetadata: {{name: {name}}}\n\
             spec:\n  prometheusMetricsImporter:\n    resolution: 1s\n    \
             prometheusConfig: {{url: '{url}'{config}}}\n    query: >-\n      \
             label_replace(label_replace(label_replace(vector(2), \"pod\", \"p\", \"\", \"\"),\n      \
             \"namespace\", \"default\", \"\", \"\"), \"node\", \"n\", \"\", \"\")\n"
        ))
    };
    source(
        "pod-usage-cpu-cores",
        &url,
        ", certificateAuthority: {configMap: {name: prometheus-ca}}",
    );
    let (reason, message) = m.wait_source_ready("pod-usage-cpu-cores", "True");
    assert_eq!(reason, "PrometheusQueryAnswered", "{message}");
    // A report imports over the same connection, priced: 10 steps of 2 cores at 360 per
    // core-hour.
    let end = "2030-01-01T00:00:10Z";
    m.apply(&format!(
        "apiVersion: metering.opkit.dev/v1\nkind: Report\nmetadata: {{name: usage}}\n\
         spec: {{query: pod-cpu-usage, reportingStart: '{T0}', reportingEnd: '{end}', \
         runImmediately: true, rateCard: {{cpuCoreHour: 360}}}}\n"
    ));
    m.wait_condition("usage", "Running", "ReportFinished");
    let out = m.opkit_report(&["get", "usage", "--format", "json"]);
    assert!(out.success(), "{out}");
    let rows: Vec<serde_json::Value> = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(rows.len(), 1, "{out}");
    assert_eq!(rows[0]["pod_usage_cpu_core_seconds"], 20.0, "{out}");
    let cost = rows[0]["pod_usage_cpu_core_seconds_cost"].as_f64();
    assert!(cost.is_some_and(|c| (c - 2.0).abs() < 1e-9), "{out}");

    // Without the CA, with another CA, with a CA that is not there: each says why.
    source("no-ca", &url, "");
    let (reason, message) = m.wait_source_ready("no-ca", "False");
    assert_eq!(reason, "PrometheusQueryFailed", "{message}");
    assert!(
        message.starts_with(&format!("cannot reach Prometheus at {url}: "))
            && message.contains("invalid peer certificate")
            && message.ends_with(
                "(the server's certificate is not signed by a CA this process trusts: set \
                 spec.prometheusMetricsImporter.prometheusConfig.certificateAuthority.configMap \
                 to the CA that signed it)"
            ),
        "{message}"
    );
    source(
        "wrong-ca",
        &url,
        ", certificateAuthority: {configMap: {name: other-ca}}",
    );
    let (reason, message) = m.wait_source_ready("wrong-ca", "False");
    assert_eq!(reason, "PrometheusQueryFailed", "{message}");
    assert!(
        message.contains("invalid peer certificate")
            && message.contains(
                "(the server's certificate is not valid for the CA in ConfigMap \
                 default/other-ca key \"ca.crt\""
            ),
        "{message}"
    );
    source(
        "missing-ca",
        &url,
        ", certificateAuthority: {configMap: {name: nope, filename: prometheus.pem}}",
    );
    let (reason, message) = m.wait_source_ready("missing-ca", "False");
    assert_eq!(reason, "PrometheusConfigUnresolved");
    assert_eq!(
        message,
        "spec.prometheusMetricsImporter.prometheusConfig.certificateAuthority.configMap: \
         ConfigMap default/nope does not exist"
    );
    source(
        "wrong-key",
        &url,
        ", certificateAuthority: {configMap: {name: prometheus-ca, filename: prometheus.pem}}",
    );
    let (_, message) = m.wait_source_ready("wrong-key", "False");
    assert!(
        message.ends_with("ConfigMap default/prometheus-ca has no key \"prometheus.pem\""),
        "{message}"
    );
    // insecureSkipVerify accepts the certificate unverified; the CA needs https.
    source("insecure", &url, ", insecureSkipVerify: true");
    let (reason, message) = m.wait_source_ready("insecure", "True");
    assert_eq!(reason, "PrometheusQueryAnswered", "{message}");
    let http_url = url.replace("https://", "http://");
    source(
        "plain",
        &http_url,
        ", certificateAuthority: {configMap: {name: prometheus-ca}}",
    );
    let (reason, message) = m.wait_source_ready("plain", "False");
    assert_eq!(reason, "InvalidSpec");
    assert!(
        message.ends_with(&format!(
            "certificateAuthority needs an https:// url (got {http_url:?})"
        )),
        "{message}"
    );

    // The bearer token from a Secret reaches the server (which refuses a query without it).
    let (token_url, seen) = token_checking_server("s3cret-token");
    m.plane.kubectl_ok(&[
        "create",
        "secret",
        "generic",
        "prometheus-token",
        "--from-literal=token=s3cret-token\n",
    ]);
    source(
        "with-token",
        &token_url,
        ", auth: {tokenSecret: {name: prometheus-token}}",
    );
    let (reason, message) = m.wait_source_ready("with-token", "True");
    assert_eq!(reason, "PrometheusQueryAnswered", "{message}");
    assert!(
        seen.lock()
            .unwrap()
            .contains(&"Bearer s3cret-token".to_owned()),
        "{:?}",
        seen.lock().unwrap()
    );
    source("without-token", &token_url, "");
    let (reason, message) = m.wait_source_ready("without-token", "False");
    assert_eq!(reason, "PrometheusQueryFailed");
    assert_eq!(
        message,
        format!("Prometheus at {token_url} answered HTTP 401: Unauthorized")
    );
    source(
        "missing-token",
        &token_url,
        ", auth: {tokenSecret: {name: prometheus-token, key: bearer}}",
    );
    let (reason, message) = m.wait_source_ready("missing-token", "False");
    assert_eq!(reason, "PrometheusConfigUnresolved");
    assert_eq!(
        message,
        "spec.prometheusMetricsImporter.prometheusConfig.auth.tokenSecret: \
         Secret default/prometheus-token has no key \"bearer\""
    );
    // No token in any status or report message.
    let out = m.plane.kubectl(&["get", "reportdatasources", "-o", "yaml"]);
    assert!(!out.stdout.contains("s3cret"), "{out}");
}

const CLAIM: &str = "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: data}\nspec:\n  \
    accessModes: [ReadWriteOnce]\n  volumeName: pv-1\n  storageClassName: fast\n  \
    resources: {requests: {storage: 1Gi}}\n";

/// One report over T0..T0+20m, run at once; its csv.
fn report_now(m: &Metering, name: &str, query: &str) -> String {
    m.apply(&format!(
        "apiVersion: metering.opkit.dev/v1\nkind: Report\nmetadata: {{name: {name}}}\n\
         spec: {{query: {query}, reportingStart: '{T0}', reportingEnd: '2030-01-01T00:20:00Z'}}\n"
    ));
    m.wait_condition(name, "Running", "ReportFinished");
    let out = m.opkit_report(&["get", name]);
    assert!(out.success(), "{out}");
    out.stdout
}

#[test]
fn the_history_survives_a_killed_opkit_up_and_reports_after_the_restart_equal_those_before() {
    let m = Metering::start_in(tempfile::tempdir().unwrap(), true);
    // A pod of 100m and a bound claim of 1 GiB from T0, both gone at T0+600 s.
    m.apply(&deployment("web", 1, None));
    m.apply(CLAIM);
    m.wait_live_pods(1);
    // Objects the plane creates itself (a namespace's root CA ConfigMap…) may be recorded at
    // any time, so count deletions (objects ever seen minus live ones), which only the test
    // makes: the claim's is the one awaited.
    let deleted = || {
        let out = m.plane.kubectl(&[
            "get",
            "reportdatasource",
            "history",
            "-o",
            "jsonpath={.status.history.objects} {.status.history.liveObjects}",
        ]);
        let counts: Vec<u64> = out
            .stdout
            .split_whitespace()
            .filter_map(|n| n.parse().ok())
            .collect();
        match counts[..] {
            [all, live] => Ok(all - live),
            _ => Err(out.to_string()),
        }
    };
    let before = common::eventually("the history's counts", deleted);
    m.set_clock(600);
    m.plane
        .kubectl_ok(&["scale", "deployment", "web", "--replicas=0"]);
    m.plane.kubectl_ok(&["delete", "pvc", "data"]);
    m.wait_live_pods(0);
    common::eventually("the claim's deletion in the history", || {
        deleted().and_then(|n| {
            if n == before + 1 {
                Ok(())
            } else {
                Err(format!("{n} deleted objects, {before} before"))
            }
        })
    });
    m.set_clock(1200);
    let cpu = report_now(&m, "cpu-before", "namespace-cpu-request");
    assert!(cpu.ends_with(",default,60.000000\n"), "{cpu}");
    let claims = report_now(&m, "pvc-before", "persistentvolumeclaim-request");
    assert!(claims.ends_with(",644245094400.000000\n"), "{claims}");
    m.wait_checkpointed();

    let m = m.restart();
    assert_eq!(report_now(&m, "cpu-after", "namespace-cpu-request"), cpu);
    assert_eq!(
        report_now(&m, "pvc-after", "persistentvolumeclaim-request"),
        claims
    );
}

#[test]
fn node_capacity_reports_integrate_a_node_from_its_creation() {
    let m = Metering::start();
    let live = m.history_count("liveObjects");
    m.set_clock(300);
    m.apply(
        "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nspec: {providerID: 'aws:///us-east-1a/i-0abc'}\n\
         status: {capacity: {cpu: '4', memory: 8Gi}, allocatable: {cpu: 3500m, memory: 7Gi}}\n",
    );
    let more = (live + 1).to_string();
    m.wait_history("liveObjects", &more);
    m.set_clock(1200);
    let cpu = report_now(&m, "node-cpu", "node-cpu-capacity");
    // From T0+300 s to T0+1200 s: 900 s × 4 cores (next to opkit up's own node).
    assert!(cpu.contains(",n1,i-0abc,3600.000000\n"), "{cpu}");
    let cluster = report_now(&m, "cluster-memory", "cluster-memory-capacity");
    // opkit up's node all 1200 s and n1 for 900 s: 1.75 nodes on average.
    assert!(cluster.ends_with(",1.750000\n"), "{cluster}");
}
