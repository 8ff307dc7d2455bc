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
//! Every controller is an [`opkit::Controller`] over its main kind, and all of them run in one
//! [`opkit::Manager`] with the namespace and aggregation controllers (see [`crate::spawn`]),
//! so each kind has one
//! watch and one cache however many controllers read it (the pods cache serves the node,
//! ReplicaSet, StatefulSet, DaemonSet, Job and endpoints controllers). Children are read
//! through the cache's [`opkit::OwnerIndex`], so a reconcile reads its children in time
//! proportional to their number, never by scanning the cluster. Creations and deletions are
//! tracked with [`opkit::Expectations`] (upstream's `ControllerExpectations`) so a reconcile
//! racing its own watch never creates or deletes twice.

mod clock;
pub mod cron;
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

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, OwnerReference};
use kube::Resource;
use opkit::workqueue::Backoff;
use opkit::{Action, Context, ControllerDef, Expectations, Object, Request, Store};
use opkit_apimachinery::LabelSelector as Selector;

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
    /// The runtime could not serve a cache or index.
    #[error(transparent)]
    Runtime(#[from] opkit::Error),
}

/// Result of a reconcile.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The workload controller `controller`, for the control plane's manager; `None` for the
/// controllers that are not workload controllers.
pub(crate) fn controller(controller: Controller, settings: &Settings) -> Option<ControllerDef> {
    let settings = settings.clone();
    Some(match controller {
        Controller::Node => node::controller(settings),
        Controller::Deployment => deployment::controller(),
        Controller::ReplicaSet => replicaset::controller(settings),
        Controller::StatefulSet => statefulset::controller(settings),
        Controller::DaemonSet => daemonset::controller(settings),
        Controller::Job => job::controller(settings),
        Controller::CronJob => cronjob::controller(settings),
        Controller::Endpoints => endpoints::controller(),
        _ => return None,
    })
}

/// The node's heartbeat (registration and Lease renewal), which runs beside its controller.
pub(crate) async fn node_heartbeat(client: kube::Client, settings: Settings) {
    node::heartbeat(client, settings).await
}

/// Per-key retry backoff: from 5 ms, capped at 30 s (the simulation favours quick recovery
/// over upstream's 1000 s cap).
pub(crate) const BACKOFF: Backoff = Backoff {
    base: Duration::from_millis(5),
    max: Duration::from_secs(30),
};

/// Keys reconciled at once by each workload controller (one key is never reconciled twice at
/// once); the node, which reconciles every pod, has more.
pub(crate) const WORKERS: usize = 16;

/// How long expectations wait for their watch events before they are given up.
pub(crate) const EXPECTATIONS_TIMEOUT: Duration = Duration::from_secs(30);

/// The data of a controller that owns pods (ReplicaSet, StatefulSet, DaemonSet, Job): the
/// settings and the create/delete expectations that keep a reconcile from acting on a cache
/// that has not caught up with its own writes. Its pods are read from the shared pods cache's
/// owner index.
pub(crate) struct PodOwners {
    pub(crate) settings: Settings,
    pub(crate) expectations: Expectations,
}

impl PodOwners {
    pub(crate) fn new(settings: Settings) -> PodOwners {
        PodOwners {
            settings,
            expectations: Expectations::new().with_timeout(EXPECTATIONS_TIMEOUT),
        }
    }
}

/// A reconcile's future, boxed so every controller's reconcile has one type.
pub(crate) type Reconciling = Pin<Box<dyn Future<Output = Result<Action>> + Send>>;

/// Wraps a reconcile: a conflict or a vanished object (409, 404) is an expected race with
/// another writer, logged at debug and retried with the key's backoff without counting as an
/// error; other errors go to the runtime, which logs, counts and retries them with backoff.
pub(crate) fn reconciler<K, T, F, Fut>(
    name: &'static str,
    reconcile: F,
) -> impl Fn(Arc<K>, Arc<Context<T>>) -> Reconciling + Send + Sync + 'static
where
    K: Object,
    T: Send + Sync + 'static,
    F: Fn(Arc<K>, Arc<Context<T>>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Action>> + Send + 'static,
{
    move |obj: Arc<K>, ctx: Arc<Context<T>>| {
        let key = Request::from_object(obj.as_ref());
        let running = reconcile(obj, ctx);
        Box::pin(async move {
            match running.await {
                Err(Error::Api(e)) if is_status(&e, 409) || is_status(&e, 404) => {
                    tracing::debug!(controller = name, %key, error = %e, "retrying");
                    Ok(Action::requeue_with_backoff())
                }
                other => other,
            }
        })
    }
}

/// The `K`s in `store` a child event concerns: the child's controller if that is a `K`, else (an
/// orphan) every `K` in its namespace whose non-empty selector matches the child's labels — the
/// candidates to adopt it. `selector` reads a `K`'s selector.
pub(crate) fn owner_or_adopters<K, C>(
    store: &Store<K>,
    child: &C,
    selector: impl Fn(&K) -> Option<&LabelSelector>,
) -> Vec<Request>
where
    K: Resource<DynamicType = ()> + Clone,
    C: Resource,
{
    let meta = child.meta();
    let ns = meta.namespace.as_deref().unwrap_or_default();
    let refs = meta.owner_references.as_deref().unwrap_or_default();
    if let Some(owner) = refs.iter().find(|r| r.controller == Some(true)) {
        if owner.kind == K::kind(&()) && owner.api_version == K::api_version(&()) {
            return vec![Request::namespaced(ns, owner.name.clone())];
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
        .map(|k| Request::from_object(k.as_ref()))
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

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;

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
