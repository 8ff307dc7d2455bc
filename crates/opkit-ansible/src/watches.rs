//! `watches.yaml`: which custom resource kinds the operator serves, and with which role or
//! playbook.
//!
//! The schema is operator-sdk's Ansible plugin's (`internal/ansible/watches`): `group`,
//! `version`, `kind`, `role` or `playbook`, `vars`, `reconcilePeriod` (a Go duration, default
//! 0 = only on changes), `manageStatus` (default true), `watchDependentResources` (default
//! true), `watchClusterScopedResources` (default false), `snakeCaseParameters` (default true),
//! `watchAnnotationsChanges` (default false), `markUnsafe` (default false),
//! `maxRunnerArtifacts` (default 20; 0 means the default), `blacklist` (group/version/kind
//! entries), `selector` (a label selector on the custom resources) and `finalizer` (`name`,
//! `role` or `playbook`, `vars`). As upstream, `${VAR}` and `$VAR` in the file expand from
//! the environment first (an unset variable stays as written).
//!
//! Paths: a playbook path, or a role given as a path, is taken from the directory of
//! `watches.yaml` when relative (operator-sdk takes the working directory, which is the same
//! directory in its images). A role given by name is looked up where upstream looks: a fully
//! qualified `namespace.collection.role` under `ANSIBLE_COLLECTIONS_PATH`, then under each
//! `ANSIBLE_ROLES_PATH` entry (with and without `roles/`), then `roles/<name>` beside the
//! file. Everything is checked when the file loads, so the operator refuses to start on a bad
//! file; errors name the entry and the field. Unlike upstream, unknown fields and an entry
//! with both `role` and `playbook` are refused instead of ignored.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use opkit_apimachinery::LabelSelector;
use serde::Deserialize;

/// operator-sdk's default `maxRunnerArtifacts`.
pub const DEFAULT_MAX_RUNNER_ARTIFACTS: usize = 20;

/// What a run executes: a role (its directory) or a playbook (its file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A role directory, run on `localhost` as the only role of a generated play.
    Role(PathBuf),
    /// A playbook file.
    Playbook(PathBuf),
}

/// A group/version/kind (an entry of `blacklist`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Gvk {
    /// The API group (empty for the core group).
    #[serde(default)]
    pub group: String,
    /// The version.
    #[serde(default)]
    pub version: String,
    /// The kind.
    #[serde(default)]
    pub kind: String,
}

/// The finalizer of an entry: what runs when a custom resource is deleted.
#[derive(Debug, Clone)]
pub struct Finalizer {
    /// The finalizer's name (put on every custom resource of the kind).
    pub name: String,
    /// The role or playbook to run; `None`: the entry's own, with [`Finalizer::vars`].
    pub target: Option<Target>,
    /// Extra variables of the finalizer run (over the entry's `vars`).
    pub vars: serde_json::Map<String, serde_json::Value>,
}

/// One entry of `watches.yaml`, checked and resolved.
#[derive(Debug, Clone)]
pub struct Watch {
    /// The custom resource's API group (may be empty).
    pub group: String,
    /// The custom resource's version.
    pub version: String,
    /// The custom resource's kind.
    pub kind: String,
    /// The role or playbook each reconcile runs.
    pub target: Target,
    /// Extra variables of every run (over the spec's).
    pub vars: serde_json::Map<String, serde_json::Value>,
    /// Run every custom resource this often even without changes (`None`: only on changes).
    pub reconcile_period: Option<Duration>,
    /// Whether the operator writes the `Running`/`Successful`/`Failure` conditions.
    pub manage_status: bool,
    /// Whether changes of created objects run their custom resource's role again.
    pub watch_dependent_resources: bool,
    /// Whether dependents found through the `operator-sdk/primary-resource` annotations
    /// (cluster-scoped or in another namespace) are watched too.
    pub watch_cluster_scoped_resources: bool,
    /// Whether spec keys reach the run in snake_case.
    pub snake_case_parameters: bool,
    /// Whether an annotation change runs the role again.
    pub watch_annotations_changes: bool,
    /// Whether spec strings are passed as Ansible unsafe text (never templated).
    pub mark_unsafe: bool,
    /// How many runs' artifacts are kept per custom resource.
    pub max_runner_artifacts: usize,
    /// Dependent kinds never watched.
    pub blacklist: Vec<Gvk>,
    /// Only custom resources whose labels match are reconciled.
    pub selector: LabelSelector,
    /// The finalizer, if deletion runs something.
    pub finalizer: Option<Finalizer>,
}

impl Watch {
    /// `group/version, Kind=kind`, as logs and errors name the entry.
    pub fn name(&self) -> String {
        format!("{}/{}, Kind={}", self.group, self.version, self.kind)
    }
}

pub use opkit::watches::WatchesError;

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawFinalizer {
    #[serde(default)]
    name: String,
    #[serde(default)]
    role: String,
    #[serde(default)]
    playbook: String,
    #[serde(default)]
    vars: Option<serde_json::Map<String, serde_json::Value>>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawWatch {
    #[serde(default)]
    group: String,
    #[serde(default)]
    version: String,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    role: String,
    #[serde(default)]
    playbook: String,
    #[serde(default)]
    vars: Option<serde_json::Map<String, serde_json::Value>>,
    reconcile_period: Option<String>,
    manage_status: Option<bool>,
    watch_dependent_resources: Option<bool>,
    watch_cluster_scoped_resources: Option<bool>,
    snake_case_parameters: Option<bool>,
    watch_annotations_changes: Option<bool>,
    mark_unsafe: Option<bool>,
    #[serde(default)]
    max_runner_artifacts: usize,
    #[serde(default)]
    blacklist: Vec<Gvk>,
    #[serde(default)]
    selector: Option<serde_json::Value>,
    finalizer: Option<RawFinalizer>,
}

/// Where roles given by name are looked up (the environment, read once).
#[derive(Debug, Clone, Default)]
pub(crate) struct RolePaths {
    /// `ANSIBLE_COLLECTIONS_PATH` entries.
    pub(crate) collections: Vec<PathBuf>,
    /// `ANSIBLE_ROLES_PATH` entries.
    pub(crate) roles: Vec<PathBuf>,
}

impl RolePaths {
    fn from_env() -> RolePaths {
        let split = |name: &str| -> Vec<PathBuf> {
            std::env::var(name)
                .ok()
                .filter(|v| !v.is_empty())
                .map(|v| v.split(':').map(PathBuf::from).collect())
                .unwrap_or_default()
        };
        let mut collections = split("ANSIBLE_COLLECTIONS_PATH");
        if collections.is_empty() {
            collections = split("ANSIBLE_COLLECTIONS_PATHS");
        }
        RolePaths {
            collections,
            roles: split("ANSIBLE_ROLES_PATH"),
        }
    }
}

/// Reads and checks `watches.yaml` at `path` (see the [module docs](self)).
pub fn load(path: &Path) -> Result<Vec<Watch>, WatchesError> {
    let text = opkit::watches::read(path)?;
    let base = path.parent().unwrap_or(Path::new("."));
    let text = expand_env(&text, &|name| std::env::var(name).ok());
    parse(&text, path, base, &RolePaths::from_env())
}

/// The watch of operator-sdk's Memcached example (`cache.example.com/v1alpha1`, role
/// `memcached`), for unit tests.
#[cfg(test)]
pub(crate) fn memcached_for_test() -> Watch {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("roles/memcached")).expect("mkdir");
    parse(
        "- group: cache.example.com\n  version: v1alpha1\n  kind: Memcached\n  role: memcached\n",
        &dir.path().join("watches.yaml"),
        dir.path(),
        &Default::default(),
    )
    .expect("valid")
    .remove(0)
}

/// Parses `text` (the contents of the file `path`, environment already expanded), resolving
/// paths against `base`.
pub(crate) fn parse(
    text: &str,
    path: &Path,
    base: &Path,
    role_paths: &RolePaths,
) -> Result<Vec<Watch>, WatchesError> {
    let raw: Vec<RawWatch> = opkit::watches::entries(text, path, "its role or playbook")?;
    let mut seen = HashSet::new();
    raw.into_iter()
        .enumerate()
        .map(|(index, raw)| {
            let gvk = format!("{}/{}, Kind={}", raw.group, raw.version, raw.kind);
            check(raw, base, role_paths, &mut seen).map_err(|(field, message)| {
                WatchesError::Invalid {
                    path: path.to_path_buf(),
                    index,
                    gvk,
                    field,
                    message,
                }
            })
        })
        .collect()
}

type Invalid = (&'static str, String);

/// Checks and resolves one entry; an error names the field.
fn check(
    raw: RawWatch,
    base: &Path,
    role_paths: &RolePaths,
    seen: &mut HashSet<(String, String, String)>,
) -> Result<Watch, Invalid> {
    if raw.version.is_empty() {
        return Err(("version", "must not be empty".into()));
    }
    if raw.kind.is_empty() {
        return Err(("kind", "must not be empty".into()));
    }
    if !seen.insert((raw.group.clone(), raw.version.clone(), raw.kind.clone())) {
        return Err(("kind", "duplicate group/version/kind".into()));
    }
    let target = target(&raw.role, &raw.playbook, base, role_paths)?
        .ok_or(("role", "set a role or a playbook".to_string()))?;
    let finalizer = raw
        .finalizer
        .map(|f| finalizer(f, base, role_paths))
        .transpose()?;
    let selector_json = raw
        .selector
        .filter(|s| !s.is_null())
        .unwrap_or_else(|| serde_json::json!({}));
    let selector = LabelSelector::from_label_selector_json(&selector_json)
        .map_err(|e| ("selector", e.to_string()))?;
    let reconcile_period = raw
        .reconcile_period
        .as_deref()
        .map(opkit_apimachinery::duration::parse_std)
        .transpose()
        .map_err(|e| ("reconcilePeriod", e))?
        .filter(|d| !d.is_zero());
    for (i, gvk) in raw.blacklist.iter().enumerate() {
        if gvk.version.is_empty() || gvk.kind.is_empty() {
            return Err((
                "blacklist",
                format!("entry {i}: version and kind must not be empty"),
            ));
        }
    }
    Ok(Watch {
        group: raw.group,
        version: raw.version,
        kind: raw.kind,
        target,
        vars: raw.vars.unwrap_or_default(),
        reconcile_period,
        manage_status: raw.manage_status.unwrap_or(true),
        watch_dependent_resources: raw.watch_dependent_resources.unwrap_or(true),
        watch_cluster_scoped_resources: raw.watch_cluster_scoped_resources.unwrap_or(false),
        snake_case_parameters: raw.snake_case_parameters.unwrap_or(true),
        watch_annotations_changes: raw.watch_annotations_changes.unwrap_or(false),
        mark_unsafe: raw.mark_unsafe.unwrap_or(false),
        max_runner_artifacts: match raw.max_runner_artifacts {
            0 => DEFAULT_MAX_RUNNER_ARTIFACTS,
            n => n,
        },
        blacklist: raw.blacklist,
        selector,
        finalizer,
    })
}

fn finalizer(raw: RawFinalizer, base: &Path, role_paths: &RolePaths) -> Result<Finalizer, Invalid> {
    if raw.name.is_empty() {
        return Err(("finalizer.name", "a finalizer must have a name".into()));
    }
    let target = target(&raw.role, &raw.playbook, base, role_paths)
        .map_err(|(field, message)| (finalizer_field(field), message))?;
    let vars = raw.vars.unwrap_or_default();
    if target.is_none() && vars.is_empty() {
        return Err((
            "finalizer",
            "set a role, a playbook or vars (vars alone run the entry's own role or playbook)"
                .into(),
        ));
    }
    Ok(Finalizer {
        name: raw.name,
        target,
        vars,
    })
}

fn finalizer_field(field: &'static str) -> &'static str {
    match field {
        "playbook" => "finalizer.playbook",
        _ => "finalizer.role",
    }
}

/// The role or playbook of an entry (`None` when neither is set).
fn target(
    role: &str,
    playbook: &str,
    base: &Path,
    role_paths: &RolePaths,
) -> Result<Option<Target>, Invalid> {
    match (role.is_empty(), playbook.is_empty()) {
        (true, true) => Ok(None),
        (false, false) => Err(("role", "set a role or a playbook, not both".into())),
        (true, false) => {
            let path = base.join(playbook);
            if path.is_file() {
                Ok(Some(Target::Playbook(path)))
            } else {
                Err((
                    "playbook",
                    format!("playbook {} was not found", path.display()),
                ))
            }
        }
        (false, true) => {
            let candidates = role_candidates(role, base, role_paths);
            candidates
                .iter()
                .find(|p| p.is_dir())
                .map(|p| Some(Target::Role(p.clone())))
                .ok_or_else(|| {
                    let tried: Vec<String> =
                        candidates.iter().map(|p| p.display().to_string()).collect();
                    (
                        "role",
                        format!("role {role} was not found (looked in {})", tried.join(", ")),
                    )
                })
        }
    }
}

/// Where a role may be, in upstream's order.
fn role_candidates(role: &str, base: &Path, role_paths: &RolePaths) -> Vec<PathBuf> {
    let path = Path::new(role);
    if path.is_absolute() {
        return vec![path.to_path_buf()];
    }
    let mut out = Vec::new();
    let parts: Vec<&str> = role.split('.').collect();
    if let [namespace, collection, name] = parts[..] {
        let collections = if role_paths.collections.is_empty() {
            vec![PathBuf::from("/usr/share/ansible/collections")]
        } else {
            role_paths.collections.clone()
        };
        for parent in collections {
            out.push(
                parent
                    .join("ansible_collections")
                    .join(namespace)
                    .join(collection)
                    .join("roles")
                    .join(name),
            );
        }
    }
    for parent in &role_paths.roles {
        out.push(parent.join(role));
        out.push(parent.join("roles").join(role));
    }
    if role.contains('/') {
        out.push(base.join(role));
    }
    out.push(base.join("roles").join(role));
    out
}

/// Upstream's `replaceEnvVariables`: Go's `os.Expand` over the whole file, where a variable
/// that is not set keeps its reference (`${NAME}`).
pub(crate) fn expand_env(s: &str, env: &dyn Fn(&str) -> Option<String>) -> String {
    opkit_apimachinery::go_expand(s, &|name| {
        env(name).unwrap_or_else(|| format!("${{{name}}}"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project() -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join("roles/memcached/tasks")).expect("mkdir");
        std::fs::create_dir_all(dir.path().join("roles/cleanup/tasks")).expect("mkdir");
        std::fs::write(dir.path().join("site.yml"), "- hosts: localhost\n").expect("write");
        dir
    }

    fn load_text(dir: &Path, text: &str) -> Result<Vec<Watch>, WatchesError> {
        parse(text, &dir.join("watches.yaml"), dir, &RolePaths::default())
    }

    fn invalid(err: WatchesError) -> (&'static str, String) {
        match err {
            WatchesError::Invalid { field, message, .. } => (field, message),
            other => panic!("expected an invalid entry, got {other}"),
        }
    }

    #[test]
    fn an_entry_gets_operator_sdks_defaults() {
        let dir = project();
        let w = load_text(
            dir.path(),
            "- group: cache.example.com\n  version: v1alpha1\n  kind: Memcached\n  role: memcached\n",
        )
        .expect("valid")
        .remove(0);
        assert_eq!(w.target, Target::Role(dir.path().join("roles/memcached")));
        assert!(w.manage_status && w.watch_dependent_resources && w.snake_case_parameters);
        assert!(!w.watch_cluster_scoped_resources && !w.watch_annotations_changes);
        assert!(!w.mark_unsafe);
        assert_eq!(w.max_runner_artifacts, 20);
        assert_eq!(w.reconcile_period, None);
        assert!(w.finalizer.is_none());
        assert_eq!(w.name(), "cache.example.com/v1alpha1, Kind=Memcached");
    }

    #[test]
    fn every_field_is_read() {
        let dir = project();
        let w = load_text(
            dir.path(),
            r#"
- group: cache.example.com
  version: v1alpha1
  kind: Memcached
  playbook: site.yml
  vars: {state: present}
  reconcilePeriod: 1m30s
  manageStatus: false
  watchDependentResources: false
  watchClusterScopedResources: true
  snakeCaseParameters: false
  watchAnnotationsChanges: true
  markUnsafe: true
  maxRunnerArtifacts: 3
  blacklist: [{group: apps, version: v1, kind: ReplicaSet}]
  selector: {matchLabels: {tier: cache}}
  finalizer: {name: cache.example.com/finalizer, role: cleanup, vars: {state: absent}}
"#,
        )
        .expect("valid")
        .remove(0);
        assert_eq!(w.target, Target::Playbook(dir.path().join("site.yml")));
        assert_eq!(w.vars["state"], "present");
        assert_eq!(w.reconcile_period, Some(Duration::from_secs(90)));
        assert!(!w.manage_status && !w.watch_dependent_resources && !w.snake_case_parameters);
        assert!(w.watch_cluster_scoped_resources && w.watch_annotations_changes && w.mark_unsafe);
        assert_eq!(w.max_runner_artifacts, 3);
        assert_eq!(w.blacklist[0].kind, "ReplicaSet");
        let f = w.finalizer.expect("a finalizer");
        assert_eq!(f.name, "cache.example.com/finalizer");
        assert_eq!(
            f.target,
            Some(Target::Role(dir.path().join("roles/cleanup")))
        );
        assert_eq!(f.vars["state"], "absent");
    }

    #[test]
    fn refuses_entries_with_missing_or_conflicting_fields() {
        let dir = project();
        let cases = [
            (
                "- version: v1\n  kind: A\n",
                "role",
                "set a role or a playbook",
            ),
            (
                "- kind: A\n  role: memcached\n",
                "version",
                "must not be empty",
            ),
            (
                "- version: v1\n  kind: A\n  role: memcached\n  playbook: site.yml\n",
                "role",
                "not both",
            ),
            (
                "- version: v1\n  kind: A\n  role: nope\n",
                "role",
                "role nope was not found",
            ),
            (
                "- version: v1\n  kind: A\n  playbook: gone.yml\n",
                "playbook",
                "was not found",
            ),
            (
                "- version: v1\n  kind: A\n  role: memcached\n  reconcilePeriod: soon\n",
                "reconcilePeriod",
                "",
            ),
            (
                "- version: v1\n  kind: A\n  role: memcached\n  finalizer: {role: cleanup}\n",
                "finalizer.name",
                "must have a name",
            ),
            (
                "- version: v1\n  kind: A\n  role: memcached\n  finalizer: {name: f}\n",
                "finalizer",
                "set a role, a playbook or vars",
            ),
            (
                "- version: v1\n  kind: A\n  role: memcached\n  finalizer: {name: f, role: gone}\n",
                "finalizer.role",
                "role gone was not found",
            ),
            (
                "- version: v1\n  kind: A\n  role: memcached\n- version: v1\n  kind: A\n  role: memcached\n",
                "kind",
                "duplicate",
            ),
        ];
        for (text, field, message) in cases {
            let (f, m) = invalid(load_text(dir.path(), text).expect_err(text));
            assert_eq!(f, field, "{text}: {m}");
            assert!(m.contains(message), "{text}: {m}");
        }
    }

    #[test]
    fn a_finalizer_with_vars_alone_runs_the_entrys_role() {
        let dir = project();
        let w = load_text(
            dir.path(),
            "- version: v1\n  kind: A\n  role: memcached\n  finalizer: {name: f, vars: {state: absent}}\n",
        )
        .expect("valid")
        .remove(0);
        let f = w.finalizer.expect("finalizer");
        assert_eq!(f.target, None);
        assert_eq!(f.vars["state"], "absent");
    }

    #[test]
    fn refuses_unknown_fields_and_empty_files() {
        let dir = project();
        let err = load_text(
            dir.path(),
            "- version: v1\n  kind: A\n  role: memcached\n  roel: x\n",
        )
        .expect_err("typo");
        assert!(err.to_string().contains("roel"), "{err}");
        let err = load_text(dir.path(), "[]").expect_err("empty");
        assert!(matches!(err, WatchesError::Empty { .. }), "{err}");
    }

    #[test]
    fn roles_are_found_in_collections_and_roles_paths() {
        let dir = project();
        let coll = dir
            .path()
            .join("colls/ansible_collections/acme/cache/roles/memcached");
        std::fs::create_dir_all(&coll).expect("mkdir");
        let extra = dir.path().join("extra/roles/web");
        std::fs::create_dir_all(&extra).expect("mkdir");
        let paths = RolePaths {
            collections: vec![dir.path().join("colls")],
            roles: vec![dir.path().join("extra")],
        };
        let text = "- version: v1\n  kind: A\n  role: acme.cache.memcached\n- version: v1\n  kind: B\n  role: web\n";
        let w = parse(text, &dir.path().join("watches.yaml"), dir.path(), &paths).expect("valid");
        assert_eq!(w[0].target, Target::Role(coll));
        assert_eq!(w[1].target, Target::Role(extra));
    }

    #[test]
    fn environment_references_expand_and_unset_ones_stay() {
        let env = |name: &str| (name == "ROLE").then(|| "memcached".to_string());
        assert_eq!(expand_env("role: ${ROLE}", &env), "role: memcached");
        assert_eq!(expand_env("role: $ROLE!", &env), "role: memcached!");
        assert_eq!(
            expand_env("x: ${UNSET} $UNSET", &env),
            "x: ${UNSET} ${UNSET}"
        );
        // Go's os.Expand: a lone `$` stays, bad syntax (`${}`) is dropped.
        assert_eq!(expand_env("cost: 5$ ${}", &env), "cost: 5$ ");
    }
}
