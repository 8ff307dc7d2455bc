//! Watches: replay from history, live events, registration races, compaction, shutdown.

mod common;

use std::time::Duration;

use bytes::Bytes;
use common::*;
use opkit_store::{Store, StoreConfig, StoreError};

#[tokio::test]
async fn watch_replays_history_then_continues_live_without_gaps_or_duplicates() {
    let dir = tempfile::tempdir().unwrap();
    for (kind, store) in both_kinds(&dir) {
        for i in 0..10 {
            put(&store, &format!("/w/{i}"), "old").await;
            put(&store, &format!("/other/{i}"), "noise").await;
        }
        // Revisions 1..=20; the /w/ events are the odd ones. Start after revision 6.
        let mut watcher = store.watch("/w/", 6).unwrap();
        let writer = {
            let store = store.clone();
            tokio::spawn(async move {
                for i in 0..10 {
                    put(&store, &format!("/w/live{i}"), "new").await;
                    put(&store, &format!("/other/live{i}"), "noise").await;
                }
            })
        };
        let mut revisions = Vec::new();
        while revisions.len() < 7 + 10 {
            let event = next_event(&mut watcher).await;
            assert!(event.key.starts_with("/w/"), "{kind}: {}", event.key);
            revisions.push(event.revision);
        }
        writer.await.unwrap();
        let expected: Vec<u64> = (7..=40).filter(|r| r % 2 == 1).collect();
        assert_eq!(revisions, expected, "{kind}");
        // Nothing more is pending.
        let more = tokio::time::timeout(Duration::from_millis(50), watcher.next()).await;
        assert!(more.is_err(), "{kind}: unexpected {more:?}");
        assert_eq!(watcher.progress_revision(), 40, "{kind}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn watch_registered_while_writers_run_sees_every_later_event_exactly_once() {
    let dir = tempfile::tempdir().unwrap();
    for (kind, store) in both_kinds(&dir) {
        let writers: Vec<_> = (0..8)
            .map(|w| {
                let store = store.clone();
                tokio::spawn(async move {
                    for i in 0..100 {
                        put(&store, &format!("/race/{w}/{i}"), "v").await;
                    }
                })
            })
            .collect();
        let mut watchers = Vec::new();
        while watchers.len() < 40 {
            let after = store.current_revision();
            watchers.push((after, store.watch("/race/", after).unwrap()));
            tokio::task::yield_now().await;
        }
        for writer in writers {
            writer.await.unwrap();
        }
        assert_eq!(store.current_revision(), 800, "{kind}");
        for (after, mut watcher) in watchers {
            // Every transaction writes one key under the prefix: revisions must be contiguous.
            for expected in after + 1..=800 {
                assert_eq!(next_event(&mut watcher).await.revision, expected, "{kind}");
            }
            assert_eq!(watcher.progress_revision(), 800, "{kind}");
        }
    }
}

#[tokio::test]
async fn watch_from_a_compacted_revision_fails_with_compacted() {
    let dir = tempfile::tempdir().unwrap();
    let path = db_path(&dir);
    {
        let store = open_at(&path);
        for i in 0..5 {
            put(&store, &format!("/a/{i}"), "v").await;
        }
    }
    // After reopen the history is empty: the revision at open is the compacted revision.
    let store = open_at(&path);
    assert_eq!(store.compacted_revision(), 5);
    match store.watch("/a/", 3) {
        Err(StoreError::Compacted {
            requested: 3,
            compacted: 5,
        }) => {}
        other => panic!("expected Compacted, got {other:?}"),
    }
    let mut watcher = store.watch("/a/", 5).unwrap();
    put(&store, "/a/new", "v").await;
    assert_eq!(next_event(&mut watcher).await.revision, 6);

    // The same once the history is trimmed by count.
    let store = Store::open(StoreConfig {
        history_max_events: 4,
        ..StoreConfig::ephemeral()
    })
    .unwrap();
    for i in 0..10 {
        put(&store, &format!("/a/{i}"), "v").await;
    }
    let compacted = store.compacted_revision();
    assert_eq!(compacted, 6);
    assert!(matches!(
        store.watch("", compacted - 1),
        Err(StoreError::Compacted { .. })
    ));
    let mut watcher = store.watch("", compacted).unwrap();
    assert_eq!(next_event(&mut watcher).await.revision, compacted + 1);
}

#[tokio::test]
async fn slow_watcher_gets_compacted_once_history_passes_it_then_ends() {
    let store = Store::open(StoreConfig {
        history_max_events: 10,
        ..StoreConfig::ephemeral()
    })
    .unwrap();
    let mut slow = store.watch("/s/", 0).unwrap();
    put(&store, "/s/0", "v").await;
    assert_eq!(next_event(&mut slow).await.revision, 1);
    for i in 1..50 {
        put(&store, &format!("/s/{i}"), "v").await;
    }
    match slow.next().await {
        Some(Err(StoreError::Compacted {
            requested: 1,
            compacted,
        })) => assert_eq!(compacted, store.compacted_revision()),
        other => panic!("expected Compacted, got {other:?}"),
    }
    assert!(slow.next().await.is_none(), "a compacted watcher ends");
    // Live data is untouched.
    assert_eq!(store.count("/s/"), 50);
}

#[tokio::test]
async fn watcher_filters_by_prefix_and_progress_advances_past_other_keys() {
    let dir = tempfile::tempdir().unwrap();
    for (kind, store) in both_kinds(&dir) {
        let mut watcher = store.watch("/pods/", 0).unwrap();
        put(&store, "/pods/a", "v").await;
        put(&store, "/podsx", "not a child").await;
        put(&store, "/nodes/n", "v").await;
        let event = next_event(&mut watcher).await;
        assert_eq!(&*event.key, "/pods/a", "{kind}");
        // Poll once more: it scans the other events and then waits.
        let more = tokio::time::timeout(Duration::from_millis(20), watcher.next()).await;
        assert!(more.is_err(), "{kind}");
        assert_eq!(watcher.progress_revision(), 3, "{kind}");
    }
}

#[tokio::test]
async fn events_are_shared_between_watchers_not_copied() {
    let store = Store::open(StoreConfig::ephemeral()).unwrap();
    let mut a = store.watch("", 0).unwrap();
    let mut b = store.watch("/k", 0).unwrap();
    put(&store, "/k", "v").await;
    let from_a = next_event(&mut a).await;
    let from_b = next_event(&mut b).await;
    assert!(std::sync::Arc::ptr_eq(&from_a, &from_b));
}

#[tokio::test]
async fn watchers_drain_their_events_then_end_when_the_store_is_dropped() {
    let dir = tempfile::tempdir().unwrap();
    for (kind, store) in both_kinds(&dir) {
        let mut watcher = store.watch("", 0).unwrap();
        let waiting = {
            let mut idle = store.watch("/idle/", 0).unwrap();
            tokio::spawn(async move { idle.next().await.is_none() })
        };
        put(&store, "/a", "v").await;
        drop(store);
        assert_eq!(next_event(&mut watcher).await.revision, 1, "{kind}");
        let end = tokio::time::timeout(Duration::from_secs(5), watcher.next()).await;
        assert!(matches!(end, Ok(None)), "{kind}: {end:?}");
        let ended = tokio::time::timeout(Duration::from_secs(5), waiting).await;
        assert!(matches!(ended, Ok(Ok(true))), "{kind}: {ended:?}");
    }
}

#[tokio::test]
async fn watch_from_a_future_revision_skips_events_up_to_it() {
    let store = Store::open(StoreConfig::ephemeral()).unwrap();
    let mut watcher = store.watch("", 2).unwrap();
    for i in 0..3 {
        store
            .transact(|txn| {
                txn.put(&format!("/{i}"), Bytes::from_static(b"v"));
                Ok::<_, StoreError>(())
            })
            .await
            .unwrap();
    }
    assert_eq!(next_event(&mut watcher).await.revision, 3);
}
