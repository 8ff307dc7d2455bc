//! go-yaml v2's implicit typing of plain scalars (YAML 1.1: `yes`/`on` are booleans, `~`
//! is null, `0x1F` an int, `2001-12-14` a timestamp). The reader uses it to type what it
//! reads; the writer uses it to decide which strings need quotes so they read back as
//! strings.

use crate::sprig::{parse_float, parse_int};

/// What a plain scalar resolves to.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Resolved {
    Null,
    Bool(bool),
    Int(i64),
    Uint(u64),
    Float(f64),
    /// A timestamp: go-yaml keeps the text when decoding into `interface{}`.
    Timestamp,
    /// The merge key `<<`.
    Merge,
    Str,
}

/// go-yaml v2's `resolve("", in)`: the type a plain scalar's text reads as.
pub(crate) fn resolve(input: &str) -> Resolved {
    let hint = match input.as_bytes().first() {
        None => return Resolved::Null,
        Some(b'+' | b'-') => 'S',
        Some(b'0'..=b'9') => 'D',
        Some(b'y' | b'Y' | b'n' | b'N' | b't' | b'T' | b'f' | b'F' | b'o' | b'O' | b'~') => 'M',
        Some(b'.') => '.',
        Some(b'<') => 'M',
        Some(_) => return Resolved::Str,
    };
    if let Some(r) = resolve_map(input) {
        return r;
    }
    match hint {
        '.' => match go_parse_float(input) {
            Some(f) => Resolved::Float(f),
            None => Resolved::Str,
        },
        'D' | 'S' => resolve_number(input),
        _ => Resolved::Str,
    }
}

/// The fixed words of YAML 1.1 that go-yaml knows.
fn resolve_map(s: &str) -> Option<Resolved> {
    Some(match s {
        "y" | "Y" | "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => {
            Resolved::Bool(true)
        }
        "n" | "N" | "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => {
            Resolved::Bool(false)
        }
        "~" | "null" | "Null" | "NULL" => Resolved::Null,
        ".nan" | ".NaN" | ".NAN" => Resolved::Float(f64::NAN),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => Resolved::Float(f64::INFINITY),
        "-.inf" | "-.Inf" | "-.INF" => Resolved::Float(f64::NEG_INFINITY),
        "<<" => Resolved::Merge,
        _ => return None,
    })
}

fn resolve_number(input: &str) -> Resolved {
    if parse_timestamp(input) {
        return Resolved::Timestamp;
    }
    let plain = input.replace('_', "");
    if let Some(i) = parse_int(&plain, 0) {
        return Resolved::Int(i);
    }
    if let Some(u) = parse_uint0(&plain) {
        return Resolved::Uint(u);
    }
    if yaml_style_float(&plain)
        && let Some(f) = go_parse_float(&plain)
    {
        return Resolved::Float(f);
    }
    if let Some(bin) = plain.strip_prefix("-0b")
        && let Ok(v) = i64::from_str_radix(bin, 2)
        && !bin.starts_with(['+', '-'])
    {
        return Resolved::Int(-v);
    }
    Resolved::Str
}

/// `strconv.ParseUint(s, 0, 64)` (no sign; prefixes as in `ParseInt`).
fn parse_uint0(s: &str) -> Option<u64> {
    if s.starts_with(['+', '-']) {
        return None;
    }
    let lower = s.to_ascii_lowercase();
    let (radix, digits) = if let Some(d) = lower.strip_prefix("0x") {
        (16, d)
    } else if let Some(d) = lower.strip_prefix("0o") {
        (8, d)
    } else if let Some(d) = lower.strip_prefix("0b") {
        (2, d)
    } else if lower.len() > 1 && lower.starts_with('0') {
        (8, &lower[1..])
    } else {
        (10, lower.as_str())
    };
    if digits.is_empty() || digits.starts_with(['+', '-']) {
        return None;
    }
    u64::from_str_radix(digits, radix).ok()
}

/// `strconv.ParseFloat(s, 64)` with Go's range rule: an overflow is an error, not ±Inf.
fn go_parse_float(s: &str) -> Option<f64> {
    let f = parse_float(s)?;
    let lower = s.to_ascii_lowercase();
    if f.is_infinite() && !lower.contains("inf") {
        return None;
    }
    Some(f)
}

/// go-yaml's `yamlStyleFloat`: `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`.
fn yaml_style_float(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = usize::from(matches!(b.first(), Some(b'+' | b'-')));
    let digits = |i: &mut usize| {
        let start = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        *i - start
    };
    if b.get(i) == Some(&b'.') {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    } else {
        if digits(&mut i) == 0 {
            return false;
        }
        if b.get(i) == Some(&b'.') {
            i += 1;
            digits(&mut i);
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

/// go-yaml's `isBase60Float`: `1:20` and the like, which YAML 1.1 readers take as numbers,
/// so the writer quotes them although go-yaml itself reads them as strings.
pub(crate) fn is_base60_float(s: &str) -> bool {
    let b = s.as_bytes();
    let Some(&c) = b.first() else {
        return false;
    };
    if !(c == b'+' || c == b'-' || c.is_ascii_digit()) || !s.contains(':') {
        return false;
    }
    // ^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$
    let mut i = usize::from(c == b'+' || c == b'-');
    if !b.get(i).is_some_and(u8::is_ascii_digit) {
        return false;
    }
    while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'_') {
        i += 1;
    }
    let mut groups = 0;
    while b.get(i) == Some(&b':') {
        i += 1;
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() && i - start < 2 {
            i += 1;
        }
        match i - start {
            1 => {}
            2 if b[start] <= b'5' => {}
            _ => return false,
        }
        groups += 1;
    }
    if groups == 0 {
        return false;
    }
    if b.get(i) == Some(&b'.') {
        i += 1;
        while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'_') {
            i += 1;
        }
    }
    i == b.len()
}

/// Whether go-yaml's `parseTimestamp` accepts `s` (Go's `time.Parse` with the layouts
/// `2006-1-2T15:4:5.999999999Z07:00` (also with `t`), `2006-1-2 15:4:5.999999999` and
/// `2006-1-2`).
pub(crate) fn parse_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() < 5 || !b[..4].iter().all(u8::is_ascii_digit) || b[4] != b'-' {
        return false;
    }
    let mut i = 5;
    let Some(month) = num(b, &mut i) else {
        return false;
    };
    if !(1..=12).contains(&month) || b.get(i) != Some(&b'-') {
        return false;
    }
    i += 1;
    let Some(day) = num(b, &mut i) else {
        return false;
    };
    let year: u32 = s[..4].parse().unwrap_or(0);
    if day < 1 || day > days_in(month, year) {
        return false;
    }
    if i == b.len() {
        return true;
    }
    let zoned = match b[i] {
        b'T' | b't' => true,
        b' ' => false,
        _ => return false,
    };
    i += 1;
    let Some(hour) = num(b, &mut i) else {
        return false;
    };
    if hour >= 24 || b.get(i) != Some(&b':') {
        return false;
    }
    i += 1;
    let Some(min) = num(b, &mut i) else {
        return false;
    };
    if min >= 60 || b.get(i) != Some(&b':') {
        return false;
    }
    i += 1;
    let Some(sec) = num(b, &mut i) else {
        return false;
    };
    if sec >= 60 {
        return false;
    }
    if matches!(b.get(i), Some(b'.' | b',')) && b.get(i + 1).is_some_and(u8::is_ascii_digit) {
        i += 1;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
    }
    if !zoned {
        return i == b.len();
    }
    match &b[i..] {
        [b'Z'] => true,
        [b'+' | b'-', h1, h2, b':', m1, m2] => {
            let digits = [h1, h2, m1, m2].iter().all(|d| d.is_ascii_digit());
            let hh = (h1 - b'0') * 10 + (h2.wrapping_sub(b'0'));
            let mm = (m1 - b'0') * 10 + (m2.wrapping_sub(b'0'));
            digits && hh <= 24 && mm <= 60
        }
        _ => false,
    }
}

/// Go's `getnum(value, false)`: one or two digits.
fn num(b: &[u8], i: &mut usize) -> Option<u32> {
    let d0 = *b.get(*i).filter(|c| c.is_ascii_digit())?;
    *i += 1;
    match b.get(*i) {
        Some(d1) if d1.is_ascii_digit() => {
            *i += 1;
            Some(u32::from(d0 - b'0') * 10 + u32::from(d1 - b'0'))
        }
        _ => Some(u32::from(d0 - b'0')),
    }
}

fn days_in(month: u32, year: u32) -> u32 {
    match month {
        2 if year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400)) => {
            29
        }
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_1_1_words_resolve_like_go_yaml_v2() {
        assert_eq!(resolve("yes"), Resolved::Bool(true));
        assert_eq!(resolve("Off"), Resolved::Bool(false));
        assert_eq!(resolve("~"), Resolved::Null);
        assert_eq!(resolve(""), Resolved::Null);
        assert_eq!(resolve("yess"), Resolved::Str);
        assert_eq!(resolve("<<"), Resolved::Merge);
    }

    #[test]
    fn numbers_resolve_with_go_parse_rules() {
        assert_eq!(resolve("0x1F"), Resolved::Int(31));
        assert_eq!(resolve("1_000"), Resolved::Int(1000));
        assert_eq!(resolve("010"), Resolved::Int(8));
        assert_eq!(resolve("08"), Resolved::Float(8.0));
        assert_eq!(resolve("+1"), Resolved::Int(1));
        assert_eq!(resolve(".5"), Resolved::Float(0.5));
        assert_eq!(resolve("1e3"), Resolved::Float(1000.0));
        assert_eq!(resolve("1e400"), Resolved::Str);
        assert_eq!(resolve("18446744073709551615"), Resolved::Uint(u64::MAX));
        assert_eq!(resolve("1.2.3"), Resolved::Str);
        assert_eq!(resolve("-"), Resolved::Str);
        assert_eq!(resolve("0b101"), Resolved::Int(5));
    }

    #[test]
    fn timestamps_and_base60_are_recognised() {
        assert_eq!(resolve("2001-12-14"), Resolved::Timestamp);
        assert_eq!(resolve("2001-12-14T21:59:43.10Z"), Resolved::Timestamp);
        assert_eq!(resolve("2001-12-14 21:59:43.10"), Resolved::Timestamp);
        assert_eq!(resolve("2001-02-30"), Resolved::Str);
        assert_eq!(resolve("2001-12-14 21:59:43 -5"), Resolved::Str);
        assert!(is_base60_float("1:20"));
        assert!(is_base60_float("190:20:30.15"));
        assert!(!is_base60_float("1:70"));
        assert!(!is_base60_float("a:1"));
    }
}
