//! The simulated workload controllers, driven through kube-rs against an in-process control
//! plane: Deployments roll out, StatefulSets create ordinals, Jobs complete, Services get
//! endpoints, and the failure-injection annotations keep things unavailable.

mod common;

use std::future::Future;
use std::time::Duration;

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::{Endpoints, Node, PersistentVolumeClaim, Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use opkit_apiserver::controllers::{Clock, ControllerSet, Settings};
use opkit_apiserver::{Config, ControlPlane};
use serde_json::json;

const DEADLINE: Duration = Duration::from_secs(30);

fn settings() -> Settings {
    Settings {
        pod_ready_delay: Duration::from_millis(20),
        pod_complete_delay: Duration::from_millis(200),
        clock: Clock::ahead(Duration::from_secs(61)),
        ..Settings::default()
    }
}

async fn start_with(settings: Settings) -> (ControlPlane, kube::Client) {
    let config = Config {
        controllers: settings,
        ..Config::ephemeral()
    };
    let plane = ControlPlane::start(config)
        .await
        .expect("control plane starts");
    let client = common::client(&plane).await;
    (plane, client)
}

async fn start() -> (ControlPlane, kube::Client) {
    start_with(settings()).await
}

/// Polls `check` until it returns `Some`, or panics with `what` after the deadline.
async fn eventually<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        if let Some(v) = check().await {
            return v;
        }
        if tokio::time::Instant::now() > deadline {
            panic!("timed out waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

fn deployment(name: &str, replicas: i32, image: &str) -> Deployment {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "app", "image": image,
                    "ports": [{"name": "http", "containerPort": 8080}]}]}
            }
        }
    }))
    .expect("deployment")
}

async fn create<K>(api: &Api<K>, obj: &K) -> K
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    api.create(&PostParams::default(), obj)
        .await
        .expect("object is created")
}

/// Waits until the Deployment reports `replicas` updated, ready and available replicas at its
/// current generation, and nothing else (what `kubectl rollout status` waits for).
async fn rolled_out(api: &Api<Deployment>, name: &str, replicas: i32) -> Deployment {
    eventually(
        &format!("deployment {name} rolled out with {replicas}"),
        || async {
            let d = api.get(name).await.ok()?;
            let s = d.status.clone()?;
            let done = s.observed_generation >= d.metadata.generation
                && s.updated_replicas == Some(replicas)
                && s.replicas == Some(replicas)
                && s.available_replicas == Some(replicas)
                && s.ready_replicas == Some(replicas);
            done.then_some(d)
        },
    )
    .await
}

fn condition<'a>(
    d: &'a Deployment,
    type_: &str,
) -> Option<&'a k8s_openapi::api::apps::v1::DeploymentCondition> {
    d.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == type_)
}

fn revision(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> Option<String> {
    meta.annotations
        .as_ref()?
        .get("deployment.kubernetes.io/revision")
        .cloned()
}

async fn replica_sets(client: &kube::Client, app: &str) -> Vec<ReplicaSet> {
    let api: Api<ReplicaSet> = Api::namespaced(client.clone(), "default");
    api.list(&ListParams::default().labels(&format!("app={app}")))
        .await
        .expect("list replicasets")
        .items
}

async fn ready_pods(client: &kube::Client, selector: &str) -> Vec<Pod> {
    let api: Api<Pod> = Api::namespaced(client.clone(), "default");
    api.list(&ListParams::default().labels(selector))
        .await
        .expect("list pods")
        .items
        .into_iter()
        .filter(|p| {
            p.status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
        })
        .collect()
}

#[tokio::test]
async fn deployment_becomes_available_with_ready_pods_on_the_simulated_node() {
    let (_plane, client) = start().await;
    let api: Api<Deployment> = Api::namespaced(client.clone(), "default");
    create(&api, &deployment("web", 3, "nginx:1.27")).await;
    let d = rolled_out(&api, "web", 3).await;
    let available = condition(&d, "Available").expect("Available condition");
    assert_eq!(available.status, "True");
    assert_eq!(
        available.reason.as_deref(),
        Some("MinimumReplicasAvailable")
    );
    let progressing = condition(&d, "Progressing").expect("Progressing condition");
    assert_eq!(
        progressing.reason.as_deref(),
        Some("NewReplicaSetAvailable")
    );
    assert_eq!(revision(&d.metadata).as_deref(), Some("1"));

    let rss = replica_sets(&client, "web").await;
    assert_eq!(rss.len(), 1);
    let rs = &rss[0];
    let hash = rs.metadata.labels.as_ref().unwrap()["pod-template-hash"].clone();
    assert_eq!(
        rs.metadata.name.as_deref(),
        Some(format!("web-{hash}").as_str())
    );
    let owner = &rs.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (
            owner.kind.as_str(),
            owner.controller,
            owner.block_owner_deletion
        ),
        ("Deployment", Some(true), Some(true))
    );
    assert_eq!(revision(&rs.metadata).as_deref(), Some("1"));
    let annotations = rs.metadata.annotations.as_ref().unwrap();
    assert_eq!(
        annotations["deployment.kubernetes.io/desired-replicas"],
        "3"
    );
    assert_eq!(annotations["deployment.kubernetes.io/max-replicas"], "4");

    let pods = ready_pods(&client, "app=web").await;
    assert_eq!(pods.len(), 3);
    for pod in &pods {
        let name = pod.metadata.name.as_deref().unwrap();
        assert!(name.starts_with(&format!("web-{hash}-")), "{name}");
        assert_eq!(name.len(), format!("web-{hash}-").len() + 5);
        assert_eq!(
            pod.spec.as_ref().unwrap().node_name.as_deref(),
            Some("opkit-node")
        );
        let status = pod.status.as_ref().unwrap();
        assert_eq!(status.phase.as_deref(), Some("Running"));
        assert!(status.pod_ip.is_some() && status.host_ip.is_some() && status.start_time.is_some());
        let cs = &status.container_statuses.as_ref().unwrap()[0];
        assert!(cs.ready && cs.started == Some(true));
        assert_eq!(cs.image, "nginx:1.27");
        assert!(cs.state.as_ref().unwrap().running.is_some());
    }
    let nodes: Api<Node> = Api::all(client.clone());
    let node = nodes
        .get("opkit-node")
        .await
        .expect("the simulated node exists");
    let ready = node.status.unwrap().conditions.unwrap();
    assert!(
        ready
            .iter()
            .any(|c| c.type_ == "Ready" && c.status == "True")
    );
}

#[tokio::test]
async fn hundred_replica_deployment_becomes_fully_available() {
    let (_plane, client) = start().await;
    let api: Api<Deployment> = Api::namespaced(client.clone(), "default");
    let started = std::time::Instant::now();
    create(&api, &deployment("big", 100, "nginx:1.27")).await;
    rolled_out(&api, "big", 100).await;
    eprintln!("100 replicas available after {:?}", started.elapsed());
    assert_eq!(ready_pods(&client, "app=big").await.len(), 100);
}

#[tokio::test]
async fn deployment_scales_up_and_down() {
    let (_plane, client) = start().await;
    let api: Api<Deployment> = Api::namespaced(client.clone(), "default");
    create(&api, &deployment("scaled", 2, "nginx:1.27")).await;
    rolled_out(&api, "scaled", 2).await;
    api.patch(
        "scaled",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"replicas": 5}})),
    )
    .await
    .unwrap();
    rolled_out(&api, "scaled", 5).await;
    assert_eq!(ready_pods(&client, "app=scaled").await.len(), 5);
    api.patch(
        "scaled",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"replicas": 1}})),
    )
    .await
    .unwrap();
    rolled_out(&api, "scaled", 1).await;
    eventually("pods scaled down to 1", || async {
        let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
        let n = pods
            .list(&ListParams::default().labels("app=scaled"))
            .await
            .ok()?
            .items
            .len();
        (n == 1).then_some(())
    })
    .await;
    assert_eq!(
        replica_sets(&client, "scaled").await.len(),
        1,
        "scaling makes no new ReplicaSet"
    );
}

async fn set_image(api: &Api<Deployment>, name: &str, image: &str) {
    let patch =
        json!({"spec": {"template": {"spec": {"containers": [{"name": "app", "image": image}]}}}});
    api.patch(name, &PatchParams::default(), &Patch::Strategic(patch))
        .await
        .expect("image patched");
}

#[tokio::test]
async fn image_change_rolls_out_a_new_replica_set_and_rollback_readopts_the_old_one() {
    let (_plane, client) = start().await;
    let api: Api<Deployment> = Api::namespaced(client.clone(), "default");
    create(&api, &deployment("roll", 4, "nginx:1.27")).await;
    rolled_out(&api, "roll", 4).await;
    let first = replica_sets(&client, "roll").await.remove(0);
    let first_name = first.metadata.name.clone().unwrap();

    set_image(&api, "roll", "nginx:1.28").await;
    let d = rolled_out(&api, "roll", 4).await;
    assert_eq!(revision(&d.metadata).as_deref(), Some("2"));
    let rss = replica_sets(&client, "roll").await;
    assert_eq!(rss.len(), 2);
    for rs in &rss {
        let name = rs.metadata.name.clone().unwrap();
        if name == first_name {
            assert_eq!(
                rs.spec.as_ref().unwrap().replicas,
                Some(0),
                "old RS scaled to 0"
            );
            assert_eq!(revision(&rs.metadata).as_deref(), Some("1"));
        } else {
            assert_eq!(rs.spec.as_ref().unwrap().replicas, Some(4));
            assert_eq!(revision(&rs.metadata).as_deref(), Some("2"));
        }
    }
    let pods = ready_pods(&client, "app=roll").await;
    assert!(
        pods.iter()
            .all(|p| p.spec.as_ref().unwrap().containers[0].image.as_deref() == Some("nginx:1.28"))
    );

    // What `kubectl rollout undo` does: the Deployment gets the old ReplicaSet's template.
    let mut template = first.spec.unwrap().template.unwrap();
    template
        .metadata
        .as_mut()
        .unwrap()
        .labels
        .as_mut()
        .unwrap()
        .remove("pod-template-hash");
    let patch = json!([{"op": "replace", "path": "/spec/template", "value": template}]);
    api.patch(
        "roll",
        &PatchParams::default(),
        &Patch::Json::<()>(serde_json::from_value(patch).unwrap()),
    )
    .await
    .expect("rollback patch");
    let d = rolled_out(&api, "roll", 4).await;
    assert_eq!(revision(&d.metadata).as_deref(), Some("3"));
    let rss = replica_sets(&client, "roll").await;
    assert_eq!(rss.len(), 2, "the old ReplicaSet is adopted, not recreated");
    let back = rss
        .iter()
        .find(|rs| rs.metadata.name.as_deref() == Some(&first_name))
        .unwrap();
    assert_eq!(back.spec.as_ref().unwrap().replicas, Some(4));
    assert_eq!(revision(&back.metadata).as_deref(), Some("3"));
    assert_eq!(
        back.metadata.annotations.as_ref().unwrap()["deployment.kubernetes.io/revision-history"],
        "1"
    );
}

#[tokio::test]
async fn recreate_strategy_replaces_all_pods_at_once() {
    let (_plane, client) = start().await;
    let api: Api<Deployment> = Api::namespaced(client.clone(), "default");
    let mut d = deployment("recreate", 3, "nginx:1.27");
    d.spec.as_mut().unwrap().strategy =
        Some(serde_json::from_value(json!({"type": "Recreate"})).unwrap());
    create(&api, &d).await;
    rolled_out(&api, "recreate", 3).await;
    set_image(&api, "recreate", "nginx:1.28").await;
    let d = rolled_out(&api, "recreate", 3).await;
    assert_eq!(revision(&d.metadata).as_deref(), Some("2"));
    let rss = replica_sets(&client, "recreate").await;
    assert_eq!(rss.len(), 2);
    assert!(
        rss.iter()
            .any(|rs| rs.spec.as_ref().unwrap().replicas == Some(0))
    );
}

#[tokio::test]
async fn revision_history_limit_deletes_old_replica_sets() {
    let (_plane, client) = start().await;
    let api: Api<Deployment> = Api::namespaced(client.clone(), "default");
    let mut d = deployment("history", 1, "nginx:1");
    d.spec.as_mut().unwrap().revision_history_limit = Some(1);
    create(&api, &d).await;
    rolled_out(&api, "history", 1).await;
    for image in ["nginx:2", "nginx:3"] {
        set_image(&api, "history", image).await;
        rolled_out(&api, "history", 1).await;
    }
    eventually("old ReplicaSets beyond the limit deleted", || async {
        (replica_sets(&client, "history").await.len() == 2).then_some(())
    })
    .await;
}

#[tokio::test]
async fn failure_injection_keeps_a_deployment_unavailable() {
    let (_plane, client) = start().await;
    let api: Api<Deployment> = Api::namespaced(client.clone(), "default");
    let mut d = deployment("broken", 2, "nginx:1.27");
    d.spec.as_mut().unwrap().progress_deadline_seconds = Some(1);
    d.spec
        .as_mut()
        .unwrap()
        .template
        .metadata
        .as_mut()
        .unwrap()
        .annotations = Some(
        [(
            "sim.opkit.dev/behavior".to_string(),
            "crash-loop".to_string(),
        )]
        .into(),
    );
    create(&api, &d).await;
    let d = eventually("progress deadline exceeded", || async {
        let d = api.get("broken").await.ok()?;
        let c = condition(&d, "Progressing")?;
        (c.reason.as_deref() == Some("ProgressDeadlineExceeded")).then_some(d.clone())
    })
    .await;
    let s = d.status.as_ref().unwrap();
    assert_eq!(s.available_replicas, Some(0));
    assert_eq!(s.unavailable_replicas, Some(2));
    assert_eq!(condition(&d, "Available").unwrap().status, "False");
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let restarted = eventually("crash-looping pods restart", || async {
        let list = pods
            .list(&ListParams::default().labels("app=broken"))
            .await
            .ok()?;
        list.items.into_iter().find(|p| {
            let cs = &p
                .status
                .as_ref()
                .and_then(|s| s.container_statuses.clone())
                .unwrap_or_default();
            cs.first().is_some_and(|c| c.restart_count >= 1)
        })
    })
    .await;
    let cs = &restarted.status.unwrap().container_statuses.unwrap()[0];
    assert!(!cs.ready);
    assert_eq!(
        cs.state
            .as_ref()
            .unwrap()
            .waiting
            .as_ref()
            .unwrap()
            .reason
            .as_deref(),
        Some("CrashLoopBackOff")
    );
}

#[tokio::test]
async fn pending_pods_are_marked_unschedulable() {
    let (_plane, client) = start().await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "stuck", "annotations": {"sim.opkit.dev/behavior": "pending"}},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]}
    }))
    .unwrap();
    create(&pods, &pod).await;
    let p = eventually("PodScheduled=False", || async {
        let p = pods.get("stuck").await.ok()?;
        let c = p
            .status
            .as_ref()?
            .conditions
            .as_ref()?
            .iter()
            .find(|c| c.type_ == "PodScheduled")?
            .clone();
        (c.status == "False").then_some((p, c))
    })
    .await;
    assert_eq!(p.1.reason.as_deref(), Some("Unschedulable"));
    assert!(p.0.spec.unwrap().node_name.is_none());
    assert_eq!(p.0.status.unwrap().phase.as_deref(), Some("Pending"));
}

#[tokio::test]
async fn ready_after_annotation_delays_readiness() {
    let (_plane, client) = start().await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "slow", "annotations": {"sim.opkit.dev/ready-after": "1s"}},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]}
    }))
    .unwrap();
    let started = std::time::Instant::now();
    create(&pods, &pod).await;
    eventually("slow pod ready", || async {
        let p = pods.get("slow").await.ok()?;
        (p.status?.phase.as_deref() == Some("Running")).then_some(())
    })
    .await;
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn disabled_workload_controllers_create_nothing() {
    let (_plane, client) = start_with(Settings {
        enabled: "garbage-collector,namespace"
            .parse::<ControllerSet>()
            .unwrap(),
        ..settings()
    })
    .await;
    let api: Api<Deployment> = Api::namespaced(client.clone(), "default");
    create(&api, &deployment("idle", 2, "nginx")).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(replica_sets(&client, "idle").await.is_empty());
    let nodes: Api<Node> = Api::all(client.clone());
    assert!(
        nodes
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
}

#[allow(dead_code)]
fn _types(
    _: (
        DaemonSet,
        StatefulSet,
        Job,
        CronJob,
        Endpoints,
        EndpointSlice,
        Service,
        PersistentVolumeClaim,
    ),
) {
}
