//! The Kubernetes CEL extension functions rules use most, on top of cel-rust's standard library
//! and its strings extension (`lowerAscii`, `upperAscii`, `trim`, `split`, `join`, `replace`,
//! `indexOf`, `lastIndexOf`, `substring`, `charAt`, `format`, `reverse`, `strings.quote`).
//!
//! Added here, following `k8s.io/apiserver/pkg/cel/library`:
//! * lists: `isSorted()`, `sum()`, `min()`, `max()`, `indexOf(x)`, `lastIndexOf(x)`;
//! * regex: `find(re)`, `findAll(re)`, `findAll(re, n)`;
//! * URLs: `url(s)`, `isURL(s)`, and `getScheme()`, `getHost()`, `getHostname()`, `getPort()`,
//!   `getEscapedPath()`, `getQuery()` on the result;
//! * quantities: `quantity(s)`, `isQuantity(s)`, and `isInteger()`, `asInteger()`,
//!   `asApproximateFloat()`, `sign()`, `add(q|int)`, `sub(q|int)`, `isGreaterThan(q)`,
//!   `isLessThan(q)`, `compareTo(q)` on the result (exact to the nano unit).
//!
//! cel-rust's own lists extension is deliberately not loaded: its `lists.range(n)` allocates a
//! list of any requested size, which the work bound of [`crate::Validator::validate`] could not
//! see. Not provided: `ip`/`cidr`, `semver`, `format.*` named formats, authz functions.

use std::cmp::Ordering;
use std::collections::HashMap;
use std::sync::Arc;

use cel::common::types::{self, Type};
use cel::common::value::CowVal;
use cel::objects::{Key, Map, Opaque};
use cel::{DeclarationError, Env, ExecutionError, Value};

/// The runtime type name of `url(...)` values.
const URL_TYPE: &str = "kubernetes.URL";
/// The runtime type name of `quantity(...)` values.
const QUANTITY_TYPE: &str = "kubernetes.Quantity";

type Res = Result<Value, ExecutionError>;

/// Converts the call's arguments to [`Value`]s, runs `f` and converts the result back: the
/// library's functions are written on plain values.
fn bridge<'b, 'v>(
    args: Vec<CowVal<'b, 'v>>,
    f: fn(&[Value]) -> Res,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let vals = args
        .iter()
        .map(|a| Value::try_from(a.as_ref()))
        .collect::<Result<Vec<_>, _>>()?;
    let out: Box<dyn cel::common::value::Val> = f(&vals)?.try_into()?;
    Ok(CowVal::from(out))
}

macro_rules! overload {
    ($name:ident, $imp:path) => {
        fn $name<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
            bridge(args, $imp)
        }
    };
}

fn err(function: &str, msg: impl ToString) -> ExecutionError {
    ExecutionError::function_error(function, msg)
}

/// Registers the library's functions on `env`.
pub fn register(env: &mut Env) -> Result<(), DeclarationError> {
    use types::{DYN_TYPE, INT_TYPE, LIST_TYPE, STRING_TYPE};
    let url_t = || Type::new_opaque_type(URL_TYPE);
    let q_t = || Type::new_opaque_type(QUANTITY_TYPE);

    env.add_member_overload("isSorted", "list_is_sorted", LIST_TYPE, vec![], is_sorted)?;
    env.add_member_overload("sum", "list_sum", LIST_TYPE, vec![], sum)?;
    env.add_member_overload("min", "list_min", LIST_TYPE, vec![], min)?;
    env.add_member_overload("max", "list_max", LIST_TYPE, vec![], max)?;
    env.add_member_overload(
        "indexOf",
        "list_index_of",
        LIST_TYPE,
        vec![DYN_TYPE],
        index_of,
    )?;
    env.add_member_overload(
        "lastIndexOf",
        "list_last_index_of",
        LIST_TYPE,
        vec![DYN_TYPE],
        last_index_of,
    )?;

    env.add_member_overload("find", "string_find", STRING_TYPE, vec![STRING_TYPE], find)?;
    env.add_member_overload(
        "findAll",
        "string_find_all",
        STRING_TYPE,
        vec![STRING_TYPE],
        find_all,
    )?;
    env.add_member_overload(
        "findAll",
        "string_find_all_n",
        STRING_TYPE,
        vec![STRING_TYPE, INT_TYPE],
        find_all_n,
    )?;

    env.add_overload("url", "string_to_url", vec![STRING_TYPE], url)?;
    env.add_overload("isURL", "is_url_string", vec![STRING_TYPE], is_url)?;
    env.add_member_overload("getScheme", "url_get_scheme", url_t(), vec![], get_scheme)?;
    env.add_member_overload("getHost", "url_get_host", url_t(), vec![], get_host)?;
    env.add_member_overload(
        "getHostname",
        "url_get_hostname",
        url_t(),
        vec![],
        get_hostname,
    )?;
    env.add_member_overload("getPort", "url_get_port", url_t(), vec![], get_port)?;
    env.add_member_overload(
        "getEscapedPath",
        "url_get_escaped_path",
        url_t(),
        vec![],
        get_escaped_path,
    )?;
    env.add_member_overload("getQuery", "url_get_query", url_t(), vec![], get_query)?;

    env.add_overload(
        "quantity",
        "string_to_quantity",
        vec![STRING_TYPE],
        quantity,
    )?;
    env.add_overload(
        "isQuantity",
        "is_quantity_string",
        vec![STRING_TYPE],
        is_quantity,
    )?;
    env.add_member_overload(
        "isInteger",
        "quantity_is_integer",
        q_t(),
        vec![],
        q_is_integer,
    )?;
    env.add_member_overload(
        "asInteger",
        "quantity_get_integer",
        q_t(),
        vec![],
        q_as_integer,
    )?;
    env.add_member_overload(
        "asApproximateFloat",
        "quantity_get_float",
        q_t(),
        vec![],
        q_as_float,
    )?;
    env.add_member_overload("sign", "quantity_get_sign", q_t(), vec![], q_sign)?;
    env.add_member_overload("add", "quantity_add", q_t(), vec![DYN_TYPE], q_add)?;
    env.add_member_overload("sub", "quantity_sub", q_t(), vec![DYN_TYPE], q_sub)?;
    env.add_member_overload(
        "isGreaterThan",
        "quantity_is_greater_than",
        q_t(),
        vec![q_t()],
        q_gt,
    )?;
    env.add_member_overload(
        "isLessThan",
        "quantity_is_less_than",
        q_t(),
        vec![q_t()],
        q_lt,
    )?;
    env.add_member_overload(
        "compareTo",
        "quantity_compare_to",
        q_t(),
        vec![q_t()],
        q_compare,
    )?;
    Ok(())
}

// ---- lists -------------------------------------------------------------------------------

fn list<'a>(v: &'a Value, f: &str) -> Result<&'a [Value], ExecutionError> {
    match v {
        Value::List(l) => Ok(l.as_slice()),
        other => Err(err(
            f,
            format!("expected a list, got {:?}", other.type_of()),
        )),
    }
}

/// Orders two values of the same comparable type (numbers across int/uint/double).
fn compare(a: &Value, b: &Value, f: &str) -> Result<Ordering, ExecutionError> {
    use Value::*;
    let num = |v: &Value| match v {
        Int(i) => Some(*i as f64),
        UInt(u) => Some(*u as f64),
        Float(x) => Some(*x),
        _ => None,
    };
    Ok(match (a, b) {
        (Int(x), Int(y)) => x.cmp(y),
        (UInt(x), UInt(y)) => x.cmp(y),
        (String(x), String(y)) => x.cmp(y),
        (Bool(x), Bool(y)) => x.cmp(y),
        (Bytes(x), Bytes(y)) => x.cmp(y),
        (Duration(x), Duration(y)) => x.cmp(y),
        (Timestamp(x), Timestamp(y)) => x.cmp(y),
        (Opaque(x), Opaque(y)) => match (as_quantity(x), as_quantity(y)) {
            (Some(p), Some(q)) => p.0.cmp(&q.0),
            _ => return Err(err(f, "values are not comparable")),
        },
        _ => match (num(a), num(b)) {
            (Some(x), Some(y)) => x.partial_cmp(&y).unwrap_or(Ordering::Equal),
            _ => return Err(err(f, "values are not comparable")),
        },
    })
}

fn is_sorted_imp(a: &[Value]) -> Res {
    let l = list(&a[0], "isSorted")?;
    for w in l.windows(2) {
        if compare(&w[0], &w[1], "isSorted")? == Ordering::Greater {
            return Ok(Value::Bool(false));
        }
    }
    Ok(Value::Bool(true))
}

fn sum_imp(a: &[Value]) -> Res {
    let l = list(&a[0], "sum")?;
    let mut it = l.iter();
    let Some(first) = it.next() else {
        return Ok(Value::Int(0));
    };
    let mut acc = first.clone();
    for v in it {
        acc = match (&acc, v) {
            (Value::Int(x), Value::Int(y)) => Value::Int(
                x.checked_add(*y)
                    .ok_or_else(|| ExecutionError::Overflow("sum", acc.clone(), v.clone()))?,
            ),
            (Value::UInt(x), Value::UInt(y)) => Value::UInt(
                x.checked_add(*y)
                    .ok_or_else(|| ExecutionError::Overflow("sum", acc.clone(), v.clone()))?,
            ),
            (Value::Float(x), Value::Float(y)) => Value::Float(x + y),
            (Value::Duration(x), Value::Duration(y)) => Value::Duration(*x + *y),
            _ => return Err(ExecutionError::no_such_overload("sum", vec!["list".into()])),
        };
    }
    Ok(acc)
}

fn extreme(a: &[Value], f: &str, want: Ordering) -> Res {
    let l = list(&a[0], f)?;
    let mut it = l.iter();
    let Some(mut best) = it.next() else {
        return Err(err(f, format!("{f} called on empty list")));
    };
    for v in it {
        if compare(v, best, f)? == want {
            best = v;
        }
    }
    Ok(best.clone())
}

fn min_imp(a: &[Value]) -> Res {
    extreme(a, "min", Ordering::Less)
}

fn max_imp(a: &[Value]) -> Res {
    extreme(a, "max", Ordering::Greater)
}

fn index_of_imp(a: &[Value]) -> Res {
    let l = list(&a[0], "indexOf")?;
    Ok(Value::Int(
        l.iter().position(|v| *v == a[1]).map_or(-1, |i| i as i64),
    ))
}

fn last_index_of_imp(a: &[Value]) -> Res {
    let l = list(&a[0], "lastIndexOf")?;
    Ok(Value::Int(
        l.iter().rposition(|v| *v == a[1]).map_or(-1, |i| i as i64),
    ))
}

overload!(is_sorted, is_sorted_imp);
overload!(sum, sum_imp);
overload!(min, min_imp);
overload!(max, max_imp);
overload!(index_of, index_of_imp);
overload!(last_index_of, last_index_of_imp);

// ---- regex -------------------------------------------------------------------------------

fn str_arg<'a>(v: &'a Value, f: &str) -> Result<&'a str, ExecutionError> {
    match v {
        Value::String(s) => Ok(s.as_str()),
        other => Err(err(
            f,
            format!("expected a string, got {:?}", other.type_of()),
        )),
    }
}

fn regex(pattern: &str, f: &str) -> Result<regex::Regex, ExecutionError> {
    regex::RegexBuilder::new(pattern)
        .size_limit(1 << 20)
        .build()
        .map_err(|e| err(f, format!("invalid regex: {e}")))
}

fn find_imp(a: &[Value]) -> Res {
    let s = str_arg(&a[0], "find")?;
    let re = regex(str_arg(&a[1], "find")?, "find")?;
    Ok(Value::String(Arc::new(
        re.find(s)
            .map(|m| m.as_str().to_string())
            .unwrap_or_default(),
    )))
}

fn find_all_with(a: &[Value], limit: Option<i64>) -> Res {
    let s = str_arg(&a[0], "findAll")?;
    let re = regex(str_arg(&a[1], "findAll")?, "findAll")?;
    let n = match limit {
        Some(0) => return Ok(Value::List(Arc::new(Vec::new()))),
        Some(n) if n > 0 => n as usize,
        _ => usize::MAX,
    };
    Ok(Value::List(Arc::new(
        re.find_iter(s)
            .take(n)
            .map(|m| Value::String(Arc::new(m.as_str().to_string())))
            .collect(),
    )))
}

fn find_all_imp(a: &[Value]) -> Res {
    find_all_with(a, None)
}

fn find_all_n_imp(a: &[Value]) -> Res {
    let n = match a.get(2) {
        Some(Value::Int(n)) => *n,
        _ => -1,
    };
    find_all_with(a, Some(n))
}

overload!(find, find_imp);
overload!(find_all, find_all_imp);
overload!(find_all_n, find_all_n_imp);

// ---- URLs --------------------------------------------------------------------------------

/// A parsed URL (the parts upstream's `url` library exposes).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Url {
    scheme: String,
    host: String,
    path: String,
    query: String,
}

impl Opaque for Url {
    fn runtime_type_name(&self) -> &str {
        URL_TYPE
    }
}

/// Go's `url.ParseRequestURI`, for what it accepts: absolute URLs and absolute paths.
fn parse_url(s: &str) -> Option<Url> {
    if s.is_empty() || s.contains([' ', '\n', '\r', '\t']) {
        return None;
    }
    let (rest, _fragment) = s.split_once('#').map_or((s, ""), |(a, b)| (a, b));
    let (rest, query) = rest.split_once('?').map_or((rest, ""), |(a, b)| (a, b));
    if rest.starts_with('/') {
        return Some(Url {
            scheme: String::new(),
            host: String::new(),
            path: rest.to_string(),
            query: query.to_string(),
        });
    }
    let (scheme, after) = rest.split_once(':')?;
    let mut chars = scheme.chars();
    if !chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        || !chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    {
        return None;
    }
    let (host, path) = match after.strip_prefix("//") {
        Some(auth) => {
            let (authority, path) = match auth.find('/') {
                Some(i) => (&auth[..i], &auth[i..]),
                None => (auth, ""),
            };
            let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
            (host.to_string(), path.to_string())
        }
        None if after.starts_with('/') => (String::new(), after.to_string()),
        None => return None,
    };
    Some(Url {
        scheme: scheme.to_string(),
        host,
        path,
        query: query.to_string(),
    })
}

fn as_url(v: &Value) -> Result<&Url, ExecutionError> {
    match v {
        Value::Opaque(o) => o
            .downcast_ref::<Url>()
            .ok_or_else(|| err("url", "not a URL")),
        _ => Err(err("url", "not a URL")),
    }
}

fn string(s: impl Into<String>) -> Value {
    Value::String(Arc::new(s.into()))
}

fn url_imp(a: &[Value]) -> Res {
    let s = str_arg(&a[0], "url")?;
    parse_url(s)
        .map(|u| Value::Opaque(Arc::new(u)))
        .ok_or_else(|| {
            err(
                "url",
                format!(
                    "URL parse error during conversion from string: parse {}: invalid URI for request",
                    opkit_schema::go_quote(s)
                ),
            )
        })
}

fn is_url_imp(a: &[Value]) -> Res {
    Ok(Value::Bool(parse_url(str_arg(&a[0], "isURL")?).is_some()))
}

fn split_host_port(host: &str) -> (&str, &str) {
    if let Some(rest) = host.strip_prefix('[') {
        return match rest.split_once(']') {
            Some((h, p)) => (h, p.strip_prefix(':').unwrap_or("")),
            None => (host, ""),
        };
    }
    match host.rsplit_once(':') {
        Some((h, p)) if !h.contains(':') => (h, p),
        _ => (host, ""),
    }
}

fn get_scheme_imp(a: &[Value]) -> Res {
    Ok(string(as_url(&a[0])?.scheme.clone()))
}
fn get_host_imp(a: &[Value]) -> Res {
    Ok(string(as_url(&a[0])?.host.clone()))
}
fn get_hostname_imp(a: &[Value]) -> Res {
    Ok(string(split_host_port(&as_url(&a[0])?.host).0))
}
fn get_port_imp(a: &[Value]) -> Res {
    Ok(string(split_host_port(&as_url(&a[0])?.host).1))
}
fn get_escaped_path_imp(a: &[Value]) -> Res {
    Ok(string(as_url(&a[0])?.path.clone()))
}
fn get_query_imp(a: &[Value]) -> Res {
    let q = &as_url(&a[0])?.query;
    let mut out: HashMap<Key, Vec<Value>> = HashMap::new();
    for pair in q.split(['&', ';']).filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        out.entry(Key::String(Arc::new(k.to_string())))
            .or_default()
            .push(string(v));
    }
    Ok(Value::Map(Map {
        map: Arc::new(
            out.into_iter()
                .map(|(k, v)| (k, Value::List(Arc::new(v))))
                .collect(),
        ),
    }))
}

overload!(url, url_imp);
overload!(is_url, is_url_imp);
overload!(get_scheme, get_scheme_imp);
overload!(get_host, get_host_imp);
overload!(get_hostname, get_hostname_imp);
overload!(get_port, get_port_imp);
overload!(get_escaped_path, get_escaped_path_imp);
overload!(get_query, get_query_imp);

// ---- quantities --------------------------------------------------------------------------

/// A resource quantity, exactly, in nano units.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Quantity(i128);

impl Opaque for Quantity {
    fn runtime_type_name(&self) -> &str {
        QUANTITY_TYPE
    }
}

const NANO: i128 = 1_000_000_000;

/// Parses the Kubernetes quantity syntax (`500m`, `1Gi`, `2e3`) with the one parser opkit has,
/// `opkit_apimachinery::quantity`.
fn parse_quantity(s: &str) -> Option<Quantity> {
    opkit_apimachinery::quantity::Quantity::parse(s).map(|q| Quantity(q.0))
}

fn as_quantity(o: &Arc<dyn Opaque>) -> Option<Quantity> {
    o.downcast_ref::<Quantity>().copied()
}

fn q_arg(v: &Value, f: &str) -> Result<Quantity, ExecutionError> {
    match v {
        Value::Opaque(o) => as_quantity(o).ok_or_else(|| err(f, "not a quantity")),
        Value::Int(i) => Ok(Quantity(i128::from(*i) * NANO)),
        _ => Err(err(f, "not a quantity")),
    }
}

fn quantity_imp(a: &[Value]) -> Res {
    let s = str_arg(&a[0], "quantity")?;
    parse_quantity(s)
        .map(|q| Value::Opaque(Arc::new(q)))
        .ok_or_else(|| err("quantity", "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"))
}
fn is_quantity_imp(a: &[Value]) -> Res {
    Ok(Value::Bool(
        parse_quantity(str_arg(&a[0], "isQuantity")?).is_some(),
    ))
}
fn q_is_integer_imp(a: &[Value]) -> Res {
    let q = q_arg(&a[0], "isInteger")?;
    Ok(Value::Bool(
        q.0 % NANO == 0 && i64::try_from(q.0 / NANO).is_ok(),
    ))
}
fn q_as_integer_imp(a: &[Value]) -> Res {
    let q = q_arg(&a[0], "asInteger")?;
    if q.0 % NANO != 0 {
        return Err(err("asInteger", "cannot convert value to integer"));
    }
    i64::try_from(q.0 / NANO)
        .map(Value::Int)
        .map_err(|_| err("asInteger", "cannot convert value to integer"))
}
fn q_as_float_imp(a: &[Value]) -> Res {
    Ok(Value::Float(
        q_arg(&a[0], "asApproximateFloat")?.0 as f64 / NANO as f64,
    ))
}
fn q_sign_imp(a: &[Value]) -> Res {
    Ok(Value::Int(q_arg(&a[0], "sign")?.0.signum() as i64))
}
fn q_add_imp(a: &[Value]) -> Res {
    let (x, y) = (q_arg(&a[0], "add")?, q_arg(&a[1], "add")?);
    let v = x.0.checked_add(y.0).ok_or_else(|| err("add", "overflow"))?;
    Ok(Value::Opaque(Arc::new(Quantity(v))))
}
fn q_sub_imp(a: &[Value]) -> Res {
    let (x, y) = (q_arg(&a[0], "sub")?, q_arg(&a[1], "sub")?);
    let v = x.0.checked_sub(y.0).ok_or_else(|| err("sub", "overflow"))?;
    Ok(Value::Opaque(Arc::new(Quantity(v))))
}
fn q_gt_imp(a: &[Value]) -> Res {
    Ok(Value::Bool(
        q_arg(&a[0], "isGreaterThan")?.0 > q_arg(&a[1], "isGreaterThan")?.0,
    ))
}
fn q_lt_imp(a: &[Value]) -> Res {
    Ok(Value::Bool(
        q_arg(&a[0], "isLessThan")?.0 < q_arg(&a[1], "isLessThan")?.0,
    ))
}
fn q_compare_imp(a: &[Value]) -> Res {
    let o = q_arg(&a[0], "compareTo")?
        .0
        .cmp(&q_arg(&a[1], "compareTo")?.0);
    Ok(Value::Int(o as i64))
}

overload!(quantity, quantity_imp);
overload!(is_quantity, is_quantity_imp);
overload!(q_is_integer, q_is_integer_imp);
overload!(q_as_integer, q_as_integer_imp);
overload!(q_as_float, q_as_float_imp);
overload!(q_sign, q_sign_imp);
overload!(q_add, q_add_imp);
overload!(q_sub, q_sub_imp);
overload!(q_gt, q_gt_imp);
overload!(q_lt, q_lt_imp);
overload!(q_compare, q_compare_imp);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_parse_exactly() {
        assert_eq!(parse_quantity("1"), Some(Quantity(NANO)));
        assert_eq!(parse_quantity("500m"), Some(Quantity(NANO / 2)));
        assert_eq!(parse_quantity("1Ki"), Some(Quantity(1024 * NANO)));
        assert_eq!(parse_quantity("1.5G"), Some(Quantity(1_500_000_000 * NANO)));
        assert_eq!(parse_quantity("1e3"), Some(Quantity(1000 * NANO)));
        assert_eq!(parse_quantity("-2k"), Some(Quantity(-2000 * NANO)));
        assert_eq!(parse_quantity("abc"), None);
        assert_eq!(parse_quantity("1Zi"), None);
    }

    #[test]
    fn urls_parse_like_parse_request_uri() {
        let u = parse_url("https://user@example.com:8443/a/b?x=1&x=2&y").unwrap();
        assert_eq!(u.scheme, "https");
        assert_eq!(u.host, "example.com:8443");
        assert_eq!(split_host_port(&u.host), ("example.com", "8443"));
        assert_eq!(u.path, "/a/b");
        assert_eq!(split_host_port("[::1]:80"), ("::1", "80"));
        assert!(parse_url("/just/a/path").is_some());
        assert!(parse_url("not a url").is_none());
        assert!(parse_url("example.com").is_none());
    }
}
