//! Crash safety of `opkit up`: SIGKILL under concurrent write load, restart, and check that
//! every acknowledged write survived, that nothing half-written or never-written appears, that
//! revisions keep rising across restarts, and that a watch resumed from before the crash
//! either expires (410) or replays the acknowledged writes in order without gaps.
//!
//! The store promises that a write is acknowledged only once it is durable; a SIGKILL is the
//! harshest way short of pulling the power to test that promise end to end (HTTP → admission →
//! group commit → redb → restart → load). One run kills the same data dir [`KILLS`] times, so
//! later rounds also re-check everything earlier rounds wrote. The load and the model are
//! seeded: a failure prints the seed, and `OPKIT_CRASH_SEED=<seed>` replays the same choices
//! (the kill lands at the same delay, though what is in flight then depends on timing).
//!
//! The checker ([`crash_load`]) has its own unit tests with fabricated lost writes, so this test
//! is known to be able to fail.

mod common;
#[path = "common/crash_load.rs"]
mod crash_load;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crash_load::{EventType, Model, Observed, Op, Violation, WatchedEvent, Write, content};
use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{
    Api, DeleteParams, ListParams, ObjectMeta, PostParams, Preconditions, WatchEvent, WatchParams,
};
use kube::config::{KubeConfigOptions, Kubeconfig};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// How many times the server is killed in one run.
const KILLS: usize = 30;
/// Concurrent writers.
const TASKS: usize = 12;
/// Load before each kill, in milliseconds (uniform).
const LOAD_MS: std::ops::RangeInclusive<u64> = 50..=400;
/// The namespace the load writes to; everything in it must be explained by the model.
const NAMESPACE: &str = "crash";
/// The key written by the checker after each restart.
const PROBE: &str = "probe";
/// How long `opkit up` may take to print its ready line.
const READY_TIMEOUT: Duration = Duration::from_secs(60);
/// How long one request may take before it counts as unanswered.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a watch check may read.
const WATCH_TIMEOUT: Duration = Duration::from_secs(10);

const READY_PREFIX: &str = "opkit control plane ready at ";

/// A running `opkit up` on the test's data dir.
struct Server {
    child: Child,
    kubeconfig: PathBuf,
    log: Arc<Mutex<String>>,
}

impl Server {
    /// Starts `opkit up --data-dir DATA --listen 127.0.0.1:0 --controllers ''` and waits for
    /// its ready line.
    fn start(data: &Path) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_opkit"))
            .arg("up")
            .arg("--data-dir")
            .arg(data)
            .args(["--listen", "127.0.0.1:0", "--controllers", ""])
            .env_remove("OPKIT_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("opkit up starts");
        let log = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = mpsc::channel::<String>();
        let stdout = child.stdout.take().expect("piped stdout");
        let stderr = child.stderr.take().expect("piped stderr");
        let mut readers = Vec::new();
        {
            let log = Arc::clone(&log);
            readers.push(std::thread::spawn(move || {
                for line in BufReader::new(stdout).lines() {
                    let Ok(line) = line else { break };
                    push_line(&log, "stdout", &line);
                    let _ = tx.send(line);
                }
            }));
        }
        {
            let log = Arc::clone(&log);
            readers.push(std::thread::spawn(move || {
                for line in BufReader::new(stderr).lines() {
                    let Ok(line) = line else { break };
                    push_line(&log, "stderr", &line);
                }
            }));
        }
        let deadline = Instant::now() + READY_TIMEOUT;
        let kubeconfig = loop {
            match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(line) => {
                    if let Some(path) = line
                        .strip_prefix(READY_PREFIX)
                        .and_then(|rest| rest.split_once(" (kubeconfig: "))
                        .and_then(|(_, path)| path.strip_suffix(')'))
                    {
                        break PathBuf::from(path);
                    }
                }
                Err(why) => {
                    let _ = child.kill();
                    let status = child.wait();
                    common::drain(readers);
                    let why = match why {
                        RecvTimeoutError::Timeout => format!("no ready line in {READY_TIMEOUT:?}"),
                        RecvTimeoutError::Disconnected => format!("exited ({status:?})"),
                    };
                    panic!(
                        "opkit up on {} did not start: {why}\n{}",
                        data.display(),
                        lock(&log)
                    );
                }
            }
        };
        Server {
            child,
            kubeconfig,
            log,
        }
    }

    /// SIGKILLs the server (which must still be running) and reaps it.
    fn kill(&mut self) {
        if let Ok(Some(status)) = self.child.try_wait() {
            panic!(
                "opkit up died by itself during the load ({status})\n{}",
                self.log()
            );
        }
        self.child.kill().expect("SIGKILL opkit up");
        self.child.wait().expect("reap opkit up");
    }

    fn log(&self) -> String {
        lock(&self.log).clone()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn push_line(log: &Mutex<String>, stream: &str, line: &str) {
    let mut log = lock(log);
    log.push_str(stream);
    log.push_str(": ");
    log.push_str(line);
    log.push('\n');
}

/// A kube-rs client from the kubeconfig `opkit up` wrote: no automatic retries (a retried
/// write would blur what was acknowledged) and a bounded read time.
async fn client(kubeconfig: &Path) -> kube::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let yaml = std::fs::read_to_string(kubeconfig).expect("read the kubeconfig");
    let kubeconfig = Kubeconfig::from_yaml(&yaml).expect("kubeconfig parses");
    let mut config =
        kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
            .await
            .expect("kubeconfig is usable");
    config.default_retry = false;
    config.read_timeout = Some(REQUEST_TIMEOUT);
    kube::Client::try_from(config).expect("client builds")
}

fn rv_of(meta: &ObjectMeta) -> Option<u64> {
    meta.resource_version.as_deref()?.parse().ok()
}

fn config_map(name: &str, id: u64, rv: Option<u64>) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            namespace: Some(NAMESPACE.to_string()),
            resource_version: rv.map(|rv| rv.to_string()),
            ..ObjectMeta::default()
        },
        data: Some(content(id)),
        ..ConfigMap::default()
    }
}

/// How one write ended.
enum Outcome {
    /// Answered with success (and the resourceVersion, for creates and updates).
    Acked(Option<u64>),
    /// No answer: the server was killed (or failed) while it was in flight.
    InFlight,
}

/// What one load task did in a round.
struct TaskLog {
    /// Its writes in order, with their outcome and whether each was sent after `r0`.
    writes: Vec<(Write, Outcome, bool)>,
    /// A definite refusal (4xx) of a write the model says is valid: a consistency failure.
    refused: Option<String>,
}

/// Shared by the load tasks of one round.
struct Round {
    api: Api<ConfigMap>,
    /// The round's first acknowledged revision (0 until then).
    r0: AtomicU64,
    stop: AtomicBool,
    ids: Arc<AtomicU64>,
    names: Arc<AtomicU64>,
}

/// One writer: creates, updates and deletes of its own keys (`t<task>-<n>`), one at a time,
/// until the server dies or the round stops.
async fn load_task(
    round: Arc<Round>,
    task: usize,
    mut rng: StdRng,
    mut live: Vec<(String, u64)>,
) -> TaskLog {
    let mut log = TaskLog {
        writes: Vec::new(),
        refused: None,
    };
    while !round.stop.load(Ordering::Relaxed) {
        let id = round.ids.fetch_add(1, Ordering::Relaxed);
        let dice: u32 = rng.random_range(0..100);
        let pick = (!live.is_empty()).then(|| rng.random_range(0..live.len()));
        let after_r0 = round.r0.load(Ordering::SeqCst) != 0;
        let (write, answer) = match pick {
            Some(i) if dice < 35 => {
                let (name, rv) = live[i].clone();
                let write = Write {
                    id,
                    key: name.clone(),
                    op: Op::Update,
                };
                let cm = config_map(&name, id, Some(rv));
                let pp = PostParams::default();
                let answer =
                    tokio::time::timeout(REQUEST_TIMEOUT, round.api.replace(&name, &pp, &cm))
                        .await
                        .map(|r| r.map(|cm| rv_of(&cm.metadata)));
                (write, answer)
            }
            Some(i) if dice < 60 => {
                let (name, rv) = live[i].clone();
                let write = Write {
                    id,
                    key: name.clone(),
                    op: Op::Delete,
                };
                let dp = DeleteParams {
                    preconditions: Some(Preconditions {
                        resource_version: Some(rv.to_string()),
                        uid: None,
                    }),
                    ..DeleteParams::default()
                };
                let answer = tokio::time::timeout(REQUEST_TIMEOUT, round.api.delete(&name, &dp))
                    .await
                    .map(|r| r.map(|_| None));
                (write, answer)
            }
            _ => {
                let n = round.names.fetch_add(1, Ordering::Relaxed);
                let name = format!("t{task}-{n}");
                let write = Write {
                    id,
                    key: name.clone(),
                    op: Op::Create,
                };
                let cm = config_map(&name, id, None);
                let answer = tokio::time::timeout(
                    REQUEST_TIMEOUT,
                    round.api.create(&PostParams::default(), &cm),
                )
                .await
                .map(|r| r.map(|cm| rv_of(&cm.metadata)));
                (write, answer)
            }
        };
        match answer {
            Ok(Ok(rv)) => {
                if write.op != Op::Delete && rv.is_none() {
                    log.refused = Some(format!("{write:?}: the answer has no resourceVersion"));
                    break;
                }
                if let Some(rv) = rv {
                    let _ = round
                        .r0
                        .compare_exchange(0, rv, Ordering::SeqCst, Ordering::SeqCst);
                }
                match (write.op, rv) {
                    (Op::Create, Some(rv)) => live.push((write.key.clone(), rv)),
                    (Op::Update, Some(rv)) => {
                        if let Some(entry) = live.iter_mut().find(|(k, _)| *k == write.key) {
                            entry.1 = rv;
                        }
                    }
                    _ => live.retain(|(k, _)| *k != write.key),
                }
                log.writes.push((write, Outcome::Acked(rv), after_r0));
            }
            Ok(Err(kube::Error::Api(status)))
                if status.code != 429 && (400..500).contains(&status.code) =>
            {
                log.refused = Some(format!(
                    "{write:?} refused with {} {}: {}",
                    status.code, status.reason, status.message
                ));
                break;
            }
            // A 5xx, a 429, a broken connection or a timeout: it may or may not have happened.
            Ok(Err(_)) | Err(_) => {
                log.writes.push((write, Outcome::InFlight, after_r0));
                break;
            }
        }
    }
    log
}

/// Everything in the namespace, by name, and the list's resourceVersion.
async fn list_all(api: &Api<ConfigMap>) -> (BTreeMap<String, Observed>, u64) {
    let list = api
        .list(&ListParams::default())
        .await
        .expect("LIST after the restart");
    let list_rv = list
        .metadata
        .resource_version
        .as_deref()
        .and_then(|rv| rv.parse().ok())
        .expect("the list has a numeric resourceVersion");
    let observed = list
        .items
        .into_iter()
        .map(|cm| {
            let name = cm.metadata.name.clone().expect("items have names");
            let rv = rv_of(&cm.metadata).expect("items have numeric resourceVersions");
            let data = cm.data.unwrap_or_default();
            (name, Observed { data, rv })
        })
        .collect();
    (observed, list_rv)
}

/// How a watch resumed at an old revision went.
enum Resumed {
    /// 410 Expired (as an HTTP status or an ERROR event).
    Expired,
    /// It replayed events; the violations found in them.
    Replayed(Vec<Violation>),
}

/// Watches the namespace from `r0` and checks what arrives against the model: reads until an
/// event at or past the round's highest acknowledged revision has arrived and the stream has
/// been quiet for a moment (trailing deletes carry no known revision), or [`WATCH_TIMEOUT`].
async fn resume_watch(api: &Api<ConfigMap>, model: &Model, r0: u64) -> Resumed {
    let stream = match api
        .watch(&WatchParams::default().timeout(10), &r0.to_string())
        .await
    {
        Ok(stream) => stream,
        Err(kube::Error::Api(status)) if status.code == 410 => return Resumed::Expired,
        Err(e) => panic!("WATCH from {r0} failed: {e}"),
    };
    let mut stream = Box::pin(stream);
    let deadline = Instant::now() + WATCH_TIMEOUT;
    let mut events = Vec::new();
    let mut passed = false;
    loop {
        let wait = if passed {
            Duration::from_millis(300)
        } else {
            deadline.saturating_duration_since(Instant::now())
        };
        let next = match tokio::time::timeout(wait, stream.next()).await {
            Ok(Some(next)) => next,
            Ok(None) | Err(_) => break,
        };
        let (kind, cm) = match next.expect("watch stream item") {
            WatchEvent::Added(cm) => (EventType::Added, cm),
            WatchEvent::Modified(cm) => (EventType::Modified, cm),
            WatchEvent::Deleted(cm) => (EventType::Deleted, cm),
            WatchEvent::Bookmark(_) => continue,
            WatchEvent::Error(status) if status.code == 410 => return Resumed::Expired,
            WatchEvent::Error(status) => panic!("WATCH from {r0}: error event {status:?}"),
        };
        let rv = rv_of(&cm.metadata).expect("watch events carry a resourceVersion");
        passed |= rv >= model.max_acked_rv();
        events.push(WatchedEvent {
            kind,
            key: cm.metadata.name.clone().unwrap_or_default(),
            rv,
            data: cm.data.unwrap_or_default(),
        });
        if Instant::now() >= deadline {
            break;
        }
    }
    Resumed::Replayed(model.check_watch(r0, &events, true))
}

/// Writes the probe key after a restart, and checks both that its revision is above everything
/// before the crash and that a watch started at the list's revision (the revision the store
/// reopened at) delivers it.
async fn probe(api: &Api<ConfigMap>, model: &mut Model, id: u64, list_rv: u64) -> Vec<Violation> {
    let mut stream = Box::pin(
        api.watch(&WatchParams::default().timeout(10), &list_rv.to_string())
            .await
            .unwrap_or_else(|e| panic!("WATCH from the list's revision {list_rv} failed: {e}")),
    );
    let (op, answer) = match model.live_keys(PROBE).first() {
        Some((_, rv)) => (
            Op::Update,
            api.replace(
                PROBE,
                &PostParams::default(),
                &config_map(PROBE, id, Some(*rv)),
            )
            .await,
        ),
        None => (
            Op::Create,
            api.create(&PostParams::default(), &config_map(PROBE, id, None))
                .await,
        ),
    };
    let cm = answer.unwrap_or_else(|e| panic!("the probe write after the restart failed: {e}"));
    let rv = rv_of(&cm.metadata).expect("the probe answer has a resourceVersion");
    let mut violations: Vec<Violation> =
        model.check_new_revision(rv, list_rv).into_iter().collect();
    let write = Write {
        id,
        key: PROBE.to_string(),
        op,
    };
    if let Err(v) = model.ack(write, Some(rv), false) {
        violations.push(v);
    }
    let seen = tokio::time::timeout(WATCH_TIMEOUT, async {
        while let Some(event) = stream.next().await {
            match event.expect("watch stream item") {
                WatchEvent::Added(cm) | WatchEvent::Modified(cm)
                    if cm.metadata.name.as_deref() == Some(PROBE) =>
                {
                    return rv_of(&cm.metadata);
                }
                WatchEvent::Error(status) => {
                    panic!("WATCH from the reopened revision {list_rv}: {status:?}")
                }
                _ => {}
            }
        }
        None
    })
    .await;
    match seen {
        Ok(Some(seen)) if seen == rv => {}
        other => panic!(
            "a watch from the reopened revision {list_rv} should deliver the probe write at \
             {rv}; got {other:?}"
        ),
    }
    violations
}

/// What a failure report says about the round.
struct Failure {
    seed: u64,
    kill: usize,
    delay: Duration,
    r0: u64,
    list_rv: u64,
    killed_log: String,
}

impl Failure {
    /// Fails the test with every violation, the seed, and both servers' logs.
    fn fail(
        &self,
        model: &Model,
        violations: &[Violation],
        refused: &[String],
        server: &Server,
    ) -> ! {
        let lines: Vec<String> = violations.iter().map(ToString::to_string).collect();
        panic!(
            "CRASH-SAFETY FAILURE (seed {}, kill {} of {KILLS}, load {:?}, r0 {}, list \
             resourceVersion {}, max acknowledged {}):\n{}\nrefused writes: {refused:?}\n--- \
             killed server's log ---\n{}\n--- restarted server's log ---\n{}",
            self.seed,
            self.kill,
            self.delay,
            self.r0,
            self.list_rv,
            model.max_acked_rv(),
            lines.join("\n"),
            self.killed_log,
            server.log()
        )
    }
}

/// The test's seed: `OPKIT_CRASH_SEED` or a random one.
fn seed() -> u64 {
    match std::env::var("OPKIT_CRASH_SEED") {
        Ok(s) => s.parse().expect("OPKIT_CRASH_SEED is a number"),
        Err(_) => rand::random(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn acknowledged_writes_survive_repeated_sigkill_and_revisions_keep_rising() {
    let seed = seed();
    eprintln!("crash test seed {seed} (replay with OPKIT_CRASH_SEED={seed})");
    let started = Instant::now();
    let mut rng = StdRng::seed_from_u64(seed);
    let dir = tempfile::tempdir().expect("temporary directory");
    let data = dir.path().join("data");

    let mut server = Server::start(&data);
    let mut api: Api<ConfigMap> = Api::namespaced(client(&server.kubeconfig).await, NAMESPACE);
    let namespaces: Api<Namespace> = Api::all(api.clone().into_client());
    let namespace = Namespace {
        metadata: ObjectMeta {
            name: Some(NAMESPACE.to_string()),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    namespaces
        .create(&PostParams::default(), &namespace)
        .await
        .expect("create the namespace");

    let mut model = Model::new();
    let ids = Arc::new(AtomicU64::new(1));
    let names = Arc::new(AtomicU64::new(0));
    let (mut expired, mut replayed) = (0u32, 0u32);
    for kill in 1..=KILLS {
        let round = Arc::new(Round {
            api: api.clone(),
            r0: AtomicU64::new(0),
            stop: AtomicBool::new(false),
            ids: ids.clone(),
            names: names.clone(),
        });
        let tasks: Vec<_> = (0..TASKS)
            .map(|task| {
                let task_rng = StdRng::seed_from_u64(rng.random());
                let live = model.live_keys(&format!("t{task}-"));
                tokio::spawn(load_task(round.clone(), task, task_rng, live))
            })
            .collect();
        let delay = Duration::from_millis(rng.random_range(LOAD_MS));
        tokio::time::sleep(delay).await;
        server.kill();
        round.stop.store(true, Ordering::Relaxed);
        let old_log = server.log();

        let mut violations = Vec::new();
        let mut refused = Vec::new();
        for task in tasks {
            let log = task.await.expect("load task");
            refused.extend(log.refused);
            for (write, outcome, after_r0) in log.writes {
                match outcome {
                    Outcome::Acked(rv) => {
                        if let Err(v) = model.ack(write, rv, after_r0) {
                            violations.push(v);
                        }
                    }
                    Outcome::InFlight => model.in_flight(write, after_r0),
                }
            }
        }
        let r0 = round.r0.load(Ordering::SeqCst);

        server = Server::start(&data);
        api = Api::namespaced(client(&server.kubeconfig).await, NAMESPACE);
        let (observed, list_rv) = list_all(&api).await;
        violations.extend(model.check(&observed, list_rv));
        if r0 != 0 {
            match resume_watch(&api, &model, r0).await {
                Resumed::Expired => expired += 1,
                Resumed::Replayed(found) => {
                    replayed += 1;
                    violations.extend(found);
                }
            }
        }
        let context = Failure {
            seed,
            kill,
            delay,
            r0,
            list_rv,
            killed_log: old_log,
        };
        if !violations.is_empty() || !refused.is_empty() {
            context.fail(&model, &violations, &refused, &server);
        }
        model.settle(&observed);
        let probe_id = ids.fetch_add(1, Ordering::Relaxed);
        let found = probe(&api, &mut model, probe_id, list_rv).await;
        if !found.is_empty() {
            context.fail(&model, &found, &[], &server);
        }
    }
    server.kill();

    // A last restart re-checks everything the final round left.
    let server = Server::start(&data);
    let api: Api<ConfigMap> = Api::namespaced(client(&server.kubeconfig).await, NAMESPACE);
    let (observed, list_rv) = list_all(&api).await;
    let violations = model.check(&observed, list_rv);
    assert!(
        violations.is_empty(),
        "CRASH-SAFETY FAILURE after the last clean kill (seed {seed}): {violations:?}"
    );
    model.settle(&observed);
    let stats = model.stats();
    eprintln!(
        "crash summary: seed={seed} kills={KILLS} acknowledged_writes={} \
         key_checks_after_restart={} in_flight_at_kill={} in_flight_applied={} \
         objects_at_end={} max_rv={} resumed_watches_expired={expired} \
         resumed_watches_replayed={replayed} elapsed={:.1?}",
        stats.acked,
        stats.keys_checked,
        stats.in_flight,
        stats.in_flight_applied,
        observed.len(),
        model.max_acked_rv(),
        started.elapsed()
    );
}
