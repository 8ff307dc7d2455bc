//! The extra variables a run gets, as operator-sdk's Ansible operator builds them
//! (`runner.makeParameters`).
//!
//! - every key of the spec, converted to snake_case at every depth (`snakeCaseParameters`,
//!   upstream's `paramconv.ToSnake` rule: `replicaCount` → `replica_count`, `HTTPPort` →
//!   `http_port`, `Size` → `_size`);
//! - `ansible_operator_meta`: `{name, namespace}` of the custom resource;
//! - `_<group>_<kind>`: the whole custom resource as stored (kind lower-cased; `.` and `-`
//!   of the key become `_`), and `_<group>_<kind>_spec`: its spec, keys as written;
//! - the entry's `vars`, then on a finalizer run the finalizer's `vars`, over all of that.
//!
//! With `markUnsafe`, every string of the spec is wrapped as `{"__ansible_unsafe": s}` so
//! Ansible never templates it.

use std::sync::LazyLock;

use serde_json::{Map, Value};

use crate::watches::Watch;

/// The variables of one run of `watch` for the custom resource `obj`.
pub fn parameters(watch: &Watch, obj: &Value, finalizer_run: bool) -> Map<String, Value> {
    let spec = obj
        .get("spec")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut params: Map<String, Value> = if watch.snake_case_parameters {
        spec.iter()
            .map(|(k, v)| (to_snake(k), snake_keys(v)))
            .collect()
    } else {
        spec.clone()
    };
    if watch.mark_unsafe {
        for v in params.values_mut() {
            *v = mark_unsafe(v);
        }
    }
    let meta = &obj["metadata"];
    params.insert(
        "ansible_operator_meta".into(),
        serde_json::json!({
            "name": meta["name"].as_str().unwrap_or_default(),
            "namespace": meta["namespace"].as_str().unwrap_or_default(),
        }),
    );
    let key = object_key(&watch.group, &watch.kind);
    let (whole, spec_value) = if watch.mark_unsafe {
        (mark_unsafe(obj), mark_unsafe(&Value::Object(spec)))
    } else {
        (obj.clone(), Value::Object(spec))
    };
    params.insert(format!("{key}_spec"), spec_value);
    params.insert(key, whole);
    params.extend(watch.vars.clone());
    if finalizer_run && let Some(f) = &watch.finalizer {
        params.extend(f.vars.clone());
    }
    params
}

/// `_<group>_<kind>` with `.` and `-` as `_` (upstream's `escapeAnsibleKey`).
pub fn object_key(group: &str, kind: &str) -> String {
    format!("_{}_{}", group, kind.to_lowercase()).replace(['.', '-'], "_")
}

fn snake_keys(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| (to_snake(k), snake_keys(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(snake_keys).collect()),
        other => other.clone(),
    }
}

fn mark_unsafe(v: &Value) -> Value {
    match v {
        Value::String(_) => serde_json::json!({ "__ansible_unsafe": v }),
        Value::Object(m) => {
            Value::Object(m.iter().map(|(k, v)| (k.clone(), mark_unsafe(v))).collect())
        }
        Value::Array(a) => Value::Array(a.iter().map(mark_unsafe).collect()),
        other => other.clone(),
    }
}

/// Words kept whole by the conversion (upstream's `wordMapping`), in a fixed order.
const WORDS: [&str; 3] = ["HTTP", "URL", "IP"];

static NUMBER_SEQUENCE: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::Regex::new(r"([a-zA-Z])(\d+)([a-zA-Z](\d+))").unwrap_or_else(|e| panic!("{e}"))
});

/// A key in snake_case by upstream's `paramconv.ToSnake` rule (a leading capital gives a
/// leading `_`; acronyms stay one word; `HTTP`, `URL` and `IP` are words of their own).
pub fn to_snake(key: &str) -> String {
    let spaced = NUMBER_SEQUENCE.replace_all(key, "$1 $2 $3");
    let s = spaced.trim_matches(' ');
    let Some(first) = s.chars().next() else {
        return String::new();
    };
    let prefix = if first.is_ascii_uppercase() { "_" } else { "" };
    let s: Vec<char> = isolate_words(s).chars().collect();
    let upper = |c: char| c.is_ascii_uppercase();
    let lower = |c: char| c.is_ascii_lowercase();
    let mut bits: Vec<String> = Vec::new();
    let mut n = String::new();
    let mut i_real: i64 = -1;
    for (i, &v) in s.iter().enumerate() {
        i_real += 1;
        let case_changes = s
            .get(i + 1)
            .is_some_and(|&next| (upper(v) && lower(next)) || (lower(v) && upper(next)));
        if i_real > 0 && !n.ends_with('_') && case_changes {
            if upper(v) {
                bits.push(n.to_lowercase());
                n = v.to_string();
                i_real = 0;
            } else if lower(v) {
                n.push(v);
                bits.push(n.to_lowercase());
                n.clear();
                i_real = -1;
            }
        } else if v == ' ' || v == '_' || v == '-' {
            bits.push(n.to_lowercase());
            n.clear();
            i_real = -1;
        } else {
            n.push(v);
        }
    }
    bits.push(n.to_lowercase());
    let joined = bits.join("_");
    if WORDS.iter().any(|w| w.to_lowercase() == bits[0]) {
        joined
    } else {
        format!("{prefix}{joined}")
    }
}

/// Upstream's `preprocessWordMapping`: puts `_` around the first `HTTP`, `URL` or `IP` (and
/// its plural) so it becomes a word of its own.
fn isolate_words(value: &str) -> String {
    let mut value = value.to_string();
    for word in WORDS {
        let Some(idx) = value.find(word) else {
            continue;
        };
        let end = idx + word.len();
        value = if end == value.len() {
            format!("{}_{}", &value[..idx], &value[idx..])
        } else if value.as_bytes()[end] == b's' {
            if end == value.len() - 1 {
                format!("{}_{}S", &value[..idx], &value[idx..end])
            } else if idx == 0 {
                format!("{}S_{}", &value[..end], &value[end + 1..])
            } else {
                format!(
                    "{}_{}S_{}",
                    &value[..idx],
                    &value[idx..end],
                    &value[end + 1..]
                )
            }
        } else if idx == 0 {
            format!("{}_{}", &value[..end], &value[end..])
        } else {
            format!("{}_{}_{}", &value[..idx], &value[idx..end], &value[end..])
        };
    }
    value
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::watches::{Finalizer, Target};

    #[test]
    fn keys_convert_as_upstreams_paramconv() {
        // Upstream's paramconv_test.go cases, and the common ones.
        let cases = [
            ("888", "888"),
            ("k8s_var", "k8s_var"),
            ("_k8s_var", "_k8s_var"),
            ("k8s var", "k8s_var"),
            ("ThisShouldHaveUnderscores", "_this_should_have_underscores"),
            ("sizeK8sBuckets", "size_k8s_buckets"),
            ("_CanYou_Handle_mixedVars", "_can_you_handle_mixed_vars"),
            ("this_should_be_a_noop", "this_should_be_a_noop"),
            ("egressIPs", "egress_ips"),
            ("egressIPsEgress", "egress_ips_egress"),
            ("egressIPsegress", "egress_ips_egress"),
            ("IPsegress", "_ips_egress"),
            ("egressIP", "egress_ip"),
            ("egressIPEgress", "egress_ip_egress"),
            ("egressIPegress", "egress_ip_egress"),
            ("URLegressIPEgressHTTP", "url_egress_ip_egress_http"),
            ("replicaCount", "replica_count"),
            ("size", "size"),
        ];
        for (input, want) in cases {
            assert_eq!(to_snake(input), want, "{input}");
        }
    }

    fn watch() -> Watch {
        Watch {
            group: "cache.example-1.com".into(),
            version: "v1alpha1".into(),
            kind: "MemCached".into(),
            target: Target::Role("/r".into()),
            vars: serde_json::from_value(serde_json::json!({"state": "present"})).expect("map"),
            reconcile_period: None,
            manage_status: true,
            watch_dependent_resources: true,
            watch_cluster_scoped_resources: false,
            snake_case_parameters: true,
            watch_annotations_changes: false,
            mark_unsafe: false,
            max_runner_artifacts: 20,
            blacklist: vec![],
            selector: opkit_apimachinery::LabelSelector::everything(),
            finalizer: Some(Finalizer {
                name: "f".into(),
                target: None,
                vars: serde_json::from_value(serde_json::json!({"state": "absent"})).expect("map"),
            }),
        }
    }

    #[test]
    fn a_run_gets_operator_sdks_variables() {
        let obj = serde_json::json!({
            "apiVersion": "cache.example-1.com/v1alpha1", "kind": "MemCached",
            "metadata": {"name": "web", "namespace": "apps"},
            "spec": {"replicaCount": 3, "podTemplate": {"nodeSelector": {"diskType": "ssd"}},
                     "ports": [{"containerPort": 80}]},
        });
        let p = parameters(&watch(), &obj, false);
        assert_eq!(p["replica_count"], 3);
        assert_eq!(p["pod_template"]["node_selector"]["disk_type"], "ssd");
        assert_eq!(p["ports"][0]["container_port"], 80);
        assert_eq!(
            p["ansible_operator_meta"],
            serde_json::json!({"name": "web", "namespace": "apps"})
        );
        assert_eq!(p["_cache_example_1_com_memcached"], obj);
        assert_eq!(p["_cache_example_1_com_memcached_spec"], obj["spec"]);
        assert_eq!(p["state"], "present");
        let f = parameters(&watch(), &obj, true);
        assert_eq!(f["state"], "absent", "the finalizer's vars win on its run");
    }

    #[test]
    fn without_snake_case_or_spec_the_keys_stay() {
        let mut w = watch();
        w.snake_case_parameters = false;
        w.mark_unsafe = true;
        let obj = serde_json::json!({"metadata": {"name": "x"}, "spec": {"fooBar": "{{ x }}"}});
        let p = parameters(&w, &obj, false);
        assert_eq!(
            p["fooBar"],
            serde_json::json!({"__ansible_unsafe": "{{ x }}"})
        );
        let empty = parameters(&w, &serde_json::json!({"metadata": {"name": "x"}}), false);
        assert_eq!(
            empty["_cache_example_1_com_memcached_spec"],
            serde_json::json!({})
        );
        assert_eq!(empty["ansible_operator_meta"]["namespace"], "");
    }
}
