//! Printing a catalog as opm does: per package (by name) its `olm.package`, its channels by
//! name, its bundles by name, its other documents by schema, its deprecations; then documents
//! of no package. YAML documents each start with `---` and have their keys sorted (Go's YAML
//! writer sorts them); JSON documents keep opm's field order, indented by four spaces.

use std::collections::BTreeSet;

use serde::Serialize;
use serde_json::Value;

use super::{Bundle, Catalog, Channel, Deprecation, Package};

/// Output format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// YAML documents, each after `---`.
    Yaml,
    /// JSON values, one after another.
    Json,
}

/// An output format opkit does not have.
#[derive(Debug, thiserror::Error)]
#[error("unknown output format {0:?} (yaml or json)")]
pub struct UnknownFormat(pub String);

impl std::str::FromStr for Format {
    type Err = UnknownFormat;
    fn from_str(s: &str) -> Result<Format, UnknownFormat> {
        match s {
            "yaml" => Ok(Format::Yaml),
            "json" => Ok(Format::Json),
            other => Err(UnknownFormat(other.to_string())),
        }
    }
}

/// Why a catalog could not be printed.
#[derive(Debug, thiserror::Error)]
#[error("cannot serialize the catalog: {0}")]
pub struct WriteError(String);

/// One document of the catalog, typed (serializes in opm's field order).
#[derive(Clone, Copy, Debug, Serialize)]
#[serde(untagged)]
pub enum Document<'a> {
    /// `olm.package`.
    Package(&'a Package),
    /// `olm.channel`.
    Channel(&'a Channel),
    /// `olm.bundle`.
    Bundle(&'a Bundle),
    /// `olm.deprecations`.
    Deprecation(&'a Deprecation),
    /// Any other schema.
    Other(&'a Value),
}

/// The catalog's documents in opm's order.
pub fn ordered_documents(catalog: &Catalog) -> Vec<Document<'_>> {
    let packages: BTreeSet<&str> = catalog
        .packages
        .iter()
        .map(|p| p.name.as_str())
        .chain(catalog.channels.iter().map(|c| c.package.as_str()))
        .chain(catalog.bundles.iter().map(|b| b.package.as_str()))
        .chain(catalog.deprecations.iter().map(|d| d.package.as_str()))
        .chain(catalog.others.iter().map(|o| o.package.as_str()))
        .filter(|p| !p.is_empty())
        .collect();
    let mut docs = Vec::new();
    for pkg in packages {
        docs.extend(
            catalog
                .packages
                .iter()
                .filter(|p| p.name == pkg)
                .map(Document::Package),
        );
        let mut channels: Vec<_> = catalog
            .channels
            .iter()
            .filter(|c| c.package == pkg)
            .collect();
        channels.sort_by(|a, b| a.name.cmp(&b.name));
        docs.extend(channels.into_iter().map(Document::Channel));
        let mut bundles: Vec<_> = catalog
            .bundles
            .iter()
            .filter(|b| b.package == pkg)
            .collect();
        bundles.sort_by(|a, b| a.name.cmp(&b.name));
        docs.extend(bundles.into_iter().map(Document::Bundle));
        let mut others: Vec<_> = catalog.others.iter().filter(|o| o.package == pkg).collect();
        others.sort_by(|a, b| a.schema.cmp(&b.schema));
        docs.extend(others.into_iter().map(|o| Document::Other(&o.blob)));
        docs.extend(
            catalog
                .deprecations
                .iter()
                .filter(|d| d.package == pkg)
                .map(Document::Deprecation),
        );
    }
    // Documents of no package (a channel or bundle without one is kept too, so that
    // rendering never drops what validation should report).
    docs.extend(
        catalog
            .packages
            .iter()
            .filter(|p| p.name.is_empty())
            .map(Document::Package),
    );
    docs.extend(
        catalog
            .channels
            .iter()
            .filter(|c| c.package.is_empty())
            .map(Document::Channel),
    );
    docs.extend(
        catalog
            .bundles
            .iter()
            .filter(|b| b.package.is_empty())
            .map(Document::Bundle),
    );
    docs.extend(
        catalog
            .others
            .iter()
            .filter(|o| o.package.is_empty())
            .map(|o| Document::Other(&o.blob)),
    );
    docs
}

/// The catalog printed in `format`.
pub fn write_catalog(catalog: &Catalog, format: Format) -> Result<String, WriteError> {
    let mut out = String::new();
    for doc in ordered_documents(catalog) {
        match format {
            Format::Yaml => {
                // Through a JSON value: its maps are sorted, as Go's YAML writer sorts keys.
                let value = serde_json::to_value(doc).map_err(|e| WriteError(e.to_string()))?;
                out.push_str("---\n");
                out.push_str(
                    &serde_yaml::to_string(&value).map_err(|e| WriteError(e.to_string()))?,
                );
            }
            Format::Json => {
                let mut buf = Vec::new();
                let fmt = serde_json::ser::PrettyFormatter::with_indent(b"    ");
                let mut ser = serde_json::Serializer::with_formatter(&mut buf, fmt);
                doc.serialize(&mut ser)
                    .map_err(|e| WriteError(e.to_string()))?;
                out.push_str(&String::from_utf8_lossy(&buf));
                out.push('\n');
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::parse_documents;
    use std::path::Path;

    const CATALOG: &str = "schema: olm.bundle\npackage: b\nname: b.v1\nimage: x\n---\nschema: olm.package\nname: b\ndefaultChannel: s\n---\nschema: olm.channel\npackage: b\nname: s\nentries: [{name: b.v1}]\n---\nschema: olm.package\nname: a\ndefaultChannel: s\n---\nschema: custom\nvalue: 1\n";

    #[test]
    fn orders_documents_as_opm_does() {
        let c = parse_documents(CATALOG, Path::new("t")).unwrap();
        let schemas: Vec<String> = ordered_documents(&c)
            .iter()
            .map(|d| serde_json::to_value(d).unwrap())
            .map(|d| {
                format!(
                    "{} {}",
                    d["schema"].as_str().unwrap(),
                    d["name"].as_str().unwrap_or("")
                )
            })
            .collect();
        assert_eq!(
            schemas,
            [
                "olm.package a",
                "olm.package b",
                "olm.channel s",
                "olm.bundle b.v1",
                "custom "
            ]
        );
    }

    #[test]
    fn yaml_keys_are_sorted_and_json_keeps_field_order() {
        let c = parse_documents(CATALOG, Path::new("t")).unwrap();
        let yaml = write_catalog(&c, Format::Yaml).unwrap();
        assert!(
            yaml.starts_with("---\ndefaultChannel: s\nname: a\nschema: olm.package\n---\n"),
            "{yaml}"
        );
        let json = write_catalog(&c, Format::Json).unwrap();
        assert!(json.starts_with("{\n    \"schema\": \"olm.package\",\n    \"name\": \"a\",\n    \"defaultChannel\": \"s\"\n}\n"), "{json}");
    }
}
