//! The default policy a new cluster starts with.
//!
//! Users expect the ClusterRoles of a real cluster — `cluster-admin`, the user-facing `admin`,
//! `edit` and `view`, the discovery and self-review roles — with upstream's rules, because
//! manifests and Helm charts bind to them by name. The rules are those of upstream's
//! `bootstrappolicy`, restricted to the API groups this control plane serves: the `extensions`
//! group (and others opkit does not serve, such as `resource.k8s.io`) is left out. `admin`,
//! `edit` and `view` are aggregated roles, exactly as upstream ships them: their rules come from
//! `system:aggregate-to-*` (and from any custom role carrying the aggregation labels), so
//! operators can extend them the usual way.

use std::collections::BTreeMap;

use k8s_openapi::api::rbac::v1::{
    AggregationRule, ClusterRole, ClusterRoleBinding, PolicyRule, RoleRef, Subject,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};

use crate::RBAC_GROUP;
use crate::user::{ALL_AUTHENTICATED, ALL_UNAUTHENTICATED, SERVICE_ACCOUNTS_GROUP, SYSTEM_MASTERS};

/// The label upstream puts on every default RBAC object.
pub const BOOTSTRAPPING_LABEL: &str = "kubernetes.io/bootstrapping";
/// The value of [`BOOTSTRAPPING_LABEL`].
pub const BOOTSTRAPPING_LABEL_VALUE: &str = "rbac-defaults";
/// The annotation that lets the API server reconcile a default object at start
/// (`"true"`; users set it to `"false"` to keep their edits).
pub const AUTOUPDATE_ANNOTATION: &str = "rbac.authorization.kubernetes.io/autoupdate";

const AGGREGATE_TO_ADMIN: &str = "rbac.authorization.k8s.io/aggregate-to-admin";
const AGGREGATE_TO_EDIT: &str = "rbac.authorization.k8s.io/aggregate-to-edit";
const AGGREGATE_TO_VIEW: &str = "rbac.authorization.k8s.io/aggregate-to-view";
/// The group upstream's `system:monitoring` role is bound to.
const MONITORING_GROUP: &str = "system:monitoring";

const READ: &[&str] = &["get", "list", "watch"];
const WRITE: &[&str] = &["create", "delete", "deletecollection", "patch", "update"];
const READ_WRITE: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

/// The default ClusterRoles and ClusterRoleBindings.
#[derive(Clone, Debug, PartialEq)]
pub struct BootstrapPolicy {
    /// The default ClusterRoles (aggregated ones with `rules: None`, as upstream creates them).
    pub cluster_roles: Vec<ClusterRole>,
    /// The default ClusterRoleBindings.
    pub cluster_role_bindings: Vec<ClusterRoleBinding>,
}

fn strings(values: &[&str]) -> Vec<String> {
    values.iter().map(|v| (*v).to_owned()).collect()
}

fn resource_rule(verbs: &[&str], group: &str, resources: &[&str]) -> PolicyRule {
    PolicyRule {
        verbs: strings(verbs),
        api_groups: Some(vec![group.to_owned()]),
        resources: Some(strings(resources)),
        ..PolicyRule::default()
    }
}

fn url_rule(verbs: &[&str], urls: &[&str]) -> PolicyRule {
    PolicyRule {
        verbs: strings(verbs),
        non_resource_urls: Some(strings(urls)),
        ..PolicyRule::default()
    }
}

fn metadata(name: &str, extra_labels: &[&str]) -> ObjectMeta {
    let mut labels = BTreeMap::from([(
        BOOTSTRAPPING_LABEL.to_owned(),
        BOOTSTRAPPING_LABEL_VALUE.to_owned(),
    )]);
    for label in extra_labels {
        labels.insert((*label).to_owned(), "true".to_owned());
    }
    ObjectMeta {
        name: Some(name.to_owned()),
        labels: Some(labels),
        annotations: Some(BTreeMap::from([(
            AUTOUPDATE_ANNOTATION.to_owned(),
            "true".to_owned(),
        )])),
        ..ObjectMeta::default()
    }
}

fn cluster_role(name: &str, extra_labels: &[&str], rules: Vec<PolicyRule>) -> ClusterRole {
    ClusterRole {
        metadata: metadata(name, extra_labels),
        rules: Some(rules),
        aggregation_rule: None,
    }
}

fn aggregated_role(name: &str, extra_labels: &[&str], selects: &str) -> ClusterRole {
    ClusterRole {
        metadata: metadata(name, extra_labels),
        rules: None,
        aggregation_rule: Some(AggregationRule {
            cluster_role_selectors: Some(vec![LabelSelector {
                match_labels: Some(BTreeMap::from([(selects.to_owned(), "true".to_owned())])),
                match_expressions: None,
            }]),
        }),
    }
}

fn binding_to_groups(role: &str, groups: &[&str]) -> ClusterRoleBinding {
    ClusterRoleBinding {
        metadata: metadata(role, &[]),
        role_ref: RoleRef {
            api_group: RBAC_GROUP.to_owned(),
            kind: "ClusterRole".to_owned(),
            name: role.to_owned(),
        },
        subjects: Some(
            groups
                .iter()
                .map(|group| Subject {
                    api_group: Some(RBAC_GROUP.to_owned()),
                    kind: "Group".to_owned(),
                    name: (*group).to_owned(),
                    namespace: None,
                })
                .collect(),
        ),
    }
}

/// The default ClusterRoles and ClusterRoleBindings of a fresh cluster.
pub fn bootstrap_policy() -> BootstrapPolicy {
    let cluster_roles = vec![
        cluster_role(
            "cluster-admin",
            &[],
            vec![resource_rule(&["*"], "*", &["*"]), url_rule(&["*"], &["*"])],
        ),
        cluster_role(
            "system:discovery",
            &[],
            vec![url_rule(
                &["get"],
                &[
                    "/api",
                    "/api/*",
                    "/apis",
                    "/apis/*",
                    "/healthz",
                    "/livez",
                    "/openapi",
                    "/openapi/*",
                    "/readyz",
                    "/version",
                    "/version/",
                ],
            )],
        ),
        cluster_role(
            "system:monitoring",
            &[],
            vec![url_rule(
                &["get"],
                &[
                    "/healthz",
                    "/healthz/*",
                    "/livez",
                    "/livez/*",
                    "/metrics",
                    "/metrics/slis",
                    "/readyz",
                    "/readyz/*",
                ],
            )],
        ),
        cluster_role(
            "system:basic-user",
            &[],
            vec![
                resource_rule(
                    &["create"],
                    "authorization.k8s.io",
                    &["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                ),
                resource_rule(
                    &["create"],
                    "authentication.k8s.io",
                    &["selfsubjectreviews"],
                ),
            ],
        ),
        cluster_role(
            "system:public-info-viewer",
            &[],
            vec![url_rule(
                &["get"],
                &["/healthz", "/livez", "/readyz", "/version", "/version/"],
            )],
        ),
        aggregated_role("admin", &[], AGGREGATE_TO_ADMIN),
        aggregated_role("edit", &[AGGREGATE_TO_ADMIN], AGGREGATE_TO_EDIT),
        aggregated_role("view", &[AGGREGATE_TO_EDIT], AGGREGATE_TO_VIEW),
        cluster_role(
            "system:aggregate-to-admin",
            &[AGGREGATE_TO_ADMIN],
            vec![
                resource_rule(
                    &["create"],
                    "authorization.k8s.io",
                    &["localsubjectaccessreviews"],
                ),
                resource_rule(READ_WRITE, RBAC_GROUP, &["rolebindings", "roles"]),
            ],
        ),
        cluster_role(
            "system:aggregate-to-edit",
            &[AGGREGATE_TO_EDIT],
            edit_rules(),
        ),
        cluster_role(
            "system:aggregate-to-view",
            &[AGGREGATE_TO_VIEW],
            view_rules(),
        ),
        cluster_role(
            "system:auth-delegator",
            &[],
            vec![
                resource_rule(&["create"], "authentication.k8s.io", &["tokenreviews"]),
                resource_rule(
                    &["create"],
                    "authorization.k8s.io",
                    &["subjectaccessreviews"],
                ),
            ],
        ),
        cluster_role(
            "system:service-account-issuer-discovery",
            &[],
            vec![url_rule(
                &["get"],
                &["/.well-known/openid-configuration", "/openid/v1/jwks"],
            )],
        ),
    ];
    let cluster_role_bindings = vec![
        binding_to_groups("cluster-admin", &[SYSTEM_MASTERS]),
        binding_to_groups("system:monitoring", &[MONITORING_GROUP]),
        binding_to_groups("system:discovery", &[ALL_AUTHENTICATED]),
        binding_to_groups("system:basic-user", &[ALL_AUTHENTICATED]),
        binding_to_groups(
            "system:public-info-viewer",
            &[ALL_AUTHENTICATED, ALL_UNAUTHENTICATED],
        ),
        binding_to_groups(
            "system:service-account-issuer-discovery",
            &[SERVICE_ACCOUNTS_GROUP],
        ),
    ];
    BootstrapPolicy {
        cluster_roles,
        cluster_role_bindings,
    }
}

/// Upstream's `system:aggregate-to-edit`, without the `extensions` group.
fn edit_rules() -> Vec<PolicyRule> {
    vec![
        resource_rule(
            READ,
            "",
            &[
                "pods/attach",
                "pods/exec",
                "pods/portforward",
                "pods/proxy",
                "secrets",
                "services/proxy",
            ],
        ),
        resource_rule(&["impersonate"], "", &["serviceaccounts"]),
        resource_rule(
            WRITE,
            "",
            &[
                "pods",
                "pods/attach",
                "pods/exec",
                "pods/portforward",
                "pods/proxy",
            ],
        ),
        resource_rule(&["create"], "", &["pods/eviction"]),
        resource_rule(
            WRITE,
            "",
            &[
                "configmaps",
                "events",
                "persistentvolumeclaims",
                "replicationcontrollers",
                "replicationcontrollers/scale",
                "secrets",
                "serviceaccounts",
                "services",
                "services/proxy",
            ],
        ),
        resource_rule(&["create"], "", &["serviceaccounts/token"]),
        resource_rule(
            WRITE,
            "apps",
            &[
                "daemonsets",
                "deployments",
                "deployments/rollback",
                "deployments/scale",
                "replicasets",
                "replicasets/scale",
                "statefulsets",
                "statefulsets/scale",
            ],
        ),
        resource_rule(WRITE, "autoscaling", &["horizontalpodautoscalers"]),
        resource_rule(WRITE, "batch", &["cronjobs", "jobs"]),
        resource_rule(WRITE, "policy", &["poddisruptionbudgets"]),
        resource_rule(
            WRITE,
            "networking.k8s.io",
            &["ingresses", "networkpolicies"],
        ),
        resource_rule(READ_WRITE, "coordination.k8s.io", &["leases"]),
    ]
}

/// Upstream's `system:aggregate-to-view`, without the `extensions` group.
fn view_rules() -> Vec<PolicyRule> {
    vec![
        resource_rule(
            READ,
            "",
            &[
                "configmaps",
                "endpoints",
                "persistentvolumeclaims",
                "persistentvolumeclaims/status",
                "pods",
                "replicationcontrollers",
                "replicationcontrollers/scale",
                "serviceaccounts",
                "services",
                "services/status",
            ],
        ),
        resource_rule(
            READ,
            "",
            &[
                "bindings",
                "events",
                "limitranges",
                "namespaces/status",
                "pods/log",
                "pods/status",
                "replicationcontrollers/status",
                "resourcequotas",
                "resourcequotas/status",
            ],
        ),
        resource_rule(READ, "", &["namespaces"]),
        resource_rule(READ, "discovery.k8s.io", &["endpointslices"]),
        resource_rule(
            READ,
            "apps",
            &[
                "controllerrevisions",
                "daemonsets",
                "daemonsets/status",
                "deployments",
                "deployments/scale",
                "deployments/status",
                "replicasets",
                "replicasets/scale",
                "replicasets/status",
                "statefulsets",
                "statefulsets/scale",
                "statefulsets/status",
            ],
        ),
        resource_rule(
            READ,
            "autoscaling",
            &[
                "horizontalpodautoscalers",
                "horizontalpodautoscalers/status",
            ],
        ),
        resource_rule(
            READ,
            "batch",
            &["cronjobs", "cronjobs/status", "jobs", "jobs/status"],
        ),
        resource_rule(
            READ,
            "policy",
            &["poddisruptionbudgets", "poddisruptionbudgets/status"],
        ),
        resource_rule(
            READ,
            "networking.k8s.io",
            &["ingresses", "ingresses/status", "networkpolicies"],
        ),
    ]
}
