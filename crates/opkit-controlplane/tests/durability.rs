//! Restart durability: what was acknowledged survives a stop and start on the same data dir,
//! and revisions keep increasing.

mod common;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, PostParams};
use opkit_controlplane::{Config, ControlPlane};
use serde_json::json;

fn config(dir: &std::path::Path) -> Config {
    Config {
        data_dir: Some(dir.to_path_buf()),
        listen: "127.0.0.1:0".parse().unwrap(),
        kubeconfig: None,
        history_window: std::time::Duration::from_secs(300),
        controllers: opkit_controlplane::controllers::Settings::default(),
        ..Config::ephemeral()
    }
}

#[tokio::test]
async fn objects_crds_and_revisions_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let last_rv: u64;
    {
        let plane = ControlPlane::start(config(dir.path())).await.unwrap();
        let client = common::client(&plane).await;
        common::install_flight_ticket_crd(&client).await;
        let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
        for i in 0..20 {
            let cm: ConfigMap = serde_json::from_value(
                json!({"metadata": {"name": format!("cm{i}")}, "data": {"i": i.to_string()}}),
            )
            .unwrap();
            cms.create(&PostParams::default(), &cm).await.unwrap();
        }
        let list = cms.list(&ListParams::default()).await.unwrap();
        last_rv = list.metadata.resource_version.unwrap().parse().unwrap();
        plane.shutdown().await;
    }
    let plane = ControlPlane::start(config(dir.path())).await.unwrap();
    let client = common::client(&plane).await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let list = cms.list(&ListParams::default()).await.unwrap();
    assert_eq!(list.items.len(), 20);
    for (i, cm) in list.items.iter().enumerate() {
        let name = cm.metadata.name.clone().unwrap();
        let n: usize = name.trim_start_matches("cm").parse().unwrap();
        assert_eq!(cm.data.as_ref().unwrap()["i"], n.to_string(), "item {i}");
    }
    let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "later"}})).unwrap();
    let created = cms.create(&PostParams::default(), &cm).await.unwrap();
    let rv: u64 = created.metadata.resource_version.unwrap().parse().unwrap();
    assert!(rv > last_rv, "revision {rv} must continue above {last_rv}");
    // The CRD came back and still serves its resource.
    let ar = kube::core::ApiResource::from_gvk_with_plural(
        &kube::core::GroupVersionKind::gvk("flights.com", "v1", "FlightTicket"),
        "flighttickets",
    );
    let tickets: Api<kube::api::DynamicObject> = Api::namespaced_with(client, "default", &ar);
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
async fn a_second_control_plane_on_the_same_data_dir_fails_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let _first = ControlPlane::start(config(dir.path())).await.unwrap();
    let second = ControlPlane::start(config(dir.path())).await;
    let err = second.err().expect("second start fails");
    assert!(err.to_string().contains("in use"), "{err}");
}

#[tokio::test]
async fn watch_from_a_revision_older_than_the_history_gets_410_expired() {
    use futures::StreamExt;
    use kube::api::WatchParams;
    let dir = tempfile::tempdir().unwrap();
    {
        let plane = ControlPlane::start(config(dir.path())).await.unwrap();
        let client = common::client(&plane).await;
        let cms: Api<ConfigMap> = Api::namespaced(client, "default");
        let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "a"}})).unwrap();
        cms.create(&PostParams::default(), &cm).await.unwrap();
        plane.shutdown().await;
    }
    // After a restart the history starts at the current revision: older ones are expired.
    let plane = ControlPlane::start(config(dir.path())).await.unwrap();
    let client = common::client(&plane).await;
    let cms: Api<ConfigMap> = Api::namespaced(client, "default");
    let mut stream = cms
        .watch(&WatchParams::default(), "1")
        .await
        .unwrap()
        .boxed();
    let first = tokio::time::timeout(std::time::Duration::from_secs(5), stream.next())
        .await
        .unwrap()
        .unwrap();
    match first {
        Ok(kube::api::WatchEvent::Error(status)) => {
            assert_eq!(status.code, 410);
            assert_eq!(status.reason, "Expired");
        }
        other => panic!("expected a 410 ERROR event, got {other:?}"),
    }
}
