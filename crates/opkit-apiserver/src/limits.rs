//! Limits that keep the server answering when clients misbehave or pile up: caps on requests
//! in flight (429 with `Retry-After`, as upstream's max-in-flight filter), a timeout for
//! ordinary requests (504), a cap on open watches per user, and connection timeouts.
//!
//! The in-flight caps count requests being served, not connections; mutating and read-only
//! requests have separate budgets so a flood of reads cannot starve writes (and the other way
//! round). Watches are long-running and exempt from both, but each user may hold only so many
//! at once. Members of `system:masters` (the admin and the built-in controllers) are exempt
//! from the in-flight caps, as upstream's priority-and-fairness exempts them, so the control
//! plane's own work continues under overload. Health checks never reach the limits.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::error::{ApiError, ApiResult};

/// The server's limits.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Read-only requests served at once (upstream `--max-requests-inflight`, 400).
    pub max_requests_inflight: usize,
    /// Mutating requests served at once (upstream `--max-mutating-requests-inflight`, 200).
    pub max_mutating_requests_inflight: usize,
    /// How long an ordinary (not watch) request may take (upstream `--request-timeout`, 60 s).
    pub request_timeout: Duration,
    /// Open watches per user.
    pub max_watches_per_user: usize,
    /// How long a connection may take to send a request's headers, idle keep-alive time
    /// included, before it is closed; also the TLS handshake's limit.
    pub idle_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_requests_inflight: 400,
            max_mutating_requests_inflight: 200,
            request_timeout: Duration::from_secs(60),
            max_watches_per_user: 1000,
            idle_timeout: Duration::from_secs(120),
        }
    }
}

/// Seconds a shed client is told to wait.
const RETRY_AFTER_SECONDS: u32 = 1;

/// The counters behind [`Limits`].
pub(crate) struct Gates {
    limits: Limits,
    read_only: Arc<Semaphore>,
    mutating: Arc<Semaphore>,
    watches: Arc<Mutex<HashMap<String, usize>>>,
}

/// A slot in the in-flight budget, released on drop.
pub(crate) struct InFlight(#[allow(dead_code)] Option<OwnedSemaphorePermit>);

/// One of a user's watches, released on drop.
pub(crate) struct WatchSlot {
    user: String,
    watches: Arc<Mutex<HashMap<String, usize>>>,
}

impl Drop for WatchSlot {
    fn drop(&mut self) {
        let mut watches = match self.watches.lock() {
            Ok(w) => w,
            Err(p) => p.into_inner(),
        };
        if let Some(n) = watches.get_mut(&self.user) {
            *n -= 1;
            if *n == 0 {
                watches.remove(&self.user);
            }
        }
    }
}

impl Gates {
    pub(crate) fn new(limits: Limits) -> Gates {
        Gates {
            read_only: Arc::new(Semaphore::new(limits.max_requests_inflight.max(1))),
            mutating: Arc::new(Semaphore::new(limits.max_mutating_requests_inflight.max(1))),
            watches: Arc::default(),
            limits,
        }
    }

    pub(crate) fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Takes a slot for an ordinary request, or 429 when the budget is spent.
    pub(crate) fn admit(&self, mutating: bool, exempt: bool) -> ApiResult<InFlight> {
        if exempt {
            return Ok(InFlight(None));
        }
        let gate = if mutating {
            &self.mutating
        } else {
            &self.read_only
        };
        gate.clone()
            .try_acquire_owned()
            .map(|p| InFlight(Some(p)))
            .map_err(|_| {
                ApiError::too_many_requests(
                    "Too many requests, please try again later.",
                    RETRY_AFTER_SECONDS,
                )
            })
    }

    /// Takes one of `user`'s watch slots, or 429 when they hold the maximum.
    pub(crate) fn admit_watch(&self, user: &str, exempt: bool) -> ApiResult<Option<WatchSlot>> {
        if exempt {
            return Ok(None);
        }
        let mut watches = match self.watches.lock() {
            Ok(w) => w,
            Err(p) => p.into_inner(),
        };
        let n = watches.entry(user.to_string()).or_default();
        if *n >= self.limits.max_watches_per_user {
            return Err(ApiError::too_many_requests(
                format!(
                    "Too many requests: user \"{user}\" has {} watches open, the limit is {}; close some or retry later.",
                    *n, self.limits.max_watches_per_user
                ),
                RETRY_AFTER_SECONDS,
            ));
        }
        *n += 1;
        Ok(Some(WatchSlot {
            user: user.to_string(),
            watches: self.watches.clone(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gates(inflight: usize, watches: usize) -> Gates {
        Gates::new(Limits {
            max_requests_inflight: inflight,
            max_mutating_requests_inflight: inflight,
            max_watches_per_user: watches,
            ..Limits::default()
        })
    }

    #[test]
    fn requests_beyond_the_budget_get_429_with_retry_after_until_a_slot_frees() {
        let g = gates(2, 1);
        let a = g.admit(false, false).unwrap();
        let _b = g.admit(false, false).unwrap();
        let err = g.admit(false, false).err().unwrap();
        assert_eq!(err.reason, crate::error::Reason::TooManyRequests);
        assert_eq!(err.retry_after, Some(1));
        // Writes have a budget of their own.
        assert!(g.admit(true, false).is_ok());
        drop(a);
        assert!(g.admit(false, false).is_ok());
    }

    #[test]
    fn exempt_requests_bypass_the_budget() {
        let g = gates(1, 1);
        let _a = g.admit(false, false).unwrap();
        assert!(g.admit(false, true).is_ok());
    }

    #[test]
    fn watches_are_capped_per_user_and_released_on_drop() {
        let g = gates(1, 2);
        let w1 = g.admit_watch("alice", false).unwrap();
        let _w2 = g.admit_watch("alice", false).unwrap();
        assert_eq!(g.admit_watch("alice", false).err().unwrap().code(), 429);
        assert!(g.admit_watch("bob", false).is_ok());
        drop(w1);
        assert!(g.admit_watch("alice", false).is_ok());
    }
}
