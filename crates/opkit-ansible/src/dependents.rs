//! Dependent watches: a change to (or the deletion of) an object a run created runs its
//! owner's role or playbook again, as operator-sdk's `watchDependentResources`.
//!
//! After each run the kinds it created through the [proxy](crate::proxy) are watched by the
//! entry's controller (one watch per kind, shared with every other controller of the
//! manager), unless `watchDependentResources` is off or the kind is in `blacklist`. A change
//! maps back to its owner through a controller owner reference of the entry's kind; with
//! `watchClusterScopedResources`, also through the `operator-sdk/primary-resource`
//! annotations (cluster-scoped and cross-namespace dependents), and only then are kinds
//! created with those annotations watched at all. Creations and status-only updates are
//! ignored ([`opkit::predicate::dependent`]).
//!
//! An owner reconciled for its dependent's sake must run even though it did not change
//! itself (the reconciler otherwise skips unchanged custom resources), so the mapping also
//! marks the owner; the reconciler takes the mark ([`Dependents::take_changed`]).

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use kube::ResourceExt;
use kube::api::DynamicObject;
use opkit::{Context, Request};

use crate::proxy::{Dependent, PRIMARY_RESOURCE_ANNOTATION, PRIMARY_RESOURCE_TYPE_ANNOTATION};
use crate::watches::Watch;

/// Which owners' dependents changed since their last reconcile. Only live owners are marked
/// (an owner counts as live from its first reconcile until its deletion is seen), so the
/// garbage collector removing a deleted owner's dependents leaves nothing behind: both sets
/// stay as large as the custom resources that exist.
#[derive(Default)]
struct Marks {
    live: HashSet<Request>,
    changed: HashSet<Request>,
}

type Changed = Arc<Mutex<Marks>>;

fn lock(changed: &Changed) -> std::sync::MutexGuard<'_, Marks> {
    changed.lock().unwrap_or_else(|p| p.into_inner())
}

/// One entry's dependent watches (clones share the marks).
#[derive(Clone)]
pub(crate) struct Dependents {
    watch: Watch,
    owner_namespaced: bool,
    changed: Changed,
}

impl Dependents {
    /// The dependent watches of `watch`, whose kind is namespaced or not.
    pub(crate) fn new(watch: Watch, owner_namespaced: bool) -> Dependents {
        Dependents {
            watch,
            owner_namespaced,
            changed: Changed::default(),
        }
    }

    /// Whether a created kind is watched (see the [module docs](self)).
    fn wanted(&self, dependent: &Dependent) -> bool {
        let r = &dependent.resource;
        self.watch.watch_dependent_resources
            && (dependent.owner_reference || self.watch.watch_cluster_scoped_resources)
            && !self
                .watch
                .blacklist
                .iter()
                .any(|b| b.group == r.group && b.version == r.version && b.kind == r.kind)
    }

    /// Watches the kinds a run created, from now on.
    pub(crate) fn watch<T>(&self, ctx: &Context<T>, created: Vec<Dependent>) {
        for dependent in created {
            if !self.wanted(&dependent) {
                continue;
            }
            let mapper = Mapper {
                group: self.watch.group.clone(),
                kind: self.watch.kind.clone(),
                owner_namespaced: self.owner_namespaced,
                annotations: self.watch.watch_cluster_scoped_resources,
                changed: self.changed.clone(),
            };
            let resource = &dependent.resource;
            if ctx.watches_dynamic(
                resource,
                dependent.namespaced,
                move |obj: &DynamicObject| mapper.owners(obj),
                opkit::predicate::dependent(),
            ) {
                tracing::info!(
                    owner = %self.watch.name(),
                    dependent = %format!("{}, Kind={}", resource.api_version, resource.kind),
                    "watching dependent resource"
                );
            }
        }
    }

    /// Whether a dependent of `owner` changed since the last call (and forgets it); `owner` is
    /// live from now on.
    pub(crate) fn take_changed(&self, owner: &Request) -> bool {
        let mut marks = lock(&self.changed);
        marks.live.insert(owner.clone());
        marks.changed.remove(owner)
    }

    /// Forgets `owner`, whose deletion was seen: changes of its dependents no longer mark it.
    pub(crate) fn forget(&self, owner: &Request) {
        let mut marks = lock(&self.changed);
        marks.live.remove(owner);
        marks.changed.remove(owner);
    }
}

/// Maps a dependent to its owners of one kind.
struct Mapper {
    group: String,
    kind: String,
    owner_namespaced: bool,
    /// Whether the primary-resource annotations count.
    annotations: bool,
    changed: Changed,
}

impl Mapper {
    fn owners(&self, obj: &DynamicObject) -> Vec<Request> {
        let mut owners: Vec<Request> = obj
            .owner_references()
            .iter()
            .filter(|r| {
                r.controller == Some(true)
                    && r.kind == self.kind
                    && r.api_version.rsplit_once('/').map_or("", |(g, _)| g) == self.group
            })
            .map(|r| Request {
                namespace: if self.owner_namespaced {
                    obj.namespace()
                } else {
                    None
                },
                name: r.name.clone(),
            })
            .collect();
        let annotations = obj.annotations();
        if self.annotations
            && annotations
                .get(PRIMARY_RESOURCE_TYPE_ANNOTATION)
                .map(String::as_str)
                == Some(format!("{}.{}", self.kind, self.group).as_str())
            && let Some((namespace, name)) = annotations
                .get(PRIMARY_RESOURCE_ANNOTATION)
                .and_then(|v| v.split_once('/'))
            && !name.is_empty()
        {
            owners.push(Request {
                namespace: (!namespace.is_empty()).then(|| namespace.to_string()),
                name: name.to_string(),
            });
        }
        let mut marks = lock(&self.changed);
        let live: Vec<Request> = owners
            .iter()
            .filter(|o| marks.live.contains(*o))
            .cloned()
            .collect();
        marks.changed.extend(live);
        owners
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mapper(annotations: bool) -> Mapper {
        Mapper {
            group: "cache.example.com".into(),
            kind: "Memcached".into(),
            owner_namespaced: true,
            annotations,
            changed: Changed::default(),
        }
    }

    fn object(value: serde_json::Value) -> DynamicObject {
        serde_json::from_value(value).expect("an object")
    }

    #[test]
    fn owner_references_and_annotations_map_a_dependent_to_its_owner() {
        let owned = object(serde_json::json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "a", "namespace": "default", "ownerReferences": [
                {"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "name": "web",
                 "uid": "u", "controller": true},
                {"apiVersion": "other.example.com/v1", "kind": "Memcached", "name": "no",
                 "uid": "v", "controller": true},
            ]},
        }));
        let m = mapper(false);
        let web = Request::namespaced("default", "web");
        assert_eq!(m.owners(&owned), std::slice::from_ref(&web));
        assert!(
            !lock(&m.changed).changed.contains(&web),
            "an owner never reconciled is not marked"
        );
        lock(&m.changed).live.insert(web.clone());
        m.owners(&owned);
        assert!(lock(&m.changed).changed.contains(&web));

        let annotated = object(serde_json::json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "a", "namespace": "other", "annotations": {
                PRIMARY_RESOURCE_ANNOTATION: "default/web",
                PRIMARY_RESOURCE_TYPE_ANNOTATION: "Memcached.cache.example.com",
            }},
        }));
        assert!(
            mapper(false).owners(&annotated).is_empty(),
            "annotations count only with watchClusterScopedResources"
        );
        assert_eq!(
            mapper(true).owners(&annotated),
            [Request::namespaced("default", "web")]
        );
    }

    #[test]
    fn a_forgotten_owner_is_not_marked_again_by_its_collected_dependents() {
        let dependents = Dependents::new(crate::watches::memcached_for_test(), true);
        let web = Request::namespaced("default", "web");
        assert!(!dependents.take_changed(&web));
        dependents.forget(&web);
        let m = Mapper {
            changed: dependents.changed.clone(),
            ..mapper(false)
        };
        let owned = object(serde_json::json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "a", "namespace": "default", "ownerReferences": [
                {"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "name": "web",
                 "uid": "u", "controller": true},
            ]},
        }));
        m.owners(&owned);
        let marks = lock(&dependents.changed);
        assert!(marks.live.is_empty() && marks.changed.is_empty());
    }
}
