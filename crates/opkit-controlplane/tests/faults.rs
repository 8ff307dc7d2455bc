//! Fault injection for one client (`opkit_apiserver::faults`) over real HTTPS with kube-rs:
//! the target user's writes are refused, lose their responses or signal a crash at the trace
//! points armed, its watches expire, its reads that allow it are served from an older revision;
//! every other user sees a well-behaved server.

mod common;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use opkit_apiserver::faults::{Action, Fault, FaultStatus, Trigger};
use opkit_controlplane::ControlPlane;

const OPERATOR: &str = "operator-under-test";

async fn operator_client(plane: &ControlPlane) -> kube::Client {
    let groups = vec!["system:masters".to_string()];
    common::client_for_kubeconfig(&plane.user_kubeconfig(OPERATOR, &groups).unwrap()).await
}

fn config_map(name: &str, value: &str) -> ConfigMap {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": name},
        "data": {"k": value}
    }))
    .unwrap()
}

fn arm(plane: &ControlPlane, trigger: Trigger, action: Action) {
    plane
        .server()
        .faults()
        .arm(Fault { trigger, action })
        .expect("the fault fits its trigger");
}

#[tokio::test]
async fn the_targets_writes_are_refused_or_lose_their_responses_at_the_armed_points() {
    let (plane, admin) = common::start_with_client().await;
    let faults = plane.server().faults();
    faults.target(OPERATOR);
    // kube-rs retries 429, 503 and 504 by itself: a conflict and an internal error reach the
    // caller.
    arm(
        &plane,
        Trigger::Write(1),
        Action::Refuse(FaultStatus::Conflict),
    );
    arm(
        &plane,
        Trigger::Write(2),
        Action::LoseResponse(FaultStatus::InternalError),
    );
    let op: Api<ConfigMap> = Api::namespaced(operator_client(&plane).await, "default");
    let seen: Api<ConfigMap> = Api::namespaced(admin.clone(), "default");

    // Refused before committing: nothing is stored.
    let err = op
        .create(&PostParams::default(), &config_map("a", "1"))
        .await
        .unwrap_err();
    assert_eq!(common::api_status(err).code, 409);
    assert!(seen.get_opt("a").await.unwrap().is_none());

    // The retry commits (write 1); the next write commits but its answer is lost.
    op.create(&PostParams::default(), &config_map("a", "1"))
        .await
        .unwrap();
    let patch = Patch::Merge(serde_json::json!({"data": {"k": "2"}}));
    let err = op
        .patch("a", &PatchParams::default(), &patch)
        .await
        .unwrap_err();
    assert_eq!(common::api_status(err).code, 500);
    let stored = seen.get("a").await.unwrap();
    assert_eq!(stored.data.unwrap()["k"], "2", "the write happened");

    // Another user's writes are neither traced nor perturbed.
    seen.create(&PostParams::default(), &config_map("b", "1"))
        .await
        .unwrap();
    let trace = faults.trace();
    let verbs: Vec<(&str, Option<&str>, u16)> = trace
        .writes
        .iter()
        .map(|w| (w.verb.as_str(), w.name.as_deref(), w.code))
        .collect();
    assert_eq!(
        verbs,
        [("create", Some("a"), 201), ("patch", Some("a"), 200)]
    );
    let fired: Vec<u16> = faults.fired().iter().map(|f| f.entry.code).collect();
    assert_eq!(
        fired,
        [409, 200],
        "the refusal's code, then the committed patch's"
    );
    plane.shutdown().await;
}

#[tokio::test]
async fn a_crash_is_signalled_after_the_armed_write_commits() {
    let (plane, admin) = common::start_with_client().await;
    let faults = plane.server().faults();
    faults.target(OPERATOR);
    arm(&plane, Trigger::Write(2), Action::Crash);
    let mut crashes = faults.crashes();
    let op: Api<ConfigMap> = Api::namespaced(operator_client(&plane).await, "default");
    op.create(&PostParams::default(), &config_map("a", "1"))
        .await
        .unwrap();
    assert_eq!(
        *crashes.borrow_and_update(),
        0,
        "no crash on the first write"
    );
    op.create(&PostParams::default(), &config_map("b", "1"))
        .await
        .expect("the crashing write is answered");
    crashes.changed().await.expect("the crash is signalled");
    assert_eq!(*crashes.borrow(), 1);
    let seen: Api<ConfigMap> = Api::namespaced(admin, "default");
    assert!(seen.get_opt("b").await.unwrap().is_some());
    plane.shutdown().await;
}

#[tokio::test]
async fn an_expired_watch_ends_with_410_after_the_armed_number_of_events() {
    let (plane, admin) = common::start_with_client().await;
    let faults = plane.server().faults();
    faults.target(OPERATOR);
    arm(
        &plane,
        Trigger::Watch(1),
        Action::ExpireWatch { after_events: 1 },
    );
    let seen: Api<ConfigMap> = Api::namespaced(admin, "default");
    seen.create(&PostParams::default(), &config_map("a", "1"))
        .await
        .unwrap();
    let op: Api<ConfigMap> = Api::namespaced(operator_client(&plane).await, "default");
    let stream = op
        .watch(&WatchParams::default().disable_bookmarks(), "0")
        .await
        .unwrap();
    let events: Vec<_> = stream.try_collect().await.expect("the watch ends cleanly");
    assert_eq!(events.len(), 2, "one event, then the expiry: {events:?}");
    assert!(
        matches!(&events[0], WatchEvent::Added(cm) if cm.metadata.name.as_deref() == Some("a"))
    );
    match &events[1] {
        WatchEvent::Error(status) => {
            assert_eq!((status.code, status.reason.as_str()), (410, "Expired"))
        }
        other => panic!("expected the expiry, got {other:?}"),
    }
    // The relist's watch is not perturbed.
    let mut again = op
        .watch(&WatchParams::default(), "0")
        .await
        .unwrap()
        .boxed();
    assert!(matches!(again.next().await, Some(Ok(WatchEvent::Added(_)))));
    assert_eq!(faults.trace().watches.len(), 2);
    plane.shutdown().await;
}

#[tokio::test]
async fn a_stale_restart_answers_the_first_read_that_allows_any_revision_from_before_the_named_write()
 {
    use k8s_openapi::api::core::v1::Secret;
    use kube::api::{GetParams, ListParams};
    let (plane, admin) = common::start_with_client().await;
    let faults = plane.server().faults();
    faults.target(OPERATOR);
    arm(
        &plane,
        Trigger::Write(2),
        Action::StaleRestart {
            view_before_write: 1,
        },
    );
    let mut crashes = faults.crashes();
    let seen: Api<ConfigMap> = Api::namespaced(admin.clone(), "default");
    let secrets: Api<Secret> = Api::namespaced(admin, "default");
    let secret = |v: &str| -> Secret {
        let data = serde_json::json!({"k": if v == "1" { "MQ==" } else { "Mg==" }});
        serde_json::from_value(serde_json::json!({"metadata": {"name": "s"}, "data": data}))
            .unwrap()
    };
    seen.create(&PostParams::default(), &config_map("a", "1"))
        .await
        .unwrap();
    secrets
        .create(&PostParams::default(), &secret("1"))
        .await
        .unwrap();
    let client = operator_client(&plane).await;
    let op: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let op_secrets: Api<Secret> = Api::namespaced(client, "default");
    op.create(&PostParams::default(), &config_map("x", "1"))
        .await
        .unwrap();
    let patch = Patch::Merge(serde_json::json!({"data": {"k": "2"}}));
    seen.patch("a", &PatchParams::default(), &patch)
        .await
        .unwrap();
    secrets
        .replace("s", &PostParams::default(), &secret("2"))
        .await
        .unwrap();
    op.create(&PostParams::default(), &config_map("y", "1"))
        .await
        .unwrap();
    crashes.changed().await.expect("the restart is signalled");
    // Until the runner has killed the old process the server refuses its requests; the
    // restarted operator's are served again (the first of them from the stale view).
    faults.restarted();

    let names = |list: &kube::core::ObjectList<ConfigMap>| {
        list.items
            .iter()
            .map(|cm| {
                format!(
                    "{}={}",
                    cm.metadata.name.as_deref().unwrap(),
                    cm.data.as_ref().unwrap()["k"]
                )
            })
            .collect::<Vec<_>>()
    };
    let any = ListParams::default().match_any();
    // Another user, and a read of the latest state, are never stale.
    assert_eq!(
        names(&seen.list(&any).await.unwrap()),
        ["a=2", "x=1", "y=1"]
    );
    assert_eq!(
        names(&op.list(&ListParams::default()).await.unwrap()),
        ["a=2", "x=1", "y=1"]
    );
    // The first read allowing any revision sees the store as it was before write 1.
    let stale = op.list(&any).await.unwrap();
    assert_eq!(names(&stale), ["a=1"]);
    let fresh = op.list(&any).await.unwrap();
    assert_eq!(names(&fresh), ["a=2", "x=1", "y=1"], "once per resource");
    let rv = |list: &kube::core::ObjectList<ConfigMap>| -> u64 {
        list.metadata
            .resource_version
            .as_deref()
            .unwrap()
            .parse()
            .unwrap()
    };
    assert!(rv(&stale) < rv(&fresh), "the stale list says how old it is");
    // A get is served so too, per resource.
    let value = |s: Secret| String::from_utf8(s.data.unwrap()["k"].0.clone()).unwrap();
    assert_eq!(
        value(op_secrets.get_with("s", &GetParams::any()).await.unwrap()),
        "1"
    );
    assert_eq!(
        value(op_secrets.get_with("s", &GetParams::any()).await.unwrap()),
        "2"
    );
    plane.shutdown().await;
}
