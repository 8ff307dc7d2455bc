//! operator-sdk's `watches.yaml`, the file the generic operators (charts, Ansible playbooks)
//! run from: reading it, its list of entries and the errors it gives. What an entry holds and
//! how it is checked is each operator's own.

use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;

/// Why `watches.yaml` cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum WatchesError {
    /// The file cannot be read.
    #[error("could not open watches file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The file is not a list of watches.
    #[error("{path}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The YAML error, with its path in the document.
        message: String,
    },
    /// An entry is invalid.
    #[error("{path}: watch {index} ({gvk}): {field}: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// The entry's position in the list (from 0).
        index: usize,
        /// The entry's group/version/kind as written.
        gvk: String,
        /// The field at fault.
        field: &'static str,
        /// What is wrong.
        message: String,
    },
    /// The file lists no watches.
    #[error("{path}: no watches: list at least one group/version/kind and {needs}")]
    Empty {
        /// The file.
        path: PathBuf,
        /// What an entry names besides its kind (`its chart`).
        needs: &'static str,
    },
}

/// The text of the watches file at `path`.
pub fn read(path: &Path) -> Result<String, WatchesError> {
    std::fs::read_to_string(path).map_err(|source| WatchesError::Read {
        path: path.to_path_buf(),
        source,
    })
}

/// The entries of `text`, the contents of the file `path`: a YAML list of at least one entry
/// (`needs` says what an entry names besides its kind, for the error of an empty list).
/// A parse error names where in the document it is.
pub fn entries<T: DeserializeOwned>(
    text: &str,
    path: &Path,
    needs: &'static str,
) -> Result<Vec<T>, WatchesError> {
    let de = serde_yaml::Deserializer::from_str(text);
    let entries: Vec<T> =
        serde_path_to_error::deserialize(de).map_err(|e| WatchesError::Parse {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
    if entries.is_empty() {
        return Err(WatchesError::Empty {
            path: path.to_path_buf(),
            needs,
        });
    }
    Ok(entries)
}
