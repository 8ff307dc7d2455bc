//! UPDATE (PUT), and the read-modify-write that PATCH, status and scale writes share.

use serde_json::Value;

use super::{Api, admit, committed};
use crate::admission::Operation;
use crate::error::{ApiError, ApiResult, Cause};
use crate::object;
use crate::patch::managed;
use crate::registry::Resource;
use crate::request::{ObjectRef, Part, Query};
use crate::response::{Answer, Payload};
use crate::storage::{Current, Outcome, Step};
use crate::strategy;

/// Changes one object: `mutate` gets the current object (in the shape of the request's
/// version) and returns the desired one (or an error). `require_version`: a custom resource's
/// replace must name the `resourceVersion` it replaces. The request's manager is recorded in
/// `managedFields` when `track` (a server-side apply has recorded its own already).
pub(crate) async fn update(
    api: &Api,
    target: ObjectRef<'_>,
    part: Part,
    query: &Query,
    require_version: bool,
    track: bool,
    mutate: impl Fn(&Value) -> ApiResult<Value> + Sync,
) -> ApiResult<Answer> {
    let manager = track.then(|| managed::update_manager(query));
    let ObjectRef { res, ns, name } = target;
    let strategy = strategy::of(res);
    let dry_run = query.dry_run()?;
    let fields = query.field_check()?;
    let _allocating = match part == Part::Main && strategy.allocates() {
        true => Some(api.allocation.lock().await),
        false => None,
    };
    // The attempt's warnings (set by each attempt: a lost race starts over).
    let warnings = std::sync::Mutex::new(Vec::new());
    let deferred = super::defers_validation(api);
    let (mutate, manager, fields, warnings_ref) = (&mutate, &manager, &fields, &warnings);
    let outcome = api
        .storage
        .guaranteed_update(target, |stored: Current| async move {
            // Patches, checks, admission and managed fields work in the shape of the request's
            // version.
            let current = api
                .converter
                .to_request(res, res.shown(stored.object))
                .await?;
            let desired = mutate(&current)?;
            if let Some(rv) =
                object::meta_str(&desired, "resourceVersion").filter(|s| !s.is_empty())
                && rv != stored.revision.to_string()
            {
                return Err(ApiError::stale(&res.group, &res.plural, name));
            }
            if require_version
                && res.is_custom()
                && part == Part::Main
                && object::meta_str(&desired, "resourceVersion").is_none_or(str::is_empty)
            {
                return Err(ApiError::invalid(
                    &res.group,
                    &res.kind,
                    name,
                    vec![Cause::new(
                        "FieldValueInvalid",
                        "metadata.resourceVersion",
                        "Invalid value: 0x0: must be specified for an update",
                    )],
                ));
            }
            // An apply computed the managed fields already; a status write keeps only
            // `status` of what it is given, so they are carried over.
            let applied_managed = match manager {
                None => desired.pointer("/metadata/managedFields").cloned(),
                Some(_) => None,
            };
            let (mut new, prepared_warnings) =
                strategy::prepare_update(res, &current, desired, part, fields, !deferred)?;
            let mut attempt_warnings = prepared_warnings;
            strategy.prepare_update(part, &current, &mut new)?;
            if part == Part::Main {
                strategy.allocate_update(&api.storage, res, &current, &mut new)?;
            }
            if let Some(managed) = applied_managed {
                object::meta_mut(&mut new).insert("managedFields".into(), managed);
            }
            if part == Part::Main {
                strategy.validate_write(api, query.actor(), res, ns, &new)?;
            }
            if let Some(m) = manager {
                managed::track_update(res, part, Some(&current), &mut new, m);
            }
            let admitted = admit(
                api,
                Operation::Update,
                target,
                part,
                query,
                Some(&current),
                &mut new,
                dry_run,
                deferred,
            )
            .await?;
            attempt_warnings.extend(admitted);
            *warnings_ref.lock().unwrap_or_else(|p| p.into_inner()) = attempt_warnings;
            if object::same_ignoring_version(&current, &new) {
                return Ok(Step::Done(Payload::Raw(stored.bytes)));
            }
            if dry_run {
                return Ok(Step::Done(Payload::Value(new)));
            }
            let new = res.to_storage(new).map_err(ApiError::internal)?;
            let new = api.converter.to_storage(res, new).await?;
            let finished = object::is_deleting(&new)
                && object::finalizers(&new).is_empty()
                && strategy.finalized(&new);
            Ok(if finished {
                Step::Delete(new)
            } else {
                Step::Put(new)
            })
        })
        .await?;
    committed(api, res, &outcome);
    let payload = match outcome {
        Outcome::Done(payload) => payload,
        Outcome::Put(bytes, _) | Outcome::Deleted(bytes, _) => Payload::Raw(bytes),
    };
    Ok(Answer {
        code: 200,
        payload,
        warnings: warnings.into_inner().unwrap_or_else(|p| p.into_inner()),
    })
}

/// PUT of the main resource or the status subresource.
pub(crate) async fn replace(
    api: &Api,
    res: &Resource,
    ns: Option<&str>,
    name: &str,
    part: Part,
    body: Value,
    query: &Query,
) -> ApiResult<Answer> {
    let body_name = object::meta_str(&body, "name").unwrap_or("");
    if !body_name.is_empty() && body_name != name {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({body_name}) does not match the name on the URL ({name})"
        )));
    }
    let target = ObjectRef { res, ns, name };
    update(api, target, part, query, true, true, |_| Ok(body.clone())).await
}
