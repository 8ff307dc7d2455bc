//! Every real KUDO package in the corpus (`../shared/corpus/kudo/operators`) installed with
//! its default parameters runs its `deploy` plan to COMPLETE under the manager on the
//! embedded plane. Packages whose deploy plan needs a `Pipe` task (files copied out of a
//! running pod through `pods/exec`, which the simulated kubelet cannot serve) are checked
//! to stop at that step with a message naming the missing capability. Skips loudly when the
//! corpus is absent (a user's clone does not have it).

mod common;

use std::path::PathBuf;

use kube::api::{Api, PostParams};
use opkit_kudo::api::{DEPLOY_PLAN, Operator};
use opkit_kudo::{ExecutionStatus, OperatorVersion};

use common::{Kudo, NS};

fn corpus() -> Option<PathBuf> {
    let dir =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus/kudo/operators");
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!(
            "SKIPPED: the KUDO corpus is not at {} (it is only in CI)",
            dir.display()
        );
        None
    }
}

/// Installs the corpus package `name` with its defaults as instance `name`.
async fn install(kudo: &Kudo, dir: &std::path::Path, name: &str) {
    let pkg = opkit_kudo::package::load(&dir.join(name).join("operator"))
        .unwrap_or_else(|e| panic!("{name}: the package loads: {e}"));
    let mut op = pkg.operator.clone();
    op.metadata.namespace = Some(NS.into());
    Api::<Operator>::namespaced(kudo.client(), NS)
        .create(&PostParams::default(), &op)
        .await
        .expect("the Operator is created");
    let mut ov: OperatorVersion = pkg.operator_version.clone();
    ov.metadata.namespace = Some(NS.into());
    let ov_name = ov
        .metadata
        .name
        .clone()
        .expect("the OperatorVersion has a name");
    kudo.operator_versions()
        .create(&PostParams::default(), &ov)
        .await
        .expect("the OperatorVersion is created");
    kudo.install(name, &ov_name, &[]).await;
}

async fn deploys(name: &str) {
    let Some(dir) = corpus() else { return };
    let kudo = Kudo::start().await;
    install(&kudo, &dir, name).await;
    kudo.wait_status(name, DEPLOY_PLAN, ExecutionStatus::Complete)
        .await;
}

async fn stops_at_pipe(name: &str) {
    let Some(dir) = corpus() else { return };
    let kudo = Kudo::start().await;
    install(&kudo, &dir, name).await;
    let ps = kudo
        .wait_plan(name, DEPLOY_PLAN, "waits on pods/exec", |p| {
            p.phases
                .iter()
                .flat_map(|ph| &ph.steps)
                .any(|s| s.message.contains("pods/exec"))
        })
        .await;
    assert_ne!(ps.status, ExecutionStatus::FatalError, "{ps:?}");
}

macro_rules! deploy_complete {
    ($($test:ident => $pkg:literal),* $(,)?) => {$(
        #[tokio::test(flavor = "multi_thread")]
        async fn $test() {
            deploys($pkg).await;
        }
    )*};
}

deploy_complete! {
    cassandra_deploy_plan_completes => "cassandra",
    confluent_rest_proxy_deploy_plan_completes => "confluent-rest-proxy",
    confluent_schema_registry_deploy_plan_completes => "confluent-schema-registry",
    first_operator_deploy_plan_completes => "first-operator",
    flink_deploy_plan_completes => "flink",
    rabbitmq_deploy_plan_completes => "rabbitmq",
    redis_deploy_plan_completes => "redis",
    spark_deploy_plan_completes => "spark",
    zookeeper_deploy_plan_completes => "zookeeper",
}

#[tokio::test(flavor = "multi_thread")]
async fn cowsay_deploy_plan_waits_at_its_pipe_task_for_pods_exec() {
    stops_at_pipe("cowsay").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn kafka_deploy_plan_waits_at_its_tls_pipe_task_for_pods_exec() {
    stops_at_pipe("kafka").await;
}
