//! The simulated node: registers a Node, keeps its Lease fresh, and plays scheduler and kubelet
//! for every pod.
//!
//! Scheduling binds pods without `spec.nodeName` to the node (a merge patch of `spec.nodeName`:
//! opkit's server does not serve `pods/binding`). The kubelet part then reports what a real
//! kubelet would: after the ready delay the pod is Running with Ready containers; run-to-completion
//! pods (restartPolicy Never/OnFailure) terminate after the completion delay. Annotations from
//! [`super::sim`] inject failures. Pods being deleted are confirmed with a zero grace period, as
//! a kubelet does once its containers stopped.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use jiff::Timestamp;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Container, Node, Pod};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use opkit::{Action, Context, Controller, ControllerDef};
use serde_json::{Value, json};

use super::sim::{Behavior, Sim};
use super::{BACKOFF, Error, Result, is_status, reconciler, stable_hash};
use crate::Settings;

/// The node's InternalIP (every pod's `hostIP`).
const HOST_IP: &str = "10.0.0.1";
/// How often the node Lease is renewed (upstream kubelet: 10 s, lease duration 40 s).
const LEASE_RENEW: Duration = Duration::from_secs(10);
/// How often the Node's conditions get a new heartbeat.
const STATUS_EVERY: u32 = 6;
/// Pods the kubelet reconciles at once.
const WORKERS: usize = 64;

/// The kubelet's state.
struct Kubelet {
    settings: Settings,
    /// When the kubelet started on each pod (by uid).
    bound: Mutex<HashMap<String, Instant>>,
    next_ip: AtomicU32,
}

type Ctx = Context<Kubelet>;

/// The pod lifecycle (scheduler and kubelet); [`heartbeat`] registers the node beside it.
pub(crate) fn controller(settings: Settings) -> ControllerDef {
    Controller::<Pod>::new("node")
        .backoff(BACKOFF)
        .max_concurrent_reconciles(WORKERS)
        .build(
            reconciler("node", reconcile),
            Kubelet {
                settings,
                bound: Mutex::new(HashMap::new()),
                next_ip: AtomicU32::new(0),
            },
        )
}

fn node_object(settings: &Settings) -> Value {
    let now = Timestamp::now().to_string();
    let name = &settings.node_name;
    json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "beta.kubernetes.io/os": "linux",
                "beta.kubernetes.io/arch": "amd64",
                "node.opkit.dev/simulated": "true",
            },
            "annotations": {"node.alpha.kubernetes.io/ttl": "0"},
        },
        "spec": {"podCIDR": "10.244.0.0/16", "podCIDRs": ["10.244.0.0/16"]},
        "status": node_status(settings, &now),
    })
}

fn node_status(settings: &Settings, now: &str) -> Value {
    let cond = |type_: &str, status: &str, reason: &str, message: &str| {
        json!({"type": type_, "status": status, "reason": reason, "message": message,
               "lastHeartbeatTime": now, "lastTransitionTime": now})
    };
    let resources =
        json!({"cpu": "32", "memory": "256Gi", "pods": "1000", "ephemeral-storage": "1Ti"});
    json!({
        "capacity": resources,
        "allocatable": resources,
        "phase": "Running",
        "conditions": [
            cond("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
            cond("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
            cond("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
            cond("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
        ],
        "addresses": [
            {"type": "InternalIP", "address": HOST_IP},
            {"type": "Hostname", "address": settings.node_name},
        ],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        "nodeInfo": {
            "machineID": stable_hash(&settings.node_name, None),
            "systemUUID": stable_hash(&settings.node_name, Some(1)),
            "bootID": stable_hash(&settings.node_name, Some(2)),
            "kernelVersion": "6.8.0-opkit",
            "osImage": "opkit simulated node",
            "containerRuntimeVersion": "opkit://0.1.0",
            "kubeletVersion": "v1.35.0",
            "kubeProxyVersion": "v1.35.0",
            "operatingSystem": "linux",
            "architecture": "amd64",
        },
    })
}

async fn register(client: &kube::Client, settings: &Settings) -> Result<()> {
    let nodes: Api<Node> = Api::all(client.clone());
    let node: Node = serde_json::from_value(node_object(settings))?;
    match nodes.create(&PostParams::default(), &node).await {
        Ok(_) => Ok(()),
        Err(e) if is_status(&e, 409) => {
            let now = Timestamp::now().to_string();
            let patch = json!({"status": node_status(settings, &now)});
            nodes
                .patch_status(
                    &settings.node_name,
                    &PatchParams::default(),
                    &Patch::Merge(&patch),
                )
                .await?;
            Ok(())
        }
        Err(e) => Err(e.into()),
    }
}

async fn renew_lease(client: &kube::Client, settings: &Settings) -> Result<()> {
    let leases: Api<Lease> = Api::namespaced(client.clone(), "kube-node-lease");
    let now = jiff::Timestamp::now().to_string();
    let name = &settings.node_name;
    let patch = json!({"spec": {"renewTime": now}});
    match leases
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        Ok(_) => Ok(()),
        Err(e) if is_status(&e, 404) => {
            let lease: Lease = serde_json::from_value(json!({
                "metadata": {"name": name, "namespace": "kube-node-lease",
                    "ownerReferences": []},
                "spec": {"holderIdentity": name, "leaseDurationSeconds": 40, "renewTime": now},
            }))?;
            match leases.create(&PostParams::default(), &lease).await {
                Ok(_) => Ok(()),
                Err(e) if is_status(&e, 409) => Ok(()),
                Err(e) => Err(e.into()),
            }
        }
        Err(e) => Err(e.into()),
    }
}

/// Registers the node, then renews its Lease and heartbeats its conditions forever.
pub(crate) async fn heartbeat(client: kube::Client, settings: Settings) {
    let mut delay = Duration::from_millis(50);
    while let Err(e) = register(&client, &settings).await {
        tracing::warn!(error = %e, "registering the node failed; retrying");
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(Duration::from_secs(10));
    }
    let mut tick = tokio::time::interval(LEASE_RENEW);
    let mut n: u32 = 0;
    loop {
        tick.tick().await;
        if let Err(e) = renew_lease(&client, &settings).await {
            tracing::warn!(error = %e, "renewing the node lease failed");
        }
        n = n.wrapping_add(1);
        if n.is_multiple_of(STATUS_EVERY)
            && let Err(e) = register(&client, &settings).await
        {
            tracing::warn!(error = %e, "node heartbeat failed");
        }
    }
}

/// The lifecycle stage a pod should be reported in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// Scheduled, containers being created.
    Creating,
    /// Running with ready containers.
    Ready,
    /// Running, containers running but not ready.
    NotReady,
    /// Running, containers crash-looping with this many restarts.
    CrashLoop(i32),
    /// Terminated with this exit code.
    Terminated(i32),
}

/// How long the `n`-th crash-loop back-off lasts (upstream: 10 s doubling to 5 min; the
/// simulation runs ten times faster so tests can watch restarts).
fn crash_backoff(n: i32) -> Duration {
    Duration::from_secs(1)
        .saturating_mul(2u32.saturating_pow(n.clamp(0, 10) as u32))
        .min(Duration::from_secs(30))
}

/// The crash-loop restarts after `running_for`, and how long until the next.
fn crash_loop(running_for: Duration) -> (i32, Duration) {
    let mut restarts = 0;
    let mut at = crash_backoff(0);
    while at <= running_for && restarts < 10_000 {
        restarts += 1;
        at += crash_backoff(restarts);
    }
    (restarts, at - running_for)
}

async fn reconcile(pod: Arc<Pod>, ctx: Arc<Ctx>) -> Result<Action> {
    let name = pod.metadata.name.as_deref().unwrap_or_default();
    let ns = pod.metadata.namespace.as_deref().unwrap_or_default();
    let uid = pod.metadata.uid.clone().unwrap_or_default();
    let api: Api<Pod> = Api::namespaced(ctx.client().clone(), ns);
    let node = ctx.settings.node_name.as_str();
    let bound_to = pod.spec.as_ref().and_then(|s| s.node_name.as_deref());
    if pod.metadata.deletion_timestamp.is_some() {
        if bound_to.is_none_or(|n| n == node) {
            forget(&ctx, &uid);
            let dp = DeleteParams {
                grace_period_seconds: Some(0),
                preconditions: Some(kube::api::Preconditions {
                    uid: Some(uid.clone()),
                    resource_version: None,
                }),
                ..DeleteParams::default()
            };
            match api.delete(name, &dp).await {
                Ok(_) => {}
                Err(e) if is_status(&e, 404) || is_status(&e, 409) => {}
                Err(e) => return Err(e.into()),
            }
        }
        return Ok(Action::await_change());
    }
    let sim = Sim::from_annotations(pod.metadata.annotations.as_ref());
    let status = pod.status.clone().unwrap_or_default();
    let phase = status.phase.as_deref().unwrap_or("Pending");
    if matches!(phase, "Succeeded" | "Failed") {
        forget(&ctx, &uid);
        return Ok(Action::await_change());
    }
    match bound_to {
        Some(n) if n != node => return Ok(Action::await_change()),
        Some(_) => {}
        None => {
            if sim.behavior == Behavior::Pending {
                return mark_unschedulable(&api, &pod).await;
            }
            let patch = json!({"spec": {"nodeName": node}});
            api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
                .await?;
            started(&ctx, &uid);
        }
    }
    let since = started(&ctx, &uid);
    let elapsed = since.elapsed();
    let ready_after = sim.ready_after.unwrap_or(ctx.settings.pod_ready_delay);
    let restart_policy = pod
        .spec
        .as_ref()
        .and_then(|s| s.restart_policy.as_deref())
        .unwrap_or("Always");
    let run_to_completion = restart_policy != "Always";
    let (stage, next) = if elapsed < ready_after {
        (Stage::Creating, Some(ready_after - elapsed))
    } else {
        let running_for = elapsed - ready_after;
        match sim.behavior {
            Behavior::NeverReady => (Stage::NotReady, None),
            Behavior::CrashLoop => {
                let (n, next) = crash_loop(running_for);
                (Stage::CrashLoop(n), Some(next))
            }
            Behavior::Fail if !run_to_completion => {
                let (n, next) = crash_loop(running_for);
                (Stage::CrashLoop(n), Some(next))
            }
            _ if run_to_completion => {
                let complete_after = sim
                    .complete_after
                    .unwrap_or(ctx.settings.pod_complete_delay);
                if running_for < complete_after {
                    (Stage::Ready, Some(complete_after - running_for))
                } else {
                    let default = if sim.behavior == Behavior::Fail { 1 } else { 0 };
                    (Stage::Terminated(sim.exit_code.unwrap_or(default)), None)
                }
            }
            _ => (Stage::Ready, None),
        }
    };
    if !reported(&pod, stage) {
        if stage == Stage::Creating && bound_to.is_some() && has_condition(&pod, "PodScheduled") {
            // Already reported as creating.
        } else {
            let status = pod_status(&ctx, &pod, stage);
            let patch = json!({"status": status});
            api.patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
                .await?;
        }
    }
    prune(&ctx);
    Ok(match next {
        Some(d) => Action::requeue(d),
        None => Action::await_change(),
    })
}

/// When the kubelet started on the pod (remembered from the first sight after binding).
fn started(ctx: &Ctx, uid: &str) -> Instant {
    let mut bound = ctx.bound.lock().unwrap_or_else(|p| p.into_inner());
    *bound.entry(uid.to_string()).or_insert_with(Instant::now)
}

fn forget(ctx: &Ctx, uid: &str) {
    let mut bound = ctx.bound.lock().unwrap_or_else(|p| p.into_inner());
    bound.remove(uid);
}

/// Drops start times of pods that are gone, once the map has grown past the live pods.
fn prune(ctx: &Ctx) {
    let Ok(store) = ctx.store::<Pod>() else {
        return;
    };
    let mut bound = ctx.bound.lock().unwrap_or_else(|p| p.into_inner());
    if bound.len() < 1024 || bound.len() < 2 * store.len() {
        return;
    }
    let live: std::collections::HashSet<String> = store
        .state()
        .iter()
        .filter_map(|p| p.metadata.uid.clone())
        .collect();
    bound.retain(|uid, _| live.contains(uid));
}

fn has_condition(pod: &Pod, type_: &str) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == type_))
}

/// Whether the pod's status already shows `stage`.
fn reported(pod: &Pod, stage: Stage) -> bool {
    let Some(status) = pod.status.as_ref() else {
        return false;
    };
    let phase = status.phase.as_deref().unwrap_or("");
    let first = status.container_statuses.as_ref().and_then(|c| c.first());
    let ready = super::pods::is_ready(pod);
    match stage {
        Stage::Creating => phase == "Pending" && first.is_some(),
        Stage::Ready => phase == "Running" && ready,
        Stage::NotReady => {
            phase == "Running"
                && !ready
                && first.is_some_and(|c| c.state.as_ref().is_some_and(|s| s.running.is_some()))
        }
        Stage::CrashLoop(n) => phase == "Running" && first.is_some_and(|c| c.restart_count == n),
        Stage::Terminated(_) => matches!(phase, "Succeeded" | "Failed"),
    }
}

fn container_status(
    c: &Container,
    stage: Stage,
    now: &str,
    started_at: &str,
    restart_policy: &str,
) -> Value {
    let image = c.image.clone().unwrap_or_default();
    let digest = format!(
        "{}{}{}{}",
        stable_hash(&image, None),
        stable_hash(&image, Some(1)),
        stable_hash(&image, Some(2)),
        stable_hash(&image, Some(3))
    );
    let image_id = format!(
        "{}@sha256:{}",
        image.split(':').next().unwrap_or(&image),
        digest
    );
    let container_id = format!("containerd://{}", stable_hash(&(now, &c.name), None));
    let (state, ready, started, restarts, last_state) = match stage {
        Stage::Creating => (
            json!({"waiting": {"reason": "ContainerCreating"}}),
            false,
            false,
            0,
            json!({}),
        ),
        Stage::Ready => (
            json!({"running": {"startedAt": started_at}}),
            true,
            true,
            0,
            json!({}),
        ),
        Stage::NotReady => (
            json!({"running": {"startedAt": started_at}}),
            false,
            true,
            0,
            json!({}),
        ),
        Stage::CrashLoop(n) => (
            json!({"waiting": {"reason": "CrashLoopBackOff",
                "message": format!("back-off restarting failed container {} (simulated)", c.name)}}),
            false,
            false,
            n,
            if n > 0 {
                json!({"terminated": {"exitCode": 1, "reason": "Error",
                    "startedAt": started_at, "finishedAt": now, "containerID": container_id}})
            } else {
                json!({})
            },
        ),
        Stage::Terminated(code) => (
            json!({"terminated": {"exitCode": code,
                "reason": if code == 0 { "Completed" } else { "Error" },
                "startedAt": started_at, "finishedAt": now, "containerID": container_id}}),
            false,
            false,
            0,
            json!({}),
        ),
    };
    let _ = restart_policy;
    json!({
        "name": c.name,
        "image": image,
        "imageID": image_id,
        "containerID": if stage == Stage::Creating { Value::Null } else { json!(container_id) },
        "ready": ready,
        "started": started,
        "restartCount": restarts,
        "state": state,
        "lastState": last_state,
    })
}

fn pod_status(ctx: &Ctx, pod: &Pod, stage: Stage) -> Value {
    let now = Timestamp::now().to_string();
    let old = pod.status.clone().unwrap_or_default();
    let pod_ip = old.pod_ip.clone().unwrap_or_else(|| {
        let n = ctx.next_ip.fetch_add(1, Ordering::Relaxed);
        format!("10.244.{}.{}", (n / 250) % 256, n % 250 + 2)
    });
    let start_time = old
        .start_time
        .as_ref()
        .map(|t| t.0.to_string())
        .unwrap_or_else(|| now.clone());
    let old_cond = |t: &str| {
        old.conditions
            .as_ref()
            .and_then(|cs| cs.iter().find(|c| c.type_ == t))
            .cloned()
    };
    let cond = |t: &str, status: bool, reason: Option<&str>| {
        let status = if status { "True" } else { "False" };
        let since = old_cond(t)
            .filter(|c| c.status == status)
            .and_then(|c| c.last_transition_time)
            .map(|t| t.0.to_string())
            .unwrap_or_else(|| now.clone());
        let mut c = json!({"type": t, "status": status, "lastProbeTime": null, "lastTransitionTime": since});
        if let Some(r) = reason {
            c["reason"] = json!(r);
        }
        c
    };
    let spec = pod.spec.clone().unwrap_or_default();
    let restart_policy = spec.restart_policy.as_deref().unwrap_or("Always");
    let started_at = old
        .container_statuses
        .as_ref()
        .and_then(|cs| cs.first())
        .and_then(|c| c.state.as_ref())
        .and_then(|s| s.running.as_ref())
        .and_then(|r| r.started_at.as_ref())
        .map(|t| t.0.to_string())
        .unwrap_or_else(|| now.clone());
    let containers: Vec<Value> = spec
        .containers
        .iter()
        .map(|c| container_status(c, stage, &now, &started_at, restart_policy))
        .collect();
    let init: Vec<Value> = spec
        .init_containers
        .iter()
        .flatten()
        .map(|c| {
            let mut s = container_status(c, Stage::Terminated(0), &now, &started_at, "Never");
            if stage == Stage::Creating {
                s = container_status(c, Stage::Creating, &now, &started_at, "Never");
            }
            s
        })
        .collect();
    let (phase, ready, initialized, reason) = match stage {
        Stage::Creating => ("Pending", false, spec.init_containers.is_none(), None),
        Stage::Ready => ("Running", true, true, None),
        Stage::NotReady | Stage::CrashLoop(_) => {
            ("Running", false, true, Some("ContainersNotReady"))
        }
        Stage::Terminated(0) => ("Succeeded", false, true, Some("PodCompleted")),
        Stage::Terminated(_) => ("Failed", false, true, Some("PodFailed")),
    };
    let mut conditions = vec![
        cond("PodReadyToStartContainers", stage != Stage::Creating, None),
        cond("Initialized", initialized, None),
        cond("Ready", ready, reason),
        cond("ContainersReady", ready, reason),
        cond("PodScheduled", true, None),
    ];
    if matches!(stage, Stage::Terminated(_)) {
        conditions[0] = cond("PodReadyToStartContainers", false, None);
    }
    let mut status = json!({
        "phase": phase,
        "conditions": conditions,
        "hostIP": HOST_IP,
        "hostIPs": [{"ip": HOST_IP}],
        "podIP": pod_ip,
        "podIPs": [{"ip": pod_ip}],
        "startTime": start_time,
        "qosClass": old.qos_class.clone().unwrap_or_else(|| "BestEffort".into()),
        "containerStatuses": containers,
    });
    if !init.is_empty() {
        status["initContainerStatuses"] = json!(init);
    }
    if stage == Stage::Creating {
        status["podIP"] = Value::Null;
        status["podIPs"] = Value::Null;
    }
    status
}

/// Marks an unschedulable pod as upstream's scheduler does.
async fn mark_unschedulable(api: &Api<Pod>, pod: &Pod) -> Result<Action> {
    let already = pod
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| c.type_ == "PodScheduled" && c.reason.as_deref() == Some("Unschedulable"))
        });
    if !already {
        let name = pod.metadata.name.as_deref().unwrap_or_default();
        let patch = json!({"status": {"phase": "Pending", "conditions": [{
            "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
            "lastProbeTime": null,
            "lastTransitionTime": Timestamp::now().to_string(),
            "message": "0/1 nodes are available: 1 node(s) were rejected by the simulation (sim.opkit.dev/behavior: pending).",
        }]}});
        api.patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map_err(Error::from)?;
    }
    Ok(Action::await_change())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crash_loop_restarts_back_off() {
        assert_eq!(crash_loop(Duration::ZERO), (0, Duration::from_secs(1)));
        assert_eq!(crash_loop(Duration::from_millis(1500)).0, 1);
        // 1 + 2 + 4 = 7 s for three restarts.
        assert_eq!(crash_loop(Duration::from_secs(7)).0, 3);
    }

    #[test]
    fn node_object_is_a_valid_node() {
        let node: Node = serde_json::from_value(node_object(&Settings::default())).unwrap();
        let status = node.status.unwrap();
        assert!(
            status
                .conditions
                .unwrap()
                .iter()
                .any(|c| c.type_ == "Ready")
        );
        assert_eq!(status.allocatable.unwrap()["pods"].0, "1000");
    }
}
