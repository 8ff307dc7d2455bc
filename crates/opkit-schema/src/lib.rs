//! Structural OpenAPI v3 schemas of CustomResourceDefinitions, with the behaviour of the
//! Kubernetes apiextensions-apiserver.
//!
//! A Kubernetes-compatible API server must treat custom resources exactly like the real one,
//! because clients (kubectl, controllers, tests) depend on which objects are accepted, which
//! fields survive a round trip and the precise error text. This crate provides that behaviour
//! for one CRD version's `openAPIV3Schema`:
//!
//! * [`Schema::compile`]: the checks run when a CRD is created or updated (structural schema
//!   rules, keyword restrictions, list/map types, defaults that must validate), with upstream's
//!   field paths and messages. The result is compiled once (regexes, formats) and reused.
//! * [`Schema::prune`]: removal of unknown fields, reporting their paths for
//!   `fieldValidation=Strict|Warn`.
//! * [`Schema::apply_defaults`]: `default` values, applied after pruning.
//! * [`Schema::validate`]: validation of an object, reproducing kube-openapi's validator and its
//!   conversion to field errors, plus embedded-resource and list-type checks.
//!
//! The request pipeline upstream is: decode → [`Schema::prune`] → [`Schema::apply_defaults`]
//! → (admission) → [`Schema::validate`]. Objects read back from storage are pruned and defaulted
//! the same way.
//!
//! Not covered here: CEL (`x-kubernetes-validations` rules are shape-checked here and exposed
//! through [`SchemaNode::validation_rules`]; the `opkit-cel` crate compiles and evaluates them),
//! validation ratcheting on update,
//! and the root `metadata`/`apiVersion`/`kind`, which the server validates itself.
//!
//! ```
//! use serde_json::json;
//! let schema = opkit_schema::Schema::compile(
//!     &json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
//!         "number": {"type": "integer", "minimum": 1, "maximum": 10}}}}}),
//!     "spec.versions[0].schema.openAPIV3Schema",
//! )
//! .unwrap();
//! let errs = schema.validate(&json!({"apiVersion": "a/v1", "kind": "K", "spec": {"number": 11}}));
//! assert_eq!(
//!     errs[0].to_string(),
//!     "spec.number: Invalid value: 11: spec.number in body should be less than or equal to 10"
//! );
//! ```

mod default;
mod error;
mod formats;
mod meta;
mod node;
mod pattern;
mod prune;
mod structural;
mod validate;

use serde_json::Value;

pub use error::{FieldError, FieldErrorKind, go_json, go_quote, go_value};
pub use node::{AdditionalProperties, MAX_SCHEMA_DEPTH, SchemaNode};

/// A compiled schema for one CRD version; compile once at CRD registration, reuse per request.
#[derive(Debug, Clone)]
pub struct Schema {
    root: SchemaNode,
}

impl Schema {
    /// Checks that `schema` is a valid structural schema, as the API server does when a CRD is
    /// created or updated, and compiles it. `path_prefix` is where the schema sits in the CRD,
    /// e.g. `spec.versions[0].schema.openAPIV3Schema`; error paths start with it.
    pub fn compile(schema: &Value, path_prefix: &str) -> Result<Schema, Vec<FieldError>> {
        let mut errs = Vec::new();
        let root = node::parse(schema, path_prefix, &mut errs);
        if !errs.is_empty() {
            return Err(errs);
        }
        let errs = structural::check(&root, path_prefix);
        if !errs.is_empty() {
            return Err(errs);
        }
        Ok(Schema { root })
    }

    /// Compiles `schema` without the CRD-creation rules, e.g. for schemas of CRDs that were
    /// already accepted (upstream serves stored CRDs without re-validating them) or for
    /// keywords the creation rules forbid but the validator supports (`uniqueItems`).
    /// Fails only when a keyword has the wrong JSON type.
    pub fn compile_lenient(schema: &Value) -> Result<Schema, Vec<FieldError>> {
        let mut errs = Vec::new();
        let root = node::parse(schema, "", &mut errs);
        if errs.is_empty() {
            Ok(Schema { root })
        } else {
            Err(errs)
        }
    }

    /// The root schema node.
    pub fn root(&self) -> &SchemaNode {
        &self.root
    }

    /// Removes fields the schema does not specify, in place, as the API server does when
    /// decoding a custom resource; returns the removed fields' paths (e.g. `spec.foo`,
    /// `spec.items[0].bar`), which upstream reports as `unknown field "spec.foo"` for
    /// `fieldValidation=Strict` (error) or `Warn` (warning).
    ///
    /// The root's `apiVersion`, `kind` and `metadata` are never touched (the server handles root
    /// metadata). Embedded resources keep `apiVersion` and `kind`, and their `metadata` is reduced
    /// to `ObjectMeta` fields. Besides reporting, this also removes `null` values of non-nullable
    /// fields without a default, as upstream does at this step.
    pub fn prune(&self, object: &mut Value) -> Vec<String> {
        let mut paths = prune::prune(object, &self.root, true);
        prune::prune_nulls(object, Some(&self.root), 0);
        paths.extend(prune::coerce_embedded_metadata(object, &self.root));
        paths
    }

    /// Applies `default` values in place (call after [`Schema::prune`]).
    pub fn apply_defaults(&self, object: &mut Value) {
        default::apply(object, &self.root, 0);
    }

    /// Validates a whole custom resource (including `apiVersion`, `kind` and `metadata`, of which
    /// only what the schema restricts, i.e. `metadata.name`/`generateName`, is checked here).
    /// Returns no errors when valid.
    pub fn validate(&self, object: &Value) -> Vec<FieldError> {
        let mut out = Vec::new();
        validate::validate_value(&self.root, object, None, &mut out);
        meta::validate_embedded(object, &self.root, "", &mut out, 0);
        meta::validate_list_types(object, &self.root, &mut out);
        out
    }

    /// Validates only `status` against `properties.status`, as upstream's status subresource
    /// strategy does (messages name fields relative to `status`, paths are prefixed `status.`).
    pub fn validate_status(&self, object: &Value) -> Vec<FieldError> {
        let mut out = Vec::new();
        if let (Some(status), Some(s)) = (object.get("status"), self.root.property("status")) {
            validate::validate_value(s, status, Some("status"), &mut out);
        }
        meta::validate_embedded(object, &self.root, "", &mut out, 0);
        meta::validate_list_types(object, &self.root, &mut out);
        out
    }

    /// The sub-schema at a path of object keys, e.g. `["spec", "replicas"]`. Keys not declared as
    /// properties resolve through `additionalProperties`; inside arrays, a segment `[]`, `*` or an
    /// index selects the `items` schema.
    pub fn at(&self, path: &[&str]) -> Option<&SchemaNode> {
        let mut n = &self.root;
        for seg in path {
            n = if let Some(p) = n.properties.get(*seg) {
                p
            } else if let Some(ap) = n.additional_properties_schema() {
                ap
            } else if let Some(items) = n.items.as_deref()
                && (*seg == "[]" || *seg == "*" || seg.parse::<usize>().is_ok())
            {
                items
            } else {
                return None;
            };
        }
        Some(n)
    }
}
