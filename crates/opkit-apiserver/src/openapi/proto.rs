//! The Swagger 2.0 document in gnostic's protobuf encoding (`openapi.v2.Document`,
//! `application/com.github.proto-openapi.spec.v2@v1.0+protobuf`).
//!
//! client-go's `OpenAPISchema()` only asks for this encoding and has no JSON fallback. kubectl
//! v1.35 calls it whenever it validates on the client: for `kind: List` manifests (what
//! `kubectl get -o yaml` of several objects prints, whose `v1 List` has no PATCH operation to
//! find `fieldValidation` on), when a kind is missing from the v3 documents, and for
//! `explain --output plaintext-openapiv2`. The encoder is written by hand over the JSON
//! document (a few message types, field numbers from gnostic's `OpenAPIv2.proto`) rather than
//! with generated types: the document already exists as JSON, and this keeps one source of
//! truth. Vendor extensions, defaults, enums and examples are `Any` messages carrying YAML (JSON
//! is YAML), which is how gnostic and kube-openapi read them.

use serde_json::{Map, Value};

const VARINT: u8 = 0;
const FIXED64: u8 = 1;
const LEN: u8 = 2;

fn varint(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push((v as u8) | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

fn key(buf: &mut Vec<u8>, field: u32, wire: u8) {
    varint(buf, (u64::from(field) << 3) | u64::from(wire));
}

fn bytes(buf: &mut Vec<u8>, field: u32, b: &[u8]) {
    key(buf, field, LEN);
    varint(buf, b.len() as u64);
    buf.extend_from_slice(b);
}

fn string(buf: &mut Vec<u8>, field: u32, v: Option<&Value>) {
    if let Some(s) = v.and_then(Value::as_str).filter(|s| !s.is_empty()) {
        bytes(buf, field, s.as_bytes());
    }
}

fn strings(buf: &mut Vec<u8>, field: u32, v: Option<&Value>) {
    match v {
        Some(Value::Array(items)) => {
            for s in items.iter().filter_map(Value::as_str) {
                bytes(buf, field, s.as_bytes());
            }
        }
        Some(Value::String(s)) => bytes(buf, field, s.as_bytes()),
        _ => {}
    }
}

fn boolean(buf: &mut Vec<u8>, field: u32, v: Option<&Value>) {
    if v.and_then(Value::as_bool) == Some(true) {
        key(buf, field, VARINT);
        buf.push(1);
    }
}

fn int64(buf: &mut Vec<u8>, field: u32, v: Option<&Value>) {
    if let Some(n) = v.and_then(Value::as_i64).filter(|n| *n != 0) {
        key(buf, field, VARINT);
        varint(buf, n as u64);
    }
}

fn double(buf: &mut Vec<u8>, field: u32, v: Option<&Value>) {
    if let Some(f) = v.and_then(Value::as_f64).filter(|f| *f != 0.0) {
        key(buf, field, FIXED64);
        buf.extend_from_slice(&f.to_le_bytes());
    }
}

/// A nested message, written whenever present (presence matters: empty `properties` is not
/// absent `properties`).
fn message(buf: &mut Vec<u8>, field: u32, encode: impl FnOnce(&mut Vec<u8>)) {
    let mut inner = Vec::new();
    encode(&mut inner);
    bytes(buf, field, &inner);
}

/// `openapi.v2.Any{yaml}`: the value as JSON, which YAML readers accept.
fn any(buf: &mut Vec<u8>, field: u32, v: &Value) {
    let yaml = serde_json::to_string(v).unwrap_or_default();
    message(buf, field, |m| bytes(m, 2, yaml.as_bytes()));
}

/// `repeated NamedAny vendor_extension` from the `x-` keys of an object.
fn extensions(buf: &mut Vec<u8>, field: u32, obj: &Map<String, Value>) {
    for (k, v) in obj.iter().filter(|(k, _)| k.starts_with("x-")) {
        message(buf, field, |m| {
            bytes(m, 1, k.as_bytes());
            any(m, 2, v);
        });
    }
}

/// `openapi.v2.Schema`.
fn schema(buf: &mut Vec<u8>, v: &Value) {
    let Value::Object(s) = v else { return };
    string(buf, 1, s.get("$ref"));
    string(buf, 2, s.get("format"));
    string(buf, 3, s.get("title"));
    string(buf, 4, s.get("description"));
    if let Some(d) = s.get("default") {
        any(buf, 5, d);
    }
    double(buf, 6, s.get("multipleOf"));
    double(buf, 7, s.get("maximum"));
    boolean(buf, 8, s.get("exclusiveMaximum"));
    double(buf, 9, s.get("minimum"));
    boolean(buf, 10, s.get("exclusiveMinimum"));
    int64(buf, 11, s.get("maxLength"));
    int64(buf, 12, s.get("minLength"));
    string(buf, 13, s.get("pattern"));
    int64(buf, 14, s.get("maxItems"));
    int64(buf, 15, s.get("minItems"));
    boolean(buf, 16, s.get("uniqueItems"));
    int64(buf, 17, s.get("maxProperties"));
    int64(buf, 18, s.get("minProperties"));
    strings(buf, 19, s.get("required"));
    if let Some(Value::Array(values)) = s.get("enum") {
        for e in values {
            any(buf, 20, e);
        }
    }
    match s.get("additionalProperties") {
        Some(Value::Bool(b)) => message(buf, 21, |m| {
            key(m, 2, VARINT);
            m.push(u8::from(*b));
        }),
        Some(ap @ Value::Object(_)) => message(buf, 21, |m| message(m, 1, |x| schema(x, ap))),
        _ => {}
    }
    if s.get("type").is_some() {
        message(buf, 22, |m| strings(m, 1, s.get("type")));
    }
    match s.get("items") {
        Some(Value::Array(items)) => message(buf, 23, |m| {
            for i in items {
                message(m, 1, |x| schema(x, i));
            }
        }),
        Some(i @ Value::Object(_)) => message(buf, 23, |m| message(m, 1, |x| schema(x, i))),
        _ => {}
    }
    if let Some(Value::Array(all)) = s.get("allOf") {
        for a in all {
            message(buf, 24, |m| schema(m, a));
        }
    }
    if let Some(Value::Object(props)) = s.get("properties") {
        message(buf, 25, |m| named_schemas(m, 1, props));
    }
    string(buf, 26, s.get("discriminator"));
    boolean(buf, 27, s.get("readOnly"));
    if let Some(e) = s.get("example") {
        any(buf, 30, e);
    }
    extensions(buf, 31, s);
}

/// `repeated NamedSchema` (for `Definitions` and `Properties`).
fn named_schemas(buf: &mut Vec<u8>, field: u32, map: &Map<String, Value>) {
    for (name, s) in map {
        message(buf, field, |m| {
            bytes(m, 1, name.as_bytes());
            message(m, 2, |x| schema(x, s));
        });
    }
}

/// `openapi.v2.ParametersItem` → `Parameter` (body, query or path parameter).
fn parameter(buf: &mut Vec<u8>, p: &Value) {
    message(buf, 1, |param| match p.get("in").and_then(Value::as_str) {
        Some("body") => message(param, 1, |b| {
            string(b, 1, p.get("description"));
            string(b, 2, p.get("name"));
            string(b, 3, p.get("in"));
            boolean(b, 4, p.get("required"));
            if let Some(s) = p.get("schema") {
                message(b, 5, |x| schema(x, s));
            }
        }),
        location => message(param, 2, |non_body| {
            // QueryParameterSubSchema (3) and PathParameterSubSchema (4) differ in the numbers
            // after `name`: the query one has `allow_empty_value` (5) first.
            let (field, ty, unique) = match location {
                Some("path") => (4, 5, 19),
                _ => (3, 6, 20),
            };
            message(non_body, field, |q| {
                boolean(q, 1, p.get("required"));
                string(q, 2, p.get("in"));
                string(q, 3, p.get("description"));
                string(q, 4, p.get("name"));
                string(q, ty, p.get("type"));
                boolean(q, unique, p.get("uniqueItems"));
            });
        }),
    });
}

fn operation(buf: &mut Vec<u8>, op: &Value) {
    let Value::Object(o) = op else { return };
    strings(buf, 1, o.get("tags"));
    string(buf, 3, o.get("description"));
    string(buf, 5, o.get("operationId"));
    strings(buf, 6, o.get("produces"));
    strings(buf, 7, o.get("consumes"));
    if let Some(Value::Array(params)) = o.get("parameters") {
        for p in params {
            message(buf, 8, |m| parameter(m, p));
        }
    }
    if let Some(Value::Object(responses)) = o.get("responses") {
        message(buf, 9, |rs| {
            for (code, r) in responses {
                message(rs, 1, |named| {
                    bytes(named, 1, code.as_bytes());
                    message(named, 2, |value| {
                        message(value, 1, |resp| {
                            string(resp, 1, r.get("description"));
                            if let Some(s) = r.get("schema") {
                                message(resp, 2, |item| message(item, 1, |x| schema(x, s)));
                            }
                        });
                    });
                });
            }
        });
    }
    strings(buf, 10, o.get("schemes"));
    extensions(buf, 13, o);
}

fn path_item(buf: &mut Vec<u8>, item: &Value) {
    let Value::Object(i) = item else { return };
    for (method, field) in [
        ("get", 2),
        ("put", 3),
        ("post", 4),
        ("delete", 5),
        ("options", 6),
        ("head", 7),
        ("patch", 8),
    ] {
        if let Some(op) = i.get(method) {
            message(buf, field, |m| operation(m, op));
        }
    }
    if let Some(Value::Array(params)) = i.get("parameters") {
        for p in params {
            message(buf, 9, |m| parameter(m, p));
        }
    }
}

/// Encodes a Swagger 2.0 JSON document as `openapi.v2.Document`.
pub fn encode_document(doc: &Value) -> Vec<u8> {
    let mut buf = Vec::with_capacity(1 << 20);
    string(&mut buf, 1, doc.get("swagger"));
    if let Some(info) = doc.get("info") {
        message(&mut buf, 2, |m| {
            string(m, 1, info.get("title"));
            string(m, 2, info.get("version"));
        });
    }
    if let Some(Value::Object(paths)) = doc.get("paths") {
        message(&mut buf, 8, |m| {
            for (path, item) in paths {
                message(m, 2, |named| {
                    bytes(named, 1, path.as_bytes());
                    message(named, 2, |x| path_item(x, item));
                });
            }
        });
    }
    if let Some(Value::Object(defs)) = doc.get("definitions") {
        message(&mut buf, 9, |m| named_schemas(m, 1, defs));
    }
    buf
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Reads `(field, wire, payload)` records of one message level.
    fn fields(mut b: &[u8]) -> Vec<(u32, u8, Vec<u8>)> {
        fn read_varint(b: &mut &[u8]) -> u64 {
            let mut v = 0u64;
            let mut shift = 0;
            loop {
                let byte = b[0];
                *b = &b[1..];
                v |= u64::from(byte & 0x7f) << shift;
                if byte & 0x80 == 0 {
                    return v;
                }
                shift += 7;
            }
        }
        let mut out = Vec::new();
        while !b.is_empty() {
            let k = read_varint(&mut b);
            let (field, wire) = ((k >> 3) as u32, (k & 7) as u8);
            let payload = match wire {
                0 => read_varint(&mut b).to_le_bytes().to_vec(),
                1 => {
                    let p = b[..8].to_vec();
                    b = &b[8..];
                    p
                }
                2 => {
                    let n = read_varint(&mut b) as usize;
                    let p = b[..n].to_vec();
                    b = &b[n..];
                    p
                }
                w => panic!("wire type {w}"),
            };
            out.push((field, wire, payload));
        }
        out
    }

    fn field(b: &[u8], n: u32) -> Vec<Vec<u8>> {
        fields(b)
            .into_iter()
            .filter(|(f, _, _)| *f == n)
            .map(|(_, _, p)| p)
            .collect()
    }

    #[test]
    fn definitions_properties_and_extensions_use_gnostic_field_numbers() {
        let doc = json!({
            "swagger": "2.0",
            "info": {"title": "Kubernetes", "version": "v1.35.0"},
            "definitions": {"a.B": {
                "type": "object",
                "properties": {"n": {"type": "integer", "maximum": 10.0}},
                "x-kubernetes-group-version-kind": [{"group": "", "kind": "B", "version": "v1"}],
            }},
        });
        let b = encode_document(&doc);
        assert_eq!(field(&b, 1), vec![b"2.0".to_vec()]);
        let info = &field(&b, 2)[0];
        assert_eq!(field(info, 2), vec![b"v1.35.0".to_vec()]);
        let named = &field(&field(&b, 9)[0], 1)[0];
        assert_eq!(field(named, 1), vec![b"a.B".to_vec()]);
        let schema = &field(named, 2)[0];
        assert_eq!(field(&field(schema, 22)[0], 1), vec![b"object".to_vec()]);
        let prop = &field(&field(schema, 25)[0], 1)[0];
        let prop_schema = &field(prop, 2)[0];
        assert_eq!(field(prop_schema, 7), vec![10.0f64.to_le_bytes().to_vec()]);
        let ext = &field(schema, 31)[0];
        assert_eq!(
            field(ext, 1),
            vec![b"x-kubernetes-group-version-kind".to_vec()]
        );
        let yaml = &field(&field(ext, 2)[0], 2)[0];
        let parsed: Value = serde_json::from_slice(yaml).unwrap();
        assert_eq!(parsed[0]["kind"], "B");
    }

    #[test]
    fn query_and_body_parameters_take_their_oneof_branches() {
        let mut b = Vec::new();
        parameter(
            &mut b,
            &json!({"name": "fieldValidation", "in": "query", "type": "string", "uniqueItems": true}),
        );
        let param = &field(&b, 1)[0];
        let non_body = &field(param, 2)[0];
        let query = &field(non_body, 3)[0];
        assert_eq!(field(query, 4), vec![b"fieldValidation".to_vec()]);
        assert_eq!(field(query, 6), vec![b"string".to_vec()]);
        let mut b = Vec::new();
        parameter(
            &mut b,
            &json!({"name": "body", "in": "body", "required": true, "schema": {"$ref": "#/definitions/x"}}),
        );
        let body = &field(&field(&b, 1)[0], 1)[0];
        assert_eq!(field(body, 2), vec![b"body".to_vec()]);
        assert_eq!(
            field(&field(body, 5)[0], 1),
            vec![b"#/definitions/x".to_vec()]
        );
    }
}
