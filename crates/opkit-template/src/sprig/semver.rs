//! Sprig's `semverCompare` and `semver` (the version object and its methods), with
//! Masterminds/semver v3.4's rules (what Helm v4 builds with): loose versions (`v1.2`, `1`), constraints joined by `,`/space (and) and `||` (or),
//! `x`/`*` wildcards, `~`, `^`, hyphen ranges, and prereleases matched only by a constraint
//! group that names one. The regular expressions are Masterminds' own.

use std::cmp::Ordering;
use std::sync::{Arc, OnceLock};

use regex::Regex;

use super::{Funcs, fail, s};
use crate::ParamType::String as Str;
use crate::{FuncError, Function, Member, Object, Value};

pub(super) fn register(m: &mut Funcs) {
    m.add(
        "semverCompare",
        Function::new(&[Str, Str], |a| {
            let c = Constraints::parse(s(a, 0))?;
            let v = Version::parse(s(a, 1))?;
            Ok(Value::Bool(c.check(&v)))
        }),
    );
    m.add(
        "semver",
        Function::new(&[Str], |a| {
            let v = Version::parse(s(a, 0))?;
            Ok(VersionObject::value(v, true))
        }),
    );
}

const CV: &str = r"v?([0-9|x|X|\*]+)(\.[0-9|x|X|\*]+)?(\.[0-9|x|X|\*]+)?(-([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?(\+([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?";
const OPS: &str = r"=||!=|>|<|>=|=>|<=|=<|~|~>|\^";
const LOOSE: &str = r"^v?([0-9]+)(\.[0-9]+)?(\.[0-9]+)?(-([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?(\+([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?$";

// Each pattern is compiled on its first use only: compiling all of them costs about a
// millisecond, a noticeable part of a one-shot `opkit chart template`, and a chart that only
// calls `semver` needs just the loose version pattern.
fn compiled(cell: &'static OnceLock<Regex>, pattern: impl FnOnce() -> String) -> &'static Regex {
    cell.get_or_init(|| Regex::new(&pattern()).expect("Masterminds' patterns compile"))
}

fn constraint_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    compiled(&RE, || format!(r"^\s*({OPS})\s*({CV})\s*$"))
}

fn range_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    compiled(&RE, || format!(r"\s*({CV})\s+-\s+({CV})\s*"))
}

fn find_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    compiled(&RE, || format!(r"({OPS})\s*({CV})"))
}

fn valid_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    compiled(&RE, || {
        format!(r"^(\s*({OPS})\s*({CV})\s*)((?:\s+|,\s*)({OPS})\s*({CV})\s*)*$")
    })
}

fn loose_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    compiled(&RE, || LOOSE.to_string())
}

/// Whether the range pattern (`A - B`) can match `c`: it needs a `-` after white space.
fn may_hold_range(c: &str) -> bool {
    c.char_indices()
        .any(|(i, ch)| ch == '-' && c[..i].ends_with(char::is_whitespace))
}

/// A parsed version (`NewVersion` with coercion).
#[derive(Clone, Debug)]
struct Version {
    major: u64,
    minor: u64,
    patch: u64,
    pre: String,
    metadata: String,
    original: String,
}

/// Sprig's `semver` result, Go's `*semver.Version` (`pointer`), or the `semver.Version`
/// value its `Inc*`/`Set*` methods return. Both print as the canonical form and have the
/// value methods `Major`, `Minor`, `Patch`, `Prerelease`, `Metadata`, `String`,
/// `IncMajor`, `IncMinor`, `IncPatch`, `SetPrerelease`, `SetMetadata`; only the pointer has
/// `Original` and the comparisons (`Compare`, `LessThan`, `GreaterThan`, `Equal`,
/// `LessThanEqual`, `GreaterThanEqual`), which take a `*semver.Version`.
struct VersionObject {
    v: Version,
    pointer: bool,
}

/// The `*semver.Version` parameter type of the comparison methods.
const VERSION_PTR: crate::ParamType = crate::ParamType::Struct("*semver.Version");

impl VersionObject {
    fn value(v: Version, pointer: bool) -> Value {
        Value::Object(Arc::new(VersionObject { v, pointer }))
    }

    /// The version inside an argument the engine checked to be a `*semver.Version`.
    fn of(v: &Value) -> Option<&Version> {
        super::host::<VersionObject>(v).map(|x| &x.v)
    }
}

impl Object for VersionObject {
    fn type_name(&self) -> String {
        if self.pointer {
            "*semver.Version".into()
        } else {
            "semver.Version".into()
        }
    }

    fn member(&self, name: &str) -> Option<Member> {
        let v = self.v.clone();
        let cmp = |test: fn(Ordering) -> bool| {
            let v = v.clone();
            Member::Method(Function::new(
                &[VERSION_PTR],
                move |a| match VersionObject::of(&a[0]) {
                    Some(o) => Ok(Value::Bool(test(v.compare(o)))),
                    None => fail(super::NIL_DEREF),
                },
            ))
        };
        let set = |field: fn(&mut Version, String) -> Result<(), FuncError>| {
            let v = v.clone();
            Member::Method(Function::new(&[Str], move |a| {
                let mut next = v.clone();
                field(&mut next, s(a, 0).to_string())?;
                next.original = format!("{}{}", next.v_prefix(), next.canonical());
                Ok(VersionObject::value(next, false))
            }))
        };
        let value = match name {
            "Major" => Value::Int(v.major as i64),
            "Minor" => Value::Int(v.minor as i64),
            "Patch" => Value::Int(v.patch as i64),
            "Prerelease" => Value::from(v.pre.as_str()),
            "Metadata" => Value::from(v.metadata.as_str()),
            "String" => Value::from(v.canonical()),
            "IncMajor" => VersionObject::value(v.inc(0), false),
            "IncMinor" => VersionObject::value(v.inc(1), false),
            "IncPatch" => VersionObject::value(v.inc(2), false),
            "SetPrerelease" => {
                return Some(set(|v, pre| {
                    if !pre.is_empty() {
                        validate_prerelease(&pre)?;
                    }
                    v.pre = pre;
                    Ok(())
                }));
            }
            "SetMetadata" => {
                return Some(set(|v, meta| {
                    if !meta.is_empty() {
                        validate_metadata(&meta)?;
                    }
                    v.metadata = meta;
                    Ok(())
                }));
            }
            "Original" if self.pointer => Value::from(v.original.as_str()),
            "Compare" if self.pointer => {
                return Some(Member::Method(Function::new(&[VERSION_PTR], move |a| {
                    match VersionObject::of(&a[0]) {
                        Some(o) => Ok(Value::Int(v.compare(o) as i64)),
                        None => fail(super::NIL_DEREF),
                    }
                })));
            }
            "LessThan" if self.pointer => return Some(cmp(Ordering::is_lt)),
            "GreaterThan" if self.pointer => return Some(cmp(Ordering::is_gt)),
            "Equal" if self.pointer => return Some(cmp(Ordering::is_eq)),
            "LessThanEqual" if self.pointer => return Some(cmp(Ordering::is_le)),
            "GreaterThanEqual" if self.pointer => return Some(cmp(Ordering::is_ge)),
            _ => return None,
        };
        Some(Member::Method(Function::new(&[], move |_| {
            Ok(value.clone())
        })))
    }

    fn format(&self) -> String {
        self.v.canonical()
    }

    /// Masterminds' `MarshalJSON`: the canonical form as a string.
    fn json(&self) -> Option<Result<Value, String>> {
        Some(Ok(Value::from(self.v.canonical())))
    }
}

/// Masterminds' `validatePrerelease`.
fn validate_prerelease(pre: &str) -> Result<(), FuncError> {
    for p in pre.split('.') {
        if p.is_empty() {
            return fail("invalid prerelease string");
        } else if p.bytes().all(|b| b.is_ascii_digit()) {
            if p.len() > 1 && p.starts_with('0') {
                return fail("version segment starts with 0");
            }
        } else if !p.chars().all(|c| ALLOWED.contains(c)) {
            return fail("invalid prerelease string");
        }
    }
    Ok(())
}

/// Masterminds' `validateMetadata`.
fn validate_metadata(meta: &str) -> Result<(), FuncError> {
    if meta
        .split('.')
        .any(|p| p.is_empty() || !p.chars().all(|c| ALLOWED.contains(c)))
    {
        return fail("invalid metadata string");
    }
    Ok(())
}

const ALLOWED: &str = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-0123456789";

impl Version {
    fn parse(v: &str) -> Result<Version, FuncError> {
        let Some(m) = loose_re().captures(v) else {
            return fail("invalid semantic version");
        };
        let seg = |i: usize| -> Result<u64, FuncError> {
            let text = m.get(i).map_or("", |x| x.as_str()).trim_start_matches('.');
            if text.is_empty() {
                return Ok(0);
            }
            text.parse::<u64>().map_err(|_| {
                FuncError::new(format!(
                    "error parsing version segment: strconv.ParseUint: parsing \"{text}\": value out of range"
                ))
            })
        };
        let pre = m.get(5).map_or("", |x| x.as_str()).to_string();
        let meta = m.get(8).map_or("", |x| x.as_str());
        let version = Version {
            major: seg(1)?,
            minor: seg(2)?,
            patch: seg(3)?,
            pre,
            metadata: meta.to_string(),
            original: v.to_string(),
        };
        if !version.pre.is_empty() {
            validate_prerelease(&version.pre)?;
        }
        if !meta.is_empty() {
            validate_metadata(meta)?;
        }
        Ok(version)
    }

    /// The `v` of the original text, which `Inc*` and `Set*` keep.
    fn v_prefix(&self) -> &'static str {
        if self.original.starts_with('v') {
            "v"
        } else {
            ""
        }
    }

    /// Masterminds' `IncMajor` (0), `IncMinor` (1), `IncPatch` (2): metadata and
    /// prerelease dropped, and a prerelease patch becomes its release.
    fn inc(&self, part: u8) -> Version {
        let mut next = self.clone();
        let had_pre = !next.pre.is_empty();
        next.pre.clear();
        next.metadata.clear();
        match part {
            0 => (next.major, next.minor, next.patch) = (self.major + 1, 0, 0),
            1 => (next.minor, next.patch) = (self.minor + 1, 0),
            _ if had_pre => {}
            _ => next.patch = self.patch + 1,
        }
        next.original = format!("{}{}", next.v_prefix(), next.canonical());
        next
    }

    /// Go's `Version.String()`: `MAJOR.MINOR.PATCH[-PRE][+META]`.
    fn canonical(&self) -> String {
        let mut out = format!("{}.{}.{}", self.major, self.minor, self.patch);
        if !self.pre.is_empty() {
            out.push('-');
            out.push_str(&self.pre);
        }
        if !self.metadata.is_empty() {
            out.push('+');
            out.push_str(&self.metadata);
        }
        out
    }

    fn compare(&self, o: &Version) -> Ordering {
        (self.major, self.minor, self.patch)
            .cmp(&(o.major, o.minor, o.patch))
            .then_with(|| match (self.pre.is_empty(), o.pre.is_empty()) {
                (true, true) => Ordering::Equal,
                (true, false) => Ordering::Greater,
                (false, true) => Ordering::Less,
                (false, false) => compare_prerelease(&self.pre, &o.pre),
            })
    }
}

fn compare_prerelease(a: &str, b: &str) -> Ordering {
    let (sa, sb): (Vec<&str>, Vec<&str>) = (a.split('.').collect(), b.split('.').collect());
    for i in 0..sa.len().max(sb.len()) {
        let (x, y) = (
            sa.get(i).copied().unwrap_or(""),
            sb.get(i).copied().unwrap_or(""),
        );
        let d = compare_pre_part(x, y);
        if d != Ordering::Equal {
            return d;
        }
    }
    Ordering::Equal
}

/// Masterminds' `comparePrePart`: numbers below words, numbers numerically.
fn compare_pre_part(s: &str, o: &str) -> Ordering {
    if s == o {
        return Ordering::Equal;
    }
    if s.is_empty() {
        return Ordering::Less;
    }
    if o.is_empty() {
        return Ordering::Greater;
    }
    match (s.parse::<u64>(), o.parse::<u64>()) {
        (Err(_), Err(_)) => {
            if s > o {
                Ordering::Greater
            } else {
                Ordering::Less
            }
        }
        (Err(_), Ok(_)) => Ordering::Greater,
        (Ok(_), Err(_)) => Ordering::Less,
        (Ok(si), Ok(oi)) => {
            if si > oi {
                Ordering::Greater
            } else {
                Ordering::Less
            }
        }
    }
}

struct Constraint {
    op: String,
    con: Version,
    minor_dirty: bool,
    patch_dirty: bool,
    dirty: bool,
}

struct Constraints {
    groups: Vec<(Vec<Constraint>, bool)>,
}

fn is_x(x: &str) -> bool {
    matches!(x, "x" | "*" | "X")
}

impl Constraints {
    fn parse(c: &str) -> Result<Constraints, FuncError> {
        let mut rewritten = c.to_string();
        let ranges = may_hold_range(c).then(|| range_re().captures_iter(c));
        for m in ranges.into_iter().flatten() {
            let t = format!(">= {}, <= {} ", &m[1], &m[11]);
            rewritten = rewritten.replacen(&m[0], &t, 1);
        }
        let mut groups = Vec::new();
        for or in rewritten.split("||") {
            if !valid_re().is_match(or) {
                return fail(format!("improper constraint: {or}"));
            }
            let mut found: Vec<&str> = find_re().find_iter(or).map(|m| m.as_str()).collect();
            if found.is_empty() {
                found.push(or);
            }
            let mut list = Vec::new();
            let mut has_pre = false;
            for text in found {
                let con = Constraint::parse(text)?;
                has_pre |= !con.con.pre.is_empty();
                list.push(con);
            }
            groups.push((list, has_pre));
        }
        Ok(Constraints { groups })
    }

    fn check(&self, v: &Version) -> bool {
        self.groups
            .iter()
            .any(|(list, pre)| list.iter().all(|c| c.check(v, *pre)))
    }
}

impl Constraint {
    fn parse(c: &str) -> Result<Constraint, FuncError> {
        if c.is_empty() {
            return Ok(Constraint {
                op: String::new(),
                con: Version::parse("0.0.0")?,
                minor_dirty: false,
                patch_dirty: false,
                dirty: true,
            });
        }
        let Some(m) = constraint_re().captures(c) else {
            return fail(format!("improper constraint: {c}"));
        };
        let g = |i: usize| m.get(i).map_or("", |x| x.as_str());
        let (m3, m4, m5, m6) = (g(3), g(4), g(5), g(6));
        let (mut minor_dirty, mut patch_dirty, mut dirty) = (false, false, false);
        let ver = if is_x(m3) || m3.is_empty() {
            dirty = true;
            format!("0.0.0{m6}")
        } else if is_x(m4.trim_start_matches('.')) || m4.is_empty() {
            minor_dirty = true;
            dirty = true;
            format!("{m3}.0.0{m6}")
        } else if is_x(m5.trim_start_matches('.')) || m5.is_empty() {
            dirty = true;
            patch_dirty = true;
            format!("{m3}{m4}.0{m6}")
        } else {
            g(2).to_string()
        };
        let con = Version::parse(&ver).map_err(|_| FuncError::new("constraint parser error"))?;
        Ok(Constraint {
            op: g(1).to_string(),
            con,
            minor_dirty,
            patch_dirty,
            dirty,
        })
    }

    fn check(&self, v: &Version, include_pre: bool) -> bool {
        if !v.pre.is_empty() && !include_pre {
            return false;
        }
        let c = &self.con;
        let cmp = v.compare(c);
        match self.op.as_str() {
            "" | "=" => {
                if self.dirty {
                    self.tilde(v)
                } else {
                    cmp == Ordering::Equal
                }
            }
            "!=" => self.not_equal(v),
            ">" => {
                if !self.dirty {
                    return cmp == Ordering::Greater;
                }
                if v.major != c.major {
                    return v.major > c.major;
                }
                if self.minor_dirty {
                    return false;
                }
                if self.patch_dirty {
                    return v.minor > c.minor;
                }
                cmp == Ordering::Greater
            }
            "<" => cmp == Ordering::Less,
            ">=" | "=>" => cmp != Ordering::Less,
            "<=" | "=<" => {
                if !self.dirty {
                    return cmp != Ordering::Greater;
                }
                !(v.major > c.major
                    || (v.major == c.major && v.minor > c.minor && !self.minor_dirty))
            }
            "~" | "~>" => self.tilde(v),
            "^" => self.caret(v),
            _ => false,
        }
    }

    fn tilde(&self, v: &Version) -> bool {
        let c = &self.con;
        if v.compare(c) == Ordering::Less {
            return false;
        }
        if c.major == 0 && c.minor == 0 && c.patch == 0 && !self.minor_dirty && !self.patch_dirty {
            return true;
        }
        if v.major != c.major {
            return false;
        }
        v.minor == c.minor || self.minor_dirty
    }

    fn caret(&self, v: &Version) -> bool {
        let c = &self.con;
        if v.compare(c) == Ordering::Less {
            return false;
        }
        if c.major > 0 || self.minor_dirty {
            return v.major == c.major;
        }
        if v.major > 0 {
            return false;
        }
        if c.minor > 0 || self.patch_dirty {
            return v.minor == c.minor;
        }
        if v.minor > 0 {
            return false;
        }
        c.patch == v.patch
    }

    fn not_equal(&self, v: &Version) -> bool {
        let c = &self.con;
        if self.dirty {
            if c.major != v.major {
                return true;
            }
            if c.minor != v.minor && !self.minor_dirty {
                return true;
            } else if self.minor_dirty {
                return false;
            } else if c.patch != v.patch && !self.patch_dirty {
                return true;
            } else if self.patch_dirty {
                if !v.pre.is_empty() || !c.pre.is_empty() {
                    return compare_prerelease(&v.pre, &c.pre) != Ordering::Equal;
                }
                return false;
            }
        }
        v.compare(c) != Ordering::Equal
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_dash_after_white_space_can_start_a_hyphen_range() {
        assert!(may_hold_range("1.2 - 1.4"));
        assert!(may_hold_range("1.2\t- 1.4"));
        assert!(!may_hold_range(">=1.21-0"));
        assert!(!may_hold_range("~1.2.3-beta.1"));
        let c = Constraints::parse("1.2 - 1.4").unwrap();
        assert!(c.check(&Version::parse("1.3.0").unwrap()));
        assert!(!c.check(&Version::parse("1.5.0").unwrap()));
    }
}
