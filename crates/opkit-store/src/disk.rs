//! The durable copy in redb.
//!
//! Layout: table `objects` maps each live key to `(revision, value)`; table `meta` holds the
//! `format` version and the current `revision`. The revision is stored separately because a
//! transaction that only deletes leaves no object carrying its revision, yet revisions must keep
//! rising across restarts. The history is not persisted: after a restart, watches and paged lists
//! must start again from the revision at open, as with kube-apiserver's watch cache.
//!
//! Every commit uses `Durability::Immediate` (redb's checksummed single-fsync commit), and each
//! redb commit is atomic, so after a crash the file holds exactly a prefix of the acknowledged
//! group commits (plus possibly one group that was written but not yet acknowledged).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use redb::{Database, DatabaseError, Durability, ReadableTable, TableDefinition};

use crate::error::StoreError;
use crate::history::Record;
use crate::types::{Entry, EventKind};

const OBJECTS: TableDefinition<&str, (u64, &[u8])> = TableDefinition::new("objects");
const META: TableDefinition<&str, u64> = TableDefinition::new("meta");
const FORMAT_KEY: &str = "format";
const REVISION_KEY: &str = "revision";
const FORMAT_VERSION: u64 = 1;

/// The open database. Owned by the writer thread once the store runs.
pub(crate) struct Disk {
    db: Database,
    path: PathBuf,
}

/// Everything read at open.
pub(crate) struct Loaded {
    pub(crate) objects: BTreeMap<Arc<str>, Entry>,
    pub(crate) revision: u64,
}

impl Disk {
    /// Opens or creates the database and reads all live objects.
    pub(crate) fn open(path: &Path) -> Result<(Disk, Loaded), StoreError> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|source| StoreError::Io {
                path: parent.to_path_buf(),
                source,
            })?;
        }
        let db = Database::builder().create(path).map_err(|err| match err {
            DatabaseError::DatabaseAlreadyOpen => StoreError::Locked {
                path: path.to_path_buf(),
            },
            other => StoreError::from_redb(other),
        })?;
        let loaded = load(&db)?;
        Ok((
            Disk {
                db,
                path: path.to_path_buf(),
            },
            loaded,
        ))
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Writes the transactions of one group commit, in one redb transaction, and returns once
    /// it is durable. `transactions` are `(revision, changes)` in revision order.
    pub(crate) fn commit<'a>(
        &mut self,
        transactions: impl Iterator<Item = (u64, &'a [Record])>,
    ) -> Result<(), StoreError> {
        let mut tx = self.db.begin_write().map_err(StoreError::from_redb)?;
        tx.set_durability(Durability::Immediate)
            .map_err(StoreError::from_redb)?;
        {
            let mut objects = tx.open_table(OBJECTS).map_err(StoreError::from_redb)?;
            let mut last = None;
            for (revision, records) in transactions {
                for record in records {
                    let event = &record.event;
                    match event.kind {
                        EventKind::Put => {
                            objects
                                .insert(&*event.key, (revision, &event.value[..]))
                                .map_err(StoreError::from_redb)?;
                        }
                        EventKind::Delete => {
                            objects.remove(&*event.key).map_err(StoreError::from_redb)?;
                        }
                    }
                }
                last = Some(revision);
            }
            if let Some(revision) = last {
                let mut meta = tx.open_table(META).map_err(StoreError::from_redb)?;
                meta.insert(REVISION_KEY, revision)
                    .map_err(StoreError::from_redb)?;
            }
        }
        tx.commit().map_err(StoreError::from_redb)
    }
}

/// Reads the whole database in one write transaction, which also creates the tables and the
/// format marker of a new database.
fn load(db: &Database) -> Result<Loaded, StoreError> {
    let tx = db.begin_write().map_err(StoreError::from_redb)?;
    let loaded = {
        let mut meta = tx.open_table(META).map_err(StoreError::from_redb)?;
        let format = meta
            .get(FORMAT_KEY)
            .map_err(StoreError::from_redb)?
            .map(|guard| guard.value());
        match format {
            None => {
                meta.insert(FORMAT_KEY, FORMAT_VERSION)
                    .map_err(StoreError::from_redb)?;
            }
            Some(FORMAT_VERSION) => {}
            Some(other) => {
                return Err(StoreError::Corrupt(format!(
                    "unsupported store format {other} (this build reads format {FORMAT_VERSION})"
                )));
            }
        }
        let mut revision = meta
            .get(REVISION_KEY)
            .map_err(StoreError::from_redb)?
            .map_or(0, |guard| guard.value());
        let table = tx.open_table(OBJECTS).map_err(StoreError::from_redb)?;
        let mut objects = BTreeMap::new();
        for row in table.iter().map_err(StoreError::from_redb)? {
            let (key, value) = row.map_err(StoreError::from_redb)?;
            let key: Arc<str> = Arc::from(key.value());
            let (object_revision, bytes) = value.value();
            if object_revision > revision {
                // Cannot happen with atomic commits; keep revisions unique regardless.
                tracing::warn!(
                    key = &*key,
                    object_revision,
                    revision,
                    "object newer than the stored revision"
                );
                revision = object_revision;
            }
            objects.insert(
                key.clone(),
                Entry {
                    key,
                    value: Bytes::copy_from_slice(bytes),
                    revision: object_revision,
                },
            );
        }
        Loaded { objects, revision }
    };
    tx.commit().map_err(StoreError::from_redb)?;
    Ok(loaded)
}
