//! Sprig's case conversions from huandu/xstrings v1.5 (what Sprig 3.3 builds with):
//! `snakecase` (`ToSnakeCase`), `kebabcase` (`ToKebabCase`) and `camelcase`, which Sprig 3.3
//! maps to `ToPascalCase` (v1.5 made `ToCamelCase` lower camel case; Sprig 3.2.3, which KUDO
//! uses, called xstrings 1.3's `ToCamelCase`, also upper camel case but keeping the case of
//! letters after the first of a word: `GOLANG_IS_GREAT` gives `GOLANGISGREAT` there and
//! `GolangIsGreat` here). Words are split the way xstrings splits them: runs of upper-case
//! letters (`HTTPServer` is `HTTP` + `Server`), letters, numbers, punctuation, connectors
//! (`-`, `_`, white space).

use std::sync::OnceLock;

use regex::Regex;

use super::Funcs;
use crate::ParamType::String as Str;
use crate::{Function, Value};

pub(super) fn register(m: &mut Funcs) {
    m.add(
        "snakecase",
        Function::new(&[Str], |a| {
            Ok(Value::from(to_lower_words(super::s(a, 0), '_')))
        }),
    );
    m.add(
        "kebabcase",
        Function::new(&[Str], |a| {
            Ok(Value::from(to_lower_words(super::s(a, 0), '-')))
        }),
    );
    m.add(
        "camelcase",
        Function::new(&[Str], |a| Ok(Value::from(to_pascal(super::s(a, 0))))),
    );
}

/// Go's `unicode.IsUpper` (category Lu) and `unicode.IsPunct` (category P).
fn category(c: char) -> (bool, bool) {
    static RE: OnceLock<(Regex, Regex)> = OnceLock::new();
    let (upper, punct) = RE.get_or_init(|| {
        (
            Regex::new(r"^\p{Lu}$").expect("valid class"),
            Regex::new(r"^\p{P}$").expect("valid class"),
        )
    });
    if c.is_ascii() {
        return (
            c.is_ascii_uppercase(),
            c.is_ascii_punctuation() && !"$+<=>^`|~".contains(c),
        );
    }
    let mut buf = [0u8; 4];
    let s = c.encode_utf8(&mut buf);
    (upper.is_match(s), punct.is_match(s))
}

fn is_upper(c: char) -> bool {
    category(c).0
}

fn is_punct(c: char) -> bool {
    category(c).1
}

/// Go's `unicode.IsNumber` (category N).
fn is_number(c: char) -> bool {
    c.is_numeric()
}

fn is_connector(c: char) -> bool {
    c == '-' || c == '_' || c.is_whitespace()
}

/// xstrings' `isAlphabet`: a letter that is not a CJK ideograph.
fn is_alphabet(c: char) -> bool {
    c.is_alphabetic()
        && !matches!(c, '\u{4E00}'..='\u{9FCC}' | '\u{3400}'..='\u{4D85}' | '\u{20000}'..='\u{2B81D}')
}

fn to_upper(c: char) -> char {
    let mut u = c.to_uppercase();
    match (u.next(), u.next()) {
        (Some(x), None) => x,
        _ => c,
    }
}

fn to_lower(c: char) -> char {
    let mut l = c.to_lowercase();
    match (l.next(), l.next()) {
        (Some(x), None) => x,
        _ => c,
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Word {
    None,
    Number,
    Upper,
    Alphabet,
    Connector,
    Punct,
    Other,
}

/// xstrings' `nextWord`: the kind of the first word of `s`, the word and the rest.
fn next_word(s: &str) -> (Word, &str, &str) {
    let mut it = s.char_indices().peekable();
    let Some((_, first)) = it.next() else {
        return (Word::None, "", "");
    };
    let end_while = |it: &mut std::iter::Peekable<std::str::CharIndices<'_>>,
                     keep: &dyn Fn(char) -> bool| {
        while let Some(&(_, c)) = it.peek() {
            if !keep(c) {
                break;
            }
            it.next();
        }
        it.peek().map_or(s.len(), |&(i, _)| i)
    };
    let (kind, end) = if is_connector(first) {
        (Word::Connector, end_while(&mut it, &is_connector))
    } else if is_punct(first) {
        (Word::Punct, end_while(&mut it, &is_punct))
    } else if is_upper(first) {
        match it.peek().copied() {
            None => (Word::Upper, s.len()),
            Some((_, c)) if is_upper(c) => {
                // A run of capitals; its last one starts the next word when a letter
                // follows ("HTTPServer" is "HTTP" + "Server").
                let mut last_start = first.len_utf8();
                let mut end = first.len_utf8();
                while let Some(&(i, c)) = it.peek() {
                    if !is_upper(c) {
                        break;
                    }
                    last_start = i;
                    end = i + c.len_utf8();
                    it.next();
                }
                match it.peek() {
                    Some(&(_, c)) if is_alphabet(c) => (Word::Upper, last_start),
                    _ => (Word::Upper, end),
                }
            }
            Some((_, c)) if is_alphabet(c) => (
                Word::Upper,
                end_while(&mut it, &|c| is_alphabet(c) && !is_upper(c)),
            ),
            Some((i, _)) => (Word::Upper, i),
        }
    } else if is_alphabet(first) {
        (
            Word::Alphabet,
            end_while(&mut it, &|c| is_alphabet(c) && !is_upper(c)),
        )
    } else if is_number(first) {
        (Word::Number, end_while(&mut it, &is_number))
    } else {
        (
            Word::Other,
            end_while(&mut it, &|c| {
                !(is_connector(c) || is_alphabet(c) || is_number(c) || is_punct(c))
            }),
        )
    };
    (kind, &s[..end], &s[end..])
}

/// xstrings' `toLower`: capitals lowered and connectors replaced in upper-case and
/// connector words; other words as they are.
fn push_lower(out: &mut String, kind: Word, word: &str, connector: char) {
    if kind != Word::Upper && kind != Word::Connector {
        out.push_str(word);
        return;
    }
    for c in word.chars() {
        out.push(if is_connector(c) {
            connector
        } else if is_upper(c) {
            to_lower(c)
        } else {
            c
        });
    }
}

/// xstrings' `camelCaseToLowerCase` (`ToSnakeCase`, `ToKebabCase`).
fn to_lower_words(s: &str, connector: char) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    let (mut kind, mut word, mut rest) = next_word(s);
    let alnum = |k: Word| k == Word::Alphabet || k == Word::Number;
    let joins = |k: Word| k != Word::None && k != Word::Punct && k != Word::Connector;
    while !rest.is_empty() {
        if kind != Word::Connector {
            push_lower(&mut out, kind, word, connector);
        }
        let (prev, last) = (kind, word);
        (kind, word, rest) = next_word(rest);
        match prev {
            Word::Number => {
                while alnum(kind) {
                    push_lower(&mut out, kind, word, connector);
                    (kind, word, rest) = next_word(rest);
                }
                if joins(kind) {
                    out.push(connector);
                }
            }
            Word::Connector => push_lower(&mut out, prev, last, connector),
            Word::Punct => {}
            _ => {
                if kind != Word::Number {
                    if kind != Word::Connector && kind != Word::Punct {
                        out.push(connector);
                    }
                    continue;
                }
                if rest.is_empty() {
                    continue;
                }
                let number = word;
                (kind, word, rest) = next_word(rest);
                if kind != Word::Alphabet {
                    // A number is part of the word before it ("Bld4Floor" → "bld4_floor").
                    push_lower(&mut out, Word::Number, number, connector);
                    if kind != Word::Connector && kind != Word::Punct {
                        out.push(connector);
                    }
                    continue;
                }
                // Letters after a number start a word with it ("HTTP2xx" → "http_2xx").
                out.push(connector);
                push_lower(&mut out, Word::Number, number, connector);
                while alnum(kind) {
                    push_lower(&mut out, kind, word, connector);
                    (kind, word, rest) = next_word(rest);
                }
                if joins(kind) {
                    out.push(connector);
                }
            }
        }
    }
    push_lower(&mut out, kind, word, connector);
    out
}

/// xstrings v1.5's `ToPascalCase`: connectors between words removed, each word's first
/// letter upper-cased and the capitals that directly follow it lowered (`HTTPServer` →
/// `Httpserver`); leading connectors and connectors in runs kept.
fn to_pascal(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    let mut first_upper = false;
    let mut r0 = None;
    for c in chars.by_ref() {
        if !is_connector(c) {
            first_upper = is_upper(c);
            r0 = Some(to_upper(c));
            break;
        }
        out.push(c);
    }
    let Some(mut r0) = r0 else {
        // Only connectors: xstrings writes the last one a second time ("_" → "__").
        out.extend(s.chars().last());
        return out;
    };
    for c in chars {
        let r1 = r0;
        r0 = c;
        if is_connector(r0) && is_connector(r1) {
            out.push(r1);
            continue;
        }
        if is_connector(r1) {
            first_upper = is_upper(r0);
            r0 = to_upper(r0);
        } else {
            if first_upper {
                if is_upper(r0) {
                    r0 = to_lower(r0);
                } else {
                    first_upper = false;
                }
            }
            out.push(r1);
        }
    }
    out.push(r0);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snake_and_kebab_case_split_words_as_xstrings() {
        for (input, snake) in [
            ("FirstName", "first_name"),
            ("HTTPServer", "http_server"),
            ("NoHTTPS", "no_https"),
            ("GO_PATH", "go_path"),
            ("GO PATH", "go_path"),
            ("GO-PATH", "go_path"),
            ("http2xx", "http_2xx"),
            ("HTTP20xOK", "http_20x_ok"),
            ("Duration2m3s", "duration_2m3s"),
            ("Bld4Floor3rd", "bld4_floor_3rd"),
        ] {
            assert_eq!(to_lower_words(input, '_'), snake, "{input}");
            assert_eq!(
                to_lower_words(input, '-'),
                snake.replace('_', "-"),
                "{input}"
            );
        }
    }

    #[test]
    fn pascal_case_follows_xstrings_1_5() {
        for (input, want) in [
            ("some_words", "SomeWords"),
            ("http_server", "HttpServer"),
            ("no_https", "NoHttps"),
            ("_complex__case_", "_Complex_Case_"),
            ("some words", "SomeWords"),
            ("GOLANG_IS_GREAT", "GolangIsGreat"),
            ("", ""),
            ("x", "X"),
            ("__", "___"),
            ("HTTPServer", "Httpserver"),
        ] {
            assert_eq!(to_pascal(input), want, "{input}");
        }
    }
}
