//! Malformed input gives errors (never panics), and errors say what is wrong.

use opkit_protobuf::{MAGIC, ProtobufError, decode, decode_watch_event, encode};
use serde_json::{Value, json};

fn sample() -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "labels": {"app": "web"}, "creationTimestamp": "2024-01-02T03:04:05Z"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{
                "name": "web", "image": "nginx",
                "ports": [{"containerPort": 80}],
                "resources": {"limits": {"cpu": "1"}},
                "livenessProbe": {"httpGet": {"port": "http"}, "periodSeconds": 3}
            }]}},
            "strategy": {"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}}
        }
    })
}

/// Offset and length of the `raw` field's content inside an envelope we produced.
fn raw_span(bytes: &[u8]) -> (usize, usize) {
    // k8s\0, 0x0a len typeMeta…, 0x12 varint(len) raw…
    let mut i = 4;
    assert_eq!(bytes[i], 0x0a);
    i += 2 + bytes[i + 1] as usize;
    assert_eq!(bytes[i], 0x12);
    i += 1;
    let mut len = 0usize;
    let mut shift = 0;
    loop {
        let b = bytes[i];
        i += 1;
        len |= ((b & 0x7f) as usize) << shift;
        shift += 7;
        if b < 0x80 {
            break;
        }
    }
    (i, len)
}

#[test]
fn bad_magic_is_an_error() {
    let mut bytes = encode(&sample()).unwrap();
    bytes[0] = b'K';
    assert_eq!(decode(&bytes), Err(ProtobufError::BadMagic));
    assert_eq!(decode(b""), Err(ProtobufError::BadMagic));
    assert_eq!(decode(b"{\"kind\":\"Pod\"}"), Err(ProtobufError::BadMagic));
}

#[test]
fn every_truncation_is_an_error_or_a_valid_prefix_never_a_panic() {
    let bytes = encode(&sample()).unwrap();
    let (start, len) = raw_span(&bytes);
    let raw_key = 6 + bytes[5] as usize;
    for cut in 0..bytes.len() {
        let result = decode(&bytes[..cut]);
        // Cutting anywhere up to the end of the object message breaks a length prefix,
        // except right between the typeMeta and raw fields (an envelope without an object).
        if cut < start + len && cut != raw_key {
            assert!(result.is_err(), "prefix of {cut} bytes decoded: {result:?}");
        }
    }
}

#[test]
fn flipped_bytes_never_panic() {
    let bytes = encode(&sample()).unwrap();
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for _ in 0..5_000 {
        let mut m = bytes.clone();
        for _ in 0..1 + next() % 4 {
            let i = 4 + (next() as usize) % (m.len() - 4);
            m[i] = next() as u8;
        }
        let _ = decode(&m);
        let _ = decode_watch_event(&m[4..]);
    }
    for n in 0..2_000 {
        let mut m = MAGIC.to_vec();
        m.extend((0..n % 64).map(|_| next() as u8));
        let _ = decode(&m);
    }
}

#[test]
fn wrong_wire_type_names_the_field_and_message() {
    // A ConfigMap whose field 1 (metadata, a message) is sent as a varint.
    let mut bytes = MAGIC.to_vec();
    let type_meta = [&[0x0a, 0x02][..], b"v1", &[0x12, 0x09], b"ConfigMap"].concat();
    bytes.push(0x0a);
    bytes.push(type_meta.len() as u8);
    bytes.extend(type_meta);
    let raw = [0x08, 0x01];
    bytes.extend([0x12, raw.len() as u8]);
    bytes.extend(raw);
    match decode(&bytes) {
        Err(ProtobufError::Malformed {
            message,
            field,
            reason,
            ..
        }) => {
            assert_eq!(message, "k8s.io.api.core.v1.ConfigMap");
            assert_eq!(field, 1);
            assert!(reason.contains("wire type"), "{reason}");
        }
        other => panic!("expected Malformed, got {other:?}"),
    }
}

#[test]
fn malformed_nested_field_reports_its_path() {
    // metadata { name = 1: varint } inside a ConfigMap.
    let mut bytes = MAGIC.to_vec();
    let type_meta = [&[0x0a, 0x02][..], b"v1", &[0x12, 0x09], b"ConfigMap"].concat();
    bytes.push(0x0a);
    bytes.push(type_meta.len() as u8);
    bytes.extend(type_meta);
    let raw = [0x0a, 0x02, 0x08, 0x05];
    bytes.extend([0x12, raw.len() as u8]);
    bytes.extend(raw);
    let err = decode(&bytes).unwrap_err();
    assert_eq!(
        err,
        ProtobufError::Malformed {
            message: "k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta",
            field: 1,
            path: "metadata.name".into(),
            reason: "wrong wire type 0 (expected 2)".into(),
        }
    );
    assert!(
        err.to_string()
            .contains("field 1 of message k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta")
    );
}

#[test]
fn unknown_kind_is_an_error() {
    let mut v = sample();
    v["apiVersion"] = json!("example.com/v1");
    v["kind"] = json!("Foo");
    assert_eq!(
        encode(&v),
        Err(ProtobufError::UnsupportedKind {
            api_version: "example.com/v1".into(),
            kind: "Foo".into()
        })
    );
    let mut bytes = MAGIC.to_vec();
    bytes.extend([0x0a, 0x05, 0x12, 0x03, b'F', b'o', b'o']);
    assert!(matches!(
        decode(&bytes),
        Err(ProtobufError::UnsupportedKind { .. })
    ));
}

#[test]
fn unknown_protobuf_fields_are_skipped() {
    let mut bytes =
        encode(&json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}))
            .unwrap();
    // Append field 99 (varint) to the object message and fix up the lengths.
    let (start, len) = raw_span(&bytes);
    assert!(len < 120);
    let extra = [0x98, 0x06, 0x07];
    bytes.splice(start + len..start + len, extra);
    bytes[start - 1] += extra.len() as u8;
    assert_eq!(
        decode(&bytes).unwrap(),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}})
    );
}

#[test]
fn unknown_json_fields_are_errors_with_their_path() {
    let mut v = sample();
    v["spec"]["template"]["spec"]["containers"][0]["imagePullPolicyy"] = json!("Always");
    assert_eq!(
        encode(&v),
        Err(ProtobufError::UnknownField {
            path: "spec.template.spec.containers[0].imagePullPolicyy".into()
        })
    );
    let mut v = sample();
    v["spec"]["template"]["spec"]["containers"][0]["livenessProbe"]["bogus"] = json!(1);
    assert_eq!(
        encode(&v),
        Err(ProtobufError::UnknownField {
            path: "spec.template.spec.containers[0].livenessProbe.bogus".into()
        })
    );
    let mut v = sample();
    v["status"] = json!({"kind": "x"});
    assert_eq!(
        encode(&v),
        Err(ProtobufError::UnknownField {
            path: "status.kind".into()
        })
    );
}

#[test]
fn type_mismatches_are_errors_with_their_path() {
    let cases: Vec<(Value, &str)> = vec![
        (json!({"spec": {"replicas": "2"}}), "spec.replicas"),
        (json!({"spec": {"replicas": 2.5}}), "spec.replicas"),
        (
            json!({"spec": {"replicas": 4_294_967_296_i64}}),
            "spec.replicas",
        ),
        (
            json!({"metadata": {"labels": {"app": 1}}}),
            "metadata.labels[\"app\"]",
        ),
        (json!({"metadata": {"labels": ["app"]}}), "metadata.labels"),
        (
            json!({"metadata": {"finalizers": "x"}}),
            "metadata.finalizers",
        ),
        (
            json!({"metadata": {"creationTimestamp": "yesterday"}}),
            "metadata.creationTimestamp",
        ),
        (
            json!({"spec": {"strategy": {"rollingUpdate": {"maxSurge": true}}}}),
            "spec.strategy.rollingUpdate.maxSurge",
        ),
        (json!({"spec": {"paused": "true"}}), "spec.paused"),
        (
            json!({"spec": {"template": {"spec": {"containers": [{"name": "a"}, {"name": 7}]}}}}),
            "spec.template.spec.containers[1].name",
        ),
        (json!({"spec": {"selector": "app=web"}}), "spec.selector"),
    ];
    for (patch, path) in cases {
        let mut v = json!({"apiVersion": "apps/v1", "kind": "Deployment"});
        merge(&mut v, &patch);
        match encode(&v) {
            Err(ProtobufError::InvalidJson { path: p, .. }) => assert_eq!(p, path, "{patch}"),
            other => panic!("{patch}: expected InvalidJson at {path}, got {other:?}"),
        }
    }
    let secret = json!({"apiVersion": "v1", "kind": "Secret", "data": {"k": "not base64!"}});
    assert!(matches!(
        encode(&secret),
        Err(ProtobufError::InvalidJson { path, .. }) if path == "data[\"k\"]"
    ));
}

fn merge(base: &mut Value, patch: &Value) {
    match (base, patch) {
        (Value::Object(b), Value::Object(p)) => {
            for (k, v) in p {
                merge(b.entry(k.clone()).or_insert(Value::Null), v);
            }
        }
        (b, p) => *b = p.clone(),
    }
}

#[test]
fn type_meta_is_required_to_encode() {
    assert!(matches!(
        encode(&json!({"kind": "ConfigMap"})),
        Err(ProtobufError::InvalidJson { path, .. }) if path == "apiVersion"
    ));
    assert!(matches!(
        encode(&json!({"apiVersion": "v1"})),
        Err(ProtobufError::InvalidJson { path, .. }) if path == "kind"
    ));
    assert!(encode(&json!([1, 2])).is_err());
}

#[test]
fn null_means_absent() {
    let v = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "a", "creationTimestamp": null, "labels": null},
        "data": null, "immutable": null
    });
    assert_eq!(
        decode(&encode(&v).unwrap()).unwrap(),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}})
    );
}

#[test]
fn zero_times_follow_go_json() {
    // deletionTimestamp (a pointer) present but zero, and a condition's lastProbeTime (a
    // non-pointer without omitzero) zero: Go's JSON writes null for both.
    use k8s_pb::api::core::v1 as core;
    use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
    use prost::Message;
    let pod = core::Pod {
        metadata: Some(meta::ObjectMeta {
            name: Some("p".into()),
            creation_timestamp: Some(meta::Time::default()),
            deletion_timestamp: Some(meta::Time {
                seconds: Some(-62_135_596_800),
                nanos: Some(0),
            }),
            ..Default::default()
        }),
        status: Some(core::PodStatus {
            conditions: vec![core::PodCondition {
                r#type: Some("Ready".into()),
                status: Some("True".into()),
                last_probe_time: Some(meta::Time::default()),
                last_transition_time: Some(meta::Time {
                    seconds: Some(0),
                    nanos: Some(0),
                }),
                ..Default::default()
            }],
            ..Default::default()
        }),
        spec: None,
    };
    let mut bytes = MAGIC.to_vec();
    k8s_pb::apimachinery::pkg::runtime::Unknown {
        type_meta: Some(k8s_pb::apimachinery::pkg::runtime::TypeMeta {
            api_version: Some("v1".into()),
            kind: Some("Pod".into()),
        }),
        raw: Some(pod.encode_to_vec()),
        content_encoding: None,
        content_type: None,
    }
    .encode(&mut bytes)
    .unwrap();
    assert_eq!(
        decode(&bytes).unwrap(),
        json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "deletionTimestamp": null},
            "status": {"conditions": [{"type": "Ready", "status": "True", "lastProbeTime": null,
                                       "lastTransitionTime": "1970-01-01T00:00:00Z"}]}
        })
    );
}

#[test]
fn json_content_type_payloads_are_accepted() {
    let mut bytes = MAGIC.to_vec();
    let type_meta = [&[0x0a, 0x02][..], b"v1", &[0x12, 0x09], b"ConfigMap"].concat();
    bytes.extend([0x0a, type_meta.len() as u8]);
    bytes.extend(type_meta);
    let raw = br#"{"metadata":{"name":"a"}}"#;
    bytes.extend([0x12, raw.len() as u8]);
    bytes.extend(raw);
    let ct = b"application/json";
    bytes.extend([0x22, ct.len() as u8]);
    bytes.extend(ct);
    assert_eq!(
        decode(&bytes).unwrap(),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}})
    );
    // A compressed payload is refused rather than misread.
    bytes.extend([0x1a, 0x04]);
    bytes.extend(b"gzip");
    assert!(matches!(decode(&bytes), Err(ProtobufError::BadEnvelope(_))));
}

#[test]
fn errors_display_what_is_wrong() {
    let e = ProtobufError::UnknownField {
        path: "spec.x".into(),
    };
    assert_eq!(e.to_string(), "unknown JSON field \"spec.x\"");
    assert!(ProtobufError::BadMagic.to_string().contains("k8s\\0"));
}

/// A CRD whose schema nests `levels` `not` schemas (JSONSchemaProps field 28).
fn deep_crd_json(levels: usize) -> Value {
    let mut schema = json!({"type": "string"});
    for _ in 0..levels {
        schema = json!({"not": schema});
    }
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "deep.example.com"},
        "spec": {"versions": [{"name": "v1", "schema": {"openAPIV3Schema": schema}}]}
    })
}

#[test]
fn deep_but_reasonable_nesting_works_both_ways() {
    let crd = deep_crd_json(90);
    assert_eq!(decode(&encode(&crd).unwrap()).unwrap(), crd);
}

#[test]
fn hostile_nesting_is_an_error_not_a_stack_overflow() {
    fn wrap(tag: u8, inner: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(inner.len() + 6);
        let key = u64::from(tag) << 3 | 2;
        let mut len = inner.len() as u64;
        for mut v in [key] {
            while v >= 0x80 {
                out.push(v as u8 | 0x80);
                v >>= 7;
            }
            out.push(v as u8);
        }
        while len >= 0x80 {
            out.push(len as u8 | 0x80);
            len >>= 7;
        }
        out.push(len as u8);
        out.extend_from_slice(inner);
        out
    }
    let mut schema = Vec::new();
    for _ in 0..3_000 {
        schema = wrap(28, &schema);
    }
    let crd = wrap(2, &wrap(7, &wrap(4, &wrap(1, &schema))));
    let mut bytes = MAGIC.to_vec();
    let av = b"apiextensions.k8s.io/v1";
    let kind = b"CustomResourceDefinition";
    let type_meta = [
        &[0x0a, av.len() as u8][..],
        av,
        &[0x12, kind.len() as u8],
        kind,
    ]
    .concat();
    bytes.extend(wrap(1, &type_meta));
    bytes.extend(wrap(2, &crd));
    match decode(&bytes) {
        Err(ProtobufError::Malformed { reason, .. }) => {
            assert!(reason.contains("nested"), "{reason}")
        }
        other => panic!("expected a nesting error, got {other:?}"),
    }
    assert!(matches!(
        encode(&deep_crd_json(150)),
        Err(ProtobufError::InvalidJson { reason, .. }) if reason.contains("nested")
    ));
}
