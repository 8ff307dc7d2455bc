//! kuttl suites, written by each test into a temporary directory, run by the harness against a
//! real control plane (`TestEnv`, over HTTPS) with the real kubectl (`.tools/bin`, installed by
//! scripts/install-tools.sh) for command steps; chainsaw tests in `chainsaw/`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use opkit_e2e::{Granularity, Harness, Log, Options, Outcome, ReportFormat, TestSuite};
use opkit_testenv::TestEnv;

mod chainsaw;

/// A suite on disk: `files` are (path, contents) under a fresh directory, which is the run's
/// working directory; `bin/kubectl` links the repo's kubectl (first on commands' PATH).
struct Suite {
    dir: tempfile::TempDir,
}

fn kubectl() -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.tools/bin/kubectl");
    assert!(
        path.exists(),
        "kubectl is missing at {}: run scripts/install-tools.sh (or link .tools to a checkout that has it)",
        path.display()
    );
    path.canonicalize().expect("kubectl path")
}

impl Suite {
    fn new(files: &[(&str, &str)]) -> Suite {
        let dir = tempfile::tempdir().expect("temp dir");
        for (path, contents) in files {
            let p = dir.path().join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, contents).unwrap();
        }
        std::fs::create_dir_all(dir.path().join("bin")).unwrap();
        std::os::unix::fs::symlink(kubectl(), dir.path().join("bin/kubectl")).unwrap();
        Suite { dir }
    }

    async fn run(
        &self,
        env: &TestEnv,
        suite: TestSuite,
        format: Option<ReportFormat>,
    ) -> (Outcome, String) {
        let kubeconfig = self.dir.path().join("kubeconfig");
        std::fs::write(&kubeconfig, env.kubeconfig()).unwrap();
        let (log, buffer): (Log, Arc<Mutex<String>>) = Log::buffer();
        let harness = Harness::new(Options {
            suite,
            client: env.client(),
            kubeconfig,
            cwd: self.dir.path().to_path_buf(),
            test_filter: None,
            run_labels: BTreeMap::new(),
            report_format: format,
            report_granularity: Granularity::Step,
            log,
        })
        .expect("valid options");
        let outcome = harness.run().await;
        let out = buffer.lock().unwrap().clone();
        (outcome, out)
    }
}

fn suite(dirs: &[&str]) -> TestSuite {
    TestSuite {
        test_dirs: dirs.iter().map(|d| d.to_string()).collect(),
        timeout: 20,
        ..TestSuite::default()
    }
}

const CM: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  labels: {app: demo}\ndata:\n  a: \"1\"\n  b: \"x\"\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_passing_suite_runs_every_step_kind_and_writes_a_report() {
    let env = TestEnv::start().await.expect("control plane");
    let s = Suite::new(&[
        // Apply (create, then merge-update), partial asserts, errors files.
        ("e2e/apply/00-cm.yaml", CM),
        (
            "e2e/apply/00-assert.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {a: \"1\"}\n",
        ),
        (
            "e2e/apply/01-update.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {a: \"2\"}\n",
        ),
        (
            "e2e/apply/01-assert.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {a: \"2\", b: \"x\"}\n",
        ),
        (
            "e2e/apply/01-errors.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {a: \"1\"}\n",
        ),
        ("e2e/apply/README.md", "ignored by the default ignoreFiles"),
        // Lists in order, an unnamed (label-selected) assert, workloads made Ready.
        (
            "e2e/workload/00-deploy.yaml",
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: 1\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec:\n      containers:\n      - {name: a, image: nginx}\n      - {name: b, image: busybox}\n",
        ),
        (
            "e2e/workload/00-assert.yaml",
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  template:\n    spec:\n      containers:\n      - {name: a}\n      - {name: b, image: busybox}\nstatus: {readyReplicas: 1}\n---\napiVersion: v1\nkind: Pod\nmetadata:\n  labels: {app: web}\nstatus: {phase: Running}\n",
        ),
        // TestStep commands (kubectl with $NAMESPACE, a script), delete with wait.
        (
            "e2e/teststep/00-create.yaml",
            "apiVersion: kuttl.dev/v1beta1\nkind: TestStep\ncommands:\n- command: kubectl create configmap from-cmd --from-literal=k=v -n $NAMESPACE\n- script: test \"$(kubectl get configmap from-cmd -n \"$NAMESPACE\" -o jsonpath='{.data.k}')\" = v\n- command: kubectl label configmap from-cmd x=y\n  namespaced: true\n",
        ),
        (
            "e2e/teststep/00-assert.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: from-cmd, labels: {x: y}}\ndata: {k: v}\n",
        ),
        (
            "e2e/teststep/01-delete.yaml",
            "apiVersion: kuttl.dev/v1beta1\nkind: TestStep\ndelete:\n- apiVersion: v1\n  kind: ConfigMap\n  name: from-cmd\n",
        ),
        (
            "e2e/teststep/01-errors.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: from-cmd}\n",
        ),
        // TestStep.apply/assert files, TestAssert commands and CEL.
        ("e2e/testassert/files/cm.yaml", CM),
        (
            "e2e/testassert/00-files.yaml",
            "apiVersion: kuttl.dev/v1beta1\nkind: TestStep\napply: [files/cm.yaml]\n",
        ),
        (
            "e2e/testassert/00-assert.yaml",
            "apiVersion: kuttl.dev/v1beta1\nkind: TestAssert\ntimeout: 10\ncommands:\n- script: kubectl get configmap cm -n $NAMESPACE\nresourceRefs:\n- {apiVersion: v1, kind: ConfigMap, name: cm, ref: cm}\nassertAll:\n- celExpr: \"cm.data.a == '1'\"\n- celExpr: \"cm.metadata.labels.app == 'demo'\"\nassertAny:\n- celExpr: \"cm.data.b == 'nope'\"\n- celExpr: \"cm.data.b == 'x'\"\n",
        ),
    ]);
    let mut config = suite(&["e2e"]);
    config.report_name = "result".into();
    let (outcome, out) = s.run(&env, config, Some(ReportFormat::Json)).await;
    assert!(outcome.passed(), "the suite failed:\n{out}");
    for test in ["apply", "workload", "teststep", "testassert"] {
        assert!(
            out.contains(&format!("--- PASS: kuttl/harness/{test} (")),
            "{test}:\n{out}"
        );
    }
    assert!(out.contains("| apply/0-cm | ConfigMap:"), "{out}");
    assert!(out.contains(" created"), "{out}");
    assert!(
        out.contains("| apply/1-update | ConfigMap:") && out.contains(" updated"),
        "{out}"
    );
    assert!(
        out.contains("| teststep/1-delete | ConfigMap:") && out.contains("/from-cmd deleted"),
        "{out}"
    );
    assert!(
        out.contains(
            "running command: [kubectl create configmap from-cmd --from-literal=k=v -n kuttl-"
        ),
        "{out}"
    );
    assert!(out.contains("test step completed 1-update"), "{out}");
    assert!(
        !out.contains("README"),
        "README.md is ignored silently:\n{out}"
    );
    assert!(out.contains("events from ns kuttl-"), "{out}");
    let report = outcome.report.expect("a report");
    assert_eq!(report, s.dir.path().join("result.json"));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(json["failures"], 0);
    // setup + steps: apply 3, workload 2, teststep 3, testassert 2.
    assert_eq!(json["tests"], 10, "{json:#}");
    let apply = &json["testsuite"][0]["testsuite"][0];
    assert_eq!(apply["name"], "apply");
    assert_eq!(apply["testcase"][2]["name"], "step 1-update");
    assert_eq!(apply["testcase"][2]["assertions"], 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn failing_suites_fail_with_kuttls_messages_and_a_diff() {
    let env = TestEnv::start().await.expect("control plane");
    let fast = "apiVersion: kuttl.dev/v1beta1\nkind: TestAssert\ntimeout: 1\n";
    let s = Suite::new(&[
        ("e2e/value/00-cm.yaml", CM),
        (
            "e2e/value/00-assert.yaml",
            &format!(
                "{fast}---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: cm}}\ndata: {{a: \"2\", b: \"y\"}}\n"
            ),
        ),
        (
            "e2e/value/01-never.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: never}\n",
        ),
        (
            "e2e/list/00-cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: l}\ndata: {a: \"1\"}\n",
        ),
        (
            "e2e/list/00-assert.yaml",
            &format!(
                "{fast}---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: l\n  ownerReferences: []\n"
            ),
        ),
        ("e2e/typed/00-cm.yaml", CM),
        (
            "e2e/typed/00-assert.yaml",
            &format!(
                "{fast}---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: cm}}\ndata: {{a: 1}}\n"
            ),
        ),
        ("e2e/errors/00-cm.yaml", CM),
        (
            "e2e/errors/00-errors.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  labels: {app: demo}\n",
        ),
        ("e2e/errors/00-assert.yaml", fast),
        (
            "e2e/command/00-fail.yaml",
            "apiVersion: kuttl.dev/v1beta1\nkind: TestStep\ncommands:\n- script: exit 3\n- command: echo never\n",
        ),
        ("e2e/cel/00-cm.yaml", CM),
        (
            "e2e/cel/00-assert.yaml",
            &format!(
                "{fast}resourceRefs:\n- {{apiVersion: v1, kind: ConfigMap, name: cm, ref: cm}}\nassertAll:\n- celExpr: \"cm.data.a == '9'\"\n"
            ),
        ),
        (
            "e2e/load/00-two.yaml",
            "apiVersion: kuttl.dev/v1beta1\nkind: TestStep\n---\napiVersion: kuttl.dev/v1beta1\nkind: TestStep\n",
        ),
        (
            "e2e/missing/00-assert.yaml",
            &format!("{fast}---\napiVersion: v1\nkind: Secret\nmetadata: {{name: nope}}\n"),
        ),
    ]);
    let (outcome, out) = s.run(&env, suite(&["e2e"]), Some(ReportFormat::Xml)).await;
    assert!(!outcome.passed());
    let failed: Vec<&str> = outcome
        .cases
        .iter()
        .filter(|c| c.failed())
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(failed.len(), 8, "{failed:?}\n{out}");
    // A value mismatch: the first in key order, with the diff of expected vs actual.
    assert!(out.contains("    failed in step 0-cm"), "{out}");
    assert!(
        out.contains(": .data.a: value mismatch, expected: 2 != actual: 1"),
        "{out}"
    );
    assert!(out.contains("\n    --- ConfigMap:kuttl-"), "{out}");
    assert!(
        out.contains(
            "        -  a: \"2\"\n        -  b: \"y\"\n        +  a: \"1\"\n        +  b: x\n"
        ),
        "{out}"
    );
    assert!(
        !out.contains("value/1-never"),
        "a failed step stops the test:\n{out}"
    );
    // Lists need the same length; types never match across; errors objects; commands; CEL.
    assert!(
        out.contains(".metadata.ownerReferences: key is missing from map"),
        "{out}"
    );
    assert!(
        out.contains(".data.a: type mismatch: int64 != string"),
        "{out}"
    );
    assert!(
        out.contains("resource /v1, Kind=ConfigMap cm matched error assertion"),
        "{out}"
    );
    assert!(
        out.contains("command \"exit 3\" failed, exit status 3"),
        "{out}"
    );
    assert!(!out.contains("running command: [echo never]"), "{out}");
    assert!(out.contains("not all assertAll expressions evaluated to true: expression \"cm.data.a == '9'\" evaluated to 'false'"), "{out}");
    assert!(out.contains("more than 1 TestStep not allowed"), "{out}");
    assert!(out.contains("secrets \"nope\" not found"), "{out}");
    assert!(out.contains("--- FAIL: kuttl/harness/value ("), "{out}");
    assert!(out.ends_with("FAIL\n"), "{out}");
    let xml = std::fs::read_to_string(outcome.report.expect("a report")).unwrap();
    assert!(xml.contains("failures=\"8\""), "{xml}");
    assert!(
        xml.contains(
            "<failure message=\"failed in step 0-cm\" type=\"\">resource ConfigMap:kuttl-"
        ),
        "{xml}"
    );
    assert!(
        xml.contains("name=\"load\""),
        "a test that does not load is reported:\n{xml}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_shared_suite_namespace_outlives_every_test_and_goes_after_the_last() {
    let env = TestEnv::start().await.expect("control plane");
    let s = Suite::new(&[
        (
            "e2e/quick/00-cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: quick}\n",
        ),
        (
            "e2e/quick/01-marker.yaml",
            "apiVersion: kuttl.dev/v1beta1\nkind: TestStep\ncommands:\n- command: kubectl create configmap quick-started -n default\n",
        ),
        // The slow test waits (on positive signals) until the quick one has run and deleted
        // what it created — it has finished — and then still uses the namespace.
        (
            "e2e/slow/00-wait.yaml",
            "apiVersion: kuttl.dev/v1beta1\nkind: TestStep\ncommands:\n- script: until kubectl get configmap quick-started -n default; do sleep 0.1; done; until ! kubectl get configmap quick -n $NAMESPACE; do sleep 0.1; done\n",
        ),
        (
            "e2e/slow/01-cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: slow}\n",
        ),
        (
            "e2e/slow/01-assert.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: slow, namespace: shared-ns}\n",
        ),
    ]);
    let mut config = suite(&["e2e"]);
    config.namespace = "shared-ns".into();
    let (outcome, out) = s.run(&env, config, None).await;
    assert!(outcome.passed(), "{out}");
    assert_eq!(
        out.matches("Creating namespace \"shared-ns\"").count(),
        1,
        "{out}"
    );
    assert_eq!(
        out.matches("Deleting namespace \"shared-ns\"").count(),
        1,
        "{out}"
    );
    let completed = out
        .find("test step completed 1-cm")
        .expect("the slow test's last step");
    assert!(
        out.find("Deleting namespace \"shared-ns\"").unwrap() > completed,
        "{out}"
    );
    let ns: kube::Api<k8s_openapi::api::core::v1::Namespace> = kube::Api::all(env.client());
    assert!(
        ns.get_opt("shared-ns").await.unwrap().is_none(),
        "deleted after the last test"
    );
}

/// The seeded bug of `opkit test --chaos`'s flag suite (crates/opkit-cli/tests/up.rs), as a
/// shell operator: it marks each request `done` first and writes its output second, and never
/// recomputes a request marked done, so a crash between the two writes loses the output.
const BUGGY_FLAG_OPERATOR: &str = r#"while true; do
  kubectl get configmaps -A -l chaos-demo=request -o jsonpath='{range .items[*]}{.metadata.namespace} {.data.value} {.metadata.annotations.done}{"\n"}{end}' |
  while read -r ns value done; do
    [ "$done" = "true" ] && continue
    kubectl annotate configmap request -n "$ns" done=true --overwrite
    kubectl create configmap output -n "$ns" --from-literal=value="$value"
  done
  sleep 0.2
done
"#;

/// The same bug in a Rust operator that runs as a task of the test process.
async fn buggy_flag_operator(client: kube::Client) {
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
    let requests: Api<ConfigMap> = Api::all(client.clone());
    let selector = ListParams::default().labels("chaos-demo=request");
    loop {
        for request in requests
            .list(&selector)
            .await
            .map(|l| l.items)
            .unwrap_or_default()
        {
            let annotations = request.metadata.annotations.clone().unwrap_or_default();
            if annotations.get("done").map(String::as_str) == Some("true") {
                continue;
            }
            let ns = request.metadata.namespace.clone().unwrap_or_default();
            let api: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
            let done = serde_json::json!({"metadata": {"annotations": {"done": "true"}}});
            let marked = api
                .patch("request", &PatchParams::default(), &Patch::Merge(&done))
                .await;
            if marked.is_err() {
                continue;
            }
            let mut output = ConfigMap::default();
            output.metadata.name = Some("output".into());
            output.data = request.data.clone();
            // The bug: a failed create is never retried (the request is marked done).
            let _ = api.create(&PostParams::default(), &output).await;
        }
        // Its resync period: the loop polls, as the shell operator does.
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

/// The flag suite's test as a Rust workload: a request, then its output and the done mark.
async fn flag_workload(
    t: opkit_e2e::chaos::Workload,
) -> Result<(), opkit_e2e::chaos::WorkloadError> {
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::{Api, PostParams};
    let api: Api<ConfigMap> = Api::namespaced(t.client.clone(), &t.namespace);
    let mut request = ConfigMap::default();
    request.metadata.name = Some("request".into());
    request.metadata.labels = Some([("chaos-demo".to_string(), "request".to_string())].into());
    request.data = Some([("value".to_string(), "42".to_string())].into());
    api.create(&PostParams::default(), &request).await?;
    let timeout = std::time::Duration::from_secs(4);
    opkit_testenv::eventually_within("the output", timeout, || async {
        let output = api.get_opt("output").await.ok().flatten()?;
        let request = api.get_opt("request").await.ok().flatten()?;
        let done = request.metadata.annotations?.get("done").cloned();
        let value = output.data?.get("value").cloned();
        (value.as_deref() == Some("42") && done.as_deref() == Some("true")).then_some(())
    })
    .await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_chaos_campaign_in_cargo_test_finds_the_crash_that_loses_a_shell_operators_output() {
    use opkit_e2e::chaos::{Chaos, FaultKind, Operator};
    let s = Suite::new(&[("operator.sh", BUGGY_FLAG_OPERATOR)]);
    let (log, buffer) = Log::buffer();
    let report = Chaos::new(
        TestEnv::builder().controllers("garbage-collector,namespace"),
        Operator::command_in("sh operator.sh", s.dir.path()),
    )
    .faults(&[FaultKind::Crash])
    .settle(std::time::Duration::from_millis(500))
    .log(log)
    .run("flag", flag_workload)
    .await
    .expect("the campaign runs");
    let out = buffer.lock().unwrap().clone();
    assert_eq!(
        report.runs, 2,
        "a crash after each of the two writes: {out}"
    );
    assert_eq!(report.findings.len(), 1, "{out}");
    let finding = &report.findings[0];
    assert_eq!(finding.plan.to_string(), "flag:crash@1", "{out}");
    assert_eq!(finding.points[0].point, "patch configmaps request");
    let oracles: Vec<&str> = finding.failures.iter().map(|f| f.oracle).collect();
    assert_eq!(
        oracles,
        ["asserts", "end state", "create/delete counts"],
        "{finding:#?}"
    );
    assert!(
        finding.failures[0].details[0]
            .starts_with("the workload panicked: timed out after 4s waiting for the output"),
        "{finding:#?}"
    );
    assert!(
        finding.failures[1]
            .details
            .contains(&"ConfigMap/output: in the reference, missing in this run".to_string()),
        "{finding:#?}"
    );
    assert_eq!(
        finding.replay,
        "Chaos::replay(&\"flag:crash@1\".parse()?, workload)"
    );
    assert!(
        out.contains("chaos: flag:crash@2 (create configmaps output): ok (restarted 1 times, "),
        "{out}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_chaos_replay_over_an_in_process_operator_shrinks_three_faults_to_the_refused_create() {
    use opkit_e2e::chaos::{Chaos, Operator, RunPlan};
    let (log, buffer) = Log::buffer();
    let chaos = Chaos::new(
        TestEnv::builder().controllers("garbage-collector,namespace"),
        Operator::task(buggy_flag_operator),
    )
    .settle(std::time::Duration::from_millis(300))
    .log(log);
    // A refused patch is retried on the next pass and a lost response to the create is
    // harmless; the refused create is never retried.
    let plan: RunPlan = "flag:refuse503@1+lose504@2+refuse409@2".parse().unwrap();
    let report = chaos
        .replay(&plan, flag_workload)
        .await
        .expect("the replay runs");
    let out = buffer.lock().unwrap().clone();
    assert_eq!(report.findings.len(), 1, "{out}");
    let finding = &report.findings[0];
    let shrunk = finding
        .shrunk
        .as_ref()
        .expect("a run of three faults is shrunk");
    assert_eq!(shrunk.plan.to_string(), "flag:refuse409@2", "{out}");
    assert!(!shrunk.cut_short);
    let counts = finding
        .failures
        .iter()
        .find(|f| f.oracle == "create/delete counts")
        .expect("the counts oracle");
    assert_eq!(
        counts.details,
        ["create configmaps $NAMESPACE/output: 1 in the reference, 0 in this run"]
    );
}
