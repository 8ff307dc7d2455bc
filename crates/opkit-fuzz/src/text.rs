//! Targets for the string grammars of `opkit-apimachinery`: label selectors, field selectors,
//! names and label keys/values, and client-go's JSONPath.
//!
//! These strings arrive straight from URLs (`?labelSelector=`, `?fieldSelector=`), object
//! metadata and CRD printer columns, so every input must either parse into something that
//! round-trips through its canonical form or be refused with an error — never panic.

use opkit_apimachinery::validation::{
    is_dns1035_label, is_dns1123_label, is_dns1123_subdomain, is_path_segment_name,
    is_qualified_name, is_valid_label_value, mask_trailing_dash, validate_annotations,
    validate_finalizers, validate_labels,
};
use opkit_apimachinery::{FieldSelector, JsonPath, LabelSelector, Operator, fields, generate_name};
use serde_json::{Map, Value, json};

use crate::input::Input;

/// Label-selector parsing from raw bytes (taken as UTF-8; other bytes are skipped).
pub fn label_selector(data: &[u8]) {
    if let Ok(s) = std::str::from_utf8(data) {
        label_selector_str(s);
    }
}

/// Label-selector properties for one string: a selector that parses re-parses from its
/// canonical string to an equal selector (and that string is a fixed point); every
/// requirement has a valid key and valid values; matching label sets built from the selector's
/// own keys and values neither panics nor disagrees between the two equal selectors.
pub fn label_selector_str(s: &str) {
    let Ok(sel) = LabelSelector::parse(s) else {
        return;
    };
    let canonical = sel.to_string();
    let again = match LabelSelector::parse(&canonical) {
        Ok(again) => again,
        Err(e) => panic!("canonical form {canonical:?} of {s:?} does not re-parse: {e}"),
    };
    assert_eq!(sel, again, "{s:?} → {canonical:?} re-parses differently");
    assert_eq!(
        again.to_string(),
        canonical,
        "canonical form is not a fixed point"
    );
    for r in sel.requirements() {
        assert!(
            is_qualified_name(r.key()).is_empty(),
            "{s:?} accepted the invalid key {:?}",
            r.key()
        );
        for v in r.values() {
            assert!(
                is_valid_label_value(v).is_empty(),
                "{s:?} accepted the invalid value {v:?}"
            );
        }
    }
    let mut labels = Map::new();
    assert!(sel.matches(&labels) == again.matches(&labels));
    for r in sel.requirements() {
        let value = r.values().first().cloned().unwrap_or_default();
        labels.insert(r.key().to_owned(), Value::String(value));
        let one: Map<String, Value> = [(r.key().to_owned(), labels[r.key()].clone())]
            .into_iter()
            .collect();
        let single = r.matches_with(|k| one.get(k).and_then(Value::as_str));
        let expected = match r.operator() {
            Operator::In | Operator::Equals | Operator::DoubleEquals | Operator::Exists => true,
            Operator::NotIn | Operator::NotEquals | Operator::DoesNotExist => false,
            Operator::GreaterThan | Operator::LessThan => single,
        };
        assert_eq!(
            single, expected,
            "requirement {r} against its own first value {one:?}"
        );
    }
    assert!(sel.matches(&labels) == again.matches(&labels));
    let object = json!({"metadata": {"labels": labels}});
    assert!(sel.matches_object(&object) == again.matches(&labels));
    for r in sel.requirements() {
        let _ = sel.requires_exact_match(r.key());
    }
}

/// Field-selector parsing from raw bytes (taken as UTF-8).
pub fn field_selector(data: &[u8]) {
    if let Ok(s) = std::str::from_utf8(data) {
        field_selector_str(s);
    }
}

/// Field-selector properties for one string: a selector that parses re-parses from its
/// canonical string to the same requirements (in an order that may differ: see the regression
/// test `field_selector_double_equals_round_trips_to_same_requirements`); escaping any value round-trips; checking it against
/// the pod and custom-resource field tables and matching a pod never panics.
pub fn field_selector_str(s: &str) {
    let escaped = fields::escape_value(s);
    match fields::unescape_value(&escaped) {
        Ok(back) => assert_eq!(back, s, "escape/unescape of {s:?} via {escaped:?}"),
        Err(e) => panic!("escaped form {escaped:?} of {s:?} is refused: {e}"),
    }
    let Ok(sel) = FieldSelector::parse(s) else {
        return;
    };
    let canonical = sel.to_string();
    let again = match FieldSelector::parse(&canonical) {
        Ok(again) => again,
        Err(e) => panic!("canonical form {canonical:?} of {s:?} does not re-parse: {e}"),
    };
    // Terms are ordered by their raw text (as upstream), and the canonical form writes `==` as
    // `=`, so the order may differ after a round trip; the requirements may not.
    assert_eq!(
        sorted(&sel),
        sorted(&again),
        "{s:?} → {canonical:?} re-parses differently"
    );
    let pod = json!({"metadata": {"name": "p", "namespace": "default"},
        "spec": {"nodeName": "n", "restartPolicy": "Always"}, "status": {"phase": "Running"}});
    assert_eq!(sel.matches_object(&pod), again.matches_object(&pod));
    let _ = sel.matches(|f| fields::field_value(&pod, f));
    if let Ok(converted) = sel.for_resource("", "pods") {
        let _ = converted.matches_object(&pod);
    }
    let _ = sel.for_resource("apps", "deployments");
    let _ = sel.for_custom_resource(true, &[".spec.x"]);
    for r in sel.requirements() {
        let _ = sel.requires_exact_match(&r.field);
        let _ = fields::field_value(&pod, &r.field);
    }
}

/// The requirements of a field selector in a fixed order.
fn sorted(sel: &FieldSelector) -> Vec<(&str, &str, &str)> {
    let mut out: Vec<_> = sel
        .requirements()
        .iter()
        .map(|r| (r.field.as_str(), r.op.as_str(), r.value.as_str()))
        .collect();
    out.sort_unstable();
    out
}

/// Name, label and metadata validation from raw bytes (taken as UTF-8).
pub fn names_and_labels(data: &[u8]) {
    if let Ok(s) = std::str::from_utf8(data) {
        names_and_labels_str(s);
    }
}

/// Validation properties for one string, from the grammars' definitions: a DNS-1123 label is
/// also a subdomain, at most 63 bytes of `[a-z0-9-]`; a subdomain is at most 253 bytes; a
/// DNS-1035 label is a DNS-1123 label; a valid label value is at most 63 bytes; a name made by
/// `generateName` from a valid prefix keeps it; the map and list validators agree with the
/// single-value checks.
pub fn names_and_labels_str(s: &str) {
    let label = is_dns1123_label(s).is_empty();
    let subdomain = is_dns1123_subdomain(s).is_empty();
    if label {
        assert!(subdomain, "{s:?} is a DNS-1123 label but not a subdomain");
        assert!(s.len() <= 63 && !s.is_empty());
        assert!(
            s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        );
    }
    if subdomain {
        assert!(s.len() <= 253 && !s.is_empty());
    }
    if is_dns1035_label(s).is_empty() {
        assert!(label, "{s:?} is a DNS-1035 label but not a DNS-1123 label");
    }
    let qualified = is_qualified_name(s).is_empty();
    if qualified {
        assert!(s.len() <= 253 + 1 + 63);
    }
    let value = is_valid_label_value(s).is_empty();
    if value {
        assert!(s.len() <= 63);
    }
    let _ = is_path_segment_name(s);
    let masked = mask_trailing_dash(s);
    assert!(masked.len() <= s.len() + 1);

    let generated = generate_name(s);
    assert!(generated.len() <= s.len().max(58) + 5);
    if subdomain && s.len() <= 58 {
        assert!(generated.starts_with(s));
    }

    let mut labels = Map::new();
    labels.insert(s.to_owned(), Value::String(s.to_owned()));
    let errs = validate_labels(&labels, "metadata.labels");
    assert_eq!(
        errs.is_empty(),
        qualified && value,
        "validate_labels({s:?}) disagrees with the key and value checks: {errs}"
    );
    let _ = validate_annotations(&labels, "metadata.annotations");
    let _ = validate_finalizers(&[Value::String(s.to_owned())], "metadata.finalizers");
}

/// JSONPath templates from raw bytes: the first byte picks the data, the rest is the template.
pub fn jsonpath(data: &[u8]) {
    let mut input = Input::new(data);
    let value = input.json(3);
    if let Ok(template) = std::str::from_utf8(input.rest()) {
        jsonpath_str(template, &value);
    }
}

/// JSONPath properties: parsing, evaluating and printing any template against any value
/// never panics (results are bounded by the data, so evaluation terminates).
pub fn jsonpath_str(template: &str, data: &Value) {
    if let Ok(path) = JsonPath::parse(template) {
        let _ = path.execute(data);
        let _ = path.first(data);
        let _ = path.clone().allow_missing_keys(true).execute(data);
    }
    if let Ok(path) = JsonPath::parse_expr(template) {
        let _ = path.execute(data);
    }
}
