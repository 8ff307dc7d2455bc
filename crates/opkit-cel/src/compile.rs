//! Compiling the rules of a schema once, when the CRD is written.
//!
//! Every rule is parsed and checked up front so a CRD with a broken rule is refused (422) instead
//! of failing every later write, and so requests only evaluate ready programs. Errors carry
//! upstream's paths (`<schema path>.properties[spec].x-kubernetes-validations[0].rule`) and its
//! rendering of the offending rule (Go's `%#v` of `apiextensions.ValidationRule`).

use std::collections::BTreeMap;
use std::sync::Arc;

use cel::{Context, Program};
use serde_json::Value;

use crate::FieldError;
use crate::check::{self, Facts};
use crate::convert::Shape;
use crate::fieldpath::valid_field_path;

/// The `reason` of a rule, i.e. the kind of field error its failure produces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reason {
    Invalid,
    Forbidden,
    Required,
    Duplicate,
}

/// One compiled `x-kubernetes-validations` entry.
pub(crate) struct Rule {
    pub source: String,
    pub message: String,
    pub message_expression: Option<(String, Program, Facts)>,
    pub program: Program,
    pub facts: Facts,
    pub optional_old_self: bool,
    pub reason: Option<Reason>,
    /// The normalized `fieldPath`, relative to the node.
    pub field_path: Option<String>,
}

/// A schema node with its compiled rules and the nodes below it.
pub(crate) struct Node {
    pub shape: Arc<Shape>,
    pub rules: Vec<Rule>,
    pub properties: BTreeMap<String, Node>,
    pub items: Option<Box<Node>>,
    pub additional: Option<Box<Node>>,
    /// Whether this node or a descendant has rules (others are skipped when validating).
    pub active: bool,
    /// The root of a resource (the custom resource or an embedded resource).
    pub resource_root: bool,
}

/// The compiled `x-kubernetes-validations` rules of one CRD version's schema.
///
/// Build it with [`Validator::compile`] when the CRD is created or updated, keep it next to the
/// [`opkit_schema::Schema`], and call [`Validator::validate`] on every write.
pub struct Validator {
    pub(crate) root: Node,
    pub(crate) env: Arc<cel::Env>,
}

impl std::fmt::Debug for Validator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Validator")
            .field("rules", &self.rule_count())
            .finish()
    }
}

impl Validator {
    /// Compiles every rule of `schema` (at any depth: properties, items, additionalProperties).
    /// `path_prefix` is where the schema sits in the CRD, e.g.
    /// `spec.validation.openAPIV3Schema`. Returns the problems as upstream reports them at CRD
    /// validation: `fieldPath` errors first (upstream skips compiling when they exist), otherwise
    /// compile errors of `rule` and `messageExpression`, and transition rules placed where old
    /// values cannot be correlated.
    pub fn compile(
        schema: &opkit_schema::Schema,
        path_prefix: &str,
    ) -> Result<Validator, Vec<FieldError>> {
        let env = crate::environment()
            .map_err(|e| vec![FieldError::invalid(path_prefix, Value::Null, e.to_string())])?;
        let mut c = Compiler {
            env: &env,
            path_errors: Vec::new(),
            errors: Vec::new(),
        };
        let shape = Arc::new(Shape::from_schema(schema.root()));
        let root = c.node(schema.root(), shape, path_prefix, None, true);
        if !c.path_errors.is_empty() {
            return Err(c.path_errors);
        }
        if !c.errors.is_empty() {
            return Err(c.errors);
        }
        Ok(Validator { root, env })
    }

    /// Compiles without reporting errors: rules that do not compile are left out. For CRDs that
    /// were accepted before (stored ones), whose rules must not stop them from being served.
    pub fn compile_lenient(schema: &opkit_schema::Schema) -> Option<Validator> {
        let env = crate::environment().ok()?;
        let mut c = Compiler {
            env: &env,
            path_errors: Vec::new(),
            errors: Vec::new(),
        };
        let shape = Arc::new(Shape::from_schema(schema.root()));
        let root = c.node(schema.root(), shape, "", None, true);
        Some(Validator { root, env })
    }

    /// Whether the schema has no rules at all (validation is then a no-op).
    pub fn is_empty(&self) -> bool {
        !self.root.active
    }

    /// How many rules were compiled.
    pub fn rule_count(&self) -> usize {
        fn count(n: &Node) -> usize {
            n.rules.len()
                + n.properties.values().map(count).sum::<usize>()
                + n.items.as_deref().map_or(0, count)
                + n.additional.as_deref().map_or(0, count)
        }
        count(&self.root)
    }
}

struct Compiler<'e> {
    env: &'e Arc<cel::Env>,
    path_errors: Vec<FieldError>,
    errors: Vec<FieldError>,
}

fn child(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_string()
    } else {
        format!("{path}.{name}")
    }
}

/// Go's `%#v` of an `apiextensions.ValidationRule`, as upstream shows the offending rule.
fn go_rule(r: &serde_json::Map<String, Value>) -> String {
    let s = |k: &str| opkit_schema::go_quote(r.get(k).and_then(Value::as_str).unwrap_or(""));
    let reason = if r.get("reason").is_some_and(|v| !v.is_null()) {
        "(*apiextensions.FieldValueErrorReason)(0xc000010000)"
    } else {
        "(*apiextensions.FieldValueErrorReason)(nil)"
    };
    let optional = if r.get("optionalOldSelf").is_some_and(|v| !v.is_null()) {
        "(*bool)(0xc000010008)"
    } else {
        "(*bool)(nil)"
    };
    format!(
        "apiextensions.ValidationRule{{Rule:{}, Message:{}, MessageExpression:{}, Reason:{reason}, FieldPath:{}, OptionalOldSelf:{optional}}}",
        s("rule"),
        s("message"),
        s("messageExpression"),
        s("fieldPath"),
    )
}

/// An `Invalid value: <rule>: <detail>` error (the value is a Go struct, not JSON).
fn invalid_rule(
    field: String,
    rule: &serde_json::Map<String, Value>,
    detail: String,
) -> FieldError {
    FieldError {
        kind: crate::FieldErrorKind::Invalid,
        field,
        value: None,
        detail: format!("{}: {detail}", go_rule(rule)),
    }
}

/// Line and column (1-based) of a byte offset.
fn line_col(src: &str, offset: usize) -> (usize, usize) {
    // Offsets come from the parser; never slice inside a character.
    let before = src.get(..offset.min(src.len())).unwrap_or(src);
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

/// cel-go's rendering of one issue: location, message, the source line and a caret.
fn render_issue(src: &str, line: usize, col: usize, msg: &str) -> String {
    let snippet = src.lines().nth(line.saturating_sub(1)).unwrap_or("");
    format!(
        "ERROR: <input>:{line}:{col}: {msg}\n | {snippet}\n | {}^",
        ".".repeat(col.saturating_sub(1))
    )
}

/// Parses and checks one expression; returns the program and its facts, or cel-go-style issues.
pub(crate) fn compile_expr(
    env: &Arc<cel::Env>,
    src: &str,
    shape: &Shape,
    has_old_self: bool,
    variables: &[&str],
) -> Result<(Program, Facts), String> {
    let program = env.compile(src).map_err(|errs| {
        errs.errors
            .iter()
            .map(|e| {
                render_issue(
                    src,
                    e.pos.0.max(1) as usize,
                    e.pos.1.max(1) as usize,
                    &e.msg,
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    })?;
    let declared = |name: &str| declared_in(env, name);
    let info = program.source_info();
    let offsets = |id: u64| info.offset_for(id).map(|(start, _)| start);
    let facts = check::check(
        program.expression(),
        &offsets,
        shape,
        has_old_self,
        variables,
        &declared,
    );
    if !facts.issues.is_empty() {
        return Err(facts
            .issues
            .iter()
            .map(|i| {
                let (line, col) = line_col(src, i.offset.unwrap_or(0) as usize);
                render_issue(src, line, col, &i.message)
            })
            .collect::<Vec<_>>()
            .join("\n"));
    }
    Ok((program, facts))
}

/// Whether `name` is a function of the environment: a context refuses to shadow those.
fn declared_in(env: &Arc<cel::Env>, name: &str) -> bool {
    let mut ctx = Context::with_env(env.clone());
    ctx.add_function(name, || 0i64).is_err()
}

impl Compiler<'_> {
    fn node(
        &mut self,
        s: &opkit_schema::SchemaNode,
        shape: Arc<Shape>,
        path: &str,
        uncorrelatable: Option<&str>,
        resource_root: bool,
    ) -> Node {
        let mut rules = Vec::new();
        for (i, raw) in s.validation_rules().iter().enumerate() {
            let rpath = format!("{}[{i}]", child(path, "x-kubernetes-validations"));
            if let Some(rule) = self.rule(raw, &shape, &rpath, uncorrelatable) {
                rules.push(rule);
            }
        }
        let mut properties = BTreeMap::new();
        for (name, p) in s.properties() {
            let pshape = Arc::new(shape.properties.get(name).cloned().unwrap_or_default());
            let n = self.node(
                p,
                pshape,
                &format!("{}[{name}]", child(path, "properties")),
                uncorrelatable,
                p.is_embedded_resource(),
            );
            if n.active {
                properties.insert(name.clone(), n);
            }
        }
        let items = s.items().map(|it| {
            let ishape = Arc::new(shape.items.as_deref().cloned().unwrap_or_default());
            let ipath = child(path, "items");
            // Only map-lists correlate old items with new ones.
            let unc = if s.list_type() == Some("map") {
                uncorrelatable.map(str::to_string)
            } else {
                uncorrelatable
                    .map(str::to_string)
                    .or_else(|| Some(path.to_string()))
            };
            Box::new(self.node(
                it,
                ishape,
                &ipath,
                unc.as_deref(),
                it.is_embedded_resource(),
            ))
        });
        let additional = s.additional_properties_schema().map(|ap| {
            let ashape = Arc::new(shape.additional.as_deref().cloned().unwrap_or_default());
            Box::new(self.node(
                ap,
                ashape,
                &child(path, "additionalProperties"),
                uncorrelatable,
                ap.is_embedded_resource(),
            ))
        });
        let active = !rules.is_empty()
            || !properties.is_empty()
            || items.as_ref().is_some_and(|n| n.active)
            || additional.as_ref().is_some_and(|n| n.active);
        Node {
            shape,
            rules,
            properties,
            items: items.filter(|n| n.active),
            additional: additional.filter(|n| n.active),
            active,
            resource_root,
        }
    }

    fn rule(
        &mut self,
        raw: &Value,
        shape: &Shape,
        rpath: &str,
        uncorrelatable: Option<&str>,
    ) -> Option<Rule> {
        let r = raw.as_object()?;
        let get = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("");
        let source = get("rule");
        if source.trim().is_empty() {
            return None; // reported by the structural checks
        }
        let field_path = match get("fieldPath") {
            "" => None,
            fp => match valid_field_path(fp, shape) {
                Ok(p) => Some(p),
                Err(e) => {
                    self.path_errors.push(FieldError::invalid(
                        child(rpath, "fieldPath"),
                        Value::from(fp),
                        format!("fieldPath must be a valid path: {e}"),
                    ));
                    None
                }
            },
        };
        let optional_old_self = r.get("optionalOldSelf").and_then(Value::as_bool) == Some(true);
        let compiled = match compile_expr(self.env, source, shape, true, &[]) {
            Ok((program, facts)) => {
                if check::surely_not_bool(program.expression()) {
                    self.errors.push(invalid_rule(
                        child(rpath, "rule"),
                        r,
                        "cel expression must evaluate to a bool".into(),
                    ));
                    None
                } else {
                    if facts.uses_old_self
                        && let Some(unc) = uncorrelatable
                    {
                        self.errors.push(FieldError::invalid(
                            child(rpath, "rule"),
                            Value::from(source),
                            format!(
                                "oldSelf cannot be used on the uncorrelatable portion of the schema within {unc}"
                            ),
                        ));
                    }
                    Some((program, facts))
                }
            }
            Err(issues) => {
                self.errors.push(invalid_rule(
                    child(rpath, "rule"),
                    r,
                    format!("compilation failed: {issues}"),
                ));
                None
            }
        };
        let message_expression = match get("messageExpression") {
            "" => None,
            src if src.trim().is_empty() => None,
            src => match compile_expr(self.env, src, shape, true, &[]) {
                Ok((p, f)) if !check::surely_not_string(p.expression()) => {
                    Some((src.to_string(), p, f))
                }
                Ok(_) => {
                    self.errors.push(invalid_rule(
                        child(rpath, "messageExpression"),
                        r,
                        "messageExpression must evaluate to a string".into(),
                    ));
                    None
                }
                Err(issues) => {
                    self.errors.push(invalid_rule(
                        child(rpath, "messageExpression"),
                        r,
                        format!("messageExpression compilation failed: {issues}"),
                    ));
                    None
                }
            },
        };
        let reason = match r.get("reason").and_then(Value::as_str) {
            Some("FieldValueForbidden") => Some(Reason::Forbidden),
            Some("FieldValueRequired") => Some(Reason::Required),
            Some("FieldValueDuplicate") => Some(Reason::Duplicate),
            Some(_) => Some(Reason::Invalid),
            None => None,
        };
        let (program, facts) = compiled?;
        Some(Rule {
            source: source.to_string(),
            message: get("message").to_string(),
            message_expression,
            program,
            facts,
            optional_old_self,
            reason,
            field_path,
        })
    }
}
