//! The four walks over objects that server-side apply is made of, each guided by [`Types`]:
//!
//! * [`field_set`]: the fields a value sets (upstream's `ToFieldSet`): scalars, atomic lists and
//!   objects, empty objects and `null`s are leaves; items of sets and keyed lists are members
//!   themselves (`.`) besides their fields; objects with fields are not.
//! * [`compare`]: what changed between two versions (upstream's `Compare`): leaves modified,
//!   nodes added or removed (a whole added subtree counts, down to its leaves).
//! * [`merge`]: an applied configuration merged into the live object (upstream's `Merge`): objects
//!   merge field by field, sets and keyed lists item by item in the configuration's order,
//!   anything else is replaced.
//! * [`remove`]: fields and items taken out of an object (upstream's `RemoveItems`).
//!
//! Server-maintained fields are never tracked (upstream's "strip" set): `apiVersion`, `kind`,
//! `metadata` itself and `metadata.{name, namespace, uid, resourceVersion, generation,
//! creationTimestamp, selfLink, managedFields}`.

use std::collections::HashMap;

use serde_json::{Map, Value};

use opkit_strategic::{FieldMeta, PatchMeta};

use crate::MAX_DEPTH;
use crate::error::ApplyError;
use crate::fieldset::FieldSet;
use crate::types::{ListShape, Types, field, item_elements, list_shape, object_is_atomic};

/// Where a walk is, for skipping server-maintained fields.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    Root,
    Metadata,
    Inner,
}

impl Level {
    fn skips(self, key: &str) -> bool {
        match self {
            Level::Root => matches!(key, "apiVersion" | "kind"),
            Level::Metadata => matches!(
                key,
                "name"
                    | "namespace"
                    | "uid"
                    | "resourceVersion"
                    | "generation"
                    | "creationTimestamp"
                    | "selfLink"
                    | "managedFields"
                    | "clusterName"
            ),
            Level::Inner => false,
        }
    }

    fn child(self, key: &str) -> Level {
        if self == Level::Root && key == "metadata" {
            Level::Metadata
        } else {
            Level::Inner
        }
    }
}

fn check_depth(depth: usize) -> Result<(), ApplyError> {
    if depth > MAX_DEPTH {
        Err(ApplyError::TooDeep { max: MAX_DEPTH })
    } else {
        Ok(())
    }
}

/// The root's `metadata` is never a member (upstream strips `.metadata`).
fn strip_root(set: &mut FieldSet) {
    if let Some(m) = set.child("f:metadata")
        && m.is_member()
    {
        set.child_mut("f:metadata").set_member(false);
        set.prune_child("f:metadata");
    }
}

// ---------------------------------------------------------------------------------------------
// Field sets

/// The fields `obj` sets.
pub fn field_set(types: Types<'_>, obj: &Value) -> Result<FieldSet, ApplyError> {
    let mut set = FieldSet::new();
    if let Value::Object(m) = obj {
        set_object(types.builtin, m, types.meta, Level::Root, &mut set, 0)?;
    }
    strip_root(&mut set);
    Ok(set)
}

fn set_object(
    builtin: bool,
    m: &Map<String, Value>,
    meta: &dyn PatchMeta,
    level: Level,
    node: &mut FieldSet,
    depth: usize,
) -> Result<(), ApplyError> {
    check_depth(depth)?;
    for (k, v) in m {
        if level.skips(k) {
            continue;
        }
        let fm = field(meta, k);
        let pe = format!("f:{k}");
        set_value(
            builtin,
            v,
            &fm,
            k,
            level.child(k),
            node.child_mut(&pe),
            depth + 1,
        )?;
        node.prune_child(&pe);
    }
    Ok(())
}

fn set_value(
    builtin: bool,
    v: &Value,
    fm: &FieldMeta<'_>,
    name: &str,
    level: Level,
    node: &mut FieldSet,
    depth: usize,
) -> Result<(), ApplyError> {
    match v {
        Value::Object(m) if !m.is_empty() && !object_is_atomic(fm, name, builtin) => {
            set_object(builtin, m, &*fm.value, level, node, depth)
        }
        Value::Array(items) => {
            let shape = list_shape(fm);
            match item_elements(&shape, items, builtin) {
                Some(pes) => {
                    for (item, pe) in items.iter().zip(pes) {
                        let child = node.child_mut(&pe);
                        child.set_member(true);
                        if let (ListShape::Map(_), Value::Object(im)) = (&shape, item) {
                            set_object(builtin, im, &*fm.value, Level::Inner, child, depth + 1)?;
                        }
                    }
                    Ok(())
                }
                None => {
                    node.set_member(true);
                    Ok(())
                }
            }
        }
        _ => {
            node.set_member(true);
            Ok(())
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Comparison

/// What changed from one version of an object to another.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Comparison {
    /// Nodes only the new version has (with everything below them).
    pub added: FieldSet,
    /// Nodes only the old version has (with everything below them).
    pub removed: FieldSet,
    /// Leaves (scalars, atomic values) both have, with different values.
    pub modified: FieldSet,
}

impl Comparison {
    /// Whether nothing changed.
    pub fn is_same(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.modified.is_empty()
    }

    /// Applies `f` to each of the three sets.
    pub(crate) fn for_each_set(&mut self, mut f: impl FnMut(&mut FieldSet)) {
        f(&mut self.added);
        f(&mut self.removed);
        f(&mut self.modified);
    }
}

/// Compares two versions of an object (`old` may be an empty object for a create).
pub fn compare(types: Types<'_>, old: &Value, new: &Value) -> Result<Comparison, ApplyError> {
    let mut w = Comparer {
        builtin: types.builtin,
        path: Vec::new(),
        cmp: Comparison::default(),
    };
    let empty = Map::new();
    let (l, r) = (
        old.as_object().unwrap_or(&empty),
        new.as_object().unwrap_or(&empty),
    );
    w.object(Some(l), Some(r), types.meta, Level::Root, 0)?;
    let mut cmp = w.cmp;
    cmp.for_each_set(strip_root);
    Ok(cmp)
}

struct Comparer {
    builtin: bool,
    path: Vec<String>,
    cmp: Comparison,
}

fn as_object(v: Option<&Value>) -> Option<Option<&Map<String, Value>>> {
    match v {
        None => Some(None),
        Some(Value::Object(m)) => Some(Some(m)),
        Some(_) => None,
    }
}

fn as_array(v: Option<&Value>) -> Option<&[Value]> {
    match v {
        None => Some(&[]),
        Some(Value::Array(a)) => Some(a),
        Some(_) => None,
    }
}

impl Comparer {
    fn leaf(&mut self, l: Option<&Value>, r: Option<&Value>) {
        match (l, r) {
            (None, Some(_)) => self.cmp.added.insert(&self.path),
            (Some(_), None) => self.cmp.removed.insert(&self.path),
            (Some(a), Some(b)) if a != b => self.cmp.modified.insert(&self.path),
            _ => {}
        }
    }

    fn presence(&mut self, l: Option<&Value>, r: Option<&Value>) {
        if self.path.is_empty() {
            return;
        }
        match (l, r) {
            (None, Some(_)) => self.cmp.added.insert(&self.path),
            (Some(_), None) => self.cmp.removed.insert(&self.path),
            _ => {}
        }
    }

    fn object(
        &mut self,
        l: Option<&Map<String, Value>>,
        r: Option<&Map<String, Value>>,
        meta: &dyn PatchMeta,
        level: Level,
        depth: usize,
    ) -> Result<(), ApplyError> {
        check_depth(depth)?;
        let empty = Map::new();
        let (lm, rm) = (l.unwrap_or(&empty), r.unwrap_or(&empty));
        let keys = lm
            .keys()
            .chain(rm.keys().filter(|k| !lm.contains_key(k.as_str())));
        for k in keys {
            if level.skips(k) {
                continue;
            }
            let fm = field(meta, k);
            self.path.push(format!("f:{k}"));
            let result = self.value(lm.get(k), rm.get(k), &fm, k, level.child(k), depth + 1);
            self.path.pop();
            result?;
        }
        Ok(())
    }

    /// An object value typed by `meta` (a map-list item), or a leaf when either side is not one.
    fn object_value(
        &mut self,
        l: Option<&Value>,
        r: Option<&Value>,
        meta: &dyn PatchMeta,
        depth: usize,
    ) -> Result<(), ApplyError> {
        match (as_object(l), as_object(r)) {
            (Some(lm), Some(rm))
                if !(lm.is_none_or(Map::is_empty) && rm.is_none_or(Map::is_empty)) =>
            {
                self.object(lm, rm, meta, Level::Inner, depth)?
            }
            _ => self.leaf(l, r),
        }
        self.presence(l, r);
        Ok(())
    }

    fn value(
        &mut self,
        l: Option<&Value>,
        r: Option<&Value>,
        fm: &FieldMeta<'_>,
        name: &str,
        level: Level,
        depth: usize,
    ) -> Result<(), ApplyError> {
        if let (Some(lm), Some(rm)) = (as_object(l), as_object(r)) {
            let both_empty = lm.is_none_or(Map::is_empty) && rm.is_none_or(Map::is_empty);
            if both_empty || object_is_atomic(fm, name, self.builtin) {
                self.leaf(l, r);
            } else {
                self.object(lm, rm, &*fm.value, level, depth)?;
            }
        } else if let (Some(la), Some(ra)) = (as_array(l), as_array(r)) {
            let shape = list_shape(fm);
            let elements = (
                item_elements(&shape, la, self.builtin),
                item_elements(&shape, ra, self.builtin),
            );
            match elements {
                (Some(le), Some(re)) if !(la.is_empty() && ra.is_empty()) => {
                    self.items(la, &le, ra, &re, &shape, fm, depth)?
                }
                _ => self.leaf(l, r),
            }
        } else {
            self.leaf(l, r);
        }
        self.presence(l, r);
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn items(
        &mut self,
        la: &[Value],
        le: &[String],
        ra: &[Value],
        re: &[String],
        shape: &ListShape,
        fm: &FieldMeta<'_>,
        depth: usize,
    ) -> Result<(), ApplyError> {
        check_depth(depth)?;
        let mut lmap: HashMap<&str, &Value> = HashMap::with_capacity(la.len());
        for (pe, v) in le.iter().zip(la) {
            lmap.entry(pe.as_str()).or_insert(v);
        }
        let mut rmap: HashMap<&str, &Value> = HashMap::with_capacity(ra.len());
        for (pe, v) in re.iter().zip(ra) {
            rmap.entry(pe.as_str()).or_insert(v);
        }
        let mut seen = std::collections::HashSet::with_capacity(le.len() + re.len());
        for pe in le.iter().chain(re.iter()) {
            if !seen.insert(pe.as_str()) {
                continue;
            }
            let (l, r) = (
                lmap.get(pe.as_str()).copied(),
                rmap.get(pe.as_str()).copied(),
            );
            self.path.push(pe.clone());
            let result = match shape {
                ListShape::Map(_) => self.object_value(l, r, &*fm.value, depth + 1),
                _ => {
                    self.leaf(l, r);
                    self.presence(l, r);
                    Ok(())
                }
            };
            self.path.pop();
            result?;
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// Merge

/// `config` merged into `live`. A `null` in the configuration removes the field (the server's
/// decoding would drop it anyway); the configuration still owns it.
pub fn merge(types: Types<'_>, live: &Value, config: &Value) -> Result<Value, ApplyError> {
    match (live, config) {
        (Value::Object(l), Value::Object(r)) => Ok(Value::Object(merge_object(
            types.builtin,
            l,
            r,
            types.meta,
            0,
        )?)),
        (_, Value::Object(_)) => Ok(config.clone()),
        _ => Err(ApplyError::NotAnObject),
    }
}

fn merge_object(
    builtin: bool,
    l: &Map<String, Value>,
    r: &Map<String, Value>,
    meta: &dyn PatchMeta,
    depth: usize,
) -> Result<Map<String, Value>, ApplyError> {
    check_depth(depth)?;
    let mut out = l.clone();
    for (k, rv) in r {
        if rv.is_null() {
            out.remove(k);
            continue;
        }
        let merged = match l.get(k) {
            Some(lv) => merge_value(builtin, lv, rv, &field(meta, k), k, depth + 1)?,
            None => rv.clone(),
        };
        out.insert(k.clone(), merged);
    }
    Ok(out)
}

fn merge_value(
    builtin: bool,
    l: &Value,
    r: &Value,
    fm: &FieldMeta<'_>,
    name: &str,
    depth: usize,
) -> Result<Value, ApplyError> {
    match (l, r) {
        (Value::Object(lm), Value::Object(rm)) if !object_is_atomic(fm, name, builtin) => Ok(
            Value::Object(merge_object(builtin, lm, rm, &*fm.value, depth)?),
        ),
        (Value::Array(la), Value::Array(ra)) => {
            let shape = list_shape(fm);
            match (
                item_elements(&shape, la, builtin),
                item_elements(&shape, ra, builtin),
            ) {
                (Some(le), Some(re)) => Ok(Value::Array(merge_items(
                    builtin, la, &le, ra, &re, &shape, fm, depth,
                )?)),
                _ => Ok(r.clone()),
            }
        }
        _ => Ok(r.clone()),
    }
}

/// Items of a set or keyed list: live items the configuration lacks keep their place; the
/// configuration's items come in its order, each before the next live item it also has.
#[allow(clippy::too_many_arguments)]
fn merge_items(
    builtin: bool,
    la: &[Value],
    le: &[String],
    ra: &[Value],
    re: &[String],
    shape: &ListShape,
    fm: &FieldMeta<'_>,
    depth: usize,
) -> Result<Vec<Value>, ApplyError> {
    let mut lindex: HashMap<&str, usize> = HashMap::with_capacity(la.len());
    for (i, pe) in le.iter().enumerate() {
        lindex.entry(pe.as_str()).or_insert(i);
    }
    let mut rindex: HashMap<&str, usize> = HashMap::with_capacity(ra.len());
    for (i, pe) in re.iter().enumerate() {
        rindex.entry(pe.as_str()).or_insert(i);
    }
    let mut out = Vec::with_capacity(la.len().max(ra.len()));
    let mut emitted = vec![false; ra.len()];
    let mut next = 0;
    let emit = |j: usize, out: &mut Vec<Value>| -> Result<(), ApplyError> {
        let item = match (shape, lindex.get(re[j].as_str())) {
            (ListShape::Map(_), Some(&i)) => match (&la[i], &ra[j]) {
                (Value::Object(lm), Value::Object(rm)) => {
                    Value::Object(merge_object(builtin, lm, rm, &*fm.value, depth + 1)?)
                }
                _ => ra[j].clone(),
            },
            _ => ra[j].clone(),
        };
        out.push(item);
        Ok(())
    };
    for (i, pe) in le.iter().enumerate() {
        match rindex.get(pe.as_str()) {
            None => out.push(la[i].clone()),
            Some(&j) => {
                if emitted[j] {
                    continue;
                }
                while next <= j {
                    if !emitted[next] && rindex.get(re[next].as_str()) == Some(&next) {
                        emit(next, &mut out)?;
                    }
                    emitted[next] = true;
                    next += 1;
                }
            }
        }
    }
    while next < ra.len() {
        if !emitted[next] && rindex.get(re[next].as_str()) == Some(&next) {
            emit(next, &mut out)?;
        }
        emitted[next] = true;
        next += 1;
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// Removal

/// Removes from `obj` every field and item in `set` (with everything below it). An object or
/// list emptied by the removal is removed from its parent too, as upstream (it becomes `null`
/// there, which decoding drops).
pub fn remove(types: Types<'_>, obj: &mut Value, set: &FieldSet) {
    if let Value::Object(m) = obj {
        remove_object(types.builtin, m, set, types.meta, 0);
    }
}

fn remove_object(
    builtin: bool,
    m: &mut Map<String, Value>,
    set: &FieldSet,
    meta: &dyn PatchMeta,
    depth: usize,
) {
    if depth > MAX_DEPTH {
        return;
    }
    for (pe, child) in set.children() {
        let Some(name) = pe.strip_prefix("f:") else {
            continue;
        };
        if child.is_member() {
            m.remove(name);
        } else if let Some(v) = m.get_mut(name) {
            let fm = field(meta, name);
            if remove_value(builtin, v, child, &fm, name, depth + 1) {
                m.remove(name);
            }
        }
    }
}

/// Returns whether the value was emptied by the removal.
fn remove_value(
    builtin: bool,
    v: &mut Value,
    set: &FieldSet,
    fm: &FieldMeta<'_>,
    name: &str,
    depth: usize,
) -> bool {
    match v {
        Value::Object(m) if !m.is_empty() && !object_is_atomic(fm, name, builtin) => {
            remove_object(builtin, m, set, &*fm.value, depth);
            m.is_empty()
        }
        Value::Array(items) if !items.is_empty() => {
            let shape = list_shape(fm);
            let Some(pes) = item_elements(&shape, items, builtin) else {
                return false;
            };
            let old = std::mem::take(items);
            for (mut item, pe) in old.into_iter().zip(pes) {
                match set.child(&pe) {
                    Some(c) if c.is_member() => continue,
                    Some(c) => {
                        if let (ListShape::Map(_), Value::Object(im)) = (&shape, &mut item) {
                            remove_object(builtin, im, c, &*fm.value, depth + 1);
                        }
                        items.push(item);
                    }
                    None => items.push(item),
                }
            }
            items.is_empty()
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opkit_strategic::{BuiltinPatchMeta, SchemaPatchMeta};
    use serde_json::json;

    fn deploy_meta() -> BuiltinPatchMeta {
        BuiltinPatchMeta::for_kind("apps", "v1", "Deployment").unwrap()
    }

    fn deployment() -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "namespace": "default", "labels": {"app": "a"},
                         "finalizers": ["x"], "resourceVersion": "3"},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "a"}},
                "template": {"metadata": {"labels": {"app": "a"}},
                    "spec": {"containers": [{"name": "app", "image": "app:1",
                        "args": ["a", "b"],
                        "ports": [{"containerPort": 80}],
                        "env": [{"name": "A", "value": "1"}]}]}}}})
    }

    #[test]
    fn field_set_of_a_builtin_kind_keys_lists_and_skips_server_fields() {
        let meta = deploy_meta();
        let set = field_set(Types::builtin(&meta), &deployment()).unwrap();
        let container = json!({".": {}, "f:name": {}, "f:image": {}, "f:args": {},
            "f:ports": {"k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}}},
            "f:env": {"k:{\"name\":\"A\"}": {".": {}, "f:name": {}, "f:value": {}}}});
        assert_eq!(
            set.to_fields_v1(),
            json!({
                "f:metadata": {"f:labels": {"f:app": {}}, "f:finalizers": {"v:\"x\"": {}}},
                "f:spec": {"f:replicas": {}, "f:selector": {},
                    "f:template": {"f:metadata": {"f:labels": {"f:app": {}}},
                        "f:spec": {"f:containers": {"k:{\"name\":\"app\"}": container}}}}
            })
        );
    }

    #[test]
    fn custom_resource_lists_follow_their_list_type_and_are_atomic_without_one() {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "items": {"type": "array", "x-kubernetes-list-type": "map",
                      "x-kubernetes-list-map-keys": ["name"],
                      "items": {"type": "object", "properties": {"name": {"type": "string"}, "v": {"type": "integer"}}}},
            "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            "plain": {"type": "array", "items": {"type": "string"}}}}}});
        let meta = SchemaPatchMeta::for_object(&schema);
        let obj =
            json!({"spec": {"items": [{"name": "a", "v": 1}], "tags": ["t"], "plain": ["p"]}});
        let set = field_set(Types::custom(&meta), &obj).unwrap();
        assert_eq!(
            set.to_fields_v1(),
            json!({"f:spec": {"f:items": {"k:{\"name\":\"a\"}": {".": {}, "f:name": {}, "f:v": {}}},
                "f:tags": {"v:\"t\"": {}}, "f:plain": {}}})
        );
    }

    #[test]
    fn empty_objects_and_nulls_are_leaves_empty_keyed_lists_are_nothing() {
        let meta = deploy_meta();
        let obj = json!({"spec": {"strategy": {}, "paused": null,
            "template": {"spec": {"containers": []}}}});
        let set = field_set(Types::builtin(&meta), &obj).unwrap();
        assert_eq!(
            set.to_fields_v1(),
            json!({"f:spec": {"f:strategy": {}, "f:paused": {}}})
        );
    }

    #[test]
    fn compare_reports_modified_leaves_and_added_and_removed_subtrees() {
        let meta = deploy_meta();
        let t = Types::builtin(&meta);
        let old = deployment();
        let mut new = deployment();
        new["spec"]["replicas"] = json!(3);
        new["spec"]["template"]["spec"]["containers"][0]["env"] =
            json!([{"name": "B", "value": "2"}]);
        new["metadata"]["resourceVersion"] = json!("4");
        let cmp = compare(t, &old, &new).unwrap();
        assert_eq!(
            cmp.modified.to_fields_v1(),
            json!({"f:spec": {"f:replicas": {}}})
        );
        let env = |k: &str| json!({"f:spec": {"f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"app\"}": {"f:env": {k: {".": {}, "f:name": {}, "f:value": {}}}}}}}}});
        assert_eq!(cmp.added.to_fields_v1(), env("k:{\"name\":\"B\"}"));
        assert_eq!(cmp.removed.to_fields_v1(), env("k:{\"name\":\"A\"}"));
        assert!(compare(t, &old, &old).unwrap().is_same());
    }

    #[test]
    fn merge_merges_keyed_lists_by_key_and_replaces_atomic_ones() {
        let meta = deploy_meta();
        let t = Types::builtin(&meta);
        let config = json!({"spec": {"replicas": null, "template": {"spec": {"containers": [
            {"name": "side", "image": "side:1"},
            {"name": "app", "image": "app:2", "args": ["c"]}]}}}});
        let out = merge(t, &deployment(), &config).unwrap();
        assert!(out["spec"].get("replicas").is_none());
        let cs = &out["spec"]["template"]["spec"]["containers"];
        assert_eq!(cs[0], json!({"name": "side", "image": "side:1"}));
        assert_eq!(cs[1]["image"], "app:2");
        assert_eq!(cs[1]["args"], json!(["c"]));
        assert_eq!(cs[1]["env"], json!([{"name": "A", "value": "1"}]));
    }

    #[test]
    fn merge_keeps_live_items_the_config_lacks_in_place() {
        let meta = BuiltinPatchMeta::object_meta();
        let t = Types::builtin(&meta);
        let live = json!({"finalizers": ["a", "b", "c"]});
        let out = merge(t, &live, &json!({"finalizers": ["d", "b"]})).unwrap();
        assert_eq!(out["finalizers"], json!(["a", "d", "b", "c"]));
    }

    #[test]
    fn remove_takes_out_items_and_drops_emptied_parents() {
        let meta = deploy_meta();
        let t = Types::builtin(&meta);
        let mut obj = deployment();
        let set = FieldSet::from_fields_v1(&json!({"f:metadata": {"f:labels": {"f:app": {}},
            "f:finalizers": {"v:\"x\"": {}}},
            "f:spec": {"f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"app\"}": {"f:env": {"k:{\"name\":\"A\"}": {}}}}}}}}))
        .unwrap();
        remove(t, &mut obj, &set);
        assert!(obj["metadata"].get("labels").is_none());
        assert!(obj["metadata"].get("finalizers").is_none());
        let c = &obj["spec"]["template"]["spec"]["containers"][0];
        assert!(c.get("env").is_none());
        assert_eq!(c["image"], "app:1");
    }

    #[test]
    fn absurd_nesting_is_refused_not_a_stack_overflow() {
        let mut v = json!(1);
        for _ in 0..(MAX_DEPTH + 10) {
            v = json!({"a": v});
        }
        let meta = opkit_strategic::NoPatchMeta;
        assert!(matches!(
            field_set(Types::custom(&meta), &v),
            Err(ApplyError::TooDeep { .. })
        ));
    }
}
