//! Group-commit throughput: durable commits per second for 1 and for 64 concurrent writers.
//!
//! Each transaction reads a key (as a compare-and-swap update would), then puts a ~1 KiB value
//! embedding its revision, and counts once `transact` has returned, i.e. once it is fsync'd.
//!
//! ```text
//! cargo run --release -p opkit-store --example commit_bench -- [DIR] [SECONDS]
//! ```
//!
//! DIR (default: the system temporary directory) must be on the disk to measure, not a tmpfs.

use std::error::Error;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use opkit_store::{Store, StoreConfig, StoreError};

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let mut args = std::env::args().skip(1);
    let dir = args.next().map_or_else(std::env::temp_dir, PathBuf::from);
    let seconds: u64 = args.next().map_or(Ok(3), |s| s.parse())?;
    let tmp = tempfile::tempdir_in(&dir)?;
    println!("store in {} ({} s per run)", tmp.path().display(), seconds);
    for writers in [1, 64] {
        let store = Store::open(StoreConfig::persistent(
            tmp.path().join(format!("w{writers}.redb")),
        ))?;
        let (commits, elapsed) = run(&store, writers, Duration::from_secs(seconds)).await?;
        let groups = store.stats().group_commits;
        println!(
            "{writers:>3} writer(s): {commits} commits in {:.2} s = {:.0} commits/s ({groups} fsync'd group commits, {:.1} transactions each)",
            elapsed.as_secs_f64(),
            commits as f64 / elapsed.as_secs_f64(),
            commits as f64 / groups.max(1) as f64,
        );
    }
    let store = Store::open(StoreConfig::ephemeral())?;
    let (commits, elapsed) = run(&store, 64, Duration::from_secs(1)).await?;
    println!(
        " 64 writer(s), ephemeral: {:.0} commits/s",
        commits as f64 / elapsed.as_secs_f64()
    );
    Ok(())
}

async fn run(
    store: &Store,
    writers: usize,
    duration: Duration,
) -> Result<(u64, Duration), StoreError> {
    let commits = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let deadline = start + duration;
    let tasks: Vec<_> = (0..writers)
        .map(|writer| {
            let store = store.clone();
            let commits = commits.clone();
            tokio::spawn(async move {
                let mut i = 0u64;
                while Instant::now() < deadline {
                    let key = format!("/registry/configmaps/bench/w{writer}-{}", i % 100);
                    store
                        .transact(|txn| {
                            let _current = txn.get(&key);
                            let mut value = format!(
                                "{{\"metadata\":{{\"name\":\"{key}\",\"resourceVersion\":\"{}\"}},\"data\":\"",
                                txn.revision()
                            );
                            value.extend(std::iter::repeat_n('x', 1000));
                            value.push_str("\"}");
                            txn.put(&key, Bytes::from(value));
                            Ok::<_, StoreError>(())
                        })
                        .await?;
                    commits.fetch_add(1, Ordering::Relaxed);
                    i += 1;
                }
                Ok::<_, StoreError>(())
            })
        })
        .collect();
    for task in tasks {
        task.await.map_err(|_| StoreError::Closed)??;
    }
    Ok((commits.load(Ordering::Relaxed), start.elapsed()))
}
