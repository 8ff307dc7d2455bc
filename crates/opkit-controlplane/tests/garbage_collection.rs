//! The garbage collector and the namespace life cycle, end to end with kube-rs over HTTPS:
//! cascading deletion (Background, Foreground, Orphan, deletecollection), owner-reference
//! rules across scopes, and namespace termination.

mod common;

use opkit_testenv::{eventually, settle};
use std::time::Instant;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Event as CoreEvent, Namespace, Secret};
use k8s_openapi::api::rbac::v1::ClusterRole;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch,
    PatchParams, PostParams, ResourceExt,
};
use opkit_controlplane::ControlPlane;
use opkit_controlplane::controllers::{Controller, ControllerSet, Settings};
use serde_json::json;

/// A control plane running only `controllers`.
async fn start_with(controllers: ControllerSet) -> (ControlPlane, kube::Client) {
    common::start_with_controllers(Settings {
        enabled: controllers,
        ..Settings::default()
    })
    .await
}

/// A control plane with the garbage collector and the namespace controller.
async fn start() -> (ControlPlane, kube::Client) {
    start_with(
        ControllerSet::none()
            .with(Controller::GarbageCollector)
            .with(Controller::Namespace),
    )
    .await
}

fn owner_ref(api_version: &str, kind: &str, name: &str, uid: &str) -> OwnerReference {
    OwnerReference {
        api_version: api_version.into(),
        kind: kind.into(),
        name: name.into(),
        uid: uid.into(),
        ..OwnerReference::default()
    }
}

fn configmap(name: &str, owners: Vec<OwnerReference>) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.into());
    if !owners.is_empty() {
        cm.metadata.owner_references = Some(owners);
    }
    cm
}

fn ref_to(cm: &ConfigMap) -> OwnerReference {
    owner_ref(
        "v1",
        "ConfigMap",
        &cm.name_any(),
        &cm.uid().unwrap_or_default(),
    )
}

async fn create_cm(api: &Api<ConfigMap>, name: &str, owners: Vec<OwnerReference>) -> ConfigMap {
    api.create(&PostParams::default(), &configmap(name, owners))
        .await
        .unwrap_or_else(|e| panic!("configmap {name} is created: {e}"))
}

async fn gone<K>(api: &Api<K>, name: &str) -> Option<()>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    match api.get_opt(name).await.expect("get works") {
        None => Some(()),
        Some(_) => None,
    }
}

fn flight_tickets(client: &kube::Client, ns: &str) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("flights.com", "v1", "FlightTicket"),
        "flighttickets",
    );
    Api::namespaced_with(client.clone(), ns, &ar)
}

async fn create_ticket(api: &Api<DynamicObject>, name: &str) -> DynamicObject {
    let obj: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "flights.com/v1",
        "kind": "FlightTicket",
        "metadata": {"name": name},
        "spec": {"from": "AMS", "to": "SFO", "number": 1}
    }))
    .expect("ticket parses");
    api.create(&PostParams::default(), &obj)
        .await
        .expect("ticket is created")
}

#[tokio::test]
async fn background_deletion_removes_dependents_of_every_kind() {
    let (_plane, client) = start().await;
    common::install_flight_ticket_crd(&client).await;
    let tickets = flight_tickets(&client, "default");
    let ticket = create_ticket(&tickets, "owner").await;
    let owner = owner_ref(
        "flights.com/v1",
        "FlightTicket",
        "owner",
        &ticket.uid().unwrap_or_default(),
    );
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "default");
    for i in 0..3 {
        create_cm(&cms, &format!("child-{i}"), vec![owner.clone()]).await;
    }
    let mut secret = Secret::default();
    secret.metadata.name = Some("child-secret".into());
    secret.metadata.owner_references = Some(vec![owner.clone()]);
    secrets
        .create(&PostParams::default(), &secret)
        .await
        .expect("secret is created");
    let unrelated = create_cm(&cms, "unrelated", vec![]).await;

    tickets
        .delete("owner", &DeleteParams::default())
        .await
        .expect("owner is deleted");
    for i in 0..3 {
        let name = format!("child-{i}");
        eventually("configmap dependents to go", || gone(&cms, &name)).await;
    }
    eventually("the secret dependent to go", || {
        gone(&secrets, "child-secret")
    })
    .await;
    assert!(cms.get_opt(&unrelated.name_any()).await.unwrap().is_some());
}

#[tokio::test]
async fn a_dependent_with_another_live_owner_survives_and_loses_the_dangling_reference() {
    let (_plane, client) = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let a = create_cm(&cms, "owner-a", vec![]).await;
    let b = create_cm(&cms, "owner-b", vec![]).await;
    create_cm(&cms, "shared", vec![ref_to(&a), ref_to(&b)]).await;

    cms.delete("owner-a", &DeleteParams::background())
        .await
        .expect("owner-a is deleted");
    let refs = eventually("the dangling reference to be removed", || async {
        let cm = cms.get("shared").await.expect("the dependent survives");
        let refs = cm.metadata.owner_references.unwrap_or_default();
        (refs.len() == 1).then_some(refs)
    })
    .await;
    assert_eq!(refs[0].name, "owner-b");
}

#[tokio::test]
async fn foreground_deletion_keeps_the_owner_until_blocking_dependents_are_gone() {
    let (_plane, client) = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let owner = create_cm(&cms, "fg-owner", vec![]).await;
    let mut blocking = ref_to(&owner);
    blocking.block_owner_deletion = Some(true);
    let mut held = configmap("fg-held", vec![blocking]);
    held.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    cms.create(&PostParams::default(), &held)
        .await
        .expect("held dependent is created");
    create_cm(&cms, "fg-plain", vec![ref_to(&owner)]).await;

    cms.delete("fg-owner", &DeleteParams::foreground())
        .await
        .expect("owner deletion starts");
    let deleting = cms.get("fg-owner").await.expect("owner is still there");
    assert!(deleting.metadata.deletion_timestamp.is_some());
    assert!(
        deleting
            .finalizers()
            .iter()
            .any(|f| f == "foregroundDeletion")
    );

    eventually("the held dependent to be deleting", || async {
        let cm = cms.get("fg-held").await.expect("held dependent exists");
        cm.metadata.deletion_timestamp.map(|_| ())
    })
    .await;
    eventually("the plain dependent to go", || gone(&cms, "fg-plain")).await;
    assert!(
        cms.get_opt("fg-owner").await.unwrap().is_some(),
        "the owner waits for its blocking dependent"
    );

    let release = json!({"metadata": {"finalizers": null}});
    cms.patch("fg-held", &PatchParams::default(), &Patch::Merge(&release))
        .await
        .expect("hold is released");
    eventually("the held dependent to go", || gone(&cms, "fg-held")).await;
    eventually("the owner to go", || gone(&cms, "fg-owner")).await;
}

#[tokio::test]
async fn orphan_deletion_strips_owner_references_and_keeps_dependents() {
    let (_plane, client) = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let owner = create_cm(&cms, "orphan-owner", vec![]).await;
    for i in 0..3 {
        create_cm(&cms, &format!("orphan-{i}"), vec![ref_to(&owner)]).await;
    }
    cms.delete("orphan-owner", &DeleteParams::orphan())
        .await
        .expect("owner deletion starts");
    eventually("the owner to go", || gone(&cms, "orphan-owner")).await;
    for i in 0..3 {
        let cm = cms
            .get(&format!("orphan-{i}"))
            .await
            .expect("the dependent is kept");
        assert!(
            cm.metadata.owner_references.unwrap_or_default().is_empty(),
            "the reference is gone"
        );
    }
}

#[tokio::test]
async fn deletecollection_propagates_to_the_dependents_of_every_owner() {
    let (_plane, client) = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    for i in 0..3 {
        let mut owner = configmap(&format!("batch-owner-{i}"), vec![]);
        owner.metadata.labels = Some([("batch".to_string(), "yes".to_string())].into());
        let owner = cms.create(&PostParams::default(), &owner).await.unwrap();
        let mut r = ref_to(&owner);
        r.block_owner_deletion = Some(true);
        create_cm(&cms, &format!("batch-child-{i}"), vec![r]).await;
    }
    cms.delete_collection(
        &DeleteParams::foreground(),
        &ListParams::default().labels("batch=yes"),
    )
    .await
    .expect("collection deletion starts");
    for i in 0..3 {
        let child = format!("batch-child-{i}");
        let owner = format!("batch-owner-{i}");
        eventually("the dependents to go", || gone(&cms, &child)).await;
        eventually("the owners to go", || gone(&cms, &owner)).await;
    }
}

#[tokio::test]
async fn a_cluster_scoped_owner_collects_namespaced_dependents() {
    let (_plane, client) = start().await;
    let roles: Api<ClusterRole> = Api::all(client.clone());
    let mut role = ClusterRole::default();
    role.metadata.name = Some("gc-owner".into());
    let role = roles
        .create(&PostParams::default(), &role)
        .await
        .expect("cluster role is created");
    let owner = owner_ref(
        "rbac.authorization.k8s.io/v1",
        "ClusterRole",
        "gc-owner",
        &role.uid().unwrap_or_default(),
    );
    let in_default: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let in_public: Api<ConfigMap> = Api::namespaced(client.clone(), "kube-public");
    create_cm(&in_default, "role-child", vec![owner.clone()]).await;
    create_cm(&in_public, "role-child", vec![owner]).await;

    roles
        .delete("gc-owner", &DeleteParams::default())
        .await
        .expect("cluster role is deleted");
    eventually("the dependent in default to go", || {
        gone(&in_default, "role-child")
    })
    .await;
    eventually("the dependent in kube-public to go", || {
        gone(&in_public, "role-child")
    })
    .await;
}

#[tokio::test]
async fn a_namespaced_owner_of_a_cluster_scoped_object_is_reported_and_left_alone() {
    let (_plane, client) = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let owner = create_cm(&cms, "ns-owner", vec![]).await;
    let roles: Api<ClusterRole> = Api::all(client.clone());
    let mut role = ClusterRole::default();
    role.metadata.name = Some("invalid-dependent".into());
    role.metadata.owner_references = Some(vec![ref_to(&owner)]);
    roles
        .create(&PostParams::default(), &role)
        .await
        .expect("cluster role is created");

    let events: Api<CoreEvent> = Api::namespaced(client.clone(), "default");
    let event = eventually("an OwnerRefInvalidNamespace event", || async {
        let list = events.list(&ListParams::default()).await.expect("list");
        list.items.into_iter().find(|e| {
            e.reason.as_deref() == Some("OwnerRefInvalidNamespace")
                && e.involved_object.name.as_deref() == Some("invalid-dependent")
        })
    })
    .await;
    assert_eq!(event.type_.as_deref(), Some("Warning"));
    assert!(roles.get_opt("invalid-dependent").await.unwrap().is_some());
}

#[tokio::test]
async fn more_than_one_controller_reference_is_invalid() {
    let (_plane, client) = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let a = create_cm(&cms, "ctl-a", vec![]).await;
    let b = create_cm(&cms, "ctl-b", vec![]).await;
    let (mut ra, mut rb) = (ref_to(&a), ref_to(&b));
    ra.controller = Some(true);
    rb.controller = Some(true);
    let err = cms
        .create(
            &PostParams::default(),
            &configmap("ctl-child", vec![ra, rb]),
        )
        .await
        .expect_err("two controllers are refused");
    let kube::Error::Api(status) = err else {
        panic!("an API error: {err}");
    };
    assert_eq!(status.code, 422);
    assert!(
        status
            .message
            .contains("Only one reference can have Controller set to true"),
        "{}",
        status.message
    );
}

#[tokio::test]
async fn deleting_a_job_without_a_policy_orphans_its_dependents() {
    let (_plane, client) = start().await;
    let jobs: Api<Job> = Api::namespaced(client.clone(), "default");
    let job: Job = serde_json::from_value(json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "legacy"},
        "spec": {"template": {"spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "c", "image": "busybox"}]
        }}}
    }))
    .unwrap();
    let job = jobs
        .create(&PostParams::default(), &job)
        .await
        .expect("job is created");
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let owner = owner_ref("batch/v1", "Job", "legacy", &job.uid().unwrap_or_default());
    create_cm(&cms, "job-output", vec![owner]).await;

    jobs.delete("legacy", &DeleteParams::default())
        .await
        .expect("job is deleted");
    eventually("the job to go", || gone(&jobs, "legacy")).await;
    let cm = cms.get("job-output").await.expect("the dependent is kept");
    assert!(cm.metadata.owner_references.unwrap_or_default().is_empty());
}

#[tokio::test]
async fn without_the_garbage_collector_dependents_stay() {
    let (_plane, client) = start_with(ControllerSet::none().with(Controller::Namespace)).await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let owner = create_cm(&cms, "lonely-owner", vec![]).await;
    create_cm(&cms, "lonely-child", vec![ref_to(&owner)]).await;
    cms.delete("lonely-owner", &DeleteParams::background())
        .await
        .expect("owner is deleted");
    eventually("the owner to go", || gone(&cms, "lonely-owner")).await;
    // No controller looks at the dependent, so nothing can signal that it was considered and
    // kept: give a collector that should not be there the time to act.
    settle().await;
    assert!(
        cms.get_opt("lonely-child").await.unwrap().is_some(),
        "the dependent stays without a garbage collector"
    );
}

#[tokio::test]
async fn background_deletion_collects_a_thousand_dependents() {
    let (_plane, client) = start().await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let owner = create_cm(&cms, "big-owner", vec![]).await;
    let r = ref_to(&owner);
    let creates = (0..1000).map(|i| {
        let cms = cms.clone();
        let r = r.clone();
        async move { create_cm(&cms, &format!("big-{i:04}"), vec![r]).await }
    });
    futures::future::join_all(creates).await;

    let started = Instant::now();
    cms.delete("big-owner", &DeleteParams::background())
        .await
        .expect("owner is deleted");
    eventually("a thousand dependents to go", || async {
        let left = cms
            .list_metadata(&ListParams::default())
            .await
            .expect("list")
            .items
            .into_iter()
            .filter(|c| c.name_any().starts_with("big-"))
            .count();
        (left == 0).then_some(())
    })
    .await;
    eprintln!(
        "garbage collection of 1000 dependents: {:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn deleting_a_namespace_empties_it_then_removes_it() {
    let (_plane, client) = start().await;
    common::install_flight_ticket_crd(&client).await;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let mut ns = Namespace::default();
    ns.metadata.name = Some("doomed".into());
    let created = namespaces
        .create(&PostParams::default(), &ns)
        .await
        .expect("namespace is created");
    assert_eq!(
        created.spec.and_then(|s| s.finalizers),
        Some(vec!["kubernetes".to_string()])
    );
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "doomed");
    for i in 0..3 {
        create_cm(&cms, &format!("content-{i}"), vec![]).await;
    }
    let tickets = flight_tickets(&client, "doomed");
    create_ticket(&tickets, "content-ticket").await;

    let answer = namespaces
        .delete("doomed", &DeleteParams::default())
        .await
        .expect("namespace deletion starts");
    let marked = answer.left().expect("the namespace comes back");
    assert!(marked.metadata.deletion_timestamp.is_some());
    assert_eq!(
        marked.status.and_then(|s| s.phase).as_deref(),
        Some("Terminating")
    );
    eventually("the namespace to go", || gone(&namespaces, "doomed")).await;
    assert!(
        cms.list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
    assert!(
        tickets
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
}

#[tokio::test]
async fn a_terminating_namespace_refuses_new_content_and_waits_for_finalizers() {
    let (_plane, client) = start().await;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let mut ns = Namespace::default();
    ns.metadata.name = Some("held".into());
    namespaces
        .create(&PostParams::default(), &ns)
        .await
        .expect("namespace is created");
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "held");
    let mut held = configmap("held-content", vec![]);
    held.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    cms.create(&PostParams::default(), &held).await.unwrap();

    namespaces
        .delete("held", &DeleteParams::default())
        .await
        .expect("namespace deletion starts");
    let conditions = eventually("the remaining-content conditions", || async {
        let ns = namespaces.get("held").await.expect("still terminating");
        let conditions = ns.status.and_then(|s| s.conditions).unwrap_or_default();
        let remaining = conditions
            .iter()
            .any(|c| c.type_ == "NamespaceContentRemaining" && c.status == "True");
        let finalizers = conditions
            .iter()
            .any(|c| c.type_ == "NamespaceFinalizersRemaining" && c.status == "True");
        (remaining && finalizers).then_some(conditions)
    })
    .await;
    let message = conditions
        .iter()
        .find(|c| c.type_ == "NamespaceFinalizersRemaining")
        .and_then(|c| c.message.clone())
        .unwrap_or_default();
    assert_eq!(
        message,
        "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances"
    );

    let err = cms
        .create(&PostParams::default(), &configmap("late", vec![]))
        .await
        .expect_err("no new content in a terminating namespace");
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 403),
        "{err}"
    );

    let release = json!({"metadata": {"finalizers": null}});
    cms.patch(
        "held-content",
        &PatchParams::default(),
        &Patch::Merge(&release),
    )
    .await
    .expect("hold is released");
    eventually("the namespace to go", || gone(&namespaces, "held")).await;
}

#[tokio::test]
async fn the_default_namespace_cannot_be_deleted() {
    let (_plane, client) = start().await;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    for name in ["default", "kube-system", "kube-public"] {
        let err = namespaces
            .delete(name, &DeleteParams::default())
            .await
            .expect_err("refused");
        let kube::Error::Api(status) = err else {
            panic!("an API error: {err}");
        };
        assert_eq!(status.code, 403);
        assert_eq!(
            status.message,
            format!("namespaces \"{name}\" is forbidden: this namespace may not be deleted")
        );
    }
    let ns = namespaces.get("default").await.expect("default is there");
    assert!(ns.metadata.deletion_timestamp.is_none());
}
