//! OLM catalogs at scale (issue 18, item 7): a generated file-based catalog of
//! `olm_packages × olm_versions` bundles (1,000 in the full run) pushed as a catalog image to a
//! real registry (Debian's `docker-registry`, a process of the scenario's own), then the
//! lifecycle controllers (`opkit_lifecycle::catalogd` and `clusterext`, in this process,
//! against the benchmark's server) bring a `ClusterCatalog` of it to `Serving=True` and a
//! `ClusterExtension` of one of its packages to `Installed=True`. Figures: push (load,
//! validate, image, upload — what `opkit catalog push` does), `ClusterCatalog` created →
//! `Serving=True`, a GET of the whole catalog from its served URL, resolution against the
//! served content (first install and an upgrade, the function the extension controller
//! calls), and `ClusterExtension` created → `Installed=True`.
//!
//! The catalog is [`catalog`]: deterministic, each package one channel `stable` whose
//! versions replace one another, every third with an `olm.skipRange` over the ones before.
//! Only the installed bundle's image is pushed; the others are never pulled.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use kube::api::{Api, PostParams};
use kube::runtime::wait::await_condition;
use opkit_lifecycle::{ClusterCatalog, ClusterExtension};
use opkit_olm::resolve::{self, Request, Source, UpgradePolicy};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::scenarios::{Outcome, create_namespace, poll_until};
use crate::server::Server;
use crate::stats::{Samples, ms};
use crate::{Options, Row, Scenario};

/// Where Debian's docker-registry package puts the registry.
const REGISTRY_BIN: &str = "/usr/bin/docker-registry";
/// Resolutions timed per kind.
const RESOLUTIONS: usize = 200;
/// The package the extension installs.
const INSTALLED: &str = "bench-p000";

/// The package named `i`.
fn package(i: usize) -> String {
    format!("bench-p{i:03}")
}

/// The version `j` of every package (`1.0.0`, `1.1.0`, …).
fn version(j: usize) -> String {
    format!("1.{j}.0")
}

/// A file-based catalog of `packages` packages with `versions` bundles each, one document a
/// line group, bundle images named by `image(package, version)`.
pub fn catalog(packages: usize, versions: usize, image: impl Fn(&str, &str) -> String) -> String {
    let mut out = String::new();
    for i in 0..packages {
        let p = package(i);
        let _ = write!(
            out,
            "---\nschema: olm.package\nname: {p}\ndefaultChannel: stable\n---\nschema: olm.channel\npackage: {p}\nname: stable\nentries:\n"
        );
        for j in 0..versions {
            let _ = writeln!(out, "- name: {p}.v{}", version(j));
            if j > 0 {
                let _ = writeln!(out, "  replaces: {p}.v{}", version(j - 1));
            }
            if j > 1 && j % 3 == 0 {
                let _ = writeln!(out, "  skipRange: '>=1.0.0 <{}'", version(j));
            }
        }
        for j in 0..versions {
            let v = version(j);
            let _ = write!(
                out,
                "---\nschema: olm.bundle\npackage: {p}\nname: {p}.v{v}\nimage: {}\nproperties:\n- type: olm.package\n  value:\n    packageName: {p}\n    version: {v}\n- type: olm.gvk\n  value:\n    group: {p}.bench.example.com\n    kind: Widget\n    version: v1\n",
                image(&p, &v)
            );
        }
    }
    out
}

/// Writes a registry+v1 bundle of `package` at `version` (a CSV with one Deployment, and the
/// CRD its `olm.gvk` names) to `dir`.
pub fn write_bundle(dir: &Path, package: &str, version: &str) -> std::io::Result<()> {
    std::fs::create_dir_all(dir.join("manifests"))?;
    std::fs::create_dir_all(dir.join("metadata"))?;
    std::fs::write(
        dir.join("metadata/annotations.yaml"),
        format!(
            "annotations:\n  operators.operatorframework.io.bundle.mediatype.v1: registry+v1\n  operators.operatorframework.io.bundle.manifests.v1: manifests/\n  operators.operatorframework.io.bundle.metadata.v1: metadata/\n  operators.operatorframework.io.bundle.package.v1: {package}\n  operators.operatorframework.io.bundle.channels.v1: stable\n  operators.operatorframework.io.bundle.channel.default.v1: stable\n"
        ),
    )?;
    std::fs::write(
        dir.join("manifests/csv.yaml"),
        format!(
            "apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\nmetadata:\n  name: {package}.v{version}\nspec:\n  displayName: Bench\n  description: A generated operator.\n  version: {version}\n  minKubeVersion: 1.25.0\n  provider:\n    name: opkit\n  maintainers:\n  - name: Bench\n    email: bench@example.com\n  installModes:\n  - type: AllNamespaces\n    supported: true\n  customresourcedefinitions:\n    owned:\n    - name: widgets.{package}.bench.example.com\n      version: v1\n      kind: Widget\n  install:\n    strategy: deployment\n    spec:\n      deployments:\n      - name: {package}-controller\n        spec:\n          selector:\n            matchLabels:\n              app: {package}\n          template:\n            metadata:\n              labels:\n                app: {package}\n            spec:\n              containers:\n              - name: manager\n                image: example.com/{package}:v{version}\n"
        ),
    )?;
    std::fs::write(
        dir.join("manifests/crd.yaml"),
        format!(
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.{package}.bench.example.com\nspec:\n  group: {package}.bench.example.com\n  scope: Namespaced\n  names:\n    kind: Widget\n    plural: widgets\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n        type: object\n"
        ),
    )
}

/// A registry process of the scenario's own, on a free port, killed when dropped.
struct Registry {
    addr: String,
    child: Child,
    _dir: tempfile::TempDir,
}

impl Registry {
    async fn start() -> anyhow::Result<Registry> {
        if !Path::new(REGISTRY_BIN).is_file() {
            bail!(
                "the olm scenario needs {REGISTRY_BIN}: run `scripts/start-registry.sh --install-only` (installs Debian's docker-registry package)"
            );
        }
        let dir = tempfile::Builder::new()
            .prefix("opkit-bench-registry-")
            .tempdir()?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let addr = format!("127.0.0.1:{port}");
        let config = dir.path().join("config.yml");
        std::fs::write(
            &config,
            format!(
                "version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: {}\nhttp:\n  addr: {addr}\n",
                dir.path().join("data").display()
            ),
        )?;
        let log = std::fs::File::create(dir.path().join("registry.log"))?;
        let child = Command::new(REGISTRY_BIN)
            .arg("serve")
            .arg(&config)
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .with_context(|| format!("starting {REGISTRY_BIN}"))?;
        let mut registry = Registry {
            addr,
            child,
            _dir: dir,
        };
        let addr = registry.addr.clone();
        poll_until(
            "the registry to answer GET /v2/",
            Duration::from_secs(30),
            Duration::from_millis(20),
            || {
                let exited = registry.child.try_wait().ok().flatten();
                let addr = addr.clone();
                async move {
                    if let Some(status) = exited {
                        bail!("docker-registry exited ({status})");
                    }
                    Ok(get(&addr, "/v2/").await.ok().filter(|(s, _)| *s == 200))
                }
            },
        )
        .await?;
        Ok(registry)
    }

    fn image(&self, repository: &str) -> String {
        format!("{}/{repository}", self.addr)
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `GET http://ADDR/PATH` over HTTP/1.1 (close); the status and the body's length in bytes.
async fn get(addr: &str, path: &str) -> anyhow::Result<(u16, usize)> {
    let mut stream = tokio::net::TcpStream::connect(addr).await?;
    stream
        .write_all(
            format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .await?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response).await?;
    let head_end = response
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .context("no end of the response head")?;
    let head = String::from_utf8_lossy(&response[..head_end]);
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .context("no status in the response")?;
    Ok((status, response.len() - head_end - 4))
}

/// Pushes the catalog directory `dir` as `image_ref`, as `opkit catalog push` does.
async fn push_catalog(dir: &Path, image_ref: &str) -> anyhow::Result<()> {
    let catalog = opkit_olm::load_dir(dir)?;
    let errors = opkit_olm::validate_catalog(&catalog);
    if !errors.is_empty() {
        let errors: Vec<String> = errors.iter().map(ToString::to_string).collect();
        bail!("the generated catalog is invalid: {}", errors.join("; "));
    }
    let image = opkit_olm::image::catalog_image(dir)?;
    opkit_lifecycle::registry::Registry::new(image_ref, false)?
        .push(&image)
        .await?;
    Ok(())
}

/// Pushes the bundle directory `dir` as `image_ref`, as `opkit bundle push` does.
async fn push_bundle(dir: &Path, image_ref: &str) -> anyhow::Result<()> {
    let bundle = opkit_olm::Bundle::load(dir)?;
    let report = opkit_olm::validate_bundle(&bundle, &[]);
    if !report.is_valid() {
        let findings: Vec<String> = report.findings.iter().map(ToString::to_string).collect();
        bail!("the generated bundle is invalid: {}", findings.join("; "));
    }
    let image = opkit_olm::image::bundle_image(&bundle)?;
    opkit_lifecycle::registry::Registry::new(image_ref, false)?
        .push(&image)
        .await?;
    Ok(())
}

/// Whether condition `type_` is True among `conditions` (none: no).
fn condition_true(conditions: Option<&[opkit::Condition]>, type_: &str) -> bool {
    conditions.is_some_and(|c| opkit::conditions::is_true(c, type_))
}

/// The scenario.
pub async fn olm(options: &Options) -> anyhow::Result<Outcome> {
    let s = Scenario::Olm;
    let counts = &options.counts;
    let limit = counts.scenario_timeout;
    let (packages, versions) = (counts.olm_packages, counts.olm_versions);
    let bundles = packages * versions;
    let mut out = Outcome::default();

    let registry = Registry::start().await?;
    let work = tempfile::Builder::new()
        .prefix("opkit-bench-olm-")
        .tempdir()?;
    let catalog_dir: PathBuf = work.path().join("catalog");
    std::fs::create_dir_all(&catalog_dir)?;
    let text = catalog(packages, versions, |p, v| {
        registry.image(&format!("bench/{p}-bundle:v{v}"))
    });
    std::fs::write(catalog_dir.join("index.yaml"), &text)?;
    let newest = version(versions - 1);
    let bundle_dir = work.path().join("bundle");
    write_bundle(&bundle_dir, INSTALLED, &newest)?;
    push_bundle(
        &bundle_dir,
        &registry.image(&format!("bench/{INSTALLED}-bundle:v{newest}")),
    )
    .await?;

    let server = Server::start(&options.server).await?;
    let client = server.client().await?;
    let catalogd = opkit_lifecycle::catalogd::start(
        client.clone(),
        opkit_lifecycle::CatalogdOptions {
            listen: "127.0.0.1:0".parse()?,
            advertise: None,
        },
    )
    .await
    .context("starting the ClusterCatalog controller")?;
    let extensions = opkit_lifecycle::clusterext::start(client.clone(), catalogd.catalogs())
        .await
        .context("starting the ClusterExtension controller")?;

    // Push, then ClusterCatalog → Serving=True.
    let image_ref = registry.image("bench/catalog:v1");
    let started = Instant::now();
    push_catalog(&catalog_dir, &image_ref).await?;
    let pushed = started.elapsed();
    let catalogs: Api<ClusterCatalog> = Api::all(client.clone());
    let cc: ClusterCatalog = serde_json::from_value(json!({
        "apiVersion": "olm.operatorframework.io/v1",
        "kind": "ClusterCatalog",
        "metadata": {"name": "bench"},
        "spec": {"source": {"type": "Image", "image": {"ref": image_ref}}},
    }))?;
    let created = Instant::now();
    catalogs.create(&PostParams::default(), &cc).await?;
    let serving = await_condition(catalogs.clone(), "bench", |c: Option<&ClusterCatalog>| {
        condition_true(
            c.and_then(|c| c.status.as_ref())
                .map(|s| s.conditions.as_slice()),
            "Serving",
        )
    });
    let cc = tokio::time::timeout(limit, serving)
        .await
        .context("the ClusterCatalog did not serve in time")??
        .context("the ClusterCatalog went away")?;
    let to_serving = created.elapsed();
    let total = started.elapsed();
    out.rows.push(Row::info(
        s,
        format!(
            "catalog of {bundles} bundles ({packages} packages): push ({} KiB of YAML)",
            text.len() / 1024
        ),
        ms(pushed),
    ));
    out.rows.push(Row::info(
        s,
        "ClusterCatalog created → Serving=True",
        ms(to_serving),
    ));
    out.rows
        .push(Row::info(s, "push + Serving (total)", ms(total)));

    // The whole catalog from its served URL.
    let base = cc
        .status
        .as_ref()
        .and_then(|s| s.urls.as_ref())
        .map(|u| u.base.clone())
        .context("a serving catalog has status.urls.base")?;
    let rest = base.strip_prefix("http://").context("an http URL")?;
    let (addr, path) = rest.split_once('/').context("a path in the URL")?;
    let mut reads = Samples::with_capacity(10);
    let mut size = 0;
    for _ in 0..10 {
        let t = Instant::now();
        let (status, bytes) = get(addr, &format!("/{path}/api/v1/all")).await?;
        reads.push(t.elapsed());
        if status != 200 {
            bail!("GET {base}/api/v1/all answered {status}");
        }
        size = bytes;
    }
    out.rows.push(Row::info(
        s,
        format!("GET /api/v1/all ({} KiB), median of 10", size / 1024),
        ms(reads.median()),
    ));

    // Resolution against what is served, as the extension controller resolves.
    let served = catalogd.catalogs().snapshot();
    let sources: Vec<Source<'_>> = served
        .iter()
        .map(|(name, c)| Source {
            name,
            priority: c.priority,
            catalog: &c.catalog,
        })
        .collect();
    let middle = package(packages / 2);
    let request = Request {
        package: &middle,
        version: None,
        channels: &[],
        policy: UpgradePolicy::CatalogProvided,
    };
    let oldest = opkit_olm::Node {
        name: format!("{middle}.v{}", version(0)),
        version: semver::Version::parse(&version(0))?,
    };
    let mut first = Samples::with_capacity(RESOLUTIONS);
    let mut upgrade = Samples::with_capacity(RESOLUTIONS);
    for _ in 0..RESOLUTIONS {
        let t = Instant::now();
        let resolved = resolve::resolve(&sources, &request, None)?;
        first.push(t.elapsed());
        if resolved.version.to_string() != newest {
            bail!(
                "resolution chose {} for a first install, not {newest}",
                resolved.name
            );
        }
        let t = Instant::now();
        resolve::resolve(&sources, &request, Some(&oldest))?;
        upgrade.push(t.elapsed());
    }
    out.rows.push(Row::info(
        s,
        format!("resolution, first install (median of {RESOLUTIONS})"),
        ms(first.median()),
    ));
    out.rows.push(Row::info(
        s,
        format!(
            "resolution, upgrade from {} (median of {RESOLUTIONS})",
            version(0)
        ),
        ms(upgrade.median()),
    ));

    // ClusterExtension → Installed=True.
    create_namespace(&client, "bench-system").await?;
    let ext: ClusterExtension = serde_json::from_value(json!({
        "apiVersion": "olm.operatorframework.io/v1",
        "kind": "ClusterExtension",
        "metadata": {"name": "bench"},
        "spec": {
            "namespace": "bench-system",
            "serviceAccount": {"name": "installer"},
            "source": {"sourceType": "Catalog", "catalog": {"packageName": INSTALLED}},
        },
    }))?;
    let exts: Api<ClusterExtension> = Api::all(client.clone());
    let created = Instant::now();
    exts.create(&PostParams::default(), &ext).await?;
    let installed = await_condition(exts.clone(), "bench", |e: Option<&ClusterExtension>| {
        condition_true(
            e.and_then(|e| e.status.as_ref())
                .map(|s| s.conditions.as_slice()),
            "Installed",
        )
    });
    let ext = tokio::time::timeout(limit, installed)
        .await
        .context("the ClusterExtension was not installed in time")??
        .context("the ClusterExtension went away")?;
    let to_installed = created.elapsed();
    let bundle = ext
        .status
        .and_then(|s| s.install)
        .map(|i| i.bundle.version)
        .unwrap_or_default();
    if bundle != newest {
        bail!("the extension installed {bundle}, not {newest}");
    }
    out.rows.push(Row::info(
        s,
        format!("ClusterExtension created → Installed=True ({INSTALLED} {newest})"),
        ms(to_installed),
    ));
    out.notes.push(format!(
        "olm: controllers in the benchmark's process against {}; registry: {REGISTRY_BIN}",
        options.server.describe()
    ));

    extensions.shutdown().await?;
    catalogd.shutdown().await?;
    server.stop().await;
    drop(registry);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_generated_catalog_is_valid_and_has_every_bundle_with_one_head_per_package() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("index.yaml"),
            catalog(4, 7, |p, v| format!("r.io/{p}:v{v}")),
        )
        .unwrap();
        let loaded = opkit_olm::load_dir(dir.path()).unwrap();
        let errors = opkit_olm::validate_catalog(&loaded);
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(loaded.packages.len(), 4);
        assert_eq!(loaded.bundles.len(), 28);
        assert_eq!(
            catalog(4, 7, |p, v| format!("r.io/{p}:v{v}")),
            catalog(4, 7, |p, v| format!("r.io/{p}:v{v}")),
            "deterministic"
        );
        let bundle = tempfile::tempdir().unwrap();
        write_bundle(bundle.path(), "bench-p000", "1.6.0").unwrap();
        let b = opkit_olm::Bundle::load(bundle.path()).unwrap();
        assert!(opkit_olm::validate_bundle(&b, &[]).is_valid());
    }
}
