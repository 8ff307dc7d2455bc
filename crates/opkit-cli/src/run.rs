//! `opkit run [--up]`: generate the manifests, build the operator, install its CRDs and run it
//! against a cluster — the current kubeconfig's, or with `--up` an embedded control plane
//! started here (its data in the project's `.opkit/`, so objects survive restarts).
//!
//! kubebuilder's `make run` is `make manifests generate fmt vet install` and `go run`; this is
//! the same loop in one command. Ctrl-C reaches the operator (same process group) and it shuts
//! down gracefully; SIGTERM sent to opkit is passed on.

use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;

use crate::cluster::{self, ClusterArgs};
use crate::project::{self, Plugin, Project};
use crate::{manifests, progress, webhook_manifests};
use opkit::signals::{Signals, Stop};
use opkit_testenv::webhooks::LocalWebhooks;

/// Flags of `opkit run`.
#[derive(Args)]
pub struct RunArgs {
    /// Start an embedded control plane first (data in the project's `.opkit/`).
    #[arg(long)]
    up: bool,
    /// With `--up`: the address it listens on.
    #[arg(
        long,
        value_name = "ADDR:PORT",
        default_value = "127.0.0.1:6443",
        requires = "up"
    )]
    listen: SocketAddr,
    #[command(flatten)]
    cluster: ClusterArgs,
    /// Flags for the operator binary (after `--`), e.g. `-- --health-probe-bind-address 0`.
    #[arg(last = true, value_name = "OPERATOR FLAGS")]
    operator_args: Vec<OsString>,
}

/// `opkit run`.
pub async fn run(args: RunArgs, cwd: &Path) -> anyhow::Result<ExitCode> {
    let root = project::find_root(cwd)?;
    let project = Project::load(&root)?;
    let signals = Signals::install()?;

    let mut plane = None;
    let kubeconfig: Option<PathBuf> = if args.up {
        let data_dir = root.join(".opkit");
        progress::step(format!(
            "starting the embedded control plane ({})",
            data_dir.display()
        ));
        let started = opkit_controlplane::ControlPlane::start(opkit_controlplane::Config {
            data_dir: Some(data_dir.clone()),
            listen: args.listen,
            ..opkit_controlplane::Config::default()
        })
        .await
        .with_context(|| {
            format!(
                "cannot start the control plane on {}; pass --listen 127.0.0.1:0 for a free port",
                args.listen
            )
        })?;
        let path = started
            .kubeconfig_path()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| data_dir.join("kubeconfig"));
        eprintln!("    control plane at {}", started.url());
        eprintln!("    kubectl: export KUBECONFIG={}", path.display());
        plane = Some(started);
        Some(path)
    } else {
        args.cluster.kubeconfig.clone()
    };

    let outcome = run_operator(&args, &root, &project, kubeconfig.as_deref(), signals).await;
    if let Some(plane) = plane {
        progress::step("stopping the control plane");
        plane.shutdown().await;
    }
    outcome
}

async fn run_operator(
    args: &RunArgs,
    root: &Path,
    project: &Project,
    kubeconfig: Option<&Path>,
    mut signals: Signals,
) -> anyhow::Result<ExitCode> {
    let mut cluster = cluster::connect(kubeconfig).await?;
    match project.plugin {
        Plugin::Helm => {
            let generic = Generic {
                what: "the chart operator",
                command: "helm-operator",
                add_kind: "`opkit create api --group G --version V --kind K` or `--helm-chart \
                           DIR|TGZ`",
                generate: crate::helm_manifests::generate,
            };
            let watches_file = root.join(crate::helm_scaffold::WATCHES_FILE);
            let start = |client| async move {
                let options = opkit_chart_operator::OperatorOptions {
                    watches_file,
                    ..opkit_chart_operator::OperatorOptions::default()
                };
                opkit_chart_operator::start(client, options).await
            };
            return run_generic(args, root, project, &mut cluster, signals, generic, start).await;
        }
        Plugin::Ansible => {
            let generic = Generic {
                what: "the Ansible operator",
                command: "ansible-operator",
                add_kind: "`opkit create api --group G --version V --kind K --generate-role`",
                generate: crate::ansible_manifests::generate,
            };
            let watches_file = root.join(crate::ansible_scaffold::WATCHES_FILE);
            // The runs reach the cluster through the operator's owner-reference proxy, which
            // uses this client (and so the run's kubeconfig).
            let start = |client| async move {
                let options = opkit_ansible::OperatorOptions {
                    watches_file,
                    ..opkit_ansible::OperatorOptions::default()
                };
                opkit_ansible::start(client, options).await
            };
            return run_generic(args, root, project, &mut cluster, signals, generic, start).await;
        }
        Plugin::Rust => {}
    }
    let binary = manifests::generate_in(root, project)?;
    if project.resources.is_empty() {
        eprintln!("    note: the project has no kinds yet; add one with `opkit create api`");
    } else {
        cluster::install_crds(&mut cluster, root, args.cluster.timeout).await?;
    }
    let mut command = tokio::process::Command::new(&binary);
    command
        .arg("run")
        .args(&args.operator_args)
        .current_dir(root);
    if project.has_webhooks() {
        if cluster.is_opkit() {
            let port = match webhook_port_flag(&args.operator_args)? {
                Some(port) => port,
                None => {
                    let port = free_port()?;
                    command.arg("--webhook-port").arg(port.to_string());
                    port
                }
            };
            serve_webhooks_locally(&cluster, root, project, port).await?;
        } else {
            eprintln!(
                "    note: the webhooks are served on --webhook-port (9443); this cluster's API \
                 server reaches them through the Service {}/{} once deployed",
                project.namespace(),
                project.webhook_service()
            );
        }
    }
    progress::step(format!(
        "running {} against {} (Ctrl-C stops it)",
        project.project_name, cluster.server
    ));
    if let Some(path) = kubeconfig {
        command.env("KUBECONFIG", path);
    }
    let mut child = command
        .spawn()
        .with_context(|| format!("cannot start {}", binary.display()))?;
    let status = tokio::select! {
        status = child.wait() => status?,
        signal = signals.recv() => {
            // Ctrl-C reached the operator too (same process group); SIGTERM was for opkit
            // alone, so it is passed on.
            if signal == Stop::Terminate
                && let Some(pid) = child.id()
            {
                // SAFETY: kill(2) on a child we spawned and have not reaped; no memory involved.
                unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) };
            }
            child.wait().await?
        }
    };
    Ok(match status.code() {
        Some(0) => ExitCode::SUCCESS,
        Some(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        // Stopped by a signal (Ctrl-C reaches it directly): a normal end of a run.
        None => ExitCode::SUCCESS,
    })
}

/// What differs between the generic operators (chart, Ansible) a `run` starts.
struct Generic {
    /// The operator, as messages name it (`the chart operator`).
    what: &'static str,
    /// Its command in the image (`helm-operator`).
    command: &'static str,
    /// How a kind is added to the project.
    add_kind: &'static str,
    /// Writes the project's manifests.
    generate: fn(&Path, &Project) -> anyhow::Result<()>,
}

/// A helm or ansible project's `run`: its manifests, its CRDs installed, and opkit's generic
/// operator on `watches.yaml` in this process (what the image runs as `opkit COMMAND run`),
/// until Ctrl-C or SIGTERM.
async fn run_generic<E, F>(
    args: &RunArgs,
    root: &Path,
    project: &Project,
    cluster: &mut cluster::Cluster,
    signals: Signals,
    generic: Generic,
    start: impl FnOnce(kube::Client) -> F,
) -> anyhow::Result<ExitCode>
where
    F: std::future::Future<Output = Result<opkit::Running, E>>,
    E: std::error::Error + Send + Sync + 'static,
{
    let Generic {
        what,
        command,
        add_kind,
        generate,
    } = generic;
    if !args.operator_args.is_empty() {
        anyhow::bail!(
            "flags after `--` are for a Rust operator's binary; {what} of a {} project runs in \
             this process (`opkit {command} run --help` lists its flags for the image)",
            project.plugin.name()
        );
    }
    generate(root, project)?;
    if project.resources.is_empty() {
        anyhow::bail!(
            "the project has no kinds yet, so {what} has nothing to watch; add one with {add_kind}"
        );
    }
    cluster::install_crds(cluster, root, args.cluster.timeout).await?;
    progress::step(format!(
        "running {} against {} (Ctrl-C stops it)",
        project.project_name, cluster.server
    ));
    let running = start(cluster.client.clone())
        .await
        .with_context(|| format!("starting {what}"))?;
    serve_until_stopped(running, signals, what).await
}

/// Waits for an operator running in this process to stop, and stops it gracefully on Ctrl-C or
/// SIGTERM.
async fn serve_until_stopped(
    running: opkit::Running,
    mut signals: Signals,
    what: &str,
) -> anyhow::Result<ExitCode> {
    let stop = running.shutdown_handle();
    let done = running.wait();
    tokio::pin!(done);
    tokio::select! {
        result = &mut done => result.with_context(|| format!("{what} stopped"))?,
        _ = signals.recv() => {
            stop.shutdown();
            done.await.with_context(|| format!("stopping {what}"))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Applies the project's webhook configurations and points its webhook Service at
/// `127.0.0.1:port`, where the operator about to start serves them (an opkit plane's pods are
/// simulated, so the Service's own selector reaches nothing).
pub(crate) async fn serve_webhooks_locally(
    cluster: &cluster::Cluster,
    root: &Path,
    project: &Project,
    port: u16,
) -> anyhow::Result<()> {
    progress::step(format!(
        "serving the webhooks from this process: Service {}/{} -> 127.0.0.1:{port}",
        project.namespace(),
        project.webhook_service()
    ));
    let webhooks = project_webhooks(root, project)?;
    webhooks
        .install(&cluster.client)
        .await
        .context("applying the webhook configurations")?;
    webhooks
        .route_to(&cluster.client, port)
        .await
        .context("pointing the webhook Service at the operator")?;
    Ok(())
}

/// The project's webhooks as it deploys them: the configurations of
/// `config/webhook/manifests.yaml` (none when it is missing) and the Services they call, the
/// project's webhook Service among them (a conversion webhook may be the only one to name it).
pub(crate) fn project_webhooks(root: &Path, project: &Project) -> anyhow::Result<LocalWebhooks> {
    let path = root
        .join(webhook_manifests::WEBHOOK_DIR)
        .join("manifests.yaml");
    let configurations = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    Ok(LocalWebhooks::from_yaml(&configurations)
        .with_context(|| format!("{} is not usable", path.display()))?
        .with_service(&project.namespace(), &project.webhook_service()))
}

/// The operator's own `--webhook-port` among the flags after `--`, if given.
fn webhook_port_flag(flags: &[OsString]) -> anyhow::Result<Option<u16>> {
    let flags: Vec<String> = flags
        .iter()
        .map(|f| f.to_string_lossy().into_owned())
        .collect();
    for (i, flag) in flags.iter().enumerate() {
        let value = match flag.strip_prefix("--webhook-port") {
            Some("") => flags.get(i + 1).cloned(),
            Some(rest) if rest.starts_with('=') => Some(rest[1..].to_string()),
            _ => continue,
        };
        let value = value.unwrap_or_default();
        return value
            .parse()
            .map(Some)
            .map_err(|_| anyhow::anyhow!("--webhook-port {value:?} is not a port number"));
    }
    Ok(None)
}

/// A port free on the loopback interface now, for the operator's webhook server.
pub(crate) fn free_port() -> anyhow::Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")
        .context("cannot find a free port for the webhook server")?;
    Ok(listener.local_addr()?.port())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_explicit_webhook_port_among_the_operator_flags_is_kept() {
        let flags = |f: &[&str]| f.iter().map(OsString::from).collect::<Vec<_>>();
        assert_eq!(
            webhook_port_flag(&flags(&["--webhook-port", "9000"])).unwrap(),
            Some(9000)
        );
        assert_eq!(
            webhook_port_flag(&flags(&["-v", "--webhook-port=9001"])).unwrap(),
            Some(9001)
        );
        assert_eq!(
            webhook_port_flag(&flags(&["--health-probe-bind-address", "0"])).unwrap(),
            None
        );
        assert!(webhook_port_flag(&flags(&["--webhook-port", "x"])).is_err());
    }
}
