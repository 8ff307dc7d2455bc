//! The simulated workload controllers, driven through kube-rs against an in-process control
//! plane: Deployments roll out, StatefulSets create ordinals, Jobs complete, Services get
//! endpoints, and the failure-injection annotations keep things unavailable.

mod common;

use opkit_testenv::{eventually, settle};
use std::time::Duration;

use k8s_openapi::api::apps::v1::{
    ControllerRevision, DaemonSet, Deployment, ReplicaSet, StatefulSet,
};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::{Endpoints, Node, PersistentVolumeClaim, Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use opkit_controlplane::ControlPlane;
use opkit_controlplane::controllers::{Clock, ControllerSet, Settings};
use serde_json::json;

fn settings() -> Settings {
    Settings {
        pod_ready_delay: Duration::from_millis(20),
        pod_complete_delay: Duration::from_millis(200),
        clock: Clock::ahead(Duration::from_secs(61)),
        ..Settings::default()
    }
}

async fn start() -> (ControlPlane, kube::Client) {
    common::start_with_controllers(settings()).await
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
    let (_plane, client) = common::start_with_controllers(Settings {
        enabled: "garbage-collector,namespace"
            .parse::<ControllerSet>()
            .unwrap(),
        ..settings()
    })
    .await;
    let api: Api<Deployment> = Api::namespaced(client.clone(), "default");
    create(&api, &deployment("idle", 2, "nginx")).await;
    // No running controller watches Deployments, so nothing can signal that this one was
    // seen and left alone: give a controller that should not run the time to act.
    settle().await;
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

#[tokio::test]
async fn statefulset_creates_ordinals_in_order_with_claims() {
    let (_plane, client) = start().await;
    let api: Api<StatefulSet> = Api::namespaced(client.clone(), "default");
    let sts: StatefulSet = serde_json::from_value(json!({
        "metadata": {"name": "db"},
        "spec": {
            "replicas": 3, "serviceName": "db",
            "selector": {"matchLabels": {"app": "db"}},
            "template": {"metadata": {"labels": {"app": "db"}},
                "spec": {"containers": [{"name": "db", "image": "postgres:16"}]}},
            "volumeClaimTemplates": [{"metadata": {"name": "data"},
                "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]
        }
    }))
    .unwrap();
    create(&api, &sts).await;
    let done = eventually("statefulset ready", || async {
        let s = api.get("db").await.ok()?;
        let st = s.status.clone()?;
        (st.ready_replicas == Some(3)
            && st.updated_replicas == Some(3)
            && st.current_revision == st.update_revision)
            .then_some(s)
    })
    .await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let mut created = Vec::new();
    for i in 0..3 {
        let p = pods.get(&format!("db-{i}")).await.expect("ordinal pod");
        created.push(p.metadata.creation_timestamp.clone().unwrap().0);
        let claim = &p.spec.unwrap().volumes.unwrap()[0];
        assert_eq!(
            claim.persistent_volume_claim.as_ref().unwrap().claim_name,
            format!("data-db-{i}")
        );
    }
    assert!(
        created.windows(2).all(|w| w[0] <= w[1]),
        "ordinals in order"
    );
    // One template, one revision: the pods were never rolled for nothing.
    let revisions: Api<ControllerRevision> = Api::namespaced(client.clone(), "default");
    let names: Vec<String> = revisions
        .list(&ListParams::default().labels("app=db"))
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|r| r.metadata.name)
        .collect();
    assert_eq!(names.len(), 1, "one ControllerRevision: {names:?}");
    let pvcs: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), "default");
    let pvc = pvcs.get("data-db-2").await.expect("claim exists");
    assert_eq!(pvc.status.unwrap().phase.as_deref(), Some("Bound"));
    assert!(
        done.status
            .unwrap()
            .update_revision
            .unwrap()
            .starts_with("db-")
    );

    api.patch(
        "db",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"replicas": 1}})),
    )
    .await
    .unwrap();
    eventually("scaled down to db-0", || async {
        let list = pods
            .list(&ListParams::default().labels("app=db"))
            .await
            .ok()?;
        let names: Vec<_> = list
            .items
            .iter()
            .filter_map(|p| p.metadata.name.clone())
            .collect();
        (names == ["db-0"]).then_some(())
    })
    .await;
}

#[tokio::test]
async fn statefulset_rolling_update_moves_current_revision() {
    let (_plane, client) = start().await;
    let api: Api<StatefulSet> = Api::namespaced(client.clone(), "default");
    let sts: StatefulSet = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {"replicas": 2, "serviceName": "web", "selector": {"matchLabels": {"app": "sweb"}},
            "template": {"metadata": {"labels": {"app": "sweb"}},
                "spec": {"containers": [{"name": "c", "image": "nginx:1"}]}}}
    }))
    .unwrap();
    create(&api, &sts).await;
    let first = eventually("ready", || async {
        let st = api.get("web").await.ok()?.status?;
        (st.ready_replicas == Some(2)).then_some(st.update_revision?)
    })
    .await;
    let patch = json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "nginx:2"}]}}}});
    api.patch("web", &PatchParams::default(), &Patch::Strategic(patch))
        .await
        .unwrap();
    eventually("rolled", || async {
        let st = api.get("web").await.ok()?.status?;
        (st.update_revision.as_ref() != Some(&first)
            && st.current_revision == st.update_revision
            && st.updated_replicas == Some(2)
            && st.ready_replicas == Some(2))
        .then_some(())
    })
    .await;
}

#[tokio::test]
async fn daemonset_runs_one_pod_on_the_node() {
    let (_plane, client) = start().await;
    let api: Api<DaemonSet> = Api::namespaced(client.clone(), "default");
    let ds: DaemonSet = serde_json::from_value(json!({
        "metadata": {"name": "agent"},
        "spec": {"selector": {"matchLabels": {"app": "agent"}},
            "template": {"metadata": {"labels": {"app": "agent"}},
                "spec": {"containers": [{"name": "a", "image": "agent:1"}]}}}
    }))
    .unwrap();
    create(&api, &ds).await;
    eventually("daemonset available", || async {
        let st = api.get("agent").await.ok()?.status?;
        (st.desired_number_scheduled == 1
            && st.number_available == Some(1)
            && st.updated_number_scheduled == Some(1))
        .then_some(())
    })
    .await;
    let patch = json!({"spec": {"template": {"spec": {"containers": [{"name": "a", "image": "agent:2"}]}}}});
    api.patch("agent", &PatchParams::default(), &Patch::Strategic(patch))
        .await
        .unwrap();
    eventually("daemonset updated", || async {
        let ds = api.get("agent").await.ok()?;
        let st = ds.status?;
        let pods = ready_pods(&client, "app=agent").await;
        (st.observed_generation == ds.metadata.generation
            && st.updated_number_scheduled == Some(1)
            && st.number_available == Some(1)
            && pods.len() == 1
            && pods[0].spec.as_ref()?.containers[0].image.as_deref() == Some("agent:2"))
        .then_some(())
    })
    .await;
}

fn job(name: &str, completions: i32, annotations: serde_json::Value) -> Job {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"completions": completions, "parallelism": 2, "backoffLimit": 1,
            "template": {"metadata": {"annotations": annotations},
                "spec": {"restartPolicy": "Never", "containers": [{"name": "j", "image": "busybox"}]}}}
    }))
    .unwrap()
}

fn job_condition(j: &Job, type_: &str) -> Option<k8s_openapi::api::batch::v1::JobCondition> {
    j.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == type_ && c.status == "True")
        .cloned()
}

#[tokio::test]
async fn job_completes_after_its_pods_succeed() {
    let (_plane, client) = start().await;
    let api: Api<Job> = Api::namespaced(client.clone(), "default");
    create(&api, &job("work", 3, json!({}))).await;
    let j = eventually("job complete", || async {
        let j = api.get("work").await.ok()?;
        job_condition(&j, "Complete").map(|_| j)
    })
    .await;
    assert!(job_condition(&j, "SuccessCriteriaMet").is_some());
    let s = j.status.unwrap();
    assert_eq!(s.succeeded, Some(3));
    assert_eq!(s.active, Some(0));
    assert!(s.start_time.is_some() && s.completion_time.is_some());
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let list = pods
        .list(&ListParams::default().labels("batch.kubernetes.io/job-name=work"))
        .await
        .unwrap();
    assert_eq!(list.items.len(), 3);
    let cs = &list.items[0]
        .status
        .as_ref()
        .unwrap()
        .container_statuses
        .as_ref()
        .unwrap()[0];
    let term = cs.state.as_ref().unwrap().terminated.as_ref().unwrap();
    assert_eq!(
        (term.exit_code, term.reason.as_deref()),
        (0, Some("Completed"))
    );
}

#[tokio::test]
async fn job_fails_after_backoff_limit_with_the_fail_annotation() {
    let (_plane, client) = start().await;
    let api: Api<Job> = Api::namespaced(client.clone(), "default");
    create(
        &api,
        &job("doomed", 1, json!({"sim.opkit.dev/behavior": "fail"})),
    )
    .await;
    let j = eventually("job failed", || async {
        let j = api.get("doomed").await.ok()?;
        job_condition(&j, "Failed").map(|_| j)
    })
    .await;
    let failed = job_condition(&j, "Failed").unwrap();
    assert_eq!(failed.reason.as_deref(), Some("BackoffLimitExceeded"));
    assert_eq!(j.status.unwrap().failed, Some(2));
}

#[tokio::test]
async fn cronjob_creates_a_job_on_schedule() {
    let (_plane, client) = start().await;
    let api: Api<CronJob> = Api::namespaced(client.clone(), "default");
    let cj: CronJob = serde_json::from_value(json!({
        "metadata": {"name": "tick"},
        "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": {
            "spec": {"restartPolicy": "OnFailure", "containers": [{"name": "t", "image": "busybox"}]}}}}}
    }))
    .unwrap();
    create(&api, &cj).await;
    let jobs: Api<Job> = Api::namespaced(client.clone(), "default");
    let job = eventually("a job from the cronjob", || async {
        jobs.list(&ListParams::default())
            .await
            .ok()?
            .items
            .into_iter()
            .next()
    })
    .await;
    let name = job.metadata.name.unwrap();
    let minutes: i64 = name
        .strip_prefix("tick-")
        .unwrap()
        .parse()
        .expect("scheduled minutes");
    assert!(minutes > 28_000_000, "{name}");
    eventually("lastScheduleTime and lastSuccessfulTime", || async {
        let st = api.get("tick").await.ok()?.status?;
        (st.last_schedule_time.is_some() && st.last_successful_time.is_some()).then_some(())
    })
    .await;
}

#[tokio::test]
async fn service_endpoints_list_ready_pods() {
    let (_plane, client) = start().await;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
    create(&deployments, &deployment("api", 2, "api:1")).await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let unready: Pod = serde_json::from_value(json!({
        "metadata": {"name": "api-unready", "labels": {"app": "api"},
            "annotations": {"sim.opkit.dev/behavior": "never-ready"}},
        "spec": {"containers": [{"name": "app", "image": "api:1", "ports": [{"name": "http", "containerPort": 8080}]}]}
    }))
    .unwrap();
    create(&pods, &unready).await;
    let services: Api<Service> = Api::namespaced(client.clone(), "default");
    let svc: Service = serde_json::from_value(json!({
        "metadata": {"name": "api"},
        "spec": {"selector": {"app": "api"}, "ports": [{"name": "web", "port": 80, "targetPort": "http"}]}
    }))
    .unwrap();
    create(&services, &svc).await;
    let endpoints: Api<Endpoints> = Api::namespaced(client.clone(), "default");
    let ep = eventually("2 ready and 1 not-ready address", || async {
        let ep = endpoints.get("api").await.ok()?;
        let subset = ep.subsets.clone()?.into_iter().next()?;
        (subset.addresses.as_ref().map(Vec::len) == Some(2)
            && subset.not_ready_addresses.as_ref().map(Vec::len) == Some(1))
        .then_some(subset)
    })
    .await;
    assert_eq!(ep.ports.unwrap()[0].port, 8080, "named targetPort resolved");
    let slices: Api<EndpointSlice> = Api::namespaced(client.clone(), "default");
    let list = slices
        .list(&ListParams::default().labels("kubernetes.io/service-name=api"))
        .await
        .unwrap();
    let slice = &list.items[0];
    assert_eq!(slice.endpoints.len(), 3);
    assert_eq!(
        slice
            .endpoints
            .iter()
            .filter(|e| e.conditions.as_ref().unwrap().ready == Some(true))
            .count(),
        2
    );
    assert_eq!(
        slice.metadata.labels.as_ref().unwrap()["endpointslice.kubernetes.io/managed-by"],
        "endpointslice-controller.k8s.io"
    );
}
