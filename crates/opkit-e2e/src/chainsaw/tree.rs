//! Assertion trees, with kyverno-json's semantics (what chainsaw's `assert`, `error`, `check`
//! and `match` use): maps match partially, arrays element by element in order with the same
//! length, a key `(expr)` is a JMESPath expression over the current node whose result is
//! compared with the value, a `~` prefix (`~.(containers)`, `~i.containers`) iterates over an
//! array result (binding the index to `$i` when named), and a value `(expr)` is an expression
//! over the actual value. Scalars compare with type-aware equality: numbers by value (`1` is
//! `1.0`), a string never equals a number.
//!
//! Every mismatch is collected with its path (`spec.containers[0].image`), in kyverno-json's
//! message shapes.

use serde_json::Value;

use crate::chainsaw::expr::{self, Bindings};

/// A mismatch at a path.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Mismatch {
    pub path: String,
    pub message: String,
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

/// The mismatches of `actual` against the tree; an expression that does not compile or
/// evaluate is an error.
pub(crate) fn check(tree: &Value, actual: &Value, b: &Bindings) -> Result<Vec<Mismatch>, String> {
    let mut out = Vec::new();
    node(tree, actual, "", b, &mut out)?;
    Ok(out)
}

fn child(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn show(v: &Value) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

fn invalid(path: &str, actual: &Value, why: String) -> Mismatch {
    Mismatch {
        path: path.to_string(),
        message: format!("Invalid value: {}: {why}", show(actual)),
    }
}

/// Type-aware equality: numbers by value, containers deeply, everything else exactly.
pub(crate) fn equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(x), Some(y)) => x == y,
            _ => x.as_f64() == y.as_f64(),
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| equal(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| equal(v, w)))
        }
        _ => a == b,
    }
}

/// `~name.rest` → (Some(name), rest); else (None, key).
fn foreach(key: &str) -> (Option<&str>, &str) {
    match key.strip_prefix('~') {
        Some(rest) => match rest.split_once('.') {
            Some((name, rest)) => (Some(name), rest),
            None => (Some(""), rest),
        },
        None => (None, key),
    }
}

fn node(
    tree: &Value,
    actual: &Value,
    path: &str,
    b: &Bindings,
    out: &mut Vec<Mismatch>,
) -> Result<(), String> {
    match tree {
        Value::Object(map) => {
            for (key, sub) in map {
                let (each, field) = foreach(key);
                let path = child(path, field);
                let projected = match expr::expression(field) {
                    Some(e) => expr::eval(e, actual, b)?,
                    None => match actual {
                        Value::Object(a) => match a.get(field) {
                            Some(v) => v.clone(),
                            None => {
                                out.push(Mismatch {
                                    path,
                                    message: "Required value: field not found in the input object"
                                        .into(),
                                });
                                continue;
                            }
                        },
                        other => {
                            out.push(invalid(&path, other, "Expected a map".into()));
                            continue;
                        }
                    },
                };
                match each {
                    None => node(sub, &projected, &path, b, out)?,
                    Some(name) => match &projected {
                        Value::Array(items) => {
                            for (i, item) in items.iter().enumerate() {
                                let scope = if name.is_empty() {
                                    b.clone()
                                } else {
                                    b.with(name, Value::from(i))
                                };
                                node(sub, item, &format!("{path}[{i}]"), &scope, out)?;
                            }
                        }
                        other => out.push(invalid(
                            &path,
                            other,
                            "Expected a slice to iterate over".into(),
                        )),
                    },
                }
            }
            Ok(())
        }
        Value::Array(items) => {
            let Value::Array(actual_items) = actual else {
                out.push(invalid(path, actual, "Expected a slice".into()));
                return Ok(());
            };
            if items.len() != actual_items.len() {
                out.push(invalid(
                    path,
                    actual,
                    format!(
                        "lengths of slices don't match (expected {}, got {})",
                        items.len(),
                        actual_items.len()
                    ),
                ));
                return Ok(());
            }
            for (i, (e, a)) in items.iter().zip(actual_items).enumerate() {
                node(e, a, &format!("{path}[{i}]"), b, out)?;
            }
            Ok(())
        }
        scalar => {
            let expected = match scalar.as_str().and_then(expr::expression) {
                Some(e) => expr::eval(e, actual, b)?,
                None => scalar.clone(),
            };
            if !equal(&expected, actual) {
                out.push(invalid(
                    path,
                    actual,
                    format!("Expected value: {}", show(&expected)),
                ));
            }
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn errs(tree: Value, actual: Value) -> Vec<String> {
        check(&tree, &actual, &Bindings::default().with("ns", json!("x")))
            .unwrap()
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn maps_match_partially_and_a_missing_field_is_required() {
        assert!(
            errs(
                json!({"a": {"b": 1}}),
                json!({"a": {"b": 1, "c": 2}, "d": 3})
            )
            .is_empty()
        );
        assert_eq!(
            errs(json!({"a": {"z": 1}}), json!({"a": {}})),
            ["a.z: Required value: field not found in the input object"]
        );
    }

    #[test]
    fn arrays_match_in_order_with_the_same_length() {
        assert!(errs(json!({"l": [{"n": 1}]}), json!({"l": [{"n": 1, "m": 2}]})).is_empty());
        assert_eq!(
            errs(json!({"l": [1]}), json!({"l": [1, 2]})),
            ["l: Invalid value: [1,2]: lengths of slices don't match (expected 1, got 2)"]
        );
        assert_eq!(
            errs(
                json!({"l": [{"n": "a"}, {"n": "b"}]}),
                json!({"l": [{"n": "b"}, {"n": "a"}]})
            ),
            [
                "l[0].n: Invalid value: \"b\": Expected value: \"a\"",
                "l[1].n: Invalid value: \"a\": Expected value: \"b\""
            ]
        );
    }

    #[test]
    fn expression_keys_project_the_current_node() {
        let dep = json!({"spec": {"replicas": 3, "conditions": [{"type": "Ready", "status": "True"}, {"type": "X", "status": "False"}]}});
        assert!(
            errs(
                json!({"spec": {"(replicas > `1` && replicas < `4`)": true}}),
                dep.clone()
            )
            .is_empty()
        );
        assert!(
            errs(
                json!({"spec": {"(conditions[?type == 'Ready'])": [{"status": "True"}]}}),
                dep.clone()
            )
            .is_empty()
        );
        assert_eq!(
            errs(json!({"spec": {"(replicas > `3`)": true}}), dep.clone()),
            ["spec.(replicas > `3`): Invalid value: false: Expected value: true"]
        );
    }

    #[test]
    fn a_tilde_iterates_over_the_array_and_may_bind_the_index() {
        let pod = json!({"spec": {"containers": [{"name": "a", "image": "x:1"}, {"name": "b", "image": "x:latest"}]}});
        assert_eq!(
            errs(
                json!({"spec": {"~.(containers)": {"(ends_with(image, ':latest'))": false}}}),
                pod.clone()
            ),
            [
                "spec.(containers)[1].(ends_with(image, ':latest')): Invalid value: true: Expected value: false"
            ]
        );
        assert!(
            errs(
                json!({"spec": {"~.containers": {"image": "(starts_with(@, 'x:'))"}}}),
                pod.clone()
            )
            .len()
                == 2
        );
        assert!(errs(json!({"spec": {"~i.containers": {"(to_string($i))": "($i == `0` && '0' || '1')"}}}), pod.clone()).is_empty());
        assert_eq!(
            errs(
                json!({"spec": {"~.(name)": {}}}),
                json!({"spec": {"name": "n"}})
            ),
            ["spec.(name): Invalid value: \"n\": Expected a slice to iterate over"]
        );
    }

    #[test]
    fn values_may_be_expressions_and_scalars_compare_by_type() {
        assert!(errs(json!({"n": "(to_number('3'))"}), json!({"n": 3})).is_empty());
        assert!(errs(json!({"n": 3}), json!({"n": 3.0})).is_empty());
        assert!(errs(json!({"m": "($ns)"}), json!({"m": "x"})).is_empty());
        assert_eq!(
            errs(json!({"n": "3"}), json!({"n": 3})),
            ["n: Invalid value: 3: Expected value: \"3\""]
        );
        assert_eq!(
            errs(json!({"b": true}), json!({"b": "true"})),
            ["b: Invalid value: \"true\": Expected value: true"]
        );
    }

    #[test]
    fn a_broken_expression_is_an_error_not_a_mismatch() {
        let e = check(&json!({"(a ==)": 1}), &json!({}), &Bindings::default()).unwrap_err();
        assert!(e.starts_with("invalid expression (a ==)"), "{e}");
    }
}
