//! The codec's error type.

use crate::wire::WireError;

/// Why a protobuf body could not be decoded or a JSON object could not be encoded.
///
/// Paths use JSON names: `spec.template.spec.containers[0].ports[1].containerPort`,
/// `metadata.labels["app"]`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProtobufError {
    /// The body does not start with the 4 magic bytes `k8s\0`.
    #[error("not a Kubernetes protobuf message: missing the \"k8s\\0\" magic prefix")]
    BadMagic,
    /// The `runtime.Unknown` envelope (or a watch event wrapper) is malformed or unsupported.
    #[error("malformed protobuf envelope: {0}")]
    BadEnvelope(String),
    /// The (apiVersion, kind) is not one this codec knows.
    #[error("kind {kind:?} of apiVersion {api_version:?} has no protobuf encoding here")]
    UnsupportedKind {
        /// The apiVersion asked for.
        api_version: String,
        /// The kind asked for.
        kind: String,
    },
    /// A field of the protobuf body is malformed.
    #[error("malformed protobuf: field {field} of message {message} (at {path:?}): {reason}")]
    Malformed {
        /// Full proto name of the message holding the field.
        message: &'static str,
        /// The field number (0 when the field key itself could not be read).
        field: u32,
        /// JSON path of the message holding the field (empty at the top).
        path: String,
        /// What is wrong.
        reason: String,
    },
    /// The JSON object does not fit the kind's schema (type mismatch, bad base64, bad time…).
    #[error("invalid JSON at {path:?}: {reason}")]
    InvalidJson {
        /// JSON path of the offending value.
        path: String,
        /// What is wrong.
        reason: String,
    },
    /// The JSON object has a field the kind's schema does not have.
    #[error("unknown JSON field {path:?}")]
    UnknownField {
        /// JSON path of the unknown field.
        path: String,
    },
}

/// One step of a JSON path, prepended to an error's path while it propagates outwards (so
/// the success path never builds paths).
pub(crate) enum Seg<'a> {
    /// An object field.
    Field(&'a str),
    /// An array element.
    Index(usize),
    /// A map entry.
    Key(&'a str),
}

impl ProtobufError {
    /// Prepends `seg` to the error's path.
    pub(crate) fn at(mut self, seg: Seg<'_>) -> Self {
        if let ProtobufError::Malformed { path, .. }
        | ProtobufError::InvalidJson { path, .. }
        | ProtobufError::UnknownField { path } = &mut self
        {
            let mut p = match seg {
                Seg::Field("") => return self,
                Seg::Field(name) => name.to_string(),
                Seg::Index(i) => format!("[{i}]"),
                Seg::Key(k) => format!("[{k:?}]"),
            };
            if !path.is_empty() {
                if !path.starts_with('[') {
                    p.push('.');
                }
                p.push_str(path);
            }
            *path = p;
        }
        self
    }

    /// A wire-level error in `field` of `message`.
    pub(crate) fn wire(message: &'static str, field: u32, e: WireError) -> Self {
        Self::malformed(message, field, e.to_string())
    }

    /// A malformed field of `message`.
    pub(crate) fn malformed(message: &'static str, field: u32, reason: impl Into<String>) -> Self {
        ProtobufError::Malformed {
            message,
            field,
            path: String::new(),
            reason: reason.into(),
        }
    }

    /// A JSON value that does not fit.
    pub(crate) fn json(reason: impl Into<String>) -> Self {
        ProtobufError::InvalidJson {
            path: String::new(),
            reason: reason.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_built_outwards() {
        let e = ProtobufError::json("expected a string")
            .at(Seg::Field("name"))
            .at(Seg::Index(0))
            .at(Seg::Field("containers"))
            .at(Seg::Field(""))
            .at(Seg::Key("app"))
            .at(Seg::Field("labels"));
        assert_eq!(
            e,
            ProtobufError::InvalidJson {
                path: "labels[\"app\"].containers[0].name".into(),
                reason: "expected a string".into()
            }
        );
    }
}
