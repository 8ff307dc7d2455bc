//! Sprig's regular expressions (Go's RE2 syntax) on Rust's `regex` crate, whose syntax is
//! RE2's. Differences handled here: Go's `\d`, `\w`, `\s`, `\b` are ASCII-only, so they are
//! compiled in ASCII mode (outside character classes); `regexQuoteMeta` escapes Go's set.
//! A pattern that does not compile makes the plain forms return their zero value, as in
//! Sprig; the `must` forms are left out until Go's error texts are reproduced.

use regex::Regex;

use super::{Funcs, n, s, string_list};
use crate::ParamType::{Int, String as Str};
use crate::{Function, Value};

pub(super) fn register(m: &mut Funcs) {
    m.add(
        "regexMatch",
        Function::new(&[Str, Str], |a| {
            Ok(Value::Bool(compile(s(a, 0)).is_some_and(|re| re.is_match(s(a, 1)))))
        }),
    );
    m.add(
        "regexFindAll",
        Function::new(&[Str, Str, Int], |a| {
            let Some(re) = compile(s(a, 0)) else {
                return Ok(string_list(Vec::new()));
            };
            let limit = limit(n(a, 2));
            Ok(string_list(
                re.find_iter(s(a, 1))
                    .take(limit)
                    .map(|m| m.as_str().to_string()),
            ))
        }),
    );
    m.add(
        "regexFind",
        Function::new(&[Str, Str], |a| {
            let found = compile(s(a, 0))
                .and_then(|re| re.find(s(a, 1)).map(|m| m.as_str().to_string()));
            Ok(Value::from(found.unwrap_or_default()))
        }),
    );
    m.add(
        "regexReplaceAll",
        Function::new(&[Str, Str, Str], |a| {
            Ok(Value::from(match compile(s(a, 0)) {
                Some(re) => re.replace_all(s(a, 1), s(a, 2)).into_owned(),
                None => String::new(),
            }))
        }),
    );
    m.add(
        "regexReplaceAllLiteral",
        Function::new(&[Str, Str, Str], |a| {
            Ok(Value::from(match compile(s(a, 0)) {
                Some(re) => re
                    .replace_all(s(a, 1), regex::NoExpand(s(a, 2)))
                    .into_owned(),
                None => String::new(),
            }))
        }),
    );
    m.add(
        "regexSplit",
        Function::new(&[Str, Str, Int], |a| {
            Ok(string_list(match compile(s(a, 0)) {
                Some(re) => split(&re, s(a, 0), s(a, 1), n(a, 2)),
                None => Vec::new(),
            }))
        }),
    );
    m.add(
        "regexQuoteMeta",
        Function::new(&[Str], |a| Ok(Value::from(quote_meta(s(a, 0))))),
    );
}

/// Go's match limit: a negative `n` means all.
fn limit(n: i64) -> usize {
    if n < 0 { usize::MAX } else { n as usize }
}

/// Compiles a Go pattern, making the Perl classes and word boundaries ASCII as in RE2.
fn compile(pattern: &str) -> Option<Regex> {
    Regex::new(&ascii_classes(pattern)).ok()
}

fn ascii_classes(p: &str) -> String {
    let mut out = String::with_capacity(p.len() + 16);
    let mut chars = p.chars();
    let mut depth = 0usize;
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(e @ ('d' | 'D' | 'w' | 'W' | 's' | 'S' | 'b' | 'B')) if depth == 0 => {
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
    fn split_follows_go() {
        let re = compile("a").unwrap();
        assert_eq!(split(&re, "a", "banana", -1), ["b", "n", "n", ""]);
        assert_eq!(split(&re, "a", "banana", 2), ["b", "nana"]);
        assert_eq!(split(&re, "a", "", -1), [""]);
    }
}
