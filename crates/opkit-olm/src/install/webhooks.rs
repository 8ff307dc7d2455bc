//! A CSV's `webhookdefinitions` as the objects that make the API server call them, as
//! operator-controller renders them: per deployment serving webhooks a Service
//! (`<deployment>-service`, dots made dashes) with a port per webhook port, selecting the
//! deployment's pods; a ValidatingWebhookConfiguration or MutatingWebhookConfiguration per
//! admission webhook (named by its `generateName` without the trailing dash, limited to the
//! watched namespace); the CRDs of a conversion webhook converted through it. The deployment
//! mounts the Secret `<service>-cert` (`tls.crt`, `tls.key`) where operators built with
//! controller-runtime and OLM's API services read their serving certificate.
//!
//! Who issues that certificate is the installer's business: it finds the Services to certify
//! with [`webhook_services`] and writes the CA into every reference to one of them with
//! [`inject_ca_bundle`].

use std::collections::{BTreeMap, BTreeSet};

use base64::Engine;
use serde_json::{Value, json};

use super::{InstallError, InstallMode};
use crate::bundle::Bundle;
use crate::bundle::csv::WebhookDefinition;

/// Where a certificate Secret is mounted, and under which file names.
const CERT_MOUNTS: [(&str, &str, &str, &str); 2] = [
    (
        "webhook-cert",
        "/tmp/k8s-webhook-server/serving-certs",
        "tls.crt",
        "tls.key",
    ),
    (
        "apiservice-cert",
        "/apiserver.local.config/certificates",
        "apiserver.crt",
        "apiserver.key",
    ),
];

/// The Service in front of the webhooks of `deployment`.
pub fn service_name(deployment: &str) -> String {
    format!("{}-service", deployment.replace('.', "-"))
}

/// The Secret holding the serving certificate of the Service `service`.
pub fn cert_secret_name(service: &str) -> String {
    format!("{service}-cert")
}

/// Adds to `out` (the bundle's other objects and its Deployments, in `namespace`) what the
/// CSV's webhooks need, and mounts the certificates into the deployments serving them.
pub(crate) fn render(
    bundle: &Bundle,
    namespace: &str,
    mode: &InstallMode,
    out: &mut Vec<Value>,
) -> Result<(), InstallError> {
    let webhooks = &bundle.csv.spec.webhook_definitions;
    let problems = problems(bundle);
    if !problems.is_empty() {
        return Err(InstallError::Webhook {
            bundle: bundle.name().to_string(),
            message: problems.join("\n"),
        });
    }
    let mut ports: BTreeMap<&str, BTreeSet<(i64, String)>> = BTreeMap::new();
    for w in webhooks {
        let port = port(w);
        let target = match &w.target_port {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Number(n)) => n.to_string(),
            _ => port.to_string(),
        };
        ports
            .entry(w.deployment_name.as_str())
            .or_default()
            .insert((port, target));
    }
    for (deployment, ports) in &ports {
        let Some(d) = out.iter_mut().find(|o| {
            o["kind"] == "Deployment"
                && o["metadata"]["name"] == *deployment
                && o["apiVersion"] == "apps/v1"
        }) else {
            continue; // problems() names it
        };
        let service = service_name(deployment);
        mount_certs(d, &cert_secret_name(&service));
        let selector = d["spec"]["selector"]["matchLabels"].clone();
        let ports: Vec<Value> = ports
            .iter()
            .map(|(port, target)| {
                let target = target
                    .parse::<i64>()
                    .map_or_else(|_| json!(target), |n| json!(n));
                json!({"name": port.to_string(), "port": port, "targetPort": target})
            })
            .collect();
        out.push(json!({
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": service, "namespace": namespace},
            "spec": {"ports": ports, "selector": selector},
        }));
    }
    let namespace_selector = mode.watched().map(|ns| {
        json!({"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In", "values": [ns]}]})
    });
    for w in webhooks {
        let client_config = |path: Option<&str>| {
            let mut service = json!({
                "namespace": namespace,
                "name": service_name(&w.deployment_name),
                "port": port(w),
            });
            if let Some(path) = path {
                service["path"] = json!(path);
            }
            json!({"service": service})
        };
        let (kind, extra) = match w.type_.as_str() {
            "ValidatingAdmissionWebhook" => ("ValidatingWebhookConfiguration", None),
            "MutatingAdmissionWebhook" => (
                "MutatingWebhookConfiguration",
                w.reinvocation_policy.as_ref(),
            ),
            "ConversionWebhook" => {
                for crd in &w.conversion_crds {
                    convert(
                        bundle,
                        out,
                        crd,
                        w,
                        client_config(Some(w.webhook_path.as_deref().unwrap_or("/"))),
                    )?;
                }
                continue;
            }
            other => {
                return Err(InstallError::Webhook {
                    bundle: bundle.name().to_string(),
                    message: format!("webhook {:?} has unknown type {other:?}", w.generate_name),
                });
            }
        };
        let name = w.generate_name.trim_end_matches('-');
        let mut webhook = json!({
            "name": name,
            "clientConfig": client_config(w.webhook_path.as_deref()),
            "rules": w.rules,
            "admissionReviewVersions": w.admission_review_versions,
        });
        let optional = [
            ("failurePolicy", w.failure_policy.as_ref().map(|v| json!(v))),
            ("matchPolicy", w.match_policy.as_ref().map(|v| json!(v))),
            ("objectSelector", w.object_selector.clone()),
            ("sideEffects", w.side_effects.as_ref().map(|v| json!(v))),
            ("timeoutSeconds", w.timeout_seconds.map(|v| json!(v))),
            ("reinvocationPolicy", extra.map(|v| json!(v))),
            ("namespaceSelector", namespace_selector.clone()),
        ];
        for (field, value) in optional {
            if let Some(value) = value {
                webhook[field] = value;
            }
        }
        out.push(json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": kind,
            "metadata": {"name": name},
            "webhooks": [webhook],
        }));
    }
    Ok(())
}

/// What makes the CSV's webhooks uninstallable, with operator-controller's texts: a
/// deployment that is not there, a conversion webhook in a bundle that supports more than
/// AllNamespaces (its CRDs are cluster-wide) or of a CRD another one converts too, rules that
/// could lock the cluster's admission or OLM's own API.
fn problems(bundle: &Bundle) -> Vec<String> {
    let csv = &bundle.csv;
    let webhooks = &csv.spec.webhook_definitions;
    let mut out = Vec::new();
    let conversions: Vec<&WebhookDefinition> = webhooks
        .iter()
        .filter(|w| w.type_ == "ConversionWebhook")
        .collect();
    let supported: BTreeSet<&str> = csv
        .spec
        .install_modes
        .iter()
        .filter(|m| m.supported)
        .map(|m| m.type_.as_str())
        .collect();
    if !conversions.is_empty() && supported != BTreeSet::from(["AllNamespaces"]) {
        let modes = supported.iter().copied().collect::<Vec<_>>().join(" ");
        out.extend(conversions.iter().map(|w| format!(
            "bundle contains conversion webhook {:?} and supports install modes [{modes}] - conversion webhooks are only supported for bundles that only support AllNamespaces install mode",
            w.generate_name
        )));
    }
    let deployments: BTreeSet<&str> = csv
        .spec
        .install
        .spec
        .deployments
        .iter()
        .map(|d| d.name.as_str())
        .collect();
    for w in webhooks {
        if !deployments.contains(w.deployment_name.as_str()) {
            out.push(format!(
                "webhook of type '{}' with name '{}' references non-existent deployment '{}'",
                w.type_, w.generate_name, w.deployment_name
            ));
        }
    }
    let mut by_crd: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for w in &conversions {
        for crd in &w.conversion_crds {
            by_crd.entry(crd).or_default().insert(&w.generate_name);
        }
    }
    for (crd, names) in by_crd.into_iter().filter(|(_, n)| n.len() > 1) {
        let names = names.into_iter().collect::<Vec<_>>().join(",");
        out.push(format!(
            "conversion webhooks [{names}] reference same custom resource definition '{crd}'"
        ));
    }
    for w in webhooks.iter().filter(|w| w.type_ != "ConversionWebhook") {
        for rule in &w.rules {
            let strings = |field: &str| -> Vec<&str> {
                rule[field]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .collect()
            };
            for group in strings("apiGroups") {
                if group == "*" || group == "olm.operatorframework.io" {
                    out.push(format!(
                        "webhook {:?} contains forbidden rule: admission webhook rules cannot reference API group {group:?}",
                        w.generate_name
                    ));
                }
                if group == "admissionregistration.k8s.io" {
                    for resource in strings("resources") {
                        let lower = resource.to_lowercase();
                        let forbidden = [
                            "*",
                            "mutatingwebhookconfiguration",
                            "mutatingwebhookconfigurations",
                            "validatingwebhookconfiguration",
                            "validatingwebhookconfigurations",
                        ];
                        if forbidden.contains(&lower.as_str()) {
                            out.push(format!(
                                "webhook {:?} contains forbidden rule: admission webhook rules cannot reference resource {resource:?} for API group {group:?}",
                                w.generate_name
                            ));
                        }
                    }
                }
            }
        }
    }
    out
}

/// A webhook's port: its container port, 443 when none.
fn port(w: &WebhookDefinition) -> i64 {
    w.container_port.filter(|p| *p > 0).unwrap_or(443)
}

/// Makes the CRD `crd` of `out` convert through the webhook `w`.
fn convert(
    bundle: &Bundle,
    out: &mut [Value],
    crd: &str,
    w: &WebhookDefinition,
    client_config: Value,
) -> Result<(), InstallError> {
    let fail = |message: String| InstallError::Webhook {
        bundle: bundle.name().to_string(),
        message,
    };
    let object = out
        .iter_mut()
        .find(|o| o["kind"] == "CustomResourceDefinition" && o["metadata"]["name"] == crd)
        .ok_or_else(|| {
            fail(format!(
                "conversion webhook {:?} names custom resource definition {crd:?}, which the bundle does not have",
                w.generate_name
            ))
        })?;
    if object["spec"]["preserveUnknownFields"] == true {
        return Err(fail(format!(
            "custom resource definition {crd:?} must have .spec.preserveUnknownFields set to false to let API Server call webhook to do the conversion"
        )));
    }
    object["spec"]["conversion"] = json!({
        "strategy": "Webhook",
        "webhook": {
            "clientConfig": client_config,
            "conversionReviewVersions": w.admission_review_versions,
        },
    });
    Ok(())
}

/// Mounts the Secret `secret` at both certificate paths of every container of `deployment`,
/// replacing whatever the bundle put there.
fn mount_certs(deployment: &mut Value, secret: &str) {
    let pod = &mut deployment["spec"]["template"]["spec"];
    let mut replaced: BTreeSet<String> = CERT_MOUNTS.iter().map(|m| m.0.to_string()).collect();
    let paths: BTreeSet<&str> = CERT_MOUNTS.iter().map(|m| m.1).collect();
    let containers = pod["containers"].as_array().cloned().unwrap_or_default();
    for c in &containers {
        for m in c["volumeMounts"].as_array().into_iter().flatten() {
            if m["mountPath"].as_str().is_some_and(|p| paths.contains(p)) {
                replaced.extend(m["name"].as_str().map(str::to_string));
            }
        }
    }
    let keep = |list: &Value| -> Vec<Value> {
        list.as_array()
            .into_iter()
            .flatten()
            .filter(|v| !v["name"].as_str().is_some_and(|n| replaced.contains(n)))
            .cloned()
            .collect()
    };
    let mut volumes = keep(&pod["volumes"]);
    volumes.extend(CERT_MOUNTS.iter().map(|(name, _, crt, key)| {
        json!({"name": name, "secret": {"secretName": secret, "items": [
            {"key": "tls.crt", "path": crt},
            {"key": "tls.key", "path": key},
        ]}})
    }));
    pod["volumes"] = json!(volumes);
    if let Some(containers) = pod["containers"].as_array_mut() {
        for c in containers {
            let mut mounts = keep(&c["volumeMounts"]);
            mounts.extend(
                CERT_MOUNTS
                    .iter()
                    .map(|(name, path, _, _)| json!({"name": name, "mountPath": path})),
            );
            c["volumeMounts"] = json!(mounts);
        }
    }
}

/// The `clientConfig.service` references of the webhook configurations and CRD conversions
/// of `objects`, as `(namespace, name)`.
pub fn webhook_services(objects: &[Value]) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    for o in objects {
        for config in client_configs(o) {
            let service = &config["service"];
            if let (Some(ns), Some(name)) =
                (service["namespace"].as_str(), service["name"].as_str())
            {
                out.insert((ns.to_string(), name.to_string()));
            }
        }
    }
    out
}

/// Sets `caBundle` (PEM, written base64 as the API wants) on every `clientConfig` of
/// `objects` that calls the Service `namespace/service`.
pub fn inject_ca_bundle(objects: &mut [Value], namespace: &str, service: &str, ca_pem: &[u8]) {
    let encoded = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    for o in objects.iter_mut() {
        for config in client_configs_mut(o) {
            let s = &config["service"];
            if s["namespace"] == namespace && s["name"] == service {
                config["caBundle"] = json!(encoded);
            }
        }
    }
}

fn client_configs(o: &Value) -> Vec<&Value> {
    match o["kind"].as_str() {
        Some("ValidatingWebhookConfiguration" | "MutatingWebhookConfiguration") => o["webhooks"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|w| &w["clientConfig"])
            .collect(),
        Some("CustomResourceDefinition") => {
            vec![&o["spec"]["conversion"]["webhook"]["clientConfig"]]
        }
        _ => Vec::new(),
    }
}

fn client_configs_mut(o: &mut Value) -> Vec<&mut Value> {
    let kind = o["kind"].as_str().map(str::to_owned);
    match kind.as_deref() {
        Some("ValidatingWebhookConfiguration" | "MutatingWebhookConfiguration") => o["webhooks"]
            .as_array_mut()
            .into_iter()
            .flatten()
            .filter_map(|w| w.get_mut("clientConfig"))
            .collect(),
        Some("CustomResourceDefinition") => {
            match o.pointer_mut("/spec/conversion/webhook/clientConfig") {
                Some(c) => vec![c],
                None => Vec::new(),
            }
        }
        _ => Vec::new(),
    }
}
