//! The `opkit up` contract: one ready line, a kubeconfig, clean stop on SIGTERM, a data dir in
//! use refused at once, data kept across restarts; `opkit up --metering` running Reports over
//! the objects' history on a controlled clock.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
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

/// The flag operator with leader election. `BUGGY` checks that it leads once per pass, then
/// marks the request and writes the output: paused between the two past its lease, it wakes up
/// and writes the output although its successor leads. (Its fixed twin, which re-reads the
/// lease before each write, is not in the tests yet: its fault-free run never acted.)
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

/// The storage operator of the unobserved-state suite: it watches ConfigMaps labelled
/// `chaos-demo=db` (`kubectl get -w`, one line per event), creates `<name>-storage` for each and
/// marks it `storage=ready`. `BUGGY` deletes the storage only when it sees the transient state
/// `phase=terminating` the test sets right before deleting the db: a watch that never shows
/// that state leaks the storage. `FIXED` also deletes it on `DELETED`, and collects storage
/// whose db is gone each time its watch (re)starts.
const BUGGY_STORAGE_OPERATOR: &str = r#"while true; do
  kubectl get configmaps -A -l chaos-demo=db -w --output-watch-events -o jsonpath='{.type}|{.object.metadata.namespace}|{.object.metadata.name}|{.object.metadata.annotations.phase}|{.object.metadata.annotations.storage}{"\n"}' |
  while IFS='|' read -r type ns name phase storage; do
    if [ "$phase" = terminating ]; then
      kubectl delete configmap "$name-storage" -n "$ns" --ignore-not-found
    elif [ "$type" != DELETED ] && [ "$storage" != ready ]; then
      kubectl create configmap "$name-storage" -n "$ns" && kubectl annotate configmap "$name" -n "$ns" storage=ready
    fi
  done
  sleep 0.2
done
"#;

const FIXED_STORAGE_OPERATOR: &str = r#"while true; do
  for s in $(kubectl get configmaps -A -o jsonpath='{range .items[*]}{.metadata.namespace}/{.metadata.name}{" "}{end}'); do
    case "$s" in */*-storage) ;; *) continue ;; esac
    ns=${s%%/*}; name=${s#*/}
    kubectl get configmap "${name%-storage}" -n "$ns" >/dev/null 2>&1 || kubectl delete configmap "$name" -n "$ns" --ignore-not-found
  done
  kubectl get configmaps -A -l chaos-demo=db -w --output-watch-events -o jsonpath='{.type}|{.object.metadata.namespace}|{.object.metadata.name}|{.object.metadata.annotations.phase}|{.object.metadata.annotations.storage}{"\n"}' |
  while IFS='|' read -r type ns name phase storage; do
    if [ "$phase" = terminating ] || [ "$type" = DELETED ]; then
      kubectl delete configmap "$name-storage" -n "$ns" --ignore-not-found
    elif [ "$storage" != ready ]; then
      kubectl create configmap "$name-storage" -n "$ns" && kubectl annotate configmap "$name" -n "$ns" storage=ready
    fi
  done
  sleep 0.2
done
"#;

/// A suite whose one test (`storage`) creates a db, waits for its storage, then marks the db
/// terminating and deletes it at once (a transient state), and requires the storage gone.
fn storage_suite(operator: &str) -> tempfile::TempDir {
    kuttl_suite(&[
        (
            "kuttl-test.yaml",
            "apiVersion: kuttl.dev/v1beta1\nkind: TestSuite\ntestDirs: [e2e]\ntimeout: 8\n\
             startControlPlane: true\ncommands:\n- command: sh operator.sh\n  background: true\n",
        ),
        ("operator.sh", operator),
        (
            "e2e/storage/00-db.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: db, labels: {chaos-demo: db}}\n",
        ),
        (
            "e2e/storage/00-assert.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: db-storage}\n---\napiVersion: v1\n\
             kind: ConfigMap\nmetadata: {name: db, annotations: {storage: ready}}\n",
        ),
        (
            "e2e/storage/01-delete.yaml",
            "apiVersion: kuttl.dev/v1beta1\nkind: TestStep\ncommands:\n- script: kubectl annotate \
             configmap db -n $NAMESPACE phase=terminating && kubectl delete configmap db -n \
             $NAMESPACE\n",
        ),
        (
            "e2e/storage/01-errors.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: db-storage}\n",
        ),
    ])
}

#[test]
fn an_unobserved_campaign_catches_storage_deleted_only_on_a_transient_terminating_state() {
    let dir = storage_suite(BUGGY_STORAGE_OPERATOR);
    let out = opkit_chaos(
        dir.path(),
        &["--chaos", "unobserved", "--chaos-settle", "500ms"],
    );
    assert_eq!(out.code, Some(1), "{out}");
    assert!(
        out.stdout.contains(
            "chaos: storage: the operator made 3 writes, 1 watches and got 3 notifications \
             without faults; 2 runs planned"
        ),
        "{out}"
    );
    assert!(
        out.stdout.contains(
            "test storage under unobserved@2\n  fault: hold back the operator's notification 2; \
             its watch expires (410) when a later event of the same object comes, so it never \
             sees that state\n  injection point: notification 2: MODIFIED configmaps db\n"
        ),
        "{out}"
    );
    assert!(
        out.stdout
            .contains("ConfigMap/db-storage: not in the reference, left by this run"),
        "the end-state oracle names the leaked storage: {out}"
    );
    assert!(
        out.stdout.contains(
            "replay: opkit test --chaos-settle 500ms --chaos-replay storage:unobserved@2"
        ),
        "{out}"
    );
}

#[test]
fn unobserved_and_watch_campaigns_pass_the_storage_operator_that_collects_orphans() {
    let dir = storage_suite(FIXED_STORAGE_OPERATOR);
    let out = opkit_chaos(
        dir.path(),
        &["--chaos", "unobserved,watch", "--chaos-settle", "500ms"],
    );
    assert!(out.success(), "{out}");
    for point in [
        "unobserved@1 (MODIFIED configmaps db)",
        "unobserved@2 (MODIFIED configmaps db)",
        "delay@1 (watch configmaps)",
        "expire@1 (MODIFIED configmaps db)",
        "expire@3 (DELETED configmaps db)",
    ] {
        assert!(
            out.stdout
                .contains(&format!("chaos: storage:{point}: ok (")),
            "{point}: {out}"
        );
    }
    // Two unobserved points, a delay of the one watch, an expiry after each notification.
    assert!(out.stdout.contains("chaos: 6 fault runs in"), "{out}");
    assert!(out.stdout.contains(", 0 findings"), "{out}");
}

/// The scale operator of the stale-state suite: it keeps ConfigMaps `app-0`..`app-2` for the
/// ConfigMap `app` (`data.replicas`), reading the spec as an informer cache would, with
/// `resourceVersion=0`. `BUGGY` scales down on that read alone; `FIXED` confirms a destructive
/// scale-down with a read of the latest state first.
const BUGGY_SCALE_OPERATOR: &str = r#"while true; do
  for ns in $(kubectl get configmaps -A -l chaos-demo=app -o jsonpath='{range .items[*]}{.metadata.namespace}{" "}{end}'); do
    want=$(kubectl get --raw "/api/v1/namespaces/$ns/configmaps/app?resourceVersion=0" | sed -n 's/.*"replicas":"\([0-9]*\)".*/\1/p')
    have=$(kubectl get configmaps -n "$ns" -o name)
    for i in 0 1 2; do
      case "$have" in *"configmap/app-$i"*) there=1 ;; *) there=0 ;; esac
      if [ "$i" -lt "${want:-0}" ]; then
        [ $there = 0 ] && kubectl create configmap "app-$i" -n "$ns"
      elif [ $there = 1 ]; then
        kubectl delete configmap "app-$i" -n "$ns"
      fi
    done
  done
  sleep 0.2
done
"#;

const FIXED_SCALE_OPERATOR: &str = r#"while true; do
  for ns in $(kubectl get configmaps -A -l chaos-demo=app -o jsonpath='{range .items[*]}{.metadata.namespace}{" "}{end}'); do
    want=$(kubectl get --raw "/api/v1/namespaces/$ns/configmaps/app?resourceVersion=0" | sed -n 's/.*"replicas":"\([0-9]*\)".*/\1/p')
    have=$(kubectl get configmaps -n "$ns" -o name)
    for i in 0 1 2; do
      case "$have" in *"configmap/app-$i"*) there=1 ;; *) there=0 ;; esac
      if [ "$i" -lt "${want:-0}" ]; then
        [ $there = 0 ] && kubectl create configmap "app-$i" -n "$ns"
      elif [ $there = 1 ] && [ "$i" -ge "$(kubectl get configmap app -n "$ns" -o jsonpath='{.data.replicas}')" ]; then
        kubectl delete configmap "app-$i" -n "$ns"
      fi
    done
  done
  sleep 0.2
done
"#;

/// A suite whose one test (`scale`) scales `app` to 3, down to 1, and up to 3 again.
fn scale_suite(operator: &str) -> tempfile::TempDir {
    let app = |replicas: u8| {
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: app, labels: {{chaos-demo: \
             app}}}}\ndata: {{replicas: \"{replicas}\"}}\n"
        )
    };
    let replicas = |names: &[u8]| {
        names
            .iter()
            .map(|i| format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: app-{i}}}\n"))
            .collect::<Vec<_>>()
            .join("---\n")
    };
    let files = [
        ("e2e/scale/00-app.yaml", app(3)),
        ("e2e/scale/00-assert.yaml", replicas(&[0, 1, 2])),
        ("e2e/scale/01-app.yaml", app(1)),
        ("e2e/scale/01-assert.yaml", replicas(&[0])),
        ("e2e/scale/01-errors.yaml", replicas(&[1, 2])),
        ("e2e/scale/02-app.yaml", app(3)),
        ("e2e/scale/02-assert.yaml", replicas(&[0, 1, 2])),
    ];
    let mut all: Vec<(&str, &str)> = files.iter().map(|(p, c)| (*p, c.as_str())).collect();
    all.push((
        "kuttl-test.yaml",
        "apiVersion: kuttl.dev/v1beta1\nkind: TestSuite\ntestDirs: [e2e]\ntimeout: 8\n\
         startControlPlane: true\ncommands:\n- command: sh operator.sh\n  background: true\n",
    ));
    all.push(("operator.sh", operator));
    kuttl_suite(&all)
}

#[test]
fn a_stale_campaign_catches_a_scale_down_acting_on_a_stale_spec_after_a_restart() {
    let dir = scale_suite(BUGGY_SCALE_OPERATOR);
    let out = opkit_chaos(dir.path(), &["--chaos", "stale", "--chaos-settle", "500ms"]);
    assert_eq!(out.code, Some(1), "{out}");
    assert!(
        out.stdout.contains(
            "chaos: scale: the operator made 7 writes, 0 watches and got 0 notifications \
             without faults; 2 runs planned"
        ),
        "{out}"
    );
    assert!(
        out.stdout.contains(
            "test scale under stale4@6\n  fault: restart the operator after its write 6 \
             committed, and answer its first read of each resource that allows any revision \
             from before its write 4\n  injection point: write 6: create configmaps app-1\n"
        ),
        "{out}"
    );
    assert!(
        out.stdout
            .contains("delete configmaps $NAMESPACE/app-1: 1 in the reference, 2 in this run"),
        "the counts oracle names the second, destructive delete: {out}"
    );
}

#[test]
fn a_stale_campaign_passes_the_scale_operator_that_rereads_before_deleting() {
    let dir = scale_suite(FIXED_SCALE_OPERATOR);
    let out = opkit_chaos(dir.path(), &["--chaos", "stale", "--chaos-settle", "500ms"]);
    assert!(out.success(), "{out}");
    for point in [
        "stale4@6 (create configmaps app-1)",
        "stale5@7 (create configmaps app-2)",
    ] {
        assert!(
            out.stdout
                .contains(&format!("chaos: scale:{point}: ok (restarted 1 times, ")),
            "{point}: {out}"
        );
    }
    assert!(out.stdout.contains(", 0 findings"), "{out}");
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
    fn start() -> Metering {
        let dir = tempfile::tempdir().unwrap();
        let clock = dir.path().join("clock");
        std::fs::write(&clock, T0).unwrap();
        let plane = common::ControlPlane::start_with(&[
            "--metering",
            "--metering-clock",
            clock.to_str().unwrap(),
        ]);
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
        common::eventually(&format!("the history to count {n} live pods"), || {
            let out = self.plane.kubectl(&[
                "get",
                "reportdatasource",
                "history",
                "-o",
                "jsonpath={.status.history.livePods}",
            ]);
            if out.stdout.trim() == n.to_string() {
                Ok(())
            } else {
                Err(out.to_string())
            }
        });
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

    /// `GET <report API><path_and_query>` over plain HTTP: status line and body.
    fn http_get(&self, path_and_query: &str) -> (String, String) {
        use std::io::{Read, Write};
        let log = self.plane.server_log();
        let url = log
            .lines()
            .find_map(|l| l.strip_prefix("[stdout] serving metering reports at "))
            .expect("opkit up --metering prints where it serves reports");
        let base = url.strip_suffix("/api/v1/reports/get").unwrap();
        let addr = base.strip_prefix("http://").unwrap();
        let mut stream = std::net::TcpStream::connect(addr).unwrap();
        write!(
            stream,
            "GET {path_and_query} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        let (head, body) = response.split_once("\r\n\r\n").unwrap();
        (head.lines().next().unwrap().to_owned(), body.to_owned())
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
    // A Prometheus data source is declared but not imported: it says so, and so does a report
    // that reads it.
    m.apply(
        "apiVersion: metering.opkit.dev/v1\nkind: ReportDataSource\nmetadata: {name: prom}\n\
         spec: {prometheusMetricsImporter: {query: up}}\n",
    );
    let ready = common::eventually("the Prometheus data source's Ready condition", || {
        let out = m.plane.kubectl(&[
            "get",
            "reportdatasource",
            "prom",
            "-o",
            "jsonpath={.status.conditions[0].status} {.status.conditions[0].reason}",
        ]);
        (!out.stdout.is_empty()).then_some(out.stdout)
    });
    assert_eq!(ready, "False ImporterNotBuilt");
    m.apply(&format!(
        "apiVersion: metering.opkit.dev/v1\nkind: Report\nmetadata: {{name: prom}}\n\
         spec: {{query: pod-cpu-request-raw, reportingStart: '{T0}', reportingEnd: '2030-01-02T00:00:00Z', \
         runImmediately: true, inputs: [{{name: PodRequestCpuCoresDataSourceName, value: prom}}]}}\n"
    ));
    let message = m.wait_condition("prom", "Failed", "GenerateReportFailed");
    assert!(
        message.ends_with("reads ReportDataSource \"prom\", which uses prometheusMetricsImporter: the Prometheus importer is not built yet"),
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
