//! Small helpers over objects held as `serde_json::Value`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::{Map, Value};

/// `metadata` of an object, if it is an object.
pub fn meta(obj: &Value) -> Option<&Map<String, Value>> {
    obj.get("metadata")?.as_object()
}

/// Mutable `metadata`, created when missing.
pub fn meta_mut(obj: &mut Value) -> &mut Map<String, Value> {
    if !obj.get("metadata").is_some_and(Value::is_object) {
        obj["metadata"] = Value::Object(Map::new());
    }
    match obj.get_mut("metadata") {
        Some(Value::Object(m)) => m,
        _ => unreachable!("metadata was just made an object"),
    }
}

/// A string field of `metadata`.
pub fn meta_str<'a>(obj: &'a Value, field: &str) -> Option<&'a str> {
    meta(obj)?.get(field)?.as_str()
}

/// `metadata.name`.
pub fn name(obj: &Value) -> &str {
    meta_str(obj, "name").unwrap_or("")
}

/// `metadata.finalizers` as strings.
pub fn finalizers(obj: &Value) -> Vec<&str> {
    meta(obj)
        .and_then(|m| m.get("finalizers"))
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// Whether `metadata.deletionTimestamp` is set.
pub fn is_deleting(obj: &Value) -> bool {
    meta(obj).is_some_and(|m| m.get("deletionTimestamp").is_some_and(|v| !v.is_null()))
}

/// `metadata.labels`, empty when absent.
pub fn labels(obj: &Value) -> &Map<String, Value> {
    static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
    meta(obj)
        .and_then(|m| m.get("labels"))
        .and_then(Value::as_object)
        .unwrap_or_else(|| EMPTY.get_or_init(Map::new))
}

/// How far the clock objects are stamped with runs ahead of the system clock, in
/// milliseconds: moved forward by [`ApiServer::advance_clock`](crate::ApiServer::advance_clock).
static CLOCK_AHEAD_MS: AtomicU64 = AtomicU64::new(0);

/// Moves the clock that every API server in this process stamps objects with
/// (`creationTimestamp`, `deletionTimestamp`, `managedFields` times) forward by `by`, so a test
/// sees a later timestamp without waiting for the wall clock to reach one. Forward only: time
/// passing is always legal, so other servers in the process (tests running in parallel) merely
/// see time pass. Request deadlines, tokens, audit events and table ages keep the system clock.
pub fn advance_clock(by: Duration) {
    let ms = u64::try_from(by.as_millis()).unwrap_or(u64::MAX);
    let _ = CLOCK_AHEAD_MS.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |ahead| {
        Some(ahead.saturating_add(ms))
    });
}

/// The time objects are stamped with: the system clock, plus whatever
/// [`advance_clock`] added.
fn now() -> jiff::Timestamp {
    let now = jiff::Timestamp::now();
    let ahead = CLOCK_AHEAD_MS.load(Ordering::SeqCst);
    if ahead == 0 {
        return now;
    }
    let ahead = i64::try_from(ahead).unwrap_or(i64::MAX);
    now.checked_add(jiff::SignedDuration::from_millis(ahead))
        .unwrap_or(now)
}

/// The current time as Kubernetes writes `metav1.Time` (RFC 3339, seconds, UTC).
pub fn now_rfc3339() -> String {
    let now = now();
    now.round(jiff::Unit::Second)
        .unwrap_or(now)
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// A new object uid.
pub fn new_uid() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// The object without `metadata.resourceVersion` and `metadata.managedFields` timestamps, for
/// no-op detection.
pub fn same_ignoring_version(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(ma), Value::Object(mb)) => {
            if ma.len() != mb.len() {
                return false;
            }
            ma.iter().all(|(k, va)| match mb.get(k) {
                Some(vb) if k == "metadata" => same_meta(va, vb),
                Some(vb) => va == vb,
                None => false,
            })
        }
        _ => a == b,
    }
}

fn same_meta(a: &Value, b: &Value) -> bool {
    let (Some(ma), Some(mb)) = (a.as_object(), b.as_object()) else {
        return a == b;
    };
    let relevant = |m: &Map<String, Value>| {
        m.iter()
            .filter(|(k, _)| k.as_str() != "resourceVersion")
            .count()
    };
    relevant(ma) == relevant(mb)
        && ma
            .iter()
            .filter(|(k, _)| k.as_str() != "resourceVersion")
            .all(|(k, v)| match mb.get(k) {
                Some(w) if k == "managedFields" => same_managed_fields(v, w),
                other => other == Some(v),
            })
}

/// Managed fields that differ only in their entries' `time` are the same: a write that changes
/// nothing else is a no-op and keeps the old times (upstream's
/// `IgnoreManagedFieldsTimestampsTransformer`).
fn same_managed_fields(a: &Value, b: &Value) -> bool {
    match (a.as_array(), b.as_array()) {
        (Some(xs), Some(ys)) => {
            xs.len() == ys.len()
                && xs
                    .iter()
                    .zip(ys)
                    .all(|(x, y)| match (x.as_object(), y.as_object()) {
                        (Some(x), Some(y)) => {
                            let n =
                                |m: &Map<String, Value>| m.keys().filter(|k| *k != "time").count();
                            n(x) == n(y)
                                && x.iter()
                                    .filter(|(k, _)| k.as_str() != "time")
                                    .all(|(k, v)| y.get(k) == Some(v))
                        }
                        _ => x == y,
                    })
        }
        _ => a == b,
    }
}

/// Whether anything outside `metadata` (and `status`, when `skip_status`) differs.
pub fn spec_changed(old: &Value, new: &Value, skip_status: bool) -> bool {
    let keep = |k: &str| {
        k != "metadata" && !(skip_status && k == "status") && k != "apiVersion" && k != "kind"
    };
    let (Some(o), Some(n)) = (old.as_object(), new.as_object()) else {
        return old != new;
    };
    o.iter()
        .filter(|(k, _)| keep(k))
        .any(|(k, v)| n.get(k) != Some(v))
        || n.iter()
            .filter(|(k, _)| keep(k))
            .any(|(k, _)| !o.contains_key(k))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn resource_version_alone_is_a_no_op() {
        let a = json!({"metadata": {"name": "a", "resourceVersion": "1"}, "data": {"k": "v"}});
        let b = json!({"metadata": {"name": "a", "resourceVersion": "2"}, "data": {"k": "v"}});
        assert!(same_ignoring_version(&a, &b));
        let c = json!({"metadata": {"name": "a"}, "data": {"k": "w"}});
        assert!(!same_ignoring_version(&a, &c));
    }

    #[test]
    fn status_changes_do_not_count_as_spec_changes_with_a_status_subresource() {
        let a = json!({"metadata": {}, "spec": {"x": 1}, "status": {"y": 1}});
        let b = json!({"metadata": {}, "spec": {"x": 1}, "status": {"y": 2}});
        assert!(!spec_changed(&a, &b, true));
        assert!(spec_changed(&a, &b, false));
    }

    #[test]
    fn timestamps_have_second_precision() {
        let t = now_rfc3339();
        assert_eq!(t.len(), 20, "{t}");
        assert!(t.ends_with('Z'));
    }
}
