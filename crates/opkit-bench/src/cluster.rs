//! Scenarios for what makes the control plane behave like a cluster: server-side apply next to
//! create and update, the garbage collector deleting many dependents, and the simulated
//! workload controllers bringing a large Deployment to fully available.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, ensure};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

use crate::scenarios::{Outcome, create_namespace, run_concurrent, warm_up};
use crate::server::Server;
use crate::stats::{Progress, Samples, ms};
use crate::{Options, Row, Scenario};

fn rate_row(s: Scenario, what: &str, clients: usize, count: usize, wall: Duration) -> Row {
    let rate = count as f64 / wall.as_secs_f64();
    Row::info(
        s,
        format!(
            "{what}/s, {clients} client{} (n={count})",
            if clients == 1 { "" } else { "s" }
        ),
        format!("{rate:.0}/s"),
    )
}

fn latency_row(s: Scenario, what: &str, clients: usize, latency: &mut Samples) -> Row {
    Row::info(
        s,
        format!("  {what} latency, {clients} client(s), p50 / p99"),
        format!(
            "{} / {}",
            ms(latency.median()),
            ms(latency.percentile(99.0))
        ),
    )
}

fn apply_body(name: &str, i: usize, generation: usize) -> serde_json::Value {
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "labels": {"bench": "apply"}},
        "data": {"index": i.to_string(), "generation": generation.to_string(), "payload": "x".repeat(64)},
    })
}

/// Server-side apply (creating, then changing) next to POST and merge-patch updates of the same
/// ConfigMaps, with one and with many clients, durable store.
pub async fn writes(options: &Options) -> anyhow::Result<Outcome> {
    let s = Scenario::Writes;
    let mut out = Outcome::default();
    let server = Server::start(&options.server).await?;
    let admin = server.client().await?;
    let ns: Arc<str> = Arc::from("bench-writes");
    create_namespace(&admin, &ns).await?;
    let runs = [
        (1, options.counts.applies_single),
        (
            options.counts.concurrency,
            options.counts.applies_concurrent,
        ),
    ];
    for (n_clients, count) in runs {
        let clients = server.clients(n_clients).await?;
        warm_up(&clients, &ns).await?;
        let prefix = format!("w{n_clients}-");

        // 1. POST creates.
        let progress = Progress::start(format!("create, {n_clients} client(s)"), count);
        let (namespace, p) = (ns.clone(), prefix.clone());
        let (mut lat, wall) = run_concurrent(&clients, count, &progress, move |client, i| {
            let (namespace, p) = (namespace.clone(), p.clone());
            async move {
                let api: Api<ConfigMap> = Api::namespaced(client, &namespace);
                let cm: ConfigMap = serde_json::from_value(apply_body(&format!("{p}c{i}"), i, 0))?;
                api.create(&PostParams::default(), &cm).await?;
                Ok(())
            }
        })
        .await?;
        progress.finish();
        out.rows
            .push(rate_row(s, "create (POST)", n_clients, count, wall));
        out.rows.push(latency_row(s, "create", n_clients, &mut lat));

        // 2. Merge-patch updates of those objects.
        let progress = Progress::start(format!("update, {n_clients} client(s)"), count);
        let (namespace, p) = (ns.clone(), prefix.clone());
        let (mut lat, wall) = run_concurrent(&clients, count, &progress, move |client, i| {
            let (namespace, p) = (namespace.clone(), p.clone());
            async move {
                let api: Api<ConfigMap> = Api::namespaced(client, &namespace);
                let patch = json!({"data": {"generation": "1"}});
                api.patch(
                    &format!("{p}c{i}"),
                    &PatchParams::default(),
                    &Patch::Merge(&patch),
                )
                .await?;
                Ok(())
            }
        })
        .await?;
        progress.finish();
        out.rows
            .push(rate_row(s, "update (merge PATCH)", n_clients, count, wall));
        out.rows.push(latency_row(s, "update", n_clients, &mut lat));

        // 3. Server-side apply that creates, then 4. apply that changes a field.
        for (generation, what) in [(0, "apply, creating"), (1, "apply, changing")] {
            let progress = Progress::start(format!("{what}, {n_clients} client(s)"), count);
            let (namespace, p) = (ns.clone(), prefix.clone());
            let (mut lat, wall) = run_concurrent(&clients, count, &progress, move |client, i| {
                let (namespace, p) = (namespace.clone(), p.clone());
                async move {
                    let api: Api<ConfigMap> = Api::namespaced(client, &namespace);
                    let name = format!("{p}a{i}");
                    let body = apply_body(&name, i, generation);
                    api.patch(&name, &PatchParams::apply("bench"), &Patch::Apply(&body))
                        .await?;
                    Ok(())
                }
            })
            .await?;
            progress.finish();
            out.rows.push(rate_row(
                s,
                &format!("{what} (SSA)"),
                n_clients,
                count,
                wall,
            ));
            out.rows.push(latency_row(s, what, n_clients, &mut lat));
        }
    }
    let applied = Api::<ConfigMap>::namespaced(admin.clone(), &ns)
        .list(&ListParams::default().labels("bench=apply"))
        .await?
        .items;
    let expected = 2 * (options.counts.applies_single + options.counts.applies_concurrent);
    ensure!(
        applied.len() == expected,
        "{} objects stored, {expected} written",
        applied.len()
    );
    let sample = applied
        .iter()
        .find(|c| c.metadata.name.as_deref().is_some_and(|n| n.contains("-a")))
        .context("no applied object")?;
    ensure!(
        sample
            .metadata
            .managed_fields
            .as_ref()
            .is_some_and(|m| m.iter().any(|e| e.manager.as_deref() == Some("bench"))),
        "applied objects carry no managedFields entry for the bench manager"
    );
    server.stop().await;
    Ok(out)
}

/// The garbage collector deleting `gc_dependents` ConfigMaps owned by one ConfigMap, with
/// Background and with Foreground propagation.
pub async fn garbage_collection(options: &Options) -> anyhow::Result<Outcome> {
    let s = Scenario::GarbageCollection;
    let mut out = Outcome::default();
    let server = Server::start(&options.server).await?;
    let admin = server.client().await?;
    let ns: Arc<str> = Arc::from("bench-gc");
    create_namespace(&admin, &ns).await?;
    let clients = server.clients(options.counts.concurrency.min(16)).await?;
    warm_up(&clients, &ns).await?;
    let n = options.counts.gc_dependents;
    for policy in ["Background", "Foreground"] {
        let owners: Api<ConfigMap> = Api::namespaced(admin.clone(), &ns);
        let owner_name = format!("owner-{}", policy.to_lowercase());
        let owner: ConfigMap = serde_json::from_value(json!({"metadata": {"name": owner_name}}))?;
        let owner = owners.create(&PostParams::default(), &owner).await?;
        let uid: Arc<str> = Arc::from(owner.metadata.uid.clone().context("owner has no uid")?);
        let label: Arc<str> = Arc::from(format!("bench-gc={}", policy.to_lowercase()));
        let progress = Progress::start(format!("create {n} dependents ({policy})"), n);
        let (namespace, owner_name2, uid2, label2) = (
            ns.clone(),
            Arc::<str>::from(owner_name.as_str()),
            uid.clone(),
            label.clone(),
        );
        run_concurrent(&clients, n, &progress, move |client, i| {
            let (namespace, owner_name, uid, label) = (
                namespace.clone(),
                owner_name2.clone(),
                uid2.clone(),
                label2.clone(),
            );
            async move {
                let api: Api<ConfigMap> = Api::namespaced(client, &namespace);
                let (k, v) = label.split_once('=').unwrap_or(("bench-gc", ""));
                let cm: ConfigMap = serde_json::from_value(json!({
                    "metadata": {
                        "name": format!("{owner_name}-dep-{i}"),
                        "labels": {k: v},
                        "ownerReferences": [{
                            "apiVersion": "v1", "kind": "ConfigMap", "name": &*owner_name,
                            "uid": &*uid, "blockOwnerDeletion": true,
                        }],
                    },
                }))?;
                api.create(&PostParams::default(), &cm).await?;
                Ok(())
            }
        })
        .await?;
        progress.finish();
        let dependents: Api<ConfigMap> = Api::namespaced(admin.clone(), &ns);
        let started = Instant::now();
        let params = if policy == "Foreground" {
            DeleteParams::foreground()
        } else {
            DeleteParams::background()
        };
        owners.delete(&owner_name, &params).await?;
        let deadline = started + options.counts.scenario_timeout;
        let mut owner_gone = None;
        loop {
            let left = dependents
                .list_metadata(&ListParams::default().labels(&label))
                .await?
                .items
                .len();
            if owner_gone.is_none() && owners.get_opt(&owner_name).await?.is_none() {
                owner_gone = Some(started.elapsed());
            }
            if left == 0 && owner_gone.is_some() {
                break;
            }
            ensure!(
                Instant::now() < deadline,
                "{left} of {n} dependents still there"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let all_gone = started.elapsed();
        out.rows.push(Row::info(
            s,
            format!("{policy} delete of an owner → {n} dependents gone"),
            ms(all_gone),
        ));
        if policy == "Foreground" {
            out.rows.push(Row::info(
                s,
                format!("  Foreground: owner gone after its {n} dependents"),
                ms(owner_gone.unwrap_or(all_gone)),
            ));
        }
    }
    server.stop().await;
    Ok(out)
}

/// A `rollout_replicas`-replica Deployment from create to fully available, then an image
/// change rolled out to completion (simulated pods, default pod-ready delay).
pub async fn rollout(options: &Options) -> anyhow::Result<Outcome> {
    let s = Scenario::Rollout;
    let mut out = Outcome::default();
    let server = Server::start(&options.server).await?;
    let admin = server.client().await?;
    let ns = "bench-rollout";
    create_namespace(&admin, ns).await?;
    let replicas = options.counts.rollout_replicas;
    let api: Api<Deployment> = Api::namespaced(admin.clone(), ns);
    let deployment: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]},
            },
        },
    }))?;
    let started = Instant::now();
    api.create(&PostParams::default(), &deployment).await?;
    wait_complete(
        &api,
        "web",
        replicas,
        started + options.counts.scenario_timeout,
    )
    .await?;
    out.rows.push(Row::info(
        s,
        format!("Deployment with {replicas} replicas: create → all available"),
        ms(started.elapsed()),
    ));
    let started = Instant::now();
    let patch = json!({"spec": {"template": {"spec": {"containers": [{"name": "web", "image": "nginx:1.28"}]}}}});
    api.patch("web", &PatchParams::default(), &Patch::Strategic(&patch))
        .await?;
    wait_complete(
        &api,
        "web",
        replicas,
        started + options.counts.scenario_timeout,
    )
    .await?;
    out.rows.push(Row::info(
        s,
        format!("  image change → rolling update of {replicas} replicas complete"),
        ms(started.elapsed()),
    ));
    out.notes.push(
        "rollout: simulated pods become Ready after the default pod-ready delay (200 ms); \
         the rolling update uses the default 25% maxSurge / 25% maxUnavailable"
            .into(),
    );
    server.stop().await;
    Ok(out)
}

/// Waits until the Deployment's rollout is complete as `kubectl rollout status` judges it.
async fn wait_complete(
    api: &Api<Deployment>,
    name: &str,
    replicas: usize,
    deadline: Instant,
) -> anyhow::Result<()> {
    loop {
        let d = api.get(name).await?;
        let generation = d.metadata.generation.unwrap_or(0);
        if let Some(st) = &d.status {
            let want = replicas as i32;
            if st.observed_generation.unwrap_or(0) >= generation
                && st.updated_replicas.unwrap_or(0) == want
                && st.replicas.unwrap_or(0) == want
                && st.available_replicas.unwrap_or(0) == want
            {
                return Ok(());
            }
        }
        ensure!(
            Instant::now() < deadline,
            "deployment {name} not complete: {:?}",
            d.status
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
