//! Go formatting rules that leak into the Kubernetes API surface.
//!
//! Upstream error messages quote values with Go's `%q`, table cells print
//! floats with Go's `%v`, and JSONPath cells holding objects are encoded with
//! Go's `encoding/json` (sorted keys, HTML-safe escapes). Clients compare
//! these strings, so we reproduce the rules here once instead of
//! approximating them at every call site.

use std::fmt::Write as _;

use serde_json::Value;

/// Quotes `s` like Go's `strconv.Quote` (`%q`): double quotes, backslash
/// escapes for control characters, printable characters kept as they are.
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if is_printable(c) => out.push(c),
            c if (c as u32) < 0x80 => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if (c as u32) < 0x10000 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => {
                let _ = write!(out, "\\U{:08x}", c as u32);
            }
        }
    }
    out.push('"');
    out
}

/// Approximates Go's `unicode.IsPrint`: graphic characters and the ASCII
/// space; other spaces, controls and invisible format characters are not.
fn is_printable(c: char) -> bool {
    if c == ' ' {
        return true;
    }
    if c.is_control() || c.is_whitespace() {
        return false;
    }
    !matches!(
        c,
        '\u{ad}'
            | '\u{600}'..='\u{605}'
            | '\u{61c}'
            | '\u{6dd}'
            | '\u{70f}'
            | '\u{180e}'
            | '\u{200b}'..='\u{200f}'
            | '\u{202a}'..='\u{202e}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{206f}'
            | '\u{feff}'
            | '\u{fff9}'..='\u{fffb}'
            | '\u{e000}'..='\u{f8ff}'
    )
}

/// The shortest round-trip decimal digits of a finite, non-zero `f`, and the
/// position of the decimal point relative to them (`0.d1d2… × 10^dp`).
fn shortest_digits(f: f64) -> (String, i32) {
    // `{:e}` prints the shortest round-trip representation: `d.ddde±x`.
    let s = format!("{:e}", f.abs());
    let (mantissa, exp) = s.split_once('e').unwrap_or((s.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(|c| c.is_ascii_digit()).collect();
    (digits, exp + 1)
}

fn push_exponent_form(out: &mut String, digits: &str, dp: i32, min_exp_digits: usize) {
    let mut chars = digits.chars();
    if let Some(first) = chars.next() {
        out.push(first);
    }
    let rest = chars.as_str();
    if !rest.is_empty() {
        out.push('.');
        out.push_str(rest);
    }
    let exp = dp - 1;
    out.push('e');
    out.push(if exp < 0 { '-' } else { '+' });
    let _ = write!(
        out,
        "{:0width$}",
        exp.unsigned_abs(),
        width = min_exp_digits
    );
}

fn push_fixed_form(out: &mut String, digits: &str, dp: i32) {
    let len = digits.len() as i32;
    if dp <= 0 {
        out.push_str("0.");
        for _ in 0..(-dp) {
            out.push('0');
        }
        out.push_str(digits);
    } else if dp >= len {
        out.push_str(digits);
        for _ in 0..(dp - len) {
            out.push('0');
        }
    } else {
        let (int, frac) = digits.split_at(dp as usize);
        out.push_str(int);
        out.push('.');
        out.push_str(frac);
    }
}

/// Formats a float like Go's `fmt.Sprint(f)` (`%v`, i.e. `%g` with the
/// shortest precision): `1.5`, `1e+06`, `1e-05`.
pub(crate) fn float_v(f: f64) -> String {
    if f.is_nan() {
        return "NaN".to_owned();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf" } else { "-Inf" }.to_owned();
    }
    let mut out = String::new();
    if f.is_sign_negative() {
        out.push('-');
    }
    if f == 0.0 {
        out.push('0');
        return out;
    }
    let (digits, dp) = shortest_digits(f);
    let exp = dp - 1;
    if !(-4..6).contains(&exp) {
        push_exponent_form(&mut out, &digits, dp, 2);
    } else {
        push_fixed_form(&mut out, &digits, dp);
    }
    out
}

/// Formats a float like Go's `encoding/json`: plain decimal unless the
/// magnitude is below 1e-6 or at least 1e21, then exponent form (`1e+21`,
/// `1e-7`).
pub(crate) fn float_json(f: f64) -> String {
    if !f.is_finite() {
        return "null".to_owned();
    }
    let mut out = String::new();
    if f.is_sign_negative() {
        out.push('-');
    }
    if f == 0.0 {
        out.push('0');
        return out;
    }
    let (digits, dp) = shortest_digits(f);
    let abs = f.abs();
    if !(1e-6..1e21).contains(&abs) {
        push_exponent_form(&mut out, &digits, dp, 2);
        // Go cleans `e-07` up into `e-7` (negative one-digit exponents only).
        let exp = dp - 1;
        if (-9..0).contains(&exp) {
            let zero_at = out.len() - 2;
            out.remove(zero_at);
        }
    } else {
        push_fixed_form(&mut out, &digits, dp);
    }
    out
}

/// Encodes `v` like Go's `json.Marshal` of the equivalent unstructured value:
/// compact, object keys sorted, `<`, `>`, `&`, U+2028 and U+2029 escaped.
pub fn json_encode(v: &Value) -> String {
    let mut out = String::new();
    encode_into(&mut out, v);
    out
}

/// The Go type of `v` as an unstructured value (`map[string]interface{}` with int64 and
/// float64 numbers), as `%T` and upstream's type errors name it: `int64`, `[]interface {}`…
pub fn go_type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float64",
        Value::Number(_) => "int64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

/// Prints `v` like Go's `fmt.Sprintf("%+v", x)` of the equivalent unstructured value
/// (`map[string]interface{}` with int64 and float64 numbers): `map[a:1 b:[x y]]`, keys sorted,
/// strings bare, `<nil>` for null. Upstream shows patches this way in some errors.
pub fn go_sprint(v: &Value) -> String {
    let mut out = String::new();
    sprint_into(&mut out, v);
    out
}

fn sprint_into(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("<nil>"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => match n.as_i64() {
            Some(i) => {
                let _ = write!(out, "{i}");
            }
            None => out.push_str(&float_v(n.as_f64().unwrap_or(0.0))),
        },
        Value::String(s) => out.push_str(s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                sprint_into(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push_str("map[");
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                out.push_str(key);
                out.push(':');
                if let Some(value) = map.get(key.as_str()) {
                    sprint_into(out, value);
                }
            }
            out.push(']');
        }
    }
}

fn encode_into(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                let _ = write!(out, "{i}");
            } else if let Some(u) = n.as_u64() {
                let _ = write!(out, "{u}");
            } else {
                out.push_str(&float_json(n.as_f64().unwrap_or(0.0)));
            }
        }
        Value::String(s) => encode_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                encode_into(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                encode_string(out, key);
                out.push(':');
                if let Some(value) = map.get(key.as_str()) {
                    encode_into(out, value);
                }
            }
            out.push('}');
        }
    }
}

fn encode_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
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
    use serde_json::json;

    #[test]
    fn sprint_prints_unstructured_values_as_go_does() {
        let v = json!({"spec": {"b": [1, "x", null], "a": 1.5, "c": true}, "big": 1e6, "k": {}});
        assert_eq!(
            go_sprint(&v),
            "map[big:1e+06 k:map[] spec:map[a:1.5 b:[1 x <nil>] c:true]]"
        );
    }

    #[test]
    fn quote_escapes_like_go() {
        assert_eq!(go_quote("abc"), "\"abc\"");
        assert_eq!(go_quote("a\"b\\c"), "\"a\\\"b\\\\c\"");
        assert_eq!(go_quote("tab\tnl\n"), "\"tab\\tnl\\n\"");
        assert_eq!(go_quote("\u{1}"), "\"\\x01\"");
        assert_eq!(go_quote("héllo"), "\"héllo\"");
        assert_eq!(go_quote("\u{a0}"), "\"\\u00a0\"");
    }

    #[test]
    fn float_v_matches_go_percent_v() {
        assert_eq!(float_v(1.5), "1.5");
        assert_eq!(float_v(3.0), "3");
        assert_eq!(float_v(123456.0), "123456");
        assert_eq!(float_v(1e6), "1e+06");
        assert_eq!(float_v(1234567.0), "1.234567e+06");
        assert_eq!(float_v(0.0001), "0.0001");
        assert_eq!(float_v(0.00001), "1e-05");
        assert_eq!(float_v(-2.5), "-2.5");
        assert_eq!(float_v(0.0), "0");
    }

    #[test]
    fn float_json_matches_go_encoding_json() {
        assert_eq!(float_json(1.5), "1.5");
        assert_eq!(float_json(3.0), "3");
        assert_eq!(float_json(1e20), "100000000000000000000");
        assert_eq!(float_json(1e21), "1e+21");
        assert_eq!(float_json(1.5e-7), "1.5e-7");
        assert_eq!(float_json(0.000001), "0.000001");
    }

    #[test]
    fn json_encode_sorts_keys_and_escapes_html() {
        let v = json!({"b": 1, "a": ["<x>", 2.5, true, null]});
        assert_eq!(
            json_encode(&v),
            r#"{"a":["\u003cx\u003e",2.5,true,null],"b":1}"#
        );
    }
}
