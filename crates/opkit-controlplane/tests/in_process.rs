//! The in-process client: requests served by the API server in the same process, through the
//! same stack as HTTPS clients.

mod common;

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, ListParams, PostParams};

#[tokio::test]
async fn in_process_client_reads_and_writes_through_the_api() {
    let plane = common::start().await;
    let client = opkit_controlplane::in_process_client(plane.server(), plane.token(), "test-agent");
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let names: Vec<String> = namespaces
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|n| n.metadata.name)
        .collect();
    assert!(names.contains(&"kube-system".to_string()), "{names:?}");

    let cms: Api<ConfigMap> = Api::namespaced(client, "default");
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some("c1".into());
    let created = cms.create(&PostParams::default(), &cm).await.unwrap();
    assert!(created.metadata.resource_version.is_some());
    let err = cms.create(&PostParams::default(), &cm).await.unwrap_err();
    assert!(matches!(err, kube::Error::Api(s) if s.code == 409));
}
