//! Sprig's string functions: trimming, case, substrings, quoting, indentation, splitting
//! and joining, random strings. Indexes count bytes, as Go's do; a cut inside a UTF-8
//! sequence shows U+FFFD where Go would print the raw bytes.

use rand::Rng;
use rand::seq::SliceRandom;

use super::{Funcs, byte_slice, fail, n, s, string_list, strval};
use crate::ParamType::{Any, Int, String as Str};
use crate::{Function, Value};

pub(super) fn register(m: &mut Funcs) {
    m.add("trim", str1(|x| x.trim().to_string()));
    m.add(
        "upper",
        str1(|x| map_chars(x, |c| simple(c.to_uppercase(), c))),
    );
    m.add(
        "lower",
        str1(|x| map_chars(x, |c| simple(c.to_lowercase(), c))),
    );
    m.add("title", str1(title));
    m.add("untitle", str1(untitle));
    m.add("nospace", str1(nospace));
    m.add(
        "wrap",
        Function::new(&[Int, Str], |a| {
            Ok(Value::from(wrap(s(a, 1), n(a, 0), "", false)))
        }),
    );
    m.add(
        "wrapWith",
        Function::new(&[Int, Str, Str], |a| {
            Ok(Value::from(wrap(s(a, 2), n(a, 0), s(a, 1), true)))
        }),
    );
    m.add("initials", str1(initials));
    m.add("swapcase", str1(swapcase));
    m.add("shuffle", str1(shuffle));
    for name in ["trimAll", "trimall"] {
        m.add(
            name,
            str2(|cut, x| x.trim_matches(|c| cut.contains(c)).to_string()),
        );
    }
    m.add(
        "trimSuffix",
        str2(|suf, x| x.strip_suffix(suf).unwrap_or(x).to_string()),
    );
    m.add(
        "trimPrefix",
        str2(|pre, x| x.strip_prefix(pre).unwrap_or(x).to_string()),
    );
    m.add("contains", pred2(|sub, x| x.contains(sub)));
    m.add("hasPrefix", pred2(|sub, x| x.starts_with(sub)));
    m.add("hasSuffix", pred2(|sub, x| x.ends_with(sub)));
    m.add(
        "repeat",
        Function::new(&[Int, Str], |a| repeat(s(a, 1), n(a, 0)).map(Value::from)),
    );
    m.add(
        "trunc",
        Function::new(&[Int, Str], |a| Ok(Value::from(trunc(n(a, 0), s(a, 1))))),
    );
    m.add(
        "substr",
        Function::new(&[Int, Int, Str], |a| {
            substr(n(a, 0), n(a, 1), s(a, 2)).map(Value::from)
        }),
    );
    m.add(
        "abbrev",
        Function::new(&[Int, Str], |a| {
            let (w, x) = (n(a, 0), s(a, 1));
            if w < 4 {
                return Ok(Value::from(x));
            }
            abbreviate(x, 0, w).map(Value::from)
        }),
    );
    m.add(
        "abbrevboth",
        Function::new(&[Int, Int, Str], |a| {
            let (l, r, x) = (n(a, 0), n(a, 1), s(a, 2));
            if r < 4 || l > 0 && r < 7 {
                return Ok(Value::from(x));
            }
            abbreviate(x, l, r).map(Value::from)
        }),
    );
    for (name, alphabet) in [
        ("randAlphaNum", ALNUM),
        ("randAlpha", &ALNUM[10..]),
        ("randNumeric", &ALNUM[..10]),
        ("randAscii", ASCII),
    ] {
        m.add(
            name,
            Function::new(&[Int], move |a| {
                super::bound(name, n(a, 0).max(0) as u64)?;
                Ok(Value::from(random(alphabet, n(a, 0))))
            }),
        );
    }
    m.add(
        "quote",
        Function::variadic(&[], Any, |a| {
            let out: Vec<String> = a
                .iter()
                .filter(|v| !v.is_nil())
                .map(|v| crate::gofmt::go_quote(&strval(v)))
                .collect();
            Ok(Value::from(out.join(" ")))
        }),
    );
    m.add(
        "squote",
        Function::variadic(&[], Any, |a| {
            let out: Vec<String> = a
                .iter()
                .filter(|v| !v.is_nil())
                .map(|v| format!("'{}'", crate::gofmt::sprint_value(v)))
                .collect();
            Ok(Value::from(out.join(" ")))
        }),
    );
    m.add(
        "cat",
        Function::variadic(&[], Any, |a| {
            let out: Vec<String> = a
                .iter()
                .filter(|v| !v.is_nil())
                .map(crate::gofmt::sprint_value)
                .collect();
            Ok(Value::from(out.join(" ")))
        }),
    );
    m.add(
        "indent",
        Function::new(&[Int, Str], |a| indent(n(a, 0), s(a, 1)).map(Value::from)),
    );
    m.add(
        "nindent",
        Function::new(&[Int, Str], |a| {
            indent(n(a, 0), s(a, 1)).map(|x| Value::from(format!("\n{x}")))
        }),
    );
    m.add(
        "replace",
        Function::new(&[Str, Str, Str], |a| {
            Ok(Value::from(go_replace(s(a, 2), s(a, 0), s(a, 1))))
        }),
    );
    m.add(
        "plural",
        Function::new(&[Str, Str, Int], |a| {
            Ok(Value::from(if n(a, 2) == 1 { s(a, 0) } else { s(a, 1) }))
        }),
    );
    m.add(
        "splitList",
        Function::new(&[Str, Str], |a| {
            Ok(string_list(go_split(s(a, 1), s(a, 0), -1)))
        }),
    );
    m.add(
        "split",
        Function::new(&[Str, Str], |a| Ok(indexed(go_split(s(a, 1), s(a, 0), -1)))),
    );
    m.add(
        "splitn",
        Function::new(&[Str, Int, Str], |a| {
            Ok(indexed(go_split(s(a, 2), s(a, 0), n(a, 1))))
        }),
    );
    m.add(
        "join",
        Function::new(&[Str, Any], |a| {
            Ok(Value::from(strslice(&a[1]).join(s(a, 0))))
        }),
    );
    m.add(
        "toStrings",
        Function::new(&[Any], |a| Ok(string_list(strslice(&a[0])))),
    );
    m.add(
        "sortAlpha",
        Function::new(&[Any], |a| {
            let mut v = match &*a[0].plain() {
                Value::List(_) => strslice(&a[0]),
                other => vec![strval(other)],
            };
            v.sort();
            Ok(string_list(v))
        }),
    );
    m.add(
        "toString",
        Function::new(&[Any], |a| Ok(Value::from(strval(&a[0])))),
    );
}

fn str1(f: impl Fn(&str) -> String + Send + Sync + 'static) -> Function {
    Function::new(&[Str], move |a| Ok(Value::from(f(s(a, 0)))))
}

/// A two-string function; Sprig puts the subject last (`trimSuffix "-" $name`).
fn str2(f: impl Fn(&str, &str) -> String + Send + Sync + 'static) -> Function {
    Function::new(&[Str, Str], move |a| Ok(Value::from(f(s(a, 0), s(a, 1)))))
}

fn pred2(f: impl Fn(&str, &str) -> bool + Send + Sync + 'static) -> Function {
    Function::new(&[Str, Str], move |a| Ok(Value::Bool(f(s(a, 0), s(a, 1)))))
}

fn map_chars(x: &str, f: impl Fn(char) -> char) -> String {
    x.chars().map(f).collect()
}

/// Go's simple (one rune to one rune) case mapping: a rune whose mapping is longer stays.
fn simple(mut mapped: impl Iterator<Item = char>, c: char) -> char {
    match (mapped.next(), mapped.next()) {
        (Some(m), None) => m,
        _ => c,
    }
}

/// Go's `strings.Title`: the first letter of each word upper-cased.
fn title(x: &str) -> String {
    let is_sep = |r: char| {
        if r.is_ascii() {
            return !(r.is_ascii_alphanumeric() || r == '_');
        }
        if r.is_alphabetic() || r.is_numeric() {
            return false;
        }
        r.is_whitespace()
    };
    let mut prev = ' ';
    x.chars()
        .map(|r| {
            let out = if is_sep(prev) {
                simple(r.to_uppercase(), r)
            } else {
                r
            };
            prev = r;
            out
        })
        .collect()
}

/// goutils' `Uncapitalize`: the first rune of each whitespace-separated word lower-cased.
fn untitle(x: &str) -> String {
    let mut gap = true;
    x.chars()
        .map(|c| {
            let out = if gap { simple(c.to_lowercase(), c) } else { c };
            gap = c.is_whitespace();
            out
        })
        .collect()
}

/// goutils' `DeleteWhiteSpace`, which walks bytes: each byte is taken as the rune of the
/// same number, so a string with white space and non-ASCII text comes out re-encoded as
/// Latin-1 runes (and bytes 0x85 and 0xA0 count as space), as in Go.
fn nospace(x: &str) -> String {
    let is_space = |b: u8| matches!(b, b'\t' | b'\n' | 0x0b | 0x0c | b'\r' | b' ' | 0x85 | 0xa0);
    if !x.bytes().any(is_space) {
        return x.to_string();
    }
    x.bytes()
        .filter(|b| !is_space(*b))
        .map(char::from)
        .collect()
}

/// goutils' `WrapCustom` (byte offsets, breaking at spaces; `long` also breaks words longer
/// than the width).
fn wrap(x: &str, width: i64, newline: &str, long: bool) -> String {
    let b = x.as_bytes();
    if b.is_empty() {
        return String::new();
    }
    let newline = if newline.is_empty() { "\n" } else { newline }.as_bytes();
    let width = width.max(1) as usize;
    let mut out: Vec<u8> = Vec::with_capacity(b.len() + 16);
    let mut offset = 0usize;
    while b.len() - offset > width {
        if b[offset] == b' ' {
            offset += 1;
            continue;
        }
        let end = width + offset + 1;
        let space = b[offset..end].iter().rposition(|c| *c == b' ');
        if let Some(at) = space.map(|i| i + offset) {
            out.extend_from_slice(&b[offset..at]);
            out.extend_from_slice(newline);
            offset = at + 1;
        } else if long {
            out.extend_from_slice(&b[offset..width + offset]);
            out.extend_from_slice(newline);
            offset += width;
        } else {
            let end = width + offset;
            match b[end..].iter().position(|c| *c == b' ') {
                None => {
                    out.extend_from_slice(&b[offset..]);
                    offset = b.len();
                }
                Some(i) => {
                    out.extend_from_slice(&b[offset..i + end]);
                    out.extend_from_slice(newline);
                    offset = i + end + 1;
                }
            }
        }
    }
    out.extend_from_slice(&b[offset..]);
    String::from_utf8_lossy(&out).into_owned()
}

/// goutils' `SwapCase`: upper to lower, lower to upper (Go uses title case at a word's
/// start, which differs from upper case only for a few digraphs such as `ǆ`).
fn swapcase(x: &str) -> String {
    x.chars()
        .map(|c| {
            if c.is_uppercase() {
                simple(c.to_lowercase(), c)
            } else if c.is_lowercase() {
                simple(c.to_uppercase(), c)
            } else {
                c
            }
        })
        .collect()
}

/// goutils' `Initials`: the first rune of each whitespace-separated word.
fn initials(x: &str) -> String {
    let mut out = String::new();
    let mut gap = true;
    for c in x.chars() {
        if c.is_whitespace() {
            gap = true;
        } else if gap {
            out.push(c);
            gap = false;
        }
    }
    out
}

fn shuffle(x: &str) -> String {
    let mut cs: Vec<char> = x.chars().collect();
    cs.shuffle(&mut rand::rng());
    cs.into_iter().collect()
}

/// Go's `strings.Repeat`, with its panics.
fn repeat(x: &str, count: i64) -> Result<String, crate::FuncError> {
    if count < 0 {
        return fail("strings: negative Repeat count");
    }
    match (x.len() as u64).checked_mul(count as u64) {
        Some(total) if total <= i64::MAX as u64 => super::bound("repeat", total)?,
        _ => return fail("strings: Repeat output length overflow"),
    }
    Ok(x.repeat(count as usize))
}

fn trunc(c: i64, x: &str) -> String {
    let len = x.len() as i64;
    let r = if c < 0 && len + c > 0 {
        byte_slice(x, len + c, len)
    } else if c >= 0 && len > c {
        byte_slice(x, 0, c)
    } else {
        Ok(x.to_string())
    };
    r.unwrap_or_default()
}

fn substr(start: i64, end: i64, x: &str) -> Result<String, crate::FuncError> {
    let len = x.len() as i64;
    if start < 0 {
        return byte_slice(x, 0, end);
    }
    if end < 0 || end > len {
        if start > len {
            return fail(format!(
                "runtime error: slice bounds out of range [{start}:{len}]"
            ));
        }
        return byte_slice(x, start, len);
    }
    byte_slice(x, start, end)
}

/// goutils' `AbbreviateFull` (the width checks are done by the callers).
fn abbreviate(x: &str, offset: i64, width: i64) -> Result<String, crate::FuncError> {
    let len = x.len() as i64;
    if x.is_empty() || len <= width {
        return Ok(x.to_string());
    }
    let mut offset = offset.min(len);
    if len - offset < width - 3 {
        offset = len - (width - 3);
    }
    if offset <= 4 {
        return Ok(format!("{}...", byte_slice(x, 0, width - 3)?));
    }
    if offset + width - 3 < len {
        let rest = byte_slice(x, offset, len)?;
        return Ok(format!("...{}", abbreviate(&rest, 0, width - 3)?));
    }
    Ok(format!("...{}", byte_slice(x, len - (width - 3), len)?))
}

const ALNUM: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
const ASCII: &[u8] = b" !\"#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~";

/// A random string of `count` characters from `alphabet`; goutils fails for a negative
/// count and Sprig then returns "".
fn random(alphabet: &[u8], count: i64) -> String {
    let mut rng = rand::rng();
    (0..count.max(0))
        .map(|_| alphabet[rng.random_range(0..alphabet.len())] as char)
        .collect()
}

fn indent(spaces: i64, x: &str) -> Result<String, crate::FuncError> {
    let pad = repeat(" ", spaces)?;
    Ok(format!("{pad}{}", x.replace('\n', &format!("\n{pad}"))))
}

/// Go's `strings.Replace(src, old, new, -1)`: an empty `old` matches before every rune and
/// at the end.
pub(crate) fn go_replace(src: &str, old: &str, new: &str) -> String {
    if !old.is_empty() {
        return src.replace(old, new);
    }
    let mut out = String::with_capacity(src.len() + new.len() * (src.len() + 1));
    out.push_str(new);
    for c in src.chars() {
        out.push(c);
        out.push_str(new);
    }
    out
}

/// Go's `strings.SplitN` (`n < 0`: all parts; `n == 0`: none; an empty separator splits
/// into runes).
pub(crate) fn go_split(x: &str, sep: &str, n: i64) -> Vec<String> {
    if n == 0 {
        return Vec::new();
    }
    if sep.is_empty() {
        let cs: Vec<char> = x.chars().collect();
        let limit = if n < 0 || n as usize > cs.len() {
            cs.len()
        } else {
            n as usize
        };
        let mut out: Vec<String> = cs[..limit.saturating_sub(1)]
            .iter()
            .map(|c| c.to_string())
            .collect();
        if limit > 0 {
            out.push(cs[limit - 1..].iter().collect());
        }
        return out;
    }
    if n < 0 {
        x.split(sep).map(str::to_string).collect()
    } else {
        x.splitn(n as usize, sep).map(str::to_string).collect()
    }
}

/// Sprig's `split`: parts keyed `_0`, `_1`, …
fn indexed(parts: Vec<String>) -> Value {
    Value::map(
        parts
            .into_iter()
            .enumerate()
            .map(|(i, p)| (format!("_{i}"), Value::from(p)))
            .collect(),
    )
}

/// Sprig's `strslice`: a list's non-nil elements as strings; nil is empty; anything else
/// is one string.
pub(crate) fn strslice(v: &Value) -> Vec<String> {
    match &*v.plain() {
        Value::List(l) => l.iter().filter(|x| !x.is_nil()).map(strval).collect(),
        Value::Nil => Vec::new(),
        other => vec![strval(other)],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_split_matches_strings_split_n() {
        assert_eq!(go_split("a,b,c", ",", 2), ["a", "b,c"]);
        assert_eq!(go_split("abc", "", -1), ["a", "b", "c"]);
        assert_eq!(go_split("abc", "", 2), ["a", "bc"]);
        assert!(go_split("abc", ",", 0).is_empty());
        assert_eq!(go_split("", ",", -1), [""]);
    }

    #[test]
    fn abbreviate_follows_goutils() {
        assert_eq!(abbreviate("hello world", 0, 5).unwrap(), "he...");
        assert_eq!(abbreviate("abcdefghijklmno", 5, 10).unwrap(), "...fghi...");
    }
}
