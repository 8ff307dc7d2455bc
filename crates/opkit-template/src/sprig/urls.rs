//! Sprig's `urlParse` and `urlJoin` over a port of Go's `net/url` parsing and printing
//! (`url.Parse`, `URL.String`, `Hostname`, the escaping modes), with Sprig's panics as
//! errors (`unable to parse url: parse "x": …`). Decoded bytes that are not UTF-8 (`%ff`)
//! show as U+FFFD, where Go keeps the raw byte.

use std::collections::BTreeMap;

use super::{Funcs, NIL_DEREF, fail, kind_of, s};
use crate::ParamType::{Map, String as Str};
use crate::{FuncError, Function, Value};

pub(super) fn register(m: &mut Funcs) {
    m.add(
        "urlParse",
        Function::new(&[Str], |a| {
            let raw = s(a, 0);
            let u = parse(raw).map_err(|e| FuncError::new(format!("unable to parse url: {e}")))?;
            let mut d = BTreeMap::new();
            let mut put = |k: &str, v: String| {
                d.insert(k.to_string(), Value::from(v));
            };
            put("scheme", u.scheme.clone());
            put("host", u.host.clone());
            put("hostname", hostname(&u.host));
            put("path", u.path.clone());
            put("query", u.raw_query.clone());
            put("opaque", u.opaque.clone());
            put("fragment", u.fragment.clone());
            put(
                "userinfo",
                u.user.as_ref().map(User::string).unwrap_or_default(),
            );
            Ok(Value::map(d))
        }),
    );
    m.add(
        "urlJoin",
        Function::new(&[Map], |a| {
            let d = match &a[0] {
                Value::Map(d) => d.to_map(),
                _ => BTreeMap::new(),
            };
            let get = |key: &str| -> Result<String, FuncError> {
                match d.get(key) {
                    None => Ok(String::new()),
                    Some(Value::String(v)) => Ok(v.to_string()),
                    Some(Value::Nil) => fail(NIL_DEREF),
                    Some(other) => fail(format!(
                        "unable to parse {key} key, must be of type string, but {} found",
                        kind_of(other)
                    )),
                }
            };
            let mut u = Url {
                scheme: get("scheme")?,
                host: get("host")?,
                path: get("path")?,
                raw_query: get("query")?,
                opaque: get("opaque")?,
                fragment: get("fragment")?,
                ..Url::default()
            };
            let userinfo = get("userinfo")?;
            if !userinfo.is_empty() {
                let temp = parse(&format!("proto://{userinfo}@host")).map_err(|e| {
                    FuncError::new(format!("unable to parse userinfo in dict: {e}"))
                })?;
                u.user = temp.user;
            }
            Ok(Value::from(u.string()))
        }),
    );
}

/// Go's `url.Userinfo`.
#[derive(Clone, Default)]
struct User {
    username: String,
    password: Option<String>,
}

impl User {
    /// `Userinfo.String`.
    fn string(&self) -> String {
        let mut out = escape(&self.username, Mode::UserPassword);
        if let Some(p) = &self.password {
            out.push(':');
            out.push_str(&escape(p, Mode::UserPassword));
        }
        out
    }
}

/// Go's `url.URL` (the fields Sprig reads and writes).
#[derive(Clone, Default)]
struct Url {
    scheme: String,
    opaque: String,
    user: Option<User>,
    host: String,
    path: String,
    raw_path: String,
    force_query: bool,
    raw_query: String,
    fragment: String,
    raw_fragment: String,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Path,
    Host,
    Zone,
    UserPassword,
    QueryComponent,
    Fragment,
}

/// Go's `shouldEscape`.
fn should_escape(c: u8, mode: Mode) -> bool {
    if c.is_ascii_alphanumeric() {
        return false;
    }
    if matches!(mode, Mode::Host | Mode::Zone)
        && matches!(
            c,
            b'!' | b'$'
                | b'&'
                | b'\''
                | b'('
                | b')'
                | b'*'
                | b'+'
                | b','
                | b';'
                | b'='
                | b':'
                | b'['
                | b']'
                | b'<'
                | b'>'
                | b'"'
        )
    {
        return false;
    }
    match c {
        b'-' | b'_' | b'.' | b'~' => return false,
        b'$' | b'&' | b'+' | b',' | b'/' | b':' | b';' | b'=' | b'?' | b'@' => match mode {
            Mode::Path => return c == b'?',
            Mode::UserPassword => return matches!(c, b'@' | b'/' | b'?' | b':'),
            Mode::QueryComponent => return true,
            Mode::Fragment => return false,
            Mode::Host | Mode::Zone => {}
        },
        _ => {}
    }
    if mode == Mode::Fragment && matches!(c, b'!' | b'(' | b')' | b'*') {
        return false;
    }
    true
}

/// Go's `escape`.
fn escape(s: &str, mode: Mode) -> String {
    let mut out = String::with_capacity(s.len());
    for &c in s.as_bytes() {
        if c == b' ' && mode == Mode::QueryComponent {
            out.push('+');
        } else if should_escape(c, mode) {
            out.push_str(&format!("%{c:02X}"));
        } else {
            out.push(char::from(c));
        }
    }
    out
}

/// Go's `strconv.Quote` as `%q` prints it.
fn quote(s: &str) -> String {
    crate::sprintf("%q", &[Value::from(s)])
}

/// Go's `unescape`, with its `invalid URL escape "%zz"` and host errors.
fn unescape(s: &str, mode: Mode) -> Result<String, String> {
    let b = s.as_bytes();
    let hex = |c: u8| c.is_ascii_hexdigit();
    let val = |c: u8| (c as char).to_digit(16).unwrap_or(0) as u8;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                if i + 2 >= b.len() || !hex(b[i + 1]) || !hex(b[i + 2]) {
                    let end = (i + 3).min(b.len());
                    let bad = String::from_utf8_lossy(&b[i..end]);
                    return Err(format!("invalid URL escape {}", quote(&bad)));
                }
                let esc = &s[i..i + 3];
                if mode == Mode::Host && val(b[i + 1]) < 8 && esc != "%25" {
                    return Err(format!("invalid URL escape {}", quote(esc)));
                }
                if mode == Mode::Zone {
                    let v = val(b[i + 1]) << 4 | val(b[i + 2]);
                    if esc != "%25" && v != b' ' && should_escape(v, Mode::Host) {
                        return Err(format!("invalid URL escape {}", quote(esc)));
                    }
                }
                i += 3;
            }
            c => {
                if matches!(mode, Mode::Host | Mode::Zone) && c < 0x80 && should_escape(c, mode) {
                    return Err(format!(
                        "invalid character {} in host name",
                        quote(&(c as char).to_string())
                    ));
                }
                i += 1;
            }
        }
    }
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                out.push(val(b[i + 1]) << 4 | val(b[i + 2]));
                i += 3;
            }
            b'+' if mode == Mode::QueryComponent => {
                out.push(b' ');
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// Go's `getScheme`.
fn get_scheme(raw: &str) -> Result<(&str, &str), String> {
    for (i, c) in raw.bytes().enumerate() {
        match c {
            b'a'..=b'z' | b'A'..=b'Z' => {}
            b'0'..=b'9' | b'+' | b'-' | b'.' if i == 0 => return Ok(("", raw)),
            b'0'..=b'9' | b'+' | b'-' | b'.' => {}
            b':' if i == 0 => return Err("missing protocol scheme".into()),
            b':' => return Ok((&raw[..i], &raw[i + 1..])),
            _ => return Ok(("", raw)),
        }
    }
    Ok(("", raw))
}

/// Go's `url.Parse`, with its `parse "URL": …` error.
fn parse(raw: &str) -> Result<Url, String> {
    let (u, frag) = raw.split_once('#').unwrap_or((raw, ""));
    let mut url = parse_no_fragment(u).map_err(|e| format!("parse {}: {e}", quote(u)))?;
    if frag.is_empty() {
        return Ok(url);
    }
    url.fragment =
        unescape(frag, Mode::Fragment).map_err(|e| format!("parse {}: {e}", quote(raw)))?;
    url.raw_fragment = if escape(&url.fragment, Mode::Fragment) == frag {
        String::new()
    } else {
        frag.to_string()
    };
    Ok(url)
}

fn parse_no_fragment(raw: &str) -> Result<Url, String> {
    if raw.bytes().any(|b| b < b' ' || b == 0x7f) {
        return Err("net/url: invalid control character in URL".into());
    }
    let mut url = Url::default();
    if raw == "*" {
        url.path = "*".into();
        return Ok(url);
    }
    let (scheme, mut rest) = get_scheme(raw)?;
    url.scheme = scheme.to_ascii_lowercase();
    if rest.ends_with('?') && rest.matches('?').count() == 1 {
        url.force_query = true;
        rest = &rest[..rest.len() - 1];
    } else if let Some((r, q)) = rest.split_once('?') {
        url.raw_query = q.to_string();
        rest = r;
    }
    if !rest.starts_with('/') {
        if !url.scheme.is_empty() {
            url.opaque = rest.to_string();
            return Ok(url);
        }
        if rest.split('/').next().is_some_and(|seg| seg.contains(':')) {
            return Err("first path segment in URL cannot contain colon".into());
        }
    }
    if (!url.scheme.is_empty() || !rest.starts_with("///")) && rest.starts_with("//") {
        let authority = &rest[2..];
        let (authority, path) = match authority.find('/') {
            Some(i) => (&authority[..i], &authority[i..]),
            None => (authority, ""),
        };
        let (user, host) = parse_authority(authority)?;
        url.user = user;
        url.host = host;
        rest = path;
    }
    url.path = unescape(rest, Mode::Path)?;
    url.raw_path = if escape(&url.path, Mode::Path) == rest {
        String::new()
    } else {
        rest.to_string()
    };
    Ok(url)
}

/// Go's `validUserinfo`.
fn valid_userinfo(s: &str) -> bool {
    s.chars().all(|r| {
        r.is_ascii_alphanumeric()
            || matches!(
                r,
                '-' | '.'
                    | '_'
                    | ':'
                    | '~'
                    | '!'
                    | '$'
                    | '&'
                    | '\''
                    | '('
                    | ')'
                    | '*'
                    | '+'
                    | ','
                    | ';'
                    | '='
                    | '%'
                    | '@'
            )
    })
}

fn parse_authority(authority: &str) -> Result<(Option<User>, String), String> {
    let at = authority.rfind('@');
    let host = parse_host(at.map_or(authority, |i| &authority[i + 1..]))?;
    let Some(i) = at else {
        return Ok((None, host));
    };
    let userinfo = &authority[..i];
    if !valid_userinfo(userinfo) {
        return Err("net/url: invalid userinfo".into());
    }
    let user = match userinfo.split_once(':') {
        None => User {
            username: unescape(userinfo, Mode::UserPassword)?,
            password: None,
        },
        Some((name, pass)) => User {
            username: unescape(name, Mode::UserPassword)?,
            password: Some(unescape(pass, Mode::UserPassword)?),
        },
    };
    Ok((Some(user), host))
}

/// Go's `validOptionalPort`.
fn valid_optional_port(port: &str) -> bool {
    port.is_empty()
        || port
            .strip_prefix(':')
            .is_some_and(|p| p.bytes().all(|b| b.is_ascii_digit()))
}

fn parse_host(host: &str) -> Result<String, String> {
    if host.starts_with('[') {
        let Some(i) = host.rfind(']') else {
            return Err("missing ']' in host".into());
        };
        let colon_port = &host[i + 1..];
        if !valid_optional_port(colon_port) {
            return Err(format!("invalid port {} after host", quote(colon_port)));
        }
        if let Some(zone) = host[..i].find("%25") {
            let h1 = unescape(&host[..zone], Mode::Host)?;
            let h2 = unescape(&host[zone..i], Mode::Zone)?;
            let h3 = unescape(&host[i..], Mode::Host)?;
            return Ok(h1 + &h2 + &h3);
        }
    } else if let Some(i) = host.rfind(':') {
        let colon_port = &host[i..];
        if !valid_optional_port(colon_port) {
            return Err(format!("invalid port {} after host", quote(colon_port)));
        }
    }
    unescape(host, Mode::Host)
}

/// Go's `URL.Hostname`.
fn hostname(host_port: &str) -> String {
    let mut host = host_port;
    if let Some(colon) = host.rfind(':')
        && valid_optional_port(&host[colon..])
    {
        host = &host[..colon];
    }
    if host.starts_with('[') && host.ends_with(']') && host.len() >= 2 {
        host = &host[1..host.len() - 1];
    }
    host.to_string()
}

/// Go's `validEncoded`.
fn valid_encoded(s: &str, mode: Mode) -> bool {
    s.bytes().all(|c| {
        matches!(
            c,
            b'!' | b'$'
                | b'&'
                | b'\''
                | b'('
                | b')'
                | b'*'
                | b'+'
                | b','
                | b';'
                | b'='
                | b':'
                | b'@'
                | b'['
                | b']'
                | b'%'
        ) || !should_escape(c, mode)
    })
}

impl Url {
    /// `URL.EscapedPath`.
    fn escaped_path(&self) -> String {
        if !self.raw_path.is_empty()
            && valid_encoded(&self.raw_path, Mode::Path)
            && unescape(&self.raw_path, Mode::Path).is_ok_and(|p| p == self.path)
        {
            return self.raw_path.clone();
        }
        if self.path == "*" {
            return "*".into();
        }
        escape(&self.path, Mode::Path)
    }

    /// `URL.EscapedFragment`.
    fn escaped_fragment(&self) -> String {
        if !self.raw_fragment.is_empty()
            && valid_encoded(&self.raw_fragment, Mode::Fragment)
            && unescape(&self.raw_fragment, Mode::Fragment).is_ok_and(|f| f == self.fragment)
        {
            return self.raw_fragment.clone();
        }
        escape(&self.fragment, Mode::Fragment)
    }

    /// `URL.String`.
    fn string(&self) -> String {
        let mut buf = String::new();
        if !self.scheme.is_empty() {
            buf.push_str(&self.scheme);
            buf.push(':');
        }
        if !self.opaque.is_empty() {
            buf.push_str(&self.opaque);
        } else {
            if !self.scheme.is_empty() || !self.host.is_empty() || self.user.is_some() {
                if !self.host.is_empty() || !self.path.is_empty() || self.user.is_some() {
                    buf.push_str("//");
                }
                if let Some(u) = &self.user {
                    buf.push_str(&u.string());
                    buf.push('@');
                }
                if !self.host.is_empty() {
                    buf.push_str(&escape(&self.host, Mode::Host));
                }
            }
            let path = self.escaped_path();
            if !path.is_empty() && !path.starts_with('/') && !self.host.is_empty() {
                buf.push('/');
            }
            if buf.is_empty() && path.split('/').next().is_some_and(|seg| seg.contains(':')) {
                buf.push_str("./");
            }
            buf.push_str(&path);
        }
        if self.force_query || !self.raw_query.is_empty() {
            buf.push('?');
            buf.push_str(&self.raw_query);
        }
        if !self.fragment.is_empty() {
            buf.push('#');
            buf.push_str(&self.escaped_fragment());
        }
        buf
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse_and_print_as_go() {
        let u =
            parse("HTTPS://user:p%40ss@example.com:8443/a%2Fb/c?x=1&y#frag%20x").expect("valid");
        assert_eq!(u.scheme, "https");
        assert_eq!(u.host, "example.com:8443");
        assert_eq!(hostname(&u.host), "example.com");
        assert_eq!(u.path, "/a/b/c");
        assert_eq!(u.raw_query, "x=1&y");
        assert_eq!(u.fragment, "frag x");
        assert_eq!(
            u.user.as_ref().map(User::string).as_deref(),
            Some("user:p%40ss")
        );
        assert_eq!(
            u.string(),
            "https://user:p%40ss@example.com:8443/a%2Fb/c?x=1&y#frag%20x"
        );
        assert_eq!(
            parse("mailto:joe@x.org").expect("valid").opaque,
            "joe@x.org"
        );
        assert_eq!(parse("a:b/c:d").map(|u| u.opaque).expect("valid"), "b/c:d");
        assert_eq!(
            parse(":x").err().as_deref(),
            Some(r#"parse ":x": missing protocol scheme"#)
        );
        assert_eq!(
            parse("http://x:y/").err().as_deref(),
            Some(r#"parse "http://x:y/": invalid port ":y" after host"#)
        );
    }
}
