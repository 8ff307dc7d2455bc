//! Go's `encoding/json` syntax check (its `scanner`, ported state for state), so a
//! template that feeds bad JSON to `fromJson` sees Go's error text
//! (`invalid character 'x' looking for beginning of value`, `unexpected end of JSON input`)
//! where serde_json would word it differently. Values themselves are read by serde_json.

/// Where the scanner is, as Go's `scanner.step` functions.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Step {
    BeginValueOrEmpty,
    BeginValue,
    BeginStringOrEmpty,
    BeginString,
    EndValue,
    EndTop,
    InString,
    InStringEsc,
    /// After `\u` and this many hex digits.
    InStringEscU(u8),
    Neg,
    One,
    Zero,
    Dot,
    Dot0,
    E,
    ESign,
    E0,
    /// Inside `true`, `false` or `null`: the rest still expected.
    Literal(&'static str, &'static str),
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Parse {
    ObjectKey,
    ObjectValue,
    ArrayValue,
}

/// Go's `maxNestingDepth`.
const MAX_NESTING: usize = 10_000;

struct Scanner {
    step: Step,
    stack: Vec<Parse>,
    end_top: bool,
    err: Option<String>,
}

/// Go's `checkValid`: `None` for well-formed JSON, else Go's `SyntaxError` text.
pub(crate) fn syntax_error(data: &str) -> Option<String> {
    let mut s = Scanner {
        step: Step::BeginValue,
        stack: Vec::new(),
        end_top: false,
        err: None,
    };
    for &c in data.as_bytes() {
        if s.err.is_some() {
            return s.err;
        }
        s.feed(c);
    }
    if s.err.is_some() {
        return s.err;
    }
    if s.end_top {
        return None;
    }
    s.feed(b' ');
    if s.end_top {
        return None;
    }
    Some(
        s.err
            .unwrap_or_else(|| "unexpected end of JSON input".to_string()),
    )
}

fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | b'\n')
}

/// Go's `quoteChar`: the byte as a character literal (`'x'`, `'\n'`, `'\''`).
fn quote_char(c: u8) -> String {
    match c {
        b'\'' => r"'\''".to_string(),
        b'"' => "'\"'".to_string(),
        _ => {
            let q = crate::gofmt::go_quote(&char::from(c).to_string());
            format!("'{}'", &q[1..q.len() - 1])
        }
    }
}

impl Scanner {
    fn error(&mut self, c: u8, context: &str) {
        self.err = Some(format!("invalid character {} {context}", quote_char(c)));
    }

    fn push(&mut self, c: u8, p: Parse) {
        self.stack.push(p);
        if self.stack.len() > MAX_NESTING {
            self.error(c, "exceeded max depth");
        }
    }

    fn pop(&mut self) {
        self.stack.pop();
        if self.stack.is_empty() {
            self.step = Step::EndTop;
            self.end_top = true;
        } else {
            self.step = Step::EndValue;
        }
    }

    fn feed(&mut self, c: u8) {
        match self.step {
            Step::BeginValueOrEmpty => {
                if is_space(c) {
                } else if c == b']' {
                    self.end_value(c);
                } else {
                    self.begin_value(c);
                }
            }
            Step::BeginValue => self.begin_value(c),
            Step::BeginStringOrEmpty => {
                if is_space(c) {
                } else if c == b'}' {
                    if let Some(top) = self.stack.last_mut() {
                        *top = Parse::ObjectValue;
                    }
                    self.end_value(c);
                } else {
                    self.begin_string(c);
                }
            }
            Step::BeginString => self.begin_string(c),
            Step::EndValue => self.end_value(c),
            Step::EndTop => {
                if !is_space(c) {
                    self.error(c, "after top-level value");
                }
            }
            Step::InString => match c {
                b'"' => self.step = Step::EndValue,
                b'\\' => self.step = Step::InStringEsc,
                c if c < 0x20 => self.error(c, "in string literal"),
                _ => {}
            },
            Step::InStringEsc => match c {
                b'b' | b'f' | b'n' | b'r' | b't' | b'\\' | b'/' | b'"' => {
                    self.step = Step::InString
                }
                b'u' => self.step = Step::InStringEscU(0),
                _ => self.error(c, "in string escape code"),
            },
            Step::InStringEscU(n) => {
                if c.is_ascii_hexdigit() {
                    self.step = if n == 3 {
                        Step::InString
                    } else {
                        Step::InStringEscU(n + 1)
                    };
                } else {
                    self.error(c, "in \\u hexadecimal character escape");
                }
            }
            Step::Neg => match c {
                b'0' => self.step = Step::Zero,
                b'1'..=b'9' => self.step = Step::One,
                _ => self.error(c, "in numeric literal"),
            },
            Step::One if c.is_ascii_digit() => {}
            Step::One | Step::Zero => match c {
                b'.' => self.step = Step::Dot,
                b'e' | b'E' => self.step = Step::E,
                _ => self.end_value(c),
            },
            Step::Dot => {
                if c.is_ascii_digit() {
                    self.step = Step::Dot0;
                } else {
                    self.error(c, "after decimal point in numeric literal");
                }
            }
            Step::Dot0 => match c {
                b'0'..=b'9' => {}
                b'e' | b'E' => self.step = Step::E,
                _ => self.end_value(c),
            },
            Step::E if c == b'+' || c == b'-' => self.step = Step::ESign,
            Step::E | Step::ESign => {
                if c.is_ascii_digit() {
                    self.step = Step::E0;
                } else {
                    self.error(c, "in exponent of numeric literal");
                }
            }
            Step::E0 => {
                if !c.is_ascii_digit() {
                    self.end_value(c);
                }
            }
            Step::Literal(word, rest) => {
                let want = rest.as_bytes()[0];
                if c == want {
                    self.step = if rest.len() == 1 {
                        Step::EndValue
                    } else {
                        Step::Literal(word, &rest[1..])
                    };
                } else {
                    self.error(
                        c,
                        &format!("in literal {word} (expecting {})", quote_char(want)),
                    );
                }
            }
        }
    }

    fn begin_value(&mut self, c: u8) {
        if is_space(c) {
            return;
        }
        match c {
            b'{' => {
                self.step = Step::BeginStringOrEmpty;
                self.push(c, Parse::ObjectKey);
            }
            b'[' => {
                self.step = Step::BeginValueOrEmpty;
                self.push(c, Parse::ArrayValue);
            }
            b'"' => self.step = Step::InString,
            b'-' => self.step = Step::Neg,
            b'0' => self.step = Step::Zero,
            b't' => self.step = Step::Literal("true", "rue"),
            b'f' => self.step = Step::Literal("false", "alse"),
            b'n' => self.step = Step::Literal("null", "ull"),
            b'1'..=b'9' => self.step = Step::One,
            _ => self.error(c, "looking for beginning of value"),
        }
    }

    fn begin_string(&mut self, c: u8) {
        if is_space(c) {
        } else if c == b'"' {
            self.step = Step::InString;
        } else {
            self.error(c, "looking for beginning of object key string");
        }
    }

    fn end_value(&mut self, c: u8) {
        let Some(&top) = self.stack.last() else {
            self.step = Step::EndTop;
            self.end_top = true;
            if !is_space(c) {
                self.error(c, "after top-level value");
            }
            return;
        };
        if is_space(c) {
            self.step = Step::EndValue;
            return;
        }
        match top {
            Parse::ObjectKey if c == b':' => {
                if let Some(t) = self.stack.last_mut() {
                    *t = Parse::ObjectValue;
                }
                self.step = Step::BeginValue;
            }
            Parse::ObjectKey => self.error(c, "after object key"),
            Parse::ObjectValue if c == b',' => {
                if let Some(t) = self.stack.last_mut() {
                    *t = Parse::ObjectKey;
                }
                self.step = Step::BeginString;
            }
            Parse::ObjectValue if c == b'}' => self.pop(),
            Parse::ObjectValue => self.error(c, "after object key:value pair"),
            Parse::ArrayValue if c == b',' => self.step = Step::BeginValue,
            Parse::ArrayValue if c == b']' => self.pop(),
            Parse::ArrayValue => self.error(c, "after array element"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::syntax_error;

    #[test]
    fn well_formed_json_passes() {
        for ok in [
            "{}",
            " [1, -0.5e+3, \"a\\u00e9\\n\", true, false, null, {\"k\": []}] ",
            "0",
            "\"s\"",
        ] {
            assert_eq!(syntax_error(ok), None, "{ok}");
        }
    }

    #[test]
    fn errors_read_as_in_go() {
        let cases = [
            ("", "unexpected end of JSON input"),
            ("{", "unexpected end of JSON input"),
            ("x", "invalid character 'x' looking for beginning of value"),
            (
                "{1}",
                "invalid character '1' looking for beginning of object key string",
            ),
            ("{\"a\" 1}", "invalid character '1' after object key"),
            (
                "{\"a\":1 2}",
                "invalid character '2' after object key:value pair",
            ),
            ("[1 2]", "invalid character '2' after array element"),
            ("1 2", "invalid character '2' after top-level value"),
            ("{} x", "invalid character 'x' after top-level value"),
            (
                "tru",
                "invalid character ' ' in literal true (expecting 'e')",
            ),
            (
                "trx",
                "invalid character 'x' in literal true (expecting 'u')",
            ),
            (
                "nul1",
                "invalid character '1' in literal null (expecting 'l')",
            ),
            (
                "1.",
                "invalid character ' ' after decimal point in numeric literal",
            ),
            ("[1,", "unexpected end of JSON input"),
            (
                "1.x",
                "invalid character 'x' after decimal point in numeric literal",
            ),
            (
                "1ex",
                "invalid character 'x' in exponent of numeric literal",
            ),
            ("-x", "invalid character 'x' in numeric literal"),
            ("\"\\x\"", "invalid character 'x' in string escape code"),
            (
                "\"\\u12g\"",
                "invalid character 'g' in \\u hexadecimal character escape",
            ),
            ("\"a\nb\"", "invalid character '\\n' in string literal"),
            (
                "'a'",
                "invalid character '\\'' looking for beginning of value",
            ),
            ("01", "invalid character '1' after top-level value"),
        ];
        for (input, want) in cases {
            assert_eq!(syntax_error(input).as_deref(), Some(want), "{input:?}");
        }
    }
}
