//! The verbs, one module each, as functions over the [`Api`] components: they decode what the
//! request asks, let the kind's strategy (`crate::strategy`) prepare and check it, pass it
//! through admission (`crate::admission`) and read or write it through `crate::storage`.
//! Nothing here names a kind.

mod create;
mod delete;
mod deletecollection;
mod get;
mod list;
mod patch;
mod scale;
mod selectors;
mod update;
mod watch;

pub(crate) use create::create;
pub(crate) use delete::{GcOptions, delete};
pub(crate) use deletecollection::delete_collection;
pub(crate) use get::get;
pub(crate) use list::list;
pub(crate) use patch::patch;
pub(crate) use scale::scale;
pub(crate) use update::replace;
pub(crate) use watch::watch;

use serde_json::Value;

use crate::admission::{Admission, AdmissionRequest, Operation};
pub(crate) use crate::api::Api;
use crate::error::{ApiError, ApiResult, Cause};
use crate::registry::Resource;
use crate::request::{ObjectRef, Part, Query};
use crate::storage::Outcome;
use crate::strategy;

/// Whether a create or update is prepared without validating its values, because mutating
/// webhooks may still change it: [`admit`] validates it after them, as upstream does.
fn defers_validation(api: &Api) -> bool {
    api.admission.has_mutating_webhooks(api)
}

/// Passes a prepared write through admission: mutating webhooks, then (if the preparation
/// `deferred` it) the validation of the result as the kind validates a write, the embedder's
/// plugins, validating webhooks. `obj` is the object to be stored (for a delete, the object as
/// it will be stored or removed). Returns the webhooks' warnings.
#[allow(clippy::too_many_arguments)]
async fn admit(
    api: &Api,
    operation: Operation,
    target: ObjectRef<'_>,
    part: Part,
    query: &Query,
    old: Option<&Value>,
    obj: &mut Value,
    dry_run: bool,
    deferred: bool,
) -> ApiResult<Vec<String>> {
    let ObjectRef { res, ns, name } = target;
    let request = AdmissionRequest {
        operation,
        group: &res.group,
        version: &res.version,
        resource: &res.plural,
        subresource: match part {
            Part::Main => None,
            Part::Status => Some("status"),
            Part::Finalize => Some("finalize"),
        },
        namespace: ns,
        name,
        user: query.user(),
        old,
        dry_run,
    };
    let mut warnings = Vec::new();
    if operation == Operation::Delete {
        Admission::mutate(api, res, &request, None, &mut warnings).await?;
    } else if deferred {
        let before = obj.clone();
        let changed = Admission::mutate(api, res, &request, Some(obj), &mut warnings).await?;
        if changed {
            keep_part(res, part, &before, obj);
        }
        strategy::recheck_mutated(res, &before, obj, old)?;
        if changed && part == Part::Main {
            strategy::of(res).validate_write(api, query.actor(), res, ns, obj)?;
        }
    }
    Admission::validate(api, res, &request, obj, &mut warnings).await?;
    Ok(warnings)
}

/// What a mutating webhook may change of a write of `part`: a status write keeps only its
/// `status`, a write of a resource with a status subresource keeps its status, as the
/// strategy that upstream runs after mutating admission resets them.
fn keep_part(res: &Resource, part: Part, before: &Value, obj: &mut Value) {
    match part {
        Part::Status => {
            let status = obj.get("status").cloned();
            *obj = before.clone();
            if let (Some(map), Some(status)) = (obj.as_object_mut(), status) {
                map.insert("status".into(), status);
            }
        }
        Part::Main if res.status => {
            if let Some(map) = obj.as_object_mut() {
                match before.get("status") {
                    Some(status) => map.insert("status".into(), status.clone()),
                    None => map.remove("status"),
                };
            }
        }
        Part::Main | Part::Finalize => {}
    }
}

/// Runs the kind's reactions to what a write committed (nothing, for an update that wrote
/// nothing), before the writer is answered.
fn committed<T>(api: &Api, res: &Resource, outcome: &Outcome<T>) {
    match outcome {
        Outcome::Done(_) => {}
        Outcome::Put(_, stored) => strategy::of(res).committed(api, stored, false),
        Outcome::Deleted(_, last) => strategy::of(res).committed(api, last, true),
    }
}

/// Upstream's `422` for a `ListOptions` field a list or watch may not combine as it did.
fn forbidden_list_option(field: &str, message: &str) -> ApiError {
    ApiError::invalid(
        "meta.k8s.io",
        "ListOptions",
        "",
        vec![Cause::new(
            "FieldValueForbidden",
            field,
            format!("Forbidden: {message}"),
        )],
    )
}
