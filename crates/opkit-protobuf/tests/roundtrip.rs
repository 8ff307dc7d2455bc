//! JSON → protobuf → JSON round trips of rich objects, in the canonical shape kube-apiserver's
//! JSON has (so the round trip must give back exactly the input).

#![recursion_limit = "512"]
use opkit_protobuf::{MAGIC, decode, encode, supports};
use serde_json::{Value, json};

fn round_trip(v: &Value) -> Value {
    let bytes = encode(v).unwrap_or_else(|e| panic!("encode failed: {e}"));
    assert!(bytes.starts_with(MAGIC));
    let back = decode(&bytes).unwrap_or_else(|e| panic!("decode failed: {e}"));
    assert_eq!(&back, v, "round trip changed the object");
    // Encoding is deterministic and stable across a second pass.
    assert_eq!(encode(&back).unwrap(), bytes);
    back
}

#[test]
fn pod_with_containers_probes_volumes_and_status_round_trips() {
    let pod = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "web-0",
            "namespace": "default",
            "uid": "0b7c4e0e-8d5e-4c4b-9a4f-1f2e3d4c5b6a",
            "resourceVersion": "42",
            "creationTimestamp": "2024-01-02T03:04:05Z",
            "labels": {"app": "web", "tier": "frontend"},
            "annotations": {"example.com/note": "hello"},
            "ownerReferences": [{
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "name": "web-5d4f",
                "uid": "1c8d5f1f-9e6f-5d5c-0b5a-2a3b4c5d6e7f",
                "controller": true,
                "blockOwnerDeletion": true
            }],
            "finalizers": ["example.com/cleanup"],
            "managedFields": [{
                "manager": "kubectl-client-side-apply",
                "operation": "Update",
                "apiVersion": "v1",
                "time": "2024-01-02T03:04:05Z",
                "fieldsType": "FieldsV1",
                "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}}}
            }]
        },
        "spec": {
            "containers": [{
                "name": "web",
                "image": "nginx:1.25",
                "command": ["nginx"],
                "args": ["-g", "daemon off;"],
                "ports": [
                    {"name": "http", "containerPort": 80, "protocol": "TCP"},
                    {"name": "metrics", "containerPort": 9090, "hostPort": 19090, "protocol": "UDP"}
                ],
                "env": [
                    {"name": "MODE", "value": "production"},
                    {"name": "POD_IP", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "status.podIP"}}},
                    {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "token", "optional": true}}},
                    {"name": "LIMIT", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1Mi"}}}
                ],
                "envFrom": [{"configMapRef": {"name": "settings"}, "prefix": "CFG_"}],
                "resources": {
                    "limits": {"cpu": "500m", "memory": "128Mi"},
                    "requests": {"cpu": "250m", "memory": "64Mi"}
                },
                "volumeMounts": [{"name": "data", "mountPath": "/data", "readOnly": true}],
                "livenessProbe": {
                    "httpGet": {"path": "/healthz", "port": 8080, "scheme": "HTTP",
                                "httpHeaders": [{"name": "X-Probe", "value": "1"}]},
                    "initialDelaySeconds": 3,
                    "periodSeconds": 10,
                    "terminationGracePeriodSeconds": 0
                },
                "readinessProbe": {"tcpSocket": {"port": "http"}, "failureThreshold": 3},
                "startupProbe": {"exec": {"command": ["cat", "/tmp/ready"]}, "timeoutSeconds": 2},
                "lifecycle": {"preStop": {"sleep": {"seconds": 5}}},
                "imagePullPolicy": "IfNotPresent",
                "securityContext": {
                    "capabilities": {"add": ["NET_BIND_SERVICE"], "drop": ["ALL"]},
                    "runAsUser": 1000,
                    "runAsNonRoot": true,
                    "readOnlyRootFilesystem": true,
                    "allowPrivilegeEscalation": false,
                    "seccompProfile": {"type": "RuntimeDefault"}
                },
                "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File"
            }],
            "initContainers": [{"name": "init", "image": "busybox", "restartPolicy": "Always"}],
            "volumes": [
                {"name": "data", "configMap": {"name": "cfg", "items": [{"key": "a", "path": "a.txt", "mode": 256}], "defaultMode": 420}},
                {"name": "scratch", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}},
                {"name": "secret", "secret": {"secretName": "creds", "optional": false}},
                {"name": "claim", "persistentVolumeClaim": {"claimName": "data-web-0"}},
                {"name": "proj", "projected": {"sources": [{"serviceAccountToken": {"audience": "api", "expirationSeconds": 3600, "path": "token"}}]}}
            ],
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst",
            "nodeSelector": {"kubernetes.io/os": "linux"},
            "serviceAccountName": "web",
            "nodeName": "node-1",
            "securityContext": {"runAsGroup": 3000, "fsGroup": 2000, "sysctls": [{"name": "net.core.somaxconn", "value": "1024"}]},
            "affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{
                "weight": 100,
                "podAffinityTerm": {"labelSelector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["web"]}]},
                                    "topologyKey": "kubernetes.io/hostname"}
            }]}},
            "schedulerName": "default-scheduler",
            "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}],
            "priority": 0,
            "enableServiceLinks": true,
            "preemptionPolicy": "PreemptLowerPriority",
            "overhead": {"cpu": "100m"}
        },
        "status": {
            "phase": "Running",
            "conditions": [
                {"type": "Initialized", "status": "True", "lastTransitionTime": "2024-01-02T03:04:06Z"},
                {"type": "Ready", "status": "False", "lastTransitionTime": "2024-01-02T03:04:07Z",
                 "reason": "ContainersNotReady", "message": "containers with unready status: [web]"}
            ],
            "hostIP": "10.0.0.1",
            "hostIPs": [{"ip": "10.0.0.1"}],
            "podIP": "10.1.0.5",
            "podIPs": [{"ip": "10.1.0.5"}, {"ip": "fd00::5"}],
            "startTime": "2024-01-02T03:04:05Z",
            "containerStatuses": [{
                "name": "web",
                "state": {"running": {"startedAt": "2024-01-02T03:04:06Z"}},
                "lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled",
                                             "startedAt": "2024-01-02T02:00:00Z", "finishedAt": "2024-01-02T03:00:00Z"}},
                "ready": false,
                "restartCount": 0,
                "image": "nginx:1.25",
                "imageID": "docker.io/library/nginx@sha256:0123",
                "containerID": "containerd://abc",
                "started": true
            }],
            "qosClass": "Burstable"
        }
    });
    round_trip(&pod);
}

#[test]
fn deployment_keeps_zero_replicas_and_int_or_string_strategy() {
    let deployment = json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "generation": 3, "labels": {"app": "web"}},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": "nginx", "resources": {}}]}
            },
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}},
            "revisionHistoryLimit": 10,
            "progressDeadlineSeconds": 600
        },
        "status": {
            "observedGeneration": 3,
            "conditions": [{
                "type": "Available", "status": "True",
                "lastUpdateTime": "2024-01-02T03:04:05Z", "lastTransitionTime": "2024-01-02T03:04:05Z",
                "reason": "MinimumReplicasAvailable", "message": "Deployment has minimum availability."
            }]
        }
    });
    let back = round_trip(&deployment);
    assert_eq!(back["spec"]["replicas"], json!(0));
    assert_eq!(
        back["spec"]["strategy"]["rollingUpdate"]["maxSurge"],
        json!("25%")
    );
    assert_eq!(
        back["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"],
        json!(1)
    );
}

#[test]
fn secret_with_data_and_string_data_round_trips() {
    let secret = json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "creds", "namespace": "default"},
        "type": "Opaque",
        "immutable": false,
        "data": {"password": "cGFzc3dvcmQ=", "empty": "", "binary": "AAEC/w=="},
        "stringData": {"user": "admin"}
    });
    round_trip(&secret);
}

#[test]
fn config_map_with_data_and_binary_data_round_trips() {
    let cm = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "cfg", "namespace": "default"},
        "data": {"a.txt": "hello\nworld", "unicode": "héllo ✓", "empty": ""},
        "binaryData": {"blob": "3q2+7w=="}
    });
    round_trip(&cm);
}

#[test]
fn role_with_rules_round_trips() {
    let role = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": "reader", "namespace": "default"},
        "rules": [
            {"apiGroups": [""], "resources": ["pods", "pods/log"], "verbs": ["get", "list", "watch"]},
            {"apiGroups": ["apps"], "resources": ["deployments"], "resourceNames": ["web"], "verbs": ["*"]}
        ]
    });
    round_trip(&role);
}

fn crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "foos.example.com"},
        "spec": {
            "group": "example.com",
            "names": {"plural": "foos", "singular": "foo", "kind": "Foo", "listKind": "FooList",
                      "shortNames": ["fo"], "categories": ["all"]},
            "scope": "Namespaced",
            "versions": [{
                "name": "v1",
                "served": true,
                "storage": true,
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "description": "Foo is a test resource",
                    "required": ["spec"],
                    "properties": {
                        "apiVersion": {"type": "string"},
                        "spec": {
                            "type": "object",
                            "properties": {
                                "replicas": {"type": "integer", "format": "int32", "minimum": 0, "maximum": 10, "default": 1},
                                "mode": {"type": "string", "enum": ["fast", "slow", null], "default": "fast",
                                         "pattern": "^[a-z]+$", "maxLength": 5, "nullable": true},
                                "port": {"x-kubernetes-int-or-string": true,
                                         "anyOf": [{"type": "integer"}, {"type": "string"}]},
                                "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3,
                                         "x-kubernetes-list-type": "set"},
                                "ports": {"type": "array", "x-kubernetes-list-type": "map",
                                          "x-kubernetes-list-map-keys": ["name", "protocol"],
                                          "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
                                "tuple": {"type": "array", "items": [{"type": "string"}, {"type": "integer"}]},
                                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                                "closed": {"type": "object", "additionalProperties": false},
                                "open": {"type": "object", "additionalProperties": true},
                                "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                                "template": {"type": "object", "x-kubernetes-embedded-resource": true,
                                             "x-kubernetes-preserve-unknown-fields": true},
                                "ratio": {"type": "number", "multipleOf": 0.5, "exclusiveMaximum": true,
                                          "maximum": 2.5, "example": {"ratio": 1.5}},
                                "deps": {"type": "object",
                                         "dependencies": {"a": ["b", "c"], "d": {"required": ["e"]}}},
                                "ref": {"$ref": "#/definitions/thing"},
                                "nested": {"not": {"type": "null"}, "oneOf": [{"required": ["a"]}], "allOf": [{"minProperties": 1}]}
                            },
                            "x-kubernetes-validations": [
                                {"rule": "self.replicas <= 10", "message": "too many",
                                 "fieldPath": ".replicas", "reason": "FieldValueInvalid"},
                                {"rule": "self.mode == oldSelf.mode", "messageExpression": "'immutable'",
                                 "optionalOldSelf": true}
                            ]
                        },
                        "status": {"type": "object", "x-kubernetes-map-type": "atomic"}
                    }
                }},
                "subresources": {
                    "status": {},
                    "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas",
                              "labelSelectorPath": ".status.selector"}
                },
                "additionalPrinterColumns": [
                    {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas", "priority": 1},
                    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}
                ],
                "selectableFields": [{"jsonPath": ".spec.mode"}]
            }],
            "conversion": {"strategy": "None"}
        },
        "status": {
            "conditions": [{"type": "Established", "status": "True", "lastTransitionTime": "2024-01-02T03:04:05Z",
                            "reason": "InitialNamesAccepted", "message": "the initial names have been accepted"}],
            "acceptedNames": {"plural": "foos", "kind": "Foo"},
            "storedVersions": ["v1"]
        }
    })
}

#[test]
fn custom_resource_definition_with_recursive_schema_round_trips() {
    let back = round_trip(&crd());
    let props = &back["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"];
    assert_eq!(props["closed"]["additionalProperties"], json!(false));
    assert_eq!(props["tuple"]["items"][1]["type"], json!("integer"));
    assert_eq!(props["mode"]["enum"], json!(["fast", "slow", null]));
    assert_eq!(props["ratio"]["example"], json!({"ratio": 1.5}));
}

#[test]
fn events_v1_event_with_micro_time_round_trips() {
    let event = json!({
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": "web-0.17a", "namespace": "default"},
        "eventTime": "2024-01-02T03:04:05.123456Z",
        "series": {"count": 2, "lastObservedTime": "2024-01-02T03:05:05.000001Z"},
        "reportingController": "example.com/controller",
        "reportingInstance": "controller-1",
        "action": "Reconcile",
        "reason": "Synced",
        "regarding": {"kind": "Pod", "namespace": "default", "name": "web-0", "apiVersion": "v1"},
        "note": "synced successfully",
        "type": "Normal"
    });
    round_trip(&event);
}

#[test]
fn lease_with_micro_time_round_trips() {
    let lease = json!({
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "leader", "namespace": "kube-system"},
        "spec": {
            "holderIdentity": "pod-a",
            "leaseDurationSeconds": 15,
            "acquireTime": "2024-01-02T03:04:05.000000Z",
            "renewTime": "2024-01-02T03:04:20.500000Z",
            "leaseTransitions": 0
        }
    });
    round_trip(&lease);
}

#[test]
fn status_with_details_and_causes_round_trips() {
    assert!(supports("v1", "Status"));
    let status = json!({
        "apiVersion": "v1",
        "kind": "Status",
        "metadata": {},
        "status": "Failure",
        "message": "Deployment.apps \"web\" is invalid: spec.replicas: Invalid value: -1",
        "reason": "Invalid",
        "details": {
            "name": "web",
            "group": "apps",
            "kind": "Deployment",
            "causes": [
                {"reason": "FieldValueInvalid", "message": "Invalid value: -1", "field": "spec.replicas"},
                {"reason": "FieldValueRequired", "message": "Required value", "field": "spec.selector"}
            ],
            "retryAfterSeconds": 1
        },
        "code": 422
    });
    round_trip(&status);
}

#[test]
fn config_map_list_with_list_metadata_round_trips() {
    let list = json!({
        "apiVersion": "v1",
        "kind": "ConfigMapList",
        "metadata": {"resourceVersion": "1234", "continue": "eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ", "remainingItemCount": 0},
        "items": [
            {"metadata": {"name": "a", "namespace": "default", "resourceVersion": "1"}, "data": {"k": "v"}},
            {"metadata": {"name": "b", "namespace": "default", "resourceVersion": "2"}}
        ]
    });
    round_trip(&list);
}

#[test]
fn list_items_may_carry_their_type_meta() {
    // Stored objects carry apiVersion/kind; the encoder accepts (and drops) them in items.
    let list = json!({
        "apiVersion": "v1",
        "kind": "ConfigMapList",
        "metadata": {"resourceVersion": "7"},
        "items": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}]
    });
    let back = decode(&encode(&list).unwrap()).unwrap();
    assert_eq!(back["items"][0], json!({"metadata": {"name": "a"}}));
}

#[test]
fn token_request_and_access_reviews_round_trip() {
    round_trip(&json!({
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "metadata": {"name": "default", "namespace": "default"},
        "spec": {"audiences": ["https://kubernetes.default.svc"], "expirationSeconds": 3600,
                 "boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "web-0", "uid": "u"}},
        "status": {"token": "eyJhbGciOi", "expirationTimestamp": "2024-01-02T04:04:05Z"}
    }));
    round_trip(&json!({
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "metadata": {},
        "spec": {"resourceAttributes": {"namespace": "default", "verb": "create", "group": "apps", "resource": "deployments"}},
        "status": {"allowed": true, "reason": "RBAC: allowed by ClusterRoleBinding"}
    }));
    round_trip(&json!({
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "metadata": {},
        "spec": {"nonResourceAttributes": {"path": "/healthz", "verb": "get"}, "user": "alice",
                 "groups": ["dev"], "extra": {"scopes": ["a", "b"]}, "uid": "1"},
        "status": {"allowed": false, "denied": true}
    }));
    round_trip(&json!({
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectRulesReview",
        "metadata": {},
        "spec": {"namespace": "default"},
        "status": {"resourceRules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}],
                   "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["/api"]}],
                   "incomplete": false}
    }));
}

#[test]
fn more_kinds_round_trip() {
    round_trip(&json!({
        "apiVersion": "autoscaling/v1",
        "kind": "Scale",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"replicas": 3},
        "status": {"replicas": 2, "selector": "app=web"}
    }));
    round_trip(&json!({
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "minReplicas": 1, "maxReplicas": 5,
            "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}],
            "behavior": {"scaleDown": {"stabilizationWindowSeconds": 300, "policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}]}}
        }
    }));
    round_trip(&json!({
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {"name": "web-abc", "labels": {"kubernetes.io/service-name": "web"}},
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["10.1.0.5"], "conditions": {"ready": true, "serving": true, "terminating": false},
                       "nodeName": "node-1", "targetRef": {"kind": "Pod", "name": "web-0", "namespace": "default"}}],
        "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]
    }));
    round_trip(&json!({
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "nightly"},
        "spec": {"schedule": "0 3 * * *", "suspend": false, "jobTemplate": {"spec": {"backoffLimit": 0, "template": {
            "spec": {"restartPolicy": "Never", "containers": [{"name": "job", "image": "busybox"}]}}}}}
    }));
    round_trip(&json!({
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": {"name": "web"},
        "spec": {"ingressClassName": "nginx", "rules": [{"host": "example.com", "http": {"paths": [{
            "path": "/", "pathType": "Prefix",
            "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}}]}
    }));
    round_trip(&json!({
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "web"},
        "spec": {"minAvailable": "50%", "selector": {"matchLabels": {"app": "web"}}}
    }));
    round_trip(&json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web"},
        "spec": {"type": "ClusterIP", "clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10"],
                 "ports": [{"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP"}],
                 "selector": {"app": "web"}, "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack"}
    }));
    round_trip(&json!({
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "team-a", "deletionTimestamp": "2024-01-02T03:04:05Z"},
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Terminating"}
    }));
}

#[test]
fn meta_kinds_are_supported_under_v1_and_meta_k8s_io() {
    assert!(supports("v1", "ConfigMap"));
    assert!(supports("apps/v1", "DeploymentList"));
    assert!(supports("v1", "Status"));
    assert!(supports("meta.k8s.io/v1", "Status"));
    assert!(supports("v1", "APIResourceList"));
    assert!(supports("apps/v1", "DeleteOptions"));
    assert!(!supports("example.com/v1", "Foo"));
    assert!(!supports("v1", "Table"));
    round_trip(&json!({
        "apiVersion": "v1",
        "kind": "APIResourceList",
        "groupVersion": "apps/v1",
        "resources": [{"name": "deployments", "singularName": "deployment", "namespaced": true, "kind": "Deployment",
                       "verbs": ["create", "get", "list"], "shortNames": ["deploy"], "categories": ["all"]}]
    }));
    round_trip(&json!({
        "apiVersion": "apps/v1",
        "kind": "DeleteOptions",
        "gracePeriodSeconds": 0,
        "propagationPolicy": "Foreground",
        "preconditions": {"resourceVersion": "5"}
    }));
}
