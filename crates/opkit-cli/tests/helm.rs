//! The real `helm` v4 against `opkit up`: the chart `helm create` writes (Deployment, Service,
//! ServiceAccount, HPA off, a test pod) is installed, tested, upgraded, rolled back and
//! uninstalled, and the built-in controllers make its Deployment available as a cluster would.

mod common;

use common::{COMMAND_TIMEOUT, ControlPlane, Output, run};
use serde_json::Value;

/// Runs helm against the control plane.
fn helm(cp: &ControlPlane, args: &[&str]) -> Output {
    let mut cmd = cp.tool_command("helm");
    cmd.args(args).arg("--kubeconfig").arg(&cp.kubeconfig);
    run(cmd, None, COMMAND_TIMEOUT)
}

/// Runs helm, failing the test unless it exits 0; returns stdout.
fn helm_ok(cp: &ControlPlane, args: &[&str]) -> String {
    let out = helm(cp, args);
    assert!(
        out.success(),
        "helm should have succeeded\n{out}\n--- server ---\n{}",
        cp.server_log()
    );
    out.stdout
}

/// `helm create NAME` in the control plane's directory: the real tool writes the chart.
fn create_chart(cp: &ControlPlane, name: &str) -> String {
    let mut cmd = cp.tool_command("helm");
    cmd.args(["create", name]);
    let out = run(cmd, None, COMMAND_TIMEOUT);
    assert!(out.success(), "helm create failed\n{out}");
    let chart = cp.dir().join(name);
    assert!(
        chart.join("templates/deployment.yaml").is_file(),
        "helm create wrote no deployment template in {}",
        chart.display()
    );
    chart.display().to_string()
}

fn get_json(cp: &ControlPlane, args: &[&str]) -> Value {
    let mut full = args.to_vec();
    full.extend(["-o", "json"]);
    let out = cp.kubectl_ok(&full);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("kubectl output is not JSON: {e}\n{out}"))
}

fn release_history(cp: &ControlPlane, release: &str) -> Vec<Value> {
    let out = helm_ok(cp, &["history", release, "-o", "json"]);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("helm history is not JSON: {e}\n{out}"))
}

fn deployment_status(cp: &ControlPlane, name: &str) -> (i64, i64, String) {
    let d = get_json(cp, &["get", "deployment", name]);
    let replicas = d["spec"]["replicas"].as_i64().unwrap_or(-1);
    let available = d["status"]["availableReplicas"].as_i64().unwrap_or(0);
    let image = d["spec"]["template"]["spec"]["containers"][0]["image"]
        .as_str()
        .unwrap_or("")
        .to_string();
    (replicas, available, image)
}

#[test]
fn helm_create_chart_installs_tests_upgrades_rolls_back_and_uninstalls_cleanly() {
    let cp = ControlPlane::start();
    let chart = create_chart(&cp, "demo");

    // Install and wait until every resource is ready (helm's watcher-based wait).
    helm_ok(
        &cp,
        &["install", "demo", &chart, "--wait", "--timeout", "60s"],
    );
    let (replicas, available, image) = deployment_status(&cp, "demo");
    assert_eq!((replicas, available), (1, 1), "after install");
    assert!(image.starts_with("nginx:"), "image {image}");
    cp.kubectl_ok(&["get", "service/demo", "serviceaccount/demo"]);
    let hpa = cp.kubectl(&["get", "hpa", "demo"]);
    assert!(!hpa.success(), "the chart's HPA is off by default\n{hpa}");

    // The chart's test pod (wget against the Service) runs to completion.
    let test = helm_ok(&cp, &["test", "demo", "--timeout", "60s"]);
    assert!(test.contains("Succeeded"), "helm test output:\n{test}");

    // Upgrade with changed values: three replicas of another image tag.
    helm_ok(
        &cp,
        &[
            "upgrade",
            "demo",
            &chart,
            "--set",
            "replicaCount=3",
            "--set",
            "image.tag=1.27.0",
            "--wait",
            "--timeout",
            "60s",
        ],
    );
    let (replicas, available, image) = deployment_status(&cp, "demo");
    assert_eq!((replicas, available), (3, 3), "after upgrade");
    assert_eq!(image, "nginx:1.27.0");

    // Roll back to the first revision.
    helm_ok(
        &cp,
        &["rollback", "demo", "1", "--wait", "--timeout", "60s"],
    );
    let (replicas, available, image) = deployment_status(&cp, "demo");
    assert_eq!((replicas, available), (1, 1), "after rollback");
    assert!(!image.ends_with(":1.27.0"), "image after rollback {image}");
    let history = release_history(&cp, "demo");
    let revisions: Vec<i64> = history
        .iter()
        .filter_map(|h| h["revision"].as_i64())
        .collect();
    assert_eq!(revisions, vec![1, 2, 3], "history {history:?}");
    assert_eq!(history[2]["status"], "deployed");

    // Uninstall leaves nothing behind: no workload, no pods, no release secrets.
    helm_ok(&cp, &["uninstall", "demo", "--wait", "--timeout", "60s"]);
    let left = cp.kubectl_ok(&[
        "get",
        "deployments,replicasets,pods,services,serviceaccounts,secrets",
        "-l",
        "app.kubernetes.io/instance=demo",
        "-o",
        "name",
    ]);
    // Helm never deletes a test hook without a `helm.sh/hook-delete-policy` (the chart sets
    // none), on any cluster: the finished test pod is the only thing left.
    assert_eq!(
        left.trim(),
        "pod/demo-test-connection",
        "left after uninstall:\n{left}"
    );
    let secrets = cp.kubectl_ok(&["get", "secrets", "-l", "owner=helm", "-o", "name"]);
    assert!(
        secrets.trim().is_empty(),
        "release secrets left:\n{secrets}"
    );
    let list = helm_ok(&cp, &["list", "-q"]);
    assert!(list.trim().is_empty(), "helm list after uninstall: {list}");
}

#[test]
fn helm_template_rendered_chart_is_accepted_by_server_dry_run() {
    let cp = ControlPlane::start();
    let chart = create_chart(&cp, "dry");
    let rendered = helm_ok(&cp, &["template", "dry", &chart]);
    let out = cp.kubectl_stdin(&["apply", "--dry-run=server", "-f", "-"], &rendered);
    assert!(out.success(), "server dry run refused the chart\n{out}");
    for kind in ["deployment.apps/dry", "service/dry", "serviceaccount/dry"] {
        assert!(out.stdout.contains(kind), "{kind} missing\n{out}");
    }
    let after = cp.kubectl_ok(&["get", "deployments", "-o", "name"]);
    assert!(after.trim().is_empty(), "a dry run stored objects: {after}");
}
