//! Behaviour across processes: the file lock, and durability of acknowledged writes when the
//! process is killed with SIGKILL.
//!
//! The child is this same test binary, run with `--exact child_process` and an environment
//! variable saying what to do.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use bytes::Bytes;
use common::*;
use opkit_store::{Store, StoreConfig, StoreError};

const ROLE: &str = "OPKIT_STORE_TEST_CHILD";
const PATH: &str = "OPKIT_STORE_TEST_PATH";

fn spawn_child(role: &str, path: &Path) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_process",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(ROLE, role)
        .env(PATH, path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Not a test of its own: the body of the child processes of the other tests.
#[test]
fn child_process() {
    let (Ok(role), Ok(path)) = (std::env::var(ROLE), std::env::var(PATH)) else {
        return;
    };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async move {
        let store = Store::open(StoreConfig::persistent(&path)).unwrap();
        match role.as_str() {
            "hold" => {
                println!("opened");
                std::io::stdout().flush().unwrap();
                // Hold the store until killed.
                let mut line = String::new();
                let _ = std::io::stdin().read_line(&mut line);
            }
            "write" => {
                let tasks: Vec<_> = (0..16)
                    .map(|task| {
                        let store = store.clone();
                        tokio::spawn(async move {
                            for i in 0.. {
                                let key = format!("/crash/{task:02}/{i:06}");
                                let (_, revision) = store
                                    .transact(|txn| {
                                        txn.put(&key, Bytes::from(format!("{}", txn.revision())));
                                        Ok::<_, StoreError>(())
                                    })
                                    .await
                                    .unwrap();
                                let mut out = std::io::stdout().lock();
                                writeln!(out, "ack {key} {}", revision.unwrap()).unwrap();
                                out.flush().unwrap();
                            }
                        })
                    })
                    .collect();
                for task in tasks {
                    let _ = task.await;
                }
            }
            other => panic!("unknown role {other}"),
        }
    });
}

#[test]
fn open_while_another_process_holds_the_store_fails_with_locked() {
    let dir = tempfile::tempdir().unwrap();
    let path = db_path(&dir);
    let mut child = spawn_child("hold", &path);
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    assert!(
        // libtest may print "test child_process ... " on the same line.
        lines.any(|line| line.unwrap().ends_with("opened")),
        "child opened the store"
    );
    match Store::open(StoreConfig::persistent(&path)) {
        Err(StoreError::Locked { path: locked }) => assert_eq!(locked, path),
        other => panic!("expected Locked, got {other:?}"),
    }
    child.kill().unwrap();
    child.wait().unwrap();
    // The lock dies with the process.
    Store::open(StoreConfig::persistent(&path)).unwrap();
}

#[test]
fn acknowledged_writes_survive_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let path = db_path(&dir);
    let mut child = spawn_child("write", &path);
    let mut acked = Vec::new();
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        // libtest may print "test child_process ... " before the first ack on the same line.
        let Some(start) = line.find("ack ") else {
            continue;
        };
        let ack = &line[start + 4..];
        let (key, revision) = ack.split_once(' ').unwrap();
        acked.push((key.to_owned(), revision.parse::<u64>().unwrap()));
        if acked.len() == 2000 {
            // Child::kill sends SIGKILL: no destructor, no flush, mid-commit.
            child.kill().unwrap();
            break;
        }
    }
    child.wait().unwrap();
    assert_eq!(acked.len(), 2000);

    let store = open_at(&path);
    let max_acked = acked.iter().map(|(_, r)| *r).max().unwrap();
    assert!(store.current_revision() >= max_acked);
    for (key, revision) in &acked {
        let entry = store.get(key).unwrap_or_else(|| panic!("{key} lost"));
        assert_eq!(entry.revision, *revision);
        assert_eq!(text(&entry.value), revision.to_string());
    }
    // Revisions continue after the crash.
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let next = runtime.block_on(put(&store, "/after", "v"));
    assert!(next > max_acked);
}
