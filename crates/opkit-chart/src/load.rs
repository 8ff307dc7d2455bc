//! Loading a chart from a directory the way Helm's `loader.LoadDir` and `LoadFiles` do: which
//! file goes where (`Chart.yaml`, `values.yaml`, `values.schema.json`, `templates/`, `charts/`,
//! everything else), so template names and `.Files` match Helm's.

use std::path::{Path, PathBuf};

use opkit_template::Value;

use crate::chart::{Chart, File, Metadata};

/// Why a chart could not be loaded; the texts follow Helm's.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// A file or directory could not be read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The path being read.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The chart has no `Chart.yaml`.
    #[error("Chart.yaml file is missing")]
    MissingChartYaml,
    /// `Chart.yaml` or `values.yaml` is not valid YAML of the right shape.
    #[error("cannot load {file}: {message}")]
    Parse {
        /// The chart file (`Chart.yaml`, `values.yaml`).
        file: String,
        /// The parser's message.
        message: String,
    },
    /// Something Helm supports that this loader does not do yet.
    #[error("{0} is not supported yet")]
    Unsupported(String),
}

impl Chart {
    /// Loads the chart in directory `dir`, with its subcharts under `charts/`.
    pub fn load(dir: &Path) -> Result<Chart, LoadError> {
        let mut files = Vec::new();
        read_tree(dir, dir, &mut files)?;
        files.sort_by(|a, b| a.name.cmp(&b.name));
        from_files(files)
    }
}

/// Every regular file under `dir`, named relative to `root` with `/`.
fn read_tree(root: &Path, dir: &Path, out: &mut Vec<File>) -> Result<(), LoadError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| LoadError::Io { path, source }
    };
    for entry in std::fs::read_dir(dir).map_err(io(dir))? {
        let entry = entry.map_err(io(dir))?;
        let path = entry.path();
        let meta = std::fs::metadata(&path).map_err(io(&path))?;
        if meta.is_dir() {
            read_tree(root, &path, out)?;
        } else {
            let rel = path.strip_prefix(root).unwrap_or(&path);
            let name = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy())
                .collect::<Vec<_>>()
                .join("/");
            let data = std::fs::read(&path).map_err(io(&path))?;
            out.push(File { name, data });
        }
    }
    Ok(())
}

/// Sorts loaded files into a chart, as Helm's `LoadFiles` does.
fn from_files(files: Vec<File>) -> Result<Chart, LoadError> {
    let mut metadata: Option<Metadata> = None;
    let mut chart = Chart {
        metadata: Metadata::default(),
        templates: Vec::new(),
        values: Value::map(Default::default()),
        schema: None,
        files: Vec::new(),
        dependencies: Vec::new(),
    };
    let mut subcharts: Vec<(String, Vec<File>)> = Vec::new();
    for f in files {
        match f.name.as_str() {
            "Chart.yaml" => {
                metadata = Some(
                    serde_yaml::from_slice(&f.data).map_err(|e| LoadError::Parse {
                        file: "Chart.yaml".into(),
                        message: e.to_string(),
                    })?,
                );
            }
            "values.yaml" => chart.values = parse_values(&f.data)?,
            "values.schema.json" => chart.schema = Some(f.data),
            "requirements.yaml" | "requirements.lock" => {
                return Err(LoadError::Unsupported(format!(
                    "{} (apiVersion v1 chart dependencies)",
                    f.name
                )));
            }
            name if name.starts_with("templates/") => chart.templates.push(f),
            name if name.starts_with("charts/") => {
                let rest = &name["charts/".len()..];
                let Some((sub, inner)) = rest.split_once('/') else {
                    if rest.ends_with(".tgz") || rest.ends_with(".tar.gz") {
                        return Err(LoadError::Unsupported(format!(
                            "the archived subchart {name}"
                        )));
                    }
                    // Helm ignores other files directly under charts/ (e.g. `.prov`).
                    continue;
                };
                let file = File {
                    name: inner.to_string(),
                    data: f.data,
                };
                match subcharts.iter_mut().find(|(n, _)| n == sub) {
                    Some((_, files)) => files.push(file),
                    None => subcharts.push((sub.to_string(), vec![file])),
                }
            }
            _ => chart.files.push(f),
        }
    }
    chart.metadata = metadata.ok_or(LoadError::MissingChartYaml)?;
    for (_, files) in subcharts {
        chart.dependencies.push(from_files(files)?);
    }
    Ok(chart)
}

/// Reads `values.yaml` as Helm does (YAML → JSON → Go values: numbers are `float64`).
fn parse_values(data: &[u8]) -> Result<Value, LoadError> {
    let err = |e: &dyn std::fmt::Display| LoadError::Parse {
        file: "values.yaml".into(),
        message: e.to_string(),
    };
    let json: serde_json::Value = serde_yaml::from_slice(data).map_err(|e| err(&e))?;
    Ok(match json {
        serde_json::Value::Null => Value::map(Default::default()),
        serde_json::Value::Object(_) => Value::from_json(&json),
        _ => return Err(err(&"the values are not a map")),
    })
}
