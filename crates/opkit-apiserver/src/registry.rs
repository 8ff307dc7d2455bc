//! The registry: which resources the server serves, built-in and custom.
//!
//! Every request is resolved to a [`Resource`] here: its group/version/plural, kind, scope,
//! subresources, discovery names, and how its objects are checked (a k8s-openapi type for
//! built-in kinds, a compiled structural schema for custom resources). Custom resources are
//! added and removed at runtime as CustomResourceDefinitions come and go; readers take an
//! immutable snapshot (`Arc`) so request handling never blocks on registration.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use serde_json::Value;

/// The standard verbs of a resource.
pub const ALL_VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

/// Verbs of `status` and `scale` subresources.
pub const SUBRESOURCE_VERBS: &[&str] = &["get", "patch", "update"];

/// Where a resource's `.spec.replicas`-like fields live, for the scale subresource.
#[derive(Debug, Clone)]
pub struct ScalePaths {
    /// JSON path of the desired replicas (e.g. `.spec.replicas`).
    pub spec_replicas: String,
    /// JSON path of the observed replicas (e.g. `.status.replicas`).
    pub status_replicas: String,
    /// JSON path of the label selector in string form, if any.
    pub label_selector: Option<String>,
}

/// How a built-in object is decoded and normalised: into its k8s-openapi type and back.
pub type BuiltinCheck = fn(&Value) -> Result<Value, String>;

/// What backs a resource.
#[derive(Clone)]
pub enum Origin {
    /// A built-in kind, checked by decoding into its k8s-openapi type.
    Builtin(BuiltinCheck),
    /// A version of a CustomResourceDefinition.
    Custom(Arc<CustomVersion>),
}

/// The per-version facts of a custom resource.
pub struct CustomVersion {
    /// The CRD's name (`plural.group`).
    pub crd_name: String,
    /// The CRD's uid (objects are cleaned up per CRD).
    pub crd_uid: String,
    /// The version objects are stored in.
    pub storage_version: String,
    /// How objects move between the CRD's versions (`spec.conversion`).
    pub conversion: crate::webhook_config::Conversion,
    /// The compiled structural schema, if the version has one.
    pub schema: Option<opkit_schema::Schema>,
    /// The compiled `x-kubernetes-validations` (CEL) rules of the schema, evaluated on writes.
    pub cel: Option<Arc<opkit_cel::Validator>>,
    /// The version's `openAPIV3Schema` as written (for OpenAPI documents).
    pub raw_schema: Option<Value>,
    /// `additionalPrinterColumns` of this version.
    pub printer_columns: Vec<Value>,
    /// Whether the root preserves unknown fields.
    pub preserve_unknown_fields: bool,
    /// `selectableFields` (paths without the leading dot) usable in field selectors.
    pub selectable_fields: Vec<String>,
    /// The CRD is being deleted: no new objects.
    pub terminating: bool,
}

/// A resource served from another resource's storage, in its own shape: events.k8s.io/v1
/// `Event` is core/v1 `Event` seen through another API version (upstream stores events once
/// and converts). Objects are stored in the other resource's key space and shape; they are
/// converted on the way in (after this resource's own admission) and on every way out.
pub struct View {
    /// The API group whose key space holds the objects (`""` for core).
    pub storage_group: &'static str,
    /// The plural of the resource whose key space holds the objects.
    pub storage_plural: &'static str,
    /// `apiVersion` of the stored objects.
    pub storage_api_version: &'static str,
    /// `kind` of the stored objects.
    pub storage_kind: &'static str,
    /// A stored object in this resource's shape.
    pub from_storage: fn(Value) -> Value,
    /// An admitted object of this resource in the stored shape (normalised as the stored kind).
    pub to_storage: fn(Value) -> Result<Value, String>,
    /// A field selector label of this resource as the stored resource's label; `None` when this
    /// resource does not support it.
    pub field_label: fn(&str) -> Option<&'static str>,
}

/// One served group/version/resource.
#[derive(Clone)]
pub struct Resource {
    /// API group (empty for core).
    pub group: String,
    /// API version within the group.
    pub version: String,
    /// Plural resource name (URL segment).
    pub plural: String,
    /// Singular name.
    pub singular: String,
    /// Kind.
    pub kind: String,
    /// Kind of its list.
    pub list_kind: String,
    /// Namespaced or cluster-scoped.
    pub namespaced: bool,
    /// Short names (`ft`, `deploy`).
    pub short_names: Vec<String>,
    /// Categories (`all`).
    pub categories: Vec<String>,
    /// Whether a `status` subresource exists.
    pub status: bool,
    /// The scale subresource, if any.
    pub scale: Option<ScalePaths>,
    /// Verbs on the main resource.
    pub verbs: &'static [&'static str],
    /// Whether `metadata.generation` is maintained.
    pub tracks_generation: bool,
    /// Extra subresources served for discovery only (e.g. `serviceaccounts/token`).
    pub extra_subresources: &'static [(
        &'static str,
        &'static str,
        &'static str,
        &'static [&'static str],
    )],
    /// What backs it.
    pub origin: Origin,
    /// Set when its objects live in another resource's storage, in that resource's shape.
    pub view: Option<&'static View>,
}

impl Resource {
    /// `apiVersion` of its objects.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// Whether this is one of the create-only review APIs (TokenReview, SelfSubjectReview,
    /// the access reviews): nothing is stored, the answer is computed.
    pub fn is_review(&self) -> bool {
        !self.is_custom() && is_review_group(&self.group)
    }

    /// Whether objects are custom resources.
    pub fn is_custom(&self) -> bool {
        matches!(self.origin, Origin::Custom(_))
    }

    /// The custom version facts, if custom.
    pub fn custom(&self) -> Option<&CustomVersion> {
        match &self.origin {
            Origin::Custom(c) => Some(c),
            Origin::Builtin(_) => None,
        }
    }

    /// Whether `obj` is in the stored shape of a view (and so must be converted before it is
    /// shown to this resource's clients). Always false for resources that are not views.
    pub fn is_stored_form(&self, obj: &Value) -> bool {
        self.view.is_some_and(|view| {
            obj.get("apiVersion").and_then(Value::as_str) == Some(view.storage_api_version)
                && obj.get("kind").and_then(Value::as_str) == Some(view.storage_kind)
        })
    }

    /// A stored object as this resource's clients see it (unchanged unless this is a view).
    pub fn shown(&self, obj: Value) -> Value {
        match self.view {
            Some(view) if self.is_stored_form(&obj) => (view.from_storage)(obj),
            _ => obj,
        }
    }

    /// An admitted object of this resource in the shape it is stored in (unchanged unless
    /// this is a view).
    pub fn to_storage(&self, obj: Value) -> Result<Value, String> {
        match self.view {
            Some(view) if !self.is_stored_form(&obj) => (view.to_storage)(obj),
            _ => Ok(obj),
        }
    }
}

macro_rules! check {
    ($ty:ty) => {{
        fn check(value: &Value) -> Result<Value, String> {
            let typed: $ty = serde_path_to_error::deserialize(value).map_err(|e| {
                let path = e.path().to_string();
                let inner = e.into_inner().to_string();
                if path == "." || path.is_empty() {
                    inner
                } else {
                    format!("{path}: {inner}")
                }
            })?;
            serde_json::to_value(&typed).map_err(|e| e.to_string())
        }
        check as BuiltinCheck
    }};
}

struct Builtin {
    group: &'static str,
    version: &'static str,
    plural: &'static str,
    kind: &'static str,
    namespaced: bool,
    short_names: &'static [&'static str],
    categories: &'static [&'static str],
    status: bool,
    scale: bool,
    generation: bool,
    check: BuiltinCheck,
}

#[allow(clippy::too_many_arguments)]
const fn b(
    group: &'static str,
    version: &'static str,
    plural: &'static str,
    kind: &'static str,
    namespaced: bool,
    short_names: &'static [&'static str],
    categories: &'static [&'static str],
    status: bool,
    scale: bool,
    generation: bool,
    check: BuiltinCheck,
) -> Builtin {
    Builtin {
        group,
        version,
        plural,
        kind,
        namespaced,
        short_names,
        categories,
        status,
        scale,
        generation,
        check,
    }
}

/// The groups whose resources are all create-only reviews.
fn is_review_group(group: &str) -> bool {
    matches!(group, "authentication.k8s.io" | "authorization.k8s.io")
}

fn builtins() -> Vec<Builtin> {
    use k8s_openapi::api::{
        admissionregistration::v1 as admreg, apps::v1 as apps, authentication::v1 as authn,
        authorization::v1 as authz, autoscaling::v2 as autoscaling, batch::v1 as batch,
        coordination::v1 as coordination, core::v1 as core, discovery::v1 as discovery,
        events::v1 as events, networking::v1 as networking, policy::v1 as policy, rbac::v1 as rbac,
    };
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiext;
    const ALL: &[&str] = &["all"];
    const NONE: &[&str] = &[];
    vec![
        b(
            "",
            "v1",
            "namespaces",
            "Namespace",
            false,
            &["ns"],
            NONE,
            true,
            false,
            false,
            check!(core::Namespace),
        ),
        b(
            "",
            "v1",
            "configmaps",
            "ConfigMap",
            true,
            &["cm"],
            NONE,
            false,
            false,
            false,
            check!(core::ConfigMap),
        ),
        b(
            "",
            "v1",
            "secrets",
            "Secret",
            true,
            NONE,
            NONE,
            false,
            false,
            false,
            check!(core::Secret),
        ),
        b(
            "",
            "v1",
            "services",
            "Service",
            true,
            &["svc"],
            ALL,
            true,
            false,
            false,
            check!(core::Service),
        ),
        b(
            "",
            "v1",
            "serviceaccounts",
            "ServiceAccount",
            true,
            &["sa"],
            NONE,
            false,
            false,
            false,
            check!(core::ServiceAccount),
        ),
        b(
            "",
            "v1",
            "pods",
            "Pod",
            true,
            &["po"],
            ALL,
            true,
            false,
            true,
            check!(core::Pod),
        ),
        b(
            "",
            "v1",
            "nodes",
            "Node",
            false,
            &["no"],
            NONE,
            true,
            false,
            false,
            check!(core::Node),
        ),
        b(
            "",
            "v1",
            "events",
            "Event",
            true,
            &["ev"],
            NONE,
            false,
            false,
            false,
            check!(core::Event),
        ),
        b(
            "",
            "v1",
            "endpoints",
            "Endpoints",
            true,
            &["ep"],
            NONE,
            false,
            false,
            false,
            check!(core::Endpoints),
        ),
        b(
            "",
            "v1",
            "persistentvolumeclaims",
            "PersistentVolumeClaim",
            true,
            &["pvc"],
            NONE,
            true,
            false,
            false,
            check!(core::PersistentVolumeClaim),
        ),
        b(
            "apps",
            "v1",
            "deployments",
            "Deployment",
            true,
            &["deploy"],
            ALL,
            true,
            true,
            true,
            check!(apps::Deployment),
        ),
        b(
            "apps",
            "v1",
            "replicasets",
            "ReplicaSet",
            true,
            &["rs"],
            ALL,
            true,
            true,
            true,
            check!(apps::ReplicaSet),
        ),
        b(
            "apps",
            "v1",
            "statefulsets",
            "StatefulSet",
            true,
            &["sts"],
            ALL,
            true,
            true,
            true,
            check!(apps::StatefulSet),
        ),
        b(
            "apps",
            "v1",
            "daemonsets",
            "DaemonSet",
            true,
            &["ds"],
            ALL,
            true,
            false,
            true,
            check!(apps::DaemonSet),
        ),
        b(
            "apps",
            "v1",
            "controllerrevisions",
            "ControllerRevision",
            true,
            NONE,
            NONE,
            false,
            false,
            false,
            check!(apps::ControllerRevision),
        ),
        b(
            "batch",
            "v1",
            "jobs",
            "Job",
            true,
            NONE,
            ALL,
            true,
            false,
            true,
            check!(batch::Job),
        ),
        b(
            "batch",
            "v1",
            "cronjobs",
            "CronJob",
            true,
            &["cj"],
            ALL,
            true,
            false,
            true,
            check!(batch::CronJob),
        ),
        b(
            "autoscaling",
            "v2",
            "horizontalpodautoscalers",
            "HorizontalPodAutoscaler",
            true,
            &["hpa"],
            ALL,
            true,
            false,
            false,
            check!(autoscaling::HorizontalPodAutoscaler),
        ),
        b(
            "coordination.k8s.io",
            "v1",
            "leases",
            "Lease",
            true,
            NONE,
            NONE,
            false,
            false,
            false,
            check!(coordination::Lease),
        ),
        b(
            "discovery.k8s.io",
            "v1",
            "endpointslices",
            "EndpointSlice",
            true,
            NONE,
            NONE,
            false,
            false,
            false,
            check!(discovery::EndpointSlice),
        ),
        b(
            "events.k8s.io",
            "v1",
            "events",
            "Event",
            true,
            &["ev"],
            NONE,
            false,
            false,
            false,
            check!(events::Event),
        ),
        b(
            "networking.k8s.io",
            "v1",
            "ingresses",
            "Ingress",
            true,
            &["ing"],
            NONE,
            true,
            false,
            true,
            check!(networking::Ingress),
        ),
        b(
            "policy",
            "v1",
            "poddisruptionbudgets",
            "PodDisruptionBudget",
            true,
            &["pdb"],
            NONE,
            true,
            false,
            true,
            check!(policy::PodDisruptionBudget),
        ),
        b(
            "rbac.authorization.k8s.io",
            "v1",
            "roles",
            "Role",
            true,
            NONE,
            NONE,
            false,
            false,
            false,
            check!(rbac::Role),
        ),
        b(
            "rbac.authorization.k8s.io",
            "v1",
            "clusterroles",
            "ClusterRole",
            false,
            NONE,
            NONE,
            false,
            false,
            false,
            check!(rbac::ClusterRole),
        ),
        b(
            "rbac.authorization.k8s.io",
            "v1",
            "rolebindings",
            "RoleBinding",
            true,
            NONE,
            NONE,
            false,
            false,
            false,
            check!(rbac::RoleBinding),
        ),
        b(
            "rbac.authorization.k8s.io",
            "v1",
            "clusterrolebindings",
            "ClusterRoleBinding",
            false,
            NONE,
            NONE,
            false,
            false,
            false,
            check!(rbac::ClusterRoleBinding),
        ),
        b(
            "authentication.k8s.io",
            "v1",
            "tokenreviews",
            "TokenReview",
            false,
            NONE,
            NONE,
            false,
            false,
            false,
            check!(authn::TokenReview),
        ),
        b(
            "authentication.k8s.io",
            "v1",
            "selfsubjectreviews",
            "SelfSubjectReview",
            false,
            NONE,
            NONE,
            false,
            false,
            false,
            check!(authn::SelfSubjectReview),
        ),
        b(
            "authorization.k8s.io",
            "v1",
            "subjectaccessreviews",
            "SubjectAccessReview",
            false,
            NONE,
            NONE,
            false,
            false,
            false,
            check!(authz::SubjectAccessReview),
        ),
        b(
            "authorization.k8s.io",
            "v1",
            "selfsubjectaccessreviews",
            "SelfSubjectAccessReview",
            false,
            NONE,
            NONE,
            false,
            false,
            false,
            check!(authz::SelfSubjectAccessReview),
        ),
        b(
            "authorization.k8s.io",
            "v1",
            "localsubjectaccessreviews",
            "LocalSubjectAccessReview",
            true,
            NONE,
            NONE,
            false,
            false,
            false,
            check!(authz::LocalSubjectAccessReview),
        ),
        b(
            "authorization.k8s.io",
            "v1",
            "selfsubjectrulesreviews",
            "SelfSubjectRulesReview",
            false,
            NONE,
            NONE,
            false,
            false,
            false,
            check!(authz::SelfSubjectRulesReview),
        ),
        b(
            "admissionregistration.k8s.io",
            "v1",
            "mutatingwebhookconfigurations",
            "MutatingWebhookConfiguration",
            false,
            NONE,
            &["api-extensions"],
            false,
            false,
            true,
            check!(admreg::MutatingWebhookConfiguration),
        ),
        b(
            "admissionregistration.k8s.io",
            "v1",
            "validatingwebhookconfigurations",
            "ValidatingWebhookConfiguration",
            false,
            NONE,
            &["api-extensions"],
            false,
            false,
            true,
            check!(admreg::ValidatingWebhookConfiguration),
        ),
        b(
            "admissionregistration.k8s.io",
            "v1",
            "validatingadmissionpolicies",
            "ValidatingAdmissionPolicy",
            false,
            NONE,
            &["api-extensions"],
            true,
            false,
            true,
            check!(admreg::ValidatingAdmissionPolicy),
        ),
        b(
            "admissionregistration.k8s.io",
            "v1",
            "validatingadmissionpolicybindings",
            "ValidatingAdmissionPolicyBinding",
            false,
            NONE,
            &["api-extensions"],
            false,
            false,
            true,
            check!(admreg::ValidatingAdmissionPolicyBinding),
        ),
        b(
            "apiextensions.k8s.io",
            "v1",
            "customresourcedefinitions",
            "CustomResourceDefinition",
            false,
            &["crd", "crds"],
            &["api-extensions"],
            true,
            false,
            true,
            check!(apiext::CustomResourceDefinition),
        ),
    ]
}

fn builtin_resource(def: &Builtin) -> Resource {
    let scale = def.scale.then(|| ScalePaths {
        spec_replicas: ".spec.replicas".into(),
        status_replicas: ".status.replicas".into(),
        label_selector: Some(".status.selector".into()),
    });
    let extra: &'static [(&str, &str, &str, &[&str])] = match def.plural {
        "serviceaccounts" => &[(
            "token",
            "authentication.k8s.io",
            "TokenRequest",
            &["create"],
        )],
        "namespaces" => &[("finalize", "", "Namespace", &["update"])],
        _ => &[],
    };
    Resource {
        group: def.group.into(),
        version: def.version.into(),
        plural: def.plural.into(),
        singular: def.kind.to_lowercase(),
        kind: def.kind.into(),
        list_kind: format!("{}List", def.kind),
        namespaced: def.namespaced,
        short_names: def.short_names.iter().map(|s| s.to_string()).collect(),
        categories: def.categories.iter().map(|s| s.to_string()).collect(),
        status: def.status,
        scale,
        verbs: if is_review_group(def.group) {
            &["create"]
        } else {
            ALL_VERBS
        },
        tracks_generation: def.generation,
        extra_subresources: extra,
        origin: Origin::Builtin(def.check),
        view: match (def.group, def.plural) {
            ("events.k8s.io", "events") => Some(&crate::events::EVENTS_V1),
            _ => None,
        },
    }
}

/// An immutable view of everything served.
#[derive(Default)]
pub struct Snapshot {
    resources: Vec<Arc<Resource>>,
    by_path: HashMap<(String, String, String), Arc<Resource>>,
    /// Group name → served versions in preference order.
    groups: Vec<(String, Vec<String>)>,
    /// Bumps on every change: used for discovery ETags.
    pub generation: u64,
}

impl Snapshot {
    fn build(resources: Vec<Arc<Resource>>, generation: u64) -> Snapshot {
        let mut by_path = HashMap::new();
        let mut groups: Vec<(String, Vec<String>)> = Vec::new();
        for r in &resources {
            by_path.insert(
                (r.group.clone(), r.version.clone(), r.plural.clone()),
                r.clone(),
            );
            match groups.iter_mut().find(|(g, _)| *g == r.group) {
                Some((_, versions)) => {
                    if !versions.contains(&r.version) {
                        versions.push(r.version.clone());
                    }
                }
                None => groups.push((r.group.clone(), vec![r.version.clone()])),
            }
        }
        for (_, versions) in &mut groups {
            // Kubernetes version priority: GA > beta > alpha > others (alphabetically), higher
            // numbers first.
            versions.sort_by_cached_key(|v| {
                std::cmp::Reverse(kube::core::Version::parse(v).priority())
            });
        }
        Snapshot {
            resources,
            by_path,
            groups,
            generation,
        }
    }

    /// Looks a resource up by its URL coordinates.
    pub fn get(&self, group: &str, version: &str, plural: &str) -> Option<&Arc<Resource>> {
        self.by_path
            .get(&(group.to_string(), version.to_string(), plural.to_string()))
    }

    /// All served resources, in registration order.
    pub fn resources(&self) -> &[Arc<Resource>] {
        &self.resources
    }

    /// Groups and their versions, preferred version first; the core group is `""`.
    pub fn groups(&self) -> &[(String, Vec<String>)] {
        &self.groups
    }

    /// The resources of one group version.
    pub fn group_version(&self, group: &str, version: &str) -> Vec<&Arc<Resource>> {
        self.resources
            .iter()
            .filter(|r| r.group == group && r.version == version)
            .collect()
    }

    /// The preferred version of a resource's group/plural (used for the storage key and lookups
    /// by kind).
    pub fn by_group_kind(&self, group: &str, kind: &str) -> Option<&Arc<Resource>> {
        let versions = &self.groups.iter().find(|(g, _)| g == group)?.1;
        versions.iter().find_map(|v| {
            self.resources
                .iter()
                .find(|r| r.group == group && &r.version == v && r.kind == kind)
        })
    }
}

/// The live registry: built-in kinds plus the custom resources of established CRDs.
pub struct Registry {
    builtin: Vec<Arc<Resource>>,
    custom: RwLock<HashMap<String, Vec<Arc<Resource>>>>,
    snapshot: RwLock<Arc<Snapshot>>,
}

impl Default for Registry {
    fn default() -> Self {
        Self::new()
    }
}

impl Registry {
    /// A registry serving the built-in kinds.
    pub fn new() -> Registry {
        let builtin: Vec<Arc<Resource>> = builtins()
            .iter()
            .map(|d| Arc::new(builtin_resource(d)))
            .collect();
        let snapshot = Arc::new(Snapshot::build(builtin.clone(), 1));
        Registry {
            builtin,
            custom: RwLock::new(HashMap::new()),
            snapshot: RwLock::new(snapshot),
        }
    }

    /// The current view.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        match self.snapshot.read() {
            Ok(s) => s.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Serves (or re-serves) the versions of one CRD, replacing what it served before.
    pub fn set_custom(&self, crd_name: &str, versions: Vec<Arc<Resource>>) {
        let mut custom = self.custom.write().unwrap_or_else(|p| p.into_inner());
        if versions.is_empty() {
            custom.remove(crd_name);
        } else {
            custom.insert(crd_name.to_string(), versions);
        }
        self.rebuild(&custom);
    }

    /// Stops serving a CRD's resources.
    pub fn remove_custom(&self, crd_name: &str) {
        self.set_custom(crd_name, Vec::new());
    }

    fn rebuild(&self, custom: &HashMap<String, Vec<Arc<Resource>>>) {
        let mut all = self.builtin.clone();
        let mut names: Vec<&String> = custom.keys().collect();
        names.sort();
        for name in names {
            all.extend(custom[name].iter().cloned());
        }
        let mut snap = self.snapshot.write().unwrap_or_else(|p| p.into_inner());
        let generation = snap.generation + 1;
        *snap = Arc::new(Snapshot::build(all, generation));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_versions_are_in_version_priority_order() {
        let resource = |version: &str| {
            let mut r = builtin_resource(&builtins()[0]);
            r.group = "example.com".into();
            r.version = version.into();
            Arc::new(r)
        };
        let versions = ["v1alpha1", "foo", "v2", "v1beta2", "v1", "bar", "v1beta1"];
        let snap = Snapshot::build(versions.iter().map(|v| resource(v)).collect(), 1);
        let (_, sorted) = snap
            .groups()
            .iter()
            .find(|(g, _)| g == "example.com")
            .unwrap();
        assert_eq!(
            sorted,
            &["v2", "v1", "v1beta2", "v1beta1", "v1alpha1", "bar", "foo"]
        );
    }

    #[test]
    fn builtin_check_names_the_offending_field() {
        let snap = Registry::new().snapshot();
        let r = snap.get("apps", "v1", "deployments").unwrap();
        let Origin::Builtin(check) = r.origin else {
            panic!()
        };
        let err = check(&serde_json::json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "x"},
            "spec": {"replicas": "three", "selector": {}, "template": {}}
        }))
        .unwrap_err();
        assert!(err.contains("spec.replicas"), "{err}");
    }
}
