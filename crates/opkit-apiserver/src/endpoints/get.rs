//! GET of one object.

use std::time::Duration;

use super::Api;
use crate::error::{ApiError, ApiResult};
use crate::request::{ObjectRef, Query};
use crate::response::{Answer, Payload};

/// Waits until the store has reached `rv` (a client asked for a state not older than it).
pub(crate) async fn wait_for_revision(api: &Api, rv: u64) -> ApiResult<()> {
    let store = api.storage.store();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(3);
    while store.current_revision() < rv {
        if tokio::time::Instant::now() >= deadline {
            return Err(ApiError::timeout(format!(
                "Too large resource version: {rv}, current: {}",
                store.current_revision()
            )));
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Ok(())
}

/// Reads one object as stored.
pub(crate) async fn get(api: &Api, target: ObjectRef<'_>, query: &Query) -> ApiResult<Answer> {
    if let Some(rv) = parse_rv(query)? {
        wait_for_revision(api, rv).await?;
    }
    let ObjectRef { res, name, .. } = target;
    // A stale-state fault answers from an older revision the request allows.
    let stale = query
        .stale_at()
        .filter(|r| *r >= api.storage.store().compacted_revision());
    let entry = match stale {
        Some(revision) => api.storage.get_at(target, revision)?,
        None => api.storage.get(target),
    };
    match entry {
        Some(entry) => Ok(Answer::ok(Payload::Raw(entry.value))),
        None => Err(ApiError::not_found(&res.group, &res.plural, name)),
    }
}

/// Parsed `resourceVersion` semantics of a read.
pub(crate) fn parse_rv(query: &Query) -> ApiResult<Option<u64>> {
    match query.get("resourceVersion") {
        None | Some("") => Ok(None),
        Some(s) => s
            .parse::<u64>()
            .map(Some)
            .map_err(|_| ApiError::bad_request(format!("invalid resource version: {s:?}"))),
    }
}
