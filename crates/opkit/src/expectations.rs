//! Expectations: a controller's own creations and deletions it has not seen in its cache yet.
//!
//! A controller that creates children (a ReplicaSet its pods) reads them from a cache fed by a
//! watch. Right after it created three pods, the cache may not hold them yet; a reconcile in
//! between would count too few and create three more. client-go's controllers guard against
//! that with `ControllerExpectations`, reproduced here: before writing, the controller records
//! what it expects ([`Expectations::expect_creations`], [`Expectations::expect_deletions`]);
//! the cache reports what it observes (wired with
//! [`Controller::expectations`](crate::Controller::expectations), before the controller's
//! handlers run); and the reconcile only creates or deletes while the owner's expectations
//! are [satisfied](Expectations::satisfied). Expectations older than five minutes (client-go's
//! `ExpectationsTimeout`) count as satisfied, so a lost watch event cannot block an owner for
//! ever; the timeout is adjustable ([`Expectations::with_timeout`]).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use kube::Resource;
use tokio::time::Instant;

use crate::predicate::Change;

struct Expect {
    creations: i64,
    deletions: HashSet<String>,
    since: Instant,
}

/// Pending creations and deletions per owner uid (client-go's `ControllerExpectations`);
/// clone-cheap, clones share their state.
#[derive(Clone)]
pub struct Expectations {
    pending: Arc<Mutex<HashMap<String, Expect>>>,
    timeout: Duration,
}

impl std::fmt::Debug for Expectations {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Expectations")
            .field("owners", &self.lock().len())
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl Default for Expectations {
    fn default() -> Self {
        Expectations::new()
    }
}

impl Expectations {
    /// No expectations, with client-go's five-minute timeout.
    pub fn new() -> Expectations {
        Expectations {
            pending: Arc::new(Mutex::new(HashMap::new())),
            timeout: Duration::from_secs(300),
        }
    }

    /// These expectations, given up after `timeout` without an update instead.
    pub fn with_timeout(mut self, timeout: Duration) -> Expectations {
        self.timeout = timeout;
        self
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Expect>> {
        self.pending.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn entry<'a>(map: &'a mut HashMap<String, Expect>, uid: &str) -> &'a mut Expect {
        map.entry(uid.to_string()).or_insert_with(|| Expect {
            creations: 0,
            deletions: HashSet::new(),
            since: Instant::now(),
        })
    }

    /// Whether owner `uid` may create or delete: nothing pending, or pending for longer than
    /// the timeout (then forgotten).
    pub fn satisfied(&self, uid: &str) -> bool {
        let mut map = self.lock();
        match map.get(uid) {
            None => true,
            Some(e) if e.creations <= 0 && e.deletions.is_empty() => {
                map.remove(uid);
                true
            }
            Some(e) if e.since.elapsed() > self.timeout => {
                map.remove(uid);
                true
            }
            Some(_) => false,
        }
    }

    /// Owner `uid` is about to create `n` children.
    pub fn expect_creations(&self, uid: &str, n: usize) {
        let mut map = self.lock();
        let e = Self::entry(&mut map, uid);
        e.creations = e
            .creations
            .saturating_add(i64::try_from(n).unwrap_or(i64::MAX));
        e.since = Instant::now();
    }

    /// Owner `uid` is about to delete the children named `names`.
    pub fn expect_deletions(&self, uid: &str, names: impl IntoIterator<Item = String>) {
        let mut map = self.lock();
        let e = Self::entry(&mut map, uid);
        e.deletions.extend(names);
        e.since = Instant::now();
    }

    /// A child of `uid` was seen created — or its creation failed and will never be seen.
    pub fn creation_observed(&self, uid: &str) {
        if let Some(e) = self.lock().get_mut(uid) {
            e.creations -= 1;
        }
    }

    /// The child `name` of `uid` was seen deleted — or its deletion failed.
    pub fn deletion_observed(&self, uid: &str, name: &str) {
        if let Some(e) = self.lock().get_mut(uid) {
            e.deletions.remove(name);
        }
    }

    /// Applies a cache change of a child: a creation or deletion observed for its controller
    /// owner (updates change nothing). [`Controller::expectations`](crate::Controller::expectations)
    /// calls this for every change of the child kind.
    pub fn observe<C: Resource>(&self, change: &Change<'_, C>) {
        match change {
            Change::Create(obj) => {
                if let Some(uid) = crate::informer::controller_uid(obj.meta()) {
                    self.creation_observed(uid);
                }
            }
            Change::Delete(obj) => {
                if let Some(uid) = crate::informer::controller_uid(obj.meta()) {
                    let name = obj.meta().name.as_deref().unwrap_or_default();
                    self.deletion_observed(uid, name);
                }
            }
            Change::Update { .. } => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::Pod;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

    fn pod(name: &str, owner: &str) -> Pod {
        let mut p = Pod::default();
        p.metadata.name = Some(name.into());
        p.metadata.owner_references = Some(vec![OwnerReference {
            uid: owner.into(),
            controller: Some(true),
            ..Default::default()
        }]);
        p
    }

    #[test]
    fn creations_and_deletions_must_be_observed() {
        let exp = Expectations::new();
        assert!(exp.satisfied("u"));
        exp.expect_creations("u", 2);
        assert!(!exp.satisfied("u"));
        let (a, b) = (pod("a", "u"), pod("b", "u"));
        exp.observe(&Change::Create(&a));
        exp.observe(&Change::Update { old: &a, new: &a });
        assert!(!exp.satisfied("u"), "an update is not a creation");
        exp.observe(&Change::Create(&b));
        assert!(exp.satisfied("u"));
        exp.expect_deletions("u", ["a".to_string()]);
        exp.observe(&Change::Delete(&b));
        assert!(
            !exp.satisfied("u"),
            "another child's deletion does not count"
        );
        exp.observe(&Change::Delete(&a));
        assert!(exp.satisfied("u"));
        exp.expect_creations("other", 1);
        assert!(exp.satisfied("u"), "owners are independent");
    }

    #[tokio::test(start_paused = true)]
    async fn expectations_are_given_up_after_the_timeout() {
        let exp = Expectations::new().with_timeout(Duration::from_secs(30));
        exp.expect_creations("u", 1);
        tokio::time::advance(Duration::from_secs(29)).await;
        assert!(!exp.satisfied("u"));
        tokio::time::advance(Duration::from_secs(2)).await;
        assert!(exp.satisfied("u"));
    }
}
