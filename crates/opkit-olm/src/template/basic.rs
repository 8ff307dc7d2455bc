//! `olm.template.basic`: a catalog in which each `olm.bundle` is only `{schema, image}`; each is
//! replaced by the rendered bundle, everything else is kept as written.

use std::path::Path;

use serde_json::Value;

use super::{BundleSource, TemplateError};
use crate::catalog::{self, Catalog};
use crate::documents;

/// The basic template's schema.
pub const SCHEMA: &str = "olm.template.basic";

/// Renders a basic template (YAML or JSON text; `origin` names it in errors), rendering each
/// bundle reference with `source`.
pub fn render_basic(
    text: &str,
    origin: &Path,
    source: &mut BundleSource<'_>,
) -> Result<Catalog, TemplateError> {
    let doc = documents::parse_documents(text)
        .map_err(|(_, m)| TemplateError::Parse(m))?
        .into_iter()
        .next()
        .unwrap_or(Value::Null);
    let schema = doc["schema"].as_str().unwrap_or_default();
    if schema != SCHEMA {
        return Err(TemplateError::Schema {
            found: schema.to_string(),
            expected: SCHEMA,
        });
    }
    let entries = match &doc["entries"] {
        Value::Array(a) => a.clone(),
        Value::Null => Vec::new(),
        _ => return Err(TemplateError::Parse("entries: expected a list".into())),
    };
    let mut cfg = Catalog::default();
    catalog::load::add_documents(&mut cfg, entries, origin)?;
    let references = std::mem::take(&mut cfg.bundles);
    for b in references {
        let template_only = !b.image.is_empty()
            && b.package.is_empty()
            && b.properties.is_empty()
            && b.related_images.is_empty();
        if !template_only {
            return Err(TemplateError::BundleEntry(if b.name.is_empty() {
                b.image.clone()
            } else {
                b.name.clone()
            }));
        }
        cfg.bundles.push(source(&b.image)?.bundle);
    }
    Ok(cfg)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake(reference: &str) -> Result<super::super::Rendered, TemplateError> {
        let bundle = catalog::Bundle {
            schema: "olm.bundle".into(),
            name: format!("foo.{reference}"),
            package: "foo".into(),
            image: reference.into(),
            ..Default::default()
        };
        Ok(super::super::Rendered { bundle, csv: None })
    }

    #[test]
    fn replaces_bundle_references_and_keeps_the_rest() {
        let t = "schema: olm.template.basic\nentries:\n- schema: olm.package\n  name: foo\n  defaultChannel: s\n- schema: olm.bundle\n  image: v1\n";
        let c = render_basic(t, Path::new("t.yaml"), &mut fake).unwrap();
        assert_eq!(c.packages[0].name, "foo");
        assert_eq!(c.bundles[0].name, "foo.v1");
    }

    #[test]
    fn refuses_a_bundle_entry_with_more_than_an_image() {
        let t = "schema: olm.template.basic\nentries:\n- schema: olm.bundle\n  image: v1\n  package: foo\n";
        let err = render_basic(t, Path::new("t.yaml"), &mut fake).unwrap_err();
        assert!(matches!(err, TemplateError::BundleEntry(_)), "{err}");
    }

    #[test]
    fn refuses_another_schema() {
        let err = render_basic("schema: olm.semver\n", Path::new("t.yaml"), &mut fake).unwrap_err();
        assert!(
            err.to_string().contains("should be \"olm.template.basic\""),
            "{err}"
        );
    }
}
