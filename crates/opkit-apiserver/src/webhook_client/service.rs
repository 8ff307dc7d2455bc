//! Resolving a webhook's `clientConfig.service` on this control plane.
//!
//! A real cluster routes the call to the Service's pods. Here no pod runs a process, so the
//! Service's endpoints name where the webhook really listens: an operator that runs as a
//! local process gives its webhook Service no selector and an Endpoints object (or an
//! EndpointSlice labelled `kubernetes.io/service-name`) whose address is the local address it
//! serves on (`127.0.0.1`) and whose port is its port. The same webhook configuration works
//! unchanged on a real cluster, where the Service selects the operator's pods. The call is
//! made to that address, with the certificate checked for `NAME.NAMESPACE.svc`, as upstream
//! checks it (kube-apiserver's `--enable-aggregator-routing` resolves to endpoints the same
//! way).

use serde_json::Value;

use crate::registry::Registry;
use crate::request::ObjectRef;
use crate::storage::Storage;

fn get(
    storage: &Storage,
    registry: &Registry,
    group: &str,
    version: &str,
    plural: &str,
    ns: &str,
    name: &str,
) -> Option<Value> {
    let snapshot = registry.snapshot();
    let res = snapshot.get(group, version, plural)?;
    let target = ObjectRef {
        res,
        ns: Some(ns),
        name,
    };
    storage.current(target).ok().map(|c| c.object)
}

/// `host:port` the webhook Service `ns/name`'s port `port` is served at, or why there is none.
pub(crate) fn resolve(
    storage: &Storage,
    registry: &Registry,
    ns: &str,
    name: &str,
    port: u16,
) -> Result<String, String> {
    let service = get(storage, registry, "", "v1", "services", ns, name)
        .ok_or_else(|| format!("service \"{name}\" not found"))?;
    let ports = service
        .pointer("/spec/ports")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let service_port = ports
        .iter()
        .find(|p| p.get("port").and_then(Value::as_u64) == Some(u64::from(port)))
        .ok_or_else(|| format!("no service port {port} found for service \"{name}\""))?;
    let port_name = service_port
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("");
    // The number of the port named like the Service's port, in an Endpoints subset's or an
    // EndpointSlice's `ports`.
    let port_in = |holder: &Value| {
        holder
            .get("ports")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .find(|p| p.get("name").and_then(Value::as_str).unwrap_or("") == port_name)
            .and_then(|p| p.get("port").and_then(Value::as_u64))
    };
    if let Some(endpoints) = get(storage, registry, "", "v1", "endpoints", ns, name) {
        for subset in endpoints
            .get("subsets")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let port = port_in(subset);
            let ip = subset
                .get("addresses")
                .and_then(Value::as_array)
                .and_then(|a| a.first())
                .and_then(|a| a.get("ip"))
                .and_then(Value::as_str);
            if let (Some(ip), Some(port)) = (ip, port) {
                return Ok(host_port(ip, port));
            }
        }
    }
    for slice in slices(storage, registry, ns, name) {
        let port = port_in(&slice);
        let ip = slice
            .get("endpoints")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|e| e.pointer("/conditions/ready").and_then(Value::as_bool) != Some(false))
            .find_map(|e| e.pointer("/addresses/0").and_then(Value::as_str));
        if let (Some(ip), Some(port)) = (ip, port) {
            return Ok(host_port(ip, port));
        }
    }
    Err(format!("no endpoints available for service \"{name}\""))
}

fn slices(storage: &Storage, registry: &Registry, ns: &str, service: &str) -> Vec<Value> {
    let snapshot = registry.snapshot();
    let Some(res) = snapshot.get("discovery.k8s.io", "v1", "endpointslices") else {
        return Vec::new();
    };
    let Ok(list) = storage.list(res, Some(ns), &opkit_store::ListOptions::default()) else {
        return Vec::new();
    };
    list.entries
        .into_iter()
        .filter_map(|e| serde_json::from_slice::<Value>(&e.value).ok())
        .filter(|s| {
            s.pointer("/metadata/labels/kubernetes.io~1service-name")
                .and_then(Value::as_str)
                == Some(service)
        })
        .collect()
}

fn host_port(ip: &str, port: u64) -> String {
    match ip.contains(':') {
        true => format!("[{ip}]:{port}"),
        false => format!("{ip}:{port}"),
    }
}
