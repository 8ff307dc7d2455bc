//! Helm compatibility, checked with the real `helm` v4 binary against a real control plane:
//! helm reads the releases opkit writes (`list`, `history`, `status`, `get values`,
//! `get manifest`) and upgrades them, and opkit reads, round-trips and upgrades a release
//! `helm install` wrote (adoption).

mod common;

use base64::Engine as _;
use common::{APP_CHART, chart_dir, env, helm_ok, values};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::Api;
use opkit_chart_operator::storage::decode_release;
use opkit_chart_operator::{EnsureOptions, Outcome, Releases, Status};
use serde_json::{Value, json};
use std::io::Read;

fn parse(out: &str) -> Value {
    serde_json::from_str(out).unwrap_or_else(|e| panic!("helm printed no JSON ({e}):\n{out}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn helm_lists_shows_and_upgrades_releases_written_by_opkit() {
    let env = env().await;
    let (dir, chart) = chart_dir(APP_CHART);
    let work = tempfile::tempdir().unwrap();
    let releases = Releases::new(env.client(), "default");
    let opts = EnsureOptions::default();
    releases
        .ensure("demo", &chart, &values(json!({})), &opts)
        .await
        .unwrap();
    let upgraded = releases
        .ensure("demo", &chart, &values(json!({"message": "bye"})), &opts)
        .await
        .unwrap();
    let rel = upgraded.release().clone();

    let list = parse(&helm_ok(
        &env,
        work.path(),
        &["list", "-n", "default", "-o", "json"],
    ));
    assert_eq!(list.as_array().unwrap().len(), 1, "{list}");
    let entry = &list[0];
    assert_eq!(entry["name"], "demo");
    assert_eq!(entry["namespace"], "default");
    assert_eq!(entry["revision"], "2");
    assert_eq!(entry["status"], "deployed");
    assert_eq!(entry["chart"], "app-0.1.0");
    assert_eq!(entry["app_version"], "1.0");

    let history = parse(&helm_ok(
        &env,
        work.path(),
        &["history", "demo", "-n", "default", "-o", "json"],
    ));
    let rows: Vec<(i64, &str, &str)> = history
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            (
                h["revision"].as_i64().unwrap(),
                h["status"].as_str().unwrap(),
                h["description"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        vec![
            (1, "superseded", "Install complete"),
            (2, "deployed", "Upgrade complete")
        ]
    );

    let status = parse(&helm_ok(
        &env,
        work.path(),
        &["status", "demo", "-n", "default", "-o", "json"],
    ));
    assert_eq!(status["info"]["status"], "deployed");
    assert_eq!(status["version"], 2);
    assert_eq!(status["info"]["notes"], "Release demo revision 2.\n");

    let user = parse(&helm_ok(
        &env,
        work.path(),
        &["get", "values", "demo", "-n", "default", "-o", "json"],
    ));
    assert_eq!(user, json!({"message": "bye"}));
    let all = parse(&helm_ok(
        &env,
        work.path(),
        &[
            "get", "values", "demo", "-n", "default", "--all", "-o", "json",
        ],
    ));
    assert_eq!(all["replicas"], 1);
    assert_eq!(all["message"], "bye");

    let manifest = helm_ok(
        &env,
        work.path(),
        &["get", "manifest", "demo", "-n", "default"],
    );
    assert_eq!(manifest.trim_end(), rel.manifest.trim_end());

    // helm itself can take the release over from here.
    helm_ok(
        &env,
        work.path(),
        &[
            "upgrade",
            "demo",
            &dir.path().display().to_string(),
            "-n",
            "default",
            "--set",
            "message=from-helm",
        ],
    );
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    assert_eq!(
        cms.get("demo-config").await.unwrap().data.unwrap()["message"],
        "from-helm"
    );
    let last = releases.last("demo").await.unwrap().unwrap();
    assert_eq!((last.version, last.status()), (3, Status::Deployed));
}

/// The JSON inside a release Secret: Kubernetes' base64 is already undone by the client, the
/// rest is Helm's base64(gzip(JSON)).
fn secret_json(secret: &Secret) -> Value {
    let data = &secret.data.as_ref().unwrap()["release"].0;
    let gz = base64::engine::general_purpose::STANDARD
        .decode(data)
        .unwrap();
    let mut json = String::new();
    flate2::read::GzDecoder::new(gz.as_slice())
        .read_to_string(&mut json)
        .unwrap();
    serde_json::from_str(&json).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_installed_by_helm_round_trips_and_is_adopted_by_ensure() {
    let env = env().await;
    let (dir, chart) = chart_dir(APP_CHART);
    let work = tempfile::tempdir().unwrap();
    helm_ok(
        &env,
        work.path(),
        &[
            "install",
            "demo",
            &dir.path().display().to_string(),
            "-n",
            "default",
        ],
    );

    let secrets: Api<Secret> = Api::namespaced(env.client(), "default");
    let secret = secrets.get("sh.helm.release.v1.demo.v1").await.unwrap();
    assert_eq!(secret.type_.as_deref(), Some("helm.sh/release.v1"));
    let original = secret_json(&secret);
    let release = decode_release(&secret.data.as_ref().unwrap()["release"].0).unwrap();
    assert_eq!(release.status(), Status::Deployed);
    assert_eq!(release.version, 1);
    let migrate = release
        .hooks
        .iter()
        .find(|h| h.name == "demo-migrate")
        .unwrap();
    assert_eq!(migrate.last_run.phase, "Succeeded");
    assert_eq!(migrate.weight, -1);
    assert_eq!(
        serde_json::to_value(&release).unwrap(),
        original,
        "helm's release JSON reads and writes back unchanged"
    );

    let releases = Releases::new(env.client(), "default");
    let outcome = releases
        .ensure(
            "demo",
            &chart,
            &values(json!({"message": "adopted"})),
            &EnsureOptions::default(),
        )
        .await
        .unwrap();
    assert!(
        matches!(outcome, Outcome::Upgraded(ref r) if r.version == 2),
        "{outcome:?}"
    );
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    assert_eq!(
        cms.get("demo-config").await.unwrap().data.unwrap()["message"],
        "adopted"
    );

    let history = parse(&helm_ok(
        &env,
        work.path(),
        &["history", "demo", "-n", "default", "-o", "json"],
    ));
    let rows: Vec<(i64, &str)> = history
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            (
                h["revision"].as_i64().unwrap(),
                h["status"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(rows, vec![(1, "superseded"), (2, "deployed")]);
    let status = parse(&helm_ok(
        &env,
        work.path(),
        &["status", "demo", "-n", "default", "-o", "json"],
    ));
    assert_eq!(status["info"]["status"], "deployed");
    assert_eq!(status["version"], 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_helm_left_pending_is_resumed_where_helm_refuses_to_go_on() {
    let env = env().await;
    let (dir, chart) = chart_dir(APP_CHART);
    let work = tempfile::tempdir().unwrap();
    let chart_path = dir.path().display().to_string();
    helm_ok(
        &env,
        work.path(),
        &["install", "demo", &chart_path, "-n", "default"],
    );

    // helm killed mid-install leaves its record pending-install (operator-sdk#6254).
    let secrets: Api<Secret> = Api::namespaced(env.client(), "default");
    let mut secret = secrets.get("sh.helm.release.v1.demo.v1").await.unwrap();
    let mut release = decode_release(&secret.data.as_ref().unwrap()["release"].0).unwrap();
    release.set_status(Status::PendingInstall, "Initial install underway");
    let encoded = opkit_chart_operator::storage::encode_release(&release).unwrap();
    secret.data.as_mut().unwrap().insert(
        "release".into(),
        k8s_openapi::ByteString(encoded.into_bytes()),
    );
    secret
        .metadata
        .labels
        .as_mut()
        .unwrap()
        .insert("status".into(), "pending-install".into());
    secrets
        .replace("sh.helm.release.v1.demo.v1", &Default::default(), &secret)
        .await
        .unwrap();

    let (ok, _, stderr) = common::helm(
        &env,
        work.path(),
        &["upgrade", "demo", &chart_path, "-n", "default"],
    );
    assert!(!ok, "helm itself refuses to go on");
    assert!(
        stderr.contains("another operation (install/upgrade/rollback) is in progress"),
        "{stderr}"
    );

    let releases = Releases::new(env.client(), "default");
    let outcome = releases
        .ensure(
            "demo",
            &chart,
            &values(json!({})),
            &EnsureOptions::default(),
        )
        .await
        .unwrap();
    assert!(
        matches!(outcome, Outcome::Installed(ref r) if r.version == 1),
        "{outcome:?}"
    );
    let status = parse(&helm_ok(
        &env,
        work.path(),
        &["status", "demo", "-n", "default", "-o", "json"],
    ));
    assert_eq!(status["info"]["status"], "deployed");
    assert_eq!(status["info"]["description"], "Install complete");
    assert_eq!(status["version"], 1);
}
