//! Target for the whole request path of the control plane: random method, path, query,
//! headers and body sent through `ApiServer::serve` in-process, plus the decoding functions it
//! is built from (`request::parse_path`, `request::parse_query`, `server::decode_body`).
//!
//! This is the surface a hostile client actually reaches. Whatever it sends, the server must
//! answer with a well-formed response (errors as a `kind: Status` JSON body whose `code` is the
//! HTTP status), must not answer 500 (a server error on client input is a bug; 503 and 504 are
//! legitimate back-pressure answers), must not hang, and must keep serving others afterwards.
//!
//! One control plane (in memory, no built-in controllers) is started per process and reused:
//! starting one per input would make the fuzzer measure start-up instead of request handling.
//! Objects created by earlier inputs therefore stay, which lets later inputs hit
//! update/patch/delete paths of existing objects.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, StatusCode, header};
use http_body_util::{BodyExt, Full};
use opkit_apiserver::ApiServer;
use opkit_apiserver::fuzzing::{Registry, Target, decode_body, parse_path, parse_query};
use opkit_controlplane::{Config, ControlPlane};
use serde_json::Value;

use crate::fixtures;
use crate::input::Input;

/// How long one request may take before it counts as a hang.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// The shared in-process control plane.
struct Harness {
    runtime: tokio::runtime::Runtime,
    server: Arc<ApiServer>,
    token: String,
    /// Kept so the control plane keeps running for the life of the process.
    _plane: ControlPlane,
}

/// Why the shared control plane could not be set up.
#[derive(Debug)]
pub struct HarnessError(String);

impl std::fmt::Display for HarnessError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cannot start the fuzzing control plane: {}", self.0)
    }
}

impl std::error::Error for HarnessError {}

fn harness() -> &'static Harness {
    static HARNESS: OnceLock<Result<Harness, HarnessError>> = OnceLock::new();
    let h = HARNESS.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .map_err(|e| HarnessError(e.to_string()))?;
        let config = Config {
            controllers: opkit_controlplane::controllers::Settings::bare(),
            ..Config::ephemeral()
        };
        let plane = runtime
            .block_on(ControlPlane::start(config))
            .map_err(|e| HarnessError(e.to_string()))?;
        Ok(Harness {
            server: plane.server().clone(),
            token: plane.token().to_owned(),
            runtime,
            _plane: plane,
        })
    });
    match h {
        Ok(h) => h,
        Err(e) => panic!("{e}"),
    }
}

/// One request as the target builds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FuzzRequest {
    /// HTTP method (any token, including unknown ones).
    pub method: String,
    /// Path and query (`/api/v1/namespaces?limit=1`).
    pub uri: String,
    /// `Content-Type`, if any.
    pub content_type: Option<String>,
    /// `Accept`, if any.
    pub accept: Option<String>,
    /// Whether to send the admin token (otherwise a wrong one).
    pub authenticated: bool,
    /// The body.
    pub body: Vec<u8>,
}

/// What the server answered.
#[derive(Debug, Clone)]
pub struct Answer {
    /// The status code.
    pub status: StatusCode,
    /// The body, when it has a known length (streams such as watches are not read).
    pub body: Option<Bytes>,
}

const METHODS: &[&str] = &[
    "GET", "GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "BREW",
];

const PREFIXES: &[&str] = &[
    "/api/v1",
    "/api/v1/namespaces/default",
    "/apis/apps/v1/namespaces/default",
    "/apis/apps/v1",
    "/apis/apiextensions.k8s.io/v1",
    "/apis/example.com/v1/namespaces/default",
    "/apis/coordination.k8s.io/v1/namespaces/default",
    "/apis/rbac.authorization.k8s.io/v1",
    "/api",
    "/apis",
    "/apis/apps",
    "/openapi/v3",
    "/openapi/v2",
    "/version",
    "/healthz",
    "",
];

const SEGMENTS: &[&str] = &[
    "namespaces",
    "default",
    "kube-system",
    "fuzz",
    "configmaps",
    "pods",
    "deployments",
    "secrets",
    "services",
    "events",
    "leases",
    "customresourcedefinitions",
    "widgets",
    "status",
    "scale",
    "binding",
    "eviction",
    "log",
    "finalize",
    "watch",
    "c1",
    "p",
    "web",
    "w",
    "x",
    "..",
    ".",
    "%2F",
    "%00",
    "%",
    "-",
    "A",
    "a.b",
    "é",
    "",
    "v1",
    "apps",
];

const QUERY_KEYS: &[&str] = &[
    "labelSelector",
    "fieldSelector",
    "limit",
    "continue",
    "resourceVersion",
    "resourceVersionMatch",
    "timeoutSeconds",
    "dryRun",
    "fieldManager",
    "fieldValidation",
    "force",
    "propagationPolicy",
    "gracePeriodSeconds",
    "watch",
    "allowWatchBookmarks",
    "sendInitialEvents",
    "pretty",
    "includeObject",
    "orphanDependents",
    "x",
];

const QUERY_VALUES: &[&str] = &[
    "",
    "0",
    "1",
    "-1",
    "true",
    "false",
    "All",
    "Strict",
    "Warn",
    "Ignore",
    "Foreground",
    "Orphan",
    "NotOlderThan",
    "Exact",
    "a%3Db",
    "a!%3Db",
    "a+in+(x,y)",
    "metadata.name%3Dc1",
    "%ZZ",
    "%",
    "99999999999999999999",
    "Object",
    "me",
    "%E2%82",
    "a%2Cb",
];

const CONTENT_TYPES: &[&str] = &[
    "application/json",
    "application/json; charset=utf-8",
    "application/yaml",
    "application/vnd.kubernetes.protobuf",
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
    "application/apply-patch+cbor",
    "text/plain",
    ";",
    "",
];

const ACCEPTS: &[&str] = &[
    "application/json",
    "application/json;as=Table;v=v1;g=meta.k8s.io",
    "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io",
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
    "application/vnd.kubernetes.protobuf",
    "application/yaml",
    "*/*",
    "text/html",
    ";;=",
];

/// The request target from raw bytes.
pub fn request_target(data: &[u8]) {
    let mut input = Input::new(data);
    let req = fuzz_request(&mut input);
    request_values(&req);
}

/// Builds a request from fuzzer choices: mostly meaningful paths, parameters, media types and
/// bodies (real objects, mutated; patches), sometimes raw bytes.
pub fn fuzz_request(input: &mut Input<'_>) -> FuzzRequest {
    let method = input.pick(METHODS).to_owned();
    let mut uri = input.pick(PREFIXES).to_owned();
    for _ in 0..input.below(4) {
        uri.push('/');
        uri.push_str(input.pick(SEGMENTS));
    }
    if input.below(6) == 0 {
        uri.push_str(&String::from_utf8_lossy(input.bytes(16)));
    }
    let n = input.below(4);
    for i in 0..n {
        uri.push(if i == 0 { '?' } else { '&' });
        uri.push_str(input.pick(QUERY_KEYS));
        uri.push('=');
        uri.push_str(input.pick(QUERY_VALUES));
    }
    let content_type = match input.below(CONTENT_TYPES.len() + 1) {
        0 => None,
        i => Some(CONTENT_TYPES[i - 1].to_owned()),
    };
    let accept = match input.below(ACCEPTS.len() + 2) {
        0 | 1 => None,
        i => Some(ACCEPTS[i - 2].to_owned()),
    };
    let authenticated = input.below(16) != 0;
    let body = match input.below(6) {
        0 => Vec::new(),
        1 => input.bytes(256).to_vec(),
        2 => input.json(4).to_string().into_bytes(),
        _ => {
            let mut obj = match input.below(5) {
                0 => serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "c1", "namespace": "default"}, "data": {"a": "1"}}),
                1 => fixtures::pod(),
                2 => fixtures::custom_resource(),
                3 => serde_json::json!({"apiVersion": "v1", "kind": "Namespace",
                    "metadata": {"name": "fuzz"}}),
                _ => fixtures::deployment(),
            };
            input.mutate(&mut obj, 3);
            obj.to_string().into_bytes()
        }
    };
    FuzzRequest {
        method,
        uri,
        content_type,
        accept,
        authenticated,
        body,
    }
}

/// Request properties: the pure decoders never panic on the pieces; the server answers
/// within [`REQUEST_TIMEOUT`] with a well-formed response; any 4xx/5xx has a `kind: Status`
/// JSON body whose `code` is the status; no 5xx other than 503/504; without the token, only
/// the unauthenticated endpoints answer 2xx; a normal GET still works afterwards.
pub fn request_values(req: &FuzzRequest) {
    // What the server sees: the URI as `http` parses it (a `#fragment` is not part of the path).
    let Ok(uri) = req.uri.parse::<http::Uri>() else {
        return;
    };
    let target = parse_path(uri.path());
    let _ = parse_query(uri.query());
    let snapshot = Registry::new().snapshot();
    if let Some(res) = snapshot.get("", "v1", "configmaps") {
        let _ = decode_body(res, req.content_type.as_deref(), &req.body);
    }

    let Some(answer) = send(req) else {
        return;
    };
    let code = answer.status.as_u16();
    if code >= 400
        && let Some(body) = &answer.body
        && req.method != "HEAD"
    {
        let status: Value = match serde_json::from_slice(body) {
            Ok(v) => v,
            Err(e) => panic!(
                "{code} answer to {req:?} is not JSON ({e}): {:?}",
                String::from_utf8_lossy(body)
            ),
        };
        assert_eq!(
            status.get("kind").and_then(Value::as_str),
            Some("Status"),
            "{code} answer to {req:?} is not a Status: {status}"
        );
        assert_eq!(
            status.get("code").and_then(Value::as_u64),
            Some(u64::from(code)),
            "Status code differs from the HTTP status for {req:?}: {status}"
        );
    }
    assert!(
        code < 500 || code == 503 || code == 504,
        "server error {code} for {req:?}: {}",
        answer
            .body
            .as_ref()
            .map(|b| String::from_utf8_lossy(b).into_owned())
            .unwrap_or_default()
    );
    let public = matches!(target, Target::Health | Target::Version);
    if !req.authenticated && !public {
        assert!(
            code == 401 || code == 403,
            "{code} for an unauthenticated {req:?}"
        );
    }
    still_serving();
}

/// Sends one request through `ApiServer::serve`. `None` when the pieces do not form an HTTP
/// request at all (an invalid method token or URI), which never reaches a server.
pub fn send(req: &FuzzRequest) -> Option<Answer> {
    let method = Method::from_bytes(req.method.as_bytes()).ok()?;
    let mut builder = Request::builder().method(method).uri(req.uri.as_str());
    let h = harness();
    let token = if req.authenticated {
        h.token.as_str()
    } else {
        "not-the-token"
    };
    builder = builder.header(header::AUTHORIZATION, format!("Bearer {token}"));
    builder = builder.header(header::USER_AGENT, "opkit-fuzz");
    if let Some(ct) = &req.content_type {
        builder = builder.header(header::CONTENT_TYPE, ct.as_str());
    }
    if let Some(a) = &req.accept {
        builder = builder.header(header::ACCEPT, a.as_str());
    }
    let request = builder
        .body(Full::new(Bytes::from(req.body.clone())))
        .ok()?;
    let server = h.server.clone();
    let answer = h.runtime.block_on(async move {
        let resp = tokio::time::timeout(REQUEST_TIMEOUT, server.serve(request)).await?;
        let status = resp.status();
        let body = resp.into_body();
        let body = if hyper::body::Body::size_hint(&body).exact().is_some() {
            let collected = tokio::time::timeout(REQUEST_TIMEOUT, body.collect()).await?;
            collected.ok().map(http_body_util::Collected::to_bytes)
        } else {
            None
        };
        Ok::<_, tokio::time::error::Elapsed>(Answer { status, body })
    });
    match answer {
        Ok(a) => Some(a),
        Err(_) => panic!("no answer within {REQUEST_TIMEOUT:?} to {req:?}"),
    }
}

/// A plain authenticated GET of the `default` namespace answers 200.
pub fn still_serving() {
    let probe = FuzzRequest {
        method: "GET".into(),
        uri: "/api/v1/namespaces/default".into(),
        content_type: None,
        accept: Some("application/json".into()),
        authenticated: true,
        body: Vec::new(),
    };
    match send(&probe) {
        Some(a) => assert_eq!(a.status, StatusCode::OK, "the server stopped serving"),
        None => panic!("the probe request could not be built"),
    }
}
