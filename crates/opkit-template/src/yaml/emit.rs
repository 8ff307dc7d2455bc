//! go-yaml v2's writer, byte for byte: the emitter states that matter for plain data
//! (block mappings and sequences, empty collections in flow style, simple and `?` keys),
//! its scalar analysis and style choice (plain, `'single'`, `"double"`, literal `|`),
//! its folding of long lines at width 80 and its 2-space indentation with sequences
//! inside mappings not indented. Ported from go-yaml's `emitterc.go` (itself a port of
//! libyaml) so that `toYaml` output equals Helm's.

use super::Yaml;
use super::order::key_order;
use super::resolve::{Resolved, is_base60_float, resolve};

const BEST_INDENT: i32 = 2;
/// go-yaml v2 folds long plain and quoted strings past this column.
const V2_WIDTH: usize = 80;

/// Which go-yaml writes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Dialect {
    /// go-yaml v2.4's `Marshal` (Helm's `toYaml`): long strings folded at column 80.
    V2,
    /// go-yaml v2.3.0's `Marshal`, which KUDO 0.19 links (its `toYaml`): the same writer,
    /// but that release did not fold long strings.
    V2NoWrap,
    /// go-yaml v3's `Encoder` with `SetIndent(2)` (Helm's `toYamlPretty`): sequences inside
    /// mappings indented, no folding, tabs allowed in literal blocks, v3's key order.
    V3Indent2,
}
/// The longest key (in bytes) written as a simple `key: value`; longer ones get `? key`.
const MAX_SIMPLE_KEY: usize = 128;

/// The scalar styles go-yaml's encoder asks for and its emitter settles on.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Style {
    Plain,
    Single,
    Double,
    Literal,
}

/// Writes one YAML document holding `doc`, as `yaml.Marshal` (or v3's encoder) does.
pub(crate) fn emit(doc: &Yaml, dialect: Dialect) -> String {
    let mut e = Emitter {
        dialect,
        width: match dialect {
            Dialect::V2 => V2_WIDTH,
            Dialect::V2NoWrap | Dialect::V3Indent2 => usize::MAX,
        },
        out: Vec::new(),
        column: 0,
        indent: -1,
        indents: Vec::new(),
        whitespace: true,
        indention: true,
        flow_level: 0,
        mapping: false,
        simple_key: false,
    };
    e.node(doc, false, false);
    e.write_indent();
    String::from_utf8(e.out).unwrap_or_else(|err| String::from_utf8_lossy(err.as_bytes()).into())
}

struct Emitter {
    dialect: Dialect,
    /// The column past which long strings are folded.
    width: usize,
    out: Vec<u8>,
    column: usize,
    indent: i32,
    indents: Vec<i32>,
    whitespace: bool,
    indention: bool,
    flow_level: u32,
    mapping: bool,
    simple_key: bool,
}

/// What `yaml_emitter_analyze_scalar` finds out about a scalar's text.
struct Analysis {
    multiline: bool,
    flow_plain_allowed: bool,
    block_plain_allowed: bool,
    single_quoted_allowed: bool,
    block_allowed: bool,
}

/// The scalar text and the style go-yaml's encoder asks for.
fn scalar_of(v: &Yaml) -> Option<(String, Style)> {
    Some(match v {
        Yaml::Null => ("null".into(), Style::Plain),
        Yaml::Bool(b) => (b.to_string(), Style::Plain),
        Yaml::Int(i) => (i.to_string(), Style::Plain),
        Yaml::Uint(u) => (u.to_string(), Style::Plain),
        Yaml::Float(f) => (format_float(*f), Style::Plain),
        Yaml::Str(s) => {
            let style = if s.contains('\n') {
                Style::Literal
            } else if resolve(s) == Resolved::Str && !is_base60_float(s) {
                Style::Plain
            } else {
                Style::Double
            };
            (s.clone(), style)
        }
        Yaml::Seq(_) | Yaml::Map(_) => return None,
    })
}

/// go-yaml's float text: `strconv.FormatFloat(f, 'g', -1, 64)` with `.inf`, `-.inf`, `.nan`.
pub(crate) fn format_float(f: f64) -> String {
    if f.is_nan() {
        ".nan".into()
    } else if f.is_infinite() {
        if f > 0.0 { ".inf" } else { "-.inf" }.into()
    } else {
        crate::gofmt::sprint_value(&crate::Value::Float(f))
    }
}

impl Emitter {
    fn node(&mut self, v: &Yaml, mapping: bool, simple_key: bool) {
        self.mapping = mapping;
        self.simple_key = simple_key;
        match v {
            Yaml::Seq(items) if self.flow_level > 0 || items.is_empty() => self.flow_seq(items),
            Yaml::Seq(items) => self.block_seq(items),
            Yaml::Map(entries) if self.flow_level > 0 || entries.is_empty() => {
                self.flow_map(entries)
            }
            Yaml::Map(entries) => self.block_map(entries),
            scalar => {
                if let Some((text, style)) = scalar_of(scalar) {
                    self.scalar(&text, style);
                }
            }
        }
    }

    fn increase_indent(&mut self, flow: bool, indentless: bool) {
        self.indents.push(self.indent);
        if self.indent < 0 {
            self.indent = if flow { BEST_INDENT } else { 0 };
        } else if !indentless {
            self.indent += BEST_INDENT;
        }
    }

    fn pop_indent(&mut self) {
        self.indent = self.indents.pop().unwrap_or(-1);
    }

    fn block_seq(&mut self, items: &[Yaml]) {
        let indentless = self.dialect != Dialect::V3Indent2 && self.mapping && !self.indention;
        self.increase_indent(false, indentless);
        for item in items {
            self.write_indent();
            self.write_indicator(b"-", true, false, true);
            self.node(item, false, false);
        }
        self.pop_indent();
    }

    fn flow_seq(&mut self, items: &[Yaml]) {
        self.write_indicator(b"[", true, true, false);
        self.increase_indent(true, false);
        self.flow_level += 1;
        for (i, item) in items.iter().enumerate() {
            if i > 0 {
                self.write_indicator(b",", false, false, false);
            }
            if self.column > self.width {
                self.write_indent();
            }
            self.node(item, false, false);
        }
        self.flow_level -= 1;
        self.pop_indent();
        self.write_indicator(b"]", false, false, false);
    }

    /// The entries in the key order of this dialect (Go maps have none; the encoder sorts).
    fn sorted<'e>(&self, entries: &'e [(Yaml, Yaml)]) -> Vec<&'e (Yaml, Yaml)> {
        let mut sorted: Vec<_> = entries.iter().collect();
        let v3 = self.dialect == Dialect::V3Indent2;
        sorted.sort_by(|(a, _), (b, _)| key_order(a, b, v3));
        sorted
    }

    fn block_map(&mut self, entries: &[(Yaml, Yaml)]) {
        self.increase_indent(false, false);
        for (k, v) in self.sorted(entries) {
            self.write_indent();
            if simple_key(k, self.dialect) {
                self.node(k, true, true);
                self.write_indicator(b":", false, false, false);
            } else {
                self.write_indicator(b"?", true, false, true);
                self.node(k, true, false);
                self.write_indent();
                self.write_indicator(b":", true, false, true);
            }
            self.node(v, true, false);
        }
        self.pop_indent();
    }

    fn flow_map(&mut self, entries: &[(Yaml, Yaml)]) {
        self.write_indicator(b"{", true, true, false);
        self.increase_indent(true, false);
        self.flow_level += 1;
        for (i, (k, v)) in self.sorted(entries).into_iter().enumerate() {
            if i > 0 {
                self.write_indicator(b",", false, false, false);
            }
            if self.column > self.width {
                self.write_indent();
            }
            if simple_key(k, self.dialect) {
                self.node(k, true, true);
                self.write_indicator(b":", false, false, false);
            } else {
                self.write_indicator(b"?", true, false, false);
                self.node(k, true, false);
                if self.column > self.width {
                    self.write_indent();
                }
                self.write_indicator(b":", true, false, false);
            }
            self.node(v, true, false);
        }
        self.flow_level -= 1;
        self.pop_indent();
        self.write_indicator(b"}", false, false, false);
    }

    fn scalar(&mut self, text: &str, requested: Style) {
        let a = analyze(text.as_bytes(), self.dialect);
        let style = self.select_style(requested, &a, text);
        self.increase_indent(true, false);
        let value = text.as_bytes();
        let allow_breaks = !self.simple_key;
        match style {
            Style::Plain => self.write_plain(value, allow_breaks),
            Style::Single => self.write_single_quoted(value, allow_breaks),
            Style::Double => self.write_double_quoted(value, allow_breaks),
            Style::Literal => self.write_literal(value),
        }
        self.pop_indent();
    }

    /// `yaml_emitter_select_scalar_style`.
    fn select_style(&self, requested: Style, a: &Analysis, text: &str) -> Style {
        let mut style = requested;
        if self.simple_key && a.multiline {
            style = Style::Double;
        }
        if style == Style::Plain {
            if (self.flow_level > 0 && !a.flow_plain_allowed)
                || (self.flow_level == 0 && !a.block_plain_allowed)
            {
                style = Style::Single;
            }
            if text.is_empty() && (self.flow_level > 0 || self.simple_key) {
                style = Style::Single;
            }
        }
        if style == Style::Single && !a.single_quoted_allowed {
            style = Style::Double;
        }
        if style == Style::Literal && (!a.block_allowed || self.flow_level > 0 || self.simple_key) {
            style = Style::Double;
        }
        style
    }

    fn put(&mut self, c: u8) {
        self.out.push(c);
        self.column += 1;
    }

    fn put_break(&mut self) {
        self.out.push(b'\n');
        self.column = 0;
    }

    /// Copies the character at `*i` and steps past it.
    fn write(&mut self, s: &[u8], i: &mut usize) {
        let w = width(s[*i]).max(1).min(s.len() - *i);
        self.out.extend_from_slice(&s[*i..*i + w]);
        self.column += 1;
        *i += w;
    }

    fn write_all(&mut self, s: &[u8]) {
        let mut i = 0;
        while i < s.len() {
            self.write(s, &mut i);
        }
    }

    fn write_break(&mut self, s: &[u8], i: &mut usize) {
        if s[*i] == b'\n' {
            self.put_break();
            *i += 1;
        } else {
            self.write(s, i);
            self.column = 0;
        }
    }

    fn write_indent(&mut self) {
        let indent = self.indent.max(0) as usize;
        if !self.indention || self.column > indent || (self.column == indent && !self.whitespace) {
            self.put_break();
        }
        while self.column < indent {
            self.put(b' ');
        }
        self.whitespace = true;
        self.indention = true;
    }

    fn write_indicator(
        &mut self,
        indicator: &[u8],
        need_whitespace: bool,
        is_whitespace: bool,
        is_indention: bool,
    ) {
        if need_whitespace && !self.whitespace {
            self.put(b' ');
        }
        self.write_all(indicator);
        self.whitespace = is_whitespace;
        self.indention = self.indention && is_indention;
    }

    fn write_plain(&mut self, value: &[u8], allow_breaks: bool) {
        if !self.whitespace {
            self.put(b' ');
        }
        let mut spaces = false;
        let mut breaks = false;
        let mut i = 0;
        while i < value.len() {
            if is_space(value, i) {
                if allow_breaks && !spaces && self.column > self.width && !is_space(value, i + 1) {
                    self.write_indent();
                    i += 1;
                } else {
                    self.write(value, &mut i);
                }
                spaces = true;
            } else if is_break(value, i) {
                if !breaks && value[i] == b'\n' {
                    self.put_break();
                }
                self.write_break(value, &mut i);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                self.write(value, &mut i);
                self.indention = false;
                spaces = false;
                breaks = false;
            }
        }
        self.whitespace = false;
        self.indention = false;
    }

    fn write_single_quoted(&mut self, value: &[u8], allow_breaks: bool) {
        self.write_indicator(b"'", true, false, false);
        let mut spaces = false;
        let mut breaks = false;
        let mut i = 0;
        while i < value.len() {
            if is_space(value, i) {
                if allow_breaks
                    && !spaces
                    && self.column > self.width
                    && i > 0
                    && i < value.len() - 1
                    && !is_space(value, i + 1)
                {
                    self.write_indent();
                    i += 1;
                } else {
                    self.write(value, &mut i);
                }
                spaces = true;
            } else if is_break(value, i) {
                if !breaks && value[i] == b'\n' {
                    self.put_break();
                }
                self.write_break(value, &mut i);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                if value[i] == b'\'' {
                    self.put(b'\'');
                }
                self.write(value, &mut i);
                self.indention = false;
                spaces = false;
                breaks = false;
            }
        }
        self.write_indicator(b"'", false, false, false);
        self.whitespace = false;
        self.indention = false;
    }

    fn write_double_quoted(&mut self, value: &[u8], allow_breaks: bool) {
        let mut spaces = false;
        self.write_indicator(b"\"", true, false, false);
        let mut i = 0;
        while i < value.len() {
            if !is_printable(value, i)
                || is_bom(value)
                || is_break(value, i)
                || value[i] == b'"'
                || value[i] == b'\\'
            {
                let w = width(value[i]).max(1).min(value.len() - i);
                let c = std::str::from_utf8(&value[i..i + w])
                    .ok()
                    .and_then(|s| s.chars().next())
                    .map_or(u32::from(value[i]), u32::from);
                i += w;
                self.put(b'\\');
                match c {
                    0x00 => self.put(b'0'),
                    0x07 => self.put(b'a'),
                    0x08 => self.put(b'b'),
                    0x09 => self.put(b't'),
                    0x0A => self.put(b'n'),
                    0x0B => self.put(b'v'),
                    0x0C => self.put(b'f'),
                    0x0D => self.put(b'r'),
                    0x1B => self.put(b'e'),
                    0x22 => self.put(b'"'),
                    0x5C => self.put(b'\\'),
                    0x85 => self.put(b'N'),
                    0xA0 => self.put(b'_'),
                    0x2028 => self.put(b'L'),
                    0x2029 => self.put(b'P'),
                    _ => {
                        let (letter, digits) = if c <= 0xFF {
                            (b'x', 2)
                        } else if c <= 0xFFFF {
                            (b'u', 4)
                        } else {
                            (b'U', 8)
                        };
                        self.put(letter);
                        for k in (0..digits).rev() {
                            let d = ((c >> (k * 4)) & 0xF) as u8;
                            self.put(if d < 10 { b'0' + d } else { b'A' + d - 10 });
                        }
                    }
                }
                spaces = false;
            } else if is_space(value, i) {
                if allow_breaks
                    && !spaces
                    && self.column > self.width
                    && i > 0
                    && i < value.len() - 1
                {
                    self.write_indent();
                    if is_space(value, i + 1) {
                        self.put(b'\\');
                    }
                    i += 1;
                } else {
                    self.write(value, &mut i);
                }
                spaces = true;
            } else {
                self.write(value, &mut i);
                spaces = false;
            }
        }
        self.write_indicator(b"\"", false, false, false);
        self.whitespace = false;
        self.indention = false;
    }

    fn write_block_hints(&mut self, value: &[u8]) {
        if is_space(value, 0) || is_break(value, 0) {
            let hint = [b'0' + BEST_INDENT as u8];
            self.write_indicator(&hint, false, false, false);
        }
        let chomp = if value.is_empty() {
            Some(b'-')
        } else {
            let mut i = value.len() - 1;
            while i > 0 && value[i] & 0xC0 == 0x80 {
                i -= 1;
            }
            if !is_break(value, i) {
                Some(b'-')
            } else if i == 0 {
                Some(b'+')
            } else {
                i -= 1;
                while i > 0 && value[i] & 0xC0 == 0x80 {
                    i -= 1;
                }
                is_break(value, i).then_some(b'+')
            }
        };
        if let Some(c) = chomp {
            self.write_indicator(&[c], false, false, false);
        }
    }

    fn write_literal(&mut self, value: &[u8]) {
        self.write_indicator(b"|", true, false, false);
        self.write_block_hints(value);
        self.put_break();
        self.indention = true;
        self.whitespace = true;
        let mut breaks = true;
        let mut i = 0;
        while i < value.len() {
            if is_break(value, i) {
                self.write_break(value, &mut i);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                self.write(value, &mut i);
                self.indention = false;
                breaks = false;
            }
        }
    }
}

/// `yaml_emitter_check_simple_key` for the nodes plain data has.
fn simple_key(k: &Yaml, dialect: Dialect) -> bool {
    match k {
        Yaml::Seq(items) => items.is_empty(),
        Yaml::Map(entries) => entries.is_empty(),
        scalar => scalar_of(scalar).is_some_and(|(text, _)| {
            !analyze(text.as_bytes(), dialect).multiline && text.len() <= MAX_SIMPLE_KEY
        }),
    }
}

/// `yaml_emitter_analyze_scalar`.
fn analyze(value: &[u8], dialect: Dialect) -> Analysis {
    if value.is_empty() {
        return Analysis {
            multiline: false,
            flow_plain_allowed: false,
            block_plain_allowed: true,
            single_quoted_allowed: true,
            block_allowed: false,
        };
    }
    let mut block_indicators = false;
    let mut flow_indicators = false;
    let mut line_breaks = false;
    let mut special_characters = false;
    let mut tab_characters = false;
    let mut leading_space = false;
    let mut leading_break = false;
    let mut trailing_space = false;
    let mut trailing_break = false;
    let mut break_space = false;
    let mut space_break = false;
    let mut previous_space = false;
    let mut previous_break = false;

    if value.starts_with(b"---") || value.starts_with(b"...") {
        block_indicators = true;
        flow_indicators = true;
    }
    let mut preceded_by_whitespace = true;
    let mut i = 0;
    while i < value.len() {
        let w = width(value[i]).max(1);
        let followed_by_whitespace = i + w >= value.len() || is_blank(value, i + w);
        if i == 0 {
            match value[i] {
                b'#' | b',' | b'[' | b']' | b'{' | b'}' | b'&' | b'*' | b'!' | b'|' | b'>'
                | b'\'' | b'"' | b'%' | b'@' | b'`' => {
                    flow_indicators = true;
                    block_indicators = true;
                }
                b'?' | b':' => {
                    flow_indicators = true;
                    if followed_by_whitespace {
                        block_indicators = true;
                    }
                }
                b'-' if followed_by_whitespace => {
                    flow_indicators = true;
                    block_indicators = true;
                }
                _ => {}
            }
        } else {
            match value[i] {
                b',' | b'?' | b'[' | b']' | b'{' | b'}' => flow_indicators = true,
                b':' => {
                    flow_indicators = true;
                    if followed_by_whitespace {
                        block_indicators = true;
                    }
                }
                b'#' if preceded_by_whitespace => {
                    flow_indicators = true;
                    block_indicators = true;
                }
                _ => {}
            }
        }
        if dialect == Dialect::V3Indent2 && value[i] == b'\t' {
            tab_characters = true;
        } else if !is_printable(value, i) {
            special_characters = true;
        }
        if is_space(value, i) {
            if i == 0 {
                leading_space = true;
            }
            if i + w == value.len() {
                trailing_space = true;
            }
            if previous_break {
                break_space = true;
            }
            previous_space = true;
            previous_break = false;
        } else if is_break(value, i) {
            line_breaks = true;
            if i == 0 {
                leading_break = true;
            }
            if i + w == value.len() {
                trailing_break = true;
            }
            if previous_space {
                space_break = true;
            }
            previous_space = false;
            previous_break = true;
        } else {
            previous_space = false;
            previous_break = false;
        }
        preceded_by_whitespace = is_blankz(value, i);
        i += w;
    }
    let mut a = Analysis {
        multiline: line_breaks,
        flow_plain_allowed: true,
        block_plain_allowed: true,
        single_quoted_allowed: true,
        block_allowed: true,
    };
    if leading_space || leading_break || trailing_space || trailing_break {
        a.flow_plain_allowed = false;
        a.block_plain_allowed = false;
    }
    if trailing_space {
        a.block_allowed = false;
    }
    if break_space {
        a.flow_plain_allowed = false;
        a.block_plain_allowed = false;
        a.single_quoted_allowed = false;
    }
    if space_break || tab_characters || special_characters {
        a.flow_plain_allowed = false;
        a.block_plain_allowed = false;
        a.single_quoted_allowed = false;
    }
    if space_break || special_characters {
        a.block_allowed = false;
    }
    if line_breaks {
        a.flow_plain_allowed = false;
        a.block_plain_allowed = false;
    }
    if flow_indicators {
        a.flow_plain_allowed = false;
    }
    if block_indicators {
        a.block_plain_allowed = false;
    }
    a
}

fn at(b: &[u8], i: usize) -> u8 {
    b.get(i).copied().unwrap_or(0)
}

/// libyaml's `IS_PRINTABLE`: note that tabs and 4-byte characters (emoji) are not.
fn is_printable(b: &[u8], i: usize) -> bool {
    let (c, n1, n2) = (at(b, i), at(b, i + 1), at(b, i + 2));
    c == 0x0A
        || (0x20..=0x7E).contains(&c)
        || (c == 0xC2 && n1 >= 0xA0)
        || (c > 0xC2 && c < 0xED)
        || (c == 0xED && n1 < 0xA0)
        || c == 0xEE
        || (c == 0xEF && !(n1 == 0xBB && n2 == 0xBF) && !(n1 == 0xBF && (n2 == 0xBE || n2 == 0xBF)))
}

/// go-yaml's `is_bom`, which looks at the start of the value whatever the position.
fn is_bom(b: &[u8]) -> bool {
    b.starts_with(&[0xEF, 0xBB, 0xBF])
}

fn is_space(b: &[u8], i: usize) -> bool {
    at(b, i) == b' '
}

fn is_blank(b: &[u8], i: usize) -> bool {
    matches!(at(b, i), b' ' | b'\t')
}

fn is_break(b: &[u8], i: usize) -> bool {
    let (c, n1, n2) = (at(b, i), at(b, i + 1), at(b, i + 2));
    c == b'\r'
        || c == b'\n'
        || (c == 0xC2 && n1 == 0x85)
        || (c == 0xE2 && n1 == 0x80 && (n2 == 0xA8 || n2 == 0xA9))
}

fn is_blankz(b: &[u8], i: usize) -> bool {
    is_blank(b, i) || is_break(b, i) || at(b, i) == 0
}

fn width(b: u8) -> usize {
    if b & 0x80 == 0 {
        1
    } else if b & 0xE0 == 0xC0 {
        2
    } else if b & 0xF0 == 0xE0 {
        3
    } else if b & 0xF8 == 0xF0 {
        4
    } else {
        0
    }
}
