//! Sprig's dict functions. Maps are shared like Go's: `set`, `unset`, `merge` and
//! `mergeOverwrite` change the map they are given, for every holder. Go ranges maps in random order, so
//! `keys` and `values` may list entries in any order there; here they come sorted by key
//! (one of Go's possible outcomes, and the stable one).

use std::collections::BTreeMap;

use super::{Funcs, R, empty, fail, s, strval};
use crate::ParamType::{Any, Map, String as Str};
use crate::{Dict, Function, Value};

pub(super) fn register(m: &mut Funcs) {
    m.add(
        "dict",
        Function::variadic(&[], Any, |a| {
            let mut d = BTreeMap::new();
            for pair in a.chunks(2) {
                let v = pair.get(1).cloned().unwrap_or_else(|| Value::from(""));
                d.insert(strval(&pair[0]), v);
            }
            Ok(Value::map(d))
        }),
    );
    m.add(
        "get",
        Function::new(&[Map, Str], |a| {
            Ok(entry(&a[0], s(a, 1)).unwrap_or_else(|| Value::from("")))
        }),
    );
    m.add(
        "hasKey",
        Function::new(&[Map, Str], |a| {
            Ok(Value::Bool(entry(&a[0], s(a, 1)).is_some()))
        }),
    );
    m.add(
        "pluck",
        Function::variadic(&[Str], Map, |a| {
            let key = s(a, 0);
            Ok(Value::list(
                a[1..].iter().filter_map(|d| entry(d, key)).collect(),
            ))
        }),
    );
    m.add(
        "keys",
        Function::variadic(&[], Map, |a| {
            let mut out = Vec::new();
            for d in a {
                if let Value::Map(m) = d {
                    out.extend(m.keys().into_iter().map(Value::from));
                }
            }
            Ok(Value::list(out))
        }),
    );
    m.add(
        "values",
        Function::new(&[Map], |a| {
            Ok(Value::list(match &a[0] {
                Value::Map(m) => m.entries().into_iter().map(|(_, v)| v).collect(),
                _ => Vec::new(),
            }))
        }),
    );
    m.add(
        "pick",
        Function::variadic(&[Map], Str, |a| {
            let picked = a[1..]
                .iter()
                .filter_map(|k| {
                    let k = k.as_str().unwrap_or_default();
                    entry(&a[0], k).map(|v| (k.to_string(), v))
                })
                .collect();
            Ok(Value::map(picked))
        }),
    );
    m.add(
        "omit",
        Function::variadic(&[Map], Str, |a| {
            let Value::Map(m) = &a[0] else {
                return Ok(Value::map(BTreeMap::new()));
            };
            let kept = m
                .entries()
                .into_iter()
                .filter(|(k, _)| !a[1..].iter().any(|o| o.as_str() == Some(k.as_str())))
                .collect();
            Ok(Value::map(kept))
        }),
    );
    m.add("dig", Function::variadic(&[], Any, dig));
    m.add(
        "set",
        Function::new(&[Map, Str, Any], |a| match &a[0] {
            Value::Map(d) => {
                d.insert(s(a, 1), a[2].clone());
                Ok(a[0].clone())
            }
            _ => fail("assignment to entry in nil map"),
        }),
    );
    m.add(
        "unset",
        Function::new(&[Map, Str], |a| {
            if let Value::Map(d) = &a[0] {
                d.remove(s(a, 1));
            }
            Ok(a[0].clone())
        }),
    );
    for (name, must, overwrite) in [
        ("merge", "mustMerge", false),
        ("mergeOverwrite", "mustMergeOverwrite", true),
    ] {
        let f = Function::variadic(&[Map], Map, move |a| {
            let dst = match &a[0] {
                Value::Map(d) => d.clone(),
                _ => Dict::default(),
            };
            for src in &a[1..] {
                if let Value::Map(src) = src {
                    merge_into(&dst, src, overwrite);
                }
            }
            Ok(Value::Map(dst))
        });
        m.add(name, f.clone());
        m.add(must, f);
    }
}

/// mergo's `Merge` / `MergeWithOverwrite` of one `map[string]interface{}` into another, in
/// place: nested maps merge key by key (into the destination's own nested map); a missing
/// or empty destination entry takes the source's; with `overwrite` every source entry wins,
/// nil and empty ones included.
fn merge_into(dst: &Dict, src: &Dict, overwrite: bool) {
    merge_at(dst, src, overwrite, 0)
}

/// One level of [`merge_into`]; a map nested in itself stops the descent (mergo tracks
/// visited maps for the same reason).
fn merge_at(dst: &Dict, src: &Dict, overwrite: bool, depth: usize) {
    if dst.same(src) || depth > 1000 {
        return;
    }
    for (k, sv) in src.entries() {
        let dv = dst.get(&k);
        if sv.is_nil() {
            if overwrite {
                dst.insert(k, Value::Nil);
            }
            continue;
        }
        match (&sv, &dv) {
            (Value::Map(sm), Some(Value::Map(dm))) => merge_at(dm, sm, overwrite, depth + 1),
            (Value::List(_), _) => {
                let kept = if overwrite || dst.is_empty() {
                    sv.clone()
                } else {
                    dv.clone()
                        .filter(|v| !v.is_nil())
                        .unwrap_or_else(|| Value::list(Vec::new()))
                };
                dst.insert(k.clone(), kept);
            }
            _ => {}
        }
        let dst_empty = dv.as_ref().is_none_or(empty);
        if !dst_empty
            && (matches!(sv, Value::List(_))
                || matches!((&sv, &dv), (Value::Map(_), Some(Value::Map(_)))))
        {
            continue;
        }
        if overwrite || dst_empty {
            dst.insert(k, sv);
        }
    }
}

/// The value under `key` of a map argument (a nil map has no entries).
fn entry(d: &Value, key: &str) -> Option<Value> {
    match d {
        Value::Map(m) => m.get(key),
        _ => None,
    }
}

/// Go's text for a failed `x.(T)` type assertion on an `interface{}`.
fn assertion(v: &Value, want: &str) -> crate::FuncError {
    let got = match v {
        Value::Nil => "nil".to_string(),
        other => other.type_name(),
    };
    crate::FuncError::new(format!(
        "interface conversion: interface {{}} is {got}, not {want}"
    ))
}

/// `dig "a" "b" DEFAULT DICT`: the value at the key path, or the default.
fn dig(a: &[Value]) -> R {
    if a.len() < 3 {
        return fail("dig needs at least three arguments");
    }
    let mut cur = a[a.len() - 1].clone();
    if !matches!(cur, Value::Map(_)) {
        return Err(assertion(&cur, "map[string]interface {}"));
    }
    let default = &a[a.len() - 2];
    let keys = &a[..a.len() - 2];
    for k in keys {
        if k.as_str().is_none() {
            return Err(assertion(k, "string"));
        }
    }
    for (i, k) in keys.iter().enumerate() {
        let Value::Map(m) = &cur else {
            return Err(assertion(&cur, "map[string]interface {}"));
        };
        match m.get(k.as_str().unwrap_or_default()) {
            None => return Ok(default.clone()),
            Some(v) if i + 1 == keys.len() => return Ok(v.clone()),
            Some(v) => cur = v.clone(),
        }
    }
    Ok(default.clone())
}
