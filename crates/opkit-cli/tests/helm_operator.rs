//! `opkit helm-operator run` against `opkit up`, driven by the real kubectl and helm: the
//! generic chart operator's binary entry point installs the `helm create` chart for a custom
//! resource, helm lists the release, deleting the custom resource uninstalls it, and SIGTERM
//! stops the operator cleanly.

mod common;

use std::process::Command;
use std::time::Duration;

use common::{COMMAND_TIMEOUT, ControlPlane, Streaming, eventually, run};

const CRD: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: nginxes.demo.example.com
spec:
  group: demo.example.com
  names: {kind: Nginx, listKind: NginxList, plural: nginxes, singular: nginx}
  scope: Namespaced
  versions:
  - name: v1alpha1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, x-kubernetes-preserve-unknown-fields: true}
          status: {type: object, x-kubernetes-preserve-unknown-fields: true}
"#;

const CR: &str = r#"apiVersion: demo.example.com/v1alpha1
kind: Nginx
metadata:
  name: nginx-sample
spec:
  replicaCount: 2
"#;

fn helm(cp: &ControlPlane, args: &[&str]) -> String {
    let mut cmd = cp.tool_command("helm");
    cmd.args(args).arg("--kubeconfig").arg(&cp.kubeconfig);
    let out = run(cmd, None, COMMAND_TIMEOUT);
    assert!(out.success(), "helm {args:?} failed\n{out}");
    out.stdout
}

#[test]
fn helm_operator_run_serves_a_custom_resource_with_its_chart_until_sigterm() {
    let cp = ControlPlane::start();
    helm(&cp, &["create", "nginx"]);
    let crd = cp.write_file("crd.yaml", CRD);
    cp.kubectl_ok(&["apply", "-f", &crd.display().to_string()]);
    cp.kubectl_ok(&[
        "wait",
        "--for=condition=Established",
        "crd/nginxes.demo.example.com",
    ]);
    // A chart path relative to watches.yaml, and an override from the environment.
    let watches = cp.write_file(
        "watches.yaml",
        "- group: demo.example.com\n  version: v1alpha1\n  kind: Nginx\n  chart: nginx\n  \
         overrideValues:\n    image.tag: $NGINX_TAG\n",
    );
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_opkit"));
    cmd.args(["helm-operator", "run", "--watches-file"])
        .arg(&watches)
        .arg("--kubeconfig")
        .arg(&cp.kubeconfig)
        .args([
            "--metrics-bind-address",
            "0",
            "--health-probe-bind-address",
            "0",
        ])
        .env("NGINX_TAG", "1.27.1")
        .current_dir(cp.dir());
    let mut operator = Streaming::spawn(cmd);

    let cr = cp.write_file("cr.yaml", CR);
    cp.kubectl_ok(&["apply", "-f", &cr.display().to_string()]);
    let jsonpath = "jsonpath={.status.conditions[?(@.type==\"Deployed\")].reason}";
    eventually("Deployed with InstallSuccessful", || {
        let out = cp.kubectl(&["get", "nginx", "nginx-sample", "-o", jsonpath]);
        if out.stdout == "InstallSuccessful" {
            Ok(())
        } else {
            Err(format!("{out}\n--- operator ---\n{}", operator.stderr()))
        }
    });
    let image = cp.kubectl_ok(&[
        "get",
        "deployment",
        "nginx-sample",
        "-o",
        "jsonpath={.spec.template.spec.containers[0].image}:{.spec.replicas}",
    ]);
    assert_eq!(
        image, "nginx:1.27.1:2",
        "the spec and the override reached the chart"
    );
    let list = helm(&cp, &["list"]);
    assert!(
        list.contains("nginx-sample") && list.contains("deployed"),
        "{list}"
    );

    // kubectl delete waits for the finalizer: it returns once the release is uninstalled.
    cp.kubectl_ok(&["delete", "nginx", "nginx-sample", "--timeout=60s"]);
    let list = helm(&cp, &["list", "-q"]);
    assert_eq!(list.trim(), "", "the release is gone");
    let out = cp.kubectl(&["get", "deployment", "nginx-sample"]);
    assert!(!out.success(), "the Deployment is gone\n{out}");

    operator.terminate();
    let status = operator.wait(Duration::from_secs(40));
    assert!(
        status.success(),
        "SIGTERM stops the operator cleanly: {status}\n{}",
        operator.stderr()
    );
}
