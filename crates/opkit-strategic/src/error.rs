//! Errors of a strategic merge, worded as upstream's (`k8s.io/apimachinery/pkg/util/mergepatch`
//! and `strategicpatch`), because kubectl prints the server's message verbatim and users search
//! for it. Values inside messages are rendered as Go's `%v` renders them (`map[name:a]`).

use std::fmt::Write as _;

use serde_json::Value;

/// Why a strategic merge patch could not be applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StrategicError {
    /// The original or the patch is not a JSON object.
    #[error("invalid JSON document")]
    InvalidDocument,
    /// A `$patch` directive with a value other than `replace`, `delete` or `merge`.
    #[error("unknown patch type: {directive} in map: {map}")]
    UnknownPatchType {
        /// The directive's value, Go-formatted.
        directive: String,
        /// The map holding it, Go-formatted.
        map: String,
    },
    /// An item of a list merged by key lacks the key.
    #[error("map: {map} does not contain declared merge key: {key}")]
    MissingMergeKey {
        /// The item, Go-formatted.
        map: String,
        /// The merge key (keys joined with `,`).
        key: String,
    },
    /// A list of maps has the `merge` strategy but no merge key.
    #[error("cannot merge lists without merge key for {type_name}")]
    NoMergeKey {
        /// The type of the list's items.
        type_name: String,
    },
    /// A malformed `$deleteFromPrimitiveList/<field>` directive.
    #[error("invalid patch format of primitive list")]
    BadPrimitiveList,
    /// A malformed `$retainKeys` directive, or a patch setting a key its `$retainKeys` lacks.
    #[error("invalid patch format of retainKeys")]
    BadRetainKeys,
    /// A malformed `$setElementOrder/<field>` directive.
    #[error("invalid patch format of setElementOrder list")]
    BadSetElementOrder,
    /// The items of a patch list are not in the order of its `$setElementOrder` list.
    #[error("The order in patch list:\n{patch}\n doesn't match $setElementOrder list:\n{order}\n")]
    SetElementOrderMismatch {
        /// The patch list, Go-formatted.
        patch: String,
        /// The `$setElementOrder` list, Go-formatted.
        order: String,
    },
    /// A list with the `merge` strategy holds lists.
    #[error("lists of lists are not supported")]
    ListOfLists,
    /// A list with the `merge` strategy mixes maps and scalars.
    #[error("list element types are not identical: {lists}")]
    MixedListElements {
        /// The lists involved, Go-formatted.
        lists: String,
    },
    /// A value has the wrong JSON type for a directive (Go type names, as upstream).
    #[error("expected a {expected}, but received a {actual}")]
    TypeMismatch {
        /// The expected Go type.
        expected: &'static str,
        /// The Go type received.
        actual: &'static str,
    },
    /// The original or the patch nests deeper than [`crate::MAX_DEPTH`] levels.
    #[error("the document is nested more than {max} levels deep")]
    TooDeep {
        /// The limit.
        max: usize,
    },
    /// A [`crate::PatchMeta`] could not answer (e.g. an unresolvable `$ref` in a schema).
    #[error("{0}")]
    Meta(String),
}

impl StrategicError {
    /// The HTTP status kube-apiserver answers a PATCH with when applying the patch fails this
    /// way: 400 for malformed directives, 422 for lists of lists, and for the rest 500 (upstream
    /// passes them on as plain errors, which become a `Status` with code 500 and the message
    /// as is, e.g. `Error from server: map: map[image:x] does not contain declared merge key:
    /// name` in kubectl).
    pub fn http_status(&self) -> u16 {
        match self {
            StrategicError::InvalidDocument
            | StrategicError::BadPrimitiveList
            | StrategicError::BadRetainKeys
            | StrategicError::BadSetElementOrder
            | StrategicError::TooDeep { .. } => 400,
            StrategicError::ListOfLists => 422,
            _ => 500,
        }
    }

    pub(crate) fn unknown_patch_type(
        directive: &Value,
        map: &serde_json::Map<String, Value>,
    ) -> Self {
        StrategicError::UnknownPatchType {
            directive: go_v(directive),
            map: go_map(map),
        }
    }

    pub(crate) fn missing_merge_key(item: &Value, keys: &[String]) -> Self {
        StrategicError::MissingMergeKey {
            map: go_v(item),
            key: keys.join(","),
        }
    }

    pub(crate) fn type_mismatch(expected: &'static str, actual: &Value) -> Self {
        StrategicError::TypeMismatch {
            expected,
            actual: go_type(actual),
        }
    }
}

/// Go's name for the type `encoding/json` decodes `v` into (numbers as the API server decodes
/// them: integers as `int64`).
pub(crate) fn go_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float64",
        Value::Number(_) => "int64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

/// `v` as Go's `fmt` prints it with `%v`: `map[a:1 b:[x y]]`, maps with sorted keys.
pub(crate) fn go_v(v: &Value) -> String {
    let mut out = String::new();
    write_go(&mut out, v, 0);
    out
}

pub(crate) fn go_map(m: &serde_json::Map<String, Value>) -> String {
    let mut out = String::new();
    write_go_map(&mut out, m, 0);
    out
}

/// Messages stay readable (and bounded) for absurdly nested input.
const GO_V_DEPTH: usize = 32;

fn write_go(out: &mut String, v: &Value, depth: usize) {
    if depth > GO_V_DEPTH {
        out.push_str("...");
        return;
    }
    match v {
        Value::Null => out.push_str("<nil>"),
        Value::Bool(b) => {
            let _ = write!(out, "{b}");
        }
        Value::Number(n) => write_go_number(out, n),
        Value::String(s) => out.push_str(s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                write_go(out, item, depth + 1);
            }
            out.push(']');
        }
        Value::Object(m) => write_go_map(out, m, depth),
    }
}

fn write_go_map(out: &mut String, m: &serde_json::Map<String, Value>, depth: usize) {
    let mut keys: Vec<&String> = m.keys().collect();
    keys.sort();
    out.push_str("map[");
    for (i, k) in keys.into_iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(k);
        out.push(':');
        write_go(out, &m[k.as_str()], depth + 1);
    }
    out.push(']');
}

/// Integers as themselves; other numbers as Go's `%v` of a float64 (shortest representation,
/// exponent form below 1e-4 and from 1e21 on, e.g. `1e+21`).
fn write_go_number(out: &mut String, n: &serde_json::Number) {
    if n.is_i64() || n.is_u64() {
        let _ = write!(out, "{n}");
        return;
    }
    let f = n.as_f64().unwrap_or(0.0);
    let a = f.abs();
    if f == 0.0 || (1e-4..1e21).contains(&a) {
        let _ = write!(out, "{f}");
        return;
    }
    // Rust's `{:e}` is `1e21` / `1.5e-7`; Go writes `1e+21` / `1.5e-07`.
    let s = format!("{f:e}");
    match s.split_once('e') {
        Some((mant, exp)) => {
            let (sign, digits) = match exp.strip_prefix('-') {
                Some(d) => ('-', d),
                None => ('+', exp),
            };
            let _ = write!(out, "{mant}e{sign}{digits:0>2}");
        }
        None => out.push_str(&s),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_render_like_go_percent_v() {
        assert_eq!(
            go_v(&json!({"b": [1, "x"], "a": null, "$patch": "foo"})),
            "map[$patch:foo a:<nil> b:[1 x]]"
        );
        assert_eq!(go_v(&json!(1.5)), "1.5");
        assert_eq!(go_v(&json!(1e21)), "1e+21");
        assert_eq!(go_v(&json!(0.00001)), "1e-05");
        assert_eq!(go_v(&json!(true)), "true");
    }

    #[test]
    fn messages_match_upstream() {
        let e =
            StrategicError::missing_merge_key(&json!({"image": "nginx:1.25"}), &["name".into()]);
        assert_eq!(
            e.to_string(),
            "map: map[image:nginx:1.25] does not contain declared merge key: name"
        );
        assert_eq!(e.http_status(), 500);
        let m = json!({"$patch": "foo", "name": "a"});
        let e = StrategicError::unknown_patch_type(&m["$patch"], m.as_object().unwrap());
        assert_eq!(
            e.to_string(),
            "unknown patch type: foo in map: map[$patch:foo name:a]"
        );
        assert_eq!(StrategicError::BadRetainKeys.http_status(), 400);
        assert_eq!(
            StrategicError::type_mismatch("[]interface {}", &json!({})).to_string(),
            "expected a []interface {}, but received a map[string]interface {}"
        );
    }
}
