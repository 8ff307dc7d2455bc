//! Trimming the history raises the compacted revision and never loses live data.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use common::*;
use opkit_store::{Clock, ListOptions, Store, StoreConfig};

async fn churn_and_check(store: &Store, rounds: usize) {
    // Long-lived objects written once, at the start: their events are the first to be trimmed.
    for i in 0..50 {
        put(store, &format!("/live/{i:02}"), "keep").await;
    }
    for round in 0..rounds {
        put(store, &format!("/churn/{}", round % 7), "x").await;
        if round % 3 == 0 {
            delete(store, &format!("/churn/{}", (round + 1) % 7)).await;
        }
    }
    assert!(store.compacted_revision() > 50, "history was trimmed");
    assert_eq!(store.count("/live/"), 50);
    for i in 0..50 {
        let entry = store
            .get(&format!("/live/{i:02}"))
            .expect("live object kept");
        assert_eq!(text(&entry.value), format!("keep@{}", i + 1));
    }
    let listed = store.list("/live/", &ListOptions::default()).unwrap();
    assert_eq!(listed.entries.len(), 50);
}

#[tokio::test]
async fn trimming_history_by_count_never_loses_live_objects() {
    let dir = tempfile::tempdir().unwrap();
    let path = db_path(&dir);
    let config = |path| StoreConfig {
        path,
        history_max_events: 16,
        ..StoreConfig::default()
    };
    for store in [
        Store::open(config(None)).unwrap(),
        Store::open(config(Some(path.clone()))).unwrap(),
    ] {
        churn_and_check(&store, 400).await;
        assert!(store.stats().history_events <= 16);
    }
    // And they are still there after a reopen.
    let store = open_at(&path);
    assert_eq!(store.count("/live/"), 50);
}

#[tokio::test]
async fn trimming_history_by_time_never_loses_live_objects() {
    let dir = tempfile::tempdir().unwrap();
    let path = db_path(&dir);
    // The store's clock is moved by hand: the history ages without the test waiting.
    let start = Instant::now();
    let elapsed_ms = Arc::new(AtomicU64::new(0));
    let clock = {
        let elapsed_ms = elapsed_ms.clone();
        Clock::from_fn(move || start + Duration::from_millis(elapsed_ms.load(Ordering::SeqCst)))
    };
    let config = |path| StoreConfig {
        path,
        history_window: Duration::from_secs(60),
        clock: clock.clone(),
        ..StoreConfig::default()
    };
    for store in [
        Store::open(config(None)).unwrap(),
        Store::open(config(Some(path.clone()))).unwrap(),
    ] {
        for i in 0..50 {
            put(&store, &format!("/live/{i:02}"), "keep").await;
        }
        assert_eq!(store.stats().history_events, 50, "all within the window");
        elapsed_ms.fetch_add(61_000, Ordering::SeqCst);
        put(&store, "/churn/0", "x").await;
        // Everything older than the window went, except the newest revision.
        assert_eq!(store.compacted_revision(), 50);
        assert_eq!(store.stats().history_events, 1);
        assert_eq!(store.count("/live/"), 50);
        for i in 0..50 {
            let entry = store
                .get(&format!("/live/{i:02}"))
                .expect("live object kept");
            assert_eq!(text(&entry.value), format!("keep@{}", i + 1));
        }
    }
    let store = open_at(&path);
    assert_eq!(store.count("/live/"), 50);
}
