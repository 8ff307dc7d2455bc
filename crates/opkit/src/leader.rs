//! Leader election on a `coordination.k8s.io/v1` Lease, as client-go's `leaderelection`.
//!
//! Several replicas of an operator may run; only the holder of the Lease runs controllers.
//! A candidate takes the Lease when it is free (no holder — a leader that stopped cleanly
//! releases it) or when the holder has not renewed it for `lease_duration`, measured on the
//! candidate's own clock from when it last saw the record change (so clock skew between
//! replicas does not matter). The leader renews every `retry_period`; if it cannot renew
//! within `renew_deadline` it has lost the Lease and must stop. Writes carry the Lease's
//! `resourceVersion`, so two candidates cannot both win.
//!
//! Defaults are client-go's: 15 s lease, 10 s renew deadline, 2 s retry period.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::Client;
use kube::api::{Api, PostParams};
use prometheus_client::metrics::gauge::Gauge;
use tokio::sync::watch;
use tokio::time::Instant;

/// Leader election settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaderElection {
    /// The Lease's name (controller-runtime's `LeaderElectionID`).
    pub lease_name: String,
    /// The Lease's namespace.
    pub namespace: String,
    /// How long a Lease stays valid without renewal (default 15 s).
    pub lease_duration: Duration,
    /// How long the leader keeps trying to renew before it gives up (default 10 s).
    pub renew_deadline: Duration,
    /// How often candidates try to acquire and the leader renews (default 2 s).
    pub retry_period: Duration,
    /// Clear the holder on shutdown so a successor takes over at once (default true).
    pub release_on_cancel: bool,
}

impl LeaderElection {
    /// Election on Lease `lease_name` in `namespace` with client-go's timings.
    pub fn new(lease_name: impl Into<String>, namespace: impl Into<String>) -> LeaderElection {
        LeaderElection {
            lease_name: lease_name.into(),
            namespace: namespace.into(),
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
            release_on_cancel: true,
        }
    }

    /// Sets the three timings (tests use short ones).
    pub fn timings(
        mut self,
        lease_duration: Duration,
        renew_deadline: Duration,
        retry_period: Duration,
    ) -> Self {
        self.lease_duration = lease_duration;
        self.renew_deadline = renew_deadline;
        self.retry_period = retry_period;
        self
    }
}

impl LeaderElection {
    /// Checks client-go's constraints: lease duration > renew deadline > retry period > 0,
    /// and a non-empty Lease name and namespace.
    pub fn validate(&self) -> crate::Result<()> {
        let invalid = |m: &str| Err(crate::Error::InvalidLeaderElection(m.to_string()));
        if self.lease_name.is_empty() || self.namespace.is_empty() {
            return invalid("the Lease name and namespace must not be empty");
        }
        if self.retry_period.is_zero() {
            return invalid("retry period must be greater than zero");
        }
        if self.renew_deadline <= self.retry_period {
            return invalid("renew deadline must be greater than the retry period");
        }
        if self.lease_duration <= self.renew_deadline {
            return invalid("lease duration must be greater than the renew deadline");
        }
        Ok(())
    }
}

/// A default identity: the hostname plus a random suffix (several managers per host).
pub fn default_identity() -> String {
    let host = hostname::get()
        .ok()
        .and_then(|h| h.into_string().ok())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "opkit".to_string());
    format!("{host}_{:08x}", rand::random::<u32>())
}

/// The outcome of one acquire/renew attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Attempt {
    /// This candidate holds the Lease.
    Held,
    /// Another candidate holds a Lease that has not expired.
    HeldByOther,
    /// The write lost a race (409); try again.
    Conflict,
}

/// One candidate's view of the election.
pub(crate) struct Elector {
    config: LeaderElection,
    api: Api<Lease>,
    identity: String,
    observed: Option<(Option<String>, Option<MicroTime>, Instant)>,
    gauge: Gauge,
}

fn is_conflict(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 409)
}

impl Elector {
    pub(crate) fn new(
        client: Client,
        config: LeaderElection,
        identity: String,
        gauge: Gauge,
    ) -> Elector {
        gauge.set(0);
        Elector {
            api: Api::namespaced(client, &config.namespace),
            config,
            identity,
            observed: None,
            gauge,
        }
    }

    fn lease_seconds(&self) -> i32 {
        i32::try_from(self.config.lease_duration.as_secs().max(1)).unwrap_or(i32::MAX)
    }

    /// One attempt to take or renew the Lease.
    async fn try_acquire_or_renew(&mut self) -> Result<Attempt, kube::Error> {
        let now = MicroTime(Timestamp::now());
        let name = &self.config.lease_name;
        let Some(mut lease) = self.api.get_opt(name).await? else {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(name.clone()),
                    namespace: Some(self.config.namespace.clone()),
                    ..ObjectMeta::default()
                },
                spec: Some(LeaseSpec {
                    holder_identity: Some(self.identity.clone()),
                    lease_duration_seconds: Some(self.lease_seconds()),
                    acquire_time: Some(now.clone()),
                    renew_time: Some(now),
                    lease_transitions: Some(0),
                    ..LeaseSpec::default()
                }),
            };
            return match self.api.create(&PostParams::default(), &lease).await {
                Ok(_) => Ok(Attempt::Held),
                Err(e) if is_conflict(&e) => Ok(Attempt::Conflict),
                Err(e) => Err(e),
            };
        };
        let spec = lease.spec.clone().unwrap_or_default();
        let holder = spec.holder_identity.clone().filter(|h| !h.is_empty());
        let record = (holder.clone(), spec.renew_time.clone());
        let changed = match &self.observed {
            Some((h, r, _)) => (h, r) != (&record.0, &record.1),
            None => true,
        };
        if changed {
            self.observed = Some((record.0, record.1, Instant::now()));
        }
        let observed_at = self
            .observed
            .as_ref()
            .map(|o| o.2)
            .unwrap_or_else(Instant::now);
        let duration = spec
            .lease_duration_seconds
            .and_then(|s| u64::try_from(s).ok())
            .map(Duration::from_secs)
            .unwrap_or(self.config.lease_duration);
        let ours = holder.as_deref() == Some(self.identity.as_str());
        if holder.is_some() && !ours && observed_at + duration > Instant::now() {
            return Ok(Attempt::HeldByOther);
        }
        let mut next = spec;
        if !ours {
            next.lease_transitions = Some(next.lease_transitions.unwrap_or(0) + 1);
            next.acquire_time = Some(now.clone());
        }
        next.holder_identity = Some(self.identity.clone());
        next.lease_duration_seconds = Some(self.lease_seconds());
        next.renew_time = Some(now);
        lease.spec = Some(next);
        match self.api.replace(name, &PostParams::default(), &lease).await {
            Ok(stored) => {
                let spec = stored.spec.unwrap_or_default();
                self.observed = Some((spec.holder_identity, spec.renew_time, Instant::now()));
                Ok(Attempt::Held)
            }
            Err(e) if is_conflict(&e) => Ok(Attempt::Conflict),
            Err(e) => Err(e),
        }
    }

    /// Tries every `retry_period` until the Lease is ours (`true`) or `stop` fires (`false`).
    pub(crate) async fn acquire(&mut self, stop: &mut watch::Receiver<bool>) -> bool {
        loop {
            if *stop.borrow() {
                return false;
            }
            match self.try_acquire_or_renew().await {
                Ok(Attempt::Held) => {
                    tracing::info!(lease = %self.config.lease_name, identity = %self.identity, "acquired lease");
                    self.gauge.set(1);
                    return true;
                }
                Ok(Attempt::HeldByOther | Attempt::Conflict) => {}
                Err(e) => {
                    tracing::warn!(lease = %self.config.lease_name, error = %e, "cannot acquire lease")
                }
            }
            tokio::select! {
                _ = tokio::time::sleep(self.config.retry_period) => {}
                _ = stop.changed() => {}
            }
        }
    }

    /// Renews every `retry_period` until `stop` fires (`Ok`) or renewal has failed for
    /// `renew_deadline` (`Err`: the Lease is lost).
    pub(crate) async fn hold(&mut self, stop: &mut watch::Receiver<bool>) -> Result<(), ()> {
        let mut renewed = Instant::now();
        loop {
            tokio::select! {
                _ = tokio::time::sleep(self.config.retry_period) => {}
                _ = stop.changed() => return Ok(()),
            }
            if *stop.borrow() {
                return Ok(());
            }
            let attempt =
                tokio::time::timeout(self.config.renew_deadline, self.try_acquire_or_renew()).await;
            match attempt {
                Ok(Ok(Attempt::Held)) => renewed = Instant::now(),
                // A concurrent write to the Lease: retry until the renew deadline.
                Ok(Ok(Attempt::Conflict)) => {}
                // Another candidate holds a valid Lease: stop at once rather than run two
                // leaders until the deadline.
                Ok(Ok(Attempt::HeldByOther)) => {
                    tracing::warn!(lease = %self.config.lease_name, "lease taken by another candidate");
                    self.gauge.set(0);
                    return Err(());
                }
                Ok(Err(e)) => {
                    tracing::warn!(lease = %self.config.lease_name, error = %e, "cannot renew lease")
                }
                Err(_) => {
                    tracing::warn!(lease = %self.config.lease_name, "lease renewal timed out")
                }
            }
            if renewed.elapsed() > self.config.renew_deadline {
                self.gauge.set(0);
                return Err(());
            }
        }
    }

    /// Clears the holder so another candidate can take over at once.
    pub(crate) async fn release(&mut self) {
        self.gauge.set(0);
        if !self.config.release_on_cancel {
            return;
        }
        let name = &self.config.lease_name;
        let Ok(Some(mut lease)) = self.api.get_opt(name).await else {
            return;
        };
        let mut spec = lease.spec.clone().unwrap_or_default();
        if spec.holder_identity.as_deref() != Some(self.identity.as_str()) {
            return;
        }
        let now = MicroTime(Timestamp::now());
        spec.holder_identity = None;
        spec.lease_duration_seconds = Some(1);
        spec.renew_time = Some(now.clone());
        spec.acquire_time = Some(now);
        lease.spec = Some(spec);
        match self.api.replace(name, &PostParams::default(), &lease).await {
            Ok(_) => tracing::info!(lease = %name, "released lease"),
            Err(e) => tracing::warn!(lease = %name, error = %e, "cannot release lease"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_client_go_s_and_valid() {
        let le = LeaderElection::new("lock", "default");
        assert_eq!(le.lease_duration, Duration::from_secs(15));
        assert_eq!(le.renew_deadline, Duration::from_secs(10));
        assert_eq!(le.retry_period, Duration::from_secs(2));
        assert!(le.validate().is_ok());
    }

    #[test]
    fn timings_must_decrease_from_lease_to_retry() {
        let s = Duration::from_secs;
        let le = LeaderElection::new("lock", "default");
        assert!(le.clone().timings(s(10), s(10), s(2)).validate().is_err());
        assert!(le.clone().timings(s(15), s(2), s(2)).validate().is_err());
        assert!(le.clone().timings(s(15), s(10), s(0)).validate().is_err());
        assert!(LeaderElection::new("", "default").validate().is_err());
    }

    #[test]
    fn default_identity_is_hostname_plus_random_suffix() {
        let (a, b) = (default_identity(), default_identity());
        assert_ne!(a, b);
        let (host, suffix) = a.rsplit_once('_').unwrap_or_default();
        assert!(!host.is_empty());
        assert_eq!(suffix.len(), 8);
    }
}
