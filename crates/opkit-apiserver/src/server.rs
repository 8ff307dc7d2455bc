//! The HTTP front: authentication, routing a request to its handler, and writing the answer.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, OnceLock, Weak};

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, StreamBody};
use serde_json::Value;

use crate::audit::{AuditLog, AuditRecord};
use crate::auth::User;
use crate::auth::tokens::TokenSigner;
use crate::authz::Authorizer;
use crate::discovery;
use crate::error::{ApiError, ApiResult};
use crate::limits::{Gates, Limits};
use crate::negotiate::{self, Encoding, Output};
use crate::patch::PatchType;
use crate::registry::{Registry, Resource};
use crate::request::Part;
use crate::request::{self, Attributes, ObjectRef, Query, ResourcePath, Target};
use crate::response::{
    Answer, Payload, ResponseBody, bytes_response, error_response, hold_while_streaming,
    json_response, list_json, render,
};
use opkit_store::Store;

/// Upstream's request body limit (3 MiB).
pub const MAX_BODY_BYTES: usize = 3 * 1024 * 1024;

/// How much of a body over [`MAX_BODY_BYTES`] is read (and thrown away) before the 413 goes
/// out (16 MiB).
pub const DRAIN_BODY_BYTES: usize = 16 * 1024 * 1024;

/// What an [`ApiServer`] runs with besides its store.
pub struct ServerOptions {
    /// The admin bearer token.
    pub token: String,
    /// `host:port` clients reach the server at (the `kubernetes` Service's endpoint).
    pub server_address: String,
    /// Signs and verifies service-account tokens.
    pub tokens: TokenSigner,
    /// Request limits.
    pub limits: Limits,
    /// The audit log, if any.
    pub audit: Option<AuditLog>,
}

/// Facts about the connection a request came on, attached by the accept loop.
#[derive(Clone, Copy, Debug)]
pub struct ConnectionInfo {
    /// The client's address.
    pub peer: std::net::SocketAddr,
}

/// The API server's shared state.
pub struct ApiServer {
    pub(crate) store: Store,
    pub(crate) registry: Registry,
    token: String,
    pub(crate) admin: Arc<User>,
    pub(crate) tokens: TokenSigner,
    pub(crate) authz: Authorizer,
    gates: Gates,
    audit: Option<AuditLog>,
    server_address: String,
    this: OnceLock<Weak<ApiServer>>,
    pub(crate) cleanups: Mutex<HashSet<String>>,
    openapi: crate::openapi::OpenApi,
    /// Serialises Service writes that allocate cluster IPs and node ports.
    pub(crate) services: crate::services::Allocator,
}

/// Decodes a request body (JSON, YAML or protobuf) into an object.
pub fn decode_body(res: &Resource, content_type: Option<&str>, body: &[u8]) -> ApiResult<Value> {
    decode_object(res, content_type, body).map(|(obj, _)| obj)
}

/// Decodes a request body (JSON, YAML or protobuf) into an object; also returns its duplicate
/// fields (`duplicate field "a"`), which `fieldValidation` reports.
pub fn decode_object(
    res: &Resource,
    content_type: Option<&str>,
    body: &[u8],
) -> ApiResult<(Value, Vec<String>)> {
    let encoding = negotiate::body_encoding(content_type)?;
    match encoding {
        Encoding::Json => crate::strict::decode_json(body)
            .map_err(|e| ApiError::bad_request(format!("error decoding JSON body: {e}"))),
        Encoding::Yaml => crate::strict::decode_yaml(body)
            .map_err(|e| ApiError::bad_request(format!("error decoding YAML body: {e}"))),
        Encoding::Protobuf => {
            if res.is_custom() {
                return Err(ApiError::unsupported_media_type(content_type.unwrap_or("")));
            }
            opkit_protobuf::decode(body)
                .map(|obj| (obj, Vec::new()))
                .map_err(|e| ApiError::bad_request(format!("error decoding protobuf body: {e}")))
        }
    }
}

/// Reads a request body of at most [`MAX_BODY_BYTES`]; a larger one is a 413.
///
/// A larger body is still read to its end (up to [`DRAIN_BODY_BYTES`], discarding it) before
/// the answer: a server that answers early and stops reading ends an HTTP/2 stream with
/// RST_STREAM, or an HTTP/1.1 connection, under a client that is still sending, and clients
/// that read only once their upload is done (curl 7.x over HTTP/2) then see no answer at all.
/// A body announced as larger than that is refused without reading.
async fn read_body<B>(body: B) -> ApiResult<Bytes>
where
    B: hyper::body::Body<Data = Bytes>,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let too_large = || ApiError::too_large(MAX_BODY_BYTES);
    if body.size_hint().lower() > DRAIN_BODY_BYTES as u64 {
        return Err(too_large());
    }
    let mut body = std::pin::pin!(body);
    let mut chunks: Vec<Bytes> = Vec::new();
    let mut read = 0usize;
    while let Some(frame) = body.frame().await {
        let frame = match frame {
            Ok(frame) => frame,
            Err(_) if read > MAX_BODY_BYTES => return Err(too_large()),
            Err(e) => {
                let e: Box<dyn std::error::Error + Send + Sync> = e.into();
                return Err(ApiError::bad_request(format!(
                    "error reading the request body: {e}"
                )));
            }
        };
        let Ok(data) = frame.into_data() else {
            continue; // trailers
        };
        read = read.saturating_add(data.len());
        if read > DRAIN_BODY_BYTES {
            break;
        }
        if read > MAX_BODY_BYTES {
            chunks = Vec::new();
        } else {
            chunks.push(data);
        }
    }
    if read > MAX_BODY_BYTES {
        return Err(too_large());
    }
    Ok(match chunks.len() {
        1 => chunks.swap_remove(0),
        _ => Bytes::from(chunks.concat()),
    })
}

fn header_str(headers: &HeaderMap, name: header::HeaderName) -> Option<&str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

impl ApiServer {
    /// Creates the server state over an opened store, with default limits, no audit log and
    /// a service-account signing key made in memory.
    pub fn new(store: Store, token: String, server_address: String) -> Arc<ApiServer> {
        let tokens = match TokenSigner::load_or_create(None) {
            Ok(t) => t,
            // Generating a P-256 key in memory only fails if the system has no randomness.
            Err(e) => panic!("cannot generate a service-account signing key: {e}"),
        };
        ApiServer::with_options(
            store,
            ServerOptions {
                token,
                server_address,
                tokens,
                limits: Limits::default(),
                audit: None,
            },
        )
    }

    /// Creates the server state over an opened store.
    pub fn with_options(store: Store, options: ServerOptions) -> Arc<ApiServer> {
        let ServerOptions {
            token,
            server_address,
            tokens,
            limits,
            audit,
        } = options;
        let server = Arc::new(ApiServer {
            store,
            registry: Registry::new(),
            token,
            admin: Arc::new(crate::auth::admin()),
            tokens,
            authz: Authorizer::default(),
            gates: Gates::new(limits),
            audit,
            server_address,
            this: OnceLock::new(),
            cleanups: Mutex::new(HashSet::new()),
            openapi: crate::openapi::OpenApi::new(),
            services: crate::services::Allocator::default(),
        });
        let _ = server.this.set(Arc::downgrade(&server));
        server
    }

    /// A strong handle to itself, for background tasks.
    pub(crate) fn handle(&self) -> Option<Arc<ApiServer>> {
        self.this.get()?.upgrade()
    }

    /// The admin bearer token.
    pub(crate) fn token(&self) -> &str {
        &self.token
    }

    /// The store.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Ensures the namespaces every cluster starts with, and registers stored CRDs.
    pub async fn bootstrap(&self) -> ApiResult<()> {
        let snapshot = self.registry.snapshot();
        let Some(ns_res) = snapshot.get("", "v1", "namespaces").cloned() else {
            return Err(ApiError::internal("namespaces are not registered"));
        };
        for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
            if self.store.get(&ns_res.key(None, ns)).is_none() {
                let obj = serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
                let (obj, _) = crate::admission::prepare_create(
                    &ns_res,
                    None,
                    obj,
                    &crate::request::FieldValidation::Ignore.into(),
                )?;
                match self.insert(&ns_res, None, obj, false).await {
                    Ok(_) => {}
                    Err(e) if e.is_already_exists() => {}
                    Err(e) => return Err(e),
                }
            }
        }
        self.bootstrap_kubernetes_service().await?;
        self.bootstrap_rbac().await?;
        let moved = crate::events::migrate_legacy_keys(&self.store).await;
        if moved > 0 {
            tracing::info!(
                moved,
                "events.k8s.io/v1 events moved to the storage shared with core/v1 events"
            );
        }
        self.load_crds().await;
        Ok(())
    }

    /// Creates the `kubernetes` Service in `default` (10.96.0.1) and its Endpoints and
    /// EndpointSlice pointing at this server, unless they exist.
    async fn bootstrap_kubernetes_service(&self) -> ApiResult<()> {
        let snapshot = self.registry.snapshot();
        for (group, plural, obj) in crate::services::kubernetes_objects(&self.server_address) {
            // core/v1 and discovery.k8s.io/v1.
            let Some(res) = snapshot.get(group, "v1", plural).cloned() else {
                continue;
            };
            if self
                .store
                .get(&res.key(Some("default"), "kubernetes"))
                .is_some()
            {
                continue;
            }
            let (mut obj, _) = crate::admission::prepare_create(
                &res,
                Some("default"),
                obj,
                &crate::request::FieldValidation::Ignore.into(),
            )?;
            let _allocating = if crate::services::is_services(&res) {
                let guard = self.services.lock().await;
                crate::services::allocate_create(&self.store, &res, &mut obj)?;
                Some(guard)
            } else {
                None
            };
            match self.insert(&res, Some("default"), obj, false).await {
                Ok(_) => {}
                Err(e) if e.is_already_exists() => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// The request limits in force.
    pub fn limits(&self) -> &Limits {
        self.gates.limits()
    }

    /// Handles one HTTP request: authenticate, impersonate, authorize, admit under the
    /// limits, route, audit.
    pub async fn serve<B>(self: Arc<Self>, req: Request<B>) -> Response<ResponseBody>
    where
        B: hyper::body::Body<Data = Bytes> + Send + 'static,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let received = jiff::Timestamp::now();
        let (parts, body) = req.into_parts();
        let target = request::parse_path(parts.uri.path());
        match target {
            Target::Health => {
                return bytes_response(200, b"ok".to_vec(), "text/plain; charset=utf-8", &[]);
            }
            Target::Version => return json_response(&discovery::version()),
            _ => {}
        }
        let authenticated = match self.authenticate(&parts.headers, &parts.extensions) {
            Ok(user) => user,
            Err(e) => return error_response(&e),
        };
        let user = match self.impersonate(authenticated.clone(), &parts.headers) {
            Ok(user) => user,
            Err(e) => return error_response(&e),
        };
        let query = Query::new(request::parse_query(parts.uri.query()))
            .by_user(user.clone(), header_str(&parts.headers, header::USER_AGENT));
        let attrs = Attributes::of(&parts.method, parts.uri.path(), &target, &query);
        let decision = self.authorize(&user, &attrs);
        let resp = match decision {
            Err(e) => error_response(&e),
            Ok(()) => {
                self.admitted(&parts, target, &query, &user, &attrs, body)
                    .await
            }
        };
        if let Some(audit) = &self.audit {
            let impersonator = (!Arc::ptr_eq(&authenticated, &user)).then_some(&*authenticated);
            audit.record(AuditRecord {
                user: &user,
                impersonator,
                attrs: &attrs,
                request_uri: parts
                    .uri
                    .path_and_query()
                    .map(|p| p.as_str())
                    .unwrap_or("/"),
                user_agent: header_str(&parts.headers, header::USER_AGENT),
                source: parts.extensions.get::<ConnectionInfo>().map(|c| c.peer),
                code: resp.status().as_u16(),
                received,
                decision: if resp.status() == StatusCode::FORBIDDEN {
                    "forbid"
                } else {
                    "allow"
                },
            });
        }
        resp
    }

    /// An authorized request: applies the in-flight and watch limits and the request timeout,
    /// reads the body and routes it.
    async fn admitted<B>(
        &self,
        parts: &http::request::Parts,
        target: Target,
        query: &Query,
        user: &User,
        attrs: &Attributes,
        body: B,
    ) -> Response<ResponseBody>
    where
        B: hyper::body::Body<Data = Bytes> + Send + 'static,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let exempt = user.in_group(opkit_rbac::SYSTEM_MASTERS);
        let (_in_flight, watch_slot) = if attrs.is_watch() {
            match self.gates.admit_watch(&user.name, exempt) {
                Ok(slot) => (None, slot),
                Err(e) => return error_response(&e),
            }
        } else {
            match self.gates.admit(attrs.is_mutating(), exempt) {
                Ok(permit) => (Some(permit), None),
                Err(e) => return error_response(&e),
            }
        };
        let timeout = match query.get("timeout").map(|t| {
            // A Go duration (`30s`, `1m30s`); negative ones are refused.
            opkit_apimachinery::Duration::parse(t.trim())
                .ok()
                .and_then(|d| d.to_std().ok())
        }) {
            Some(Some(t)) => t.min(self.gates.limits().request_timeout),
            Some(None) => {
                return error_response(&ApiError::bad_request(
                    "invalid timeout: use a duration such as 30s or 1m",
                ));
            }
            None => self.gates.limits().request_timeout,
        };
        let work = async {
            let body = match read_body(body).await {
                Ok(body) => body,
                Err(e) => return error_response(&e),
            };
            match self
                .route(&parts.method, &parts.headers, target, query, body)
                .await
            {
                Ok(resp) => resp,
                Err(e) => error_response(&e),
            }
        };
        if attrs.is_watch() {
            let resp = work.await;
            return match watch_slot {
                Some(slot) => hold_while_streaming(resp, slot),
                None => resp,
            };
        }
        match tokio::time::timeout(timeout, work).await {
            Ok(resp) => resp,
            Err(_) => error_response(&ApiError::timeout(
                "Timeout: request did not complete within the allotted timeout",
            )),
        }
    }

    async fn route(
        &self,
        method: &Method,
        headers: &HeaderMap,
        target: Target,
        query: &Query,
        body: Bytes,
    ) -> ApiResult<Response<ResponseBody>> {
        let accept = header_str(headers, header::ACCEPT);
        let snapshot = self.registry.snapshot();
        let discovery_get = |doc: Option<Value>| -> ApiResult<Response<ResponseBody>> {
            if method != Method::GET {
                return Err(ApiError::method_not_allowed(method.as_str(), "discovery"));
            }
            doc.map(|d| json_response(&d))
                .ok_or_else(ApiError::path_not_found)
        };
        match target {
            Target::CoreVersions | Target::Groups => {
                let core = matches!(target, Target::CoreVersions);
                match negotiate::choose_output(accept, false, true)? {
                    Output::AggregatedDiscovery(ct) => {
                        let version = if ct.contains("v=v2beta1") {
                            "v2beta1"
                        } else {
                            "v2"
                        };
                        let doc = discovery::aggregated(&snapshot, core, version);
                        Ok(bytes_response(
                            200,
                            serde_json::to_vec(&doc).unwrap_or_default(),
                            &ct,
                            &[],
                        ))
                    }
                    _ if core => {
                        discovery_get(Some(discovery::core_versions(&self.server_address)))
                    }
                    _ => discovery_get(Some(discovery::group_list(&snapshot))),
                }
            }
            Target::Group(g) => discovery_get(discovery::group(&snapshot, &g)),
            Target::GroupVersion { group, version } => {
                discovery_get(discovery::resource_list(&snapshot, &group, &version))
            }
            Target::OpenApiV2 => {
                let which = crate::openapi::Which::V2;
                self.openapi.serve(&snapshot, which, method, headers, query)
            }
            Target::OpenApiV3(rest) => {
                let which = match rest.as_deref() {
                    None => crate::openapi::Which::V3Index,
                    Some(rest) => crate::openapi::Which::V3(rest),
                };
                self.openapi.serve(&snapshot, which, method, headers, query)
            }
            Target::Resource(path) => {
                let res = snapshot
                    .get(&path.group, &path.version, &path.resource)
                    .cloned()
                    .ok_or_else(ApiError::path_not_found)?;
                self.resource_request(method, headers, res, path, query, body)
                    .await
            }
            Target::Health | Target::Version | Target::Unknown => Err(ApiError::path_not_found()),
        }
    }

    async fn resource_request(
        &self,
        method: &Method,
        headers: &HeaderMap,
        res: Arc<Resource>,
        path: ResourcePath,
        query: &Query,
        body: Bytes,
    ) -> ApiResult<Response<ResponseBody>> {
        let accept = header_str(headers, header::ACCEPT);
        let content_type = header_str(headers, header::CONTENT_TYPE);
        let ns = path.namespace.as_deref();
        if res.namespaced != ns.is_some() && !(res.namespaced && path.name.is_none()) {
            return Err(ApiError::path_not_found());
        }
        let protobuf_ok =
            !res.is_custom() && opkit_protobuf::supports(&res.api_version(), &res.kind);
        let output = negotiate::choose_output(accept, protobuf_ok, false)?;
        if res.is_review() {
            return self.review(method, &res, &path, query, content_type, &body, &output);
        }
        let part = match path.subresource.as_deref() {
            None => Part::Main,
            Some("token") if res.group.is_empty() && res.plural == "serviceaccounts" => {
                if method != Method::POST {
                    return Err(ApiError::method_not_allowed(
                        method.as_str(),
                        "serviceaccounts/token",
                    ));
                }
                let request = decode_body(&res, content_type, &body)?;
                let name = path.name.as_deref().unwrap_or("");
                let issued = self.token_request(ns.unwrap_or(""), name, &request)?;
                let out = Answer::created(issued);
                return self.answer(None, &output, out, false);
            }
            Some("status") if res.status => Part::Status,
            Some("finalize") if res.group.is_empty() && res.plural == "namespaces" => {
                if method != Method::PUT {
                    return Err(ApiError::method_not_allowed(
                        method.as_str(),
                        "namespaces/finalize",
                    ));
                }
                Part::Finalize
            }
            Some("scale") if res.scale.is_some() => {
                let name = path.name.as_deref().unwrap_or("");
                let answer = self
                    .scale(
                        ObjectRef {
                            res: &res,
                            ns,
                            name,
                        },
                        method.as_str(),
                        &body,
                        content_type,
                        query,
                    )
                    .await?;
                let scale_out = match output {
                    Output::Object(Encoding::Protobuf)
                        if !opkit_protobuf::supports("autoscaling/v1", "Scale") =>
                    {
                        Output::Object(Encoding::Json)
                    }
                    o => o,
                };
                return self.answer(None, &scale_out, answer, false);
            }
            Some(_) => return Err(ApiError::path_not_found()),
        };
        let watch = path.legacy_watch || query.flag("watch");
        match (method, path.name.as_deref()) {
            (&Method::GET, None) if watch => {
                self.watch_response(res, path.namespace.clone(), query, &output)
            }
            (&Method::GET, Some(name)) if watch => {
                let mut pairs =
                    vec![("fieldSelector".to_string(), format!("metadata.name={name}"))];
                pairs.extend(
                    query
                        .pairs()
                        .iter()
                        .filter(|(k, _)| k != "fieldSelector")
                        .cloned(),
                );
                self.watch_response(
                    res,
                    path.namespace.clone(),
                    &query.with_pairs(pairs),
                    &output,
                )
            }
            (&Method::GET, None) => {
                let (items, meta) = self.list(&res, ns, query).await?;
                if output == Output::Object(Encoding::Json) {
                    return Ok(bytes_response(
                        200,
                        list_json(&res, &items, &meta),
                        "application/json",
                        &[],
                    ));
                }
                let mut parsed = Vec::with_capacity(items.len());
                for item in &items {
                    let item = crate::response::convert_version(&res, item.clone());
                    parsed
                        .push(serde_json::from_slice::<Value>(&item).map_err(ApiError::internal)?);
                }
                let list = serde_json::json!({"apiVersion": res.api_version(), "kind": res.list_kind, "metadata": meta, "items": parsed});
                self.answer(
                    Some(&res),
                    &output,
                    Answer {
                        code: 200,
                        payload: Payload::Value(list),
                        warnings: Vec::new(),
                    },
                    true,
                )
            }
            (&Method::GET, Some(name)) => {
                let answer = self.get(&res, ns, name, query).await?;
                self.answer(Some(&res), &output, answer, false)
            }
            (&Method::POST, None) if part == Part::Main => {
                let (obj, query) = decode_whole_object(&res, content_type, &body, query)?;
                let answer = self.create(&res, ns, obj, &query).await?;
                self.answer(Some(&res), &output, answer, false)
            }
            (&Method::PUT, Some(name)) => {
                let (obj, query) = decode_whole_object(&res, content_type, &body, query)?;
                let answer = self.replace(&res, ns, name, part, obj, &query).await?;
                self.answer(Some(&res), &output, answer, false)
            }
            (&Method::PATCH, Some(name)) => {
                let patch_type = PatchType::from_content_type(content_type)?;
                let answer = self
                    .patch(
                        ObjectRef {
                            res: &res,
                            ns,
                            name,
                        },
                        part,
                        patch_type,
                        &body,
                        query,
                    )
                    .await?;
                self.answer(Some(&res), &output, answer, false)
            }
            (&Method::DELETE, Some(name)) if part == Part::Main => {
                let options = delete_options(content_type, &body)?;
                let answer = self.delete(&res, ns, name, &options, query).await?;
                self.answer(Some(&res), &output, answer, false)
            }
            (&Method::DELETE, None) if part == Part::Main => {
                let options = delete_options(content_type, &body)?;
                let answer = self.delete_collection(&res, ns, &options, query).await?;
                self.answer(Some(&res), &output, answer, true)
            }
            (m, _) => Err(ApiError::method_not_allowed(m.as_str(), &res.plural)),
        }
    }

    /// The create-only review APIs: TokenReview, SelfSubjectReview and the access reviews.
    #[allow(clippy::too_many_arguments)]
    fn review(
        &self,
        method: &Method,
        res: &Resource,
        path: &ResourcePath,
        query: &Query,
        content_type: Option<&str>,
        body: &[u8],
        output: &Output,
    ) -> ApiResult<Response<ResponseBody>> {
        if method != Method::POST || path.name.is_some() || path.subresource.is_some() {
            return Err(ApiError::method_not_allowed(method.as_str(), &res.plural));
        }
        let review = decode_body(res, content_type, body)?;
        let admin = crate::auth::admin();
        let user = query.user().unwrap_or(&admin);
        let out = match (res.group.as_str(), res.plural.as_str()) {
            ("authentication.k8s.io", "tokenreviews") => self.token_review(&review),
            ("authentication.k8s.io", _) => self.self_subject_review(user),
            _ => self.access_review(&res.plural, path.namespace.as_deref(), user, &review)?,
        };
        self.answer(None, output, Answer::created(out), false)
    }

    fn answer(
        &self,
        res: Option<&Resource>,
        output: &Output,
        answer: Answer,
        list: bool,
    ) -> ApiResult<Response<ResponseBody>> {
        let is_status = matches!(&answer.payload, Payload::Value(v) if v.get("kind").and_then(Value::as_str) == Some("Status"));
        let output = if is_status && matches!(output, Output::Table | Output::PartialMetadata) {
            &Output::Object(Encoding::Json)
        } else {
            output
        };
        let (bytes, ct) = render(res, output, answer.payload, list)?;
        Ok(bytes_response(answer.code, bytes, &ct, &answer.warnings))
    }

    fn watch_response(
        &self,
        res: Arc<Resource>,
        ns: Option<String>,
        query: &Query,
        output: &Output,
    ) -> ApiResult<Response<ResponseBody>> {
        let Some(server) = self.handle() else {
            return Err(ApiError::unavailable("the server is shutting down"));
        };
        let output = match output {
            Output::PartialMetadata | Output::Object(Encoding::Yaml) => {
                Output::Object(Encoding::Json)
            }
            o => o.clone(),
        };
        let watch = server.watch(res, ns, query, &output)?;
        let stream = tokio_stream::wrappers::ReceiverStream::new(watch.frames);
        let body = StreamBody::new(futures::StreamExt::map(stream, |r| {
            r.map(hyper::body::Frame::data)
        }));
        let mut resp = Response::new(BodyExt::boxed(body));
        resp.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static(watch.content_type),
        );
        resp.headers_mut().insert(
            header::CACHE_CONTROL,
            HeaderValue::from_static("no-cache, private"),
        );
        Ok(resp)
    }
}

/// Decodes the body of a create or replace, and notes on the query what `fieldValidation`
/// needs: the body's duplicate fields, and that a whole object is refused in upstream's words.
fn decode_whole_object(
    res: &Resource,
    content_type: Option<&str>,
    body: &[u8],
    query: &Query,
) -> ApiResult<(Value, Query)> {
    let (obj, duplicates) = decode_object(res, content_type, body)?;
    let query = query.clone().with_body_fields(crate::request::BodyFields {
        errors: duplicates,
        wording: crate::request::Wording::Object,
    });
    Ok((obj, query))
}

fn delete_options(content_type: Option<&str>, body: &[u8]) -> ApiResult<Value> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Value::Null);
    }
    if negotiate::body_encoding(content_type)? == Encoding::Protobuf {
        return opkit_protobuf::decode(body)
            .map_err(|e| ApiError::bad_request(format!("error decoding DeleteOptions: {e}")));
    }
    serde_json::from_slice(body)
        .or_else(|_| serde_yaml::from_slice(body))
        .map_err(|e| ApiError::bad_request(format!("error decoding DeleteOptions: {e}")))
}
