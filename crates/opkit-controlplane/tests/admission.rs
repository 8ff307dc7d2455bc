//! The admission stage: plugins an embedder passes in `Config::admission` see every write
//! after the kind's strategy and before storage, may change the object, and may refuse it.

mod common;

use std::sync::{Arc, Mutex};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, PostParams};
use opkit_apiserver::{AdmissionPlugin, AdmissionRequest, Operation};
use opkit_controlplane::{Config, ControlPlane};
use serde_json::Value;

/// Stamps ConfigMaps it admits and refuses those labelled `deny: "yes"`; remembers what it saw.
#[derive(Debug, Default)]
struct Stamp {
    seen: Mutex<Vec<(Operation, String, bool)>>,
}

impl AdmissionPlugin for Stamp {
    fn admit(&self, request: &AdmissionRequest<'_>, obj: &mut Value) -> Result<(), String> {
        if request.resource != "configmaps" {
            return Ok(());
        }
        self.seen.lock().unwrap().push((
            request.operation,
            request.name.to_string(),
            request.dry_run,
        ));
        if obj.pointer("/metadata/labels/deny").and_then(Value::as_str) == Some("yes") {
            return Err("labelled deny".into());
        }
        if request.operation != Operation::Delete {
            obj["metadata"]["annotations"]["admitted-by"] = "stamp".into();
        }
        Ok(())
    }
}

fn config_map(name: &str, labels: &[(&str, &str)]) -> ConfigMap {
    serde_json::from_value(serde_json::json!({
        "metadata": {
            "name": name,
            "labels": labels.iter().map(|(k, v)| (k.to_string(), Value::from(*v))).collect::<serde_json::Map<_, _>>(),
        },
        "data": {"k": "v"},
    }))
    .unwrap()
}

#[tokio::test]
async fn admission_plugins_mutate_and_refuse_writes_before_they_are_stored() {
    let stamp = Arc::new(Stamp::default());
    let plane = ControlPlane::start(Config {
        admission: vec![stamp.clone()],
        ..Config::ephemeral()
    })
    .await
    .expect("control plane starts");
    let client = common::client(&plane).await;
    let cms: Api<ConfigMap> = Api::namespaced(client, "default");

    let created = cms
        .create(&PostParams::default(), &config_map("ok", &[]))
        .await
        .expect("an admitted create is stored");
    let annotation = |cm: &ConfigMap| {
        cm.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get("admitted-by"))
            .cloned()
    };
    assert_eq!(annotation(&created).as_deref(), Some("stamp"));
    let stored = cms.get("ok").await.unwrap();
    assert_eq!(
        annotation(&stored).as_deref(),
        Some("stamp"),
        "the mutation is stored"
    );

    let refused = cms
        .create(
            &PostParams::default(),
            &config_map("no", &[("deny", "yes")]),
        )
        .await
        .expect_err("a refused create fails");
    match refused {
        kube::Error::Api(status) => {
            assert_eq!(status.code, 403, "{status:?}");
            assert!(
                status.message.contains("labelled deny"),
                "{}",
                status.message
            );
        }
        other => panic!("unexpected error: {other}"),
    }
    assert!(
        cms.get_opt("no").await.unwrap().is_none(),
        "nothing was stored"
    );

    let mut update = stored.clone();
    update.metadata.labels = Some([("deny".to_string(), "yes".to_string())].into());
    cms.replace("ok", &PostParams::default(), &update)
        .await
        .expect_err("a refused update fails");
    let dry = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    cms.create(&dry, &config_map("dry", &[])).await.unwrap();
    cms.delete("ok", &DeleteParams::default()).await.unwrap();

    let seen = stamp.seen.lock().unwrap().clone();
    let expected = [
        (Operation::Create, "ok".to_string(), false),
        (Operation::Create, "no".to_string(), false),
        (Operation::Update, "ok".to_string(), false),
        (Operation::Create, "dry".to_string(), true),
        (Operation::Delete, "ok".to_string(), false),
    ];
    assert_eq!(seen, expected);
    plane.shutdown().await;
}
