//! Request bodies: reading them under the size limit, and decoding them (JSON, YAML or
//! protobuf) into objects and options.

use bytes::Bytes;
use http_body_util::BodyExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::DeleteOptions;
use serde_json::Value;

use super::{BodyFields, Query, Wording};
use crate::error::{ApiError, ApiResult};
use crate::negotiate::{self, Encoding};
use crate::registry::Resource;

/// Upstream's request body limit (3 MiB).
pub(crate) const MAX_BODY_BYTES: usize = 3 * 1024 * 1024;

/// How much of a body over [`MAX_BODY_BYTES`] is read (and thrown away) before the 413 goes
/// out (16 MiB).
pub(crate) const DRAIN_BODY_BYTES: usize = 16 * 1024 * 1024;

/// Decodes a request body (JSON, YAML or protobuf) into an object.
pub fn decode_body(res: &Resource, content_type: Option<&str>, body: &[u8]) -> ApiResult<Value> {
    decode_object(res, content_type, body).map(|(obj, _)| obj)
}

/// Decodes a request body (JSON, YAML or protobuf) into an object; also returns its duplicate
/// fields (`duplicate field "a"`), which `fieldValidation` reports.
pub(crate) fn decode_object(
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
pub(crate) async fn read_body<B>(body: B) -> ApiResult<Bytes>
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

/// Decodes the body of a create or replace, and notes on the query what `fieldValidation`
/// needs: the body's duplicate fields, and that a whole object is refused in upstream's words.
pub(crate) fn decode_whole_object(
    res: &Resource,
    content_type: Option<&str>,
    body: &[u8],
    query: &Query,
) -> ApiResult<(Value, Query)> {
    let (obj, duplicates) = decode_object(res, content_type, body)?;
    let query = query.clone().with_body_fields(BodyFields {
        errors: duplicates,
        wording: Wording::Object,
    });
    Ok((obj, query))
}

/// Decodes the `DeleteOptions` body of a delete (none when the body is empty).
pub(crate) fn delete_options(content_type: Option<&str>, body: &[u8]) -> ApiResult<DeleteOptions> {
    let value = delete_options_value(content_type, body)?;
    if value.is_null() {
        return Ok(DeleteOptions::default());
    }
    serde_json::from_value(value)
        .map_err(|e| ApiError::bad_request(format!("error decoding DeleteOptions: {e}")))
}

fn delete_options_value(content_type: Option<&str>, body: &[u8]) -> ApiResult<Value> {
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
