//! The lexer: Go's `text/template/parse` lexer, item for item, so that the parser sees the
//! same tokens (and the same error texts) Go's does. It runs to completion up front; it stops
//! at the first error item, as Go's does.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ItemType {
    Error,
    Bool,
    Char,
    CharConstant,
    Complex,
    Assign,
    Declare,
    Eof,
    Field,
    Identifier,
    LeftDelim,
    LeftParen,
    Number,
    Pipe,
    RawString,
    RightDelim,
    RightParen,
    Space,
    String,
    Text,
    Variable,
    // Keywords.
    Block,
    Break,
    Continue,
    Dot,
    Define,
    Else,
    End,
    If,
    Nil,
    Range,
    Template,
    With,
}

impl ItemType {
    fn is_keyword(self) -> bool {
        matches!(
            self,
            ItemType::Block
                | ItemType::Break
                | ItemType::Continue
                | ItemType::Dot
                | ItemType::Define
                | ItemType::Else
                | ItemType::End
                | ItemType::If
                | ItemType::Nil
                | ItemType::Range
                | ItemType::Template
                | ItemType::With
        )
    }
}

#[derive(Clone, Debug)]
pub(crate) struct Item<'a> {
    pub typ: ItemType,
    pub pos: usize,
    /// The item's text (borrowed from the input), or an error item's message.
    pub val: std::borrow::Cow<'a, str>,
    pub line: usize,
}

impl std::fmt::Display for Item<'_> {
    /// Go's `item.String()`, used in "unexpected X in Y" errors.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.typ {
            ItemType::Eof => f.write_str("EOF"),
            ItemType::Error => f.write_str(&self.val),
            t if t.is_keyword() => write!(f, "<{}>", self.val),
            _ if self.val.chars().count() > 10 => {
                write!(f, "{}...", crate::gofmt::go_quote_trunc(&self.val, 10))
            }
            _ => f.write_str(&crate::gofmt::go_quote(&self.val)),
        }
    }
}

const LEFT: &str = "{{";
const RIGHT: &str = "}}";
const LEFT_COMMENT: &str = "/*";
const RIGHT_COMMENT: &str = "*/";

fn is_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r' | '\n')
}

fn is_alnum(c: char) -> bool {
    c == '_' || c.is_alphabetic() || c.is_numeric()
}

fn has_left_trim(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 2 && b[0] == b'-' && is_space(b[1] as char)
}

fn has_right_trim(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 2 && is_space(b[0] as char) && b[1] == b'-'
}

fn keyword(word: &str) -> Option<ItemType> {
    Some(match word {
        "." => ItemType::Dot,
        "block" => ItemType::Block,
        "break" => ItemType::Break,
        "continue" => ItemType::Continue,
        "define" => ItemType::Define,
        "else" => ItemType::Else,
        "end" => ItemType::End,
        "if" => ItemType::If,
        "range" => ItemType::Range,
        "nil" => ItemType::Nil,
        "template" => ItemType::Template,
        "with" => ItemType::With,
        _ => return None,
    })
}

struct Lexer<'a> {
    input: &'a str,
    pos: usize,
    start: usize,
    items: Vec<Item<'a>>,
    paren_depth: i32,
    break_ok: bool,
    continue_ok: bool,
    line: usize,
    start_line: usize,
}

/// Lexes `input` into items ending in EOF or an error item.
/// `break_ok`/`continue_ok` are false when a function of that name shadows the keyword.
pub(crate) fn lex(input: &str, break_ok: bool, continue_ok: bool) -> Vec<Item<'_>> {
    let mut l = Lexer {
        input,
        pos: 0,
        start: 0,
        items: Vec::new(),
        paren_depth: 0,
        break_ok,
        continue_ok,
        line: 1,
        start_line: 1,
    };
    let mut state = State::Text;
    loop {
        state = match state {
            State::Text => l.lex_text(),
            State::LeftDelim => l.lex_left_delim(),
            State::Comment => l.lex_comment(),
            State::RightDelim => l.lex_right_delim(),
            State::Inside => l.lex_inside(),
            State::Done => break,
        };
    }
    l.items
}

enum State {
    Text,
    LeftDelim,
    Comment,
    RightDelim,
    Inside,
    Done,
}

impl<'a> Lexer<'a> {
    fn rest(&self) -> &'a str {
        &self.input[self.pos..]
    }

    fn next(&mut self) -> Option<char> {
        let c = self.rest().chars().next()?;
        self.pos += c.len_utf8();
        if c == '\n' {
            self.line += 1;
        }
        Some(c)
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn backup(&mut self, c: Option<char>) {
        if let Some(c) = c {
            self.pos -= c.len_utf8();
            if c == '\n' {
                self.line -= 1;
            }
        }
    }

    fn emit(&mut self, typ: ItemType) {
        self.items.push(Item {
            typ,
            pos: self.start,
            val: std::borrow::Cow::Borrowed(&self.input[self.start..self.pos]),
            line: self.start_line,
        });
        self.start = self.pos;
        self.start_line = self.line;
    }

    fn ignore(&mut self) {
        self.line += count_newlines(&self.input[self.start..self.pos]);
        self.start = self.pos;
        self.start_line = self.line;
    }

    fn error(&mut self, msg: String) -> State {
        self.items.push(Item {
            typ: ItemType::Error,
            pos: self.start,
            val: std::borrow::Cow::Owned(msg),
            line: self.start_line,
        });
        State::Done
    }

    fn accept(&mut self, valid: &str) -> bool {
        match self.peek() {
            Some(c) if valid.contains(c) => {
                self.next();
                true
            }
            _ => false,
        }
    }

    fn accept_run(&mut self, valid: &str) {
        while self.accept(valid) {}
    }

    fn lex_text(&mut self) -> State {
        if let Some(x) = find_left(self.rest()) {
            let ldn = LEFT.len();
            let delim_at = self.pos + x;
            let mut trim = 0;
            if has_left_trim(&self.input[delim_at + ldn..]) {
                let text = &self.input[self.start..delim_at];
                trim = text.len() - text.trim_end_matches([' ', '\t', '\r', '\n']).len();
            }
            self.pos = delim_at - trim;
            if self.pos > self.start {
                self.line += count_newlines(&self.input[self.start..self.pos]);
                self.emit(ItemType::Text);
            }
            self.pos += trim;
            self.ignore();
            return State::LeftDelim;
        }
        self.pos = self.input.len();
        if self.pos > self.start {
            self.line += count_newlines(&self.input[self.start..self.pos]);
            self.emit(ItemType::Text);
        }
        self.emit(ItemType::Eof);
        State::Done
    }

    fn at_right_delim(&self) -> (bool, bool) {
        let r = self.rest();
        if has_right_trim(r) && r[2..].starts_with(RIGHT) {
            return (true, true);
        }
        (r.starts_with(RIGHT), false)
    }

    fn lex_left_delim(&mut self) -> State {
        self.pos += LEFT.len();
        let trim = has_left_trim(self.rest());
        let after = if trim { 2 } else { 0 };
        if self.input[self.pos + after..].starts_with(LEFT_COMMENT) {
            self.pos += after;
            self.ignore();
            return State::Comment;
        }
        self.emit(ItemType::LeftDelim);
        self.pos += after;
        self.ignore();
        self.paren_depth = 0;
        State::Inside
    }

    fn lex_comment(&mut self) -> State {
        self.pos += LEFT_COMMENT.len();
        let Some(x) = self.rest().find(RIGHT_COMMENT) else {
            return self.error("unclosed comment".into());
        };
        self.pos += x + RIGHT_COMMENT.len();
        let (delim, trim) = self.at_right_delim();
        if !delim {
            return self.error("comment ends before closing delimiter".into());
        }
        if trim {
            self.pos += 2;
        }
        self.pos += RIGHT.len();
        if trim {
            let r = self.rest();
            self.pos += r.len() - r.trim_start_matches([' ', '\t', '\r', '\n']).len();
        }
        self.ignore();
        State::Text
    }

    fn lex_right_delim(&mut self) -> State {
        let trim = has_right_trim(self.rest());
        if trim {
            self.pos += 2;
            self.ignore();
        }
        self.pos += RIGHT.len();
        self.emit(ItemType::RightDelim);
        if trim {
            let r = self.rest();
            self.pos += r.len() - r.trim_start_matches([' ', '\t', '\r', '\n']).len();
            self.ignore();
        }
        State::Text
    }

    fn lex_inside(&mut self) -> State {
        let (delim, _) = self.at_right_delim();
        if delim {
            if self.paren_depth == 0 {
                return State::RightDelim;
            }
            return self.error("unclosed left paren".into());
        }
        let Some(c) = self.next() else {
            return self.error("unclosed action".into());
        };
        match c {
            c if is_space(c) => {
                self.backup(Some(c));
                return self.lex_space();
            }
            '=' => self.emit(ItemType::Assign),
            ':' => {
                if self.next() != Some('=') {
                    return self.error("expected :=".into());
                }
                self.emit(ItemType::Declare);
            }
            '|' => self.emit(ItemType::Pipe),
            '"' => return self.lex_quote(),
            '`' => return self.lex_raw_quote(),
            '$' => return self.lex_variable(),
            '\'' => return self.lex_char(),
            '.' if self.pos < self.input.len() && !matches!(self.peek(), Some('0'..='9')) => {
                return self.lex_field_or_variable(ItemType::Field);
            }
            '.' | '+' | '-' | '0'..='9' => {
                self.backup(Some(c));
                return self.lex_number();
            }
            c if is_alnum(c) => {
                self.backup(Some(c));
                return self.lex_identifier();
            }
            '(' => {
                self.emit(ItemType::LeftParen);
                self.paren_depth += 1;
            }
            ')' => {
                self.emit(ItemType::RightParen);
                self.paren_depth -= 1;
                if self.paren_depth < 0 {
                    return self.error("unexpected right paren U+0029 ')'".into());
                }
            }
            c if c.is_ascii() && !c.is_ascii_control() => self.emit(ItemType::Char),
            c => {
                return self.error(format!(
                    "unrecognized character in action: {}",
                    go_sharp_u(c)
                ));
            }
        }
        State::Inside
    }

    fn lex_space(&mut self) -> State {
        let mut num = 0;
        while let Some(c) = self.peek() {
            if !is_space(c) {
                break;
            }
            self.next();
            num += 1;
        }
        let before = &self.input[self.pos - 1..];
        if has_right_trim(before) && before[2..].starts_with(RIGHT) {
            self.backup(self.input[..self.pos].chars().next_back());
            if num == 1 {
                return State::RightDelim;
            }
        }
        self.emit(ItemType::Space);
        State::Inside
    }

    fn at_terminator(&self) -> bool {
        match self.peek() {
            None => true,
            Some(c) if is_space(c) => true,
            Some('.' | ',' | '|' | ':' | ')' | '(') => true,
            Some(c) => RIGHT.starts_with(c),
        }
    }

    fn lex_identifier(&mut self) -> State {
        loop {
            let c = self.next();
            match c {
                Some(c) if is_alnum(c) => {}
                _ => {
                    self.backup(c);
                    let word = &self.input[self.start..self.pos];
                    if !self.at_terminator() {
                        return self
                            .error(format!("bad character {}", go_sharp_u_opt(self.peek())));
                    }
                    let typ = match keyword(word) {
                        Some(ItemType::Break) if !self.break_ok => ItemType::Identifier,
                        Some(ItemType::Continue) if !self.continue_ok => ItemType::Identifier,
                        Some(k) => k,
                        None if word.starts_with('.') => ItemType::Field,
                        None if word == "true" || word == "false" => ItemType::Bool,
                        None => ItemType::Identifier,
                    };
                    self.emit(typ);
                    return State::Inside;
                }
            }
        }
    }

    fn lex_variable(&mut self) -> State {
        if self.at_terminator() {
            self.emit(ItemType::Variable);
            return State::Inside;
        }
        self.lex_field_or_variable(ItemType::Variable)
    }

    fn lex_field_or_variable(&mut self, typ: ItemType) -> State {
        if self.at_terminator() {
            self.emit(if typ == ItemType::Variable {
                ItemType::Variable
            } else {
                ItemType::Dot
            });
            return State::Inside;
        }
        loop {
            let c = self.next();
            if !matches!(c, Some(c) if is_alnum(c)) {
                self.backup(c);
                break;
            }
        }
        if !self.at_terminator() {
            return self.error(format!("bad character {}", go_sharp_u_opt(self.peek())));
        }
        self.emit(typ);
        State::Inside
    }

    fn lex_char(&mut self) -> State {
        loop {
            match self.next() {
                Some('\\') => match self.next() {
                    Some(c) if c != '\n' => {}
                    _ => return self.error("unterminated character constant".into()),
                },
                None | Some('\n') => return self.error("unterminated character constant".into()),
                Some('\'') => break,
                _ => {}
            }
        }
        self.emit(ItemType::CharConstant);
        State::Inside
    }

    fn lex_number(&mut self) -> State {
        if !self.scan_number() {
            let s = self.input[self.start..self.pos].to_string();
            return self.error(format!("bad number syntax: {}", crate::gofmt::go_quote(&s)));
        }
        if matches!(self.peek(), Some('+' | '-')) {
            if !self.scan_number() || !self.input[..self.pos].ends_with('i') {
                let s = self.input[self.start..self.pos].to_string();
                return self.error(format!("bad number syntax: {}", crate::gofmt::go_quote(&s)));
            }
            self.emit(ItemType::Complex);
        } else {
            self.emit(ItemType::Number);
        }
        State::Inside
    }

    fn scan_number(&mut self) -> bool {
        self.accept("+-");
        let mut digits = "0123456789_";
        if self.accept("0") {
            if self.accept("xX") {
                digits = "0123456789abcdefABCDEF_";
            } else if self.accept("oO") {
                digits = "01234567_";
            } else if self.accept("bB") {
                digits = "01_";
            }
        }
        self.accept_run(digits);
        if self.accept(".") {
            self.accept_run(digits);
        }
        if digits.len() == 11 && self.accept("eE") {
            self.accept("+-");
            self.accept_run("0123456789_");
        }
        if digits.len() == 23 && self.accept("pP") {
            self.accept("+-");
            self.accept_run("0123456789_");
        }
        self.accept("i");
        if matches!(self.peek(), Some(c) if is_alnum(c)) {
            self.next();
            return false;
        }
        true
    }

    fn lex_quote(&mut self) -> State {
        loop {
            match self.next() {
                Some('\\') => match self.next() {
                    Some(c) if c != '\n' => {}
                    _ => return self.error("unterminated quoted string".into()),
                },
                None | Some('\n') => return self.error("unterminated quoted string".into()),
                Some('"') => break,
                _ => {}
            }
        }
        self.emit(ItemType::String);
        State::Inside
    }

    fn lex_raw_quote(&mut self) -> State {
        loop {
            match self.next() {
                None => return self.error("unterminated raw quoted string".into()),
                Some('`') => break,
                _ => {}
            }
        }
        self.emit(ItemType::RawString);
        State::Inside
    }
}

/// Go's `%#U`: `U+0041 'A'`.
fn go_sharp_u(c: char) -> String {
    if crate::gofmt::is_print(c) {
        format!("U+{:04X} '{}'", c as u32, c)
    } else {
        format!("U+{:04X}", c as u32)
    }
}

fn go_sharp_u_opt(c: Option<char>) -> String {
    match c {
        Some(c) => go_sharp_u(c),
        None => "U+FFFFFFFF".into(),
    }
}

/// Where the next left delimiter starts: the first `{{`. Templates are mostly literal text
/// (a chart's CRDs are hundreds of kilobytes without an action), so this jumps from `{` to
/// `{` with `memchr` rather than running a general substring search.
fn find_left(text: &str) -> Option<usize> {
    const _: () =
        assert!(LEFT.len() == 2 && LEFT.as_bytes()[0] == b'{' && LEFT.as_bytes()[1] == b'{');
    let bytes = text.as_bytes();
    let mut from = 0;
    while let Some(i) = text[from..].find('{') {
        let at = from + i;
        if bytes.get(at + 1) == Some(&b'{') {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

/// The number of line feeds in `text` (a byte count the compiler vectorises).
fn count_newlines(text: &str) -> usize {
    text.bytes().filter(|&b| b == b'\n').count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn types(s: &str) -> Vec<ItemType> {
        lex(s, true, true).into_iter().map(|i| i.typ).collect()
    }

    #[test]
    fn left_delimiter_search_skips_single_braces() {
        assert_eq!(find_left("a{b{{c"), Some(3));
        assert_eq!(find_left("{x}{"), None);
        assert_eq!(find_left("{{"), Some(0));
        assert_eq!(find_left("é{é{{"), Some(5));
        assert_eq!(find_left(""), None);
    }

    #[test]
    fn trim_markers_eat_surrounding_space() {
        let items = lex("a  {{- 3 -}}  b", true, true);
        let vals: Vec<_> = items.iter().map(|i| &*i.val).collect();
        assert_eq!(vals, ["a", "{{", "3", "}}", "b", ""]);
    }

    #[test]
    fn numbers_fields_and_keywords_lex_like_go() {
        use ItemType::*;
        assert_eq!(
            types("{{range $i, $x := .A.b}}{{end}}"),
            [
                LeftDelim, Range, Space, Variable, Char, Space, Variable, Space, Declare, Space,
                Field, Field, RightDelim, LeftDelim, End, RightDelim, Eof
            ]
        );
        assert_eq!(types("{{-3.5e2}}")[1], Number);
        assert_eq!(types("{{1+2i}}")[1], Complex);
        let bad = lex("{{3k}}", true, true);
        assert_eq!(
            bad.last().map(|i| &*i.val),
            Some("bad number syntax: \"3k\"")
        );
    }
}
