//! The two operations on managed fields (structured-merge-diff's `Updater`): [`apply`] and
//! [`update`].
//!
//! Both compare the live object with the result and take away from the *other* managers the
//! fields that changed (added or modified: the writer owns them now) or disappeared. An update
//! then gives its manager the changed fields; an apply gives its manager exactly the applied
//! configuration's fields — after refusing (unless forced) to change a field another manager
//! owns, and after removing the fields the manager applied last time, no longer applies and
//! nobody else owns.

use serde_json::Value;

use crate::error::{ApplyError, Conflict};
use crate::fieldset::{FieldSet, display_path};
use crate::managed::{ManagedFields, Operation};
use crate::types::Types;
use crate::walk::{Comparison, compare, field_set, merge, remove};

/// Fields a write ignores because another endpoint owns them (upstream's reset fields).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Reset {
    /// The write tracks every field.
    #[default]
    Nothing,
    /// A main-resource write of a kind with a status subresource: `status` is not tracked.
    Status,
    /// A status-subresource write: only `status` is tracked.
    AllButStatus,
}

/// What a write is about: the kind's types, the apiVersion written, the subresource, the fields
/// it ignores and the time to stamp on entries that change.
#[derive(Clone, Copy)]
pub struct Scope<'a> {
    /// How the kind's values are structured.
    pub types: Types<'a>,
    /// The apiVersion of the request (recorded in the entries).
    pub api_version: &'a str,
    /// `""` for the main resource, `"status"` for the status subresource.
    pub subresource: &'a str,
    /// Fields the write does not track.
    pub reset: Reset,
    /// The current time, RFC 3339 with seconds (`2024-01-01T00:00:00Z`).
    pub now: &'a str,
}

impl<'a> Scope<'a> {
    /// A main-resource write tracking every field.
    pub fn new(types: Types<'a>, api_version: &'a str, now: &'a str) -> Scope<'a> {
        Scope {
            types,
            api_version,
            subresource: "",
            reset: Reset::Nothing,
            now,
        }
    }

    /// The same write on a subresource (`"status"`).
    pub fn with_subresource(self, subresource: &'a str) -> Scope<'a> {
        Scope {
            subresource,
            ..self
        }
    }

    /// The same write, ignoring the fields `reset` names.
    pub fn with_reset(self, reset: Reset) -> Scope<'a> {
        Scope { reset, ..self }
    }

    fn filter(&self, set: &mut FieldSet) {
        match self.reset {
            Reset::Nothing => {}
            Reset::Status => set.retain_top_level(|f| f != "status"),
            Reset::AllButStatus => set.retain_top_level(|f| f == "status"),
        }
    }

    fn compare(&self, old: &Value, new: &Value) -> Result<Comparison, ApplyError> {
        let mut cmp = compare(self.types, old, new)?;
        cmp.for_each_set(|s| self.filter(s));
        Ok(cmp)
    }
}

/// Server-side apply of `config` by `manager` to `live` (an empty object when the object does
/// not exist yet), with `managed` the live object's managed fields. Returns the new object with
/// `metadata.managedFields` written; `managed` is updated to match. Conflicts are an error
/// unless `force`, which takes the fields over.
pub fn apply(
    scope: &Scope<'_>,
    live: &Value,
    config: &Value,
    managed: &mut ManagedFields,
    manager: &str,
    force: bool,
) -> Result<Value, ApplyError> {
    if !config.is_object() {
        return Err(ApplyError::NotAnObject);
    }
    let types = scope.types;
    let mut applied = field_set(types, config)?;
    scope.filter(&mut applied);
    let mut merged = merge(types, live, config)?;

    let mut next = managed.clone();
    let me = next.entry(
        manager,
        Operation::Apply,
        scope.subresource,
        scope.api_version,
    );
    let entries = next.entries_mut();
    let last = std::mem::replace(&mut entries[me].fields, applied);
    let set_changed = last != entries[me].fields;
    entries[me].api_version = scope.api_version.to_string();

    if !last.is_empty() {
        let mut owned = FieldSet::new();
        for e in entries.iter() {
            owned.union_with(&e.fields);
        }
        let stale = last.difference(&owned);
        if !stale.is_empty() {
            remove(types, &mut merged, &stale);
        }
    }

    let cmp = scope.compare(live, &merged)?;
    let changed = cmp.modified.union(&cmp.added);
    let mut conflicts = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        if i == me {
            continue;
        }
        let clash = e.fields.intersection(&changed);
        for path in clash.paths() {
            conflicts.push(Conflict {
                manager: e.display(),
                field: display_path(&path),
            });
        }
    }
    if !conflicts.is_empty() && !force {
        conflicts.sort_by(|a, b| a.manager.cmp(&b.manager));
        return Err(ApplyError::Conflicts(conflicts));
    }
    for (i, e) in entries.iter_mut().enumerate() {
        if i != me {
            e.fields.difference_with(&changed);
            e.fields.difference_with(&cmp.removed);
        }
    }
    if set_changed || !cmp.is_same() || entries[me].time.is_none() {
        entries[me].time = Some(scope.now.to_string());
    }
    entries.retain(|e| !e.fields.is_empty());
    *managed = next;
    managed.store(&mut merged);
    Ok(merged)
}

/// Records a non-apply write by `manager` that turned `live` into `new` (for a create, `live`
/// is an empty object): the manager owns what it added or changed, other managers lose it, and
/// everyone loses what was removed. `managed` is the starting point
/// ([`ManagedFields::for_write`]); the result is written into `new`'s `metadata.managedFields`.
pub fn update(
    scope: &Scope<'_>,
    live: &Value,
    new: &mut Value,
    managed: &mut ManagedFields,
    manager: &str,
) -> Result<(), ApplyError> {
    let cmp = scope.compare(live, new)?;
    let changed = cmp.modified.union(&cmp.added);
    let me = managed.entry(
        manager,
        Operation::Update,
        scope.subresource,
        scope.api_version,
    );
    let entries = managed.entries_mut();
    for (i, e) in entries.iter_mut().enumerate() {
        e.fields.difference_with(&cmp.removed);
        if i != me {
            e.fields.difference_with(&changed);
        }
    }
    if !changed.is_empty() {
        entries[me].fields.union_with(&changed);
        entries[me].time = Some(scope.now.to_string());
    }
    entries.retain(|e| !e.fields.is_empty());
    managed.store(new);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use opkit_strategic::{BuiltinPatchMeta, SchemaPatchMeta};
    use serde_json::json;

    const T1: &str = "2024-01-01T00:00:00Z";
    const T2: &str = "2024-01-01T00:01:00Z";

    fn deploy(replicas: i64, image: &str) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"replicas": replicas, "template": {"spec": {"containers": [{"name": "app", "image": image}]}}}})
    }

    fn fields(m: &ManagedFields, manager: &str) -> Value {
        m.entries()
            .iter()
            .find(|e| e.manager == manager)
            .map(|e| e.fields.to_fields_v1())
            .unwrap_or(Value::Null)
    }

    #[test]
    fn first_apply_sets_fields_and_owns_exactly_the_configuration() {
        let meta = BuiltinPatchMeta::for_kind("apps", "v1", "Deployment").unwrap();
        let scope = Scope::new(Types::builtin(&meta), "apps/v1", T1);
        let mut m = ManagedFields::default();
        let out = apply(&scope, &json!({}), &deploy(1, "a:1"), &mut m, "mgr", false).unwrap();
        assert_eq!(out["spec"]["replicas"], 1);
        assert_eq!(
            fields(&m, "mgr"),
            json!({"f:spec": {"f:replicas": {}, "f:template": {"f:spec": {"f:containers": {
                "k:{\"name\":\"app\"}": {".": {}, "f:name": {}, "f:image": {}}}}}}})
        );
        let entry = &out["metadata"]["managedFields"][0];
        assert_eq!(entry["operation"], "Apply");
        assert_eq!(entry["time"], T1);
        assert_eq!(entry["fieldsType"], "FieldsV1");
    }

    #[test]
    fn changing_another_managers_field_conflicts_and_force_takes_it_over() {
        let meta = BuiltinPatchMeta::for_kind("apps", "v1", "Deployment").unwrap();
        let scope = Scope::new(Types::builtin(&meta), "apps/v1", T1);
        let mut m = ManagedFields::default();
        let live = apply(&scope, &json!({}), &deploy(1, "a:1"), &mut m, "one", false).unwrap();
        let other = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"replicas": 3}});
        let err = apply(&scope, &live, &other, &mut m.clone(), "two", false).unwrap_err();
        assert_eq!(
            err.to_string(),
            "Apply failed with 1 conflict: conflict with \"one\": .spec.replicas"
        );
        let out = apply(&scope, &live, &other, &mut m, "two", true).unwrap();
        assert_eq!(out["spec"]["replicas"], 3);
        assert_eq!(fields(&m, "two"), json!({"f:spec": {"f:replicas": {}}}));
        assert!(
            !m.entries()[0].fields.contains(&["f:spec", "f:replicas"])
                || m.entries()[0].manager != "one"
        );
        assert!(fields(&m, "one")["f:spec"].get("f:replicas").is_none());
    }

    #[test]
    fn applying_the_same_value_shares_ownership_without_conflict() {
        let meta = BuiltinPatchMeta::for_kind("apps", "v1", "Deployment").unwrap();
        let scope = Scope::new(Types::builtin(&meta), "apps/v1", T1);
        let mut m = ManagedFields::default();
        let live = apply(&scope, &json!({}), &deploy(1, "a:1"), &mut m, "one", false).unwrap();
        let same = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"replicas": 1}});
        let out = apply(&scope, &live, &same, &mut m, "two", false).unwrap();
        assert_eq!(out["spec"], live["spec"]);
        assert!(fields(&m, "one")["f:spec"].get("f:replicas").is_some());
        assert!(fields(&m, "two")["f:spec"].get("f:replicas").is_some());
        // With shared ownership, the first manager dropping the field does not remove it.
        let without = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"template": {"spec": {"containers": [{"name": "app", "image": "a:1"}]}}}});
        let out = apply(&scope, &out, &without, &mut m, "one", false).unwrap();
        assert_eq!(out["spec"]["replicas"], 1);
    }

    #[test]
    fn fields_no_longer_applied_are_removed_when_nobody_else_owns_them() {
        let meta = BuiltinPatchMeta::for_kind("apps", "v1", "Deployment").unwrap();
        let scope = Scope::new(Types::builtin(&meta), "apps/v1", T1);
        let mut m = ManagedFields::default();
        let mut config = deploy(1, "a:1");
        config["metadata"]["labels"] = json!({"a": "1", "b": "2"});
        config["spec"]["template"]["spec"]["containers"]
            .as_array_mut()
            .unwrap()
            .push(json!({"name": "side", "image": "s:1"}));
        let live = apply(&scope, &json!({}), &config, &mut m, "one", false).unwrap();
        let mut smaller = deploy(1, "a:1");
        smaller["metadata"]["labels"] = json!({"a": "1"});
        let out = apply(&scope, &live, &smaller, &mut m, "one", false).unwrap();
        assert_eq!(out["metadata"]["labels"], json!({"a": "1"}));
        let cs = out["spec"]["template"]["spec"]["containers"]
            .as_array()
            .unwrap();
        assert_eq!(cs.len(), 1);
        assert_eq!(cs[0]["name"], "app");
    }

    #[test]
    fn a_no_op_apply_keeps_the_time() {
        let meta = BuiltinPatchMeta::for_kind("apps", "v1", "Deployment").unwrap();
        let mut m = ManagedFields::default();
        let s1 = Scope::new(Types::builtin(&meta), "apps/v1", T1);
        let live = apply(&s1, &json!({}), &deploy(1, "a:1"), &mut m, "one", false).unwrap();
        let s2 = Scope::new(Types::builtin(&meta), "apps/v1", T2);
        let again = apply(&s2, &live, &deploy(1, "a:1"), &mut m, "one", false).unwrap();
        assert_eq!(again, live);
    }

    #[test]
    fn an_update_takes_ownership_of_what_it_changed_from_other_managers() {
        let meta = BuiltinPatchMeta::for_kind("apps", "v1", "Deployment").unwrap();
        let s1 = Scope::new(Types::builtin(&meta), "apps/v1", T1);
        let mut m = ManagedFields::default();
        let live = apply(&s1, &json!({}), &deploy(1, "a:1"), &mut m, "applier", false).unwrap();
        let mut new = live.clone();
        new["spec"]["replicas"] = json!(5);
        let s2 = Scope::new(Types::builtin(&meta), "apps/v1", T2);
        update(&s2, &live, &mut new, &mut m, "kubectl").unwrap();
        assert_eq!(fields(&m, "kubectl"), json!({"f:spec": {"f:replicas": {}}}));
        assert!(fields(&m, "applier")["f:spec"].get("f:replicas").is_none());
        let entries = new["metadata"]["managedFields"].as_array().unwrap();
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[1]["operation"], "Update");
        assert_eq!(entries[1]["time"], T2);
        // The applier now conflicts with the updater, named with its apiVersion.
        let err = apply(
            &s2,
            &new,
            &deploy(1, "a:1"),
            &mut m.clone(),
            "applier",
            false,
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "Apply failed with 1 conflict: conflict with \"kubectl\" using apps/v1: .spec.replicas"
        );
    }

    #[test]
    fn an_update_that_changes_nothing_adds_no_entry_and_removal_drops_ownership() {
        let meta = BuiltinPatchMeta::for_kind("", "v1", "ConfigMap").unwrap();
        let scope = Scope::new(Types::builtin(&meta), "v1", T1);
        let live = json!({"metadata": {"name": "c"}, "data": {"a": "1", "b": "2"}});
        let mut m = ManagedFields::default();
        let mut created = live.clone();
        update(&scope, &json!({}), &mut created, &mut m, "creator").unwrap();
        assert_eq!(
            fields(&m, "creator"),
            json!({"f:data": {".": {}, "f:a": {}, "f:b": {}}})
        );
        let mut same = created.clone();
        update(&scope, &created, &mut same, &mut m, "other").unwrap();
        assert_eq!(m.entries().len(), 1);
        let mut smaller = created.clone();
        smaller["data"] = json!({"a": "1"});
        update(&scope, &created, &mut smaller, &mut m, "other").unwrap();
        assert_eq!(m.entries().len(), 1);
        assert_eq!(
            fields(&m, "creator"),
            json!({"f:data": {".": {}, "f:a": {}}})
        );
    }

    #[test]
    fn status_is_ignored_by_main_writes_and_everything_else_by_status_writes() {
        let schema = json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {"a": {"type": "integer"}}},
            "status": {"type": "object", "properties": {"b": {"type": "integer"}}}}});
        let meta = SchemaPatchMeta::for_object(&schema);
        let main = Scope::new(Types::custom(&meta), "x.io/v1", T1).with_reset(Reset::Status);
        let mut m = ManagedFields::default();
        let config = json!({"spec": {"a": 1}, "status": {"b": 1}});
        apply(&main, &json!({}), &config, &mut m, "one", false).unwrap();
        assert_eq!(fields(&m, "one"), json!({"f:spec": {"f:a": {}}}));
        let status = Scope::new(Types::custom(&meta), "x.io/v1", T1)
            .with_subresource("status")
            .with_reset(Reset::AllButStatus);
        let mut m = ManagedFields::default();
        apply(&status, &json!({}), &config, &mut m, "one", false).unwrap();
        assert_eq!(fields(&m, "one"), json!({"f:status": {"f:b": {}}}));
        assert_eq!(m.entries()[0].subresource, "status");
    }

    #[test]
    fn custom_resource_map_lists_are_shared_item_by_item() {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "properties": {"name": {"type": "string"}, "port": {"type": "integer"}}}}}}}});
        let meta = SchemaPatchMeta::for_object(&schema);
        let scope = Scope::new(Types::custom(&meta), "x.io/v1", T1);
        let mut m = ManagedFields::default();
        let a = json!({"spec": {"ports": [{"name": "a", "port": 1}]}});
        let b = json!({"spec": {"ports": [{"name": "b", "port": 2}]}});
        let live = apply(&scope, &json!({}), &a, &mut m, "one", false).unwrap();
        let live = apply(&scope, &live, &b, &mut m, "two", false).unwrap();
        assert_eq!(
            live["spec"]["ports"],
            json!([{"name": "a", "port": 1}, {"name": "b", "port": 2}])
        );
        let changed = json!({"spec": {"ports": [{"name": "a", "port": 9}]}});
        let err = apply(&scope, &live, &changed, &mut m.clone(), "two", false).unwrap_err();
        assert_eq!(
            err.to_string(),
            "Apply failed with 1 conflict: conflict with \"one\": .spec.ports[name=\"a\"].port"
        );
        // "two" stops applying item b: it goes, item a stays.
        let out = apply(&scope, &live, &json!({"spec": {}}), &mut m, "two", false).unwrap();
        assert_eq!(out["spec"]["ports"], json!([{"name": "a", "port": 1}]));
    }
}
