//! Field selectors: the `fieldSelector` query parameter.
//!
//! A field selector filters LIST and WATCH by a few well-known fields of an
//! object (DESIGN item 4): `metadata.name=x`, `status.phase!=Running`,
//! comma-separated, all of which must hold. Values may contain `\,`, `\=` and
//! `\\` escapes. Unlike labels, the usable fields differ per resource and an
//! unknown field is a 400 BadRequest whose message clients show, so
//! [`supported_fields`] and [`FieldSelector::for_resource`] reproduce
//! upstream's per-kind lists and messages (kube-apiserver v1.35), and
//! [`field_value`] computes a field the way upstream's `GetAttrs` does
//! (booleans as `true`/`false`, counters defaulting to `0`, a missing field
//! comparing as the empty string).

use std::borrow::Cow;
use std::fmt;

use serde_json::Value;

use crate::gofmt;

/// How a field requirement compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FieldOp {
    /// `field=value` or `field==value`.
    Equals,
    /// `field!=value`.
    NotEquals,
}

impl FieldOp {
    /// The canonical operator text (`=` or `!=`).
    pub fn as_str(self) -> &'static str {
        match self {
            FieldOp::Equals => "=",
            FieldOp::NotEquals => "!=",
        }
    }
}

/// One `field op value` term, value unescaped.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FieldRequirement {
    /// The field path, e.g. `status.phase`.
    pub field: String,
    /// The comparison.
    pub op: FieldOp,
    /// The literal value (escapes already resolved).
    pub value: String,
}

/// Why a field selector was rejected. `Display` is upstream's message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FieldSelectorError {
    /// A term has no operator.
    #[error("invalid selector: '{selector}'; can't understand '{term}'")]
    Syntax {
        /// The whole selector.
        selector: String,
        /// The term that has no `=`, `==` or `!=`.
        term: String,
    },
    /// A backslash not followed by `\`, `,` or `=` (or at the end).
    #[error("invalid field selector: invalid escape sequence: {0}")]
    InvalidEscape(String),
    /// An unescaped `,` or `=` in a value; upstream prints the code point.
    #[error("invalid field selector: unescaped character in value: {}", u32::from(*.0))]
    UnescapedChar(char),
    /// The resource does not support selecting on this field (400
    /// BadRequest upstream). The message differs between kinds.
    #[error("{message}")]
    Unsupported {
        /// The field that was asked for.
        field: String,
        /// Upstream's message for this kind.
        message: String,
    },
}

impl FieldSelectorError {
    /// The `Status` reason the API server answers with (`BadRequest`).
    pub fn reason(&self) -> &'static str {
        "BadRequest"
    }

    /// The HTTP status code the API server answers with (400).
    pub fn code(&self) -> u16 {
        400
    }
}

/// A parsed field selector: all requirements must hold.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct FieldSelector {
    requirements: Vec<FieldRequirement>,
}

impl FieldSelector {
    /// The selector that matches everything.
    pub fn everything() -> Self {
        FieldSelector::default()
    }

    /// Parses the `fieldSelector` syntax. Terms are split on unescaped
    /// commas and sorted (as upstream does); empty terms are skipped; the
    /// first `!=`, `==` or `=` splits field from value; field names are
    /// taken literally, values unescaped.
    pub fn parse(s: &str) -> Result<Self, FieldSelectorError> {
        let mut terms = split_terms(s);
        terms.sort_unstable();
        let mut requirements = Vec::with_capacity(terms.len());
        for term in terms {
            if term.is_empty() {
                continue;
            }
            let Some((field, op, raw_value)) = split_term(term) else {
                return Err(FieldSelectorError::Syntax {
                    selector: s.to_owned(),
                    term: term.to_owned(),
                });
            };
            requirements.push(FieldRequirement {
                field: field.to_owned(),
                op,
                value: unescape_value(raw_value)?.into_owned(),
            });
        }
        Ok(FieldSelector { requirements })
    }

    /// The requirements, in the order upstream evaluates them.
    pub fn requirements(&self) -> &[FieldRequirement] {
        &self.requirements
    }

    /// True when the selector does not restrict anything.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Whether an object matches; `get` returns a field's value, `None`
    /// (missing) comparing as the empty string.
    pub fn matches(&self, get: impl Fn(&str) -> Option<String>) -> bool {
        self.requirements.iter().all(|r| {
            let have = get(&r.field);
            let have = have.as_deref().unwrap_or("");
            (have == r.value) == (r.op == FieldOp::Equals)
        })
    }

    /// Whether a JSON object matches, reading fields with [`field_value`]'s
    /// rules. Allocates only for non-string fields (booleans, counters).
    pub fn matches_object(&self, object: &Value) -> bool {
        self.requirements.iter().all(|r| {
            let have = field_value_ref(object, &r.field);
            let have = have.as_deref().unwrap_or("");
            (have == r.value) == (r.op == FieldOp::Equals)
        })
    }

    /// If the selector pins `field` to one value with `=`, that value.
    pub fn requires_exact_match(&self, field: &str) -> Option<&str> {
        self.requirements
            .iter()
            .find(|r| r.field == field && r.op == FieldOp::Equals)
            .map(|r| r.value.as_str())
    }

    /// Checks every field against what a built-in resource supports and
    /// returns the selector with fields in canonical form (`spec.host` →
    /// `spec.nodeName` for pods), or upstream's error for the first
    /// unsupported field. Unknown resources get upstream's default
    /// (`metadata.name`, `metadata.namespace`).
    pub fn for_resource(&self, group: &str, resource: &str) -> Result<Self, FieldSelectorError> {
        let mut out = self.clone();
        for r in &mut out.requirements {
            r.field = convert_field_label(group, resource, &r.field)?.to_owned();
        }
        Ok(out)
    }

    /// Checks every field for a custom resource: `metadata.name`,
    /// `metadata.namespace` when namespaced, and the CRD version's
    /// `selectableFields` paths (given without the leading dot).
    pub fn for_custom_resource<S: AsRef<str>>(
        &self,
        namespaced: bool,
        selectable_fields: &[S],
    ) -> Result<Self, FieldSelectorError> {
        for r in &self.requirements {
            let f = r.field.as_str();
            let ok = f == "metadata.name"
                || (namespaced && f == "metadata.namespace")
                || selectable_fields
                    .iter()
                    .any(|s| s.as_ref().trim_start_matches('.') == f);
            if !ok {
                return Err(not_supported(f));
            }
        }
        Ok(self.clone())
    }
}

impl fmt::Display for FieldSelector {
    /// Upstream's string form: `field=escaped,field!=escaped`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{}{}{}", r.field, r.op.as_str(), escape_value(&r.value))?;
        }
        Ok(())
    }
}

impl std::str::FromStr for FieldSelector {
    type Err = FieldSelectorError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        FieldSelector::parse(s)
    }
}

/// Escapes a literal value for use in a field selector (`\` → `\\`,
/// `,` → `\,`, `=` → `\=`).
pub fn escape_value(s: &str) -> Cow<'_, str> {
    if !s.contains(['\\', ',', '=']) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 4);
    for c in s.chars() {
        if matches!(c, '\\' | ',' | '=') {
            out.push('\\');
        }
        out.push(c);
    }
    Cow::Owned(out)
}

/// Resolves the escapes of a field selector value.
pub fn unescape_value(s: &str) -> Result<Cow<'_, str>, FieldSelectorError> {
    if !s.contains(['\\', ',', '=']) {
        return Ok(Cow::Borrowed(s));
    }
    let mut out = String::with_capacity(s.len());
    let mut in_slash = false;
    for c in s.chars() {
        if in_slash {
            if !matches!(c, '\\' | ',' | '=') {
                return Err(FieldSelectorError::InvalidEscape(format!("\\{c}")));
            }
            out.push(c);
            in_slash = false;
            continue;
        }
        match c {
            '\\' => in_slash = true,
            ',' | '=' => return Err(FieldSelectorError::UnescapedChar(c)),
            c => out.push(c),
        }
    }
    if in_slash {
        return Err(FieldSelectorError::InvalidEscape("\\".to_owned()));
    }
    Ok(Cow::Owned(out))
}

/// Splits on commas not escaped by a backslash (escapes stay in the terms).
fn split_terms(s: &str) -> Vec<&str> {
    if s.is_empty() {
        return Vec::new();
    }
    let mut terms = Vec::with_capacity(1);
    let mut start = 0;
    let mut in_slash = false;
    for (i, c) in s.char_indices() {
        if in_slash {
            in_slash = false;
        } else if c == '\\' {
            in_slash = true;
        } else if c == ',' {
            terms.push(&s[start..i]);
            start = i + 1;
        }
    }
    terms.push(&s[start..]);
    terms
}

/// Splits a term at the first operator, trying `!=`, `==`, `=` at each
/// position in turn.
fn split_term(term: &str) -> Option<(&str, FieldOp, &str)> {
    for (i, _) in term.char_indices() {
        let rest = &term[i..];
        for (op, kind) in [
            ("!=", FieldOp::NotEquals),
            ("==", FieldOp::Equals),
            ("=", FieldOp::Equals),
        ] {
            if let Some(value) = rest.strip_prefix(op) {
                return Some((&term[..i], kind, value));
            }
        }
    }
    None
}

const POD_FIELDS: &[&str] = &[
    "metadata.name",
    "metadata.namespace",
    "spec.nodeName",
    "spec.restartPolicy",
    "spec.schedulerName",
    "spec.serviceAccountName",
    "spec.hostNetwork",
    "status.phase",
    "status.podIP",
    "status.podIPs",
    "status.nominatedNodeName",
];
const NODE_FIELDS: &[&str] = &["metadata.name", "spec.unschedulable"];
const REPLICATION_CONTROLLER_FIELDS: &[&str] =
    &["metadata.name", "metadata.namespace", "status.replicas"];
const EVENT_FIELDS: &[&str] = &[
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.resourceVersion",
    "involvedObject.fieldPath",
    "reason",
    "reportingComponent",
    "source",
    "type",
    "metadata.namespace",
    "metadata.name",
];
const NAMESPACE_FIELDS: &[&str] = &["status.phase", "metadata.name"];
const SECRET_FIELDS: &[&str] = &["type", "metadata.namespace", "metadata.name"];
const SERVICE_FIELDS: &[&str] = &[
    "metadata.namespace",
    "metadata.name",
    "spec.clusterIP",
    "spec.type",
];
const JOB_FIELDS: &[&str] = &["metadata.name", "metadata.namespace", "status.successful"];
const SIGNER_FIELDS: &[&str] = &["metadata.name", "spec.signerName"];
const POD_CERTIFICATE_REQUEST_FIELDS: &[&str] = &[
    "metadata.name",
    "spec.signerName",
    "spec.podName",
    "spec.nodeName",
];
const DEFAULT_FIELDS: &[&str] = &["metadata.name", "metadata.namespace"];

/// How upstream words the error for a kind.
enum Style {
    /// `field label not supported: f` (core kinds, certificates, CRDs).
    NotSupported,
    /// `field label "f" not supported for batchv1.Job`.
    BatchJob,
    /// `"f" is not a known field selector: only "metadata.name", "metadata.namespace"`.
    Default,
}

fn spec(group: &str, resource: &str) -> (&'static [&'static str], Style) {
    match (group, resource) {
        ("", "pods") => (POD_FIELDS, Style::NotSupported),
        ("", "nodes") => (NODE_FIELDS, Style::NotSupported),
        ("", "replicationcontrollers") => (REPLICATION_CONTROLLER_FIELDS, Style::NotSupported),
        ("" | "events.k8s.io", "events") => (EVENT_FIELDS, Style::NotSupported),
        ("", "namespaces") => (NAMESPACE_FIELDS, Style::NotSupported),
        ("", "secrets") => (SECRET_FIELDS, Style::NotSupported),
        ("", "services") => (SERVICE_FIELDS, Style::NotSupported),
        ("batch", "jobs") => (JOB_FIELDS, Style::BatchJob),
        ("certificates.k8s.io", "certificatesigningrequests" | "clustertrustbundles") => {
            (SIGNER_FIELDS, Style::NotSupported)
        }
        ("certificates.k8s.io", "podcertificaterequests") => {
            (POD_CERTIFICATE_REQUEST_FIELDS, Style::NotSupported)
        }
        _ => (DEFAULT_FIELDS, Style::Default),
    }
}

/// The fields a built-in resource supports in field selectors, as upstream's
/// field label conversion functions list them. Resources without their own
/// list support `metadata.name` and `metadata.namespace`. (Pods also accept
/// the legacy alias `spec.host`, see [`convert_field_label`].)
pub fn supported_fields(group: &str, resource: &str) -> &'static [&'static str] {
    spec(group, resource).0
}

fn not_supported(field: &str) -> FieldSelectorError {
    FieldSelectorError::Unsupported {
        field: field.to_owned(),
        message: format!("field label not supported: {field}"),
    }
}

/// Maps a field label to its canonical name for a built-in resource (only
/// `spec.host` → `spec.nodeName` for pods changes), or upstream's error when
/// the resource does not support it.
pub fn convert_field_label<'a>(
    group: &str,
    resource: &str,
    field: &'a str,
) -> Result<&'a str, FieldSelectorError> {
    if (group, resource, field) == ("", "pods", "spec.host") {
        return Ok("spec.nodeName");
    }
    let (fields, style) = spec(group, resource);
    if fields.contains(&field) {
        return Ok(field);
    }
    Err(match style {
        Style::NotSupported => not_supported(field),
        Style::BatchJob => FieldSelectorError::Unsupported {
            field: field.to_owned(),
            message: format!(
                "field label {} not supported for batchv1.Job",
                gofmt::go_quote(field)
            ),
        },
        Style::Default => FieldSelectorError::Unsupported {
            field: field.to_owned(),
            message: format!(
                "{} is not a known field selector: only \"metadata.name\", \"metadata.namespace\"",
                gofmt::go_quote(field)
            ),
        },
    })
}

fn path<'v>(object: &'v Value, dotted: &str) -> Option<&'v Value> {
    dotted.split('.').try_fold(object, |v, key| v.get(key))
}

fn scalar_text(v: &Value) -> Option<Cow<'_, str>> {
    match v {
        Value::String(s) => Some(Cow::Borrowed(s)),
        Value::Bool(b) => Some(Cow::Borrowed(if *b { "true" } else { "false" })),
        Value::Number(n) => Some(Cow::Owned(match n.as_i64() {
            Some(i) => i.to_string(),
            None => n.as_u64().map_or_else(
                || gofmt::float_v(n.as_f64().unwrap_or(0.0)),
                |u| u.to_string(),
            ),
        })),
        _ => None,
    }
}

/// The value of a selectable field of an object, as upstream's `GetAttrs`
/// computes it: strings as they are, booleans `true`/`false` (absent →
/// `false` for `spec.hostNetwork` and `spec.unschedulable`), counters
/// decimal (absent → `0` for `status.replicas` and `status.successful`,
/// which reads a Job's `status.succeeded`), a pod's `status.podIP` from
/// `status.podIPs[0]`, an event's `source` from `source.component`. Works for
/// both `v1` and `events.k8s.io/v1` events. `None` when absent (compare as
/// `""`).
pub fn field_value(object: &Value, field: &str) -> Option<String> {
    field_value_ref(object, field).map(Cow::into_owned)
}

/// Like [`field_value`], borrowing from the object where it can.
pub fn field_value_ref<'v>(object: &'v Value, field: &str) -> Option<Cow<'v, str>> {
    let first = |paths: &[&str]| {
        paths
            .iter()
            .find_map(|p| path(object, p))
            .and_then(scalar_text)
    };
    match field {
        "spec.hostNetwork" | "spec.unschedulable" => {
            Some(first(&[field]).unwrap_or(Cow::Borrowed("false")))
        }
        "status.replicas" => Some(first(&[field]).unwrap_or(Cow::Borrowed("0"))),
        "status.successful" => Some(first(&["status.succeeded"]).unwrap_or(Cow::Borrowed("0"))),
        "status.podIP" => object
            .get("status")
            .and_then(|s| s.get("podIPs"))
            .and_then(|ips| ips.get(0))
            .and_then(|ip| ip.get("ip"))
            .and_then(scalar_text)
            .or_else(|| first(&["status.podIP"])),
        // Upstream never fills this one in: it always compares as "".
        "status.podIPs" => None,
        "source" => first(&["source.component", "deprecatedSource.component"]),
        "reportingComponent" => first(&["reportingComponent", "reportingController"]),
        f if f.starts_with("involvedObject.") => {
            let rest = &f["involvedObject.".len()..];
            first(&[f]).or_else(|| {
                path(object, "regarding")
                    .and_then(|r| path(r, rest))
                    .and_then(scalar_text)
            })
        }
        f => first(&[f]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn reqs(s: &str) -> Vec<(String, FieldOp, String)> {
        FieldSelector::parse(s)
            .unwrap()
            .requirements()
            .iter()
            .map(|r| (r.field.clone(), r.op, r.value.clone()))
            .collect()
    }

    #[test]
    fn parses_operators_and_sorts_terms() {
        assert_eq!(
            reqs("status.phase!=Running,metadata.name==a,spec.nodeName=n1"),
            vec![
                ("metadata.name".into(), FieldOp::Equals, "a".into()),
                ("spec.nodeName".into(), FieldOp::Equals, "n1".into()),
                ("status.phase".into(), FieldOp::NotEquals, "Running".into()),
            ]
        );
        assert!(FieldSelector::parse("").unwrap().is_empty());
        assert!(FieldSelector::parse(",,").unwrap().is_empty());
        assert_eq!(reqs("a="), vec![("a".into(), FieldOp::Equals, "".into())]);
        assert_eq!(
            reqs("a=!b"),
            vec![("a".into(), FieldOp::Equals, "!b".into())]
        );
        // Field names are literal: no trimming, as upstream.
        assert_eq!(
            reqs(" a = b"),
            vec![(" a ".into(), FieldOp::Equals, " b".into())]
        );
    }

    #[test]
    fn unescapes_values_and_escapes_them_back() {
        assert_eq!(
            reqs(r"metadata.name=a\,b\=c\\d"),
            vec![("metadata.name".into(), FieldOp::Equals, r"a,b=c\d".into())]
        );
        let sel = FieldSelector::parse(r"x=a\,b,y!=c").unwrap();
        assert_eq!(sel.to_string(), r"x=a\,b,y!=c");
        assert_eq!(escape_value("plain"), "plain");
    }

    #[test]
    fn reports_upstream_errors() {
        let e = FieldSelector::parse("a=b,c").unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid selector: 'a=b,c'; can't understand 'c'"
        );
        let e = FieldSelector::parse(r"a=b\x").unwrap_err();
        assert_eq!(
            e.to_string(),
            r"invalid field selector: invalid escape sequence: \x"
        );
        let e = FieldSelector::parse(r"a=b\").unwrap_err();
        assert_eq!(
            e.to_string(),
            r"invalid field selector: invalid escape sequence: \"
        );
        let e = FieldSelector::parse("a=b=c").unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid field selector: unescaped character in value: 61"
        );
        let e = FieldSelector::parse("a==b=c").unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid field selector: unescaped character in value: 61"
        );
    }

    #[test]
    fn matches_with_missing_fields_as_empty() {
        let sel = FieldSelector::parse("a=x,b!=y,c=").unwrap();
        let get = |f: &str| match f {
            "a" => Some("x".to_owned()),
            "b" => Some("z".to_owned()),
            _ => None,
        };
        assert!(sel.matches(get));
        assert!(!FieldSelector::parse("a=y").unwrap().matches(get));
        assert!(FieldSelector::parse("missing!=v").unwrap().matches(get));
    }

    #[test]
    fn supported_fields_follow_upstream() {
        assert!(supported_fields("", "pods").contains(&"spec.nodeName"));
        assert!(supported_fields("", "pods").contains(&"status.nominatedNodeName"));
        assert_eq!(
            supported_fields("", "nodes"),
            ["metadata.name", "spec.unschedulable"]
        );
        assert_eq!(
            supported_fields("", "namespaces"),
            ["status.phase", "metadata.name"]
        );
        assert!(supported_fields("", "events").contains(&"involvedObject.uid"));
        assert_eq!(
            supported_fields("", "secrets"),
            ["type", "metadata.namespace", "metadata.name"]
        );
        assert!(supported_fields("batch", "jobs").contains(&"status.successful"));
        assert_eq!(
            supported_fields("apps", "deployments"),
            ["metadata.name", "metadata.namespace"]
        );
    }

    #[test]
    fn unsupported_fields_use_each_kinds_message() {
        let sel = FieldSelector::parse("foo=bar").unwrap();
        let msg = |g: &str, r: &str| sel.for_resource(g, r).unwrap_err().to_string();
        assert_eq!(msg("", "pods"), "field label not supported: foo");
        assert_eq!(
            msg("batch", "jobs"),
            "field label \"foo\" not supported for batchv1.Job"
        );
        assert_eq!(
            msg("apps", "deployments"),
            "\"foo\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
        );
        let e = FieldSelector::parse("metadata.namespace=x")
            .unwrap()
            .for_resource("", "nodes");
        assert!(matches!(e, Err(FieldSelectorError::Unsupported { .. })));
        let converted = FieldSelector::parse("spec.host=n1")
            .unwrap()
            .for_resource("", "pods")
            .unwrap();
        assert_eq!(converted.requirements()[0].field, "spec.nodeName");
    }

    #[test]
    fn custom_resources_accept_metadata_and_selectable_fields() {
        let sel = FieldSelector::parse("spec.from=AMS,metadata.namespace=x").unwrap();
        assert!(sel.for_custom_resource(true, &[".spec.from"]).is_ok());
        assert_eq!(
            sel.for_custom_resource(false, &[".spec.from"])
                .unwrap_err()
                .to_string(),
            "field label not supported: metadata.namespace"
        );
        assert!(
            FieldSelector::parse("spec.to=x")
                .unwrap()
                .for_custom_resource(true, &["spec.from"])
                .is_err()
        );
    }

    #[test]
    fn field_values_follow_get_attrs() {
        let pod = json!({
            "metadata": {"name": "p", "namespace": "ns"},
            "spec": {"nodeName": "n1", "restartPolicy": "Always"},
            "status": {"phase": "Running", "podIP": "10.0.0.9", "podIPs": [{"ip": "10.0.0.1"}]}
        });
        assert_eq!(field_value(&pod, "metadata.name").as_deref(), Some("p"));
        assert_eq!(
            field_value(&pod, "spec.hostNetwork").as_deref(),
            Some("false")
        );
        assert_eq!(
            field_value(&pod, "status.podIP").as_deref(),
            Some("10.0.0.1")
        );
        assert_eq!(field_value(&pod, "status.podIPs"), None);
        assert_eq!(field_value(&pod, "spec.schedulerName"), None);
        let host = json!({"spec": {"hostNetwork": true}});
        assert_eq!(
            field_value(&host, "spec.hostNetwork").as_deref(),
            Some("true")
        );
        let job = json!({"status": {"succeeded": 2}});
        assert_eq!(field_value(&job, "status.successful").as_deref(), Some("2"));
        assert_eq!(
            field_value(&json!({}), "status.successful").as_deref(),
            Some("0")
        );
        let event = json!({"involvedObject": {"kind": "Pod"}, "source": {"component": "kubelet"}});
        assert_eq!(
            field_value(&event, "involvedObject.kind").as_deref(),
            Some("Pod")
        );
        assert_eq!(field_value(&event, "source").as_deref(), Some("kubelet"));
        let new_event = json!({"regarding": {"kind": "Pod"}, "reportingController": "c"});
        assert_eq!(
            field_value(&new_event, "involvedObject.kind").as_deref(),
            Some("Pod")
        );
        assert_eq!(
            field_value(&new_event, "reportingComponent").as_deref(),
            Some("c")
        );

        let sel =
            FieldSelector::parse("spec.nodeName=n1,status.phase!=Pending,spec.hostNetwork=false")
                .unwrap();
        assert!(sel.matches_object(&pod));
        assert!(sel.matches(|f| field_value(&pod, f)));
    }
}
