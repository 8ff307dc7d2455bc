//! JSON → protobuf: walks a `serde_json` object by the schema table and appends the message
//! bytes, fields in tag order (as Go's generated marshallers do), map entries sorted by key.
//!
//! Strict about shape: an unknown JSON field or a value of the wrong JSON type is an error
//! naming its path. `null` means absent. Nested messages get their length prefix patched in
//! after their content is written (see [`wire::end_len`]), so no size pre-pass is needed.

use base64::Engine as _;
use serde_json::{Map, Value};

use crate::error::{ProtobufError, Seg};
use crate::schema::{Field, Label, Message, Special, Ty, message};
use crate::timefmt;
use crate::wire::{self, FIXED64};

/// How an object is being encoded.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// The top-level object: `apiVersion`/`kind` are accepted (they go to the envelope).
    Top,
    /// A nested object: unknown keys are errors.
    Nested,
    /// An inline (embedded) message sharing its parent's object: the parent checks keys.
    Inline,
}

/// Encodes `obj` as a `msg` message, appending to `out`; returns how many keys of `obj` it
/// used (for the parent's unknown-key check in [`Mode::Inline`]).
pub(crate) fn encode_message(
    msg: &'static Message,
    obj: &Map<String, Value>,
    out: &mut Vec<u8>,
    mode: Mode,
    depth: u32,
) -> Result<usize, ProtobufError> {
    if depth > crate::MAX_DEPTH {
        return Err(ProtobufError::json(format!(
            "objects nested deeper than {} levels",
            crate::MAX_DEPTH
        )));
    }
    let mut used = 0;
    for field in msg.fields {
        if field.inline() {
            let Ty::Message(i) = field.ty else {
                continue;
            };
            let sub = message(i).ok_or_else(|| dangling(field))?;
            // Go always writes an embedded (non-pointer) struct, even when empty.
            let start = wire::begin_len(out, field.tag);
            used += encode_message(sub, obj, out, Mode::Inline, depth + 1)?;
            wire::end_len(out, start);
            continue;
        }
        let Some(v) = obj.get(field.json) else {
            continue;
        };
        used += 1;
        encode_field(field, v, out, depth).map_err(|e| e.at(Seg::Field(field.json)))?;
    }
    if mode != Mode::Inline && used != obj.len() {
        let accept_type_meta = mode == Mode::Top || msg.type_meta;
        for key in obj.keys() {
            let type_meta = accept_type_meta && (key == "apiVersion" || key == "kind");
            if !type_meta && !knows(msg, key) {
                return Err(ProtobufError::UnknownField { path: key.clone() });
            }
        }
    }
    Ok(used)
}

/// True if `key` is a field of `msg` or of one of its inline messages.
fn knows(msg: &'static Message, key: &str) -> bool {
    msg.field_by_json(key).is_some()
        || msg.fields.iter().any(|f| {
            f.inline()
                && matches!(f.ty, Ty::Message(i) if message(i).is_some_and(|sub| knows(sub, key)))
        })
}

fn dangling(field: &Field) -> ProtobufError {
    ProtobufError::json(format!(
        "schema table refers to a missing message (field {})",
        field.tag
    ))
}

/// Encodes a present field value (`null` = absent).
fn encode_field(
    field: &'static Field,
    v: &Value,
    out: &mut Vec<u8>,
    depth: u32,
) -> Result<(), ProtobufError> {
    match (field.label, v) {
        (_, Value::Null) => Ok(()),
        (Label::Optional, v) => encode_single(field.tag, field.ty, v, out, depth),
        (Label::Repeated, Value::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                encode_single(field.tag, field.ty, item, out, depth)
                    .map_err(|e| e.at(Seg::Index(i)))?;
            }
            Ok(())
        }
        (Label::Repeated, other) => Err(mismatch("an array", other)),
        (Label::Map, Value::Object(entries)) => {
            let mut sorted: Vec<(&String, &Value)> = entries.iter().collect();
            if !sorted.is_sorted_by(|a, b| a.0 <= b.0) {
                sorted.sort_unstable_by(|a, b| a.0.cmp(b.0));
            }
            for (k, v) in sorted {
                let start = wire::begin_len(out, field.tag);
                wire::put_bytes_field(out, 1, k.as_bytes());
                encode_single(2, field.ty, v, out, depth).map_err(|e| e.at(Seg::Key(k)))?;
                wire::end_len(out, start);
            }
            Ok(())
        }
        (Label::Map, other) => Err(mismatch("an object", other)),
    }
}

/// Describes a JSON type mismatch.
fn mismatch(expected: &str, got: &Value) -> ProtobufError {
    let got = match got {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    };
    ProtobufError::json(format!("expected {expected}, got {got}"))
}

/// An integral JSON number (integral floats such as `3.0` are accepted, as YAML tools emit them).
fn integer(v: &Value) -> Option<i64> {
    let n = match v {
        Value::Number(n) => n,
        _ => return None,
    };
    if let Some(i) = n.as_i64() {
        return Some(i);
    }
    let f = n.as_f64()?;
    (f.fract() == 0.0 && (-9.223_372_036_854_775e18..9.223_372_036_854_775e18).contains(&f))
        .then_some(f as i64)
}

/// Encodes one value (a non-repeated field, a repeated element, or a map value) with `tag`.
/// `null` encodes the zero value (an empty message), as Go decodes `null` elements.
///
/// Messages recurse through here; scalars are in [`encode_scalar`], out of the recursive
/// path, to keep its stack frames small even in unoptimised builds.
fn encode_single(
    tag: u32,
    ty: Ty,
    v: &Value,
    out: &mut Vec<u8>,
    depth: u32,
) -> Result<(), ProtobufError> {
    let Ty::Message(i) = ty else {
        return encode_scalar(tag, ty, v, out);
    };
    let sub = message(i)
        .ok_or_else(|| ProtobufError::json("schema table refers to a missing message"))?;
    let start = wire::begin_len(out, tag);
    encode_value(sub, v, out, depth + 1)?;
    wire::end_len(out, start);
    Ok(())
}

/// Encodes a scalar value with `tag` (`null` = the zero value).
#[inline(never)]
fn encode_scalar(tag: u32, ty: Ty, v: &Value, out: &mut Vec<u8>) -> Result<(), ProtobufError> {
    match ty {
        Ty::String => {
            let s = match v {
                Value::String(s) => s.as_str(),
                Value::Null => "",
                other => return Err(mismatch("a string", other)),
            };
            wire::put_bytes_field(out, tag, s.as_bytes());
        }
        Ty::Bool => {
            let b = match v {
                Value::Bool(b) => *b,
                Value::Null => false,
                other => return Err(mismatch("a boolean", other)),
            };
            wire::put_varint_field(out, tag, u64::from(b));
        }
        Ty::Int32 => {
            let n = if v.is_null() {
                0
            } else {
                integer(v).ok_or_else(|| mismatch("an integer", v))?
            };
            let n = i32::try_from(n)
                .map_err(|_| ProtobufError::json(format!("{n} does not fit in int32")))?;
            // Negative int32 values are sign-extended to 64 bits on the wire.
            wire::put_varint_field(out, tag, i64::from(n) as u64);
        }
        Ty::Int64 => {
            let n = if v.is_null() {
                0
            } else {
                integer(v).ok_or_else(|| mismatch("an integer", v))?
            };
            wire::put_varint_field(out, tag, n as u64);
        }
        Ty::Double => {
            let f = match v {
                Value::Number(n) => n.as_f64().ok_or_else(|| mismatch("a number", v))?,
                Value::Null => 0.0,
                other => return Err(mismatch("a number", other)),
            };
            wire::put_key(out, tag, FIXED64);
            out.extend_from_slice(&f.to_bits().to_le_bytes());
        }
        Ty::Bytes => {
            let decoded = match v {
                Value::String(s) => decode_base64(s)?,
                Value::Null => Vec::new(),
                other => return Err(mismatch("a base64 string", other)),
            };
            wire::put_bytes_field(out, tag, &decoded);
        }
        Ty::Message(_) => return Err(ProtobufError::json("message where a scalar was expected")),
    }
    Ok(())
}

/// Standard base64 as Go's `encoding/json` writes `[]byte`; unpadded input is accepted too.
fn decode_base64(s: &str) -> Result<Vec<u8>, ProtobufError> {
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD};
    STANDARD
        .decode(s)
        .or_else(|_| STANDARD_NO_PAD.decode(s))
        .map_err(|e| ProtobufError::json(format!("invalid base64: {e}")))
}

/// Encodes the content of a `sub` message from its JSON value (object or special form).
fn encode_value(
    sub: &'static Message,
    v: &Value,
    out: &mut Vec<u8>,
    depth: u32,
) -> Result<(), ProtobufError> {
    match (sub.special, v) {
        (_, Value::Null) => Ok(()),
        (Special::None, Value::Object(obj)) => {
            encode_message(sub, obj, out, Mode::Nested, depth).map(|_| ())
        }
        (Special::None, other) => Err(mismatch("an object", other)),
        _ => encode_special(sub, v, out, depth),
    }
}

/// Encodes a message with a non-object JSON form.
#[inline(never)]
fn encode_special(
    sub: &'static Message,
    v: &Value,
    out: &mut Vec<u8>,
    depth: u32,
) -> Result<(), ProtobufError> {
    let field_tag = |i: usize| sub.fields.get(i).map_or(i as u32 + 1, |f| f.tag);
    let field_ty = |i: usize| sub.fields.get(i).map(|f| f.ty);
    match sub.special {
        Special::None => Err(mismatch("an object", v)),
        Special::Time | Special::MicroTime => {
            let s = v
                .as_str()
                .ok_or_else(|| mismatch("an RFC 3339 time string", v))?;
            let (seconds, nanos) = timefmt::parse_rfc3339(s)
                .ok_or_else(|| ProtobufError::json(format!("invalid RFC 3339 time {s:?}")))?;
            // Go writes both fields of a Timestamp, zero or not.
            wire::put_varint_field(out, 1, seconds as u64);
            wire::put_varint_field(out, 2, i64::from(nanos) as u64);
            Ok(())
        }
        Special::Duration => {
            let s = v.as_str().ok_or_else(|| mismatch("a duration string", v))?;
            let ns = opkit_apimachinery::Duration::parse(s)
                .map_err(|_| ProtobufError::json(format!("invalid duration {s:?}")))?
                .as_nanos();
            wire::put_varint_field(out, 1, ns as u64);
            Ok(())
        }
        Special::IntOrString => {
            // Go writes all three fields: type (0 int, 1 string), intVal, strVal.
            let (kind, int, text) = match v {
                Value::String(s) => (1u64, 0i32, s.as_str()),
                Value::Number(_) => {
                    let n = integer(v).ok_or_else(|| mismatch("an integer or a string", v))?;
                    let n = i32::try_from(n)
                        .map_err(|_| ProtobufError::json(format!("{n} does not fit in int32")))?;
                    (0, n, "")
                }
                other => return Err(mismatch("an integer or a string", other)),
            };
            wire::put_varint_field(out, 1, kind);
            wire::put_varint_field(out, 2, i64::from(int) as u64);
            wire::put_bytes_field(out, 3, text.as_bytes());
            Ok(())
        }
        Special::Quantity => {
            // Go's Quantity accepts JSON numbers as well as strings.
            match v {
                Value::String(s) => wire::put_bytes_field(out, 1, s.as_bytes()),
                Value::Number(n) => wire::put_bytes_field(out, 1, n.to_string().as_bytes()),
                other => return Err(mismatch("a quantity string", other)),
            }
            Ok(())
        }
        Special::RawJson => {
            let raw = serde_json::to_vec(v).map_err(|e| ProtobufError::json(e.to_string()))?;
            wire::put_bytes_field(out, field_tag(0), &raw);
            Ok(())
        }
        Special::ItemsList => {
            let items = v.as_array().ok_or_else(|| mismatch("an array", v))?;
            let ty = field_ty(0).ok_or_else(|| ProtobufError::json("empty list wrapper"))?;
            for (i, item) in items.iter().enumerate() {
                encode_single(field_tag(0), ty, item, out, depth)
                    .map_err(|e| e.at(Seg::Index(i)))?;
            }
            Ok(())
        }
        Special::SchemaOrArray | Special::SchemaOrStringArray => {
            // {schema=1, jSONSchemas=2 | property=2}.
            let (schema_ty, list_ty) = match (field_ty(0), field_ty(1)) {
                (Some(a), Some(b)) => (a, b),
                _ => return Err(ProtobufError::json("malformed schema wrapper")),
            };
            let expected = if sub.special == Special::SchemaOrArray {
                "a schema object or an array of schemas"
            } else {
                "a schema object or an array of strings"
            };
            match v {
                Value::Object(_) => encode_single(field_tag(0), schema_ty, v, out, depth),
                Value::Array(items) => {
                    for (i, item) in items.iter().enumerate() {
                        encode_single(field_tag(1), list_ty, item, out, depth)
                            .map_err(|e| e.at(Seg::Index(i)))?;
                    }
                    Ok(())
                }
                other => Err(mismatch(expected, other)),
            }
        }
        Special::SchemaOrBool => {
            // {allows=1, schema=2}: a schema implies allows=true.
            let schema_ty = field_ty(1).ok_or_else(|| ProtobufError::json("malformed wrapper"))?;
            match v {
                Value::Bool(b) => {
                    wire::put_varint_field(out, field_tag(0), u64::from(*b));
                    Ok(())
                }
                Value::Object(_) => {
                    wire::put_varint_field(out, field_tag(0), 1);
                    encode_single(field_tag(1), schema_ty, v, out, depth)
                }
                other => Err(mismatch("a boolean or a schema object", other)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{LEN, VARINT};
    use serde_json::json;

    #[test]
    fn integers_accept_integral_floats_only() {
        assert_eq!(integer(&json!(3)), Some(3));
        assert_eq!(integer(&json!(3.0)), Some(3));
        assert_eq!(integer(&json!(3.5)), None);
        assert_eq!(integer(&json!(1e300)), None);
        assert_eq!(integer(&json!("3")), None);
        assert_eq!(integer(&json!(u64::MAX)), None);
    }

    #[test]
    fn wire_types_are_the_ones_go_uses() {
        let mut out = Vec::new();
        encode_single(1, Ty::Int32, &json!(-1), &mut out, 0).unwrap();
        // key 0x08, then -1 sign-extended to ten bytes.
        assert_eq!(out.len(), 11);
        assert_eq!(out[0], 1 << 3 | VARINT);
        out.clear();
        encode_single(2, Ty::Double, &json!(1.5), &mut out, 0).unwrap();
        assert_eq!(out[0], 2 << 3 | FIXED64);
        out.clear();
        encode_single(3, Ty::Bytes, &json!("aGk="), &mut out, 0).unwrap();
        assert_eq!(out, vec![3 << 3 | LEN, 2, b'h', b'i']);
    }
}
