//! Sprig's `duration` and `durationRound`: Go's `time.Duration` printing and
//! `time.ParseDuration`, with Sprig's type rules (`duration` takes a string or an `int64`
//! of seconds, anything else counts as 0; `durationRound` also takes a `time.Time`, the
//! time since it).

use super::Funcs;
use crate::ParamType::Any;
use crate::{Function, Value};

pub(super) fn register(m: &mut Funcs) {
    m.add(
        "duration",
        Function::new(&[Any], |a| {
            let secs = match &a[0] {
                Value::String(s) => super::conv::parse_int(s, 10).unwrap_or(0),
                Value::Int64(n) => *n,
                _ => 0,
            };
            Ok(Value::from(go_duration(secs.wrapping_mul(1_000_000_000))))
        }),
    );
    m.add(
        "durationRound",
        Function::new(&[Any], |a| {
            let d = match &a[0] {
                Value::String(s) => parse_duration(s).unwrap_or(0),
                Value::Int64(n) => *n,
                other => super::gotime::GoTime::of(other).map_or(0, |t| t.since()),
            };
            Ok(Value::from(round(d)))
        }),
    );
}

/// Go's `Duration.String` of `d` nanoseconds: `1h2m3.5s`, `1.5ms`, `0s`.
pub(crate) fn go_duration(d: i64) -> String {
    let neg = d < 0;
    let mut u = d.unsigned_abs();
    let mut out = String::new();
    if u < 1_000_000_000 {
        let (prec, unit) = match u {
            0 => return "0s".into(),
            1..=999 => (0, "ns"),
            1_000..=999_999 => (3, "µs"),
            _ => (6, "ms"),
        };
        let (frac, rest) = frac(u, prec);
        out = format!("{rest}{frac}{unit}");
    } else {
        let (frac, rest) = frac(u, 9);
        u = rest;
        let secs = u % 60;
        u /= 60;
        let mut s = format!("{secs}{frac}s");
        if u > 0 {
            s = format!("{}m{s}", u % 60);
            u /= 60;
            if u > 0 {
                s = format!("{u}h{s}");
            }
        }
        out.push_str(&s);
    }
    if neg {
        out.insert(0, '-');
    }
    out
}

/// Go's `fmtFrac`: the `prec` low digits of `v` as `.ddd` without trailing zeros, and `v`
/// without them.
fn frac(mut v: u64, prec: u32) -> (String, u64) {
    let mut digits = Vec::new();
    let mut print = false;
    for _ in 0..prec {
        let digit = v % 10;
        print = print || digit != 0;
        if print {
            digits.push(char::from(b'0' + digit as u8));
        }
        v /= 10;
    }
    if !print {
        return (String::new(), v);
    }
    digits.push('.');
    (digits.into_iter().rev().collect(), v)
}

/// Sprig's `durationRound`: the largest whole unit (`y`=365d, `mo`=30d, `d`, `h`, `m`, `s`).
fn round(d: i64) -> String {
    let u = d.unsigned_abs();
    const S: u64 = 1_000_000_000;
    for (unit, size) in [
        ("y", S * 3600 * 24 * 365),
        ("mo", S * 3600 * 24 * 30),
        ("d", S * 3600 * 24),
        ("h", S * 3600),
        ("m", S * 60),
        ("s", S),
    ] {
        if u > size {
            return format!("{}{unit}", u / size);
        }
    }
    "0s".into()
}

/// Go's `time.ParseDuration`: `[-+]` then one or more `NUMBER[.FRACTION]UNIT`, with Go's
/// error texts (`time: invalid duration "x"`, `time: missing unit in duration "1"`,
/// `time: unknown unit "d" in duration "1d"`).
pub(crate) fn parse_duration(orig: &str) -> Result<i64, String> {
    let quote = super::golayout::quote;
    let invalid = || format!("time: invalid duration {}", quote(orig));
    let (neg, mut rest) = match orig.as_bytes().first() {
        Some(b'-') => (true, &orig[1..]),
        Some(b'+') => (false, &orig[1..]),
        _ => (false, orig),
    };
    if rest == "0" {
        return Ok(0);
    }
    if rest.is_empty() {
        return Err(invalid());
    }
    let mut total: u64 = 0;
    while !rest.is_empty() {
        if !rest.starts_with(|c: char| c == '.' || c.is_ascii_digit()) {
            return Err(invalid());
        }
        let int_len = rest.bytes().take_while(u8::is_ascii_digit).count();
        let int_part = &rest[..int_len];
        rest = &rest[int_len..];
        let mut frac_part = "";
        let mut post = false;
        if let Some(r) = rest.strip_prefix('.') {
            let n = r.bytes().take_while(u8::is_ascii_digit).count();
            frac_part = &r[..n];
            post = n > 0;
            rest = &r[n..];
        }
        if int_part.is_empty() && !post {
            return Err(invalid());
        }
        let unit_len = rest
            .char_indices()
            .find(|(_, c)| *c == '.' || c.is_ascii_digit())
            .map_or(rest.len(), |(i, _)| i);
        if unit_len == 0 {
            return Err(format!("time: missing unit in duration {}", quote(orig)));
        }
        let unit_text = &rest[..unit_len];
        let unit: u64 = match unit_text {
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            _ => {
                return Err(format!(
                    "time: unknown unit {} in duration {}",
                    quote(unit_text),
                    quote(orig)
                ));
            }
        };
        rest = &rest[unit_len..];
        let whole: u64 = if int_part.is_empty() {
            0
        } else {
            int_part
                .parse()
                .ok()
                .filter(|v| *v <= 1 << 63)
                .ok_or_else(invalid)?
        };
        if whole > (1u64 << 63) / unit {
            return Err(invalid());
        }
        let mut v = whole * unit;
        let (mut f, mut scale) = (0u64, 1f64);
        for d in frac_part.bytes() {
            match f.checked_mul(10).map(|x| x + u64::from(d - b'0')) {
                Some(y) if f <= (i64::MAX as u64) / 10 && y <= 1 << 63 => {
                    f = y;
                    scale *= 10.0;
                }
                _ => break,
            }
        }
        if f > 0 {
            v = v.saturating_add((f as f64 * (unit as f64 / scale)) as u64);
            if v > 1 << 63 {
                return Err(invalid());
            }
        }
        total = total.saturating_add(v);
        if total > 1 << 63 {
            return Err(invalid());
        }
    }
    if neg {
        Ok((total as i64).wrapping_neg())
    } else {
        i64::try_from(total).map_err(|_| invalid())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_print_as_go() {
        assert_eq!(go_duration(0), "0s");
        assert_eq!(go_duration(3_723_000_000_000), "1h2m3s");
        assert_eq!(go_duration(1_500_000), "1.5ms");
        assert_eq!(go_duration(-90_000_000_000), "-1m30s");
        assert_eq!(go_duration(2_000), "2µs");
    }

    #[test]
    fn durations_parse_as_go() {
        assert_eq!(parse_duration("1h30m"), Ok(5_400_000_000_000));
        assert_eq!(parse_duration("1.5s"), Ok(1_500_000_000));
        assert_eq!(parse_duration("-2ms"), Ok(-2_000_000));
        assert_eq!(
            parse_duration("3"),
            Err(r#"time: missing unit in duration "3""#.into())
        );
        assert_eq!(
            parse_duration("1d"),
            Err(r#"time: unknown unit "d" in duration "1d""#.into())
        );
        assert_eq!(
            parse_duration(""),
            Err(r#"time: invalid duration """#.into())
        );
        assert_eq!(parse_duration("0"), Ok(0));
    }
}
