//! Sprig's defaults family: `default`, `empty`, `fail`, `coalesce`, `all`, `any`, `ternary`,
//! `deepCopy`, and JSON (`toJson` and friends), encoded as Go's `encoding/json` encodes
//! `interface{}` values: sorted keys, `<`, `>`, `&` escaped (except in `toRawJson`), floats
//! in Go's shortest form.

use std::fmt::Write;

use super::{Funcs, empty, fail, s};
use crate::ParamType::{Any, Bool, String as Str};
use crate::{Function, Value};

pub(super) fn register(m: &mut Funcs) {
    m.add(
        "default",
        Function::variadic(&[Any], Any, |a| {
            Ok(match a.get(1) {
                Some(given) if !empty(given) => given.clone(),
                _ => a[0].clone(),
            })
        }),
    );
    m.add("fail", Function::new(&[Str], |a| fail(s(a, 0).to_string())));
    m.add(
        "empty",
        Function::new(&[Any], |a| Ok(Value::Bool(empty(&a[0])))),
    );
    m.add(
        "coalesce",
        Function::variadic(&[], Any, |a| {
            Ok(a.iter().find(|v| !empty(v)).cloned().unwrap_or_default())
        }),
    );
    m.add(
        "all",
        Function::variadic(&[], Any, |a| Ok(Value::Bool(a.iter().all(|v| !empty(v))))),
    );
    m.add(
        "any",
        Function::variadic(&[], Any, |a| Ok(Value::Bool(a.iter().any(|v| !empty(v))))),
    );
    m.add(
        "ternary",
        Function::new(&[Any, Any, Bool], |a| {
            Ok(if matches!(a[2], Value::Bool(true)) {
                a[0].clone()
            } else {
                a[1].clone()
            })
        }),
    );
    for name in ["deepCopy", "mustDeepCopy"] {
        m.add(name, Function::new(&[Any], |a| deep_copy(&a[0])));
    }
    m.add(
        "fromJson",
        Function::new(&[Str], |a| {
            Ok(super::gojson::decode(s(a, 0)).unwrap_or_default())
        }),
    );
    m.add(
        "mustFromJson",
        Function::new(&[Str], |a| super::gojson::decode(s(a, 0)).or_else(fail)),
    );
    let encoders: [(&str, &str, Encoder); 3] = [
        ("toJson", "mustToJson", |v| to_json(v, true, None)),
        ("toPrettyJson", "mustToPrettyJson", |v| {
            to_json(v, true, Some(""))
        }),
        ("toRawJson", "mustToRawJson", |v| to_json(v, false, None)),
    ];
    for (name, must, enc) in encoders {
        m.add(
            name,
            Function::new(&[Any], move |a| {
                Ok(Value::from(enc(&a[0]).unwrap_or_default()))
            }),
        );
        m.add(
            must,
            Function::new(&[Any], move |a| match enc(&a[0]) {
                Ok(text) => Ok(Value::from(text)),
                Err(e) => fail(e),
            }),
        );
    }
}

/// How deep the JSON encoder and `deepCopy` follow nested values. Only a map that holds
/// itself gets this deep in practice: Go's encoder reports such a cycle (it starts looking
/// at depth 1000, with the same error), Go's `copystructure` never ends.
const CYCLE_DEPTH: usize = 100;

/// A copy sharing no map with the original (maps are mutable, lists are not).
pub(crate) fn deep_copy(v: &Value) -> Result<Value, crate::FuncError> {
    deep_copy_at(v, 0)
}

fn deep_copy_at(v: &Value, depth: usize) -> Result<Value, crate::FuncError> {
    if depth > CYCLE_DEPTH {
        return fail("deepCopy error: the value contains itself");
    }
    Ok(match v {
        Value::Map(m) => Value::map(
            m.entries()
                .into_iter()
                .map(|(k, x)| Ok((k, deep_copy_at(&x, depth + 1)?)))
                .collect::<Result<_, crate::FuncError>>()?,
        ),
        Value::List(l) => Value::list(
            l.iter()
                .map(|x| deep_copy_at(x, depth + 1))
                .collect::<Result<_, _>>()?,
        ),
        other => other.clone(),
    })
}

/// A JSON encoder: the text, or Go's error text.
type Encoder = fn(&Value) -> Result<String, String>;

/// `json.Marshal` (`indent: None`) or `json.MarshalIndent(v, "", "  ")` of a value; the
/// error is Go's text for values JSON cannot hold.
pub(crate) fn to_json(
    v: &Value,
    escape_html: bool,
    indent: Option<&str>,
) -> Result<String, String> {
    let mut out = String::new();
    encode(&mut out, v, escape_html, indent)?;
    Ok(out)
}

fn newline(out: &mut String, indent: Option<&str>, depth: usize) {
    if let Some(prefix) = indent {
        out.push('\n');
        out.push_str(prefix);
        for _ in 0..depth {
            out.push_str("  ");
        }
    }
}

fn encode(out: &mut String, v: &Value, html: bool, indent: Option<&str>) -> Result<(), String> {
    encode_at(out, v, html, indent, 0)
}

fn encode_at(
    out: &mut String,
    v: &Value,
    html: bool,
    indent: Option<&str>,
    depth: usize,
) -> Result<(), String> {
    if depth > CYCLE_DEPTH {
        return Err(format!(
            "json: unsupported value: encountered a cycle via {}",
            v.type_name()
        ));
    }
    match &*v.plain() {
        Value::Nil => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(i) | Value::Int64(i) => {
            let _ = write!(out, "{i}");
        }
        Value::Float(f) => out.push_str(&json_float(*f)?),
        Value::String(s) => quote(out, s, html),
        Value::List(l) => {
            out.push('[');
            if !l.is_empty() {
                for (i, x) in l.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    newline(out, indent, depth + 1);
                    encode_at(out, x, html, indent, depth + 1)?;
                }
                newline(out, indent, depth);
            }
            out.push(']');
        }
        Value::Map(m) => {
            out.push('{');
            if !m.is_empty() {
                for (i, (k, x)) in m.entries().iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    newline(out, indent, depth + 1);
                    quote(out, k, html);
                    out.push(':');
                    if indent.is_some() {
                        out.push(' ');
                    }
                    encode_at(out, x, html, indent, depth + 1)?;
                }
                newline(out, indent, depth);
            }
            out.push('}');
        }
        Value::Object(o) => match o.json() {
            Some(Ok(data)) => encode_at(out, &data, html, indent, depth)?,
            Some(Err(e)) => {
                return Err(format!(
                    "json: error calling MarshalJSON for type {}: {e}",
                    o.type_name()
                ));
            }
            None => match o.underlying() {
                Some(data) => encode_at(out, &data, html, indent, depth)?,
                None => return Err(format!("json: unsupported type: {}", o.type_name())),
            },
        },
        Value::Func(f) => return Err(format!("json: unsupported type: {}", f.go_type())),
    }
    Ok(())
}

/// Go's `encoding/json` float form: `%f`-like shortest digits for 1e-6 ≤ |f| < 1e21, else
/// shortest exponent form with `e-7`, `e+21`.
fn json_float(f: f64) -> Result<String, String> {
    if f.is_nan() || f.is_infinite() {
        return Err(format!(
            "json: unsupported value: {}",
            crate::gofmt::sprint_value(&Value::Float(f))
        ));
    }
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let e = format!("{f:e}");
        return Ok(match e.split_once('e') {
            Some((m, exp)) if !exp.starts_with('-') => format!("{m}e+{exp}"),
            _ => e,
        });
    }
    Ok(format!("{f}"))
}

/// Go's JSON string encoding.
fn quote(out: &mut String, s: &str, html: bool) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '<' | '>' | '&' if html => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            '\u{2028}' | '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_floats_use_go_forms() {
        assert_eq!(json_float(1e6).unwrap(), "1000000");
        assert_eq!(json_float(1e21).unwrap(), "1e+21");
        assert_eq!(json_float(1.5e-7).unwrap(), "1.5e-7");
        assert_eq!(json_float(0.1).unwrap(), "0.1");
        assert_eq!(json_float(-0.0).unwrap(), "-0");
    }

    #[test]
    fn sprig_from_json_gives_nil_for_bad_input() {
        // Sprig's own fromJson (Helm replaces it with one that returns {"Error": …}).
        assert!(super::super::gojson::decode("not json").is_err());
        assert!(matches!(
            super::super::gojson::decode("[1]"),
            Ok(Value::List(_))
        ));
    }

    #[test]
    fn json_escapes_html_unless_raw() {
        let v = Value::from("<a&b>");
        assert_eq!(
            to_json(&v, true, None).unwrap(),
            r#""\u003ca\u0026b\u003e""#
        );
        assert_eq!(to_json(&v, false, None).unwrap(), r#""<a&b>""#);
    }
}
