//! Deep recursion on a large stack. Templates, their error texts and YAML documents nest up
//! to Go's bounds (thousands of levels), deeper than a caller's stack (2 MiB on test and tokio
//! threads) holds. The work switches to a freshly mapped stack on the same thread
//! (`stacker`): an `mmap`/`munmap` pair, where starting and joining a thread cost several
//! times more (and moved every allocation to another malloc arena) — it ran for every values
//! file and every rendered manifest.

/// Stack for work whose depth is bounded only by Go's limits (describing a deeply nested
/// node in an error message, reading YAML).
pub(crate) const LARGE_STACK_BYTES: usize = 256 << 20;

/// Runs `f` on a fresh stack of `bytes`; `None` when no such stack can be mapped. A panic
/// of `f` continues on the caller's stack.
pub(crate) fn on_large_stack<T>(bytes: usize, f: impl FnOnce() -> T) -> Option<T> {
    let mut started = false;
    let run = std::panic::AssertUnwindSafe(|| {
        stacker::grow(bytes, || {
            started = true;
            f()
        })
    });
    match std::panic::catch_unwind(run) {
        Ok(v) => Some(v),
        Err(p) if started => std::panic::resume_unwind(p),
        // stacker panics when the stack cannot be mapped, before `f` runs.
        Err(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn depth(n: usize) -> usize {
        if n == 0 {
            0
        } else {
            1 + std::hint::black_box(depth(n - 1))
        }
    }

    #[test]
    fn recursion_deeper_than_the_callers_stack_runs_on_the_large_stack() {
        // ~100 000 frames do not fit the 2 MiB of a test thread.
        assert_eq!(
            on_large_stack(LARGE_STACK_BYTES, || depth(100_000)),
            Some(100_000)
        );
    }

    #[test]
    fn a_panic_inside_reaches_the_caller() {
        let r = std::panic::catch_unwind(|| on_large_stack(1 << 20, || panic!("boom")));
        assert!(r.is_err());
    }
}
