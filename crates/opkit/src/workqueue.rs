//! A work queue with deduplication, delayed adds and per-key exponential backoff.
//!
//! Why not `kube_runtime::Controller`? Its scheduler retries failed objects only after a
//! delay the error policy picks, with no memory of earlier failures per object, and it cannot
//! share caches between controllers without unstable features. Operators expect client-go's
//! work-queue semantics, which this module reproduces:
//!
//! * **dedupe** — a key that is already waiting is not queued twice (`dirty` set);
//! * **one at a time** — a key being reconciled (`processing`) is not handed out again; if it
//!   is added meanwhile it is queued again when [`WorkQueue::done`] is called;
//! * **delayed adds** — [`WorkQueue::add_after`] keeps the earliest deadline per key;
//! * **per-key backoff** — [`WorkQueue::add_rate_limited`] waits 5 ms · 2ⁿ (capped at
//!   1000 s) after the n-th consecutive failure of that key; [`WorkQueue::forget`] resets it,
//!   as client-go's `ItemExponentialFailureRateLimiter`;
//! * **shutdown** — [`WorkQueue::get`] returns `None` once [`WorkQueue::shutdown`] was called,
//!   so workers stop taking work while reconciles in flight finish.

use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::Hash;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

use crate::metrics::QueueMetrics;

/// Exponential per-key backoff: `base · 2^(failures-1)`, at most `max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// The delay after the first failure (client-go: 5 ms).
    pub base: Duration,
    /// The longest delay (client-go: 1000 s).
    pub max: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            base: Duration::from_millis(5),
            max: Duration::from_secs(1000),
        }
    }
}

impl Backoff {
    /// The delay after `failures` consecutive failures (1 = first failure).
    pub fn delay(&self, failures: u32) -> Duration {
        let exp = failures.saturating_sub(1).min(63);
        let factor = 1u64.checked_shl(exp).unwrap_or(u64::MAX);
        let nanos = (self.base.as_nanos() as u64).saturating_mul(factor);
        Duration::from_nanos(nanos).min(self.max)
    }
}

struct State<T> {
    queue: VecDeque<T>,
    dirty: HashSet<T>,
    processing: HashSet<T>,
    waiting: HashMap<T, Instant>,
    failures: HashMap<T, u32>,
    shutting_down: bool,
}

/// A deduplicating, rate-limited work queue of keys `T`.
pub struct WorkQueue<T> {
    state: Mutex<State<T>>,
    notify: Notify,
    backoff: Backoff,
    metrics: QueueMetrics,
}

impl<T> std::fmt::Debug for WorkQueue<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkQueue").finish_non_exhaustive()
    }
}

impl<T: Clone + Eq + Hash + Send + 'static> WorkQueue<T> {
    /// An empty queue.
    pub fn new(backoff: Backoff, metrics: QueueMetrics) -> Arc<WorkQueue<T>> {
        Arc::new(WorkQueue {
            state: Mutex::new(State {
                queue: VecDeque::new(),
                dirty: HashSet::new(),
                processing: HashSet::new(),
                waiting: HashMap::new(),
                failures: HashMap::new(),
                shutting_down: false,
            }),
            notify: Notify::new(),
            backoff,
            metrics,
        })
    }

    fn lock(&self) -> MutexGuard<'_, State<T>> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queues `key` unless it is already queued; a key being processed is queued again when
    /// it is done.
    pub fn add(&self, key: T) {
        let mut s = self.lock();
        self.add_locked(&mut s, key);
    }

    fn add_locked(&self, s: &mut State<T>, key: T) {
        if s.shutting_down || s.dirty.contains(&key) {
            return;
        }
        self.metrics.adds.inc();
        s.dirty.insert(key.clone());
        if s.processing.contains(&key) {
            return;
        }
        s.queue.push_back(key);
        self.metrics.depth.set(s.queue.len() as i64);
        self.notify.notify_one();
    }

    /// Queues `key` after `delay`; of several pending delayed adds the earliest wins.
    pub fn add_after(self: &Arc<Self>, key: T, delay: Duration) {
        if delay.is_zero() {
            self.add(key);
            return;
        }
        let deadline = Instant::now() + delay;
        {
            let mut s = self.lock();
            if s.shutting_down {
                return;
            }
            match s.waiting.get(&key) {
                Some(existing) if *existing <= deadline => return,
                _ => {
                    s.waiting.insert(key.clone(), deadline);
                }
            }
        }
        let queue = Arc::downgrade(self);
        tokio::spawn(async move {
            tokio::time::sleep_until(deadline).await;
            let Some(queue) = queue.upgrade() else { return };
            let mut s = queue.lock();
            if s.waiting.get(&key) == Some(&deadline) {
                s.waiting.remove(&key);
                queue.add_locked(&mut s, key);
            }
        });
    }

    /// Queues `key` after its backoff delay and counts one more failure for it.
    pub fn add_rate_limited(self: &Arc<Self>, key: T) {
        let delay = {
            let mut s = self.lock();
            let n = s.failures.entry(key.clone()).or_insert(0);
            *n = n.saturating_add(1);
            self.backoff.delay(*n)
        };
        self.metrics.retries.inc();
        self.add_after(key, delay);
    }

    /// Forgets the failures of `key` (its next backoff starts at the base delay again).
    pub fn forget(&self, key: &T) {
        self.lock().failures.remove(key);
    }

    /// How many consecutive failures `key` has had.
    pub fn failures(&self, key: &T) -> u32 {
        self.lock().failures.get(key).copied().unwrap_or(0)
    }

    /// Waits for the next key; `None` once the queue shuts down.
    pub async fn get(&self) -> Option<T> {
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let mut s = self.lock();
                if s.shutting_down {
                    return None;
                }
                if let Some(key) = s.queue.pop_front() {
                    s.dirty.remove(&key);
                    s.processing.insert(key.clone());
                    self.metrics.depth.set(s.queue.len() as i64);
                    if !s.queue.is_empty() {
                        // Let another idle worker look too.
                        self.notify.notify_one();
                    }
                    return Some(key);
                }
            }
            notified.await;
        }
    }

    /// Marks `key` as processed; queues it again if it was added meanwhile.
    pub fn done(&self, key: &T) {
        let mut s = self.lock();
        s.processing.remove(key);
        if s.dirty.contains(key) && !s.shutting_down {
            s.queue.push_back(key.clone());
            self.metrics.depth.set(s.queue.len() as i64);
            self.notify.notify_one();
        }
    }

    /// The number of keys waiting to be handed out.
    pub fn len(&self) -> usize {
        self.lock().queue.len()
    }

    /// Whether no key is waiting to be handed out.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Stops handing out keys: every [`WorkQueue::get`] returns `None` from now on.
    pub fn shutdown(&self) {
        let mut s = self.lock();
        s.shutting_down = true;
        s.queue.clear();
        s.dirty.clear();
        s.waiting.clear();
        self.metrics.depth.set(0);
        drop(s);
        self.notify.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queue() -> Arc<WorkQueue<&'static str>> {
        WorkQueue::new(Backoff::default(), QueueMetrics::default())
    }

    #[test]
    fn backoff_doubles_from_5ms_and_caps_at_1000s() {
        let b = Backoff::default();
        assert_eq!(b.delay(1), Duration::from_millis(5));
        assert_eq!(b.delay(2), Duration::from_millis(10));
        assert_eq!(b.delay(3), Duration::from_millis(20));
        assert_eq!(b.delay(30), Duration::from_secs(1000));
        assert_eq!(b.delay(200), Duration::from_secs(1000));
    }

    #[tokio::test]
    async fn duplicate_adds_are_queued_once() {
        let q = queue();
        q.add("a");
        q.add("a");
        q.add("b");
        assert_eq!(q.len(), 2);
        assert_eq!(q.get().await, Some("a"));
        assert_eq!(q.get().await, Some("b"));
    }

    #[tokio::test]
    async fn a_key_being_processed_is_not_handed_out_again_until_done() {
        let q = queue();
        q.add("a");
        assert_eq!(q.get().await, Some("a"));
        q.add("a");
        assert!(q.is_empty(), "re-added while processing waits for done");
        q.done(&"a");
        assert_eq!(q.len(), 1);
        assert_eq!(q.get().await, Some("a"));
    }

    #[tokio::test(start_paused = true)]
    async fn add_after_keeps_the_earliest_deadline() {
        let q = queue();
        q.add_after("a", Duration::from_secs(10));
        q.add_after("a", Duration::from_secs(1));
        let start = Instant::now();
        assert_eq!(q.get().await, Some("a"));
        assert_eq!(start.elapsed().as_secs(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn rate_limited_adds_back_off_per_key_and_forget_resets() {
        let q = queue();
        for expected in [5u64, 10, 20, 40] {
            let start = Instant::now();
            q.add_rate_limited("a");
            assert_eq!(q.get().await, Some("a"));
            assert_eq!(start.elapsed(), Duration::from_millis(expected));
            q.done(&"a");
        }
        assert_eq!(q.failures(&"a"), 4);
        q.forget(&"a");
        let start = Instant::now();
        q.add_rate_limited("a");
        assert_eq!(q.get().await, Some("a"));
        assert_eq!(start.elapsed(), Duration::from_millis(5));
    }

    #[tokio::test]
    async fn shutdown_releases_waiting_workers() {
        let q = queue();
        let waiter = tokio::spawn({
            let q = q.clone();
            async move { q.get().await }
        });
        tokio::task::yield_now().await;
        q.shutdown();
        assert_eq!(waiter.await.ok().flatten(), None);
        q.add("a");
        assert!(q.is_empty());
    }
}
