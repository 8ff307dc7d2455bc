//! Routing: from a request that passed the filters to the endpoint that serves it —
//! discovery, OpenAPI, the reviews, or a verb on a resource — and its answer encoded as the
//! client asked.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, Response, header};
use http_body_util::{BodyExt, StreamBody};
use serde_json::Value;

use crate::api::Api;
use crate::discovery;
use crate::endpoints;
use crate::error::{ApiError, ApiResult};
use crate::filters::{Body, Identity, Info};
use crate::negotiate::{self, Encoding, Output};
use crate::patch::PatchType;
use crate::registry::Resource;
use crate::request::{
    ObjectRef, Part, Query, ResourcePath, Target, decode_body, decode_whole_object, delete_options,
    header_str,
};
use crate::response::{
    Answer, Payload, ResponseBody, bytes_response, error_response, json_response, list_json, render,
};
use crate::strategy::{self, Review, Subresource};

pub(crate) async fn route(
    api: &Api,
    method: &Method,
    headers: &HeaderMap,
    target: Target,
    query: &Query,
    body: Bytes,
) -> ApiResult<Response<ResponseBody>> {
    let accept = header_str(headers, header::ACCEPT);
    let snapshot = api.registry.snapshot();
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
                _ if core => discovery_get(Some(discovery::core_versions(&api.server_address))),
                _ => discovery_get(Some(discovery::group_list(&snapshot))),
            }
        }
        Target::Group(g) => discovery_get(discovery::group(&snapshot, &g)),
        Target::GroupVersion { group, version } => {
            discovery_get(discovery::resource_list(&snapshot, &group, &version))
        }
        Target::OpenApiV2 => {
            let which = crate::openapi::Which::V2;
            api.openapi.serve(&snapshot, which, method, headers, query)
        }
        Target::OpenApiV3(rest) => {
            let which = match rest.as_deref() {
                None => crate::openapi::Which::V3Index,
                Some(rest) => crate::openapi::Which::V3(rest),
            };
            api.openapi.serve(&snapshot, which, method, headers, query)
        }
        Target::Resource(path) => {
            let res = snapshot
                .get(&path.group, &path.version, &path.resource)
                .cloned()
                .ok_or_else(ApiError::path_not_found)?;
            resource_request(api, method, headers, res, path, query, body).await
        }
        // Mounted paths are answered before routing (`Router`), with the whole request.
        Target::Health | Target::Version | Target::Mounted(_) | Target::Unknown => {
            Err(ApiError::path_not_found())
        }
    }
}

async fn resource_request(
    api: &Api,
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
    let protobuf_ok = !res.is_custom() && opkit_protobuf::supports(&res.api_version(), &res.kind);
    let output = negotiate::choose_output(accept, protobuf_ok, false)?;
    if res.is_review() {
        return review(
            api,
            method,
            &res,
            &path,
            query,
            content_type,
            &body,
            &output,
        );
    }
    let part = match path.subresource.as_deref() {
        None => Part::Main,
        Some("status") if res.status => Part::Status,
        Some("scale") if res.scale.is_some() => {
            let name = path.name.as_deref().unwrap_or("");
            let target = ObjectRef {
                res: &res,
                ns,
                name,
            };
            let scaled =
                endpoints::scale(api, target, method.as_str(), &body, content_type, query).await?;
            let scale_out = match output {
                Output::Object(Encoding::Protobuf)
                    if !opkit_protobuf::supports("autoscaling/v1", "Scale") =>
                {
                    Output::Object(Encoding::Json)
                }
                o => o,
            };
            return encode(None, &scale_out, scaled, false);
        }
        Some(sub) => match strategy::of(&res).subresource(sub) {
            Some(Subresource::Token) => {
                if method != Method::POST {
                    return Err(ApiError::method_not_allowed(
                        method.as_str(),
                        &format!("{}/{sub}", res.plural),
                    ));
                }
                let request = decode_body(&res, content_type, &body)?;
                let name = path.name.as_deref().unwrap_or("");
                let issued = api.authn.token_request(ns.unwrap_or(""), name, &request)?;
                return encode(None, &output, Answer::created(issued), false);
            }
            Some(Subresource::Finalize) => {
                if method != Method::PUT {
                    return Err(ApiError::method_not_allowed(
                        method.as_str(),
                        &format!("{}/{sub}", res.plural),
                    ));
                }
                Part::Finalize
            }
            None => return Err(ApiError::path_not_found()),
        },
    };
    let watch = path.legacy_watch || query.flag("watch");
    match (method, path.name.as_deref()) {
        (&Method::GET, None) if watch => {
            watch_response(api, res, path.namespace.clone(), query, &output)
        }
        (&Method::GET, Some(name)) if watch => {
            let mut pairs = vec![("fieldSelector".to_string(), format!("metadata.name={name}"))];
            pairs.extend(
                query
                    .pairs()
                    .iter()
                    .filter(|(k, _)| k != "fieldSelector")
                    .cloned(),
            );
            watch_response(
                api,
                res,
                path.namespace.clone(),
                &query.with_pairs(pairs),
                &output,
            )
        }
        (&Method::GET, None) => {
            let (items, meta) = endpoints::list(api, &res, ns, query).await?;
            let items = api.converter.stored(&res, items, true).await?;
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
                parsed.push(serde_json::from_slice::<Value>(&item).map_err(ApiError::internal)?);
            }
            let list = serde_json::json!({"apiVersion": res.api_version(), "kind": res.list_kind, "metadata": meta, "items": parsed});
            encode(
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
            let target = ObjectRef {
                res: &res,
                ns,
                name,
            };
            let got = endpoints::get(api, target, query).await?;
            encode(Some(&res), &output, shown(api, &res, got).await?, false)
        }
        (&Method::POST, None) if part == Part::Main => {
            let (obj, query) = decode_whole_object(&res, content_type, &body, query)?;
            let created = endpoints::create(api, &res, ns, obj, &query, true).await?;
            encode(Some(&res), &output, shown(api, &res, created).await?, false)
        }
        (&Method::PUT, Some(name)) => {
            let (obj, query) = decode_whole_object(&res, content_type, &body, query)?;
            let replaced = endpoints::replace(api, &res, ns, name, part, obj, &query).await?;
            encode(
                Some(&res),
                &output,
                shown(api, &res, replaced).await?,
                false,
            )
        }
        (&Method::PATCH, Some(name)) => {
            let patch_type = PatchType::from_content_type(content_type)?;
            let target = ObjectRef {
                res: &res,
                ns,
                name,
            };
            let patched = endpoints::patch(api, target, part, patch_type, &body, query).await?;
            encode(Some(&res), &output, shown(api, &res, patched).await?, false)
        }
        (&Method::DELETE, Some(name)) if part == Part::Main => {
            let options = delete_options(content_type, &body)?;
            let target = ObjectRef {
                res: &res,
                ns,
                name,
            };
            let deleted = endpoints::delete(api, target, &options, query).await?;
            encode(Some(&res), &output, shown(api, &res, deleted).await?, false)
        }
        (&Method::DELETE, None) if part == Part::Main => {
            let options = delete_options(content_type, &body)?;
            let deleted = endpoints::delete_collection(api, &res, ns, &options, query).await?;
            encode(Some(&res), &output, shown(api, &res, deleted).await?, true)
        }
        (m, _) => Err(ApiError::method_not_allowed(m.as_str(), &res.plural)),
    }
}

/// The create-only review APIs: TokenReview, SelfSubjectReview and the access reviews.
#[allow(clippy::too_many_arguments)]
fn review(
    api: &Api,
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
    let out = match strategy::review(res) {
        Review::Token => api.authn.token_review(&review),
        Review::SelfSubject => api.authn.self_subject_review(user),
        Review::Access => {
            api.authz
                .access_review(&res.plural, path.namespace.as_deref(), user, &review)?
        }
    };
    encode(None, output, Answer::created(out), false)
}

/// An answer of a verb on `res` in the request's version (custom resources are stored in their
/// CRD's storage version).
async fn shown(api: &Api, res: &Resource, mut answer: Answer) -> ApiResult<Answer> {
    answer.payload = api.converter.answer(res, answer.payload).await?;
    Ok(answer)
}

/// Encodes an answer in the negotiated output.
fn encode(
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
    api: &Api,
    res: Arc<Resource>,
    ns: Option<String>,
    query: &Query,
    output: &Output,
) -> ApiResult<Response<ResponseBody>> {
    let output = match output {
        Output::PartialMetadata | Output::Object(Encoding::Yaml) => Output::Object(Encoding::Json),
        o => o.clone(),
    };
    let watch = endpoints::watch(api, res, ns, query, &output)?;
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

/// The router as the innermost service of the filter chain.
#[derive(Clone)]
pub(crate) struct Router(pub(crate) Arc<Api>);

impl tower::Service<http::Request<Body>> for Router {
    type Response = Response<ResponseBody>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<Body>) -> Self::Future {
        let api = self.0.clone();
        Box::pin(async move {
            let (mut parts, body) = req.into_parts();
            let (Some(info), Some(identity)) = (
                parts.extensions.remove::<Info>(),
                parts.extensions.get::<Identity>(),
            ) else {
                let e = ApiError::internal("the request did not pass the filters");
                return Ok(error_response(&e));
            };
            // The limits filter has read the body already; this takes it as it is.
            let body = match body.collect().await {
                Ok(collected) => collected.to_bytes(),
                Err(e) => {
                    let e = ApiError::bad_request(format!("error reading the request body: {e}"));
                    return Ok(error_response(&e));
                }
            };
            let query = info.query.by_user(
                identity.user.clone(),
                header_str(&parts.headers, header::USER_AGENT),
            );
            if let Target::Mounted(path) = &info.target {
                return Ok(match api.mounts.find(path) {
                    Some((_, handler)) => {
                        let caller: crate::mounts::Caller = (*identity.user).clone();
                        let mut request = http::Request::from_parts(parts, body);
                        request.extensions_mut().insert(caller);
                        let answer = handler(request).await;
                        answer.map(crate::response::full)
                    }
                    // Unmounted since the filters ran: not served any more.
                    None => error_response(&ApiError::path_not_found()),
                });
            }
            let target = info.target;
            Ok(
                match route(&api, &parts.method, &parts.headers, target, &query, body).await {
                    Ok(resp) => resp,
                    Err(e) => error_response(&e),
                },
            )
        })
    }
}
