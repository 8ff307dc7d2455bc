//! `opkit init` and `opkit create api`: a new operator project, and a new API type with its
//! controller, test and sample, in kubebuilder's layout.
//!
//! Templates live in `templates/` as plain files with `{{key}}` placeholders, so what a
//! project starts with can be read as it is. New code is registered at `+opkit:scaffold`
//! markers in the project's own files; every check runs before the first write, so a refused
//! command changes nothing.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use clap::Args;

use crate::ansible_scaffold;
use crate::helm_scaffold::{self, ApiFlags};
use crate::manifests;
use crate::project::{self, Plugin, Project, Resource};
use crate::test_project::E2E_DIR;

/// Flags of `opkit init`.
#[derive(Args)]
pub struct InitArgs {
    /// What backs the kinds: `rust` (controllers in Rust), `helm` (a Helm chart per kind, run
    /// by opkit's generic chart operator; operator-sdk's `helm.sdk.operatorframework.io/v1`) or
    /// `ansible` (a role or playbook per kind, run by opkit's generic Ansible operator).
    #[arg(long, value_name = "PLUGIN", default_value = "rust", value_parser = Plugin::parse)]
    plugins: Plugin,
    /// The API domain: group `webapp` becomes `webapp.DOMAIN`.
    #[arg(long, value_name = "DOMAIN")]
    domain: String,
    /// The source repository, e.g. `github.com/you/guestbook` (required for `--plugins rust`).
    #[arg(long, value_name = "REPO")]
    repo: Option<String>,
    /// helm, ansible: with --group/--version/--kind (or --helm-chart), the first kind is
    /// created too.
    #[command(flatten)]
    api: ApiFlags,
    /// The project name (default: the directory's name).
    #[arg(long, value_name = "NAME")]
    name: Option<String>,
    #[command(flatten)]
    opkit: OpkitSourceArgs,
    /// Write into a directory that is not empty (files of the same name are overwritten).
    #[arg(long)]
    force: bool,
}

/// Where the project takes opkit from: one of a checkout, a crates.io version or a git
/// repository (clap refuses two at once). Without any: the checkout this `opkit` was built from
/// if it is still there (a development build), else crates.io at this CLI's own version (an
/// installed `opkit`).
#[derive(Args)]
struct OpkitSourceArgs {
    /// Depend on the opkit checkout at DIR (path dependencies; builds offline, but not in a
    /// container image).
    #[arg(long, value_name = "DIR", conflicts_with_all = ["opkit_version", "opkit_git"])]
    opkit_path: Option<PathBuf>,
    /// Depend on opkit from crates.io, e.g. `0.1` (default outside a checkout: this CLI's version).
    #[arg(long, value_name = "VER", conflicts_with = "opkit_git")]
    opkit_version: Option<String>,
    /// Depend on opkit from a git repository, e.g. `https://github.com/opkit/opkit` (its default
    /// branch unless --opkit-rev, --opkit-branch or --opkit-tag).
    #[arg(long, value_name = "URL")]
    opkit_git: Option<String>,
    /// With --opkit-git: the commit to use.
    #[arg(long, value_name = "REV", requires = "opkit_git", conflicts_with_all = ["opkit_branch", "opkit_tag"])]
    opkit_rev: Option<String>,
    /// With --opkit-git: the branch to follow.
    #[arg(
        long,
        value_name = "BRANCH",
        requires = "opkit_git",
        conflicts_with = "opkit_tag"
    )]
    opkit_branch: Option<String>,
    /// With --opkit-git: the tag to use.
    #[arg(long, value_name = "TAG", requires = "opkit_git")]
    opkit_tag: Option<String>,
}

/// Where a scaffolded project takes `opkit` and `opkit-testenv` from (always both from the same
/// place, so the runtime and the test harness match).
#[derive(Debug, Clone, PartialEq)]
enum OpkitSource {
    /// The root of an opkit checkout on this machine (absolute).
    Path(PathBuf),
    /// A version requirement on crates.io.
    Version(String),
    /// A git repository, at a `rev`, `branch` or `tag` (key and value), or its default branch.
    Git {
        url: String,
        reference: Option<(&'static str, String)>,
    },
}

impl OpkitSourceArgs {
    /// Whether any of the flags is given.
    fn any(&self) -> bool {
        self.opkit_path.is_some() || self.opkit_version.is_some() || self.opkit_git.is_some()
    }
}

impl OpkitSource {
    /// The source the flags name, checked; without flags, [`default_opkit_source`].
    fn from_args(args: OpkitSourceArgs) -> anyhow::Result<Self> {
        if let Some(path) = args.opkit_path {
            return Ok(Self::Path(opkit_checkout(&path)?));
        }
        if let Some(req) = args.opkit_version {
            return Self::version(&req);
        }
        if let Some(url) = args.opkit_git {
            return Self::git(url, args.opkit_rev, args.opkit_branch, args.opkit_tag);
        }
        Ok(default_opkit_source())
    }

    fn version(req: &str) -> anyhow::Result<Self> {
        let req = req.trim();
        semver::VersionReq::parse(req).map_err(|e| {
            anyhow::anyhow!(
                "--opkit-version {req:?} is not a version requirement cargo understands ({e}); \
                 e.g. --opkit-version {}",
                env!("CARGO_PKG_VERSION")
            )
        })?;
        Ok(Self::Version(req.to_string()))
    }

    fn git(
        url: String,
        rev: Option<String>,
        branch: Option<String>,
        tag: Option<String>,
    ) -> anyhow::Result<Self> {
        let url = url.trim().to_string();
        let scheme_ok = url
            .split_once("://")
            .is_some_and(|(scheme, rest)| !scheme.is_empty() && !rest.is_empty());
        if !scheme_ok {
            bail!(
                "--opkit-git {url:?} is not a URL cargo can fetch: give the scheme, e.g. \
                 https://github.com/opkit/opkit (for ssh: ssh://git@github.com/opkit/opkit)"
            );
        }
        let reference = [("rev", rev), ("branch", branch), ("tag", tag)]
            .into_iter()
            .find_map(|(key, value)| Some((key, value?)));
        if let Some((key, value)) = &reference
            && value.trim().is_empty()
        {
            bail!("--opkit-{key} must not be empty");
        }
        Ok(Self::Git { url, reference })
    }

    /// The dependency of a project on `krate` (`opkit` or `opkit-testenv`), as a TOML value.
    fn dependency(&self, krate: &str) -> String {
        let mut table = toml_edit::InlineTable::new();
        match self {
            Self::Path(root) => {
                let dir = root.join("crates").join(krate);
                table.insert("path", dir.display().to_string().into());
            }
            Self::Version(req) => return toml_edit::Value::from(req.as_str()).to_string(),
            Self::Git { url, reference } => {
                table.insert("git", url.as_str().into());
                if let Some((key, value)) = reference {
                    table.insert(*key, value.as_str().into());
                }
            }
        }
        table.fmt();
        table.to_string()
    }

    /// Where opkit comes from, for messages: "from ...".
    fn describe(&self) -> String {
        match self {
            Self::Path(root) => format!("from the checkout {}", root.display()),
            Self::Version(req) => format!("from crates.io, version {req}"),
            Self::Git { url, reference } => match reference {
                Some((key, value)) => format!("from {url} ({key} {value})"),
                None => format!("from {url} (its default branch)"),
            },
        }
    }

    /// The generated README's word on building the image with this source.
    fn image_note(&self) -> String {
        match self {
            Self::Path(root) => format!(
                "This project depends on the opkit checkout at `{}`: before building the image, \
                 switch the `opkit` and `opkit-testenv` lines of `Cargo.toml` to a version or a \
                 git repository (see below) and run `cargo build` once to update `Cargo.lock`.",
                root.display()
            ),
            other => format!(
                "This project takes opkit {}, which the image build can fetch.",
                other.describe()
            ),
        }
    }
}

/// The source when no flag names one: the checkout this binary was built from while it exists
/// (a development build, e.g. `cargo build -p opkit-cli`), else crates.io at this CLI's own
/// version (an `opkit` installed with `cargo install opkit-cli`, whose sources are in cargo's
/// registry, not in a checkout). A checkout inside cargo's own git cache (`cargo install
/// --git`) does not count: cargo may remove it at any time.
fn default_opkit_source() -> OpkitSource {
    let built_from = default_opkit_path();
    match opkit_checkout(&built_from) {
        Ok(root) if !in_cargo_git_cache(&root) => OpkitSource::Path(root),
        _ => OpkitSource::Version(env!("CARGO_PKG_VERSION").to_string()),
    }
}

/// Whether `path` lies in cargo's git checkouts (`$CARGO_HOME/git/checkouts/...`).
fn in_cargo_git_cache(path: &Path) -> bool {
    let parts: Vec<_> = path.components().map(|c| c.as_os_str()).collect();
    parts
        .windows(2)
        .any(|w| w[0] == "git" && w[1] == "checkouts")
}

/// Flags of `opkit create api`.
#[derive(Args)]
pub struct CreateApiArgs {
    /// The project's plugin (`rust`, `helm` or `ansible`); only to confirm it, a project has
    /// one.
    #[arg(long, value_name = "PLUGIN", value_parser = Plugin::parse)]
    plugins: Option<Plugin>,
    #[command(flatten)]
    api: ApiFlags,
    /// Whether objects of the kind live in namespaces (default: true; a new version of a kind
    /// keeps the kind's scope).
    #[arg(long, value_name = "BOOL", action = clap::ArgAction::Set)]
    namespaced: Option<bool>,
}

const CARGO_TOML: &str = include_str!("../templates/init/Cargo.toml.tmpl");
const MAIN_RS: &str = include_str!("../templates/init/main.rs.tmpl");
const LIB_RS: &str = include_str!("../templates/init/lib.rs.tmpl");
const API_MOD_RS: &str = include_str!("../templates/init/api_mod.rs.tmpl");
const CONTROLLERS_MOD_RS: &str = include_str!("../templates/init/controllers_mod.rs.tmpl");
const GITIGNORE: &str = include_str!("../templates/init/gitignore.tmpl");
const DOCKERFILE: &str = include_str!("../templates/init/Dockerfile.tmpl");
const DOCKERIGNORE: &str = include_str!("../templates/init/dockerignore.tmpl");
const README: &str = include_str!("../templates/init/README.md.tmpl");
const API_RS: &str = include_str!("../templates/api/api.rs.tmpl");
const CONTROLLER_RS: &str = include_str!("../templates/api/controller.rs.tmpl");
const TEST_RS: &str = include_str!("../templates/api/test.rs.tmpl");
const E2E_SUITE: &str = include_str!("../templates/e2e/kuttl-test.yaml.tmpl");
const E2E_ASSERT: &str = include_str!("../templates/e2e/00-assert.yaml.tmpl");
pub(crate) const E2E_DELETE: &str = include_str!("../templates/e2e/01-delete.yaml.tmpl");
pub(crate) const E2E_ERRORS: &str = include_str!("../templates/e2e/01-errors.yaml.tmpl");

const APP_MARKER: &str = "// +opkit:scaffold:app";
const API_MODULES_MARKER: &str = "// +opkit:scaffold:api-modules";
const CONTROLLER_MODULES_MARKER: &str = "// +opkit:scaffold:controller-modules";

/// The crates a project uses directly, at the versions and features of opkit's workspace.
const SHARED_DEPENDENCIES: &[&str] = &[
    "k8s-openapi",
    "kube",
    "schemars",
    "serde",
    "serde_json",
    "thiserror",
    "tokio",
    "tracing",
];

/// Replaces each `{{key}}` of `template`. Every placeholder must have a value.
pub fn render(template: &str, vars: &[(&str, &str)]) -> String {
    let mut out = template.to_string();
    for (key, value) in vars {
        out = out.replace(&format!("{{{{{key}}}}}"), value);
    }
    debug_assert!(
        placeholders(&out).is_empty(),
        "unfilled placeholders {:?}",
        placeholders(&out)
    );
    out
}

/// The `{{identifier}}` placeholders left in `text`.
pub(crate) fn placeholders(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(mut start) = rest.find("{{") {
        // `{{{kind}}` is a literal brace before a placeholder.
        while rest[start + 2..].starts_with('{') {
            start += 1;
        }
        let after = &rest[start + 2..];
        match after.find("}}") {
            Some(end)
                if end > 0
                    && after[..end]
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'_') =>
            {
                found.push(after[..end].to_string());
                rest = &after[end + 2..];
            }
            _ => rest = after,
        }
    }
    found
}

/// The opkit checkout projects depend on by default: the one this binary was built from.
fn default_opkit_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The opkit checkout at `path`, checked, as an absolute path.
fn opkit_checkout(path: &Path) -> anyhow::Result<PathBuf> {
    let hint = "pass --opkit-path DIR with the root of an opkit checkout (the directory that \
                holds crates/opkit)";
    let root = std::fs::canonicalize(path)
        .with_context(|| format!("opkit sources not found at {}: {hint}", path.display()))?;
    if !root.join("crates/opkit/Cargo.toml").is_file() {
        bail!(
            "{} is not an opkit checkout (no crates/opkit/Cargo.toml): {hint}",
            root.display()
        );
    }
    Ok(root)
}

/// The pins of the shared crates that ship inside the CLI, for projects that take opkit from
/// crates.io or git (there is no checkout to read them from).
const EMBEDDED_PINS: &str = include_str!("../templates/init/dependencies.toml");

/// The dependency lines of a project's `Cargo.toml`: opkit and opkit-testenv from `source`, and
/// the crates the project uses directly at the versions and features opkit is tested with —
/// read from the checkout's workspace for a path source, else the copy the CLI carries.
fn dependency_vars(source: &OpkitSource) -> anyhow::Result<Vec<(String, String)>> {
    let (text, origin, table) = match source {
        OpkitSource::Path(root) => {
            let manifest = root.join("Cargo.toml");
            let text = std::fs::read_to_string(&manifest)
                .with_context(|| format!("cannot read {}", manifest.display()))?;
            (
                text,
                manifest.display().to_string(),
                &["workspace", "dependencies"][..],
            )
        }
        _ => (
            EMBEDDED_PINS.to_string(),
            "the pins built into opkit (templates/init/dependencies.toml)".to_string(),
            &["dependencies"][..],
        ),
    };
    let doc: toml_edit::DocumentMut = text
        .parse()
        .with_context(|| format!("{origin} is not valid TOML"))?;
    let mut deps = doc.as_item();
    for key in table {
        deps = deps
            .get(key)
            .with_context(|| format!("{origin} has no [{}]", table.join(".")))?;
    }
    let mut vars = Vec::new();
    for name in SHARED_DEPENDENCIES {
        let value = deps
            .get(name)
            .and_then(|d| d.as_value())
            .with_context(|| format!("{origin} does not pin {name}"))?;
        let value = value.clone().decorated("", "").to_string();
        vars.push((format!("{}_dep", name.replace('-', "_")), value));
    }
    vars.push(("opkit_dep".into(), source.dependency("opkit")));
    vars.push((
        "opkit_testenv_dep".into(),
        source.dependency("opkit-testenv"),
    ));
    Ok(vars)
}

/// The Rust toolchain of the generated Dockerfile's build stage (`rust:<this>-alpine`): the one
/// opkit is built and tested with (a unit test keeps it from falling behind the `rustc` that
/// runs opkit's tests). Projects raise it in their Dockerfile.
pub(crate) const IMAGE_RUST_VERSION: &str = "1.95";

/// Entries of `dir` that make it "not empty" for `init` (version control and editor folders
/// do not count).
fn occupying_entries(dir: &Path) -> anyhow::Result<Vec<String>> {
    let mut names = Vec::new();
    if !dir.exists() {
        return Ok(names);
    }
    for entry in std::fs::read_dir(dir).with_context(|| format!("cannot read {}", dir.display()))? {
        let name = entry?.file_name().to_string_lossy().into_owned();
        if ![".git", ".idea", ".vscode"].contains(&name.as_str()) {
            names.push(name);
        }
    }
    names.sort();
    Ok(names)
}

/// Writes `files` under `root`, creating directories; paths are relative to `root`.
pub(crate) fn write_files(root: &Path, files: &[(String, String)]) -> anyhow::Result<()> {
    for (rel, content) in files {
        manifests::sync_file(root, rel, content, false)?;
    }
    Ok(())
}

/// `opkit init` in `dir`.
pub fn init(args: InitArgs, dir: &Path) -> anyhow::Result<()> {
    project::validate_domain(&args.domain)?;
    let repo = match (&args.repo, args.plugins) {
        (Some(repo), _) if repo.trim().is_empty() => {
            bail!("--repo must name the source repository, e.g. github.com/you/operator")
        }
        (None, Plugin::Rust) => bail!(
            "--repo is required: name the source repository, e.g. --repo \
             github.com/you/operator"
        ),
        (repo, _) => repo.clone().unwrap_or_default(),
    };
    if args.plugins == Plugin::Rust && args.api.any() {
        bail!(
            "--group, --version, --kind, --helm-chart and --generate-role/--generate-playbook \
             at init are for --plugins helm or ansible; add a Rust kind after init with `opkit \
             create api`"
        );
    }
    if args.plugins != Plugin::Rust && args.opkit.any() {
        bail!(
            "--opkit-path, --opkit-version and --opkit-git choose the opkit crates of a Rust \
             project; a {} project has no code (its image installs the opkit binary)",
            args.plugins.name()
        );
    }
    if args.plugins == Plugin::Ansible && args.repo.is_some() {
        bail!(
            "--repo names the source repository of a Rust project's code; an ansible project \
             has no code to name one for: leave out --repo"
        );
    }
    let name = match &args.name {
        Some(n) => {
            project::validate_project_name(n)?;
            n.clone()
        }
        None => {
            let n = std::fs::canonicalize(dir)
                .ok()
                .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
                .context("cannot tell the project name from the directory; pass --name NAME")?;
            project::validate_project_name(&n).with_context(|| {
                format!("the directory's name {n:?} cannot be the project name; pass --name NAME")
            })?;
            n
        }
    };
    let occupied = occupying_entries(dir)?;
    if !occupied.is_empty() && !args.force {
        let shown: Vec<&str> = occupied.iter().take(4).map(String::as_str).collect();
        let more = if occupied.len() > 4 { ", …" } else { "" };
        bail!(
            "{} is not empty ({}{more}): run `opkit init` in an empty directory, or pass --force \
             to write into it (files of the same names are overwritten)",
            dir.display(),
            shown.join(", ")
        );
    }
    if args.plugins == Plugin::Helm {
        let project = helm_scaffold::new_project(name, args.domain, args.repo);
        return helm_scaffold::init(project, args.api, dir);
    }
    if args.plugins == Plugin::Ansible {
        return ansible_scaffold::init(name, args.domain, args.api, dir);
    }
    let source = OpkitSource::from_args(args.opkit)?;

    let project = Project {
        layout: project::LAYOUT.to_string(),
        project_name: name.clone(),
        domain: args.domain.clone(),
        repo: repo.clone(),
        plugin: Plugin::Rust,
        resources: Vec::new(),
    };
    let crate_name = project.crate_name();
    let repo_url = if repo.contains("://") {
        repo.clone()
    } else {
        format!("https://{repo}")
    };
    let mut vars: Vec<(String, String)> = vec![
        ("name".into(), name.clone()),
        ("crate".into(), crate_name),
        ("domain".into(), args.domain.clone()),
        ("repo".into(), repo.clone()),
        ("repo_url".into(), repo_url),
        ("rust_version".into(), IMAGE_RUST_VERSION.into()),
        ("cli_version".into(), env!("CARGO_PKG_VERSION").into()),
        ("opkit_source_note".into(), source.image_note()),
    ];
    vars.extend(dependency_vars(&source)?);
    let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();

    let mut files = vec![
        ("Cargo.toml".to_string(), render(CARGO_TOML, &vars)),
        ("src/main.rs".to_string(), render(MAIN_RS, &vars)),
        ("src/lib.rs".to_string(), render(LIB_RS, &vars)),
        ("src/api/mod.rs".to_string(), render(API_MOD_RS, &vars)),
        (
            "src/controllers/mod.rs".to_string(),
            render(CONTROLLERS_MOD_RS, &vars),
        ),
        (".gitignore".to_string(), render(GITIGNORE, &vars)),
        ("README.md".to_string(), render(README, &vars)),
        ("Dockerfile".to_string(), render(DOCKERFILE, &vars)),
        (".dockerignore".to_string(), render(DOCKERIGNORE, &vars)),
        (
            format!("{E2E_DIR}/kuttl-test.yaml"),
            render(E2E_SUITE, &vars),
        ),
    ];
    // From a checkout, the lock file opkit is tested with: the same versions, and a first build
    // that reuses what building opkit already compiled. From crates.io or git, cargo resolves
    // on the first build and writes Cargo.lock (the image build needs it committed).
    if let OpkitSource::Path(root) = &source
        && let Ok(lock) = std::fs::read_to_string(root.join("Cargo.lock"))
    {
        files.push(("Cargo.lock".to_string(), lock));
    }
    let role = opkit::App::new(name.clone()).cluster_role_yaml(&manifests::role_name(&project))?;
    for (rel, content) in manifests::initial_config(&project, &role) {
        files.push((rel, content));
    }
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    write_files(dir, &files)?;
    project.save(dir)?;

    println!(
        "Created the operator project {name} (opkit {}).",
        source.describe()
    );
    match &source {
        OpkitSource::Path(_) => println!(
            "The container image (Dockerfile) needs opkit from crates.io or git: see README.md, \
             \"Shipping\" (opkit init --opkit-version VER or --opkit-git URL to start that way)."
        ),
        OpkitSource::Version(req) => {
            let cli = semver::Version::parse(env!("CARGO_PKG_VERSION"))?;
            if !semver::VersionReq::parse(req)?.matches(&cli) {
                eprintln!(
                    "note: the code was written for opkit {cli} (this CLI's version); opkit \
                     {req} may differ in its API"
                );
            }
        }
        OpkitSource::Git { .. } => {}
    }
    println!("Next:");
    println!("  opkit create api --group webapp --version v1 --kind Guestbook");
    println!("  cargo test");
    println!("  opkit run --up");
    Ok(())
}

/// Inserts `lines` before the line holding `marker` in `text` (each line indented like the
/// marker, plus `extra_indent`).
pub(crate) fn insert_at_marker(
    text: &str,
    marker: &str,
    lines: &[String],
    extra_indent: &str,
    file: &str,
) -> anyhow::Result<String> {
    let Some(pos) = text.find(marker) else {
        bail!(
            "{file} no longer has the line `{marker}` where `opkit create api` adds code.\n\
             Put it back where new lines belong, or add these lines yourself:\n{}",
            lines.join("\n")
        );
    };
    let line_start = text[..pos].rfind('\n').map_or(0, |i| i + 1);
    let indent = &text[line_start..pos];
    let mut out = String::with_capacity(text.len() + 64);
    out.push_str(&text[..line_start]);
    for line in lines {
        out.push_str(indent);
        out.push_str(extra_indent);
        out.push_str(line);
        out.push('\n');
    }
    out.push_str(&text[line_start..]);
    Ok(out)
}

/// Adds `pub mod <module>;` to the block of module declarations just above `marker`, keeping
/// the block sorted as rustfmt does.
pub(crate) fn insert_module(
    text: &str,
    marker: &str,
    module: &str,
    file: &str,
) -> anyhow::Result<String> {
    let with_marker = insert_at_marker(text, marker, &[format!("pub mod {module};")], "", file)?;
    let mut lines: Vec<&str> = with_marker.lines().collect();
    let end = lines
        .iter()
        .position(|l| l.trim_start().starts_with(marker))
        .unwrap_or(lines.len());
    let start = lines[..end]
        .iter()
        .rposition(|l| !l.starts_with("pub mod "))
        .map_or(0, |i| i + 1);
    lines[start..end].sort_unstable();
    let mut out = lines.join("\n");
    out.push('\n');
    Ok(out)
}

pub(crate) fn read(root: &Path, rel: &str) -> anyhow::Result<String> {
    let path = root.join(rel);
    std::fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))
}

/// How a test reaches objects of `resource` in the scaffolded tests (`env` is the `TestEnv`).
pub(crate) fn api_ctor(resource: &Resource) -> &'static str {
    if resource.namespaced {
        "Api::namespaced(env.client(), \"default\")"
    } else {
        "Api::all(env.client())"
    }
}

/// The placeholders of `templates/api/api.rs.tmpl` for `resource`; `version_note` follows the
/// module doc's first line.
fn api_vars(resource: &Resource, version_note: &str) -> Vec<(&'static str, String)> {
    let namespaced_attr = if resource.namespaced {
        "\n    namespaced,"
    } else {
        ""
    };
    vec![
        ("kind", resource.kind.clone()),
        ("full_group", resource.full_group()),
        ("version", resource.version.clone()),
        ("namespaced_attr", namespaced_attr.to_string()),
        ("plural_hint", resource.kind.to_ascii_lowercase()),
        ("api_ctor", api_ctor(resource).to_string()),
        ("version_note", version_note.to_string()),
    ]
}

/// A new version of the kind whose hub (first version) is `hub`: same group and scope, a
/// version the kind does not have yet.
fn check_new_version(project: &Project, hub: &Resource, new: &Resource) -> anyhow::Result<()> {
    let versions: Vec<&str> = project
        .versions_of(&hub.kind)
        .iter()
        .map(|r| r.version.as_str())
        .collect();
    if versions.contains(&new.version.as_str()) {
        bail!(
            "kind {} already exists in this project at {}/{} (src/api/{}.rs): each version of \
             a kind is created once. Edit that file to change it, or create another version \
             (the kind has {})",
            new.kind,
            new.full_group(),
            new.version,
            project.module_of(new),
            versions.join(", ")
        );
    }
    if new.group != hub.group {
        bail!(
            "kind {} is in group {} ({}/{}): a new version of it keeps the group; pass --group {}",
            hub.kind,
            hub.full_group(),
            hub.full_group(),
            hub.version,
            hub.group
        );
    }
    if new.namespaced != hub.namespaced {
        bail!(
            "kind {} is {}: every version of a kind has the same scope; leave out --namespaced",
            hub.kind,
            if hub.namespaced {
                "namespaced"
            } else {
                "cluster-scoped"
            }
        );
    }
    Ok(())
}

/// Writes the spoke `project.resources.last()` of the kind whose hub is `hub`: its API type
/// in a module of its own, registered as another version of the kind's CRD, and a sample. The
/// hub stays the storage version and the one the controller reconciles.
fn create_version(root: &Path, project: Project, hub: &Resource) -> anyhow::Result<()> {
    let spoke = project
        .resources
        .last()
        .cloned()
        .context("the new version is in the project")?;
    let module = project.module_of(&spoke);
    let api_file = format!("src/api/{module}.rs");
    if root.join(&api_file).exists() {
        bail!("{api_file} already exists: move it away (create api never overwrites code)");
    }
    let note = format!(
        "\n//!\n//! A spoke: {kind} objects are stored as {hub_version} (the hub,          `crate::api::{hub_module}`,\n//! which the controller reconciles); the API server          serves them in {version} too. Conversion\n//! between the two: `opkit create webhook          --group {group} --version {version} --kind {kind} --conversion`.",
        kind = spoke.kind,
        hub_version = hub.version,
        hub_module = hub.module(),
        version = spoke.version,
        group = spoke.group,
    );
    let vars = api_vars(&spoke, &note);
    let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let lib = insert_at_marker(
        &read(root, "src/lib.rs")?,
        APP_MARKER,
        &[format!(".crd::<api::{module}::{}>()", spoke.kind)],
        "    ",
        "src/lib.rs",
    )?;
    let api_mod = insert_module(
        &read(root, "src/api/mod.rs")?,
        API_MODULES_MARKER,
        &module,
        "src/api/mod.rs",
    )?;
    let files = vec![
        (api_file.clone(), render(API_RS, &vars)),
        ("src/lib.rs".to_string(), lib),
        ("src/api/mod.rs".to_string(), api_mod),
        (
            manifests::sample_path(&spoke),
            manifests::sample(&project, &spoke),
        ),
        (
            "config/samples/kustomization.yaml".to_string(),
            manifests::samples_kustomization(&project),
        ),
    ];
    write_files(root, &files)?;
    project.save(root)?;
    println!(
        "Created {} {} in {api_file}, a version of {} beside {} (the hub and storage version, \
         which the controller reconciles), and a sample in {}.",
        spoke.api_version(),
        spoke.kind,
        spoke.kind,
        hub.version,
        manifests::sample_path(&spoke)
    );
    println!("Next:");
    for (command, what) in [
        (
            format!(
                "opkit create webhook --group {} --version {} --kind {} --conversion",
                spoke.group, spoke.version, spoke.kind
            ),
            "convert between the versions".to_string(),
        ),
        (
            "opkit generate manifests".to_string(),
            "the CRD with both versions".to_string(),
        ),
    ] {
        println!("  {command:<32} # {what}");
    }
    Ok(())
}

/// The kuttl test of a new kind, `tests/e2e/<kind>/`: its sample is created and becomes Ready
/// (what the scaffolded controller does), then it is deleted and gone.
fn e2e_test(
    project: &Project,
    resource: &Resource,
    vars: &[(&str, &str)],
) -> Vec<(String, String)> {
    let dir = format!("{E2E_DIR}/{}", resource.kind.to_ascii_lowercase());
    vec![
        (
            format!("{dir}/00-create.yaml"),
            manifests::sample(project, resource),
        ),
        (format!("{dir}/00-assert.yaml"), render(E2E_ASSERT, vars)),
        (format!("{dir}/01-delete.yaml"), render(E2E_DELETE, vars)),
        (format!("{dir}/01-errors.yaml"), render(E2E_ERRORS, vars)),
    ]
}

/// `opkit create api` in the project containing `cwd`.
pub fn create_api(args: CreateApiArgs, cwd: &Path) -> anyhow::Result<()> {
    let root = project::find_root(cwd)?;
    let mut project = Project::load(&root)?;
    if let Some(plugin) = args.plugins
        && plugin != project.plugin
    {
        bail!(
            "this is a {} project (PROJECT says so): its kinds are created with --plugins {} \
             (or without --plugins); a project has one plugin",
            project.plugin.name(),
            project.plugin.name()
        );
    }
    if project.plugin == Plugin::Helm {
        if args.namespaced == Some(false) {
            bail!(
                "the kinds of a helm project are namespaced (a release lives in its custom \
                 resource's namespace): leave out --namespaced"
            );
        }
        return helm_scaffold::create_api(&root, project, args.api);
    }
    if project.plugin == Plugin::Ansible {
        if args.namespaced == Some(false) {
            bail!(
                "the kinds of an ansible project are namespaced here (the generated role works \
                 in its custom resource's namespace): leave out --namespaced"
            );
        }
        return ansible_scaffold::create_api(&root, project, args.api);
    }
    if let Some(flag) = args.api.helm_only() {
        bail!("{flag} is for helm projects (`opkit init --plugins helm`); this is a rust project");
    }
    if let Some(flag) = args.api.ansible_only() {
        bail!(
            "{flag} is for ansible projects (`opkit init --plugins ansible`); this is a rust \
             project"
        );
    }
    let required = |value: Option<String>, flag: &str| {
        value.ok_or_else(|| anyhow::anyhow!("--{flag} is required"))
    };
    let group = required(args.api.group, "group")?;
    let version = required(args.api.version, "version")?;
    let kind = required(args.api.kind, "kind")?;
    project::validate_group(&group)?;
    project::validate_version(&version)?;
    project::validate_kind(&kind)?;
    let hub = project.versions_of(&kind).first().map(|hub| (*hub).clone());
    if hub.is_none()
        && let Some(existing) = project
            .resources
            .iter()
            .find(|r| r.kind.eq_ignore_ascii_case(&kind))
    {
        bail!(
            "kind {} already exists in this project ({}/{}): kinds differing only in case would \
             share their resource name",
            existing.kind,
            existing.full_group(),
            existing.version
        );
    }
    let resource = Resource {
        group,
        domain: project.domain.clone(),
        version,
        kind,
        namespaced: args
            .namespaced
            .unwrap_or(hub.as_ref().is_none_or(|h| h.namespaced)),
        chart: None,
        webhooks: Default::default(),
    };
    if let Some(hub) = hub {
        check_new_version(&project, &hub, &resource)?;
        project.resources.push(resource);
        return create_version(&root, project, &hub);
    }
    let module = resource.module();
    let kind_lower = resource.kind.to_ascii_lowercase();
    let new_files = [
        format!("src/api/{module}.rs"),
        format!("src/controllers/{module}.rs"),
        format!("tests/{module}.rs"),
    ];
    for rel in &new_files {
        if root.join(rel).exists() {
            bail!(
                "{rel} already exists: move it away or pick another kind (create api never \
                 overwrites code)"
            );
        }
    }

    let crate_name = project.crate_name();
    let full_group = resource.full_group();
    let mut vars = api_vars(&resource, "");
    vars.push(("crate", crate_name.clone()));
    vars.push(("kind_snake", module.clone()));
    vars.push(("kind_lower", kind_lower.clone()));
    let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();

    // Everything is computed and checked before anything is written.
    let lib = insert_at_marker(
        &read(&root, "src/lib.rs")?,
        APP_MARKER,
        &[
            format!(".crd::<api::{module}::{}>()", resource.kind),
            format!(".controller(|_| controllers::{module}::controller())"),
        ],
        "    ",
        "src/lib.rs",
    )?;
    let api_mod = insert_module(
        &read(&root, "src/api/mod.rs")?,
        API_MODULES_MARKER,
        &module,
        "src/api/mod.rs",
    )?;
    let controllers_mod = insert_module(
        &read(&root, "src/controllers/mod.rs")?,
        CONTROLLER_MODULES_MARKER,
        &module,
        "src/controllers/mod.rs",
    )?;
    let mut files = vec![
        (new_files[0].clone(), render(API_RS, &vars)),
        (new_files[1].clone(), render(CONTROLLER_RS, &vars)),
        (new_files[2].clone(), render(TEST_RS, &vars)),
        ("src/lib.rs".to_string(), lib),
        ("src/api/mod.rs".to_string(), api_mod),
        ("src/controllers/mod.rs".to_string(), controllers_mod),
    ];
    project.resources.push(resource.clone());
    files.push((
        manifests::sample_path(&resource),
        manifests::sample(&project, &resource),
    ));
    files.push((
        "config/samples/kustomization.yaml".to_string(),
        manifests::samples_kustomization(&project),
    ));
    let e2e = e2e_test(&project, &resource, &vars);
    write_files(&root, &files)?;
    for (rel, content) in &e2e {
        if manifests::sync_file(&root, rel, content, true)? == manifests::Outcome::Kept {
            println!("kept {rel} (it exists)");
        }
    }
    project.save(&root)?;

    println!(
        "Created {}/{} {} in src/api/{module}.rs, its controller in src/controllers/{module}.rs, \
         a test in tests/{module}.rs, an end-to-end test in {E2E_DIR}/{kind_lower}/ and a sample \
         in {}.",
        full_group,
        resource.version,
        resource.kind,
        manifests::sample_path(&resource)
    );
    println!("Next:");
    for (command, what) in [
        (
            format!("cargo test --test {module}"),
            "the controller on an in-process control plane",
        ),
        (
            "opkit generate manifests".to_string(),
            "the CRD and the ClusterRole under config/",
        ),
        (
            "opkit run --up".to_string(),
            "run it; then kubectl apply -k config/samples",
        ),
        (
            "opkit test".to_string(),
            "the operator itself against tests/e2e (kuttl)",
        ),
    ] {
        println!("  {command:<32} # {what}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn render_fills_every_placeholder_it_is_given() {
        assert_eq!(
            render("a {{x}} b {{y}}{{x}}", &[("x", "1"), ("y", "2")]),
            "a 1 b 21"
        );
        assert_eq!(
            placeholders("{ {{kind}} } {{ not one }} {{}}"),
            vec!["kind"]
        );
        assert_eq!(placeholders("use a::{{{kind}}, b};"), vec!["kind"]);
    }

    #[test]
    fn templates_only_use_known_placeholders() {
        let known = [
            "name",
            "crate",
            "domain",
            "repo",
            "repo_url",
            "opkit_dep",
            "opkit_testenv_dep",
            "k8s_openapi_dep",
            "kube_dep",
            "schemars_dep",
            "serde_dep",
            "serde_json_dep",
            "thiserror_dep",
            "tokio_dep",
            "tracing_dep",
            "kind",
            "kind_snake",
            "kind_lower",
            "full_group",
            "version",
            "namespaced_attr",
            "plural_hint",
            "api_ctor",
            "rust_version",
            "cli_version",
            "opkit_source_note",
            "version_note",
        ];
        for template in [
            CARGO_TOML,
            MAIN_RS,
            LIB_RS,
            API_MOD_RS,
            CONTROLLERS_MOD_RS,
            GITIGNORE,
            README,
            DOCKERFILE,
            DOCKERIGNORE,
            API_RS,
            CONTROLLER_RS,
            TEST_RS,
            E2E_SUITE,
            E2E_ASSERT,
            E2E_DELETE,
            E2E_ERRORS,
        ] {
            for p in placeholders(template) {
                assert!(known.contains(&p.as_str()), "unknown placeholder {p}");
            }
        }
    }

    #[test]
    fn markers_take_new_lines_with_their_indentation() {
        let text = "fn app() {\n    App::new()\n    // +opkit:scaffold:app\n}\n";
        let out =
            insert_at_marker(text, APP_MARKER, &[".crd::<A>()".into()], "    ", "lib").unwrap();
        assert_eq!(
            out,
            "fn app() {\n    App::new()\n        .crd::<A>()\n    // +opkit:scaffold:app\n}\n"
        );
        let err = insert_at_marker("fn app() {}", APP_MARKER, &["x".into()], "", "src/lib.rs")
            .unwrap_err()
            .to_string();
        assert!(err.contains("src/lib.rs") && err.contains("x"), "{err}");
    }

    #[test]
    fn module_declarations_stay_sorted() {
        let text = "//! Doc.\n\npub mod guestbook;\n// +opkit:scaffold:api-modules\n";
        let out = insert_module(text, API_MODULES_MARKER, "cron_task", "mod.rs").unwrap();
        assert_eq!(
            out,
            "//! Doc.\n\npub mod cron_task;\npub mod guestbook;\n// +opkit:scaffold:api-modules\n"
        );
    }

    #[test]
    fn dependencies_come_from_the_opkit_workspace() {
        let source = OpkitSource::Path(opkit_checkout(&default_opkit_path()).unwrap());
        let vars = dependency_vars(&source).unwrap();
        let get = |k: &str| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        assert!(get("kube_dep").unwrap().contains("version"));
        assert!(get("opkit_dep").unwrap().contains("crates/opkit"));
        assert!(
            get("opkit_testenv_dep")
                .unwrap()
                .contains("crates/opkit-testenv")
        );
    }
    /// The project's `Cargo.toml` as `opkit init` renders it for `source`, parsed.
    fn rendered_manifest(source: &OpkitSource) -> toml_edit::DocumentMut {
        let mut vars: Vec<(String, String)> = vec![
            ("name".into(), "shop".into()),
            ("repo_url".into(), "https://github.com/example/shop".into()),
        ];
        vars.extend(dependency_vars(source).unwrap());
        let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        render(CARGO_TOML, &vars)
            .parse()
            .expect("the manifest is TOML")
    }

    /// `(key, value)` pairs of a dependency's inline table (or `version` for a bare string).
    fn dependency_fields(
        doc: &toml_edit::DocumentMut,
        table: &str,
        name: &str,
    ) -> Vec<(String, String)> {
        let item = &doc[table][name];
        if let Some(version) = item.as_str() {
            return vec![("version".into(), version.into())];
        }
        let table = item
            .as_inline_table()
            .unwrap_or_else(|| panic!("{name}: {item}"));
        table
            .iter()
            .map(|(k, v)| (k.to_string(), v.as_str().unwrap().to_string()))
            .collect()
    }

    #[test]
    fn each_opkit_source_gives_opkit_and_opkit_testenv_the_same_origin() {
        let root = opkit_checkout(&default_opkit_path()).unwrap();
        let cases = [
            (
                OpkitSource::Path(root.clone()),
                vec![("path", root.join("crates/opkit").display().to_string())],
                vec![(
                    "path",
                    root.join("crates/opkit-testenv").display().to_string(),
                )],
            ),
            (
                OpkitSource::version("0.1").unwrap(),
                vec![("version", "0.1".into())],
                vec![("version", "0.1".into())],
            ),
            (
                OpkitSource::git(
                    "https://github.com/opkit/opkit".into(),
                    Some("0123abc".into()),
                    None,
                    None,
                )
                .unwrap(),
                vec![
                    ("git", "https://github.com/opkit/opkit".into()),
                    ("rev", "0123abc".into()),
                ],
                vec![
                    ("git", "https://github.com/opkit/opkit".into()),
                    ("rev", "0123abc".into()),
                ],
            ),
            (
                OpkitSource::git(
                    "ssh://git@example.com/opkit".into(),
                    None,
                    Some("main".into()),
                    None,
                )
                .unwrap(),
                vec![
                    ("git", "ssh://git@example.com/opkit".into()),
                    ("branch", "main".into()),
                ],
                vec![
                    ("git", "ssh://git@example.com/opkit".into()),
                    ("branch", "main".into()),
                ],
            ),
            (
                OpkitSource::git("https://github.com/opkit/opkit".into(), None, None, None)
                    .unwrap(),
                vec![("git", "https://github.com/opkit/opkit".into())],
                vec![("git", "https://github.com/opkit/opkit".into())],
            ),
        ];
        for (source, opkit, testenv) in cases {
            let doc = rendered_manifest(&source);
            let owned = |v: Vec<(&str, String)>| -> Vec<(String, String)> {
                v.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
            };
            assert_eq!(
                dependency_fields(&doc, "dependencies", "opkit"),
                owned(opkit),
                "{source:?}"
            );
            assert_eq!(
                dependency_fields(&doc, "dev-dependencies", "opkit-testenv"),
                owned(testenv),
                "{source:?}"
            );
            // The shared crates keep their pins whatever the source.
            assert_eq!(
                doc["dependencies"]["k8s-openapi"]["features"]
                    .to_string()
                    .trim(),
                r#"["v1_35", "schemars"]"#
            );
        }
    }

    #[test]
    fn embedded_pins_match_the_workspace() {
        let root = opkit_checkout(&default_opkit_path()).unwrap();
        let from_workspace = dependency_vars(&OpkitSource::Path(root)).unwrap();
        let embedded = dependency_vars(&OpkitSource::Version("0.1.0".into())).unwrap();
        for (name, value) in from_workspace
            .iter()
            .filter(|(n, _)| !n.starts_with("opkit"))
        {
            let ours = embedded.iter().find(|(n, _)| n == name).map(|(_, v)| v);
            assert_eq!(
                ours,
                Some(value),
                "templates/init/dependencies.toml pins {} differently from the workspace's \
                 Cargo.toml: copy the workspace's line there",
                name.trim_end_matches("_dep")
            );
        }
    }

    #[test]
    fn opkit_versions_and_git_urls_are_checked_before_anything_is_written() {
        for bad in ["", "not a version", "1.x.y.z"] {
            let err = OpkitSource::version(bad).unwrap_err().to_string();
            assert!(
                err.contains("--opkit-version") && err.contains("e.g."),
                "{err}"
            );
        }
        assert_eq!(
            OpkitSource::version(" 0.1 ").unwrap(),
            OpkitSource::Version("0.1".into())
        );
        for bad in [
            "github.com/opkit/opkit",
            "git@github.com:opkit/opkit",
            "https://",
        ] {
            let err = OpkitSource::git(bad.into(), None, None, None)
                .unwrap_err()
                .to_string();
            assert!(
                err.contains("--opkit-git") && err.contains("https://"),
                "{err}"
            );
        }
        let err = OpkitSource::git("https://x/y".into(), None, None, Some(" ".into()))
            .unwrap_err()
            .to_string();
        assert!(err.contains("--opkit-tag must not be empty"), "{err}");
    }

    #[test]
    fn the_default_source_is_the_checkout_unless_cargo_owns_it() {
        // These tests run from a checkout, so the default is that checkout.
        assert_eq!(
            default_opkit_source(),
            OpkitSource::Path(opkit_checkout(&default_opkit_path()).unwrap())
        );
        assert!(in_cargo_git_cache(Path::new(
            "/home/me/.cargo/git/checkouts/opkit-0123456789abcdef/a1b2c3d"
        )));
        assert!(!in_cargo_git_cache(Path::new("/home/me/src/opkit")));
        assert!(!in_cargo_git_cache(Path::new("/home/me/git/opkit")));
    }

    #[test]
    fn the_image_toolchain_is_not_older_than_the_one_running_these_tests() {
        let out = std::process::Command::new(std::env::var("RUSTC").unwrap_or("rustc".into()))
            .arg("--version")
            .output()
            .expect("rustc runs");
        let text = String::from_utf8(out.stdout).unwrap();
        // "rustc 1.95.0 (...)"
        let version = text.split_whitespace().nth(1).expect("a version");
        let minor = |v: &str| -> (u64, u64) {
            let mut parts = v.split('.').map(|p| p.parse::<u64>().unwrap());
            (parts.next().unwrap(), parts.next().unwrap())
        };
        assert!(
            minor(IMAGE_RUST_VERSION) >= minor(version),
            "the Dockerfile builds with rust {IMAGE_RUST_VERSION} but opkit is tested with \
             {version}: raise IMAGE_RUST_VERSION in scaffold.rs"
        );
    }
}
