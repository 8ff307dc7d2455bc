//! Sprig's function library (what Helm and KUDO add to Go's templates), all of Sprig
//! 3.3.0's map as Helm v4 builds it, one file per family. Each function keeps Sprig's Go
//! signature, so the engine checks arguments as Go's `text/template` does (Go struct
//! parameters such as `time.Time` and Sprig's `certificate` included), and Sprig's
//! behaviour at the edges: many functions return `""` or `0` instead of failing, and those
//! that panic in Go report the panic's text as their error.
//!
//! Sprig 3.3.0 is what Helm v4 pins; KUDO's corpus renders used Sprig 3.2.3, which differs
//! in two functions: it has no `sha512sum`, and its `camelcase` is xstrings 1.3's
//! `ToCamelCase` (only `_` separates words and the other letters keep their case:
//! `GOLANG_IS_GREAT` → `GOLANGISGREAT`, `some words` → `Some words`), where 3.3.0 calls
//! xstrings 1.5's `ToPascalCase` (`GolangIsGreat`, `SomeWords`). This module follows 3.3.0.
//!
//! Helm replaces some of these in its own layer (`toJson`, `fromJson`, `mustToJson`, and
//! `getHostByName`, which returns "" unless `--enable-dns`) and drops `env` and
//! `expandenv`; KUDO drops the path functions and the environment. Those choices belong to
//! the layers above; this map is Sprig's own.

mod conv;
mod crypto;
mod dates;
mod defaults;
mod dicts;
mod durations;
mod encoding;
mod floats;
mod gojson;
mod golayout;
mod gotime;
mod lists;
mod network;
mod paths;
mod reflect;
mod regex;
mod rsakey;
mod semver;
mod strings;
mod urls;
mod xstrings;

use std::collections::BTreeMap;

use crate::{FuncError, Function, Value};

// Shared with the data-format and KUDO layers (`crate::yaml`, `crate::kudo`): Go's number
// parsing and JSON encoding.
pub(crate) use conv::{parse_float, parse_int, trim_zero_decimal};
pub(crate) use defaults::to_json;
pub(crate) use gojson::decode as decode_json;
pub(crate) use paths::clean as clean_path;

/// Sprig's functions by name, ready for [`crate::Templates::add_funcs`].
pub fn functions() -> BTreeMap<String, Function> {
    let mut m = Funcs(BTreeMap::new());
    strings::register(&mut m);
    conv::register(&mut m);
    defaults::register(&mut m);
    lists::register(&mut m);
    dicts::register(&mut m);
    durations::register(&mut m);
    dates::register(&mut m);
    floats::register(&mut m);
    encoding::register(&mut m);
    crypto::register(&mut m);
    reflect::register(&mut m);
    paths::register(&mut m);
    regex::register(&mut m);
    semver::register(&mut m);
    xstrings::register(&mut m);
    urls::register(&mut m);
    network::register(&mut m);
    m.0
}

/// The map being filled, with a short way to add an entry.
pub(crate) struct Funcs(BTreeMap<String, Function>);

impl Funcs {
    fn add(&mut self, name: &str, f: Function) {
        self.0.insert(name.to_string(), f);
    }
}

type R = Result<Value, FuncError>;

fn fail<T>(msg: impl Into<String>) -> Result<T, FuncError> {
    Err(FuncError::new(msg))
}

/// The most bytes (or list elements) a Sprig function generates in one call. Go would try
/// to allocate whatever a template asks for and die; here the call fails with a clear error.
pub(crate) const MAX_GENERATED: u64 = 1 << 28;

/// Fails when a function is asked to generate more than [`MAX_GENERATED`] bytes or elements.
fn bound(what: &str, size: u64) -> Result<(), FuncError> {
    if size > MAX_GENERATED {
        return fail(format!(
            "{what}: {size} exceeds the {MAX_GENERATED} bound on generated data"
        ));
    }
    Ok(())
}

/// What Go's runtime says when Sprig calls `reflect.TypeOf(nil).Kind()`.
const NIL_DEREF: &str = "runtime error: invalid memory address or nil pointer dereference";

/// The host value of Rust type `T` inside `v`, if it holds one (Sprig's times, versions
/// and certificates are [`crate::Object`]s).
pub(crate) fn host<T: 'static>(v: &Value) -> Option<&T> {
    match v {
        Value::Object(o) => {
            let any: &dyn std::any::Any = &**o;
            any.downcast_ref::<T>()
        }
        _ => None,
    }
}

/// Sprig's `strval`: a string as is, anything else as `fmt.Sprintf("%v")`.
pub(crate) fn strval(v: &Value) -> String {
    match v {
        Value::String(s) => s.to_string(),
        other => crate::gofmt::sprint_value(other),
    }
}

/// The string argument at `i` (the engine has checked the kind).
fn s(args: &[Value], i: usize) -> &str {
    args[i].as_str().unwrap_or_default()
}

/// The `int` argument at `i` (the engine has checked the kind).
fn n(args: &[Value], i: usize) -> i64 {
    match args[i] {
        Value::Int(n) | Value::Int64(n) => n,
        _ => 0,
    }
}

/// Sprig's `empty`: Go's zero value test by reflection.
pub(crate) fn empty(v: &Value) -> bool {
    match &*v.plain() {
        Value::Nil => true,
        Value::Bool(b) => !b,
        Value::Int(n) | Value::Int64(n) => *n == 0,
        Value::Float(f) => *f == 0.0,
        Value::String(s) => s.is_empty(),
        Value::List(l) => l.is_empty(),
        Value::Map(m) => m.is_empty(),
        Value::Object(_) | Value::Func(_) => false,
    }
}

/// Go's `reflect.Kind` name of a value (`invalid` for nil).
pub(crate) fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Nil => "invalid",
        Value::Bool(_) => "bool",
        Value::Int(_) => "int",
        Value::Int64(_) => "int64",
        Value::Float(_) => "float64",
        Value::String(_) => "string",
        Value::List(_) => "slice",
        Value::Map(_) => "map",
        Value::Object(o) => match o.underlying() {
            Some(u) => kind_of(&u),
            None if o.type_name().starts_with('*') => "ptr",
            None => "struct",
        },
        Value::Func(_) => "func",
    }
}

/// The elements of a slice, or Sprig's error for other kinds (`Cannot <what> on type KIND`),
/// or Go's nil-dereference panic for nil.
fn items(v: &Value, what: impl FnOnce(&str) -> String) -> Result<Vec<Value>, FuncError> {
    match &*v.plain() {
        Value::List(l) => Ok(l.to_vec()),
        Value::Nil => fail(NIL_DEREF),
        other => fail(what(kind_of(other))),
    }
}

/// `reflect.DeepEqual` over template values.
pub(crate) fn deep_equal(a: &Value, b: &Value) -> bool {
    deep_equal_at(a, b, 0)
}

fn deep_equal_at(a: &Value, b: &Value, depth: usize) -> bool {
    if depth > 1000 {
        return false;
    }
    match (a, b) {
        (Value::Map(x), Value::Map(y)) if x.same(y) => true,
        (Value::Nil, Value::Nil) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Int(x), Value::Int(y)) | (Value::Int64(x), Value::Int64(y)) => x == y,
        (Value::Float(x), Value::Float(y)) => x == y,
        (Value::String(x), Value::String(y)) => x == y,
        (Value::List(x), Value::List(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y.iter())
                    .all(|(a, b)| deep_equal_at(a, b, depth + 1))
        }
        (Value::Map(x), Value::Map(y)) => {
            x.len() == y.len()
                && x.entries()
                    .iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| deep_equal_at(v, &w, depth + 1)))
        }
        _ => false,
    }
}

/// `s[a:b]` on bytes as Go slices a string, with Go's panic text when out of range.
fn byte_slice(s: &str, a: i64, b: i64) -> Result<String, FuncError> {
    let len = s.len() as i64;
    if b < 0 || b > len {
        return fail(format!(
            "runtime error: slice bounds out of range [:{b}] with length {len}"
        ));
    }
    if a < 0 || a > b {
        return fail(format!(
            "runtime error: slice bounds out of range [{a}:{b}]"
        ));
    }
    Ok(String::from_utf8_lossy(&s.as_bytes()[a as usize..b as usize]).into_owned())
}

/// Strings as a list value (Go's `[]string` prints and ranges the same way).
fn string_list(v: impl IntoIterator<Item = String>) -> Value {
    Value::list(v.into_iter().map(Value::from).collect())
}
