//! `opm render` of a bundle directory: the `olm.bundle` a catalog holds for it. Properties are
//! the bundle's `olm.package`, an `olm.gvk` per version of every CRD (and owned aggregated API),
//! `olm.gvk.required` and `olm.package.required` from the CSV and `dependencies.yaml`, the
//! rest of `properties.yaml`, sorted by type and value; then either one `olm.bundle.object`
//! per manifest or, when migrating and the bundle has an image reference, one
//! `olm.csv.metadata`. `relatedImages` are the CSV's, the bundle image and the deployments'
//! images, sorted by image.

use std::collections::BTreeSet;

use base64::Engine;
use serde_json::{Map, Value};

use super::{Bundle, RelatedImage, SCHEMA_BUNDLE};
use crate::bundle::Bundle as BundleDir;
use crate::property::{self, Property};

/// How to render a bundle.
#[derive(Clone, Debug, Default)]
pub struct RenderOptions {
    /// The bundle's image reference (empty: none, as for a directory).
    pub image: String,
    /// opm's `--migrate-level bundle-object-to-csv-metadata`: for a bundle with an image,
    /// one `olm.csv.metadata` property instead of the `olm.bundle.object`s.
    pub csv_metadata: bool,
}

/// Why a bundle could not be rendered.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    /// The bundle's version is not semver.
    #[error("bundle {bundle:?}: version {version:?} is not a semantic version: {message}")]
    Version {
        /// The bundle.
        bundle: String,
        /// The version.
        version: String,
        /// Why.
        message: String,
    },
    /// The bundle names no package.
    #[error(
        "bundle {0:?}: no package (annotation operators.operatorframework.io.bundle.package.v1)"
    )]
    NoPackage(String),
    /// A dependency or property does not parse.
    #[error("bundle {bundle:?}: {message}")]
    Property {
        /// The bundle.
        bundle: String,
        /// Why.
        message: String,
    },
}

/// Renders `bundle` into the `olm.bundle` a catalog holds for it.
pub fn render_bundle(bundle: &BundleDir, opts: &RenderOptions) -> Result<Bundle, RenderError> {
    let name = bundle.name().to_string();
    let version = bundle.version().map_err(|e| RenderError::Version {
        bundle: name.clone(),
        version: bundle.csv.spec.version.clone(),
        message: e.to_string(),
    })?;
    if bundle.package().is_empty() {
        return Err(RenderError::NoPackage(name));
    }
    let prop_err = |message: String| RenderError::Property {
        bundle: name.clone(),
        message,
    };

    let mut provided: BTreeSet<property::GvkValue> = BTreeSet::new();
    let mut required: BTreeSet<property::GvkValue> = BTreeSet::new();
    let mut package_prop = None;
    let mut others = Vec::new();
    for p in &bundle.properties {
        match p.type_.as_str() {
            property::GVK => {
                provided.insert(p.decode().map_err(|m| prop_err(format!("olm.gvk: {m}")))?);
            }
            property::PACKAGE => {
                let v: property::PackageValue = p
                    .decode()
                    .map_err(|m| prop_err(format!("olm.package: {m}")))?;
                package_prop = Some(Property::new(property::PACKAGE, v));
            }
            _ => others.push(p.clone()),
        }
    }
    let mut package_required = Vec::new();
    for p in &bundle.dependencies {
        match p.type_.as_str() {
            property::GVK => {
                required.insert(
                    p.decode()
                        .map_err(|m| prop_err(format!("olm.gvk dependency: {m}")))?,
                );
            }
            property::PACKAGE => {
                let name = p.value["packageName"].as_str().unwrap_or_default();
                let range = p.value["version"].as_str().unwrap_or_default();
                package_required.push(Property::new(
                    property::PACKAGE_REQUIRED,
                    property::PackageRequiredValue {
                        package_name: name.to_string(),
                        version_range: range.to_string(),
                    },
                ));
            }
            _ => others.push(p.clone()),
        }
    }
    provided.extend(bundle.provided_apis());
    required.extend(bundle.required_apis());

    let mut props = Vec::new();
    props.push(package_prop.unwrap_or_else(|| {
        Property::new(
            property::PACKAGE,
            property::PackageValue {
                package_name: bundle.package().to_string(),
                version: version.to_string(),
                release: String::new(),
            },
        )
    }));
    props.extend(
        provided
            .into_iter()
            .map(|g| Property::new(property::GVK, g)),
    );
    props.extend(
        required
            .into_iter()
            .map(|g| Property::new(property::GVK_REQUIRED, g)),
    );
    props.extend(package_required);
    props.extend(others);
    property::sort(&mut props);

    let migrate = opts.csv_metadata && !opts.image.is_empty();
    if migrate {
        props.push(Property {
            type_: property::CSV_METADATA.to_string(),
            value: csv_metadata(bundle.csv_object()),
        });
    } else {
        let mut objects: Vec<Property> = bundle
            .manifests
            .iter()
            .map(|m| {
                let data =
                    base64::engine::general_purpose::STANDARD.encode(go_json(&m.object).as_bytes());
                Property::new(
                    property::BUNDLE_OBJECT,
                    property::BundleObjectValue { data },
                )
            })
            .collect();
        property::sort(&mut objects);
        props.extend(objects);
    }

    Ok(Bundle {
        schema: SCHEMA_BUNDLE.to_string(),
        name: bundle.name().to_string(),
        package: bundle.package().to_string(),
        image: opts.image.clone(),
        properties: props,
        related_images: related_images(bundle, &opts.image),
    })
}

/// The CSV's related images, then the bundle image and the deployments' images not yet listed;
/// sorted by image.
fn related_images(bundle: &BundleDir, image: &str) -> Vec<RelatedImage> {
    let mut out: Vec<RelatedImage> = bundle
        .csv
        .spec
        .related_images
        .iter()
        .map(|r| RelatedImage {
            name: r.name.clone(),
            image: r.image.clone(),
        })
        .collect();
    let mut seen: BTreeSet<String> = out.iter().map(|r| r.image.clone()).collect();
    if !image.is_empty() && seen.insert(image.to_string()) {
        out.push(RelatedImage {
            name: String::new(),
            image: image.to_string(),
        });
    }
    if bundle.csv.spec.install.strategy == "deployment" {
        let images: BTreeSet<String> = bundle
            .csv
            .spec
            .install
            .spec
            .deployments
            .iter()
            .flat_map(|d| d.images())
            .collect();
        for img in images {
            if seen.insert(img.clone()) {
                out.push(RelatedImage {
                    name: String::new(),
                    image: img,
                });
            }
        }
    }
    out.sort_by(|a, b| a.image.cmp(&b.image));
    out
}

/// JSON as Go's `encoding/json` writes it for an unstructured object: compact, keys sorted,
/// `<`, `>` and `&` escaped.
fn go_json(v: &Value) -> String {
    serde_json::to_string(v)
        .unwrap_or_default()
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
}

/// opm's `olm.csv.metadata`: the CSV's descriptive parts as operator-framework/api's Go types
/// keep them (unknown fields dropped, empty optional fields left out; `apiServiceDefinitions`
/// and `provider` always present, as Go's `omitempty` never drops a struct).
pub fn csv_metadata(csv: &Value) -> Value {
    let spec = &csv["spec"];
    let mut m = Map::new();
    put_map(&mut m, "annotations", &csv["metadata"]["annotations"]);
    m.insert(
        "apiServiceDefinitions".into(),
        owned_required(&spec["apiservicedefinitions"], api_service_description),
    );
    let crds = owned_required(&spec["customresourcedefinitions"], crd_description);
    if crds.as_object().is_some_and(|o| !o.is_empty()) {
        m.insert("crdDescriptions".into(), crds);
    }
    for key in ["description", "displayName", "maturity", "minKubeVersion"] {
        put_str(&mut m, key, &spec[key]);
    }
    put_list(&mut m, "installModes", &spec["installModes"], |v| {
        pick(v, &[("type", Keep::Always), ("supported", Keep::Bool)])
    });
    put_list(&mut m, "keywords", &spec["keywords"], |v| v.clone());
    put_map(&mut m, "labels", &csv["metadata"]["labels"]);
    put_list(&mut m, "links", &spec["links"], app_link);
    put_list(&mut m, "maintainers", &spec["maintainers"], |v| {
        pick(v, &[("name", Keep::NonEmpty), ("email", Keep::NonEmpty)])
    });
    put_list(&mut m, "nativeAPIs", &spec["nativeAPIs"], |v| {
        pick(
            v,
            &[
                ("group", Keep::Always),
                ("version", Keep::Always),
                ("kind", Keep::Always),
            ],
        )
    });
    m.insert("provider".into(), app_link(&spec["provider"]));
    Value::Object(m)
}

#[derive(Clone, Copy)]
enum Keep {
    /// Always present (a string, empty when absent).
    Always,
    /// Present when a non-empty string.
    NonEmpty,
    /// A bool, false when absent.
    Bool,
    /// Present when non-empty (any JSON), kept as is.
    Raw,
}

fn pick(v: &Value, fields: &[(&str, Keep)]) -> Value {
    let mut out = Map::new();
    for (k, keep) in fields {
        let f = &v[*k];
        match keep {
            Keep::Always => {
                out.insert(
                    (*k).into(),
                    Value::String(f.as_str().unwrap_or_default().into()),
                );
            }
            Keep::NonEmpty => {
                if let Some(s) = f.as_str().filter(|s| !s.is_empty()) {
                    out.insert((*k).into(), Value::String(s.into()));
                }
            }
            Keep::Bool => {
                out.insert((*k).into(), Value::Bool(f.as_bool().unwrap_or(false)));
            }
            Keep::Raw => {
                if !is_empty(f) {
                    out.insert((*k).into(), f.clone());
                }
            }
        }
    }
    Value::Object(out)
}

fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        _ => false,
    }
}

fn app_link(v: &Value) -> Value {
    pick(v, &[("name", Keep::NonEmpty), ("url", Keep::NonEmpty)])
}

fn descriptors(v: &Value) -> Value {
    pick(
        v,
        &[
            ("path", Keep::Always),
            ("displayName", Keep::NonEmpty),
            ("description", Keep::NonEmpty),
            ("x-descriptors", Keep::Raw),
            ("value", Keep::Raw),
        ],
    )
}

fn with_descriptors(v: &Value, mut out: Map<String, Value>) -> Value {
    put_list(&mut out, "resources", &v["resources"], |r| {
        pick(
            r,
            &[
                ("name", Keep::Always),
                ("kind", Keep::Always),
                ("version", Keep::Always),
            ],
        )
    });
    for key in ["statusDescriptors", "specDescriptors", "actionDescriptors"] {
        put_list(&mut out, key, &v[key], descriptors);
    }
    Value::Object(out)
}

fn crd_description(v: &Value) -> Value {
    let base = pick(
        v,
        &[
            ("name", Keep::Always),
            ("version", Keep::Always),
            ("kind", Keep::Always),
            ("displayName", Keep::NonEmpty),
            ("description", Keep::NonEmpty),
        ],
    );
    with_descriptors(v, base.as_object().cloned().unwrap_or_default())
}

fn api_service_description(v: &Value) -> Value {
    let mut base = pick(
        v,
        &[
            ("name", Keep::Always),
            ("group", Keep::Always),
            ("version", Keep::Always),
            ("kind", Keep::Always),
            ("deploymentName", Keep::NonEmpty),
            ("displayName", Keep::NonEmpty),
            ("description", Keep::NonEmpty),
        ],
    )
    .as_object()
    .cloned()
    .unwrap_or_default();
    if let Some(port) = v["containerPort"].as_i64().filter(|p| *p != 0) {
        base.insert("containerPort".into(), port.into());
    }
    with_descriptors(v, base)
}

fn owned_required(v: &Value, each: fn(&Value) -> Value) -> Value {
    let mut out = Map::new();
    for key in ["owned", "required"] {
        put_list(&mut out, key, &v[key], each);
    }
    Value::Object(out)
}

fn put_str(m: &mut Map<String, Value>, key: &str, v: &Value) {
    if let Some(s) = v.as_str().filter(|s| !s.is_empty()) {
        m.insert(key.into(), Value::String(s.into()));
    }
}

fn put_map(m: &mut Map<String, Value>, key: &str, v: &Value) {
    if let Some(o) = v.as_object().filter(|o| !o.is_empty()) {
        m.insert(key.into(), Value::Object(o.clone()));
    }
}

fn put_list(m: &mut Map<String, Value>, key: &str, v: &Value, each: impl Fn(&Value) -> Value) {
    if let Some(a) = v.as_array().filter(|a| !a.is_empty()) {
        m.insert(key.into(), Value::Array(a.iter().map(each).collect()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn csv_metadata_keeps_go_types_fields_only() {
        let csv = json!({
            "metadata": {"name": "x.v1", "annotations": {"a": "b"}},
            "spec": {
                "displayName": "X",
                "installModes": [{"type": "OwnNamespace"}],
                "customresourcedefinitions": {"owned": [{"name": "xs.example.com", "version": "v1", "kind": "X", "unknown": 1}]},
                "install": {"strategy": "deployment"},
                "icon": [{"base64data": "", "mediatype": "image/png"}]
            }
        });
        assert_eq!(
            csv_metadata(&csv),
            json!({
                "annotations": {"a": "b"},
                "apiServiceDefinitions": {},
                "crdDescriptions": {"owned": [{"name": "xs.example.com", "version": "v1", "kind": "X"}]},
                "displayName": "X",
                "installModes": [{"type": "OwnNamespace", "supported": false}],
                "provider": {}
            })
        );
    }

    #[test]
    fn go_json_escapes_html_characters() {
        assert_eq!(
            go_json(&json!({"a": "<&>"})),
            r#"{"a":"\u003c\u0026\u003e"}"#
        );
    }
}
