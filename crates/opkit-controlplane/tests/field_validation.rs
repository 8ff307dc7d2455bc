//! `fieldValidation` over real HTTPS: unknown and duplicate fields are dropped, warned about or
//! refused, and a `Strict` refusal reads word for word as upstream's for each verb (kubectl
//! shows the message as it is).

mod common;

use serde_json::{Value, json};

const CMS: &str = "/api/v1/namespaces/default/configmaps";
const TICKETS: &str = "/apis/flights.com/v1/namespaces/default/flighttickets";

struct Answer {
    code: u16,
    warnings: Vec<String>,
    body: Value,
}

async fn send(
    client: &kube::Client,
    method: &str,
    path: &str,
    content_type: &str,
    body: &str,
) -> Answer {
    let req = http::Request::builder()
        .method(method)
        .uri(path)
        .header("Content-Type", content_type)
        .body(body.as_bytes().to_vec())
        .unwrap();
    let resp = client.send(req.map(Into::into)).await.unwrap();
    let code = resp.status().as_u16();
    let warnings = resp
        .headers()
        .get_all("warning")
        .iter()
        .map(|v| v.to_str().unwrap().to_string())
        .collect();
    let bytes = http_body_util::BodyExt::collect(resp.into_body())
        .await
        .unwrap()
        .to_bytes();
    Answer {
        code,
        warnings,
        body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    }
}

/// Asserts a refusal's code, reason and exact message.
fn assert_refused(a: &Answer, code: u16, reason: &str, message: &str) {
    assert_eq!(a.code, code, "{}", a.body);
    assert_eq!(a.body["reason"], reason, "{}", a.body);
    assert_eq!(a.body["message"], message);
}

const JSON: &str = "application/json";

#[tokio::test]
async fn strict_create_and_replace_of_builtins_name_kind_version_and_every_bad_field() {
    let plane = common::start().await;
    let client = common::client(&plane).await;
    let strict = format!("{CMS}?fieldValidation=Strict");
    // Several unknown fields are joined, after the body's duplicate fields.
    let body = r#"{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"},
        "bogus": true, "data": {"k": "1", "k": "2"}, "spec": {"foo": 1}}"#;
    let a = send(&client, "POST", &strict, JSON, body).await;
    assert_refused(
        &a,
        400,
        "BadRequest",
        r#"ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: duplicate field "data.k", unknown field "bogus", unknown field "spec""#,
    );
    // The version is the one the body names, without its group; paths go into lists.
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "image": "nginx", "foo": 1}]}}}});
    let a = send(
        &client,
        "POST",
        "/apis/apps/v1/namespaces/default/deployments?fieldValidation=Strict",
        JSON,
        &deployment.to_string(),
    )
    .await;
    assert_refused(
        &a,
        400,
        "BadRequest",
        r#"Deployment in version "v1" cannot be handled as a Deployment: strict decoding error: unknown field "spec.template.spec.containers[0].foo""#,
    );
    // Warn (the default) writes, keeps the last of duplicates and says what it dropped.
    let a = send(&client, "POST", CMS, JSON, body).await;
    assert_eq!(a.code, 201, "{}", a.body);
    assert_eq!(a.body["data"], json!({"k": "2"}));
    assert_eq!(
        a.warnings,
        [
            r#"299 - "duplicate field \"data.k\"""#,
            r#"299 - "unknown field \"bogus\"""#,
            r#"299 - "unknown field \"spec\"""#
        ]
    );
    // A replace is worded as a create; Ignore says nothing.
    let put = r#"{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"},
        "data": {"k": "3"}, "extra": 1}"#;
    let a = send(
        &client,
        "PUT",
        &format!("{CMS}/a?fieldValidation=Strict"),
        JSON,
        put,
    )
    .await;
    assert_refused(
        &a,
        400,
        "BadRequest",
        r#"ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: unknown field "extra""#,
    );
    let a = send(
        &client,
        "PUT",
        &format!("{CMS}/a?fieldValidation=Ignore"),
        JSON,
        put,
    )
    .await;
    assert_eq!((a.code, a.warnings.len()), (200, 0), "{}", a.body);
    assert_eq!(a.body["data"], json!({"k": "3"}));
}

#[tokio::test]
async fn strict_patches_are_refused_as_invalid_patches_showing_what_was_patched() {
    let plane = common::start().await;
    let client = common::client(&plane).await;
    let created = send(
        &client,
        "POST",
        CMS,
        JSON,
        r#"{"metadata": {"name": "p"}, "data": {"k": "1"}}"#,
    )
    .await;
    assert_eq!(created.code, 201, "{}", created.body);
    let path = format!("{CMS}/p?fieldValidation=Strict");
    // A strategic merge patch shows the patch, as Go prints a map.
    let a = send(
        &client,
        "PATCH",
        &path,
        "application/strategic-merge-patch+json",
        r#"{"data": {"b": "2"}, "spec": {"x": 1, "x": 2}}"#,
    )
    .await;
    assert_refused(
        &a,
        422,
        "Invalid",
        r#" "" is invalid: patch: Invalid value: "map[data:map[b:2] spec:map[x:2]]": strict decoding error: duplicate field "spec.x", unknown field "spec""#,
    );
    assert_eq!(a.body["details"]["causes"][0]["field"], "patch");
    // A merge patch shows the patched object, as Go encodes it.
    let a = send(
        &client,
        "PATCH",
        &path,
        "application/merge-patch+json",
        r#"{"bogus": "<x>"}"#,
    )
    .await;
    let message = a.body["message"].as_str().unwrap_or_default();
    assert_eq!(
        (a.code, a.body["reason"].as_str()),
        (422, Some("Invalid")),
        "{}",
        a.body
    );
    assert!(
        message.starts_with(r#" "" is invalid: patch: Invalid value: "{\"apiVersion\":\"v1\",\"bogus\":\"\\u003cx\\u003e\",\"data\":{\"k\":\"1\"},"#),
        "{message}"
    );
    assert!(
        message.ends_with(r#"}": strict decoding error: unknown field "bogus""#),
        "{message}"
    );
    // A JSON patch also answers for its own operations.
    let a = send(
        &client,
        "PATCH",
        &path,
        "application/json-patch+json",
        r#"[{"op": "add", "path": "/data/b", "value": "2", "bogus": 1}]"#,
    )
    .await;
    let message = a.body["message"].as_str().unwrap_or_default();
    assert_eq!(a.code, 422, "{}", a.body);
    assert!(
        message.ends_with(r#": strict decoding error: json patch unknown field "[0].bogus""#),
        "{message}"
    );
    // Nothing was written; the same patches under Warn go through with warnings.
    let a = send(
        &client,
        "PATCH",
        &format!("{CMS}/p"),
        "application/strategic-merge-patch+json",
        r#"{"data": {"b": "2"}, "spec": {"x": 1}}"#,
    )
    .await;
    assert_eq!(a.code, 200, "{}", a.body);
    assert_eq!(a.body["data"], json!({"k": "1", "b": "2"}));
    assert_eq!(a.warnings, [r#"299 - "unknown field \"spec\"""#]);
}

#[tokio::test]
async fn strict_writes_of_custom_resources_use_the_same_words() {
    let plane = common::start().await;
    let client = common::client(&plane).await;
    common::install_flight_ticket_crd(&client).await;
    let ticket = |extra: &str| {
        format!(
            r#"{{"apiVersion": "flights.com/v1", "kind": "FlightTicket", "metadata": {{"name": "t"}},
                "spec": {{"from": "AMS", "to": "SFO", "number": 2{extra}}}}}"#
        )
    };
    let strict = format!("{TICKETS}?fieldValidation=Strict");
    let a = send(
        &client,
        "POST",
        &strict,
        JSON,
        &ticket(r#", "seat": "1A", "to": "LHR""#),
    )
    .await;
    assert_refused(
        &a,
        400,
        "BadRequest",
        r#"FlightTicket in version "v1" cannot be handled as a FlightTicket: strict decoding error: duplicate field "spec.to", unknown field "spec.seat""#,
    );
    assert_eq!(
        send(&client, "POST", TICKETS, JSON, &ticket("")).await.code,
        201
    );
    let a = send(
        &client,
        "PATCH",
        &format!("{TICKETS}/t?fieldValidation=Strict"),
        "application/merge-patch+json",
        r#"{"spec": {"gate": "D7"}}"#,
    )
    .await;
    let message = a.body["message"].as_str().unwrap_or_default();
    assert_eq!(a.code, 422, "{}", a.body);
    assert!(
        message.starts_with(r#" "" is invalid: patch: Invalid value: "{"#),
        "{message}"
    );
    assert!(
        message.ends_with(r#": strict decoding error: unknown field "spec.gate""#),
        "{message}"
    );
}
