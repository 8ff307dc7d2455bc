//! Go's builtin template functions (`and`, `or`, `not`, `len`, `index`, `slice`, `print*`,
//! `html`, `js`, `urlquery`, `call`, and the comparisons) with Go's results and errors.

use std::collections::HashMap;
use std::sync::OnceLock;

use crate::gofmt::{is_print, sprint, sprintf, sprintln};
use crate::value::{BasicKind, CallContext, FuncError, Function, ParamType, Value};

use ParamType::Any;

/// The builtin called `name`, if there is one.
pub(crate) fn builtin(name: &str) -> Option<&'static Function> {
    static BUILTINS: OnceLock<HashMap<&'static str, Function>> = OnceLock::new();
    BUILTINS.get_or_init(builtins).get(name)
}

fn err<T>(msg: impl Into<String>) -> Result<T, FuncError> {
    Err(FuncError::new(msg))
}

fn builtins() -> HashMap<&'static str, Function> {
    let mut m = HashMap::new();
    m.insert(
        "and",
        Function::variadic(&[Any], Any, |a| Ok(and_or(a, false))),
    );
    m.insert(
        "or",
        Function::variadic(&[Any], Any, |a| Ok(and_or(a, true))),
    );
    m.insert(
        "not",
        Function::new(&[Any], |a| Ok(Value::Bool(!a[0].truth()))),
    );
    m.insert("len", Function::new(&[Any], |a| length(&a[0])));
    m.insert(
        "index",
        Function::variadic(&[Any], Any, |a| index(&a[0], &a[1..])),
    );
    m.insert(
        "slice",
        Function::variadic(&[Any], Any, |a| slice(&a[0], &a[1..])),
    );
    m.insert(
        "print",
        Function::variadic(&[], Any, |a| Ok(Value::from(sprint(a)))),
    );
    m.insert(
        "println",
        Function::variadic(&[], Any, |a| Ok(Value::from(sprintln(a)))),
    );
    m.insert(
        "printf",
        Function::variadic(&[ParamType::String], Any, |a| {
            Ok(Value::from(sprintf(
                a[0].as_str().unwrap_or_default(),
                &a[1..],
            )))
        }),
    );
    m.insert(
        "html",
        Function::variadic(&[], Any, |a| Ok(Value::from(html_escape(&eval_args(a))))),
    );
    m.insert(
        "js",
        Function::variadic(&[], Any, |a| Ok(Value::from(js_escape(&eval_args(a))))),
    );
    m.insert(
        "urlquery",
        Function::variadic(&[], Any, |a| Ok(Value::from(query_escape(&eval_args(a))))),
    );
    m.insert(
        "call",
        Function::with_context(&[Any], Some(Any), |ctx, a| call(ctx, &a[0], &a[1..])),
    );
    m.insert(
        "eq",
        Function::variadic(&[Any], Any, |a| eq(&a[0], &a[1..]).map(Value::Bool)),
    );
    m.insert(
        "ne",
        Function::new(&[Any, Any], |a| {
            eq(&a[0], &a[1..2]).map(|b| Value::Bool(!b))
        }),
    );
    m.insert(
        "lt",
        Function::new(&[Any, Any], |a| lt(&a[0], &a[1]).map(Value::Bool)),
    );
    m.insert(
        "le",
        Function::new(&[Any, Any], |a| le(&a[0], &a[1]).map(Value::Bool)),
    );
    m.insert(
        "gt",
        Function::new(&[Any, Any], |a| le(&a[0], &a[1]).map(|b| Value::Bool(!b))),
    );
    m.insert(
        "ge",
        Function::new(&[Any, Any], |a| lt(&a[0], &a[1]).map(|b| Value::Bool(!b))),
    );
    m
}

/// `and` returns the first false argument or the last; `or` the first true one or the last.
/// (The executor short-circuits these itself; this is their meaning as plain functions.)
fn and_or(args: &[Value], or: bool) -> Value {
    for a in args {
        if a.truth() == or {
            return a.clone();
        }
    }
    args.last().cloned().unwrap_or_default()
}

fn length(v: &Value) -> Result<Value, FuncError> {
    let n = match &*v.plain() {
        Value::Nil => return err("len of nil pointer"),
        Value::String(s) => s.len(),
        Value::List(l) => l.len(),
        Value::Map(m) => m.len(),
        other => return err(format!("len of type {}", other.type_name())),
    };
    Ok(Value::Int(n as i64))
}

/// Go's `indexArg`: an integer index in `0..=cap`.
fn index_arg(index: &Value, cap: usize) -> Result<usize, FuncError> {
    let x = match index {
        Value::Int(i) | Value::Int64(i) => *i,
        Value::Nil => return err("cannot index slice/array with nil"),
        other => {
            return err(format!(
                "cannot index slice/array with type {}",
                other.type_name()
            ));
        }
    };
    if x < 0 || x as u64 > cap as u64 {
        return err(format!("index out of range: {x}"));
    }
    Ok(x as usize)
}

/// Go's `prepareArg`: a value for a parameter of type `t` (ints convert between kinds).
fn prepare_arg(v: &Value, t: ParamType) -> Result<Value, FuncError> {
    if t == Any {
        return Ok(v.clone());
    }
    if v.is_nil() {
        if t.can_be_nil() {
            return Ok(Value::Nil);
        }
        return err(format!("value is nil; should be of type {}", t.go_name()));
    }
    if t.accepts(v) {
        return Ok(v.clone());
    }
    match (v, t) {
        (Value::Int(i) | Value::Int64(i), ParamType::Int) => Ok(Value::Int(*i)),
        (Value::Int(i) | Value::Int64(i), ParamType::Int64) => Ok(Value::Int64(*i)),
        _ => err(format!(
            "value has type {}; should be {}",
            v.type_name(),
            t.go_name()
        )),
    }
}

fn index(item: &Value, indexes: &[Value]) -> Result<Value, FuncError> {
    let mut item = item.plain().into_owned();
    if item.is_nil() {
        return err("index of untyped nil");
    }
    for idx in indexes {
        item = match &*item.plain() {
            Value::Nil => return err("index of nil pointer"),
            Value::List(l) => {
                let x = index_arg(idx, l.len())?;
                match l.get(x) {
                    Some(v) => v.clone(),
                    None => return err("reflect: slice index out of range"),
                }
            }
            Value::String(s) => {
                let x = index_arg(idx, s.len())?;
                match s.as_bytes().get(x) {
                    Some(b) => Value::Int(i64::from(*b)),
                    None => return err("reflect: string index out of range"),
                }
            }
            Value::Map(m) => {
                let key = prepare_arg(idx, ParamType::String)?;
                m.get(key.as_str().unwrap_or_default()).unwrap_or_default()
            }
            other => return err(format!("can't index item of type {}", other.type_name())),
        };
    }
    Ok(item)
}

/// The capacity Go's `append` leaves a `[]interface{}` of `len` elements built one element
/// at a time (as `encoding/json` decodes arrays): `slice` may reach up to it.
fn append_cap(len: usize) -> usize {
    const CLASSES: [usize; 67] = [
        0, 8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256, 288,
        320, 352, 384, 416, 448, 480, 512, 576, 640, 704, 768, 896, 1024, 1152, 1280, 1408, 1536,
        1792, 2048, 2304, 2688, 3072, 3200, 3456, 4096, 4864, 5376, 6144, 6528, 6784, 6912, 8192,
        9472, 9728, 10240, 10880, 12288, 13568, 14336, 16384, 18432, 19072, 20480, 21760, 24576,
        27264, 28672,
    ];
    fn roundup(bytes: usize) -> usize {
        if bytes <= 28672 {
            CLASSES
                .iter()
                .copied()
                .find(|c| *c >= bytes)
                .unwrap_or(bytes)
        } else if bytes <= 32768 {
            32768
        } else {
            bytes.div_ceil(8192) * 8192
        }
    }
    let mut cap = 0usize;
    for n in 1..=len {
        if n <= cap {
            continue;
        }
        let double = cap * 2;
        let mut newcap = if n > double {
            n
        } else if cap < 256 {
            double
        } else {
            let mut c = cap;
            while c < n {
                c += (c + 3 * 256) / 4;
            }
            c
        };
        newcap = roundup(newcap * 16) / 16;
        cap = newcap;
    }
    cap
}

fn slice(item: &Value, indexes: &[Value]) -> Result<Value, FuncError> {
    let item = item.plain().into_owned();
    if indexes.len() > 3 {
        return err(format!("too many slice indexes: {}", indexes.len()));
    }
    let (len, cap) = match &item {
        Value::Nil => return err("slice of nil pointer"),
        Value::String(s) => {
            if indexes.len() == 3 {
                return err("cannot 3-index slice a string");
            }
            (s.len(), s.len())
        }
        Value::List(l) => (l.len(), append_cap(l.len())),
        other => return err(format!("can't slice item of type {}", other.type_name())),
    };
    let mut idx = [0usize, len, 0];
    for (i, x) in indexes.iter().enumerate() {
        idx[i] = index_arg(x, cap)?;
    }
    if idx[0] > idx[1] {
        return err(format!("invalid slice index: {} > {}", idx[0], idx[1]));
    }
    if indexes.len() == 3 && idx[1] > idx[2] {
        return err(format!("invalid slice index: {} > {}", idx[1], idx[2]));
    }
    match &item {
        Value::String(s) => {
            let b = &s.as_bytes()[idx[0]..idx[1]];
            Ok(Value::from(String::from_utf8_lossy(b).into_owned()))
        }
        Value::List(l) => {
            if idx[1] > l.len() {
                // Within the capacity but past the length: Go shows the zero values there.
                let mut v: Vec<Value> = l[idx[0].min(l.len())..].to_vec();
                v.resize(idx[1] - idx[0], Value::Nil);
                return Ok(Value::list(v));
            }
            Ok(Value::list(l[idx[0]..idx[1]].to_vec()))
        }
        _ => err(format!("can't slice item of type {}", item.type_name())),
    }
}

fn call(ctx: &mut CallContext<'_>, f: &Value, args: &[Value]) -> Result<Value, FuncError> {
    let f = match f {
        Value::Nil => return err("call of nil"),
        Value::Func(f) => f,
        other => return err(format!("non-function of type {}", other.type_name())),
    };
    let nfixed = f.params().len();
    if f.variadic_param().is_some() {
        if args.len() < nfixed {
            return err(format!(
                "wrong number of args: got {} want at least {nfixed}",
                args.len()
            ));
        }
    } else if args.len() != nfixed {
        return err(format!(
            "wrong number of args: got {} want {nfixed}",
            args.len()
        ));
    }
    let mut argv = Vec::with_capacity(args.len());
    for (i, a) in args.iter().enumerate() {
        let t = f.param(i).unwrap_or(Any);
        argv.push(prepare_arg(a, t).map_err(|e| FuncError::new(format!("arg {i}: {e}")))?);
    }
    f.call_in(ctx, &argv)
}

const BAD_COMPARISON_TYPE: &str = "invalid type for comparison";
const BAD_COMPARISON: &str = "incompatible types for comparison";

fn eq(a: &Value, others: &[Value]) -> Result<bool, FuncError> {
    if others.is_empty() {
        return err("missing argument for comparison");
    }
    let a = a.plain();
    let k1 = a.basic_kind();
    for b in others {
        let b = b.plain();
        let k2 = b.basic_kind();
        let truth = if k1 != k2 {
            if !a.is_nil() && !b.is_nil() {
                return err(BAD_COMPARISON);
            }
            false
        } else {
            match (&*a, &*b) {
                (Value::Bool(x), Value::Bool(y)) => x == y,
                (Value::Int(x) | Value::Int64(x), Value::Int(y) | Value::Int64(y)) => x == y,
                (Value::Float(x), Value::Float(y)) => x == y,
                (Value::String(x), Value::String(y)) => x == y,
                (Value::Nil, Value::Nil) => true,
                (Value::Nil, _) | (_, Value::Nil) => false,
                (x, y) => {
                    if x.type_name() != y.type_name() {
                        return err(format!(
                            "non-comparable types {x}: {}, {}: {y}",
                            x.type_name(),
                            y.type_name()
                        ));
                    }
                    return err(format!("non-comparable type {y}: {}", y.type_name()));
                }
            }
        };
        if truth {
            return Ok(true);
        }
    }
    Ok(false)
}

fn lt(a: &Value, b: &Value) -> Result<bool, FuncError> {
    let (a, b) = (a.plain(), b.plain());
    let (k1, k2) = (a.basic_kind(), b.basic_kind());
    if k1 == BasicKind::Invalid || k2 == BasicKind::Invalid {
        return err(BAD_COMPARISON_TYPE);
    }
    if k1 != k2 {
        return err(BAD_COMPARISON);
    }
    Ok(match (&*a, &*b) {
        (Value::Int(x) | Value::Int64(x), Value::Int(y) | Value::Int64(y)) => x < y,
        (Value::Float(x), Value::Float(y)) => x < y,
        (Value::String(x), Value::String(y)) => x < y,
        _ => return err(BAD_COMPARISON_TYPE),
    })
}

fn le(a: &Value, b: &Value) -> Result<bool, FuncError> {
    if lt(a, b)? {
        return Ok(true);
    }
    eq(a, std::slice::from_ref(b))
}

/// Go's `evalArgs` for `html`, `js` and `urlquery`: one string as is, else `fmt.Sprint`
/// with nil shown as `<no value>`.
fn eval_args(args: &[Value]) -> String {
    if let [Value::String(s)] = args {
        return s.to_string();
    }
    let args: Vec<Value> = args
        .iter()
        .map(|a| {
            if a.is_nil() {
                Value::from("<no value>")
            } else {
                a.clone()
            }
        })
        .collect();
    sprint(&args)
}

/// Go's `template.HTMLEscapeString`.
pub(crate) fn html_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\0' => out.push('\u{FFFD}'),
            '"' => out.push_str("&#34;"),
            '\'' => out.push_str("&#39;"),
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
    out
}

/// Go's `template.JSEscapeString`.
pub(crate) fn js_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '"' => out.push_str("\\\""),
            '<' => out.push_str("\\u003C"),
            '>' => out.push_str("\\u003E"),
            '&' => out.push_str("\\u0026"),
            '=' => out.push_str("\\u003D"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04X}", c as u32)),
            c if c.is_ascii() || is_print(c) => out.push(c),
            c => out.push_str(&format!("\\u{:04X}", c as u32)),
        }
    }
    out
}

/// Go's `url.QueryEscape`.
pub(crate) fn query_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            b' ' => out.push('+'),
            b => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn append_capacity_follows_go_growth() {
        let caps: Vec<usize> = [0, 1, 2, 3, 5, 9, 17, 257, 513]
            .iter()
            .map(|n| append_cap(*n))
            .collect();
        assert_eq!(caps, [0, 1, 2, 4, 8, 16, 32, 512, 848]);
    }

    #[test]
    fn comparisons_follow_go_kinds() {
        assert_eq!(eq(&Value::Int(1), &[Value::Int64(1)]), Ok(true));
        assert_eq!(
            eq(&Value::Int(1), &[Value::Float(1.0)]),
            err(BAD_COMPARISON)
        );
        assert_eq!(eq(&Value::Nil, &[Value::Int(1)]), Ok(false));
        assert_eq!(
            eq(&Value::Int(1), &[Value::Int(2), Value::Int(1)]),
            Ok(true)
        );
        assert_eq!(lt(&Value::from("a"), &Value::from("b")), Ok(true));
        assert_eq!(
            lt(&Value::Bool(true), &Value::Bool(false)),
            err(BAD_COMPARISON_TYPE)
        );
        assert_eq!(lt(&Value::Nil, &Value::Int(1)), err(BAD_COMPARISON_TYPE));
        assert_eq!(le(&Value::Float(2.0), &Value::Float(2.0)), Ok(true));
    }

    #[test]
    fn escapers_match_go() {
        assert_eq!(
            js_escape("It'd be <nice>=&"),
            "It\\'d be \\u003Cnice\\u003E\\u003D\\u0026"
        );
        assert_eq!(query_escape("a b/c?"), "a+b%2Fc%3F");
        assert_eq!(
            html_escape("<a href=\"x\">'"),
            "&lt;a href=&#34;x&#34;&gt;&#39;"
        );
    }
}
