//! A Masterminds version: parsed loosely (`NewVersion` with coercion), ordered by semver
//! precedence, printed canonically, with the original text kept.

use std::cmp::Ordering;
use std::fmt;
use std::sync::OnceLock;

use regex_lite::Regex;

use crate::Error;

const LOOSE: &str = r"^v?([0-9]+)(\.[0-9]+)?(\.[0-9]+)?(-([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?(\+([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?$";

const ALLOWED: &str = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-0123456789";

/// Compiles one of Masterminds' patterns on its first use only. They are `regex_lite`'s:
/// Masterminds matches short strings, and `regex` spent about a millisecond compiling them,
/// a noticeable part of a one-shot `opkit chart template`.
pub(crate) fn compiled(
    cell: &'static OnceLock<Regex>,
    pattern: impl FnOnce() -> String,
) -> &'static Regex {
    cell.get_or_init(|| Regex::new(&pattern()).expect("Masterminds' patterns compile"))
}

fn loose_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    compiled(&RE, || LOOSE.to_string())
}

/// A version as Masterminds reads it: `1`, `v1.2`, `01.2.3-rc.1+build` all parse.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Version {
    major: u64,
    minor: u64,
    patch: u64,
    pre: String,
    metadata: String,
    original: String,
}

impl Version {
    /// Parses a version loosely (Masterminds' `NewVersion`): missing minor and patch are 0, a
    /// leading `v` and leading zeros are accepted.
    pub fn parse(v: &str) -> Result<Version, Error> {
        let Some(m) = loose_re().captures(v) else {
            return Err(Error::new("invalid semantic version"));
        };
        let seg = |i: usize| -> Result<u64, Error> {
            let text = m.get(i).map_or("", |x| x.as_str()).trim_start_matches('.');
            if text.is_empty() {
                return Ok(0);
            }
            text.parse::<u64>().map_err(|_| {
                Error::new(format!(
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

    /// A version from its parts, checked as [`Version::parse`] checks them; the original is
    /// the canonical form. For callers that hold a parsed version already (OLM's bundles).
    pub fn from_parts(
        major: u64,
        minor: u64,
        patch: u64,
        pre: &str,
        metadata: &str,
    ) -> Result<Version, Error> {
        let mut v = Version {
            major,
            minor,
            patch,
            pre: String::new(),
            metadata: String::new(),
            original: String::new(),
        };
        v = v.set_prerelease(pre)?.set_metadata(metadata)?;
        v.recanonicalise();
        Ok(v)
    }

    /// The major number.
    pub fn major(&self) -> u64 {
        self.major
    }

    /// The minor number.
    pub fn minor(&self) -> u64 {
        self.minor
    }

    /// The patch number.
    pub fn patch(&self) -> u64 {
        self.patch
    }

    /// The prerelease (`rc.1`), empty for a release.
    pub fn prerelease(&self) -> &str {
        &self.pre
    }

    /// The build metadata, empty when none.
    pub fn metadata(&self) -> &str {
        &self.metadata
    }

    /// The text the version was parsed from (or, after an `inc_*`/`set_*`, its canonical form
    /// with the original's `v`).
    pub fn original(&self) -> &str {
        &self.original
    }

    /// Masterminds' `IncMajor`: metadata and prerelease dropped.
    pub fn inc_major(&self) -> Version {
        self.inc(0)
    }

    /// Masterminds' `IncMinor`: metadata and prerelease dropped.
    pub fn inc_minor(&self) -> Version {
        self.inc(1)
    }

    /// Masterminds' `IncPatch`: a prerelease becomes its release, a release's patch grows.
    pub fn inc_patch(&self) -> Version {
        self.inc(2)
    }

    /// Masterminds' `SetPrerelease` (empty removes it).
    pub fn set_prerelease(&self, pre: &str) -> Result<Version, Error> {
        if !pre.is_empty() {
            validate_prerelease(pre)?;
        }
        let mut next = self.clone();
        next.pre = pre.to_string();
        next.recanonicalise();
        Ok(next)
    }

    /// Masterminds' `SetMetadata` (empty removes it).
    pub fn set_metadata(&self, metadata: &str) -> Result<Version, Error> {
        if !metadata.is_empty() {
            validate_metadata(metadata)?;
        }
        let mut next = self.clone();
        next.metadata = metadata.to_string();
        next.recanonicalise();
        Ok(next)
    }

    /// Semver precedence: build metadata never counts, a prerelease sorts before its release.
    pub fn compare(&self, o: &Version) -> Ordering {
        (self.major, self.minor, self.patch)
            .cmp(&(o.major, o.minor, o.patch))
            .then_with(|| match (self.pre.is_empty(), o.pre.is_empty()) {
                (true, true) => Ordering::Equal,
                (true, false) => Ordering::Greater,
                (false, true) => Ordering::Less,
                (false, false) => compare_prerelease(&self.pre, &o.pre),
            })
    }

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
        next.recanonicalise();
        next
    }

    /// After a change, the original is the canonical form with the original's `v`.
    fn recanonicalise(&mut self) {
        let v = if self.original.starts_with('v') {
            "v"
        } else {
            ""
        };
        self.original = format!("{v}{self}");
    }
}

/// Go's `Version.String()`: `MAJOR.MINOR.PATCH[-PRE][+META]`.
impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)?;
        if !self.pre.is_empty() {
            write!(f, "-{}", self.pre)?;
        }
        if !self.metadata.is_empty() {
            write!(f, "+{}", self.metadata)?;
        }
        Ok(())
    }
}

/// Masterminds' `validatePrerelease`.
fn validate_prerelease(pre: &str) -> Result<(), Error> {
    for p in pre.split('.') {
        if p.is_empty() {
            return Err(Error::new("invalid prerelease string"));
        } else if p.bytes().all(|b| b.is_ascii_digit()) {
            if p.len() > 1 && p.starts_with('0') {
                return Err(Error::new("version segment starts with 0"));
            }
        } else if !p.chars().all(|c| ALLOWED.contains(c)) {
            return Err(Error::new("invalid prerelease string"));
        }
    }
    Ok(())
}

/// Masterminds' `validateMetadata`.
fn validate_metadata(meta: &str) -> Result<(), Error> {
    if meta
        .split('.')
        .any(|p| p.is_empty() || !p.chars().all(|c| ALLOWED.contains(c)))
    {
        return Err(Error::new("invalid metadata string"));
    }
    Ok(())
}

/// Prereleases compared part by part.
pub(crate) fn compare_prerelease(a: &str, b: &str) -> Ordering {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loose_versions_fill_missing_parts_and_keep_the_original() {
        let v = Version::parse("v1.2").unwrap();
        assert_eq!((v.major(), v.minor(), v.patch()), (1, 2, 0));
        assert_eq!((v.to_string(), v.original()), ("1.2.0".into(), "v1.2"));
        assert_eq!(Version::parse("01.02.03").unwrap().to_string(), "1.2.3");
        assert_eq!(
            Version::parse("1.2.3-01").unwrap_err().to_string(),
            "version segment starts with 0"
        );
        assert_eq!(
            Version::parse("latest").unwrap_err().to_string(),
            "invalid semantic version"
        );
    }

    #[test]
    fn increments_and_setters_recanonicalise_with_the_original_v() {
        let v = Version::parse("v1.2.3-rc.1+b7").unwrap();
        assert_eq!(v.inc_patch().original(), "v1.2.3");
        assert_eq!(v.inc_minor().to_string(), "1.3.0");
        assert_eq!(v.inc_major().to_string(), "2.0.0");
        assert_eq!(
            Version::parse("1.2.3").unwrap().inc_patch().to_string(),
            "1.2.4"
        );
        assert_eq!(v.set_prerelease("").unwrap().original(), "v1.2.3+b7");
        assert!(v.set_metadata("a..b").is_err());
        let built = Version::from_parts(1, 2, 3, "rc.1", "b7").unwrap();
        assert_eq!(
            (built.to_string(), built.original()),
            ("1.2.3-rc.1+b7".into(), "1.2.3-rc.1+b7")
        );
        assert!(Version::from_parts(1, 0, 0, "01", "").is_err());
    }

    #[test]
    fn precedence_ignores_metadata_and_orders_prereleases() {
        let p = |s: &str| Version::parse(s).unwrap();
        assert_eq!(p("1.0.0+a").compare(&p("1.0.0+b")), Ordering::Equal);
        assert_eq!(p("1.0.0-alpha").compare(&p("1.0.0")), Ordering::Less);
        assert_eq!(p("1.0.0-2").compare(&p("1.0.0-10")), Ordering::Less);
        assert_eq!(p("1.0.0-alpha").compare(&p("1.0.0-1")), Ordering::Greater);
        assert_eq!(
            p("1.0.0-alpha").compare(&p("1.0.0-alpha.1")),
            Ordering::Less
        );
    }
}
