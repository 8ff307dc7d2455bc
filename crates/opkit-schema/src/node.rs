//! The parsed form of a `JSONSchemaProps`.
//!
//! Schemas arrive as untyped JSON from users; parsing them once into [`SchemaNode`]s (with
//! regexes compiled and formats resolved) keeps per-request work to plain field access. Parsing
//! never panics: malformed keywords become field errors, as a typed decoder would reject them.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::error::FieldError;
use crate::formats;
use crate::pattern::Pattern;

/// How deep schemas may nest (each level of `properties`, `items`, `allOf`, ... counts one).
/// JSON parsed by `serde_json` nests at most 128 levels, i.e. about 64 schema levels, so real
/// schemas stay well below this; the cap only protects against hand-built values.
pub const MAX_SCHEMA_DEPTH: usize = 100;

/// `additionalProperties`: a boolean or a schema.
#[derive(Debug, Clone)]
pub enum AdditionalProperties {
    /// `additionalProperties: true` or `false`.
    Bool(bool),
    /// `additionalProperties: {...}`.
    Schema(Box<SchemaNode>),
}

/// One node of a schema: the validation keywords of a `JSONSchemaProps` plus its children.
///
/// Obtain nodes with [`crate::Schema::root`] and [`crate::Schema::at`].
#[derive(Debug, Clone, Default)]
pub struct SchemaNode {
    pub(crate) ty: Option<String>,
    pub(crate) format: Option<String>,
    /// The format validators see, after upstream strips formats unsupported for the type.
    pub(crate) effective_format: Option<String>,
    pub(crate) description: Option<String>,
    pub(crate) title: Option<String>,
    pub(crate) default: Option<Value>,
    pub(crate) has_example: bool,
    pub(crate) has_external_docs: bool,
    pub(crate) nullable: bool,

    pub(crate) maximum: Option<f64>,
    pub(crate) exclusive_maximum: bool,
    pub(crate) minimum: Option<f64>,
    pub(crate) exclusive_minimum: bool,
    pub(crate) max_length: Option<i64>,
    pub(crate) min_length: Option<i64>,
    pub(crate) pattern: Option<Pattern>,
    pub(crate) max_items: Option<i64>,
    pub(crate) min_items: Option<i64>,
    pub(crate) unique_items: bool,
    pub(crate) multiple_of: Option<f64>,
    pub(crate) enum_values: Option<Vec<Value>>,
    pub(crate) max_properties: Option<i64>,
    pub(crate) min_properties: Option<i64>,
    pub(crate) required: Vec<String>,

    pub(crate) items: Option<Box<SchemaNode>>,
    /// `items` given as an array of schemas (not supported by Kubernetes).
    pub(crate) items_array: bool,
    pub(crate) all_of: Vec<SchemaNode>,
    pub(crate) one_of: Vec<SchemaNode>,
    pub(crate) any_of: Vec<SchemaNode>,
    pub(crate) not: Option<Box<SchemaNode>>,
    pub(crate) properties: BTreeMap<String, SchemaNode>,
    pub(crate) additional_properties: Option<AdditionalProperties>,

    pub(crate) id: Option<String>,
    pub(crate) schema_uri: Option<String>,
    pub(crate) reference: Option<String>,
    pub(crate) has_pattern_properties: bool,
    pub(crate) has_dependencies: bool,
    pub(crate) has_additional_items: bool,
    pub(crate) has_definitions: bool,

    pub(crate) x_preserve_unknown_fields: Option<bool>,
    pub(crate) x_embedded_resource: bool,
    pub(crate) x_int_or_string: bool,
    pub(crate) x_list_map_keys: Vec<String>,
    pub(crate) x_list_type: Option<String>,
    pub(crate) x_map_type: Option<String>,
    pub(crate) x_validations: Vec<Value>,

    /// The JSON types a value may have (`["integer", "string"]` for int-or-string).
    pub(crate) types: Vec<&'static str>,
    /// The normalized name of the effective string format, when the format registry knows it.
    pub(crate) known_format: Option<String>,
    /// Whether this node or a structural descendant is an embedded resource (lets validation
    /// skip subtrees that cannot contain one).
    pub(crate) subtree_has_embedded: bool,
    /// Whether this node or a structural descendant has `x-kubernetes-list-type` set or map.
    pub(crate) subtree_has_list_checks: bool,
}

impl SchemaNode {
    /// The declared `type` (`None` when unset, e.g. for int-or-string or preserved fields).
    pub fn type_name(&self) -> Option<&str> {
        self.ty.as_deref()
    }
    /// The declared `format`.
    pub fn format(&self) -> Option<&str> {
        self.format.as_deref()
    }
    /// The `description`.
    pub fn description(&self) -> Option<&str> {
        self.description.as_deref()
    }
    /// The `default` value.
    pub fn default_value(&self) -> Option<&Value> {
        self.default.as_ref()
    }
    /// Whether `nullable: true`.
    pub fn is_nullable(&self) -> bool {
        self.nullable
    }
    /// The `required` property names.
    pub fn required(&self) -> &[String] {
        &self.required
    }
    /// The `properties`, by name.
    pub fn properties(&self) -> &BTreeMap<String, SchemaNode> {
        &self.properties
    }
    /// The schema of one property.
    pub fn property(&self, name: &str) -> Option<&SchemaNode> {
        self.properties.get(name)
    }
    /// The `items` schema of an array.
    pub fn items(&self) -> Option<&SchemaNode> {
        self.items.as_deref()
    }
    /// `additionalProperties`, if set.
    pub fn additional_properties(&self) -> Option<&AdditionalProperties> {
        self.additional_properties.as_ref()
    }
    /// The `additionalProperties` schema, if it is a schema.
    pub fn additional_properties_schema(&self) -> Option<&SchemaNode> {
        match &self.additional_properties {
            Some(AdditionalProperties::Schema(s)) => Some(s),
            _ => None,
        }
    }
    /// Whether `x-kubernetes-preserve-unknown-fields: true`.
    pub fn preserves_unknown_fields(&self) -> bool {
        self.x_preserve_unknown_fields == Some(true)
    }
    /// Whether `x-kubernetes-embedded-resource: true`.
    pub fn is_embedded_resource(&self) -> bool {
        self.x_embedded_resource
    }
    /// Whether `x-kubernetes-int-or-string: true`.
    pub fn is_int_or_string(&self) -> bool {
        self.x_int_or_string
    }
    /// `x-kubernetes-list-type` (`atomic`, `set` or `map`); unset means atomic.
    pub fn list_type(&self) -> Option<&str> {
        self.x_list_type.as_deref()
    }
    /// `x-kubernetes-list-map-keys`.
    pub fn list_map_keys(&self) -> &[String] {
        &self.x_list_map_keys
    }
    /// `x-kubernetes-map-type` (`granular` or `atomic`); unset means granular.
    pub fn map_type(&self) -> Option<&str> {
        self.x_map_type.as_deref()
    }
    /// The raw `x-kubernetes-validations` rules (CEL), for a CEL evaluator.
    pub fn validation_rules(&self) -> &[Value] {
        &self.x_validations
    }

    /// The child schema for an object key: the property, else the `additionalProperties` schema.
    pub(crate) fn field_schema(&self, key: &str) -> Option<&SchemaNode> {
        self.properties
            .get(key)
            .or_else(|| self.additional_properties_schema())
    }
}

pub(crate) fn child(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_string()
    } else {
        format!("{path}.{name}")
    }
}

pub(crate) fn key(path: &str, k: &str) -> String {
    format!("{path}[{k}]")
}

pub(crate) fn index(path: &str, i: usize) -> String {
    format!("{path}[{i}]")
}

fn type_name_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

struct Parser<'e> {
    errs: &'e mut Vec<FieldError>,
}

impl Parser<'_> {
    fn bad(&mut self, path: &str, v: &Value, want: &str) {
        self.errs.push(FieldError::invalid(
            path,
            v.clone(),
            format!("must be {want}, not {}", type_name_of(v)),
        ));
    }

    fn string(
        &mut self,
        m: &serde_json::Map<String, Value>,
        k: &str,
        path: &str,
    ) -> Option<String> {
        match m.get(k)? {
            Value::Null => None,
            Value::String(s) => Some(s.clone()),
            v => {
                self.bad(&child(path, k), v, "a string");
                None
            }
        }
    }

    fn boolean(&mut self, m: &serde_json::Map<String, Value>, k: &str, path: &str) -> Option<bool> {
        match m.get(k)? {
            Value::Null => None,
            Value::Bool(b) => Some(*b),
            v => {
                self.bad(&child(path, k), v, "a boolean");
                None
            }
        }
    }

    fn number(&mut self, m: &serde_json::Map<String, Value>, k: &str, path: &str) -> Option<f64> {
        match m.get(k)? {
            Value::Null => None,
            Value::Number(n) => n.as_f64(),
            v => {
                self.bad(&child(path, k), v, "a number");
                None
            }
        }
    }

    fn integer(&mut self, m: &serde_json::Map<String, Value>, k: &str, path: &str) -> Option<i64> {
        match m.get(k)? {
            Value::Null => None,
            Value::Number(n) => {
                if let Some(i) = n.as_i64() {
                    Some(i)
                } else {
                    match n.as_f64() {
                        Some(f) if f.fract() == 0.0 && f.abs() < 9.2e18 => Some(f as i64),
                        _ => {
                            self.bad(&child(path, k), &m[k], "an integer");
                            None
                        }
                    }
                }
            }
            v => {
                self.bad(&child(path, k), v, "an integer");
                None
            }
        }
    }

    fn strings(&mut self, m: &serde_json::Map<String, Value>, k: &str, path: &str) -> Vec<String> {
        match m.get(k) {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(a)) => {
                let mut out = Vec::with_capacity(a.len());
                for (i, x) in a.iter().enumerate() {
                    match x {
                        Value::String(s) => out.push(s.clone()),
                        v => self.bad(&index(&child(path, k), i), v, "a string"),
                    }
                }
                out
            }
            Some(v) => {
                self.bad(&child(path, k), v, "an array of strings");
                Vec::new()
            }
        }
    }

    fn schema_list(
        &mut self,
        m: &serde_json::Map<String, Value>,
        k: &str,
        path: &str,
        depth: usize,
    ) -> Vec<SchemaNode> {
        match m.get(k) {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(a)) => a
                .iter()
                .enumerate()
                .map(|(i, x)| self.node(x, &index(&child(path, k), i), depth + 1))
                .collect(),
            Some(v) => {
                self.bad(&child(path, k), v, "an array of schemas");
                Vec::new()
            }
        }
    }

    fn schema_map(
        &mut self,
        m: &serde_json::Map<String, Value>,
        k: &str,
        path: &str,
        depth: usize,
    ) -> BTreeMap<String, SchemaNode> {
        match m.get(k) {
            None | Some(Value::Null) => BTreeMap::new(),
            Some(Value::Object(o)) => o
                .iter()
                .map(|(name, x)| {
                    (
                        name.clone(),
                        self.node(x, &key(&child(path, k), name), depth + 1),
                    )
                })
                .collect(),
            Some(v) => {
                self.bad(&child(path, k), v, "an object");
                BTreeMap::new()
            }
        }
    }

    fn node(&mut self, v: &Value, path: &str, depth: usize) -> SchemaNode {
        let mut n = SchemaNode::default();
        if depth > MAX_SCHEMA_DEPTH {
            self.errs.push(FieldError::forbidden(
                path,
                format!("must not be nested more than {MAX_SCHEMA_DEPTH} levels deep"),
            ));
            return n;
        }
        let m = match v {
            Value::Object(m) => m,
            other => {
                self.bad(path, other, "an object");
                return n;
            }
        };
        n.ty = self.string(m, "type", path).filter(|s| !s.is_empty());
        n.format = self.string(m, "format", path).filter(|s| !s.is_empty());
        n.description = self
            .string(m, "description", path)
            .filter(|s| !s.is_empty());
        n.title = self.string(m, "title", path).filter(|s| !s.is_empty());
        n.default = m.get("default").filter(|d| !d.is_null()).cloned();
        n.has_example = m.get("example").is_some_and(|e| !e.is_null());
        n.has_external_docs = m.get("externalDocs").is_some_and(|e| !e.is_null());
        n.nullable = self.boolean(m, "nullable", path).unwrap_or(false);
        n.maximum = self.number(m, "maximum", path);
        n.exclusive_maximum = self.boolean(m, "exclusiveMaximum", path).unwrap_or(false);
        n.minimum = self.number(m, "minimum", path);
        n.exclusive_minimum = self.boolean(m, "exclusiveMinimum", path).unwrap_or(false);
        n.max_length = self.integer(m, "maxLength", path);
        n.min_length = self.integer(m, "minLength", path);
        n.pattern = self
            .string(m, "pattern", path)
            .filter(|s| !s.is_empty())
            .map(|p| Pattern::new(&p));
        n.max_items = self.integer(m, "maxItems", path);
        n.min_items = self.integer(m, "minItems", path);
        n.unique_items = self.boolean(m, "uniqueItems", path).unwrap_or(false);
        n.multiple_of = self.number(m, "multipleOf", path);
        n.enum_values = match m.get("enum") {
            None | Some(Value::Null) => None,
            Some(Value::Array(a)) if a.is_empty() => None,
            Some(Value::Array(a)) => Some(a.clone()),
            Some(v) => {
                self.bad(&child(path, "enum"), v, "an array");
                None
            }
        };
        n.max_properties = self.integer(m, "maxProperties", path);
        n.min_properties = self.integer(m, "minProperties", path);
        n.required = self.strings(m, "required", path);

        match m.get("items") {
            None | Some(Value::Null) => {}
            Some(Value::Array(a)) => {
                n.items_array = true;
                for (i, x) in a.iter().enumerate() {
                    self.node(x, &index(&child(path, "items"), i), depth + 1);
                }
            }
            Some(x) => n.items = Some(Box::new(self.node(x, &child(path, "items"), depth + 1))),
        }
        n.all_of = self.schema_list(m, "allOf", path, depth);
        n.one_of = self.schema_list(m, "oneOf", path, depth);
        n.any_of = self.schema_list(m, "anyOf", path, depth);
        n.not = match m.get("not") {
            None | Some(Value::Null) => None,
            Some(x) => Some(Box::new(self.node(x, &child(path, "not"), depth + 1))),
        };
        n.properties = self.schema_map(m, "properties", path, depth);
        n.additional_properties = match m.get("additionalProperties") {
            None | Some(Value::Null) => None,
            Some(Value::Bool(b)) => Some(AdditionalProperties::Bool(*b)),
            Some(x) => Some(AdditionalProperties::Schema(Box::new(self.node(
                x,
                &child(path, "additionalProperties"),
                depth + 1,
            )))),
        };

        n.id = self.string(m, "id", path).filter(|s| !s.is_empty());
        n.schema_uri = self.string(m, "$schema", path).filter(|s| !s.is_empty());
        n.reference = self.string(m, "$ref", path);
        n.has_pattern_properties = m
            .get("patternProperties")
            .is_some_and(|p| p.as_object().is_some_and(|o| !o.is_empty()));
        n.has_dependencies = m.get("dependencies").is_some_and(|d| !d.is_null());
        n.has_additional_items = m.get("additionalItems").is_some_and(|d| !d.is_null());
        n.has_definitions = m
            .get("definitions")
            .is_some_and(|p| p.as_object().is_some_and(|o| !o.is_empty()));

        n.x_preserve_unknown_fields = self.boolean(m, "x-kubernetes-preserve-unknown-fields", path);
        n.x_embedded_resource = self
            .boolean(m, "x-kubernetes-embedded-resource", path)
            .unwrap_or(false);
        n.x_int_or_string = self
            .boolean(m, "x-kubernetes-int-or-string", path)
            .unwrap_or(false);
        n.x_list_map_keys = self.strings(m, "x-kubernetes-list-map-keys", path);
        n.x_list_type = self.string(m, "x-kubernetes-list-type", path);
        n.x_map_type = self.string(m, "x-kubernetes-map-type", path);
        n.x_validations = match m.get("x-kubernetes-validations") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(a)) => a.clone(),
            Some(v) => {
                self.bad(&child(path, "x-kubernetes-validations"), v, "an array");
                Vec::new()
            }
        };

        n.types = if n.x_int_or_string {
            vec!["integer", "string"]
        } else {
            match n.ty.as_deref() {
                Some("string") => vec!["string"],
                Some("integer") => vec!["integer"],
                Some("number") => vec!["number"],
                Some("boolean") => vec!["boolean"],
                Some("object") => vec!["object"],
                Some("array") => vec!["array"],
                Some("null") => vec!["null"],
                // Matches no value; unsupported types are rejected at compile time.
                Some(_) => vec!["unknown"],
                None => Vec::new(),
            }
        };
        n.effective_format = effective_format(&n);
        n.known_format = n
            .effective_format
            .as_deref()
            .filter(|f| formats::is_known(f))
            .map(formats::normalize);
        let (embedded_below, lists_below) = {
            let children = n
                .items
                .iter()
                .map(|b| &**b)
                .chain(n.properties.values())
                .chain(n.additional_properties_schema());
            children.fold((false, false), |(e, l), c| {
                (e || c.subtree_has_embedded, l || c.subtree_has_list_checks)
            })
        };
        n.subtree_has_embedded = n.x_embedded_resource || embedded_below;
        n.subtree_has_list_checks =
            matches!(n.x_list_type.as_deref(), Some("set" | "map")) || lists_below;
        n
    }
}

/// Upstream's `StripUnsupportedFormatsPostProcessor`: formats that do not apply to the node's
/// (single) type are ignored.
fn effective_format(n: &SchemaNode) -> Option<String> {
    let f = n.format.as_deref()?;
    let single_type = if n.x_int_or_string {
        ""
    } else {
        n.ty.as_deref().unwrap_or("")
    };
    let keep = match single_type {
        "" | "string" => formats::is_known(f),
        "integer" => f == "int32" || f == "int64",
        "number" => f == "float" || f == "double",
        _ => false,
    };
    keep.then(|| f.to_string())
}

/// Parses a `JSONSchemaProps` value; malformed keywords are reported in `errs`.
pub(crate) fn parse(v: &Value, path: &str, errs: &mut Vec<FieldError>) -> SchemaNode {
    Parser { errs }.node(v, path, 0)
}

/// The display name of types in messages (`strings.Join(type, ",")`).
pub(crate) fn type_list(n: &SchemaNode) -> String {
    if n.x_int_or_string {
        "integer,string".to_string()
    } else {
        n.ty.clone().unwrap_or_default()
    }
}
