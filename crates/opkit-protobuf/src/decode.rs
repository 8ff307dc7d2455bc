//! Protobuf → JSON: walks message bytes by the schema table and builds `serde_json` values
//! shaped like kube-apiserver's JSON.
//!
//! Rules (see the crate docs for why):
//! * fields are emitted in tag order under their Go JSON names; inline (embedded) messages
//!   are merged into the parent object;
//! * present optional fields are emitted, except a zero value of a field kube-apiserver's JSON
//!   leaves out (Go non-pointer `omitempty`, or `omitzero`): Go's protobuf encoder writes
//!   every non-pointer field, so presence alone would add `"uid": ""`, `"paused": false`…;
//! * repeated and map fields are emitted only when non-empty;
//! * a repeated or non-repeated message field seen twice is merged (protobuf semantics);
//! * unknown field numbers are skipped (as the Go decoder does), after checking their framing.

use base64::Engine as _;
use serde_json::{Map, Number, Value};

use crate::error::{ProtobufError, Seg};
use crate::schema::{Field, Label, Message, Special, Ty, message};
use crate::timefmt;
use crate::wire::{self, FIXED64, LEN, Reader, VARINT};

/// Unix seconds of Go's zero `time.Time` (0001-01-01T00:00:00Z), which marshals as `null`.
const GO_ZERO_TIME_SECONDS: i64 = -62_135_596_800;

/// Decodes `data`, a `msg` message, into `out` (merging into what is there).
pub(crate) fn decode_into(
    msg: &'static Message,
    data: &[u8],
    out: &mut Map<String, Value>,
    depth: u32,
) -> Result<(), ProtobufError> {
    check_depth(msg, depth)?;
    let mut r = Reader::new(data);
    while !r.is_empty() {
        let (tag, wt) = r.key().map_err(|e| ProtobufError::wire(msg.name, 0, e))?;
        let Some(field) = msg.field_by_tag(tag) else {
            r.skip(wt)
                .map_err(|e| ProtobufError::wire(msg.name, tag, e))?;
            continue;
        };
        decode_field(msg, field, wt, &mut r, out, depth)
            .map_err(|e| e.at(Seg::Field(field.json)))?;
    }
    Ok(())
}

/// Decodes one occurrence of `field` into `out`.
///
/// The work is split into small functions so that the recursive path (message in message)
/// keeps small stack frames even in unoptimised builds.
fn decode_field(
    msg: &'static Message,
    field: &'static Field,
    wt: u8,
    r: &mut Reader<'_>,
    out: &mut Map<String, Value>,
    depth: u32,
) -> Result<(), ProtobufError> {
    match (field.label, field.ty) {
        (Label::Optional, Ty::Message(i)) => {
            let sub = message(i).ok_or_else(|| dangling(msg, field))?;
            let bytes = read_len(msg, field, wt, r)?;
            decode_message_field(field, sub, bytes, out, depth + 1)
        }
        (Label::Optional, ty) => decode_scalar_field(msg, field, ty, wt, r, out),
        (Label::Repeated, _) => decode_repeated_field(msg, field, wt, r, out, depth),
        (Label::Map, _) => decode_map_field(msg, field, wt, r, out, depth),
    }
}

/// Reads a length-delimited value of `field`.
fn read_len<'a>(
    msg: &'static Message,
    field: &Field,
    wt: u8,
    r: &mut Reader<'a>,
) -> Result<&'a [u8], ProtobufError> {
    wire::expect(wt, LEN)
        .and_then(|()| r.bytes())
        .map_err(|e| ProtobufError::wire(msg.name, field.tag, e))
}

/// A non-repeated message field: merged into the parent (inline), merged into an existing
/// object (a repeated occurrence), or a special's value.
fn decode_message_field(
    field: &'static Field,
    sub: &'static Message,
    bytes: &[u8],
    out: &mut Map<String, Value>,
    depth: u32,
) -> Result<(), ProtobufError> {
    if field.inline() {
        return decode_into(sub, bytes, out, depth);
    }
    if sub.special != Special::None {
        let v = decode_special(sub, bytes, depth)?;
        set(out, field, v);
        return Ok(());
    }
    let slot = out
        .entry(field.json)
        .or_insert_with(|| Value::Object(Map::new()));
    if !slot.is_object() {
        *slot = Value::Object(Map::new());
    }
    match slot {
        Value::Object(obj) => decode_into(sub, bytes, obj, depth),
        _ => Ok(()),
    }
}

#[inline(never)]
fn decode_scalar_field(
    msg: &'static Message,
    field: &'static Field,
    ty: Ty,
    wt: u8,
    r: &mut Reader<'_>,
    out: &mut Map<String, Value>,
) -> Result<(), ProtobufError> {
    let v = read_scalar(msg, field, ty, wt, r)?;
    set(out, field, v);
    Ok(())
}

fn decode_repeated_field(
    msg: &'static Message,
    field: &'static Field,
    wt: u8,
    r: &mut Reader<'_>,
    out: &mut Map<String, Value>,
    depth: u32,
) -> Result<(), ProtobufError> {
    let mut items = Vec::new();
    read_repeated(msg, field, wt, r, &mut items, depth)?;
    if items.is_empty() {
        return Ok(());
    }
    match out.get_mut(field.json) {
        Some(Value::Array(arr)) => arr.extend(items),
        _ => {
            out.insert(field.json.to_string(), Value::Array(items));
        }
    }
    Ok(())
}

fn decode_map_field(
    msg: &'static Message,
    field: &'static Field,
    wt: u8,
    r: &mut Reader<'_>,
    out: &mut Map<String, Value>,
    depth: u32,
) -> Result<(), ProtobufError> {
    let entry = read_len(msg, field, wt, r)?;
    let (k, v) = read_map_entry(msg, field, entry, depth)?;
    match out.get_mut(field.json) {
        Some(Value::Object(obj)) => {
            obj.insert(k, v);
        }
        _ => {
            let mut obj = Map::new();
            obj.insert(k, v);
            out.insert(field.json.to_string(), Value::Object(obj));
        }
    }
    Ok(())
}

/// Fails when messages nest deeper than [`crate::MAX_DEPTH`] (hostile input could otherwise
/// exhaust the stack: each level costs only a few bytes of input).
fn check_depth(msg: &'static Message, depth: u32) -> Result<(), ProtobufError> {
    if depth > crate::MAX_DEPTH {
        Err(ProtobufError::malformed(
            msg.name,
            0,
            format!("messages nested deeper than {} levels", crate::MAX_DEPTH),
        ))
    } else {
        Ok(())
    }
}

/// Stores a non-repeated value, leaving out zero values the Go JSON omits.
fn set(out: &mut Map<String, Value>, field: &Field, v: Value) {
    if field.omit_zero() && is_zero(&v) {
        out.remove(field.json);
    } else {
        out.insert(field.json.to_string(), v);
    }
}

fn is_zero(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(_) => false,
    }
}

fn dangling(msg: &'static Message, field: &Field) -> ProtobufError {
    ProtobufError::malformed(
        msg.name,
        field.tag,
        "schema table refers to a missing message",
    )
}

/// Reads one occurrence of a repeated field (a single element, or a packed run of scalars).
fn read_repeated(
    msg: &'static Message,
    field: &'static Field,
    wt: u8,
    r: &mut Reader<'_>,
    items: &mut Vec<Value>,
    depth: u32,
) -> Result<(), ProtobufError> {
    let wire_err = |e| ProtobufError::wire(msg.name, field.tag, e);
    match field.ty {
        Ty::Message(i) => {
            let sub = message(i).ok_or_else(|| dangling(msg, field))?;
            wire::expect(wt, LEN).map_err(wire_err)?;
            let bytes = r.bytes().map_err(wire_err)?;
            let v =
                decode_value(sub, bytes, depth + 1).map_err(|e| e.at(Seg::Index(items.len())))?;
            items.push(v);
        }
        Ty::Int32 | Ty::Int64 | Ty::Bool | Ty::Double if wt == LEN => {
            let packed = r.bytes().map_err(wire_err)?;
            let elem_wt = if field.ty == Ty::Double {
                FIXED64
            } else {
                VARINT
            };
            let mut pr = Reader::new(packed);
            while !pr.is_empty() {
                items.push(read_scalar(msg, field, field.ty, elem_wt, &mut pr)?);
            }
        }
        ty => items.push(read_scalar(msg, field, ty, wt, r)?),
    }
    Ok(())
}

/// Decodes a map entry message {key=1 string, value=2}.
fn read_map_entry(
    msg: &'static Message,
    field: &'static Field,
    entry: &[u8],
    depth: u32,
) -> Result<(String, Value), ProtobufError> {
    let wire_err = |e| ProtobufError::wire(msg.name, field.tag, e);
    let mut key = String::new();
    let mut value: Option<Value> = None;
    let mut r = Reader::new(entry);
    while !r.is_empty() {
        let (tag, wt) = r.key().map_err(wire_err)?;
        match tag {
            1 => {
                wire::expect(wt, LEN).map_err(wire_err)?;
                key = utf8(msg, field, r.bytes().map_err(wire_err)?)?;
            }
            2 => {
                value = Some(match field.ty {
                    Ty::Message(i) => {
                        let sub = message(i).ok_or_else(|| dangling(msg, field))?;
                        wire::expect(wt, LEN).map_err(wire_err)?;
                        let bytes = r.bytes().map_err(wire_err)?;
                        decode_value(sub, bytes, depth + 1).map_err(|e| e.at(Seg::Key(&key)))?
                    }
                    ty => read_scalar(msg, field, ty, wt, &mut r)?,
                });
            }
            _ => r.skip(wt).map_err(wire_err)?,
        }
    }
    let value = match value {
        Some(v) => v,
        None => match field.ty {
            Ty::Message(i) => {
                let sub = message(i).ok_or_else(|| dangling(msg, field))?;
                decode_value(sub, &[], depth + 1).map_err(|e| e.at(Seg::Key(&key)))?
            }
            ty => zero(ty),
        },
    };
    Ok((key, value))
}

/// The JSON zero value of a scalar type.
fn zero(ty: Ty) -> Value {
    match ty {
        Ty::String | Ty::Bytes => Value::String(String::new()),
        Ty::Bool => Value::Bool(false),
        Ty::Int32 | Ty::Int64 | Ty::Double => Value::Number(Number::from(0)),
        Ty::Message(_) => Value::Null,
    }
}

fn utf8(msg: &'static Message, field: &Field, bytes: &[u8]) -> Result<String, ProtobufError> {
    match std::str::from_utf8(bytes) {
        Ok(s) => Ok(s.to_string()),
        Err(_) => Err(ProtobufError::malformed(
            msg.name,
            field.tag,
            "string is not valid UTF-8",
        )),
    }
}

/// Reads a scalar of type `ty` with wire type `wt`.
fn read_scalar(
    msg: &'static Message,
    field: &Field,
    ty: Ty,
    wt: u8,
    r: &mut Reader<'_>,
) -> Result<Value, ProtobufError> {
    let wire_err = |e| ProtobufError::wire(msg.name, field.tag, e);
    let expected = match ty {
        Ty::Double => FIXED64,
        Ty::String | Ty::Bytes | Ty::Message(_) => LEN,
        Ty::Bool | Ty::Int32 | Ty::Int64 => VARINT,
    };
    wire::expect(wt, expected).map_err(wire_err)?;
    Ok(match ty {
        Ty::String => Value::String(utf8(msg, field, r.bytes().map_err(wire_err)?)?),
        Ty::Bytes => Value::String(
            base64::engine::general_purpose::STANDARD.encode(r.bytes().map_err(wire_err)?),
        ),
        Ty::Bool => Value::Bool(r.varint().map_err(wire_err)? != 0),
        Ty::Int32 => Value::Number(Number::from(r.varint().map_err(wire_err)? as i32)),
        Ty::Int64 => Value::Number(Number::from(r.varint().map_err(wire_err)? as i64)),
        Ty::Double => {
            let f = f64::from_bits(r.fixed64().map_err(wire_err)?);
            double(f).ok_or_else(|| {
                ProtobufError::malformed(msg.name, field.tag, "double is NaN or infinite")
            })?
        }
        Ty::Message(_) => {
            return Err(ProtobufError::malformed(
                msg.name,
                field.tag,
                "message where a scalar was expected",
            ));
        }
    })
}

/// A JSON number for a double, written as an integer when it is one (as Go's JSON does).
fn double(f: f64) -> Option<Value> {
    if f.fract() == 0.0 && f.abs() < 9_007_199_254_740_992.0 {
        return Some(Value::Number(Number::from(f as i64)));
    }
    Number::from_f64(f).map(Value::Number)
}

/// Decodes a whole message to its JSON value (an object, or a special's form).
pub(crate) fn decode_value(
    sub: &'static Message,
    bytes: &[u8],
    depth: u32,
) -> Result<Value, ProtobufError> {
    if sub.special == Special::None {
        let mut obj = Map::new();
        decode_into(sub, bytes, &mut obj, depth)?;
        Ok(Value::Object(obj))
    } else {
        decode_special(sub, bytes, depth)
    }
}

/// Reads the varint fields of a small special message (Time, Duration, IntOrString…):
/// returns up to three (present, value) slots by tag 1..=3, plus the string of tag 3.
struct Small<'a> {
    ints: [Option<u64>; 3],
    bytes: [Option<&'a [u8]>; 3],
}

fn read_small<'a>(sub: &'static Message, data: &'a [u8]) -> Result<Small<'a>, ProtobufError> {
    let mut s = Small {
        ints: [None; 3],
        bytes: [None; 3],
    };
    let mut r = Reader::new(data);
    while !r.is_empty() {
        let (tag, wt) = r.key().map_err(|e| ProtobufError::wire(sub.name, 0, e))?;
        let wire_err = |e| ProtobufError::wire(sub.name, tag, e);
        let Some(field) = sub.field_by_tag(tag) else {
            r.skip(wt).map_err(wire_err)?;
            continue;
        };
        let slot = (tag as usize).saturating_sub(1).min(2);
        match field.ty {
            Ty::Int32 | Ty::Int64 | Ty::Bool => {
                wire::expect(wt, VARINT).map_err(wire_err)?;
                s.ints[slot] = Some(r.varint().map_err(wire_err)?);
            }
            Ty::String | Ty::Bytes => {
                wire::expect(wt, LEN).map_err(wire_err)?;
                s.bytes[slot] = Some(r.bytes().map_err(wire_err)?);
            }
            _ => r.skip(wt).map_err(wire_err)?,
        }
    }
    Ok(s)
}

/// Decodes a message with a non-object JSON form.
fn decode_special(sub: &'static Message, data: &[u8], depth: u32) -> Result<Value, ProtobufError> {
    check_depth(sub, depth)?;
    let bad = |reason: &str| ProtobufError::malformed(sub.name, 1, reason);
    match sub.special {
        Special::None => decode_value(sub, data, depth),
        Special::Time | Special::MicroTime => {
            if data.is_empty() {
                return Ok(Value::Null);
            }
            let s = read_small(sub, data)?;
            let seconds = s.ints[0].unwrap_or(0) as i64;
            let micro = sub.special == Special::MicroTime;
            // `Time` drops the nanoseconds on decode (its JSON has whole seconds).
            let nanos = if micro {
                i64::from(s.ints[1].unwrap_or(0) as i32)
            } else {
                0
            };
            if seconds == GO_ZERO_TIME_SECONDS && nanos == 0 {
                return Ok(Value::Null);
            }
            timefmt::format_rfc3339(seconds, nanos, micro)
                .map(Value::String)
                .ok_or_else(|| bad("time is outside years 0000-9999"))
        }
        Special::Duration => {
            let s = read_small(sub, data)?;
            Ok(Value::String(
                opkit_apimachinery::Duration::from_nanos(s.ints[0].unwrap_or(0) as i64).to_string(),
            ))
        }
        Special::IntOrString => {
            let s = read_small(sub, data)?;
            if s.ints[0].unwrap_or(0) == 1 {
                let text = s.bytes[2].unwrap_or_default();
                let text = std::str::from_utf8(text)
                    .map_err(|_| ProtobufError::malformed(sub.name, 3, "invalid UTF-8"))?;
                Ok(Value::String(text.to_string()))
            } else {
                Ok(Value::Number(Number::from(s.ints[1].unwrap_or(0) as i32)))
            }
        }
        Special::Quantity => {
            let s = read_small(sub, data)?;
            match s.bytes[0] {
                // Go's zero Quantity marshals as "0".
                None => Ok(Value::String("0".to_string())),
                Some(b) => std::str::from_utf8(b)
                    .map(|t| Value::String(t.to_string()))
                    .map_err(|_| bad("invalid UTF-8")),
            }
        }
        Special::RawJson => {
            let s = read_small(sub, data)?;
            match s.bytes[0] {
                None | Some([]) => Ok(Value::Null),
                Some(raw) if raw.starts_with(crate::MAGIC) => crate::decode_at(raw, depth + 1),
                Some(raw) => serde_json::from_slice(raw)
                    .map_err(|e| bad(&format!("raw bytes are not valid JSON: {e}"))),
            }
        }
        Special::ItemsList => {
            let mut items = Vec::new();
            let Some(field) = sub.fields.first() else {
                return Ok(Value::Array(items));
            };
            let mut r = Reader::new(data);
            while !r.is_empty() {
                let (tag, wt) = r.key().map_err(|e| ProtobufError::wire(sub.name, 0, e))?;
                if tag == field.tag {
                    read_repeated(sub, field, wt, &mut r, &mut items, depth)?;
                } else {
                    r.skip(wt)
                        .map_err(|e| ProtobufError::wire(sub.name, tag, e))?;
                }
            }
            Ok(Value::Array(items))
        }
        Special::SchemaOrArray | Special::SchemaOrBool | Special::SchemaOrStringArray => {
            let mut obj = Map::new();
            // The wrappers' Go fields have no JSON tags (no omitempty): zeros are kept.
            decode_into(sub, data, &mut obj, depth)?;
            let name = |i: usize| sub.fields.get(i).map_or("", |f| f.json);
            let take = |obj: &mut Map<String, Value>, i: usize| obj.remove(name(i));
            Ok(match sub.special {
                // {schema=1, jSONSchemas=2}: the array if non-empty, else the schema.
                Special::SchemaOrArray => take(&mut obj, 1)
                    .or_else(|| take(&mut obj, 0))
                    .unwrap_or(Value::Null),
                // {allows=1, schema=2}: the schema if set, else the bool.
                Special::SchemaOrBool => take(&mut obj, 1)
                    .or_else(|| take(&mut obj, 0))
                    .unwrap_or(Value::Bool(false)),
                // {schema=1, property=2}: the strings if non-empty, else the schema.
                _ => take(&mut obj, 1)
                    .or_else(|| take(&mut obj, 0))
                    .unwrap_or(Value::Null),
            })
        }
    }
}
