//! Transactions: compare-and-swap, atomicity, revisions, concurrency, durability.

mod common;

use std::collections::HashSet;
use std::sync::Arc;

use bytes::Bytes;
use common::*;
use opkit_store::{EventKind, ListOptions, Store, StoreConfig, StoreError};

#[derive(Debug)]
enum AppError {
    Conflict { current: u64 },
    NotFound,
    Store(#[allow(dead_code)] StoreError),
}

impl From<StoreError> for AppError {
    fn from(err: StoreError) -> Self {
        AppError::Store(err)
    }
}

/// Kubernetes-style update: only if the object is still at `expected`.
async fn update_if_unchanged(
    store: &Store,
    key: &str,
    expected: u64,
    value: &str,
) -> Result<u64, AppError> {
    let (_, revision) = store
        .transact(|txn| {
            let current = txn.get(key).ok_or(AppError::NotFound)?;
            if current.revision != expected {
                return Err(AppError::Conflict {
                    current: current.revision,
                });
            }
            txn.put(key, Bytes::from(value.to_owned()));
            Ok(())
        })
        .await?;
    Ok(revision.expect("update writes"))
}

#[tokio::test]
async fn compare_and_swap_on_revision_rejects_stale_update_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    for (kind, store) in both_kinds(&dir) {
        let created = put(&store, "/cm/a", "v1").await;
        let updated = update_if_unchanged(&store, "/cm/a", created, "v2")
            .await
            .unwrap();
        assert_eq!(updated, created + 1, "{kind}");
        let stale = update_if_unchanged(&store, "/cm/a", created, "v3").await;
        assert!(
            matches!(stale, Err(AppError::Conflict { current }) if current == updated),
            "{kind}: {stale:?}"
        );
        assert!(matches!(
            update_if_unchanged(&store, "/cm/missing", 1, "x").await,
            Err(AppError::NotFound)
        ));
        let entry = store.get("/cm/a").unwrap();
        assert_eq!(text(&entry.value), "v2", "{kind}");
        assert_eq!(entry.revision, updated, "{kind}");
        assert_eq!(
            store.current_revision(),
            updated,
            "{kind}: no revision consumed"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_read_modify_write_transactions_lose_no_update() {
    let dir = tempfile::tempdir().unwrap();
    for (kind, store) in both_kinds(&dir) {
        let tasks: Vec<_> = (0..32)
            .map(|_| {
                let store = store.clone();
                tokio::spawn(async move {
                    for _ in 0..25 {
                        store
                            .transact(|txn| {
                                let n: u64 = txn
                                    .get("/counter")
                                    .map(|e| text(&e.value).parse().unwrap())
                                    .unwrap_or(0);
                                txn.put("/counter", Bytes::from((n + 1).to_string()));
                                Ok::<_, StoreError>(())
                            })
                            .await
                            .unwrap();
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
        let counter = store.get("/counter").unwrap();
        assert_eq!(text(&counter.value), "800", "{kind}");
        assert_eq!(counter.revision, 800, "{kind}");
    }
}

#[tokio::test]
async fn failing_closure_writes_nothing_and_consumes_no_revision() {
    let dir = tempfile::tempdir().unwrap();
    for (kind, store) in both_kinds(&dir) {
        put(&store, "/a", "keep").await;
        let result = store
            .transact(|txn| {
                txn.put("/a", Bytes::from_static(b"lost"));
                txn.put("/b", Bytes::from_static(b"lost"));
                Err::<(), _>(AppError::NotFound)
            })
            .await;
        assert!(matches!(result, Err(AppError::NotFound)), "{kind}");
        assert_eq!(text(&store.get("/a").unwrap().value), "keep@1", "{kind}");
        assert!(store.get("/b").is_none(), "{kind}");
        assert_eq!(store.current_revision(), 1, "{kind}");
        assert_eq!(put(&store, "/c", "next").await, 2, "{kind}");
    }
}

#[tokio::test]
async fn transaction_without_effective_writes_consumes_no_revision() {
    let dir = tempfile::tempdir().unwrap();
    for (kind, store) in both_kinds(&dir) {
        let (value, revision) = store
            .transact(|txn| Ok::<_, StoreError>(txn.get("/nothing").is_none()))
            .await
            .unwrap();
        assert!(value);
        assert_eq!(revision, None, "{kind}");
        // Deleting a key that does not exist is not a write either.
        assert_eq!(delete(&store, "/nothing").await, None, "{kind}");
        // Nor is creating and deleting a key in the same transaction.
        let (_, revision) = store
            .transact(|txn| {
                txn.put("/tmp", Bytes::from_static(b"x"));
                txn.delete("/tmp", Bytes::from_static(b"x"));
                Ok::<_, StoreError>(())
            })
            .await
            .unwrap();
        assert_eq!(revision, None, "{kind}");
        assert_eq!(store.current_revision(), 0, "{kind}");
    }
}

#[tokio::test]
async fn transaction_reads_its_own_staged_writes() {
    let dir = tempfile::tempdir().unwrap();
    for (kind, store) in both_kinds(&dir) {
        put(&store, "/gone", "v").await;
        store
            .transact(|txn| {
                assert_eq!(txn.revision(), 2);
                txn.put("/new", Bytes::from_static(b"n"));
                let seen = txn.get("/new").unwrap();
                assert_eq!(seen.revision, 2);
                assert_eq!(&seen.value[..], b"n");
                assert!(txn.get("/gone").is_some());
                txn.delete("/gone", Bytes::from_static(b"last"));
                assert!(txn.get("/gone").is_none());
                Ok::<_, StoreError>(())
            })
            .await
            .unwrap();
        assert!(store.get("/gone").is_none(), "{kind}");
        assert_eq!(store.get("/new").unwrap().revision, 2, "{kind}");
    }
}

#[tokio::test]
async fn all_writes_of_a_transaction_share_one_revision_and_appear_together() {
    let dir = tempfile::tempdir().unwrap();
    for (kind, store) in both_kinds(&dir) {
        put(&store, "/x/0", "old").await;
        let mut watcher = store.watch("/x/", 1).unwrap();
        let (_, revision) = store
            .transact(|txn| {
                for i in 1..4 {
                    txn.put(&format!("/x/{i}"), Bytes::from(format!("{i}")));
                }
                txn.delete("/x/0", Bytes::from_static(b"last"));
                Ok::<_, StoreError>(())
            })
            .await
            .unwrap();
        assert_eq!(revision, Some(2), "{kind}");
        let listed = store.list("/x/", &ListOptions::default()).unwrap();
        assert_eq!(listed.entries.len(), 3, "{kind}");
        assert!(listed.entries.iter().all(|e| e.revision == 2), "{kind}");
        for _ in 0..4 {
            assert_eq!(next_event(&mut watcher).await.revision, 2, "{kind}");
        }
    }
}

#[tokio::test]
async fn revision_keeps_rising_across_reopen_even_when_last_write_was_a_delete() {
    let dir = tempfile::tempdir().unwrap();
    let path = db_path(&dir);
    {
        let store = open_at(&path);
        put(&store, "/a", "1").await;
        put(&store, "/b", "2").await;
        assert_eq!(delete(&store, "/a").await, Some(3));
        assert_eq!(delete(&store, "/b").await, Some(4));
    }
    let store = open_at(&path);
    assert_eq!(store.current_revision(), 4);
    assert_eq!(store.count(""), 0);
    assert_eq!(put(&store, "/c", "3").await, 5);
    drop(store);
    let store = open_at(&path);
    assert_eq!(store.current_revision(), 5);
    assert_eq!(put(&store, "/d", "4").await, 6);
}

#[tokio::test]
async fn acknowledged_writes_survive_reopen_with_their_revisions() {
    let dir = tempfile::tempdir().unwrap();
    let path = db_path(&dir);
    let mut expected = Vec::new();
    {
        let store = open_at(&path);
        for i in 0..20 {
            let key = format!("/obj/{i:02}");
            let revision = put(&store, &key, "v").await;
            expected.push((key, revision));
        }
        delete(&store, "/obj/05").await;
        expected.retain(|(key, _)| key != "/obj/05");
    }
    let store = open_at(&path);
    assert_eq!(store.compacted_revision(), 21);
    assert_eq!(store.count("/obj/"), 19);
    for (key, revision) in expected {
        let entry = store.get(&key).unwrap();
        assert_eq!(entry.revision, revision);
        assert_eq!(text(&entry.value), format!("v@{revision}"));
    }
}

#[tokio::test]
async fn second_open_of_the_same_path_in_one_process_is_locked() {
    let dir = tempfile::tempdir().unwrap();
    let path = db_path(&dir);
    let store = open_at(&path);
    put(&store, "/a", "1").await;
    match Store::open(StoreConfig::persistent(&path)) {
        Err(StoreError::Locked { path: locked }) => {
            assert_eq!(locked, path);
            let message = StoreError::Locked { path: locked }.to_string();
            assert!(message.contains("store.redb"), "{message}");
            assert!(message.contains("already open"), "{message}");
        }
        other => panic!("expected Locked, got {other:?}"),
    }
    // Dropping the store releases the lock at once.
    drop(store);
    let store = open_at(&path);
    assert_eq!(store.get("/a").unwrap().revision, 1);
}

#[tokio::test]
async fn closed_resolves_once_the_last_handle_held_elsewhere_is_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let path = db_path(&dir);
    let store = open_at(&path);
    put(&store, "/a", "1").await;
    let closed = store.closed();
    // Another task still holds a handle after ours is gone: the store stays open until it ends.
    let (release, released) = tokio::sync::oneshot::channel::<()>();
    let holder = store.clone();
    let task = tokio::spawn(async move {
        let _ = released.await;
        drop(holder);
    });
    drop(store);
    let closed = tokio::spawn(closed);
    // The current-thread runtime runs the waiting task here; a held handle keeps it waiting.
    tokio::task::yield_now().await;
    assert!(!closed.is_finished(), "a handle is still held");
    release.send(()).unwrap();
    closed.await.unwrap();
    task.await.unwrap();
    let store = open_at(&path);
    assert_eq!(store.get("/a").unwrap().revision, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_transacts_get_unique_revisions_and_all_survive_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = db_path(&dir);
    let mut acked = Vec::new();
    {
        let store = open_at(&path);
        let tasks: Vec<_> = (0..64)
            .map(|task| {
                let store = store.clone();
                tokio::spawn(async move {
                    let mut acked = Vec::new();
                    for i in 0..20 {
                        let key = format!("/t/{task:02}/{i:02}");
                        acked.push((key.clone(), put(&store, &key, "v").await));
                    }
                    acked
                })
            })
            .collect();
        for task in tasks {
            acked.extend(task.await.unwrap());
        }
        let stats = store.stats();
        assert!(
            stats.group_commits < 1280,
            "group commit should batch: {stats:?}"
        );
    }
    let revisions: HashSet<u64> = acked.iter().map(|(_, r)| *r).collect();
    assert_eq!(revisions.len(), 1280, "every revision unique");
    assert_eq!(revisions.iter().max(), Some(&1280), "no gaps");
    let store = open_at(&path);
    assert_eq!(store.current_revision(), 1280);
    for (key, revision) in acked {
        assert_eq!(store.get(&key).map(|e| e.revision), Some(revision), "{key}");
    }
}

#[tokio::test]
async fn dropped_transaction_future_still_commits_its_staged_writes() {
    let dir = tempfile::tempdir().unwrap();
    let path = db_path(&dir);
    {
        let store = open_at(&path);
        let future = store.transact(|txn| {
            txn.put("/a", Bytes::from_static(b"x"));
            Ok::<_, StoreError>(())
        });
        // Poll once (stages the write), then drop the future.
        let _ = futures_poll_once(future).await;
    }
    let store = open_at(&path);
    assert_eq!(store.get("/a").map(|e| e.revision), Some(1));
}

async fn futures_poll_once<F: std::future::Future>(future: F) -> Option<F::Output> {
    let mut future = std::pin::pin!(future);
    std::future::poll_fn(|cx| match future.as_mut().poll(cx) {
        std::task::Poll::Ready(v) => std::task::Poll::Ready(Some(v)),
        std::task::Poll::Pending => std::task::Poll::Ready(None),
    })
    .await
}

#[tokio::test]
async fn put_events_tell_creation_and_carry_the_previous_value() {
    let dir = tempfile::tempdir().unwrap();
    for (kind, store) in both_kinds(&dir) {
        let mut watcher = store.watch("/", 0).unwrap();
        put(&store, "/a", "one").await;
        put(&store, "/a", "two").await;
        let created = next_event(&mut watcher).await;
        assert_eq!(created.kind, EventKind::Put, "{kind}");
        assert!(created.created, "{kind}");
        assert_eq!(created.prev, None, "{kind}");
        let modified = next_event(&mut watcher).await;
        assert!(!modified.created, "{kind}");
        assert_eq!(text(&modified.value), "two@2", "{kind}");
        assert_eq!(modified.prev.as_ref().map(text).as_deref(), Some("one@1"));
        let _ = Arc::clone(&modified);
    }
}

#[tokio::test]
async fn delete_event_carries_the_last_state_and_the_previous_value() {
    let dir = tempfile::tempdir().unwrap();
    for (kind, store) in both_kinds(&dir) {
        put(&store, "/a", "live").await;
        let mut watcher = store.watch("/", store.current_revision()).unwrap();
        let revision = delete(&store, "/a").await.unwrap();
        let event = next_event(&mut watcher).await;
        assert_eq!(event.kind, EventKind::Delete, "{kind}");
        assert_eq!(event.revision, revision, "{kind}");
        assert_eq!(&*event.key, "/a");
        assert_eq!(text(&event.value), format!("deleted@{revision}"), "{kind}");
        assert_eq!(event.prev.as_ref().map(text).as_deref(), Some("live@1"));
        assert!(!event.created);
        assert!(store.get("/a").is_none(), "{kind}");
    }
}
