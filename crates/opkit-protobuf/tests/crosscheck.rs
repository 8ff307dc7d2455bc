//! Cross-checks against independently built bytes: objects built with k8s-pb's prost structs,
//! encoded with `prost::Message::encode` inside an envelope built here, must decode to the
//! expected JSON; and `encode` of that JSON must decode with prost into an equal struct (and,
//! where prost and Go write the same bytes, produce exactly prost's bytes).

#![recursion_limit = "256"]

use std::collections::BTreeMap;

use k8s_pb::api::apps::v1 as apps;
use k8s_pb::api::coordination::v1 as coordination;
use k8s_pb::api::core::v1 as core;
use k8s_pb::apiextensions_apiserver::pkg::apis::apiextensions::v1 as ext;
use k8s_pb::apimachinery::pkg::api::resource::Quantity;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
use k8s_pb::apimachinery::pkg::runtime::{RawExtension, TypeMeta, Unknown};
use k8s_pb::apimachinery::pkg::util::intstr::IntOrString;
use opkit_protobuf::{decode, decode_watch_event, encode, encode_watch_event, split_watch_frame};
use prost::Message;
use serde_json::{Value, json};

/// `k8s\0` + `runtime.Unknown`, built with prost (as Go writes it: all four fields).
fn envelope(api_version: &str, kind: &str, raw: Vec<u8>) -> Vec<u8> {
    let unknown = Unknown {
        type_meta: Some(TypeMeta {
            api_version: Some(api_version.into()),
            kind: Some(kind.into()),
        }),
        raw: Some(raw),
        content_encoding: Some(String::new()),
        content_type: Some(String::new()),
    };
    let mut out = b"k8s\0".to_vec();
    unknown.encode(&mut out).expect("vec has capacity");
    out
}

/// The object message inside an envelope, via prost.
fn unwrap_envelope(bytes: &[u8]) -> (String, String, Vec<u8>) {
    let body = bytes.strip_prefix(b"k8s\0").expect("magic");
    let unknown = Unknown::decode(body).expect("prost decodes our envelope");
    let tm = unknown.type_meta.expect("typeMeta");
    (
        tm.api_version.unwrap_or_default(),
        tm.kind.unwrap_or_default(),
        unknown.raw.unwrap_or_default(),
    )
}

/// Checks both directions for `obj` of (api_version, kind): prost bytes → `decode` = `expected`;
/// `encode(expected)` → prost = `normalized` (the struct as our encoder writes it).
fn check<M: Message + Default + PartialEq + std::fmt::Debug>(
    api_version: &str,
    kind: &str,
    obj: &M,
    expected: &Value,
    normalized: &M,
) {
    let bytes = envelope(api_version, kind, obj.encode_to_vec());
    let json = decode(&bytes).unwrap_or_else(|e| panic!("decode: {e}"));
    assert_eq!(&json, expected, "decoded JSON differs");
    let ours = encode(expected).unwrap_or_else(|e| panic!("encode: {e}"));
    let (av, k, raw) = unwrap_envelope(&ours);
    assert_eq!((av.as_str(), k.as_str()), (api_version, kind));
    let back = M::decode(raw.as_slice()).expect("prost decodes our bytes");
    assert_eq!(&back, normalized, "prost sees a different object");
}

fn s(v: &str) -> Option<String> {
    Some(v.to_string())
}

fn time(seconds: i64) -> Option<meta::Time> {
    Some(meta::Time {
        seconds: Some(seconds),
        nanos: Some(0),
    })
}

fn qty(v: &str) -> Quantity {
    Quantity { string: s(v) }
}

fn int_or_string_int(i: i32) -> Option<IntOrString> {
    Some(IntOrString {
        r#type: Some(0),
        int_val: Some(i),
        str_val: s(""),
    })
}

fn int_or_string_str(v: &str) -> Option<IntOrString> {
    Some(IntOrString {
        r#type: Some(1),
        int_val: Some(0),
        str_val: s(v),
    })
}

/// 2024-01-02T03:04:05Z
const T0: i64 = 1_704_164_645;

#[test]
fn kubectl_style_config_map_decodes_like_apiserver_json() {
    // Go's protobuf encoder writes every non-pointer field, zero or not (this is what
    // `kubectl create configmap` sends); kube-apiserver's JSON leaves those zeros out.
    let go_style = core::ConfigMap {
        metadata: Some(meta::ObjectMeta {
            name: s("my-config"),
            generate_name: s(""),
            namespace: s(""),
            self_link: s(""),
            uid: s(""),
            resource_version: s(""),
            generation: Some(0),
            creation_timestamp: Some(meta::Time::default()),
            ..Default::default()
        }),
        immutable: None,
        data: BTreeMap::from([("key".into(), "value".into())]),
        binary_data: BTreeMap::new(),
    };
    let expected = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "my-config"},
        "data": {"key": "value"}
    });
    let normalized = core::ConfigMap {
        metadata: Some(meta::ObjectMeta {
            name: s("my-config"),
            ..Default::default()
        }),
        data: BTreeMap::from([("key".into(), "value".into())]),
        ..Default::default()
    };
    check("v1", "ConfigMap", &go_style, &expected, &normalized);
    // Byte-exact with prost (and so with Go's field order) for the normalized object.
    let ours = encode(&expected).unwrap();
    assert_eq!(
        ours,
        envelope("v1", "ConfigMap", normalized.encode_to_vec())
    );
}

#[test]
fn kubectl_style_deployment_decodes_like_apiserver_json() {
    // What `kubectl create deployment web --image=nginx` sends, zero fields included.
    let labels = BTreeMap::from([("app".to_string(), "web".to_string())]);
    let zero_meta = |labels: BTreeMap<String, String>, name: &str| meta::ObjectMeta {
        name: s(name),
        generate_name: s(""),
        namespace: s(""),
        self_link: s(""),
        uid: s(""),
        resource_version: s(""),
        generation: Some(0),
        creation_timestamp: Some(meta::Time::default()),
        labels,
        ..Default::default()
    };
    let go_style = apps::Deployment {
        metadata: Some(zero_meta(labels.clone(), "web")),
        spec: Some(apps::DeploymentSpec {
            replicas: Some(1),
            selector: Some(meta::LabelSelector {
                match_labels: labels.clone(),
                match_expressions: vec![],
            }),
            template: Some(core::PodTemplateSpec {
                metadata: Some(zero_meta(labels.clone(), "")),
                spec: Some(core::PodSpec {
                    containers: vec![core::Container {
                        name: s("nginx"),
                        image: s("nginx"),
                        working_dir: s(""),
                        resources: Some(core::ResourceRequirements::default()),
                        termination_message_path: s(""),
                        image_pull_policy: s(""),
                        stdin: Some(false),
                        stdin_once: Some(false),
                        tty: Some(false),
                        termination_message_policy: s(""),
                        ..Default::default()
                    }],
                    restart_policy: s(""),
                    dns_policy: s(""),
                    service_account_name: s(""),
                    node_name: s(""),
                    host_network: Some(false),
                    host_pid: Some(false),
                    host_ipc: Some(false),
                    hostname: s(""),
                    subdomain: s(""),
                    scheduler_name: s(""),
                    ..Default::default()
                }),
            }),
            strategy: Some(apps::DeploymentStrategy {
                r#type: s(""),
                rolling_update: None,
            }),
            min_ready_seconds: Some(0),
            revision_history_limit: None,
            paused: Some(false),
            progress_deadline_seconds: None,
        }),
        status: Some(apps::DeploymentStatus {
            observed_generation: Some(0),
            replicas: Some(0),
            updated_replicas: Some(0),
            ready_replicas: Some(0),
            available_replicas: Some(0),
            unavailable_replicas: Some(0),
            ..Default::default()
        }),
    };
    let expected = json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "nginx", "image": "nginx", "resources": {}}]}
            },
            "strategy": {}
        },
        "status": {}
    });
    let normalized = apps::Deployment {
        metadata: Some(meta::ObjectMeta {
            name: s("web"),
            labels: labels.clone(),
            ..Default::default()
        }),
        spec: Some(apps::DeploymentSpec {
            replicas: Some(1),
            selector: Some(meta::LabelSelector {
                match_labels: labels.clone(),
                match_expressions: vec![],
            }),
            template: Some(core::PodTemplateSpec {
                metadata: Some(meta::ObjectMeta {
                    labels,
                    ..Default::default()
                }),
                spec: Some(core::PodSpec {
                    containers: vec![core::Container {
                        name: s("nginx"),
                        image: s("nginx"),
                        resources: Some(core::ResourceRequirements::default()),
                        ..Default::default()
                    }],
                    ..Default::default()
                }),
            }),
            strategy: Some(apps::DeploymentStrategy::default()),
            ..Default::default()
        }),
        status: Some(apps::DeploymentStatus::default()),
    };
    check("apps/v1", "Deployment", &go_style, &expected, &normalized);
}

#[test]
fn prost_built_pod_agrees_both_ways() {
    let pod = core::Pod {
        metadata: Some(meta::ObjectMeta {
            name: s("web-0"),
            namespace: s("default"),
            creation_timestamp: time(T0),
            deletion_grace_period_seconds: Some(0),
            labels: BTreeMap::from([("app".into(), "web".into())]),
            managed_fields: vec![meta::ManagedFieldsEntry {
                manager: s("kubectl"),
                operation: s("Apply"),
                api_version: s("v1"),
                time: time(T0 + 1),
                fields_type: s("FieldsV1"),
                fields_v1: Some(meta::FieldsV1 {
                    raw: Some(br#"{"f:spec":{"f:containers":{}}}"#.to_vec()),
                }),
                subresource: None,
            }],
            ..Default::default()
        }),
        spec: Some(core::PodSpec {
            containers: vec![core::Container {
                name: s("web"),
                image: s("nginx"),
                ports: vec![core::ContainerPort {
                    name: s("http"),
                    container_port: Some(8080),
                    protocol: s("TCP"),
                    ..Default::default()
                }],
                env: vec![core::EnvVar {
                    name: s("A"),
                    value: s("1"),
                    value_from: None,
                }],
                resources: Some(core::ResourceRequirements {
                    limits: BTreeMap::from([
                        ("cpu".into(), qty("500m")),
                        ("memory".into(), qty("128Mi")),
                    ]),
                    requests: BTreeMap::from([("cpu".into(), qty("250m"))]),
                    claims: vec![],
                }),
                liveness_probe: Some(core::Probe {
                    handler: Some(core::ProbeHandler {
                        http_get: Some(core::HttpGetAction {
                            path: s("/healthz"),
                            port: int_or_string_int(8080),
                            ..Default::default()
                        }),
                        ..Default::default()
                    }),
                    initial_delay_seconds: Some(5),
                    ..Default::default()
                }),
                readiness_probe: Some(core::Probe {
                    handler: Some(core::ProbeHandler {
                        tcp_socket: Some(core::TcpSocketAction {
                            port: int_or_string_str("http"),
                            host: None,
                        }),
                        ..Default::default()
                    }),
                    ..Default::default()
                }),
                security_context: Some(core::SecurityContext {
                    run_as_user: Some(0),
                    run_as_non_root: Some(false),
                    ..Default::default()
                }),
                ..Default::default()
            }],
            volumes: vec![core::Volume {
                name: s("scratch"),
                volume_source: Some(core::VolumeSource {
                    empty_dir: Some(core::EmptyDirVolumeSource {
                        medium: None,
                        size_limit: Some(qty("1Gi")),
                    }),
                    ..Default::default()
                }),
            }],
            ..Default::default()
        }),
        status: Some(core::PodStatus {
            phase: s("Running"),
            conditions: vec![core::PodCondition {
                r#type: s("Ready"),
                status: s("True"),
                last_transition_time: time(T0 + 2),
                ..Default::default()
            }],
            host_ip: s("10.0.0.1"),
            host_ips: vec![core::HostIp { ip: s("10.0.0.1") }],
            pod_ip: s("10.1.0.5"),
            pod_ips: vec![
                core::PodIp { ip: s("10.1.0.5") },
                core::PodIp { ip: s("fd00::5") },
            ],
            start_time: time(T0),
            ..Default::default()
        }),
    };
    let expected = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "web-0",
            "namespace": "default",
            "creationTimestamp": "2024-01-02T03:04:05Z",
            "deletionGracePeriodSeconds": 0,
            "labels": {"app": "web"},
            "managedFields": [{
                "manager": "kubectl",
                "operation": "Apply",
                "apiVersion": "v1",
                "time": "2024-01-02T03:04:06Z",
                "fieldsType": "FieldsV1",
                "fieldsV1": {"f:spec": {"f:containers": {}}}
            }]
        },
        "spec": {
            "containers": [{
                "name": "web",
                "image": "nginx",
                "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
                "env": [{"name": "A", "value": "1"}],
                "resources": {"limits": {"cpu": "500m", "memory": "128Mi"}, "requests": {"cpu": "250m"}},
                "livenessProbe": {"httpGet": {"path": "/healthz", "port": 8080}, "initialDelaySeconds": 5},
                "readinessProbe": {"tcpSocket": {"port": "http"}},
                "securityContext": {"runAsUser": 0, "runAsNonRoot": false}
            }],
            "volumes": [{"name": "scratch", "emptyDir": {"sizeLimit": "1Gi"}}]
        },
        "status": {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2024-01-02T03:04:07Z"}],
            "hostIP": "10.0.0.1",
            "hostIPs": [{"ip": "10.0.0.1"}],
            "podIP": "10.1.0.5",
            "podIPs": [{"ip": "10.1.0.5"}, {"ip": "fd00::5"}],
            "startTime": "2024-01-02T03:04:05Z"
        }
    });
    check("v1", "Pod", &pod, &expected, &pod);
    assert_eq!(
        encode(&expected).unwrap(),
        envelope("v1", "Pod", pod.encode_to_vec()),
        "byte-exact with prost"
    );
}

#[test]
fn prost_built_secret_and_lease_agree_both_ways() {
    let secret = core::Secret {
        metadata: Some(meta::ObjectMeta {
            name: s("creds"),
            ..Default::default()
        }),
        immutable: Some(true),
        data: BTreeMap::from([("password".into(), b"p4ss\xff".to_vec())]),
        string_data: BTreeMap::from([("user".into(), "admin".into())]),
        r#type: s("Opaque"),
    };
    let expected = json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "creds"},
        "immutable": true,
        "data": {"password": "cDRzc/8="},
        "stringData": {"user": "admin"},
        "type": "Opaque"
    });
    check("v1", "Secret", &secret, &expected, &secret);

    let lease = coordination::Lease {
        metadata: Some(meta::ObjectMeta {
            name: s("leader"),
            namespace: s("kube-system"),
            ..Default::default()
        }),
        spec: Some(coordination::LeaseSpec {
            holder_identity: s("pod-a"),
            lease_duration_seconds: Some(15),
            acquire_time: Some(meta::MicroTime {
                seconds: Some(T0),
                nanos: Some(0),
            }),
            renew_time: Some(meta::MicroTime {
                seconds: Some(T0 + 15),
                nanos: Some(123_456_000),
            }),
            lease_transitions: Some(0),
            ..Default::default()
        }),
    };
    let expected = json!({
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "leader", "namespace": "kube-system"},
        "spec": {
            "holderIdentity": "pod-a",
            "leaseDurationSeconds": 15,
            "acquireTime": "2024-01-02T03:04:05.000000Z",
            "renewTime": "2024-01-02T03:04:20.123456Z",
            "leaseTransitions": 0
        }
    });
    check("coordination.k8s.io/v1", "Lease", &lease, &expected, &lease);
}

#[test]
fn prost_built_crd_schema_agrees_both_ways() {
    let string = ext::JsonSchemaProps {
        r#type: s("string"),
        ..Default::default()
    };
    let raw = |j: &str| ext::Json {
        raw: Some(j.as_bytes().to_vec()),
    };
    let schema = ext::JsonSchemaProps {
        r#type: s("object"),
        required: vec!["spec".into()],
        properties: BTreeMap::from([
            (
                "spec".to_string(),
                ext::JsonSchemaProps {
                    r#type: s("object"),
                    x_kubernetes_preserve_unknown_fields: Some(true),
                    additional_properties: Some(Box::new(ext::JsonSchemaPropsOrBool {
                        allows: Some(true),
                        schema: Some(Box::new(string.clone())),
                    })),
                    ..Default::default()
                },
            ),
            (
                "mode".to_string(),
                ext::JsonSchemaProps {
                    r#type: s("string"),
                    r#enum: vec![raw("\"a\""), raw("\"b\"")],
                    default: Some(raw("\"a\"")),
                    maximum: Some(2.5),
                    ..Default::default()
                },
            ),
            (
                "closed".to_string(),
                ext::JsonSchemaProps {
                    r#type: s("object"),
                    additional_properties: Some(Box::new(ext::JsonSchemaPropsOrBool {
                        allows: Some(false),
                        schema: None,
                    })),
                    ..Default::default()
                },
            ),
            (
                "list".to_string(),
                ext::JsonSchemaProps {
                    r#type: s("array"),
                    items: Some(Box::new(ext::JsonSchemaPropsOrArray {
                        schema: Some(Box::new(string.clone())),
                        j_son_schemas: vec![],
                    })),
                    x_kubernetes_list_type: s("atomic"),
                    ..Default::default()
                },
            ),
        ]),
        ..Default::default()
    };
    let crd = ext::CustomResourceDefinition {
        metadata: Some(meta::ObjectMeta {
            name: s("foos.example.com"),
            ..Default::default()
        }),
        spec: Some(ext::CustomResourceDefinitionSpec {
            group: s("example.com"),
            names: Some(ext::CustomResourceDefinitionNames {
                plural: s("foos"),
                kind: s("Foo"),
                ..Default::default()
            }),
            scope: s("Namespaced"),
            versions: vec![ext::CustomResourceDefinitionVersion {
                name: s("v1"),
                served: Some(true),
                storage: Some(true),
                schema: Some(ext::CustomResourceValidation {
                    open_apiv3_schema: Some(schema),
                }),
                ..Default::default()
            }],
            ..Default::default()
        }),
        status: None,
    };
    let expected = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "foos.example.com"},
        "spec": {
            "group": "example.com",
            "names": {"plural": "foos", "kind": "Foo"},
            "scope": "Namespaced",
            "versions": [{
                "name": "v1",
                "served": true,
                "storage": true,
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "required": ["spec"],
                    "properties": {
                        "closed": {"type": "object", "additionalProperties": false},
                        "list": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "atomic"},
                        "mode": {"type": "string", "enum": ["a", "b"], "default": "a", "maximum": 2.5},
                        "spec": {"type": "object", "additionalProperties": {"type": "string"},
                                 "x-kubernetes-preserve-unknown-fields": true}
                    }
                }}
            }]
        }
    });
    check(
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        &crd,
        &expected,
        &crd,
    );
}

#[test]
fn prost_built_status_agrees_both_ways() {
    let status = meta::Status {
        metadata: Some(meta::ListMeta::default()),
        status: s("Failure"),
        message: s("too old resource version: 1 (5)"),
        reason: s("Expired"),
        details: Some(meta::StatusDetails {
            causes: vec![meta::StatusCause {
                reason: s("FieldValueInvalid"),
                message: s("bad"),
                field: s("metadata.resourceVersion"),
            }],
            ..Default::default()
        }),
        code: Some(410),
    };
    let expected = json!({
        "apiVersion": "v1",
        "kind": "Status",
        "metadata": {},
        "status": "Failure",
        "message": "too old resource version: 1 (5)",
        "reason": "Expired",
        "details": {"causes": [{"reason": "FieldValueInvalid", "message": "bad", "field": "metadata.resourceVersion"}]},
        "code": 410
    });
    check("v1", "Status", &status, &expected, &status);
}

#[test]
fn watch_frames_carry_a_bare_watch_event_with_an_enveloped_object() {
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "resourceVersion": "9"}});
    let frame = encode_watch_event("ADDED", &cm).unwrap();
    let len = u32::from_be_bytes(frame[..4].try_into().unwrap()) as usize;
    assert_eq!(len, frame.len() - 4);
    let (body, rest) = split_watch_frame(&frame).unwrap();
    assert!(rest.is_empty());
    assert!(split_watch_frame(&frame[..frame.len() - 1]).is_none());

    // What client-go does: decode the frame body as a WatchEvent, then the embedded object.
    let event = meta::WatchEvent::decode(body).expect("prost decodes the event");
    assert_eq!(event.r#type.as_deref(), Some("ADDED"));
    let raw = event.object.and_then(|o| o.raw).expect("object.raw");
    let (av, kind, inner) = unwrap_envelope(&raw);
    assert_eq!((av.as_str(), kind.as_str()), ("v1", "ConfigMap"));
    let parsed = core::ConfigMap::decode(inner.as_slice()).unwrap();
    assert_eq!(
        parsed.metadata.unwrap().resource_version.as_deref(),
        Some("9")
    );

    assert_eq!(decode_watch_event(body).unwrap(), ("ADDED".to_string(), cm));

    // And an event built by prost decodes with ours.
    let status = json!({"apiVersion": "v1", "kind": "Status", "metadata": {}, "status": "Failure",
                        "reason": "Expired", "code": 410});
    let prost_event = meta::WatchEvent {
        r#type: s("ERROR"),
        object: Some(RawExtension {
            raw: Some(encode(&status).unwrap()),
        }),
    };
    assert_eq!(
        decode_watch_event(&prost_event.encode_to_vec()).unwrap(),
        ("ERROR".to_string(), status)
    );
}
