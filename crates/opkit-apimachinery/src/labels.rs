//! Label selectors: the `labelSelector` query parameter and
//! `metav1.LabelSelector` objects.
//!
//! LIST and WATCH filter objects by their labels (DESIGN item 4), and
//! workloads pick their pods with `spec.selector`. Both must accept exactly
//! what kube-apiserver accepts and fail with its messages, because kubectl
//! and client libraries show them to users. The parser mirrors upstream's
//! grammar (`pkg/labels/selector.go`): `=`, `==`, `!=`, `in (…)`,
//! `notin (…)`, `key`, `!key`, `key > n`, `key < n`, comma-separated
//! requirements that must all hold, whitespace anywhere between tokens.
//! Keys and values are validated with [`crate::validation`].
//!
//! Parsing allocates; matching does not: a [`LabelSelector`] holds its
//! requirements sorted by key and looks each key up in the object's label
//! map, so filtering a large LIST costs one map lookup per requirement.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde_json::{Map, Value};

use crate::gofmt;
use crate::validation::{BadValue, ErrorList, FieldError, is_qualified_name, is_valid_label_value};

/// How a requirement relates a label to its values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operator {
    /// `key=value`
    Equals,
    /// `key==value`
    DoubleEquals,
    /// `key!=value` (also true when the label is absent)
    NotEquals,
    /// `key in (a,b)`
    In,
    /// `key notin (a,b)` (also true when the label is absent)
    NotIn,
    /// `key`
    Exists,
    /// `!key`
    DoesNotExist,
    /// `key>n` (integer comparison)
    GreaterThan,
    /// `key<n` (integer comparison)
    LessThan,
}

impl Operator {
    /// Upstream's name of the operator (`selection.Operator`).
    pub fn as_str(self) -> &'static str {
        match self {
            Operator::Equals => "=",
            Operator::DoubleEquals => "==",
            Operator::NotEquals => "!=",
            Operator::In => "in",
            Operator::NotIn => "notin",
            Operator::Exists => "exists",
            Operator::DoesNotExist => "!",
            Operator::GreaterThan => "gt",
            Operator::LessThan => "lt",
        }
    }
}

const BINARY_OPERATORS: &str = "in, notin, =, ==, !=, gt, lt";

/// Why a selector was rejected. `Display` is upstream's message.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SelectorError {
    /// A token appeared where the grammar wants something else.
    #[error("found '{found}', expected: {expected}")]
    Unexpected {
        /// The literal text of the token found (empty at the end).
        found: String,
        /// What the grammar expected there.
        expected: &'static str,
    },
    /// `in`/`notin` not followed by `(` (upstream's message has no comma).
    #[error("found '{found}' expected: '('")]
    ExpectedOpenParen {
        /// The literal text found instead.
        found: String,
    },
    /// A requirement failed; wraps the reason.
    #[error("unable to parse requirement: {0}")]
    Requirement(Box<SelectorError>),
    /// Key, operator or values failed validation.
    #[error("{0}")]
    Invalid(ErrorList),
    /// A `metav1.LabelSelector` used an unknown `matchExpressions` operator.
    #[error("{} is not a valid label selector operator", gofmt::go_quote(.0))]
    UnknownOperator(String),
    /// A `metav1.LabelSelector` was not shaped like one.
    #[error("invalid label selector: {0}")]
    Malformed(String),
}

impl SelectorError {
    /// The `Status` reason the API server answers with (`BadRequest`).
    pub fn reason(&self) -> &'static str {
        "BadRequest"
    }

    /// The HTTP status code the API server answers with (400).
    pub fn code(&self) -> u16 {
        400
    }
}

/// The operator of a `metav1.LabelSelector`'s `matchExpressions` entry:
/// `In`, `NotIn`, `Exists` or `DoesNotExist`.
fn expression_operator(name: &str) -> Result<Operator, SelectorError> {
    Ok(match name {
        "In" => Operator::In,
        "NotIn" => Operator::NotIn,
        "Exists" => Operator::Exists,
        "DoesNotExist" => Operator::DoesNotExist,
        other => return Err(SelectorError::UnknownOperator(other.to_owned())),
    })
}

/// Converts a `metav1.LabelSelector` JSON value; see
/// [`LabelSelector::from_label_selector_json`].
pub fn from_label_selector_json(v: &Value) -> Result<LabelSelector, SelectorError> {
    LabelSelector::from_label_selector_json(v)
}

/// One requirement: a key, an operator and (for some operators) values.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Requirement {
    key: String,
    operator: Operator,
    values: Vec<String>,
}

impl Requirement {
    /// Builds a validated requirement like upstream's `NewRequirement`:
    /// the key must be a qualified name; `in`/`notin` need values; `=`,
    /// `==`, `!=` exactly one; exists/does-not-exist none; `gt`/`lt` one
    /// integer; every value must be a valid label value.
    pub fn new(
        key: impl Into<String>,
        operator: Operator,
        values: Vec<String>,
    ) -> Result<Self, SelectorError> {
        let key = key.into();
        let mut errs = ErrorList::default();
        let key_msgs = is_qualified_name(&key);
        if !key_msgs.is_empty() {
            errs.push(FieldError::invalid(
                "key",
                BadValue::Str(key.clone()),
                key_msgs.join("; "),
            ));
        }
        let values_json = || {
            BadValue::Json(Value::Array(
                values.iter().cloned().map(Value::String).collect(),
            ))
        };
        match operator {
            Operator::In | Operator::NotIn if values.is_empty() => errs.push(FieldError::invalid(
                "values",
                values_json(),
                "for 'in', 'notin' operators, values set can't be empty",
            )),
            Operator::Equals | Operator::DoubleEquals | Operator::NotEquals
                if values.len() != 1 =>
            {
                errs.push(FieldError::invalid(
                    "values",
                    values_json(),
                    "exact-match compatibility requires one single value",
                ))
            }
            Operator::Exists | Operator::DoesNotExist if !values.is_empty() => {
                errs.push(FieldError::invalid(
                    "values",
                    values_json(),
                    "values set must be empty for exists and does not exist",
                ))
            }
            Operator::GreaterThan | Operator::LessThan => {
                if values.len() != 1 {
                    errs.push(FieldError::invalid(
                        "values",
                        values_json(),
                        "for 'Gt', 'Lt' operators, exactly one value is required",
                    ));
                }
                for (i, v) in values.iter().enumerate() {
                    if parse_go_int(v).is_none() {
                        errs.push(FieldError::invalid(
                            format!("values[{i}]"),
                            BadValue::Str(v.clone()),
                            "for 'Gt', 'Lt' operators, the value must be an integer",
                        ));
                    }
                }
            }
            _ => {}
        }
        for (i, v) in values.iter().enumerate() {
            let msgs = is_valid_label_value(v);
            if !msgs.is_empty() {
                errs.push(FieldError::invalid(
                    format!("values[{i}][{key}]"),
                    BadValue::Str(v.clone()),
                    msgs.join("; "),
                ));
            }
        }
        if errs.is_empty() {
            Ok(Requirement {
                key,
                operator,
                values,
            })
        } else {
            Err(SelectorError::Invalid(errs))
        }
    }

    /// The label key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The operator.
    pub fn operator(&self) -> Operator {
        self.operator
    }

    /// The values, in the order given (sorted and deduplicated when parsed).
    pub fn values(&self) -> &[String] {
        &self.values
    }

    fn has_value(&self, value: &str) -> bool {
        self.values.iter().any(|v| v == value)
    }

    /// Whether a label set satisfies this requirement; `lookup` returns a
    /// label's value. Absent labels satisfy `!=`, `notin` and `!key`.
    pub fn matches_with<'a>(&self, lookup: impl Fn(&str) -> Option<&'a str>) -> bool {
        match self.operator {
            Operator::In | Operator::Equals | Operator::DoubleEquals => {
                lookup(&self.key).is_some_and(|v| self.has_value(v))
            }
            Operator::NotIn | Operator::NotEquals => {
                lookup(&self.key).is_none_or(|v| !self.has_value(v))
            }
            Operator::Exists => lookup(&self.key).is_some(),
            Operator::DoesNotExist => lookup(&self.key).is_none(),
            Operator::GreaterThan | Operator::LessThan => {
                let Some(have) = lookup(&self.key).and_then(parse_go_int) else {
                    return false;
                };
                let [want] = self.values.as_slice() else {
                    return false;
                };
                let Some(want) = parse_go_int(want) else {
                    return false;
                };
                if self.operator == Operator::GreaterThan {
                    have > want
                } else {
                    have < want
                }
            }
        }
    }
}

/// Go's `strconv.ParseInt(s, 10, 64)`: optional sign, decimal digits.
fn parse_go_int(s: &str) -> Option<i64> {
    s.parse().ok()
}

impl fmt::Display for Requirement {
    /// Upstream's canonical form: `!key`, `key`, `key=v`, `key in (a,b)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.operator == Operator::DoesNotExist {
            f.write_str("!")?;
        }
        f.write_str(&self.key)?;
        let op = match self.operator {
            Operator::Exists | Operator::DoesNotExist => return Ok(()),
            Operator::Equals => "=",
            Operator::DoubleEquals => "==",
            Operator::NotEquals => "!=",
            Operator::In => " in ",
            Operator::NotIn => " notin ",
            Operator::GreaterThan => ">",
            Operator::LessThan => "<",
        };
        f.write_str(op)?;
        let set = matches!(self.operator, Operator::In | Operator::NotIn);
        if set {
            f.write_str("(")?;
        }
        let mut sorted: Vec<&str> = self.values.iter().map(String::as_str).collect();
        sorted.sort_unstable();
        f.write_str(&sorted.join(","))?;
        if set {
            f.write_str(")")?;
        }
        Ok(())
    }
}

/// A parsed label selector: all requirements must hold.
///
/// The empty selector matches everything; [`LabelSelector::nothing`] (what a
/// `null` `metav1.LabelSelector` means) matches nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct LabelSelector {
    requirements: Vec<Requirement>,
    nothing: bool,
}

impl LabelSelector {
    /// The selector that matches every object.
    pub fn everything() -> Self {
        LabelSelector::default()
    }

    /// The selector that matches no object.
    pub fn nothing() -> Self {
        LabelSelector {
            requirements: Vec::new(),
            nothing: true,
        }
    }

    /// Builds a selector from requirements (sorted by key, as upstream).
    pub fn from_requirements(mut requirements: Vec<Requirement>) -> Self {
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        LabelSelector {
            requirements,
            nothing: false,
        }
    }

    /// Parses the `labelSelector` syntax, e.g. `app=web,tier in (fe,be),!legacy`.
    pub fn parse(s: &str) -> Result<Self, SelectorError> {
        let tokens = lex(s);
        let mut parser = Parser { tokens, pos: 0 };
        let requirements = parser.parse()?;
        Ok(LabelSelector::from_requirements(requirements))
    }

    /// Converts a `metav1.LabelSelector` (`matchLabels`, `matchExpressions`
    /// with `In`, `NotIn`, `Exists`, `DoesNotExist`) like upstream's
    /// `LabelSelectorAsSelector`: `null` matches nothing, `{}` everything.
    pub fn from_label_selector_json(v: &Value) -> Result<Self, SelectorError> {
        let obj = match v {
            Value::Null => return Ok(LabelSelector::nothing()),
            Value::Object(obj) => obj,
            other => {
                return Err(SelectorError::Malformed(format!(
                    "expected an object, got {}",
                    gofmt::json_encode(other)
                )));
            }
        };
        let mut requirements = Vec::new();
        match obj.get("matchLabels") {
            None | Some(Value::Null) => {}
            Some(Value::Object(labels)) => {
                for (k, v) in labels {
                    let value = v.as_str().ok_or_else(|| {
                        SelectorError::Malformed(format!("matchLabels[{k}] must be a string"))
                    })?;
                    requirements.push(Requirement::new(
                        k.clone(),
                        Operator::Equals,
                        vec![value.to_owned()],
                    )?);
                }
            }
            Some(_) => {
                return Err(SelectorError::Malformed(
                    "matchLabels must be an object".into(),
                ));
            }
        }
        match obj.get("matchExpressions") {
            None | Some(Value::Null) => {}
            Some(Value::Array(exprs)) => {
                for expr in exprs {
                    let key = expr.get("key").and_then(Value::as_str).unwrap_or("");
                    let op_name = expr.get("operator").and_then(Value::as_str).unwrap_or("");
                    let operator = expression_operator(op_name)?;
                    let values = match expr.get("values") {
                        None | Some(Value::Null) => Vec::new(),
                        Some(Value::Array(vals)) => vals
                            .iter()
                            .map(|v| {
                                v.as_str().map(str::to_owned).ok_or_else(|| {
                                    SelectorError::Malformed("values must be strings".into())
                                })
                            })
                            .collect::<Result<_, _>>()?,
                        Some(_) => {
                            return Err(SelectorError::Malformed("values must be an array".into()));
                        }
                    };
                    requirements.push(Requirement::new(key, operator, values)?);
                }
            }
            Some(_) => {
                return Err(SelectorError::Malformed(
                    "matchExpressions must be an array".into(),
                ));
            }
        }
        Ok(LabelSelector::from_requirements(requirements))
    }

    /// The selector for a plain label map (`spec.selector` of a Service or
    /// ReplicationController): every pair must match. Not validated, as
    /// upstream's `SelectorFromSet`; non-string values never match.
    pub fn from_map(labels: &Map<String, Value>) -> Self {
        LabelSelector::from_set(
            labels
                .iter()
                .map(|(k, v)| (k, v.as_str().unwrap_or("\u{0}"))),
        )
    }

    /// The selector for a set of labels, as upstream's `SelectorFromSet`:
    /// every pair must match; not validated. An empty set gives the empty
    /// selector, which matches everything (a Service with an empty
    /// `spec.selector` selects nothing: callers check that first).
    pub fn from_set<K: Into<String>, V: Into<String>>(
        labels: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        let requirements = labels
            .into_iter()
            .map(|(k, v)| Requirement {
                key: k.into(),
                operator: Operator::Equals,
                values: vec![v.into()],
            })
            .collect();
        LabelSelector::from_requirements(requirements)
    }

    /// Whether an object's `metadata.labels` satisfy the selector (pass an
    /// empty map when the object has none). Allocation-free. A non-string
    /// label value counts as present with a value no selector names.
    pub fn matches(&self, labels: &Map<String, Value>) -> bool {
        self.matches_with(|key| labels.get(key).map(|v| v.as_str().unwrap_or("\u{0}")))
    }

    /// Whether a label set (e.g. k8s-openapi's `metadata.labels`) satisfies
    /// the selector.
    pub fn matches_set(&self, labels: &BTreeMap<String, String>) -> bool {
        self.matches_with(|key| labels.get(key).map(String::as_str))
    }

    /// Like [`matches`](Self::matches) for any label storage; `lookup`
    /// returns a label's value.
    pub fn matches_with<'a>(&self, lookup: impl Fn(&str) -> Option<&'a str>) -> bool {
        !self.nothing && self.requirements.iter().all(|r| r.matches_with(&lookup))
    }

    /// Whether an object (its `metadata.labels`) satisfies the selector.
    pub fn matches_object(&self, object: &Value) -> bool {
        match object
            .get("metadata")
            .and_then(|m| m.get("labels"))
            .and_then(Value::as_object)
        {
            Some(labels) => self.matches(labels),
            None => self.matches_with(|_| None),
        }
    }

    /// True when the selector does not restrict anything (matches all).
    pub fn is_empty(&self) -> bool {
        !self.nothing && self.requirements.is_empty()
    }

    /// True for the selector that matches nothing.
    pub fn matches_nothing(&self) -> bool {
        self.nothing
    }

    /// The requirements, sorted by key.
    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }

    /// If the selector pins `key` to one value (`=`, `==`, or `in` with one
    /// value), that value — useful to narrow a scan.
    pub fn requires_exact_match(&self, key: &str) -> Option<&str> {
        self.requirements
            .iter()
            .find(|r| r.key == key)
            .and_then(|r| match (r.operator, r.values.as_slice()) {
                (Operator::Equals | Operator::DoubleEquals | Operator::In, [v]) => Some(v.as_str()),
                _ => None,
            })
    }
}

impl fmt::Display for LabelSelector {
    /// Upstream's canonical string: requirements sorted by key, joined by
    /// commas (empty for both everything and nothing).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{r}")?;
        }
        Ok(())
    }
}

/// Converts k8s-openapi's `metav1.LabelSelector` like upstream's
/// `LabelSelectorAsSelector`: `{}` matches everything (an absent selector,
/// which matches nothing, is the caller's `None`).
#[cfg(feature = "k8s-openapi")]
impl TryFrom<&k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector> for LabelSelector {
    type Error = SelectorError;

    fn try_from(
        selector: &k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector,
    ) -> Result<Self, Self::Error> {
        let mut requirements = Vec::new();
        for (key, value) in selector.match_labels.iter().flatten() {
            requirements.push(Requirement::new(
                key.clone(),
                Operator::Equals,
                vec![value.clone()],
            )?);
        }
        for expr in selector.match_expressions.iter().flatten() {
            requirements.push(Requirement::new(
                expr.key.clone(),
                expression_operator(&expr.operator)?,
                expr.values.clone().unwrap_or_default(),
            )?);
        }
        Ok(LabelSelector::from_requirements(requirements))
    }
}

impl std::str::FromStr for LabelSelector {
    type Err = SelectorError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        LabelSelector::parse(s)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok {
    Eos,
    ClosePar,
    Comma,
    DoesNotExist,
    DoubleEquals,
    Equals,
    GreaterThan,
    Identifier,
    In,
    LessThan,
    NotEquals,
    NotIn,
    OpenPar,
}

fn keyword(s: &str) -> Option<Tok> {
    Some(match s {
        ")" => Tok::ClosePar,
        "," => Tok::Comma,
        "!" => Tok::DoesNotExist,
        "==" => Tok::DoubleEquals,
        "=" => Tok::Equals,
        ">" => Tok::GreaterThan,
        "in" => Tok::In,
        "<" => Tok::LessThan,
        "!=" => Tok::NotEquals,
        "notin" => Tok::NotIn,
        "(" => Tok::OpenPar,
        _ => return None,
    })
}

fn is_whitespace(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

fn is_special(b: u8) -> bool {
    matches!(b, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
}

/// Splits the input into tokens the way upstream's lexer does, including its
/// treatment of a NUL byte as a token end.
fn lex(s: &str) -> Vec<(Tok, &str)> {
    let b = s.as_bytes();
    let mut pos = 0;
    let mut out = Vec::new();
    loop {
        while pos < b.len() && is_whitespace(b[pos]) {
            pos += 1;
        }
        let Some(&ch) = b.get(pos) else {
            out.push((Tok::Eos, ""));
            return out;
        };
        if ch == 0 {
            // Upstream reads a NUL as end of input (and stops there).
            out.push((Tok::Eos, ""));
            return out;
        }
        let start = pos;
        if is_special(ch) {
            // Longest run of special characters that still forms a token.
            let mut best = None;
            let mut end = start;
            while end < b.len() && is_special(b[end]) {
                end += 1;
                match keyword(&s[start..end]) {
                    Some(tok) => best = Some((tok, end)),
                    None if best.is_some() => break,
                    None => {}
                }
            }
            // Every special character is a token on its own, so `best` is set.
            let (tok, end) = best.unwrap_or((Tok::Eos, end));
            out.push((tok, &s[start..end]));
            // Upstream consumes a NUL that directly follows a symbol run.
            pos = if b.get(end) == Some(&0) { end + 1 } else { end };
        } else {
            let mut end = start;
            while end < b.len() && b[end] != 0 && !is_special(b[end]) && !is_whitespace(b[end]) {
                end += 1;
            }
            let lit = &s[start..end];
            out.push((keyword(lit).unwrap_or(Tok::Identifier), lit));
            // A NUL ends the identifier and is consumed with it.
            pos = if b.get(end) == Some(&0) { end + 1 } else { end };
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Ctx {
    KeyAndOperator,
    Values,
}

struct Parser<'a> {
    tokens: Vec<(Tok, &'a str)>,
    pos: usize,
}

impl<'a> Parser<'a> {
    fn peek(&self, ctx: Ctx) -> (Tok, &'a str) {
        let (tok, lit) = self.tokens.get(self.pos).copied().unwrap_or((Tok::Eos, ""));
        // In value position `in` and `notin` are plain identifiers.
        match (ctx, tok) {
            (Ctx::Values, Tok::In | Tok::NotIn) => (Tok::Identifier, lit),
            _ => (tok, lit),
        }
    }

    fn next(&mut self, ctx: Ctx) -> (Tok, &'a str) {
        let item = self.peek(ctx);
        self.pos += 1;
        item
    }

    fn parse(&mut self) -> Result<Vec<Requirement>, SelectorError> {
        let mut requirements = Vec::new();
        loop {
            let (tok, lit) = self.peek(Ctx::Values);
            match tok {
                Tok::Identifier | Tok::DoesNotExist => {
                    let r = self
                        .parse_requirement()
                        .map_err(|e| SelectorError::Requirement(Box::new(e)))?;
                    requirements.push(r);
                    let (tok, lit) = self.next(Ctx::Values);
                    match tok {
                        Tok::Eos => return Ok(requirements),
                        Tok::Comma => {
                            let (tok2, lit2) = self.peek(Ctx::Values);
                            if tok2 != Tok::Identifier && tok2 != Tok::DoesNotExist {
                                return Err(unexpected(lit2, "identifier after ','"));
                            }
                        }
                        _ => return Err(unexpected(lit, "',' or 'end of string'")),
                    }
                }
                Tok::Eos => return Ok(requirements),
                _ => return Err(unexpected(lit, "!, identifier, or 'end of string'")),
            }
        }
    }

    fn parse_requirement(&mut self) -> Result<Requirement, SelectorError> {
        let (key, operator) = self.parse_key_and_infer_operator()?;
        if let Some(op @ (Operator::Exists | Operator::DoesNotExist)) = operator {
            return Requirement::new(key, op, Vec::new());
        }
        let operator = self.parse_operator()?;
        let values = match operator {
            Operator::In | Operator::NotIn => self.parse_values()?,
            _ => self.parse_exact_value()?,
        };
        Requirement::new(key, operator, values.into_iter().collect())
    }

    fn parse_key_and_infer_operator(
        &mut self,
    ) -> Result<(String, Option<Operator>), SelectorError> {
        let mut operator = None;
        let (mut tok, mut lit) = self.next(Ctx::Values);
        if tok == Tok::DoesNotExist {
            operator = Some(Operator::DoesNotExist);
            (tok, lit) = self.next(Ctx::Values);
        }
        if tok != Tok::Identifier {
            return Err(unexpected(lit, "identifier"));
        }
        let msgs = is_qualified_name(lit);
        if !msgs.is_empty() {
            return Err(SelectorError::Invalid(ErrorList(vec![
                FieldError::invalid("<nil>", BadValue::Str(lit.to_owned()), msgs.join("; ")),
            ])));
        }
        let (next, _) = self.peek(Ctx::Values);
        if (next == Tok::Eos || next == Tok::Comma) && operator.is_none() {
            operator = Some(Operator::Exists);
        }
        Ok((lit.to_owned(), operator))
    }

    fn parse_operator(&mut self) -> Result<Operator, SelectorError> {
        let (tok, lit) = self.next(Ctx::KeyAndOperator);
        Ok(match tok {
            Tok::In => Operator::In,
            Tok::Equals => Operator::Equals,
            Tok::DoubleEquals => Operator::DoubleEquals,
            Tok::GreaterThan => Operator::GreaterThan,
            Tok::LessThan => Operator::LessThan,
            Tok::NotIn => Operator::NotIn,
            Tok::NotEquals => Operator::NotEquals,
            _ => return Err(unexpected(lit, BINARY_OPERATORS)),
        })
    }

    fn parse_values(&mut self) -> Result<BTreeSet<String>, SelectorError> {
        let (tok, lit) = self.next(Ctx::Values);
        if tok != Tok::OpenPar {
            return Err(SelectorError::ExpectedOpenParen {
                found: lit.to_owned(),
            });
        }
        let (tok, lit) = self.peek(Ctx::Values);
        match tok {
            Tok::Identifier | Tok::Comma => {
                let set = self.parse_identifiers_list()?;
                let (tok, _) = self.next(Ctx::Values);
                if tok != Tok::ClosePar {
                    // Upstream reports the token seen before the list.
                    return Err(unexpected(lit, "')'"));
                }
                Ok(set)
            }
            Tok::ClosePar => {
                self.next(Ctx::Values);
                Ok(BTreeSet::from([String::new()]))
            }
            _ => Err(unexpected(lit, "',', ')' or identifier")),
        }
    }

    fn parse_identifiers_list(&mut self) -> Result<BTreeSet<String>, SelectorError> {
        let mut set = BTreeSet::new();
        loop {
            let (tok, lit) = self.next(Ctx::Values);
            match tok {
                Tok::Identifier => {
                    set.insert(lit.to_owned());
                    let (tok2, lit2) = self.peek(Ctx::Values);
                    match tok2 {
                        Tok::Comma => continue,
                        Tok::ClosePar => return Ok(set),
                        _ => return Err(unexpected(lit2, "',' or ')'")),
                    }
                }
                Tok::Comma => {
                    if set.is_empty() {
                        set.insert(String::new());
                    }
                    let (tok2, _) = self.peek(Ctx::Values);
                    if tok2 == Tok::ClosePar {
                        set.insert(String::new());
                        return Ok(set);
                    }
                    if tok2 == Tok::Comma {
                        set.insert(String::new());
                    }
                }
                _ => return Err(unexpected(lit, "',', or identifier")),
            }
        }
    }

    fn parse_exact_value(&mut self) -> Result<BTreeSet<String>, SelectorError> {
        let (tok, _) = self.peek(Ctx::Values);
        if tok == Tok::Eos || tok == Tok::Comma {
            return Ok(BTreeSet::from([String::new()]));
        }
        let (tok, lit) = self.next(Ctx::Values);
        if tok == Tok::Identifier {
            Ok(BTreeSet::from([lit.to_owned()]))
        } else {
            Err(unexpected(lit, "identifier"))
        }
    }
}

fn unexpected(found: &str, expected: &'static str) -> SelectorError {
    SelectorError::Unexpected {
        found: found.to_owned(),
        expected,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn labels(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    fn err(s: &str) -> String {
        LabelSelector::parse(s).unwrap_err().to_string()
    }

    #[test]
    fn parses_every_operator_and_prints_canonically() {
        let cases = [
            ("", ""),
            ("x=a", "x=a"),
            ("x==a", "x==a"),
            ("x!=a", "x!=a"),
            ("x in (b,a)", "x in (a,b)"),
            ("x notin (a)", "x notin (a)"),
            ("x", "x"),
            ("!x", "!x"),
            ("x>1", "x>1"),
            ("x<1", "x<1"),
            ("  z = a ,\ty\n, !w ", "!w,y,z=a"),
            ("x=", "x="),
            ("x in (,a)", "x in (,a)"),
            ("x in ()", "x in ()"),
            ("in=notin", "in=notin"),
            ("x in (in,notin)", "x in (in,notin)"),
            ("example.com/app=v1.2_3", "example.com/app=v1.2_3"),
        ];
        for (input, want) in cases {
            let sel = LabelSelector::parse(input).unwrap_or_else(|e| panic!("{input}: {e}"));
            assert_eq!(sel.to_string(), want, "{input}");
        }
    }

    #[test]
    fn matches_with_upstream_semantics() {
        let l = labels(json!({"app": "web", "tier": "fe", "n": "5"}));
        let empty = Map::new();
        let yes = [
            "",
            "app=web",
            "app==web",
            "app!=db",
            "app in (db,web)",
            "app notin (db)",
            "app",
            "!missing",
            "missing!=x",
            "missing notin (x)",
            "n>4",
            "n<6",
            "app=web,tier=fe",
        ];
        for s in yes {
            assert!(LabelSelector::parse(s).unwrap().matches(&l), "{s}");
        }
        let no = [
            "app=db",
            "app!=web",
            "app in (db)",
            "app notin (web)",
            "missing",
            "!app",
            "n>5",
            "n<5",
            "app>1",
            "missing=x",
            "app=web,tier=be",
        ];
        for s in no {
            assert!(!LabelSelector::parse(s).unwrap().matches(&l), "{s}");
        }
        assert!(LabelSelector::parse("!app,x!=y").unwrap().matches(&empty));
        assert!(!LabelSelector::parse("app").unwrap().matches(&empty));
    }

    #[test]
    fn empty_selector_is_empty_and_matches_all() {
        let sel = LabelSelector::parse("  ").unwrap();
        assert!(sel.is_empty());
        assert!(sel.matches(&Map::new()));
        assert!(!LabelSelector::parse("a").unwrap().is_empty());
        assert!(!LabelSelector::nothing().is_empty());
        assert!(!LabelSelector::nothing().matches(&Map::new()));
    }

    #[test]
    fn syntax_errors_carry_upstream_messages() {
        assert_eq!(err("x=a b"), "found 'b', expected: ',' or 'end of string'");
        assert_eq!(
            err("x y"),
            "unable to parse requirement: found 'y', expected: in, notin, =, ==, !=, gt, lt"
        );
        assert_eq!(err("x,"), "found '', expected: identifier after ','");
        assert_eq!(
            err(",x"),
            "found ',', expected: !, identifier, or 'end of string'"
        );
        assert_eq!(
            err("=x"),
            "found '=', expected: !, identifier, or 'end of string'"
        );
        assert_eq!(
            err("x (a)"),
            "unable to parse requirement: found '(', expected: in, notin, =, ==, !=, gt, lt"
        );
        assert_eq!(
            err("x in a"),
            "unable to parse requirement: found 'a' expected: '('"
        );
        assert_eq!(
            err("x in (a"),
            "unable to parse requirement: found '', expected: ',' or ')'"
        );
        assert_eq!(
            err("x in (a b)"),
            "unable to parse requirement: found 'b', expected: ',' or ')'"
        );
        assert_eq!(
            err("x in (=)"),
            "unable to parse requirement: found '=', expected: ',', ')' or identifier"
        );
        assert_eq!(
            err("x in (a,=)"),
            "unable to parse requirement: found '=', expected: ',', or identifier"
        );
        assert_eq!(
            err("x=(a)"),
            "unable to parse requirement: found '(', expected: identifier"
        );
        assert_eq!(
            err("!"),
            "unable to parse requirement: found '', expected: identifier"
        );
        assert_eq!(err("!x=a"), "found '=', expected: ',' or 'end of string'");
        assert_eq!(err("x=a=b"), "found '=', expected: ',' or 'end of string'");
    }

    #[test]
    fn invalid_keys_and_values_carry_validation_messages() {
        assert_eq!(
            err("-x=a"),
            "unable to parse requirement: <nil>: Invalid value: \"-x\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
        );
        assert_eq!(
            err("x=-a"),
            "unable to parse requirement: values[0][x]: Invalid value: \"-a\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
        );
        assert_eq!(
            err("x>a"),
            "unable to parse requirement: values[0]: Invalid value: \"a\": for 'Gt', 'Lt' operators, the value must be an integer"
        );
        // Negative numbers are not label values, so `lt` cannot use them.
        assert!(
            err("x<-1")
                .starts_with("unable to parse requirement: values[0][x]: Invalid value: \"-1\"")
        );
        let long = format!("x={}", "a".repeat(64));
        assert!(err(&long).ends_with("must be no more than 63 bytes"));
    }

    #[test]
    fn never_panics_on_odd_input() {
        for s in [
            "\0",
            "a\0b",
            "a,\0b",
            "((",
            "))",
            "!!",
            "!=!=",
            "<>",
            "é=ü",
            "x in (é)",
            "a in (,,)",
            "a notin",
            "a in",
            "a=",
            "a==",
            "a!=",
            "a<",
            "a>",
            ",,,",
            "\u{2028}",
            "a\u{0}=b",
        ] {
            let _ = LabelSelector::parse(s);
        }
        assert_eq!(
            LabelSelector::parse("a in (,,)").unwrap().to_string(),
            "a in ()"
        );
    }

    #[test]
    fn from_label_selector_json_supports_match_labels_and_expressions() {
        let sel = LabelSelector::from_label_selector_json(&json!({
            "matchLabels": {"app": "web"},
            "matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["fe", "be"]},
                {"key": "legacy", "operator": "DoesNotExist"},
                {"key": "env", "operator": "NotIn", "values": ["prod"]},
                {"key": "team", "operator": "Exists"}
            ]
        }))
        .unwrap();
        assert_eq!(
            sel.to_string(),
            "app=web,env notin (prod),!legacy,team,tier in (be,fe)"
        );
        assert!(sel.matches(&labels(json!({"app": "web", "tier": "fe", "team": "a"}))));
        assert!(!sel.matches(&labels(json!({"app": "web", "tier": "fe"}))));

        let nothing = LabelSelector::from_label_selector_json(&Value::Null).unwrap();
        assert!(nothing.matches_nothing());
        let all = LabelSelector::from_label_selector_json(&json!({})).unwrap();
        assert!(all.is_empty());

        let e = LabelSelector::from_label_selector_json(&json!({
            "matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]
        }))
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "\"Gt\" is not a valid label selector operator"
        );
        let e = LabelSelector::from_label_selector_json(&json!({
            "matchExpressions": [{"key": "a", "operator": "In", "values": []}]
        }))
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "values: Invalid value: []: for 'in', 'notin' operators, values set can't be empty"
        );
    }

    #[test]
    fn exact_match_and_object_helpers() {
        let sel = LabelSelector::parse("app=web,x in (a,b),y in (c)").unwrap();
        assert_eq!(sel.requires_exact_match("app"), Some("web"));
        assert_eq!(sel.requires_exact_match("x"), None);
        assert_eq!(sel.requires_exact_match("y"), Some("c"));
        assert!(
            sel.matches_object(
                &json!({"metadata": {"labels": {"app": "web", "x": "a", "y": "c"}}})
            )
        );
        assert!(
            LabelSelector::parse("!a")
                .unwrap()
                .matches_object(&json!({"metadata": {}}))
        );
        let svc = LabelSelector::from_map(&labels(json!({"app": "web"})));
        assert!(svc.matches(&labels(json!({"app": "web", "b": "c"}))));
    }

    fn set(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn label_sets_select_by_equality_without_validation() {
        let sel = LabelSelector::from_set(&set(&[("app", "web"), ("tier", "fe")]));
        assert_eq!(sel.to_string(), "app=web,tier=fe");
        assert!(sel.matches_set(&set(&[("app", "web"), ("tier", "fe"), ("x", "y")])));
        assert!(!sel.matches_set(&set(&[("app", "web")])));
        // Not validated, as upstream's SelectorFromSet.
        let odd = LabelSelector::from_set([("not a key!", "not a value!")]);
        assert!(odd.matches_set(&set(&[("not a key!", "not a value!")])));
        // The empty set selects everything; callers that mean "nothing" check first.
        assert!(LabelSelector::from_set(&set(&[])).matches_set(&set(&[])));
    }

    mod k8s {
        use super::*;
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
            LabelSelector as K8sSelector, LabelSelectorRequirement,
        };

        fn expr(key: &str, operator: &str, values: &[&str]) -> LabelSelectorRequirement {
            LabelSelectorRequirement {
                key: key.to_owned(),
                operator: operator.to_owned(),
                values: (!values.is_empty())
                    .then(|| values.iter().map(|v| (*v).to_owned()).collect()),
            }
        }

        fn selector(exprs: Vec<LabelSelectorRequirement>) -> K8sSelector {
            K8sSelector {
                match_expressions: Some(exprs),
                match_labels: None,
            }
        }

        fn matches(s: &K8sSelector, labels: &[(&str, &str)]) -> Result<bool, String> {
            LabelSelector::try_from(s)
                .map(|sel| sel.matches_set(&set(labels)))
                .map_err(|e| e.to_string())
        }

        #[test]
        fn empty_selector_matches_everything() {
            assert_eq!(matches(&K8sSelector::default(), &[]), Ok(true));
            let empty_lists = K8sSelector {
                match_labels: Some(BTreeMap::new()),
                match_expressions: Some(Vec::new()),
            };
            assert_eq!(matches(&empty_lists, &[("a", "b")]), Ok(true));
        }

        #[test]
        fn match_labels_require_equal_values() {
            let s = K8sSelector {
                match_labels: Some(set(&[("a", "1")])),
                match_expressions: None,
            };
            assert_eq!(matches(&s, &[("a", "1"), ("b", "2")]), Ok(true));
            assert_eq!(matches(&s, &[("a", "2")]), Ok(false));
            assert_eq!(matches(&s, &[]), Ok(false));
        }

        #[test]
        fn expressions_follow_set_based_semantics() {
            let in_ = selector(vec![expr("tier", "In", &["web", "db"])]);
            assert_eq!(matches(&in_, &[("tier", "db")]), Ok(true));
            assert_eq!(matches(&in_, &[("tier", "cache")]), Ok(false));
            assert_eq!(matches(&in_, &[]), Ok(false));

            let not_in = selector(vec![expr("tier", "NotIn", &["web"])]);
            assert_eq!(matches(&not_in, &[("tier", "db")]), Ok(true));
            assert_eq!(matches(&not_in, &[]), Ok(true));
            assert_eq!(matches(&not_in, &[("tier", "web")]), Ok(false));

            let exists = selector(vec![expr("tier", "Exists", &[])]);
            assert_eq!(matches(&exists, &[("tier", "")]), Ok(true));
            assert_eq!(matches(&exists, &[]), Ok(false));

            let absent = selector(vec![expr("tier", "DoesNotExist", &[])]);
            assert_eq!(matches(&absent, &[]), Ok(true));
            assert_eq!(matches(&absent, &[("tier", "x")]), Ok(false));

            let both = K8sSelector {
                match_labels: Some(set(&[("app", "web")])),
                match_expressions: Some(vec![expr("tier", "In", &["fe"])]),
            };
            assert_eq!(matches(&both, &[("app", "web"), ("tier", "fe")]), Ok(true));
            assert_eq!(matches(&both, &[("app", "web"), ("tier", "be")]), Ok(false));
        }

        #[test]
        fn invalid_selectors_are_errors_with_upstream_messages() {
            assert_eq!(
                matches(&selector(vec![expr("k", "In", &[])]), &[]),
                Err(
                    "values: Invalid value: []: for 'in', 'notin' operators, values set can't be empty"
                        .into()
                )
            );
            assert!(matches(&selector(vec![expr("k", "Exists", &["v"])]), &[]).is_err());
            assert_eq!(
                matches(&selector(vec![expr("k", "Gt", &["1"])]), &[]),
                Err("\"Gt\" is not a valid label selector operator".into())
            );
            let bad_key = K8sSelector {
                match_labels: Some(set(&[("-bad", "v")])),
                match_expressions: None,
            };
            assert!(matches(&bad_key, &[]).is_err());
        }

        #[test]
        fn agrees_with_the_json_conversion() {
            let s = K8sSelector {
                match_labels: Some(set(&[("app", "web")])),
                match_expressions: Some(vec![
                    expr("tier", "In", &["fe", "be"]),
                    expr("legacy", "DoesNotExist", &[]),
                ]),
            };
            let json = serde_json::to_value(&s).unwrap();
            assert_eq!(
                LabelSelector::try_from(&s),
                LabelSelector::from_label_selector_json(&json)
            );
        }
    }
}
