//! Staging and group commit.
//!
//! A transaction runs in two steps. Under the short stage lock it gets the next revision, runs
//! its closure against the latest state (committed state plus the pending overlay), and queues
//! the resulting batch; then it waits, without any lock, for its batch to be durable. One writer
//! thread drains *every* queued batch at once, writes them in a single redb transaction, and
//! commits it with one fsync: under load, one fsync acknowledges as many transactions as arrived
//! during the previous one, which is what makes many concurrent writers cheap. Only after the
//! commit does the writer apply the batches to the in-memory state and the history (so readers
//! and watchers see durable data only), in revision order, and wake the waiting callers.
//!
//! If a commit fails, redb needs a reopen and the batches queued behind the failed one were
//! staged on top of it, so the store stops accepting writes: every waiting and later caller gets
//! [`StoreError::WriteFailed`]; reads keep working on the last durable state.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::PoisonError;
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

use crate::disk::Disk;
use crate::error::StoreError;
use crate::history::Record;
use crate::store::Shared;
use crate::sync::lock;
use crate::txn::Pending;

/// Longest the writer waits for more transactions before a commit (see [`gather`]).
const GATHER_MAX: Duration = Duration::from_micros(500);

/// The reply channel of one waiting transaction.
pub(crate) type Reply = oneshot::Sender<Result<(), StoreError>>;

/// What the stage lock guards.
pub(crate) struct Stage {
    /// Last revision handed to a transaction that wrote something.
    pub(crate) last_assigned: u64,
    /// Latest state of each key written by a queued or committing batch (durable mode only).
    pub(crate) overlay: HashMap<Arc<str>, Pending>,
    /// Batches waiting for the writer, in revision order.
    pub(crate) queue: Vec<Batch>,
    /// Set when a commit failed: no more writes.
    pub(crate) failed: Option<Arc<StoreError>>,
    /// Set when the store is dropped: the writer drains the queue and exits.
    pub(crate) shutdown: bool,
}

impl Stage {
    pub(crate) fn new(revision: u64) -> Self {
        Stage {
            last_assigned: revision,
            overlay: HashMap::new(),
            queue: Vec::new(),
            failed: None,
            shutdown: false,
        }
    }
}

/// The changes of one transaction, waiting to be committed.
pub(crate) struct Batch {
    pub(crate) revision: u64,
    pub(crate) records: Vec<Record>,
    pub(crate) reply: Option<Reply>,
}

/// The writer thread: drains the queue, commits each group with one fsync, publishes, acks.
pub(crate) fn run_writer(shared: Arc<Shared>, mut disk: Disk) {
    let _guard = PanicGuard(&shared);
    tracing::debug!(path = %disk.path().display(), "store writer started");
    let mut committed: Vec<Batch> = Vec::new();
    loop {
        let mut batches = {
            let mut stage = lock(&shared.stage);
            forget_pending(&mut stage, &committed);
            let last_group = committed.len();
            committed.clear();
            loop {
                if !stage.queue.is_empty() {
                    stage = gather(&shared, stage, last_group);
                    // Swap rather than take, to reuse the allocation of the previous group.
                    std::mem::swap(&mut stage.queue, &mut committed);
                    break std::mem::take(&mut committed);
                }
                if stage.shutdown {
                    tracing::debug!("store writer stopped");
                    return;
                }
                stage = shared
                    .wake_writer
                    .wait(stage)
                    .unwrap_or_else(PoisonError::into_inner);
            }
        };
        let result = disk.commit(
            batches
                .iter()
                .map(|batch| (batch.revision, batch.records.as_slice())),
        );
        match result {
            Ok(()) => {
                shared.record_group_commit();
                shared.publish(
                    batches
                        .iter()
                        .map(|batch| (batch.revision, batch.records.as_slice())),
                );
                for batch in &mut batches {
                    if let Some(reply) = batch.reply.take() {
                        // The caller may have stopped waiting; its write is durable anyway.
                        let _ = reply.send(Ok(()));
                    }
                }
                committed = batches;
            }
            Err(err) => {
                fail(&shared, batches, err);
                return;
            }
        }
    }
}

/// Waits briefly for the callers of the last group to queue their next transactions.
///
/// Right after a group is acknowledged, its callers are busy staging their next transactions;
/// a writer that committed at once would take the first few and leave the rest for the group
/// after, so group sizes would alternate between large and small. So when the queue holds less
/// than half as many transactions as the last group, the writer waits up to [`GATHER_MAX`]
/// (a fraction of an fsync) for more. With a single writer (last group of one) it never waits.
fn gather<'a>(
    shared: &'a Shared,
    mut stage: std::sync::MutexGuard<'a, Stage>,
    last_group: usize,
) -> std::sync::MutexGuard<'a, Stage> {
    let wanted = last_group / 2;
    if stage.queue.len() >= wanted {
        return stage;
    }
    let deadline = Instant::now() + GATHER_MAX;
    while stage.queue.len() < wanted && !stage.shutdown {
        let Some(left) = deadline.checked_duration_since(Instant::now()) else {
            break;
        };
        stage = shared
            .wake_writer
            .wait_timeout(stage, left)
            .unwrap_or_else(PoisonError::into_inner)
            .0;
    }
    stage
}

/// Removes from the overlay the keys whose newest pending write is now committed (and so in
/// the committed state).
fn forget_pending(stage: &mut Stage, committed: &[Batch]) {
    for batch in committed {
        for record in &batch.records {
            let key = &*record.event.key;
            if stage
                .overlay
                .get(key)
                .is_some_and(|pending| pending.revision <= batch.revision)
            {
                stage.overlay.remove(key);
            }
        }
    }
}

/// Stops all writes after a failed commit and fails every waiting transaction.
fn fail(shared: &Shared, batches: Vec<Batch>, err: StoreError) {
    tracing::error!(error = %err, "store commit failed; no more writes are accepted");
    let err = Arc::new(err);
    let queued = {
        let mut stage = lock(&shared.stage);
        stage.failed = Some(err.clone());
        stage.overlay.clear();
        std::mem::take(&mut stage.queue)
    };
    for batch in batches.into_iter().chain(queued) {
        if let Some(reply) = batch.reply {
            let _ = reply.send(Err(StoreError::WriteFailed(err.clone())));
        }
    }
}

/// Should the writer thread ever panic, stops writes instead of leaving callers queued forever.
struct PanicGuard<'a>(&'a Shared);

impl Drop for PanicGuard<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            tracing::error!("store writer thread panicked; no more writes are accepted");
            let mut stage = lock(&self.0.stage);
            stage.failed = Some(Arc::new(StoreError::Closed));
            stage.overlay.clear();
            // Dropping the replies wakes their callers with `Closed`.
            stage.queue.clear();
        }
    }
}
