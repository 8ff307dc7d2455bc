//! Field errors with the exact text Kubernetes prints.
//!
//! kubectl shows the `message` of a `Status` verbatim, and users (and conformance-style tests)
//! match on it, so this module reproduces apimachinery's `field.Error` rendering byte for byte:
//! the `"<field>: <Type>: <value>: <detail>"` layout, Go's `%v` for numbers, Go's `%q` for strings
//! and Go's `encoding/json` for compound values.

use std::fmt;

use serde_json::Value;

/// The kind of a [`FieldError`]; one-to-one with the `Status` cause types of Kubernetes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FieldErrorKind {
    /// A malformed value (`FieldValueInvalid`).
    Invalid,
    /// A missing value (`FieldValueRequired`).
    Required,
    /// A value outside an enumeration (`FieldValueNotSupported`).
    NotSupported,
    /// A repeated value where values must be unique (`FieldValueDuplicate`).
    Duplicate,
    /// A too long string (`FieldValueTooLong`).
    TooLong,
    /// A list or map with too many entries (`FieldValueTooMany`).
    TooMany,
    /// A value that is not allowed here (`FieldValueForbidden`).
    Forbidden,
    /// A value of the wrong JSON type (`FieldValueTypeInvalid`).
    TypeInvalid,
}

impl FieldErrorKind {
    /// The `Status` cause `reason`, e.g. `FieldValueInvalid`.
    pub fn reason(self) -> &'static str {
        match self {
            FieldErrorKind::Invalid => "FieldValueInvalid",
            FieldErrorKind::Required => "FieldValueRequired",
            FieldErrorKind::NotSupported => "FieldValueNotSupported",
            FieldErrorKind::Duplicate => "FieldValueDuplicate",
            FieldErrorKind::TooLong => "FieldValueTooLong",
            FieldErrorKind::TooMany => "FieldValueTooMany",
            FieldErrorKind::Forbidden => "FieldValueForbidden",
            FieldErrorKind::TypeInvalid => "FieldValueTypeInvalid",
        }
    }

    /// The human-readable type text used in messages, e.g. `Invalid value`.
    pub fn text(self) -> &'static str {
        match self {
            FieldErrorKind::Invalid | FieldErrorKind::TypeInvalid => "Invalid value",
            FieldErrorKind::Required => "Required value",
            FieldErrorKind::NotSupported => "Unsupported value",
            FieldErrorKind::Duplicate => "Duplicate value",
            FieldErrorKind::TooLong => "Too long",
            FieldErrorKind::TooMany => "Too many",
            FieldErrorKind::Forbidden => "Forbidden",
        }
    }
}

/// One field-level error, rendered like apimachinery's `field.Error`.
///
/// `Display` gives the upstream text, e.g.
/// `spec.number: Invalid value: 11: spec.number in body should be less than or equal to 10`.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldError {
    /// What went wrong.
    pub kind: FieldErrorKind,
    /// The field path, e.g. `spec.number` or `spec.versions[0].schema.openAPIV3Schema.type`.
    /// Errors upstream reports without a path render it as `<nil>`, as Kubernetes does.
    pub field: String,
    /// The offending value, if the error shows one (`None` renders no value).
    pub value: Option<Value>,
    /// The detail text after the value.
    pub detail: String,
}

impl FieldError {
    /// A `FieldValueInvalid` error.
    pub fn invalid(field: impl Into<String>, value: Value, detail: impl Into<String>) -> Self {
        FieldError {
            kind: FieldErrorKind::Invalid,
            field: field.into(),
            value: Some(value),
            detail: detail.into(),
        }
    }

    /// A `FieldValueTypeInvalid` error.
    pub fn type_invalid(field: impl Into<String>, value: Value, detail: impl Into<String>) -> Self {
        FieldError {
            kind: FieldErrorKind::TypeInvalid,
            field: field.into(),
            value: Some(value),
            detail: detail.into(),
        }
    }

    /// A `FieldValueRequired` error.
    pub fn required(field: impl Into<String>, detail: impl Into<String>) -> Self {
        FieldError {
            kind: FieldErrorKind::Required,
            field: field.into(),
            value: None,
            detail: detail.into(),
        }
    }

    /// A `FieldValueForbidden` error.
    pub fn forbidden(field: impl Into<String>, detail: impl Into<String>) -> Self {
        FieldError {
            kind: FieldErrorKind::Forbidden,
            field: field.into(),
            value: None,
            detail: detail.into(),
        }
    }

    /// A `FieldValueDuplicate` error.
    pub fn duplicate(field: impl Into<String>, value: Value) -> Self {
        FieldError {
            kind: FieldErrorKind::Duplicate,
            field: field.into(),
            value: Some(value),
            detail: String::new(),
        }
    }

    /// A `FieldValueNotSupported` error listing the supported values (each rendered with Go's
    /// `%q`, as `field.NotSupported` does).
    pub fn not_supported<S: AsRef<str>>(
        field: impl Into<String>,
        value: Value,
        supported: &[S],
    ) -> Self {
        let detail = if supported.is_empty() {
            String::new()
        } else {
            let quoted: Vec<String> = supported.iter().map(|s| go_quote(s.as_ref())).collect();
            format!("supported values: {}", quoted.join(", "))
        };
        FieldError {
            kind: FieldErrorKind::NotSupported,
            field: field.into(),
            value: Some(value),
            detail,
        }
    }

    /// A `FieldValueTooLong` error (`may not be more than N bytes`, as `field.TooLong`).
    pub fn too_long(field: impl Into<String>, max: i64) -> Self {
        let detail = if max >= 0 {
            format!(
                "may not be more than {} {}",
                max,
                if max == 1 { "byte" } else { "bytes" }
            )
        } else {
            "value is too long".to_string()
        };
        FieldError {
            kind: FieldErrorKind::TooLong,
            field: field.into(),
            value: None,
            detail,
        }
    }

    /// A `FieldValueTooMany` error (`must have at most N items`, as `field.TooMany`).
    pub fn too_many(field: impl Into<String>, actual: i64, max: i64) -> Self {
        let detail = if max >= 0 {
            format!(
                "must have at most {} {}",
                max,
                if max == 1 { "item" } else { "items" }
            )
        } else {
            "has too many items".to_string()
        };
        FieldError {
            kind: FieldErrorKind::TooMany,
            field: field.into(),
            value: if actual >= 0 {
                Some(Value::from(actual))
            } else {
                None
            },
            detail,
        }
    }

    /// The `Status` cause `reason` of this error, e.g. `FieldValueInvalid`.
    pub fn reason(&self) -> &'static str {
        self.kind.reason()
    }

    /// The message without the leading field path (apimachinery's `ErrorBody`).
    pub fn body(&self) -> String {
        let mut s = String::from(self.kind.text());
        match self.kind {
            FieldErrorKind::Required | FieldErrorKind::Forbidden | FieldErrorKind::TooLong => {}
            _ => {
                if let Some(v) = &self.value {
                    s.push_str(": ");
                    s.push_str(&go_value(v));
                }
            }
        }
        if !self.detail.is_empty() {
            s.push_str(": ");
            s.push_str(&self.detail);
        }
        s
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.body())
    }
}

impl std::error::Error for FieldError {}

/// Renders a bad value the way `field.Error.ErrorBody` does: numbers and booleans with `%v`,
/// strings with `%q`, everything else as Go's `json.Marshal` output.
pub fn go_value(v: &Value) -> String {
    match v {
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => go_number_v(n),
        Value::String(s) => go_quote(s),
        _ => go_json(v),
    }
}

/// Go's `%v` of a JSON number as decoded by Kubernetes (`int64` when integral and in range,
/// otherwise `float64`).
pub(crate) fn go_number_v(n: &serde_json::Number) -> String {
    if let Some(i) = n.as_i64() {
        i.to_string()
    } else {
        go_float_v(n.as_f64().unwrap_or(0.0))
    }
}

/// Splits a finite, non-zero float into its shortest round-trip decimal digits and the decimal
/// exponent of the first digit.
fn float_digits(f: f64) -> (String, i32) {
    // `{:e}` prints the shortest round-trip representation, e.g. `1.2345e6` or `-5e-7`.
    let s = format!("{:e}", f.abs());
    let (mant, exp) = s.split_once('e').unwrap_or((s.as_str(), "0"));
    let digits: String = mant.chars().filter(|c| c.is_ascii_digit()).collect();
    let exp: i32 = exp.parse().unwrap_or(0);
    (digits, exp)
}

fn fixed_from_digits(digits: &str, exp: i32) -> String {
    let mut out = String::new();
    if exp < 0 {
        out.push_str("0.");
        for _ in 0..(-exp - 1) {
            out.push('0');
        }
        out.push_str(digits);
    } else {
        let int_len = (exp + 1) as usize;
        if digits.len() <= int_len {
            out.push_str(digits);
            for _ in digits.len()..int_len {
                out.push('0');
            }
        } else {
            out.push_str(&digits[..int_len]);
            out.push('.');
            out.push_str(&digits[int_len..]);
        }
    }
    out
}

fn sci_from_digits(digits: &str, exp: i32, min_exp_digits: usize) -> String {
    let mut out = String::new();
    out.push_str(&digits[..1]);
    if digits.len() > 1 {
        out.push('.');
        out.push_str(&digits[1..]);
    }
    out.push('e');
    out.push(if exp < 0 { '-' } else { '+' });
    let e = exp.unsigned_abs().to_string();
    for _ in e.len()..min_exp_digits {
        out.push('0');
    }
    out.push_str(&e);
    out
}

/// Go's `fmt` `%v` of a `float64`: `%g` with the shortest digits, in exponent form below 1e-4
/// and from 1e6 on (hence `1e+06`).
pub(crate) fn go_float_v(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        };
    }
    if f == 0.0 {
        return if f.is_sign_negative() {
            "-0".into()
        } else {
            "0".into()
        };
    }
    let (digits, exp) = float_digits(f);
    let body = if !(-4..6).contains(&exp) {
        sci_from_digits(&digits, exp, 2)
    } else {
        fixed_from_digits(&digits, exp)
    };
    if f < 0.0 { format!("-{body}") } else { body }
}

/// Go's `strconv.FormatFloat(f, 'f', -1, 64)`.
pub(crate) fn go_float_f(f: f64) -> String {
    if !f.is_finite() {
        return go_float_v(f);
    }
    if f == 0.0 {
        return if f.is_sign_negative() {
            "-0".into()
        } else {
            "0".into()
        };
    }
    let (digits, exp) = float_digits(f);
    let body = fixed_from_digits(&digits, exp);
    if f < 0.0 { format!("-{body}") } else { body }
}

/// Go's `encoding/json` rendering of a `float64`.
fn go_float_json(f: f64) -> String {
    if !f.is_finite() {
        return "null".into();
    }
    if f == 0.0 {
        return if f.is_sign_negative() {
            "-0".into()
        } else {
            "0".into()
        };
    }
    let abs = f.abs();
    if !(1e-6..1e21).contains(&abs) {
        let (digits, exp) = float_digits(f);
        // Go prints e.g. 1e-07 via strconv and then shortens it to 1e-7.
        let body = sci_from_digits(&digits, exp, 1);
        if f < 0.0 { format!("-{body}") } else { body }
    } else {
        go_float_f(f)
    }
}

pub use opkit_apimachinery::go_quote;

/// Go's `json.Marshal` of a decoded JSON value: sorted object keys, HTML-safe escaping and
/// Go's float formatting.
pub fn go_json(v: &Value) -> String {
    let mut out = String::new();
    write_go_json(v, &mut out, 0);
    out
}

const MAX_JSON_DEPTH: usize = 512;

fn write_go_json(v: &Value, out: &mut String, depth: usize) {
    if depth > MAX_JSON_DEPTH {
        out.push_str("null");
        return;
    }
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                out.push_str(&i.to_string());
            } else {
                out.push_str(&go_float_json(n.as_f64().unwrap_or(0.0)));
            }
        }
        Value::String(s) => write_go_json_string(s, out),
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_go_json(x, out, depth + 1);
            }
            out.push(']');
        }
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_go_json_string(k, out);
                out.push(':');
                write_go_json(&m[k.as_str()], out, depth + 1);
            }
            out.push('}');
        }
    }
}

fn write_go_json_string(s: &str, out: &mut String) {
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
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                out.push_str(&format!("\\u{:04x}", c as u32))
            }
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
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
    fn go_float_v_matches_go_fmt() {
        assert_eq!(go_float_v(10.0), "10");
        assert_eq!(go_float_v(10.5), "10.5");
        assert_eq!(go_float_v(100000.0), "100000");
        assert_eq!(go_float_v(1000000.0), "1e+06");
        assert_eq!(go_float_v(123456789.0), "1.23456789e+08");
        assert_eq!(go_float_v(0.0001), "0.0001");
        assert_eq!(go_float_v(0.00001), "1e-05");
        assert_eq!(go_float_v(-2.5), "-2.5");
        assert_eq!(go_float_v(1e100), "1e+100");
    }

    #[test]
    fn go_float_f_and_json() {
        assert_eq!(go_float_f(1e20), "100000000000000000000");
        assert_eq!(go_float_f(1.5), "1.5");
        assert_eq!(go_json(&json!(1e21)), "1e+21");
        assert_eq!(go_json(&json!(1e-7)), "1e-7");
        assert_eq!(go_json(&json!(0.5)), "0.5");
    }

    #[test]
    fn go_quote_escapes_like_strconv() {
        assert_eq!(go_quote("a\"b\\c\n"), "\"a\\\"b\\\\c\\n\"");
        assert_eq!(go_quote("ü"), "\"ü\"");
        assert_eq!(go_quote("\u{1}"), "\"\\x01\"");
    }

    #[test]
    fn go_json_sorts_keys_and_escapes_html() {
        assert_eq!(
            go_json(&json!({"b": 1, "a": "<x>"})),
            r#"{"a":"\u003cx\u003e","b":1}"#
        );
    }

    #[test]
    fn display_of_each_kind() {
        assert_eq!(
            FieldError::required("spec.from", "").to_string(),
            "spec.from: Required value"
        );
        assert_eq!(
            FieldError::not_supported("spec.x", json!("c"), &["a", "b"]).to_string(),
            r#"spec.x: Unsupported value: "c": supported values: "a", "b""#
        );
        assert_eq!(
            FieldError::too_long("spec.x", 5).to_string(),
            "spec.x: Too long: may not be more than 5 bytes"
        );
        assert_eq!(
            FieldError::too_many("spec.x", 4, 3).to_string(),
            "spec.x: Too many: 4: must have at most 3 items"
        );
        assert_eq!(
            FieldError::duplicate("spec.x[1]", json!({"k": "a"})).to_string(),
            r#"spec.x[1]: Duplicate value: {"k":"a"}"#
        );
        assert_eq!(
            FieldError::forbidden("a", "no").to_string(),
            "a: Forbidden: no"
        );
        assert_eq!(
            FieldError::invalid("a", Value::Null, "bad").to_string(),
            "a: Invalid value: null: bad"
        );
        assert_eq!(
            FieldError::invalid("a", json!(true), "bad").reason(),
            "FieldValueInvalid"
        );
    }
}
