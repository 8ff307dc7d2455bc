//! What admission costs per write: ConfigMap creates with no admission, through one validating
//! webhook served by an opkit operator (the runtime's `WebhookServer` with self-managed
//! certificates, reached through a Service reference as on a real cluster), and through one
//! ValidatingAdmissionPolicy (CEL evaluated in the server). Each in its own namespace on one
//! server, so the three runs differ only in admission.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, ensure};
use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{Api, DynamicObject, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use opkit::{Admission, Denied, Manager, SelfManagedCerts, Validator, WebhookServer};
use serde_json::{Value, json};

use crate::scenarios::{Outcome, poll_until, run_concurrent, warm_up};
use crate::server::Server;
use crate::stats::{Progress, Samples, ms};
use crate::{Options, Row, Scenario};

const WEBHOOK_NS: &str = "bench-admission-webhook";
const SERVICE: &str = "bench-webhook";
const LIMIT: usize = 1024;

/// The webhook: a payload limit, the kind of check an operator's validator makes.
struct PayloadLimit;

impl PayloadLimit {
    fn check(cm: &ConfigMap) -> Result<Vec<String>, Denied> {
        let size = cm
            .data
            .as_ref()
            .and_then(|d| d.get("payload"))
            .map_or(0, String::len);
        match size <= LIMIT {
            true => Ok(Vec::new()),
            false => Err(Denied::new(format!("payload over {LIMIT} bytes"))),
        }
    }
}

impl Validator<ConfigMap> for PayloadLimit {
    fn validate_create(&self, cm: &ConfigMap, _: &Admission) -> Result<Vec<String>, Denied> {
        PayloadLimit::check(cm)
    }
    fn validate_update(
        &self,
        _: &ConfigMap,
        cm: &ConfigMap,
        _: &Admission,
    ) -> Result<Vec<String>, Denied> {
        PayloadLimit::check(cm)
    }
}

fn config_map(name: &str, payload: usize) -> ConfigMap {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "data": {"payload": "x".repeat(payload)},
    }))
    .expect("a valid ConfigMap")
}

async fn namespace(client: &kube::Client, name: &str, admission: &str) -> anyhow::Result<()> {
    let ns: Namespace = serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"bench-admission": admission}},
    }))?;
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await
        .with_context(|| format!("creating namespace {name}"))?;
    Ok(())
}

async fn create<K>(api: &Api<K>, value: Value) -> anyhow::Result<()>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    let object: K = serde_json::from_value(value)?;
    api.create(&PostParams::default(), &object).await?;
    Ok(())
}

/// Deploys the webhook as a project would: the configuration with a Service reference and no
/// `caBundle`, a selector-less Service, an EndpointSlice to the operator's local port; then
/// starts the operator, whose self-managed certificates fill in the `caBundle`.
async fn start_webhook(client: &kube::Client) -> anyhow::Result<opkit::Running> {
    create(
        &Api::<ValidatingWebhookConfiguration>::all(client.clone()),
        json!({
            "metadata": {"name": "bench-validation"},
            "webhooks": [{
                "name": "payload.bench.opkit.dev",
                "clientConfig": {"service": {
                    "namespace": WEBHOOK_NS, "name": SERVICE,
                    "path": opkit::webhook::validate_path::<ConfigMap>(),
                }},
                "rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": [""],
                           "apiVersions": ["v1"], "resources": ["configmaps"]}],
                "namespaceSelector": {"matchLabels": {"bench-admission": "webhook"}},
                "sideEffects": "None", "admissionReviewVersions": ["v1"], "failurePolicy": "Fail",
            }],
        }),
    )
    .await?;
    create(
        &Api::<Service>::namespaced(client.clone(), WEBHOOK_NS),
        json!({"metadata": {"name": SERVICE},
               "spec": {"ports": [{"name": "https", "port": 443, "targetPort": 9443}]}}),
    )
    .await?;
    let server = WebhookServer::new()
        .addr(SocketAddr::from(([127, 0, 0, 1], 0)))
        .self_managed_certs(
            SelfManagedCerts::new(SERVICE, WEBHOOK_NS).validating_configuration("bench-validation"),
        )
        .validator::<ConfigMap, _>(PayloadLimit);
    let running = Manager::builder()
        .webhook_server(server)
        .build()
        .start(client.clone())
        .await
        .context("starting the operator's webhook server")?;
    let port = running.webhook_addr().context("no webhook address")?.port();
    create(
        &Api::<EndpointSlice>::namespaced(client.clone(), WEBHOOK_NS),
        json!({
            "metadata": {"name": SERVICE, "labels": {"kubernetes.io/service-name": SERVICE}},
            "addressType": "IPv4",
            "endpoints": [{"addresses": ["127.0.0.1"]}],
            "ports": [{"name": "https", "port": port, "protocol": "TCP"}],
        }),
    )
    .await?;
    // The operator publishes its CA shortly after it starts.
    let configs = Api::<ValidatingWebhookConfiguration>::all(client.clone());
    poll_until(
        "the operator publishing its caBundle",
        Duration::from_secs(30),
        Duration::from_millis(20),
        || async {
            let config = configs.get("bench-validation").await?;
            let published = config
                .webhooks
                .as_ref()
                .and_then(|w| w[0].client_config.ca_bundle.as_ref());
            Ok(published.is_some_and(|b| !b.0.is_empty()).then_some(()))
        },
    )
    .await?;
    Ok(running)
}

async fn start_policy(client: &kube::Client) -> anyhow::Result<()> {
    let api = |kind: &str| {
        let gvk = GroupVersionKind::gvk("admissionregistration.k8s.io", "v1", kind);
        Api::<DynamicObject>::all_with(client.clone(), &ApiResource::from_gvk(&gvk))
    };
    let typed = |kind: &str, name: &str, spec: Value| {
        json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
               "metadata": {"name": name}, "spec": spec})
    };
    create(
        &api("ValidatingAdmissionPolicy"),
        typed(
            "ValidatingAdmissionPolicy",
            "bench-payload",
            json!({
                "matchConstraints": {"resourceRules": [{
                    "operations": ["CREATE", "UPDATE"], "apiGroups": [""],
                    "apiVersions": ["v1"], "resources": ["configmaps"]}],
                    "namespaceSelector": {"matchLabels": {"bench-admission": "policy"}}},
                "validations": [{
                    "expression": format!("!has(object.data) || !('payload' in object.data) || size(object.data.payload) <= {LIMIT}"),
                    "message": format!("payload over {LIMIT} bytes"),
                }],
            }),
        ),
    )
    .await?;
    create(
        &api("ValidatingAdmissionPolicyBinding"),
        typed(
            "ValidatingAdmissionPolicyBinding",
            "bench-payload",
            json!({"policyName": "bench-payload", "validationActions": ["Deny"]}),
        ),
    )
    .await
}

/// Creates `count` ConfigMaps in `ns` with `clients`, after checking that admission is in the
/// path: an oversized ConfigMap must be refused where admission applies, stored where not.
async fn measure(
    clients: &[kube::Client],
    ns: &str,
    admitted: bool,
    count: usize,
) -> anyhow::Result<(Samples, Duration)> {
    let probe = Api::<ConfigMap>::namespaced(clients[0].clone(), ns)
        .create(
            &PostParams::default(),
            &config_map(&format!("oversized-{}", clients.len()), LIMIT + 1),
        )
        .await;
    ensure!(
        probe.is_err() == admitted,
        "admission in {ns}: expected the oversized ConfigMap to be {}, got {probe:?}",
        if admitted { "refused" } else { "stored" }
    );
    let progress = Progress::start(
        format!("creates in {ns}, {} client(s)", clients.len()),
        count,
    );
    let ns: Arc<str> = Arc::from(ns);
    let prefix = format!("c{}-", clients.len());
    let result = run_concurrent(clients, count, &progress, move |client, i| {
        let (ns, name) = (ns.clone(), format!("{prefix}{i}"));
        async move {
            Api::<ConfigMap>::namespaced(client, &ns)
                .create(&PostParams::default(), &config_map(&name, 64))
                .await?;
            Ok(())
        }
    })
    .await;
    progress.finish();
    result
}

/// The admission scenario.
pub async fn admission(options: &Options) -> anyhow::Result<Outcome> {
    let s = Scenario::Admission;
    let mut out = Outcome::default();
    let server = Server::start(&options.server).await?;
    let admin = server.client().await?;
    let runs = [
        ("no admission", "bench-admission-none", "none"),
        (
            "one validating webhook (opkit operator)",
            WEBHOOK_NS,
            "webhook",
        ),
        (
            "one ValidatingAdmissionPolicy",
            "bench-admission-policy",
            "policy",
        ),
    ];
    for (_, ns, label) in runs {
        namespace(&admin, ns, label).await?;
    }
    let operator = start_webhook(&admin).await?;
    start_policy(&admin).await?;
    let counts = &options.counts;
    for (n_clients, count) in [
        (1, counts.creates_single),
        (counts.concurrency, counts.creates_concurrent),
    ] {
        let clients = server.clients(n_clients).await?;
        warm_up(&clients, "default").await?;
        let mut baseline = None;
        for (what, ns, label) in runs {
            let (mut latency, wall) = measure(&clients, ns, label != "none", count).await?;
            let p50 = latency.median();
            let overhead = match baseline {
                None => {
                    baseline = Some(p50);
                    String::new()
                }
                Some(base) => format!(" (p50 +{})", ms(p50.saturating_sub(base))),
            };
            out.rows.push(Row::info(
                s,
                format!("create, {what}, {n_clients} client(s), p50 / p99 (n={count})"),
                format!(
                    "{} / {}, {:.0}/s{overhead}",
                    ms(p50),
                    ms(latency.percentile(99.0)),
                    count as f64 / wall.as_secs_f64()
                ),
            ));
        }
    }
    let metrics = operator.metrics().render();
    let calls = metrics
        .lines()
        .find(|l| {
            l.starts_with("controller_runtime_webhook_requests_total") && l.contains("code=\"200\"")
        })
        .and_then(|l| l.rsplit(' ').next())
        .unwrap_or("0")
        .to_string();
    out.notes.push(format!(
        "admission: the operator's webhook answered {calls} reviews (HTTP 200)"
    ));
    operator.shutdown().await?;
    server.stop().await;
    Ok(out)
}
