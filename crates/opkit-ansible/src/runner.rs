//! One run of a role or playbook for one custom resource, through `ansible-runner`.
//!
//! Each custom resource has a private data directory (operator-sdk's layout:
//! `<work>/runner/<group>/<version>/<kind>/<namespace>/<name>`) with `env/extravars` (the
//! [`vars`](crate::vars)), `env/envvars` and `inventory/hosts` (`localhost`, local
//! connection, the venv's interpreter as `ansible_python_interpreter`). ansible-runner is
//! started as upstream starts it (`run DIR --rotate-artifacts N -i IDENT` and `-p PLAYBOOK`
//! or `--role NAME --roles-path DIR --hosts localhost`), with the venv's interpreter and
//! `bin/` first on `PATH` — never whatever `python3` the machine's `PATH` finds — so
//! ansible-runner keeps at most `maxRunnerArtifacts` runs' artifacts.
//!
//! After the run its job events (`artifacts/<ident>/job_events/*.json`) are read in order:
//! `playbook_on_stats` gives the counts, every `runner_on_failed` that is neither ignored
//! nor rescued gives a failure (the task's name and `msg`), `operator_sdk.util.requeue_after`
//! a requeue period and `operator_sdk.util.osdk_metric` a metric update. A run without a
//! stats event (a syntax error, a missing role) is an error carrying the end of its stdout.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, Value};

use crate::status::AnsibleResult;
use crate::watches::Target;

/// Why a run could not happen or produced nothing usable.
#[derive(Debug, thiserror::Error)]
pub enum RunnerError {
    /// The Ansible virtual environment is missing or incomplete.
    #[error(
        "the Ansible virtual environment {venv} is missing or incomplete ({missing} not found): run scripts/install-tools.sh (or point OPKIT_ANSIBLE_VENV at one)"
    )]
    NoVenv {
        /// The venv looked at.
        venv: PathBuf,
        /// The file that is missing.
        missing: String,
    },
    /// The data directory could not be written.
    #[error("writing the run directory {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// ansible-runner could not be started.
    #[error("starting ansible-runner: {0}")]
    Spawn(#[source] std::io::Error),
    /// The run ended without a `playbook_on_stats` event.
    #[error(
        "did not receive playbook_on_stats event (ansible-runner exit status {status}); end of stdout:\n{stdout}"
    )]
    NoStats {
        /// ansible-runner's exit status.
        status: String,
        /// The last lines of the run's stdout.
        stdout: String,
    },
    /// A job event could not be read.
    #[error("reading job event {path}: {message}")]
    Event {
        /// The event file.
        path: PathBuf,
        /// Why.
        message: String,
    },
}

/// The installed Ansible: a virtual environment made by `scripts/install-tools.sh`.
#[derive(Debug, Clone)]
pub struct Ansible {
    venv: PathBuf,
    /// `ANSIBLE_COLLECTIONS_PATH` of every run.
    collections_path: String,
}

impl Ansible {
    /// The venv at `venv`, checked (interpreter, ansible-runner, ansible-playbook and the
    /// `kubernetes.core` collection must be there); `collections` come first on
    /// `ANSIBLE_COLLECTIONS_PATH` (the operator's own `operator_sdk.util`).
    pub fn new(venv: &Path, collections: &[PathBuf]) -> Result<Ansible, RunnerError> {
        let venv = std::path::absolute(venv).unwrap_or_else(|_| venv.to_path_buf());
        let core = "collections/ansible_collections/kubernetes/core/MANIFEST.json";
        for file in [
            "bin/python3",
            "bin/ansible-runner",
            "bin/ansible-playbook",
            core,
        ] {
            if !venv.join(file).exists() {
                return Err(RunnerError::NoVenv {
                    venv,
                    missing: file.into(),
                });
            }
        }
        let mut paths: Vec<String> = collections
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        paths.push(venv.join("collections").display().to_string());
        Ok(Ansible {
            venv,
            collections_path: paths.join(":"),
        })
    }

    /// The venv's interpreter (`ansible_python_interpreter` of every run).
    pub fn python(&self) -> PathBuf {
        self.venv.join("bin/python3")
    }

    /// The venv's directory.
    pub fn venv(&self) -> &Path {
        &self.venv
    }
}

/// Where the venv is by default: `$OPKIT_ANSIBLE_VENV`, else the first `.tools/ansible`
/// found from the working directory upwards, else from the `opkit` executable's directory
/// upwards, else `.tools/ansible` (which then fails loudly when used).
pub fn default_venv() -> PathBuf {
    if let Some(v) = std::env::var_os("OPKIT_ANSIBLE_VENV").filter(|v| !v.is_empty()) {
        return PathBuf::from(v);
    }
    let starts = [
        std::env::current_dir().ok(),
        std::env::current_exe()
            .ok()
            .and_then(|e| e.parent().map(Path::to_path_buf)),
    ];
    starts
        .into_iter()
        .flatten()
        .flat_map(|start| {
            start
                .ancestors()
                .map(|d| d.join(".tools/ansible"))
                .collect::<Vec<_>>()
        })
        .find(|p| p.is_dir())
        .unwrap_or_else(|| PathBuf::from(".tools/ansible"))
}

/// One run to make.
#[derive(Debug)]
pub(crate) struct Run<'a> {
    /// The custom resource's private data directory.
    pub(crate) dir: PathBuf,
    /// The role or playbook.
    pub(crate) target: &'a Target,
    /// The extra variables.
    pub(crate) extravars: Map<String, Value>,
    /// The run's kubeconfig (the proxy's, see [`crate::proxy`]), written to `kubeconfig`
    /// in the data directory (mode 0600) and named by `K8S_AUTH_KUBECONFIG` / `KUBECONFIG`.
    pub(crate) kubeconfig: &'a str,
    /// Runs' artifacts kept.
    pub(crate) max_artifacts: usize,
    /// Ansible's `-v` count.
    pub(crate) verbosity: u8,
}

/// A failed task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskFailure {
    /// The task's name.
    pub task: String,
    /// Its `msg` (upstream's default when it has none).
    pub message: String,
}

impl std::fmt::Display for TaskFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "task {:?} failed: {}", self.task, self.message)
    }
}

/// What a run reported.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// The counts from `playbook_on_stats`.
    pub result: AnsibleResult,
    /// Failed tasks (neither ignored nor rescued); empty when the run succeeded.
    pub failures: Vec<TaskFailure>,
    /// `operator_sdk.util.requeue_after`'s period, if a task set one.
    pub requeue_after: Option<Duration>,
    /// `operator_sdk.util.osdk_metric` updates, in order (the module's arguments).
    pub metrics: Vec<Value>,
}

impl Outcome {
    /// The `Failure` condition's message: each failure on its line.
    pub fn failure_message(&self) -> Option<String> {
        (!self.failures.is_empty()).then(|| {
            self.failures
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("\n")
        })
    }
}

fn write(path: PathBuf, contents: &[u8]) -> Result<(), RunnerError> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|source| RunnerError::Write {
            path: parent.to_path_buf(),
            source,
        })?;
    }
    std::fs::write(&path, contents).map_err(|source| RunnerError::Write { path, source })
}

/// Writes a file only its owner may read (a kubeconfig carries a token).
fn write_private(path: &Path, contents: &[u8]) -> Result<(), RunnerError> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let error = |source| RunnerError::Write {
        path: path.to_path_buf(),
        source,
    };
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(error)?;
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .map_err(error)?;
    file.write_all(contents).map_err(error)
}

/// A fresh run identifier (ansible-runner's artifact directory name).
fn ident() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{nanos}")
}

/// Makes the run and reads what it reported (see the [module docs](self)).
pub(crate) async fn run(ansible: &Ansible, run: Run<'_>) -> Result<Outcome, RunnerError> {
    let ident = ident();
    write(
        run.dir.join("env/extravars"),
        Value::Object(run.extravars).to_string().as_bytes(),
    )?;
    let kubeconfig = run.dir.join("kubeconfig");
    write_private(&kubeconfig, run.kubeconfig.as_bytes())?;
    let mut envvars = Map::new();
    let kc = Value::String(kubeconfig.display().to_string());
    envvars.insert("K8S_AUTH_KUBECONFIG".into(), kc.clone());
    envvars.insert("KUBECONFIG".into(), kc);
    write(
        run.dir.join("env/envvars"),
        Value::Object(envvars).to_string().as_bytes(),
    )?;
    write(
        run.dir.join("inventory/hosts"),
        format!(
            "localhost ansible_connection=local ansible_python_interpreter={}\n",
            ansible.python().display()
        )
        .as_bytes(),
    )?;
    std::fs::create_dir_all(run.dir.join("project")).map_err(|source| RunnerError::Write {
        path: run.dir.join("project"),
        source,
    })?;

    let mut cmd = tokio::process::Command::new(ansible.python());
    cmd.arg(ansible.venv.join("bin/ansible-runner"))
        .arg("run")
        .arg(&run.dir)
        .args(["--rotate-artifacts", &run.max_artifacts.to_string()])
        .args(["-i", &ident]);
    match run.target {
        Target::Playbook(path) => {
            cmd.arg("-p").arg(path);
        }
        Target::Role(path) => {
            let name = path.file_name().unwrap_or_default();
            let parent = path.parent().unwrap_or(Path::new("."));
            cmd.arg("--role")
                .arg(name)
                .arg("--roles-path")
                .arg(parent)
                .args(["--hosts", "localhost"]);
            if std::env::var("ANSIBLE_GATHERING").as_deref() == Ok("explicit") {
                cmd.arg("--role-skip-facts");
            }
        }
    }
    if run.verbosity > 0 {
        cmd.arg(format!("-{}", "v".repeat(usize::from(run.verbosity))));
    }
    let path = match std::env::var_os("PATH") {
        Some(p) => {
            let mut paths = vec![ansible.venv.join("bin")];
            paths.extend(std::env::split_paths(&p));
            std::env::join_paths(paths).unwrap_or(p)
        }
        None => ansible.venv.join("bin").into_os_string(),
    };
    cmd.env("PATH", path)
        .env("VIRTUAL_ENV", &ansible.venv)
        .env("ANSIBLE_COLLECTIONS_PATH", &ansible.collections_path)
        .env_remove("PYTHONPATH")
        .env_remove("PYTHONHOME")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    cmd.env("K8S_AUTH_KUBECONFIG", &kubeconfig)
        .env("KUBECONFIG", &kubeconfig);
    let output = cmd.output().await.map_err(RunnerError::Spawn)?;
    let artifacts = run.dir.join("artifacts").join(&ident);
    let outcome = read_events(&artifacts.join("job_events"))?;
    match outcome {
        Some(outcome) => Ok(outcome),
        None => {
            let stdout = std::fs::read_to_string(artifacts.join("stdout")).unwrap_or_default();
            let stderr = String::from_utf8_lossy(&output.stderr);
            let text = format!("{stdout}{stderr}");
            let lines: Vec<&str> = text.lines().collect();
            let tail = lines[lines.len().saturating_sub(20)..].join("\n");
            Err(RunnerError::NoStats {
                status: output.status.to_string(),
                stdout: tail,
            })
        }
    }
}

/// Reads a run's job events in order; `None` when there is no `playbook_on_stats` event.
fn read_events(dir: &Path) -> Result<Option<Outcome>, RunnerError> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(None);
    };
    let mut events: Vec<(u64, Value)> = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().and_then(|e| e.to_str()) != Some("json") {
            continue;
        }
        let text = std::fs::read_to_string(&path).map_err(|e| RunnerError::Event {
            path: path.clone(),
            message: e.to_string(),
        })?;
        let event: Value = serde_json::from_str(&text).map_err(|e| RunnerError::Event {
            path: path.clone(),
            message: e.to_string(),
        })?;
        let counter = event["counter"].as_u64().unwrap_or(0);
        events.push((counter, event));
    }
    events.sort_by_key(|(c, _)| *c);
    Ok(outcome(events.iter().map(|(_, e)| e)))
}

/// Folds job events into an [`Outcome`]; `None` without a `playbook_on_stats` event.
pub(crate) fn outcome<'a>(events: impl Iterator<Item = &'a Value>) -> Option<Outcome> {
    let mut out = Outcome::default();
    let mut stats = false;
    for event in events {
        let data = &event["event_data"];
        let kind = event["event"].as_str().unwrap_or_default();
        let action = data["task_action"].as_str().unwrap_or_default();
        match kind {
            "playbook_on_stats" => {
                stats = true;
                let count = |key: &str| data[key]["localhost"].as_u64().unwrap_or(0);
                out.result = AnsibleResult {
                    ok: count("ok"),
                    changed: count("changed"),
                    skipped: count("skipped"),
                    failures: count("failures"),
                    completion: event["created"].as_str().unwrap_or_default().to_string(),
                };
            }
            "runner_on_failed" => {
                let ignored = data["ignore_errors"].as_bool().unwrap_or(false);
                let rescued = data["rescued"]
                    .as_object()
                    .is_some_and(|m| m.values().any(|v| v.as_u64() == Some(1)));
                if !ignored && !rescued {
                    out.failures.push(TaskFailure {
                        task: data["task"].as_str().unwrap_or_default().to_string(),
                        message: data["res"]["msg"]
                            .as_str()
                            .unwrap_or("unknown playbook failure")
                            .to_string(),
                    });
                }
            }
            "runner_on_ok" if is_module(action, "requeue_after") => {
                if let Some(period) = data["res"]["period"].as_str() {
                    match opkit_apimachinery::duration::parse_std(period) {
                        Ok(d) => out.requeue_after = Some(d),
                        Err(e) => {
                            tracing::warn!(period, error = %e, "unreadable requeue_after period")
                        }
                    }
                }
            }
            "runner_on_ok" if is_module(action, "osdk_metric") => {
                out.metrics.push(data["res"].clone());
            }
            _ => {}
        }
    }
    stats.then_some(out)
}

/// Whether `action` is `operator_sdk.util.<module>` (or the module's short name).
fn is_module(action: &str, module: &str) -> bool {
    action == module || action.strip_prefix("operator_sdk.util.") == Some(module)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn events_give_counts_failures_and_requeue() {
        let events = [
            json!({"counter": 1, "event": "runner_on_ok",
                   "event_data": {"task": "requeue", "task_action": "operator_sdk.util.requeue_after",
                                  "res": {"period": "30s"}}}),
            json!({"counter": 2, "event": "runner_on_failed",
                   "event_data": {"task": "ignored", "ignore_errors": true, "res": {"msg": "x"}}}),
            json!({"counter": 3, "event": "runner_on_failed",
                   "event_data": {"task": "rescued", "rescued": {"localhost": 1}, "res": {"msg": "x"}}}),
            json!({"counter": 4, "event": "runner_on_failed",
                   "event_data": {"task": "Create the Deployment", "res": {"msg": "quota exceeded"}}}),
            json!({"counter": 5, "event": "runner_on_failed",
                   "event_data": {"task": "silent", "res": {}}}),
            json!({"counter": 6, "event": "runner_on_ok",
                   "event_data": {"task_action": "osdk_metric", "res": {"name": "m", "counter": {"increment": true}}}}),
            json!({"counter": 7, "event": "playbook_on_stats", "created": "2026-01-01T00:00:00.1+00:00",
                   "event_data": {"ok": {"localhost": 4}, "changed": {"localhost": 1},
                                  "skipped": {}, "failures": {"localhost": 2}}}),
        ];
        let out = outcome(events.iter()).expect("stats");
        assert_eq!(
            out.result,
            AnsibleResult {
                ok: 4,
                changed: 1,
                skipped: 0,
                failures: 2,
                completion: "2026-01-01T00:00:00.1+00:00".into()
            }
        );
        assert_eq!(out.requeue_after, Some(Duration::from_secs(30)));
        assert_eq!(
            out.failure_message().as_deref(),
            Some(
                "task \"Create the Deployment\" failed: quota exceeded\ntask \"silent\" failed: unknown playbook failure"
            )
        );
        assert_eq!(out.metrics.len(), 1);
    }

    #[test]
    fn a_run_without_stats_reports_nothing() {
        let events = [json!({"counter": 1, "event": "playbook_on_start"})];
        assert!(outcome(events.iter()).is_none());
    }

    #[test]
    fn a_missing_venv_names_the_install_script() {
        let dir = tempfile::tempdir().expect("tempdir");
        let err = Ansible::new(&dir.path().join("nope"), &[]).expect_err("missing");
        let text = err.to_string();
        assert!(text.contains("scripts/install-tools.sh"), "{text}");
        assert!(text.contains("bin/python3"), "{text}");
    }
}
