//! A registry+v1 bundle as the plain objects OLM v1 installs, for the install mode the
//! extension asks for ([`modes`]): the bundle's own objects but the CSV (CRDs and the rest as
//! they are), a Deployment per deployment of the CSV's install strategy (its pods annotated
//! with the CSV's annotations, `olm.targetNamespaces` and `olm.operatorNamespace`), a
//! ServiceAccount per service account the CSV names (unless the bundle ships it or it is the
//! namespace's `default`), and the CSV's RBAC bound to those accounts: `clusterPermissions` as
//! ClusterRoles and ClusterRoleBindings; `permissions` as Roles and RoleBindings in the watched
//! namespace, or, watching all namespaces, as ClusterRoles and ClusterRoleBindings that may also
//! read namespaces (as operator-controller and OLM v0 lift them); the CSV's webhooks
//! ([`webhooks`]). Every object carries the
//! owning extension's labels, so the installer can find what it installed.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use crate::bundle::Bundle;

pub mod modes;
pub mod webhooks;

pub use modes::{InstallMode, install_mode};
pub use webhooks::{inject_ca_bundle, webhook_services};

/// The label naming the kind of the object's owner (`ClusterExtension`).
pub const OWNER_KIND_LABEL: &str = "olm.operatorframework.io/owner-kind";
/// The label naming the owning extension.
pub const OWNER_NAME_LABEL: &str = "olm.operatorframework.io/owner-name";

/// Why a bundle cannot be installed as plain objects.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    /// The CSV supports none of the install modes OLM v1 installs.
    #[error(
        "unsupported bundle {bundle:?}: bundle must support at least one of [AllNamespaces SingleNamespace OwnNamespace] install modes"
    )]
    UnsupportedBundle {
        /// The bundle.
        bundle: String,
    },
    /// The CSV owns aggregated APIs (`spec.apiservicedefinitions.owned`), which OLM v1 does
    /// not install. The text is operator-controller's, spelling included, so searches for it
    /// find both.
    #[error("unsupported bundle {bundle:?}: apiServiceDefintions are not supported")]
    ApiServiceDefinitions {
        /// The bundle.
        bundle: String,
    },
    /// The extension's inline configuration does not fit the bundle (operator-controller's
    /// `InvalidConfiguration`).
    #[error("invalid ClusterExtension configuration: invalid configuration: {0}")]
    InvalidConfiguration(String),
    /// The CSV's webhook definitions cannot be rendered.
    #[error("bundle {bundle:?}: {message}")]
    Webhook {
        /// The bundle.
        bundle: String,
        /// What is wrong.
        message: String,
    },
    /// A strategy deployment has no name.
    #[error("bundle {bundle:?}: a deployment of the install strategy has no name")]
    UnnamedDeployment {
        /// The bundle.
        bundle: String,
    },
}

/// The objects installing `bundle` into `namespace` for the extension `owner`, watching what
/// `mode` says (from [`install_mode`]).
pub fn plain_objects(
    bundle: &Bundle,
    namespace: &str,
    owner: &str,
    mode: &InstallMode,
) -> Result<Vec<Value>, InstallError> {
    let csv = &bundle.csv;
    if !csv.spec.api_service_definitions.owned.is_empty() {
        return Err(InstallError::ApiServiceDefinitions {
            bundle: bundle.name().to_string(),
        });
    }
    let strategy = &csv.spec.install.spec;
    let mut out: Vec<Value> = bundle
        .manifests
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != bundle.csv_index)
        .map(|(_, m)| m.object.clone())
        .collect();

    let shipped: BTreeSet<&str> = bundle
        .manifests
        .iter()
        .filter(|m| m.kind() == "ServiceAccount")
        .map(|m| m.name())
        .collect();
    let mut accounts = BTreeSet::new();
    for d in &strategy.deployments {
        if d.name.is_empty() {
            return Err(InstallError::UnnamedDeployment {
                bundle: bundle.name().to_string(),
            });
        }
        let mut spec = d.spec.clone();
        // What OLM tells an operator about where it runs and what it watches, on top of the
        // CSV's annotations (the template's own win over those).
        let mut annotations: BTreeMap<String, Value> = csv
            .metadata
            .annotations
            .iter()
            .map(|(k, v)| (k.clone(), json!(v)))
            .collect();
        if let Some(own) = spec
            .pointer("/template/metadata/annotations")
            .and_then(Value::as_object)
        {
            annotations.extend(own.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        annotations.insert(
            "olm.targetNamespaces".into(),
            json!(mode.target_namespaces()),
        );
        annotations.insert("olm.operatorNamespace".into(), json!(namespace));
        if let Some(template) = spec.pointer_mut("/template").and_then(Value::as_object_mut) {
            let meta = template.entry("metadata").or_insert_with(|| json!({}));
            if meta.is_object() {
                meta["annotations"] = json!(annotations);
            }
        }
        // OLM keeps one old ReplicaSet.
        if spec.is_object() {
            spec["revisionHistoryLimit"] = json!(1);
        }
        out.push(json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": d.name, "namespace": namespace, "labels": d.label},
            "spec": spec,
        }));
        accounts.insert(account(d.service_account()));
    }
    // Watching every namespace, `permissions` are lifted to the cluster, after the CSV's own
    // cluster permissions (so their names stay as they are).
    let mut cluster: Vec<(&str, Vec<Value>)> = strategy
        .cluster_permissions
        .iter()
        .map(|p| (account(&p.service_account_name), p.rules.clone()))
        .collect();
    let namespaced: Vec<(&str, Vec<Value>)> = strategy
        .permissions
        .iter()
        .map(|p| (account(&p.service_account_name), p.rules.clone()))
        .collect();
    let (namespaced, watched) = match mode.watched() {
        Some(ns) => (namespaced, ns),
        None => {
            let read_namespaces = json!({"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get", "list", "watch"]});
            cluster.extend(namespaced.into_iter().map(|(sa, mut rules)| {
                rules.push(read_namespaces.clone());
                (sa, rules)
            }));
            (Vec::new(), namespace)
        }
    };
    let rbac = [
        (namespaced, "Role", "RoleBinding"),
        (cluster, "ClusterRole", "ClusterRoleBinding"),
    ];
    for (permissions, role_kind, binding_kind) in rbac {
        for (i, (sa, rules)) in permissions.into_iter().enumerate() {
            accounts.insert(sa);
            let name = rbac_name(bundle.name(), sa, i);
            let scoped = |kind: &str, mut object: Value| {
                object["apiVersion"] = json!("rbac.authorization.k8s.io/v1");
                object["kind"] = json!(kind);
                object["metadata"] = json!({"name": name});
                if role_kind == "Role" {
                    object["metadata"]["namespace"] = json!(watched);
                }
                object
            };
            out.push(scoped(role_kind, json!({"rules": rules})));
            out.push(scoped(
                binding_kind,
                json!({
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": name},
                    "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": namespace}],
                }),
            ));
        }
    }
    webhooks::render(bundle, namespace, mode, &mut out)?;
    // Every namespace has `default` already: it is used, never owned.
    for sa in accounts
        .into_iter()
        .filter(|sa| *sa != "default" && !shipped.contains(sa))
    {
        out.push(json!({
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": sa, "namespace": namespace},
        }));
    }
    for object in &mut out {
        label(object, owner);
    }
    Ok(out)
}

/// A pod's service account: `default` when none is named.
fn account(name: &str) -> &str {
    if name.is_empty() { "default" } else { name }
}

/// `<bundle>-<account>`, with the entry's index after the first.
fn rbac_name(bundle: &str, account: &str, index: usize) -> String {
    if index == 0 {
        format!("{bundle}-{account}")
    } else {
        format!("{bundle}-{account}-{index}")
    }
}

fn label(object: &mut Value, owner: &str) {
    if !object["metadata"].is_object() {
        object["metadata"] = json!({});
    }
    let meta = &mut object["metadata"];
    if !meta["labels"].is_object() {
        meta["labels"] = json!({});
    }
    meta["labels"][OWNER_KIND_LABEL] = json!("ClusterExtension");
    meta["labels"][OWNER_NAME_LABEL] = json!(owner);
}

#[cfg(test)]
mod tests {
    use super::*;

    const CSV: &str = r#"apiVersion: operators.coreos.com/v1alpha1
kind: ClusterServiceVersion
metadata:
  name: demo.v1.0.0
  annotations:
    capabilities: Basic Install
    team: csv
spec:
  version: 1.0.0
  installModes:
  - type: AllNamespaces
    supported: true
  install:
    strategy: deployment
    spec:
      deployments:
      - name: demo-controller
        label:
          app: demo
        spec:
          selector:
            matchLabels:
              app: demo
          template:
            metadata:
              labels:
                app: demo
              annotations:
                team: template
            spec:
              serviceAccountName: demo-sa
              containers:
              - name: manager
                image: example.com/demo:v1
                volumeMounts:
                - name: certs
                  mountPath: /tmp/k8s-webhook-server/serving-certs
                - name: data
                  mountPath: /data
              volumes:
              - name: certs
                emptyDir: {}
              - name: data
                emptyDir: {}
      permissions:
      - serviceAccountName: demo-sa
        rules:
        - apiGroups: [""]
          resources: [configmaps]
          verbs: [get]
      clusterPermissions:
      - serviceAccountName: demo-sa
        rules:
        - apiGroups: [demo.example.com]
          resources: [widgets]
          verbs: ["*"]
"#;

    const CRD: &str = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.demo.example.com\nspec:\n  group: demo.example.com\n";

    fn bundle(csv: &str) -> (tempfile::TempDir, Bundle) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("manifests")).unwrap();
        std::fs::create_dir_all(dir.path().join("metadata")).unwrap();
        std::fs::write(dir.path().join("manifests/csv.yaml"), csv).unwrap();
        std::fs::write(dir.path().join("manifests/crd.yaml"), CRD).unwrap();
        std::fs::write(
            dir.path().join("metadata/annotations.yaml"),
            "annotations:\n  operators.operatorframework.io.bundle.package.v1: demo\n",
        )
        .unwrap();
        let b = Bundle::load(dir.path()).unwrap();
        (dir, b)
    }

    fn find<'a>(objects: &'a [Value], kind: &str) -> Vec<&'a Value> {
        objects.iter().filter(|o| o["kind"] == kind).collect()
    }

    fn render(mode: &InstallMode) -> Vec<Value> {
        let (_dir, b) = bundle(CSV);
        plain_objects(&b, "ops", "demo-ext", mode).unwrap()
    }

    #[test]
    fn a_bundle_owning_aggregated_apis_is_refused_as_operator_controller_refuses_it() {
        let csv = CSV.replace(
            "  install:\n",
            "  apiservicedefinitions:\n    owned:\n    - {name: widgets, group: metrics.demo.example.com, version: v1, kind: Widget}\n  install:\n",
        );
        assert_ne!(csv, CSV, "the CSV fixture has no `  install:` line");
        let (_dir, b) = bundle(&csv);
        let err = plain_objects(&b, "ops", "demo-ext", &InstallMode::AllNamespaces).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "unsupported bundle {:?}: apiServiceDefintions are not supported",
                b.name()
            )
        );
        // Required aggregated APIs are someone else's to serve: no refusal.
        let required = CSV.replace(
            "  install:\n",
            "  apiservicedefinitions:\n    required:\n    - {name: pods, group: metrics.k8s.io, version: v1beta1, kind: PodMetrics}\n  install:\n",
        );
        let (_dir, b) = bundle(&required);
        plain_objects(&b, "ops", "demo-ext", &InstallMode::AllNamespaces).unwrap();
    }

    #[test]
    fn a_bundle_renders_to_its_crds_deployment_account_and_rbac_labelled_by_the_extension() {
        let objects = render(&InstallMode::AllNamespaces);
        let kinds: BTreeSet<&str> = objects.iter().filter_map(|o| o["kind"].as_str()).collect();
        assert_eq!(
            kinds,
            BTreeSet::from([
                "CustomResourceDefinition",
                "Deployment",
                "ServiceAccount",
                "ClusterRole",
                "ClusterRoleBinding"
            ])
        );
        assert!(find(&objects, "ClusterServiceVersion").is_empty());
        let deploy = find(&objects, "Deployment")[0];
        assert_eq!(deploy["metadata"]["namespace"], "ops");
        assert_eq!(deploy["metadata"]["labels"]["app"], "demo");
        assert_eq!(deploy["spec"]["revisionHistoryLimit"], 1);
        let annotations = &deploy["spec"]["template"]["metadata"]["annotations"];
        assert_eq!(annotations["olm.targetNamespaces"], "");
        assert_eq!(annotations["olm.operatorNamespace"], "ops");
        // The CSV's annotations reach the pods; the template's own win.
        assert_eq!(annotations["capabilities"], "Basic Install");
        assert_eq!(annotations["team"], "template");
        let sa = find(&objects, "ServiceAccount")[0];
        assert_eq!(
            (&sa["metadata"]["name"], &sa["metadata"]["namespace"]),
            (&json!("demo-sa"), &json!("ops"))
        );
        let crb = find(&objects, "ClusterRoleBinding")[0];
        assert!(crb["metadata"]["namespace"].is_null());
        assert_eq!(crb["roleRef"]["name"], "demo.v1.0.0-demo-sa");
        assert_eq!(
            crb["subjects"][0],
            json!({"kind": "ServiceAccount", "name": "demo-sa", "namespace": "ops"})
        );
        for o in &objects {
            assert_eq!(o["metadata"]["labels"][OWNER_NAME_LABEL], "demo-ext", "{o}");
            assert_eq!(
                o["metadata"]["labels"][OWNER_KIND_LABEL],
                "ClusterExtension"
            );
        }
    }

    #[test]
    fn watching_all_namespaces_lifts_permissions_to_a_cluster_role_that_also_reads_namespaces() {
        let objects = render(&InstallMode::AllNamespaces);
        let roles = find(&objects, "ClusterRole");
        let names: Vec<&Value> = roles.iter().map(|r| &r["metadata"]["name"]).collect();
        assert_eq!(
            names,
            [
                &json!("demo.v1.0.0-demo-sa"),
                &json!("demo.v1.0.0-demo-sa-1")
            ]
        );
        assert_eq!(roles[0]["rules"][0]["resources"], json!(["widgets"]));
        assert_eq!(
            roles[1]["rules"],
            json!([
                {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]},
                {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get", "list", "watch"]},
            ])
        );
        assert!(find(&objects, "Role").is_empty());
    }

    #[test]
    fn watching_one_namespace_puts_permissions_in_it_bound_to_the_account_of_the_install_namespace()
    {
        for mode in [
            InstallMode::SingleNamespace("team-a".into()),
            InstallMode::OwnNamespace("ops".into()),
        ] {
            let watched = mode.watched().unwrap();
            let objects = render(&mode);
            let role = find(&objects, "Role");
            assert_eq!(role.len(), 1, "{mode:?}");
            assert_eq!(role[0]["metadata"]["namespace"], watched);
            assert_eq!(role[0]["metadata"]["name"], "demo.v1.0.0-demo-sa");
            assert_eq!(role[0]["rules"][0]["resources"], json!(["configmaps"]));
            let binding = find(&objects, "RoleBinding")[0];
            assert_eq!(binding["metadata"]["namespace"], watched);
            assert_eq!(
                binding["subjects"][0],
                json!({"kind": "ServiceAccount", "name": "demo-sa", "namespace": "ops"})
            );
            // Cluster permissions stay cluster-wide and are not lifted further.
            assert_eq!(find(&objects, "ClusterRole").len(), 1);
            let deploy = find(&objects, "Deployment")[0];
            assert_eq!(
                deploy["spec"]["template"]["metadata"]["annotations"]["olm.targetNamespaces"],
                watched
            );
            assert_eq!(deploy["metadata"]["namespace"], "ops");
        }
    }

    const WEBHOOKS: &str = r#"  webhookdefinitions:
  - type: ValidatingAdmissionWebhook
    generateName: vwidget.demo.example.com-
    deploymentName: demo-controller
    containerPort: 443
    targetPort: 9443
    webhookPath: /validate
    sideEffects: None
    failurePolicy: Fail
    admissionReviewVersions: [v1]
    rules:
    - operations: [CREATE, UPDATE]
      apiGroups: [demo.example.com]
      apiVersions: [v1]
      resources: [widgets]
  - type: MutatingAdmissionWebhook
    generateName: mwidget.demo.example.com
    deploymentName: demo-controller
    containerPort: 443
    targetPort: 9443
    webhookPath: /mutate
    sideEffects: None
    reinvocationPolicy: IfNeeded
    admissionReviewVersions: [v1]
"#;

    const CONVERSION: &str = r#"  - type: ConversionWebhook
    generateName: cwidget.demo.example.com
    deploymentName: demo-controller
    containerPort: 443
    targetPort: 9443
    webhookPath: /convert
    admissionReviewVersions: [v1]
    conversionCRDs: [widgets.demo.example.com]
"#;

    /// The CSV with the admission webhooks and the conversion webhook.
    fn with_webhooks(mode: &InstallMode) -> Result<Vec<Value>, String> {
        render_csv(&format!("{CSV}{WEBHOOKS}{CONVERSION}"), mode)
    }

    fn render_csv(csv: &str, mode: &InstallMode) -> Result<Vec<Value>, String> {
        let (_dir, b) = bundle(csv);
        plain_objects(&b, "ops", "demo-ext", mode).map_err(|e| e.to_string())
    }

    /// `csv` supporting SingleNamespace too.
    fn single_too(csv: &str) -> String {
        csv.replace(
            "  - type: AllNamespaces\n    supported: true\n",
            "  - type: AllNamespaces\n    supported: true\n  - type: SingleNamespace\n    supported: true\n",
        )
    }

    #[test]
    fn webhooks_render_a_service_configurations_and_a_conversion_through_it_with_certificates_mounted()
     {
        let objects = with_webhooks(&InstallMode::AllNamespaces).unwrap();
        let service = find(&objects, "Service")[0];
        assert_eq!(service["metadata"]["name"], "demo-controller-service");
        assert_eq!(service["metadata"]["namespace"], "ops");
        assert_eq!(
            service["spec"],
            json!({"ports": [{"name": "443", "port": 443, "targetPort": 9443}], "selector": {"app": "demo"}})
        );
        assert_eq!(service["metadata"]["labels"][OWNER_NAME_LABEL], "demo-ext");
        let to_service = |path: &str| json!({"service": {"namespace": "ops", "name": "demo-controller-service", "port": 443, "path": path}});
        let validating = find(&objects, "ValidatingWebhookConfiguration")[0];
        assert_eq!(validating["metadata"]["name"], "vwidget.demo.example.com");
        let webhook = &validating["webhooks"][0];
        assert_eq!(webhook["name"], "vwidget.demo.example.com");
        assert_eq!(webhook["clientConfig"], to_service("/validate"));
        assert_eq!(webhook["sideEffects"], "None");
        assert_eq!(webhook["failurePolicy"], "Fail");
        assert_eq!(webhook["rules"][0]["resources"], json!(["widgets"]));
        // Watching all namespaces, no namespace selector.
        assert!(webhook["namespaceSelector"].is_null());
        let mutating = find(&objects, "MutatingWebhookConfiguration")[0];
        assert_eq!(mutating["webhooks"][0]["reinvocationPolicy"], "IfNeeded");
        assert_eq!(
            mutating["webhooks"][0]["clientConfig"],
            to_service("/mutate")
        );
        let crd = find(&objects, "CustomResourceDefinition")[0];
        assert_eq!(
            crd["spec"]["conversion"],
            json!({"strategy": "Webhook", "webhook": {"clientConfig": to_service("/convert"), "conversionReviewVersions": ["v1"]}})
        );
        // The certificate Secret replaces what the bundle mounted at the serving-cert path.
        let pod = &find(&objects, "Deployment")[0]["spec"]["template"]["spec"];
        let volumes: Vec<&Value> = pod["volumes"].as_array().unwrap().iter().collect();
        assert_eq!(
            volumes
                .iter()
                .map(|v| v["name"].as_str().unwrap())
                .collect::<Vec<_>>(),
            ["data", "webhook-cert", "apiservice-cert"]
        );
        assert_eq!(
            volumes[1]["secret"],
            json!({"secretName": "demo-controller-service-cert", "items": [
                {"key": "tls.crt", "path": "tls.crt"}, {"key": "tls.key", "path": "tls.key"}]})
        );
        assert_eq!(volumes[2]["secret"]["items"][0]["path"], "apiserver.crt");
        assert_eq!(
            pod["containers"][0]["volumeMounts"],
            json!([
                {"name": "data", "mountPath": "/data"},
                {"name": "webhook-cert", "mountPath": "/tmp/k8s-webhook-server/serving-certs"},
                {"name": "apiservice-cert", "mountPath": "/apiserver.local.config/certificates"},
            ])
        );
    }

    #[test]
    fn watching_one_namespace_the_admission_webhooks_see_only_it() {
        let single = InstallMode::SingleNamespace("team-a".into());
        let objects = render_csv(&single_too(&format!("{CSV}{WEBHOOKS}")), &single).unwrap();
        let selector = json!({"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["team-a"]}]});
        for kind in [
            "ValidatingWebhookConfiguration",
            "MutatingWebhookConfiguration",
        ] {
            assert_eq!(
                find(&objects, kind)[0]["webhooks"][0]["namespaceSelector"],
                selector
            );
        }
    }

    #[test]
    fn the_ca_bundle_is_written_into_every_client_config_calling_the_service() {
        let mut objects = with_webhooks(&InstallMode::AllNamespaces).unwrap();
        assert_eq!(
            webhook_services(&objects),
            BTreeSet::from([("ops".to_string(), "demo-controller-service".to_string())])
        );
        inject_ca_bundle(&mut objects, "ops", "other-service", b"NOPE");
        inject_ca_bundle(&mut objects, "ops", "demo-controller-service", b"PEM");
        let pem = json!("UEVN");
        let configs = [
            &find(&objects, "ValidatingWebhookConfiguration")[0]["webhooks"][0]["clientConfig"],
            &find(&objects, "MutatingWebhookConfiguration")[0]["webhooks"][0]["clientConfig"],
            &find(&objects, "CustomResourceDefinition")[0]["spec"]["conversion"]["webhook"]["clientConfig"],
        ];
        for config in configs {
            assert_eq!(config["caBundle"], pem, "{config}");
        }
    }

    #[test]
    fn webhooks_operator_controller_refuses_are_refused_with_its_messages() {
        let all = InstallMode::AllNamespaces;
        let gone = format!(
            "{CSV}{}",
            WEBHOOKS.replacen("deploymentName: demo-controller", "deploymentName: gone", 1)
        );
        assert_eq!(
            render_csv(&gone, &all).unwrap_err(),
            "bundle \"demo.v1.0.0\": webhook of type 'ValidatingAdmissionWebhook' with name 'vwidget.demo.example.com-' references non-existent deployment 'gone'"
        );
        let twice = format!(
            "{CSV}  webhookdefinitions:\n{CONVERSION}{}",
            CONVERSION.replace("cwidget.", "again.")
        );
        assert_eq!(
            render_csv(&twice, &all).unwrap_err(),
            "bundle \"demo.v1.0.0\": conversion webhooks [again.demo.example.com,cwidget.demo.example.com] reference same custom resource definition 'widgets.demo.example.com'"
        );
        // A conversion webhook converts cluster-wide: only AllNamespaces bundles may have one.
        let single = InstallMode::SingleNamespace("team-a".into());
        assert_eq!(
            render_csv(
                &single_too(&format!("{CSV}  webhookdefinitions:\n{CONVERSION}")),
                &single
            )
            .unwrap_err(),
            "bundle \"demo.v1.0.0\": bundle contains conversion webhook \"cwidget.demo.example.com\" and supports install modes [AllNamespaces SingleNamespace] - conversion webhooks are only supported for bundles that only support AllNamespaces install mode"
        );
        let locking = format!(
            "{CSV}{}",
            WEBHOOKS
                .replacen(
                    "apiGroups: [demo.example.com]",
                    "apiGroups: [admissionregistration.k8s.io]",
                    1
                )
                .replacen(
                    "resources: [widgets]",
                    "resources: [ValidatingWebhookConfigurations]",
                    1
                )
        );
        assert_eq!(
            render_csv(&locking, &all).unwrap_err(),
            "bundle \"demo.v1.0.0\": webhook \"vwidget.demo.example.com-\" contains forbidden rule: admission webhook rules cannot reference resource \"ValidatingWebhookConfigurations\" for API group \"admissionregistration.k8s.io\""
        );
    }
}
