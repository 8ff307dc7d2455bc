//! Defaulting of built-in kinds, as kube-apiserver's `SetDefaults_*` functions do.
//!
//! Clients read these defaults back (`kubectl get -o yaml`, operators diffing desired against
//! current state), so a stored Deployment must carry its `strategy`, a Pod its `restartPolicy`,
//! a Secret its `type`, exactly as on a real cluster.

use serde_json::{Map, Value, json};

fn obj(v: &mut Value) -> Option<&mut Map<String, Value>> {
    v.as_object_mut()
}

fn set_default(map: &mut Map<String, Value>, key: &str, value: Value) {
    if map.get(key).is_none_or(Value::is_null) {
        map.insert(key.to_string(), value);
    }
}

fn child<'a>(map: &'a mut Map<String, Value>, key: &str) -> Option<&'a mut Map<String, Value>> {
    map.get_mut(key).and_then(Value::as_object_mut)
}

fn ports(list: Option<&mut Value>, target_port: bool) {
    for port in list.and_then(Value::as_array_mut).into_iter().flatten() {
        if let Some(p) = obj(port) {
            set_default(p, "protocol", json!("TCP"));
            if target_port && let Some(n) = p.get("port").cloned() {
                set_default(p, "targetPort", n);
            }
        }
    }
}

fn container(c: &mut Value) {
    let Some(c) = obj(c) else { return };
    let image = c.get("image").and_then(Value::as_str).unwrap_or("");
    let last = image.rsplit('/').next().unwrap_or(image);
    let latest = !image.contains('@') && (!last.contains(':') || last.ends_with(":latest"));
    set_default(
        c,
        "imagePullPolicy",
        json!(if latest { "Always" } else { "IfNotPresent" }),
    );
    set_default(c, "terminationMessagePath", json!("/dev/termination-log"));
    set_default(c, "terminationMessagePolicy", json!("File"));
    set_default(c, "resources", json!({}));
    ports(c.get_mut("ports"), false);
}

/// PodSpec defaults.
pub fn pod_spec(spec: &mut Map<String, Value>) {
    set_default(spec, "restartPolicy", json!("Always"));
    set_default(spec, "dnsPolicy", json!("ClusterFirst"));
    set_default(spec, "schedulerName", json!("default-scheduler"));
    set_default(spec, "terminationGracePeriodSeconds", json!(30));
    set_default(spec, "securityContext", json!({}));
    containers_mut(spec).for_each(container);
}

/// A pod spec's containers and init containers.
fn containers_mut(spec: &mut Map<String, Value>) -> impl Iterator<Item = &mut Value> {
    spec.iter_mut()
        .filter(|(key, _)| matches!(key.as_str(), "containers" | "initContainers"))
        .filter_map(|(_, list)| list.as_array_mut())
        .flatten()
}

/// A pod's containers request what they limit unless they say otherwise (upstream's
/// `SetDefaults_Pod`; pod templates are left alone, as upstream does).
fn requests_from_limits(spec: &mut Map<String, Value>) {
    for c in containers_mut(spec) {
        let Some(resources) = c.get_mut("resources").and_then(Value::as_object_mut) else {
            continue;
        };
        let Some(limits) = resources.get("limits").and_then(Value::as_object).cloned() else {
            continue;
        };
        let requests = resources.entry("requests").or_insert_with(|| json!({}));
        if let Some(requests) = requests.as_object_mut() {
            for (name, q) in limits {
                requests.entry(name).or_insert(q);
            }
        }
    }
}

fn template(spec: &mut Map<String, Value>) {
    if let Some(t) = child(spec, "template")
        && let Some(ps) = child(t, "spec")
    {
        pod_spec(ps);
    }
}

/// An admission webhook's defaults (upstream's `SetDefaults_ValidatingWebhook` and
/// `SetDefaults_MutatingWebhook`, `admissionregistration/v1`).
fn webhook(hook: &mut Map<String, Value>, mutating: bool) {
    set_default(hook, "failurePolicy", json!("Fail"));
    set_default(hook, "matchPolicy", json!("Equivalent"));
    set_default(hook, "namespaceSelector", json!({}));
    set_default(hook, "objectSelector", json!({}));
    set_default(hook, "timeoutSeconds", json!(10));
    if mutating {
        set_default(hook, "reinvocationPolicy", json!("Never"));
    }
    for rule in hook
        .get_mut("rules")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        if let Some(rule) = obj(rule) {
            set_default(rule, "scope", json!("*"));
        }
    }
    if let Some(service) = child(hook, "clientConfig").and_then(|c| child(c, "service")) {
        set_default(service, "port", json!(443));
    }
}

/// Upstream's defaults of a policy's `matchConstraints` or a binding's `matchResources`.
fn match_resources(m: &mut Map<String, Value>) {
    set_default(m, "matchPolicy", json!("Equivalent"));
    set_default(m, "namespaceSelector", json!({}));
    set_default(m, "objectSelector", json!({}));
    for key in ["resourceRules", "excludeResourceRules"] {
        for rule in m
            .get_mut(key)
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            if let Some(rule) = obj(rule) {
                set_default(rule, "scope", json!("*"));
            }
        }
    }
}

/// Applies the defaults of a built-in kind in place.
pub fn apply(group: &str, plural: &str, object: &mut Value) {
    let Some(root) = obj(object) else { return };
    match (group, plural) {
        (
            "admissionregistration.k8s.io",
            "validatingwebhookconfigurations" | "mutatingwebhookconfigurations",
        ) => {
            let mutating = plural.starts_with("mutating");
            for hook in root
                .get_mut("webhooks")
                .and_then(Value::as_array_mut)
                .into_iter()
                .flatten()
            {
                if let Some(hook) = obj(hook) {
                    webhook(hook, mutating);
                }
            }
        }
        ("admissionregistration.k8s.io", "validatingadmissionpolicies") => {
            if let Some(spec) = child(root, "spec") {
                set_default(spec, "failurePolicy", json!("Fail"));
                if let Some(m) = child(spec, "matchConstraints") {
                    match_resources(m);
                }
            }
        }
        ("admissionregistration.k8s.io", "validatingadmissionpolicybindings") => {
            if let Some(m) = child(root, "spec").and_then(|s| child(s, "matchResources")) {
                match_resources(m);
            }
        }
        ("", "secrets") => set_default(root, "type", json!("Opaque")),
        ("", "pods") => {
            if let Some(spec) = child(root, "spec") {
                pod_spec(spec);
                requests_from_limits(spec);
            }
        }
        ("", "services") => {
            if let Some(spec) = child(root, "spec") {
                set_default(spec, "type", json!("ClusterIP"));
                set_default(spec, "sessionAffinity", json!("None"));
                set_default(spec, "internalTrafficPolicy", json!("Cluster"));
                ports(spec.get_mut("ports"), true);
            }
        }
        ("apps", "deployments") => {
            if let Some(spec) = child(root, "spec") {
                set_default(spec, "replicas", json!(1));
                set_default(spec, "revisionHistoryLimit", json!(10));
                set_default(spec, "progressDeadlineSeconds", json!(600));
                set_default(spec, "strategy", json!({}));
                if let Some(strategy) = child(spec, "strategy") {
                    set_default(strategy, "type", json!("RollingUpdate"));
                    if strategy.get("type").and_then(Value::as_str) == Some("RollingUpdate") {
                        set_default(strategy, "rollingUpdate", json!({}));
                        if let Some(ru) = child(strategy, "rollingUpdate") {
                            set_default(ru, "maxSurge", json!("25%"));
                            set_default(ru, "maxUnavailable", json!("25%"));
                        }
                    }
                }
                template(spec);
            }
        }
        ("apps", "replicasets") => {
            if let Some(spec) = child(root, "spec") {
                set_default(spec, "replicas", json!(1));
                template(spec);
            }
        }
        ("apps", "statefulsets") => {
            if let Some(spec) = child(root, "spec") {
                set_default(spec, "replicas", json!(1));
                set_default(spec, "podManagementPolicy", json!("OrderedReady"));
                set_default(spec, "revisionHistoryLimit", json!(10));
                set_default(
                    spec,
                    "persistentVolumeClaimRetentionPolicy",
                    json!({"whenDeleted": "Retain", "whenScaled": "Retain"}),
                );
                set_default(
                    spec,
                    "updateStrategy",
                    json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}),
                );
                template(spec);
            }
        }
        ("apps", "daemonsets") => {
            if let Some(spec) = child(root, "spec") {
                set_default(spec, "revisionHistoryLimit", json!(10));
                set_default(
                    spec,
                    "updateStrategy",
                    json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}}),
                );
                template(spec);
            }
        }
        ("batch", "jobs") => {
            if let Some(spec) = child(root, "spec") {
                set_default(spec, "parallelism", json!(1));
                set_default(spec, "backoffLimit", json!(6));
                set_default(spec, "completionMode", json!("NonIndexed"));
                set_default(spec, "suspend", json!(false));
                set_default(spec, "podReplacementPolicy", json!("TerminatingOrFailed"));
                if spec.get("completions").is_none() && spec.get("parallelism") == Some(&json!(1)) {
                    spec.insert("completions".into(), json!(1));
                }
                template(spec);
            }
        }
        ("batch", "cronjobs") => {
            if let Some(spec) = child(root, "spec") {
                set_default(spec, "concurrencyPolicy", json!("Allow"));
                set_default(spec, "suspend", json!(false));
                set_default(spec, "successfulJobsHistoryLimit", json!(3));
                set_default(spec, "failedJobsHistoryLimit", json!(1));
                if let Some(jt) = child(spec, "jobTemplate")
                    && let Some(js) = child(jt, "spec")
                {
                    template(js);
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_default_to_opaque() {
        let mut s = json!({"data": {}});
        apply("", "secrets", &mut s);
        assert_eq!(s["type"], "Opaque");
    }

    #[test]
    fn deployments_get_rolling_update_strategy_and_pod_defaults() {
        let mut d = json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "nginx", "ports": [{"containerPort": 80}]}]}}}});
        apply("apps", "deployments", &mut d);
        assert_eq!(d["spec"]["replicas"], 1);
        assert_eq!(d["spec"]["strategy"]["rollingUpdate"]["maxSurge"], "25%");
        let c = &d["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(c["imagePullPolicy"], "Always");
        assert_eq!(c["ports"][0]["protocol"], "TCP");
        assert_eq!(d["spec"]["template"]["spec"]["restartPolicy"], "Always");
    }

    #[test]
    fn tagged_images_pull_if_not_present() {
        let mut p = json!({"spec": {"containers": [{"name": "c", "image": "registry:5000/memcached:1.6"}]}});
        apply("", "pods", &mut p);
        assert_eq!(
            p["spec"]["containers"][0]["imagePullPolicy"],
            "IfNotPresent"
        );
    }

    #[test]
    fn pod_containers_request_what_they_limit_but_templates_do_not() {
        let c = json!([{"name": "c", "image": "x", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m"}}}]);
        let mut p = json!({"spec": {"containers": c.clone(), "initContainers": c.clone()}});
        apply("", "pods", &mut p);
        for key in ["containers", "initContainers"] {
            assert_eq!(
                p["spec"][key][0]["resources"]["requests"],
                json!({"cpu": "500m", "memory": "1Gi"})
            );
        }
        let mut d = json!({"spec": {"template": {"spec": {"containers": c}}}});
        apply("apps", "deployments", &mut d);
        assert_eq!(
            d["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"],
            json!({"cpu": "500m"})
        );
    }

    #[test]
    fn recreate_strategy_gets_no_rolling_update_block() {
        let mut d = json!({"spec": {"strategy": {"type": "Recreate"}, "template": {"spec": {"containers": []}}}});
        apply("apps", "deployments", &mut d);
        assert!(d["spec"]["strategy"].get("rollingUpdate").is_none());
    }
}
