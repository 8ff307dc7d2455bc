//! Overload: a bounded load well above the in-flight limit, over loopback for a fixed time.
//! The server must shed the excess with 429 (never fail otherwise), keep answering health
//! checks, keep serving the admin (exempt, as the control plane's own controllers), and keep
//! its memory bounded.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, PostParams};

use opkit_controlplane::{Config, ControlPlane, Limits};
use serde_json::json;

const LOAD_FOR: Duration = Duration::from_secs(3);
const CLIENTS: usize = 8;
const TASKS_PER_CLIENT: usize = 12;

/// Resident memory of this process (the server runs in it), in KiB.
fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

#[derive(Default)]
struct Tally {
    ok: AtomicU64,
    shed: AtomicU64,
    shed_without_retry_after: AtomicU64,
    other: AtomicU64,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn under_overload_the_server_sheds_with_429_keeps_health_checks_and_bounded_memory() {
    // A durable store: writes wait for their fsync (shared by a group commit), so requests
    // really are in flight at once, as on a disk-backed server.
    let dir = tempfile::tempdir().unwrap();
    let plane = ControlPlane::start(Config {
        data_dir: Some(dir.path().to_path_buf()),
        limits: Limits {
            max_requests_inflight: 8,
            max_mutating_requests_inflight: 4,
            ..Limits::default()
        },
        ..Config::ephemeral()
    })
    .await
    .unwrap();
    let admin = common::client(&plane).await;
    let cms = Api::<ConfigMap>::namespaced(admin.clone(), "default");
    let payload = "x".repeat(1024);
    for i in 0..300 {
        let cm: ConfigMap = serde_json::from_value(
            json!({"metadata": {"name": format!("seed-{i}")}, "data": {"v": payload}}),
        )
        .unwrap();
        cms.create(&PostParams::default(), &cm).await.unwrap();
    }
    let baseline = rss_kib();
    let mut clients = Vec::new();
    for _ in 0..CLIENTS {
        clients.push(common::loader(&plane).await);
    }
    let tally = Arc::new(Tally::default());
    let peak = Arc::new(AtomicU64::new(baseline));
    let deadline = Instant::now() + LOAD_FOR;
    let mut load = tokio::task::JoinSet::new();
    for (c, client) in clients.iter().enumerate() {
        for t in 0..TASKS_PER_CLIENT {
            let client = client.clone();
            let tally = tally.clone();
            load.spawn(async move {
                let mut n = 0u64;
                while Instant::now() < deadline {
                    n += 1;
                    let req = if n.is_multiple_of(2) {
                        let body = json!({"apiVersion": "v1", "kind": "ConfigMap",
                            "metadata": {"name": format!("load-{c}-{t}-{n}")}, "data": {"v": "y"}});
                        http::Request::post("/api/v1/namespaces/default/configmaps")
                            .header("Content-Type", "application/json")
                            .body(serde_json::to_vec(&body).unwrap())
                    } else {
                        http::Request::get("/api/v1/namespaces/default/configmaps?limit=200")
                            .body(Vec::new())
                    }
                    .unwrap();
                    let resp = match client.send(req.map(Into::into)).await {
                        Ok(r) => r,
                        Err(_) => {
                            tally.other.fetch_add(1, Ordering::Relaxed);
                            continue;
                        }
                    };
                    let code = resp.status().as_u16();
                    let has_retry_after = resp.headers().contains_key("retry-after");
                    let _ = http_body_util::BodyExt::collect(resp.into_body()).await;
                    match code {
                        200 | 201 => tally.ok.fetch_add(1, Ordering::Relaxed),
                        429 if has_retry_after => tally.shed.fetch_add(1, Ordering::Relaxed),
                        429 => tally
                            .shed_without_retry_after
                            .fetch_add(1, Ordering::Relaxed),
                        _ => tally.other.fetch_add(1, Ordering::Relaxed),
                    };
                }
            });
        }
    }
    // Health checks with no credentials, and the admin's reads, all along.
    let anonymous = {
        let yaml = plane.kubeconfig().replace(plane.token(), "");
        common::no_retry_client(&yaml).await
    };
    let mut health = Vec::new();
    let mut admin_reads = Vec::new();
    while Instant::now() < deadline {
        let started = Instant::now();
        let req = http::Request::get("/readyz").body(Vec::new()).unwrap();
        let code = anonymous
            .send(req.map(Into::into))
            .await
            .map(|r| r.status().as_u16())
            .unwrap_or(0);
        health.push((code, started.elapsed()));
        let listed = cms.list(&ListParams::default().limit(1)).await.is_ok();
        admin_reads.push(listed);
        peak.fetch_max(rss_kib(), Ordering::Relaxed);
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    while load.join_next().await.is_some() {}
    peak.fetch_max(rss_kib(), Ordering::Relaxed);

    let ok = tally.ok.load(Ordering::Relaxed);
    let shed = tally.shed.load(Ordering::Relaxed);
    let max_health = health.iter().map(|(_, d)| *d).max().unwrap_or_default();
    let growth_mib = peak.load(Ordering::Relaxed).saturating_sub(baseline) / 1024;
    println!(
        "overload: {} requests in {:?} from {} tasks: {ok} served, {shed} shed with 429; {} health checks (slowest {max_health:?}); RSS {} MiB at start, peak +{growth_mib} MiB",
        ok + shed,
        LOAD_FOR,
        CLIENTS * TASKS_PER_CLIENT,
        health.len(),
        baseline / 1024,
    );
    assert!(shed > 0, "the load never exceeded the in-flight limit");
    assert!(ok > 0, "nothing was served under load");
    assert_eq!(tally.shed_without_retry_after.load(Ordering::Relaxed), 0);
    assert_eq!(
        tally.other.load(Ordering::Relaxed),
        0,
        "only 200/201 or 429 under load"
    );
    assert!(
        health.iter().all(|(code, _)| *code == 200),
        "health checks failed under load: {:?}",
        health.iter().filter(|(c, _)| *c != 200).count()
    );
    assert!(
        admin_reads.iter().all(|ok| *ok),
        "the admin was shed under load"
    );
    assert!(
        growth_mib < 256,
        "memory grew by {growth_mib} MiB under a bounded load"
    );
    // Afterwards everyone is served again.
    Api::<ConfigMap>::namespaced(clients[0].clone(), "default")
        .list(&ListParams::default().limit(1))
        .await
        .expect("served after the load");
}
