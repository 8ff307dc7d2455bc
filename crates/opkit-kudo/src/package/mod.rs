//! KUDO packages: the files of an operator (`operator.yaml`, `params.yaml`, `templates/`)
//! read from a directory or a `.tgz`, turned into the [`Operator`] and [`OperatorVersion`]
//! an install creates, written back as a `.tgz`, and checked ([`verify`]).
//!
//! The file rules, the conversion and the messages are KUDO 0.19's (`pkg/kudoctl/packages`),
//! so a package KUDO accepts loads here and one it refuses is refused with the same words.

mod archive;
mod convert;
pub mod edit;
pub mod verify;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::api::{Maintainer, ParameterType, Plan, Task};
use crate::{Operator, OperatorVersion};

pub use archive::{archive_name, write_tgz};
pub(crate) use convert::wrap as wrap_value;
pub use verify::{Verification, verify};

/// `apiVersion` of `operator.yaml` and `params.yaml` (the default when absent).
pub const PACKAGE_API_VERSION: &str = "kudo.dev/v1beta1";
/// The operator file's name, at the package's root.
pub const OPERATOR_FILE: &str = "operator.yaml";
/// The parameters file's name, at the package's root.
pub const PARAMS_FILE: &str = "params.yaml";

/// Why a package cannot be read, converted or written.
#[derive(Debug, thiserror::Error)]
pub enum PackageError {
    /// A file or directory could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// The path is neither a package directory nor a `.tgz`.
    #[error("{0} is not a valid local package path (a directory or a .tgz file)")]
    NotAPackage(PathBuf),
    /// `operator.yaml` does not parse.
    #[error("failed to unmarshal operator file: {0}")]
    OperatorFile(String),
    /// `params.yaml` does not parse.
    #[error("failed to unmarshal parameters file: {path}: {message}")]
    ParamsFile {
        /// The file, relative to the package.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// `operator.yaml` is missing.
    #[error("operator package missing operator.yaml in {0}")]
    MissingOperator(String),
    /// `params.yaml` is missing.
    #[error("operator package missing params.yaml in {0}")]
    MissingParams(String),
    /// Tasks name templates that do not exist or miss required settings (one line each).
    #[error("{}", .0.join("\n"))]
    Tasks(Vec<String>),
    /// A parameter's default (or enum value) cannot be stored as text.
    #[error("failed to convert {kind} {what} for parameter '{name}': {message}")]
    Parameter {
        /// The parameter's type.
        kind: ParameterType,
        /// `default` or `enum value '<v>'`.
        what: String,
        /// The parameter.
        name: String,
        /// What is wrong.
        message: String,
    },
    /// The `.tgz` is not a gzip'd tar.
    #[error("while reading package tarball {path}: {message}")]
    Archive {
        /// The archive.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// `package add` refused an entry or could not edit a file.
    #[error("{0}")]
    Edit(String),
    /// The target archive exists and `overwrite` was not asked for.
    #[error("target file {0} exists. Remove or use --overwrite")]
    TargetExists(PathBuf),
}

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> PackageError + '_ {
    move |source| PackageError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// `operator.yaml`.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct OperatorFile {
    /// Always `kudo.dev/v1beta1`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// The operator's name.
    #[serde(default)]
    pub name: String,
    /// What it runs.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// The package's version.
    #[serde(default)]
    pub operator_version: String,
    /// The application's version.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub app_version: String,
    /// The KUDO version needed.
    #[serde(
        default,
        rename = "kudoVersion",
        skip_serializing_if = "String::is_empty"
    )]
    pub kudo_version: String,
    /// The Kubernetes version needed.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kubernetes_version: String,
    /// Who maintains it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub maintainers: Vec<Maintainer>,
    /// Its home page.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub url: String,
    /// The tasks.
    #[serde(default)]
    pub tasks: Vec<Task>,
    /// The plans.
    #[serde(default)]
    pub plans: BTreeMap<String, Plan>,
    /// The template rendering the namespace of `--create-namespace`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace_manifest: String,
}

/// `params.yaml`.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ParamsFile {
    /// Always `kudo.dev/v1beta1`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// Parameter groups (for UIs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<ParamGroup>,
    /// The parameters.
    #[serde(default)]
    pub parameters: Vec<PackageParameter>,
}

/// A parameter group of `params.yaml`.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ParamGroup {
    /// The group's name.
    #[serde(default)]
    pub name: String,
    /// A human-friendly name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub display_name: String,
    /// What it groups.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// Its order.
    #[serde(default, rename = "prio", skip_serializing_if = "Option::is_none")]
    pub priority: Option<i64>,
}

/// A parameter as `params.yaml` writes it: the default and enum values are any YAML.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PackageParameter {
    /// A human-friendly name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub display_name: String,
    /// The name.
    #[serde(default)]
    pub name: String,
    /// What it does.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// Whether a value must be given (true when absent, as KUDO's reader sets it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<bool>,
    /// The default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<serde_yaml::Value>,
    /// The plan a change runs.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub trigger: String,
    /// The type (`string` when absent).
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub value_type: Option<ParameterType>,
    /// Whether it may change after install (false when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub immutable: Option<bool>,
    /// The values allowed.
    #[serde(default, rename = "enum", skip_serializing_if = "Option::is_none")]
    pub enum_values: Option<Vec<serde_yaml::Value>>,
    /// The group (for UIs).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub group: String,
    /// Whether UIs hide it by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub advanced: Option<bool>,
    /// A hint for UIs.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub hint: String,
}

impl PackageParameter {
    /// The declared type (`string` when absent).
    pub fn kind(&self) -> ParameterType {
        self.value_type.unwrap_or_default()
    }
}

/// The files of a package, parsed.
#[derive(Clone, Debug, PartialEq)]
pub struct PackageFiles {
    /// `operator.yaml`.
    pub operator: OperatorFile,
    /// `params.yaml`, with KUDO's defaults (`required: true`, `immutable: false`) written in.
    pub params: ParamsFile,
    /// Template name (relative to `templates/`) → text.
    pub templates: BTreeMap<String, String>,
}

/// A package converted to the objects an install creates (names set, no namespace).
#[derive(Clone, Debug)]
pub struct Package {
    /// The files it came from.
    pub files: PackageFiles,
    /// The [`Operator`].
    pub operator: Operator,
    /// The [`OperatorVersion`] (named by [`crate::api::operator_version_name`]).
    pub operator_version: OperatorVersion,
}

impl Package {
    /// The operator's name.
    pub fn name(&self) -> &str {
        &self.files.operator.name
    }

    /// The package's version.
    pub fn version(&self) -> &str {
        &self.files.operator.operator_version
    }

    /// The application's version.
    pub fn app_version(&self) -> &str {
        &self.files.operator.app_version
    }
}

/// Reads the package at `path`: a directory, or a `.tgz` as `package create` writes it.
pub fn read(path: &Path) -> Result<PackageFiles, PackageError> {
    let meta = std::fs::metadata(path).map_err(io_error(path))?;
    if meta.is_dir() {
        read_dir(path)
    } else if meta.is_file() && path.to_string_lossy().ends_with(".tgz") {
        archive::read_tgz(path)
    } else {
        Err(PackageError::NotAPackage(path.to_path_buf()))
    }
}

/// Reads a `.tgz` package from its bytes (downloaded from a repository); `source` (its URL)
/// names it in errors.
pub fn read_archive(source: &str, bytes: &[u8]) -> Result<PackageFiles, PackageError> {
    archive::read_tgz_bytes(Path::new(source), bytes)
}

/// Reads and converts the package at `path` (see [`read`] and [`PackageFiles::convert`]).
pub fn load(path: &Path) -> Result<Package, PackageError> {
    read(path)?.convert()
}

/// Reads a package directory: every regular file under it, by its path relative to `dir`.
pub fn read_dir(dir: &Path) -> Result<PackageFiles, PackageError> {
    let files = walk(dir)?.into_iter().map(|f| (f.path, f.contents));
    PackageFiles::parse(&dir.display().to_string(), files)
}

/// A regular file of a package directory.
struct DirFile {
    /// Relative to the package root, `/`-separated.
    path: String,
    /// Permission bits.
    mode: u32,
    contents: Vec<u8>,
}

/// Every regular file under `root` (symbolic links followed), in name order.
fn walk(root: &Path) -> Result<Vec<DirFile>, PackageError> {
    let mut out = Vec::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let mut entries: Vec<_> = std::fs::read_dir(&dir)
            .map_err(io_error(&dir))?
            .collect::<Result<_, _>>()
            .map_err(io_error(&dir))?;
        entries.sort_by_key(|e| std::cmp::Reverse(e.file_name()));
        for entry in entries {
            let path = entry.path();
            let meta = std::fs::metadata(&path).map_err(io_error(&path))?;
            if meta.is_dir() {
                pending.push(path);
            } else if meta.is_file() {
                let contents = std::fs::read(&path).map_err(io_error(&path))?;
                let rel = path.strip_prefix(root).unwrap_or(&path);
                out.push(DirFile {
                    path: rel.to_string_lossy().replace('\\', "/"),
                    mode: mode_of(&meta),
                    contents,
                });
            }
        }
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(out)
}

#[cfg(unix)]
fn mode_of(meta: &std::fs::Metadata) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    meta.permissions().mode() & 0o7777
}

#[cfg(not(unix))]
fn mode_of(_: &std::fs::Metadata) -> u32 {
    0o644
}

impl PackageFiles {
    /// Parses a package's files (path relative to the package root → contents) with KUDO's
    /// rules: `operator.yaml` and `params.yaml` at the root, templates any `*.yaml` under
    /// `templates/` (named by the path after `templates/`), everything else ignored.
    /// `origin` names the package in messages.
    pub fn parse(
        origin: &str,
        files: impl IntoIterator<Item = (String, Vec<u8>)>,
    ) -> Result<PackageFiles, PackageError> {
        let mut operator = None;
        let mut params = None;
        let mut templates = BTreeMap::new();
        for (path, bytes) in files {
            let path = clean(&path);
            let text = String::from_utf8_lossy(&bytes);
            if path == OPERATOR_FILE {
                operator = Some(parse_operator(&text)?);
            } else if path == PARAMS_FILE {
                params = Some(parse_params(&path, &text)?);
            } else if let Some(name) = template_name(&path) {
                templates.insert(name, text.into_owned());
            }
        }
        let operator = operator.ok_or_else(|| PackageError::MissingOperator(origin.into()))?;
        let params = params.ok_or_else(|| PackageError::MissingParams(origin.into()))?;
        Ok(PackageFiles {
            operator,
            params,
            templates,
        })
    }

    /// KUDO's `FilesToResources`: checks every task's templates exist, then builds the
    /// [`Operator`] and [`OperatorVersion`] (defaults and enum values stored as text).
    pub fn convert(self) -> Result<Package, PackageError> {
        convert::to_package(self)
    }
}

fn clean(path: &str) -> String {
    let parts: Vec<&str> = path
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    parts.join("/")
}

fn template_name(path: &str) -> Option<String> {
    if !path.starts_with("templates") {
        return None;
    }
    let file = path.rsplit('/').next().unwrap_or(path);
    // KUDO matches the file name against the unanchored pattern `.*\.yaml`.
    if !path.contains('/') || !file.contains(".yaml") {
        return None;
    }
    Some(path.rsplit("templates/").next().unwrap_or(path).to_string())
}

fn check_api_version(v: &mut String) -> Result<(), String> {
    if v.is_empty() {
        *v = PACKAGE_API_VERSION.to_string();
    }
    if v != PACKAGE_API_VERSION {
        return Err(format!(
            "expecting supported API version {PACKAGE_API_VERSION} but got {v}"
        ));
    }
    Ok(())
}

fn parse_operator(text: &str) -> Result<OperatorFile, PackageError> {
    let mut op: OperatorFile =
        serde_yaml::from_str(text).map_err(|e| PackageError::OperatorFile(e.to_string()))?;
    check_api_version(&mut op.api_version).map_err(PackageError::OperatorFile)?;
    Ok(op)
}

fn parse_params(path: &str, text: &str) -> Result<ParamsFile, PackageError> {
    let error = |message: String| PackageError::ParamsFile {
        path: path.to_string(),
        message,
    };
    let mut params: ParamsFile = serde_yaml::from_str(text).map_err(|e| error(e.to_string()))?;
    check_api_version(&mut params.api_version).map_err(error)?;
    for p in &mut params.parameters {
        p.required.get_or_insert(true);
        p.immutable.get_or_insert(false);
    }
    Ok(params)
}

#[cfg(test)]
mod tests;
