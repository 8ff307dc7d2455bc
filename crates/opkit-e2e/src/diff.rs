//! The failure output of an assert, as kuttl's `PrettyDiff`: a unified diff (3 lines of
//! context) of the expected and the actual object as YAML with sorted keys, after dropping the
//! server-managed fields nobody asserts on and eliding long fields the expected object does not
//! mention.

use serde_json::Value;

const DROPPED_METADATA: &[&str] = &[
    "resourceVersion",
    "creationTimestamp",
    "selfLink",
    "uid",
    "generation",
];
const DROPPED_ANNOTATION: &str = "deployment.kubernetes.io/revision";
const ELIDED: &str = "[... elided field over 10 lines long ...]";
const ELIDE_LINES: usize = 10;

/// `<Kind>:<namespace>/<name>`, kuttl's `ResourceID`.
pub(crate) fn resource_id(object: &Value) -> String {
    format!(
        "{}:{}/{}",
        crate::yaml::kind(object),
        crate::yaml::meta(object, "namespace"),
        crate::yaml::meta(object, "name")
    )
}

fn clean(object: &Value) -> Value {
    let mut object = object.clone();
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        for f in DROPPED_METADATA {
            meta.remove(*f);
        }
        meta.remove("managedFields");
        let empty = match meta.get_mut("annotations").and_then(Value::as_object_mut) {
            Some(a) => {
                a.remove(DROPPED_ANNOTATION);
                a.is_empty()
            }
            None => false,
        };
        if empty {
            meta.remove("annotations");
        }
    }
    object
}

/// `sigs.k8s.io/yaml.Marshal`, as kuttl renders objects (go-yaml's quoting and key order).
fn to_yaml(v: &Value) -> String {
    opkit_template::yaml::to_yaml(&opkit_template::Value::from(v.clone()))
        .unwrap_or_else(|e| format!("<cannot render as YAML: {e}>\n"))
}

fn elide(expected: &Value, actual: &mut Value) {
    let (Some(e), Some(a)) = (expected.as_object(), actual.as_object_mut()) else {
        return;
    };
    for (key, value) in a.iter_mut() {
        match e.get(key) {
            Some(ev) => elide(ev, value),
            None => {
                if to_yaml(value).lines().count() >= ELIDE_LINES {
                    *value = Value::String(ELIDED.to_string());
                }
            }
        }
    }
}

/// The unified diff of `expected` against `actual`.
pub(crate) fn pretty_diff(expected: &Value, actual: &Value) -> String {
    let expected = clean(expected);
    let mut actual = clean(actual);
    elide(&expected, &mut actual);
    let (e, a) = (to_yaml(&expected), to_yaml(&actual));
    similar::TextDiff::from_lines(&e, &a)
        .unified_diff()
        .context_radius(3)
        .header(&resource_id(&expected), &resource_id(&actual))
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_diff_drops_server_fields_and_elides_long_unasserted_ones() {
        let expected = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "ns"}, "status": {"phase": "Running"}});
        let long: Vec<String> = (0..12).map(|i| format!("c{i}")).collect();
        let actual = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "ns", "uid": "u", "resourceVersion": "5",
                         "annotations": {"deployment.kubernetes.io/revision": "1"}},
            "spec": {"containers": long},
            "status": {"phase": "Pending"}});
        let diff = pretty_diff(&expected, &actual);
        assert!(diff.starts_with("--- Pod:ns/p\n+++ Pod:ns/p\n@@"), "{diff}");
        assert!(
            diff.contains("-  phase: Running\n+  phase: Pending\n"),
            "{diff}"
        );
        assert!(
            diff.contains("+spec: '[... elided field over 10 lines long ...]'"),
            "{diff}"
        );
        let quoted = pretty_diff(&json!({"data": {"a": "2"}}), &json!({"data": {"a": "1"}}));
        assert!(quoted.contains("-  a: \"2\"\n+  a: \"1\"\n"), "{quoted}");
        assert!(
            !diff.contains("uid") && !diff.contains("annotations"),
            "{diff}"
        );
    }
}
