//! Finding tests and loading their steps, with kuttl's rules: every immediate subdirectory of
//! a test dir is a test; entries named `NN-<name>.yaml` (or `NN-<dir>/`) are steps, grouped by
//! their number; `assert`/`errors` as the first name word make assert and errors files;
//! `TestStep`, `TestAssert` and `TestFile` configure the step; `ignoreFiles` globs skip entries.
//!
//! Differences on purpose: `TestStep.apply/assert/error` files are loaded once (kuttl loads
//! them again for every later file of the step), and templated `.gotmpl.yaml` files, step
//! kubeconfigs and URLs are refused with a clear error (not supported yet).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

use crate::config::{field_warnings, kuttl_group};
use crate::types::{TEST_ASSERT_FIELDS, TEST_STEP_FIELDS, TestAssert, TestFile, TestStep};
use crate::yaml;

static FILE_NAME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(\d+-)?([^-.]+)(-[^.]+)?((?:\.gotmpl)?\.yaml)?$").expect("a valid regex")
});

/// What a step file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FileKind {
    Apply,
    Assert,
    Errors,
}

/// A file name parsed by kuttl's grammar.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FileName {
    pub index: Option<i64>,
    pub kind: FileKind,
    pub name: String,
    pub template: bool,
}

/// Parses a base name; `None` when it does not follow the pattern, `Err` on index overflow.
pub(crate) fn parse_name(base: &str) -> Option<Result<FileName, String>> {
    let caps = FILE_NAME.captures(base)?;
    let index = match caps.get(1) {
        Some(m) => match m.as_str().trim_end_matches('-').parse::<i32>() {
            Ok(i) => Some(i as i64),
            Err(e) => return Some(Err(format!("parsing index failed: {e}"))),
        },
        None => None,
    };
    let first = &caps[2];
    let kind = match first.to_ascii_lowercase().as_str() {
        "assert" => FileKind::Assert,
        "errors" => FileKind::Errors,
        _ => FileKind::Apply,
    };
    let name = format!("{first}{}", caps.get(3).map_or("", |m| m.as_str()));
    let template = caps
        .get(4)
        .is_some_and(|m| m.as_str().starts_with(".gotmpl"));
    Some(Ok(FileName {
        index,
        kind,
        name,
        template,
    }))
}

/// A compiled `filepath.Match` glob (for `ignoreFiles`).
#[derive(Debug, Clone)]
pub(crate) struct Glob(Regex);

impl Glob {
    /// Compiles a Go `filepath.Match` pattern.
    pub(crate) fn new(pattern: &str) -> Result<Glob, String> {
        let bad = || format!("invalid ignoreFiles pattern {pattern:?}: syntax error in pattern");
        let mut re = String::from("^");
        let mut chars = pattern.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '*' => re.push_str("[^/]*"),
                '?' => re.push_str("[^/]"),
                '\\' => re.push_str(&regex::escape(&chars.next().ok_or_else(bad)?.to_string())),
                '[' => {
                    re.push('[');
                    if chars.peek() == Some(&'^') {
                        chars.next();
                        re.push('^');
                    }
                    let mut closed = false;
                    let mut empty = true;
                    for c in chars.by_ref() {
                        match c {
                            ']' if !empty => {
                                closed = true;
                                break;
                            }
                            '\\' | '[' | '&' | '~' => {
                                re.push('\\');
                                re.push(c);
                            }
                            c => re.push(c),
                        }
                        empty = false;
                    }
                    if !closed {
                        return Err(bad());
                    }
                    re.push(']');
                }
                c => re.push_str(&regex::escape(&c.to_string())),
            }
        }
        re.push('$');
        Regex::new(&re).map(Glob).map_err(|_| bad())
    }

    pub(crate) fn matches(&self, name: &str) -> bool {
        self.0.is_match(name)
    }
}

/// One test: a directory.
#[derive(Debug, Clone)]
pub(crate) struct TestDir {
    pub name: String,
    pub path: PathBuf,
    /// The test dir (suite) as given.
    pub suite: String,
}

/// The tests of a test dir: its immediate subdirectories, sorted.
pub(crate) fn list_tests(suite: &str, dir: &Path) -> Result<Vec<TestDir>, String> {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| format!("cannot read test dir {}: {e}", dir.display()))?;
    let mut tests = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| format!("cannot read test dir {}: {e}", dir.display()))?;
        if entry.path().is_dir() {
            tests.push(TestDir {
                name: entry.file_name().to_string_lossy().into_owned(),
                path: entry.path(),
                suite: suite.to_string(),
            });
        }
    }
    tests.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(tests)
}

/// A compiled CEL assertion.
pub(crate) struct CelCheck {
    pub source: String,
    pub program: opkit_cel::Expression,
}

/// A loaded step.
#[derive(Default)]
pub(crate) struct Step {
    pub index: i64,
    pub name: String,
    pub apply: Vec<Value>,
    pub asserts: Vec<Value>,
    pub errors: Vec<Value>,
    pub step: Option<TestStep>,
    pub assert: Option<TestAssert>,
    pub assert_all: Vec<CelCheck>,
    pub assert_any: Vec<CelCheck>,
}

impl Step {
    /// `<index>-<name>`, kuttl's `Step.String()`.
    pub(crate) fn label(&self) -> String {
        format!("{}-{}", self.index, self.name)
    }
}

/// What step loading needs from the suite.
pub(crate) struct LoadSettings<'a> {
    pub ignore: &'a [Glob],
    pub run_labels: &'a BTreeMap<String, String>,
}

/// Loads the steps of a test; `notes` gets the lines kuttl logs (ignored entries, skipped
/// files, unknown fields).
pub(crate) fn load_steps(
    dir: &Path,
    settings: &LoadSettings<'_>,
    notes: &mut Vec<String>,
) -> Result<Vec<Step>, String> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| format!("cannot read {}: {e}", dir.display()))?
        .filter_map(Result::ok)
        .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
        .collect();
    entries.sort();
    let mut files: BTreeMap<i64, Vec<PathBuf>> = BTreeMap::new();
    for (name, path) in entries {
        if settings.ignore.iter().any(|g| g.matches(&name)) {
            continue;
        }
        let parsed = match parse_name(&name) {
            None => {
                notes.push(format!(
                    "Ignoring {name:?}: name does not follow pattern \
                     \"(<number>-)<name>(-<name>)((.gotmpl).yaml)\"."
                ));
                continue;
            }
            Some(p) => p?,
        };
        let Some(index) = parsed.index else {
            notes.push(format!(
                "Ignoring {name:?}: does not begin with a number followed by a dash."
            ));
            continue;
        };
        let list = files.entry(index).or_default();
        if path.is_dir() {
            let mut inner: Vec<PathBuf> = std::fs::read_dir(&path)
                .map_err(|e| format!("cannot read {}: {e}", path.display()))?
                .filter_map(Result::ok)
                .map(|e| e.path())
                .collect();
            inner.sort();
            for p in inner {
                if p.is_dir() {
                    return Err(format!(
                        "step directory {} holds a directory: {}",
                        path.display(),
                        p.display()
                    ));
                }
                list.push(p);
            }
        } else {
            list.push(path);
        }
    }
    files
        .into_iter()
        .map(|(index, paths)| load_step(dir, index, &paths, settings, notes))
        .collect()
}

fn read_objects(path: &Path) -> Result<Vec<Value>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    yaml::load_documents(&text).map_err(|e| format!("cannot load {}: {e}", path.display()))
}

fn load_step(
    dir: &Path,
    index: i64,
    paths: &[PathBuf],
    settings: &LoadSettings<'_>,
    notes: &mut Vec<String>,
) -> Result<Step, String> {
    let mut step = Step {
        index,
        ..Step::default()
    };
    let mut first_apply: Option<String> = None;
    for path in paths {
        let base = path
            .file_name()
            .map(|b| b.to_string_lossy().into_owned())
            .unwrap_or_default();
        let parsed = match parse_name(&base) {
            Some(p) => p?,
            None => {
                return Err(format!(
                    "{}: not a YAML step file (want <name>.yaml)",
                    path.display()
                ));
            }
        };
        if parsed.template {
            return Err(format!(
                "{}: templated step files (.gotmpl.yaml) are not supported yet",
                path.display()
            ));
        }
        let objects = read_objects(path)?;
        if skipped_by_selector(&objects, settings.run_labels, path)? {
            notes.push(format!(
                "Skipping file {:?}, label selector does not match test run labels.",
                path.display().to_string()
            ));
            continue;
        }
        if parsed.kind == FileKind::Apply && first_apply.is_none() {
            first_apply = Some(parsed.name.clone());
        }
        let whre = path.display().to_string();
        for object in objects {
            let special = kuttl_group(&object);
            let kind = yaml::kind(&object);
            if let Some(legacy) = &special {
                notes.extend(legacy.clone());
            }
            match (special.is_some(), kind, parsed.kind) {
                (true, "TestFile", _) => {}
                (true, "TestStep", FileKind::Apply) => {
                    if step.step.is_some() {
                        return Err(format!(
                            "more than 1 TestStep not allowed in step {:?}",
                            step.label()
                        ));
                    }
                    notes.extend(field_warnings(&object, TEST_STEP_FIELDS, &whre));
                    let ts: TestStep = serde_json::from_value(object)
                        .map_err(|e| format!("{whre}: bad TestStep: {e}"))?;
                    step.step = Some(ts);
                }
                (true, "TestAssert", FileKind::Assert) => {
                    notes.extend(field_warnings(&object, TEST_ASSERT_FIELDS, &whre));
                    let ta: TestAssert = serde_json::from_value(object)
                        .map_err(|e| format!("{whre}: bad TestAssert: {e}"))?;
                    step.assert = Some(ta);
                }
                (_, _, FileKind::Apply) => step.apply.push(object),
                (_, _, FileKind::Assert) => step.asserts.push(object),
                (_, _, FileKind::Errors) => step.errors.push(object),
            }
        }
    }
    step.name = first_apply.unwrap_or_default();
    if let Some(ts) = step.step.clone() {
        if !ts.metadata.name.is_empty() {
            step.name = ts.metadata.name.clone();
        }
        if !ts.kubeconfig.is_empty() || !ts.context.is_empty() {
            return Err(format!(
                "step {}: TestStep.kubeconfig and TestStep.context are not supported yet",
                step.label()
            ));
        }
        if !matches!(ts.kubeconfig_loading.as_str(), "" | "Eager" | "Lazy") {
            return Err(format!(
                "step {}: kubeconfigLoading must be Eager or Lazy, not {:?}",
                step.label(),
                ts.kubeconfig_loading
            ));
        }
        step.apply.extend(referenced(dir, &ts.apply)?);
        step.asserts.extend(referenced(dir, &ts.assert)?);
        step.errors.extend(referenced(dir, &ts.error)?);
    }
    if let Some(ta) = &step.assert {
        let refs = validate_refs(ta)?;
        let vars: Vec<&str> = refs.iter().map(String::as_str).collect();
        let compile = |list: &[crate::types::Expression]| -> Result<Vec<CelCheck>, String> {
            list.iter()
                .map(|e| {
                    opkit_cel::Expression::compile(&e.cel_expr, &vars)
                        .map(|program| CelCheck {
                            source: e.cel_expr.clone(),
                            program,
                        })
                        .map_err(|err| {
                            format!(
                                "failed to load expression(s): failed to build CEL program from \
                                 expression {:?}: {err}",
                                e.cel_expr
                            )
                        })
                })
                .collect()
        };
        step.assert_all = compile(&ta.assert_all)?;
        step.assert_any = compile(&ta.assert_any)?;
    }
    Ok(step)
}

fn validate_refs(ta: &TestAssert) -> Result<Vec<String>, String> {
    let mut names = Vec::new();
    for r in &ta.resource_refs {
        let missing = if r.api_version.is_empty() {
            Some("apiVersion")
        } else if r.kind.is_empty() {
            Some("kind")
        } else if r.name.is_empty() {
            Some("name")
        } else if r.reference.is_empty() {
            Some("reference")
        } else {
            None
        };
        if let Some(field) = missing {
            return Err(format!(
                "validation failed for reference '{}': {field} not specified",
                r.reference
            ));
        }
        if r.api_version.matches('/').count() > 1 {
            return Err(format!(
                "validation failed for reference '{}': apiVersion '{}' is not valid",
                r.reference, r.api_version
            ));
        }
        names.push(r.reference.clone());
    }
    Ok(names)
}

fn skipped_by_selector(
    objects: &[Value],
    run_labels: &BTreeMap<String, String>,
    path: &Path,
) -> Result<bool, String> {
    for o in objects {
        if kuttl_group(o).is_some() && yaml::kind(o) == "TestFile" {
            let tf: TestFile = serde_json::from_value(o.clone())
                .map_err(|e| format!("{}: bad TestFile: {e}", path.display()))?;
            if let Some(sel) = tf.test_run_selector {
                return sel.matches(run_labels).map(|m| !m);
            }
        }
    }
    Ok(false)
}

/// The objects of `TestStep.apply/assert/error` paths: env-expanded (OS env), relative to the
/// test dir; a directory gives its `*.yaml` files.
fn referenced(dir: &Path, paths: &[String]) -> Result<Vec<Value>, String> {
    let env: HashMap<String, String> = std::env::vars().collect();
    let mut out = Vec::new();
    for p in paths {
        let expanded = crate::command::expand(p, &env);
        if expanded.starts_with("http://") || expanded.starts_with("https://") {
            return Err(format!(
                "{expanded}: URLs in TestStep files are not supported yet"
            ));
        }
        let path = dir.join(&expanded);
        if path.is_dir() {
            let mut inner: Vec<PathBuf> = std::fs::read_dir(&path)
                .map_err(|e| format!("cannot read {}: {e}", path.display()))?
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "yaml"))
                .collect();
            inner.sort();
            for f in inner {
                out.extend(read_objects(&f)?);
            }
        } else {
            out.extend(read_objects(&path)?);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Option<FileName> {
        parse_name(s).map(|r| r.unwrap())
    }

    #[test]
    fn file_names_follow_kuttls_grammar() {
        let p = parse("00-create-pod.yaml").unwrap();
        assert_eq!(
            (p.index, p.kind, p.name.as_str()),
            (Some(0), FileKind::Apply, "create-pod")
        );
        assert_eq!(parse("01-assert.yaml").unwrap().kind, FileKind::Assert);
        assert_eq!(parse("1-Assert-foo.yaml").unwrap().kind, FileKind::Assert);
        assert_eq!(parse("02-errors.yaml").unwrap().kind, FileKind::Errors);
        assert_eq!(parse("02-error.yaml").unwrap().kind, FileKind::Apply);
        assert_eq!(parse("00-asserts.yaml").unwrap().kind, FileKind::Apply);
        assert!(parse("00-pod.yml").is_none());
        assert!(parse("00-pod.v2.yaml").is_none());
        assert_eq!(parse("pod.yaml").unwrap().index, None);
        assert!(parse("03-x.gotmpl.yaml").unwrap().template);
        assert_eq!(parse("05-noext").unwrap().index, Some(5));
        assert!(parse_name("99999999999-x.yaml").unwrap().is_err());
    }

    #[test]
    fn globs_are_go_filepath_match() {
        let g = Glob::new("README*").unwrap();
        assert!(g.matches("README.md") && !g.matches("xREADME"));
        assert!(Glob::new("0?-[a-c]*.yaml").unwrap().matches("01-b.yaml"));
        assert!(Glob::new("[^x]y").unwrap().matches("ay"));
        assert!(Glob::new("[abc").is_err());
    }

    #[test]
    fn steps_group_by_index_and_take_the_first_apply_files_name() {
        let dir = tempfile::tempdir().unwrap();
        let w = |n: &str, s: &str| std::fs::write(dir.path().join(n), s).unwrap();
        w(
            "00-create-cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",
        );
        w(
            "00-assert.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: kuttl.dev/v1beta1\nkind: TestAssert\ntimeout: 5\n",
        );
        w(
            "1-errors.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n",
        );
        w("README.md", "docs");
        w("notes.txt", "x");
        w("other.yaml", "x: 1");
        let mut notes = Vec::new();
        let settings = LoadSettings {
            ignore: &[Glob::new("README*").unwrap()],
            run_labels: &BTreeMap::new(),
        };
        let steps = load_steps(dir.path(), &settings, &mut notes).unwrap();
        assert_eq!(steps.len(), 2);
        assert_eq!(steps[0].label(), "0-create-cm");
        assert_eq!((steps[0].apply.len(), steps[0].asserts.len()), (1, 1));
        assert_eq!(steps[0].assert.as_ref().unwrap().timeout, 5);
        assert_eq!(steps[1].label(), "1-");
        assert_eq!(steps[1].errors.len(), 1);
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(notes[0].contains("notes.txt") && notes[0].contains("does not follow pattern"));
        assert!(
            notes[1].contains("other.yaml") && notes[1].contains("does not begin with a number")
        );
    }

    #[test]
    fn a_second_teststep_and_templates_are_load_errors() {
        let dir = tempfile::tempdir().unwrap();
        let ts = "apiVersion: kuttl.dev/v1beta1\nkind: TestStep\n";
        std::fs::write(dir.path().join("00-a.yaml"), format!("{ts}---\n{ts}")).unwrap();
        let settings = LoadSettings {
            ignore: &[],
            run_labels: &BTreeMap::new(),
        };
        let err = load_steps(dir.path(), &settings, &mut Vec::new())
            .err()
            .unwrap();
        assert!(err.contains("more than 1 TestStep"), "{err}");
        std::fs::remove_file(dir.path().join("00-a.yaml")).unwrap();
        std::fs::write(dir.path().join("00-a.gotmpl.yaml"), ts).unwrap();
        let err = load_steps(dir.path(), &settings, &mut Vec::new())
            .err()
            .unwrap();
        assert!(err.contains("not supported yet"), "{err}");
    }
}
