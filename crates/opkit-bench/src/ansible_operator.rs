//! Playbook operators (issue 20): the generic Ansible operator (`opkit_ansible::start`, in
//! this process) running operator-sdk's tutorial Memcached role — a Deployment of `size`
//! replicas and the custom status `nodes` through `operator_sdk.util.k8s_status` — with real
//! `ansible-runner` from the project's venv (`scripts/install-tools.sh`). Figures: one custom
//! resource from create to `Successful` (wall time, and the CPU time of the run: the
//! ansible-runner and ansible-playbook processes, children of this process), then many
//! custom resources at once to `Successful` with the operator's default limit of parallel
//! runs (the number of CPUs).

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::{Context, ensure};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DynamicObject, ListParams, PostParams};
use kube::runtime::wait::{await_condition, conditions};
use opkit_ansible::OperatorOptions;
use serde_json::json;

use crate::scenarios::{Outcome, condition_true, create_namespace, open_crd, poll_until};
use crate::server::Server;
use crate::stats::{Progress, children_cpu_time};
use crate::{Options, Row, Scenario};

const GROUP: &str = "cache.example.com";
const KIND: &str = "Memcached";
const PLURAL: &str = "memcacheds";
const NAMESPACE: &str = "bench-ansible";
/// How often the scenario looks (each look lists every custom resource).
const POLL: Duration = Duration::from_millis(100);

/// operator-sdk's tutorial role.
const ROLE: &str = r#"
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

- name: Report the nodes
  operator_sdk.util.k8s_status:
    api_version: cache.example.com/v1alpha1
    kind: Memcached
    name: "{{ ansible_operator_meta.name }}"
    namespace: "{{ ansible_operator_meta.namespace }}"
    status:
      nodes: ["{{ ansible_operator_meta.name }}-0"]
"#;

/// Creates `names` and waits until every one is `Successful`; the wall time and the CPU
/// time the runs' processes used.
async fn to_successful(
    api: &Api<DynamicObject>,
    resource: &ApiResource,
    names: &[String],
    limit: Duration,
) -> anyhow::Result<(Duration, Duration)> {
    let cpu_before = children_cpu_time(std::process::id()).context("reading /proc")?;
    let started = Instant::now();
    for name in names {
        let mut obj = DynamicObject::new(name, resource);
        obj.data = json!({"spec": {"size": 1}});
        api.create(&PostParams::default(), &obj).await?;
    }
    let progress = Progress::start("custom resources Successful", names.len());
    let done = progress.counter();
    poll_until("every custom resource Successful", limit, POLL, || {
        let (api, done) = (api.clone(), done.clone());
        async move {
            let list = api.list(&ListParams::default()).await?;
            let n = list
                .items
                .iter()
                .filter(|o| names.contains(&o.metadata.name.clone().unwrap_or_default()))
                .filter(|o| condition_true(o, "Successful"))
                .count();
            done.store(n, Ordering::Relaxed);
            Ok((n == names.len()).then_some(()))
        }
    })
    .await?;
    progress.finish();
    let wall = started.elapsed();
    let cpu = children_cpu_time(std::process::id()).context("reading /proc")? - cpu_before;
    Ok((wall, cpu))
}

/// The scenario.
pub async fn ansible_operator(options: &Options) -> anyhow::Result<Outcome> {
    let s = Scenario::AnsibleOperator;
    let count = options.counts.ansible_resources;
    let limit = s.timeout(&options.counts);
    let mut out = Outcome::default();
    ensure!(count > 0, "the scenario needs at least one custom resource");
    let venv = opkit_ansible::default_venv();
    opkit_ansible::Ansible::new(&venv, &[])?;
    let scratch = tempfile::Builder::new()
        .prefix("opkit-bench-ansible-")
        .tempdir()?;
    let tasks = scratch.path().join("roles/memcached/tasks");
    std::fs::create_dir_all(&tasks)?;
    std::fs::write(tasks.join("main.yml"), ROLE)?;
    let watches = scratch.path().join("watches.yaml");
    std::fs::write(
        &watches,
        format!("- group: {GROUP}\n  version: v1alpha1\n  kind: {KIND}\n  role: memcached\n"),
    )?;

    let server = Server::start(&options.server).await?;
    let admin = server.client().await?;
    let crds: Api<CustomResourceDefinition> = Api::all(admin.clone());
    crds.create(
        &PostParams::default(),
        &open_crd(GROUP, "v1alpha1", KIND, PLURAL, "memcached")?,
    )
    .await?;
    let crd_name = format!("{PLURAL}.{GROUP}");
    let established = await_condition(crds, &crd_name, conditions::is_crd_established());
    tokio::time::timeout(Duration::from_secs(30), established)
        .await
        .context("the CRD was not established within 30 s")??;
    create_namespace(&admin, NAMESPACE).await?;

    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    let running = opkit_ansible::start(
        server.client().await?,
        OperatorOptions {
            watches_file: watches,
            manager: opkit::ManagerSettings {
                metrics_bind_address: None,
                health_probe_bind_address: None,
                ..opkit::ManagerSettings::default()
            },
            reconcile_period: None,
            ansible_verbosity: 0,
            venv,
            work_dir: Some(scratch.path().join("runs")),
            ..OperatorOptions::default()
        },
    )
    .await?;
    let resource = ApiResource {
        group: GROUP.into(),
        version: "v1alpha1".into(),
        api_version: format!("{GROUP}/v1alpha1"),
        kind: KIND.into(),
        plural: PLURAL.into(),
    };
    let api: Api<DynamicObject> = Api::namespaced_with(admin.clone(), NAMESPACE, &resource);

    let (one_wall, one_cpu) = to_successful(&api, &resource, &["one".to_string()], limit).await?;
    let names: Vec<String> = (0..count).map(|i| format!("memcached-{i}")).collect();
    let (many_wall, many_cpu) = to_successful(&api, &resource, &names, limit).await?;
    running.shutdown().await?;
    server.stop().await;

    out.rows.push(Row::info(
        s,
        "one Memcached reconcile: create to Successful (wall)",
        format!("{:.2} s", one_wall.as_secs_f64()),
    ));
    out.rows.push(Row::info(
        s,
        "  CPU time of its run (ansible-runner and ansible-playbook)",
        format!("{:.2} s", one_cpu.as_secs_f64()),
    ));
    out.rows.push(Row::info(
        s,
        format!("{count} Memcacheds to Successful ({workers} runs at once)"),
        format!("{:.1} s", many_wall.as_secs_f64()),
    ));
    out.rows.push(Row::info(
        s,
        "  CPU time per custom resource (its runs' processes)",
        format!("{:.2} s", many_cpu.as_secs_f64() / count as f64),
    ));
    out.rows.push(Row::info(
        s,
        "  custom resources Successful/s",
        format!("{:.2}/s", count as f64 / many_wall.as_secs_f64()),
    ));
    Ok(out)
}
