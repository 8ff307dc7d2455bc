//! CRD conversion (issue 13): what converting costs per object in a LIST. The same objects,
//! stored in v1, are listed in v1 (no conversion: the stored bytes go out as they are), in v2
//! of a CRD with `strategy: None` (`apiVersion` rewritten) and in v2 of a CRD with a
//! conversion webhook (one ConversionReview for the whole list, answered by an HTTPS webhook
//! in this process that really converts the fields). The cost per object is the difference of
//! the median LIST times, divided by the number of objects.

use std::time::Instant;

use anyhow::{Context, ensure};
use futures::StreamExt;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DynamicObject, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::{Value, json};

// The HTTPS webhook server (test CA, `caBundle`) the control plane's webhook tests use.
#[path = "../../opkit-controlplane/tests/webhook/mod.rs"]
mod webhook;

use crate::scenarios::Outcome;
use crate::server::Server;
use crate::stats::{Progress, Samples, ms};
use crate::{Options, Row, Scenario};
use webhook::{Reply, WebhookServer};

const GROUP: &str = "bench.opkit.dev";

/// Converts Endpoints between v1 (`spec.host`, `spec.port`) and v2 (`spec.endpoint`).
fn convert(request: &Value) -> Reply {
    let desired = request["desiredAPIVersion"].as_str().unwrap_or("");
    let converted: Vec<Value> = request["objects"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|obj| {
            let mut out = obj.clone();
            let spec = &obj["spec"];
            out["apiVersion"] = json!(desired);
            out["spec"] = if desired.ends_with("/v2") {
                json!({"endpoint": format!("{}:{}", spec["host"].as_str().unwrap_or(""), spec["port"])})
            } else {
                let endpoint = spec["endpoint"].as_str().unwrap_or(":");
                let (host, port) = endpoint.split_once(':').unwrap_or((endpoint, "0"));
                json!({"host": host, "port": port.parse::<i64>().unwrap_or(0)})
            };
            out
        })
        .collect();
    Reply::Raw(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
        "response": {"uid": request["uid"], "convertedObjects": converted, "result": {"status": "Success"}},
    }))
}

/// A CRD `PLURAL.bench.opkit.dev` with v1 (storage) and v2, converted as `conversion` says.
fn crd(plural: &str, kind: &str, conversion: Value) -> Value {
    let schema = json!({"openAPIV3Schema": {"type": "object",
        "x-kubernetes-preserve-unknown-fields": true}});
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{GROUP}")},
        "spec": {
            "group": GROUP, "scope": "Namespaced",
            "names": {"kind": kind, "plural": plural},
            "conversion": conversion,
            "versions": [
                {"name": "v1", "served": true, "storage": true, "schema": schema},
                {"name": "v2", "served": true, "storage": false, "schema": schema},
            ],
        },
    })
}

async fn install(client: &kube::Client, crd: Value) -> anyhow::Result<()> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let name = crd["metadata"]["name"].as_str().unwrap_or("").to_string();
    crds.create(&PostParams::default(), &serde_json::from_value(crd)?)
        .await?;
    let established = kube::runtime::wait::await_condition(
        crds,
        &name,
        kube::runtime::wait::conditions::is_crd_established(),
    );
    tokio::time::timeout(std::time::Duration::from_secs(10), established)
        .await
        .context("CRD not established in 10 s")??;
    Ok(())
}

/// Stores `n` objects of `plural` in v1, in `default`.
async fn populate(client: &kube::Client, plural: &str, kind: &str, n: usize) -> anyhow::Result<()> {
    let gvk = GroupVersionKind::gvk(GROUP, "v1", kind);
    let api: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        "default",
        &ApiResource::from_gvk_with_plural(&gvk, plural),
    );
    let progress = Progress::start(format!("storing {n} {plural}"), n);
    let mut creates = futures::stream::iter(0..n)
        .map(|i| {
            let api = api.clone();
            async move {
                let obj: DynamicObject = serde_json::from_value(json!({
                    "apiVersion": format!("{GROUP}/v1"), "kind": kind,
                    "metadata": {"name": format!("e-{i}")},
                    "spec": {"host": format!("host-{i}.internal"), "port": 1000 + i},
                }))?;
                api.create(&PostParams::default(), &obj).await?;
                anyhow::Ok(())
            }
        })
        .buffer_unordered(16);
    while let Some(created) = creates.next().await {
        created?;
        progress.inc();
    }
    progress.finish();
    Ok(())
}

/// Median and p99 of `lists` raw LISTs of `path`, each checked to hold `n` items with
/// `marker` in them.
async fn time_lists(
    client: &kube::Client,
    path: &str,
    lists: usize,
    n: usize,
    marker: &str,
) -> anyhow::Result<Samples> {
    let mut samples = Samples::with_capacity(lists);
    let progress = Progress::start(format!("LISTs of {path}"), lists);
    for _ in 0..lists {
        let request = http::Request::get(path).body(Vec::new())?;
        let t = Instant::now();
        let text = client.request_text(request).await?;
        samples.push(t.elapsed());
        let list: Value = serde_json::from_str(&text)?;
        let items = list["items"].as_array().map(Vec::len).unwrap_or(0);
        ensure!(items == n, "{path}: {items} items, expected {n}");
        ensure!(text.contains(marker), "{path}: no {marker} in the list");
        progress.inc();
    }
    progress.finish();
    Ok(samples)
}

/// Microseconds per object of the difference of two medians.
fn per_object(with: std::time::Duration, without: std::time::Duration, n: usize) -> String {
    let delta = with.as_secs_f64() - without.as_secs_f64();
    format!("{:.1} µs", delta * 1e6 / n.max(1) as f64)
}

/// The conversion scenario; see the module documentation.
pub async fn conversion(options: &Options) -> anyhow::Result<Outcome> {
    let s = Scenario::Conversion;
    let (n, lists) = (
        options.counts.conversion_objects,
        options.counts.conversion_lists,
    );
    let mut out = Outcome::default();
    let server = Server::start(&options.server).await?;
    let client = server.client().await?;
    let hook = WebhookServer::start(convert).await;
    install(&client, crd("plains", "Plain", json!({"strategy": "None"}))).await?;
    install(
        &client,
        crd(
            "hooked",
            "Hooked",
            json!({"strategy": "Webhook", "webhook": {
                "clientConfig": {"url": hook.url("/convert"), "caBundle": hook.ca_bundle()},
                "conversionReviewVersions": ["v1"]}}),
        ),
    )
    .await?;
    // The webhook's objects first: the controllers' watch events of them are converted while
    // the others are stored, before anything is timed.
    populate(&client, "hooked", "Hooked", n).await?;
    populate(&client, "plains", "Plain", n).await?;

    let base = format!("/apis/{GROUP}");
    let plains_v1 = format!("{base}/v1/namespaces/default/plains");
    let mut same = time_lists(&client, &plains_v1, lists, n, "\"host\"").await?;
    let plains_v2 = format!("{base}/v2/namespaces/default/plains");
    let mut none = time_lists(&client, &plains_v2, lists, n, &format!("{GROUP}/v2")).await?;
    // The built-in controllers watch custom resources in their preferred version (v2) too, so
    // the webhook also gets one-object reviews for their watch events, and a review of all `n`
    // objects whenever one of them lists again; a LIST's review is one carrying all `n`. So
    // each LIST must add one of those, and the LISTs must not be converted object by object.
    let reviews_of = |objects: usize| {
        hook.requests()
            .iter()
            .filter(|r| r["objects"].as_array().map(Vec::len) == Some(objects))
            .count()
    };
    let (whole_before, single_before) = (reviews_of(n), reviews_of(1));
    let hooked_v2 = format!("{base}/v2/namespaces/default/hooked");
    let mut webhook = time_lists(&client, &hooked_v2, lists, n, "\"endpoint\"").await?;
    let whole = reviews_of(n) - whole_before;
    let single = reviews_of(1) - single_before;
    ensure!(
        whole >= lists && (n == 1 || single < n),
        "{whole} ConversionReviews of {n} objects and {single} of one object for {lists} LISTs \
         (one review of all {n} per LIST expected, not one per object)"
    );

    for (label, samples) in [
        ("same version (no conversion)", &mut same),
        ("strategy None (v1 -> v2)", &mut none),
        ("strategy Webhook (v1 -> v2, 1 review)", &mut webhook),
    ] {
        out.rows.push(Row::info(
            s,
            format!("LIST {n} custom resources, {label}, p50 / p99 (n={lists})"),
            format!(
                "{} / {}",
                ms(samples.median()),
                ms(samples.percentile(99.0))
            ),
        ));
    }
    out.rows.push(Row::info(
        s,
        "conversion cost per object, strategy None (p50 difference)",
        per_object(none.median(), same.median(), n),
    ));
    out.rows.push(Row::info(
        s,
        "conversion cost per object, strategy Webhook (p50 difference)",
        per_object(webhook.median(), same.median(), n),
    ));
    out.notes.push(
        "conversion: the webhook runs in the benchmark's process (HTTPS on loopback, JSON in and out); its time is part of the Webhook figure; \
         the built-in controllers' watches of the v2 objects also reach it while the LISTs run"
            .into(),
    );
    drop(hook);
    server.stop().await;
    Ok(out)
}
