//! `opkit init --plugins ansible` and `opkit create api` in an ansible project: operator-sdk's
//! Ansible plugin (`ansible.sdk.operatorframework.io/v1`) on opkit's project layout.
//!
//! An ansible project has no code: `watches.yaml` maps each kind to a role under `roles/` or a
//! playbook under `playbooks/`, and opkit's generic Ansible operator (`opkit ansible-operator
//! run`) runs them. `--generate-role` writes a role whose tasks do something observable (a
//! ConfigMap named after the custom resource), `--generate-playbook` a playbook (running the
//! role when both are given); each kind gets a kuttl test under `tests/e2e/` that `opkit test`
//! passes as generated. `config/` is the Rust layout's; the CRDs, RBAC and samples come from
//! [`crate::ansible_manifests`].

use std::path::Path;

use anyhow::{Context, bail};

use crate::helm_scaffold::ApiFlags;
use crate::project::{self, Plugin, Project, Resource};
use crate::scaffold::{E2E_DELETE, E2E_ERRORS, render, write_files};
use crate::test_project::E2E_DIR;
use crate::{ansible_manifests, manifests};

/// The file mapping kinds to roles and playbooks.
pub(crate) const WATCHES_FILE: &str = "watches.yaml";

const WATCHES: &str = include_str!("../templates/ansible/watches.yaml.tmpl");
const REQUIREMENTS: &str = include_str!("../templates/ansible/requirements.yml");
const DOCKERFILE: &str = include_str!("../templates/ansible/Dockerfile.tmpl");
const MAKEFILE: &str = include_str!("../templates/ansible/Makefile.tmpl");
const DOCKERIGNORE: &str = include_str!("../templates/ansible/dockerignore.tmpl");
const GITIGNORE: &str = include_str!("../templates/ansible/gitignore.tmpl");
const TASKS: &str = include_str!("../templates/ansible/tasks.yml.tmpl");
const ROLE_README: &str = include_str!("../templates/ansible/role/README.md.tmpl");
const ROLE_DEFAULTS: &str = include_str!("../templates/ansible/role/defaults.yml.tmpl");
const ROLE_HANDLERS: &str = include_str!("../templates/ansible/role/handlers.yml.tmpl");
const ROLE_VARS: &str = include_str!("../templates/ansible/role/vars.yml.tmpl");
const ROLE_META: &str = include_str!("../templates/ansible/role/meta.yml.tmpl");
const PLAYBOOK_ROLE: &str = include_str!("../templates/ansible/playbook_role.yml.tmpl");
const PLAYBOOK_TASKS: &str = include_str!("../templates/ansible/playbook_tasks.yml.tmpl");
const E2E_SUITE: &str = include_str!("../templates/ansible/kuttl-test.yaml.tmpl");
const E2E_ASSERT: &str = include_str!("../templates/ansible/00-assert.yaml.tmpl");
const E2E_ASSERT_CONFIGMAP: &str =
    include_str!("../templates/ansible/00-assert-configmap.yaml.tmpl");

/// `opkit init --plugins ansible` in `dir` (already checked: name, domain, an empty directory,
/// no `--repo`).
pub(crate) fn init(name: String, domain: String, api: ApiFlags, dir: &Path) -> anyhow::Result<()> {
    let project = Project {
        layout: project::LAYOUT.to_string(),
        project_name: name,
        domain,
        repo: String::new(),
        plugin: Plugin::Ansible,
        resources: Vec::new(),
    };
    // The kind, when asked for, is checked before anything is written.
    let planned = if api.any() {
        Some(plan(&project, api)?)
    } else {
        None
    };
    let vars = [
        ("name", project.project_name.as_str()),
        ("rust_version", crate::scaffold::IMAGE_RUST_VERSION),
        ("cli_version", env!("CARGO_PKG_VERSION")),
    ];
    let mut files = vec![
        (WATCHES_FILE.to_string(), WATCHES.to_string()),
        ("requirements.yml".to_string(), REQUIREMENTS.to_string()),
        ("Dockerfile".to_string(), render(DOCKERFILE, &vars)),
        ("Makefile".to_string(), render(MAKEFILE, &vars)),
        (".dockerignore".to_string(), DOCKERIGNORE.to_string()),
        (".gitignore".to_string(), GITIGNORE.to_string()),
        // The image copies both directories, so they exist from the start.
        ("roles/.gitkeep".to_string(), String::new()),
        ("playbooks/.gitkeep".to_string(), String::new()),
        (format!("{E2E_DIR}/kuttl-test.yaml"), E2E_SUITE.to_string()),
    ];
    files.extend(manifests::initial_config(
        &project,
        &ansible_manifests::role(dir, &project)?,
    ));
    write_files(dir, &files)?;
    project.save(dir)?;
    println!(
        "Created the ansible operator project {} (watches.yaml, roles/, playbooks/, config/, \
         tests/e2e/, Dockerfile).",
        project.project_name
    );
    match planned {
        Some(planned) => create(dir, project, planned),
        None => {
            println!("Next: define a resource with:");
            println!(
                "  opkit create api --group cache --version v1alpha1 --kind Memcached --generate-role"
            );
            Ok(())
        }
    }
}

/// What backs a new kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Backing {
    /// A role (`roles/<kind>`), written when `generated`.
    Role { generated: bool },
    /// A playbook (`playbooks/<kind>.yml`), running the generated role when `with_role`.
    Playbook { with_role: bool },
}

/// A kind about to be created, checked.
struct Planned {
    resource: Resource,
    backing: Backing,
}

/// Checks the flags of a new kind against `project`.
fn plan(project: &Project, api: ApiFlags) -> anyhow::Result<Planned> {
    if let Some(flag) = api.helm_only() {
        bail!(
            "{flag} is for helm projects (`opkit init --plugins helm`); this is an ansible project"
        );
    }
    let required = |value: Option<String>, flag: &str| {
        value.ok_or_else(|| {
            anyhow::anyhow!(
                "--{flag} is required: an ansible kind needs --group, --version and --kind (with \
                 --generate-role and/or --generate-playbook)"
            )
        })
    };
    let group = required(api.group, "group")?;
    let version = required(api.version, "version")?;
    let kind = required(api.kind, "kind")?;
    project::validate_group(&group)?;
    project::validate_version(&version)?;
    project::validate_kind_format(&kind)?;
    if let Some(existing) = project
        .resources
        .iter()
        .find(|r| r.kind.eq_ignore_ascii_case(&kind))
    {
        bail!(
            "kind {} already exists in this project ({}): the API resource already exists",
            existing.kind,
            existing.api_version()
        );
    }
    let backing = if api.generate_playbook {
        Backing::Playbook {
            with_role: api.generate_role,
        }
    } else {
        Backing::Role {
            generated: api.generate_role,
        }
    };
    Ok(Planned {
        resource: Resource {
            group,
            domain: project.domain.clone(),
            version,
            kind,
            namespaced: true,
            chart: None,
            webhooks: Default::default(),
        },
        backing,
    })
}

/// `opkit create api` in the ansible project at `root`.
pub(crate) fn create_api(root: &Path, project: Project, api: ApiFlags) -> anyhow::Result<()> {
    let planned = plan(&project, api)?;
    create(root, project, planned)
}

/// The role's name and the playbook's path of a kind.
fn role_name(resource: &Resource) -> String {
    resource.kind.to_ascii_lowercase()
}

fn playbook_path(resource: &Resource) -> String {
    format!("playbooks/{}.yml", resource.kind.to_ascii_lowercase())
}

/// The `watches.yaml` entry of a kind.
fn watch_entry(resource: &Resource, backing: Backing) -> String {
    let target = match backing {
        Backing::Role { .. } => format!("role: {}", role_name(resource)),
        Backing::Playbook { .. } => format!("playbook: {}", playbook_path(resource)),
    };
    format!(
        "- group: {}\n  version: {}\n  kind: {}\n  {target}\n",
        resource.full_group(),
        resource.version,
        resource.kind
    )
}

/// The files of a kind: its role and/or playbook, and its e2e test.
fn kind_files(project: &Project, resource: &Resource, backing: Backing) -> Vec<(String, String)> {
    let kind_lower = resource.kind.to_ascii_lowercase();
    let full_group = resource.full_group();
    let object_key = opkit_ansible::vars::object_key(&full_group, &resource.kind);
    let vars = [
        ("name", project.project_name.as_str()),
        ("kind", resource.kind.as_str()),
        ("kind_lower", kind_lower.as_str()),
        ("full_group", full_group.as_str()),
        ("version", resource.version.as_str()),
        ("object_key", object_key.as_str()),
    ];
    let tasks = render(TASKS, &vars);
    let mut files = Vec::new();
    let role = matches!(
        backing,
        Backing::Role { generated: true } | Backing::Playbook { with_role: true }
    );
    if role {
        let dir = format!("roles/{}", role_name(resource));
        files.extend([
            (format!("{dir}/README.md"), render(ROLE_README, &vars)),
            (format!("{dir}/tasks/main.yml"), format!("---\n{tasks}")),
            (
                format!("{dir}/defaults/main.yml"),
                render(ROLE_DEFAULTS, &vars),
            ),
            (
                format!("{dir}/handlers/main.yml"),
                render(ROLE_HANDLERS, &vars),
            ),
            (format!("{dir}/vars/main.yml"), render(ROLE_VARS, &vars)),
            (format!("{dir}/meta/main.yml"), render(ROLE_META, &vars)),
            (format!("{dir}/files/.gitkeep"), String::new()),
            (format!("{dir}/templates/.gitkeep"), String::new()),
        ]);
    }
    if let Backing::Playbook { with_role } = backing {
        let text = if with_role {
            render(PLAYBOOK_ROLE, &vars)
        } else {
            let indented: String = tasks.lines().map(|l| format!("  {l}\n")).collect();
            format!("{}{indented}", render(PLAYBOOK_TASKS, &vars))
        };
        files.push((playbook_path(resource), text));
    }
    let dir = format!("{E2E_DIR}/{kind_lower}");
    let mut assert = render(E2E_ASSERT, &vars);
    if backing != (Backing::Role { generated: false }) {
        assert.push_str(&render(E2E_ASSERT_CONFIGMAP, &vars));
    }
    files.extend([
        (
            format!("{dir}/00-create.yaml"),
            ansible_manifests::sample(resource),
        ),
        (format!("{dir}/00-assert.yaml"), assert),
        (format!("{dir}/01-delete.yaml"), render(E2E_DELETE, &vars)),
        (format!("{dir}/01-errors.yaml"), render(E2E_ERRORS, &vars)),
    ]);
    files
}

/// Writes a planned kind: its role or playbook, its watch, its e2e test, `PROJECT`, and the
/// manifests.
fn create(root: &Path, mut project: Project, planned: Planned) -> anyhow::Result<()> {
    let Planned { resource, backing } = planned;
    let files = kind_files(&project, &resource, backing);
    if let Some((rel, _)) = files
        .iter()
        .find(|(rel, _)| !rel.starts_with(E2E_DIR) && root.join(rel).exists())
    {
        bail!(
            "{rel} already exists: move it away (create api never overwrites a role or playbook)"
        );
    }
    if let Backing::Role { generated: false } = backing
        && !root.join("roles").join(role_name(&resource)).is_dir()
    {
        eprintln!(
            "    note: roles/{} does not exist: write it (or pass --generate-role) before the \
             operator can run {}",
            role_name(&resource),
            resource.kind
        );
    }
    let watches_path = root.join(WATCHES_FILE);
    let mut watches = match std::fs::read_to_string(&watches_path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => WATCHES.to_string(),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", watches_path.display())),
    };
    if !watches.is_empty() && !watches.ends_with('\n') {
        watches.push('\n');
    }
    let entry = watch_entry(&resource, backing);
    watches.push_str(&entry);
    match serde_yaml::from_str::<serde_yaml::Value>(&watches) {
        Ok(serde_yaml::Value::Sequence(_)) => {}
        _ => bail!(
            "{WATCHES_FILE} is not a list of watches that a new entry can be added to; add \
             this yourself:\n{entry}"
        ),
    }
    write_files(root, &files)?;
    write_files(root, &[(WATCHES_FILE.to_string(), watches)])?;
    project.resources.push(resource.clone());
    project.save(root)?;
    ansible_manifests::generate(root, &project)?;

    let runs = match backing {
        Backing::Role { .. } => format!("the role roles/{}", role_name(&resource)),
        Backing::Playbook { .. } => format!("the playbook {}", playbook_path(&resource)),
    };
    println!(
        "Created {} {} run by {runs}, its watch in {WATCHES_FILE}, its CRD, a sample in {} and \
         a test in {E2E_DIR}/{}.",
        resource.api_version(),
        resource.kind,
        manifests::sample_path(&resource),
        resource.kind.to_ascii_lowercase()
    );
    println!("Next:");
    for (command, what) in [
        (
            "opkit test",
            "run the e2e suite on an embedded control plane",
        ),
        (
            "opkit run --up",
            "run the Ansible operator on an embedded control plane",
        ),
        ("kubectl apply -k config/samples", "then create the sample"),
    ] {
        println!("  {command:<34} # {what}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resource() -> Resource {
        Resource {
            group: "cache".into(),
            domain: "example.com".into(),
            version: "v1alpha1".into(),
            kind: "Memcached".into(),
            namespaced: true,
            chart: None,
            webhooks: Default::default(),
        }
    }

    #[test]
    fn a_watch_entry_names_the_role_or_the_playbook() {
        let entry = |backing| -> serde_yaml::Value {
            serde_yaml::from_str(&watch_entry(&resource(), backing)).unwrap()
        };
        let role = entry(Backing::Role { generated: true });
        assert_eq!(role[0]["group"], "cache.example.com");
        assert_eq!(role[0]["role"], "memcached");
        let playbook = entry(Backing::Playbook { with_role: false });
        assert_eq!(playbook[0]["playbook"], "playbooks/memcached.yml");
        assert!(playbook[0].get("role").is_none());
    }

    #[test]
    fn a_playbook_alone_holds_the_tasks_and_with_a_role_runs_it() {
        let project = Project {
            layout: project::LAYOUT.into(),
            project_name: "p".into(),
            domain: "example.com".into(),
            repo: String::new(),
            plugin: Plugin::Ansible,
            resources: vec![],
        };
        let playbook = |with_role| {
            let files = kind_files(&project, &resource(), Backing::Playbook { with_role });
            let text = &files
                .iter()
                .find(|(rel, _)| rel == "playbooks/memcached.yml")
                .unwrap()
                .1;
            let play: serde_yaml::Value = serde_yaml::from_str(text).unwrap();
            (play, files.iter().any(|(rel, _)| rel.starts_with("roles/")))
        };
        let (alone, has_role) = playbook(false);
        assert!(!has_role);
        assert!(alone[0]["tasks"][0]["kubernetes.core.k8s"].is_mapping());
        let (with_role, has_role) = playbook(true);
        assert!(has_role);
        assert_eq!(
            with_role[0]["tasks"][0]["ansible.builtin.import_role"]["name"],
            "../roles/memcached"
        );
    }
}
