//! Label and field selectors of a list or watch.

use serde_json::Value;

use crate::error::{ApiError, ApiResult};
use crate::object;
use crate::registry::Resource;
use crate::request::Query;
use opkit_apimachinery::fields::FieldSelector;
use opkit_apimachinery::labels::LabelSelector;

/// Label and field selectors of a list or watch.
pub(crate) struct Selectors {
    labels: Option<LabelSelector>,
    fields: Option<FieldSelector>,
    /// Objects are stored events: fields are read with [`crate::events::field_value`].
    events: bool,
}

impl Selectors {
    /// Parses `labelSelector` and `fieldSelector`, checking fields are supported for the resource.
    pub(crate) fn parse(res: &Resource, query: &Query) -> ApiResult<Selectors> {
        let labels = match query.get("labelSelector").filter(|s| !s.trim().is_empty()) {
            Some(s) => {
                Some(LabelSelector::parse(s).map_err(|e| ApiError::bad_request(e.to_string()))?)
            }
            None => None,
        };
        let fields = match query.get("fieldSelector").filter(|s| !s.trim().is_empty()) {
            Some(s) => {
                let bad = |e: opkit_apimachinery::fields::FieldSelectorError| {
                    ApiError::bad_request(e.to_string())
                };
                let sel = FieldSelector::parse(s).map_err(bad)?;
                let checked = match (res.custom(), res.view) {
                    (Some(c), _) => sel.for_custom_resource(res.namespaced, &c.selectable_fields),
                    (None, Some(view)) => view_selector(&sel, view)
                        .map_err(bad)?
                        .for_resource(view.storage_group, view.storage_plural),
                    (None, None) => sel.for_resource(&res.group, &res.plural),
                };
                Some(checked.map_err(bad)?)
            }
            None => None,
        };
        Ok(Selectors {
            labels,
            fields,
            events: crate::events::stores_events(res),
        })
    }

    /// No selector at all.
    pub(crate) fn is_empty(&self) -> bool {
        self.labels.is_none() && self.fields.is_none()
    }

    /// Whether an object (as JSON bytes) matches.
    pub(crate) fn matches_bytes(&self, bytes: &[u8]) -> bool {
        if self.is_empty() {
            return true;
        }
        match serde_json::from_slice::<Value>(bytes) {
            Ok(v) => self.matches(&v),
            Err(_) => false,
        }
    }

    /// Whether an object matches.
    pub(crate) fn matches(&self, obj: &Value) -> bool {
        if let Some(l) = &self.labels
            && !l.matches(object::labels(obj))
        {
            return false;
        }
        if let Some(f) = &self.fields {
            let matched = if self.events {
                f.matches(|field| crate::events::field_value(obj, field))
            } else {
                f.matches_object(obj)
            };
            if !matched {
                return false;
            }
        }
        true
    }
}

/// A view's field selector in the labels of the resource it is a view of (upstream's field
/// label conversion), or upstream's error for the first label the view does not support.
fn view_selector(
    sel: &FieldSelector,
    view: &crate::registry::View,
) -> Result<FieldSelector, opkit_apimachinery::fields::FieldSelectorError> {
    use opkit_apimachinery::fields::{FieldSelectorError, escape_value};
    let mut terms = Vec::with_capacity(sel.requirements().len());
    for r in sel.requirements() {
        let Some(label) = (view.field_label)(&r.field) else {
            return Err(FieldSelectorError::Unsupported {
                field: r.field.clone(),
                message: format!("field label not supported: {}", r.field),
            });
        };
        terms.push(format!(
            "{label}{}{}",
            r.op.as_str(),
            escape_value(&r.value)
        ));
    }
    FieldSelector::parse(&terms.join(","))
}
