//! Pure work spread over a few threads, results in input order. A chart's templates, its
//! rendered documents and its subcharts are parsed independently, and a large chart is
//! megabytes of them; the caller then takes the results in order, so the first error in
//! order is the one a sequential loop would have met.
//!
//! Scoped threads over contiguous chunks of about equal weight rather than a work-stealing
//! pool: a pool's idle workers spin looking for work, and on a small machine that spinning
//! took CPU from the thread doing the rest of the render.

use std::sync::{Mutex, OnceLock};

/// The text each thread gets at least when parsing or decoding is spread (templates,
/// rendered documents, subcharts): starting a thread costs about as much as parsing a few
/// kilobytes.
pub const MIN_BYTES_PER_THREAD: usize = 64 * 1024;

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
    let threads = (total / min_weight.max(1))
        .clamp(1, cores())
        .min(items.len().max(1));
    if threads < 2 {
        return items.into_iter().map(f).collect();
    }
    let share = total.div_ceil(threads);
    let mut chunks: Vec<Vec<T>> = Vec::with_capacity(threads);
    let mut current = Vec::new();
    let mut size = 0;
    for item in items {
        size += weight(&item);
        current.push(item);
        if size >= share && chunks.len() + 1 < threads {
            chunks.push(std::mem::take(&mut current));
            size = 0;
        }
    }
    chunks.push(current);
    // Each chunk waits in its cell for its thread; a chunk whose thread could not start
    // is still there after the join and is mapped on the calling thread, in order.
    let cells: Vec<Mutex<Option<Vec<T>>>> =
        chunks.into_iter().map(|c| Mutex::new(Some(c))).collect();
    let take = |i: usize| {
        cells[i]
            .lock()
            .ok()
            .and_then(|mut c| c.take())
            .unwrap_or_default()
    };
    let f = &f;
    std::thread::scope(|scope| {
        let handles: Vec<_> = (1..cells.len())
            .map(|i| {
                std::thread::Builder::new()
                    .name("opkit-parallel".into())
                    .spawn_scoped(scope, move || {
                        take(i).into_iter().map(f).collect::<Vec<R>>()
                    })
                    .ok()
            })
            .collect();
        let mut out: Vec<R> = take(0).into_iter().map(f).collect();
        for (i, handle) in (1..).zip(handles) {
            if let Some(h) = handle {
                out.extend(h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)));
            }
            out.extend(take(i).into_iter().map(f));
        }
        out
    })
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

    #[test]
    fn small_inputs_stay_on_the_calling_thread() {
        let me = std::thread::current().id();
        let out = map_in_order(vec![1, 2, 3], |_| 10, 1000, |_| std::thread::current().id());
        assert!(out.iter().all(|id| *id == me));
    }
}
