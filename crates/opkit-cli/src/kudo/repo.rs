//! `kubectl kudo repo add|list|remove|context|index` and `search`: the repositories file
//! under `$KUDO_HOME` and repository indexes (`opkit_kudo::repo`), in KUDO's output.
//! Repositories are local folders or http(s) URLs, as in KUDO.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use opkit_kudo::package::Package;
use opkit_kudo::repo::{self, IndexFile, Repositories};

use super::output::table;

/// `repo ...`.
#[derive(Subcommand)]
pub(crate) enum RepoCommand {
    /// Add a repository: `repo add NAME URL`.
    Add(AddArgs),
    /// List the repositories (`*` marks the context).
    List,
    /// Remove a repository.
    Remove(NameArg),
    /// Set the repository used when none is named.
    Context(NameArg),
    /// Write DIR/index.yaml over the .tgz packages in DIR.
    Index(IndexArgs),
}

/// The flags of `repo add`.
#[derive(Args)]
pub(crate) struct AddArgs {
    /// The repository's name.
    name: String,
    /// Its URL: http(s)://, or a directory or file:// URL for a local repository.
    url: String,
    /// Skip URL and index file validation.
    #[arg(short = 'f', long)]
    skip_check: bool,
}

/// A repository name.
#[derive(Args)]
pub(crate) struct NameArg {
    /// The repository's name.
    name: String,
}

/// The flags of `repo index`.
#[derive(Args)]
pub(crate) struct IndexArgs {
    /// The directory of .tgz packages.
    dir: PathBuf,
    /// The URL the archives are served from (default: http://localhost/).
    #[arg(long, default_value = "")]
    url: String,
    /// An index whose versions are kept (merged in).
    #[arg(long)]
    merge: Option<PathBuf>,
    /// Replace an existing index.yaml.
    #[arg(short = 'w', long)]
    overwrite: bool,
}

/// The flags of `search`.
#[derive(Args)]
pub(crate) struct SearchArgs {
    /// Part of an operator's name (default: every operator).
    criteria: Option<String>,
    /// Every version, not only the newest.
    #[arg(short = 'a', long)]
    all_versions: bool,
    /// The repository to search (default: the context).
    #[arg(long)]
    repo: Option<String>,
}

fn repositories() -> anyhow::Result<(Repositories, PathBuf)> {
    let path = repo::repositories_file(&repo::kudo_home());
    Ok((Repositories::load(&path)?, path))
}

pub(crate) fn run(cmd: RepoCommand) -> anyhow::Result<()> {
    let (mut repos, path) = repositories()?;
    match cmd {
        RepoCommand::Add(a) => {
            repos.add(&a.name, &a.url)?;
            if !a.skip_check {
                let config = repo::RepoConfig {
                    name: a.name.clone(),
                    url: a.url.clone(),
                };
                repo::read_index(&config).map_err(|e| {
                    anyhow::anyhow!(
                        "looks like {:?} is not a valid operator repository or cannot be reached: {e}",
                        a.url
                    )
                })?;
            }
            repos.save(&path)?;
            println!("{:?} has been added to your repositories", a.name);
        }
        RepoCommand::List => {
            if repos.repositories.is_empty() {
                bail!("no repositories to show");
            }
            let mut rows = vec![vec!["NAME".to_string(), "URL".to_string()]];
            for r in &repos.repositories {
                let mark = if r.name == repos.context { "*" } else { "" };
                rows.push(vec![format!("{mark}{}", r.name), r.url.clone()]);
            }
            println!("{}", table(&rows));
        }
        RepoCommand::Remove(a) => {
            repos.remove(&a.name)?;
            repos.save(&path)?;
            println!("{:?} has been removed from your repositories", a.name);
        }
        RepoCommand::Context(a) => {
            repos.set_context(&a.name)?;
            repos.save(&path)?;
        }
        RepoCommand::Index(a) => index(a)?,
    }
    Ok(())
}

fn index(a: IndexArgs) -> anyhow::Result<()> {
    let target = a.dir.join("index.yaml");
    if target.exists() && !a.overwrite {
        bail!("{} exists. Remove or use --overwrite", target.display());
    }
    let now = k8s_openapi::jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string();
    let (mut index, warnings) = repo::index_directory(&a.dir, &a.url, &now)?;
    for w in warnings {
        eprintln!("{w}");
    }
    if let Some(merge) = &a.merge {
        let text = std::fs::read_to_string(merge)
            .with_context(|| format!("reading the index to merge {}", merge.display()))?;
        index.merge(&IndexFile::parse(&text)?);
    }
    std::fs::write(&target, index.to_yaml()?)
        .with_context(|| format!("writing {}", target.display()))?;
    println!("index {} created.", target.display());
    Ok(())
}

pub(crate) fn search(a: SearchArgs) -> anyhow::Result<()> {
    let (repos, _) = repositories()?;
    let index = repo::read_index(repos.resolve(a.repo.as_deref())?)?;
    let found = index.find(a.criteria.as_deref().unwrap_or(""), a.all_versions);
    if found.is_empty() {
        println!("no operators found");
        return Ok(());
    }
    let mut rows = vec![vec![
        "Name".to_string(),
        "Operator Version".to_string(),
        "App Version".to_string(),
    ]];
    let mut previous = "";
    for pv in found {
        let name = if pv.name == previous {
            String::new()
        } else {
            pv.name.clone()
        };
        previous = &pv.name;
        rows.push(vec![
            name,
            pv.operator_version.clone(),
            pv.app_version.clone(),
        ]);
    }
    println!("{}", table(&rows));
    Ok(())
}

/// A package by name from a repository (the context unless `repo_name`): its newest
/// version, or the one with the given versions.
pub(crate) fn package_by_name(
    name: &str,
    repo_name: Option<&str>,
    app_version: Option<&str>,
    operator_version: Option<&str>,
) -> anyhow::Result<(Package, PathBuf)> {
    let (repos, _) = repositories()?;
    let config = repos.resolve(repo_name)?;
    let index = repo::read_index(config)?;
    let pv = index
        .lookup(name, app_version, operator_version)
        .with_context(|| format!("package {name} not found in repository {}", config.name))?;
    let files = repo::read_package(pv)?;
    let pkg = files.convert()?;
    // Dependencies named by a relative path are found beside a local archive.
    let base = pv
        .urls
        .first()
        .and_then(|u| repo::local_path(u))
        .and_then(|p| p.parent().map(Path::to_path_buf))
        .unwrap_or_default();
    Ok((pkg, base))
}
