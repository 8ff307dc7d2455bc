//! Columns and cells of upstream's printers for built-in kinds
//! (`pkg/printers/internalversion/printers.go`), computed from the stored
//! `v1` JSON. The server always prints wide: priority-1 cells are included.

use std::collections::BTreeSet;

use jiff::{SignedDuration, Timestamp};
use serde_json::{Map, Value, json};

use super::{
    CREATION_TIMESTAMP_DESCRIPTION as CREATED, Column, NAME_DESCRIPTION, default_columns,
    default_row,
};
use crate::labels::LabelSelector;
use crate::time::{age as age_of, human_duration, timestamp_field};

/// (name, type, format, priority, description)
type Spec = (&'static str, &'static str, &'static str, i32, &'static str);

const NAME: Spec = ("Name", "string", "name", 0, NAME_DESCRIPTION);
const AGE: Spec = ("Age", "string", "", 0, CREATED);
const CONTAINERS: Spec = (
    "Containers",
    "string",
    "",
    1,
    "Names of each container in the template.",
);
const IMAGES: Spec = (
    "Images",
    "string",
    "",
    1,
    "Images referenced by each container in the template.",
);

const PODS: &[Spec] = &[
    NAME,
    (
        "Ready",
        "string",
        "",
        0,
        "The aggregate readiness state of this pod for accepting traffic.",
    ),
    (
        "Status",
        "string",
        "",
        0,
        "The aggregate status of the containers in this pod.",
    ),
    (
        "Restarts",
        "string",
        "",
        0,
        "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.",
    ),
    AGE,
    (
        "IP",
        "string",
        "",
        1,
        "podIP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated.",
    ),
    (
        "Node",
        "string",
        "",
        1,
        "NodeName indicates in which node this pod is scheduled.",
    ),
    (
        "Nominated Node",
        "string",
        "",
        1,
        "nominatedNodeName is set only when this pod preempts other pods on the node, but it cannot be scheduled right away as preemption victims receive their graceful termination periods.",
    ),
    (
        "Readiness Gates",
        "string",
        "",
        1,
        "If specified, all readiness gates will be evaluated for pod readiness.",
    ),
];
const POD_TEMPLATES: &[Spec] = &[
    NAME,
    (
        "Containers",
        "string",
        "",
        0,
        "Names of each container in the template.",
    ),
    (
        "Images",
        "string",
        "",
        0,
        "Images referenced by each container in the template.",
    ),
    (
        "Pod Labels",
        "string",
        "",
        0,
        "The labels for the pod template.",
    ),
];
const PDBS: &[Spec] = &[
    NAME,
    (
        "Min Available",
        "string",
        "",
        0,
        "The minimum number of pods that must be available.",
    ),
    (
        "Max Unavailable",
        "string",
        "",
        0,
        "The maximum number of pods that may be unavailable.",
    ),
    (
        "Allowed Disruptions",
        "integer",
        "",
        0,
        "Calculated number of pods that may be disrupted at this time.",
    ),
    AGE,
];
const REPLICATION_CONTROLLERS: &[Spec] = &[
    NAME,
    (
        "Desired",
        "integer",
        "",
        0,
        "Replicas is the number of desired replicas.",
    ),
    (
        "Current",
        "integer",
        "",
        0,
        "Replicas is the most recently observed number of replicas.",
    ),
    (
        "Ready",
        "integer",
        "",
        0,
        "The number of ready replicas for this replication controller.",
    ),
    AGE,
    CONTAINERS,
    IMAGES,
    (
        "Selector",
        "string",
        "",
        1,
        "Selector is a label query over pods that should match the Replicas count.",
    ),
];
const REPLICA_SETS: &[Spec] = &[
    NAME,
    (
        "Desired",
        "integer",
        "",
        0,
        "Replicas is the number of desired replicas.",
    ),
    (
        "Current",
        "integer",
        "",
        0,
        "Replicas is the most recently observed number of replicas.",
    ),
    (
        "Ready",
        "integer",
        "",
        0,
        "The number of ready replicas for this replica set.",
    ),
    AGE,
    CONTAINERS,
    IMAGES,
    (
        "Selector",
        "string",
        "",
        1,
        "Selector is a label query over pods that should match the replica count.",
    ),
];
const DAEMON_SETS: &[Spec] = &[
    NAME,
    (
        "Desired",
        "integer",
        "",
        0,
        "The total number of nodes that should be running the daemon pod (including nodes correctly running the daemon pod).",
    ),
    (
        "Current",
        "integer",
        "",
        0,
        "The number of nodes that are running at least 1 daemon pod and are supposed to run the daemon pod.",
    ),
    (
        "Ready",
        "integer",
        "",
        0,
        "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and ready.",
    ),
    (
        "Up-to-date",
        "integer",
        "",
        0,
        "The total number of nodes that are running updated daemon pod",
    ),
    (
        "Available",
        "integer",
        "",
        0,
        "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and available (ready for at least spec.minReadySeconds)",
    ),
    (
        "Node Selector",
        "string",
        "",
        0,
        "NodeSelector is a selector which must be true for the pod to fit on a node.",
    ),
    AGE,
    CONTAINERS,
    IMAGES,
    (
        "Selector",
        "string",
        "",
        1,
        "A label query over pods that are managed by the daemon set.",
    ),
];
const JOBS: &[Spec] = &[
    NAME,
    ("Status", "string", "", 0, "Status of the job."),
    (
        "Completions",
        "string",
        "",
        0,
        "The number of pods which reached phase Succeeded.",
    ),
    (
        "Duration",
        "string",
        "",
        0,
        "Time required to complete the job.",
    ),
    AGE,
    CONTAINERS,
    IMAGES,
    (
        "Selector",
        "string",
        "",
        1,
        "A label query over pods that should match the pod count.",
    ),
];
const CRON_JOBS: &[Spec] = &[
    NAME,
    (
        "Schedule",
        "string",
        "",
        0,
        "The schedule in Cron format, see https://en.wikipedia.org/wiki/Cron.",
    ),
    (
        "Timezone",
        "string",
        "",
        0,
        "The time zone name for the given schedule, see https://en.wikipedia.org/wiki/List_of_tz_database_time_zones.",
    ),
    (
        "Suspend",
        "boolean",
        "",
        0,
        "This flag tells the controller to suspend subsequent executions, it does not apply to already started executions.",
    ),
    (
        "Active",
        "integer",
        "",
        0,
        "A list of pointers to currently running jobs.",
    ),
    (
        "Last Schedule",
        "string",
        "",
        0,
        "Information when was the last time the job was successfully scheduled.",
    ),
    AGE,
    CONTAINERS,
    IMAGES,
    (
        "Selector",
        "string",
        "",
        1,
        "A label query over pods that should match the pod count.",
    ),
];
const SERVICES: &[Spec] = &[
    NAME,
    (
        "Type",
        "string",
        "",
        0,
        "type determines how the Service is exposed.",
    ),
    (
        "Cluster-IP",
        "string",
        "",
        0,
        "clusterIP is the IP address of the service and is usually assigned randomly.",
    ),
    (
        "External-IP",
        "string",
        "",
        0,
        "externalIPs is a list of IP addresses for which nodes in the cluster will also accept traffic for this service.",
    ),
    (
        "Port(s)",
        "string",
        "",
        0,
        "The list of ports that are exposed by this service.",
    ),
    AGE,
    (
        "Selector",
        "string",
        "",
        1,
        "Route service traffic to pods with label keys and values matching this selector.",
    ),
];
const INGRESSES: &[Spec] = &[
    NAME,
    (
        "Class",
        "string",
        "",
        0,
        "The name of the IngressClass resource that should be used for additional configuration",
    ),
    (
        "Hosts",
        "string",
        "",
        0,
        "Hosts that incoming requests are matched against before the ingress rule",
    ),
    (
        "Address",
        "string",
        "",
        0,
        "Address is a list containing ingress points for the load-balancer",
    ),
    (
        "Ports",
        "string",
        "",
        0,
        "Ports of TLS configurations that open",
    ),
    AGE,
];
const INGRESS_CLASSES: &[Spec] = &[
    NAME,
    (
        "Controller",
        "string",
        "",
        0,
        "Controller that is responsible for handling this class",
    ),
    (
        "Parameters",
        "string",
        "",
        0,
        "A reference to a resource with additional parameters",
    ),
    AGE,
];
const STATEFUL_SETS: &[Spec] = &[
    NAME,
    (
        "Ready",
        "string",
        "",
        0,
        "Number of the pod with ready state",
    ),
    AGE,
    CONTAINERS,
    IMAGES,
];
const ENDPOINTS: &[Spec] = &[
    NAME,
    (
        "Endpoints",
        "string",
        "",
        0,
        "The set of all endpoints is the union of all subsets.",
    ),
    AGE,
];
const NODES: &[Spec] = &[
    NAME,
    ("Status", "string", "", 0, "The status of the node"),
    ("Roles", "string", "", 0, "The roles of the node"),
    AGE,
    (
        "Version",
        "string",
        "",
        0,
        "Kubelet Version reported by the node.",
    ),
    (
        "Internal-IP",
        "string",
        "",
        1,
        "List of addresses reachable to the node.",
    ),
    (
        "External-IP",
        "string",
        "",
        1,
        "List of addresses reachable to the node.",
    ),
    (
        "OS-Image",
        "string",
        "",
        1,
        "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).",
    ),
    (
        "Kernel-Version",
        "string",
        "",
        1,
        "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).",
    ),
    (
        "Container-Runtime",
        "string",
        "",
        1,
        "ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2).",
    ),
];
const EVENTS: &[Spec] = &[
    (
        "Last Seen",
        "string",
        "",
        0,
        "The time at which the most recent occurrence of this event was recorded.",
    ),
    (
        "Type",
        "string",
        "",
        0,
        "Type of this event (Normal, Warning), new types could be added in the future",
    ),
    (
        "Reason",
        "string",
        "",
        0,
        "This should be a short, machine understandable string that gives the reason for the transition into the object's current status.",
    ),
    (
        "Object",
        "string",
        "",
        0,
        "The object that this event is about.",
    ),
    (
        "Subobject",
        "string",
        "",
        1,
        "If referring to a piece of an object instead of an entire object, this string should contain a valid JSON/Go field access statement.",
    ),
    (
        "Source",
        "string",
        "",
        1,
        "The component reporting this event. Should be a short machine understandable string.",
    ),
    (
        "Message",
        "string",
        "",
        0,
        "A human-readable description of the status of this operation.",
    ),
    (
        "First Seen",
        "string",
        "",
        1,
        "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)",
    ),
    (
        "Count",
        "string",
        "",
        1,
        "The number of times this event has occurred.",
    ),
    ("Name", "string", "name", 1, NAME_DESCRIPTION),
];
const NAMESPACES: &[Spec] = &[
    NAME,
    ("Status", "string", "", 0, "The status of the namespace"),
    AGE,
];
const SECRETS: &[Spec] = &[
    NAME,
    (
        "Type",
        "string",
        "",
        0,
        "Used to facilitate programmatic handling of secret data.",
    ),
    ("Data", "string", "", 0, "Data contains the secret data."),
    AGE,
];
const SERVICE_ACCOUNTS: &[Spec] = &[
    NAME,
    (
        "Secrets",
        "string",
        "",
        0,
        "Secrets is a list of the secrets in the same namespace that pods running using this ServiceAccount are allowed to use.",
    ),
    AGE,
];
const PERSISTENT_VOLUMES: &[Spec] = &[
    NAME,
    (
        "Capacity",
        "string",
        "",
        0,
        "capacity is the description of the persistent volume's resources and capacity.",
    ),
    (
        "Access Modes",
        "string",
        "",
        0,
        "accessModes contains all ways the volume can be mounted.",
    ),
    (
        "Reclaim Policy",
        "string",
        "",
        0,
        "persistentVolumeReclaimPolicy defines what happens to a persistent volume when released from its claim.",
    ),
    (
        "Status",
        "string",
        "",
        0,
        "phase indicates if a volume is available, bound to a claim, or released by a claim.",
    ),
    (
        "Claim",
        "string",
        "",
        0,
        "claimRef is part of a bi-directional binding between PersistentVolume and PersistentVolumeClaim.",
    ),
    ("StorageClass", "string", "", 0, "StorageClass of the pv"),
    (
        "VolumeAttributesClass",
        "string",
        "",
        0,
        "VolumeAttributesClass of the pv",
    ),
    (
        "Reason",
        "string",
        "",
        0,
        "reason is a brief CamelCase string that describes any failure and is meant for machine parsing and tidy display in the CLI.",
    ),
    AGE,
    (
        "VolumeMode",
        "string",
        "",
        1,
        "volumeMode defines if a volume is intended to be used with a formatted filesystem or to remain in raw block state.",
    ),
];
const PERSISTENT_VOLUME_CLAIMS: &[Spec] = &[
    NAME,
    (
        "Status",
        "string",
        "",
        0,
        "phase represents the current phase of PersistentVolumeClaim.",
    ),
    (
        "Volume",
        "string",
        "",
        0,
        "volumeName is the binding reference to the PersistentVolume backing this claim.",
    ),
    (
        "Capacity",
        "string",
        "",
        0,
        "capacity represents the actual resources of the underlying volume.",
    ),
    (
        "Access Modes",
        "string",
        "",
        0,
        "accessModes contains the actual access modes the volume backing the PVC has.",
    ),
    ("StorageClass", "string", "", 0, "StorageClass of the pvc"),
    (
        "VolumeAttributesClass",
        "string",
        "",
        0,
        "VolumeAttributesClass of the pvc",
    ),
    AGE,
    (
        "VolumeMode",
        "string",
        "",
        1,
        "volumeMode defines what type of volume is required by the claim.",
    ),
];
const DEPLOYMENTS: &[Spec] = &[
    NAME,
    (
        "Ready",
        "string",
        "",
        0,
        "Number of the pod with ready state",
    ),
    (
        "Up-to-date",
        "string",
        "",
        0,
        "Total number of non-terminated pods targeted by this deployment that have the desired template spec.",
    ),
    (
        "Available",
        "string",
        "",
        0,
        "Total number of available pods (ready for at least minReadySeconds) targeted by this deployment.",
    ),
    AGE,
    CONTAINERS,
    IMAGES,
    (
        "Selector",
        "string",
        "",
        1,
        "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the ones affected by this deployment.",
    ),
];
const HPAS: &[Spec] = &[
    NAME,
    (
        "Reference",
        "string",
        "",
        0,
        "reference to scaled resource; horizontal pod autoscaler will learn the current resource consumption and will set the desired number of pods by using its Scale subresource.",
    ),
    (
        "Targets",
        "string",
        "",
        0,
        "metrics contains the specifications for which to use to calculate the desired replica count.",
    ),
    (
        "MinPods",
        "string",
        "",
        0,
        "minReplicas is the lower limit for the number of replicas to which the autoscaler can scale down.",
    ),
    (
        "MaxPods",
        "string",
        "",
        0,
        "maxReplicas is the upper limit for the number of replicas to which the autoscaler can scale up.",
    ),
    (
        "Replicas",
        "string",
        "",
        0,
        "currentReplicas is current number of replicas of pods managed by this autoscaler.",
    ),
    AGE,
];
const CONFIG_MAPS: &[Spec] = &[
    NAME,
    (
        "Data",
        "string",
        "",
        0,
        "Data contains the configuration data.",
    ),
    AGE,
];
const NETWORK_POLICIES: &[Spec] = &[
    NAME,
    (
        "Pod-Selector",
        "string",
        "",
        0,
        "Selects the pods to which this NetworkPolicy object applies.",
    ),
    AGE,
];
const ROLE_BINDINGS: &[Spec] = &[
    NAME,
    (
        "Role",
        "string",
        "",
        0,
        "RoleRef can reference a Role in the current namespace or a ClusterRole in the global namespace.",
    ),
    AGE,
    ("Users", "string", "", 1, "Users in the roleBinding"),
    ("Groups", "string", "", 1, "Groups in the roleBinding"),
    (
        "ServiceAccounts",
        "string",
        "",
        1,
        "ServiceAccounts in the roleBinding",
    ),
];
const CLUSTER_ROLE_BINDINGS: &[Spec] = &[
    NAME,
    (
        "Role",
        "string",
        "",
        0,
        "RoleRef can only reference a ClusterRole in the global namespace.",
    ),
    AGE,
    ("Users", "string", "", 1, "Users in the clusterRoleBinding"),
    (
        "Groups",
        "string",
        "",
        1,
        "Groups in the clusterRoleBinding",
    ),
    (
        "ServiceAccounts",
        "string",
        "",
        1,
        "ServiceAccounts in the clusterRoleBinding",
    ),
];
const CSRS: &[Spec] = &[
    NAME,
    AGE,
    (
        "SignerName",
        "string",
        "",
        0,
        "Requested signer for the request.",
    ),
    (
        "Requestor",
        "string",
        "",
        0,
        "Base64-encoded PKCS#10 CSR data",
    ),
    (
        "RequestedDuration",
        "string",
        "",
        0,
        "expirationSeconds is the requested duration of validity of the issued certificate.",
    ),
    (
        "Condition",
        "string",
        "",
        0,
        "Conditions applied to the request, such as approval or denial.",
    ),
];
const LEASES: &[Spec] = &[
    NAME,
    (
        "Holder",
        "string",
        "",
        0,
        "holderIdentity contains the identity of the holder of a current lease.",
    ),
    AGE,
];
const STORAGE_CLASSES: &[Spec] = &[
    NAME,
    (
        "Provisioner",
        "string",
        "",
        0,
        "provisioner indicates the type of the provisioner.",
    ),
    (
        "ReclaimPolicy",
        "string",
        "",
        0,
        "reclaimPolicy controls the reclaimPolicy for dynamically provisioned PersistentVolumes of this storage class.",
    ),
    (
        "VolumeBindingMode",
        "string",
        "",
        0,
        "volumeBindingMode indicates how PersistentVolumeClaims should be provisioned and bound.",
    ),
    (
        "AllowVolumeExpansion",
        "string",
        "",
        0,
        "allowVolumeExpansion shows whether the storage class allow volume expand.",
    ),
    AGE,
];
const CONTROLLER_REVISIONS: &[Spec] = &[
    NAME,
    ("Controller", "string", "", 0, "Controller of the object"),
    (
        "Revision",
        "string",
        "",
        0,
        "Revision indicates the revision of the state represented by Data.",
    ),
    AGE,
];
const RESOURCE_QUOTAS: &[Spec] = &[
    NAME,
    (
        "Request",
        "string",
        "",
        0,
        "Request represents a minimum amount of cpu/memory that a container may consume.",
    ),
    (
        "Limit",
        "string",
        "",
        0,
        "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node.",
    ),
    AGE,
];
const PRIORITY_CLASSES: &[Spec] = &[
    NAME,
    (
        "Value",
        "integer",
        "",
        0,
        "value represents the integer value of this priority class.",
    ),
    (
        "Global-Default",
        "boolean",
        "",
        0,
        "globalDefault specifies whether this PriorityClass should be considered as the default priority for pods that do not have any priority class.",
    ),
    AGE,
    (
        "PreemptionPolicy",
        "string",
        "",
        0,
        "preemptionPolicy is the Policy for preempting pods with lower priority.",
    ),
];
const RUNTIME_CLASSES: &[Spec] = &[
    NAME,
    (
        "Handler",
        "string",
        "",
        0,
        "handler specifies the underlying runtime and configuration that the CRI implementation will use to handle pods of this class.",
    ),
    AGE,
];
const ENDPOINT_SLICES: &[Spec] = &[
    NAME,
    (
        "AddressType",
        "string",
        "",
        0,
        "addressType specifies the type of address carried by this EndpointSlice.",
    ),
    (
        "Ports",
        "string",
        "",
        0,
        "ports specifies the list of network ports exposed by each endpoint in this slice.",
    ),
    (
        "Endpoints",
        "string",
        "",
        0,
        "endpoints is a list of unique endpoints in this slice.",
    ),
    AGE,
];
const WEBHOOK_CONFIGURATIONS: &[Spec] = &[
    NAME,
    (
        "Webhooks",
        "integer",
        "",
        0,
        "Webhooks indicates the number of webhooks registered in this configuration",
    ),
    AGE,
];

fn specs(group: &str, resource: &str) -> Option<&'static [Spec]> {
    Some(match (group, resource) {
        ("", "pods") => PODS,
        ("", "podtemplates") => POD_TEMPLATES,
        ("", "replicationcontrollers") => REPLICATION_CONTROLLERS,
        ("", "services") => SERVICES,
        ("", "endpoints") => ENDPOINTS,
        ("", "nodes") => NODES,
        ("" | "events.k8s.io", "events") => EVENTS,
        ("", "namespaces") => NAMESPACES,
        ("", "secrets") => SECRETS,
        ("", "serviceaccounts") => SERVICE_ACCOUNTS,
        ("", "persistentvolumes") => PERSISTENT_VOLUMES,
        ("", "persistentvolumeclaims") => PERSISTENT_VOLUME_CLAIMS,
        ("", "configmaps") => CONFIG_MAPS,
        ("", "resourcequotas") => RESOURCE_QUOTAS,
        ("apps", "deployments") => DEPLOYMENTS,
        ("apps", "replicasets") => REPLICA_SETS,
        ("apps", "statefulsets") => STATEFUL_SETS,
        ("apps", "daemonsets") => DAEMON_SETS,
        ("apps", "controllerrevisions") => CONTROLLER_REVISIONS,
        ("batch", "jobs") => JOBS,
        ("batch", "cronjobs") => CRON_JOBS,
        ("autoscaling", "horizontalpodautoscalers") => HPAS,
        ("policy", "poddisruptionbudgets") => PDBS,
        ("networking.k8s.io", "ingresses") => INGRESSES,
        ("networking.k8s.io", "ingressclasses") => INGRESS_CLASSES,
        ("networking.k8s.io", "networkpolicies") => NETWORK_POLICIES,
        ("rbac.authorization.k8s.io", "rolebindings") => ROLE_BINDINGS,
        ("rbac.authorization.k8s.io", "clusterrolebindings") => CLUSTER_ROLE_BINDINGS,
        ("certificates.k8s.io", "certificatesigningrequests") => CSRS,
        ("coordination.k8s.io", "leases") => LEASES,
        ("storage.k8s.io", "storageclasses") => STORAGE_CLASSES,
        ("scheduling.k8s.io", "priorityclasses") => PRIORITY_CLASSES,
        ("node.k8s.io", "runtimeclasses") => RUNTIME_CLASSES,
        ("discovery.k8s.io", "endpointslices") => ENDPOINT_SLICES,
        (
            "admissionregistration.k8s.io",
            "mutatingwebhookconfigurations" | "validatingwebhookconfigurations",
        ) => WEBHOOK_CONFIGURATIONS,
        _ => return None,
    })
}

/// Built-in kinds that upstream prints with the default convertor
/// (`Name`, `Created At`).
fn uses_default_printer(group: &str, resource: &str) -> bool {
    matches!(
        (group, resource),
        ("rbac.authorization.k8s.io", "roles" | "clusterroles")
            | ("apiextensions.k8s.io", "customresourcedefinitions")
            | ("", "limitranges")
    )
}

/// The column definitions upstream serves for a built-in resource (all of
/// them, wide ones with priority 1), `Name`/`Created At` for built-ins
/// printed by the default convertor (roles, cluster roles, CRDs, limit
/// ranges), or `None` for resources this crate has no printer for — the
/// caller then uses [`default_columns`].
pub fn builtin_columns(group: &str, resource: &str) -> Option<Vec<Column>> {
    if let Some(specs) = specs(group, resource) {
        return Some(
            specs
                .iter()
                .map(|(name, type_, format, priority, desc)| {
                    Column::new(name, type_, format, *priority, desc)
                })
                .collect(),
        );
    }
    uses_default_printer(group, resource).then(default_columns)
}

/// The cells upstream prints for a built-in object, matching
/// [`builtin_columns`] (wide cells included); for other resources the
/// [`default_row`] (`Name`, `Created At`).
pub fn builtin_row(group: &str, resource: &str, object: &Value, now: Timestamp) -> Vec<Value> {
    let o = Obj(object);
    match (group, resource) {
        ("", "pods") => pod_row(o, now),
        ("", "podtemplates") => {
            let (names, images) = containers(o.arr(&["template", "spec", "containers"]));
            vec![
                o.name(),
                names.into(),
                images.into(),
                format_labels(o.map(&["template", "metadata", "labels"])).into(),
            ]
        }
        ("", "replicationcontrollers") => {
            let (names, images) = containers(o.arr(&["spec", "template", "spec", "containers"]));
            vec![
                o.name(),
                o.int_or(&["spec", "replicas"], 1).into(),
                o.int(&["status", "replicas"]).into(),
                o.int(&["status", "readyReplicas"]).into(),
                o.age(now),
                names.into(),
                images.into(),
                format_labels(o.map(&["spec", "selector"])).into(),
            ]
        }
        ("", "services") => service_row(o, now),
        ("", "endpoints") => vec![
            o.name(),
            format_endpoints(o.arr(&["subsets"])).into(),
            o.age(now),
        ],
        ("", "nodes") => node_row(o, now),
        ("" | "events.k8s.io", "events") => event_row(o, now),
        ("", "namespaces") => vec![o.name(), o.str(&["status", "phase"]).into(), o.age(now)],
        ("", "secrets") => vec![
            o.name(),
            o.str(&["type"]).into(),
            (o.map(&["data"]).map_or(0, Map::len) as i64).into(),
            o.age(now),
        ],
        ("", "serviceaccounts") => vec![
            o.name(),
            (o.arr(&["secrets"]).len() as i64).into(),
            o.age(now),
        ],
        ("", "configmaps") => vec![
            o.name(),
            ((o.map(&["data"]).map_or(0, Map::len) + o.map(&["binaryData"]).map_or(0, Map::len))
                as i64)
                .into(),
            o.age(now),
        ],
        ("", "persistentvolumes") => pv_row(o, now),
        ("", "persistentvolumeclaims") => pvc_row(o, now),
        ("", "resourcequotas") => resource_quota_row(o, now),
        ("apps", "deployments") => {
            let (names, images) = containers(o.arr(&["spec", "template", "spec", "containers"]));
            vec![
                o.name(),
                format!(
                    "{}/{}",
                    o.int(&["status", "readyReplicas"]),
                    o.int_or(&["spec", "replicas"], 1)
                )
                .into(),
                o.int(&["status", "updatedReplicas"]).into(),
                o.int(&["status", "availableReplicas"]).into(),
                o.age(now),
                names.into(),
                images.into(),
                selector_string(o.get(&["spec", "selector"])).into(),
            ]
        }
        ("apps", "replicasets") => {
            let (names, images) = containers(o.arr(&["spec", "template", "spec", "containers"]));
            vec![
                o.name(),
                o.int_or(&["spec", "replicas"], 1).into(),
                o.int(&["status", "replicas"]).into(),
                o.int(&["status", "readyReplicas"]).into(),
                o.age(now),
                names.into(),
                images.into(),
                format_label_selector(o.get(&["spec", "selector"])).into(),
            ]
        }
        ("apps", "statefulsets") => {
            let (names, images) = containers(o.arr(&["spec", "template", "spec", "containers"]));
            vec![
                o.name(),
                format!(
                    "{}/{}",
                    o.int(&["status", "readyReplicas"]),
                    o.int_or(&["spec", "replicas"], 1)
                )
                .into(),
                o.age(now),
                names.into(),
                images.into(),
            ]
        }
        ("apps", "daemonsets") => {
            let (names, images) = containers(o.arr(&["spec", "template", "spec", "containers"]));
            vec![
                o.name(),
                o.int(&["status", "desiredNumberScheduled"]).into(),
                o.int(&["status", "currentNumberScheduled"]).into(),
                o.int(&["status", "numberReady"]).into(),
                o.int(&["status", "updatedNumberScheduled"]).into(),
                o.int(&["status", "numberAvailable"]).into(),
                format_labels(o.map(&["spec", "template", "spec", "nodeSelector"])).into(),
                o.age(now),
                names.into(),
                images.into(),
                format_label_selector(o.get(&["spec", "selector"])).into(),
            ]
        }
        ("apps", "controllerrevisions") => vec![
            o.name(),
            controller_of(o).into(),
            o.int(&["revision"]).into(),
            o.age(now),
        ],
        ("batch", "jobs") => job_row(o, now),
        ("batch", "cronjobs") => cron_job_row(o, now),
        ("autoscaling", "horizontalpodautoscalers") => hpa_row(o, now),
        ("policy", "poddisruptionbudgets") => vec![
            o.name(),
            int_or_string(o.get(&["spec", "minAvailable"])).into(),
            int_or_string(o.get(&["spec", "maxUnavailable"])).into(),
            o.int(&["status", "disruptionsAllowed"]).into(),
            o.age(now),
        ],
        ("networking.k8s.io", "ingresses") => ingress_row(o, now),
        ("networking.k8s.io", "ingressclasses") => {
            let parameters = match o.get(&["spec", "parameters"]) {
                Some(p) if p.is_object() => {
                    let p = Obj(p);
                    let mut s = p.str(&["kind"]).to_owned();
                    if let Some(group) = p.get(&["apiGroup"]).and_then(Value::as_str) {
                        s.push('.');
                        s.push_str(group);
                    }
                    s.push('/');
                    s.push_str(p.str(&["name"]));
                    s
                }
                _ => "<none>".to_owned(),
            };
            vec![
                o.name(),
                o.str(&["spec", "controller"]).into(),
                parameters.into(),
                o.age(now),
            ]
        }
        ("networking.k8s.io", "networkpolicies") => vec![
            o.name(),
            format_label_selector(Some(
                o.get(&["spec", "podSelector"])
                    .unwrap_or(&Value::Object(Map::new())),
            ))
            .into(),
            o.age(now),
        ],
        ("rbac.authorization.k8s.io", "rolebindings" | "clusterrolebindings") => {
            binding_row(o, now)
        }
        ("certificates.k8s.io", "certificatesigningrequests") => csr_row(o, now),
        ("coordination.k8s.io", "leases") => vec![
            o.name(),
            o.str(&["spec", "holderIdentity"]).into(),
            o.age(now),
        ],
        ("storage.k8s.io", "storageclasses") => {
            let mut name = o.meta_str("name").to_owned();
            let annotations = o.map(&["metadata", "annotations"]);
            let is_default = |k: &str| {
                annotations.and_then(|a| a.get(k)).and_then(Value::as_str) == Some("true")
            };
            if is_default("storageclass.kubernetes.io/is-default-class")
                || is_default("storageclass.beta.kubernetes.io/is-default-class")
            {
                name.push_str(" (default)");
            }
            vec![
                name.into(),
                o.str(&["provisioner"]).into(),
                o.str_or(&["reclaimPolicy"], "Delete").into(),
                o.str_or(&["volumeBindingMode"], "Immediate").into(),
                o.bool(&["allowVolumeExpansion"]).into(),
                o.age(now),
            ]
        }
        ("scheduling.k8s.io", "priorityclasses") => vec![
            o.name(),
            o.int(&["value"]).into(),
            o.bool(&["globalDefault"]).into(),
            o.age(now),
            o.str(&["preemptionPolicy"]).into(),
        ],
        ("node.k8s.io", "runtimeclasses") => vec![o.name(), o.str(&["handler"]).into(), o.age(now)],
        ("discovery.k8s.io", "endpointslices") => endpoint_slice_row(o, now),
        (
            "admissionregistration.k8s.io",
            "mutatingwebhookconfigurations" | "validatingwebhookconfigurations",
        ) => {
            vec![
                o.name(),
                (o.arr(&["webhooks"]).len() as i64).into(),
                o.age(now),
            ]
        }
        _ => default_row(object),
    }
}

/// Row conditions upstream attaches to a built-in object's row: a pod that
/// `Succeeded` or `Failed` is `Completed` (kubectl uses this to gray it
/// out). Empty for everything else.
pub fn builtin_row_conditions(group: &str, resource: &str, object: &Value) -> Vec<Value> {
    if (group, resource) != ("", "pods") {
        return Vec::new();
    }
    let (reason, message) = match Obj(object).str(&["status", "phase"]) {
        "Succeeded" => ("Succeeded", "The pod has completed successfully."),
        "Failed" => ("Failed", "The pod failed."),
        _ => return Vec::new(),
    };
    vec![json!({"type": "Completed", "status": "True", "reason": reason, "message": message})]
}

/// A read-only view of a JSON object with upstream's zero-value defaults.
#[derive(Clone, Copy)]
struct Obj<'a>(&'a Value);

impl<'a> Obj<'a> {
    fn get(self, path: &[&str]) -> Option<&'a Value> {
        path.iter().try_fold(self.0, |v, k| v.get(k))
    }
    fn str(self, path: &[&str]) -> &'a str {
        self.get(path).and_then(Value::as_str).unwrap_or("")
    }
    fn str_or(self, path: &[&str], default: &'a str) -> &'a str {
        self.get(path).and_then(Value::as_str).unwrap_or(default)
    }
    fn int(self, path: &[&str]) -> i64 {
        self.int_or(path, 0)
    }
    fn int_or(self, path: &[&str], default: i64) -> i64 {
        match self.get(path) {
            Some(Value::Number(n)) => n
                .as_i64()
                .or_else(|| n.as_f64().map(|f| f as i64))
                .unwrap_or(default),
            _ => default,
        }
    }
    fn bool(self, path: &[&str]) -> bool {
        self.get(path).and_then(Value::as_bool).unwrap_or(false)
    }
    fn arr(self, path: &[&str]) -> &'a [Value] {
        self.get(path)
            .and_then(Value::as_array)
            .map_or(&[], Vec::as_slice)
    }
    fn map(self, path: &[&str]) -> Option<&'a Map<String, Value>> {
        self.get(path).and_then(Value::as_object)
    }
    fn ts(self, path: &[&str]) -> Option<Timestamp> {
        timestamp_field(self.get(path))
    }
    fn meta_str(self, key: &str) -> &'a str {
        self.str(&["metadata", key])
    }
    fn name(self) -> Value {
        Value::String(self.meta_str("name").to_owned())
    }
    fn age(self, now: Timestamp) -> Value {
        Value::String(age_of(self.ts(&["metadata", "creationTimestamp"]), now))
    }
    fn deleting(self) -> bool {
        self.ts(&["metadata", "deletionTimestamp"]).is_some()
    }
}

fn or_none(s: &str) -> String {
    if s.is_empty() {
        "<none>".to_owned()
    } else {
        s.to_owned()
    }
}

/// Names and images of containers, comma-separated.
fn containers(list: &[Value]) -> (String, String) {
    let names: Vec<&str> = list.iter().map(|c| Obj(c).str(&["name"])).collect();
    let images: Vec<&str> = list.iter().map(|c| Obj(c).str(&["image"])).collect();
    (names.join(","), images.join(","))
}

/// Upstream's `labels.FormatLabels`: sorted `k=v` pairs, or `<none>`.
fn format_labels(map: Option<&Map<String, Value>>) -> String {
    let Some(map) = map.filter(|m| !m.is_empty()) else {
        return "<none>".to_owned();
    };
    let mut pairs: Vec<String> = map
        .iter()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
        .collect();
    pairs.sort();
    pairs.join(",")
}

/// Upstream's `metav1.FormatLabelSelector`: canonical string, `<none>` when
/// empty (or absent), `<error>` when invalid.
fn format_label_selector(selector: Option<&Value>) -> String {
    match LabelSelector::from_label_selector_json(selector.unwrap_or(&Value::Null)) {
        Ok(s) => {
            let text = s.to_string();
            if text.is_empty() {
                "<none>".to_owned()
            } else {
                text
            }
        }
        Err(_) => "<error>".to_owned(),
    }
}

/// A deployment's selector as upstream prints it: canonical string (empty
/// when absent), `<invalid>` when invalid.
fn selector_string(selector: Option<&Value>) -> String {
    match LabelSelector::from_label_selector_json(selector.unwrap_or(&Value::Null)) {
        Ok(s) => s.to_string(),
        Err(_) => "<invalid>".to_owned(),
    }
}

/// An `IntOrString` as text, or `N/A` when unset.
fn int_or_string(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => "N/A".to_owned(),
    }
}

fn condition_true(conditions: &[Value], type_: &str) -> bool {
    conditions
        .iter()
        .find(|c| Obj(c).str(&["type"]) == type_)
        .is_some_and(|c| Obj(c).str(&["status"]) == "True")
}

fn later(a: Option<Timestamp>, b: Option<Timestamp>) -> Option<Timestamp> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, None) => a,
        (None, b) => b,
    }
}

fn pod_row(o: Obj<'_>, now: Timestamp) -> Vec<Value> {
    let init_specs = o.arr(&["spec", "initContainers"]);
    let restartable = |name: &str| {
        init_specs
            .iter()
            .find(|c| Obj(c).str(&["name"]) == name)
            .is_some_and(|c| Obj(c).str(&["restartPolicy"]) == "Always")
    };
    let total = o.arr(&["spec", "containers"]).len()
        + init_specs
            .iter()
            .filter(|c| Obj(c).str(&["restartPolicy"]) == "Always")
            .count();
    let mut ready = 0usize;
    let mut restarts = 0i64;
    let mut restartable_restarts = 0i64;
    let mut last_restart: Option<Timestamp> = None;
    let mut last_restartable_restart: Option<Timestamp> = None;

    let phase = o.str(&["status", "phase"]);
    let status_reason = o.str(&["status", "reason"]);
    let mut reason = if status_reason.is_empty() {
        phase.to_owned()
    } else {
        status_reason.to_owned()
    };
    let conditions = o.arr(&["status", "conditions"]);
    if conditions.iter().any(|c| {
        Obj(c).str(&["type"]) == "PodScheduled" && Obj(c).str(&["reason"]) == "SchedulingGated"
    }) {
        reason = "SchedulingGated".to_owned();
    }

    let mut initializing = false;
    for (i, status) in o
        .arr(&["status", "initContainerStatuses"])
        .iter()
        .enumerate()
    {
        let c = Obj(status);
        restarts += c.int(&["restartCount"]);
        let finished = c.ts(&["lastState", "terminated", "finishedAt"]);
        last_restart = later(last_restart, finished);
        let is_restartable = restartable(c.str(&["name"]));
        if is_restartable {
            restartable_restarts += c.int(&["restartCount"]);
            last_restartable_restart = later(last_restartable_restart, finished);
        }
        let terminated = c
            .get(&["state", "terminated"])
            .filter(|t| t.is_object())
            .map(Obj);
        let waiting = c
            .get(&["state", "waiting"])
            .filter(|t| t.is_object())
            .map(Obj);
        match (terminated, waiting) {
            (Some(t), _) if t.int(&["exitCode"]) == 0 => continue,
            _ if is_restartable && c.bool(&["started"]) => {
                if c.bool(&["ready"]) {
                    ready += 1;
                }
                continue;
            }
            (Some(t), _) => {
                let r = t.str(&["reason"]);
                reason = if !r.is_empty() {
                    format!("Init:{r}")
                } else if t.int(&["signal"]) != 0 {
                    format!("Init:Signal:{}", t.int(&["signal"]))
                } else {
                    format!("Init:ExitCode:{}", t.int(&["exitCode"]))
                };
            }
            (None, Some(w))
                if !w.str(&["reason"]).is_empty() && w.str(&["reason"]) != "PodInitializing" =>
            {
                reason = format!("Init:{}", w.str(&["reason"]));
            }
            _ => reason = format!("Init:{i}/{}", init_specs.len()),
        }
        initializing = true;
        break;
    }

    if !initializing || condition_true(conditions, "Initialized") {
        restarts = restartable_restarts;
        last_restart = last_restartable_restart;
        let mut has_running = false;
        for status in o.arr(&["status", "containerStatuses"]).iter().rev() {
            let c = Obj(status);
            restarts += c.int(&["restartCount"]);
            last_restart = later(
                last_restart,
                c.ts(&["lastState", "terminated", "finishedAt"]),
            );
            let waiting_reason = c.str(&["state", "waiting", "reason"]);
            let terminated = c
                .get(&["state", "terminated"])
                .filter(|t| t.is_object())
                .map(Obj);
            if !waiting_reason.is_empty() {
                reason = waiting_reason.to_owned();
            } else if let Some(t) = terminated {
                let r = t.str(&["reason"]);
                reason = if !r.is_empty() {
                    r.to_owned()
                } else if t.int(&["signal"]) != 0 {
                    format!("Signal:{}", t.int(&["signal"]))
                } else {
                    format!("ExitCode:{}", t.int(&["exitCode"]))
                };
            } else if c.bool(&["ready"])
                && c.get(&["state", "running"]).is_some_and(Value::is_object)
            {
                has_running = true;
                ready += 1;
            }
        }
        if reason == "Completed" && has_running {
            reason = if condition_true(conditions, "Ready") {
                "Running"
            } else {
                "NotReady"
            }
            .to_owned();
        }
    }

    if o.deleting() && status_reason == "NodeLost" {
        reason = "Unknown".to_owned();
    } else if o.deleting() && phase != "Failed" && phase != "Succeeded" {
        reason = "Terminating".to_owned();
    }

    let restarts_text = match last_restart {
        Some(ts) if restarts != 0 => format!("{restarts} ({} ago)", age_of(Some(ts), now)),
        _ => restarts.to_string(),
    };

    let pod_ip = o
        .arr(&["status", "podIPs"])
        .first()
        .map(|ip| Obj(ip).str(&["ip"]))
        .unwrap_or_else(|| o.str(&["status", "podIP"]));
    let gates = o.arr(&["spec", "readinessGates"]);
    let readiness_gates = if gates.is_empty() {
        "<none>".to_owned()
    } else {
        let satisfied = gates
            .iter()
            .filter(|g| condition_true(conditions, Obj(g).str(&["conditionType"])))
            .count();
        format!("{satisfied}/{}", gates.len())
    };
    vec![
        o.name(),
        format!("{ready}/{total}").into(),
        reason.into(),
        restarts_text.into(),
        o.age(now),
        or_none(pod_ip).into(),
        or_none(o.str(&["spec", "nodeName"])).into(),
        or_none(o.str(&["status", "nominatedNodeName"])).into(),
        readiness_gates.into(),
    ]
}

fn load_balancer_ingress(ingress: &[Value]) -> Vec<String> {
    let set: BTreeSet<&str> = ingress
        .iter()
        .filter_map(|i| {
            let i = Obj(i);
            let ip = i.str(&["ip"]);
            let host = i.str(&["hostname"]);
            if !ip.is_empty() {
                Some(ip)
            } else if !host.is_empty() {
                Some(host)
            } else {
                None
            }
        })
        .collect();
    set.into_iter().map(str::to_owned).collect()
}

fn service_row(o: Obj<'_>, now: Timestamp) -> Vec<Value> {
    let svc_type = o.str_or(&["spec", "type"], "ClusterIP");
    let cluster_ip = o
        .arr(&["spec", "clusterIPs"])
        .first()
        .and_then(Value::as_str)
        .unwrap_or_else(|| o.str(&["spec", "clusterIP"]));
    let external_ips: Vec<&str> = o
        .arr(&["spec", "externalIPs"])
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let external = match svc_type {
        "ClusterIP" | "NodePort" => {
            if external_ips.is_empty() {
                "<none>".to_owned()
            } else {
                external_ips.join(",")
            }
        }
        "LoadBalancer" => {
            let mut all = load_balancer_ingress(o.arr(&["status", "loadBalancer", "ingress"]));
            if all.is_empty() && external_ips.is_empty() {
                "<pending>".to_owned()
            } else {
                all.extend(external_ips.iter().map(|s| (*s).to_owned()));
                all.join(",")
            }
        }
        "ExternalName" => o.str(&["spec", "externalName"]).to_owned(),
        _ => "<unknown>".to_owned(),
    };
    let ports: Vec<String> = o
        .arr(&["spec", "ports"])
        .iter()
        .map(|p| {
            let p = Obj(p);
            let protocol = p.str_or(&["protocol"], "TCP");
            let node_port = p.int(&["nodePort"]);
            if node_port > 0 {
                format!("{}:{node_port}/{protocol}", p.int(&["port"]))
            } else {
                format!("{}/{protocol}", p.int(&["port"]))
            }
        })
        .collect();
    vec![
        o.name(),
        svc_type.into(),
        or_none(cluster_ip).into(),
        external.into(),
        or_none(&ports.join(",")).into(),
        o.age(now),
        format_labels(o.map(&["spec", "selector"])).into(),
    ]
}

fn join_host_port(host: &str, port: i64) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// Upstream's `formatEndpoints`: up to three `ip:port`, then `+ N more...`.
fn format_endpoints(subsets: &[Value]) -> String {
    if subsets.is_empty() {
        return "<none>".to_owned();
    }
    const MAX: usize = 3;
    let mut list: Vec<String> = Vec::new();
    let mut more = false;
    let mut count = 0usize;
    for subset in subsets {
        let ss = Obj(subset);
        let addresses = ss.arr(&["addresses"]);
        let ports = ss.arr(&["ports"]);
        if ports.is_empty() {
            count += addresses.len();
            for a in addresses {
                if list.len() == MAX {
                    more = true;
                    break;
                }
                list.push(Obj(a).str(&["ip"]).to_owned());
            }
            continue;
        }
        for port in ports {
            count += addresses.len();
            for a in addresses {
                if list.len() == MAX {
                    more = true;
                    break;
                }
                list.push(join_host_port(
                    Obj(a).str(&["ip"]),
                    Obj(port).int(&["port"]),
                ));
            }
        }
    }
    let joined = list.join(",");
    if more {
        format!("{joined} + {} more...", count.saturating_sub(MAX))
    } else {
        joined
    }
}

fn node_row(o: Obj<'_>, now: Timestamp) -> Vec<Value> {
    let mut status: Vec<String> = Vec::new();
    if let Some(ready) = o
        .arr(&["status", "conditions"])
        .iter()
        .rev()
        .find(|c| Obj(c).str(&["type"]) == "Ready")
    {
        status.push(
            if Obj(ready).str(&["status"]) == "True" {
                "Ready"
            } else {
                "NotReady"
            }
            .to_owned(),
        );
    }
    if status.is_empty() {
        status.push("Unknown".to_owned());
    }
    if o.bool(&["spec", "unschedulable"]) {
        status.push("SchedulingDisabled".to_owned());
    }
    let mut roles: BTreeSet<&str> = BTreeSet::new();
    if let Some(labels) = o.map(&["metadata", "labels"]) {
        for (k, v) in labels {
            if let Some(role) = k.strip_prefix("node-role.kubernetes.io/") {
                if !role.is_empty() {
                    roles.insert(role);
                }
            } else if k == "kubernetes.io/role"
                && let Some(v) = v.as_str().filter(|v| !v.is_empty())
            {
                roles.insert(v);
            }
        }
    }
    let roles = roles.into_iter().collect::<Vec<_>>().join(",");
    let address = |kind: &str| {
        o.arr(&["status", "addresses"])
            .iter()
            .find(|a| Obj(a).str(&["type"]) == kind)
            .map_or_else(
                || "<none>".to_owned(),
                |a| Obj(a).str(&["address"]).to_owned(),
            )
    };
    let info = |k: &str| {
        let v = o.str(&["status", "nodeInfo", k]);
        if v.is_empty() {
            "<unknown>".to_owned()
        } else {
            v.to_owned()
        }
    };
    vec![
        o.name(),
        status.join(",").into(),
        or_none(&roles).into(),
        o.age(now),
        o.str(&["status", "nodeInfo", "kubeletVersion"]).into(),
        address("InternalIP").into(),
        address("ExternalIP").into(),
        info("osImage").into(),
        info("kernelVersion").into(),
        info("containerRuntimeVersion").into(),
    ]
}

fn event_row(o: Obj<'_>, now: Timestamp) -> Vec<Value> {
    // Core v1 events and events.k8s.io/v1 events name the same data differently.
    let pick = |core: &[&str], events: &[&str]| o.get(core).or_else(|| o.get(events));
    let first_ts = timestamp_field(pick(&["firstTimestamp"], &["deprecatedFirstTimestamp"]));
    let first_seen = match first_ts {
        Some(ts) => age_of(Some(ts), now),
        None => age_of(o.ts(&["eventTime"]), now),
    };
    let mut last_seen =
        match timestamp_field(pick(&["lastTimestamp"], &["deprecatedLastTimestamp"])) {
            Some(ts) => age_of(Some(ts), now),
            None => first_seen.clone(),
        };
    let mut count = pick(&["count"], &["deprecatedCount"])
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if let Some(series) = o.get(&["series"]).filter(|s| s.is_object()) {
        last_seen = age_of(Obj(series).ts(&["lastObservedTime"]), now);
        count = Obj(series).int(&["count"]);
    } else if count == 0 {
        count = 1;
    }
    let involved = pick(&["involvedObject"], &["regarding"]).map(Obj);
    let kind = involved.map_or("", |i| i.str(&["kind"])).to_lowercase();
    let name = involved.map_or("", |i| i.str(&["name"]));
    let target = if name.is_empty() {
        kind
    } else {
        format!("{kind}/{name}")
    };
    let source = pick(&["source"], &["deprecatedSource"]).map(Obj);
    let component = source.map_or("", |s| s.str(&["component"]));
    let host = source.map_or("", |s| s.str(&["host"]));
    let component = if component.is_empty() {
        o.get(&["reportingComponent"])
            .or_else(|| o.get(&["reportingController"]))
            .and_then(Value::as_str)
            .unwrap_or("")
    } else {
        component
    };
    let host = if host.is_empty() {
        o.str(&["reportingInstance"])
    } else {
        host
    };
    let source_text = if host.is_empty() {
        component.to_owned()
    } else {
        format!("{component}, {host}")
    };
    let message = pick(&["message"], &["note"])
        .and_then(Value::as_str)
        .unwrap_or("");
    vec![
        last_seen.into(),
        o.str(&["type"]).into(),
        o.str(&["reason"]).into(),
        target.into(),
        involved.map_or("", |i| i.str(&["fieldPath"])).into(),
        source_text.into(),
        message.trim().into(),
        first_seen.into(),
        count.into(),
        o.name(),
    ]
}

/// Upstream's `GetAccessModesAsString`.
fn access_modes(modes: &[Value]) -> String {
    let has = |m: &str| modes.iter().any(|v| v.as_str() == Some(m));
    [
        ("ReadWriteOnce", "RWO"),
        ("ReadOnlyMany", "ROX"),
        ("ReadWriteMany", "RWX"),
        ("ReadWriteOncePod", "RWOP"),
    ]
    .iter()
    .filter(|(m, _)| has(m))
    .map(|(_, short)| *short)
    .collect::<Vec<_>>()
    .join(",")
}

/// The storage class of a PV or PVC: the beta annotation wins over the field.
fn storage_class(o: Obj<'_>) -> String {
    o.get(&[
        "metadata",
        "annotations",
        "volume.beta.kubernetes.io/storage-class",
    ])
    .and_then(Value::as_str)
    .unwrap_or_else(|| o.str(&["spec", "storageClassName"]))
    .to_owned()
}

fn quantity(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => "0".to_owned(),
    }
}

fn pv_row(o: Obj<'_>, now: Timestamp) -> Vec<Value> {
    let claim = match o
        .get(&["spec", "claimRef"])
        .filter(|c| c.is_object())
        .map(Obj)
    {
        Some(c) => format!("{}/{}", c.str(&["namespace"]), c.str(&["name"])),
        None => String::new(),
    };
    let phase = if o.deleting() {
        "Terminating"
    } else {
        o.str(&["status", "phase"])
    };
    vec![
        o.name(),
        quantity(o.get(&["spec", "capacity", "storage"])).into(),
        access_modes(o.arr(&["spec", "accessModes"])).into(),
        o.str(&["spec", "persistentVolumeReclaimPolicy"]).into(),
        phase.into(),
        claim.into(),
        storage_class(o).into(),
        o.str_or(&["spec", "volumeAttributesClassName"], "<unset>")
            .into(),
        o.str(&["status", "reason"]).into(),
        o.age(now),
        o.str_or(&["spec", "volumeMode"], "<unset>").into(),
    ]
}

fn pvc_row(o: Obj<'_>, now: Timestamp) -> Vec<Value> {
    let phase = if o.deleting() {
        "Terminating"
    } else {
        o.str(&["status", "phase"])
    };
    let volume = o.str(&["spec", "volumeName"]);
    let (capacity, modes) = if volume.is_empty() {
        (String::new(), String::new())
    } else {
        (
            quantity(o.get(&["status", "capacity", "storage"])),
            access_modes(o.arr(&["status", "accessModes"])),
        )
    };
    vec![
        o.name(),
        phase.into(),
        volume.into(),
        capacity.into(),
        modes.into(),
        storage_class(o).into(),
        o.str_or(&["spec", "volumeAttributesClassName"], "<unset>")
            .into(),
        o.age(now),
        o.str_or(&["spec", "volumeMode"], "<unset>").into(),
    ]
}

fn resource_quota_row(o: Obj<'_>, now: Timestamp) -> Vec<Value> {
    let mut requests = Vec::new();
    let mut limits = Vec::new();
    if let Some(hard) = o.map(&["status", "hard"]) {
        let mut names: Vec<&String> = hard.keys().collect();
        names.sort();
        for name in names {
            let used = quantity(o.get(&["status", "used", name.as_str()]));
            let entry = format!("{name}: {used}/{}", quantity(hard.get(name.as_str())));
            if name.split('.').count() > 1 && name.starts_with("limits.") {
                limits.push(entry);
            } else {
                requests.push(entry);
            }
        }
    }
    vec![
        o.name(),
        requests.join(", ").into(),
        limits.join(", ").into(),
        o.age(now),
    ]
}

fn controller_of(o: Obj<'_>) -> String {
    let Some(owner) = o
        .arr(&["metadata", "ownerReferences"])
        .iter()
        .find(|r| Obj(r).bool(&["controller"]))
        .map(Obj)
    else {
        return "<none>".to_owned();
    };
    let group =
        crate::validation::parse_group_version(owner.str(&["apiVersion"])).map_or("", |(g, _)| g);
    let kind = owner.str(&["kind"]);
    let name = owner.str(&["name"]);
    if kind.is_empty() && group.is_empty() {
        return name.to_owned();
    }
    let group_kind = if group.is_empty() {
        kind.to_owned()
    } else {
        format!("{kind}.{group}")
    };
    format!("{}/{name}", group_kind.to_lowercase())
}

fn job_row(o: Obj<'_>, now: Timestamp) -> Vec<Value> {
    let succeeded = o.int(&["status", "succeeded"]);
    let completions = match o.get(&["spec", "completions"]).and_then(Value::as_i64) {
        Some(c) => format!("{succeeded}/{c}"),
        None => {
            let parallelism = o.int(&["spec", "parallelism"]);
            if parallelism > 1 {
                format!("{succeeded}/1 of {parallelism}")
            } else {
                format!("{succeeded}/1")
            }
        }
    };
    let duration = match (
        o.ts(&["status", "startTime"]),
        o.ts(&["status", "completionTime"]),
    ) {
        (None, _) => String::new(),
        (Some(start), None) => human_duration(now.duration_since(start)),
        (Some(start), Some(done)) => human_duration(done.duration_since(start)),
    };
    let conditions = o.arr(&["status", "conditions"]);
    let status = if condition_true(conditions, "Complete") {
        "Complete"
    } else if condition_true(conditions, "Failed") {
        "Failed"
    } else if o.deleting() {
        "Terminating"
    } else if condition_true(conditions, "Suspended") {
        "Suspended"
    } else if condition_true(conditions, "FailureTarget") {
        "FailureTarget"
    } else {
        "Running"
    };
    let (names, images) = containers(o.arr(&["spec", "template", "spec", "containers"]));
    vec![
        o.name(),
        status.into(),
        completions.into(),
        duration.into(),
        o.age(now),
        names.into(),
        images.into(),
        format_label_selector(o.get(&["spec", "selector"])).into(),
    ]
}

fn cron_job_row(o: Obj<'_>, now: Timestamp) -> Vec<Value> {
    let last = match o.ts(&["status", "lastScheduleTime"]) {
        Some(ts) => age_of(Some(ts), now),
        None => "<none>".to_owned(),
    };
    let suspend = match o.get(&["spec", "suspend"]).and_then(Value::as_bool) {
        Some(true) => "True",
        Some(false) => "False",
        None => "<unset>",
    };
    let template = ["spec", "jobTemplate", "spec"];
    let (names, images) =
        containers(o.arr(&[&template[..], &["template", "spec", "containers"]].concat()));
    vec![
        o.name(),
        o.str(&["spec", "schedule"]).into(),
        o.str_or(&["spec", "timeZone"], "<none>").into(),
        suspend.into(),
        (o.arr(&["status", "active"]).len() as i64).into(),
        last.into(),
        o.age(now),
        names.into(),
        images.into(),
        format_label_selector(o.get(&[&template[..], &["selector"]].concat())).into(),
    ]
}

fn quantity_text(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// Upstream's `formatHPAMetrics` for `autoscaling/v2` objects (and the
/// CPU target of `autoscaling/v1` ones).
fn hpa_targets(o: Obj<'_>) -> String {
    let specs = o.arr(&["spec", "metrics"]);
    let statuses = o.arr(&["status", "currentMetrics"]);
    if specs.is_empty() {
        if let Some(target) = o
            .get(&["spec", "targetCPUUtilizationPercentage"])
            .and_then(Value::as_i64)
        {
            let current = o
                .get(&["status", "currentCPUUtilizationPercentage"])
                .and_then(Value::as_i64)
                .map_or_else(|| "<unknown>".to_owned(), |c| format!("{c}%"));
            return format!("cpu: {current}/{target}%");
        }
        return "<none>".to_owned();
    }
    const MAX: usize = 2;
    let mut list: Vec<String> = Vec::new();
    for (i, spec) in specs.iter().enumerate() {
        let spec = Obj(spec);
        let status = statuses.get(i).map(Obj);
        let unknown = || "<unknown>".to_owned();
        let entry = match spec.str(&["type"]) {
            kind @ ("External" | "Object") => {
                let key = if kind == "External" {
                    "external"
                } else {
                    "object"
                };
                let st = status
                    .and_then(|s| s.get(&[key]))
                    .filter(|v| v.is_object())
                    .map(Obj);
                match quantity_text(spec.get(&[key, "target", "averageValue"])) {
                    Some(target) => {
                        let cur = st
                            .and_then(|s| quantity_text(s.get(&["current", "averageValue"])))
                            .unwrap_or_else(unknown);
                        format!("{cur}/{target} (avg)")
                    }
                    None => {
                        let target = quantity_text(spec.get(&[key, "target", "value"]))
                            .unwrap_or_else(|| "0".into());
                        let cur = st
                            .map(|s| {
                                quantity_text(s.get(&["current", "value"]))
                                    .unwrap_or_else(|| "0".into())
                            })
                            .unwrap_or_else(unknown);
                        format!("{cur}/{target}")
                    }
                }
            }
            "Pods" => {
                let target = quantity_text(spec.get(&["pods", "target", "averageValue"]))
                    .unwrap_or_else(|| "0".into());
                let cur = status
                    .and_then(|s| s.get(&["pods"]))
                    .filter(|v| v.is_object())
                    .map(|p| {
                        quantity_text(Obj(p).get(&["current", "averageValue"]))
                            .unwrap_or_else(|| "0".into())
                    })
                    .unwrap_or_else(unknown);
                format!("{cur}/{target}")
            }
            kind @ ("Resource" | "ContainerResource") => {
                let key = if kind == "Resource" {
                    "resource"
                } else {
                    "containerResource"
                };
                let name = spec.str(&[key, "name"]);
                let st = status
                    .and_then(|s| s.get(&[key]))
                    .filter(|v| v.is_object())
                    .map(Obj);
                match quantity_text(spec.get(&[key, "target", "averageValue"])) {
                    Some(target) => {
                        let cur = st
                            .map(|s| {
                                quantity_text(s.get(&["current", "averageValue"]))
                                    .unwrap_or_else(|| "0".into())
                            })
                            .unwrap_or_else(unknown);
                        format!("{name}: {cur}/{target}")
                    }
                    None => {
                        let cur = st
                            .and_then(|s| {
                                s.get(&["current", "averageUtilization"])
                                    .and_then(Value::as_i64)
                            })
                            .map_or_else(unknown, |u| format!("{u}%"));
                        let target = spec
                            .get(&[key, "target", "averageUtilization"])
                            .and_then(Value::as_i64)
                            .map_or_else(|| "<auto>".to_owned(), |u| format!("{u}%"));
                        format!("{name}: {cur}/{target}")
                    }
                }
            }
            _ => "<unknown type>".to_owned(),
        };
        list.push(entry);
    }
    let count = list.len();
    if count > MAX {
        list.truncate(MAX);
        format!("{} + {} more...", list.join(", "), count - MAX)
    } else {
        list.join(", ")
    }
}

fn hpa_row(o: Obj<'_>, now: Timestamp) -> Vec<Value> {
    let reference = format!(
        "{}/{}",
        o.str(&["spec", "scaleTargetRef", "kind"]),
        o.str(&["spec", "scaleTargetRef", "name"])
    );
    let min_pods = o
        .get(&["spec", "minReplicas"])
        .and_then(Value::as_i64)
        .map_or_else(|| "<unset>".to_owned(), |m| m.to_string());
    vec![
        o.name(),
        reference.into(),
        hpa_targets(o).into(),
        min_pods.into(),
        o.int(&["spec", "maxReplicas"]).into(),
        o.int(&["status", "currentReplicas"]).into(),
        o.age(now),
    ]
}

fn ingress_row(o: Obj<'_>, now: Timestamp) -> Vec<Value> {
    const MAX: usize = 3;
    let rules = o.arr(&["spec", "rules"]);
    let mut hosts: Vec<&str> = Vec::new();
    let mut more = false;
    for rule in rules {
        if hosts.len() == MAX {
            more = true;
        }
        let host = Obj(rule).str(&["host"]);
        if !more && !host.is_empty() {
            hosts.push(host);
        }
    }
    let hosts = if hosts.is_empty() {
        "*".to_owned()
    } else if more {
        format!(
            "{} + {} more...",
            hosts.join(","),
            rules.len().saturating_sub(MAX)
        )
    } else {
        hosts.join(",")
    };
    let address = load_balancer_ingress(o.arr(&["status", "loadBalancer", "ingress"])).join(",");
    let ports = if o.arr(&["spec", "tls"]).is_empty() {
        "80"
    } else {
        "80, 443"
    };
    vec![
        o.name(),
        o.str_or(&["spec", "ingressClassName"], "<none>").into(),
        hosts.into(),
        address.into(),
        ports.into(),
        o.age(now),
    ]
}

fn binding_row(o: Obj<'_>, now: Timestamp) -> Vec<Value> {
    let mut users = Vec::new();
    let mut groups = Vec::new();
    let mut service_accounts = Vec::new();
    for subject in o.arr(&["subjects"]) {
        let s = Obj(subject);
        match s.str(&["kind"]) {
            "ServiceAccount" => {
                service_accounts.push(format!("{}/{}", s.str(&["namespace"]), s.str(&["name"])))
            }
            "User" => users.push(s.str(&["name"]).to_owned()),
            "Group" => groups.push(s.str(&["name"]).to_owned()),
            _ => {}
        }
    }
    vec![
        o.name(),
        format!(
            "{}/{}",
            o.str(&["roleRef", "kind"]),
            o.str(&["roleRef", "name"])
        )
        .into(),
        o.age(now),
        users.join(", ").into(),
        groups.join(", ").into(),
        service_accounts.join(", ").into(),
    ]
}

fn csr_row(o: Obj<'_>, now: Timestamp) -> Vec<Value> {
    let conditions = o.arr(&["status", "conditions"]);
    let has = |t: &str| conditions.iter().any(|c| Obj(c).str(&["type"]) == t);
    let mut status = if has("Denied") {
        "Denied"
    } else if has("Approved") {
        "Approved"
    } else {
        "Pending"
    }
    .to_owned();
    if has("Failed") {
        status.push_str(",Failed");
    }
    if !o.str(&["status", "certificate"]).is_empty() {
        status.push_str(",Issued");
    }
    let requested = o
        .get(&["spec", "expirationSeconds"])
        .and_then(Value::as_i64)
        .map_or_else(
            || "<none>".to_owned(),
            |s| human_duration(SignedDuration::from_secs(s)),
        );
    vec![
        o.name(),
        o.age(now),
        or_none(o.str(&["spec", "signerName"])).into(),
        o.str(&["spec", "username"]).into(),
        requested.into(),
        status.into(),
    ]
}

/// Upstream's `listWithMoreString`.
fn list_with_more(list: Vec<String>, more: bool, count: usize, max: usize) -> String {
    let joined = list.join(",");
    if more {
        format!("{joined} + {} more...", count.saturating_sub(max))
    } else if joined.is_empty() {
        "<unset>".to_owned()
    } else {
        joined
    }
}

fn endpoint_slice_row(o: Obj<'_>, now: Timestamp) -> Vec<Value> {
    const MAX: usize = 3;
    let mut ports = Vec::new();
    let mut more = false;
    let port_list = o.arr(&["ports"]);
    for port in port_list {
        let p = Obj(port);
        if ports.len() < MAX {
            ports.push(match p.get(&["port"]).and_then(Value::as_i64) {
                Some(n) => n.to_string(),
                None => p
                    .get(&["name"])
                    .and_then(Value::as_str)
                    .unwrap_or("*")
                    .to_owned(),
            });
        } else if ports.len() == MAX {
            more = true;
        }
    }
    let ports = list_with_more(ports, more, port_list.len(), MAX);
    let mut addresses = Vec::new();
    let mut more = false;
    let mut count = 0;
    for endpoint in o.arr(&["endpoints"]) {
        for address in Obj(endpoint).arr(&["addresses"]) {
            if addresses.len() < MAX {
                addresses.push(address.as_str().unwrap_or("").to_owned());
            } else if addresses.len() == MAX {
                more = true;
            }
            count += 1;
        }
    }
    vec![
        o.name(),
        o.str(&["addressType"]).into(),
        ports.into(),
        list_with_more(addresses, more, count, MAX).into(),
        o.age(now),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::parse_time;

    fn now() -> Timestamp {
        parse_time("2026-01-10T12:00:00Z").unwrap()
    }

    const CREATED: &str = "2026-01-10T11:55:00Z"; // 5m before now

    fn names(group: &str, resource: &str) -> Vec<String> {
        builtin_columns(group, resource)
            .unwrap()
            .into_iter()
            .map(|c| c.name)
            .collect()
    }

    fn row(group: &str, resource: &str, obj: Value) -> Vec<Value> {
        let cells = builtin_row(group, resource, &obj, now());
        assert_eq!(
            cells.len(),
            builtin_columns(group, resource).unwrap().len(),
            "{resource}"
        );
        cells
    }

    #[test]
    fn pod_running_with_restarts_and_wide_cells() {
        assert_eq!(
            names("", "pods"),
            [
                "Name",
                "Ready",
                "Status",
                "Restarts",
                "Age",
                "IP",
                "Node",
                "Nominated Node",
                "Readiness Gates"
            ]
        );
        let cols = builtin_columns("", "pods").unwrap();
        assert_eq!(cols[5].priority, 1);
        assert_eq!(cols[3].type_, "string");
        let pod = json!({
            "metadata": {"name": "web-1", "creationTimestamp": CREATED},
            "spec": {"nodeName": "node-a", "containers": [{"name": "a"}, {"name": "b"}],
                     "readinessGates": [{"conditionType": "example.com/ready"}]},
            "status": {
                "phase": "Running", "podIPs": [{"ip": "10.1.0.5"}],
                "conditions": [{"type": "Ready", "status": "True"}, {"type": "example.com/ready", "status": "True"}],
                "containerStatuses": [
                    {"name": "a", "ready": true, "restartCount": 2, "state": {"running": {}},
                     "lastState": {"terminated": {"finishedAt": "2026-01-10T11:58:00Z", "exitCode": 1}}},
                    {"name": "b", "ready": true, "restartCount": 0, "state": {"running": {}}}
                ]
            }
        });
        assert_eq!(
            row("", "pods", pod),
            vec![
                json!("web-1"),
                json!("2/2"),
                json!("Running"),
                json!("2 (2m ago)"),
                json!("5m"),
                json!("10.1.0.5"),
                json!("node-a"),
                json!("<none>"),
                json!("1/1")
            ]
        );
    }

    #[test]
    fn pod_status_reasons_follow_upstream() {
        let status = |pod: Value| builtin_row("", "pods", &pod, now())[2].clone();
        let waiting = json!({"spec": {"containers": [{"name": "a"}]}, "status": {"phase": "Pending",
            "containerStatuses": [{"name": "a", "state": {"waiting": {"reason": "ImagePullBackOff"}}}]}});
        assert_eq!(status(waiting), json!("ImagePullBackOff"));
        let crashed = json!({"spec": {"containers": [{"name": "a"}]}, "status": {"phase": "Running",
            "containerStatuses": [{"name": "a", "state": {"terminated": {"exitCode": 137, "signal": 0}}}]}});
        assert_eq!(status(crashed), json!("ExitCode:137"));
        let init = json!({"spec": {"initContainers": [{"name": "i1"}, {"name": "i2"}], "containers": [{"name": "a"}]},
            "status": {"phase": "Pending", "initContainerStatuses": [
                {"name": "i1", "state": {"terminated": {"exitCode": 0}}},
                {"name": "i2", "state": {"running": {}}}]}});
        assert_eq!(status(init), json!("Init:1/2"));
        let init_failed = json!({"spec": {"initContainers": [{"name": "i1"}], "containers": [{"name": "a"}]},
            "status": {"phase": "Pending", "initContainerStatuses": [
                {"name": "i1", "state": {"terminated": {"exitCode": 3}}}]}});
        assert_eq!(status(init_failed), json!("Init:ExitCode:3"));
        let init_backoff = json!({"spec": {"initContainers": [{"name": "i1"}], "containers": [{"name": "a"}]},
            "status": {"phase": "Pending", "initContainerStatuses": [
                {"name": "i1", "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}});
        assert_eq!(status(init_backoff), json!("Init:CrashLoopBackOff"));
        let terminating = json!({"metadata": {"deletionTimestamp": "2026-01-10T11:59:00Z"},
            "status": {"phase": "Running"}});
        assert_eq!(status(terminating), json!("Terminating"));
        let lost = json!({"metadata": {"deletionTimestamp": "2026-01-10T11:59:00Z"},
            "status": {"phase": "Running", "reason": "NodeLost"}});
        assert_eq!(status(lost), json!("Unknown"));
        let gated = json!({"status": {"phase": "Pending",
            "conditions": [{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}]}});
        assert_eq!(status(gated), json!("SchedulingGated"));
        let completed_but_running = json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}]},
            "status": {"phase": "Running", "containerStatuses": [
                {"name": "a", "ready": false, "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}},
                {"name": "b", "ready": true, "state": {"running": {}}}]}});
        assert_eq!(status(completed_but_running), json!("NotReady"));
        let sidecar = json!({"spec": {"initContainers": [{"name": "s", "restartPolicy": "Always"}], "containers": [{"name": "a"}]},
            "status": {"phase": "Running",
                "initContainerStatuses": [{"name": "s", "started": true, "ready": true, "state": {"running": {}}}],
                "containerStatuses": [{"name": "a", "ready": true, "state": {"running": {}}}]}});
        let cells = builtin_row("", "pods", &sidecar, now());
        assert_eq!(cells[1], json!("2/2"));
        assert_eq!(cells[2], json!("Running"));
        let minimal = builtin_row("", "pods", &json!({"metadata": {"name": "p"}}), now());
        assert_eq!(
            minimal,
            vec![
                json!("p"),
                json!("0/0"),
                json!(""),
                json!("0"),
                json!("<unknown>"),
                json!("<none>"),
                json!("<none>"),
                json!("<none>"),
                json!("<none>")
            ]
        );
    }

    #[test]
    fn finished_pods_get_completed_row_condition() {
        let c = builtin_row_conditions("", "pods", &json!({"status": {"phase": "Succeeded"}}));
        assert_eq!(
            c,
            vec![
                json!({"type": "Completed", "status": "True", "reason": "Succeeded",
            "message": "The pod has completed successfully."})
            ]
        );
        assert_eq!(
            builtin_row_conditions("", "pods", &json!({"status": {"phase": "Failed"}}))[0]["reason"],
            "Failed"
        );
        assert!(
            builtin_row_conditions("", "pods", &json!({"status": {"phase": "Running"}})).is_empty()
        );
        assert!(builtin_row_conditions("apps", "deployments", &json!({})).is_empty());
    }

    #[test]
    fn deployment_columns_and_row() {
        assert_eq!(
            names("apps", "deployments"),
            [
                "Name",
                "Ready",
                "Up-to-date",
                "Available",
                "Age",
                "Containers",
                "Images",
                "Selector"
            ]
        );
        let d = json!({
            "metadata": {"name": "web", "creationTimestamp": CREATED},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"}, {"name": "log", "image": "busybox"}]}}},
            "status": {"readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2}
        });
        assert_eq!(
            row("apps", "deployments", d),
            vec![
                json!("web"),
                json!("2/3"),
                json!(3),
                json!(2),
                json!("5m"),
                json!("nginx,log"),
                json!("nginx:1.27,busybox"),
                json!("app=web")
            ]
        );
    }

    #[test]
    fn replica_set_stateful_set_and_daemon_set_rows() {
        assert_eq!(
            names("apps", "replicasets"),
            [
                "Name",
                "Desired",
                "Current",
                "Ready",
                "Age",
                "Containers",
                "Images",
                "Selector"
            ]
        );
        let rs = json!({"metadata": {"name": "web-5d8f", "creationTimestamp": CREATED},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web", "pod-template-hash": "5d8f"}},
                     "template": {"spec": {"containers": [{"name": "nginx", "image": "nginx"}]}}},
            "status": {"replicas": 2, "readyReplicas": 1}});
        assert_eq!(
            row("apps", "replicasets", rs),
            vec![
                json!("web-5d8f"),
                json!(2),
                json!(2),
                json!(1),
                json!("5m"),
                json!("nginx"),
                json!("nginx"),
                json!("app=web,pod-template-hash=5d8f")
            ]
        );

        assert_eq!(
            names("apps", "statefulsets"),
            ["Name", "Ready", "Age", "Containers", "Images"]
        );
        let sts = json!({"metadata": {"name": "db", "creationTimestamp": CREATED},
            "spec": {"replicas": 3, "template": {"spec": {"containers": [{"name": "pg", "image": "postgres:17"}]}}},
            "status": {"readyReplicas": 3}});
        assert_eq!(
            row("apps", "statefulsets", sts),
            vec![
                json!("db"),
                json!("3/3"),
                json!("5m"),
                json!("pg"),
                json!("postgres:17")
            ]
        );

        assert_eq!(
            names("apps", "daemonsets"),
            [
                "Name",
                "Desired",
                "Current",
                "Ready",
                "Up-to-date",
                "Available",
                "Node Selector",
                "Age",
                "Containers",
                "Images",
                "Selector"
            ]
        );
        let ds = json!({"metadata": {"name": "agent", "creationTimestamp": CREATED},
            "spec": {"selector": {"matchLabels": {"app": "agent"}},
                     "template": {"spec": {"nodeSelector": {"kubernetes.io/os": "linux"},
                                           "containers": [{"name": "a", "image": "agent:1"}]}}},
            "status": {"desiredNumberScheduled": 3, "currentNumberScheduled": 3, "numberReady": 2,
                       "updatedNumberScheduled": 3, "numberAvailable": 2}});
        assert_eq!(
            row("apps", "daemonsets", ds),
            vec![
                json!("agent"),
                json!(3),
                json!(3),
                json!(2),
                json!(3),
                json!(2),
                json!("kubernetes.io/os=linux"),
                json!("5m"),
                json!("a"),
                json!("agent:1"),
                json!("app=agent")
            ]
        );
    }

    #[test]
    fn job_and_cron_job_rows() {
        assert_eq!(
            names("batch", "jobs"),
            [
                "Name",
                "Status",
                "Completions",
                "Duration",
                "Age",
                "Containers",
                "Images",
                "Selector"
            ]
        );
        let job = json!({"metadata": {"name": "pi", "creationTimestamp": CREATED},
            "spec": {"completions": 1, "parallelism": 1, "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "u"}},
                     "template": {"spec": {"containers": [{"name": "pi", "image": "perl"}]}}},
            "status": {"succeeded": 1, "startTime": "2026-01-10T11:55:00Z", "completionTime": "2026-01-10T11:55:42Z",
                       "conditions": [{"type": "Complete", "status": "True"}]}});
        assert_eq!(
            row("batch", "jobs", job),
            vec![
                json!("pi"),
                json!("Complete"),
                json!("1/1"),
                json!("42s"),
                json!("5m"),
                json!("pi"),
                json!("perl"),
                json!("batch.kubernetes.io/controller-uid=u")
            ]
        );
        let running =
            json!({"spec": {"parallelism": 3}, "status": {"startTime": "2026-01-10T11:57:00Z"}});
        let cells = builtin_row("batch", "jobs", &running, now());
        assert_eq!(cells[1], json!("Running"));
        assert_eq!(cells[2], json!("0/1 of 3"));
        assert_eq!(cells[3], json!("3m"));
        assert_eq!(cells[7], json!("<none>"));

        assert_eq!(
            names("batch", "cronjobs"),
            [
                "Name",
                "Schedule",
                "Timezone",
                "Suspend",
                "Active",
                "Last Schedule",
                "Age",
                "Containers",
                "Images",
                "Selector"
            ]
        );
        let cj = json!({"metadata": {"name": "hello", "creationTimestamp": CREATED},
            "spec": {"schedule": "*/1 * * * *", "suspend": false,
                     "jobTemplate": {"spec": {"template": {"spec": {"containers": [{"name": "hello", "image": "busybox"}]}}}}},
            "status": {"active": [{"name": "hello-1"}], "lastScheduleTime": "2026-01-10T11:59:00Z"}});
        assert_eq!(
            row("batch", "cronjobs", cj),
            vec![
                json!("hello"),
                json!("*/1 * * * *"),
                json!("<none>"),
                json!("False"),
                json!(1),
                json!("60s"),
                json!("5m"),
                json!("hello"),
                json!("busybox"),
                json!("<none>")
            ]
        );
    }

    #[test]
    fn service_rows_by_type() {
        assert_eq!(
            names("", "services"),
            [
                "Name",
                "Type",
                "Cluster-IP",
                "External-IP",
                "Port(s)",
                "Age",
                "Selector"
            ]
        );
        let svc = json!({"metadata": {"name": "web", "creationTimestamp": CREATED},
            "spec": {"type": "ClusterIP", "clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10"],
                     "ports": [{"port": 80, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}], "selector": {"app": "web"}}});
        assert_eq!(
            row("", "services", svc),
            vec![
                json!("web"),
                json!("ClusterIP"),
                json!("10.96.0.10"),
                json!("<none>"),
                json!("80/TCP,53/UDP"),
                json!("5m"),
                json!("app=web")
            ]
        );
        let lb = json!({"spec": {"type": "LoadBalancer", "clusterIPs": ["10.0.0.1"], "ports": [{"port": 443, "nodePort": 30443}]},
            "status": {"loadBalancer": {"ingress": [{"ip": "203.0.113.9"}, {"hostname": "lb.example.com"}]}}});
        let cells = builtin_row("", "services", &lb, now());
        assert_eq!(cells[3], json!("203.0.113.9,lb.example.com"));
        assert_eq!(cells[4], json!("443:30443/TCP"));
        let pending = json!({"spec": {"type": "LoadBalancer"}});
        assert_eq!(
            builtin_row("", "services", &pending, now())[3],
            json!("<pending>")
        );
        let ext = json!({"spec": {"type": "ExternalName", "externalName": "db.example.com"}});
        let cells = builtin_row("", "services", &ext, now());
        assert_eq!(cells[2], json!("<none>"));
        assert_eq!(cells[3], json!("db.example.com"));
        assert_eq!(cells[4], json!("<none>"));
        assert_eq!(cells[6], json!("<none>"));
    }

    #[test]
    fn config_map_secret_namespace_and_service_account_rows() {
        assert_eq!(names("", "configmaps"), ["Name", "Data", "Age"]);
        let cm = json!({"metadata": {"name": "cfg", "creationTimestamp": CREATED}, "data": {"a": "1", "b": "2"}, "binaryData": {"c": "AA=="}});
        assert_eq!(
            row("", "configmaps", cm),
            vec![json!("cfg"), json!(3), json!("5m")]
        );

        assert_eq!(names("", "secrets"), ["Name", "Type", "Data", "Age"]);
        let secret = json!({"metadata": {"name": "tls", "creationTimestamp": CREATED}, "type": "kubernetes.io/tls",
            "data": {"tls.crt": "", "tls.key": ""}});
        assert_eq!(
            row("", "secrets", secret),
            vec![
                json!("tls"),
                json!("kubernetes.io/tls"),
                json!(2),
                json!("5m")
            ]
        );

        assert_eq!(names("", "namespaces"), ["Name", "Status", "Age"]);
        let ns = json!({"metadata": {"name": "default", "creationTimestamp": CREATED}, "status": {"phase": "Active"}});
        assert_eq!(
            row("", "namespaces", ns),
            vec![json!("default"), json!("Active"), json!("5m")]
        );

        assert_eq!(names("", "serviceaccounts"), ["Name", "Secrets", "Age"]);
        let sa = json!({"metadata": {"name": "default", "creationTimestamp": CREATED}});
        assert_eq!(
            row("", "serviceaccounts", sa),
            vec![json!("default"), json!(0), json!("5m")]
        );
    }

    #[test]
    fn node_row_with_roles_and_wide_cells() {
        assert_eq!(
            names("", "nodes"),
            [
                "Name",
                "Status",
                "Roles",
                "Age",
                "Version",
                "Internal-IP",
                "External-IP",
                "OS-Image",
                "Kernel-Version",
                "Container-Runtime"
            ]
        );
        let node = json!({"metadata": {"name": "node-a", "creationTimestamp": CREATED,
                "labels": {"node-role.kubernetes.io/control-plane": "", "kubernetes.io/role": "worker"}},
            "spec": {"unschedulable": true},
            "status": {"conditions": [{"type": "MemoryPressure", "status": "False"}, {"type": "Ready", "status": "True"}],
                       "addresses": [{"type": "InternalIP", "address": "192.168.1.10"}, {"type": "Hostname", "address": "node-a"}],
                       "nodeInfo": {"kubeletVersion": "v1.35.0", "osImage": "Debian GNU/Linux 13", "kernelVersion": "6.12.0",
                                    "containerRuntimeVersion": "containerd://2.1.0"}}});
        assert_eq!(
            row("", "nodes", node),
            vec![
                json!("node-a"),
                json!("Ready,SchedulingDisabled"),
                json!("control-plane,worker"),
                json!("5m"),
                json!("v1.35.0"),
                json!("192.168.1.10"),
                json!("<none>"),
                json!("Debian GNU/Linux 13"),
                json!("6.12.0"),
                json!("containerd://2.1.0")
            ]
        );
        let bare = builtin_row("", "nodes", &json!({"metadata": {"name": "n"}}), now());
        assert_eq!(bare[1], json!("Unknown"));
        assert_eq!(bare[2], json!("<none>"));
        assert_eq!(bare[7], json!("<unknown>"));
    }

    #[test]
    fn event_rows_for_core_and_events_api() {
        assert_eq!(
            names("", "events"),
            [
                "Last Seen",
                "Type",
                "Reason",
                "Object",
                "Subobject",
                "Source",
                "Message",
                "First Seen",
                "Count",
                "Name"
            ]
        );
        let ev = json!({"metadata": {"name": "web-1.17a", "creationTimestamp": CREATED},
            "involvedObject": {"kind": "Pod", "name": "web-1", "fieldPath": "spec.containers{nginx}"},
            "reason": "Pulled", "type": "Normal", "message": " Successfully pulled image \n",
            "source": {"component": "kubelet", "host": "node-a"},
            "firstTimestamp": "2026-01-10T11:50:00Z", "lastTimestamp": "2026-01-10T11:59:00Z", "count": 4});
        assert_eq!(
            row("", "events", ev),
            vec![
                json!("60s"),
                json!("Normal"),
                json!("Pulled"),
                json!("pod/web-1"),
                json!("spec.containers{nginx}"),
                json!("kubelet, node-a"),
                json!("Successfully pulled image"),
                json!("10m"),
                json!(4),
                json!("web-1.17a")
            ]
        );
        let new_style = json!({"metadata": {"name": "e2"}, "regarding": {"kind": "Deployment", "name": "web"},
            "reason": "ScalingReplicaSet", "type": "Normal", "note": "Scaled up", "reportingController": "deployment-controller",
            "eventTime": "2026-01-10T11:58:00.000000Z"});
        assert_eq!(
            row("events.k8s.io", "events", new_style),
            vec![
                json!("2m"),
                json!("Normal"),
                json!("ScalingReplicaSet"),
                json!("deployment/web"),
                json!(""),
                json!("deployment-controller"),
                json!("Scaled up"),
                json!("2m"),
                json!(1),
                json!("e2")
            ]
        );
        let series = json!({"series": {"count": 7, "lastObservedTime": "2026-01-10T11:59:30.000000Z"},
            "eventTime": "2026-01-10T11:00:00.000000Z"});
        let cells = builtin_row("", "events", &series, now());
        assert_eq!(cells[0], json!("30s"));
        assert_eq!(cells[8], json!(7));
    }

    #[test]
    fn endpoints_and_endpoint_slices_rows() {
        assert_eq!(names("", "endpoints"), ["Name", "Endpoints", "Age"]);
        let ep = json!({"metadata": {"name": "web", "creationTimestamp": CREATED}, "subsets": [
            {"addresses": [{"ip": "10.1.0.1"}, {"ip": "10.1.0.2"}, {"ip": "fd00::3"}, {"ip": "10.1.0.4"}],
             "ports": [{"port": 8080}]}]});
        assert_eq!(
            row("", "endpoints", ep),
            vec![
                json!("web"),
                json!("10.1.0.1:8080,10.1.0.2:8080,[fd00::3]:8080 + 1 more..."),
                json!("5m")
            ]
        );
        assert_eq!(
            builtin_row("", "endpoints", &json!({}), now())[1],
            json!("<none>")
        );

        let slice = json!({"metadata": {"name": "web-abc", "creationTimestamp": CREATED}, "addressType": "IPv4",
            "ports": [{"port": 80}, {"name": "metrics"}], "endpoints": [{"addresses": ["10.1.0.1"]}, {"addresses": ["10.1.0.2"]}]});
        assert_eq!(
            row("discovery.k8s.io", "endpointslices", slice),
            vec![
                json!("web-abc"),
                json!("IPv4"),
                json!("80,metrics"),
                json!("10.1.0.1,10.1.0.2"),
                json!("5m")
            ]
        );
    }

    #[test]
    fn persistent_volume_claim_and_volume_rows() {
        assert_eq!(
            names("", "persistentvolumeclaims"),
            [
                "Name",
                "Status",
                "Volume",
                "Capacity",
                "Access Modes",
                "StorageClass",
                "VolumeAttributesClass",
                "Age",
                "VolumeMode"
            ]
        );
        let pvc = json!({"metadata": {"name": "data", "creationTimestamp": CREATED},
            "spec": {"volumeName": "pv-1", "storageClassName": "standard", "volumeMode": "Filesystem"},
            "status": {"phase": "Bound", "capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteMany", "ReadWriteOnce"]}});
        assert_eq!(
            row("", "persistentvolumeclaims", pvc),
            vec![
                json!("data"),
                json!("Bound"),
                json!("pv-1"),
                json!("10Gi"),
                json!("RWO,RWX"),
                json!("standard"),
                json!("<unset>"),
                json!("5m"),
                json!("Filesystem")
            ]
        );
        let pending = json!({"spec": {"storageClassName": "fast"}, "status": {"phase": "Pending"}});
        let cells = builtin_row("", "persistentvolumeclaims", &pending, now());
        assert_eq!(cells[3], json!(""));
        assert_eq!(cells[5], json!("fast"));

        let pv = json!({"metadata": {"name": "pv-1", "creationTimestamp": CREATED},
            "spec": {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"], "persistentVolumeReclaimPolicy": "Retain",
                     "claimRef": {"namespace": "default", "name": "data"}, "storageClassName": "standard"},
            "status": {"phase": "Bound"}});
        assert_eq!(
            row("", "persistentvolumes", pv),
            vec![
                json!("pv-1"),
                json!("10Gi"),
                json!("RWO"),
                json!("Retain"),
                json!("Bound"),
                json!("default/data"),
                json!("standard"),
                json!("<unset>"),
                json!(""),
                json!("5m"),
                json!("<unset>")
            ]
        );
    }

    #[test]
    fn lease_role_binding_pdb_and_ingress_rows() {
        assert_eq!(
            names("coordination.k8s.io", "leases"),
            ["Name", "Holder", "Age"]
        );
        let lease = json!({"metadata": {"name": "leader", "creationTimestamp": CREATED}, "spec": {"holderIdentity": "pod-a_1"}});
        assert_eq!(
            row("coordination.k8s.io", "leases", lease),
            vec![json!("leader"), json!("pod-a_1"), json!("5m")]
        );

        assert_eq!(
            names("rbac.authorization.k8s.io", "rolebindings"),
            ["Name", "Role", "Age", "Users", "Groups", "ServiceAccounts"]
        );
        let rb = json!({"metadata": {"name": "read", "creationTimestamp": CREATED},
            "roleRef": {"kind": "ClusterRole", "name": "view"},
            "subjects": [{"kind": "User", "name": "alice"}, {"kind": "User", "name": "bob"},
                         {"kind": "Group", "name": "devs"}, {"kind": "ServiceAccount", "namespace": "ci", "name": "bot"}]});
        assert_eq!(
            row("rbac.authorization.k8s.io", "rolebindings", rb.clone()),
            vec![
                json!("read"),
                json!("ClusterRole/view"),
                json!("5m"),
                json!("alice, bob"),
                json!("devs"),
                json!("ci/bot")
            ]
        );
        assert_eq!(
            row("rbac.authorization.k8s.io", "clusterrolebindings", rb)[1],
            json!("ClusterRole/view")
        );

        assert_eq!(
            names("policy", "poddisruptionbudgets"),
            [
                "Name",
                "Min Available",
                "Max Unavailable",
                "Allowed Disruptions",
                "Age"
            ]
        );
        let pdb = json!({"metadata": {"name": "web", "creationTimestamp": CREATED}, "spec": {"minAvailable": "50%"},
            "status": {"disruptionsAllowed": 1}});
        assert_eq!(
            row("policy", "poddisruptionbudgets", pdb),
            vec![
                json!("web"),
                json!("50%"),
                json!("N/A"),
                json!(1),
                json!("5m")
            ]
        );

        assert_eq!(
            names("networking.k8s.io", "ingresses"),
            ["Name", "Class", "Hosts", "Address", "Ports", "Age"]
        );
        let ing = json!({"metadata": {"name": "web", "creationTimestamp": CREATED},
            "spec": {"ingressClassName": "nginx", "tls": [{"hosts": ["a.example.com"]}],
                     "rules": [{"host": "a.example.com"}, {"host": "b.example.com"}, {}, {"host": "c.example.com"}, {"host": "d.example.com"}]},
            "status": {"loadBalancer": {"ingress": [{"ip": "203.0.113.7"}]}}});
        assert_eq!(
            row("networking.k8s.io", "ingresses", ing),
            vec![
                json!("web"),
                json!("nginx"),
                json!("a.example.com,b.example.com,c.example.com + 2 more..."),
                json!("203.0.113.7"),
                json!("80, 443"),
                json!("5m")
            ]
        );
        let bare = builtin_row("networking.k8s.io", "ingresses", &json!({}), now());
        assert_eq!(
            bare[1..5],
            [json!("<none>"), json!("*"), json!(""), json!("80")]
        );
    }

    #[test]
    fn default_printed_kinds_show_created_at() {
        for (g, r) in [
            ("rbac.authorization.k8s.io", "roles"),
            ("rbac.authorization.k8s.io", "clusterroles"),
            ("apiextensions.k8s.io", "customresourcedefinitions"),
        ] {
            assert_eq!(names(g, r), ["Name", "Created At"]);
            let obj = json!({"metadata": {"name": "x", "creationTimestamp": CREATED}});
            assert_eq!(
                row(g, r, obj),
                vec![json!("x"), json!("2026-01-10T11:55:00Z")]
            );
        }
        assert!(builtin_columns("example.com", "widgets").is_none());
        assert_eq!(
            builtin_row(
                "example.com",
                "widgets",
                &json!({"metadata": {"name": "w"}}),
                now()
            )[0],
            json!("w")
        );
    }

    #[test]
    fn other_builtin_rows() {
        let sc = json!({"metadata": {"name": "standard", "creationTimestamp": CREATED,
                "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
            "provisioner": "rancher.io/local-path", "volumeBindingMode": "WaitForFirstConsumer"});
        assert_eq!(
            row("storage.k8s.io", "storageclasses", sc),
            vec![
                json!("standard (default)"),
                json!("rancher.io/local-path"),
                json!("Delete"),
                json!("WaitForFirstConsumer"),
                json!(false),
                json!("5m")
            ]
        );
        let pc = json!({"metadata": {"name": "high", "creationTimestamp": CREATED}, "value": 1000, "globalDefault": true,
            "preemptionPolicy": "Never"});
        assert_eq!(
            row("scheduling.k8s.io", "priorityclasses", pc),
            vec![
                json!("high"),
                json!(1000),
                json!(true),
                json!("5m"),
                json!("Never")
            ]
        );
        let rc = json!({"metadata": {"name": "old", "creationTimestamp": CREATED}, "spec": {"replicas": 2, "selector": {"app": "old"}},
            "status": {"replicas": 2, "readyReplicas": 2}});
        assert_eq!(
            row("", "replicationcontrollers", rc),
            vec![
                json!("old"),
                json!(2),
                json!(2),
                json!(2),
                json!("5m"),
                json!(""),
                json!(""),
                json!("app=old")
            ]
        );
        let cr = json!({"metadata": {"name": "web-7d4", "creationTimestamp": CREATED,
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "controller": true}]}, "revision": 3});
        assert_eq!(
            row("apps", "controllerrevisions", cr),
            vec![
                json!("web-7d4"),
                json!("statefulset.apps/web"),
                json!(3),
                json!("5m")
            ]
        );
        let np = json!({"metadata": {"name": "deny", "creationTimestamp": CREATED}, "spec": {"podSelector": {}}});
        assert_eq!(
            row("networking.k8s.io", "networkpolicies", np),
            vec![json!("deny"), json!("<none>"), json!("5m")]
        );
        let csr = json!({"metadata": {"name": "csr-1", "creationTimestamp": CREATED},
            "spec": {"signerName": "kubernetes.io/kube-apiserver-client", "username": "alice", "expirationSeconds": 86400},
            "status": {"conditions": [{"type": "Approved"}], "certificate": "LS0t"}});
        assert_eq!(
            row("certificates.k8s.io", "certificatesigningrequests", csr),
            vec![
                json!("csr-1"),
                json!("5m"),
                json!("kubernetes.io/kube-apiserver-client"),
                json!("alice"),
                json!("24h"),
                json!("Approved,Issued")
            ]
        );
        let hpa = json!({"metadata": {"name": "web", "creationTimestamp": CREATED},
            "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "minReplicas": 1, "maxReplicas": 5,
                     "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}]},
            "status": {"currentReplicas": 2, "currentMetrics": [{"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 35}}}]}});
        assert_eq!(
            row("autoscaling", "horizontalpodautoscalers", hpa),
            vec![
                json!("web"),
                json!("Deployment/web"),
                json!("cpu: 35%/80%"),
                json!("1"),
                json!(5),
                json!(2),
                json!("5m")
            ]
        );
        let rq = json!({"metadata": {"name": "q", "creationTimestamp": CREATED},
            "status": {"hard": {"requests.cpu": "2", "limits.memory": "4Gi", "pods": "10"}, "used": {"requests.cpu": "500m", "pods": "3"}}});
        assert_eq!(
            row("", "resourcequotas", rq),
            vec![
                json!("q"),
                json!("pods: 3/10, requests.cpu: 500m/2"),
                json!("limits.memory: 0/4Gi"),
                json!("5m")
            ]
        );
        let wh = json!({"metadata": {"name": "hooks", "creationTimestamp": CREATED}, "webhooks": [{}, {}]});
        assert_eq!(
            row(
                "admissionregistration.k8s.io",
                "validatingwebhookconfigurations",
                wh
            ),
            vec![json!("hooks"), json!(2), json!("5m")]
        );
        let ic = json!({"metadata": {"name": "nginx", "creationTimestamp": CREATED},
            "spec": {"controller": "k8s.io/ingress-nginx", "parameters": {"apiGroup": "k8s.example.com", "kind": "IngressParameters", "name": "p"}}});
        assert_eq!(
            row("networking.k8s.io", "ingressclasses", ic),
            vec![
                json!("nginx"),
                json!("k8s.io/ingress-nginx"),
                json!("IngressParameters.k8s.example.com/p"),
                json!("5m")
            ]
        );
        let pt = json!({"metadata": {"name": "t"}, "template": {"metadata": {"labels": {"b": "2", "a": "1"}},
            "spec": {"containers": [{"name": "c", "image": "i"}]}}});
        assert_eq!(
            row("", "podtemplates", pt),
            vec![json!("t"), json!("c"), json!("i"), json!("a=1,b=2")]
        );
        let rtc = json!({"metadata": {"name": "gvisor", "creationTimestamp": CREATED}, "handler": "runsc"});
        assert_eq!(
            row("node.k8s.io", "runtimeclasses", rtc),
            vec![json!("gvisor"), json!("runsc"), json!("5m")]
        );
    }

    #[test]
    fn rows_never_panic_on_malformed_objects() {
        let junk = [
            json!(null),
            json!(42),
            json!("x"),
            json!([]),
            json!({"metadata": 5, "spec": [], "status": "x"}),
            json!({"spec": {"containers": "x", "replicas": "3", "ports": [5, null]}, "status": {"containerStatuses": [1, {"state": 7}]}}),
        ];
        let resources = [
            ("", "pods"),
            ("", "services"),
            ("", "nodes"),
            ("", "events"),
            ("", "endpoints"),
            ("", "persistentvolumes"),
            ("", "persistentvolumeclaims"),
            ("", "resourcequotas"),
            ("apps", "deployments"),
            ("apps", "daemonsets"),
            ("apps", "controllerrevisions"),
            ("batch", "jobs"),
            ("batch", "cronjobs"),
            ("autoscaling", "horizontalpodautoscalers"),
            ("networking.k8s.io", "ingresses"),
            ("networking.k8s.io", "ingressclasses"),
            ("rbac.authorization.k8s.io", "rolebindings"),
            ("certificates.k8s.io", "certificatesigningrequests"),
            ("discovery.k8s.io", "endpointslices"),
            ("storage.k8s.io", "storageclasses"),
            ("x", "y"),
        ];
        for obj in &junk {
            for (g, r) in resources {
                let cells = builtin_row(g, r, obj, now());
                let expected = builtin_columns(g, r).unwrap_or_else(default_columns).len();
                assert_eq!(cells.len(), expected, "{g}/{r}");
            }
        }
    }
}
