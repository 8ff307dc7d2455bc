//! The suite file, `kuttl-test.yaml`: a `kuttl.dev/*` `TestSuite` (KUDO's older `kudo.dev/*`
//! is read as an alias, with a warning). Unlike kuttl, unknown or miscased fields (`startKind`)
//! are reported as warnings instead of silently ignored.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use crate::types::{self, Command, GROUP, LEGACY_GROUP};
use crate::yaml;

/// kuttl's per-step default timeout, in seconds.
pub const DEFAULT_TIMEOUT: i64 = 30;
/// kuttl's default number of tests run at once.
pub const DEFAULT_PARALLEL: i64 = 8;

/// A kuttl `TestSuite` (the fields of kuttl v0.26; see kuttl's docs for each).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TestSuite {
    /// `metadata` (its `name` names the report's root).
    pub metadata: Metadata,
    /// Directories whose subdirectories are tests.
    pub test_dirs: Vec<String>,
    /// CRDs installed before the tests (walked recursively).
    pub crd_dir: String,
    /// Manifests applied before the tests (never cleaned up).
    pub manifest_dirs: Vec<String>,
    /// Commands run once before the tests (`background: true` runs until the end).
    pub commands: Vec<Command>,
    /// An envtest-like control plane: API server, GC and namespaces; pods stay Pending.
    pub start_control_plane: bool,
    /// kuttl pipes the control plane's output to stdout (not supported on the embedded plane).
    pub attach_control_plane_output: bool,
    /// Deprecated in kuttl and ignored.
    pub control_plane_args: Vec<String>,
    /// A kind cluster (opkit: a plane with every built-in controller; pods become Ready).
    #[serde(rename = "startKIND")]
    pub start_kind: bool,
    /// kind's cluster config (not used by the embedded plane).
    pub kind_config: String,
    /// kind's context name (not used by the embedded plane).
    pub kind_context: String,
    /// kind's node cache (not used by the embedded plane).
    pub kind_node_cache: bool,
    /// Images loaded into kind (not used by the embedded plane).
    pub kind_containers: Vec<String>,
    /// Keep the objects and namespaces tests create.
    pub skip_delete: bool,
    /// Keep the cluster after the run.
    pub skip_cluster_delete: bool,
    /// Per-step timeout in seconds (0 = 30).
    pub timeout: i64,
    /// Tests run at once (0 = 8).
    pub parallel: i64,
    /// Where reports go ("" = the current directory).
    pub artifacts_dir: String,
    /// `xml` (JUnit), any other non-empty value JSON, "" no report.
    pub report_format: String,
    /// The report's file name without extension ("" = `kuttl-report`).
    pub report_name: String,
    /// `test` or `step` (default).
    pub report_granularity: String,
    /// A namespace every test shares ("" = a fresh namespace per test).
    pub namespace: String,
    /// Log kinds to suppress (only `events` has an effect).
    pub suppress: Vec<String>,
    /// Globs of entries in test directories to skip (absent = `README*`).
    pub ignore_files: Option<Vec<String>>,
}

const SUITE_FIELDS: &[&str] = &[
    "testDirs",
    "crdDir",
    "manifestDirs",
    "commands",
    "startControlPlane",
    "attachControlPlaneOutput",
    "controlPlaneArgs",
    "startKIND",
    "kindConfig",
    "kindContext",
    "kindNodeCache",
    "kindContainers",
    "skipDelete",
    "skipClusterDelete",
    "timeout",
    "parallel",
    "artifactsDir",
    "reportFormat",
    "reportName",
    "reportGranularity",
    "namespace",
    "suppress",
    "ignoreFiles",
    "config",
];

impl TestSuite {
    /// `metadata.name` (the report's root name).
    pub fn name(&self) -> &str {
        &self.metadata.name
    }

    /// The per-step timeout in seconds (kuttl's `GetTimeout`: 0 → 30).
    pub fn step_timeout(&self) -> i64 {
        if self.timeout == 0 {
            DEFAULT_TIMEOUT
        } else {
            self.timeout
        }
    }

    /// Tests run at once (0 → 8).
    pub fn parallelism(&self) -> usize {
        if self.parallel <= 0 {
            DEFAULT_PARALLEL as usize
        } else {
            self.parallel as usize
        }
    }

    /// The ignore globs: `README*` when the field is absent.
    pub fn ignore_globs(&self) -> Vec<String> {
        self.ignore_files
            .clone()
            .unwrap_or_else(|| vec!["README*".to_string()])
    }

    /// Whether event dumps are suppressed.
    pub fn suppress_events(&self) -> bool {
        self.suppress
            .iter()
            .any(|s| s.eq_ignore_ascii_case("events"))
    }
}

/// A TestSuite's metadata.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Metadata {
    /// The suite's name.
    pub name: String,
}

/// A suite file read: the suite and the warnings to print.
#[derive(Debug, Clone, Default)]
pub struct LoadedSuite {
    /// The suite (the last `TestSuite` of the file).
    pub suite: TestSuite,
    /// Things the user should know (unknown fields, the legacy group, other kinds).
    pub warnings: Vec<String>,
}

/// Why a suite file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The YAML is malformed.
    #[error("{path}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The parser's message.
        message: String,
    },
    /// A field has the wrong type (`timeout: "30"`).
    #[error("{path}: bad TestSuite: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
}

/// Whether an `apiVersion`'s group is kuttl's, and the warning to print for the legacy alias.
pub(crate) fn kuttl_group(object: &Value) -> Option<Option<String>> {
    let (group, version) = yaml::group_version(object);
    match group {
        GROUP => Some(None),
        LEGACY_GROUP => Some(Some(format!(
            "{LEGACY_GROUP}/{version} {} is deprecated (kuttl removed it in v0.9): read as \
             {GROUP}/v1beta1",
            yaml::kind(object)
        ))),
        _ => None,
    }
}

/// Warnings for the unknown fields of a kuttl object.
pub(crate) fn field_warnings(object: &Value, known: &[&str], whre: &str) -> Vec<String> {
    yaml::unknown_fields(object, known)
        .into_iter()
        .map(|f| {
            format!(
                "{whre}: unknown field {f:?} in {} (ignored; field names are case-sensitive)",
                yaml::kind(object)
            )
        })
        .collect()
}

/// Reads a suite file (kuttl's `--config`).
pub fn load_suite(path: &Path) -> Result<LoadedSuite, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let docs = yaml::load_documents(&text).map_err(|message| ConfigError::Parse {
        path: path.to_path_buf(),
        message,
    })?;
    let mut loaded = LoadedSuite::default();
    let whre = path.display().to_string();
    for doc in docs {
        let kind = yaml::kind(&doc).to_string();
        match (kind.as_str(), kuttl_group(&doc)) {
            ("TestSuite", Some(legacy)) => {
                loaded.warnings.extend(legacy);
                loaded.warnings.extend(field_warnings(&doc, SUITE_FIELDS, &whre));
                for (i, c) in doc
                    .get("commands")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .enumerate()
                {
                    loaded.warnings.extend(field_warnings(
                        c,
                        types::COMMAND_FIELDS,
                        &format!("{whre}: commands[{i}]"),
                    ));
                }
                loaded.suite = serde_json::from_value(doc).map_err(|e| ConfigError::Invalid {
                    path: path.to_path_buf(),
                    message: e.to_string(),
                })?;
            }
            ("TestSuite", None) => loaded.warnings.push(format!(
                "bad configuration in file {whre:?}: TestSuite of {:?} ignored (want {GROUP}/v1beta1)",
                doc.get("apiVersion").and_then(Value::as_str).unwrap_or("")
            )),
            _ => loaded.warnings.push(format!("unknown object type: {kind}")),
        }
    }
    Ok(loaded)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(text: &str) -> Result<LoadedSuite, ConfigError> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kuttl-test.yaml");
        std::fs::write(&path, text).unwrap();
        load_suite(&path)
    }

    #[test]
    fn a_suite_reads_its_fields_and_defaults() {
        let l = load(
            "apiVersion: kuttl.dev/v1beta1\nkind: TestSuite\nmetadata: {name: s}\ntestDirs: [tests]\n\
             startKIND: true\nparallel: 2\n",
        )
        .unwrap();
        assert!(l.warnings.is_empty(), "{:?}", l.warnings);
        assert_eq!(l.suite.test_dirs, ["tests"]);
        assert!(l.suite.start_kind);
        assert_eq!(l.suite.parallelism(), 2);
        assert_eq!(l.suite.step_timeout(), 30);
        assert_eq!(l.suite.ignore_globs(), ["README*"]);
        assert_eq!(l.suite.name(), "s");
    }

    #[test]
    fn unknown_and_miscased_fields_are_warned_about() {
        let l = load("apiVersion: kuttl.dev/v1beta1\nkind: TestSuite\nstartKind: true\n").unwrap();
        assert!(!l.suite.start_kind);
        assert!(
            l.warnings[0].contains("unknown field \"startKind\""),
            "{:?}",
            l.warnings
        );
    }

    #[test]
    fn the_kudo_group_is_an_alias_with_a_warning() {
        let l = load("apiVersion: kudo.dev/v1alpha1\nkind: TestSuite\ntimeout: 5\n").unwrap();
        assert_eq!(l.suite.timeout, 5);
        assert!(l.warnings[0].contains("deprecated"), "{:?}", l.warnings);
    }

    #[test]
    fn a_wrongly_typed_field_is_an_error() {
        let e =
            load("apiVersion: kuttl.dev/v1beta1\nkind: TestSuite\ntimeout: \"30\"\n").unwrap_err();
        assert!(e.to_string().contains("bad TestSuite"), "{e}");
    }

    #[test]
    fn the_last_suite_wins_and_other_kinds_are_reported() {
        let l = load(
            "apiVersion: kuttl.dev/v1beta1\nkind: TestSuite\ntimeout: 5\n---\napiVersion: v1\n\
             kind: ConfigMap\n---\napiVersion: kuttl.dev/v1beta1\nkind: TestSuite\ntimeout: 7\n",
        )
        .unwrap();
        assert_eq!(l.suite.timeout, 7);
        assert_eq!(l.warnings, ["unknown object type: ConfigMap"]);
    }
}
