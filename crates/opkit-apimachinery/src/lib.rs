//! I/O-free Kubernetes API machinery for opkit.
//!
//! The opkit API server must behave like kube-apiserver wherever clients can
//! tell the difference: which objects a selector returns, which names are
//! accepted and with what message they are refused, and what `kubectl get`
//! prints. Those rules live in upstream's `k8s.io/apimachinery`,
//! `k8s.io/client-go/util/jsonpath`, and the kube-apiserver printers; this
//! crate reimplements them in Rust without any I/O, so the server, the
//! operator runtime, and tests can share one faithful copy:
//!
//! * [`labels`]: label selectors (`app=web,tier in (fe,be),!legacy`) and
//!   `metav1.LabelSelector`, with allocation-free matching;
//! * [`fields`]: field selectors, per-resource supported fields, and how a
//!   field's value is read from an object;
//! * [`validation`]: DNS-1123/1035 names, label keys and values, annotation
//!   size, `generateName`, object metadata, upstream field errors;
//! * [`table`](mod@table): server-side `meta.k8s.io/v1` `Table` printing for built-in
//!   kinds and custom resources (`additionalPrinterColumns`);
//! * [`jsonpath`]: client-go's JSONPath dialect used by printer columns;
//! * [`time`]: RFC 3339 `Time`/`MicroTime` and kubectl's human ages;
//! * [`quantity`]: resource quantities as exact nano units, for sums and comparisons;
//! * [`duration`]: Go's `time.Duration` (`1h30m0s`), parsed and printed as
//!   `time.ParseDuration` and `Duration.String()` do.
//!
//! Every function is total on user input: malformed selectors, names, paths
//! and objects produce errors (with upstream's messages) or fallbacks, never
//! panics. Behaviour follows Kubernetes v1.35.

#![warn(missing_docs)]

mod gofmt;

pub mod duration;
pub mod fields;
mod goos;
pub mod jsonpath;
pub mod labels;
pub mod quantity;
pub mod table;
pub mod time;
pub mod validation;

pub use duration::{Duration, DurationError, DurationRangeError};
pub use fields::{
    FieldOp, FieldRequirement, FieldSelector, FieldSelectorError, field_value, supported_fields,
};
pub use gofmt::{go_quote, go_sprint, go_type_name, json_encode as go_json};
pub use goos::go_expand;
pub use jsonpath::{JsonPath, JsonPathError};
pub use labels::{LabelSelector, Operator, Requirement, SelectorError};
pub use quantity::Quantity;
pub use table::{
    Column, ColumnDef, CrdPrinter, IncludeObject, TableRow, builtin_columns, builtin_row,
    crd_columns, crd_row, table,
};
pub use validation::{
    ErrorList, FieldError, generate_name, is_dns1123_label, is_dns1123_subdomain,
};

#[cfg(test)]
mod robustness {
    use serde_json::json;

    /// Every string of up to three characters from an alphabet of the
    /// grammars' special characters: no parser or evaluator may panic.
    #[test]
    fn parsers_never_panic_on_short_hostile_inputs() {
        let alphabet = [
            "a", "1", "-", ".", "/", "=", "!", "(", ")", ",", "<", ">", " ", "\\", "[", "]", "?",
            "@", "'", "\"", "{", "}", "*", ":", "\0", "é", "in",
        ];
        let data = json!({"a": [1, {"a": "x"}], "in": {"1": true}});
        let mut inputs = vec![String::new()];
        for a in alphabet {
            inputs.push(a.to_owned());
            for b in alphabet {
                inputs.push(format!("{a}{b}"));
                for c in alphabet {
                    inputs.push(format!("{a}{b}{c}"));
                }
            }
        }
        for s in &inputs {
            if let Ok(sel) = crate::LabelSelector::parse(s) {
                let _ = sel.matches(&serde_json::Map::new());
                let _ = sel.to_string();
            }
            if let Ok(sel) = crate::FieldSelector::parse(s) {
                let _ = sel.matches_object(&data);
                let _ = sel.for_resource("", "pods");
            }
            for template in [s.clone(), format!("{{{s}}}"), format!("{{.a{s}}}")] {
                if let Ok(path) = crate::JsonPath::parse(&template) {
                    let _ = path.execute(&data);
                    let _ = path.allow_missing_keys(true).first(&data);
                }
            }
            let _ = crate::validation::is_qualified_name(s);
            let _ = crate::validation::NameRule::Dns1123Subdomain.validate(s, true);
            let _ = crate::time::parse_time(s);
            let _ = crate::Duration::parse(s);
        }
    }
}
