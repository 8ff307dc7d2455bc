//! Sprig's type conversions and integer/float math. Conversions follow `spf13/cast` v1.7
//! (the version Helm v4 builds Sprig with): unparsable input gives 0, strings are read with
//! Go's `strconv.ParseInt(s, 0, 64)` after dropping a zero fraction (`"3.0"` → 3).

use super::{Funcs, R, fail, n, s};
use crate::ParamType::{Any, Float64, Int, String as Str};
use crate::{Function, Value};

pub(super) fn register(m: &mut Funcs) {
    m.add(
        "atoi",
        Function::new(&[Str], |a| Ok(Value::Int(atoi(s(a, 0))))),
    );
    m.add(
        "int",
        Function::new(&[Any], |a| Ok(Value::Int(to_int64(&a[0])))),
    );
    m.add(
        "int64",
        Function::new(&[Any], |a| Ok(Value::Int64(to_int64(&a[0])))),
    );
    m.add(
        "float64",
        Function::new(&[Any], |a| Ok(Value::Float(to_float64(&a[0])))),
    );
    m.add(
        "toDecimal",
        Function::new(&[Any], |a| {
            let text = crate::gofmt::sprint_value(&a[0]);
            Ok(Value::Int64(parse_int(&text, 8).unwrap_or(0)))
        }),
    );
    m.add(
        "add1",
        Function::new(&[Any], |a| {
            Ok(Value::Int64(to_int64(&a[0]).wrapping_add(1)))
        }),
    );
    m.add(
        "add",
        Function::variadic(&[], Any, |a| {
            Ok(Value::Int64(
                a.iter().fold(0i64, |acc, v| acc.wrapping_add(to_int64(v))),
            ))
        }),
    );
    m.add(
        "sub",
        Function::new(&[Any, Any], |a| {
            Ok(Value::Int64(to_int64(&a[0]).wrapping_sub(to_int64(&a[1]))))
        }),
    );
    m.add(
        "mul",
        Function::variadic(&[Any], Any, |a| {
            Ok(Value::Int64(
                a[1..]
                    .iter()
                    .fold(to_int64(&a[0]), |acc, v| acc.wrapping_mul(to_int64(v))),
            ))
        }),
    );
    m.add(
        "div",
        Function::new(&[Any, Any], |a| int_div(a, i64::wrapping_div)),
    );
    m.add(
        "mod",
        Function::new(&[Any, Any], |a| int_div(a, i64::wrapping_rem)),
    );
    for name in ["max", "biggest"] {
        m.add(
            name,
            Function::variadic(&[Any], Any, |a| {
                Ok(Value::Int64(a.iter().map(to_int64).max().unwrap_or(0)))
            }),
        );
    }
    m.add(
        "min",
        Function::variadic(&[Any], Any, |a| {
            Ok(Value::Int64(a.iter().map(to_int64).min().unwrap_or(0)))
        }),
    );
    m.add(
        "maxf",
        Function::variadic(&[Any], Any, |a| {
            Ok(Value::Float(
                a[1..]
                    .iter()
                    .fold(to_float64(&a[0]), |x, v| go_max(x, to_float64(v))),
            ))
        }),
    );
    m.add(
        "minf",
        Function::variadic(&[Any], Any, |a| {
            Ok(Value::Float(
                a[1..]
                    .iter()
                    .fold(to_float64(&a[0]), |x, v| go_min(x, to_float64(v))),
            ))
        }),
    );
    m.add(
        "floor",
        Function::new(&[Any], |a| Ok(Value::Float(to_float64(&a[0]).floor()))),
    );
    m.add(
        "ceil",
        Function::new(&[Any], |a| Ok(Value::Float(to_float64(&a[0]).ceil()))),
    );
    m.add(
        "round",
        Function::variadic(&[Any, Int], Float64, |a| {
            let round_on = match a.get(2) {
                Some(Value::Float(f)) => *f,
                _ => 0.5,
            };
            Ok(Value::Float(round(to_float64(&a[0]), n(a, 1), round_on)))
        }),
    );
    m.add(
        "until",
        Function::new(&[Int], |a| {
            let c = n(a, 0);
            until_step(0, c, if c < 0 { -1 } else { 1 }).map(ints)
        }),
    );
    m.add(
        "untilStep",
        Function::new(&[Int, Int, Int], |a| {
            until_step(n(a, 0), n(a, 1), n(a, 2)).map(ints)
        }),
    );
    m.add("seq", Function::variadic(&[], Int, seq));
    m.add(
        "randInt",
        Function::new(&[Int, Int], |a| {
            let (lo, hi) = (n(a, 0), n(a, 1));
            if hi.wrapping_sub(lo) <= 0 {
                return fail("invalid argument to Intn");
            }
            Ok(Value::Int(rand::Rng::random_range(
                &mut rand::rng(),
                lo..hi,
            )))
        }),
    );
}

/// The most elements `until`, `untilStep` and `seq` generate (Go would try to allocate any
/// number and die).
const MAX_LIST: u128 = 1 << 24;

fn ints(v: Vec<i64>) -> Value {
    Value::list(v.into_iter().map(Value::Int).collect())
}

/// Go's float64 → int64 conversion (amd64: out of range and NaN give the minimum).
fn f2i(f: f64) -> i64 {
    if (-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&f) {
        f as i64
    } else {
        i64::MIN
    }
}

/// `cast.ToInt64`: numbers and bools convert, strings parse, anything else is 0.
pub(crate) fn to_int64(v: &Value) -> i64 {
    match &*v.plain() {
        Value::Int(i) | Value::Int64(i) => *i,
        Value::Float(f) => f2i(*f),
        Value::Bool(b) => i64::from(*b),
        Value::String(s) => parse_int(trim_zero_decimal(s), 0).unwrap_or(0),
        _ => 0,
    }
}

/// `cast.ToFloat64`.
pub(crate) fn to_float64(v: &Value) -> f64 {
    match &*v.plain() {
        Value::Int(i) | Value::Int64(i) => *i as f64,
        Value::Float(f) => *f,
        Value::Bool(b) => f64::from(u8::from(*b)),
        Value::String(s) => parse_float(s).unwrap_or(0.0),
        _ => 0.0,
    }
}

/// cast's `trimZeroDecimal` (cast 1.4+): `"3.00"` → `"3"`.
pub(crate) fn trim_zero_decimal(s: &str) -> &str {
    let b = s.as_bytes();
    let mut found_zero = false;
    for i in (1..=b.len()).rev() {
        match b[i - 1] {
            b'.' if found_zero => return &s[..i - 1],
            b'.' => {}
            b'0' => found_zero = true,
            _ => return s,
        }
    }
    s
}

/// Go's `strconv.ParseInt(s, base, 64)` for base 0 (prefixes `0x`, `0o`, `0b`, `0`, and
/// `_` separators) or a fixed base.
pub(crate) fn parse_int(s: &str, base: u32) -> Option<i64> {
    let (neg, body) = match s.as_bytes().first() {
        Some(b'+') => (false, &s[1..]),
        Some(b'-') => (true, &s[1..]),
        _ => (false, s),
    };
    let (radix, digits, base0) = if base == 0 {
        let lower = body.to_ascii_lowercase();
        if lower.starts_with("0x") {
            (16, &body[2..], true)
        } else if lower.starts_with("0o") {
            (8, &body[2..], true)
        } else if lower.starts_with("0b") {
            (2, &body[2..], true)
        } else if body.starts_with('0') && body.len() > 1 {
            (8, &body[1..], true)
        } else {
            (10, body, true)
        }
    } else {
        (base, body, false)
    };
    if digits.is_empty() {
        return None;
    }
    if digits.contains('_') && (!base0 || !crate::parse::underscore_ok(body)) {
        return None;
    }
    let clean: String = digits.chars().filter(|c| *c != '_').collect();
    if clean.is_empty() || clean.starts_with(['+', '-']) {
        return None;
    }
    let mag = u64::from_str_radix(&clean, radix).ok()?;
    if neg {
        if mag > 1u64 << 63 {
            return None;
        }
        Some((mag as i64).wrapping_neg())
    } else {
        i64::try_from(mag).ok()
    }
}

/// Go's `strconv.ParseFloat(s, 64)` for decimal input, `inf`/`infinity`/`nan`.
pub(crate) fn parse_float(s: &str) -> Option<f64> {
    let t = s.strip_prefix(['+', '-']).unwrap_or(s);
    if t.is_empty() || t.contains('_') {
        return None;
    }
    let lower = t.to_ascii_lowercase();
    if !(lower.starts_with(|c: char| c.is_ascii_digit() || c == '.')
        || lower == "inf"
        || lower == "infinity"
        || lower == "nan")
    {
        return None;
    }
    s.parse::<f64>().ok()
}

/// `strconv.Atoi`: base 10, 0 on failure (Sprig drops the error).
fn atoi(s: &str) -> i64 {
    let t = s.strip_prefix(['+', '-']).unwrap_or(s);
    if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
        return 0;
    }
    match s.parse::<i64>() {
        Ok(v) => v,
        // Out of range: Atoi returns the nearest bound with its error.
        Err(_) if s.starts_with('-') => i64::MIN,
        Err(_) => i64::MAX,
    }
}

fn int_div(a: &[Value], op: fn(i64, i64) -> i64) -> R {
    let d = to_int64(&a[1]);
    if d == 0 {
        return fail("runtime error: integer divide by zero");
    }
    Ok(Value::Int64(op(to_int64(&a[0]), d)))
}

/// Go's `math.Max` (NaN wins; +0 beats -0).
fn go_max(x: f64, y: f64) -> f64 {
    if x.is_nan() || y.is_nan() {
        return f64::NAN;
    }
    if x == 0.0 && y == 0.0 {
        return if x.is_sign_negative() { y } else { x };
    }
    if x > y { x } else { y }
}

/// Go's `math.Min` (NaN wins; -0 beats +0).
fn go_min(x: f64, y: f64) -> f64 {
    if x.is_nan() || y.is_nan() {
        return f64::NAN;
    }
    if x == 0.0 && y == 0.0 {
        return if x.is_sign_negative() { x } else { y };
    }
    if x < y { x } else { y }
}

/// Sprig's `round`: the fraction of `val × 10^places` decides against `round_on`.
fn round(val: f64, places: i64, round_on: f64) -> f64 {
    let pow = 10f64.powf(places as f64);
    let digit = pow * val;
    let frac = digit - digit.trunc();
    let r = if frac >= round_on {
        digit.ceil()
    } else {
        digit.floor()
    };
    r / pow
}

/// Sprig's `untilStep`: from `start` towards `stop` (exclusive) by `step`; a step that
/// goes the wrong way gives an empty list.
fn until_step(start: i64, stop: i64, step: i64) -> Result<Vec<i64>, crate::FuncError> {
    let mut v = Vec::new();
    if (stop < start && step >= 0) || (stop >= start && step <= 0) {
        return Ok(v);
    }
    let span = (i128::from(stop) - i128::from(start)).unsigned_abs();
    let count = span.div_ceil(i128::from(step).unsigned_abs());
    if count > MAX_LIST {
        return fail(format!(
            "list of {count} elements exceeds the {MAX_LIST} bound on generated data"
        ));
    }
    let mut i = start;
    while (step > 0 && i < stop) || (step < 0 && i > stop) {
        v.push(i);
        match i.checked_add(step) {
            Some(next) => i = next,
            None => break,
        }
    }
    Ok(v)
}

/// Sprig's `seq`, like the Unix command: `seq END`, `seq START END`, `seq START STEP END`.
fn seq(a: &[Value]) -> R {
    let p: Vec<i64> = (0..a.len()).map(|i| n(a, i)).collect();
    let list = match p[..] {
        [end] => {
            let inc = if end < 1 { -1 } else { 1 };
            until_step(1, end.wrapping_add(inc), inc)?
        }
        [start, end] => {
            let step = if end < start { -1 } else { 1 };
            until_step(start, end.wrapping_add(step), step)?
        }
        [start, step, end] => {
            let mut inc = 1;
            if end < start {
                inc = -1;
                if step > 0 {
                    return Ok(Value::from(""));
                }
            }
            until_step(start, end.wrapping_add(inc), step)?
        }
        _ => return Ok(Value::from("")),
    };
    let text: Vec<String> = list.iter().map(i64::to_string).collect();
    Ok(Value::from(text.join(" ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_int_follows_go_base_prefixes() {
        assert_eq!(parse_int("0x1F", 0), Some(31));
        assert_eq!(parse_int("017", 0), Some(15));
        assert_eq!(parse_int("1_000", 0), Some(1000));
        assert_eq!(parse_int("_1", 0), None);
        assert_eq!(parse_int("-9223372036854775808", 0), Some(i64::MIN));
        assert_eq!(parse_int("9223372036854775808", 0), None);
        assert_eq!(parse_int("08", 0), None);
        assert_eq!(parse_int("777", 8), Some(511));
    }

    #[test]
    fn casts_drop_zero_fractions_only() {
        assert_eq!(to_int64(&Value::from("3.00")), 3);
        assert_eq!(to_int64(&Value::from("3.5")), 0);
        assert_eq!(to_int64(&Value::Float(3.9)), 3);
        assert_eq!(to_float64(&Value::from("1e3")), 1000.0);
        assert_eq!(to_float64(&Value::from("x")), 0.0);
    }
}
