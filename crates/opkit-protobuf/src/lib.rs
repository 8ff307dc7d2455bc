//! Kubernetes protobuf (`application/vnd.kubernetes.protobuf`) ↔ JSON for built-in kinds.
//!
//! # Why
//!
//! opkit's API server stores and reasons about objects as JSON, but kubectl (v1.35) sends
//! protobuf bodies for `kubectl create configmap|secret|deployment|role|…`, `create token`
//! (TokenRequest) and `auth can-i` (SelfSubjectAccessReview), and lists protobuf first in
//! `Accept` for built-in kinds. This crate converts between the two without typed structs:
//! [`decode`] turns an enveloped protobuf object into the JSON kube-apiserver would produce,
//! and [`encode`] / [`encode_watch_event`] turn JSON objects (single objects, lists, `Status`,
//! watch events) into the bytes client-go expects.
//!
//! # How
//!
//! A static, generated schema table (`src/schema/generated.rs`, produced by
//! `examples/gen_schema.rs` from k8s-pb's prost code and the Kubernetes Go types) describes
//! every message: field numbers, wire types, JSON names, inlining and omitempty behaviour. A
//! small generic walker converts bytes ↔ `serde_json::Value` by that table; well-known types
//! with their own JSON forms (`Time`, `MicroTime`, `Duration`, `IntOrString`, `Quantity`,
//! `RawExtension`/`FieldsV1`/`JSON`, the `JSONSchemaPropsOr*` unions, `Verbs`-like string lists)
//! are handled by hand. Nothing is built per call.
//!
//! # Wire format
//!
//! * An object is `k8s\0` followed by a `runtime.Unknown` message: `typeMeta` (1:
//!   {apiVersion=1, kind=2}), `raw` (2: the object's message), `contentEncoding` (3),
//!   `contentType` (4).
//! * A watch stream (`…;stream=watch`) is a sequence of frames: a 4-byte big-endian length,
//!   then a **bare** `meta.v1.WatchEvent` {type=1, object=2 RawExtension{raw=1}} — upstream
//!   encodes the event with the raw (envelope-less) stream serializer — whose `object.raw` is
//!   the enveloped object.
//!
//! # JSON shape
//!
//! Go's protobuf encoder writes every non-pointer field, even when zero, so "present" on the
//! wire does not mean "set". The decoder therefore follows the Go JSON tags: a zero value of a
//! non-pointer `omitempty` field (or an `omitzero` one such as `creationTimestamp`) is left out,
//! while pointer fields keep explicit zeros (`spec.replicas: 0`); empty repeated and map fields
//! are left out; a zero `Time` of a pointer field is `null`. JSON `null` encodes as absent.
//! Unknown protobuf field numbers are skipped, as the Go decoder does; unknown JSON fields are
//! an error.
//!
//! # Coverage and compatibility
//!
//! All kinds of core/v1, apps/v1, batch/v1, coordination.k8s.io/v1, events.k8s.io/v1,
//! rbac.authorization.k8s.io/v1, policy/v1, networking.k8s.io/v1, authentication.k8s.io/v1,
//! authorization.k8s.io/v1, autoscaling/v1 and v2, discovery.k8s.io/v1, apidiscovery.k8s.io/v2,
//! admissionregistration.k8s.io/v1, certificates.k8s.io/v1, flowcontrol.apiserver.k8s.io/v1,
//! node.k8s.io/v1, scheduling.k8s.io/v1, storage.k8s.io/v1, apiextensions.k8s.io/v1 and the
//! meta/v1 kinds (`Status`, `DeleteOptions`, `APIResourceList`, …), lists included; see
//! [`supports`]. Kubernetes 1.35 (k8s-pb 0.9). `meta.k8s.io/v1 Table` has no protobuf form
//! upstream either. Besides its own tests, the crate checks itself against the Go round-trip
//! fixtures of kubernetes/api when they are at hand (`tests/upstream_fixtures.rs`): all 85
//! supported fixtures decode to exactly Go's JSON, and 84 encode to Go's exact bytes (the 85th,
//! a CRD, differs only by zero values Go writes and its JSON omits).
//!
//! # Regenerating the schema table
//!
//! `cargo run -p opkit-protobuf --example gen_schema -- --go-src DIR`, where `DIR` holds
//! kubernetes/api, kubernetes/apimachinery and kubernetes/apiextensions-apiserver at the tag
//! matching k8s-pb (v0.35.0 for k8s-pb 0.9) in `api/`, `apimachinery/` and
//! `apiextensions-apiserver/`; k8s-pb's sources come from the cargo registry. See
//! `examples/gen_schema.rs` for details. Bumping k8s-pb means regenerating with the matching
//! Go tag.

#![warn(missing_docs)]

mod decode;
mod encode;
mod error;
mod schema;
mod timefmt;
mod wire;

use serde_json::{Map, Value};

pub use error::ProtobufError;

use wire::{LEN, Reader};

/// The Kubernetes protobuf media type.
pub const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// The media type of a protobuf watch stream.
pub const WATCH_MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf;stream=watch";

/// The 4 bytes every enveloped protobuf object starts with.
pub const MAGIC: &[u8; 4] = b"k8s\0";

/// True if (apiVersion, kind) is a kind this codec knows, e.g. `("v1", "ConfigMap")`,
/// `("apps/v1", "DeploymentList")`, `("v1", "Status")`.
///
/// Meta kinds (`Status`, `APIResourceList`, …) are known as `v1` and `meta.k8s.io/v1`; the
/// option kinds every group version registers (`DeleteOptions`, `WatchEvent`, …) are known
/// under every supported apiVersion.
pub fn supports(api_version: &str, kind: &str) -> bool {
    schema::lookup_kind(api_version, kind).is_some()
}

/// The parts of a `runtime.Unknown` envelope.
struct Envelope<'a> {
    api_version: &'a str,
    kind: &'a str,
    raw: &'a [u8],
    content_encoding: &'a str,
    content_type: &'a str,
}

fn envelope_error(reason: impl std::fmt::Display) -> ProtobufError {
    ProtobufError::BadEnvelope(reason.to_string())
}

fn envelope_str<'a>(bytes: &'a [u8], what: &str) -> Result<&'a str, ProtobufError> {
    std::str::from_utf8(bytes).map_err(|_| envelope_error(format!("{what} is not UTF-8")))
}

/// Parses `k8s\0` + `runtime.Unknown`.
fn parse_envelope(bytes: &[u8]) -> Result<Envelope<'_>, ProtobufError> {
    let body = bytes.strip_prefix(MAGIC).ok_or(ProtobufError::BadMagic)?;
    let mut env = Envelope {
        api_version: "",
        kind: "",
        raw: &[],
        content_encoding: "",
        content_type: "",
    };
    let mut r = Reader::new(body);
    while !r.is_empty() {
        let (tag, wt) = r.key().map_err(envelope_error)?;
        if !(1..=4).contains(&tag) {
            r.skip(wt).map_err(envelope_error)?;
            continue;
        }
        wire::expect(wt, LEN).map_err(|e| envelope_error(format!("field {tag}: {e}")))?;
        let value = r.bytes().map_err(envelope_error)?;
        match tag {
            1 => {
                let mut tm = Reader::new(value);
                while !tm.is_empty() {
                    let (t, w) = tm.key().map_err(envelope_error)?;
                    if t == 1 || t == 2 {
                        wire::expect(w, LEN).map_err(envelope_error)?;
                        let s = envelope_str(tm.bytes().map_err(envelope_error)?, "typeMeta")?;
                        if t == 1 {
                            env.api_version = s;
                        } else {
                            env.kind = s;
                        }
                    } else {
                        tm.skip(w).map_err(envelope_error)?;
                    }
                }
            }
            2 => env.raw = value,
            3 => env.content_encoding = envelope_str(value, "contentEncoding")?,
            _ => env.content_type = envelope_str(value, "contentType")?,
        }
    }
    Ok(env)
}

/// Decodes an enveloped object (`k8s\0` + `runtime.Unknown`) into JSON, with `apiVersion` and
/// `kind` taken from the envelope's typeMeta and inserted first.
///
/// Errors name what is wrong: [`ProtobufError::BadMagic`], an unsupported kind, or the
/// malformed field and message.
pub fn decode(bytes: &[u8]) -> Result<Value, ProtobufError> {
    decode_at(bytes, 0)
}

/// Deepest message nesting accepted (real objects stay well below 50 levels; the limit keeps
/// hostile input from exhausting the stack).
pub(crate) const MAX_DEPTH: u32 = 100;

/// [`decode`] of an envelope nested `depth` messages deep.
pub(crate) fn decode_at(bytes: &[u8], depth: u32) -> Result<Value, ProtobufError> {
    let env = parse_envelope(bytes)?;
    if !env.content_encoding.is_empty() {
        return Err(envelope_error(format!(
            "unsupported contentEncoding {:?}",
            env.content_encoding
        )));
    }
    let mut obj = Map::new();
    obj.insert("apiVersion".into(), Value::String(env.api_version.into()));
    obj.insert("kind".into(), Value::String(env.kind.into()));
    if env.content_type.starts_with("application/json") {
        // A JSON payload in a protobuf envelope (allowed by runtime.Unknown).
        let inner: Map<String, Value> = serde_json::from_slice(env.raw)
            .map_err(|e| envelope_error(format!("raw JSON payload: {e}")))?;
        for (k, v) in inner {
            if k != "apiVersion" && k != "kind" {
                obj.insert(k, v);
            }
        }
        return Ok(Value::Object(obj));
    }
    if !env.content_type.is_empty() && !env.content_type.starts_with(MEDIA_TYPE) {
        return Err(envelope_error(format!(
            "unsupported contentType {:?}",
            env.content_type
        )));
    }
    let msg = schema::lookup_kind(env.api_version, env.kind).ok_or_else(|| {
        ProtobufError::UnsupportedKind {
            api_version: env.api_version.into(),
            kind: env.kind.into(),
        }
    })?;
    decode::decode_into(msg, env.raw, &mut obj, depth)?;
    Ok(Value::Object(obj))
}

/// Encodes a JSON object of a supported kind (its `apiVersion` and `kind` select the message)
/// into the envelope. Unknown JSON fields and type mismatches are errors naming the field path.
pub fn encode(value: &Value) -> Result<Vec<u8>, ProtobufError> {
    let mut out = Vec::with_capacity(256);
    encode_into(value, &mut out)?;
    Ok(out)
}

/// [`encode`], appending to `out`.
fn encode_into(value: &Value, out: &mut Vec<u8>) -> Result<(), ProtobufError> {
    let obj = value
        .as_object()
        .ok_or_else(|| ProtobufError::json("expected a JSON object"))?;
    let type_field = |name: &str| -> Result<&str, ProtobufError> {
        match obj.get(name) {
            Some(Value::String(s)) if !s.is_empty() => Ok(s),
            _ => Err(ProtobufError::InvalidJson {
                path: name.into(),
                reason: "a non-empty string is required".into(),
            }),
        }
    };
    let api_version = type_field("apiVersion")?;
    let kind = type_field("kind")?;
    let msg =
        schema::lookup_kind(api_version, kind).ok_or_else(|| ProtobufError::UnsupportedKind {
            api_version: api_version.into(),
            kind: kind.into(),
        })?;
    out.extend_from_slice(MAGIC);
    let type_meta = wire::begin_len(out, 1);
    wire::put_bytes_field(out, 1, api_version.as_bytes());
    wire::put_bytes_field(out, 2, kind.as_bytes());
    wire::end_len(out, type_meta);
    let raw = wire::begin_len(out, 2);
    encode::encode_message(msg, obj, out, encode::Mode::Top, 0)?;
    wire::end_len(out, raw);
    // contentEncoding and contentType: empty, written as Go writes them.
    wire::put_bytes_field(out, 3, b"");
    wire::put_bytes_field(out, 4, b"");
    Ok(())
}

/// One watch-stream frame: a 4-byte big-endian length, then a `meta.v1.WatchEvent` whose
/// `object.raw` is the enveloped `object`. `event_type` is `ADDED`, `MODIFIED`, `DELETED`,
/// `BOOKMARK` or `ERROR` (not checked).
pub fn encode_watch_event(event_type: &str, object: &Value) -> Result<Vec<u8>, ProtobufError> {
    let mut out = Vec::with_capacity(256);
    out.extend_from_slice(&[0; 4]);
    wire::put_bytes_field(&mut out, 1, event_type.as_bytes());
    let object_field = wire::begin_len(&mut out, 2);
    let raw = wire::begin_len(&mut out, 1);
    encode_into(object, &mut out)?;
    wire::end_len(&mut out, raw);
    wire::end_len(&mut out, object_field);
    let len = u32::try_from(out.len() - 4)
        .map_err(|_| ProtobufError::json("watch event larger than 4 GiB"))?;
    out[..4].copy_from_slice(&len.to_be_bytes());
    Ok(out)
}

/// Decodes one watch-stream frame body (the bytes after the length prefix) into the event
/// type and object. A body wrapped in an envelope is accepted too; a JSON `object.raw` is
/// parsed as JSON.
pub fn decode_watch_event(bytes: &[u8]) -> Result<(String, Value), ProtobufError> {
    let body = if bytes.starts_with(MAGIC) {
        parse_envelope(bytes)?.raw
    } else {
        bytes
    };
    let mut event_type = String::new();
    let mut raw: &[u8] = &[];
    let mut r = Reader::new(body);
    let bad = |e: wire::WireError| envelope_error(format!("watch event: {e}"));
    while !r.is_empty() {
        let (tag, wt) = r.key().map_err(bad)?;
        match tag {
            1 => {
                wire::expect(wt, LEN).map_err(bad)?;
                event_type = envelope_str(r.bytes().map_err(bad)?, "watch event type")?.into();
            }
            2 => {
                wire::expect(wt, LEN).map_err(bad)?;
                let mut ext = Reader::new(r.bytes().map_err(bad)?);
                while !ext.is_empty() {
                    let (t, w) = ext.key().map_err(bad)?;
                    if t == 1 {
                        wire::expect(w, LEN).map_err(bad)?;
                        raw = ext.bytes().map_err(bad)?;
                    } else {
                        ext.skip(w).map_err(bad)?;
                    }
                }
            }
            _ => r.skip(wt).map_err(bad)?,
        }
    }
    let object = if raw.is_empty() {
        Value::Null
    } else if raw.starts_with(MAGIC) {
        decode(raw)?
    } else {
        serde_json::from_slice(raw).map_err(|e| {
            envelope_error(format!(
                "watch event object is neither protobuf nor JSON: {e}"
            ))
        })?
    };
    Ok((event_type, object))
}

/// Splits the first frame off a watch stream buffer: returns the frame body and the rest, or
/// `None` if `buf` does not hold a whole frame yet.
pub fn split_watch_frame(buf: &[u8]) -> Option<(&[u8], &[u8])> {
    let (len, rest) = buf.split_first_chunk::<4>()?;
    let len = usize::try_from(u32::from_be_bytes(*len)).ok()?;
    (rest.len() >= len).then(|| rest.split_at(len))
}
