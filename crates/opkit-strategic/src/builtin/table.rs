//! Patch metadata of the built-in kinds: the `patchStrategy` / `patchMergeKey` struct tags
//! (and the `+listType` / `+listMapKey` markers next to them) of `k8s.io/api` v0.35.7,
//! `k8s.io/apimachinery` `meta/v1` (ObjectMeta), `apiextensions.k8s.io/v1` and
//! `apiregistration.k8s.io/v1`. Only the types on a path to a field with patch metadata are
//! listed; every other field has none (maps merge, lists are replaced).
//!
//! Generated from the upstream Go types by `crates/opkit-strategic/examples/gen_table.rs` (its
//! doc comment says how to regenerate); do not edit by hand.

use super::{ATOMIC, DEFAULT, MAP, MERGE, MERGE_RETAIN, NONE, REPLACE, RETAIN, SET, TypeDef, f};

pub(super) static META_V1_OBJECT_META: TypeDef = TypeDef {
    name: "ObjectMeta",
    fields: &[
        f("ownerReferences", MERGE, Some("uid"), MAP, &["uid"], None),
        f("finalizers", MERGE, None, SET, &[], None),
    ],
};

pub(super) static ADMISSIONREGISTRATION_V1_VALIDATING_ADMISSION_POLICY_SPEC: TypeDef = TypeDef {
    name: "ValidatingAdmissionPolicySpec",
    fields: &[
        f("matchConditions", MERGE, Some("name"), MAP, &["name"], None),
        f("variables", MERGE, Some("name"), MAP, &["name"], None),
    ],
};

pub(super) static ADMISSIONREGISTRATION_V1_VALIDATING_ADMISSION_POLICY: TypeDef = TypeDef {
    name: "ValidatingAdmissionPolicy",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
        f("spec", DEFAULT, None, NONE, &[], Some(&ADMISSIONREGISTRATION_V1_VALIDATING_ADMISSION_POLICY_SPEC)),
    ],
};

pub(super) static ADMISSIONREGISTRATION_V1_VALIDATING_ADMISSION_POLICY_BINDING: TypeDef = TypeDef {
    name: "ValidatingAdmissionPolicyBinding",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static ADMISSIONREGISTRATION_V1_VALIDATING_WEBHOOK: TypeDef = TypeDef {
    name: "ValidatingWebhook",
    fields: &[
        f("matchConditions", MERGE, Some("name"), MAP, &["name"], None),
    ],
};

pub(super) static ADMISSIONREGISTRATION_V1_VALIDATING_WEBHOOK_CONFIGURATION: TypeDef = TypeDef {
    name: "ValidatingWebhookConfiguration",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
        f("webhooks", MERGE, Some("name"), MAP, &["name"], Some(&ADMISSIONREGISTRATION_V1_VALIDATING_WEBHOOK)),
    ],
};

pub(super) static ADMISSIONREGISTRATION_V1_MUTATING_WEBHOOK: TypeDef = TypeDef {
    name: "MutatingWebhook",
    fields: &[
        f("matchConditions", MERGE, Some("name"), MAP, &["name"], None),
    ],
};

pub(super) static ADMISSIONREGISTRATION_V1_MUTATING_WEBHOOK_CONFIGURATION: TypeDef = TypeDef {
    name: "MutatingWebhookConfiguration",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
        f("webhooks", MERGE, Some("name"), MAP, &["name"], Some(&ADMISSIONREGISTRATION_V1_MUTATING_WEBHOOK)),
    ],
};

pub(super) static ADMISSIONREGISTRATION_V1ALPHA1_VALIDATING_ADMISSION_POLICY_SPEC: TypeDef = TypeDef {
    name: "ValidatingAdmissionPolicySpec",
    fields: &[
        f("matchConditions", MERGE, Some("name"), MAP, &["name"], None),
        f("variables", MERGE, Some("name"), MAP, &["name"], None),
    ],
};

pub(super) static ADMISSIONREGISTRATION_V1ALPHA1_VALIDATING_ADMISSION_POLICY: TypeDef = TypeDef {
    name: "ValidatingAdmissionPolicy",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
        f("spec", DEFAULT, None, NONE, &[], Some(&ADMISSIONREGISTRATION_V1ALPHA1_VALIDATING_ADMISSION_POLICY_SPEC)),
    ],
};

pub(super) static ADMISSIONREGISTRATION_V1ALPHA1_VALIDATING_ADMISSION_POLICY_BINDING: TypeDef = TypeDef {
    name: "ValidatingAdmissionPolicyBinding",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static ADMISSIONREGISTRATION_V1ALPHA1_MUTATING_ADMISSION_POLICY_SPEC: TypeDef = TypeDef {
    name: "MutatingAdmissionPolicySpec",
    fields: &[
        f("matchConditions", MERGE, Some("name"), MAP, &["name"], None),
    ],
};

pub(super) static ADMISSIONREGISTRATION_V1ALPHA1_MUTATING_ADMISSION_POLICY: TypeDef = TypeDef {
    name: "MutatingAdmissionPolicy",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
        f("spec", DEFAULT, None, NONE, &[], Some(&ADMISSIONREGISTRATION_V1ALPHA1_MUTATING_ADMISSION_POLICY_SPEC)),
    ],
};

pub(super) static ADMISSIONREGISTRATION_V1ALPHA1_MUTATING_ADMISSION_POLICY_BINDING: TypeDef = TypeDef {
    name: "MutatingAdmissionPolicyBinding",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static ADMISSIONREGISTRATION_V1BETA1_VALIDATING_ADMISSION_POLICY_SPEC: TypeDef = TypeDef {
    name: "ValidatingAdmissionPolicySpec",
    fields: &[
        f("matchConditions", MERGE, Some("name"), MAP, &["name"], None),
        f("variables", MERGE, Some("name"), MAP, &["name"], None),
    ],
};

pub(super) static ADMISSIONREGISTRATION_V1BETA1_VALIDATING_ADMISSION_POLICY: TypeDef = TypeDef {
    name: "ValidatingAdmissionPolicy",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
        f("spec", DEFAULT, None, NONE, &[], Some(&ADMISSIONREGISTRATION_V1BETA1_VALIDATING_ADMISSION_POLICY_SPEC)),
    ],
};

pub(super) static ADMISSIONREGISTRATION_V1BETA1_VALIDATING_ADMISSION_POLICY_BINDING: TypeDef = TypeDef {
    name: "ValidatingAdmissionPolicyBinding",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static ADMISSIONREGISTRATION_V1BETA1_VALIDATING_WEBHOOK: TypeDef = TypeDef {
    name: "ValidatingWebhook",
    fields: &[
        f("matchConditions", MERGE, Some("name"), MAP, &["name"], None),
    ],
};

pub(super) static ADMISSIONREGISTRATION_V1BETA1_VALIDATING_WEBHOOK_CONFIGURATION: TypeDef = TypeDef {
    name: "ValidatingWebhookConfiguration",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
        f("webhooks", MERGE, Some("name"), MAP, &["name"], Some(&ADMISSIONREGISTRATION_V1BETA1_VALIDATING_WEBHOOK)),
    ],
};

pub(super) static ADMISSIONREGISTRATION_V1BETA1_MUTATING_WEBHOOK: TypeDef = TypeDef {
    name: "MutatingWebhook",
    fields: &[
        f("matchConditions", MERGE, Some("name"), MAP, &["name"], None),
    ],
};

pub(super) static ADMISSIONREGISTRATION_V1BETA1_MUTATING_WEBHOOK_CONFIGURATION: TypeDef = TypeDef {
    name: "MutatingWebhookConfiguration",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
        f("webhooks", MERGE, Some("name"), MAP, &["name"], Some(&ADMISSIONREGISTRATION_V1BETA1_MUTATING_WEBHOOK)),
    ],
};

pub(super) static ADMISSIONREGISTRATION_V1BETA1_MUTATING_ADMISSION_POLICY_SPEC: TypeDef = TypeDef {
    name: "MutatingAdmissionPolicySpec",
    fields: &[
        f("matchConditions", MERGE, Some("name"), MAP, &["name"], None),
    ],
};

pub(super) static ADMISSIONREGISTRATION_V1BETA1_MUTATING_ADMISSION_POLICY: TypeDef = TypeDef {
    name: "MutatingAdmissionPolicy",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
        f("spec", DEFAULT, None, NONE, &[], Some(&ADMISSIONREGISTRATION_V1BETA1_MUTATING_ADMISSION_POLICY_SPEC)),
    ],
};

pub(super) static ADMISSIONREGISTRATION_V1BETA1_MUTATING_ADMISSION_POLICY_BINDING: TypeDef = TypeDef {
    name: "MutatingAdmissionPolicyBinding",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static APIDISCOVERY_V2_API_GROUP_DISCOVERY: TypeDef = TypeDef {
    name: "APIGroupDiscovery",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static APIDISCOVERY_V2BETA1_API_GROUP_DISCOVERY: TypeDef = TypeDef {
    name: "APIGroupDiscovery",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static APISERVERINTERNAL_V1ALPHA1_STORAGE_VERSION: TypeDef = TypeDef {
    name: "StorageVersion",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static CORE_V1_PERSISTENT_VOLUME_CLAIM_TEMPLATE: TypeDef = TypeDef {
    name: "PersistentVolumeClaimTemplate",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static CORE_V1_EPHEMERAL_VOLUME_SOURCE: TypeDef = TypeDef {
    name: "EphemeralVolumeSource",
    fields: &[
        f("volumeClaimTemplate", DEFAULT, None, NONE, &[], Some(&CORE_V1_PERSISTENT_VOLUME_CLAIM_TEMPLATE)),
    ],
};

pub(super) static CORE_V1_VOLUME: TypeDef = TypeDef {
    name: "Volume",
    fields: &[
        f("ephemeral", DEFAULT, None, NONE, &[], Some(&CORE_V1_EPHEMERAL_VOLUME_SOURCE)),
    ],
};

pub(super) static CORE_V1_CONTAINER: TypeDef = TypeDef {
    name: "Container",
    fields: &[
        f("ports", MERGE, Some("containerPort"), MAP, &["containerPort", "protocol"], None),
        f("env", MERGE, Some("name"), MAP, &["name"], None),
        f("volumeMounts", MERGE, Some("mountPath"), MAP, &["mountPath"], None),
        f("volumeDevices", MERGE, Some("devicePath"), MAP, &["devicePath"], None),
    ],
};

pub(super) static CORE_V1_EPHEMERAL_CONTAINER: TypeDef = TypeDef {
    name: "EphemeralContainer",
    fields: &[
        f("ports", MERGE, Some("containerPort"), MAP, &["containerPort", "protocol"], None),
        f("env", MERGE, Some("name"), MAP, &["name"], None),
        f("volumeMounts", MERGE, Some("mountPath"), MAP, &["mountPath"], None),
        f("volumeDevices", MERGE, Some("devicePath"), MAP, &["devicePath"], None),
    ],
};

pub(super) static CORE_V1_POD_SPEC: TypeDef = TypeDef {
    name: "PodSpec",
    fields: &[
        f("volumes", MERGE_RETAIN, Some("name"), MAP, &["name"], Some(&CORE_V1_VOLUME)),
        f("initContainers", MERGE, Some("name"), MAP, &["name"], Some(&CORE_V1_CONTAINER)),
        f("containers", MERGE, Some("name"), MAP, &["name"], Some(&CORE_V1_CONTAINER)),
        f("ephemeralContainers", MERGE, Some("name"), MAP, &["name"], Some(&CORE_V1_EPHEMERAL_CONTAINER)),
        f("imagePullSecrets", MERGE, Some("name"), MAP, &["name"], None),
        f("hostAliases", MERGE, Some("ip"), MAP, &["ip"], None),
        f("topologySpreadConstraints", MERGE, Some("topologyKey"), MAP, &["topologyKey", "whenUnsatisfiable"], None),
        f("schedulingGates", MERGE, Some("name"), MAP, &["name"], None),
        f("resourceClaims", MERGE_RETAIN, Some("name"), MAP, &["name"], None),
    ],
};

pub(super) static CORE_V1_POD_TEMPLATE_SPEC: TypeDef = TypeDef {
    name: "PodTemplateSpec",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
        f("spec", DEFAULT, None, NONE, &[], Some(&CORE_V1_POD_SPEC)),
    ],
};

pub(super) static CORE_V1_PERSISTENT_VOLUME_CLAIM_STATUS: TypeDef = TypeDef {
    name: "PersistentVolumeClaimStatus",
    fields: &[
        f("conditions", MERGE, Some("type"), MAP, &["type"], None),
    ],
};

pub(super) static CORE_V1_PERSISTENT_VOLUME_CLAIM: TypeDef = TypeDef {
    name: "PersistentVolumeClaim",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
        f("status", DEFAULT, None, NONE, &[], Some(&CORE_V1_PERSISTENT_VOLUME_CLAIM_STATUS)),
    ],
};

pub(super) static APPS_V1_STATEFUL_SET_SPEC: TypeDef = TypeDef {
    name: "StatefulSetSpec",
    fields: &[
        f("template", DEFAULT, None, NONE, &[], Some(&CORE_V1_POD_TEMPLATE_SPEC)),
        f("volumeClaimTemplates", DEFAULT, None, ATOMIC, &[], Some(&CORE_V1_PERSISTENT_VOLUME_CLAIM)),
    ],
};

pub(super) static APPS_V1_STATEFUL_SET_STATUS: TypeDef = TypeDef {
    name: "StatefulSetStatus",
    fields: &[
        f("conditions", MERGE, Some("type"), MAP, &["type"], None),
    ],
};

pub(super) static APPS_V1_STATEFUL_SET: TypeDef = TypeDef {
    name: "StatefulSet",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
        f("spec", DEFAULT, None, NONE, &[], Some(&APPS_V1_STATEFUL_SET_SPEC)),
        f("status", DEFAULT, None, NONE, &[], Some(&APPS_V1_STATEFUL_SET_STATUS)),
    ],
};

pub(super) static APPS_V1_DEPLOYMENT_SPEC: TypeDef = TypeDef {
    name: "DeploymentSpec",
    fields: &[
        f("template", DEFAULT, None, NONE, &[], Some(&CORE_V1_POD_TEMPLATE_SPEC)),
        f("strategy", RETAIN, None, NONE, &[], None),
    ],
};

pub(super) static APPS_V1_DEPLOYMENT_STATUS: TypeDef = TypeDef {
    name: "DeploymentStatus",
    fields: &[
        f("conditions", MERGE, Some("type"), MAP, &["type"], None),
    ],
};

pub(super) static APPS_V1_DEPLOYMENT: TypeDef = TypeDef {
    name: "Deployment",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
        f("spec", DEFAULT, None, NONE, &[], Some(&APPS_V1_DEPLOYMENT_SPEC)),
        f("status", DEFAULT, None, NONE, &[], Some(&APPS_V1_DEPLOYMENT_STATUS)),
    ],
};

pub(super) static APPS_V1_DAEMON_SET_SPEC: TypeDef = TypeDef {
    name: "DaemonSetSpec",
    fields: &[
        f("template", DEFAULT, None, NONE, &[], Some(&CORE_V1_POD_TEMPLATE_SPEC)),
    ],
};

pub(super) static APPS_V1_DAEMON_SET_STATUS: TypeDef = TypeDef {
    name: "DaemonSetStatus",
    fields: &[
        f("conditions", MERGE, Some("type"), MAP, &["type"], None),
    ],
};

pub(super) static APPS_V1_DAEMON_SET: TypeDef = TypeDef {
    name: "DaemonSet",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
        f("spec", DEFAULT, None, NONE, &[], Some(&APPS_V1_DAEMON_SET_SPEC)),
        f("status", DEFAULT, None, NONE, &[], Some(&APPS_V1_DAEMON_SET_STATUS)),
    ],
};

pub(super) static APPS_V1_REPLICA_SET_SPEC: TypeDef = TypeDef {
    name: "ReplicaSetSpec",
    fields: &[
        f("template", DEFAULT, None, NONE, &[], Some(&CORE_V1_POD_TEMPLATE_SPEC)),
    ],
};

pub(super) static APPS_V1_REPLICA_SET_STATUS: TypeDef = TypeDef {
    name: "ReplicaSetStatus",
    fields: &[
        f("conditions", MERGE, Some("type"), MAP, &["type"], None),
    ],
};

pub(super) static APPS_V1_REPLICA_SET: TypeDef = TypeDef {
    name: "ReplicaSet",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
        f("spec", DEFAULT, None, NONE, &[], Some(&APPS_V1_REPLICA_SET_SPEC)),
        f("status", DEFAULT, None, NONE, &[], Some(&APPS_V1_REPLICA_SET_STATUS)),
    ],
};

pub(super) static APPS_V1_CONTROLLER_REVISION: TypeDef = TypeDef {
    name: "ControllerRevision",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static APPS_V1BETA1_SCALE: TypeDef = TypeDef {
    name: "Scale",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static APPS_V1BETA1_STATEFUL_SET_SPEC: TypeDef = TypeDef {
    name: "StatefulSetSpec",
    fields: &[
        f("template", DEFAULT, None, NONE, &[], Some(&CORE_V1_POD_TEMPLATE_SPEC)),
        f("volumeClaimTemplates", DEFAULT, None, ATOMIC, &[], Some(&CORE_V1_PERSISTENT_VOLUME_CLAIM)),
    ],
};

pub(super) static APPS_V1BETA1_STATEFUL_SET_STATUS: TypeDef = TypeDef {
    name: "StatefulSetStatus",
    fields: &[
        f("conditions", MERGE, Some("type"), MAP, &["type"], None),
    ],
};

pub(super) static APPS_V1BETA1_STATEFUL_SET: TypeDef = TypeDef {
    name: "StatefulSet",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
        f("spec", DEFAULT, None, NONE, &[], Some(&APPS_V1BETA1_STATEFUL_SET_SPEC)),
        f("status", DEFAULT, None, NONE, &[], Some(&APPS_V1BETA1_STATEFUL_SET_STATUS)),
    ],
};

pub(super) static APPS_V1BETA1_DEPLOYMENT_SPEC: TypeDef = TypeDef {
    name: "DeploymentSpec",
    fields: &[
        f("template", DEFAULT, None, NONE, &[], Some(&CORE_V1_POD_TEMPLATE_SPEC)),
        f("strategy", RETAIN, None, NONE, &[], None),
    ],
};

pub(super) static APPS_V1BETA1_DEPLOYMENT_STATUS: TypeDef = TypeDef {
    name: "DeploymentStatus",
    fields: &[
        f("conditions", MERGE, Some("type"), MAP, &["type"], None),
    ],
};

pub(super) static APPS_V1BETA1_DEPLOYMENT: TypeDef = TypeDef {
    name: "Deployment",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
        f("spec", DEFAULT, None, NONE, &[], Some(&APPS_V1BETA1_DEPLOYMENT_SPEC)),
        f("status", DEFAULT, None, NONE, &[], Some(&APPS_V1BETA1_DEPLOYMENT_STATUS)),
    ],
};

pub(super) static APPS_V1BETA1_CONTROLLER_REVISION: TypeDef = TypeDef {
    name: "ControllerRevision",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static APPS_V1BETA2_SCALE: TypeDef = TypeDef {
    name: "Scale",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static APPS_V1BETA2_STATEFUL_SET_SPEC: TypeDef = TypeDef {
    name: "StatefulSetSpec",
    fields: &[
        f("template", DEFAULT, None, NONE, &[], Some(&CORE_V1_POD_TEMPLATE_SPEC)),
        f("volumeClaimTemplates", DEFAULT, None, ATOMIC, &[], Some(&CORE_V1_PERSISTENT_VOLUME_CLAIM)),
    ],
};

pub(super) static APPS_V1BETA2_STATEFUL_SET_STATUS: TypeDef = TypeDef {
    name: "StatefulSetStatus",
    fields: &[
        f("conditions", MERGE, Some("type"), MAP, &["type"], None),
    ],
};

pub(super) static APPS_V1BETA2_STATEFUL_SET: TypeDef = TypeDef {
    name: "StatefulSet",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
        f("spec", DEFAULT, None, NONE, &[], Some(&APPS_V1BETA2_STATEFUL_SET_SPEC)),
        f("status", DEFAULT, None, NONE, &[], Some(&APPS_V1BETA2_STATEFUL_SET_STATUS)),
    ],
};

pub(super) static APPS_V1BETA2_DEPLOYMENT_SPEC: TypeDef = TypeDef {
    name: "DeploymentSpec",
    fields: &[
        f("template", DEFAULT, None, NONE, &[], Some(&CORE_V1_POD_TEMPLATE_SPEC)),
        f("strategy", RETAIN, None, NONE, &[], None),
    ],
};

pub(super) static APPS_V1BETA2_DEPLOYMENT_STATUS: TypeDef = TypeDef {
    name: "DeploymentStatus",
    fields: &[
        f("conditions", MERGE, Some("type"), MAP, &["type"], None),
    ],
};

pub(super) static APPS_V1BETA2_DEPLOYMENT: TypeDef = TypeDef {
    name: "Deployment",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
        f("spec", DEFAULT, None, NONE, &[], Some(&APPS_V1BETA2_DEPLOYMENT_SPEC)),
        f("status", DEFAULT, None, NONE, &[], Some(&APPS_V1BETA2_DEPLOYMENT_STATUS)),
    ],
};

pub(super) static APPS_V1BETA2_DAEMON_SET_SPEC: TypeDef = TypeDef {
    name: "DaemonSetSpec",
    fields: &[
        f("template", DEFAULT, None, NONE, &[], Some(&CORE_V1_POD_TEMPLATE_SPEC)),
    ],
};

pub(super) static APPS_V1BETA2_DAEMON_SET_STATUS: TypeDef = TypeDef {
    name: "DaemonSetStatus",
    fields: &[
        f("conditions", MERGE, Some("type"), MAP, &["type"], None),
    ],
};

pub(super) static APPS_V1BETA2_DAEMON_SET: TypeDef = TypeDef {
    name: "DaemonSet",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
        f("spec", DEFAULT, None, NONE, &[], Some(&APPS_V1BETA2_DAEMON_SET_SPEC)),
        f("status", DEFAULT, None, NONE, &[], Some(&APPS_V1BETA2_DAEMON_SET_STATUS)),
    ],
};

pub(super) static APPS_V1BETA2_REPLICA_SET_SPEC: TypeDef = TypeDef {
    name: "ReplicaSetSpec",
    fields: &[
        f("template", DEFAULT, None, NONE, &[], Some(&CORE_V1_POD_TEMPLATE_SPEC)),
    ],
};

pub(super) static APPS_V1BETA2_REPLICA_SET_STATUS: TypeDef = TypeDef {
    name: "ReplicaSetStatus",
    fields: &[
        f("conditions", MERGE, Some("type"), MAP, &["type"], None),
    ],
};

pub(super) static APPS_V1BETA2_REPLICA_SET: TypeDef = TypeDef {
    name: "ReplicaSet",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
        f("spec", DEFAULT, None, NONE, &[], Some(&APPS_V1BETA2_REPLICA_SET_SPEC)),
        f("status", DEFAULT, None, NONE, &[], Some(&APPS_V1BETA2_REPLICA_SET_STATUS)),
    ],
};

pub(super) static APPS_V1BETA2_CONTROLLER_REVISION: TypeDef = TypeDef {
    name: "ControllerRevision",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static AUTHENTICATION_V1_TOKEN_REVIEW: TypeDef = TypeDef {
    name: "TokenReview",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static AUTHENTICATION_V1_TOKEN_REQUEST: TypeDef = TypeDef {
    name: "TokenRequest",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static AUTHENTICATION_V1_SELF_SUBJECT_REVIEW: TypeDef = TypeDef {
    name: "SelfSubjectReview",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static AUTHENTICATION_V1ALPHA1_SELF_SUBJECT_REVIEW: TypeDef = TypeDef {
    name: "SelfSubjectReview",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static AUTHENTICATION_V1BETA1_TOKEN_REVIEW: TypeDef = TypeDef {
    name: "TokenReview",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static AUTHENTICATION_V1BETA1_SELF_SUBJECT_REVIEW: TypeDef = TypeDef {
    name: "SelfSubjectReview",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static AUTHORIZATION_V1_SUBJECT_ACCESS_REVIEW: TypeDef = TypeDef {
    name: "SubjectAccessReview",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static AUTHORIZATION_V1_SELF_SUBJECT_ACCESS_REVIEW: TypeDef = TypeDef {
    name: "SelfSubjectAccessReview",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static AUTHORIZATION_V1_LOCAL_SUBJECT_ACCESS_REVIEW: TypeDef = TypeDef {
    name: "LocalSubjectAccessReview",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static AUTHORIZATION_V1_SELF_SUBJECT_RULES_REVIEW: TypeDef = TypeDef {
    name: "SelfSubjectRulesReview",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static AUTHORIZATION_V1BETA1_SUBJECT_ACCESS_REVIEW: TypeDef = TypeDef {
    name: "SubjectAccessReview",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static AUTHORIZATION_V1BETA1_SELF_SUBJECT_ACCESS_REVIEW: TypeDef = TypeDef {
    name: "SelfSubjectAccessReview",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static AUTHORIZATION_V1BETA1_LOCAL_SUBJECT_ACCESS_REVIEW: TypeDef = TypeDef {
    name: "LocalSubjectAccessReview",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static AUTHORIZATION_V1BETA1_SELF_SUBJECT_RULES_REVIEW: TypeDef = TypeDef {
    name: "SelfSubjectRulesReview",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static AUTOSCALING_V1_HORIZONTAL_POD_AUTOSCALER: TypeDef = TypeDef {
    name: "HorizontalPodAutoscaler",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static AUTOSCALING_V1_SCALE: TypeDef = TypeDef {
    name: "Scale",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static AUTOSCALING_V2_HORIZONTAL_POD_AUTOSCALER_STATUS: TypeDef = TypeDef {
    name: "HorizontalPodAutoscalerStatus",
    fields: &[
        f("conditions", MERGE, Some("type"), MAP, &["type"], None),
    ],
};

pub(super) static AUTOSCALING_V2_HORIZONTAL_POD_AUTOSCALER: TypeDef = TypeDef {
    name: "HorizontalPodAutoscaler",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
        f("status", DEFAULT, None, NONE, &[], Some(&AUTOSCALING_V2_HORIZONTAL_POD_AUTOSCALER_STATUS)),
    ],
};

pub(super) static AUTOSCALING_V2BETA1_HORIZONTAL_POD_AUTOSCALER: TypeDef = TypeDef {
    name: "HorizontalPodAutoscaler",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static AUTOSCALING_V2BETA2_HORIZONTAL_POD_AUTOSCALER: TypeDef = TypeDef {
    name: "HorizontalPodAutoscaler",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static BATCH_V1_JOB_SPEC: TypeDef = TypeDef {
    name: "JobSpec",
    fields: &[
        f("template", DEFAULT, None, NONE, &[], Some(&CORE_V1_POD_TEMPLATE_SPEC)),
    ],
};

pub(super) static BATCH_V1_JOB_STATUS: TypeDef = TypeDef {
    name: "JobStatus",
    fields: &[
        f("conditions", MERGE, Some("type"), ATOMIC, &[], None),
    ],
};

pub(super) static BATCH_V1_JOB: TypeDef = TypeDef {
    name: "Job",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
        f("spec", DEFAULT, None, NONE, &[], Some(&BATCH_V1_JOB_SPEC)),
        f("status", DEFAULT, None, NONE, &[], Some(&BATCH_V1_JOB_STATUS)),
    ],
};

pub(super) static BATCH_V1_JOB_TEMPLATE_SPEC: TypeDef = TypeDef {
    name: "JobTemplateSpec",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
        f("spec", DEFAULT, None, NONE, &[], Some(&BATCH_V1_JOB_SPEC)),
    ],
};

pub(super) static BATCH_V1_CRON_JOB_SPEC: TypeDef = TypeDef {
    name: "CronJobSpec",
    fields: &[
        f("jobTemplate", DEFAULT, None, NONE, &[], Some(&BATCH_V1_JOB_TEMPLATE_SPEC)),
    ],
};

pub(super) static BATCH_V1_CRON_JOB: TypeDef = TypeDef {
    name: "CronJob",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
        f("spec", DEFAULT, None, NONE, &[], Some(&BATCH_V1_CRON_JOB_SPEC)),
    ],
};

pub(super) static BATCH_V1BETA1_JOB_TEMPLATE_SPEC: TypeDef = TypeDef {
    name: "JobTemplateSpec",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
        f("spec", DEFAULT, None, NONE, &[], Some(&BATCH_V1_JOB_SPEC)),
    ],
};

pub(super) static BATCH_V1BETA1_CRON_JOB_SPEC: TypeDef = TypeDef {
    name: "CronJobSpec",
    fields: &[
        f("jobTemplate", DEFAULT, None, NONE, &[], Some(&BATCH_V1BETA1_JOB_TEMPLATE_SPEC)),
    ],
};

pub(super) static BATCH_V1BETA1_CRON_JOB: TypeDef = TypeDef {
    name: "CronJob",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
        f("spec", DEFAULT, None, NONE, &[], Some(&BATCH_V1BETA1_CRON_JOB_SPEC)),
    ],
};

pub(super) static CERTIFICATES_V1_CERTIFICATE_SIGNING_REQUEST: TypeDef = TypeDef {
    name: "CertificateSigningRequest",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static CERTIFICATES_V1ALPHA1_CLUSTER_TRUST_BUNDLE: TypeDef = TypeDef {
    name: "ClusterTrustBundle",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static CERTIFICATES_V1BETA1_CERTIFICATE_SIGNING_REQUEST: TypeDef = TypeDef {
    name: "CertificateSigningRequest",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static CERTIFICATES_V1BETA1_CLUSTER_TRUST_BUNDLE: TypeDef = TypeDef {
    name: "ClusterTrustBundle",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static CERTIFICATES_V1BETA1_POD_CERTIFICATE_REQUEST_STATUS: TypeDef = TypeDef {
    name: "PodCertificateRequestStatus",
    fields: &[
        f("conditions", MERGE, Some("type"), MAP, &["type"], None),
    ],
};

pub(super) static CERTIFICATES_V1BETA1_POD_CERTIFICATE_REQUEST: TypeDef = TypeDef {
    name: "PodCertificateRequest",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
        f("status", DEFAULT, None, NONE, &[], Some(&CERTIFICATES_V1BETA1_POD_CERTIFICATE_REQUEST_STATUS)),
    ],
};

pub(super) static COORDINATION_V1_LEASE: TypeDef = TypeDef {
    name: "Lease",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static COORDINATION_V1ALPHA2_LEASE_CANDIDATE: TypeDef = TypeDef {
    name: "LeaseCandidate",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static COORDINATION_V1BETA1_LEASE: TypeDef = TypeDef {
    name: "Lease",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static COORDINATION_V1BETA1_LEASE_CANDIDATE: TypeDef = TypeDef {
    name: "LeaseCandidate",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static CORE_V1_PERSISTENT_VOLUME: TypeDef = TypeDef {
    name: "PersistentVolume",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static CORE_V1_CONTAINER_STATUS: TypeDef = TypeDef {
    name: "ContainerStatus",
    fields: &[
        f("volumeMounts", MERGE, Some("mountPath"), MAP, &["mountPath"], None),
        f("allocatedResourcesStatus", MERGE, Some("name"), MAP, &["name"], None),
    ],
};

pub(super) static CORE_V1_POD_STATUS: TypeDef = TypeDef {
    name: "PodStatus",
    fields: &[
        f("conditions", MERGE, Some("type"), MAP, &["type"], None),
        f("hostIPs", MERGE, Some("ip"), ATOMIC, &[], None),
        f("podIPs", MERGE, Some("ip"), MAP, &["ip"], None),
        f("initContainerStatuses", DEFAULT, None, ATOMIC, &[], Some(&CORE_V1_CONTAINER_STATUS)),
        f("containerStatuses", DEFAULT, None, ATOMIC, &[], Some(&CORE_V1_CONTAINER_STATUS)),
        f("ephemeralContainerStatuses", DEFAULT, None, ATOMIC, &[], Some(&CORE_V1_CONTAINER_STATUS)),
        f("resourceClaimStatuses", MERGE_RETAIN, Some("name"), MAP, &["name"], None),
    ],
};

pub(super) static CORE_V1_POD_STATUS_RESULT: TypeDef = TypeDef {
    name: "PodStatusResult",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
        f("status", DEFAULT, None, NONE, &[], Some(&CORE_V1_POD_STATUS)),
    ],
};

pub(super) static CORE_V1_POD: TypeDef = TypeDef {
    name: "Pod",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
        f("spec", DEFAULT, None, NONE, &[], Some(&CORE_V1_POD_SPEC)),
        f("status", DEFAULT, None, NONE, &[], Some(&CORE_V1_POD_STATUS)),
    ],
};

pub(super) static CORE_V1_POD_TEMPLATE: TypeDef = TypeDef {
    name: "PodTemplate",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
        f("template", DEFAULT, None, NONE, &[], Some(&CORE_V1_POD_TEMPLATE_SPEC)),
    ],
};

pub(super) static CORE_V1_REPLICATION_CONTROLLER_SPEC: TypeDef = TypeDef {
    name: "ReplicationControllerSpec",
    fields: &[
        f("template", DEFAULT, None, NONE, &[], Some(&CORE_V1_POD_TEMPLATE_SPEC)),
    ],
};

pub(super) static CORE_V1_REPLICATION_CONTROLLER_STATUS: TypeDef = TypeDef {
    name: "ReplicationControllerStatus",
    fields: &[
        f("conditions", MERGE, Some("type"), MAP, &["type"], None),
    ],
};

pub(super) static CORE_V1_REPLICATION_CONTROLLER: TypeDef = TypeDef {
    name: "ReplicationController",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
        f("spec", DEFAULT, None, NONE, &[], Some(&CORE_V1_REPLICATION_CONTROLLER_SPEC)),
        f("status", DEFAULT, None, NONE, &[], Some(&CORE_V1_REPLICATION_CONTROLLER_STATUS)),
    ],
};

pub(super) static CORE_V1_SERVICE_SPEC: TypeDef = TypeDef {
    name: "ServiceSpec",
    fields: &[
        f("ports", MERGE, Some("port"), MAP, &["port", "protocol"], None),
    ],
};

pub(super) static CORE_V1_SERVICE_STATUS: TypeDef = TypeDef {
    name: "ServiceStatus",
    fields: &[
        f("conditions", MERGE, Some("type"), MAP, &["type"], None),
    ],
};

pub(super) static CORE_V1_SERVICE: TypeDef = TypeDef {
    name: "Service",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
        f("spec", DEFAULT, None, NONE, &[], Some(&CORE_V1_SERVICE_SPEC)),
        f("status", DEFAULT, None, NONE, &[], Some(&CORE_V1_SERVICE_STATUS)),
    ],
};

pub(super) static CORE_V1_SERVICE_ACCOUNT: TypeDef = TypeDef {
    name: "ServiceAccount",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
        f("secrets", MERGE, Some("name"), MAP, &["name"], None),
    ],
};

pub(super) static CORE_V1_ENDPOINTS: TypeDef = TypeDef {
    name: "Endpoints",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static CORE_V1_NODE_SPEC: TypeDef = TypeDef {
    name: "NodeSpec",
    fields: &[
        f("podCIDRs", MERGE, None, SET, &[], None),
    ],
};

pub(super) static CORE_V1_NODE_STATUS: TypeDef = TypeDef {
    name: "NodeStatus",
    fields: &[
        f("conditions", MERGE, Some("type"), MAP, &["type"], None),
        f("addresses", MERGE, Some("type"), MAP, &["type"], None),
    ],
};

pub(super) static CORE_V1_NODE: TypeDef = TypeDef {
    name: "Node",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
        f("spec", DEFAULT, None, NONE, &[], Some(&CORE_V1_NODE_SPEC)),
        f("status", DEFAULT, None, NONE, &[], Some(&CORE_V1_NODE_STATUS)),
    ],
};

pub(super) static CORE_V1_NAMESPACE_STATUS: TypeDef = TypeDef {
    name: "NamespaceStatus",
    fields: &[
        f("conditions", MERGE, Some("type"), MAP, &["type"], None),
    ],
};

pub(super) static CORE_V1_NAMESPACE: TypeDef = TypeDef {
    name: "Namespace",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
        f("status", DEFAULT, None, NONE, &[], Some(&CORE_V1_NAMESPACE_STATUS)),
    ],
};

pub(super) static CORE_V1_BINDING: TypeDef = TypeDef {
    name: "Binding",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static CORE_V1_EVENT: TypeDef = TypeDef {
    name: "Event",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static CORE_V1_LIMIT_RANGE: TypeDef = TypeDef {
    name: "LimitRange",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static CORE_V1_RESOURCE_QUOTA: TypeDef = TypeDef {
    name: "ResourceQuota",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static CORE_V1_SECRET: TypeDef = TypeDef {
    name: "Secret",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static CORE_V1_CONFIG_MAP: TypeDef = TypeDef {
    name: "ConfigMap",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static CORE_V1_COMPONENT_STATUS: TypeDef = TypeDef {
    name: "ComponentStatus",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
        f("conditions", MERGE, Some("type"), MAP, &["type"], None),
    ],
};

pub(super) static CORE_V1_RANGE_ALLOCATION: TypeDef = TypeDef {
    name: "RangeAllocation",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static DISCOVERY_V1_ENDPOINT_SLICE: TypeDef = TypeDef {
    name: "EndpointSlice",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static DISCOVERY_V1BETA1_ENDPOINT_SLICE: TypeDef = TypeDef {
    name: "EndpointSlice",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static EVENTS_V1_EVENT: TypeDef = TypeDef {
    name: "Event",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static EVENTS_V1BETA1_EVENT: TypeDef = TypeDef {
    name: "Event",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static EXTENSIONS_V1BETA1_SCALE: TypeDef = TypeDef {
    name: "Scale",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static EXTENSIONS_V1BETA1_DEPLOYMENT_SPEC: TypeDef = TypeDef {
    name: "DeploymentSpec",
    fields: &[
        f("template", DEFAULT, None, NONE, &[], Some(&CORE_V1_POD_TEMPLATE_SPEC)),
        f("strategy", RETAIN, None, NONE, &[], None),
    ],
};

pub(super) static EXTENSIONS_V1BETA1_DEPLOYMENT_STATUS: TypeDef = TypeDef {
    name: "DeploymentStatus",
    fields: &[
        f("conditions", MERGE, Some("type"), MAP, &["type"], None),
    ],
};

pub(super) static EXTENSIONS_V1BETA1_DEPLOYMENT: TypeDef = TypeDef {
    name: "Deployment",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
        f("spec", DEFAULT, None, NONE, &[], Some(&EXTENSIONS_V1BETA1_DEPLOYMENT_SPEC)),
        f("status", DEFAULT, None, NONE, &[], Some(&EXTENSIONS_V1BETA1_DEPLOYMENT_STATUS)),
    ],
};

pub(super) static EXTENSIONS_V1BETA1_DAEMON_SET_SPEC: TypeDef = TypeDef {
    name: "DaemonSetSpec",
    fields: &[
        f("template", DEFAULT, None, NONE, &[], Some(&CORE_V1_POD_TEMPLATE_SPEC)),
    ],
};

pub(super) static EXTENSIONS_V1BETA1_DAEMON_SET_STATUS: TypeDef = TypeDef {
    name: "DaemonSetStatus",
    fields: &[
        f("conditions", MERGE, Some("type"), MAP, &["type"], None),
    ],
};

pub(super) static EXTENSIONS_V1BETA1_DAEMON_SET: TypeDef = TypeDef {
    name: "DaemonSet",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
        f("spec", DEFAULT, None, NONE, &[], Some(&EXTENSIONS_V1BETA1_DAEMON_SET_SPEC)),
        f("status", DEFAULT, None, NONE, &[], Some(&EXTENSIONS_V1BETA1_DAEMON_SET_STATUS)),
    ],
};

pub(super) static EXTENSIONS_V1BETA1_INGRESS: TypeDef = TypeDef {
    name: "Ingress",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static EXTENSIONS_V1BETA1_REPLICA_SET_SPEC: TypeDef = TypeDef {
    name: "ReplicaSetSpec",
    fields: &[
        f("template", DEFAULT, None, NONE, &[], Some(&CORE_V1_POD_TEMPLATE_SPEC)),
    ],
};

pub(super) static EXTENSIONS_V1BETA1_REPLICA_SET_STATUS: TypeDef = TypeDef {
    name: "ReplicaSetStatus",
    fields: &[
        f("conditions", MERGE, Some("type"), MAP, &["type"], None),
    ],
};

pub(super) static EXTENSIONS_V1BETA1_REPLICA_SET: TypeDef = TypeDef {
    name: "ReplicaSet",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
        f("spec", DEFAULT, None, NONE, &[], Some(&EXTENSIONS_V1BETA1_REPLICA_SET_SPEC)),
        f("status", DEFAULT, None, NONE, &[], Some(&EXTENSIONS_V1BETA1_REPLICA_SET_STATUS)),
    ],
};

pub(super) static EXTENSIONS_V1BETA1_NETWORK_POLICY: TypeDef = TypeDef {
    name: "NetworkPolicy",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static FLOWCONTROL_V1_FLOW_SCHEMA_STATUS: TypeDef = TypeDef {
    name: "FlowSchemaStatus",
    fields: &[
        f("conditions", MERGE, Some("type"), MAP, &["type"], None),
    ],
};

pub(super) static FLOWCONTROL_V1_FLOW_SCHEMA: TypeDef = TypeDef {
    name: "FlowSchema",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
        f("status", DEFAULT, None, NONE, &[], Some(&FLOWCONTROL_V1_FLOW_SCHEMA_STATUS)),
    ],
};

pub(super) static FLOWCONTROL_V1_PRIORITY_LEVEL_CONFIGURATION_STATUS: TypeDef = TypeDef {
    name: "PriorityLevelConfigurationStatus",
    fields: &[
        f("conditions", MERGE, Some("type"), MAP, &["type"], None),
    ],
};

pub(super) static FLOWCONTROL_V1_PRIORITY_LEVEL_CONFIGURATION: TypeDef = TypeDef {
    name: "PriorityLevelConfiguration",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
        f("status", DEFAULT, None, NONE, &[], Some(&FLOWCONTROL_V1_PRIORITY_LEVEL_CONFIGURATION_STATUS)),
    ],
};

pub(super) static FLOWCONTROL_V1BETA1_FLOW_SCHEMA: TypeDef = TypeDef {
    name: "FlowSchema",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static FLOWCONTROL_V1BETA1_PRIORITY_LEVEL_CONFIGURATION: TypeDef = TypeDef {
    name: "PriorityLevelConfiguration",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static FLOWCONTROL_V1BETA2_FLOW_SCHEMA: TypeDef = TypeDef {
    name: "FlowSchema",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static FLOWCONTROL_V1BETA2_PRIORITY_LEVEL_CONFIGURATION: TypeDef = TypeDef {
    name: "PriorityLevelConfiguration",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static FLOWCONTROL_V1BETA3_FLOW_SCHEMA_STATUS: TypeDef = TypeDef {
    name: "FlowSchemaStatus",
    fields: &[
        f("conditions", MERGE, Some("type"), MAP, &["type"], None),
    ],
};

pub(super) static FLOWCONTROL_V1BETA3_FLOW_SCHEMA: TypeDef = TypeDef {
    name: "FlowSchema",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
        f("status", DEFAULT, None, NONE, &[], Some(&FLOWCONTROL_V1BETA3_FLOW_SCHEMA_STATUS)),
    ],
};

pub(super) static FLOWCONTROL_V1BETA3_PRIORITY_LEVEL_CONFIGURATION_STATUS: TypeDef = TypeDef {
    name: "PriorityLevelConfigurationStatus",
    fields: &[
        f("conditions", MERGE, Some("type"), MAP, &["type"], None),
    ],
};

pub(super) static FLOWCONTROL_V1BETA3_PRIORITY_LEVEL_CONFIGURATION: TypeDef = TypeDef {
    name: "PriorityLevelConfiguration",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
        f("status", DEFAULT, None, NONE, &[], Some(&FLOWCONTROL_V1BETA3_PRIORITY_LEVEL_CONFIGURATION_STATUS)),
    ],
};

pub(super) static IMAGEPOLICY_V1ALPHA1_IMAGE_REVIEW: TypeDef = TypeDef {
    name: "ImageReview",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static NETWORKING_V1_NETWORK_POLICY: TypeDef = TypeDef {
    name: "NetworkPolicy",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static NETWORKING_V1_INGRESS: TypeDef = TypeDef {
    name: "Ingress",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static NETWORKING_V1_INGRESS_CLASS: TypeDef = TypeDef {
    name: "IngressClass",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static NETWORKING_V1_IP_ADDRESS: TypeDef = TypeDef {
    name: "IPAddress",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static NETWORKING_V1_SERVICE_CIDR_STATUS: TypeDef = TypeDef {
    name: "ServiceCIDRStatus",
    fields: &[
        f("conditions", MERGE, Some("type"), MAP, &["type"], None),
    ],
};

pub(super) static NETWORKING_V1_SERVICE_CIDR: TypeDef = TypeDef {
    name: "ServiceCIDR",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
        f("status", DEFAULT, None, NONE, &[], Some(&NETWORKING_V1_SERVICE_CIDR_STATUS)),
    ],
};

pub(super) static NETWORKING_V1BETA1_INGRESS: TypeDef = TypeDef {
    name: "Ingress",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static NETWORKING_V1BETA1_INGRESS_CLASS: TypeDef = TypeDef {
    name: "IngressClass",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static NETWORKING_V1BETA1_IP_ADDRESS: TypeDef = TypeDef {
    name: "IPAddress",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static NETWORKING_V1BETA1_SERVICE_CIDR_STATUS: TypeDef = TypeDef {
    name: "ServiceCIDRStatus",
    fields: &[
        f("conditions", MERGE, Some("type"), MAP, &["type"], None),
    ],
};

pub(super) static NETWORKING_V1BETA1_SERVICE_CIDR: TypeDef = TypeDef {
    name: "ServiceCIDR",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
        f("status", DEFAULT, None, NONE, &[], Some(&NETWORKING_V1BETA1_SERVICE_CIDR_STATUS)),
    ],
};

pub(super) static NODE_V1_RUNTIME_CLASS: TypeDef = TypeDef {
    name: "RuntimeClass",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static NODE_V1ALPHA1_RUNTIME_CLASS: TypeDef = TypeDef {
    name: "RuntimeClass",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static NODE_V1BETA1_RUNTIME_CLASS: TypeDef = TypeDef {
    name: "RuntimeClass",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static POLICY_V1_POD_DISRUPTION_BUDGET_SPEC: TypeDef = TypeDef {
    name: "PodDisruptionBudgetSpec",
    fields: &[
        f("selector", REPLACE, None, NONE, &[], None),
    ],
};

pub(super) static POLICY_V1_POD_DISRUPTION_BUDGET_STATUS: TypeDef = TypeDef {
    name: "PodDisruptionBudgetStatus",
    fields: &[
        f("conditions", MERGE, Some("type"), MAP, &["type"], None),
    ],
};

pub(super) static POLICY_V1_POD_DISRUPTION_BUDGET: TypeDef = TypeDef {
    name: "PodDisruptionBudget",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
        f("spec", DEFAULT, None, NONE, &[], Some(&POLICY_V1_POD_DISRUPTION_BUDGET_SPEC)),
        f("status", DEFAULT, None, NONE, &[], Some(&POLICY_V1_POD_DISRUPTION_BUDGET_STATUS)),
    ],
};

pub(super) static POLICY_V1_EVICTION: TypeDef = TypeDef {
    name: "Eviction",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static POLICY_V1BETA1_POD_DISRUPTION_BUDGET_STATUS: TypeDef = TypeDef {
    name: "PodDisruptionBudgetStatus",
    fields: &[
        f("conditions", MERGE, Some("type"), MAP, &["type"], None),
    ],
};

pub(super) static POLICY_V1BETA1_POD_DISRUPTION_BUDGET: TypeDef = TypeDef {
    name: "PodDisruptionBudget",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
        f("status", DEFAULT, None, NONE, &[], Some(&POLICY_V1BETA1_POD_DISRUPTION_BUDGET_STATUS)),
    ],
};

pub(super) static POLICY_V1BETA1_EVICTION: TypeDef = TypeDef {
    name: "Eviction",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static RBAC_V1_ROLE: TypeDef = TypeDef {
    name: "Role",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static RBAC_V1_ROLE_BINDING: TypeDef = TypeDef {
    name: "RoleBinding",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static RBAC_V1_CLUSTER_ROLE: TypeDef = TypeDef {
    name: "ClusterRole",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static RBAC_V1_CLUSTER_ROLE_BINDING: TypeDef = TypeDef {
    name: "ClusterRoleBinding",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static RBAC_V1ALPHA1_ROLE: TypeDef = TypeDef {
    name: "Role",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static RBAC_V1ALPHA1_ROLE_BINDING: TypeDef = TypeDef {
    name: "RoleBinding",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static RBAC_V1ALPHA1_CLUSTER_ROLE: TypeDef = TypeDef {
    name: "ClusterRole",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static RBAC_V1ALPHA1_CLUSTER_ROLE_BINDING: TypeDef = TypeDef {
    name: "ClusterRoleBinding",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static RBAC_V1BETA1_ROLE: TypeDef = TypeDef {
    name: "Role",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static RBAC_V1BETA1_ROLE_BINDING: TypeDef = TypeDef {
    name: "RoleBinding",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static RBAC_V1BETA1_CLUSTER_ROLE: TypeDef = TypeDef {
    name: "ClusterRole",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static RBAC_V1BETA1_CLUSTER_ROLE_BINDING: TypeDef = TypeDef {
    name: "ClusterRoleBinding",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static RESOURCE_V1_RESOURCE_SLICE: TypeDef = TypeDef {
    name: "ResourceSlice",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static RESOURCE_V1_RESOURCE_CLAIM_STATUS: TypeDef = TypeDef {
    name: "ResourceClaimStatus",
    fields: &[
        f("reservedFor", MERGE, Some("uid"), MAP, &["uid"], None),
    ],
};

pub(super) static RESOURCE_V1_RESOURCE_CLAIM: TypeDef = TypeDef {
    name: "ResourceClaim",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
        f("status", DEFAULT, None, NONE, &[], Some(&RESOURCE_V1_RESOURCE_CLAIM_STATUS)),
    ],
};

pub(super) static RESOURCE_V1_DEVICE_CLASS: TypeDef = TypeDef {
    name: "DeviceClass",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static RESOURCE_V1_RESOURCE_CLAIM_TEMPLATE_SPEC: TypeDef = TypeDef {
    name: "ResourceClaimTemplateSpec",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static RESOURCE_V1_RESOURCE_CLAIM_TEMPLATE: TypeDef = TypeDef {
    name: "ResourceClaimTemplate",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
        f("spec", DEFAULT, None, NONE, &[], Some(&RESOURCE_V1_RESOURCE_CLAIM_TEMPLATE_SPEC)),
    ],
};

pub(super) static RESOURCE_V1ALPHA3_DEVICE_TAINT_RULE_STATUS: TypeDef = TypeDef {
    name: "DeviceTaintRuleStatus",
    fields: &[
        f("conditions", MERGE, Some("type"), MAP, &["type"], None),
    ],
};

pub(super) static RESOURCE_V1ALPHA3_DEVICE_TAINT_RULE: TypeDef = TypeDef {
    name: "DeviceTaintRule",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
        f("status", DEFAULT, None, NONE, &[], Some(&RESOURCE_V1ALPHA3_DEVICE_TAINT_RULE_STATUS)),
    ],
};

pub(super) static RESOURCE_V1BETA1_RESOURCE_SLICE: TypeDef = TypeDef {
    name: "ResourceSlice",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static RESOURCE_V1BETA1_RESOURCE_CLAIM_STATUS: TypeDef = TypeDef {
    name: "ResourceClaimStatus",
    fields: &[
        f("reservedFor", MERGE, Some("uid"), MAP, &["uid"], None),
    ],
};

pub(super) static RESOURCE_V1BETA1_RESOURCE_CLAIM: TypeDef = TypeDef {
    name: "ResourceClaim",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
        f("status", DEFAULT, None, NONE, &[], Some(&RESOURCE_V1BETA1_RESOURCE_CLAIM_STATUS)),
    ],
};

pub(super) static RESOURCE_V1BETA1_DEVICE_CLASS: TypeDef = TypeDef {
    name: "DeviceClass",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static RESOURCE_V1BETA1_RESOURCE_CLAIM_TEMPLATE_SPEC: TypeDef = TypeDef {
    name: "ResourceClaimTemplateSpec",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static RESOURCE_V1BETA1_RESOURCE_CLAIM_TEMPLATE: TypeDef = TypeDef {
    name: "ResourceClaimTemplate",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
        f("spec", DEFAULT, None, NONE, &[], Some(&RESOURCE_V1BETA1_RESOURCE_CLAIM_TEMPLATE_SPEC)),
    ],
};

pub(super) static RESOURCE_V1BETA2_RESOURCE_SLICE: TypeDef = TypeDef {
    name: "ResourceSlice",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static RESOURCE_V1BETA2_RESOURCE_CLAIM_STATUS: TypeDef = TypeDef {
    name: "ResourceClaimStatus",
    fields: &[
        f("reservedFor", MERGE, Some("uid"), MAP, &["uid"], None),
    ],
};

pub(super) static RESOURCE_V1BETA2_RESOURCE_CLAIM: TypeDef = TypeDef {
    name: "ResourceClaim",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
        f("status", DEFAULT, None, NONE, &[], Some(&RESOURCE_V1BETA2_RESOURCE_CLAIM_STATUS)),
    ],
};

pub(super) static RESOURCE_V1BETA2_DEVICE_CLASS: TypeDef = TypeDef {
    name: "DeviceClass",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static RESOURCE_V1BETA2_RESOURCE_CLAIM_TEMPLATE_SPEC: TypeDef = TypeDef {
    name: "ResourceClaimTemplateSpec",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static RESOURCE_V1BETA2_RESOURCE_CLAIM_TEMPLATE: TypeDef = TypeDef {
    name: "ResourceClaimTemplate",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
        f("spec", DEFAULT, None, NONE, &[], Some(&RESOURCE_V1BETA2_RESOURCE_CLAIM_TEMPLATE_SPEC)),
    ],
};

pub(super) static SCHEDULING_V1_PRIORITY_CLASS: TypeDef = TypeDef {
    name: "PriorityClass",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static SCHEDULING_V1ALPHA1_PRIORITY_CLASS: TypeDef = TypeDef {
    name: "PriorityClass",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static SCHEDULING_V1ALPHA1_WORKLOAD: TypeDef = TypeDef {
    name: "Workload",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static SCHEDULING_V1BETA1_PRIORITY_CLASS: TypeDef = TypeDef {
    name: "PriorityClass",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static STORAGE_V1_STORAGE_CLASS: TypeDef = TypeDef {
    name: "StorageClass",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static STORAGE_V1_VOLUME_ATTACHMENT: TypeDef = TypeDef {
    name: "VolumeAttachment",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static STORAGE_V1_CSI_DRIVER: TypeDef = TypeDef {
    name: "CSIDriver",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static STORAGE_V1_CSI_NODE_SPEC: TypeDef = TypeDef {
    name: "CSINodeSpec",
    fields: &[
        f("drivers", MERGE, Some("name"), MAP, &["name"], None),
    ],
};

pub(super) static STORAGE_V1_CSI_NODE: TypeDef = TypeDef {
    name: "CSINode",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
        f("spec", DEFAULT, None, NONE, &[], Some(&STORAGE_V1_CSI_NODE_SPEC)),
    ],
};

pub(super) static STORAGE_V1_CSI_STORAGE_CAPACITY: TypeDef = TypeDef {
    name: "CSIStorageCapacity",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static STORAGE_V1_VOLUME_ATTRIBUTES_CLASS: TypeDef = TypeDef {
    name: "VolumeAttributesClass",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static STORAGE_V1ALPHA1_VOLUME_ATTACHMENT: TypeDef = TypeDef {
    name: "VolumeAttachment",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static STORAGE_V1ALPHA1_CSI_STORAGE_CAPACITY: TypeDef = TypeDef {
    name: "CSIStorageCapacity",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static STORAGE_V1ALPHA1_VOLUME_ATTRIBUTES_CLASS: TypeDef = TypeDef {
    name: "VolumeAttributesClass",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static STORAGE_V1BETA1_STORAGE_CLASS: TypeDef = TypeDef {
    name: "StorageClass",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static STORAGE_V1BETA1_VOLUME_ATTACHMENT: TypeDef = TypeDef {
    name: "VolumeAttachment",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static STORAGE_V1BETA1_CSI_DRIVER: TypeDef = TypeDef {
    name: "CSIDriver",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static STORAGE_V1BETA1_CSI_NODE_SPEC: TypeDef = TypeDef {
    name: "CSINodeSpec",
    fields: &[
        f("drivers", MERGE, Some("name"), MAP, &["name"], None),
    ],
};

pub(super) static STORAGE_V1BETA1_CSI_NODE: TypeDef = TypeDef {
    name: "CSINode",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
        f("spec", DEFAULT, None, NONE, &[], Some(&STORAGE_V1BETA1_CSI_NODE_SPEC)),
    ],
};

pub(super) static STORAGE_V1BETA1_CSI_STORAGE_CAPACITY: TypeDef = TypeDef {
    name: "CSIStorageCapacity",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static STORAGE_V1BETA1_VOLUME_ATTRIBUTES_CLASS: TypeDef = TypeDef {
    name: "VolumeAttributesClass",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

pub(super) static STORAGEMIGRATION_V1BETA1_STORAGE_VERSION_MIGRATION_STATUS: TypeDef = TypeDef {
    name: "StorageVersionMigrationStatus",
    fields: &[
        f("conditions", MERGE, Some("type"), MAP, &["type"], None),
    ],
};

pub(super) static STORAGEMIGRATION_V1BETA1_STORAGE_VERSION_MIGRATION: TypeDef = TypeDef {
    name: "StorageVersionMigration",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
        f("status", DEFAULT, None, NONE, &[], Some(&STORAGEMIGRATION_V1BETA1_STORAGE_VERSION_MIGRATION_STATUS)),
    ],
};

pub(super) static APIREGISTRATION_V1_API_SERVICE_STATUS: TypeDef = TypeDef {
    name: "APIServiceStatus",
    fields: &[
        f("conditions", MERGE, Some("type"), MAP, &["type"], None),
    ],
};

pub(super) static APIREGISTRATION_V1_API_SERVICE: TypeDef = TypeDef {
    name: "APIService",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
        f("status", DEFAULT, None, NONE, &[], Some(&APIREGISTRATION_V1_API_SERVICE_STATUS)),
    ],
};

pub(super) static APIEXTENSIONS_V1_CUSTOM_RESOURCE_DEFINITION: TypeDef = TypeDef {
    name: "CustomResourceDefinition",
    fields: &[
        f("metadata", DEFAULT, None, NONE, &[], Some(&META_V1_OBJECT_META)),
    ],
};

/// Every built-in kind: (group, version, kind, root type).
pub(super) static KINDS: &[(&str, &str, &str, &TypeDef)] = &[
    ("", "v1", "Binding", &CORE_V1_BINDING),
    ("", "v1", "ComponentStatus", &CORE_V1_COMPONENT_STATUS),
    ("", "v1", "ConfigMap", &CORE_V1_CONFIG_MAP),
    ("", "v1", "Endpoints", &CORE_V1_ENDPOINTS),
    ("", "v1", "Event", &CORE_V1_EVENT),
    ("", "v1", "LimitRange", &CORE_V1_LIMIT_RANGE),
    ("", "v1", "Namespace", &CORE_V1_NAMESPACE),
    ("", "v1", "Node", &CORE_V1_NODE),
    ("", "v1", "PersistentVolume", &CORE_V1_PERSISTENT_VOLUME),
    ("", "v1", "PersistentVolumeClaim", &CORE_V1_PERSISTENT_VOLUME_CLAIM),
    ("", "v1", "Pod", &CORE_V1_POD),
    ("", "v1", "PodStatusResult", &CORE_V1_POD_STATUS_RESULT),
    ("", "v1", "PodTemplate", &CORE_V1_POD_TEMPLATE),
    ("", "v1", "RangeAllocation", &CORE_V1_RANGE_ALLOCATION),
    ("", "v1", "ReplicationController", &CORE_V1_REPLICATION_CONTROLLER),
    ("", "v1", "ResourceQuota", &CORE_V1_RESOURCE_QUOTA),
    ("", "v1", "Secret", &CORE_V1_SECRET),
    ("", "v1", "Service", &CORE_V1_SERVICE),
    ("", "v1", "ServiceAccount", &CORE_V1_SERVICE_ACCOUNT),
    ("admissionregistration.k8s.io", "v1", "MutatingWebhookConfiguration", &ADMISSIONREGISTRATION_V1_MUTATING_WEBHOOK_CONFIGURATION),
    ("admissionregistration.k8s.io", "v1", "ValidatingAdmissionPolicy", &ADMISSIONREGISTRATION_V1_VALIDATING_ADMISSION_POLICY),
    ("admissionregistration.k8s.io", "v1", "ValidatingAdmissionPolicyBinding", &ADMISSIONREGISTRATION_V1_VALIDATING_ADMISSION_POLICY_BINDING),
    ("admissionregistration.k8s.io", "v1", "ValidatingWebhookConfiguration", &ADMISSIONREGISTRATION_V1_VALIDATING_WEBHOOK_CONFIGURATION),
    ("admissionregistration.k8s.io", "v1alpha1", "MutatingAdmissionPolicy", &ADMISSIONREGISTRATION_V1ALPHA1_MUTATING_ADMISSION_POLICY),
    ("admissionregistration.k8s.io", "v1alpha1", "MutatingAdmissionPolicyBinding", &ADMISSIONREGISTRATION_V1ALPHA1_MUTATING_ADMISSION_POLICY_BINDING),
    ("admissionregistration.k8s.io", "v1alpha1", "ValidatingAdmissionPolicy", &ADMISSIONREGISTRATION_V1ALPHA1_VALIDATING_ADMISSION_POLICY),
    ("admissionregistration.k8s.io", "v1alpha1", "ValidatingAdmissionPolicyBinding", &ADMISSIONREGISTRATION_V1ALPHA1_VALIDATING_ADMISSION_POLICY_BINDING),
    ("admissionregistration.k8s.io", "v1beta1", "MutatingAdmissionPolicy", &ADMISSIONREGISTRATION_V1BETA1_MUTATING_ADMISSION_POLICY),
    ("admissionregistration.k8s.io", "v1beta1", "MutatingAdmissionPolicyBinding", &ADMISSIONREGISTRATION_V1BETA1_MUTATING_ADMISSION_POLICY_BINDING),
    ("admissionregistration.k8s.io", "v1beta1", "MutatingWebhookConfiguration", &ADMISSIONREGISTRATION_V1BETA1_MUTATING_WEBHOOK_CONFIGURATION),
    ("admissionregistration.k8s.io", "v1beta1", "ValidatingAdmissionPolicy", &ADMISSIONREGISTRATION_V1BETA1_VALIDATING_ADMISSION_POLICY),
    ("admissionregistration.k8s.io", "v1beta1", "ValidatingAdmissionPolicyBinding", &ADMISSIONREGISTRATION_V1BETA1_VALIDATING_ADMISSION_POLICY_BINDING),
    ("admissionregistration.k8s.io", "v1beta1", "ValidatingWebhookConfiguration", &ADMISSIONREGISTRATION_V1BETA1_VALIDATING_WEBHOOK_CONFIGURATION),
    ("apidiscovery.k8s.io", "v2", "APIGroupDiscovery", &APIDISCOVERY_V2_API_GROUP_DISCOVERY),
    ("apidiscovery.k8s.io", "v2beta1", "APIGroupDiscovery", &APIDISCOVERY_V2BETA1_API_GROUP_DISCOVERY),
    ("apiextensions.k8s.io", "v1", "CustomResourceDefinition", &APIEXTENSIONS_V1_CUSTOM_RESOURCE_DEFINITION),
    ("apiregistration.k8s.io", "v1", "APIService", &APIREGISTRATION_V1_API_SERVICE),
    ("apps", "v1", "ControllerRevision", &APPS_V1_CONTROLLER_REVISION),
    ("apps", "v1", "DaemonSet", &APPS_V1_DAEMON_SET),
    ("apps", "v1", "Deployment", &APPS_V1_DEPLOYMENT),
    ("apps", "v1", "ReplicaSet", &APPS_V1_REPLICA_SET),
    ("apps", "v1", "StatefulSet", &APPS_V1_STATEFUL_SET),
    ("apps", "v1beta1", "ControllerRevision", &APPS_V1BETA1_CONTROLLER_REVISION),
    ("apps", "v1beta1", "Deployment", &APPS_V1BETA1_DEPLOYMENT),
    ("apps", "v1beta1", "Scale", &APPS_V1BETA1_SCALE),
    ("apps", "v1beta1", "StatefulSet", &APPS_V1BETA1_STATEFUL_SET),
    ("apps", "v1beta2", "ControllerRevision", &APPS_V1BETA2_CONTROLLER_REVISION),
    ("apps", "v1beta2", "DaemonSet", &APPS_V1BETA2_DAEMON_SET),
    ("apps", "v1beta2", "Deployment", &APPS_V1BETA2_DEPLOYMENT),
    ("apps", "v1beta2", "ReplicaSet", &APPS_V1BETA2_REPLICA_SET),
    ("apps", "v1beta2", "Scale", &APPS_V1BETA2_SCALE),
    ("apps", "v1beta2", "StatefulSet", &APPS_V1BETA2_STATEFUL_SET),
    ("authentication.k8s.io", "v1", "SelfSubjectReview", &AUTHENTICATION_V1_SELF_SUBJECT_REVIEW),
    ("authentication.k8s.io", "v1", "TokenRequest", &AUTHENTICATION_V1_TOKEN_REQUEST),
    ("authentication.k8s.io", "v1", "TokenReview", &AUTHENTICATION_V1_TOKEN_REVIEW),
    ("authentication.k8s.io", "v1alpha1", "SelfSubjectReview", &AUTHENTICATION_V1ALPHA1_SELF_SUBJECT_REVIEW),
    ("authentication.k8s.io", "v1beta1", "SelfSubjectReview", &AUTHENTICATION_V1BETA1_SELF_SUBJECT_REVIEW),
    ("authentication.k8s.io", "v1beta1", "TokenReview", &AUTHENTICATION_V1BETA1_TOKEN_REVIEW),
    ("authorization.k8s.io", "v1", "LocalSubjectAccessReview", &AUTHORIZATION_V1_LOCAL_SUBJECT_ACCESS_REVIEW),
    ("authorization.k8s.io", "v1", "SelfSubjectAccessReview", &AUTHORIZATION_V1_SELF_SUBJECT_ACCESS_REVIEW),
    ("authorization.k8s.io", "v1", "SelfSubjectRulesReview", &AUTHORIZATION_V1_SELF_SUBJECT_RULES_REVIEW),
    ("authorization.k8s.io", "v1", "SubjectAccessReview", &AUTHORIZATION_V1_SUBJECT_ACCESS_REVIEW),
    ("authorization.k8s.io", "v1beta1", "LocalSubjectAccessReview", &AUTHORIZATION_V1BETA1_LOCAL_SUBJECT_ACCESS_REVIEW),
    ("authorization.k8s.io", "v1beta1", "SelfSubjectAccessReview", &AUTHORIZATION_V1BETA1_SELF_SUBJECT_ACCESS_REVIEW),
    ("authorization.k8s.io", "v1beta1", "SelfSubjectRulesReview", &AUTHORIZATION_V1BETA1_SELF_SUBJECT_RULES_REVIEW),
    ("authorization.k8s.io", "v1beta1", "SubjectAccessReview", &AUTHORIZATION_V1BETA1_SUBJECT_ACCESS_REVIEW),
    ("autoscaling", "v1", "HorizontalPodAutoscaler", &AUTOSCALING_V1_HORIZONTAL_POD_AUTOSCALER),
    ("autoscaling", "v1", "Scale", &AUTOSCALING_V1_SCALE),
    ("autoscaling", "v2", "HorizontalPodAutoscaler", &AUTOSCALING_V2_HORIZONTAL_POD_AUTOSCALER),
    ("autoscaling", "v2beta1", "HorizontalPodAutoscaler", &AUTOSCALING_V2BETA1_HORIZONTAL_POD_AUTOSCALER),
    ("autoscaling", "v2beta2", "HorizontalPodAutoscaler", &AUTOSCALING_V2BETA2_HORIZONTAL_POD_AUTOSCALER),
    ("batch", "v1", "CronJob", &BATCH_V1_CRON_JOB),
    ("batch", "v1", "Job", &BATCH_V1_JOB),
    ("batch", "v1beta1", "CronJob", &BATCH_V1BETA1_CRON_JOB),
    ("certificates.k8s.io", "v1", "CertificateSigningRequest", &CERTIFICATES_V1_CERTIFICATE_SIGNING_REQUEST),
    ("certificates.k8s.io", "v1alpha1", "ClusterTrustBundle", &CERTIFICATES_V1ALPHA1_CLUSTER_TRUST_BUNDLE),
    ("certificates.k8s.io", "v1beta1", "CertificateSigningRequest", &CERTIFICATES_V1BETA1_CERTIFICATE_SIGNING_REQUEST),
    ("certificates.k8s.io", "v1beta1", "ClusterTrustBundle", &CERTIFICATES_V1BETA1_CLUSTER_TRUST_BUNDLE),
    ("certificates.k8s.io", "v1beta1", "PodCertificateRequest", &CERTIFICATES_V1BETA1_POD_CERTIFICATE_REQUEST),
    ("coordination.k8s.io", "v1", "Lease", &COORDINATION_V1_LEASE),
    ("coordination.k8s.io", "v1alpha2", "LeaseCandidate", &COORDINATION_V1ALPHA2_LEASE_CANDIDATE),
    ("coordination.k8s.io", "v1beta1", "Lease", &COORDINATION_V1BETA1_LEASE),
    ("coordination.k8s.io", "v1beta1", "LeaseCandidate", &COORDINATION_V1BETA1_LEASE_CANDIDATE),
    ("discovery.k8s.io", "v1", "EndpointSlice", &DISCOVERY_V1_ENDPOINT_SLICE),
    ("discovery.k8s.io", "v1beta1", "EndpointSlice", &DISCOVERY_V1BETA1_ENDPOINT_SLICE),
    ("events.k8s.io", "v1", "Event", &EVENTS_V1_EVENT),
    ("events.k8s.io", "v1beta1", "Event", &EVENTS_V1BETA1_EVENT),
    ("extensions", "v1beta1", "DaemonSet", &EXTENSIONS_V1BETA1_DAEMON_SET),
    ("extensions", "v1beta1", "Deployment", &EXTENSIONS_V1BETA1_DEPLOYMENT),
    ("extensions", "v1beta1", "Ingress", &EXTENSIONS_V1BETA1_INGRESS),
    ("extensions", "v1beta1", "NetworkPolicy", &EXTENSIONS_V1BETA1_NETWORK_POLICY),
    ("extensions", "v1beta1", "ReplicaSet", &EXTENSIONS_V1BETA1_REPLICA_SET),
    ("extensions", "v1beta1", "Scale", &EXTENSIONS_V1BETA1_SCALE),
    ("flowcontrol.apiserver.k8s.io", "v1", "FlowSchema", &FLOWCONTROL_V1_FLOW_SCHEMA),
    ("flowcontrol.apiserver.k8s.io", "v1", "PriorityLevelConfiguration", &FLOWCONTROL_V1_PRIORITY_LEVEL_CONFIGURATION),
    ("flowcontrol.apiserver.k8s.io", "v1beta1", "FlowSchema", &FLOWCONTROL_V1BETA1_FLOW_SCHEMA),
    ("flowcontrol.apiserver.k8s.io", "v1beta1", "PriorityLevelConfiguration", &FLOWCONTROL_V1BETA1_PRIORITY_LEVEL_CONFIGURATION),
    ("flowcontrol.apiserver.k8s.io", "v1beta2", "FlowSchema", &FLOWCONTROL_V1BETA2_FLOW_SCHEMA),
    ("flowcontrol.apiserver.k8s.io", "v1beta2", "PriorityLevelConfiguration", &FLOWCONTROL_V1BETA2_PRIORITY_LEVEL_CONFIGURATION),
    ("flowcontrol.apiserver.k8s.io", "v1beta3", "FlowSchema", &FLOWCONTROL_V1BETA3_FLOW_SCHEMA),
    ("flowcontrol.apiserver.k8s.io", "v1beta3", "PriorityLevelConfiguration", &FLOWCONTROL_V1BETA3_PRIORITY_LEVEL_CONFIGURATION),
    ("imagepolicy.k8s.io", "v1alpha1", "ImageReview", &IMAGEPOLICY_V1ALPHA1_IMAGE_REVIEW),
    ("internal.apiserver.k8s.io", "v1alpha1", "StorageVersion", &APISERVERINTERNAL_V1ALPHA1_STORAGE_VERSION),
    ("networking.k8s.io", "v1", "IPAddress", &NETWORKING_V1_IP_ADDRESS),
    ("networking.k8s.io", "v1", "Ingress", &NETWORKING_V1_INGRESS),
    ("networking.k8s.io", "v1", "IngressClass", &NETWORKING_V1_INGRESS_CLASS),
    ("networking.k8s.io", "v1", "NetworkPolicy", &NETWORKING_V1_NETWORK_POLICY),
    ("networking.k8s.io", "v1", "ServiceCIDR", &NETWORKING_V1_SERVICE_CIDR),
    ("networking.k8s.io", "v1beta1", "IPAddress", &NETWORKING_V1BETA1_IP_ADDRESS),
    ("networking.k8s.io", "v1beta1", "Ingress", &NETWORKING_V1BETA1_INGRESS),
    ("networking.k8s.io", "v1beta1", "IngressClass", &NETWORKING_V1BETA1_INGRESS_CLASS),
    ("networking.k8s.io", "v1beta1", "ServiceCIDR", &NETWORKING_V1BETA1_SERVICE_CIDR),
    ("node.k8s.io", "v1", "RuntimeClass", &NODE_V1_RUNTIME_CLASS),
    ("node.k8s.io", "v1alpha1", "RuntimeClass", &NODE_V1ALPHA1_RUNTIME_CLASS),
    ("node.k8s.io", "v1beta1", "RuntimeClass", &NODE_V1BETA1_RUNTIME_CLASS),
    ("policy", "v1", "Eviction", &POLICY_V1_EVICTION),
    ("policy", "v1", "PodDisruptionBudget", &POLICY_V1_POD_DISRUPTION_BUDGET),
    ("policy", "v1beta1", "Eviction", &POLICY_V1BETA1_EVICTION),
    ("policy", "v1beta1", "PodDisruptionBudget", &POLICY_V1BETA1_POD_DISRUPTION_BUDGET),
    ("rbac.authorization.k8s.io", "v1", "ClusterRole", &RBAC_V1_CLUSTER_ROLE),
    ("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", &RBAC_V1_CLUSTER_ROLE_BINDING),
    ("rbac.authorization.k8s.io", "v1", "Role", &RBAC_V1_ROLE),
    ("rbac.authorization.k8s.io", "v1", "RoleBinding", &RBAC_V1_ROLE_BINDING),
    ("rbac.authorization.k8s.io", "v1alpha1", "ClusterRole", &RBAC_V1ALPHA1_CLUSTER_ROLE),
    ("rbac.authorization.k8s.io", "v1alpha1", "ClusterRoleBinding", &RBAC_V1ALPHA1_CLUSTER_ROLE_BINDING),
    ("rbac.authorization.k8s.io", "v1alpha1", "Role", &RBAC_V1ALPHA1_ROLE),
    ("rbac.authorization.k8s.io", "v1alpha1", "RoleBinding", &RBAC_V1ALPHA1_ROLE_BINDING),
    ("rbac.authorization.k8s.io", "v1beta1", "ClusterRole", &RBAC_V1BETA1_CLUSTER_ROLE),
    ("rbac.authorization.k8s.io", "v1beta1", "ClusterRoleBinding", &RBAC_V1BETA1_CLUSTER_ROLE_BINDING),
    ("rbac.authorization.k8s.io", "v1beta1", "Role", &RBAC_V1BETA1_ROLE),
    ("rbac.authorization.k8s.io", "v1beta1", "RoleBinding", &RBAC_V1BETA1_ROLE_BINDING),
    ("resource.k8s.io", "v1", "DeviceClass", &RESOURCE_V1_DEVICE_CLASS),
    ("resource.k8s.io", "v1", "ResourceClaim", &RESOURCE_V1_RESOURCE_CLAIM),
    ("resource.k8s.io", "v1", "ResourceClaimTemplate", &RESOURCE_V1_RESOURCE_CLAIM_TEMPLATE),
    ("resource.k8s.io", "v1", "ResourceSlice", &RESOURCE_V1_RESOURCE_SLICE),
    ("resource.k8s.io", "v1alpha3", "DeviceTaintRule", &RESOURCE_V1ALPHA3_DEVICE_TAINT_RULE),
    ("resource.k8s.io", "v1beta1", "DeviceClass", &RESOURCE_V1BETA1_DEVICE_CLASS),
    ("resource.k8s.io", "v1beta1", "ResourceClaim", &RESOURCE_V1BETA1_RESOURCE_CLAIM),
    ("resource.k8s.io", "v1beta1", "ResourceClaimTemplate", &RESOURCE_V1BETA1_RESOURCE_CLAIM_TEMPLATE),
    ("resource.k8s.io", "v1beta1", "ResourceSlice", &RESOURCE_V1BETA1_RESOURCE_SLICE),
    ("resource.k8s.io", "v1beta2", "DeviceClass", &RESOURCE_V1BETA2_DEVICE_CLASS),
    ("resource.k8s.io", "v1beta2", "ResourceClaim", &RESOURCE_V1BETA2_RESOURCE_CLAIM),
    ("resource.k8s.io", "v1beta2", "ResourceClaimTemplate", &RESOURCE_V1BETA2_RESOURCE_CLAIM_TEMPLATE),
    ("resource.k8s.io", "v1beta2", "ResourceSlice", &RESOURCE_V1BETA2_RESOURCE_SLICE),
    ("scheduling.k8s.io", "v1", "PriorityClass", &SCHEDULING_V1_PRIORITY_CLASS),
    ("scheduling.k8s.io", "v1alpha1", "PriorityClass", &SCHEDULING_V1ALPHA1_PRIORITY_CLASS),
    ("scheduling.k8s.io", "v1alpha1", "Workload", &SCHEDULING_V1ALPHA1_WORKLOAD),
    ("scheduling.k8s.io", "v1beta1", "PriorityClass", &SCHEDULING_V1BETA1_PRIORITY_CLASS),
    ("storage.k8s.io", "v1", "CSIDriver", &STORAGE_V1_CSI_DRIVER),
    ("storage.k8s.io", "v1", "CSINode", &STORAGE_V1_CSI_NODE),
    ("storage.k8s.io", "v1", "CSIStorageCapacity", &STORAGE_V1_CSI_STORAGE_CAPACITY),
    ("storage.k8s.io", "v1", "StorageClass", &STORAGE_V1_STORAGE_CLASS),
    ("storage.k8s.io", "v1", "VolumeAttachment", &STORAGE_V1_VOLUME_ATTACHMENT),
    ("storage.k8s.io", "v1", "VolumeAttributesClass", &STORAGE_V1_VOLUME_ATTRIBUTES_CLASS),
    ("storage.k8s.io", "v1alpha1", "CSIStorageCapacity", &STORAGE_V1ALPHA1_CSI_STORAGE_CAPACITY),
    ("storage.k8s.io", "v1alpha1", "VolumeAttachment", &STORAGE_V1ALPHA1_VOLUME_ATTACHMENT),
    ("storage.k8s.io", "v1alpha1", "VolumeAttributesClass", &STORAGE_V1ALPHA1_VOLUME_ATTRIBUTES_CLASS),
    ("storage.k8s.io", "v1beta1", "CSIDriver", &STORAGE_V1BETA1_CSI_DRIVER),
    ("storage.k8s.io", "v1beta1", "CSINode", &STORAGE_V1BETA1_CSI_NODE),
    ("storage.k8s.io", "v1beta1", "CSIStorageCapacity", &STORAGE_V1BETA1_CSI_STORAGE_CAPACITY),
    ("storage.k8s.io", "v1beta1", "StorageClass", &STORAGE_V1BETA1_STORAGE_CLASS),
    ("storage.k8s.io", "v1beta1", "VolumeAttachment", &STORAGE_V1BETA1_VOLUME_ATTACHMENT),
    ("storage.k8s.io", "v1beta1", "VolumeAttributesClass", &STORAGE_V1BETA1_VOLUME_ATTRIBUTES_CLASS),
    ("storagemigration.k8s.io", "v1beta1", "StorageVersionMigration", &STORAGEMIGRATION_V1BETA1_STORAGE_VERSION_MIGRATION),
];
