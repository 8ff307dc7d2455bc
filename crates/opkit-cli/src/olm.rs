//! `opkit bundle validate` (operator-sdk's) and `opkit catalog render|validate|template` (opm's),
//! offline, over opkit-olm; `opkit catalog serve` answers catalogd's HTTP API over catalog
//! directories; `opkit bundle|catalog push|pull` move bundle and catalog images to and from an
//! OCI registry (the image layout is `opkit_olm::image`'s, the protocol the `registry`
//! module's). Render and template references are directories: rendering images from a registry
//! is not built yet, and a reference that is not a directory says so.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::{Args, Subcommand, ValueEnum};
use opkit_olm::{Bundle, Catalog, Format, RenderOptions, Rendered, Suite, TemplateError};
use serde::Deserialize;

/// `opkit bundle …`.
#[derive(Subcommand)]
pub(crate) enum BundleCommand {
    /// Validate a registry+v1 bundle directory as `operator-sdk bundle validate` does.
    Validate(ValidateBundleArgs),
    /// Generate the project's registry+v1 bundle from `config/default` and `config/samples`
    /// (`operator-sdk generate bundle`); run `opkit generate manifests` first.
    Generate(GenerateBundleArgs),
    /// Validate a bundle directory and push it as a bundle image (one layer with manifests/
    /// and metadata/, its annotations as labels); prints the digest.
    Push(PushArgs),
    /// Pull a bundle image into a new directory (manifests/ and metadata/).
    Pull(PullArgs),
}

/// `opkit bundle|catalog push DIR IMAGE_REF`.
#[derive(Args)]
pub(crate) struct PushArgs {
    /// The bundle or catalog directory.
    dir: PathBuf,
    /// Where to push: `host[:port]/repository:tag`.
    image_ref: String,
    /// Talk plain HTTP to the registry (automatic for localhost and loopback addresses).
    #[arg(long)]
    plain_http: bool,
}

/// `opkit bundle|catalog pull IMAGE_REF DIR`.
#[derive(Args)]
pub(crate) struct PullArgs {
    /// What to pull: `host[:port]/repository:tag` or `…@sha256:…`.
    image_ref: String,
    /// The directory to unpack into (must not exist, or be empty).
    dir: PathBuf,
    /// Talk plain HTTP to the registry (automatic for localhost and loopback addresses).
    #[arg(long)]
    plain_http: bool,
}

/// `opkit bundle generate --version V`.
#[derive(Args)]
pub(crate) struct GenerateBundleArgs {
    /// The bundle's version (semver: `0.1.0`).
    #[arg(long)]
    version: String,
    /// The channels, comma-separated.
    #[arg(long, default_value = "alpha", value_delimiter = ',')]
    channels: Vec<String>,
    /// The default channel (one of the channels).
    #[arg(long)]
    default_channel: Option<String>,
    /// The operator's image, set on the manager container.
    #[arg(long)]
    image: Option<String>,
    /// The package name (default: the project's name).
    #[arg(long)]
    package: Option<String>,
    /// The CSV this bundle replaces (`<package>.v<version>`).
    #[arg(long)]
    replaces: Option<String>,
    /// Where to write the bundle.
    #[arg(long, default_value = "bundle")]
    output_dir: PathBuf,
}

/// `opkit bundle validate DIR`.
#[derive(Args)]
pub(crate) struct ValidateBundleArgs {
    /// The bundle directory (with manifests/ and metadata/).
    dir: PathBuf,
    /// Optional validators to run too: `suite=operatorframework` (the OperatorHub checks).
    #[arg(long, value_name = "SELECTOR")]
    select_optional: Vec<String>,
}

/// `opkit catalog …`.
#[derive(Subcommand)]
pub(crate) enum CatalogCommand {
    /// Render bundle directories and file-based catalog directories into one catalog, as
    /// `opm render` does.
    Render(RenderArgs),
    /// Validate a file-based catalog directory with operator-registry's rules (`opm validate`).
    Validate(ValidateCatalogArgs),
    /// Render a catalog template (`opm alpha render-template`).
    #[command(subcommand)]
    Template(TemplateCommand),
    /// Serve catalog directories over catalogd's HTTP API (`/catalogs/<name>/api/v1/all` and
    /// `/api/v1/metas`) until interrupted.
    Serve(ServeArgs),
    /// Validate a file-based catalog directory and push it as a catalog image (the catalog
    /// under /configs, labelled operators.operatorframework.io.index.configs.v1); prints the
    /// digest.
    Push(PushArgs),
    /// Pull a catalog image's file-based catalog into a new directory.
    Pull(PullArgs),
}

/// `opkit catalog serve [NAME=]DIR...`.
#[derive(Args)]
pub(crate) struct ServeArgs {
    /// File-based catalog directories, each served under its directory's name or under NAME.
    #[arg(required = true, value_name = "[NAME=]DIR")]
    catalogs: Vec<String>,
    /// The address to listen on (port 0 picks a free one; the URLs are printed).
    #[arg(long, default_value = "127.0.0.1:8080")]
    listen: std::net::SocketAddr,
}

/// `opm render`'s flags.
#[derive(Args)]
pub(crate) struct RenderArgs {
    /// Bundle directories and catalog directories.
    #[arg(required = true, value_name = "DIR")]
    refs: Vec<PathBuf>,
    #[command(flatten)]
    output: OutputArgs,
}

/// Output and migration flags shared by render and the templates.
#[derive(Args)]
pub(crate) struct OutputArgs {
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value = "json")]
    output: OutputFormat,
    /// `bundle-object-to-csv-metadata`: one `olm.csv.metadata` property instead of the
    /// `olm.bundle.object`s, for bundles with an image reference.
    #[arg(long, value_name = "LEVEL")]
    migrate_level: Option<String>,
    /// Image reference of each bundle directory, from `{{.Package}}`, `{{.Name}}` and
    /// `{{.Version}}` (opm's `--alpha-image-ref-template`).
    #[arg(long, alias = "alpha-image-ref-template", value_name = "TEMPLATE")]
    image_ref_template: Option<String>,
}

#[derive(Clone, Copy, ValueEnum)]
enum OutputFormat {
    Yaml,
    Json,
}

/// `opkit catalog validate DIR`.
#[derive(Args)]
pub(crate) struct ValidateCatalogArgs {
    /// The catalog directory.
    dir: PathBuf,
}

/// `opkit catalog template …`.
#[derive(Subcommand)]
pub(crate) enum TemplateCommand {
    /// `olm.template.basic`: a catalog whose bundle entries are references to render.
    Basic(TemplateArgs),
    /// `olm.semver`: channels generated from bundle versions.
    Semver(TemplateArgs),
}

/// A template file; its bundle references are directories relative to it.
#[derive(Args)]
pub(crate) struct TemplateArgs {
    /// The template (YAML or JSON).
    file: PathBuf,
    #[command(flatten)]
    output: OutputArgs,
}

/// Runs `opkit bundle …`.
pub(crate) fn run_bundle(cmd: BundleCommand, cwd: &Path) -> ExitCode {
    match cmd {
        BundleCommand::Validate(args) => report(validate_bundle(args, cwd)),
        BundleCommand::Generate(args) => report(generate_bundle(args, cwd)),
        BundleCommand::Push(args) => report(push(args, cwd, Kind::Bundle)),
        BundleCommand::Pull(args) => report(pull(args, cwd, Kind::Bundle)),
    }
}

/// Runs `opkit catalog …`.
pub(crate) fn run_catalog(cmd: CatalogCommand, cwd: &Path) -> ExitCode {
    let result = match cmd {
        CatalogCommand::Render(args) => render(args, cwd),
        CatalogCommand::Validate(args) => validate_catalog(args, cwd),
        CatalogCommand::Template(TemplateCommand::Basic(args)) => template(args, cwd, false),
        CatalogCommand::Template(TemplateCommand::Semver(args)) => template(args, cwd, true),
        CatalogCommand::Serve(args) => serve(args, cwd),
        CatalogCommand::Push(args) => push(args, cwd, Kind::Catalog),
        CatalogCommand::Pull(args) => pull(args, cwd, Kind::Catalog),
    };
    report(result)
}

fn report(result: anyhow::Result<bool>) -> ExitCode {
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn validate_bundle(args: ValidateBundleArgs, cwd: &Path) -> anyhow::Result<bool> {
    let suites = args
        .select_optional
        .iter()
        .map(|s| s.parse::<Suite>())
        .collect::<Result<Vec<_>, _>>()?;
    let bundle = Bundle::load(&cwd.join(&args.dir))?;
    let report = opkit_olm::validate_bundle(&bundle, &suites);
    let mut out = std::io::stdout().lock();
    for f in &report.findings {
        writeln!(out, "{f}")?;
    }
    if report.is_valid() {
        writeln!(out, "All validation tests have completed successfully")?;
        Ok(true)
    } else {
        Ok(false)
    }
}

/// Which of OLM's two images a push or pull moves.
#[derive(Clone, Copy)]
enum Kind {
    Bundle,
    Catalog,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Bundle => "bundle",
            Kind::Catalog => "catalog",
        }
    }
}

/// Validates the directory (refusing an invalid one before any network call), builds its image
/// and pushes it; prints the digest.
fn push(args: PushArgs, cwd: &Path, kind: Kind) -> anyhow::Result<bool> {
    let dir = cwd.join(&args.dir);
    let (image, what) = match kind {
        Kind::Bundle => {
            let bundle = Bundle::load(&dir)?;
            let report = opkit_olm::validate_bundle(&bundle, &[]);
            if !report.is_valid() {
                for f in &report.findings {
                    eprintln!("{f}");
                }
                bail!(
                    "bundle {} is invalid (the errors above): fix it, `opkit bundle validate {}` to check, then push",
                    bundle.name(),
                    args.dir.display()
                );
            }
            let what = format!("bundle {}", bundle.name());
            (opkit_olm::image::bundle_image(&bundle)?, what)
        }
        Kind::Catalog => {
            let catalog = opkit_olm::load_dir(&dir)?;
            let errors = opkit_olm::validate_catalog(&catalog);
            if !errors.is_empty() {
                for e in &errors {
                    eprintln!("{e}");
                }
                bail!(
                    "catalog {} is invalid (the errors above): fix it, `opkit catalog validate {}` to check, then push",
                    args.dir.display(),
                    args.dir.display()
                );
            }
            let what = format!("catalog {}", args.dir.display());
            (opkit_olm::image::catalog_image(&dir)?, what)
        }
    };
    let registry = opkit_lifecycle::registry::Registry::new(&args.image_ref, args.plain_http)?;
    let digest = block_on(registry.push(&image))?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "pushed {what} to {}", args.image_ref)?;
    writeln!(out, "digest: {digest}")?;
    Ok(true)
}

/// Pulls the image, checks it is a bundle (catalog) image and unpacks its content into a new
/// directory.
fn pull(args: PullArgs, cwd: &Path, kind: Kind) -> anyhow::Result<bool> {
    let dir = cwd.join(&args.dir);
    if dir.exists()
        && std::fs::read_dir(&dir)
            .with_context(|| format!("{} is not a directory", args.dir.display()))?
            .next()
            .is_some()
    {
        bail!(
            "{} is not empty: pull into a new or empty directory",
            args.dir.display()
        );
    }
    let registry = opkit_lifecycle::registry::Registry::new(&args.image_ref, args.plain_http)?;
    let pulled = block_on(registry.pull())?;
    let layers = pulled.layers();
    let files = match kind {
        Kind::Bundle => opkit_olm::image::bundle_files(&pulled.config, &layers),
        Kind::Catalog => opkit_olm::image::catalog_files(&pulled.config, &layers),
    }
    .with_context(|| format!("{} ({})", args.image_ref, pulled.digest))?;
    for (path, data) in &files {
        let file = dir.join(path);
        if let Some(parent) = file.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
        }
        std::fs::write(&file, data).with_context(|| format!("cannot write {}", file.display()))?;
    }
    writeln!(
        std::io::stdout().lock(),
        "pulled {} {} ({}) into {}: {} files",
        kind.name(),
        args.image_ref,
        pulled.digest,
        args.dir.display(),
        files.len()
    )?;
    Ok(true)
}

/// Runs one registry call on a runtime of its own (these commands are otherwise synchronous).
fn block_on<T>(future: impl std::future::Future<Output = anyhow::Result<T>>) -> anyhow::Result<T> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?
        .block_on(future)
}

fn render(args: RenderArgs, cwd: &Path) -> anyhow::Result<bool> {
    let opts = Options::from(&args.output)?;
    let mut catalog = Catalog::default();
    for r in &args.refs {
        let dir = cwd.join(r);
        if is_bundle_dir(&dir) {
            catalog.bundles.push(opts.render_dir(&dir)?.bundle);
        } else if dir.is_dir() {
            catalog.merge(opkit_olm::load_dir(&dir)?);
        } else {
            bail!(
                "render reference {:?}: not a directory (pulling images from a registry is not supported yet; give a bundle or catalog directory)",
                r.display().to_string()
            );
        }
    }
    print(&catalog, opts.format)
}

fn validate_catalog(args: ValidateCatalogArgs, cwd: &Path) -> anyhow::Result<bool> {
    let catalog = opkit_olm::load_dir(&cwd.join(&args.dir))?;
    let errors = opkit_olm::validate_catalog(&catalog);
    for e in &errors {
        eprintln!("{e}");
    }
    Ok(errors.is_empty())
}

fn template(args: TemplateArgs, cwd: &Path, semver: bool) -> anyhow::Result<bool> {
    let opts = Options::from(&args.output)?;
    let file = cwd.join(&args.file);
    let text = std::fs::read_to_string(&file)
        .with_context(|| format!("cannot read {}", file.display()))?;
    let base = file.parent().unwrap_or(cwd).to_path_buf();
    let mut source = |reference: &str| -> Result<Rendered, TemplateError> {
        let dir = base.join(reference);
        if !is_bundle_dir(&dir) {
            return Err(TemplateError::Bundle {
                reference: reference.to_string(),
                message: "not a bundle directory (pulling images from a registry is not supported yet; give a bundle directory relative to the template)".into(),
            });
        }
        opts.render_dir(&dir).map_err(|e| TemplateError::Bundle {
            reference: reference.to_string(),
            message: format!("{e:#}"),
        })
    };
    let catalog = if semver {
        opkit_olm::render_semver(&text, &file, &mut source)?
    } else {
        opkit_olm::render_basic(&text, &file, &mut source)?
    };
    print(&catalog, opts.format)
}

fn print(catalog: &Catalog, format: Format) -> anyhow::Result<bool> {
    let text = opkit_olm::write_catalog(catalog, format)?;
    std::io::stdout().lock().write_all(text.as_bytes())?;
    Ok(true)
}

fn is_bundle_dir(dir: &Path) -> bool {
    dir.join("manifests").is_dir() && dir.join("metadata").is_dir()
}

struct Options {
    format: Format,
    csv_metadata: bool,
    image_ref_template: Option<String>,
}

impl Options {
    fn from(args: &OutputArgs) -> anyhow::Result<Options> {
        let csv_metadata = match args.migrate_level.as_deref() {
            None | Some("none") => false,
            Some("bundle-object-to-csv-metadata") => true,
            Some(other) => {
                bail!("unknown migrate level {other:?} (bundle-object-to-csv-metadata or none)")
            }
        };
        Ok(Options {
            format: match args.output {
                OutputFormat::Yaml => Format::Yaml,
                OutputFormat::Json => Format::Json,
            },
            csv_metadata,
            image_ref_template: args.image_ref_template.clone(),
        })
    }

    fn render_dir(&self, dir: &Path) -> anyhow::Result<Rendered> {
        let bundle = Bundle::load(dir)?;
        let image = match &self.image_ref_template {
            Some(t) => image_ref(t, &bundle)?,
            None => String::new(),
        };
        let rendered = opkit_olm::render_bundle(
            &bundle,
            &RenderOptions {
                image,
                csv_metadata: self.csv_metadata,
            },
        )?;
        Ok(Rendered {
            bundle: rendered,
            csv: Some(bundle.csv_object().clone()),
        })
    }
}

/// opm's image reference template: `{{.Package}}`, `{{.Name}}` and `{{.Version}}`.
fn image_ref(template: &str, bundle: &Bundle) -> anyhow::Result<String> {
    let mut out = template.to_string();
    for (field, value) in [
        ("Package", bundle.package()),
        ("Name", bundle.name()),
        ("Version", bundle.csv.spec.version.as_str()),
    ] {
        for spelling in [format!("{{{{.{field}}}}}"), format!("{{{{ .{field} }}}}")] {
            out = out.replace(&spelling, value);
        }
    }
    if out.contains("{{") {
        bail!(
            "image reference template {template:?}: only {{{{.Package}}}}, {{{{.Name}}}} and {{{{.Version}}}} are supported"
        );
    }
    Ok(out)
}

/// Loads every catalog, prints where each is served, and answers catalogd's API until Ctrl-C.
fn serve(args: ServeArgs, cwd: &Path) -> anyhow::Result<bool> {
    let mut server = opkit_olm::CatalogServer::new("/catalogs");
    for spec in &args.catalogs {
        let (name, dir) = match spec.split_once('=') {
            Some((name, dir)) => (name.to_string(), cwd.join(dir)),
            None => {
                let dir = cwd.join(spec);
                let name = dir
                    .canonicalize()
                    .ok()
                    .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
                    .with_context(|| format!("{spec}: no such catalog directory"))?;
                (name, dir)
            }
        };
        if name.is_empty() || name.contains('/') {
            bail!("{spec}: a catalog name must be non-empty and have no '/' (NAME=DIR)");
        }
        if server.catalogs().any(|(n, _)| n == name) {
            bail!("two catalogs are named {name:?}: name one of them with NAME=DIR");
        }
        let (content, catalog) =
            opkit_olm::CatalogContent::from_dir(&dir, std::time::SystemTime::now())
                .with_context(|| format!("catalog {name} ({})", dir.display()))?;
        for e in opkit_olm::validate_catalog(&catalog) {
            eprintln!("warning: catalog {name}: {e}");
        }
        server.insert(&name, content);
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(args.listen)
            .await
            .with_context(|| format!("cannot listen on {}", args.listen))?;
        let addr = listener.local_addr()?;
        {
            let mut out = std::io::stdout().lock();
            for (name, content) in server.catalogs() {
                writeln!(
                    out,
                    "serving catalog {name} ({} documents) at http://{addr}{}/api/v1/all",
                    content.len(),
                    server.base_path(name)
                )?;
            }
            out.flush()?;
        }
        let server = std::sync::Arc::new(server);
        let app = axum::Router::new().fallback(move |req: axum::extract::Request| {
            let server = server.clone();
            async move { opkit_lifecycle::http::answer(&server, &req) }
        });
        axum::serve(listener, app)
            .with_graceful_shutdown(async {
                let _ = tokio::signal::ctrl_c().await;
            })
            .await
            .context("the catalog server stopped")?;
        Ok(true)
    })
}

/// Generates `bundle/` (and `bundle.Dockerfile`) from the project's deployment manifests,
/// writing the base CSV the user maintains when the project has none yet, then validates it.
fn generate_bundle(args: GenerateBundleArgs, cwd: &Path) -> anyhow::Result<bool> {
    let project = crate::project::Project::load(cwd)?;
    let package = args.package.unwrap_or_else(|| project.project_name.clone());
    let version = semver::Version::parse(args.version.trim_start_matches('v'))
        .with_context(|| format!("--version {:?} is not a semantic version", args.version))?;
    if !cwd.join(crate::manifests::CRD_BASES).is_dir() {
        bail!(
            "{} is missing: run `opkit generate manifests` first",
            crate::manifests::CRD_BASES
        );
    }
    let mut objects = crate::kustomize::build(&cwd.join("config/default"))?;
    if let Some(image) = &args.image
        && crate::kustomize::set_container_image(&mut objects, "manager", image) == 0
    {
        bail!("--image: no Deployment in config/default has a container named manager");
    }
    let objects = objects
        .into_iter()
        .map(serde_json::to_value)
        .collect::<Result<Vec<_>, _>>()?;
    let mut samples = Vec::new();
    let samples_dir = cwd.join("config/samples");
    if samples_dir.is_dir() {
        let mut files: Vec<PathBuf> = std::fs::read_dir(&samples_dir)?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.extension().is_some_and(|e| e == "yaml" || e == "yml")
                    && p.file_stem().is_some_and(|s| s != "kustomization")
            })
            .collect();
        files.sort();
        for file in files {
            let text = std::fs::read_to_string(&file)?;
            for doc in serde_yaml::Deserializer::from_str(&text) {
                let value = serde_json::to_value(serde_yaml::Value::deserialize(doc)?)?;
                if !value.is_null() {
                    samples.push(value);
                }
            }
        }
    }
    let base_path = cwd.join(format!(
        "config/manifests/bases/{package}.clusterserviceversion.yaml"
    ));
    let base = if base_path.is_file() {
        let text = std::fs::read_to_string(&base_path)?;
        serde_json::to_value(serde_yaml::from_str::<serde_yaml::Value>(&text)?)
            .with_context(|| format!("{} is not YAML", base_path.display()))?
    } else {
        let base = opkit_olm::base_csv(
            &package,
            &display_name(&package),
            opkit_olm::converts_by_webhook(&objects),
        );
        std::fs::create_dir_all(base_path.parent().expect("a parent"))?;
        std::fs::write(&base_path, serde_yaml::to_string(&base)?)?;
        eprintln!(
            "wrote {} — edit its description, icon, maintainers and provider; the next bundle keeps them",
            base_path.strip_prefix(cwd).unwrap_or(&base_path).display()
        );
        base
    };
    let opts = opkit_olm::GenerateOptions {
        package: package.clone(),
        version,
        channels: args.channels.clone(),
        default_channel: args.default_channel.clone(),
        replaces: args.replaces,
        builder: format!("opkit-v{}", env!("CARGO_PKG_VERSION")),
    };
    let bundle = opkit_olm::generate_bundle(&objects, &samples, &base, &opts)?;
    let out = cwd.join(&args.output_dir);
    for sub in ["manifests", "metadata"] {
        let dir = out.join(sub);
        if dir.exists() {
            std::fs::remove_dir_all(&dir)
                .with_context(|| format!("cannot replace {}", dir.display()))?;
        }
    }
    for (path, text) in &bundle.files {
        let file = out.join(path);
        std::fs::create_dir_all(file.parent().expect("a parent"))?;
        std::fs::write(&file, text).with_context(|| format!("cannot write {}", file.display()))?;
    }
    let rel = args.output_dir.display().to_string();
    let mut dockerfile = String::from("FROM scratch\n\n");
    for (key, value) in [
        (
            "operators.operatorframework.io.bundle.mediatype.v1",
            "registry+v1".to_string(),
        ),
        (
            "operators.operatorframework.io.bundle.manifests.v1",
            "manifests/".into(),
        ),
        (
            "operators.operatorframework.io.bundle.metadata.v1",
            "metadata/".into(),
        ),
        (
            "operators.operatorframework.io.bundle.package.v1",
            package.clone(),
        ),
        (
            "operators.operatorframework.io.bundle.channels.v1",
            args.channels.join(","),
        ),
    ] {
        dockerfile.push_str(&format!("LABEL {key}={value}\n"));
    }
    if let Some(d) = &args.default_channel {
        dockerfile.push_str(&format!(
            "LABEL operators.operatorframework.io.bundle.channel.default.v1={d}\n"
        ));
    }
    dockerfile.push_str(&format!(
        "\nCOPY {rel}/manifests /manifests/\nCOPY {rel}/metadata /metadata/\n"
    ));
    std::fs::write(cwd.join("bundle.Dockerfile"), dockerfile)?;
    let report = opkit_olm::validate_bundle(&Bundle::load(&out)?, &[]);
    let mut stdout = std::io::stdout().lock();
    for f in &report.findings {
        writeln!(stdout, "{f}")?;
    }
    writeln!(
        stdout,
        "bundle {} written to {rel}/ ({} files) and bundle.Dockerfile",
        bundle.csv_name,
        bundle.files.len()
    )?;
    Ok(report.is_valid())
}

/// `my-operator` → `My Operator`.
fn display_name(package: &str) -> String {
    package
        .split(['-', '_'])
        .filter(|w| !w.is_empty())
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_uppercase().chain(c).collect::<String>())
                .unwrap_or_default()
        })
        .collect::<Vec<_>>()
        .join(" ")
}
