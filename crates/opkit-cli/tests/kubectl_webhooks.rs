//! Admission webhooks seen through the real kubectl v1.35 (installed by
//! `scripts/install-tools.sh`) against `opkit up`: a denial shows the webhook's message, a
//! mutating webhook's patch is visible, a webhook's warnings are printed.

mod common;
// The HTTPS webhook server the control plane's own webhook tests use.
#[path = "../../opkit-controlplane/tests/webhook/mod.rs"]
mod webhook;

use common::ControlPlane;
use serde_json::Value;
use webhook::{Reply, WebhookServer};

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
    plane.kubectl_stdin(
        &["apply", "-f", "-"],
        &configuration("MutatingWebhookConfiguration", "label", &mutator),
    );
    let applied = plane.kubectl_stdin(
        &["apply", "-f", "-"],
        &configuration("ValidatingWebhookConfiguration", "mood", &validator),
    );
    assert!(applied.success(), "{applied}");

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
    let team = plane.kubectl_ok(&[
        "get",
        "configmap",
        "happy",
        "-o",
        "jsonpath={.metadata.labels.team}",
    ]);
    assert_eq!(team, "platform");
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
    let applied = plane.kubectl_stdin(&["apply", "-f", "-"], &crd);
    assert!(applied.success(), "{applied}");
    plane.kubectl_ok(&[
        "wait",
        "--for",
        "condition=established",
        "crd/backends.conv.opkit.test",
    ]);
    let created = plane.kubectl_stdin(
        &["apply", "-f", "-"],
        "apiVersion: conv.opkit.test/v2
kind: Backend
metadata:
  name: db
spec:
  endpoint: db.internal:5432
",
    );
    assert!(created.success(), "{created}");
    let v1 = plane.kubectl_ok(&[
        "get",
        "backends.v1.conv.opkit.test",
        "db",
        "-o",
        "jsonpath={.apiVersion} {.spec.host} {.spec.port}",
    ]);
    assert_eq!(v1, "conv.opkit.test/v1 db.internal 5432");
    let v2 = plane.kubectl_ok(&[
        "get",
        "backends.v2.conv.opkit.test",
        "db",
        "-o",
        "jsonpath={.apiVersion} {.spec.endpoint}",
    ]);
    assert_eq!(v2, "conv.opkit.test/v2 db.internal:5432");

    refuse.store(true, std::sync::atomic::Ordering::SeqCst);
    let failed = plane.kubectl_fails(&["get", "backends.v2.conv.opkit.test", "db"]);
    assert!(
        failed.stderr.contains(
            "Error from server: conversion webhook for conv.opkit.test/v1, Kind=Backend failed: backend conversion is off"
        ),
        "{failed}"
    );
}
