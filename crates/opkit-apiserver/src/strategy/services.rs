//! Service IP and node port allocation, as kube-apiserver's service REST storage does it.
//!
//! A Service of type ClusterIP, NodePort or LoadBalancer gets a `clusterIP` from the service
//! CIDR [`SERVICE_CIDR`] when created (or keeps the one it asks for, if free), `clusterIPs`,
//! `ipFamilies: [IPv4]` and `ipFamilyPolicy: SingleStack`; headless Services (`clusterIP:
//! None`) keep `None`. NodePort and LoadBalancer Services get node ports from
//! [`NODE_PORTS`]. Both are immutable afterwards: an update that leaves them out gets the
//! allocated values back (upstream's `PatchAllocatedValues`), one that changes the cluster IP is
//! refused.
//!
//! There is no allocator state of its own: what is taken is read from the stored Services, so
//! it survives restarts; the allocation lock (`Api::allocation`) serialises the writes that allocate, so two creates never
//! pick the same address.

use std::collections::HashSet;
use std::net::Ipv4Addr;
use std::ops::RangeInclusive;

use opkit_store::ListOptions;
use rand::Rng;
use serde_json::{Map, Value, json};

use crate::error::{ApiError, ApiResult, Cause};
use crate::object;
use crate::registry::Resource;
use crate::storage::{self, Storage};
use crate::strategy::Strategy;

/// The service CIDR, as kube-apiserver's `--service-cluster-ip-range` default in kind/kubeadm.
pub const SERVICE_CIDR: &str = "10.96.0.0/12";
const BASE: u32 = u32::from_be_bytes([10, 96, 0, 0]);
const PREFIX: u32 = 12;
const SIZE: u32 = 1 << (32 - PREFIX);
/// Upstream reserves the lower band of the range for static allocation: dynamic allocation
/// takes from above it first (`min(max(16, size/16), 256)` addresses).
const STATIC_BAND: u32 = 256;
/// The node port range (`--service-node-port-range` default).
pub const NODE_PORTS: RangeInclusive<i64> = 30000..=32767;
/// The `kubernetes` Service's address: the first of the range.
pub const KUBERNETES_SERVICE_IP: Ipv4Addr = Ipv4Addr::new(10, 96, 0, 1);

/// The addresses and node ports taken by stored Services (except the one at `skip`).
struct InUse {
    ips: HashSet<u32>,
    node_ports: HashSet<(i64, String)>,
}

fn in_use(storage: &Storage, res: &Resource, skip: Option<&str>) -> InUse {
    let mut used = InUse {
        ips: HashSet::new(),
        node_ports: HashSet::new(),
    };
    let Ok(list) = storage.list(res, None, &ListOptions::default()) else {
        return used;
    };
    for entry in list.entries {
        if Some(&*entry.key) == skip {
            continue;
        }
        let Ok(svc) = serde_json::from_slice::<Value>(&entry.value) else {
            continue;
        };
        let spec = &svc["spec"];
        let ips = spec["clusterIPs"]
            .as_array()
            .into_iter()
            .flatten()
            .chain(std::iter::once(&spec["clusterIP"]));
        for ip in ips {
            if let Some(ip) = ip.as_str().and_then(|s| s.parse::<Ipv4Addr>().ok()) {
                used.ips.insert(u32::from(ip));
            }
        }
        for port in spec["ports"].as_array().into_iter().flatten() {
            if let Some(n) = port["nodePort"].as_i64() {
                used.node_ports.insert((n, protocol(port)));
            }
        }
    }
    used
}

fn protocol(port: &Value) -> String {
    port["protocol"].as_str().unwrap_or("TCP").to_string()
}

fn invalid(name: &str, field: &str, value: String, detail: &str) -> ApiError {
    ApiError::invalid(
        "",
        "Service",
        name,
        vec![Cause::new(
            "FieldValueInvalid",
            field,
            format!("Invalid value: {value}: {detail}"),
        )],
    )
}

/// Renders a bad value as kube-apiserver (1.34+) does: strings quoted, lists as JSON.
fn render(value: &Value) -> String {
    value.to_string()
}

fn spec_type(spec: &Map<String, Value>) -> &str {
    spec.get("type")
        .and_then(Value::as_str)
        .unwrap_or("ClusterIP")
}

fn needs_node_ports(spec: &Map<String, Value>) -> bool {
    match spec_type(spec) {
        "NodePort" => true,
        "LoadBalancer" => spec
            .get("allocateLoadBalancerNodePorts")
            .and_then(Value::as_bool)
            .unwrap_or(true),
        _ => false,
    }
}

fn str_list(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn in_range(ip: u32) -> bool {
    // The network address is not allocatable, nor (IPv4) the broadcast address.
    ip > BASE && ip < BASE + SIZE - 1
}

fn next_free_ip(used: &HashSet<u32>) -> Option<u32> {
    let upper = STATIC_BAND..SIZE - 1;
    let start = rand::rng().random_range(upper.clone());
    (start..upper.end)
        .chain(upper.start..start)
        .chain(1..STATIC_BAND)
        .map(|offset| BASE + offset)
        .find(|ip| !used.contains(ip))
}

fn next_free_port(used: &HashSet<(i64, String)>, protocol: &str) -> Option<i64> {
    let start = rand::rng().random_range(NODE_PORTS);
    (start..=*NODE_PORTS.end())
        .chain(*NODE_PORTS.start()..start)
        .find(|p| !used.contains(&(*p, protocol.to_string())))
}

/// Allocates the cluster IP and node ports of a Service about to be created (after defaulting).
/// Call with [`Allocator::lock`] held until the Service is stored.
fn allocate_create(storage: &Storage, res: &Resource, obj: &mut Value) -> ApiResult<()> {
    let name = object::name(obj).to_string();
    let Some(root) = obj.as_object_mut() else {
        return Ok(());
    };
    let spec = root
        .entry("spec")
        .or_insert_with(|| json!({}))
        .as_object_mut()
        .ok_or_else(|| ApiError::bad_request("spec must be an object"))?;
    if spec_type(spec) == "ExternalName" {
        return Ok(());
    }
    let mut used = in_use(storage, res, None);
    allocate_ip(&name, spec, &used)?;
    if needs_node_ports(spec) {
        if spec.get("externalTrafficPolicy").is_none_or(Value::is_null) {
            spec.insert("externalTrafficPolicy".into(), json!("Cluster"));
        }
        if spec_type(spec) == "LoadBalancer"
            && spec
                .get("allocateLoadBalancerNodePorts")
                .is_none_or(Value::is_null)
        {
            spec.insert("allocateLoadBalancerNodePorts".into(), json!(true));
        }
        allocate_node_ports(&name, spec, &mut used)?;
    }
    Ok(())
}

fn allocate_ip(name: &str, spec: &mut Map<String, Value>, used: &InUse) -> ApiResult<()> {
    let ips = str_list(spec.get("clusterIPs"));
    let single = spec
        .get("clusterIP")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let requested = ips.first().cloned().unwrap_or(single);
    let shown = if ips.is_empty() {
        json!([requested.clone()])
    } else {
        json!(ips)
    };
    if requested == "None" {
        let policy = if spec
            .get("selector")
            .and_then(Value::as_object)
            .is_some_and(|s| !s.is_empty())
        {
            "SingleStack"
        } else {
            "RequireDualStack"
        };
        spec.insert("clusterIP".into(), json!("None"));
        spec.insert("clusterIPs".into(), json!(["None"]));
        set_families(spec, policy);
        return Ok(());
    }
    let ip = if requested.is_empty() {
        next_free_ip(&used.ips).ok_or_else(|| {
            ApiError::internal("failed to allocate a serviceIP: range is full".to_string())
        })?
    } else {
        let Ok(parsed) = requested.parse::<Ipv4Addr>() else {
            return Err(invalid(
                name,
                "spec.clusterIPs[0]",
                render(&json!(requested)),
                "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
            ));
        };
        let ip = u32::from(parsed);
        if !in_range(ip) {
            return Err(invalid(
                name,
                "spec.clusterIPs",
                render(&shown),
                &format!(
                    "failed to allocate IP {requested}: the provided IP ({requested}) is not in the valid range. The range of valid IPs is {SERVICE_CIDR}"
                ),
            ));
        }
        if used.ips.contains(&ip) {
            return Err(invalid(
                name,
                "spec.clusterIPs",
                render(&shown),
                &format!("failed to allocate IP {requested}: provided IP is already allocated"),
            ));
        }
        ip
    };
    let ip = Ipv4Addr::from(ip).to_string();
    spec.insert("clusterIP".into(), json!(ip));
    spec.insert("clusterIPs".into(), json!([ip]));
    set_families(spec, "SingleStack");
    Ok(())
}

fn set_families(spec: &mut Map<String, Value>, policy: &str) {
    if spec.get("ipFamilies").is_none_or(Value::is_null) {
        spec.insert("ipFamilies".into(), json!(["IPv4"]));
    }
    if spec.get("ipFamilyPolicy").is_none_or(Value::is_null) {
        spec.insert("ipFamilyPolicy".into(), json!(policy));
    }
}

fn allocate_node_ports(
    name: &str,
    spec: &mut Map<String, Value>,
    used: &mut InUse,
) -> ApiResult<()> {
    let Some(ports) = spec.get_mut("ports").and_then(Value::as_array_mut) else {
        return Ok(());
    };
    // Requested ports first, so a dynamic pick never takes one asked for later in the list.
    for (i, port) in ports.iter().enumerate() {
        let Some(n) = port["nodePort"].as_i64().filter(|n| *n != 0) else {
            continue;
        };
        let field = format!("spec.ports[{i}].nodePort");
        if !NODE_PORTS.contains(&n) {
            return Err(invalid(
                name,
                &field,
                n.to_string(),
                &format!(
                    "provided port is not in the valid range. The range of valid ports is {}-{}",
                    NODE_PORTS.start(),
                    NODE_PORTS.end()
                ),
            ));
        }
        if !used.node_ports.insert((n, protocol(port))) {
            return Err(invalid(
                name,
                &field,
                n.to_string(),
                "provided port is already allocated",
            ));
        }
    }
    for port in ports.iter_mut() {
        if port["nodePort"].as_i64().is_some_and(|n| n != 0) {
            continue;
        }
        let proto = protocol(port);
        let n = next_free_port(&used.node_ports, &proto).ok_or_else(|| {
            ApiError::internal("failed to allocate a nodePort: range is full".to_string())
        })?;
        used.node_ports.insert((n, proto));
        if let Some(p) = port.as_object_mut() {
            p.insert("nodePort".into(), json!(n));
        }
    }
    Ok(())
}

/// Carries the allocated values of `old` over to an update that leaves them out, refuses a
/// change of the cluster IP, and allocates what the update newly needs (a cluster IP for a
/// Service that was ExternalName, node ports for new ports or a new type). Call with
/// [`Allocator::lock`] held until the Service is stored.
fn allocate_update(
    storage: &Storage,
    res: &Resource,
    old: &Value,
    new: &mut Value,
) -> ApiResult<()> {
    let name = object::name(old).to_string();
    let old_spec = old["spec"].as_object().cloned().unwrap_or_default();
    let Some(spec) = new.get_mut("spec").and_then(Value::as_object_mut) else {
        return Ok(());
    };
    let old_type = spec_type(&old_spec).to_string();
    if spec_type(spec) == "ExternalName" {
        return Ok(());
    }
    let key = storage::key(res, object::meta_str(old, "namespace"), &name);
    let mut used = in_use(storage, res, Some(&key));
    if old_type == "ExternalName" {
        allocate_ip(&name, spec, &used)?;
    } else {
        normalize_cluster_ips(&old_spec, spec);
        let old_ips = str_list(old_spec.get("clusterIPs"));
        let new_ips = str_list(spec.get("clusterIPs"));
        if !old_ips.is_empty() && new_ips.first() != old_ips.first() {
            let detail = if new_ips.is_empty() {
                "primary clusterIP can not be unset"
            } else {
                "may not change once set"
            };
            return Err(invalid(
                &name,
                "spec.clusterIPs[0]",
                render(&json!(new_ips)),
                detail,
            ));
        }
        for key in ["ipFamilies", "ipFamilyPolicy"] {
            if spec.get(key).is_none_or(Value::is_null)
                && let Some(v) = old_spec.get(key)
            {
                spec.insert(key.into(), v.clone());
            }
        }
    }
    if needs_node_ports(spec) {
        if needs_node_ports(&old_spec) {
            keep_node_ports(&old_spec, spec);
        }
        if spec.get("externalTrafficPolicy").is_none_or(Value::is_null) {
            spec.insert("externalTrafficPolicy".into(), json!("Cluster"));
        }
        // The Service's own old ports are free for it to keep.
        allocate_node_ports(&name, spec, &mut used)?;
    }
    Ok(())
}

/// Upstream's `PatchAllocatedValues` + `NormalizeClusterIPs` for the cluster IP fields.
fn normalize_cluster_ips(old: &Map<String, Value>, new: &mut Map<String, Value>) {
    let old_ip = old.get("clusterIP").and_then(Value::as_str).unwrap_or("");
    let new_ip = new
        .get("clusterIP")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let new_ips = str_list(new.get("clusterIPs"));
    if new_ip.is_empty() && new_ips.is_empty() {
        // A client that does not know the allocated values (a PUT of its own manifest).
        for key in ["clusterIP", "clusterIPs"] {
            if let Some(v) = old.get(key) {
                new.insert(key.into(), v.clone());
            }
        }
        return;
    }
    if new_ips.is_empty() && new_ip == old_ip {
        if let Some(v) = old.get("clusterIPs") {
            new.insert("clusterIPs".into(), v.clone());
        }
        return;
    }
    if new_ip != old_ip && !new_ip.is_empty() {
        let old_ips = str_list(old.get("clusterIPs"));
        if new_ips.is_empty() || new_ips == old_ips {
            let mut ips = if new_ips.is_empty() { old_ips } else { new_ips };
            if ips.is_empty() {
                ips.push(new_ip.clone());
            } else {
                ips[0] = new_ip.clone();
            }
            new.insert("clusterIPs".into(), json!(ips));
        }
    }
    if new_ip.is_empty()
        && let Some(first) = str_list(new.get("clusterIPs")).first()
    {
        new.insert("clusterIP".into(), json!(first));
    }
}

/// Gives ports without a node port the one the same port (by name, else number and protocol)
/// had before.
fn keep_node_ports(old: &Map<String, Value>, new: &mut Map<String, Value>) {
    let old_ports: Vec<Value> = old
        .get("ports")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for port in new
        .get_mut("ports")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        if port["nodePort"].as_i64().is_some_and(|n| n != 0) {
            continue;
        }
        let same = old_ports.iter().find(|o| {
            let named = port["name"].as_str().filter(|n| !n.is_empty());
            match named {
                Some(n) => o["name"].as_str() == Some(n),
                None => o["port"] == port["port"] && protocol(o) == protocol(port),
            }
        });
        if let Some(n) = same.and_then(|o| o["nodePort"].as_i64())
            && let Some(p) = port.as_object_mut()
        {
            p.insert("nodePort".into(), json!(n));
        }
    }
}

/// The host address of `server_address` (`HOST:PORT`) to put in the `kubernetes` Endpoints.
fn endpoint_address(server_address: &str) -> (String, i64) {
    let (host, port) = server_address
        .rsplit_once(':')
        .unwrap_or((server_address, "443"));
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let port = port.parse().unwrap_or(443);
    match host.parse::<std::net::IpAddr>() {
        Ok(ip) if !ip.is_unspecified() => (ip.to_string(), port),
        _ => ("127.0.0.1".to_string(), port),
    }
}

/// The `kubernetes` Service in `default` (10.96.0.1:443) and its Endpoints and EndpointSlice,
/// pointing at this server.
pub(crate) fn kubernetes_objects(server_address: &str) -> [(&'static str, &'static str, Value); 3] {
    let (ip, port) = endpoint_address(server_address);
    let labels = json!({"component": "apiserver", "provider": "kubernetes"});
    let service = json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "kubernetes", "namespace": "default", "labels": labels},
        "spec": {
            "type": "ClusterIP",
            "clusterIP": KUBERNETES_SERVICE_IP.to_string(),
            "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": port}],
            "sessionAffinity": "None",
        },
    });
    let endpoints = json!({
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": {"name": "kubernetes", "namespace": "default", "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"}},
        "subsets": [{
            "addresses": [{"ip": ip}],
            "ports": [{"name": "https", "port": port, "protocol": "TCP"}],
        }],
    });
    let slice = json!({
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {"name": "kubernetes", "namespace": "default", "labels": {"kubernetes.io/service-name": "kubernetes"}},
        "addressType": if ip.contains(':') { "IPv6" } else { "IPv4" },
        "endpoints": [{"addresses": [ip], "conditions": {"ready": true}}],
        "ports": [{"name": "https", "port": port, "protocol": "TCP"}],
    });
    [
        ("", "services", service),
        ("", "endpoints", endpoints),
        ("discovery.k8s.io", "endpointslices", slice),
    ]
}

/// core/v1 Services: cluster IPs and node ports are allocated when they are written.
pub(crate) struct Services;

impl Strategy for Services {
    fn initial_status(&self, _obj: &Value) -> Option<Value> {
        Some(json!({"loadBalancer": {}}))
    }

    fn allocates(&self) -> bool {
        true
    }

    fn allocate_create(&self, storage: &Storage, res: &Resource, obj: &mut Value) -> ApiResult<()> {
        allocate_create(storage, res, obj)
    }

    fn allocate_update(
        &self,
        storage: &Storage,
        res: &Resource,
        current: &Value,
        new: &mut Value,
    ) -> ApiResult<()> {
        allocate_update(storage, res, current, new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dynamic_ips_avoid_the_static_band_and_taken_addresses() {
        let mut used = HashSet::new();
        for _ in 0..50 {
            let ip = next_free_ip(&used).unwrap();
            assert!(in_range(ip));
            assert!(ip >= BASE + STATIC_BAND, "{}", Ipv4Addr::from(ip));
            assert!(used.insert(ip));
        }
    }

    #[test]
    fn range_excludes_network_and_broadcast() {
        assert!(!in_range(BASE));
        assert!(in_range(u32::from(KUBERNETES_SERVICE_IP)));
        assert!(in_range(u32::from(Ipv4Addr::new(10, 111, 255, 254))));
        assert!(!in_range(u32::from(Ipv4Addr::new(10, 111, 255, 255))));
        assert!(!in_range(u32::from(Ipv4Addr::new(10, 112, 0, 1))));
    }

    #[test]
    fn an_update_without_cluster_ip_keeps_the_allocated_one() {
        let old = json!({"clusterIP": "10.96.0.5", "clusterIPs": ["10.96.0.5"]});
        let mut new = json!({"ports": []});
        normalize_cluster_ips(old.as_object().unwrap(), new.as_object_mut().unwrap());
        assert_eq!(new["clusterIPs"], json!(["10.96.0.5"]));
        assert_eq!(new["clusterIP"], "10.96.0.5");

        // Changing only the singular field changes the plural one too (then refused).
        let mut new = json!({"clusterIP": "10.96.0.6", "clusterIPs": ["10.96.0.5"]});
        normalize_cluster_ips(old.as_object().unwrap(), new.as_object_mut().unwrap());
        assert_eq!(new["clusterIPs"], json!(["10.96.0.6"]));
    }

    #[test]
    fn endpoint_address_of_the_server() {
        assert_eq!(
            endpoint_address("127.0.0.1:6443"),
            ("127.0.0.1".into(), 6443)
        );
        assert_eq!(
            endpoint_address("localhost:1234"),
            ("127.0.0.1".into(), 1234)
        );
        assert_eq!(endpoint_address("[::1]:1234"), ("::1".into(), 1234));
    }
}
