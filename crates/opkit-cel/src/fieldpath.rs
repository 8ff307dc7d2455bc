//! `fieldPath` of a rule: a relative JSON path (`.spec.foo`, `.labels['app.kubernetes.io/name']`)
//! that must name a field the schema declares. Checked when the CRD is written; the normalized
//! form (`spec.foo`, `labels[app.kubernetes.io/name]`) is appended to the node's path in errors.

use crate::convert::Shape;

/// Splits like upstream's scanner: `.`, `[` and `]` are single-character tokens, a token starting
/// with `'` runs to the next unescaped `'`, anything else runs to the next delimiter.
fn tokens(path: &str) -> Vec<&str> {
    let b = path.as_bytes();
    let mut out = Vec::new();
    let mut start = 0;
    while start < b.len() {
        let mut i = start;
        let end = if b[start] == b'\'' {
            i += 1;
            loop {
                if i >= b.len() {
                    break b.len();
                }
                if b[i] == b'\'' && b[i - 1] != b'\\' {
                    break i + 1;
                }
                i += 1;
            }
        } else if matches!(b[start], b'.' | b'[' | b']') {
            start + 1
        } else {
            while i < b.len() && !matches!(b[i], b'.' | b'[' | b']') {
                i += 1;
            }
            i
        };
        out.push(&path[start..end]);
        start = end;
    }
    out
}

fn unescape_single_quoted(s: &str) -> Result<String, String> {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some(d) = chars.next() else {
            out.push('\\');
            break;
        };
        out.push(match d {
            'a' => '\u{7}',
            'b' => '\u{8}',
            'f' => '\u{c}',
            'n' => '\n',
            'r' => '\r',
            't' => '\t',
            'v' => '\u{b}',
            '\'' => '\'',
            '\\' => '\\',
            other => return Err(format!("invalid escape char \\{other}")),
        });
    }
    Ok(out)
}

/// Validates `path` against `shape`; returns the normalized field path (as apimachinery's
/// `field.Path` would print it) or upstream's error text.
pub(crate) fn valid_field_path(path: &str, shape: &Shape) -> Result<String, String> {
    let mut out = String::new();
    let mut cur = shape;
    let toks = tokens(path);
    let mut it = toks.into_iter();
    let step = |name: String, cur: &mut &Shape, out: &mut String| -> Result<(), String> {
        if !cur.properties.is_empty() {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&name);
            match cur.properties.get(&name) {
                Some(p) => *cur = p,
                None => return Err("does not refer to a valid field".into()),
            }
        } else if let Some(ap) = cur.additional.as_deref() {
            out.push('[');
            out.push_str(&name);
            out.push(']');
            *cur = ap;
        } else {
            return Err("does not refer to a valid field".into());
        }
        Ok(())
    };
    while let Some(tok) = it.next() {
        match tok {
            "[" => {
                let Some(q) = it.next() else {
                    return Err("unexpected end of JSON path".into());
                };
                if q.len() < 2 || !q.starts_with('\'') || !q.ends_with('\'') {
                    return Err(format!("expected single quoted string but got {q}"));
                }
                let name = unescape_single_quoted(&q[1..q.len() - 1])
                    .map_err(|e| format!("invalid string literal: {e}"))?;
                step(name, &mut cur, &mut out)?;
                match it.next() {
                    None => return Err("unexpected end of JSON path".into()),
                    Some("]") => {}
                    Some(other) => return Err(format!("expected ] but got {other}")),
                }
            }
            "." => {
                let Some(name) = it.next() else {
                    return Err("unexpected end of JSON path".into());
                };
                step(name.to_string(), &mut cur, &mut out)?;
            }
            other => return Err(format!("expected [ or . but got: {other}")),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape() -> Shape {
        let mut s = Shape {
            ty: "object".into(),
            ..Shape::default()
        };
        let mut foo = Shape {
            ty: "object".into(),
            ..Shape::default()
        };
        foo.properties.insert("b.c".into(), Shape::default());
        s.properties.insert("foo".into(), foo);
        s.properties.insert(
            "labels".into(),
            Shape {
                ty: "object".into(),
                additional: Some(Box::new(Shape::default())),
                ..Shape::default()
            },
        );
        s.properties.insert("list".into(), Shape::default());
        s
    }

    #[test]
    fn valid_paths_normalize() {
        let s = shape();
        assert_eq!(valid_field_path(".foo", &s).unwrap(), "foo");
        assert_eq!(valid_field_path(".foo['b.c']", &s).unwrap(), "foo.b.c");
        assert_eq!(
            valid_field_path(".labels['app.k8s.io/x']", &s).unwrap(),
            "labels[app.k8s.io/x]"
        );
        assert_eq!(valid_field_path(".labels.x", &s).unwrap(), "labels[x]");
    }

    #[test]
    fn invalid_paths_say_why() {
        let s = shape();
        assert_eq!(
            valid_field_path(".a.c", &s).unwrap_err(),
            "does not refer to a valid field"
        );
        assert_eq!(
            valid_field_path(".list[0]", &s).unwrap_err(),
            "expected single quoted string but got 0"
        );
        assert_eq!(
            valid_field_path("   ", &s).unwrap_err(),
            "expected [ or . but got:    "
        );
        assert_eq!(
            valid_field_path(".foo.", &s).unwrap_err(),
            "unexpected end of JSON path"
        );
    }
}
