//! Version ranges in the two dialects OLM speaks, because they disagree and users see both.
//!
//! - [`SkipRange`] is blang/semver's range language, which OLM reads for a CSV's
//!   `olm.skipRange` annotation: comparators `<`, `<=`, `>`, `>=`, `=`, `==`, `!`, `!=` (none means
//!   equal), AND by spaces, OR by `||`, `x` wildcards. A prerelease is ordered like any version:
//!   `>=1.0.0 <2.0.0` contains `1.5.0-rc.1`.
//! - [`VersionRange`] is Masterminds/semver v3's constraint language, which OLM v1 reads for a
//!   requested version (`ClusterExtension.spec.source.catalog.version`): also `~`, `~>`, `^`,
//!   hyphen ranges `1.2 - 1.4`, AND by commas or spaces, `x`/`X`/`*` wildcards, partial versions
//!   (`1.2` means `1.2.x`), a leading `v`. A prerelease version matches only an alternative in
//!   which some comparator names a prerelease (Masterminds v3.4 on, which operator-controller
//!   builds with): `>=1.0.0` does not contain `1.5.0-rc.1`, `>=1.0.0-0, <2.0.0` does. The rules
//!   live in `opkit-semver`, shared with Helm charts' `semverCompare`.
//!
//! Both keep their quirks where users can observe them (blang drops one-character tokens, its
//! `!=1.x` matches nothing; Masterminds' `>1` means `>=2.0.0`), so a range means here what it
//! means to OLM. Versions are [`semver::Version`]s; build metadata never affects a comparison.

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

use semver::Version;

/// A range that could not be parsed, with the dialect's own message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct RangeError {
    message: String,
}

impl RangeError {
    fn new(message: impl Into<String>) -> Self {
        RangeError {
            message: message.into(),
        }
    }
}

/// One comparison of a version with a fixed one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Eq,
    Ne,
    Gt,
    Ge,
    Lt,
    Le,
}

impl Op {
    fn holds(self, ordering: Ordering) -> bool {
        match self {
            Op::Eq => ordering == Ordering::Equal,
            Op::Ne => ordering != Ordering::Equal,
            Op::Gt => ordering == Ordering::Greater,
            Op::Ge => ordering != Ordering::Less,
            Op::Lt => ordering == Ordering::Less,
            Op::Le => ordering != Ordering::Greater,
        }
    }
}

/// A blang/semver range, the language of `olm.skipRange`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkipRange {
    source: String,
    /// Alternatives (OR) of conjunctions (AND).
    alternatives: Vec<Vec<(Op, Version)>>,
}

impl SkipRange {
    /// Parses a range such as `>=4.1.0 <4.2.0` or `<1.0.0 || >=2.x`.
    pub fn parse(range: &str) -> Result<SkipRange, RangeError> {
        let tokens = blang_tokens(range);
        let mut alternatives = Vec::new();
        for conjunction in blang_or_parts(&tokens)? {
            let mut comparisons = Vec::new();
            for part in blang_expand_wildcards(conjunction)? {
                let (op, version) = split_comparator(&part)?;
                let op = blang_op(op).ok_or_else(|| {
                    RangeError::new(format!(
                        "Could not parse Range {part:?}: Could not parse comparator {op:?} in {part:?}"
                    ))
                })?;
                let version = Version::parse(version).map_err(|e| {
                    RangeError::new(format!(
                        "Could not parse Range {part:?}: Could not parse version {version:?} in {part:?}: {e}"
                    ))
                })?;
                comparisons.push((op, version));
            }
            alternatives.push(comparisons);
        }
        Ok(SkipRange {
            source: range.to_string(),
            alternatives,
        })
    }

    /// Whether `version` is in the range.
    pub fn contains(&self, version: &Version) -> bool {
        self.alternatives.iter().any(|all| {
            !all.is_empty()
                && all
                    .iter()
                    .all(|(op, bound)| op.holds(version.cmp_precedence(bound)))
        })
    }
}

impl FromStr for SkipRange {
    type Err = RangeError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        SkipRange::parse(s)
    }
}

impl fmt::Display for SkipRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}

/// blang splits on spaces, except after `>`, `<` or `=` (so `>= 1.0.0` is one token), and drops
/// tokens of one character.
fn blang_tokens(s: &str) -> Vec<String> {
    let bytes = s.as_bytes();
    let mut tokens = Vec::new();
    let mut last = 0usize;
    let mut last_char = 0u8;
    for (i, &b) in bytes.iter().enumerate() {
        if b == b' ' && !matches!(last_char, b'>' | b'<' | b'=') {
            if last + 1 < i {
                tokens.push(&s[last..i]);
            }
            last = i + 1;
        } else if b != b' ' {
            last_char = b;
        }
    }
    if last + 1 < s.len() {
        tokens.push(&s[last..]);
    }
    tokens.into_iter().map(|t| t.replace(' ', "")).collect()
}

fn blang_or_parts(tokens: &[String]) -> Result<Vec<&[String]>, RangeError> {
    let mut parts = Vec::new();
    let mut last = 0;
    for (i, token) in tokens.iter().enumerate() {
        if token == "||" {
            if i == 0 {
                return Err(RangeError::new("First element in range is '||'"));
            }
            parts.push(&tokens[last..i]);
            last = i + 1;
        }
    }
    if last == tokens.len() {
        return Err(RangeError::new("Last element in range is '||'"));
    }
    parts.push(&tokens[last..]);
    Ok(parts)
}

/// Splits `>=1.2.3` at its first digit into the comparator and the version.
fn split_comparator(part: &str) -> Result<(&str, &str), RangeError> {
    let at = part
        .find(|c: char| c.is_ascii_digit())
        .ok_or_else(|| RangeError::new(format!("Could not get version from string: {part:?}")))?;
    Ok((part[..at].trim(), &part[at..]))
}

fn blang_op(op: &str) -> Option<Op> {
    Some(match op {
        "" | "=" | "==" => Op::Eq,
        "!" | "!=" => Op::Ne,
        ">" => Op::Gt,
        ">=" => Op::Ge,
        "<" => Op::Lt,
        "<=" => Op::Le,
        _ => return None,
    })
}

/// blang's wildcard expansion: `1.2.x` is `>=1.2.0 <1.3.0`, `>1.x` is `>=2.0.0`, and so on.
/// A token holding an `x` anywhere goes through it, as in blang.
fn blang_expand_wildcards(parts: &[String]) -> Result<Vec<String>, RangeError> {
    let mut expanded = Vec::new();
    for part in parts {
        if !part.contains('x') {
            expanded.push(part.clone());
            continue;
        }
        let (op, version) = split_comparator(part)?;
        let pieces: Vec<&str> = version.split('.').collect();
        let wildcard = match (pieces.len(), pieces.last()) {
            (2, Some(&"x")) => Some(1), // 1.x: the major is kept, bump it
            (3, Some(&"x")) => Some(2), // 1.2.x: bump the minor
            _ => None,
        };
        let flat = {
            let v = version.replacen(".x.x", ".x", 1).replacen(".x", ".0", 1);
            if v.split('.').count() == 2 {
                format!("{v}.0")
            } else {
                v
            }
        };
        let bumped = || -> String {
            let mut fields: Vec<String> = flat.split('.').map(str::to_string).collect();
            let at = match wildcard {
                Some(1) => 0,
                Some(_) => 1,
                None => return String::new(),
            };
            // blang ignores a field that is not a number here, and fails later on the version.
            if let Some(n) = fields.get(at).and_then(|f| f.parse::<u64>().ok()) {
                fields[at] = (n + 1).to_string();
            }
            fields.join(".")
        };
        let (result_op, result_version) = match op {
            ">" => (">=", bumped()),
            ">=" => (">=", flat.clone()),
            "<" => ("<", flat.clone()),
            "<=" => ("<", bumped()),
            "" | "=" | "==" => {
                expanded.push(format!(">={flat}"));
                ("<", bumped())
            }
            "!=" | "!" => {
                expanded.push(format!("<{flat}"));
                (">=", bumped())
            }
            _ => ("", flat.clone()),
        };
        expanded.push(format!("{result_op}{result_version}"));
    }
    Ok(expanded)
}

/// A Masterminds/semver v3 constraint, the language of a requested version range in OLM v1
/// (`opkit-semver` holds its rules, shared with Helm charts' `semverCompare`).
#[derive(Debug, Clone)]
pub struct VersionRange {
    source: String,
    constraints: opkit_semver::Constraints,
}

impl VersionRange {
    /// Parses a constraint such as `>=1.2.0, <2`, `~1.4`, `^2.x || 3.1.0` or `1.0 - 1.4`.
    pub fn parse(range: &str) -> Result<VersionRange, RangeError> {
        let constraints =
            opkit_semver::Constraints::parse(range).map_err(|e| RangeError::new(e.to_string()))?;
        Ok(VersionRange {
            source: range.to_string(),
            constraints,
        })
    }

    /// Whether `version` satisfies the constraint.
    pub fn contains(&self, version: &Version) -> bool {
        // Every strict semver version is also a Masterminds one.
        opkit_semver::Version::from_parts(
            version.major,
            version.minor,
            version.patch,
            version.pre.as_str(),
            version.build.as_str(),
        )
        .is_ok_and(|v| self.constraints.check(&v))
    }
}

impl PartialEq for VersionRange {
    fn eq(&self, other: &Self) -> bool {
        self.source == other.source
    }
}

impl Eq for VersionRange {}

impl FromStr for VersionRange {
    type Err = RangeError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        VersionRange::parse(s)
    }
}

impl fmt::Display for VersionRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Version {
        Version::parse(s).unwrap()
    }

    fn skip(range: &str, version: &str) -> bool {
        SkipRange::parse(range).unwrap().contains(&v(version))
    }

    fn requested(range: &str, version: &str) -> bool {
        VersionRange::parse(range).unwrap().contains(&v(version))
    }

    #[test]
    fn skip_ranges_combine_and_by_spaces_and_or_by_bars() {
        assert!(skip(">=4.1.0 <4.2.0", "4.1.7"));
        assert!(!skip(">=4.1.0 <4.2.0", "4.2.0"));
        assert!(skip("<1.0.0 || >=2.0.0", "2.3.0"));
        assert!(!skip("<1.0.0 || >=2.0.0", "1.3.0"));
        assert!(skip(">1.0.0 <3.0.0 !2.0.3-beta.2", "2.0.3"));
        assert!(!skip(">1.0.0 <3.0.0 !2.0.3-beta.2", "2.0.3-beta.2"));
        assert!(skip("1.2.3", "1.2.3+build.7"), "build metadata is ignored");
        assert!(
            skip(">= 1.0.0 <  2.0.0", "1.5.0"),
            "a space after a comparator is allowed"
        );
    }

    #[test]
    fn skip_ranges_order_prereleases_like_any_version() {
        assert!(skip(">=1.0.0 <2.0.0", "1.5.0-rc.1"));
        assert!(skip("<1.0.0", "1.0.0-alpha"));
        assert!(!skip(">=1.0.0", "1.0.0-alpha"));
    }

    #[test]
    fn skip_range_wildcards_expand_as_blang_does() {
        assert!(skip("1.2.x", "1.2.9") && !skip("1.2.x", "1.3.0") && !skip("1.2.x", "1.1.9"));
        assert!(skip("1.x", "1.9.0") && !skip("1.x", "2.0.0"));
        assert!(skip(">1.x", "2.0.0") && !skip(">1.x", "1.9.9"));
        assert!(skip("<=1.2.x", "1.2.9") && !skip("<=1.2.x", "1.3.0"));
        assert!(skip("<1.2.x", "1.1.9") && !skip("<1.2.x", "1.2.0"));
        // blang puts both halves of `!=1.x` in one conjunction, so nothing matches.
        assert!(!skip("!=1.x", "0.5.0") && !skip("!=1.x", "2.0.0"));
    }

    #[test]
    fn skip_ranges_refuse_what_blang_refuses_with_its_messages() {
        let err = |s: &str| SkipRange::parse(s).unwrap_err().to_string();
        assert_eq!(err("|| >1.0.0"), "First element in range is '||'");
        assert_eq!(err(">1.0.0 ||"), "Last element in range is '||'");
        assert_eq!(err(">=abc"), "Could not get version from string: \">=abc\"");
        assert!(err("~1.0.0").contains("Could not parse comparator \"~\""));
        assert!(err(">=1.0").contains("Could not parse version \"1.0\""));
        assert_eq!(
            SkipRange::parse(">=1.0.0 <2.0.0").unwrap().to_string(),
            ">=1.0.0 <2.0.0"
        );
    }

    #[test]
    fn requested_ranges_follow_masterminds_and_admit_prereleases_per_group() {
        assert!(requested(">=1.2.0, <2", "1.9.0") && !requested(">=1.2.0, <2", "2.0.0"));
        assert!(requested("~1.2", "1.2.7") && !requested("^1.2.3", "2.0.0"));
        assert!(!requested(">=1.0.0", "1.5.0-rc.1"));
        assert!(requested(">=1.0.0-0, <2.0.0", "1.5.0-rc.1"));
        assert_eq!(VersionRange::parse("~1.4").unwrap().to_string(), "~1.4");
    }

    fn release() -> impl proptest::strategy::Strategy<Value = Version> {
        use proptest::prelude::*;
        (0u64..4, 0u64..4, 0u64..4).prop_map(|(a, b, c)| Version::new(a, b, c))
    }

    fn any_version() -> impl proptest::strategy::Strategy<Value = Version> {
        use proptest::prelude::*;
        (
            release(),
            proptest::option::of(prop_oneof!["alpha", "rc\\.[0-9]"]),
        )
            .prop_map(|(mut v, pre)| {
                if let Some(pre) = pre {
                    v.pre = semver::Prerelease::new(&pre).unwrap();
                }
                v
            })
    }

    proptest::proptest! {
        /// Cargo's caret and tilde agree with Masterminds' on release versions (Cargo's `~0.0.0`
        /// is `<0.1.0`, Masterminds' matches everything: left out).
        #[test]
        fn caret_and_tilde_agree_with_cargo_on_releases(bound in release(), v in release()) {
            let caret = semver::VersionReq::parse(&format!("^{bound}")).unwrap();
            proptest::prop_assert_eq!(requested(&format!("^{bound}"), &v.to_string()), caret.matches(&v));
            if bound != Version::new(0, 0, 0) {
                let tilde = semver::VersionReq::parse(&format!("~{bound}")).unwrap();
                proptest::prop_assert_eq!(requested(&format!("~{bound}"), &v.to_string()), tilde.matches(&v));
            }
        }

        /// A blang interval holds exactly the versions between its bounds, prereleases too.
        #[test]
        fn skip_range_intervals_hold_what_lies_between(a in any_version(), b in any_version(), v in any_version()) {
            let range = SkipRange::parse(&format!(">={a} <{b}")).unwrap();
            let between = v.cmp_precedence(&a) != Ordering::Less && v.cmp_precedence(&b) == Ordering::Less;
            proptest::prop_assert_eq!(range.contains(&v), between);
            let either = SkipRange::parse(&format!("<{a} || >={a}")).unwrap();
            proptest::prop_assert!(either.contains(&v));
        }
    }

    #[test]
    fn requested_ranges_refuse_garbage_with_masterminds_message() {
        let err = |s: &str| VersionRange::parse(s).unwrap_err().to_string();
        assert_eq!(err("latest"), "improper constraint: latest");
        assert_eq!(err(">=1.0.0 || foo"), "improper constraint:  foo");
        assert!(VersionRange::parse("").is_err());
    }
}
