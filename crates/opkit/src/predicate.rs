//! Predicates: which changes of a watched object are worth a reconcile.
//!
//! Every watch event reaches the controller as a [`Change`] (create, update with the old and
//! new object, delete). A [`Predicate`] looks at it and says yes or no, as controller-runtime's
//! `predicate.Funcs`. The built-in ones filter updates only: creates and deletes always pass,
//! since missing one would leave the controller unaware of an object.
//!
//! Periodic resyncs bypass predicates: they exist to reconcile everything regardless.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use kube::Resource;

/// One observed change of an object of kind `K`.
#[derive(Debug)]
pub enum Change<'a, K> {
    /// The object appeared (first seen after start, or created).
    Create(&'a K),
    /// The object changed (or was seen again on a relist).
    Update {
        /// The object as cached before.
        old: &'a K,
        /// The object now.
        new: &'a K,
    },
    /// The object is gone.
    Delete(&'a K),
}

impl<'a, K> Change<'a, K> {
    /// The object after the change (the deleted object for a delete).
    pub fn object(&self) -> &'a K {
        match self {
            Change::Create(o) | Change::Delete(o) => o,
            Change::Update { new, .. } => new,
        }
    }
}

type Filter<K> = dyn Fn(&Change<'_, K>) -> bool + Send + Sync;

/// A filter on [`Change`]s; clone-cheap.
pub struct Predicate<K> {
    f: Arc<Filter<K>>,
}

impl<K> Clone for Predicate<K> {
    fn clone(&self) -> Self {
        Predicate { f: self.f.clone() }
    }
}

impl<K> fmt::Debug for Predicate<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Predicate")
    }
}

impl<K: 'static> Predicate<K> {
    /// A predicate from a closure over any change.
    pub fn new(f: impl Fn(&Change<'_, K>) -> bool + Send + Sync + 'static) -> Self {
        Predicate { f: Arc::new(f) }
    }

    /// A predicate that filters updates with `f(old, new)` and lets creates and deletes pass.
    pub fn on_update(f: impl Fn(&K, &K) -> bool + Send + Sync + 'static) -> Self {
        Predicate::new(move |c| match c {
            Change::Update { old, new } => f(old, new),
            _ => true,
        })
    }

    /// Whether `change` passes.
    pub fn matches(&self, change: &Change<'_, K>) -> bool {
        (self.f)(change)
    }

    /// Passes when both pass.
    pub fn and(self, other: Predicate<K>) -> Predicate<K> {
        Predicate::new(move |c| self.matches(c) && other.matches(c))
    }

    /// Passes when either passes.
    pub fn or(self, other: Predicate<K>) -> Predicate<K> {
        Predicate::new(move |c| self.matches(c) || other.matches(c))
    }
}

impl<K: 'static> std::ops::Not for Predicate<K> {
    type Output = Predicate<K>;

    /// Passes when this one does not.
    fn not(self) -> Predicate<K> {
        Predicate::new(move |c| !self.matches(c))
    }
}

/// Updates pass only when `metadata.generation` changed (spec changes, for kinds with a status
/// subresource); as controller-runtime's `GenerationChangedPredicate`.
pub fn generation_changed<K: Resource + 'static>() -> Predicate<K> {
    Predicate::on_update(|old: &K, new: &K| old.meta().generation != new.meta().generation)
}

/// Updates pass only when the labels changed.
pub fn labels_changed<K: Resource + 'static>() -> Predicate<K> {
    Predicate::on_update(|old: &K, new: &K| {
        non_empty(&old.meta().labels) != non_empty(&new.meta().labels)
    })
}

/// Updates pass only when the annotations changed.
pub fn annotations_changed<K: Resource + 'static>() -> Predicate<K> {
    Predicate::on_update(|old: &K, new: &K| {
        non_empty(&old.meta().annotations) != non_empty(&new.meta().annotations)
    })
}

/// Updates pass only when the resourceVersion changed (drops relist duplicates).
pub fn resource_version_changed<K: Resource + 'static>() -> Predicate<K> {
    Predicate::on_update(|old: &K, new: &K| {
        old.meta().resource_version != new.meta().resource_version
    })
}

/// operator-sdk's `DependentPredicate`, for objects an operator created (a chart's or a
/// role's dependents): deletes and real changes pass; creations (the operator's own, or the
/// first list of a new watch) and updates of status or bookkeeping metadata only
/// (`resourceVersion`, `managedFields`, `generation`) do not.
pub fn dependent() -> Predicate<kube::api::DynamicObject> {
    Predicate::new(
        |change: &Change<'_, kube::api::DynamicObject>| match change {
            Change::Create(_) => false,
            Change::Delete(_) => true,
            Change::Update { old, new } => comparable(old) != comparable(new),
        },
    )
}

fn comparable(obj: &kube::api::DynamicObject) -> (serde_json::Value, kube::api::ObjectMeta) {
    let mut data = obj.data.clone();
    if let Some(map) = data.as_object_mut() {
        map.remove("status");
    }
    let mut meta = obj.metadata.clone();
    meta.resource_version = None;
    meta.managed_fields = None;
    meta.generation = None;
    (data, meta)
}

fn non_empty(m: &Option<BTreeMap<String, String>>) -> Option<&BTreeMap<String, String>> {
    m.as_ref().filter(|m| !m.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;

    fn cm(generation: i64, label: &str) -> ConfigMap {
        let mut c = ConfigMap::default();
        c.metadata.generation = Some(generation);
        c.metadata.labels = Some([("l".to_string(), label.to_string())].into());
        c
    }

    #[test]
    fn generation_changed_filters_updates_without_a_new_generation() {
        let p = generation_changed::<ConfigMap>();
        let (a, b, c) = (cm(1, "x"), cm(1, "y"), cm(2, "x"));
        assert!(!p.matches(&Change::Update { old: &a, new: &b }));
        assert!(p.matches(&Change::Update { old: &a, new: &c }));
        assert!(p.matches(&Change::Create(&a)));
        assert!(p.matches(&Change::Delete(&a)));
    }

    #[test]
    fn labels_changed_and_combinators() {
        let (a, b, c) = (cm(1, "x"), cm(1, "y"), cm(2, "x"));
        let labels = labels_changed::<ConfigMap>();
        assert!(labels.matches(&Change::Update { old: &a, new: &b }));
        assert!(!labels.matches(&Change::Update { old: &a, new: &c }));
        let either = labels.clone().or(generation_changed());
        assert!(either.matches(&Change::Update { old: &a, new: &c }));
        let both = labels.and(generation_changed());
        assert!(!both.matches(&Change::Update { old: &a, new: &c }));
        let custom = Predicate::new(|c: &Change<'_, ConfigMap>| !matches!(c, Change::Delete(_)));
        assert!(!custom.matches(&Change::Delete(&a)));
        assert!((!custom).matches(&Change::Delete(&a)));
    }
}
