//! registry+v1 bundles: a directory with `manifests/` (one ClusterServiceVersion, its CRDs and
//! the extra kinds OLM installs) and `metadata/` (`annotations.yaml`, and optionally
//! `dependencies.yaml` and `properties.yaml`). [`Bundle::load`] reads one; loading refuses only
//! what makes a bundle unreadable (no CSV, two CSVs, a file that does not parse); everything else
//! is for [`validate`](crate::validate_bundle) to report.

pub(crate) mod csv;
pub(crate) mod generate;
pub(crate) mod validate;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::documents::{self, DocumentError};
use crate::property::{self, Property};
pub use csv::Csv;

/// The `metadata/annotations.yaml` keys of a registry+v1 bundle.
pub mod annotations {
    /// The bundle format: `registry+v1`.
    pub const MEDIATYPE: &str = "operators.operatorframework.io.bundle.mediatype.v1";
    /// The manifests directory: `manifests/`.
    pub const MANIFESTS: &str = "operators.operatorframework.io.bundle.manifests.v1";
    /// The metadata directory: `metadata/`.
    pub const METADATA: &str = "operators.operatorframework.io.bundle.metadata.v1";
    /// The package.
    pub const PACKAGE: &str = "operators.operatorframework.io.bundle.package.v1";
    /// The channels, comma-separated.
    pub const CHANNELS: &str = "operators.operatorframework.io.bundle.channels.v1";
    /// The default channel.
    pub const CHANNEL_DEFAULT: &str = "operators.operatorframework.io.bundle.channel.default.v1";
}

/// The one bundle format opkit reads.
pub const REGISTRY_V1: &str = "registry+v1";

/// One manifest of `manifests/`: the file it came from and the object.
#[derive(Clone, Debug)]
pub struct Manifest {
    /// The file, relative to the bundle directory (`manifests/x.yaml`).
    pub file: String,
    /// The object.
    pub object: Value,
}

impl Manifest {
    /// The object's `kind`.
    pub fn kind(&self) -> &str {
        self.object["kind"].as_str().unwrap_or_default()
    }

    /// The object's `apiVersion`.
    pub fn api_version(&self) -> &str {
        self.object["apiVersion"].as_str().unwrap_or_default()
    }

    /// The object's `metadata.name`.
    pub fn name(&self) -> &str {
        self.object["metadata"]["name"].as_str().unwrap_or_default()
    }
}

/// A registry+v1 bundle read from a directory.
#[derive(Clone, Debug)]
pub struct Bundle {
    /// The directory.
    pub dir: PathBuf,
    /// `metadata/annotations.yaml`'s `annotations`.
    pub annotations: BTreeMap<String, String>,
    /// The file the annotations came from, relative to the bundle directory.
    pub annotations_file: String,
    /// The ClusterServiceVersion, typed.
    pub csv: Csv,
    /// Index of the CSV in [`Bundle::manifests`].
    pub csv_index: usize,
    /// Every object of `manifests/`, files in name order (the CSV and CRDs included).
    pub manifests: Vec<Manifest>,
    /// `metadata/dependencies.yaml`'s `dependencies`.
    pub dependencies: Vec<Property>,
    /// `metadata/properties.yaml`'s `properties`.
    pub properties: Vec<Property>,
}

/// Why a bundle directory could not be read.
#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    /// A file could not be read or parsed.
    #[error(transparent)]
    Document(#[from] DocumentError),
    /// A directory the format requires is missing.
    #[error("{}: no {name}/ directory (a registry+v1 bundle has manifests/ and metadata/)", dir.display())]
    MissingDirectory {
        /// The bundle directory.
        dir: PathBuf,
        /// `manifests` or `metadata`.
        name: &'static str,
    },
    /// `metadata/` holds no file with `annotations`.
    #[error("{}: could not find annotations file (metadata/annotations.yaml with an `annotations` map)", dir.display())]
    NoAnnotations {
        /// The bundle directory.
        dir: PathBuf,
    },
    /// `manifests/` holds no ClusterServiceVersion.
    #[error("{}: manifests/ holds no ClusterServiceVersion", dir.display())]
    NoCsv {
        /// The bundle directory.
        dir: PathBuf,
    },
    /// `manifests/` holds more than one ClusterServiceVersion.
    #[error("{}: manifests/ holds more than one ClusterServiceVersion: {}", dir.display(), files.join(", "))]
    SeveralCsvs {
        /// The bundle directory.
        dir: PathBuf,
        /// The files holding them.
        files: Vec<String>,
    },
    /// A file has the wrong shape (a field of the wrong type).
    #[error("{file}: {message}")]
    Shape {
        /// The file, relative to the bundle directory.
        file: String,
        /// The field and what is wrong with it.
        message: String,
    },
}

impl Bundle {
    /// Reads the bundle in `dir`.
    pub fn load(dir: &Path) -> Result<Bundle, BundleError> {
        let manifests_dir = dir.join("manifests");
        let metadata_dir = dir.join("metadata");
        for (path, name) in [(&manifests_dir, "manifests"), (&metadata_dir, "metadata")] {
            if !path.is_dir() {
                return Err(BundleError::MissingDirectory {
                    dir: dir.to_path_buf(),
                    name,
                });
            }
        }
        let mut manifests = Vec::new();
        for path in documents::files_in(&manifests_dir)? {
            let file = relative(dir, &path);
            for object in documents::read_documents(&path)? {
                manifests.push(Manifest {
                    file: file.clone(),
                    object,
                });
            }
        }
        let csvs: Vec<usize> = (0..manifests.len())
            .filter(|&i| manifests[i].kind() == "ClusterServiceVersion")
            .collect();
        let csv_index = match csvs.as_slice() {
            [] => {
                return Err(BundleError::NoCsv {
                    dir: dir.to_path_buf(),
                });
            }
            [one] => *one,
            several => {
                return Err(BundleError::SeveralCsvs {
                    dir: dir.to_path_buf(),
                    files: several.iter().map(|&i| manifests[i].file.clone()).collect(),
                });
            }
        };
        let csv: Csv = documents::decode(&manifests[csv_index].object).map_err(|message| {
            BundleError::Shape {
                file: manifests[csv_index].file.clone(),
                message,
            }
        })?;

        // As operator-registry does: the first file of metadata/ with each part wins.
        let mut annotations = None;
        let mut dependencies = None;
        let mut properties = None;
        for path in documents::files_in(&metadata_dir)? {
            let file = relative(dir, &path);
            let doc = documents::read_single(&path)?;
            let shape = |message| BundleError::Shape {
                file: file.clone(),
                message,
            };
            if annotations.is_none() && doc.get("annotations").is_some() {
                let map: BTreeMap<String, String> = documents::decode(&doc["annotations"])
                    .map_err(|m| shape(format!("annotations: {m}")))?;
                annotations = Some((map, file.clone()));
            }
            if dependencies.is_none() && doc.get("dependencies").is_some() {
                let deps: Vec<Property> = documents::decode(&doc["dependencies"])
                    .map_err(|m| shape(format!("dependencies: {m}")))?;
                dependencies = Some(deps);
            }
            if properties.is_none() && doc.get("properties").is_some() {
                let props: Vec<Property> = documents::decode(&doc["properties"])
                    .map_err(|m| shape(format!("properties: {m}")))?;
                properties = Some(props);
            }
        }
        let Some((annotations, annotations_file)) = annotations else {
            return Err(BundleError::NoAnnotations {
                dir: dir.to_path_buf(),
            });
        };
        Ok(Bundle {
            dir: dir.to_path_buf(),
            annotations,
            annotations_file,
            csv,
            csv_index,
            manifests,
            dependencies: dependencies.unwrap_or_default(),
            properties: properties.unwrap_or_default(),
        })
    }

    /// The bundle's name: the CSV's name.
    pub fn name(&self) -> &str {
        &self.csv.metadata.name
    }

    /// The package, from the annotations.
    pub fn package(&self) -> &str {
        self.annotations
            .get(annotations::PACKAGE)
            .map(String::as_str)
            .unwrap_or_default()
    }

    /// The channels, from the annotations.
    pub fn channels(&self) -> Vec<&str> {
        self.annotations
            .get(annotations::CHANNELS)
            .map(|c| {
                c.split(',')
                    .map(str::trim)
                    .filter(|c| !c.is_empty())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The version (the CSV's `spec.version`), parsed.
    pub fn version(&self) -> Result<semver::Version, semver::Error> {
        semver::Version::parse(&self.csv.spec.version)
    }

    /// The raw CSV object.
    pub fn csv_object(&self) -> &Value {
        &self.manifests[self.csv_index].object
    }

    /// The CustomResourceDefinitions of `manifests/`.
    pub fn crds(&self) -> impl Iterator<Item = &Manifest> {
        self.manifests
            .iter()
            .filter(|m| m.kind() == "CustomResourceDefinition")
    }

    /// The APIs (group, version, kind) the bundle's CRDs serve: every version of every CRD,
    /// plus the CSV's owned aggregated APIs, sorted.
    pub fn provided_apis(&self) -> Vec<property::GvkValue> {
        let mut apis: Vec<property::GvkValue> =
            self.crds()
                .flat_map(|crd| {
                    let spec = &crd.object["spec"];
                    let group = spec["group"].as_str().unwrap_or_default().to_string();
                    let kind = spec["names"]["kind"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string();
                    crd_versions(&crd.object)
                        .into_iter()
                        .map(move |version| property::GvkValue {
                            group: group.clone(),
                            kind: kind.clone(),
                            version,
                        })
                })
                .chain(self.csv.spec.api_service_definitions.owned.iter().map(|a| {
                    property::GvkValue {
                        group: a.group.clone(),
                        kind: a.kind.clone(),
                        version: a.version.clone(),
                    }
                }))
                .collect();
        apis.sort();
        apis.dedup();
        apis
    }

    /// The APIs the CSV requires (required CRDs and aggregated APIs), sorted.
    pub fn required_apis(&self) -> Vec<property::GvkValue> {
        let defs = &self.csv.spec;
        let mut apis: Vec<property::GvkValue> = defs
            .custom_resource_definitions
            .required
            .iter()
            .map(|c| property::GvkValue {
                group: c.group().to_string(),
                kind: c.kind.clone(),
                version: c.version.clone(),
            })
            .chain(
                defs.api_service_definitions
                    .required
                    .iter()
                    .map(|a| property::GvkValue {
                        group: a.group.clone(),
                        kind: a.kind.clone(),
                        version: a.version.clone(),
                    }),
            )
            .collect();
        apis.sort();
        apis.dedup();
        apis
    }
}

/// The versions a CRD serves: `spec.versions[].name`, and apiextensions.k8s.io/v1beta1's
/// single `spec.version`.
pub(crate) fn crd_versions(crd: &Value) -> Vec<String> {
    let spec = &crd["spec"];
    let mut versions: Vec<String> = spec["versions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v["name"].as_str().map(String::from))
        .collect();
    if let Some(v) = spec["version"].as_str()
        && !versions.iter().any(|x| x == v)
    {
        versions.push(v.to_string());
    }
    versions
}

fn relative(dir: &Path, path: &Path) -> String {
    path.strip_prefix(dir)
        .unwrap_or(path)
        .to_string_lossy()
        .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, file: &str, text: &str) {
        let path = dir.join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    const CSV: &str = "apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\nmetadata:\n  name: demo.v1.0.0\nspec:\n  version: 1.0.0\n";

    #[test]
    fn loads_manifests_annotations_and_dependencies() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        write(d, "manifests/csv.yaml", CSV);
        write(
            d,
            "manifests/crd.yaml",
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: ws.x.io\nspec:\n  group: x.io\n  names: {kind: W, plural: ws}\n  versions: [{name: v1}, {name: v2}]\n",
        );
        write(
            d,
            "metadata/annotations.yaml",
            "annotations:\n  operators.operatorframework.io.bundle.package.v1: demo\n  operators.operatorframework.io.bundle.channels.v1: 'a, b'\n",
        );
        write(
            d,
            "metadata/dependencies.yaml",
            "dependencies:\n- type: olm.package\n  value: {packageName: other, version: '>=1.0.0'}\n",
        );
        let b = Bundle::load(d).unwrap();
        assert_eq!(b.name(), "demo.v1.0.0");
        assert_eq!(b.package(), "demo");
        assert_eq!(b.channels(), ["a", "b"]);
        assert_eq!(b.version().unwrap(), semver::Version::new(1, 0, 0));
        assert_eq!(b.manifests[b.csv_index].file, "manifests/csv.yaml");
        let versions: Vec<String> = b.provided_apis().into_iter().map(|g| g.version).collect();
        assert_eq!(versions, ["v1", "v2"]);
        assert_eq!(b.dependencies[0].value["packageName"], "other");
    }

    #[test]
    fn refuses_a_bundle_with_two_csvs_or_none() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        write(d, "metadata/annotations.yaml", "annotations: {}\n");
        write(
            d,
            "manifests/a.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n",
        );
        assert!(matches!(Bundle::load(d), Err(BundleError::NoCsv { .. })));
        write(d, "manifests/b.yaml", CSV);
        write(d, "manifests/c.yaml", CSV);
        let err = Bundle::load(d).unwrap_err();
        assert!(
            err.to_string().contains(
                "more than one ClusterServiceVersion: manifests/b.yaml, manifests/c.yaml"
            ),
            "{err}"
        );
    }

    #[test]
    fn names_the_file_and_field_of_a_wrongly_typed_csv() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        write(d, "metadata/annotations.yaml", "annotations: {}\n");
        write(
            d,
            "manifests/csv.yaml",
            &format!("{CSV}  installModes: 3\n"),
        );
        let err = Bundle::load(d).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("manifests/csv.yaml: spec.installModes:"),
            "{err}"
        );
    }

    #[test]
    fn refuses_a_directory_without_metadata() {
        let tmp = tempfile::tempdir().unwrap();
        write(tmp.path(), "manifests/csv.yaml", CSV);
        let err = Bundle::load(tmp.path()).unwrap_err();
        assert!(err.to_string().contains("no metadata/ directory"), "{err}");
    }
}
