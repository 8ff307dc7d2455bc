//! How the merge learns, field by field, what kind of value it is merging.
//!
//! Upstream looks the metadata up in the Go struct tags (`patchStrategy`, `patchMergeKey`) of the
//! typed object, or in the OpenAPI extensions (`x-kubernetes-patch-strategy`,
//! `x-kubernetes-patch-merge-key`). Here the lookup is a trait, [`PatchMeta`], walked alongside
//! the document: each lookup answers for one field of the current object and hands back the
//! metadata of that field's value (for a list: of its items) for the next level down.

use std::borrow::Cow;
use std::fmt;

use crate::StrategicError;

/// The patch strategy of a field (`patchStrategy` without `retainKeys`, which is a flag of its
/// own, [`FieldMeta::retain_keys`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum PatchStrategy {
    /// No strategy declared: maps are merged key by key, lists are replaced as a whole.
    #[default]
    Default,
    /// `merge`: lists are merged — lists of maps by their merge key, lists of scalars as a set.
    Merge,
    /// `replace`: the value in the patch replaces the current one as a whole, maps included.
    Replace,
}

/// `x-kubernetes-list-type` (`+listType`), the list semantics server-side apply uses. Kept for
/// information (and for server-side apply later); the strategic merge itself only follows
/// [`PatchStrategy`] and the merge key, as upstream does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ListType {
    /// The list is one value, replaced as a whole.
    Atomic,
    /// A set of scalars.
    Set,
    /// A map keyed by [`FieldMeta::list_map_keys`].
    Map,
}

/// The patch metadata of one field, as [`PatchMeta::field`] answers it.
pub struct FieldMeta<'a> {
    /// How the field's value is merged.
    pub strategy: PatchStrategy,
    /// `patchStrategy` includes `retainKeys`: a patch of this map (or of each item of this list)
    /// may carry a `$retainKeys` directive. Applying a patch honours `$retainKeys` wherever it
    /// appears, as upstream does; the flag matters to whoever computes patches.
    pub retain_keys: bool,
    /// The merge key(s) of a list of maps with [`PatchStrategy::Merge`]: two items are the same
    /// item when they agree on every key. Built-in kinds always have exactly one
    /// (`patchMergeKey`); [`crate::SchemaPatchMeta`] may give several (`x-kubernetes-list-map-keys`).
    pub merge_keys: Vec<Cow<'a, str>>,
    /// `x-kubernetes-list-type`, when known.
    pub list_type: Option<ListType>,
    /// `x-kubernetes-list-map-keys`, when known (server-side apply's keys, which can differ from
    /// the strategic merge key: container ports merge by `containerPort` but are keyed by
    /// `containerPort` and `protocol`).
    pub list_map_keys: Vec<Cow<'a, str>>,
    /// The metadata of the field's value; for a list, of each of its items.
    pub value: Box<dyn PatchMeta + 'a>,
}

impl FieldMeta<'_> {
    /// A field without any patch metadata, whose value has none either: maps merge, lists are
    /// replaced.
    pub fn plain() -> FieldMeta<'static> {
        FieldMeta {
            strategy: PatchStrategy::Default,
            retain_keys: false,
            merge_keys: Vec::new(),
            list_type: None,
            list_map_keys: Vec::new(),
            value: Box::new(NoPatchMeta),
        }
    }
}

impl fmt::Debug for FieldMeta<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FieldMeta")
            .field("strategy", &self.strategy)
            .field("retain_keys", &self.retain_keys)
            .field("merge_keys", &self.merge_keys)
            .field("list_type", &self.list_type)
            .field("list_map_keys", &self.list_map_keys)
            .field("value", &self.value.type_name())
            .finish()
    }
}

/// The source of patch metadata for one object type (a Go struct upstream).
///
/// Implementations: [`crate::BuiltinPatchMeta`] (the built-in kinds), [`crate::SchemaPatchMeta`]
/// (an OpenAPI v3 / CRD schema) and [`NoPatchMeta`] (none at all).
pub trait PatchMeta {
    /// The metadata of field `name` of this object. Fields the implementation does not know
    /// should answer [`FieldMeta::plain`] rather than fail: the typed decoding after the merge
    /// is the place where unknown fields are reported (or dropped), as upstream.
    fn field(&self, name: &str) -> Result<FieldMeta<'_>, StrategicError>;

    /// The name of the type, for error messages.
    fn type_name(&self) -> Cow<'_, str> {
        Cow::Borrowed("object")
    }
}

/// No patch metadata: every map merges, every list is replaced. With it, a strategic merge patch
/// behaves like a JSON merge patch (RFC 7386) that also understands the `$patch` directives.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NoPatchMeta;

impl PatchMeta for NoPatchMeta {
    fn field(&self, _name: &str) -> Result<FieldMeta<'_>, StrategicError> {
        Ok(FieldMeta::plain())
    }
}

impl<T: PatchMeta + ?Sized> PatchMeta for &T {
    fn field(&self, name: &str) -> Result<FieldMeta<'_>, StrategicError> {
        (**self).field(name)
    }

    fn type_name(&self) -> Cow<'_, str> {
        (**self).type_name()
    }
}
