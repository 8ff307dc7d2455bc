//! Simulated workloads: the node and kubelet, and the workload controllers.
//!
//! Operators wait on the objects kube-controller-manager and kubelets maintain: a Deployment
//! becoming available, a Job completing, a Service getting endpoints. Nothing here runs a
//! container; like kwok, the [`node`] controller schedules every pod to one simulated node and
//! moves it through the phases a kubelet would report, optionally misbehaving as annotations ask
//! ([`sim`], documented in `docs/SIMULATION.md`). The other controllers follow the upstream
//! controllers' algorithms closely enough that `kubectl rollout status`, `kubectl wait` and
//! operators reading status see what they see on a real cluster.
//!
//! Every controller is a kube-runtime [`Controller`](kube::runtime::Controller) over its main
//! kind; the children it owns are watched into a [`cache::Cache`] indexed by controller owner, so
//! a reconcile reads its children in time proportional to their number, never by scanning the
//! cluster. Creations and deletions are tracked with [`cache::Expectations`] (as upstream's
//! `ControllerExpectations`) so a reconcile racing its own watch never creates or deletes twice.

pub(crate) mod cache;
mod clock;
mod cron;
mod cronjob;
mod daemonset;
mod deployment;
mod endpoints;
mod job;
mod node;
mod pods;
mod replicaset;
mod sim;
mod statefulset;

pub use clock::Clock;

use std::collections::{BTreeMap, HashMap};
use std::fmt::Debug;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, OwnerReference};
use kube::Resource;
use kube::runtime::controller::Action;
use kube::runtime::reflector::{ObjectRef, Store};
use opkit_apimachinery::LabelSelector as Selector;
use serde::de::DeserializeOwned;

use crate::{Controller, Settings};

/// Why a reconcile failed; the key is retried with per-key exponential backoff.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A request to the API server failed.
    #[error("API request failed: {0}")]
    Api(#[from] kube::Error),
    /// An object could not be (de)serialized.
    #[error("cannot encode object: {0}")]
    Json(#[from] serde_json::Error),
}

/// Result of a reconcile.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Runs one workload controller until aborted.
pub(crate) async fn run(controller: Controller, client: kube::Client, settings: Settings) {
    match controller {
        Controller::Node => node::run(client, settings).await,
        Controller::Deployment => deployment::run(client, settings).await,
        Controller::ReplicaSet => replicaset::run(client, settings).await,
        Controller::StatefulSet => statefulset::run(client, settings).await,
        Controller::DaemonSet => daemonset::run(client, settings).await,
        Controller::Job => job::run(client, settings).await,
        Controller::CronJob => cronjob::run(client, settings).await,
        Controller::Endpoints => endpoints::run(client, settings).await,
        other => {
            tracing::warn!(controller = other.name(), "not a workload controller");
            std::future::pending::<()>().await
        }
    }
}

/// Per-key retry state: exponential backoff from 5 ms, capped at 30 s (the simulation favours
/// quick recovery over upstream's 1000 s cap).
#[derive(Default)]
pub(crate) struct Retry {
    failures: Mutex<HashMap<String, u32>>,
}

impl Retry {
    const BASE: Duration = Duration::from_millis(5);
    const CAP: Duration = Duration::from_secs(30);

    /// The delay before retrying `key` after another failure.
    pub(crate) fn next(&self, key: &str) -> Duration {
        let mut failures = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        let n = failures.entry(key.to_string()).or_insert(0);
        *n = n.saturating_add(1);
        let factor = 2u32.saturating_pow(n.saturating_sub(1).min(20));
        Self::BASE.saturating_mul(factor).min(Self::CAP)
    }

    /// Forgets `key`'s failures after a successful reconcile.
    pub(crate) fn reset(&self, key: &str) {
        let mut failures = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        if !failures.is_empty() {
            failures.remove(key);
        }
    }
}

/// What every controller context provides to [`drive`].
pub(crate) trait HasRetry {
    fn retry(&self) -> &Retry;
}

/// `namespace/name` of an object, for logs and retry keys.
pub(crate) fn key_of<K: Resource>(obj: &K) -> String {
    let meta = obj.meta();
    format!(
        "{}/{}",
        meta.namespace.as_deref().unwrap_or(""),
        meta.name.as_deref().unwrap_or("")
    )
}

/// Runs a kube-runtime controller to completion with logging and per-key backoff.
pub(crate) async fn drive<K, C, F, Fut>(
    name: &'static str,
    controller: kube::runtime::Controller<K>,
    ctx: Arc<C>,
    reconcile: F,
) where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    C: HasRetry + Send + Sync + 'static,
    F: Fn(Arc<K>, Arc<C>) -> Fut + Send + Sync + Clone + 'static,
    Fut: Future<Output = Result<Action>> + Send + 'static,
{
    controller
        .run(
            move |obj, ctx: Arc<C>| {
                let reconcile = reconcile.clone();
                async move {
                    let key = key_of(obj.as_ref());
                    let result = reconcile(obj, ctx.clone()).await;
                    if result.is_ok() {
                        ctx.retry().reset(&key);
                    }
                    result
                }
            },
            move |obj, err: &Error, ctx: Arc<C>| {
                let key = key_of(obj.as_ref());
                let delay = ctx.retry().next(&key);
                match err {
                    Error::Api(kube::Error::Api(s)) if s.code == 409 || s.code == 404 => {
                        tracing::debug!(controller = name, %key, error = %err, "retrying")
                    }
                    _ => tracing::warn!(controller = name, %key, error = %err, "reconcile failed"),
                }
                Action::requeue(delay)
            },
            ctx,
        )
        .for_each(|result| {
            if let Err(e) = result {
                tracing::debug!(controller = name, error = %e, "controller event");
            }
            futures::future::ready(())
        })
        .await;
}

/// The `kind` controller owning `child`, as a reconcile request (for `watches_stream`).
pub(crate) fn owner_of<K, C>(
    kind: &'static str,
) -> impl Fn(C) -> Option<ObjectRef<K>> + Send + Sync + 'static
where
    K: Resource<DynamicType = ()>,
    C: Resource,
{
    move |child: C| {
        let meta = child.meta();
        let ns = meta.namespace.clone().unwrap_or_default();
        meta.owner_references
            .iter()
            .flatten()
            .find(|r| r.controller == Some(true) && r.kind == kind)
            .map(|r| ObjectRef::new(&r.name).within(&ns))
    }
}

/// The `K`s in `store` a child event concerns: the child's controller if that is a `K`, else (an
/// orphan) every `K` in its namespace whose non-empty selector matches the child's labels — the
/// candidates to adopt it. `selector` reads a `K`'s selector.
pub(crate) fn owner_or_adopters<K, C>(
    store: &Store<K>,
    child: &C,
    selector: impl Fn(&K) -> Option<&LabelSelector>,
) -> Vec<ObjectRef<K>>
where
    K: Resource<DynamicType = ()> + Clone,
    C: Resource,
{
    let meta = child.meta();
    let ns = meta.namespace.as_deref().unwrap_or_default();
    let refs = meta.owner_references.as_deref().unwrap_or_default();
    if let Some(owner) = refs.iter().find(|r| r.controller == Some(true)) {
        if owner.kind == K::kind(&()) && owner.api_version == K::api_version(&()) {
            return vec![ObjectRef::new(&owner.name).within(ns)];
        }
        return Vec::new();
    }
    store
        .state()
        .iter()
        .filter(|k| k.meta().namespace.as_deref() == Some(ns))
        .filter(|k| {
            selector(k)
                .and_then(workload_selector)
                .is_some_and(|s| selects(&s, meta.labels.as_ref()))
        })
        .map(|k| ObjectRef::from_obj(k.as_ref()))
        .collect()
}

/// A controller owner reference to `owner` (`controller: true, blockOwnerDeletion: true`).
pub(crate) fn controller_ref<K: Resource<DynamicType = ()>>(owner: &K) -> OwnerReference {
    let meta = owner.meta();
    OwnerReference {
        api_version: K::api_version(&()).into_owned(),
        kind: K::kind(&()).into_owned(),
        name: meta.name.clone().unwrap_or_default(),
        uid: meta.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

/// The uid of an object's controller owner, if any.
pub(crate) fn controller_uid(meta: &ObjectMeta) -> Option<&str> {
    meta.owner_references
        .as_ref()?
        .iter()
        .find(|r| r.controller == Some(true))
        .map(|r| r.uid.as_str())
}

/// A workload's `spec.selector` as upstream's controllers use it (`LabelSelectorAsSelector`):
/// `None` when it is invalid or empty, which they refuse to act on (an empty selector would
/// select every pod, an invalid one selects nothing).
pub(crate) fn workload_selector(selector: &LabelSelector) -> Option<Selector> {
    Selector::try_from(selector).ok().filter(|s| !s.is_empty())
}

/// Whether an object's labels (absent: none) satisfy a selector.
pub(crate) fn selects(selector: &Selector, labels: Option<&BTreeMap<String, String>>) -> bool {
    selector.matches_with(|key| labels?.get(key).map(String::as_str))
}

/// A stable, short, DNS-safe hash of any serializable value (FNV-1a over its JSON, encoded with
/// upstream's `SafeEncodeString` alphabet so it never forms words or starts with a digit-only
/// string that looks numeric).
pub(crate) fn stable_hash<T: serde::Serialize + ?Sized>(value: &T, salt: Option<i32>) -> String {
    let bytes = serde_json::to_vec(value).unwrap_or_default();
    let mut hash: u32 = 0x811c_9dc5;
    let mut feed = |b: u8| {
        hash ^= u32::from(b);
        hash = hash.wrapping_mul(0x0100_0193);
    };
    bytes.iter().copied().for_each(&mut feed);
    if let Some(salt) = salt {
        salt.to_le_bytes().into_iter().for_each(&mut feed);
    }
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    hash.to_string()
        .bytes()
        .map(|d| ALPHABET[usize::from(d) % ALPHABET.len()] as char)
        .collect()
}

/// Whether a kube error is an API error with `code`.
pub(crate) fn is_status(err: &kube::Error, code: u16) -> bool {
    matches!(err, kube::Error::Api(s) if s.code == code)
}

/// A namespaced key (namespace, name).
pub(crate) type Key = (String, String);

/// A map key for `Hash + Eq` use by value.
pub(crate) fn key_pair<K: Resource>(obj: &K) -> Key {
    let m = obj.meta();
    (
        m.namespace.clone().unwrap_or_default(),
        m.name.clone().unwrap_or_default(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;

    #[test]
    fn retry_backs_off_exponentially_and_resets() {
        let r = Retry::default();
        assert_eq!(r.next("a"), Duration::from_millis(5));
        assert_eq!(r.next("a"), Duration::from_millis(10));
        assert_eq!(r.next("a"), Duration::from_millis(20));
        r.reset("a");
        assert_eq!(r.next("a"), Duration::from_millis(5));
        for _ in 0..40 {
            r.next("b");
        }
        assert_eq!(r.next("b"), Duration::from_secs(30));
    }

    #[test]
    fn selectors_match_labels_and_expressions() {
        let labels: BTreeMap<String, String> =
            [("app".into(), "web".into()), ("tier".into(), "fe".into())].into();
        let mut sel = LabelSelector {
            match_labels: Some([("app".to_string(), "web".to_string())].into()),
            ..Default::default()
        };
        let matches = |sel: &LabelSelector, labels| {
            workload_selector(sel).is_some_and(|s| selects(&s, labels))
        };
        assert!(matches(&sel, Some(&labels)));
        assert!(!matches(&sel, None));
        sel.match_expressions = Some(vec![LabelSelectorRequirement {
            key: "tier".into(),
            operator: "NotIn".into(),
            values: Some(vec!["fe".into()]),
        }]);
        assert!(!matches(&sel, Some(&labels)));
        // Empty and invalid selectors select nothing: controllers ignore them.
        assert!(workload_selector(&LabelSelector::default()).is_none());
        sel.match_expressions = Some(vec![LabelSelectorRequirement {
            key: "tier".into(),
            operator: "Gt".into(),
            values: Some(vec!["1".into()]),
        }]);
        assert!(workload_selector(&sel).is_none());
        // An empty label selector (not a workload's) matches everything, labels or not.
        assert!(selects(&Selector::everything(), None));
    }

    #[test]
    fn stable_hash_is_stable_and_salted() {
        let a = stable_hash(&serde_json::json!({"a": 1}), None);
        assert_eq!(a, stable_hash(&serde_json::json!({"a": 1}), None));
        assert_ne!(a, stable_hash(&serde_json::json!({"a": 1}), Some(1)));
        assert!(
            a.bytes()
                .all(|b| b"bcdfghjklmnpqrstvwxz2456789".contains(&b))
        );
    }
}
