//! API errors, answered as Kubernetes `Status` objects.
//!
//! Every failure a client can see goes through [`ApiError`], so that kubectl, client-go and
//! kube-rs always receive a `meta.k8s.io/v1 Status` with the code, reason and message upstream
//! kube-apiserver would give for the same request.

use serde_json::{Value, json};

/// One entry of `Status.details.causes`.
#[derive(Debug, Clone, PartialEq)]
pub struct Cause {
    /// Machine-readable cause, e.g. `FieldValueInvalid`.
    pub reason: String,
    /// Human-readable description.
    pub message: String,
    /// The field path, e.g. `spec.number`.
    pub field: String,
}

/// Upstream's `StatusReason`s the server answers with; each has one HTTP code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// 400.
    BadRequest,
    /// 401.
    Unauthorized,
    /// 403.
    Forbidden,
    /// 404.
    NotFound,
    /// 405.
    MethodNotAllowed,
    /// 406.
    NotAcceptable,
    /// 409: the object exists.
    AlreadyExists,
    /// 409: a stale resourceVersion or a field-manager conflict.
    Conflict,
    /// 410: a resourceVersion older than the history.
    Expired,
    /// 413.
    RequestEntityTooLarge,
    /// 415.
    UnsupportedMediaType,
    /// 422.
    Invalid,
    /// 429.
    TooManyRequests,
    /// 500.
    InternalError,
    /// 500 without a reason: an error upstream passes on as it is (upstream's
    /// `StatusReasonUnknown`, the empty reason; `kubectl` shows `Error from server: ...`).
    Unknown,
    /// 503.
    ServiceUnavailable,
    /// 504.
    Timeout,
}

impl Reason {
    /// The HTTP status code.
    pub fn code(self) -> u16 {
        match self {
            Reason::BadRequest => 400,
            Reason::Unauthorized => 401,
            Reason::Forbidden => 403,
            Reason::NotFound => 404,
            Reason::MethodNotAllowed => 405,
            Reason::NotAcceptable => 406,
            Reason::AlreadyExists | Reason::Conflict => 409,
            Reason::Expired => 410,
            Reason::RequestEntityTooLarge => 413,
            Reason::UnsupportedMediaType => 415,
            Reason::Invalid => 422,
            Reason::TooManyRequests => 429,
            Reason::InternalError | Reason::Unknown => 500,
            Reason::ServiceUnavailable => 503,
            Reason::Timeout => 504,
        }
    }

    /// `Status.reason` as upstream spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::BadRequest => "BadRequest",
            Reason::Unauthorized => "Unauthorized",
            Reason::Forbidden => "Forbidden",
            Reason::NotFound => "NotFound",
            Reason::MethodNotAllowed => "MethodNotAllowed",
            Reason::NotAcceptable => "NotAcceptable",
            Reason::AlreadyExists => "AlreadyExists",
            Reason::Conflict => "Conflict",
            Reason::Expired => "Expired",
            Reason::RequestEntityTooLarge => "RequestEntityTooLarge",
            Reason::UnsupportedMediaType => "UnsupportedMediaType",
            Reason::Invalid => "Invalid",
            Reason::TooManyRequests => "TooManyRequests",
            Reason::InternalError => "InternalError",
            Reason::Unknown => "",
            Reason::ServiceUnavailable => "ServiceUnavailable",
            Reason::Timeout => "Timeout",
        }
    }
}

/// An error answered to the client as a `Status`.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    /// `Status.reason`; it determines the HTTP code ([`ApiError::code`]).
    pub reason: Reason,
    /// `Status.message`.
    pub message: String,
    /// `Status.details`, when the error concerns a named object (boxed: errors stay small).
    pub details: Option<Box<Details>>,
    /// Seconds the client should wait before retrying (429, some 5xx).
    pub retry_after: Option<u32>,
}

/// `Status.details`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Details {
    /// Object name.
    pub name: String,
    /// API group (empty for the core group).
    pub group: String,
    /// Resource (plural) or kind, as upstream puts it.
    pub kind: String,
    /// Field-level causes.
    pub causes: Vec<Cause>,
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} ({}): {}",
            self.reason.as_str(),
            self.code(),
            self.message
        )
    }
}

impl std::error::Error for ApiError {}

/// The `group/resource` qualifier upstream uses in messages: `configmaps`, `deployments.apps`.
pub fn qualified(group: &str, resource: &str) -> String {
    if group.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}.{group}")
    }
}

impl ApiError {
    /// The HTTP status code.
    pub fn code(&self) -> u16 {
        self.reason.code()
    }

    /// 404 NotFound.
    pub fn is_not_found(&self) -> bool {
        self.reason == Reason::NotFound
    }

    /// 409 AlreadyExists.
    pub fn is_already_exists(&self) -> bool {
        self.reason == Reason::AlreadyExists
    }

    /// 409 Conflict (a stale resourceVersion).
    pub fn is_conflict(&self) -> bool {
        self.reason == Reason::Conflict
    }

    fn new(reason: Reason, message: impl Into<String>) -> Self {
        ApiError {
            reason,
            message: message.into(),
            details: None,
            retry_after: None,
        }
    }

    fn with_details(mut self, group: &str, kind: &str, name: &str) -> Self {
        self.details = Some(Box::new(Details {
            name: name.to_string(),
            group: group.to_string(),
            kind: kind.to_string(),
            causes: Vec::new(),
        }));
        self
    }

    /// 400 BadRequest.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(Reason::BadRequest, message)
    }

    /// An error with the HTTP `code` a third party chose (an admission webhook's refusal):
    /// the reason upstream gives that code, `BadRequest` or `InternalError` for codes
    /// without one.
    pub fn with_code(code: u16, message: impl Into<String>) -> Self {
        let reason = match code {
            401 => Reason::Unauthorized,
            403 => Reason::Forbidden,
            404 => Reason::NotFound,
            405 => Reason::MethodNotAllowed,
            406 => Reason::NotAcceptable,
            409 => Reason::Conflict,
            410 => Reason::Expired,
            413 => Reason::RequestEntityTooLarge,
            415 => Reason::UnsupportedMediaType,
            422 => Reason::Invalid,
            429 => Reason::TooManyRequests,
            503 => Reason::ServiceUnavailable,
            504 => Reason::Timeout,
            500.. => Reason::InternalError,
            _ => Reason::BadRequest,
        };
        Self::new(reason, message)
    }

    /// 401 Unauthorized.
    pub fn unauthorized() -> Self {
        Self::new(Reason::Unauthorized, "Unauthorized")
    }

    /// 403 Forbidden with a message.
    pub fn forbidden(group: &str, resource: &str, name: &str, message: impl Into<String>) -> Self {
        let q = qualified(group, resource);
        Self::new(
            Reason::Forbidden,
            format!("{q} \"{name}\" is forbidden: {}", message.into()),
        )
        .with_details(group, resource, name)
    }

    /// 403 Forbidden from the authorizer: `message` is complete (see `opkit_rbac`), `details`
    /// name the object the request was about.
    pub fn forbidden_request(group: &str, resource: &str, name: &str, message: String) -> Self {
        Self::new(Reason::Forbidden, message).with_details(group, resource, name)
    }

    /// 409 Conflict with a message of its own.
    pub fn conflict_msg(message: impl Into<String>) -> Self {
        Self::new(Reason::Conflict, message)
    }

    /// 429 TooManyRequests: the client should retry after `retry_after` seconds.
    pub fn too_many_requests(message: impl Into<String>, retry_after: u32) -> Self {
        let mut e = Self::new(Reason::TooManyRequests, message);
        e.retry_after = Some(retry_after);
        e
    }

    /// 404 NotFound for an object.
    pub fn not_found(group: &str, resource: &str, name: &str) -> Self {
        let q = qualified(group, resource);
        Self::new(Reason::NotFound, format!("{q} \"{name}\" not found"))
            .with_details(group, resource, name)
    }

    /// 404 for a path that names no resource.
    pub fn path_not_found() -> Self {
        Self::new(
            Reason::NotFound,
            "the server could not find the requested resource",
        )
        .with_details("", "", "")
    }

    /// 405 MethodNotAllowed.
    pub fn method_not_allowed(method: &str, what: &str) -> Self {
        Self::new(
            Reason::MethodNotAllowed,
            format!(
                "the server does not allow this method on the requested resource ({method} {what})"
            ),
        )
    }

    /// 405 MethodNotAllowed with a specific message.
    pub fn method_not_allowed_msg(message: impl Into<String>) -> Self {
        Self::new(Reason::MethodNotAllowed, message)
    }

    /// 406 NotAcceptable.
    pub fn not_acceptable(accept: &str) -> Self {
        Self::new(
            Reason::NotAcceptable,
            format!(
                "the server was unable to respond with a content type that the client supports: {accept}"
            ),
        )
    }

    /// 409 AlreadyExists.
    pub fn already_exists(group: &str, resource: &str, name: &str) -> Self {
        let q = qualified(group, resource);
        Self::new(
            Reason::AlreadyExists,
            format!("{q} \"{name}\" already exists"),
        )
        .with_details(group, resource, name)
    }

    /// 409 Conflict on a stale resourceVersion or a failed precondition.
    pub fn conflict(group: &str, resource: &str, name: &str, why: &str) -> Self {
        let q = qualified(group, resource);
        Self::new(
            Reason::Conflict,
            format!("Operation cannot be fulfilled on {q} \"{name}\": {why}"),
        )
        .with_details(group, resource, name)
    }

    /// 409 Conflict for a stale resourceVersion, with upstream's message.
    pub fn stale(group: &str, resource: &str, name: &str) -> Self {
        Self::conflict(
            group,
            resource,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    /// 410 Expired (watch or continue from a compacted revision).
    pub fn expired(message: impl Into<String>) -> Self {
        Self::new(Reason::Expired, message)
    }

    /// 413 RequestEntityTooLarge.
    pub fn too_large(limit: usize) -> Self {
        Self::new(
            Reason::RequestEntityTooLarge,
            format!("the request body exceeds the limit of {limit} bytes"),
        )
    }

    /// 415 UnsupportedMediaType.
    pub fn unsupported_media_type(content_type: &str) -> Self {
        Self::new(
            Reason::UnsupportedMediaType,
            format!(
                "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf (got {content_type:?})"
            ),
        )
    }

    /// 415 for a patch type the resource does not support.
    pub fn unsupported_patch(patch_type: &str, supported: &[&str]) -> Self {
        Self::new(Reason::UnsupportedMediaType,
            format!(
                "the body of the request was in an unknown format - accepted media types include: {}",
                supported.join(", ")
            ),
        )
        .with_patch_type(patch_type)
    }

    fn with_patch_type(mut self, patch_type: &str) -> Self {
        self.message = format!("{} (got {patch_type:?})", self.message);
        self
    }

    /// 422 Invalid with field causes, message as upstream:
    /// `Kind.group "name" is invalid: [cause1, cause2]`.
    pub fn invalid(group: &str, kind: &str, name: &str, causes: Vec<Cause>) -> Self {
        let kind_q = if group.is_empty() {
            kind.to_string()
        } else {
            format!("{kind}.{group}")
        };
        let body = match causes.len() {
            1 => causes[0].message_line(),
            _ => format!(
                "[{}]",
                causes
                    .iter()
                    .map(Cause::message_line)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        let mut e = Self::new(
            Reason::Invalid,
            format!("{kind_q} \"{name}\" is invalid: {body}"),
        )
        .with_details(group, kind, name);
        if let Some(d) = e.details.as_mut() {
            d.causes = causes;
        }
        e
    }

    /// 500 InternalError.
    pub fn internal(message: impl std::fmt::Display) -> Self {
        Self::new(
            Reason::InternalError,
            format!("Internal error occurred: {message}"),
        )
    }

    /// 500 with no reason and `message` as it is: what upstream answers for an error its
    /// storage layer passes on without classifying it (a failed CRD conversion).
    pub fn unclassified(message: impl Into<String>) -> Self {
        Self::new(Reason::Unknown, message)
    }

    /// 503 ServiceUnavailable.
    pub fn unavailable(message: impl Into<String>) -> Self {
        Self::new(Reason::ServiceUnavailable, message)
    }

    /// 504 Timeout.
    pub fn timeout(message: impl Into<String>) -> Self {
        Self::new(Reason::Timeout, message)
    }

    /// The `Status` object.
    pub fn to_status(&self) -> Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason.as_str(),
            "code": self.code(),
        });
        if self.reason == Reason::Unknown
            && let Some(map) = status.as_object_mut()
        {
            map.remove("reason");
        }
        if let Some(d) = &self.details {
            let mut details = serde_json::Map::new();
            if !d.name.is_empty() {
                details.insert("name".into(), Value::from(d.name.clone()));
            }
            if !d.group.is_empty() {
                details.insert("group".into(), Value::from(d.group.clone()));
            }
            if !d.kind.is_empty() {
                details.insert("kind".into(), Value::from(d.kind.clone()));
            }
            if !d.causes.is_empty() {
                details.insert(
                    "causes".into(),
                    Value::Array(
                        d.causes
                            .iter()
                            .map(|c| json!({"reason": c.reason, "message": c.message, "field": c.field}))
                            .collect(),
                    ),
                );
            }
            if let Some(secs) = self.retry_after {
                details.insert("retryAfterSeconds".into(), Value::from(secs));
            }
            status["details"] = Value::Object(details);
        } else if let Some(secs) = self.retry_after {
            status["details"] = json!({"retryAfterSeconds": secs});
        }
        status
    }
}

impl Cause {
    /// A cause from a field path, reason and detail message.
    pub fn new(reason: &str, field: &str, message: impl Into<String>) -> Self {
        Cause {
            reason: reason.to_string(),
            message: message.into(),
            field: field.to_string(),
        }
    }

    /// The cause for a schema or CEL validation error: its field, reason and message (the
    /// message without the field it starts with).
    pub fn from_field_error(e: &opkit_schema::FieldError) -> Self {
        let text = e.to_string();
        let detail = text
            .strip_prefix(&format!("{}: ", e.field))
            .unwrap_or(&text);
        Cause::new(e.reason(), &e.field, detail)
    }

    fn message_line(&self) -> String {
        if self.field.is_empty() {
            self.message.clone()
        } else {
            format!("{}: {}", self.field, self.message)
        }
    }
}

impl From<opkit_store::StoreError> for ApiError {
    fn from(e: opkit_store::StoreError) -> Self {
        match e {
            opkit_store::StoreError::Compacted {
                requested,
                compacted,
            } => ApiError::expired(format!(
                "too old resource version: {requested} ({compacted})"
            )),
            other => ApiError::internal(other),
        }
    }
}

/// Result alias for request handling.
pub type ApiResult<T> = Result<T, ApiError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_found_status_names_the_resource_like_upstream() {
        let s = ApiError::not_found("", "configmaps", "nope").to_status();
        assert_eq!(s["message"], "configmaps \"nope\" not found");
        assert_eq!(s["reason"], "NotFound");
        assert_eq!(s["code"], 404);
        assert_eq!(s["details"]["kind"], "configmaps");
    }

    #[test]
    fn invalid_status_lists_one_cause_without_brackets() {
        let e = ApiError::invalid(
            "flights.com",
            "FlightTicket",
            "t",
            vec![Cause::new(
                "FieldValueInvalid",
                "spec.number",
                "Invalid value: 11: spec.number in body should be less than or equal to 10",
            )],
        );
        assert_eq!(
            e.message,
            "FlightTicket.flights.com \"t\" is invalid: spec.number: Invalid value: 11: spec.number in body should be less than or equal to 10"
        );
        assert_eq!(
            e.to_status()["details"]["causes"][0]["field"],
            "spec.number"
        );
    }
}
