//! Sets of field paths, in the shape of their `FieldsV1` encoding.
//!
//! A path is a sequence of path elements, each kept as its `FieldsV1` key: `f:<name>` (a field
//! of an object), `k:<json>` (the item of a keyed list whose key fields have these values),
//! `v:<json>` (the item of a set with this value), `i:<n>` (an item by index, only read). A set
//! is a tree of such elements; a node is a *member* when the path ending there belongs to the
//! set (`.` in `FieldsV1` when the node also has children). Keeping elements as their encoded
//! strings makes decoding and encoding trivial and ordering the same as upstream's
//! (field names, then keys, then values, each sorted); the JSON inside `k:` and `v:` is
//! canonical (keys sorted, compact) so equal items always compare equal.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::MAX_DEPTH;
use crate::error::ApplyError;

/// A set of field paths (structured-merge-diff's `fieldpath.Set`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSet {
    member: bool,
    children: BTreeMap<String, FieldSet>,
}

impl FieldSet {
    /// The empty set.
    pub fn new() -> FieldSet {
        FieldSet::default()
    }

    /// Whether the set holds no path.
    pub fn is_empty(&self) -> bool {
        !self.member && self.children.is_empty()
    }

    /// Adds the path made of these `FieldsV1` elements (`["f:spec", "f:replicas"]`).
    pub fn insert<S: AsRef<str>>(&mut self, path: &[S]) {
        let mut node = self;
        for pe in path {
            node = node.children.entry(pe.as_ref().to_string()).or_default();
        }
        node.member = true;
    }

    /// Whether the path is in the set.
    pub fn contains<S: AsRef<str>>(&self, path: &[S]) -> bool {
        let mut node = self;
        for pe in path {
            match node.children.get(pe.as_ref()) {
                Some(c) => node = c,
                None => return false,
            }
        }
        node.member
    }

    /// Whether this node is itself a member (for the root: never, unless built so).
    pub(crate) fn is_member(&self) -> bool {
        self.member
    }

    pub(crate) fn set_member(&mut self, member: bool) {
        self.member = member;
    }

    /// The child node for one path element.
    pub(crate) fn child(&self, pe: &str) -> Option<&FieldSet> {
        self.children.get(pe)
    }

    pub(crate) fn child_mut(&mut self, pe: &str) -> &mut FieldSet {
        self.children.entry(pe.to_string()).or_default()
    }

    pub(crate) fn children(&self) -> impl Iterator<Item = (&String, &FieldSet)> {
        self.children.iter()
    }

    /// Drops the child for `pe` when it holds nothing.
    pub(crate) fn prune_child(&mut self, pe: &str) {
        if self.children.get(pe).is_some_and(FieldSet::is_empty) {
            self.children.remove(pe);
        }
    }

    /// Keeps only the top-level fields `keep` accepts (and everything below them).
    pub(crate) fn retain_top_level(&mut self, mut keep: impl FnMut(&str) -> bool) {
        self.children.retain(|pe, _| match pe.strip_prefix("f:") {
            Some(name) => keep(name),
            None => true,
        });
    }

    /// Adds every path of `other`.
    pub fn union_with(&mut self, other: &FieldSet) {
        self.member |= other.member;
        for (pe, child) in &other.children {
            self.children
                .entry(pe.clone())
                .or_default()
                .union_with(child);
        }
    }

    /// The paths of either set.
    pub fn union(&self, other: &FieldSet) -> FieldSet {
        let mut out = self.clone();
        out.union_with(other);
        out
    }

    /// Removes the paths that are in `other` (paths below them stay: upstream's `Difference`).
    pub fn difference_with(&mut self, other: &FieldSet) {
        if other.member {
            self.member = false;
        }
        for (pe, theirs) in &other.children {
            if let Some(mine) = self.children.get_mut(pe) {
                mine.difference_with(theirs);
                if mine.is_empty() {
                    self.children.remove(pe);
                }
            }
        }
    }

    /// The paths of this set that are not in `other`.
    pub fn difference(&self, other: &FieldSet) -> FieldSet {
        let mut out = self.clone();
        out.difference_with(other);
        out
    }

    /// The paths in both sets.
    pub fn intersection(&self, other: &FieldSet) -> FieldSet {
        let mut out = FieldSet {
            member: self.member && other.member,
            children: BTreeMap::new(),
        };
        for (pe, mine) in &self.children {
            if let Some(theirs) = other.children.get(pe) {
                let both = mine.intersection(theirs);
                if !both.is_empty() {
                    out.children.insert(pe.clone(), both);
                }
            }
        }
        out
    }

    /// Removes the paths in `other` and everything below them (upstream's
    /// `RecursiveDifference`).
    pub fn recursive_difference_with(&mut self, other: &FieldSet) {
        for (pe, theirs) in &other.children {
            if theirs.member {
                self.children.remove(pe);
            } else if let Some(mine) = self.children.get_mut(pe) {
                mine.recursive_difference_with(theirs);
                if mine.is_empty() {
                    self.children.remove(pe);
                }
            }
        }
    }

    /// Every member path, in order, as `FieldsV1` elements.
    pub fn paths(&self) -> Vec<Vec<String>> {
        let mut out = Vec::new();
        let mut stack = Vec::new();
        self.collect(&mut stack, &mut out);
        out
    }

    fn collect(&self, stack: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
        if self.member {
            out.push(stack.clone());
        }
        for (pe, child) in &self.children {
            stack.push(pe.clone());
            child.collect(stack, out);
            stack.pop();
        }
    }

    /// The `FieldsV1` encoding.
    pub fn to_fields_v1(&self) -> Value {
        let mut map = Map::new();
        if self.member && !self.children.is_empty() {
            map.insert(".".into(), Value::Object(Map::new()));
        }
        for (pe, child) in &self.children {
            map.insert(pe.clone(), child.to_fields_v1());
        }
        Value::Object(map)
    }

    /// Decodes `FieldsV1`. `k:` and `v:` elements are re-encoded canonically.
    pub fn from_fields_v1(value: &Value) -> Result<FieldSet, ApplyError> {
        let mut set = FieldSet::from_node(value, 0)?;
        // The root is never a member itself.
        set.member = false;
        Ok(set)
    }

    fn from_node(value: &Value, depth: usize) -> Result<FieldSet, ApplyError> {
        if depth > MAX_DEPTH {
            return Err(ApplyError::TooDeep { max: MAX_DEPTH });
        }
        let Value::Object(map) = value else {
            return Err(ApplyError::InvalidManagedFields(
                "fieldsV1 nodes must be objects".into(),
            ));
        };
        let mut set = FieldSet {
            member: map.is_empty(),
            children: BTreeMap::new(),
        };
        for (key, child) in map {
            if key == "." {
                set.member = true;
                continue;
            }
            let pe = canonical_element(key)?;
            let node = FieldSet::from_node(child, depth + 1)?;
            set.children.entry(pe).or_default().union_with(&node);
        }
        Ok(set)
    }
}

/// A decoded element re-encoded canonically; errors on unknown prefixes and bad JSON.
fn canonical_element(key: &str) -> Result<String, ApplyError> {
    let bad = || ApplyError::InvalidManagedFields(format!("invalid path element {key:?}"));
    let (prefix, rest) = key.split_at_checked(2).ok_or_else(bad)?;
    match prefix {
        "f:" => Ok(key.to_string()),
        "i:" => rest
            .parse::<usize>()
            .map(|_| key.to_string())
            .map_err(|_| bad()),
        "k:" | "v:" => {
            let v: Value = serde_json::from_str(rest).map_err(|_| bad())?;
            if prefix == "k:" && !v.is_object() {
                return Err(bad());
            }
            Ok(format!("{prefix}{}", canonical_json(&v)))
        }
        _ => Err(bad()),
    }
}

/// JSON with object keys sorted and no whitespace.
pub(crate) fn canonical_json(v: &Value) -> String {
    let mut out = String::new();
    write_canonical(v, &mut out);
    out
}

fn write_canonical(v: &Value, out: &mut String) {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort_unstable();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                if let Some(child) = m.get(k) {
                    write_canonical(child, out);
                }
            }
            out.push('}');
        }
        Value::Array(a) => {
            out.push('[');
            for (i, item) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// A path in structured-merge-diff's display syntax: `.spec.containers[name="app"].image`,
/// `.metadata.finalizers[="a"]`, `.spec.ports[port=80,protocol="TCP"]`.
pub fn display_path<S: AsRef<str>>(path: &[S]) -> String {
    let mut out = String::new();
    for pe in path {
        let pe = pe.as_ref();
        if let Some(name) = pe.strip_prefix("f:") {
            out.push('.');
            out.push_str(name);
        } else if let Some(json) = pe.strip_prefix("k:") {
            let parts: Vec<String> = match serde_json::from_str::<Value>(json) {
                Ok(Value::Object(m)) => {
                    let mut keys: Vec<(&String, &Value)> = m.iter().collect();
                    keys.sort_unstable_by(|a, b| a.0.cmp(b.0));
                    keys.into_iter()
                        .map(|(k, v)| format!("{k}={}", display_value(v)))
                        .collect()
                }
                _ => vec![json.to_string()],
            };
            out.push_str(&format!("[{}]", parts.join(",")));
        } else if let Some(json) = pe.strip_prefix("v:") {
            let shown = serde_json::from_str::<Value>(json)
                .map(|v| display_value(&v))
                .unwrap_or_else(|_| json.to_string());
            out.push_str(&format!("[={shown}]"));
        } else if let Some(i) = pe.strip_prefix("i:") {
            out.push_str(&format!("[{i}]"));
        } else {
            out.push_str(pe);
        }
    }
    out
}

/// A value as structured-merge-diff's `value.ToString` shows it: strings quoted, the rest as JSON.
fn display_value(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{s:?}"),
        other => canonical_json(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn set(v: Value) -> FieldSet {
        FieldSet::from_fields_v1(&v).unwrap()
    }

    #[test]
    fn fields_v1_round_trips_with_dot_for_members_that_have_children() {
        let v = json!({"f:metadata": {"f:labels": {".": {}, "f:app": {}}},
            "f:spec": {"f:containers": {"k:{\"name\":\"a\"}": {".": {}, "f:image": {}}}}});
        let s = set(v.clone());
        assert!(s.contains(&["f:metadata", "f:labels"]));
        assert!(s.contains(&["f:metadata", "f:labels", "f:app"]));
        assert!(!s.contains(&["f:metadata"]));
        assert_eq!(s.to_fields_v1(), v);
    }

    #[test]
    fn keys_are_canonicalised_when_decoded() {
        let s = set(json!({"k:{ \"protocol\": \"TCP\", \"containerPort\": 80 }": {}}));
        assert!(s.contains(&["k:{\"containerPort\":80,\"protocol\":\"TCP\"}"]));
    }

    #[test]
    fn malformed_fields_v1_is_an_error() {
        assert!(FieldSet::from_fields_v1(&json!({"x:y": {}})).is_err());
        assert!(FieldSet::from_fields_v1(&json!({"k:[1]": {}})).is_err());
        assert!(FieldSet::from_fields_v1(&json!({"f:a": 1})).is_err());
    }

    #[test]
    fn difference_keeps_children_of_removed_members_but_recursive_difference_drops_them() {
        let a = set(json!({"f:a": {".": {}, "f:b": {}}, "f:c": {}}));
        let b = set(json!({"f:a": {}}));
        assert_eq!(
            a.difference(&b).to_fields_v1(),
            json!({"f:a": {"f:b": {}}, "f:c": {}})
        );
        let mut r = a.clone();
        r.recursive_difference_with(&b);
        assert_eq!(r.to_fields_v1(), json!({"f:c": {}}));
    }

    #[test]
    fn union_and_intersection() {
        let a = set(json!({"f:a": {}, "f:b": {"f:x": {}}}));
        let b = set(json!({"f:b": {"f:x": {}, "f:y": {}}}));
        assert_eq!(
            a.union(&b).to_fields_v1(),
            json!({"f:a": {}, "f:b": {"f:x": {}, "f:y": {}}})
        );
        assert_eq!(
            a.intersection(&b).to_fields_v1(),
            json!({"f:b": {"f:x": {}}})
        );
    }

    #[test]
    fn paths_display_like_structured_merge_diff() {
        assert_eq!(
            display_path(&["f:spec", "k:{\"name\":\"app\"}", "f:image"]),
            ".spec[name=\"app\"].image"
        );
        assert_eq!(
            display_path(&["f:ports", "k:{\"port\":80,\"protocol\":\"TCP\"}"]),
            ".ports[port=80,protocol=\"TCP\"]"
        );
        assert_eq!(
            display_path(&["f:metadata", "f:finalizers", "v:\"a\""]),
            ".metadata.finalizers[=\"a\"]"
        );
    }
}
