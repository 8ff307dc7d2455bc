//! KUDO's instance admission webhook, served by the manager itself: a change the manager
//! would refuse is refused at write time, with KUDO's message, instead of being stored and
//! reported later in an `UpdateRefused` event.
//!
//! KUDO 0.19 decides plans in a mutating webhook that needs cert-manager. Here the webhook
//! only validates, and it answers exactly what the manager's next pass would decide: it runs
//! [`plan::decide`] on the spec the manager accepted (the instance's snapshot, see
//! [`crate::plan`]) and the spec being written, with the operator versions from the
//! manager's caches (hooks must not call the API). So a change the webhook lets through is
//! one the manager runs, and two changes written before the manager saw the first are judged
//! together, as KUDO judges the second against the plan the first scheduled.
//!
//! Not judged (always allowed): writes that leave the spec as it was (metadata, the
//! finalizer, `spec.planExecution.status`), the manager's own writes (they move the
//! snapshot), and instances whose operator version the caches do not hold (yet, or outside
//! the namespaces the manager watches) — for those the manager's deferred refusal remains.
//!
//! The serving certificate is self-managed ([`opkit::SelfManagedCerts`]: a CA and a
//! certificate for `SERVICE.NAMESPACE.svc` in the Secret `SERVICE-cert`, reused on restart,
//! the CA written into the configuration's `caBundle`), or read from a directory. The
//! manager creates or updates the [`CONFIGURATION_NAME`] ValidatingWebhookConfiguration
//! (CREATE and UPDATE of `kudo.dev` Instances, `failurePolicy: Fail`) before it serves.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;

use k8s_openapi::ByteString;
use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use kube::api::{Patch, PatchParams};
use kube::{Api, Client, ResourceExt};
use opkit::webhook::validate_path;
use opkit::{Admission, Denied, ObjectRef, SelfManagedCerts, Store, Validator, WebhookServer};
use serde_json::json;

use crate::api::{CLEANUP_PLAN, Instance, InstanceSpec, OperatorVersion};
use crate::plan::{self, Decision, Observed, SNAPSHOT_ANNOTATION};

/// The ValidatingWebhookConfiguration the manager creates or updates at start.
pub const CONFIGURATION_NAME: &str = "kudo-manager-instance-validation";

/// The webhook's name in it; the API server's refusals name it
/// (`admission webhook "instance-validation.kudo.dev" denied the request: …`).
pub const WEBHOOK_NAME: &str = "instance-validation.kudo.dev";

/// The field manager of the configuration.
const FIELD_MANAGER: &str = "kudo-manager";

/// How the manager serves the webhook (`opkit kudo manager --webhook-service …`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookOptions {
    /// Where the HTTPS server listens (default: all interfaces, port 9443).
    pub addr: SocketAddr,
    /// The Service the API server calls the webhook through.
    pub service: String,
    /// The Service's namespace; the self-managed certificates' Secret lives there too.
    pub namespace: String,
    /// Read `tls.crt` and `tls.key` (and `ca.crt`, written as the `caBundle`, if present)
    /// from this directory instead of managing the certificates.
    pub cert_dir: Option<PathBuf>,
}

impl WebhookOptions {
    /// The webhook behind the Service `service` in `namespace`, on port 9443, with
    /// self-managed certificates.
    pub fn new(service: impl Into<String>, namespace: impl Into<String>) -> WebhookOptions {
        WebhookOptions {
            addr: SocketAddr::from((Ipv4Addr::UNSPECIFIED, opkit::webhook::DEFAULT_PORT)),
            service: service.into(),
            namespace: namespace.into(),
            cert_dir: None,
        }
    }

    /// The Secret holding the self-managed CA and serving certificate.
    pub fn secret_name(&self) -> String {
        format!("{}-cert", self.service)
    }
}

/// The webhook configuration the manager keeps: CREATE and UPDATE of `kudo.dev/v1beta1`
/// Instances sent to the Service, refused when the webhook cannot be reached.
pub fn configuration(options: &WebhookOptions) -> ValidatingWebhookConfiguration {
    serde_json::from_value(json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": CONFIGURATION_NAME, "labels": {"app": "kudo-manager"}},
        "webhooks": [{
            "name": WEBHOOK_NAME,
            "clientConfig": {"service": {
                "name": options.service,
                "namespace": options.namespace,
                "path": validate_path::<Instance>(),
                "port": 443,
            }},
            "rules": [{
                "apiGroups": ["kudo.dev"],
                "apiVersions": ["v1beta1"],
                "operations": ["CREATE", "UPDATE"],
                "resources": ["instances"],
                "scope": "Namespaced",
            }],
            "failurePolicy": "Fail",
            "matchPolicy": "Equivalent",
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
            "timeoutSeconds": 10,
        }],
    }))
    .expect("the webhook configuration is a ValidatingWebhookConfiguration")
}

/// Why the webhook cannot be set up.
#[derive(Debug, thiserror::Error)]
pub enum WebhookError {
    /// The configuration could not be written.
    #[error("writing ValidatingWebhookConfiguration {CONFIGURATION_NAME}: {0}")]
    Configuration(#[source] kube::Error),
    /// `ca.crt` in the certificate directory could not be read.
    #[error("reading {path}: {source}")]
    CaBundle {
        /// The file.
        path: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The manager's caches have no operator versions (a programming error).
    #[error(transparent)]
    Caches(#[from] opkit::Error),
}

/// Creates or updates the configuration (server-side apply). The `caBundle` is kept as the
/// self-managed certificates wrote it, or taken from the certificate directory's `ca.crt`.
pub(crate) async fn apply_configuration(
    client: &Client,
    options: &WebhookOptions,
) -> Result<(), WebhookError> {
    let api: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    let ca_bundle = match &options.cert_dir {
        Some(dir) => {
            let path = dir.join("ca.crt");
            match std::fs::read(&path) {
                Ok(pem) => Some(ByteString(pem)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                Err(source) => {
                    return Err(WebhookError::CaBundle {
                        path: path.display().to_string(),
                        source,
                    });
                }
            }
        }
        None => api
            .get_opt(CONFIGURATION_NAME)
            .await
            .map_err(WebhookError::Configuration)?
            .and_then(|c| c.webhooks?.into_iter().find(|w| w.name == WEBHOOK_NAME))
            .and_then(|w| w.client_config.ca_bundle),
    };
    let mut desired = configuration(options);
    if let Some(hook) = desired.webhooks.iter_mut().flatten().next() {
        hook.client_config.ca_bundle = ca_bundle;
    }
    api.patch(
        CONFIGURATION_NAME,
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(&desired),
    )
    .await
    .map_err(WebhookError::Configuration)?;
    Ok(())
}

/// The webhook server: the validator over `ovs` (the manager's cache of operator versions)
/// and the certificates `options` say.
pub(crate) fn server(options: &WebhookOptions, ovs: Store<OperatorVersion>) -> WebhookServer {
    let server = WebhookServer::new()
        .addr(options.addr)
        .validator::<Instance, _>(InstanceValidator { ovs });
    match &options.cert_dir {
        Some(dir) => server.cert_dir(dir),
        None => server.self_managed_certs(
            SelfManagedCerts::new(&options.service, &options.namespace)
                .secret(options.secret_name())
                .validating_configuration(CONFIGURATION_NAME),
        ),
    }
}

/// Refuses the instance writes the manager would refuse; see the [module docs](self).
pub(crate) struct InstanceValidator {
    ovs: Store<OperatorVersion>,
}

impl InstanceValidator {
    fn operator_version(&self, namespace: &str, name: &str) -> Option<Arc<OperatorVersion>> {
        self.ovs.get(&ObjectRef::new(name).within(namespace))
    }

    /// `old` is `None` on create; `namespace` is the one the API server names (the new
    /// object's own may be unset on create).
    fn check(
        &self,
        old: Option<&Instance>,
        new: &Instance,
        namespace: &str,
    ) -> Result<Vec<String>, Denied> {
        if let Some(old) = old
            && (same_request(&old.spec, &new.spec) || snapshot(old) != snapshot(new))
        {
            return Ok(Vec::new());
        }
        let namespace = match namespace {
            "" => new.namespace().unwrap_or_default(),
            ns => ns.to_string(),
        };
        let stored = old.unwrap_or(new);
        // An unreadable snapshot is the manager's to report; it decides nothing either.
        let Ok(mut accepted) = plan::accepted_spec(stored) else {
            return Ok(Vec::new());
        };
        // As the manager does first: a run that has ended no longer counts.
        let mut current = new.spec.clone();
        if let Some(acc) = accepted.as_mut()
            && plan::run_ended(acc, stored.status.as_ref())
        {
            let ended = acc.plan_execution.clone();
            plan::end_run(acc, &mut current, &ended);
        }
        let ov_namespace = new
            .spec
            .operator_version
            .namespace
            .clone()
            .filter(|ns| !ns.is_empty())
            .unwrap_or_else(|| namespace.clone());
        let ov_name = new.spec.operator_version.name.as_deref().unwrap_or("");
        let Some(ov) = self.operator_version(&ov_namespace, ov_name) else {
            return Ok(Vec::new());
        };
        let previous = accepted
            .as_ref()
            .and_then(|a| a.operator_version.name.as_deref())
            .filter(|prev| *prev != ov_name)
            .and_then(|prev| self.operator_version(&ov_namespace, prev));
        let decision = plan::decide(&Observed {
            namespace: &namespace,
            name: &new.name_any(),
            accepted: accepted.as_ref(),
            current: &current,
            operator_version: &ov,
            previous_operator_version: previous.as_deref(),
            deleting: new.metadata.deletion_timestamp.is_some(),
            cleanup_status: stored
                .status
                .as_ref()
                .and_then(|s| s.plan_status.get(CLEANUP_PLAN))
                .map(|p| p.status),
        });
        match decision {
            Decision::Refuse(message) => Err(Denied::new(message)),
            Decision::Keep | Decision::Start { .. } => Ok(Vec::new()),
        }
    }
}

/// Whether two specs ask for the same thing (the running plan's status is the manager's
/// bookkeeping, not a request).
fn same_request(old: &InstanceSpec, new: &InstanceSpec) -> bool {
    let mut old = old.clone();
    let mut new = new.clone();
    old.plan_execution.status = None;
    new.plan_execution.status = None;
    old == new
}

fn snapshot(instance: &Instance) -> Option<&str> {
    instance
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(SNAPSHOT_ANNOTATION))
        .map(String::as_str)
}

impl Validator<Instance> for InstanceValidator {
    fn validate_create(
        &self,
        instance: &Instance,
        admission: &Admission,
    ) -> Result<Vec<String>, Denied> {
        self.check(None, instance, &admission.namespace)
    }

    fn validate_update(
        &self,
        old: &Instance,
        new: &Instance,
        admission: &Admission,
    ) -> Result<Vec<String>, Denied> {
        self.check(Some(old), new, &admission.namespace)
    }
}

#[cfg(test)]
mod tests {
    use kube::runtime::{reflector, watcher};

    use super::*;
    use crate::api::{OperatorVersionSpec, Parameter};

    fn validator(ovs: Vec<OperatorVersion>) -> InstanceValidator {
        let (store, mut writer) = reflector::store();
        for ov in ovs {
            writer.apply_watcher_event(&watcher::Event::Apply(ov));
        }
        InstanceValidator { ovs: store }
    }

    fn operator_version() -> OperatorVersion {
        let plan = |p: &str| (p.to_string(), Default::default());
        let param = |name: &str, trigger: &str| Parameter {
            name: name.into(),
            trigger: trigger.into(),
            default: Some("1".into()),
            ..Default::default()
        };
        let mut ov = OperatorVersion::new(
            "op-0.1.0",
            OperatorVersionSpec {
                plans: [plan("deploy"), plan("scale"), plan("tune")].into(),
                parameters: vec![param("A", "scale"), param("C", "tune")],
                ..Default::default()
            },
        );
        ov.metadata.namespace = Some("ns".into());
        ov
    }

    /// An instance of `op-0.1.0` with `params`, the running plan `plan` (uid `u1`) and the
    /// manager's snapshot `accepted`.
    fn instance(params: &[(&str, &str)], plan: &str, accepted: Option<&Instance>) -> Instance {
        let mut i: Instance = serde_json::from_value(json!({
            "apiVersion": "kudo.dev/v1beta1", "kind": "Instance",
            "metadata": {"name": "inst", "namespace": "ns"},
            "spec": {
                "operatorVersion": {"name": "op-0.1.0"},
                "parameters": params.iter().map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect::<std::collections::BTreeMap<_, _>>(),
                "planExecution": {"planName": plan, "uid": if plan.is_empty() { "" } else { "u1" }},
            },
        }))
        .unwrap();
        if let Some(a) = accepted {
            let text = serde_json::to_string(&a.spec).unwrap();
            i.metadata.annotations = Some([(SNAPSHOT_ANNOTATION.to_string(), text)].into());
        }
        i
    }

    #[test]
    fn a_change_is_judged_against_the_snapshot_so_pending_changes_count() {
        let v = validator(vec![operator_version()]);
        let base = instance(&[], "", None);
        // A=2 was written (accepted) but the manager has not started its plan yet.
        let old = instance(&[("A", "2")], "", Some(&base));
        let new = instance(&[("A", "2"), ("C", "2")], "", Some(&base));
        let denied = v.check(Some(&old), &new, "ns").unwrap_err();
        assert_eq!(
            denied.message,
            "failed to update Instance ns/inst: triggering multiple plans: [[scale tune]] at once is not allowed (A triggers 'scale'; C triggers 'tune')"
        );
        let alone = instance(&[("C", "2")], "", Some(&base));
        assert!(v.check(Some(&base), &alone, "ns").is_ok());
    }

    #[test]
    fn the_managers_writes_and_metadata_only_writes_are_not_judged() {
        let v = validator(vec![operator_version()]);
        let running = instance(&[], "deploy", None);
        // A refused change lingers in the spec (written while no webhook ran).
        let old = instance(&[("A", "2"), ("C", "2")], "deploy", Some(&running));
        // The manager ends the plan: the spec and the snapshot lose it.
        let ended_snapshot = instance(&[], "", None);
        let ended = instance(&[("A", "2"), ("C", "2")], "", Some(&ended_snapshot));
        assert!(v.check(Some(&old), &ended, "ns").is_ok());
        // The same spec change by a user (snapshot untouched) cancels the running plan.
        let cancel = instance(&[("A", "2"), ("C", "2")], "", Some(&running));
        assert!(v.check(Some(&old), &cancel, "ns").is_err());
        // Metadata only.
        let mut annotated = old.clone();
        annotated
            .metadata
            .annotations
            .get_or_insert_default()
            .insert("x".into(), "y".into());
        assert!(v.check(Some(&old), &annotated, "ns").is_ok());
    }

    #[test]
    fn a_run_that_ended_no_longer_blocks_changes() {
        let v = validator(vec![operator_version()]);
        let running = instance(&[], "deploy", None);
        let mut old = instance(&[], "deploy", Some(&running));
        let mut new = instance(&[("A", "2")], "deploy", Some(&running));
        assert!(v.check(Some(&old), &new, "ns").is_err(), "deploy runs");
        // The status says the run is over; the manager has not cleared the spec yet.
        let mut status = crate::api::InstanceStatus::default();
        status.plan_status.insert(
            "deploy".into(),
            crate::api::PlanStatus {
                status: crate::api::ExecutionStatus::Complete,
                uid: "u1".into(),
                ..Default::default()
            },
        );
        old.status = Some(status.clone());
        new.status = Some(status);
        assert!(v.check(Some(&old), &new, "ns").is_ok());
    }

    #[test]
    fn instances_of_operator_versions_the_cache_lacks_are_let_through() {
        let v = validator(Vec::new());
        let base = instance(&[], "", None);
        let new = instance(&[("A", "2"), ("C", "2")], "", Some(&base));
        assert!(v.check(Some(&base), &new, "ns").is_ok());
    }

    #[test]
    fn the_configuration_sends_instance_creates_and_updates_to_the_service() {
        let mut o = WebhookOptions::new("svc", "kudo-system");
        o.addr.set_port(0);
        let c = serde_json::to_value(configuration(&o)).unwrap();
        let hook = &c["webhooks"][0];
        assert_eq!(hook["name"], WEBHOOK_NAME);
        assert_eq!(hook["failurePolicy"], "Fail");
        assert_eq!(
            hook["clientConfig"]["service"],
            json!({"name": "svc", "namespace": "kudo-system", "path": "/validate-kudo-dev-v1beta1-instance", "port": 443})
        );
        assert_eq!(hook["rules"][0]["operations"], json!(["CREATE", "UPDATE"]));
        assert_eq!(hook["rules"][0]["resources"], json!(["instances"]));
    }
}
