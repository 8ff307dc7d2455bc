//! Finding chainsaw tests: every directory under a test dir (recursively) that holds a
//! `chainsaw-test.yaml` (or `.yml`, `.json`) is a chainsaw test directory; its file holds one
//! or more `Test` documents. Loading parses every operation up front, so a test that names
//! something opkit cannot run fails before it touches the cluster.

use std::path::{Path, PathBuf};

use crate::chainsaw::model::{API_VERSION, Block, Operation, RawOperation, Step, Test};

/// The file names chainsaw looks for (its `--test-file` default, `chainsaw-test`).
pub(crate) const FILE_NAMES: &[&str] = &[
    "chainsaw-test.yaml",
    "chainsaw-test.yml",
    "chainsaw-test.json",
];

/// A chainsaw test file found under a test dir.
#[derive(Debug, Clone)]
pub(crate) struct Found {
    /// The test dir as given.
    pub suite: String,
    /// The directory of the file (relative paths in the tests start here).
    pub dir: PathBuf,
    /// The file.
    pub file: PathBuf,
}

/// A step with its operations parsed.
#[derive(Debug, Clone)]
pub(crate) struct LoadedStep {
    pub name: String,
    pub step: Step,
    pub try_: Vec<Operation>,
    pub catch: Vec<Operation>,
    pub finally: Vec<Operation>,
    pub cleanup: Vec<Operation>,
}

/// A test ready to run.
#[derive(Debug, Clone)]
pub(crate) struct LoadedTest {
    pub name: String,
    pub test: Test,
    pub steps: Vec<LoadedStep>,
    pub catch: Vec<Operation>,
}

/// The chainsaw test files under `dir` (sorted by path).
pub(crate) fn find(suite: &str, dir: &Path) -> Result<Vec<Found>, String> {
    let mut out = Vec::new();
    walk(suite, dir, &mut out)?;
    out.sort_by(|a, b| a.file.cmp(&b.file));
    Ok(out)
}

fn walk(suite: &str, dir: &Path, out: &mut Vec<Found>) -> Result<(), String> {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| format!("cannot read test dir {}: {e}", dir.display()))?;
    for name in FILE_NAMES {
        let file = dir.join(name);
        if file.is_file() {
            out.push(Found {
                suite: suite.to_string(),
                dir: dir.to_path_buf(),
                file,
            });
            break;
        }
    }
    let mut subdirs: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    subdirs.sort();
    for d in subdirs {
        walk(suite, &d, out)?;
    }
    Ok(())
}

/// Whether `dir` is, or holds, a chainsaw test directory (then it is not a kuttl test).
pub(crate) fn holds(found: &[Found], dir: &Path) -> bool {
    found.iter().any(|f| f.dir.starts_with(dir))
}

fn operations(raw: &[RawOperation], block: Block, what: &str) -> Result<Vec<Operation>, String> {
    raw.iter()
        .enumerate()
        .map(|(i, r)| Operation::parse(r, block).map_err(|e| format!("{what}[{i}]: {e}")))
        .collect()
}

/// Loads the tests of a file; the fallback name (the directory's) is used when a test has no
/// `metadata.name`.
pub(crate) fn load(found: &Found) -> Result<Vec<LoadedTest>, String> {
    let text = std::fs::read_to_string(&found.file)
        .map_err(|e| format!("cannot read {}: {e}", found.file.display()))?;
    let docs = crate::yaml::load_documents(&text)
        .map_err(|e| format!("cannot load {}: {e}", found.file.display()))?;
    let fallback = found
        .dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut tests = Vec::new();
    for (i, doc) in docs.iter().enumerate() {
        let api_version = doc.get("apiVersion").and_then(|v| v.as_str()).unwrap_or("");
        let kind = crate::yaml::kind(doc);
        let at = format!("{} (document {})", found.file.display(), i + 1);
        if kind != "Test" || !api_version.starts_with("chainsaw.kyverno.io/") {
            return Err(format!(
                "{at}: expected a chainsaw Test, found {api_version} {kind}"
            ));
        }
        if api_version != API_VERSION {
            return Err(format!(
                "{at}: {api_version} Test is not supported yet (use {API_VERSION})"
            ));
        }
        let test: Test = serde_json::from_value(doc.clone()).map_err(|e| format!("{at}: {e}"))?;
        let name = match test.name() {
            "" => fallback.clone(),
            n => n.to_string(),
        };
        let mut steps = Vec::new();
        for (s, step) in test.spec.steps.iter().enumerate() {
            let step_name = if step.name.is_empty() {
                format!("step-{}", s + 1)
            } else {
                step.name.clone()
            };
            let what = |block: &str| format!("{at}: step {step_name}: {block}");
            steps.push(LoadedStep {
                try_: operations(&step.try_, Block::Try, &what("try"))?,
                catch: operations(&step.catch, Block::Handler, &what("catch"))?,
                finally: operations(&step.finally, Block::Handler, &what("finally"))?,
                cleanup: operations(&step.cleanup, Block::Handler, &what("cleanup"))?,
                name: step_name,
                step: step.clone(),
            });
        }
        let catch = operations(&test.spec.catch, Block::Handler, &format!("{at}: catch"))?;
        tests.push(LoadedTest {
            name,
            test,
            steps,
            catch,
        });
    }
    if tests.is_empty() {
        return Err(format!("{}: no Test in the file", found.file.display()));
    }
    Ok(tests)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, path: &str, text: &str) {
        let p = dir.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    #[test]
    fn tests_are_found_recursively_and_load_every_document() {
        let d = tempfile::tempdir().unwrap();
        write(
            d.path(),
            "a/chainsaw-test.yaml",
            "apiVersion: chainsaw.kyverno.io/v1alpha1\nkind: Test\nmetadata: {name: one}\nspec:\n  steps:\n  - try:\n    - sleep: {duration: 1ms}\n---\napiVersion: chainsaw.kyverno.io/v1alpha1\nkind: Test\nspec:\n  steps:\n  - name: s\n    try: []\n",
        );
        write(
            d.path(),
            "group/b/chainsaw-test.yml",
            "apiVersion: chainsaw.kyverno.io/v1alpha1\nkind: Test\nmetadata: {name: two}\nspec: {steps: []}\n",
        );
        write(d.path(), "kuttl/00-x.yaml", "a: 1\n");
        let found = find("e2e", d.path()).unwrap();
        assert_eq!(found.len(), 2);
        assert!(holds(&found, &d.path().join("group")));
        assert!(!holds(&found, &d.path().join("kuttl")));
        let a = load(&found[0]).unwrap();
        assert_eq!(a.len(), 2);
        assert_eq!(a[0].name, "one");
        assert_eq!(a[0].steps[0].name, "step-1");
        assert_eq!(a[1].name, "a");
        assert_eq!(a[1].steps[0].name, "s");
    }

    #[test]
    fn unsupported_fields_kinds_and_operations_fail_the_load_by_name() {
        let d = tempfile::tempdir().unwrap();
        let case = |text: &str| {
            write(d.path(), "t/chainsaw-test.yaml", text);
            let found = find("e2e", d.path()).unwrap();
            load(&found[0]).unwrap_err()
        };
        let e = case(
            "apiVersion: chainsaw.kyverno.io/v1alpha1\nkind: Test\nspec:\n  steps:\n  - try:\n    - proxy: {}\n",
        );
        assert!(
            e.ends_with("step step-1: try[0]: operation proxy is not supported by opkit yet"),
            "{e}"
        );
        let e = case(
            "apiVersion: chainsaw.kyverno.io/v1alpha1\nkind: Test\nspec:\n  scenarios: []\n  steps: []\n",
        );
        assert!(e.contains("unknown field `scenarios`"), "{e}");
        let e = case("apiVersion: chainsaw.kyverno.io/v1alpha2\nkind: Test\nspec: {}\n");
        assert!(e.contains("v1alpha2 Test is not supported yet"), "{e}");
        let e = case("apiVersion: v1\nkind: ConfigMap\n");
        assert!(e.contains("expected a chainsaw Test"), "{e}");
    }
}
