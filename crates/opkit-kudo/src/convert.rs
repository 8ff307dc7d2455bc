//! Objects in API versions Kubernetes removed, converted to the versions that replaced them,
//! so packages written for old clusters run unchanged (KUDO itself failed the plan):
//!
//! - `policy/v1beta1` PodDisruptionBudget → `policy/v1` (same fields);
//! - `rbac.authorization.k8s.io/v1beta1` Role, ClusterRole, RoleBinding, ClusterRoleBinding →
//!   `v1` (same fields);
//! - `apiextensions.k8s.io/v1beta1` CustomResourceDefinition → `v1`: the top-level
//!   `validation`, `subresources` and `additionalPrinterColumns` (`JSONPath` → `jsonPath`) move
//!   into each version, the single `version` becomes `versions`, a schema is required per
//!   version (`x-kubernetes-preserve-unknown-fields` when there was none), v1beta1's default
//!   `preserveUnknownFields: true` becomes `x-kubernetes-preserve-unknown-fields` on the
//!   schema, and the webhook conversion settings move under `conversion.webhook`.
//!
//! The caller reports each conversion with an event on the instance.

use serde_json::{Map, Value as Json, json};

use crate::object::text;

/// A conversion made: the object and both API versions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Converted {
    pub kind: String,
    pub name: String,
    pub from: String,
    pub to: String,
}

impl Converted {
    /// The event's note.
    pub(crate) fn message(&self) -> String {
        format!(
            "{} {} converted from removed API version {} to {}",
            self.kind, self.name, self.from, self.to
        )
    }
}

/// The event reason.
pub(crate) const REASON: &str = "APIVersionConverted";

const RBAC_KINDS: [&str; 4] = ["Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"];

/// Converts `obj` in place when it uses a removed API version.
pub(crate) fn convert(obj: &mut Json) -> Option<Converted> {
    let from = text(obj, "/apiVersion").to_string();
    let kind = text(obj, "/kind").to_string();
    let to = match (from.as_str(), kind.as_str()) {
        ("policy/v1beta1", "PodDisruptionBudget") => "policy/v1",
        ("rbac.authorization.k8s.io/v1beta1", k) if RBAC_KINDS.contains(&k) => {
            "rbac.authorization.k8s.io/v1"
        }
        ("apiextensions.k8s.io/v1beta1", "CustomResourceDefinition") => {
            crd_to_v1(obj);
            "apiextensions.k8s.io/v1"
        }
        _ => return None,
    };
    obj["apiVersion"] = json!(to);
    Some(Converted {
        kind,
        name: text(obj, "/metadata/name").to_string(),
        from,
        to: to.to_string(),
    })
}

fn printer_column_to_v1(col: &Json) -> Json {
    let mut out = Map::new();
    for (k, v) in col.as_object().into_iter().flatten() {
        let key = if k == "JSONPath" {
            "jsonPath"
        } else {
            k.as_str()
        };
        out.insert(key.to_string(), v.clone());
    }
    Json::Object(out)
}

/// Rewrites a v1beta1 CRD's `spec` as v1's.
fn crd_to_v1(obj: &mut Json) {
    let Some(spec) = obj.get_mut("spec").and_then(Json::as_object_mut) else {
        return;
    };
    let validation = spec.remove("validation");
    let subresources = spec.remove("subresources");
    let columns = spec.remove("additionalPrinterColumns");
    let single = spec.remove("version");
    // v1beta1 keeps unknown fields unless told otherwise; v1 says so in the schema.
    let preserve = spec
        .remove("preserveUnknownFields")
        .and_then(|v| v.as_bool())
        .unwrap_or(true);
    let mut versions: Vec<Json> = spec
        .remove("versions")
        .and_then(|v| v.as_array().cloned())
        .unwrap_or_default();
    if versions.is_empty()
        && let Some(name) = single.as_ref().and_then(Json::as_str)
    {
        versions.push(json!({"name": name, "served": true, "storage": true}));
    }
    let top_schema = validation.and_then(|v| v.get("openAPIV3Schema").cloned());
    for v in versions.iter_mut() {
        let Some(v) = v.as_object_mut() else { continue };
        v.entry("served").or_insert(json!(true));
        v.entry("storage").or_insert(json!(false));
        let schema = v
            .remove("schema")
            .and_then(|s| s.get("openAPIV3Schema").cloned())
            .or_else(|| top_schema.clone());
        let mut schema = schema.unwrap_or_else(|| json!({"type": "object"}));
        if let Some(s) = schema.as_object_mut() {
            s.entry("type").or_insert(json!("object"));
            if preserve || s.get("properties").is_none() {
                s.insert("x-kubernetes-preserve-unknown-fields".into(), json!(true));
            }
        }
        v.insert("schema".into(), json!({"openAPIV3Schema": schema}));
        if !v.contains_key("subresources")
            && let Some(s) = &subresources
        {
            v.insert("subresources".into(), s.clone());
        }
        let own_columns = v
            .remove("additionalPrinterColumns")
            .or_else(|| columns.clone());
        if let Some(Json::Array(cols)) = own_columns {
            v.insert(
                "additionalPrinterColumns".into(),
                Json::Array(cols.iter().map(printer_column_to_v1).collect()),
            );
        }
    }
    // Exactly one storage version: v1beta1's first version was the storage one by default.
    if !versions.iter().any(|v| v["storage"] == json!(true))
        && let Some(first) = versions.first_mut()
    {
        first["storage"] = json!(true);
    }
    spec.insert("versions".into(), Json::Array(versions));
    if let Some(conv) = spec.get_mut("conversion").and_then(Json::as_object_mut) {
        let client = conv.remove("webhookClientConfig");
        let review = conv.remove("conversionReviewVersions");
        if text_of(conv.get("strategy")) == "Webhook" {
            let mut webhook = Map::new();
            if let Some(c) = client {
                webhook.insert("clientConfig".into(), c);
            }
            webhook.insert(
                "conversionReviewVersions".into(),
                review.unwrap_or_else(|| json!(["v1beta1"])),
            );
            conv.insert("webhook".into(), Json::Object(webhook));
        }
    }
}

fn text_of(v: Option<&Json>) -> &str {
    v.and_then(Json::as_str).unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pod_disruption_budget_moves_to_policy_v1() {
        let mut pdb = json!({"apiVersion": "policy/v1beta1", "kind": "PodDisruptionBudget",
            "metadata": {"name": "zk-pdb"}, "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "zk"}}}});
        let c = convert(&mut pdb).unwrap();
        assert_eq!(pdb["apiVersion"], "policy/v1");
        assert_eq!(pdb["spec"]["maxUnavailable"], 1);
        assert_eq!(
            c.message(),
            "PodDisruptionBudget zk-pdb converted from removed API version policy/v1beta1 to policy/v1"
        );
    }

    #[test]
    fn every_rbac_kind_moves_to_v1_and_current_versions_are_left_alone() {
        for kind in RBAC_KINDS {
            let mut o = json!({"apiVersion": "rbac.authorization.k8s.io/v1beta1", "kind": kind, "metadata": {"name": "r"}, "rules": []});
            let c = convert(&mut o).unwrap();
            assert_eq!(
                (c.kind.as_str(), c.to.as_str()),
                (kind, "rbac.authorization.k8s.io/v1")
            );
            assert_eq!(o["apiVersion"], "rbac.authorization.k8s.io/v1");
        }
        let mut current = json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "p"}});
        let before = current.clone();
        assert_eq!(convert(&mut current), None);
        assert_eq!(current, before);
        let mut other = json!({"apiVersion": "rbac.authorization.k8s.io/v1beta1", "kind": "Unknown", "metadata": {"name": "p"}});
        assert_eq!(convert(&mut other), None);
    }

    #[test]
    fn v1beta1_crd_moves_schema_subresources_and_columns_into_each_version() {
        let mut crd = json!({
            "apiVersion": "apiextensions.k8s.io/v1beta1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "apps.example.com"},
            "spec": {
                "group": "example.com", "scope": "Namespaced",
                "names": {"kind": "App", "plural": "apps"},
                "version": "v1",
                "validation": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object"}}}},
                "subresources": {"status": {}},
                "additionalPrinterColumns": [{"name": "Age", "type": "date", "JSONPath": ".metadata.creationTimestamp"}]
            }
        });
        let c = convert(&mut crd).unwrap();
        assert_eq!(c.to, "apiextensions.k8s.io/v1");
        let spec = &crd["spec"];
        assert!(spec.get("validation").is_none() && spec.get("version").is_none());
        let v = &spec["versions"][0];
        assert_eq!(
            (
                v["name"].as_str(),
                v["served"].as_bool(),
                v["storage"].as_bool()
            ),
            (Some("v1"), Some(true), Some(true))
        );
        let schema = &v["schema"]["openAPIV3Schema"];
        assert_eq!(schema["properties"]["spec"]["type"], "object");
        assert_eq!(
            schema["x-kubernetes-preserve-unknown-fields"], true,
            "v1beta1 preserved unknown fields by default"
        );
        assert_eq!(v["subresources"], json!({"status": {}}));
        assert_eq!(
            v["additionalPrinterColumns"][0]["jsonPath"],
            ".metadata.creationTimestamp"
        );
        assert!(v["additionalPrinterColumns"][0].get("JSONPath").is_none());
    }

    #[test]
    fn v1beta1_crd_versions_without_schema_and_with_webhook_conversion() {
        let mut crd = json!({
            "apiVersion": "apiextensions.k8s.io/v1beta1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "apps.example.com"},
            "spec": {
                "group": "example.com", "preserveUnknownFields": false,
                "versions": [{"name": "v1beta2", "served": true}, {"name": "v1", "served": true}],
                "conversion": {"strategy": "Webhook", "webhookClientConfig": {"service": {"name": "s", "namespace": "n"}}}
            }
        });
        convert(&mut crd).unwrap();
        let versions = crd["spec"]["versions"].as_array().unwrap();
        assert_eq!(versions[0]["storage"], true);
        assert_eq!(versions[1]["storage"], false);
        for v in versions {
            assert_eq!(v["schema"]["openAPIV3Schema"]["type"], "object");
            assert_eq!(
                v["schema"]["openAPIV3Schema"]["x-kubernetes-preserve-unknown-fields"], true,
                "no schema: keep everything"
            );
        }
        let conv = &crd["spec"]["conversion"];
        assert_eq!(conv["webhook"]["clientConfig"]["service"]["name"], "s");
        assert_eq!(
            conv["webhook"]["conversionReviewVersions"],
            json!(["v1beta1"])
        );
        assert!(conv.get("webhookClientConfig").is_none());
    }
}
