//! Hostile-input targets for opkit: the parsers, mergers and the request path of the embedded
//! control plane, driven with inputs a malicious or buggy client could send.
//!
//! # Why
//!
//! The control plane takes selectors, names, patches, apply configurations, CRD schemas, CEL
//! rules and whole HTTP requests from clients. On any of them it must never panic (a panic in
//! a request handler is an outage for every client), never loop or recurse without bound, and
//! never accept garbage silently. Example-based tests check the behaviour we thought of; these
//! targets check properties over inputs nobody thought of.
//!
//! The chart and KUDO engines render templates and values that package authors and users
//! write, inside the controller: any template with any values must give output or an error,
//! in bounded time and space.
//!
//! # How
//!
//! Every target is a function of raw bytes (`fn(&[u8])`), so the same code runs under two
//! drivers:
//!
//! * `cargo-fuzz` (libFuzzer, nightly) in the repository's `fuzz/` directory, one fuzz target
//!   per function below, for long coverage-guided runs;
//! * `proptest` in this crate's tests, on stable, in CI, with bounded case counts and with
//!   structured generators (JSON values, selector-like token strings, patches of real
//!   objects) that call the structured entry points (`*_str`, `*_values`).
//!
//! [`input::Input`] turns bytes into structured choices. A target panics when a property is
//! violated; the panic message names the input and the property. That panic is the finding.
//!
//! | target | code under test | properties |
//! |---|---|---|
//! | [`label_selector`] | `LabelSelector::parse` | canonical form re-parses equal; keys/values valid; matching total |
//! | [`field_selector`] | `FieldSelector::parse`, escaping | canonical form re-parses equal; escape round-trips |
//! | [`names_and_labels`] | `validation` | the grammars' inclusions and length bounds; validators agree |
//! | [`jsonpath`] | `JsonPath` | parse and evaluate total |
//! | [`json_patch`] | `patch::apply_json_patch` | diff applies to its target; total |
//! | [`merge_patch`] | `patch::apply_merge_patch` | RFC 7386 rules; idempotent |
//! | [`strategic_merge`] | `opkit_strategic::strategic_merge` | empty patch is identity; idempotent; errors 4xx/5xx |
//! | [`apply`] | `opkit_apply::{apply, update}` | managedFields consistent; re-apply is a no-op |
//! | [`schema`] | `opkit_schema::Schema` | compile total; prune and defaults idempotent |
//! | [`cel`] | `opkit_cel::Validator` | compile and evaluate total, bounded, deterministic |
//! | [`request`] | `ApiServer::serve` | Status bodies; no 500; no hang; still serving |
//! | [`template`] | `opkit_template::Templates` + Sprig + formats | output or Go error; bounded; deterministic |
//! | [`yaml`] | `opkit_template::yaml` | read or refuse; written data reads back the same |
//! | [`json_toml`] | `fromJson`, `fromJsonArray`, `fromToml`, `toToml` | total; re-encoding is a fixed point |
//! | [`kudo`] | `opkit_template::kudo` | parameters round-trip; render or KUDO error; bounded |

#![warn(missing_docs)]

pub mod fixtures;
pub mod input;

mod apply;
mod cel;
mod formats;
mod kudo;
mod patch;
mod request;
mod schema;
mod template;
mod text;

pub use apply::{ApplyKind, apply_values, strip_nulls};
pub use cel::{RULE_TOKENS, cel_values};
pub use formats::{DOC_TOKENS, YAML_TOKENS, json_toml_str, yaml_str};
pub use kudo::{KUDO_SEED, KUDO_TOKENS, kudo_values};
pub use patch::{
    MetaChoice, json_patch_diff, json_patch_ops, merge_patch_values, pointers,
    strategic_merge_values,
};
pub use request::{
    Answer, FuzzRequest, HarnessError, REQUEST_TIMEOUT, fuzz_request, request_values, send,
    still_serving,
};
pub use schema::schema_values;
pub use template::{
    MAX_DEPTH, MAX_OUTPUT, MAX_STEPS, MAX_TIME, SEED_TEMPLATES, TEMPLATE_TOKENS, bounded_templates,
    calls_random, chart_values, edit, execute_checked, helm_data, template_values,
};
pub use text::{field_selector_str, jsonpath_str, label_selector_str, names_and_labels_str};

/// Label selectors (`a=b,c!=d,e in (x,y),!f`) from raw bytes.
pub fn label_selector(data: &[u8]) {
    text::label_selector(data);
}

/// Field selectors (`metadata.name=x,status.phase!=Running`) from raw bytes.
pub fn field_selector(data: &[u8]) {
    text::field_selector(data);
}

/// Name, label key/value, finalizer and annotation validation from raw bytes.
pub fn names_and_labels(data: &[u8]) {
    text::names_and_labels(data);
}

/// client-go JSONPath templates (printer columns) from raw bytes.
pub fn jsonpath(data: &[u8]) {
    text::jsonpath(data);
}

/// JSON patch (RFC 6902) as the server applies it, from raw bytes.
pub fn json_patch(data: &[u8]) {
    patch::json_patch(data);
}

/// JSON merge patch (RFC 7386) as the server applies it, from raw bytes.
pub fn merge_patch(data: &[u8]) {
    patch::merge_patch(data);
}

/// Strategic merge patch with Deployment, Pod and CRD-schema metadata, from raw bytes.
pub fn strategic_merge(data: &[u8]) {
    patch::strategic_merge_target(data);
}

/// Server-side apply by two managers and an update, from raw bytes.
pub fn apply(data: &[u8]) {
    apply::apply_target(data);
}

/// Random structural schemas compiled and used to validate, prune and default, from raw bytes.
pub fn schema(data: &[u8]) {
    schema::schema_target(data);
}

/// CEL validation rules compiled and evaluated, from raw bytes.
pub fn cel(data: &[u8]) {
    cel::cel(data);
}

/// Whole HTTP requests through the in-process control plane, from raw bytes.
pub fn request(data: &[u8]) {
    request::request_target(data);
}

/// Go templates with Sprig and Helm's format functions on JSON-like values, from raw bytes.
pub fn template(data: &[u8]) {
    template::template(data);
}

/// YAML read and written as Helm does (`sigs.k8s.io/yaml`), from raw bytes.
pub fn yaml(data: &[u8]) {
    formats::yaml(data);
}

/// JSON and TOML through Helm's `fromJson`, `fromJsonArray`, `fromToml` and `toToml`, from
/// raw bytes.
pub fn json_toml(data: &[u8]) {
    formats::json_toml(data);
}

/// KUDO templates with stored parameters, from raw bytes.
pub fn kudo(data: &[u8]) {
    kudo::kudo(data);
}
