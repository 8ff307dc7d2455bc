//! `kubectl kudo package new|create|verify|list` (`add` is in `package_add`): package
//! archives, KUDO's verifiers, and the
//! parameters, plans and tasks of a package, in KUDO's output formats.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use opkit_kudo::OperatorVersion;
use opkit_kudo::package::{self, Verification};

use super::output::{Tree, table};

/// `package new`'s files.
const NEW_OPERATOR: &str = include_str!("../../templates/kudo/new/operator.yaml");
const NEW_PARAMS: &str = include_str!("../../templates/kudo/new/params.yaml");

/// `package ...`.
#[derive(Subcommand)]
pub(crate) enum PackageCommand {
    /// Create an operator directory NAME with an operator.yaml (a deploy plan) and params.yaml.
    New(NewArgs),
    /// Package a local operator directory as a .tgz (checked first).
    Create(CreateArgs),
    /// Verify a package (a directory or a .tgz): errors make it invalid, warnings do not.
    Verify(PathArg),
    /// List the parameters, plans or tasks of a package.
    #[command(subcommand)]
    List(ListCommand),
    /// Add a maintainer, parameter, task or plan to the package in (or under) the current
    /// directory.
    #[command(subcommand)]
    Add(super::package_add::AddCommand),
}

/// The flags of `package create`.
#[derive(Args)]
pub(crate) struct CreateArgs {
    /// The operator directory.
    dir: PathBuf,
    /// The directory the .tgz is written to.
    #[arg(short = 'd', long, default_value = ".")]
    destination: PathBuf,
    /// Replace an existing .tgz.
    #[arg(short = 'w', long)]
    overwrite: bool,
}

/// The flags of `package new`.
#[derive(Args)]
pub(crate) struct NewArgs {
    /// The operator's name (and directory).
    name: String,
    /// Write into an existing directory.
    #[arg(short = 'w', long)]
    overwrite: bool,
}

/// A package path.
#[derive(Args)]
pub(crate) struct PathArg {
    /// The package: a directory or a .tgz.
    path: PathBuf,
}

/// `package list ...`.
#[derive(Subcommand)]
pub(crate) enum ListCommand {
    /// The parameters, as a table.
    Parameters(ListParamsArgs),
    /// The plans, as a tree.
    Plans(ListPlansArgs),
    /// The tasks, as a table.
    Tasks(PathArg),
}

/// The flags of `package list parameters`.
#[derive(Args)]
pub(crate) struct ListParamsArgs {
    /// The package: a directory or a .tgz.
    path: PathBuf,
    /// Also show descriptions.
    #[arg(short = 'd', long)]
    descriptions: bool,
    /// Only required parameters without a default.
    #[arg(short = 'r', long)]
    required: bool,
    /// Only names.
    #[arg(long)]
    names: bool,
}

/// The flags of `package list plans`.
#[derive(Args)]
pub(crate) struct ListPlansArgs {
    /// The package: a directory or a .tgz.
    path: PathBuf,
    /// Also show each task's resources.
    #[arg(short = 't', long)]
    with_tasks: bool,
}

pub(crate) fn run(cmd: PackageCommand) -> anyhow::Result<()> {
    match cmd {
        PackageCommand::New(a) => new(&a, Path::new(".")),
        PackageCommand::Add(c) => super::package_add::run(c),
        PackageCommand::Create(a) => {
            let target = package::write_tgz(&a.dir, &a.destination, a.overwrite)
                .with_context(|| format!("invalid operator in path: {}", a.dir.display()))?;
            println!("Package created: {}", target.display());
            Ok(())
        }
        PackageCommand::Verify(a) => {
            let files = package::read(&a.path)?;
            let res = package::verify(&files);
            print!("{}", verification_text(&res));
            if !res.is_valid() {
                bail!("found {} package verification errors", res.errors.len());
            }
            Ok(())
        }
        PackageCommand::List(ListCommand::Parameters(a)) => {
            let ov = load(&a.path)?;
            print!(
                "{}",
                parameters_text(&ov, a.required, a.names, a.descriptions)?
            );
            Ok(())
        }
        PackageCommand::List(ListCommand::Plans(a)) => {
            print!("{}", plans_text(&load(&a.path)?, a.with_tasks));
            Ok(())
        }
        PackageCommand::List(ListCommand::Tasks(a)) => {
            print!("{}", tasks_text(&load(&a.path)?));
            Ok(())
        }
    }
}

/// KUDO's `package new`: refuses an existing directory (unless `overwrite`) and an operator
/// inside an operator; keeps an existing params.yaml.
fn new(a: &NewArgs, cwd: &Path) -> anyhow::Result<()> {
    let dir = cwd.join(&a.name);
    if dir.exists() && !a.overwrite {
        bail!("folder {:?} already exists", a.name);
    }
    if cwd.join(package::OPERATOR_FILE).exists() {
        bail!(
            "operator.yaml exists in the current directory.  creating an operator in an operator is not supported"
        );
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let vars = [
        ("name", a.name.as_str()),
        ("kudo_version", env!("CARGO_PKG_VERSION")),
    ];
    let write = |file: &str, text: &str| {
        let path = dir.join(file);
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))
    };
    write(
        package::OPERATOR_FILE,
        &crate::scaffold::render(NEW_OPERATOR, &vars),
    )?;
    if !dir.join(package::PARAMS_FILE).exists() {
        write(package::PARAMS_FILE, NEW_PARAMS)?;
    }
    println!(
        "Operator created. Extend it by editing {0}/operator.yaml (tasks, plans) and \
         {0}/params.yaml (parameters); templates go to {0}/templates/.",
        a.name
    );
    Ok(())
}

fn load(path: &Path) -> anyhow::Result<OperatorVersion> {
    Ok(package::load(path)?.operator_version)
}

/// KUDO's verify output: `Warnings` and `Errors` tables, then `package is valid` if it is.
fn verification_text(res: &Verification) -> String {
    let mut out = String::new();
    for (header, items) in [("Warnings", &res.warnings), ("Errors", &res.errors)] {
        if !items.is_empty() {
            let mut rows = vec![vec![header.to_string()]];
            rows.extend(items.iter().map(|i| vec![i.clone()]));
            out.push_str(&table(&rows));
            out.push('\n');
        }
    }
    if res.is_valid() {
        out.push_str("package is valid\n");
    }
    out
}

fn parameters_text(
    ov: &OperatorVersion,
    required: bool,
    names: bool,
    descriptions: bool,
) -> anyhow::Result<String> {
    if [required, names, descriptions]
        .iter()
        .filter(|b| **b)
        .count()
        > 1
    {
        bail!("only one of the flags 'required', 'names', 'descriptions' can be set");
    }
    let mut params = ov.spec.parameters.clone();
    params.sort_by(|a, b| a.name.cmp(&b.name));
    if required {
        let mut rows = vec![vec!["Name".to_string()]];
        rows.extend(
            params
                .iter()
                .filter(|p| p.is_required())
                .map(|p| vec![p.name.clone()]),
        );
        if rows.len() == 1 {
            return Ok("no required parameters without default values found\n".to_string());
        }
        return Ok(format!("{}\n", table(&rows)));
    }
    if names {
        let mut rows = vec![vec!["Name".to_string()]];
        rows.extend(params.iter().map(|p| vec![p.name.clone()]));
        return Ok(format!("{}\n", table(&rows)));
    }
    let mut header = vec!["Name", "Default", "Required", "Immutable"];
    if descriptions {
        header.push("Descriptions");
    }
    let mut rows = vec![header.into_iter().map(String::from).collect::<Vec<_>>()];
    for p in &params {
        let mut row = vec![
            p.name.clone(),
            p.default.clone().unwrap_or_default(),
            p.required.unwrap_or(false).to_string(),
            p.is_immutable().to_string(),
        ];
        if descriptions {
            row.push(p.description.clone());
        }
        rows.push(row);
    }
    Ok(format!("{}\n", table(&rows)))
}

fn plans_text(ov: &OperatorVersion, with_tasks: bool) -> String {
    if ov.spec.plans.is_empty() {
        return "no plans found\n".to_string();
    }
    let mut root = Tree::new("plans");
    for (name, plan) in &ov.spec.plans {
        let p = root.add(format!("{name} ({})", plan.strategy.as_str()));
        for phase in &plan.phases {
            let ph = p.add(format!(
                "[phase]  {} ({})",
                phase.name,
                phase.strategy.as_str()
            ));
            for step in &phase.steps {
                let s = ph.add(format!("[step]  {}", step.name));
                for task_name in &step.tasks {
                    if !with_tasks {
                        s.add(task_name.clone());
                        continue;
                    }
                    for t in ov.spec.tasks.iter().filter(|t| &t.name == task_name) {
                        let meta = match t.kind.as_str() {
                            "Apply" => "apply",
                            "Delete" => "delete",
                            "Toggle" => "toggle",
                            "Pipe" => "pipe",
                            "Dummy" => "dummy",
                            _ => "unknown",
                        };
                        let node = s.add(format!("[{meta}]  {task_name}"));
                        match meta {
                            "apply" | "delete" | "toggle" => {
                                if meta == "toggle" {
                                    node.add(format!("[parameter]  {}", t.spec.parameter));
                                }
                                for r in &t.spec.resources {
                                    node.add(r.clone());
                                }
                            }
                            "pipe" => {
                                node.add(t.spec.pod.clone());
                            }
                            _ => {}
                        }
                    }
                }
            }
        }
    }
    format!("{}\n", root.render())
}

fn tasks_text(ov: &OperatorVersion) -> String {
    if ov.spec.tasks.is_empty() {
        return "no tasks  found\n".to_string();
    }
    let mut rows = vec![vec!["Name".into(), "Kind".into(), "Resources".into()]];
    for t in &ov.spec.tasks {
        let resources = if t.kind == "Pipe" {
            t.spec.pod.clone()
        } else {
            format!("[{}]", t.spec.resources.join(" "))
        };
        rows.push(vec![t.name.clone(), t.kind.clone(), resources]);
    }
    format!("{}\n", table(&rows))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zk() -> OperatorVersion {
        serde_yaml::from_str(
            r#"
metadata: {name: zk}
spec:
  tasks:
  - {name: infra, kind: Apply, spec: {resources: [services.yaml, pdb.yaml]}}
  - {name: app, kind: Apply, spec: {resources: [statefulset.yaml, subfolder/statefulset2.yaml]}}
  - {name: validation, kind: Apply, spec: {resources: [validation.yaml]}}
  parameters:
  - {name: memory, default: 1Gi, required: true}
  - {name: cpus, default: "0.25", required: true}
  plans:
    deploy:
      strategy: serial
      phases:
      - name: zookeeper
        strategy: parallel
        steps:
        - {name: everything, tasks: [infra, app]}
    validation:
      strategy: serial
      phases:
      - name: connection
        strategy: parallel
        steps:
        - {name: connection, tasks: [validation]}
"#,
        )
        .unwrap()
    }

    #[test]
    fn list_outputs_match_kudos_golden_files() {
        let ov = zk();
        assert_eq!(
            parameters_text(&ov, false, false, false).unwrap(),
            "Name  \tDefault\tRequired\tImmutable\ncpus  \t0.25   \ttrue    \tfalse    \nmemory\t1Gi    \ttrue    \tfalse    \n"
        );
        let nb = "\u{a0}\u{a0}";
        assert_eq!(
            plans_text(&ov, false),
            format!(
                "plans\n├── deploy (serial)\n│{nb} └── [phase]  zookeeper (parallel)\n│{nb}     └── [step]  everything\n│{nb}         ├── infra\n│{nb}         └── app\n└── validation (serial)\n    └── [phase]  connection (parallel)\n        └── [step]  connection\n            └── validation\n\n"
            )
        );
        assert_eq!(
            tasks_text(&ov),
            "Name      \tKind \tResources                                     \ninfra     \tApply\t[services.yaml pdb.yaml]                      \napp       \tApply\t[statefulset.yaml subfolder/statefulset2.yaml]\nvalidation\tApply\t[validation.yaml]                             \n"
        );
    }

    #[test]
    fn package_new_writes_an_operator_that_loads() {
        let dir = tempfile::tempdir().unwrap();
        let args = NewArgs {
            name: "newop".into(),
            overwrite: false,
        };
        new(&args, dir.path()).unwrap();
        let pkg = package::load(&dir.path().join("newop")).unwrap();
        assert_eq!(
            pkg.operator_version.metadata.name.as_deref(),
            Some("newop-0.1.0-0.1.0")
        );
        assert_eq!(
            pkg.operator_version.spec.plans["deploy"].phases[0].steps[0].tasks,
            ["deploy"]
        );
        let err = new(&args, dir.path()).unwrap_err().to_string();
        assert_eq!(err, "folder \"newop\" already exists");
    }

    #[test]
    fn verify_prints_warnings_errors_and_validity_like_kudo() {
        let res = Verification {
            errors: vec![],
            warnings: vec!["parameter \"X\" defined but not used.".into()],
        };
        assert_eq!(
            verification_text(&res),
            "Warnings                           \nparameter \"X\" defined but not used.\npackage is valid\n"
        );
    }
}
