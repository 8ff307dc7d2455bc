//! The owner-reference proxy: every run reaches the API server through it, so what a role
//! creates belongs to the custom resource it ran for (operator-sdk's ansible proxy).
//!
//! The proxy listens on `127.0.0.1` (a port of the system's choosing) and forwards each
//! request with the operator's own client — its credentials, its TLS to the API server —
//! streaming responses (watches included) back as they come. A create (`POST` on a
//! collection) is rewritten first: a dependent the owner can own (same namespace, or any
//! object of a cluster-scoped owner) gets a controller owner reference with
//! `blockOwnerDeletion`; any other (cluster-scoped, or in another namespace) gets the
//! `operator-sdk/primary-resource` and `operator-sdk/primary-resource-type` annotations. The
//! kinds so created are remembered per run, for its dependent watches. Started without
//! injection (`--inject-owner-ref=false`), the proxy forwards creates unchanged and remembers
//! nothing.
//!
//! Which custom resource a request is for comes from its bearer token: each run gets a
//! [`Session`], a fresh random token known only to the proxy and written into that run's
//! kubeconfig, mapped to the owner until the run ends. operator-sdk puts the owner itself,
//! base64-encoded, in the kubeconfig's user name; a secret token instead means no other
//! local process can borrow the operator's credentials through the proxy or make objects
//! owned by a custom resource it does not run for: requests without a live token get a
//! `401` `Status`. Upgraded connections (exec, attach, port-forward) are refused with a
//! `Status`, and so is a create whose body is not a JSON object.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, Method, StatusCode, header};
use kube::Client;
use kube::api::ApiResource;
use serde_json::{Value, json};

/// The annotation naming a dependent's owner (`namespace/name`) when it cannot have an
/// owner reference.
pub(crate) const PRIMARY_RESOURCE_ANNOTATION: &str = "operator-sdk/primary-resource";
/// The annotation naming the owner's kind (`Kind.group`) beside [`PRIMARY_RESOURCE_ANNOTATION`].
pub(crate) const PRIMARY_RESOURCE_TYPE_ANNOTATION: &str = "operator-sdk/primary-resource-type";

/// The largest request body forwarded (the API server's own limit).
const MAX_BODY: usize = 3 * 1024 * 1024;

/// Headers that belong to one connection, never forwarded.
const HOP_BY_HOP: [header::HeaderName; 7] = [
    header::CONNECTION,
    header::HOST,
    header::PROXY_AUTHORIZATION,
    header::TE,
    header::TRAILER,
    header::TRANSFER_ENCODING,
    header::UPGRADE,
];

/// The custom resource a run works for.
#[derive(Debug, Clone)]
pub(crate) struct Owner {
    /// `group/version` (or `version` for the core group).
    pub(crate) api_version: String,
    pub(crate) group: String,
    pub(crate) kind: String,
    pub(crate) name: String,
    /// `None` for a cluster-scoped custom resource.
    pub(crate) namespace: Option<String>,
    pub(crate) uid: String,
}

impl Owner {
    /// `Kind.group`, the value of [`PRIMARY_RESOURCE_TYPE_ANNOTATION`].
    pub(crate) fn type_annotation(&self) -> String {
        format!("{}.{}", self.kind, self.group)
    }

    /// `namespace/name`, the value of [`PRIMARY_RESOURCE_ANNOTATION`].
    fn resource_annotation(&self) -> String {
        format!(
            "{}/{}",
            self.namespace.as_deref().unwrap_or_default(),
            self.name
        )
    }

    /// Whether an object in `namespace` (`None`: cluster-scoped) can carry an owner
    /// reference to this owner: a namespaced owner owns only objects of its namespace.
    fn can_own(&self, namespace: Option<&str>) -> bool {
        self.namespace.is_none() || self.namespace.as_deref() == namespace
    }
}

/// A kind a run created through the proxy, and how its objects name their owner.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Dependent {
    pub(crate) resource: ApiResource,
    pub(crate) namespaced: bool,
    /// Owner reference (`true`) or annotations (`false`).
    pub(crate) owner_reference: bool,
}

/// A run's registration: its owner and the kinds it created.
struct Registration {
    owner: Owner,
    dependents: Vec<Dependent>,
}

struct Shared {
    client: Client,
    /// Whether creates get the owner reference or annotations.
    inject: bool,
    runs: Mutex<HashMap<String, Registration>>,
}

impl Shared {
    fn runs(&self) -> std::sync::MutexGuard<'_, HashMap<String, Registration>> {
        self.runs.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The running proxy; it stops when dropped.
pub(crate) struct Proxy {
    shared: Arc<Shared>,
    addr: SocketAddr,
    server: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for Proxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Proxy").field("addr", &self.addr).finish()
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl Proxy {
    /// Starts the proxy in front of `client`'s API server; `inject`: whether creates get
    /// their owner (see the [module docs](self)).
    pub(crate) async fn start(client: Client, inject: bool) -> std::io::Result<Proxy> {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            client,
            inject,
            runs: Mutex::default(),
        });
        let app = axum::Router::new()
            .fallback(handle)
            .with_state(shared.clone());
        let server = tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, app).await {
                tracing::error!(error = %e, "the owner-reference proxy stopped");
            }
        });
        tracing::debug!(%addr, "owner-reference proxy listening");
        Ok(Proxy {
            shared,
            addr,
            server,
        })
    }

    /// Opens a run's session for `owner` (see the [module docs](self)).
    pub(crate) fn session(&self, owner: Owner) -> Session {
        let token = format!("{:032x}", rand::random::<u128>());
        self.shared.runs().insert(
            token.clone(),
            Registration {
                owner,
                dependents: Vec::new(),
            },
        );
        Session {
            shared: self.shared.clone(),
            token,
            addr: self.addr,
        }
    }
}

/// One run's access to the proxy; the token dies with it.
pub(crate) struct Session {
    shared: Arc<Shared>,
    token: String,
    addr: SocketAddr,
}

impl Session {
    /// The run's kubeconfig: the proxy, this session's token, the owner's namespace.
    pub(crate) fn kubeconfig(&self) -> String {
        let namespace = self
            .shared
            .runs()
            .get(&self.token)
            .and_then(|r| r.owner.namespace.clone())
            .unwrap_or_else(|| "default".into());
        let config = json!({
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "proxy", "cluster": {"server": format!("http://{}", self.addr)}}],
            "users": [{"name": "owner", "user": {"token": self.token}}],
            "contexts": [{"name": "proxy",
                          "context": {"cluster": "proxy", "user": "owner", "namespace": namespace}}],
            "current-context": "proxy",
        });
        config.to_string()
    }

    /// Ends the session: the kinds the run created, each once.
    pub(crate) fn finish(self) -> Vec<Dependent> {
        self.shared
            .runs()
            .remove(&self.token)
            .map(|r| r.dependents)
            .unwrap_or_default()
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.shared.runs().remove(&self.token);
    }
}

/// Why the proxy answered itself instead of the API server.
#[derive(Debug, thiserror::Error)]
enum ProxyError {
    #[error("the owner-reference proxy only serves the operator's runs (no or unknown token)")]
    Unauthorized,
    #[error(
        "the owner-reference proxy does not forward upgraded connections (exec, attach, port-forward)"
    )]
    Upgrade,
    #[error("request body: {0}")]
    Body(String),
    #[error("forwarding to the API server: {0}")]
    Upstream(#[source] kube::Error),
}

impl IntoResponse for ProxyError {
    fn into_response(self) -> Response {
        let (code, reason) = match &self {
            ProxyError::Unauthorized => (StatusCode::UNAUTHORIZED, "Unauthorized"),
            ProxyError::Upgrade => (StatusCode::NOT_IMPLEMENTED, "NotImplemented"),
            ProxyError::Body(_) => (StatusCode::BAD_REQUEST, "BadRequest"),
            ProxyError::Upstream(_) => (StatusCode::SERVICE_UNAVAILABLE, "ServiceUnavailable"),
        };
        let status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.to_string(),
            "reason": reason,
            "code": code.as_u16(),
        });
        (
            code,
            [(header::CONTENT_TYPE, "application/json")],
            status.to_string(),
        )
            .into_response()
    }
}

async fn handle(State(shared): State<Arc<Shared>>, request: axum::extract::Request) -> Response {
    match forward(&shared, request).await {
        Ok(response) => response,
        Err(e) => {
            tracing::debug!(error = %e, "proxy request refused");
            e.into_response()
        }
    }
}

fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::AUTHORIZATION)?
        .to_str()
        .ok()?
        .strip_prefix("Bearer ")
        .map(str::trim)
}

fn strip_hop_by_hop(headers: &mut HeaderMap) {
    for name in &HOP_BY_HOP {
        headers.remove(name);
    }
}

async fn forward(shared: &Shared, request: axum::extract::Request) -> Result<Response, ProxyError> {
    let (mut parts, body) = request.into_parts();
    let token = bearer(&parts.headers).ok_or(ProxyError::Unauthorized)?;
    let owner = shared
        .runs()
        .get(token)
        .map(|r| r.owner.clone())
        .ok_or(ProxyError::Unauthorized)?;
    if parts.headers.contains_key(header::UPGRADE) {
        return Err(ProxyError::Upgrade);
    }
    let token = token.to_string();
    let mut body = axum::body::to_bytes(body, MAX_BODY)
        .await
        .map_err(|e| ProxyError::Body(e.to_string()))?;
    if shared.inject
        && parts.method == Method::POST
        && let Some(target) = CreateTarget::parse(parts.uri.path())
    {
        let (rewritten, dependent) = inject(&owner, &target, &body)?;
        body = rewritten;
        if let Some(dependent) = dependent
            && let Some(run) = shared.runs().get_mut(&token)
            && !run.dependents.contains(&dependent)
        {
            run.dependents.push(dependent);
        }
    }
    strip_hop_by_hop(&mut parts.headers);
    parts.headers.remove(header::AUTHORIZATION);
    parts.headers.remove(header::CONTENT_LENGTH);
    if let Some(pq) = parts.uri.path_and_query().cloned() {
        parts.uri = pq.into();
    }
    let upstream = http::Request::from_parts(parts, kube::client::Body::from(body));
    let response = shared
        .client
        .send(upstream)
        .await
        .map_err(ProxyError::Upstream)?;
    let (mut parts, body) = response.into_parts();
    strip_hop_by_hop(&mut parts.headers);
    Ok(Response::from_parts(parts, Body::new(body)))
}

/// A create's collection, from its path (`/api/v1/namespaces/ns/configmaps`,
/// `/apis/rbac.authorization.k8s.io/v1/clusterroles`, …).
#[derive(Debug, PartialEq)]
struct CreateTarget {
    group: String,
    version: String,
    namespace: Option<String>,
    plural: String,
}

impl CreateTarget {
    fn parse(path: &str) -> Option<CreateTarget> {
        let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
        let (group, version, rest) = match segments.as_slice() {
            ["api", version, rest @ ..] => ("", *version, rest),
            ["apis", group, version, rest @ ..] => (*group, *version, rest),
            _ => return None,
        };
        let (namespace, plural) = match rest {
            ["namespaces", namespace, plural] => (Some(*namespace), *plural),
            [plural] => (None, *plural),
            _ => return None,
        };
        Some(CreateTarget {
            group: group.into(),
            version: version.into(),
            namespace: namespace.map(Into::into),
            plural: plural.into(),
        })
    }
}

/// Adds the owner reference or the annotations to a create's body; the kind created, when
/// the body names it.
fn inject(
    owner: &Owner,
    target: &CreateTarget,
    body: &Bytes,
) -> Result<(Bytes, Option<Dependent>), ProxyError> {
    let mut object: Value = serde_json::from_slice(body)
        .map_err(|e| ProxyError::Body(format!("a create must send a JSON object: {e}")))?;
    let Some(fields) = object.as_object_mut() else {
        return Err(ProxyError::Body(
            "a create must send a JSON object".to_string(),
        ));
    };
    let kind = fields
        .get("kind")
        .and_then(Value::as_str)
        .map(str::to_string);
    let metadata = fields
        .entry("metadata")
        .or_insert_with(|| json!({}))
        .as_object_mut()
        .ok_or_else(|| ProxyError::Body("metadata is not an object".to_string()))?;
    let owner_reference = owner.can_own(target.namespace.as_deref());
    if owner_reference {
        let references = metadata
            .entry("ownerReferences")
            .or_insert_with(|| json!([]))
            .as_array_mut()
            .ok_or_else(|| ProxyError::Body("metadata.ownerReferences is not a list".into()))?;
        if !references.iter().any(|r| r["uid"] == owner.uid.as_str()) {
            references.push(json!({
                "apiVersion": owner.api_version,
                "kind": owner.kind,
                "name": owner.name,
                "uid": owner.uid,
                "controller": true,
                "blockOwnerDeletion": true,
            }));
        }
    } else {
        let annotations = metadata
            .entry("annotations")
            .or_insert_with(|| json!({}))
            .as_object_mut()
            .ok_or_else(|| ProxyError::Body("metadata.annotations is not an object".into()))?;
        annotations.insert(
            PRIMARY_RESOURCE_ANNOTATION.into(),
            owner.resource_annotation().into(),
        );
        annotations.insert(
            PRIMARY_RESOURCE_TYPE_ANNOTATION.into(),
            owner.type_annotation().into(),
        );
    }
    let dependent = kind.map(|kind| {
        let api_version = if target.group.is_empty() {
            target.version.clone()
        } else {
            format!("{}/{}", target.group, target.version)
        };
        Dependent {
            resource: ApiResource {
                group: target.group.clone(),
                version: target.version.clone(),
                api_version,
                kind,
                plural: target.plural.clone(),
            },
            namespaced: target.namespace.is_some(),
            owner_reference,
        }
    });
    let bytes = serde_json::to_vec(&object).map_err(|e| ProxyError::Body(e.to_string()))?;
    Ok((Bytes::from(bytes), dependent))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner(namespace: Option<&str>) -> Owner {
        Owner {
            api_version: "cache.example.com/v1alpha1".into(),
            group: "cache.example.com".into(),
            kind: "Memcached".into(),
            name: "web".into(),
            namespace: namespace.map(Into::into),
            uid: "u-1".into(),
        }
    }

    #[test]
    fn create_paths_name_the_collection_and_nothing_else_is_a_create() {
        assert_eq!(
            CreateTarget::parse("/api/v1/namespaces/default/configmaps"),
            Some(CreateTarget {
                group: String::new(),
                version: "v1".into(),
                namespace: Some("default".into()),
                plural: "configmaps".into(),
            })
        );
        let ns = CreateTarget::parse("/api/v1/namespaces").expect("a namespace create");
        assert_eq!((ns.namespace, ns.plural.as_str()), (None, "namespaces"));
        let role = CreateTarget::parse("/apis/rbac.authorization.k8s.io/v1/clusterroles")
            .expect("a cluster-scoped create");
        assert_eq!(role.group, "rbac.authorization.k8s.io");
        assert_eq!(
            CreateTarget::parse("/api/v1/namespaces/default/pods/p/eviction"),
            None
        );
        assert_eq!(CreateTarget::parse("/version"), None);
    }

    #[test]
    fn same_namespace_creates_get_a_controller_reference_others_the_annotations() {
        let body = Bytes::from_static(
            br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}"#,
        );
        let here = CreateTarget::parse("/api/v1/namespaces/default/configmaps").expect("path");
        let (out, dependent) = inject(&owner(Some("default")), &here, &body).expect("inject");
        let out: Value = serde_json::from_slice(&out).expect("json");
        assert_eq!(
            out["metadata"]["ownerReferences"],
            json!([{"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "name": "web",
                    "uid": "u-1", "controller": true, "blockOwnerDeletion": true}])
        );
        let dependent = dependent.expect("a kind");
        assert!(dependent.owner_reference && dependent.namespaced);
        assert_eq!(
            (
                dependent.resource.kind.as_str(),
                dependent.resource.plural.as_str()
            ),
            ("ConfigMap", "configmaps")
        );

        let there = CreateTarget::parse("/api/v1/namespaces/other/configmaps").expect("path");
        let (out, dependent) = inject(&owner(Some("default")), &there, &body).expect("inject");
        let out: Value = serde_json::from_slice(&out).expect("json");
        assert_eq!(out["metadata"]["ownerReferences"], Value::Null);
        assert_eq!(
            out["metadata"]["annotations"],
            json!({PRIMARY_RESOURCE_ANNOTATION: "default/web",
                   PRIMARY_RESOURCE_TYPE_ANNOTATION: "Memcached.cache.example.com"})
        );
        assert!(!dependent.expect("a kind").owner_reference);

        let cluster = CreateTarget::parse("/api/v1/namespaces").expect("path");
        let (_, dependent) = inject(&owner(None), &cluster, &body).expect("inject");
        assert!(
            dependent.expect("a kind").owner_reference,
            "a cluster-scoped owner owns cluster-scoped objects"
        );
    }

    #[test]
    fn a_create_that_is_not_a_json_object_is_a_bad_request() {
        let target = CreateTarget::parse("/api/v1/namespaces/default/configmaps").expect("path");
        for body in [&b"not json"[..], b"[1]", br#"{"metadata": 3}"#] {
            let err = inject(
                &owner(Some("default")),
                &target,
                &Bytes::copy_from_slice(body),
            )
            .expect_err("refused");
            assert_eq!(err.into_response().status(), StatusCode::BAD_REQUEST);
        }
    }

    /// A kube client using a session's kubeconfig.
    async fn client(kubeconfig: &str) -> Client {
        let kubeconfig = kube::config::Kubeconfig::from_yaml(kubeconfig).expect("a kubeconfig");
        let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
            .await
            .expect("a client config");
        Client::try_from(config).expect("a client")
    }

    /// Sends `request` as is to the proxy and returns its response (head and body, as long
    /// as its `Content-Length` says; the connection may stay open).
    async fn raw(addr: SocketAddr, request: String) -> String {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
        stream.write_all(request.as_bytes()).await.expect("send");
        let mut response = Vec::new();
        loop {
            let text = String::from_utf8_lossy(&response).into_owned();
            if let Some((head, body)) = text.split_once("\r\n\r\n") {
                let length = head
                    .lines()
                    .find_map(|l| {
                        l.to_ascii_lowercase()
                            .strip_prefix("content-length:")
                            .map(|v| v.trim().to_string())
                    })
                    .and_then(|v| v.parse::<usize>().ok())
                    .expect("a Content-Length");
                if body.len() >= length {
                    return text;
                }
            }
            let mut chunk = [0u8; 4096];
            let n = stream.read(&mut chunk).await.expect("a response");
            assert!(n > 0, "the proxy closed before answering: {text}");
            response.extend_from_slice(&chunk[..n]);
        }
    }

    #[tokio::test]
    async fn the_proxy_forwards_injects_streams_watches_and_answers_bad_requests_with_a_status() {
        use futures::StreamExt;
        use k8s_openapi::api::core::v1::ConfigMap;
        use kube::api::{Api, PostParams, WatchEvent, WatchParams};

        let env = opkit_testenv::TestEnv::start()
            .await
            .expect("the control plane starts");
        let direct: Api<ConfigMap> = Api::namespaced(env.client(), "default");
        let config_map = |name: &str| -> ConfigMap {
            serde_json::from_value(json!({"metadata": {"name": name}})).expect("a ConfigMap")
        };
        // A real owner, so the garbage collector keeps what it owns.
        let owner = direct
            .create(&PostParams::default(), &config_map("owner"))
            .await
            .expect("create the owner");
        let proxy = Proxy::start(env.client(), true)
            .await
            .expect("the proxy starts");
        let session = proxy.session(Owner {
            api_version: "v1".into(),
            group: String::new(),
            kind: "ConfigMap".into(),
            name: "owner".into(),
            namespace: Some("default".into()),
            uid: owner.metadata.uid.clone().expect("a uid"),
        });
        let kubeconfig = session.kubeconfig();
        let through: Api<ConfigMap> = Api::namespaced(client(&kubeconfig).await, "default");

        let child = through
            .create(&PostParams::default(), &config_map("child"))
            .await
            .expect("a create through the proxy");
        let reference = &child.metadata.owner_references.expect("an owner reference")[0];
        assert_eq!(reference.uid, owner.metadata.uid.clone().expect("uid"));
        assert_eq!(
            (reference.controller, reference.block_owner_deletion),
            (Some(true), Some(true))
        );

        // A watch streams through: an object made after it started arrives on it.
        let version = through
            .list(&Default::default())
            .await
            .expect("a list through the proxy")
            .metadata
            .resource_version
            .expect("a resourceVersion");
        let mut events = through
            .watch(&WatchParams::default().timeout(60), &version)
            .await
            .expect("a watch through the proxy")
            .boxed();
        direct
            .create(&PostParams::default(), &config_map("later"))
            .await
            .expect("create directly");
        loop {
            match events.next().await.expect("the watch goes on") {
                Ok(WatchEvent::Added(cm)) if cm.metadata.name.as_deref() == Some("later") => break,
                Ok(_) => {}
                Err(e) => panic!("watch error: {e}"),
            }
        }

        // Bad requests are answered with a Status, never forwarded.
        let token = kubeconfig
            .split("\"token\":\"")
            .nth(1)
            .and_then(|t| t.split('"').next())
            .expect("the token")
            .to_string();
        let not_json = "not json";
        let response = raw(
            proxy.addr,
            format!(
                "POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: x\r\n\
                 Authorization: Bearer {token}\r\nContent-Type: application/json\r\n\
                 Content-Length: {}\r\n\r\n{not_json}",
                not_json.len()
            ),
        )
        .await;
        assert!(response.starts_with("HTTP/1.1 400"), "{response}");
        assert!(response.contains(r#""kind":"Status""#), "{response}");
        let response = raw(
            proxy.addr,
            format!(
                "GET /api/v1/namespaces/default/pods/p/exec HTTP/1.1\r\nHost: x\r\n\
                 Authorization: Bearer {token}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n"
            ),
        )
        .await;
        assert!(response.starts_with("HTTP/1.1 501"), "{response}");
        let response = raw(
            proxy.addr,
            "GET /api HTTP/1.1\r\nHost: x\r\n\r\n".to_string(),
        )
        .await;
        assert!(response.starts_with("HTTP/1.1 401"), "{response}");
        assert!(
            response.contains(r#""reason":"Unauthorized""#),
            "{response}"
        );

        // The token dies with its session.
        assert_eq!(session.finish().len(), 1, "the run created one kind");
        match through.get("child").await {
            Err(kube::Error::Api(status)) => assert_eq!(status.code, 401),
            other => panic!("a finished session's token must be refused: {other:?}"),
        }
        env.shutdown().await;
    }
}
