//! What the hub lists: the packages of the cluster's serving `ClusterCatalog`s, read as any
//! client reads them — over catalogd's HTTP API at each catalog's `status.urls.base` — and
//! reduced to what a page shows. The descriptive parts come from the newest bundle of the
//! package's default channel: its `olm.csv.metadata` property, or (in a catalog rendered
//! without migration) the CSV among its `olm.bundle.object`s; the icon is the package's,
//! else that CSV's.

use axum::body::Bytes;
use base64::Engine;
use http_body_util::{BodyExt, Empty, Limited};
use hyper_util::client::legacy::Client as HttpClient;
use hyper_util::rt::TokioExecutor;
use kube::api::{Api, ListParams};
use kube::{Client, ResourceExt};
use opkit_lifecycle::ClusterCatalog;
use opkit_olm::Catalog;
use opkit_olm::catalog::{Bundle, Icon};
use opkit_olm::property::{BUNDLE_OBJECT, CSV_METADATA};
use serde_json::Value;

/// The largest catalog read (catalogd's own answers for big catalogs are tens of MB).
const MAX_CATALOG: usize = 256 * 1024 * 1024;

/// One package of one served catalog, as the hub shows it.
#[derive(Clone, Debug, Default)]
pub(crate) struct Package {
    /// The ClusterCatalog serving it.
    pub catalog: String,
    /// The package's name.
    pub name: String,
    /// The CSV's display name (the package's name when none).
    pub display_name: String,
    /// One line: the CSV's `description` annotation, else the package's description.
    pub summary: String,
    /// The CSV's long description (Markdown).
    pub description: String,
    /// `data:` URL of the icon, when it is an image of a known type.
    pub icon: Option<String>,
    /// The CSV's `capabilities` annotation (`Basic Install` … `Auto Pilot`).
    pub capabilities: String,
    /// The CSV's `categories` annotation, split.
    pub categories: Vec<String>,
    /// The CSV's provider.
    pub provider: String,
    /// The default channel.
    pub default_channel: String,
    /// Each channel with the versions of its bundles, newest first.
    pub channels: Vec<(String, Vec<String>)>,
    /// The newest version of the default channel.
    pub latest: String,
    /// The CSV's `alm-examples`, pretty-printed (as given when it is not JSON).
    pub examples: Option<String>,
}

/// Every package of every serving catalog (sorted by display name), and the catalogs that
/// could not be read, each with why.
pub(crate) async fn packages(client: &Client) -> anyhow::Result<(Vec<Package>, Vec<String>)> {
    let api: Api<ClusterCatalog> = Api::all(client.clone());
    let catalogs = match api.list(&ListParams::default()).await {
        Ok(list) => list.items,
        Err(kube::Error::Api(s)) if s.code == 404 => anyhow::bail!(
            "the cluster serves no ClusterCatalogs: start the lifecycle controllers (`opkit up --olm`)"
        ),
        Err(e) => return Err(anyhow::Error::new(e).context("cannot list ClusterCatalogs")),
    };
    let mut packages = Vec::new();
    let mut problems = Vec::new();
    for catalog in catalogs {
        let name = catalog.name_any();
        let Some(base) = catalog
            .status
            .as_ref()
            .and_then(|s| s.urls.as_ref())
            .map(|u| u.base.clone())
        else {
            problems.push(format!("ClusterCatalog {name} is not serving yet"));
            continue;
        };
        match read(&base).await {
            Ok(content) => packages.extend(of_catalog(&name, &content)),
            Err(e) => problems.push(format!("ClusterCatalog {name}: {e}")),
        }
    }
    packages.sort_by(|a, b| {
        (a.display_name.to_lowercase(), &a.catalog)
            .cmp(&(b.display_name.to_lowercase(), &b.catalog))
    });
    Ok((packages, problems))
}

/// The catalog served below `base` (`<base>/api/v1/all`).
async fn read(base: &str) -> Result<Catalog, String> {
    let url = format!("{}/api/v1/all", base.trim_end_matches('/'));
    let uri: axum::http::Uri = url
        .parse()
        .map_err(|e| format!("its URL {url:?} does not parse: {e}"))?;
    if uri.scheme_str() != Some("http") {
        return Err(format!(
            "the hub reads catalogs over http:// only (as opkit's catalogd serves them), not {url}"
        ));
    }
    let client = HttpClient::builder(TokioExecutor::new()).build_http::<Empty<Bytes>>();
    let response = client
        .get(uri)
        .await
        .map_err(|e| format!("cannot get {url}: {}", chain(&e)))?;
    if response.status() != axum::http::StatusCode::OK {
        return Err(format!("{url} answered {}", response.status()));
    }
    let body = Limited::new(response.into_body(), MAX_CATALOG)
        .collect()
        .await
        .map_err(|e| format!("cannot read {url}: {e}"))?
        .to_bytes();
    let text = std::str::from_utf8(&body).map_err(|e| format!("{url} is not UTF-8: {e}"))?;
    opkit_olm::catalog::parse_documents(text, std::path::Path::new(&url)).map_err(|e| e.to_string())
}

/// The error and its causes on one line.
fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}

/// The packages of catalog `name`.
pub(crate) fn of_catalog(name: &str, catalog: &Catalog) -> Vec<Package> {
    catalog
        .packages
        .iter()
        .map(|p| {
            let bundles: Vec<&Bundle> = catalog
                .bundles
                .iter()
                .filter(|b| b.package == p.name)
                .collect();
            let mut channels: Vec<(String, Vec<(semver::Version, String)>)> = catalog
                .channels
                .iter()
                .filter(|c| c.package == p.name)
                .map(|c| {
                    let mut versions: Vec<(semver::Version, String)> = c
                        .entries
                        .iter()
                        .filter_map(|e| bundles.iter().find(|b| b.name == e.name))
                        .filter_map(|b| b.version().map(|v| (v, b.name.clone())))
                        .collect();
                    versions.sort_by(|a, b| b.0.cmp(&a.0));
                    (c.name.clone(), versions)
                })
                .collect();
            channels.sort_by(|a, b| {
                (a.0 != p.default_channel, &a.0).cmp(&(b.0 != p.default_channel, &b.0))
            });
            let newest = channels
                .iter()
                .find(|c| c.0 == p.default_channel)
                .and_then(|c| c.1.first())
                .and_then(|(_, name)| bundles.iter().find(|b| &b.name == name));
            let (metadata, csv_icon) = newest.map(|b| describe(b)).unwrap_or_default();
            let annotation = |key: &str| {
                metadata["annotations"][key]
                    .as_str()
                    .unwrap_or_default()
                    .trim()
                    .to_string()
            };
            let description = metadata["description"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let summary = [annotation("description"), p.description.clone()]
                .into_iter()
                .find(|s| !s.trim().is_empty())
                .unwrap_or_else(|| first_paragraph(&description));
            let examples = Some(annotation("alm-examples"))
                .filter(|s| !s.is_empty())
                .map(|s| match serde_json::from_str::<Value>(&s) {
                    Ok(v) => serde_json::to_string_pretty(&v).unwrap_or(s),
                    Err(_) => s,
                });
            Package {
                catalog: name.to_string(),
                name: p.name.clone(),
                display_name: metadata["displayName"]
                    .as_str()
                    .filter(|s| !s.trim().is_empty())
                    .unwrap_or(&p.name)
                    .to_string(),
                summary: summary.lines().next().unwrap_or_default().to_string(),
                description,
                icon: p.icon.as_ref().or(csv_icon.as_ref()).and_then(data_url),
                capabilities: annotation("capabilities"),
                categories: annotation("categories")
                    .split(',')
                    .map(|c| c.trim().to_string())
                    .filter(|c| !c.is_empty())
                    .collect(),
                provider: metadata["provider"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                default_channel: p.default_channel.clone(),
                latest: newest
                    .and_then(|b| b.version())
                    .map(|v| v.to_string())
                    .unwrap_or_default(),
                channels: channels
                    .into_iter()
                    .map(|(c, vs)| (c, vs.into_iter().map(|(v, _)| v.to_string()).collect()))
                    .collect(),
                examples,
            }
        })
        .collect()
}

/// The CSV metadata of `bundle` (`olm.csv.metadata`, or derived from the CSV among its
/// `olm.bundle.object`s) and that CSV's first icon.
fn describe(bundle: &Bundle) -> (Value, Option<Icon>) {
    if let Some(p) = bundle.properties.iter().find(|p| p.type_ == CSV_METADATA) {
        return (p.value.clone(), None);
    }
    let csv = bundle
        .properties
        .iter()
        .filter(|p| p.type_ == BUNDLE_OBJECT)
        .filter_map(|p| p.value["data"].as_str())
        .filter_map(|data| base64::engine::general_purpose::STANDARD.decode(data).ok())
        .filter_map(|raw| serde_json::from_slice::<Value>(&raw).ok())
        .find(|o| o["kind"] == "ClusterServiceVersion");
    match csv {
        Some(csv) => {
            let icon = serde_json::from_value(csv["spec"]["icon"][0].clone()).ok();
            (opkit_olm::csv_metadata(&csv), icon)
        }
        None => (Value::Null, None),
    }
}

/// `data:MEDIATYPE;base64,DATA` for an image icon; none for anything else (a page must not
/// embed a document type a browser would run).
fn data_url(icon: &Icon) -> Option<String> {
    let known = ["image/png", "image/jpeg", "image/gif", "image/svg+xml"];
    let data: String = icon
        .base64data
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    let base64 = |c: char| c.is_ascii_alphanumeric() || matches!(c, '+' | '/' | '=');
    (known.contains(&icon.mediatype.as_str()) && !data.is_empty() && data.chars().all(base64))
        .then(|| format!("data:{};base64,{data}", icon.mediatype))
}

/// The first paragraph of Markdown `text`, on one line.
fn first_paragraph(text: &str) -> String {
    text.split("\n\n")
        .map(|p| p.split_whitespace().collect::<Vec<_>>().join(" "))
        .find(|p| !p.is_empty() && !p.starts_with('#'))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn icons_of_other_types_or_with_stray_characters_are_not_embedded() {
        let icon = |mediatype: &str, data: &str| Icon {
            base64data: data.into(),
            mediatype: mediatype.into(),
        };
        assert_eq!(
            data_url(&icon("image/svg+xml", "PHN2\nZy8+")).as_deref(),
            Some("data:image/svg+xml;base64,PHN2Zy8+")
        );
        assert_eq!(data_url(&icon("text/html", "PHN2Zy8+")), None);
        assert_eq!(data_url(&icon("image/png", "AA\"><script>")), None);
        assert_eq!(data_url(&icon("image/png", "")), None);
    }

    #[test]
    fn a_package_is_described_by_the_newest_bundle_of_its_default_channel() {
        let text = r##"
schema: olm.package
name: demo
defaultChannel: stable
icon: {base64data: PHN2Zy8+, mediatype: image/svg+xml}
---
schema: olm.channel
package: demo
name: alpha
entries: [{name: demo.v3.0.0}]
---
schema: olm.channel
package: demo
name: stable
entries: [{name: demo.v1.0.0}, {name: demo.v2.0.0, replaces: demo.v1.0.0}]
---
schema: olm.bundle
package: demo
name: demo.v1.0.0
image: r/demo:1
properties:
- {type: olm.package, value: {packageName: demo, version: 1.0.0}}
- {type: olm.csv.metadata, value: {displayName: Old}}
---
schema: olm.bundle
package: demo
name: demo.v2.0.0
image: r/demo:2
properties:
- {type: olm.package, value: {packageName: demo, version: 2.0.0}}
- type: olm.csv.metadata
  value:
    displayName: Demo Operator
    description: "# Demo\n\nRuns demos.\nWell."
    provider: {name: opkit}
    annotations: {capabilities: Seamless Upgrades, categories: "Database, Streaming", alm-examples: '[{"kind":"Widget"}]'}
---
schema: olm.bundle
package: demo
name: demo.v3.0.0
image: r/demo:3
properties:
- {type: olm.package, value: {packageName: demo, version: 3.0.0}}
"##;
        let catalog = opkit_olm::catalog::parse_documents(text, std::path::Path::new("t")).unwrap();
        let [p] = of_catalog("ops", &catalog).try_into().unwrap();
        assert_eq!(p.display_name, "Demo Operator");
        assert_eq!(p.summary, "Runs demos. Well.");
        assert_eq!(p.capabilities, "Seamless Upgrades");
        assert_eq!(p.categories, ["Database", "Streaming"]);
        assert_eq!(p.provider, "opkit");
        assert_eq!(p.latest, "2.0.0");
        assert_eq!(
            p.channels,
            [
                (
                    "stable".to_string(),
                    vec!["2.0.0".to_string(), "1.0.0".into()]
                ),
                ("alpha".to_string(), vec!["3.0.0".to_string()]),
            ]
        );
        assert_eq!(
            p.icon.as_deref(),
            Some("data:image/svg+xml;base64,PHN2Zy8+")
        );
        assert_eq!(
            p.examples.as_deref(),
            Some("[\n  {\n    \"kind\": \"Widget\"\n  }\n]")
        );
    }
}
