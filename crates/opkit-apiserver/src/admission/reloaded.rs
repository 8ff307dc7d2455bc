//! Admission configuration (webhook configurations, policies and bindings) is read from
//! storage and compiled once per change, not per write: a committed write of a configuration
//! kind bumps an epoch before its writer is answered, and the next admission rebuilds the set.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::registry::Registry;
use crate::storage::Storage;

/// A set built from the stored configuration objects.
pub(crate) trait Loaded {
    /// Reads and compiles the set.
    fn load(storage: &Storage, registry: &Registry) -> Self;
}

/// The current set, rebuilt on the first use after a change.
#[derive(Debug)]
pub(crate) struct Reloaded<T> {
    epoch: AtomicU64,
    cached: Mutex<Option<(u64, Arc<T>)>>,
}

impl<T> Default for Reloaded<T> {
    fn default() -> Self {
        Reloaded {
            epoch: AtomicU64::new(0),
            cached: Mutex::new(None),
        }
    }
}

impl<T: Loaded> Reloaded<T> {
    /// A configuration object changed: the next admission reads them again.
    pub(crate) fn invalidate(&self) {
        self.epoch.fetch_add(1, Ordering::AcqRel);
    }

    /// The current set.
    pub(crate) fn current(&self, storage: &Storage, registry: &Registry) -> Arc<T> {
        let epoch = self.epoch.load(Ordering::Acquire);
        let mut cached = self.cached.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((at, set)) = cached.as_ref()
            && *at == epoch
        {
            return set.clone();
        }
        let set = Arc::new(T::load(storage, registry));
        *cached = Some((epoch, set.clone()));
        set
    }
}

/// Every stored `admissionregistration.k8s.io/v1` object of `plural`, in name order.
pub(crate) fn stored(storage: &Storage, registry: &Registry, plural: &str) -> Vec<Value> {
    let snapshot = registry.snapshot();
    let Some(res) = snapshot.get("admissionregistration.k8s.io", "v1", plural) else {
        return Vec::new();
    };
    let mut all = storage.all(res);
    all.sort_by(|a, b| crate::object::name(a).cmp(crate::object::name(b)));
    all
}
