//! The generic chart operator end to end on a real control plane (`TestEnv`) with the real
//! `helm`: operator-sdk's Helm e2e flow on the `helm create` chart, a failing install and its
//! recovery, zero writes in the steady state, and an operator killed mid-install.

mod common;

use std::path::Path;

use common::{Faults, client_with, env, helm, helm_ok};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Namespace, Secret, ServiceAccount};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch,
    PatchParams, PostParams,
};
use opkit::Running;
use opkit_chart_operator::{OperatorOptions, Releases, UNINSTALL_FINALIZER, start};
use opkit_testenv::{TestEnv, eventually};
use serde_json::json;

const GROUP: &str = "demo.example.com";

/// The CRD operator-sdk scaffolds for a helm kind: an open spec and a status subresource.
fn crd(kind: &str, plural: &str) -> CustomResourceDefinition {
    serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{GROUP}")},
        "spec": {
            "group": GROUP,
            "names": {"kind": kind, "listKind": format!("{kind}List"), "plural": plural,
                      "singular": kind.to_lowercase()},
            "scope": "Namespaced",
            "versions": [{
                "name": "v1alpha1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                    },
                }},
            }],
        },
    }))
    .expect("a CRD")
}

fn resource(kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(GROUP, "v1alpha1", kind), plural)
}

/// Writes watches.yaml for `kind` served by the chart at `chart` into `dir`.
fn watches(dir: &Path, kind: &str, chart: &Path) -> std::path::PathBuf {
    let path = dir.join("watches.yaml");
    std::fs::write(
        &path,
        format!(
            "- group: {GROUP}\n  version: v1alpha1\n  kind: {kind}\n  chart: {}\n",
            chart.display()
        ),
    )
    .expect("write watches.yaml");
    path
}

fn options(watches_file: std::path::PathBuf) -> OperatorOptions {
    OperatorOptions {
        watches_file,
        reconcile_period: None,
        max_concurrent_reconciles: Some(2),
        ..OperatorOptions::default()
    }
}

/// The condition `type_` of a custom resource's status: (status, reason, message).
fn condition(cr: &DynamicObject, type_: &str) -> Option<(String, String, String)> {
    cr.data["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
        .map(|c| {
            let s = |k: &str| c[k].as_str().unwrap_or_default().to_string();
            (s("status"), s("reason"), s("message"))
        })
}

async fn wait_condition(
    api: &Api<DynamicObject>,
    name: &str,
    type_: &str,
    status: &str,
    reason: &str,
) -> DynamicObject {
    eventually(&format!("{name}: {type_}={status} ({reason})"), || async {
        let cr = api.get(name).await.ok()?;
        let (s, r, _) = condition(&cr, type_)?;
        (s == status && r == reason).then_some(cr)
    })
    .await
}

/// The sum of a metric's samples.
fn metric(running: &Running, name: &str) -> f64 {
    running
        .metrics()
        .render()
        .lines()
        .filter(|l| l.starts_with(&format!("{name}{{")))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

fn reconciles(running: &Running) -> f64 {
    metric(running, "controller_runtime_reconcile_total")
}

/// No reconcile running and none queued.
fn idle(running: &Running) -> bool {
    metric(running, "controller_runtime_active_workers") == 0.0
        && metric(running, "workqueue_depth") == 0.0
}

/// `helm create NAME` in `dir`.
fn helm_create(env: &TestEnv, dir: &Path, name: &str) -> std::path::PathBuf {
    helm_ok(env, dir, &["create", &dir.join(name).display().to_string()]);
    dir.join(name)
}

#[tokio::test(flavor = "multi_thread")]
async fn operator_sdks_helm_e2e_flow_on_the_helm_create_chart() {
    let env = env().await;
    env.install_crd(crd("Nginx", "nginxes"))
        .await
        .expect("the CRD installs");
    let dir = tempfile::tempdir().expect("tempdir");
    let chart = helm_create(&env, dir.path(), "nginx");
    let faults = Faults::counting();
    let client = client_with(&env, &faults).await;
    let running = start(client, options(watches(dir.path(), "Nginx", &chart)))
        .await
        .expect("the operator starts");

    let crs: Api<DynamicObject> =
        Api::namespaced_with(env.client(), "default", &resource("Nginx", "nginxes"));
    let cr: DynamicObject = serde_json::from_value(json!({
        "apiVersion": format!("{GROUP}/v1alpha1"), "kind": "Nginx",
        "metadata": {"name": "nginx-sample"},
        "spec": {"replicaCount": 1},
    }))
    .expect("a CR");
    crs.create(&PostParams::default(), &cr)
        .await
        .expect("create the CR");

    // Installed: Deployed=True/InstallSuccessful, the release in the status, the finalizer.
    let cr = wait_condition(
        &crs,
        "nginx-sample",
        "Deployed",
        "True",
        "InstallSuccessful",
    )
    .await;
    assert_eq!(
        condition(&cr, "Initialized").map(|c| c.0),
        Some("True".into())
    );
    assert_eq!(cr.data["status"]["deployedRelease"]["name"], "nginx-sample");
    let manifest = cr.data["status"]["deployedRelease"]["manifest"]
        .as_str()
        .unwrap_or_default();
    assert!(manifest.contains("kind: Deployment"), "{manifest}");
    assert!(
        cr.metadata
            .finalizers
            .iter()
            .flatten()
            .any(|f| f == UNINSTALL_FINALIZER)
    );
    let (_, _, notes) = condition(&cr, "Deployed").expect("Deployed");
    assert!(
        notes.contains("Get the application URL"),
        "the message is the release notes: {notes}"
    );
    let deployments: Api<Deployment> = Api::namespaced(env.client(), "default");
    let deployment = deployments
        .get("nginx-sample")
        .await
        .expect("the Deployment exists");
    let owner = &deployment.metadata.owner_references.unwrap_or_default()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.controller),
        ("Nginx", Some(true))
    );
    let list = helm_ok(&env, dir.path(), &["list", "-n", "default"]);
    assert!(
        list.contains("nginx-sample") && list.contains("deployed"),
        "{list}"
    );

    // A reconcile of the unchanged CR writes nothing (an annotation triggers it).
    eventually("the operator idle", || async { idle(&running) }).await;
    let (reconciled, writes) = (reconciles(&running), faults.writes());
    crs.patch(
        "nginx-sample",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"annotations": {"touch": "1"}}})),
    )
    .await
    .expect("annotate");
    eventually("a reconcile of the touched CR", || async {
        reconciles(&running) > reconciled && idle(&running)
    })
    .await;
    assert_eq!(
        faults.writes(),
        writes,
        "a steady-state reconcile makes no API write"
    );

    // Scaled by hand: put back.
    deployments
        .patch(
            "nginx-sample",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 3}})),
        )
        .await
        .expect("scale");
    eventually("the Deployment scaled back to 1", || async {
        deployments
            .get("nginx-sample")
            .await
            .ok()
            .and_then(|d| d.spec?.replicas)
            == Some(1)
    })
    .await;

    // A new spec: an upgrade, revision 2.
    crs.patch(
        "nginx-sample",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"replicaCount": 2}})),
    )
    .await
    .expect("change the spec");
    wait_condition(
        &crs,
        "nginx-sample",
        "Deployed",
        "True",
        "UpgradeSuccessful",
    )
    .await;
    assert_eq!(
        deployments
            .get("nginx-sample")
            .await
            .ok()
            .and_then(|d| d.spec?.replicas),
        Some(2)
    );
    let history = helm_ok(
        &env,
        dir.path(),
        &["history", "nginx-sample", "-n", "default"],
    );
    assert!(
        history
            .lines()
            .any(|l| l.starts_with("2 ") && l.contains("deployed")),
        "{history}"
    );
    assert!(
        history
            .lines()
            .any(|l| l.starts_with("1 ") && l.contains("superseded")),
        "{history}"
    );

    // uninstall-wait: a finalizer on an owned object keeps the CR until it goes.
    let accounts: Api<ServiceAccount> = Api::namespaced(env.client(), "default");
    accounts
        .patch(
            "nginx-sample",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": ["test.opkit.dev/block"]}})),
        )
        .await
        .expect("block the ServiceAccount");
    crs.patch(
        "nginx-sample",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"annotations": {"helm.sdk.operatorframework.io/uninstall-wait": "true"}}})),
    )
    .await
    .expect("annotate uninstall-wait");
    crs.delete("nginx-sample", &DeleteParams::default())
        .await
        .expect("delete the CR");
    let waiting = wait_condition(
        &crs,
        "nginx-sample",
        "Deployed",
        "False",
        "UninstallSuccessful",
    )
    .await;
    assert_eq!(
        condition(&waiting, "Deployed").map(|c| c.2),
        Some("Waiting until all resources are deleted.".into())
    );
    assert!(waiting.metadata.deletion_timestamp.is_some());
    accounts
        .patch(
            "nginx-sample",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": null}})),
        )
        .await
        .expect("unblock");
    eventually("the CR gone", || async {
        matches!(crs.get_opt("nginx-sample").await, Ok(None))
    })
    .await;
    let secrets: Api<Secret> = Api::namespaced(env.client(), "default");
    let left = secrets
        .list(&ListParams::default().labels("owner=helm,name=nginx-sample"))
        .await
        .expect("list release secrets");
    assert!(left.items.is_empty(), "the release records are gone");
    assert!(matches!(
        deployments.get_opt("nginx-sample").await,
        Ok(None)
    ));
    running.shutdown().await.expect("clean shutdown");
}

const FRAGILE_CHART: &[(&str, &str)] = &[
    (
        "Chart.yaml",
        "apiVersion: v2\nname: fragile\nversion: 0.1.0\n",
    ),
    ("values.yaml", "broken: false\nmessage: hello\n"),
    (
        "values.schema.json",
        r#"{"type": "object", "properties": {"message": {"type": "string"}}}"#,
    ),
    (
        "templates/cm.yaml",
        "{{- if .Values.broken }}{{ fail \"the chart refuses broken=true\" }}{{ end }}\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-cm\ndata:\n  message: {{ .Values.message | quote }}\n",
    ),
];

#[tokio::test(flavor = "multi_thread")]
async fn a_failing_install_reports_release_failed_with_the_template_error_and_recovers_when_fixed()
{
    let env = env().await;
    env.install_crd(crd("Fragile", "fragiles"))
        .await
        .expect("the CRD installs");
    let (chart_dir, _) = common::chart_dir(FRAGILE_CHART);
    let dir = tempfile::tempdir().expect("tempdir");
    let running = start(
        env.client(),
        options(watches(dir.path(), "Fragile", chart_dir.path())),
    )
    .await
    .expect("the operator starts");
    let crs: Api<DynamicObject> =
        Api::namespaced_with(env.client(), "default", &resource("Fragile", "fragiles"));
    for (name, spec) in [
        ("broken", json!({"broken": true})),
        ("badschema", json!({"message": 5})),
    ] {
        let cr: DynamicObject = serde_json::from_value(json!({
            "apiVersion": format!("{GROUP}/v1alpha1"), "kind": "Fragile",
            "metadata": {"name": name}, "spec": spec,
        }))
        .expect("a CR");
        crs.create(&PostParams::default(), &cr)
            .await
            .expect("create");
    }
    let broken = wait_condition(&crs, "broken", "ReleaseFailed", "True", "InstallError").await;
    let (_, _, message) = condition(&broken, "ReleaseFailed").expect("ReleaseFailed");
    assert!(
        message.contains("fragile/templates/cm.yaml:1:")
            && message.contains("the chart refuses broken=true"),
        "the message names the template, line and column: {message}"
    );
    let bad = wait_condition(&crs, "badschema", "ReleaseFailed", "True", "InstallError").await;
    let (_, _, message) = condition(&bad, "ReleaseFailed").expect("ReleaseFailed");
    assert!(
        message.contains("message"),
        "the schema error names the field: {message}"
    );
    assert!(condition(&bad, "Deployed").is_none());

    // Fixed: deployed, the failure condition gone.
    crs.patch(
        "broken",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"broken": false}})),
    )
    .await
    .expect("fix");
    crs.patch(
        "badschema",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"message": "five"}})),
    )
    .await
    .expect("fix");
    for name in ["broken", "badschema"] {
        let cr = wait_condition(&crs, name, "Deployed", "True", "InstallSuccessful").await;
        assert!(
            condition(&cr, "ReleaseFailed").is_none(),
            "{name}: ReleaseFailed removed"
        );
    }
    let cms: Api<k8s_openapi::api::core::v1::ConfigMap> = Api::namespaced(env.client(), "default");
    let cm = cms.get("badschema-cm").await.expect("the ConfigMap exists");
    assert_eq!(cm.data.unwrap_or_default()["message"], "five");
    // The failures were counted by the runtime, under controller-runtime's names.
    let metrics = running.metrics().render();
    assert!(
        metrics.lines().any(
            |l| l.starts_with("controller_runtime_reconcile_errors_total{")
                && l.contains("controller=\"fragile-controller\"")
                && !l.ends_with(" 0")
        ),
        "{metrics}"
    );
    running.shutdown().await.expect("clean shutdown");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_operator_killed_mid_install_and_started_again_converges() {
    let env = env().await;
    env.install_crd(crd("App", "apps"))
        .await
        .expect("the CRD installs");
    let (chart_dir, _) = common::chart_dir(common::APP_CHART);
    let dir = tempfile::tempdir().expect("tempdir");
    let watches_file = watches(dir.path(), "App", chart_dir.path());
    let app = resource("App", "apps");
    // Each operator below serves one namespace of its own, so none finishes another's work.
    let namespace = |name: &str| {
        let client = env.client();
        let name = name.to_string();
        async move {
            let ns: Namespace =
                serde_json::from_value(json!({"metadata": {"name": name}})).expect("namespace");
            Api::<Namespace>::all(client)
                .create(&PostParams::default(), &ns)
                .await
                .expect("create the namespace");
            name
        }
    };
    let in_ns = |ns: &str| {
        let mut options = options(watches_file.clone());
        options.manager.namespaces = vec![ns.to_string()];
        options
    };
    let create = |ns: &str| {
        let crs: Api<DynamicObject> = Api::namespaced_with(env.client(), ns, &app);
        async move {
            let cr: DynamicObject = serde_json::from_value(json!({
                "apiVersion": format!("{GROUP}/v1alpha1"), "kind": "App",
                "metadata": {"name": "app"}, "spec": {"replicas": 2},
            }))
            .expect("a CR");
            crs.create(&PostParams::default(), &cr)
                .await
                .expect("create the CR");
            crs
        }
    };

    // How many requests starting and a whole install take.
    let ns = namespace("counted").await;
    let counting = Faults::counting();
    let running = start(client_with(&env, &counting).await, in_ns(&ns))
        .await
        .expect("the operator starts");
    let started = counting.requests();
    let crs = create(&ns).await;
    wait_condition(&crs, "app", "Deployed", "True", "InstallSuccessful").await;
    let install = counting.requests() - started;
    running.shutdown().await.expect("shutdown");

    // Killed mid-install: the API goes away after N requests. N is searched until a kill
    // leaves the release between its pending record and its deployed one.
    let mut budget = started;
    let (ns, crs) = loop {
        budget += 1;
        assert!(
            budget < started + 2 * install,
            "no kill left a pending install ({install} requests per install)"
        );
        let ns = namespace(&format!("killed-{budget}")).await;
        let dying = Faults::dying_after(budget);
        let running = start(client_with(&env, &dying).await, in_ns(&ns))
            .await
            .expect("the operator starts");
        let crs = create(&ns).await;
        eventually("the operator dead", || async { dying.died() }).await;
        running.shutdown().await.expect("shutdown");
        let left = Releases::new(env.client(), &ns)
            .history("app")
            .await
            .expect("history");
        if left.last().map(|r| r.status()) == Some(opkit_chart_operator::Status::PendingInstall) {
            break (ns, crs);
        }
    };

    // Started again: the release converges, and helm agrees.
    let running = start(env.client(), in_ns(&ns))
        .await
        .expect("the operator starts");
    wait_condition(&crs, "app", "Deployed", "True", "InstallSuccessful").await;
    let history = Releases::new(env.client(), &ns)
        .history("app")
        .await
        .expect("history");
    assert_eq!(
        history.last().map(|r| r.status()),
        Some(opkit_chart_operator::Status::Deployed)
    );
    let (ok, status, stderr) = helm(&env, dir.path(), &["status", "app", "-n", &ns]);
    assert!(
        ok && status.contains("STATUS: deployed"),
        "{status}{stderr}"
    );
    let deployments: Api<Deployment> = Api::namespaced(env.client(), &ns);
    assert_eq!(
        deployments
            .get("app-web")
            .await
            .ok()
            .and_then(|d| d.spec?.replicas),
        Some(2)
    );
    running.shutdown().await.expect("clean shutdown");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_deleted_owned_object_is_put_back_and_the_pause_annotation_holds_the_release() {
    let env = env().await;
    env.install_crd(crd("App", "apps"))
        .await
        .expect("the CRD installs");
    let (chart_dir, _) = common::chart_dir(common::APP_CHART);
    let dir = tempfile::tempdir().expect("tempdir");
    let running = start(
        env.client(),
        options(watches(dir.path(), "App", chart_dir.path())),
    )
    .await
    .expect("the operator starts");
    let crs: Api<DynamicObject> =
        Api::namespaced_with(env.client(), "default", &resource("App", "apps"));
    let cr: DynamicObject = serde_json::from_value(json!({
        "apiVersion": format!("{GROUP}/v1alpha1"), "kind": "App",
        "metadata": {"name": "held"}, "spec": {"replicas": 1},
    }))
    .expect("a CR");
    crs.create(&PostParams::default(), &cr)
        .await
        .expect("create");
    wait_condition(&crs, "held", "Deployed", "True", "InstallSuccessful").await;

    // Deleted by someone: the dependent watch reconciles and the object comes back.
    let services: Api<k8s_openapi::api::core::v1::Service> =
        Api::namespaced(env.client(), "default");
    let uid = services
        .get("held-web")
        .await
        .expect("the Service")
        .metadata
        .uid;
    services
        .delete("held-web", &DeleteParams::default())
        .await
        .expect("delete the Service");
    eventually("the Service put back", || async {
        services
            .get_opt("held-web")
            .await
            .ok()
            .flatten()
            .is_some_and(|s| s.metadata.uid != uid)
    })
    .await;

    // Paused: the reconcile that sees the new spec reports the pause and leaves the release.
    crs.patch(
        "held",
        &PatchParams::default(),
        &Patch::Merge(json!({
            "metadata": {"annotations": {"helm.sdk.operatorframework.io/paused": "true"}},
            "spec": {"replicas": 3},
        })),
    )
    .await
    .expect("pause and change");
    wait_condition(
        &crs,
        "held",
        "Paused",
        "True",
        "PauseReconcileAnnotationTrue",
    )
    .await;
    let releases = Releases::new(env.client(), "default");
    assert_eq!(releases.history("held").await.expect("history").len(), 1);
    let deployments: Api<Deployment> = Api::namespaced(env.client(), "default");
    assert_eq!(
        deployments
            .get("held-web")
            .await
            .ok()
            .and_then(|d| d.spec?.replicas),
        Some(1)
    );

    // Resumed: the change goes out.
    crs.patch(
        "held",
        &PatchParams::default(),
        &Patch::Merge(
            json!({"metadata": {"annotations": {"helm.sdk.operatorframework.io/paused": null}}}),
        ),
    )
    .await
    .expect("resume");
    let cr = wait_condition(&crs, "held", "Deployed", "True", "UpgradeSuccessful").await;
    assert!(condition(&cr, "Paused").is_none(), "the pause is over");
    assert_eq!(
        deployments
            .get("held-web")
            .await
            .ok()
            .and_then(|d| d.spec?.replicas),
        Some(3)
    );
    running.shutdown().await.expect("clean shutdown");
}
