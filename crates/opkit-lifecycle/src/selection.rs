//! Which `ClusterCatalog`s an extension resolves against: `spec.source.catalog.selector`, a
//! `metav1.LabelSelector` (`matchLabels`, `matchExpressions`) over the catalogs' labels,
//! matched with the project's one selector implementation (`opkit-apimachinery`). Every
//! catalog carries catalogd's [`METADATA_NAME_LABEL`] with its own name (the catalog
//! controller writes it; matching reads the name, so a catalog is selectable by name before
//! the label is written, and a label claiming another name does not count). No selector
//! selects every catalog; an empty one too, as upstream.

use std::collections::BTreeMap;

use kube::ResourceExt;
use opkit_apimachinery::LabelSelector;

use crate::api::{ClusterCatalog, ClusterExtension, METADATA_NAME_LABEL};

/// An extension's catalog selector; `Err` says why it is not one.
pub(crate) fn selector_of(ext: &ClusterExtension) -> Result<Option<LabelSelector>, String> {
    let Some(selector) = ext
        .spec
        .source
        .catalog
        .as_ref()
        .and_then(|c| c.selector.as_ref())
    else {
        return Ok(None);
    };
    LabelSelector::try_from(selector)
        .map(Some)
        .map_err(|e| format!("spec.source.catalog.selector is not a label selector: {e}"))
}

/// Whether `selector` (none: all) selects catalog `name` with `labels`.
pub(crate) fn selects(
    selector: Option<&LabelSelector>,
    name: &str,
    labels: Option<&BTreeMap<String, String>>,
) -> bool {
    selector.is_none_or(|s| {
        s.matches_with(|key| match key {
            METADATA_NAME_LABEL => Some(name),
            _ => labels?.get(key).map(String::as_str),
        })
    })
}

/// Whether `ext` may resolve against `catalog` (an invalid selector selects nothing: the
/// extension is Blocked until it is fixed, which is a change of its own).
pub(crate) fn may_use(ext: &ClusterExtension, catalog: &ClusterCatalog) -> bool {
    selector_of(ext).is_ok_and(|s| selects(s.as_ref(), &catalog.name_any(), Some(catalog.labels())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{CatalogFilter, ClusterExtensionSpec, ExtensionSource};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
        LabelSelector as Selector, LabelSelectorRequirement,
    };

    fn ext(selector: Option<Selector>) -> ClusterExtension {
        ClusterExtension::new(
            "demo",
            ClusterExtensionSpec {
                source: ExtensionSource {
                    catalog: Some(CatalogFilter {
                        package_name: "demo".into(),
                        selector,
                        ..CatalogFilter::default()
                    }),
                    ..ExtensionSource::default()
                },
                ..ClusterExtensionSpec::default()
            },
        )
    }

    fn catalog(name: &str, labels: &[(&str, &str)]) -> ClusterCatalog {
        let mut cc = ClusterCatalog::new(name, Default::default());
        cc.metadata.labels = Some(
            labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        );
        cc
    }

    #[test]
    fn match_labels_and_expressions_select_catalogs_and_the_name_label_is_always_the_name() {
        let by_name = ext(Some(Selector {
            match_labels: Some([(METADATA_NAME_LABEL.to_string(), "ops".to_string())].into()),
            ..Selector::default()
        }));
        assert!(may_use(&by_name, &catalog("ops", &[])));
        assert!(!may_use(&by_name, &catalog("other", &[])));
        // A label claiming another name does not make a catalog that one.
        assert!(!may_use(
            &by_name,
            &catalog("other", &[(METADATA_NAME_LABEL, "ops")])
        ));

        let not_test = ext(Some(Selector {
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: "tier".into(),
                operator: "NotIn".into(),
                values: Some(vec!["test".into()]),
            }]),
            ..Selector::default()
        }));
        assert!(may_use(&not_test, &catalog("a", &[("tier", "prod")])));
        assert!(may_use(&not_test, &catalog("b", &[])));
        assert!(!may_use(&not_test, &catalog("c", &[("tier", "test")])));

        assert!(may_use(&ext(None), &catalog("any", &[])));
        assert!(may_use(
            &ext(Some(Selector::default())),
            &catalog("any", &[])
        ));
    }

    #[test]
    fn an_invalid_selector_says_why_and_selects_nothing() {
        let bad = ext(Some(Selector {
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: "tier".into(),
                operator: "Near".into(),
                values: None,
            }]),
            ..Selector::default()
        }));
        let error = selector_of(&bad).unwrap_err();
        assert!(
            error.starts_with("spec.source.catalog.selector is not a label selector: "),
            "{error}"
        );
        assert!(!may_use(&bad, &catalog("ops", &[])));
    }
}
