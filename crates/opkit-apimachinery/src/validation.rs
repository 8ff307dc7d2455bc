//! Name, label and metadata validation with the upstream messages.
//!
//! Clients (kubectl, client-go, kube-rs, Helm) show the API server's
//! validation messages to people and some tests match them verbatim, so every
//! rule here reproduces kube-apiserver v1.35 (`k8s.io/apimachinery` v0.35):
//! the DNS-1123/1035 name formats (lengths counted in "characters"), label
//! keys and values (lengths counted in "bytes", from the newer
//! `api/validate/content` package), path-segment names, annotation size, and
//! the `generateName` suffix. The checks are hand-written matchers equivalent
//! to upstream's regular expressions, so validating a name allocates nothing
//! unless it fails.
//!
//! [`FieldError`] and [`ErrorList`] mirror `field.Error`/`field.ErrorList`:
//! their `Display` is the text upstream puts into a 422 `Status` message, and
//! [`FieldError::reason`] is the `causes[].reason` value.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Map, Value};

use crate::gofmt;

/// Maximum length of a DNS-1123 label (RFC 1123), e.g. a namespace name.
pub const DNS1123_LABEL_MAX_LENGTH: usize = 63;
/// Maximum length of a DNS-1123 subdomain, the rule for most object names.
pub const DNS1123_SUBDOMAIN_MAX_LENGTH: usize = 253;
/// Maximum length of a DNS-1035 label, e.g. a service name.
pub const DNS1035_LABEL_MAX_LENGTH: usize = 63;
/// Maximum length of a label value and of a label key's name part.
pub const LABEL_VALUE_MAX_LENGTH: usize = 63;
/// Maximum total size of an object's annotations (keys plus values), 256 KiB.
pub const TOTAL_ANNOTATION_SIZE_LIMIT_B: usize = 256 * 1024;
/// Length to which `generateName` prefixes are cut before the random suffix.
pub const MAX_GENERATED_NAME_PREFIX_LENGTH: usize = 58;
/// Length of the random `generateName` suffix.
pub const GENERATED_NAME_SUFFIX_LENGTH: usize = 5;
/// The alphabet of `generateName` suffixes (no vowels, no confusable digits).
pub const GENERATED_NAME_ALPHABET: &[u8; 27] = b"bcdfghjklmnpqrstvwxz2456789";

const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_LABEL_ERR: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_ERR: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const DNS1035_LABEL_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const DNS1035_LABEL_ERR: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character";
const LABEL_KEY_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_KEY_ERR: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const LABEL_VALUE_ERR: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";

/// Upstream `RegexError`: the message, examples, then the regex.
///
/// Note the doubled space before `or`: upstream builds the list that way and
/// clients see it verbatim.
pub fn regex_error(msg: &str, regex: &str, examples: &[&str]) -> String {
    let mut out = String::with_capacity(msg.len() + regex.len() + 64);
    out.push_str(msg);
    if examples.is_empty() {
        out.push_str(" (regex used for validation is '");
    } else {
        out.push_str(" (e.g. ");
        for (i, example) in examples.iter().enumerate() {
            if i > 0 {
                out.push_str(" or ");
            }
            out.push('\'');
            out.push_str(example);
            out.push_str("', ");
        }
        out.push_str("regex used for validation is '");
    }
    out.push_str(regex);
    out.push_str("')");
    out
}

/// `must be no more than N characters` (names).
fn max_len_chars(n: usize) -> String {
    format!("must be no more than {n} characters")
}

/// `must be no more than N bytes` (label keys and values).
fn max_len_bytes(n: usize) -> String {
    format!("must be no more than {n} bytes")
}

fn lower_alnum(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit()
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`
fn matches_dns1123_label(s: &str) -> bool {
    let b = s.as_bytes();
    match (b.first(), b.last()) {
        (Some(&first), Some(&last)) => {
            lower_alnum(first)
                && lower_alnum(last)
                && b.iter().all(|&c| lower_alnum(c) || c == b'-')
        }
        _ => false,
    }
}

/// Labels of [`matches_dns1123_label`] joined by dots.
fn matches_dns1123_subdomain(s: &str) -> bool {
    s.split('.').all(matches_dns1123_label)
}

/// `[a-z]([-a-z0-9]*[a-z0-9])?`
fn matches_dns1035_label(s: &str) -> bool {
    let b = s.as_bytes();
    match (b.first(), b.last()) {
        (Some(&first), Some(&last)) => {
            first.is_ascii_lowercase()
                && lower_alnum(last)
                && b.iter().all(|&c| lower_alnum(c) || c == b'-')
        }
        _ => false,
    }
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`
fn matches_label_key_name(s: &str) -> bool {
    let b = s.as_bytes();
    match (b.first(), b.last()) {
        (Some(&first), Some(&last)) => {
            first.is_ascii_alphanumeric()
                && last.is_ascii_alphanumeric()
                && b.iter()
                    .all(|&c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
        }
        _ => false,
    }
}

/// Checks a DNS-1123 label (RFC 1123), e.g. a namespace name: at most 63
/// characters of `[a-z0-9-]`, starting and ending alphanumeric. Returns the
/// upstream messages, empty when valid.
pub fn is_dns1123_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_LABEL_MAX_LENGTH {
        errs.push(max_len_chars(DNS1123_LABEL_MAX_LENGTH));
    }
    if !matches_dns1123_label(value) {
        if matches_dns1123_subdomain(value) {
            errs.push("must not contain dots".to_owned());
        } else {
            errs.push(regex_error(
                DNS1123_LABEL_ERR,
                DNS1123_LABEL_FMT,
                &["my-name", "123-abc"],
            ));
        }
    }
    errs
}

/// Checks a DNS-1123 subdomain, the rule for most object names: at most 253
/// characters, dot-separated DNS-1123 labels. Returns the upstream messages.
pub fn is_dns1123_subdomain(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errs.push(max_len_chars(DNS1123_SUBDOMAIN_MAX_LENGTH));
    }
    if !matches_dns1123_subdomain(value) {
        errs.push(regex_error(
            DNS1123_SUBDOMAIN_ERR,
            DNS1123_SUBDOMAIN_FMT,
            &["example.com"],
        ));
    }
    errs
}

/// Checks a DNS-1035 label, the rule for service names: like a DNS-1123
/// label but starting with a letter. Returns the upstream messages.
pub fn is_dns1035_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1035_LABEL_MAX_LENGTH {
        errs.push(max_len_chars(DNS1035_LABEL_MAX_LENGTH));
    }
    if !matches_dns1035_label(value) {
        errs.push(regex_error(
            DNS1035_LABEL_ERR,
            DNS1035_LABEL_FMT,
            &["my-name", "abc-123"],
        ));
    }
    errs
}

/// Checks a qualified name (label key, annotation key, finalizer): an
/// optional DNS-1123 subdomain prefix and `/`, then a name of at most 63
/// bytes. Returns the upstream messages.
pub fn is_qualified_name(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let mut parts = value.splitn(3, '/');
    let first = parts.next().unwrap_or("");
    let (prefix, name) = match (parts.next(), parts.next()) {
        (None, _) => (None, first),
        (Some(name), None) => (Some(first), name),
        (Some(_), Some(_)) => {
            errs.push(format!(
                "a valid label key {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(LABEL_KEY_ERR, LABEL_KEY_FMT, &["MyName", "my.name", "123-abc"])
            ));
            return errs;
        }
    };
    if let Some(prefix) = prefix {
        if prefix.is_empty() {
            errs.push("prefix part must be non-empty".to_owned());
        } else {
            if prefix.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
                errs.push(format!(
                    "prefix part {}",
                    max_len_bytes(DNS1123_SUBDOMAIN_MAX_LENGTH)
                ));
            }
            if !matches_dns1123_subdomain(prefix) {
                errs.push(format!(
                    "prefix part {}",
                    regex_error(
                        DNS1123_SUBDOMAIN_ERR,
                        DNS1123_SUBDOMAIN_FMT,
                        &["example.com"]
                    )
                ));
            }
        }
    }
    if name.is_empty() {
        errs.push("name part must be non-empty".to_owned());
    } else if name.len() > LABEL_VALUE_MAX_LENGTH {
        errs.push(format!(
            "name part {}",
            max_len_bytes(LABEL_VALUE_MAX_LENGTH)
        ));
    }
    if !matches_label_key_name(name) {
        errs.push(format!(
            "name part {}",
            regex_error(
                LABEL_KEY_ERR,
                LABEL_KEY_FMT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errs
}

/// Checks a label value: empty, or at most 63 bytes of `[-A-Za-z0-9_.]`
/// starting and ending alphanumeric. Returns the upstream messages.
pub fn is_valid_label_value(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > LABEL_VALUE_MAX_LENGTH {
        errs.push(max_len_bytes(LABEL_VALUE_MAX_LENGTH));
    }
    if !(value.is_empty() || matches_label_key_name(value)) {
        errs.push(regex_error(
            LABEL_VALUE_ERR,
            LABEL_VALUE_FMT,
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

/// Checks that a name can be a URL path segment (RBAC object names): not
/// `.` or `..`, no `/` or `%`. Like upstream, empty and long names pass.
pub fn is_path_segment_name(name: &str) -> Vec<String> {
    for illegal in [".", ".."] {
        if name == illegal {
            return vec![format!("may not be '{illegal}'")];
        }
    }
    is_path_segment_prefix(name)
}

/// Checks that a `generateName` prefix can start a path segment: no `/` or
/// `%` (the suffix may still make `.` valid).
pub fn is_path_segment_prefix(name: &str) -> Vec<String> {
    let mut errs = Vec::new();
    for illegal in ["/", "%"] {
        if name.contains(illegal) {
            errs.push(format!("may not contain '{illegal}'"));
        }
    }
    errs
}

/// Replaces a trailing dash so that a `generateName` prefix can be checked
/// with a full-name rule. Reproduces upstream exactly, including its quirk of
/// dropping the character before the dash too (`"ab-"` → `"aa"`).
pub fn mask_trailing_dash(name: &str) -> String {
    if name.len() > 1 && name.ends_with('-') {
        // The dash is ASCII; step back one more *character* (upstream steps
        // back one byte, which only differs for non-ASCII names that fail
        // validation anyway).
        let without_dash = &name[..name.len() - 1];
        let cut = without_dash
            .char_indices()
            .next_back()
            .map(|(i, _)| i)
            .unwrap_or(0);
        let mut out = String::with_capacity(cut + 1);
        out.push_str(&name[..cut]);
        out.push('a');
        out
    } else {
        name.to_owned()
    }
}

/// Which name format a resource's objects must follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameRule {
    /// DNS-1123 subdomain (most resources, custom resources).
    Dns1123Subdomain,
    /// DNS-1123 label (namespaces).
    Dns1123Label,
    /// DNS-1035 label (services).
    Dns1035Label,
    /// Any path segment (RBAC roles and bindings).
    PathSegment,
}

impl NameRule {
    /// Checks `name` with this rule; `prefix` says it is a `generateName`
    /// that will get a suffix (a trailing dash is then allowed).
    pub fn validate(self, name: &str, prefix: bool) -> Vec<String> {
        match self {
            NameRule::PathSegment => {
                if prefix {
                    is_path_segment_prefix(name)
                } else {
                    is_path_segment_name(name)
                }
            }
            rule => {
                let masked;
                let name = if prefix {
                    masked = mask_trailing_dash(name);
                    masked.as_str()
                } else {
                    name
                };
                match rule {
                    NameRule::Dns1123Label => is_dns1123_label(name),
                    NameRule::Dns1035Label => is_dns1035_label(name),
                    _ => is_dns1123_subdomain(name),
                }
            }
        }
    }
}

/// The name rule upstream applies to a built-in resource (or a custom
/// resource, which is a DNS-1123 subdomain).
pub fn name_rule_for(group: &str, resource: &str) -> NameRule {
    match (group, resource) {
        ("", "namespaces") => NameRule::Dns1123Label,
        ("", "services") => NameRule::Dns1035Label,
        (
            "rbac.authorization.k8s.io",
            "roles" | "clusterroles" | "rolebindings" | "clusterrolebindings",
        ) => NameRule::PathSegment,
        _ => NameRule::Dns1123Subdomain,
    }
}

/// Builds a name from a `generateName` prefix like upstream's
/// `SimpleNameGenerator`: the prefix cut to 58 bytes (at a character
/// boundary), then 5 random characters from [`GENERATED_NAME_ALPHABET`].
pub fn generate_name(base: &str) -> String {
    let mut cut = base.len().min(MAX_GENERATED_NAME_PREFIX_LENGTH);
    while !base.is_char_boundary(cut) {
        cut -= 1;
    }
    let mut out = String::with_capacity(cut + GENERATED_NAME_SUFFIX_LENGTH);
    out.push_str(&base[..cut]);
    let mut bits = random_u64();
    for _ in 0..GENERATED_NAME_SUFFIX_LENGTH {
        // 27 symbols; 5 draws of 12 bits each fit in one u64 with negligible bias.
        let idx = ((bits & 0xfff) % GENERATED_NAME_ALPHABET.len() as u64) as usize;
        out.push(GENERATED_NAME_ALPHABET[idx] as char);
        bits >>= 12;
    }
    out
}

/// A non-cryptographic random number (upstream uses `math/rand` too): the
/// process-random `RandomState` keys mixed with a global counter, so calls in
/// the same nanosecond still differ.
fn random_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    hasher.finish()
}

/// Kinds of field errors, as upstream's `field.ErrorType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorType {
    /// `FieldValueNotFound`.
    NotFound,
    /// `FieldValueRequired`.
    Required,
    /// `FieldValueDuplicate`.
    Duplicate,
    /// `FieldValueInvalid`.
    Invalid,
    /// `FieldValueNotSupported`.
    NotSupported,
    /// `FieldValueForbidden`.
    Forbidden,
    /// `FieldValueTooLong`.
    TooLong,
    /// `FieldValueTooMany`.
    TooMany,
    /// `InternalError`.
    Internal,
    /// `FieldValueTypeInvalid`.
    TypeInvalid,
}

impl ErrorType {
    /// The `causes[].reason` of a `Status`, e.g. `FieldValueInvalid`.
    pub fn reason(self) -> &'static str {
        match self {
            ErrorType::NotFound => "FieldValueNotFound",
            ErrorType::Required => "FieldValueRequired",
            ErrorType::Duplicate => "FieldValueDuplicate",
            ErrorType::Invalid => "FieldValueInvalid",
            ErrorType::NotSupported => "FieldValueNotSupported",
            ErrorType::Forbidden => "FieldValueForbidden",
            ErrorType::TooLong => "FieldValueTooLong",
            ErrorType::TooMany => "FieldValueTooMany",
            ErrorType::Internal => "InternalError",
            ErrorType::TypeInvalid => "FieldValueTypeInvalid",
        }
    }

    /// The human text of the type, e.g. `Invalid value`.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorType::NotFound => "Not found",
            ErrorType::Required => "Required value",
            ErrorType::Duplicate => "Duplicate value",
            ErrorType::Invalid | ErrorType::TypeInvalid => "Invalid value",
            ErrorType::NotSupported => "Unsupported value",
            ErrorType::Forbidden => "Forbidden",
            ErrorType::TooLong => "Too long",
            ErrorType::TooMany => "Too many",
            ErrorType::Internal => "Internal error",
        }
    }
}

/// The offending value of a [`FieldError`], printed like upstream does.
#[derive(Debug, Clone, PartialEq)]
pub enum BadValue {
    /// Not shown.
    Omitted,
    /// A string, shown Go-quoted (`"Foo"`).
    Str(String),
    /// An integer, shown bare.
    Int(i64),
    /// Anything else, shown as compact JSON.
    Json(Value),
}

/// One field-level validation error, as upstream's `field.Error`.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldError {
    /// The kind of failure.
    pub kind: ErrorType,
    /// The JSON path of the field, e.g. `metadata.name`.
    pub field: String,
    /// The offending value.
    pub value: BadValue,
    /// The explanation, e.g. a regex error.
    pub detail: String,
}

impl FieldError {
    /// `Invalid value` error.
    pub fn invalid(field: impl Into<String>, value: BadValue, detail: impl Into<String>) -> Self {
        FieldError {
            kind: ErrorType::Invalid,
            field: field.into(),
            value,
            detail: detail.into(),
        }
    }

    /// `Required value` error.
    pub fn required(field: impl Into<String>, detail: impl Into<String>) -> Self {
        FieldError {
            kind: ErrorType::Required,
            field: field.into(),
            value: BadValue::Omitted,
            detail: detail.into(),
        }
    }

    /// `Forbidden` error.
    pub fn forbidden(field: impl Into<String>, detail: impl Into<String>) -> Self {
        FieldError {
            kind: ErrorType::Forbidden,
            field: field.into(),
            value: BadValue::Omitted,
            detail: detail.into(),
        }
    }

    /// `Too long` error for a limit in bytes.
    pub fn too_long(field: impl Into<String>, max_bytes: usize) -> Self {
        let unit = if max_bytes == 1 { "byte" } else { "bytes" };
        FieldError {
            kind: ErrorType::TooLong,
            field: field.into(),
            value: BadValue::Omitted,
            detail: format!("may not be more than {max_bytes} {unit}"),
        }
    }

    /// The `causes[].reason` for a `Status`.
    pub fn reason(&self) -> &'static str {
        self.kind.reason()
    }

    /// The message without the field name (`causes[].message` upstream).
    pub fn body(&self) -> String {
        let mut out = String::from(self.kind.as_str());
        let shows_value = !matches!(
            self.kind,
            ErrorType::Required | ErrorType::Forbidden | ErrorType::TooLong | ErrorType::Internal
        );
        if shows_value {
            match &self.value {
                BadValue::Omitted => {}
                BadValue::Str(s) => {
                    out.push_str(": ");
                    out.push_str(&gofmt::go_quote(s));
                }
                BadValue::Int(i) => {
                    out.push_str(": ");
                    out.push_str(&i.to_string());
                }
                BadValue::Json(v) => {
                    out.push_str(": ");
                    out.push_str(&gofmt::json_encode(v));
                }
            }
        }
        if !self.detail.is_empty() {
            out.push_str(": ");
            out.push_str(&self.detail);
        }
        out
    }

    /// The `causes[]` entry of a `Status` (`reason`, `message`, `field`).
    pub fn to_cause(&self) -> Value {
        serde_json::json!({
            "reason": self.reason(),
            "message": self.body(),
            "field": self.field,
        })
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.body())
    }
}

impl std::error::Error for FieldError {}

/// A list of field errors; `Display` aggregates them like upstream
/// (`[a, b]`, duplicates removed, a single error unbracketed).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ErrorList(pub Vec<FieldError>);

impl ErrorList {
    /// True when there is no error.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Number of errors.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Adds one error.
    pub fn push(&mut self, err: FieldError) {
        self.0.push(err);
    }

    /// The `causes[]` of a `Status`.
    pub fn to_causes(&self) -> Vec<Value> {
        self.0.iter().map(FieldError::to_cause).collect()
    }
}

impl fmt::Display for ErrorList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0.as_slice() {
            [] => Ok(()),
            [one] => write!(f, "{one}"),
            many => {
                let mut seen: Vec<String> = Vec::with_capacity(many.len());
                for err in many {
                    let msg = err.to_string();
                    if !seen.contains(&msg) {
                        seen.push(msg);
                    }
                }
                if seen.len() == 1 {
                    f.write_str(&seen[0])
                } else {
                    write!(f, "[{}]", seen.join(", "))
                }
            }
        }
    }
}

impl std::error::Error for ErrorList {}

impl IntoIterator for ErrorList {
    type Item = FieldError;
    type IntoIter = std::vec::IntoIter<FieldError>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

fn sorted_entries(map: &Map<String, Value>) -> Vec<(&String, &Value)> {
    let mut entries: Vec<_> = map.iter().collect();
    entries.sort_by(|a, b| a.0.cmp(b.0));
    entries
}

/// Validates a label map (`metadata.labels`, a selector's `matchLabels`):
/// keys are qualified names, values label values. Non-string values are
/// reported as invalid.
pub fn validate_labels(labels: &Map<String, Value>, path: &str) -> ErrorList {
    let mut errs = ErrorList::default();
    for (key, value) in sorted_entries(labels) {
        for msg in is_qualified_name(key) {
            errs.push(FieldError::invalid(path, BadValue::Str(key.clone()), msg));
        }
        match value.as_str() {
            Some(v) => {
                for msg in is_valid_label_value(v) {
                    errs.push(FieldError::invalid(path, BadValue::Str(v.to_owned()), msg));
                }
            }
            None => errs.push(FieldError::invalid(
                path,
                BadValue::Json(value.clone()),
                "label values must be strings",
            )),
        }
    }
    errs
}

/// Total size of annotations (keys plus string values) as upstream counts it.
pub fn annotations_size(annotations: &Map<String, Value>) -> usize {
    annotations
        .iter()
        .map(|(k, v)| k.len() + v.as_str().map_or(0, str::len))
        .sum()
}

/// Validates `metadata.annotations`: keys are qualified names (case
/// ignored), and the total size is at most 256 KiB.
pub fn validate_annotations(annotations: &Map<String, Value>, path: &str) -> ErrorList {
    let mut errs = ErrorList::default();
    for (key, _) in sorted_entries(annotations) {
        for msg in is_qualified_name(&key.to_lowercase()) {
            errs.push(FieldError::invalid(path, BadValue::Str(key.clone()), msg));
        }
    }
    if annotations_size(annotations) > TOTAL_ANNOTATION_SIZE_LIMIT_B {
        errs.push(FieldError::too_long(path, TOTAL_ANNOTATION_SIZE_LIMIT_B));
    }
    errs
}

/// Validates `metadata.finalizers`: qualified names, and not both `orphan`
/// and `foregroundDeletion`.
pub fn validate_finalizers(finalizers: &[Value], path: &str) -> ErrorList {
    let mut errs = ErrorList::default();
    let mut orphan = false;
    let mut foreground = false;
    for finalizer in finalizers {
        let name = finalizer.as_str().unwrap_or("");
        for msg in is_qualified_name(name) {
            errs.push(FieldError::invalid(
                path,
                BadValue::Str(name.to_owned()),
                msg,
            ));
        }
        orphan |= name == "orphan";
        foreground |= name == "foregroundDeletion";
    }
    if orphan && foreground {
        errs.push(FieldError::invalid(
            path,
            BadValue::Json(Value::Array(finalizers.to_vec())),
            "finalizer orphan and foregroundDeletion cannot be both set",
        ));
    }
    errs
}

/// Splits an `apiVersion` into (group, version) like upstream's
/// `ParseGroupVersion`; `None` when it has more than one `/`.
pub fn parse_group_version(api_version: &str) -> Option<(&str, &str)> {
    if api_version.is_empty() || api_version == "/" {
        return Some(("", ""));
    }
    match api_version.split_once('/') {
        None => Some(("", api_version)),
        Some((group, version)) if !version.contains('/') => Some((group, version)),
        Some(_) => None,
    }
}

/// Validates `metadata.ownerReferences`: apiVersion with a version, kind,
/// name and uid set, no `v1 Event` owner, at most one controller.
pub fn validate_owner_references(refs: &[Value], path: &str) -> ErrorList {
    let mut errs = ErrorList::default();
    let mut first_controller: Option<String> = None;
    for owner in refs {
        let get = |k: &str| owner.get(k).and_then(Value::as_str).unwrap_or("");
        let api_version = get("apiVersion");
        let kind = get("kind");
        let (group, version) = parse_group_version(api_version).unwrap_or(("", ""));
        if version.is_empty() {
            errs.push(FieldError::invalid(
                format!("{path}.apiVersion"),
                BadValue::Str(api_version.to_owned()),
                "version must not be empty",
            ));
        }
        for (field, value) in [("kind", kind), ("name", get("name")), ("uid", get("uid"))] {
            if value.is_empty() {
                errs.push(FieldError::invalid(
                    format!("{path}.{field}"),
                    BadValue::Str(String::new()),
                    "must not be empty",
                ));
            }
        }
        if group.is_empty() && version == "v1" && kind == "Event" {
            errs.push(FieldError::invalid(
                path,
                BadValue::Json(owner.clone()),
                "/v1, Kind=Event is disallowed from being an owner",
            ));
        }
        if owner.get("controller").and_then(Value::as_bool) == Some(true) {
            let current = format!("{kind}/{}", get("name"));
            match &first_controller {
                Some(first) => errs.push(FieldError::invalid(
                    path,
                    BadValue::Json(Value::Array(refs.to_vec())),
                    format!(
                        "Only one reference can have Controller set to true. Found \"true\" in references for {first} and {current}"
                    ),
                )),
                None => first_controller = Some(current),
            }
        }
    }
    errs
}

/// Validates an object's `metadata` on create like upstream's
/// `ValidateObjectMetaAccessor`: `generateName` and `name` with `rule`,
/// namespace presence, generation, labels, annotations, owner references and
/// finalizers. `meta` is the `metadata` object (anything else counts as empty).
pub fn validate_object_meta(meta: &Value, namespaced: bool, rule: NameRule) -> ErrorList {
    let mut errs = ErrorList::default();
    let get = |k: &str| meta.get(k).and_then(Value::as_str).unwrap_or("");
    let generate_name = get("generateName");
    if !generate_name.is_empty() {
        for msg in rule.validate(generate_name, true) {
            errs.push(FieldError::invalid(
                "metadata.generateName",
                BadValue::Str(generate_name.to_owned()),
                msg,
            ));
        }
    }
    let name = get("name");
    if name.is_empty() {
        errs.push(FieldError::required(
            "metadata.name",
            "name or generateName is required",
        ));
    } else {
        for msg in rule.validate(name, false) {
            errs.push(FieldError::invalid(
                "metadata.name",
                BadValue::Str(name.to_owned()),
                msg,
            ));
        }
    }
    let namespace = get("namespace");
    if namespaced {
        if namespace.is_empty() {
            errs.push(FieldError::required("metadata.namespace", ""));
        } else {
            for msg in is_dns1123_label(namespace) {
                errs.push(FieldError::invalid(
                    "metadata.namespace",
                    BadValue::Str(namespace.to_owned()),
                    msg,
                ));
            }
        }
    } else if !namespace.is_empty() {
        errs.push(FieldError::forbidden(
            "metadata.namespace",
            "not allowed on this type",
        ));
    }
    if let Some(generation) = meta.get("generation").and_then(Value::as_i64)
        && generation < 0
    {
        errs.push(FieldError::invalid(
            "metadata.generation",
            BadValue::Int(generation),
            "must be greater than or equal to 0",
        ));
    }
    if let Some(labels) = meta.get("labels").and_then(Value::as_object) {
        errs.0.extend(validate_labels(labels, "metadata.labels"));
    }
    if let Some(annotations) = meta.get("annotations").and_then(Value::as_object) {
        errs.0
            .extend(validate_annotations(annotations, "metadata.annotations"));
    }
    if let Some(refs) = meta.get("ownerReferences").and_then(Value::as_array) {
        errs.0
            .extend(validate_owner_references(refs, "metadata.ownerReferences"));
    }
    if let Some(finalizers) = meta.get("finalizers").and_then(Value::as_array) {
        errs.0
            .extend(validate_finalizers(finalizers, "metadata.finalizers"));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

    #[test]
    fn subdomain_accepts_dotted_lowercase_names() {
        for ok in [
            "a",
            "abc",
            "a-b",
            "a.b",
            "0",
            "my-app.example.com",
            &"a".repeat(253),
        ] {
            assert!(is_dns1123_subdomain(ok).is_empty(), "{ok}");
        }
    }

    #[test]
    fn subdomain_rejects_with_upstream_message() {
        for bad in ["", "A", "-a", "a-", "a..b", ".a", "a_b", "a.", "é"] {
            assert_eq!(
                is_dns1123_subdomain(bad),
                vec![SUBDOMAIN_MSG.to_owned()],
                "{bad}"
            );
        }
    }

    #[test]
    fn subdomain_reports_length_in_characters() {
        let long = "a".repeat(254);
        assert_eq!(
            is_dns1123_subdomain(&long),
            vec!["must be no more than 253 characters".to_owned()]
        );
    }

    #[test]
    fn label_rejects_dots_separately_and_keeps_the_double_space() {
        assert_eq!(
            is_dns1123_label("a.b"),
            vec!["must not contain dots".to_owned()]
        );
        assert_eq!(
            is_dns1123_label("Abc"),
            vec!["a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')".to_owned()]
        );
        assert_eq!(
            is_dns1123_label(&"a".repeat(64)),
            vec!["must be no more than 63 characters".to_owned()]
        );
    }

    #[test]
    fn dns1035_label_must_start_with_a_letter() {
        assert!(is_dns1035_label("web-1").is_empty());
        assert_eq!(
            is_dns1035_label("1web"),
            vec!["a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')".to_owned()]
        );
    }

    #[test]
    fn qualified_name_checks_prefix_and_name_parts() {
        assert!(is_qualified_name("app").is_empty());
        assert!(is_qualified_name("app.kubernetes.io/name").is_empty());
        assert!(is_qualified_name("My_Key.1").is_empty());
        assert_eq!(
            is_qualified_name("/a"),
            vec!["prefix part must be non-empty".to_owned()]
        );
        assert_eq!(
            is_qualified_name("a/"),
            vec![
                "name part must be non-empty".to_owned(),
                "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')".to_owned()
            ]
        );
        assert_eq!(
            is_qualified_name(&"a".repeat(64)),
            vec!["name part must be no more than 63 bytes".to_owned()]
        );
        assert_eq!(
            is_qualified_name("a/b/c"),
            vec!["a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')".to_owned()]
        );
        let errs = is_qualified_name("Example.com/x");
        assert_eq!(errs.len(), 1);
        assert!(errs[0].starts_with("prefix part a lowercase RFC 1123 subdomain"));
    }

    #[test]
    fn label_values_allow_empty_and_report_bytes() {
        assert!(is_valid_label_value("").is_empty());
        assert!(is_valid_label_value("v1.2_3-x").is_empty());
        assert_eq!(
            is_valid_label_value("-x"),
            vec!["a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')".to_owned()]
        );
        assert_eq!(
            is_valid_label_value(&"a".repeat(64)),
            vec!["must be no more than 63 bytes".to_owned()]
        );
    }

    #[test]
    fn path_segment_names_forbid_dots_slash_and_percent() {
        assert_eq!(is_path_segment_name("."), vec!["may not be '.'".to_owned()]);
        assert_eq!(
            is_path_segment_name(".."),
            vec!["may not be '..'".to_owned()]
        );
        assert_eq!(
            is_path_segment_name("a/b%c"),
            vec![
                "may not contain '/'".to_owned(),
                "may not contain '%'".to_owned()
            ]
        );
        assert!(is_path_segment_name("system:controller:x").is_empty());
        assert!(is_path_segment_prefix(".").is_empty());
    }

    #[test]
    fn generate_name_prefix_with_trailing_dash_is_valid() {
        assert!(NameRule::Dns1123Subdomain.validate("web-", true).is_empty());
        assert_eq!(mask_trailing_dash("ab-"), "aa");
        assert_eq!(mask_trailing_dash("-"), "-");
        assert!(
            !NameRule::Dns1123Subdomain
                .validate("web-", false)
                .is_empty()
        );
    }

    #[test]
    fn generate_name_cuts_to_58_and_appends_five_alphabet_chars() {
        let name = generate_name("web-");
        assert_eq!(name.len(), 9);
        assert!(name.starts_with("web-"));
        assert!(
            name[4..]
                .bytes()
                .all(|b| GENERATED_NAME_ALPHABET.contains(&b))
        );
        let long = "x".repeat(80);
        let name = generate_name(&long);
        assert_eq!(name.len(), 63);
        assert!(name.starts_with(&"x".repeat(58)));
        assert_ne!(generate_name("a-"), generate_name("a-"));
        // Cutting never splits a character.
        let name = generate_name(&"é".repeat(40));
        assert!(name.starts_with(&"é".repeat(29)));
    }

    #[test]
    fn name_rules_follow_upstream_per_resource() {
        assert_eq!(name_rule_for("", "namespaces"), NameRule::Dns1123Label);
        assert_eq!(name_rule_for("", "services"), NameRule::Dns1035Label);
        assert_eq!(
            name_rule_for("rbac.authorization.k8s.io", "clusterroles"),
            NameRule::PathSegment
        );
        assert_eq!(
            name_rule_for("example.com", "flighttickets"),
            NameRule::Dns1123Subdomain
        );
    }

    #[test]
    fn field_errors_print_like_upstream() {
        let err = FieldError::invalid("metadata.name", BadValue::Str("Foo".into()), "bad");
        assert_eq!(
            err.to_string(),
            "metadata.name: Invalid value: \"Foo\": bad"
        );
        assert_eq!(err.reason(), "FieldValueInvalid");
        let err = FieldError::required("metadata.name", "name or generateName is required");
        assert_eq!(
            err.to_string(),
            "metadata.name: Required value: name or generateName is required"
        );
        let err = FieldError::too_long("metadata.annotations", TOTAL_ANNOTATION_SIZE_LIMIT_B);
        assert_eq!(
            err.to_string(),
            "metadata.annotations: Too long: may not be more than 262144 bytes"
        );
        let list = ErrorList(vec![
            FieldError::required("a", ""),
            FieldError::required("a", ""),
            FieldError::forbidden("b", "no"),
        ]);
        assert_eq!(list.to_string(), "[a: Required value, b: Forbidden: no]");
    }

    #[test]
    fn object_meta_validation_reports_each_field() {
        let meta = json!({
            "name": "Bad_Name",
            "namespace": "default",
            "labels": {"app": "web", "bad key!": "-v"},
            "annotations": {"Example.COM/Ok": "x"},
            "finalizers": ["orphan", "foregroundDeletion"],
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Event", "name": "e", "uid": "1"},
                {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "a", "uid": "2", "controller": true},
                {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "b", "uid": "3", "controller": true}
            ]
        });
        let errs = validate_object_meta(&meta, true, NameRule::Dns1123Subdomain);
        let fields: Vec<&str> = errs.0.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(
            fields,
            [
                "metadata.name",
                "metadata.labels",
                "metadata.labels",
                "metadata.ownerReferences",
                "metadata.ownerReferences",
                "metadata.finalizers"
            ]
        );
        assert!(errs.0[3].detail.contains("/v1, Kind=Event is disallowed"));
        assert!(errs.0[4].detail.contains("ReplicaSet/a and ReplicaSet/b"));

        let errs = validate_object_meta(
            &json!({"namespace": "x"}),
            false,
            NameRule::Dns1123Subdomain,
        );
        assert_eq!(
            errs.to_string(),
            "[metadata.name: Required value: name or generateName is required, metadata.namespace: Forbidden: not allowed on this type]"
        );
    }

    #[test]
    fn oversized_annotations_are_too_long() {
        let mut map = Map::new();
        map.insert(
            "a".into(),
            Value::String("x".repeat(TOTAL_ANNOTATION_SIZE_LIMIT_B)),
        );
        let errs = validate_annotations(&map, "metadata.annotations");
        assert_eq!(errs.len(), 1);
        assert_eq!(errs.0[0].kind, ErrorType::TooLong);
    }
}
