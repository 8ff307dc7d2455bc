//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use bytes::Bytes;
use opkit_store::{Event, Store, StoreConfig, StoreError, Watcher};

pub fn db_path(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().join("store.redb")
}

pub fn open_at(path: &Path) -> Store {
    Store::open(StoreConfig::persistent(path)).expect("open store")
}

/// Both kinds of store, so that a test checks that they behave the same.
pub fn both_kinds(dir: &tempfile::TempDir) -> Vec<(&'static str, Store)> {
    vec![
        (
            "ephemeral",
            Store::open(StoreConfig::ephemeral()).expect("open"),
        ),
        ("durable", open_at(&db_path(dir))),
    ]
}

/// Puts `key` with a value naming the revision, returns the revision.
pub async fn put(store: &Store, key: &str, value: &str) -> u64 {
    let (_, revision) = store
        .transact(|txn| {
            txn.put(key, Bytes::from(format!("{value}@{}", txn.revision())));
            Ok::<_, StoreError>(())
        })
        .await
        .expect("put");
    revision.expect("a put consumes a revision")
}

/// Deletes `key`, returns the revision (None if it did not exist).
pub async fn delete(store: &Store, key: &str) -> Option<u64> {
    let (_, revision) = store
        .transact(|txn| {
            let last = format!("deleted@{}", txn.revision());
            txn.delete(key, Bytes::from(last));
            Ok::<_, StoreError>(())
        })
        .await
        .expect("delete");
    revision
}

pub fn text(bytes: &Bytes) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The next event, failing the test after a timeout.
pub async fn next_event(watcher: &mut Watcher) -> std::sync::Arc<Event> {
    tokio::time::timeout(Duration::from_secs(10), watcher.next())
        .await
        .expect("event within 10s")
        .expect("watcher not ended")
        .expect("no watch error")
}
