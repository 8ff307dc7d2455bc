//! Sprig's slash-separated path functions (Go's `path` package: `base`, `dir`, `clean`,
//! `ext`, `isAbs`, and their `path/filepath` twins `osBase`, `osDir`, `osClean`, `osExt`,
//! `osIsAbs`), the environment (`env`, `expandenv`, as Go's `os.Getenv` and
//! `os.ExpandEnv`) and Sprig's `hello`.

use super::{Funcs, s};
use crate::ParamType::String as Str;
use crate::{Function, Value};

pub(super) fn register(m: &mut Funcs) {
    // `os*` are Go's `path/filepath` forms, the same as `path` on the Unix systems Helm
    // and KUDO render on.
    let fns: [(&str, StrFn); 10] = [
        ("base", base),
        ("osBase", base),
        ("dir", dir),
        ("osDir", dir),
        ("clean", clean),
        ("osClean", clean),
        ("ext", |p| ext(p).to_string()),
        ("osExt", |p| ext(p).to_string()),
        ("env", |k| std::env::var(k).unwrap_or_default()),
        ("expandenv", |x| {
            expand(x, |k| std::env::var(k).unwrap_or_default())
        }),
    ];
    for (name, f) in fns {
        m.add(
            name,
            Function::new(&[Str], move |a| Ok(Value::from(f(s(a, 0))))),
        );
    }
    for name in ["isAbs", "osIsAbs"] {
        m.add(
            name,
            Function::new(&[Str], |a| Ok(Value::Bool(s(a, 0).starts_with('/')))),
        );
    }
    m.add("hello", Function::new(&[], |_| Ok(Value::from("Hello!"))));
}

type StrFn = fn(&str) -> String;

/// Go's `path.Clean`: the shortest equivalent path by lexical processing.
pub(crate) fn clean(p: &str) -> String {
    if p.is_empty() {
        return ".".into();
    }
    let rooted = p.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for part in p.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|l| *l != "..") {
                    parts.pop();
                } else if !rooted {
                    parts.push("..");
                }
            }
            other => parts.push(other),
        }
    }
    let joined = parts.join("/");
    match (rooted, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".into(),
        (false, false) => joined,
    }
}

/// Go's `path.Base`: the last element; `.` for empty, `/` for only slashes.
fn base(p: &str) -> String {
    if p.is_empty() {
        return ".".into();
    }
    let trimmed = p.trim_end_matches('/');
    if trimmed.is_empty() {
        return "/".into();
    }
    trimmed.rsplit('/').next().unwrap_or(trimmed).to_string()
}

/// Go's `path.Dir`: everything but the last element, cleaned.
fn dir(p: &str) -> String {
    let cut = p.rfind('/').map(|i| i + 1).unwrap_or(0);
    clean(&p[..cut])
}

/// Go's `path.Ext`: the suffix from the final dot of the last element.
fn ext(p: &str) -> &str {
    for (i, c) in p.char_indices().rev() {
        match c {
            '/' => return "",
            '.' => return &p[i..],
            _ => {}
        }
    }
    ""
}

/// Go's `os.Expand`: `$NAME`, `${NAME}` and the shell's special one-character names.
fn expand(s: &str, lookup: impl Fn(&str) -> String) -> String {
    let b = s.as_bytes();
    let mut out = String::new();
    let mut i = 0;
    let mut j = 0;
    let mut changed = false;
    while j < b.len() {
        if b[j] == b'$' && j + 1 < b.len() {
            changed = true;
            out.push_str(&s[i..j]);
            let (name, w) = shell_name(&s[j + 1..]);
            if name.is_empty() && w > 0 {
                // Bad syntax: Go eats it.
            } else if name.is_empty() {
                out.push('$');
            } else {
                out.push_str(&lookup(name));
            }
            j += w;
            i = j + 1;
        }
        j += 1;
    }
    if !changed {
        return s.to_string();
    }
    out.push_str(s.get(i..).unwrap_or_default());
    out
}

fn is_special(c: u8) -> bool {
    matches!(
        c,
        b'*' | b'#' | b'$' | b'@' | b'!' | b'?' | b'-' | b'0'..=b'9'
    )
}

/// Go's `getShellName`: the name after `$` and how many bytes it takes.
fn shell_name(s: &str) -> (&str, usize) {
    let b = s.as_bytes();
    if b[0] == b'{' {
        if b.len() > 2 && is_special(b[1]) && b[2] == b'}' {
            return (&s[1..2], 3);
        }
        for i in 1..b.len() {
            if b[i] == b'}' {
                if i == 1 {
                    return ("", 2);
                }
                return (&s[1..i], i + 1);
            }
        }
        return ("", 1);
    }
    if is_special(b[0]) {
        return (&s[..1], 1);
    }
    let n = b
        .iter()
        .take_while(|c| c.is_ascii_alphanumeric() || **c == b'_')
        .count();
    (&s[..n], n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_follow_go() {
        assert_eq!(clean("a/../../b/./c//"), "../b/c");
        assert_eq!(clean("/../a"), "/a");
        assert_eq!(base("/a/b/"), "b");
        assert_eq!(dir("a/b/c"), "a/b");
        assert_eq!(dir("abc"), ".");
        assert_eq!(ext("a/b.tar.gz"), ".gz");
        assert_eq!(ext("a.b/c"), "");
    }

    #[test]
    fn expand_follows_os_expand() {
        let env = |k: &str| format!("<{k}>");
        assert_eq!(expand("$A-${B}c $ ${} $1x", env), "<A>-<B>c $  <1>x");
        assert_eq!(expand("x$", env), "x$");
    }
}
