//! `pattern` regular expressions with Go `regexp` (RE2) semantics.
//!
//! Kubernetes compiles `pattern` with Go's `regexp`, whose Perl classes (`\d`, `\w`, `\s`, `\b`)
//! are ASCII-only, while the Rust `regex` crate makes them Unicode-aware by default. A pattern
//! such as `^\d+$` must reject `"١٢"` (Arabic-Indic digits) exactly as a real API server does, so
//! we rewrite those classes into explicit ASCII forms before compiling. Everything else in RE2
//! syntax means the same in both engines. Matching is unanchored, like `regexp.MatchString`.

use regex::{Regex, RegexBuilder};

/// Upper bound on the compiled size of one user pattern; keeps hostile schemas from using
/// unbounded memory.
const SIZE_LIMIT: usize = 4 << 20;

/// A compiled `pattern`.
#[derive(Debug, Clone)]
pub struct Pattern {
    /// The pattern as written in the schema (used verbatim in messages).
    pub source: String,
    /// The compiled regex, or the reason it does not compile.
    pub compiled: Result<Regex, String>,
}

impl Pattern {
    /// Compiles `source` with Go semantics.
    pub fn new(source: &str) -> Pattern {
        let translated = translate(source);
        let compiled = RegexBuilder::new(&translated)
            .size_limit(SIZE_LIMIT)
            .build()
            .map_err(|e| match e {
                regex::Error::Syntax(msg) => {
                    // The Rust error spans several lines; its last non-empty line is the reason.
                    let reason = msg
                        .lines()
                        .rev()
                        .find(|l| !l.trim().is_empty())
                        .unwrap_or("")
                        .trim();
                    let reason = reason.strip_prefix("error: ").unwrap_or(reason);
                    format!("error parsing regexp: {reason}: `{source}`")
                }
                regex::Error::CompiledTooBig(_) => {
                    format!("error parsing regexp: expression too large: `{source}`")
                }
                other => format!("error parsing regexp: {other}: `{source}`"),
            });
        Pattern {
            source: source.to_string(),
            compiled,
        }
    }

    /// Whether `s` matches (unanchored). An invalid pattern matches nothing.
    #[cfg(test)]
    pub fn is_match(&self, s: &str) -> bool {
        match &self.compiled {
            Ok(r) => r.is_match(s),
            Err(_) => false,
        }
    }
}

/// Rewrites Go-only semantics into equivalent Rust `regex` syntax.
fn translate(src: &str) -> String {
    let mut out = String::with_capacity(src.len() + 16);
    let chars: Vec<char> = src.chars().collect();
    let mut i = 0;
    // Depth of character classes we are in; `]` directly after `[` or `[^` is a literal.
    let mut class_depth = 0usize;
    let mut class_start = false;
    while i < chars.len() {
        let c = chars[i];
        if c == '\\' && i + 1 < chars.len() {
            let n = chars[i + 1];
            let inside = class_depth > 0;
            let rep: Option<&str> = match (n, inside) {
                ('d', false) => Some("[0-9]"),
                ('d', true) => Some("0-9"),
                ('D', _) => Some("[^0-9]"),
                ('w', false) => Some("[0-9A-Za-z_]"),
                ('w', true) => Some("0-9A-Za-z_"),
                ('W', _) => Some("[^0-9A-Za-z_]"),
                ('s', false) => Some("[\\t\\n\\f\\r ]"),
                ('s', true) => Some("\\t\\n\\f\\r "),
                ('S', _) => Some("[^\\t\\n\\f\\r ]"),
                ('b', false) => Some("(?-u:\\b)"),
                ('B', false) => Some("(?-u:\\B)"),
                // In Go these are plain escaped punctuation; in Rust they are word boundaries.
                ('<', _) => Some("<"),
                ('>', _) => Some(">"),
                _ => None,
            };
            match rep {
                Some(r) => out.push_str(r),
                None => {
                    out.push(c);
                    out.push(n);
                }
            }
            i += 2;
            class_start = false;
            continue;
        }
        if class_depth > 0 {
            if c == '[' && i + 1 < chars.len() && chars[i + 1] == ':' {
                // POSIX class like [:alpha:]; copy through the closing ":]".
                if let Some(end) = find_posix_end(&chars, i + 2) {
                    for ch in &chars[i..=end] {
                        out.push(*ch);
                    }
                    i = end + 1;
                    class_start = false;
                    continue;
                }
            }
            if c == '[' {
                // Go has no nested classes: a '[' inside a class is a literal.
                out.push_str("\\[");
                i += 1;
                class_start = false;
                continue;
            }
            if c == ']' && !class_start {
                class_depth -= 1;
                out.push(c);
                i += 1;
                continue;
            }
            if c == ']' && class_start {
                out.push_str("\\]");
                i += 1;
                class_start = false;
                continue;
            }
            if c == '^' && class_start && i > 0 && chars[i - 1] == '[' {
                out.push(c);
                i += 1;
                continue;
            }
            // Rust treats `&&`, `--` and `~~` inside classes as set operations; Go does not.
            if (c == '&' || c == '-' || c == '~') && i + 1 < chars.len() && chars[i + 1] == c {
                out.push('\\');
                out.push(c);
                i += 1;
                class_start = false;
                continue;
            }
            out.push(c);
            i += 1;
            class_start = false;
            continue;
        }
        if c == '[' {
            class_depth = 1;
            class_start = true;
        }
        out.push(c);
        i += 1;
    }
    out
}

fn find_posix_end(chars: &[char], from: usize) -> Option<usize> {
    let mut j = from;
    while j + 1 < chars.len() {
        if chars[j] == ':' && chars[j + 1] == ']' {
            return Some(j + 1);
        }
        if !chars[j].is_ascii_alphabetic() && chars[j] != '^' {
            return None;
        }
        j += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perl_classes_are_ascii_like_go() {
        let p = Pattern::new(r"^\d+$");
        assert!(p.is_match("123"));
        assert!(!p.is_match("١٢"));
        let p = Pattern::new(r"^[\w-]+$");
        assert!(p.is_match("a_b-c"));
        assert!(!p.is_match("é"));
        let p = Pattern::new(r"^\D$");
        assert!(p.is_match("é"));
        assert!(!p.is_match("1"));
    }

    #[test]
    fn unanchored_match_like_go() {
        assert!(Pattern::new("b").is_match("abc"));
        assert!(!Pattern::new("^b").is_match("abc"));
    }

    #[test]
    fn go_literals_in_classes() {
        assert!(Pattern::new(r"^[]a]+$").is_match("]a"));
        assert!(Pattern::new(r"^[a[]+$").is_match("[a"));
        assert!(Pattern::new(r"^[a&&b]+$").is_match("&"));
        assert!(Pattern::new(r"^[[:alpha:]]+$").is_match("abc"));
        assert!(Pattern::new(r"^\<x\>$").is_match("<x>"));
    }

    #[test]
    fn invalid_pattern_reports_error() {
        let p = Pattern::new("(");
        assert!(p.compiled.is_err());
        assert!(!p.is_match("("));
        assert!(
            p.compiled
                .unwrap_err()
                .starts_with("error parsing regexp: ")
        );
    }
}
