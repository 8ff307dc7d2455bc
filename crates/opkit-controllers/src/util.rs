//! Small pieces the built-in controllers share: a deduplicating work queue with per-key
//! exponential backoff (client-go's rate-limited workqueue, reduced to what we need) and
//! discovery of the served resources.
//!
//! Why a work queue rather than handling events inline: a burst of events for one object
//! collapses into one pass, a failing key is retried later with growing delays instead of
//! spinning, and a fixed number of workers bounds how many requests a controller has in flight.

use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::Hash;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use kube::discovery::{ApiCapabilities, ApiResource, Discovery, Scope, verbs};
use tokio::sync::Notify;

/// Per-key exponential backoff: `base * 2^failures`, capped at `max`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Backoff {
    /// The first delay.
    pub base: Duration,
    /// The largest delay.
    pub max: Duration,
}

impl Backoff {
    /// The delay after `failures` consecutive failures (the first failure is 1).
    pub fn delay(&self, failures: u32) -> Duration {
        let exp = failures.saturating_sub(1).min(30);
        self.base
            .checked_mul(1u32 << exp)
            .map_or(self.max, |d| d.min(self.max))
    }
}

impl Default for Backoff {
    /// 5 ms doubling up to 30 s: quick retries of transient conflicts, and a persistent failure
    /// costs one request every 30 s.
    fn default() -> Self {
        Backoff {
            base: Duration::from_millis(5),
            max: Duration::from_secs(30),
        }
    }
}

struct State<K> {
    queue: VecDeque<K>,
    /// Keys waiting in `queue` or to be queued again when their processing ends.
    dirty: HashSet<K>,
    /// Keys a worker holds.
    processing: HashSet<K>,
    failures: HashMap<K, u32>,
}

/// A deduplicating work queue: a key added several times before a worker takes it is processed
/// once; a key is never processed by two workers at once (added while processing, it is queued
/// again when [`WorkQueue::done`] is called).
pub(crate) struct WorkQueue<K> {
    state: Mutex<State<K>>,
    ready: Notify,
    backoff: Backoff,
}

impl<K: Hash + Eq + Clone + Send + 'static> WorkQueue<K> {
    /// An empty queue retrying with `backoff`.
    pub fn new(backoff: Backoff) -> Arc<WorkQueue<K>> {
        Arc::new(WorkQueue {
            state: Mutex::new(State {
                queue: VecDeque::new(),
                dirty: HashSet::new(),
                processing: HashSet::new(),
                failures: HashMap::new(),
            }),
            ready: Notify::new(),
            backoff,
        })
    }

    fn lock(&self) -> MutexGuard<'_, State<K>> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queues `key` (no-op if it is already waiting).
    pub fn add(&self, key: K) {
        let mut s = self.lock();
        if !s.dirty.insert(key.clone()) {
            return;
        }
        if s.processing.contains(&key) {
            return;
        }
        s.queue.push_back(key);
        drop(s);
        self.ready.notify_one();
    }

    /// Queues `key` after `delay`.
    pub fn add_after(self: &Arc<Self>, key: K, delay: Duration) {
        if delay.is_zero() {
            self.add(key);
            return;
        }
        let queue = Arc::downgrade(self);
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            if let Some(q) = queue.upgrade() {
                q.add(key);
            }
        });
    }

    /// Queues `key` after its next backoff delay (it failed once more).
    pub fn retry(self: &Arc<Self>, key: K) {
        let failures = {
            let mut s = self.lock();
            let n = s.failures.entry(key.clone()).or_insert(0);
            *n = n.saturating_add(1);
            *n
        };
        self.add_after(key, self.backoff.delay(failures));
    }

    /// Resets the backoff of `key` (it succeeded).
    pub fn forget(&self, key: &K) {
        self.lock().failures.remove(key);
    }

    /// Waits for the next key; the caller must call [`WorkQueue::done`] with it.
    pub async fn next(&self) -> K {
        loop {
            let notified = self.ready.notified();
            {
                let mut s = self.lock();
                if let Some(key) = s.queue.pop_front() {
                    s.dirty.remove(&key);
                    s.processing.insert(key.clone());
                    let more = !s.queue.is_empty();
                    drop(s);
                    if more {
                        self.ready.notify_one();
                    }
                    return key;
                }
            }
            notified.await;
        }
    }

    /// Ends the processing of `key`; queues it again if it was added meanwhile.
    pub fn done(&self, key: &K) {
        let mut s = self.lock();
        s.processing.remove(key);
        if s.dirty.contains(key) {
            s.queue.push_back(key.clone());
            drop(s);
            self.ready.notify_one();
        }
    }

    /// How many keys wait (for tests and logs).
    #[allow(dead_code)]
    pub fn len(&self) -> usize {
        self.lock().queue.len()
    }
}

/// One served resource, as discovery describes it.
#[derive(Debug, Clone)]
pub(crate) struct Served {
    /// Group, version, kind, plural (the group's preferred version).
    pub ar: ApiResource,
    /// Whether its objects live in namespaces.
    pub namespaced: bool,
    /// Its verbs.
    pub verbs: Vec<String>,
}

impl Served {
    /// Whether the resource supports `verb`.
    pub fn supports(&self, verb: &str) -> bool {
        self.verbs.iter().any(|v| v == verb)
    }
}

/// Every served resource (subresources excluded) at its group's preferred version: one
/// aggregated-discovery round trip, falling back to per-group discovery.
pub(crate) async fn discover(client: &kube::Client) -> Result<Vec<Served>, kube::Error> {
    let discovery = match Discovery::new(client.clone()).run_aggregated().await {
        Ok(d) => d,
        Err(_) => Discovery::new(client.clone()).run().await?,
    };
    let mut out = Vec::new();
    for group in discovery.groups() {
        for (ar, caps) in group.recommended_resources() {
            out.push(served(ar, &caps));
        }
    }
    Ok(out)
}

fn served(ar: ApiResource, caps: &ApiCapabilities) -> Served {
    Served {
        ar,
        namespaced: caps.scope == Scope::Namespaced,
        verbs: caps.operations.clone(),
    }
}

/// Whether a resource can be listed, watched and deleted (what the garbage collector needs).
pub(crate) fn collectable(s: &Served) -> bool {
    s.supports(verbs::LIST) && s.supports(verbs::WATCH) && s.supports(verbs::DELETE)
}

/// The group of an `apiVersion` (`""` for the core group).
pub(crate) fn group_of(api_version: &str) -> &str {
    match api_version.split_once('/') {
        Some((group, _)) => group,
        None => "",
    }
}

/// Whether a kube error is an API error with `code`.
pub(crate) fn is_status(err: &kube::Error, code: u16) -> bool {
    matches!(err, kube::Error::Api(s) if s.code == code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_the_cap() {
        let b = Backoff {
            base: Duration::from_millis(5),
            max: Duration::from_millis(50),
        };
        assert_eq!(b.delay(1), Duration::from_millis(5));
        assert_eq!(b.delay(2), Duration::from_millis(10));
        assert_eq!(b.delay(4), Duration::from_millis(40));
        assert_eq!(b.delay(5), Duration::from_millis(50));
        assert_eq!(b.delay(u32::MAX), Duration::from_millis(50));
    }

    #[tokio::test]
    async fn a_key_added_twice_is_processed_once() {
        let q = WorkQueue::new(Backoff::default());
        q.add("a");
        q.add("a");
        q.add("b");
        assert_eq!(q.len(), 2);
        let first = q.next().await;
        assert_eq!(first, "a");
        q.done(&first);
        assert_eq!(q.next().await, "b");
    }

    #[tokio::test]
    async fn a_key_added_while_processing_comes_back_after_done() {
        let q = WorkQueue::new(Backoff::default());
        q.add(1);
        let k = q.next().await;
        q.add(1);
        assert_eq!(q.len(), 0, "not handed to a second worker");
        q.done(&k);
        assert_eq!(q.next().await, 1);
    }

    #[tokio::test]
    async fn a_retried_key_comes_back_after_its_backoff() {
        let q = WorkQueue::new(Backoff {
            base: Duration::from_millis(1),
            max: Duration::from_millis(1),
        });
        q.add(7);
        let k = q.next().await;
        q.retry(k);
        q.done(&k);
        let again = tokio::time::timeout(Duration::from_secs(5), q.next()).await;
        assert_eq!(again.ok(), Some(7));
    }

    #[test]
    fn group_of_core_and_named_groups() {
        assert_eq!(group_of("v1"), "");
        assert_eq!(group_of("apps/v1"), "apps");
    }
}
