//! Reading a file-based catalog: every `.yaml`, `.yml` and `.json` file under a directory
//! (recursively, in path order), every document of each, sorted by `schema` into the typed
//! documents; documents of other schemas are kept whole.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{Catalog, Meta, SCHEMA_BUNDLE, SCHEMA_CHANNEL, SCHEMA_DEPRECATIONS, SCHEMA_PACKAGE};
use crate::documents::{self, DocumentError};

/// Why a catalog could not be read.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// A file could not be read or parsed.
    #[error(transparent)]
    Document(#[from] DocumentError),
    /// A document is not an object with a `schema`.
    #[error("{}: document {index}: no `schema` (every catalog document has one)", path.display())]
    NoSchema {
        /// The file.
        path: PathBuf,
        /// The document, from 1.
        index: usize,
    },
    /// A document of a known schema has the wrong shape.
    #[error("{}: document {index} ({schema}): {message}", path.display())]
    Shape {
        /// The file.
        path: PathBuf,
        /// The document, from 1.
        index: usize,
        /// Its schema.
        schema: String,
        /// The field and what is wrong.
        message: String,
    },
}

/// Reads the catalog under `dir`.
pub fn load_dir(dir: &Path) -> Result<Catalog, LoadError> {
    let mut catalog = Catalog::default();
    for (path, docs) in read_dir_documents(dir)? {
        add_documents(&mut catalog, docs, &path)?;
    }
    Ok(catalog)
}

/// Every document of every catalog file under `dir`, files in path order.
pub(crate) fn read_dir_documents(dir: &Path) -> Result<Vec<(PathBuf, Vec<Value>)>, LoadError> {
    let mut files = Vec::new();
    collect_files(dir, &mut files)?;
    files.sort();
    files
        .into_iter()
        .map(|path| Ok((path.clone(), documents::read_documents(&path)?)))
        .collect()
}

/// Every document of every catalog file of `files` (contents by path relative to the catalog's
/// root, as an image unpacks them), in the path order [`read_dir_documents`] uses, so a catalog
/// served from an image answers byte for byte what its source directory answers.
pub(crate) fn files_documents(
    files: &std::collections::BTreeMap<String, Vec<u8>>,
) -> Result<Vec<(PathBuf, Vec<Value>)>, LoadError> {
    let mut paths: Vec<PathBuf> = files
        .keys()
        .map(PathBuf::from)
        .filter(|p| is_catalog_file(p))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|path| {
            let bytes = &files[path.to_str().unwrap_or_default()];
            let text = std::str::from_utf8(bytes).map_err(|e| DocumentError::Read {
                path: path.clone(),
                source: std::io::Error::new(std::io::ErrorKind::InvalidData, e),
            })?;
            let docs = documents::parse_documents(text).map_err(|(index, message)| {
                DocumentError::Parse {
                    path: path.clone(),
                    index,
                    message,
                }
            })?;
            Ok((path, docs))
        })
        .collect()
}

/// Reads catalog documents from YAML or JSON text (`origin` names it in errors).
pub fn parse_documents(text: &str, origin: &Path) -> Result<Catalog, LoadError> {
    let docs =
        documents::parse_documents(text).map_err(|(index, message)| DocumentError::Parse {
            path: origin.to_path_buf(),
            index,
            message,
        })?;
    let mut catalog = Catalog::default();
    add_documents(&mut catalog, docs, origin)?;
    Ok(catalog)
}

/// Sorts `docs` into `catalog` by schema.
pub(crate) fn add_documents(
    catalog: &mut Catalog,
    docs: Vec<Value>,
    path: &Path,
) -> Result<(), LoadError> {
    for (i, doc) in docs.into_iter().enumerate() {
        let index = i + 1;
        let schema = match doc.get("schema").and_then(Value::as_str) {
            Some(s) if !s.is_empty() => s.to_string(),
            _ => {
                return Err(LoadError::NoSchema {
                    path: path.to_path_buf(),
                    index,
                });
            }
        };
        let shape = |message| LoadError::Shape {
            path: path.to_path_buf(),
            index,
            schema: schema.clone(),
            message,
        };
        match schema.as_str() {
            SCHEMA_PACKAGE => catalog
                .packages
                .push(documents::decode(&doc).map_err(shape)?),
            SCHEMA_CHANNEL => catalog
                .channels
                .push(documents::decode(&doc).map_err(shape)?),
            SCHEMA_BUNDLE => catalog
                .bundles
                .push(documents::decode(&doc).map_err(shape)?),
            SCHEMA_DEPRECATIONS => catalog
                .deprecations
                .push(documents::decode(&doc).map_err(shape)?),
            _ => {
                let package = doc["package"].as_str().unwrap_or_default().to_string();
                catalog.others.push(Meta {
                    schema,
                    package,
                    blob: doc,
                });
            }
        }
    }
    Ok(())
}

fn collect_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), LoadError> {
    let read = |source| DocumentError::Read {
        path: dir.to_path_buf(),
        source,
    };
    for entry in std::fs::read_dir(dir).map_err(read)? {
        let entry = entry.map_err(read)?;
        let path = entry.path();
        if entry.file_type().map_err(read)?.is_dir() {
            collect_files(&path, out)?;
        } else if is_catalog_file(&path) {
            out.push(path);
        }
    }
    Ok(())
}

/// A `.yaml`, `.yml` or `.json` file: the files a catalog's documents are read from.
fn is_catalog_file(path: &Path) -> bool {
    matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("yaml" | "yml" | "json")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_documents_of_unknown_schemas() {
        let text = "schema: olm.package\nname: foo\ndefaultChannel: beta\n---\nschema: my.thing\npackage: foo\nx: 1\n";
        let c = parse_documents(text, Path::new("t.yaml")).unwrap();
        assert_eq!(c.packages[0].default_channel, "beta");
        assert_eq!(c.others[0].schema, "my.thing");
        assert_eq!(c.others[0].blob["x"], 1);
    }

    #[test]
    fn refuses_a_document_without_schema() {
        let err = parse_documents("name: foo\n", Path::new("t.yaml")).unwrap_err();
        assert!(err.to_string().contains("no `schema`"), "{err}");
    }

    #[test]
    fn names_the_field_of_the_wrong_type() {
        let err = parse_documents(
            "schema: olm.channel\nname: a\nentries: 3\n",
            Path::new("t.yaml"),
        )
        .unwrap_err();
        assert!(err.to_string().contains("entries"), "{err}");
    }
}
