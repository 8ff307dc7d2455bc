//! The public face: a set of named templates sharing `define`s (as Helm parses a chart's
//! files into one set), a function map, Go's options, and execution of a named template.

use std::collections::HashMap;
use std::sync::Arc;

use crate::error::Error;
use crate::funcs::builtin;
use crate::gofmt::go_quote;
use crate::parse::{Tree, parse};
use crate::value::{Function, Value};

// Template sets are shared between threads (a controller renders charts concurrently).
const _: fn() = || {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Templates>();
};

/// Go's `text/template` execution depth limit (`maxExecDepth`).
pub const MAX_EXEC_DEPTH: usize = 100_000;

/// What a missing map key evaluates to (Go's `missingkey=` option).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum MissingKey {
    /// `missingkey=default` / `invalid`: nothing (prints `<no value>`).
    #[default]
    Default,
    /// `missingkey=zero`: the map's zero value; for `map[string]interface{}` a nil
    /// interface, so a field of it fails with `nil pointer evaluating interface {}.X`.
    Zero,
    /// `missingkey=error`: execution stops with `map has no entry for key "X"`.
    Error,
}

/// A set of named templates with their function map and options.
///
/// ```
/// use opkit_template::{Templates, Value};
/// let mut t = Templates::new("gotpl");
/// t.parse("a.tpl", r#"{{define "x"}}[{{.}}]{{end}}"#).unwrap();
/// t.parse("b.tpl", r#"{{template "x" .n}}"#).unwrap();
/// let data = Value::from(serde_json::json!({"n": 1000000}));
/// assert_eq!(t.execute("b.tpl", &data).unwrap(), "[1e+06]");
/// ```
#[derive(Clone, Debug)]
pub struct Templates {
    name: String,
    trees: HashMap<String, Arc<Tree>>,
    /// Shared between clones (Helm's `tpl` clones the set for every call) until changed.
    funcs: Arc<HashMap<String, Function>>,
    missing_key: MissingKey,
    max_depth: usize,
    max_output: Option<usize>,
    max_steps: Option<u64>,
}

impl Templates {
    /// An empty set; `name` is the set's own name, used in Go's "no template … associated
    /// with template NAME" error (Helm names its set `gotpl`).
    pub fn new(name: &str) -> Self {
        Templates {
            name: name.to_string(),
            trees: HashMap::new(),
            funcs: Arc::default(),
            missing_key: MissingKey::Default,
            max_depth: MAX_EXEC_DEPTH,
            max_output: None,
            max_steps: None,
        }
    }

    /// The set's own name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Adds (or replaces) a function. Functions must be added before parsing templates
    /// that call them; a name shadows the builtin of that name.
    pub fn add_func(&mut self, name: &str, f: Function) -> &mut Self {
        Arc::make_mut(&mut self.funcs).insert(name.to_string(), f);
        self
    }

    /// Adds every function of a function map.
    pub fn add_funcs(&mut self, funcs: impl IntoIterator<Item = (String, Function)>) -> &mut Self {
        Arc::make_mut(&mut self.funcs).extend(funcs);
        self
    }

    /// Applies one of Go's option strings: `missingkey=default|invalid|zero|error`.
    pub fn option(&mut self, opt: &str) -> Result<&mut Self, Error> {
        self.missing_key = match opt {
            "missingkey=default" | "missingkey=invalid" => MissingKey::Default,
            "missingkey=zero" => MissingKey::Zero,
            "missingkey=error" => MissingKey::Error,
            _ => return Err(Error::Option(format!("unrecognized option: {opt}"))),
        };
        Ok(self)
    }

    /// Sets the `missingkey` behaviour.
    pub fn set_missing_key(&mut self, mk: MissingKey) -> &mut Self {
        self.missing_key = mk;
        self
    }

    /// The `missingkey` behaviour.
    pub fn missing_key(&self) -> MissingKey {
        self.missing_key
    }

    /// Bounds nested `template` calls (default [`MAX_EXEC_DEPTH`], Go's).
    pub fn set_max_depth(&mut self, depth: usize) -> &mut Self {
        self.max_depth = depth.max(1);
        self
    }

    /// The bound on nested `template` calls.
    pub fn max_depth(&self) -> usize {
        self.max_depth
    }

    /// Bounds one execution's output (no bound by default, as in Go).
    pub fn set_max_output(&mut self, bytes: Option<usize>) -> &mut Self {
        self.max_output = bytes;
        self
    }

    pub(crate) fn max_output(&self) -> Option<usize> {
        self.max_output
    }

    /// Bounds one execution's work, counted in template nodes visited and `range`
    /// iterations (no bound by default, as in Go). Nested `range`s over data can otherwise run for a very long
    /// (though always finite) time without writing anything.
    pub fn set_max_steps(&mut self, steps: Option<u64>) -> &mut Self {
        self.max_steps = steps;
        self
    }

    pub(crate) fn max_steps(&self) -> Option<u64> {
        self.max_steps
    }

    /// Whether `name` is a function templates of this set can call.
    pub fn has_function(&self, name: &str) -> bool {
        self.funcs.contains_key(name) || builtin(name).is_some()
    }

    pub(crate) fn func(&self, name: &str) -> Option<&Function> {
        self.funcs.get(name)
    }

    pub(crate) fn tree(&self, name: &str) -> Option<&Tree> {
        self.trees.get(name).map(|t| &**t)
    }

    /// Parses `text` as the template `name`, adding it and every template it defines
    /// (`define`, `block`) to the set. A later non-empty definition replaces an earlier
    /// one, as in Go; an empty one never replaces an existing template.
    pub fn parse(&mut self, name: &str, text: &str) -> Result<&mut Self, Error> {
        let this = &*self;
        let trees = parse(name, text, &|f| this.has_function(f))?;
        self.insert_trees(trees);
        Ok(self)
    }

    /// Parses several files into the set, as [`Templates::parse`] on each in order would: a
    /// later file's definitions replace an earlier one's, and the first file (in order) that
    /// fails to parse gives the error (with its position in `files`), with the files before
    /// it added. Parsing is pure, so a
    /// large set (a chart's templates can hold megabytes of CRDs) is parsed on several
    /// threads; only the insertion into the set is sequential.
    pub fn parse_all<'a>(
        &mut self,
        files: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<&mut Self, (usize, Error)> {
        let files: Vec<(&str, &str)> = files.into_iter().collect();
        let this = &*self;
        let has_func = |f: &str| this.has_function(f);
        let results = crate::parallel::map_in_order(
            files,
            |(_, text)| text.len(),
            crate::parallel::MIN_BYTES_PER_THREAD,
            |(name, text)| parse(name, text, &has_func),
        );
        for (i, trees) in results.into_iter().enumerate() {
            self.insert_trees(trees.map_err(|e| (i, e))?);
        }
        Ok(self)
    }

    fn insert_trees(&mut self, trees: Vec<Tree>) {
        for tree in trees {
            let keep_old = tree.is_empty() && self.trees.contains_key(&tree.name);
            if !keep_old {
                self.trees.insert(tree.name.clone(), Arc::new(tree));
            }
        }
    }

    /// The names of the templates in the set, sorted.
    pub fn names(&self) -> Vec<&str> {
        let mut v: Vec<&str> = self.trees.keys().map(String::as_str).collect();
        v.sort_unstable();
        v
    }

    /// Whether the set holds a template called `name`.
    pub fn contains(&self, name: &str) -> bool {
        self.trees.contains_key(name)
    }

    /// Executes the template `name` with `data` as dot and `$`.
    pub fn execute(&self, name: &str, data: &Value) -> Result<String, Error> {
        let mut out = String::new();
        self.execute_into(name, data, &mut out)?;
        Ok(out)
    }

    /// Executes the template `name`, appending its output to `out`; on an error `out` keeps
    /// what was written before it, as Go's writer does.
    pub fn execute_into(&self, name: &str, data: &Value, out: &mut String) -> Result<(), Error> {
        let Some(tree) = self.trees.get(name) else {
            return Err(Error::Exec(format!(
                "template: no template {} associated with template {}",
                go_quote(name),
                go_quote(&self.name)
            )));
        };
        crate::exec::execute(self, tree, data, out)
    }
}
