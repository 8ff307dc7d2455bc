//! What a caller sees of a run while it goes, beyond the log lines: progress events (for a
//! status line on a terminal) and the log of a process under test — the operator `opkit test`
//! starts in an operator project — so that each test keeps, and on failure prints, the lines
//! that process wrote while the test ran (kuttl's collectors, for the operator).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::case::CaseRecord;

/// A moment of a run.
#[derive(Debug)]
pub enum Progress<'a> {
    /// This many tests are about to run.
    Planned(usize),
    /// A test started.
    Started(&'a str),
    /// A test ended.
    Finished(&'a CaseRecord),
}

/// Receives [`Progress`] events; called from the tasks running tests.
pub type ProgressFn = Arc<dyn Fn(Progress<'_>) + Send + Sync>;

/// The output lines of a process under test, each with the time it arrived; cheap to clone
/// (clones share the lines).
#[derive(Clone, Debug)]
pub struct ProcessLog {
    name: String,
    lines: Arc<Mutex<Vec<(Instant, String)>>>,
}

impl ProcessLog {
    /// An empty log of the process called `name` (`operator`), which names it in the output.
    pub fn new(name: impl Into<String>) -> ProcessLog {
        ProcessLog {
            name: name.into(),
            lines: Arc::default(),
        }
    }

    /// The process's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Records a line the process wrote now.
    pub fn push(&self, line: impl Into<String>) {
        let mut lines = self.lines.lock().unwrap_or_else(|e| e.into_inner());
        lines.push((Instant::now(), line.into()));
    }

    /// Every line recorded at or after `start`.
    pub fn since(&self, start: Instant) -> Vec<String> {
        let lines = self.lines.lock().unwrap_or_else(|e| e.into_inner());
        let first = lines.partition_point(|(at, _)| *at < start);
        lines[first..].iter().map(|(_, l)| l.clone()).collect()
    }

    /// Every line recorded.
    pub fn all(&self) -> Vec<String> {
        let lines = self.lines.lock().unwrap_or_else(|e| e.into_inner());
        lines.iter().map(|(_, l)| l.clone()).collect()
    }
}

/// Where a run keeps a process's log per test: `<dir>/<test>.log`.
#[derive(Clone, Debug)]
pub(crate) struct ProcessLogs {
    pub log: ProcessLog,
    pub dir: PathBuf,
}

impl ProcessLogs {
    /// Writes `lines` to the test's file; its path, or why it could not be written.
    pub fn keep(&self, test: &str, lines: &[String]) -> Result<PathBuf, String> {
        let path = self.dir.join(format!("{test}.log"));
        write_lines(&path, lines)
            .map(|()| path.clone())
            .map_err(|e| format!("cannot write {}: {e}", path.display()))
    }
}

fn write_lines(path: &Path, lines: &[String]) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut text = lines.join("\n");
    if !text.is_empty() {
        text.push('\n');
    }
    std::fs::write(path, text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_log_gives_the_lines_of_a_time_window() {
        let log = ProcessLog::new("operator");
        log.push("before");
        let start = Instant::now();
        log.push("during 1");
        log.clone().push("during 2");
        assert_eq!(log.since(start), ["during 1", "during 2"]);
        assert_eq!(log.all().len(), 3);
    }

    #[test]
    fn each_test_keeps_its_lines_in_a_file_of_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let logs = ProcessLogs {
            log: ProcessLog::new("operator"),
            dir: dir.path().join("logs"),
        };
        let path = logs.keep("guestbook", &["a".into(), "b".into()]).unwrap();
        assert_eq!(path, dir.path().join("logs/guestbook.log"));
        assert_eq!(std::fs::read_to_string(path).unwrap(), "a\nb\n");
    }
}
