//! Go's `os.Expand`, which operator-sdk's operators apply to `watches.yaml` (environment
//! references in chart overrides and in the whole Ansible watches file).

/// Go's `os.Expand`: `${NAME}`, `$NAME` (letters, digits, `_`) and the one-character shell
/// specials (`$1`, `$?`…) are replaced by `mapping(NAME)`; a lone `$` stays, bad syntax (`${}`,
/// an unclosed `${`) is dropped. `os.ExpandEnv` is `mapping` = the variable or empty.
pub fn go_expand(s: &str, mapping: &dyn Fn(&str) -> String) -> String {
    let special = |c: u8| b"*#$@!?-".contains(&c) || c.is_ascii_digit();
    let bytes = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    let mut j = 0;
    while j < bytes.len() {
        if bytes[j] == b'$' && j + 1 < bytes.len() {
            out.push_str(&s[i..j]);
            let rest = &s[j + 1..];
            let (name, width) = shell_name(rest, special);
            match (name, width) {
                ("", w) if w > 0 => {}
                ("", _) => out.push('$'),
                (name, _) => out.push_str(&mapping(name)),
            }
            j += width;
            i = j + 1;
        }
        j += 1;
    }
    out.push_str(&s[i.min(s.len())..]);
    out
}

/// The variable name at the start of `s` (after a `$`) and how many bytes it takes.
fn shell_name(s: &str, special: impl Fn(u8) -> bool) -> (&str, usize) {
    let b = s.as_bytes();
    if b[0] == b'{' {
        if b.len() > 2 && special(b[1]) && b[2] == b'}' {
            return (&s[1..2], 3);
        }
        return match s[1..].find('}') {
            Some(0) => ("", 2),
            Some(end) => (&s[1..end + 1], end + 2),
            None => ("", 1),
        };
    }
    if special(b[0]) {
        return (&s[0..1], 1);
    }
    let len = b
        .iter()
        .take_while(|c| c.is_ascii_alphanumeric() || **c == b'_')
        .count();
    (&s[..len], len)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> String {
        match name {
            "IMAGE" => "quay.io/app".into(),
            "TAG" => "v2".into(),
            "1" => "one".into(),
            _ => String::new(),
        }
    }

    #[test]
    fn expands_like_gos_os_expand() {
        assert_eq!(go_expand("$IMAGE:${TAG}", &env), "quay.io/app:v2");
        assert_eq!(go_expand("a-$UNSET-b", &env), "a--b");
        assert_eq!(go_expand("${1}$1x", &env), "oneonex");
        assert_eq!(go_expand("cost: 5$", &env), "cost: 5$");
        assert_eq!(go_expand("$ sign", &env), "$ sign");
        assert_eq!(go_expand("bad${}syntax", &env), "badsyntax");
        assert_eq!(go_expand("open${IMAGE", &env), "openIMAGE");
        assert_eq!(go_expand("plain", &env), "plain");
    }
}
