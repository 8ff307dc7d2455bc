//! core/v1 `Event` and events.k8s.io/v1 `Event`: one storage, two views.
//!
//! kube-apiserver stores an event once and serves it through both APIs, converting between the
//! two shapes (k8s.io/kubernetes `pkg/apis/events/v1/conversion.go`). Here the stored shape is
//! core/v1's (upstream's internal type is closest to it), under the core events' keys: an
//! events.k8s.io/v1 write is admitted (decoded, validated, its managed fields recorded) in its
//! own shape and then converted; every answer is converted back to the shape of the version
//! asked for. Both resources therefore share keys, resourceVersions and watch history, while
//! authorization still sees the group of the request.
//!
//! Upstream's conversion renames seven fields and copies the rest (`reason`, `type`,
//! `action`, `related`, `series`, `eventTime`, `reportingInstance`, metadata); see
//! [`RENAMED`]. It fills nothing in: a core `source` stays empty for an event written with
//! only `reportingController` (kubectl falls back to `reportingComponent` itself). The one
//! place upstream does fall back is the `source` field selector, which matches
//! `reportingComponent` when `source.component` is empty ([`field_value`]).

use serde_json::{Map, Value};

use crate::registry::View;

/// The events.k8s.io/v1 names and the core/v1 names of the fields the conversion renames.
pub const RENAMED: [(&str, &str); 7] = [
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
    ("reportingController", "reportingComponent"),
];

/// The events.k8s.io/v1 events: a view of the core/v1 events' storage.
pub static EVENTS_V1: View = View {
    storage_group: "",
    storage_plural: "events",
    storage_api_version: "v1",
    storage_kind: "Event",
    from_storage: to_events_v1,
    to_storage: to_core,
    field_label: events_v1_field_label,
};

/// Renames the top-level fields of an event and sets its `apiVersion`.
fn convert(obj: Value, api_version: &str, to_core: bool) -> Value {
    let Value::Object(map) = obj else {
        return obj;
    };
    let mut out = Map::new();
    for (key, value) in map {
        let renamed = RENAMED.iter().find_map(|(events, core)| {
            let (from, to) = if to_core {
                (events, core)
            } else {
                (core, events)
            };
            (key == *from).then_some(*to)
        });
        match renamed {
            Some(to) => {
                out.insert(to.to_string(), value);
            }
            None if key == "apiVersion" => {}
            None => {
                out.insert(key, value);
            }
        }
    }
    out.insert("apiVersion".into(), Value::from(api_version));
    out.insert("kind".into(), Value::from("Event"));
    Value::Object(out)
}

/// A stored (core/v1) event as events.k8s.io/v1 shows it.
pub fn to_events_v1(obj: Value) -> Value {
    convert(obj, "events.k8s.io/v1", false)
}

/// An events.k8s.io/v1 event in the stored core/v1 shape, normalised as a core event is on
/// its own create (decoded into k8s-openapi's type and encoded again), so an event reads the
/// same whichever API wrote it.
pub fn to_core(obj: Value) -> Result<Value, String> {
    let core = convert(obj, "v1", true);
    let typed: k8s_openapi::api::core::v1::Event =
        serde_json::from_value(core).map_err(|e| e.to_string())?;
    serde_json::to_value(&typed).map_err(|e| e.to_string())
}

/// Upstream's field label conversion of events.k8s.io/v1 events: the label of the core
/// selectable field it stands for, `None` when not supported.
pub fn events_v1_field_label(label: &str) -> Option<&'static str> {
    Some(match label {
        "reason" => "reason",
        "regarding.kind" => "involvedObject.kind",
        "regarding.namespace" => "involvedObject.namespace",
        "regarding.name" => "involvedObject.name",
        "regarding.uid" => "involvedObject.uid",
        "regarding.apiVersion" => "involvedObject.apiVersion",
        "regarding.resourceVersion" => "involvedObject.resourceVersion",
        "regarding.fieldPath" => "involvedObject.fieldPath",
        "reportingController" => "reportingComponent",
        "source" => "source",
        "type" => "type",
        "metadata.namespace" => "metadata.namespace",
        "metadata.name" => "metadata.name",
        _ => return None,
    })
}

/// A selectable field of a stored event, as upstream's `ToSelectableFields`: `source` is
/// `source.component`, or `reportingComponent` when that is empty.
pub fn field_value(obj: &Value, field: &str) -> Option<String> {
    use opkit_apimachinery::fields::field_value as value;
    if field == "source" {
        return value(obj, "source")
            .filter(|s| !s.is_empty())
            .or_else(|| value(obj, "reportingComponent"));
    }
    value(obj, field)
}

/// Whether a resource's objects are stored events (core/v1 events, or a view of them), whose
/// field selectors match with [`field_value`].
pub fn stores_events(res: &crate::registry::Resource) -> bool {
    let (group, plural) = match res.view {
        Some(view) => (view.storage_group, view.storage_plural),
        None => (res.group.as_str(), res.plural.as_str()),
    };
    !res.is_custom() && group.is_empty() && plural == "events"
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn events_v1() -> Value {
        json!({
            "apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": "e", "namespace": "default"},
            "eventTime": "2024-05-01T10:00:00.000000Z",
            "series": {"count": 2, "lastObservedTime": "2024-05-01T10:05:00.000000Z"},
            "reportingController": "example.com/ctl", "reportingInstance": "ctl-0",
            "action": "Sync", "reason": "Synced", "type": "Normal", "note": "all good",
            "regarding": {"kind": "ConfigMap", "name": "cm", "namespace": "default", "uid": "u1"},
            "related": {"kind": "Pod", "name": "p"},
            "deprecatedSource": {"component": "old", "host": "h"},
            "deprecatedFirstTimestamp": "2024-05-01T09:00:00Z",
            "deprecatedLastTimestamp": "2024-05-01T09:30:00Z",
            "deprecatedCount": 3
        })
    }

    #[test]
    fn events_v1_maps_onto_core_fields_and_back() {
        let core = to_core(events_v1()).unwrap();
        assert_eq!(core["apiVersion"], "v1");
        assert_eq!(core["involvedObject"]["name"], "cm");
        assert_eq!(core["message"], "all good");
        assert_eq!(core["source"]["component"], "old");
        assert_eq!(core["firstTimestamp"], "2024-05-01T09:00:00Z");
        assert_eq!(core["lastTimestamp"], "2024-05-01T09:30:00Z");
        assert_eq!(core["count"], 3);
        assert_eq!(core["reportingComponent"], "example.com/ctl");
        for same in [
            "reason",
            "type",
            "action",
            "related",
            "series",
            "eventTime",
            "reportingInstance",
        ] {
            assert_eq!(core[same], events_v1()[same], "{same}");
        }
        for gone in [
            "regarding",
            "note",
            "deprecatedCount",
            "reportingController",
        ] {
            assert!(core.get(gone).is_none(), "{gone}");
        }
        assert_eq!(to_events_v1(core), events_v1());
    }

    #[test]
    fn field_labels_follow_upstreams_mapping() {
        assert_eq!(
            events_v1_field_label("regarding.name"),
            Some("involvedObject.name")
        );
        assert_eq!(
            events_v1_field_label("reportingController"),
            Some("reportingComponent")
        );
        assert_eq!(events_v1_field_label("involvedObject.name"), None);
        assert_eq!(events_v1_field_label("note"), None);
    }

    #[test]
    fn source_selects_the_reporting_component_when_the_source_is_empty() {
        let core = to_core(json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": "e"}, "reportingController": "ctl"}))
        .unwrap();
        assert_eq!(field_value(&core, "source").as_deref(), Some("ctl"));
        let legacy = json!({"source": {"component": "kubelet"}, "reportingComponent": "x"});
        assert_eq!(field_value(&legacy, "source").as_deref(), Some("kubelet"));
    }
}
