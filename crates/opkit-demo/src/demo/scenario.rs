//! The demo's script: seven changes a user (or a careless teammate) makes, one at a time.
//!
//! Each step says what it is about to do and what to watch for, makes its change through the
//! API, then waits until its outcome is really visible in the API — only then does the next
//! step start, after `--step-interval`. Waiting for outcomes rather than sleeping fixed times
//! keeps the story readable at any speed (the test runs it in a few seconds) and makes a
//! broken operator visible: its step ends with "not seen" instead of quietly moving on.

use std::future::Future;
use std::sync::Mutex;
use std::time::Duration;

use flightticket::{FlightTicket, FlightTicketSpec};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use memcached::{Memcached, MemcachedSpec};
use opkit::Condition;
use opkit::conditions;
use serde_json::json;
use tokio::sync::watch;
use tokio::time::Instant;

/// Where the script works (so plain `kubectl get ...` shows its objects).
pub const NAMESPACE: &str = "default";
/// The ticket that stays to the end (rebooked on the way).
pub const TICKET: &str = "ams-sfo";
/// The ticket that gets cancelled.
pub const CANCELLED: &str = "lis-nrt";
/// The Memcached.
pub const CACHE: &str = "cache";
/// The number of steps.
pub const STEPS: usize = 7;
/// The field manager of the script's writes.
const FIELD_MANAGER: &str = "opkit-demo";
/// The pod annotation that makes the simulated kubelet never report the pod ready.
const BEHAVIOR: &str = "sim.opkit.dev/behavior";
/// How long a step's outcome may take to show before the step is marked "not seen".
const OUTCOME_TIMEOUT: Duration = Duration::from_secs(30);
/// How often a step checks for its outcome.
const POLL: Duration = Duration::from_millis(100);

/// The demo's pace, derived from `--step-interval`.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    /// How long a step's outcome stays on screen before the next step; half of it is also the
    /// pause between announcing a step and making its change.
    pub step_interval: Duration,
    /// How long a simulated pod takes to become ready: long enough to see `Progressing`, short
    /// enough not to drag (a quarter step, at most 1 s).
    pub pod_ready_delay: Duration,
    /// The Memcached Deployments' progress deadline: two steps, 2 s to 600 s, so the broken
    /// rollout turns `Degraded` within a step or two.
    pub progress_deadline_seconds: i32,
}

impl Timing {
    /// The timing for `step_interval`.
    pub fn new(step_interval: Duration) -> Timing {
        let deadline = (step_interval.as_secs_f64() * 2.0).ceil().clamp(2.0, 600.0);
        Timing {
            step_interval,
            pod_ready_delay: (step_interval / 4).min(Duration::from_secs(1)),
            progress_deadline_seconds: deadline as i32,
        }
    }
}

/// Where the script is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Before the first step.
    Starting,
    /// Step `n` of [`STEPS`] (1-based).
    Step(usize),
    /// After the last step.
    Done,
}

/// How far the current step got.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Progress {
    /// Announced; the change comes in half a step.
    Announced,
    /// Changed; waiting for the outcome.
    Waiting,
    /// The outcome is visible (what was seen).
    Seen(String),
    /// The outcome did not show within the timeout.
    NotSeen(Duration),
    /// The change itself failed (the API's answer).
    Failed(String),
    /// Nothing to wait for.
    Idle,
}

/// What the view shows about the script.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caption {
    /// Where the script is.
    pub stage: Stage,
    /// What happens.
    pub title: String,
    /// The same change as a kubectl command, where one fits.
    pub command: Option<String>,
    /// What to look for in the tables.
    pub watch: String,
    /// How far it got.
    pub progress: Progress,
}

impl Caption {
    /// The caption before the script starts.
    pub fn starting() -> Caption {
        Caption {
            stage: Stage::Starting,
            title: "Starting the FlightTicket and Memcached operators".to_string(),
            command: None,
            watch: "Both run in this process, in one opkit Manager, against the control plane \
                    above."
                .to_string(),
            progress: Progress::Idle,
        }
    }
}

/// Plays the script, publishing captions, then idles (the caller aborts it).
pub async fn play(client: Client, captions: watch::Sender<Caption>, timing: Timing) {
    let script = Script {
        client,
        captions,
        timing,
        missed: Mutex::new(Vec::new()),
    };
    script.run().await;
}

struct Script {
    client: Client,
    captions: watch::Sender<Caption>,
    timing: Timing,
    /// The steps whose outcome was not seen.
    missed: Mutex<Vec<usize>>,
}

/// The words of one step.
struct Words {
    title: &'static str,
    command: Option<&'static str>,
    watch: String,
}

fn params() -> PatchParams {
    PatchParams {
        field_manager: Some(FIELD_MANAGER.to_string()),
        ..PatchParams::default()
    }
}

fn post_params() -> PostParams {
    PostParams {
        field_manager: Some(FIELD_MANAGER.to_string()),
        ..PostParams::default()
    }
}

impl Script {
    async fn run(&self) {
        self.step(
            1,
            Words {
                title: "Book two flight tickets and order a Memcached of size 1",
                command: None,
                watch: "The FlightTicket operator books each ticket into a ConfigMap: phase \
                        Booked, Ready=True. The Memcached operator creates a Deployment; once \
                        its pod is ready: Available=True."
                    .to_string(),
            },
            self.create_objects(),
            async |_: &()| {
                let a = self.booked(TICKET).await?;
                let b = self.booked(CANCELLED).await?;
                let cache = self.cache_available().await?;
                Some(format!("{a}, {b}: Booked; cache: {cache}"))
            },
            OUTCOME_TIMEOUT,
        )
        .await;

        self.step(
            2,
            Words {
                title: "Scale the Memcached to 3",
                command: Some(
                    r#"kubectl patch memcached cache --type merge -p '{"spec":{"size":3}}'"#,
                ),
                watch: "The operator sets its Deployment to 3 replicas: Progressing=True while \
                        two more pods start, then Available=True with 3/3."
                    .to_string(),
            },
            self.scale_cache(3),
            async |_: &()| {
                let cache = self.cache_available().await?;
                Some(format!("cache: {cache}"))
            },
            OUTCOME_TIMEOUT,
        )
        .await;

        self.step(
            3,
            Words {
                title: "Someone deletes the booking ConfigMap of ams-sfo",
                command: Some("kubectl delete configmap ams-sfo-booking"),
                watch: "The operator owns its bookings and puts this one back at once: its \
                        age in the BOOKING column starts again from 0s."
                    .to_string(),
            },
            self.delete_booking(TICKET),
            async |old_uid: &String| {
                let cm = self.booking(TICKET).await?;
                if cm.uid().as_ref() == Some(old_uid) {
                    return None;
                }
                let reference = cm
                    .data
                    .as_ref()
                    .and_then(|d| d.get("bookingReference"))
                    .cloned()
                    .unwrap_or_default();
                Some(format!(
                    "{} is back, same booking reference {reference}",
                    cm.name_any()
                ))
            },
            OUTCOME_TIMEOUT,
        )
        .await;

        self.step(
            4,
            Words {
                title: "The ams-sfo passenger brings family: 4 seats",
                command: Some(
                    r#"kubectl patch ft ams-sfo --type merge -p '{"spec":{"number":4}}'"#,
                ),
                watch: "The operator rewrites the booking for the new spec and records a \
                        Rebooked event; SEATS shows 4."
                    .to_string(),
            },
            self.change_seats(TICKET, 4),
            async |_: &()| {
                self.booked(TICKET).await?;
                let cm = self.booking(TICKET).await?;
                let data = cm.data.unwrap_or_default();
                if data.get("number").map(String::as_str) != Some("4") {
                    return None;
                }
                if !self.has_event("FlightTicket", TICKET, "Rebooked").await {
                    return None;
                }
                let itinerary = data.get("itinerary").cloned().unwrap_or_default();
                Some(format!("booking holds \"{itinerary}\"; event Rebooked"))
            },
            OUTCOME_TIMEOUT,
        )
        .await;

        self.step(
            5,
            Words {
                title: "Cancel lis-nrt",
                command: Some("kubectl delete ft lis-nrt"),
                watch: "Its finalizer holds the ticket until the operator records a Cancelled \
                        event and deletes the booking; then the ticket is gone."
                    .to_string(),
            },
            self.cancel(CANCELLED),
            async |_: &()| {
                let tickets: Api<FlightTicket> = Api::namespaced(self.client.clone(), NAMESPACE);
                if tickets.get_opt(CANCELLED).await.ok()?.is_some() {
                    return None;
                }
                if self.booking(CANCELLED).await.is_some() {
                    return None;
                }
                if !self.has_event("FlightTicket", CANCELLED, "Cancelled").await {
                    return None;
                }
                Some(format!(
                    "{CANCELLED} and its booking are gone; event Cancelled"
                ))
            },
            OUTCOME_TIMEOUT,
        )
        .await;

        let deadline = self.timing.progress_deadline_seconds;
        self.step(
            6,
            Words {
                title: "A teammate patches a fault into cache's pod template",
                command: None,
                watch: format!(
                    "The patch sets {BEHAVIOR}=never-ready (a field the operator does not own, \
                     so it stays): the new pod never gets ready. Old pods keep serving, \
                     Available stays True; after the {deadline}s progress deadline: \
                     Degraded=True and a Warning event."
                ),
            },
            self.set_pod_behavior(Some("never-ready")),
            async |_: &()| {
                let (_, conds) = self.cache().await?;
                let degraded = conditions::find(&conds, memcached::DEGRADED)
                    .filter(|c| c.status == conditions::TRUE)?;
                Some(format!(
                    "cache: Degraded=True ({}), Available={}",
                    degraded.reason,
                    status_of(&conds, memcached::AVAILABLE)
                ))
            },
            OUTCOME_TIMEOUT + Duration::from_secs(deadline.unsigned_abs().into()),
        )
        .await;

        self.step(
            7,
            Words {
                title: "The teammate removes the annotation again",
                command: None,
                watch: "The Deployment goes back to healthy pods; the operator reports \
                        Degraded=False and Progressing=False (rollout complete)."
                    .to_string(),
            },
            self.set_pod_behavior(None),
            async |_: &()| {
                let (m, conds) = self.cache().await?;
                let healthy =
                    conditions::is_true_for(&conds, memcached::AVAILABLE, m.metadata.generation)
                        && conditions::is_false(&conds, memcached::PROGRESSING)
                        && conditions::is_false(&conds, memcached::DEGRADED);
                healthy
                    .then(|| "cache: Available=True, Progressing=False, Degraded=False".to_string())
            },
            OUTCOME_TIMEOUT,
        )
        .await;

        let missed = self.missed.lock().map(|m| m.clone()).unwrap_or_default();
        let title = if missed.is_empty() {
            format!("all {STEPS} outcomes seen; the operators keep running")
        } else {
            let steps: Vec<String> = missed.iter().map(usize::to_string).collect();
            format!("the outcome of step {} was NOT seen", steps.join(", "))
        };
        self.captions.send_replace(Caption {
            stage: Stage::Done,
            title,
            command: None,
            watch: "Use kubectl below and watch the operators react here: e.g. `kubectl \
                    delete configmap ams-sfo-booking`, or step 2's patch with another size."
                .to_string(),
            progress: Progress::Idle,
        });
    }

    /// Announces step `n`, makes its change, waits until `outcome` sees it (or `timeout`),
    /// then leaves the result on screen for a step interval. Steps whose outcome did not
    /// show are remembered for the final caption.
    async fn step<T>(
        &self,
        n: usize,
        words: Words,
        change: impl Future<Output = kube::Result<T>>,
        outcome: impl AsyncFn(&T) -> Option<String>,
        timeout: Duration,
    ) {
        self.captions.send_replace(Caption {
            stage: Stage::Step(n),
            title: words.title.to_string(),
            command: words.command.map(str::to_string),
            watch: words.watch,
            progress: Progress::Announced,
        });
        tokio::time::sleep(self.timing.step_interval / 2).await;
        let progress = match change.await {
            Err(e) => Progress::Failed(e.to_string()),
            Ok(changed) => {
                self.set_progress(Progress::Waiting);
                let deadline = Instant::now() + timeout;
                loop {
                    if let Some(seen) = outcome(&changed).await {
                        break Progress::Seen(seen);
                    }
                    if Instant::now() >= deadline {
                        break Progress::NotSeen(timeout);
                    }
                    tokio::time::sleep(POLL).await;
                }
            }
        };
        if !matches!(progress, Progress::Seen(_))
            && let Ok(mut missed) = self.missed.lock()
        {
            missed.push(n);
        }
        self.set_progress(progress);
        tokio::time::sleep(self.timing.step_interval).await;
    }

    fn set_progress(&self, progress: Progress) {
        self.captions.send_modify(|c| c.progress = progress);
    }

    async fn create_objects(&self) -> kube::Result<()> {
        let tickets: Api<FlightTicket> = Api::namespaced(self.client.clone(), NAMESPACE);
        for (name, from, to, number) in [(TICKET, "AMS", "SFO", 2), (CANCELLED, "LIS", "NRT", 1)] {
            let spec = FlightTicketSpec {
                from: from.to_string(),
                to: to.to_string(),
                number,
            };
            tickets
                .create(&post_params(), &FlightTicket::new(name, spec))
                .await?;
        }
        let caches: Api<Memcached> = Api::namespaced(self.client.clone(), NAMESPACE);
        caches
            .create(
                &post_params(),
                &Memcached::new(CACHE, MemcachedSpec { size: 1 }),
            )
            .await?;
        Ok(())
    }

    async fn scale_cache(&self, size: i32) -> kube::Result<()> {
        let caches: Api<Memcached> = Api::namespaced(self.client.clone(), NAMESPACE);
        let patch = json!({"spec": {"size": size}});
        caches
            .patch(CACHE, &params(), &Patch::Merge(&patch))
            .await?;
        Ok(())
    }

    /// Deletes the booking of `ticket`; returns the deleted ConfigMap's UID.
    async fn delete_booking(&self, ticket: &str) -> kube::Result<String> {
        let configmaps: Api<ConfigMap> = Api::namespaced(self.client.clone(), NAMESPACE);
        let name = flightticket::booking_name(ticket);
        let uid = configmaps.get(&name).await?.uid().unwrap_or_default();
        configmaps.delete(&name, &DeleteParams::default()).await?;
        Ok(uid)
    }

    async fn change_seats(&self, ticket: &str, number: i64) -> kube::Result<()> {
        let tickets: Api<FlightTicket> = Api::namespaced(self.client.clone(), NAMESPACE);
        let patch = json!({"spec": {"number": number}});
        tickets
            .patch(ticket, &params(), &Patch::Merge(&patch))
            .await?;
        Ok(())
    }

    async fn cancel(&self, ticket: &str) -> kube::Result<()> {
        let tickets: Api<FlightTicket> = Api::namespaced(self.client.clone(), NAMESPACE);
        tickets.delete(ticket, &DeleteParams::default()).await?;
        Ok(())
    }

    /// Sets (or with `None` removes) the simulation annotation on the cache Deployment's pod
    /// template, as a teammate's `kubectl patch` would.
    async fn set_pod_behavior(&self, behavior: Option<&str>) -> kube::Result<()> {
        let deployments: Api<Deployment> = Api::namespaced(self.client.clone(), NAMESPACE);
        let patch =
            json!({"spec": {"template": {"metadata": {"annotations": {BEHAVIOR: behavior}}}}});
        deployments
            .patch(CACHE, &params(), &Patch::Merge(&patch))
            .await?;
        Ok(())
    }

    /// `Some(name)` once `name` is Booked with `Ready=True` for its current generation.
    async fn booked(&self, name: &str) -> Option<String> {
        let tickets: Api<FlightTicket> = Api::namespaced(self.client.clone(), NAMESPACE);
        let ticket = tickets.get_opt(name).await.ok()??;
        let status = ticket.status.as_ref()?;
        let ready = status.phase.as_deref() == Some(flightticket::PHASE_BOOKED)
            && conditions::is_true_for(
                &status.conditions,
                flightticket::READY,
                ticket.metadata.generation,
            );
        ready.then(|| name.to_string())
    }

    async fn booking(&self, ticket: &str) -> Option<ConfigMap> {
        let configmaps: Api<ConfigMap> = Api::namespaced(self.client.clone(), NAMESPACE);
        configmaps
            .get_opt(&flightticket::booking_name(ticket))
            .await
            .ok()?
    }

    async fn cache(&self) -> Option<(Memcached, Vec<Condition>)> {
        let caches: Api<Memcached> = Api::namespaced(self.client.clone(), NAMESPACE);
        let cache = caches.get_opt(CACHE).await.ok()??;
        let conds = cache
            .status
            .as_ref()
            .map(|s| s.conditions.clone())
            .unwrap_or_default();
        Some((cache, conds))
    }

    /// `Some("Available=True, <message>")` once the cache is Available for its current spec.
    async fn cache_available(&self) -> Option<String> {
        let (cache, conds) = self.cache().await?;
        if !conditions::is_true_for(&conds, memcached::AVAILABLE, cache.metadata.generation) {
            return None;
        }
        let message = conditions::find(&conds, memcached::AVAILABLE)
            .map(|c| c.message.clone())
            .unwrap_or_default();
        Some(format!("Available=True, {message}"))
    }

    async fn has_event(&self, kind: &str, name: &str, reason: &str) -> bool {
        let events: Api<Event> = Api::namespaced(self.client.clone(), NAMESPACE);
        events.list(&ListParams::default()).await.is_ok_and(|list| {
            list.items.iter().any(|e| {
                e.reason.as_deref() == Some(reason)
                    && e.regarding.as_ref().is_some_and(|r| {
                        r.kind.as_deref() == Some(kind) && r.name.as_deref() == Some(name)
                    })
            })
        })
    }
}

fn status_of(conds: &[Condition], type_: &str) -> String {
    conditions::find(conds, type_)
        .map(|c| c.status.clone())
        .unwrap_or_else(|| "-".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timing_scales_with_the_step_interval_within_bounds() {
        let default = Timing::new(Duration::from_secs(4));
        assert_eq!(default.progress_deadline_seconds, 8);
        assert_eq!(default.pod_ready_delay, Duration::from_secs(1));
        let fast = Timing::new(Duration::from_millis(300));
        assert_eq!(fast.progress_deadline_seconds, 2);
        assert_eq!(fast.pod_ready_delay, Duration::from_millis(75));
        let slow = Timing::new(Duration::from_secs(3600));
        assert_eq!(slow.progress_deadline_seconds, 600);
    }
}
