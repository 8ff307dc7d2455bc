//! Go's `json.Unmarshal` into `interface{}` (Sprig's `fromJson` and `mustFromJson`):
//! objects become maps, arrays lists, numbers `float64`, with Go's syntax error texts
//! (`invalid character 'x' looking for beginning of value`, `unexpected end of JSON
//! input`), lone surrogate escapes read as U+FFFD, and `json: cannot unmarshal number 1e400
//! into Go value of type float64` for numbers a `float64` cannot hold. As in Go, a syntax
//! error anywhere wins over a number out of range. Nesting deeper than 1000 levels fails
//! with Go's `exceeded max depth` (Go allows 10000: values that deep would overflow a
//! thread's stack when dropped); reading itself is iterative.

use std::collections::BTreeMap;

use crate::Value;

/// The deepest nesting read. Go's `maxNestingDepth` is 10000; values that deep overflow a
/// 2 MiB thread stack when Rust drops them, so the bound is lower, with Go's message.
const MAX_DEPTH: usize = 1_000;

/// A container being filled.
enum Open {
    List(Vec<Value>),
    /// The entries so far and the key whose value comes next.
    Map(BTreeMap<String, Value>, Option<String>),
}

/// Go's `quoteChar` of the byte the scanner stopped at.
fn quote_char(c: u8) -> String {
    match c {
        b'\'' => r"'\''".into(),
        b'"' => "'\"'".into(),
        _ => {
            let q = crate::sprintf("%q", &[Value::from(char::from(c).to_string())]);
            format!("'{}'", &q[1..q.len() - 1])
        }
    }
}

struct Scanner<'a> {
    b: &'a [u8],
    i: usize,
    /// The first number a `float64` cannot hold.
    range_error: Option<String>,
}

type Scan<T> = Result<T, String>;

impl<'a> Scanner<'a> {
    fn skip_ws(&mut self) {
        while matches!(self.b.get(self.i), Some(b' ' | b'\t' | b'\r' | b'\n')) {
            self.i += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    /// The error for the byte at the cursor (or the end of input).
    fn error<T>(&self, context: &str) -> Scan<T> {
        match self.peek() {
            None => Err("unexpected end of JSON input".into()),
            Some(c) => Err(format!("invalid character {} {context}", quote_char(c))),
        }
    }

    /// The error inside a literal, number or escape: Go's scanner meets the end of input
    /// as a space there (`invalid character ' ' in numeric literal`).
    fn token_error<T>(&self, context: &str) -> Scan<T> {
        let c = self.peek().unwrap_or(b' ');
        Err(format!("invalid character {} {context}", quote_char(c)))
    }

    fn expect_literal(&mut self, word: &'static str) -> Scan<()> {
        for (k, want) in word.bytes().enumerate().skip(1) {
            self.i += 1;
            if self.peek() != Some(want) {
                let expecting = word.as_bytes()[k] as char;
                return self.token_error(&format!("in literal {word} (expecting '{expecting}')"));
            }
        }
        self.i += 1;
        Ok(())
    }

    fn digits(&mut self) -> usize {
        let start = self.i;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.i += 1;
        }
        self.i - start
    }

    fn number(&mut self) -> Scan<Value> {
        let start = self.i;
        if self.peek() == Some(b'-') {
            self.i += 1;
        }
        match self.peek() {
            Some(b'0') => self.i += 1,
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return self.token_error("in numeric literal"),
        }
        if self.peek() == Some(b'.') {
            self.i += 1;
            if self.digits() == 0 {
                return self.token_error("after decimal point in numeric literal");
            }
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.i += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.i += 1;
            }
            if self.digits() == 0 {
                return self.token_error("in exponent of numeric literal");
            }
        }
        let text = std::str::from_utf8(&self.b[start..self.i]).unwrap_or("0");
        let f: f64 = text.parse().unwrap_or(0.0);
        if f.is_infinite() && self.range_error.is_none() {
            self.range_error = Some(format!(
                "json: cannot unmarshal number {text} into Go value of type float64"
            ));
        }
        Ok(Value::Float(f))
    }

    fn hex4(&mut self) -> Scan<u32> {
        let mut v = 0;
        for _ in 0..4 {
            match self.peek().and_then(|c| (c as char).to_digit(16)) {
                Some(d) => v = v * 16 + d,
                None => return self.token_error("in \\u hexadecimal character escape"),
            }
            self.i += 1;
        }
        Ok(v)
    }

    fn string(&mut self) -> Scan<String> {
        self.i += 1;
        let mut out: Vec<u8> = Vec::new();
        loop {
            let Some(c) = self.peek() else {
                return self.error("");
            };
            match c {
                b'"' => {
                    self.i += 1;
                    return Ok(String::from_utf8_lossy(&out).into_owned());
                }
                b'\\' => {
                    self.i += 1;
                    let Some(e) = self.peek() else {
                        return self.token_error("in string escape code");
                    };
                    let simple = match e {
                        b'"' => Some(b'"'),
                        b'\\' => Some(b'\\'),
                        b'/' => Some(b'/'),
                        b'b' => Some(8),
                        b'f' => Some(12),
                        b'n' => Some(b'\n'),
                        b'r' => Some(b'\r'),
                        b't' => Some(b'\t'),
                        b'u' => None,
                        _ => return self.token_error("in string escape code"),
                    };
                    self.i += 1;
                    if let Some(byte) = simple {
                        out.push(byte);
                        continue;
                    }
                    let first = self.hex4()?;
                    let ch = if (0xD800..0xDC00).contains(&first)
                        && self.b.get(self.i..self.i + 2) == Some(b"\\u")
                    {
                        // A surrogate pair only when a low surrogate follows.
                        let save = self.i;
                        self.i += 2;
                        let second = self.hex4()?;
                        if (0xDC00..0xE000).contains(&second) {
                            char::from_u32(0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00))
                        } else {
                            self.i = save;
                            None
                        }
                    } else {
                        char::from_u32(first)
                    };
                    let mut buf = [0u8; 4];
                    out.extend(ch.unwrap_or('\u{FFFD}').encode_utf8(&mut buf).bytes());
                }
                c if c < 0x20 => return self.error("in string literal"),
                c => {
                    out.push(c);
                    self.i += 1;
                }
            }
        }
    }

    /// A scalar value, or `None` after opening a container (pushed on `stack`).
    fn value(&mut self, stack: &mut Vec<Open>) -> Scan<Option<Value>> {
        self.skip_ws();
        match self.peek() {
            Some(b'{' | b'[') if stack.len() >= MAX_DEPTH => Err("exceeded max depth".into()),
            Some(b'{') => {
                self.i += 1;
                self.skip_ws();
                if self.peek() == Some(b'}') {
                    self.i += 1;
                    return Ok(Some(Value::map(BTreeMap::new())));
                }
                let key = self.key()?;
                stack.push(Open::Map(BTreeMap::new(), Some(key)));
                Ok(None)
            }
            Some(b'[') => {
                self.i += 1;
                self.skip_ws();
                if self.peek() == Some(b']') {
                    self.i += 1;
                    return Ok(Some(Value::list(Vec::new())));
                }
                stack.push(Open::List(Vec::new()));
                Ok(None)
            }
            Some(b'"') => self.string().map(|s| Some(Value::from(s))),
            Some(b't') => self
                .expect_literal("true")
                .map(|()| Some(Value::Bool(true))),
            Some(b'f') => self
                .expect_literal("false")
                .map(|()| Some(Value::Bool(false))),
            Some(b'n') => self.expect_literal("null").map(|()| Some(Value::Nil)),
            Some(b'-' | b'0'..=b'9') => self.number().map(Some),
            _ => self.error("looking for beginning of value"),
        }
    }

    /// An object key and its colon.
    fn key(&mut self) -> Scan<String> {
        self.skip_ws();
        if self.peek() != Some(b'"') {
            return self.error("looking for beginning of object key string");
        }
        let key = self.string()?;
        self.skip_ws();
        if self.peek() != Some(b':') {
            return self.error("after object key");
        }
        self.i += 1;
        Ok(key)
    }
}

/// Go's `json.Unmarshal(text, &v)` for `v interface{}`.
pub(crate) fn decode(text: &str) -> Result<Value, String> {
    let mut sc = Scanner {
        b: text.as_bytes(),
        i: 0,
        range_error: None,
    };
    let mut stack: Vec<Open> = Vec::new();
    let mut done = sc.value(&mut stack)?;
    let result = loop {
        let Some(v) = done.take() else {
            done = sc.value(&mut stack)?;
            continue;
        };
        // A value is complete: add it to its container and see what follows.
        let Some(top) = stack.last_mut() else {
            break v;
        };
        sc.skip_ws();
        match top {
            Open::List(items) => {
                items.push(v);
                match sc.peek() {
                    Some(b',') => {
                        sc.i += 1;
                        done = sc.value(&mut stack)?;
                    }
                    Some(b']') => {
                        sc.i += 1;
                        if let Some(Open::List(items)) = stack.pop() {
                            done = Some(Value::list(items));
                        }
                    }
                    _ => return sc.error("after array element"),
                }
            }
            Open::Map(entries, key) => {
                if let Some(k) = key.take() {
                    entries.insert(k, v);
                }
                match sc.peek() {
                    Some(b',') => {
                        sc.i += 1;
                        *key = Some(sc.key()?);
                        done = sc.value(&mut stack)?;
                    }
                    Some(b'}') => {
                        sc.i += 1;
                        if let Some(Open::Map(entries, _)) = stack.pop() {
                            done = Some(Value::map(entries));
                        }
                    }
                    _ => return sc.error("after object key:value pair"),
                }
            }
        }
    };
    sc.skip_ws();
    if sc.peek().is_some() {
        return sc.error("after top-level value");
    }
    match sc.range_error {
        Some(e) => Err(e),
        None => Ok(result),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> String {
        decode(text).expect_err("an error")
    }

    #[test]
    fn syntax_errors_read_as_go() {
        assert_eq!(err(""), "unexpected end of JSON input");
        assert_eq!(
            err("x"),
            "invalid character 'x' looking for beginning of value"
        );
        assert_eq!(
            err("[1,]"),
            "invalid character ']' looking for beginning of value"
        );
        assert_eq!(err("{\"a\" 1}"), "invalid character '1' after object key");
        assert_eq!(
            err("{\"a\":1 2}"),
            "invalid character '2' after object key:value pair"
        );
        assert_eq!(
            err("{1:2}"),
            "invalid character '1' looking for beginning of object key string"
        );
        assert_eq!(
            err("tru"),
            "invalid character ' ' in literal true (expecting 'e')"
        );
        assert_eq!(
            err("1e+"),
            "invalid character ' ' in exponent of numeric literal"
        );
        assert_eq!(err("\"ab"), "unexpected end of JSON input");
        assert_eq!(err("[1"), "unexpected end of JSON input");
        assert_eq!(
            err("trUe"),
            "invalid character 'U' in literal true (expecting 'u')"
        );
        assert_eq!(err("01"), "invalid character '1' after top-level value");
        assert_eq!(err("-x"), "invalid character 'x' in numeric literal");
        assert_eq!(
            err("1.e"),
            "invalid character 'e' after decimal point in numeric literal"
        );
        assert_eq!(
            err("\"\\x\""),
            "invalid character 'x' in string escape code"
        );
        assert_eq!(err("\"a\nb\""), "invalid character '\\n' in string literal");
        assert_eq!(
            err("'"),
            r"invalid character '\'' looking for beginning of value"
        );
        assert_eq!(
            err("[1e400, x"),
            "invalid character 'x' looking for beginning of value"
        );
        assert_eq!(
            err("[1e400]"),
            "json: cannot unmarshal number 1e400 into Go value of type float64"
        );
    }

    #[test]
    fn values_decode_as_go_interface_values() {
        let v = decode(r#" {"b": [1, 2.5e1, true, null, "x\u00e9\ud83d\ude00\ud800"], "a": {}} "#)
            .expect("valid");
        assert_eq!(
            crate::gofmt::sprint_value(&v),
            "map[a:map[] b:[1 25 true <nil> xé😀\u{FFFD}]]"
        );
    }

    #[test]
    fn nesting_is_limited_without_recursion() {
        let deep = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert!(decode(&deep).is_ok());
        let deeper = format!("{}{}", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1));
        assert_eq!(err(&deeper), "exceeded max depth");
    }
}
