//! ValidatingAdmissionPolicies and bindings (`admissionregistration.k8s.io/v1`): the control
//! plane evaluates their CEL validations at admission, with upstream's matching, actions,
//! failure policy and texts, and refuses policies that cannot work (422).

mod common;

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, PostParams};
use serde_json::{Value, json};

use common::admission_api as kind_api;

async fn create(client: &kube::Client, kind: &str, name: &str, spec: Value) -> kube::Result<()> {
    common::create_admission_object(client, kind, name, json!({"spec": spec})).await
}

/// A policy on ConfigMap creates and updates with these `validations` and extra fields.
async fn policy(client: &kube::Client, name: &str, validations: Value, extra: Value) {
    let mut spec = json!({
        "matchConstraints": {"resourceRules": [{
            "operations": ["CREATE", "UPDATE"],
            "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"],
        }]},
        "validations": validations,
    });
    for (k, v) in extra.as_object().unwrap() {
        spec[k] = v.clone();
    }
    create(client, "ValidatingAdmissionPolicy", name, spec)
        .await
        .expect("the policy is stored");
}

async fn bind(client: &kube::Client, name: &str, policy: &str, actions: &[&str], extra: Value) {
    let mut spec = json!({"policyName": policy, "validationActions": actions});
    for (k, v) in extra.as_object().unwrap() {
        spec[k] = v.clone();
    }
    create(client, "ValidatingAdmissionPolicyBinding", name, spec)
        .await
        .expect("the binding is stored");
}

fn config_map(name: &str, data: Value) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}, "data": data})).unwrap()
}

use common::{api_status as status, start_with_client as start};

async fn refused(cms: &Api<ConfigMap>, cm: ConfigMap) -> Box<kube::core::Status> {
    status(
        cms.create(&PostParams::default(), &cm)
            .await
            .expect_err("the create is refused"),
    )
}

#[tokio::test]
async fn a_bound_policy_denies_a_create_with_its_message_or_message_expression() {
    let (plane, client) = start().await;
    policy(
        &client,
        "no-forbidden-data",
        json!([
            {"expression": "!has(object.data) || !('forbidden' in object.data)",
             "message": "configmaps may not carry a forbidden key"},
            {"expression": "!has(object.data) || size(object.data) <= 2",
             "messageExpression": "'too many keys: ' + string(size(object.data))"},
            {"expression": "object.metadata.name != 'plain'"},
            {"expression": "object.metadata.name != 'invalid'", "reason": "Invalid",
             "message": "not that name"},
        ]),
        json!({}),
    )
    .await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    cms.create(
        &PostParams::default(),
        &config_map("before", json!({"forbidden": "x"})),
    )
    .await
    .expect("without a binding the policy does nothing");
    bind(
        &client,
        "no-forbidden-data-binding",
        "no-forbidden-data",
        &["Deny"],
        json!({}),
    )
    .await;

    cms.create(
        &PostParams::default(),
        &config_map("fine", json!({"k": "v"})),
    )
    .await
    .expect("a create the policy allows is stored");
    let denied = refused(&cms, config_map("bad", json!({"forbidden": "x"}))).await;
    assert_eq!(denied.code, 403);
    assert_eq!(denied.reason, "Forbidden");
    assert_eq!(
        denied.message,
        "configmaps \"bad\" is forbidden: ValidatingAdmissionPolicy 'no-forbidden-data' with binding 'no-forbidden-data-binding' denied request: configmaps may not carry a forbidden key"
    );
    let denied = refused(
        &cms,
        config_map("big", json!({"a": "1", "b": "2", "c": "3"})),
    )
    .await;
    assert!(
        denied.message.ends_with("denied request: too many keys: 3"),
        "{}",
        denied.message
    );
    let denied = refused(&cms, config_map("plain", json!({}))).await;
    assert!(
        denied
            .message
            .ends_with("denied request: failed expression: object.metadata.name != 'plain'"),
        "{}",
        denied.message
    );
    let denied = refused(&cms, config_map("invalid", json!({}))).await;
    assert_eq!((denied.code, denied.reason.as_str()), (422, "Invalid"));
    for name in ["bad", "big", "plain", "invalid"] {
        assert!(
            cms.get_opt(name).await.unwrap().is_none(),
            "{name} was not stored"
        );
    }
    plane.shutdown().await;
}

/// Sends a create and returns the code and the `Warning` headers.
async fn create_raw(client: &kube::Client, path: &str, body: Value) -> (u16, Vec<String>) {
    let req = http::Request::builder()
        .method("POST")
        .uri(path)
        .header("Content-Type", "application/json")
        .body(serde_json::to_vec(&body).unwrap())
        .unwrap();
    let resp = client.send(req.map(Into::into)).await.unwrap();
    let warnings = resp
        .headers()
        .get_all("warning")
        .iter()
        .map(|v| v.to_str().unwrap().to_string())
        .collect();
    (resp.status().as_u16(), warnings)
}

#[tokio::test]
async fn a_warn_binding_warns_and_stores_the_object() {
    let (plane, client) = start().await;
    policy(
        &client,
        "labelled",
        json!([{"expression": "has(object.metadata.labels) && 'team' in object.metadata.labels",
                "message": "configmaps should name their team"}]),
        json!({}),
    )
    .await;
    bind(
        &client,
        "labelled-warn",
        "labelled",
        &["Warn", "Audit"],
        json!({}),
    )
    .await;
    let (code, warnings) = create_raw(
        &client,
        "/api/v1/namespaces/default/configmaps",
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "anon"}}),
    )
    .await;
    assert_eq!(code, 201);
    assert_eq!(
        warnings,
        [
            "299 - \"Validation failed for ValidatingAdmissionPolicy 'labelled' with binding 'labelled-warn': configmaps should name their team\""
        ]
    );
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    assert!(
        cms.get_opt("anon").await.unwrap().is_some(),
        "the object is stored"
    );
    plane.shutdown().await;
}

#[tokio::test]
async fn bindings_select_by_namespace_labels_and_object_selector() {
    let (plane, client) = start().await;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    for (name, env) in [("prod", "production"), ("dev", "development")] {
        let ns: Namespace =
            serde_json::from_value(json!({"metadata": {"name": name, "labels": {"env": env}}}))
                .unwrap();
        namespaces
            .create(&PostParams::default(), &ns)
            .await
            .unwrap();
    }
    policy(
        &client,
        "small",
        json!([{"expression": "!has(object.data) || size(object.data) == 0",
                "messageExpression": "'no data in ' + namespaceObject.metadata.name + ' for ' + request.userInfo.username"}]),
        json!({}),
    )
    .await;
    bind(
        &client,
        "small-in-production",
        "small",
        &["Deny"],
        json!({"matchResources": {
            "namespaceSelector": {"matchLabels": {"env": "production"}},
            "objectSelector": {"matchExpressions": [{"key": "exempt", "operator": "DoesNotExist"}]},
        }}),
    )
    .await;
    let dev: Api<ConfigMap> = Api::namespaced(client.clone(), "dev");
    dev.create(
        &PostParams::default(),
        &config_map("data", json!({"k": "v"})),
    )
    .await
    .expect("a namespace outside the binding's selector is not checked");
    let prod: Api<ConfigMap> = Api::namespaced(client.clone(), "prod");
    let denied = refused(&prod, config_map("data", json!({"k": "v"}))).await;
    assert!(
        denied
            .message
            .ends_with("denied request: no data in prod for opkit-admin"),
        "{}",
        denied.message
    );
    let mut exempt = config_map("exempt", json!({"k": "v"}));
    exempt.metadata.labels = Some([("exempt".to_string(), "yes".to_string())].into());
    prod.create(&PostParams::default(), &exempt)
        .await
        .expect("an object outside the binding's objectSelector is not checked");
    plane.shutdown().await;
}

#[tokio::test]
async fn variables_and_match_conditions_are_evaluated_in_order() {
    let (plane, client) = start().await;
    policy(
        &client,
        "replicas",
        json!([{"expression": "variables.count <= variables.limit",
                "messageExpression": "'count ' + string(variables.count) + ' over ' + string(variables.limit)"}]),
        json!({
            "variables": [
                {"name": "limit", "expression": "2"},
                {"name": "count", "expression": "has(object.data) ? size(object.data) : 0"},
            ],
            "matchConditions": [{"name": "not-system", "expression": "!object.metadata.name.startsWith('system-')"}],
        }),
    )
    .await;
    bind(&client, "replicas", "replicas", &["Deny"], json!({})).await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let three = json!({"a": "1", "b": "2", "c": "3"});
    let denied = refused(&cms, config_map("three", three.clone())).await;
    assert!(
        denied.message.ends_with("denied request: count 3 over 2"),
        "{}",
        denied.message
    );
    cms.create(&PostParams::default(), &config_map("system-three", three))
        .await
        .expect("a false match condition skips the policy");
    plane.shutdown().await;
}

#[tokio::test]
async fn policies_and_bindings_that_cannot_work_are_refused_with_422() {
    let (plane, client) = start().await;
    let rules = json!({"resourceRules": [{
        "operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"],
    }]});
    let broken = status(
        create(
            &client,
            "ValidatingAdmissionPolicy",
            "broken",
            json!({"matchConstraints": rules, "validations": [{"expression": "object.data.x =="}]}),
        )
        .await
        .expect_err("a broken expression is refused"),
    );
    assert_eq!((broken.code, broken.reason.as_str()), (422, "Invalid"));
    assert!(
        broken.message.starts_with(
            "ValidatingAdmissionPolicy.admissionregistration.k8s.io \"broken\" is invalid: spec.validations[0].expression: Invalid value: \"object.data.x ==\": compilation failed: ERROR: <input>:1:"
        ),
        "{}",
        broken.message
    );
    let params = status(
        create(
            &client,
            "ValidatingAdmissionPolicyBinding",
            "params",
            json!({"policyName": "p", "validationActions": ["Deny"], "paramRef": {"name": "x"}}),
        )
        .await
        .expect_err("a paramRef without parameterNotFoundAction is refused"),
    );
    assert!(
        params
            .message
            .contains("spec.paramRef.parameterNotFoundAction: Required value"),
        "{}",
        params.message
    );
    let binding = status(
        create(
            &client,
            "ValidatingAdmissionPolicyBinding",
            "both",
            json!({"policyName": "p", "validationActions": ["Deny", "Warn"]}),
        )
        .await
        .expect_err("Deny with Warn is refused"),
    );
    assert!(
        binding
            .message
            .contains("must not contain both Deny and Warn"),
        "{}",
        binding.message
    );
    plane.shutdown().await;
}

#[tokio::test]
async fn an_evaluation_error_fails_the_write_unless_the_failure_policy_ignores_it() {
    let (plane, client) = start().await;
    let validations = json!([{"expression": "object.data.required == 'yes'"}]);
    policy(&client, "strict", validations.clone(), json!({})).await;
    bind(&client, "strict", "strict", &["Deny"], json!({})).await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let denied = refused(&cms, config_map("missing", json!({"k": "v"}))).await;
    assert_eq!(denied.code, 403);
    assert!(
        denied.message.starts_with(
            "configmaps \"missing\" is forbidden: ValidatingAdmissionPolicy 'strict' with binding 'strict' denied request: expression 'object.data.required == 'yes'' resulted in error: "
        ),
        "{}",
        denied.message
    );
    kind_api(&client, "ValidatingAdmissionPolicyBinding")
        .delete("strict", &Default::default())
        .await
        .unwrap();
    policy(
        &client,
        "lenient",
        validations,
        json!({"failurePolicy": "Ignore"}),
    )
    .await;
    bind(&client, "lenient", "lenient", &["Deny"], json!({})).await;
    cms.create(
        &PostParams::default(),
        &config_map("missing", json!({"k": "v"})),
    )
    .await
    .expect("failurePolicy Ignore lets the write through");
    let denied = refused(&cms, config_map("wrong", json!({"required": "no"}))).await;
    assert!(
        denied
            .message
            .ends_with("failed expression: object.data.required == 'yes'")
    );
    plane.shutdown().await;
}

/// A policy on Secret creates whose names must start with `params.data.prefix` (ConfigMap
/// parameters), bound as `binding` with `param_ref`.
async fn prefix_policy(client: &kube::Client, binding: &str, param_ref: Value) {
    if kind_api(client, "ValidatingAdmissionPolicy")
        .get_opt("prefix")
        .await
        .unwrap()
        .is_none()
    {
        create(
            client,
            "ValidatingAdmissionPolicy",
            "prefix",
            json!({
                "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
                "matchConstraints": {"resourceRules": [{
                    "operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                    "resources": ["secrets"],
                }]},
                "validations": [{
                    "expression": "object.metadata.name.startsWith(params.data.prefix)",
                    "messageExpression": "'name must start with ' + params.data.prefix",
                }],
            }),
        )
        .await
        .expect("the policy is stored");
    }
    bind(
        client,
        binding,
        "prefix",
        &["Deny"],
        json!({"paramRef": param_ref}),
    )
    .await;
}

async fn create_secret(client: &kube::Client, ns: &str, name: &str) -> kube::Result<()> {
    let secret: k8s_openapi::api::core::v1::Secret =
        serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
    Api::namespaced(client.clone(), ns)
        .create(&PostParams::default(), &secret)
        .await
        .map(|_| ())
}

async fn unbind(client: &kube::Client, name: &str) {
    kind_api(client, "ValidatingAdmissionPolicyBinding")
        .delete(name, &Default::default())
        .await
        .expect("the binding is deleted");
}

#[tokio::test]
async fn a_named_parameter_feeds_the_policy_and_a_missing_one_follows_parameter_not_found_action() {
    let (plane, client) = start().await;
    let params: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    params
        .create(
            &PostParams::default(),
            &config_map("prefixes", json!({"prefix": "team-"})),
        )
        .await
        .unwrap();
    prefix_policy(
        &client,
        "named",
        json!({"name": "prefixes", "namespace": "default", "parameterNotFoundAction": "Deny"}),
    )
    .await;
    let denied = status(
        create_secret(&client, "kube-public", "other")
            .await
            .unwrap_err(),
    );
    assert_eq!(
        denied.message,
        "secrets \"other\" is forbidden: ValidatingAdmissionPolicy 'prefix' with binding 'named' denied request: name must start with team-"
    );
    create_secret(&client, "kube-public", "team-a")
        .await
        .expect("a name with the parameter's prefix is allowed");

    params
        .delete("prefixes", &Default::default())
        .await
        .unwrap();
    let missing = status(
        create_secret(&client, "kube-public", "team-b")
            .await
            .unwrap_err(),
    );
    assert_eq!(
        missing.message,
        "secrets \"team-b\" is forbidden: ValidatingAdmissionPolicy 'prefix' with binding 'named' denied request: failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"
    );
    unbind(&client, "named").await;
    prefix_policy(
        &client,
        "allow-missing",
        json!({"name": "prefixes", "namespace": "default", "parameterNotFoundAction": "Allow"}),
    )
    .await;
    create_secret(&client, "kube-public", "anything")
        .await
        .expect("no parameter under Allow: the policy is not evaluated");
    plane.shutdown().await;
}

#[tokio::test]
async fn a_selector_evaluates_every_matching_parameter_of_the_request_namespace() {
    let (plane, client) = start().await;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    for ns in ["team", "empty"] {
        let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": ns}})).unwrap();
        namespaces
            .create(&PostParams::default(), &ns)
            .await
            .unwrap();
    }
    let team: Api<ConfigMap> = Api::namespaced(client.clone(), "team");
    for (name, prefix) in [("one", "t"), ("two", "team-")] {
        let mut cm = config_map(name, json!({"prefix": prefix}));
        cm.metadata.labels = Some([("role".to_string(), "prefix".to_string())].into());
        team.create(&PostParams::default(), &cm).await.unwrap();
    }
    team.create(
        &PostParams::default(),
        &config_map("unlabelled", json!({"prefix": "zzz"})),
    )
    .await
    .unwrap();
    prefix_policy(
        &client,
        "selected",
        json!({"selector": {"matchLabels": {"role": "prefix"}}, "parameterNotFoundAction": "Deny"}),
    )
    .await;
    let denied = status(create_secret(&client, "team", "tx").await.unwrap_err());
    assert!(
        denied
            .message
            .ends_with("denied request: name must start with team-"),
        "every selected parameter is evaluated: {}",
        denied.message
    );
    create_secret(&client, "team", "team-x")
        .await
        .expect("both parameters are satisfied; the unlabelled one is not selected");
    let none = status(create_secret(&client, "empty", "team-y").await.unwrap_err());
    assert!(
        none.message.ends_with("failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"),
        "parameters come from the request's namespace: {}",
        none.message
    );
    unbind(&client, "selected").await;

    create(
        &client,
        "ValidatingAdmissionPolicy",
        "unknown-kind",
        json!({
            "paramKind": {"apiVersion": "example.com/v1", "kind": "Nope"},
            "matchConstraints": {"resourceRules": [{
                "operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                "resources": ["secrets"],
            }]},
            "validations": [{"expression": "params != null"}],
        }),
    )
    .await
    .unwrap();
    bind(
        &client,
        "unknown-kind",
        "unknown-kind",
        &["Deny"],
        json!({"paramRef": {"name": "x", "parameterNotFoundAction": "Allow"}}),
    )
    .await;
    let unknown = status(create_secret(&client, "team", "team-z").await.unwrap_err());
    assert!(
        unknown.message.ends_with(
            "failed to configure binding: paramKind kind `&ParamKind{APIVersion:example.com/v1,Kind:Nope,}` not known"
        ),
        "{}",
        unknown.message
    );
    plane.shutdown().await;
}
