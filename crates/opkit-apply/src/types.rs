//! Type information for field sets: which lists are atomic, sets or keyed maps, and which
//! objects are atomic, read from an [`opkit_strategic::PatchMeta`].
//!
//! Upstream reads it from the OpenAPI models (`x-kubernetes-list-type`, `-list-map-keys`,
//! `-map-type`); the built-in kinds' struct tags and a CRD's schema carry the same facts and are
//! already modelled by `PatchMeta`, so the same trait serves both merges.

use serde_json::{Map, Value};

use opkit_strategic::{FieldMeta, ListType, PatchMeta, PatchStrategy};

use crate::fieldset::canonical_json;

/// The type information of one object kind.
#[derive(Clone, Copy)]
pub struct Types<'a> {
    pub(crate) meta: &'a dyn PatchMeta,
    pub(crate) builtin: bool,
}

impl<'a> Types<'a> {
    /// A built-in kind: lists with a `patchMergeKey` are maps keyed by it (or by their
    /// `listMapKeys`), `selector` / `nodeSelector` objects are atomic, other lists atomic.
    pub fn builtin(meta: &'a dyn PatchMeta) -> Types<'a> {
        Types {
            meta,
            builtin: true,
        }
    }

    /// A custom resource: lists are what `x-kubernetes-list-type` says, atomic without it.
    pub fn custom(meta: &'a dyn PatchMeta) -> Types<'a> {
        Types {
            meta,
            builtin: false,
        }
    }
}

/// How a list's items are told apart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ListShape {
    /// The list is one value.
    Atomic,
    /// Items are scalars identified by their value.
    Set,
    /// Items are objects identified by these fields.
    Map(Vec<String>),
}

/// The metadata of field `name` of an object described by `meta` (plain when unknown or when
/// the lookup fails: the merge then treats the value as untyped).
pub(crate) fn field<'m>(meta: &'m dyn PatchMeta, name: &str) -> FieldMeta<'m> {
    meta.field(name).unwrap_or_else(|_| FieldMeta::plain())
}

/// Whether the object held by field `name` is one value.
pub(crate) fn object_is_atomic(fm: &FieldMeta<'_>, name: &str, builtin: bool) -> bool {
    fm.strategy == PatchStrategy::Replace
        || (builtin && matches!(name, "selector" | "nodeSelector"))
}

/// The shape of the list held by a field.
pub(crate) fn list_shape(fm: &FieldMeta<'_>) -> ListShape {
    let keys = |v: &[std::borrow::Cow<'_, str>]| v.iter().map(|k| k.to_string()).collect();
    match fm.list_type {
        Some(ListType::Atomic) => ListShape::Atomic,
        Some(ListType::Set) => ListShape::Set,
        Some(ListType::Map) if !fm.list_map_keys.is_empty() => {
            ListShape::Map(keys(&fm.list_map_keys))
        }
        Some(ListType::Map) if !fm.merge_keys.is_empty() => ListShape::Map(keys(&fm.merge_keys)),
        Some(ListType::Map) => ListShape::Atomic,
        None => match fm.strategy {
            PatchStrategy::Merge if !fm.merge_keys.is_empty() => {
                ListShape::Map(keys(&fm.merge_keys))
            }
            PatchStrategy::Merge => ListShape::Set,
            _ => ListShape::Atomic,
        },
    }
}

/// The path elements of a list's items, or `None` when some item cannot be identified (then
/// the list is handled as atomic).
pub(crate) fn item_elements(
    shape: &ListShape,
    items: &[Value],
    builtin: bool,
) -> Option<Vec<String>> {
    match shape {
        ListShape::Atomic => None,
        ListShape::Set => Some(
            items
                .iter()
                .map(|v| format!("v:{}", canonical_json(v)))
                .collect(),
        ),
        ListShape::Map(keys) => items
            .iter()
            .map(|item| key_element(keys, item, builtin))
            .collect(),
    }
}

/// `k:{...}` for one item of a keyed list. A missing `protocol` key takes its schema default
/// (`TCP`) on built-in kinds, as upstream does with the OpenAPI default; an item with none of
/// the keys cannot be identified.
pub(crate) fn key_element(keys: &[String], item: &Value, builtin: bool) -> Option<String> {
    let obj = item.as_object()?;
    let mut key = Map::new();
    for k in keys {
        match obj.get(k) {
            Some(v) if !v.is_null() => {
                key.insert(k.clone(), v.clone());
            }
            _ if builtin && k == "protocol" => {
                key.insert(k.clone(), Value::from("TCP"));
            }
            _ => {}
        }
    }
    if key.is_empty() {
        return None;
    }
    Some(format!("k:{}", canonical_json(&Value::Object(key))))
}
