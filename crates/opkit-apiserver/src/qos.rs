//! A pod's quality-of-service class (`status.qosClass`), which kube-apiserver sets when a pod
//! is created and never changes afterwards: schedulers, kubelets and `kubectl describe` read it.

use std::collections::BTreeMap;

use opkit_apimachinery::Quantity;
use serde_json::Value;

/// The resources the QoS class looks at (upstream's `supportedQoSComputeResources`).
const QOS_RESOURCES: [&str; 2] = ["cpu", "memory"];

/// Sums of positive cpu and memory quantities, by resource name.
type Totals = BTreeMap<&'static str, Quantity>;

/// The QoS class of a pod with this `spec`, as upstream's `ComputePodQOS`
/// (`pkg/apis/core/helper/qos`, with pod-level resources and the kubelet QoS fix on):
/// `BestEffort` when nothing requests or limits cpu or memory, `Guaranteed` when every
/// container (init containers included) limits both and the requests equal the limits,
/// `Burstable` otherwise. Requests a container leaves out default to its limits, and
/// pod-level requests to the containers' requests or else the pod-level limits, as upstream's
/// defaulting does before it computes the class. Zero and unparsable quantities count as unset.
pub fn pod_qos_class(spec: &Value) -> &'static str {
    let mut requests = Totals::new();
    let mut limits = Totals::new();
    let mut guaranteed = true;
    let containers = || {
        ["containers", "initContainers"]
            .into_iter()
            .filter_map(|key| spec.get(key).and_then(Value::as_array))
            .flatten()
    };
    let pod_level = spec.get("resources").filter(|r| sets_pod_level(r));
    if let Some(pod) = pod_level {
        let pod_limits = pod.get("limits");
        add(&mut limits, pod_limits);
        if !QOS_RESOURCES.iter().all(|r| limits.contains_key(r)) {
            guaranteed = false;
        }
        add(&mut requests, pod.get("requests"));
        // Pod-level requests left out default to what the containers request, else to the
        // pod-level limit (upstream's `defaultPodRequests`, which only runs with limits set).
        if pod_limits.is_some_and(|l| l.as_object().is_some_and(|m| !m.is_empty())) {
            // (Upstream takes the larger of that and each init container's; regular
            // containers are what matters in practice.)
            let mut from_containers = Totals::new();
            for c in spec
                .get("containers")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                add(&mut from_containers, Some(&effective_requests(c)));
            }
            for name in QOS_RESOURCES {
                if quantity(pod.get("requests").and_then(|r| r.get(name))).is_some() {
                    continue;
                }
                if let Some(q) = from_containers.get(name).or_else(|| limits.get(name)) {
                    requests.insert(name, *q);
                }
            }
        }
    } else {
        for c in containers() {
            add(&mut requests, Some(&effective_requests(c)));
            let mut own = Totals::new();
            add(&mut own, c.pointer("/resources/limits"));
            if !QOS_RESOURCES.iter().all(|r| own.contains_key(r)) {
                guaranteed = false;
            }
            for (name, q) in own {
                accumulate(&mut limits, name, q);
            }
        }
    }
    if requests.is_empty() && limits.is_empty() {
        return "BestEffort";
    }
    if guaranteed
        && requests.len() == limits.len()
        && requests.iter().all(|(n, r)| limits.get(n) == Some(r))
    {
        return "Guaranteed";
    }
    "Burstable"
}

/// Whether pod-level `resources` name cpu, memory or huge pages (upstream's
/// `isPodLevelResourcesSet`): an empty block leaves the class to the containers.
fn sets_pod_level(resources: &Value) -> bool {
    ["requests", "limits"]
        .iter()
        .filter_map(|k| resources.get(k).and_then(Value::as_object))
        .flat_map(|m| m.keys())
        .any(|name| QOS_RESOURCES.contains(&name.as_str()) || name.starts_with("hugepages-"))
}

/// A container's requests, with limits standing in for requests it leaves out (upstream's
/// `SetDefaults_Pod`).
fn effective_requests(container: &Value) -> Value {
    let mut out = container
        .pointer("/resources/requests")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    if let Some(limits) = container
        .pointer("/resources/limits")
        .and_then(Value::as_object)
    {
        for (name, q) in limits {
            out.entry(name.clone()).or_insert_with(|| q.clone());
        }
    }
    Value::Object(out)
}

/// Adds the positive cpu and memory quantities of a resource list to `totals`.
fn add(totals: &mut Totals, list: Option<&Value>) {
    for name in QOS_RESOURCES {
        if let Some(q) = quantity(list.and_then(|l| l.get(name))) {
            accumulate(totals, name, q);
        }
    }
}

fn accumulate(totals: &mut Totals, name: &'static str, q: Quantity) {
    let sum = totals.get(name).map_or(0, |t| t.0).saturating_add(q.0);
    totals.insert(name, Quantity(sum));
}

/// A positive quantity, written as a string (or, leniently, a JSON number).
fn quantity(v: Option<&Value>) -> Option<Quantity> {
    let q = match v? {
        Value::String(s) => Quantity::parse(s),
        Value::Number(n) => Quantity::parse(&n.to_string()),
        _ => None,
    }?;
    q.is_positive().then_some(q)
}

#[cfg(test)]
mod tests {
    use super::pod_qos_class;
    use serde_json::json;

    fn pod(containers: serde_json::Value) -> serde_json::Value {
        json!({"containers": containers})
    }

    #[test]
    fn no_cpu_or_memory_anywhere_is_best_effort() {
        assert_eq!(pod_qos_class(&pod(json!([{"name": "a"}]))), "BestEffort");
        let other = json!([{"name": "a", "resources": {"limits": {"ephemeral-storage": "1Gi"}, "requests": {"cpu": "0"}}}]);
        assert_eq!(pod_qos_class(&pod(other)), "BestEffort");
    }

    #[test]
    fn limits_alone_or_equal_requests_on_every_container_are_guaranteed() {
        let limits_only =
            json!([{"name": "a", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}]);
        assert_eq!(pod_qos_class(&pod(limits_only)), "Guaranteed");
        let equal = json!([
            {"name": "a", "resources": {"limits": {"cpu": "500m", "memory": "1Gi"}, "requests": {"cpu": "0.5", "memory": "1024Mi"}}},
        ]);
        let mut spec = pod(equal);
        spec["initContainers"] =
            json!([{"name": "i", "resources": {"limits": {"cpu": "1", "memory": "64Mi"}}}]);
        assert_eq!(pod_qos_class(&spec), "Guaranteed");
    }

    #[test]
    fn anything_less_is_burstable() {
        let lower_request = json!([{"name": "a", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m"}}}]);
        assert_eq!(pod_qos_class(&pod(lower_request)), "Burstable");
        let cpu_limit_only = json!([{"name": "a", "resources": {"limits": {"cpu": "1"}}}]);
        assert_eq!(pod_qos_class(&pod(cpu_limit_only)), "Burstable");
        let one_unlimited = json!([
            {"name": "a", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}},
            {"name": "b"},
        ]);
        assert_eq!(pod_qos_class(&pod(one_unlimited)), "Burstable");
        let mut init_unlimited =
            pod(json!([{"name": "a", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}]));
        init_unlimited["initContainers"] =
            json!([{"name": "i", "resources": {"requests": {"memory": "1Mi"}}}]);
        assert_eq!(pod_qos_class(&init_unlimited), "Burstable");
    }

    #[test]
    fn pod_level_resources_decide_when_they_name_cpu_or_memory() {
        let mut spec = pod(json!([{"name": "a"}]));
        spec["resources"] = json!({"limits": {"cpu": "1", "memory": "1Gi"}});
        assert_eq!(pod_qos_class(&spec), "Guaranteed");
        spec["containers"] = json!([{"name": "a", "resources": {"requests": {"cpu": "100m"}}}]);
        assert_eq!(pod_qos_class(&spec), "Burstable");
        spec["resources"] = json!({});
        assert_eq!(
            pod_qos_class(&spec),
            "Burstable",
            "an empty block defers to containers"
        );
    }
}
