//! Lists: prefix ranges, paging, and the state at a past revision.

mod common;

use bytes::Bytes;
use common::*;
use opkit_store::{Entry, ListOptions, Store, StoreConfig, StoreError};

fn keys(entries: &[Entry]) -> Vec<String> {
    entries.iter().map(|e| e.key.to_string()).collect()
}

#[tokio::test]
async fn list_pages_with_start_after_and_limit_and_reports_what_remains() {
    let dir = tempfile::tempdir().unwrap();
    for (kind, store) in both_kinds(&dir) {
        for i in 0..7 {
            put(&store, &format!("/cm/ns/{i}"), "v").await;
        }
        put(&store, "/cm/nsx", "outside the prefix").await;
        put(&store, "/a-before", "outside").await;
        assert_eq!(store.count("/cm/ns/"), 7, "{kind}");
        let mut seen = Vec::new();
        let mut opts = ListOptions {
            limit: Some(3),
            ..Default::default()
        };
        let mut remaining = Vec::new();
        loop {
            let page = store.list("/cm/ns/", &opts).unwrap();
            assert_eq!(page.revision, 9, "{kind}");
            seen.extend(keys(&page.entries));
            remaining.push(page.remaining);
            assert_eq!(page.more, page.remaining > 0);
            if !page.more {
                break;
            }
            opts.start_after = page.entries.last().map(|e| e.key.to_string());
            opts.at_revision = Some(page.revision);
        }
        let all: Vec<String> = (0..7).map(|i| format!("/cm/ns/{i}")).collect();
        assert_eq!(seen, all, "{kind}");
        assert_eq!(remaining, vec![4, 1, 0], "{kind}");
        // No limit (or 0, as in Kubernetes) lists everything.
        for limit in [None, Some(0)] {
            let opts = ListOptions {
                limit,
                ..Default::default()
            };
            assert_eq!(store.list("/cm/", &opts).unwrap().entries.len(), 8);
        }
        // start_after before the prefix starts at the prefix.
        let opts = ListOptions {
            start_after: Some("/a".into()),
            limit: Some(1),
            ..Default::default()
        };
        assert_eq!(
            keys(&store.list("/cm/ns/", &opts).unwrap().entries),
            ["/cm/ns/0"]
        );
    }
}

#[tokio::test]
async fn list_at_a_past_revision_undoes_later_creates_updates_and_deletes() {
    let dir = tempfile::tempdir().unwrap();
    for (kind, store) in both_kinds(&dir) {
        for i in 0..6 {
            put(&store, &format!("/p/{i}"), "v1").await;
        }
        let first_page = store
            .list(
                "/p/",
                &ListOptions {
                    limit: Some(2),
                    ..Default::default()
                },
            )
            .unwrap();
        let snapshot = first_page.revision;
        assert_eq!(snapshot, 6);
        let before: Vec<Entry> = store.list("/p/", &ListOptions::default()).unwrap().entries;

        // Change everything after the snapshot, several times for some keys.
        put(&store, "/p/3", "v2").await;
        put(&store, "/p/3", "v3").await;
        delete(&store, "/p/4").await;
        put(&store, "/p/4", "recreated").await;
        delete(&store, "/p/5").await;
        put(&store, "/p/25", "created").await;
        put(&store, "/p/9", "created").await;
        delete(&store, "/p/0").await;
        store
            .transact(|txn| {
                txn.put("/p/1", Bytes::from_static(b"multi"));
                txn.put("/p/7", Bytes::from_static(b"multi"));
                Ok::<_, StoreError>(())
            })
            .await
            .unwrap();

        // The rest of the pages, at the snapshot revision.
        let mut paged = first_page.entries.clone();
        let mut opts = ListOptions {
            start_after: paged.last().map(|e| e.key.to_string()),
            limit: Some(2),
            at_revision: Some(snapshot),
        };
        let mut remaining = vec![first_page.remaining];
        loop {
            let page = store.list("/p/", &opts).unwrap();
            assert_eq!(page.revision, snapshot);
            remaining.push(page.remaining);
            paged.extend(page.entries.iter().cloned());
            if !page.more {
                break;
            }
            opts.start_after = page.entries.last().map(|e| e.key.to_string());
        }
        assert_eq!(
            paged, before,
            "{kind}: values and revisions as of the snapshot"
        );
        assert_eq!(remaining, vec![4, 2, 0], "{kind}");

        // In between: after the two updates of /p/3.
        let mid = store
            .list(
                "/p/",
                &ListOptions {
                    at_revision: Some(8),
                    ..Default::default()
                },
            )
            .unwrap();
        let p3 = mid.entries.iter().find(|e| &*e.key == "/p/3").unwrap();
        assert_eq!((text(&p3.value), p3.revision), ("v3@8".into(), 8), "{kind}");
        assert_eq!(mid.entries.len(), 6);

        // Current.
        let now = store.list("/p/", &ListOptions::default()).unwrap();
        assert_eq!(
            keys(&now.entries),
            ["/p/1", "/p/2", "/p/25", "/p/3", "/p/4", "/p/7", "/p/9"],
            "{kind}"
        );
    }
}

#[tokio::test]
async fn list_at_a_compacted_or_future_revision_fails() {
    let store = Store::open(StoreConfig {
        history_max_events: 3,
        ..StoreConfig::ephemeral()
    })
    .unwrap();
    for i in 0..10 {
        put(&store, &format!("/k/{i}"), "v").await;
    }
    let compacted = store.compacted_revision();
    assert_eq!(compacted, 7);
    let at = |revision| ListOptions {
        at_revision: Some(revision),
        ..Default::default()
    };
    assert!(matches!(
        store.list("/k/", &at(compacted - 1)),
        Err(StoreError::Compacted {
            requested: 6,
            compacted: 7
        })
    ));
    assert_eq!(store.list("/k/", &at(compacted)).unwrap().entries.len(), 7);
    assert!(matches!(
        store.list("/k/", &at(11)),
        Err(StoreError::FutureRevision {
            requested: 11,
            current: 10
        })
    ));
}
