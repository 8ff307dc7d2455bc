//! CEL validation rules (`x-kubernetes-validations`) of CRDs, through kube-rs against the real
//! server: CRDs with bad rules are refused, objects that break rules get 422 with the rule's
//! message and field path, transition rules apply to updates and status writes.

mod common;

use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::{Value, json};

fn api_error(e: kube::Error) -> kube::core::Status {
    match e {
        kube::Error::Api(s) => *s,
        other => panic!("expected an API error, got {other:?}"),
    }
}

/// A `Scaler` CRD with a status subresource and rules with and without `oldSelf`.
fn scaler_crd(spec_rules: Value) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "scalers.rules.example.com"},
        "spec": {
            "group": "rules.example.com",
            "scope": "Namespaced",
            "names": {"kind": "Scaler", "plural": "scalers"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "spec": {
                            "type": "object",
                            "x-kubernetes-validations": spec_rules,
                            "properties": {
                                "replicas": {"type": "integer"},
                                "minReplicas": {"type": "integer"},
                                "region": {"type": "string", "x-kubernetes-validations": [
                                    {"rule": "self == oldSelf", "message": "Value is immutable"}]}
                            }
                        },
                        "status": {
                            "type": "object",
                            "properties": {"phase": {"type": "string", "x-kubernetes-validations": [
                                {"rule": "self != 'Done' || oldSelf == 'Running'",
                                 "message": "Done only after Running"}]}}
                        }
                    }
                }}
            }]
        }
    })
}

fn default_rules() -> Value {
    json!([{"rule": "self.minReplicas <= self.replicas",
            "message": "replicas must be at least minReplicas", "fieldPath": ".replicas"}])
}

async fn install(client: &kube::Client, crd: Value) -> Api<DynamicObject> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd: CustomResourceDefinition = serde_json::from_value(crd).unwrap();
    crds.create(&PostParams::default(), &crd)
        .await
        .expect("CRD is created");
    let established = kube::runtime::wait::await_condition(
        crds,
        "scalers.rules.example.com",
        kube::runtime::wait::conditions::is_crd_established(),
    );
    tokio::time::timeout(Duration::from_secs(10), established)
        .await
        .expect("CRD established in time")
        .expect("wait works");
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("rules.example.com", "v1", "Scaler"),
        "scalers",
    );
    Api::namespaced_with(client.clone(), "default", &ar)
}

fn scaler(name: &str, spec: Value) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "rules.example.com/v1", "kind": "Scaler",
        "metadata": {"name": name}, "spec": spec
    }))
    .unwrap()
}

#[tokio::test]
async fn object_satisfying_the_rules_is_created() {
    let plane = common::start().await;
    let client = common::client(&plane).await;
    let api = install(&client, scaler_crd(default_rules())).await;
    api.create(
        &PostParams::default(),
        &scaler(
            "ok",
            json!({"replicas": 3, "minReplicas": 1, "region": "eu"}),
        ),
    )
    .await
    .expect("valid object is accepted");
}

#[tokio::test]
async fn object_breaking_a_rule_is_refused_with_422_naming_field_and_message() {
    let plane = common::start().await;
    let client = common::client(&plane).await;
    let api = install(&client, scaler_crd(default_rules())).await;
    let err = api_error(
        api.create(
            &PostParams::default(),
            &scaler("bad", json!({"replicas": 1, "minReplicas": 3})),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"));
    assert_eq!(
        err.message,
        r#"Scaler.rules.example.com "bad" is invalid: spec.replicas: Invalid value: "object": replicas must be at least minReplicas"#
    );
    let causes = err.details.expect("details").causes;
    assert_eq!(causes.len(), 1);
    assert_eq!(causes[0].field, "spec.replicas");
    assert_eq!(causes[0].reason, "FieldValueInvalid");
}

#[tokio::test]
async fn rule_without_message_reports_failed_rule_on_the_node() {
    let plane = common::start().await;
    let client = common::client(&plane).await;
    let api = install(
        &client,
        scaler_crd(json!([{"rule": "self.minReplicas <= self.replicas"}])),
    )
    .await;
    let err = api_error(
        api.create(
            &PostParams::default(),
            &scaler("bad", json!({"replicas": 1, "minReplicas": 3})),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(
        err.message,
        r#"Scaler.rules.example.com "bad" is invalid: spec: Invalid value: "object": failed rule: self.minReplicas <= self.replicas"#
    );
}

#[tokio::test]
async fn update_changing_an_immutable_field_is_refused() {
    let plane = common::start().await;
    let client = common::client(&plane).await;
    let api = install(&client, scaler_crd(default_rules())).await;
    api.create(
        &PostParams::default(),
        &scaler(
            "s",
            json!({"replicas": 2, "minReplicas": 1, "region": "eu"}),
        ),
    )
    .await
    .unwrap();
    // Changing another field passes the transition rule.
    api.patch(
        "s",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"replicas": 5}})),
    )
    .await
    .expect("mutable field may change");
    let err = api_error(
        api.patch(
            "s",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"region": "us"}})),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(err.code, 422);
    assert_eq!(
        err.message,
        r#"Scaler.rules.example.com "s" is invalid: spec.region: Invalid value: "string": Value is immutable"#
    );
}

#[tokio::test]
async fn status_write_breaking_a_transition_rule_is_refused() {
    let plane = common::start().await;
    let client = common::client(&plane).await;
    let api = install(&client, scaler_crd(default_rules())).await;
    api.create(
        &PostParams::default(),
        &scaler("s", json!({"replicas": 1, "minReplicas": 1})),
    )
    .await
    .unwrap();
    let status = |phase: &str| Patch::Merge(json!({"status": {"phase": phase}}));
    api.patch_status("s", &PatchParams::default(), &status("Pending"))
        .await
        .expect("first status is accepted");
    let err = api_error(
        api.patch_status("s", &PatchParams::default(), &status("Done"))
            .await
            .unwrap_err(),
    );
    assert_eq!(
        err.message,
        r#"Scaler.rules.example.com "s" is invalid: status.phase: Invalid value: "string": Done only after Running"#
    );
    api.patch_status("s", &PatchParams::default(), &status("Running"))
        .await
        .unwrap();
    api.patch_status("s", &PatchParams::default(), &status("Done"))
        .await
        .expect("Running -> Done is allowed");
}

#[tokio::test]
async fn crd_with_an_uncompilable_rule_is_refused_with_422() {
    let plane = common::start().await;
    let client = common::client(&plane).await;
    let crds: Api<CustomResourceDefinition> = Api::all(client);
    let crd: CustomResourceDefinition =
        serde_json::from_value(scaler_crd(json!([{"rule": "self.replicas >"}]))).unwrap();
    let err = api_error(crds.create(&PostParams::default(), &crd).await.unwrap_err());
    assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"));
    assert!(
        err.message.starts_with(
            r#"CustomResourceDefinition.apiextensions.k8s.io "scalers.rules.example.com" is invalid: spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: apiextensions.ValidationRule{Rule:"self.replicas >", Message:"", MessageExpression:"", Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:"", OptionalOldSelf:(*bool)(nil)}: compilation failed: ERROR: <input>:1:"#
        ),
        "{}",
        err.message
    );
    let causes = err.details.expect("details").causes;
    assert_eq!(
        causes[0].field,
        "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule"
    );
}

#[tokio::test]
async fn crd_with_a_rule_on_an_unknown_field_is_refused() {
    let plane = common::start().await;
    let client = common::client(&plane).await;
    let crds: Api<CustomResourceDefinition> = Api::all(client);
    let crd: CustomResourceDefinition =
        serde_json::from_value(scaler_crd(json!([{"rule": "self.replcas > 0"}]))).unwrap();
    let err = api_error(crds.create(&PostParams::default(), &crd).await.unwrap_err());
    assert_eq!(err.code, 422);
    assert!(
        err.message.contains("undefined field 'replcas'"),
        "{}",
        err.message
    );
}

#[tokio::test]
async fn schema_type_errors_skip_rules_with_upstream_notice() {
    let plane = common::start().await;
    let client = common::client(&plane).await;
    let api = install(&client, scaler_crd(default_rules())).await;
    let err = api_error(
        api.create(
            &PostParams::default(),
            &scaler("bad", json!({"replicas": "many", "minReplicas": 3})),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(err.code, 422);
    assert!(
        err.message.contains(r#"<nil>: Invalid value: "null": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation"#),
        "{}",
        err.message
    );
    assert!(!err.message.contains("minReplicas"), "{}", err.message);
}
