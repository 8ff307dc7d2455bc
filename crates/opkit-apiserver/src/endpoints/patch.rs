//! PATCH: JSON patch, merge patch, strategic merge patch, and server-side apply.

use std::sync::Arc;

use serde_json::Value;

use super::Api;
use super::create::create;
use super::update::update;
use crate::error::{ApiError, ApiResult, Cause};
use crate::patch::{
    PatchType, apply_json_patch, apply_merge_patch, apply_strategic, check_applied_config,
    json_patch_errors, managed,
};
use crate::request::{BodyFields, ObjectRef, Part, Query, Wording};
use crate::response::Answer;

/// PATCH of the main resource or the status subresource.
pub(crate) async fn patch(
    api: &Api,
    target: ObjectRef<'_>,
    part: Part,
    patch_type: PatchType,
    body: &[u8],
    query: &Query,
) -> ApiResult<Answer> {
    if patch_type == PatchType::Apply {
        return server_side_apply(api, target, part, body, query).await;
    }
    managed::check_non_apply_options(query)?;
    let ObjectRef { res, name, .. } = target;
    let supported: &[&str] = if res.is_custom() {
        &[
            "application/json-patch+json",
            "application/merge-patch+json",
            "application/apply-patch+yaml",
        ]
    } else {
        &[
            "application/json-patch+json",
            "application/merge-patch+json",
            "application/strategic-merge-patch+json",
            "application/apply-patch+yaml",
        ]
    };
    let (patch, duplicates) = crate::strict::decode_json(body)
        .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
    let patch = Arc::new(patch);
    let (errors, wording) = match patch_type {
        PatchType::Json => (json_patch_errors(&patch, duplicates), Wording::Patched),
        PatchType::Strategic => (duplicates, Wording::Strategic(patch.clone())),
        // (An apply was handled above.)
        PatchType::Merge | PatchType::Apply => (duplicates, Wording::Patched),
    };
    let query = &query
        .clone()
        .with_body_fields(BodyFields { errors, wording });
    let strategic = match patch_type {
        PatchType::Json | PatchType::Merge => None,
        PatchType::Strategic => {
            match opkit_strategic::BuiltinPatchMeta::for_kind(&res.group, &res.version, &res.kind) {
                Some(meta) if !res.is_custom() => Some(meta),
                _ => {
                    return Err(ApiError::unsupported_patch(
                        "application/strategic-merge-patch+json",
                        supported,
                    ));
                }
            }
        }
        PatchType::Apply => None,
    };
    let kind = res.kind.clone();
    let group = res.group.clone();
    let name_owned = name.to_string();
    update(api, target, part, query, false, true, move |current| {
        let result = match (&strategic, patch_type) {
            (Some(meta), _) => {
                return apply_strategic(current, &patch, meta, &group, &kind, &name_owned);
            }
            (None, PatchType::Json) => apply_json_patch(current, &patch),
            (None, _) => apply_merge_patch(current, &patch),
        };
        result.map_err(|message| {
            ApiError::invalid(
                &group,
                &kind,
                &name_owned,
                vec![Cause::new("FieldValueInvalid", "", message)],
            )
        })
    })
    .await
}

/// Server-side apply: `body` (YAML or JSON) is the manager's whole intent for the object.
/// Conflicts with other managers are a `409` unless `force=true`; a missing object is
/// created (`201`), through the same admission as a create.
pub(crate) async fn server_side_apply(
    api: &Api,
    target: ObjectRef<'_>,
    part: Part,
    body: &[u8],
    query: &Query,
) -> ApiResult<Answer> {
    let ObjectRef { res, ns, name } = target;
    let (manager, force) = managed::apply_options(query)?;
    let mut config: Value = serde_yaml::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?;
    check_applied_config(res, name, &mut config)?;
    for _ in 0..8 {
        let updated = update(api, target, part, query, false, false, |current| {
            managed::apply(res, part, Some(current), &config, &manager, force)
        })
        .await;
        match updated {
            Err(e)
                if e.is_not_found() && part == Part::Main && api.storage.get(target).is_none() => {}
            other => return other,
        }
        let new = managed::apply(res, part, None, &config, &manager, force)?;
        match create(api, res, ns, new, query, false).await {
            Err(e) if e.is_already_exists() => continue,
            other => return other,
        }
    }
    Err(ApiError::stale(&res.group, &res.plural, name))
}
