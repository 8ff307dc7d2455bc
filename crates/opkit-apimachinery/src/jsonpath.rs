//! The JSONPath dialect of client-go (`k8s.io/client-go/util/jsonpath`).
//!
//! CRDs declare `additionalPrinterColumns` with a `jsonPath`, and
//! kube-apiserver evaluates it with client-go's template engine, not with
//! RFC 9535 JSONPath; its quirks (bracket keys re-parsed as dotted fields,
//! `\.` escapes, Go comparison rules in filters, Go printing of values) decide
//! what `kubectl get` shows. This module implements that dialect for reading
//! values: fields (`.a.b`, `['a\.b']`), `*`, recursive descent `..`, indexes
//! and slices (`[0]`, `[-1]`, `[1:3:2]`), unions (`[0,2]`), filters
//! (`[?(@.type=="Ready")]`, `==`, `!=`, `<`, `>`, `<=`, `>=`, existence),
//! literals and text outside `{…}`. `range`/`end` templates are not
//! supported (they are never useful for a single table cell).
//!
//! Parsing and evaluation never panic: malformed paths are errors, nesting is
//! bounded, and missing data is an empty result (or an error when
//! [`JsonPath::allow_missing_keys`] is off, as client-go's default).

use std::borrow::Cow;

use serde_json::{Number, Value};

use crate::gofmt;

/// Why a JSONPath could not be parsed or evaluated (client-go's message).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct JsonPathError(pub String);

fn err<T>(msg: impl Into<String>) -> Result<T, JsonPathError> {
    Err(JsonPathError(msg.into()))
}

const MAX_DEPTH: usize = 32;

#[derive(Debug, Clone, Copy, PartialEq)]
struct Param {
    value: i64,
    known: bool,
    derived: bool,
}

#[derive(Debug, Clone, PartialEq)]
enum Node {
    Text(String),
    Field(String),
    Wildcard,
    Recursive,
    Array([Param; 3]),
    Union(Vec<Vec<Node>>),
    Filter {
        left: Vec<Node>,
        op: String,
        right: Vec<Node>,
    },
    Int(i64),
    Float(f64),
    Bool(bool),
    Identifier(String),
}

#[derive(Debug, Clone, PartialEq)]
enum Root {
    Text(String),
    Action(Vec<Node>),
}

/// A compiled client-go JSONPath template.
#[derive(Debug, Clone, PartialEq)]
pub struct JsonPath {
    roots: Vec<Root>,
    allow_missing_keys: bool,
}

impl JsonPath {
    /// Parses a template: text with `{…}` actions, e.g. `{.spec.replicas}`
    /// or `name={.metadata.name}`. Missing keys are errors until
    /// [`allow_missing_keys`](Self::allow_missing_keys) is set.
    pub fn parse(template: &str) -> Result<Self, JsonPathError> {
        let roots = Parser::new(template, 0).parse_template()?;
        Ok(JsonPath {
            roots,
            allow_missing_keys: false,
        })
    }

    /// Parses a bare expression such as `.spec.from` (a CRD column's
    /// `jsonPath`), i.e. the template `{expr}`.
    pub fn parse_expr(expr: &str) -> Result<Self, JsonPathError> {
        JsonPath::parse(&format!("{{{expr}}}"))
    }

    /// Whether a missing field yields no result (true) or an error (false).
    pub fn allow_missing_keys(mut self, allow: bool) -> Self {
        self.allow_missing_keys = allow;
        self
    }

    /// Evaluates every top-level node: one list of results per `{…}` action
    /// or text piece.
    pub fn find_results<'a>(
        &self,
        data: &'a Value,
    ) -> Result<Vec<Vec<Cow<'a, Value>>>, JsonPathError> {
        let eval = Eval {
            allow_missing_keys: self.allow_missing_keys,
        };
        self.roots
            .iter()
            .map(|root| match root {
                Root::Text(t) => Ok(vec![Cow::Owned(Value::String(t.clone()))]),
                Root::Action(nodes) => eval.list(vec![Cow::Borrowed(data)], nodes),
            })
            .collect()
    }

    /// The first result of the first node, as the CRD table printer uses it;
    /// `None` on no result or any evaluation error.
    pub fn first<'a>(&self, data: &'a Value) -> Option<Cow<'a, Value>> {
        let mut results = self.find_results(data).ok()?;
        let first = results.first_mut()?;
        if first.is_empty() {
            return None;
        }
        Some(first.swap_remove(0))
    }

    /// Renders the template like client-go's `Execute`: results printed with
    /// Go's rules (objects and arrays as JSON), separated by spaces.
    pub fn execute(&self, data: &Value) -> Result<String, JsonPathError> {
        let mut out = String::new();
        for results in self.find_results(data)? {
            for (i, v) in results.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                out.push_str(&print_value(v));
            }
        }
        Ok(out)
    }
}

/// Prints one value like client-go's `PrintResults`: objects and arrays as
/// compact Go JSON, strings bare, numbers and booleans with Go's `%v`, `null`
/// as `<no value>`.
pub fn print_value(v: &Value) -> String {
    match v {
        Value::Null => "<no value>".to_owned(),
        Value::String(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => number_text(n),
        Value::Array(_) | Value::Object(_) => gofmt::json_encode(v),
    }
}

fn number_text(n: &Number) -> String {
    if let Some(i) = n.as_i64() {
        i.to_string()
    } else if let Some(u) = n.as_u64() {
        // Go decodes integers beyond int64 as float64.
        gofmt::float_v(u as f64)
    } else {
        gofmt::float_v(n.as_f64().unwrap_or(0.0))
    }
}

struct Parser<'a> {
    input: &'a str,
    pos: usize,
    start: usize,
    width: usize,
    depth: usize,
}

fn is_terminator(r: Option<char>) -> bool {
    match r {
        None => true,
        Some(c) => matches!(
            c,
            ' ' | '\t' | '\r' | '\n' | '.' | ',' | '[' | ']' | '$' | '@' | '{' | '}'
        ),
    }
}

fn is_alphanumeric(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

impl<'a> Parser<'a> {
    fn new(input: &'a str, depth: usize) -> Self {
        Parser {
            input,
            pos: 0,
            start: 0,
            width: 0,
            depth,
        }
    }

    fn rest(&self) -> &'a str {
        self.input.get(self.pos..).unwrap_or("")
    }

    fn next(&mut self) -> Option<char> {
        match self.rest().chars().next() {
            Some(c) => {
                self.width = c.len_utf8();
                self.pos += self.width;
                Some(c)
            }
            None => {
                self.width = 0;
                None
            }
        }
    }

    fn backup(&mut self) {
        self.pos -= self.width;
        self.width = 0;
    }

    fn peek(&mut self) -> Option<char> {
        self.rest().chars().next()
    }

    fn consume_text(&mut self) -> &'a str {
        let text = self.input.get(self.start..self.pos).unwrap_or("");
        self.start = self.pos;
        text
    }

    fn byte_before_last(&self) -> Option<u8> {
        self.pos
            .checked_sub(2)
            .and_then(|i| self.input.as_bytes().get(i))
            .copied()
    }

    fn parse_template(mut self) -> Result<Vec<Root>, JsonPathError> {
        let mut roots = Vec::new();
        loop {
            if self.rest().starts_with('{') {
                if self.pos > self.start {
                    roots.push(Root::Text(self.consume_text().to_owned()));
                }
                self.pos += 1;
                self.consume_text();
                roots.push(Root::Action(self.parse_inside_action()?));
                continue;
            }
            if self.next().is_none() {
                break;
            }
        }
        if self.pos > self.start {
            roots.push(Root::Text(self.consume_text().to_owned()));
        }
        Ok(roots)
    }

    /// Parses `text` as the inside of one action (client-go's `parseAction`).
    fn sub_action(&self, text: &str) -> Result<Vec<Node>, JsonPathError> {
        if self.depth >= MAX_DEPTH {
            return err("jsonpath is nested too deeply");
        }
        let wrapped = format!("{{{text}}}");
        let roots = Parser::new(&wrapped, self.depth + 1).parse_template()?;
        match roots.into_iter().next() {
            Some(Root::Action(nodes)) => Ok(nodes),
            _ => Ok(Vec::new()),
        }
    }

    fn parse_inside_action(&mut self) -> Result<Vec<Node>, JsonPathError> {
        let mut nodes = Vec::new();
        loop {
            let rest = self.rest();
            if rest.starts_with('}') {
                self.pos += 1;
                self.consume_text();
                return Ok(nodes);
            }
            if rest.starts_with("[?(") {
                self.parse_filter(&mut nodes)?;
                continue;
            }
            if rest.starts_with("..") {
                self.parse_recursive(&mut nodes)?;
                continue;
            }
            match self.next() {
                None | Some('\r' | '\n') => return err("unclosed action"),
                Some(' ' | '@' | '$') => {
                    self.consume_text();
                }
                Some('[') => self.parse_array(&mut nodes)?,
                Some(q @ ('"' | '\'')) => self.parse_quote(&mut nodes, q)?,
                Some('.') => self.parse_field(&mut nodes)?,
                Some(c) if c == '+' || c == '-' || c.is_numeric() => {
                    self.backup();
                    self.parse_number(&mut nodes)?;
                }
                Some(c) if is_alphanumeric(c) => {
                    self.backup();
                    self.parse_identifier(&mut nodes)?;
                }
                Some(c) => {
                    return err(format!(
                        "unrecognized character in action: U+{:04X} '{c}'",
                        c as u32
                    ));
                }
            }
        }
    }

    fn parse_identifier(&mut self, nodes: &mut Vec<Node>) -> Result<(), JsonPathError> {
        loop {
            let r = self.next();
            if is_terminator(r) {
                self.backup();
                break;
            }
        }
        let value = self.consume_text();
        nodes.push(match value {
            "true" => Node::Bool(true),
            "false" => Node::Bool(false),
            other => Node::Identifier(other.to_owned()),
        });
        Ok(())
    }

    fn parse_recursive(&mut self, nodes: &mut Vec<Node>) -> Result<(), JsonPathError> {
        if nodes.last() == Some(&Node::Recursive) {
            return err("invalid multiple recursive descent");
        }
        self.pos += 2;
        self.consume_text();
        nodes.push(Node::Recursive);
        if self.peek().is_some_and(is_alphanumeric) {
            self.parse_field(nodes)?;
        }
        Ok(())
    }

    fn parse_number(&mut self, nodes: &mut Vec<Node>) -> Result<(), JsonPathError> {
        if matches!(self.peek(), Some('+' | '-')) {
            self.next();
        }
        loop {
            match self.next() {
                Some(c) if c == '.' || c.is_ascii_digit() => {}
                _ => {
                    self.backup();
                    break;
                }
            }
        }
        let value = self.consume_text();
        if let Ok(i) = value.parse::<i64>() {
            nodes.push(Node::Int(i));
        } else if let Some(f) = value
            .parse::<f64>()
            .ok()
            .filter(|_| value.bytes().any(|b| b.is_ascii_digit()))
        {
            nodes.push(Node::Float(f));
        } else {
            return err(format!("cannot parse number {value}"));
        }
        Ok(())
    }

    fn parse_array(&mut self, nodes: &mut Vec<Node>) -> Result<(), JsonPathError> {
        loop {
            match self.next() {
                None | Some('\n') => return err("unterminated array"),
                Some(']') => break,
                Some(_) => {}
            }
        }
        let full = self.consume_text();
        // Strip the brackets (both ASCII).
        let mut text = full.get(1..full.len().saturating_sub(1)).unwrap_or("");
        if text == "*" {
            text = ":";
        }
        if text.contains(',') {
            let mut union = Vec::new();
            for part in text.split(',') {
                union.push(self.sub_action(&format!("[{}]", part.trim_matches(' ')))?);
            }
            nodes.push(Node::Union(union));
            return Ok(());
        }
        if text.len() >= 2
            && text.starts_with('\'')
            && text.ends_with('\'')
            && !text[1..text.len() - 1].contains('\'')
        {
            let key = &text[1..text.len() - 1];
            nodes.extend(self.sub_action(&format!(".{key}"))?);
            return Ok(());
        }
        let Some(groups) = slice_groups(text) else {
            return err(format!("invalid array index {text}"));
        };
        let mut params = [Param {
            value: 0,
            known: false,
            derived: false,
        }; 3];
        for i in 0..3 {
            let group = groups[i];
            if !group.is_empty() {
                let digits = if i > 0 { &group[1..] } else { group };
                if i > 0 && digits.is_empty() {
                    params[i].known = false;
                } else {
                    let Ok(v) = digits.parse::<i64>() else {
                        return err(format!("array index {digits} is not a number"));
                    };
                    params[i] = Param {
                        value: v,
                        known: true,
                        derived: false,
                    };
                }
            } else if i == 1 {
                params[1] = Param {
                    value: params[0].value.saturating_add(1),
                    known: true,
                    derived: true,
                };
            } else {
                params[i] = Param {
                    value: 0,
                    known: false,
                    derived: false,
                };
            }
        }
        nodes.push(Node::Array(params));
        Ok(())
    }

    fn parse_filter(&mut self, nodes: &mut Vec<Node>) -> Result<(), JsonPathError> {
        self.pos += 3;
        self.consume_text();
        let mut begin = false;
        let mut end = false;
        let mut pair = '\0';
        loop {
            match self.next() {
                None | Some('\n') => return err("unterminated filter"),
                Some(q @ ('"' | '\'')) => {
                    if !begin {
                        begin = true;
                        pair = q;
                        continue;
                    }
                    if self.byte_before_last() != Some(b'\\') && q == pair {
                        end = true;
                    }
                }
                Some(')') => {
                    if begin == end {
                        break;
                    }
                }
                Some(_) => {}
            }
        }
        if self.next() != Some(']') {
            return err("unclosed array expect ]");
        }
        let full = self.consume_text();
        let text = full.get(..full.len().saturating_sub(2)).unwrap_or("");
        match split_filter(text) {
            None => {
                let left = self.sub_action(text)?;
                nodes.push(Node::Filter {
                    left,
                    op: "exists".to_owned(),
                    right: Vec::new(),
                });
            }
            Some((left, op, right)) => {
                let left = self.sub_action(left)?;
                let right = self.sub_action(right)?;
                nodes.push(Node::Filter {
                    left,
                    op: op.to_owned(),
                    right,
                });
            }
        }
        Ok(())
    }

    fn parse_quote(&mut self, nodes: &mut Vec<Node>, quote: char) -> Result<(), JsonPathError> {
        loop {
            match self.next() {
                None | Some('\n') => return err("unterminated quoted string"),
                Some(c) if c == quote && self.byte_before_last() != Some(b'\\') => break,
                Some(_) => {}
            }
        }
        let value = self.consume_text();
        match unquote(value) {
            Some(s) => nodes.push(Node::Text(s)),
            None => return err(format!("unquote string {value} error invalid syntax")),
        }
        Ok(())
    }

    fn parse_field(&mut self, nodes: &mut Vec<Node>) -> Result<(), JsonPathError> {
        self.consume_text();
        loop {
            let r = self.next();
            if r == Some('\\') {
                self.next();
            } else if is_terminator(r) {
                self.backup();
                break;
            }
        }
        let value = self.consume_text();
        if value == "*" {
            nodes.push(Node::Wildcard);
        } else {
            nodes.push(Node::Field(value.replace('\\', "")));
        }
        Ok(())
    }
}

/// Matches `^(-?\d*)(:-?\d*)?(:-?\d*)?$`, returning the three groups.
fn slice_groups(text: &str) -> Option<[&str; 3]> {
    let b = text.as_bytes();
    let mut pos = 0;
    let mut take = |colon: bool| -> &str {
        let start = pos;
        if colon {
            if b.get(pos) != Some(&b':') {
                return "";
            }
            pos += 1;
        }
        if b.get(pos) == Some(&b'-') {
            pos += 1;
        }
        while b.get(pos).is_some_and(u8::is_ascii_digit) {
            pos += 1;
        }
        &text[start..pos]
    };
    let groups = [take(false), take(true), take(true)];
    (pos == text.len()).then_some(groups)
}

/// Matches `^([^!<>=]+)([!<>=]+)(.+?)$`: left, operator, right.
fn split_filter(text: &str) -> Option<(&str, &str, &str)> {
    let is_op = |c: char| matches!(c, '!' | '<' | '>' | '=');
    let op_start = text.find(is_op)?;
    if op_start == 0 {
        return None;
    }
    let after = &text[op_start..];
    let op_len = after.find(|c: char| !is_op(c)).unwrap_or(after.len());
    // The right side needs at least one character; backtrack into the
    // operator run if it reached the end.
    let op_len = if op_len == after.len() {
        op_len - 1
    } else {
        op_len
    };
    if op_len == 0 || text.contains('\n') {
        return None;
    }
    Some((&text[..op_start], &after[..op_len], &after[op_len..]))
}

/// Go's `strconv.Unquote`, also accepting single-quoted strings.
fn unquote(s: &str) -> Option<String> {
    let quote = s.chars().next()?;
    if !(quote == '"' || quote == '\'') || s.len() < 2 || !s.ends_with(quote) {
        return None;
    }
    let inner = &s[1..s.len() - 1];
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c == quote || c == '\n' {
            return None;
        }
        if c != '\\' {
            out.push(c);
            continue;
        }
        let e = chars.next()?;
        let hex = |chars: &mut std::str::Chars<'_>, n: usize| -> Option<u32> {
            let mut v = 0u32;
            for _ in 0..n {
                v = v * 16 + chars.next()?.to_digit(16)?;
            }
            Some(v)
        };
        match e {
            'a' => out.push('\u{7}'),
            'b' => out.push('\u{8}'),
            'f' => out.push('\u{c}'),
            'n' => out.push('\n'),
            'r' => out.push('\r'),
            't' => out.push('\t'),
            'v' => out.push('\u{b}'),
            '\\' => out.push('\\'),
            '\'' | '"' if e == quote => out.push(e),
            'x' => out.push(char::from_u32(hex(&mut chars, 2)?)?),
            'u' => out.push(char::from_u32(hex(&mut chars, 4)?)?),
            'U' => out.push(char::from_u32(hex(&mut chars, 8)?)?),
            '0'..='7' => {
                let mut v = e.to_digit(8)?;
                for _ in 0..2 {
                    v = v * 8 + chars.next()?.to_digit(8)?;
                }
                if v > 255 {
                    return None;
                }
                out.push(char::from_u32(v)?);
            }
            _ => return None,
        }
    }
    Some(out)
}

struct Eval {
    allow_missing_keys: bool,
}

type Values<'a> = Vec<Cow<'a, Value>>;

fn borrowed<'a>(v: &Cow<'a, Value>) -> Option<&'a Value> {
    match v {
        Cow::Borrowed(v) => Some(v),
        Cow::Owned(_) => None,
    }
}

impl Eval {
    fn list<'a>(&self, input: Values<'a>, nodes: &[Node]) -> Result<Values<'a>, JsonPathError> {
        nodes
            .iter()
            .try_fold(input, |cur, node| self.walk(cur, node))
    }

    fn walk<'a>(&self, input: Values<'a>, node: &Node) -> Result<Values<'a>, JsonPathError> {
        match node {
            Node::Text(t) => Ok(vec![Cow::Owned(Value::String(t.clone()))]),
            Node::Int(i) => Ok(vec![Cow::Owned(Value::from(*i)); input.len()]),
            Node::Float(f) => {
                let v = Number::from_f64(*f).map_or(Value::Null, Value::Number);
                Ok(vec![Cow::Owned(v); input.len()])
            }
            Node::Bool(b) => Ok(vec![Cow::Owned(Value::Bool(*b)); input.len()]),
            Node::Field(name) => self.field(input, name),
            Node::Array(params) => array(input, *params),
            Node::Filter { left, op, right } => self.filter(input, left, op, right),
            Node::Wildcard => Ok(input.iter().flat_map(children).collect()),
            Node::Recursive => Ok(recursive(input)),
            Node::Union(lists) => {
                let mut out = Vec::new();
                for list in lists {
                    out.extend(self.list(input.clone(), list)?);
                }
                Ok(out)
            }
            Node::Identifier(name) => match name.as_str() {
                "range" | "end" => err("range templates are not supported"),
                other => err(format!("unrecognized identifier {other}")),
            },
        }
    }

    fn field<'a>(&self, input: Values<'a>, name: &str) -> Result<Values<'a>, JsonPathError> {
        let mut out = Vec::new();
        for v in &input {
            if let Some(Value::Object(map)) = borrowed(v)
                && let Some(found) = map.get(name)
            {
                out.push(Cow::Borrowed(found));
            }
        }
        if out.is_empty() && !input.is_empty() && !self.allow_missing_keys {
            return err(format!("{name} is not found"));
        }
        Ok(out)
    }

    fn filter<'a>(
        &self,
        input: Values<'a>,
        left: &[Node],
        op: &str,
        right: &[Node],
    ) -> Result<Values<'a>, JsonPathError> {
        let mut out = Vec::new();
        for v in &input {
            let Some(Value::Array(items)) = borrowed(v) else {
                return err(format!(
                    "{} is not array or slice and cannot be filtered",
                    print_value(v)
                ));
            };
            for item in items {
                let lefts = self.list(vec![Cow::Borrowed(item)], left);
                if op == "exists" {
                    if lefts.is_ok_and(|l| !l.is_empty()) {
                        out.push(Cow::Borrowed(item));
                    }
                    continue;
                }
                let lefts = lefts?;
                let l = match lefts.as_slice() {
                    [] => continue,
                    [one] => one,
                    _ => return err("can only compare one element at a time"),
                };
                let rights = self.list(vec![Cow::Borrowed(item)], right)?;
                let r = match rights.as_slice() {
                    [] => continue,
                    [one] => one,
                    _ => return err("can only compare one element at a time"),
                };
                if compare(l, r, op)? {
                    out.push(Cow::Borrowed(item));
                }
            }
        }
        Ok(out)
    }
}

fn children<'a>(v: &Cow<'a, Value>) -> Values<'a> {
    match v {
        Cow::Borrowed(Value::Object(map)) => map.values().map(Cow::Borrowed).collect(),
        Cow::Borrowed(Value::Array(items)) => items.iter().map(Cow::Borrowed).collect(),
        // Go indexes a string into its bytes.
        Cow::Borrowed(Value::String(s)) => s.bytes().map(|b| Cow::Owned(Value::from(b))).collect(),
        _ => Vec::new(),
    }
}

fn recursive(input: Values<'_>) -> Values<'_> {
    let mut out = Vec::new();
    let mut stack: Vec<Cow<'_, Value>> = input.into_iter().rev().collect();
    // Depth-first, parents before their children, as client-go.
    while let Some(v) = stack.pop() {
        // Go walks a string's bytes too: a non-empty string is listed, its
        // bytes are not (they have no children).
        if matches!(&v, Cow::Borrowed(Value::String(s)) if !s.is_empty()) {
            out.push(v);
            continue;
        }
        if matches!(v, Cow::Borrowed(Value::Object(_) | Value::Array(_))) {
            let kids = children(&v);
            if !kids.is_empty() {
                out.push(v);
                stack.extend(kids.into_iter().rev());
            }
        }
    }
    out
}

fn array(input: Values<'_>, params: [Param; 3]) -> Result<Values<'_>, JsonPathError> {
    let mut out = Vec::new();
    for v in &input {
        if v.is_null() {
            continue;
        }
        let Some(Value::Array(items)) = borrowed(v) else {
            return err(format!("{} is not array or slice", gofmt::go_type_name(v)));
        };
        let len = items.len() as i64;
        let mut p = params;
        if !p[0].known {
            p[0].value = 0;
        }
        if p[0].value < 0 {
            p[0].value = p[0].value.saturating_add(len);
        }
        if !p[1].known {
            p[1].value = len;
        }
        if p[1].value < 0 || (p[1].value == 0 && p[1].derived) {
            p[1].value = p[1].value.saturating_add(len);
        }
        if p[1].value == p[0].value {
            return Ok(out);
        }
        if p[0].value >= len || p[0].value < 0 {
            return err(format!(
                "array index out of bounds: index {}, length {len}",
                p[0].value
            ));
        }
        if p[1].value > len || p[1].value < 0 {
            return err(format!(
                "array index out of bounds: index {}, length {len}",
                p[1].value.saturating_sub(1)
            ));
        }
        if p[0].value > p[1].value {
            return err(format!(
                "starting index {} is greater than ending index {}",
                p[0].value, p[1].value
            ));
        }
        let step = if p[2].known {
            if p[2].value <= 0 {
                return err("step must be > 0");
            }
            p[2].value as usize
        } else {
            1
        };
        let slice = items
            .get(p[0].value as usize..p[1].value as usize)
            .unwrap_or(&[]);
        out.extend(slice.iter().step_by(step).map(Cow::Borrowed));
    }
    Ok(out)
}

/// A value as Go's template comparison sees it.
enum Basic<'a> {
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(&'a str),
}

fn basic(v: &Value) -> Result<Basic<'_>, JsonPathError> {
    match v {
        Value::Bool(b) => Ok(Basic::Bool(*b)),
        Value::String(s) => Ok(Basic::Str(s)),
        Value::Number(n) => Ok(match n.as_i64() {
            Some(i) => Basic::Int(i),
            None => Basic::Float(n.as_f64().unwrap_or(0.0)),
        }),
        _ => err("invalid type for comparison"),
    }
}

fn equal(a: &Value, b: &Value) -> Result<bool, JsonPathError> {
    Ok(match (basic(a)?, basic(b)?) {
        (Basic::Bool(x), Basic::Bool(y)) => x == y,
        (Basic::Int(x), Basic::Int(y)) => x == y,
        (Basic::Float(x), Basic::Float(y)) => x == y,
        (Basic::Str(x), Basic::Str(y)) => x == y,
        _ => return err("incompatible types for comparison"),
    })
}

fn less(a: &Value, b: &Value) -> Result<bool, JsonPathError> {
    Ok(match (basic(a)?, basic(b)?) {
        (Basic::Bool(_), _) => return err("invalid type for comparison"),
        (Basic::Int(x), Basic::Int(y)) => x < y,
        (Basic::Float(x), Basic::Float(y)) => x < y,
        (Basic::Str(x), Basic::Str(y)) => x < y,
        _ => return err("incompatible types for comparison"),
    })
}

fn compare(a: &Value, b: &Value, op: &str) -> Result<bool, JsonPathError> {
    match op {
        "==" => equal(a, b),
        "!=" => equal(a, b).map(|e| !e),
        "<" => less(a, b),
        "<=" => Ok(less(a, b)? || equal(a, b)?),
        ">" => Ok(!(less(a, b)? || equal(a, b)?)),
        ">=" => less(a, b).map(|l| !l),
        other => err(format!("unrecognized filter operator {other}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj() -> Value {
        json!({
            "metadata": {"name": "t1", "labels": {"app": "web", "app.kubernetes.io/name": "x"}},
            "spec": {"from": "AMS", "to": "SFO", "number": 42, "ratio": 1.5, "tags": ["a", "b", "c"],
                     "nested": {"k": [1, 2]}},
            "status": {"conditions": [
                {"type": "Ready", "status": "True", "n": 1},
                {"type": "Synced", "status": "False", "n": 2}
            ]}
        })
    }

    fn first(path: &str) -> Option<Value> {
        JsonPath::parse_expr(path)
            .unwrap()
            .allow_missing_keys(true)
            .first(&obj())
            .map(Cow::into_owned)
    }

    #[test]
    fn reads_fields_indexes_and_escaped_keys() {
        assert_eq!(first(".spec.from"), Some(json!("AMS")));
        assert_eq!(first(".spec.number"), Some(json!(42)));
        assert_eq!(first(".status.conditions[0].type"), Some(json!("Ready")));
        assert_eq!(first(".status.conditions[-1].type"), Some(json!("Synced")));
        assert_eq!(first(".metadata.labels.app"), Some(json!("web")));
        assert_eq!(
            first(r".metadata.labels.app\.kubernetes\.io/name"),
            Some(json!("x"))
        );
        assert_eq!(
            first(r".metadata.labels['app\.kubernetes\.io/name']"),
            Some(json!("x"))
        );
        assert_eq!(first(".metadata.labels['app']"), Some(json!("web")));
        assert_eq!(first("$.spec.to"), Some(json!("SFO")));
        assert_eq!(first(".spec.missing"), None);
        assert_eq!(first(".spec.tags[5]"), None);
    }

    #[test]
    fn filters_compare_like_go_templates() {
        assert_eq!(
            first(r#".status.conditions[?(@.type=="Ready")].status"#),
            Some(json!("True"))
        );
        assert_eq!(
            first(".status.conditions[?(@.type=='Synced')].status"),
            Some(json!("False"))
        );
        assert_eq!(
            first(".status.conditions[?(@.n>1)].type"),
            Some(json!("Synced"))
        );
        assert_eq!(
            first(".status.conditions[?(@.n<=1)].type"),
            Some(json!("Ready"))
        );
        assert_eq!(
            first(".status.conditions[?(@.n!=1)].type"),
            Some(json!("Synced"))
        );
        assert_eq!(
            first(".status.conditions[?(@.type)].type"),
            Some(json!("Ready"))
        );
        // Comparing a number with a string is an error: no value.
        assert_eq!(first(r#".status.conditions[?(@.n=="1")].type"#), None);
    }

    #[test]
    fn slices_unions_wildcards_and_recursion() {
        let p = JsonPath::parse("{.spec.tags[0:2]}").unwrap();
        assert_eq!(p.execute(&obj()).unwrap(), "a b");
        let p = JsonPath::parse("{.spec.tags[0,2]}").unwrap();
        assert_eq!(p.execute(&obj()).unwrap(), "a c");
        let p = JsonPath::parse("{.spec.tags[*]}").unwrap();
        assert_eq!(p.execute(&obj()).unwrap(), "a b c");
        let p = JsonPath::parse("{.spec.tags[::2]}").unwrap();
        assert_eq!(p.execute(&obj()).unwrap(), "a c");
        let p = JsonPath::parse("{..k}").unwrap();
        assert_eq!(p.execute(&obj()).unwrap(), "[1,2]");
        let p = JsonPath::parse("from={.spec.from} to={.spec.to}").unwrap();
        assert_eq!(p.execute(&obj()).unwrap(), "from=AMS to=SFO");
        let p = JsonPath::parse("{.spec.nested}").unwrap();
        assert_eq!(p.execute(&obj()).unwrap(), r#"{"k":[1,2]}"#);
        let p = JsonPath::parse("{.spec.ratio}").unwrap();
        assert_eq!(p.execute(&obj()).unwrap(), "1.5");
    }

    #[test]
    fn missing_keys_error_unless_allowed() {
        let p = JsonPath::parse("{.spec.nope}").unwrap();
        assert_eq!(
            p.execute(&obj()).unwrap_err().to_string(),
            "nope is not found"
        );
        assert_eq!(p.allow_missing_keys(true).execute(&obj()).unwrap(), "");
    }

    #[test]
    fn parse_errors_match_client_go() {
        let e = |s: &str| JsonPath::parse(s).unwrap_err().to_string();
        assert_eq!(e("{.a"), "unclosed action");
        assert_eq!(e("{.a[0}"), "unterminated array");
        assert_eq!(e("{.a[x]}"), "invalid array index x");
        assert_eq!(e("{.a[?(@.b==1}"), "unterminated filter");
        assert_eq!(e("{{.a}}"), "unrecognized character in action: U+007B '{'");
        assert_eq!(e("{....}"), "invalid multiple recursive descent");
        assert_eq!(e("{\"abc}"), "unterminated quoted string");
    }

    #[test]
    fn never_panics_on_hostile_paths() {
        let data = obj();
        let deep = "{".to_owned() + &"[?(@".repeat(100) + &")]".repeat(100) + "}";
        for p in [
            "{",
            "}",
            "{[",
            "{]}",
            "{[?(}",
            "{[?()]}",
            "{..}",
            "{....}",
            "{.a[1:0]}",
            "{.spec.tags[2:1]}",
            "{.spec.tags[::0]}",
            "{.spec.tags[::-1]}",
            "{.spec.tags[-9]}",
            "{.spec.tags[9223372036854775807]}",
            "{.spec.tags[-9223372036854775808:]}",
            "{'\\x'}",
            "{\"\\u12\"}",
            "{+}",
            "{-}",
            "{1.2.3}",
            "{.é.ü}",
            "{range .x}{end}",
            "{[?(@.a=~b)]}",
            &deep,
            "{.spec.from[?(@)]}",
            "{.spec.tags[?(@=='a')]}",
        ] {
            if let Ok(path) = JsonPath::parse(p) {
                let _ = path.clone().execute(&data);
                let _ = path.allow_missing_keys(true).execute(&data);
            }
        }
    }
}
