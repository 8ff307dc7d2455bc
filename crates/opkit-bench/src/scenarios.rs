//! The scenarios. Each starts its own fresh server (and data dir), so they are independent.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, DynamicObject, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use kube::core::{ApiResource, GroupVersionKind};
use opkit_controlplane::{Config, ControlPlane};
use serde_json::json;

use crate::server::{Server, UpProcess, client_for_kubeconfig, readyz};
use crate::stats::{Progress, Samples, cpu_time, memory_kib, mib, ms};
use crate::{Options, Row, Scenario};

/// What a scenario produced.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Table rows.
    pub rows: Vec<Row>,
    /// Remarks for the report.
    pub notes: Vec<String>,
}

/// Runs one scenario.
pub async fn run(scenario: Scenario, options: &Options) -> anyhow::Result<Outcome> {
    match scenario {
        Scenario::Startup => startup(options).await,
        Scenario::Creates => creates(options).await,
        Scenario::GetList => get_list(options).await,
        Scenario::Watch => watch(options).await,
        Scenario::Memory => memory(options).await,
        Scenario::Writes => crate::cluster::writes(options).await,
        Scenario::GarbageCollection => crate::cluster::garbage_collection(options).await,
        Scenario::Rollout => crate::cluster::rollout(options).await,
        Scenario::Admission => crate::admission::admission(options).await,
        Scenario::Conversion => crate::conversion::conversion(options).await,
        Scenario::Charts => crate::charts::charts(options).await,
        Scenario::ChartOperator => crate::chart_operator::chart_operator(options).await,
        Scenario::AnsibleOperator => crate::ansible_operator::ansible_operator(options).await,
        Scenario::Kudo => crate::kudo::kudo(options).await,
        Scenario::Olm => crate::olm::olm(options).await,
        Scenario::E2e => crate::e2e::e2e(options).await,
        Scenario::Metering => crate::metering::metering(options).await,
    }
}

const STARTUP_TARGET: Duration = Duration::from_millis(50);
const CREATES_TARGET: f64 = 5_000.0;
const WATCH_TARGET: Duration = Duration::from_millis(5);
const MEMORY_TARGET_KIB: u64 = 100 * 1024;

// ---------------------------------------------------------------------------------------------
// 1. start-to-ready

async fn startup(options: &Options) -> anyhow::Result<Outcome> {
    let s = Scenario::Startup;
    let n = options.counts.starts;
    let mut out = Outcome::default();
    for durable in [false, true] {
        let kind = if durable { "durable" } else { "ephemeral" };
        let mut returned = Samples::with_capacity(n);
        let mut client_built = Samples::with_capacity(n);
        let mut ready = Samples::with_capacity(n);
        let progress = Progress::start(format!("ControlPlane::start ({kind})"), n);
        // One warm-up start first (lazy initialisation in this process), not counted.
        for i in 0..=n {
            let dir = tempfile::Builder::new()
                .prefix("opkit-bench-start-")
                .tempdir()?;
            let mut config = Config::ephemeral();
            if durable {
                config.data_dir = Some(dir.path().join("data"));
            }
            let t0 = Instant::now();
            let plane = ControlPlane::start(config)
                .await
                .context("ControlPlane::start")?;
            let t_returned = t0.elapsed();
            let client = client_for_kubeconfig(plane.kubeconfig()).await?;
            let t_client = t0.elapsed();
            let answer = readyz(&client).await?;
            let t_ready = t0.elapsed();
            ensure!(answer.trim() == "ok", "/readyz answered {answer:?}");
            drop(client);
            plane.shutdown().await;
            if i > 0 {
                returned.push(t_returned);
                client_built.push(t_client - t_returned);
                ready.push(t_ready);
                progress.inc();
            }
        }
        progress.finish();
        let (median, p99) = (ready.median(), ready.percentile(99.0));
        out.rows.push(Row::info(
            s,
            format!("ControlPlane::start returned, {kind}, median"),
            ms(returned.median()),
        ));
        out.rows.push(Row::info(
            s,
            "  + kube-rs client built from its kubeconfig, median",
            ms(client_built.median()),
        ));
        if durable {
            out.rows.push(Row::info(
                s,
                format!("start → /readyz answered, {kind}, median (n={n})"),
                ms(median),
            ));
            out.rows.push(Row::info(
                s,
                format!("start → /readyz answered, {kind}, p99"),
                ms(p99),
            ));
        } else {
            let target = format!("< {}", ms(STARTUP_TARGET));
            out.rows.push(Row::target(
                s,
                format!("start → /readyz answered, {kind}, median (n={n})"),
                ms(median),
                &target,
                median < STARTUP_TARGET,
            ));
            out.rows.push(Row::target(
                s,
                format!("start → /readyz answered, {kind}, p99"),
                ms(p99),
                &target,
                p99 < STARTUP_TARGET,
            ));
        }
    }

    let Some(bin) = &options.opkit_bin else {
        out.notes.push("startup: `opkit up` not measured (no opkit binary; build it with `cargo build --release -p opkit-cli`)".into());
        return Ok(out);
    };
    let n = options.counts.up_starts;
    let mut line = Samples::with_capacity(n);
    let mut answered = Samples::with_capacity(n);
    let mut idle_rss = Vec::with_capacity(n);
    let progress = Progress::start("opkit up --ephemeral", n);
    for _ in 0..n {
        let dir = tempfile::Builder::new()
            .prefix("opkit-bench-up-")
            .tempdir()?;
        let kubeconfig = dir.path().join("kubeconfig");
        let kubeconfig = kubeconfig.to_str().context("non-UTF-8 temp dir")?;
        let t0 = Instant::now();
        let mut up = UpProcess::spawn(
            bin,
            &[
                "up",
                "--ephemeral",
                "--listen",
                "127.0.0.1:0",
                "--kubeconfig",
                kubeconfig,
            ],
        )
        .await?;
        let yaml = std::fs::read_to_string(&up.kubeconfig_path)?;
        let client = client_for_kubeconfig(&yaml).await?;
        readyz(&client).await?;
        answered.push(t0.elapsed());
        line.push(up.ready_after);
        if let Some((rss, _)) = memory_kib(up.pid) {
            idle_rss.push(rss);
        }
        drop(client);
        up.stop().await;
        progress.inc();
    }
    progress.finish();
    idle_rss.sort_unstable();
    let target = format!("< {}", ms(STARTUP_TARGET));
    let median = line.median();
    out.rows.push(Row::target(
        s,
        format!("`opkit up --ephemeral` spawn → ready line, median (n={n})"),
        ms(median),
        target,
        median < STARTUP_TARGET,
    ));
    out.rows.push(Row::info(
        s,
        "`opkit up --ephemeral` spawn → ready line, max",
        ms(line.max()),
    ));
    out.rows.push(Row::info(
        s,
        "`opkit up --ephemeral` spawn → first /readyz answered, median",
        ms(answered.median()),
    ));
    if let Some(rss) = idle_rss.get(idle_rss.len() / 2) {
        out.rows.push(Row::info(
            s,
            "`opkit up --ephemeral` idle VmRSS, median",
            mib(*rss),
        ));
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// Helpers shared by the load scenarios.

pub(crate) async fn create_namespace(client: &kube::Client, name: &str) -> anyhow::Result<()> {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": name}}))?;
    namespaces
        .create(&PostParams::default(), &ns)
        .await
        .with_context(|| format!("creating namespace {name}"))?;
    Ok(())
}

fn config_map(name: &str, i: usize) -> ConfigMap {
    let mut data = std::collections::BTreeMap::new();
    data.insert("index".to_string(), i.to_string());
    data.insert("payload".to_string(), "x".repeat(64));
    ConfigMap {
        metadata: kube::api::ObjectMeta {
            name: Some(name.to_string()),
            ..Default::default()
        },
        data: Some(data),
        ..Default::default()
    }
}

/// Makes one request per client so connections (TLS handshakes) are set up before timing.
pub(crate) async fn warm_up(clients: &[kube::Client], namespace: &str) -> anyhow::Result<()> {
    let gets = clients.iter().map(|c| {
        let namespaces: Api<Namespace> = Api::all(c.clone());
        async move { namespaces.get(namespace).await }
    });
    for r in futures::future::join_all(gets).await {
        r?;
    }
    Ok(())
}

/// Polls `check` every `every` until it returns `Some` (its value) or an error (returned at
/// once); fails naming `what` after `limit`. The benchmark's one wait for something the
/// system will do (scenarios that time two events in one loop keep their own).
pub(crate) async fn poll_until<T, F, Fut>(
    what: &str,
    limit: Duration,
    every: Duration,
    mut check: F,
) -> anyhow::Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = anyhow::Result<Option<T>>>,
{
    let started = Instant::now();
    loop {
        if let Some(v) = check().await? {
            return Ok(v);
        }
        if started.elapsed() > limit {
            bail!("{what}: not reached within {limit:?}");
        }
        tokio::time::sleep(every).await;
    }
}

/// Runs `op(client, i)` for `i` in `0..count`, spread over one task per client, each task
/// issuing its requests one after another. Returns every request's latency and the wall time.
pub(crate) async fn run_concurrent<F, Fut>(
    clients: &[kube::Client],
    count: usize,
    progress: &Progress,
    op: F,
) -> anyhow::Result<(Samples, Duration)>
where
    F: Fn(kube::Client, usize) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = anyhow::Result<()>> + Send + 'static,
{
    let next = Arc::new(AtomicUsize::new(0));
    let done = progress.counter();
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for client in clients {
        let (client, next, done, op) = (client.clone(), next.clone(), done.clone(), op.clone());
        tasks.spawn(async move {
            let mut samples = Samples::with_capacity(count / 8 + 1);
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= count {
                    break;
                }
                let t = Instant::now();
                op(client.clone(), i).await?;
                samples.push(t.elapsed());
                done.fetch_add(1, Ordering::Relaxed);
            }
            anyhow::Ok(samples)
        });
    }
    let mut all = Samples::with_capacity(count);
    while let Some(joined) = tasks.join_next().await {
        all.extend(joined??);
    }
    Ok((all, started.elapsed()))
}

/// Creates `count` ConfigMaps `{prefix}{i}` in `namespace` with `clients.len()` concurrent clients.
async fn create_config_maps(
    clients: &[kube::Client],
    namespace: &str,
    prefix: &str,
    count: usize,
    progress: &Progress,
) -> anyhow::Result<(Samples, Duration)> {
    let (namespace, prefix) = (Arc::<str>::from(namespace), Arc::<str>::from(prefix));
    run_concurrent(clients, count, progress, move |client, i| {
        let (namespace, prefix) = (namespace.clone(), prefix.clone());
        async move {
            let api: Api<ConfigMap> = Api::namespaced(client, &namespace);
            api.create(
                &PostParams::default(),
                &config_map(&format!("{prefix}{i}"), i),
            )
            .await?;
            Ok(())
        }
    })
    .await
}

fn per_op(total: Duration, ops: usize) -> String {
    format!("{:.0} µs", total.as_secs_f64() * 1e6 / ops.max(1) as f64)
}

// ---------------------------------------------------------------------------------------------
// 2. creates/s

async fn creates(options: &Options) -> anyhow::Result<Outcome> {
    let s = Scenario::Creates;
    let mut out = Outcome::default();
    let server = Server::start(&options.server).await?;
    let who = if server.is_process() {
        "server process"
    } else {
        "bench process (server in-process)"
    };
    let admin = server.client().await?;
    let ns = "bench-creates";
    create_namespace(&admin, ns).await?;
    let runs = [
        (1, options.counts.creates_single),
        (
            options.counts.concurrency,
            options.counts.creates_concurrent,
        ),
    ];
    for (index, (n_clients, count)) in runs.into_iter().enumerate() {
        let clients = server.clients(n_clients).await?;
        warm_up(&clients, ns).await?;
        let progress = Progress::start(format!("creates, {n_clients} client(s)"), count);
        let (cpu_server0, cpu_self0) = (cpu_time(server.pid()), cpu_time(std::process::id()));
        let (mut latency, wall) =
            create_config_maps(&clients, ns, &format!("c{index}-"), count, &progress).await?;
        let (cpu_server1, cpu_self1) = (cpu_time(server.pid()), cpu_time(std::process::id()));
        progress.finish();
        let rate = count as f64 / wall.as_secs_f64();
        let label = format!(
            "ConfigMap creates/s, {n_clients} client{}, durable (n={count})",
            if n_clients == 1 { "" } else { "s" }
        );
        if n_clients >= 64 {
            out.rows.push(Row::target(
                s,
                label,
                format!("{rate:.0}/s"),
                format!("≥ {CREATES_TARGET:.0}/s"),
                rate >= CREATES_TARGET,
            ));
        } else {
            out.rows.push(Row::info(s, label, format!("{rate:.0}/s")));
        }
        out.rows.push(Row::info(
            s,
            format!("  create latency, {n_clients} client(s), p50 / p99"),
            format!(
                "{} / {}",
                ms(latency.median()),
                ms(latency.percentile(99.0))
            ),
        ));
        if let (Some(a), Some(b)) = (cpu_server0, cpu_server1) {
            out.rows.push(Row::info(
                s,
                format!("  CPU per create, {who}, {n_clients} client(s)"),
                per_op(b - a, count),
            ));
        }
        if server.is_process()
            && let (Some(a), Some(b)) = (cpu_self0, cpu_self1)
        {
            out.rows.push(Row::info(
                s,
                format!("  CPU per create, bench (kube-rs clients), {n_clients} client(s)"),
                per_op(b - a, count),
            ));
        }
    }
    let total = options.counts.creates_single + options.counts.creates_concurrent;
    if let Some((rss, hwm)) = memory_kib(server.pid()) {
        out.rows.push(Row::info(
            s,
            format!("  {who} VmRSS / VmHWM after {total} ConfigMaps"),
            format!("{} / {}", mib(rss), mib(hwm)),
        ));
    }
    // Every acknowledged create is there (checked after the memory reading).
    let stored = Api::<ConfigMap>::namespaced(admin.clone(), ns)
        .list(&ListParams::default())
        .await?
        .items
        .len();
    ensure!(
        stored == total,
        "{stored} ConfigMaps stored, {total} created"
    );
    server.stop().await;
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// 3. GET and LIST latency

async fn get_list(options: &Options) -> anyhow::Result<Outcome> {
    let s = Scenario::GetList;
    let c = &options.counts;
    let mut out = Outcome::default();
    let server = Server::start(&options.server).await?;
    let admin = server.client().await?;
    let ns = "bench-list";
    create_namespace(&admin, ns).await?;
    let clients = server.clients(c.concurrency).await?;
    let progress = Progress::start(
        format!("populating {} ConfigMaps", c.list_objects),
        c.list_objects,
    );
    create_config_maps(&clients, ns, "cm-", c.list_objects, &progress).await?;
    progress.finish();
    drop(clients);

    let client = server.client().await?;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
    api.get("cm-0").await?; // connection set up
    let mut gets = Samples::with_capacity(c.gets);
    let progress = Progress::start("GETs", c.gets);
    for _ in 0..c.gets {
        let t = Instant::now();
        let cm = api.get("cm-0").await?;
        gets.push(t.elapsed());
        ensure!(cm.metadata.name.as_deref() == Some("cm-0"));
        progress.inc();
    }
    progress.finish();
    out.rows.push(Row::info(
        s,
        format!("GET one ConfigMap (kube-rs, typed), p50 (n={})", c.gets),
        ms(gets.median()),
    ));
    out.rows.push(Row::info(
        s,
        "GET one ConfigMap (kube-rs, typed), p99",
        ms(gets.percentile(99.0)),
    ));

    let n = c.list_objects;
    let mut typed = Samples::with_capacity(c.lists);
    let progress = Progress::start(format!("LISTs of {n} (typed)"), c.lists);
    for _ in 0..c.lists {
        let t = Instant::now();
        let list = api.list(&ListParams::default()).await?;
        typed.push(t.elapsed());
        ensure!(
            list.items.len() == n,
            "LIST returned {} items, expected {n}",
            list.items.len()
        );
        progress.inc();
    }
    progress.finish();

    let mut raw = Samples::with_capacity(c.lists);
    let mut bytes = 0;
    let cpu0 = cpu_time(server.pid());
    let progress = Progress::start(format!("LISTs of {n} (raw bytes)"), c.lists);
    for _ in 0..c.lists {
        let request =
            http::Request::get(format!("/api/v1/namespaces/{ns}/configmaps")).body(Vec::new())?;
        let t = Instant::now();
        let text = admin.request_text(request).await?;
        raw.push(t.elapsed());
        bytes = text.len();
        progress.inc();
    }
    progress.finish();
    let cpu1 = cpu_time(server.pid());
    out.rows.push(Row::info(
        s,
        format!("LIST {n} ConfigMaps (kube-rs, typed), p50 (n={})", c.lists),
        ms(typed.median()),
    ));
    out.rows.push(Row::info(
        s,
        format!("LIST {n} ConfigMaps (kube-rs, typed), p99"),
        ms(typed.percentile(99.0)),
    ));
    out.rows.push(Row::info(
        s,
        format!(
            "LIST {n} ConfigMaps (raw response, {:.1} MiB), p50 / p99",
            bytes as f64 / 1048576.0
        ),
        format!("{} / {}", ms(raw.median()), ms(raw.percentile(99.0))),
    ));
    if server.is_process()
        && let (Some(a), Some(b)) = (cpu0, cpu1)
    {
        out.rows.push(Row::info(
            s,
            "  server CPU per raw LIST",
            ms((b - a) / c.lists.max(1) as u32),
        ));
    }
    server.stop().await;
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// 4. watch latency

fn rv_of(meta: &kube::api::ObjectMeta) -> anyhow::Result<u64> {
    meta.resource_version
        .as_deref()
        .context("no resourceVersion")?
        .parse()
        .context("resourceVersion is not a number")
}

async fn watch(options: &Options) -> anyhow::Result<Outcome> {
    let s = Scenario::Watch;
    let n = options.counts.watch_events;
    let mut out = Outcome::default();
    let server = Server::start(&options.server).await?;
    let writer = server.client().await?;
    let ns = "bench-watch";
    create_namespace(&writer, ns).await?;
    let writes: Api<ConfigMap> = Api::namespaced(writer, ns);
    let from = writes
        .list(&ListParams::default().limit(1))
        .await?
        .metadata
        .resource_version
        .context("list has no resourceVersion")?;

    let watcher: Api<ConfigMap> = Api::namespaced(server.client().await?, ns);
    let mut stream = watcher
        .watch(&WatchParams::default().timeout(290), &from)
        .await?
        .boxed();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(u64, Instant)>();
    let watch_task = tokio::spawn(async move {
        while let Some(event) = stream.next().await {
            let received = Instant::now();
            let obj = match event? {
                WatchEvent::Added(o) | WatchEvent::Modified(o) => o,
                WatchEvent::Error(e) => bail!("watch error: {e}"),
                _ => continue,
            };
            if tx.send((rv_of(&obj.metadata)?, received)).is_err() {
                break;
            }
        }
        anyhow::Ok(())
    });

    // One write at a time: create cm-k, then update it, alternating.
    let mut acks: Vec<(u64, Instant, Instant)> = Vec::with_capacity(n);
    let progress = Progress::start("writes watched", n);
    for i in 0..n {
        let name = format!("cm-{}", i / 2);
        let sent = Instant::now();
        let obj = if i % 2 == 0 {
            writes
                .create(&PostParams::default(), &config_map(&name, i))
                .await?
        } else {
            let patch = json!({"data": {"index": i.to_string()}});
            writes
                .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await?
        };
        let acked = Instant::now();
        acks.push((rv_of(&obj.metadata)?, sent, acked));
        progress.inc();
    }
    progress.finish();

    let mut events: HashMap<u64, Instant> = HashMap::with_capacity(n);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while events.len() < n {
        match tokio::time::timeout_at(deadline, rx.recv()).await {
            Ok(Some((rv, at))) => {
                events.insert(rv, at);
            }
            Ok(None) => break,
            Err(_) => break,
        }
    }
    watch_task.abort();
    if let Ok(Ok(Err(e))) = tokio::time::timeout(Duration::from_secs(1), watch_task).await {
        bail!("{e:#}");
    }
    ensure!(
        events.len() >= n,
        "the watcher received {} of {n} events within 10 s of the last write",
        events.len()
    );

    let mut after_ack = Samples::with_capacity(n);
    let mut after_send = Samples::with_capacity(n);
    let mut before_ack = 0;
    for (rv, sent, acked) in &acks {
        let at = *events
            .get(rv)
            .with_context(|| format!("no event for resourceVersion {rv}"))?;
        if at < *acked {
            before_ack += 1;
        }
        after_ack.push(at.saturating_duration_since(*acked));
        after_send.push(at.saturating_duration_since(*sent));
    }
    let p99 = after_ack.percentile(99.0);
    let target = format!("< {}", ms(WATCH_TARGET));
    out.rows.push(Row::info(
        s,
        format!("write acknowledged → watch event, p50 (n={n})"),
        ms(after_ack.median()),
    ));
    out.rows.push(Row::target(
        s,
        "write acknowledged → watch event, p99",
        ms(p99),
        target,
        p99 < WATCH_TARGET,
    ));
    out.rows.push(Row::info(
        s,
        "  events received before the write's response",
        format!("{before_ack} of {n}"),
    ));
    out.rows.push(Row::info(
        s,
        "  write sent → watch event, p50 / p99",
        format!(
            "{} / {}",
            ms(after_send.median()),
            ms(after_send.percentile(99.0))
        ),
    ));
    server.stop().await;
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// 5. memory with custom resources

/// A small CRD (the FlightTicket one of the apiserver tests).
pub fn flight_ticket_crd() -> serde_json::Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "flighttickets.flights.com"},
        "spec": {
            "group": "flights.com",
            "scope": "Namespaced",
            "names": {"kind": "FlightTicket", "singular": "flightticket", "plural": "flighttickets", "shortNames": ["ft"]},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "spec": {"type": "object", "properties": {
                            "from": {"type": "string"},
                            "to": {"type": "string"},
                            "number": {"type": "integer", "minimum": 1, "maximum": 10}
                        }},
                        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
                    }
                }}
            }]
        }
    })
}

async fn install_flight_ticket_crd(client: &kube::Client) -> anyhow::Result<()> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd: CustomResourceDefinition = serde_json::from_value(flight_ticket_crd())?;
    crds.create(&PostParams::default(), &crd).await?;
    let established = kube::runtime::wait::await_condition(
        crds,
        "flighttickets.flights.com",
        kube::runtime::wait::conditions::is_crd_established(),
    );
    tokio::time::timeout(Duration::from_secs(10), established)
        .await
        .context("CRD not established in 10 s")??;
    Ok(())
}

async fn memory(options: &Options) -> anyhow::Result<Outcome> {
    let s = Scenario::Memory;
    let n = options.counts.memory_objects;
    let mut out = Outcome::default();
    let server = Server::start(&options.server).await?;
    let who = if server.is_process() {
        "server"
    } else {
        "bench process (server in-process)"
    };
    let idle = memory_kib(server.pid());
    let admin = server.client().await?;
    install_flight_ticket_crd(&admin).await?;
    let ns = "bench-memory";
    create_namespace(&admin, ns).await?;
    let clients = server.clients(options.counts.concurrency).await?;
    let progress = Progress::start(format!("creating {n} FlightTickets"), n);
    let (_, wall) = run_concurrent(&clients, n, &progress, move |client, i| async move {
        let ar = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("flights.com", "v1", "FlightTicket"),
            "flighttickets",
        );
        let api: Api<DynamicObject> = Api::namespaced_with(client, ns, &ar);
        let mut ticket = DynamicObject::new(&format!("ticket-{i}"), &ar);
        ticket.data = json!({"spec": {"from": "AMS", "to": "SFO", "number": 1 + i % 10}});
        api.create(&PostParams::default(), &ticket).await?;
        Ok(())
    })
    .await?;
    progress.finish();
    drop(clients);
    let (rss, hwm) = memory_kib(server.pid()).context("cannot read /proc/PID/status")?;
    let target = format!("< {}", mib(MEMORY_TARGET_KIB));
    if let Some((idle_rss, _)) = idle {
        out.rows.push(Row::info(
            s,
            format!("{who} VmRSS after start (empty store)"),
            mib(idle_rss),
        ));
    }
    out.rows.push(Row::target(
        s,
        format!("{who} VmRSS with {n} FlightTickets"),
        mib(rss),
        &target,
        rss < MEMORY_TARGET_KIB,
    ));
    out.rows.push(Row::target(
        s,
        format!("{who} VmHWM (peak) with {n} FlightTickets"),
        mib(hwm),
        &target,
        hwm < MEMORY_TARGET_KIB,
    ));
    out.rows.push(Row::info(
        s,
        format!(
            "  FlightTicket creates/s while filling ({} clients)",
            options.counts.concurrency
        ),
        format!("{:.0}/s", n as f64 / wall.as_secs_f64()),
    ));
    if let Some(dir) = server.data_dir()
        && let Ok(meta) = std::fs::metadata(dir.join("store.redb"))
    {
        out.rows
            .push(Row::info(s, "  store.redb size", mib(meta.len() / 1024)));
    }
    server.stop().await;
    Ok(out)
}

/// A namespaced kind whose spec and status take anything, with the status subresource: how
/// the generic (chart and Ansible) operators' kinds are declared.
pub(crate) fn open_crd(
    group: &str,
    version: &str,
    kind: &str,
    plural: &str,
    singular: &str,
) -> anyhow::Result<CustomResourceDefinition> {
    let open = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
    Ok(serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{group}")},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"kind": kind, "plural": plural, "singular": singular,
                      "listKind": format!("{kind}List")},
            "versions": [{
                "name": version, "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": open, "status": open,
                }}},
            }],
        },
    }))?)
}

/// Whether `obj`'s status has the condition `condition` with status `True`.
pub(crate) fn condition_true(obj: &kube::api::DynamicObject, condition: &str) -> bool {
    obj.data["status"]["conditions"]
        .as_array()
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| c["type"] == condition && c["status"] == "True")
        })
}
