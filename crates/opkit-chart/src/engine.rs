//! Helm's render engine (`pkg/engine`): every template of a chart and of its subcharts
//! parsed into one set (so `define`s are shared across charts), each file executed with its
//! own chart's scope (`.Values`, `.Chart`, `.Files`, `.Template`, `.Subcharts`, plus the
//! release's `.Release` and `.Capabilities`), and Helm's functions on top of Sprig:
//! `include` (with Helm's recursion limit), `tpl` (with Helm's nested-template rules),
//! `required`, `fail`, `lookup` (pluggable; an empty map offline) and `getHostByName`
//! (DNS off). Errors are reworded as Helm rewords Go's (`parse error at (…)`,
//! `execution error at (…)`, the multi-line trace), since users read them.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use opkit_template::{CallContext, FuncError, Function, MissingKey, ParamType, Templates, Value};

use crate::chart::Chart;
use crate::objects::{Capabilities, Files, ReleaseOptions, chart_value};

/// Helm's bound on nested `include`s of one template name (`recursionMaxNums`).
pub const INCLUDE_RECURSION_MAX: usize = 1000;

const WARN_START: &str = "HELM_ERR_START";
const WARN_END: &str = "HELM_ERR_END";

/// Answers `lookup apiVersion kind namespace name` (Helm's `lookup` function); offline
/// rendering answers with an empty map, a chart operator with the cluster's objects.
pub type LookupFn = dyn Fn(&str, &str, &str, &str) -> Result<Value, String> + Send + Sync;

/// A chart that failed to render; the text is Helm's.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct RenderError(pub String);

/// Helm's template engine.
#[derive(Clone, Default)]
pub struct Engine {
    strict: bool,
    one_shot: bool,
    lookup: Option<Arc<LookupFn>>,
    extra: BTreeMap<String, Function>,
}

/// What the templates of one render see besides values: the release and the cluster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RenderContext {
    /// `.Release`.
    pub release: ReleaseOptions,
    /// `.Capabilities`.
    pub capabilities: Capabilities,
}

impl Engine {
    /// An engine with Helm's defaults: missing values render as empty, `lookup` finds
    /// nothing.
    pub fn new() -> Engine {
        Engine::default()
    }

    /// Makes a missing value an error (`missingkey=error`, Helm's `--strict` linting).
    pub fn strict(mut self, strict: bool) -> Engine {
        self.strict = strict;
        self
    }

    /// Says the process ends after this engine's render (`opkit chart template`): the parsed
    /// templates are then left to the exit instead of freed (freeing a large chart's set
    /// costs about half of parsing it). A long-lived process keeps the default, `false`.
    pub fn one_shot(mut self, one_shot: bool) -> Engine {
        self.one_shot = one_shot;
        self
    }

    /// Whether what a render leaves behind is left to the process's exit ([`Engine::one_shot`]).
    pub(crate) fn leaves_to_exit(&self) -> bool {
        self.one_shot
    }

    /// Answers `lookup` with `f` instead of an empty map.
    pub fn with_lookup(mut self, f: Arc<LookupFn>) -> Engine {
        self.lookup = Some(f);
        self
    }

    /// Adds functions (or replaces Helm's), like Helm's `CustomTemplateFuncs`.
    pub fn with_funcs(mut self, funcs: impl IntoIterator<Item = (String, Function)>) -> Engine {
        self.extra.extend(funcs);
        self
    }

    /// The function map templates get: Sprig without `env`/`expandenv`, Helm's formats and
    /// functions, then the engine's own additions.
    fn function_map(&self) -> BTreeMap<String, Function> {
        let mut f = opkit_template::sprig::functions();
        f.remove("env");
        f.remove("expandenv");
        f.extend(opkit_template::formats::functions());
        let included: Arc<Mutex<HashMap<String, usize>>> = Arc::default();
        f.insert("include".into(), include_fn(included));
        f.insert("tpl".into(), tpl_fn(self.strict));
        f.insert(
            "required".into(),
            Function::new(&[ParamType::String, ParamType::Any], |a| match &a[1] {
                Value::Nil => Err(warn_wrap(a[0].as_str().unwrap_or_default())),
                Value::String(s) if s.is_empty() => {
                    Err(warn_wrap(a[0].as_str().unwrap_or_default()))
                }
                v => Ok(v.clone()),
            }),
        );
        f.insert(
            "fail".into(),
            Function::new(&[ParamType::String], |a| {
                Err(warn_wrap(a[0].as_str().unwrap_or_default()))
            }),
        );
        let lookup = self.lookup.clone();
        f.insert(
            "lookup".into(),
            Function::new(&[ParamType::String; 4], move |a| {
                let s = |i: usize| a[i].as_str().unwrap_or_default();
                match &lookup {
                    None => Ok(Value::map(BTreeMap::new())),
                    Some(l) => l(s(0), s(1), s(2), s(3)).map_err(FuncError::new),
                }
            }),
        );
        f.insert(
            "getHostByName".into(),
            Function::new(&[ParamType::String], |_| Ok(Value::string(""))),
        );
        f.extend(self.extra.clone());
        f
    }

    /// Renders every template of `chart` and its subcharts with the coalesced `values`
    /// (the `.Values` tree of the top chart), returning each rendered file by name
    /// (`CHART/templates/FILE`); partials are parsed but not rendered.
    pub fn render(
        &self,
        chart: &Chart,
        values: &Value,
        ctx: &RenderContext,
    ) -> Result<BTreeMap<String, String>, RenderError> {
        let funcs = self.function_map();
        let to_yaml = funcs.get("toYaml").cloned();
        let top = Scope {
            release: ctx.release.to_value(),
            capabilities: ctx.capabilities.to_value(),
            to_yaml,
        };
        let mut renderables = Vec::new();
        all_templates(chart, None, values, &top, &mut renderables);
        // Helm parses and renders deeper paths first, then by name, descending.
        renderables.sort_by(|a, b| {
            let depth = |r: &Renderable| r.name.matches('/').count();
            depth(b).cmp(&depth(a)).then_with(|| b.name.cmp(&a.name))
        });

        let mut set = Templates::new("gotpl");
        set.set_missing_key(if self.strict {
            MissingKey::Error
        } else {
            MissingKey::Zero
        });
        set.add_funcs(funcs);
        if let Err((i, e)) = set.parse_all(renderables.iter().map(|r| (r.name.as_str(), &*r.text)))
        {
            let name = renderables.get(i).map_or("", |r| r.name.as_str());
            return Err(RenderError(cleanup_parse_error(name, e.message())));
        }
        let jobs: Vec<&Renderable> = renderables
            .iter()
            .filter(|r| {
                !r.name
                    .rsplit('/')
                    .next()
                    .unwrap_or(&r.name)
                    .starts_with('_')
            })
            .collect();
        let outputs = render_in_order(&set, &jobs)
            .map_err(|(i, e)| RenderError(reformat_exec_error(&jobs[i].name, e.message())))?;
        let rendered = jobs
            .iter()
            .zip(outputs)
            .map(|(r, out)| (r.name.clone(), drop_no_value(out)))
            .collect();
        if self.one_shot {
            std::mem::forget(set);
            std::mem::forget(renderables);
        }
        Ok(rendered)
    }
}

/// The template bytes each thread gets at least when a chart's templates render side by
/// side: a thread costs about as much as rendering a few kilobytes.
const MIN_RENDER_BYTES_PER_THREAD: usize = 16 * 1024;

/// Runs `jobs` (in Helm's order) as Helm does, one after another on the scope of their
/// chart with its `.Template` set to the file's, giving the first error in that order. They
/// run side by side where nothing can tell (see
/// [`opkit_template::parallel::map_isolated`]): each on a copy of its chart's scope, a
/// template changing a map it shares sending them all back to the sequential run.
fn render_in_order(
    set: &Templates,
    jobs: &[&Renderable],
) -> Result<Vec<String>, (usize, opkit_template::Error)> {
    let side_by_side = subcharts_render_first(jobs);
    if side_by_side {
        // What a parent reaching a subchart's scope through `.Subcharts` sees there in Go:
        // the `.Template` of that subchart's last file (they all render before its own).
        for r in jobs {
            r.scope.insert("Template", template_value(r));
        }
    }
    let items: Vec<(&Renderable, Option<Value>)> = jobs
        .iter()
        .map(|r| {
            let own = side_by_side.then(|| {
                let scope = opkit_template::Dict::new(r.scope.to_map());
                scope.insert("Template", template_value(r));
                Value::Map(scope)
            });
            (*r, own)
        })
        .collect();
    let run = |(r, own): (&Renderable, Option<Value>), beside_others: bool| match own {
        Some(own) if beside_others => set.execute(&r.name, &own),
        _ => {
            r.scope.insert("Template", template_value(r));
            set.execute(&r.name, &Value::Map(r.scope.clone()))
        }
    };
    if !side_by_side {
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.into_iter().enumerate() {
            out.push(run(item, false).map_err(|e| (i, e))?);
        }
        return Ok(out);
    }
    opkit_template::parallel::map_isolated(
        items,
        |(r, _)| r.text.len(),
        MIN_RENDER_BYTES_PER_THREAD,
        run,
    )
}

/// Helm's `.Template` of a file: its name and its chart's template directory.
fn template_value(r: &Renderable) -> Value {
    Value::map(BTreeMap::from([
        ("Name".to_string(), Value::string(r.name.as_str())),
        ("BasePath".to_string(), Value::string(r.base_path.as_str())),
    ]))
}

/// Whether every subchart's files render before any file of the charts above it (Helm
/// renders deeper paths first, so only a parent's own deeply nested templates break this):
/// then what a parent reads of a subchart's scope is the same whenever it runs.
fn subcharts_render_first(jobs: &[&Renderable]) -> bool {
    let mut span: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for (i, r) in jobs.iter().enumerate() {
        let chart = r
            .base_path
            .strip_suffix("/templates")
            .unwrap_or(&r.base_path);
        let e = span.entry(chart).or_insert((i, i));
        e.0 = e.0.min(i);
        e.1 = e.1.max(i);
    }
    span.iter().all(|(chart, (_, last))| {
        span.iter().all(|(above, (first, _))| {
            let is_above = chart
                .strip_prefix(above)
                .is_some_and(|rest| rest.starts_with("/charts/"));
            !is_above || last < first
        })
    })
}

/// Helm's `strings.ReplaceAll(out, "<no value>", "")` on a template's output, without
/// copying the (often large) output when it holds none.
fn drop_no_value(out: String) -> String {
    if out.contains("<no value>") {
        out.replace("<no value>", "")
    } else {
        out
    }
}

/// What every chart's scope shares.
struct Scope {
    release: Value,
    capabilities: Value,
    to_yaml: Option<Function>,
}

/// One template file with the scope it runs in; the text is the chart's own bytes unless
/// they are not UTF-8.
struct Renderable<'c> {
    name: String,
    text: std::borrow::Cow<'c, str>,
    scope: opkit_template::Dict,
    base_path: String,
}

/// Helm's `recAllTpls`: collects the templates of `chart` (whose parent scope is
/// `parent`) and its subcharts, and returns the chart's scope (what `.Subcharts` holds).
fn all_templates<'c>(
    chart: &'c Chart,
    parent: Option<(&str, &opkit_template::Dict)>,
    root_values: &Value,
    top: &Scope,
    out: &mut Vec<Renderable<'c>>,
) -> opkit_template::Dict {
    let full_path = match parent {
        None => chart.name().to_string(),
        Some((p, _)) => format!("{p}/charts/{}", chart.name()),
    };
    let values = match parent {
        None => root_values.clone(),
        Some((_, scope)) => match scope.get("Values") {
            Some(Value::Map(v)) => match v.get(chart.name()) {
                Some(sub @ Value::Map(_)) => sub,
                _ => Value::map(BTreeMap::new()),
            },
            _ => Value::map(BTreeMap::new()),
        },
    };
    let subcharts = opkit_template::Dict::default();
    let scope = opkit_template::Dict::new(BTreeMap::from([
        (
            "Chart".to_string(),
            chart_value(&chart.metadata, parent.is_none()),
        ),
        (
            "Files".to_string(),
            Files::new(&chart.files, top.to_yaml.clone()).to_value(),
        ),
        ("Release".to_string(), top.release.clone()),
        ("Capabilities".to_string(), top.capabilities.clone()),
        ("Values".to_string(), values),
        ("Subcharts".to_string(), Value::Map(subcharts.clone())),
    ]));
    for dep in &chart.dependencies {
        let sub = all_templates(dep, Some((&full_path, &scope)), root_values, top, out);
        subcharts.insert(dep.name(), Value::Map(sub));
    }
    for t in &chart.templates {
        let base = t.name.rsplit('/').next().unwrap_or(&t.name);
        if chart.is_library() && !base.starts_with('_') {
            continue;
        }
        out.push(Renderable {
            name: format!("{full_path}/{}", t.name),
            text: crate::chart::text(&t.data),
            scope: scope.clone(),
            base_path: format!("{full_path}/templates"),
        });
    }
    scope
}

fn warn_wrap(msg: &str) -> FuncError {
    FuncError::new(format!("{WARN_START}{msg}{WARN_END}"))
}

/// `include NAME DATA`: runs a named template of the set being executed and returns its
/// output; more than [`INCLUDE_RECURSION_MAX`] nested includes of one name fail.
fn include_fn(included: Arc<Mutex<HashMap<String, usize>>>) -> Function {
    Function::with_context(
        &[ParamType::String, ParamType::Any],
        None,
        move |ctx: &mut CallContext<'_>, a: &[Value]| {
            let name = a[0].as_str().unwrap_or_default();
            {
                let mut counts = included.lock().unwrap_or_else(|e| e.into_inner());
                let n = counts.entry(name.to_string()).or_insert(0);
                if *n > INCLUDE_RECURSION_MAX {
                    return Err(FuncError::new(format!(
                        "rendering template has a nested reference name: {name}: unable to execute template"
                    )));
                }
                *n += 1;
            }
            let r = ctx.execute_template(name, &a[1]);
            if let Some(n) = included
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get_mut(name)
            {
                *n -= 1;
            }
            r.map(Value::from).map_err(|e| FuncError::new(e.message()))
        },
    )
}

/// What a nested `tpl` with an empty text would otherwise run again (see [`tpl_fn`]).
const EMPTY_TPL_SENTINEL: &str = "\u{1}opkit: empty tpl\u{1}";

/// `tpl TEXT DATA`: parses TEXT as a template named like the set (`gotpl`) in a copy of
/// the set being executed (so it sees every `define`, and its own `define`s are visible to
/// `include` inside it) and runs it with DATA; `<no value>` is removed as for files.
/// `include` inside the text is the set's own `include`, so it shares the nesting counts.
fn tpl_fn(strict: bool) -> Function {
    Function::with_context(
        &[ParamType::String, ParamType::Any],
        None,
        move |ctx: &mut CallContext<'_>, a: &[Value]| {
            let text = a[0].as_str().unwrap_or_default();
            let quoted = opkit_template::sprintf("%q", &[Value::string(text)]);
            let mut set = ctx.templates().clone();
            set.set_missing_key(if strict {
                MissingKey::Error
            } else {
                MissingKey::Zero
            });
            let name = set.name().to_string();
            // Go runs the new template's own tree even when it is empty; the set here
            // keeps an existing non-empty tree instead, so a nested `tpl` first puts a
            // sentinel in place and an empty text then shows as the sentinel.
            let nested = set.contains(&name);
            if nested {
                set.parse(&name, EMPTY_TPL_SENTINEL)
                    .map_err(|e| FuncError::new(e.message()))?;
            }
            set.parse(&name, text).map_err(|e| {
                FuncError::new(format!("cannot parse template {quoted}: {}", e.message()))
            })?;
            let out = ctx.execute(&set, &name, &a[1]).map_err(|e| {
                FuncError::new(format!(
                    "error during tpl function execution for {quoted}: {}",
                    e.message()
                ))
            })?;
            if nested && out == EMPTY_TPL_SENTINEL {
                return Ok(Value::string(""));
            }
            Ok(Value::from(drop_no_value(out)))
        },
    )
}

/// Helm's `cleanupParseError`: `parse error at (NAME:LINE): MESSAGE`.
fn cleanup_parse_error(filename: &str, msg: &str) -> String {
    let tokens: Vec<&str> = msg.split(": ").collect();
    if tokens.len() == 1 {
        return format!("parse error in ({filename}): {msg}");
    }
    format!(
        "parse error at ({}): {}",
        tokens[1],
        tokens[tokens.len() - 1]
    )
}

/// One step of Go's error chain as Helm's `TraceableError` shows it.
#[derive(PartialEq, Eq)]
struct Traceable {
    location: String,
    message: String,
    executed_function: String,
}

impl Traceable {
    fn show(&self) -> String {
        let mut s = String::new();
        if !self.location.is_empty() {
            s += &format!("{}\n  ", self.location);
        }
        if !self.executed_function.is_empty() {
            s += &format!("{}\n    ", self.executed_function);
        }
        if !self.message.is_empty() {
            s += &format!("{}\n", self.message);
        }
        s
    }
}

/// Helm's `parseTemplateExecErrorString`.
fn parse_exec_error(s: &str) -> Option<Traceable> {
    let rest = s.strip_prefix("template: ")?;
    if rest.starts_with("no template ") {
        return Some(Traceable {
            location: String::new(),
            message: s.to_string(),
            executed_function: String::new(),
        });
    }
    let cut_chain = |m: &str| match m.find(" template:") {
        Some(i) => m[..i].to_string(),
        None => m.to_string(),
    };
    if let Some(idx) = rest.find(": executing ") {
        let name = &rest[..idx];
        let after = &rest[idx + ": executing ".len()..];
        let after = after.strip_prefix('"')?;
        let end_quote = after.find('"')?;
        let function = &after[..end_quote];
        let after_at = after[end_quote + 1..].strip_prefix(" at <")?;
        let end_loc = after_at.find(">: ")?;
        return Some(Traceable {
            location: name.to_string(),
            message: cut_chain(&after_at[end_loc + ">: ".len()..]),
            executed_function: format!("executing \"{function}\" at <{}>:", &after_at[..end_loc]),
        });
    }
    let sep = rest.rfind(": ")?;
    Some(Traceable {
        location: rest[..sep].to_string(),
        message: cut_chain(&rest[sep + 2..]),
        executed_function: String::new(),
    })
}

/// The errors Go's chain holds for an execution error: the error itself, then, through
/// each `error calling F: …` wrap, the function's error.
fn error_chain(msg: &str) -> Vec<&str> {
    let mut chain = vec![msg];
    let mut cur = msg;
    while let Some(rest) = cur.strip_prefix("template: ") {
        let Some(idx) = rest.find(": executing \"") else {
            break;
        };
        let Some(end) = rest[idx..].find(">: ") else {
            break;
        };
        let err = &rest[idx + end + ">: ".len()..];
        let Some(call) = err.strip_prefix("error calling ") else {
            break;
        };
        let Some(colon) = call.find(": ") else {
            break;
        };
        cur = &call[colon + 2..];
        chain.push(cur);
    }
    chain
}

/// Helm's `reformatExecErrorMsg`.
fn reformat_exec_error(filename: &str, msg: &str) -> String {
    let tokens: Vec<&str> = msg.splitn(3, ": ").collect();
    if tokens.len() != 3 {
        return format!("execution error in ({filename}): {msg}");
    }
    if let Some(start) = tokens[2].find(WARN_START)
        && let Some(end) = tokens[2].rfind(WARN_END)
        && end >= start + WARN_START.len()
    {
        return format!(
            "execution error at ({}): {}",
            tokens[1],
            &tokens[2][start + WARN_START.len()..end]
        );
    }
    let mut steps: Vec<Traceable> = Vec::new();
    for e in error_chain(msg) {
        let Some(t) = parse_exec_error(e) else {
            return msg.to_string();
        };
        if steps.last() != Some(&t) {
            steps.push(t);
        }
    }
    steps
        .iter()
        .map(Traceable::show)
        .collect::<String>()
        .trim()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_errors_keep_location_and_last_message_part() {
        assert_eq!(
            cleanup_parse_error(
                "c/templates/a.yaml",
                "template: c/templates/a.yaml:3: function \"nope\" not defined"
            ),
            "parse error at (c/templates/a.yaml:3): function \"nope\" not defined"
        );
    }

    #[test]
    fn fail_and_required_become_execution_errors_at_the_outer_location() {
        let msg = "template: c/templates/a.yaml:1:3: executing \"c/templates/a.yaml\" at <fail \"boom\">: error calling fail: HELM_ERR_STARTboomHELM_ERR_END";
        assert_eq!(
            reformat_exec_error("c/templates/a.yaml", msg),
            "execution error at (c/templates/a.yaml:1:3): boom"
        );
    }

    #[test]
    fn a_template_error_chain_is_shown_as_helms_trace() {
        let msg = "template: c/templates/a.yaml:1:3: executing \"c/templates/a.yaml\" at <include \"x\" .>: error calling include: template: c/templates/_h.tpl:1:14: executing \"x\" at <.a.b>: nil pointer evaluating interface {}.b";
        assert_eq!(
            reformat_exec_error("c/templates/a.yaml", msg),
            "c/templates/a.yaml:1:3\n  executing \"c/templates/a.yaml\" at <include \"x\" .>:\n    error calling include:\nc/templates/_h.tpl:1:14\n  executing \"x\" at <.a.b>:\n    nil pointer evaluating interface {}.b"
        );
    }

    #[test]
    fn a_function_error_at_the_end_of_the_chain_leaves_gos_text() {
        let msg = "template: c/templates/a.yaml:1:3: executing \"c/templates/a.yaml\" at <index .a 5>: error calling index: index out of range: 5";
        assert_eq!(reformat_exec_error("c/templates/a.yaml", msg), msg);
    }
}
