//! `metadata.managedFields` on the server's write paths: server-side apply (operation `Apply`)
//! and the ownership every other write records (operation `Update`), over [`opkit_apply`].
//!
//! Why here: the library is pure and knows nothing of resources, requests or clocks; this module
//! picks the type information of a resource (the built-in kinds' tags, a CRD version's schema),
//! the apiVersion, the subresource and the fields a write ignores (`status` for main-resource
//! writes of kinds with a status subresource, everything else for status writes), names the
//! manager of a request as upstream does, and turns conflicts into upstream's `409` `Status`.

use opkit_apply::{ApplyError, ManagedFields, Reset, Scope, Types};
use opkit_strategic::{BuiltinPatchMeta, NoPatchMeta, SchemaPatchMeta};
use serde_json::{Value, json};

use crate::error::{ApiError, ApiResult, Cause, Details};
use crate::object;
use crate::registry::Resource;
use crate::request::Part;
use crate::request::Query;

/// Upstream's `FieldManagerMaxLength`.
const MAX_MANAGER_LEN: usize = 128;

/// The manager of the server's own writes (requests that never came over HTTP), as upstream's
/// controllers inside kube-apiserver appear.
const INTERNAL_MANAGER: &str = "kube-apiserver";

/// The manager of a non-apply write: `fieldManager`, else the product part of the User-Agent
/// (before the first `/`, printable characters only, at most 128 bytes), as upstream's
/// `managerOrUserAgent`: kubectl sends `kubectl-client-side-apply`, `kubectl-edit`... and
/// kube-rs clients appear as `kube` unless they name a manager.
pub(crate) fn update_manager(query: &Query) -> String {
    if let Some(m) = query.get("fieldManager").filter(|m| !m.is_empty()) {
        return m.to_string();
    }
    match query.user_agent() {
        Some(ua) => prefix_from_user_agent(ua),
        None => INTERNAL_MANAGER.to_string(),
    }
}

fn prefix_from_user_agent(ua: &str) -> String {
    let product = ua.split('/').next().unwrap_or("");
    let mut out = String::new();
    for c in product.chars().filter(|c| !c.is_control()) {
        if out.len() + c.len_utf8() > MAX_MANAGER_LEN {
            break;
        }
        out.push(c);
    }
    out
}

fn patch_options_invalid(field: &str, reason: &str, message: String) -> ApiError {
    ApiError::invalid(
        "meta.k8s.io",
        "PatchOptions",
        "",
        vec![Cause::new(reason, field, message)],
    )
}

/// The manager of an apply (`fieldManager`, required) and whether it forces conflicts.
pub(crate) fn apply_options(query: &Query) -> ApiResult<(String, bool)> {
    let manager = query.get("fieldManager").unwrap_or("");
    if manager.is_empty() {
        return Err(patch_options_invalid(
            "fieldManager",
            "FieldValueRequired",
            "Required value: is required for apply patch".into(),
        ));
    }
    if manager.len() > MAX_MANAGER_LEN {
        return Err(patch_options_invalid(
            "fieldManager",
            "FieldValueTooLong",
            format!("Too long: may not be more than {MAX_MANAGER_LEN} bytes"),
        ));
    }
    if manager.chars().any(char::is_control) {
        return Err(patch_options_invalid(
            "fieldManager",
            "FieldValueInvalid",
            format!("Invalid value: {manager:?}: must only contain printable characters"),
        ));
    }
    let force = match query.get("force") {
        None | Some("") | Some("false") | Some("0") => false,
        Some("true") | Some("1") => true,
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "force: invalid value {other:?}"
            )));
        }
    };
    Ok((manager.to_string(), force))
}

/// Refuses `force` on a patch that is not an apply, as upstream's `ValidatePatchOptions`.
pub(crate) fn check_non_apply_options(query: &Query) -> ApiResult<()> {
    if query.get("force").is_some() {
        return Err(patch_options_invalid(
            "force",
            "FieldValueForbidden",
            "Forbidden: may not be specified for non-apply patch".into(),
        ));
    }
    Ok(())
}

/// Runs `f` with the scope of a write to `res` / `part` at the current time.
fn with_scope<R>(res: &Resource, part: Part, f: impl FnOnce(&Scope<'_>) -> R) -> R {
    let api_version = res.api_version();
    let now = object::now_rfc3339();
    let none = NoPatchMeta;
    let builtin;
    let schema;
    let types = match res.custom() {
        Some(custom) => match &custom.raw_schema {
            Some(s) => {
                schema = SchemaPatchMeta::for_object(s);
                Types::custom(&schema)
            }
            None => Types::custom(&none),
        },
        None => match BuiltinPatchMeta::for_kind(&res.group, &res.version, &res.kind) {
            Some(m) => {
                builtin = m;
                Types::builtin(&builtin)
            }
            None => Types::builtin(&none),
        },
    };
    let (subresource, reset) = if part == Part::Status {
        ("status", Reset::AllButStatus)
    } else if res.status {
        ("", Reset::Status)
    } else {
        ("", Reset::Nothing)
    };
    let scope = Scope::new(types, &api_version, &now)
        .with_subresource(subresource)
        .with_reset(reset);
    f(&scope)
}

/// What a created object is compared with: nothing for custom resources; for built-in kinds,
/// an empty `spec` and `status`, the non-pointer structs a Go object always has (so a create
/// does not own `.spec` itself, as upstream's entries show).
fn create_baseline(res: &Resource, new: &Value) -> Value {
    let mut base = json!({});
    if !res.is_custom()
        && let (Some(b), Some(n)) = (base.as_object_mut(), new.as_object())
    {
        for k in ["spec", "status"] {
            if n.get(k).is_some_and(Value::is_object) {
                b.insert(k.into(), json!({}));
            }
        }
    }
    base
}

/// Records a non-apply write of `new` (over `live`, `None` for a create) by `manager` in
/// `new`'s managed fields. As upstream, a failure never fails the write: the managed fields
/// are dropped instead.
pub(crate) fn track_update(
    res: &Resource,
    part: Part,
    live: Option<&Value>,
    new: &mut Value,
    manager: &str,
) {
    let mut managed = ManagedFields::for_write(live, new, part == Part::Status);
    let baseline;
    let old = match live {
        Some(l) => l,
        None => {
            baseline = create_baseline(res, new);
            &baseline
        }
    };
    let result = with_scope(res, part, |scope| {
        opkit_apply::update(scope, old, new, &mut managed, manager)
    });
    if let Err(e) = result {
        tracing::warn!(error = %e, kind = %res.kind, "failed to update managedFields");
        ManagedFields::default().store(new);
    }
}

/// Server-side apply of `config` by `manager` over `live` (`None` when the object does not
/// exist): the object to store, with its managed fields.
pub(crate) fn apply(
    res: &Resource,
    part: Part,
    live: Option<&Value>,
    config: &Value,
    manager: &str,
    force: bool,
) -> ApiResult<Value> {
    let mut managed = live
        .and_then(|l| ManagedFields::of_object(l).ok())
        .unwrap_or_default();
    let empty = json!({});
    let old = live.unwrap_or(&empty);
    with_scope(res, part, |scope| {
        opkit_apply::apply(scope, old, config, &mut managed, manager, force)
    })
    .map_err(to_api_error)
}

fn to_api_error(e: ApplyError) -> ApiError {
    match e {
        ApplyError::Conflicts(conflicts) => {
            let message = ApplyError::Conflicts(conflicts.clone()).to_string();
            let causes = conflicts
                .into_iter()
                .map(|c| {
                    Cause::new(
                        "FieldManagerConflict",
                        &c.field,
                        format!("conflict with {}", c.manager),
                    )
                })
                .collect();
            ApiError {
                reason: crate::error::Reason::Conflict,
                message,
                details: Some(Box::new(Details {
                    causes,
                    ..Details::default()
                })),
                retry_after: None,
            }
        }
        ApplyError::InvalidManagedFields(m) => {
            ApiError::internal(format!("failed to decode managed fields: {m}"))
        }
        other => ApiError::bad_request(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_manager_is_the_user_agent_product() {
        assert_eq!(
            prefix_from_user_agent("kubectl-client-side-apply/v1.35.0 (linux/amd64)"),
            "kubectl-client-side-apply"
        );
        assert_eq!(prefix_from_user_agent("kube"), "kube");
        assert_eq!(prefix_from_user_agent(&"x".repeat(300)).len(), 128);
    }

    #[test]
    fn apply_requires_a_field_manager_with_upstreams_message() {
        let e = apply_options(&Query::default()).unwrap_err();
        assert_eq!(e.code(), 422);
        assert_eq!(
            e.message,
            "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch"
        );
        let q = Query::new(vec![
            ("fieldManager".into(), "m".into()),
            ("force".into(), "true".into()),
        ]);
        assert_eq!(apply_options(&q).unwrap(), ("m".to_string(), true));
    }

    #[test]
    fn conflicts_become_a_409_with_field_manager_conflict_causes() {
        let e = to_api_error(ApplyError::Conflicts(vec![opkit_apply::Conflict {
            manager: "\"kubectl\" using apps/v1".into(),
            field: ".spec.replicas".into(),
        }]));
        let status = e.to_status();
        assert_eq!(status["code"], 409);
        assert_eq!(status["reason"], "Conflict");
        assert_eq!(
            status["message"],
            "Apply failed with 1 conflict: conflict with \"kubectl\" using apps/v1: .spec.replicas"
        );
        assert_eq!(
            status["details"]["causes"][0],
            json!({"reason": "FieldManagerConflict", "message": "conflict with \"kubectl\" using apps/v1", "field": ".spec.replicas"})
        );
    }
}
