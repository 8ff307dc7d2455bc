//! Is replacing an installed CustomResourceDefinition with a bundle's safe for the objects already
//! stored? The checks and their messages are OLM v1's upgrade-safety preflight, run before an
//! install or upgrade overwrites a CRD (and, in opkit, before a rollback or downgrade):
//!
//! - `NoScopeChange`: the scope stays `Namespaced` or `Cluster`;
//! - `NoStoredVersionRemoved`: every version in the old CRD's `status.storedVersions` remains;
//! - `NoExistingFieldRemoved`: every field of a version that remains, remains;
//! - `ChangeValidator`: each changed field of a version in both CRDs passes the change rules;
//! - `ServedVersionValidator`: each pair of served versions of the new CRD (older → newer, in
//!   Kubernetes' version order) passes the same rules, unless a conversion webhook converts.
//!
//! The change rules look at one schema node at a time (its children are nodes of their own):
//! descriptions may change; enum values may be added but not removed, and an enum may not
//! appear where there was none; no new required fields; `maximum`/`maxItems`/`maxLength`/
//! `maxProperties` may not appear or decrease, their `min` siblings may not appear or increase;
//! a default may not appear, change or go; the type may not change. Any other difference (a
//! pattern, a format, `nullable`…) is a change the rules do not know, and OLM refuses it rather
//! than guess. CRDs are read as JSON values (`apiextensions.k8s.io/v1`), as a client holds them.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::fmt;

use opkit_apimachinery::{go_quote, go_sprint};
use serde_json::{Map, Value};

/// The preflight's checks, named as OLM names them in its messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// The CRD's scope changed.
    NoScopeChange,
    /// A stored version is no longer declared.
    NoStoredVersionRemoved,
    /// A field of a remaining version is gone.
    NoExistingFieldRemoved,
    /// A pair of served versions of the new CRD differs unsafely.
    ServedVersionValidator,
    /// A field of a version present in both CRDs changed unsafely.
    ChangeValidator,
}

impl Check {
    /// The name OLM prints.
    pub fn name(self) -> &'static str {
        match self {
            Check::NoScopeChange => "NoScopeChange",
            Check::NoStoredVersionRemoved => "NoStoredVersionRemoved",
            Check::NoExistingFieldRemoved => "NoExistingFieldRemoved",
            Check::ServedVersionValidator => "ServedVersionValidator",
            Check::ChangeValidator => "ChangeValidator",
        }
    }
}

/// One reason an upgrade is unsafe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The check that found it.
    pub check: Check,
    /// What it found, in OLM's words (`version "v1", field "^.spec.size": maximum: …`).
    pub message: String,
}

/// Replacing a CRD would break what is stored or what clients rely on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct UnsafeUpgrade {
    /// The CRD's name.
    pub crd: String,
    /// Every problem found, in check order; never empty.
    pub problems: Vec<Problem>,
}

impl fmt::Display for UnsafeUpgrade {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, problem) in self.problems.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(
                f,
                "CustomResourceDefinition {} failed upgrade safety validation. {:?} validation failed: {}",
                self.crd,
                problem.check.name(),
                problem.message
            )?;
        }
        Ok(())
    }
}

/// Checks that `new` may replace `old` (both `apiextensions.k8s.io/v1` CRDs as JSON).
pub fn check_upgrade(old: &Value, new: &Value) -> Result<(), UnsafeUpgrade> {
    let mut problems = Vec::new();
    let mut found = |check: Check, messages: Vec<String>| {
        problems.extend(
            messages
                .into_iter()
                .map(|message| Problem { check, message }),
        );
    };
    found(Check::NoScopeChange, scope_change(old, new));
    found(
        Check::NoStoredVersionRemoved,
        stored_version_removed(old, new),
    );
    found(Check::NoExistingFieldRemoved, field_removed(old, new));
    found(Check::ServedVersionValidator, served_versions(new));
    found(Check::ChangeValidator, changed_fields(old, new));
    if problems.is_empty() {
        Ok(())
    } else {
        Err(UnsafeUpgrade {
            crd: str_at(new, &["metadata", "name"]).to_string(),
            problems,
        })
    }
}

fn str_at<'a>(value: &'a Value, path: &[&str]) -> &'a str {
    path.iter()
        .try_fold(value, |v, key| v.get(key))
        .and_then(Value::as_str)
        .unwrap_or("")
}

fn versions(crd: &Value) -> &[Value] {
    crd.pointer("/spec/versions")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn version_named<'a>(crd: &'a Value, name: &str) -> Option<&'a Value> {
    versions(crd)
        .iter()
        .find(|v| v.get("name").and_then(Value::as_str) == Some(name))
}

fn schema_of(version: &Value) -> Option<&Value> {
    version.pointer("/schema/openAPIV3Schema")
}

fn scope_change(old: &Value, new: &Value) -> Vec<String> {
    let (a, b) = (
        str_at(old, &["spec", "scope"]),
        str_at(new, &["spec", "scope"]),
    );
    if a == b {
        return Vec::new();
    }
    vec![format!(
        "scope changed from {} to {}",
        go_quote(a),
        go_quote(b)
    )]
}

fn stored_version_removed(old: &Value, new: &Value) -> Vec<String> {
    let stored = old
        .pointer("/status/storedVersions")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    stored
        .iter()
        .filter_map(Value::as_str)
        .find(|name| version_named(new, name).is_none())
        .map(|name| vec![format!("stored version {} removed", go_quote(name))])
        .unwrap_or_default()
}

fn field_removed(old: &Value, new: &Value) -> Vec<String> {
    let crd = str_at(new, &["metadata", "name"]);
    let mut out = Vec::new();
    for new_version in versions(new) {
        let name = version_name(new_version);
        let Some(old_version) = version_named(old, name) else {
            continue;
        };
        let before = flatten(schema_of(old_version));
        let after = flatten(schema_of(new_version));
        for field in before.keys().filter(|f| !after.contains_key(*f)) {
            out.push(format!(
                "crd/{crd} version/{name} field/{field} may not be removed"
            ));
        }
    }
    out
}

fn changed_fields(old: &Value, new: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for old_version in versions(old) {
        let name = version_name(old_version);
        let Some(new_version) = version_named(new, name) else {
            continue;
        };
        let before = flatten(schema_of(old_version));
        let after = flatten(schema_of(new_version));
        let context =
            |field: &str| format!("version {}, field {}", go_quote(name), go_quote(field));
        if judge_changes(&before, &after, name, context, &mut out).is_none() {
            // NoExistingFieldRemoved names the field; OLM gives up on the version here.
            out.push(format!(
                "calculating schema diff for CRD version {}",
                go_quote(name)
            ));
        }
    }
    out
}

fn served_versions(new: &Value) -> Vec<String> {
    if str_at(new, &["spec", "conversion", "strategy"]) == "Webhook" {
        return Vec::new();
    }
    let mut served: Vec<&Value> = versions(new)
        .iter()
        .filter(|v| v.get("served").and_then(Value::as_bool) == Some(true))
        .collect();
    served.sort_by(|a, b| kube_version_order(version_name(a), version_name(b)));
    let mut out = Vec::new();
    for (i, older) in served.iter().enumerate() {
        let older_name = version_name(older);
        let before = flatten(schema_of(older));
        for newer in &served[i + 1..] {
            let newer_name = version_name(newer);
            let after = flatten(schema_of(newer));
            let context = |field: &str| {
                format!(
                    "version upgrade {} to {}, field {}",
                    go_quote(older_name),
                    go_quote(newer_name),
                    go_quote(field)
                )
            };
            if judge_changes(&before, &after, older_name, context, &mut out).is_none() {
                out.push(format!(
                    "calculating schema diff between CRD versions {} and {}",
                    go_quote(older_name),
                    go_quote(newer_name)
                ));
            }
        }
    }
    out
}

/// A CRD version's name.
fn version_name(version: &Value) -> &str {
    str_at(version, &["name"])
}

/// Judges every node of `before` that differs in `after` (`context` words a node's messages);
/// `None`, judging nothing, when a node of `before` is missing from `after`: OLM gives up on
/// the pair.
fn judge_changes(
    before: &Flat,
    after: &Flat,
    version: &str,
    context: impl Fn(&str) -> String,
    out: &mut Vec<String>,
) -> Option<()> {
    if before.keys().any(|f| !after.contains_key(f)) {
        return None;
    }
    for (field, old_node) in before {
        let new_node = &after[field];
        if old_node != new_node {
            judge(old_node, new_node, &context(field), version, field, out);
        }
    }
    Some(())
}

/// Runs the change rules in OLM's order on one changed node. Each rule reports what it finds
/// and forgets its keyword on both sides; once nothing differs the change is understood.
fn judge(
    old: &Map<String, Value>,
    new: &Map<String, Value>,
    context: &str,
    version: &str,
    field: &str,
    out: &mut Vec<String>,
) {
    let (mut old, mut new) = (old.clone(), new.clone());
    for (key, rule) in RULES {
        if let Some(message) = rule(&old, &new) {
            out.push(format!("{context}: {message}"));
        }
        old.remove(*key);
        new.remove(*key);
        if old == new {
            return;
        }
    }
    out.push(format!(
        "version {}, field {} has unknown change, refusing to determine that change is safe",
        go_quote(version),
        go_quote(field)
    ));
}

type Rule = fn(&Map<String, Value>, &Map<String, Value>) -> Option<String>;

/// The rules in OLM's order, each with the keyword it is about.
const RULES: &[(&str, Rule)] = &[
    ("description", description),
    ("enum", enumeration),
    ("required", required),
    ("maximum", maximum),
    ("maxItems", max_items),
    ("maxLength", max_length),
    ("maxProperties", max_properties),
    ("minimum", minimum),
    ("minItems", min_items),
    ("minLength", min_length),
    ("minProperties", min_properties),
    ("default", default),
    ("type", type_change),
];

fn description(_: &Map<String, Value>, _: &Map<String, Value>) -> Option<String> {
    None
}

fn raw_set(node: &Map<String, Value>, key: &str) -> Vec<String> {
    let mut set: Vec<String> = node
        .get(key)
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .map(|v| match (key, v) {
                    ("required", Value::String(s)) => s.clone(),
                    _ => v.to_string(),
                })
                .collect()
        })
        .unwrap_or_default();
    set.sort();
    set.dedup();
    set
}

fn go_list(items: &[String]) -> String {
    format!("[{}]", items.join(" "))
}

fn enumeration(old: &Map<String, Value>, new: &Map<String, Value>) -> Option<String> {
    let (before, after) = (raw_set(old, "enum"), raw_set(new, "enum"));
    if before.is_empty() && !after.is_empty() {
        return Some(format!(
            "enum constraints {} added when there were no restrictions previously",
            go_list(&after)
        ));
    }
    let removed: Vec<String> = before.into_iter().filter(|v| !after.contains(v)).collect();
    (!removed.is_empty()).then(|| {
        format!(
            "enums {} removed from the set of previously allowed values",
            go_list(&removed)
        )
    })
}

fn required(old: &Map<String, Value>, new: &Map<String, Value>) -> Option<String> {
    let before = raw_set(old, "required");
    let added: Vec<String> = raw_set(new, "required")
        .into_iter()
        .filter(|f| !before.contains(f))
        .collect();
    (!added.is_empty()).then(|| format!("new required fields {} added", go_list(&added)))
}

/// A bound that may only loosen: `tighter` says whether the new value is stricter.
fn bound(
    old: &Map<String, Value>,
    new: &Map<String, Value>,
    key: &str,
    tighter: Ordering,
    verb: &str,
) -> Option<String> {
    let (before, after) = (
        old.get(key).and_then(Value::as_f64),
        new.get(key).and_then(Value::as_f64),
    );
    match (before, after) {
        (None, Some(after)) => Some(format!(
            "{key}: constraint {} added when there were no restrictions previously",
            go_number(after)
        )),
        (Some(before), Some(after)) if after.partial_cmp(&before) == Some(tighter) => {
            Some(format!(
                "{key}: constraint {verb} from {} to {}",
                go_number(before),
                go_number(after)
            ))
        }
        _ => None,
    }
}

fn maximum(old: &Map<String, Value>, new: &Map<String, Value>) -> Option<String> {
    bound(old, new, "maximum", Ordering::Less, "decreased")
}
fn max_items(old: &Map<String, Value>, new: &Map<String, Value>) -> Option<String> {
    bound(old, new, "maxItems", Ordering::Less, "decreased")
}
fn max_length(old: &Map<String, Value>, new: &Map<String, Value>) -> Option<String> {
    bound(old, new, "maxLength", Ordering::Less, "decreased")
}
fn max_properties(old: &Map<String, Value>, new: &Map<String, Value>) -> Option<String> {
    bound(old, new, "maxProperties", Ordering::Less, "decreased")
}
fn minimum(old: &Map<String, Value>, new: &Map<String, Value>) -> Option<String> {
    bound(old, new, "minimum", Ordering::Greater, "increased")
}
fn min_items(old: &Map<String, Value>, new: &Map<String, Value>) -> Option<String> {
    bound(old, new, "minItems", Ordering::Greater, "increased")
}
fn min_length(old: &Map<String, Value>, new: &Map<String, Value>) -> Option<String> {
    bound(old, new, "minLength", Ordering::Greater, "increased")
}
fn min_properties(old: &Map<String, Value>, new: &Map<String, Value>) -> Option<String> {
    bound(old, new, "minProperties", Ordering::Greater, "increased")
}

fn default(old: &Map<String, Value>, new: &Map<String, Value>) -> Option<String> {
    match (old.get("default"), new.get("default")) {
        (None, Some(after)) => Some(format!(
            "default value {} added when there was no default previously",
            go_quote(&after.to_string())
        )),
        (Some(before), None) => Some(format!(
            "default value {} removed",
            go_quote(&before.to_string())
        )),
        (Some(before), Some(after)) if before != after => Some(format!(
            "default value changed from {} to {}",
            go_quote(&before.to_string()),
            go_quote(&after.to_string())
        )),
        _ => None,
    }
}

fn type_change(old: &Map<String, Value>, new: &Map<String, Value>) -> Option<String> {
    let kind = |node: &Map<String, Value>| {
        node.get("type")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let (before, after) = (kind(old), kind(new));
    (before != after).then(|| {
        format!(
            "type changed from {} to {}",
            go_quote(&before),
            go_quote(&after)
        )
    })
}

/// A schema's nodes by their simple paths (see [`flatten`]).
type Flat = BTreeMap<String, Map<String, Value>>;

/// Every node of a schema by its simple path (`^`, `^.spec`, `^.spec.ports.items`), without its
/// `properties` and `items` (they are nodes of their own) and without keywords at their zero
/// value, which a typed Go reader cannot tell from absent.
fn flatten(schema: Option<&Value>) -> Flat {
    let mut out = BTreeMap::new();
    if let Some(schema) = schema {
        walk(schema, "^".to_string(), &mut out);
    }
    out
}

fn walk(node: &Value, path: String, out: &mut Flat) {
    let Some(map) = node.as_object() else {
        return;
    };
    let mut own = Map::new();
    for (key, value) in map {
        if key == "properties" || key == "items" || is_zero(key, value) {
            continue;
        }
        own.insert(key.clone(), value.clone());
    }
    if let Some(items) = map.get("items") {
        match items {
            Value::Array(list) => {
                for (i, item) in list.iter().enumerate() {
                    walk(item, format!("{path}.items[{i}]"), out);
                }
            }
            item => walk(item, format!("{path}.items"), out),
        }
    }
    for key in ["allOf", "anyOf", "oneOf"] {
        for (i, sub) in map
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            walk(sub, format!("{path}.{key}[{i}]"), out);
        }
    }
    if let Some(not) = map.get("not") {
        walk(not, format!("{path}.not"), out);
    }
    for (name, sub) in map
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        walk(sub, format!("{path}.{name}"), out);
    }
    if let Some(additional) = map.get("additionalProperties").filter(|v| v.is_object()) {
        walk(additional, format!("{path}.additionalProperties"), out);
    }
    for key in ["patternProperties", "definitions", "dependencies"] {
        for (name, sub) in map
            .get(key)
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            walk(sub, format!("{path}.{key}[{name}]"), out);
        }
    }
    if let Some(additional) = map.get("additionalItems").filter(|v| v.is_object()) {
        walk(additional, format!("{path}.additionalItems"), out);
    }
    out.insert(path, own);
}

fn is_zero(key: &str, value: &Value) -> bool {
    if matches!(key, "default" | "example" | "enum" | "const") {
        return false;
    }
    match value {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        _ => false,
    }
}

/// Kubernetes' order of version names, oldest first: `v1alpha1 < v1beta1 < v1beta2 < v1 < v2`;
/// names of another shape sort before, in reverse lexical order.
fn kube_version_order(a: &str, b: &str) -> Ordering {
    fn parse(name: &str) -> Option<(u8, u64, u64)> {
        let rest = name.strip_prefix('v')?;
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let major: u64 = rest[..digits].parse().ok()?;
        let rest = &rest[digits..];
        if rest.is_empty() {
            return Some((2, major, 0));
        }
        let (stage, minor) = if let Some(m) = rest.strip_prefix("alpha") {
            (0, m)
        } else {
            (1, rest.strip_prefix("beta")?)
        };
        let minor = minor.parse().ok()?;
        Some((stage, major, minor))
    }
    match (parse(a), parse(b)) {
        (Some(x), Some(y)) => x.cmp(&y),
        (None, None) => b.cmp(a),
        (None, Some(_)) => Ordering::Less,
        (Some(_), None) => Ordering::Greater,
    }
}

/// Go's `%v` of a bound OLM prints (a float64 or an int64: `3`, `0.5`, `1e+21`).
fn go_number(n: f64) -> String {
    go_sprint(&Value::from(n))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn crd(scope: &str, versions: Value) -> Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": scope, "versions": versions},
            "status": {"storedVersions": ["v1"]}
        })
    }

    fn one_version(spec: Value) -> Value {
        crd(
            "Namespaced",
            json!([{ "name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                "type": "object",
                "properties": {"spec": spec}
            }}}]),
        )
    }

    fn problems(old: &Value, new: &Value) -> Vec<String> {
        match check_upgrade(old, new) {
            Ok(()) => Vec::new(),
            Err(e) => e.problems.into_iter().map(|p| p.message).collect(),
        }
    }

    fn base() -> Value {
        json!({"type": "object", "properties": {
            "size": {"type": "integer", "minimum": 1, "maximum": 5, "description": "how many"},
            "mode": {"type": "string", "enum": ["A", "B"], "default": "A"}
        }})
    }

    fn changed(edit: impl FnOnce(&mut Value)) -> Value {
        let mut spec = base();
        edit(&mut spec);
        one_version(spec)
    }

    #[test]
    fn identical_crds_and_description_changes_are_safe() {
        let old = one_version(base());
        assert_eq!(problems(&old, &old), Vec::<String>::new());
        let new = changed(|s| s["properties"]["size"]["description"] = json!("how many pods"));
        assert_eq!(problems(&old, &new), Vec::<String>::new());
    }

    #[test]
    fn enum_additions_are_safe_but_removals_are_not() {
        let old = one_version(base());
        let added = changed(|s| s["properties"]["mode"]["enum"] = json!(["A", "B", "C"]));
        assert!(problems(&old, &added).is_empty());
        let removed = changed(|s| s["properties"]["mode"]["enum"] = json!(["A"]));
        assert_eq!(
            problems(&old, &removed),
            [
                r#"version "v1", field "^.spec.mode": enums ["B"] removed from the set of previously allowed values"#
            ]
        );
    }

    #[test]
    fn tighter_bounds_new_required_fields_and_type_changes_are_refused() {
        let old = one_version(base());
        let new = changed(|s| {
            s["properties"]["size"]["maximum"] = json!(3);
            s["properties"]["size"]["minimum"] = json!(2);
            s["required"] = json!(["size"]);
        });
        assert_eq!(
            problems(&old, &new),
            [
                r#"version "v1", field "^.spec": new required fields [size] added"#,
                r#"version "v1", field "^.spec.size": maximum: constraint decreased from 5 to 3"#,
                r#"version "v1", field "^.spec.size": minimum: constraint increased from 1 to 2"#,
            ]
        );
        let typed = changed(|s| s["properties"]["size"]["type"] = json!("string"));
        assert_eq!(
            problems(&old, &typed),
            [r#"version "v1", field "^.spec.size": type changed from "integer" to "string""#]
        );
    }

    #[test]
    fn looser_bounds_are_safe() {
        let old = one_version(base());
        let new = changed(|s| {
            s["properties"]["size"]["maximum"] = json!(10);
            s["properties"]["size"]
                .as_object_mut()
                .unwrap()
                .remove("minimum");
        });
        assert!(problems(&old, &new).is_empty());
    }

    #[test]
    fn default_changes_quote_the_raw_json_as_olm_does() {
        let old = one_version(base());
        let new = changed(|s| s["properties"]["mode"]["default"] = json!("B"));
        assert_eq!(
            problems(&old, &new),
            [r#"version "v1", field "^.spec.mode": default value changed from "\"A\"" to "\"B\"""#]
        );
    }

    #[test]
    fn a_change_no_rule_understands_is_refused() {
        let old = one_version(base());
        let new = changed(|s| s["properties"]["mode"]["pattern"] = json!("^[AB]$"));
        assert_eq!(
            problems(&old, &new),
            [
                r#"version "v1", field "^.spec.mode" has unknown change, refusing to determine that change is safe"#
            ]
        );
        let nullable_false = changed(|s| s["properties"]["mode"]["nullable"] = json!(false));
        assert!(
            problems(&old, &nullable_false).is_empty(),
            "false is Go's zero value"
        );
    }

    #[test]
    fn removed_fields_scope_changes_and_removed_stored_versions_are_refused() {
        let old = one_version(base());
        let new = changed(|s| {
            s["properties"].as_object_mut().unwrap().remove("mode");
        });
        let err = check_upgrade(&old, &new).unwrap_err();
        assert_eq!(err.problems[0].check, Check::NoExistingFieldRemoved);
        assert_eq!(
            err.problems[0].message,
            "crd/widgets.example.com version/v1 field/^.spec.mode may not be removed"
        );
        assert!(err.to_string().starts_with(
            "CustomResourceDefinition widgets.example.com failed upgrade safety validation. \"NoExistingFieldRemoved\" validation failed: "
        ));

        let mut cluster = old.clone();
        cluster["spec"]["scope"] = json!("Cluster");
        assert_eq!(
            problems(&old, &cluster),
            [r#"scope changed from "Namespaced" to "Cluster""#]
        );

        let mut renamed = old.clone();
        renamed["spec"]["versions"][0]["name"] = json!("v2");
        assert_eq!(problems(&old, &renamed), [r#"stored version "v1" removed"#]);
    }

    #[test]
    fn served_versions_of_the_new_crd_are_compared_oldest_to_newest() {
        let schema = |spec: Value| json!({"openAPIV3Schema": {"type": "object", "properties": {"spec": spec}}});
        let old = one_version(base());
        let mut narrowed = base();
        narrowed["properties"]["mode"]["enum"] = json!(["A"]);
        let new = crd(
            "Namespaced",
            json!([
                {"name": "v1", "served": true, "storage": true, "schema": schema(base())},
                {"name": "v1beta1", "served": true, "storage": false, "schema": schema(narrowed)},
            ]),
        );
        // v1beta1 is older than v1: going up, an enum value appears, which is safe.
        assert!(problems(&old, &new).is_empty());

        let mut widened = base();
        widened["properties"]["mode"]["enum"] = json!(["A", "B", "C"]);
        let new = crd(
            "Namespaced",
            json!([
                {"name": "v1", "served": true, "storage": true, "schema": schema(base())},
                {"name": "v1beta1", "served": true, "storage": false, "schema": schema(widened.clone())},
            ]),
        );
        assert_eq!(
            problems(&old, &new),
            [
                r#"version upgrade "v1beta1" to "v1", field "^.spec.mode": enums ["C"] removed from the set of previously allowed values"#
            ]
        );
        let mut webhook = new.clone();
        webhook["spec"]["conversion"] = json!({"strategy": "Webhook"});
        assert!(
            problems(&old, &webhook).is_empty(),
            "a conversion webhook converts"
        );
    }

    #[test]
    fn kubernetes_version_names_sort_alpha_beta_ga() {
        let mut names = vec!["v2", "v1", "v1beta2", "foo", "v1alpha1", "v1beta1", "bar"];
        names.sort_by(|a, b| kube_version_order(a, b));
        assert_eq!(
            names,
            ["foo", "bar", "v1alpha1", "v1beta1", "v1beta2", "v1", "v2"]
        );
    }
}
