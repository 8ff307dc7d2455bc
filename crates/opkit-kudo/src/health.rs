//! Whether an object a task applied is healthy (KUDO's `kubernetes/status/health.go`, with
//! kubectl's rollout-status rules for Deployments and StatefulSets).
//!
//! - Deployment: the spec is observed, every replica updated, no old replica left, every
//!   updated replica available;
//! - StatefulSet: observed, every replica ready, the partitioned or full rolling update done
//!   (KUDO errs on `OnDelete`; opkit counts ready replicas only);
//! - DaemonSet, ReplicaSet: observed, every scheduled (or wanted) pod updated and available
//!   (KUDO had no check and called them healthy at once);
//! - Job: complete (KUDO: one success); a `Failed` condition is a fatal error with the Job's
//!   message;
//! - Pod: running and ready, or succeeded; Namespace: active; CRD: `Established`;
//! - Service: healthy unless `LoadBalancer` without ingress (or external IPs) or without a
//!   cluster IP; `ExternalName` always;
//! - Instance (a dependency): no plan running;
//! - anything else: healthy once it exists.

use serde_json::Value as Json;

use crate::object::{group_version, text};

/// An object's health.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Health {
    /// Healthy.
    Healthy,
    /// Not yet; says what is awaited.
    Waiting(String),
    /// Will never be healthy (a failed Job).
    Failed(String),
}

fn int(obj: &Json, pointer: &str) -> i64 {
    obj.pointer(pointer).and_then(Json::as_i64).unwrap_or(0)
}

fn opt_int(obj: &Json, pointer: &str) -> Option<i64> {
    obj.pointer(pointer).and_then(Json::as_i64)
}

fn has_condition<'a>(obj: &'a Json, type_: &str) -> Option<&'a Json> {
    obj.pointer("/status/conditions")
        .and_then(Json::as_array)
        .into_iter()
        .flatten()
        .find(|c| text(c, "/type") == type_ && text(c, "/status") == "True")
}

/// The health of a live object.
pub(crate) fn health(obj: &Json) -> Health {
    let (group, _) = group_version(obj);
    let name = text(obj, "/metadata/name");
    let ns = text(obj, "/metadata/namespace");
    match (group, text(obj, "/kind")) {
        ("apps", "Deployment") => deployment(obj, name),
        ("apps", "StatefulSet") => stateful_set(obj, name),
        ("apps", "DaemonSet") => daemon_set(obj, name),
        ("apps", "ReplicaSet") => replica_set(obj, name),
        ("batch", "Job") => job(obj, name),
        ("", "Pod") => {
            let phase = text(obj, "/status/phase");
            if phase == "Succeeded" || (phase == "Running" && has_condition(obj, "Ready").is_some())
            {
                Health::Healthy
            } else {
                Health::Waiting(format!("pod {ns}/{name} is not running yet: {phase}"))
            }
        }
        ("", "Namespace") => match text(obj, "/status/phase") {
            "Active" => Health::Healthy,
            phase => Health::Waiting(format!("namespace {name} is not active: {phase}")),
        },
        ("", "Service") => service(obj, ns, name),
        ("apiextensions.k8s.io", "CustomResourceDefinition") => {
            if has_condition(obj, "Established").is_some() {
                Health::Healthy
            } else {
                Health::Waiting(format!("CRD {name} is not healthy: not Established yet"))
            }
        }
        ("kudo.dev", "Instance") => {
            let plan = text(obj, "/spec/planExecution/planName");
            if plan.is_empty() {
                Health::Healthy
            } else {
                Health::Waiting(format!(
                    "instance {ns}/{name} active plan is in state {}",
                    text(obj, "/spec/planExecution/status")
                ))
            }
        }
        _ => Health::Healthy,
    }
}

fn observed(obj: &Json) -> bool {
    let observed = opt_int(obj, "/status/observedGeneration");
    observed.is_some_and(|o| int(obj, "/metadata/generation") <= o)
}

fn deployment(d: &Json, name: &str) -> Health {
    let waiting = |m: String| Health::Waiting(format!("deployment {name:?} is not healthy: {m}"));
    if !observed(d) {
        return waiting("Waiting for deployment spec update to be observed...".into());
    }
    let progressing = d
        .pointer("/status/conditions")
        .and_then(Json::as_array)
        .into_iter()
        .flatten()
        .find(|c| text(c, "/type") == "Progressing");
    if progressing.is_some_and(|c| text(c, "/reason") == "ProgressDeadlineExceeded") {
        return waiting(format!(
            "deployment {name:?} exceeded its progress deadline"
        ));
    }
    let updated = int(d, "/status/updatedReplicas");
    let replicas = int(d, "/status/replicas");
    let available = int(d, "/status/availableReplicas");
    if let Some(want) = opt_int(d, "/spec/replicas").or(Some(1))
        && updated < want
    {
        return waiting(format!(
            "Waiting for deployment {name:?} rollout to finish: {updated} out of {want} new replicas have been updated..."
        ));
    }
    if replicas > updated {
        return waiting(format!(
            "Waiting for deployment {name:?} rollout to finish: {} old replicas are pending termination...",
            replicas - updated
        ));
    }
    if available < updated {
        return waiting(format!(
            "Waiting for deployment {name:?} rollout to finish: {available} of {updated} updated replicas are available..."
        ));
    }
    Health::Healthy
}

fn stateful_set(s: &Json, name: &str) -> Health {
    let waiting = |m: String| Health::Waiting(format!("statefulset {name:?} is not healthy: {m}"));
    if opt_int(s, "/status/observedGeneration").unwrap_or(0) == 0 || !observed(s) {
        return waiting("Waiting for statefulset spec update to be observed...".into());
    }
    let want = opt_int(s, "/spec/replicas").unwrap_or(1);
    let ready = int(s, "/status/readyReplicas");
    if ready < want {
        return waiting(format!("Waiting for {} pods to be ready...", want - ready));
    }
    if text(s, "/spec/updateStrategy/type") == "OnDelete" {
        return Health::Healthy;
    }
    if let Some(partition) = opt_int(s, "/spec/updateStrategy/rollingUpdate/partition") {
        let updated = int(s, "/status/updatedReplicas");
        if updated < want - partition {
            return waiting(format!(
                "Waiting for partitioned roll out to finish: {updated} out of {} new pods have been updated...",
                want - partition
            ));
        }
        return Health::Healthy;
    }
    let update = text(s, "/status/updateRevision");
    if update != text(s, "/status/currentRevision") {
        return waiting(format!(
            "waiting for statefulset rolling update to complete {} pods at revision {update}...",
            int(s, "/status/updatedReplicas")
        ));
    }
    Health::Healthy
}

fn daemon_set(d: &Json, name: &str) -> Health {
    let waiting = |m: String| Health::Waiting(format!("daemonset {name:?} is not healthy: {m}"));
    if !observed(d) {
        return waiting("Waiting for daemon set spec update to be observed...".into());
    }
    let desired = int(d, "/status/desiredNumberScheduled");
    let updated = int(d, "/status/updatedNumberScheduled");
    let available = int(d, "/status/numberAvailable");
    if updated < desired {
        return waiting(format!(
            "Waiting for daemon set {name:?} rollout to finish: {updated} out of {desired} new pods have been updated..."
        ));
    }
    if available < desired {
        return waiting(format!(
            "Waiting for daemon set {name:?} rollout to finish: {available} of {desired} updated pods are available..."
        ));
    }
    Health::Healthy
}

fn replica_set(r: &Json, name: &str) -> Health {
    let want = opt_int(r, "/spec/replicas").unwrap_or(1);
    let available = int(r, "/status/availableReplicas");
    if !observed(r) || available < want {
        return Health::Waiting(format!(
            "replicaset {name:?} is not healthy: {available} of {want} replicas are available"
        ));
    }
    Health::Healthy
}

fn job(j: &Json, name: &str) -> Health {
    if let Some(failed) = has_condition(j, "Failed") {
        return Health::Failed(format!(
            "job {name:?} has failed terminally: {}",
            text(failed, "/message")
        ));
    }
    let completions = opt_int(j, "/spec/completions").unwrap_or(1);
    if has_condition(j, "Complete").is_some() || int(j, "/status/succeeded") >= completions {
        return Health::Healthy;
    }
    Health::Waiting(format!("job {name:?} still running or failed"))
}

fn service(s: &Json, ns: &str, name: &str) -> Health {
    let type_ = text(s, "/spec/type");
    if type_ == "ExternalName" {
        return Health::Healthy;
    }
    if text(s, "/spec/clusterIP").is_empty() {
        return Health::Waiting(format!(
            "service {ns}/{name} does not have cluster IP address"
        ));
    }
    if type_ == "LoadBalancer" {
        let external = s
            .pointer("/spec/externalIPs")
            .and_then(Json::as_array)
            .is_some_and(|a| !a.is_empty());
        let ingress = s
            .pointer("/status/loadBalancer/ingress")
            .and_then(Json::as_array)
            .is_some_and(|a| !a.is_empty());
        if !external && !ingress {
            return Health::Waiting(format!(
                "service {ns}/{name} does not have load balancer ingress IP address"
            ));
        }
    }
    Health::Healthy
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn waiting(h: Health) -> String {
        match h {
            Health::Waiting(m) => m,
            other => panic!("expected Waiting, got {other:?}"),
        }
    }

    #[test]
    fn deployment_waits_for_observation_update_and_availability() {
        let mut d = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "generation": 2},
            "spec": {"replicas": 2}, "status": {"observedGeneration": 1}});
        assert!(waiting(health(&d)).contains("spec update to be observed"));
        d["status"] = json!({"observedGeneration": 2, "replicas": 2, "updatedReplicas": 1});
        assert!(waiting(health(&d)).contains("1 out of 2 new replicas have been updated"));
        d["status"] = json!({"observedGeneration": 2, "replicas": 3, "updatedReplicas": 2});
        assert!(waiting(health(&d)).contains("1 old replicas are pending termination"));
        d["status"] = json!({"observedGeneration": 2, "replicas": 2, "updatedReplicas": 2, "availableReplicas": 1});
        assert!(waiting(health(&d)).contains("1 of 2 updated replicas are available"));
        d["status"]["availableReplicas"] = json!(2);
        assert_eq!(health(&d), Health::Healthy);
    }

    #[test]
    fn stateful_set_waits_for_ready_pods_and_the_rolling_update() {
        let mut s = json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "zk", "generation": 1},
            "spec": {"replicas": 3, "updateStrategy": {"type": "RollingUpdate"}},
            "status": {"observedGeneration": 1, "readyReplicas": 1}});
        assert!(waiting(health(&s)).contains("Waiting for 2 pods to be ready"));
        s["status"] = json!({"observedGeneration": 1, "readyReplicas": 3, "updatedReplicas": 1, "currentRevision": "a", "updateRevision": "b"});
        assert!(waiting(health(&s)).contains("rolling update to complete 1 pods at revision b"));
        s["status"]["currentRevision"] = json!("b");
        assert_eq!(health(&s), Health::Healthy);
        s["spec"]["updateStrategy"] =
            json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 2}});
        s["status"] = json!({"observedGeneration": 1, "readyReplicas": 3, "updatedReplicas": 0});
        assert!(waiting(health(&s)).contains("0 out of 1 new pods"));
    }

    #[test]
    fn a_failed_job_is_fatal_and_a_complete_one_healthy() {
        let mut j = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "init"}, "spec": {}, "status": {}});
        assert_eq!(waiting(health(&j)), "job \"init\" still running or failed");
        j["status"] = json!({"conditions": [{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded", "message": "Job has reached the specified backoff limit"}]});
        assert_eq!(
            health(&j),
            Health::Failed(
                "job \"init\" has failed terminally: Job has reached the specified backoff limit"
                    .into()
            )
        );
        j["status"] =
            json!({"succeeded": 1, "conditions": [{"type": "Complete", "status": "True"}]});
        assert_eq!(health(&j), Health::Healthy);
    }

    #[test]
    fn pods_services_namespaces_crds_and_others() {
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "n"}, "status": {"phase": "Pending"}});
        assert_eq!(waiting(health(&pod)), "pod n/p is not running yet: Pending");
        let ready = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}});
        assert_eq!(health(&ready), Health::Healthy);
        let done = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "status": {"phase": "Succeeded"}});
        assert_eq!(health(&done), Health::Healthy);
        let lb = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "n"}, "spec": {"type": "LoadBalancer", "clusterIP": "10.0.0.1"}});
        assert_eq!(
            waiting(health(&lb)),
            "service n/s does not have load balancer ingress IP address"
        );
        let mut lb_ok = lb.clone();
        lb_ok["status"] = json!({"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}]}});
        assert_eq!(health(&lb_ok), Health::Healthy);
        let cluster_ip = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": {"clusterIP": "None"}});
        assert_eq!(health(&cluster_ip), Health::Healthy);
        let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}, "status": {"phase": "Terminating"}});
        assert_eq!(
            waiting(health(&ns)),
            "namespace x is not active: Terminating"
        );
        let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "a.b"}, "status": {"conditions": [{"type": "NamesAccepted", "status": "True"}]}});
        assert!(waiting(health(&crd)).contains("not Established"));
        let established = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "a.b"}, "status": {"conditions": [{"type": "Established", "status": "True"}]}});
        assert_eq!(health(&established), Health::Healthy);
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
        assert_eq!(health(&cm), Health::Healthy);
    }

    #[test]
    fn daemon_and_replica_sets_wait_for_available_pods() {
        let mut ds = json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "d", "generation": 1},
            "status": {"observedGeneration": 1, "desiredNumberScheduled": 2, "updatedNumberScheduled": 2, "numberAvailable": 1}});
        assert!(waiting(health(&ds)).contains("1 of 2 updated pods are available"));
        ds["status"]["numberAvailable"] = json!(2);
        assert_eq!(health(&ds), Health::Healthy);
        let rs = json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "r", "generation": 1},
            "spec": {"replicas": 2}, "status": {"observedGeneration": 1, "availableReplicas": 1}});
        assert!(waiting(health(&rs)).contains("1 of 2 replicas are available"));
    }
}
