//! `kubectl kudo install` and `upgrade`: a package (and the packages its `KudoOperator`
//! tasks depend on) becomes `Operator` and `OperatorVersion` objects in the namespace, and
//! an `Instance` with the user's parameters (checked against the operator version first, so
//! bad values create nothing). Existing operators and operator versions are reused, as KUDO
//! does. Dependencies are resolved here: a task's `package` (a path relative to the parent
//! package) is loaded, cycles are refused with KUDO's message, and the task is rewritten to
//! name the child operator, its version and app version — the manager only creates the
//! child instance.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Args;
use k8s_openapi::api::core::v1::Namespace;
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use opkit_kudo::package::{self, Package};

use super::{Global, Kudo, parse_wait_time};

/// The package flags `install` and `upgrade` share: which package, and the parameters
/// given for it.
#[derive(Args)]
pub(crate) struct PackageArgs {
    /// A package directory, a .tgz package, or a package name.
    package: String,
    /// A parameter value: `-p NAME=VALUE` (repeatable).
    #[arg(short = 'p', long = "parameter", value_name = "NAME=VALUE")]
    parameters: Vec<String>,
    /// A YAML file of parameter values (repeatable; -p wins).
    #[arg(short = 'P', long = "parameter-file", value_name = "FILE")]
    parameter_files: Vec<PathBuf>,
    /// The operator version the package must have.
    #[arg(long)]
    operator_version: Option<String>,
    /// The app version the package must have.
    #[arg(long)]
    app_version: Option<String>,
    /// The repository to install a package by name from (default: the context).
    #[arg(long)]
    repo: Option<String>,
}

impl PackageArgs {
    /// The parameters given (`-p` over `-P`), then the package with its dependencies
    /// resolved (see [`resolve`] and [`dependencies`]).
    fn load(&self) -> anyhow::Result<(BTreeMap<String, String>, Package, Vec<Package>)> {
        let params = opkit_kudo::params::parameter_map(&self.parameters, &self.parameter_files)
            .map_err(|e| anyhow::anyhow!("could not parse parameters: {e}"))?;
        let (mut pkg, base) = resolve(
            &self.package,
            self.repo.as_deref(),
            self.app_version.as_deref(),
            self.operator_version.as_deref(),
        )?;
        let deps = dependencies(&mut pkg, &base)?;
        Ok((params, pkg, deps))
    }
}

/// The flags of `install`.
#[derive(Args)]
pub(crate) struct InstallArgs {
    #[command(flatten)]
    package: PackageArgs,
    /// The instance's name (default: `<operator>-instance`).
    #[arg(long)]
    instance: Option<String>,
    /// Create the namespace (rendered from the operator's namespaceManifest if it has one).
    #[arg(long)]
    create_namespace: bool,
    /// Install the operator and operator version only, no instance.
    #[arg(long)]
    skip_instance: bool,
    /// Wait until the instance's deploy plan ends.
    #[arg(long)]
    wait: bool,
    /// How long --wait waits (seconds or a duration).
    #[arg(long, default_value = "300", value_parser = parse_wait_time)]
    wait_time: Duration,
}

/// The flags of `upgrade`.
#[derive(Args)]
pub(crate) struct UpgradeArgs {
    #[command(flatten)]
    package: PackageArgs,
    /// The instance to upgrade.
    #[arg(long)]
    instance: Option<String>,
}

/// Loads the package `arg` names: a local directory or `.tgz`, else a package name in
/// the repository `repo` (default: the context). Returns it with the directory its
/// dependencies' relative paths start from.
pub(crate) fn resolve(
    arg: &str,
    repo: Option<&str>,
    app_version: Option<&str>,
    operator_version: Option<&str>,
) -> anyhow::Result<(Package, PathBuf)> {
    let path = Path::new(arg);
    if !path.exists() {
        if arg.contains('/') || arg.ends_with(".tgz") {
            bail!("failed to resolve operator package for: {arg}: no such directory or .tgz file");
        }
        return super::repo::package_by_name(arg, repo, app_version, operator_version)
            .with_context(|| format!("failed to resolve operator package for: {arg}"));
    }
    let pkg = package::load(path)
        .with_context(|| format!("failed to resolve operator package for: {arg}"))?;
    for (flag, want, have) in [
        ("--operator-version", operator_version, pkg.version()),
        ("--app-version", app_version, pkg.app_version()),
    ] {
        if let Some(want) = want.filter(|w| !w.is_empty())
            && want != have
        {
            bail!("{flag} {want}: the package at {arg} is version {have:?}");
        }
    }
    let base = if path.is_dir() {
        path.to_path_buf()
    } else {
        path.parent().map(Path::to_path_buf).unwrap_or_default()
    };
    Ok((pkg, base))
}

/// KUDO's dependency resolution: every package reachable through `KudoOperator` tasks, in
/// discovery order (the root excluded), with the tasks of `root` and of each dependency
/// rewritten to name the child operator and its versions.
pub(crate) fn dependencies(root: &mut Package, base: &Path) -> anyhow::Result<Vec<Package>> {
    let mut nodes: Vec<(Package, PathBuf)> = vec![(root.clone(), base.to_path_buf())];
    let mut edges: Vec<Vec<usize>> = vec![Vec::new()];
    walk(0, &mut nodes, &mut edges)?;
    *root = nodes[0].0.clone();
    Ok(nodes.into_iter().skip(1).map(|(p, _)| p).collect())
}

fn fqn(p: &Package) -> String {
    p.operator_version.metadata.name.clone().unwrap_or_default()
}

fn walk(
    parent: usize,
    nodes: &mut Vec<(Package, PathBuf)>,
    edges: &mut Vec<Vec<usize>>,
) -> anyhow::Result<()> {
    let tasks = nodes[parent].0.operator_version.spec.tasks.clone();
    for (t, task) in tasks.iter().enumerate() {
        if task.kind != "KudoOperator" {
            continue;
        }
        let spec = &task.spec;
        let child_path = nodes[parent].1.join(&spec.package);
        let version = (!spec.operator_version.is_empty()).then_some(spec.operator_version.as_str());
        let app = (!spec.app_version.is_empty()).then_some(spec.app_version.as_str());
        let child_arg = if spec.package.contains('/') || child_path.exists() {
            child_path.to_string_lossy().into_owned()
        } else {
            spec.package.clone()
        };
        let (child, child_base) = resolve(&child_arg, None, app, version).with_context(|| {
            format!(
                "failed to resolve package {}, dependency of package {}",
                spec.package,
                fqn(&nodes[parent].0)
            )
        })?;
        let resolved = &mut nodes[parent].0.operator_version.spec.tasks[t].spec;
        resolved.package = child.name().to_string();
        resolved.operator_version = child.version().to_string();
        resolved.app_version = child.app_version().to_string();
        let existing = nodes.iter().position(|(p, _)| fqn(p) == fqn(&child));
        let index = match existing {
            Some(i) => i,
            None => {
                nodes.push((child, child_base));
                edges.push(Vec::new());
                nodes.len() - 1
            }
        };
        edges[parent].push(index);
        if reaches(edges, index, parent) {
            bail!(
                "cyclic package dependency found when adding package {} -> {}",
                fqn(&nodes[parent].0),
                fqn(&nodes[index].0)
            );
        }
        if existing.is_none() {
            walk(index, nodes, edges)?;
        }
    }
    Ok(())
}

/// Whether `to` is reachable from `from`.
fn reaches(edges: &[Vec<usize>], from: usize, to: usize) -> bool {
    let mut seen = vec![false; edges.len()];
    let mut stack = vec![from];
    while let Some(n) = stack.pop() {
        if n == to {
            return true;
        }
        if !std::mem::replace(&mut seen[n], true) {
            stack.extend(&edges[n]);
        }
    }
    false
}

/// Creates the operator and operator version of `pkg` unless they exist, saying what it did.
async fn install_operator(kudo: &Kudo, pkg: &Package) -> anyhow::Result<()> {
    let ns = &kudo.namespace;
    let done = opkit_kudo::install::operator(&kudo.client, ns, pkg).await?;
    if done.operator_created {
        println!("operator {ns}/{} created", pkg.name());
    }
    let ov_name = fqn(pkg);
    if done.operator_version_created {
        println!("operatorversion {ns}/{ov_name} created");
    } else {
        println!("operatorversion {ns}/{ov_name} already installed");
    }
    Ok(())
}

/// Installs the dependencies, then the package's own operator and operator version.
async fn install_all(kudo: &Kudo, pkg: &Package, deps: &[Package]) -> anyhow::Result<()> {
    for dep in deps {
        install_operator(kudo, dep).await.with_context(|| {
            format!(
                "failed to install dependencies of operatorversion {}",
                fqn(pkg)
            )
        })?;
    }
    install_operator(kudo, pkg).await
}

pub(crate) async fn install(args: InstallArgs, g: &Global) -> anyhow::Result<()> {
    let (params, pkg, deps) = args.package.load()?;
    if !args.skip_instance {
        opkit_kudo::install::check_parameters(&pkg, &params)?;
    }
    let kudo = Kudo::connect(g).await?;
    let ns = kudo.namespace.clone();
    let instance_name = args
        .instance
        .filter(|i| !i.is_empty())
        .unwrap_or_else(|| format!("{}-instance", pkg.name()));
    if !args.skip_instance
        && opkit_kudo::install::instance_exists(&kudo.client, &ns, &instance_name).await?
    {
        return Err(opkit_kudo::install::InstallError::InstanceExists {
            namespace: ns,
            name: instance_name,
        }
        .into());
    }
    if args.create_namespace {
        create_namespace(&kudo, &pkg, &instance_name, &params).await?;
    }
    install_all(&kudo, &pkg, &deps).await?;
    if args.skip_instance {
        return Ok(());
    }
    opkit_kudo::install::instance(&kudo.client, &ns, &instance_name, &pkg, params).await?;
    println!("instance {ns}/{instance_name} created");
    if args.wait {
        kudo.wait_for_plan(&instance_name, None, args.wait_time)
            .await?;
    }
    Ok(())
}

/// `--create-namespace`: the namespace, from the operator's `namespaceManifest` rendered with
/// the given parameters when it has one.
async fn create_namespace(
    kudo: &Kudo,
    pkg: &Package,
    instance: &str,
    params: &BTreeMap<String, String>,
) -> anyhow::Result<()> {
    let ns_name = kudo.namespace.clone();
    let manifest = &pkg.operator.spec.namespace_manifest;
    let mut ns: Namespace = if manifest.is_empty() {
        Namespace::default()
    } else {
        let template = pkg
            .operator_version
            .spec
            .templates
            .get(manifest)
            .with_context(|| {
                format!("failed to find template for namespace manifest {manifest:?}")
            })?;
        let vars = opkit_template::kudo::Variables {
            operator_name: pkg.name().to_string(),
            name: instance.to_string(),
            namespace: ns_name.clone(),
            app_version: pkg.app_version().to_string(),
            operator_version: pkg.version().to_string(),
            params: params
                .iter()
                .map(|(k, v)| (k.clone(), opkit_template::Value::from(v.as_str())))
                .collect(),
            ..Default::default()
        };
        let rendered = opkit_template::kudo::Renderer::new()
            .render("namespace", template, &vars)
            .with_context(|| format!("failed to render namespace manifest {manifest:?}"))?;
        serde_yaml::from_str(&rendered)
            .with_context(|| format!("namespace manifest {manifest:?} is not a Namespace"))?
    };
    ns.metadata.name = Some(ns_name.clone());
    let api: Api<Namespace> = Api::all(kudo.client.clone());
    api.create(&PostParams::default(), &ns)
        .await
        .with_context(|| format!("failed to create namespace {ns_name}"))?;
    println!("namespace {ns_name} created");
    Ok(())
}

pub(crate) async fn upgrade(args: UpgradeArgs, g: &Global) -> anyhow::Result<()> {
    let name = args.instance.filter(|i| !i.is_empty()).context(
        "--instance flag has to be provided to indicate which instance you want to upgrade",
    )?;
    let (params, pkg, deps) = args.package.load()?;
    let kudo = Kudo::connect(g).await?;
    let ns = kudo.namespace.clone();
    let instance = kudo
        .instances()
        .get_opt(&name)
        .await?
        .with_context(|| format!("instance {ns}/{name} does not exist in the cluster"))?;
    let old = kudo.operator_version_of(&instance).await?;
    compare_versions(&old.spec.version, pkg.version())?;
    let new_ov = fqn(&pkg);
    let defined = &pkg.operator_version.spec.parameters;
    opkit_kudo::params::validate_update(defined, &instance.spec.parameters, &params, &new_ov)?;
    let missing: Vec<&str> = defined
        .iter()
        .filter(|p| {
            p.is_required()
                && !params.contains_key(&p.name)
                && !instance.spec.parameters.contains_key(&p.name)
        })
        .map(|p| p.name.as_str())
        .collect();
    if !missing.is_empty() {
        bail!(
            "missing required parameters of operatorversion {new_ov}: {}",
            missing.join(",")
        );
    }
    install_all(&kudo, &pkg, &deps)
        .await
        .with_context(|| format!("failed to install new operatorversion {ns}/{new_ov}"))?;
    let mut spec = serde_json::json!({"operatorVersion": {"name": new_ov}});
    if !params.is_empty() {
        spec["parameters"] = serde_json::to_value(&params)?;
    }
    kudo.instances()
        .patch(
            &name,
            &PatchParams::default(),
            &Patch::Merge(&serde_json::json!({ "spec": spec })),
        )
        .await
        .with_context(|| {
            format!("failed to update instance for new operatorversion {ns}/{new_ov}")
        })?;
    println!("instance {ns}/{name} updated");
    Ok(())
}

/// KUDO's rule: the new operator version must be a greater semantic version.
fn compare_versions(old: &str, new: &str) -> anyhow::Result<()> {
    let parse = |v: &str| {
        semver::Version::parse(v.trim_start_matches('v'))
            .map_err(|e| anyhow::anyhow!("failed to parse {v} as semver: {e}"))
    };
    if parse(old)? >= parse(new)? {
        bail!(
            "upgraded version {new} is the same or smaller as current version {old} -> not upgrading"
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, dep: Option<&str>) {
        std::fs::create_dir_all(dir.join("templates")).unwrap();
        let task = match dep {
            Some(d) => {
                format!("  - name: dep\n    kind: KudoOperator\n    spec: {{package: \"{d}\"}}\n")
            }
            None => "  - name: dep\n    kind: Dummy\n".to_string(),
        };
        std::fs::write(
            dir.join("operator.yaml"),
            format!(
                "name: {name}\noperatorVersion: 0.1.0\nkubernetesVersion: 1.16.0\ntasks:\n{task}plans:\n  deploy:\n    phases:\n    - name: p\n      steps:\n      - name: s\n        tasks: [dep]\n"
            ),
        )
        .unwrap();
        std::fs::write(dir.join("params.yaml"), "parameters: []\n").unwrap();
    }

    #[test]
    fn dependencies_resolve_relative_paths_and_rewrite_the_task() {
        let dir = tempfile::tempdir().unwrap();
        write(&dir.path().join("parent"), "parent", Some("../child"));
        write(&dir.path().join("child"), "child", None);
        let (mut pkg, base) = resolve(
            &dir.path().join("parent").to_string_lossy(),
            None,
            None,
            None,
        )
        .unwrap();
        let deps = dependencies(&mut pkg, &base).unwrap();
        assert_eq!(deps.iter().map(fqn).collect::<Vec<_>>(), ["child-0.1.0"]);
        let spec = &pkg.operator_version.spec.tasks[0].spec;
        assert_eq!(spec.package, "child");
        assert_eq!(spec.operator_version, "0.1.0");
    }

    #[test]
    fn a_dependency_cycle_is_refused_with_kudos_message() {
        let dir = tempfile::tempdir().unwrap();
        write(&dir.path().join("a"), "a", Some("../b"));
        write(&dir.path().join("b"), "b", Some("../a"));
        let (mut pkg, base) =
            resolve(&dir.path().join("a").to_string_lossy(), None, None, None).unwrap();
        let err = dependencies(&mut pkg, &base).unwrap_err().to_string();
        assert_eq!(
            err,
            "cyclic package dependency found when adding package b-0.1.0 -> a-0.1.0"
        );
    }

    #[test]
    fn upgrades_must_go_to_a_greater_version() {
        compare_versions("0.1.0", "0.2.0").unwrap();
        let err = compare_versions("0.2.0", "0.2.0").unwrap_err().to_string();
        assert_eq!(
            err,
            "upgraded version 0.2.0 is the same or smaller as current version 0.2.0 -> not upgrading"
        );
    }
}
