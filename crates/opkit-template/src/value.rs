//! Template values: JSON-like data that keeps Go's number kinds, plus functions and
//! host objects with fields and methods (the extension point for Helm's `.Capabilities`,
//! `.Files` and the like).

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, RwLock};

/// A value a template works on.
///
/// Numbers keep Go's kinds because templates observe them: Helm's values are `float64`
/// (`1000000` prints `1e+06`), a literal `3` in a template is an `int`, and `eq` refuses to
/// compare an `int` with a `float64`.
#[derive(Clone, Default)]
pub enum Value {
    /// Go's untyped `nil` (a JSON `null`, a missing map key).
    #[default]
    Nil,
    /// `bool`.
    Bool(bool),
    /// `int` (64 bits, as on every platform Helm ships for).
    Int(i64),
    /// `int64`.
    Int64(i64),
    /// `float64`.
    Float(f64),
    /// `string`.
    String(Arc<str>),
    /// `[]interface {}`.
    List(Arc<Vec<Value>>),
    /// `map[string]interface {}`; keys are kept sorted, as Go prints and ranges them.
    /// Shared and mutable like a Go map: Sprig's `set` changes it for every holder.
    Map(Dict),
    /// A host object with fields and methods.
    Object(Arc<dyn Object>),
    /// A function value (`call` calls it).
    Func(Function),
}

/// A Go map (`map[string]interface {}`): a shared, mutable reference, so that changing it
/// through one holder (Sprig's `set`, `unset`, `merge`) shows through every other, as in Go.
/// Readers get snapshots; no lock is held while a template runs.
#[derive(Clone)]
pub struct Dict(Arc<DictCell>);

struct DictCell {
    /// When the map was made (see [`crate::parallel::may_change`]).
    born: u64,
    entries: RwLock<BTreeMap<String, Value>>,
}

impl Default for Dict {
    fn default() -> Self {
        Dict::new(BTreeMap::new())
    }
}

impl Dict {
    /// A map holding `entries`.
    pub fn new(entries: BTreeMap<String, Value>) -> Self {
        Dict(Arc::new(DictCell {
            born: crate::parallel::generation(),
            entries: RwLock::new(entries),
        }))
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<String, Value>> {
        self.0.entries.read().unwrap_or_else(|e| e.into_inner())
    }

    /// The entries to change, unless this thread runs a template beside others and the map
    /// is older than their run (a change they might see): the change is then refused, and
    /// the run is done again one template at a time.
    fn write(&self) -> Option<std::sync::RwLockWriteGuard<'_, BTreeMap<String, Value>>> {
        crate::parallel::may_change(self.0.born)
            .then(|| self.0.entries.write().unwrap_or_else(|e| e.into_inner()))
    }

    /// The value under `key`.
    pub fn get(&self, key: &str) -> Option<Value> {
        self.read().get(key).cloned()
    }

    /// Whether `key` is present.
    pub fn contains_key(&self, key: &str) -> bool {
        self.read().contains_key(key)
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.read().len()
    }

    /// Whether the map has no entries.
    pub fn is_empty(&self) -> bool {
        self.read().is_empty()
    }

    /// The keys, sorted.
    pub fn keys(&self) -> Vec<String> {
        self.read().keys().cloned().collect()
    }

    /// A snapshot of the entries, sorted by key.
    pub fn entries(&self) -> Vec<(String, Value)> {
        self.read()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    /// A snapshot of the entries as a map.
    pub fn to_map(&self) -> BTreeMap<String, Value> {
        self.read().clone()
    }

    /// Sets `key` to `value` (seen by every holder of this map).
    pub fn insert(&self, key: impl Into<String>, value: Value) {
        if let Some(mut entries) = self.write() {
            entries.insert(key.into(), value);
        }
    }

    /// Removes `key`, returning its value.
    pub fn remove(&self, key: &str) -> Option<Value> {
        self.write()?.remove(key)
    }

    /// Whether both are the same map (not merely equal).
    pub fn same(&self, other: &Dict) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// A host value with fields and methods, such as Helm's `.Capabilities` or `.Files`.
pub trait Object: Send + Sync + std::any::Any {
    /// Go's type name, used by `%T` and in error messages (e.g. `chartutil.Capabilities`).
    fn type_name(&self) -> String;
    /// The field or method called `name`, or `None` when the type has neither.
    fn member(&self, name: &str) -> Option<Member>;
    /// What `%v` prints for this value.
    fn format(&self) -> String;
    /// The plain data behind the object when it is a slice, map or string with methods
    /// (e.g. Helm's `APIVersions`, a `[]string` with `Has`): `len`, `index`, `range`,
    /// `if` and comparisons then work on it.
    fn underlying(&self) -> Option<Value> {
        None
    }
    /// What Go's `encoding/json` writes for this value, as plain data (what its
    /// `MarshalJSON` returns, or a struct's exported fields as a map), or the error its
    /// `MarshalJSON` gives. `None`: the plain data of [`Object::underlying`] is written,
    /// and without that the type cannot be written.
    fn json(&self) -> Option<Result<Value, String>> {
        None
    }
}

/// What [`Object::member`] finds.
pub enum Member {
    /// A field: its value.
    Field(Value),
    /// A method, called with the template's arguments.
    Method(Function),
}

/// The Go type of a function parameter; arguments are checked against it the way Go's
/// `text/template` checks them (`wrong type for value; expected string; got int`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamType {
    /// `interface {}`: anything, including nil.
    Any,
    /// `bool`.
    Bool,
    /// `int`.
    Int,
    /// `int64`.
    Int64,
    /// `uint32` (Sprig's `derivePassword` counter): only an unsigned constant is accepted,
    /// as no template value has that type; the function sees it as an `int`.
    Uint32,
    /// `float64`.
    Float64,
    /// `string`.
    String,
    /// `map[string]interface {}` (nil is accepted, as a nil map).
    Map,
    /// `[]interface {}` (nil is accepted, as a nil slice).
    List,
    /// A Go struct type such as `time.Time`: an [`Object`] whose [`Object::type_name`] is
    /// this name (Sprig's dates and certificates).
    Struct(&'static str),
}

impl ParamType {
    pub(crate) fn go_name(self) -> &'static str {
        match self {
            ParamType::Any => "interface {}",
            ParamType::Bool => "bool",
            ParamType::Int => "int",
            ParamType::Int64 => "int64",
            ParamType::Uint32 => "uint32",
            ParamType::Float64 => "float64",
            ParamType::String => "string",
            ParamType::Map => "map[string]interface {}",
            ParamType::List => "[]interface {}",
            ParamType::Struct(name) => name,
        }
    }

    /// Whether Go can assign nil to the parameter (`canBeNil`): interfaces, maps, slices
    /// and pointers.
    pub(crate) fn can_be_nil(self) -> bool {
        match self {
            ParamType::Any | ParamType::Map | ParamType::List => true,
            ParamType::Struct(name) => name.starts_with('*'),
            _ => false,
        }
    }

    /// Whether a value of this kind is assignable to the parameter.
    pub(crate) fn accepts(self, v: &Value) -> bool {
        matches!(
            (self, v),
            (ParamType::Any, _)
                | (ParamType::Bool, Value::Bool(_))
                | (ParamType::Int, Value::Int(_))
                | (ParamType::Int64, Value::Int64(_))
                | (ParamType::Float64, Value::Float(_))
                | (ParamType::String, Value::String(_))
                | (ParamType::Map, Value::Map(_))
                | (ParamType::List, Value::List(_))
        ) || matches!((self, v), (ParamType::Struct(name), Value::Object(o)) if o.type_name() == name)
    }
}

/// An error a function returns; the template reports it as `error calling NAME: MESSAGE`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FuncError(pub String);

impl FuncError {
    /// An error with this message.
    pub fn new(msg: impl Into<String>) -> Self {
        FuncError(msg.into())
    }
}

impl fmt::Display for FuncError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

type PlainFn = dyn Fn(&[Value]) -> Result<Value, FuncError> + Send + Sync;
type ContextFn = dyn Fn(&mut CallContext<'_>, &[Value]) -> Result<Value, FuncError> + Send + Sync;

#[derive(Clone)]
enum FuncImpl {
    Plain(Arc<PlainFn>),
    Context(Arc<ContextFn>),
}

/// The engine as a function sees it during a call: what Helm's `include` and `tpl` need
/// (run another template of the set, or of a set derived from it, and get its output).
pub struct CallContext<'c> {
    pub(crate) host: &'c mut dyn CallHost,
}

pub(crate) trait CallHost {
    fn templates(&self) -> &crate::Templates;
    fn template_name(&self) -> &str;
    fn execute(
        &mut self,
        set: &crate::Templates,
        name: &str,
        data: &Value,
    ) -> Result<String, crate::Error>;
    fn execute_own(&mut self, name: &str, data: &Value) -> Result<String, crate::Error>;
}

impl CallContext<'_> {
    /// The template set being executed.
    pub fn templates(&self) -> &crate::Templates {
        self.host.templates()
    }

    /// The name of the template being executed (Go's `Template.Name()` of the receiver).
    pub fn template_name(&self) -> &str {
        self.host.template_name()
    }

    /// Executes template `name` of `set` (the set being executed, or one derived from it
    /// such as a clone with a freshly parsed template) with `data` as a separate execution,
    /// as Go's `ExecuteTemplate` does, within this execution's stack and work bounds.
    pub fn execute(
        &mut self,
        set: &crate::Templates,
        name: &str,
        data: &Value,
    ) -> Result<String, crate::Error> {
        self.host.execute(set, name, data)
    }

    /// Executes template `name` of the set being executed (what Helm's `include` does),
    /// as a separate execution like [`CallContext::execute`].
    pub fn execute_template(&mut self, name: &str, data: &Value) -> Result<String, crate::Error> {
        self.host.execute_own(name, data)
    }
}

/// A function callable from a template: its Go signature and a Rust closure.
///
/// Arguments are checked against the signature before the closure runs, so the closure
/// sees exactly `params.len()` fixed arguments (plus any variadic ones) of the declared kinds.
#[derive(Clone)]
pub struct Function {
    params: Arc<[ParamType]>,
    variadic: Option<ParamType>,
    imp: FuncImpl,
}

impl Function {
    /// A function with fixed parameters.
    pub fn new(
        params: &[ParamType],
        f: impl Fn(&[Value]) -> Result<Value, FuncError> + Send + Sync + 'static,
    ) -> Self {
        Function {
            params: params.into(),
            variadic: None,
            imp: FuncImpl::Plain(Arc::new(f)),
        }
    }

    /// A function with fixed parameters followed by `...variadic`.
    pub fn variadic(
        params: &[ParamType],
        variadic: ParamType,
        f: impl Fn(&[Value]) -> Result<Value, FuncError> + Send + Sync + 'static,
    ) -> Self {
        Function {
            params: params.into(),
            variadic: Some(variadic),
            imp: FuncImpl::Plain(Arc::new(f)),
        }
    }

    /// A function that uses the engine during the call (Helm's `include`, `tpl`): it gets a
    /// [`CallContext`]. `variadic` is the type of a trailing `...` parameter, if any.
    pub fn with_context(
        params: &[ParamType],
        variadic: Option<ParamType>,
        f: impl Fn(&mut CallContext<'_>, &[Value]) -> Result<Value, FuncError> + Send + Sync + 'static,
    ) -> Self {
        Function {
            params: params.into(),
            variadic,
            imp: FuncImpl::Context(Arc::new(f)),
        }
    }

    /// The fixed parameters.
    pub fn params(&self) -> &[ParamType] {
        &self.params
    }

    /// The type of the variadic parameter, if any.
    pub fn variadic_param(&self) -> Option<ParamType> {
        self.variadic
    }

    /// The type of parameter `i` (the variadic type past the fixed ones).
    pub(crate) fn param(&self, i: usize) -> Option<ParamType> {
        self.params.get(i).copied().or(self.variadic)
    }

    /// Calls a function that needs no engine context, without checking the arguments.
    /// A function made with [`Function::with_context`] can only run inside a template.
    pub fn call(&self, args: &[Value]) -> Result<Value, FuncError> {
        match &self.imp {
            FuncImpl::Plain(f) => f(args),
            FuncImpl::Context(_) => Err(FuncError::new(
                "this function runs only inside a template execution",
            )),
        }
    }

    /// Calls the function during a template execution.
    pub(crate) fn call_in(
        &self,
        ctx: &mut CallContext<'_>,
        args: &[Value],
    ) -> Result<Value, FuncError> {
        match &self.imp {
            FuncImpl::Plain(f) => f(args),
            FuncImpl::Context(f) => f(ctx, args),
        }
    }

    /// Go's spelling of the function's type, e.g. `func(string, ...interface {}) interface {}`.
    pub fn go_type(&self) -> String {
        let mut parts: Vec<String> = self
            .params
            .iter()
            .map(|p| p.go_name().to_string())
            .collect();
        if let Some(v) = self.variadic {
            parts.push(format!("...{}", v.go_name()));
        }
        format!("func({}) interface {{}}", parts.join(", "))
    }
}

impl fmt::Debug for Function {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.go_type())
    }
}

/// Go's classification of values for comparisons (`eq`, `lt`, …).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum BasicKind {
    Invalid,
    Bool,
    Int,
    Float,
    String,
}

impl Value {
    /// A string value.
    pub fn string(s: impl Into<Arc<str>>) -> Value {
        Value::String(s.into())
    }

    /// A list value.
    pub fn list(items: Vec<Value>) -> Value {
        Value::List(Arc::new(items))
    }

    /// A map value.
    pub fn map(entries: BTreeMap<String, Value>) -> Value {
        Value::Map(Dict::new(entries))
    }

    /// Converts JSON data the way Go's `encoding/json` decodes into `interface{}`:
    /// every number becomes a `float64`.
    pub fn from_json(v: &serde_json::Value) -> Value {
        match v {
            serde_json::Value::Null => Value::Nil,
            serde_json::Value::Bool(b) => Value::Bool(*b),
            serde_json::Value::Number(n) => Value::Float(n.as_f64().unwrap_or(0.0)),
            serde_json::Value::String(s) => Value::string(s.as_str()),
            serde_json::Value::Array(a) => Value::list(a.iter().map(Value::from_json).collect()),
            serde_json::Value::Object(o) => Value::map(
                o.iter()
                    .map(|(k, v)| (k.clone(), Value::from_json(v)))
                    .collect(),
            ),
        }
    }

    /// The value as Go's `encoding/json` writes it (what `sigs.k8s.io/yaml` turns a YAML
    /// document into): integral floats print without a fraction, maps with sorted keys;
    /// objects and functions as their printed text.
    pub fn to_go_json(&self) -> serde_json::Value {
        match self {
            Value::Nil => serde_json::Value::Null,
            Value::Bool(b) => serde_json::Value::Bool(*b),
            Value::Int(i) | Value::Int64(i) => serde_json::Value::from(*i),
            Value::Float(f) => {
                if f.fract() == 0.0 && f.abs() < 1e15 {
                    serde_json::Value::from(*f as i64)
                } else {
                    serde_json::Number::from_f64(*f)
                        .map(serde_json::Value::Number)
                        .unwrap_or(serde_json::Value::Null)
                }
            }
            Value::String(s) => serde_json::Value::String(s.to_string()),
            Value::List(l) => serde_json::Value::Array(l.iter().map(Value::to_go_json).collect()),
            Value::Map(d) => serde_json::Value::Object(
                d.entries()
                    .into_iter()
                    .map(|(k, v)| (k, v.to_go_json()))
                    .collect(),
            ),
            Value::Object(_) | Value::Func(_) => serde_json::Value::String(self.to_string()),
        }
    }

    /// Whether this is Go's nil.
    pub fn is_nil(&self) -> bool {
        matches!(self, Value::Nil)
    }

    /// The string, if this is a string.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    /// The object's plain data when it has some, else the value itself.
    pub(crate) fn plain(&self) -> std::borrow::Cow<'_, Value> {
        if let Value::Object(o) = self
            && let Some(u) = o.underlying()
        {
            return std::borrow::Cow::Owned(u);
        }
        std::borrow::Cow::Borrowed(self)
    }

    /// Go's type name (`%T`): `int`, `float64`, `[]interface {}`, …; nil is `<nil>`.
    pub fn type_name(&self) -> String {
        match self {
            Value::Nil => "<nil>".into(),
            Value::Bool(_) => "bool".into(),
            Value::Int(_) => "int".into(),
            Value::Int64(_) => "int64".into(),
            Value::Float(_) => "float64".into(),
            Value::String(_) => "string".into(),
            Value::List(_) => "[]interface {}".into(),
            Value::Map(_) => "map[string]interface {}".into(),
            Value::Object(o) => o.type_name(),
            Value::Func(f) => f.go_type(),
        }
    }

    /// Go's truth (`if`, `with`, `and`, `or`, `not`): false, 0, nil and empty
    /// strings, slices and maps are false.
    pub fn truth(&self) -> bool {
        match &*self.plain() {
            Value::Nil => false,
            Value::Bool(b) => *b,
            Value::Int(i) | Value::Int64(i) => *i != 0,
            Value::Float(f) => *f != 0.0,
            Value::String(s) => !s.is_empty(),
            Value::List(l) => !l.is_empty(),
            Value::Map(m) => !m.is_empty(),
            Value::Object(_) | Value::Func(_) => true,
        }
    }

    pub(crate) fn basic_kind(&self) -> BasicKind {
        match &*self.plain() {
            Value::Bool(_) => BasicKind::Bool,
            Value::Int(_) | Value::Int64(_) => BasicKind::Int,
            Value::Float(_) => BasicKind::Float,
            Value::String(_) => BasicKind::String,
            _ => BasicKind::Invalid,
        }
    }
}

impl fmt::Debug for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}({})",
            self.type_name(),
            crate::gofmt::sprint_value(self)
        )
    }
}

impl fmt::Display for Value {
    /// Go's `%v`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&crate::gofmt::sprint_value(self))
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Value {
        Value::string(s)
    }
}

impl From<String> for Value {
    fn from(s: String) -> Value {
        Value::string(s)
    }
}

impl From<bool> for Value {
    fn from(b: bool) -> Value {
        Value::Bool(b)
    }
}

impl From<f64> for Value {
    fn from(f: f64) -> Value {
        Value::Float(f)
    }
}

impl From<serde_json::Value> for Value {
    fn from(v: serde_json::Value) -> Value {
        Value::from_json(&v)
    }
}
