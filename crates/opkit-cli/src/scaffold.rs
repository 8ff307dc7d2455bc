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

use crate::manifests;
use crate::project::{self, Project, Resource};

/// Flags of `opkit init`.
#[derive(Args)]
pub struct InitArgs {
    /// The API domain: group `webapp` becomes `webapp.DOMAIN`.
    #[arg(long, value_name = "DOMAIN")]
    domain: String,
    /// The source repository, e.g. `github.com/you/guestbook`.
    #[arg(long, value_name = "REPO")]
    repo: String,
    /// The project name (default: the directory's name).
    #[arg(long, value_name = "NAME")]
    name: Option<String>,
    /// An opkit checkout to depend on (default: the one this `opkit` was built from).
    #[arg(long, value_name = "DIR")]
    opkit_path: Option<PathBuf>,
    /// Write into a directory that is not empty (files of the same name are overwritten).
    #[arg(long)]
    force: bool,
}

/// Flags of `opkit create api`.
#[derive(Args)]
pub struct CreateApiArgs {
    /// The short API group: `webapp` becomes `webapp.DOMAIN`.
    #[arg(long, value_name = "GROUP")]
    group: String,
    /// The API version, e.g. `v1`, `v1alpha1`.
    #[arg(long, value_name = "VERSION")]
    version: String,
    /// The kind, in UpperCamelCase, e.g. `Guestbook`.
    #[arg(long, value_name = "KIND")]
    kind: String,
    /// Whether objects of the kind live in namespaces.
    #[arg(long, value_name = "BOOL", default_value_t = true, action = clap::ArgAction::Set)]
    namespaced: bool,
}

const CARGO_TOML: &str = include_str!("../templates/init/Cargo.toml.tmpl");
const MAIN_RS: &str = include_str!("../templates/init/main.rs.tmpl");
const LIB_RS: &str = include_str!("../templates/init/lib.rs.tmpl");
const API_MOD_RS: &str = include_str!("../templates/init/api_mod.rs.tmpl");
const CONTROLLERS_MOD_RS: &str = include_str!("../templates/init/controllers_mod.rs.tmpl");
const GITIGNORE: &str = include_str!("../templates/init/gitignore.tmpl");
const README: &str = include_str!("../templates/init/README.md.tmpl");
const API_RS: &str = include_str!("../templates/api/api.rs.tmpl");
const CONTROLLER_RS: &str = include_str!("../templates/api/controller.rs.tmpl");
const TEST_RS: &str = include_str!("../templates/api/test.rs.tmpl");

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
fn placeholders(text: &str) -> Vec<String> {
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

/// The dependency lines of a project's `Cargo.toml`, taken from the opkit checkout's
/// workspace so the project builds against the versions opkit is tested with.
fn dependency_vars(opkit_root: &Path) -> anyhow::Result<Vec<(String, String)>> {
    let manifest = opkit_root.join("Cargo.toml");
    let text = std::fs::read_to_string(&manifest)
        .with_context(|| format!("cannot read {}", manifest.display()))?;
    let doc: toml_edit::DocumentMut = text
        .parse()
        .with_context(|| format!("{} is not valid TOML", manifest.display()))?;
    let deps = doc
        .get("workspace")
        .and_then(|w| w.get("dependencies"))
        .with_context(|| format!("{} has no [workspace.dependencies]", manifest.display()))?;
    let mut vars = Vec::new();
    for name in SHARED_DEPENDENCIES {
        let value = deps
            .get(name)
            .and_then(|d| d.as_value())
            .with_context(|| format!("{} does not pin {name}", manifest.display()))?;
        let value = value.clone().decorated("", "").to_string();
        vars.push((format!("{}_dep", name.replace('-', "_")), value));
    }
    let opkit = opkit_root.join("crates/opkit");
    let path = toml_edit::Value::from(opkit.display().to_string()).to_string();
    vars.push(("opkit_dep".into(), format!("{{ path = {path} }}")));
    let testenv = opkit_root.join("crates/opkit-testenv");
    let testenv = toml_edit::Value::from(testenv.display().to_string()).to_string();
    vars.push((
        "opkit_testenv_dep".into(),
        format!("{{ path = {testenv} }}"),
    ));
    Ok(vars)
}

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
fn write_files(root: &Path, files: &[(String, String)]) -> anyhow::Result<()> {
    for (rel, content) in files {
        manifests::sync_file(root, rel, content, false)?;
    }
    Ok(())
}

/// `opkit init` in `dir`.
pub fn init(args: InitArgs, dir: &Path) -> anyhow::Result<()> {
    project::validate_domain(&args.domain)?;
    if args.repo.trim().is_empty() {
        bail!("--repo must name the source repository, e.g. github.com/you/operator");
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
    let opkit_root = opkit_checkout(&args.opkit_path.unwrap_or_else(default_opkit_path))?;

    let project = Project {
        layout: project::LAYOUT.to_string(),
        project_name: name.clone(),
        domain: args.domain.clone(),
        repo: args.repo.clone(),
        resources: Vec::new(),
    };
    let crate_name = project.crate_name();
    let repo_url = if args.repo.contains("://") {
        args.repo.clone()
    } else {
        format!("https://{}", args.repo)
    };
    let mut vars: Vec<(String, String)> = vec![
        ("name".into(), name.clone()),
        ("crate".into(), crate_name),
        ("domain".into(), args.domain.clone()),
        ("repo".into(), args.repo.clone()),
        ("repo_url".into(), repo_url),
    ];
    vars.extend(dependency_vars(&opkit_root)?);
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
    ];
    // The lock file opkit is tested with: the same versions, and a first build that reuses
    // what building opkit already compiled.
    if let Ok(lock) = std::fs::read_to_string(opkit_root.join("Cargo.lock")) {
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
        "Created the operator project {name} (opkit at {}).",
        opkit_root.display()
    );
    println!("Next:");
    println!("  opkit create api --group webapp --version v1 --kind Guestbook");
    println!("  cargo test");
    println!("  opkit run --up");
    Ok(())
}

/// Inserts `lines` before the line holding `marker` in `text` (each line indented like the
/// marker, plus `extra_indent`).
fn insert_at_marker(
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
fn insert_module(text: &str, marker: &str, module: &str, file: &str) -> anyhow::Result<String> {
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

fn read(root: &Path, rel: &str) -> anyhow::Result<String> {
    let path = root.join(rel);
    std::fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))
}

/// `opkit create api` in the project containing `cwd`.
pub fn create_api(args: CreateApiArgs, cwd: &Path) -> anyhow::Result<()> {
    let root = project::find_root(cwd)?;
    let mut project = Project::load(&root)?;
    project::validate_group(&args.group)?;
    project::validate_version(&args.version)?;
    project::validate_kind(&args.kind)?;
    let resource = Resource {
        group: args.group,
        domain: project.domain.clone(),
        version: args.version,
        kind: args.kind,
        namespaced: args.namespaced,
    };
    if let Some(existing) = project
        .resources
        .iter()
        .find(|r| r.kind.eq_ignore_ascii_case(&resource.kind))
    {
        bail!(
            "kind {} already exists in this project ({}/{}, src/api/{}.rs): each kind is \
             created once. Edit src/api/{}.rs and src/controllers/{}.rs to change it",
            existing.kind,
            existing.full_group(),
            existing.version,
            existing.module(),
            existing.module(),
            existing.module()
        );
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
    let namespaced_attr = if resource.namespaced {
        "\n    namespaced,"
    } else {
        ""
    };
    let api_ctor = if resource.namespaced {
        "Api::namespaced(env.client(), \"default\")"
    } else {
        "Api::all(env.client())"
    };
    let vars: Vec<(&str, &str)> = vec![
        ("crate", &crate_name),
        ("kind", &resource.kind),
        ("kind_snake", &module),
        ("kind_lower", &kind_lower),
        ("full_group", &full_group),
        ("version", &resource.version),
        ("namespaced_attr", namespaced_attr),
        ("plural_hint", &kind_lower),
        ("api_ctor", api_ctor),
    ];

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
        manifests::sample(&resource),
    ));
    files.push((
        "config/samples/kustomization.yaml".to_string(),
        manifests::samples_kustomization(&project),
    ));
    write_files(&root, &files)?;
    project.save(&root)?;

    println!(
        "Created {}/{} {} in src/api/{module}.rs, its controller in src/controllers/{module}.rs, \
         a test in tests/{module}.rs and a sample in {}.",
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
        ];
        for template in [
            CARGO_TOML,
            MAIN_RS,
            LIB_RS,
            API_MOD_RS,
            CONTROLLERS_MOD_RS,
            GITIGNORE,
            README,
            API_RS,
            CONTROLLER_RS,
            TEST_RS,
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
        let vars = dependency_vars(&opkit_checkout(&default_opkit_path()).unwrap()).unwrap();
        let get = |k: &str| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        assert!(get("kube_dep").unwrap().contains("version"));
        assert!(get("opkit_dep").unwrap().contains("crates/opkit"));
        assert!(
            get("opkit_testenv_dep")
                .unwrap()
                .contains("crates/opkit-testenv")
        );
    }
}
