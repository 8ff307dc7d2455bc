//! Sprig's regular expressions (Go's RE2 syntax) on Rust's `regex` crate, whose syntax is
//! RE2's. Differences handled here: Go's `\d`, `\w`, `\s`, `\b` are ASCII-only, so they are
//! compiled in ASCII mode (outside character classes); `regexQuoteMeta` escapes Go's set.
//! A pattern that does not compile makes `regexMatch` false and the other functions fail,
//! as in Sprig; the error's wording after `error parsing regexp: ` is the `regex` crate's.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use regex::Regex;

use super::{Funcs, n, s, string_list};
use crate::ParamType::{Int, String as Str};
use crate::{FuncError, Function, Value};

pub(super) fn register(m: &mut Funcs) {
    m.add(
        "regexMatch",
        Function::new(&[Str, Str], |a| {
            Ok(Value::Bool(
                compile(s(a, 0)).is_ok_and(|re| re.is_match(s(a, 1))),
            ))
        }),
    );
    m.add(
        "mustRegexMatch",
        Function::new(&[Str, Str], |a| {
            Ok(Value::Bool(compile(s(a, 0))?.is_match(s(a, 1))))
        }),
    );
    // Sprig's plain forms compile with `regexp.MustCompile` (a bad pattern panics, and the
    // template reports the panic); the `must` forms return the compile error.
    let ops: [(&str, &str, &[crate::ParamType], Op); 5] = [
        (
            "regexFindAll",
            "mustRegexFindAll",
            &[Str, Str, Int],
            |re, a| {
                string_list(
                    re.find_iter(s(a, 1))
                        .take(limit(n(a, 2)))
                        .map(|m| m.as_str().to_string()),
                )
            },
        ),
        ("regexFind", "mustRegexFind", &[Str, Str], |re, a| {
            Value::from(re.find(s(a, 1)).map(|m| m.as_str()).unwrap_or_default())
        }),
        (
            "regexReplaceAll",
            "mustRegexReplaceAll",
            &[Str, Str, Str],
            |re, a| Value::from(re.replace_all(s(a, 1), s(a, 2)).into_owned()),
        ),
        (
            "regexReplaceAllLiteral",
            "mustRegexReplaceAllLiteral",
            &[Str, Str, Str],
            |re, a| {
                Value::from(
                    re.replace_all(s(a, 1), regex::NoExpand(s(a, 2)))
                        .into_owned(),
                )
            },
        ),
        ("regexSplit", "mustRegexSplit", &[Str, Str, Int], |re, a| {
            string_list(split(re, s(a, 0), s(a, 1), n(a, 2)))
        }),
    ];
    for (name, must, params, op) in ops {
        m.add(
            name,
            Function::new(params, move |a| {
                let re = compile(s(a, 0))
                    .map_err(|e| FuncError::new(format!("regexp: Compile(`{}`): {e}", s(a, 0))))?;
                Ok(op(&re, a))
            }),
        );
        m.add(
            must,
            Function::new(params, move |a| Ok(op(&compile(s(a, 0))?, a))),
        );
    }
    m.add(
        "regexQuoteMeta",
        Function::new(&[Str], |a| Ok(Value::from(quote_meta(s(a, 0))))),
    );
}

type Op = fn(&Regex, &[Value]) -> Value;

/// Go's match limit: a negative `n` means all.
fn limit(n: i64) -> usize {
    if n < 0 { usize::MAX } else { n as usize }
}

/// Compiles a Go pattern, making the Perl classes and word boundaries ASCII as in RE2.
/// The error starts as Go's does (`error parsing regexp: `) but the rest is the `regex`
/// crate's description, not Go's (`missing closing ): `(``).
/// Charts call the regex functions with the same few patterns in loops and helpers, and a
/// compile costs far more than a match: compiled patterns are kept (a bounded set per process).
fn compile(pattern: &str) -> Result<Regex, FuncError> {
    const CACHED: usize = 256;
    static CACHE: OnceLock<Mutex<HashMap<String, Regex>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Mutex::default);
    if let Some(re) = cache.lock().unwrap_or_else(|e| e.into_inner()).get(pattern) {
        return Ok(re.clone());
    }
    let re = compile_uncached(pattern)?;
    let mut cache = cache.lock().unwrap_or_else(|e| e.into_inner());
    if cache.len() >= CACHED {
        cache.clear();
    }
    cache.insert(pattern.to_string(), re.clone());
    Ok(re)
}

fn compile_uncached(pattern: &str) -> Result<Regex, FuncError> {
    Regex::new(&ascii_classes(pattern)).map_err(|e| {
        let detail = match e {
            regex::Error::Syntax(text) => text
                .lines()
                .rev()
                .find(|l| l.starts_with("error: "))
                .map(|l| l.trim_start_matches("error: ").to_string())
                .unwrap_or(text),
            other => other.to_string(),
        };
        FuncError::new(format!("error parsing regexp: {detail}"))
    })
}

fn ascii_classes(p: &str) -> String {
    let mut out = String::with_capacity(p.len() + 16);
    let mut chars = p.chars();
    let mut depth = 0usize;
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                // Negated classes as explicit sets: `(?-u:\S)` could match invalid UTF-8,
                // which the crate refuses on strings.
                Some('D') if depth == 0 => out.push_str("[^0-9]"),
                Some('W') if depth == 0 => out.push_str("[^0-9A-Za-z_]"),
                Some('S') if depth == 0 => out.push_str("[^\\t\\n\\f\\r ]"),
                Some(e @ ('d' | 'w' | 's' | 'b' | 'B')) if depth == 0 => {
                    out.push_str("(?-u:\\");
                    out.push(e);
                    out.push(')');
                }
                Some(e) => {
                    out.push('\\');
                    out.push(e);
                }
                None => out.push('\\'),
            },
            '[' => {
                depth += 1;
                out.push(c);
            }
            ']' if depth > 0 => {
                depth -= 1;
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

/// Go's `Regexp.Split`.
fn split(re: &Regex, expr: &str, s: &str, n: i64) -> Vec<String> {
    if n == 0 {
        return Vec::new();
    }
    if !expr.is_empty() && s.is_empty() {
        return vec![String::new()];
    }
    let mut out = Vec::new();
    let (mut beg, mut end) = (0, 0);
    for m in re.find_iter(s).take(limit(n)) {
        if n > 0 && out.len() as i64 == n - 1 {
            break;
        }
        end = m.start();
        if m.end() != 0 {
            out.push(s[beg..end].to_string());
        }
        beg = m.end();
    }
    if end != s.len() {
        out.push(s[beg..].to_string());
    }
    out
}

/// Go's `regexp.QuoteMeta`.
fn quote_meta(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 2);
    for c in s.chars() {
        if "\\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perl_classes_are_ascii_like_re2() {
        let re = compile(r"^\d+$").unwrap();
        assert!(re.is_match("123"));
        assert!(!re.is_match("١٢٣"));
        assert!(compile(r"[\d]").unwrap().is_match("5"));
    }

    #[test]
    fn negated_perl_classes_compile_and_match_any_other_character() {
        let re = compile(r"^\S\D\W$").unwrap();
        assert!(re.is_match("é١-"));
        assert!(!re.is_match(" x-"));
        assert!(compile(r"a\Bb").unwrap().is_match("ab"));
    }

    #[test]
    fn split_follows_go() {
        let re = compile("a").unwrap();
        assert_eq!(split(&re, "a", "banana", -1), ["b", "n", "n", ""]);
        assert_eq!(split(&re, "a", "banana", 2), ["b", "nana"]);
        assert_eq!(split(&re, "a", "", -1), [""]);
    }
}
