//! `values.schema.json` validation as Helm v4's `ValidateAgainstSchema` does it: the chart's
//! schema against its values, then each subchart's against its section, errors gathered per
//! chart. Validation is `boon` (the Rust sibling of the santhosh-tekuri/jsonschema v6 library
//! Helm uses, same drafts and error tree); the messages are rendered in v6's words (`- at
//! '/age': minimum: got -5, want 0`), which Helm prints.

use std::sync::{Arc, Mutex, OnceLock};

use boon::{CompileError, Compiler, ErrorKind, SchemaIndex, Schemas, UrlLoader, ValidationError};
use opkit_template::{Dict, Value};

use crate::chart::Chart;

const SCHEMA_URL: &str = "file:///values.schema.json";

/// Helm's `ValidateAgainstSchema`: `Ok` when every schema accepts its values, else the
/// per-chart report Helm prints after `values don't meet the specifications…`.
pub(crate) fn validate_against_schema(chart: &Chart, values: &Dict) -> Result<(), String> {
    let mut sb = String::new();
    if let Some(schema) = &chart.schema
        && let Err(e) = validate_single(values, schema)
    {
        sb.push_str(&format!("{}:\n{e}", chart.name()));
    }
    for sub in &chart.dependencies {
        match values.get(sub.name()) {
            None | Some(Value::Nil) => {}
            Some(Value::Map(d)) => {
                if let Err(e) = validate_against_schema(sub, &d) {
                    sb.push_str(&e);
                }
            }
            Some(other) => sb.push_str(&format!(
                "{}:\ninvalid type for values: expected object (map), got {}\n",
                sub.name(),
                other.type_name()
            )),
        }
    }
    if sb.is_empty() { Ok(()) } else { Err(sb) }
}

/// Starts building, once per process and on a thread of its own, what every schema compile
/// needs first: `boon` checks each schema against its draft's metaschema, and compiles all
/// five drafts' metaschemas on first use, which costs about as much as rendering a large
/// chart. Called when a chart with a schema is loaded, so that work overlaps the rest of the
/// load and the render instead of preceding the check.
pub(crate) fn prepare_validator() {
    static STARTED: std::sync::Once = std::sync::Once::new();
    STARTED.call_once(|| {
        let warm = || {
            in_idle_time(|| {
                let mut compiler = Compiler::new();
                let url = "file:///opkit-warm-up.json";
                // Cannot fail: the empty schema is valid in every draft.
                if compiler.add_resource(url, serde_json::json!({})).is_ok() {
                    let _ = compiler.compile(url, &mut Schemas::new());
                }
            })
        };
        // Without a thread the first real compile does this work, as before.
        let _ = std::thread::Builder::new()
            .name("opkit-schema-warm".into())
            .spawn(warm);
    });
}

/// Schema work started ahead runs in idle time: in Linux's `SCHED_IDLE` class, on a core that
/// would otherwise be idle, so that a render's threads preempt it at once (and may take its
/// core over without the scheduler's cache-hot delay) instead of queueing behind it. Until a
/// check needs its result ([`needed_now`]): the threads then go back to the normal class, so
/// a busy machine never leaves a check waiting on a thread that only runs when a core idles.
fn in_idle_time<T>(work: impl FnOnce() -> T) -> T {
    #[cfg(target_os = "linux")]
    let _listed = {
        /// Takes the thread off the list when its work ends (or panics).
        struct Listed(libc::pid_t);
        impl Drop for Listed {
            fn drop(&mut self) {
                in_idle_time_threads().retain(|&t| t != self.0);
            }
        }
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::gettid() };
        let mut threads = in_idle_time_threads();
        // SAFETY: 0 is the calling thread.
        if unsafe { set_policy(0, libc::SCHED_IDLE) } {
            threads.push(tid);
        }
        Listed(tid)
    };
    work()
}

/// Puts the threads working ahead in idle time back in the normal class (a check waits).
fn needed_now() {
    #[cfg(target_os = "linux")]
    for tid in in_idle_time_threads().drain(..) {
        // SAFETY: `tid` is a live thread of this process: it leaves the list, under this
        // lock, before it ends.
        unsafe { set_policy(tid, libc::SCHED_OTHER) };
    }
}

/// The ids of the threads now working in idle time.
#[cfg(target_os = "linux")]
fn in_idle_time_threads() -> std::sync::MutexGuard<'static, Vec<libc::pid_t>> {
    static THREADS: Mutex<Vec<libc::pid_t>> = Mutex::new(Vec::new());
    THREADS.lock().unwrap_or_else(|e| e.into_inner())
}

/// Sets thread `tid`'s (0: the caller's) scheduling policy; whether it took.
#[cfg(target_os = "linux")]
unsafe fn set_policy(tid: libc::pid_t, policy: libc::c_int) -> bool {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: the caller passes this process's thread; `param` outlives the call.
    unsafe { libc::sched_setscheduler(tid, policy, &param) == 0 }
}

/// Helm's `urn:` loader: an unresolved URN is a permissive schema.
struct UrnLoader;

impl UrlLoader for UrnLoader {
    fn load(&self, _url: &str) -> Result<serde_json::Value, Box<dyn std::error::Error>> {
        Ok(serde_json::Value::Bool(true))
    }
}

/// A compiled schema, or why it does not compile (in Helm's words).
type Compiled = Result<(Schemas, SchemaIndex), String>;

/// Schemas compiled ahead of their check ([`compile_ahead`]), by their text; the check takes
/// its entry. At most [`AHEAD_MAX`] wait (a loaded chart need not be checked).
static AHEAD: Mutex<Ahead> = Mutex::new(Vec::new());
type Ahead = Vec<(Vec<u8>, Arc<OnceLock<Compiled>>)>;
const AHEAD_MAX: usize = 16;

fn ahead() -> std::sync::MutexGuard<'static, Ahead> {
    AHEAD.lock().unwrap_or_else(|e| e.into_inner())
}

/// Compiles the schemas of `chart` and its subcharts on a thread of their own, so that the
/// check, which needs the coalesced values, finds them ready: compiling a large schema costs
/// as much as rendering the chart, and while the values are coalesced a core is free.
pub(crate) fn compile_ahead(chart: &Chart) {
    fn texts<'c>(chart: &'c Chart, out: &mut Vec<&'c [u8]>) {
        out.extend(chart.schema.as_deref());
        chart.dependencies.iter().for_each(|d| texts(d, out));
    }
    let mut found = Vec::new();
    texts(chart, &mut found);
    compile_texts_ahead(found);
}

/// [`compile_ahead`] for the schemas among a chart directory's files (its own and its
/// directory subcharts'), as soon as they are read: the chart's values and subcharts are
/// then decoded while they compile.
pub(crate) fn compile_files_ahead(files: &[crate::chart::File]) {
    compile_texts_ahead(
        files
            .iter()
            .filter(|f| is_schema_file(&f.name))
            .map(|f| f.data.as_slice())
            .collect(),
    );
}

/// Whether a chart directory's file `name` is a chart's or a directory subchart's schema.
pub(crate) fn is_schema_file(name: &str) -> bool {
    name == "values.schema.json" || name.ends_with("/values.schema.json")
}

fn compile_texts_ahead(found: Vec<&[u8]>) {
    if found.is_empty() {
        return;
    }
    prepare_validator();
    let mut jobs = Vec::new();
    {
        let mut ahead = ahead();
        for text in found {
            if ahead.iter().any(|(t, _)| t.as_slice() == text) {
                continue;
            }
            if ahead.len() == AHEAD_MAX {
                ahead.remove(0);
            }
            let cell = Arc::new(OnceLock::new());
            ahead.push((text.to_vec(), cell.clone()));
            jobs.push((text.to_vec(), cell));
        }
    }
    if jobs.is_empty() {
        return;
    }
    // Without a thread each check compiles its schema itself, as before.
    let _ = std::thread::Builder::new()
        .name("opkit-schema-compile".into())
        .spawn(move || {
            in_idle_time(|| {
                for (text, cell) in jobs {
                    cell.get_or_init(|| compile(&text));
                }
            })
        });
}

/// `schema` compiled as Helm compiles it (`file` and `urn` references resolved).
fn compile(schema: &[u8]) -> Compiled {
    let schema: serde_json::Value =
        serde_json::from_slice(schema).map_err(|_| json_error(schema))?;
    let mut loader = boon::SchemeUrlLoader::new();
    loader.register("file", Box::new(boon::FileLoader));
    loader.register("urn", Box::new(UrnLoader));
    let mut compiler = Compiler::new();
    compiler.use_loader(Box::new(loader));
    compiler
        .add_resource(SCHEMA_URL, schema)
        .map_err(|e| compile_error(&e))?;
    let mut schemas = Schemas::new();
    let index = compiler
        .compile(SCHEMA_URL, &mut schemas)
        .map_err(|e| compile_error(&e))?;
    Ok((schemas, index))
}

/// Helm's `ValidateAgainstSingleSchema`.
fn validate_single(values: &Dict, schema: &[u8]) -> Result<(), String> {
    let taken = {
        let mut ahead = ahead();
        let at = ahead.iter().position(|(t, _)| t.as_slice() == schema);
        at.map(|i| ahead.remove(i).1)
    };
    let own;
    let compiled = match &taken {
        // Waits while the thread compiling ahead is at it.
        Some(cell) => {
            if cell.get().is_none() {
                needed_now();
            }
            cell.get_or_init(|| compile(schema))
        }
        None => {
            own = compile(schema);
            &own
        }
    };
    let (schemas, index) = compiled.as_ref().map_err(Clone::clone)?;
    let index = *index;
    let instance = crate::values::to_json(&Value::Map(values.clone()));
    match schemas.validate(&instance, index) {
        Ok(()) => Ok(()),
        Err(e) => {
            // Helm drops the first line (`jsonschema validation failed with '…#'`).
            let text = render(&e);
            let text = match text.split_once('\n') {
                Some((first, rest)) if first.starts_with("jsonschema validation failed with ") => {
                    rest.to_string()
                }
                _ => text,
            };
            Err(format!("{text}\n"))
        }
    }
}

/// Why a schema is not JSON, in the words of Go's `json.Decoder` (v6's `UnmarshalJSON`).
/// The syntax message comes from the engine's `fromJson`, a port of Go's JSON scanner.
fn json_error(schema: &[u8]) -> String {
    let text = crate::chart::text(schema);
    let trimmed = text.trim_end();
    if serde_json::Deserializer::from_str(trimmed)
        .into_iter::<serde_json::Value>()
        .next()
        .is_some_and(|r| r.is_ok())
    {
        return "invalid character after top-level value".into();
    }
    static FROM_JSON: std::sync::OnceLock<opkit_template::Function> = std::sync::OnceLock::new();
    let from_json =
        FROM_JSON.get_or_init(|| opkit_template::formats::functions()["fromJson"].clone());
    let msg = match from_json.call(&[Value::string(text.as_ref())]) {
        Ok(Value::Map(d)) => d.get("Error").and_then(|e| e.as_str().map(str::to_string)),
        _ => None,
    };
    match msg.as_deref() {
        Some("unexpected end of JSON input") => "unexpected EOF".into(),
        Some(m) => m.to_string(),
        None => "invalid JSON".into(),
    }
}

fn compile_error(e: &CompileError) -> String {
    match e {
        CompileError::ValidationError { url, src } => {
            format!("{url:?} is not valid against metaschema: {}", render(src))
        }
        other => format!("{other:#}"),
    }
}

/// One line of v6's report and the lines under it.
struct Node {
    /// `at '/x': MESSAGE`, or the root's `jsonschema validation failed with '…'`.
    text: String,
    /// A reference with one cause prints only the cause (v6's `skip`).
    skip: bool,
    causes: Vec<Node>,
}

/// The error tree as v6's `ValidationError.Error()` prints it.
fn render(e: &ValidationError<'_, '_>) -> String {
    let mut sb = String::new();
    display(&convert(e), &mut sb, 0);
    sb
}

fn display(n: &Node, sb: &mut String, indent: usize) {
    let mut indent = indent;
    if !n.skip {
        if indent > 0 {
            sb.push('\n');
            for _ in 0..indent - 1 {
                sb.push_str("  ");
            }
            sb.push_str("- ");
        }
        indent += 1;
        sb.push_str(&n.text);
    }
    for cause in &n.causes {
        display(cause, sb, indent);
    }
}

/// The combinator keywords whose errors v6 always wraps in an `'allOf' failed` (…) line; boon
/// leaves the wrapper out when there is a single cause, so it is put back here.
const COMBINATORS: [&str; 3] = ["allOf", "anyOf", "oneOf"];

/// boon's error as v6's tree.
fn convert(e: &ValidationError<'_, '_>) -> Node {
    let text = match &e.kind {
        ErrorKind::Schema { url } => format!("jsonschema validation failed with {}", quote(url)),
        kind => format!(
            "at {}: {}",
            quote(&e.instance_location.to_string()),
            message(kind)
        ),
    };
    // The causes of a combinator error come from its numbered subschemas.
    let combinator = match e.kind {
        ErrorKind::AllOf => Some("allOf"),
        ErrorKind::AnyOf => Some("anyOf"),
        ErrorKind::OneOf(_) => Some("oneOf"),
        _ => None,
    };
    // A reference's causes come from the schema it points to.
    let base = match (&e.kind, combinator) {
        (_, Some(kw)) => format!("{}/{kw}", e.schema_url),
        (ErrorKind::Reference { url, .. }, None) => url.to_string(),
        _ => e.schema_url.to_string(),
    };
    Node {
        text,
        skip: e.causes.len() == 1 && matches!(e.kind, ErrorKind::Reference { .. }),
        causes: e
            .causes
            .iter()
            .map(|c| rewrap(c, &base, combinator.is_some()))
            .collect(),
    }
}

/// `c` under the schema location `base`; when the keyword path from `base` to `c` goes
/// through a combinator that has no line of its own, that line is added above `c`.
fn rewrap(c: &ValidationError<'_, '_>, base: &str, skip_index: bool) -> Node {
    let Some(rel) = c.schema_url.strip_prefix(base) else {
        return convert(c);
    };
    let mut segs: Vec<&str> = rel.split('/').filter(|s| !s.is_empty()).collect();
    let mut prefix = base.to_string();
    if skip_index && !segs.is_empty() {
        prefix = format!("{prefix}/{}", segs[0]);
        segs.remove(0);
    }
    let Some(k) = first_combinator(&segs) else {
        return convert(c);
    };
    let kw = segs[k];
    let inner_base = format!("{prefix}/{}", segs[..=k].join("/"));
    let consumed = instance_segments(&segs[(k + 2).min(segs.len())..]);
    let inst = c.instance_location.to_string();
    let mut parts: Vec<&str> = inst.split('/').collect();
    parts.truncate(parts.len().saturating_sub(consumed).max(1));
    let message = match kw {
        "allOf" => "'allOf' failed",
        "anyOf" => "'anyOf' failed",
        _ => "'oneOf' failed, none matched",
    };
    Node {
        text: format!("at {}: {message}", quote(&parts.join("/"))),
        skip: false,
        causes: vec![rewrap(c, &inner_base, true)],
    }
}

/// The index of the first combinator keyword in a schema path (names of properties and
/// definitions are not keywords).
fn first_combinator(segs: &[&str]) -> Option<usize> {
    let mut i = 0;
    while i < segs.len() {
        match segs[i] {
            kw if COMBINATORS.contains(&kw) => return Some(i),
            "properties" | "patternProperties" | "$defs" | "definitions" | "dependentSchemas"
            | "dependencies" | "prefixItems" => i += 2,
            _ => i += 1,
        }
    }
    None
}

/// How many instance path elements a schema path descends into.
fn instance_segments(segs: &[&str]) -> usize {
    let mut n = 0;
    let mut i = 0;
    while i < segs.len() {
        match segs[i] {
            "properties" | "patternProperties" | "prefixItems" => {
                n += 1;
                i += 2;
            }
            "items" => {
                n += 1;
                i += if segs.get(i + 1).is_some_and(|s| s.parse::<usize>().is_ok()) {
                    2
                } else {
                    1
                };
            }
            "additionalProperties"
            | "additionalItems"
            | "contains"
            | "unevaluatedProperties"
            | "unevaluatedItems" => {
                n += 1;
                i += 1;
            }
            "$defs" | "definitions" | "dependentSchemas" | "dependencies" | "allOf" | "anyOf"
            | "oneOf" => i += 2,
            _ => i += 1,
        }
    }
    n
}

/// v6's `quote`: Go's `%q` inside single quotes.
fn quote(s: &str) -> String {
    let q = opkit_template::sprintf("%q", &[Value::string(s)]);
    let q = q.replace("\\\"", "\"").replace('\'', "\\'");
    format!("'{}'", &q[1..q.len() - 1])
}

fn join_quoted<S: AsRef<str>>(items: impl IntoIterator<Item = S>) -> String {
    items
        .into_iter()
        .map(|s| quote(s.as_ref()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A count as x/text's English printer shows `%d` (digits grouped by thousands).
fn count(n: usize) -> String {
    group(&n.to_string())
}

fn group(digits: &str) -> String {
    let (sign, digits) = match digits.strip_prefix('-') {
        Some(d) => ("-", d),
        None => ("", digits),
    };
    let (int, frac) = match digits.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => digits.split_at(i),
        None => (digits, ""),
    };
    if let Some((mant, exp)) = frac.split_once('e') {
        // x/text writes Go's `1.5e+07` as `1.5×10⁰⁷`.
        let sup: String = exp
            .chars()
            .filter_map(|c| match c {
                '-' => Some('⁻'),
                '+' => None,
                d => "⁰¹²³⁴⁵⁶⁷⁸⁹".chars().nth(d.to_digit(10)? as usize),
            })
            .collect();
        return format!("{sign}{int}{mant}×10{sup}");
    }
    if int.len() <= 3 {
        return format!("{sign}{int}{frac}");
    }
    let mut out = String::new();
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    format!("{sign}{out}{frac}")
}

/// A schema number as v6 prints it (`%v` of its float64 value).
fn number(n: &serde_json::Number) -> String {
    let f = n.as_f64().unwrap_or(0.0);
    group(&opkit_template::sprint(&[Value::Float(f)]))
}

/// A primitive as v6's `display`: strings quoted, others with `%v`.
fn primitive(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => quote(s),
        serde_json::Value::Array(_) | serde_json::Value::Object(_) => "value".into(),
        serde_json::Value::Null => "<nil>".into(),
        serde_json::Value::Number(n) => {
            opkit_template::sprint(&[Value::Float(n.as_f64().unwrap_or(0.0))])
        }
        other => other.to_string(),
    }
}

fn is_primitive(v: &serde_json::Value) -> bool {
    !matches!(
        v,
        serde_json::Value::Array(_) | serde_json::Value::Object(_)
    )
}

fn type_name(t: boon::Type) -> String {
    // v6 reports every JSON number's type as `number`.
    match t {
        boon::Type::Integer => "number".into(),
        other => other.to_string(),
    }
}

/// One error kind in santhosh-tekuri/jsonschema v6's English.
fn message(k: &ErrorKind<'_, '_>) -> String {
    match k {
        ErrorKind::Group | ErrorKind::Reference { .. } => "validation failed".into(),
        ErrorKind::Schema { url } => format!("jsonschema validation failed with {}", quote(url)),
        ErrorKind::ContentSchema => "contentSchema failed".into(),
        ErrorKind::PropertyName { prop } => format!("invalid propertyName {}", quote(prop)),
        ErrorKind::RefCycle {
            url,
            kw_loc1,
            kw_loc2,
        } => format!("both {kw_loc1} and {kw_loc2} resolve to {url:?} causing reference cycle"),
        ErrorKind::FalseSchema => "false schema".into(),
        ErrorKind::Type { got, want } => format!(
            "got {}, want {}",
            type_name(*got),
            want.iter()
                .map(|t| t.to_string())
                .collect::<Vec<_>>()
                .join(" or ")
        ),
        ErrorKind::Enum { want } => {
            if want.iter().all(is_primitive) {
                if want.len() == 1 {
                    format!("value must be {}", primitive(&want[0]))
                } else {
                    format!(
                        "value must be one of {}",
                        want.iter().map(primitive).collect::<Vec<_>>().join(", ")
                    )
                }
            } else {
                "enum failed".into()
            }
        }
        ErrorKind::Const { want } => {
            if is_primitive(want) {
                format!("value must be {}", primitive(want))
            } else {
                "const failed".into()
            }
        }
        ErrorKind::Format { got, want, err } => {
            format!("{} is not valid {want}: {err}", primitive(got))
        }
        ErrorKind::MinProperties { got, want } => {
            format!("minProperties: got {}, want {}", count(*got), count(*want))
        }
        ErrorKind::MaxProperties { got, want } => {
            format!("maxProperties: got {}, want {}", count(*got), count(*want))
        }
        ErrorKind::AdditionalProperties { got } => {
            format!("additional properties {} not allowed", join_quoted(got))
        }
        ErrorKind::Required { want } => {
            if want.len() == 1 {
                format!("missing property {}", quote(want[0]))
            } else {
                format!("missing properties {}", join_quoted(want))
            }
        }
        ErrorKind::Dependency { prop, missing }
        | ErrorKind::DependentRequired { prop, missing } => {
            format!(
                "properties {} required, if {} exists",
                join_quoted(missing),
                quote(prop)
            )
        }
        ErrorKind::MinItems { got, want } => {
            format!("minItems: got {}, want {}", count(*got), count(*want))
        }
        ErrorKind::MaxItems { got, want } => {
            format!("maxItems: got {}, want {}", count(*got), count(*want))
        }
        ErrorKind::Contains => "no items match contains schema".into(),
        ErrorKind::MinContains { got, want } => {
            if got.is_empty() {
                format!(
                    "min {} items required to match contains schema, but none matched",
                    count(*want)
                )
            } else {
                format!(
                    "min {} items required to match contains schema, but matched {} items at {}",
                    count(*want),
                    count(got.len()),
                    got.iter()
                        .map(|i| i.to_string())
                        .collect::<Vec<_>>()
                        .join(" ")
                )
            }
        }
        ErrorKind::MaxContains { got, want } => format!(
            "max {} items required to match contains schema, but matched {} items at {}",
            count(*want),
            count(got.len()),
            got.iter()
                .map(|i| i.to_string())
                .collect::<Vec<_>>()
                .join(" ")
        ),
        ErrorKind::UniqueItems { got: [i, j] } => {
            format!("items at {} and {} are equal", count(*i), count(*j))
        }
        ErrorKind::AdditionalItems { got } => {
            format!("last {} additionalItem(s) not allowed", count(*got))
        }
        ErrorKind::MinLength { got, want } => {
            format!("minLength: got {}, want {}", count(*got), count(*want))
        }
        ErrorKind::MaxLength { got, want } => {
            format!("maxLength: got {}, want {}", count(*got), count(*want))
        }
        ErrorKind::Pattern { got, want } => {
            format!("{} does not match pattern {}", quote(got), quote(want))
        }
        ErrorKind::ContentEncoding { want, err } => {
            format!("value is not {} encoded: {err}", quote(want))
        }
        ErrorKind::ContentMediaType { want, err, .. } => {
            format!("value if not of mediatype {}: {err}", quote(want))
        }
        ErrorKind::Minimum { got, want } => {
            format!("minimum: got {}, want {}", number(got), number(want))
        }
        ErrorKind::Maximum { got, want } => {
            format!("maximum: got {}, want {}", number(got), number(want))
        }
        ErrorKind::ExclusiveMinimum { got, want } => {
            format!(
                "exclusiveMinimum: got {}, want {}",
                number(got),
                number(want)
            )
        }
        ErrorKind::ExclusiveMaximum { got, want } => {
            format!(
                "exclusiveMaximum: got {}, want {}",
                number(got),
                number(want)
            )
        }
        ErrorKind::MultipleOf { got, want } => {
            format!("multipleOf: got {}, want {}", number(got), number(want))
        }
        // v6.0.2 quotes these keywords.
        ErrorKind::Not => "'not' failed".into(),
        ErrorKind::AllOf => "'allOf' failed".into(),
        ErrorKind::AnyOf => "'anyOf' failed".into(),
        ErrorKind::OneOf(None) => "'oneOf' failed, none matched".into(),
        ErrorKind::OneOf(Some((i, j))) => {
            format!("'oneOf' failed, subschemas {i}, {j} matched")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chart::Metadata;

    #[cfg(target_os = "linux")]
    #[test]
    fn work_ahead_runs_in_idle_time_until_a_check_needs_its_result() {
        // SAFETY: sched_getscheduler(0) reads the calling thread's policy.
        let policy = || unsafe { libc::sched_getscheduler(0) };
        let (report, reported) = std::sync::mpsc::channel();
        let (go_on, told) = std::sync::mpsc::channel::<()>();
        let worker = std::thread::spawn(move || {
            in_idle_time(|| {
                report.send(policy()).unwrap();
                told.recv().unwrap();
                report.send(policy()).unwrap();
            })
        });
        assert_eq!(reported.recv().unwrap(), libc::SCHED_IDLE);
        needed_now();
        go_on.send(()).unwrap();
        assert_eq!(reported.recv().unwrap(), libc::SCHED_OTHER);
        worker.join().unwrap();
        assert!(in_idle_time_threads().is_empty());
    }

    fn chart(name: &str, schema: Option<&str>, deps: Vec<Chart>) -> Chart {
        Chart {
            metadata: Metadata {
                name: name.into(),
                ..Metadata::default()
            },
            templates: vec![],
            values: Value::map(Default::default()),
            schema: schema.map(|s| s.as_bytes().to_vec()),
            files: vec![],
            dependencies: deps,
            lock: None,
        }
    }

    fn dict(v: serde_json::Value) -> Dict {
        match Value::from_json(&v) {
            Value::Map(d) => d,
            _ => unreachable!(),
        }
    }

    const PERSON: &str = r#"{
        "type": "object",
        "required": ["name", "employmentInfo"],
        "properties": {
            "name": {"type": "string"},
            "age": {"type": "integer", "minimum": 0},
            "tags": {"type": "array", "maxItems": 1}
        }
    }"#;

    #[test]
    fn errors_are_listed_in_v6s_words_under_the_charts_name() {
        let c = chart("person", Some(PERSON), vec![]);
        let err = validate_against_schema(
            &c,
            &dict(serde_json::json!({"name": "x", "age": -5, "tags": [1, 2]})),
        )
        .unwrap_err();
        assert_eq!(
            err,
            "person:\n- at '': missing property 'employmentInfo'\n- at '/age': minimum: got -5, want 0\n- at '/tags': maxItems: got 2, want 1\n"
        );
    }

    #[test]
    fn a_type_error_names_go_json_types() {
        let c = chart(
            "c",
            Some(
                r#"{"properties": {"n": {"type": "string"}, "s": {"type": ["integer", "boolean"]}}}"#,
            ),
            vec![],
        );
        let err =
            validate_against_schema(&c, &dict(serde_json::json!({"n": 3, "s": "x"}))).unwrap_err();
        assert_eq!(
            err,
            "c:\n- at '/n': got number, want string\n- at '/s': got string, want boolean or integer\n"
        );
    }

    #[test]
    fn subcharts_are_validated_against_their_section() {
        let sub = chart("sub", Some(r#"{"required": ["age"]}"#), vec![]);
        let top = chart("top", None, vec![sub]);
        assert!(validate_against_schema(&top, &dict(serde_json::json!({}))).is_ok());
        assert_eq!(
            validate_against_schema(&top, &dict(serde_json::json!({"sub": {}}))).unwrap_err(),
            "sub:\n- at '': missing property 'age'\n"
        );
        assert_eq!(
            validate_against_schema(&top, &dict(serde_json::json!({"sub": "x"}))).unwrap_err(),
            "sub:\ninvalid type for values: expected object (map), got string\n"
        );
    }

    #[test]
    fn schemas_compiled_ahead_give_the_checks_results_and_are_taken_once() {
        let sub = chart(
            "sub",
            Some(r#"{"required": ["age"], "title": "ahead"}"#),
            vec![],
        );
        let top = chart(
            "top",
            Some(r#"{"type": "object", "title": "ahead"}"#),
            vec![sub],
        );
        let broken = chart("broken", Some(r#"{"type": 5, "title": "ahead"}"#), vec![]);
        let check = |c: &Chart, v| validate_against_schema(c, &dict(v));
        let want = (
            check(&top, serde_json::json!({"sub": {}})),
            check(&broken, serde_json::json!({})),
        );
        assert!(
            want.1
                .as_ref()
                .unwrap_err()
                .contains("not valid against metaschema")
        );
        compile_ahead(&top);
        compile_ahead(&broken);
        let waiting = |t: &str| ahead().iter().filter(|(s, _)| s == t.as_bytes()).count();
        assert_eq!(waiting(r#"{"type": 5, "title": "ahead"}"#), 1);
        let got = (
            check(&top, serde_json::json!({"sub": {}})),
            check(&broken, serde_json::json!({})),
        );
        assert_eq!(got, want);
        assert_eq!(waiting(r#"{"type": 5, "title": "ahead"}"#), 0);
        assert_eq!(waiting(r#"{"required": ["age"], "title": "ahead"}"#), 0);
    }

    #[test]
    fn a_schema_that_breaks_the_metaschema_is_reported() {
        let c = chart("c", Some("1"), vec![]);
        let err = validate_against_schema(&c, &dict(serde_json::json!({}))).unwrap_err();
        assert!(err.starts_with("c:\n\"file:///values.schema.json"), "{err}");
        assert!(err.contains("is not valid against metaschema"), "{err}");
    }

    #[test]
    fn numbers_print_as_go_does() {
        assert_eq!(group("1000000"), "1,000,000");
        assert_eq!(group("-1234.5"), "-1,234.5");
        assert_eq!(group("1e+21"), "1×10²¹");
        assert_eq!(group("-1.2345674e+06"), "-1.2345674×10⁰⁶");
        assert_eq!(group("1e-06"), "1×10⁻⁰⁶");
        assert_eq!(quote("a'b\"c"), "'a\\'b\"c'");
    }
}
