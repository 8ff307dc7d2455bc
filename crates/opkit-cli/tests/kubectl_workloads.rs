//! End-to-end tests of the simulated workload controllers with the real kubectl v1.35
//! (installed by `scripts/install-tools.sh`) against `opkit up`: Deployment rollouts (create,
//! scale, set image, undo, history), StatefulSets with claims, Jobs that complete or fail,
//! Endpoints/EndpointSlices of a Service, and garbage collection on delete.
//!
//! Waiting is done by kubectl itself (`rollout status`, `wait`) or by polling with a deadline.

mod common;

use std::collections::BTreeSet;

use common::{ControlPlane, eventually};
use serde_json::Value;

fn path_str(path: &std::path::Path) -> &str {
    path.to_str().expect("temporary paths are UTF-8")
}

fn get_json(cp: &ControlPlane, args: &[&str]) -> Value {
    let mut full = vec!["get"];
    full.extend_from_slice(args);
    full.extend_from_slice(&["-o", "json"]);
    let out = cp.kubectl_ok(&full);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("kubectl printed JSON ({e}):\n{out}"))
}

fn items(list: &Value) -> Vec<Value> {
    list["items"].as_array().cloned().unwrap_or_default()
}

/// `kubectl create deployment web --image=nginx:1.27 --replicas=3` and its rollout.
fn create_web(cp: &ControlPlane) {
    let out = cp.kubectl_ok(&[
        "create",
        "deployment",
        "web",
        "--image=nginx:1.27",
        "--replicas=3",
    ]);
    assert_eq!(out.trim(), "deployment.apps/web created");
    rollout_status(cp, "deployment/web");
}

fn rollout_status(cp: &ControlPlane, target: &str) -> String {
    let out = cp.kubectl_ok(&["rollout", "status", target, "--timeout=60s"]);
    assert!(
        out.contains(&format!(
            "{} \"{}\" successfully rolled out",
            target.split('/').next().unwrap_or(""),
            target.split('/').nth(1).unwrap_or("")
        )),
        "rollout status of {target} should report success:\n{out}"
    );
    out
}

fn replica_sets(cp: &ControlPlane) -> Vec<Value> {
    items(&get_json(cp, &["replicasets", "-l", "app=web"]))
}

fn image_of(rs: &Value) -> &str {
    rs["spec"]["template"]["spec"]["containers"][0]["image"]
        .as_str()
        .unwrap_or("")
}

fn pod_names(cp: &ControlPlane, selector: &str) -> BTreeSet<String> {
    items(&get_json(cp, &["pods", "-l", selector]))
        .iter()
        .filter_map(|p| p["metadata"]["name"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn create_deployment_then_rollout_status_reports_success() {
    let cp = ControlPlane::start();
    create_web(&cp);
    let deploy = get_json(&cp, &["deployment", "web"]);
    assert_eq!(deploy["status"]["availableReplicas"], 3, "{deploy:#}");
    assert_eq!(deploy["status"]["readyReplicas"], 3, "{deploy:#}");
    assert_eq!(deploy["status"]["updatedReplicas"], 3, "{deploy:#}");
    let pods = items(&get_json(&cp, &["pods", "-l", "app=web"]));
    assert_eq!(pods.len(), 3, "{pods:#?}");
    for pod in &pods {
        assert_eq!(pod["status"]["phase"], "Running", "{pod:#}");
        assert_eq!(pod["spec"]["nodeName"], "opkit-node", "{pod:#}");
    }
}

#[test]
fn scale_deployment_then_rollout_status_has_five_available() {
    let cp = ControlPlane::start();
    create_web(&cp);
    let out = cp.kubectl_ok(&["scale", "deployment/web", "--replicas=5"]);
    assert_eq!(out.trim(), "deployment.apps/web scaled");
    rollout_status(&cp, "deployment/web");
    let available = cp.kubectl_ok(&[
        "get",
        "deployment",
        "web",
        "-o",
        "jsonpath={.status.availableReplicas}",
    ]);
    assert_eq!(available.trim(), "5");
    assert_eq!(pod_names(&cp, "app=web").len(), 5);
}

#[test]
fn set_image_rolls_out_a_new_replica_set_and_scales_the_old_to_zero() {
    let cp = ControlPlane::start();
    create_web(&cp);
    let out = cp.kubectl_ok(&["set", "image", "deployment/web", "nginx=nginx:1.28"]);
    assert_eq!(out.trim(), "deployment.apps/web image updated");
    rollout_status(&cp, "deployment/web");

    let sets = replica_sets(&cp);
    assert_eq!(sets.len(), 2, "{sets:#?}");
    let new = sets
        .iter()
        .find(|rs| image_of(rs) == "nginx:1.28")
        .unwrap_or_else(|| panic!("no ReplicaSet with nginx:1.28: {sets:#?}"));
    let old = sets
        .iter()
        .find(|rs| image_of(rs) == "nginx:1.27")
        .unwrap_or_else(|| panic!("no ReplicaSet with nginx:1.27: {sets:#?}"));
    assert_eq!(new["spec"]["replicas"], 3, "{new:#}");
    assert_eq!(new["status"]["availableReplicas"], 3, "{new:#}");
    assert_eq!(old["spec"]["replicas"], 0, "{old:#}");
    assert_eq!(
        new["metadata"]["annotations"]["deployment.kubernetes.io/revision"],
        "2"
    );

    // The old pods go away; only the new image is left.
    eventually("old pods deleted", || {
        let pods = items(&get_json(&cp, &["pods", "-l", "app=web"]));
        let images: Vec<String> = pods
            .iter()
            .map(|p| {
                p["spec"]["containers"][0]["image"]
                    .as_str()
                    .unwrap_or("")
                    .to_owned()
            })
            .collect();
        if images.len() == 3 && images.iter().all(|i| i == "nginx:1.28") {
            Ok(())
        } else {
            Err(format!("{images:?}"))
        }
    });
}

#[test]
fn rollout_undo_brings_back_the_old_image_and_history_lists_revisions() {
    let cp = ControlPlane::start();
    create_web(&cp);
    cp.kubectl_ok(&["set", "image", "deployment/web", "nginx=nginx:1.28"]);
    rollout_status(&cp, "deployment/web");

    let out = cp.kubectl_ok(&["rollout", "undo", "deployment/web"]);
    assert_eq!(out.trim(), "deployment.apps/web rolled back");
    rollout_status(&cp, "deployment/web");
    let image = cp.kubectl_ok(&[
        "get",
        "deployment",
        "web",
        "-o",
        "jsonpath={.spec.template.spec.containers[0].image}",
    ]);
    assert_eq!(image.trim(), "nginx:1.27");
    let sets = replica_sets(&cp);
    assert_eq!(sets.len(), 2, "the old ReplicaSet is re-adopted: {sets:#?}");
    for rs in &sets {
        let want = if image_of(rs) == "nginx:1.27" { 3 } else { 0 };
        assert_eq!(rs["spec"]["replicas"], want, "{rs:#}");
    }

    let history = cp.kubectl_ok(&["rollout", "history", "deployment/web"]);
    let rows = common::table(&history);
    assert!(
        history.starts_with("deployment.apps/web"),
        "history names the deployment:\n{history}"
    );
    let revisions: Vec<&str> = rows
        .iter()
        .skip_while(|r| r.first().map(String::as_str) != Some("REVISION"))
        .skip(1)
        .filter_map(|r| r.first().map(String::as_str))
        .collect();
    // Revision 1 became revision 3 on rollback.
    assert_eq!(revisions, ["2", "3"], "{history}");
    let detail = cp.kubectl_ok(&["rollout", "history", "deployment/web", "--revision=3"]);
    assert!(detail.contains("nginx:1.27"), "{detail}");
}

const STATEFUL_SET: &str = "apiVersion: v1
kind: Service
metadata:
  name: x
spec:
  clusterIP: None
  selector:
    app: x
  ports:
  - port: 80
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: x
spec:
  serviceName: x
  replicas: 3
  selector:
    matchLabels:
      app: x
  template:
    metadata:
      labels:
        app: x
    spec:
      containers:
      - name: app
        image: nginx:1.27
        volumeMounts:
        - name: data
          mountPath: /data
  volumeClaimTemplates:
  - metadata:
      name: data
    spec:
      accessModes: [ReadWriteOnce]
      resources:
        requests:
          storage: 1Gi
";

#[test]
fn statefulset_with_claims_rolls_out_ordinal_pods_with_bound_claims() {
    let cp = ControlPlane::start();
    let file = cp.write_file("statefulset.yaml", STATEFUL_SET);
    cp.kubectl_ok(&["apply", "-f", path_str(&file)]);
    // The default updateStrategy has `partition: 0`, so kubectl reports a partitioned roll out
    // (as against a real cluster).
    let out = cp.kubectl_ok(&["rollout", "status", "statefulset/x", "--timeout=60s"]);
    assert!(
        out.trim_end()
            .ends_with("partitioned roll out complete: 3 new pods have been updated..."),
        "{out}"
    );
    let ready = cp.kubectl_ok(&[
        "get",
        "statefulset",
        "x",
        "-o",
        "jsonpath={.status.readyReplicas}",
    ]);
    assert_eq!(ready.trim(), "3");

    let pods = pod_names(&cp, "app=x");
    let want: BTreeSet<String> = ["x-0", "x-1", "x-2"].map(String::from).into();
    assert_eq!(pods, want);
    let claims = items(&get_json(&cp, &["pvc"]));
    let mut bound = BTreeSet::new();
    for claim in &claims {
        assert_eq!(claim["status"]["phase"], "Bound", "{claim:#}");
        bound.insert(claim["metadata"]["name"].as_str().unwrap_or("").to_owned());
    }
    let want: BTreeSet<String> = ["data-x-0", "data-x-1", "data-x-2"]
        .map(String::from)
        .into();
    assert_eq!(bound, want);
    let pod = get_json(&cp, &["pod", "x-1"]);
    let volumes = pod["spec"]["volumes"].to_string();
    assert!(volumes.contains("data-x-1"), "{pod:#}");
}

fn job(name: &str, annotations: &str) -> String {
    format!(
        "apiVersion: batch/v1
kind: Job
metadata:
  name: {name}
spec:
  backoffLimit: 1
  template:
    metadata:
      annotations: {annotations}
    spec:
      restartPolicy: Never
      containers:
      - name: job
        image: busybox
"
    )
}

#[test]
fn job_completes_and_kubectl_wait_for_complete_returns() {
    let cp = ControlPlane::start();
    let file = cp.write_file("job.yaml", &job("x", "{}"));
    cp.kubectl_ok(&["apply", "-f", path_str(&file)]);
    let out = cp.kubectl_ok(&["wait", "--for=condition=complete", "job/x", "--timeout=60s"]);
    assert_eq!(out.trim(), "job.batch/x condition met");
    let job = get_json(&cp, &["job", "x"]);
    assert_eq!(job["status"]["succeeded"], 1, "{job:#}");
    assert!(job["status"]["completionTime"].is_string(), "{job:#}");
}

#[test]
fn job_with_fail_annotation_fails_and_kubectl_wait_for_failed_returns() {
    let cp = ControlPlane::start();
    let file = cp.write_file(
        "job.yaml",
        &job(
            "x",
            "{sim.opkit.dev/behavior: fail, sim.opkit.dev/complete-after: 100ms}",
        ),
    );
    cp.kubectl_ok(&["apply", "-f", path_str(&file)]);
    let out = cp.kubectl_ok(&["wait", "--for=condition=failed", "job/x", "--timeout=60s"]);
    assert_eq!(out.trim(), "job.batch/x condition met");
    let job = get_json(&cp, &["job", "x"]);
    let failed = job["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["type"] == "Failed")
        .unwrap_or_else(|| panic!("no Failed condition: {job:#}"));
    assert_eq!(failed["reason"], "BackoffLimitExceeded", "{job:#}");
    // backoffLimit 1: the first pod and one retry.
    assert_eq!(job["status"]["failed"], 2, "{job:#}");
}

#[test]
fn service_selecting_the_deployment_has_three_endpoint_addresses() {
    let cp = ControlPlane::start();
    create_web(&cp);
    cp.kubectl_ok(&["expose", "deployment", "web", "--port=80"]);

    let pod_ips: BTreeSet<String> = items(&get_json(&cp, &["pods", "-l", "app=web"]))
        .iter()
        .filter_map(|p| p["status"]["podIP"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(pod_ips.len(), 3, "{pod_ips:?}");

    let addresses = eventually("Endpoints with 3 addresses", || {
        let out = cp.kubectl(&["get", "endpoints", "web", "-o", "json"]);
        if !out.success() {
            return Err(out.to_string());
        }
        let ep: Value = serde_json::from_str(&out.stdout).map_err(|e| e.to_string())?;
        let ips: BTreeSet<String> = ep["subsets"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|s| s["addresses"].as_array().cloned().unwrap_or_default())
            .filter_map(|a| a["ip"].as_str().map(str::to_owned))
            .collect();
        if ips.len() == 3 {
            Ok(ips)
        } else {
            Err(format!("{ep:#}"))
        }
    });
    assert_eq!(addresses, pod_ips);
    // The table shows them too (kubectl warns that v1 Endpoints are deprecated).
    let table = cp.kubectl_ok(&["get", "endpoints", "web"]);
    let row = common::table(&table)
        .into_iter()
        .find(|r| r.first().map(String::as_str) == Some("web"))
        .unwrap_or_else(|| panic!("no row for web:\n{table}"));
    assert_eq!(row[1].matches(":80").count(), 3, "{table}");

    let slices = items(&get_json(
        &cp,
        &["endpointslices", "-l", "kubernetes.io/service-name=web"],
    ));
    assert_eq!(slices.len(), 1, "{slices:#?}");
    let slice_ips: BTreeSet<String> = slices[0]["endpoints"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|e| e["addresses"].as_array().cloned().unwrap_or_default())
        .filter_map(|a| a.as_str().map(str::to_owned))
        .collect();
    assert_eq!(slice_ips, pod_ips);
    let table = cp.kubectl_ok(&[
        "get",
        "endpointslices",
        "-l",
        "kubernetes.io/service-name=web",
    ]);
    assert!(table.contains("IPv4"), "{table}");
}

#[test]
fn delete_deployment_garbage_collects_its_replica_sets_and_pods() {
    let cp = ControlPlane::start();
    create_web(&cp);
    assert_eq!(replica_sets(&cp).len(), 1);
    let out = cp.kubectl_ok(&["delete", "deployment", "web"]);
    assert!(out.contains("deployment.apps \"web\" deleted"), "{out}");
    eventually("ReplicaSets and pods garbage-collected", || {
        let sets = replica_sets(&cp).len();
        let pods = pod_names(&cp, "app=web");
        if sets == 0 && pods.is_empty() {
            Ok(())
        } else {
            Err(format!("{sets} ReplicaSets, pods {pods:?}"))
        }
    });
}
