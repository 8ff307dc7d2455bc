//! What a request is answered with: an [`Answer`] (status code, payload, warnings) from the
//! verbs, rendered in the negotiated encoding into a [`ResponseBody`].

use std::convert::Infallible;

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use serde_json::{Value, json};

use crate::error::{ApiError, ApiResult};
use crate::negotiate::{Encoding, Output};
use crate::registry::Resource;

/// The response body type.
pub type ResponseBody = BoxBody<Bytes, Infallible>;

/// A response body in the making.
pub enum Payload {
    /// JSON bytes of an object as stored.
    Raw(Bytes),
    /// A value to encode.
    Value(Value),
}

/// An answer: status code, payload, warnings.
pub struct Answer {
    /// HTTP status.
    pub code: u16,
    /// Body.
    pub payload: Payload,
    /// `Warning` headers.
    pub warnings: Warnings,
}

impl Answer {
    pub(crate) fn ok(payload: Payload) -> Self {
        Answer {
            code: 200,
            payload,
            warnings: Vec::new(),
        }
    }
}

impl Answer {
    /// A `201 Created` with `value`.
    pub(crate) fn created(value: Value) -> Answer {
        Answer {
            code: 201,
            payload: Payload::Value(value),
            warnings: Vec::new(),
        }
    }
}

/// Warnings to send back in `Warning` headers.
pub type Warnings = Vec<String>;

/// Converts an object stored for a view (events.k8s.io/v1 events) to the view's shape; other
/// objects are returned as they are. (Custom resources are converted between the versions of
/// their CRD, which may call a webhook, by the conversion module before they are rendered.)
pub fn convert_version(res: &Resource, bytes: Bytes) -> Bytes {
    if res.view.is_none() {
        return bytes;
    }
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(v) if res.is_stored_form(&v) => serde_json::to_vec(&res.shown(v))
            .map(Bytes::from)
            .unwrap_or(bytes),
        _ => bytes,
    }
}

fn to_value(res: Option<&Resource>, payload: Payload) -> ApiResult<Value> {
    match payload {
        Payload::Value(v) => Ok(v),
        Payload::Raw(b) => {
            let v = serde_json::from_slice(&b).map_err(ApiError::internal)?;
            Ok(match res {
                Some(r) => r.shown(v),
                None => v,
            })
        }
    }
}

/// An answer's object or list as a view's clients see it: stored objects (the object, or the
/// items of a list) converted to the view's shape. Anything else (a `Status`, objects already
/// converted) is left alone.
pub fn present(res: &Resource, mut value: Value) -> Value {
    if res.view.is_none() {
        return value;
    }
    if let Some(items) = value.get_mut("items").and_then(Value::as_array_mut) {
        for item in items.iter_mut() {
            *item = res.shown(item.take());
        }
        return value;
    }
    res.shown(value)
}

/// Encodes a payload for the client.
pub fn render(
    res: Option<&Resource>,
    output: &Output,
    payload: Payload,
    list: bool,
) -> ApiResult<(Vec<u8>, String)> {
    // Objects a handler built (dry runs, deleted collections) are converted here; stored bytes
    // below, where they are read.
    let payload = match (res, payload) {
        (Some(r), Payload::Value(v)) if r.view.is_some() => Payload::Value(present(r, v)),
        (_, p) => p,
    };
    match output {
        Output::Object(Encoding::Json) | Output::AggregatedDiscovery(_) => {
            let ct = match output {
                Output::AggregatedDiscovery(ct) => ct.clone(),
                _ => "application/json".to_string(),
            };
            match payload {
                Payload::Raw(b) => {
                    let b = match res {
                        Some(r) => convert_version(r, b),
                        None => b,
                    };
                    Ok((b.to_vec(), ct))
                }
                Payload::Value(v) => Ok((serde_json::to_vec(&v).map_err(ApiError::internal)?, ct)),
            }
        }
        Output::Object(Encoding::Yaml) => {
            let v = to_value(res, payload)?;
            let text = serde_yaml::to_string(&v).map_err(ApiError::internal)?;
            Ok((text.into_bytes(), "application/yaml".into()))
        }
        Output::Object(Encoding::Protobuf) => {
            let v = to_value(res, payload)?;
            let bytes = opkit_protobuf::encode(&v).map_err(ApiError::internal)?;
            Ok((bytes, opkit_protobuf::MEDIA_TYPE.into()))
        }
        Output::PartialMetadata => {
            let v = to_value(res, payload)?;
            let out = if list {
                json!({"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadataList", "metadata": v.get("metadata").cloned().unwrap_or(json!({})),
                    "items": v.get("items").and_then(Value::as_array).map(|items| items.iter().map(partial).collect::<Vec<_>>()).unwrap_or_default()})
            } else {
                partial(&v)
            };
            Ok((
                serde_json::to_vec(&out).map_err(ApiError::internal)?,
                "application/json".into(),
            ))
        }
        Output::Table => {
            let v = to_value(res, payload)?;
            let table = match res {
                Some(r) if v.get("kind").and_then(Value::as_str) != Some("Status") => {
                    crate::tables::table_for(r, &v, list, "Metadata", true)
                }
                _ => v,
            };
            Ok((
                serde_json::to_vec(&table).map_err(ApiError::internal)?,
                "application/json".into(),
            ))
        }
    }
}

/// `PartialObjectMetadata` of an object.
pub fn partial(obj: &Value) -> Value {
    json!({"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata", "metadata": obj.get("metadata").cloned().unwrap_or(json!({}))})
}

/// Builds a LIST body from stored items, without re-serializing them for JSON.
pub fn list_json(res: &Resource, items: &[Bytes], meta: &Value) -> Vec<u8> {
    let mut out = Vec::with_capacity(items.iter().map(|b| b.len() + 1).sum::<usize>() + 128);
    out.extend_from_slice(b"{\"apiVersion\":\"");
    out.extend_from_slice(res.api_version().as_bytes());
    out.extend_from_slice(b"\",\"items\":[");
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        let item = convert_version(res, item.clone());
        out.extend_from_slice(&item);
    }
    out.extend_from_slice(b"],\"kind\":\"");
    out.extend_from_slice(res.list_kind.as_bytes());
    out.extend_from_slice(b"\",\"metadata\":");
    out.extend_from_slice(meta.to_string().as_bytes());
    out.push(b'}');
    out
}

pub(crate) fn full(bytes: impl Into<Bytes>) -> ResponseBody {
    Full::new(bytes.into()).boxed()
}

pub(crate) fn error_response(e: &ApiError) -> Response<ResponseBody> {
    let body = serde_json::to_vec(&e.to_status()).unwrap_or_default();
    let mut resp = Response::new(full(body));
    *resp.status_mut() =
        StatusCode::from_u16(e.code()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    if let Some(secs) = e.retry_after {
        resp.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(secs));
    }
    resp
}

pub(crate) fn bytes_response(
    code: u16,
    body: Vec<u8>,
    content_type: &str,
    warnings: &[String],
) -> Response<ResponseBody> {
    let mut resp = Response::new(full(body));
    *resp.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::OK);
    if let Ok(v) = HeaderValue::from_str(content_type) {
        resp.headers_mut().insert(header::CONTENT_TYPE, v);
    }
    for w in warnings {
        let text = format!("299 - \"{}\"", w.replace('"', "\\\""));
        if let Ok(v) = HeaderValue::from_str(&text) {
            resp.headers_mut().append(header::WARNING, v);
        }
    }
    resp
}

pub(crate) fn json_response(value: &Value) -> Response<ResponseBody> {
    bytes_response(
        200,
        serde_json::to_vec(value).unwrap_or_default(),
        "application/json",
        &[],
    )
}

/// Keeps `slot` alive for as long as the response body streams.
pub(crate) fn hold_while_streaming<T: Send + Sync + 'static>(
    resp: Response<ResponseBody>,
    slot: T,
) -> Response<ResponseBody> {
    let (parts, body) = resp.into_parts();
    let body = http_body_util::BodyExt::map_frame(body, move |frame| {
        let _held = &slot;
        frame
    });
    Response::from_parts(parts, BodyExt::boxed(body))
}
