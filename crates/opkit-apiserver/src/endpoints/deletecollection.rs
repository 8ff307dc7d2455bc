//! DELETECOLLECTION: deletes each matching object as a single delete would.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::DeleteOptions;
use serde_json::{Value, json};

use super::Api;
use super::delete::{GcOptions, delete};
use super::list::list;
use crate::error::ApiResult;
use crate::object;
use crate::registry::Resource;
use crate::request::{ObjectRef, Query};
use crate::response::{Answer, Payload};
use crate::strategy::{self, DefaultGc};

/// Deletes the objects of `res` in `ns` (or all namespaces) that the query selects; answers
/// with the list of those it deleted.
pub(crate) async fn delete_collection(
    api: &Api,
    res: &Resource,
    ns: Option<&str>,
    options: &DeleteOptions,
    query: &Query,
) -> ApiResult<Answer> {
    let gc = GcOptions::parse(options, query)?;
    let mut warnings = Vec::new();
    if let DefaultGc::Orphan { warning } = strategy::of(res).default_gc()
        && gc.is_unset()
    {
        warnings.push(warning.to_string());
    }
    let (items, meta) = list(api, res, ns, query).await?;
    let mut deleted = Vec::new();
    for bytes in items {
        let Ok(obj) = serde_json::from_slice::<Value>(&bytes) else {
            continue;
        };
        let name = object::name(&obj).to_string();
        let item_ns = object::meta_str(&obj, "namespace").map(str::to_string);
        let target = ObjectRef {
            res,
            ns: item_ns.as_deref(),
            name: &name,
        };
        match delete(api, target, options, query).await {
            Ok(_) => deleted.push(obj),
            Err(e) if e.is_not_found() => {}
            Err(e) => return Err(e),
        }
    }
    Ok(Answer {
        code: 200,
        payload: Payload::Value(json!({
            "apiVersion": res.api_version(),
            "kind": res.list_kind,
            "metadata": meta,
            "items": deleted,
        })),
        warnings,
    })
}
