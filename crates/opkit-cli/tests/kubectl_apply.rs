//! End-to-end tests of `kubectl apply` — server-side (`--server-side`, conflicts,
//! `--force-conflicts`) and client-side — and of managedFields as kubectl shows them, with the
//! real kubectl v1.35 (installed by `scripts/install-tools.sh`) against `opkit up`.

mod common;

use common::ControlPlane;
use serde_json::Value;

fn path_str(path: &std::path::Path) -> &str {
    path.to_str().expect("temporary paths are UTF-8")
}

fn deployment(replicas: u32, image: &str) -> String {
    format!(
        "apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels:
    app: web
spec:
  replicas: {replicas}
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: app
        image: {image}
"
    )
}

const REPLICAS_ONLY: &str = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 5
";

fn get_json(cp: &ControlPlane, args: &[&str]) -> Value {
    let mut full = vec!["get"];
    full.extend_from_slice(args);
    full.extend_from_slice(&["-o", "json", "--show-managed-fields"]);
    let out = cp.kubectl_ok(&full);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("kubectl printed JSON ({e}):\n{out}"))
}

#[test]
fn server_side_apply_conflict_names_field_and_manager_and_force_conflicts_takes_over() {
    let cp = ControlPlane::start();
    let file = cp.write_file("deployment.yaml", &deployment(2, "nginx:1.27"));
    let out = cp.kubectl_ok(&["apply", "--server-side", "-f", path_str(&file)]);
    assert_eq!(out.trim(), "deployment.apps/web serverside-applied");

    let other = cp.write_file("replicas.yaml", REPLICAS_ONLY);
    let failed = cp.kubectl_fails(&[
        "apply",
        "--server-side",
        "--field-manager=other",
        "-f",
        path_str(&other),
    ]);
    assert!(
        failed
            .stderr
            .contains("Apply failed with 1 conflict: conflict with \"kubectl\": .spec.replicas"),
        "kubectl should name the manager and the field\n{failed}"
    );
    let replicas = cp.kubectl_ok(&["get", "deploy", "web", "-o", "jsonpath={.spec.replicas}"]);
    assert_eq!(replicas.trim(), "2");

    let out = cp.kubectl_ok(&[
        "apply",
        "--server-side",
        "--field-manager=other",
        "--force-conflicts",
        "-f",
        path_str(&other),
    ]);
    assert_eq!(out.trim(), "deployment.apps/web serverside-applied");
    let replicas = cp.kubectl_ok(&["get", "deploy", "web", "-o", "jsonpath={.spec.replicas}"]);
    assert_eq!(replicas.trim(), "5");

    let deploy = get_json(&cp, &["deploy", "web"]);
    let entries = deploy["metadata"]["managedFields"]
        .as_array()
        .unwrap_or_else(|| panic!("managedFields are shown:\n{deploy:#}"));
    let entry = |m: &str| {
        entries
            .iter()
            .find(|e| e["manager"] == m && e["operation"] == "Apply")
            .unwrap_or_else(|| panic!("no Apply entry for {m}: {entries:#?}"))
    };
    assert!(entry("other")["fieldsV1"]["f:spec"]["f:replicas"].is_object());
    assert!(
        entry("kubectl")["fieldsV1"]["f:spec"]
            .get("f:replicas")
            .is_none()
    );
    assert!(entry("kubectl")["fieldsV1"]["f:spec"]["f:template"].is_object());
}

#[test]
fn get_with_show_managed_fields_shows_the_entries_and_hides_them_without() {
    let cp = ControlPlane::start();
    let file = cp.write_file("deployment.yaml", &deployment(1, "nginx:1.27"));
    cp.kubectl_ok(&["apply", "--server-side", "-f", path_str(&file)]);

    let shown = cp.kubectl_ok(&[
        "get",
        "deploy",
        "web",
        "-o",
        "yaml",
        "--show-managed-fields",
    ]);
    for needle in [
        "managedFields:",
        "manager: kubectl",
        "operation: Apply",
        "fieldsType: FieldsV1",
        "f:replicas: {}",
        "k:{\"name\":\"app\"}:",
    ] {
        assert!(shown.contains(needle), "{needle:?} missing from\n{shown}");
    }
    let hidden = cp.kubectl_ok(&["get", "deploy", "web", "-o", "yaml"]);
    assert!(!hidden.contains("managedFields"), "{hidden}");
}

#[test]
fn client_side_apply_of_a_deployment_is_unchanged_then_configured() {
    let cp = ControlPlane::start();
    let file = cp.write_file("deployment.yaml", &deployment(1, "nginx:1.27"));
    let out = cp.kubectl_ok(&["apply", "-f", path_str(&file)]);
    assert_eq!(out.trim(), "deployment.apps/web created");
    let out = cp.kubectl_ok(&["apply", "-f", path_str(&file)]);
    assert_eq!(out.trim(), "deployment.apps/web unchanged");

    let file = cp.write_file("deployment.yaml", &deployment(1, "nginx:1.28"));
    let out = cp.kubectl_ok(&["apply", "-f", path_str(&file)]);
    assert_eq!(out.trim(), "deployment.apps/web configured");
    let image = cp.kubectl_ok(&[
        "get",
        "deploy",
        "web",
        "-o",
        "jsonpath={.spec.template.spec.containers[0].image}",
    ]);
    assert_eq!(image.trim(), "nginx:1.28");

    // Client-side apply records Update entries under kubectl's own manager name.
    let deploy = get_json(&cp, &["deploy", "web"]);
    let entries = deploy["metadata"]["managedFields"].as_array().unwrap();
    let csa = entries
        .iter()
        .find(|e| e["manager"] == "kubectl-client-side-apply")
        .unwrap_or_else(|| panic!("no kubectl-client-side-apply entry: {entries:#?}"));
    assert_eq!(csa["operation"], "Update");
    assert!(
        csa["fieldsV1"]["f:spec"]["f:template"].is_object(),
        "{csa:#}"
    );
}
