//! Label selectors of `aggregationRule.clusterRoleSelectors`.
//!
//! Only the structured form (`matchLabels` + `matchExpressions`) occurs in aggregation rules, so
//! this is the small matcher for that form with upstream's validity rules
//! (`LabelSelectorAsSelector`): `In`/`NotIn` need values, `Exists`/`DoesNotExist` must have none,
//! other operators are invalid, and an empty selector matches everything.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

/// Whether `selector` matches `labels`; `Err` describes an invalid selector.
pub(crate) fn matches(
    selector: &LabelSelector,
    labels: &BTreeMap<String, String>,
) -> Result<bool, String> {
    validate(selector)?;
    let label_matches = selector
        .match_labels
        .iter()
        .flatten()
        .all(|(key, value)| labels.get(key) == Some(value));
    let expressions_match = selector.match_expressions.iter().flatten().all(|req| {
        let values = req.values.as_deref().unwrap_or(&[]);
        let value = labels.get(&req.key);
        match req.operator.as_str() {
            "In" => value.is_some_and(|v| values.contains(v)),
            "NotIn" => value.is_none_or(|v| !values.contains(v)),
            "Exists" => value.is_some(),
            // validate() admits nothing else.
            _ => value.is_none(),
        }
    });
    Ok(label_matches && expressions_match)
}

/// Upstream's checks when a selector is converted for use.
pub(crate) fn validate(selector: &LabelSelector) -> Result<(), String> {
    for req in selector.match_expressions.iter().flatten() {
        let values = req.values.as_deref().unwrap_or(&[]);
        match req.operator.as_str() {
            "In" | "NotIn" if values.is_empty() => {
                return Err(format!(
                    "values: Invalid value: []string(nil): for 'in', 'notin' operators, values set can't be empty (key {:?})",
                    req.key
                ));
            }
            "Exists" | "DoesNotExist" if !values.is_empty() => {
                return Err(format!(
                    "values: Invalid value: {:?}: values set must be empty for exists and does not exist (key {:?})",
                    values, req.key
                ));
            }
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            other => return Err(format!("{other:?} is not a valid label selector operator")),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    fn expr(key: &str, operator: &str, values: &[&str]) -> LabelSelectorRequirement {
        LabelSelectorRequirement {
            key: key.to_owned(),
            operator: operator.to_owned(),
            values: (!values.is_empty()).then(|| values.iter().map(|v| (*v).to_owned()).collect()),
        }
    }

    fn selector(exprs: Vec<LabelSelectorRequirement>) -> LabelSelector {
        LabelSelector {
            match_expressions: Some(exprs),
            match_labels: None,
        }
    }

    #[test]
    fn empty_selector_matches_everything() {
        assert_eq!(matches(&LabelSelector::default(), &labels(&[])), Ok(true));
    }

    #[test]
    fn match_labels_require_equal_values() {
        let s = LabelSelector {
            match_labels: Some(labels(&[("a", "1")])),
            match_expressions: None,
        };
        assert_eq!(matches(&s, &labels(&[("a", "1"), ("b", "2")])), Ok(true));
        assert_eq!(matches(&s, &labels(&[("a", "2")])), Ok(false));
        assert_eq!(matches(&s, &labels(&[])), Ok(false));
    }

    #[test]
    fn expressions_follow_set_based_semantics() {
        let in_ = selector(vec![expr("tier", "In", &["web", "db"])]);
        assert_eq!(matches(&in_, &labels(&[("tier", "db")])), Ok(true));
        assert_eq!(matches(&in_, &labels(&[("tier", "cache")])), Ok(false));
        assert_eq!(matches(&in_, &labels(&[])), Ok(false));

        let not_in = selector(vec![expr("tier", "NotIn", &["web"])]);
        assert_eq!(matches(&not_in, &labels(&[("tier", "db")])), Ok(true));
        assert_eq!(matches(&not_in, &labels(&[])), Ok(true));
        assert_eq!(matches(&not_in, &labels(&[("tier", "web")])), Ok(false));

        let exists = selector(vec![expr("tier", "Exists", &[])]);
        assert_eq!(matches(&exists, &labels(&[("tier", "")])), Ok(true));
        assert_eq!(matches(&exists, &labels(&[])), Ok(false));

        let absent = selector(vec![expr("tier", "DoesNotExist", &[])]);
        assert_eq!(matches(&absent, &labels(&[])), Ok(true));
        assert_eq!(matches(&absent, &labels(&[("tier", "x")])), Ok(false));
    }

    #[test]
    fn invalid_selectors_are_errors() {
        assert!(matches(&selector(vec![expr("k", "In", &[])]), &labels(&[])).is_err());
        assert!(matches(&selector(vec![expr("k", "Exists", &["v"])]), &labels(&[])).is_err());
        assert!(matches(&selector(vec![expr("k", "Gt", &["1"])]), &labels(&[])).is_err());
    }
}
