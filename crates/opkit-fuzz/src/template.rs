//! Targets for the template engine (`opkit-template`): chart-like templates with Sprig and
//! Helm's data-format functions run on values a user could pass.
//!
//! A chart's templates and its values come from whoever publishes or installs it, and the
//! controller renders them in-process: a template that panics the engine, recurses without
//! bound or writes without end would take down every release the controller manages. Any
//! template text with any values must parse to a tree or a parse error and execute to
//! bounded output or an execution error, in bounded time.
//!
//! The set is bounded as Helm bounds a render: `include` and `template` nest at most 1000
//! deep (Helm's `recursionMaxNums` for `include`), plus a work bound (template nodes visited)
//! and an output bound, which Helm has not but a controller needs.
//!
//! Helm's own functions (`include`, `tpl`, `required`, `fail`, `lookup`) are small versions
//! here, enough for real charts' templates to parse and run; the chart render engine in
//! `opkit-chart` (with `.Files`, subchart scoping) is not a target yet.

use std::time::{Duration, Instant};

use opkit_template::{Error, FuncError, Function, ParamType, Templates, Value};
use serde_json::Value as Json;

use crate::input::Input;

/// How deep `template`/`include` calls nest (Helm's `include` recursion limit).
pub const MAX_DEPTH: usize = 1000;
/// The most one execution writes.
pub const MAX_OUTPUT: usize = 1 << 20;
/// The most template nodes one execution visits.
pub const MAX_STEPS: u64 = 100_000;
/// Generous wall-clock bound for one parse and execution (a hang, not a slow case).
pub const MAX_TIME: Duration = Duration::from_secs(30);

/// Template text is built from these: Go template syntax, the value paths Helm charts use,
/// Sprig and Helm functions (including the ones that generate, parse or recurse), literals.
pub const TEMPLATE_TOKENS: &[&str] = &[
    "{{",
    "}}",
    "{{- ",
    " -}}",
    " ",
    "\n",
    "text: ",
    "if ",
    "else ",
    "end",
    "range ",
    "with ",
    "define ",
    "template ",
    "block ",
    "break",
    "continue",
    "{{end}}",
    "{{else}}",
    "{{if .Values.a}}",
    "{{range $k, $v := .Values}}",
    "{{range .Values.items}}",
    "{{with .Values.spec}}",
    "{{define \"x\"}}",
    "{{template \"x\" .}}",
    "{{include \"x\" .}}",
    "{{tpl .Values.name .}}",
    "{{tpl \"{{ .Values.a }}\" .}}",
    "{{$x := .Values}}",
    "{{$x = list}}",
    "{{- toYaml .Values | nindent 2 }}",
    "{{ .Values | toJson }}",
    ".",
    ".Values",
    ".Values.a",
    ".Values.b",
    ".Values.name",
    ".Values.items",
    ".Values.spec.replicas",
    ".Values.metadata.labels",
    ".Release.Name",
    ".Chart.Name",
    "$",
    "$x",
    "$k",
    "$v",
    ":=",
    "=",
    "|",
    "(",
    ")",
    "\"x\"",
    "\"a,b\"",
    "\"{{ . }}\"",
    "\"a: [1\"",
    "\"- 1\\n- b\"",
    "\"[1, 2]\"",
    "\"{\\\"a\\\": 1}\"",
    "\"a = 1\"",
    "`r`",
    "0",
    "1",
    "-1",
    "3",
    "1.5",
    "9223372036854775807",
    "true",
    "nil",
    "include ",
    "tpl ",
    "print ",
    "printf \"%v %d %s %q\" ",
    "len ",
    "index ",
    "eq ",
    "not ",
    "default ",
    "empty ",
    "coalesce ",
    "ternary ",
    "quote ",
    "squote ",
    "upper ",
    "trunc 63 ",
    "trimSuffix \"-\" ",
    "replace \"a\" \"b\" ",
    "repeat 3 ",
    "repeat 100000 ",
    "indent 4 ",
    "nindent 2 ",
    "cat ",
    "b64enc ",
    "b64dec ",
    "sha256sum ",
    "regexReplaceAll \"a*\" ",
    "regexFind \"(\" ",
    "splitList \",\" ",
    "join \",\" ",
    "list ",
    "dict ",
    "dict \"a\" ",
    "set $x \"a\" ",
    "merge ",
    "mergeOverwrite ",
    "deepCopy ",
    "append ",
    "keys ",
    "pluck \"a\" ",
    "hasKey ",
    "until ",
    "seq ",
    "semverCompare \">=1.0\" ",
    "int ",
    "float64 ",
    "toString ",
    "toYaml ",
    "toYamlPretty ",
    "fromYaml ",
    "fromYamlArray ",
    "toJson ",
    "mustToJson ",
    "fromJson ",
    "fromJsonArray ",
    "toToml ",
    "fromToml ",
    "uuidv4",
    "randAlphaNum 8",
    "é",
    "{",
    "}",
];

/// Small Helm-style templates of our own, for the byte target to start from and edit.
pub const SEED_TEMPLATES: &[&str] = &[
    "{{define \"x\"}}{{ .Values.name | default \"n\" | trunc 63 | trimSuffix \"-\" }}{{end}}\
name: {{ include \"x\" . }}\nlabels:\n{{- toYaml .Values.metadata.labels | nindent 2 }}\n",
    "{{- range $k, $v := .Values }}\n{{ $k }}: {{ $v | toJson }}\n{{- end }}\n",
    "{{- with .Values.spec }}replicas: {{ .replicas | default 1 }}{{ else }}none{{ end }}\n\
{{ if and .Values.a (not .Values.b) }}{{ tpl (toString .Values.a) $ }}{{ end }}\n",
    "{{- $d := dict \"a\" .Values.a }}{{ $_ := set $d \"b\" (list 1 2) }}\
{{ merge $d .Values | toYaml }}\n{{ fromYaml (toYaml .Values) | toJson }}\n",
    "{{ .Values | toToml }}\n{{ (fromToml \"a = 1\").a }}\n{{ fromJsonArray \"[1, 2]\" | len }}\n",
    "{{define \"rec\"}}{{ if . }}{{ include \"rec\" (rest .) }}{{ end }}{{end}}\
{{ include \"rec\" (list 1 2 3) }}{{ template \"rec\" .Values.items }}\n",
];

/// Template target from raw bytes: values (JSON of bounded depth, integers maybe as
/// `--set` gives them), then a template that is raw text, a token string, or a seed
/// template with token edits.
pub fn template(data: &[u8]) {
    let mut input = Input::new(data);
    let values = input.json(4);
    let set_ints = input.flag();
    let text = match input.below(4) {
        0 => String::from_utf8_lossy(input.rest()).into_owned(),
        1 => {
            let seed = input.pick(SEED_TEMPLATES);
            edit(&mut input, seed, 6)
        }
        _ => input.tokens(TEMPLATE_TOKENS, 48),
    };
    template_values(&text, &values, set_ints);
}

/// `base` with up to `edits` token insertions and byte-range deletions (at char boundaries).
pub fn edit(input: &mut Input<'_>, base: &str, edits: usize) -> String {
    let mut text = base.to_owned();
    for _ in 0..input.below(edits + 1) {
        let at = floor_boundary(&text, input.below(text.len() + 1));
        if input.flag() {
            text.insert_str(at, input.pick(TEMPLATE_TOKENS));
        } else {
            let end = floor_boundary(&text, at + input.below(16));
            text.replace_range(at..end.max(at), "");
        }
    }
    text
}

/// The largest char boundary of `s` at or below `i`.
fn floor_boundary(s: &str, i: usize) -> usize {
    let mut i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Template properties for one template text and one set of values: it parses or is
/// refused; when it parses, it executes (see [`execute_checked`]).
pub fn template_values(text: &str, values: &Json, set_ints: bool) {
    let mut set = bounded_templates();
    let started = Instant::now();
    let parsed = set.parse("t", text).map(|_| ());
    check_time(started, text);
    match parsed {
        Ok(()) => {
            execute_checked(&set, "t", values, set_ints, !calls_random(text));
        }
        Err(e) => assert_go_error(&e, text),
    }
}

/// Whole charts: every file of `files` (name, text) parsed into one set, as Helm does, then
/// every template whose base name does not start with `_` executed with `values` (see
/// [`execute_checked`]). Files that do not parse are refused with a parse error. Returns how
/// many templates rendered.
pub fn chart_values(files: &[(String, String)], values: &Json, set_ints: bool) -> usize {
    let mut set = bounded_templates();
    let mut parsed = Vec::new();
    let deterministic = !files.iter().any(|(_, text)| calls_random(text));
    for (name, text) in files {
        match set.parse(name, text) {
            Ok(_) => parsed.push(name),
            Err(e) => assert_go_error(&e, name),
        }
    }
    parsed
        .into_iter()
        .filter(|name| !name.rsplit('/').next().unwrap_or(name).starts_with('_'))
        .filter(|name| execute_checked(&set, name, values, set_ints, deterministic))
        .count()
}

/// A template set with Sprig, Helm's data-format functions, and Helm's `include`, `tpl`,
/// `required`, `fail` and `lookup` (as `helm template` has it: an empty map), bounded by
/// [`MAX_DEPTH`], [`MAX_OUTPUT`] and [`MAX_STEPS`].
pub fn bounded_templates() -> Templates {
    let mut set = Templates::new("gotpl");
    set.add_funcs(opkit_template::sprig::functions())
        .add_funcs(opkit_template::formats::functions())
        .add_func("include", include())
        .add_func("tpl", tpl())
        .add_func("required", required())
        .add_func("fail", fail())
        .add_func("lookup", lookup())
        .set_max_depth(MAX_DEPTH)
        .set_max_output(Some(MAX_OUTPUT))
        .set_max_steps(Some(MAX_STEPS));
    set
}

/// Helm's `include NAME DATA`: the named template's output (as a separate execution).
fn include() -> Function {
    Function::with_context(&[ParamType::String, ParamType::Any], None, |ctx, a| {
        let name = a[0].as_str().unwrap_or_default().to_owned();
        ctx.execute_template(&name, &a[1])
            .map(Value::from)
            .map_err(|e| FuncError::new(e.to_string()))
    })
}

/// Helm's `tpl TEXT DATA`: `TEXT` parsed into a copy of the set and executed.
fn tpl() -> Function {
    Function::with_context(&[ParamType::String, ParamType::Any], None, |ctx, a| {
        let mut copy = ctx.templates().clone();
        let text = a[0].as_str().unwrap_or_default();
        copy.parse("tpl", text)
            .map_err(|e| FuncError::new(e.to_string()))?;
        ctx.execute(&copy, "tpl", &a[1])
            .map(Value::from)
            .map_err(|e| FuncError::new(e.to_string()))
    })
}

/// Functions whose results differ between runs.
const RANDOM: &[&str] = &["rand", "uuid", "Password", "gen", "shuffle"];

/// Whether template text may call a function whose result differs between runs.
pub fn calls_random(text: &str) -> bool {
    RANDOM.iter().any(|r| text.contains(r))
}

/// Helm's `required MSG VALUE`: `VALUE`, or the error `MSG` when it is nil or `""`.
fn required() -> Function {
    Function::new(&[ParamType::String, ParamType::Any], |a| match &a[1] {
        Value::Nil => Err(FuncError::new(a[0].as_str().unwrap_or_default())),
        Value::String(s) if s.is_empty() => Err(FuncError::new(a[0].as_str().unwrap_or_default())),
        v => Ok(v.clone()),
    })
}

/// Helm's `fail MSG`: always the error `MSG`.
fn fail() -> Function {
    Function::new(&[ParamType::String], |a| {
        Err(FuncError::new(a[0].as_str().unwrap_or_default()))
    })
}

/// Helm's `lookup` without a cluster (`helm template`): an empty map.
fn lookup() -> Function {
    let s = ParamType::String;
    Function::new(&[s, s, s, s], |_| Ok(Value::map(Default::default())))
}

/// Executes template `name` of `set` twice with fresh data built from `values` (Sprig's
/// `set` changes maps in place): each run ends within [`MAX_TIME`] with at most
/// [`MAX_OUTPUT`] bytes or with an error in Go's form; both runs agree when `deterministic`.
/// Returns whether it rendered.
pub fn execute_checked(
    set: &Templates,
    name: &str,
    values: &Json,
    set_ints: bool,
    deterministic: bool,
) -> bool {
    let run = || {
        let started = Instant::now();
        let result = set.execute(name, &helm_data(values, set_ints));
        check_time(started, name);
        result
    };
    let first = run();
    match &first {
        Ok(out) => assert!(
            out.len() <= MAX_OUTPUT,
            "{name}: {} bytes written past the bound",
            out.len()
        ),
        Err(e) => assert_go_error(e, name),
    }
    if deterministic {
        assert_eq!(first, run(), "{name}: two runs on the same values differ");
    }
    first.is_ok()
}

/// The data a chart's template sees: `.Values` and a fixed release, chart and capabilities.
/// With `set_ints`, integral numbers are `int64` (as `--set a=1` gives them) instead of
/// `float64` (as values files give them).
pub fn helm_data(values: &Json, set_ints: bool) -> Value {
    let fixed = serde_json::json!({
        "Release": {"Name": "rel", "Namespace": "default", "Service": "Helm",
            "IsInstall": true, "IsUpgrade": false, "Revision": 1},
        "Chart": {"Name": "chart", "Version": "1.0.0", "AppVersion": "1.0"},
        "Capabilities": {"KubeVersion": {"Version": "v1.31.0", "Major": "1", "Minor": "31"}},
        "Template": {"Name": "chart/templates/t.yaml", "BasePath": "chart/templates"}
    });
    let data = Value::from_json(&fixed);
    if let Value::Map(map) = &data {
        map.insert("Values", to_value(values, set_ints));
    }
    data
}

/// JSON as template data; integral numbers become `int64` when `set_ints`.
fn to_value(v: &Json, set_ints: bool) -> Value {
    match v {
        Json::Number(n) if set_ints && n.as_i64().is_some() => {
            Value::Int64(n.as_i64().unwrap_or_default())
        }
        Json::Array(items) => Value::list(items.iter().map(|i| to_value(i, set_ints)).collect()),
        Json::Object(map) => Value::map(
            map.iter()
                .map(|(k, i)| (k.clone(), to_value(i, set_ints)))
                .collect(),
        ),
        other => Value::from_json(other),
    }
}

/// Errors carry Go's `template: ` prefix and a message.
fn assert_go_error(e: &Error, what: &str) {
    let msg = e.message();
    assert!(
        msg.starts_with("template: ") && msg.len() > "template: ".len(),
        "{what}: error not in Go's form: {msg:?}"
    );
}

fn check_time(started: Instant, what: &str) {
    let took = started.elapsed();
    assert!(took < MAX_TIME, "{what}: took {took:?}");
}
