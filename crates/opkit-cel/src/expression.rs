//! Standalone CEL expressions over named JSON variables, such as admission webhooks'
//! `matchConditions` (variables `object`, `oldObject`, `request`).
//!
//! The same environment, static checks and work bound as CRD rules, without a schema: the
//! variables are bound as their JSON is (untyped), as upstream binds them to unstructured
//! objects.

use std::sync::Arc;

use cel::{Context, Program, Value as Cel};
use serde_json::Value;

use crate::PER_CALL_COST_LIMIT;
use crate::compile::compile_expr;
use crate::convert::{Shape, to_cel, weight};
use crate::eval::estimate;

/// A compiled expression.
pub struct Expression {
    program: Program,
    env: Arc<cel::Env>,
    size: u64,
    depth: u32,
    splits: bool,
}

impl std::fmt::Debug for Expression {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Expression")
            .field("size", &self.size)
            .finish()
    }
}

impl Expression {
    /// Compiles `source`, in which `variables` (and nothing else) are declared. The error is
    /// cel-go's compile error text (`ERROR: <input>:1:1: undeclared reference to 'x' ...`).
    pub fn compile(source: &str, variables: &[&str]) -> Result<Expression, String> {
        let env = crate::environment().map_err(|e| e.to_string())?;
        let (program, facts) = compile_expr(&env, source, &Shape::default(), false, variables)?;
        Ok(Expression {
            program,
            env,
            size: facts.size,
            depth: facts.depth,
            splits: facts.splits,
        })
    }

    /// Evaluates the expression with `variables` bound; it must give a bool.
    pub fn evaluate_bool(&self, variables: &[(&str, &Value)]) -> Result<bool, String> {
        let n: u64 = variables.iter().map(|(_, v)| weight(v, self.splits)).sum();
        if estimate(self.size, self.depth, n) > PER_CALL_COST_LIMIT {
            return Err("operation cancelled: actual cost limit exceeded".into());
        }
        let mut ctx = Context::with_env(self.env.clone());
        for (name, value) in variables {
            ctx.add_variable_from_value(*name, to_cel(value, &Shape::default(), false));
        }
        match self.program.execute(&ctx) {
            Ok(Cel::Bool(b)) => Ok(b),
            Ok(_) => Err("expression must evaluate to bool".to_string()),
            Err(e) => Err(e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn expressions_see_their_variables_and_nothing_else() {
        let e = Expression::compile("object.metadata.name != 'skip'", &["object"]).unwrap();
        let obj = json!({"metadata": {"name": "skip"}});
        assert_eq!(e.evaluate_bool(&[("object", &obj)]), Ok(false));
        let other = json!({"metadata": {"name": "keep"}});
        assert_eq!(e.evaluate_bool(&[("object", &other)]), Ok(true));
        let undeclared = Expression::compile("authorizer.path('x')", &["object"]).unwrap_err();
        assert!(
            undeclared.contains("undeclared reference to 'authorizer'"),
            "{undeclared}"
        );
        assert!(Expression::compile("object.", &["object"]).is_err());
    }
}
