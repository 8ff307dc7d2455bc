//! Admission webhooks seen through the real kubectl v1.35 (installed by
//! `scripts/install-tools.sh`) against `opkit up`: a denial shows the webhook's message, a
//! mutating webhook's patch is visible, a webhook's warnings are printed; a
//! ValidatingAdmissionPolicy denies with its message.

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

#[test]
fn kubectl_shows_a_validating_admission_policy_denial_with_its_message() {
    let plane = ControlPlane::start();
    let applied = plane.kubectl_stdin(
        &["apply", "-f", "-"],
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
    assert!(applied.success(), "{applied}");
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
