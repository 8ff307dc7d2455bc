//! What the workload controllers ask of pods: active, ready, available, ranked for deletion;
//! and pods made from templates.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use futures::{StreamExt, stream};
use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Pod, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::api::{Api, DeleteParams, PostParams};

use super::{Error, is_status};
use opkit::Expectations;

/// How many creations or deletions a controller has in flight at once.
pub(crate) const BURST: usize = 32;

/// The pod's phase, or `""`.
pub(crate) fn phase(pod: &Pod) -> &str {
    pod.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("")
}

/// Not terminating and not finished: counts towards a controller's replicas.
pub(crate) fn is_active(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_none() && !matches!(phase(pod), "Succeeded" | "Failed")
}

/// The pod's Ready condition is True.
pub(crate) fn is_ready(pod: &Pod) -> bool {
    ready_condition(pod).is_some_and(|c| c.status == "True")
}

fn ready_condition(pod: &Pod) -> Option<&k8s_openapi::api::core::v1::PodCondition> {
    pod.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "Ready")
}

/// When the pod became ready, if it is.
pub(crate) fn ready_since(pod: &Pod) -> Option<Timestamp> {
    ready_condition(pod)
        .filter(|c| c.status == "True")
        .and_then(|c| c.last_transition_time.as_ref())
        .map(|t| t.0)
}

/// Ready for at least `min_ready_seconds` at `now`; when not yet, how long until it is.
pub(crate) fn availability(pod: &Pod, min_ready_seconds: i32, now: Timestamp) -> Availability {
    if !is_ready(pod) {
        return Availability::No;
    }
    if min_ready_seconds <= 0 {
        return Availability::Yes;
    }
    let Some(since) = ready_since(pod) else {
        return Availability::Yes;
    };
    let at = since.as_second() + i64::from(min_ready_seconds);
    let left = at - now.as_second();
    if left <= 0 {
        Availability::Yes
    } else {
        Availability::After(std::time::Duration::from_secs(left as u64))
    }
}

/// Whether a ready pod counts as available.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Availability {
    /// Available.
    Yes,
    /// Not ready.
    No,
    /// Ready, available after this long.
    After(std::time::Duration),
}

fn restarts(pod: &Pod) -> i32 {
    pod.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .map(|cs| cs.iter().map(|c| c.restart_count).max().unwrap_or(0))
        .unwrap_or(0)
}

/// Orders pods most-deletable first, as upstream's `ActivePodsWithRanks`: unscheduled before
/// scheduled, pending before running, not ready before ready, ready for less time before ready
/// for longer, more restarts before fewer, newer before older.
pub(crate) fn deletion_order(a: &Pod, b: &Pod) -> Ordering {
    let assigned = |p: &Pod| p.spec.as_ref().and_then(|s| s.node_name.as_ref()).is_some();
    let phase_rank = |p: &Pod| match phase(p) {
        "Pending" | "" => 0,
        "Unknown" => 1,
        _ => 2,
    };
    assigned(a)
        .cmp(&assigned(b))
        .then_with(|| phase_rank(a).cmp(&phase_rank(b)))
        .then_with(|| is_ready(a).cmp(&is_ready(b)))
        .then_with(|| ready_since(b).cmp(&ready_since(a)))
        .then_with(|| restarts(b).cmp(&restarts(a)))
        .then_with(|| {
            let t = |p: &Pod| p.metadata.creation_timestamp.as_ref().map(|t| t.0);
            t(b).cmp(&t(a))
        })
}

/// A pod built from a template, owned by `owner`, named by the server from `generate_name`
/// (or exactly `name`).
pub(crate) fn from_template(
    template: &PodTemplateSpec,
    namespace: &str,
    name: Naming<'_>,
    owner: OwnerReference,
    extra_labels: &BTreeMap<String, String>,
) -> Pod {
    let tmeta = template.metadata.clone().unwrap_or_default();
    let mut labels = tmeta.labels.unwrap_or_default();
    labels.extend(extra_labels.iter().map(|(k, v)| (k.clone(), v.clone())));
    let (name, generate_name) = match name {
        Naming::Exact(n) => (Some(n.to_string()), None),
        Naming::Generate(base) => (None, Some(base.to_string())),
    };
    Pod {
        metadata: ObjectMeta {
            name,
            generate_name,
            namespace: Some(namespace.to_string()),
            labels: Some(labels),
            annotations: tmeta.annotations,
            finalizers: tmeta.finalizers,
            owner_references: Some(vec![owner]),
            ..Default::default()
        },
        spec: template.spec.clone(),
        status: None,
    }
}

/// How a new pod is named.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Naming<'a> {
    /// Exactly this name.
    Exact(&'a str),
    /// This prefix plus 5 random characters (`generateName`).
    Generate(&'a str),
}

/// Creates `pods` with bounded concurrency, telling `expectations` (for owner `uid`) of each
/// creation that will never be observed. Returns the first error.
pub(crate) async fn create_all(
    api: &Api<Pod>,
    pods: Vec<Pod>,
    expectations: &Expectations,
    uid: &str,
) -> Result<(), Error> {
    expectations.expect_creations(uid, pods.len());
    let results: Vec<Result<(), Error>> = stream::iter(pods)
        .map(|pod| async move {
            match api.create(&PostParams::default(), &pod).await {
                Ok(_) => Ok(()),
                Err(e) => {
                    expectations.creation_observed(uid);
                    if is_status(&e, 409) {
                        Ok(())
                    } else {
                        Err(Error::from(e))
                    }
                }
            }
        })
        .buffer_unordered(BURST)
        .collect()
        .await;
    results.into_iter().collect()
}

/// Deletes the pods named `names` with bounded concurrency, telling `expectations` (for owner
/// `uid`) of each deletion that will never be observed.
pub(crate) async fn delete_all(
    api: &Api<Pod>,
    names: Vec<String>,
    expectations: &Expectations,
    uid: &str,
) -> Result<(), Error> {
    expectations.expect_deletions(uid, names.iter().cloned());
    let results: Vec<Result<(), Error>> = stream::iter(names)
        .map(|name| async move {
            match api.delete(&name, &DeleteParams::background()).await {
                Ok(_) => Ok(()),
                Err(e) => {
                    expectations.deletion_observed(uid, &name);
                    if is_status(&e, 404) {
                        Ok(())
                    } else {
                        Err(Error::from(e))
                    }
                }
            }
        })
        .buffer_unordered(BURST)
        .collect()
        .await;
    results.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{PodCondition, PodSpec, PodStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    fn pod(node: bool, phase: &str, ready: bool) -> Pod {
        Pod {
            spec: Some(PodSpec {
                node_name: node.then(|| "n".to_string()),
                ..Default::default()
            }),
            status: Some(PodStatus {
                phase: Some(phase.into()),
                conditions: Some(vec![PodCondition {
                    type_: "Ready".into(),
                    status: if ready { "True" } else { "False" }.into(),
                    last_transition_time: Some(Time(Timestamp::UNIX_EPOCH)),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn unscheduled_and_unready_pods_are_deleted_first() {
        let mut pods = [
            pod(true, "Running", true),
            pod(false, "Pending", false),
            pod(true, "Running", false),
        ];
        pods.sort_by(deletion_order);
        assert!(pods[0].spec.as_ref().unwrap().node_name.is_none());
        assert!(!is_ready(&pods[1]));
        assert!(is_ready(&pods[2]));
    }

    #[test]
    fn min_ready_seconds_delays_availability() {
        let p = pod(true, "Running", true);
        let now = Timestamp::from_second(5).unwrap();
        assert_eq!(
            availability(&p, 10, now),
            Availability::After(std::time::Duration::from_secs(5))
        );
        assert_eq!(availability(&p, 0, now), Availability::Yes);
        assert_eq!(availability(&p, 3, now), Availability::Yes);
    }
}
