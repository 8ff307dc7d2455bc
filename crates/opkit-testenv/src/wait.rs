//! Waiting in tests for something the system will do: the one polling helper every opkit test
//! (and every operator's tests) uses, like Gomega's `Eventually` for envtest users.
//!
//! A check says "done" with `true` or `Some(value)`; until then it is polled every 20 ms.
//! The deadline is generous (30 s by default) because it only bounds a failing test: a
//! passing one returns as soon as the check does, however loaded the machine.
//!
//! [`settle`] is the one fixed wait, for the few checks that something does *not* happen
//! where nothing observable proves that the system got past the point where it would have.

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;

/// How long [`eventually`] polls before failing the test.
pub const EVENTUALLY_TIMEOUT: Duration = Duration::from_secs(30);

const POLL: Duration = Duration::from_millis(20);

/// How long [`settle`] waits.
pub const SETTLE: Duration = Duration::from_millis(500);

/// What a check returns: `true` / `Some(value)` when done, `false` / `None` to keep waiting.
pub trait Done {
    /// What [`eventually`] returns once the check is done.
    type Output;
    /// `Some` when done.
    fn done(self) -> Option<Self::Output>;
}

impl Done for bool {
    type Output = ();
    fn done(self) -> Option<()> {
        self.then_some(())
    }
}

impl<T> Done for Option<T> {
    type Output = T;
    fn done(self) -> Option<T> {
        self
    }
}

/// Polls `check` until it is done and returns its value; panics naming `what` after
/// [`EVENTUALLY_TIMEOUT`].
///
/// ```no_run
/// # async fn example(api: kube::Api<k8s_openapi::api::core::v1::ConfigMap>) {
/// let cm = opkit_testenv::eventually("the ConfigMap", || async {
///     api.get_opt("booking").await.ok().flatten()
/// })
/// .await;
/// # }
/// ```
pub async fn eventually<F, Fut>(what: &str, check: F) -> <Fut::Output as Done>::Output
where
    F: FnMut() -> Fut,
    Fut: Future,
    Fut::Output: Done,
{
    eventually_within(what, EVENTUALLY_TIMEOUT, check).await
}

/// [`eventually`] with another deadline.
pub async fn eventually_within<F, Fut>(
    what: &str,
    timeout: Duration,
    mut check: F,
) -> <Fut::Output as Done>::Output
where
    F: FnMut() -> Fut,
    Fut: Future,
    Fut::Output: Done,
{
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(value) = check().await.done() {
            return value;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {timeout:?} waiting for {what}"
        );
        tokio::time::sleep(POLL).await;
    }
}

/// Gives the system [`SETTLE`] to do something it must not do, before a test checks that it
/// did not.
///
/// Only for negative checks with no positive signal: when nothing that the test can observe
/// proves that the system has processed past the point where it would have acted (a later
/// event, a newer revision, a witness that shares the same path). For example, with the
/// garbage collector switched off no controller ever looks at a dependent, so nothing can say
/// "it was considered and kept". A passing test never depends on the wait being long enough:
/// the check holds whatever the timing. Only the chance of catching a regression does, so a
/// loaded machine can make such a test miss a bug, never fail spuriously.
pub async fn settle() {
    tokio::time::sleep(SETTLE).await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    #[tokio::test]
    async fn eventually_returns_the_value_of_the_first_done_check() {
        let calls = AtomicU32::new(0);
        let value = eventually("the third call", || async {
            let n = calls.fetch_add(1, Ordering::SeqCst) + 1;
            (n == 3).then_some(n)
        })
        .await;
        assert_eq!(value, 3);
    }

    #[tokio::test(start_paused = true)]
    #[should_panic(expected = "timed out after 1s waiting for nothing")]
    async fn eventually_fails_naming_what_it_waited_for() {
        eventually_within("nothing", Duration::from_secs(1), || async { false }).await;
    }
}
