//! Generating a registry+v1 bundle from an operator's deployment manifests, as
//! `operator-sdk generate bundle` does from `kustomize build config/manifests`: the
//! Deployments become the CSV's install strategy, the roles bound to their service accounts
//! its `permissions` and `clusterPermissions`, the CRDs its owned APIs (with the base CSV's
//! descriptors kept), the webhook configurations its `webhookdefinitions`, the samples its
//! `alm-examples`; what OLM creates itself (the namespace, the service accounts, the bindings,
//! the webhook services) is left out, and every other object is kept as a manifest.
//!
//! Pure: the caller reads the manifests and writes the files.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value, json};

use super::REGISTRY_V1;
use super::annotations as keys;
use super::validate::SUPPORTED_KINDS;

/// What to generate.
#[derive(Clone, Debug)]
pub struct GenerateOptions {
    /// The package (and the CSV's name prefix: `<package>.v<version>`).
    pub package: String,
    /// The bundle's version.
    pub version: semver::Version,
    /// The channels (at least one).
    pub channels: Vec<String>,
    /// The default channel, if any.
    pub default_channel: Option<String>,
    /// The CSV this one replaces (`spec.replaces`), if any.
    pub replaces: Option<String>,
    /// The tool named in the CSV's `operators.operatorframework.io/builder` annotation.
    pub builder: String,
}

/// Why a bundle could not be generated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GenerateError {
    /// The manifests have no Deployment to install.
    #[error("the manifests have no Deployment: a bundle installs the operator's Deployment")]
    NoDeployment,
    /// No channel was given.
    #[error("a bundle needs at least one channel")]
    NoChannel,
    /// The default channel is not one of the channels.
    #[error("default channel {0:?} is not one of the bundle's channels")]
    DefaultChannel(String),
    /// An object OLM cannot install from a bundle.
    #[error(
        "{kind} {name:?} cannot be shipped in a registry+v1 bundle (OLM installs only {supported})"
    )]
    Unsupported {
        /// Its kind.
        kind: String,
        /// Its name.
        name: String,
        /// The kinds OLM installs.
        supported: String,
    },
    /// The base CSV is not an object.
    #[error("the base ClusterServiceVersion is not a YAML object")]
    Base,
}

/// The files of a generated bundle, paths relative to the bundle directory (`manifests/…`,
/// `metadata/annotations.yaml`).
#[derive(Clone, Debug, PartialEq)]
pub struct GeneratedBundle {
    /// The CSV's name.
    pub csv_name: String,
    /// `(path, YAML text)`, manifests first.
    pub files: Vec<(String, String)>,
}

/// A base CSV for a package that has none yet: what `operator-sdk generate kustomize
/// manifests` writes, for the user to fill in (description, icon, maintainers, provider).
///
/// An operator that converts CRDs through a webhook is installable in all namespaces only (OLM
/// refuses anything else): `all_namespaces_only` says so.
pub fn base_csv(package: &str, display_name: &str, all_namespaces_only: bool) -> Value {
    json!({
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "ClusterServiceVersion",
        "metadata": {
            "name": format!("{package}.v0.0.0"),
            "annotations": {"capabilities": "Basic Install"},
        },
        "spec": {
            "displayName": display_name,
            "description": format!("{display_name} manages its custom resources on Kubernetes."),
            "keywords": [package],
            "maturity": "alpha",
            "provider": {"name": ""},
            "maintainers": [],
            "links": [],
            "icon": [],
            "installModes": [
                {"type": "OwnNamespace", "supported": !all_namespaces_only},
                {"type": "SingleNamespace", "supported": !all_namespaces_only},
                {"type": "MultiNamespace", "supported": false},
                {"type": "AllNamespaces", "supported": true},
            ],
            "install": {"strategy": "", "spec": {}},
            "customresourcedefinitions": {},
            "version": "0.0.0",
        },
    })
}

fn kind(o: &Value) -> &str {
    o["kind"].as_str().unwrap_or_default()
}

fn name(o: &Value) -> &str {
    o["metadata"]["name"].as_str().unwrap_or_default()
}

/// Whether any CRD of `objects` is converted by a webhook.
pub fn converts_by_webhook(objects: &[Value]) -> bool {
    objects.iter().any(|o| {
        kind(o) == "CustomResourceDefinition" && o["spec"]["conversion"]["strategy"] == "Webhook"
    })
}

/// Generates the bundle of `objects` (the operator's deployment manifests), `samples` (one
/// custom resource per kind, for `alm-examples`) and `base` (the CSV the user maintains).
pub fn generate_bundle(
    objects: &[Value],
    samples: &[Value],
    base: &Value,
    opts: &GenerateOptions,
) -> Result<GeneratedBundle, GenerateError> {
    if opts.channels.is_empty() {
        return Err(GenerateError::NoChannel);
    }
    if let Some(d) = &opts.default_channel
        && !opts.channels.contains(d)
    {
        return Err(GenerateError::DefaultChannel(d.clone()));
    }
    let mut csv = base.clone();
    if !csv.is_object() {
        return Err(GenerateError::Base);
    }
    let of_kind = |k: &'static str| objects.iter().filter(move |o| kind(o) == k);
    let deployments: Vec<&Value> = of_kind("Deployment").collect();
    if deployments.is_empty() {
        return Err(GenerateError::NoDeployment);
    }
    let service_accounts: BTreeSet<&str> = deployments
        .iter()
        .map(|d| {
            d["spec"]["template"]["spec"]["serviceAccountName"]
                .as_str()
                .unwrap_or("default")
        })
        .collect();

    // Roles bound to the operator's service accounts become permissions.
    let mut consumed: BTreeSet<(String, String)> = BTreeSet::new();
    let mut cluster_rules: BTreeMap<&str, Vec<Value>> = BTreeMap::new();
    let mut ns_rules: BTreeMap<&str, Vec<Value>> = BTreeMap::new();
    for binding in objects
        .iter()
        .filter(|o| matches!(kind(o), "ClusterRoleBinding" | "RoleBinding"))
    {
        let role_kind = binding["roleRef"]["kind"].as_str().unwrap_or_default();
        let role_name = binding["roleRef"]["name"].as_str().unwrap_or_default();
        let Some(role) = objects
            .iter()
            .find(|o| kind(o) == role_kind && name(o) == role_name)
        else {
            continue;
        };
        let subjects = binding["subjects"].as_array().cloned().unwrap_or_default();
        let mut bound = false;
        for sa in subjects
            .iter()
            .filter(|s| s["kind"] == "ServiceAccount")
            .filter_map(|s| s["name"].as_str())
        {
            let Some(sa) = service_accounts.get(sa) else {
                continue;
            };
            bound = true;
            let rules = role["rules"].as_array().cloned().unwrap_or_default();
            let target = if kind(binding) == "ClusterRoleBinding" {
                &mut cluster_rules
            } else {
                &mut ns_rules
            };
            target.entry(sa).or_default().extend(rules);
        }
        if bound {
            consumed.insert((kind(binding).to_string(), name(binding).to_string()));
            consumed.insert((role_kind.to_string(), role_name.to_string()));
        }
    }
    let permissions = |rules: BTreeMap<&str, Vec<Value>>| -> Vec<Value> {
        rules
            .into_iter()
            .map(|(sa, rules)| json!({"serviceAccountName": sa, "rules": rules}))
            .collect()
    };

    // Webhook configurations become webhook definitions; their services are OLM's to make.
    let mut webhooks = Vec::new();
    let mut webhook_services = BTreeSet::new();
    for config in objects.iter().filter(|o| {
        matches!(
            kind(o),
            "ValidatingWebhookConfiguration" | "MutatingWebhookConfiguration"
        )
    }) {
        let type_ = if kind(config) == "ValidatingWebhookConfiguration" {
            "ValidatingAdmissionWebhook"
        } else {
            "MutatingAdmissionWebhook"
        };
        for hook in config["webhooks"].as_array().into_iter().flatten() {
            let service = &hook["clientConfig"]["service"];
            let service_name = service["name"].as_str().unwrap_or_default();
            let target = objects
                .iter()
                .find(|o| kind(o) == "Service" && name(o) == service_name);
            let deployment = target
                .and_then(|s| serving_deployment(s, &deployments))
                .or(deployments.first().copied());
            let target_port = target
                .and_then(|s| s["spec"]["ports"][0]["targetPort"].as_u64())
                .unwrap_or(9443);
            webhook_services.insert(service_name.to_string());
            let mut def = Map::new();
            def.insert("type".into(), type_.into());
            def.insert("generateName".into(), hook["name"].clone());
            def.insert(
                "deploymentName".into(),
                deployment.map_or(Value::Null, |d| name(d).into()),
            );
            def.insert("containerPort".into(), 443.into());
            def.insert("targetPort".into(), target_port.into());
            for (from, to) in [
                ("admissionReviewVersions", "admissionReviewVersions"),
                ("failurePolicy", "failurePolicy"),
                ("sideEffects", "sideEffects"),
                ("rules", "rules"),
                ("matchPolicy", "matchPolicy"),
                ("objectSelector", "objectSelector"),
                ("timeoutSeconds", "timeoutSeconds"),
            ] {
                if !hook[from].is_null() {
                    def.insert(to.into(), hook[from].clone());
                }
            }
            if let Some(path) = service["path"].as_str() {
                def.insert("webhookPath".into(), path.into());
            }
            webhooks.push(Value::Object(def));
        }
    }

    // CRDs converted by a webhook: OLM serves the conversion through a ConversionWebhook.
    for crd in objects.iter().filter(|o| {
        kind(o) == "CustomResourceDefinition" && o["spec"]["conversion"]["strategy"] == "Webhook"
    }) {
        let conversion = &crd["spec"]["conversion"]["webhook"];
        let service = &conversion["clientConfig"]["service"];
        let service_name = service["name"].as_str().unwrap_or_default();
        let target = objects
            .iter()
            .find(|o| kind(o) == "Service" && name(o) == service_name);
        let deployment = target
            .and_then(|s| serving_deployment(s, &deployments))
            .or(deployments.first().copied());
        webhook_services.insert(service_name.to_string());
        let plural = crd["spec"]["names"]["plural"].as_str().unwrap_or_default();
        webhooks.push(json!({
            "type": "ConversionWebhook",
            "generateName": format!("c{plural}.kb.io"),
            "deploymentName": deployment.map_or(Value::Null, |d| name(d).into()),
            "containerPort": 443,
            "targetPort": target
                .and_then(|s| s["spec"]["ports"][0]["targetPort"].as_u64())
                .unwrap_or(9443),
            "webhookPath": service["path"].as_str().unwrap_or("/convert"),
            "admissionReviewVersions": conversion["conversionReviewVersions"].clone(),
            "sideEffects": "None",
            "conversionCRDs": [name(crd)],
        }));
    }

    // Owned CRDs, keeping the base CSV's descriptions of them.
    let base_owned: Vec<Value> = csv["spec"]["customresourcedefinitions"]["owned"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let mut owned = Vec::new();
    let mut files = Vec::new();
    for crd in of_kind("CustomResourceDefinition") {
        let group = crd["spec"]["group"].as_str().unwrap_or_default();
        let plural = crd["spec"]["names"]["plural"].as_str().unwrap_or_default();
        let crd_kind = crd["spec"]["names"]["kind"].as_str().unwrap_or_default();
        for v in crd["spec"]["versions"].as_array().into_iter().flatten() {
            if v["served"] == false {
                continue;
            }
            let version = v["name"].as_str().unwrap_or_default();
            let described = base_owned
                .iter()
                .find(|o| o["name"] == name(crd) && o["version"] == version);
            let mut entry = described.cloned().unwrap_or_else(|| json!({}));
            let description = v["schema"]["openAPIV3Schema"]["description"]
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| format!("{crd_kind} is the Schema for the {plural} API"));
            let e = entry.as_object_mut().expect("an object");
            e.insert("name".into(), name(crd).into());
            e.insert("version".into(), version.into());
            e.insert("kind".into(), crd_kind.into());
            e.entry("displayName").or_insert_with(|| crd_kind.into());
            e.entry("description").or_insert_with(|| description.into());
            owned.push(entry);
        }
        files.push((format!("manifests/{group}_{plural}.yaml"), strip(crd)));
    }

    // Everything else that is not OLM's to create.
    for o in objects {
        let k = kind(o);
        let skip = matches!(
            k,
            "Deployment"
                | "CustomResourceDefinition"
                | "Namespace"
                | "ValidatingWebhookConfiguration"
                | "MutatingWebhookConfiguration"
        ) || consumed.contains(&(k.to_string(), name(o).to_string()))
            || (k == "ServiceAccount" && service_accounts.contains(name(o)))
            || (k == "Service" && webhook_services.contains(name(o)));
        if skip {
            continue;
        }
        if !SUPPORTED_KINDS.contains(&k) {
            return Err(GenerateError::Unsupported {
                kind: k.to_string(),
                name: name(o).to_string(),
                supported: SUPPORTED_KINDS[2..].join(", "),
            });
        }
        let api = o["apiVersion"]
            .as_str()
            .unwrap_or_default()
            .replace('/', "_");
        files.push((
            format!("manifests/{}_{api}_{}.yaml", name(o), k.to_lowercase()),
            strip(o),
        ));
    }

    let csv_name = format!("{}.v{}", opts.package, opts.version);
    let install = json!({
        "strategy": "deployment",
        "spec": {
            "deployments": deployments.iter().map(|d| {
                let mut entry = json!({"name": name(d), "spec": d["spec"].clone()});
                if !d["metadata"]["labels"].is_null() {
                    entry["label"] = d["metadata"]["labels"].clone();
                }
                entry
            }).collect::<Vec<_>>(),
            "permissions": permissions(ns_rules),
            "clusterPermissions": permissions(cluster_rules),
        },
    });
    csv["metadata"]["name"] = csv_name.clone().into();
    let annotations = &mut csv["metadata"]["annotations"];
    if !annotations.is_object() {
        *annotations = json!({});
    }
    annotations["alm-examples"] = serde_json::to_string_pretty(samples)
        .expect("JSON values serialise")
        .into();
    annotations["operators.operatorframework.io/builder"] = opts.builder.clone().into();
    let spec = &mut csv["spec"];
    if !spec.is_object() {
        *spec = json!({});
    }
    spec["version"] = opts.version.to_string().into();
    spec["install"] = install;
    spec["customresourcedefinitions"]["owned"] = owned.into();
    if let Some(r) = &opts.replaces {
        spec["replaces"] = r.clone().into();
    }
    if !webhooks.is_empty() {
        spec["webhookdefinitions"] = webhooks.into();
    }
    files.insert(
        0,
        (
            format!("manifests/{}.clusterserviceversion.yaml", opts.package),
            to_yaml(&csv),
        ),
    );

    let mut ann = Map::new();
    ann.insert(keys::MEDIATYPE.into(), REGISTRY_V1.into());
    ann.insert(keys::MANIFESTS.into(), "manifests/".into());
    ann.insert(keys::METADATA.into(), "metadata/".into());
    ann.insert(keys::PACKAGE.into(), opts.package.clone().into());
    ann.insert(keys::CHANNELS.into(), opts.channels.join(",").into());
    if let Some(d) = &opts.default_channel {
        ann.insert(keys::CHANNEL_DEFAULT.into(), d.clone().into());
    }
    files.push((
        "metadata/annotations.yaml".into(),
        to_yaml(&json!({"annotations": ann})),
    ));
    Ok(GeneratedBundle { csv_name, files })
}

/// The Deployment whose pods the Service selects.
fn serving_deployment<'a>(service: &Value, deployments: &[&'a Value]) -> Option<&'a Value> {
    let selector = service["spec"]["selector"].as_object()?;
    deployments.iter().copied().find(|d| {
        let labels = &d["spec"]["template"]["metadata"]["labels"];
        selector.iter().all(|(k, v)| &labels[k] == v)
    })
}

/// The object without its namespace and status: OLM places it.
fn strip(o: &Value) -> String {
    let mut o = o.clone();
    if let Some(m) = o["metadata"].as_object_mut() {
        m.remove("namespace");
        m.remove("creationTimestamp");
    }
    if let Some(m) = o.as_object_mut() {
        m.remove("status");
    }
    to_yaml(&o)
}

fn to_yaml(v: &Value) -> String {
    serde_yaml::to_string(v).expect("JSON values serialise as YAML")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Bundle, validate_bundle};

    fn objects() -> Vec<Value> {
        vec![
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "demo-system"}}),
            json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                "metadata": {"name": "widgets.example.com"},
                "spec": {"group": "example.com", "scope": "Namespaced",
                    "names": {"kind": "Widget", "plural": "widgets", "singular": "widget", "listKind": "WidgetList"},
                    "versions": [{"name": "v1", "served": true, "storage": true,
                        "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}}),
            json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "demo-manager", "namespace": "demo-system"}}),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "demo-role"},
                "rules": [{"apiGroups": ["example.com"], "resources": ["widgets"], "verbs": ["*"]}]}),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "demo-binding"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "demo-role"},
                "subjects": [{"kind": "ServiceAccount", "name": "demo-manager", "namespace": "demo-system"}]}),
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "demo-metrics", "namespace": "demo-system"},
                "spec": {"selector": {"app": "demo"}, "ports": [{"port": 8080}]}}),
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "demo-manager", "namespace": "demo-system", "labels": {"app": "demo"}},
                "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "demo"}},
                    "template": {"metadata": {"labels": {"app": "demo"}},
                        "spec": {"serviceAccountName": "demo-manager", "containers": [{"name": "manager", "image": "example.com/demo:v1.0.0"}]}}}}),
        ]
    }

    fn opts() -> GenerateOptions {
        GenerateOptions {
            package: "demo".into(),
            version: semver::Version::new(1, 0, 0),
            channels: vec!["alpha".into()],
            default_channel: Some("alpha".into()),
            replaces: None,
            builder: "opkit-v0.1.0".into(),
        }
    }

    fn write(dir: &std::path::Path, bundle: &GeneratedBundle) {
        for (path, text) in &bundle.files {
            let p = dir.join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
    }

    #[test]
    fn a_generated_bundle_installs_the_deployment_with_its_bound_roles_and_validates() {
        let sample = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": 1}});
        let mut base = base_csv("demo", "Demo Operator", false);
        base["spec"]["provider"]["name"] = "Example".into();
        let bundle = generate_bundle(&objects(), &[sample], &base, &opts()).unwrap();
        assert_eq!(bundle.csv_name, "demo.v1.0.0");
        let paths: Vec<&str> = bundle.files.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(
            paths,
            [
                "manifests/demo.clusterserviceversion.yaml",
                "manifests/example.com_widgets.yaml",
                "manifests/demo-metrics_v1_service.yaml",
                "metadata/annotations.yaml",
            ]
        );
        let tmp = tempfile::tempdir().unwrap();
        write(tmp.path(), &bundle);
        let loaded = Bundle::load(tmp.path()).unwrap();
        let report = validate_bundle(&loaded, &[]);
        assert!(report.is_valid(), "{:?}", report.findings);
        let csv = loaded.csv_object();
        let cluster = &csv["spec"]["install"]["spec"]["clusterPermissions"][0];
        assert_eq!(cluster["serviceAccountName"], "demo-manager");
        assert_eq!(cluster["rules"][0]["resources"][0], "widgets");
        assert_eq!(
            csv["spec"]["customresourcedefinitions"]["owned"][0]["kind"],
            "Widget"
        );
        let examples: Value = serde_json::from_str(
            csv["metadata"]["annotations"]["alm-examples"]
                .as_str()
                .unwrap(),
        )
        .unwrap();
        assert_eq!(examples[0]["spec"]["size"], 1);
        assert_eq!(loaded.package(), "demo");
    }

    #[test]
    fn the_base_csvs_descriptions_of_owned_apis_are_kept() {
        let mut base = base_csv("demo", "Demo", false);
        base["spec"]["customresourcedefinitions"]["owned"] = json!([{
            "name": "widgets.example.com", "version": "v1", "kind": "Widget",
            "displayName": "Widget", "description": "A widget.",
            "specDescriptors": [{"path": "size", "displayName": "Size"}],
        }]);
        let bundle = generate_bundle(&objects(), &[], &base, &opts()).unwrap();
        let csv: Value = serde_yaml::from_str(&bundle.files[0].1).unwrap();
        let owned = &csv["spec"]["customresourcedefinitions"]["owned"][0];
        assert_eq!(owned["description"], "A widget.");
        assert_eq!(owned["specDescriptors"][0]["path"], "size");
    }

    #[test]
    fn refuses_what_a_bundle_cannot_ship() {
        let mut objs = objects();
        objs.push(json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "web"}}));
        let err =
            generate_bundle(&objs, &[], &base_csv("demo", "Demo", false), &opts()).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("Ingress \"web\" cannot be shipped"),
            "{err}"
        );
        let none: Vec<Value> = objects()
            .into_iter()
            .filter(|o| kind(o) != "Deployment")
            .collect();
        assert_eq!(
            generate_bundle(&none, &[], &base_csv("demo", "Demo", false), &opts()),
            Err(GenerateError::NoDeployment)
        );
        let mut o = opts();
        o.default_channel = Some("stable".into());
        assert!(matches!(
            generate_bundle(&objects(), &[], &base_csv("demo", "Demo", false), &o),
            Err(GenerateError::DefaultChannel(_))
        ));
    }
}
