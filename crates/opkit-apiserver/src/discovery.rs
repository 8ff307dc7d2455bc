//! Discovery documents: `/version`, `/api`, `/apis`, per group-version resource lists, and
//! aggregated discovery (`apidiscovery.k8s.io/v2`), which kubectl v1.35 reads for resources,
//! verbs, short names and categories (`kubectl get ft` depends on it).

use serde_json::{Value, json};

use crate::registry::{Resource, SUBRESOURCE_VERBS, Snapshot};

/// The Kubernetes version this server reports.
pub const KUBE_MINOR: &str = "35";

/// `/version`.
pub fn version() -> Value {
    json!({
        "major": "1",
        "minor": KUBE_MINOR,
        "emulationMajor": "1",
        "emulationMinor": KUBE_MINOR,
        "minCompatibilityMajor": "1",
        "minCompatibilityMinor": "34",
        "gitVersion": format!("v1.{KUBE_MINOR}.0-opkit.{}", env!("CARGO_PKG_VERSION")),
        "gitCommit": "",
        "gitTreeState": "clean",
        "buildDate": "1970-01-01T00:00:00Z",
        "goVersion": "rust",
        "compiler": "rustc",
        "platform": format!("{}/{}", std::env::consts::OS, go_arch()),
    })
}

/// The architecture as Go names it (`amd64`, `arm64`), as clients expect in `/version`.
fn go_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "x86" => "386",
        other => other,
    }
}

/// `/api`.
pub fn core_versions(server_address: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    })
}

fn group_entry(group: &str, versions: &[String]) -> Value {
    let gv = |v: &String| json!({"groupVersion": format!("{group}/{v}"), "version": v});
    json!({
        "name": group,
        "versions": versions.iter().map(gv).collect::<Vec<_>>(),
        "preferredVersion": versions.first().map(gv).unwrap_or(Value::Null),
    })
}

/// `/apis`.
pub fn group_list(snapshot: &Snapshot) -> Value {
    let groups: Vec<Value> = snapshot
        .groups()
        .iter()
        .filter(|(g, _)| !g.is_empty())
        .map(|(g, versions)| group_entry(g, versions))
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `/apis/{group}`, if served.
pub fn group(snapshot: &Snapshot, group: &str) -> Option<Value> {
    let (g, versions) = snapshot
        .groups()
        .iter()
        .find(|(g, _)| g == group && !g.is_empty())?;
    let mut entry = group_entry(g, versions);
    entry["kind"] = json!("APIGroup");
    entry["apiVersion"] = json!("v1");
    Some(entry)
}

fn scope(r: &Resource) -> &'static str {
    if r.namespaced {
        "Namespaced"
    } else {
        "Cluster"
    }
}

/// `(name, group, version, kind, verbs)` of each subresource.
fn subresources(r: &Resource) -> Vec<(String, String, String, String, Vec<&'static str>)> {
    let mut out = Vec::new();
    if r.status {
        out.push((
            "status".to_string(),
            r.group.clone(),
            r.version.clone(),
            r.kind.clone(),
            SUBRESOURCE_VERBS.to_vec(),
        ));
    }
    if r.scale.is_some() {
        out.push((
            "scale".to_string(),
            "autoscaling".to_string(),
            "v1".to_string(),
            "Scale".to_string(),
            SUBRESOURCE_VERBS.to_vec(),
        ));
    }
    for (name, group, kind, verbs) in r.extra_subresources {
        let version = "v1".to_string();
        out.push((
            name.to_string(),
            if group.is_empty() {
                r.group.clone()
            } else {
                group.to_string()
            },
            version,
            kind.to_string(),
            verbs.to_vec(),
        ));
    }
    out
}

/// `/api/v1` or `/apis/{group}/{version}`, if served.
pub fn resource_list(snapshot: &Snapshot, group: &str, version: &str) -> Option<Value> {
    let resources = snapshot.group_version(group, version);
    if resources.is_empty() {
        return None;
    }
    let mut list = Vec::new();
    for r in resources {
        let mut entry = json!({
            "name": r.plural,
            "singularName": r.singular,
            "namespaced": r.namespaced,
            "kind": r.kind,
            "verbs": r.verbs,
        });
        if !r.short_names.is_empty() {
            entry["shortNames"] = json!(r.short_names);
        }
        if !r.categories.is_empty() {
            entry["categories"] = json!(r.categories);
        }
        list.push(entry);
        for (name, g, v, kind, verbs) in subresources(r) {
            let mut sub = json!({
                "name": format!("{}/{name}", r.plural),
                "singularName": "",
                "namespaced": r.namespaced,
                "kind": kind,
                "verbs": verbs,
            });
            if g != r.group || v != r.version {
                sub["group"] = json!(g);
                sub["version"] = json!(v);
            }
            list.push(sub);
        }
    }
    let gv = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    Some(
        json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": list}),
    )
}

fn aggregated_resource(r: &Resource) -> Value {
    let mut entry = json!({
        "resource": r.plural,
        "responseKind": {"group": r.group, "version": r.version, "kind": r.kind},
        "scope": scope(r),
        "singularResource": r.singular,
        "verbs": r.verbs,
    });
    if !r.short_names.is_empty() {
        entry["shortNames"] = json!(r.short_names);
    }
    if !r.categories.is_empty() {
        entry["categories"] = json!(r.categories);
    }
    let subs: Vec<Value> = subresources(r)
        .into_iter()
        .map(|(name, g, v, kind, verbs)| {
            json!({
                "subresource": name,
                "responseKind": {"group": g, "version": v, "kind": kind},
                "verbs": verbs,
            })
        })
        .collect();
    if !subs.is_empty() {
        entry["subresources"] = Value::Array(subs);
    }
    entry
}

/// Aggregated discovery for `/api` (`core = true`) or `/apis`, in the requested version
/// (`v2` or `v2beta1`).
pub fn aggregated(snapshot: &Snapshot, core: bool, api_version: &str) -> Value {
    let items: Vec<Value> = snapshot
        .groups()
        .iter()
        .filter(|(g, _)| g.is_empty() == core)
        .map(|(g, versions)| {
            let versions: Vec<Value> = versions
                .iter()
                .map(|v| {
                    let resources: Vec<Value> = snapshot
                        .group_version(g, v)
                        .into_iter()
                        .map(|r| aggregated_resource(r))
                        .collect();
                    json!({"version": v, "resources": resources, "freshness": "Current"})
                })
                .collect();
            let metadata = if g.is_empty() {
                json!({})
            } else {
                json!({"name": g})
            };
            json!({"metadata": metadata, "versions": versions})
        })
        .collect();
    json!({
        "kind": "APIGroupDiscoveryList",
        "apiVersion": format!("apidiscovery.k8s.io/{api_version}"),
        "metadata": {},
        "items": items,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Registry;

    #[test]
    fn aggregated_discovery_lists_short_names_and_subresources() {
        let snap = Registry::new().snapshot();
        let doc = aggregated(&snap, false, "v2");
        let apps = doc["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["metadata"]["name"] == "apps")
            .unwrap();
        let deploy = apps["versions"][0]["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["resource"] == "deployments")
            .unwrap();
        assert_eq!(deploy["shortNames"], json!(["deploy"]));
        assert_eq!(deploy["categories"], json!(["all"]));
        assert!(
            deploy["subresources"]
                .as_array()
                .unwrap()
                .iter()
                .any(|s| s["subresource"] == "scale")
        );
    }

    #[test]
    fn core_resource_list_contains_status_subresources() {
        let snap = Registry::new().snapshot();
        let doc = resource_list(&snap, "", "v1").unwrap();
        let names: Vec<&str> = doc["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["name"].as_str().unwrap())
            .collect();
        assert!(names.contains(&"pods/status"));
        assert!(names.contains(&"configmaps"));
    }
}
