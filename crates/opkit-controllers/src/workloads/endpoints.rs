//! Service → Endpoints (same name) and an EndpointSlice, as upstream's endpoints and
//! endpointslice controllers: the pods the selector matches, ready ones as addresses and the
//! others as not-ready addresses (`conditions.ready=false` in the slice), with ports resolved
//! from `targetPort` (numbers, or container port names looked up in each pod).

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Endpoints, Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::api::{Api, PostParams};
use opkit::{Action, Caches, Context, Controller, ControllerDef, Request};
use opkit_apimachinery::LabelSelector as Selector;
use serde_json::{Value, json};

use super::pods;
use super::{
    BACKOFF, Result, WORKERS, controller_ref, is_status, reconciler, selects, stable_hash,
};

const MANAGED_BY: &str = "endpointslice-controller.k8s.io";

type Ctx = Context<()>;

/// The endpoints controller.
pub(crate) fn controller() -> ControllerDef {
    Controller::<Service>::new("endpoints")
        .watches_with_caches(services_of, None)
        .backoff(BACKOFF)
        .max_concurrent_reconciles(WORKERS)
        .build(reconciler("endpoints", reconcile), ())
}

/// A Service's `spec.selector` (upstream's `SelectorFromSet`); an absent or empty one selects no
/// pods (the Service's endpoints are managed by hand).
fn selector(svc: &Service) -> Option<Selector> {
    svc.spec
        .as_ref()?
        .selector
        .as_ref()
        .filter(|s| !s.is_empty())
        .map(Selector::from_set)
}

/// The Services whose selector matches a pod (before or after its change).
fn services_of(pod: &Pod, caches: &Caches) -> Vec<Request> {
    let Ok(store) = caches.store::<Service>() else {
        return Vec::new();
    };
    let ns = pod.metadata.namespace.as_deref();
    store
        .state()
        .iter()
        .filter(|s| s.metadata.namespace.as_deref() == ns)
        .filter(|s| selector(s).is_some_and(|sel| selects(&sel, pod.metadata.labels.as_ref())))
        .map(|s| Request::from_object(s.as_ref()))
        .collect()
}

/// The port a service port targets on `pod`, if it resolves.
fn resolve(target: Option<&IntOrString>, port: i32, pod: &Pod) -> Option<i32> {
    match target {
        None => Some(port),
        Some(IntOrString::Int(n)) => Some(*n),
        Some(IntOrString::String(name)) => pod
            .spec
            .as_ref()?
            .containers
            .iter()
            .flat_map(|c| c.ports.iter().flatten())
            .find(|p| p.name.as_deref() == Some(name.as_str()))
            .map(|p| p.container_port),
    }
}

async fn reconcile(svc: Arc<Service>, ctx: Arc<Ctx>) -> Result<Action> {
    let Some(sel) = selector(&svc) else {
        return Ok(Action::await_change());
    };
    if svc.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let ns = svc.metadata.namespace.clone().unwrap_or_default();
    let name = svc.metadata.name.clone().unwrap_or_default();
    let svc_ports = svc
        .spec
        .as_ref()
        .and_then(|s| s.ports.clone())
        .unwrap_or_default();
    let mut selected: Vec<Arc<Pod>> = ctx
        .store::<Pod>()?
        .state()
        .into_iter()
        .filter(|p| p.metadata.namespace.as_deref() == Some(ns.as_str()))
        .filter(|p| selects(&sel, p.metadata.labels.as_ref()) && pods::is_active(p))
        .filter(|p| p.status.as_ref().and_then(|s| s.pod_ip.as_ref()).is_some())
        .collect();
    selected.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));

    // Endpoints: one subset per distinct set of resolved ports.
    let mut subsets: BTreeMap<String, (Value, Vec<Value>, Vec<Value>)> = BTreeMap::new();
    let mut slice_endpoints = Vec::new();
    let mut slice_ports: Option<Vec<Value>> = None;
    for pod in &selected {
        let ports: Vec<Value> = svc_ports
            .iter()
            .filter_map(|p| {
                let port = resolve(p.target_port.as_ref(), p.port, pod)?;
                Some(json!({"name": p.name, "port": port, "protocol": p.protocol.as_deref().unwrap_or("TCP")}))
            })
            .collect();
        let ip = pod
            .status
            .as_ref()
            .and_then(|s| s.pod_ip.clone())
            .unwrap_or_default();
        let node = pod.spec.as_ref().and_then(|s| s.node_name.clone());
        let target = json!({"kind": "Pod", "name": pod.metadata.name, "namespace": ns, "uid": pod.metadata.uid});
        let address = json!({"ip": ip, "nodeName": node, "targetRef": target});
        let ready = pods::is_ready(pod);
        let key = serde_json::to_string(&ports)?;
        let entry = subsets
            .entry(key)
            .or_insert_with(|| (json!(ports), Vec::new(), Vec::new()));
        if ready {
            entry.1.push(address);
        } else {
            entry.2.push(address);
        }
        slice_ports.get_or_insert(ports);
        slice_endpoints.push(json!({
            "addresses": [ip],
            "conditions": {"ready": ready, "serving": ready, "terminating": false},
            "nodeName": node,
            "targetRef": target,
        }));
    }
    let subsets: Vec<Value> = subsets
        .into_values()
        .filter(|(ports, _, _)| {
            svc_ports.is_empty() || ports.as_array().is_some_and(|p| !p.is_empty())
        })
        .map(|(ports, ready, not_ready)| {
            let mut s = json!({"ports": ports});
            if !ready.is_empty() {
                s["addresses"] = json!(ready);
            }
            if !not_ready.is_empty() {
                s["notReadyAddresses"] = json!(not_ready);
            }
            s
        })
        .collect();
    let labels = svc.metadata.labels.clone().unwrap_or_default();
    let endpoints: Endpoints = serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": ns, "labels": labels},
        "subsets": subsets,
    }))?;
    let ep_api: Api<Endpoints> = Api::namespaced(ctx.client().clone(), &ns);
    match ep_api.get_opt(&name).await? {
        None => create(&ep_api, &endpoints).await?,
        Some(current)
            if current.subsets.clone().unwrap_or_default()
                != endpoints.subsets.clone().unwrap_or_default() =>
        {
            let mut next = endpoints.clone();
            next.metadata.resource_version = current.metadata.resource_version.clone();
            ep_api.replace(&name, &PostParams::default(), &next).await?;
        }
        Some(_) => {}
    }

    let uid = svc.metadata.uid.clone().unwrap_or_default();
    let slice_name = format!(
        "{name}-{}",
        &stable_hash(&uid, None)[..5.min(stable_hash(&uid, None).len())]
    );
    let mut slice_labels = labels.clone();
    slice_labels.insert("kubernetes.io/service-name".into(), name.clone());
    slice_labels.insert(
        "endpointslice.kubernetes.io/managed-by".into(),
        MANAGED_BY.into(),
    );
    let slice: EndpointSlice = serde_json::from_value(json!({
        "metadata": {"name": slice_name, "namespace": ns, "labels": slice_labels,
            "ownerReferences": [controller_ref(svc.as_ref())]},
        "addressType": "IPv4",
        "endpoints": slice_endpoints,
        "ports": slice_ports.unwrap_or_default(),
    }))?;
    let slice_api: Api<EndpointSlice> = Api::namespaced(ctx.client().clone(), &ns);
    match slice_api.get_opt(&slice_name).await? {
        None => create(&slice_api, &slice).await?,
        Some(current) if current.endpoints != slice.endpoints || current.ports != slice.ports => {
            let mut next = slice.clone();
            next.metadata.resource_version = current.metadata.resource_version.clone();
            slice_api
                .replace(&slice_name, &PostParams::default(), &next)
                .await?;
        }
        Some(_) => {}
    }
    Ok(Action::await_change())
}

async fn create<K>(api: &Api<K>, obj: &K) -> Result<()>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    match api.create(&PostParams::default(), obj).await {
        Ok(_) => Ok(()),
        Err(e) if is_status(&e, 409) => Ok(()),
        Err(e) => Err(e.into()),
    }
}
