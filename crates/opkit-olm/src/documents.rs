//! Reading YAML and JSON files into JSON values, the way OLM's Go tools do (YAML converted to
//! JSON, one value per document). Every reader in the crate goes through here, so a parse error
//! always names the file and the document.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

/// A file that could not be read or parsed.
#[derive(Debug, thiserror::Error)]
pub enum DocumentError {
    /// The file could not be read.
    #[error("{}: cannot read: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A document of the file is not valid YAML (or JSON).
    #[error("{}: document {index}: {message}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// The document's position in the file, from 1.
        index: usize,
        /// The parser's message.
        message: String,
    },
}

/// The non-empty documents of a YAML (or JSON, which is YAML) file, as JSON values.
pub(crate) fn read_documents(path: &Path) -> Result<Vec<Value>, DocumentError> {
    let text = std::fs::read_to_string(path).map_err(|source| DocumentError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    parse_documents(&text).map_err(|(index, message)| DocumentError::Parse {
        path: path.to_path_buf(),
        index,
        message,
    })
}

/// The non-empty documents of YAML text, or of a stream of JSON objects; on error, the
/// document's position (from 1) and why.
pub(crate) fn parse_documents(text: &str) -> Result<Vec<Value>, (usize, String)> {
    // A stream of JSON objects (opm's `-o json`, catalogd's `/api/v1/all`) is not one YAML
    // stream; text that is entirely such a stream is read as JSON, anything else as YAML.
    if text.trim_start().starts_with('{')
        && let Ok(docs) = serde_json::Deserializer::from_str(text)
            .into_iter::<Value>()
            .collect::<Result<Vec<Value>, _>>()
    {
        return Ok(docs);
    }
    let mut out = Vec::new();
    for (i, doc) in serde_yaml::Deserializer::from_str(text).enumerate() {
        let value = match Value::deserialize(doc) {
            Ok(v) => v,
            // YAML 1.1's "value" tag (`=`), which Go's reader takes as the string "=".
            Err(e) if e.to_string().contains("tag:yaml.org,2002:value") => {
                return Err((
                    i + 1,
                    format!("{e} (YAML 1.1 `=` values are not supported)"),
                ));
            }
            Err(e) => return Err((i + 1, e.to_string())),
        };
        if !value.is_null() {
            out.push(value);
        }
    }
    Ok(out)
}

/// The one document of a YAML file (an empty file is `null`).
pub(crate) fn read_single(path: &Path) -> Result<Value, DocumentError> {
    Ok(read_documents(path)?
        .into_iter()
        .next()
        .unwrap_or(Value::Null))
}

/// Decodes `value` into `T`; on error, the JSON path of the offending field and why.
pub(crate) fn decode<T: serde::de::DeserializeOwned>(value: &Value) -> Result<T, String> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        if path == "." {
            e.into_inner().to_string()
        } else {
            format!("{path}: {}", e.into_inner())
        }
    })
}

/// The files of `dir` (not recursive), sorted by name, as Go's `os.ReadDir` lists them.
pub(crate) fn files_in(dir: &Path) -> Result<Vec<PathBuf>, DocumentError> {
    let read = |source| DocumentError::Read {
        path: dir.to_path_buf(),
        source,
    };
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(read)? {
        let entry = entry.map_err(read)?;
        if entry.file_type().map_err(read)?.is_file() {
            files.push(entry.path());
        }
    }
    files.sort();
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_every_non_empty_document() {
        let docs = parse_documents("a: 1\n---\n---\nb: [x]\n").unwrap();
        assert_eq!(
            docs,
            vec![serde_json::json!({"a": 1}), serde_json::json!({"b": ["x"]})]
        );
    }

    #[test]
    fn reads_a_stream_of_json_objects() {
        let docs = parse_documents("{\"a\": 1}\n{\"b\": [\"x\"]}\n").unwrap();
        assert_eq!(
            docs,
            vec![serde_json::json!({"a": 1}), serde_json::json!({"b": ["x"]})]
        );
        // A YAML stream of flow mappings is still YAML.
        assert_eq!(parse_documents("{a: 1}\n---\n{b: 2}\n").unwrap().len(), 2);
    }

    #[test]
    fn a_bare_equals_sign_is_a_string_as_in_go() {
        // prometheus 0.56.3's alertmanagerconfigs CRD has `- =` in an enum (YAML 1.1's `=`).
        let docs = parse_documents("enum:\n- '!='\n- =\n- =~\n").unwrap();
        assert_eq!(docs[0]["enum"], serde_json::json!(["!=", "=", "=~"]));
    }

    #[test]
    fn names_the_broken_document() {
        let (index, _) = parse_documents("a: 1\n---\nb: [\n").unwrap_err();
        assert_eq!(index, 2);
    }
}
