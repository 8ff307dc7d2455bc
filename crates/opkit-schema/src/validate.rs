//! Value validation with kube-openapi's semantics and messages.
//!
//! The API server validates custom resources with `k8s.io/kube-openapi/pkg/validation/validate`
//! and converts its results to field errors (`kubeOpenAPIResultToFieldErrors`). Both the wording
//! and some surprising details are user-visible (e.g. `<nil>` as the field of `anyOf` failures,
//! integer-vs-float handling of bounds, enum matching after Go type conversion), so this module
//! follows that validator step by step instead of a generic JSON-Schema engine:
//!
//! * per node, the validators run in upstream order: type, `allOf`/`anyOf`/`oneOf`/`not`,
//!   string (`maxLength`, `minLength`, `pattern`; first failure only), format, number, array,
//!   `enum`, object;
//! * errors are de-duplicated by message, as `validate.Result.AddErrors` does;
//! * `anyOf`/`oneOf` report the failures of the best-matching branch, chosen by upstream's
//!   match count.

use std::fmt;

use serde_json::{Number, Value};

use crate::error::{FieldError, go_float_f, go_float_v, go_json, go_quote};
use crate::formats;
use crate::node::{AdditionalProperties, SchemaNode, type_list};

/// A kube-openapi validation path (`spec.items[0].name`), rendered only when an error needs it
/// so that valid objects cost no string building.
#[derive(Clone, Copy)]
pub(crate) struct VPath<'a> {
    parent: Option<&'a VPath<'a>>,
    seg: Seg<'a>,
}

#[derive(Clone, Copy)]
enum Seg<'a> {
    Root,
    /// A property: `parent.name`, or just `name` at the root.
    Field(&'a str),
    /// An `additionalProperties` key: always `parent.key` (even at the root, as upstream).
    Key(&'a str),
    Index(usize),
}

impl<'a> VPath<'a> {
    const ROOT: VPath<'static> = VPath {
        parent: None,
        seg: Seg::Root,
    };

    fn field(parent: &'a VPath<'a>, name: &'a str) -> VPath<'a> {
        VPath {
            parent: Some(parent),
            seg: Seg::Field(name),
        }
    }
    fn key(parent: &'a VPath<'a>, k: &'a str) -> VPath<'a> {
        VPath {
            parent: Some(parent),
            seg: Seg::Key(k),
        }
    }
    fn index(parent: &'a VPath<'a>, i: usize) -> VPath<'a> {
        VPath {
            parent: Some(parent),
            seg: Seg::Index(i),
        }
    }
    fn is_empty(&self) -> bool {
        match self.seg {
            Seg::Root => true,
            Seg::Field(n) => n.is_empty() && self.parent.is_none_or(VPath::is_empty),
            _ => false,
        }
    }
}

impl fmt::Display for VPath<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parent = self.parent.unwrap_or(&VPath::ROOT);
        match self.seg {
            Seg::Root => Ok(()),
            Seg::Field(name) if parent.is_empty() => f.write_str(name),
            Seg::Field(name) => write!(f, "{parent}.{name}"),
            Seg::Key(k) => write!(f, "{parent}.{k}"),
            Seg::Index(i) => write!(f, "{parent}[{i}]"),
        }
    }
}

/// kube-openapi error codes that `kubeOpenAPIResultToFieldErrors` distinguishes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Code {
    InvalidType,
    Required,
    TooLong,
    Enum,
    MaxItems,
    TooManyProperties,
    Other,
}

/// One kube-openapi error.
#[derive(Debug, Clone)]
enum RawErr {
    /// An `*errors.Validation`.
    Validation {
        code: Code,
        name: String,
        value: Option<Value>,
        valid: Option<i64>,
        values: Vec<Value>,
        msg: String,
    },
    /// A plain error (composite `anyOf`/`oneOf`/`allOf`/`not` messages and range checks).
    Plain(String),
}

impl RawErr {
    fn msg(&self) -> &str {
        match self {
            RawErr::Validation { msg, .. } => msg,
            RawErr::Plain(m) => m,
        }
    }
}

fn verr(code: Code, name: impl fmt::Display, value: Option<Value>, msg: String) -> RawErr {
    RawErr::Validation {
        code,
        name: name.to_string(),
        value,
        valid: None,
        values: Vec::new(),
        msg,
    }
}

/// A `validate.Result`: de-duplicated errors plus the match count used to rank alternatives.
#[derive(Default)]
struct Res {
    errs: Vec<RawErr>,
    count: u32,
}

impl Res {
    fn add(&mut self, e: RawErr) {
        if !self.errs.iter().any(|x| x.msg() == e.msg()) {
            self.errs.push(e);
        }
    }
    fn merge(&mut self, other: Res) {
        for e in other.errs {
            self.add(e);
        }
        self.count += other.count;
    }
    fn valid(&self) -> bool {
        self.errs.is_empty()
    }
    fn err(e: RawErr) -> Res {
        Res {
            errs: vec![e],
            count: 0,
        }
    }
}

/// A JSON number as Kubernetes decodes it: `int64` when integral and in range, else `float64`.
#[derive(Debug, Clone, Copy)]
enum Num {
    Int(i64),
    Float(f64),
}

fn num(n: &Number) -> Num {
    match n.as_i64() {
        Some(i) => Num::Int(i),
        None => Num::Float(n.as_f64().unwrap_or(0.0)),
    }
}

impl Num {
    fn as_f64(self) -> f64 {
        match self {
            Num::Int(i) => i as f64,
            Num::Float(f) => f,
        }
    }
    fn value(self) -> Value {
        match self {
            Num::Int(i) => Value::from(i),
            Num::Float(f) => Number::from_f64(f)
                .map(Value::Number)
                .unwrap_or(Value::Null),
        }
    }
    fn string_rep(self) -> String {
        match self {
            Num::Int(i) => i.to_string(),
            Num::Float(f) => go_float_f(f),
        }
    }
}

/// swag's `IsFloat64AJSONInteger`.
fn is_json_integer(f: f64) -> bool {
    const MAX: f64 = 9007199254740991.0;
    if f.is_nan() || f.is_infinite() || !(-MAX..=MAX).contains(&f) {
        return false;
    }
    let r = f.round();
    if f == r {
        return true;
    }
    if r == 0.0 {
        return false;
    }
    let diff = (f - r).abs();
    diff == 0.0 || diff < 1e-9 * r.abs()
}

fn contains(n: &SchemaNode, t: &str) -> bool {
    n.types.contains(&t)
}

/// Validates `data` at kube-openapi path `path` against `n`.
fn validate_node(n: &SchemaNode, data: &Value, path: &VPath<'_>) -> Res {
    let mut res = Res::default();
    if data.is_null() {
        res.merge(type_check(n, data, path));
        res.merge(enum_check(n, data, path));
        return res;
    }
    // type validator
    if !n.types.is_empty() || n.effective_format.is_some() {
        res.merge(type_check(n, data, path));
        res.count += 1;
    }
    // schema props validator (always applies to schemas)
    res.merge(schema_props(n, data, path));
    res.count += 1;
    match data {
        Value::String(s) => {
            // string validator
            if let Some(e) = string_check(n, s, path) {
                res.add(e);
            }
            res.count += 1;
            // format validator
            if let Some(f) = &n.known_format {
                if !formats::validates_normalized(f, s) {
                    let shown = n.effective_format.as_deref().unwrap_or(f);
                    res.add(verr(
                        Code::InvalidType,
                        path,
                        Some(Value::String(s.clone())),
                        format!("{path} in body must be of type {shown}: {}", go_quote(s)),
                    ));
                }
                res.count += 1;
            }
        }
        Value::Number(x) => {
            res.merge(number_check(n, num(x), path));
            res.count += 1;
        }
        Value::Array(a) => {
            res.merge(slice_check(n, a, path));
            res.count += 1;
        }
        _ => {}
    }
    // common validator (enum)
    res.merge(enum_check(n, data, path));
    res.count += 1;
    if let Value::Object(m) = data {
        res.merge(object_check(n, m, path));
        res.count += 1;
    }
    res.count += 1;
    res
}

fn type_check(n: &SchemaNode, data: &Value, path: &VPath<'_>) -> Res {
    let invalid = |ty: &str, got: &str| {
        Res::err(verr(
            Code::InvalidType,
            path,
            Some(Value::String(got.to_string())),
            format!("{path} in body must be of type {ty}: {}", go_quote(got)),
        ))
    };
    if data.is_null() {
        if !n.types.is_empty() && !contains(n, "null") && !n.nullable {
            return invalid(&type_list(n), "null");
        }
        return Res {
            errs: Vec::new(),
            count: 1,
        };
    }
    let (sch_type, format) = match data {
        Value::Bool(_) => ("boolean", ""),
        Value::String(_) => ("string", ""),
        Value::Number(x) => match num(x) {
            Num::Int(_) => ("integer", "int64"),
            Num::Float(_) => ("number", "float64"),
        },
        Value::Array(_) => ("array", ""),
        Value::Object(_) => ("object", ""),
        Value::Null => ("", ""),
    };
    let is_string_or_slice = matches!(data, Value::String(_) | Value::Array(_));
    let is_float_int = sch_type == "number"
        && data.as_f64().is_some_and(is_json_integer)
        && contains(n, "integer");
    let is_int_float = sch_type == "integer" && contains(n, "number");
    let t_format = n.effective_format.as_deref().unwrap_or("");
    let type_matches = contains(n, sch_type) || is_float_int || is_int_float;
    if !(is_string_or_slice || t_format.is_empty() || type_matches || format == t_format) {
        return invalid(t_format, format);
    }
    let numeric = contains(n, "number") || contains(n, "integer");
    if is_string_or_slice && !(numeric || t_format.is_empty()) {
        return Res {
            errs: Vec::new(),
            count: 1,
        };
    }
    if !type_matches {
        return invalid(&type_list(n), sch_type);
    }
    Res {
        errs: Vec::new(),
        count: 1,
    }
}

fn schema_props(n: &SchemaNode, data: &Value, path: &VPath<'_>) -> Res {
    let mut main = Res::default();
    if !n.any_of.is_empty() {
        let mut best: Option<Res> = None;
        let mut first_success: Option<Res> = None;
        for s in &n.any_of {
            let r = validate_node(s, data, path);
            if r.valid() {
                best = None;
                first_success = Some(r);
                break;
            }
            if best.as_ref().is_none_or(|b| r.count > b.count) {
                best = Some(r);
            }
        }
        if first_success.is_none() {
            main.add(RawErr::Plain(format!(
                "{} must validate at least one schema (anyOf)",
                go_quote(&path.to_string())
            )));
        }
        if let Some(b) = best {
            main.merge(b);
        } else if let Some(f) = first_success {
            main.merge(f);
        }
    }
    if !n.one_of.is_empty() {
        let mut best: Option<Res> = None;
        let mut first_success: Option<Res> = None;
        let mut validated = 0;
        for s in &n.one_of {
            let r = validate_node(s, data, path);
            if r.valid() {
                validated += 1;
                best = None;
                if first_success.is_none() {
                    first_success = Some(r);
                }
                continue;
            }
            if validated == 0 && best.as_ref().is_none_or(|b| r.count > b.count) {
                best = Some(r);
            }
        }
        if validated != 1 {
            let extra = if validated == 0 {
                "Found none valid".to_string()
            } else {
                format!("Found {validated} valid alternatives")
            };
            main.add(RawErr::Plain(format!(
                "{} must validate one and only one schema (oneOf). {extra}",
                go_quote(&path.to_string())
            )));
            if let Some(b) = best {
                main.merge(b);
            }
        } else if let Some(f) = first_success {
            main.merge(f);
        }
    }
    if !n.all_of.is_empty() {
        let mut validated = 0;
        for s in &n.all_of {
            let r = validate_node(s, data, path);
            if r.valid() {
                validated += 1;
            }
            main.merge(r);
        }
        if validated != n.all_of.len() {
            let extra = if validated == 0 {
                ". None validated"
            } else {
                ""
            };
            main.add(RawErr::Plain(format!(
                "{} must validate all the schemas (allOf){extra}",
                go_quote(&path.to_string())
            )));
        }
    }
    if let Some(not) = &n.not
        && validate_node(not, data, path).valid()
    {
        main.add(RawErr::Plain(format!(
            "{} must not validate the schema (not)",
            go_quote(&path.to_string())
        )));
    }
    main.count += 1;
    main
}

fn string_check(n: &SchemaNode, s: &str, path: &VPath<'_>) -> Option<RawErr> {
    let sval = || Some(Value::String(s.to_string()));
    let len = || s.chars().count() as i64;
    if let Some(max) = n.max_length
        && len() > max
    {
        return Some(RawErr::Validation {
            code: Code::TooLong,
            name: path.to_string(),
            value: sval(),
            valid: Some(max),
            values: Vec::new(),
            msg: format!("{path} in body should be at most {max} chars long"),
        });
    }
    if let Some(min) = n.min_length
        && len() < min
    {
        return Some(verr(
            Code::Other,
            path,
            sval(),
            format!("{path} in body should be at least {min} chars long"),
        ));
    }
    if let Some(p) = &n.pattern {
        match &p.compiled {
            Ok(re) => {
                if !re.is_match(s) {
                    return Some(verr(
                        Code::Other,
                        path,
                        sval(),
                        format!("{path} in body should match '{}'", p.source),
                    ));
                }
            }
            Err(e) => {
                return Some(verr(
                    Code::Other,
                    path,
                    sval(),
                    format!(
                        "{path} in body should match '{}, but pattern is invalid: {e}'",
                        p.source
                    ),
                ));
            }
        }
    }
    None
}

/// kube-openapi's `IsValueValidAgainstRange`: can `v` be represented by the node's type/format?
fn range_check(
    v: Num,
    type_name: &str,
    format: &str,
    prefix: &str,
    path: &VPath<'_>,
) -> Option<RawErr> {
    let rep = v.string_rep();
    let ok = match type_name {
        "integer" => match format {
            "int32" => rep.parse::<i32>().is_ok(),
            _ => rep.parse::<i64>().is_ok(),
        },
        _ => match format {
            "float" | "float32" => rep.parse::<f64>().is_ok_and(|f| f.abs() <= f32::MAX as f64),
            _ => true,
        },
    };
    if ok {
        return None;
    }
    Some(RawErr::Plain(if format.is_empty() {
        format!("{prefix} value must be of type {type_name} (default format) in {path}")
    } else {
        format!("{prefix} value must be of type {type_name} with format {format} in {path}")
    }))
}

fn number_check(n: &SchemaNode, v: Num, path: &VPath<'_>) -> Res {
    let mut res = Res::default();
    // Only a single, numeric type (and a format valid for it) drives the range checks.
    // Only a single numeric type drives the range checks; the effective format is already
    // restricted to int32/int64 (integer) or float/double (number).
    let type_name = match n.ty.as_deref() {
        Some(t @ ("integer" | "number")) if !n.x_int_or_string => t,
        _ => "",
    };
    let format = if type_name.is_empty() {
        ""
    } else {
        n.effective_format.as_deref().unwrap_or("")
    };
    let data = v.as_f64();
    let val = || Some(v.value());
    if let Some(e) = range_check(v, type_name, format, "Checked", path) {
        res.add(e);
    }
    let mut r_multiple = Res::default();
    if let Some(factor) = n.multiple_of {
        let boundary = range_check(Num::Float(factor), type_name, format, "MultipleOf", path);
        let native = boundary.is_none();
        if let Some(e) = boundary {
            r_multiple.add(e);
        }
        let e = match (native, v) {
            (true, Num::Int(i)) => {
                let f = factor as i64;
                if f <= 0 {
                    Some(verr(
                        Code::Other,
                        path,
                        Some(Value::from(f)),
                        format!("factor MultipleOf declared for {path} must be positive: {f}"),
                    ))
                } else if i % f != 0 {
                    Some(verr(
                        Code::Other,
                        path,
                        val(),
                        format!("{path} in body should be a multiple of {f}"),
                    ))
                } else {
                    None
                }
            }
            _ => float_multiple_of(path, data, factor, val()),
        };
        if let Some(e) = e {
            r_multiple.add(e);
        }
    }
    let mut r_min = Res::default();
    if let Some(min) = n.minimum {
        let boundary = range_check(Num::Float(min), type_name, format, "Minimum boundary", path);
        let native = boundary.is_none();
        if let Some(e) = boundary {
            r_min.add(e);
        }
        let excl = n.exclusive_minimum;
        let word = if excl {
            "greater than"
        } else {
            "greater than or equal to"
        };
        let e = match (native, v) {
            (true, Num::Int(i)) => {
                let m = min as i64;
                ((!excl && i < m) || (excl && i <= m)).then(|| {
                    verr(
                        Code::Other,
                        path,
                        val(),
                        format!("{path} in body should be {word} {m}"),
                    )
                })
            }
            _ => ((!excl && data < min) || (excl && data <= min)).then(|| {
                verr(
                    Code::Other,
                    path,
                    val(),
                    format!("{path} in body should be {word} {}", go_float_v(min)),
                )
            }),
        };
        if let Some(e) = e {
            r_min.add(e);
        }
    }
    let mut r_max = Res::default();
    if let Some(max) = n.maximum {
        let boundary = range_check(Num::Float(max), type_name, format, "Maximum boundary", path);
        let native = boundary.is_none();
        if let Some(e) = boundary {
            r_max.add(e);
        }
        let excl = n.exclusive_maximum;
        let word = if excl {
            "less than"
        } else {
            "less than or equal to"
        };
        let e = match (native, v) {
            (true, Num::Int(i)) => {
                let m = max as i64;
                ((!excl && i > m) || (excl && i >= m)).then(|| {
                    verr(
                        Code::Other,
                        path,
                        val(),
                        format!("{path} in body should be {word} {m}"),
                    )
                })
            }
            _ => ((!excl && data > max) || (excl && data >= max)).then(|| {
                verr(
                    Code::Other,
                    path,
                    val(),
                    format!("{path} in body should be {word} {}", go_float_v(max)),
                )
            }),
        };
        if let Some(e) = e {
            r_max.add(e);
        }
    }
    res.merge(r_multiple);
    res.merge(r_min);
    res.merge(r_max);
    res.count += 1;
    res
}

fn float_multiple_of(
    path: &VPath<'_>,
    data: f64,
    factor: f64,
    val: Option<Value>,
) -> Option<RawErr> {
    if factor <= 0.0 {
        return Some(verr(
            Code::Other,
            path,
            Number::from_f64(factor).map(Value::Number),
            format!(
                "factor MultipleOf declared for {path} must be positive: {}",
                go_float_v(factor)
            ),
        ));
    }
    let mult = if factor < 1.0 {
        1.0 / factor * data
    } else {
        data / factor
    };
    (!is_json_integer(mult)).then(|| {
        verr(
            Code::Other,
            path,
            val,
            format!(
                "{path} in body should be a multiple of {}",
                go_float_v(factor)
            ),
        )
    })
}

fn slice_check(n: &SchemaNode, a: &[Value], path: &VPath<'_>) -> Res {
    let mut res = Res::default();
    if let Some(items) = &n.items {
        for (i, x) in a.iter().enumerate() {
            res.merge(validate_node(items, x, &VPath::index(path, i)));
        }
    }
    let size = a.len() as i64;
    if let Some(min) = n.min_items
        && size < min
    {
        res.add(verr(
            Code::Other,
            path,
            Some(Value::from(size)),
            format!("{path} in body should have at least {min} items"),
        ));
    }
    if let Some(max) = n.max_items
        && size > max
    {
        res.add(RawErr::Validation {
            code: Code::MaxItems,
            name: path.to_string(),
            value: Some(Value::from(size)),
            valid: Some(max),
            values: Vec::new(),
            msg: format!("{path} in body should have at most {max} items"),
        });
    }
    if n.unique_items && has_duplicates(a) {
        res.add(verr(
            Code::Other,
            path,
            None,
            format!("{path} in body shouldn't contain duplicates"),
        ));
    }
    res.count += 1;
    res
}

fn has_duplicates(a: &[Value]) -> bool {
    for (i, x) in a.iter().enumerate() {
        if a[..i].iter().any(|y| y == x) {
            return true;
        }
    }
    false
}

/// Go's `reflect.Value.Convert` followed by `reflect.DeepEqual`, as kube-openapi's enum check does.
fn enum_match(data: &Value, e: &Value) -> bool {
    match (data, e) {
        (Value::Null, _) | (_, Value::Null) => false,
        (Value::Number(d), Value::Number(ev)) => match (num(d), num(ev)) {
            (Num::Int(a), Num::Int(b)) => a == b,
            (Num::Float(a), Num::Int(b)) => a as i64 == b,
            (a, Num::Float(b)) => a.as_f64() == b,
        },
        // Go converts an integer to a string as a code point.
        (Value::Number(d), Value::String(s)) => match num(d) {
            Num::Int(i) => {
                let c = u32::try_from(i)
                    .ok()
                    .and_then(char::from_u32)
                    .unwrap_or('\u{FFFD}');
                let mut buf = [0u8; 4];
                s == c.encode_utf8(&mut buf)
            }
            Num::Float(_) => false,
        },
        (Value::String(a), Value::String(b)) => a == b,
        (Value::Bool(a), Value::Bool(b)) => a == b,
        (Value::Array(_), Value::Array(_)) | (Value::Object(_), Value::Object(_)) => data == e,
        _ => false,
    }
}

/// Go's `%v` of a decoded JSON value (only used for de-duplication keys of enum messages).
fn go_v(v: &Value) -> String {
    match v {
        Value::Null => "<nil>".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => crate::error::go_number_v(n),
        Value::String(s) => s.clone(),
        Value::Array(a) => format!("[{}]", a.iter().map(go_v).collect::<Vec<_>>().join(" ")),
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let parts: Vec<String> = keys
                .iter()
                .map(|k| format!("{k}:{}", go_v(&m[k.as_str()])))
                .collect();
            format!("map[{}]", parts.join(" "))
        }
    }
}

fn enum_check(n: &SchemaNode, data: &Value, path: &VPath<'_>) -> Res {
    let Some(values) = &n.enum_values else {
        return Res::default();
    };
    if values.iter().any(|e| enum_match(data, e)) {
        return Res::default();
    }
    let list: Vec<String> = values.iter().map(go_v).collect();
    Res::err(RawErr::Validation {
        code: Code::Enum,
        name: path.to_string(),
        value: Some(data.clone()),
        valid: None,
        values: values.clone(),
        msg: format!("{path} in body should be one of [{}]", list.join(" ")),
    })
}

fn object_check(n: &SchemaNode, m: &serde_json::Map<String, Value>, path: &VPath<'_>) -> Res {
    let mut res = Res::default();
    let size = m.len() as i64;
    if let Some(min) = n.min_properties
        && size < min
    {
        res.add(verr(
            Code::Other,
            path,
            Some(Value::from(size)),
            format!("{path} in body should have at least {min} properties"),
        ));
    }
    if let Some(max) = n.max_properties
        && size > max
    {
        res.add(RawErr::Validation {
            code: Code::TooManyProperties,
            name: path.to_string(),
            value: Some(Value::from(size)),
            valid: Some(max),
            values: Vec::new(),
            msg: format!("{path} in body should have at most {max} properties"),
        });
    }
    match &n.additional_properties {
        Some(AdditionalProperties::Bool(false)) => {
            for k in m.keys() {
                if !n.properties.contains_key(k) {
                    res.add(verr(
                        Code::Other,
                        path,
                        Some(Value::String(k.clone())),
                        format!("{path}.{k} in body is a forbidden property"),
                    ));
                }
            }
        }
        Some(AdditionalProperties::Schema(ap)) => {
            for (k, v) in m {
                if !n.properties.contains_key(k) {
                    res.merge(validate_node(ap, v, &VPath::key(path, k)));
                }
            }
        }
        _ => {}
    }
    for (name, s) in &n.properties {
        if let Some(v) = m.get(name) {
            res.merge(validate_node(s, v, &VPath::field(path, name)));
        }
    }
    for k in &n.required {
        if !m.contains_key(k) {
            let name = format!("{path}.{k}");
            let msg = format!("{name} in body is required");
            res.add(verr(Code::Required, &name, None, msg));
        }
    }
    res
}

/// Where validation errors are reported: under a field path prefix, or (`None`) at the root,
/// where errors without a name render as `<nil>` like upstream's nil `*field.Path`.
fn field_for(prefix: Option<&str>, name: &str) -> String {
    if !name.is_empty() && name != "." {
        let trimmed = name.strip_prefix('.').unwrap_or(name);
        match prefix {
            Some(p) => format!("{p}.{trimmed}"),
            None => trimmed.to_string(),
        }
    } else {
        prefix.unwrap_or("<nil>").to_string()
    }
}

fn to_field_errors(res: Res, prefix: Option<&str>, out: &mut Vec<FieldError>) {
    for e in res.errs {
        match e {
            RawErr::Plain(msg) => out.push(FieldError::invalid(
                prefix.unwrap_or("<nil>"),
                Value::String(String::new()),
                msg,
            )),
            RawErr::Validation {
                code,
                name,
                value,
                valid,
                values,
                msg,
            } => {
                let field = field_for(prefix, &name);
                let shown = || {
                    value
                        .clone()
                        .unwrap_or_else(|| Value::String(String::new()))
                };
                let fe = match code {
                    Code::Required => FieldError::required(field, ""),
                    Code::Enum => {
                        let supported: Vec<String> = values
                            .iter()
                            .map(|v| match v {
                                Value::String(s) => s.clone(),
                                other => go_json(other),
                            })
                            .collect();
                        FieldError::not_supported(
                            field,
                            value.clone().unwrap_or(Value::Null),
                            &supported,
                        )
                    }
                    Code::TooLong => FieldError::too_long(field, valid.unwrap_or(-1)),
                    Code::MaxItems | Code::TooManyProperties => FieldError::too_many(
                        field,
                        value.as_ref().and_then(Value::as_i64).unwrap_or(-1),
                        valid.unwrap_or(-1),
                    ),
                    Code::InvalidType => FieldError::type_invalid(field, shown(), msg),
                    Code::Other => FieldError::invalid(field, shown(), msg),
                };
                out.push(fe);
            }
        }
    }
}

/// Validates `value` against `node` like `apiservervalidation.ValidateCustomResource(prefix, ...)`.
pub(crate) fn validate_value(
    node: &SchemaNode,
    value: &Value,
    prefix: Option<&str>,
    out: &mut Vec<FieldError>,
) {
    let res = validate_node(node, value, &VPath::ROOT);
    to_field_errors(res, prefix, out);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_integer_check() {
        assert!(is_json_integer(3.0));
        assert!(!is_json_integer(3.5));
        assert!(!is_json_integer(1e300));
    }

    #[test]
    fn enum_matching_follows_go_conversion() {
        assert!(enum_match(&json!(1), &json!(1.0)));
        assert!(enum_match(&json!(1.7), &json!(1)));
        assert!(enum_match(&json!(65), &json!("A")));
        assert!(!enum_match(&json!("1"), &json!(1)));
        assert!(!enum_match(&Value::Null, &Value::Null));
    }
}
