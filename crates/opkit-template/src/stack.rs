//! Deep recursion on a large stack. Templates, their error texts and YAML documents nest up
//! to Go's bounds (thousands of levels), deeper than a caller's stack (2 MiB on test and tokio
//! threads) holds. The work switches to a large stack on the same thread: starting and joining
//! a thread costs several times more (and moves every allocation to another malloc arena).
//!
//! It runs for every values file and every rendered manifest, so each thread keeps one large
//! stack mapped and reuses it: a fresh mapping per call (what `stacker::grow` does) faulted in
//! its pages anew each time and paid for unmapping them — milliseconds per chart. A call made
//! while the thread's stack is in use (deeper recursion) gets a fresh one from `stacker`.

/// Stack for work whose depth is bounded only by Go's limits (describing a deeply nested
/// node in an error message, reading YAML).
pub(crate) const LARGE_STACK_BYTES: usize = 256 << 20;

/// Runs `f` on a stack of at least `bytes`; `None` when no such stack can be mapped. A panic
/// of `f` continues on the caller's stack.
pub(crate) fn on_large_stack<T>(bytes: usize, f: impl FnOnce() -> T) -> Option<T> {
    #[cfg(unix)]
    if bytes <= LARGE_STACK_BYTES
        && let Some(stack) = kept::take()
    {
        let r = stack.run(f);
        kept::put_back(stack);
        return Some(r.unwrap_or_else(|p| std::panic::resume_unwind(p)));
    }
    fresh(bytes, f)
}

/// `f` on a stack mapped for this call alone.
fn fresh<T>(bytes: usize, f: impl FnOnce() -> T) -> Option<T> {
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

/// The stack each thread keeps: mapped on first use, unmapped when the thread ends.
#[cfg(unix)]
mod kept {
    use std::cell::{Cell, RefCell};

    use super::LARGE_STACK_BYTES;

    /// A mapping of a guard page (no access) below `LARGE_STACK_BYTES` of stack.
    pub(super) struct Stack {
        map: *mut libc::c_void,
        guard: usize,
    }

    thread_local! {
        /// The thread's stack while no call runs on it.
        static SPARE: RefCell<Option<Stack>> = const { RefCell::new(None) };
        /// Whether one was mapped (or could not be): a call finding none then is nested.
        static MAPPED: Cell<bool> = const { Cell::new(false) };
    }

    /// The thread's stack, mapped now if it has none; `None` while a call runs on it.
    pub(super) fn take() -> Option<Stack> {
        if let Some(s) = SPARE.try_with(|s| s.borrow_mut().take()).ok().flatten() {
            return Some(s);
        }
        if MAPPED.try_with(|m| m.replace(true)).unwrap_or(true) {
            return None;
        }
        let stack = Stack::map();
        if stack.is_none() {
            // Nothing kept: every call maps its own.
            let _ = MAPPED.try_with(|m| m.set(false));
        }
        stack
    }

    pub(super) fn put_back(stack: Stack) {
        // During the thread's teardown the stack is dropped (unmapped) instead.
        let _ = SPARE.try_with(|s| *s.borrow_mut() = Some(stack));
    }

    impl Stack {
        fn map() -> Option<Stack> {
            // SAFETY: sysconf has no preconditions.
            let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) })
                .ok()
                .filter(|p| *p > 0)?;
            let len = LARGE_STACK_BYTES + page;
            // SAFETY: a new private anonymous mapping; nothing else refers to it.
            let map = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_NONE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                    -1,
                    0,
                )
            };
            if map == libc::MAP_FAILED {
                return None;
            }
            let stack = Stack { map, guard: page };
            // SAFETY: the range lies inside the mapping just made; the page below stays a
            // guard, so running past the stack's end faults instead of overwriting memory.
            let usable = unsafe {
                libc::mprotect(
                    stack.low().cast(),
                    LARGE_STACK_BYTES,
                    libc::PROT_READ | libc::PROT_WRITE,
                )
            };
            // On failure `stack` is dropped, which unmaps it.
            (usable == 0).then_some(stack)
        }

        /// The lowest address of the usable stack (stacks grow down toward the guard).
        fn low(&self) -> *mut u8 {
            // SAFETY: `guard` bytes lie inside the mapping.
            unsafe { self.map.cast::<u8>().add(self.guard) }
        }

        /// Runs `f` on this stack; a panic of `f` is caught there and returned.
        pub(super) fn run<T>(&self, f: impl FnOnce() -> T) -> std::thread::Result<T> {
            let f = std::panic::AssertUnwindSafe(f);
            // SAFETY: the stack is mapped read-write for `LARGE_STACK_BYTES`, used by no
            // other call (taken out of the thread's slot), and no unwind crosses the switch.
            unsafe {
                psm::on_stack(self.low(), LARGE_STACK_BYTES, move || {
                    std::panic::catch_unwind(f)
                })
            }
        }
    }

    impl Drop for Stack {
        fn drop(&mut self) {
            // SAFETY: the mapping was made by `map` with this length and is no longer used.
            unsafe {
                libc::munmap(self.map, LARGE_STACK_BYTES + self.guard);
            }
        }
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
    fn a_call_made_on_the_large_stack_gets_a_stack_of_its_own() {
        let nested = on_large_stack(LARGE_STACK_BYTES, || {
            depth(1_000) + on_large_stack(LARGE_STACK_BYTES, || depth(100_000)).unwrap()
        });
        assert_eq!(nested, Some(101_000));
        // The kept stack is back for the next call.
        assert_eq!(on_large_stack(1 << 20, || depth(100_000)), Some(100_000));
    }

    #[test]
    fn a_panic_inside_reaches_the_caller() {
        let r = std::panic::catch_unwind(|| on_large_stack(1 << 20, || panic!("boom")));
        assert!(r.is_err());
        // The stack survives the panic and serves the next call.
        assert_eq!(on_large_stack(1 << 20, || depth(1_000)), Some(1_000));
    }
}
