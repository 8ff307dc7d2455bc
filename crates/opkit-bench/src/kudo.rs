//! KUDO plans (issue 16): the KUDO manager (`opkit_kudo::manager::start`, in this process)
//! running real packages of the corpus against the benchmark's server. Figures: the time
//! from install to the zookeeper package's `deploy` plan COMPLETE (several runs, each in a
//! fresh namespace; median and p90), and the time until 100 instances of first-operator,
//! installed at once, all have their `deploy` plan COMPLETE, with the manager's API requests
//! per second. Installs go through `opkit_kudo::install`, the code `kubectl kudo install`
//! uses.
//!
//! The packages are not part of the repository: the scenario reads them from the corpus
//! folder given by `--kudo-corpus` or `OPKIT_BENCH_KUDO_CORPUS` (a checkout of
//! kudobuilder/operators' `repository/` folder) and fails naming what is missing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ListParams, PostParams};
use kube::runtime::wait::{await_condition, conditions};
use opkit_kudo::api::DEPLOY_PLAN;
use opkit_kudo::package::{self, Package};
use opkit_kudo::{ExecutionStatus, Instance};

use crate::chart_operator::{WriteCounter, counting_client};
use crate::scenarios::{Outcome, create_namespace, poll_until, run_concurrent};
use crate::server::Server;
use crate::stats::{Progress, Samples, ms};
use crate::{Options, Row, Scenario};

/// The environment variable naming the corpus folder when `--kudo-corpus` is not given.
pub const CORPUS_ENV: &str = "OPKIT_BENCH_KUDO_CORPUS";
/// How often the scenario looks at the instances.
const POLL: Duration = Duration::from_millis(20);

/// The corpus folder: the option, else [`CORPUS_ENV`].
pub fn corpus_dir(options: &Options) -> Option<PathBuf> {
    options
        .kudo_corpus
        .clone()
        .or_else(|| std::env::var_os(CORPUS_ENV).map(PathBuf::from))
}

/// Loads the corpus package `name` (its `operator/` folder), naming what is missing.
fn load(corpus: Option<&Path>, name: &str) -> anyhow::Result<Package> {
    let Some(corpus) = corpus else {
        bail!(
            "the kudo scenario needs the KUDO package corpus (kudobuilder/operators' repository/ \
             folder, with {name}/operator in it): pass --kudo-corpus DIR or set {CORPUS_ENV}"
        );
    };
    let dir = corpus.join(name).join("operator");
    if !dir.join("operator.yaml").is_file() {
        bail!(
            "the kudo scenario needs the package {name}: {} is missing (is --kudo-corpus / \
             {CORPUS_ENV} the folder that holds {name}/operator?)",
            dir.join("operator.yaml").display()
        );
    }
    package::load(&dir).with_context(|| format!("loading the package at {}", dir.display()))
}

/// The status of `instance`'s deploy plan, failing on FATAL_ERROR (the run is void).
fn deploy_status(instance: &Instance) -> anyhow::Result<Option<ExecutionStatus>> {
    let Some(plan) = instance
        .status
        .as_ref()
        .and_then(|s| s.plan_status.get(DEPLOY_PLAN))
    else {
        return Ok(None);
    };
    if plan.status == ExecutionStatus::FatalError {
        bail!(
            "instance {}: the deploy plan failed with FATAL_ERROR: {}",
            instance.metadata.name.as_deref().unwrap_or_default(),
            plan.message
        );
    }
    Ok(Some(plan.status))
}

async fn install_crds(client: &kube::Client) -> anyhow::Result<()> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in opkit_kudo::api::crds() {
        let name = crd.metadata.name.clone().unwrap_or_default();
        crds.create(&PostParams::default(), &crd)
            .await
            .with_context(|| format!("creating the CRD {name}"))?;
        let established = await_condition(crds.clone(), &name, conditions::is_crd_established());
        tokio::time::timeout(Duration::from_secs(30), established)
            .await
            .with_context(|| format!("the CRD {name} was not established within 30 s"))??;
    }
    Ok(())
}

/// The scenario.
pub async fn kudo(options: &Options) -> anyhow::Result<Outcome> {
    let s = Scenario::Kudo;
    let counts = &options.counts;
    let limit = counts.scenario_timeout;
    let corpus = corpus_dir(options);
    let zookeeper = load(corpus.as_deref(), "zookeeper")?;
    let first = load(corpus.as_deref(), "first-operator")?;
    let mut out = Outcome::default();

    let server = Server::start(&options.server).await?;
    let admin = server.client().await?;
    install_crds(&admin).await?;
    let requests = WriteCounter::default();
    let manager_client = counting_client(server.kubeconfig(), &requests).await?;
    let manager = opkit_kudo::manager::start(manager_client, Default::default())
        .await
        .context("starting the KUDO manager")?;

    // (a) zookeeper: install → deploy COMPLETE, one run at a time, each in its own namespace.
    let runs = counts.kudo_runs;
    let mut to_complete = Samples::with_capacity(runs);
    let progress = Progress::start("zookeeper installs to deploy COMPLETE", runs);
    for run in 0..runs {
        let ns = format!("bench-kudo-zk-{run}");
        create_namespace(&admin, &ns).await?;
        let name = "zookeeper-instance";
        let started = Instant::now();
        opkit_kudo::install::check_parameters(&zookeeper, &BTreeMap::new())?;
        opkit_kudo::install::operator(&admin, &ns, &zookeeper).await?;
        opkit_kudo::install::instance(&admin, &ns, name, &zookeeper, BTreeMap::new()).await?;
        let api: Api<Instance> = Api::namespaced(admin.clone(), &ns);
        poll_until(
            &format!("zookeeper run {run}: deploy COMPLETE"),
            limit,
            POLL,
            || {
                let api = api.clone();
                async move {
                    let instance = api.get(name).await?;
                    Ok(
                        (deploy_status(&instance)? == Some(ExecutionStatus::Complete))
                            .then_some(()),
                    )
                }
            },
        )
        .await?;
        to_complete.push(started.elapsed());
        progress.inc();
    }
    progress.finish();
    out.rows.push(Row::info(
        s,
        format!("zookeeper: install → deploy plan COMPLETE, median (n={runs})"),
        ms(to_complete.median()),
    ));
    out.rows.push(Row::info(
        s,
        "  same, p90",
        ms(to_complete.percentile(90.0)),
    ));

    // (b) many instances of first-operator installed at once. Its Deployment has a fixed name
    // (`nginx-deployment`), so, as with KUDO, two instances cannot share a namespace: each
    // instance gets its own, with the package's Operator and OperatorVersion installed there.
    let count = counts.kudo_instances;
    opkit_kudo::install::check_parameters(&first, &BTreeMap::new())?;
    let (requests_before, writes_before) = (requests.requests(), requests.get());
    let started = Instant::now();
    let clients = server.clients(count.min(counts.concurrency)).await?;
    let progress = Progress::start(format!("install {count} first-operator instances"), count);
    let pkg = Arc::new(first);
    run_concurrent(&clients, count, &progress, move |client, i| {
        let pkg = pkg.clone();
        async move {
            let ns = format!("bench-kudo-first-{i}");
            create_namespace(&client, &ns).await?;
            opkit_kudo::install::operator(&client, &ns, &pkg).await?;
            opkit_kudo::install::instance(&client, &ns, "first", &pkg, BTreeMap::new()).await?;
            Ok(())
        }
    })
    .await?;
    progress.finish();
    let api: Api<Instance> = Api::all(admin.clone());
    let first_instances = ListParams::default().labels(&format!(
        "{}=first-operator",
        opkit_kudo::install::OPERATOR_LABEL
    ));
    let progress = Progress::start("deploy plans COMPLETE", count);
    let done = progress.counter();
    poll_until(
        "every first-operator deploy plan COMPLETE",
        limit,
        POLL,
        || {
            let (api, done, params) = (api.clone(), done.clone(), first_instances.clone());
            async move {
                let list = api.list(&params).await?;
                let mut n = 0;
                for instance in &list.items {
                    if deploy_status(instance)? == Some(ExecutionStatus::Complete) {
                        n += 1;
                    }
                }
                done.store(n, Ordering::Relaxed);
                Ok((n == count).then_some(()))
            }
        },
    )
    .await?;
    progress.finish();
    let wall = started.elapsed();
    let manager_requests = requests.requests() - requests_before;
    let manager_writes = requests.get() - writes_before;
    manager.shutdown().await?;
    server.stop().await;

    out.rows.push(Row::info(
        s,
        format!("{count} first-operator instances installed at once → all deploy plans COMPLETE"),
        format!("{:.2} s", wall.as_secs_f64()),
    ));
    out.rows.push(Row::info(
        s,
        "  deploy plans COMPLETE/s",
        format!("{:.0}/s", count as f64 / wall.as_secs_f64()),
    ));
    out.rows.push(Row::info(
        s,
        "  manager API requests until then (requests/s; writes)",
        format!(
            "{manager_requests} ({:.0}/s; {manager_writes} writes, {:.1} per instance)",
            manager_requests as f64 / wall.as_secs_f64(),
            manager_writes as f64 / count as f64
        ),
    ));
    out.notes.push(format!(
        "kudo: packages from {}; the manager runs in this process",
        corpus.as_deref().unwrap_or(Path::new("?")).display()
    ));
    Ok(out)
}
