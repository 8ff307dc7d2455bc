//! Applying a strategic merge patch: upstream's `StrategicMergeMapPatch` (apimachinery
//! `pkg/util/strategicpatch`, the server side of `application/strategic-merge-patch+json`).
//!
//! The rules, in the order they apply to each map of the patch:
//!
//! 1. `$patch: replace` → the map is the patch's map; `$patch: delete` → the map becomes `{}`
//!    (a parent that did not have it does not get it); `$patch: merge` → merged as usual.
//! 2. `$retainKeys: [..]` → the original keeps only the listed keys; the patch may only set
//!    listed keys.
//! 3. `$setElementOrder/<list>: [..]` → the list is merged now and then put in that order.
//! 4. Every other key: `null` deletes; a key the original lacks (or holds with another JSON type)
//!    takes the patch's value; maps merge recursively unless the field's strategy is `replace`;
//!    lists with strategy `merge` merge (maps by merge key, scalars as a set), other lists are
//!    replaced; scalars are replaced.
//! 5. `$deleteFromPrimitiveList/<list>: [..]` → those scalars leave the list.
//!
//! Merged lists keep upstream's order, which decides what `kubectl get -o yaml` shows and
//! whether a second `kubectl apply` changes anything: items named in the patch (or in its
//! `$setElementOrder`) take the patch's order, items only on the server keep theirs, and the two
//! runs are interleaved by the server's order (a new item goes before the server item it
//! precedes in the patch).
//!
//! Values copied from the patch are cleaned of directives and `null`s (upstream leaves some in,
//! for the typed decoding to drop), so the result is always a plain object.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use crate::StrategicError;
use crate::error::go_v;
use crate::meta::{FieldMeta, PatchMeta, PatchStrategy};

/// How deep the documents may nest (maps and lists, the top-level object being level 0) before
/// [`StrategicError::TooDeep`]; as deep as `serde_json` parses by default, so nothing a server
/// decoded is refused.
pub const MAX_DEPTH: usize = 128;

const PATCH: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList";
const SET_ELEMENT_ORDER: &str = "$setElementOrder";

type Result<T> = std::result::Result<T, StrategicError>;

/// Applies the strategic merge patch `patch` to `original`, learning the merge strategy of each
/// field from `meta`; returns the patched object. Both documents must be JSON objects (`null`
/// counts as `{}`).
///
/// ```
/// use opkit_strategic::{BuiltinPatchMeta, strategic_merge};
/// use serde_json::json;
/// let deployment = json!({"spec": {"template": {"spec": {"containers": [
///     {"name": "web", "image": "nginx:1.25"}, {"name": "log", "image": "busybox"}]}}}});
/// // What `kubectl set image deployment/x web=nginx:1.27` sends.
/// let patch = json!({"spec": {"template": {"spec": {"containers": [
///     {"name": "web", "image": "nginx:1.27"}]}}}});
/// let meta = BuiltinPatchMeta::for_kind("apps", "v1", "Deployment").unwrap();
/// let out = strategic_merge(&deployment, &patch, &meta).unwrap();
/// assert_eq!(out["spec"]["template"]["spec"]["containers"], json!([
///     {"name": "web", "image": "nginx:1.27"}, {"name": "log", "image": "busybox"}]));
/// ```
pub fn strategic_merge(original: &Value, patch: &Value, meta: &dyn PatchMeta) -> Result<Value> {
    strategic_merge_owned(original.clone(), patch.clone(), meta)
}

/// [`strategic_merge`] taking ownership of both documents (saves copying them).
pub fn strategic_merge_owned(original: Value, patch: Value, meta: &dyn PatchMeta) -> Result<Value> {
    let original = match original {
        Value::Object(m) => m,
        Value::Null => Map::new(),
        _ => return Err(StrategicError::InvalidDocument),
    };
    let patch = match patch {
        Value::Object(m) => m,
        Value::Null => Map::new(),
        _ => return Err(StrategicError::InvalidDocument),
    };
    // Checked up front, without recursion: the merge recurses along the patch and drops parts
    // of the original deep down, and neither may run out of stack.
    if deeper_than(&patch, MAX_DEPTH) || deeper_than(&original, MAX_DEPTH) {
        return Err(StrategicError::TooDeep { max: MAX_DEPTH });
    }
    merge_map(original, patch, meta, 0).map(Value::Object)
}

/// Whether some map or list inside `map` sits more than `max` levels below it (iterative).
fn deeper_than(map: &Map<String, Value>, max: usize) -> bool {
    let mut stack: Vec<(&Value, usize)> = map.values().map(|v| (v, 1)).collect();
    while let Some((v, depth)) = stack.pop() {
        match v {
            Value::Object(_) | Value::Array(_) if depth > max => return true,
            Value::Object(m) => stack.extend(m.values().map(|c| (c, depth + 1))),
            Value::Array(items) => stack.extend(items.iter().map(|c| (c, depth + 1))),
            _ => {}
        }
    }
    false
}

fn check_depth(depth: usize) -> Result<()> {
    if depth > MAX_DEPTH {
        return Err(StrategicError::TooDeep { max: MAX_DEPTH });
    }
    Ok(())
}

/// The field name after `prefix/` in a directive key such as `$setElementOrder/containers`.
fn directive_field<'k>(key: &'k str, prefix: &str) -> Option<&'k str> {
    key.strip_prefix(prefix)?.strip_prefix('/')
}

fn merge_map(
    mut original: Map<String, Value>,
    mut patch: Map<String, Value>,
    meta: &dyn PatchMeta,
    depth: usize,
) -> Result<Map<String, Value>> {
    check_depth(depth)?;

    // 1. `$patch` on the map itself.
    if let Some(directive) = patch.get(PATCH) {
        match directive.as_str() {
            Some("replace") => {
                patch.remove(PATCH);
                return clean_map(patch, depth);
            }
            Some("delete") => return Ok(Map::new()),
            Some("merge") => {
                patch.remove(PATCH);
            }
            _ => return Err(StrategicError::unknown_patch_type(directive, &patch)),
        }
    }

    // 2. `$retainKeys`.
    if let Some(retain) = patch.remove(RETAIN_KEYS) {
        let Value::Array(retain) = retain else {
            return Err(StrategicError::BadRetainKeys);
        };
        let retain: HashSet<&str> = retain.iter().filter_map(Value::as_str).collect();
        let retained = |k: &str| retain.contains(k);
        for (k, v) in &patch {
            if v.is_null()
                || k.starts_with(DELETE_FROM_PRIMITIVE_LIST)
                || k.starts_with(SET_ELEMENT_ORDER)
            {
                continue;
            }
            if !retained(k) {
                return Err(StrategicError::BadRetainKeys);
            }
        }
        original.retain(|k, _| retained(k));
    }

    // 3. `$setElementOrder/<list>`, which also merges the list.
    let orders: Vec<String> = patch
        .keys()
        .filter(|k| k.starts_with(SET_ELEMENT_ORDER))
        .cloned()
        .collect();
    for key in orders {
        let order = patch.remove(&key).unwrap_or(Value::Null);
        let field =
            directive_field(&key, SET_ELEMENT_ORDER).ok_or(StrategicError::BadSetElementOrder)?;
        let Value::Array(order) = order else {
            return Err(StrategicError::BadSetElementOrder);
        };
        merge_with_element_order(&mut original, &mut patch, field, &order, meta, depth)?;
    }

    // 4. Every other key; 5. `$deleteFromPrimitiveList/<list>` last.
    let mut deletions = Vec::new();
    for (key, value) in patch {
        if key.starts_with(DELETE_FROM_PRIMITIVE_LIST) {
            deletions.push((key, value));
            continue;
        }
        merge_field(&mut original, key, value, meta, depth)?;
    }
    for (key, value) in deletions {
        let field = directive_field(&key, DELETE_FROM_PRIMITIVE_LIST)
            .ok_or(StrategicError::BadPrimitiveList)?;
        delete_from_primitive_list(&mut original, field, value)?;
    }
    Ok(original)
}

/// The shape checks of a map's directives that [`merge_map`] makes while applying them:
/// `$retainKeys` is a list naming every non-null key of the map, `$setElementOrder/<list>` a
/// list with a field name, `$deleteFromPrimitiveList/<list>` a field name and no maps or lists.
fn check_directives(patch: &Map<String, Value>) -> Result<()> {
    if let Some(retain) = patch.get(RETAIN_KEYS) {
        let Value::Array(retain) = retain else {
            return Err(StrategicError::BadRetainKeys);
        };
        let retain: HashSet<&str> = retain.iter().filter_map(Value::as_str).collect();
        let unretained = patch.iter().any(|(k, v)| {
            !(v.is_null()
                || k == RETAIN_KEYS
                || k == PATCH
                || k.starts_with(DELETE_FROM_PRIMITIVE_LIST)
                || k.starts_with(SET_ELEMENT_ORDER)
                || retain.contains(k.as_str()))
        });
        if unretained {
            return Err(StrategicError::BadRetainKeys);
        }
    }
    for (key, value) in patch {
        if key.starts_with(SET_ELEMENT_ORDER)
            && (directive_field(key, SET_ELEMENT_ORDER).is_none() || !value.is_array())
        {
            return Err(StrategicError::BadSetElementOrder);
        }
        if key.starts_with(DELETE_FROM_PRIMITIVE_LIST) {
            if directive_field(key, DELETE_FROM_PRIMITIVE_LIST).is_none() {
                return Err(StrategicError::BadPrimitiveList);
            }
            if let Value::Array(items) = value
                && items.iter().any(|v| v.is_object() || v.is_array())
            {
                return Err(StrategicError::BadPrimitiveList);
            }
        }
    }
    Ok(())
}

/// Step 4 for one key of the patch.
fn merge_field(
    original: &mut Map<String, Value>,
    key: String,
    value: Value,
    meta: &dyn PatchMeta,
    depth: usize,
) -> Result<()> {
    if value.is_null() {
        original.remove(&key);
        return Ok(());
    }
    let current = match original.get_mut(&key) {
        Some(v) if !v.is_null() => v,
        _ => return put(original, key, clean_value(value, false, depth)?),
    };
    match (current, value) {
        (Value::Object(cur), Value::Object(patch)) => {
            let field = meta.field(&key)?;
            if field.strategy == PatchStrategy::Replace {
                return put(
                    original,
                    key,
                    clean_value(Value::Object(patch), false, depth)?,
                );
            }
            let cur = std::mem::take(cur);
            let merged = merge_map(cur, patch, &*field.value, depth + 1)?;
            original.insert(key, Value::Object(merged));
        }
        (Value::Array(cur), Value::Array(patch)) => {
            let field = meta.field(&key)?;
            if field.strategy != PatchStrategy::Merge {
                return put(
                    original,
                    key,
                    clean_value(Value::Array(patch), false, depth)?,
                );
            }
            let cur = std::mem::take(cur);
            let merged = merge_list(cur, patch, &field, depth + 1)?;
            original.insert(key, Value::Array(merged));
        }
        (_, value) => put(original, key, clean_value(value, false, depth)?)?,
    }
    Ok(())
}

/// Sets `key` to `value`, or removes it when the cleaned value vanished (`$patch: delete`).
fn put(original: &mut Map<String, Value>, key: String, value: Option<Value>) -> Result<()> {
    match value {
        Some(v) => {
            original.insert(key, v);
        }
        None => {
            original.remove(&key);
        }
    }
    Ok(())
}

/// `$deleteFromPrimitiveList/<field>`: removes every occurrence of the listed scalars, whatever
/// the field's strategy. `null` deletes the whole field, as upstream.
fn delete_from_primitive_list(
    original: &mut Map<String, Value>,
    field: &str,
    value: Value,
) -> Result<()> {
    let items = match value {
        Value::Null => {
            original.remove(field);
            return Ok(());
        }
        Value::Array(items) => items,
        // Upstream skips a deletion list of another type.
        _ => return Ok(()),
    };
    if items.iter().any(|v| v.is_object() || v.is_array()) {
        return Err(StrategicError::BadPrimitiveList);
    }
    if let Some(Value::Array(list)) = original.get_mut(field) {
        let doomed: HashSet<String> = items.iter().map(scalar_id).collect();
        list.retain(|v| !doomed.contains(&scalar_id(v)));
    }
    Ok(())
}

/// Whether a list holds maps or scalars.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ElementKind {
    Maps,
    Scalars,
}

/// The common kind of the items of `lists`; `None` when they are all empty. Lists of lists and
/// lists mixing maps with scalars cannot merge (upstream errs on both).
fn element_kind(lists: &[&[Value]]) -> Result<Option<ElementKind>> {
    let mut kind = None;
    for item in lists.iter().flat_map(|l| l.iter()) {
        let k = match item {
            Value::Array(_) => return Err(StrategicError::ListOfLists),
            Value::Object(_) => ElementKind::Maps,
            _ => ElementKind::Scalars,
        };
        match kind {
            None => kind = Some(k),
            Some(prev) if prev != k => {
                let rendered: Vec<String> = lists
                    .iter()
                    .map(|l| go_v(&Value::Array(l.to_vec())))
                    .collect();
                return Err(StrategicError::MixedListElements {
                    lists: format!("[{}]", rendered.join(" ")),
                });
            }
            Some(_) => {}
        }
    }
    Ok(kind)
}

/// How items of a merged list are identified: scalars by value, maps by their merge key(s).
#[derive(Clone, Copy)]
enum Identity<'k> {
    Scalar,
    Keyed(&'k [String]),
}

/// A hashable identity of a scalar: its JSON text (numbers keep their written form, so `1` and
/// `1.0` differ, as they do in upstream's Go values).
fn scalar_id(v: &Value) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

impl Identity<'_> {
    /// The item's identity, `None` when it is not a map holding every merge key.
    fn of(&self, item: &Value) -> Option<String> {
        match self {
            Identity::Scalar => Some(scalar_id(item)),
            Identity::Keyed(keys) => {
                let map = item.as_object()?;
                let mut id = String::new();
                for k in keys.iter() {
                    id.push_str(&scalar_id(map.get(k.as_str())?));
                    // JSON text never holds a raw NUL: a safe separator.
                    id.push('\0');
                }
                Some(id)
            }
        }
    }

    /// The identity, or upstream's error for an item lacking the merge key.
    fn require(&self, item: &Value) -> Result<String> {
        match self {
            Identity::Keyed(keys) => self.of(item).ok_or_else(|| {
                if item.is_object() {
                    StrategicError::missing_merge_key(item, keys)
                } else {
                    StrategicError::type_mismatch("map[string]interface {}", item)
                }
            }),
            Identity::Scalar => Ok(scalar_id(item)),
        }
    }

    /// Position of the first item of each identity (items without one are left out).
    fn positions(&self, items: &[Value]) -> HashMap<String, usize> {
        let mut pos = HashMap::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            if let Some(id) = self.of(item) {
                pos.entry(id).or_insert(i);
            }
        }
        pos
    }
}

/// The identity to merge a list with, from its items' kind and the field's merge keys.
fn identity<'k>(
    kind: ElementKind,
    field: &'k FieldMeta<'_>,
    keys: &'k [String],
) -> Result<Identity<'k>> {
    match kind {
        ElementKind::Scalars => Ok(Identity::Scalar),
        ElementKind::Maps if keys.is_empty() => Err(StrategicError::NoMergeKey {
            type_name: field.value.type_name().into_owned(),
        }),
        ElementKind::Maps => Ok(Identity::Keyed(keys)),
    }
}

fn merge_keys(field: &FieldMeta<'_>) -> Vec<String> {
    field.merge_keys.iter().map(|k| k.to_string()).collect()
}

/// Merges two lists of a field with strategy `merge` (upstream's `mergeSlice`).
fn merge_list(
    original: Vec<Value>,
    patch: Vec<Value>,
    field: &FieldMeta<'_>,
    depth: usize,
) -> Result<Vec<Value>> {
    merge_list_with_order(original, patch, field, depth).map(|(items, _)| items)
}

/// [`merge_list`], also returning, for lists of maps, the server order a following
/// `$setElementOrder` sorts by (see [`KeyedMerge::server_view`]).
fn merge_list_with_order(
    original: Vec<Value>,
    patch: Vec<Value>,
    field: &FieldMeta<'_>,
    depth: usize,
) -> Result<(Vec<Value>, Option<Vec<String>>)> {
    check_depth(depth)?;
    let Some(kind) = element_kind(&[&original, &patch])? else {
        return Ok((original, None));
    };
    let keys = merge_keys(field);
    let ident = identity(kind, field, &keys)?;
    match ident {
        Identity::Scalar => {
            let patch_order = ident.positions(&patch);
            let server_order = ident.positions(&original);
            // The union, each value once.
            let mut seen = HashSet::new();
            let mut merged = Vec::with_capacity(original.len() + patch.len());
            for item in original.into_iter().chain(patch) {
                let id = scalar_id(&item);
                if seen.insert(id.clone()) {
                    merged.push((item, id));
                }
            }
            Ok((order_merged(merged, &patch_order, &server_order), None))
        }
        Identity::Keyed(_) => {
            let merged = merge_keyed_list(original, patch, field, ident, depth)?;
            Ok((merged.items, Some(merged.server_view)))
        }
    }
}

/// The result of merging a list of maps.
struct KeyedMerge {
    items: Vec<Value>,
    /// The server order as upstream's `$setElementOrder` step sees it: the original items left
    /// after the `$patch: delete`s, then as many of the appended items as were deleted. (Upstream
    /// deletes and appends in place in the original's Go slice, which the ordering step reads
    /// afterwards; the appended items that landed in the freed slots count as server items.
    /// Upstream's tests pin the resulting order, and so does `kubectl apply`'s idempotence.)
    server_view: Vec<String>,
}

/// Merges two lists of maps by merge key: the `$patch` items first (`delete` removes the
/// item with that key, `replace` makes the list the patch's items), then every other patch
/// item merges into the original item with its key or is appended.
fn merge_keyed_list(
    mut original: Vec<Value>,
    patch: Vec<Value>,
    field: &FieldMeta<'_>,
    ident: Identity<'_>,
    depth: usize,
) -> Result<KeyedMerge> {
    let mut replace = false;
    let mut deleted = HashSet::new();
    let mut items = Vec::with_capacity(patch.len());
    for item in patch {
        let directive = item.as_object().and_then(|m| m.get(PATCH).map(|d| (m, d)));
        let Some((map, directive)) = directive else {
            items.push(item);
            continue;
        };
        match directive.as_str() {
            Some("delete") => {
                deleted.insert(ident.require(&item)?);
            }
            Some("replace") => replace = true,
            // Upstream refuses it ("merging lists cannot yet be specified in the patch"); it
            // asks for what happens anyway.
            Some("merge") => {}
            _ => return Err(StrategicError::unknown_patch_type(directive, map)),
        }
    }

    let before = original.len();
    let (mut original, items) = if replace {
        let mut kept = Vec::with_capacity(items.len());
        for item in items {
            if let Some(v) = clean_value(item, true, depth)? {
                kept.push(v);
            }
        }
        (kept, Vec::new())
    } else {
        if !deleted.is_empty() {
            original.retain(|it| ident.of(it).is_none_or(|id| !deleted.contains(&id)));
        }
        (original, items)
    };
    // Slots freed by deletions, which appended items fill (see `KeyedMerge::server_view`).
    let freed = if replace {
        0
    } else {
        before.saturating_sub(original.len())
    };
    let kept = original.len();

    let server_order = ident.positions(&original);
    let patch_order = ident.positions(&items);
    let mut index = server_order.clone();
    for item in items {
        let id = ident.require(&item)?;
        match index.get(&id) {
            Some(&i) => {
                let patch_map = match item {
                    Value::Object(m) => m,
                    other => {
                        return Err(StrategicError::type_mismatch(
                            "map[string]interface {}",
                            &other,
                        ));
                    }
                };
                let current = match std::mem::take(&mut original[i]) {
                    Value::Object(m) => m,
                    _ => Map::new(),
                };
                original[i] =
                    Value::Object(merge_map(current, patch_map, &*field.value, depth + 1)?);
            }
            None => {
                if let Some(v) = clean_value(item, true, depth)? {
                    index.insert(id, original.len());
                    original.push(v);
                }
            }
        }
    }

    let mut merged = Vec::with_capacity(original.len());
    let mut server_view = Vec::with_capacity(kept + freed);
    for (i, item) in original.into_iter().enumerate() {
        let id = ident.require(&item)?;
        if i < kept + freed {
            server_view.push(id.clone());
        }
        merged.push((item, id));
    }
    Ok(KeyedMerge {
        items: order_merged(merged, &patch_order, &server_order),
        server_view,
    })
}

/// Upstream's order for a merged list: the items named in `patch_order` in that order, the
/// others in the server's order, the two runs interleaved: a server item goes first only when
/// the server had it before the next patch item (`mergeSortedSlice`).
fn order_merged(
    merged: Vec<(Value, String)>,
    patch_order: &HashMap<String, usize>,
    server_order: &HashMap<String, usize>,
) -> Vec<Value> {
    let (mut in_patch, mut server_only): (Vec<_>, Vec<_>) = merged
        .into_iter()
        .partition(|(_, id)| patch_order.contains_key(id));
    in_patch.sort_by_key(|(_, id)| patch_order.get(id).copied().unwrap_or(usize::MAX));
    server_only.sort_by_key(|(_, id)| server_order.get(id).copied().unwrap_or(usize::MAX));

    let mut out = Vec::with_capacity(in_patch.len() + server_only.len());
    let mut left = server_only.into_iter().peekable();
    let mut right = in_patch.into_iter().peekable();
    loop {
        let take_left = match (left.peek(), right.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some((_, l)), Some((_, r))) => match (server_order.get(l), server_order.get(r)) {
                (Some(li), Some(ri)) => li < ri,
                _ => false,
            },
        };
        let next = if take_left { left.next() } else { right.next() };
        if let Some((item, _)) = next {
            out.push(item);
        }
    }
    out
}

/// `$setElementOrder/<field>`: merges the field's list now (if the patch has it) and orders the
/// result: the listed items in the listed order, the server-only ones kept in place
/// (upstream's `mergePatchIntoOriginal`).
fn merge_with_element_order(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
    field: &str,
    order: &[Value],
    meta: &dyn PatchMeta,
    depth: usize,
) -> Result<()> {
    let patch_list = match patch.get(field) {
        None => None,
        // The list is deleted anyway.
        Some(Value::Null) => return Ok(()),
        Some(Value::Array(items)) => Some(items.as_slice()),
        Some(other) => return Err(StrategicError::type_mismatch("[]interface {}", other)),
    };
    let original_list = match original.get(field) {
        None | Some(Value::Null) => None,
        Some(Value::Array(items)) => Some(items.as_slice()),
        Some(other) => return Err(StrategicError::type_mismatch("[]interface {}", other)),
    };
    if original_list.is_none() && patch_list.is_none() {
        return Ok(());
    }
    let meta_field = meta.field(field)?;
    if meta_field.strategy != PatchStrategy::Merge {
        // Only merged lists have an order to set; a replaced list is the patch's, as sent.
        return Ok(());
    }
    let (o, p) = (original_list.unwrap_or(&[]), patch_list.unwrap_or(&[]));
    let kind = match element_kind(&[o, p])? {
        Some(kind) => kind,
        None => match element_kind(&[order])? {
            Some(kind) => kind,
            None => ElementKind::Scalars,
        },
    };
    let keys = merge_keys(&meta_field);
    let ident = identity(kind, &meta_field, &keys)?;
    check_patch_follows_order(p, order, ident)?;
    let mut server_order = ident.positions(o);
    let mut order_pos = HashMap::with_capacity(order.len());
    for (i, item) in order.iter().enumerate() {
        order_pos.entry(ident.require(item)?).or_insert(i);
    }

    let merged = match (original.remove(field), patch.remove(field)) {
        (Some(Value::Array(o)), Some(Value::Array(p))) => {
            let (items, view) = merge_list_with_order(o, p, &meta_field, depth + 1)?;
            if let Some(view) = view {
                server_order.clear();
                for (i, id) in view.into_iter().enumerate() {
                    server_order.entry(id).or_insert(i);
                }
            }
            items
        }
        (Some(Value::Array(o)), _) => o,
        (_, Some(p)) => match clean_value(p, false, depth)? {
            Some(Value::Array(items)) => items,
            _ => Vec::new(),
        },
        (_, None) => Vec::new(),
    };
    let mut tagged = Vec::with_capacity(merged.len());
    for item in merged {
        let id = ident.require(&item)?;
        tagged.push((item, id));
    }
    original.insert(
        field.to_string(),
        Value::Array(order_merged(tagged, &order_pos, &server_order)),
    );
    Ok(())
}

/// The patch's own items (deletions and other directive items aside) must appear in the
/// `$setElementOrder` list, in the same relative order (upstream's
/// `validatePatchWithSetOrderList`).
fn check_patch_follows_order(patch: &[Value], order: &[Value], ident: Identity<'_>) -> Result<()> {
    if patch.is_empty() || order.is_empty() {
        return Ok(());
    }
    let mut items = Vec::with_capacity(patch.len());
    for item in patch {
        match ident {
            Identity::Keyed(_) => {
                let Some(map) = item.as_object() else {
                    return Err(StrategicError::type_mismatch(
                        "map[string]interface {}",
                        item,
                    ));
                };
                match map.get(PATCH) {
                    Some(d) if d.as_str() == Some("delete") => {}
                    Some(_) => {}
                    None => items.push(ident.require(item)?),
                }
            }
            Identity::Scalar => items.push(scalar_id(item)),
        }
    }
    let mut next = 0;
    for listed in order {
        if next == items.len() {
            break;
        }
        if ident.require(listed)? == items[next] {
            next += 1;
        }
    }
    if next < items.len() {
        return Err(StrategicError::SetElementOrderMismatch {
            patch: go_v(&Value::Array(patch.to_vec())),
            order: go_v(&Value::Array(order.to_vec())),
        });
    }
    Ok(())
}

/// A value taken from the patch as is, cleaned: `null` map values dropped, the `$` directives
/// honoured or removed. `None` when the value itself is deleted (`$patch: delete`, or any
/// `$patch` marker item of a list).
fn clean_value(value: Value, list_item: bool, depth: usize) -> Result<Option<Value>> {
    check_depth(depth)?;
    match value {
        Value::Object(mut map) => {
            if let Some(directive) = map.get(PATCH) {
                match directive.as_str() {
                    Some("delete") => return Ok(None),
                    Some("replace" | "merge") if list_item => return Ok(None),
                    Some("replace" | "merge") => {
                        map.remove(PATCH);
                    }
                    _ => return Err(StrategicError::unknown_patch_type(directive, &map)),
                }
            }
            Ok(Some(Value::Object(clean_map(map, depth)?)))
        }
        Value::Array(items) => {
            let mut out = Vec::with_capacity(items.len());
            for item in items {
                if let Some(v) = clean_value(item, true, depth + 1)? {
                    out.push(v);
                }
            }
            Ok(Some(Value::Array(out)))
        }
        scalar => Ok(Some(scalar)),
    }
}

/// The entries of a map from the patch, cleaned (see [`clean_value`]). Its directives are
/// dropped, but only after the checks [`merge_map`] makes of them: a patch that is refused when
/// the map exists must not be accepted when it does not, or the same patch would succeed once
/// and then fail on its own result.
fn clean_map(map: Map<String, Value>, depth: usize) -> Result<Map<String, Value>> {
    check_directives(&map)?;
    let mut out = Map::new();
    for (k, v) in map {
        if v.is_null()
            || k == PATCH
            || k == RETAIN_KEYS
            || k.starts_with(SET_ELEMENT_ORDER)
            || k.starts_with(DELETE_FROM_PRIMITIVE_LIST)
        {
            continue;
        }
        if let Some(v) = clean_value(v, false, depth + 1)? {
            out.insert(k, v);
        }
    }
    Ok(out)
}
