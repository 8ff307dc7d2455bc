//! Defaulting, as upstream's `structuraldefaulting.Default`.
//!
//! Defaults are applied after pruning (they were pruned and validated when the CRD was
//! accepted), are deep copies, and are applied recursively, so defaults nested inside a
//! defaulted object apply too. A missing property gets its default; so does an explicit `null`
//! unless the property is `nullable` (then `null` is a legitimate value and is kept). Array items
//! and `additionalProperties` values that are a non-nullable `null` are replaced by the item's /
//! value's default.

use serde_json::Value;

use crate::node::SchemaNode;
use crate::prune::MAX_VALUE_DEPTH;

fn is_non_nullable_null(x: &Value, s: &SchemaNode) -> bool {
    x.is_null() && !s.nullable
}

/// Applies the defaults of `s` to `x` in place.
pub(crate) fn apply(x: &mut Value, s: &SchemaNode, depth: usize) {
    if depth > MAX_VALUE_DEPTH {
        return;
    }
    match x {
        Value::Object(m) => {
            for (k, prop) in &s.properties {
                let Some(d) = &prop.default else {
                    continue;
                };
                match m.get_mut(k) {
                    None => {
                        m.insert(k.clone(), d.clone());
                    }
                    Some(v) if is_non_nullable_null(v, prop) => *v = d.clone(),
                    Some(_) => {}
                }
            }
            for (k, v) in m.iter_mut() {
                if let Some(prop) = s.properties.get(k) {
                    apply(v, prop, depth + 1);
                } else if let Some(ap) = s.additional_properties_schema() {
                    if is_non_nullable_null(v, ap) {
                        *v = ap.default.clone().unwrap_or(Value::Null);
                    }
                    apply(v, ap, depth + 1);
                }
            }
        }
        Value::Array(a) => {
            let Some(items) = s.items.as_deref() else {
                return;
            };
            for v in a.iter_mut() {
                if is_non_nullable_null(v, items) {
                    *v = items.default.clone().unwrap_or(Value::Null);
                }
                apply(v, items, depth + 1);
            }
        }
        _ => {}
    }
}
