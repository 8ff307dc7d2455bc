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

use crate::admission::{AdmissionRequest, Operation};
pub(crate) use crate::api::Api;
use crate::error::{ApiError, ApiResult, Cause};
use crate::registry::Resource;
use crate::request::{ObjectRef, Part, Query};
use crate::storage::Outcome;
use crate::strategy;

/// Passes a prepared write through the admission chain.
#[allow(clippy::too_many_arguments)]
fn admit(
    api: &Api,
    operation: Operation,
    target: ObjectRef<'_>,
    part: Part,
    query: &Query,
    old: Option<&Value>,
    obj: &mut Value,
    dry_run: bool,
) -> ApiResult<()> {
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
    api.admission.admit(&request, obj)
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
