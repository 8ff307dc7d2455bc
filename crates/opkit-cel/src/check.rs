//! Static checks of a parsed rule, standing in for cel-go's type checker.
//!
//! cel-rust parses and evaluates but does not type-check, so a rule such as `self.replcas > 0`
//! (typo) or `size(self.x) > 0 && foo(self)` would be accepted at CRD creation and fail on every
//! write. Upstream refuses such CRDs; this module catches the common cases with cel-go's messages:
//! undeclared identifiers and functions (`undeclared reference to 'foo' (in container '')`),
//! fields that the schema does not declare (`undefined field 'foo'`), and results that cannot be
//! a bool (or a string, for `messageExpression`). It also measures what the work estimate needs:
//! comprehension nesting and expression size.

use cel::common::ast::{EntryExpr, Expr, IdedExpr};

use crate::convert::{Shape, escape};

/// One static problem, at a byte offset of the source.
pub(crate) struct Issue {
    pub offset: Option<u32>,
    pub message: String,
}

/// What the checker learned about an expression.
#[derive(Default)]
pub(crate) struct Facts {
    pub issues: Vec<Issue>,
    /// Whether `oldSelf` is referenced (a transition rule).
    pub uses_old_self: bool,
    /// Deepest nesting of comprehensions (`all`, `map`, ...).
    pub depth: u32,
    /// Number of expression nodes.
    pub size: u64,
    /// Whether a function that makes lists from strings (`split`, `findAll`) is called.
    pub splits: bool,
}

/// Identifiers that name types (`type(x) == string`).
const TYPE_NAMES: [&str; 11] = [
    "bool",
    "bytes",
    "double",
    "int",
    "list",
    "map",
    "null_type",
    "string",
    "type",
    "uint",
    "optional_type",
];

struct Checker<'a> {
    shape: &'a Shape,
    has_old_self: bool,
    /// Further variables in scope (standalone expressions: `object`, `request`, ...).
    variables: &'a [&'a str],
    declared: &'a dyn Fn(&str) -> bool,
    facts: Facts,
    scopes: Vec<String>,
}

/// Checks `expr`, a rule at a node of shape `shape`. `declared` answers whether a function name is
/// declared in the environment.
pub(crate) fn check(
    expr: &IdedExpr,
    offsets: &dyn Fn(u64) -> Option<u32>,
    shape: &Shape,
    has_old_self: bool,
    variables: &[&str],
    declared: &dyn Fn(&str) -> bool,
) -> Facts {
    let mut c = Checker {
        shape,
        has_old_self,
        variables,
        declared,
        facts: Facts::default(),
        scopes: Vec::new(),
    };
    c.walk(expr, 0, offsets);
    c.facts
}

impl Checker<'_> {
    fn issue(&mut self, offset: Option<u32>, message: String) {
        self.facts.issues.push(Issue { offset, message });
    }

    fn bound(&self, name: &str) -> bool {
        name.starts_with('@') || self.scopes.iter().any(|s| s == name)
    }

    fn walk(&mut self, e: &IdedExpr, depth: u32, offsets: &dyn Fn(u64) -> Option<u32>) {
        self.facts.size += 1;
        self.facts.depth = self.facts.depth.max(depth);
        match &e.expr {
            Expr::Unspecified | Expr::Literal(_) => {}
            Expr::Ident(name) => {
                if name == "oldSelf" {
                    self.facts.uses_old_self = true;
                }
                let known = name == "self"
                    || (name == "oldSelf" && self.has_old_self)
                    || self.bound(name)
                    || self.variables.contains(&name.as_str())
                    || TYPE_NAMES.contains(&name.as_str());
                if !known {
                    self.issue(
                        offsets(e.id),
                        format!("undeclared reference to '{name}' (in container '')"),
                    );
                }
            }
            Expr::Select(sel) => {
                self.check_field(e, offsets);
                self.walk(&sel.operand, depth, offsets);
            }
            Expr::Call(call) => {
                let name = call.func_name.as_str();
                if matches!(name, "split" | "findAll") {
                    self.facts.splits = true;
                }
                let operator = name.starts_with(['_', '!', '@']);
                if !operator && !(self.declared)(name) {
                    self.issue(
                        offsets(e.id),
                        format!("undeclared reference to '{name}' (in container '')"),
                    );
                }
                if let Some(t) = &call.target {
                    self.walk(t, depth, offsets);
                }
                for a in &call.args {
                    self.walk(a, depth, offsets);
                }
            }
            Expr::Comprehension(c) => {
                self.walk(&c.iter_range, depth, offsets);
                self.walk(&c.accu_init, depth, offsets);
                let pushed = 2 + usize::from(c.iter_var2.is_some());
                self.scopes.push(c.iter_var.clone());
                self.scopes.push(c.accu_var.clone());
                if let Some(v2) = &c.iter_var2 {
                    self.scopes.push(v2.clone());
                }
                self.walk(&c.loop_cond, depth + 1, offsets);
                self.walk(&c.loop_step, depth + 1, offsets);
                self.walk(&c.result, depth, offsets);
                for _ in 0..pushed {
                    self.scopes.pop();
                }
            }
            Expr::List(l) => {
                for x in &l.elements {
                    self.walk(x, depth, offsets);
                }
            }
            Expr::Map(m) => {
                for entry in &m.entries {
                    self.entry(&entry.expr, depth, offsets);
                }
            }
            Expr::Struct(s) => {
                for entry in &s.entries {
                    self.entry(&entry.expr, depth, offsets);
                }
            }
        }
    }

    fn entry(&mut self, e: &EntryExpr, depth: u32, offsets: &dyn Fn(u64) -> Option<u32>) {
        match e {
            EntryExpr::StructField(f) => self.walk(&f.value, depth, offsets),
            EntryExpr::MapEntry(m) => {
                self.walk(&m.key, depth, offsets);
                self.walk(&m.value, depth, offsets);
            }
        }
    }

    /// For `self.a.b…` (and `oldSelf.…`), checks that each field is declared by the schema.
    fn check_field(&mut self, e: &IdedExpr, offsets: &dyn Fn(u64) -> Option<u32>) {
        // Collect the chain from the root identifier.
        let mut fields = Vec::new();
        let mut cur = e;
        loop {
            match &cur.expr {
                Expr::Select(s) => {
                    fields.push((cur.id, s.field.as_str()));
                    cur = &s.operand;
                }
                Expr::Ident(root) if (root == "self" || root == "oldSelf") && !self.bound(root) => {
                    break;
                }
                _ => return,
            }
        }
        // Only the outermost select reports, so each chain is checked once.
        fields.reverse();
        let Some(&(last_id, _)) = fields.last() else {
            return;
        };
        if last_id != e.id {
            return;
        }
        let mut shape = self.shape;
        for (id, field) in fields {
            if shape.is_dynamic() || shape.preserve_unknown && shape.properties.is_empty() {
                return;
            }
            if let Some(ap) = shape.additional.as_deref()
                && shape.properties.is_empty()
            {
                shape = ap;
                continue;
            }
            if shape.ty != "object" {
                return;
            }
            let found = shape
                .properties
                .iter()
                .find(|(k, _)| escape(k).as_deref() == Some(field));
            match found {
                Some((_, p)) => shape = p,
                None if shape.embedded && matches!(field, "apiVersion" | "kind" | "metadata") => {
                    return;
                }
                None if self.shape_is_root(shape)
                    && matches!(field, "apiVersion" | "kind" | "metadata") =>
                {
                    return;
                }
                None => {
                    self.issue(offsets(id), format!("undefined field '{field}'"));
                    return;
                }
            }
        }
    }

    fn shape_is_root(&self, shape: &Shape) -> bool {
        std::ptr::eq(shape, self.shape)
    }
}

/// Whether the top of `expr` can be seen, without types, to be something other than a bool.
pub(crate) fn surely_not_bool(expr: &IdedExpr) -> bool {
    match &expr.expr {
        Expr::Literal(l) => !matches!(l, cel::common::ast::LiteralValue::Boolean(_)),
        Expr::List(_) | Expr::Map(_) => true,
        Expr::Call(c) => matches!(
            c.func_name.as_str(),
            "_+_" | "_-_" | "_*_" | "_/_" | "_%_" | "-_" | "size" | "string" | "int" | "double"
        ),
        _ => false,
    }
}

/// Whether the top of `expr` can be seen, without types, to be something other than a string.
pub(crate) fn surely_not_string(expr: &IdedExpr) -> bool {
    match &expr.expr {
        Expr::Literal(l) => !matches!(l, cel::common::ast::LiteralValue::String(_)),
        Expr::List(_) | Expr::Map(_) => true,
        Expr::Call(c) => matches!(
            c.func_name.as_str(),
            "_==_" | "_!=_" | "_<_" | "_<=_" | "_>_" | "_>=_" | "_&&_" | "_||_" | "!_" | "size"
        ),
        _ => false,
    }
}
