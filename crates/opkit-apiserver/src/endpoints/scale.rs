//! The `scale` subresource: an `autoscaling/v1 Scale` view of an object's replicas.

use serde_json::{Value, json};

use super::Api;
use super::update::update;
use crate::error::{ApiError, ApiResult};
use crate::object;
use crate::patch::{self, PatchType};
use crate::registry::{Resource, ScalePaths};
use crate::request::Part;
use crate::request::decode_body;
use crate::request::{ObjectRef, Query};
use crate::response::{Answer, Payload};

fn path_segments(path: &str) -> Vec<&str> {
    path.trim_start_matches('.')
        .split('.')
        .filter(|s| !s.is_empty())
        .collect()
}

fn read_path<'a>(obj: &'a Value, path: &str) -> Option<&'a Value> {
    path_segments(path)
        .into_iter()
        .try_fold(obj, |v, seg| v.get(seg))
}

fn write_path(obj: &mut Value, path: &str, value: Value) {
    let segs = path_segments(path);
    let mut cur = obj;
    for (i, seg) in segs.iter().enumerate() {
        if !cur.is_object() {
            *cur = json!({});
        }
        if i + 1 == segs.len() {
            cur[*seg] = value;
            return;
        }
        cur = &mut cur[*seg];
    }
}

/// `matchLabels`/`matchExpressions` as a selector string.
fn selector_string(selector: &Value) -> String {
    let mut parts = Vec::new();
    if let Some(m) = selector.get("matchLabels").and_then(Value::as_object) {
        for (k, v) in m {
            parts.push(format!("{k}={}", v.as_str().unwrap_or("")));
        }
    }
    if let Some(exprs) = selector.get("matchExpressions").and_then(Value::as_array) {
        for e in exprs {
            let key = e.get("key").and_then(Value::as_str).unwrap_or("");
            let values: Vec<&str> = e
                .get("values")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            match e.get("operator").and_then(Value::as_str).unwrap_or("") {
                "In" => parts.push(format!("{key} in ({})", values.join(","))),
                "NotIn" => parts.push(format!("{key} notin ({})", values.join(","))),
                "Exists" => parts.push(key.to_string()),
                "DoesNotExist" => parts.push(format!("!{key}")),
                _ => {}
            }
        }
    }
    parts.join(",")
}

/// The Scale view of an object.
pub fn scale_of(res: &Resource, paths: &ScalePaths, obj: &Value) -> Value {
    let meta = object::meta(obj).cloned().unwrap_or_default();
    let mut scale_meta = serde_json::Map::new();
    for k in [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
    ] {
        if let Some(v) = meta.get(k) {
            scale_meta.insert(k.into(), v.clone());
        }
    }
    let spec_replicas = read_path(obj, &paths.spec_replicas)
        .and_then(Value::as_i64)
        .unwrap_or(if res.is_custom() { 0 } else { 1 });
    let status_replicas = read_path(obj, &paths.status_replicas)
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let selector = if res.is_custom() {
        paths
            .label_selector
            .as_deref()
            .and_then(|p| read_path(obj, p))
            .and_then(Value::as_str)
            .map(str::to_string)
    } else {
        obj.pointer("/spec/selector").map(selector_string)
    };
    let mut status = json!({"replicas": status_replicas});
    if let Some(s) = selector.filter(|s| !s.is_empty()) {
        status["selector"] = json!(s);
    }
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": scale_meta,
        "spec": {"replicas": spec_replicas},
        "status": status,
    })
}

/// GET/PUT/PATCH of `scale`.
pub(crate) async fn scale(
    api: &Api,
    target: ObjectRef<'_>,
    method: &str,
    body: &[u8],
    content_type: Option<&str>,
    query: &Query,
) -> ApiResult<Answer> {
    let ObjectRef { res, .. } = target;
    let Some(paths) = res.scale.clone() else {
        return Err(ApiError::path_not_found());
    };
    if method == "GET" {
        let stored = api.storage.current(target)?.object;
        let current = api.converter.to_request(res, stored).await?;
        return Ok(Answer {
            code: 200,
            payload: Payload::Value(scale_of(res, &paths, &current)),
            warnings: Vec::new(),
        });
    }
    let patch_type = if method == "PATCH" {
        Some(PatchType::from_content_type(content_type)?)
    } else {
        None
    };
    let body_value: Value = match patch_type {
        None => decode_body(res, content_type, body)?,
        Some(_) => serde_json::from_slice(body)
            .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?,
    };
    let res_c = res.clone();
    let paths_c = paths.clone();
    let answer = update(api, target, Part::Main, query, false, true, move |cur| {
        let scale = scale_of(&res_c, &paths_c, cur);
        let wanted = match patch_type {
            None => body_value.clone(),
            Some(PatchType::Json) => {
                patch::apply_json_patch(&scale, &body_value).map_err(ApiError::bad_request)?
            }
            Some(_) => {
                patch::apply_merge_patch(&scale, &body_value).map_err(ApiError::bad_request)?
            }
        };
        let replicas = wanted
            .pointer("/spec/replicas")
            .and_then(Value::as_i64)
            .ok_or_else(|| ApiError::bad_request("spec.replicas: Required value"))?;
        if replicas < 0 {
            return Err(ApiError::invalid(
                "autoscaling",
                "Scale",
                object::name(cur),
                vec![crate::error::Cause::new(
                    "FieldValueInvalid",
                    "spec.replicas",
                    format!("Invalid value: {replicas}: must be greater than or equal to 0"),
                )],
            ));
        }
        if let Some(rv) = wanted
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            && Some(rv) != object::meta_str(cur, "resourceVersion")
        {
            return Err(ApiError::stale(
                &res_c.group,
                &res_c.plural,
                object::name(cur),
            ));
        }
        let mut next = cur.clone();
        write_path(&mut next, &paths_c.spec_replicas, json!(replicas));
        Ok(next)
    })
    .await?;
    let stored: Value = match api.converter.answer(res, answer.payload).await? {
        Payload::Raw(b) => serde_json::from_slice(&b).map_err(ApiError::internal)?,
        Payload::Value(v) => v,
    };
    Ok(Answer {
        code: 200,
        payload: Payload::Value(scale_of(res, &paths, &stored)),
        warnings: answer.warnings,
    })
}
