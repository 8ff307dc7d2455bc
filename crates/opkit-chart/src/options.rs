//! The user's values from the command line, combined as Helm's `cli/values.Options.MergeValues`
//! does: `-f` files merged in order, then `--set-json`, `--set`, `--set-string`, `--set-file` and
//! `--set-literal`, each kind in the order given, with Helm's error texts.

use std::path::Path;

use opkit_template::{Dict, Value};

use crate::strvals::{Mode, parse_into};
use crate::values::{as_table, merge_maps, read_values};

/// Helm's `values.Options`: where the user's values come from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ValueOptions {
    /// `-f/--values`: YAML files, merged in order (later files win).
    pub value_files: Vec<String>,
    /// `--set-string`: `key=value` pairs whose values stay strings.
    pub string_values: Vec<String>,
    /// `--set`: `key=value` pairs (`true`, `null`, int64s typed).
    pub values: Vec<String>,
    /// `--set-file`: `key=path` pairs whose values are the files' contents.
    pub file_values: Vec<String>,
    /// `--set-json`: `key=json` pairs, or whole JSON objects.
    pub json_values: Vec<String>,
    /// `--set-literal`: one `key=value` each, the value taken verbatim.
    pub literal_values: Vec<String>,
}

/// Why the user's values could not be read; the texts are Helm's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ValueOptionsError(pub String);

/// Reads a values file as Helm's `readFile` does for a local path, with Go's error text.
fn read_file(path: &str) -> Result<Vec<u8>, String> {
    if path.trim() == "-" {
        return Err("reading values from standard input (-) is not supported".into());
    }
    std::fs::read(Path::new(path)).map_err(|e| {
        // Go opens a directory and fails reading it.
        let op = if Path::new(path).is_dir() {
            "read"
        } else {
            "open"
        };
        go_io_error(op, path, &e)
    })
}

/// An I/O error as Go's `os` package prints it (`open x: no such file or directory`).
pub(crate) fn go_io_error(op: &str, path: &str, e: &std::io::Error) -> String {
    let msg = match e.kind() {
        std::io::ErrorKind::NotFound => "no such file or directory".to_string(),
        std::io::ErrorKind::PermissionDenied => "permission denied".to_string(),
        std::io::ErrorKind::IsADirectory => "is a directory".to_string(),
        _ => {
            let s = e.to_string();
            match s.find(" (os error") {
                Some(i) => s[..i].to_lowercase(),
                None => s,
            }
        }
    };
    format!("{op} {path}: {msg}")
}

impl ValueOptions {
    /// The user's values (Helm's `MergeValues`): a map, empty when nothing was given.
    pub fn merge_values(&self) -> Result<Value, ValueOptionsError> {
        let err = ValueOptionsError;
        let mut base = Value::map(Default::default());
        for path in &self.value_files {
            let raw = read_file(path).map_err(err)?;
            let current =
                read_values(&raw).map_err(|e| err(format!("failed to parse {path}: {e}")))?;
            base = merge_maps(&base, &current);
        }
        let dict = |v: &Value| -> Dict { as_table(v).cloned().unwrap_or_default() };
        for value in &self.json_values {
            let trimmed = value.trim();
            if trimmed.starts_with('{') {
                let map: serde_json::Map<String, serde_json::Value> = serde_json::from_str(trimmed)
                    .map_err(|_| err(format!("failed parsing --set-json data JSON: {value}")))?;
                base = merge_maps(&base, &Value::from_json(&serde_json::Value::Object(map)));
            } else {
                parse_into(value, &dict(&base), Mode::Json)
                    .map_err(|_| err(format!("failed parsing --set-json data {value}")))?;
            }
        }
        for value in &self.values {
            parse_into(value, &dict(&base), Mode::Typed { strings: false })
                .map_err(|e| err(format!("failed parsing --set data: {e}")))?;
        }
        for value in &self.string_values {
            parse_into(value, &dict(&base), Mode::Typed { strings: true })
                .map_err(|e| err(format!("failed parsing --set-string data: {e}")))?;
        }
        let read = |p: &str| -> Result<Value, String> {
            let data = read_file(p)?;
            Ok(Value::string(String::from_utf8_lossy(&data).into_owned()))
        };
        for value in &self.file_values {
            parse_into(value, &dict(&base), Mode::File(&read))
                .map_err(|e| err(format!("failed parsing --set-file data: {e}")))?;
        }
        for value in &self.literal_values {
            parse_into(value, &dict(&base), Mode::Literal)
                .map_err(|e| err(format!("failed parsing --set-literal data: {e}")))?;
        }
        Ok(base)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts() -> ValueOptions {
        ValueOptions::default()
    }

    #[test]
    fn nothing_given_is_an_empty_map() {
        assert_eq!(opts().merge_values().unwrap().to_string(), "map[]");
    }

    #[test]
    fn files_then_json_then_set_then_set_string_then_file_then_literal() {
        let dir = tempfile::tempdir().unwrap();
        let f1 = dir.path().join("a.yaml");
        let f2 = dir.path().join("b.yaml");
        let txt = dir.path().join("c.txt");
        std::fs::write(&f1, "a: 1\nm: {x: 1, w: 2}\n").unwrap();
        std::fs::write(&f2, "m: {w: 3}\n").unwrap();
        std::fs::write(&txt, "text").unwrap();
        let o = ValueOptions {
            value_files: vec![f1.display().to_string(), f2.display().to_string()],
            json_values: vec![r#"{"j": [1]}"#.into(), "k={\"z\":true}".into()],
            values: vec!["s=1,a=2".into()],
            string_values: vec!["s=1".into()],
            file_values: vec![format!("f={}", txt.display())],
            literal_values: vec!["l=a,b".into()],
        };
        let v = o.merge_values().unwrap();
        assert_eq!(
            v.to_string(),
            "map[a:2 f:text j:[1] k:map[z:true] l:a,b m:map[w:3 x:1] s:1]"
        );
        let Value::Map(d) = v else { unreachable!() };
        // --set-string came after --set: `s` is a string.
        assert!(matches!(d.get("s"), Some(Value::String(_))));
        assert!(matches!(d.get("a"), Some(Value::Int64(2))));
        assert!(d.get("x").is_none());
    }

    #[test]
    fn errors_name_the_flag_as_helm_does() {
        let e = |o: ValueOptions| o.merge_values().unwrap_err().to_string();
        assert_eq!(
            e(ValueOptions {
                values: vec!["x".into()],
                ..opts()
            }),
            r#"failed parsing --set data: key "x" has no value"#
        );
        assert_eq!(
            e(ValueOptions {
                json_values: vec!["{x".into()],
                ..opts()
            }),
            "failed parsing --set-json data JSON: {x"
        );
        assert_eq!(
            e(ValueOptions {
                json_values: vec!["a=tru".into()],
                ..opts()
            }),
            "failed parsing --set-json data a=tru"
        );
        assert_eq!(
            e(ValueOptions {
                value_files: vec!["/nonexistent/v.yaml".into()],
                ..opts()
            }),
            "open /nonexistent/v.yaml: no such file or directory"
        );
        assert_eq!(
            e(ValueOptions {
                file_values: vec!["a=/nonexistent/f".into()],
                ..opts()
            }),
            "failed parsing --set-file data: open /nonexistent/f: no such file or directory"
        );
    }
}
