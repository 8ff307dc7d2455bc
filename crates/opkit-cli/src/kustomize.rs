//! The part of kustomize that `opkit deploy` needs to read `config/default`: `resources`
//! (files and directories with a kustomization), `namespace` and `images`.
//!
//! Anything else in a kustomization is refused with the command that renders it fully
//! (`kubectl kustomize`), rather than silently ignored: deploying half of what the user wrote
//! would be worse than not deploying. The CLI's tests check that for the scaffolded tree this
//! renders exactly what `kubectl kustomize` renders.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use serde::Deserialize;
use serde_yaml::{Mapping, Value};

/// Kinds that have no namespace (kustomize leaves their namespace alone).
const CLUSTER_SCOPED: &[&str] = &[
    "Namespace",
    "CustomResourceDefinition",
    "ClusterRole",
    "ClusterRoleBinding",
    "PersistentVolume",
    "StorageClass",
    "PriorityClass",
    "Node",
    "APIService",
    "ValidatingWebhookConfiguration",
    "MutatingWebhookConfiguration",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding",
    "IngressClass",
    "RuntimeClass",
    "CSIDriver",
];

const FIELDS: &[&str] = &["apiVersion", "kind", "resources", "namespace", "images"];

/// One `images` entry.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Image {
    name: String,
    #[serde(default)]
    new_name: Option<String>,
    #[serde(default)]
    new_tag: Option<String>,
    #[serde(default)]
    digest: Option<String>,
}

fn kustomization_file(dir: &Path) -> Option<PathBuf> {
    ["kustomization.yaml", "kustomization.yml", "Kustomization"]
        .iter()
        .map(|n| dir.join(n))
        .find(|p| p.is_file())
}

/// Renders the kustomization in `dir` into its objects, in resource order.
pub fn build(dir: &Path) -> anyhow::Result<Vec<Value>> {
    let file = kustomization_file(dir).with_context(|| {
        format!(
            "{} has no kustomization.yaml; run `opkit generate manifests` to scaffold config/",
            dir.display()
        )
    })?;
    let text = std::fs::read_to_string(&file)
        .with_context(|| format!("cannot read {}", file.display()))?;
    let doc: Mapping = serde_yaml::from_str(&text)
        .with_context(|| format!("{} is not a YAML mapping", file.display()))?;
    for key in doc.keys() {
        let key = key.as_str().unwrap_or("?");
        if !FIELDS.contains(&key) {
            bail!(
                "{} uses `{key}`, which opkit does not render (it reads {}). Render and apply it \
                 with kubectl instead: kubectl apply --server-side -k {}",
                file.display(),
                FIELDS.join(", "),
                dir.display()
            );
        }
    }
    let mut objects = Vec::new();
    let resources: Vec<String> = match doc.get("resources") {
        Some(v) => serde_yaml::from_value(v.clone())
            .with_context(|| format!("{}: resources must be a list of paths", file.display()))?,
        None => Vec::new(),
    };
    for resource in resources {
        if resource.contains("://") || resource.starts_with("github.com/") {
            bail!(
                "{}: remote resource {resource:?} is not supported; use kubectl apply -k",
                file.display()
            );
        }
        let path = dir.join(&resource);
        if path.is_dir() {
            objects.extend(build(&path)?);
        } else {
            objects.extend(read_objects(&path)?);
        }
    }
    if let Some(ns) = doc.get("namespace") {
        let ns = ns
            .as_str()
            .with_context(|| format!("{}: namespace must be a string", file.display()))?;
        set_namespace(&mut objects, ns);
    }
    if let Some(images) = doc.get("images") {
        let images: Vec<Image> = serde_yaml::from_value(images.clone()).with_context(|| {
            format!(
                "{}: images must be a list of {{name, newName, newTag}}",
                file.display()
            )
        })?;
        for object in &mut objects {
            for image in &images {
                rewrite_images(object, image);
            }
        }
    }
    Ok(objects)
}

/// The objects in a YAML file (several documents allowed; empty ones skipped).
fn read_objects(path: &Path) -> anyhow::Result<Vec<Value>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut out = Vec::new();
    for doc in serde_yaml::Deserializer::from_str(&text) {
        let value = Value::deserialize(doc)
            .with_context(|| format!("{} is not valid YAML", path.display()))?;
        if value.is_null() {
            continue;
        }
        if value.get("kind").and_then(Value::as_str).is_none()
            || value.get("apiVersion").and_then(Value::as_str).is_none()
        {
            bail!(
                "{}: every document needs apiVersion and kind",
                path.display()
            );
        }
        out.push(value);
    }
    Ok(out)
}

/// The kind of an object.
pub fn kind(object: &Value) -> &str {
    object.get("kind").and_then(Value::as_str).unwrap_or("")
}

/// The name of an object.
pub fn name(object: &Value) -> &str {
    object
        .get("metadata")
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// Whether objects of `kind` are namespaced (as far as kustomize knows).
pub fn is_namespaced(kind: &str) -> bool {
    !CLUSTER_SCOPED.contains(&kind)
}

fn set_namespace(objects: &mut [Value], namespace: &str) {
    let service_accounts: Vec<String> = objects
        .iter()
        .filter(|o| kind(o) == "ServiceAccount")
        .map(|o| name(o).to_string())
        .collect();
    for object in objects.iter_mut() {
        let k = kind(object).to_string();
        if is_namespaced(&k)
            && let Some(Value::Mapping(meta)) = object.get_mut("metadata")
        {
            meta.insert("namespace".into(), namespace.into());
        }
        // Bindings follow the service accounts they name into the namespace.
        if (k == "RoleBinding" || k == "ClusterRoleBinding")
            && let Some(Value::Sequence(subjects)) = object.get_mut("subjects")
        {
            for subject in subjects {
                let is_ours = subject.get("kind").and_then(Value::as_str) == Some("ServiceAccount")
                    && subject
                        .get("name")
                        .and_then(Value::as_str)
                        .is_some_and(|n| service_accounts.iter().any(|s| s == n));
                if is_ours && let Value::Mapping(m) = subject {
                    m.insert("namespace".into(), namespace.into());
                }
            }
        }
    }
}

/// Splits `image` into (name, tag or digest suffix including its separator).
fn split_image(image: &str) -> (&str, &str) {
    if let Some(at) = image.find('@') {
        return image.split_at(at);
    }
    let slash = image.rfind('/').map_or(0, |i| i + 1);
    match image[slash..].find(':') {
        Some(colon) => image.split_at(slash + colon),
        None => (image, ""),
    }
}

/// Sets `image` on `value` if it names `rule.name`.
fn rewrite_image(value: &mut Value, rule: &Image) {
    let Some(current) = value.as_str() else {
        return;
    };
    let (name, suffix) = split_image(current);
    if name != rule.name {
        return;
    }
    let new_name = rule.new_name.as_deref().unwrap_or(name);
    let new_suffix = match (&rule.digest, &rule.new_tag) {
        (Some(d), _) => format!("@{d}"),
        (None, Some(t)) => format!(":{t}"),
        (None, None) => suffix.to_string(),
    };
    *value = Value::String(format!("{new_name}{new_suffix}"));
}

/// Applies `rule` to every container of a pod template (or pod) in `object`.
fn rewrite_images(object: &mut Value, rule: &Image) {
    let pod_spec = if kind(object) == "Pod" {
        object.get_mut("spec")
    } else {
        object
            .get_mut("spec")
            .and_then(|s| s.get_mut("template"))
            .and_then(|t| t.get_mut("spec"))
    };
    let Some(spec) = pod_spec else { return };
    for list in ["containers", "initContainers"] {
        if let Some(Value::Sequence(containers)) = spec.get_mut(list) {
            for c in containers {
                if let Some(image) = c.get_mut("image") {
                    rewrite_image(image, rule);
                }
            }
        }
    }
}

/// Sets the image of the container named `container` in every workload of `objects` to
/// `image` (for `opkit deploy --image`); returns how many were set.
pub fn set_container_image(objects: &mut [Value], container: &str, image: &str) -> usize {
    let mut set = 0;
    for object in objects {
        let Some(Value::Sequence(containers)) = object
            .get_mut("spec")
            .and_then(|s| s.get_mut("template"))
            .and_then(|t| t.get_mut("spec"))
            .and_then(|s| s.get_mut("containers"))
        else {
            continue;
        };
        for c in containers {
            if c.get("name").and_then(Value::as_str) == Some(container)
                && let Value::Mapping(m) = c
            {
                m.insert("image".into(), image.into());
                set += 1;
            }
        }
    }
    set
}

/// The order to apply objects in: namespaces and CRDs first, then identities and RBAC, then
/// configuration, then workloads (kustomize's legacy order, roughly).
pub fn apply_rank(kind: &str) -> u8 {
    match kind {
        "Namespace" => 0,
        "CustomResourceDefinition" => 1,
        "ServiceAccount" => 2,
        "ClusterRole" | "Role" => 3,
        "ClusterRoleBinding" | "RoleBinding" => 4,
        "ConfigMap" | "Secret" => 5,
        "Service" => 6,
        "Deployment" | "StatefulSet" | "DaemonSet" | "Job" | "CronJob" | "Pod" => 8,
        _ => 7,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, rel: &str, text: &str) {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    #[test]
    fn resources_namespace_and_images_are_rendered() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        write(
            d,
            "default/kustomization.yaml",
            "namespace: ops\nresources:\n- ../base\nimages:\n- name: op\n  newName: reg/op\n  newTag: v2\n",
        );
        write(d, "base/kustomization.yaml", "resources:\n- objects.yaml\n");
        write(
            d,
            "base/objects.yaml",
            "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: sa\n---\n\
             apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: b\n\
             roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: r}\n\
             subjects:\n- {kind: ServiceAccount, name: sa, namespace: other}\n---\n\
             apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\nspec:\n  template:\n    spec:\n      containers:\n      - name: manager\n        image: op:latest\n",
        );
        let objects = build(&d.join("default")).unwrap();
        assert_eq!(objects.len(), 3);
        assert_eq!(objects[0]["metadata"]["namespace"], "ops");
        assert!(objects[1]["metadata"].get("namespace").is_none());
        assert_eq!(objects[1]["subjects"][0]["namespace"], "ops");
        assert_eq!(
            objects[2]["spec"]["template"]["spec"]["containers"][0]["image"],
            "reg/op:v2"
        );
    }

    #[test]
    fn unsupported_fields_are_refused_with_the_kubectl_alternative() {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            "kustomization.yaml",
            "patches:\n- path: p.yaml\n",
        );
        let err = build(dir.path()).unwrap_err().to_string();
        assert!(
            err.contains("`patches`") && err.contains("kubectl apply --server-side -k"),
            "{err}"
        );
    }

    #[test]
    fn image_names_split_at_tag_or_digest_not_at_a_registry_port() {
        assert_eq!(split_image("reg:5000/op:v1"), ("reg:5000/op", ":v1"));
        assert_eq!(split_image("op@sha256:ab"), ("op", "@sha256:ab"));
        assert_eq!(split_image("op"), ("op", ""));
    }
}
