//! The control plane under test: an `opkit up` process (the default) or, as a fallback and for
//! the smoke test, an in-process `ControlPlane` on its own tokio runtime and thread.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use kube::config::{KubeConfigOptions, Kubeconfig};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, ChildStdout, Command};

/// How to run the server for the throughput, latency and memory scenarios.
#[derive(Debug, Clone)]
pub enum ServerMode {
    /// `opkit up --data-dir <fresh temp dir> --listen 127.0.0.1:0` from this binary.
    Process {
        /// The `opkit` binary.
        bin: PathBuf,
    },
    /// `ControlPlane::start` on a dedicated runtime and thread in this process.
    InProcess {
        /// Store on disk in a fresh temp dir (`true`) or in memory.
        durable: bool,
    },
}

impl ServerMode {
    /// A short description for the report.
    pub fn describe(&self) -> String {
        match self {
            ServerMode::Process { bin } => format!(
                "separate `opkit up --data-dir <tmp>` process ({})",
                bin.display()
            ),
            ServerMode::InProcess { durable: true } => {
                "in-process ControlPlane, durable store in a temp dir".into()
            }
            ServerMode::InProcess { durable: false } => {
                "in-process ControlPlane, ephemeral (in-memory) store".into()
            }
        }
    }
}

/// A running control plane to benchmark.
pub struct Server {
    kind: Kind,
    kubeconfig: String,
    dir: Option<tempfile::TempDir>,
}

enum Kind {
    Process(Box<UpProcess>),
    InProcess {
        stop: Option<tokio::sync::oneshot::Sender<()>>,
        thread: Option<std::thread::JoinHandle<()>>,
    },
}

impl Server {
    /// Starts a fresh server (fresh data dir when durable) and waits until it is ready.
    pub async fn start(mode: &ServerMode) -> anyhow::Result<Server> {
        install_crypto_provider();
        match mode {
            ServerMode::Process { bin } => {
                let dir = tempfile::Builder::new().prefix("opkit-bench-").tempdir()?;
                let data_dir = dir.path().join("data");
                let args = [
                    "up",
                    "--data-dir",
                    path_str(&data_dir)?,
                    "--listen",
                    "127.0.0.1:0",
                ];
                let up = UpProcess::spawn(bin, &args).await?;
                let kubeconfig = std::fs::read_to_string(&up.kubeconfig_path)
                    .with_context(|| format!("reading {}", up.kubeconfig_path.display()))?;
                let server = Server {
                    kind: Kind::Process(Box::new(up)),
                    kubeconfig,
                    dir: Some(dir),
                };
                server.wait_ready().await?;
                Ok(server)
            }
            ServerMode::InProcess { durable } => {
                let dir = if *durable {
                    Some(tempfile::Builder::new().prefix("opkit-bench-").tempdir()?)
                } else {
                    None
                };
                let mut config = opkit_controlplane::Config::ephemeral();
                config.data_dir = dir.as_ref().map(|d| d.path().join("data"));
                let (ready_tx, ready_rx) = tokio::sync::oneshot::channel();
                let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
                let thread = std::thread::Builder::new()
                    .name("opkit-server".into())
                    .spawn(move || {
                        let runtime = match tokio::runtime::Builder::new_multi_thread()
                            .enable_all()
                            .build()
                        {
                            Ok(r) => r,
                            Err(e) => {
                                let _ = ready_tx.send(Err(anyhow::anyhow!("server runtime: {e}")));
                                return;
                            }
                        };
                        runtime.block_on(async move {
                            match opkit_controlplane::ControlPlane::start(config).await {
                                Ok(plane) => {
                                    let _ = ready_tx.send(Ok(plane.kubeconfig().to_string()));
                                    let _ = stop_rx.await;
                                    plane.shutdown().await;
                                }
                                Err(e) => {
                                    let _ = ready_tx
                                        .send(Err(anyhow::anyhow!("control plane start: {e}")));
                                }
                            }
                        });
                    })?;
                let kubeconfig = ready_rx.await.context("server thread ended early")??;
                let server = Server {
                    kind: Kind::InProcess {
                        stop: Some(stop_tx),
                        thread: Some(thread),
                    },
                    kubeconfig,
                    dir,
                };
                server.wait_ready().await?;
                Ok(server)
            }
        }
    }

    async fn wait_ready(&self) -> anyhow::Result<()> {
        let client = self.client().await?;
        let text = readyz(&client).await?;
        if text.trim() != "ok" {
            bail!("/readyz answered {text:?}");
        }
        Ok(())
    }

    /// Whether the server runs as a separate process (so its memory and CPU are its own).
    pub fn is_process(&self) -> bool {
        matches!(self.kind, Kind::Process(_))
    }

    /// The PID whose memory and CPU belong to the server (this process when in-process).
    pub fn pid(&self) -> u32 {
        match &self.kind {
            Kind::Process(up) => up.pid,
            Kind::InProcess { .. } => std::process::id(),
        }
    }

    /// The data dir, when the store is on disk.
    pub fn data_dir(&self) -> Option<PathBuf> {
        self.dir.as_ref().map(|d| d.path().join("data"))
    }

    /// The admin kubeconfig (YAML).
    pub fn kubeconfig(&self) -> &str {
        &self.kubeconfig
    }

    /// A new kube-rs client (its own connection pool) from the admin kubeconfig.
    pub async fn client(&self) -> anyhow::Result<kube::Client> {
        client_for_kubeconfig(&self.kubeconfig).await
    }

    /// `n` independent clients.
    pub async fn clients(&self, n: usize) -> anyhow::Result<Vec<kube::Client>> {
        let mut clients = Vec::with_capacity(n);
        for _ in 0..n {
            clients.push(self.client().await?);
        }
        Ok(clients)
    }

    /// Stops the server (SIGTERM for a process) and waits for it.
    pub async fn stop(mut self) {
        match &mut self.kind {
            Kind::Process(up) => up.stop().await,
            Kind::InProcess { stop, thread } => {
                if let Some(stop) = stop.take() {
                    let _ = stop.send(());
                }
                if let Some(thread) = thread.take() {
                    let _ = tokio::task::spawn_blocking(move || thread.join()).await;
                }
            }
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Kind::InProcess { stop, .. } = &mut self.kind
            && let Some(stop) = stop.take()
        {
            let _ = stop.send(());
        }
    }
}

/// A running `opkit up` process whose ready line has been read.
pub struct UpProcess {
    child: Child,
    /// Its PID.
    pub pid: u32,
    /// The kubeconfig path from the ready line.
    pub kubeconfig_path: PathBuf,
    /// From spawn to the ready line.
    pub ready_after: Duration,
    // Kept open so the server never writes to a closed pipe.
    _stdout: BufReader<ChildStdout>,
    stderr: Arc<Mutex<String>>,
}

impl UpProcess {
    /// Spawns `bin args…` and waits (at most 30 s) for `opkit control plane ready at … (kubeconfig: PATH)`.
    pub async fn spawn(bin: &Path, args: &[&str]) -> anyhow::Result<UpProcess> {
        let started = Instant::now();
        let mut child = Command::new(bin)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("spawning {}", bin.display()))?;
        let pid = child.id().context("child has no pid")?;
        let stderr = Arc::new(Mutex::new(String::new()));
        if let Some(err) = child.stderr.take() {
            let sink = stderr.clone();
            tokio::spawn(async move {
                let mut lines = BufReader::new(err).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    let mut s = sink.lock().unwrap();
                    if s.len() < 64 * 1024 {
                        s.push_str(&line);
                        s.push('\n');
                    }
                }
            });
        }
        let mut stdout = BufReader::new(child.stdout.take().context("no stdout")?);
        let mut line = String::new();
        let read = tokio::time::timeout(Duration::from_secs(30), stdout.read_line(&mut line)).await;
        let ready_after = started.elapsed();
        let n = match read {
            Ok(r) => r?,
            Err(_) => bail!("`opkit up` printed no ready line within 30 s"),
        };
        const PREFIX: &str = "opkit control plane ready at ";
        if n == 0 || !line.starts_with(PREFIX) {
            tokio::time::sleep(Duration::from_millis(100)).await;
            let err = stderr.lock().unwrap().clone();
            bail!("`opkit up` did not become ready: stdout {line:?}, stderr {err:?}");
        }
        let path = line
            .trim_end()
            .rsplit_once("(kubeconfig: ")
            .and_then(|(_, p)| p.strip_suffix(')'))
            .with_context(|| format!("no kubeconfig path in {line:?}"))?;
        Ok(UpProcess {
            child,
            pid,
            kubeconfig_path: PathBuf::from(path),
            ready_after,
            _stdout: stdout,
            stderr,
        })
    }

    /// Sends SIGTERM and waits up to 10 s, then kills.
    pub async fn stop(&mut self) {
        let _ = std::process::Command::new("kill")
            .arg("-TERM")
            .arg(self.pid.to_string())
            .status();
        if tokio::time::timeout(Duration::from_secs(10), self.child.wait())
            .await
            .is_err()
        {
            let err = self.stderr.lock().unwrap().clone();
            eprintln!(
                "  warning: `opkit up` (pid {}) did not stop on SIGTERM in 10 s; killing it. stderr: {err}",
                self.pid
            );
            let _ = self.child.kill().await;
        }
    }
}

/// Installs rustls' ring provider for kube-rs (once per process; later calls are no-ops).
pub fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// A kube-rs client from kubeconfig YAML.
pub async fn client_for_kubeconfig(yaml: &str) -> anyhow::Result<kube::Client> {
    install_crypto_provider();
    let kubeconfig = Kubeconfig::from_yaml(yaml).context("kubeconfig parses")?;
    let config =
        kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?;
    Ok(kube::Client::try_from(config)?)
}

/// `GET /readyz` with a kube-rs client.
pub async fn readyz(client: &kube::Client) -> anyhow::Result<String> {
    let request = http::Request::get("/readyz").body(Vec::new())?;
    Ok(client.request_text(request).await?)
}

fn path_str(p: &Path) -> anyhow::Result<&str> {
    p.to_str()
        .with_context(|| format!("non-UTF-8 path {}", p.display()))
}
