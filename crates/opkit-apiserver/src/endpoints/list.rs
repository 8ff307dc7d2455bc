//! LIST of a collection (one namespace or all), in pages with continue tokens.

use bytes::Bytes;
use serde_json::{Value, json};

use super::get::{parse_rv, wait_for_revision};
use super::selectors::Selectors;
use super::{Api, forbidden_list_option};
use crate::error::{ApiError, ApiResult};
use crate::registry::Resource;
use crate::request::Query;

/// LIST of a collection (one namespace or all).
pub(crate) async fn list(
    api: &Api,
    res: &Resource,
    ns: Option<&str>,
    query: &Query,
) -> ApiResult<(Vec<Bytes>, Value)> {
    let selectors = Selectors::parse(res, query)?;
    let limit = match query.get("limit") {
        None | Some("") | Some("0") => None,
        Some(s) => match s.parse::<usize>() {
            Ok(n) => Some(n),
            Err(_) => return Err(ApiError::bad_request(format!("invalid limit: {s:?}"))),
        },
    };
    let rv = parse_rv(query)?;
    let rv_match = query.get("resourceVersionMatch").filter(|s| !s.is_empty());
    let mut at_revision: Option<u64>;
    let mut start_after = None;
    if let Some(token) = query.get("continue").filter(|s| !s.is_empty()) {
        if rv.is_some_and(|v| v != 0) || rv_match.is_some() {
            return Err(ApiError::bad_request(
                "specifying resource version is not allowed when using continue",
            ));
        }
        let (token_rv, start) = parse_continue(token)?;
        at_revision = Some(token_rv);
        start_after = Some(start);
    } else {
        let forbidden = |message: &str| forbidden_list_option("resourceVersionMatch", message);
        match (rv_match, rv) {
            (Some(_), None) => {
                return Err(forbidden(
                    "resourceVersionMatch is forbidden unless resourceVersion is provided",
                ));
            }
            (Some("Exact"), Some(0)) => {
                return Err(forbidden(
                    "resourceVersionMatch \"Exact\" is forbidden for resourceVersion \"0\"",
                ));
            }
            (None | Some("NotOlderThan"), _) => {
                if let Some(v) = rv.filter(|v| *v > 0) {
                    wait_for_revision(api, v).await?;
                }
                // A stale-state fault answers from an older revision the request allows.
                at_revision = query
                    .stale_at()
                    .filter(|r| *r >= api.storage.store().compacted_revision());
            }
            (Some("Exact"), Some(v)) => {
                wait_for_revision(api, v).await?;
                at_revision = Some(v);
            }
            (Some(other), _) => {
                return Err(ApiError::bad_request(format!(
                    "resourceVersionMatch: Unsupported value: {other:?}: supported values: \"Exact\", \"NotOlderThan\""
                )));
            }
        }
    }
    let mut items = Vec::new();
    let mut list_rv = None;
    let mut next_token = None;
    let mut remaining = None;
    loop {
        let batch = limit.map(|l| {
            (l - items.len())
                .max(1)
                .max(if selectors.is_empty() { 0 } else { 256 })
        });
        let opts = opkit_store::ListOptions {
            start_after: start_after.clone(),
            limit: batch,
            at_revision,
        };
        let result = api.storage.list(res, ns, &opts).map_err(|e| match e {
            opkit_store::StoreError::Compacted { .. } if query.get("continue").is_some() => ApiError::expired(
                "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.",
            ),
            other => other.into(),
        })?;
        let revision = *list_rv.get_or_insert(result.revision);
        at_revision = Some(revision);
        let mut last_key = None;
        let mut stopped_early = false;
        let count = result.entries.len();
        for (i, entry) in result.entries.into_iter().enumerate() {
            last_key = Some(entry.key.clone());
            if selectors.matches_bytes(&entry.value) {
                items.push(entry.value);
                if limit.is_some_and(|l| items.len() >= l) {
                    stopped_early = i + 1 < count || result.more;
                    if selectors.is_empty() {
                        remaining = Some(result.remaining + (count - i - 1));
                    }
                    break;
                }
            }
        }
        if stopped_early {
            if let Some(k) = &last_key {
                next_token = Some(continue_token(revision, k));
            }
            break;
        }
        if !result.more || last_key.is_none() {
            break;
        }
        start_after = last_key.map(|k| k.to_string());
    }
    let mut meta = json!({"resourceVersion": list_rv.unwrap_or_else(|| api.storage.store().current_revision()).to_string()});
    if let Some(t) = next_token {
        meta["continue"] = json!(t);
        if let Some(r) = remaining.filter(|r| *r > 0) {
            meta["remainingItemCount"] = json!(r);
        }
    }
    Ok((items, meta))
}

fn continue_token(rv: u64, last_key: &str) -> String {
    use base64::Engine;
    let token = json!({"v": "meta.k8s.io/v1", "rv": rv, "start": last_key});
    base64::engine::general_purpose::URL_SAFE.encode(token.to_string())
}

fn parse_continue(token: &str) -> ApiResult<(u64, String)> {
    use base64::Engine;
    let bad = || {
        ApiError::bad_request(
            "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)",
        )
    };
    let raw = base64::engine::general_purpose::URL_SAFE
        .decode(token)
        .or_else(|_| base64::engine::general_purpose::STANDARD.decode(token))
        .map_err(|_| bad())?;
    let v: Value = serde_json::from_slice(&raw).map_err(|_| bad())?;
    let rv = v.get("rv").and_then(Value::as_u64).ok_or_else(bad)?;
    let start = v.get("start").and_then(Value::as_str).ok_or_else(bad)?;
    Ok((rv, start.to_string()))
}
