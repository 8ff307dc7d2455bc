//! Admission webhooks seen through the real kubectl v1.35 (installed by
//! `scripts/install-tools.sh`) against `opkit up`: a denial shows the webhook's message, a
//! mutating webhook's patch is visible, a webhook's warnings are printed; a
//! ValidatingAdmissionPolicy denies with its message; `kubectl get` of a two-version CRD shows
//! the fields a conversion webhook converted.

mod common;
// The HTTPS webhook server the control plane's own webhook tests use.
#[path = "../../opkit-controlplane/tests/webhook/mod.rs"]
mod webhook;

use common::ControlPlane;
use serde_json::Value;
use webhook::{Reply, WebhookServer};

/// `kubectl apply -f -` of `yaml`; fails the test if kubectl does.
fn apply(plane: &ControlPlane, yaml: &str) {
    let out = plane.kubectl_stdin(&["apply", "-f", "-"], yaml);
    assert!(out.success(), "{out}");
}

/// `kubectl get ARGS -o jsonpath=PATH`.
fn jsonpath(plane: &ControlPlane, args: &[&str], path: &str) -> String {
    let output = format!("jsonpath={path}");
    let mut all = vec!["get"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["-o", &output]);
    plane.kubectl_ok(&all)
}

fn configuration(kind: &str, name: &str, server: &WebhookServer) -> String {
    format!(
        "apiVersion: admissionregistration.k8s.io/v1
kind: {kind}
metadata:
  name: {name}
webhooks:
- name: {name}.opkit.test
  admissionReviewVersions: [v1]
  sideEffects: None
  clientConfig:
    url: {url}
    caBundle: {ca}
  rules:
  - operations: [CREATE, UPDATE]
    apiGroups: ['']
    apiVersions: [v1]
    resources: [configmaps]
",
        url = server.url("/hook"),
        ca = server.ca_bundle(),
    )
}

#[test]
fn kubectl_shows_webhook_denials_warnings_and_mutations() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let mutator = runtime.block_on(WebhookServer::start(|request| {
        match request.pointer("/object/metadata/labels/team") {
            Some(_) => Reply::Allow(vec![]),
            None => Reply::Patch(serde_json::json!([
                {"op": "add", "path": "/metadata/labels", "value": {"team": "platform"}}
            ])),
        }
    }));
    let validator = runtime.block_on(WebhookServer::start(|request| {
        let data = request.pointer("/object/data/mood").and_then(Value::as_str);
        match data {
            Some("grumpy") => Reply::Deny(403, "grumpy configmaps are not welcome".into()),
            _ => Reply::Allow(vec!["configmap looks fine".into()]),
        }
    }));
    let plane = ControlPlane::start();
    apply(
        &plane,
        &configuration("MutatingWebhookConfiguration", "label", &mutator),
    );
    apply(
        &plane,
        &configuration("ValidatingWebhookConfiguration", "mood", &validator),
    );

    let denied = plane.kubectl_fails(&[
        "create",
        "configmap",
        "grumpy",
        "--from-literal=mood=grumpy",
    ]);
    assert!(
        denied.stderr.contains(
            "admission webhook \"mood.opkit.test\" denied the request: grumpy configmaps are not welcome"
        ),
        "{denied}"
    );
    let missing = plane.kubectl(&["get", "configmap", "grumpy"]);
    assert!(
        !missing.success() && missing.stderr.contains("NotFound"),
        "{missing}"
    );

    let created = plane.kubectl(&["create", "configmap", "happy", "--from-literal=mood=happy"]);
    assert!(created.success(), "{created}");
    assert!(
        created.stderr.contains("Warning: configmap looks fine"),
        "{created}"
    );
    let team = jsonpath(&plane, &["configmap", "happy"], "{.metadata.labels.team}");
    assert_eq!(team, "platform");
}

#[test]
fn kubectl_shows_a_validating_admission_policy_denial_with_its_message() {
    let plane = ControlPlane::start();
    apply(
        &plane,
        "apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: replica-limit
spec:
  matchConstraints:
    resourceRules:
    - operations: [CREATE, UPDATE]
      apiGroups: [apps]
      apiVersions: [v1]
      resources: [deployments]
  validations:
  - expression: object.spec.replicas <= 3
    messageExpression: \"'at most 3 replicas, not ' + string(object.spec.replicas)\"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: replica-limit
spec:
  policyName: replica-limit
  validationActions: [Deny]
",
    );
    let denied = plane.kubectl_fails(&[
        "create",
        "deployment",
        "big",
        "--image=nginx",
        "--replicas=5",
    ]);
    assert!(
        denied.stderr.contains(
            "deployments.apps \"big\" is forbidden: ValidatingAdmissionPolicy 'replica-limit' with binding 'replica-limit' denied request: at most 3 replicas, not 5"
        ),
        "{denied}"
    );
    let created = plane.kubectl(&[
        "create",
        "deployment",
        "small",
        "--image=nginx",
        "--replicas=2",
    ]);
    assert!(created.success(), "{created}");
}

/// A conversion webhook for Backends: v1 `spec.host` + `spec.port` <-> v2 `spec.endpoint`;
/// when `refuse` is set, it answers a Failure.
fn convert_backends(request: &Value, refuse: bool) -> Reply {
    if refuse {
        return Reply::Raw(serde_json::json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "response": {"uid": request["uid"], "result": {"status": "Failure", "message": "backend conversion is off"}},
        }));
    }
    let desired = request["desiredAPIVersion"].as_str().unwrap_or("");
    let converted: Vec<Value> = request["objects"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|obj| {
            let mut out = obj.clone();
            let spec = &obj["spec"];
            out["apiVersion"] = desired.into();
            out["spec"] = if desired.ends_with("/v2") {
                serde_json::json!({"endpoint": format!("{}:{}", spec["host"].as_str().unwrap_or(""), spec["port"])})
            } else {
                let endpoint = spec["endpoint"].as_str().unwrap_or(":");
                let (host, port) = endpoint.split_once(':').unwrap_or((endpoint, "0"));
                serde_json::json!({"host": host, "port": port.parse::<i64>().unwrap_or(0)})
            };
            out
        })
        .collect();
    Reply::Raw(serde_json::json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
        "response": {"uid": request["uid"], "convertedObjects": converted, "result": {"status": "Success"}},
    }))
}

#[test]
fn kubectl_gets_a_custom_resource_converted_by_its_conversion_webhook_in_each_version() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let refuse = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let refusing = refuse.clone();
    let server = runtime.block_on(WebhookServer::start(move |request| {
        convert_backends(request, refusing.load(std::sync::atomic::Ordering::SeqCst))
    }));
    let plane = ControlPlane::start();
    let crd = format!(
        "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: backends.conv.opkit.test
spec:
  group: conv.opkit.test
  scope: Namespaced
  names: {{kind: Backend, plural: backends, singular: backend}}
  conversion:
    strategy: Webhook
    webhook:
      conversionReviewVersions: [v1]
      clientConfig:
        url: {url}
        caBundle: {ca}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {{type: object, properties: {{host: {{type: string}}, port: {{type: integer}}}}}}
  - name: v2
    served: true
    storage: false
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {{type: object, properties: {{endpoint: {{type: string}}}}}}
",
        url = server.url("/convert"),
        ca = server.ca_bundle(),
    );
    apply(&plane, &crd);
    plane.kubectl_ok(&[
        "wait",
        "--for",
        "condition=established",
        "crd/backends.conv.opkit.test",
    ]);
    apply(
        &plane,
        "apiVersion: conv.opkit.test/v2
kind: Backend
metadata:
  name: db
spec:
  endpoint: db.internal:5432
",
    );
    let v1 = jsonpath(
        &plane,
        &["backends.v1.conv.opkit.test", "db"],
        "{.apiVersion} {.spec.host} {.spec.port}",
    );
    assert_eq!(v1, "conv.opkit.test/v1 db.internal 5432");
    let v2 = jsonpath(
        &plane,
        &["backends.v2.conv.opkit.test", "db"],
        "{.apiVersion} {.spec.endpoint}",
    );
    assert_eq!(v2, "conv.opkit.test/v2 db.internal:5432");

    // A second object written as v1, then the storage version moves to v2 and a third is
    // written: the list mixes storage versions and reads in either version.
    apply(
        &plane,
        "apiVersion: conv.opkit.test/v1
kind: Backend
metadata:
  name: web
spec:
  host: web.internal
  port: 80
",
    );
    plane.kubectl_ok(&[
        "patch",
        "crd",
        "backends.conv.opkit.test",
        "--type=json",
        "-p",
        r#"[{"op":"replace","path":"/spec/versions/0/storage","value":false},{"op":"replace","path":"/spec/versions/1/storage","value":true}]"#,
    ]);
    apply(
        &plane,
        "apiVersion: conv.opkit.test/v1
kind: Backend
metadata:
  name: cache
spec:
  host: cache.internal
  port: 6379
",
    );
    let stored = jsonpath(
        &plane,
        &["crd", "backends.conv.opkit.test"],
        "{.status.storedVersions}",
    );
    assert_eq!(stored, r#"["v1","v2"]"#);
    let hosts = jsonpath(
        &plane,
        &["backends.v1.conv.opkit.test"],
        "{.items[*].spec.host}",
    );
    assert_eq!(hosts, "cache.internal db.internal web.internal");
    let endpoints = jsonpath(
        &plane,
        &["backends.v2.conv.opkit.test"],
        "{.items[*].spec.endpoint}",
    );
    assert_eq!(
        endpoints,
        "cache.internal:6379 db.internal:5432 web.internal:80"
    );

    refuse.store(true, std::sync::atomic::Ordering::SeqCst);
    let failed = plane.kubectl_fails(&["get", "backends.v2.conv.opkit.test", "db"]);
    assert!(
        failed.stderr.contains(
            "Error from server: conversion webhook for conv.opkit.test/v1, Kind=Backend failed: backend conversion is off"
        ),
        "{failed}"
    );
}

#[test]
fn kubectl_shows_failure_policy_timeout_and_namespace_selector_behaviour() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let slow = runtime.block_on(WebhookServer::start(|_| Reply::Hang));
    // A port nothing listens on: bound, then released.
    let down = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let plane = ControlPlane::start();
    let hook = |name: &str, url: &str, extra: &str| {
        format!(
            "- name: {name}.opkit.test
  admissionReviewVersions: [v1]
  sideEffects: None
  clientConfig:
    url: {url}
    caBundle: {ca}
  rules:
  - operations: [CREATE]
    apiGroups: ['']
    apiVersions: [v1]
    resources: [configmaps]
  namespaceSelector:
    matchLabels: {{webhooks: {name}}}
{extra}",
            ca = slow.ca_bundle(),
        )
    };
    let down_url = format!("https://{down}/validate");
    let config = format!(
        "apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: failures
webhooks:
{}{}{}",
        hook("fail", &down_url, "  failurePolicy: Fail\n"),
        hook("ignore", &down_url, "  failurePolicy: Ignore\n"),
        hook(
            "slow",
            &slow.url("/validate"),
            "  failurePolicy: Fail\n  timeoutSeconds: 1\n"
        ),
    );
    apply(&plane, &config);
    for ns in ["fail", "ignore", "slow", "none"] {
        plane.kubectl_ok(&["create", "namespace", ns]);
        plane.kubectl_ok(&["label", "namespace", ns, &format!("webhooks={ns}")]);
    }

    let failed = plane.kubectl_fails(&["-n", "fail", "create", "configmap", "a"]);
    assert!(
        failed.stderr.contains(&format!(
            "Internal error occurred: failed calling webhook \"fail.opkit.test\": failed to call webhook: Post \"{down_url}?timeout=10s\": dial tcp {down}: connect: "
        )),
        "{failed}"
    );
    plane.kubectl_ok(&["-n", "ignore", "create", "configmap", "a"]);
    let timed_out = plane.kubectl_fails(&["-n", "slow", "create", "configmap", "a"]);
    assert!(
        timed_out.stderr.contains(&format!(
            "failed calling webhook \"slow.opkit.test\": failed to call webhook: Post \"{}?timeout=1s\": context deadline exceeded",
            slow.url("/validate")
        )),
        "{timed_out}"
    );
    plane.kubectl_ok(&["-n", "none", "create", "configmap", "a"]);
    assert!(
        slow.requests().len() == 1,
        "only the namespace the selector matches reaches the slow webhook"
    );
}
