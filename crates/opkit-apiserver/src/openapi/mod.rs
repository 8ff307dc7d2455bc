//! OpenAPI documents: `/openapi/v3` (an index), `/openapi/v3/{api|apis/G}/V` (one document per
//! group version) and `/openapi/v2` (one Swagger 2.0 document for everything).
//!
//! Why clients read them:
//! * `kubectl explain` walks the v3 document of the resource's group version;
//! * `kubectl create|apply|replace` look for the PATCH operation of the object's kind and check
//!   it accepts `fieldValidation`, then let the server validate (`fieldValidation=Strict`);
//! * `kubectl apply` (client-side) computes a strategic merge patch from the v3 schemas when the
//!   kind's PATCH accepts `application/strategic-merge-patch+json`, reading the
//!   `x-kubernetes-patch-*` extensions — so the built-in schemas carry the same patch metadata the
//!   server merges with ([`opkit_strategic::BuiltinPatchMeta`]);
//! * older tools and `kubectl explain --output plaintext-openapiv2` read v2.
//!
//! Built-in schemas come from k8s-openapi ([`builtin`]), generated once per process; custom
//! resources from their CRD version's `openAPIV3Schema`. Documents are rendered to bytes once
//! per registry generation ([`OpenApi`]): a request copies cached bytes. Group versions that only
//! hold built-in kinds never change, so their documents are rendered once per server. The v2
//! document, the largest, is rendered lazily on the first request after a change.
//!
//! Caching follows kube-openapi: every index entry carries `?hash=` of its document; a request
//! with the current hash is answered `Cache-Control: public, immutable` (clients keep it for a
//! year), one with a stale hash is redirected (301) to the current URL, and every answer has an
//! `ETag` honoured by `If-None-Match`.
//!
//! Encodings: JSON, and for v2 also gnostic protobuf
//! (`application/com.github.proto-openapi.spec.v2@v1.0+protobuf`, [`proto`]): client-go's
//! `OpenAPISchema()` asks for nothing else, and kubectl v1.35 calls it to validate `kind: List`
//! manifests on the client. The v3 protobuf form is not produced (clients ask v3 for JSON); other
//! media types get `406 NotAcceptable` with a `Status`.

pub mod builtin;
pub mod paths;
pub mod proto;

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hasher};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, Response, StatusCode, header};
use http_body_util::{BodyExt, Full};
use serde_json::{Map, Value, json};

use crate::error::{ApiError, ApiResult};
use crate::registry::{Resource, Snapshot};
use crate::request::Query;
use crate::response::ResponseBody;
use builtin::{V3_PREFIX, names};
pub use paths::gv_path;

/// The schema name upstream gives a kind: k8s-openapi's name for built-ins
/// (`io.k8s.api.core.v1.ConfigMap`), the reversed group for custom resources
/// (`com.flights.v1.FlightTicket`).
pub fn schema_name(res: &Resource) -> String {
    if !res.is_custom()
        && let Some(k) = builtin::schemas().kind(&res.group, &res.version, &res.kind)
    {
        return k.name.clone();
    }
    if res.is_custom() {
        let reversed: Vec<&str> = res.group.split('.').rev().collect();
        format!("{}.{}.{}", reversed.join("."), res.version, res.kind)
    } else {
        // A built-in without a typed schema: upstream's Go package naming.
        let group = match res.group.as_str() {
            "" => "core",
            g => g.split('.').next().unwrap_or(g),
        };
        format!("io.k8s.api.{group}.{}.{}", res.version, res.kind)
    }
}

/// A custom resource's schema: its CRD version's `openAPIV3Schema` with `apiVersion`, `kind`
/// and `metadata` (a reference to `ObjectMeta`) filled in, as upstream publishes it.
fn custom_schema(res: &Resource) -> Value {
    let gvk = builtin::gvk_list(&[(&res.group, &res.version, &res.kind)]);
    let mut schema = match res.custom().and_then(|c| c.raw_schema.clone()) {
        Some(s) => s,
        None => json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
    };
    integral_bounds(&mut schema);
    if let Some(obj) = schema.as_object_mut() {
        let props = obj.entry("properties").or_insert_with(|| json!({}));
        if let Some(props) = props.as_object_mut() {
            props.entry("apiVersion").or_insert_with(|| json!({"type": "string", "description": "APIVersion defines the versioned schema of this representation of an object."}));
            props.entry("kind").or_insert_with(|| json!({"type": "string", "description": "Kind is a string value representing the REST resource this object represents."}));
            props.insert(
                "metadata".into(),
                json!({"allOf": [{"$ref": format!("{V3_PREFIX}{}", names::OBJECT_META)}], "description": "Standard object's metadata."}),
            );
        }
        obj.insert("x-kubernetes-group-version-kind".into(), gvk);
    }
    schema
}

/// `maximum`, `minimum` and `multipleOf` are `float64` in the stored CRD (k8s-openapi keeps
/// them as `f64`, so `10` reads back as `10.0`); Go prints integral floats without a fraction,
/// so do the same.
fn integral_bounds(v: &mut Value) {
    match v {
        Value::Object(obj) => {
            for (k, child) in obj.iter_mut() {
                match (k.as_str(), &*child) {
                    ("maximum" | "minimum" | "multipleOf", Value::Number(n)) => {
                        if let Some(f) = n.as_f64()
                            && f.fract() == 0.0
                            && f.abs() < 9.0e15
                        {
                            *child = Value::from(f as i64);
                        }
                    }
                    ("enum" | "default" | "example", _) => {}
                    _ => integral_bounds(child),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(integral_bounds),
        _ => {}
    }
}

/// The list kind of a custom resource (or of a built-in without a typed schema).
fn list_schema(res: &Resource, item: &str) -> Value {
    json!({
        "description": format!("{} is a list of {}", res.list_kind, res.kind),
        "type": "object",
        "properties": {
            "apiVersion": {"description": "APIVersion defines the versioned schema of this representation of an object.", "type": "string"},
            "items": {"description": format!("List of {}.", res.plural), "type": "array", "items": {"$ref": format!("{V3_PREFIX}{item}")}},
            "kind": {"description": "Kind is a string value representing the REST resource this object represents.", "type": "string"},
            "metadata": {"allOf": [{"$ref": format!("{V3_PREFIX}{}", names::LIST_META)}], "description": "Standard list metadata."},
        },
        "required": ["items"],
        "x-kubernetes-group-version-kind": builtin::gvk_list(&[(&res.group, &res.version, &res.list_kind)]),
    })
}

/// Swagger 2.0 has no `nullable`, `oneOf`, `anyOf` or `not`; upstream drops them (and the type
/// of int-or-string fields) from CRD schemas in v2, and unwraps `allOf` around a reference.
fn custom_to_v2(schema: &Value) -> Value {
    fn walk(v: &mut Value) {
        if let Value::Object(obj) = v {
            obj.remove("nullable");
            obj.remove("oneOf");
            obj.remove("anyOf");
            obj.remove("not");
            if obj.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true)) {
                obj.remove("allOf");
                obj.remove("type");
            }
            if let Some(Value::Array(all)) = obj.get("allOf")
                && all.len() == 1
                && let Some(r) = all.first().and_then(|s| s.get("$ref")).cloned()
            {
                obj.remove("allOf");
                obj.insert("$ref".into(), r);
            }
            for (k, child) in obj.iter_mut() {
                match k.as_str() {
                    "properties" | "patternProperties" | "definitions" => {
                        if let Value::Object(props) = child {
                            props.values_mut().for_each(walk);
                        }
                    }
                    "enum" | "default" | "example" | "x-kubernetes-validations" => {}
                    _ => walk(child),
                }
            }
        } else if let Value::Array(items) = v {
            items.iter_mut().for_each(walk);
        }
    }
    let mut out = builtin::to_v2(schema);
    walk(&mut out);
    out
}

/// What a group version contributes to a document: its paths and the schemas of its kinds
/// (custom ones inline, typed built-ins as names to copy from [`builtin::schemas`]).
struct GroupVersionParts {
    paths_v3: Map<String, Value>,
    paths_v2: Map<String, Value>,
    own_schemas: Map<String, Value>,
    builtin_roots: Vec<String>,
}

fn group_version_parts(snapshot: &Snapshot, group: &str, version: &str) -> GroupVersionParts {
    let builtins = builtin::schemas();
    let mut parts = GroupVersionParts {
        paths_v3: Map::new(),
        paths_v2: Map::new(),
        own_schemas: Map::new(),
        builtin_roots: vec![
            names::DELETE_OPTIONS.into(),
            names::STATUS.into(),
            names::PATCH.into(),
            names::WATCH_EVENT.into(),
            names::API_RESOURCE_LIST.into(),
            names::OBJECT_META.into(),
            names::LIST_META.into(),
        ],
    };
    for res in snapshot.group_version(group, version) {
        if res.is_review() {
            // Create-only computed APIs: not described (kubectl needs no schema for them).
            continue;
        }
        let name = schema_name(res);
        for item in paths::resource_paths(res, &name) {
            parts.paths_v3.insert(item.path.clone(), item.v3());
            parts.paths_v2.insert(item.path.clone(), item.v2());
        }
        if res.scale.is_some() {
            parts.builtin_roots.push(names::SCALE.into());
        }
        let typed = (!res.is_custom())
            .then(|| builtins.kind(&res.group, &res.version, &res.kind))
            .flatten();
        match typed {
            Some(k) => {
                parts.builtin_roots.push(k.name.clone());
                parts.builtin_roots.push(k.list_name());
            }
            None => {
                parts.own_schemas.insert(name.clone(), custom_schema(res));
                parts
                    .own_schemas
                    .insert(format!("{name}List"), list_schema(res, &name));
            }
        }
    }
    let (path, v3, v2) = paths::resources_path(group, version);
    parts.paths_v3.insert(path.clone(), v3);
    parts.paths_v2.insert(path, v2);
    for schema in parts.own_schemas.values() {
        builtin::refs_of(schema, V3_PREFIX, &mut parts.builtin_roots);
    }
    parts
}

/// `roots` and every definition they reach, from `defs`.
fn closure(defs: &Map<String, Value>, roots: &[String], prefix: &str) -> Map<String, Value> {
    let mut out = Map::new();
    let mut stack: Vec<String> = roots.to_vec();
    while let Some(name) = stack.pop() {
        if out.contains_key(&name) {
            continue;
        }
        if let Some(schema) = defs.get(&name) {
            builtin::refs_of(schema, prefix, &mut stack);
            out.insert(name, schema.clone());
        }
    }
    out
}

fn info() -> Value {
    json!({"title": "Kubernetes", "version": format!("v1.{}.0", crate::discovery::KUBE_MINOR)})
}

/// The OpenAPI v3 document of one group version, if it is served.
pub fn group_version(snapshot: &Snapshot, group: &str, version: &str) -> Option<Value> {
    if snapshot.group_version(group, version).is_empty() {
        return None;
    }
    let parts = group_version_parts(snapshot, group, version);
    let mut schemas = closure(&builtin::schemas().v3, &parts.builtin_roots, V3_PREFIX);
    schemas.extend(parts.own_schemas);
    Some(json!({
        "openapi": "3.0.0",
        "info": info(),
        "paths": parts.paths_v3,
        "components": {
            "schemas": schemas,
            "securitySchemes": {"BearerToken": {"type": "apiKey", "description": "Bearer Token authentication", "name": "authorization", "in": "header"}},
        },
        "security": [{"BearerToken": []}],
    }))
}

/// The Swagger 2.0 document of everything served.
pub fn swagger(snapshot: &Snapshot) -> Value {
    let mut paths = Map::new();
    let mut definitions = builtin::schemas().v2.clone();
    for (group, versions) in snapshot.groups() {
        for version in versions {
            let parts = group_version_parts(snapshot, group, version);
            paths.extend(parts.paths_v2);
            for (name, schema) in parts.own_schemas {
                definitions.insert(name, custom_to_v2(&schema));
            }
        }
    }
    json!({
        "swagger": "2.0",
        "info": info(),
        "paths": paths,
        "definitions": definitions,
        "securityDefinitions": {"BearerToken": {"type": "apiKey", "description": "Bearer Token authentication", "name": "authorization", "in": "header"}},
        "security": [{"BearerToken": []}],
    })
}

/// A rendered document and the hash of its bytes.
#[derive(Debug, Clone)]
pub struct Rendered {
    /// The JSON bytes.
    pub body: Bytes,
    /// Hash of the bytes (32 upper-case hex digits): the `?hash=` of the index and the ETag.
    pub hash: String,
}

impl Rendered {
    fn of(value: &Value) -> ApiResult<Rendered> {
        let body = serde_json::to_vec(value).map_err(ApiError::internal)?;
        Ok(Rendered {
            hash: content_hash(&body),
            body: Bytes::from(body),
        })
    }
}

/// A 128-bit content hash (two SipHash passes with different prefixes). Clients only compare it
/// for equality; it need not be cryptographic, only change when the bytes do.
fn content_hash(bytes: &[u8]) -> String {
    let mut a = DefaultHasher::new();
    a.write(bytes);
    let mut b = DefaultHasher::new();
    b.write_u8(0xA5);
    b.write(bytes);
    format!("{:016X}{:016X}", a.finish(), b.finish())
}

/// Every document of one registry generation.
pub struct Documents {
    generation: u64,
    snapshot: Arc<Snapshot>,
    index: Rendered,
    group_versions: HashMap<String, Arc<Rendered>>,
    v2: OnceLock<Rendered>,
    v2_protobuf: OnceLock<Rendered>,
}

impl Documents {
    /// The `/openapi/v3` index.
    pub fn index(&self) -> &Rendered {
        &self.index
    }

    /// The document of `api/v1` or `apis/G/V`.
    pub fn group_version(&self, path: &str) -> Option<&Rendered> {
        self.group_versions.get(path).map(|r| &**r)
    }

    /// The v2 document, rendered at first use.
    pub fn v2(&self) -> ApiResult<&Rendered> {
        if let Some(r) = self.v2.get() {
            return Ok(r);
        }
        let rendered = Rendered::of(&swagger(&self.snapshot))?;
        Ok(self.v2.get_or_init(|| rendered))
    }

    /// The v2 document in gnostic's protobuf encoding, rendered at first use.
    pub fn v2_protobuf(&self) -> &Rendered {
        self.v2_protobuf.get_or_init(|| {
            let body = proto::encode_document(&swagger(&self.snapshot));
            Rendered {
                hash: content_hash(&body),
                body: Bytes::from(body),
            }
        })
    }
}

/// The per-server cache of rendered documents.
#[derive(Default)]
pub struct OpenApi {
    current: Mutex<Option<Arc<Documents>>>,
    /// Documents of group versions that only hold built-in kinds: they never change.
    builtin_only: Mutex<HashMap<String, Arc<Rendered>>>,
}

impl OpenApi {
    /// A cache with nothing rendered yet.
    pub fn new() -> OpenApi {
        OpenApi::default()
    }

    /// The documents of `snapshot`'s generation, rendering them if this generation has not been
    /// seen yet.
    pub fn documents(&self, snapshot: &Arc<Snapshot>) -> ApiResult<Arc<Documents>> {
        let mut current = self.current.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(docs) = current.as_ref()
            && docs.generation == snapshot.generation
        {
            return Ok(docs.clone());
        }
        let docs = Arc::new(self.render(snapshot)?);
        if current
            .as_ref()
            .is_none_or(|c| c.generation < docs.generation)
        {
            *current = Some(docs.clone());
        }
        Ok(docs)
    }

    fn render(&self, snapshot: &Arc<Snapshot>) -> ApiResult<Documents> {
        let mut group_versions = HashMap::new();
        let mut index = Map::new();
        let mut fixed = self
            .builtin_only
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        for (group, versions) in snapshot.groups() {
            for version in versions {
                let path = gv_path(group, version);
                let builtin_only = snapshot
                    .group_version(group, version)
                    .iter()
                    .all(|r| !r.is_custom());
                let rendered = match fixed.get(&path) {
                    Some(r) if builtin_only => r.clone(),
                    _ => {
                        let Some(doc) = group_version(snapshot, group, version) else {
                            continue;
                        };
                        let r = Arc::new(Rendered::of(&doc)?);
                        if builtin_only {
                            fixed.insert(path.clone(), r.clone());
                        }
                        r
                    }
                };
                index.insert(
                    path.clone(),
                    json!({"serverRelativeURL": format!("/openapi/v3/{path}?hash={}", rendered.hash)}),
                );
                group_versions.insert(path, rendered);
            }
        }
        Ok(Documents {
            generation: snapshot.generation,
            snapshot: snapshot.clone(),
            index: Rendered::of(&json!({"paths": index}))?,
            group_versions,
            v2: OnceLock::new(),
            v2_protobuf: OnceLock::new(),
        })
    }

    /// Answers `GET /openapi/v2`, `/openapi/v3` and `/openapi/v3/{path}`.
    pub fn serve(
        &self,
        snapshot: &Arc<Snapshot>,
        which: Which<'_>,
        method: &Method,
        headers: &HeaderMap,
        query: &Query,
    ) -> ApiResult<Response<ResponseBody>> {
        if method != Method::GET && method != Method::HEAD {
            return Err(ApiError::method_not_allowed(method.as_str(), "openapi"));
        }
        let accept = headers
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        let encoding = match negotiate(accept) {
            Some(Negotiated::Protobuf) if which == Which::V2 => Negotiated::Protobuf,
            Some(Negotiated::Json) => Negotiated::Json,
            _ => return Err(ApiError::not_acceptable(accept)),
        };
        let docs = self.documents(snapshot)?;
        let (rendered, hashed) = match which {
            Which::V2 if encoding == Negotiated::Protobuf => (docs.v2_protobuf(), false),
            Which::V2 => (docs.v2()?, false),
            Which::V3Index => (docs.index(), false),
            Which::V3(rest) => {
                let path = rest.trim_matches('/');
                let Some(rendered) = docs.group_version(path) else {
                    return Err(ApiError::path_not_found());
                };
                match query.get("hash") {
                    Some(h) if !h.is_empty() && h != rendered.hash => {
                        let location = format!("/openapi/v3/{path}?hash={}", rendered.hash);
                        return Ok(redirect(&location));
                    }
                    Some(h) if !h.is_empty() => (rendered, true),
                    _ => (rendered, false),
                }
            }
        };
        let content_type = match encoding {
            Negotiated::Json => "application/json",
            // The `@` of the requested type is not a valid media-type character (Go's
            // `mime.ParseMediaType` rejects it), so the answer names the dotted form, as
            // kube-openapi does.
            Negotiated::Protobuf => PROTOBUF_V2_ALT,
        };
        Ok(answer(
            rendered,
            content_type,
            hashed,
            method == Method::HEAD,
            headers,
        ))
    }
}

/// Which document a request asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Which<'a> {
    /// `/openapi/v2`.
    V2,
    /// `/openapi/v3`.
    V3Index,
    /// `/openapi/v3/{path}` (`api/v1`, `apis/apps/v1`).
    V3(&'a str),
}

/// gnostic's media type of the v2 protobuf document.
const PROTOBUF_V2: &str = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";
/// The same with a dot for the `@`: the `Content-Type` of the answer.
const PROTOBUF_V2_ALT: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

/// An encoding the client accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Negotiated {
    Json,
    Protobuf,
}

/// The first encoding of `Accept` the server can produce (an absent header means JSON).
fn negotiate(accept: &str) -> Option<Negotiated> {
    if accept.trim().is_empty() {
        return Some(Negotiated::Json);
    }
    crate::negotiate::parse_media_ranges(accept)
        .iter()
        .find_map(|r| match r.essence.to_ascii_lowercase().as_str() {
            "application/json" | "application/*" | "*/*" => Some(Negotiated::Json),
            PROTOBUF_V2 | PROTOBUF_V2_ALT => Some(Negotiated::Protobuf),
            _ => None,
        })
}

fn redirect(location: &str) -> Response<ResponseBody> {
    let mut resp = Response::new(Full::new(Bytes::new()).boxed());
    *resp.status_mut() = StatusCode::MOVED_PERMANENTLY;
    if let Ok(v) = HeaderValue::from_str(location) {
        resp.headers_mut().insert(header::LOCATION, v);
    }
    resp
}

fn answer(
    rendered: &Rendered,
    content_type: &'static str,
    hashed: bool,
    head: bool,
    request: &HeaderMap,
) -> Response<ResponseBody> {
    let etag = format!("\"{}\"", rendered.hash);
    let not_modified = request
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == etag || t.trim() == "*"));
    let body = if not_modified || head {
        Bytes::new()
    } else {
        rendered.body.clone()
    };
    let mut resp = Response::new(Full::new(body).boxed());
    if not_modified {
        *resp.status_mut() = StatusCode::NOT_MODIFIED;
    }
    let h = resp.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    if let Ok(v) = HeaderValue::from_str(&etag) {
        h.insert(header::ETAG, v);
    }
    h.insert(header::VARY, HeaderValue::from_static("Accept"));
    if hashed {
        h.insert(
            header::CACHE_CONTROL,
            HeaderValue::from_static("public, immutable"),
        );
        let expires = jiff::Timestamp::now()
            .checked_add(jiff::SignedDuration::from_hours(24 * 365))
            .unwrap_or(jiff::Timestamp::MAX)
            .strftime("%a, %d %b %Y %H:%M:%S GMT")
            .to_string();
        if let Ok(v) = HeaderValue::from_str(&expires) {
            h.insert(header::EXPIRES, v);
        }
    } else {
        h.insert(
            header::CACHE_CONTROL,
            HeaderValue::from_static("no-cache, private"),
        );
    }
    resp
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Registry;
    use builtin::V2_PREFIX;

    #[test]
    fn patch_operations_accept_field_validation_for_each_kind() {
        let snap = Registry::new().snapshot();
        let doc = group_version(&snap, "apps", "v1").unwrap();
        let patch =
            &doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"];
        assert_eq!(
            patch["x-kubernetes-group-version-kind"]["kind"],
            "Deployment"
        );
        assert!(
            patch["parameters"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p["name"] == "fieldValidation" && p["in"] == "query")
        );
        assert!(
            patch["requestBody"]["content"]
                .get("application/strategic-merge-patch+json")
                .is_some()
        );
    }

    #[test]
    fn group_version_documents_hold_every_schema_they_reference() {
        let snap = Registry::new().snapshot();
        for (group, versions) in snap.groups() {
            for v in versions {
                let doc = group_version(&snap, group, v).unwrap();
                let schemas = doc["components"]["schemas"].as_object().unwrap();
                let mut refs = Vec::new();
                builtin::refs_in_document(&doc, V3_PREFIX, &mut refs);
                for r in refs {
                    assert!(schemas.contains_key(&r), "{group}/{v}: missing {r}");
                }
            }
        }
    }

    #[test]
    fn swagger_references_resolve() {
        let snap = Registry::new().snapshot();
        let doc = swagger(&snap);
        let defs = doc["definitions"].as_object().unwrap();
        let mut refs = Vec::new();
        builtin::refs_in_document(&doc, V2_PREFIX, &mut refs);
        for r in refs {
            assert!(defs.contains_key(&r), "missing {r}");
        }
        assert!(
            doc["paths"]["/api/v1/namespaces/{namespace}/pods/{name}"]["patch"]["consumes"]
                .as_array()
                .unwrap()
                .iter()
                .any(|c| c == "application/strategic-merge-patch+json")
        );
    }

    #[test]
    fn index_links_every_group_version_with_its_hash() {
        let snap = Registry::new().snapshot();
        let cache = OpenApi::new();
        let docs = cache.documents(&snap).unwrap();
        let idx: Value = serde_json::from_slice(&docs.index().body).unwrap();
        let url = idx["paths"]["api/v1"]["serverRelativeURL"]
            .as_str()
            .unwrap();
        let hash = &docs.group_version("api/v1").unwrap().hash;
        assert_eq!(url, format!("/openapi/v3/api/v1?hash={hash}"));
        assert!(idx["paths"].get("apis/apps/v1").is_some());
    }

    #[test]
    fn builtin_schema_names_follow_upstream() {
        let snap = Registry::new().snapshot();
        assert_eq!(
            schema_name(snap.get("", "v1", "configmaps").unwrap()),
            "io.k8s.api.core.v1.ConfigMap"
        );
        assert_eq!(
            schema_name(snap.get("apps", "v1", "deployments").unwrap()),
            "io.k8s.api.apps.v1.Deployment"
        );
        assert_eq!(
            schema_name(
                snap.get("rbac.authorization.k8s.io", "v1", "roles")
                    .unwrap()
            ),
            "io.k8s.api.rbac.v1.Role"
        );
        assert_eq!(
            schema_name(
                snap.get("apiextensions.k8s.io", "v1", "customresourcedefinitions")
                    .unwrap()
            ),
            "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition"
        );
    }

    #[test]
    fn every_registered_builtin_has_a_typed_schema() {
        let snap = Registry::new().snapshot();
        for r in snap.resources().iter().filter(|r| !r.is_review()) {
            assert!(
                builtin::schemas()
                    .kind(&r.group, &r.version, &r.kind)
                    .is_some(),
                "{}/{} {} has no typed schema",
                r.group,
                r.version,
                r.kind
            );
        }
    }

    #[test]
    fn custom_schemas_lose_v3_only_keywords_in_v2() {
        let v3 = json!({"type": "object", "properties": {
            "port": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]},
            "note": {"type": "string", "nullable": true},
            "metadata": {"allOf": [{"$ref": format!("{V3_PREFIX}{}", names::OBJECT_META)}]},
        }});
        let v2 = custom_to_v2(&v3);
        assert_eq!(
            v2["properties"]["port"],
            json!({"x-kubernetes-int-or-string": true})
        );
        assert_eq!(v2["properties"]["note"], json!({"type": "string"}));
        assert_eq!(
            v2["properties"]["metadata"]["$ref"],
            format!("{V2_PREFIX}{}", names::OBJECT_META)
        );
    }
}
