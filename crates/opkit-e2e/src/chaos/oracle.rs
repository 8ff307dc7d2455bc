//! The oracles of a campaign, which need no spec of the operator: a run with a fault must end
//! as the fault-free reference ended. Pure functions over what a run left behind (the objects
//! of the test namespace, the operator's trace), so each rule is tested without a server.
//!
//! The end state is compared through two masks. The global mask drops what differs between any
//! two runs by construction: `uid`, `resourceVersion`, `managedFields`, `creationTimestamp`,
//! `deletionTimestamp`, `generation` (a retried or repeated write may bump it without changing
//! what the object says), `selfLink`, owner references' `uid`, every field whose name ends
//! in `Time` or `Timestamp` (condition times, heartbeats), and the IP addresses the cluster
//! assigns to pods (and the endpoints made of them); the test namespace's name is
//! replaced by `$NAMESPACE` in every string. The learned mask drops the fields that differed
//! between two fault-free runs (generated names, random values, the plane's CA).

use std::collections::{BTreeMap, BTreeSet};

use opkit_apiserver::faults::TraceEntry;
use serde_json::Value;

/// The namespace placeholder in normalized objects and counts.
pub const NAMESPACE: &str = "$NAMESPACE";

/// The objects of a test namespace at the end of a run, normalized, by `kind/name` (with
/// the group for non-core kinds: `Memcached.cache.example.com/a`; see [`snapshot`] for names
/// Kubernetes generated).
pub type Snapshot = BTreeMap<String, Value>;

/// The owners of what built-in controllers name `<owner>-<suffix>`: a ReplicaSet's pods are
/// `<replicaset>-<5 random characters>` (`generateName`), and so are a Job's, a DaemonSet's and
/// a ReplicationController's; a Service's EndpointSlices too upstream, and on the embedded
/// plane `<service>-<a hash of its UID>`.
const GENERATING_CONTROLLERS: [&str; 5] = [
    "ReplicaSet",
    "Job",
    "DaemonSet",
    "ReplicationController",
    "Service",
];

/// The objects of a run's test namespace (`(kind, object)`) as the oracles compare them: each
/// normalized ([`normalize`]), and the names Kubernetes generated ([`generated_prefix`]: what
/// a built-in controller named `<owner>-<suffix>`, and whatever the server named from
/// `metadata.generateName`, the operator's own objects too) replaced by `<prefix>$1`, `$2`… in
/// the order of their normalized contents, names aside — in the object and in every string
/// that names it (an annotation recording a generated name). Such a suffix differs in every
/// run, whatever the operator does: the operator is judged on how many there are and what they
/// hold (a blind retry's second object is `<prefix>$2`, which the reference does not have).
/// Names the operator or the test chose are kept.
pub(crate) fn snapshot(
    objects: impl IntoIterator<Item = (String, Value)>,
    namespace: &str,
) -> Snapshot {
    let objects: Vec<(String, Value)> = objects
        .into_iter()
        .map(|(kind, object)| (kind, normalize(&object, namespace)))
        .collect();
    let mut generated: BTreeMap<(String, String), Vec<usize>> = BTreeMap::new();
    for (i, (kind, object)) in objects.iter().enumerate() {
        if let Some(prefix) = generated_prefix(object) {
            generated.entry((kind.clone(), prefix)).or_default().push(i);
        }
    }
    let mut renames: Vec<(String, String)> = Vec::new();
    for ((_, prefix), mut members) in generated {
        let unnamed = |i: &usize| {
            let mut v = objects[*i].1.clone();
            if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.remove("name");
            }
            v.to_string()
        };
        members.sort_by_cached_key(unnamed);
        for (n, i) in members.into_iter().enumerate() {
            let name = objects[i].1["metadata"]["name"]
                .as_str()
                .unwrap_or_default();
            renames.push((name.to_string(), format!("{prefix}${}", n + 1)));
        }
    }
    objects
        .into_iter()
        .map(|(kind, mut object)| {
            rename_strings(&mut object, &renames);
            let name = object["metadata"]["name"].as_str().unwrap_or_default();
            (format!("{kind}/{name}"), object)
        })
        .collect()
}

/// The prefix of a name Kubernetes generated: `<owner>-` when the object's controller owner is
/// one of [`GENERATING_CONTROLLERS`] and its name is that plus a suffix (random, from
/// `generateName`, or a hash of the owner's UID as the embedded plane's EndpointSlices have);
/// otherwise its `metadata.generateName` when its name is that plus a suffix (the server chose
/// the suffix, whoever asked for it).
fn generated_prefix(object: &Value) -> Option<String> {
    let meta = object.get("metadata")?;
    let name = meta.get("name")?.as_str()?;
    let extends = |prefix: &str| name.len() > prefix.len() && name.starts_with(prefix);
    let by_controller = meta
        .get("ownerReferences")
        .and_then(Value::as_array)
        .and_then(|owners| {
            owners.iter().find(|o| {
                o.get("controller") == Some(&Value::Bool(true))
                    && o.get("kind")
                        .and_then(Value::as_str)
                        .is_some_and(|k| GENERATING_CONTROLLERS.contains(&k))
            })
        })
        .and_then(|owner| owner.get("name")?.as_str())
        .map(|owner| format!("{owner}-"))
        .filter(|prefix| extends(prefix));
    by_controller.or_else(|| {
        meta.get("generateName")
            .and_then(Value::as_str)
            .filter(|g| !g.is_empty() && extends(g))
            .map(str::to_string)
    })
}

/// Replaces each `(from, to)` in every string of `value`.
fn rename_strings(value: &mut Value, renames: &[(String, String)]) {
    if renames.is_empty() {
        return;
    }
    match value {
        Value::String(s) => {
            for (from, to) in renames {
                if s.contains(from.as_str()) {
                    *s = s.replace(from.as_str(), to);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| rename_strings(v, renames)),
        Value::Object(map) => map.values_mut().for_each(|v| rename_strings(v, renames)),
        _ => {}
    }
}

/// Paths (`kind/name` then JSON pointer) that two fault-free runs disagree on.
pub type Mask = BTreeSet<String>;

/// Whether a field is dropped by the global mask, by its name and its parent's path.
fn globally_masked(parent: &str, key: &str) -> bool {
    let in_metadata = parent == "/metadata";
    (in_metadata
        && matches!(
            key,
            "uid"
                | "resourceVersion"
                | "managedFields"
                | "creationTimestamp"
                | "deletionTimestamp"
                | "generation"
                | "selfLink"
        ))
        || (parent.starts_with("/metadata/ownerReferences/") && key == "uid")
        || key.ends_with("Time")
        || key.ends_with("Timestamp")
        || assigned_address(parent, key)
}

/// Whether a field holds an IP address the cluster assigned (a pod's and its node's, and the
/// EndpointSlice and Endpoints addresses made of them): which one a pod gets depends on the
/// order pods were started in, never on the operator.
fn assigned_address(parent: &str, key: &str) -> bool {
    let item_of = |list: &str| {
        parent
            .strip_prefix(list)
            .is_some_and(|i| i.parse::<usize>().is_ok())
    };
    (parent == "/status" && matches!(key, "podIP" | "podIPs" | "hostIP" | "hostIPs"))
        || (key == "addresses" && item_of("/endpoints/"))
        || (key == "ip" && parent.starts_with("/subsets/") && parent.contains("/addresses/"))
}

/// An object as the oracles compare it: the global mask applied, the namespace's name
/// replaced by [`NAMESPACE`].
pub fn normalize(object: &Value, namespace: &str) -> Value {
    fn walk(v: &Value, path: &str, ns: &str) -> Value {
        match v {
            Value::Object(map) => Value::Object(
                map.iter()
                    .filter(|(k, _)| !globally_masked(path, k))
                    .map(|(k, v)| (k.clone(), walk(v, &format!("{path}/{}", escape(k)), ns)))
                    .collect(),
            ),
            Value::Array(items) => Value::Array(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, v)| walk(v, &format!("{path}/{i}"), ns))
                    .collect(),
            ),
            Value::String(s) if !ns.is_empty() => Value::String(s.replace(ns, NAMESPACE)),
            other => other.clone(),
        }
    }
    walk(object, "", namespace)
}

/// A JSON pointer's escaping of one key.
fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// The leaf paths where `a` and `b` differ (a value present on one side only counts).
fn differing(a: &Value, b: &Value, path: &str, out: &mut Vec<String>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            for k in keys {
                let p = format!("{path}/{}", escape(k));
                match (x.get(k), y.get(k)) {
                    (Some(l), Some(r)) => differing(l, r, &p, out),
                    _ => out.push(p),
                }
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (l, r)) in x.iter().zip(y).enumerate() {
                differing(l, r, &format!("{path}/{i}"), out);
            }
        }
        (l, r) if l != r => out.push(path.to_string()),
        _ => {}
    }
}

/// The mask learned from two fault-free runs: every path (and every object present in one run
/// only) where they differ.
pub fn learn_mask(first: &Snapshot, second: &Snapshot) -> Mask {
    let mut mask = Mask::new();
    let keys: BTreeSet<&String> = first.keys().chain(second.keys()).collect();
    for key in keys {
        match (first.get(key), second.get(key)) {
            (Some(a), Some(b)) => {
                let mut paths = Vec::new();
                differing(a, b, "", &mut paths);
                mask.extend(paths.into_iter().map(|p| format!("{key}{p}")));
            }
            _ => {
                mask.insert(key.clone());
            }
        }
    }
    mask
}

/// Whether `path` is masked: it or one of its parents is in the mask.
fn masked(mask: &Mask, path: &str) -> bool {
    mask.iter().any(|m| {
        path == m
            || path
                .strip_prefix(m.as_str())
                .is_some_and(|rest| rest.starts_with('/'))
    })
}

/// How a run's end state differs from the reference's, one line per difference (empty: the
/// same).
pub fn compare_end_state(reference: &Snapshot, run: &Snapshot, mask: &Mask) -> Vec<String> {
    let mut out = Vec::new();
    let keys: BTreeSet<&String> = reference.keys().chain(run.keys()).collect();
    for key in keys {
        if masked(mask, key) {
            continue;
        }
        match (reference.get(key), run.get(key)) {
            (Some(a), Some(b)) => {
                let mut paths = Vec::new();
                differing(a, b, "", &mut paths);
                for p in paths {
                    let full = format!("{key}{p}");
                    if masked(mask, &full) {
                        continue;
                    }
                    let at = |v: &Value| {
                        v.pointer(&p)
                            .map_or_else(|| "(absent)".to_string(), Value::to_string)
                    };
                    out.push(format!("{full}: reference {}, this run {}", at(a), at(b)));
                }
            }
            (Some(_), None) => out.push(format!("{key}: in the reference, missing in this run")),
            (None, Some(_)) => out.push(format!("{key}: not in the reference, left by this run")),
            (None, None) => {}
        }
    }
    out
}

/// How many times the operator created and deleted each object (`create configmaps
/// $NAMESPACE/output`). Where the two reference runs name their objects differently (generated
/// names), the counts of that verb, resource and namespace are compared as a whole instead.
pub type Counts = BTreeMap<String, usize>;

/// Whether a trace's resource (`events`, `events.events.k8s.io`) holds Events: best-effort
/// records of what happened, not state, in either API group.
fn is_events(resource: &str) -> bool {
    matches!(resource, "events" | "events.events.k8s.io")
}

/// The create and delete counts of a trace's writes, the test namespace replaced by
/// [`NAMESPACE`]. Events (core and `events.k8s.io`) are left out, as from the end state: they
/// are best-effort records (one lost to a crash right after the write it reports is no bug,
/// and a recorder may create a repeated event again instead of patching it), not state.
pub fn counts(writes: &[TraceEntry], namespace: &str) -> Counts {
    let mut out = Counts::new();
    for w in writes {
        if !matches!(w.verb.as_str(), "create" | "delete" | "deletecollection")
            || w.subresource.is_some()
            || is_events(&w.resource)
        {
            continue;
        }
        let ns = match w.namespace.as_deref() {
            Some(n) if n == namespace => NAMESPACE,
            Some(n) => n,
            None => "",
        };
        let key = match (&w.name, w.verb.as_str()) {
            (Some(name), _) => format!("{} {} {ns}/{name}", w.verb, w.resource),
            (None, _) => format!("{} {} {ns}", w.verb, w.resource),
        };
        *out.entry(key).or_default() += 1;
    }
    out
}

/// A count's key without the object's name (`create configmaps $NAMESPACE`).
fn group_of(key: &str) -> &str {
    key.rsplit_once('/').map_or(key, |(group, _)| group)
}

/// The groups (verb, resource, namespace) whose object names the two reference runs disagree
/// on: generated names, counted per group.
pub fn unstable_groups(first: &Counts, second: &Counts) -> BTreeSet<String> {
    let a: BTreeSet<&String> = first.keys().collect();
    let b: BTreeSet<&String> = second.keys().collect();
    a.symmetric_difference(&b)
        .map(|k| group_of(k).to_string())
        .collect()
}

/// `counts` with the keys of the `unstable` groups summed per group.
pub fn collapse(counts: &Counts, unstable: &BTreeSet<String>) -> Counts {
    let mut out = Counts::new();
    for (key, n) in counts {
        let group = group_of(key);
        let key = if unstable.contains(group) { group } else { key };
        *out.entry(key.to_string()).or_default() += n;
    }
    out
}

/// How two runs' counts differ, one line per key.
pub fn compare_counts(reference: &Counts, run: &Counts) -> Vec<String> {
    let keys: BTreeSet<&String> = reference.keys().chain(run.keys()).collect();
    keys.into_iter()
        .filter_map(|k| {
            let (a, b) = (
                reference.get(k).copied().unwrap_or(0),
                run.get(k).copied().unwrap_or(0),
            );
            (a != b).then(|| format!("{k}: {a} in the reference, {b} in this run"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn snap(objects: &[(&str, Value)]) -> Snapshot {
        objects
            .iter()
            .map(|(k, v)| (k.to_string(), normalize(v, "kuttl-test-a")))
            .collect()
    }

    #[test]
    fn the_global_mask_drops_server_fields_and_the_namespace_name() {
        let object = json!({
            "metadata": {"name": "a", "namespace": "kuttl-test-a", "uid": "1",
                "resourceVersion": "7", "generation": 2, "creationTimestamp": "t",
                "ownerReferences": [{"name": "o", "uid": "9"}]},
            "status": {"conditions": [{"type": "Ready", "lastTransitionTime": "t"}],
                "podIP": "10.244.0.3"}
        });
        assert_eq!(
            normalize(&object, "kuttl-test-a"),
            json!({
                "metadata": {"name": "a", "namespace": "$NAMESPACE",
                    "ownerReferences": [{"name": "o"}]},
                "status": {"conditions": [{"type": "Ready"}]}
            })
        );
    }

    #[test]
    fn pods_a_replicaset_named_are_compared_by_their_generate_name_and_contents() {
        let pod = |name: &str, ready: bool| {
            (
                "Pod".to_string(),
                json!({
                    "metadata": {"name": name, "generateName": "web-5d8f7c-",
                        "namespace": "kuttl-test-a",
                        "ownerReferences": [{"kind": "ReplicaSet", "name": "web-5d8f7c",
                            "controller": true, "uid": "1"}]},
                    "status": {"ready": ready}
                }),
            )
        };
        let endpoints = |pod: &str| {
            (
                "Endpoints".to_string(),
                json!({"metadata": {"name": "web"},
                    "subsets": [{"addresses": [{"targetRef": {"kind": "Pod", "name": pod}}]}]}),
            )
        };
        let first = snapshot(
            [
                pod("web-5d8f7c-abcde", true),
                pod("web-5d8f7c-fghij", false),
                endpoints("web-5d8f7c-abcde"),
            ],
            "kuttl-test-a",
        );
        let second = snapshot(
            [
                pod("web-5d8f7c-zzzzz", false),
                pod("web-5d8f7c-yyyyy", true),
                endpoints("web-5d8f7c-yyyyy"),
            ],
            "kuttl-test-a",
        );
        assert_eq!(first, second);
        assert_eq!(
            first.keys().collect::<Vec<_>>(),
            ["Endpoints/web", "Pod/web-5d8f7c-$1", "Pod/web-5d8f7c-$2"]
        );
        // Ordered by contents (`"ready":false` first); what named a pod names its new name.
        assert_eq!(first["Pod/web-5d8f7c-$2"]["status"]["ready"], true);
        assert_eq!(
            first["Endpoints/web"]["subsets"][0]["addresses"][0]["targetRef"]["name"],
            "web-5d8f7c-$2"
        );
        // A pod fewer is a difference.
        let third = snapshot([pod("web-5d8f7c-qqqqq", false)], "kuttl-test-a");
        assert_eq!(
            compare_end_state(&first, &third, &Mask::new()),
            [
                "Endpoints/web: in the reference, missing in this run",
                "Pod/web-5d8f7c-$2: in the reference, missing in this run"
            ]
        );
        let slice = snapshot(
            [(
                "EndpointSlice.discovery.k8s.io".to_string(),
                json!({"metadata": {"name": "web-q8x2k",
                    "ownerReferences": [{"kind": "Service", "name": "web", "controller": true}]}}),
            )],
            "ns",
        );
        assert!(slice.contains_key("EndpointSlice.discovery.k8s.io/web-$1"));
        // A name the operator (or the test) chose is kept, even one that looks generated.
        let chosen = snapshot(
            [(
                "ConfigMap".to_string(),
                json!({"metadata": {"name": "job-x1y2z"}}),
            )],
            "ns",
        );
        assert!(chosen.contains_key("ConfigMap/job-x1y2z"));
    }

    /// An app and the job the operator created for it with `generateName: app-job-`, whose
    /// name the app records in an annotation.
    fn app_and_jobs(recorded: &str, jobs: &[&str]) -> Vec<(String, Value)> {
        let mut objects = vec![(
            "ConfigMap".to_string(),
            json!({"metadata": {"name": "app", "annotations": {"job": recorded}}}),
        )];
        for job in jobs {
            objects.push((
                "ConfigMap".to_string(),
                json!({"metadata": {"name": job, "generateName": "app-job-",
                    "namespace": "kuttl-test-a", "labels": {"job-of": "app"}}}),
            ));
        }
        objects
    }

    #[test]
    fn objects_the_operator_named_from_generate_name_are_compared_by_prefix_and_contents() {
        let first = snapshot(
            app_and_jobs("app-job-abcde", &["app-job-abcde"]),
            "kuttl-test-a",
        );
        let second = snapshot(
            app_and_jobs("app-job-fghij", &["app-job-fghij"]),
            "kuttl-test-a",
        );
        assert_eq!(
            first, second,
            "the server's suffix is not the operator's doing"
        );
        assert_eq!(
            first.keys().collect::<Vec<_>>(),
            ["ConfigMap/app", "ConfigMap/app-job-$1"]
        );
        assert_eq!(
            first["ConfigMap/app"]["metadata"]["annotations"]["job"],
            "app-job-$1"
        );
        let mask = learn_mask(&first, &second);
        assert!(mask.is_empty(), "{mask:?}");
        // A blind retry's second job is one the reference never had (the app records the
        // retry's, the second of two alike).
        let retried = snapshot(
            app_and_jobs("app-job-xyz12", &["app-job-pqrst", "app-job-xyz12"]),
            "kuttl-test-a",
        );
        assert_eq!(
            compare_end_state(&first, &retried, &mask),
            [
                r#"ConfigMap/app/metadata/annotations/job: reference "app-job-$1", this run "app-job-$2""#,
                "ConfigMap/app-job-$2: not in the reference, left by this run",
            ]
        );
    }

    #[test]
    fn fields_two_reference_runs_disagree_on_are_masked_and_the_rest_is_compared() {
        let first = snap(&[
            ("ConfigMap/a", json!({"data": {"k": "1", "random": "x"}})),
            ("ConfigMap/gen-abc", json!({})),
        ]);
        let second = snap(&[
            ("ConfigMap/a", json!({"data": {"k": "1", "random": "y"}})),
            ("ConfigMap/gen-def", json!({})),
        ]);
        let mask = learn_mask(&first, &second);
        assert!(compare_end_state(&first, &second, &mask).is_empty());
        let broken = snap(&[
            ("ConfigMap/a", json!({"data": {"k": "2", "random": "z"}})),
            ("ConfigMap/b", json!({})),
        ]);
        assert_eq!(
            compare_end_state(&first, &broken, &mask),
            [
                "ConfigMap/a/data/k: reference \"1\", this run \"2\"",
                "ConfigMap/b: not in the reference, left by this run"
            ]
        );
    }

    #[test]
    fn generated_names_are_counted_per_resource_and_other_objects_one_by_one() {
        let w = |resource: &str, name: &str| TraceEntry {
            verb: "create".into(),
            resource: resource.into(),
            subresource: None,
            namespace: Some("ns".into()),
            name: Some(name.into()),
            code: 201,
            revisions: (0, 0),
        };
        assert!(counts(&[w("events", "app.17a2b")], "ns").is_empty());
        assert!(counts(&[w("events.events.k8s.io", "app.17a2c")], "ns").is_empty());
        let first = counts(&[w("pods", "job-abcde"), w("configmaps", "fixed")], "ns");
        let second = counts(&[w("pods", "job-fghij"), w("configmaps", "fixed")], "ns");
        let unstable = unstable_groups(&first, &second);
        assert_eq!(
            unstable.iter().collect::<Vec<_>>(),
            ["create pods $NAMESPACE"]
        );
        let reference = collapse(&first, &unstable);
        assert_eq!(reference, collapse(&second, &unstable));
        let blind_retry = counts(
            &[
                w("pods", "job-1"),
                w("pods", "job-2"),
                w("configmaps", "other"),
            ],
            "ns",
        );
        assert_eq!(
            compare_counts(&reference, &collapse(&blind_retry, &unstable)),
            [
                "create configmaps $NAMESPACE/fixed: 1 in the reference, 0 in this run",
                "create configmaps $NAMESPACE/other: 0 in the reference, 1 in this run",
                "create pods $NAMESPACE: 1 in the reference, 2 in this run",
            ]
        );
    }

    #[test]
    fn creates_count_per_resource_and_deletes_per_object() {
        let w = |verb: &str, name: Option<&str>| TraceEntry {
            verb: verb.into(),
            resource: "configmaps".into(),
            subresource: None,
            namespace: Some("kuttl-test-a".into()),
            name: name.map(Into::into),
            code: 200,
            revisions: (0, 0),
        };
        let reference = counts(&[w("create", None), w("patch", Some("a"))], "kuttl-test-a");
        let run = counts(
            &[w("create", None), w("create", None), w("delete", Some("a"))],
            "kuttl-test-a",
        );
        assert_eq!(
            compare_counts(&reference, &run),
            [
                "create configmaps $NAMESPACE: 1 in the reference, 2 in this run",
                "delete configmaps $NAMESPACE/a: 0 in the reference, 1 in this run"
            ]
        );
    }
}
