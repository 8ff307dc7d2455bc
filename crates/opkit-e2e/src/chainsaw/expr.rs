//! chainsaw's expressions: a string in parentheses, `(expr)`, is a JMESPath expression over the
//! current node (`@`), with bindings (`$namespace`, `$test`, user bindings) as variables.
//!
//! The `jmespath` crate implements the JMESPath specification without variables, so a binding
//! is spliced into the expression as a JSON literal (`` `"value"` ``) before it is compiled —
//! outside string literals, quoted identifiers and literals, where `$` means itself. An unknown
//! variable is an error, as in chainsaw. Bindings are immutable scopes: [`Bindings::with`]
//! gives a new scope in which the name hides an outer one.

use std::sync::Arc;

use serde_json::Value;

/// Variables visible to expressions; later entries hide earlier ones of the same name.
#[derive(Debug, Clone, Default)]
pub(crate) struct Bindings(Arc<Vec<(String, Value)>>);

impl Bindings {
    /// A scope with `name` bound to `value` on top of this one.
    pub(crate) fn with(&self, name: &str, value: Value) -> Bindings {
        let mut v = (*self.0).clone();
        v.push((name.to_string(), value));
        Bindings(Arc::new(v))
    }

    /// The innermost value bound to `name`.
    pub(crate) fn get(&self, name: &str) -> Option<&Value> {
        self.0.iter().rev().find(|(n, _)| n == name).map(|(_, v)| v)
    }

    /// A scope with user bindings added in order: each value may be an expression (evaluated
    /// over [`no_node`]) and sees the bindings before it.
    pub(crate) fn with_all(
        &self,
        list: &[crate::chainsaw::model::Binding],
    ) -> Result<Bindings, String> {
        let mut out = self.clone();
        for b in list {
            let name = b.name.trim_start_matches('$');
            if name.is_empty() || !name.chars().all(|c| c == '_' || c.is_ascii_alphanumeric()) {
                return Err(format!("invalid binding name {:?}", b.name));
            }
            let value = template(&b.value, &out).map_err(|e| format!("binding {name}: {e}"))?;
            out = out.with(name, value);
        }
        Ok(out)
    }
}

/// The node expressions without one are evaluated over: an empty object, since JMESPath
/// gives `null` for a multi-select (`[$a, 'b']`) over `null`.
pub(crate) fn no_node() -> Value {
    Value::Object(Default::default())
}

/// The expression inside `(…)`, if `s` is one.
pub(crate) fn expression(s: &str) -> Option<&str> {
    let t = s.trim();
    if t.len() >= 2 && t.starts_with('(') && t.ends_with(')') {
        Some(&t[1..t.len() - 1])
    } else {
        None
    }
}

/// `expr` with every `$name` replaced by its binding as a JMESPath JSON literal.
fn splice(expr: &str, bindings: &Bindings) -> Result<String, String> {
    let chars: Vec<char> = expr.chars().collect();
    let mut out = String::with_capacity(expr.len());
    let mut quote: Option<char> = None;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if let Some(q) = quote {
            out.push(c);
            if c == '\\' && i + 1 < chars.len() {
                out.push(chars[i + 1]);
                i += 2;
                continue;
            }
            if c == q {
                quote = None;
            }
            i += 1;
            continue;
        }
        match c {
            '\'' | '"' | '`' => {
                quote = Some(c);
                out.push(c);
                i += 1;
            }
            '$' => {
                let start = i + 1;
                let mut end = start;
                while end < chars.len() && (chars[end] == '_' || chars[end].is_ascii_alphanumeric())
                {
                    end += 1;
                }
                if end == start {
                    out.push('$');
                    i += 1;
                    continue;
                }
                let name: String = chars[start..end].iter().collect();
                let value = bindings
                    .get(&name)
                    .ok_or_else(|| format!("variable not defined: ${name}"))?;
                let json = serde_json::to_string(value).map_err(|e| e.to_string())?;
                out.push('`');
                out.push_str(&json.replace('`', "\\`"));
                out.push('`');
                i = end;
            }
            _ => {
                out.push(c);
                i += 1;
            }
        }
    }
    Ok(out)
}

/// Evaluates the JMESPath `expr` over `node`.
pub(crate) fn eval(expr: &str, node: &Value, bindings: &Bindings) -> Result<Value, String> {
    let spliced = splice(expr, bindings)?;
    let compiled =
        jmespath::compile(&spliced).map_err(|e| format!("invalid expression ({expr}): {e}"))?;
    let result = compiled
        .search(node)
        .map_err(|e| format!("cannot evaluate ({expr}): {e}"))?;
    // Integral numbers are integers, as in the objects they are compared with.
    serde_json::to_value(&*result)
        .map(crate::yaml::normalize)
        .map_err(|e| e.to_string())
}

/// chainsaw's templating: every string value (not key) that is an expression is replaced by
/// its result; the rest is kept.
pub(crate) fn template(value: &Value, bindings: &Bindings) -> Result<Value, String> {
    Ok(match value {
        Value::String(s) => match expression(s) {
            Some(e) => eval(e, &no_node(), bindings)?,
            None => value.clone(),
        },
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|v| template(v, bindings))
                .collect::<Result<_, _>>()?,
        ),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| Ok((k.clone(), template(v, bindings)?)))
                .collect::<Result<_, String>>()?,
        ),
        other => other.clone(),
    })
}

/// A string field that may be an expression (a name, a namespace, a file): its text.
pub(crate) fn string(s: &str, bindings: &Bindings) -> Result<String, String> {
    match expression(s) {
        None => Ok(s.to_string()),
        Some(e) => match eval(e, &no_node(), bindings)? {
            Value::String(s) => Ok(s),
            Value::Null => Ok(String::new()),
            other => Ok(other.to_string()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn b() -> Bindings {
        Bindings::default()
            .with("namespace", json!("ns-1"))
            .with("values", json!({"n": 3, "tick": "a`b"}))
    }

    #[test]
    fn bindings_are_variables_and_strings_keep_their_dollars() {
        assert_eq!(eval("$namespace", &no_node(), &b()).unwrap(), json!("ns-1"));
        assert_eq!(eval("$values.n", &no_node(), &b()).unwrap(), json!(3));
        assert_eq!(
            eval("$values.tick", &no_node(), &b()).unwrap(),
            json!("a`b")
        );
        assert_eq!(
            eval("join('-', [$namespace, 'cm'])", &no_node(), &b()).unwrap(),
            json!("ns-1-cm")
        );
        assert_eq!(
            eval("'$namespace'", &no_node(), &b()).unwrap(),
            json!("$namespace")
        );
        assert_eq!(
            eval("$nope", &no_node(), &b()).unwrap_err(),
            "variable not defined: $nope"
        );
    }

    #[test]
    fn inner_bindings_hide_outer_ones_and_see_earlier_ones() {
        let list = vec![
            crate::chainsaw::model::Binding {
                name: "a".into(),
                value: json!("(join('-', [$namespace, 'x']))"),
            },
            crate::chainsaw::model::Binding {
                name: "namespace".into(),
                value: json!("(concat($a, '!'))"),
            },
        ];
        let scope = b().with_all(&list).unwrap_err();
        // concat is not a JMESPath function: the error names the binding.
        assert!(scope.starts_with("binding namespace:"), "{scope}");
        let list = vec![
            list[0].clone(),
            crate::chainsaw::model::Binding {
                name: "namespace".into(),
                value: json!("(join('', [$a, '!']))"),
            },
        ];
        let scope = b().with_all(&list).unwrap();
        assert_eq!(scope.get("namespace"), Some(&json!("ns-1-x!")));
        assert_eq!(b().get("namespace"), Some(&json!("ns-1")));
    }

    #[test]
    fn templating_replaces_expression_values_only() {
        let t = template(
            &json!({"metadata": {"name": "($namespace)", "(keep)": "plain"}, "n": "(to_number('3'))", "l": [1, "(`true`)"]}),
            &b(),
        )
        .unwrap();
        assert_eq!(
            t,
            json!({"metadata": {"name": "ns-1", "(keep)": "plain"}, "n": 3, "l": [1, true]})
        );
    }
}
