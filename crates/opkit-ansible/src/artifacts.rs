//! Where each custom resource's runs keep their data and artifacts, and their removal once
//! the custom resource is gone.
//!
//! A custom resource's runs share one data directory (operator-sdk's layout:
//! `<work>/runner/<group>/<version>/<kind>/<namespace>/<name>`), in which ansible-runner keeps
//! the last `maxRunnerArtifacts` runs' artifacts. operator-sdk never removes that directory,
//! so an operator whose custom resources come and go fills its disk
//! (ansible-operator-plugins#47); here it is removed when the custom resource's deletion is
//! seen — after the run going on for it, if any, has ended, so that a run never writes into a
//! directory that is gone.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The data directories of one `watches.yaml` entry.
#[derive(Debug)]
pub(crate) struct Artifacts {
    /// `<work>/runner/<group>/<version>/<kind>`.
    root: PathBuf,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Directories a run is using now.
    active: HashSet<PathBuf>,
    /// Active directories whose custom resource is gone: removed when their run ends.
    gone: HashSet<PathBuf>,
}

impl Artifacts {
    /// The directories under `work_dir` of the kind `group/version/kind`.
    pub(crate) fn new(work_dir: &Path, group: &str, version: &str, kind: &str) -> Artifacts {
        Artifacts {
            root: work_dir.join("runner").join(group).join(version).join(kind),
            state: Mutex::default(),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The data directory of the custom resource `namespace/name` (`None`: cluster-scoped).
    pub(crate) fn dir(&self, namespace: Option<&str>, name: &str) -> PathBuf {
        self.root.join(namespace.unwrap_or_default()).join(name)
    }

    /// Marks `dir` in use until the returned guard drops.
    pub(crate) fn begin(&self, dir: PathBuf) -> InUse<'_> {
        self.state().active.insert(dir.clone());
        InUse {
            artifacts: self,
            dir,
        }
    }

    /// The custom resource `namespace/name` is gone: its directory is removed now, or when
    /// its run ends.
    pub(crate) fn forget(&self, namespace: Option<&str>, name: &str) {
        let dir = self.dir(namespace, name);
        let mut state = self.state();
        if state.active.contains(&dir) {
            state.gone.insert(dir);
        } else {
            drop(state);
            remove(&dir);
        }
    }
}

/// A directory in use by a run (see [`Artifacts::begin`]).
pub(crate) struct InUse<'a> {
    artifacts: &'a Artifacts,
    dir: PathBuf,
}

impl Drop for InUse<'_> {
    fn drop(&mut self) {
        let mut state = self.artifacts.state();
        state.active.remove(&self.dir);
        if state.gone.remove(&self.dir) {
            drop(state);
            remove(&self.dir);
        }
    }
}

/// Removes a data directory off the async threads when there are some (thousands of job
/// event files take a while), and its namespace's directory when that is left empty.
fn remove(dir: &Path) {
    let dir = dir.to_path_buf();
    match tokio::runtime::Handle::try_current() {
        Ok(runtime) => drop(runtime.spawn_blocking(move || remove_now(&dir))),
        Err(_) => remove_now(&dir),
    }
}

fn remove_now(dir: &Path) {
    match std::fs::remove_dir_all(dir) {
        Ok(()) => {
            tracing::debug!(dir = %dir.display(), "removed the runs of a deleted custom resource")
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
        Err(e) => {
            tracing::warn!(dir = %dir.display(), error = %e, "cannot remove the runs of a deleted custom resource");
            return;
        }
    }
    if let Some(parent) = dir.parent() {
        // Fails, as it should, while other custom resources of the namespace have runs.
        let _ = std::fs::remove_dir(parent);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gone_custom_resources_directory_is_removed_once_its_run_ends() {
        let work = tempfile::tempdir().expect("tempdir");
        let artifacts = Artifacts::new(work.path(), "cache.example.com", "v1", "Memcached");
        let (a, b) = (
            artifacts.dir(Some("default"), "a"),
            artifacts.dir(Some("default"), "b"),
        );
        for dir in [&a, &b] {
            std::fs::create_dir_all(dir.join("artifacts/1")).expect("mkdir");
        }
        let run = artifacts.begin(a.clone());
        artifacts.forget(Some("default"), "a");
        assert!(a.is_dir(), "kept while its run goes on");
        drop(run);
        assert!(!a.exists(), "removed when the run ended");
        assert!(b.is_dir(), "another custom resource's runs stay");
        artifacts.forget(Some("default"), "b");
        assert!(!b.exists() && !b.parent().expect("namespace dir").exists());
        artifacts.forget(None, "never-ran");
    }
}
