//! The two OCI images OLM ships content in, built and read without a registry: a **bundle
//! image** is `FROM scratch` with the bundle's `manifests/` and `metadata/` at the root and the
//! `metadata/annotations.yaml` annotations as the config's labels (what `operator-sdk`'s
//! `bundle.Dockerfile` builds); a **catalog image** holds the file-based catalog under
//! `/configs` and says so with the label `operators.operatorframework.io.index.configs.v1`
//! (what `opm generate dockerfile` builds, and where catalogd looks).
//!
//! Building is deterministic — entries in path order, zero mtimes, uids and gids, fixed modes,
//! a gzip header without a time — so the same directory always gives the same layer, config
//! and so manifest digest. Reading applies every layer in order (whiteouts included, for
//! images built on a base such as opm's) and keeps only the files under the directories the
//! labels name. Moving the bytes to and from a registry is the caller's job
//! (`opkit_lifecycle::registry`), so the CLI and the `ClusterCatalog` controller unpack images
//! with the same rules.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::bundle::{Bundle, REGISTRY_V1, annotations};

/// The label that names the directory holding a catalog image's file-based catalog.
pub const CONFIGS_LABEL: &str = "operators.operatorframework.io.index.configs.v1";
/// Where opkit puts the catalog in a catalog image (opm's choice too).
pub const CATALOG_ROOT: &str = "/configs";
/// The media type of the layer opkit builds: a gzip'd tar.
pub const LAYER_MEDIA_TYPE: &str = "application/vnd.oci.image.layer.v1.tar+gzip";
/// The media type of the config opkit builds.
pub const CONFIG_MEDIA_TYPE: &str = "application/vnd.oci.image.config.v1+json";
/// The layer media types [`bundle_files`] and [`catalog_files`] read (OCI's and Docker's,
/// plain or gzip'd).
pub const READABLE_LAYER_MEDIA_TYPES: &[&str] = &[
    LAYER_MEDIA_TYPE,
    "application/vnd.oci.image.layer.v1.tar",
    "application/vnd.docker.image.rootfs.diff.tar.gzip",
    "application/vnd.docker.image.rootfs.diff.tar",
];

/// An image opkit built: one layer and the config that labels it.
#[derive(Clone, Debug)]
pub struct Image {
    /// The config's `config.Labels`.
    pub labels: BTreeMap<String, String>,
    /// The layer, a gzip'd tar ([`LAYER_MEDIA_TYPE`]).
    pub layer: Vec<u8>,
    /// The image config ([`CONFIG_MEDIA_TYPE`]).
    pub config: Vec<u8>,
}

/// One layer of a pulled image.
#[derive(Clone, Copy, Debug)]
pub struct Layer<'a> {
    /// Its media type (one of [`READABLE_LAYER_MEDIA_TYPES`]).
    pub media_type: &'a str,
    /// Its bytes as the registry served them.
    pub data: &'a [u8],
}

/// The files of a pulled image, by path relative to the directory they unpack into.
pub type Files = BTreeMap<String, Vec<u8>>;

/// What went wrong building or reading an image.
#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    /// A file of the directory could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The directory has nothing to put in the image.
    #[error("{}: no files to put in the image", .0.display())]
    Empty(PathBuf),
    /// The pulled image's config is not an image config.
    #[error("the image config is not JSON: {0}")]
    Config(serde_json::Error),
    /// The pulled image lacks the label that makes it a bundle or catalog image.
    #[error(
        "not a {kind} image: its config has no label {label} (push it with `opkit {kind} push`, or build it with the label)"
    )]
    MissingLabel {
        /// `bundle` or `catalog`.
        kind: &'static str,
        /// The label.
        label: &'static str,
    },
    /// A bundle image of another format than registry+v1.
    #[error("the bundle image's format is {0:?} ({MEDIATYPE_LABEL}); opkit reads registry+v1 bundles", MEDIATYPE_LABEL = annotations::MEDIATYPE)]
    Format(String),
    /// No file of the pulled image is where its labels say the content is.
    #[error("not a {kind} image: its layers have no files under /{dir}")]
    NoContent {
        /// `bundle` or `catalog`.
        kind: &'static str,
        /// The directory the labels name.
        dir: String,
    },
    /// A layer could not be read.
    #[error("layer {index} ({media_type}): {message}")]
    Layer {
        /// The layer, from 0.
        index: usize,
        /// Its media type.
        media_type: String,
        /// What is wrong.
        message: String,
    },
    /// The content holds an entry opkit does not unpack.
    #[error(
        "{path}: {what} in the image content (only regular files and directories are unpacked)"
    )]
    Unsupported {
        /// The entry's path in the image.
        path: String,
        /// What it is.
        what: &'static str,
    },
}

/// The bundle image of `bundle`: its `manifests/` and `metadata/` in one layer, labelled with
/// its annotations.
pub fn bundle_image(bundle: &Bundle) -> Result<Image, ImageError> {
    let mut entries = BTreeMap::new();
    for dir in ["manifests", "metadata"] {
        collect(&bundle.dir.join(dir), dir, &mut entries)?;
    }
    build(&bundle.dir, entries, bundle.annotations.clone())
}

/// The catalog image of the file-based catalog in `dir`: every file of `dir` under
/// [`CATALOG_ROOT`], labelled with [`CONFIGS_LABEL`].
pub fn catalog_image(dir: &Path) -> Result<Image, ImageError> {
    let mut entries = BTreeMap::new();
    let root = CATALOG_ROOT.trim_start_matches('/');
    collect(dir, root, &mut entries)?;
    let labels = BTreeMap::from([(CONFIGS_LABEL.to_string(), CATALOG_ROOT.to_string())]);
    build(dir, entries, labels)
}

/// The bundle directory of a pulled bundle image: its `manifests/` and `metadata/` files.
pub fn bundle_files(config: &[u8], layers: &[Layer<'_>]) -> Result<Files, ImageError> {
    let labels = labels(config)?;
    let format = labels
        .get(annotations::MEDIATYPE)
        .ok_or(ImageError::MissingLabel {
            kind: "bundle",
            label: annotations::MEDIATYPE,
        })?;
    if format != REGISTRY_V1 {
        return Err(ImageError::Format(format.clone()));
    }
    let content = apply(layers)?;
    let mut files = Files::new();
    for (label, local) in [
        (annotations::MANIFESTS, "manifests"),
        (annotations::METADATA, "metadata"),
    ] {
        let dir = labels.get(label).map_or(local, |d| d.trim_matches('/'));
        let found = content.select(dir)?;
        if found.is_empty() {
            return Err(ImageError::NoContent {
                kind: "bundle",
                dir: dir.to_string(),
            });
        }
        files.extend(found.into_iter().map(|(p, d)| (format!("{local}/{p}"), d)));
    }
    Ok(files)
}

/// The catalog directory of a pulled catalog image: the files under the directory its
/// [`CONFIGS_LABEL`] names.
pub fn catalog_files(config: &[u8], layers: &[Layer<'_>]) -> Result<Files, ImageError> {
    let labels = labels(config)?;
    let root = labels.get(CONFIGS_LABEL).ok_or(ImageError::MissingLabel {
        kind: "catalog",
        label: CONFIGS_LABEL,
    })?;
    let dir = root.trim_matches('/');
    let files = apply(layers)?.select(dir)?;
    if files.is_empty() {
        return Err(ImageError::NoContent {
            kind: "catalog",
            dir: dir.to_string(),
        });
    }
    Ok(files)
}

/// Adds `dir`'s directories (value `None`) and files under the layer path `prefix`.
fn collect(
    dir: &Path,
    prefix: &str,
    entries: &mut BTreeMap<String, Option<Vec<u8>>>,
) -> Result<(), ImageError> {
    let read = |path: &Path, source| ImageError::Read {
        path: path.to_path_buf(),
        source,
    };
    entries.insert(format!("{prefix}/"), None);
    for entry in std::fs::read_dir(dir).map_err(|e| read(dir, e))? {
        let path = entry.map_err(|e| read(dir, e))?.path();
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        let layer_path = format!("{prefix}/{name}");
        if std::fs::metadata(&path)
            .map_err(|e| read(&path, e))?
            .is_dir()
        {
            collect(&path, &layer_path, entries)?;
        } else {
            let data = std::fs::read(&path).map_err(|e| read(&path, e))?;
            entries.insert(layer_path, Some(data));
        }
    }
    Ok(())
}

/// The deterministic layer of `entries` and the config labelling it.
fn build(
    dir: &Path,
    entries: BTreeMap<String, Option<Vec<u8>>>,
    labels: BTreeMap<String, String>,
) -> Result<Image, ImageError> {
    if entries.values().all(Option::is_none) {
        return Err(ImageError::Empty(dir.to_path_buf()));
    }
    let io = |source| ImageError::Read {
        path: dir.to_path_buf(),
        source,
    };
    let mut tar = tar::Builder::new(Vec::new());
    for (path, data) in &entries {
        let mut header = tar::Header::new_gnu();
        header.set_uid(0);
        header.set_gid(0);
        header.set_mtime(0);
        match data {
            Some(data) => {
                header.set_entry_type(tar::EntryType::Regular);
                header.set_mode(0o644);
                header.set_size(data.len() as u64);
                tar.append_data(&mut header, path, data.as_slice())
                    .map_err(io)?;
            }
            None => {
                header.set_entry_type(tar::EntryType::Directory);
                header.set_mode(0o755);
                header.set_size(0);
                tar.append_data(&mut header, path, std::io::empty())
                    .map_err(io)?;
            }
        }
    }
    let tar = tar.into_inner().map_err(io)?;
    let diff_id = format!("sha256:{:x}", Sha256::digest(&tar));
    let mut gz = flate2::GzBuilder::new()
        .mtime(0)
        .write(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut gz, &tar).map_err(io)?;
    let layer = gz.finish().map_err(io)?;
    let config = serde_json::json!({
        "architecture": "amd64",
        "os": "linux",
        "config": {"Labels": labels},
        "rootfs": {"type": "layers", "diff_ids": [diff_id]},
    });
    Ok(Image {
        labels,
        layer,
        config: serde_json::to_vec(&config).expect("a JSON value serializes"),
    })
}

/// The config's `config.Labels` (Docker's and OCI's spelling alike).
fn labels(config: &[u8]) -> Result<BTreeMap<String, String>, ImageError> {
    #[derive(serde::Deserialize)]
    struct ConfigFile {
        #[serde(default)]
        config: Option<Inner>,
    }
    #[derive(serde::Deserialize)]
    struct Inner {
        #[serde(default, rename = "Labels")]
        labels: Option<BTreeMap<String, String>>,
    }
    let file: ConfigFile = serde_json::from_slice(config).map_err(ImageError::Config)?;
    Ok(file.config.and_then(|c| c.labels).unwrap_or_default())
}

/// The file system the layers make, files and the links opkit refuses to unpack.
#[derive(Default)]
struct Content {
    files: BTreeMap<String, Vec<u8>>,
    links: BTreeSet<String>,
}

impl Content {
    /// The files under `dir`, by path relative to it; an error if a link is there.
    fn select(&self, dir: &str) -> Result<Files, ImageError> {
        let prefix = format!("{dir}/");
        if let Some(link) = self.links.iter().find(|l| l.starts_with(&prefix)) {
            return Err(ImageError::Unsupported {
                path: format!("/{link}"),
                what: "a link",
            });
        }
        Ok(self
            .files
            .range(prefix.clone()..)
            .map_while(|(p, d)| Some((p.strip_prefix(&prefix)?.to_string(), d.clone())))
            .collect())
    }

    /// Removes `path` and everything under it (a whiteout).
    fn remove(&mut self, path: &str) {
        let under = format!("{path}/");
        let gone = |p: &String| p == path || p.starts_with(&under);
        self.files.retain(|p, _| !gone(p));
        self.links.retain(|p| !gone(p));
    }
}

/// Applies `layers` in order, as a container runtime unpacks them.
fn apply(layers: &[Layer<'_>]) -> Result<Content, ImageError> {
    let mut content = Content::default();
    for (index, layer) in layers.iter().enumerate() {
        let error = |message: String| ImageError::Layer {
            index,
            media_type: layer.media_type.to_string(),
            message,
        };
        let reader: Box<dyn Read> = match layer.media_type {
            t if t.ends_with("+gzip") || t.ends_with(".tar.gzip") => {
                Box::new(flate2::read::GzDecoder::new(layer.data))
            }
            t if t.ends_with(".tar") => Box::new(layer.data),
            other => return Err(error(format!("unsupported layer media type {other}"))),
        };
        let mut archive = tar::Archive::new(reader);
        for entry in archive.entries().map_err(|e| error(e.to_string()))? {
            let mut entry = entry.map_err(|e| error(e.to_string()))?;
            let raw = entry.path().map_err(|e| error(e.to_string()))?;
            let Some(path) = normalize(&raw.to_string_lossy()) else {
                return Err(error(format!(
                    "entry {:?} leaves the image root",
                    raw.display()
                )));
            };
            let (parent, name) = match path.rsplit_once('/') {
                Some((parent, name)) => (Some(parent), name),
                None => (None, path.as_str()),
            };
            if name == ".wh..wh..opq" {
                match parent {
                    Some(parent) => {
                        let prefix = format!("{parent}/");
                        content.files.retain(|p, _| !p.starts_with(&prefix));
                        content.links.retain(|p| !p.starts_with(&prefix));
                    }
                    None => content = Content::default(),
                }
                continue;
            }
            if let Some(hidden) = name.strip_prefix(".wh.") {
                content.remove(&match parent {
                    Some(parent) => format!("{parent}/{hidden}"),
                    None => hidden.to_string(),
                });
                continue;
            }
            match entry.header().entry_type() {
                tar::EntryType::Regular | tar::EntryType::Continuous => {
                    let mut data = Vec::with_capacity(entry.size() as usize);
                    entry
                        .read_to_end(&mut data)
                        .map_err(|e| error(format!("{path}: {e}")))?;
                    content.remove(&path);
                    content.files.insert(path, data);
                }
                tar::EntryType::Directory => {}
                tar::EntryType::Symlink | tar::EntryType::Link => {
                    content.remove(&path);
                    content.links.insert(path);
                }
                // Devices, fifos and extended headers have no place in OLM content; the tar
                // reader folds PAX and GNU long-name headers into the entries they describe.
                _ => {}
            }
        }
    }
    Ok(content)
}

/// `./a/b/`, `/a/b` → `a/b`; `None` for a path with `..`.
fn normalize(path: &str) -> Option<String> {
    let mut parts = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => return None,
            part => parts.push(part),
        }
    }
    Some(parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, files: &[(&str, &str)]) {
        for (path, text) in files {
            let file = dir.join(path);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(file, text).unwrap();
        }
    }

    fn layer(image: &Image) -> Layer<'_> {
        Layer {
            media_type: LAYER_MEDIA_TYPE,
            data: &image.layer,
        }
    }

    fn tar_layer(entries: &[(&str, &str)]) -> Vec<u8> {
        let mut tar = tar::Builder::new(Vec::new());
        for (path, text) in entries {
            // The name written raw: `append_data` would refuse the `..` a hostile image has.
            let mut header = tar::Header::new_gnu();
            header.as_old_mut().name[..path.len()].copy_from_slice(path.as_bytes());
            header.set_mode(0o644);
            header.set_size(text.len() as u64);
            header.set_cksum();
            tar.append(&header, text.as_bytes()).unwrap();
        }
        tar.into_inner().unwrap()
    }

    #[test]
    fn a_catalog_image_is_the_same_bytes_however_often_it_is_built_and_reads_back() {
        let tmp = tempfile::tempdir().unwrap();
        write(
            tmp.path(),
            &[
                ("demo/index.yaml", "schema: olm.package\nname: demo\n"),
                ("b.json", "{}"),
            ],
        );
        let first = catalog_image(tmp.path()).unwrap();
        // Another mtime changes nothing.
        std::fs::File::options()
            .write(true)
            .open(tmp.path().join("b.json"))
            .unwrap()
            .set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000_000))
            .unwrap();
        let second = catalog_image(tmp.path()).unwrap();
        assert_eq!(first.layer, second.layer);
        assert_eq!(first.config, second.config);
        assert_eq!(first.labels[CONFIGS_LABEL], "/configs");
        let config: serde_json::Value = serde_json::from_slice(&first.config).unwrap();
        assert_eq!(config["config"]["Labels"][CONFIGS_LABEL], "/configs");
        assert!(
            config["rootfs"]["diff_ids"][0]
                .as_str()
                .unwrap()
                .starts_with("sha256:")
        );
        let files = catalog_files(&first.config, &[layer(&first)]).unwrap();
        assert_eq!(
            files.keys().collect::<Vec<_>>(),
            ["b.json", "demo/index.yaml"]
        );
        assert_eq!(
            files["demo/index.yaml"],
            b"schema: olm.package\nname: demo\n"
        );
    }

    #[test]
    fn a_pulled_catalog_follows_the_label_and_applies_whiteouts_of_later_layers() {
        let base = tar_layer(&[
            ("bin/opm", "binary"),
            ("./catalog/a/index.yaml", "a"),
            ("catalog/old.yaml", "old"),
        ]);
        let top = tar_layer(&[("catalog/.wh.old.yaml", ""), ("catalog/b.yaml", "b")]);
        let config = br#"{"config":{"Labels":{"operators.operatorframework.io.index.configs.v1":"/catalog"}}}"#;
        let layers = [
            Layer {
                media_type: "application/vnd.docker.image.rootfs.diff.tar",
                data: &base,
            },
            Layer {
                media_type: "application/vnd.oci.image.layer.v1.tar",
                data: &top,
            },
        ];
        let files = catalog_files(config, &layers).unwrap();
        assert_eq!(files.keys().collect::<Vec<_>>(), ["a/index.yaml", "b.yaml"]);
    }

    #[test]
    fn an_image_without_the_label_or_content_is_not_a_catalog_or_bundle() {
        let data = tar_layer(&[("configs/index.yaml", "x")]);
        let layers = [Layer {
            media_type: "application/vnd.oci.image.layer.v1.tar",
            data: &data,
        }];
        let err = catalog_files(br#"{"config":{}}"#, &layers).unwrap_err();
        assert!(
            err.to_string().starts_with(
                "not a catalog image: its config has no label operators.operatorframework.io.index.configs.v1"
            ),
            "{err}"
        );
        let err = bundle_files(br#"{"config":{"Labels":{}}}"#, &layers).unwrap_err();
        assert!(err.to_string().starts_with("not a bundle image"), "{err}");
        let config = br#"{"config":{"Labels":{"operators.operatorframework.io.index.configs.v1":"/elsewhere"}}}"#;
        let err = catalog_files(config, &layers).unwrap_err();
        assert_eq!(
            err.to_string(),
            "not a catalog image: its layers have no files under /elsewhere"
        );
        let escape = tar_layer(&[("configs/../../etc/passwd", "x")]);
        let layers = [Layer {
            media_type: "application/vnd.oci.image.layer.v1.tar",
            data: &escape,
        }];
        let config = br#"{"config":{"Labels":{"operators.operatorframework.io.index.configs.v1":"/configs"}}}"#;
        let err = catalog_files(config, &layers).unwrap_err();
        assert!(err.to_string().contains("leaves the image root"), "{err}");
    }
}
