//! The Memcached operator at scale, next to a plain kube-runtime `Controller` doing the same
//! work against the same kind of server.
//!
//! For each runtime, on a fresh in-process control plane (simulated pods Ready after
//! `--pod-ready-delay-ms`): create `--objects` Memcacheds of size 1, start the operator, and
//! measure
//!
//! - time until every Memcached reports `Available=True` (polled with a list every 100 ms),
//! - reconciles per second over that time (reconcile calls / time to all Available),
//! - live heap held by the operator per cached object.
//!
//! Memory: the control plane runs in the same process, so the process RSS mixes the server's
//! growth (1,000 Deployments, ReplicaSets and pods) with the operator's. This binary counts
//! live heap bytes in its global allocator instead and takes the difference between the
//! quiescent operator (everything Available, one second of quiet) and the same process right
//! after the operator was shut down and dropped: exactly what the operator held (caches,
//! queues, clients, watch buffers), not what the allocator keeps or the server grew. That is
//! divided by the objects the operator caches (opkit: Memcacheds and the Deployments' metadata;
//! kube-runtime: Memcacheds — its `owns` watch maps events to owners without a store). The
//! table prints the total heap too, which compares the runtimes whatever an object counts for.
//! RSS is printed too.
//!
//! opkit runs the shipped controller (`memcached::controller_with`); kube-runtime runs
//! [`memcached::sync`] and records [`memcached::Notice`]s as events, as the shipped reconcile
//! does. Both reconcile up to `--workers` objects at once and start without leader election.
//!
//! `cargo bench -p memcached --bench memcached -- [--objects N] [--workers N] [--pod-ready-delay-ms N]`

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::Duration;

use futures::StreamExt;
use memcached::{AVAILABLE, Memcached, MemcachedSpec, Settings};
use opkit::k8s_openapi::api::apps::v1::Deployment;
use opkit::kube::api::{ListParams, PostParams};
use opkit::kube::runtime::controller::{
    Action as KubeAction, Config as KubeConfig, Controller as KubeController,
};
use opkit::kube::runtime::events::{Event, Recorder, Reporter};
use opkit::kube::runtime::watcher;
use opkit::prelude::*;
use opkit_testenv::TestEnv;
use tokio::time::Instant;

/// The system allocator, counting live bytes.
struct Counting;

static LIVE: AtomicI64 = AtomicI64::new(0);

// SAFETY: forwards to the system allocator unchanged; only counts sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: same contract as the caller's.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            LIVE.fetch_add(layout.size() as i64, Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size() as i64, Ordering::Relaxed);
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: same contract as the caller's.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            LIVE.fetch_add(layout.size() as i64, Ordering::Relaxed);
        }
        p
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: same contract as the caller's.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            LIVE.fetch_add(new_size as i64 - layout.size() as i64, Ordering::Relaxed);
        }
        p
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

fn live_bytes() -> i64 {
    LIVE.load(Ordering::Relaxed)
}

fn rss_bytes() -> i64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<i64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

#[derive(Debug, Clone, Copy)]
struct Options {
    objects: usize,
    workers: usize,
    pod_ready_delay: Duration,
}

fn options() -> Options {
    let mut o = Options {
        objects: 1000,
        workers: 8,
        pod_ready_delay: Duration::from_millis(10),
    };
    let args: Vec<String> = std::env::args().collect();
    let value = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .and_then(|v| v.parse::<u64>().ok())
    };
    if let Some(n) = value("--objects") {
        o.objects = n as usize;
    }
    if let Some(n) = value("--workers") {
        o.workers = n.max(1) as usize;
    }
    if let Some(n) = value("--pod-ready-delay-ms") {
        o.pod_ready_delay = Duration::from_millis(n);
    }
    o
}

struct Figures {
    runtime: &'static str,
    to_all_available: Duration,
    reconciles: u64,
    cached_objects: usize,
    heap_held: i64,
    rss_growth: i64,
}

async fn control_plane(o: Options) -> TestEnv {
    let settings = opkit_testenv::controllers::Settings {
        pod_ready_delay: o.pod_ready_delay,
        ..Default::default()
    };
    let env = TestEnv::builder()
        .crd::<Memcached>()
        .controller_settings(settings)
        .start()
        .await
        .expect("control plane starts");
    let api: Api<Memcached> = Api::namespaced(env.client(), "default");
    futures::stream::iter(0..o.objects)
        .map(|i| {
            let api = api.clone();
            async move {
                api.create(
                    &PostParams::default(),
                    &Memcached::new(&format!("cache-{i:04}"), MemcachedSpec { size: 1 }),
                )
                .await
                .expect("memcached created")
            }
        })
        .buffer_unordered(16)
        .for_each(|_| async {})
        .await;
    env
}

async fn wait_all_available(env: &TestEnv, n: usize, started: Instant) -> Duration {
    let api: Api<Memcached> = Api::namespaced(env.client(), "default");
    loop {
        let list = api.list(&ListParams::default()).await.expect("list");
        let available = list
            .items
            .iter()
            .filter(|m| {
                m.status
                    .as_ref()
                    .is_some_and(|s| conditions::is_true(&s.conditions, AVAILABLE))
            })
            .count();
        if available == n {
            return started.elapsed();
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "only {available}/{n} available after 120 s"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn reconcile_count(metrics: &str) -> u64 {
    metrics
        .lines()
        .filter(|l| l.starts_with("controller_runtime_reconcile_total{controller=\"memcached\""))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>() as u64
}

async fn settle() {
    tokio::time::sleep(Duration::from_secs(1)).await;
}

async fn run_opkit(o: Options) -> Figures {
    let env = control_plane(o).await;
    settle().await;
    let rss_before = rss_bytes();
    let mut manager = Manager::builder().build();
    manager.add(memcached::controller_with(Settings::default(), o.workers));
    let started = Instant::now();
    let running = manager.start(env.client()).await.expect("manager starts");
    let to_all_available = wait_all_available(&env, o.objects, started).await;
    settle().await;
    let reconciles = reconcile_count(&running.metrics().render());
    let rss_growth = rss_bytes() - rss_before;
    let held = live_bytes();
    running.shutdown().await.expect("clean shutdown");
    settle().await;
    let heap_held = held - live_bytes();
    env.shutdown().await;
    Figures {
        runtime: "opkit Manager + Controller",
        to_all_available,
        reconciles,
        cached_objects: 2 * o.objects,
        heap_held,
        rss_growth,
    }
}

struct KubeCtx {
    client: Client,
    recorder: Recorder,
    settings: Settings,
    reconciles: AtomicU64,
}

const KUBE_FIELD_MANAGER: &str = "memcached-kube-runtime";

async fn kube_reconcile(
    mc: Arc<Memcached>,
    ctx: Arc<KubeCtx>,
) -> Result<KubeAction, memcached::Error> {
    ctx.reconciles.fetch_add(1, Ordering::Relaxed);
    if mc.metadata.deletion_timestamp.is_some() {
        return Ok(KubeAction::await_change());
    }
    let synced = memcached::sync(&ctx.client, KUBE_FIELD_MANAGER, &mc, &ctx.settings).await?;
    for notice in synced.notices {
        let event = Event {
            type_: notice.type_,
            reason: notice.reason,
            note: Some(notice.note),
            action: "Reconcile".to_string(),
            secondary: None,
        };
        ctx.recorder
            .publish(&event, &mc.object_ref(&()))
            .await
            .map_err(|e| memcached::Error::Opkit(e.into()))?;
    }
    Ok(KubeAction::await_change())
}

fn kube_error_policy(_: Arc<Memcached>, _: &memcached::Error, _: Arc<KubeCtx>) -> KubeAction {
    KubeAction::requeue(Duration::from_millis(5))
}

async fn run_kube_runtime(o: Options) -> Figures {
    let env = control_plane(o).await;
    settle().await;
    let rss_before = rss_bytes();
    let client = env.client();
    let ctx = Arc::new(KubeCtx {
        client: client.clone(),
        recorder: Recorder::new(
            client.clone(),
            Reporter {
                controller: KUBE_FIELD_MANAGER.to_string(),
                instance: None,
            },
        ),
        settings: Settings::default(),
        reconciles: AtomicU64::new(0),
    });
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let started = Instant::now();
    let controller = KubeController::new(
        Api::<Memcached>::all(client.clone()),
        watcher::Config::default(),
    )
    .owns(
        Api::<Deployment>::all(client.clone()),
        watcher::Config::default(),
    )
    .with_config(KubeConfig::default().concurrency(o.workers as u16))
    .graceful_shutdown_on(async move {
        let _ = stopped.await;
    })
    .run(kube_reconcile, kube_error_policy, ctx.clone())
    .for_each(|_| async {});
    let task = tokio::spawn(controller);
    let to_all_available = wait_all_available(&env, o.objects, started).await;
    settle().await;
    let reconciles = ctx.reconciles.load(Ordering::Relaxed);
    let rss_growth = rss_bytes() - rss_before;
    let held = live_bytes();
    let _ = stop.send(());
    task.await.expect("controller task ends");
    drop(ctx);
    drop(client);
    settle().await;
    let heap_held = held - live_bytes();
    env.shutdown().await;
    Figures {
        runtime: "kube-runtime Controller",
        to_all_available,
        reconciles,
        cached_objects: o.objects,
        heap_held,
        rss_growth,
    }
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".to_string());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let load = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(String::from))
        .unwrap_or_default();
    format!("{cores} cores ({cpu}), load average {load} at start")
}

fn main() {
    let o = options();
    opkit::install_crypto_provider();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    println!(
        "memcached bench: {} objects of size 1, {} workers, pod ready delay {:?}; {}",
        o.objects,
        o.workers,
        o.pod_ready_delay,
        machine()
    );
    let results = rt.block_on(async {
        let a = run_opkit(o).await;
        let b = run_kube_runtime(o).await;
        [a, b]
    });
    println!();
    println!(
        "| runtime | time to all {} Available | reconciles | reconciles/s | operator heap held | cached objects | heap per cached object |",
        o.objects
    );
    println!("|---|---|---|---|---|---|---|");
    for f in &results {
        let secs = f.to_all_available.as_secs_f64();
        println!(
            "| {} | {:.2} s | {} | {:.0} | {:.1} MiB | {} | {:.1} KiB |",
            f.runtime,
            secs,
            f.reconciles,
            f.reconciles as f64 / secs,
            f.heap_held as f64 / (1024.0 * 1024.0),
            f.cached_objects,
            f.heap_held as f64 / f.cached_objects as f64 / 1024.0,
        );
    }
    println!();
    for f in &results {
        println!(
            "process RSS growth during the {} run (server and operator share the process; \
             the second run reuses pages the first freed): {:.1} MiB",
            f.runtime,
            f.rss_growth as f64 / (1024.0 * 1024.0)
        );
    }
}
