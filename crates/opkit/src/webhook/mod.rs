//! Webhooks served by the [`Manager`](crate::Manager): typed defaulting and validation
//! (admission), and conversion between the versions of a CRD, over HTTPS with certificates
//! the operator manages itself.
//!
//! A [`WebhookServer`] lists the webhooks and how to get a certificate; give it to
//! [`ManagerBuilder::webhook_server`](crate::ManagerBuilder::webhook_server). Paths are
//! kubebuilder's, so configurations generated for controller-runtime operators fit:
//! `/mutate-<group>-<version>-<kind>` and `/validate-<group>-<version>-<kind>`, the group's
//! dots replaced by dashes and the kind lowercased (`/validate-example-com-v1-greeting`), and
//! [`/convert`](CONVERT_PATH) for every kind's conversions.
//!
//! A [`Defaulter`] changes the typed object; the server answers with the JSONPatch from the
//! object as the type decoded it to the object as the defaulter left it (fields the type does
//! not know are left alone). A [`Validator`] accepts (with warnings) or denies with a message,
//! which the API server shows the client as `admission webhook "NAME" denied the request:
//! MESSAGE`.
//!
//! **Conversion** follows kubebuilder's hub-and-spoke model: one version of a kind is the
//! [`Hub`] (usually the storage version), every other version is [`Convertible`] to and from
//! it, and a [`Conversion`] lists them. A ConversionReview's objects are converted to its
//! `desiredAPIVersion` in order — spoke to hub, hub to spoke, spoke to spoke through the hub,
//! an object already in that version unchanged — each keeping the `metadata` it came with.
//! A failure (a [`ConversionError`], an unknown kind or version, an object that does not
//! decode) fails the whole review with its message, as controller-runtime's does; a body that
//! is not a ConversionReview v1 is a 400. A kind registered twice, or a spoke of another kind
//! than its hub, stops the server from starting ([`InvalidConversion`]).
//! [`check_round_trip`] and [`check_hub_round_trip`] test a spoke's conversions the way the
//! webhook runs them.
//!
//! Certificates come from a directory (`tls.crt`, `tls.key`, as controller-runtime's
//! `CertDir`, e.g. a mounted cert-manager Secret) or are **self-managed**
//! ([`SelfManagedCerts`]): the operator creates a CA and a serving certificate for
//! `SERVICE.NAMESPACE.svc`, keeps them in a Secret (reused on restart and shared by
//! replicas), writes the CA into the `caBundle` of its Mutating/ValidatingWebhookConfigurations
//! and of its CRDs' conversion webhooks, and renews the certificate in the last third of its
//! life, serving the new one without a restart. No cert-manager needed.
//!
//! Metrics, under controller-runtime's names: `controller_runtime_webhook_requests_total
//! {webhook,code}`, `controller_runtime_webhook_latency_seconds{webhook}`,
//! `controller_runtime_webhook_requests_in_flight{webhook}` (`webhook` is the path).
//!
//! Not yet: asynchronous hooks (hooks run on the request task and should not block — read
//! from caches, not the API).
//!
//! # Two versions of a kind
//!
//! ```
//! use opkit::kube::core::crd::merge_crds;
//! use opkit::prelude::*;
//! use opkit::webhook::check_round_trip;
//! use opkit::{App, Conversion, ConversionError, Convertible, Hub, SelfManagedCerts, WebhookServer};
//! use serde::{Deserialize, Serialize};
//!
//! mod v1 {
//!     use super::*;
//!     #[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
//!     #[kube(group = "example.com", version = "v1", kind = "Widget", namespaced)]
//!     pub struct WidgetSpec {
//!         pub size: i32,
//!     }
//! }
//!
//! /// v2 renamed `size` to `replicas` and added `paused`; it is the hub and the storage version.
//! mod v2 {
//!     use super::*;
//!     #[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
//!     #[kube(group = "example.com", version = "v2", kind = "Widget", namespaced)]
//!     pub struct WidgetSpec {
//!         pub replicas: i32,
//!         #[serde(default)]
//!         pub paused: bool,
//!     }
//! }
//!
//! impl Hub for v2::Widget {}
//!
//! // Only the spec: the webhook copies the metadata.
//! impl Convertible<v2::Widget> for v1::Widget {
//!     fn to_hub(&self) -> Result<v2::Widget, ConversionError> {
//!         let spec = v2::WidgetSpec { replicas: self.spec.size, paused: false };
//!         Ok(v2::Widget::new("", spec))
//!     }
//!     fn from_hub(hub: &v2::Widget) -> Result<Self, ConversionError> {
//!         if hub.spec.paused {
//!             return Err(ConversionError::new("a paused Widget cannot be read as v1"));
//!         }
//!         Ok(v1::Widget::new("", v1::WidgetSpec { size: hub.spec.replicas }))
//!     }
//! }
//!
//! fn main() {
//!     // One CRD with both versions, converted by the operator's webhook.
//!     let mut crd = merge_crds(vec![v1::Widget::crd(), v2::Widget::crd()], "v2").unwrap();
//!     crd.spec.conversion = Some(serde_json::from_value(serde_json::json!({
//!         "strategy": "Webhook",
//!         "webhook": {
//!             "clientConfig": {"service": {
//!                 "namespace": "widget-system", "name": "widget-webhook", "path": "/convert"}},
//!             "conversionReviewVersions": ["v1"],
//!         },
//!     })).unwrap());
//!
//!     let app = App::new("widget-operator").crd_object(crd).webhook_server(|_| {
//!         WebhookServer::new()
//!             .self_managed_certs(
//!                 SelfManagedCerts::new("widget-webhook", "widget-system")
//!                     .crd_conversion("widgets.example.com"),
//!             )
//!             .conversion(Conversion::<v2::Widget>::new().spoke::<v1::Widget>())
//!     });
//!     assert!(app.cluster_role_yaml("widget-role").unwrap().contains("customresourcedefinitions"));
//!
//!     // In the operator's unit tests: v1 -> v2 -> v1 gives v1 back.
//!     check_round_trip::<v2::Widget, _>(&v1::Widget::new("w", v1::WidgetSpec { size: 3 })).unwrap();
//! }
//! ```

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use kube::Resource;
use serde::Serialize;
use serde::de::DeserializeOwned;

pub(crate) mod certs;
pub(crate) mod conversion;
pub(crate) mod review;
pub(crate) mod server;

pub use conversion::{
    CONVERT_PATH, Conversion, ConversionError, Convertible, Hub, InvalidConversion,
    check_hub_round_trip, check_round_trip,
};

/// What the API server asked, besides the object: for hooks that act differently on create
/// and update, or must not have side effects on dry runs.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Admission {
    /// `CREATE`, `UPDATE`, `DELETE` or `CONNECT`.
    pub operation: String,
    /// A dry run: the write will not be persisted.
    pub dry_run: bool,
    /// The object's namespace as the API server gives it (empty for cluster-scoped
    /// objects): the object's own `metadata.namespace` may be unset on create.
    pub namespace: String,
}

/// A refusal, with the message the client sees and the HTTP code the API server reports
/// (403 Forbidden unless set, as controller-runtime's validators).
#[derive(Debug, Clone, PartialEq)]
pub struct Denied {
    /// Shown to the client after `admission webhook "NAME" denied the request: `.
    pub message: String,
    /// The status code (at least 400).
    pub code: u16,
    /// Warnings shown to the client with the refusal.
    pub warnings: Vec<String>,
}

impl Denied {
    /// A 403 refusal with `message`.
    pub fn new(message: impl Into<String>) -> Denied {
        Denied {
            message: message.into(),
            code: 403,
            warnings: Vec::new(),
        }
    }

    /// Another status code (e.g. 422 for an invalid object); below 400 becomes 400.
    pub fn code(mut self, code: u16) -> Denied {
        self.code = code.max(400);
        self
    }

    /// Adds a warning.
    pub fn warning(mut self, warning: impl Into<String>) -> Denied {
        self.warnings.push(warning.into());
        self
    }
}

/// Fills in defaults of a `K` on create and update (a mutating webhook). Implement it on
/// whatever holds what defaulting needs (a cache [`Store`](crate::Store), settings).
pub trait Defaulter<K>: Send + Sync + 'static {
    /// Changes `object` in place; an error refuses the write.
    fn default(&self, object: &mut K, admission: &Admission) -> Result<(), Denied>;
}

/// Accepts or refuses writes of a `K` (a validating webhook). `Ok` carries warnings for the
/// client (usually none).
pub trait Validator<K>: Send + Sync + 'static {
    /// A new object.
    fn validate_create(&self, object: &K, admission: &Admission) -> Result<Vec<String>, Denied>;
    /// A change from `old` to `new`.
    fn validate_update(
        &self,
        old: &K,
        new: &K,
        admission: &Admission,
    ) -> Result<Vec<String>, Denied>;
    /// A deletion of `object` (only sent if the configuration's rules include `DELETE`).
    /// Allowed unless overridden, as kubebuilder's scaffold does.
    fn validate_delete(&self, object: &K, admission: &Admission) -> Result<Vec<String>, Denied> {
        let _ = (object, admission);
        Ok(Vec::new())
    }
}

/// Where the serving certificate comes from.
#[derive(Debug, Clone)]
pub(crate) enum CertSource {
    /// `tls.crt` and `tls.key` in a directory, read at start.
    Dir(PathBuf),
    /// Issued and published by the operator.
    SelfManaged(SelfManagedCerts),
}

/// Self-managed certificates: which Service the API server calls, where to keep the
/// certificates, and which webhook configurations to give the CA. The serving certificate
/// names `SERVICE.NAMESPACE.svc` (and `SERVICE.NAMESPACE.svc.cluster.local`), the name the
/// API server checks for a `clientConfig.service` reference.
#[derive(Debug, Clone)]
pub struct SelfManagedCerts {
    pub(crate) service: String,
    pub(crate) namespace: String,
    pub(crate) secret: String,
    pub(crate) mutating: Vec<String>,
    pub(crate) validating: Vec<String>,
    pub(crate) crds: Vec<String>,
    pub(crate) ca_validity: Duration,
    pub(crate) cert_validity: Duration,
    pub(crate) check_interval: Duration,
}

impl SelfManagedCerts {
    /// For the webhook Service `service` in `namespace`; the Secret is
    /// `<service>-cert` in the same namespace. CA valid 10 years, serving certificate 1 year,
    /// both renewed in the last third of their life, checked every minute.
    pub fn new(service: impl Into<String>, namespace: impl Into<String>) -> SelfManagedCerts {
        let service = service.into();
        SelfManagedCerts {
            secret: format!("{service}-cert"),
            service,
            namespace: namespace.into(),
            mutating: Vec::new(),
            validating: Vec::new(),
            crds: Vec::new(),
            ca_validity: Duration::from_secs(10 * 365 * 24 * 3600),
            cert_validity: Duration::from_secs(365 * 24 * 3600),
            check_interval: Duration::from_secs(60),
        }
    }

    /// The Secret holding the CA and the serving certificate (in the Service's namespace).
    pub fn secret(mut self, name: impl Into<String>) -> Self {
        self.secret = name.into();
        self
    }

    /// A MutatingWebhookConfiguration whose webhooks get the CA as `caBundle`.
    pub fn mutating_configuration(mut self, name: impl Into<String>) -> Self {
        self.mutating.push(name.into());
        self
    }

    /// A ValidatingWebhookConfiguration whose webhooks get the CA as `caBundle`.
    pub fn validating_configuration(mut self, name: impl Into<String>) -> Self {
        self.validating.push(name.into());
        self
    }

    /// A CustomResourceDefinition whose conversion webhook gets the CA as
    /// `spec.conversion.webhook.clientConfig.caBundle` (its `spec.conversion.strategy` must
    /// be `Webhook`), e.g. `widgets.example.com`.
    pub fn crd_conversion(mut self, crd_name: impl Into<String>) -> Self {
        self.crds.push(crd_name.into());
        self
    }

    /// How long a new CA is valid.
    pub fn ca_validity(mut self, validity: Duration) -> Self {
        self.ca_validity = validity;
        self
    }

    /// How long a new serving certificate is valid.
    pub fn cert_validity(mut self, validity: Duration) -> Self {
        self.cert_validity = validity;
        self
    }

    /// How often the Secret is re-read (renewals by other replicas, expiry) and the
    /// `caBundle`s re-checked (a configuration re-applied without it, or created late).
    pub fn check_interval(mut self, interval: Duration) -> Self {
        self.check_interval = interval;
        self
    }

    /// Reads the Secret's CA and serving certificate, issuing or renewing them as the webhook
    /// server does at start, and returns the PEM to publish as `caBundle` — for one that
    /// certifies a webhook server it does not run (the OLM lifecycle controller installing an
    /// operator whose pods mount the Secret). Does not touch the named configurations or CRDs.
    pub async fn ensure_secret(&self, client: &kube::Client) -> crate::Result<Vec<u8>> {
        Ok(certs::ensure(client, self).await?.ca_bundle())
    }

    pub(crate) fn dns_names(&self) -> Vec<String> {
        let base = format!("{}.{}.svc", self.service, self.namespace);
        vec![base.clone(), format!("{base}.cluster.local")]
    }
}

/// The webhooks one HTTPS server serves, and its certificate; see the [module docs](self).
#[derive(Clone)]
pub struct WebhookServer {
    pub(crate) addr: SocketAddr,
    pub(crate) certs: CertSource,
    pub(crate) hooks: Vec<(String, Arc<dyn review::Hook>)>,
    pub(crate) conversions: Vec<Arc<dyn conversion::KindConversion>>,
}

impl std::fmt::Debug for WebhookServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookServer")
            .field("addr", &self.addr)
            .field("certs", &self.certs)
            .field("paths", &self.paths())
            .finish()
    }
}

impl Default for WebhookServer {
    fn default() -> Self {
        WebhookServer::new()
    }
}

/// controller-runtime's default certificate directory.
pub const DEFAULT_CERT_DIR: &str = "/tmp/k8s-webhook-server/serving-certs";

/// controller-runtime's default webhook port.
pub const DEFAULT_PORT: u16 = 9443;

impl WebhookServer {
    /// A server on all interfaces, port 9443, with `tls.crt`/`tls.key` from
    /// [`DEFAULT_CERT_DIR`] — controller-runtime's defaults — and no webhooks yet.
    pub fn new() -> WebhookServer {
        WebhookServer {
            addr: SocketAddr::from((Ipv4Addr::UNSPECIFIED, DEFAULT_PORT)),
            certs: CertSource::Dir(PathBuf::from(DEFAULT_CERT_DIR)),
            hooks: Vec::new(),
            conversions: Vec::new(),
        }
    }

    /// Listen on `addr` (port 0 picks one; see
    /// [`Running::webhook_addr`](crate::Running::webhook_addr)).
    pub fn addr(mut self, addr: SocketAddr) -> Self {
        self.addr = addr;
        self
    }

    /// Listen on `port`, all interfaces (`--webhook-port`).
    pub fn port(mut self, port: u16) -> Self {
        self.addr.set_port(port);
        self
    }

    /// Read `tls.crt` and `tls.key` from `dir` at start (`--webhook-cert-dir`).
    pub fn cert_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.certs = CertSource::Dir(dir.into());
        self
    }

    /// Issue, store, publish and renew the certificates ([`SelfManagedCerts`]).
    pub fn self_managed_certs(mut self, certs: SelfManagedCerts) -> Self {
        self.certs = CertSource::SelfManaged(certs);
        self
    }

    /// Serves `defaulter` for `K` at [`mutate_path::<K>()`](mutate_path).
    pub fn defaulter<K, D>(mut self, defaulter: D) -> Self
    where
        K: Resource<DynamicType = ()> + DeserializeOwned + Serialize + Send + Sync + 'static,
        D: Defaulter<K>,
    {
        self.hooks.push((
            mutate_path::<K>(),
            Arc::new(review::DefaultingHook::<K, D> {
                defaulter: Arc::new(defaulter),
                _kind: std::marker::PhantomData,
            }),
        ));
        self
    }

    /// Serves `validator` for `K` at [`validate_path::<K>()`](validate_path).
    pub fn validator<K, V>(mut self, validator: V) -> Self
    where
        K: Resource<DynamicType = ()> + DeserializeOwned + Send + Sync + 'static,
        V: Validator<K>,
    {
        self.hooks.push((
            validate_path::<K>(),
            Arc::new(review::ValidatingHook::<K, V> {
                validator: Arc::new(validator),
                _kind: std::marker::PhantomData,
            }),
        ));
        self
    }

    /// Serves the conversions between the versions of `H`'s kind at [`CONVERT_PATH`]
    /// (`/convert`), which every kind's conversions share. Registering a kind twice, or a
    /// spoke of another kind, makes the server fail to start ([`InvalidConversion`]).
    pub fn conversion<H: Hub>(mut self, conversion: Conversion<H>) -> Self {
        self.conversions.push(Arc::new(conversion));
        self
    }

    /// The paths served.
    pub fn paths(&self) -> Vec<String> {
        let mut paths: Vec<String> = self.hooks.iter().map(|h| h.0.clone()).collect();
        if !self.conversions.is_empty() {
            paths.push(CONVERT_PATH.to_string());
        }
        paths
    }

    /// The self-managed certificate settings, if any.
    pub(crate) fn self_managed(&self) -> Option<&SelfManagedCerts> {
        match &self.certs {
            CertSource::SelfManaged(c) => Some(c),
            CertSource::Dir(_) => None,
        }
    }
}

fn path<K: Resource<DynamicType = ()>>(prefix: &str) -> String {
    format!(
        "/{prefix}-{}-{}-{}",
        K::group(&()).replace('.', "-"),
        K::version(&()),
        K::kind(&()).to_lowercase()
    )
}

/// kubebuilder's path of `K`'s defaulting webhook: `/mutate-<group>-<version>-<kind>`.
pub fn mutate_path<K: Resource<DynamicType = ()>>() -> String {
    path::<K>("mutate")
}

/// kubebuilder's path of `K`'s validating webhook: `/validate-<group>-<version>-<kind>`.
pub fn validate_path<K: Resource<DynamicType = ()>>() -> String {
    path::<K>("validate")
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::Pod;
    use k8s_openapi::api::networking::v1::Ingress;

    #[test]
    fn paths_are_kubebuilders() {
        assert_eq!(
            validate_path::<Ingress>(),
            "/validate-networking-k8s-io-v1-ingress"
        );
        assert_eq!(mutate_path::<Pod>(), "/mutate--v1-pod");
    }
}
