//! `.helmignore` as Helm's `pkg/ignore` reads it — not gitignore: no `**`, a rule without `/`
//! matches a path's last element, one with `/` the whole path, `dir/` only directories, and a
//! `!rule` ignores every path the rule does *not* match (Helm's own, surprising, reading).
//! Globs follow Go's `filepath.Match`. Helm always adds `templates/.?*` (hidden templates).

/// The name of the ignore file at a chart's root.
pub(crate) const HELM_IGNORE: &str = ".helmignore";

/// A malformed `.helmignore` rule, with Helm's text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IgnoreError {
    /// `**` in a rule.
    #[error("double-star (**) syntax is not supported")]
    DoubleStar,
    /// A glob Go's `filepath.Match` rejects.
    #[error("syntax error in pattern")]
    BadPattern,
}

#[derive(Debug, Clone)]
struct Pattern {
    glob: Glob,
    /// A rule with a leading `/` or with a `/` inside matches the whole path; others the
    /// last element.
    whole_path: bool,
    negate: bool,
    must_dir: bool,
}

/// The parsed rules of a `.helmignore`.
#[derive(Debug, Clone, Default)]
pub(crate) struct Rules {
    patterns: Vec<Pattern>,
}

impl Rules {
    /// Parses a `.helmignore` file (a UTF-8 BOM is skipped; blank lines and `#` comments are
    /// not rules).
    pub(crate) fn parse(text: &[u8]) -> Result<Rules, IgnoreError> {
        let text = text.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(text);
        let text = crate::chart::text(text);
        let mut rules = Rules::default();
        for line in text.lines() {
            rules.add(line)?;
        }
        Ok(rules)
    }

    /// Adds the rule Helm always has: hidden files under `templates/` are ignored.
    pub(crate) fn add_defaults(&mut self) {
        self.add("templates/.?*")
            .expect("Helm's default ignore rule is a valid glob");
    }

    fn add(&mut self, rule: &str) -> Result<(), IgnoreError> {
        let rule = rule.trim();
        if rule.is_empty() || rule.starts_with('#') {
            return Ok(());
        }
        if rule.contains("**") {
            return Err(IgnoreError::DoubleStar);
        }
        go_match(rule, "abc")?;
        let mut rule = rule;
        let negate = rule.starts_with('!');
        if negate {
            rule = &rule[1..];
        }
        let must_dir = rule.ends_with('/');
        if must_dir {
            rule = &rule[..rule.len() - 1];
        }
        let (glob, whole_path) = match rule.strip_prefix('/') {
            Some(rest) => (rest, true),
            None => (rule, rule.contains('/')),
        };
        self.patterns.push(Pattern {
            glob: Glob::new(glob),
            whole_path,
            negate,
            must_dir,
        });
        Ok(())
    }

    /// Whether the chart path `path` (`/`-separated, relative to the chart's root) is
    /// ignored; `is_dir` says whether it names a directory.
    pub(crate) fn ignore(&self, path: &str, is_dir: bool) -> bool {
        if path.is_empty() || path == "." || path == "./" {
            return false;
        }
        for p in &self.patterns {
            let name = if p.whole_path {
                path
            } else {
                path.rsplit('/').next().unwrap_or(path)
            };
            let matched = p.glob.matches(name);
            if p.negate {
                if (p.must_dir && !is_dir) || !matched {
                    return true;
                }
                continue;
            }
            if p.must_dir && !is_dir {
                continue;
            }
            if matched {
                return true;
            }
        }
        false
    }
}

/// A rule's glob, with the shapes most `.helmignore` rules have (`.git`, `*.swp`) matched
/// without the general matcher: every file of a chart is checked against every rule.
#[derive(Debug, Clone)]
enum Glob {
    /// No metacharacter: the name itself.
    Literal(String),
    /// `*` then no metacharacter: any name ending so, with no `/` before the ending.
    Suffix(String),
    /// Anything else, for [`go_match`].
    General(String),
}

impl Glob {
    fn new(glob: &str) -> Glob {
        let plain = |s: &str| !s.contains(['*', '?', '[', '\\']);
        match glob.strip_prefix('*') {
            _ if plain(glob) => Glob::Literal(glob.to_string()),
            Some(rest) if plain(rest) => Glob::Suffix(rest.to_string()),
            _ => Glob::General(glob.to_string()),
        }
    }

    /// Whether `name` matches, as [`go_match`] answers; a glob that fails to match
    /// (including a malformed one) counts as no match.
    fn matches(&self, name: &str) -> bool {
        match self {
            Glob::Literal(l) => name == l,
            Glob::Suffix(s) => name
                .strip_suffix(s.as_str())
                .is_some_and(|head| !head.contains('/')),
            Glob::General(g) => go_match(g, name).unwrap_or(false),
        }
    }
}

/// Go's `filepath.Match` on Unix: `*` is any run of non-`/` characters, `?` one non-`/`
/// character, `[^a-z]` a class, `\` escapes.
pub(crate) fn go_match(pattern: &str, name: &str) -> Result<bool, IgnoreError> {
    let mut pattern = pattern;
    let mut name = name;
    'pattern: while !pattern.is_empty() {
        let (star, chunk, rest) = scan_chunk(pattern);
        pattern = rest;
        if star && chunk.is_empty() {
            return Ok(!name.contains('/'));
        }
        let (t, ok) = match_chunk(chunk, name)?;
        if ok && (t.is_empty() || !pattern.is_empty()) {
            name = t;
            continue;
        }
        if star {
            let mut i = 0;
            while i < name.len() && name.as_bytes()[i] != b'/' {
                let next = i + name[i..].chars().next().map_or(1, char::len_utf8);
                // Go skips byte by byte; a skip into the middle of a character cannot
                // match a literal, so stepping by characters gives the same answers.
                let (t, ok) = match_chunk(chunk, &name[next..])?;
                if ok {
                    if pattern.is_empty() && !t.is_empty() {
                        i = next;
                        continue;
                    }
                    name = t;
                    continue 'pattern;
                }
                i = next;
            }
        }
        while !pattern.is_empty() {
            let (_, chunk, rest) = scan_chunk(pattern);
            pattern = rest;
            match_chunk(chunk, "")?;
        }
        return Ok(false);
    }
    Ok(name.is_empty())
}

fn scan_chunk(pattern: &str) -> (bool, &str, &str) {
    let trimmed = pattern.trim_start_matches('*');
    let star = trimmed.len() != pattern.len();
    let b = trimmed.as_bytes();
    let mut in_range = false;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\\' if i + 1 < b.len() => i += 1,
            b'[' => in_range = true,
            b']' => in_range = false,
            b'*' if !in_range => break,
            _ => {}
        }
        i += 1;
    }
    (star, &trimmed[..i], &trimmed[i..])
}

/// Matches `chunk` (no `*` outside classes) at the start of `s`: the rest of `s` and
/// whether it matched; the whole chunk is checked for syntax even after a mismatch.
fn match_chunk<'s>(chunk: &str, s: &'s str) -> Result<(&'s str, bool), IgnoreError> {
    let mut chunk = chunk;
    let mut s = s;
    let mut failed = false;
    while let Some(c) = chunk.chars().next() {
        if !failed && s.is_empty() {
            failed = true;
        }
        match c {
            '[' => {
                let mut r = '\0';
                if !failed {
                    r = s.chars().next().unwrap_or('\0');
                    s = &s[r.len_utf8()..];
                }
                chunk = &chunk[1..];
                let negated = chunk.starts_with('^');
                if negated {
                    chunk = &chunk[1..];
                }
                let mut matched = false;
                let mut nrange = 0;
                loop {
                    if chunk.starts_with(']') && nrange > 0 {
                        chunk = &chunk[1..];
                        break;
                    }
                    let (lo, rest) = get_esc(chunk)?;
                    chunk = rest;
                    let mut hi = lo;
                    if let Some(rest) = chunk.strip_prefix('-') {
                        let (h, rest) = get_esc(rest)?;
                        hi = h;
                        chunk = rest;
                    }
                    if lo <= r && r <= hi {
                        matched = true;
                    }
                    nrange += 1;
                }
                if matched == negated {
                    failed = true;
                }
            }
            '?' => {
                if !failed {
                    let r = s.chars().next().unwrap_or('\0');
                    if r == '/' {
                        failed = true;
                    }
                    s = &s[r.len_utf8()..];
                }
                chunk = &chunk[1..];
            }
            _ => {
                let mut lit = c;
                if c == '\\' {
                    chunk = &chunk[1..];
                    lit = chunk.chars().next().ok_or(IgnoreError::BadPattern)?;
                }
                if !failed {
                    match s.chars().next() {
                        Some(r) if r == lit => s = &s[r.len_utf8()..],
                        _ => failed = true,
                    }
                }
                chunk = &chunk[lit.len_utf8()..];
            }
        }
    }
    if failed {
        Ok(("", false))
    } else {
        Ok((s, true))
    }
}

/// One possibly escaped character of a class; a class must not end here.
fn get_esc(chunk: &str) -> Result<(char, &str), IgnoreError> {
    let mut chunk = chunk;
    if chunk.is_empty() || chunk.starts_with('-') || chunk.starts_with(']') {
        return Err(IgnoreError::BadPattern);
    }
    if let Some(rest) = chunk.strip_prefix('\\') {
        chunk = rest;
    }
    let r = chunk.chars().next().ok_or(IgnoreError::BadPattern)?;
    let rest = &chunk[r.len_utf8()..];
    if rest.is_empty() {
        return Err(IgnoreError::BadPattern);
    }
    Ok((r, rest))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_match_follows_filepath_match() {
        let cases: &[(&str, &str, Result<bool, IgnoreError>)] = &[
            ("abc", "abc", Ok(true)),
            ("*", "abc", Ok(true)),
            ("*c", "abc", Ok(true)),
            ("a*", "a", Ok(true)),
            ("a*", "ab/c", Ok(false)),
            ("a*/b", "abc/b", Ok(true)),
            ("a*b*c*d*e*/f", "axbxcxdxe/f", Ok(true)),
            ("a*b?c*x", "abxbbxdbxebxczzx", Ok(true)),
            ("ab[c]", "abc", Ok(true)),
            ("ab[b-d]", "abc", Ok(true)),
            ("ab[^c]", "abc", Ok(false)),
            ("ab[^e-g]", "abc", Ok(true)),
            ("a\\*b", "a*b", Ok(true)),
            ("a\\*b", "ab", Ok(false)),
            ("a?b", "a☺b", Ok(true)),
            ("a?b", "a/b", Ok(false)),
            ("[", "a", Err(IgnoreError::BadPattern)),
            ("[^", "a", Err(IgnoreError::BadPattern)),
            ("a[", "x", Err(IgnoreError::BadPattern)),
            ("*x", "xxx", Ok(true)),
            ("[-]", "-", Err(IgnoreError::BadPattern)),
            ("a\\", "a", Err(IgnoreError::BadPattern)),
        ];
        for (p, n, want) in cases {
            assert_eq!(&go_match(p, n), want, "Match({p:?}, {n:?})");
        }
    }

    fn rules(text: &str) -> Rules {
        let mut r = Rules::parse(text.as_bytes()).unwrap();
        r.add_defaults();
        r
    }

    #[test]
    fn a_rule_without_slash_matches_the_last_element_anywhere() {
        let r = rules("*.bak\n# comment\n\n");
        assert!(r.ignore("a.bak", false));
        assert!(r.ignore("templates/x/a.bak", false));
        assert!(!r.ignore("a.yaml", false));
    }

    #[test]
    fn a_rule_with_slash_matches_the_whole_path_and_a_trailing_slash_only_directories() {
        let r = rules("docs/*.md\n/root.txt\nsecrets/\n");
        assert!(r.ignore("docs/a.md", false));
        assert!(!r.ignore("x/docs/a.md", false));
        assert!(r.ignore("root.txt", false));
        assert!(!r.ignore("sub/root.txt", false));
        assert!(r.ignore("secrets", true));
        assert!(!r.ignore("secrets", false));
    }

    #[test]
    fn hidden_templates_are_always_ignored() {
        let r = rules("");
        assert!(r.ignore("templates/.hidden.yaml", false));
        assert!(!r.ignore("templates/shown.yaml", false));
        assert!(!r.ignore(".hidden", false));
    }

    #[test]
    fn a_negated_rule_ignores_what_it_does_not_match_as_helm_does() {
        let r = Rules::parse(b"!*.yaml\n").unwrap();
        assert!(r.ignore("notes.txt", false));
        assert!(!r.ignore("a.yaml", false));
    }

    #[test]
    fn double_star_and_bad_globs_are_refused_with_helms_text() {
        assert_eq!(
            Rules::parse(b"a/**/b").unwrap_err().to_string(),
            "double-star (**) syntax is not supported"
        );
        assert_eq!(
            Rules::parse(b"a[").unwrap_err().to_string(),
            "syntax error in pattern"
        );
    }

    proptest::proptest! {
        #[test]
        fn any_rule_and_path_give_an_answer_never_a_panic(
            rule in "[a-c*?\\[\\]^\\\\/!.-]{0,12}",
            path in "[a-c/.☺-]{0,12}",
            is_dir in proptest::bool::ANY,
        ) {
            let general = go_match(&rule, &path);
            if !rule.contains("**") {
                proptest::prop_assert_eq!(Glob::new(&rule).matches(&path), general.unwrap_or(false));
            }
            if let Ok(r) = Rules::parse(rule.as_bytes()) {
                let _ = r.ignore(&path, is_dir);
            }
        }
    }
}
