//! kuttl's matching of an expected object against an actual one (`IsSubset`): maps match
//! partially, lists must have the same length and match element by element in order, values of
//! different JSON types never match, and an expected `null` needs the key present with `null`.
//!
//! Two improvements over kuttl, which reports a random field and drops list indices: the path
//! names list indices (`.spec.containers[0].image`) and the reported mismatch is the first in
//! sorted key order, so the same objects always give the same message.

use std::fmt;

use opkit_apimachinery::go_type_name;
use serde_json::Value;

/// Where and how an expected value is not a subset of the actual one.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Mismatch {
    /// `.a.b[0].c` (empty at the root).
    pub path: String,
    /// kuttl's message for the mismatch.
    pub message: String,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

/// Go's `%v` of a scalar.
fn go_value(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "<nil>".to_string(),
        other => other.to_string(),
    }
}

/// Checks that `expected` is a subset of `actual`.
pub(crate) fn is_subset(expected: &Value, actual: &Value) -> Result<(), Mismatch> {
    let mut path = String::new();
    check(expected, actual, &mut path)
}

fn check(expected: &Value, actual: &Value, path: &mut String) -> Result<(), Mismatch> {
    let fail = |path: &str, message: String| {
        Err(Mismatch {
            path: path.to_string(),
            message,
        })
    };
    if go_type_name(expected) != go_type_name(actual) {
        return fail(
            path,
            format!(
                "type mismatch: {} != {}",
                go_type_name(expected),
                go_type_name(actual)
            ),
        );
    }
    if expected == actual {
        return Ok(());
    }
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => {
            // serde_json's map iterates in sorted key order: the first mismatch is deterministic.
            for (key, ev) in e {
                let len = path.len();
                path.push('.');
                path.push_str(key);
                let result = match a.get(key) {
                    None => fail(path, "key is missing from map".to_string()),
                    Some(av) => check(ev, av, path),
                };
                path.truncate(len);
                result?;
            }
            Ok(())
        }
        (Value::Array(e), Value::Array(a)) => {
            if e.len() != a.len() {
                return fail(
                    path,
                    format!("slice length mismatch: {} != {}", e.len(), a.len()),
                );
            }
            for (i, (ev, av)) in e.iter().zip(a).enumerate() {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                let result = check(ev, av, path);
                path.truncate(len);
                result?;
            }
            Ok(())
        }
        _ => fail(
            path,
            format!(
                "value mismatch, expected: {} != actual: {}",
                go_value(expected),
                go_value(actual)
            ),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn err(e: Value, a: Value) -> String {
        is_subset(&e, &a).unwrap_err().to_string()
    }

    #[test]
    fn maps_match_partially_and_extra_keys_are_ignored() {
        assert!(
            is_subset(
                &json!({"a": {"b": 1}}),
                &json!({"a": {"b": 1, "c": 2}, "d": 3})
            )
            .is_ok()
        );
        assert!(is_subset(&json!({"a": {}}), &json!({"a": {"x": 1}})).is_ok());
    }

    #[test]
    fn a_missing_key_names_its_path() {
        assert_eq!(
            err(json!({"a": {"b": 1}}), json!({"a": {}})),
            ".a.b: key is missing from map"
        );
    }

    #[test]
    fn lists_need_the_same_length_and_match_in_order_with_indices_in_the_path() {
        assert_eq!(
            err(json!({"l": [1]}), json!({"l": [1, 2]})),
            ".l: slice length mismatch: 1 != 2"
        );
        assert_eq!(
            err(
                json!({"l": [{"n": "a"}, {"n": "b"}]}),
                json!({"l": [{"n": "b"}, {"n": "a"}]})
            ),
            ".l[0].n: value mismatch, expected: a != actual: b"
        );
        assert!(
            is_subset(
                &json!({"l": [{"n": "a"}]}),
                &json!({"l": [{"n": "a", "x": 1}]})
            )
            .is_ok()
        );
    }

    #[test]
    fn different_types_never_match_even_for_numbers_and_quantities() {
        assert_eq!(
            err(json!({"v": 2.5}), json!({"v": 2})),
            ".v: type mismatch: float64 != int64"
        );
        assert_eq!(
            err(json!({"cpu": 1}), json!({"cpu": "1"})),
            ".cpu: type mismatch: int64 != string"
        );
    }

    #[test]
    fn null_needs_the_key_present_with_null() {
        assert!(is_subset(&json!({"a": null}), &json!({"a": null})).is_ok());
        assert_eq!(
            err(json!({"a": null}), json!({})),
            ".a: key is missing from map"
        );
        assert_eq!(
            err(json!({"a": null}), json!({"a": "x"})),
            ".a: type mismatch: <nil> != string"
        );
    }

    #[test]
    fn the_first_mismatch_in_sorted_key_order_is_reported() {
        for _ in 0..5 {
            assert_eq!(
                err(
                    json!({"z": 1, "b": 1, "m": 1}),
                    json!({"z": 2, "b": 2, "m": 2})
                ),
                ".b: value mismatch, expected: 1 != actual: 2"
            );
        }
    }
}
