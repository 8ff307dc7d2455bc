//! `opkit test` in an operator project: the project's kuttl suite (`tests/e2e/`, one test per
//! subdirectory, `tests/e2e/kuttl-test.yaml` the suite when present) run against the operator
//! itself, as it would run in a cluster.
//!
//! On the embedded plane the operator is built (`opkit generate manifests`'s build, which
//! also refreshes `config/`), its CRDs installed as `opkit install` does, its namespace
//! created and only its generated RBAC (`config/rbac`) applied; it then runs as a background
//! process under its service account (a TokenRequest token in a kubeconfig of its own), so a
//! missing RBAC rule fails the suite as it would fail in a cluster. Its output is kept in
//! `.opkit/test/operator.log` and per test in `.opkit/test/logs/<test>.log`.
//!
//! Under `--chaos` the suite starts the operator itself instead
//! ([`ProjectSuite::chaos_suite`]): a campaign runs each test on fresh planes, with the
//! operator as the suite's background command, which it gives credentials of its own and
//! restarts after each injected crash.

use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use anyhow::{Context, bail};
use serde_yaml::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use opkit_e2e::ProcessLog;

use crate::project::{self, Plugin, Project};
use crate::{cluster, kustomize, manifests, progress, run};

/// The suite directory of a project.
pub(crate) const E2E_DIR: &str = "tests/e2e";
/// Where a run keeps its files (kubeconfigs, the operator's log), under the project root.
const WORK_DIR: &str = ".opkit/test";
/// How long the operator's service-account token is valid.
const TOKEN_VALIDITY: Duration = Duration::from_secs(24 * 3600);
/// How long the operator may take to report ready.
const READY_TIMEOUT: Duration = Duration::from_secs(120);
/// How long the operator may take to stop after SIGTERM.
const STOP_TIMEOUT: Duration = Duration::from_secs(15);

/// An operator project whose suite `opkit test` runs.
pub(crate) struct ProjectSuite {
    /// The project root.
    pub(crate) root: PathBuf,
    /// Its `PROJECT`.
    pub(crate) project: Project,
}

impl ProjectSuite {
    /// The project around `cwd`, when `opkit test` was given no DIR and no `--config`: `None`
    /// outside a project; an error when the project has no suite.
    pub(crate) fn find(cwd: &Path) -> anyhow::Result<Option<ProjectSuite>> {
        let Ok(root) = project::find_root(cwd) else {
            return Ok(None);
        };
        let project = Project::load(&root)?;
        if !root.join(E2E_DIR).is_dir() {
            bail!(
                "the project {} has no {E2E_DIR} directory: `opkit create api` scaffolds a kuttl \
                 test per kind there (tests/e2e/<kind>/00-create.yaml, 00-assert.yaml); or pass \
                 test directories: opkit test DIR...",
                root.display()
            );
        }
        Ok(Some(ProjectSuite { root, project }))
    }

    /// `tests/e2e`: the run's working directory.
    pub(crate) fn suite_dir(&self) -> PathBuf {
        self.root.join(E2E_DIR)
    }

    /// Where the run keeps its files.
    pub(crate) fn work_dir(&self) -> PathBuf {
        self.root.join(WORK_DIR)
    }

    /// Builds the operator (and refreshes `config/`); the binary. An ansible project's
    /// operator is this `opkit` itself (`opkit ansible-operator run`).
    pub(crate) fn build(&self) -> anyhow::Result<PathBuf> {
        if self.project.plugin == Plugin::Ansible {
            if self.project.resources.is_empty() {
                bail!(
                    "the project has no kinds yet: add one with `opkit create api --group G \
                     --version V --kind K --generate-role`"
                );
            }
            crate::ansible_manifests::generate(&self.root, &self.project)?;
            return std::env::current_exe()
                .context("cannot find this opkit binary to run `opkit ansible-operator run`");
        }
        if self.project.plugin == Plugin::Helm {
            bail!(
                "opkit test in a helm project is not supported yet: run the chart operator \
                 (`opkit run --up`) and the suite with `opkit test --kubeconfig \
                 .opkit/kubeconfig {E2E_DIR}`"
            );
        }
        if self.project.resources.is_empty() {
            bail!("the project has no kinds yet: add one with `opkit create api`");
        }
        manifests::generate_in(&self.root, &self.project)
    }

    /// Makes `suite` start the operator itself, as a `--chaos` campaign needs it: the
    /// project's CRDs as its `crdDir` (unless one is set), and the operator as a background
    /// command, as a kuttl suite starts one — so the campaign gives it credentials of its own
    /// and restarts it after an injected crash. The command is what the project's manager
    /// runs: a Rust project's binary (built with cargo, which also refreshes `config/`) with
    /// `run`; in a helm project `opkit helm-operator run` on `watches.yaml`; in an ansible
    /// project `opkit ansible-operator run` (the venv checked first, the runs' files under
    /// `.opkit/test/chaos`, cleared first). Probe and metrics servers are off: a restarted
    /// operator must not find its port taken.
    pub(crate) fn chaos_suite(&self, suite: &mut opkit_e2e::TestSuite) -> anyhow::Result<()> {
        let mut args = match self.project.plugin {
            Plugin::Rust => {
                let mut args = vec![self.build()?.display().to_string(), "run".into()];
                if self.project.has_webhooks() {
                    let port = self.chaos_webhooks(suite)?;
                    args.extend(["--webhook-port".into(), port.to_string()]);
                }
                args
            }
            Plugin::Helm => self.helm_chaos_args()?,
            Plugin::Ansible => self.ansible_chaos_args()?,
        };
        if suite.crd_dir.is_empty() {
            suite.crd_dir = self.root.join(manifests::CRD_BASES).display().to_string();
        }
        args.extend(
            [
                "--metrics-bind-address",
                "0",
                "--health-probe-bind-address",
                "0",
            ]
            .map(String::from),
        );
        let command: Vec<String> = args.iter().map(|a| crate::test_chaos::quote(a)).collect();
        suite.commands.push(opkit_e2e::Command {
            command: command.join(" "),
            background: true,
            ..opkit_e2e::Command::default()
        });
        progress::step(format!(
            "chaos: the suite starts {}'s operator: {}",
            self.project.project_name,
            command.join(" ")
        ));
        Ok(())
    }

    /// Registers the operator's webhooks on every plane of a campaign: the configurations of
    /// `config/webhook/manifests.yaml` and the webhook Service pointed at a local port, written
    /// under `.opkit/test/chaos-webhooks` and listed among the suite's manifest directories,
    /// which each run applies before it starts the operator. The port the operator serves
    /// them on (each restarted operator binds it again).
    fn chaos_webhooks(&self, suite: &mut opkit_e2e::TestSuite) -> anyhow::Result<u16> {
        let webhooks = run::project_webhooks(&self.root, &self.project)?;
        let port = run::free_port()?;
        let dir = self.work_dir().join("chaos-webhooks");
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        let mut text = String::new();
        for object in webhooks.manifests(port) {
            text.push_str("---\n");
            text.push_str(&serde_yaml::to_string(&object)?);
        }
        let file = dir.join("webhooks.yaml");
        std::fs::write(&file, text).with_context(|| format!("cannot write {}", file.display()))?;
        suite.manifest_dirs.push(dir.display().to_string());
        progress::step(format!(
            "chaos: each run registers the webhooks of {}/manifests.yaml and routes Service \
             {}/{} to 127.0.0.1:{port}",
            crate::webhook_manifests::WEBHOOK_DIR,
            self.project.namespace(),
            self.project.webhook_service()
        ));
        Ok(port)
    }

    /// `opkit helm-operator run` on the project's `watches.yaml`, `config/` refreshed first
    /// (the CRDs the campaign installs).
    fn helm_chaos_args(&self) -> anyhow::Result<Vec<String>> {
        if self.project.resources.is_empty() {
            bail!(
                "the project has no kinds yet: add one with `opkit create api --group G \
                 --version V --kind K` (or `--helm-chart DIR|TGZ`)"
            );
        }
        crate::helm_manifests::generate(&self.root, &self.project)?;
        let opkit = std::env::current_exe()
            .context("cannot find this opkit binary to run `opkit helm-operator run`")?;
        Ok(vec![
            opkit.display().to_string(),
            "helm-operator".into(),
            "run".into(),
            "--watches-file".into(),
            self.root
                .join(crate::helm_scaffold::WATCHES_FILE)
                .display()
                .to_string(),
        ])
    }

    /// `opkit ansible-operator run`'s command line under `--chaos`, the venv checked and the
    /// runs' work directory cleared.
    fn ansible_chaos_args(&self) -> anyhow::Result<Vec<String>> {
        let binary = self.build()?;
        let venv = opkit_ansible::default_venv();
        opkit_ansible::Ansible::new(&venv, &[])?;
        // The runs' files of the last campaign: its operators were killed, not stopped.
        let work = self.work_dir().join("chaos");
        match std::fs::remove_dir_all(&work) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(e).with_context(|| format!("cannot clear {}", work.display()));
            }
            _ => {}
        }
        Ok(vec![
            binary.display().to_string(),
            "ansible-operator".into(),
            "run".into(),
            "--watches-file".into(),
            self.root
                .join(crate::ansible_scaffold::WATCHES_FILE)
                .display()
                .to_string(),
            "--ansible-venv".into(),
            std::path::absolute(&venv)
                .unwrap_or(venv)
                .display()
                .to_string(),
            "--work-dir".into(),
            work.display().to_string(),
        ])
    }

    /// Installs the CRDs and RBAC on the plane, then starts `binary` as the operator's service
    /// account and waits until it reports ready.
    pub(crate) async fn start_operator(
        &self,
        binary: &Path,
        plane: &opkit_testenv::TestEnv,
        admin_kubeconfig: &Path,
    ) -> anyhow::Result<Operator> {
        let mut cluster = cluster::connect(Some(admin_kubeconfig)).await?;
        cluster::install_crds(&mut cluster, &self.root, Duration::from_secs(60)).await?;
        let rbac = kustomize::build(&self.root.join("config/rbac"))?;
        let (namespace, account) = service_account(&rbac)?;
        progress::step(format!(
            "applying config/rbac: the operator runs as {namespace}/{account}"
        ));
        cluster.apply(&[namespace_object(&namespace)]).await?;
        cluster.apply(&rbac).await?;
        let kubeconfig = plane
            .control_plane()
            .service_account_kubeconfig(&namespace, &account, TOKEN_VALIDITY)
            .map_err(|e| anyhow::anyhow!("cannot get a token for {namespace}/{account}: {e}"))?;
        let work = self.work_dir();
        std::fs::create_dir_all(&work)
            .with_context(|| format!("cannot create {}", work.display()))?;
        let kubeconfig_path = work.join("operator.kubeconfig");
        crate::kubeconfig::write_private(&kubeconfig_path, &kubeconfig)?;

        let health = run::free_port()?;
        let mut command = tokio::process::Command::new(binary);
        if self.project.plugin == Plugin::Ansible {
            command
                .arg("ansible-operator")
                .arg("run")
                .arg("--watches-file")
                .arg(self.root.join(crate::ansible_scaffold::WATCHES_FILE))
                .args(["--metrics-bind-address", "0"]);
        } else {
            command.arg("run");
        }
        command
            .arg("--health-probe-bind-address")
            .arg(format!("127.0.0.1:{health}"))
            .env("KUBECONFIG", &kubeconfig_path)
            .current_dir(&self.root)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        if self.project.has_webhooks() {
            let port = run::free_port()?;
            command.arg("--webhook-port").arg(port.to_string());
            run::serve_webhooks_locally(&cluster, &self.root, &self.project, port).await?;
        }
        progress::step(format!(
            "starting {} as {namespace}/{account} (log: {})",
            self.project.project_name,
            work.join("operator.log").display()
        ));
        let operator = Operator::spawn(command, binary, work.join("operator.log"))?;
        operator.wait_ready(health).await?;
        Ok(operator)
    }
}

/// The namespace and name of the one ServiceAccount among `objects` (config/rbac).
fn service_account(objects: &[Value]) -> anyhow::Result<(String, String)> {
    let accounts: Vec<&Value> = objects
        .iter()
        .filter(|o| kustomize::kind(o) == "ServiceAccount")
        .collect();
    let [account] = accounts.as_slice() else {
        bail!(
            "config/rbac must hold exactly one ServiceAccount (the operator's identity), it has \
             {}",
            accounts.len()
        );
    };
    let namespace = account
        .get("metadata")
        .and_then(|m| m.get("namespace"))
        .and_then(Value::as_str)
        .context("the ServiceAccount in config/rbac has no namespace")?;
    Ok((namespace.to_string(), kustomize::name(account).to_string()))
}

fn namespace_object(name: &str) -> Value {
    let mut metadata = serde_yaml::Mapping::new();
    metadata.insert("name".into(), name.into());
    let mut object = serde_yaml::Mapping::new();
    object.insert("apiVersion".into(), "v1".into());
    object.insert("kind".into(), "Namespace".into());
    object.insert("metadata".into(), Value::Mapping(metadata));
    Value::Mapping(object)
}

/// The operator running in the background; its output lines go to a [`ProcessLog`].
pub(crate) struct Operator {
    /// Every line it wrote (stdout and stderr), with when.
    pub(crate) log: ProcessLog,
    log_file: PathBuf,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<std::io::Result<ExitStatus>>,
    readers: Vec<JoinHandle<()>>,
}

impl Operator {
    fn spawn(
        mut command: tokio::process::Command,
        binary: &Path,
        log_file: PathBuf,
    ) -> anyhow::Result<Operator> {
        let mut child = command
            .spawn()
            .with_context(|| format!("cannot start {}", binary.display()))?;
        let log = ProcessLog::new("operator");
        let mut readers = Vec::new();
        if let Some(out) = child.stdout.take() {
            readers.push(tokio::spawn(read_lines(out, log.clone())));
        }
        if let Some(err) = child.stderr.take() {
            readers.push(tokio::spawn(read_lines(err, log.clone())));
        }
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            tokio::select! {
                status = child.wait() => status,
                _ = stopped => {
                    if let Some(pid) = child.id() {
                        // SAFETY: kill(2) on a child we spawned and have not reaped.
                        unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) };
                    }
                    match tokio::time::timeout(STOP_TIMEOUT, child.wait()).await {
                        Ok(status) => status,
                        Err(_) => {
                            child.kill().await?;
                            child.wait().await
                        }
                    }
                }
            }
        });
        Ok(Operator {
            log,
            log_file,
            stop: Some(stop),
            task,
            readers,
        })
    }

    /// Whether it has exited (on its own: it is never stopped before [`Operator::stop`]).
    pub(crate) fn exited(&self) -> bool {
        self.task.is_finished()
    }

    /// Polls its `/readyz` until it answers 200; fails when it exits or takes too long.
    async fn wait_ready(&self, port: u16) -> anyhow::Result<()> {
        let mut status = progress::Status::new();
        loop {
            if readyz(port).await {
                status.finish("the operator is ready");
                return Ok(());
            }
            if self.exited() {
                bail!(
                    "the operator exited before it was ready; its output:\n{}",
                    self.log.all().join("\n")
                );
            }
            if status.elapsed() > READY_TIMEOUT {
                bail!(
                    "the operator was not ready within {READY_TIMEOUT:?} (/readyz on port \
                     {port}); its output:\n{}",
                    self.log.all().join("\n")
                );
            }
            status.update("waiting for the operator's /readyz");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Stops it (SIGTERM, then SIGKILL after 15 s) and writes its whole log; how it ended.
    pub(crate) async fn stop(mut self) -> anyhow::Result<ExitStatus> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let status = self
            .task
            .await
            .context("the operator's task failed")?
            .context("waiting for the operator")?;
        for r in self.readers {
            let _ = r.await;
        }
        let mut text = self.log.all().join("\n");
        text.push('\n');
        std::fs::write(&self.log_file, text)
            .with_context(|| format!("cannot write {}", self.log_file.display()))?;
        Ok(status)
    }
}

async fn read_lines(stream: impl tokio::io::AsyncRead + Unpin, log: ProcessLog) {
    let mut lines = BufReader::new(stream).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        log.push(line);
    }
}

/// Whether `127.0.0.1:port/readyz` answers 200 (a bare HTTP/1.0 request: no client needed).
async fn readyz(port: u16) -> bool {
    let attempt = async {
        let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port)).await?;
        stream
            .write_all(b"GET /readyz HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
            .await?;
        let mut head = [0u8; 12];
        stream.read_exact(&mut head).await?;
        std::io::Result::Ok(head.starts_with(b"HTTP/1.1 200") || head.starts_with(b"HTTP/1.0 200"))
    };
    matches!(
        tokio::time::timeout(Duration::from_secs(2), attempt).await,
        Ok(Ok(true))
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_operator_identity_is_the_one_service_account_of_config_rbac() {
        let objects: Vec<Value> = serde_yaml::Deserializer::from_str(
            "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: op-controller-manager\n  \
             namespace: op-system\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: \
             ClusterRole\nmetadata:\n  name: op-manager-role\n",
        )
        .map(|d| serde::Deserialize::deserialize(d).unwrap())
        .collect();
        assert_eq!(
            service_account(&objects).unwrap(),
            ("op-system".to_string(), "op-controller-manager".to_string())
        );
        let err = service_account(&objects[1..]).unwrap_err().to_string();
        assert!(err.contains("exactly one ServiceAccount"), "{err}");
    }

    #[test]
    fn a_project_without_a_suite_is_refused_with_the_way_to_get_one() {
        let dir = tempfile::tempdir().unwrap();
        assert!(ProjectSuite::find(dir.path()).unwrap().is_none());
        let project = Project {
            layout: project::LAYOUT.into(),
            project_name: "op".into(),
            domain: "example.com".into(),
            repo: "github.com/x/op".into(),
            plugin: Plugin::Rust,
            resources: vec![],
        };
        project.save(dir.path()).unwrap();
        let err = ProjectSuite::find(dir.path()).err().unwrap().to_string();
        assert!(
            err.contains("no tests/e2e") && err.contains("opkit create api"),
            "{err}"
        );
        std::fs::create_dir_all(dir.path().join(E2E_DIR)).unwrap();
        let found = ProjectSuite::find(&dir.path().join(E2E_DIR))
            .unwrap()
            .unwrap();
        assert_eq!(found.root, dir.path());
    }
}
