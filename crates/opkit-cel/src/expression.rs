//! Standalone CEL expressions over named JSON variables, such as admission webhooks'
//! `matchConditions` (variables `object`, `oldObject`, `request`) and admission policies'
//! validations, `messageExpression`s and `variables` (whose results later expressions see, so
//! a result can be taken back as JSON).
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

    fn execute(&self, variables: &[(&str, &Value)]) -> Result<Cel, String> {
        let n: u64 = variables.iter().map(|(_, v)| weight(v, self.splits)).sum();
        if estimate(self.size, self.depth, n) > PER_CALL_COST_LIMIT {
            return Err("operation cancelled: actual cost limit exceeded".into());
        }
        let mut ctx = Context::with_env(self.env.clone());
        for (name, value) in variables {
            ctx.add_variable_from_value(*name, to_cel(value, &Shape::default(), false));
        }
        self.program.execute(&ctx).map_err(|e| e.to_string())
    }

    /// Evaluates the expression with `variables` bound; it must give a bool.
    pub fn evaluate_bool(&self, variables: &[(&str, &Value)]) -> Result<bool, String> {
        match self.execute(variables)? {
            Cel::Bool(b) => Ok(b),
            _ => Err("expression must evaluate to bool".to_string()),
        }
    }

    /// Evaluates the expression with `variables` bound; it must give a string (as a
    /// `messageExpression` must).
    pub fn evaluate_string(&self, variables: &[(&str, &Value)]) -> Result<String, String> {
        match self.execute(variables)? {
            Cel::String(s) => Ok(s.to_string()),
            other => Err(format!(
                "expected messageExpression to evaluate to a string, got {}",
                type_name(&other)
            )),
        }
    }

    /// Evaluates the expression with `variables` bound and gives its result as JSON (bytes as
    /// base64, timestamps as RFC 3339, durations as seconds (`90s`); JSON has no type for either
    /// a function value or an opaque one is an error.
    pub fn evaluate_json(&self, variables: &[(&str, &Value)]) -> Result<Value, String> {
        to_json(&self.execute(variables)?)
    }
}

fn type_name(v: &Cel) -> &'static str {
    match v {
        Cel::List(_) => "list",
        Cel::Map(_) => "map",
        Cel::Function(..) => "function",
        Cel::Int(_) => "int",
        Cel::UInt(_) => "uint",
        Cel::Float(_) => "double",
        Cel::String(_) => "string",
        Cel::Bytes(_) => "bytes",
        Cel::Bool(_) => "bool",
        Cel::Duration(_) => "google.protobuf.Duration",
        Cel::Timestamp(_) => "google.protobuf.Timestamp",
        Cel::Opaque(_) | Cel::Struct(_) => "object",
        Cel::Null => "null_type",
    }
}

fn to_json(v: &Cel) -> Result<Value, String> {
    use base64::Engine as _;
    Ok(match v {
        Cel::Null => Value::Null,
        Cel::Bool(b) => Value::Bool(*b),
        Cel::Int(i) => Value::from(*i),
        Cel::UInt(u) => Value::from(*u),
        Cel::Float(f) => serde_json::Number::from_f64(*f)
            .map(Value::Number)
            .ok_or_else(|| format!("the result {f} is not representable in JSON"))?,
        Cel::String(s) => Value::String(s.to_string()),
        Cel::Bytes(b) => Value::String(base64::engine::general_purpose::STANDARD.encode(&**b)),
        Cel::Timestamp(t) => Value::String(t.to_rfc3339()),
        Cel::Duration(d) => Value::String(format!("{}s", d.num_milliseconds() as f64 / 1000.0)),
        Cel::List(items) => Value::Array(items.iter().map(to_json).collect::<Result<_, _>>()?),
        Cel::Map(m) => {
            let mut out = serde_json::Map::new();
            for (k, v) in m.map.iter() {
                let key = match k {
                    cel::objects::Key::String(s) => s.to_string(),
                    cel::objects::Key::Int(i) => i.to_string(),
                    cel::objects::Key::Uint(u) => u.to_string(),
                    cel::objects::Key::Bool(b) => b.to_string(),
                };
                out.insert(key, to_json(v)?);
            }
            Value::Object(out)
        }
        other => {
            return Err(format!(
                "a result of type {} cannot be used as a value",
                type_name(other)
            ));
        }
    })
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

    #[test]
    fn strings_and_json_results_are_taken_back() {
        let obj = json!({"metadata": {"name": "a"}, "data": {"k": "v"}});
        let e = Expression::compile("'name ' + object.metadata.name", &["object"]).unwrap();
        assert_eq!(e.evaluate_string(&[("object", &obj)]), Ok("name a".into()));
        let n = Expression::compile("size(object.data)", &["object"]).unwrap();
        assert!(
            n.evaluate_string(&[("object", &obj)])
                .unwrap_err()
                .contains("got int")
        );
        assert_eq!(n.evaluate_json(&[("object", &obj)]), Ok(json!(1)));
        let m = Expression::compile("{'x': [object.data.k, 2]}", &["object"]).unwrap();
        assert_eq!(
            m.evaluate_json(&[("object", &obj)]),
            Ok(json!({"x": ["v", 2]}))
        );
    }
}
