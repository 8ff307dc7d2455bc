//! `opkit generate manifests` for an ansible project: the CRDs, the ClusterRole and the
//! samples come from `PROJECT`, as operator-sdk's Ansible plugin writes them.
//!
//! Each kind's CRD has an open `spec` and `status` (`x-kubernetes-preserve-unknown-fields`):
//! the spec is the run's variables, whatever the role takes. What a role does cannot be read
//! from it, so the ClusterRole is operator-sdk's base rules (Secrets, Pods with exec and logs,
//! the apps workloads), ConfigMaps (which the generated role writes), what the operator itself
//! needs (events, its leader-election Lease) and each kind with its status and finalizers.
//! Rules added to `config/rbac/role.yaml` by hand are kept: each run merges into the file.

use std::path::Path;

use anyhow::Context;
use k8s_openapi::api::rbac::v1::{ClusterRole, PolicyRule};
use opkit::rbac::{Rules, rule};

use crate::manifests::{self, ROLE_FILE};
use crate::project::{Project, Resource};
use crate::scaffold::render;

const CRD: &str = include_str!("../templates/ansible/crd.yaml.tmpl");

/// Every verb on a resource the operator manages.
const ALL_VERBS: &[&str] = &[
    "create", "delete", "get", "list", "patch", "update", "watch",
];

/// The CRD of a kind: an open spec and status, with the status subresource.
pub(crate) fn crd(resource: &Resource) -> String {
    let plural = resource.plural();
    let vars = [
        ("plural", plural.as_str()),
        ("full_group", &resource.full_group()),
        ("kind", &resource.kind),
        ("kind_lower", &resource.kind.to_ascii_lowercase()),
        ("version", &resource.version),
    ];
    render(CRD, &vars)
}

/// The manager Deployment of the Rust layout, fitted to Ansible: operator-sdk's larger memory
/// (each run is a Python process), and a writable `/tmp` on the read-only root filesystem for
/// ansible-runner's work directories and Ansible's own temporary files (the image's `HOME`).
pub(crate) fn ansible_manager(manager: &str) -> String {
    let fitted = manager
        .replacen("memory: 128Mi", "memory: 768Mi", 1)
        .replacen("memory: 64Mi", "memory: 256Mi", 1);
    // The template ends inside the manager container: its mounts, then the pod's volumes.
    format!(
        "{}\n        volumeMounts:\n        - name: tmp\n          mountPath: /tmp\n      \
         volumes:\n      - name: tmp\n        emptyDir: {{}}\n",
        fitted.trim_end()
    )
}

/// The rules of one kind: every verb on it, its status and its finalizers.
fn kind_rules(resource: &Resource) -> Vec<PolicyRule> {
    let plural = resource.plural();
    let group = resource.full_group();
    [
        plural.clone(),
        format!("{plural}/status"),
        format!("{plural}/finalizers"),
    ]
    .iter()
    .map(|r| rule(&group, r, ALL_VERBS))
    .collect()
}

/// The manager's ClusterRole of an ansible project: the rules already in `config/rbac/role.yaml`
/// (when `root` has one), the base rules and every kind's.
pub(crate) fn role(root: &Path, project: &Project) -> anyhow::Result<String> {
    let mut rules = Rules::default();
    let path = root.join(ROLE_FILE);
    match std::fs::read_to_string(&path) {
        Ok(text) => {
            let existing: ClusterRole = serde_yaml::from_str(&text).with_context(|| {
                format!(
                    "{} is not a ClusterRole: fix it, or remove it to have it written anew",
                    path.display()
                )
            })?;
            rules.extend(existing.rules.unwrap_or_default());
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
    for resource in ["secrets", "pods", "pods/exec", "pods/log", "configmaps"] {
        rules.add(rule("", resource, ALL_VERBS));
    }
    for resource in ["deployments", "daemonsets", "replicasets", "statefulsets"] {
        rules.add(rule("apps", resource, ALL_VERBS));
    }
    rules.add(rule("", "events", &["create", "patch"]));
    rules.add(rule("events.k8s.io", "events", &["create", "patch"]));
    rules.add(rule(
        "coordination.k8s.io",
        "leases",
        &["create", "get", "update"],
    ));
    for resource in &project.resources {
        rules.extend(kind_rules(resource));
    }
    let yaml = opkit::rbac::cluster_role_yaml(&manifests::role_name(project), rules.to_vec())?;
    Ok(format!(
        "# The Ansible operator's rules: operator-sdk's base rules, what the operator needs and \
         each kind's\n# (`opkit create api` adds them). Add what your roles manage; \
         `opkit generate manifests` keeps it.\n{yaml}"
    ))
}

/// A sample custom resource of `resource`: its spec's `foo` is what the generated role puts
/// in its ConfigMap.
pub(crate) fn sample(resource: &Resource) -> String {
    format!(
        "apiVersion: {}\nkind: {}\nmetadata:\n  name: {}-sample\nspec:\n  # The variables of \
         the role or playbook (in snake_case): the generated one writes foo into a ConfigMap.\n  \
         foo: bar\n",
        resource.api_version(),
        resource.kind,
        resource.kind.to_ascii_lowercase()
    )
}

/// Writes the CRDs, RBAC and samples of the ansible project at `root` (samples and the rest of
/// `config/` only where missing).
pub(crate) fn generate(root: &Path, project: &Project) -> anyhow::Result<()> {
    crate::progress::step("generating manifests under config/ from PROJECT");
    manifests::write_plugin_config(
        root,
        project,
        manifests::PluginConfig {
            crd: &|resource| Ok(crd(resource)),
            role: role(root, project)?,
            sample: &|resource| Ok(sample(resource)),
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project() -> Project {
        Project {
            layout: crate::project::LAYOUT.into(),
            project_name: "memcached-operator".into(),
            domain: "example.com".into(),
            repo: String::new(),
            plugin: crate::project::Plugin::Ansible,
            resources: vec![Resource {
                group: "cache".into(),
                domain: "example.com".into(),
                version: "v1alpha1".into(),
                kind: "Memcached".into(),
                namespaced: true,
                chart: None,
                webhooks: Default::default(),
            }],
        }
    }

    #[test]
    fn the_ansible_manager_has_a_writable_tmp_and_more_memory() {
        let p = project();
        let config = manifests::scaffolded_config(&p);
        let text = &config
            .iter()
            .find(|(rel, _)| rel == "config/manager/manager.yaml")
            .unwrap()
            .1;
        let docs: Vec<serde_yaml::Value> = serde_yaml::Deserializer::from_str(text)
            .map(|d| serde::Deserialize::deserialize(d).unwrap())
            .collect();
        let pod = &docs[1]["spec"]["template"]["spec"];
        let container = &pod["containers"][0];
        assert_eq!(container["securityContext"]["readOnlyRootFilesystem"], true);
        assert_eq!(container["volumeMounts"][0]["mountPath"], "/tmp");
        assert_eq!(pod["volumes"][0]["name"], "tmp");
        assert!(pod["volumes"][0]["emptyDir"].is_mapping());
        assert_eq!(container["resources"]["limits"]["memory"], "768Mi");
    }

    #[test]
    fn the_role_keeps_rules_added_by_hand_and_adds_each_kinds() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(ROLE_FILE);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(
            &path,
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: x\n\
             rules:\n- apiGroups: [batch]\n  resources: [jobs]\n  verbs: [get]\n",
        )
        .unwrap();
        let written: ClusterRole =
            serde_yaml::from_str(&role(dir.path(), &project()).unwrap()).unwrap();
        let grants = |group: &str, resource: &str| {
            written.rules.iter().flatten().any(|r| {
                r.api_groups.iter().flatten().any(|g| g == group)
                    && r.resources.iter().flatten().any(|x| x == resource)
            })
        };
        assert!(grants("batch", "jobs"), "the rule added by hand is kept");
        assert!(grants("cache.example.com", "memcacheds/status"));
        assert!(grants("", "configmaps"));
        std::fs::write(&path, "rules: 3\n").unwrap();
        let err = role(dir.path(), &project()).unwrap_err();
        assert!(
            format!("{err:#}").contains("is not a ClusterRole"),
            "{err:#}"
        );
    }
}
