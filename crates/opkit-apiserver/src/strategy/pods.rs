//! Pods: they start `Pending` with their QoS class, which never changes after; a delete
//! answers with the pod.

use serde_json::{Value, json};

use super::Strategy;
use crate::error::{ApiError, ApiResult, Cause};
use crate::object;
use crate::request::Part;

/// core/v1 Pods.
pub(crate) struct Pods;

impl Strategy for Pods {
    fn initial_status(&self, obj: &Value) -> Option<Value> {
        // Upstream's pod strategy sets the QoS class here, once: it never changes after.
        let qos = crate::qos::pod_qos_class(obj.get("spec").unwrap_or(&Value::Null));
        Some(json!({"phase": "Pending", "qosClass": qos}))
    }

    fn prepare_update(&self, part: Part, current: &Value, new: &mut Value) -> ApiResult<()> {
        match part {
            Part::Status => keep_qos_class(current, new),
            Part::Main | Part::Finalize => Ok(()),
        }
    }

    fn delete_returns_object(&self) -> bool {
        true
    }
}

/// A pod's QoS class is set on create and immutable: a status write that leaves it out keeps
/// the old one (old kubelets drop it), one that changes it is refused. Pods stored before the
/// class was set may get one.
fn keep_qos_class(old: &Value, new: &mut Value) -> ApiResult<()> {
    let old_qos = old
        .pointer("/status/qosClass")
        .and_then(Value::as_str)
        .unwrap_or("");
    let new_qos = new
        .pointer("/status/qosClass")
        .and_then(Value::as_str)
        .unwrap_or("");
    if new_qos.is_empty() {
        if !old_qos.is_empty()
            && let Some(status) = new.get_mut("status").and_then(Value::as_object_mut)
        {
            status.insert("qosClass".into(), Value::from(old_qos));
        }
        return Ok(());
    }
    if old_qos.is_empty() || old_qos == new_qos {
        return Ok(());
    }
    Err(ApiError::invalid(
        "",
        "Pod",
        object::name(old),
        vec![Cause::new(
            "FieldValueInvalid",
            "status.qosClass",
            format!(
                "Invalid value: {}: field is immutable",
                opkit_apimachinery::go_quote(new_qos)
            ),
        )],
    ))
}
