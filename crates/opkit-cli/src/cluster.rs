//! `opkit install` / `uninstall` / `deploy` / `undeploy`: a project's manifests onto a cluster
//! with server-side apply, and off it again.
//!
//! Objects are applied in dependency order (namespaces and CRDs, identities and RBAC, then
//! workloads) with the field manager `opkit` and `force`, as `kubectl apply --server-side
//! --force-conflicts` does; each kind's resource comes from discovery, so any kind the cluster
//! serves can be applied. Waits show progress and end with a hint when they time out.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Args;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams};
use kube::core::{GroupVersion, GroupVersionKind};
use kube::discovery::{ApiCapabilities, ApiResource, Scope};
use serde_yaml::Value;

use crate::kustomize;
use crate::manifests::{self, CRD_BASES};
use crate::progress::{self, Status};
use crate::project::{self, Project};

/// The field manager of everything opkit applies.
pub const FIELD_MANAGER: &str = "opkit";

/// Flags shared by the commands that talk to a cluster.
#[derive(Args, Clone)]
pub struct ClusterArgs {
    /// The kubeconfig to use (default: `$KUBECONFIG`, else `~/.kube/config`).
    #[arg(long, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,
    /// How long to wait for CRDs to be established and the manager to be available.
    #[arg(long, value_name = "DURATION", default_value = "2m", value_parser = crate::parse_duration)]
    pub timeout: Duration,
}

/// Flags of `opkit deploy`.
#[derive(Args)]
pub struct DeployArgs {
    /// The manager's image (sets the `manager` container's image; default: what
    /// config/manager/manager.yaml says).
    #[arg(long, value_name = "IMAGE")]
    image: Option<String>,
    #[command(flatten)]
    cluster: ClusterArgs,
}

/// A reachable cluster.
pub struct Cluster {
    /// A client for it.
    pub client: Client,
    /// Its URL, for messages.
    pub server: String,
    /// Its version (`/version`'s `gitVersion`).
    pub version: String,
    discovered: HashMap<GroupVersionKind, (ApiResource, ApiCapabilities)>,
}

/// Connects to the cluster of `kubeconfig` (or the environment's) and checks it answers.
pub async fn connect(kubeconfig: Option<&Path>) -> anyhow::Result<Cluster> {
    opkit::install_crypto_provider();
    let hint = "Start a control plane with `opkit up` (in another terminal; then `export \
                KUBECONFIG=.opkit/kubeconfig`), or use `opkit run --up`";
    let config = match kubeconfig {
        Some(path) => {
            let kc = kube::config::Kubeconfig::read_from(path)
                .with_context(|| format!("cannot read the kubeconfig {}", path.display()))?;
            kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
                .await
                .with_context(|| format!("the kubeconfig {} is not usable", path.display()))?
        }
        None => kube::Config::infer()
            .await
            .map_err(|e| anyhow::anyhow!("no cluster configured ({e}).\n{hint}"))?,
    };
    let server = config.cluster_url.to_string();
    let client = Client::try_from(config).context("cannot build a client for the cluster")?;
    let version =
        match tokio::time::timeout(Duration::from_secs(5), client.apiserver_version()).await {
            Ok(Ok(info)) => info.git_version,
            Ok(Err(e)) => bail!("cannot reach the cluster at {server}: {e}.\n{hint}"),
            Err(_) => bail!("the cluster at {server} did not answer within 5 s.\n{hint}"),
        };
    Ok(Cluster {
        client,
        server,
        version,
        discovered: HashMap::new(),
    })
}

fn gvk_of(object: &Value) -> anyhow::Result<GroupVersionKind> {
    let api_version = object
        .get("apiVersion")
        .and_then(Value::as_str)
        .context("an object has no apiVersion")?;
    let group_version: GroupVersion = api_version
        .parse()
        .with_context(|| format!("{api_version:?} is not a valid apiVersion"))?;
    Ok(group_version.with_kind(kustomize::kind(object)))
}

impl Cluster {
    /// Whether this is an opkit control plane (`opkit up`, `opkit run --up`), whose pods are
    /// simulated: no process behind a Service unless it is pointed at a local one.
    pub fn is_opkit(&self) -> bool {
        self.version.contains("-opkit.")
    }

    async fn resolve(
        &mut self,
        gvk: &GroupVersionKind,
    ) -> anyhow::Result<(ApiResource, ApiCapabilities)> {
        if let Some(found) = self.discovered.get(gvk) {
            return Ok(found.clone());
        }
        let found = kube::discovery::pinned_kind(&self.client, gvk)
            .await
            .with_context(|| {
                format!(
                    "the cluster at {} does not serve {}/{} {} (is its CRD installed? `opkit \
                     install`)",
                    self.server, gvk.group, gvk.version, gvk.kind
                )
            })?;
        self.discovered.insert(gvk.clone(), found.clone());
        Ok(found)
    }

    async fn api_for(&mut self, object: &Value) -> anyhow::Result<Api<DynamicObject>> {
        let gvk = gvk_of(object)?;
        let (resource, caps) = self.resolve(&gvk).await?;
        Ok(match caps.scope {
            Scope::Cluster => Api::all_with(self.client.clone(), &resource),
            Scope::Namespaced => {
                let ns = object
                    .get("metadata")
                    .and_then(|m| m.get("namespace"))
                    .and_then(Value::as_str)
                    .unwrap_or("default");
                Api::namespaced_with(self.client.clone(), ns, &resource)
            }
        })
    }

    /// Server-side applies `objects` in dependency order.
    pub async fn apply(&mut self, objects: &[Value]) -> anyhow::Result<()> {
        let mut ordered: Vec<&Value> = objects.iter().collect();
        ordered.sort_by_key(|o| kustomize::apply_rank(kustomize::kind(o)));
        let params = PatchParams::apply(FIELD_MANAGER).force();
        let mut crds_established = false;
        for object in ordered {
            // Objects after the CRDs may be of their kinds: the CRDs must be served first
            // (namespaces come before them).
            let rank = kustomize::apply_rank(kustomize::kind(object));
            if !crds_established && rank > kustomize::apply_rank("CustomResourceDefinition") {
                self.wait_for_crds(objects, Duration::from_secs(60)).await?;
                crds_established = true;
            }
            let api = self.api_for(object).await?;
            let name = kustomize::name(object);
            let body = serde_json::to_value(object)?;
            api.patch(name, &params, &Patch::Apply(&body))
                .await
                .with_context(|| format!("applying {} {name}", kustomize::kind(object)))?;
            eprintln!("    applied {} {name}", kustomize::kind(object));
        }
        Ok(())
    }

    /// Deletes `objects` in reverse dependency order; missing ones are fine.
    pub async fn delete(&mut self, objects: &[Value]) -> anyhow::Result<()> {
        let mut ordered: Vec<&Value> = objects.iter().collect();
        ordered.sort_by_key(|o| std::cmp::Reverse(kustomize::apply_rank(kustomize::kind(o))));
        for object in ordered {
            let name = kustomize::name(object);
            let kind = kustomize::kind(object);
            let api = match self.api_for(object).await {
                Ok(api) => api,
                // Its CRD is gone already, and with it every object of the kind.
                Err(e) => {
                    eprintln!("    {kind} {name} was not there ({e:#})");
                    continue;
                }
            };
            match api.delete(name, &DeleteParams::background()).await {
                Ok(_) => eprintln!("    deleted {kind} {name}"),
                Err(kube::Error::Api(s)) if s.code == 404 => {
                    eprintln!("    {kind} {name} was not there")
                }
                Err(e) => return Err(e).with_context(|| format!("deleting {kind} {name}")),
            }
        }
        Ok(())
    }

    /// Waits until every CRD among `objects` is Established.
    pub(crate) async fn wait_for_crds(
        &mut self,
        objects: &[Value],
        timeout: Duration,
    ) -> anyhow::Result<()> {
        let names: Vec<&str> = objects
            .iter()
            .filter(|o| kustomize::kind(o) == "CustomResourceDefinition")
            .map(kustomize::name)
            .collect();
        let api: Api<CustomResourceDefinition> = Api::all(self.client.clone());
        let mut status: Option<Status> = None;
        loop {
            let mut pending = Vec::new();
            for name in &names {
                let established = api.get_opt(name).await?.is_some_and(|crd| {
                    crd.status
                        .and_then(|s| s.conditions)
                        .unwrap_or_default()
                        .iter()
                        .any(|c| c.type_ == "Established" && c.status == "True")
                });
                if !established {
                    pending.push(*name);
                }
            }
            if pending.is_empty() {
                if let Some(s) = status {
                    s.finish("CRDs established");
                }
                return Ok(());
            }
            let s = status.get_or_insert_with(Status::new);
            if s.elapsed() > timeout {
                bail!(
                    "CRDs not established within {timeout:?}: {}",
                    pending.join(", ")
                );
            }
            s.update(&format!(
                "waiting for CRDs to be established: {}",
                pending.join(", ")
            ));
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Waits until the Deployment `namespace/name` has all its replicas updated and available.
    pub async fn wait_for_deployment(
        &self,
        namespace: &str,
        name: &str,
        timeout: Duration,
    ) -> anyhow::Result<()> {
        let api: Api<Deployment> = Api::namespaced(self.client.clone(), namespace);
        let mut status = Status::new();
        loop {
            let (ready, message) = match api.get_opt(name).await? {
                None => (false, "not created yet".to_string()),
                Some(d) => deployment_progress(&d),
            };
            if ready {
                status.finish(&format!("deployment {name}: {message}"));
                return Ok(());
            }
            if status.elapsed() > timeout {
                bail!(
                    "deployment {namespace}/{name} is not available after {timeout:?} ({message}).\n\
                     Look at it with `kubectl -n {namespace} describe deployment {name}` and \
                     `kubectl -n {namespace} logs deployment/{name}`"
                );
            }
            status.update(&format!("waiting for deployment {name}: {message}"));
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }
}

/// Whether a Deployment has finished rolling out, and a short description of where it is.
fn deployment_progress(d: &Deployment) -> (bool, String) {
    let want = d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
    let status = d.status.clone().unwrap_or_default();
    let observed = status.observed_generation.unwrap_or(0) >= d.metadata.generation.unwrap_or(0);
    let updated = status.updated_replicas.unwrap_or(0);
    let available = status.available_replicas.unwrap_or(0);
    let total = status.replicas.unwrap_or(0);
    let done = observed && updated >= want && available >= want && total <= want;
    (
        done,
        format!("{available}/{want} available, {updated} updated"),
    )
}

/// The CRD objects under `config/crd/bases` of the project at `root`.
fn crd_objects(root: &Path) -> anyhow::Result<Vec<Value>> {
    let objects = kustomize::build(&root.join("config/crd"))?;
    if objects.is_empty() {
        bail!(
            "{} lists no CRDs: add a kind with `opkit create api`, then `opkit generate \
             manifests`",
            root.join("config/crd/kustomization.yaml").display()
        );
    }
    Ok(objects)
}

/// Installs the project's CRDs on `cluster` and waits until they are established.
pub async fn install_crds(
    cluster: &mut Cluster,
    root: &Path,
    timeout: Duration,
) -> anyhow::Result<()> {
    apply_crds(cluster, &crd_objects(root)?, timeout).await
}

async fn apply_crds(
    cluster: &mut Cluster,
    objects: &[Value],
    timeout: Duration,
) -> anyhow::Result<()> {
    progress::step(format!(
        "installing CRDs from {CRD_BASES} on {}",
        cluster.server
    ));
    cluster.apply(objects).await?;
    cluster.wait_for_crds(objects, timeout).await
}

/// `opkit install`.
pub async fn install(args: ClusterArgs, cwd: &Path) -> anyhow::Result<()> {
    let root = project::find_root(cwd)?;
    let objects = crd_objects(&root)?;
    let mut cluster = connect(args.kubeconfig.as_deref()).await?;
    apply_crds(&mut cluster, &objects, args.timeout).await
}

/// `opkit uninstall`.
pub async fn uninstall(args: ClusterArgs, cwd: &Path) -> anyhow::Result<()> {
    let root = project::find_root(cwd)?;
    let objects = crd_objects(&root)?;
    let mut cluster = connect(args.kubeconfig.as_deref()).await?;
    progress::step(format!(
        "deleting the CRDs (and every object of their kinds) from {}",
        cluster.server
    ));
    cluster.delete(&objects).await
}

/// `opkit deploy`.
pub async fn deploy(args: DeployArgs, cwd: &Path) -> anyhow::Result<()> {
    let root = project::find_root(cwd)?;
    let project = Project::load(&root)?;
    let mut objects = kustomize::build(&root.join("config/default"))?;
    if let Some(image) = &args.image
        && kustomize::set_container_image(&mut objects, "manager", image) == 0
    {
        bail!("--image: config/default has no container named `manager` to set it on");
    }
    let mut cluster = connect(args.cluster.kubeconfig.as_deref()).await?;
    progress::step(format!(
        "applying config/default ({} objects) to {}",
        objects.len(),
        cluster.server
    ));
    cluster.apply(&objects).await?;
    let name = manifests::deployment_name(&project);
    let deployment = objects
        .iter()
        .find(|o| kustomize::kind(o) == "Deployment" && kustomize::name(o) == name)
        .or_else(|| objects.iter().find(|o| kustomize::kind(o) == "Deployment"));
    if let Some(d) = deployment {
        let namespace = d
            .get("metadata")
            .and_then(|m| m.get("namespace"))
            .and_then(Value::as_str)
            .unwrap_or("default")
            .to_string();
        let name = kustomize::name(d).to_string();
        progress::step(format!("waiting for the manager {namespace}/{name}"));
        cluster
            .wait_for_deployment(&namespace, &name, args.cluster.timeout)
            .await?;
    }
    if project.has_webhooks() && cluster.is_opkit() {
        eprintln!(
            "    note: pods on an opkit control plane are simulated, so nothing serves the webhook \
             Service {}/{}: writes of kinds with webhooks fail until an operator does. `opkit \
             run` against this plane serves them from a local process",
            project.namespace(),
            project.webhook_service()
        );
    }
    eprintln!("Deployed {}.", project.project_name);
    Ok(())
}

/// `opkit undeploy`.
pub async fn undeploy(args: ClusterArgs, cwd: &Path) -> anyhow::Result<()> {
    let root = project::find_root(cwd)?;
    let project = Project::load(&root)?;
    let objects = kustomize::build(&root.join("config/default"))?;
    let mut cluster = connect(args.kubeconfig.as_deref()).await?;
    progress::step(format!(
        "deleting config/default ({} objects) from {}",
        objects.len(),
        cluster.server
    ));
    cluster.delete(&objects).await?;
    eprintln!("Undeployed {}.", project.project_name);
    Ok(())
}
