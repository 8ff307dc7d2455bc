//! The executor: walks a parsed tree with data the way Go's `text/template` `state` does —
//! variable scoping, field chains, function calls with Go's argument checks, `missingkey`,
//! and Go's error texts with the failing node's location and text.
//!
//! Recursion (template calls, nested control structures, parenthesised pipelines) is
//! bounded, and deep recursion continues on fresh large stacks, so no template can
//! overflow the stack.

use crate::error::Error;
use crate::funcs::builtin;
use crate::gofmt::{go_quote, sprint_value};
use crate::parse::{Arg, Branch, Command, List, Node, Pipe, Tree};
use crate::template::{MissingKey, Templates};
use crate::value::{CallContext, CallHost, Function, Member, ParamType, Value};

/// Nesting levels run on the caller's stack (which may be small: 2 MiB for test and tokio
/// threads) before execution continues on a fresh large stack. A level takes under 2.5 KiB
/// in debug builds (measured: 800 levels fit in 2 MiB), so this uses at most ~320 KiB, and
/// real charts (includes inside loops inside conditionals) stay below it: they never
/// switch stacks.
const CALLER_LEVELS: usize = 128;
/// Nesting levels run on each large stack before the next one.
const LEVELS_PER_STACK: usize = 1000;
const STACK_BYTES: usize = 64 << 20;

/// A value plus whether Go would see it as held in an `interface{}`: a map entry or list
/// element (as `range` and field chains leave them), or `missingkey=zero`'s zero value.
/// Go names such a receiver's type `interface {}` in errors, and a field of a nil one fails
/// with `nil pointer evaluating interface {}.X`, while a field of a missing (invalid) value
/// is just nil.
#[derive(Clone)]
struct Cell {
    v: Value,
    iface: bool,
}

impl Cell {
    fn plain(v: Value) -> Cell {
        Cell { v, iface: false }
    }
    fn elem(v: Value) -> Cell {
        Cell { v, iface: true }
    }
    /// A host object's field or method result: concrete unless nil.
    fn member(v: Value) -> Cell {
        let iface = v.is_nil();
        Cell { v, iface }
    }
    fn type_name(&self) -> String {
        if self.iface {
            "interface {}".into()
        } else {
            self.v.type_name()
        }
    }
}

enum Flow {
    Break,
    Continue,
    Err(Error),
}

impl From<Error> for Flow {
    fn from(e: Error) -> Flow {
        Flow::Err(e)
    }
}

type R<T> = Result<T, Error>;

#[derive(Clone, Copy)]
enum At<'a> {
    None,
    Node(&'a Node),
    Pipe(&'a Pipe),
    Cmd(&'a Command),
    Arg(&'a Arg),
}

pub(crate) struct State<'a> {
    set: &'a Templates,
    tree: &'a Tree,
    vars: Vec<(&'a str, Cell)>,
    depth: usize,
    nest: usize,
    steps: u64,
    out: String,
    at: At<'a>,
}

/// Executes `tree` with `data`, appending to `out` (which keeps what was written before
/// an error, as Go's writer does).
pub(crate) fn execute(set: &Templates, tree: &Tree, data: &Value, out: &mut String) -> R<()> {
    let mut s = State {
        set,
        tree,
        vars: vec![("$", Cell::plain(data.clone()))],
        depth: 0,
        nest: 0,
        steps: 0,
        out: std::mem::take(out),
        at: At::None,
    };
    let r = s.walk_list(&Cell::plain(data.clone()), &tree.root);
    *out = s.out;
    match r {
        Ok(()) => Ok(()),
        Err(Flow::Err(e)) => Err(e),
        // The parser rejects break/continue outside range.
        Err(Flow::Break | Flow::Continue) => Ok(()),
    }
}

impl<'a> State<'a> {
    fn at(&mut self, at: At<'a>) {
        self.at = at;
    }

    fn errorf(&self, msg: impl std::fmt::Display) -> Error {
        let name = &self.tree.name;
        let at = self.at;
        let describe = move || match at {
            At::None => None,
            At::Node(n) => Some((node_pos(n), n.to_string())),
            At::Pipe(p) => Some((p.pos, p.to_string())),
            At::Cmd(c) => Some((c.pos, c.to_string())),
            At::Arg(a) => Some((a.pos(), a.to_string())),
        };
        // A node's text can nest as deep as the tree: on the caller's (maybe small) stack,
        // write it on a large one.
        let described = if self.nest < CALLER_LEVELS {
            crate::stack::on_large_stack(crate::stack::LARGE_STACK_BYTES, describe)
        } else {
            Some(describe())
        };
        let (pos, ctx) = match described {
            Some(Some(d)) => d,
            Some(None) => return Error::Exec(format!("template: {name}: {msg}")),
            None => {
                return Error::Exec(format!(
                    "template: {name}: {msg} (cannot describe the node)"
                ));
            }
        };
        Error::Exec(format!(
            "template: {}: executing {} at <{}>: {}",
            self.tree.location(pos),
            go_quote(name),
            ctx,
            msg
        ))
    }

    /// Runs `f` one nesting level deeper; every few levels on a fresh large stack.
    fn nested<T>(&mut self, f: impl FnOnce(&mut Self) -> Result<T, Flow>) -> Result<T, Flow> {
        self.nest += 1;
        // Template calls nest at most `max_depth` deep, each with control structures inside;
        // one template's own nesting is bounded by the parser.
        if self.nest
            > self
                .set
                .max_depth()
                .saturating_mul(3)
                .saturating_add(10_000)
        {
            self.nest -= 1;
            return Err(Flow::Err(self.errorf(format!(
                "exceeded maximum template depth ({})",
                self.set.max_depth()
            ))));
        }
        let hop = self.nest == CALLER_LEVELS
            || (self.nest > CALLER_LEVELS
                && (self.nest - CALLER_LEVELS).is_multiple_of(LEVELS_PER_STACK));
        let r = if hop {
            crate::stack::on_large_stack(STACK_BYTES, || f(self)).unwrap_or_else(|| {
                Err(Flow::Err(Error::Exec(
                    "template: cannot continue deep recursion: no stack".into(),
                )))
            })
        } else {
            f(self)
        };
        self.nest -= 1;
        r
    }

    fn write(&mut self, s: &str) -> Result<(), Flow> {
        if let Some(max) = self.set.max_output()
            && self.out.len() + s.len() > max
        {
            return Err(Flow::Err(
                self.errorf(format!("output exceeds {max} bytes")),
            ));
        }
        self.out.push_str(s);
        Ok(())
    }

    fn walk_list(&mut self, dot: &Cell, list: &'a List) -> Result<(), Flow> {
        for node in &list.nodes {
            self.walk(dot, node)?;
        }
        Ok(())
    }

    /// Counts one unit of work against the set's step bound.
    fn step(&mut self) -> Result<(), Flow> {
        self.steps += 1;
        if crate::parallel::abandoned() {
            // Thrown away: the run starts again one template at a time.
            return Err(Flow::Err(self.errorf("abandoned side-by-side run")));
        }
        if let Some(max) = self.set.max_steps()
            && self.steps > max
        {
            return Err(Flow::Err(
                self.errorf(format!("execution exceeds {max} steps")),
            ));
        }
        Ok(())
    }

    fn walk(&mut self, dot: &Cell, node: &'a Node) -> Result<(), Flow> {
        self.at(At::Node(node));
        self.step()?;
        match node {
            Node::Text { text, .. } => self.write(text),
            Node::Action { pipe, .. } => {
                let v = self.eval_pipeline(dot, pipe)?;
                if pipe.decl.is_empty() {
                    self.print_value(node, &v)?;
                }
                Ok(())
            }
            Node::If(b) => self.nested(|s| s.walk_if_or_with(false, dot, b)),
            Node::With(b) => self.nested(|s| s.walk_if_or_with(true, dot, b)),
            Node::Range(b) => self.nested(|s| s.walk_range(dot, node, b)),
            Node::Template { name, pipe, .. } => {
                self.nested(|s| s.walk_template(dot, node, name, pipe.as_ref()))
            }
            Node::Break { .. } => Err(Flow::Break),
            Node::Continue { .. } => Err(Flow::Continue),
        }
    }

    fn print_value(&mut self, node: &'a Node, v: &Value) -> Result<(), Flow> {
        self.at(At::Node(node));
        let s = match v {
            Value::Nil => "<no value>".to_string(),
            Value::Func(f) => {
                return Err(Flow::Err(
                    self.errorf(format!("can't print {node} of type {}", f.go_type())),
                ));
            }
            v => sprint_value(v),
        };
        self.write(&s)
    }

    fn walk_if_or_with(&mut self, with: bool, dot: &Cell, b: &'a Branch) -> Result<(), Flow> {
        let mark = self.vars.len();
        let r = (|| {
            let val = self.eval_pipeline(dot, &b.pipe)?;
            if val.truth() {
                if with {
                    self.walk_list(&Cell::plain(val), &b.list)
                } else {
                    self.walk_list(dot, &b.list)
                }
            } else if let Some(e) = &b.else_list {
                self.walk_list(dot, e)
            } else {
                Ok(())
            }
        })();
        self.vars.truncate(mark);
        r
    }

    fn walk_range(&mut self, dot: &Cell, node: &'a Node, b: &'a Branch) -> Result<(), Flow> {
        self.at(At::Node(node));
        let mark = self.vars.len();
        let r = self.walk_range_inner(dot, b);
        self.vars.truncate(mark);
        r
    }

    fn walk_range_inner(&mut self, dot: &Cell, b: &'a Branch) -> Result<(), Flow> {
        let val = self.eval_pipeline(dot, &b.pipe)?;
        let val = val.plain().into_owned();
        let mark = self.vars.len();
        let ndecl = b.pipe.decl.len();
        let one = |s: &mut Self, index: Value, elem: Value| -> Result<bool, Flow> {
            // An iteration is work even when the body is empty.
            s.step()?;
            let elem = Cell::elem(elem);
            if ndecl > 0 {
                let n = s.vars.len();
                s.vars[n - 1].1 = elem.clone();
            }
            if ndecl > 1 {
                let n = s.vars.len();
                s.vars[n - 2].1 = Cell::plain(index);
            }
            let r = s.walk_list(&elem, &b.list);
            s.vars.truncate(mark);
            match r {
                Ok(()) | Err(Flow::Continue) => Ok(true),
                Err(Flow::Break) => Ok(false),
                Err(e) => Err(e),
            }
        };
        match &val {
            Value::List(l) if !l.is_empty() => {
                for (i, e) in l.iter().enumerate() {
                    if !one(self, Value::Int(i as i64), e.clone())? {
                        break;
                    }
                }
                return Ok(());
            }
            Value::Map(m) if !m.is_empty() => {
                for (k, e) in m.entries() {
                    if !one(self, Value::string(k.as_str()), e)? {
                        break;
                    }
                }
                return Ok(());
            }
            Value::List(_) | Value::Map(_) | Value::Nil => {}
            other => {
                return Err(Flow::Err(self.errorf(format!(
                    "range can't iterate over {}",
                    sprint_value(other)
                ))));
            }
        }
        if let Some(e) = &b.else_list {
            self.walk_list(dot, e)?;
        }
        Ok(())
    }

    fn walk_template(
        &mut self,
        dot: &Cell,
        node: &'a Node,
        name: &'a str,
        pipe: Option<&'a Pipe>,
    ) -> Result<(), Flow> {
        self.at(At::Node(node));
        let Some(tree) = self.set.tree(name) else {
            return Err(Flow::Err(
                self.errorf(format!("template {} not defined", go_quote(name))),
            ));
        };
        if self.depth >= self.set.max_depth() {
            return Err(Flow::Err(self.errorf(format!(
                "exceeded maximum template depth ({})",
                self.set.max_depth()
            ))));
        }
        let new_dot = match pipe {
            Some(p) => self.eval_pipeline(dot, p)?,
            None => Value::Nil,
        };
        let vars = std::mem::replace(&mut self.vars, vec![("$", Cell::plain(new_dot.clone()))]);
        let old_tree = std::mem::replace(&mut self.tree, tree);
        self.depth += 1;
        let r = self.walk_list(&Cell::plain(new_dot), &tree.root);
        self.depth -= 1;
        self.tree = old_tree;
        self.vars = vars;
        r
    }

    fn eval_pipeline(&mut self, dot: &Cell, pipe: &'a Pipe) -> R<Value> {
        self.at(At::Pipe(pipe));
        let mut value: Option<Value> = None;
        for cmd in &pipe.cmds {
            value = Some(self.eval_command(dot, cmd, value)?);
        }
        let value = value.unwrap_or_default();
        for name in &pipe.decl {
            if pipe.is_assign {
                self.set_var(name, Cell::plain(value.clone()))?;
            } else {
                self.vars.push((name.as_str(), Cell::plain(value.clone())));
            }
        }
        Ok(value)
    }

    fn eval_nested_pipeline(&mut self, dot: &Cell, pipe: &'a Pipe) -> R<Value> {
        match self.nested(|s| s.eval_pipeline(dot, pipe).map_err(Flow::Err)) {
            Ok(v) => Ok(v),
            Err(Flow::Err(e)) => Err(e),
            Err(_) => Ok(Value::Nil),
        }
    }

    fn set_var(&mut self, name: &str, v: Cell) -> R<()> {
        match self.vars.iter_mut().rev().find(|(n, _)| *n == name) {
            Some(slot) => {
                slot.1 = v;
                Ok(())
            }
            None => Err(self.errorf(format!("undefined variable: {name}"))),
        }
    }

    fn var_value(&self, name: &str) -> R<Cell> {
        match self.vars.iter().rev().find(|(n, _)| *n == name) {
            Some((_, v)) => Ok(v.clone()),
            None => Err(self.errorf(format!("undefined variable: {name}"))),
        }
    }

    fn not_a_function(&self, args: &[Arg], fin: &Option<Value>) -> R<()> {
        if args.len() > 1 || fin.is_some() {
            return Err(self.errorf(format!("can't give argument to non-function {}", args[0])));
        }
        Ok(())
    }

    fn eval_command(&mut self, dot: &Cell, cmd: &'a Command, fin: Option<Value>) -> R<Value> {
        let first = &cmd.args[0];
        match first {
            Arg::Field { idents, .. } => {
                return self.eval_field_node(dot, first, idents, &cmd.args, fin);
            }
            Arg::Chain { node, fields, .. } => {
                return self.eval_chain_node(dot, first, node, fields, &cmd.args, fin);
            }
            Arg::Identifier { name, .. } => {
                return self.eval_function(dot, first, name, At::Cmd(cmd), &cmd.args, fin);
            }
            Arg::Pipe(p) => {
                self.not_a_function(&cmd.args, &fin)?;
                return self.eval_nested_pipeline(dot, p);
            }
            Arg::Variable { idents, .. } => {
                return self.eval_variable_node(dot, first, idents, &cmd.args, fin);
            }
            _ => {}
        }
        self.at(At::Arg(first));
        self.not_a_function(&cmd.args, &fin)?;
        match first {
            Arg::Bool { val, .. } => Ok(Value::Bool(*val)),
            Arg::Dot { .. } => Ok(dot.v.clone()),
            Arg::Nil { .. } => Err(self.errorf("nil is not a command")),
            Arg::Number { num, .. } => self.ideal_constant(first, num),
            Arg::String { text, .. } => Ok(Value::string(text.as_str())),
            _ => Err(self.errorf(format!(
                "can't evaluate command {}",
                go_quote(&first.to_string())
            ))),
        }
    }

    fn ideal_constant(&mut self, node: &'a Arg, num: &crate::parse::Number) -> R<Value> {
        self.at(At::Arg(node));
        let t = num.text.as_str();
        let is_hex_int =
            t.len() > 2 && (t.starts_with("0x") || t.starts_with("0X")) && !t.contains(['p', 'P']);
        let is_rune = t.starts_with('\'');
        if num.is_float && !is_hex_int && !is_rune && t.contains(['.', 'e', 'E', 'p', 'P']) {
            return Ok(Value::Float(num.float));
        }
        if num.is_int {
            return Ok(Value::Int(num.int));
        }
        if num.is_uint {
            return Err(self.errorf(format!("{t} overflows int")));
        }
        Ok(Value::Nil)
    }

    fn eval_field_node(
        &mut self,
        dot: &Cell,
        node: &'a Arg,
        idents: &'a [String],
        args: &'a [Arg],
        fin: Option<Value>,
    ) -> R<Value> {
        self.at(At::Arg(node));
        self.eval_field_chain(dot, dot.clone(), node, idents, args, fin)
    }

    fn eval_chain_node(
        &mut self,
        dot: &Cell,
        node: &'a Arg,
        inner: &'a Arg,
        fields: &'a [String],
        args: &'a [Arg],
        fin: Option<Value>,
    ) -> R<Value> {
        self.at(At::Arg(node));
        if matches!(inner, Arg::Nil { .. }) {
            return Err(self.errorf(format!("indirection through explicit nil in {node}")));
        }
        let recv = self.eval_arg(dot, None, inner)?;
        self.eval_field_chain(dot, Cell::plain(recv), node, fields, args, fin)
    }

    fn eval_variable_node(
        &mut self,
        dot: &Cell,
        node: &'a Arg,
        idents: &'a [String],
        args: &'a [Arg],
        fin: Option<Value>,
    ) -> R<Value> {
        self.at(At::Arg(node));
        let value = self.var_value(&idents[0])?;
        if idents.len() == 1 {
            self.not_a_function(args, &fin)?;
            return Ok(value.v);
        }
        self.eval_field_chain(dot, value, node, &idents[1..], args, fin)
    }

    fn eval_field_chain(
        &mut self,
        dot: &Cell,
        mut recv: Cell,
        node: &'a Arg,
        idents: &'a [String],
        args: &'a [Arg],
        fin: Option<Value>,
    ) -> R<Value> {
        let n = idents.len();
        for ident in &idents[..n - 1] {
            recv = self.eval_field(dot, ident, node, &[], None, recv)?;
        }
        Ok(self
            .eval_field(dot, &idents[n - 1], node, args, fin, recv)?
            .v)
    }

    fn eval_field(
        &mut self,
        dot: &Cell,
        name: &str,
        node: &'a Arg,
        args: &'a [Arg],
        fin: Option<Value>,
        recv: Cell,
    ) -> R<Cell> {
        let has_args = args.len() > 1 || fin.is_some();
        match &recv.v {
            Value::Nil if recv.iface => {
                Err(self.errorf(format!("nil pointer evaluating interface {{}}.{name}")))
            }
            Value::Nil => {
                if self.set.missing_key() == MissingKey::Error {
                    return Err(
                        self.errorf(format!("nil data; no entry for key {}", go_quote(name)))
                    );
                }
                Ok(Cell::plain(Value::Nil))
            }
            Value::Object(o) => match o.member(name) {
                Some(Member::Method(f)) => self
                    .eval_call(dot, &f, false, At::Arg(node), name, args, fin)
                    .map(Cell::member),
                Some(Member::Field(v)) => {
                    if has_args {
                        return Err(self.errorf(format!(
                            "{name} has arguments but cannot be invoked as field"
                        )));
                    }
                    Ok(Cell::member(v))
                }
                None => Err(self.errorf(format!(
                    "can't evaluate field {name} in type {}",
                    recv.type_name()
                ))),
            },
            Value::Map(m) => {
                if has_args {
                    return Err(self.errorf(format!("{name} is not a method but has arguments")));
                }
                match m.get(name) {
                    Some(v) => Ok(Cell::elem(v)),
                    None => match self.set.missing_key() {
                        MissingKey::Default => Ok(Cell::plain(Value::Nil)),
                        MissingKey::Zero => Ok(Cell::elem(Value::Nil)),
                        MissingKey::Error => {
                            Err(self.errorf(format!("map has no entry for key {}", go_quote(name))))
                        }
                    },
                }
            }
            _ => Err(self.errorf(format!(
                "can't evaluate field {name} in type {}",
                recv.type_name()
            ))),
        }
    }

    fn eval_function(
        &mut self,
        dot: &Cell,
        node: &'a Arg,
        name: &'a str,
        cmd: At<'a>,
        args: &'a [Arg],
        fin: Option<Value>,
    ) -> R<Value> {
        self.at(At::Arg(node));
        let set = self.set;
        let (f, is_builtin) = match set.func(name) {
            Some(f) => (f, false),
            None => match builtin(name) {
                Some(f) => (f, true),
                None => {
                    return Err(
                        self.errorf(format!("{} is not a defined function", go_quote(name)))
                    );
                }
            },
        };
        self.eval_call(dot, f, is_builtin, cmd, name, args, fin)
    }

    #[allow(clippy::too_many_arguments)]
    fn eval_call(
        &mut self,
        dot: &Cell,
        f: &Function,
        is_builtin: bool,
        node: At<'a>,
        name: &str,
        args: &'a [Arg],
        fin: Option<Value>,
    ) -> R<Value> {
        let args = if args.is_empty() { args } else { &args[1..] };
        let num_in = args.len() + usize::from(fin.is_some());
        let nfixed = f.params().len();
        if f.variadic_param().is_some() {
            if num_in < nfixed {
                return Err(self.errorf(format!(
                    "wrong number of args for {name}: want at least {nfixed} got {}",
                    args.len()
                )));
            }
        } else if num_in != nfixed {
            return Err(self.errorf(format!(
                "wrong number of args for {name}: want {nfixed} got {num_in}"
            )));
        }
        if is_builtin && (name == "and" || name == "or") {
            let mut v = Value::Nil;
            for a in args {
                v = self.eval_arg(dot, Some(ParamType::Any), a)?;
                if v.truth() == (name == "or") {
                    return Ok(v);
                }
            }
            if let Some(fv) = fin {
                v = fv;
            }
            return Ok(v);
        }
        let mut argv = Vec::with_capacity(num_in);
        for (i, a) in args.iter().enumerate() {
            argv.push(self.eval_arg(dot, f.param(i), a)?);
        }
        if let Some(fv) = fin {
            argv.push(self.validate_type(fv, f.param(num_in - 1))?);
        }
        let called = {
            let mut ctx = CallContext { host: self };
            f.call_in(&mut ctx, &argv)
        };
        match called {
            Ok(v) => Ok(v),
            Err(e) => {
                self.at(node);
                Err(self.errorf(format!("error calling {name}: {e}")))
            }
        }
    }

    fn validate_type(&self, v: Value, typ: Option<ParamType>) -> R<Value> {
        let Some(t) = typ.filter(|t| *t != ParamType::Any) else {
            return Ok(v);
        };
        if v.is_nil() {
            if t.can_be_nil() {
                return Ok(v);
            }
            return Err(self.errorf(format!("invalid value; expected {}", t.go_name())));
        }
        if t.accepts(&v) {
            return Ok(v);
        }
        Err(self.errorf(format!(
            "wrong type for value; expected {}; got {}",
            t.go_name(),
            v.type_name()
        )))
    }

    fn eval_arg(&mut self, dot: &Cell, typ: Option<ParamType>, n: &'a Arg) -> R<Value> {
        self.at(At::Arg(n));
        let v = match n {
            Arg::Dot { .. } => dot.v.clone(),
            Arg::Nil { .. } => {
                return match typ {
                    None => Ok(Value::Nil),
                    Some(t) if t.can_be_nil() => Ok(Value::Nil),
                    Some(t) => Err(self.errorf(format!("cannot assign nil to {}", t.go_name()))),
                };
            }
            Arg::Field { idents, .. } => {
                self.eval_field_node(dot, n, idents, std::slice::from_ref(n), None)?
            }
            Arg::Variable { idents, .. } => self.eval_variable_node(dot, n, idents, &[], None)?,
            Arg::Pipe(p) => self.eval_nested_pipeline(dot, p)?,
            Arg::Identifier { name, .. } => {
                self.eval_function(dot, n, name, At::Arg(n), &[], None)?
            }
            Arg::Chain { node, fields, .. } => {
                self.eval_chain_node(dot, n, node, fields, &[], None)?
            }
            Arg::Bool { val, .. } => {
                return match typ {
                    None | Some(ParamType::Any | ParamType::Bool) => Ok(Value::Bool(*val)),
                    Some(t) => Err(self.expected(t, n)),
                };
            }
            Arg::String { text, .. } => {
                return match typ {
                    None | Some(ParamType::Any | ParamType::String) => {
                        Ok(Value::string(text.as_str()))
                    }
                    Some(t) => Err(self.expected(t, n)),
                };
            }
            Arg::Number { num, .. } => {
                return match typ {
                    None | Some(ParamType::Any) => self.ideal_constant(n, num),
                    Some(ParamType::Int) if num.is_int => Ok(Value::Int(num.int)),
                    Some(ParamType::Int64) if num.is_int => Ok(Value::Int64(num.int)),
                    // Go's `SetUint` on a uint32 keeps the low 32 bits.
                    Some(ParamType::Uint32) if num.is_uint => {
                        Ok(Value::Int(i64::from(num.int as u32)))
                    }
                    Some(ParamType::Float64) if num.is_float => Ok(Value::Float(num.float)),
                    Some(t) => Err(self.expected(t, n)),
                };
            }
        };
        self.validate_type(v, typ)
    }

    fn expected(&self, t: ParamType, n: &Arg) -> Error {
        let what = match t {
            ParamType::Map | ParamType::List | ParamType::Struct(_) => {
                return self.errorf(format!("can't handle {n} for arg of type {}", t.go_name()));
            }
            ParamType::Bool => "bool",
            ParamType::Int | ParamType::Int64 => "integer",
            ParamType::Uint32 => "unsigned integer",
            ParamType::Float64 => "float",
            ParamType::String | ParamType::Any => "string",
        };
        self.errorf(format!("expected {what}; found {n}"))
    }
}

impl CallHost for State<'_> {
    fn templates(&self) -> &Templates {
        self.set
    }

    fn template_name(&self) -> &str {
        &self.tree.name
    }

    fn execute_own(&mut self, name: &str, data: &Value) -> Result<String, Error> {
        let set = self.set;
        self.execute(set, name, data)
    }

    fn execute(&mut self, set: &Templates, name: &str, data: &Value) -> Result<String, Error> {
        let Some(tree) = set.tree(name) else {
            return Err(Error::Exec(format!(
                "template: no template {} associated with template {}",
                go_quote(name),
                go_quote(set.name())
            )));
        };
        // Go starts a fresh execution (its depth restarts, and only its goroutine stack
        // limit stops endless `include` recursion); here the depth carries on, so that
        // recursion ends with Go's depth error instead.
        if self.depth >= self.set.max_depth() {
            return Err(self.errorf(format!(
                "exceeded maximum template depth ({})",
                self.set.max_depth()
            )));
        }
        let mut child = State {
            set,
            tree,
            vars: vec![("$", Cell::plain(data.clone()))],
            depth: self.depth + 1,
            nest: self.nest,
            steps: self.steps,
            out: String::new(),
            at: At::None,
        };
        let dot = Cell::plain(data.clone());
        let r = child.nested(|c| c.walk_list(&dot, &tree.root));
        self.steps = child.steps;
        match r {
            Ok(()) | Err(Flow::Break | Flow::Continue) => Ok(child.out),
            Err(Flow::Err(e)) => Err(e),
        }
    }
}

fn node_pos(n: &Node) -> usize {
    match n {
        Node::Text { pos, .. }
        | Node::Action { pos, .. }
        | Node::Template { pos, .. }
        | Node::Break { pos }
        | Node::Continue { pos } => *pos,
        Node::If(b) | Node::Range(b) | Node::With(b) => b.pos,
    }
}
