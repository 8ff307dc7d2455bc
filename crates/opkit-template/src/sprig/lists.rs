//! Sprig's list functions. Each has a `must` form that returns the error Sprig's plain form
//! panics with (Go's template engine turns the panic into the same error, so both fail
//! alike here). Lists are immutable values: `append` returns a new list, as Sprig does.

use super::conv::to_int64;
use super::{Funcs, NIL_DEREF, R, deep_equal, empty, fail, items, kind_of, n};
use crate::ParamType::{Any, Int};
use crate::{FuncError, Function, Value};

type ListFn = fn(&[Value]) -> R;

/// A list function: name, aliases, fixed parameters, variadic parameter, implementation.
type ListEntry = (
    &'static str,
    &'static [&'static str],
    &'static [crate::ParamType],
    Option<crate::ParamType>,
    ListFn,
);

pub(super) fn register(m: &mut Funcs) {
    for name in ["list", "tuple"] {
        m.add(
            name,
            Function::variadic(&[], Any, |a| Ok(Value::list(a.to_vec()))),
        );
    }
    let pairs: [ListEntry; 13] = [
        (
            "append",
            &["push", "mustAppend", "mustPush"],
            &[Any, Any],
            None,
            push,
        ),
        ("prepend", &["mustPrepend"], &[Any, Any], None, prepend),
        ("first", &["mustFirst"], &[Any], None, first),
        ("last", &["mustLast"], &[Any], None, last),
        ("rest", &["mustRest"], &[Any], None, rest),
        ("initial", &["mustInitial"], &[Any], None, initial),
        ("reverse", &["mustReverse"], &[Any], None, reverse),
        ("compact", &["mustCompact"], &[Any], None, compact),
        ("uniq", &["mustUniq"], &[Any], None, uniq),
        ("without", &["mustWithout"], &[Any], Some(Any), without),
        ("has", &["mustHas"], &[Any, Any], None, has),
        ("slice", &["mustSlice"], &[Any], Some(Any), slice),
        ("chunk", &["mustChunk"], &[Int, Any], None, chunk),
    ];
    for (name, aliases, params, variadic, f) in pairs {
        let func = match variadic {
            Some(v) => Function::variadic(params, v, f),
            None => Function::new(params, f),
        };
        m.add(name, func.clone());
        for alias in aliases {
            m.add(alias, func.clone());
        }
    }
    m.add("concat", Function::variadic(&[], Any, concat));
}

fn list_of(v: &Value, what: &str) -> Result<Vec<Value>, FuncError> {
    items(v, |kind| format!("Cannot {what} on type {kind}"))
}

fn push(a: &[Value]) -> R {
    let mut l = list_of(&a[0], "push")?;
    l.push(a[1].clone());
    Ok(Value::list(l))
}

fn prepend(a: &[Value]) -> R {
    let mut l = list_of(&a[0], "prepend")?;
    l.insert(0, a[1].clone());
    Ok(Value::list(l))
}

fn first(a: &[Value]) -> R {
    Ok(list_of(&a[0], "find first")?
        .first()
        .cloned()
        .unwrap_or_default())
}

fn last(a: &[Value]) -> R {
    Ok(list_of(&a[0], "find last")?
        .last()
        .cloned()
        .unwrap_or_default())
}

fn rest(a: &[Value]) -> R {
    let l = list_of(&a[0], "find rest")?;
    Ok(Value::list(l.get(1..).unwrap_or_default().to_vec()))
}

fn initial(a: &[Value]) -> R {
    let l = list_of(&a[0], "find initial")?;
    Ok(Value::list(
        l.get(..l.len().saturating_sub(1))
            .unwrap_or_default()
            .to_vec(),
    ))
}

fn reverse(a: &[Value]) -> R {
    let mut l = list_of(&a[0], "find reverse")?;
    l.reverse();
    Ok(Value::list(l))
}

fn compact(a: &[Value]) -> R {
    let l = list_of(&a[0], "compact")?;
    Ok(Value::list(l.into_iter().filter(|v| !empty(v)).collect()))
}

fn uniq(a: &[Value]) -> R {
    let mut out: Vec<Value> = Vec::new();
    for v in list_of(&a[0], "find uniq")? {
        if !out.iter().any(|o| deep_equal(&v, o)) {
            out.push(v);
        }
    }
    Ok(Value::list(out))
}

fn without(a: &[Value]) -> R {
    let l = list_of(&a[0], "find without")?;
    let omit = &a[1..];
    Ok(Value::list(
        l.into_iter()
            .filter(|v| !omit.iter().any(|o| deep_equal(v, o)))
            .collect(),
    ))
}

fn has(a: &[Value]) -> R {
    if a[1].is_nil() {
        return Ok(Value::Bool(false));
    }
    let l = list_of(&a[1], "find has")?;
    Ok(Value::Bool(l.iter().any(|v| deep_equal(&a[0], v))))
}

fn slice(a: &[Value]) -> R {
    let l = match &*a[0].plain() {
        Value::List(l) => l.to_vec(),
        Value::Nil => return fail(NIL_DEREF),
        other => {
            return fail(format!(
                "list should be type of slice or array but {}",
                kind_of(other)
            ));
        }
    };
    if l.is_empty() {
        return Ok(Value::Nil);
    }
    let start = a.get(1).map(to_int64).unwrap_or(0);
    let end = a.get(2).map(to_int64).unwrap_or(l.len() as i64);
    if start < 0 || end < start || end > l.len() as i64 {
        return fail("reflect.Value.Slice: slice index out of bounds");
    }
    Ok(Value::list(l[start as usize..end as usize].to_vec()))
}

fn chunk(a: &[Value]) -> R {
    let size = n(a, 0);
    let l = list_of(&a[1], "chunk")?;
    if size <= 0 {
        // Go divides by the size and then makes a slice of a negative or huge length.
        return fail("runtime error: makeslice: len out of range");
    }
    Ok(Value::list(
        l.chunks(size as usize)
            .map(|c| Value::list(c.to_vec()))
            .collect(),
    ))
}

fn concat(a: &[Value]) -> R {
    let mut out = Vec::new();
    for list in a {
        match &*list.plain() {
            Value::List(l) => out.extend(l.iter().cloned()),
            Value::Nil => return fail(NIL_DEREF),
            other => return fail(format!("Cannot concat type {} as list", kind_of(other))),
        }
    }
    Ok(Value::list(out))
}
