//! The generic Ansible operator end to end: real `ansible-runner` and `kubernetes.core` from
//! the project's venv (`scripts/install-tools.sh`), a real control plane (`TestEnv`), the
//! operator-sdk tutorial's Memcached role with custom status, a failing task and its
//! recovery, snake_case variables, a finalizer role, no second run of an unchanged
//! custom resource, and the owner-reference proxy: owned and annotated dependents, garbage
//! collection with the custom resource, dependent watches and the blacklist (or no owner at
//! all with `inject_owner_ref` off). Also a playbook-based kind, runs of two custom resources
//! at once, and artifacts rotated and removed with their custom resource.

use std::path::{Path, PathBuf};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
};
use opkit::{ManagerSettings, Running};
use opkit_ansible::{Ansible, OperatorOptions, start};
use opkit_testenv::{TestEnv, eventually_within};
use serde_json::json;

const GROUP: &str = "cache.example.com";
const TIMEOUT: std::time::Duration = std::time::Duration::from_secs(90);

/// The project's venv; a test that needs it fails loudly (naming the install script) when
/// it is missing.
fn venv() -> PathBuf {
    let venv = std::env::var_os("OPKIT_ANSIBLE_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.tools/ansible"));
    if let Err(e) = Ansible::new(&venv, &[]) {
        panic!("these tests run real Ansible: {e}");
    }
    venv
}

fn crd() -> CustomResourceDefinition {
    serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("memcacheds.{GROUP}")},
        "spec": {
            "group": GROUP,
            "names": {"kind": "Memcached", "listKind": "MemcachedList", "plural": "memcacheds",
                      "singular": "memcached"},
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

fn resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(GROUP, "v1alpha1", "Memcached"),
        "memcacheds",
    )
}

/// The operator-sdk tutorial's role: a Deployment of `size` replicas (over a limit the run
/// fails), the run's variables in a ConfigMap, and the custom status `nodes`.
const MEMCACHED_TASKS: &str = r#"
- name: Refuse sizes over the limit
  ansible.builtin.fail:
    msg: "size {{ size }} is over the limit of 5"
  when: (size | int) > 5

- name: Start memcached
  kubernetes.core.k8s:
    definition:
      kind: Deployment
      apiVersion: apps/v1
      metadata:
        name: "{{ ansible_operator_meta.name }}-memcached"
        namespace: "{{ ansible_operator_meta.namespace }}"
      spec:
        replicas: "{{ size | int }}"
        selector:
          matchLabels: {app: memcached}
        template:
          metadata:
            labels: {app: memcached}
          spec:
            containers:
              - name: memcached
                image: memcached:1.4.36-alpine
                command: [memcached, -m=64, -o, modern, -v]
                ports:
                  - containerPort: 11211

- name: Record the variables the run got
  kubernetes.core.k8s:
    definition:
      kind: ConfigMap
      apiVersion: v1
      metadata:
        name: "{{ ansible_operator_meta.name }}-vars"
        namespace: "{{ ansible_operator_meta.namespace }}"
      data:
        replica_count: "{{ replica_count | default('unset') | string }}"
        disk_type: "{{ pod_template.node_selector.disk_type | default('unset') }}"
        raw_spec_key: "{{ _cache_example_com_memcached_spec.replicaCount | default('unset') | string }}"
        cr_name: "{{ _cache_example_com_memcached.metadata.name }}"
        meta_name: "{{ ansible_operator_meta.name }}"

- name: Report the nodes
  operator_sdk.util.k8s_status:
    api_version: cache.example.com/v1alpha1
    kind: Memcached
    name: "{{ ansible_operator_meta.name }}"
    namespace: "{{ ansible_operator_meta.namespace }}"
    status:
      nodes: ["{{ ansible_operator_meta.name }}-0"]
    conditions:
      - type: Available
        status: "True"
        reason: Deployed
        message: "{{ size }} replicas"
"#;

/// The finalizer role: leaves a ConfigMap saying it ran, in the namespace `audit` (one
/// beside its custom resource would be owned by it, and collected with it).
const CLEANUP_TASKS: &str = r#"
- name: Say goodbye
  kubernetes.core.k8s:
    definition:
      kind: ConfigMap
      apiVersion: v1
      metadata:
        name: "{{ ansible_operator_meta.name }}-cleaned-up"
        namespace: audit
      data:
        state: "{{ state }}"
"#;

/// Dependents: a ConfigMap and a Secret beside the custom resource, a ConfigMap in the
/// namespace `audit`.
const DEPENDENT_TASKS: &str = r#"
- name: A ConfigMap beside the custom resource
  kubernetes.core.k8s:
    definition:
      kind: ConfigMap
      apiVersion: v1
      metadata:
        name: "{{ ansible_operator_meta.name }}-owned"
        namespace: "{{ ansible_operator_meta.namespace }}"
      data:
        size: "{{ size | string }}"

- name: A Secret beside it
  kubernetes.core.k8s:
    definition:
      kind: Secret
      apiVersion: v1
      metadata:
        name: "{{ ansible_operator_meta.name }}-secret"
        namespace: "{{ ansible_operator_meta.namespace }}"
      data:
        password: "{{ 'initial' | b64encode }}"

- name: A ConfigMap in another namespace
  kubernetes.core.k8s:
    definition:
      kind: ConfigMap
      apiVersion: v1
      metadata:
        name: "{{ ansible_operator_meta.name }}-remote"
        namespace: audit
      data:
        size: "{{ size | string }}"
"#;

/// A kind served by a playbook: a ConfigMap beside the custom resource.
const PLAYBOOK: &str = r#"
- hosts: localhost
  gather_facts: false
  tasks:
    - name: A ConfigMap from the playbook
      kubernetes.core.k8s:
        definition:
          kind: ConfigMap
          apiVersion: v1
          metadata:
            name: "{{ ansible_operator_meta.name }}-played"
            namespace: "{{ ansible_operator_meta.namespace }}"
          data:
            size: "{{ size | string }}"
"#;

/// Waits until the file the spec names as `gate` exists.
const GATE_TASKS: &str = r#"
- name: Wait for the gate
  ansible.builtin.wait_for:
    path: "{{ gate }}"
    timeout: 120
"#;

struct Operator {
    env: TestEnv,
    running: Running,
    api: Api<DynamicObject>,
    work: tempfile::TempDir,
}

/// A control plane with the Memcached CRD and the namespace `audit`, and the operator
/// serving it with `watches` (written beside the roles and `playbooks/memcached.yml`).
async fn operator(watches: &str) -> Operator {
    operator_with(watches, |_| {}).await
}

/// [`operator`] with options of its own.
async fn operator_with(watches: &str, configure: impl FnOnce(&mut OperatorOptions)) -> Operator {
    let venv = venv();
    let env = TestEnv::start().await.expect("the control plane starts");
    env.install_crd(crd()).await.expect("the CRD installs");
    let audit: Namespace =
        serde_json::from_value(json!({"metadata": {"name": "audit"}})).expect("a namespace");
    Api::<Namespace>::all(env.client())
        .create(&PostParams::default(), &audit)
        .await
        .expect("create the namespace audit");
    let work = tempfile::tempdir().expect("tempdir");
    let project = work.path().join("project");
    for (role, tasks) in [
        ("memcached", MEMCACHED_TASKS),
        ("cleanup", CLEANUP_TASKS),
        ("dependents", DEPENDENT_TASKS),
        ("gate", GATE_TASKS),
    ] {
        let dir = project.join("roles").join(role).join("tasks");
        std::fs::create_dir_all(&dir).expect("mkdir");
        std::fs::write(dir.join("main.yml"), tasks).expect("write tasks");
    }
    std::fs::create_dir_all(project.join("playbooks")).expect("mkdir");
    std::fs::write(project.join("playbooks/memcached.yml"), PLAYBOOK).expect("write playbook");
    std::fs::write(project.join("watches.yaml"), watches).expect("write watches.yaml");
    let mut options = OperatorOptions {
        watches_file: project.join("watches.yaml"),
        manager: ManagerSettings {
            metrics_bind_address: None,
            health_probe_bind_address: None,
            ..ManagerSettings::default()
        },
        max_concurrent_reconciles: Some(2),
        inject_owner_ref: true,
        reconcile_period: None,
        ansible_verbosity: 0,
        venv,
        work_dir: Some(work.path().join("runs")),
    };
    configure(&mut options);
    let running = start(env.client(), options)
        .await
        .expect("the operator starts");
    let api = Api::namespaced_with(env.client(), "default", &resource());
    Operator {
        env,
        running,
        api,
        work,
    }
}

const WATCHES: &str =
    "- version: v1alpha1\n  group: cache.example.com\n  kind: Memcached\n  role: memcached\n";

async fn create(api: &Api<DynamicObject>, name: &str, spec: serde_json::Value) {
    let mut obj = DynamicObject::new(name, &resource());
    obj.data = json!({ "spec": spec });
    api.create(&PostParams::default(), &obj)
        .await
        .expect("create the custom resource");
}

/// The condition `type_` of a custom resource: (status, reason, message).
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
) -> DynamicObject {
    eventually_within(&format!("{name}: {type_}={status}"), TIMEOUT, || async {
        let cr = api.get(name).await.ok()?;
        let (s, _, _) = condition(&cr, type_)?;
        (s == status).then_some(cr)
    })
    .await
}

async fn replicas(env: &TestEnv, name: &str) -> Option<i32> {
    let deployments: Api<Deployment> = Api::namespaced(env.client(), "default");
    deployments.get(name).await.ok()?.spec?.replicas
}

#[tokio::test]
async fn the_memcached_role_deploys_size_replicas_and_reports_its_status() {
    let op = operator(WATCHES).await;
    create(&op.api, "web", json!({"size": 3})).await;
    let cr = wait_condition(&op.api, "web", "Successful", "True").await;
    let (_, reason, message) = condition(&cr, "Running").expect("Running");
    assert_eq!(
        (reason.as_str(), message.as_str()),
        ("Successful", "Awaiting next reconciliation")
    );
    let result = cr.data["status"]["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == "Running"))
        .map(|c| c["ansibleResult"].clone())
        .expect("ansibleResult");
    assert!(result["ok"].as_u64().unwrap_or(0) >= 3, "{result}");
    assert_eq!(result["failures"], 0, "{result}");
    assert!(
        result["completion"].as_str().is_some_and(|c| !c.is_empty()),
        "{result}"
    );
    assert_eq!(condition(&cr, "Failure").map(|c| c.0), Some("False".into()));
    assert_eq!(
        cr.data["status"]["nodes"],
        json!(["web-0"]),
        "k8s_status's custom status"
    );
    assert_eq!(
        condition(&cr, "Available"),
        Some(("True".into(), "Deployed".into(), "3 replicas".into())),
        "k8s_status's custom condition"
    );
    assert_eq!(replicas(&op.env, "web-memcached").await, Some(3));

    op.api
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"size": 4}})),
        )
        .await
        .expect("scale");
    eventually_within("the Deployment scales to 4", TIMEOUT, || async {
        (replicas(&op.env, "web-memcached").await == Some(4)).then_some(())
    })
    .await;
    op.running.shutdown().await.expect("clean shutdown");
}

#[tokio::test]
async fn a_failing_task_sets_failure_with_its_name_and_message_then_recovers() {
    let op = operator(WATCHES).await;
    create(&op.api, "big", json!({"size": 9})).await;
    let cr = wait_condition(&op.api, "big", "Failure", "True").await;
    let (_, reason, message) = condition(&cr, "Failure").expect("Failure");
    assert_eq!(reason, "Failed");
    assert_eq!(
        message,
        "task \"Refuse sizes over the limit\" failed: size 9 is over the limit of 5"
    );
    assert_eq!(
        condition(&cr, "Successful").map(|c| c.0),
        Some("False".into())
    );
    assert_eq!(
        replicas(&op.env, "big-memcached").await,
        None,
        "nothing deployed"
    );

    op.api
        .patch(
            "big",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"size": 2}})),
        )
        .await
        .expect("fix the spec");
    let cr = wait_condition(&op.api, "big", "Successful", "True").await;
    assert_eq!(condition(&cr, "Failure").map(|c| c.0), Some("False".into()));
    assert_eq!(replicas(&op.env, "big-memcached").await, Some(2));
    op.running.shutdown().await.expect("clean shutdown");
}

#[tokio::test]
async fn spec_keys_reach_the_run_in_snake_case_with_operator_sdks_variables() {
    let op = operator(WATCHES).await;
    create(
        &op.api,
        "vars",
        json!({"size": 1, "replicaCount": 7, "podTemplate": {"nodeSelector": {"diskType": "ssd"}}}),
    )
    .await;
    wait_condition(&op.api, "vars", "Successful", "True").await;
    let cms: Api<ConfigMap> = Api::namespaced(op.env.client(), "default");
    let data = cms
        .get("vars-vars")
        .await
        .expect("the run's ConfigMap")
        .data
        .unwrap_or_default();
    assert_eq!(data.get("replica_count").map(String::as_str), Some("7"));
    assert_eq!(data.get("disk_type").map(String::as_str), Some("ssd"));
    assert_eq!(data.get("raw_spec_key").map(String::as_str), Some("7"));
    assert_eq!(data.get("cr_name").map(String::as_str), Some("vars"));
    assert_eq!(data.get("meta_name").map(String::as_str), Some("vars"));
    op.running.shutdown().await.expect("clean shutdown");
}

#[tokio::test]
async fn the_finalizer_role_runs_on_deletion_before_the_custom_resource_goes() {
    let watches = format!(
        "{WATCHES}  finalizer:\n    name: cache.example.com/finalizer\n    role: cleanup\n    vars:\n      state: absent\n"
    );
    let op = operator(&watches).await;
    create(&op.api, "gone", json!({"size": 1})).await;
    let cr = wait_condition(&op.api, "gone", "Successful", "True").await;
    assert!(
        cr.metadata
            .finalizers
            .as_ref()
            .is_some_and(|f| f.iter().any(|n| n == "cache.example.com/finalizer")),
        "the finalizer is on"
    );
    op.api
        .delete("gone", &DeleteParams::default())
        .await
        .expect("delete");
    eventually_within("the custom resource goes", TIMEOUT, || async {
        matches!(op.api.get_opt("gone").await, Ok(None)).then_some(())
    })
    .await;
    let cms: Api<ConfigMap> = Api::namespaced(op.env.client(), "audit");
    let cm = cms
        .get("gone-cleaned-up")
        .await
        .expect("the finalizer role ran");
    assert_eq!(
        cm.data.unwrap_or_default().get("state").map(String::as_str),
        Some("absent"),
        "the finalizer's vars reach its run"
    );
    op.running.shutdown().await.expect("clean shutdown");
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

/// The data directory of the custom resource `name`'s runs.
fn run_dir(work: &Path, name: &str) -> PathBuf {
    work.join(format!(
        "runs/runner/{GROUP}/v1alpha1/Memcached/default/{name}"
    ))
}

/// The runs made so far (ansible-runner's artifact directories).
fn runs(work: &Path, name: &str) -> usize {
    std::fs::read_dir(run_dir(work, name).join("artifacts"))
        .map_or(0, |d| d.flatten().filter(|e| e.path().is_dir()).count())
}

#[tokio::test]
async fn an_unchanged_custom_resource_is_not_run_again() {
    let op = operator(WATCHES).await;
    create(&op.api, "calm", json!({"size": 1})).await;
    wait_condition(&op.api, "calm", "Successful", "True").await;
    assert_eq!(runs(op.work.path(), "calm"), 1);
    eventually_within("the first reconcile ends", TIMEOUT, || async {
        (metric(&op.running, "controller_runtime_reconcile_total") >= 1.0).then_some(())
    })
    .await;
    let before = metric(&op.running, "controller_runtime_reconcile_total");
    // A label change reaches the reconciler (the predicate lets label changes through) …
    op.api
        .patch(
            "calm",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"touched": "yes"}}})),
        )
        .await
        .expect("label");
    eventually_within("the label change is reconciled", TIMEOUT, || async {
        (metric(&op.running, "controller_runtime_reconcile_total") > before).then_some(())
    })
    .await;
    // … which does not run the role again: same generation, no period.
    assert_eq!(runs(op.work.path(), "calm"), 1, "no second run");
    op.api
        .patch(
            "calm",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"size": 2}})),
        )
        .await
        .expect("spec change");
    eventually_within("a spec change runs it again", TIMEOUT, || async {
        (runs(op.work.path(), "calm") == 2).then_some(())
    })
    .await;
    op.running.shutdown().await.expect("clean shutdown");
}

#[tokio::test]
async fn a_missing_venv_stops_the_operator_naming_the_install_script() {
    let env = TestEnv::start().await.expect("the control plane starts");
    let work = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(work.path().join("roles/memcached")).expect("mkdir");
    std::fs::write(work.path().join("watches.yaml"), WATCHES).expect("write");
    let options = OperatorOptions {
        watches_file: work.path().join("watches.yaml"),
        venv: work.path().join("no-venv"),
        work_dir: Some(work.path().join("runs")),
        ..OperatorOptions::default()
    };
    let err = start(env.client(), options).await.expect_err("no venv");
    let text = err.to_string();
    assert!(text.contains("scripts/install-tools.sh"), "{text}");
}

const DEPENDENT_WATCHES: &str =
    "- version: v1alpha1\n  group: cache.example.com\n  kind: Memcached\n  role: dependents\n";

/// The ConfigMap `name` of namespace `namespace`, once it exists.
async fn config_map(env: &TestEnv, namespace: &str, name: &str) -> ConfigMap {
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), namespace);
    eventually_within(
        &format!("ConfigMap {namespace}/{name}"),
        TIMEOUT,
        || async { cms.get_opt(name).await.ok().flatten() },
    )
    .await
}

/// Deletes the ConfigMap and waits for a run to make it again (a new uid).
async fn delete_and_wait_for_it_back(env: &TestEnv, namespace: &str, name: &str) {
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), namespace);
    let before = config_map(env, namespace, name).await.metadata.uid;
    cms.delete(name, &DeleteParams::default())
        .await
        .expect("delete the dependent");
    eventually_within(
        &format!("a run makes {namespace}/{name} again"),
        TIMEOUT,
        || async {
            let cm = cms.get_opt(name).await.ok().flatten()?;
            (cm.metadata.uid != before).then_some(())
        },
    )
    .await;
}

#[tokio::test]
async fn objects_a_role_creates_are_owned_or_annotated_and_collected_with_their_custom_resource() {
    let op = operator(DEPENDENT_WATCHES).await;
    create(&op.api, "owner", json!({"size": 1})).await;
    let cr = wait_condition(&op.api, "owner", "Successful", "True").await;
    let owned = config_map(&op.env, "default", "owner-owned").await;
    assert_eq!(
        serde_json::to_value(owned.metadata.owner_references).expect("json"),
        json!([{"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached", "name": "owner",
                "uid": cr.metadata.uid, "controller": true, "blockOwnerDeletion": true}]),
        "a dependent beside its custom resource is owned by it"
    );
    let remote = config_map(&op.env, "audit", "owner-remote").await;
    assert_eq!(remote.metadata.owner_references, None);
    let annotations = remote.metadata.annotations.unwrap_or_default();
    assert_eq!(
        annotations
            .get("operator-sdk/primary-resource")
            .map(String::as_str),
        Some("default/owner")
    );
    assert_eq!(
        annotations
            .get("operator-sdk/primary-resource-type")
            .map(String::as_str),
        Some("Memcached.cache.example.com")
    );

    // The run's kubeconfig names the proxy and a token that died with the run: the proxy
    // answers such a request itself, with a Status.
    let kubeconfig = kube::config::Kubeconfig::read_from(op.work.path().join(format!(
        "runs/runner/{GROUP}/v1alpha1/Memcached/default/owner/kubeconfig"
    )))
    .expect("the run's kubeconfig");
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .expect("a client config");
    assert!(
        config
            .cluster_url
            .to_string()
            .starts_with("http://127.0.0.1:"),
        "{}",
        config.cluster_url
    );
    let stale = kube::Client::try_from(config).expect("a client");
    match Api::<ConfigMap>::namespaced(stale, "default")
        .list(&Default::default())
        .await
    {
        Err(kube::Error::Api(status)) => {
            assert_eq!((status.code, status.reason.as_str()), (401, "Unauthorized"))
        }
        other => panic!("a finished run's token must be refused: {other:?}"),
    }

    op.api
        .delete("owner", &DeleteParams::default())
        .await
        .expect("delete the custom resource");
    let cms: Api<ConfigMap> = Api::namespaced(op.env.client(), "default");
    let secrets: Api<Secret> = Api::namespaced(op.env.client(), "default");
    eventually_within(
        "the garbage collector deletes the owned dependents",
        TIMEOUT,
        || async {
            let cm = cms.get_opt("owner-owned").await.ok()?;
            let secret = secrets.get_opt("owner-secret").await.ok()?;
            (cm.is_none() && secret.is_none()).then_some(())
        },
    )
    .await;
    let remote: Api<ConfigMap> = Api::namespaced(op.env.client(), "audit");
    assert!(
        remote
            .get_opt("owner-remote")
            .await
            .expect("read")
            .is_some(),
        "an annotated dependent has no owner to be collected with"
    );
    op.running.shutdown().await.expect("clean shutdown");
}

#[tokio::test]
async fn a_changed_or_deleted_dependent_runs_the_role_again() {
    let watches = format!("{DEPENDENT_WATCHES}  watchClusterScopedResources: true\n");
    let op = operator(&watches).await;
    create(&op.api, "keep", json!({"size": 2})).await;
    wait_condition(&op.api, "keep", "Successful", "True").await;
    let cms: Api<ConfigMap> = Api::namespaced(op.env.client(), "default");
    cms.patch(
        "keep-owned",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"size": "edited"}})),
    )
    .await
    .expect("edit the dependent");
    eventually_within("a run puts the edited dependent back", TIMEOUT, || async {
        let cm = cms.get("keep-owned").await.ok()?;
        let size = cm.data?.get("size").cloned()?;
        (size == "2").then_some(())
    })
    .await;
    delete_and_wait_for_it_back(&op.env, "default", "keep-owned").await;
    // In another namespace the annotations say whom it belongs to.
    delete_and_wait_for_it_back(&op.env, "audit", "keep-remote").await;
    op.running.shutdown().await.expect("clean shutdown");
}

#[tokio::test]
async fn a_blacklisted_kind_is_not_watched_and_its_changes_do_not_run_the_role() {
    let watches = format!(
        "{DEPENDENT_WATCHES}  blacklist:\n    - {{group: \"\", version: v1, kind: Secret}}\n"
    );
    let op = operator(&watches).await;
    create(&op.api, "quiet", json!({"size": 1})).await;
    wait_condition(&op.api, "quiet", "Successful", "True").await;
    assert_eq!(runs(op.work.path(), "quiet"), 1);
    let kinds = op.running.watched_kinds();
    assert!(kinds.iter().any(|k| k == "ConfigMap"), "{kinds:?}");
    assert!(!kinds.iter().any(|k| k == "Secret"), "{kinds:?}");
    let secrets: Api<Secret> = Api::namespaced(op.env.client(), "default");
    secrets
        .patch(
            "quiet-secret",
            &PatchParams::default(),
            &Patch::Merge(json!({"stringData": {"password": "edited"}})),
        )
        .await
        .expect("edit the blacklisted dependent");
    // A later change of a watched dependent runs the role once: the Secret's change, had it
    // been seen, would have been a run of its own (its role run puts the Secret back, a
    // change of its own again).
    delete_and_wait_for_it_back(&op.env, "default", "quiet-owned").await;
    wait_condition(&op.api, "quiet", "Successful", "True").await;
    assert_eq!(
        runs(op.work.path(), "quiet"),
        2,
        "only the watched change ran"
    );
    let kinds = op.running.watched_kinds();
    assert!(!kinds.iter().any(|k| k == "Secret"), "{kinds:?}");
    op.running.shutdown().await.expect("clean shutdown");
}

#[tokio::test]
async fn a_playbook_entry_runs_its_playbook_and_reports_success() {
    let op = operator(
        "- version: v1alpha1\n  group: cache.example.com\n  kind: Memcached\n  playbook: playbooks/memcached.yml\n",
    )
    .await;
    create(&op.api, "played", json!({"size": 2})).await;
    let cr = wait_condition(&op.api, "played", "Successful", "True").await;
    assert_eq!(condition(&cr, "Failure").map(|c| c.0), Some("False".into()));
    let cm = config_map(&op.env, "default", "played-played").await;
    assert_eq!(
        cm.data.unwrap_or_default().get("size").map(String::as_str),
        Some("2"),
        "the spec reached the playbook"
    );
    let owners = cm.metadata.owner_references.unwrap_or_default();
    assert_eq!(
        owners.iter().map(|o| o.uid.as_str()).collect::<Vec<_>>(),
        [cr.metadata.uid.as_deref().unwrap_or_default()],
        "what a playbook creates is owned by its custom resource too"
    );
    op.running.shutdown().await.expect("clean shutdown");
}

#[tokio::test]
async fn two_custom_resources_run_at_once_up_to_the_limit() {
    let op = operator(
        "- version: v1alpha1\n  group: cache.example.com\n  kind: Memcached\n  role: gate\n",
    )
    .await;
    let gate = op.work.path().join("gate");
    let spec = json!({"gate": gate.display().to_string()});
    create(&op.api, "first", spec.clone()).await;
    create(&op.api, "second", spec).await;
    // Both runs wait on the gate, so both are Running at once only if they run in parallel
    // (the operator's limit here is 2).
    eventually_within("both custom resources Running at once", TIMEOUT, || async {
        let mut running = 0;
        for name in ["first", "second"] {
            let cr = op.api.get(name).await.ok()?;
            let (status, reason, _) = condition(&cr, "Running")?;
            if status == "True" && reason == "Running" {
                running += 1;
            }
        }
        (running == 2).then_some(())
    })
    .await;
    std::fs::write(&gate, "open").expect("open the gate");
    for name in ["first", "second"] {
        wait_condition(&op.api, name, "Successful", "True").await;
    }
    op.running.shutdown().await.expect("clean shutdown");
}

#[tokio::test]
async fn artifacts_are_rotated_and_removed_with_their_custom_resource() {
    let watches = format!("{WATCHES}  maxRunnerArtifacts: 2\n");
    let op = operator(&watches).await;
    create(&op.api, "rotated", json!({"size": 1})).await;
    for size in 2..=4 {
        eventually_within(&format!("run with size {}", size - 1), TIMEOUT, || async {
            (replicas(&op.env, "rotated-memcached").await == Some(size - 1)).then_some(())
        })
        .await;
        op.api
            .patch(
                "rotated",
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"size": size}})),
            )
            .await
            .expect("resize");
    }
    eventually_within("the fourth run", TIMEOUT, || async {
        (replicas(&op.env, "rotated-memcached").await == Some(4)).then_some(())
    })
    .await;
    wait_condition(&op.api, "rotated", "Successful", "True").await;
    eventually_within("four runs leave two runs' artifacts", TIMEOUT, || async {
        (runs(op.work.path(), "rotated") == 2).then_some(())
    })
    .await;

    op.api
        .delete("rotated", &DeleteParams::default())
        .await
        .expect("delete");
    let dir = run_dir(op.work.path(), "rotated");
    eventually_within(
        "the deleted custom resource's runs are removed",
        TIMEOUT,
        || async { (!dir.exists()).then_some(()) },
    )
    .await;
    op.running.shutdown().await.expect("clean shutdown");
}

#[tokio::test]
async fn without_owner_injection_created_objects_are_left_as_the_role_wrote_them() {
    let op = operator_with(DEPENDENT_WATCHES, |o| o.inject_owner_ref = false).await;
    create(&op.api, "plain", json!({"size": 1})).await;
    wait_condition(&op.api, "plain", "Successful", "True").await;
    let owned = config_map(&op.env, "default", "plain-owned").await;
    assert_eq!(owned.metadata.owner_references, None);
    let remote = config_map(&op.env, "audit", "plain-remote").await;
    assert!(
        !remote
            .metadata
            .annotations
            .unwrap_or_default()
            .contains_key("operator-sdk/primary-resource"),
        "no owner annotations either"
    );
    let kinds = op.running.watched_kinds();
    assert!(
        !kinds.iter().any(|k| k == "ConfigMap" || k == "Secret"),
        "no dependent watches: {kinds:?}"
    );
    op.running.shutdown().await.expect("clean shutdown");
}
