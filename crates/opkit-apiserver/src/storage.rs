//! The storage component: where each object lives in the store (the only place keys are
//! built) and the compare-and-swap loops every write goes through.
//!
//! A write embeds its commit revision as `metadata.resourceVersion`, in the same transaction
//! that stores it. An update or delete reads the current object, decides, and swaps only if
//! the object is still at the revision it read; a lost race retries (upstream's
//! `GuaranteedUpdate`).

use bytes::Bytes;
use opkit_store::{Entry, ListOptions, ListResult, Store, StoreError};
use serde_json::Value;

use crate::error::{ApiError, ApiResult};
use crate::object;
use crate::registry::Resource;
use crate::request::ObjectRef;

/// How often a write that keeps losing races is retried before it gives up with a conflict.
const ATTEMPTS: usize = 64;

/// The store, addressed by resource, namespace and name.
pub(crate) struct Storage {
    store: Store,
}

/// An object as read, with the revision a swap expects.
pub(crate) struct Current {
    /// The stored bytes.
    pub(crate) bytes: Bytes,
    /// The object's revision.
    pub(crate) revision: u64,
    /// The stored object, decoded.
    pub(crate) object: Value,
}

/// What a guaranteed update decided for the object it read.
pub(crate) enum Step<T> {
    /// Write nothing; the update ends with this.
    Done(T),
    /// Store this object.
    Put(Value),
    /// Remove the object; this is its last state (what watchers see deleted).
    Delete(Value),
}

/// What a guaranteed update did.
pub(crate) enum Outcome<T> {
    /// Nothing was written.
    Done(T),
    /// The object was stored: its bytes, and the object as stored.
    Put(Bytes, Value),
    /// The object was removed: its last state's bytes, and that state.
    Deleted(Bytes, Value),
}

/// The key prefix of every object of a resource (all namespaces). A view shares the key space
/// of the resource it is a view of.
fn resource_prefix(res: &Resource) -> String {
    let (group, plural) = match res.view {
        Some(view) => (view.storage_group, view.storage_plural),
        None => (res.group.as_str(), res.plural.as_str()),
    };
    let group = if group.is_empty() { "core" } else { group };
    format!("/{group}/{plural}/")
}

/// The key prefix of the objects of a resource in one namespace (all, for cluster scope or no
/// namespace).
pub(crate) fn prefix(res: &Resource, namespace: Option<&str>) -> String {
    match (res.namespaced, namespace) {
        (true, Some(ns)) => format!("{}{ns}/", resource_prefix(res)),
        _ => resource_prefix(res),
    }
}

/// The key of one object.
pub(crate) fn key(res: &Resource, namespace: Option<&str>, name: &str) -> String {
    match (res.namespaced, namespace) {
        (true, Some(ns)) => format!("{}{ns}/{name}", resource_prefix(res)),
        _ => format!("{}{name}", resource_prefix(res)),
    }
}

/// Where events.k8s.io/v1 events were stored before they shared core/v1's storage.
const LEGACY_EVENT_PREFIX: &str = "/events.k8s.io/events/";

/// The key of a core/v1 Event (events.k8s.io/v1 events share it).
fn core_event_key(namespace_and_name: &str) -> String {
    format!("/core/events/{namespace_and_name}")
}

impl Storage {
    /// Storage over an opened store.
    pub(crate) fn new(store: Store) -> Storage {
        Storage { store }
    }

    /// The store itself (watches, revisions).
    pub(crate) fn store(&self) -> &Store {
        &self.store
    }

    /// One object as stored.
    pub(crate) fn get(&self, target: ObjectRef<'_>) -> Option<Entry> {
        self.store.get(&key(target.res, target.ns, target.name))
    }

    /// One object as it was at `revision` (still in the history).
    pub(crate) fn get_at(
        &self,
        target: ObjectRef<'_>,
        revision: u64,
    ) -> Result<Option<Entry>, StoreError> {
        let key = key(target.res, target.ns, target.name);
        let options = ListOptions {
            at_revision: Some(revision),
            ..ListOptions::default()
        };
        let listed = self.store.list(&key, &options)?;
        Ok(listed.entries.into_iter().find(|e| *e.key == *key))
    }

    /// One object, decoded; `404` when it does not exist.
    pub(crate) fn current(&self, target: ObjectRef<'_>) -> ApiResult<Current> {
        let ObjectRef { res, name, .. } = target;
        let entry = self
            .get(target)
            .ok_or_else(|| ApiError::not_found(&res.group, &res.plural, name))?;
        let object = serde_json::from_slice(&entry.value).map_err(ApiError::internal)?;
        Ok(Current {
            bytes: entry.value,
            revision: entry.revision,
            object,
        })
    }

    /// A page of the objects of a resource in one namespace (or all).
    pub(crate) fn list(
        &self,
        res: &Resource,
        namespace: Option<&str>,
        options: &ListOptions,
    ) -> Result<ListResult, StoreError> {
        self.store.list(&prefix(res, namespace), options)
    }

    /// Every object of a resource, in all namespaces (unreadable ones skipped).
    pub(crate) fn all(&self, res: &Resource) -> Vec<Value> {
        let Ok(list) = self.list(res, None, &ListOptions::default()) else {
            return Vec::new();
        };
        list.entries
            .into_iter()
            .filter_map(|e| serde_json::from_slice(&e.value).ok())
            .collect()
    }

    /// Stores a new object; `409` if it exists. Returns the stored bytes and object (for a dry
    /// run, what would have been stored).
    pub(crate) async fn create(
        &self,
        res: &Resource,
        namespace: Option<&str>,
        mut obj: Value,
        dry_run: bool,
    ) -> ApiResult<(Bytes, Value)> {
        let name = object::name(&obj).to_string();
        let key = key(res, namespace, &name);
        if dry_run {
            if self.store.get(&key).is_some() {
                return Err(ApiError::already_exists(&res.group, &res.plural, &name));
            }
            let bytes = Bytes::from(serde_json::to_vec(&obj).map_err(ApiError::internal)?);
            return Ok((bytes, obj));
        }
        let (bytes, _) = self
            .store
            .transact(|txn| {
                if txn.get(&key).is_some() {
                    return Err(ApiError::already_exists(&res.group, &res.plural, &name));
                }
                object::meta_mut(&mut obj).insert(
                    "resourceVersion".into(),
                    Value::from(txn.revision().to_string()),
                );
                let bytes = Bytes::from(serde_json::to_vec(&obj).map_err(ApiError::internal)?);
                txn.put(&key, bytes.clone());
                Ok(bytes)
            })
            .await?;
        Ok((bytes, obj))
    }

    /// Reads the object, lets `try_update` decide, and swaps the decision in if the object is
    /// still at the revision read; retries on a lost race. `404` when the object does not
    /// exist, `409` when it keeps changing under the update.
    pub(crate) async fn guaranteed_update<T, F, Fut>(
        &self,
        target: ObjectRef<'_>,
        mut try_update: F,
    ) -> ApiResult<Outcome<T>>
    where
        F: FnMut(Current) -> Fut,
        Fut: Future<Output = ApiResult<Step<T>>>,
    {
        let ObjectRef { res, ns, name } = target;
        let key = key(res, ns, name);
        for _ in 0..ATTEMPTS {
            let current = self.current(target)?;
            let revision = current.revision;
            let (mut new, delete) = match try_update(current).await? {
                Step::Done(t) => return Ok(Outcome::Done(t)),
                Step::Put(new) => (new, false),
                Step::Delete(last) => (last, true),
            };
            if let Some(bytes) = self.swap(&key, revision, &mut new, delete).await? {
                return Ok(if delete {
                    Outcome::Deleted(bytes, new)
                } else {
                    Outcome::Put(bytes, new)
                });
            }
        }
        Err(ApiError::stale(&res.group, &res.plural, name))
    }

    /// Moves events.k8s.io/v1 events stored under their own keys (before the two APIs shared one
    /// storage) to the core events' keys, converted. An event whose core key is taken is dropped
    /// with a warning (events are short-lived records; the core one wins). Returns how many moved.
    pub(crate) async fn migrate_legacy_event_keys(&self) -> usize {
        let store = &self.store;
        let Ok(list) = store.list(LEGACY_EVENT_PREFIX, &opkit_store::ListOptions::default()) else {
            return 0;
        };
        let mut moved = 0;
        for entry in list.entries {
            let old_key = entry.key.to_string();
            let new_key = core_event_key(&old_key[LEGACY_EVENT_PREFIX.len()..]);
            let converted = serde_json::from_slice::<Value>(&entry.value)
                .map_err(|e| e.to_string())
                .and_then(crate::events::to_core);
            let mut obj = match converted {
                Ok(obj) => obj,
                Err(e) => {
                    tracing::warn!(key = %old_key, error = %e, "cannot convert a stored events.k8s.io/v1 event; left in place");
                    continue;
                }
            };
            let result = store
                .transact(|txn| {
                    let Some(old) = txn.get(&old_key) else {
                        return Ok::<_, opkit_store::StoreError>(false);
                    };
                    let free = txn.get(&new_key).is_none();
                    if free {
                        crate::object::meta_mut(&mut obj).insert(
                            "resourceVersion".into(),
                            Value::from(txn.revision().to_string()),
                        );
                        let bytes = serde_json::to_vec(&obj).unwrap_or_default();
                        txn.put(&new_key, Bytes::from(bytes));
                    }
                    txn.delete(&old_key, old.value);
                    Ok(free)
                })
                .await;
            match result {
                Ok((true, _)) => moved += 1,
                Ok((false, _)) => {
                    tracing::warn!(key = %old_key, "an events.k8s.io/v1 event had the name of a core event; dropped");
                }
                Err(e) => {
                    tracing::warn!(key = %old_key, error = %e, "cannot move a stored events.k8s.io/v1 event")
                }
            }
        }
        moved
    }

    /// Compare-and-swap of one stored object: if `key` is still at revision `expected`, stores
    /// `new` (or deletes the key, with `new` as its last state) with the new revision embedded
    /// as `metadata.resourceVersion`. `None` when another write won the race.
    async fn swap(
        &self,
        key: &str,
        expected: u64,
        new: &mut Value,
        delete: bool,
    ) -> ApiResult<Option<Bytes>> {
        let (outcome, _) = self
            .store
            .transact(|txn| {
                match txn.get(key) {
                    Some(e) if e.revision == expected => {}
                    _ => return Ok(None),
                }
                object::meta_mut(new).insert(
                    "resourceVersion".into(),
                    Value::from(txn.revision().to_string()),
                );
                let bytes = Bytes::from(serde_json::to_vec(new).map_err(ApiError::internal)?);
                if delete {
                    txn.delete(key, bytes.clone());
                } else {
                    txn.put(key, bytes.clone());
                }
                Ok::<_, ApiError>(Some(bytes))
            })
            .await?;
        Ok(outcome)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Registry;

    #[test]
    fn keys_separate_namespaces_and_cluster_scope() {
        let snapshot = Registry::new().snapshot();
        let cm = snapshot.get("", "v1", "configmaps").unwrap();
        let ns = snapshot.get("", "v1", "namespaces").unwrap();
        assert_eq!(key(cm, Some("default"), "a"), "/core/configmaps/default/a");
        assert_eq!(prefix(cm, Some("default")), "/core/configmaps/default/");
        assert_eq!(prefix(cm, None), "/core/configmaps/");
        assert_eq!(key(ns, None, "default"), "/core/namespaces/default");
    }
}
