//! The parser: Go's `text/template/parse` recursive descent over the lexer's items, with
//! Go's error texts (`template: NAME:LINE: …`) and Go's `String()` of every node (the
//! executor quotes nodes in its errors: `executing "x" at <.A.B>`).

use std::fmt::{self, Write as _};
use std::sync::Arc;

use crate::error::Error;
use crate::gofmt::go_quote;
use crate::lex::{Item, ItemType, lex};

/// Go's `maxStackDepth`: parenthesised pipelines nest at most this deep.
const MAX_PAREN_DEPTH: usize = 10_000;
/// Nesting levels parsed on the caller's stack (which may be small) before parsing continues
/// on a fresh large stack, and levels parsed on each large stack.
const CALLER_LEVELS: usize = 64;
const LEVELS_PER_STACK: usize = 1000;
const STACK_BYTES: usize = 128 << 20;
/// Control structures (`if`, `range`, `with`, `define`, `block` bodies) nest at most this
/// deep. Go has no such bound (its stacks grow); the same error text is used.
const MAX_CONTROL_DEPTH: usize = 10_000;

/// A parsed template: its root list and the text its positions refer to.
#[derive(Debug)]
pub(crate) struct Tree {
    pub name: String,
    /// Name of the top-level template whose text this tree came from (Go's `ParseName`).
    pub parse_name: Arc<str>,
    pub text: Arc<str>,
    pub root: List,
}

impl Tree {
    /// Go's `IsEmptyTree`: only whitespace text and comments.
    pub fn is_empty(&self) -> bool {
        self.root.nodes.iter().all(|n| match n {
            Node::Text { text, .. } => text.trim().is_empty(),
            _ => false,
        })
    }

    /// Go's `ErrorContext` location: `NAME:LINE:COL`.
    pub fn location(&self, pos: usize) -> String {
        let pos = pos.min(self.text.len());
        let text = &self.text[..pos];
        let (line, col) = match text.rfind('\n') {
            None => (1, pos),
            Some(i) => (1 + text.matches('\n').count(), pos - (i + 1)),
        };
        format!("{}:{}:{}", self.parse_name, line, col)
    }
}

#[derive(Debug, Default)]
pub(crate) struct List {
    pub nodes: Vec<Node>,
}

/// A text node's bytes: a range of its template's source, shared rather than copied (charts
/// carry megabytes of CRD text in templates).
#[derive(Debug, Clone)]
pub(crate) struct Span {
    src: Arc<str>,
    start: usize,
    end: usize,
}

impl Span {
    /// `text` as the range of `src` it was lexed from when it is one, else a copy.
    fn of(src: &Arc<str>, pos: usize, text: &str) -> Span {
        let end = pos + text.len();
        if src.get(pos..end) == Some(text) {
            Span {
                src: src.clone(),
                start: pos,
                end,
            }
        } else {
            Span {
                src: text.into(),
                start: 0,
                end: text.len(),
            }
        }
    }
}

impl std::ops::Deref for Span {
    type Target = str;
    fn deref(&self) -> &str {
        &self.src[self.start..self.end]
    }
}

#[derive(Debug)]
pub(crate) enum Node {
    Text {
        pos: usize,
        text: Span,
    },
    Action {
        pos: usize,
        pipe: Pipe,
    },
    If(Branch),
    Range(Branch),
    With(Branch),
    Template {
        pos: usize,
        name: String,
        pipe: Option<Pipe>,
    },
    Break {
        pos: usize,
    },
    Continue {
        pos: usize,
    },
}

#[derive(Debug)]
pub(crate) struct Branch {
    pub pos: usize,
    pub pipe: Pipe,
    pub list: List,
    pub else_list: Option<List>,
}

#[derive(Debug)]
pub(crate) struct Pipe {
    pub pos: usize,
    pub is_assign: bool,
    pub decl: Vec<String>,
    pub cmds: Vec<Command>,
}

#[derive(Debug)]
pub(crate) struct Command {
    pub pos: usize,
    pub args: Vec<Arg>,
}

#[derive(Debug)]
pub(crate) struct Number {
    pub text: String,
    pub is_int: bool,
    pub int: i64,
    pub is_uint: bool,
    pub is_float: bool,
    pub float: f64,
}

#[derive(Debug)]
pub(crate) enum Arg {
    Identifier {
        pos: usize,
        name: String,
    },
    Variable {
        pos: usize,
        idents: Vec<String>,
    },
    Dot {
        pos: usize,
    },
    Nil {
        pos: usize,
    },
    Field {
        pos: usize,
        idents: Vec<String>,
    },
    Chain {
        pos: usize,
        node: Box<Arg>,
        fields: Vec<String>,
    },
    Bool {
        pos: usize,
        val: bool,
    },
    Number {
        pos: usize,
        num: Box<Number>,
    },
    String {
        pos: usize,
        quoted: String,
        text: String,
    },
    Pipe(Box<Pipe>),
}

impl Arg {
    pub fn pos(&self) -> usize {
        match self {
            Arg::Identifier { pos, .. }
            | Arg::Variable { pos, .. }
            | Arg::Dot { pos }
            | Arg::Nil { pos }
            | Arg::Field { pos, .. }
            | Arg::Chain { pos, .. }
            | Arg::Bool { pos, .. }
            | Arg::Number { pos, .. }
            | Arg::String { pos, .. } => *pos,
            Arg::Pipe(p) => p.pos,
        }
    }
}

// Trees can nest 10000 levels deep; dropping them must not recurse that deep.
impl Drop for List {
    fn drop(&mut self) {
        let mut stack = std::mem::take(&mut self.nodes);
        while let Some(node) = stack.pop() {
            if let Node::If(mut b) | Node::Range(mut b) | Node::With(mut b) = node {
                stack.append(&mut b.list.nodes);
                if let Some(e) = &mut b.else_list {
                    stack.append(&mut e.nodes);
                }
            }
        }
    }
}

impl Drop for Pipe {
    fn drop(&mut self) {
        let mut stack = Vec::new();
        take_nested_pipes(&mut self.cmds, &mut stack);
        while let Some(mut p) = stack.pop() {
            take_nested_pipes(&mut p.cmds, &mut stack);
        }
    }
}

fn take_nested_pipes(cmds: &mut [Command], stack: &mut Vec<Pipe>) {
    fn take(a: &mut Arg, stack: &mut Vec<Pipe>) {
        match a {
            Arg::Pipe(p) => stack.push(std::mem::replace(
                &mut **p,
                Pipe {
                    pos: 0,
                    is_assign: false,
                    decl: Vec::new(),
                    cmds: Vec::new(),
                },
            )),
            Arg::Chain { node, .. } => take(node, stack),
            _ => {}
        }
    }
    for c in cmds {
        for a in &mut c.args {
            take(a, stack);
        }
    }
}

impl fmt::Display for Arg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Arg::Identifier { name, .. } => f.write_str(name),
            Arg::Variable { idents, .. } => f.write_str(&idents.join(".")),
            Arg::Dot { .. } => f.write_str("."),
            Arg::Nil { .. } => f.write_str("nil"),
            Arg::Field { idents, .. } => {
                for i in idents {
                    write!(f, ".{i}")?;
                }
                Ok(())
            }
            Arg::Chain { node, fields, .. } => {
                if let Arg::Pipe(p) = &**node {
                    write!(f, "({p})")?;
                } else {
                    write!(f, "{node}")?;
                }
                for i in fields {
                    write!(f, ".{i}")?;
                }
                Ok(())
            }
            Arg::Bool { val, .. } => write!(f, "{val}"),
            Arg::Number { num, .. } => f.write_str(&num.text),
            Arg::String { quoted, .. } => f.write_str(quoted),
            Arg::Pipe(p) => write!(f, "{p}"),
        }
    }
}

impl fmt::Display for Command {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, a) in self.args.iter().enumerate() {
            if i > 0 {
                f.write_char(' ')?;
            }
            if let Arg::Pipe(p) = a {
                write!(f, "({p})")?;
            } else {
                write!(f, "{a}")?;
            }
        }
        Ok(())
    }
}

impl fmt::Display for Pipe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.decl.is_empty() {
            f.write_str(&self.decl.join(", "))?;
            f.write_str(if self.is_assign { " = " } else { " := " })?;
        }
        for (i, c) in self.cmds.iter().enumerate() {
            if i > 0 {
                f.write_str(" | ")?;
            }
            write!(f, "{c}")?;
        }
        Ok(())
    }
}

impl fmt::Display for List {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for n in &self.nodes {
            write!(f, "{n}")?;
        }
        Ok(())
    }
}

fn write_branch(f: &mut fmt::Formatter<'_>, kw: &str, b: &Branch) -> fmt::Result {
    write!(f, "{{{{{kw} {}}}}}{}", b.pipe, b.list)?;
    if let Some(e) = &b.else_list {
        write!(f, "{{{{else}}}}{e}")?;
    }
    f.write_str("{{end}}")
}

impl fmt::Display for Node {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Node::Text { text, .. } => f.write_str(text),
            Node::Action { pipe, .. } => write!(f, "{{{{{pipe}}}}}"),
            Node::If(b) => write_branch(f, "if", b),
            Node::Range(b) => write_branch(f, "range", b),
            Node::With(b) => write_branch(f, "with", b),
            Node::Template { name, pipe, .. } => match pipe {
                None => write!(f, "{{{{template {}}}}}", go_quote(name)),
                Some(p) => write!(f, "{{{{template {} {p}}}}}", go_quote(name)),
            },
            Node::Break { .. } => f.write_str("{{break}}"),
            Node::Continue { .. } => f.write_str("{{continue}}"),
        }
    }
}

/// Marker for "else" and "end" while parsing lists.
enum Parsed {
    Node(Node),
    Else,
    End,
}

impl fmt::Display for Parsed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Parsed::Node(n) => write!(f, "{n}"),
            Parsed::Else => f.write_str("{{else}}"),
            Parsed::End => f.write_str("{{end}}"),
        }
    }
}

struct Parser<'a> {
    items: Vec<Item<'a>>,
    idx: usize,
    hi: usize,
    text: Arc<str>,
    parse_name: Arc<str>,
    name: String,
    has_func: &'a (dyn Fn(&str) -> bool + Sync),
    vars: Vec<String>,
    range_depth: usize,
    action_line: usize,
    depth: usize,
    paren_depth: usize,
    /// Trees defined by this parse (Go's treeSet), in order.
    trees: Vec<Tree>,
}

type PResult<T> = Result<T, Error>;

/// Parses `text` as the template `name`. Returns the trees it defines: `name` itself first
/// (possibly empty) and then every `define`/`block`, in order.
pub(crate) fn parse(
    name: &str,
    text: &str,
    has_func: &(dyn Fn(&str) -> bool + Sync),
) -> PResult<Vec<Tree>> {
    let items = lex(text, !has_func("break"), !has_func("continue"));
    let text: Arc<str> = text.into();
    let mut p = Parser {
        items,
        idx: 0,
        hi: 0,
        text: text.clone(),
        parse_name: name.into(),
        name: name.to_string(),
        has_func,
        vars: vec!["$".into()],
        range_depth: 0,
        action_line: 0,
        depth: 0,
        paren_depth: 0,
        trees: Vec::new(),
    };
    let root = p.parse_top()?;
    p.add(Tree {
        name: name.to_string(),
        parse_name: p.parse_name.clone(),
        text,
        root,
    })?;
    // The top-level tree first, then the definitions.
    let mut trees = p.trees;
    if let Some(i) = trees.iter().position(|t| t.name == name) {
        let t = trees.remove(i);
        trees.insert(0, t);
    }
    Ok(trees)
}

impl<'a> Parser<'a> {
    fn item(&self, i: usize) -> &Item<'a> {
        &self.items[i.min(self.items.len() - 1)]
    }

    fn next(&mut self) -> Item<'a> {
        let it = self.item(self.idx).clone();
        self.hi = self.hi.max(self.idx.min(self.items.len() - 1));
        if self.idx < self.items.len() {
            self.idx += 1;
        }
        it
    }

    fn backup(&mut self) {
        self.idx = self.idx.saturating_sub(1);
    }

    fn peek(&mut self) -> Item<'a> {
        self.hi = self.hi.max(self.idx.min(self.items.len() - 1));
        self.item(self.idx).clone()
    }

    fn next_non_space(&mut self) -> Item<'a> {
        loop {
            let it = self.next();
            if it.typ != ItemType::Space {
                return it;
            }
        }
    }

    fn peek_non_space(&mut self) -> Item<'a> {
        let it = self.next_non_space();
        self.backup();
        it
    }

    fn errorf(&self, msg: impl fmt::Display) -> Error {
        let line = self.item(self.hi).line;
        Error::Parse(format!("template: {}:{}: {}", self.parse_name, line, msg))
    }

    fn unexpected(&self, token: &Item, context: &str) -> Error {
        if token.typ == ItemType::Error {
            let mut extra = String::new();
            if self.action_line != 0 && self.action_line != token.line {
                extra = format!(
                    " in action started at {}:{}",
                    self.parse_name, self.action_line
                );
                if token.val.ends_with(" action") {
                    extra = extra[" in action".len()..].to_string();
                }
            }
            return self.errorf(format!("{token}{extra}"));
        }
        self.errorf(format!("unexpected {token} in {context}"))
    }

    fn expect(&mut self, typ: ItemType, context: &str) -> PResult<Item<'a>> {
        let t = self.next_non_space();
        if t.typ != typ {
            return Err(self.unexpected(&t, context));
        }
        Ok(t)
    }

    fn add(&mut self, tree: Tree) -> PResult<()> {
        if let Some(i) = self.trees.iter().position(|t| t.name == tree.name) {
            if self.trees[i].is_empty() {
                self.trees[i] = tree;
                return Ok(());
            }
            if !tree.is_empty() {
                return Err(self.errorf(format!(
                    "template: multiple definition of template {}",
                    go_quote(&tree.name)
                )));
            }
            return Ok(());
        }
        self.trees.push(tree);
        Ok(())
    }

    fn enter_control(&mut self) -> PResult<()> {
        if self.depth >= MAX_CONTROL_DEPTH {
            return Err(self.errorf("max expression depth exceeded"));
        }
        self.depth += 1;
        Ok(())
    }

    fn parse_top(&mut self) -> PResult<List> {
        let mut root = List::default();
        while self.peek().typ != ItemType::Eof {
            if self.peek().typ == ItemType::LeftDelim {
                let delim_idx = self.idx;
                self.next();
                if self.next_non_space().typ == ItemType::Define {
                    self.parse_definition()?;
                    continue;
                }
                self.idx = delim_idx;
            }
            match self.text_or_action()? {
                Parsed::Node(n) => root.nodes.push(n),
                other => return Err(self.errorf(format!("unexpected {other}"))),
            }
        }
        Ok(root)
    }

    /// Runs `f` with the per-tree state (variables, range depth, name) of a new definition.
    fn in_definition<T>(
        &mut self,
        name: String,
        f: impl FnOnce(&mut Self) -> PResult<T>,
    ) -> PResult<T> {
        let vars = std::mem::replace(&mut self.vars, vec!["$".into()]);
        let range_depth = std::mem::replace(&mut self.range_depth, 0);
        let old_name = std::mem::replace(&mut self.name, name);
        let r = f(self);
        self.vars = vars;
        self.range_depth = range_depth;
        self.name = old_name;
        r
    }

    fn parse_definition(&mut self) -> PResult<()> {
        const CONTEXT: &str = "define clause";
        let t = self.next_non_space();
        if t.typ != ItemType::String && t.typ != ItemType::RawString {
            return Err(self.unexpected(&t, CONTEXT));
        }
        let name = self.unquote(&t.val)?;
        self.in_definition(name.clone(), |p| {
            p.expect(ItemType::RightDelim, CONTEXT)?;
            let (root, end) = p.item_list()?;
            if !matches!(end, Parsed::End) {
                return Err(p.errorf(format!("unexpected {end} in {CONTEXT}")));
            }
            let tree = Tree {
                name,
                parse_name: p.parse_name.clone(),
                text: p.text.clone(),
                root,
            };
            p.add(tree)
        })
    }

    /// Runs `f` one nesting level deeper: the parser recurses once per level, so every so
    /// many levels it continues on a fresh large stack (the caller's may be small).
    fn nested<T>(&mut self, f: impl FnOnce(&mut Self) -> PResult<T>) -> PResult<T> {
        let level = self.depth + self.paren_depth;
        let hop = level == CALLER_LEVELS
            || (level > CALLER_LEVELS && (level - CALLER_LEVELS).is_multiple_of(LEVELS_PER_STACK));
        if !hop {
            return f(self);
        }
        crate::stack::on_large_stack(STACK_BYTES, || f(self)).unwrap_or_else(|| {
            Err(Error::Parse(
                "template: cannot continue parsing deeply nested input: no stack".into(),
            ))
        })
    }

    fn item_list(&mut self) -> PResult<(List, Parsed)> {
        self.enter_control()?;
        self.nested(|p| p.item_list_body())
    }

    fn item_list_body(&mut self) -> PResult<(List, Parsed)> {
        let mut list = List::default();
        while self.peek_non_space().typ != ItemType::Eof {
            match self.text_or_action()? {
                Parsed::Node(n) => list.nodes.push(n),
                end => {
                    self.depth -= 1;
                    return Ok((list, end));
                }
            }
        }
        Err(self.errorf("unexpected EOF"))
    }

    fn text_or_action(&mut self) -> PResult<Parsed> {
        let token = self.next_non_space();
        match token.typ {
            ItemType::Text => Ok(Parsed::Node(Node::Text {
                pos: token.pos,
                text: Span::of(&self.text, token.pos, &token.val),
            })),
            ItemType::LeftDelim => {
                self.action_line = token.line;
                let r = self.action();
                self.action_line = 0;
                r
            }
            _ => Err(self.unexpected(&token, "input")),
        }
    }

    fn action(&mut self) -> PResult<Parsed> {
        let token = self.next_non_space();
        match token.typ {
            ItemType::Block => return self.block_control().map(Parsed::Node),
            ItemType::Break | ItemType::Continue => {
                let is_break = token.typ == ItemType::Break;
                let kw = if is_break {
                    "{{break}}"
                } else {
                    "{{continue}}"
                };
                let t = self.next_non_space();
                if t.typ != ItemType::RightDelim {
                    return Err(self.unexpected(&t, kw));
                }
                if self.range_depth == 0 {
                    return Err(self.errorf(format!("{kw} outside {{{{range}}}}")));
                }
                let pos = token.pos;
                return Ok(Parsed::Node(if is_break {
                    Node::Break { pos }
                } else {
                    Node::Continue { pos }
                }));
            }
            ItemType::Else => {
                let peek = self.peek_non_space();
                if peek.typ == ItemType::If || peek.typ == ItemType::With {
                    return Ok(Parsed::Else);
                }
                self.expect(ItemType::RightDelim, "else")?;
                return Ok(Parsed::Else);
            }
            ItemType::End => {
                self.expect(ItemType::RightDelim, "end")?;
                return Ok(Parsed::End);
            }
            ItemType::If => return self.control("if").map(|b| Parsed::Node(Node::If(b))),
            ItemType::Range => return self.control("range").map(|b| Parsed::Node(Node::Range(b))),
            ItemType::With => return self.control("with").map(|b| Parsed::Node(Node::With(b))),
            ItemType::Template => return self.template_control().map(Parsed::Node),
            _ => {}
        }
        self.backup();
        let token = self.peek();
        let pipe = self.pipeline("command", ItemType::RightDelim)?;
        Ok(Parsed::Node(Node::Action {
            pos: token.pos,
            pipe,
        }))
    }

    fn control(&mut self, context: &str) -> PResult<Branch> {
        let mark = self.vars.len();
        let r = self.control_inner(context);
        self.vars.truncate(mark);
        r
    }

    fn control_inner(&mut self, context: &str) -> PResult<Branch> {
        let pipe = self.pipeline(context, ItemType::RightDelim)?;
        if context == "range" {
            self.range_depth += 1;
        }
        let r = self.item_list();
        if context == "range" {
            self.range_depth -= 1;
        }
        let (list, next) = r?;
        let mut else_list = None;
        match next {
            Parsed::End => {}
            Parsed::Else => {
                // "else if" (and, as Go 1.23 allows, "else with") chains: the pending
                // keyword starts a nested control that shares the final {{end}}.
                let chained = match (context, self.peek().typ) {
                    ("if", ItemType::If) => Some("if"),
                    ("with", ItemType::With) => Some("with"),
                    _ => None,
                };
                if let Some(kw) = chained {
                    self.next();
                    let b = self.control(kw)?;
                    let node = if kw == "if" {
                        Node::If(b)
                    } else {
                        Node::With(b)
                    };
                    else_list = Some(List { nodes: vec![node] });
                } else {
                    let (l, next) = self.item_list()?;
                    if !matches!(next, Parsed::End) {
                        return Err(self.errorf(format!("expected end; found {next}")));
                    }
                    else_list = Some(l);
                }
            }
            Parsed::Node(n) => return Err(self.errorf(format!("unexpected {n}"))),
        }
        Ok(Branch {
            pos: pipe.pos,
            pipe,
            list,
            else_list,
        })
    }

    fn parse_template_name(&mut self, token: &Item, context: &str) -> PResult<String> {
        match token.typ {
            ItemType::String | ItemType::RawString => self.unquote(&token.val),
            _ => Err(self.unexpected(token, context)),
        }
    }

    fn template_control(&mut self) -> PResult<Node> {
        const CONTEXT: &str = "template clause";
        let token = self.next_non_space();
        let name = self.parse_template_name(&token, CONTEXT)?;
        let mut pipe = None;
        if self.next_non_space().typ != ItemType::RightDelim {
            self.backup();
            pipe = Some(self.pipeline(CONTEXT, ItemType::RightDelim)?);
        }
        Ok(Node::Template {
            pos: token.pos,
            name,
            pipe,
        })
    }

    fn block_control(&mut self) -> PResult<Node> {
        const CONTEXT: &str = "block clause";
        let token = self.next_non_space();
        let name = self.parse_template_name(&token, CONTEXT)?;
        let pipe = self.pipeline(CONTEXT, ItemType::RightDelim)?;
        self.in_definition(name.clone(), |p| {
            let (root, end) = p.item_list()?;
            if !matches!(end, Parsed::End) {
                return Err(p.errorf(format!("unexpected {end} in {CONTEXT}")));
            }
            let tree = Tree {
                name: name.clone(),
                parse_name: p.parse_name.clone(),
                text: p.text.clone(),
                root,
            };
            p.add(tree)
        })?;
        Ok(Node::Template {
            pos: token.pos,
            name,
            pipe: Some(pipe),
        })
    }

    fn pipeline(&mut self, context: &str, end: ItemType) -> PResult<Pipe> {
        let token = self.peek_non_space();
        let mut pipe = Pipe {
            pos: token.pos,
            is_assign: false,
            decl: Vec::new(),
            cmds: Vec::new(),
        };
        'decls: loop {
            let v = self.peek_non_space();
            if v.typ != ItemType::Variable {
                break;
            }
            let v_idx = self.idx;
            self.next();
            let next = self.peek_non_space();
            match next.typ {
                ItemType::Assign | ItemType::Declare => {
                    pipe.is_assign = next.typ == ItemType::Assign;
                    self.next_non_space();
                    pipe.decl.push(v.val.to_string());
                    self.vars.push(v.val.into_owned());
                }
                ItemType::Char if next.val == "," => {
                    self.next_non_space();
                    pipe.decl.push(v.val.to_string());
                    self.vars.push(v.val.into_owned());
                    if context == "range" && pipe.decl.len() < 2 {
                        match self.peek_non_space().typ {
                            ItemType::Variable | ItemType::RightDelim | ItemType::RightParen => {
                                continue 'decls;
                            }
                            _ => return Err(self.errorf("range can only initialize variables")),
                        }
                    }
                    return Err(self.errorf(format!("too many declarations in {context}")));
                }
                _ => self.idx = v_idx,
            }
            break;
        }
        loop {
            let token = self.next_non_space();
            match token.typ {
                t if t == end => {
                    self.check_pipeline(&pipe, context)?;
                    return Ok(pipe);
                }
                ItemType::Bool
                | ItemType::CharConstant
                | ItemType::Complex
                | ItemType::Dot
                | ItemType::Field
                | ItemType::Identifier
                | ItemType::Number
                | ItemType::Nil
                | ItemType::RawString
                | ItemType::String
                | ItemType::Variable
                | ItemType::LeftParen => {
                    self.backup();
                    let c = self.command()?;
                    pipe.cmds.push(c);
                }
                _ => return Err(self.unexpected(&token, context)),
            }
        }
    }

    fn check_pipeline(&self, pipe: &Pipe, context: &str) -> PResult<()> {
        if pipe.cmds.is_empty() {
            return Err(self.errorf(format!("missing value for {context}")));
        }
        for (i, c) in pipe.cmds.iter().enumerate().skip(1) {
            if matches!(
                c.args[0],
                Arg::Bool { .. }
                    | Arg::Dot { .. }
                    | Arg::Nil { .. }
                    | Arg::Number { .. }
                    | Arg::String { .. }
            ) {
                return Err(self.errorf(format!(
                    "non executable command in pipeline stage {}",
                    i + 1
                )));
            }
        }
        Ok(())
    }

    fn command(&mut self) -> PResult<Command> {
        let mut cmd = Command {
            pos: self.peek_non_space().pos,
            args: Vec::new(),
        };
        loop {
            self.peek_non_space();
            if let Some(op) = self.operand()? {
                cmd.args.push(op);
            }
            let token = self.next();
            match token.typ {
                ItemType::Space => continue,
                ItemType::RightDelim | ItemType::RightParen => self.backup(),
                ItemType::Pipe => {}
                _ => return Err(self.unexpected(&token, "operand")),
            }
            break;
        }
        if cmd.args.is_empty() {
            return Err(self.errorf("empty command"));
        }
        Ok(cmd)
    }

    fn operand(&mut self) -> PResult<Option<Arg>> {
        let Some(node) = self.term()? else {
            return Ok(None);
        };
        if self.peek().typ != ItemType::Field {
            return Ok(Some(node));
        }
        let chain_pos = self.peek().pos;
        let mut fields = Vec::new();
        while self.peek().typ == ItemType::Field {
            fields.push(self.next().val[1..].to_string());
        }
        Ok(Some(match node {
            Arg::Field { mut idents, .. } => {
                idents.extend(fields);
                Arg::Field {
                    pos: chain_pos,
                    idents,
                }
            }
            Arg::Variable { mut idents, .. } => {
                idents.extend(fields);
                Arg::Variable {
                    pos: chain_pos,
                    idents,
                }
            }
            Arg::Bool { .. }
            | Arg::String { .. }
            | Arg::Number { .. }
            | Arg::Nil { .. }
            | Arg::Dot { .. } => {
                return Err(self.errorf(format!(
                    "unexpected . after term {}",
                    go_quote(&node.to_string())
                )));
            }
            node => Arg::Chain {
                pos: chain_pos,
                node: Box::new(node),
                fields,
            },
        }))
    }

    fn term(&mut self) -> PResult<Option<Arg>> {
        let token = self.next_non_space();
        let pos = token.pos;
        Ok(Some(match token.typ {
            ItemType::Identifier => {
                if !(self.has_func)(&token.val) {
                    return Err(
                        self.errorf(format!("function {} not defined", go_quote(&token.val)))
                    );
                }
                Arg::Identifier {
                    pos,
                    name: token.val.into_owned(),
                }
            }
            ItemType::Dot => Arg::Dot { pos },
            ItemType::Nil => Arg::Nil { pos },
            ItemType::Variable => {
                let idents: Vec<String> = token.val.split('.').map(str::to_string).collect();
                if !self.vars.contains(&idents[0]) {
                    return Err(self.errorf(format!("undefined variable {}", go_quote(&idents[0]))));
                }
                Arg::Variable { pos, idents }
            }
            ItemType::Field => Arg::Field {
                pos,
                idents: token.val[1..].split('.').map(str::to_string).collect(),
            },
            ItemType::Bool => Arg::Bool {
                pos,
                val: token.val == "true",
            },
            ItemType::CharConstant | ItemType::Complex | ItemType::Number => {
                let num = self.new_number(&token)?;
                Arg::Number {
                    pos,
                    num: Box::new(num),
                }
            }
            ItemType::LeftParen => {
                if self.paren_depth >= MAX_PAREN_DEPTH {
                    return Err(self.errorf("max expression depth exceeded"));
                }
                self.paren_depth += 1;
                let p =
                    self.nested(|p| p.pipeline("parenthesized pipeline", ItemType::RightParen))?;
                self.paren_depth -= 1;
                Arg::Pipe(Box::new(p))
            }
            ItemType::String | ItemType::RawString => {
                let text = self.unquote(&token.val)?;
                Arg::String {
                    pos,
                    quoted: token.val.into_owned(),
                    text,
                }
            }
            _ => {
                self.backup();
                return Ok(None);
            }
        }))
    }

    fn unquote(&self, s: &str) -> PResult<String> {
        unquote(s).ok_or_else(|| self.errorf("invalid syntax"))
    }

    fn new_number(&self, token: &Item) -> PResult<Number> {
        let text = &*token.val;
        let mut n = Number {
            text: text.to_string(),
            is_int: false,
            int: 0,
            is_uint: false,
            is_float: false,
            float: 0.0,
        };
        if token.typ == ItemType::CharConstant {
            let body = &text[1..];
            let (c, tail) =
                unquote_char(body, '\'').ok_or_else(|| self.errorf("invalid syntax"))?;
            if tail != "'" {
                return Err(self.errorf(format!("malformed character constant: {text}")));
            }
            n.is_int = true;
            n.int = c as i64;
            n.is_uint = true;
            n.is_float = true;
            n.float = c as u32 as f64;
            return Ok(n);
        }
        if token.typ == ItemType::Complex || text.ends_with('i') {
            return Err(self.errorf(format!(
                "complex constants are not supported: {}",
                go_quote(text)
            )));
        }
        let u = parse_go_uint(text);
        if let Some(u) = u {
            n.is_uint = true;
            n.float = u as f64;
        }
        if let Some(i) = parse_go_int(text) {
            n.is_int = true;
            n.int = i;
            if i == 0 {
                n.is_uint = true;
            }
        }
        if n.is_int {
            n.is_float = true;
            n.float = n.int as f64;
        } else if n.is_uint {
            n.is_float = true;
        } else if let Some(f) = parse_go_float(text) {
            if !text.contains(['.', 'e', 'E', 'p', 'P']) {
                return Err(self.errorf(format!("integer overflow: {}", go_quote(text))));
            }
            n.is_float = true;
            n.float = f;
            if f == f.trunc() && f.abs() < 9.223372036854776e18 {
                n.is_int = true;
                n.int = f as i64;
            }
            if f == f.trunc() && (0.0..1.8446744073709552e19).contains(&f) {
                n.is_uint = true;
            }
        }
        if !n.is_int && !n.is_uint && !n.is_float {
            return Err(self.errorf(format!("illegal number syntax: {}", go_quote(text))));
        }
        Ok(n)
    }
}

/// Go's `underscoreOK`: underscores only between digits (a base prefix counts as a digit).
pub(crate) fn underscore_ok(s: &str) -> bool {
    let s = s.strip_prefix(['+', '-']).unwrap_or(s);
    let b = s.as_bytes();
    let mut saw = b'^';
    let mut i = 0;
    let mut hex = false;
    if b.len() >= 2 && b[0] == b'0' && matches!(b[1].to_ascii_lowercase(), b'b' | b'o' | b'x') {
        i = 2;
        saw = b'0';
        hex = b[1].eq_ignore_ascii_case(&b'x');
    }
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_digit() || (hex && c.is_ascii_hexdigit()) {
            saw = b'0';
        } else if c == b'_' {
            if saw != b'0' {
                return false;
            }
            saw = b'_';
        } else {
            if saw == b'_' {
                return false;
            }
            saw = b'!';
        }
        i += 1;
    }
    saw != b'_'
}

/// `strconv.ParseUint(s, 0, 64)`.
fn parse_go_uint(s: &str) -> Option<u64> {
    if s.starts_with(['+', '-']) || s.is_empty() {
        return None;
    }
    let (base, digits) = if let Some(r) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        (16, r)
    } else if let Some(r) = s.strip_prefix("0o").or_else(|| s.strip_prefix("0O")) {
        (8, r)
    } else if let Some(r) = s.strip_prefix("0b").or_else(|| s.strip_prefix("0B")) {
        (2, r)
    } else if s.len() > 1 && s.starts_with('0') {
        (8, &s[1..])
    } else {
        (10, s)
    };
    if s.contains('_') && !underscore_ok(s) {
        return None;
    }
    let clean: String = digits.chars().filter(|c| *c != '_').collect();
    if clean.is_empty() {
        return None;
    }
    u64::from_str_radix(&clean, base).ok()
}

/// `strconv.ParseInt(s, 0, 64)`.
fn parse_go_int(s: &str) -> Option<i64> {
    let (neg, body) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let u = parse_go_uint(body)?;
    if neg {
        if u <= i64::MAX as u64 + 1 {
            Some((-(u as i128)) as i64)
        } else {
            None
        }
    } else {
        i64::try_from(u).ok()
    }
}

/// `strconv.ParseFloat(s, 64)` for the number forms the lexer produces.
fn parse_go_float(s: &str) -> Option<f64> {
    if s.contains('_') && !underscore_ok(s) {
        return None;
    }
    let clean: String = s.chars().filter(|c| *c != '_').collect();
    let (neg, body) = match clean.as_bytes().first() {
        Some(b'-') => (true, &clean[1..]),
        Some(b'+') => (false, &clean[1..]),
        _ => (false, clean.as_str()),
    };
    let v = if let Some(h) = body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
        let (mant, exp) = h.split_once(['p', 'P'])?;
        let exp: i32 = exp.parse().ok()?;
        let (int, frac) = mant.split_once('.').unwrap_or((mant, ""));
        if int.is_empty() && frac.is_empty() {
            return None;
        }
        let mut m = 0f64;
        for c in int.chars().chain(frac.chars()) {
            m = m * 16.0 + c.to_digit(16)? as f64;
        }
        m * 2f64.powi(exp - 4 * frac.len() as i32)
    } else {
        if body.is_empty()
            || !body
                .bytes()
                .all(|b| b.is_ascii_digit() || b".eE+-".contains(&b))
        {
            return None;
        }
        body.parse::<f64>().ok()?
    };
    Some(if neg { -v } else { v })
}

/// Go's `strconv.UnquoteChar`: one (possibly escaped) character and the rest.
fn unquote_char(s: &str, quote: char) -> Option<(char, &str)> {
    let mut chars = s.chars();
    let c = chars.next()?;
    if c == quote && (quote == '\'' || quote == '"') {
        return None;
    }
    if c != '\\' {
        return Some((c, chars.as_str()));
    }
    let e = chars.next()?;
    let rest = chars.as_str();
    let simple = match e {
        'a' => Some('\x07'),
        'b' => Some('\x08'),
        'f' => Some('\x0c'),
        'n' => Some('\n'),
        'r' => Some('\r'),
        't' => Some('\t'),
        'v' => Some('\x0b'),
        '\\' => Some('\\'),
        '\'' | '"' if e == quote => Some(e),
        _ => None,
    };
    if let Some(c) = simple {
        return Some((c, rest));
    }
    let (n, radix) = match e {
        'x' => (2, 16),
        'u' => (4, 16),
        'U' => (8, 16),
        '0'..='7' => (3, 8),
        _ => return None,
    };
    let digits: String = if radix == 8 {
        std::iter::once(e).chain(rest.chars().take(2)).collect()
    } else {
        rest.chars().take(n).collect()
    };
    if digits.chars().count() != n {
        return None;
    }
    let v = u32::from_str_radix(&digits, radix).ok()?;
    let rest = if radix == 8 { &rest[2..] } else { &rest[n..] };
    if e == 'x' || radix == 8 {
        if v > 255 {
            return None;
        }
        // A byte escape; templates only meet ASCII ones in practice.
        return Some((char::from_u32(v)?, rest));
    }
    Some((char::from_u32(v)?, rest))
}

/// Go's `strconv.Unquote` for "…" and `…` strings.
fn unquote(s: &str) -> Option<String> {
    if s.len() >= 2 && s.starts_with('`') && s.ends_with('`') {
        let body = &s[1..s.len() - 1];
        if body.contains('`') {
            return None;
        }
        return Some(body.replace('\r', ""));
    }
    if s.len() < 2 || !s.starts_with('"') || !s.ends_with('"') {
        return None;
    }
    let mut body = &s[1..s.len() - 1];
    let mut out = String::with_capacity(body.len());
    while !body.is_empty() {
        if body.starts_with('\n') {
            return None;
        }
        let (c, rest) = unquote_char(body, '"')?;
        out.push(c);
        body = rest;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_number_literals_parse() {
        assert_eq!(parse_go_int("0x1_23"), Some(291));
        assert_eq!(parse_go_int("0377"), Some(255));
        assert_eq!(parse_go_int("0b_1_0_1"), Some(5));
        assert_eq!(parse_go_int("-12_34"), Some(-1234));
        assert_eq!(parse_go_int("1__2"), None);
        assert_eq!(parse_go_float("+0x_1.e_0p+0_2"), Some(7.5));
        assert_eq!(parse_go_float("0_0_1_2_3.4"), Some(123.4));
        assert_eq!(parse_go_uint("0x8000000000000000"), Some(1 << 63));
    }

    #[test]
    fn nodes_print_like_go() {
        let trees = parse(
            "t",
            "{{range $i, $x := .A.b}}{{printf \"%d\" (len $x) | print}}{{else}}x{{end}}",
            &|_| true,
        )
        .expect("parses");
        assert_eq!(
            trees[0].root.to_string(),
            "{{range $i, $x := .A.b}}{{printf \"%d\" (len $x) | print}}{{else}}x{{end}}"
        );
    }
}
