//! CREATE (POST to a collection).

use serde_json::Value;

use super::{Api, admit};
use crate::admission::Operation;
use crate::error::{ApiError, ApiResult};
use crate::object;
use crate::patch::managed;
use crate::registry::Resource;
use crate::request::{ObjectRef, Part, Query};
use crate::response::{Answer, Payload};
use crate::strategy;

/// How often a create with a generated name retries after the name turned out to be taken.
const GENERATE_NAME_ATTEMPTS: usize = 8;

/// Creates an object, recording the request's manager in `managedFields` when `track` (a
/// server-side apply that creates has recorded its own already).
pub(crate) async fn create(
    api: &Api,
    res: &Resource,
    ns: Option<&str>,
    body: Value,
    query: &Query,
    track: bool,
) -> ApiResult<Answer> {
    let manager = track.then(|| managed::update_manager(query));
    let strategy = strategy::of(res);
    let dry_run = query.dry_run()?;
    let fields = query.field_check()?;
    let generated = object::meta_str(&body, "name").is_none_or(str::is_empty);
    let mut attempts = 0;
    loop {
        attempts += 1;
        if let Some(custom) = res.custom()
            && custom.terminating
        {
            return Err(ApiError::method_not_allowed_msg(
                "create not allowed while custom resource definition is terminating",
            ));
        }
        let deferred = super::defers_validation(api);
        let (mut obj, mut warnings) =
            strategy::prepare_create(res, ns, body.clone(), &fields, !deferred)?;
        strategy.prepare_create(&mut obj)?;
        let name = object::name(&obj).to_string();
        strategy::check_namespace_open(api, res, ns, &name)?;
        strategy.validate_write(api, query.actor(), res, ns, &obj)?;
        if let Some(m) = &manager {
            managed::track_update(res, Part::Main, None, &mut obj, m);
        }
        let target = ObjectRef {
            res,
            ns,
            name: &name,
        };
        let admitted = admit(
            api,
            Operation::Create,
            target,
            Part::Main,
            query,
            None,
            &mut obj,
            dry_run,
            deferred,
        )
        .await?;
        warnings.extend(admitted);
        // Pools (cluster IPs, node ports) are allocated under a lock held until stored.
        let _allocating = match strategy.allocates() {
            true => Some(api.allocation.lock().await),
            false => None,
        };
        strategy.allocate_create(&api.storage, res, &mut obj)?;
        let obj = res.to_storage(obj).map_err(ApiError::internal)?;
        let obj = api.converter.to_storage(res, obj).await?;
        match api.storage.create(res, ns, obj, dry_run).await {
            Ok((stored, value)) => {
                if !dry_run {
                    strategy.committed(api, &value, false);
                }
                return Ok(Answer {
                    code: 201,
                    payload: Payload::Raw(stored),
                    warnings,
                });
            }
            Err(e) if e.is_already_exists() && generated && attempts < GENERATE_NAME_ATTEMPTS => {
                continue;
            }
            Err(e) => return Err(e),
        }
    }
}
