//! Masterminds constraints: `>=1.2, <2 || ^3`, checked against a [`Version`].

use std::cmp::Ordering;
use std::sync::OnceLock;

use regex_lite::Regex;

use crate::version::{compare_prerelease, compiled};
use crate::{Error, Version};

const CV: &str = r"v?([0-9|x|X|\*]+)(\.[0-9|x|X|\*]+)?(\.[0-9|x|X|\*]+)?(-([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?(\+([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?";
const OPS: &str = r"=||!=|>|<|>=|=>|<=|=<|~|~>|\^";
/// Go's `\s`: ASCII white space only (no vertical tab), as Masterminds' patterns mean it.
const WS: &str = r"[\t\n\f\r ]";

fn constraint_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    compiled(&RE, || format!(r"^{WS}*({OPS}){WS}*({CV}){WS}*$"))
}

fn range_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    compiled(&RE, || format!(r"{WS}*({CV}){WS}+-{WS}+({CV}){WS}*"))
}

fn find_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    compiled(&RE, || format!(r"({OPS}){WS}*({CV})"))
}

fn valid_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    compiled(&RE, || {
        format!(r"^({WS}*({OPS}){WS}*({CV}){WS}*)((?:{WS}+|,{WS}*)({OPS}){WS}*({CV}){WS}*)*$")
    })
}

/// Whether the range pattern (`A - B`) can match `c`: it needs a `-` after white space.
fn may_hold_range(c: &str) -> bool {
    c.char_indices()
        .any(|(i, ch)| ch == '-' && c[..i].ends_with(is_go_space))
}

/// A character of Go's `\s` ([`WS`]).
fn is_go_space(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\x0C' | '\r' | ' ')
}

fn is_x(x: &str) -> bool {
    matches!(x, "x" | "*" | "X")
}

/// A parsed constraint: alternatives (`||`) of and-groups.
#[derive(Clone, Debug)]
pub struct Constraints {
    /// Each and-group, and whether one of its constraints names a prerelease (then the whole
    /// group admits prerelease versions).
    groups: Vec<(Vec<Constraint>, bool)>,
}

#[derive(Clone, Debug)]
struct Constraint {
    op: String,
    con: Version,
    minor_dirty: bool,
    patch_dirty: bool,
    dirty: bool,
}

impl Constraints {
    /// Parses a constraint (Masterminds' `NewConstraint`); the error is its `improper
    /// constraint: …` message.
    pub fn parse(c: &str) -> Result<Constraints, Error> {
        let mut rewritten = c.to_string();
        let ranges = may_hold_range(c).then(|| range_re().captures_iter(c));
        for m in ranges.into_iter().flatten() {
            let t = format!(">= {}, <= {} ", &m[1], &m[11]);
            rewritten = rewritten.replacen(&m[0], &t, 1);
        }
        let mut groups = Vec::new();
        for or in rewritten.split("||") {
            if !valid_re().is_match(or) {
                return Err(Error::new(format!("improper constraint: {or}")));
            }
            let mut found: Vec<&str> = find_re().find_iter(or).map(|m| m.as_str()).collect();
            if found.is_empty() {
                found.push(or);
            }
            let mut list = Vec::new();
            let mut has_pre = false;
            for text in found {
                let con = Constraint::parse(text)?;
                has_pre |= !con.con.prerelease().is_empty();
                list.push(con);
            }
            groups.push((list, has_pre));
        }
        Ok(Constraints { groups })
    }

    /// Whether `v` satisfies some alternative (Masterminds' `Check`).
    pub fn check(&self, v: &Version) -> bool {
        self.groups
            .iter()
            .any(|(list, pre)| list.iter().all(|c| c.check(v, *pre)))
    }
}

impl Constraint {
    fn parse(c: &str) -> Result<Constraint, Error> {
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
            return Err(Error::new(format!("improper constraint: {c}")));
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
        let con = Version::parse(&ver).map_err(|_| Error::new("constraint parser error"))?;
        Ok(Constraint {
            op: g(1).to_string(),
            con,
            minor_dirty,
            patch_dirty,
            dirty,
        })
    }

    fn check(&self, v: &Version, include_pre: bool) -> bool {
        if !v.prerelease().is_empty() && !include_pre {
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
                if v.major() != c.major() {
                    return v.major() > c.major();
                }
                if self.minor_dirty {
                    return false;
                }
                if self.patch_dirty {
                    return v.minor() > c.minor();
                }
                cmp == Ordering::Greater
            }
            "<" => cmp == Ordering::Less,
            ">=" | "=>" => cmp != Ordering::Less,
            "<=" | "=<" => {
                if !self.dirty {
                    return cmp != Ordering::Greater;
                }
                !(v.major() > c.major()
                    || (v.major() == c.major() && v.minor() > c.minor() && !self.minor_dirty))
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
        if c.major() == 0
            && c.minor() == 0
            && c.patch() == 0
            && !self.minor_dirty
            && !self.patch_dirty
        {
            return true;
        }
        if v.major() != c.major() {
            return false;
        }
        v.minor() == c.minor() || self.minor_dirty
    }

    fn caret(&self, v: &Version) -> bool {
        let c = &self.con;
        if v.compare(c) == Ordering::Less {
            return false;
        }
        if c.major() > 0 || self.minor_dirty {
            return v.major() == c.major();
        }
        if v.major() > 0 {
            return false;
        }
        if c.minor() > 0 || self.patch_dirty {
            return v.minor() == c.minor();
        }
        if v.minor() > 0 {
            return false;
        }
        c.patch() == v.patch()
    }

    fn not_equal(&self, v: &Version) -> bool {
        let c = &self.con;
        if self.dirty {
            if c.major() != v.major() {
                return true;
            }
            if c.minor() != v.minor() && !self.minor_dirty {
                return true;
            } else if self.minor_dirty {
                return false;
            } else if c.patch() != v.patch() && !self.patch_dirty {
                return true;
            } else if self.patch_dirty {
                if !v.prerelease().is_empty() || !c.prerelease().is_empty() {
                    return compare_prerelease(v.prerelease(), c.prerelease()) != Ordering::Equal;
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

    fn ok(c: &str, v: &str) -> bool {
        Constraints::parse(c)
            .unwrap()
            .check(&Version::parse(v).unwrap())
    }

    #[test]
    fn only_a_dash_after_white_space_can_start_a_hyphen_range() {
        assert!(may_hold_range("1.2 - 1.4"));
        assert!(may_hold_range("1.2\t- 1.4"));
        assert!(!may_hold_range(">=1.21-0"));
        assert!(!may_hold_range("~1.2.3-beta.1"));
        assert!(ok("1.2 - 1.4", "1.3.0"));
        assert!(!ok("1.2 - 1.4", "1.5.0"));
    }

    #[test]
    fn comparators_commas_spaces_and_alternatives() {
        assert!(ok(">=1.2.0, <2", "1.9.0") && !ok(">=1.2.0, <2", "2.0.0"));
        assert!(ok(">= 1.2.0 < 2.0.0", "1.2.0"));
        assert!(ok("1.2.3", "1.2.3") && !ok("1.2.3", "1.2.4"));
        assert!(ok("v1.2.3", "1.2.3"));
        assert!(ok("!=1.2.3", "1.2.4") && !ok("!=1.2.3", "1.2.3"));
        assert!(ok("<1.0.0 || >=3.0.0", "3.1.0") && !ok("<1.0.0 || >=3.0.0", "2.0.0"));
    }

    #[test]
    fn partial_versions_and_wildcards_are_ranges() {
        assert!(ok("1.2", "1.2.7") && !ok("1.2", "1.3.0"));
        assert!(ok("1", "1.9.0") && !ok("1", "2.0.0"));
        assert!(ok("1.2.x", "1.2.0") && ok("1.X", "1.4.0") && ok("*", "9.9.9"));
        assert!(!ok(">1", "1.9.9") && ok(">1", "2.0.0"));
        assert!(!ok(">1.2", "1.2.9") && ok(">1.2", "1.3.0"));
        assert!(ok("<=1.2", "1.2.9") && !ok("<=1.2", "1.3.0"));
        assert!(!ok("!=1.x", "1.4.0") && ok("!=1.x", "2.0.0"));
    }

    #[test]
    fn tilde_caret_and_hyphen_ranges() {
        assert!(ok("~1.2.3", "1.2.9") && !ok("~1.2.3", "1.3.0"));
        assert!(ok("~>1.2", "1.2.0") && !ok("~1.2", "1.3.0"));
        assert!(ok("~1", "1.9.0") && !ok("~1", "2.0.0"));
        assert!(ok("^1.2.3", "1.9.0") && !ok("^1.2.3", "2.0.0"));
        assert!(ok("^0.2.3", "0.2.9") && !ok("^0.2.3", "0.3.0"));
        assert!(ok("^0.0.3", "0.0.3") && !ok("^0.0.3", "0.0.4"));
        assert!(ok("^0", "0.9.0") && !ok("^0", "1.0.0"));
        assert!(ok("1.2 - 1.4.5", "1.4.5") && !ok("1.2 - 1.4.5", "1.4.6"));
        assert!(ok("1.2 - 1.4.5", "1.2.0") && !ok("1.2 - 1.4.5", "1.1.9"));
    }

    #[test]
    fn prereleases_match_only_a_group_that_names_one() {
        assert!(!ok(">=1.0.0", "1.5.0-rc.1"));
        assert!(ok(">=1.0.0-0", "1.5.0-rc.1"));
        assert!(ok(">=1.0.0-0, <2.0.0", "1.5.0-rc.1"), "the group decides");
        assert!(
            !ok("<1.0.0-0 || >=2.0.0", "2.5.0-rc.1"),
            "each alternative decides"
        );
        assert!(!ok("*", "1.0.0-rc.1"));
        assert!(!ok("!=1.2.3", "1.5.0-rc.1"));
        assert!(!ok("!=1.x", "2.0.0-rc.1"));
    }

    #[test]
    fn garbage_is_refused_with_masterminds_message() {
        let err = |s: &str| Constraints::parse(s).unwrap_err().to_string();
        assert_eq!(err("latest"), "improper constraint: latest");
        assert_eq!(err(">=1.0.0 || foo"), "improper constraint:  foo");
        assert!(Constraints::parse("").is_err());
    }

    #[test]
    fn white_space_is_gos_ascii_white_space() {
        assert!(ok(" >= 1.0\t,\r\n< 2 ", "1.5.0"));
        assert!(ok("1.0 -\x0C2.0", "1.5.0"));
        // Go's `\s` is ASCII: a no-break space or a vertical tab is not white space.
        let err = |s: &str| Constraints::parse(s).unwrap_err().to_string();
        assert_eq!(err(">=1.0,\u{a0}<2"), "improper constraint: >=1.0,\u{a0}<2");
        assert_eq!(err(">=1.0\x0B<2"), "improper constraint: >=1.0\x0B<2");
    }

    fn release() -> impl proptest::strategy::Strategy<Value = (u64, u64, u64)> {
        (0u64..4, 0u64..4, 0u64..4)
    }

    proptest::proptest! {
        /// An interval with both bounds holds exactly the releases between them.
        #[test]
        fn intervals_hold_what_lies_between(a in release(), b in release(), v in release()) {
            let s = |(x, y, z): (u64, u64, u64)| format!("{x}.{y}.{z}");
            let between = v >= a && v < b;
            proptest::prop_assert_eq!(ok(&format!(">={}, <{}", s(a), s(b)), &s(v)), between);
            let either = format!("<{} || >={}", s(a), s(a));
            proptest::prop_assert!(ok(&either, &s(v)));
        }
    }
}
