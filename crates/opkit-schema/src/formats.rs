//! String `format`s, as registered in kube-openapi's `strfmt.Default` registry.
//!
//! The API server only validates the formats this registry knows (others are silently ignored,
//! as upstream strips unsupported formats from CRD schemas), and each check mirrors the Go
//! function upstream uses (`time.Parse`, `net.ParseIP`, `url.ParseRequestURI`, govalidator's
//! regexes, ...), so the same strings are accepted and rejected.

use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::LazyLock;

use regex::Regex;

/// The normalized (dashes removed) names of the string formats Kubernetes validates.
pub(crate) const SUPPORTED: &[&str] = &[
    "bsonobjectid",
    "uri",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "cidr",
    "mac",
    "uuid",
    "uuid3",
    "uuid4",
    "uuid5",
    "isbn",
    "isbn10",
    "isbn13",
    "creditcard",
    "ssn",
    "hexcolor",
    "rgbcolor",
    "byte",
    "password",
    "date",
    "duration",
    "datetime",
    "k8sshortname",
    "k8slongname",
];

/// go-openapi's name normalization: dashes are ignored (`date-time` == `datetime`).
pub(crate) fn normalize(name: &str) -> String {
    name.replace('-', "")
}

/// Whether `name` is a string format the registry validates.
pub(crate) fn is_known(name: &str) -> bool {
    let n = normalize(name);
    SUPPORTED.contains(&n.as_str())
}

fn re(s: &str) -> Regex {
    // All patterns here are constants that compile; fall back to a never-matching regex to stay
    // panic-free regardless.
    Regex::new(s).unwrap_or_else(|_| Regex::new("[^\\s\\S]").expect("static regex"))
}

static HOSTNAME: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"^([a-zA-Z0-9\p{S}\p{L}]((-?[a-zA-Z0-9\p{S}\p{L}]{0,62})?)|([a-zA-Z0-9\p{S}\p{L}](([a-zA-Z0-9\-\p{S}\p{L}]{0,61}[a-zA-Z0-9\p{S}\p{L}])?)(\.)){1,}([a-zA-Z\p{L}]){2,63})$",
    )
});
static UUID: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$"));
static UUID3: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$")
});
static UUID4: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$")
});
static UUID5: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$")
});
static CREDIT_CARD: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"^(?:4[0-9]{12}(?:[0-9]{3})?|5[1-5][0-9]{14}|6(?:011|5[0-9][0-9])[0-9]{12}|3[47][0-9]{13}|3(?:0[0-5]|[68][0-9])[0-9]{11}|(?:2131|1800|35[0-9]{3})[0-9]{11})$",
    )
});
static HEXCOLOR: LazyLock<Regex> = LazyLock::new(|| re(r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$"));
static RGBCOLOR: LazyLock<Regex> = LazyLock::new(|| {
    let n = r"(0|[1-9][0-9]?|1[0-9][0-9]?|2[0-4][0-9]|25[0-5])";
    let s = r"[\t\n\f\r ]*";
    re(&format!(r"^rgb\({s}{n}{s},{s}{n}{s},{s}{n}{s}\)$"))
});
static BASE64: LazyLock<Regex> = LazyLock::new(|| {
    re(r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})$")
});
static SSN: LazyLock<Regex> = LazyLock::new(|| re(r"^[0-9]{3}[- ]?[0-9]{2}[- ]?[0-9]{4}$"));
static DATE_TIME: LazyLock<Regex> = LazyLock::new(|| {
    re(r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?([zZ]|([+-][0-9]{2}:[0-9]{2}))$")
});
static SHORT_NAME: LazyLock<Regex> = LazyLock::new(|| re(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"));
static LONG_NAME: LazyLock<Regex> =
    LazyLock::new(|| re(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"));
static DURATION_PART: LazyLock<Regex> = LazyLock::new(|| re(r"(([0-9]+)[\t\n\f\r ]*([A-Za-zµ]+))"));

/// Validates `data` against the (known) format `name`.
#[cfg(test)]
pub(crate) fn validates(name: &str, data: &str) -> bool {
    validates_normalized(&normalize(name), data)
}

/// Validates `data` against a known format given by its normalized name (see [`normalize`]).
pub(crate) fn validates_normalized(name: &str, data: &str) -> bool {
    match name {
        "bsonobjectid" => data.len() == 24 && data.bytes().all(|b| b.is_ascii_hexdigit()),
        "uri" => is_request_uri(data),
        "email" => is_email(data),
        "hostname" => is_hostname(data),
        "ipv4" => parse_ip_sloppy(data).is_some() && data.contains('.'),
        "ipv6" => parse_ip(data).is_some() && data.contains(':'),
        "cidr" => is_cidr(data),
        "mac" => is_mac(data),
        "uuid" => UUID.is_match(data),
        "uuid3" => UUID3.is_match(data),
        "uuid4" => UUID4.is_match(data),
        "uuid5" => UUID5.is_match(data),
        "isbn" => is_isbn10(data) || is_isbn13(data),
        "isbn10" => is_isbn10(data),
        "isbn13" => is_isbn13(data),
        "creditcard" => is_credit_card(data),
        "ssn" => data.len() == 11 && SSN.is_match(data),
        "hexcolor" => HEXCOLOR.is_match(data),
        "rgbcolor" => RGBCOLOR.is_match(data),
        "byte" => BASE64.is_match(data),
        "password" => true,
        "date" => is_date(data),
        "datetime" => is_date_time(data),
        "duration" => is_duration(data),
        "k8sshortname" => data.len() <= 63 && SHORT_NAME.is_match(data),
        "k8slongname" => data.len() <= 253 && LONG_NAME.is_match(data),
        _ => true,
    }
}

fn is_hostname(s: &str) -> bool {
    HOSTNAME.is_match(s) && s.len() <= 255 && s.split('.').all(|p| p.len() <= 63)
}

/// Go's `time.Parse("2006-01-02", s)`.
pub(crate) fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let num = |r: std::ops::Range<usize>| -> Option<u32> {
        let part = &s[r];
        if part.bytes().all(|c| c.is_ascii_digit()) {
            part.parse().ok()
        } else {
            None
        }
    };
    let (Some(y), Some(m), Some(d)) = (num(0..4), num(5..7), num(8..10)) else {
        return false;
    };
    if !(1..=12).contains(&m) || d < 1 {
        return false;
    }
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let days = match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ => {
            if leap {
                29
            } else {
                28
            }
        }
    };
    d <= days
}

/// strfmt's `IsDateTime` (which lower-cases the string and splits it at `t`).
fn is_date_time(s: &str) -> bool {
    if s.len() < 4 {
        return false;
    }
    let mut parts = s.split(['t', 'T']);
    let (Some(date), Some(time)) = (parts.next(), parts.next()) else {
        return false;
    };
    is_date(date)
        && DATE_TIME.is_match(time)
        && time.get(0..2).is_some_and(|h| h <= "23")
        && time.get(3..5).is_some_and(|m| m <= "59")
        && time.get(6..8).is_some_and(|sec| sec <= "59")
}

/// Go's `time.ParseDuration`, then strfmt's lenient fallback (`5 days`, `3 hours`, ...).
fn is_duration(s: &str) -> bool {
    if opkit_apimachinery::Duration::parse(s).is_ok() {
        return true;
    }
    const UNITS: &[&[&str]] = &[
        &["ns", "nano"],
        &["us", "µs", "micro"],
        &["ms", "milli"],
        &["s", "sec"],
        &["m", "min"],
        &["h", "hr", "hour"],
        &["d", "day"],
        &["w", "wk", "week"],
    ];
    let mut ok = false;
    for c in DURATION_PART.captures_iter(s) {
        let factor = c.get(2).map(|m| m.as_str()).unwrap_or("");
        if factor.parse::<i64>().is_err() {
            return false;
        }
        let unit = c
            .get(3)
            .map(|m| m.as_str().trim().to_lowercase())
            .unwrap_or_default();
        for variants in UNITS {
            let last = variants.len() - 1;
            for (i, v) in variants.iter().enumerate() {
                if (i == last && unit.starts_with(v)) || v.eq_ignore_ascii_case(&unit) {
                    ok = true;
                }
            }
        }
    }
    ok
}

/// Go's `net.ParseIP` (no leading zeros in IPv4 octets; IPv6 with optional embedded IPv4).
fn parse_ip(s: &str) -> Option<()> {
    if s.contains(':') {
        s.parse::<Ipv6Addr>().ok().map(|_| ())
    } else {
        s.parse::<Ipv4Addr>().ok().map(|_| ())
    }
}

/// k8s.io/utils/net `ParseIPSloppy`: like `net.ParseIP` but IPv4 octets may have leading zeros.
fn parse_ip_sloppy(s: &str) -> Option<()> {
    if s.contains(':') {
        return parse_ip(s);
    }
    let parts: Vec<&str> = s.split('.').collect();
    if parts.len() != 4 {
        return None;
    }
    for p in parts {
        if p.is_empty() || p.len() > 3 || !p.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        if p.parse::<u32>().ok()? > 255 {
            return None;
        }
    }
    Some(())
}

fn is_cidr(s: &str) -> bool {
    let Some((ip, bits)) = s.split_once('/') else {
        return false;
    };
    let max = if ip.contains(':') { 128 } else { 32 };
    if parse_ip_sloppy(ip).is_none() || bits.is_empty() || !bits.bytes().all(|b| b.is_ascii_digit())
    {
        return false;
    }
    matches!(bits.parse::<u32>(), Ok(n) if n <= max)
}

/// Go's `net.ParseMAC`.
fn is_mac(s: &str) -> bool {
    if s.len() < 14 {
        return false;
    }
    let ok_len = |n: usize| n == 6 || n == 8 || n == 20;
    let b = s.as_bytes();
    if b[2] == b':' || b[2] == b'-' {
        let sep = b[2] as char;
        let groups: Vec<&str> = s.split(sep).collect();
        ok_len(groups.len())
            && groups
                .iter()
                .all(|g| g.len() == 2 && g.bytes().all(|c| c.is_ascii_hexdigit()))
    } else if b[4] == b'.' {
        let groups: Vec<&str> = s.split('.').collect();
        ok_len(groups.len() * 2)
            && groups
                .iter()
                .all(|g| g.len() == 4 && g.bytes().all(|c| c.is_ascii_hexdigit()))
    } else {
        false
    }
}

fn sanitize_isbn(s: &str) -> String {
    s.chars()
        .filter(|c| !(c.is_whitespace() || *c == '-'))
        .collect()
}

fn is_isbn10(s: &str) -> bool {
    let s = sanitize_isbn(s);
    let b = s.as_bytes();
    if b.len() != 10
        || !b[..9].iter().all(u8::is_ascii_digit)
        || !(b[9].is_ascii_digit() || b[9] == b'X')
    {
        return false;
    }
    let mut sum: u32 = 0;
    for (i, d) in b[..9].iter().enumerate() {
        sum += (i as u32 + 1) * u32::from(d - b'0');
    }
    sum += 10
        * if b[9] == b'X' {
            10
        } else {
            u32::from(b[9] - b'0')
        };
    sum.is_multiple_of(11)
}

fn is_isbn13(s: &str) -> bool {
    let s = sanitize_isbn(s);
    let b = s.as_bytes();
    if b.len() != 13 || !b.iter().all(u8::is_ascii_digit) {
        return false;
    }
    let mut sum: i32 = 0;
    for (i, d) in b[..12].iter().enumerate() {
        sum += if i % 2 == 0 { 1 } else { 3 } * i32::from(d - b'0');
    }
    i32::from(b[12] - b'0') - ((10 - (sum % 10)) % 10) == 0
}

fn is_credit_card(s: &str) -> bool {
    let digits: String = s.chars().filter(|c| c.is_ascii_digit()).collect();
    if !CREDIT_CARD.is_match(&digits) {
        return false;
    }
    let mut sum = 0u32;
    let mut double = false;
    for b in digits.bytes().rev() {
        let mut n = u32::from(b - b'0');
        if double {
            n *= 2;
            sum += if n >= 10 { n % 10 + 1 } else { n };
        } else {
            sum += n;
        }
        double = !double;
    }
    sum.is_multiple_of(10)
}

/// Go's `url.ParseRequestURI` succeeding: an absolute URI or an absolute path.
fn is_request_uri(s: &str) -> bool {
    if s.is_empty() || s.chars().any(|c| (c as u32) < 0x20 || c == '\u{7f}') {
        return false;
    }
    if s == "*" {
        return true;
    }
    // Scheme: a letter followed by letters, digits, '+', '-', '.', up to ':'.
    let mut scheme_end = None;
    for (i, c) in s.char_indices() {
        if c.is_ascii_alphabetic() {
            continue;
        }
        if (c.is_ascii_digit() || c == '+' || c == '-' || c == '.') && i > 0 {
            continue;
        }
        if c == ':' {
            if i == 0 {
                return false; // missing protocol scheme
            }
            scheme_end = Some(i);
        }
        break;
    }
    let rest = match scheme_end {
        Some(i) => &s[i + 1..],
        None => s,
    };
    let (rest, _query) = rest.split_once('?').unwrap_or((rest, ""));
    if !rest.starts_with('/') {
        // Opaque URIs (mailto:x) are fine with a scheme; relative paths are not.
        return scheme_end.is_some();
    }
    let mut path = rest;
    if scheme_end.is_some() && rest.starts_with("//") && !rest.starts_with("///") {
        let auth_and_path = &rest[2..];
        let (authority, p) = match auth_and_path.find('/') {
            Some(i) => (&auth_and_path[..i], &auth_and_path[i..]),
            None => (auth_and_path, ""),
        };
        if !valid_authority(authority) {
            return false;
        }
        path = p;
    }
    valid_escapes(path)
}

fn valid_escapes(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            if i + 2 >= b.len() || !b[i + 1].is_ascii_hexdigit() || !b[i + 2].is_ascii_hexdigit() {
                return false;
            }
            i += 3;
        } else {
            i += 1;
        }
    }
    true
}

fn valid_authority(a: &str) -> bool {
    let host = match a.rfind('@') {
        Some(i) => &a[i + 1..],
        None => a,
    };
    let (hostname, port) = if let Some(r) = host.strip_prefix('[') {
        let Some(end) = r.find(']') else {
            return false;
        };
        let after = &r[end + 1..];
        if !after.is_empty() && !after.starts_with(':') {
            return false;
        }
        (&r[..end], after.strip_prefix(':'))
    } else {
        match host.rfind(':') {
            Some(i) => (&host[..i], Some(&host[i + 1..])),
            None => (host, None),
        }
    };
    if let Some(p) = port
        && !p.bytes().all(|b| b.is_ascii_digit())
    {
        return false;
    }
    hostname
        .chars()
        .all(|c| !c.is_ascii() || c.is_ascii_alphanumeric() || "-._~!$&'()*+,;=:%".contains(c))
        && valid_escapes(hostname)
}

/// An approximation of Go's `net/mail.ParseAddress`: `local@domain` or `Name <local@domain>`.
fn is_email(s: &str) -> bool {
    let s = s.trim();
    let addr = if s.ends_with('>') {
        match s.rfind('<') {
            Some(i) => &s[i + 1..s.len() - 1],
            None => return false,
        }
    } else {
        s
    };
    let Some(at) = addr.rfind('@') else {
        return false;
    };
    let (local, domain) = (&addr[..at], &addr[at + 1..]);
    let local_ok = if local.len() >= 2 && local.starts_with('"') && local.ends_with('"') {
        true
    } else {
        dot_atom(local)
    };
    let domain_ok = if domain.starts_with('[') && domain.ends_with(']') {
        domain.len() > 2
    } else {
        dot_atom(domain)
    };
    local_ok && domain_ok
}

fn dot_atom(s: &str) -> bool {
    !s.is_empty()
        && s.split('.').all(|atom| {
            !atom.is_empty()
                && atom.chars().all(|c| {
                    c.is_alphanumeric() || !c.is_ascii() || "!#$%&'*+-/=?^_`{|}~".contains(c)
                })
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_formats() {
        assert!(is_known("date-time"));
        assert!(is_known("k8s-short-name"));
        assert!(!is_known("int32"));
        assert!(!is_known("foo"));
    }

    #[test]
    fn format_checks() {
        assert!(validates("date", "2024-02-29"));
        assert!(!validates("date", "2023-02-29"));
        assert!(!validates("date", "2023-1-01"));
        assert!(validates("date-time", "2014-12-15T19:30:20.000Z"));
        assert!(validates("date-time", "2014-12-15T19:30:20+01:00"));
        assert!(!validates("date-time", "2014-12-15 19:30:20Z"));
        assert!(!validates("date-time", "2014-12-15T25:30:20Z"));
        assert!(validates("uuid", "123e4567-e89b-12d3-a456-426614174000"));
        assert!(!validates("uuid", "not-a-uuid"));
        assert!(validates("byte", "aGVsbG8="));
        assert!(!validates("byte", "hello"));
        assert!(validates("email", "a.b@example.com"));
        assert!(validates("email", "Alice <alice@example.com>"));
        assert!(!validates("email", "example.com"));
        assert!(validates("hostname", "example.com"));
        assert!(validates("hostname", "localhost"));
        assert!(!validates("hostname", "-bad-.com"));
        assert!(validates("ipv4", "10.0.0.1"));
        assert!(validates("ipv4", "010.0.0.1"));
        assert!(!validates("ipv4", "::1"));
        assert!(validates("ipv6", "::1"));
        assert!(!validates("ipv6", "10.0.0.1"));
        assert!(validates("cidr", "10.0.0.0/8"));
        assert!(!validates("cidr", "10.0.0.0/33"));
        assert!(validates("mac", "01:23:45:67:89:ab"));
        assert!(validates("mac", "0123.4567.89ab"));
        assert!(!validates("mac", "01:23:45:67:89"));
        assert!(validates("uri", "https://example.com/a?b=c"));
        assert!(validates("uri", "/absolute/path"));
        assert!(!validates("uri", "relative/path"));
        assert!(!validates("uri", "http://exa mple.com/"));
        assert!(validates("duration", "1h30m"));
        assert!(validates("duration", "5 days"));
        assert!(!validates("duration", "soon"));
        assert!(validates("isbn10", "0321751043"));
        assert!(validates("isbn13", "978-0321751041"));
        assert!(validates("creditcard", "4111 1111 1111 1111"));
        assert!(!validates("creditcard", "4111 1111 1111 1112"));
        assert!(validates("ssn", "123-45-6789"));
        assert!(validates("hexcolor", "#FFF"));
        assert!(validates("rgbcolor", "rgb(255, 0, 12)"));
        assert!(validates("k8s-short-name", "my-name"));
        assert!(!validates("k8s-short-name", "My-name"));
        assert!(validates("k8s-long-name", "a.b-c.d"));
        assert!(validates("bsonobjectid", "507f1f77bcf86cd799439011"));
    }
}
