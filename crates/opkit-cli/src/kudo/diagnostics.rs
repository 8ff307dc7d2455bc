//! `kubectl kudo diagnostics collect --instance X`: everything needed to understand an
//! instance's state, written into a directory tree laid out as KUDO's:
//!
//! ```text
//! diag/version.yaml, diag/settings.yaml
//! diag/operator_<op>/<op>.yaml
//! diag/operator_<op>/operatorversion_<ov>/<ov>.yaml
//! diag/operator_<op>/instance_<i>/<i>.yaml
//! diag/operator_<op>/instance_<i>/<kind>list.yaml        (services, deployments, ...)
//! diag/operator_<op>/instance_<i>/eventlist.yaml         (opkit: the events about them)
//! diag/operator_<op>/instance_<i>/pod_<p>/<p>.yaml, <container>.log.gz
//! diag/operator_<op>/operator_<child-op>/...             (KudoOperator dependencies)
//! diag/kudo/...                                          (the manager's pods, logs)
//! ```
//!
//! As in KUDO, a part that cannot be read is written as `<name>.err` and the others are still
//! collected; the command then fails listing those errors — except a container log that
//! cannot be read (the embedded plane serves no `pods/log`): its `.log.err` is written and
//! a warning printed, and the command succeeds. Objects are selected by the
//! labels the manager puts on what it creates (`kudo.dev/operator`, `kudo.dev/instance`).

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::bail;
use clap::Args;
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::{ApiResource, DynamicObject, ListParams, LogParams};
use kube::core::GroupVersionKind;
use opkit_kudo::install::OPERATOR_LABEL;
use opkit_kudo::{Instance, Operator, OperatorVersion};
use serde_json::{Value, json};

use super::{Global, Kudo};

/// The label of the instance an object belongs to.
const INSTANCE_LABEL: &str = "kudo.dev/instance";
/// The manager's namespace and pods' label, as `init` installs it.
const MANAGER_NAMESPACE: &str = "kudo-system";
const MANAGER_SELECTOR: &str = "app=kudo-manager";

/// The flags of `diagnostics collect`.
#[derive(Args)]
pub(crate) struct CollectArgs {
    /// The instance name.
    #[arg(long)]
    instance: String,
    /// The output directory (it must not exist).
    #[arg(short = 'O', long, default_value = "diag")]
    output_directory: PathBuf,
    /// Only logs newer than this (e.g. 5s, 2m, 3h; default: all logs).
    #[arg(long, value_parser = crate::parse_duration)]
    log_since: Option<Duration>,
}

/// The kinds collected for an instance (KUDO's list), each as `<kind>list.yaml`.
const OWNED: &[(&str, &str, &str, &str, bool)] = &[
    // group, version, kind, plural, namespaced
    ("", "v1", "Service", "services", true),
    ("apps", "v1", "Deployment", "deployments", true),
    ("apps", "v1", "StatefulSet", "statefulsets", true),
    ("apps", "v1", "ReplicaSet", "replicasets", true),
    ("", "v1", "ServiceAccount", "serviceaccounts", true),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRoleBinding",
        "clusterrolebindings",
        false,
    ),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "RoleBinding",
        "rolebindings",
        true,
    ),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRole",
        "clusterroles",
        false,
    ),
    ("rbac.authorization.k8s.io", "v1", "Role", "roles", true),
];

/// Writes files, keeping going after an error (KUDO's non-failing printer).
struct Printer {
    errors: Vec<String>,
    warnings: Vec<String>,
}

impl Printer {
    fn write(&mut self, dir: &Path, name: &str, bytes: &[u8]) {
        let path = dir.join(name);
        let result = std::fs::create_dir_all(dir).and_then(|()| std::fs::write(&path, bytes));
        if let Err(e) = result {
            self.errors
                .push(format!("failed to write {}: {e}", path.display()));
        }
    }

    fn yaml(&mut self, dir: &Path, name: &str, value: &Value) {
        match serde_yaml::to_string(value) {
            Ok(text) => self.write(dir, &format!("{name}.yaml"), text.as_bytes()),
            Err(e) => self.errors.push(format!("{name}: {e}")),
        }
    }

    /// `<name>.err` holding the error, and the error remembered.
    fn error(&mut self, dir: &Path, name: &str, error: &anyhow::Error) {
        let text = format!("{error:#}");
        self.write(dir, &format!("{name}.err"), text.as_bytes());
        self.errors.push(text);
    }

    /// An object in `<parent>/<kind>_<name>/<name>.yaml`.
    fn object(&mut self, parent: &Path, kind: &str, value: &Value) -> PathBuf {
        let name = value["metadata"]["name"].as_str().unwrap_or_default();
        let dir = parent.join(format!("{}_{name}", kind.to_lowercase()));
        self.yaml(&dir, name, value);
        dir
    }
}

fn resource(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    let mut ar = ApiResource::from_gvk(&GroupVersionKind::gvk(group, version, kind));
    ar.plural = plural.to_string();
    ar
}

/// A typed object as YAML-ready JSON with its apiVersion and kind.
fn typed<K: kube::Resource<DynamicType = ()> + serde::Serialize>(obj: &K) -> Value {
    let mut v = serde_json::to_value(obj).unwrap_or(Value::Null);
    v["apiVersion"] = K::api_version(&()).into();
    v["kind"] = K::kind(&()).into();
    v
}

/// The objects of `ar` matching `selector`, as a `<Kind>List` with each item typed.
async fn list(
    client: &kube::Client,
    ar: &ApiResource,
    namespace: Option<&str>,
    selector: &str,
) -> anyhow::Result<(Value, Vec<Value>)> {
    let api: Api<DynamicObject> = match namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, ar),
        None => Api::all_with(client.clone(), ar),
    };
    let found = api.list(&ListParams::default().labels(selector)).await?;
    let items: Vec<Value> = found
        .items
        .into_iter()
        .map(|o| {
            let mut v = serde_json::to_value(o).unwrap_or(Value::Null);
            v["apiVersion"] = ar.api_version.clone().into();
            v["kind"] = ar.kind.clone().into();
            v
        })
        .collect();
    let list = json!({"apiVersion": "v1", "kind": format!("{}List", ar.kind), "items": items});
    Ok((list, items))
}

/// Each pod in `pod_<name>/<name>.yaml`, with each container's log gzip'd beside it.
async fn pods_and_logs(
    p: &mut Printer,
    client: &kube::Client,
    namespace: &str,
    selector: &str,
    dir: &Path,
    since: Option<Duration>,
) {
    let ar = ApiResource::erase::<Pod>(&());
    let pods = match list(client, &ar, Some(namespace), selector).await {
        Ok((_, pods)) => pods,
        Err(e) => return p.error(dir, "pod", &e),
    };
    let api: Api<Pod> = Api::namespaced(client.clone(), namespace);
    for pod in pods {
        let pod_dir = p.object(dir, "Pod", &pod);
        let name = pod["metadata"]["name"].as_str().unwrap_or_default();
        let containers = pod["spec"]["containers"].as_array().cloned();
        for c in containers.unwrap_or_default() {
            let container = c["name"].as_str().unwrap_or_default();
            let params = LogParams {
                container: Some(container.to_string()),
                since_seconds: since.map(|d| d.as_secs().max(1) as i64),
                ..LogParams::default()
            };
            match api.logs(name, &params).await {
                Ok(text) => match gzip(text.as_bytes()) {
                    Ok(bytes) => p.write(&pod_dir, &format!("{container}.log.gz"), &bytes),
                    Err(e) => p.error(
                        &pod_dir,
                        &format!("{container}.log"),
                        &anyhow::Error::from(e),
                    ),
                },
                Err(e) => {
                    let text =
                        format!("failed to get the log of {namespace}/{name} {container}: {e}");
                    p.write(&pod_dir, &format!("{container}.log.err"), text.as_bytes());
                    p.warnings.push(text);
                }
            }
        }
    }
}

fn gzip(bytes: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(bytes)?;
    encoder.finish()
}

/// The events of `namespace` about any of `objects` (by kind and name).
async fn events(
    client: &kube::Client,
    namespace: &str,
    objects: &[(String, String)],
) -> anyhow::Result<Value> {
    let ar = resource("events.k8s.io", "v1", "Event", "events");
    let (_, all) = list(client, &ar, Some(namespace), "").await?;
    let items: Vec<Value> = all
        .into_iter()
        .filter(|e| {
            let r = &e["regarding"];
            objects.iter().any(|(kind, name)| {
                r["kind"].as_str() == Some(kind) && r["name"].as_str() == Some(name)
            })
        })
        .collect();
    Ok(json!({"apiVersion": "v1", "kind": "EventList", "items": items}))
}

/// One instance: its operator, operator version, owned objects, events, pods and logs under
/// `root`; then its dependencies' instances nested in its operator's directory.
async fn instance(
    p: &mut Printer,
    kudo: &Kudo,
    name: &str,
    root: &Path,
    since: Option<Duration>,
) -> anyhow::Result<()> {
    let client = &kudo.client;
    let ns = &kudo.namespace;
    let inst = match kudo.instance(name).await {
        Ok(i) => i,
        Err(e) => {
            p.error(root, "instance", &e);
            return Err(e);
        }
    };
    let ov = match kudo.operator_version_of(&inst).await {
        Ok(ov) => ov,
        Err(e) => {
            p.error(root, "operatorversion", &e);
            return Err(e);
        }
    };
    let op_name = ov.spec.operator.name.clone().unwrap_or_default();
    let op_dir = root.join(format!("operator_{op_name}"));
    match kudo.operators().get(&op_name).await {
        Ok(op) => {
            p.yaml(&op_dir, &op_name, &typed::<Operator>(&op));
        }
        Err(e) => p.error(root, "operator", &anyhow::Error::from(e)),
    }
    p.object(&op_dir, "OperatorVersion", &typed::<OperatorVersion>(&ov));
    let inst_dir = p.object(&op_dir, "Instance", &typed::<Instance>(&inst));

    let selector = format!("{OPERATOR_LABEL}={op_name},{INSTANCE_LABEL}={name}");
    let mut about = vec![("Instance".to_string(), name.to_string())];
    pods_and_logs(p, client, ns, &selector, &inst_dir, since).await;
    for &(group, version, kind, plural, namespaced) in OWNED {
        let ar = resource(group, version, kind, plural);
        let scope = namespaced.then_some(ns.as_str());
        match list(client, &ar, scope, &selector).await {
            Ok((l, items)) => {
                about.extend(items.iter().map(|i| {
                    let n = i["metadata"]["name"].as_str().unwrap_or_default();
                    (kind.to_string(), n.to_string())
                }));
                p.yaml(&inst_dir, &format!("{}list", kind.to_lowercase()), &l);
            }
            Err(e) => p.error(&inst_dir, &kind.to_lowercase(), &e),
        }
    }
    let pods = list(client, &ApiResource::erase::<Pod>(&()), Some(ns), &selector).await;
    for pod in pods.map(|(_, items)| items).unwrap_or_default() {
        let n = pod["metadata"]["name"].as_str().unwrap_or_default();
        about.push(("Pod".to_string(), n.to_string()));
    }
    match events(client, ns, &about).await {
        Ok(l) => p.yaml(&inst_dir, "eventlist", &l),
        Err(e) => p.error(&inst_dir, "event", &e),
    }

    // Dependencies: the instances this one owns (KudoOperator tasks).
    let children = kudo.instances().list(&ListParams::default()).await;
    let children = match children {
        Ok(l) => l.items,
        Err(e) => {
            p.error(&inst_dir, "dependencies", &anyhow::Error::from(e));
            return Ok(());
        }
    };
    let uid = inst.metadata.uid.clone().unwrap_or_default();
    for child in children {
        let owned = child
            .metadata
            .owner_references
            .iter()
            .flatten()
            .any(|o| o.uid == uid);
        if owned && let Some(child_name) = &child.metadata.name {
            Box::pin(instance(p, kudo, child_name, &op_dir, since)).await?;
        }
    }
    Ok(())
}

/// `diagnostics collect`.
pub(crate) async fn collect(args: CollectArgs, g: &Global) -> anyhow::Result<()> {
    let dir = &args.output_directory;
    if dir.exists() {
        bail!("target directory {} already exists", dir.display());
    }
    let kudo = Kudo::connect(g).await?;
    let mut p = Printer {
        errors: Vec::new(),
        warnings: Vec::new(),
    };
    p.yaml(
        dir,
        "version",
        &json!({"gitVersion": env!("CARGO_PKG_VERSION"), "compiler": "rustc",
                "platform": format!("{}/{}", std::env::consts::OS, std::env::consts::ARCH)}),
    );
    p.yaml(
        dir,
        "settings",
        &json!({"kubeconfig": g.kubeconfig.as_ref().map(|k| k.display().to_string()),
                "namespace": kudo.namespace, "instance": args.instance}),
    );
    let _ = instance(&mut p, &kudo, &args.instance, dir, args.log_since).await;
    let manager_dir = dir.join("kudo");
    pods_and_logs(
        &mut p,
        &kudo.client,
        MANAGER_NAMESPACE,
        MANAGER_SELECTOR,
        &manager_dir,
        args.log_since,
    )
    .await;
    for (group, version, kind, plural) in [
        ("", "v1", "Service", "services"),
        ("apps", "v1", "Deployment", "deployments"),
        ("", "v1", "ServiceAccount", "serviceaccounts"),
    ] {
        let ar = resource(group, version, kind, plural);
        match list(&kudo.client, &ar, Some(MANAGER_NAMESPACE), MANAGER_SELECTOR).await {
            Ok((l, _)) => p.yaml(&manager_dir, &format!("{}list", kind.to_lowercase()), &l),
            Err(e) => p.error(&manager_dir, &kind.to_lowercase(), &e),
        }
    }
    for w in &p.warnings {
        eprintln!("warning: {w}");
    }
    if !p.errors.is_empty() {
        bail!("{}", p.errors.join("\n"));
    }
    println!(
        "diagnostics of instance {} written to {}",
        args.instance,
        dir.display()
    );
    Ok(())
}
