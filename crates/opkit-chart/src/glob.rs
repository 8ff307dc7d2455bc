//! The two path patterns charts meet: `.Files.Glob` (gobwas/glob with `/` as separator:
//! `*`, `**`, `?`, `[…]`/`[!…]`, `{a,b}`) and `helm template --show-only` (Go's
//! `filepath.Match`: `*`, `?`, `[…]`/`[^…]`, `\` escapes). One matcher serves both; only
//! the syntax differs.

/// One element of a compiled pattern.
#[derive(Clone, Debug)]
enum Token {
    Lit(char),
    /// `*`: any run of characters other than `/`.
    Star,
    /// `**` (gobwas only): any run of characters.
    SuperStar,
    /// `?`: one character other than `/`.
    One,
    /// `[…]`: one character in (or, negated, not in) the ranges.
    Class {
        negated: bool,
        ranges: Vec<(char, char)>,
    },
    /// `{a,b}` (gobwas only): any of the alternatives.
    Alt(Vec<Vec<Token>>),
}

/// A compiled pattern.
#[derive(Clone, Debug)]
pub(crate) struct Glob(Vec<Token>);

/// The pattern is malformed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BadPattern;

impl Glob {
    /// Compiles a gobwas/glob pattern with `/` as the separator (`.Files.Glob`).
    pub(crate) fn compile(pattern: &str) -> Result<Glob, BadPattern> {
        let chars: Vec<char> = pattern.chars().collect();
        let mut i = 0;
        let tokens = parse(&chars, &mut i, Syntax::Gobwas, false)?;
        if i != chars.len() {
            return Err(BadPattern);
        }
        Ok(Glob(tokens))
    }

    /// Whether `name` matches.
    pub(crate) fn matches(&self, name: &str) -> bool {
        let chars: Vec<char> = name.chars().collect();
        match_tokens(&self.0, &chars)
    }
}

/// Go's `filepath.Match` on `/`-separated paths; a malformed pattern matches nothing (as
/// `helm template --show-only` treats Go's `ErrBadPattern`).
pub(crate) fn path_match(pattern: &str, name: &str) -> bool {
    let chars: Vec<char> = pattern.chars().collect();
    let mut i = 0;
    match parse(&chars, &mut i, Syntax::FilepathMatch, false) {
        Ok(tokens) if i == chars.len() => match_tokens(&tokens, &name.chars().collect::<Vec<_>>()),
        _ => false,
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Syntax {
    Gobwas,
    FilepathMatch,
}

/// Parses tokens up to the end, or (inside `{…}`) up to an unescaped `,` or `}`.
fn parse(
    p: &[char],
    i: &mut usize,
    syntax: Syntax,
    in_alt: bool,
) -> Result<Vec<Token>, BadPattern> {
    let mut out = Vec::new();
    while *i < p.len() {
        let c = p[*i];
        match c {
            ',' | '}' if in_alt => return Ok(out),
            '*' => {
                if syntax == Syntax::Gobwas && p.get(*i + 1) == Some(&'*') {
                    *i += 2;
                    out.push(Token::SuperStar);
                } else {
                    *i += 1;
                    out.push(Token::Star);
                }
            }
            '?' => {
                *i += 1;
                out.push(Token::One);
            }
            '[' => {
                *i += 1;
                out.push(parse_class(p, i, syntax)?);
            }
            '{' if syntax == Syntax::Gobwas => {
                *i += 1;
                let mut alts = Vec::new();
                loop {
                    alts.push(parse(p, i, syntax, true)?);
                    match p.get(*i) {
                        Some(',') => *i += 1,
                        Some('}') => {
                            *i += 1;
                            break;
                        }
                        _ => return Err(BadPattern),
                    }
                }
                out.push(Token::Alt(alts));
            }
            '\\' => {
                let Some(&n) = p.get(*i + 1) else {
                    return Err(BadPattern);
                };
                *i += 2;
                out.push(Token::Lit(n));
            }
            _ => {
                *i += 1;
                out.push(Token::Lit(c));
            }
        }
    }
    if in_alt {
        return Err(BadPattern);
    }
    Ok(out)
}

/// Parses a character class after its `[`, through its `]`.
fn parse_class(p: &[char], i: &mut usize, syntax: Syntax) -> Result<Token, BadPattern> {
    let neg_char = if syntax == Syntax::Gobwas { '!' } else { '^' };
    let negated = p.get(*i) == Some(&neg_char);
    if negated {
        *i += 1;
    }
    let mut ranges = Vec::new();
    let mut first = true;
    loop {
        let Some(&c) = p.get(*i) else {
            return Err(BadPattern);
        };
        if c == ']' {
            if first && syntax == Syntax::FilepathMatch {
                // Go: an empty class is malformed.
                return Err(BadPattern);
            }
            *i += 1;
            break;
        }
        first = false;
        let lo = class_char(p, i, syntax)?;
        let hi = if p.get(*i) == Some(&'-') && p.get(*i + 1).is_some_and(|c| *c != ']') {
            *i += 1;
            class_char(p, i, syntax)?
        } else {
            lo
        };
        if hi < lo {
            return Err(BadPattern);
        }
        ranges.push((lo, hi));
    }
    Ok(Token::Class { negated, ranges })
}

fn class_char(p: &[char], i: &mut usize, syntax: Syntax) -> Result<char, BadPattern> {
    let c = *p.get(*i).ok_or(BadPattern)?;
    if c == '\\' && syntax == Syntax::FilepathMatch {
        let n = *p.get(*i + 1).ok_or(BadPattern)?;
        *i += 2;
        return Ok(n);
    }
    *i += 1;
    Ok(c)
}

/// Backtracking match of `tokens` against all of `s`.
fn match_tokens(tokens: &[Token], s: &[char]) -> bool {
    let Some((first, rest)) = tokens.split_first() else {
        return s.is_empty();
    };
    match first {
        Token::Lit(c) => s.first() == Some(c) && match_tokens(rest, &s[1..]),
        Token::One => s.first().is_some_and(|c| *c != '/') && match_tokens(rest, &s[1..]),
        Token::Class { negated, ranges } => {
            s.first().is_some_and(|c| {
                let inside = ranges.iter().any(|(lo, hi)| lo <= c && c <= hi);
                inside != *negated && *c != '/'
            }) && match_tokens(rest, &s[1..])
        }
        Token::Star => {
            let mut n = 0;
            loop {
                if match_tokens(rest, &s[n..]) {
                    return true;
                }
                if n == s.len() || s[n] == '/' {
                    return false;
                }
                n += 1;
            }
        }
        Token::SuperStar => (0..=s.len()).any(|n| match_tokens(rest, &s[n..])),
        Token::Alt(alts) => alts.iter().any(|alt| {
            let mut joined = alt.clone();
            joined.extend_from_slice(rest);
            match_tokens(&joined, s)
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn glob(p: &str, s: &str) -> bool {
        Glob::compile(p).unwrap().matches(s)
    }

    #[test]
    fn gobwas_star_stops_at_slash_and_double_star_does_not() {
        assert!(glob("files/*", "files/a.txt"));
        assert!(!glob("files/*", "files/sub/a.txt"));
        assert!(glob("files/**", "files/sub/a.txt"));
        assert!(glob("**.conf", "a/b/c.conf"));
    }

    #[test]
    fn gobwas_classes_alternatives_and_escapes() {
        assert!(glob("f/[a-c].txt", "f/b.txt"));
        assert!(!glob("f/[!a-c].txt", "f/b.txt"));
        assert!(glob("f/*.{yaml,json}", "f/x.json"));
        assert!(!glob("f/*.{yaml,json}", "f/x.toml"));
        assert!(glob(r"f/\*", "f/*"));
        assert!(Glob::compile("f/{a,b").is_err());
        assert!(Glob::compile("f/[a").is_err());
    }

    #[test]
    fn filepath_match_has_no_double_star_and_negates_with_caret() {
        assert!(path_match("templates/*.yaml", "templates/a.yaml"));
        assert!(!path_match("templates/**", "templates/sub/a.yaml"));
        assert!(path_match("templates/[^b]*", "templates/a.yaml"));
        assert!(!path_match("templates/[", "templates/["));
        assert!(!path_match("templates/{a,b}.yaml", "templates/a.yaml"));
    }
}
