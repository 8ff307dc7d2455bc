//! Go's `text/template`, in Rust, rendering byte for byte what Go renders.
//!
//! Charts (Helm) and KUDO packages are Go templates; this crate is the engine the chart and
//! KUDO layers build on. It reproduces Go 1.19's `text/template` semantics (the version the
//! project's conformance corpus was recorded with):
//!
//! * lexing and parsing with Go's error texts and positions (`template: NAME:LINE: …`);
//!   actions, pipelines, parenthesised pipelines, `$` and variables (`:=`, `=`) with Go's
//!   scoping; `if`/`else if`/`with`/`else with`/`range` (with `$i, $e :=`)/`break`/
//!   `continue`/`define`/`template`/`block`; `{{-`/`-}}` trimming; comments;
//! * execution with Go's error texts (`template: NAME:LINE:COL: executing "NAME" at <NODE>: …`):
//!   fields of maps and of host [`Object`]s, chained fields, methods, function calls with
//!   Go's argument checks (`wrong type for value; expected string; got int`), `missingkey`
//!   (`default`, `zero`, `error`), `nil pointer evaluating interface {}.X`;
//! * Go's value printing (`%v`): `map[a:1 b:2]` with sorted keys, `[1 2 3]`, floats as Go
//!   prints them (`1e+06`, `3.5`, `-0`), `<nil>`, `<no value>`;
//! * the builtins: `and`/`or` (short-circuit, returning the deciding value), `not`, `len`,
//!   `index`, `slice`, `print`/`printf`/`println` (Go's `fmt` verbs, flags, width, precision
//!   and in-band errors such as `%!d(string=x)` and `%!(EXTRA …)`), `html`, `js`,
//!   `urlquery`, `call`, `eq` (several arguments), `ne`, `lt`, `le`, `gt`, `ge` with Go's
//!   comparison rules (an `int` never equals a `float64`: `incompatible types for comparison`).
//!
//! Values ([`Value`]) are JSON-like but keep Go's number kinds: `int`, `int64`, `float64`
//! (Helm's values are all `float64`, so `1000000` prints `1e+06`). Functions are Rust
//! closures with a Go signature ([`Function`]); host values with fields and methods (Helm's
//! `.Capabilities.APIVersions.Has`, `.Files.Get`) implement [`Object`].
//!
//! Execution is bounded: `template` recursion stops at Go's depth limit (100000, see
//! [`Templates::set_max_depth`]), `range` only visits finite values, deep nesting continues
//! on fresh large stacks instead of overflowing, and output can be capped
//! ([`Templates::set_max_output`]).
//!
//! Sprig's function library is [`sprig::functions`] (all of Sprig 3.3.0, as Helm v4 builds
//! it; see the module for how KUDO's Sprig 3.2.3 differs). Maps are shared and mutable like Go's
//! ([`Dict`]), so Sprig's `set` and `merge` change the map every holder sees.
//!
//! Helm's data-format functions (`toYaml`, `fromYaml`, `toJson`, …) are
//! [`formats::functions`], over [`yaml`]: YAML written and read byte for byte as Helm
//! (`sigs.k8s.io/yaml` over go-yaml v2) does. KUDO's rendering mode (`missingkey=error`,
//! its function map and variables) is [`kudo::Renderer`].
//!
//! Helm's layer (`include`, `tpl`, `required`, `fail`, `lookup`, its objects, chart loading
//! and rendering) is the crate `opkit-chart`, built on this one. Complex number constants
//! (`1i`), which template data never holds, are rejected at parse time.

#![warn(missing_docs)]
mod error;
mod exec;
pub mod formats;
mod funcs;
mod gofmt;
pub mod kudo;
mod lex;
pub mod parallel;
mod parse;
pub mod sprig;
mod stack;
mod template;
mod toml;
mod value;
pub mod yaml;

pub use error::Error;
pub use template::{MAX_EXEC_DEPTH, MissingKey, Templates};
pub use value::{CallContext, Dict, FuncError, Function, Member, Object, ParamType, Value};

/// The README's example, compiled and run as a doctest.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

/// Go's `fmt.Sprintf` over template values (for function libraries built on this crate).
pub fn sprintf(format: &str, args: &[Value]) -> String {
    gofmt::sprintf(format, args)
}

/// Go's `path.Clean` for `/`-separated paths (Sprig's `clean`; chart loading and Helm's
/// output paths use the same rule).
pub fn clean_path(path: &str) -> String {
    sprig::clean_path(path)
}

/// Go's `fmt.Sprint` over template values.
pub fn sprint(args: &[Value]) -> String {
    gofmt::sprint(args)
}
