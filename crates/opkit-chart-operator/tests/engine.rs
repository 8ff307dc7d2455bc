//! The release engine against a real control plane: install, the zero-write steady state,
//! drift repair, upgrades that drop objects, hooks, failures that keep data, rollback and
//! uninstall (with `keep` and `uninstall-wait`).

mod common;

use common::{APP_CHART, Faults, chart_dir, client_with, env, values};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use opkit_chart_operator::{
    ActionError, EnsureOptions, Outcome, Releases, Status, UninstallOptions, UninstallOutcome,
};
use serde_json::json;

async fn owner(client: &kube::Client) -> OwnerReference {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some("the-owner".into());
    let cm = api.create(&PostParams::default(), &cm).await.unwrap();
    OwnerReference {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        name: "the-owner".into(),
        uid: cm.metadata.uid.unwrap(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

fn statuses(history: &[opkit_chart_operator::Release]) -> Vec<(u32, Status)> {
    history.iter().map(|r| (r.version, r.status())).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn install_then_an_unchanged_ensure_makes_zero_writes_and_drift_is_put_back() {
    let env = env().await;
    let client = env.client();
    let (_dir, chart) = chart_dir(APP_CHART);
    let opts = EnsureOptions {
        owner: Some(owner(&client).await),
        ..Default::default()
    };
    let releases = Releases::new(client.clone(), "default");
    let outcome = releases
        .ensure("demo", &chart, &values(json!({})), &opts)
        .await
        .unwrap();
    let Outcome::Installed(rel) = outcome else {
        panic!("expected an install, got {outcome:?}")
    };
    assert_eq!(rel.version, 1);
    assert_eq!(rel.status(), Status::Deployed);
    assert_eq!(rel.info.as_ref().unwrap().description, "Install complete");
    assert_eq!(
        rel.info.as_ref().unwrap().notes,
        "Release demo revision 1.\n"
    );

    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let cm = cms.get("demo-config").await.unwrap();
    let data = cm.data.clone().unwrap();
    assert_eq!(data["message"], "hello");
    assert_eq!(
        data["namespace"], "default",
        "lookup read the live Namespace"
    );
    let refs = cm.metadata.owner_references.clone().unwrap();
    assert_eq!(refs[0].name, "the-owner");
    let labels = cm.metadata.labels.clone().unwrap();
    assert_eq!(labels["app.kubernetes.io/managed-by"], "Helm");
    // The hook ran before the objects and was deleted after it succeeded.
    let hook = rel.hooks.iter().find(|h| h.name == "demo-migrate").unwrap();
    assert_eq!(hook.last_run.phase, "Succeeded");
    let backup = rel.hooks.iter().find(|h| h.name == "demo-backup").unwrap();
    assert_eq!(
        backup.last_run.phase, "",
        "a pre-delete hook waits for the uninstall"
    );
    let jobs: Api<Job> = Api::namespaced(client.clone(), "default");
    assert!(jobs.get_opt("demo-migrate").await.unwrap().is_none());

    // Nothing changed: the engine only reads.
    let faults = Faults::counting();
    let counted = Releases::new(client_with(&env, &faults).await, "default");
    let outcome = counted
        .ensure("demo", &chart, &values(json!({})), &opts)
        .await
        .unwrap();
    assert!(
        matches!(outcome, Outcome::Unchanged { repaired: 0, .. }),
        "{outcome:?}"
    );
    assert_eq!(faults.writes(), 0, "an unchanged ensure writes nothing");
    assert!(faults.requests() > 0);

    // Drift: an object deleted, a field the chart sets changed by hand.
    cms.delete("demo-config", &DeleteParams::default())
        .await
        .unwrap();
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
    deployments
        .patch(
            "demo-web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 5}})),
        )
        .await
        .unwrap();
    let outcome = counted
        .ensure("demo", &chart, &values(json!({})), &opts)
        .await
        .unwrap();
    assert!(
        matches!(outcome, Outcome::Unchanged { repaired: 2, .. }),
        "{outcome:?}"
    );
    assert_eq!(
        cms.get("demo-config").await.unwrap().data.unwrap()["message"],
        "hello"
    );
    let d = deployments.get("demo-web").await.unwrap();
    assert_eq!(d.spec.unwrap().replicas, Some(1));

    let before = faults.writes();
    let outcome = counted
        .ensure("demo", &chart, &values(json!({})), &opts)
        .await
        .unwrap();
    assert!(matches!(outcome, Outcome::Unchanged { repaired: 0, .. }));
    assert_eq!(
        faults.writes(),
        before,
        "repaired objects are in sync again"
    );
    let history = releases.history("demo").await.unwrap();
    assert_eq!(statuses(&history), vec![(1, Status::Deployed)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upgrade_records_revision_two_and_deletes_the_objects_it_drops() {
    let env = env().await;
    let client = env.client();
    let (_dir, chart) = chart_dir(APP_CHART);
    let releases = Releases::new(client.clone(), "default");
    let opts = EnsureOptions::default();
    releases
        .ensure("demo", &chart, &values(json!({})), &opts)
        .await
        .unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    assert!(cms.get_opt("demo-extra").await.unwrap().is_some());

    let outcome = releases
        .ensure(
            "demo",
            &chart,
            &values(json!({"message": "bye", "extra": false})),
            &opts,
        )
        .await
        .unwrap();
    let Outcome::Upgraded(rel) = outcome else {
        panic!("expected an upgrade, got {outcome:?}")
    };
    assert_eq!(rel.version, 2);
    assert_eq!(rel.info.as_ref().unwrap().description, "Upgrade complete");
    assert_eq!(
        rel.config,
        *json!({"message": "bye", "extra": false})
            .as_object()
            .unwrap()
    );
    assert_eq!(
        cms.get("demo-config").await.unwrap().data.unwrap()["message"],
        "bye"
    );
    assert!(
        cms.get_opt("demo-extra").await.unwrap().is_none(),
        "dropped"
    );
    let history = releases.history("demo").await.unwrap();
    assert_eq!(
        statuses(&history),
        vec![(1, Status::Superseded), (2, Status::Deployed)]
    );

    // History is pruned to the maximum, never losing the deployed revision.
    let short = Releases::new(client.clone(), "default").max_history(2);
    for (i, msg) in ["a", "b", "c"].iter().enumerate() {
        let out = short
            .ensure("demo", &chart, &values(json!({"message": msg})), &opts)
            .await
            .unwrap();
        assert_eq!(out.release().version, 3 + i as u32);
    }
    let history = releases.history("demo").await.unwrap();
    assert_eq!(
        statuses(&history),
        vec![(4, Status::Superseded), (5, Status::Deployed)]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uninstall_deletes_the_release_and_keeps_objects_marked_keep() {
    let env = env().await;
    let client = env.client();
    let (_dir, chart) = chart_dir(APP_CHART);
    let releases = Releases::new(client.clone(), "default");
    releases
        .ensure(
            "demo",
            &chart,
            &values(json!({})),
            &EnsureOptions::default(),
        )
        .await
        .unwrap();
    let outcome = releases
        .uninstall("demo", &UninstallOptions::default())
        .await
        .unwrap();
    assert_eq!(outcome, UninstallOutcome::Done);
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    assert!(cms.get_opt("demo-config").await.unwrap().is_none());
    assert!(cms.get_opt("demo-extra").await.unwrap().is_none());
    assert!(cms.get_opt("demo-keep").await.unwrap().is_some(), "kept");
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
    assert!(deployments.get_opt("demo-web").await.unwrap().is_none());
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "default");
    let records = secrets
        .list(&ListParams::default().labels("owner=helm,name=demo"))
        .await
        .unwrap();
    assert!(records.items.is_empty(), "release records deleted");
    // Uninstalling what is gone is done at once.
    assert_eq!(
        releases
            .uninstall("demo", &UninstallOptions::default())
            .await
            .unwrap(),
        UninstallOutcome::Done
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uninstall_wait_reports_objects_that_a_finalizer_holds() {
    let env = env().await;
    let client = env.client();
    let (_dir, chart) = chart_dir(APP_CHART);
    let releases = Releases::new(client.clone(), "default");
    releases
        .ensure(
            "demo",
            &chart,
            &values(json!({})),
            &EnsureOptions::default(),
        )
        .await
        .unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let hold = json!({"metadata": {"finalizers": ["example.com/hold"]}});
    cms.patch("demo-config", &PatchParams::default(), &Patch::Merge(&hold))
        .await
        .unwrap();
    let wait = UninstallOptions {
        wait: true,
        ..Default::default()
    };
    let outcome = releases.uninstall("demo", &wait).await.unwrap();
    let UninstallOutcome::Waiting(what) = outcome else {
        panic!("expected to wait, got {outcome:?}")
    };
    assert!(what.contains("ConfigMap default/demo-config"), "{what}");
    let last = releases.last("demo").await.unwrap().unwrap();
    assert_eq!(last.status(), Status::Uninstalling);
    let backup = last.hooks.iter().find(|h| h.name == "demo-backup").unwrap();
    assert_eq!(
        backup.last_run.phase, "Succeeded",
        "the pre-delete hook ran once"
    );
    assert_eq!(
        last.info.unwrap().description,
        "Deletion in progress (or silently failed)"
    );

    let release = json!({"metadata": {"finalizers": null}});
    cms.patch(
        "demo-config",
        &PatchParams::default(),
        &Patch::Merge(&release),
    )
    .await
    .unwrap();
    let outcome = opkit_testenv::eventually("the uninstall to finish", || async {
        let out = releases.uninstall("demo", &wait).await.unwrap();
        (out == UninstallOutcome::Done).then_some(out)
    })
    .await;
    assert_eq!(outcome, UninstallOutcome::Done);
    assert!(releases.last("demo").await.unwrap().is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn render_and_schema_errors_keep_helms_texts_and_store_nothing() {
    let env = env().await;
    let releases = Releases::new(env.client(), "default");
    let (_dir, bad) = chart_dir(&[
        ("Chart.yaml", "apiVersion: v2\nname: bad\nversion: 0.1.0\n"),
        (
            "templates/cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  a: {{ .Values.a.b.c }}\n",
        ),
    ]);
    let err = releases
        .ensure("bad", &bad, &values(json!({})), &EnsureOptions::default())
        .await
        .unwrap_err();
    assert!(matches!(err, ActionError::Render(_)), "{err:?}");
    assert!(err.is_permanent());
    let text = err.to_string();
    assert!(
        text.starts_with("bad/templates/cm.yaml:6:15\n"),
        "template, line and column: {text}"
    );
    assert!(
        text.contains("nil pointer evaluating interface {}.b"),
        "{text}"
    );

    let (_dir, schema) = chart_dir(&[
        (
            "Chart.yaml",
            "apiVersion: v2\nname: strict\nversion: 0.1.0\n",
        ),
        ("values.yaml", "replicas: 1\n"),
        (
            "values.schema.json",
            r#"{"type": "object", "properties": {"replicas": {"type": "integer"}}}"#,
        ),
        (
            "templates/cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y\n",
        ),
    ]);
    let err = releases
        .ensure(
            "strict",
            &schema,
            &values(json!({"replicas": "many"})),
            &EnsureOptions::default(),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, ActionError::Schema(_)), "{err:?}");
    let text = err.to_string();
    assert!(
        text.starts_with("values don't meet the specifications of the schema(s) in the following chart(s):\nstrict:"),
        "{text}"
    );
    let (_dir, old) = chart_dir(&[
        (
            "Chart.yaml",
            "apiVersion: v2\nname: old\nversion: 0.1.0\nkubeVersion: \"<1.20.0\"\n",
        ),
        (
            "templates/cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: z\n",
        ),
    ]);
    let err = releases
        .ensure("old", &old, &values(json!({})), &EnsureOptions::default())
        .await
        .unwrap_err();
    assert!(
        err.to_string().starts_with(
            "chart requires kubeVersion: <1.20.0 which is incompatible with Kubernetes v1."
        ),
        "{err}"
    );
    let (_dir, looking) = chart_dir(&[
        (
            "Chart.yaml",
            "apiVersion: v2\nname: looking\nversion: 0.1.0\n",
        ),
        (
            "templates/cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: l\ndata:\n  a: {{ lookup \"example.com/v1\" \"Nothing\" \"\" \"x\" | quote }}\n",
        ),
    ]);
    let err = releases
        .ensure(
            "looking",
            &looking,
            &values(json!({})),
            &EnsureOptions::default(),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, ActionError::Lookup(_)), "{err:?}");
    assert!(!err.is_permanent(), "the kind may be served later");
    assert!(
        err.to_string().contains("no matches for kind \"Nothing\""),
        "{err}"
    );
    assert!(releases.history("looking").await.unwrap().is_empty());
    assert!(releases.history("bad").await.unwrap().is_empty());
    assert!(releases.history("strict").await.unwrap().is_empty());
}

/// A chart whose post-install/upgrade hook fails while `fail` is set (the simulated pod
/// exits 1), with an optional ConfigMap named after `more`.
const FAILING_HOOK_CHART: &[(&str, &str)] = &[
    ("Chart.yaml", "apiVersion: v2\nname: data\nversion: 0.1.0\n"),
    ("values.yaml", "fail: true\n"),
    (
        "templates/pvc.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-data\ndata:\n  precious: \"true\"\n",
    ),
    (
        "templates/more.yaml",
        "{{- if .Values.more }}\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-more-{{ .Values.more }}\n{{- end }}\n",
    ),
    (
        "templates/check.yaml",
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {{ .Release.Name }}-check\n  annotations:\n    helm.sh/hook: post-install,post-upgrade\n    helm.sh/hook-delete-policy: before-hook-creation\nspec:\n  backoffLimit: 0\n  template:\n    metadata:\n      annotations:\n        sim.opkit.dev/behavior: {{ if .Values.fail }}fail{{ else }}normal{{ end }}\n    spec:\n      restartPolicy: Never\n      containers:\n      - name: check\n        image: busybox\n",
    ),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_install_keeps_its_objects_and_the_next_ensure_retries_it() {
    let env = env().await;
    let client = env.client();
    let (_dir, chart) = chart_dir(FAILING_HOOK_CHART);
    let releases = Releases::new(client.clone(), "default");
    let err = releases
        .ensure("db", &chart, &values(json!({})), &EnsureOptions::default())
        .await
        .unwrap_err();
    assert!(matches!(err, ActionError::Hook { .. }), "{err:?}");
    assert!(
        err.to_string()
            .starts_with("post-install hook Job/db-check failed: job failed"),
        "{err}"
    );
    let history = releases.history("db").await.unwrap();
    assert_eq!(statuses(&history), vec![(1, Status::Failed)]);
    assert!(
        history[0]
            .info
            .as_ref()
            .unwrap()
            .description
            .starts_with("Release \"db\" failed: post-install hook"),
        "{:?}",
        history[0].info
    );
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let data = cms.get("db-data").await.unwrap();
    let uid = data.metadata.uid.clone();

    // The same values fail again (and still delete nothing); fixed values install.
    let outcome = releases
        .ensure(
            "db",
            &chart,
            &values(json!({"fail": false})),
            &EnsureOptions::default(),
        )
        .await
        .unwrap();
    let Outcome::Installed(rel) = outcome else {
        panic!("a retried first install is an install: {outcome:?}")
    };
    assert_eq!(rel.version, 2);
    assert_eq!(
        cms.get("db-data").await.unwrap().metadata.uid,
        uid,
        "never deleted"
    );
    let history = releases.history("db").await.unwrap();
    assert_eq!(
        statuses(&history),
        vec![(1, Status::Failed), (2, Status::Deployed)]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rollback_deploys_an_earlier_revision_as_a_new_one() {
    let env = env().await;
    let client = env.client();
    let (_dir, chart) = chart_dir(APP_CHART);
    let releases = Releases::new(client.clone(), "default");
    let opts = EnsureOptions::default();
    releases
        .ensure("demo", &chart, &values(json!({})), &opts)
        .await
        .unwrap();
    releases
        .ensure(
            "demo",
            &chart,
            &values(json!({"message": "bye", "extra": false})),
            &opts,
        )
        .await
        .unwrap();
    let rel = releases.rollback("demo", 1, false).await.unwrap();
    assert_eq!(rel.version, 3);
    let info = rel.info.unwrap();
    assert_eq!(info.description, "Rollback to 1");
    assert_eq!(info.rollback_revision, 1);
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    assert_eq!(
        cms.get("demo-config").await.unwrap().data.unwrap()["message"],
        "hello"
    );
    assert!(cms.get_opt("demo-extra").await.unwrap().is_some(), "back");
    let history = releases.history("demo").await.unwrap();
    assert_eq!(
        statuses(&history),
        vec![
            (1, Status::Superseded),
            (2, Status::Superseded),
            (3, Status::Deployed)
        ]
    );
    assert!(matches!(
        releases.rollback("demo", 9, false).await.unwrap_err(),
        ActionError::NotFound
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_upgrade_rolls_back_to_the_deployed_revision_when_asked() {
    let env = env().await;
    let client = env.client();
    let (_dir, chart) = chart_dir(FAILING_HOOK_CHART);
    let releases = Releases::new(client.clone(), "default");
    let opts = EnsureOptions {
        rollback_on_failure: true,
        ..Default::default()
    };
    releases
        .ensure("db", &chart, &values(json!({"fail": false})), &opts)
        .await
        .unwrap();
    let err = releases
        .ensure("db", &chart, &values(json!({"fail": true})), &opts)
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("post-upgrade hook Job/db-check failed"),
        "{err}"
    );
    let history = releases.history("db").await.unwrap();
    assert_eq!(
        statuses(&history),
        vec![
            (1, Status::Superseded),
            (2, Status::Failed),
            (3, Status::Deployed)
        ]
    );
    assert!(
        history[1]
            .info
            .as_ref()
            .unwrap()
            .description
            .starts_with("Upgrade \"db\" failed: post-upgrade hook"),
        "{:?}",
        history[1].info
    );
    assert_eq!(
        history[2].info.as_ref().unwrap().description,
        "Rollback to 1"
    );
    assert_eq!(history[2].config, history[0].config);
}

/// A chart with its own CRD (in `crds/`, created on install) whose `spec.size` a CEL rule
/// makes immutable: changing it is refused in place (422) — what `upgrade-force` replaces.
const WIDGET_CHART: &[(&str, &str)] = &[
    (
        "Chart.yaml",
        "apiVersion: v2\nname: widget\nversion: 0.1.0\n",
    ),
    ("values.yaml", "size: 1\n"),
    (
        "crds/widgets.yaml",
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\nspec:\n  group: example.com\n  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}\n  scope: Namespaced\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n        type: object\n        properties:\n          spec:\n            type: object\n            properties:\n              size:\n                type: integer\n                x-kubernetes-validations:\n                - rule: self == oldSelf\n                  message: size is immutable\n",
    ),
    (
        "templates/widget.yaml",
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: {{ .Release.Name }}-widget\nspec:\n  size: {{ .Values.size }}\n",
    ),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chart_crds_are_created_and_force_replaces_what_cannot_change_in_place() {
    let env = env().await;
    let client = env.client();
    let (_dir, chart) = chart_dir(WIDGET_CHART);
    let releases = Releases::new(client.clone(), "default");
    releases
        .ensure("w", &chart, &values(json!({})), &EnsureOptions::default())
        .await
        .unwrap();
    let ar = kube::api::ApiResource::from_gvk(&kube::api::GroupVersionKind::gvk(
        "example.com",
        "v1",
        "Widget",
    ));
    let widgets: Api<kube::api::DynamicObject> =
        Api::namespaced_with(client.clone(), "default", &ar);
    let before = widgets.get("w-widget").await.unwrap();
    assert_eq!(before.data["spec"]["size"], 1);
    let err = releases
        .ensure(
            "w",
            &chart,
            &values(json!({"size": 2})),
            &EnsureOptions::default(),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            ActionError::Api {
                action: "apply",
                ..
            }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("size is immutable"), "{err}");

    let force = EnsureOptions {
        force: true,
        ..Default::default()
    };
    let outcome = releases
        .ensure("w", &chart, &values(json!({"size": 2})), &force)
        .await
        .unwrap();
    assert!(matches!(outcome, Outcome::Upgraded(_)), "{outcome:?}");
    let after = widgets.get("w-widget").await.unwrap();
    assert_eq!(after.data["spec"]["size"], 2);
    assert_ne!(after.metadata.uid, before.metadata.uid, "replaced");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn releases_of_another_namespace_are_kept_apart() {
    let env = env().await;
    let client = env.client();
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    let mut ns = k8s_openapi::api::core::v1::Namespace::default();
    ns.metadata.name = Some("team-b".into());
    namespaces
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
    let (_dir, chart) = chart_dir(APP_CHART);
    let releases = Releases::new(client.clone(), "default");
    let team_b = releases.in_namespace("team-b");
    team_b
        .ensure(
            "demo",
            &chart,
            &values(json!({})),
            &EnsureOptions::default(),
        )
        .await
        .unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "team-b");
    let data = cms.get("demo-config").await.unwrap().data.unwrap();
    assert_eq!(data["namespace"], "team-b");
    assert_eq!(team_b.history("demo").await.unwrap().len(), 1);
    assert!(releases.history("demo").await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uninstall_removes_what_failed_upgrades_applied() {
    let env = env().await;
    let client = env.client();
    let (_dir, chart) = chart_dir(FAILING_HOOK_CHART);
    let releases = Releases::new(client.clone(), "default");
    let opts = EnsureOptions::default();
    releases
        .ensure("db", &chart, &values(json!({"fail": false})), &opts)
        .await
        .unwrap();
    for more in ["a", "b"] {
        releases
            .ensure(
                "db",
                &chart,
                &values(json!({"fail": true, "more": more})),
                &opts,
            )
            .await
            .unwrap_err();
    }
    let history = releases.history("db").await.unwrap();
    assert_eq!(
        statuses(&history),
        vec![
            (1, Status::Deployed),
            (2, Status::Failed),
            (3, Status::Failed)
        ]
    );
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    assert!(cms.get_opt("db-more-a").await.unwrap().is_some());
    assert!(cms.get_opt("db-more-b").await.unwrap().is_some());
    let done = releases
        .uninstall("db", &UninstallOptions::default())
        .await
        .unwrap();
    assert_eq!(done, UninstallOutcome::Done);
    for name in ["db-data", "db-more-a", "db-more-b"] {
        assert!(cms.get_opt(name).await.unwrap().is_none(), "{name} deleted");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_record_that_does_not_decode_is_skipped_not_a_wedge() {
    let env = env().await;
    let client = env.client();
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "default");
    let mut junk = Secret::default();
    junk.metadata.name = Some("sh.helm.release.v1.demo.v7".into());
    junk.metadata.labels = Some(
        [("owner", "helm"), ("name", "demo"), ("version", "7")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    );
    junk.type_ = Some("helm.sh/release.v1".into());
    junk.string_data = Some([("release".to_string(), "not base64!".to_string())].into());
    secrets.create(&PostParams::default(), &junk).await.unwrap();

    let (_dir, chart) = chart_dir(APP_CHART);
    let releases = Releases::new(client.clone(), "default");
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
    let history = releases.history("demo").await.unwrap();
    assert_eq!(statuses(&history), vec![(1, Status::Deployed)]);
}
