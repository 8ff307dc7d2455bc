//! KUDO's conventions on every rendered object (`renderer/enhancer.go`, `consts.go`,
//! `dependencies.go`): its labels and annotations, the instance's namespace and controller
//! owner reference, and the dependency hash that restarts pods when a ConfigMap or Secret
//! they mount changes.
//!
//! - Labels `heritage: kudo`, `kudo.dev/operator`, `kudo.dev/instance` go on the object and
//!   on the pod templates (and StatefulSet volume claim templates) at KUDO's paths.
//! - The top level gets `kudo.dev/plan`, `kudo.dev/phase`, `kudo.dev/step` and
//!   `kudo.dev/last-plan-execution-uid`; pod templates only `kudo.dev/operator-version`
//!   (stable, so a new plan does not restart pods).
//! - A namespaced object is put in the instance's namespace and owned by the instance (the
//!   garbage collector removes it with the instance). A cluster-scoped object cannot have a
//!   namespaced owner, so KUDO leaked it on uninstall; opkit labels it
//!   [`INSTANCE_NAMESPACE_LABEL`] and the manager records its kind on the instance
//!   ([`crate::leftovers`]) to delete it on uninstall.
//! - Pod templates get `kudo.dev/dependencies-hash`: the MD5 over the MD5s of the
//!   ConfigMaps and Secrets they reference (volumes and image pull secrets), each taken
//!   from the same task's objects or else from the cluster; a missing one, or one annotated
//!   `kudo.dev/skip-hash-calculation`, counts as zeros.
//!
//! KUDO's paths name `ReplicaSet` and `DaemonSet` in the core group, where no such kinds
//! exist, so their pod templates get no labels; opkit keeps that. KUDO also created the
//! path when an object lacked it (a CronJob got a `spec.template`); opkit adds nested labels
//! and annotations only where the template exists.

use std::collections::BTreeMap;

use md5::{Digest, Md5};
use serde_json::{Value as Json, json};

use crate::api::Instance;
use crate::object::{group_version, set_path, text};
use crate::task::TaskError;

/// `heritage`.
pub(crate) const HERITAGE_LABEL: &str = "heritage";
/// `kudo.dev/operator`.
pub(crate) const OPERATOR_LABEL: &str = "kudo.dev/operator";
/// `kudo.dev/instance`.
pub(crate) const INSTANCE_LABEL: &str = "kudo.dev/instance";
/// `kudo.dev/operator-version`.
pub(crate) const OPERATOR_VERSION_ANNOTATION: &str = "kudo.dev/operator-version";
/// `kudo.dev/plan`.
pub(crate) const PLAN_ANNOTATION: &str = "kudo.dev/plan";
/// `kudo.dev/phase`.
pub(crate) const PHASE_ANNOTATION: &str = "kudo.dev/phase";
/// `kudo.dev/step`.
pub(crate) const STEP_ANNOTATION: &str = "kudo.dev/step";
/// `kudo.dev/last-plan-execution-uid`.
pub(crate) const PLAN_UID_ANNOTATION: &str = "kudo.dev/last-plan-execution-uid";
/// `kudo.dev/dependencies-hash`.
pub(crate) const DEPENDENCIES_HASH_ANNOTATION: &str = "kudo.dev/dependencies-hash";
/// `kudo.dev/skip-hash-calculation`.
pub(crate) const SKIP_HASH_ANNOTATION: &str = "kudo.dev/skip-hash-calculation";
/// opkit's: the namespace of the instance that made a cluster-scoped object (with
/// `kudo.dev/instance`, it selects the instance's cluster-scoped objects).
pub(crate) const INSTANCE_NAMESPACE_LABEL: &str = "kudo.opkit.dev/instance-namespace";

/// Who renders, for the labels and annotations.
#[derive(Clone, Debug, Default)]
pub(crate) struct Metadata {
    pub operator_name: String,
    pub operator_version: String,
    pub instance_name: String,
    pub plan_name: String,
    pub phase_name: String,
    pub step_name: String,
    pub plan_uid: String,
}

struct ResourcePath {
    group: Option<&'static str>,
    kind: Option<&'static str>,
    path: &'static str,
}

const fn rp(
    group: Option<&'static str>,
    kind: Option<&'static str>,
    path: &'static str,
) -> ResourcePath {
    ResourcePath { group, kind, path }
}

/// KUDO's `CommonLabelPaths`.
const LABEL_PATHS: &[ResourcePath] = &[
    rp(None, None, "metadata/labels"),
    rp(
        Some("apps"),
        Some("StatefulSet"),
        "spec/template/metadata/labels",
    ),
    rp(
        Some("apps"),
        Some("StatefulSet"),
        "spec/volumeClaimTemplates[]/metadata/labels",
    ),
    rp(
        Some("apps"),
        Some("Deployment"),
        "spec/template/metadata/labels",
    ),
    rp(
        Some(""),
        Some("ReplicaSet"),
        "spec/template/metadata/labels",
    ),
    rp(
        Some(""),
        Some("ReplicationController"),
        "spec/template/metadata/labels",
    ),
    rp(Some(""), Some("DaemonSet"), "spec/template/metadata/labels"),
    rp(Some("batch"), Some("Job"), "spec/template/metadata/labels"),
    rp(
        Some("batch"),
        Some("CronJob"),
        "spec/template/metadata/labels",
    ),
    rp(
        Some("batch"),
        Some("CronJob"),
        "spec/jobTemplate/spec/template/metadata/labels",
    ),
];

/// KUDO's `TemplateAnnotationPaths`.
const TEMPLATE_ANNOTATION_PATHS: &[ResourcePath] = &[
    rp(
        Some(""),
        Some("ReplicationController"),
        "spec/template/metadata/annotations",
    ),
    rp(
        Some("apps"),
        Some("StatefulSet"),
        "spec/template/metadata/annotations",
    ),
    rp(
        Some("apps"),
        Some("Deployment"),
        "spec/template/metadata/annotations",
    ),
    rp(
        Some(""),
        Some("ReplicaSet"),
        "spec/template/metadata/annotations",
    ),
    rp(
        Some(""),
        Some("DaemonSet"),
        "spec/template/metadata/annotations",
    ),
    rp(
        Some("batch"),
        Some("Job"),
        "spec/template/metadata/annotations",
    ),
    rp(
        Some("batch"),
        Some("CronJob"),
        "spec/template/metadata/annotations",
    ),
    rp(
        Some("batch"),
        Some("CronJob"),
        "spec/jobTemplate/spec/template/metadata/annotations",
    ),
];

impl ResourcePath {
    fn matches(&self, obj: &Json) -> bool {
        let (group, _) = group_version(obj);
        self.group.is_none_or(|g| g == group) && self.kind.is_none_or(|k| k == text(obj, "/kind"))
    }
}

/// Adds `fields` to the string map at `path` (`a/b[]/c`: every element of the list `a/b`).
/// Nested maps are created only under an existing parent of `metadata`; the top-level
/// `metadata/...` always exists.
fn add_map_values(obj: &mut Json, fields: &BTreeMap<&str, String>, path: &[&str]) {
    if let Some(i) = path.iter().position(|p| p.ends_with("[]")) {
        let mut list_path: Vec<&str> = path[..i].to_vec();
        list_path.push(path[i].trim_end_matches("[]"));
        let pointer = format!("/{}", list_path.join("/"));
        if let Some(Json::Array(items)) = obj.pointer_mut(&pointer) {
            for item in items.iter_mut().filter(|x| x.is_object()) {
                add_map_values(item, fields, &path[i + 1..]);
            }
        }
        return;
    }
    // The holder of `metadata` must exist (a pod template, a claim template, the object).
    let holder = &path[..path.len().saturating_sub(2)];
    if !holder.is_empty() {
        let pointer = format!("/{}", holder.join("/"));
        if !obj.pointer(&pointer).is_some_and(Json::is_object) {
            return;
        }
    }
    for (k, v) in fields {
        let mut full: Vec<&str> = path.to_vec();
        full.push(*k);
        set_path(obj, &full, Json::String(v.clone()));
    }
}

fn add_at(obj: &mut Json, paths: &[ResourcePath], fields: &BTreeMap<&str, String>) {
    let matching: Vec<&str> = paths
        .iter()
        .filter(|p| p.matches(obj))
        .map(|p| p.path)
        .collect();
    for path in matching {
        let parts: Vec<&str> = path.split('/').collect();
        add_map_values(obj, fields, &parts);
    }
}

/// KUDO's labels and annotations on `obj`.
pub(crate) fn add_labels_and_annotations(obj: &mut Json, meta: &Metadata) {
    let labels = BTreeMap::from([
        (HERITAGE_LABEL, "kudo".to_string()),
        (OPERATOR_LABEL, meta.operator_name.clone()),
        (INSTANCE_LABEL, meta.instance_name.clone()),
    ]);
    add_at(obj, LABEL_PATHS, &labels);
    let template = BTreeMap::from([(OPERATOR_VERSION_ANNOTATION, meta.operator_version.clone())]);
    add_at(obj, TEMPLATE_ANNOTATION_PATHS, &template);
    let top = BTreeMap::from([
        (PLAN_ANNOTATION, meta.plan_name.clone()),
        (PHASE_ANNOTATION, meta.phase_name.clone()),
        (STEP_ANNOTATION, meta.step_name.clone()),
        (PLAN_UID_ANNOTATION, meta.plan_uid.clone()),
    ]);
    add_map_values(obj, &top, &["metadata", "annotations"]);
}

/// Puts a namespaced object in the instance's namespace with the instance as its
/// controller owner; labels a cluster-scoped one with the instance's namespace.
pub(crate) fn set_owner(
    obj: &mut Json,
    instance: &Instance,
    namespaced: bool,
) -> Result<(), TaskError> {
    let ns = instance.metadata.namespace.clone().unwrap_or_default();
    if !namespaced {
        if let Some(m) = obj.pointer_mut("/metadata").and_then(Json::as_object_mut) {
            m.remove("namespace");
        }
        set_path(
            obj,
            &["metadata", "labels", INSTANCE_NAMESPACE_LABEL],
            json!(ns),
        );
        return Ok(());
    }
    set_path(obj, &["metadata", "namespace"], json!(ns));
    let uid = instance.metadata.uid.clone().ok_or_else(|| {
        TaskError::Transient("the instance has no uid yet; it cannot own objects".into())
    })?;
    let owner = json!({
        "apiVersion": crate::api::API_VERSION,
        "kind": "Instance",
        "name": instance.metadata.name.clone().unwrap_or_default(),
        "uid": uid,
        "controller": true,
        "blockOwnerDeletion": true,
    });
    let mut refs: Vec<Json> = obj
        .pointer("/metadata/ownerReferences")
        .and_then(Json::as_array)
        .cloned()
        .unwrap_or_default();
    if let Some(other) = refs
        .iter()
        .find(|r| r.get("controller") == Some(&json!(true)) && r.get("uid") != Some(&owner["uid"]))
    {
        return Err(TaskError::Fatal(format!(
            "{} is already owned by another controller {}/{}",
            crate::object::describe(obj),
            text(other, "/kind"),
            text(other, "/name")
        )));
    }
    refs.retain(|r| r.get("uid") != Some(&owner["uid"]));
    refs.push(owner);
    set_path(obj, &["metadata", "ownerReferences"], Json::Array(refs));
    Ok(())
}

/// A ConfigMap or Secret a pod template references.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Dependency {
    /// `ConfigMap` or `Secret` (KUDO sorts by group, kind, version, namespace, name; both
    /// are in the core group at `v1`).
    pub kind: &'static str,
    pub namespace: String,
    pub name: String,
}

/// The ConfigMaps and Secrets the object's pod template (`spec.template` or
/// `spec.jobTemplate.spec.template`) references, as KUDO counts them: image pull secrets,
/// ConfigMap volumes and Secret volumes. Sorted.
pub(crate) fn dependencies(obj: &Json) -> Vec<Dependency> {
    let ns = text(obj, "/metadata/namespace").to_string();
    let mut deps = Vec::new();
    for pointer in [
        "/spec/template/spec",
        "/spec/jobTemplate/spec/template/spec",
    ] {
        let Some(spec) = obj.pointer(pointer) else {
            continue;
        };
        let dep = |kind, name: &str| Dependency {
            kind,
            namespace: ns.clone(),
            name: name.to_string(),
        };
        for s in spec["imagePullSecrets"].as_array().into_iter().flatten() {
            deps.push(dep("Secret", text(s, "/name")));
        }
        for v in spec["volumes"].as_array().into_iter().flatten() {
            if v.get("configMap").is_some_and(Json::is_object) {
                deps.push(dep("ConfigMap", text(v, "/configMap/name")));
            }
            if v.get("secret").is_some_and(Json::is_object) {
                deps.push(dep("Secret", text(v, "/secret/secretName")));
            }
        }
    }
    deps.sort();
    deps
}

/// The MD5 of a dependency's content: volatile metadata (namespace, owner references,
/// server-set fields, annotations) and status left out. Zeros when it is missing or asks
/// to be skipped.
pub(crate) fn dependency_digest(dep: Option<&Json>) -> [u8; 16] {
    let Some(dep) = dep else {
        return [0; 16];
    };
    if dep
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(SKIP_HASH_ANNOTATION))
        .is_some()
    {
        return [0; 16];
    }
    let mut clean = serde_json::Map::new();
    for (k, v) in dep.as_object().into_iter().flatten() {
        match k.as_str() {
            "apiVersion" | "kind" | "status" => {}
            "metadata" => {
                let mut m = serde_json::Map::new();
                for f in ["name", "labels"] {
                    if let Some(x) = v.get(f) {
                        m.insert(f.to_string(), x.clone());
                    }
                }
                clean.insert(k.clone(), Json::Object(m));
            }
            _ => {
                clean.insert(k.clone(), v.clone());
            }
        }
    }
    Md5::digest(Json::Object(clean).to_string().as_bytes()).into()
}

/// KUDO's dependency hash: the MD5 over the sorted dependencies' digests, in hex.
pub(crate) fn dependencies_hash(digests: &[[u8; 16]]) -> String {
    let mut h = Md5::new();
    for d in digests {
        h.update(d);
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// Sets the dependency hash on the object's pod templates.
pub(crate) fn set_dependencies_hash(obj: &mut Json, hash: &str) {
    let fields = BTreeMap::from([(DEPENDENCIES_HASH_ANNOTATION, hash.to_string())]);
    add_at(obj, TEMPLATE_ANNOTATION_PATHS, &fields);
}

/// Finds a dependency among the task's own objects.
pub(crate) fn find_in<'a>(objs: &'a [Json], dep: &Dependency) -> Option<&'a Json> {
    objs.iter().find(|o| {
        text(o, "/apiVersion") == "v1"
            && text(o, "/kind") == dep.kind
            && text(o, "/metadata/name") == dep.name
            && text(o, "/metadata/namespace") == dep.namespace
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta() -> Metadata {
        Metadata {
            operator_name: "zookeeper".into(),
            operator_version: "0.3.1".into(),
            instance_name: "zk".into(),
            plan_name: "deploy".into(),
            phase_name: "zookeeper".into(),
            step_name: "deploy".into(),
            plan_uid: "u-1".into(),
        }
    }

    #[test]
    fn labels_go_on_the_object_and_pod_and_claim_templates_annotations_as_kudo_puts_them() {
        let mut sts = json!({
            "apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": "zk", "labels": {"app": "zk"}},
            "spec": {
                "template": {"metadata": {"labels": {"app": "zk"}}, "spec": {}},
                "volumeClaimTemplates": [{"metadata": {"name": "data"}}]
            }
        });
        add_labels_and_annotations(&mut sts, &meta());
        let l = &sts["metadata"]["labels"];
        assert_eq!(
            (l["heritage"].as_str(), l["app"].as_str()),
            (Some("kudo"), Some("zk"))
        );
        assert_eq!(l["kudo.dev/instance"], "zk");
        assert_eq!(
            sts["spec"]["template"]["metadata"]["labels"]["kudo.dev/operator"],
            "zookeeper"
        );
        assert_eq!(
            sts["spec"]["volumeClaimTemplates"][0]["metadata"]["labels"]["heritage"],
            "kudo"
        );
        let top = &sts["metadata"]["annotations"];
        assert_eq!(top["kudo.dev/plan"], "deploy");
        assert_eq!(top["kudo.dev/last-plan-execution-uid"], "u-1");
        assert!(top.get(OPERATOR_VERSION_ANNOTATION).is_none());
        let tpl = &sts["spec"]["template"]["metadata"]["annotations"];
        assert_eq!(tpl[OPERATOR_VERSION_ANNOTATION], "0.3.1");
        assert!(
            tpl.get(PLAN_ANNOTATION).is_none(),
            "no plan annotation on pods"
        );
    }

    #[test]
    fn kinds_without_templates_get_only_top_level_metadata() {
        let mut cron = json!({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "c"},
            "spec": {"jobTemplate": {"spec": {"template": {"spec": {}}}}}});
        add_labels_and_annotations(&mut cron, &meta());
        assert!(
            cron["spec"].get("template").is_none(),
            "no spec.template invented"
        );
        assert_eq!(
            cron["spec"]["jobTemplate"]["spec"]["template"]["metadata"]["labels"]["heritage"],
            "kudo"
        );
        let mut ds = json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "d"},
            "spec": {"template": {"spec": {}}}});
        add_labels_and_annotations(&mut ds, &meta());
        assert!(
            ds["spec"]["template"].get("metadata").is_none(),
            "KUDO's core-group DaemonSet path"
        );
        assert_eq!(ds["metadata"]["labels"]["heritage"], "kudo");
    }

    #[test]
    fn namespaced_objects_get_the_instance_namespace_and_owner_cluster_scoped_a_label() {
        let mut inst = Instance::new("zk", Default::default());
        inst.metadata.namespace = Some("ns".into());
        inst.metadata.uid = Some("uid-1".into());
        let mut cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "other"}});
        set_owner(&mut cm, &inst, true).unwrap();
        assert_eq!(cm["metadata"]["namespace"], "ns");
        let r = &cm["metadata"]["ownerReferences"][0];
        assert_eq!(
            (
                r["kind"].as_str(),
                r["uid"].as_str(),
                r["controller"].as_bool()
            ),
            (Some("Instance"), Some("uid-1"), Some(true))
        );
        set_owner(&mut cm, &inst, true).unwrap();
        assert_eq!(
            cm["metadata"]["ownerReferences"].as_array().unwrap().len(),
            1
        );
        let mut cr = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "r", "namespace": "x"}});
        set_owner(&mut cr, &inst, false).unwrap();
        assert!(cr["metadata"].get("namespace").is_none());
        assert!(cr["metadata"].get("ownerReferences").is_none());
        assert_eq!(cr["metadata"]["labels"][INSTANCE_NAMESPACE_LABEL], "ns");
        let mut taken = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a",
            "ownerReferences": [{"kind": "Deployment", "name": "d", "uid": "x", "controller": true}]}});
        assert!(matches!(
            set_owner(&mut taken, &inst, true),
            Err(TaskError::Fatal(_))
        ));
    }

    #[test]
    fn dependencies_are_volumes_and_pull_secrets_of_pod_templates_sorted() {
        let d = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "ns"},
        "spec": {"template": {"spec": {
            "imagePullSecrets": [{"name": "pull"}],
            "volumes": [{"name": "a", "configMap": {"name": "cfg"}}, {"name": "b", "secret": {"secretName": "sec"}}, {"name": "c", "emptyDir": {}}],
            "containers": [{"name": "x", "envFrom": [{"configMapRef": {"name": "not-counted"}}]}]
        }}}});
        let deps = dependencies(&d);
        let names: Vec<_> = deps.iter().map(|d| (d.kind, d.name.as_str())).collect();
        assert_eq!(
            names,
            [("ConfigMap", "cfg"), ("Secret", "pull"), ("Secret", "sec")]
        );
        assert!(dependencies(&json!({"kind": "Service", "spec": {}})).is_empty());
    }

    #[test]
    fn dependency_hash_changes_with_content_not_with_volatile_metadata() {
        let a = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "x", "resourceVersion": "1", "annotations": {"kudo.dev/plan": "deploy"}}, "data": {"k": "v"}});
        let b = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "y", "resourceVersion": "9", "uid": "u"}, "data": {"k": "v"}});
        let c = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": "w"}});
        assert_eq!(dependency_digest(Some(&a)), dependency_digest(Some(&b)));
        assert_ne!(dependency_digest(Some(&a)), dependency_digest(Some(&c)));
        assert_eq!(dependency_digest(None), [0; 16]);
        let skip = json!({"metadata": {"name": "c", "annotations": {SKIP_HASH_ANNOTATION: ""}}, "data": {"k": "w"}});
        assert_eq!(dependency_digest(Some(&skip)), [0; 16]);
        let h = dependencies_hash(&[dependency_digest(Some(&a))]);
        assert_eq!(h.len(), 32);
        assert_ne!(h, dependencies_hash(&[dependency_digest(Some(&c))]));
        // KUDO's hash of no dependency at all is MD5 of nothing.
        assert_eq!(dependencies_hash(&[]), "d41d8cd98f00b204e9800998ecf8427e");
        let mut dep = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"template": {"spec": {}}}});
        set_dependencies_hash(&mut dep, &h);
        assert_eq!(
            dep["spec"]["template"]["metadata"]["annotations"][DEPENDENCIES_HASH_ANNOTATION],
            h.as_str()
        );
    }
}
