//! Limits and hostile input over real HTTPS: body size, requests in flight, request timeouts,
//! watches per user, idle connections, and malformed requests that must get a clear 4xx
//! `Status` and write nothing.

mod common;

use std::time::Duration;

use opkit_testenv::{EVENTUALLY_TIMEOUT, eventually};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, PostParams, WatchParams};

use opkit_controlplane::{Config, ControlPlane, Limits};
use serde_json::{Value, json};

async fn start_with(limits: Limits) -> ControlPlane {
    ControlPlane::start(Config {
        limits,
        ..Config::ephemeral()
    })
    .await
    .unwrap()
}

struct Answer {
    code: u16,
    retry_after: Option<String>,
    body: Value,
}

async fn send(
    client: &kube::Client,
    method: &str,
    path: &str,
    content_type: &str,
    body: Vec<u8>,
) -> Answer {
    let req = http::Request::builder()
        .method(method)
        .uri(path)
        .header("Content-Type", content_type)
        .body(body)
        .unwrap();
    let resp = client.send(req.map(Into::into)).await.unwrap();
    let code = resp.status().as_u16();
    let retry_after = resp
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().to_string());
    let bytes = http_body_util::BodyExt::collect(resp.into_body())
        .await
        .unwrap()
        .to_bytes();
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    Answer {
        code,
        retry_after,
        body,
    }
}

fn assert_status(a: &Answer, code: u16, reason: &str) {
    assert_eq!(a.code, code, "{}", a.body);
    assert_eq!(a.body["kind"], "Status", "{}", a.body);
    assert_eq!(a.body["reason"], reason, "{}", a.body);
    assert_eq!(a.body["code"], code);
}

const CMS: &str = "/api/v1/namespaces/default/configmaps";

#[tokio::test]
async fn a_body_over_3_mib_gets_413_and_nothing_is_written() {
    let plane = common::start().await;
    let client = common::client(&plane).await;
    let big = "x".repeat(3 * 1024 * 1024 + 1);
    let body = serde_json::to_vec(&json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "big"}, "data": {"blob": big}}))
    .unwrap();
    let a = send(&client, "POST", CMS, "application/json", body).await;
    assert_status(&a, 413, "RequestEntityTooLarge");
    let list = Api::<ConfigMap>::namespaced(client, "default")
        .list(&ListParams::default())
        .await
        .unwrap();
    assert!(
        list.items
            .iter()
            .all(|c| c.metadata.name.as_deref() != Some("big"))
    );
}

type H2Body = http_body_util::combinators::BoxBody<bytes::Bytes, std::convert::Infallible>;
type H2Sender = hyper::client::conn::http2::SendRequest<H2Body>;

/// An HTTP/2 connection over TLS (ALPN `h2`), as `curl --http2` and client-go make.
async fn h2_connection(plane: &ControlPlane) -> H2Sender {
    use rustls::pki_types::pem::PemObject;
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(rustls::pki_types::CertificateDer::from_pem_slice(plane.ca_pem().as_bytes()).unwrap())
        .unwrap();
    let mut config = rustls::ClientConfig::builder()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"h2".to_vec()];
    let connector = tokio_rustls::TlsConnector::from(std::sync::Arc::new(config));
    let tcp = tokio::net::TcpStream::connect(plane.addr()).await.unwrap();
    let tls = connector
        .connect("localhost".try_into().unwrap(), tcp)
        .await
        .unwrap();
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(b"h2".as_slice()));
    let (sender, connection) = hyper::client::conn::http2::handshake(
        hyper_util::rt::TokioExecutor::new(),
        hyper_util::rt::TokioIo::new(tls),
    )
    .await
    .unwrap();
    tokio::spawn(connection);
    sender
}

/// POSTs a JSON body as the admin over an HTTP/2 connection, in 64 KiB frames; also returns how
/// many bytes of it went out before the stream ended.
async fn post_h2(
    plane: &ControlPlane,
    sender: &mut H2Sender,
    path: &str,
    body: Vec<u8>,
) -> (Answer, usize) {
    use futures::StreamExt;
    use http_body_util::BodyExt;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let sent = Arc::new(AtomicUsize::new(0));
    let counter = sent.clone();
    let chunks: Vec<bytes::Bytes> = body
        .chunks(64 * 1024)
        .map(bytes::Bytes::copy_from_slice)
        .collect();
    let frames = futures::stream::iter(chunks).map(move |chunk| {
        counter.fetch_add(chunk.len(), Ordering::SeqCst);
        Ok(hyper::body::Frame::data(chunk))
    });
    let req = http::Request::post(format!("{}{path}", plane.url()))
        .header("Authorization", format!("Bearer {}", plane.token()))
        .header("Content-Type", "application/json")
        .header("Content-Length", body.len())
        .body(BodyExt::boxed(http_body_util::StreamBody::new(frames)))
        .unwrap();
    let resp = sender
        .send_request(req)
        .await
        .expect("an answer, not a reset stream");
    let code = resp.status().as_u16();
    let retry_after = resp
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().to_string());
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    let answer = Answer {
        code,
        retry_after,
        body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    };
    (answer, sent.load(Ordering::SeqCst))
}

#[tokio::test]
async fn a_body_over_3_mib_gets_413_over_http2_after_the_server_read_it_all() {
    let plane = common::start().await;
    let mut h2 = h2_connection(&plane).await;
    let big = "x".repeat(8_000_000);
    let body = serde_json::to_vec(&json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "big"}, "data": {"blob": big}}))
    .unwrap();
    let len = body.len();
    let (a, sent) = post_h2(&plane, &mut h2, CMS, body).await;
    assert_status(&a, 413, "RequestEntityTooLarge");
    // The whole upload went through (no RST_STREAM cut it short), so clients that read the
    // answer only once they have sent everything (curl 7.x) get it too.
    assert_eq!(sent, len);
    // The connection stays usable.
    let small = serde_json::to_vec(&json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "small"}}))
    .unwrap();
    assert_eq!(post_h2(&plane, &mut h2, CMS, small).await.0.code, 201);
    let names: Vec<String> = Api::<ConfigMap>::namespaced(common::client(&plane).await, "default")
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|c| c.metadata.name)
        .collect();
    assert!(names.contains(&"small".to_string()), "{names:?}");
    assert!(!names.contains(&"big".to_string()), "{names:?}");
}

#[tokio::test]
async fn malformed_requests_get_a_4xx_status_that_says_what_is_wrong_and_write_nothing() {
    let plane = common::start().await;
    let client = common::client(&plane).await;
    let cm = |name: &str, labels: Value| {
        serde_json::to_vec(&json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "labels": labels}}))
        .unwrap()
    };
    let a = send(
        &client,
        "POST",
        CMS,
        "application/json",
        b"{not json".to_vec(),
    )
    .await;
    assert_status(&a, 400, "BadRequest");
    assert!(
        a.body["message"].as_str().unwrap().contains("JSON"),
        "{}",
        a.body
    );
    let a = send(
        &client,
        "POST",
        CMS,
        "application/yaml",
        b"metadata: [unclosed".to_vec(),
    )
    .await;
    assert_status(&a, 400, "BadRequest");
    let a = send(&client, "POST", CMS, "text/plain", cm("plain", json!({}))).await;
    assert_eq!(a.code, 415, "{}", a.body);
    assert_eq!(a.body["reason"], "UnsupportedMediaType");
    let a = send(
        &client,
        "POST",
        CMS,
        "application/json",
        cm(&"n".repeat(300), json!({})),
    )
    .await;
    assert_status(&a, 422, "Invalid");
    assert_eq!(a.body["details"]["causes"][0]["field"], "metadata.name");
    let a = send(
        &client,
        "POST",
        CMS,
        "application/json",
        cm("Bad_Name", json!({})),
    )
    .await;
    assert_status(&a, 422, "Invalid");
    assert!(
        a.body["message"]
            .as_str()
            .unwrap()
            .contains("RFC 1123 subdomain"),
        "{}",
        a.body
    );
    let a = send(
        &client,
        "POST",
        CMS,
        "application/json",
        cm("labelled", json!({"app": "has spaces"})),
    )
    .await;
    assert_status(&a, 422, "Invalid");
    assert_eq!(a.body["details"]["causes"][0]["field"], "metadata.labels");
    let a = send(
        &client,
        "GET",
        &format!("{CMS}?labelSelector=a%20in%20(b"),
        "application/json",
        Vec::new(),
    )
    .await;
    assert_status(&a, 400, "BadRequest");
    let a = send(
        &client,
        "GET",
        &format!("{CMS}?fieldSelector=spec.nothing%3Dx"),
        "application/json",
        Vec::new(),
    )
    .await;
    assert_status(&a, 400, "BadRequest");
    let a = send(
        &client,
        "GET",
        &format!("{CMS}?timeout=soon"),
        "application/json",
        Vec::new(),
    )
    .await;
    assert_status(&a, 400, "BadRequest");
    let a = send(
        &client,
        "PATCH",
        &format!("{CMS}/missing"),
        "application/json-patch+json",
        b"[{\"op\": \"explode\"}]".to_vec(),
    )
    .await;
    assert!((400..500).contains(&a.code), "{}", a.body);
    assert_eq!(a.body["kind"], "Status");
    // Nothing of the above was stored.
    let list = Api::<ConfigMap>::namespaced(client, "default")
        .list(&ListParams::default())
        .await
        .unwrap();
    let names: Vec<_> = list
        .items
        .iter()
        .filter_map(|c| c.metadata.name.clone())
        .collect();
    assert!(
        names.iter().all(|n| n == "kube-root-ca.crt"),
        "unexpected objects: {names:?}"
    );
}

#[tokio::test]
async fn requests_over_the_in_flight_limit_get_429_with_retry_after_while_health_checks_answer() {
    let plane = start_with(Limits {
        max_requests_inflight: 2,
        ..Limits::default()
    })
    .await;
    let client = common::loader(&plane).await;
    // Two reads that wait (a resourceVersion from the future: the server waits up to 3 s
    // for the store to reach it) hold both read slots; each tries again until it got one.
    let slow = format!("{CMS}?resourceVersion=999999999&resourceVersionMatch=NotOlderThan");
    let holders: Vec<_> = (0..2)
        .map(|_| {
            let client = client.clone();
            let slow = slow.clone();
            tokio::spawn(async move {
                loop {
                    let a = send(&client, "GET", &slow, "application/json", Vec::new()).await;
                    if a.code != 429 {
                        break a;
                    }
                }
            })
        })
        .collect();
    // Once both hold their slot, a third read is shed.
    let shed = eventually("a read shed while both read slots are held", || async {
        let a = send(&client, "GET", CMS, "application/json", Vec::new()).await;
        (a.code == 429).then_some(a)
    })
    .await;
    assert_status(&shed, 429, "TooManyRequests");
    assert_eq!(shed.retry_after.as_deref(), Some("1"));
    assert_eq!(shed.body["details"]["retryAfterSeconds"], 1);
    // Writes have their own budget; health checks and the admin are never shed.
    let write = send(
        &client,
        "POST",
        CMS,
        "application/json",
        serde_json::to_vec(
            &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "w"}}),
        )
        .unwrap(),
    )
    .await;
    assert_eq!(write.code, 201, "{}", write.body);
    let admin = common::no_retry_client(plane.kubeconfig()).await;
    assert_eq!(
        send(&admin, "GET", "/readyz", "text/plain", Vec::new())
            .await
            .code,
        200
    );
    assert_eq!(
        send(&admin, "GET", CMS, "application/json", Vec::new())
            .await
            .code,
        200
    );
    for h in holders {
        let a = h.await.unwrap();
        assert_status(&a, 504, "Timeout");
    }
    let after = send(&client, "GET", CMS, "application/json", Vec::new()).await;
    assert_eq!(after.code, 200, "slots are released: {}", after.body);
}

#[tokio::test]
async fn a_request_that_outlives_the_request_timeout_gets_504() {
    let plane = start_with(Limits {
        request_timeout: Duration::from_millis(200),
        ..Limits::default()
    })
    .await;
    let client = common::no_retry_client(plane.kubeconfig()).await;
    // Watches are long-running and exempt: this one, opened first, outlives the request below.
    let mut watch = Box::pin(
        Api::<ConfigMap>::namespaced(client.clone(), "default")
            .watch(&WatchParams::default().timeout(30), "0")
            .await
            .unwrap(),
    );
    let a = send(
        &client,
        "GET",
        &format!("{CMS}?resourceVersion=999999999&resourceVersionMatch=NotOlderThan"),
        "application/json",
        Vec::new(),
    )
    .await;
    assert_status(&a, 504, "Timeout");
    assert_eq!(
        a.body["message"], "Timeout: request did not complete within the allotted timeout",
        "the request timeout ended it, not the server's 3 s wait for the resourceVersion"
    );

    Api::<ConfigMap>::namespaced(client, "default")
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "late"}})).unwrap(),
        )
        .await
        .unwrap();
    use futures::StreamExt;
    let mut saw_late = false;
    while let Some(ev) = watch.next().await {
        if let Ok(kube::api::WatchEvent::Added(cm)) = ev
            && cm.metadata.name.as_deref() == Some("late")
        {
            saw_late = true;
            break;
        }
    }
    assert!(saw_late, "the watch outlived the request timeout");
}

#[tokio::test]
async fn watches_are_capped_per_user() {
    let plane = start_with(Limits {
        max_watches_per_user: 2,
        ..Limits::default()
    })
    .await;
    let client = common::loader(&plane).await;
    let api = Api::<ConfigMap>::namespaced(client.clone(), "default");
    let w1 = api.watch(&WatchParams::default(), "0").await.unwrap();
    let w2 = api.watch(&WatchParams::default(), "0").await.unwrap();
    let err = match api.watch(&WatchParams::default(), "0").await {
        Err(kube::Error::Api(s)) => s,
        Err(e) => panic!("unexpected error {e}"),
        Ok(_) => panic!("a third watch was admitted"),
    };
    assert_eq!((err.code, err.reason.as_str()), (429, "TooManyRequests"));
    assert!(err.message.contains("\"loader\""), "{}", err.message);
    // Other users are not affected; closing a watch frees a slot.
    let admin = common::client(&plane).await;
    let _admin_watch = Api::<ConfigMap>::namespaced(admin, "default")
        .watch(&WatchParams::default(), "0")
        .await
        .unwrap();
    drop(w1);
    let _w3 = eventually("the closed watch's slot released", || async {
        api.watch(&WatchParams::default(), "0").await.ok()
    })
    .await;
    drop(w2);
}

#[tokio::test]
async fn idle_connections_are_closed() {
    use tokio::io::AsyncReadExt;
    let plane = start_with(Limits {
        idle_timeout: Duration::from_millis(300),
        ..Limits::default()
    })
    .await;
    // A TCP connection that never starts TLS.
    let mut tcp = tokio::net::TcpStream::connect(plane.addr()).await.unwrap();
    let mut buf = [0u8; 16];
    let n = tokio::time::timeout(EVENTUALLY_TIMEOUT, tcp.read(&mut buf))
        .await
        .expect("the server closes a silent connection")
        .unwrap_or(0);
    assert_eq!(n, 0);
    // A TLS connection that never sends a request.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut roots = rustls::RootCertStore::empty();
    use rustls::pki_types::pem::PemObject;
    roots
        .add(rustls::pki_types::CertificateDer::from_pem_slice(plane.ca_pem().as_bytes()).unwrap())
        .unwrap();
    let config = rustls::ClientConfig::builder()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(std::sync::Arc::new(config));
    let tcp = tokio::net::TcpStream::connect(plane.addr()).await.unwrap();
    let mut tls = connector
        .connect("localhost".try_into().unwrap(), tcp)
        .await
        .unwrap();
    let n = tokio::time::timeout(EVENTUALLY_TIMEOUT, tls.read(&mut buf))
        .await
        .expect("the server closes an idle TLS connection")
        .unwrap_or(0);
    assert_eq!(n, 0);
}
