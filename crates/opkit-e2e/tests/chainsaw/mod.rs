//! chainsaw tests (the YAML fixture dirs beside this file) run by the harness on a real control
//! plane (`TestEnv`) with the real kubectl: one suite where everything must pass and clean up,
//! one where every test must fail with the right message.

use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, ListParams, PostParams};
use opkit_e2e::{CaseRecord, ReportFormat};
use opkit_testenv::TestEnv;

use super::{Suite, suite};

fn fixtures(name: &str) -> String {
    let p: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/chainsaw")
        .join(name);
    p.display().to_string()
}

fn case<'a>(cases: &'a [CaseRecord], name: &str) -> &'a CaseRecord {
    cases.iter().find(|c| c.name == name).unwrap_or_else(|| {
        panic!(
            "no case {name} in {:?}",
            cases.iter().map(|c| &c.name).collect::<Vec<_>>()
        )
    })
}

/// Every error of a case (steps and setup), joined.
fn errors(c: &CaseRecord) -> String {
    let mut out: Vec<String> = c.setup_failure.iter().cloned().collect();
    for s in &c.steps {
        if let Some((m, e)) = &s.failure {
            out.push(m.clone());
            out.extend(e.iter().cloned());
        }
    }
    out.extend(c.cleanup_failures.iter().cloned());
    out.join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn chainsaw_tests_run_every_operation_next_to_kuttl_tests_and_clean_up() {
    let env = TestEnv::start().await.expect("control plane");
    let namespaces: Api<Namespace> = Api::all(env.client());
    let kept: Namespace =
        serde_json::from_value(serde_json::json!({"metadata": {"name": "cs-kept"}})).unwrap();
    namespaces
        .create(&PostParams::default(), &kept)
        .await
        .unwrap();
    let s = Suite::new(&[]);
    let dir = fixtures("pass");
    let (outcome, out) = s.run(&env, suite(&[&dir]), Some(ReportFormat::Xml)).await;
    assert!(outcome.passed(), "{out}");
    let names: Vec<&str> = outcome.cases.iter().map(|c| c.name.as_str()).collect();
    // Three chainsaw tests (one skipped) and the kuttl test beside them.
    assert_eq!(names.len(), 4, "{names:?}");
    for n in [
        "resources",
        "existing-namespace",
        "skip-delete",
        "kuttl-neighbour",
    ] {
        assert!(names.contains(&n), "{n} in {names:?}");
    }
    assert!(out.contains("| skipped | skipped (spec.skip)"), "{out}");
    let resources = case(&outcome.cases, "resources");
    let steps: Vec<&str> = resources.steps.iter().map(|s| s.label.as_str()).collect();
    assert_eq!(steps, ["write", "workload", "commands"]);
    assert_eq!(resources.steps[0].assertions, 3);
    // finally and step cleanup ran, catch did not; the helpers ran kubectl.
    assert!(out.contains("FINALLY-MARKER-OK"), "{out}");
    assert!(out.contains("CLEANUP-MARKER-OK"), "{out}");
    assert!(!out.contains("CATCH-MARKER-SHOULD-NOT-RUN"), "{out}");
    assert!(
        out.contains(
            "running command: [kubectl describe deployment.v1.apps web --namespace chainsaw-"
        ),
        "{out}"
    );
    assert!(
        out.contains("running command: [kubectl wait deployment.v1.apps web"),
        "{out}"
    );
    assert!(out.contains("--- PASS: kuttl/harness/resources ("), "{out}");
    // Generated namespaces are gone; the existing one stays, emptied of what the test created
    // but keeping what a skipDelete test made.
    let left = namespaces.list(&ListParams::default()).await.unwrap();
    let generated: Vec<String> = left
        .items
        .iter()
        .filter_map(|n| n.metadata.name.clone())
        .filter(|n| n.starts_with("chainsaw-"))
        .collect();
    assert!(generated.is_empty(), "{generated:?}");
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "cs-kept");
    let names: Vec<String> = cms
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|c| c.metadata.name)
        .collect();
    assert!(names.contains(&"kept".to_string()), "{names:?}");
    assert!(
        !names.contains(&"first".to_string()) && !names.contains(&"second".to_string()),
        "{names:?}"
    );
    // The report holds chainsaw tests as kuttl ones: a testsuite per test, a testcase per step.
    let xml = std::fs::read_to_string(outcome.report.expect("a report")).unwrap();
    assert!(
        xml.contains("<testcase classname=\"resources\" name=\"step workload\""),
        "{xml}"
    );
    assert!(xml.contains("name=\"existing-namespace\""), "{xml}");
    assert!(xml.contains("failures=\"0\""), "{xml}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn failing_chainsaw_tests_name_the_operation_the_path_and_show_a_diff() {
    let env = TestEnv::start().await.expect("control plane");
    let s = Suite::new(&[]);
    let dir = fixtures("fail");
    let (outcome, out) = s.run(&env, suite(&[&dir]), Some(ReportFormat::Xml)).await;
    assert!(!outcome.passed());
    let failed: Vec<&str> = outcome
        .cases
        .iter()
        .filter(|c| c.failed())
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(failed.len(), 5, "{failed:?}\n{out}");

    // An assert that times out: the step, the operation, the path, and the diff.
    let timeout = errors(case(&outcome.cases, "assert-timeout"));
    assert!(timeout.contains("failed in step wrong-data"), "{timeout}");
    assert!(
        timeout.contains("try[2]: assert failed: ConfigMap:chainsaw-"),
        "{timeout}"
    );
    assert!(
        timeout.contains("* data.a: Invalid value: \"1\": Expected value: \"2\""),
        "{timeout}"
    );
    assert!(timeout.contains("-  a: \"2\"\n+  a: \"1\""), "{timeout}");
    assert!(timeout.contains("(gave up after 1s)"), "{timeout}");
    // catch (the step's, then the test's) and finally ran; the rest of the step and the next
    // step did not; a catch operation that fails is reported.
    assert!(out.contains("STEP-CATCH-MARKER-RAN"), "{out}");
    assert!(out.contains("TEST-CATCH-MARKER-RAN"), "{out}");
    assert!(out.contains("FINALLY-MARKER-RAN"), "{out}");
    assert!(
        !out.contains("NEVER-REACHED") && !out.contains("SECOND-STEP-RAN"),
        "{out}"
    );
    assert!(
        timeout.contains("catch[1]: podLogs failed: exit status 1"),
        "{timeout}"
    );
    assert_eq!(case(&outcome.cases, "assert-timeout").steps.len(), 1);

    let error = errors(case(&outcome.cases, "error-found"));
    assert!(
        error.contains("try[1]: error failed: resource ConfigMap:chainsaw-"),
        "{error}"
    );
    assert!(
        error.contains("/present matched the error assertion (v1/ConfigMap)"),
        "{error}"
    );

    let mismatch = errors(case(&outcome.cases, "jmespath-mismatch"));
    assert!(
        mismatch.contains("* data.(length(@)): Invalid value: 2: Expected value: 3"),
        "{mismatch}"
    );

    let unsupported = errors(case(&outcome.cases, "unsupported"));
    assert!(
        unsupported.contains("step step-1: try[0]: operation proxy is not supported by opkit yet"),
        "{unsupported}"
    );

    let script = errors(case(&outcome.cases, "script-fails"));
    assert!(
        script.contains("try[0]: script failed: exit status 3\noops"),
        "{script}"
    );

    assert!(
        out.contains("--- FAIL: kuttl/harness/assert-timeout ("),
        "{out}"
    );
    let xml = std::fs::read_to_string(outcome.report.expect("a report")).unwrap();
    assert!(
        xml.contains("<failure message=\"failed in step wrong-data\""),
        "{xml}"
    );
}
