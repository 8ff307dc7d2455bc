//! Evaluating the compiled rules against an object (and its old version on update).
//!
//! The walk mirrors upstream's `Validator.validate`: rules of a node run with `self` bound to the
//! node's value; the walk then descends into `additionalProperties` values and properties (old
//! values correlated by key) and list items (old items correlated only for `x-kubernetes-list-type:
//! map`, by the map keys). Null values are not validated. A rule that mentions `oldSelf` runs only
//! when there is an old value at that place, unless `optionalOldSelf` is set, in which case
//! `oldSelf` is an optional (`optional.none()` on create).
//!
//! **Bounding the work.** cel-go meters every evaluation; cel-rust cannot be interrupted. Instead,
//! before running a rule we compute an upper bound of its work: `nodes × (n + 1)^depth`, where
//! `nodes` is the size of the expression, `depth` its comprehension nesting and `n` the number of
//! values in `self` and `oldSelf` (plus their string lengths when the rule splits strings, which
//! makes lists as long as the string). Literal-only loops are bounded by their own size, covered
//! by `nodes`. A rule over [`crate::PER_CALL_COST_LIMIT`] is not run and reported with upstream's
//! "call cost exceeds limit" message; all rules of one request share
//! [`crate::RUNTIME_COST_BUDGET`], after which validation stops with upstream's "running out of
//! cost budget" error. The bound is conservative: it never under-counts loops over data, so a
//! request can never make the server loop for long, at the price of refusing some rules with deep
//! nesting over large objects that upstream's finer metering would allow.

use std::sync::Arc;

use cel::objects::OptionalValue;
use cel::{Context, ExecutionError, Value as Cel};
use serde_json::Value;

use crate::compile::{Node, Reason, Rule, Validator};
use crate::convert::{to_cel, weight};
use crate::{FieldError, FieldErrorKind, PER_CALL_COST_LIMIT, RUNTIME_COST_BUDGET};

/// The longest `messageExpression` result used as a message (upstream's 5 KiB).
const MAX_MESSAGE_EXPRESSION_BYTES: usize = 5 * 1024;

/// Upstream runs no rules when structural validation found an error of these kinds (wrong type,
/// enum, required, too long, too many): the rules could not make sense of the value. Returns the
/// single error upstream reports instead, or `None` when rules should run.
pub fn blocking_error(errors: &[FieldError]) -> Option<FieldError> {
    errors
        .iter()
        .any(|e| {
            matches!(
                e.kind,
                FieldErrorKind::NotSupported
                    | FieldErrorKind::Required
                    | FieldErrorKind::TooLong
                    | FieldErrorKind::TooMany
                    | FieldErrorKind::TypeInvalid
            )
        })
        .then(|| {
            FieldError::invalid(
                "<nil>",
                Value::from("null"),
                "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation",
            )
        })
}

struct Walk<'a> {
    env: &'a Arc<cel::Env>,
    budget: u64,
    errors: Vec<FieldError>,
}

fn child(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_string()
    } else {
        format!("{path}.{name}")
    }
}

fn shown(path: &str) -> String {
    if path.is_empty() {
        "<nil>".to_string()
    } else {
        path.to_string()
    }
}

impl Validator {
    /// Evaluates every rule against `object` (a whole custom resource); `old` is the stored
    /// object on update (enables transition rules). Returns the failures in upstream's form, e.g.
    /// `spec: Invalid value: "object": <message>` (the value shown is the schema type of the
    /// node, as upstream does). Never panics; evaluation errors become field errors.
    pub fn validate(&self, object: &Value, old: Option<&Value>) -> Vec<FieldError> {
        let mut w = Walk {
            env: &self.env,
            budget: RUNTIME_COST_BUDGET,
            errors: Vec::new(),
        };
        w.node(&self.root, "", object, old);
        w.errors
    }
}

impl Walk<'_> {
    /// Returns `false` when validation must stop (budget exhausted).
    fn node(&mut self, node: &Node, path: &str, obj: &Value, old: Option<&Value>) -> bool {
        if !node.active || obj.is_null() {
            return true;
        }
        let old = old.filter(|o| !o.is_null());
        if !node.rules.is_empty() && !self.rules(node, path, obj, old) {
            return false;
        }
        match obj {
            Value::Array(items) => {
                let Some(inode) = node.items.as_deref() else {
                    return true;
                };
                let old_items = old.and_then(Value::as_array);
                let keys = &node.shape.map_keys;
                let is_map_list = node.shape.list_type.as_deref() == Some("map");
                for (i, item) in items.iter().enumerate() {
                    let old_item = match (is_map_list, old_items) {
                        (true, Some(olds)) => olds.iter().find(|o| same_keys(o, item, keys)),
                        _ => None,
                    };
                    if !self.node(inode, &format!("{path}[{i}]"), item, old_item) {
                        return false;
                    }
                }
            }
            Value::Object(map) => {
                let old_map = old.and_then(Value::as_object);
                if let Some(anode) = node.additional.as_deref() {
                    for (k, v) in map {
                        let o = old_map.and_then(|m| m.get(k));
                        if !self.node(anode, &format!("{path}[{k}]"), v, o) {
                            return false;
                        }
                    }
                }
                for (k, v) in map {
                    if let Some(pnode) = node.properties.get(k) {
                        let o = old_map.and_then(|m| m.get(k));
                        if !self.node(pnode, &child(path, k), v, o) {
                            return false;
                        }
                    }
                }
            }
            _ => {}
        }
        true
    }

    fn rules(&mut self, node: &Node, path: &str, obj: &Value, old: Option<&Value>) -> bool {
        let ty = Value::from(node.shape.ty.clone());
        let field = shown(path);
        let self_val = to_cel(obj, &node.shape, node.resource_root);
        let old_val = old.map(|o| to_cel(o, &node.shape, node.resource_root));
        let mut weights: [Option<u64>; 2] = [None, None];
        for rule in &node.rules {
            if rule.facts.uses_old_self && old.is_none() && !rule.optional_old_self {
                continue;
            }
            let splits = rule.facts.splits
                || rule
                    .message_expression
                    .as_ref()
                    .is_some_and(|(_, _, f)| f.splits);
            let n = *weights[usize::from(splits)]
                .get_or_insert_with(|| weight(obj, splits) + old.map_or(0, |o| weight(o, splits)));
            let cost = estimate(rule.facts.size, rule.facts.depth, n);
            if cost > PER_CALL_COST_LIMIT {
                self.errors.push(FieldError::invalid(
                    field.clone(),
                    ty.clone(),
                    format!(
                        "'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: {}",
                        rule_error_string(rule)
                    ),
                ));
                return false;
            }
            if cost > self.budget {
                self.errors.push(FieldError::invalid(
                    field.clone(),
                    ty.clone(),
                    "validation failed due to running out of cost budget, no further validation rules will be run",
                ));
                return false;
            }
            self.budget -= cost;

            let mut ctx = Context::with_env(self.env.clone());
            ctx.add_variable_from_value("self", self_val.clone());
            if rule.facts.uses_old_self {
                let o = if rule.optional_old_self {
                    Cel::Opaque(Arc::new(match &old_val {
                        Some(v) => OptionalValue::of(v.clone()),
                        None => OptionalValue::none(),
                    }))
                } else {
                    old_val.clone().unwrap_or(Cel::Null)
                };
                ctx.add_variable_from_value("oldSelf", o);
            }
            match rule.program.execute(&ctx) {
                Ok(Cel::Bool(true)) => continue,
                Ok(Cel::Bool(false)) => {}
                Ok(_) => {
                    self.errors.push(FieldError::invalid(
                        field.clone(),
                        ty.clone(),
                        format!(
                            "'no such overload': call arguments did not match a supported operator, function or macro signature for rule: {}",
                            rule_error_string(rule)
                        ),
                    ));
                    continue;
                }
                Err(e) => {
                    self.errors.push(FieldError::invalid(
                        field.clone(),
                        ty.clone(),
                        runtime_error(&e, rule),
                    ));
                    continue;
                }
            }
            let target = match &rule.field_path {
                Some(fp) => child(path, fp),
                None => field.clone(),
            };
            let detail = rule
                .message_expression
                .as_ref()
                .and_then(|(_, program, facts)| {
                    // The message expression sees the same oldSelf as a non-optional rule.
                    let mut ctx = Context::with_env(self.env.clone());
                    ctx.add_variable_from_value("self", self_val.clone());
                    if facts.uses_old_self {
                        ctx.add_variable_from_value(
                            "oldSelf",
                            old_val.clone().unwrap_or(Cel::Null),
                        );
                    }
                    match program.execute(&ctx) {
                        Ok(Cel::String(s)) => {
                            let t = s.trim();
                            (!t.is_empty()
                                && !t.contains('\n')
                                && t.len() <= MAX_MESSAGE_EXPRESSION_BYTES)
                                .then(|| t.to_string())
                        }
                        _ => None,
                    }
                })
                .unwrap_or_else(|| message_or_default(rule));
            self.errors.push(match rule.reason {
                Some(Reason::Forbidden) => FieldError::forbidden(target, detail),
                Some(Reason::Required) => FieldError::required(target, detail),
                Some(Reason::Duplicate) => FieldError::duplicate(target, ty.clone()),
                Some(Reason::Invalid) | None => FieldError::invalid(target, ty.clone(), detail),
            });
        }
        true
    }
}

/// Whether two map-list items have the same values for all the list's keys.
fn same_keys(a: &Value, b: &Value, keys: &[String]) -> bool {
    !keys.is_empty() && keys.iter().all(|k| a.get(k) == b.get(k))
}

/// The upper bound of a rule's work (see the module docs).
pub(crate) fn estimate(size: u64, depth: u32, n: u64) -> u64 {
    let mut cost = size.max(1);
    for _ in 0..depth {
        cost = cost.saturating_mul(n.saturating_add(1));
    }
    cost
}

/// Upstream's `ruleErrorString`: the message if set, else the rule.
fn rule_error_string(rule: &Rule) -> String {
    let m = rule.message.trim();
    if m.is_empty() {
        rule.source.trim().to_string()
    } else {
        m.to_string()
    }
}

/// Upstream's `ruleMessageOrDefault`.
fn message_or_default(rule: &Rule) -> String {
    if rule.message.is_empty() {
        format!("failed rule: {}", rule_error_string(rule))
    } else {
        rule.message.trim().to_string()
    }
}

/// A runtime error in cel-go's words, with upstream's framing.
fn runtime_error(e: &ExecutionError, rule: &Rule) -> String {
    let text = match e {
        ExecutionError::NoSuchOverload(_)
        | ExecutionError::UnsupportedBinaryOperator(..)
        | ExecutionError::ValuesNotComparable(..)
        | ExecutionError::UnexpectedType { .. }
        | ExecutionError::UnsupportedTargetType { .. }
        | ExecutionError::NotSupportedAsMethod { .. }
        | ExecutionError::UnsupportedIndex(..) => {
            return format!(
                "'no such overload': call arguments did not match a supported operator, function or macro signature for rule: {}",
                rule_error_string(rule)
            );
        }
        ExecutionError::NoSuchKey(k) => format!("no such key: {k}"),
        ExecutionError::IndexOutOfBounds(v) => match v {
            Cel::Int(i) => format!("index out of bounds: {i}"),
            Cel::UInt(i) => format!("index out of bounds: {i}"),
            other => format!("index out of bounds: {other:?}"),
        },
        ExecutionError::DivisionByZero(_) => "division by zero".to_string(),
        ExecutionError::RemainderByZero(_) => "modulus by zero".to_string(),
        ExecutionError::Overflow(..) => "integer overflow".to_string(),
        ExecutionError::UndeclaredReference(name) => {
            format!("no such attribute: {name}")
        }
        ExecutionError::FunctionError { message, .. } => message.clone(),
        other => {
            let s = other.to_string();
            let mut c = s.chars();
            match c.next() {
                Some(f) => f.to_lowercase().collect::<String>() + c.as_str(),
                None => s,
            }
        }
    };
    format!("{text} evaluating rule: {}", rule_error_string(rule))
}
