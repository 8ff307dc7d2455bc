//! The storage layer of opkit's control plane: what etcd is to kube-apiserver.
//!
//! A [`Store`] keeps every live object in memory (a sorted map, so `get` and prefix `list` never
//! touch the disk) and a durable copy in [redb](https://docs.rs/redb). Every write goes through
//! [`Store::transact`], which serializes writers, gives all the writes of one transaction one new
//! revision from a single, monotonically increasing counter (Kubernetes' `resourceVersion`), and
//! returns only once the writes are durable. Concurrent transactions share fsyncs: one writer
//! thread commits everything pending in one redb transaction ("group commit"), so throughput
//! grows with concurrency instead of being capped by the disk's fsync rate.
//!
//! Committed changes also go into a bounded, in-memory history of events, which serves watches
//! from a past revision ([`Store::watch`]), paged lists at a fixed revision ([`ListOptions`]),
//! and the fan-out to live watchers. Trimming the history only raises
//! [`Store::compacted_revision`]; live objects are never affected by it.
//!
//! With [`StoreConfig::path`] `None` the store is ephemeral: the same semantics, no disk.
//!
//! Module map, in the order a write flows through them: [`txn`](Txn) (the closure's view and
//! staged writes) → `commit` (staging, group commit) → `disk` (redb) → `state` and `history`
//! (in-memory, published) → `watch` (fan-out) and `list` (reads).

#![warn(missing_docs)]

mod commit;
mod config;
mod disk;
mod error;
mod history;
mod list;
mod state;
mod store;
mod sync;
mod txn;
mod types;
mod watch;

pub use config::{Clock, StoreConfig};
pub use error::StoreError;
pub use list::{ListOptions, ListResult};
pub use store::{Store, StoreStats};
pub use txn::Txn;
pub use types::{Entry, Event, EventKind};
pub use watch::Watcher;
