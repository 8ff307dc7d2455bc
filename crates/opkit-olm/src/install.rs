//! A registry+v1 bundle as the plain objects OLM v1 installs for the `AllNamespaces` install
//! mode: the bundle's own objects but the CSV (CRDs and the rest as they are), a Deployment
//! per deployment of the CSV's install strategy, a ServiceAccount per service account the CSV
//! names (unless the bundle ships it or it is the namespace's `default`), a Role and RoleBinding per `permissions` entry and a
//! ClusterRole and ClusterRoleBinding per `clusterPermissions` entry, bound to that service
//! account. Every object carries the owning extension's labels, so the installer can find
//! what it installed.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::bundle::Bundle;
use crate::bundle::csv::Permission;

/// The label naming the kind of the object's owner (`ClusterExtension`).
pub const OWNER_KIND_LABEL: &str = "olm.operatorframework.io/owner-kind";
/// The label naming the owning extension.
pub const OWNER_NAME_LABEL: &str = "olm.operatorframework.io/owner-name";

/// Why a bundle cannot be installed as plain objects.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    /// The CSV does not support `AllNamespaces`.
    #[error("bundle {bundle:?} does not support the AllNamespaces install mode")]
    AllNamespacesUnsupported {
        /// The bundle.
        bundle: String,
    },
    /// A strategy deployment has no name.
    #[error("bundle {bundle:?}: a deployment of the install strategy has no name")]
    UnnamedDeployment {
        /// The bundle.
        bundle: String,
    },
}

/// The objects installing `bundle` into `namespace` for the extension `owner`.
pub fn plain_objects(
    bundle: &Bundle,
    namespace: &str,
    owner: &str,
) -> Result<Vec<Value>, InstallError> {
    let csv = &bundle.csv;
    let all_namespaces = csv
        .spec
        .install_modes
        .iter()
        .any(|m| m.type_ == "AllNamespaces" && m.supported);
    if !all_namespaces {
        return Err(InstallError::AllNamespacesUnsupported {
            bundle: bundle.name().to_string(),
        });
    }
    let strategy = &csv.spec.install.spec;
    let mut out: Vec<Value> = bundle
        .manifests
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != bundle.csv_index)
        .map(|(_, m)| m.object.clone())
        .collect();

    let shipped: BTreeSet<&str> = bundle
        .manifests
        .iter()
        .filter(|m| m.kind() == "ServiceAccount")
        .map(|m| m.name())
        .collect();
    let mut accounts = BTreeSet::new();
    for d in &strategy.deployments {
        if d.name.is_empty() {
            return Err(InstallError::UnnamedDeployment {
                bundle: bundle.name().to_string(),
            });
        }
        let mut spec = d.spec.clone();
        // What OLM tells an operator about the namespaces it watches: all of them.
        if let Some(template) = spec.pointer_mut("/template").and_then(Value::as_object_mut) {
            let meta = template.entry("metadata").or_insert_with(|| json!({}));
            if let Some(meta) = meta.as_object_mut() {
                let annotations = meta.entry("annotations").or_insert_with(|| json!({}));
                if let Some(a) = annotations.as_object_mut() {
                    a.insert("olm.targetNamespaces".into(), json!(""));
                }
            }
        }
        out.push(json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": d.name, "namespace": namespace, "labels": d.label},
            "spec": spec,
        }));
        accounts.insert(account(d.service_account()));
    }
    let rbac = [
        (&strategy.permissions, "Role", "RoleBinding"),
        (
            &strategy.cluster_permissions,
            "ClusterRole",
            "ClusterRoleBinding",
        ),
    ];
    for (permissions, role_kind, binding_kind) in rbac {
        for (i, p) in permissions.iter().enumerate() {
            let sa = account(&p.service_account_name);
            accounts.insert(sa);
            let name = rbac_name(bundle.name(), sa, i);
            let scoped = |kind: &str, mut object: Value| {
                object["apiVersion"] = json!("rbac.authorization.k8s.io/v1");
                object["kind"] = json!(kind);
                object["metadata"] = json!({"name": name});
                if role_kind == "Role" {
                    object["metadata"]["namespace"] = json!(namespace);
                }
                object
            };
            out.push(scoped(role_kind, json!({"rules": rules(p)})));
            out.push(scoped(
                binding_kind,
                json!({
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": name},
                    "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": namespace}],
                }),
            ));
        }
    }
    // Every namespace has `default` already: it is used, never owned.
    for sa in accounts
        .into_iter()
        .filter(|sa| *sa != "default" && !shipped.contains(sa))
    {
        out.push(json!({
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": sa, "namespace": namespace},
        }));
    }
    for object in &mut out {
        label(object, owner);
    }
    Ok(out)
}

/// A pod's service account: `default` when none is named.
fn account(name: &str) -> &str {
    if name.is_empty() { "default" } else { name }
}

fn rules(p: &Permission) -> Value {
    Value::Array(p.rules.clone())
}

/// `<bundle>-<account>`, with the entry's index after the first.
fn rbac_name(bundle: &str, account: &str, index: usize) -> String {
    if index == 0 {
        format!("{bundle}-{account}")
    } else {
        format!("{bundle}-{account}-{index}")
    }
}

fn label(object: &mut Value, owner: &str) {
    if !object["metadata"].is_object() {
        object["metadata"] = json!({});
    }
    let meta = &mut object["metadata"];
    if !meta["labels"].is_object() {
        meta["labels"] = json!({});
    }
    meta["labels"][OWNER_KIND_LABEL] = json!("ClusterExtension");
    meta["labels"][OWNER_NAME_LABEL] = json!(owner);
}

#[cfg(test)]
mod tests {
    use super::*;

    const CSV: &str = r#"apiVersion: operators.coreos.com/v1alpha1
kind: ClusterServiceVersion
metadata:
  name: demo.v1.0.0
spec:
  version: 1.0.0
  installModes:
  - type: AllNamespaces
    supported: true
  install:
    strategy: deployment
    spec:
      deployments:
      - name: demo-controller
        label:
          app: demo
        spec:
          selector:
            matchLabels:
              app: demo
          template:
            metadata:
              labels:
                app: demo
            spec:
              serviceAccountName: demo-sa
              containers:
              - name: manager
                image: example.com/demo:v1
      permissions:
      - serviceAccountName: demo-sa
        rules:
        - apiGroups: [""]
          resources: [configmaps]
          verbs: [get]
      clusterPermissions:
      - serviceAccountName: demo-sa
        rules:
        - apiGroups: [demo.example.com]
          resources: [widgets]
          verbs: ["*"]
"#;

    const CRD: &str = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.demo.example.com\nspec:\n  group: demo.example.com\n";

    fn bundle(csv: &str) -> (tempfile::TempDir, Bundle) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("manifests")).unwrap();
        std::fs::create_dir_all(dir.path().join("metadata")).unwrap();
        std::fs::write(dir.path().join("manifests/csv.yaml"), csv).unwrap();
        std::fs::write(dir.path().join("manifests/crd.yaml"), CRD).unwrap();
        std::fs::write(
            dir.path().join("metadata/annotations.yaml"),
            "annotations:\n  operators.operatorframework.io.bundle.package.v1: demo\n",
        )
        .unwrap();
        let b = Bundle::load(dir.path()).unwrap();
        (dir, b)
    }

    fn find<'a>(objects: &'a [Value], kind: &str) -> Vec<&'a Value> {
        objects.iter().filter(|o| o["kind"] == kind).collect()
    }

    #[test]
    fn a_bundle_renders_to_its_crds_deployment_account_and_rbac_labelled_by_the_extension() {
        let (_dir, b) = bundle(CSV);
        let objects = plain_objects(&b, "ops", "demo-ext").unwrap();
        let kinds: BTreeSet<&str> = objects.iter().filter_map(|o| o["kind"].as_str()).collect();
        assert_eq!(
            kinds,
            BTreeSet::from([
                "CustomResourceDefinition",
                "Deployment",
                "ServiceAccount",
                "Role",
                "RoleBinding",
                "ClusterRole",
                "ClusterRoleBinding"
            ])
        );
        assert!(find(&objects, "ClusterServiceVersion").is_empty());
        let deploy = find(&objects, "Deployment")[0];
        assert_eq!(deploy["metadata"]["namespace"], "ops");
        assert_eq!(deploy["metadata"]["labels"]["app"], "demo");
        assert_eq!(
            deploy["spec"]["template"]["metadata"]["annotations"]["olm.targetNamespaces"],
            ""
        );
        let sa = find(&objects, "ServiceAccount")[0];
        assert_eq!(
            (&sa["metadata"]["name"], &sa["metadata"]["namespace"]),
            (&json!("demo-sa"), &json!("ops"))
        );
        let role = find(&objects, "Role")[0];
        assert_eq!(role["metadata"]["namespace"], "ops");
        assert_eq!(role["rules"][0]["resources"][0], "configmaps");
        let crb = find(&objects, "ClusterRoleBinding")[0];
        assert!(crb["metadata"]["namespace"].is_null());
        assert_eq!(crb["roleRef"]["name"], "demo.v1.0.0-demo-sa");
        assert_eq!(
            crb["subjects"][0],
            json!({"kind": "ServiceAccount", "name": "demo-sa", "namespace": "ops"})
        );
        for o in &objects {
            assert_eq!(o["metadata"]["labels"][OWNER_NAME_LABEL], "demo-ext", "{o}");
            assert_eq!(
                o["metadata"]["labels"][OWNER_KIND_LABEL],
                "ClusterExtension"
            );
        }
    }

    #[test]
    fn a_bundle_without_all_namespaces_is_refused_by_name() {
        let (_dir, b) = bundle(&CSV.replace("AllNamespaces", "OwnNamespace"));
        let err = plain_objects(&b, "ops", "x").unwrap_err();
        assert_eq!(
            err.to_string(),
            "bundle \"demo.v1.0.0\" does not support the AllNamespaces install mode"
        );
    }
}
