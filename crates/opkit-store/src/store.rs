//! The store handle: opening, reads, transactions, watches, shutdown.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, RwLock};
use std::thread::JoinHandle;

use tokio::sync::watch;

use crate::commit::{Batch, Stage, run_writer};
use crate::config::{Clock, StoreConfig};
use crate::disk::Disk;
use crate::error::StoreError;
use crate::history::{History, Record};
use crate::list::{ListOptions, ListResult};
use crate::state::State;
use crate::sync::{lock, read, write};
use crate::txn::{Pending, Txn};
use crate::types::{Entry, EventKind};
use crate::watch::Watcher;

/// The part shared by the handles, the writer thread and the watchers.
pub(crate) struct Shared {
    pub(crate) stage: Mutex<Stage>,
    /// Signals the writer thread that the queue is not empty (or that the store shuts down).
    pub(crate) wake_writer: Condvar,
    pub(crate) state: RwLock<State>,
    /// Carries the published revision; watchers wait on it for new events.
    pub(crate) notify: watch::Sender<u64>,
    /// False for an ephemeral store: transactions are applied at once, without a writer.
    durable: bool,
    group_commits: AtomicU64,
    /// What the history window is measured by.
    clock: Clock,
}

/// How a staged transaction goes on.
enum Staged<T> {
    /// It wrote nothing: no revision consumed.
    Nothing(T),
    /// Ephemeral store: already applied and published.
    Done(T, u64),
    /// Queued for the writer: wait for the reply.
    Waiting(
        T,
        u64,
        tokio::sync::oneshot::Receiver<Result<(), StoreError>>,
    ),
}

impl Shared {
    fn stage<T, E: From<StoreError>>(
        &self,
        f: impl FnOnce(&mut Txn<'_>) -> Result<T, E>,
    ) -> Result<Staged<T>, E> {
        let mut stage = lock(&self.stage);
        if let Some(err) = &stage.failed {
            return Err(StoreError::WriteFailed(err.clone()).into());
        }
        if stage.shutdown {
            return Err(StoreError::Closed.into());
        }
        let revision = stage.last_assigned + 1;
        let (value, records) = {
            let mut txn = Txn::new(revision, &stage.overlay, &self.state);
            let value = f(&mut txn)?;
            (value, txn.into_records())
        };
        if records.is_empty() {
            return Ok(Staged::Nothing(value));
        }
        stage.last_assigned = revision;
        if !self.durable {
            // Applied under the stage lock, so in revision order.
            self.publish(std::iter::once((revision, records.as_slice())));
            return Ok(Staged::Done(value, revision));
        }
        for record in &records {
            let event = &record.event;
            let entry = match event.kind {
                EventKind::Put => Some(Entry {
                    key: event.key.clone(),
                    value: event.value.clone(),
                    revision,
                }),
                EventKind::Delete => None,
            };
            stage
                .overlay
                .insert(event.key.clone(), Pending { revision, entry });
        }
        let (reply, wait) = tokio::sync::oneshot::channel();
        stage.queue.push(Batch {
            revision,
            records,
            reply: Some(reply),
        });
        drop(stage);
        self.wake_writer.notify_one();
        Ok(Staged::Waiting(value, revision, wait))
    }

    /// Applies committed transactions (in revision order) to the state and the history, and
    /// wakes the watchers.
    pub(crate) fn publish<'a>(&self, transactions: impl Iterator<Item = (u64, &'a [Record])>) {
        let now = self.clock.now();
        let revision = {
            let mut state = write(&self.state);
            for (revision, records) in transactions {
                state.apply(revision, records, now);
            }
            state.trim_history(now);
            state.revision
        };
        self.notify.send_replace(revision);
    }

    pub(crate) fn record_group_commit(&self) {
        self.group_commits.fetch_add(1, Ordering::Relaxed);
    }
}

/// Owns the writer thread; dropping the last [`Store`] handle shuts the store down.
struct Inner {
    shared: Arc<Shared>,
    writer: Option<JoinHandle<()>>,
    path: Option<PathBuf>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        lock(&self.shared.stage).shutdown = true;
        self.shared.wake_writer.notify_all();
        if let Some(writer) = self.writer.take() {
            // Waits for the last group commit, and for redb to close the file, so that the path
            // can be opened again as soon as the store is dropped.
            if writer.join().is_err() {
                tracing::error!("store writer thread panicked");
            }
        }
        write(&self.shared.state).closed = true;
        self.shared.notify.send_modify(|_| {});
    }
}

/// Counters for metrics and benchmarks.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StoreStats {
    /// Highest revision committed.
    pub revision: u64,
    /// Revision at or below which history is gone.
    pub compacted_revision: u64,
    /// Live objects.
    pub objects: usize,
    /// Events held in the history.
    pub history_events: usize,
    /// Group commits (redb transactions, each one fsync) since open; 0 for an ephemeral store.
    pub group_commits: u64,
}

/// A revisioned key-value store: all live objects in memory, a durable copy in redb, one global
/// revision, group commit, and an event history for watches and paged lists.
///
/// Cheap to clone (an `Arc` inside). Dropping the last clone waits for the pending commits,
/// closes the database, and ends the watchers once they have drained their events.
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

impl fmt::Debug for Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Store")
            .field("path", &self.inner.path)
            .field("revision", &self.current_revision())
            .finish()
    }
}

impl Store {
    /// Opens (creates) the database at `config.path`, or an in-memory store if it is `None`.
    ///
    /// Fails at once with [`StoreError::Locked`] if another process (or another `Store` of this
    /// process) has the file open. Loads all live objects into memory; revisions continue from
    /// the persisted revision, and the history starts empty (so
    /// [`compacted_revision`](Self::compacted_revision) is the revision at open).
    pub fn open(config: StoreConfig) -> Result<Store, StoreError> {
        let (disk, objects, revision) = match &config.path {
            Some(path) => {
                let (disk, loaded) = Disk::open(path)?;
                (Some(disk), loaded.objects, loaded.revision)
            }
            None => (None, Default::default(), 0),
        };
        tracing::debug!(
            path = ?config.path,
            revision,
            objects = objects.len(),
            "store opened"
        );
        let state = State {
            objects,
            revision,
            history: History::new(revision, config.history_max_events, config.history_window),
            closed: false,
        };
        let (notify, _) = watch::channel(revision);
        let shared = Arc::new(Shared {
            stage: Mutex::new(Stage::new(revision)),
            wake_writer: Condvar::new(),
            state: RwLock::new(state),
            notify,
            durable: disk.is_some(),
            group_commits: AtomicU64::new(0),
            clock: config.clock.clone(),
        });
        let writer = match disk {
            None => None,
            Some(disk) => {
                let path = disk.path().to_path_buf();
                let for_writer = shared.clone();
                let handle = std::thread::Builder::new()
                    .name("opkit-store-writer".into())
                    .spawn(move || run_writer(for_writer, disk))
                    .map_err(|source| StoreError::Io { path, source })?;
                Some(handle)
            }
        };
        Ok(Store {
            inner: Arc::new(Inner {
                shared,
                writer,
                path: config.path,
            }),
        })
    }

    /// The database file, `None` for an ephemeral store.
    pub fn path(&self) -> Option<&Path> {
        self.inner.path.as_deref()
    }

    fn shared(&self) -> &Shared {
        &self.inner.shared
    }

    /// Resolves once every handle of this store is dropped and its database is closed, so
    /// that its path can be opened again. The future does not keep the store open.
    pub fn closed(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let mut changes = self.shared().notify.subscribe();
        let shared = Arc::downgrade(&self.inner.shared);
        async move {
            loop {
                match shared.upgrade() {
                    Some(shared) if !read(&shared.state).closed => {}
                    _ => return,
                }
                if changes.changed().await.is_err() {
                    return;
                }
            }
        }
    }

    /// Highest revision assigned and committed (durable, visible to reads and watches).
    pub fn current_revision(&self) -> u64 {
        read(&self.shared().state).revision
    }

    /// Revision at or below which history events are no longer available: a watch or a list
    /// at an older revision gets [`StoreError::Compacted`]. Right after open of an existing
    /// database this is the revision at open (the history is not persisted).
    pub fn compacted_revision(&self) -> u64 {
        read(&self.shared().state).history.compacted()
    }

    /// Revision up to which every event has been published to watchers (for watch bookmarks).
    /// Events are published in the same step that makes them visible to reads, so this equals
    /// [`current_revision`](Self::current_revision); a single watcher's own progress is
    /// [`Watcher::progress_revision`].
    pub fn published_revision(&self) -> u64 {
        self.current_revision()
    }

    /// The live entry at `key`.
    pub fn get(&self, key: &str) -> Option<Entry> {
        read(&self.shared().state).objects.get(key).cloned()
    }

    /// Keys starting with `prefix`, in key order, one page at a time; see [`ListOptions`].
    ///
    /// With `at_revision`, the state as of that revision is rebuilt from the current state and
    /// the history; a revision older than the history gives [`StoreError::Compacted`], one newer
    /// than the store gives [`StoreError::FutureRevision`].
    pub fn list(&self, prefix: &str, opts: &ListOptions) -> Result<ListResult, StoreError> {
        crate::list::list(&read(&self.shared().state), prefix, opts)
    }

    /// Number of live keys under `prefix` (Kubernetes' `remainingItemCount`): counts in memory,
    /// without copying anything.
    pub fn count(&self, prefix: &str) -> usize {
        crate::list::count(&read(&self.shared().state), prefix)
    }

    /// Counters for metrics.
    pub fn stats(&self) -> StoreStats {
        let state = read(&self.shared().state);
        StoreStats {
            revision: state.revision,
            compacted_revision: state.history.compacted(),
            objects: state.objects.len(),
            history_events: state.history.len(),
            group_commits: self.shared().group_commits.load(Ordering::Relaxed),
        }
    }

    /// Runs `f` atomically under the store's write lock, with a view of the latest state.
    ///
    /// `f` reads with [`Txn::get`] and stages puts and deletes; all its writes get one new
    /// revision, which [`Txn::revision`] tells `f` before it serializes values. `f` must be
    /// short (it holds up every other writer) and must not wait on the store. If `f` returns
    /// `Err`, nothing is written; if it stages no writes, no revision is consumed.
    ///
    /// Returns once the writes are durable (fsync'd, shared with the concurrent transactions of
    /// the same group commit; at once for an ephemeral store), with `f`'s value and the
    /// revision committed (`None` without writes). If the future is dropped while waiting, the
    /// writes still commit.
    pub async fn transact<T, E>(
        &self,
        f: impl FnOnce(&mut Txn<'_>) -> Result<T, E>,
    ) -> Result<(T, Option<u64>), E>
    where
        E: From<StoreError>,
    {
        match self.shared().stage(f)? {
            Staged::Nothing(value) => Ok((value, None)),
            Staged::Done(value, revision) => Ok((value, Some(revision))),
            Staged::Waiting(value, revision, wait) => match wait.await {
                Ok(Ok(())) => Ok((value, Some(revision))),
                Ok(Err(err)) => Err(err.into()),
                Err(_) => Err(StoreError::Closed.into()),
            },
        }
    }

    /// Events with a revision above `after` for keys starting with `prefix`: first those still
    /// in the history, then live ones, in revision order, with no gaps and no duplicates.
    /// Fails with [`StoreError::Compacted`] if `after` is below
    /// [`compacted_revision`](Self::compacted_revision).
    pub fn watch(&self, prefix: &str, after: u64) -> Result<Watcher, StoreError> {
        let state = read(&self.shared().state);
        if state.closed {
            return Err(StoreError::Closed);
        }
        let compacted = state.history.compacted();
        if after < compacted {
            return Err(StoreError::Compacted {
                requested: after,
                compacted,
            });
        }
        let cursor = state.history.seq_after(after);
        let notify = self.shared().notify.subscribe();
        drop(state);
        Ok(Watcher::new(
            self.inner.shared.clone(),
            prefix,
            after,
            cursor,
            notify,
        ))
    }
}
