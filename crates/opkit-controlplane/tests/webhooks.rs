//! Admission webhooks: the control plane calls the webhooks of MutatingWebhookConfigurations
//! and ValidatingWebhookConfigurations over HTTPS (test CA in `caBundle`), with upstream's
//! matching, failure policies, timeouts and error texts.

mod common;
mod webhook;

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, DynamicObject, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::{Value, json};
use webhook::{Reply, WebhookServer};

fn configuration_api(client: &kube::Client, mutating: bool) -> Api<DynamicObject> {
    common::admission_api(client, configuration_kind(mutating))
}

fn configuration_kind(mutating: bool) -> &'static str {
    match mutating {
        true => "MutatingWebhookConfiguration",
        false => "ValidatingWebhookConfiguration",
    }
}

/// A webhook on ConfigMap creates and updates, reached at `client_config`.
fn hook(name: &str, client_config: Value, extra: Value) -> Value {
    let mut hook = json!({
        "name": name,
        "admissionReviewVersions": ["v1"],
        "sideEffects": "None",
        "clientConfig": client_config,
        "rules": [{
            "operations": ["CREATE", "UPDATE"],
            "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"],
        }],
    });
    for (k, v) in extra.as_object().unwrap() {
        hook[k] = v.clone();
    }
    hook
}

fn url_client(server: &WebhookServer, path: &str) -> Value {
    json!({"url": server.url(path), "caBundle": server.ca_bundle()})
}

async fn configure(client: &kube::Client, mutating: bool, name: &str, hooks: Vec<Value>) {
    let kind = configuration_kind(mutating);
    common::create_admission_object(client, kind, name, json!({"webhooks": hooks}))
        .await
        .expect("the webhook configuration is stored");
}

fn config_map(name: &str, labels: Value) -> ConfigMap {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": labels},
        "data": {"k": "v"},
    }))
    .unwrap()
}

use common::{api_status as status, start_with_client as start};

/// Denies ConfigMaps labelled `deny: "yes"`.
fn deny_labelled(request: &Value) -> Reply {
    match request
        .pointer("/object/metadata/labels/deny")
        .and_then(Value::as_str)
    {
        Some("yes") => Reply::Deny(403, "configmaps may not be labelled deny".into()),
        _ => Reply::Allow(vec![]),
    }
}

#[tokio::test]
async fn a_validating_webhook_denial_reaches_the_client_with_its_message() {
    let server = WebhookServer::start(deny_labelled).await;
    let (plane, client) = start().await;
    configure(
        &client,
        false,
        "deny",
        vec![hook(
            "deny.opkit.test",
            url_client(&server, "/validate"),
            json!({}),
        )],
    )
    .await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");

    cms.create(&PostParams::default(), &config_map("fine", json!({})))
        .await
        .expect("an allowed create is stored");
    let refused = status(
        cms.create(
            &PostParams::default(),
            &config_map("bad", json!({"deny": "yes"})),
        )
        .await
        .expect_err("a denied create fails"),
    );
    assert_eq!(refused.code, 403);
    assert_eq!(
        refused.message,
        "admission webhook \"deny.opkit.test\" denied the request: configmaps may not be labelled deny"
    );
    assert!(
        cms.get_opt("bad").await.unwrap().is_none(),
        "nothing was stored"
    );

    let requests = server.requests();
    let first = &requests[0];
    assert_eq!(first["operation"], "CREATE");
    assert_eq!(
        first["kind"],
        json!({"group": "", "version": "v1", "kind": "ConfigMap"})
    );
    assert_eq!(
        first["resource"],
        json!({"group": "", "version": "v1", "resource": "configmaps"})
    );
    assert_eq!(first["requestKind"], first["kind"]);
    assert_eq!(first["namespace"], "default");
    assert_eq!(first["name"], "fine");
    assert_eq!(first["userInfo"]["username"], "opkit-admin");
    assert_eq!(first["object"]["data"], json!({"k": "v"}));
    assert_eq!(first["oldObject"], Value::Null);
    assert_eq!(first["dryRun"], false);
    assert_eq!(first["options"]["kind"], "CreateOptions");
    assert!(!first["uid"].as_str().unwrap_or("").is_empty());
    plane.shutdown().await;
}

#[tokio::test]
async fn webhook_calls_reuse_connections_and_survive_a_webhook_closing_them() {
    let server = WebhookServer::start(deny_labelled).await;
    let (plane, client) = start().await;
    let hooks = vec![hook(
        "deny.opkit.test",
        url_client(&server, "/validate"),
        json!({}),
    )];
    configure(&client, false, "deny", hooks).await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    for i in 0..5 {
        cms.create(
            &PostParams::default(),
            &config_map(&format!("a{i}"), json!({})),
        )
        .await
        .expect("an allowed create is stored");
    }
    assert_eq!(server.requests().len(), 5);
    assert_eq!(
        server.connections_accepted(),
        1,
        "one write after another share one connection"
    );

    server.close_connections();
    for i in 0..3 {
        cms.create(
            &PostParams::default(),
            &config_map(&format!("b{i}"), json!({})),
        )
        .await
        .expect("a closed idle connection is replaced, not reported");
    }
    assert_eq!(server.requests().len(), 8);
    assert_eq!(server.connections_accepted(), 2);
    plane.shutdown().await;
}

#[tokio::test]
async fn a_mutating_webhooks_patch_is_stored_and_validated_webhooks_see_it() {
    let mutator =
        WebhookServer::start(
            |request| match request.pointer("/object/metadata/labels/team") {
                Some(_) => Reply::Allow(vec![]),
                None => Reply::Patch(json!([
                    {"op": "add", "path": "/metadata/labels/team", "value": "platform"}
                ])),
            },
        )
        .await;
    let validator = WebhookServer::start(|request| {
        match request
            .pointer("/object/metadata/labels/team")
            .and_then(Value::as_str)
        {
            Some("platform") => Reply::Allow(vec![]),
            _ => Reply::Deny(400, "team label missing".into()),
        }
    })
    .await;
    let (plane, client) = start().await;
    configure(
        &client,
        true,
        "label",
        vec![hook(
            "label.opkit.test",
            url_client(&mutator, "/mutate"),
            json!({}),
        )],
    )
    .await;
    configure(
        &client,
        false,
        "check",
        vec![hook(
            "check.opkit.test",
            url_client(&validator, "/validate"),
            json!({}),
        )],
    )
    .await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let created = cms
        .create(
            &PostParams::default(),
            &config_map("labelled", json!({"app": "x"})),
        )
        .await
        .expect("the mutated create passes validation");
    let labels = created.metadata.labels.clone().unwrap_or_default();
    assert_eq!(labels.get("team").map(String::as_str), Some("platform"));
    let stored = cms.get("labelled").await.unwrap();
    assert_eq!(
        stored.metadata.labels, created.metadata.labels,
        "the patch is stored"
    );
    assert!(stored.metadata.uid.is_some());

    let dry = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    cms.create(&dry, &config_map("dry", json!({"app": "y"})))
        .await
        .expect("a dry run is admitted");
    let last = mutator.requests().pop().unwrap();
    assert_eq!(
        last["dryRun"], true,
        "dry runs reach webhooks without side effects, flagged"
    );
    plane.shutdown().await;
}

#[tokio::test]
async fn a_webhook_that_is_down_fails_writes_unless_its_failure_policy_is_ignore() {
    // A port nothing listens on.
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let down = format!("https://{}/validate", free.local_addr().unwrap());
    drop(free);
    let ca = WebhookServer::start(|_| Reply::Allow(vec![]))
        .await
        .ca_bundle();
    let (plane, client) = start().await;
    let client_config = json!({"url": down, "caBundle": ca});
    configure(
        &client,
        false,
        "down",
        vec![
            hook(
                "ignored.opkit.test",
                client_config.clone(),
                json!({"failurePolicy": "Ignore"}),
            ),
            hook(
                "fail.opkit.test",
                client_config,
                json!({"objectSelector": {"matchLabels": {"strict": "yes"}}}),
            ),
        ],
    )
    .await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    cms.create(&PostParams::default(), &config_map("through", json!({})))
        .await
        .expect("Ignore lets the write through");
    let refused = status(
        cms.create(
            &PostParams::default(),
            &config_map("held", json!({"strict": "yes"})),
        )
        .await
        .expect_err("Fail refuses the write"),
    );
    assert_eq!(refused.code, 500);
    let expected = format!(
        "Internal error occurred: failed calling webhook \"fail.opkit.test\": failed to call webhook: Post \"{down}?timeout=10s\": "
    );
    assert!(
        refused.message.starts_with(&expected),
        "{}",
        refused.message
    );
    assert!(cms.get_opt("held").await.unwrap().is_none());
    plane.shutdown().await;
}

#[tokio::test]
async fn a_slow_webhook_times_out_with_upstreams_words() {
    let server = WebhookServer::start(|_| Reply::Hang).await;
    let (plane, client) = start().await;
    configure(
        &client,
        false,
        "slow",
        vec![hook(
            "slow.opkit.test",
            url_client(&server, "/slow"),
            json!({"timeoutSeconds": 1}),
        )],
    )
    .await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let refused = status(
        cms.create(&PostParams::default(), &config_map("late", json!({})))
            .await
            .expect_err("a webhook that never answers fails the write"),
    );
    assert_eq!(
        refused.message,
        format!(
            "Internal error occurred: failed calling webhook \"slow.opkit.test\": failed to call webhook: Post \"{}?timeout=1s\": context deadline exceeded",
            server.url("/slow")
        )
    );
    assert!(cms.get_opt("late").await.unwrap().is_none());
    plane.shutdown().await;
}

#[tokio::test]
async fn objects_outside_the_namespace_selector_are_not_sent() {
    let server = WebhookServer::start(|_| Reply::Deny(403, "watched namespace".into())).await;
    let (plane, client) = start().await;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    for (name, labels) in [("watched", json!({"hooks": "on"})), ("quiet", json!({}))] {
        let ns = serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}}));
        namespaces
            .create(&PostParams::default(), &ns.unwrap())
            .await
            .unwrap();
    }
    configure(
        &client,
        false,
        "selective",
        vec![hook(
            "selective.opkit.test",
            url_client(&server, "/validate"),
            json!({"namespaceSelector": {"matchLabels": {"hooks": "on"}}}),
        )],
    )
    .await;
    let quiet: Api<ConfigMap> = Api::namespaced(client.clone(), "quiet");
    quiet
        .create(&PostParams::default(), &config_map("unseen", json!({})))
        .await
        .expect("outside the selector, no webhook is called");
    let watched: Api<ConfigMap> = Api::namespaced(client.clone(), "watched");
    let refused = status(
        watched
            .create(&PostParams::default(), &config_map("seen", json!({})))
            .await
            .expect_err("inside the selector, the webhook denies"),
    );
    assert_eq!(
        refused.message,
        "admission webhook \"selective.opkit.test\" denied the request: watched namespace"
    );
    let names: Vec<Value> = server
        .requests()
        .iter()
        .map(|r| r["name"].clone())
        .collect();
    assert_eq!(names, [json!("seen")]);
    plane.shutdown().await;
}

#[tokio::test]
async fn bad_webhook_answers_give_clear_errors_and_store_nothing() {
    let server = WebhookServer::start(|request| {
        match request
            .pointer("/object/metadata/name")
            .and_then(Value::as_str)
        {
            Some("not-a-review") => Reply::Raw(json!({"apiVersion": "v1", "kind": "Status"})),
            Some("wrong-uid") => Reply::WrongUid,
            Some("bad-patch") => Reply::Patch(json!([{"op": "remove", "path": "/spec/nothing"}])),
            _ => Reply::Allow(vec![]),
        }
    })
    .await;
    let (plane, client) = start().await;
    configure(
        &client,
        true,
        "answers",
        vec![hook(
            "answers.opkit.test",
            url_client(&server, "/mutate"),
            json!({}),
        )],
    )
    .await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let cases = [
        (
            "not-a-review",
            "Internal error occurred: failed calling webhook \"answers.opkit.test\": received invalid webhook response: expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got v1, Kind=Status",
        ),
        (
            "wrong-uid",
            "Internal error occurred: failed calling webhook \"answers.opkit.test\": received invalid webhook response: expected response.uid=",
        ),
        (
            "bad-patch",
            "Internal error occurred: admission webhook \"answers.opkit.test\" returned a JSON patch that cannot be applied: ",
        ),
    ];
    for (name, expected) in cases {
        let refused = status(
            cms.create(&PostParams::default(), &config_map(name, json!({})))
                .await
                .expect_err("a bad answer fails the write"),
        );
        assert_eq!(refused.code, 500, "{name}");
        assert!(
            refused.message.starts_with(expected),
            "{name}: {}",
            refused.message
        );
        assert!(
            cms.get_opt(name).await.unwrap().is_none(),
            "{name}: nothing stored"
        );
    }
    plane.shutdown().await;
}

#[tokio::test]
async fn webhook_configurations_are_validated_with_upstreams_texts() {
    let (plane, client) = start().await;
    let config: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "bad"},
        "webhooks": [hook(
            "bad.opkit.test",
            json!({"url": "https://127.0.0.1:1/x"}),
            json!({"sideEffects": "Some", "timeoutSeconds": 31}),
        )],
    }))
    .unwrap();
    let refused = status(
        configuration_api(&client, false)
            .create(&PostParams::default(), &config)
            .await
            .expect_err("an invalid configuration is refused"),
    );
    assert_eq!(refused.code, 422);
    assert_eq!(
        refused.message,
        "ValidatingWebhookConfiguration.admissionregistration.k8s.io \"bad\" is invalid: [webhooks[0].sideEffects: Unsupported value: \"Some\": supported values: \"None\", \"NoneOnDryRun\", webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 and 30 seconds]"
    );
    plane.shutdown().await;
}

/// Creates `manifest` (any kind, `apiVersion` and `kind` set) in namespace `default`.
async fn create_in_default(client: &kube::Client, manifest: Value) {
    let api_version = manifest["apiVersion"].as_str().unwrap_or_default();
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let kind = manifest["kind"].as_str().unwrap_or_default();
    let gvk = GroupVersionKind::gvk(group, version, kind);
    let api: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), "default", &ApiResource::from_gvk(&gvk));
    let object: DynamicObject = serde_json::from_value(manifest).unwrap();
    api.create(&PostParams::default(), &object).await.unwrap();
}

/// Registers validating webhook `hook_name` behind Service `default/hooks` (on `port`, if
/// given) and checks that it denies a labelled ConfigMap with [`deny_labelled`]'s message and
/// allows an unlabelled one.
async fn expect_the_service_webhook_to_answer(
    client: &kube::Client,
    server: &WebhookServer,
    hook_name: &str,
    port: Option<u16>,
) {
    let mut service = json!({"namespace": "default", "name": "hooks", "path": "/validate"});
    if let Some(port) = port {
        service["port"] = json!(port);
    }
    configure(
        client,
        false,
        hook_name,
        vec![hook(
            hook_name,
            json!({"service": service, "caBundle": server.ca_bundle()}),
            json!({}),
        )],
    )
    .await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let refused = status(
        cms.create(
            &PostParams::default(),
            &config_map("bad", json!({"deny": "yes"})),
        )
        .await
        .expect_err("the webhook behind the Service denies"),
    );
    assert_eq!(
        refused.message,
        format!(
            "admission webhook \"{hook_name}\" denied the request: configmaps may not be labelled deny"
        )
    );
    cms.create(&PostParams::default(), &config_map("good", json!({})))
        .await
        .expect("and allows the rest");
}

#[tokio::test]
async fn a_service_reference_reaches_the_local_address_of_its_endpoints() {
    let server = WebhookServer::start(deny_labelled).await;
    let (plane, client) = start().await;
    let port = server.addr.port();
    create_in_default(
        &client,
        json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "hooks"},
            "spec": {"ports": [{"name": "https", "port": 443, "targetPort": port}]},
        }),
    )
    .await;
    create_in_default(
        &client,
        json!({
            "apiVersion": "v1", "kind": "Endpoints",
            "metadata": {"name": "hooks"},
            "subsets": [{"addresses": [{"ip": "127.0.0.1"}], "ports": [{"name": "https", "port": port}]}],
        }),
    )
    .await;
    expect_the_service_webhook_to_answer(&client, &server, "service.opkit.test", None).await;
    plane.shutdown().await;
}

#[tokio::test]
async fn a_delete_reaches_webhooks_with_the_old_object_only() {
    let server = WebhookServer::start(|request| {
        match request
            .pointer("/oldObject/metadata/labels/keep")
            .and_then(Value::as_str)
        {
            Some("yes") => Reply::Deny(403, "kept configmaps stay".into()),
            _ => Reply::Allow(vec![]),
        }
    })
    .await;
    let (plane, client) = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    cms.create(
        &PostParams::default(),
        &config_map("kept", json!({"keep": "yes"})),
    )
    .await
    .unwrap();
    let mut on_delete = hook(
        "keep.opkit.test",
        url_client(&server, "/validate"),
        json!({}),
    );
    on_delete["rules"][0]["operations"] = json!(["DELETE"]);
    configure(&client, false, "keep", vec![on_delete]).await;

    let refused = status(
        cms.delete("kept", &Default::default())
            .await
            .expect_err("the webhook refuses the delete"),
    );
    assert_eq!(
        refused.message,
        "admission webhook \"keep.opkit.test\" denied the request: kept configmaps stay"
    );
    assert!(
        cms.get_opt("kept").await.unwrap().is_some(),
        "the object stays"
    );
    let request = server.requests().pop().unwrap();
    assert_eq!(request["operation"], "DELETE");
    assert_eq!(request["object"], Value::Null);
    assert_eq!(request["oldObject"]["metadata"]["name"], "kept");
    assert_eq!(request["options"]["kind"], "DeleteOptions");
    plane.shutdown().await;
}

#[tokio::test]
async fn an_if_needed_webhook_is_called_again_after_a_later_webhook_changed_the_object() {
    let adds = |label: &'static str| {
        move |request: &Value| match request.pointer(&format!("/object/metadata/labels/{label}")) {
            Some(_) => Reply::Allow(vec![]),
            None => Reply::Patch(json!([
                {"op": "add", "path": format!("/metadata/labels/{label}"), "value": "yes"}
            ])),
        }
    };
    let first = WebhookServer::start(adds("first")).await;
    let second = WebhookServer::start(adds("second")).await;
    let (plane, client) = start().await;
    // Configurations run in name order: a-first, then b-second.
    configure(
        &client,
        true,
        "a-first",
        vec![hook(
            "first.opkit.test",
            url_client(&first, "/mutate"),
            json!({"reinvocationPolicy": "IfNeeded"}),
        )],
    )
    .await;
    configure(
        &client,
        true,
        "b-second",
        vec![hook(
            "second.opkit.test",
            url_client(&second, "/mutate"),
            json!({}),
        )],
    )
    .await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let created = cms
        .create(
            &PostParams::default(),
            &config_map("twice", json!({"app": "x"})),
        )
        .await
        .unwrap();
    let labels = created.metadata.labels.unwrap_or_default();
    assert_eq!(labels.get("first").map(String::as_str), Some("yes"));
    assert_eq!(labels.get("second").map(String::as_str), Some("yes"));
    let calls = first.requests();
    assert_eq!(
        calls.len(),
        2,
        "called once more after the second webhook's change"
    );
    assert_eq!(calls[1]["object"]["metadata"]["labels"]["second"], "yes");
    assert_eq!(second.requests().len(), 1, "Never is not called again");
    plane.shutdown().await;
}

#[tokio::test]
async fn match_policy_equivalent_sends_another_version_of_the_same_resource() {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    let server = WebhookServer::start(|_| Reply::Allow(vec![])).await;
    let (plane, client) = start().await;
    let version = |name: &str, storage: bool| {
        json!({
            "name": name, "served": true, "storage": storage,
            "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
        })
    };
    let crd: CustomResourceDefinition = serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [version("v1", true), version("v2", false)],
        },
    }))
    .unwrap();
    Api::<CustomResourceDefinition>::all(client.clone())
        .create(&PostParams::default(), &crd)
        .await
        .unwrap();
    let mut equivalent = hook(
        "widgets.opkit.test",
        url_client(&server, "/validate"),
        json!({}),
    );
    equivalent["rules"] = json!([{
        "operations": ["CREATE"], "apiGroups": ["example.com"], "apiVersions": ["v1"], "resources": ["widgets"],
    }]);
    let mut exact = equivalent.clone();
    exact["name"] = json!("exact.opkit.test");
    exact["matchPolicy"] = json!("Exact");
    configure(&client, false, "widgets", vec![equivalent, exact]).await;

    let v2 = ApiResource::from_gvk(&GroupVersionKind::gvk("example.com", "v2", "Widget"));
    let widgets: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &v2);
    let widget: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "example.com/v2", "kind": "Widget",
        "metadata": {"name": "w"}, "spec": {"size": 1},
    }))
    .unwrap();
    opkit_testenv::eventually("v2 widgets to be served", || async {
        widgets.list(&Default::default()).await.is_ok()
    })
    .await;
    widgets
        .create(&PostParams::default(), &widget)
        .await
        .unwrap();

    let requests = server.requests();
    assert_eq!(requests.len(), 1, "only the Equivalent webhook is called");
    let request = &requests[0];
    assert_eq!(
        request["kind"],
        json!({"group": "example.com", "version": "v1", "kind": "Widget"})
    );
    assert_eq!(request["requestKind"]["version"], "v2");
    assert_eq!(request["requestResource"]["version"], "v2");
    assert_eq!(request["object"]["apiVersion"], "example.com/v1");
    plane.shutdown().await;
}

#[tokio::test]
async fn match_conditions_decide_which_writes_are_sent() {
    let server = WebhookServer::start(|_| Reply::Deny(403, "checked".into())).await;
    let (plane, client) = start().await;
    let conditions = json!({"matchConditions": [
        {"name": "not-skipped", "expression": "object.metadata.name != 'skipped'"},
        {"name": "by-admin", "expression": "request.userInfo.username == 'opkit-admin'"},
    ]});
    configure(
        &client,
        false,
        "conditional",
        vec![hook(
            "conditional.opkit.test",
            url_client(&server, "/validate"),
            conditions,
        )],
    )
    .await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    cms.create(&PostParams::default(), &config_map("skipped", json!({})))
        .await
        .expect("a false condition skips the webhook");
    let refused = status(
        cms.create(&PostParams::default(), &config_map("sent", json!({})))
            .await
            .expect_err("all conditions true: the webhook is called"),
    );
    assert_eq!(
        refused.message,
        "admission webhook \"conditional.opkit.test\" denied the request: checked"
    );
    assert_eq!(server.requests().len(), 1);

    let config: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "uncompilable"},
        "webhooks": [hook(
            "uncompilable.opkit.test",
            url_client(&server, "/validate"),
            json!({"matchConditions": [{"name": "typo", "expression": "objekt.metadata.name == 'x'"}]}),
        )],
    }))
    .unwrap();
    let refused = status(
        configuration_api(&client, false)
            .create(&PostParams::default(), &config)
            .await
            .expect_err("an expression that does not compile is refused"),
    );
    assert_eq!(refused.code, 422);
    assert!(
        refused.message.contains(
            "webhooks[0].matchConditions[0].expression: Invalid value: \"objekt.metadata.name == 'x'\": compilation failed: ERROR: <input>:1:1: undeclared reference to 'objekt'"
        ),
        "{}",
        refused.message
    );
    plane.shutdown().await;
}

#[tokio::test]
async fn webhook_configurations_never_reach_webhooks_so_a_broken_one_can_be_removed() {
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let down = format!("https://{}/validate", free.local_addr().unwrap());
    drop(free);
    let ca = WebhookServer::start(|_| Reply::Allow(vec![]))
        .await
        .ca_bundle();
    let (plane, client) = start().await;
    let mut everything = hook(
        "everything.opkit.test",
        json!({"url": down, "caBundle": ca}),
        json!({}),
    );
    everything["rules"] = json!([{
        "operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"],
    }]);
    configure(&client, false, "everything", vec![everything]).await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    cms.create(&PostParams::default(), &config_map("blocked", json!({})))
        .await
        .expect_err("the broken webhook blocks ordinary writes");
    configuration_api(&client, false)
        .delete("everything", &Default::default())
        .await
        .expect("its configuration can still be deleted");
    cms.create(&PostParams::default(), &config_map("free", json!({})))
        .await
        .expect("and writes pass again at once");
    plane.shutdown().await;
}

#[tokio::test]
async fn a_defaulting_webhook_fills_a_required_field_before_validation() {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    let server = WebhookServer::start(|request| {
        match request.pointer("/object/metadata/labels/default-me") {
            Some(_) => Reply::Patch(json!([{"op": "add", "path": "/spec/size", "value": 3}])),
            None => Reply::Allow(vec![]),
        }
    })
    .await;
    let (plane, client) = start().await;
    let crd: CustomResourceDefinition = serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {
                    "type": "object", "required": ["size"],
                    "properties": {"size": {"type": "integer", "minimum": 1}},
                }}}},
            }],
        },
    }))
    .unwrap();
    Api::<CustomResourceDefinition>::all(client.clone())
        .create(&PostParams::default(), &crd)
        .await
        .unwrap();
    let mut defaulting = hook(
        "gadgets.opkit.test",
        url_client(&server, "/mutate"),
        json!({}),
    );
    defaulting["rules"] = json!([{
        "operations": ["CREATE"], "apiGroups": ["example.com"], "apiVersions": ["v1"], "resources": ["gadgets"],
    }]);
    configure(&client, true, "gadgets", vec![defaulting]).await;
    let gadgets: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        "default",
        &ApiResource::from_gvk(&GroupVersionKind::gvk("example.com", "v1", "Gadget")),
    );
    opkit_testenv::eventually("gadgets to be served", || async {
        gadgets.list(&Default::default()).await.is_ok()
    })
    .await;
    let gadget = |name: &str, labels: Value| -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "example.com/v1", "kind": "Gadget",
            "metadata": {"name": name, "labels": labels}, "spec": {},
        }))
        .unwrap()
    };
    let created = gadgets
        .create(
            &PostParams::default(),
            &gadget("defaulted", json!({"default-me": "yes"})),
        )
        .await
        .expect("the webhook's default satisfies the schema");
    assert_eq!(created.data["spec"]["size"], 3);
    let refused = status(
        gadgets
            .create(&PostParams::default(), &gadget("bare", json!({})))
            .await
            .expect_err("without the default the object is invalid"),
    );
    assert_eq!(refused.code, 422);
    assert!(
        refused.message.contains("spec.size: Required value"),
        "{}",
        refused.message
    );
    plane.shutdown().await;
}

#[tokio::test]
async fn a_service_reference_reaches_the_address_of_its_endpoint_slice() {
    let server = WebhookServer::start(deny_labelled).await;
    let (plane, client) = start().await;
    let port = server.addr.port();
    create_in_default(
        &client,
        json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "hooks"},
            "spec": {"ports": [{"name": "https", "port": 8443, "targetPort": port}]},
        }),
    )
    .await;
    create_in_default(
        &client,
        json!({
            "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": "hooks-local", "labels": {"kubernetes.io/service-name": "hooks"}},
            "addressType": "IPv4",
            "endpoints": [{"addresses": ["127.0.0.1"], "conditions": {"ready": true}}],
            "ports": [{"name": "https", "port": port}],
        }),
    )
    .await;
    expect_the_service_webhook_to_answer(&client, &server, "slice.opkit.test", Some(8443)).await;
    plane.shutdown().await;
}

#[tokio::test]
async fn a_service_without_endpoints_fails_with_the_service_url() {
    let (plane, client) = start().await;
    let ca = WebhookServer::start(|_| Reply::Allow(vec![]))
        .await
        .ca_bundle();
    configure(
        &client,
        false,
        "nowhere",
        vec![hook(
            "nowhere.opkit.test",
            json!({"service": {"namespace": "default", "name": "missing"}, "caBundle": ca}),
            json!({}),
        )],
    )
    .await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let refused = status(
        cms.create(&PostParams::default(), &config_map("x", json!({})))
            .await
            .expect_err("an unresolvable Service fails the write"),
    );
    assert_eq!(
        refused.message,
        "Internal error occurred: failed calling webhook \"nowhere.opkit.test\": failed to call webhook: Post \"https://missing.default.svc:443/?timeout=10s\": service \"missing\" not found"
    );
    plane.shutdown().await;
}
