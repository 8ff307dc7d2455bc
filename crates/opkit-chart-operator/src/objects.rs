//! The objects of a release on a live cluster: a manifest read into objects (with the
//! release's namespace, Helm's ownership metadata and the owner reference), each kind
//! resolved through discovery, and the three writes a release makes — server-side apply,
//! replace (upgrade-force), delete — plus the read-only check that lets an unchanged release
//! cost zero writes: every field the chart sets must equal the live object's.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::discovery::{Discovery, Scope};
use opkit_chart::{Capabilities, KubeVersion, split_manifests};
use serde_json::Value as Json;

use crate::error::ActionError;
use crate::release::go_json;

/// Helm's annotation that keeps a resource on uninstall and upgrade.
pub const RESOURCE_POLICY_ANNOTATION: &str = "helm.sh/resource-policy";

/// One object of a rendered manifest.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Object {
    pub(crate) api_version: String,
    pub(crate) kind: String,
    pub(crate) name: String,
    /// Set once the kind is known to be namespaced.
    pub(crate) namespace: Option<String>,
    pub(crate) body: Json,
}

impl Object {
    /// `Kind namespace/name`, for messages.
    pub(crate) fn describe(&self) -> String {
        match &self.namespace {
            Some(ns) => format!("{ns}/{}", self.name),
            None => self.name.clone(),
        }
    }

    /// The identity Helm compares releases by (group, kind, namespace, name).
    pub(crate) fn key(&self) -> (String, String, Option<String>, String) {
        let group = self
            .api_version
            .rsplit_once('/')
            .map(|(g, _)| g.to_string())
            .unwrap_or_default();
        (
            group,
            self.kind.clone(),
            self.namespace.clone(),
            self.name.clone(),
        )
    }

    /// Whether `helm.sh/resource-policy: keep` protects it.
    pub(crate) fn keep(&self) -> bool {
        self.body
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(RESOURCE_POLICY_ANNOTATION))
            .and_then(Json::as_str)
            .is_some_and(|p| p.trim().eq_ignore_ascii_case("keep"))
    }
}

/// Reads every document of `manifest` into an object (empty documents are skipped).
pub(crate) fn parse_manifest(manifest: &str) -> Result<Vec<Object>, ActionError> {
    let mut out = Vec::new();
    for doc in split_manifests(manifest) {
        if let Some(o) = parse_document(&doc)? {
            out.push(o);
        }
    }
    Ok(out)
}

/// Reads one document (as `sigs.k8s.io/yaml` does); `None` when it holds no object.
pub(crate) fn parse_document(doc: &str) -> Result<Option<Object>, ActionError> {
    let value = opkit_template::yaml::from_yaml(doc)
        .map_err(|e| ActionError::Manifest(format!("error parsing manifest: {e}")))?;
    let body = go_json(&value);
    if body.is_null() {
        return Ok(None);
    }
    let text = |p: &str| {
        body.pointer(p)
            .and_then(Json::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let (api_version, kind, name) = (text("/apiVersion"), text("/kind"), text("/metadata/name"));
    if api_version.is_empty() || kind.is_empty() || name.is_empty() {
        return Err(ActionError::Manifest(format!(
            "error validating data: object has no apiVersion, kind or metadata.name:\n{doc}"
        )));
    }
    let namespace = body
        .pointer("/metadata/namespace")
        .and_then(Json::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    Ok(Some(Object {
        api_version,
        kind,
        name,
        namespace,
        body,
    }))
}

/// Access to the cluster: discovery with `.Capabilities` (cached and shared by clones,
/// refreshed when a kind is missing, as after a CRD install) and the object operations.
#[derive(Clone)]
pub(crate) struct Cluster {
    pub(crate) client: kube::Client,
    pub(crate) field_manager: String,
    discovered: Arc<Mutex<Option<Arc<Discovered>>>>,
}

/// What discovery found: the resources and the capabilities built from them.
struct Discovered {
    discovery: Discovery,
    capabilities: Capabilities,
}

impl Cluster {
    pub(crate) fn new(client: kube::Client, field_manager: String) -> Cluster {
        Cluster {
            client,
            field_manager,
            discovered: Arc::default(),
        }
    }

    async fn discovered(&self, refresh: bool) -> Result<Arc<Discovered>, ActionError> {
        if !refresh && let Some(d) = self.discovered.lock().ok().and_then(|d| d.clone()) {
            return Ok(d);
        }
        let failed = |e| ActionError::Discovery(Box::new(e));
        let info = self.client.apiserver_version().await.map_err(failed)?;
        let discovery = Discovery::new(self.client.clone())
            .run_aggregated()
            .await
            .map_err(failed)?;
        let capabilities = capabilities_of(&info.git_version, &discovery);
        let d = Arc::new(Discovered {
            discovery,
            capabilities,
        });
        if let Ok(mut slot) = self.discovered.lock() {
            *slot = Some(d.clone());
        }
        Ok(d)
    }

    /// `.Capabilities` from the server (see [`capabilities_of`]).
    pub(crate) async fn capabilities(&self) -> Result<Capabilities, ActionError> {
        Ok(self.discovered(false).await?.capabilities.clone())
    }

    /// The resource of `apiVersion`/`kind` and whether it is namespaced.
    pub(crate) async fn resolve(
        &self,
        api_version: &str,
        kind: &str,
    ) -> Result<Option<(ApiResource, bool)>, ActionError> {
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        for refresh in [false, true] {
            let d = self.discovered(refresh).await?;
            if let Some(g) = d.discovery.get(group) {
                let found = g
                    .versioned_resources(version)
                    .into_iter()
                    .find(|(ar, _)| ar.kind == kind);
                if let Some((ar, caps)) = found {
                    return Ok(Some((ar, caps.scope == Scope::Namespaced)));
                }
            }
        }
        Ok(None)
    }

    /// Resolves the object's kind and settles its namespace: a namespaced object without
    /// one gets `namespace`, a cluster-scoped one loses any.
    pub(crate) async fn place(
        &self,
        obj: &mut Object,
        namespace: &str,
    ) -> Result<Api<DynamicObject>, ActionError> {
        let Some((ar, namespaced)) = self.resolve(&obj.api_version, &obj.kind).await? else {
            return Err(ActionError::UnknownKind {
                api_version: obj.api_version.clone(),
                kind: obj.kind.clone(),
                name: obj.name.clone(),
                namespace: obj.namespace.clone().unwrap_or_default(),
            });
        };
        if namespaced {
            let ns = obj
                .namespace
                .get_or_insert_with(|| namespace.to_string())
                .clone();
            set_path(
                &mut obj.body,
                &["metadata", "namespace"],
                Json::String(ns.clone()),
            );
            Ok(Api::namespaced_with(self.client.clone(), &ns, &ar))
        } else {
            obj.namespace = None;
            if let Some(m) = obj
                .body
                .pointer_mut("/metadata")
                .and_then(Json::as_object_mut)
            {
                m.remove("namespace");
            }
            Ok(Api::all_with(self.client.clone(), &ar))
        }
    }

    /// The live object, if any.
    pub(crate) async fn get(
        &self,
        api: &Api<DynamicObject>,
        obj: &Object,
    ) -> Result<Option<Json>, ActionError> {
        match api.get_opt(&obj.name).await {
            Ok(o) => Ok(o.map(|o| serde_json::to_value(o).unwrap_or(Json::Null))),
            Err(source) => Err(api_error("get", obj, source)),
        }
    }

    /// Server-side applies the object (forcing conflicts); with `force`, an object the
    /// server refuses to change in place (an immutable field) is deleted and created again.
    pub(crate) async fn apply(
        &self,
        api: &Api<DynamicObject>,
        obj: &Object,
        force: bool,
    ) -> Result<(), ActionError> {
        let params = PatchParams::apply(&self.field_manager).force();
        match api
            .patch(&obj.name, &params, &Patch::Apply(&obj.body))
            .await
        {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(s)) if force && s.code == 422 => {
                self.delete(api, obj).await?;
                let body: DynamicObject = serde_json::from_value(obj.body.clone())
                    .map_err(|e| ActionError::Manifest(e.to_string()))?;
                api.create(&PostParams::default(), &body)
                    .await
                    .map(|_| ())
                    .map_err(|source| api_error("replace", obj, source))
            }
            Err(source) => Err(api_error("apply", obj, source)),
        }
    }

    /// Deletes the object (background propagation); `false` when it was already gone.
    pub(crate) async fn delete(
        &self,
        api: &Api<DynamicObject>,
        obj: &Object,
    ) -> Result<bool, ActionError> {
        match api.delete(&obj.name, &DeleteParams::background()).await {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(false),
            Err(source) => Err(api_error("delete", obj, source)),
        }
    }
}

/// Helm's `GetCapabilities`: the server's version and every `group/version` and
/// `group/version/Kind` it serves.
fn capabilities_of(git_version: &str, discovery: &Discovery) -> Capabilities {
    let kube_version = KubeVersion::parse(git_version).unwrap_or_default();
    let mut api_versions = Vec::new();
    for group in discovery.groups() {
        for version in group.versions() {
            let gv = if group.name().is_empty() {
                version.to_string()
            } else {
                format!("{}/{version}", group.name())
            };
            api_versions.push(gv.clone());
            for (ar, _) in group.versioned_resources(version) {
                api_versions.push(format!("{gv}/{}", ar.kind));
            }
        }
    }
    Capabilities {
        kube_version,
        api_versions,
    }
}

pub(crate) fn api_error(action: &'static str, obj: &Object, source: kube::Error) -> ActionError {
    ActionError::Api {
        action,
        kind: obj.kind.clone(),
        name: obj.describe(),
        source: Box::new(source),
    }
}

fn set_path(body: &mut Json, path: &[&str], value: Json) {
    let mut cur = body;
    for (i, key) in path.iter().enumerate() {
        if !cur.is_object() {
            *cur = Json::Object(Default::default());
        }
        let map = cur.as_object_mut().expect("made an object above");
        if i == path.len() - 1 {
            map.insert(key.to_string(), value);
            return;
        }
        cur = map
            .entry(key.to_string())
            .or_insert_with(|| Json::Object(Default::default()));
    }
}

/// Adds Helm's ownership metadata (the `app.kubernetes.io/managed-by: Helm` label and the
/// `meta.helm.sh/release-name`/`-namespace` annotations, what `helm upgrade` checks before
/// it takes over an object) and, for objects in the owner's namespace, the owner reference.
pub(crate) fn stamp(
    obj: &mut Object,
    release: &str,
    release_namespace: &str,
    owner: Option<&OwnerReference>,
) {
    set_path(
        &mut obj.body,
        &["metadata", "labels", "app.kubernetes.io/managed-by"],
        Json::String("Helm".into()),
    );
    set_path(
        &mut obj.body,
        &["metadata", "annotations", "meta.helm.sh/release-name"],
        Json::String(release.into()),
    );
    set_path(
        &mut obj.body,
        &["metadata", "annotations", "meta.helm.sh/release-namespace"],
        Json::String(release_namespace.into()),
    );
    if let Some(owner) = owner
        && obj.namespace.as_deref() == Some(release_namespace)
    {
        let mut refs: Vec<Json> = obj
            .body
            .pointer("/metadata/ownerReferences")
            .and_then(Json::as_array)
            .cloned()
            .unwrap_or_default();
        refs.retain(|r| r.get("uid").and_then(Json::as_str) != Some(owner.uid.as_str()));
        refs.push(serde_json::to_value(owner).unwrap_or(Json::Null));
        set_path(
            &mut obj.body,
            &["metadata", "ownerReferences"],
            Json::Array(refs),
        );
    }
}

/// Whether the live object has every field the desired one sets, with the same value.
/// Fields the server adds are ignored; `null` and empty maps or lists in the desired object
/// claim nothing (as in server-side apply); quantities compare by value (`"1000m"` equals `1`); a Secret's
/// `stringData` is compared with its `data`.
pub(crate) fn covers(desired: &Json, live: &Json) -> bool {
    let mut desired = desired.clone();
    fold_string_data(&mut desired);
    // Owner references merge by uid under server-side apply: each wanted one must be
    // there, others (an earlier owner's) may stay.
    let owners = desired
        .pointer_mut("/metadata")
        .and_then(Json::as_object_mut)
        .and_then(|m| m.remove("ownerReferences"));
    let live_owners = live
        .pointer("/metadata/ownerReferences")
        .and_then(Json::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let owners_present = owners
        .as_ref()
        .and_then(Json::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .all(|o| live_owners.iter().any(|l| subset(o, l)));
    owners_present && subset(&desired, live)
}

fn fold_string_data(obj: &mut Json) {
    use base64::Engine as _;
    if obj.get("kind").and_then(Json::as_str) != Some("Secret") {
        return;
    }
    let Some(Json::Object(sd)) = obj.as_object_mut().and_then(|m| m.remove("stringData")) else {
        return;
    };
    for (k, v) in sd {
        let text = v
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| v.to_string());
        set_path(
            obj,
            &["data", &k],
            Json::String(base64::engine::general_purpose::STANDARD.encode(text)),
        );
    }
}

fn is_empty(v: &Json) -> bool {
    match v {
        Json::Null => true,
        Json::Object(m) => m.values().all(is_empty),
        Json::Array(a) => a.is_empty(),
        _ => false,
    }
}

fn subset(desired: &Json, live: &Json) -> bool {
    match (desired, live) {
        // An empty field in an apply configuration claims nothing.
        (d, _) if is_empty(d) => true,
        (Json::Object(d), Json::Object(l)) => d.iter().all(|(k, dv)| match l.get(k) {
            Some(lv) => subset(dv, lv),
            None => is_empty(dv),
        }),
        (Json::Array(d), Json::Array(l)) => {
            d.len() == l.len() && d.iter().zip(l).all(|(dv, lv)| subset(dv, lv))
        }
        (Json::Number(d), Json::Number(l)) => d.as_f64() == l.as_f64(),
        (Json::String(d), Json::String(l)) => d == l || same_quantity(d, l),
        (Json::Number(d), Json::String(l)) => same_quantity(&d.to_string(), l),
        (d, l) => d == l,
    }
}

/// Whether two texts are the same Kubernetes quantity (`500m` and `0.5`, `1Gi` and
/// `1073741824`).
fn same_quantity(a: &str, b: &str) -> bool {
    match (quantity(a), quantity(b)) {
        (Some(x), Some(y)) => (x - y).abs() <= f64::EPSILON * x.abs().max(y.abs()).max(1.0),
        _ => false,
    }
}

fn quantity(s: &str) -> Option<f64> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+' || c == '-'))
        .unwrap_or(s.len());
    let (num, suffix) = s.split_at(split);
    let n: f64 = num.parse().ok()?;
    let factor = match suffix {
        "" => 1.0,
        "n" => 1e-9,
        "u" => 1e-6,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        "Ki" => 1024.0,
        "Mi" => 1024f64.powi(2),
        "Gi" => 1024f64.powi(3),
        "Ti" => 1024f64.powi(4),
        "Pi" => 1024f64.powi(5),
        "Ei" => 1024f64.powi(6),
        e if e.starts_with(['e', 'E']) => 10f64.powi(e[1..].parse().ok()?),
        _ => return None,
    };
    Some(n * factor)
}

/// Objects of `old` that `new` no longer has, in reverse install order.
pub(crate) fn dropped(old: &[Object], new: &[Object]) -> Vec<Object> {
    let keep: BTreeMap<_, ()> = new.iter().map(|o| (o.key(), ())).collect();
    old.iter()
        .rev()
        .filter(|o| !keep.contains_key(&o.key()))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fields_the_server_adds_are_ignored_and_set_fields_must_match() {
        let desired = json!({"spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "a", "resources": {}}]}}}});
        let live = json!({"spec": {"replicas": 2, "strategy": {}, "template": {"spec": {"containers": [{"name": "a", "imagePullPolicy": "Always"}]}}}});
        assert!(covers(&desired, &live));
        let scaled =
            json!({"spec": {"replicas": 5, "template": {"spec": {"containers": [{"name": "a"}]}}}});
        assert!(!covers(&desired, &scaled));
        let extra = json!({"spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "a"}, {"name": "b"}]}}}});
        assert!(!covers(&desired, &extra));
    }

    #[test]
    fn quantities_compare_by_value_and_string_data_by_data() {
        assert!(covers(
            &json!({"cpu": "1000m", "mem": 1}),
            &json!({"cpu": "1", "mem": "1"})
        ));
        assert!(covers(
            &json!({"mem": "1Gi"}),
            &json!({"mem": "1073741824"})
        ));
        assert!(!covers(&json!({"cpu": "100m"}), &json!({"cpu": "1"})));
        assert!(!covers(&json!({"name": "abc"}), &json!({"name": "abd"})));
        let owned = json!({"metadata": {"ownerReferences": [{"uid": "b", "name": "new"}]}});
        let both =
            json!({"metadata": {"ownerReferences": [{"uid": "a"}, {"uid": "b", "name": "new"}]}});
        assert!(
            covers(&owned, &both),
            "an earlier owner's reference may stay"
        );
        assert!(!covers(
            &owned,
            &json!({"metadata": {"ownerReferences": [{"uid": "a"}]}})
        ));
        let secret = json!({"kind": "Secret", "stringData": {"k": "v"}});
        assert!(covers(
            &secret,
            &json!({"kind": "Secret", "data": {"k": "dg=="}})
        ));
        assert!(!covers(
            &secret,
            &json!({"kind": "Secret", "data": {"k": "dw=="}})
        ));
    }

    #[test]
    fn documents_become_objects_and_dropped_ones_are_found() {
        let objs = parse_manifest(
            "---\n# Source: a/templates/x.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  n: \"1\"\n---\n# Source: a/templates/empty.yaml\n---\napiVersion: v1\nkind: Service\nmetadata:\n  name: s\n  namespace: other\n",
        )
        .unwrap();
        assert_eq!(objs.len(), 2);
        assert_eq!(objs[1].namespace.as_deref(), Some("other"));
        let gone = dropped(&objs, &objs[..1]);
        assert_eq!(gone.len(), 1);
        assert_eq!(gone[0].name, "s");
        let err = parse_manifest("kind: ConfigMap\n").unwrap_err();
        assert!(err.to_string().contains("no apiVersion"), "{err}");
    }
}
