//! What a write's body says about its own fields, and how `fieldValidation` treats them.

use std::sync::Arc;

use serde_json::Value;

use crate::error::{ApiError, ApiResult};

/// `fieldValidation` of a write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FieldValidation {
    /// Drop unknown fields silently.
    Ignore,
    /// Drop unknown fields and warn (the default).
    #[default]
    Warn,
    /// Refuse the request when it has unknown fields.
    Strict,
}

impl FieldValidation {
    /// Parses the query parameter.
    pub fn parse(value: Option<&str>) -> ApiResult<FieldValidation> {
        match value {
            None | Some("") | Some("Warn") => Ok(FieldValidation::Warn),
            Some("Ignore") => Ok(FieldValidation::Ignore),
            Some("Strict") => Ok(FieldValidation::Strict),
            Some(other) => Err(ApiError::bad_request(format!(
                "fieldValidation must be one of \"Ignore\", \"Warn\", \"Strict\", got {other:?}"
            ))),
        }
    }
}

/// How upstream words a `Strict` refusal: it depends on the verb, and clients (kubectl above
/// all) show the message as it is.
#[derive(Debug, Clone, Default)]
pub enum Wording {
    /// 400 `strict decoding error: unknown field "spec.foo"`: server-side apply, and writes
    /// without a body of their own.
    #[default]
    Plain,
    /// 400 `ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error:
    /// …`: a whole object, created or replaced (upstream's `transformDecodeError`).
    Object,
    /// 422 on the field `patch`, whose value is the patched object as JSON: a JSON or merge
    /// patch (upstream's `jsonPatcher`).
    Patched,
    /// 422 on the field `patch`, whose value is the patch as Go prints a map: a strategic
    /// merge patch (upstream's `strategicPatchObject`).
    Strategic(Arc<Value>),
}

/// What a request body says about its own fields.
#[derive(Debug, Clone, Default)]
pub struct BodyFields {
    /// Strict-decoding errors of the body itself (`duplicate field "a"`), reported before the
    /// unknown fields of the object.
    pub errors: Vec<String>,
    /// How a `Strict` refusal is worded.
    pub wording: Wording,
}

/// `fieldValidation` of a write, with what its body says about its fields.
#[derive(Debug, Clone, Default)]
pub struct FieldCheck {
    /// `fieldValidation`.
    pub validation: FieldValidation,
    /// The body's own strict-decoding errors and the wording of a refusal.
    pub body: BodyFields,
}

impl From<FieldValidation> for FieldCheck {
    fn from(validation: FieldValidation) -> FieldCheck {
        FieldCheck {
            validation,
            body: BodyFields::default(),
        }
    }
}
