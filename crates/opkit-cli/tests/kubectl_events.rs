//! The real kubectl v1.35 (installed by `scripts/install-tools.sh`) against `opkit up`: an
//! Event written through events.k8s.io/v1 (as operators' recorders write them) shows in
//! `kubectl get events` and in the `Events:` section of `kubectl describe`, which read core/v1.

mod common;

use common::ControlPlane;

/// An events.k8s.io/v1 Event about the ConfigMap `name` (with its uid, as recorders set it),
/// observed at `event_time`.
fn events_v1_manifest(name: &str, uid: &str, event_time: &str) -> String {
    format!(
        "apiVersion: events.k8s.io/v1
kind: Event
metadata:
  name: {name}.operator-1
  namespace: default
eventTime: {event_time}
reportingController: example.com/operator
reportingInstance: operator-0
action: Validate
reason: ConfigInvalid
type: Warning
note: key k holds an invalid value
regarding:
  apiVersion: v1
  kind: ConfigMap
  name: {name}
  namespace: default
  uid: {uid}
"
    )
}

#[test]
fn kubectl_get_and_describe_show_events_k8s_io_events() {
    let plane = ControlPlane::start();
    plane.kubectl_ok(&["create", "configmap", "app-config", "--from-literal=k=v"]);
    let meta = |path: &str| {
        plane.kubectl_ok(&[
            "get",
            "configmap",
            "app-config",
            "-o",
            &format!("jsonpath={{.metadata.{path}}}"),
        ])
    };
    let uid = meta("uid");
    // The server's clock: the event happened when the ConfigMap was created.
    let created = meta("creationTimestamp");
    let event_time = created.replace('Z', ".000000Z");
    let out = plane.kubectl_stdin(
        &["create", "-f", "-"],
        &events_v1_manifest("app-config", &uid, &event_time),
    );
    assert!(out.success(), "the event is created\n{out}");
    assert!(
        out.stdout
            .contains("event.events.k8s.io/app-config.operator-1 created"),
        "{out}"
    );

    // `kubectl get events` (core/v1): LAST SEEN from eventTime, TYPE, REASON, OBJECT, MESSAGE.
    let listed = plane.kubectl_ok(&["get", "events"]);
    let lines: Vec<&str> = listed.lines().collect();
    let header: Vec<&str> = lines[0].split_whitespace().collect();
    assert_eq!(
        header,
        ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"],
        "{listed}"
    );
    let row = lines
        .iter()
        .find(|l| l.contains("configmap/app-config"))
        .unwrap_or_else(|| panic!("no row for the ConfigMap in\n{listed}"));
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert!(cells[0].ends_with('s') || cells[0].ends_with('m'), "{row}");
    assert_eq!(
        &cells[1..],
        [
            "Warning",
            "ConfigInvalid",
            "configmap/app-config",
            "key",
            "k",
            "holds",
            "an",
            "invalid",
            "value"
        ],
        "{listed}"
    );

    // `kubectl describe` finds it with its involvedObject field selector.
    let described = plane.kubectl_ok(&["describe", "configmap", "app-config"]);
    let events = described
        .split("Events:")
        .nth(1)
        .unwrap_or_else(|| panic!("no Events: section in\n{described}"));
    let header = events
        .lines()
        .find(|l| l.contains("Reason"))
        .unwrap_or_else(|| panic!("no events table in\n{described}"));
    assert_eq!(
        header.split_whitespace().collect::<Vec<_>>(),
        ["Type", "Reason", "Age", "From", "Message"],
        "{described}"
    );
    let row = events
        .lines()
        .find(|l| l.contains("ConfigInvalid"))
        .unwrap_or_else(|| panic!("the event is not described in\n{described}"));
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(cells[0], "Warning", "{row}");
    assert_eq!(cells[1], "ConfigInvalid", "{row}");
    assert!(cells.contains(&"example.com/operator"), "{row}");
    assert!(row.ends_with("key k holds an invalid value"), "{row}");

    // The same object through both versions.
    let note = plane.kubectl_ok(&[
        "get",
        "events.v1.events.k8s.io",
        "app-config.operator-1",
        "-o",
        "jsonpath={.note}",
    ]);
    assert_eq!(note, "key k holds an invalid value");
    let message = plane.kubectl_ok(&[
        "get",
        "events",
        "app-config.operator-1",
        "-o",
        "jsonpath={.message}",
    ]);
    assert_eq!(message, "key k holds an invalid value");

    // Deleted through core/v1, it is gone from events.k8s.io/v1 too.
    plane.kubectl_ok(&["delete", "events", "app-config.operator-1"]);
    let gone = plane.kubectl_fails(&["get", "events.v1.events.k8s.io", "app-config.operator-1"]);
    assert!(gone.stderr.contains("NotFound"), "{gone}");
}
