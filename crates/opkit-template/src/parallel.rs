//! Pure work spread over a few threads, results in input order. A chart's templates, its
//! rendered documents and its subcharts are parsed independently, and a large chart is
//! megabytes of them; the caller then takes the results in order, so the first error in
//! order is the one a sequential loop would have met.
//!
//! The calling thread and a few helper threads each take the next item until none is left.
//! The helpers are started once per process and sleep between maps: a work-stealing pool's
//! idle workers spin looking for work (on a small machine that spinning took CPU from the
//! thread doing the rest of the render), and a thread started per map often waited a
//! millisecond or two for a core, the scheduler having queued it behind its parent.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, OnceLock};

/// The text each thread gets at least when parsing or decoding is spread (templates,
/// rendered documents, subcharts): starting a thread costs about as much as parsing a few
/// kilobytes (with 64 KiB, prometheus's 38 KiB of rendered documents were read on one
/// thread; 8 KiB took 1.5 ms off its one-shot render, and 0.4–1.9 ms off every corpus
/// chart's).
pub const MIN_BYTES_PER_THREAD: usize = 8 * 1024;

/// `f` of every item, in the order of `items`, computed on up to as many threads as the
/// machine runs at once, with each thread getting at least `min_weight` of the total
/// `weight` (so small inputs stay on the calling thread).
pub fn map_in_order<T: Send, R: Send>(
    items: Vec<T>,
    weight: impl Fn(&T) -> usize,
    min_weight: usize,
    f: impl Fn(T) -> R + Sync,
) -> Vec<R> {
    let total: usize = items.iter().map(&weight).sum();
    let threads = threads_for(total, min_weight, items.len());
    if threads < 2 {
        return items.into_iter().map(f).collect();
    }
    // Every thread, the calling one included, takes the next item not yet taken until none
    // is left: a helper that gets less of its core (the machine is busy) takes fewer items
    // instead of holding the caller up at the join.
    let n = items.len();
    let slots: Vec<Mutex<Option<T>>> = items.into_iter().map(|i| Mutex::new(Some(i))).collect();
    let done: Vec<Mutex<Option<R>>> = (0..n).map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    let work = || {
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            if i >= n {
                break;
            }
            let item = slots[i].lock().ok().and_then(|mut s| s.take());
            if let Some(item) = item {
                let r = f(item);
                if let Ok(mut d) = done[i].lock() {
                    *d = Some(r);
                }
            }
        }
    };
    alongside_helpers(threads - 1, &work);
    done.into_iter()
        .map(|d| {
            d.into_inner()
                .ok()
                .flatten()
                .expect("every item is mapped once the threads are joined")
        })
        .collect()
}

/// A helper thread: it sleeps until work is lent to it.
struct Helper {
    slot: Mutex<Slot>,
    changed: Condvar,
}

/// Where a helper stands with the work lent to it.
enum Slot {
    Empty,
    /// Lent, not yet started: the lender may take it back.
    Lent(Lent),
    Running,
    /// Finished, with the panic it ended in, if it did.
    Done(Option<Box<dyn std::any::Any + Send>>),
}

/// A lender's closure with its lifetime erased. Sound because the lender does not return
/// before the closure is taken back unstarted or has finished running (see
/// [`alongside_helpers`]).
struct Lent(*const (dyn Fn() + Sync));

// SAFETY: the closure is `Sync`, so calling it from the helper's thread is sound; the lender
// keeps it alive while lent (see `Lent`).
unsafe impl Send for Lent {}

impl Helper {
    fn slot(&self) -> std::sync::MutexGuard<'_, Slot> {
        self.slot.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The helper thread's life: wait for work, run it, say it is done.
    fn serve(&self) {
        loop {
            let lent = {
                let mut slot = self.slot();
                loop {
                    match std::mem::replace(&mut *slot, Slot::Running) {
                        Slot::Lent(lent) => break lent,
                        other => *slot = other,
                    }
                    slot = self.changed.wait(slot).unwrap_or_else(|e| e.into_inner());
                }
            };
            // SAFETY: the lender waits for `Done` before its closure goes (see `Lent`).
            let work = unsafe { &*lent.0 };
            let ended = std::panic::catch_unwind(std::panic::AssertUnwindSafe(work));
            *self.slot() = Slot::Done(ended.err());
            self.changed.notify_all();
        }
    }
}

/// The helpers not working for anyone now.
fn idle_helpers() -> std::sync::MutexGuard<'static, Vec<&'static Helper>> {
    static IDLE: Mutex<Vec<&'static Helper>> = Mutex::new(Vec::new());
    IDLE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs `work` on the calling thread and on up to `wanted` idle helpers at once, returning
/// when every run of it has finished (a panic in any of them is resumed here, after that).
/// A helper that has not started by the time the caller's run ends is not waited for: its
/// share was taken by the others. Helpers busy elsewhere (a map inside a map) are not
/// waited for either: the work then runs on fewer threads.
fn alongside_helpers(wanted: usize, work: &(dyn Fn() + Sync)) {
    let helpers: Vec<&'static Helper> = {
        start_helpers();
        let mut idle = idle_helpers();
        let keep = idle.len().saturating_sub(wanted);
        idle.split_off(keep)
    };
    // SAFETY (of the erased lifetime): every helper's slot is back to `Empty` below, taken
    // back unstarted or finished, before this function returns or resumes a panic.
    let erased: *const (dyn Fn() + Sync + '_) = work;
    let erased: *const (dyn Fn() + Sync) = unsafe { std::mem::transmute(erased) };
    for h in &helpers {
        *h.slot() = Slot::Lent(Lent(erased));
        h.changed.notify_all();
    }
    let mut panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)).err();
    for h in &helpers {
        let mut slot = h.slot();
        loop {
            match std::mem::replace(&mut *slot, Slot::Empty) {
                Slot::Lent(_) | Slot::Empty => break,
                Slot::Done(p) => {
                    panicked = panicked.or(p);
                    break;
                }
                Slot::Running => {
                    *slot = Slot::Running;
                    slot = h.changed.wait(slot).unwrap_or_else(|e| e.into_inner());
                }
            }
        }
    }
    idle_helpers().extend(helpers);
    if let Some(p) = panicked {
        std::panic::resume_unwind(p);
    }
}

/// Starts the helper threads (one per core besides the caller's), once per process; the
/// first map that can use them otherwise does. A new thread may wait a millisecond or more
/// before it first runs, so a caller that knows parallel work is coming calls this first.
pub fn start_helpers() {
    static STARTED: std::sync::Once = std::sync::Once::new();
    STARTED.call_once(|| {
        for _ in 1..cores() {
            let helper: &'static Helper = Box::leak(Box::new(Helper {
                slot: Mutex::new(Slot::Empty),
                changed: Condvar::new(),
            }));
            let started = std::thread::Builder::new()
                .name("opkit-parallel".into())
                .spawn(move || helper.serve());
            if started.is_ok() {
                idle_helpers().push(helper);
            }
        }
    });
}

/// Bumped when templates start running side by side; every map records the value it was
/// made under, so a map made before a run is one the run's templates share.
static GENERATION: AtomicU64 = AtomicU64::new(0);

/// The last side-by-side run given up because one of its templates tried to change a shared
/// map: its other templates stop at their next step, their output being thrown away.
static ABANDONED: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// While this thread runs one of several templates side by side: the generation of
    /// that run (maps made before it are shared). Zero otherwise.
    static SHARED_BEFORE: Cell<u64> = const { Cell::new(0) };
    /// Whether the template running here tried to change a shared map.
    static REFUSED: Cell<bool> = const { Cell::new(false) };
}

/// The generation a map made now records.
pub(crate) fn generation() -> u64 {
    GENERATION.load(Ordering::Relaxed)
}

/// Whether a map made in generation `born` may be changed on this thread. Go runs a chart's
/// templates one after another, and a template that changes a map it shares (Sprig's `set`
/// on `.Values`) is seen by every later one: side by side that order is lost, so such a
/// change is refused (and noted) rather than made.
pub(crate) fn may_change(born: u64) -> bool {
    let shared_before = SHARED_BEFORE.get();
    if born < shared_before {
        REFUSED.set(true);
        ABANDONED.store(shared_before, Ordering::Relaxed);
        return false;
    }
    true
}

/// Whether the template running on this thread belongs to a side-by-side run that has been
/// given up (see [`map_isolated`]); its execution may stop at once.
pub(crate) fn abandoned() -> bool {
    let run = SHARED_BEFORE.get();
    run != 0 && ABANDONED.load(Ordering::Relaxed) == run
}

/// `f` of every item in order, as if run one after another, where `f` runs templates that
/// may change the maps they share (a template changing a map changes it for every later one,
/// as in Go). The items run side by side on up to as many threads as the machine has (each
/// thread given at least `min_weight`), `f` told so by its second argument; if any of them
/// tries to change a map made before the run, nothing has been changed, and every item runs
/// again one after another, stopping at the first error as a sequential loop does.
pub fn map_isolated<T: Send + Clone, R: Send, E: Send>(
    items: Vec<T>,
    weight: impl Fn(&T) -> usize,
    min_weight: usize,
    f: impl Fn(T, bool) -> Result<R, E> + Sync,
) -> Result<Vec<R>, (usize, E)> {
    let sequential = |items: Vec<T>| -> Result<Vec<R>, (usize, E)> {
        items
            .into_iter()
            .enumerate()
            .map(|(i, item)| f(item, false).map_err(|e| (i, e)))
            .collect()
    };
    let total: usize = items.iter().map(&weight).sum();
    if threads_for(total, min_weight, items.len()) < 2 {
        return sequential(items);
    }
    let run = GENERATION.fetch_add(1, Ordering::Relaxed) + 1;
    let results = map_in_order(items.clone(), weight, min_weight, |item| {
        if ABANDONED.load(Ordering::Relaxed) == run {
            return None;
        }
        let outer = SHARED_BEFORE.replace(run);
        let outer_refused = REFUSED.replace(false);
        let result = f(item, true);
        let refused = REFUSED.replace(outer_refused);
        SHARED_BEFORE.set(outer);
        (!refused).then_some(result)
    });
    if ABANDONED.load(Ordering::Relaxed) == run || results.iter().any(Option::is_none) {
        return sequential(items);
    }
    results
        .into_iter()
        .flatten()
        .enumerate()
        .map(|(i, r)| r.map_err(|e| (i, e)))
        .collect()
}

/// How many threads `items` items of `total` weight get, each at least `min_weight` of it, at
/// most one per item and per core.
fn threads_for(total: usize, min_weight: usize, items: usize) -> usize {
    (total / min_weight.max(1))
        .clamp(1, cores())
        .min(items.max(1))
}

/// How many threads the machine runs at once (at least one), asked once per process.
fn cores() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_come_in_input_order_whatever_the_split() {
        for n in [0usize, 1, 2, 3, 10, 101] {
            let items: Vec<usize> = (0..n).collect();
            let out = map_in_order(items, |_| 1000, 1, |i| i * 2);
            assert_eq!(out, (0..n).map(|i| i * 2).collect::<Vec<_>>());
        }
    }

    fn int(v: Option<crate::Value>) -> i64 {
        match v {
            Some(crate::Value::Int(n)) => n,
            _ => -1,
        }
    }

    #[test]
    fn a_change_to_a_shared_map_is_seen_by_later_items_as_in_sequence() {
        let shared = crate::Dict::default();
        shared.insert("n", crate::Value::Int(0));
        // Each item reads the counter and increments it, as `set` on `.Values` would.
        let out = map_isolated(
            (0..6).collect(),
            |_| 10,
            10,
            |i: i64, _| {
                let n = int(shared.get("n"));
                shared.insert("n", crate::Value::Int(n + 1));
                Ok::<_, ()>((i, n))
            },
        )
        .unwrap();
        assert_eq!(out, (0..6).map(|i| (i, i)).collect::<Vec<_>>());
        assert_eq!(int(shared.get("n")), 6);
    }

    #[test]
    fn maps_made_by_an_item_are_its_own_and_the_first_error_in_order_wins() {
        let out = map_isolated(
            (0..8).collect(),
            |_| 10,
            10,
            |i: i64, _| {
                let own = crate::Dict::default();
                own.insert("i", crate::Value::Int(i));
                match int(own.get("i")) {
                    n if n == 3 || n == 6 => Err(n),
                    n => Ok(n),
                }
            },
        );
        assert_eq!(out, Err((3, 3)));
    }

    #[test]
    fn maps_reuse_the_same_helper_threads() {
        let me = std::thread::current().id();
        let mut helpers = std::collections::HashSet::new();
        for _ in 0..20 {
            let ids = map_in_order(
                (0..64).collect(),
                |_| 1,
                1,
                |_: i32| {
                    // Long enough for a helper to take some items.
                    std::thread::sleep(std::time::Duration::from_micros(200));
                    std::thread::current().id()
                },
            );
            helpers.extend(ids.into_iter().filter(|id| *id != me));
        }
        assert!(helpers.len() < cores(), "{} helper threads", helpers.len());
    }

    #[test]
    fn a_panicking_item_panics_the_caller_after_every_thread_is_done() {
        let (entered, left) = (AtomicUsize::new(0), AtomicUsize::new(0));
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            map_in_order(
                (0..40).collect(),
                |_| 1,
                1,
                |i: usize| {
                    entered.fetch_add(1, Ordering::SeqCst);
                    if i == 3 {
                        panic!("item 3");
                    }
                    std::thread::sleep(std::time::Duration::from_micros(100));
                    left.fetch_add(1, Ordering::SeqCst);
                },
            )
        }));
        assert!(caught.is_err());
        // No item is still running (on borrowed data) once the panic reaches the caller.
        let (entered, left) = (entered.load(Ordering::SeqCst), left.load(Ordering::SeqCst));
        assert_eq!(entered, left + 1);
        // And the helpers serve the next map.
        assert_eq!(
            map_in_order(vec![1, 2, 3], |_| 1, 1, |i| i + 1),
            vec![2, 3, 4]
        );
    }

    #[test]
    fn a_map_inside_a_map_runs_without_waiting_for_busy_helpers() {
        let out = map_in_order(
            (0..8).collect(),
            |_| 1,
            1,
            |i: usize| {
                map_in_order((0..8).collect(), |_| 1, 1, |j: usize| i * 8 + j)
                    .into_iter()
                    .sum::<usize>()
            },
        );
        let want: Vec<usize> = (0..8).map(|i| (0..8).map(|j| i * 8 + j).sum()).collect();
        assert_eq!(out, want);
    }

    #[test]
    fn small_inputs_stay_on_the_calling_thread() {
        let me = std::thread::current().id();
        let out = map_in_order(vec![1, 2, 3], |_| 10, 1000, |_| std::thread::current().id());
        assert!(out.iter().all(|id| *id == me));
    }
}
