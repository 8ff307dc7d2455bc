//! `opkit demo` (the `opkit-demo` program): the FlightTicket and Memcached operators at work on an embedded control plane.
//!
//! This is the README's first command, so it has to work on a fresh machine — no cluster,
//! no Docker, no kubectl — and it has to show in about a minute what opkit is for: operators
//! written in Rust reacting to real API changes. So it starts opkit's own control plane in this
//! process (in memory, on a loopback port, HTTPS with an admin kubeconfig), installs the two
//! example operators' CRDs, runs both operators in one [`opkit::Manager`], and plays a short
//! script against the API while a live view shows what is *really* stored (list calls every
//! quarter second), not what the script assumes: if an operator misbehaved, the view would
//! show it.
//!
//! The script (`demo/scenario.rs`) waits for each step's visible outcome before moving on, so
//! it works the same at any `--step-interval`; the view (`demo/view.rs`) is one 80-column
//! frame; the screen (`demo/screen.rs`) redraws it in place on a terminal and prints it only
//! when it changed (at most once a second) when stdout is a pipe, so CI logs stay readable.
//! After the script, everything keeps running until Ctrl-C so people can poke at it with
//! kubectl through the printed kubeconfig.

mod scenario;
mod screen;
mod view;

use std::net::SocketAddr;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;
use clap::Args;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, CustomResourceExt, ResourceExt};
use opkit_controlplane::{Config, ControlPlane, StartError};
use tokio::sync::watch;
use tokio::time::Instant;

use self::scenario::Caption;
use self::screen::Screen;
use self::view::{Header, Snapshot};
use opkit::signals::Signals;

/// A line on stderr; unlike `eprintln!`, never panics (the terminal may be gone).
macro_rules! note {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

/// How often the view reads the API (and redraws on a terminal).
const REFRESH: Duration = Duration::from_millis(250);
/// How long one read of the API may take before the view reports it instead of waiting.
const READ_TIMEOUT: Duration = Duration::from_secs(2);
/// How long shutdown lets running reconciles finish.
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(5);

/// Flags of `opkit demo`.
#[derive(Args)]
pub struct DemoArgs {
    /// Address of the embedded control plane (port 0 picks a free port).
    #[arg(long, value_name = "ADDR:PORT", default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// Where to write the admin kubeconfig (default: a temporary file removed on exit).
    #[arg(long, value_name = "PATH")]
    kubeconfig: Option<PathBuf>,
    /// Stop by itself after this long (e.g. `90s`, `2m`); default: run until Ctrl-C.
    #[arg(long, value_name = "DURATION", value_parser = opkit_apimachinery::duration::parse_flag)]
    duration: Option<Duration>,
    /// How long each step's outcome stays on screen before the next step (e.g. `500ms`).
    #[arg(long, value_name = "DURATION", default_value = "4s", value_parser = opkit_apimachinery::duration::parse_flag)]
    step_interval: Duration,
}

/// Runs the demo until Ctrl-C, SIGTERM or `--duration`.
pub async fn run(args: DemoArgs) -> anyhow::Result<()> {
    let mut signals = Signals::install()?.with_hangup()?;
    let files = DemoFiles::prepare(args.kubeconfig.clone())?;
    let timing = scenario::Timing::new(args.step_interval);
    let plane = tokio::select! {
        started = start_plane(args.listen, files.kubeconfig(), &timing) => started?,
        _ = signals.recv() => return Ok(()),
    };
    let (client, manager) = match start_operators(&plane, &timing).await {
        Ok(started) => started,
        Err(e) => {
            plane.shutdown().await;
            return Err(e);
        }
    };
    let header = Header {
        url: plane.url().to_string(),
        kubeconfig: files.kubeconfig().display().to_string(),
        started: Instant::now(),
    };
    let mut screen = Screen::new();
    let shown = live(&mut screen, &client, &header, &args, timing, &mut signals).await;
    // Back to the normal screen before the (up to a few seconds long) shutdown, so an error
    // or the summary is readable and the terminal never looks frozen.
    screen.leave();
    let uptime = view::clock(header.started.elapsed());
    match &shown {
        Ok(why) => note!("opkit demo: {why} after {uptime}; stopping the operators"),
        Err(_) => note!("opkit demo: stopping the operators"),
    }
    let stopped = tokio::select! {
        r = async {
            let r = manager.shutdown().await;
            plane.shutdown().await;
            r
        } => r,
        _ = signals.recv() => {
            note!("opkit demo: second signal; exiting at once");
            drop(files);
            std::process::exit(130);
        }
    };
    let kept = files
        .temp_dir
        .is_none()
        .then(|| files.kubeconfig().display().to_string());
    drop(files);
    match kept {
        None => note!(
            "opkit demo: stopped; the control plane kept everything in memory and its \
             kubeconfig is removed"
        ),
        Some(path) => note!("opkit demo: stopped; {path} is left in place, but its server is gone"),
    }
    shown?;
    stopped.context("stopping the operators")?;
    Ok(())
}

/// Why the live view ended normally.
enum Stop {
    Signal,
    Duration,
}

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Stop::Signal => "stop requested",
            Stop::Duration => "--duration reached",
        })
    }
}

/// Plays the scenario and shows the view until a signal or `--duration`.
async fn live(
    screen: &mut Screen,
    client: &Client,
    header: &Header,
    args: &DemoArgs,
    timing: scenario::Timing,
    signals: &mut Signals,
) -> anyhow::Result<Stop> {
    let (captions, current) = watch::channel(Caption::starting());
    // Polled here rather than spawned: dropping it (on every way out) stops the script.
    let script = scenario::play(client.clone(), captions, timing);
    tokio::pin!(script);
    let mut script_done = false;
    let stop_at = args.duration.map(|d| header.started + d);
    let mut tick = tokio::time::interval(REFRESH);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut snapshot = Snapshot::default();
    screen.enter()?;
    let stop = loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = signals.recv() => break Stop::Signal,
            _ = sleep_until(stop_at) => break Stop::Duration,
            () = &mut script, if !script_done => {
                script_done = true;
                continue;
            }
        }
        match tokio::time::timeout(READ_TIMEOUT, view::read(client)).await {
            Ok(Ok(read)) => snapshot = read,
            Ok(Err(e)) => snapshot.error = Some(format!("reading the API failed: {e}")),
            Err(_) => {
                snapshot.error = Some(format!(
                    "the API did not answer within {}s",
                    READ_TIMEOUT.as_secs()
                ))
            }
        }
        let caption = current.borrow().clone();
        screen.show(header, &snapshot, &caption)?;
    };
    let caption = current.borrow().clone();
    screen.finish(header, &snapshot, &caption)?;
    Ok(stop)
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

async fn start_plane(
    listen: SocketAddr,
    kubeconfig: &Path,
    timing: &scenario::Timing,
) -> anyhow::Result<ControlPlane> {
    let config = Config {
        listen,
        kubeconfig: Some(kubeconfig.to_path_buf()),
        controllers: opkit_controlplane::controllers::Settings {
            pod_ready_delay: timing.pod_ready_delay,
            ..opkit_controlplane::controllers::Settings::default()
        },
        ..Config::ephemeral()
    };
    ControlPlane::start(config).await.map_err(|e| match e {
        StartError::Listen { addr, source } if source.kind() == std::io::ErrorKind::AddrInUse => {
            anyhow::anyhow!(
                "cannot listen on {addr}: the address is in use; pass a free one, e.g. \
                 `--listen 127.0.0.1:0` (any free port)"
            )
        }
        e => anyhow::Error::new(e).context("starting the embedded control plane"),
    })
}

/// A client for `plane`, the CRDs installed and Established, both operators running.
async fn start_operators(
    plane: &ControlPlane,
    timing: &scenario::Timing,
) -> anyhow::Result<(Client, opkit::Running)> {
    opkit::install_crypto_provider();
    let kubeconfig = Kubeconfig::from_yaml(plane.kubeconfig()).context("reading the kubeconfig")?;
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .context("loading the kubeconfig")?;
    let client = Client::try_from(config).context("building a client")?;
    for crd in [
        flightticket::FlightTicket::crd(),
        memcached::Memcached::crd(),
    ] {
        install_crd(&client, crd).await?;
    }
    let mut manager = opkit::Manager::builder()
        .identity("opkit-demo")
        .shutdown_timeout(SHUTDOWN_TIMEOUT)
        .build();
    manager.add(flightticket::controller());
    manager.add(memcached::controller(memcached::Settings {
        progress_deadline_seconds: Some(timing.progress_deadline_seconds),
        ..memcached::Settings::default()
    }));
    let running = manager
        .start(client.clone())
        .await
        .context("starting the operators")?;
    Ok((client, running))
}

/// Creates `crd` and waits (at most 10 s) until it is Established, as `TestEnv` does.
async fn install_crd(client: &Client, crd: CustomResourceDefinition) -> anyhow::Result<()> {
    let name = crd.name_any();
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let mut current = Some(
        api.create(&PostParams::default(), &crd)
            .await
            .with_context(|| format!("installing the CRD {name}"))?,
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let established = current
            .as_ref()
            .and_then(|c| c.status.as_ref())
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|cs| {
                cs.iter()
                    .any(|c| c.type_ == "Established" && c.status == "True")
            });
        if established {
            return Ok(());
        }
        if Instant::now() > deadline {
            anyhow::bail!("the CRD {name} did not become Established within 10 s");
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
        current = api
            .get_opt(&name)
            .await
            .with_context(|| format!("reading the CRD {name}"))?;
    }
}

/// Where the kubeconfig goes; a temporary directory of ours is removed when this is dropped.
struct DemoFiles {
    kubeconfig: PathBuf,
    temp_dir: Option<PathBuf>,
}

impl DemoFiles {
    /// `given`, or `$TMPDIR/opkit-demo-<pid>/kubeconfig` in a fresh directory only this user
    /// can read (the kubeconfig holds the admin token).
    fn prepare(given: Option<PathBuf>) -> anyhow::Result<DemoFiles> {
        if let Some(path) = given {
            return Ok(DemoFiles {
                kubeconfig: path,
                temp_dir: None,
            });
        }
        let dir = std::env::temp_dir().join(format!("opkit-demo-{}", std::process::id()));
        // Left behind by an earlier demo with the same pid that was killed.
        if dir.symlink_metadata().is_ok() {
            std::fs::remove_dir_all(&dir)
                .with_context(|| format!("removing the stale {}", dir.display()))?;
        }
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&dir)
            .with_context(|| format!("creating {}", dir.display()))?;
        Ok(DemoFiles {
            kubeconfig: dir.join("kubeconfig"),
            temp_dir: Some(dir),
        })
    }

    fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }
}

impl Drop for DemoFiles {
    fn drop(&mut self) {
        if let Some(dir) = &self.temp_dir
            && let Err(e) = std::fs::remove_dir_all(dir)
            && e.kind() != std::io::ErrorKind::NotFound
        {
            note!("opkit demo: cannot remove {}: {e}", dir.display());
        }
    }
}
