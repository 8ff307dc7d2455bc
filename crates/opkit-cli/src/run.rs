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
use crate::project::{self, Project};
use crate::{manifests, progress};
use opkit::signals::{Signals, Stop};

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
    let binary = manifests::generate_in(root, project)?;
    if project.resources.is_empty() {
        eprintln!("    note: the project has no kinds yet; add one with `opkit create api`");
    } else {
        cluster::install_crds(&mut cluster, root, args.cluster.timeout).await?;
    }
    progress::step(format!(
        "running {} against {} (Ctrl-C stops it)",
        project.project_name, cluster.server
    ));
    let mut command = tokio::process::Command::new(&binary);
    command
        .arg("run")
        .args(&args.operator_args)
        .current_dir(root);
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
