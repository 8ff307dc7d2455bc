//! Package repositories as `kubectl kudo repo` keeps them: the configuration file
//! (`$KUDO_HOME/repository/repositories.yaml`, `$KUDO_HOME` defaulting to `~/.kudo`) with
//! its current context, and a repository's `index.yaml` — every package version with its
//! archive URL and SHA-256 digest, newest first — built over a folder of `.tgz` packages by
//! `repo index`, searched by `search`. A repository is local (a directory path or a
//! `file://` URL) or remote (`http://`, `https://`: its index and packages are fetched with
//! [`crate::fetch`]). As in KUDO, the index's digests are not checked on download.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::fetch::{self, FetchError};
use crate::package::{self, PackageError, PackageFiles};

/// The name of the repository `kubectl kudo` knows out of the box.
pub const DEFAULT_REPO_NAME: &str = "community";
/// Its URL.
pub const DEFAULT_REPO_URL: &str = "https://kudo-repository.storage.googleapis.com/v1";

/// Why a repository operation failed.
#[derive(Debug, thiserror::Error)]
pub enum RepoError {
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// A file does not parse.
    #[error("{0}")]
    Invalid(String),
    /// A message as KUDO words it.
    #[error("{0}")]
    Refused(String),
    /// A package archive is broken.
    #[error(transparent)]
    Package(#[from] PackageError),
    /// A remote repository's index could not be downloaded (KUDO's message).
    #[error("could not download repository index file: {0}")]
    Index(FetchError),
    /// A package could not be downloaded from any of its URLs (KUDO's message).
    #[error("unable to read package {0}")]
    Download(FetchError),
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> RepoError + '_ {
    move |source| RepoError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// `$KUDO_HOME`, else `~/.kudo`.
pub fn kudo_home() -> PathBuf {
    if let Some(h) = std::env::var_os("KUDO_HOME").filter(|h| !h.is_empty()) {
        return PathBuf::from(h);
    }
    let home = std::env::var_os("HOME").unwrap_or_default();
    PathBuf::from(home).join(".kudo")
}

/// The repositories file under a KUDO home.
pub fn repositories_file(home: &Path) -> PathBuf {
    home.join("repository").join("repositories.yaml")
}

/// One configured repository.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, Eq)]
pub struct RepoConfig {
    /// Its name.
    pub name: String,
    /// Its URL (the folder holding `index.yaml`).
    pub url: String,
}

/// The repositories file.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Repositories {
    /// The repository used when none is named.
    pub context: String,
    /// `v1`.
    pub repo_version: String,
    /// The repositories.
    pub repositories: Vec<RepoConfig>,
}

impl Default for Repositories {
    fn default() -> Self {
        Repositories {
            context: DEFAULT_REPO_NAME.to_string(),
            repo_version: "v1".to_string(),
            repositories: vec![RepoConfig {
                name: DEFAULT_REPO_NAME.to_string(),
                url: DEFAULT_REPO_URL.to_string(),
            }],
        }
    }
}

impl Repositories {
    /// Reads the file; KUDO's default configuration when it does not exist.
    pub fn load(path: &Path) -> Result<Repositories, RepoError> {
        match std::fs::read_to_string(path) {
            Ok(text) => serde_yaml::from_str(&text).map_err(|e| {
                RepoError::Invalid(format!(
                    "couldn't load repositories file ({}): {e}",
                    path.display()
                ))
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Repositories::default()),
            Err(e) => Err(io(path)(e)),
        }
    }

    /// Writes the file (creating its folder).
    pub fn save(&self, path: &Path) -> Result<(), RepoError> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(io(dir))?;
        }
        let text = serde_yaml::to_string(self).map_err(|e| RepoError::Invalid(e.to_string()))?;
        std::fs::write(path, text).map_err(io(path))
    }

    /// The repository named `name`.
    pub fn get(&self, name: &str) -> Option<&RepoConfig> {
        self.repositories.iter().find(|r| r.name == name)
    }

    /// The repository `name`, or the context's when `name` is empty.
    pub fn resolve(&self, name: Option<&str>) -> Result<&RepoConfig, RepoError> {
        let name = name.filter(|n| !n.is_empty()).unwrap_or(&self.context);
        self.get(name)
            .ok_or_else(|| RepoError::Refused(format!("unable to find repository for {name}")))
    }

    /// Adds a repository (KUDO refuses a name in use).
    pub fn add(&mut self, name: &str, url: &str) -> Result<(), RepoError> {
        if self.get(name).is_some() {
            return Err(RepoError::Refused(format!(
                "repository name ({name}) already exists, please specify a different name"
            )));
        }
        self.repositories.push(RepoConfig {
            name: name.to_string(),
            url: url.to_string(),
        });
        Ok(())
    }

    /// Removes a repository.
    pub fn remove(&mut self, name: &str) -> Result<(), RepoError> {
        let before = self.repositories.len();
        self.repositories.retain(|r| r.name != name);
        if self.repositories.len() == before {
            return Err(RepoError::Refused(format!("no repo named {name:?} found")));
        }
        Ok(())
    }

    /// Makes `name` the context.
    pub fn set_context(&mut self, name: &str) -> Result<(), RepoError> {
        if self.repositories.is_empty() {
            return Err(RepoError::Refused("no repositories to set".to_string()));
        }
        if self.get(name).is_none() {
            return Err(RepoError::Refused(format!("no repo named {name:?} found")));
        }
        self.context = name.to_string();
        Ok(())
    }
}

/// A maintainer in an index (KUDO's keys, alphabetical as `sigs.k8s.io/yaml` writes them).
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct IndexMaintainer {
    /// E-mail address.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub email: String,
    /// Name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
}

/// One package version of an index.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct PackageVersion {
    /// The application's version.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub app_version: String,
    /// What it runs.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// SHA-256 of the archive.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub digest: String,
    /// Who maintains it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub maintainers: Vec<IndexMaintainer>,
    /// The operator's name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The package's version.
    #[serde(default)]
    pub operator_version: String,
    /// Withdrawn.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub removed: bool,
    /// Where the archive is.
    #[serde(default)]
    pub urls: Vec<String>,
}

/// A repository's `index.yaml`.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct IndexFile {
    /// `v1`.
    #[serde(default)]
    pub api_version: String,
    /// Operator name → versions, newest first.
    #[serde(default)]
    pub entries: BTreeMap<String, Vec<PackageVersion>>,
    /// When it was generated (RFC 3339).
    #[serde(default)]
    pub generated: Option<String>,
}

fn version_key(v: &str) -> Option<semver::Version> {
    let v = v.trim_start_matches('v');
    semver::Version::parse(v)
        .ok()
        .or_else(|| semver::Version::parse(&format!("{v}.0")).ok())
        .or_else(|| semver::Version::parse(&format!("{v}.0.0")).ok())
}

impl IndexFile {
    /// Parses and checks an index (KUDO's messages), sorted newest first.
    pub fn parse(text: &str) -> Result<IndexFile, RepoError> {
        let mut index: IndexFile = serde_yaml::from_str(text)
            .map_err(|e| RepoError::Invalid(format!("unmarshalling index file: {e}")))?;
        if index.api_version.is_empty() {
            return Err(RepoError::Invalid(
                "validating index file: no API version defined".to_string(),
            ));
        }
        for pv in index.entries.values().flatten() {
            if pv.operator_version.is_empty() {
                return Err(RepoError::Invalid(format!(
                    "validating index file: package {} is missing an operator version",
                    pv.name
                )));
            }
        }
        index.sort();
        Ok(index)
    }

    /// The index as YAML.
    pub fn to_yaml(&self) -> Result<String, RepoError> {
        serde_yaml::to_string(self).map_err(|e| RepoError::Invalid(e.to_string()))
    }

    /// Sorts every operator's versions newest first (by app version, then operator version).
    pub fn sort(&mut self) {
        for versions in self.entries.values_mut() {
            versions.sort_by(|a, b| {
                let key = |p: &PackageVersion| {
                    (
                        version_key(&p.app_version),
                        version_key(&p.operator_version),
                    )
                };
                key(b).cmp(&key(a))
            });
        }
    }

    /// Adds a version; KUDO refuses one already there.
    pub fn add(&mut self, pv: PackageVersion) -> Result<(), RepoError> {
        if pv.operator_version.is_empty() {
            return Err(RepoError::Refused(format!(
                "operator '{}' is missing operator version",
                pv.name
            )));
        }
        let versions = self.entries.entry(pv.name.clone()).or_default();
        if versions
            .iter()
            .any(|v| v.app_version == pv.app_version && v.operator_version == pv.operator_version)
        {
            return Err(RepoError::Refused(format!(
                "operator '{}' version: {}_{} already exists",
                pv.name, pv.app_version, pv.operator_version
            )));
        }
        versions.push(pv);
        Ok(())
    }

    /// Adds the versions of `other` this index does not have (`repo index --merge`).
    pub fn merge(&mut self, other: &IndexFile) {
        for pv in other.entries.values().flatten() {
            let _ = self.add(pv.clone());
        }
        self.sort();
    }

    /// `search`: operators whose name contains `criteria`, each with its newest version only
    /// unless `all_versions`; by name.
    pub fn find(&self, criteria: &str, all_versions: bool) -> Vec<&PackageVersion> {
        self.entries
            .iter()
            .filter(|(name, _)| name.contains(criteria))
            .flat_map(|(_, versions)| {
                let take = if all_versions { versions.len() } else { 1 };
                versions.iter().filter(|v| !v.removed).take(take)
            })
            .collect()
    }

    /// The version to install of `name`: the newest, or the one with the given versions.
    pub fn lookup(
        &self,
        name: &str,
        app_version: Option<&str>,
        operator_version: Option<&str>,
    ) -> Option<&PackageVersion> {
        self.entries.get(name)?.iter().find(|v| {
            !v.removed
                && app_version.is_none_or(|a| a.is_empty() || a == v.app_version)
                && operator_version.is_none_or(|o| o.is_empty() || o == v.operator_version)
        })
    }
}

/// `repo index DIR`: an index of every `*.tgz` package in `dir`, with archive URLs under
/// `url` (KUDO's default `http://localhost/`). Archives that do not read are reported in the
/// second value and left out.
pub fn index_directory(
    dir: &Path,
    url: &str,
    generated: &str,
) -> Result<(IndexFile, Vec<String>), RepoError> {
    let mut archives: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(io(dir))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "tgz") && p.is_file())
        .collect();
    archives.sort();
    if archives.is_empty() {
        return Err(RepoError::Refused("no packages discovered".to_string()));
    }
    let mut base = if url.is_empty() {
        "http://localhost/".to_string()
    } else {
        url.to_string()
    };
    if !base.ends_with('/') {
        base.push('/');
    }
    let mut index = IndexFile {
        api_version: "v1".to_string(),
        entries: BTreeMap::new(),
        generated: Some(generated.to_string()),
    };
    let mut warnings = Vec::new();
    for archive in archives {
        let bytes = std::fs::read(&archive).map_err(io(&archive))?;
        let files = match package::read(&archive) {
            Ok(f) => f,
            Err(_) => {
                warnings.push(format!(
                    "WARNING: operator: {} is invalid",
                    archive.display()
                ));
                continue;
            }
        };
        let op = &files.operator;
        let pv = PackageVersion {
            app_version: op.app_version.clone(),
            description: op.description.clone(),
            digest: sha256_hex(&bytes),
            maintainers: op
                .maintainers
                .iter()
                .map(|m| IndexMaintainer {
                    email: m.email.clone(),
                    name: m.name.clone(),
                })
                .collect(),
            name: op.name.clone(),
            operator_version: op.operator_version.clone(),
            removed: false,
            urls: vec![format!("{base}{}", package::archive_name(&files))],
        };
        if let Err(e) = index.add(pv) {
            warnings.push(e.to_string());
        }
    }
    index.sort();
    Ok((index, warnings))
}

fn sha256_hex(bytes: &[u8]) -> String {
    ring::digest::digest(&ring::digest::SHA256, bytes)
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The local path of a repository URL or archive URL (`file://...` or a plain path);
/// `None` for http(s).
pub fn local_path(url: &str) -> Option<PathBuf> {
    if let Some(p) = url.strip_prefix("file://") {
        return Some(PathBuf::from(p));
    }
    if url.starts_with("http://") || url.starts_with("https://") {
        return None;
    }
    Some(PathBuf::from(url))
}

/// Reads a repository's `index.yaml`: from its directory, or fetched from its URL.
pub fn read_index(repo: &RepoConfig) -> Result<IndexFile, RepoError> {
    let text = match local_path(&repo.url) {
        Some(dir) => {
            let path = dir.join("index.yaml");
            std::fs::read_to_string(&path).map_err(io(&path))?
        }
        None => {
            let bytes = fetch::get(&fetch::index_url(&repo.url)).map_err(RepoError::Index)?;
            String::from_utf8_lossy(&bytes).into_owned()
        }
    };
    IndexFile::parse(&text)
}

/// Reads the package of an index entry, from the first of its URLs that answers (KUDO's
/// order); a local URL is read in place.
pub fn read_package(pv: &PackageVersion) -> Result<PackageFiles, RepoError> {
    let mut last = None;
    for url in &pv.urls {
        if let Some(path) = local_path(url) {
            return Ok(package::read(&path)?);
        }
        match fetch::get(url) {
            Ok(bytes) => return Ok(package::read_archive(url, &bytes)?),
            Err(e) => last = Some(e),
        }
    }
    Err(last.map(RepoError::Download).unwrap_or_else(|| {
        RepoError::Refused(format!(
            "package {}-{} has no URL in the repository index",
            pv.name, pv.operator_version
        ))
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repositories_default_to_community_and_refuse_duplicates() {
        let dir = tempfile::tempdir().unwrap();
        let file = repositories_file(dir.path());
        let mut repos = Repositories::load(&file).unwrap();
        assert_eq!(repos.resolve(None).unwrap().url, DEFAULT_REPO_URL);
        repos.add("local", "file:///tmp/x").unwrap();
        let err = repos.add("local", "y").unwrap_err().to_string();
        assert_eq!(
            err,
            "repository name (local) already exists, please specify a different name"
        );
        repos.set_context("local").unwrap();
        repos.save(&file).unwrap();
        let text = std::fs::read_to_string(&file).unwrap();
        assert_eq!(
            text,
            "context: local\nrepoVersion: v1\nrepositories:\n- name: community\n  url: https://kudo-repository.storage.googleapis.com/v1\n- name: local\n  url: file:///tmp/x\n"
        );
        let mut back = Repositories::load(&file).unwrap();
        assert_eq!(back.resolve(None).unwrap().name, "local");
        assert_eq!(
            back.remove("nope").unwrap_err().to_string(),
            "no repo named \"nope\" found"
        );
        back.remove("local").unwrap();
    }

    #[test]
    fn indexes_sort_newest_first_and_find_by_name() {
        let index = IndexFile::parse(
            "apiVersion: v1\nentries:\n  zookeeper:\n  - {name: zookeeper, appVersion: 3.4.10, operatorVersion: 0.1.0, urls: [a]}\n  - {name: zookeeper, appVersion: 3.4.14, operatorVersion: 0.2.0, urls: [b]}\n  - {name: zookeeper, appVersion: 3.4.14, operatorVersion: 0.3.0, urls: [c]}\n  kafka:\n  - {name: kafka, operatorVersion: 1.0.0, urls: [d]}\n",
        )
        .unwrap();
        let found: Vec<_> = index
            .find("zoo", false)
            .iter()
            .map(|v| v.urls[0].as_str())
            .collect();
        assert_eq!(found, ["c"]);
        assert_eq!(index.find("", true).len(), 4);
        assert_eq!(
            index.lookup("zookeeper", None, Some("0.2.0")).unwrap().urls,
            ["b"]
        );
        let err = IndexFile::parse("entries: {}\n").unwrap_err().to_string();
        assert_eq!(err, "validating index file: no API version defined");
    }
}
