//! Chart operators (issue 15): many custom resources of the `helm create` chart brought to
//! `Deployed` by the generic chart operator (`opkit_chart_operator::start`, in this process)
//! against the benchmark's server. Figures: the time until every release is deployed,
//! reconciles per second, API writes per installed release and per steady-state reconcile
//! (the target is zero: an unchanged custom resource is compared with what is deployed without
//! a write), and the operator's memory per release (this process's RSS growth, the server
//! running in its own process by default).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DynamicObject, ListParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::wait::{await_condition, conditions};
use opkit_chart_operator::OperatorOptions;
use serde_json::json;

use crate::scenarios::{
    Outcome, condition_true, create_namespace, open_crd, poll_until, run_concurrent,
};
use crate::server::Server;
use crate::stats::{Progress, memory_kib, mib};
use crate::{Options, Row, Scenario};

const GROUP: &str = "bench.opkit.dev";
const KIND: &str = "App";
const PLURAL: &str = "apps";
const NAMESPACE: &str = "bench-charts";
/// How often the operator reconciles an unchanged custom resource (the steady state).
const RECONCILE_PERIOD: &str = "5s";
/// How often the scenario looks (each look lists every custom resource).
const POLL: Duration = Duration::from_millis(50);

/// Counts the requests of an operator's client: all of them, and those that write (every
/// method but GET).
#[derive(Clone, Default)]
pub(crate) struct WriteCounter(Arc<AtomicUsize>, Arc<AtomicUsize>);

impl WriteCounter {
    /// The writes so far.
    pub(crate) fn get(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }

    /// The requests so far (reads and writes; a watch counts once, when it starts).
    pub(crate) fn requests(&self) -> usize {
        self.1.load(Ordering::SeqCst)
    }
}

/// A client of `server` whose requests and writes `counter` counts.
pub(crate) async fn counting_client(
    kubeconfig: &str,
    counter: &WriteCounter,
) -> anyhow::Result<kube::Client> {
    let kubeconfig = Kubeconfig::from_yaml(kubeconfig).context("kubeconfig parses")?;
    let config =
        kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?;
    let (writes, requests) = (counter.0.clone(), counter.1.clone());
    let layer = tower::util::MapRequestLayer::new(move |req: http::Request<kube::client::Body>| {
        requests.fetch_add(1, Ordering::SeqCst);
        if req.method() != http::Method::GET {
            writes.fetch_add(1, Ordering::SeqCst);
        }
        req
    });
    Ok(kube::client::ClientBuilder::try_from(config)?
        .with_layer(&layer)
        .build())
}

/// The sum of `controller_runtime_reconcile_total` over results.
fn reconciles(metrics: &str) -> anyhow::Result<u64> {
    let mut total = 0;
    for line in metrics.lines() {
        if let Some(rest) = line.strip_prefix("controller_runtime_reconcile_total{") {
            let value = rest.rsplit(' ').next().unwrap_or_default();
            total += value
                .parse::<f64>()
                .with_context(|| format!("metric line {line:?}"))? as u64;
        }
    }
    Ok(total)
}

/// The scenario.
pub async fn chart_operator(options: &Options) -> anyhow::Result<Outcome> {
    let s = Scenario::ChartOperator;
    let count = options.counts.chart_releases;
    let limit = options.counts.scenario_timeout;
    let mut out = Outcome::default();
    let Some(helm) = crate::charts::helm() else {
        bail!(
            "the chart operator scenario needs helm (for `helm create`): run scripts/install-tools.sh or set HELM_BIN"
        );
    };
    let scratch = tempfile::Builder::new()
        .prefix("opkit-bench-op-")
        .tempdir()?;
    let created = crate::charts::helm_command(&helm, scratch.path())
        .current_dir(scratch.path())
        .args(["create", "app"])
        .output()
        .context("running helm create")?;
    ensure!(
        created.status.success(),
        "helm create failed: {}",
        String::from_utf8_lossy(&created.stderr)
    );
    let watches = scratch.path().join("watches.yaml");
    std::fs::write(
        &watches,
        format!(
            "- group: {GROUP}\n  version: v1\n  kind: {KIND}\n  chart: ./app\n  reconcilePeriod: {RECONCILE_PERIOD}\n"
        ),
    )?;

    let server = Server::start(&options.server).await?;
    let admin = server.client().await?;
    let crds: Api<CustomResourceDefinition> = Api::all(admin.clone());
    crds.create(
        &PostParams::default(),
        &open_crd(GROUP, "v1", KIND, PLURAL, "app")?,
    )
    .await?;
    let crd_name = format!("{PLURAL}.{GROUP}");
    let established = await_condition(crds, &crd_name, conditions::is_crd_established());
    tokio::time::timeout(Duration::from_secs(30), established)
        .await
        .context("the CRD was not established within 30 s")??;
    create_namespace(&admin, NAMESPACE).await?;

    let writes = WriteCounter::default();
    let operator_client = counting_client(server.kubeconfig(), &writes).await?;
    let rss_before = memory_kib(std::process::id()).map(|(rss, _)| rss);
    let running = opkit_chart_operator::start(
        operator_client,
        OperatorOptions {
            watches_file: watches,
            ..OperatorOptions::default()
        },
    )
    .await?;

    // Create the custom resources, each a release of the chart with one replica.
    let resource = ApiResource {
        group: GROUP.into(),
        version: "v1".into(),
        api_version: format!("{GROUP}/v1"),
        kind: KIND.into(),
        plural: PLURAL.into(),
    };
    let started = Instant::now();
    let clients = server.clients(8).await?;
    let progress = Progress::start(format!("create {count} custom resources"), count);
    let ar = resource.clone();
    run_concurrent(&clients, count, &progress, move |client, i| {
        let ar = ar.clone();
        async move {
            let api: Api<DynamicObject> = Api::namespaced_with(client, NAMESPACE, &ar);
            let mut obj = DynamicObject::new(&format!("app-{i}"), &ar);
            obj.data = json!({"spec": {"replicaCount": 1}});
            api.create(&PostParams::default(), &obj).await?;
            Ok(())
        }
    })
    .await?;
    progress.finish();
    let api: Api<DynamicObject> = Api::namespaced_with(admin.clone(), NAMESPACE, &resource);
    let progress = Progress::start("releases deployed", count);
    let done = progress.counter();
    poll_until("every release deployed", limit, POLL, || {
        let (api, done) = (api.clone(), done.clone());
        async move {
            let list = api.list(&ListParams::default()).await?;
            let n = list
                .items
                .iter()
                .filter(|o| condition_true(o, "Deployed"))
                .count();
            done.store(n, Ordering::Relaxed);
            Ok((n == count).then_some(()))
        }
    })
    .await?;
    progress.finish();
    let to_deployed = started.elapsed();
    let install_reconciles = reconciles(&running.metrics().render())?;
    let install_writes = writes.get();
    let rss_after = memory_kib(std::process::id()).map(|(rss, _)| rss);

    // Steady state: every custom resource is reconciled again after the reconcile period
    // with nothing changed; count the writes those reconciles make.
    let (w0, r0) = (writes.get(), reconciles(&running.metrics().render())?);
    let steady_started = Instant::now();
    let r1 = poll_until(
        "a steady-state reconcile of every release",
        limit,
        POLL,
        || {
            let metrics = running.metrics().render();
            async move {
                let r = reconciles(&metrics)?;
                Ok((r >= r0 + count as u64).then_some(r))
            }
        },
    )
    .await?;
    let steady_writes = writes.get() - w0;
    let steady_reconciles = r1 - r0;
    let steady_wall = steady_started.elapsed();
    running.shutdown().await?;
    let is_process = server.is_process();
    server.stop().await;

    out.rows.push(Row::info(
        s,
        format!("{count} custom resources (helm create chart) to Deployed"),
        format!("{:.1} s", to_deployed.as_secs_f64()),
    ));
    out.rows.push(Row::info(
        s,
        "  releases deployed/s",
        format!("{:.0}/s", count as f64 / to_deployed.as_secs_f64()),
    ));
    out.rows.push(Row::info(
        s,
        "  reconciles until then (reconciles/s)",
        format!(
            "{install_reconciles} ({:.0}/s)",
            install_reconciles as f64 / to_deployed.as_secs_f64()
        ),
    ));
    out.rows.push(Row::info(
        s,
        "  API writes per installed release",
        format!("{:.1}", install_writes as f64 / count as f64),
    ));
    let per_reconcile = steady_writes as f64 / steady_reconciles.max(1) as f64;
    out.rows.push(Row::target(
        s,
        format!("API writes per steady-state reconcile (n={steady_reconciles})"),
        format!("{per_reconcile:.2}"),
        "0",
        steady_writes == 0,
    ));
    out.rows.push(Row::info(
        s,
        "  steady-state reconciles/s",
        format!(
            "{:.0}/s",
            steady_reconciles as f64 / steady_wall.as_secs_f64()
        ),
    ));
    if let (Some(before), Some(after)) = (rss_before, rss_after) {
        out.rows.push(Row::info(
            s,
            "operator memory per release (RSS growth / releases)",
            format!(
                "{:.0} KiB (RSS {} → {})",
                after.saturating_sub(before) as f64 / count as f64,
                mib(before),
                mib(after)
            ),
        ));
    }
    if !is_process {
        out.notes.push(
            "chart-operator: the server runs in this process, so the memory figure includes its store"
                .into(),
        );
    }
    Ok(out)
}
