//! One rule for waiting on the cluster in a suite: probe; while the probe says "not yet" and the
//! deadline has not passed, probe again after a short pause — as kuttl and chainsaw poll the API
//! (a watch would need a kind-specific client for every object a suite names).

use std::time::{Duration, Instant};

/// The pause between two probes.
pub(crate) const INTERVAL: Duration = Duration::from_millis(100);

/// Probes until it returns `Ok`, or until `deadline` has passed: then its last error.
pub(crate) async fn until<T, E, F>(deadline: Instant, mut probe: impl FnMut() -> F) -> Result<T, E>
where
    F: Future<Output = Result<T, E>>,
{
    loop {
        match probe().await {
            Ok(done) => return Ok(done),
            Err(e) if Instant::now() >= deadline => return Err(e),
            Err(_) => tokio::time::sleep(INTERVAL).await,
        }
    }
}
