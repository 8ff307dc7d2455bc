//! One run's fresh embedded plane: the operator's credentials of its own (a kubeconfig file
//! for a user the server's faults target), the faults armed, the run's output collected, and at
//! the end the test namespace's objects read for the end-state oracle.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use kube::api::{Api, DynamicObject, ListParams};
use kube::discovery::{Discovery, Scope, verbs};
use opkit_apiserver::faults::Faults;
use opkit_testenv::{TestEnv, TestEnvBuilder};

use super::driver::{CampaignError, RunResult};
use super::oracle::{self, Snapshot};
use super::plan::Injection;
use crate::log::Log;
use crate::supervise::Succession;

/// The user the operator under test runs as (a member of `system:masters`, as the suite's own
/// kubeconfig is: faults, not permissions, are what a campaign tests).
pub const OPERATOR_USER: &str = "opkit-chaos:operator-under-test";

/// The user a paused leader's successor runs as: the server tells the two apart by it.
pub const SUCCESSOR_USER: &str = "opkit-chaos:operator-successor";

/// A run's plane, its files and its output.
pub(crate) struct RunPlane {
    pub(crate) env: TestEnv,
    /// The admin kubeconfig file (the workload's).
    pub(crate) admin: PathBuf,
    /// The operator's kubeconfig file.
    pub(crate) operator: PathBuf,
    /// The operator's kubeconfig (YAML).
    pub(crate) operator_config: String,
    /// A paused leader's successor's kubeconfig file.
    successor: PathBuf,
    pub(crate) faults: Faults,
    /// Collects the run's output lines.
    pub(crate) log: Log,
    lines: Arc<Mutex<Vec<String>>>,
    _files: RunFiles,
}

/// How the workload of a run ended.
pub(crate) struct RunEnd {
    pub(crate) failures: Vec<String>,
    /// The test namespace ("" when none was made).
    pub(crate) namespace: String,
    pub(crate) restarts: usize,
    /// The operator's writes when the workload ended.
    pub(crate) writes_at_end: usize,
    /// Whether it then went the settle time without a write.
    pub(crate) quiet: bool,
}

impl RunPlane {
    /// Starts a plane from `builder`, targets the operator's user and arms `injections`.
    pub(crate) async fn start(
        builder: TestEnvBuilder,
        injections: &[Injection],
    ) -> Result<RunPlane, CampaignError> {
        let env = builder
            .start()
            .await
            .map_err(|e| CampaignError::Plane(e.to_string()))?;
        let files = RunFiles::new()?;
        let admin = files.write("kubeconfig", env.kubeconfig())?;
        let operator_config = env
            .control_plane()
            .user_kubeconfig(OPERATOR_USER, &["system:masters".to_string()])
            .map_err(|e| CampaignError::Plane(e.to_string()))?;
        let operator = files.write("operator.kubeconfig", &operator_config)?;
        let successor_config = env
            .control_plane()
            .user_kubeconfig(SUCCESSOR_USER, &["system:masters".to_string()])
            .map_err(|e| CampaignError::Plane(e.to_string()))?;
        let successor = files.write("successor.kubeconfig", &successor_config)?;
        let faults = env.control_plane().server().faults().clone();
        faults.target(OPERATOR_USER);
        faults.successor(SUCCESSOR_USER);
        for injection in injections {
            faults
                .arm(injection.fault())
                .map_err(|e| CampaignError::Plane(e.to_string()))?;
        }
        let lines = Arc::new(Mutex::new(Vec::new()));
        let sink = lines.clone();
        let log = Log::new(move |line| {
            sink.lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(line.to_string());
        });
        Ok(RunPlane {
            env,
            admin,
            operator,
            operator_config,
            successor,
            faults,
            log,
            lines,
            _files: files,
        })
    }

    /// How the runner succeeds a paused leader on this plane.
    pub(crate) fn succession(&self) -> Succession {
        Succession {
            leadership: self.faults.leadership(),
            kubeconfig: self.successor.clone(),
        }
    }

    /// Reads the end state, stops the plane and returns what the run left behind.
    pub(crate) async fn finish(self, test: &str, end: RunEnd) -> Result<RunResult, CampaignError> {
        let trace = self.faults.trace();
        let fired = self.faults.fired().len();
        let snapshot =
            match end.namespace.as_str() {
                "" => Snapshot::new(),
                ns => snapshot(&self.env.client(), ns).await.map_err(|why| {
                    CampaignError::Snapshot {
                        test: test.to_string(),
                        why,
                    }
                })?,
            };
        self.env.shutdown().await;
        let lines = std::mem::take(&mut *self.lines.lock().unwrap_or_else(|e| e.into_inner()));
        Ok(RunResult {
            failures: end.failures,
            snapshot,
            after_tests: trace.writes.len().saturating_sub(end.writes_at_end),
            trace,
            fired,
            namespace: end.namespace,
            lines,
            restarts: end.restarts,
            quiet: end.quiet,
        })
    }
}

/// The objects of `namespace`, normalized, events left out.
async fn snapshot(client: &kube::Client, namespace: &str) -> Result<Snapshot, String> {
    let discovery = Discovery::new(client.clone())
        .run()
        .await
        .map_err(|e| format!("discovery: {e}"))?;
    let mut objects = Vec::new();
    for group in discovery.groups() {
        for (resource, caps) in group.recommended_resources() {
            if caps.scope != Scope::Namespaced
                || !caps.supports_operation(verbs::LIST)
                || resource.kind == "Event"
            {
                continue;
            }
            let api: Api<DynamicObject> =
                Api::namespaced_with(client.clone(), namespace, &resource);
            let list = api
                .list(&ListParams::default())
                .await
                .map_err(|e| format!("listing {}: {e}", resource.plural))?;
            for object in list {
                let kind = if resource.group.is_empty() {
                    resource.kind.clone()
                } else {
                    format!("{}.{}", resource.kind, resource.group)
                };
                let value = serde_json::to_value(&object).map_err(|e| e.to_string())?;
                objects.push((kind, value));
            }
        }
    }
    Ok(oracle::snapshot(objects, namespace))
}

/// A run's kubeconfigs, in a directory of their own removed with the run.
struct RunFiles(PathBuf);

impl RunFiles {
    fn new() -> Result<RunFiles, CampaignError> {
        let dir = std::env::temp_dir().join(format!(
            "opkit-chaos-{}-{}",
            std::process::id(),
            crate::names::namespace()
        ));
        std::fs::create_dir_all(&dir)
            .map_err(|e| CampaignError::Io(format!("cannot create {}: {e}", dir.display())))?;
        Ok(RunFiles(dir))
    }

    fn write(&self, name: &str, contents: &str) -> Result<PathBuf, CampaignError> {
        let path = self.0.join(name);
        write_private(&path, contents)
            .map_err(|e| CampaignError::Io(format!("cannot write {}: {e}", path.display())))?;
        Ok(path)
    }
}

impl Drop for RunFiles {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Writes a file only its owner can read (it holds credentials).
fn write_private(path: &Path, contents: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(contents.as_bytes())
}
